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
layer selects more than ``"all-linear"`` and stays unknown). Read from the module index the
extractor already built (the helper's bindings and calls), not from a walk of its own.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import libcst as cst

__all__ = ["all_linear_helper"]


def all_linear_helper(scope: Any, calls: Iterable[Any], text_of: Callable[[Any], str]) -> bool:
    """Whether a helper is the "every linear layer but lm_head" idiom (module docstring).

    Args:
        scope: the helper's :class:`lintlora.extract.pyindex.Scope` (a function).
        calls: the module's :class:`~lintlora.extract.pyindex.CallRecord` list.
        text_of: the extractor's ``node -> source text``.
    """
    if scope.kind != "function" or not scope.returns:
        return False
    bindings = [b for bs in scope.bindings.values() for b in bs]
    loops = any(b.kind == "for" and type(b.value) is cst.Call and type(b.value.func) is cst.Attribute
                and b.value.func.attr.value == "named_modules" for b in bindings)
    if not loops:
        return False
    # the class tested is written there (``bnb.nn.Linear4bit``) or assigned to a name first
    # (``cls = bnb.nn.Linear4bit if args.bits == 4 else ...``)
    assigned = {b.name: text_of(b.value) for b in bindings
                if b.kind == "assign" and isinstance(b.value, cst.CSTNode)}
    tested = [text_of(rec.node.args[1].value) for rec in calls
              if rec.scope is scope and type(rec.node.func) is cst.Name
              and rec.node.func.value == "isinstance" and len(rec.node.args) == 2]
    if not any("Linear" in t or "Linear" in assigned.get(t, "") for t in tested):
        return False
    text = text_of(scope.node)
    return "'lm_head'" in text or '"lm_head"' in text
