"""Framework profiles: what differs between the stacks that run a LoRA/QLoRA job.

Each constant cites where it was read or measured. Byte counts are per element unless noted.
"Measured" means ``bench/saved_tensors.py`` on tiny random models (torch 2.13, transformers
5.24, peft 0.21.2, bitsandbytes 0.50.2's CPU backend for the NF4 variants, CPU autocast bf16,
dropout through the fused kernel CUDA uses), which pins the HF transformers + peft activation
terms, LoRA and QLoRA with and without ``prepare_model_for_kbit_training``, to within 3%.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Profile", "get_profile", "PROFILES", "LOSS_K"]


# Bytes held per (token × vocab entry) at the loss peak, by loss implementation.
LOSS_K: dict[str, float] = {
    # transformers >= 4.46 ForCausalLMLoss (src/transformers/loss/loss_utils.py): bf16 logits
    # (2) up-cast to fp32 (4), log_softmax output kept for backward (4); in backward the nll
    # gradient (4) and the log_softmax input gradient (4) coexist with the saved output:
    # 4 + 4 + 4 = 12 at the start of backward (estimator-notes §2.2: 10-12).
    "hf": 12.0,
    # transformers < 4.46 (LlamaForCausalLM.forward): fp32 logits returned (4) plus a
    # .contiguous() fp32 shifted copy (4) and the log_softmax output (4), bf16 logits (2):
    # 14-16 (estimator-notes §2.2). 16: the top of that range, not fitted (no row isolates it).
    "hf-legacy": 16.0,
    # a model's own loss on bf16 logits with a shifted .contiguous() copy and no fp32 up-cast
    # (Qwen-1 remote code modeling_qwen.py; torchtune 2024 recipes): logits 2 + shifted copy
    # 2 + log_softmax output 2 + backward gradients 2 + 2 = 10 (notes: Qwen k ≈ 9-10).
    # *fitted* in part: the count is the mechanism, the value matches the notes' reading of the
    # QwenLM/Qwen README rows (tests/data/measured_peaks.csv rows 105-164, their sequence-length
    # scaling); `bench/accuracy.py --holdout` refits it on half of the rows that use it and
    # scores the other half. Measurable on the CPU (saved-tensor hooks on a Qwen-1-style head).
    "bf16-own": 10.0,
    # chunked CE: litgpt lm_head_chunk_size=128 + chunked_cross_entropy keeps all bf16 logit
    # chunks (2) and each chunk's log_softmax output (2) plus one chunk's gradients;
    # torchtune CEWithChunkedOutputLoss up-casts one chunk at a time (notes §2.2: 2-3, the
    # Llama-3.2-3B ladder: chunking saved 8.3 B per token·vocab against "hf").
    # litgpt's loss is not priced from this constant: Fabric casts its logits to fp32
    # (lintlora.estimate.litgpt_terms, measured by bench/litgpt_fabric_step.py; with bf16
    # logits its terms are this 4 plus the chunk gradients); torchtune's is *fitted* to the ladder rows 96 and 98 (the 8.3 B
    # saving): `bench/accuracy.py --holdout` checks it on held-out rows.
    "chunked": 4.0,
    # fused linear + cross-entropy kernels (Liger, Apple Cut Cross-Entropy in Unsloth and
    # axolotl): logits never materialised in full (notes §2.2: 0-0.5). torchtune's
    # LinearCrossEntropyLoss is not one: it loops over chunks in eager PyTorch and keeps each
    # chunk's fp32 log-softmax output, like "chunked". 0.5: the top of the notes' range, not
    # fitted (only bound rows, the Unsloth context table, use it).
    "fused": 0.5,
    # trl's preference/RL trainers on 16-bit logits (trl/trainer/utils.py selective_log_softmax
    # @ f2cd57710ae3: one row's log_softmax at a time, each row's output saved for backward):
    # logits 2 + saved log_softmax rows 2 + the logits gradient 2 at the start of backward = 6
    # (lintlora.estimate.trainers; the reference logits are lintlora.estimate.rl's)
    "trl-logps": 6.0,
    # a sequence-classification head (reward models: hidden × 1): no vocabulary logits
    "none": 0.0,
}


@dataclass(frozen=True)
class Profile:
    """Per-framework constants of the memory model.

    Attributes:
        name: framework key (``transformers``, ``trl``, ``torchtune``, ``litgpt``, ``unsloth``,
            ``axolotl``, ``llama-factory``, ``torch``).
        adapter_bytes: bytes per LoRA parameter (and its gradient). peft keeps adapters in
            fp32 over a bf16/fp16 base (``autocast_adapter_dtype=True``, peft >= 0.12,
            ``tuners_utils.py``): 4. torchtune and litgpt train everything in bf16: 2.
        norm_bytes: bytes per hidden element each norm saves for backward. HF RMSNorm up-casts
            and keeps its fp32 input (4, measured); LayerNorm under autocast runs in fp32 (4);
            litgpt's LayerNorm under bf16-true keeps bf16 (2); fused norms (Unsloth, Liger): 2.
        gqa_native: K/V saved at KV width (SDPA ``enable_gqa`` in transformers 5.x, measured;
            FlashAttention-2). ``False``: K/V expanded to all heads before the kernel
            (``repeat_kv`` in older HF SDPA, torchtune ``expand``, litgpt ``expand``).
        lora_in_bytes_p0: bytes per ``d_in`` an adapted module keeps with dropout 0: peft under
            autocast keeps its own cast copy of the input per module (2, measured: not shared;
            peft's bitsandbytes layers skip the cast under autocast and share a 16-bit input,
            see ``memory.activation_breakdown``); torchtune/litgpt keep the shared input (2 per
            distinct input).
        lora_in_bytes_dropout: same with dropout > 0, on CUDA: the bool mask of the fused
            dropout kernel (1; ``at::native_dropout``, chosen by ``is_fused_kernel_acceptable``
            in aten ``native/Dropout.cpp`` for CUDA inputs only) plus the 16-bit input the
            adapter's first matmul keeps (2; for peft the autocast copy of the fp32-cast input):
            3 for every profile. On the CPU, dropout multiplies by a float noise tensor of the
            input's dtype instead (fp32 after peft's cast: 4 + 2 = 6, which is what a CPU
            measurement sees; ``bench/saved_tensors.py`` runs the CUDA kernel's path).
        lora_shared_input: adapters reading the same tensor share one saved input (p = 0).
        fused_qkv_dropout: one dropout for all q/k/v adapters (litgpt ``LoRAQKVLinear``).
        mlp_gated_bytes / mlp_plain_bytes: bytes per intermediate element the MLP keeps:
            SwiGLU/GeGLU keep gate output, activation output and up output (6, measured);
            a plain GELU MLP keeps the GELU input (2).
        loss: default loss implementation (key of :data:`LOSS_K`).
        quantize_lm_head: 4-bit quantization also converts the output layer (litgpt's bnb
            plugin converts every nn.Linear; HF keeps lm_head in 16 bits by default,
            ``llm_int8_skip_modules``/``_keep_in_fp32_modules``).
        quantize_scope: ``"all-linear"`` (bitsandbytes through HF/litgpt) or ``"adapted"``
            (torchtune QLoRA builders quantize only LoRA-wrapped linears, ``quantize_base``).
        optimizer_state_follows_param: torch AdamW allocates states ``zeros_like(param)``
            (torch/optim/adamw.py), so bf16 params get bf16 states.
        offload_checkpoints: checkpointed layer inputs go to CPU RAM (Unsloth
            ``use_gradient_checkpointing="unsloth"``).
        framework_bytes: allocated bytes outside the components (RoPE caches, cuBLAS
            workspaces, buffers). *Fitted*, not computed: litgpt 0 read off its Oct-2023
            table (rows of the resource tables in tests/data/measured_peaks.csv: mb1 and mb2
            differ by exactly one micro-batch of activations); HF 300 MB, the notes' §3 figure
            (~0.3 GB); torchtune 100 MB, a value with no recorded derivation (set with the
            profiles in 2187a0d, kept as the torchtune rows 83, 87 and 90 came out).
            ``bench/accuracy.py --holdout`` refits each on half its rows and scores the other
            half; it could be measured on a GPU instead (``memory_allocated()`` after a step
            minus the counted parts).
        reserved_ratio: ``max_memory_reserved / max_memory_allocated`` (caching-allocator
            slack; notes §3: 1.05-1.15). *Fitted*: 1.08 is a value chosen in that range, no
            derivation recorded, kept as the rows whose counter is reserved or device came out
            (torchtune 83 and 87; the QwenLM/Qwen rows 105-164, counter unstated, read as
            device); ``bench/accuracy.py --holdout`` refits it on half the rows. GPU-only to
            measure (the caching allocator has no CPU analogue).
        cuda_context_bytes: CUDA context + kernels outside PyTorch's pool, added for what
            nvidia-smi shows (gpu_poor's flat 650 MB; notes §3: 0.3-0.8 GB). Measured figures
            depend on the CUDA version far more than on the GPU generation: with lazy module
            loading (CUDA >= 11.7, default in PyTorch >= 1.13, pytorch/pytorch#86509) one small
            op leaves 287 MB vs 667 MB without it (same PR); "around 400 MB" with CUDA >= 11.7
            (pytorch/pytorch#109888), ">1000 MB" before 11.7 (pytorch/pytorch#107667); 426 MiB
            on an RTX 6000 Ada with torch 2.10 + CUDA 13 (unslothai/unsloth-zoo#1053). A
            training step loads more kernels (cuBLAS/cuBLASLt, attention, bitsandbytes) than
            those probes, hence 650 MB; cuBLAS workspaces come from PyTorch's allocator and are
            inside ``framework_bytes``, not here.
        activation_factor: multiplier on the analytic activation term, for effects the
            component list leaves out; 1.0 (not fitted) in every profile: the terms are measured
            on the CPU (bench/saved_tensors.py, bench/litgpt_memory.py), and
            ``bench/accuracy.py --holdout`` shows what a fitted factor would buy on held-out rows.
        layernorm_bytes: bytes per hidden element a LayerNorm saves when it differs from
            ``norm_bytes`` (``None``: ``norm_bytes``). litgpt under ``bf16-true`` runs
            ``torch.nn.LayerNorm`` on the bf16 stream and keeps its bf16 input (2, measured by
            ``bench/litgpt_memory.py``: phi-2 644 B per token for h = 320), while its RMSNorm
            up-casts and keeps fp32 (4).
        ties_embeddings: the framework shares the embedding with the output layer when the
            model does (``tie_word_embeddings``). litgpt 0.4.13 never does: ``GPT.__init__``
            builds ``lm_head`` (``nn.Linear``) and ``transformer.wte`` (``nn.Embedding``) as two
            parameters (litgpt/model.py) and ``convert_hf_checkpoint.py`` copies the embedding
            into ``lm_head.weight`` for tied checkpoints (Gemma, Llama 3.2, Falcon), so the
            output layer is a second V × h matrix (measured: ``wte`` and ``lm_head`` do not
            share storage).
        loss_chunk_tokens: litgpt's ``lm_head_chunk_size`` (128 in litgpt/finetune/lora.py
            ``fit()``): the logits come as ``ceil(s / 128)`` chunks along the sequence and
            ``chunked_cross_entropy`` computes one loss per chunk. Autograd runs every chunk's
            nll-loss and log-softmax backward before any output-layer matmul backward (higher
            sequence numbers first), so while the loss's backward runs the kept logits (2 B),
            the saved log-softmax outputs and the logit gradients replacing them (2 B together)
            and one chunk's two fresh gradients (4 B per token of the chunk; the largest
            chunk has ``min(s, 128)`` tokens, since ``split`` leaves the remainder last) are
            alive: ``LOSS_K["chunked"] + 4 · min(s, 128) / s`` bytes per token and vocabulary
            entry (measured: 4.98-5.00 at s = 512, n = 4; 5.97 at s = 256, n = 2). Counting the
            largest chunk rather than ``s / n`` tokens keeps the peak from falling when s
            passes a multiple of 128 (s = 128 to 129 dropped it by 2 MB). 0: no such term.
            (Measured calling the model directly, bf16 logits; litgpt's Fabric hands the loss
            fp32 logits: see ``output_cast_bytes``.)
        dequant_bytes: bytes per element of the weight a 4-bit matmul dequantizes (forward and
            backward, one weight at a time): ``None`` = the compute dtype's. Lightning's
            ``BitsandbytesPrecision`` (lightning 2.4, the release litgpt 0.4.13 pins) quantizes
            ``weight.to(dtype=torch.half)``, so ``dequantize_4bit`` returns fp16 and
            bitsandbytes 0.42.0 ``MatMul4Bit`` casts it to the bf16 compute dtype
            (``F.dequantize_4bit(B, ctx.state).to(grad_output.dtype)``): 2 + 2 = 4. With
            ``quantize_lm_head`` the largest such weight is the V × h output layer, whose
            backward runs while every layer's activations, the kept logits and their gradients
            are alive.
        output_cast_bytes: bytes per element of the logits as the framework's wrapper hands them
            to the loss, when it casts the model's outputs (0: no cast, the compute dtype's).
            litgpt calls the model through Lightning Fabric, whose precision plugins convert
            every floating-point output to ``torch.get_default_dtype()``: float32, 4
            (``convert_output``, lightning/fabric/plugins/precision/half.py and bitsandbytes.py,
            lightning 2.1.0-2.4.0; measured by ``bench/litgpt_fabric_step.py``). The chunked
            loss's terms are then :mod:`lintlora.estimate.litgpt_terms`'s (with
            ``loss_chunk_tokens``: the bf16 figures above become 8 + 8 · min(s, 128) / s).
    """

    name: str
    adapter_bytes: int = 4
    norm_bytes: int = 4
    gqa_native: bool = True
    lora_in_bytes_p0: float = 2.0
    lora_in_bytes_dropout: float = 3.0
    lora_shared_input: bool = False
    fused_qkv_dropout: bool = False
    mlp_gated_bytes: float = 6.0
    mlp_plain_bytes: float = 2.0
    loss: str = "hf"
    quantize_lm_head: bool = False
    quantize_scope: str = "all-linear"
    optimizer_state_follows_param: bool = True
    offload_checkpoints: bool = False
    framework_bytes: int = 300 * 10**6
    reserved_ratio: float = 1.08
    cuda_context_bytes: int = 650 * 10**6
    activation_factor: float = 1.0
    layernorm_bytes: int | None = None
    ties_embeddings: bool = True
    loss_chunk_tokens: int = 0
    dequant_bytes: int | None = None
    output_cast_bytes: int = 0


_HF = Profile(name="transformers")

PROFILES: dict[str, Profile] = {
    "transformers": _HF,
    "trl": replace(_HF, name="trl"),
    "torch": replace(_HF, name="torch"),
    "axolotl": replace(_HF, name="axolotl"),
    "llama-factory": replace(_HF, name="llama-factory"),
    # Unsloth: fused RMSNorm/RoPE/SwiGLU and LoRA kernels (unsloth/kernels/*.py keep the
    # inputs they need in bf16), Apple CCE (fused loss), offloaded "unsloth" checkpointing.
    "unsloth": replace(_HF, name="unsloth", norm_bytes=2, lora_shared_input=True,
                       lora_in_bytes_dropout=3.0, mlp_gated_bytes=4.0, loss="fused"),
    # torchtune: bf16 everywhere (recipes set dtype: bf16; LoRA params and AdamW states bf16,
    # docs/source/tutorials/memory_optimizations.rst); RMSNorm keeps its fp32 input
    # (torchtune/modules/rms_norm.py); GQA K/V expanded before SDPA
    # (torchtune/modules/attention.py, 2024); LoRALinear: out + lora_b(lora_a(dropout(x)))
    # (torchtune/modules/peft/lora.py).
    "torchtune": replace(_HF, name="torchtune", adapter_bytes=2, gqa_native=False,
                         lora_shared_input=True, lora_in_bytes_dropout=3.0, loss="bf16-own",
                         quantize_scope="adapted", framework_bytes=100 * 10**6),
    # litgpt: bf16-true params, adapters and AdamW states (litgpt/finetune/lora.py);
    # LoRAQKVLinear applies one dropout for q/k/v (litgpt/lora.py); chunked lm_head + CE;
    # K/V expanded for GQA (litgpt/model.py CausalSelfAttention). The per-layer terms only
    # litgpt has (LoRAQKVLinear's zero padding, MHA's v view, Gemma-2's eager attention) are
    # in memory.activation_breakdown; all measured with litgpt 0.4.13 by bench/litgpt_memory.py.
    # Fabric hands the logits to the loss in float32 (output_cast_bytes; litgpt_terms, measured by
    # bench/litgpt_fabric_step.py).
    "litgpt": replace(_HF, name="litgpt", adapter_bytes=2, norm_bytes=4, gqa_native=False,
                      lora_shared_input=True, lora_in_bytes_dropout=3.0, fused_qkv_dropout=True,
                      loss="chunked", quantize_lm_head=True, framework_bytes=0,
                      layernorm_bytes=2, ties_embeddings=False, loss_chunk_tokens=128, dequant_bytes=4,
                      output_cast_bytes=4),
}


def get_profile(framework: str | None) -> Profile:
    """The profile for a framework name (unknown or ``None``: the HF transformers profile)."""
    return PROFILES.get((framework or "transformers").lower(), _HF)
