"""Preference and RL training keys of the YAML dialects, as ``training.extra`` entries named
like trl's config fields (``trainer``, ``beta``, ``precompute_ref_log_probs``, ``ref_model``,
``num_generations``, ``max_prompt_length``, ``max_completion_length``, ``use_vllm``,
``vllm_mode``, ``vllm_gpu_memory_utilization``, ``generation_batch_size``,
``steps_per_generation``, ``reward_model_type``), which :mod:`lintlora.estimate.trainer_setup`
reads for both dialects and for TRL scripts alike.

axolotl (axolotl-ai-cloud/axolotl @ 067b021c8b87):

- ``rl: dpo|ipo|orpo|kto|simpo|grpo|gdpo`` picks the trainer (``src/axolotl/core/builders/rl.py``
  ``_get_trainer_cls``: DPO/IPO -> a trl DPOTrainer, ORPO -> ORPOTrainer, KTO -> KTOTrainer,
  SimPO -> CPOTrainer with ``loss_type="simpo"``, GRPO/GDPO -> a GRPOTrainer);
  ``sequence_len`` is passed as ``max_length`` (``src/axolotl/core/trainers/dpo/__init__.py``,
  ``core/builders/base.py``).
- ``beta``: ``trl.beta``, else ``rl_beta`` (``_build_training_arguments``).
- ``precompute_ref_log_probs`` is passed to DPOConfig (``trainers/dpo/__init__.py``).
- the reference: with an ``adapter`` and no ``rl_adapter_ref_model`` none is loaded (trl's
  adapter-disabled reference); ``rl_adapter_ref_model: true`` loads a second model
  (``src/axolotl/train.py`` ``setup_reference_model``); without an adapter trl's own rule.
- GRPO: ``trl.num_generations``, ``trl.max_completion_length``, ``trl.generation_batch_size``,
  ``trl.use_vllm``, ``trl.vllm_mode``; ``vllm.gpu_memory_utilization`` (axolotl's default 0.9,
  ``utils/schemas/vllm.py``) is passed only with ``vllm_mode: colocate``
  (``core/trainers/grpo/__init__.py`` ``set_training_args_kwargs``); ``max_prompt_length`` is
  blocklisted.

LLaMA-Factory (hiyouga/LLaMA-Factory @ ff6d4d12eeb0):

- ``stage: pt|sft|rm|ppo|dpo|kto`` (``hparams/finetuning_args.py``, default ``sft``); for
  ``dpo`` the ``pref_loss`` (``sigmoid`` default, ``hinge``, ``ipo``, ``kto_pair``, ``orpo``,
  ``simpo``); ``use_ref_model = stage == "dpo" and pref_loss not in ["orpo", "simpo"]``.
- ``ref_model: <path>`` loads that model as the reference (``train/trainer_utils.py``
  ``create_ref_model``); without it the reference is none for ``finetuning_type: lora`` and a copy
  otherwise (trl's rule).
- PPO: the value head is on the policy; ``reward_model_type: lora`` (default) loads the reward
  as an adapter on the same weights, ``full`` a full model, ``api`` none (``create_reward_model``).
  Each PPO mini-batch (``per_device_train_batch_size``) generates ``max_new_tokens`` (default
  1024, ``hparams/generating_args.py``) after a query of up to ``cutoff_len`` tokens.
"""

from __future__ import annotations

from lintlora.extract.dialects._base import ConfigDoc, as_bool, as_count, as_float, as_str, default, derived
from lintlora.training_setup import Origin, Setting

__all__ = ["axolotl_rl", "llama_factory_rl"]

_AX = "axolotl src/axolotl/core/builders/rl.py @ 067b021c8b87"
_LF = "LLaMA-Factory src/llamafactory/hparams/finetuning_args.py @ ff6d4d12eeb0"
_AXOLOTL_RL = {"dpo": "dpo", "ipo": "ipo", "orpo": "orpo", "kto": "kto", "simpo": "simpo",
               "grpo": "grpo", "gdpo": "grpo"}
_LF_PREF_LOSS = {"sigmoid": "dpo", "hinge": "dpo", "kto_pair": "dpo", "ipo": "ipo", "orpo": "orpo",
                 "simpo": "simpo"}


def _put(extra: dict[str, Setting], name: str, s: Setting | None) -> None:
    if s is not None:
        extra[name] = s


def axolotl_rl(doc: ConfigDoc) -> dict[str, Setting]:
    """``training.extra`` entries of an axolotl config's ``rl:`` (empty without one)."""
    rl = doc.setting("rl", as_str)
    value = rl.value.strip().lower() if rl is not None and rl.known and isinstance(rl.value, str) else None
    key = _AXOLOTL_RL.get(value or "")
    if rl is None or key is None:
        return {}
    extra: dict[str, Setting] = {"trainer": derived(key, rl, f"rl: {value} ({_AX} _get_trainer_cls)")}
    _put(extra, "beta", doc.setting("trl.beta", as_float) or doc.setting("rl_beta", as_float))
    _put(extra, "precompute_ref_log_probs", doc.setting("precompute_ref_log_probs", as_bool))
    adapter = doc.setting("adapter", as_str)
    ref = doc.setting("rl_adapter_ref_model", as_bool)
    if adapter is not None and adapter.known and adapter.value and ref is not None and ref.is_(True):
        extra["ref_model"] = derived(True, ref, "rl_adapter_ref_model: a second model is loaded "
                                     "(axolotl src/axolotl/train.py setup_reference_model)")
    for name in ("num_generations", "max_completion_length", "generation_batch_size"):
        _put(extra, name, doc.setting(f"trl.{name}", as_count))
    _put(extra, "use_vllm", doc.setting("trl.use_vllm", as_bool))
    mode = doc.setting("trl.vllm_mode", as_str)
    use = extra.get("use_vllm")
    if mode is None and use is not None and use.is_(True):
        # axolotl passes no vllm_mode then: trl 1.8 (axolotl's pin) defaults to colocate, while
        # axolotl's docs (docs/grpo.qmd) launch a server (axolotl vllm-serve) for such configs
        mode = Setting(None, Origin.UNKNOWN, use.span, use.key_span,
                       "trl.vllm_mode not set: trl's default is colocate, axolotl's docs start a vLLM server", None)
    _put(extra, "vllm_mode", mode)
    if mode is not None and mode.is_("colocate"):
        _put(extra, "vllm_gpu_memory_utilization", doc.setting("vllm.gpu_memory_utilization", as_float)
             or default(0.9, "axolotl src/axolotl/utils/schemas/vllm.py @ 067b021c8b87 (VllmConfig)",
                        "vllm.gpu_memory_utilization"))
    return extra


def llama_factory_rl(doc: ConfigDoc, stage: Setting) -> dict[str, Setting]:
    """``training.extra`` entries of a LLaMA-Factory config's ``stage:`` (empty for pt/sft)."""
    if not (stage.origin is Origin.LITERAL and isinstance(stage.value, str)):
        return {}
    st = stage.value.strip().lower()
    extra: dict[str, Setting] = {}
    if st == "dpo":
        loss = doc.setting("pref_loss", as_str) or default("sigmoid", _LF, "pref_loss")
        key = _LF_PREF_LOSS.get(str(loss.value).lower()) if loss.known else None
        if key is None:
            return {}
        extra["trainer"] = derived(key, stage, f"stage: dpo, pref_loss: {loss.value} ({_LF})")
        _put(extra, "beta", doc.setting("pref_beta", as_float))
    elif st in ("kto", "ppo", "rm"):
        extra["trainer"] = derived(st, stage, f"stage: {st} ({_LF})")
    else:
        return {}
    ref = doc.setting("ref_model", as_str)
    if ref is not None and ref.known and ref.value:
        extra["ref_model"] = derived(True, ref, "ref_model: a separate reference model is loaded "
                                     "(LLaMA-Factory src/llamafactory/train/trainer_utils.py create_ref_model)")
    if st == "ppo":
        _put(extra, "reward_model_type", doc.setting("reward_model_type", as_str)
             or default("lora", _LF, "reward_model_type"))
        cutoff = doc.setting("cutoff_len", as_count) or default(2048, "LLaMA-Factory data_args.py", "cutoff_len")
        extra["max_prompt_length"] = cutoff
        extra["max_completion_length"] = doc.setting("max_new_tokens", as_count) or default(
            1024, "LLaMA-Factory src/llamafactory/hparams/generating_args.py @ ff6d4d12eeb0", "max_new_tokens")
        extra["steps_per_generation"] = default(1, "LLaMA-Factory train/ppo/trainer.py (one mini-batch "
                                                "generated at a time)", "steps_per_generation")
    return extra
