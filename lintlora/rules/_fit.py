"""What LL008 and LL001 share about whether an estimate can be compared with one GPU: runs the
estimate does not model (LLaMA-Factory OFT/freeze tuning, GaLore/APOLLO/BAdam, Megatron or axolotl
model parallelism, Spectrum) and sharded runs over an unknown number of ranks (LL008 is silent on
them; LL001 reports its saving without a verdict on the fit). Kept here so neither rule module
imports the other (tests/test_import_layers.py)."""

from __future__ import annotations

from lintlora.training_setup import TrainingSetup

__all__ = ["fit_not_judged"]


def _sharded(setup: TrainingSetup) -> bool:
    """DeepSpeed or FSDP named (or a value for either lintlora cannot resolve): the per-device
    peak then depends on the number of GPUs sharing the model, which the estimate does not
    model."""
    if any(e.kind in ("deepspeed", "fsdp") for e in setup.launch):
        return True
    dist = setup.distributed
    if dist is not None and (dist.backend.is_("deepspeed") or dist.backend.is_("fsdp")):
        return True
    for key in ("training.deepspeed", "training.fsdp"):
        value = setup.get(key)
        if value.known and value.value not in (None, False, "", (), [], {}):
            return True
        if not value.known and value.span is not None:
            return True
    return False


# LLaMA-Factory training methods the estimate prices as something else (hiyouga/LLaMA-Factory
# @ ff6d4d12): finetuning_type oft/freeze (OFT adapters on a frozen base, src/llamafactory/model/
# adapter.py _setup_lora_tuning; a few layers trained, _setup_freeze_tuning) estimated as a full
# fine-tune; use_galore/use_apollo/use_badam (low-rank optimizer states, one block trained at a
# time: train/trainer_utils.py create_custom_optimizer) as AdamW over every parameter; Megatron's
# tensor/pipeline parallel sizes (the model split over GPUs) as one device holding it all.
_NOT_MODELLED_TYPES = ("oft", "freeze")
_NOT_MODELLED_FLAGS = ("use_galore", "use_apollo", "use_badam",
                       "use_kt")  # KTransformers: the MoE experts run on the CPU (model_args.py)
# axolotl's expert/tensor/context parallel sizes (src/axolotl/utils/schemas/config.py,
# integrations/expert_parallel/plugin.py @ 067b021c8): the experts, the weights or each sequence
# divided among the ranks
_MODEL_PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                   "expert_parallel_size", "tensor_parallel_size", "context_parallel_size",
                   "sequence_parallel_degree")


def _not_modelled(setup: TrainingSetup) -> bool:
    """A training method or split the estimate does not model, so an "over" verdict would be
    about another run (a full fine-tune, AdamW, one GPU holding the whole model or sequence)."""
    training = setup.training
    extra = getattr(training, "extra", None) or {}
    ftype = extra.get("finetuning_type")
    if ftype is not None and ftype.known and str(ftype.value).lower() in _NOT_MODELLED_TYPES:
        return True
    if any((s := extra.get(k)) is not None and s.is_(True) for k in _NOT_MODELLED_FLAGS):
        return True
    spectrum = extra.get("spectrum_config_path")  # Spectrum: only the listed layers train
    if spectrum is not None and (not spectrum.known or spectrum.value):
        return True
    for key in _MODEL_PARALLEL:
        s = extra.get(key)
        if s is not None and (not s.known or (isinstance(s.value, int) and s.value > 1)):
            return True
    return False


def _per_rank(inputs) -> bool:
    """Whether the estimate is the per-GPU peak of a sharded run: the estimator's inputs carry
    the sharding (``zero_stage``/``fsdp``) and the number of ranks above one (from the run's
    distribution, :mod:`lintlora.estimate.sharding_setup`)."""
    return (getattr(inputs, "num_gpus", 1) or 1) > 1 and bool(getattr(inputs, "zero_stage", 0)
                                                               or getattr(inputs, "fsdp", None))


def fit_not_judged(setup: TrainingSetup, estimate) -> bool:
    """Whether the estimate of ``setup`` cannot be compared with one GPU: a method or split it
    does not model (:func:`_not_modelled`), or a sharded run whose number of ranks it does not
    know. LL008 is then silent; LL001 reports its saving without a verdict on the fit."""
    if _not_modelled(setup):
        return True
    return _sharded(setup) and not _per_rank(getattr(estimate, "inputs", None))
