"""Training-time estimate: FLOPs per token, an efficiency (MFU) assumption, and QLoRA's
dequantization cost.

Formulas (estimator-notes §3 "Time estimate"; Kaplan et al. 2020 for 2·N FLOPs per token):

* forward FLOPs per token ``F = 2·N_active + 2·L·s·qw`` (attention QKᵀ and AV under a causal
  mask with an efficient kernel); eager attention computes the full square: ``4·L·s·qw``.
* LoRA / QLoRA: the backward needs activation gradients but no frozen-weight gradients, so
  a step costs ``2F`` per token (``3F`` with checkpointing, which repeats the forward);
  full fine-tuning ``3F`` (``4F`` with checkpointing).
* MFU (model FLOPs utilisation): 0.30 at <= 1k tokens per micro-batch rising log-linearly to
  0.50 at >= 8k (Qwen-7B LoRA on A100 measured 0.26 at 256 tokens and 0.58 at 8192 tokens,
  notes §3).
* QLoRA dequantizes every quantized weight in each pass: ``passes × 6 B × N_quantized /
  bandwidth`` per micro-batch (passes 2, 3 with checkpointing; 6 B ≈ read 0.5 B packed +
  write and read 2 B bf16 + constants), which matches litgpt's 1.56× (7B) slow-down at mb1.
* A 4-bit base whose ``bnb_4bit_compute_dtype`` is float32 (transformers' ``BitsAndBytesConfig``
  default, ``src/transformers/utils/quantization_config.py``) while the run computes in 16 bits:
  bitsandbytes dequantizes to float32 and multiplies in float32 (``bitsandbytes/nn/modules.py``
  ``Linear4bit.forward`` casts the input to ``compute_dtype``), so the quantized linears' share of
  the FLOPs (``2·block_linear_params`` of ``F``) runs at ``quant_matmul_tflops`` (the GPU's
  float32 rate, :meth:`lintlora.estimate.gpus.Gpu.training_tflops`: half the 16-bit tensor
  rate, the TF32 figure, a lower bound: PyTorch leaves TF32 matmuls off by default since 1.12,
  ``torch.backends.cuda.matmul.allow_tf32 = False``), and the dequantized copy is 4 B a weight:
  ``10 B`` per weight and pass (0.5 B packed + write and read 4 B + constants).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.memory import EstimateInputs

__all__ = ["TimeEstimate", "estimate_time", "mfu_assumption"]


@dataclass(frozen=True)
class TimeEstimate:
    """Training time.

    Attributes:
        flops_per_token: training FLOPs per token (forward + backward [+ recompute]).
        step_seconds: seconds per optimizer micro-batch (one forward + backward).
        tokens_per_second: throughput.
        total_seconds: time for ``tokens`` tokens, or ``None`` when the size is unknown.
        tokens: the training tokens used, when known.
        mfu: the efficiency assumed; ``tflops``: the GPU peak used (TFLOP/s).
        assumptions: sentences stating them.
    """

    flops_per_token: float
    step_seconds: float
    tokens_per_second: float
    total_seconds: float | None
    tokens: int | None
    mfu: float
    tflops: float
    assumptions: list[str]


def mfu_assumption(tokens_per_microbatch: int) -> float:
    """MFU assumed for a micro-batch of this many tokens (0.30 at 1k, 0.50 at 8k, clamped)."""
    t = max(1, tokens_per_microbatch)
    x = (math.log2(t) - 10) / 3  # 0 at 1024, 1 at 8192
    return round(0.30 + 0.20 * min(1.0, max(0.0, x)), 3)


def estimate_time(inputs: EstimateInputs, arch: Architecture, tflops: float | None,
                  bandwidth_gbps: float | None = None, tokens: int | None = None, *,
                  quant_matmul_tflops: float | None = None) -> TimeEstimate | None:
    """Time per micro-batch and for ``tokens`` training tokens on a GPU with ``tflops`` peak.

    ``quant_matmul_tflops``: the rate of the quantized linears' matmuls when it differs from
    ``tflops`` (a float32 ``bnb_4bit_compute_dtype`` under 16-bit training, see the module
    docstring); ``None``: the same rate. Returns ``None`` when the GPU's TFLOP/s is unknown.
    """
    if not tflops:
        return None
    L, s, qw = arch.num_hidden_layers, inputs.seq_len, arch.q_width
    # parameters a token's forward reads: routed experts at k/E, dense blocks of MoE models and
    # shared experts in full, frozen towers (Llama-4's vision) not at all
    n_active = arch.active_params
    attn = (4 if inputs.attn_implementation == "eager" else 2) * L * s * qw
    f = 2 * n_active + attn
    mult = 3 if inputs.method == "full" else 2
    if inputs.gradient_checkpointing:
        mult += 1
    flops_tok = mult * f
    mfu = mfu_assumption(inputs.tokens)
    slow_q = bool(inputs.quant and quant_matmul_tflops and quant_matmul_tflops != tflops)
    if slow_q:
        f_q = min(f, 2 * arch.block_linear_params)
        compute_s = inputs.tokens * mult * ((f - f_q) / (tflops * 1e12 * mfu)
                                            + f_q / (quant_matmul_tflops * 1e12 * mfu))
    else:
        compute_s = inputs.tokens * flops_tok / (tflops * 1e12 * mfu)
    dq = 0.0
    notes = [f"{mult}×forward FLOPs per token ({'full fine-tuning' if inputs.method == 'full' else 'no frozen-weight gradients'}"
             f"{', + recomputation' if inputs.gradient_checkpointing else ''}); MFU {mfu:.2f} assumed at "
             f"{inputs.tokens:,} tokens per micro-batch on {tflops:g} TFLOP/s peak"]
    if slow_q:
        notes.append(f"4-bit matmuls in float32 (bnb_4bit_compute_dtype): the quantized linears' FLOPs at "
                     f"{quant_matmul_tflops:g} TFLOP/s")
    if inputs.quant and bandwidth_gbps:
        passes = 3 if inputs.gradient_checkpointing else 2
        per_weight = 10 if slow_q else 6
        dq = passes * per_weight * arch.block_linear_params / (bandwidth_gbps * 1e9)
        notes.append(f"QLoRA dequantization: {passes} passes × {per_weight} B × {arch.block_linear_params:,} weights "
                     f"at {bandwidth_gbps:g} GB/s = {dq * 1000:.0f} ms per micro-batch")
    step = compute_s + dq
    tps = inputs.tokens / step if step else 0.0
    total = tokens / tps if tokens and tps else None
    if tokens:
        notes.append(f"{tokens:,} training tokens")
    return TimeEstimate(flops_tok, step, tps, total, tokens, mfu, tflops, notes)
