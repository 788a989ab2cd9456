"""Whether a script's reads of ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` are evidence of
multi-process training.

Reading the rank is not evidence by itself: single-GPU scripts read ``RANK`` to decide who logs
(``is_main = int(os.environ.get("RANK", 0)) == 0``). A read counts (``Evidence("env-rank")``)
only when its value feeds something that places or launches processes:

- device placement: a ``device_map`` argument of ``from_pretrained``, ``.to(...)``/``.cuda(...)``,
  ``torch.device(...)``, ``torch.cuda.set_device(...)``;
- ``torch.distributed.init_process_group(...)`` or ``DistributedDataParallel(...)`` arguments;
- an ``if`` that branches on the world size (``if world_size > 1:``, ``ddp = world_size != 1``
  then ``if ddp:``): reads of ``WORLD_SIZE``/``LOCAL_WORLD_SIZE`` only.

"Feeds" follows assignments by name within the file (``local_rank = int(os.environ[...])``,
then ``device_map = {"": local_rank}``, then ``device_map=device_map``), a few steps deep; it
does not follow values through function calls or containers built elsewhere. Other reads give
``Evidence("env-read")``, which rules treat as weak (see :func:`lintlora.facts.data_parallel`).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import libcst as cst

from lintlora.training_setup import Evidence

__all__ = ["rank_evidence", "WORLD_KEYS"]

WORLD_KEYS = frozenset({"WORLD_SIZE", "LOCAL_WORLD_SIZE"})
_PLACEMENT_CALLS = frozenset({
    "torch.cuda.set_device", "torch.device", "torch.distributed.init_process_group",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
})
_PLACEMENT_METHODS = frozenset({"to", "cuda", "set_device"})


_NAME_USE = re.compile(r"(?<![\w.])([^\W\d]\w*)")
"""A name as an expression's text uses it: not an attribute (``.rank``), not inside a longer
name."""


def _inside(inner: tuple | None, outer: tuple | None) -> bool:
    if inner is None or outer is None:
        return False
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (outer[2], outer[3])


def rank_evidence(ex: Any, reads: list[tuple[cst.CSTNode, str, str]], canon: dict,
                  calls: Iterable[Any]) -> list[Evidence]:
    """Evidence for each environment read, strong (``"env-rank"``) or weak (``"env-read"``).

    Args:
        ex: the extractor (positions, text, index).
        reads: ``(node, key, how it was read)`` for every read of a rank/world-size variable.
        canon: ``id(call record) -> canonical name`` of the recognised calls.
        calls: the file's call records.
    """
    if not reads:
        return []
    import bisect

    pos = ex.positions.get
    # the reads by where they start, so the reads inside an expression are found by bisection
    # rather than by testing every read of the file for every expression (quadratic: issue 12)
    read_pos = sorted(((p, key) for p, key in ((pos(node), key) for node, key, _how in reads)
                       if p is not None), key=lambda r: r[0])
    starts = [p[:2] for p, _key in read_pos]

    def keys_in(node: cst.CSTNode | None, tainted: dict[str, set[str]]) -> set[str]:
        """The environment keys an expression's value depends on (directly or by name)."""
        if node is None:
            return set()
        where = pos(node)
        found: set[str] = set()
        if where is not None:
            first = bisect.bisect_left(starts, where[:2])
            last = bisect.bisect_right(starts, where[2:])
            found = {key for p, key in read_pos[first:last] if _inside(p, where)}
        if tainted:
            # names read in the expression (not attributes: ``x.rank``), each looked up once
            for name in set(_NAME_USE.findall(ex.text(node))) & tainted.keys():
                found |= tainted[name]
        return found

    # names whose value derives from a read, with the keys they derive from
    tainted: dict[str, set[str]] = {}
    bindings = [b for scope in ex.index.scopes for bs in scope.bindings.values() for b in bs
                if b.kind in ("assign", "annassign", "augassign") and isinstance(b.value, cst.CSTNode)]
    for _ in range(4):
        changed = False
        for b in bindings:
            keys = keys_in(b.value, tainted)
            if keys and not keys <= tainted.get(b.name, set()):
                tainted.setdefault(b.name, set()).update(keys)
                changed = True
        if not changed:
            break

    strong: dict[str, str] = {}  # key -> what it feeds
    for rec in calls:
        name = canon.get(id(rec))
        node = rec.node
        if name == "model_load":
            for a in node.args:
                if a.keyword is not None and a.keyword.value == "device_map":
                    for k in keys_in(a.value, tainted):
                        strong.setdefault(k, "device_map")
            continue
        if name in _PLACEMENT_CALLS or (name is None and rec.method in _PLACEMENT_METHODS):
            for a in node.args:
                for k in keys_in(a.value, tainted):
                    strong.setdefault(k, f"{ex.text(node.func)}(...)")
    # branches on the world size: `if` tests, conditional expressions and comparisons
    if any(key in WORLD_KEYS for _n, key, _h in reads):
        tests: dict[int, cst.BaseExpression] = {}
        for rec in calls:
            for g in rec.guards:
                if g.kind == "if":
                    tests[id(g.test)] = g.test
        for b in bindings:
            for g in b.guards:
                if g.kind == "if":
                    tests[id(g.test)] = g.test
        for node in _conditions(ex.index.module):
            tests[id(node)] = node
        for test in tests.values():
            for k in keys_in(test, tainted) & WORLD_KEYS:
                strong.setdefault(k, "a branch on the world size")

    out = []
    for node, key, how in reads:
        feeds = strong.get(key)
        if feeds is not None:
            out.append(Evidence("env-rank", ex.span(node), f"{how} -> {feeds}"))
        else:
            out.append(Evidence("env-read", ex.span(node), how))
    return out


def _conditions(module: cst.Module) -> list[cst.BaseExpression]:
    """Every comparison and conditional-expression test in the module (``world_size > 1``,
    ``x if ddp else y``): one walk, done only for files that read the world size."""
    out: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is cst.Comparison:
            out.append(node)  # type: ignore[arg-type]
        elif t is cst.IfExp:
            out.append(node.test)  # type: ignore[attr-defined]
        stack.extend(node.children)
    return out
