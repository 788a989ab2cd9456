"""Memory terms of preference and RL training beyond one SFT step (bytes, allocated counter:
what ``torch.cuda.max_memory_allocated`` sees), used by :func:`lintlora.estimate.memory.estimate_memory`.

The trainer rules that decide which terms apply are in :mod:`lintlora.estimate.trainers`.

- **Reference forward** (DPO/IPO/KTO, GRPO/RLOO with ``beta != 0``, PPO): TRL runs it *after*
  the policy's forward, inside the same ``compute_loss`` (trl/trainer/dpo_trainer.py
  ``_compute_loss`` @ f2cd57710ae3: ``outputs = model(...)`` first, then ``with torch.no_grad():
  ref_outputs = ...``), so the policy's saved activations and loss buffers are alive while the
  reference logits exist. Those are the model dtype (transformers' ``*ForCausalLM.forward``
  returns ``self.lm_head(hidden_states)`` without an fp32 up-cast since 4.45), ``c`` bytes per
  token and vocabulary entry, plus one sequence's ``log_softmax`` row inside
  ``selective_log_softmax`` (trl/trainer/utils.py: 16-bit logits are reduced one row at a
  time). LLaMA-Factory's ``concatenated_forward`` casts the logits to fp32
  (``model(...).logits.to(torch.float32)``, the 16-bit output then dropped) and
  ``get_batch_logps`` takes the whole fp32 ``log_softmax`` (``src/llamafactory/train/dpo/trainer.py``,
  ``train/trainer_utils.py`` @ ff6d4d12eeb0): 4 + 4 = 8 bytes per token·vocab at its peak. One layer's no-grad intermediates are not
  counted (they are below the loss buffers for every catalogued model).
- **Generation phase** (GRPO/RLOO/PPO without vLLM): ``model.generate`` under
  ``torch.no_grad()`` for the generation batch. The KV cache (transformers ``DynamicCache``)
  holds keys and values of every layer for every token: ``rows × tokens × L × 2 × kv_width × c``
  with ``kv_width = num_key_value_heads × head_dim``. Each decoding step keeps the next-token
  logits in fp32 (``outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)``,
  transformers ``generation/utils.py`` ``_sample``) and the processed scores and
  probabilities (fp32): ``3 × 4 × V`` bytes per row. The prefill's largest no-grad temporary is
  one layer's MLP intermediates (gate, up and their product, ``3 × I × c`` per prompt token).
  No activations are saved; the trainable state (adapter, its gradients, the optimizer
  states) is resident.
- **vLLM colocated**: ``vllm_gpu_memory_utilization × GPU memory`` reserved by vLLM in this
  process for its weights and KV cache; added when the GPU's memory is known.
- **PPO's value model** (trl ``PPOTrainer``): a trained ``AutoModelForSequenceClassification``
  copy of the backbone (no ``lm_head``; its head is h × 1): weights, gradients and optimizer
  states in the weight dtype.

Pure functions; no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from lintlora.estimate.profiles import LOSS_K

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.estimate.architecture import Architecture
    from lintlora.estimate.memory import EstimateInputs

__all__ = ["loss_tokens", "extra_phases", "value_model_bytes", "vllm_reserved_bytes", "kv_cache_bytes",
           "REF_LOGITS_EXTRA"]

# bytes per token·vocab a framework's reference log-probs hold beyond the 16-bit logits (c = 2)
# counted for every framework (see the module docstring): trl reduces 16-bit logits one row at a
# time (counted as one row, not here); LLaMA-Factory's fp32 logits and fp32 log_softmax are
# 4 + 4 = 8 = c + 6
REF_LOGITS_EXTRA = {"llama-factory": 6.0}
_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def kv_cache_bytes(arch: "Architecture", rows: int, tokens: int, compute_dtype: str) -> float:
    """Bytes of a transformers ``DynamicCache`` for ``rows`` sequences of ``tokens`` tokens:
    keys and values of every layer, ``kv_width`` wide, in the compute dtype."""
    c = _DTYPE_BYTES.get(compute_dtype, 2)
    return float(rows) * tokens * arch.num_hidden_layers * 2 * arch.kv_width * c


def loss_tokens(inputs: "EstimateInputs") -> int:
    """Tokens whose vocabulary logits a step materialises: every token, except for GRPO and
    RLOO, whose forward asks for the completion's logits only (``logits_to_keep =
    completion_length + 1``, trl/trainer/grpo_trainer.py ``_get_per_token_logps_and_entropies``
    @ f2cd57710ae3; the extra one is dropped after the forward)."""
    t = inputs.tokens
    if inputs.trainer in ("grpo", "rloo") and inputs.max_completion_length:
        keep = min(inputs.seq_len, inputs.max_completion_length + 1)
        return inputs.batch_size * inputs.sequences_per_example * keep
    return t


def extra_phases(arch: "Architecture", inputs: "EstimateInputs", loss_moment: dict[str, float],
                 persistent_grads: float) -> list[tuple[str, dict[str, float]]]:
    """The phases a preference/RL step adds to an SFT step's (each a moment: component ->
    bytes, the components of :func:`lintlora.estimate.memory.estimate_memory`).

    Args:
        loss_moment: the training step's loss moment (the policy's saved activations and loss
            buffers), which the reference forward runs on top of.
        persistent_grads: trainable gradients kept between steps.
    """
    out: list[tuple[str, dict[str, float]]] = []
    c = _DTYPE_BYTES.get(inputs.compute_dtype, 2)
    V = arch.vocab_size
    t = loss_tokens(inputs)
    if inputs.reference_forward:
        extra = REF_LOGITS_EXTRA.get(inputs.framework)
        if inputs.liger or inputs.loss_impl == "fused":
            # trl's Liger losses run the reference through the fused linear + loss kernel too
            # (dpo_trainer.py _compute_loss_liger): chunks of logits, never the whole tensor
            ref = LOSS_K["fused"] * V * t
        else:
            ref = c * V * t + (extra * V * t if extra is not None else
                               c * V * (t // max(1, inputs.batch_size * inputs.sequences_per_example)))
        moment = dict(loss_moment)
        moment["transient"] = moment.get("transient", 0.0) + ref
        out.append(("reference forward", moment))
    rows = inputs.generation_batch_size
    if rows:
        tokens = inputs.seq_len
        prompt = inputs.max_prompt_length or max(1, tokens - (inputs.max_completion_length or 0))
        kv = kv_cache_bytes(arch, rows, tokens, inputs.compute_dtype)
        logits = 3 * 4.0 * V * rows
        prefill = 3.0 * arch.intermediate_size * c * rows * prompt
        out.append(("generation", {"gradients": persistent_grads, "activations": 0.0, "logits": logits,
                                   "transient": prefill, "kv_cache": kv}))
    return out


def value_model_bytes(arch: "Architecture", inputs: "EstimateInputs",
                      optimizer_bytes: Callable[[str, int], tuple[float, str]]) -> tuple[float, float, float, str]:
    """``(weights, gradients, optimizer states, description)`` of PPO's trained value model: the
    backbone without ``lm_head`` (its score head is h × 1) in the weight dtype."""
    wb = _DTYPE_BYTES.get(inputs.weight_dtype, 2)
    n = arch.total_params - (0 if arch.tie_word_embeddings else arch.lm_head_params) + arch.hidden_size
    ob, _ = optimizer_bytes(inputs.optim, wb)
    return n * wb, n * wb, n * ob, f"a trained value model: {n:,} params × {wb} B + gradients + optimizer states"


def vllm_reserved_bytes(inputs: "EstimateInputs", gpu_memory_bytes: int | None) -> int:
    """vLLM's colocated share of the GPU (0 when not colocated or the GPU is unknown)."""
    share = inputs.vllm_gpu_memory_utilization
    if not share or not gpu_memory_bytes:
        return 0
    return int(share * gpu_memory_bytes)
