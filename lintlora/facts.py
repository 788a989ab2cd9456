"""Facts derived from a TrainingSetup that several rules and the estimator share.

Keeping them here means one answer to "is checkpointing on?" for every rule and for the
estimator, instead of each re-deriving it slightly differently.
"""

from __future__ import annotations

from dataclasses import dataclass

from lintlora.training_setup import CallSite, Origin, Setting, Span, TrainingSetup

__all__ = ["Fact", "checkpointing", "is_quantized", "quant_bits"]


@dataclass(frozen=True)
class Fact:
    """A derived yes/no/unknown answer with the place that decided it.

    Attributes:
        value: ``True``/``False``, or ``None`` when it cannot be decided.
        span: the span of the deciding setting or call (``None`` for a default).
        reason: a short phrase for messages ("gradient_checkpointing=False",
            "TrainingArguments default (False)").
        from_default: the answer rests on a library default or assumption, not on code the
            user wrote.
    """

    value: bool | None
    span: Span | None
    reason: str
    from_default: bool = False


def _call_enables(call: CallSite) -> bool | None:
    """Whether a call turns checkpointing on (True), off (False), or is unrelated (None)."""
    if call.kind == "gradient_checkpointing_enable":
        return True
    if call.kind == "gradient_checkpointing_disable":
        return False
    if call.kind == "prepare_model_for_kbit_training":
        # peft/utils/other.py (peft 0.13.2): use_gradient_checkpointing defaults to True and,
        # when true, the helper calls model.gradient_checkpointing_enable().
        arg = call.args.get("use_gradient_checkpointing")
        if arg is None:
            return True
        if not arg.known:
            return None
        return bool(arg.value)
    return None


def checkpointing(setup: TrainingSetup) -> Fact:
    """Whether activation (gradient) checkpointing is on for the training run.

    The trainer's ``gradient_checkpointing=True`` turns it on at ``train()`` time
    (transformers ``Trainer._inner_training_loop`` calls ``model.gradient_checkpointing_enable``
    when ``args.gradient_checkpointing``); ``False`` does *not* undo an earlier
    ``model.gradient_checkpointing_enable()``. Explicit calls apply in source order, the last
    one winning. A call whose arguments cannot be resolved makes the answer unknown only if no
    later call settles it.
    """
    state: bool | None = False
    span: Span | None = None
    reason = ""
    decided = False
    unknown_call: CallSite | None = None
    for call in sorted(setup.calls, key=lambda c: c.order):
        effect = _call_enables(call)
        if call.kind not in ("gradient_checkpointing_enable", "gradient_checkpointing_disable",
                             "prepare_model_for_kbit_training"):
            continue
        if effect is None:
            unknown_call = call
            decided = False
            continue
        unknown_call = None
        state, span, decided = effect, call.span, True
        reason = f"{call.qualified_name.rsplit('.', 1)[-1]}()"
    trainer_gc: Setting = setup.get("training.gradient_checkpointing")
    if trainer_gc.known and trainer_gc.value:
        return Fact(True, trainer_gc.span, "gradient_checkpointing=True",
                    from_default=trainer_gc.origin.is_default)
    if decided and state:
        return Fact(True, span, reason)
    if unknown_call is not None:
        return Fact(None, unknown_call.span, "an unresolved checkpointing argument")
    if decided and not state:
        return Fact(False, span, reason)
    if trainer_gc.known:
        if trainer_gc.origin is Origin.LIBRARY_DEFAULT:
            return Fact(False, None, f"the default gradient_checkpointing=False ({trainer_gc.source})",
                        from_default=True)
        return Fact(False, trainer_gc.span or trainer_gc.key_span,
                    "gradient_checkpointing=False", from_default=trainer_gc.origin.is_default)
    if setup.training is None and setup.framework in ("torch", "transformers", "trl", "unsloth"):
        # A hand-written loop with no checkpointing call: off, as PyTorch and transformers
        # models start with checkpointing disabled.
        return Fact(False, None, "no checkpointing call in the script", from_default=True)
    return Fact(None, trainer_gc.span, "gradient_checkpointing could not be resolved")


def quant_bits(setup: TrainingSetup) -> int | None:
    """4 or 8 when the base model is loaded quantized, 0 when not, ``None`` when unknown."""
    q = setup.quantization
    if q is None:
        return 0
    if not q.bits.known:
        return None
    return int(q.bits.value) if q.bits.value else 0


def is_quantized(setup: TrainingSetup) -> bool | None:
    """Whether the base model is loaded in 4 or 8 bits (``None`` when unknown)."""
    bits = quant_bits(setup)
    return None if bits is None else bits > 0
