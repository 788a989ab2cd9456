"""Which preference/RL trainer a setup runs, and the values it gives it, read from the setup
(:mod:`lintlora.estimate.trainers` holds the rules; this module only reads).

- a Python script: the trainer class the extractor recorded (``training.extra["trainer_class"]``:
  ``trl.DPOTrainer``...; ``DPOConfig(loss_type="ipo")`` is IPO, ``CPOConfig(loss_type="simpo")``
  SimPO), the config's own keywords (``precompute_ref_log_probs``, ``beta``,
  ``max_prompt_length``, ``max_completion_length``, ``num_generations``, ``use_vllm``...), and a
  ``ref_model=`` passed to the trainer (``training.extra["ref_model"]``);
- a YAML dialect: ``training.extra["trainer"]`` (axolotl ``rl:``, LLaMA-Factory ``stage:`` with
  ``pref_loss:``) and the same keys, filled by the dialect modules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lintlora.estimate.trainers import DPO_MAX_LENGTH, TRL_CLASSES, TrainerPlan, resolve, spec_of
from lintlora.training_setup import Origin, Setting, TrainingSetup

__all__ = ["trainer_key", "plan_for_setup", "apply_plan"]

_PAIRED_OR_LENGTH = ("dpo", "ipo", "orpo", "simpo", "cpo", "kto", "rm")


def _v(extra: Any, key: str) -> Any:
    s = extra.get(key)
    return s.value if isinstance(s, Setting) and s.known else None


def trainer_key(extra: Any) -> str:
    """The ``--trainer`` key of a setup's trainer (``"sft"`` when none is recognised)."""
    name = _v(extra, "trainer")
    if isinstance(name, str) and name.lower() in ("dpo", "ipo", "orpo", "simpo", "cpo", "kto", "grpo",
                                                  "rloo", "ppo", "rm", "sft"):
        return name.lower()
    cls = _v(extra, "trainer_class")
    if not isinstance(cls, str):
        return "sft"
    key = TRL_CLASSES.get(cls.rsplit(".", 1)[-1], "sft")
    loss = _v(extra, "loss_type")
    losses = [loss] if isinstance(loss, str) else list(loss) if isinstance(loss, (list, tuple)) else []
    if key == "dpo" and losses == ["ipo"]:
        return "ipo"
    if key == "cpo" and "simpo" in losses:
        return "simpo"
    return key


def _int(extra: Any, key: str) -> int | None:
    v = _v(extra, key)
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1_000_000 else None


def _float(extra: Any, key: str) -> float | None:
    v = _v(extra, key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _bool(extra: Any, key: str) -> bool | None:
    v = _v(extra, key)
    return v if isinstance(v, bool) else None


def _vllm_mode(extra: Any) -> str | None:
    """``vllm_mode`` as written; ``"unknown"`` when the dialect could not decide it."""
    s = extra.get("vllm_mode")
    if isinstance(s, Setting) and not s.known:
        return "unknown"
    v = _v(extra, "vllm_mode")
    return v if isinstance(v, str) else None


def plan_for_setup(setup: TrainingSetup, extra: Any, method: str, batch_size: int, seq_len: int,
                   framework: str) -> TrainerPlan:
    """The trainer plan of ``setup`` (:func:`lintlora.estimate.trainers.resolve`)."""
    key = trainer_key(extra)
    if key == "sft":
        return TrainerPlan(seq_len=seq_len)
    ga = setup.get("training.gradient_accumulation_steps")
    ga_v = ga.value if ga.known and isinstance(ga.value, int) and ga.value > 0 else None
    steps = _int(extra, "steps_per_generation") or ga_v or 1
    gbs = _int(extra, "generation_batch_size")
    if gbs and batch_size:
        steps = max(1, gbs // max(1, batch_size))
    reward = _v(extra, "reward_model_type")
    return resolve(
        key, peft=method != "full", batch_size=batch_size, seq_len=seq_len,
        precompute_ref_log_probs=_bool(extra, "precompute_ref_log_probs"),
        ref_model=_bool(extra, "ref_model"), beta=_float(extra, "beta"),
        max_prompt_length=_int(extra, "max_prompt_length"),
        max_completion_length=_int(extra, "max_completion_length") or _int(extra, "response_length"),
        num_generations=_int(extra, "num_generations"), steps_per_generation=steps,
        use_vllm=_bool(extra, "use_vllm"), vllm_mode=_vllm_mode(extra),
        vllm_gpu_memory_utilization=_float(extra, "vllm_gpu_memory_utilization"),
        reward_model=reward if isinstance(reward, str) else None,
        value_head_on_policy=framework == "llama-factory", framework=framework)


def apply_plan(inputs: Any, plan: TrainerPlan, extra: Any, notes: list[str] | None = None) -> Any:
    """``inputs`` (``EstimateInputs``) with the plan's fields. A generating trainer's sequence
    is prompt + completion (the plan's notes say how each was found), so an assumed
    ``max_seq_length`` no longer applies: its note is dropped from ``notes``."""
    assumed = inputs.assumed
    if spec_of(plan.trainer).generates:
        assumed = tuple(a for a in assumed if a != "seq_len")
        if notes is not None:
            notes[:] = [n for n in notes if not n.startswith(("sequence length unknown", "sequences taken as padded",
                                                              "max_seq_length not set"))]
    return replace(
        inputs, assumed=assumed, trainer=plan.trainer, sequences_per_example=plan.sequences_per_example,
        seq_len=int(plan.seq_len or inputs.seq_len), reference_model=plan.reference_model,
        reference_forward=plan.reference_forward, generation_batch_size=plan.generation_batch_size,
        reward_model=plan.reward_model, value_model=plan.value_model,
        vllm_gpu_memory_utilization=plan.vllm_share,
        num_generations=_int(extra, "num_generations") if spec_of(plan.trainer).generates else None,
        max_prompt_length=plan.prompt_length, max_completion_length=plan.completion_length,
        loss_impl=loss_impl_for(plan.trainer, inputs))


def loss_impl_for(trainer: str, inputs: Any) -> str | None:
    """The loss buffers of ``trainer`` (a ``profiles.LOSS_K`` key, ``None``: the profile's):
    ``"none"`` for a reward model's score head; ``"trl-logps"`` for trl's DPO/IPO/SimPO/CPO/KTO/
    GRPO/RLOO/PPO log-probs on 16-bit logits (not ORPO, which adds a cross-entropy on the chosen
    half; not LLaMA-Factory, whose get_batch_logps up-casts to fp32); a loss the file names
    (Liger, Cut Cross-Entropy) is kept."""
    if inputs.loss_impl is not None or inputs.liger:
        return inputs.loss_impl
    spec = spec_of(trainer)
    if spec.score_head:
        return "none"
    if trainer in ("sft", "orpo") or inputs.framework == "llama-factory" \
            or inputs.compute_dtype not in ("bfloat16", "float16"):
        return None
    return "trl-logps"


def default_length(key: str, setup: TrainingSetup, assumed: list[str], notes: list[str]) -> int | None:
    """trl's ``max_length = 1024`` for a paired/KTO/reward trainer whose config sets no
    length (the sequence length was then assumed): the length to use, with the note replaced;
    ``None`` otherwise."""
    if key not in _PAIRED_OR_LENGTH or "seq_len" not in assumed:
        return None
    msl = setup.get("training.max_seq_length")
    if msl.span is not None or msl.origin is Origin.UNKNOWN and msl.source:
        return None  # written but not resolved: stays unknown
    assumed.remove("seq_len")
    notes[:] = [n for n in notes if not n.startswith("sequence length unknown")]
    notes.append(f"max_length not set: trl's default {DPO_MAX_LENGTH} tokens per sequence "
                 "(DPOConfig/KTOConfig/RewardConfig/ORPOConfig/CPOConfig, trl >= 0.14)")
    return DPO_MAX_LENGTH
