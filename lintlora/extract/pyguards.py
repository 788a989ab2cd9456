"""Which ``if`` guards make a call run only on some steps (``CallSite.periodic``).

A call in a training loop normally runs on every step. Under ``if step % 100 == 0:`` it runs
every 100th step; under ``if step == 0:`` once. Rules that judge per-step cost (LL006) stay
silent then: flushing every N steps is the compromise their own fixes recommend (peft PR #2894).

A guard is *periodic* when its test, taken with the branch the call is on, is:

- a modulo equality: ``X % N == K`` on the ``if`` side (``!=`` on the ``else`` side), with any
  ``X`` and a divisor ``N`` that does not resolve to 1 (``step % 1 == 0`` is every step);
- ``not X % N`` on the ``if`` side (``X % N`` is zero once every N);
- an equality with a step or iteration counter: ``step == 0``, ``i == len(loader) - 1``,
  ``state.global_step == args.max_steps``; a counter is a name or attribute whose last part
  is one of the usual counter names (``step``, ``global_step``, ``it``, ``iteration``, ``idx``,
  ``batch_idx``, ``i``...; see :data:`COUNTER_NAME`) or the target of an enclosing ``for`` loop;
- a conjunction (``and``) with a periodic term; a disjunction (``or``) whose terms are all
  periodic.

Anything else (``if loss_type == "x":``, ``if step > 10:``, ``if flush:``) is not periodic.
"""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

__all__ = ["COUNTER_NAME", "periodic_test"]

COUNTER_NAME = re.compile(
    r"(?i)^(?:.*_)?(?:step|steps|it|iter|iters|iteration|iterations|idx|index|i|j|n|k|count|"
    r"counter|batch_idx|batch_num|batch_index|update|updates|micro_step)$")
"""Last parts of names that count steps or iterations (``global_step``, ``train_step``,
``batch_idx``, ``i``...). Not ``epoch``: under ``if epoch == 0:`` a call in the step loop
runs on every step of that epoch."""


def _last_name(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def _counter(node: cst.BaseExpression, loop_targets: frozenset[str]) -> bool:
    """A step/iteration counter, possibly offset (``step + 1``) or called (``len(x) - 1`` is not)."""
    while type(node) is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Subtract):
        node = node.left
    name = _last_name(node)
    if name is None:
        return False
    if type(node) is cst.Name and name in loop_targets:
        return True
    return bool(COUNTER_NAME.match(name))


def _modulo(node: cst.BaseExpression) -> cst.BinaryOperation | None:
    while type(node) is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Subtract) \
            and type(node.left) is cst.BinaryOperation and type(node.left.operator) is cst.Modulo:
        node = node.left
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
        return node
    return None


def periodic_test(test: cst.BaseExpression, polarity: bool,
                  divisor_value: Callable[[cst.BaseExpression], object],
                  loop_targets: frozenset[str] = frozenset()) -> bool:
    """Whether the branch of ``test`` selected by ``polarity`` runs only on some steps.

    Args:
        test: the ``if`` test.
        polarity: True for the ``if`` body, False for the ``else`` body.
        divisor_value: resolves a modulo's right operand to a plain value (or anything else
            when it cannot); a divisor resolving to 1 (or 0/-1) is not periodic.
        loop_targets: names bound by enclosing ``for`` loops (``for step, batch in ...``).
    """
    t = type(test)
    if t is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = test.expression
        if _modulo(inner) is not None and polarity:
            return _divisor_ok(_modulo(inner), divisor_value)  # type: ignore[arg-type]
        return periodic_test(inner, not polarity, divisor_value, loop_targets)
    if t is cst.BooleanOperation:
        left = periodic_test(test.left, polarity, divisor_value, loop_targets)
        right = periodic_test(test.right, polarity, divisor_value, loop_targets)
        conj = type(test.operator) is cst.And
        # `a and b` on the if side narrows (either suffices); on the else side it widens
        if conj == polarity:
            return left or right
        return left and right
    if t is cst.Comparison and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        op = type(comp.operator)
        if op is cst.Equal:
            wanted = polarity
        elif op is cst.NotEqual:
            wanted = not polarity
        else:
            return False
        if not wanted:
            return False
        sides = (test.left, comp.comparator)
        for side in sides:
            mod = _modulo(side)
            if mod is not None:
                return _divisor_ok(mod, divisor_value)
        return any(_counter(side, loop_targets) for side in sides)
    return False


def _divisor_ok(mod: cst.BinaryOperation, divisor_value: Callable[[cst.BaseExpression], object]) -> bool:
    value = divisor_value(mod.right)
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)) and abs(value) <= 1:
        return False  # `% 1` (or 0, -1): every step
    return True
