"""Per-rank memory of data-parallel training on several GPUs: DDP, DeepSpeed ZeRO-1/2/3, FSDP.

:func:`shard_terms` takes the single-GPU terms :func:`lintlora.estimate.memory.estimate_memory`
computed (bytes, ``torch.cuda.max_memory_allocated`` counter) and returns what one rank holds.
Activations, logits and the other per-micro-batch buffers are per rank and unchanged (each rank
runs its own micro-batch). Every term below is read in the library source; the commits are:

* DeepSpeed ``microsoft/DeepSpeed@38327e07f6cd39b63418f60cedd1651b0be3e7c3``:
  ``deepspeed/runtime/zero/config.py`` (defaults: ``reduce_bucket_size`` 5e8 elements,
  ``stage3_prefetch_bucket_size`` 5e7, ``stage3_max_live_parameters`` 1e9,
  ``stage3_param_persistence_threshold`` 1e5, ``contiguous_gradients`` True, ``overlap_comm``
  None -> True for stage 3 only (``overlap_comm_valid``)); ``stage_1_and_2.py`` (``backward``:
  with ``contiguous_gradients`` an ``ipg_buffer`` of ``reduce_bucket_size`` elements in the
  16-bit dtype, a second one with ``overlap_comm``; ``single_partition_of_fp32_groups``: an fp32
  master copy of this rank's partition of the trainable parameters, line 409); ``stage3.py``
  (``__ipg_bucket_flat_buffer`` of ``reduce_bucket_size`` elements, line 538;
  ``fp32_partitioned_groups_flat``: the fp32 masters of the partition; ``prefetch_bucket_size``
  and ``max_live_parameters`` bound what is gathered ahead).
* FSDP1 (``torch/distributed/fsdp``, torch 2.x): ``_wrap_utils._validate_frozen_params``
  warns that a unit mixing frozen and trainable parameters under ``use_orig_params=True`` has
  "gradient memory usage ... total_param_numel numel instead of nonfrozen_param_numel numel
  before sharding via reduce-scatter" (one flat parameter, one ``.grad`` for all of it), and
  with ``use_orig_params=False`` refuses such a unit; ``FlatParamHandle`` flattens one dtype
  per unit ("Must flatten tensors with uniform dtype"); ``FullyShardedDataParallel.no_sync``:
  "FSDP will accumulate the full model gradients (instead of gradient shards) until the
  eventual sync" (gradient accumulation under ``no_sync``: Lightning Fabric's
  ``no_backward_sync``, accelerate's ``accumulate`` unless ``sync_each_batch``, accelerate
  ``src/accelerate/utils/dataclasses.py`` @16cb6eb8: "Setting to True may reduce memory
  requirements when using gradient accumulation with distributed training").
  ``ShardingStrategy``: FULL_SHARD (parameters, gradients and optimizer states sharded,
  parameters resharded after forward), SHARD_GRAD_OP (not resharded after forward: every unit
  stays gathered from its forward to its backward), HYBRID_SHARD (FULL_SHARD within a node,
  replicated across nodes), NO_SHARD (DDP). Backward prefetch (``BACKWARD_PRE``, the default)
  gathers the next unit while the current one runs: two units gathered at once.
* FSDP2 (``fully_shard``): per-parameter sharding (DTensor), so frozen parameters get no
  gradient and dtypes may differ per parameter; ``set_requires_gradient_sync(False)``
  accumulates unsharded gradients of the trainable parameters only.

Measured on the CPU (``bench/sharding_gloo.py``, torch 2.13.0, gloo, 2 and 4 ranks, a
Llama-shaped toy with LoRA on q, v): FSDP2 parameter and gradient bytes per rank, FSDP1's flat
gradient (whole unit / N) and its unsharded size under ``no_sync`` match these rules exactly.
* Lightning Fabric ``FSDPStrategy`` (``Lightning-AI/pytorch-lightning@7f0c3436``
  ``src/lightning/fabric/strategies/fsdp.py:181``: ``use_orig_params`` defaults to True): litgpt
  before its ``ModelParallelStrategy`` (``Lightning-AI/litgpt@8641822`` ``finetune/lora.py``:
  ``FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block})`` and
  ``fabric.no_backward_sync(model, enabled=is_accumulating)``; global batch 128) wraps each
  ``Block`` with its LoRA parameters inside: mixed units. Current litgpt
  (``@26857050`` ``litgpt/finetune/lora.py:158``) uses ``ModelParallelStrategy`` (FSDP2).
  transformers/trl with peft wrap the trainable leaves apart with peft's
  ``fsdp_auto_wrap_policy`` (``src/peft/utils/other.py``): no mixed units.
* DDP (``torch/nn/parallel/distributed.py``, ``bucket_cap_mb=25``; ``reducer.cpp``
  ``initialize_buckets``): the buckets hold a flat copy of every gradient of a parameter that
  requires grad (unless ``gradient_as_bucket_view=True``): one more copy of the trainable
  gradients, in buckets of 25 MB.
* QLoRA: bitsandbytes ``Params4bit`` are stored as uint8 unless ``bnb_4bit_quant_storage`` is
  the model's dtype (transformers docs "FSDP-QLoRA"; bitsandbytes 0.43.0 added
  ``quant_storage``); FSDP flattens one dtype per unit, so without it the 4-bit weights are not
  sharded (FSDP1 raises or the unit is left unwrapped): priced as every rank holding them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ShardedTerms", "shard_terms", "FSDP_STRATEGIES", "ZERO_REDUCE_BUCKET", "ZERO3_PREFETCH_BUCKET",
           "ZERO3_MAX_LIVE", "DDP_BUCKET_CAP_BYTES", "is_sharded", "describe"]

FSDP_STRATEGIES = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard")
"""``torch.distributed.fsdp.ShardingStrategy`` names, lower case (accelerate ``fsdp_sharding_strategy``)."""

ZERO_REDUCE_BUCKET = 500_000_000
"""DeepSpeed ``reduce_bucket_size`` default, elements (``runtime/zero/config.py``: ``pp_int(5e8)``)."""
ZERO3_PREFETCH_BUCKET = 50_000_000
"""DeepSpeed ``stage3_prefetch_bucket_size`` default, elements (``pp_int(5e7)``)."""
ZERO3_MAX_LIVE = 1_000_000_000
"""DeepSpeed ``stage3_max_live_parameters`` default, elements (``pp_int(1e9)``)."""
DDP_BUCKET_CAP_BYTES = 25 * 2**20
"""``DistributedDataParallel(bucket_cap_mb=25)`` (torch/nn/parallel/distributed.py)."""
GPUS_PER_NODE = 8
"""HYBRID_SHARD shards within a node; a node is taken as 8 GPUs (an assumption, stated)."""


@dataclass(frozen=True)
class ShardedTerms:
    """What one rank holds (bytes, allocated counter).

    Attributes:
        weights, adapter_weights, optimizer_states: resident at every moment.
        gradients: trainable gradients resident between steps (``persistent``) and at the
            optimizer step (``step_gradients``).
        gathered: parameters all-gathered during forward/backward (absent at the optimizer step).
        buckets: communication buffers alive at every moment of a step (ZeRO ipg buckets, DDP
            bucket copies).
        host_bytes: what CPU offload keeps in host RAM (not GPU memory).
        notes: the assumption lines (the first names the sharding and the ranks).
    """

    weights: float
    adapter_weights: float
    gradients: float
    step_gradients: float
    optimizer_states: float
    gathered: float = 0.0
    buckets: float = 0.0
    host_bytes: float = 0.0
    notes: list[str] = field(default_factory=list)
    step_transient: float | None = None
    """The optimizer step's temporaries (``None``: one buffer the size of ``step_gradients``,
    foreach AdamW's, as on one GPU)."""


def is_sharded(inputs) -> bool:
    """Whether ``inputs`` describe more than one data-parallel rank (ZeRO or FSDP on one rank
    partitions nothing: the single-GPU estimate)."""
    return (inputs.num_gpus or 1) > 1


def describe(inputs) -> str:
    """``"ZeRO-3 × 4 ranks"``, ``"FSDP full_shard × 2 ranks"``, ``"DDP × 2 ranks"``."""
    n = max(1, inputs.num_gpus or 1)
    if inputs.zero_stage:
        what = f"DeepSpeed ZeRO-{inputs.zero_stage}"
    elif inputs.fsdp:
        what = f"FSDP{inputs.fsdp_version} {inputs.fsdp}"
    else:
        what = "DDP"
    return f"{what} × {n} rank{'s' if n != 1 else ''}"


def _gb(x: float) -> str:
    return f"{x / 2**30:.2f} GiB"


def shard_terms(arch, inputs, *, weights: float, adapter_weights: float, gradients: float, step_gradients: float,
                optimizer_states: float, n_trainable: int, unit_params: int, root_params: int,
                weight_bytes: float, grad_bytes: int, optimizer_fp32_bytes: float, full: bool) -> ShardedTerms:
    """The per-rank terms for ``inputs.num_gpus`` ranks under ``inputs.zero_stage`` /
    ``inputs.fsdp`` (see the module docstring for each rule and its source).

    Args:
        weights, adapter_weights, gradients, step_gradients, optimizer_states: the single-GPU
            terms (bytes); ``gradients`` is what persists between steps, ``step_gradients``
            what the optimizer step holds.
        n_trainable: trainable parameters (LoRA + modules_to_save, or all for full fine-tuning).
        unit_params: parameters of the largest wrapped block (one decoder layer).
        root_params: parameters outside the blocks (embedding, output layer, final norm): FSDP's
            root unit.
        weight_bytes: bytes per base-weight element as gathered (the 16-bit dtype, or the 4-bit
            storage per element).
        grad_bytes: bytes per gradient element (the flat parameter's dtype).
        optimizer_fp32_bytes: DeepSpeed's optimizer-state bytes per trainable parameter when the
            states are fp32 (DeepSpeed keeps its partition in fp32), without the fp32 master.
        full: full fine-tuning (the base weights are the trainable ones).
    """
    n = max(1, int(inputs.num_gpus or 1))
    head = describe(inputs)
    notes: list[str] = []
    frozen = weights  # base weights (for full fine-tuning: the trainable weights themselves)
    train_numel = n_trainable
    if inputs.zero_stage:
        return _zero(inputs, n, head, notes, frozen, adapter_weights, gradients, step_gradients, train_numel,
                     unit_params, weight_bytes, grad_bytes, optimizer_fp32_bytes, full, arch)
    if inputs.fsdp and inputs.fsdp != "no_shard":
        return _fsdp(inputs, n, head, notes, frozen, adapter_weights, gradients, step_gradients, optimizer_states,
                     train_numel, unit_params, root_params, weight_bytes, grad_bytes, full, arch)
    # DDP (or FSDP NO_SHARD, which is DDP with FSDP's bookkeeping): a full replica per rank and the
    # buckets' copy of every trainable gradient
    bucket = max(gradients, step_gradients) if n > 1 else 0.0  # in the gradients' own dtype
    notes.append(f"{head}: every rank holds the whole model, its gradients and optimizer states (data "
                 f"parallel replicas); + {_gb(bucket)} DDP gradient buckets (a flat copy of the "
                 f"{train_numel:,} trainable gradients in buckets of {DDP_BUCKET_CAP_BYTES // 2**20} MB, "
                 "torch DistributedDataParallel bucket_cap_mb=25)")
    return ShardedTerms(frozen, adapter_weights, gradients, step_gradients, optimizer_states, buckets=bucket,
                        notes=notes)


def _quant_unsharded(inputs, notes: list[str], what: str) -> bool:
    """A bitsandbytes 4-bit base without ``bnb_4bit_quant_storage`` = the model's dtype is not
    sharded (said in ``notes``)."""
    if inputs.quant not in ("nf4", "fp4"):
        return False
    if inputs.quant_storage and inputs.quant_storage == inputs.weight_dtype:
        return False
    notes.append(f"QLoRA under {what} without bnb_4bit_quant_storage={inputs.weight_dtype}: the 4-bit weights are "
                 "uint8 Params4bit, which FSDP/ZeRO-3 cannot flatten with the 16-bit parameters, so they are not "
                 "sharded (every rank holds all of them; FSDP1 may raise at prepare instead). Set "
                 f"bnb_4bit_quant_storage={inputs.weight_dtype} (--quant-storage {inputs.weight_dtype})")
    return True


def _zero(inputs, n, head, notes, frozen, adapter_w, grads, step_grads, train_numel, unit_params, weight_bytes,
          grad_bytes, opt32, full, arch) -> ShardedTerms:
    stage = int(inputs.zero_stage)
    bucket_el = inputs.reduce_bucket_size or ZERO_REDUCE_BUCKET
    # DeepSpeed's optimizer keeps an fp32 master of its partition and fp32 states
    master = 4.0 * train_numel
    opt_all = master + opt32 * train_numel
    opt = opt_all / n
    host = 0.0
    parts = [f"optimizer states {_gb(opt_all)} (fp32 master + {opt32:.0f} B/param states of {train_numel:,} "
             f"trainable params) / {n}"]
    # the gradients: stage 1 keeps them all, stage >= 2 its partition (in fp32 for the step)
    if stage >= 2:
        grads_rank = grads / n
        step_rank = step_grads / n + 4.0 * train_numel / n  # + the fp32 gradient of the partition
        parts.append(f"gradients / {n}")
    else:
        grads_rank = grads
        step_rank = step_grads + 4.0 * train_numel / n
    # the contiguous-gradient buckets: reduce_bucket_size elements in the 16-bit dtype, two with
    # overlap_comm (its default is True for stage 3 only)
    overlap = inputs.overlap_comm if inputs.overlap_comm is not None else stage == 3
    bucket_numel = bucket_el * (2 if overlap and stage < 3 else 1)
    # the buckets are in the engine's 16-bit dtype (self.dtype: fp16/bf16 enabled), fp32 otherwise
    bucket_b = 2 if inputs.compute_dtype in ("bfloat16", "float16") else 4
    buckets = bucket_numel * bucket_b
    parts.append(f"reduce buckets {bucket_numel:,} elements × {bucket_b} B (reduce_bucket_size={bucket_el:,}"
                 f"{', overlap_comm: two' if overlap and stage < 3 else ''})")
    weights, gathered = frozen, 0.0
    adapter = adapter_w
    if stage == 3:
        if _quant_unsharded(inputs, notes, "ZeRO-3"):
            adapter = adapter_w / n
        else:
            weights = frozen / n
            adapter = adapter_w / n
            # the module being run is gathered whole, the prefetch bucket ahead of it; both within
            # stage3_max_live_parameters
            prefetch = inputs.prefetch_bucket_size if inputs.prefetch_bucket_size is not None else ZERO3_PREFETCH_BUCKET
            live = min(ZERO3_MAX_LIVE, unit_params + prefetch)
            gathered = live * weight_bytes
            parts.append(f"weights / {n}; gathered at a time: one layer ({unit_params:,} params) + the "
                         f"prefetch bucket ({prefetch:,}) × {weight_bytes:g} B (stage3_prefetch_bucket_size, "
                         f"stage3_max_live_parameters={ZERO3_MAX_LIVE:,}); parameters under "
                         "stage3_param_persistence_threshold=1e5 elements (norms, biases) stay whole (not counted apart)")
    if inputs.offload_optimizer:
        # the fp32 masters, the states and the fp32 gradient partition live in host RAM
        host += opt + 4.0 * train_numel / n
        step_rank -= 4.0 * train_numel / n
        opt = 0.0
        parts.append("offload_optimizer cpu: optimizer states, fp32 masters and fp32 gradients in host RAM")
    if inputs.offload_param:
        if stage == 3:
            host += weights
            weights = 0.0
            parts.append("offload_param cpu: the parameter partitions in host RAM (gathered to the GPU per module)")
        else:
            notes.append(f"offload_param applies to ZeRO-3 only (DeepSpeed ignores it at stage {stage})")
    notes.insert(0, f"{head}: " + "; ".join(parts))
    if host:
        notes.append(f"host RAM for offloading: {_gb(host)} per rank (not GPU memory)")
    return ShardedTerms(weights, adapter, grads_rank, max(0.0, step_rank), opt, gathered=gathered, buckets=buckets,
                        host_bytes=host, notes=notes)


def _fsdp(inputs, n, head, notes, frozen, adapter_w, grads, step_grads, opt, train_numel, unit_params, root_params,
          weight_bytes, grad_bytes, full, arch) -> ShardedTerms:
    strategy = inputs.fsdp
    shard_n = n
    if strategy == "hybrid_shard":
        shard_n = min(n, GPUS_PER_NODE)
        notes.append(f"HYBRID_SHARD: sharded within a node of {GPUS_PER_NODE} GPUs (assumed), replicated across nodes")
    parts = []
    v1 = inputs.fsdp_version == 1
    # FSDP1 units that mix frozen and trainable parameters (litgpt's Block wrapping with
    # use_orig_params=True): the flat parameter's gradient is the whole unit's
    mixed = v1 and not full and inputs.framework == "litgpt"
    if v1 and not full and not mixed:
        notes.append("FSDP1 with peft: the trainable leaves wrapped apart (peft fsdp_auto_wrap_policy, as "
                     "transformers/trl examples do), so the frozen flat parameters have no gradient, and peft's "
                     "fp32 adapters and the 16-bit base sit in different flat parameters (FSDP1 flattens one dtype "
                     "per unit: 'Must flatten tensors with uniform dtype' otherwise) (assumed)")
    quant_whole = _quant_unsharded(inputs, notes, f"FSDP{inputs.fsdp_version}")
    weights = frozen if quant_whole else frozen / shard_n
    adapter = adapter_w / shard_n
    optim = opt / shard_n
    parts.append(f"weights{' (not the 4-bit ones)' if quant_whole else ''}, adapters and optimizer states / {shard_n}")
    block_numel = max(0, arch.total_params - root_params)
    if mixed:
        grads_rank = block_numel * grad_bytes / shard_n + grads / shard_n
        unsharded_unit_grad = unit_params * grad_bytes
        parts.append(f"gradients: each Block is one flat parameter with its LoRA weights (use_orig_params=True), so its "
                     f"gradient covers all {unit_params:,} params of the unit, sharded / {shard_n} "
                     f"({_gb(block_numel * grad_bytes / shard_n)})")
    else:
        grads_rank = grads / shard_n
        unsharded_unit_grad = (train_numel / max(1, arch.num_hidden_layers)) * grad_bytes
        parts.append(f"gradients / {shard_n}")
    step_rank = step_grads / shard_n if not mixed else grads_rank
    # the optimizer steps the trainable parameters' shards only
    step_tmp = step_grads / shard_n
    accum = max(1, inputs.gradient_accumulation_steps or 1)
    if accum > 1 and v1:
        # no_sync: the full (unsharded) gradients accumulate until the sync step, whose
        # reduce-scatter frees them unit by unit (the step sees the shards)
        unsharded = block_numel * grad_bytes if mixed else max(grads, step_grads)
        grads_rank = max(grads_rank, unsharded)
        parts.append(f"gradient accumulation ({accum} micro-batches) under no_sync: unsharded gradients accumulate "
                     f"({_gb(unsharded)}; FullyShardedDataParallel.no_sync)")
    # the gathered units: the largest (the root's embedding/output layer, or a layer) and the
    # prefetched next one; SHARD_GRAD_OP keeps every unit gathered from its forward to its backward
    if quant_whole:
        gathered = 0.0
    elif strategy == "shard_grad_op":
        gathered = frozen * (1 - 1 / shard_n)
        parts.append(f"SHARD_GRAD_OP: parameters stay gathered between forward and backward (+ {_gb(gathered)})")
    else:
        gathered = (max(unit_params, root_params) + unit_params) * weight_bytes
        parts.append(f"all-gathered: the largest unit ({max(unit_params, root_params):,} params) + the prefetched "
                     f"next layer ({unit_params:,}) × {weight_bytes:g} B ({_gb(gathered)})")
    gathered += unsharded_unit_grad
    parts.append(f"one unit's unsharded gradient before reduce-scatter ({_gb(unsharded_unit_grad)})")
    if inputs.offload_param or inputs.offload_optimizer:
        # FSDP CPUOffload(offload_params=True) moves the sharded parameters, their gradients and
        # (the optimizer then steps on the CPU) its states to host RAM
        host = weights + adapter + grads_rank + optim
        notes.insert(0, f"{head}: " + "; ".join(parts) + "; CPUOffload(offload_params=True): parameter shards, "
                     "gradients and optimizer states in host RAM")
        notes.append(f"host RAM for offloading: {_gb(host)} per rank (not GPU memory)")
        return ShardedTerms(0.0, 0.0, 0.0, 0.0, 0.0, gathered=gathered, host_bytes=host, notes=notes,
                            step_transient=0.0)
    notes.insert(0, f"{head}: " + "; ".join(parts))
    return ShardedTerms(weights, adapter, grads_rank, step_rank, optim, gathered=gathered, notes=notes,
                        step_transient=step_tmp)

