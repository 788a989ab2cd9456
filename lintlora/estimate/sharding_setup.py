"""The sharding of a run, for the estimator: what ``setup.distributed`` says.

:func:`lintlora.extract.distributed.distributed_for` reads the launch, the accelerate config,
the DeepSpeed JSON, ``fsdp=``/``fsdp_config=`` and the dialects' keys into
:class:`lintlora.training_setup.Distributed`; this module only maps that section onto
:class:`~lintlora.estimate.memory.EstimateInputs` (no file is read in ``estimate/``):

* ``world_size`` -> ``num_gpus`` (``lintlora estimate --num-gpus`` still overrides it);
* ``zero_stage``; ``offload_optimizer``/``offload_param`` ``cpu``/``nvme`` -> host memory;
* ``reduce_bucket_size`` (``"auto"``: transformers fills ``hidden_size * hidden_size``,
  ``integrations/deepspeed.py`` ``trainer_config_process``), ``prefetch_bucket_size``
  (``"auto"``: ``0.9 * hidden_size * hidden_size``, same file), ``overlap_comm``;
* ``fsdp_sharding_strategy`` (``HYBRID_SHARD_ZERO2`` is priced as ``hybrid_shard``),
  ``fsdp_version``, ``fsdp_offload_params`` (parameters, gradients and optimizer states on the
  host: torch ``CPUOffload(offload_params=True)``), ``fsdp_activation_checkpointing``
  (checkpointing per wrapped block);
* ``gradient_accumulation_steps`` of the training arguments, else the DeepSpeed JSON's
  explicit value.

A setup with no ``distributed`` section (built without its run) falls back on the launch
evidence the extraction recorded in the file itself (litgpt ``devices``, a torchtune
distributed header), as before the run was assembled; nothing else.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from lintlora.estimate.sharding import FSDP_STRATEGIES

__all__ = ["sharding_from_setup"]

_PROCS = re.compile(r"on (\d{1,5}) processes")
MAX_RANKS = 1 << 16
"""Largest number of ranks priced (65,536)."""


def _known(setup: Any, key: str) -> Any:
    try:
        s = setup.get(key)
    except (AttributeError, KeyError):
        return None
    if s is None or not s.known or s.origin.name == "LIBRARY_DEFAULT":
        return None
    return s


def _v(section: Any, name: str) -> Any:
    s = getattr(section, name, None)
    return s.value if s is not None and s.known else None


def _where(section: Any, name: str) -> str:
    s = getattr(section, name, None)
    return f" ({s.source})" if s is not None and s.source else ""


def _int(v: Any, lo: int, hi: int) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi else None


def _from_distributed(d: Any, ch: dict[str, Any], notes: list[str], hidden_size: int) -> int | None:
    """Fields of ``d`` (a :class:`Distributed`) into ``ch``; returns the world size if known."""
    backend = _v(d, "backend")
    stage = _int(_v(d, "zero_stage"), 0, 3)
    if backend == "deepspeed" or (backend is None and stage is not None):
        if stage is not None:
            ch["zero_stage"] = stage
        for name in ("offload_optimizer", "offload_param"):
            if _v(d, name) in ("cpu", "nvme"):
                ch[name] = True
        rbs = _v(d, "reduce_bucket_size")
        if rbs == "auto":
            ch["reduce_bucket_size"] = hidden_size * hidden_size
            notes.append(f"reduce_bucket_size \"auto\": transformers fills hidden_size² = {hidden_size * hidden_size:,}")
        elif _int(rbs, 1, 10**12) is not None:
            ch["reduce_bucket_size"] = rbs
        pf = _v(d, "prefetch_bucket_size")
        if pf == "auto":
            # transformers integrations/deepspeed.py: fill_only(..., int(0.9 * hidden_size * hidden_size))
            ch["prefetch_bucket_size"] = int(0.9 * hidden_size * hidden_size)
        elif _int(pf, 0, 10**12) is not None:
            ch["prefetch_bucket_size"] = pf
        oc = _v(d, "overlap_comm")
        if isinstance(oc, bool):
            ch["overlap_comm"] = oc
        if "zero_stage" in ch:
            notes.append(f"DeepSpeed ZeRO-{ch['zero_stage']}{_where(d, 'zero_stage')}"
                         + (", offload_optimizer " + str(_v(d, "offload_optimizer")) if ch.get("offload_optimizer") else "")
                         + (", offload_param " + str(_v(d, "offload_param")) if ch.get("offload_param") else ""))
    elif backend == "fsdp":
        strategy = _v(d, "fsdp_sharding_strategy")
        s = str(strategy or "FULL_SHARD").lower()
        s = "hybrid_shard" if s == "hybrid_shard_zero2" else s
        if s in FSDP_STRATEGIES:
            ch["fsdp"] = s
        version = _int(_v(d, "fsdp_version"), 1, 2)
        if version is not None:
            ch["fsdp_version"] = version
        if _v(d, "fsdp_offload_params") is True:
            ch["offload_param"] = ch["offload_optimizer"] = True
        if _v(d, "fsdp_activation_checkpointing") is True:
            ch["gradient_checkpointing"] = True
        notes.append(f"FSDP{version or ''} {ch.get('fsdp', s)}{_where(d, 'fsdp_sharding_strategy')}"
                     + (" with CPU offload" if ch.get("offload_param") else "")
                     + (", activation checkpointing per wrapped block" if ch.get("gradient_checkpointing") else ""))
    gas = _int(_v(d, "gradient_accumulation_steps"), 1, 1 << 20)
    if gas is not None and "gradient_accumulation_steps" not in ch:
        ch["gradient_accumulation_steps"] = gas
    more = d.extra.get("notes") if getattr(d, "extra", None) else None
    if more is not None and isinstance(more.value, tuple):
        notes.extend(str(n) for n in more.value)
    return _int(_v(d, "world_size"), 1, MAX_RANKS)


def _from_evidence(setup: Any, inputs: Any, ch: dict[str, Any], notes: list[str]) -> int | None:
    """The ranks the file itself states (no ``distributed`` section): litgpt devices, a torchtune
    distributed recipe's header."""
    n = None
    fw = getattr(inputs, "framework", "")
    for ev in getattr(setup, "launch", ()) or ():
        if ev.kind == "multi-gpu" and ev.detail.startswith("devices: "):
            try:
                n = int(ev.detail.split(":", 1)[1])
            except ValueError:
                pass
        if ev.kind == "fsdp" and fw == "torchtune":
            m = _PROCS.search(ev.detail)
            if m:
                n = int(m.group(1))
                ch.setdefault("fsdp", "full_shard")
                ch.setdefault("fsdp_version", 2)  # torchtune's recipes shard with fully_shard
    if n is not None and n > 1 and fw == "litgpt" and "fsdp" not in ch:
        ch.update(fsdp="full_shard", fsdp_version=2, gradient_checkpointing=True)
    return n


_STORAGE_DTYPES = ("bfloat16", "float16", "float32", "uint8")


def _quant_storage(setup: Any, inputs: Any, ch: dict[str, Any]) -> None:
    """``bnb_4bit_quant_storage`` of a 4-bit bitsandbytes base: the script's
    ``BitsAndBytesConfig`` value; axolotl and LLaMA-Factory set it themselves (LLaMA-Factory
    ``src/llamafactory/model/model_utils/quantization.py``: ``bnb_4bit_quant_storage=
    model_args.compute_dtype  # crucial for fsdp+qlora``; axolotl ``src/axolotl/loaders/model.py``
    builds its ``bnb_config`` with ``bnb_4bit_quant_storage: torch.bfloat16``)."""
    if getattr(inputs, "quant", None) not in ("nf4", "fp4") or getattr(inputs, "quant_storage", None):
        return
    qs = _known(setup, "quantization.bnb_4bit_quant_storage")
    if qs is not None and isinstance(qs.value, str):
        v = qs.value.rsplit(".", 1)[-1].lower()
        if v in _STORAGE_DTYPES:
            ch["quant_storage"] = v
    elif getattr(inputs, "framework", "") == "llama-factory":
        ch["quant_storage"] = getattr(inputs, "compute_dtype", None) or "bfloat16"
    elif getattr(inputs, "framework", "") == "axolotl":
        ch["quant_storage"] = "bfloat16"


def sharding_from_setup(setup: Any, inputs: Any, notes: list[str], hidden_size: int) -> Any:
    """``inputs`` with the sharding of ``setup.distributed`` (see the module docstring); notes
    appended."""
    ch: dict[str, Any] = {}
    gas = _known(setup, "training.gradient_accumulation_steps")
    if gas is not None and isinstance(gas.value, int) and 1 <= gas.value <= 1 << 20:
        ch["gradient_accumulation_steps"] = int(gas.value)
    d = getattr(setup, "distributed", None)
    if d is not None:
        n = _from_distributed(d, ch, notes, hidden_size)
    else:
        n = _from_evidence(setup, inputs, ch, notes)
    _quant_storage(setup, inputs, ch)
    if n is not None and n > 1:
        ch["num_gpus"] = min(n, MAX_RANKS)
        if getattr(inputs, "framework", "") == "litgpt" and ch.get("fsdp"):
            notes.append("litgpt with several devices: FULL_SHARD with activation checkpointing per Block "
                         "(litgpt finetune/lora.py ModelParallelStrategy, FSDP2)")
    elif (ch.get("zero_stage") or ch.get("fsdp")) and (getattr(inputs, "num_gpus", 1) or 1) <= 1:
        if n == 1:
            notes.append("one process: nothing is partitioned on one rank (the single-GPU estimate)")
        else:
            notes.append("the number of GPUs is set at launch, not in the file: priced as one GPU (nothing is "
                         "partitioned on one rank); --num-gpus N for the per-GPU figure")
    return replace(inputs, **ch) if ch else inputs
