"""Helper functions whose result is known by what they do, not by a value they return.

One idiom so far: the helper QLoRA scripts copy to target every linear layer, from
artidoro/qlora ``qlora.py`` (``find_all_linear_names``) into its many derivatives (Firefly,
Chinese-LLaMA-Alpaca, ...)::

    def find_all_linear_names(model):
        cls = bnb.nn.Linear4bit              # or Linear8bitLt / torch.nn.Linear by args.bits
        names = set()
        for name, module in model.named_modules():
            if isinstance(module, cls):
                names.add(name.split(".")[-1])
        if "lm_head" in names:              # needed for 16-bit
            names.remove("lm_head")
        return list(names)

Its value depends on the model, which is not in the file; but what it selects is exactly what
peft's ``target_modules="all-linear"`` selects (every ``nn.Linear``, quantized or not, but the
output layer: peft ``tuners_utils._maybe_include_all_linear_layers``), so
``target_modules=find_all_linear_names(model)`` is read as ``"all-linear"``. Recognised by
structure: a loop over ``.named_modules()``, an ``isinstance`` test against a class whose name
contains ``Linear`` (written there or assigned to a name in the helper), and the string
``"lm_head"`` in the body (a variant that keeps the output
layer selects more than ``"all-linear"`` and stays unknown).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

__all__ = ["all_linear_helper"]


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def all_linear_helper(function: cst.FunctionDef, text_of: Any) -> bool:
    """Whether ``function`` is the "every linear layer but lm_head" helper (module docstring).

    Args:
        function: the helper's ``def``.
        text_of: the extractor's ``node -> source text``.
    """
    loops = lm_head = returns = False
    tested: list[str] = []              # the class argument of each isinstance(...)
    assigned: dict[str, str] = {}       # name -> text of what the body assigns to it
    for node in _walk(function.body):
        kind = type(node)
        if kind is cst.Assign and len(node.targets) == 1 \
                and type(node.targets[0].target) is cst.Name:  # type: ignore[attr-defined]
            assigned[node.targets[0].target.value] = text_of(node.value)  # type: ignore[attr-defined]
        elif kind is cst.For:
            it = node.iter  # type: ignore[attr-defined]
            if type(it) is cst.Call and type(it.func) is cst.Attribute \
                    and it.func.attr.value == "named_modules":
                loops = True
        elif kind is cst.Call:
            func = node.func  # type: ignore[attr-defined]
            args = node.args  # type: ignore[attr-defined]
            if type(func) is cst.Name and func.value == "isinstance" and len(args) == 2:
                tested.append(text_of(args[1].value))
        elif kind is cst.SimpleString:
            if node.value.strip("'\"") == "lm_head":  # type: ignore[attr-defined]
                lm_head = True
        elif kind is cst.Return and node.value is not None:  # type: ignore[attr-defined]
            returns = True
    # the class tested is written there (``bnb.nn.Linear4bit``) or assigned to a name first
    # (``cls = bnb.nn.Linear4bit if args.bits == 4 else ...``)
    linear = any("Linear" in text or "Linear" in assigned.get(text, "") for text in tested)
    return loops and linear and lm_head and returns
