"""Framework knobs that change the memory of a training step: ``torch.compile`` of the decoder
layers and the optimizer stepping inside backward. Pure functions of the architecture and a few
numbers (no import of :mod:`.memory`, which calls them).

Activation offloading (torchtune ``enable_activation_offloading``, Unsloth's offloaded
checkpointing) is priced in :func:`lintlora.estimate.memory.estimate_memory` itself: the saved
tensors are on the CPU, the layer whose backward runs is brought back.
"""

from __future__ import annotations

from typing import Any

from lintlora.estimate.architecture import Architecture

__all__ = ["compiled_parts", "optimizer_in_backward", "COMPILE_SOURCE"]

COMPILE_SOURCE = ("measured by bench/compile_saved_tensors.py (torch 2.13.0 CPU, Inductor, a torchtune-style "
                  "bf16 decoder layer): compiled saves 2·h less per RMSNorm (bf16 input instead of the fp32 "
                  "up-cast), 2·I less in SwiGLU (silu recomputed), and for full fine-tuning another 2·h per "
                  "norm (the norm output recomputed for the weight gradients)")


def compiled_parts(parts: dict[str, float], arch: Architecture, *, c: int, sb: int, full: bool,
                   norm_bytes: float, gated: bool, mlp_bytes: float, experts: int) -> dict[str, float]:
    """The per-token, per-layer activation parts (bytes) of a decoder layer compiled with
    ``torch.compile`` (torchtune ``compile: True`` compiles each ``TransformerSelfAttentionLayer``
    on its own, ``torchtune/training/_compile.py`` ``compile_model``).

    Mechanism: AOTAutograd's ``min_cut_rematerialization_partition``
    (``torch/_functorch/partitioners.py``, Inductor's default) saves the smallest set of
    tensors from which backward can recompute cheap pointwise ops; reductions are not
    recomputed (``ban_recompute_reductions``), so RMSNorm's per-token ``rsqrt`` is saved (4 B
    per token, negligible). Measured with ``bench/compile_saved_tensors.py`` (torch 2.13.0 CPU,
    h = 256, I = 688, 512 tokens; the layer input excluded from both counts, see its docstring):

    * frozen weights (LoRA): eager 8,264, compiled 5,352 B per token: 2,912 = 6·h + 2·I, of which
      2·h is the layer input the compiled layer saves itself (the eager one saves its fp32 copy),
      so ``4·h + 2·I`` per layer in a stack: per RMSNorm ``(norm_bytes - c)·h`` (the fp32
      up-cast is recomputed from the 16-bit input) and ``c·I`` in SwiGLU (``silu(gate)`` is
      recomputed from the saved gate output);
    * full fine-tuning: eager 11,688, compiled 7,752 B per token: 1,024 = ``2·c·h`` more, ``c·h``
      per norm (the normalised output, which the next linears' weight gradients need, is
      recomputed from the saved input and ``rsqrt``).

    Not changed: attention (SDPA keeps q, k, v, the output and the log-sum-exp either way), the
    LoRA inputs, the linears' saved inputs other than the norm outputs, a plain GELU MLP (its
    input is what either keeps), fused kernels (Liger/Unsloth already keep 16-bit norm inputs and
    two SwiGLU tensors: ``norm_bytes`` 2 and ``mlp_bytes`` 4 leave nothing to remove). The loss is
    left as it is (torchtune also compiles the loss; not measured here).
    """
    out = dict(parts)
    npl = arch.norms_per_layer
    h = arch.hidden_size
    cut_norm = npl * h * max(0.0, norm_bytes - c)
    if full:
        cut_norm += npl * h * c
    out["norms"] = max(0.0, out.get("norms", 0.0) - cut_norm)
    if gated and mlp_bytes > 2 * c:
        # eager SwiGLU keeps gate output, silu output and up output (3·c·I); compiled keeps two
        cut_mlp = (mlp_bytes - 2 * c) * arch.intermediate_size * experts * (sb / c)
        out["mlp"] = max(0.0, out.get("mlp", 0.0) - cut_mlp)
    return out


def optimizer_in_backward(arch: Architecture, trainable: Any, param_bytes: float, *,
                          full: bool) -> tuple[float, float, str]:
    """Bytes alive for the optimizer steps inside backward: ``(per layer, output layer, note)``.

    torchtune ``optimizer_in_bwd: True`` (``recipes/full_finetune_single_device.py``;
    ``torchtune/training/memory.py`` ``register_optim_in_bwd_hooks``) registers
    ``p.register_post_accumulate_grad_hook(optim_step)`` on every trainable parameter, and
    ``optim_step`` calls ``optim_dict[param].step()`` then ``zero_grad()`` (``set_to_none``, torch
    ``Optimizer.zero_grad`` default since 2.0): each gradient is freed as soon as it has been
    used, so no full set of gradients ever exists and there is no separate optimizer-step moment.
    What is alive at one step: the gradient and the step's temporary (AdamW on one tensor,
    ``torch/optim/adamw.py``: ``exp_avg_sq.sqrt()`` is one parameter-sized buffer), so
    ``2 × parameter × param_bytes``; the optimizer states are unchanged.

    * per layer: during a decoder layer's backward, its largest weight is stepped;
    * output layer (``V × h``): an untied one is stepped as soon as the loss's backward has
      reached it, while every layer's saved activations are alive; a tied embedding is stepped
      last (autograd sums both uses before its ``AccumulateGrad`` runs), when they are freed.
      The caller adds that moment (:func:`lintlora.estimate.memory.estimate_memory`).
    """
    h = arch.hidden_size
    head = 0
    if full:
        block = max(sh.d_in * sh.d_out for sh in arch.block_linears())
        head = arch.vocab_size * h
    else:
        # one copy's LoRA A + B (an upper bound on its larger matrix); a modules_to_save copy of
        # the embedding or output layer counts as the output layer
        block = max([0] + [m.params // max(1, m.copies) for m in trainable.adapted] if trainable is not None else [0])
        if trainable is not None and trainable.saved:
            head = max(m.d_in * m.d_out for m in trainable.saved)
    b_block, b_head = 2 * block * param_bytes, 2 * head * param_bytes
    return float(b_block), float(b_head), (
        f"optimizer in backward: each gradient stepped and freed as it is accumulated "
        f"(register_post_accumulate_grad_hook): no gradient buffers; one gradient and its step's temporary at a time "
        f"({b_block / 2**30:.2f} GiB for a layer's largest weight, {b_head / 2**30:.2f} GiB for the output layer)")
