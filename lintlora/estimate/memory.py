"""The component model of peak GPU memory for LoRA / QLoRA / full fine-tuning.

``estimate_memory(inputs, arch, profile)`` is a pure function. Formulas follow
``estimator-notes.md`` §2-3 (Korthikanti et al. 2022 for the activation bookkeeping, adapted to
frozen-base LoRA), with the HF transformers + peft terms measured by ``bench/saved_tensors.py``.

The peak (what ``torch.cuda.max_memory_allocated`` reports) is the maximum over the moments
of a step, each counted with every buffer alive at that moment:

* without checkpointing, (a) the start of backward: every layer's saved activations plus the
  loss buffers (logits, their fp32 copy, log-softmax output and its gradient), and (b) the top
  layer's backward: the saved activations plus that layer's backward temporaries (the loss
  buffers freed);
* with checkpointing, (a) the checkpointed layer inputs plus the loss buffers and (b) the layer
  inputs plus one layer recomputed during its backward, with its backward temporaries;
* the optimizer step: activations freed, all trainable gradients plus the step's temporaries
  (this is where full fine-tuning usually peaks);
* for quantized bases also the load phase (weights quantized one tensor at a time; torchao < 0.2
  with a large transient per tensor): the caching allocator keeps what it reserved then, so
  ``P = max(P_load, P_train)``.

Each moment's total is non-decreasing in the tokens per micro-batch and in the per-token
activation bytes, so the peak is too; and with checkpointing each moment holds no more than
its counterpart without (the ``L`` checkpointed inputs plus one recomputed layer are less than
``L`` layers' activations for ``L >= 2``), so turning checkpointing on never raises the peak.

The breakdown lists the components at that moment and adds up exactly:

``allocated = weights + adapter_weights + gradients + optimizer_states + activations + logits
+ transient + framework``; ``reserved = allocated + allocator_slack``; ``device = reserved +
cuda_context`` (what nvidia-smi shows and what must fit on the card).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.params import AdaptedModule, TrainableCount, count_trainable
from lintlora.estimate.paged import is_paged, paged_state_elements
from lintlora.estimate.profiles import LOSS_K, Profile, get_profile
from lintlora.estimate.rl import extra_phases, loss_tokens, value_model_bytes, vllm_reserved_bytes
from lintlora.estimate.sharding import describe as describe_sharding, is_sharded, shard_terms

__all__ = [
    "EstimateInputs",
    "MemoryEstimate",
    "ActivationTerms",
    "activation_breakdown",
    "residual_stream_bytes",
    "estimate_memory",
    "optimizer_bytes_per_param",
    "KNOWN_OPTIMIZERS",
    "DTYPE_BYTES",
]

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}
"""Bytes per element of the dtypes the estimator handles."""

# bitsandbytes 4-bit storage (bitsandbytes/functional.py quantize_4bit, blocksize 64): 4 bits
# per weight plus one fp32 absmax per 64-block = 0.5 + 4/64 bytes; with double quantization the
# absmax values are 8-bit with an fp32 scale per 256 blocks = 0.5 + 1/64 + 4/(64*256)
# (Dettmers et al. 2023, QLoRA §3: 0.127 bit per parameter for the constants).
NF4_BYTES = 0.5 + 4 / 64
NF4_DQ_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)
# LLM.int8 (bitsandbytes Linear8bitLt): 1 byte per weight + an fp32 scale per output row.
INT8_BYTES = 1.0
# GPTQ 4-bit, group size 128 (AutoGPTQ QuantLinear): 4-bit weights, fp16 scale and 4-bit zero
# per group of 128 inputs: 0.5 + (2 + 0.5)/128 bytes.
GPTQ4_BYTES = 0.5 + 2.5 / 128
# torchao NF4 (torchtune QLoRA, block 64, scalers double-quantized per 256 blocks).
TORCHAO_NF4_BYTES = NF4_DQ_BYTES
# Load-phase transient of torchao < 0.2 NF4 quantization, bytes per element of the weight being
# quantized. Mechanism: ``NF4Tensor.quantize_tensor_nearest`` (torchao/dtypes/nf4tensor.py before
# pytorch/ao PR #196, 2024-05-01) computed ``(value.unsqueeze(-1) - nf4).abs()`` on the whole
# weight: two ``numel × 16`` bf16 tensors alive at once = 64 B per element, plus the bf16 scaled
# blocks. Measured in pytorch/ao PR #315 (2024-06-04): ``to_nf4`` of a 4096 × 128256 weight
# raised peak allocated from 2.10 GB to 37.87 GB, i.e. 35.76e9 / 525,336,576 = 68.1 B per element.
# Since PR #196 the work is done in chunks of 1024**2 elements (a few tens of MB).
TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT = 68.0
TORCHAO_CHUNK_ELEMENTS = 1024**2


@dataclass(frozen=True)
class EstimateInputs:
    """Everything the memory model needs besides the architecture and profile.

    Attributes:
        method: ``"lora"``, ``"qlora"`` (LoRA on a quantized base), ``"full"``, or ``"load"``
            (no training: the memory to load the model, for files that do not train).
        batch_size: micro-batch per device (sequences).
        seq_len: tokens per sequence (padded length, or the packing length).
        gradient_checkpointing: activation checkpointing per decoder layer.
        quant: ``None``, ``"nf4"``, ``"fp4"``, ``"int8"``, ``"gptq4"``, ``"torchao-nf4"``, or a
            checkpoint stored quantized: ``"gptq"``, ``"awq"``, ``"mxfp4"``, ``"fp8"`` (with
            ``stored_quant``).
        stored_quant: how the checkpoint is stored (a
            :class:`lintlora.estimate.stored_quant.StoredQuant`: GPTQ/AWQ bits and group size,
            bitsandbytes as stored, MXFP4, FP8, dequantized or not), priced as stored by
            :func:`lintlora.estimate.stored_quant.stored_weight_bytes`; ``None`` otherwise.
        double_quant: bitsandbytes ``bnb_4bit_use_double_quant``.
        quant_compute_dtype: ``bnb_4bit_compute_dtype`` (``None``: same as ``compute_dtype``).
        weight_dtype: dtype of the unquantized weights (``torch_dtype``).
        compute_dtype: dtype of activations (bf16/fp16 AMP, ``bnb_4bit_compute_dtype``).
        lora_r, lora_dropout, target_modules, modules_to_save, use_dora: the adapter.
        target_parameters: peft's ``target_parameters`` (parameter names: the fused experts
            of gpt-oss/Llama-4; :func:`lintlora.estimate.params.count_trainable`).
        optim: TrainingArguments ``optim`` name (or a torch/bnb optimizer class name).
        attn_implementation: ``"sdpa"``, ``"flash_attention_2"``, ``"eager"``.
        kbit_upcast: ``prepare_model_for_kbit_training`` ran on a bitsandbytes 4/8-bit model:
            every fp16/bf16 parameter left (embeddings, norms, lm_head) is cast to fp32 (peft
            ``src/peft/utils/other.py``, "cast all non INT8 parameters to fp32"; GPTQ/AQLM/EETQ/HQQ
            models are skipped). The fp32 embedding makes the residual stream fp32, and
            bitsandbytes ``Linear4bit.forward`` casts its output back to its input's dtype
            (``out = out.to(inp_dtype)``, bitsandbytes ``nn/modules.py``), so MLP intermediates
            and checkpointed layer inputs are fp32 too (see :func:`activation_breakdown`).
        liger: ``use_liger_kernel`` (fused RMSNorm, SwiGLU and linear + cross-entropy).
        loss_impl: key of ``profiles.LOSS_K``; ``None`` = the profile's default.
        master_fp32: trainable parameters kept in fp32 with AMP (litgpt ``bf16-mixed``,
            fp16 AMP with fp32 weights); for full fine-tuning also fp32 weights.
        framework: the profile name these inputs were built for.
        checkpoint_offload: checkpointed layer inputs offloaded to CPU (Unsloth
            ``use_gradient_checkpointing="unsloth"``, axolotl ``gradient_checkpointing: offload``,
            LLaMA-Factory ``use_unsloth_gc``).
        bnb_saves_input: bitsandbytes < 0.43.2: ``MatMul4Bit.forward`` kept its input ``A``
            for backward (``ctx.tensors = (A, B)``) although no weight gradient is computed;
            bitsandbytes PR #1270 (merged 2024-07-16, released in 0.43.2, CHANGELOG "QLoRA bug
            fix") saves ``(None, B)``. ``False`` = a current bitsandbytes.
        torchao_unchunked: torchao < 0.2 (before pytorch/ao PR #196, 2024-05-01) quantized a
            weight to NF4 in one piece; ``quantize_tensor_nearest`` then held two
            ``numel × 16`` bf16 difference tensors (load-phase transient, see
            :data:`TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT`).
        num_gpus: data-parallel ranks. Alone (no ``zero_stage``/``fsdp``): DDP replicas, each
            holding everything plus the gradient buckets; the per-rank terms are
            :func:`lintlora.estimate.sharding.shard_terms`'s.
        zero_stage: DeepSpeed ZeRO stage 0-3 (``zero_optimization.stage``).
        fsdp: FSDP ``ShardingStrategy`` (``"full_shard"``, ``"shard_grad_op"``,
            ``"hybrid_shard"``, ``"no_shard"``) or ``None``; ``fsdp_version`` 1 (flat parameters)
            or 2 (``fully_shard``, per-parameter).
        offload_optimizer, offload_param: DeepSpeed ``offload_optimizer``/``offload_param``
            ``device: cpu`` (FSDP: ``CPUOffload(offload_params=True)``): moved to host RAM
            (:attr:`MemoryEstimate.host_offload_bytes`).
        gradient_accumulation_steps: micro-batches per optimizer step (FSDP1 ``no_sync``
            accumulates unsharded gradients).
        reduce_bucket_size, prefetch_bucket_size, overlap_comm: DeepSpeed ZeRO settings
            (``reduce_bucket_size``, ``stage3_prefetch_bucket_size``, elements; ``None``:
            DeepSpeed's defaults).
        quant_storage: ``bnb_4bit_quant_storage`` (FSDP/ZeRO-3 shard 4-bit weights only when it
            is the model's dtype).
        previous_batch_ratio: tokens of the micro-batch run just before the peak one, over the
            peak one's. 1.0: the steady state this estimate prices (micro-batches reaching
            ``seq_len`` one after another: truncated or packed data). It matters where the
            training loop keeps the previous step's outputs and loss bound into the next
            forward (litgpt ``fit()``, :mod:`lintlora.estimate.litgpt_terms`). 0.0: the longest
            micro-batch is the first step and the others are much shorter (lit-gpt's 2023
            scripts forced the longest sample into the first micro-batch, ``get_batch(...,
            longest_seq_ix if iter_num == 0 else None)``, finetune/lora.py at 8641822).
        sequences_per_example: sequences one example puts through the model per step: 2 for
            trl's DPO/ORPO/CPO trainers (chosen and rejected concatenated along the batch).
        reference_model: a frozen second copy of the weights is resident (trl DPO/KTO without
            peft and without ``precompute_ref_log_probs``); its no-grad forward runs before the
            policy's and frees its activations, so only its weights are counted.
        optimizer_in_bwd: the optimizer steps each parameter as soon as its gradient is
            accumulated and frees it (torchtune ``optimizer_in_bwd: True``:
            ``register_post_accumulate_grad_hook``, see
            :func:`lintlora.estimate.framework_terms.optimizer_in_backward`).
        activation_offload: every saved activation goes to CPU memory (torchtune
            ``enable_activation_offloading``, ``OffloadActivations``); the output layer's are
            kept (see :mod:`lintlora.estimate.framework_terms`).
        compile: each decoder layer compiled with ``torch.compile`` (torchtune ``compile: True``):
            the layer saves fewer activations (:func:`lintlora.estimate.framework_terms.compiled_parts`).
        assumed_versions: ``((package, release), ...)`` given with ``--assume-version``, or
            ``((package, release, origin), ...)`` from the linter's context (the project's pins,
            ``[tool.lintlora] versions``; :mod:`lintlora.estimate.versions`; absent packages
            take its defaults). ``to_json`` writes the pairs.
        trainer: ``--trainer`` key (:data:`lintlora.estimate.trainers.TRAINERS`); the fields
            below are set from it by :func:`lintlora.estimate.trainers.resolve`.
        num_generations, max_completion_length, max_prompt_length: GRPO/RLOO/PPO generation
            shape (``seq_len`` is then prompt + completion).
        generation_batch_size: completions ``model.generate`` runs at once per device (a
            generation phase, :func:`lintlora.estimate.rl.extra_phases`); ``None``: none here.
        reference_forward: a no-grad reference forward runs after the policy's (its logits
            coexist with the policy's saved activations).
        reward_model, value_model: PPO's frozen reward model and trained value model copies.
        vllm_gpu_memory_utilization: vLLM colocated in this process reserves this share of
            the GPU's memory.
        target_seq_len: decoder (target) tokens per sequence of an encoder-decoder model (T5,
            BART; ``seq_len`` is then the encoder's source length); ``None``: unknown, taken as
            ``seq_len`` and said so (:mod:`lintlora.estimate.seq2seq`). Ignored for decoder-only
            models.
        assumed: names of the fields above whose value was assumed, not read from the file or
            given as a flag (``"seq_len"``, ``"batch_size"``, ``"optim"``...): the fit list
            (:mod:`~lintlora.estimate.fit`) does not propose changing a value nobody chose.
    """

    method: str = "lora"
    batch_size: int = 1
    seq_len: int = 512
    gradient_checkpointing: bool = False
    quant: str | None = None
    double_quant: bool = False
    quant_compute_dtype: str | None = None
    weight_dtype: str = "bfloat16"
    compute_dtype: str = "bfloat16"
    lora_r: int = 8
    lora_dropout: float = 0.0
    target_modules: str | tuple[str, ...] | None = None
    modules_to_save: tuple[str, ...] = ()
    target_parameters: tuple[str, ...] = ()
    use_dora: bool = False
    optim: str = "adamw_torch"
    attn_implementation: str = "sdpa"
    kbit_upcast: bool = False
    liger: bool = False
    loss_impl: str | None = None
    master_fp32: bool = False
    framework: str = "transformers"
    checkpoint_offload: bool = False
    num_gpus: int = 1
    previous_batch_ratio: float = 1.0
    bnb_saves_input: bool = False
    torchao_unchunked: bool = False
    sequences_per_example: int = 1
    reference_model: bool = False
    optimizer_in_bwd: bool = False
    activation_offload: bool = False
    compile: bool = False
    assumed_versions: tuple[tuple[str, ...], ...] = ()
    trainer: str = "sft"
    num_generations: int | None = None
    max_completion_length: int | None = None
    max_prompt_length: int | None = None
    generation_batch_size: int | None = None
    reference_forward: bool = False
    reward_model: bool = False
    value_model: bool = False
    vllm_gpu_memory_utilization: float | None = None
    target_seq_len: int | None = None
    assumed: tuple[str, ...] = ()
    stored_quant: Any = None
    zero_stage: int = 0
    fsdp: str | None = None
    fsdp_version: int = 1
    offload_optimizer: bool = False
    offload_param: bool = False
    gradient_accumulation_steps: int = 1
    reduce_bucket_size: int | None = None
    prefetch_bucket_size: int | None = None
    overlap_comm: bool | None = None
    quant_storage: str | None = None

    @property
    def tokens(self) -> int:
        """Tokens per micro-batch: ``batch_size × sequences_per_example × seq_len``."""
        return self.batch_size * self.sequences_per_example * self.seq_len


@dataclass(frozen=True)
class ActivationTerms:
    """The activation model for one setup, per token.

    Attributes:
        per_token_layer: bytes one decoder layer keeps per token without checkpointing.
        checkpoint_per_token_layer: bytes per token per layer kept with checkpointing (the
            layer input, 2·h in the compute dtype).
        parts: named parts of ``per_token_layer`` (bytes per token per layer).
        logits_per_token: loss buffers per token at the loss peak (``V × k``).
        backward_temp_per_token: gradient temporaries of one layer's backward per token.
    """

    per_token_layer: float
    checkpoint_per_token_layer: float
    parts: dict[str, float]
    logits_per_token: float
    backward_temp_per_token: float


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak GPU memory of one setup on one device, in bytes.

    Attributes:
        allocated_bytes: ``torch.cuda.max_memory_allocated`` (sum of the components).
        reserved_bytes: ``torch.cuda.max_memory_reserved`` (allocated + allocator slack).
        device_bytes: what nvidia-smi shows (reserved + CUDA context): what must fit.
        breakdown: component -> bytes at the peak; components of allocated, then
            ``allocator_slack`` and ``cuda_context`` (see the module docstring).
        assumptions: sentences naming every value that was assumed, and the profile.
        rough: the architecture is a stand-in built from a parameter count.
        inputs: the resolved inputs; ``arch_name``, ``framework``: what was estimated.
        trainable: the trainable-parameter count (``None`` for full fine-tuning).
        peak_phase: ``"backward start"``, ``"layer backward"`` (no checkpointing), ``"loss"``,
            ``"recompute"`` (checkpointing), ``"lm_head backward"`` (litgpt dequantizing a 4-bit
            output layer whole in its backward), ``"optimizer step"`` or ``"load"`` (quantizing
            the base while loading peaks higher than a training step).
        gpu, gpu_memory_bytes: the GPU the estimate is compared against, when known.
        paged_optimizer_bytes: optimizer states a bitsandbytes paged optimizer keeps in CUDA
            unified memory (:mod:`lintlora.estimate.paged`), in none of the three counters.
        host_offload_bytes: bytes per rank DeepSpeed/FSDP CPU offload keeps in host RAM
            (optimizer states, fp32 masters, parameter partitions), in none of the counters.
        sharding: ``"DeepSpeed ZeRO-3 × 4 ranks"`` and the like (:func:`lintlora.estimate.sharding.describe`),
            ``""`` on one GPU.
    """

    allocated_bytes: int
    reserved_bytes: int
    device_bytes: int
    breakdown: dict[str, int]
    assumptions: list[str]
    rough: bool
    inputs: EstimateInputs
    arch_name: str
    framework: str
    trainable: TrainableCount | None = None
    trainable_params: int = 0
    peak_phase: str = ""
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    activations_per_token_layer: float = 0.0
    notes: list[str] = field(default_factory=list)
    paged_optimizer_bytes: int = 0
    host_offload_bytes: int = 0
    sharding: str = ""

    @property
    def headroom_bytes(self) -> int | None:
        """GPU memory minus ``device_bytes`` (negative: does not fit), or ``None``."""
        return None if self.gpu_memory_bytes is None else self.gpu_memory_bytes - self.device_bytes

    @property
    def fits(self) -> bool | None:
        """Whether ``device_bytes`` fits the GPU's memory (``None`` without a GPU)."""
        return None if self.gpu_memory_bytes is None else self.device_bytes <= self.gpu_memory_bytes

    def to_json(self) -> dict:
        """Plain-data form (the ``estimate`` object of ``lintlora estimate --format json``)."""
        return {
            "model": self.arch_name,
            "framework": self.framework,
            "allocated_bytes": self.allocated_bytes,
            "reserved_bytes": self.reserved_bytes,
            "device_bytes": self.device_bytes,
            "breakdown": dict(self.breakdown),
            "peak_phase": self.peak_phase,
            "trainable_params": self.trainable_params,
            "activations_per_token_layer_bytes": round(self.activations_per_token_layer, 1),
            "gpu": self.gpu,
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "headroom_bytes": self.headroom_bytes,
            "rough": self.rough,
            "paged_optimizer_bytes": self.paged_optimizer_bytes,
            "host_offload_bytes": self.host_offload_bytes,
            "sharding": self.sharding,
            "assumptions": list(self.assumptions),
            "inputs": {k: ([list(e[:2]) for e in v] if k == "assumed_versions" else
                           list(v) if isinstance(v, tuple) else
                           {f: (list(x) if isinstance(x, tuple) else x) for f, x in v.__dict__.items()}
                           if hasattr(v, "__dataclass_fields__") else v)
                       for k, v in self.inputs.__dict__.items()},
        }


# ---- optimizer ------------------------------------------------------------------------------
# transformers ``OptimizerNames`` (src/transformers/training_args.py, 5.24.0), what
# ``TrainingArguments(optim=...)`` accepts, plus names older releases accepted (``adamw_hf``,
# ``adamw_apex_fused``, removed or renamed since 4.x).
KNOWN_OPTIMIZERS: tuple[str, ...] = (
    "adamw_torch", "adamw_torch_fused", "adamw_torch_xla", "adamw_torch_npu_fused", "adafactor",
    "adamw_anyprecision", "adamw_torch_4bit", "adamw_torch_8bit", "ademamix", "sgd", "adagrad",
    "adamw_bnb_8bit", "adamw_8bit", "ademamix_8bit", "lion_8bit", "lion_32bit", "paged_adamw_32bit",
    "paged_adamw_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit", "paged_lion_32bit",
    "paged_lion_8bit", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit", "rmsprop_bnb_32bit",
    "galore_adamw", "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise",
    "galore_adamw_8bit_layerwise", "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw",
    "schedule_free_radam", "schedule_free_adamw", "schedule_free_sgd", "apollo_adamw",
    "apollo_adamw_layerwise", "stable_adamw",
    "adamw_hf", "adamw_apex_fused",
)

# optimizers whose state is not the per-parameter moments counted here (GaLore/APOLLO project
# the gradient to a low rank, LOMO/AdaLOMO fuse the update into backward): counted as AdamW,
# an upper bound, and said so
_NOT_MODELLED = ("galore", "apollo", "lomo", "grokadamw", "schedule_free")


def optimizer_bytes_per_param(optim: str, param_bytes: int, follows_param: bool = True) -> tuple[float, str]:
    """Optimizer-state bytes per trainable parameter, with the reason.

    States per parameter: AdamW keeps ``exp_avg`` and ``exp_avg_sq`` (torch/optim/adamw.py,
    ``zeros_like(param)``): 2; Lion one momentum (bitsandbytes ``Lion``), RMSprop and Adagrad one
    running average: 1; AdEMAMix a fast and a slow first moment and the second moment
    (bitsandbytes ``AdEMAMix``): 3; Adafactor factors the second moment (rows + columns) and
    keeps no first moment by default (transformers ``Adafactor``): ~0; SGD without momentum: 0.

    Bytes per state: bitsandbytes 8-bit optimizers keep uint8 states (+ block absmax, ~1%) for
    tensors of >= 4096 elements (``min_8bit_size``, bitsandbytes/optim/optimizer.py): 1;
    torchao 4-bit AdamW (``adamw_torch_4bit``) 4-bit states with a scale per block of 128:
    ~0.5; bitsandbytes 32-bit / paged 32-bit optimizers fp32 (4) whatever the parameter dtype;
    torch's optimizers the parameter's dtype (``param_bytes``).
    """
    o = (optim or "adamw_torch").lower()
    state = param_bytes if follows_param else 4
    if "adafactor" in o:
        return 0.0, f"{optim}: factored second moment (negligible)"
    if o.startswith("sgd") or o == "schedule_free_sgd":
        return 0.0, f"{optim}: no state without momentum"
    if "lion" in o or "adagrad" in o or "rmsprop" in o:
        n, what = 1, "one state"
    elif "ademamix" in o:
        n, what = 3, "three states"
    else:
        n, what = 2, "two states"
    if "8bit" in o or "8_bit" in o or o == "adamw8bit":
        return float(n), f"{optim}: {what}, 8-bit"
    if "4bit" in o:
        return 0.5 * n, f"{optim}: {what}, 4-bit"
    if "32bit" in o or o.startswith("paged_adamw") or "pagedadamw" in o:
        return 4.0 * n, f"{optim}: {what}, fp32"
    if any(k in o for k in _NOT_MODELLED):
        return n * float(state), (f"{optim}: its own state is not modelled; counted as AdamW's {what} in the "
                                  f"parameter dtype (an upper bound)")
    return n * float(state), f"{optim}: {what} in the parameter dtype"


# ---- activations ------------------------------------------------------------------------------
def residual_stream_bytes(inputs: EstimateInputs) -> int:
    """Bytes per element of the residual stream (layer inputs, norm outputs).

    The compute dtype, except after ``prepare_model_for_kbit_training`` on a bitsandbytes model
    (``kbit_upcast``): the fp32 embedding output makes the stream fp32, and bitsandbytes
    ``Linear4bit``/``Linear8bitLt`` return their input's dtype, so it stays fp32 through every
    layer (a 16-bit attention output added to it is promoted to fp32).
    """
    if inputs.kbit_upcast and inputs.quant in ("nf4", "fp4", "int8"):
        return 4
    return DTYPE_BYTES.get(inputs.compute_dtype, 2)


def activation_breakdown(arch: Architecture, inputs: EstimateInputs, profile: Profile,
                         trainable: TrainableCount | None = None) -> ActivationTerms:
    """Bytes saved per token per decoder layer, by part (see the module docstring).

    Parts (bytes per token per layer, ``c`` = compute-dtype bytes, 2 for bf16/fp16; ``sb`` =
    residual-stream bytes, :func:`residual_stream_bytes`: ``c``, or 4 after the kbit up-cast):

    * ``norms``: ``norms_per_layer × h × norm_bytes`` (+ ``c·h`` each when norms train);
    * ``attention`` (SDPA / FlashAttention-2): q, k, v and the output in the compute dtype
      plus the fp32 log-sum-exp: ``c·(2·qw + 2·kw) + 4·heads`` with ``kw`` the KV width
      (``qw`` when the framework expands K/V for GQA); eager attention keeps q and expanded
      k, v plus the bf16 and fp32 probabilities: ``3·c·qw + 6·heads·s`` (notes §2.2; measured).
      Autocast runs SDPA in the compute dtype whatever the stream dtype, so ``sb`` does not
      enter here;
    * ``mlp``: gated ``6·I`` (gate, activation and up outputs), plain ``2·I`` (GELU input),
      scaled by ``sb / c``: after the kbit up-cast the gate/up outputs come back from
      ``Linear4bit`` in fp32 and SiLU/product run in fp32 (12·I); for full fine-tuning also the
      MLP input ``c·h`` and the down-projection input ``c·I``;
    * ``linear_inputs``: inputs frozen linears keep anyway: bitsandbytes' 4-bit matmul only
      before 0.43.2 (``bnb_saves_input``; one shared copy per distinct input, or one
      compute-dtype copy per module when ``Linear4bit`` casts an fp32 stream), LLM.int8
      (``MatMul8bitLt`` saves ``A``), GPTQ, and every linear in full fine-tuning;
    * ``lora``: per adapted module ``d_in × lora_in_bytes``: with dropout the CUDA fused
      dropout's bool mask (1 B, ``at::native_dropout``; aten ``Dropout.cpp``
      ``is_fused_kernel_acceptable`` is true on CUDA only) plus the 16-bit input ``lora_A``
      saves (2 B) = 3; without dropout 2 B per module (peft casts the input to the fp32
      adapter dtype and autocast makes a fresh 16-bit copy per module) or, for peft's
      bitsandbytes layers under autocast on a 16-bit stream (no cast:
      ``requires_conversion = not torch.is_autocast_enabled()``, peft ``tuners/lora/bnb.py``),
      2 B per distinct input shared by the modules reading it.
    """
    h = arch.hidden_size
    I = arch.intermediate_size
    heads = arch.num_attention_heads
    qw = arch.q_width
    kw = arch.kv_width if profile.gqa_native or inputs.attn_implementation == "flash_attention_2" else qw
    c = DTYPE_BYTES.get(inputs.compute_dtype, 2)
    sb = residual_stream_bytes(inputs)
    s = inputs.seq_len
    full = inputs.method == "full"
    bnb4 = inputs.quant in ("nf4", "fp4")
    parts: dict[str, float] = {}
    norm_b = 2 if inputs.liger else profile.norm_bytes
    if arch.norm == "layernorm" and profile.layernorm_bytes is not None and not inputs.liger:
        norm_b = profile.layernorm_bytes
    norm_b = max(norm_b, sb) if sb == 4 else norm_b
    parts["norms"] = arch.norms_per_layer * h * (norm_b + (c if full else 0))
    litgpt = profile.name == "litgpt"
    if litgpt and arch.model_type == "gemma2":
        # litgpt 0.4.13 CausalSelfAttention.scaled_dot_product_attention: "with softcapping we
        # cannot use SDPA": q @ k.mT, tanh soft-capping (keeps its bf16 output), softmax in fp32
        # (keeps its output), cast to bf16 (kept by scores @ v): q, expanded k, v and 2 + 4 + 2
        # bytes per score (measured: 8 × heads × s + 3·c·qw exactly)
        parts["attention"] = 3 * c * qw + 8 * heads * s
    elif inputs.attn_implementation == "eager":
        parts["attention"] = 3 * c * qw + 6 * heads * s
    else:
        parts["attention"] = c * (2 * qw + 2 * kw) + 4 * heads
        if litgpt and arch.num_key_value_heads == arch.num_attention_heads:
            # litgpt multi-head attention: v is a view of the fused qkv output (no expand, no
            # copy), so SDPA keeping v keeps the q and k parts of that tensor too (measured)
            parts["attention"] += c * (qw + arch.kv_width)
    mlp_b = profile.mlp_gated_bytes if arch.mlp_kind == "gated" else profile.mlp_plain_bytes
    if inputs.liger and arch.mlp_kind == "gated":
        mlp_b = 4.0  # Liger SwiGLU recomputes silu in backward, keeps gate and up (liger_kernel/ops/swiglu.py)
    experts = max(1, arch.num_experts_per_tok) if arch.is_moe else 1
    # routed experts (and shared experts) a token runs through: Architecture.active_mlp_width
    width = arch.active_mlp_width
    parts["mlp"] = mlp_b * width * (sb / c)
    # inputs frozen (quantized) linears keep, and all linears in full fine-tuning
    shapes = arch.block_linears()
    distinct_inputs = {"qkv": h, "attn_out": qw, "mlp_in": h, "mlp_out": width}
    # what frozen linears keep: a parallel block with one norm (phi, GPT-J, falcon-7b) feeds the
    # attention and the MLP the same normed tensor, kept once (measured with litgpt's phi-2 by
    # bench/litgpt_fabric_step.py --old-bnb: 2·(h + q + I) per token per layer)
    kept_inputs = {r: w for r, w in distinct_inputs.items() if not (r == "mlp_in" and arch.norms_per_layer == 1)}
    # bytes of each distinct input tensor: the stream dtype, except the attention output
    # (SDPA runs in the compute dtype under autocast)
    input_bytes = {"qkv": sb, "attn_out": c, "mlp_in": sb, "mlp_out": sb}
    if full:
        parts["linear_inputs"] = c * sum(kept_inputs.values())
    elif bnb4 and inputs.bnb_saves_input:
        qc = inputs.quant_compute_dtype or inputs.compute_dtype
        if qc == "float32":
            # Linear4bit casts its input to the fp32 compute dtype per module: one fp32 copy each
            parts["linear_inputs"] = 4 * sum(sh.d_in * _copies(sh, arch) for sh in shapes if sh.role != "router")
        else:
            # x.to(compute_dtype) is a no-op on a stream already in that dtype (one shared tensor
            # per distinct input); on an fp32 stream every module makes its own copy
            lin = 0.0
            for role, width in kept_inputs.items():
                if input_bytes[role] == DTYPE_BYTES.get(qc, 2):
                    lin += 2 * width
                else:
                    lin += 2 * sum(sh.d_in * _copies(sh, arch) for sh in shapes if sh.role == role)
            parts["linear_inputs"] = lin
    elif inputs.quant == "int8":
        # MatMul8bitLt saves A itself (bitsandbytes autograd/_functions.py: ctx.tensors = (CAt, subA, A))
        parts["linear_inputs"] = sum(input_bytes[r] * w for r, w in kept_inputs.items())
    elif inputs.quant in ("gptq4", "gptq", "awq"):
        parts["linear_inputs"] = 2 * sum(kept_inputs.values())
    # LoRA
    lora = 0.0
    if not full and trainable is not None:
        p = inputs.lora_dropout or 0.0
        per_in = profile.lora_in_bytes_dropout if p > 0 else profile.lora_in_bytes_p0
        block = [m for m in trainable.adapted if m.role in ("qkv", "attn_out", "mlp_in", "mlp_out")]
        peft_bnb_shared = (p == 0 and inputs.quant in ("nf4", "fp4", "int8") and not profile.lora_shared_input
                           and profile.name not in ("torchtune", "litgpt", "unsloth"))
        if profile.lora_shared_input and p == 0:
            roles = {m.role for m in block}
            lora = sum(per_in * distinct_inputs[r] for r in roles)
        elif peft_bnb_shared:
            # peft's bitsandbytes LoRA layers do not cast under autocast: lora_A keeps the very
            # tensor the layer received; on a 16-bit stream that tensor is shared by the modules
            # reading it (and is the one old bitsandbytes keeps too); on an fp32 stream autocast
            # makes a 16-bit copy per module
            counted = parts.get("linear_inputs", 0.0) > 0
            seen_roles: set[str] = set()
            for m in block:
                if input_bytes[m.role] == c:
                    if m.role not in seen_roles and not counted:
                        lora += c * distinct_inputs[m.role]
                    seen_roles.add(m.role)
                else:
                    lora += c * m.d_in * _layer_copies(m, arch, experts)
        else:
            seen_qkv = False
            for m in block:
                copies_per_layer = _layer_copies(m, arch, experts)
                if litgpt and m.role == "mlp_in" and arch.mlp_kind == "gated" and m.d_out == 2 * I:
                    copies_per_layer *= 2  # litgpt's LLaMAMLP: fc_1 and fc_2, one dropout each
                if profile.fused_qkv_dropout and m.role == "qkv":
                    if seen_qkv:
                        continue
                    seen_qkv = True
                    copies_per_layer = 1
                lora += per_in * m.d_in * copies_per_layer
        if litgpt:
            lora += _litgpt_lora_extra(arch, block, inputs.lora_r, c, I)
    parts["lora"] = lora
    if inputs.compile:
        from lintlora.estimate.framework_terms import compiled_parts

        parts = compiled_parts(parts, arch, c=c, sb=sb, full=full, norm_bytes=norm_b, gated=arch.mlp_kind == "gated",
                               mlp_bytes=mlp_b, experts=experts)
    per_layer = sum(parts.values()) * profile.activation_factor
    ckpt = sb * h * arch.residual_streams  # Gemma-3n AltUp: the block input is n stacked streams
    # an explicit loss wins over Liger's fused one (LLaMA-Factory v1 applies Liger without its
    # fused linear cross-entropy in training)
    loss_key = inputs.loss_impl or ("fused" if inputs.liger else profile.loss)
    k = LOSS_K.get(loss_key, LOSS_K["hf"])
    if loss_key == "chunked" and profile.loss_chunk_tokens:
        # litgpt's chunked loss on the logits Fabric casts (Profile.output_cast_bytes): the larger
        # of its backward (with one chunk's two fresh gradients: the largest chunk, min(s, chunk)
        # tokens) and the forward's end (the previous micro-batch's logits still bound)
        from lintlora.estimate.litgpt_terms import chunked_loss_k

        k = chunked_loss_k(s, profile.loss_chunk_tokens, c, profile.output_cast_bytes or c)
    logits = arch.vocab_size * k
    # one layer's backward: gradient of the residual stream plus the MLP gradients
    # (notes §3: ~2·max(h, I)·2 B per token)
    bw = 2 * c * max(h, width)
    return ActivationTerms(per_layer, ckpt, parts, logits, bw)


def _copies(shape, arch: Architecture) -> float:
    """Token-visible copies of one block linear per layer (routed experts for MoE)."""
    if shape.count > 1 and arch.is_moe:
        return max(1, arch.num_experts_per_tok)
    return 1


def _layer_copies(m: AdaptedModule, arch: Architecture, experts: int) -> float:
    """Copies of an adapted module kind that see each token, per layer."""
    L = max(1, arch.num_hidden_layers)
    copies_per_layer = m.copies / L
    if m.role == "mlp_out" and arch.is_moe:
        copies_per_layer = experts  # only routed experts see tokens
    elif arch.is_moe and m.role == "mlp_in":
        copies_per_layer = experts * (m.copies / L / max(1, arch.num_experts))
    return copies_per_layer


def _litgpt_lora_extra(arch: Architecture, block: Sequence[AdaptedModule], r: int, c: int, I: int) -> float:
    """Bytes per token per layer litgpt's LoRA classes keep besides the dropped-out input.

    Read in litgpt 0.4.13 ``litgpt/lora.py`` and measured by ``bench/litgpt_memory.py``:

    * ``LoRAQKVLinear``: ``F.linear(dropout(x), lora_A)`` is kept by ``conv1d`` (``c·r`` per
      enabled q/k/v part); when not all of q, k, v are enabled, ``zero_pad`` scatters the
      update into a zero tensor with ``index_copy_``, whose backward formula keeps ``source``
      (the ``lora_B`` output, ``c ×`` the enabled widths; aten derivatives.yaml
      ``index_copy``: ``grad.index_select(dim, index).expand_as(source)``);
    * ``LoRALinear``: ``dropout(x) @ A.T @ B.T`` keeps the rank-``r`` intermediate for ``B``'s
      gradient (``c·r`` per module; two modules for a fused gate/up, litgpt's fc_1 and fc_2).
    """
    qkv = [m for m in block if m.role == "qkv"]
    extra = 0.0
    if qkv:
        full = arch.q_width + 2 * arch.kv_width
        fused = any(m.d_out >= full for m in qkv)
        enabled = full if fused else sum(m.d_out for m in qkv)
        parts = 3 if fused else len(qkv)
        extra += c * r * parts
        if enabled < full:
            extra += c * enabled
    for m in block:
        if m.role == "qkv":
            continue
        n = m.copies / max(1, arch.num_hidden_layers)
        if m.role == "mlp_in" and arch.mlp_kind == "gated" and m.d_out == 2 * I:
            n *= 2
        extra += c * r * n
    return extra


# ---- the estimate -----------------------------------------------------------------------------
def _weights(arch: Architecture, inputs: EstimateInputs, profile: Profile,
             trainable: TrainableCount | None) -> tuple[float, str]:
    """Bytes of the base weights and a description."""
    wb = DTYPE_BYTES.get(inputs.weight_dtype, 2)
    if inputs.method == "full" and inputs.master_fp32:
        wb = 4
    total = arch.total_params
    q = inputs.quant
    if q and inputs.stored_quant is not None:
        from lintlora.estimate.stored_quant import stored_weight_bytes

        rest_b = 4 if (inputs.kbit_upcast and q in ("nf4", "fp4", "int8")) else (2 if wb == 4 else wb)
        stored, _, desc = stored_weight_bytes(arch, inputs.stored_quant, rest_b)
        return stored, desc
    if not q:
        cb = DTYPE_BYTES.get(inputs.compute_dtype, 2)
        if wb == 4 and cb == 2:
            # fp32 weights under 16-bit autocast: each linear's weight is cast per use and the
            # 16-bit copy is saved for the input gradient (torch autocast casts fp32 weights of
            # matmuls, aten/src/ATen/autocast_mode.cpp; litgpt bf16-mixed StableLM-3B LoRA
            # 26.92 GB vs 9.69 GB bf16-true, notes §3): + 2 B per linear weight.
            head_uses = 1
            if profile.loss_chunk_tokens and inputs.method != "full":
                # litgpt runs the frozen output layer once per logit chunk, and autocast caches
                # only casts of leaves that require grad (aten/src/ATen/autocast_mode.cpp
                # cached_cast: arg.requires_grad()), so each chunk keeps its own 16-bit copy
                # (measured: 9 copies at s = 1034, bench/litgpt_fabric_step.py --mixed)
                from lintlora.estimate.litgpt_terms import logit_chunks

                head_uses = logit_chunks(inputs.seq_len, profile.loss_chunk_tokens)
            copies = arch.block_linear_params + arch.lm_head_params * head_uses
            return (total * wb + copies * cb,
                    f"{total:,} params × 4 B (float32) + {copies:,} × {cb} B autocast copies kept for backward"
                    + (f" (the output layer's once per each of {head_uses} logit chunks)" if head_uses > 1 else ""))
        return total * wb, f"{total:,} params × {wb} B ({inputs.weight_dtype})"
    per = {"nf4": NF4_DQ_BYTES if inputs.double_quant else NF4_BYTES,
           "fp4": NF4_DQ_BYTES if inputs.double_quant else NF4_BYTES,
           "int8": INT8_BYTES, "gptq4": GPTQ4_BYTES, "torchao-nf4": TORCHAO_NF4_BYTES}.get(q, NF4_BYTES)
    if profile.quantize_scope == "adapted" and trainable is not None:
        quantized = sum(m.d_in * m.d_out * m.copies for m in trainable.adapted
                        if m.role in ("qkv", "attn_out", "mlp_in", "mlp_out"))
    elif q in ("nf4", "fp4", "int8"):
        # bitsandbytes swaps nn.Linear modules only: fused expert parameters stay 16-bit
        quantized = arch.linear_module_params
    else:
        quantized = arch.block_linear_params
    if profile.quantize_lm_head and q in ("nf4", "fp4"):
        quantized += arch.lm_head_params
    rest = total - quantized
    rest_b = 4 if (inputs.kbit_upcast and q in ("nf4", "fp4", "int8")) else (2 if wb == 4 and q else wb)
    desc = (f"{quantized:,} quantized params × {per:.4f} B ({q}{' + double quant' if inputs.double_quant else ''}) "
            f"+ {rest:,} others × {rest_b} B")
    return quantized * per + rest * rest_b, desc


def unmatched_note(arch: Architecture, trainable: TrainableCount) -> str:
    """The warning for ``target_modules``/``modules_to_save`` entries that match no module of
    ``arch`` (peft raises "Target modules ... not found in the base model" when no entry of
    ``target_modules`` matches, and ignores an unmatched entry when another one matches)."""
    names: list[str] = [arch.embedding_name.rsplit(".", 1)[-1]]
    for sh in arch.block_linears():
        if sh.name not in names and not sh.parameter:  # expert parameters are no modules
            names.append(sh.name)
    names.append(arch.lm_head_name.rsplit(".", 1)[-1])
    none = " (no LoRA target matches: peft would raise)" if trainable.lora_params == 0 else ""
    verb = "matches" if len(trainable.unmatched) == 1 else "match"
    return (f"warning: {', '.join(map(repr, trainable.unmatched))} {verb} no module of {arch.name}{none}; "
            f"its modules: {', '.join(names)}")


def _trainable_text(trainable: TrainableCount, pb: int, sb: int, inputs: EstimateInputs) -> str:
    """The trainable-weight arithmetic as the estimate did it: LoRA adapters at ``pb`` bytes,
    ``modules_to_save`` copies at ``sb`` bytes (the base weights' dtype, or fp32 masters)."""
    def name(b: int, sixteen: str) -> str:
        return "float32" if b == 4 else sixteen

    sixteen = inputs.weight_dtype if DTYPE_BYTES.get(inputs.weight_dtype, 2) == 2 else inputs.compute_dtype
    text = f"{trainable.lora_params:,} adapter params × {pb} B ({name(pb, inputs.compute_dtype)})"
    if trainable.full_params:
        text += (f" + {trainable.full_params:,} modules_to_save params × {sb} B ({name(sb, sixteen)}, "
                 "the copied module keeps the base weights' dtype)")
    return text


def unsloth_full_layers(arch: Architecture, inputs: EstimateInputs) -> tuple[EstimateInputs, list[str]]:
    """Move embedding/output layers named in ``target_modules`` to ``modules_to_save``.

    Unsloth's ``FastLanguageModel.get_peft_model`` removes ``embed_tokens`` and ``lm_head`` from
    ``target_modules`` and trains them in full through ``modules_to_save``
    (unslothai/unsloth#1093), which is also how ``rules/ll003`` counts the trainable
    parameters (``params.count_trainable`` with the moved names). A regular expression or
    ``"all-linear"`` is left alone. Returns the changed inputs and the names moved.
    """
    t = inputs.target_modules
    if t is None or isinstance(t, str):
        return inputs, []
    full_names = {arch.embedding_name, arch.embedding_name.rsplit(".", 1)[-1],
                  arch.lm_head_name, arch.lm_head_name.rsplit(".", 1)[-1]}
    moved = [n for n in t if n in full_names]
    if not moved:
        return inputs, []
    kept = tuple(n for n in t if n not in full_names) or tuple(arch.attention_modules[:0])
    mts = tuple(inputs.modules_to_save) + tuple(n for n in moved if n not in inputs.modules_to_save)
    return replace(inputs, target_modules=kept, modules_to_save=mts), moved


def _load_phase(arch: Architecture, inputs: EstimateInputs, profile: Profile,
                trainable: TrainableCount | None) -> tuple[float, float, str]:
    """Weights resident while the model loads, the largest transient, and a description.

    * bitsandbytes (HF ``from_pretrained`` with a ``quantization_config``, litgpt's bnb
      plugin): weights are quantized one tensor at a time; the 16-bit tensor handed to
      ``Params4bit``/``Int8Params`` exists next to the quantized ones (transformers
      ``quantizers/quantizer_bnb_4bit.py`` ``create_quantized_param``). The non-quantized
      weights are still 16-bit: ``prepare_model_for_kbit_training`` up-casts them afterwards.
    * torchtune QLoRA (torchao NF4): each LoRA linear is created in bf16 and converted with
      ``to_nf4``; torchao < 0.2 held :data:`TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT` bytes per
      element of the weight being quantized, later versions one chunk of
      :data:`TORCHAO_CHUNK_ELEMENTS` elements.
    * 16-bit and pre-quantized models (GPTQ, AWQ, MXFP4, FP8, a bitsandbytes checkpoint stored
      quantized): loading adds no transient worth counting (their tensors are loaded as stored).
    """
    q = inputs.quant
    stored = inputs.stored_quant is not None and inputs.stored_quant.prequantized
    if not q or q in ("gptq4", "gptq", "awq", "mxfp4", "fp8") or stored or inputs.method == "full":
        return 0.0, 0.0, ""
    w_load, _ = _weights(arch, replace(inputs, kbit_upcast=False), profile, trainable)
    n_max = max((sh.d_in * sh.d_out for sh in arch.block_linears() if not sh.parameter), default=0)
    if q == "torchao-nf4":
        if inputs.torchao_unchunked:
            tr = n_max * (TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT + 2)
            return w_load, tr, (f"torchao < 0.2 quantizes each {n_max:,}-element weight in one piece "
                                f"({TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT:.0f} B per element + its bf16 copy)")
        tr = n_max * 2 + TORCHAO_CHUNK_ELEMENTS * TORCHAO_UNCHUNKED_BYTES_PER_ELEMENT
        return w_load, tr, f"to_nf4 on one bf16 weight of {n_max:,} elements, in chunks of 1024² elements"
    return w_load, n_max * 2.0, f"one 16-bit weight of {n_max:,} elements at a time handed to bitsandbytes"


def _shard(arch: Architecture, inputs: EstimateInputs, profile: Profile, trainable: TrainableCount | None, *,
           weights: float, adapter_w: float, grads: float, step_grads: float, opt: float, n_train: int, pb: int,
           full: bool):
    """The per-rank terms (:func:`lintlora.estimate.sharding.shard_terms`) from the single-GPU ones."""
    L = max(1, arch.num_hidden_layers)
    root = arch.embedding_params + arch.lm_head_params + arch.hidden_size
    block_numel = max(0, arch.total_params - root)
    unit = block_numel // L
    wb = weights / max(1, arch.total_params)  # bytes per base element as stored (16-bit, or 4-bit packed)
    gb = pb if full else (DTYPE_BYTES.get(inputs.weight_dtype, 2) if inputs.quant is None else pb)
    ob32, _ = optimizer_bytes_per_param(inputs.optim, 4, False)
    return shard_terms(arch, inputs, weights=weights, adapter_weights=adapter_w, gradients=grads,
                       step_gradients=step_grads, optimizer_states=opt, n_trainable=int(n_train), unit_params=unit,
                       root_params=root, weight_bytes=wb, grad_bytes=int(gb), optimizer_fp32_bytes=ob32, full=full)


def _counters(breakdown_alloc: dict[str, int], profile: Profile) -> tuple[int, int, int, dict[str, int]]:
    """The three counters from the allocated parts (bytes): ``(allocated, reserved, device,
    breakdown)``. ``allocated`` predicts ``torch.cuda.max_memory_allocated()``, the sum of the
    parts; ``reserved`` (``torch.cuda.max_memory_reserved()``) is allocated × the profile's
    ``reserved_ratio`` (the caching allocator's slack, cited in :mod:`.profiles`); ``device``
    (what ``nvidia-smi`` shows) adds the profile's CUDA context. ``breakdown`` is the parts
    plus ``allocator_slack`` and ``cuda_context``, so it adds up to ``device``."""
    allocated = sum(breakdown_alloc.values())
    reserved = int(math.ceil(allocated * profile.reserved_ratio))
    device = reserved + profile.cuda_context_bytes
    breakdown = dict(breakdown_alloc)
    breakdown["allocator_slack"] = reserved - allocated
    breakdown["cuda_context"] = profile.cuda_context_bytes
    return allocated, reserved, device, breakdown


def _estimate_load(inputs: EstimateInputs, arch: Architecture, profile: Profile, notes: list[str],
                   gpu: str | None, gpu_memory_bytes: int | None) -> MemoryEstimate:
    """Memory to load the model and nothing more (``method="load"``: a file that does not train,
    such as an adapter merge or an inference script): the weights, the largest load-phase
    transient of a quantized base (:func:`_load_phase`), the framework's buffers, the allocator's
    slack and the CUDA context. A forward pass or ``generate()`` adds activations and a KV
    cache, and merging an adapter one delta matrix at a time; none of them is counted."""
    weights, wdesc = _weights(arch, replace(inputs, kbit_upcast=False), profile, None)
    _, transient, load_desc = _load_phase(arch, replace(inputs, method="lora"), profile, None)
    breakdown_alloc = {"weights": int(weights), "adapter_weights": 0, "gradients": 0, "optimizer_states": 0,
                       "activations": 0, "logits": 0, "transient": int(transient),
                       "framework": int(profile.framework_bytes)}
    allocated, reserved, device, breakdown = _counters(breakdown_alloc, profile)
    notes.append(f"weights: {wdesc}")
    if load_desc:
        notes.append(f"load phase: {load_desc}")
    notes.append("not counted: activations and KV cache of a forward pass or generate(), an adapter's "
                 "weights and the delta matrices merge_and_unload() builds one module at a time")
    notes.append(f"reserved = allocated × {profile.reserved_ratio} (caching-allocator slack); "
                 f"device = reserved + {profile.cuda_context_bytes / 1e6:.0f} MB CUDA context")
    return MemoryEstimate(
        allocated_bytes=int(allocated), reserved_bytes=reserved, device_bytes=int(device),
        breakdown=breakdown, assumptions=notes, rough=arch.rough, inputs=inputs, arch_name=arch.name,
        framework=profile.name, trainable=None, trainable_params=0, peak_phase="load",
        gpu=gpu, gpu_memory_bytes=gpu_memory_bytes)


def estimate_memory(inputs: EstimateInputs, arch: Architecture, profile: Profile | None = None, *,
                    assumptions: Sequence[str] = (), gpu: str | None = None,
                    gpu_memory_bytes: int | None = None) -> MemoryEstimate:
    """Estimate the peak of one training step (steady state) on one GPU.

    Args:
        inputs: resolved training inputs.
        arch: the model's architecture.
        profile: framework constants (default: the profile of ``inputs.framework``).
        assumptions: sentences from the caller (``from_setup``) to carry into the result.
        gpu, gpu_memory_bytes: the GPU to compare against (optional).

    Raises:
        NoDefaultTargetsError: LoRA with ``target_modules=None`` on a model_type peft has no
            default for.
    """
    profile = profile or get_profile(inputs.framework)
    notes = list(assumptions)
    if arch.resolved_by and arch.resolved_by not in notes:  # a name resolved by a reading of it
        notes.insert(0, arch.resolved_by)
    if not profile.ties_embeddings and arch.tie_word_embeddings:
        # litgpt keeps a separate output layer for tied checkpoints (Profile.ties_embeddings)
        extra = arch.vocab_size * arch.hidden_size
        arch = replace(arch, tie_word_embeddings=False,
                       params_total=arch.params_total + extra if arch.params_total else 0)
        notes.append(f"{profile.name} keeps the output layer apart from the embedding ({extra:,} more "
                     "parameters than the tied checkpoint)")
    if inputs.method == "load":
        return _estimate_load(inputs, arch, profile, notes, gpu, gpu_memory_bytes)
    trainable: TrainableCount | None = None
    full = inputs.method == "full"
    if not full and profile.name == "unsloth":
        inputs, moved = unsloth_full_layers(arch, inputs)
        if moved:
            notes.append(f"unsloth trains {', '.join(moved)} named in target_modules in full (it moves them "
                         "to modules_to_save, unslothai/unsloth#1093): counted as full copies with "
                         "gradients and optimizer states")
    if not full:
        trainable = count_trainable(arch, inputs.lora_r, inputs.target_modules, inputs.modules_to_save,
                                    use_dora=inputs.use_dora,
                                    target_parameters=inputs.target_parameters)
        if trainable.unmatched:
            notes.append(unmatched_note(arch, trainable))
    weights, wdesc = _weights(arch, inputs, profile, trainable)
    frozen_copies = int(inputs.reference_model) + int(inputs.reward_model)
    if frozen_copies:
        # a frozen copy of the model as loaded (16-bit or quantized, never the fp32 masters):
        # the reference model and PPO's reward model (lintlora.estimate.trainers)
        ref, rdesc = _weights(arch, replace(inputs, master_fp32=False, compute_dtype=inputs.weight_dtype,
                                            method="lora" if full else inputs.method), profile, trainable)
        weights += frozen_copies * ref
        wdesc += (f"; + a frozen reference model: {rdesc}" if inputs.reference_model else "") + \
                 (f"; + a frozen reward model: {rdesc}" if inputs.reward_model else "")

    # trainable parameters, their gradients and optimizer states
    if full:
        n_train = arch.total_params
        pb = 4 if inputs.master_fp32 else DTYPE_BYTES.get(inputs.weight_dtype, 2)
        adapter_w = 0.0  # the trainable weights are the base weights
        grads = n_train * pb
    else:
        assert trainable is not None
        n_train = trainable.trainable
        pb = 4 if inputs.master_fp32 else profile.adapter_bytes
        # modules_to_save are deep copies of the original module (peft ModulesToSaveWrapper):
        # they keep the weight dtype, unlike LoRA adapters that peft up-casts to fp32. After
        # prepare_model_for_kbit_training that dtype is fp32: it casts every 16-bit parameter
        # that is not a Params4bit/Int8Params (peft src/peft/utils/other.py), before or after
        # get_peft_model made the copies.
        upcast = inputs.kbit_upcast and inputs.quant in ("nf4", "fp4", "int8")
        sb = 4 if (inputs.master_fp32 or upcast) else DTYPE_BYTES.get(inputs.weight_dtype, 2)
        adapter_w = trainable.lora_params * pb + trainable.full_params * sb
        grads = adapter_w
    ob, odesc = optimizer_bytes_per_param(inputs.optim, pb, profile.optimizer_state_follows_param)
    opt = n_train * ob
    if not full and trainable is not None and trainable.full_params:
        sob, _ = optimizer_bytes_per_param(inputs.optim, sb, profile.optimizer_state_follows_param)
        opt = trainable.lora_params * ob + trainable.full_params * sob

    paged_opt = 0.0
    if is_paged(inputs.optim) and n_train and opt:
        # bitsandbytes keeps these states in CUDA unified memory, outside PyTorch's allocator
        # (lintlora.estimate.paged): not in any counter, stated on their own
        paged_n, all_n = paged_state_elements(trainable if not full else None, lora_r=inputs.lora_r,
                                              full_params=n_train if full else None)
        paged_opt = opt * paged_n / all_n if all_n else 0.0
        opt -= paged_opt
        if paged_opt:
            notes.append(f"paged optimizer ({inputs.optim}): {paged_opt / 2**30:.2f} GiB of optimizer states in CUDA "
                         "unified memory (bitsandbytes get_paged: cudaMallocManaged, for tensors of 1e5 elements or "
                         "more), outside PyTorch's allocator: not in allocated/reserved, and paged out to CPU RAM "
                         "when the GPU is full, so not in what must fit (nvidia-smi shows them while there is room)")

    if inputs.value_model:
        vw, vg, vo, vdesc = value_model_bytes(arch, inputs, lambda o, b: optimizer_bytes_per_param(
            o, b, profile.optimizer_state_follows_param))
        weights, grads, opt = weights + vw, grads + vg, opt + vo
        wdesc += f"; + {vdesc}"

    act = activation_breakdown(arch, inputs, profile, trainable)
    t = inputs.tokens
    L = arch.num_hidden_layers
    logits = act.logits_per_token * loss_tokens(inputs)  # GRPO/RLOO: the completions' (rl.py)
    bw_temp = act.backward_temp_per_token * t
    # saved activations: every layer's (no checkpointing), the checkpointed inputs, one layer
    all_layers = L * act.per_token_layer * t
    ckpt_inputs = L * act.checkpoint_per_token_layer * t
    one_layer = act.per_token_layer * t
    s2s = None
    if arch.is_encoder_decoder:
        # encoder over seq_len, decoder over target_seq_len, cross-attention, logits over the
        # decoder only (lintlora/estimate/seq2seq.py)
        from lintlora.estimate.seq2seq import seq2seq_activations

        s2s = seq2seq_activations(arch, inputs, profile, act.logits_per_token / max(1, arch.vocab_size))
        all_layers, ckpt_inputs, one_layer = s2s.all_layers, s2s.checkpointed, s2s.one_layer
        logits, bw_temp = s2s.logits, s2s.backward_temp
        weights += s2s.extra_weight_bytes
    # one dequantized weight (the largest block matrix) exists at a time in 4/8-bit matmuls
    dequant = 0.0
    head_dequant = 0.0
    if inputs.quant and inputs.quant not in ("mxfp4", "fp8"):  # MXFP4/FP8 kernels (or bf16) dequantize nothing whole
        db = profile.dequant_bytes or DTYPE_BYTES.get(inputs.compute_dtype, 2)
        # the largest quantized weight (fused expert parameters are not quantized modules)
        dequant = max((sh.d_in * sh.d_out for sh in arch.block_linears() if not sh.parameter),
                      default=0) * db
        if profile.quantize_lm_head and inputs.quant in ("nf4", "fp4"):
            # the 4-bit output layer is dequantized whole for each chunk's backward
            # (Profile.dequant_bytes)
            head_dequant = arch.lm_head_params * db
    framework = float(profile.framework_bytes)

    # The peak is the largest of the moments below, each with every buffer alive then (no
    # term is dropped from one moment and kept in another, so more activation memory can
    # never lower the peak). Gradients of frozen weights are never allocated; trainable
    # gradients of LoRA/QLoRA persist between steps (small); for full fine-tuning the
    # gradients appear during backward (``zero_grad(set_to_none=True)``, torch's default
    # since 2.0, frees them after each step).
    lm_head_grads = 0.0
    if full:
        # by the time the last decoder layer runs its backward, the output layer (or the tied
        # embedding) has its gradient: V × h in the parameter dtype
        lm_head_grads = arch.vocab_size * arch.hidden_size * pb
    persistent_grads = 0.0 if full else grads
    step_grads = grads
    in_bwd = in_bwd_head = 0.0
    if inputs.optimizer_in_bwd:
        from lintlora.estimate.framework_terms import optimizer_in_backward

        # no gradient buffers: one parameter's gradient and its step's temporary at a time
        in_bwd, in_bwd_head, in_bwd_note = optimizer_in_backward(arch, trainable, pb, full=full)
        persistent_grads, lm_head_grads, step_grads = 0.0, 0.0, 0.0
        notes.append(in_bwd_note)
    shard = None
    if is_sharded(inputs):
        # several ranks: what one rank holds (lintlora.estimate.sharding)
        shard = _shard(arch, inputs, profile, trainable, weights=weights, adapter_w=adapter_w,
                       grads=persistent_grads, step_grads=step_grads, opt=opt, n_train=n_train, pb=pb, full=full)
        weights, adapter_w, persistent_grads, step_grads, opt = (shard.weights, shard.adapter_weights,
                                                                 shard.gradients, shard.step_gradients,
                                                                 shard.optimizer_states)
        lm_head_grads = lm_head_grads / max(1, inputs.num_gpus) if inputs.zero_stage >= 2 or inputs.fsdp else lm_head_grads
        notes.extend(shard.notes)
    phases: list[tuple[str, dict[str, float]]] = []
    if inputs.gradient_checkpointing or inputs.activation_offload:
        # torchtune's OffloadActivations moves every saved tensor of at least 1 KiB to CPU (the
        # checkpointed layer inputs when checkpointing is on), as Unsloth's offloaded checkpointing
        # does with the layer inputs: only the layer whose backward runs is brought back
        offloaded = inputs.checkpoint_offload or profile.offload_checkpoints or inputs.activation_offload
        saved = 0.0 if offloaded else ckpt_inputs
        # (a) the loss: checkpointed layer inputs and the loss buffers;
        phases.append(("loss", {"gradients": persistent_grads, "activations": saved, "logits": logits,
                                "transient": dequant}))
        # (b) the top layer recomputed during its backward (loss buffers freed), with its
        # backward temporaries
        phases.append(("recompute", {"gradients": persistent_grads + lm_head_grads,
                                     "activations": saved + one_layer,
                                     "logits": 0.0, "transient": bw_temp + dequant + in_bwd}))
    else:
        # (a) the start of backward: every layer's saved activations and the loss buffers;
        phases.append(("backward start", {"gradients": persistent_grads, "activations": all_layers,
                                          "logits": logits, "transient": dequant}))
        # (b) the top layer's backward (loss buffers freed): all saved activations still
        # there plus that layer's backward temporaries
        phases.append(("layer backward", {"gradients": persistent_grads + lm_head_grads,
                                          "activations": all_layers,
                                          "logits": 0.0, "transient": bw_temp + dequant + in_bwd}))
    if head_dequant:
        # the output layer's backward: every layer's activations (or checkpointed inputs), the
        # kept logits and their gradients (LOSS_K's 4 bytes per token and vocabulary entry) and
        # the dequantized output layer
        act_now = phases[0][1]["activations"]
        head_k = min(LOSS_K["chunked"], act.logits_per_token / max(1, arch.vocab_size))
        if profile.output_cast_bytes and profile.loss_chunk_tokens:
            from lintlora.estimate.litgpt_terms import head_backward_k

            head_k = head_backward_k(DTYPE_BYTES.get(inputs.compute_dtype, 2), profile.output_cast_bytes)
        phases.append(("lm_head backward", {"gradients": persistent_grads, "activations": act_now,
                                            "logits": arch.vocab_size * head_k * t,
                                            "transient": head_dequant}))
    if profile.output_cast_bytes and profile.loss_chunk_tokens:
        # litgpt: the forward's end, with the previous step's fp32 logits and graph still bound
        # (lintlora.estimate.litgpt_terms)
        from lintlora.estimate.litgpt_terms import forward_end_phases, previous_step_bytes, validation_phase

        ratio = min(1.0, max(0.0, inputs.previous_batch_ratio))
        prev = previous_step_bytes(act.parts.get("linear_inputs", 0.0), L, t,
                                   bnb_keeps_input=inputs.quant in ("nf4", "fp4") and inputs.bnb_saves_input,
                                   checkpointing=inputs.gradient_checkpointing, previous_ratio=ratio)
        phases.extend(forward_end_phases(
            activations=phases[0][1]["activations"], gradients=persistent_grads, previous_step=prev,
            vocab=arch.vocab_size, tokens=t, seq_len=inputs.seq_len, chunk_tokens=profile.loss_chunk_tokens,
            compute_bytes=DTYPE_BYTES.get(inputs.compute_dtype, 2), output_bytes=profile.output_cast_bytes,
            head_dequant=head_dequant, previous_ratio=ratio))
        # validate() runs right after optimizer.step() and optimizer.zero_grad() (litgpt
        # finetune/lora.py: 8641822 lines 222-247, v0.4.13 lines 312-347; zero_grad sets the
        # gradients to None since torch 2.0), so no gradient is alive then, not even FSDP's
        # accumulated unsharded ones
        phases.append(validation_phase(gradients=0.0, previous_step=prev, vocab=arch.vocab_size, tokens=t,
                                       batch_size=inputs.batch_size, output_bytes=profile.output_cast_bytes,
                                       compute_bytes=DTYPE_BYTES.get(inputs.compute_dtype, 2), previous_ratio=ratio))
    # preference/RL phases: the reference forward on top of the loss moment, the generation
    # phase (lintlora.estimate.rl)
    phases.extend(extra_phases(arch, inputs, phases[0][1], persistent_grads))
    # (c) the optimizer step: activations freed, every trainable gradient present, and the
    # step's temporaries ~ one gradient-sized buffer (foreach AdamW, torch/optim/adamw.py
    # _multi_tensor_adamw)
    if in_bwd_head:
        # the output layer's own step: while every layer's activations are alive when it is
        # untied (stepped as soon as the loss's backward reaches it), after they are freed when
        # it is the tied embedding (stepped last)
        head_acts = 0.0 if arch.tie_word_embeddings else phases[0][1]["activations"]
        phases.append(("optimizer step in backward", {"gradients": in_bwd_head / 2, "activations": head_acts,
                                                      "logits": 0.0, "transient": in_bwd_head / 2}))
    if not inputs.optimizer_in_bwd:
        phases.append(("optimizer step", {"gradients": step_grads, "activations": 0.0, "logits": 0.0,
                                          "transient": step_grads}))
    if shard is not None:
        # gathered parameters live through forward/backward; the buckets through the whole step
        for name, m in phases:
            if name == "optimizer step" and shard.step_transient is not None:
                m["transient"] = shard.step_transient
            m["transient"] = m["transient"] + shard.buckets + (0.0 if name == "optimizer step" else shard.gathered)
    # the first of the largest wins, so a tie keeps the training-step reading
    phase, moment = max(phases, key=lambda ph: sum(ph[1].values()))
    breakdown_alloc = {
        "weights": int(weights),
        "adapter_weights": int(adapter_w),
        "gradients": int(moment["gradients"]),
        "optimizer_states": int(opt),
        "activations": int(moment["activations"]),
        "logits": int(moment["logits"]),
        "transient": int(moment["transient"]),
        "framework": int(framework),
    }
    if moment.get("kv_cache"):
        breakdown_alloc["kv_cache"] = int(moment["kv_cache"])
    if moment.get("previous_step"):
        breakdown_alloc["previous_step"] = int(moment["previous_step"])  # litgpt_terms.previous_step_bytes
    # load phase: P = max(P_load, P_train). The caching allocator keeps what the load phase
    # reserved (it never returns memory to the driver without torch.cuda.empty_cache()), and the
    # training step reuses those blocks, so the larger of the two peaks is what the counters show.
    load_weights, load_transient, load_desc = _load_phase(arch, inputs, profile, trainable)
    if shard is not None and shard.weights < load_weights:
        # sharded runs load the weights as shards (FSDP sync_module_states / ZeRO-3 zero.Init):
        # the single-GPU load phase does not apply
        load_weights, load_transient, load_desc = 0.0, 0.0, ""
    load_alloc = load_weights + load_transient
    train_alloc = sum(breakdown_alloc.values())
    if load_alloc > train_alloc:
        phase = "load"
        breakdown_alloc = {k: 0 for k in breakdown_alloc}
        breakdown_alloc["weights"] = int(load_weights)
        breakdown_alloc["transient"] = int(load_transient)
        notes.append(f"load phase dominates: {load_desc}; peak {load_alloc / 2**30:.2f} GiB allocated against "
                     f"{train_alloc / 2**30:.2f} GiB for a training step, and the caching allocator keeps "
                     "it reserved")
    elif load_transient:
        notes.append(f"load phase: {load_desc}; peak {load_alloc / 2**30:.2f} GiB allocated, below the "
                     "training step's")
    allocated, reserved, device, breakdown = _counters(breakdown_alloc, profile)
    vllm = vllm_reserved_bytes(inputs, gpu_memory_bytes)
    if vllm:
        # vLLM colocated: its own share of the GPU, beside the training process's blocks
        allocated, reserved, device = allocated + vllm, reserved + vllm, device + vllm
        breakdown["vllm_reserved"] = vllm
    if phase == "generation":
        notes.append(f"peak in the generation phase: KV cache {breakdown.get('kv_cache', 0) / 2**30:.2f} GiB for "
                     f"{inputs.generation_batch_size} completions × {inputs.seq_len} tokens")

    notes.append(f"framework profile: {profile.name}")
    notes.append(f"weights: {wdesc}")
    if not full and trainable is not None:
        notes.append(f"trainable: {_trainable_text(trainable, pb, sb, inputs)} + as many bytes of gradients; "
                     f"optimizer {odesc}")
    if s2s is not None:
        notes.extend(s2s.notes)
    else:
        notes.append(f"activations: {act.per_token_layer:,.0f} B per token per layer "
                     f"({', '.join(f'{k} {v:,.0f}' for k, v in act.parts.items() if v)}) × {t:,} tokens"
                     + (" (activation offloading: saved tensors on the CPU, one layer brought back for its backward)"
                        if inputs.activation_offload else
                        " (checkpointing: layer inputs offloaded to the CPU, one layer recomputed on the GPU)"
                        if inputs.gradient_checkpointing and (inputs.checkpoint_offload or profile.offload_checkpoints) else
                        f" (checkpointing: {L} layer inputs of {act.checkpoint_per_token_layer:.0f} B/token + one layer recomputed)"
                        if inputs.gradient_checkpointing else f" × {L} layers"))
        notes.append(f"loss buffers: vocab {arch.vocab_size:,} × {act.logits_per_token / max(1, arch.vocab_size):.1f} B per token "
                     f"({inputs.loss_impl or ('liger fused' if inputs.liger else profile.loss)})")
    if profile.output_cast_bytes and profile.loss_chunk_tokens and (inputs.loss_impl or profile.loss) == "chunked":
        from lintlora.estimate.litgpt_terms import loss_note

        notes.extend(loss_note(inputs.seq_len, profile.loss_chunk_tokens, DTYPE_BYTES.get(inputs.compute_dtype, 2),
                               profile.output_cast_bytes, previous_ratio=min(1.0, max(0.0, inputs.previous_batch_ratio)),
                               previous_step=int(breakdown.get("previous_step", 0)), phase=phase))
    notes.append(f"reserved = allocated × {profile.reserved_ratio} (caching-allocator slack); "
                 f"device = reserved + {profile.cuda_context_bytes / 1e6:.0f} MB CUDA context")
    return MemoryEstimate(
        allocated_bytes=int(allocated), reserved_bytes=reserved, device_bytes=int(device),
        breakdown=breakdown, assumptions=notes, rough=arch.rough, inputs=inputs,
        arch_name=arch.name, framework=profile.name, trainable=trainable,
        trainable_params=int(n_train), peak_phase=phase, gpu=gpu, gpu_memory_bytes=gpu_memory_bytes,
        paged_optimizer_bytes=int(paged_opt),
        activations_per_token_layer=act.per_token_layer,
        host_offload_bytes=int(shard.host_bytes) if shard is not None else 0,
        sharding=describe_sharding(inputs) if shard is not None else "",
    )
