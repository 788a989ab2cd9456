"""Preference and RL training shapes: what each trainer puts through the model per step and
which extra models it keeps on the GPU.

Pure functions over plain values; no I/O. :mod:`lintlora.estimate.from_setup` reads the values
from a setup (a TRL script's trainer class and config, an axolotl ``rl:`` config, a
LLaMA-Factory ``stage:`` config) and ``lintlora estimate`` from its flags; both call
:func:`resolve` so the two paths price the same run the same way. The memory terms (the
generation phase, the reference forward, vLLM's share) are in :mod:`lintlora.estimate.rl`.

Every rule below is read from the trainers' source; ``TRL`` is huggingface/trl @ f2cd57710ae3
(1.10.0.dev0, 2026-07-24) unless a release is named:

- **Paired trainers** (DPO, IPO, ORPO, SimPO, CPO, reward modelling): the collator puts each
  example's chosen and rejected completions in one batch, ``[chosen..., rejected...]``, both
  padded to the longer of the pair and the prompt repeated (TRL ``trl/trainer/dpo_trainer.py``
  ``DataCollatorForPreference``: ``prompts = [...] * 2``, ``torch.cat(pad([chosen_ids,
  rejected_ids]))``, then truncated to ``max_length``; ``trl/trainer/reward_trainer.py``
  collator ``input_ids = chosen_ids + rejected_ids``). So 2 sequences per example of at most
  ``max_length`` tokens (DPOConfig/KTOConfig/RewardConfig ``max_length = 1024``; DPOConfig's
  since v0.14.0, ``None`` before). trl 0.14-0.x releases cut the prompt at ``max_prompt_length``
  (512) and the whole at ``max_length``: the same bound. IPO is DPOTrainer with ``loss_type="ipo"``; SimPO is CPOTrainer with
  ``loss_type="simpo"`` (axolotl ``src/axolotl/core/builders/rl.py`` @ 067b021c8b87).
- **Reference model** (DPO, IPO, KTO; GRPO and RLOO when ``beta != 0``; PPO): none extra with a
  peft adapter (the adapter is disabled for the reference forward: ``use_adapter(model, None)``),
  none with ``precompute_ref_log_probs=True`` (DPO, KTO: computed once before training), else a
  second, frozen copy loaded like the policy (``create_model_from_path(model_id,
  **model_init_kwargs)`` with the same ``quantization_config``: dpo_trainer.py ``__init__``,
  kto_trainer.py, grpo_trainer.py ``if self.beta == 0.0: ref_model = None elif
  is_peft_model(model): None else create_model_from_path``). A ``ref_model=`` passed to the
  trainer is that copy. ORPO, SimPO and CPO are reference-free.
- **KTO**: unpaired, one completion per example with gradients, plus the mismatched KL
  completions (each prompt with the next example's completion, ``completions[-1:] +
  completions[:-1]``) run under ``torch.no_grad()`` (kto_trainer.py ``_compute_kl_logps``):
  no saved activations, only a transient logits tensor.
- **GRPO / RLOO**: ``per_device_train_batch_size`` counts *completions* (TRL >= 0.15:
  ``RepeatSampler`` repeats each prompt ``num_generations`` times inside the batch; 0.14 counted
  prompts). One generation batch of ``per_device_train_batch_size × steps_per_generation``
  completions (``steps_per_generation`` defaults to ``gradient_accumulation_steps``, or
  ``generation_batch_size`` / processes: grpo_config.py ``__post_init__``) is generated at once
  with ``model.generate`` (``torch.no_grad()``, a KV cache), then trained on in slices of
  ``per_device_train_batch_size`` over prompt + completion tokens. Defaults: GRPOConfig
  ``num_generations = 8``, ``max_completion_length = 256`` (v0.14.0 to v1.9.0; 512 on the
  1.10 development line), ``max_prompt_length = 512`` (v0.14.0 to v0.25; ``None`` in v0.26
  and v0.27, removed in v0.28: prompts are then not truncated), ``beta = 0.0`` since v0.19.0
  (0.04 before); RLOOConfig
  ``num_generations = 2``, ``beta = 0.05``. ``use_vllm=True`` generates in vLLM instead:
  ``vllm_mode="server"`` on another GPU, ``"colocate"`` in this process with
  ``vllm_gpu_memory_utilization`` (0.3) of this GPU.
- **PPO** (``trl.experimental.ppo.PPOTrainer``): the policy, a trained value model
  (``PolicyAndValueWrapper(policy, value_model)``: the critic's backbone runs on the same
  tokens), a frozen reward model, and the reference (none with peft). LLaMA-Factory's ``stage:
  ppo`` puts the value head on the policy (``AutoModelForCausalLMWithValueHead``: one h × 1
  linear), loads the reward model as a LoRA adapter on the same weights by default
  (``reward_model_type: lora``) or as a full model (``full``), and the reference by
  ``create_ref_model`` (none for LoRA): ``src/llamafactory/train/trainer_utils.py`` @
  ff6d4d12eeb0.
- **Reward modelling** (``trl.RewardTrainer``, LLaMA-Factory ``stage: rm``): paired forward of
  an ``AutoModelForSequenceClassification`` with ``num_labels=1``: its head is h × 1, so no
  vocabulary logits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TRAINERS", "TrainerSpec", "TrainerPlan", "spec_of", "resolve", "TRL_CLASSES",
           "DPO_MAX_LENGTH", "GRPO_DEFAULTS", "RLOO_DEFAULTS"]

TRL = "trl @ f2cd57710ae3 (1.10.0.dev0)"

# DPOConfig / KTOConfig / RewardConfig / ORPOConfig / CPOConfig max_length (trl/trainer/
# dpo_config.py, kto_config.py, reward_config.py @ f2cd57710ae3; DPOConfig's since trl v0.14.0)
DPO_MAX_LENGTH = 1024


@dataclass(frozen=True)
class TrainerSpec:
    """What one trainer family does per step (see the module docstring for the sources).

    Attributes:
        key: the ``--trainer`` name.
        sequences: sequences per example that run forward and backward (2: chosen and
            rejected concatenated along the batch).
        reference: the loss compares with a reference policy (KL or log-ratio).
        generates: completions are generated online before each training step.
        reward_model, value_model: PPO's frozen reward model and trained critic.
        score_head: a sequence-classification head (h × 1): no vocabulary logits.
        kl_forward: KTO's no-grad forward of the mismatched KL completions.
        label: the trainer in words for the notes.
    """

    key: str
    sequences: int = 1
    reference: bool = False
    generates: bool = False
    reward_model: bool = False
    value_model: bool = False
    score_head: bool = False
    kl_forward: bool = False
    label: str = ""


TRAINERS: dict[str, TrainerSpec] = {
    "sft": TrainerSpec("sft", label="supervised fine-tuning"),
    "dpo": TrainerSpec("dpo", 2, reference=True, label="DPO (trl DPOTrainer)"),
    "ipo": TrainerSpec("ipo", 2, reference=True, label="IPO (trl DPOTrainer, loss_type='ipo')"),
    "orpo": TrainerSpec("orpo", 2, label="ORPO (trl ORPOTrainer, reference-free)"),
    "simpo": TrainerSpec("simpo", 2, label="SimPO (trl CPOTrainer, loss_type='simpo', reference-free)"),
    "cpo": TrainerSpec("cpo", 2, label="CPO (trl CPOTrainer, reference-free)"),
    "kto": TrainerSpec("kto", 1, reference=True, kl_forward=True, label="KTO (trl KTOTrainer)"),
    "grpo": TrainerSpec("grpo", 1, reference=True, generates=True, label="GRPO (trl GRPOTrainer)"),
    "rloo": TrainerSpec("rloo", 1, reference=True, generates=True, label="RLOO (trl RLOOTrainer)"),
    "ppo": TrainerSpec("ppo", 1, reference=True, generates=True, reward_model=True, value_model=True,
                       label="PPO (trl PPOTrainer)"),
    "rm": TrainerSpec("rm", 2, score_head=True, label="reward modelling (trl RewardTrainer)"),
}

# canonical trl class names (any import path: trl.X, trl.experimental.orpo.X) -> trainer key
TRL_CLASSES: dict[str, str] = {
    "SFTTrainer": "sft", "DPOTrainer": "dpo", "ORPOTrainer": "orpo", "CPOTrainer": "cpo",
    "KTOTrainer": "kto", "GRPOTrainer": "grpo", "RLOOTrainer": "rloo", "PPOTrainer": "ppo",
    "RewardTrainer": "rm",
}

# trl/experimental/ppo/ppo_config.py @ f2cd57710ae3: response_length = 53 (tokens generated per
# query), local_rollout_forward_batch_size = 64 (rows generated at once); ppo_trainer.py
# local_batch_size = per_device_train_batch_size × gradient_accumulation_steps
PPO_RESPONSE_LENGTH = 53
PPO_ROLLOUT_CHUNK = 64
# GRPOConfig defaults (trl/trainer/grpo_config.py, v0.19.0 .. v1.9.0; see the module docstring)
GRPO_DEFAULTS = {"num_generations": 8, "max_completion_length": 256, "max_prompt_length": 512,
                 "beta": 0.0, "vllm_gpu_memory_utilization": 0.3}
# RLOOConfig defaults (trl/trainer/rloo_config.py @ f2cd57710ae3)
RLOO_DEFAULTS = {"num_generations": 2, "max_completion_length": 256, "max_prompt_length": 512,
                 "beta": 0.05, "vllm_gpu_memory_utilization": 0.3}


def spec_of(key: str | None) -> TrainerSpec:
    """The spec of a ``--trainer`` key (``sft`` for ``None`` or an unknown key)."""
    return TRAINERS.get((key or "sft").lower(), TRAINERS["sft"])


@dataclass(frozen=True)
class TrainerPlan:
    """What a trainer makes the estimator count (the ``EstimateInputs`` fields it sets).

    Attributes:
        trainer: the key.
        sequences_per_example: sequences through forward and backward per example.
        seq_len: tokens per training sequence (GRPO/RLOO/PPO: prompt + completion).
        reference_model: a frozen copy of the weights is resident.
        reference_forward: a no-grad reference forward runs after the policy's (a copy or the
            adapter-disabled policy; not with precomputed log-probs).
        generation_batch_size: completions generated at once per device (``None``: no
            generation phase on this GPU: not an RL trainer, or vLLM generates).
        reward_model, value_model: PPO's extra models (a frozen copy / a trained copy).
        vllm_share: fraction of this GPU's memory vLLM colocated in this process reserves.
        prompt_length, completion_length: GRPO/RLOO/PPO tokens of each part (resolved).
        notes: sentences for the estimate's assumptions.
    """

    trainer: str = "sft"
    sequences_per_example: int = 1
    seq_len: int | None = None
    reference_model: bool = False
    reference_forward: bool = False
    generation_batch_size: int | None = None
    reward_model: bool = False
    value_model: bool = False
    vllm_share: float | None = None
    prompt_length: int | None = None
    completion_length: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def resolve(trainer: str, *, peft: bool, batch_size: int, seq_len: int,
            precompute_ref_log_probs: bool | None = None, ref_model: bool | None = None,
            beta: float | None = None, max_prompt_length: int | None = None,
            max_completion_length: int | None = None, num_generations: int | None = None,
            steps_per_generation: int | None = None, use_vllm: bool | None = None,
            vllm_mode: str | None = None, vllm_gpu_memory_utilization: float | None = None,
            reward_model: str | None = None, value_head_on_policy: bool = False,
            framework: str = "trl") -> TrainerPlan:
    """The plan for one run of ``trainer`` (see the module docstring for every rule).

    Args:
        peft: the policy is a peft model (LoRA/QLoRA/DoRA).
        batch_size: ``per_device_train_batch_size`` (examples; GRPO/RLOO: completions).
        seq_len: the configured ``max_length`` (paired trainers, KTO, RM, SFT).
        ref_model: ``True``: a reference model is passed or named (``ref_model=``, axolotl
            ``rl_adapter_ref_model``, LLaMA-Factory ``ref_model:``); ``False``: none is loaded
            (``--no-ref-model``); ``None``: the trainer's own rule.
        reward_model: ``"full"`` a separate reward model, ``"lora"`` an adapter on the same
            weights, ``"api"``/``"none"`` none on this GPU, ``None`` the trainer's default.
        value_head_on_policy: LLaMA-Factory PPO's value head on the policy (no critic copy).
        steps_per_generation: ``gradient_accumulation_steps`` unless set.
    """
    spec = spec_of(trainer)
    notes: list[str] = []
    if spec.key == "sft":
        return TrainerPlan(seq_len=seq_len)
    seqs = spec.sequences
    if spec.sequences == 2:
        what = "chosen and rejected completions" if not spec.score_head else "chosen and rejected sequences"
        notes.append(f"{spec.label}: each example's {what} run in one forward, concatenated along the "
                     f"batch and padded to the longer of the pair: 2 sequences per example of at most "
                     f"{seq_len} tokens (max_length; the prompt is repeated in both)")
    if spec.score_head:
        notes.append("reward model: a sequence-classification head (hidden × 1), so no vocabulary logits")
    if spec.kl_forward:
        notes.append("KTO: one completion per example with gradients; the mismatched KL completions "
                     "(each prompt with another example's completion) run under torch.no_grad(): a "
                     "transient logits tensor, no saved activations")

    # ---- generation (GRPO/RLOO/PPO) ----
    defaults = RLOO_DEFAULTS if spec.key == "rloo" else GRPO_DEFAULTS
    gen_rows: int | None = None
    vshare: float | None = None
    train_len = seq_len
    p = c = None
    if spec.generates:
        p = max_prompt_length if max_prompt_length else defaults["max_prompt_length"]
        c_default = PPO_RESPONSE_LENGTH if spec.key == "ppo" else defaults["max_completion_length"]
        c = max_completion_length if max_completion_length else c_default
        if not max_prompt_length:
            notes.append(f"prompt length not set: {p} tokens assumed (max_prompt_length's default in trl "
                         "0.14-0.25; later releases do not truncate prompts)")
        if not max_completion_length:
            notes.append(f"response_length not set: trl PPOConfig's default {c}" if spec.key == "ppo" else
                         f"max_completion_length not set: trl's default {c} (v0.14-v1.9; 512 on 1.10.dev)")
        train_len = p + c
        if spec.key != "ppo":
            notes.append(f"trl computes the logits of the {c} completion tokens only (logits_to_keep): the loss "
                         "buffers are counted over those")
        g = num_generations or defaults["num_generations"]
        steps = max(1, steps_per_generation or 1)
        if spec.key == "ppo":
            notes.append(f"{spec.label}: each step generates {c} tokens per query with model.generate, "
                         f"then trains over query + response ({train_len} tokens)")
        else:
            notes.append(f"{spec.label}: per_device_train_batch_size = {batch_size} counts completions "
                         f"(num_generations = {g} per prompt across the global batch; trl >= 0.15); each "
                         f"training sequence is prompt + completion = {p} + {c} = {train_len} tokens")
        if use_vllm:
            mode = (vllm_mode or "colocate").lower()
            if not vllm_mode:
                notes.append("vllm_mode not set: 'colocate' (trl >= 1.0; trl 0.18-0.29 defaulted to 'server')")
            if mode == "unknown":
                notes.append("use_vllm with the vLLM mode undecided (server or colocated): vLLM's memory is not "
                             "counted and no generation phase on this GPU")
            elif mode == "server":
                notes.append("use_vllm with vllm_mode='server': completions are generated by a vLLM server "
                             "on other GPUs; no generation phase on this one")
            else:
                vshare = vllm_gpu_memory_utilization if vllm_gpu_memory_utilization is not None \
                    else defaults["vllm_gpu_memory_utilization"]
                notes.append(f"use_vllm colocated: vLLM reserves vllm_gpu_memory_utilization = {vshare} of this "
                             "GPU's memory (its weights copy and KV cache) for the whole run; modelled as that "
                             "reserved share, counted only when the GPU's memory is known")
        else:
            gen_rows = batch_size * steps
            if spec.key == "ppo" and not value_head_on_policy:
                # trl PPO generates the rollout batch (per_device_train_batch_size ×
                # gradient_accumulation_steps) in chunks of local_rollout_forward_batch_size (64)
                gen_rows = min(PPO_ROLLOUT_CHUNK, gen_rows)
            notes.append(f"generation phase: model.generate under torch.no_grad() for the generation batch of "
                         f"{batch_size} × {steps} (steps_per_generation) = {gen_rows} completions at once, with a "
                         f"KV cache over {train_len} tokens each and no saved activations; the peak is the larger "
                         "of this phase and the training step")

    # ---- reference ----
    ref_copy = False
    ref_fwd = False
    b = beta if beta is not None else (defaults["beta"] if spec.generates and spec.key != "ppo" else None)
    if not spec.reference:
        if spec.key in ("orpo", "simpo", "cpo"):
            notes.append(f"{spec.label}: no reference model")
    elif ref_model is False:
        notes.append(f"{spec.label}: no reference model (as told)")
    elif ref_model is True:
        ref_copy = True
        ref_fwd = not (precompute_ref_log_probs and spec.key in ("dpo", "ipo", "kto"))
        notes.append(f"{spec.label}: a separate reference model is loaded: counted as a frozen copy of the "
                     "policy's base (same architecture and dtype assumed)")
    elif spec.generates and spec.key != "ppo" and b == 0:
        notes.append(f"{spec.label}: beta = 0, so no reference model is loaded")
    elif precompute_ref_log_probs and spec.key in ("dpo", "ipo", "kto"):
        notes.append(f"{spec.label}: precompute_ref_log_probs=True, so no reference model is kept during training")
    elif peft:
        ref_fwd = True
        notes.append(f"{spec.label}: the reference is the policy with its adapter disabled (no second copy); "
                     "its no-grad forward runs after the policy's")
    else:
        ref_copy = ref_fwd = True
        notes.append(f"{spec.label} without peft: a frozen reference copy of the model, loaded like the policy "
                     "(same dtype and quantization), stays on the GPU"
                     + (" (set precompute_ref_log_probs=True, or train an adapter, to avoid it)"
                        if spec.key in ("dpo", "ipo", "kto") else ""))

    # ---- PPO's reward and value models ----
    rm_copy = vm_copy = False
    if spec.reward_model:
        kind = (reward_model or ("lora" if value_head_on_policy else "full")).lower()
        if kind == "full":
            rm_copy = True
            notes.append("PPO: a frozen reward model is loaded: counted as a copy of the policy's base "
                         "(same architecture and dtype assumed)")
        elif kind == "lora":
            notes.append("PPO: the reward model is a LoRA adapter on the policy's weights (LLaMA-Factory "
                         "reward_model_type: lora): no extra weights")
        else:
            notes.append("PPO: the reward comes from outside this GPU (reward_model_type: api)")
    if spec.value_model:
        if value_head_on_policy:
            notes.append("PPO: the value head sits on the policy (hidden × 1): no critic copy")
        else:
            vm_copy = True
            seqs = 2
            notes.append("PPO: the value model is a second, trained copy of the backbone (weights, gradients and "
                         "optimizer states in full; its forward on the same tokens doubles the saved "
                         "activations, and its loss buffers are counted like the policy's: an upper bound)")
    if framework == "llama-factory" and spec.key in ("dpo", "kto"):
        notes.append("LLaMA-Factory computes the log-probs from fp32 logits (its get_batch_logps): the profile's "
                     "cross-entropy loss buffers are counted")
    return TrainerPlan(trainer=spec.key, sequences_per_example=seqs, seq_len=train_len,
                       reference_model=ref_copy, reference_forward=ref_fwd,
                       generation_batch_size=gen_rows, reward_model=rm_copy, value_model=vm_copy,
                       vllm_share=vshare, prompt_length=p, completion_length=c, notes=tuple(notes))
