"""LL004 no-trainable-parameter-report (page: ``rules/LL004.md``).

Flags a Python script (or notebook) that wraps a model with ``peft.get_peft_model`` or
``peft.prepare_model_for_kbit_training`` and never calls ``print_trainable_parameters()`` or
``get_nb_trainable_parameters()``, nor counts the parameters that require grad by hand. The count is the cheapest check that the adapters sit where
intended: a typo in ``target_modules`` (peft adapts nothing it cannot find, or raises), an
embedding trained in full (QwenLM/Qwen#797: 28% of parameters trainable whatever the rank), or
a frozen model that trains nothing all show up in it. The message states the line the setup
should print, computed from the architecture with :func:`lintlora.estimate.params.count_trainable`.

A TRL trainer given ``peft_config=`` (``SFTTrainer``, ``DPOTrainer``, ``ORPOTrainer``,
``KTOTrainer``, ``CPOTrainer``, ``GRPOTrainer``, ``RewardTrainer``, ``PPOTrainer``...) wraps
the model itself: it calls ``get_peft_model`` in its ``__init__`` (trl ``trl/trainer/
sft_trainer.py`` and the other trainers, v1.9.0 at f2cd57710) and never prints the count (no
call to ``print_trainable_parameters`` anywhere in the trl repository at that commit). That
counts as a wrap too (call kind ``trainer_peft_config``); the fix then says
``trainer.model.print_trainable_parameters()``.

A call of the project's own helper counts as a report: a local ``def print_trainable_parameters
(model)`` or one imported from the project (``from utils import print_trainable_parameters``),
or any function or method whose name says it prints or counts the trainable parameters
(``print_trainable_params``, ``print_number_of_trainable_model_parameters``; the extractor
records them as ``trainable_parameter_count``).

Configs have no such call (YAML frameworks print the count themselves), and unsloth prints it
when training starts: both are skipped.

Severity: info. The missing line costs no memory and no time; it is a safeguard, and the finding
is only worth a look, never a failed build by default.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["NoTrainableParameterReport", "expected_count"]

_WRAPPERS = ("get_peft_model", "prepare_model_for_kbit_training", "trainer_peft_config")
_PREFERENCE = ("get_peft_model", "trainer_peft_config", "prepare_model_for_kbit_training")
"""Which wrap the finding points at when there are several: the one that attaches the adapters."""
_REPORTS = ("print_trainable_parameters", "get_nb_trainable_parameters", "trainable_parameter_count")
"""Call kinds that report the count: peft's two methods, and a hand-written count of the
parameters that require grad (``sum(p.numel() for p in model.parameters() if p.requires_grad)``,
or ``numel()`` summed under ``if p.requires_grad``), which a script prints or logs itself."""


def expected_count(setup: TrainingSetup, arch: Any) -> tuple[Any, str | None]:
    """``(TrainableCount, None)`` for the setup's LoRA configuration on ``arch``, or
    ``(None, why)`` when it cannot be computed (no LoraConfig seen, r or target_modules
    unresolved, no peft default targets)."""
    lora = setup.lora
    if lora is None:
        return None, "no LoraConfig was resolved"
    r, targets, saves = lora.r, lora.target_modules, lora.modules_to_save
    if not (r.known and isinstance(r.value, int) and not isinstance(r.value, bool)):
        return None, "the LoRA rank r is not resolved"
    if not targets.known:
        return None, "target_modules is not resolved"
    if not saves.known and saves.expr is not None:
        return None, "modules_to_save is not resolved"
    from lintlora.estimate.params import count_trainable

    try:
        c = count_trainable(arch, r.value, targets.value, saves.value if saves.known else None,
                            use_dora=lora.use_dora.known and lora.use_dora.value is True)
    except (ValueError, re.error, TypeError) as exc:
        return None, str(exc)
    return c, None


FIX_PRINT = "print the trainable parameters"
"""The fix's title: ``<wrapped>.print_trainable_parameters()`` inserted after the statement
that wraps the model (``get_peft_model``), or ``<trainer>.model.print_trainable_parameters()``
after the statement that builds a trainer given ``peft_config=`` (before its ``train()``)."""


def _autofix(setup: TrainingSetup, wrap: CallSite, maybe_none: bool = False) -> Fix | None:
    """``insert_after`` the wrapping statement, through the name it binds; ``None`` when the
    wrap is not bound to a plain name (nested in another call, a tuple target), or for
    ``prepare_model_for_kbit_training`` (it does not wrap in an adapter).

    ``maybe_none``: a trainer's ``peft_config=`` that may be ``None`` at run time (no
    ``LoraConfig`` resolved: trl's ``get_peft_config(model_args)`` returns ``None`` unless
    ``--use_peft`` is passed, trl ``trl/trainer/utils.py``). The trainer then holds the plain
    model, which has no ``print_trainable_parameters`` (``AttributeError`` at the inserted
    line), so the call is guarded: ``if hasattr(trainer.model, "print_trainable_parameters"):``.
    """
    bound = wrap.args.get("assigned_to")
    if bound is None or not bound.known or not isinstance(bound.value, str) or wrap.span is None:
        return None
    if wrap.span.path != setup.path:
        return None
    if wrap.kind == "get_peft_model":
        text = f"{bound.value}.print_trainable_parameters()"
    elif wrap.kind == "trainer_peft_config":
        text = f"{bound.value}.model.print_trainable_parameters()"
        if maybe_none:
            text = f'if hasattr({bound.value}.model, "print_trainable_parameters"):\n    {text}'
    else:
        return None
    return Fix(FIX_PRINT, FixSafety.SAFE, (EditOp("insert_after", wrap.span, text),))


class NoTrainableParameterReport(Rule):
    """A peft-wrapped model whose trainable parameters are never printed."""

    code = "LL004"
    name = "no-trainable-parameter-report"
    severity = Severity.INFO
    summary = "A peft-wrapped model whose trainable-parameter count is never printed"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)
    fixes = {FIX_PRINT: FixSafety.SAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if setup.kind not in ("python", "notebook") or setup.framework == "unsloth":
            return
        wraps = [c for c in setup.calls if c.kind in _WRAPPERS and not c.synthetic]
        if not wraps or any(setup.has_call(k) for k in _REPORTS):
            return
        wrap = min(wraps, key=lambda c: (_PREFERENCE.index(c.kind), c.order))
        name = wrap.qualified_name.rsplit(".", 1)[-1] if wrap.qualified_name else wrap.kind
        by_trainer = wrap.kind == "trainer_peft_config"
        if by_trainer:
            # no LoraConfig resolved: the value may be None at run time (trl's get_peft_config()
            # returns None unless --use_peft is passed)
            lora = setup.lora
            read = lora is not None and any(value.known for _name, value in lora.settings())
            when = "" if read else " (when peft_config is not None)"
            parts = [f"{name}(peft_config=...) wraps the model with get_peft_model itself{when}, and TRL "
                     "never prints the trainable parameters; nor does the script, so adapters on the wrong "
                     "layers (a target_modules typo, an embedding trained in full) would go unnoticed."]
        else:
            parts = [f"The model is wrapped with {name}() but the script never prints its trainable "
                     "parameters, so adapters on the wrong layers (a target_modules typo, an embedding "
                     "trained in full) would go unnoticed."]
        arch = context.architecture(setup)
        if arch is None:
            problem = context.architecture_problem(setup) or "the model is unknown"
            parts.append(f"No expected count: {problem.rstrip('.')}.")
        else:
            counted, why = expected_count(setup, arch)
            if counted is None:
                parts.append(f"No expected count: {why}.")
            else:
                parts.append(f"For this setup on {arch.name} it should print: {counted.peft_line()}.")
        if by_trainer:
            fix = (f"Call trainer.model.print_trainable_parameters() after {name}(...) is built (the trainer "
                   "holds the wrapped model) and compare it with the expected line; a count far from it means "
                   "target_modules or modules_to_save are not what you meant.")
        else:
            fix = ("Call model.print_trainable_parameters() after get_peft_model(...) and compare it with the "
                   "expected line; a count far from it means target_modules or modules_to_save are not what "
                   "you meant.")
        yield self.finding(context, setup, wrap.span, " ".join(parts), fix=fix,
                           autofix=_autofix(setup, wrap, maybe_none=by_trainer and not read))
