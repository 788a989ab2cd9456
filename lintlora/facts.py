"""Facts derived from a TrainingSetup that several rules and the estimator share.

Keeping them here means one answer to "is checkpointing on?" for every rule and for the
estimator, instead of each re-deriving it slightly differently.
"""

from __future__ import annotations

from dataclasses import dataclass

from lintlora.training_setup import CallSite, Origin, Setting, Span, TrainingSetup

__all__ = [
    "Fact", "checkpointing", "is_quantized", "quant_bits", "DATA_PARALLEL_KINDS", "data_parallel",
    "frozen_base", "Use", "fp16_uses", "dataloader_workers",
]


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
    value = q.bits.value
    if not value:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return int(value)
    except (ValueError, OverflowError):  # not a bit width (a value an extractor could not normalise)
        return None


def is_quantized(setup: TrainingSetup) -> bool | None:
    """Whether the base model is loaded in 4 or 8 bits (``None`` when unknown)."""
    bits = quant_bits(setup)
    return None if bits is None else bits > 0


# ---- facts added for the rules (LL001-LL007) -------------------------------------------------

DATA_PARALLEL_KINDS = frozenset(
    {"accelerator", "env-rank", "deepspeed", "fsdp", "ddp-argument", "torchrun", "multi-gpu"}
)
"""Evidence kinds (see :class:`lintlora.training_setup.Evidence`) meaning the script runs one
process per GPU, each holding its own replica or shard of the model."""


def data_parallel(setup: TrainingSetup) -> tuple:
    """The launch evidence that the setup trains data-parallel (or sharded), in source order.

    Empty when nothing in the file says so; that is not proof of a single process (a launcher
    outside the file can still start several), so rules that need this evidence stay silent
    without it.
    """
    return tuple(e for e in setup.launch if e.kind in DATA_PARALLEL_KINDS)


def frozen_base(setup: TrainingSetup) -> bool | None:
    """Whether the base weights stay frozen while adapters train (LoRA / QLoRA).

    True when the setup has an adapter configuration (a ``LoraConfig`` or a dialect's LoRA
    keys), wraps the model with ``get_peft_model``, or loads it quantized (bitsandbytes 4/8-bit
    weights cannot be trained directly, only through adapters). ``None`` otherwise: no adapter
    seen is not proof of full fine-tuning.
    """
    if setup.lora is not None or setup.has_call("get_peft_model"):
        return True
    if is_quantized(setup):
        return True
    return None


@dataclass(frozen=True)
class Use:
    """One place where the setup asks for something, for messages and fixes.

    Attributes:
        what: the user's own spelling, e.g. ``"fp16=True"`` or ``"autocast(dtype=torch.float16)"``.
        path: the setup path (``"training.fp16"``) a fix can ``set``, or ``None`` for a call.
        span: where it is written (``None`` for defaults without a location).
        setting: the Setting, when it is one.
        call: the CallSite, when it is one.
    """

    what: str
    path: str | None
    span: Span | None
    setting: Setting | None = None
    call: CallSite | None = None


def fp16_uses(setup: TrainingSetup) -> list[Use]:
    """Every place the setup trains in float16, in this order: the trainer's ``fp16``, the
    ``autocast`` calls, the 4-bit compute dtype, the model's load dtype.

    Only known values count; a library default of ``fp16=False`` or a float32 compute dtype is
    not a use. An ``autocast`` counts only where it runs per training step (see below). The load dtype counts only when the setup trains (``is_training``).
    """
    uses: list[Use] = []
    config = setup.kind in ("yaml", "json")

    def spell(key: str, python: str, yaml: str) -> str:
        return f"{key}: {yaml}" if config else f"{key}={python}"

    fp16 = setup.get("training.fp16")
    if fp16.known and fp16.value is True:
        uses.append(Use(spell("fp16", "True", "true"), "training.fp16", fp16.span or fp16.key_span,
                        setting=fp16))
    for call in setup.calls_of("autocast"):
        dtype = call.args.get("dtype")
        # An autocast region is training precision only when it runs per training step (the
        # extractor marks loops that call .backward()/.step() and per-step hooks) or when it
        # is Accelerator(mixed_precision=...), which wraps every forward it prepares. A float16
        # autocast around generate() or evaluation after training is not a training setting.
        per_step = call.in_step_callback or "mixed_precision" in call.args
        if per_step and dtype is not None and dtype.is_("float16"):
            uses.append(Use("autocast(dtype=torch.float16)", None, call.span, call=call))
    compute = setup.get("quantization.bnb_4bit_compute_dtype")
    if compute.is_("float16"):
        uses.append(Use(spell("bnb_4bit_compute_dtype", "torch.float16", "float16"),
                        "quantization.bnb_4bit_compute_dtype", compute.span or compute.key_span,
                        setting=compute))
    dtype = setup.get("model.torch_dtype")
    if setup.is_training and dtype.is_("float16"):
        uses.append(Use(spell("torch_dtype", "torch.float16", "float16"), "model.torch_dtype",
                        dtype.span or dtype.key_span, setting=dtype))
    return uses


def dataloader_workers(setup: TrainingSetup) -> list[Use]:
    """The known worker counts of the setup's data loaders: ``dataloader_num_workers`` of the
    trainer, then each ``DataLoader(num_workers=...)``; unknown counts are left out.

    ``Use.path`` is ``"training.dataloader_num_workers"`` for the trainer's setting and ``None``
    for DataLoader calls; ``Use.setting.value`` is the count.
    """
    found: list[Use] = []
    sep = ": " if setup.kind in ("yaml", "json") else "="
    trainer = setup.get("training.dataloader_num_workers")
    if trainer.known and isinstance(trainer.value, int) and not isinstance(trainer.value, bool):
        found.append(Use(f"dataloader_num_workers{sep}{trainer.value}", "training.dataloader_num_workers",
                         trainer.span or trainer.key_span, setting=trainer))
    for loader in setup.dataloaders:
        n = loader.num_workers
        if n.known and isinstance(n.value, int) and not isinstance(n.value, bool):
            found.append(Use(f"num_workers{sep}{n.value}", None, n.span or n.key_span or loader.span,
                             setting=n))
    return found
