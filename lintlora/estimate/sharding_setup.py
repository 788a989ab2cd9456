"""The sharding a training file states, for the script path of the estimator.

What the extraction already carries (no launch script is read here; launch discovery is other
work):

* TrainingArguments / axolotl / LLaMA-Factory ``deepspeed``: a DeepSpeed JSON (a path, read with
  :func:`lintlora.safeio.read_text_bounded` inside the project, or a literal dict):
  ``zero_optimization.stage``, ``offload_optimizer.device`` / ``offload_param.device``
  (``cpu``/``nvme``: host), ``reduce_bucket_size`` (``"auto"``: transformers fills
  ``hidden_size * hidden_size``, ``integrations/deepspeed.py`` ``trainer_config_process``),
  ``stage3_prefetch_bucket_size`` (``"auto"``: ``0.9 * hidden_size * hidden_size``, same file),
  ``overlap_comm``;
* ``fsdp``: TrainingArguments' option string (``"full_shard auto_wrap offload"``; ``True`` is
  ``full_shard``: transformers ``training_args.py``), axolotl's list (joined);
* ``gradient_accumulation_steps``;
* litgpt ``devices`` > 1 (its FSDP default) and torchtune ``*_distributed`` recipes named with
  ``--nproc_per_node N`` in the config's header (the extraction's launch evidence).

The number of ranks is known only for the last two; for the others the file's sharding is kept
in the inputs and applies when ``--num-gpus N`` is given (one rank partitions nothing, so the
single-GPU estimate stands and says so).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from typing import Any

from lintlora.estimate.sharding import FSDP_STRATEGIES

__all__ = ["sharding_from_setup", "parse_deepspeed_config", "files_consulted", "MAX_DS_CONFIG_BYTES"]

MAX_DS_CONFIG_BYTES = 1 << 20
"""A DeepSpeed JSON larger than 1 MiB is refused (real ones are a few KB)."""
_PROCS = re.compile(r"on (\d{1,5}) processes")


def _known(setup: Any, key: str) -> Any:
    try:
        s = setup.get(key)
    except (AttributeError, KeyError):
        return None
    if s is None or not s.known or s.origin.name == "LIBRARY_DEFAULT":
        return None
    return s


def parse_deepspeed_config(cfg: Any, hidden_size: int) -> tuple[dict[str, Any], list[str]]:
    """The :class:`~lintlora.estimate.memory.EstimateInputs` fields of a DeepSpeed config dict
    and notes; values of the wrong type are left out (said so)."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    if not isinstance(cfg, dict):
        return out, ["DeepSpeed config is not a JSON object: not read"]
    zo = cfg.get("zero_optimization")
    if not isinstance(zo, dict):
        return out, notes
    stage = zo.get("stage")
    if isinstance(stage, int) and not isinstance(stage, bool) and 0 <= stage <= 3:
        out["zero_stage"] = stage
    elif stage is not None:
        notes.append(f"DeepSpeed zero_optimization.stage {stage!r} is not 0-3: not used")
    for key, field in (("offload_optimizer", "offload_optimizer"), ("offload_param", "offload_param")):
        v = zo.get(key)
        if isinstance(v, dict) and v.get("device") in ("cpu", "nvme"):
            out[field] = True
    rbs = zo.get("reduce_bucket_size")
    if rbs == "auto":
        out["reduce_bucket_size"] = hidden_size * hidden_size
        notes.append(f"reduce_bucket_size \"auto\": transformers fills hidden_size² = {hidden_size * hidden_size:,}")
    elif isinstance(rbs, (int, float)) and not isinstance(rbs, bool) and 0 < rbs <= 1e12:
        out["reduce_bucket_size"] = int(rbs)
    pf = zo.get("stage3_prefetch_bucket_size")
    if pf == "auto":
        # transformers integrations/deepspeed.py: fill_only(..., int(0.9 * hidden_size * hidden_size))
        out["prefetch_bucket_size"] = int(0.9 * hidden_size * hidden_size)
    elif isinstance(pf, (int, float)) and not isinstance(pf, bool) and 0 <= pf <= 1e12:
        out["prefetch_bucket_size"] = int(pf)
    oc = zo.get("overlap_comm")
    if isinstance(oc, bool):
        out["overlap_comm"] = oc
    return out, notes


def _ds_json_candidates(setup: Any, value: str) -> tuple[list[str], str | None]:
    """The paths :func:`_read_ds_json` tries for a ``deepspeed=`` value, in order (the
    script's folder, then the project root), and why it stops before the next one (``"outside
    the project"``), or ``(paths, None)``."""
    from lintlora.safeio import is_within, project_root

    if len(value) > 4096 or "\x00" in value:
        return [], "the path is not one"
    here = os.path.dirname(os.path.abspath(setup.path))
    root = project_root(setup.path)
    out: list[str] = []
    for base in (here, root):
        p = os.path.normpath(os.path.join(base, value))
        if not is_within(p, root):
            return out, "outside the project"
        out.append(p)
    return out, None


def files_consulted(setup: Any) -> tuple[str, ...]:
    """The DeepSpeed JSON files :func:`sharding_from_setup` looks at for ``setup`` (absolute,
    present or not): what an estimate of it depends on besides the setup, returned as data for
    the results cache (the caller, :class:`lintlora.context.Context`, collects them)."""
    ds = _known(setup, "training.deepspeed")
    if ds is None or not ds.value or isinstance(ds.value, dict) or not getattr(setup, "path", None):
        return ()
    return tuple(_ds_json_candidates(setup, str(ds.value))[0])


def _read_ds_json(setup: Any, value: str) -> tuple[Any, str | None]:
    """The JSON a ``deepspeed=`` path names, read within the project, or ``(None, why)``."""
    from lintlora.safeio import UnsafeFileError, read_text_bounded

    candidates, stop = _ds_json_candidates(setup, value)
    for p in candidates:
        if os.path.isfile(p):
            try:
                return json.loads(read_text_bounded(p, MAX_DS_CONFIG_BYTES)), None
            except (OSError, UnsafeFileError, UnicodeDecodeError, ValueError, RecursionError) as exc:
                return None, f"unreadable ({type(exc).__name__}: {str(exc)[:120]})"
    return None, stop or "not found in the project"


def sharding_from_setup(setup: Any, inputs: Any, notes: list[str], hidden_size: int) -> Any:
    """``inputs`` with the sharding the file states (see the module docstring); notes appended."""
    ch: dict[str, Any] = {}
    gas = _known(setup, "training.gradient_accumulation_steps")
    if gas is not None and isinstance(gas.value, int) and 1 <= gas.value <= 1 << 20:
        ch["gradient_accumulation_steps"] = int(gas.value)
    ds = _known(setup, "training.deepspeed")
    if ds is not None and ds.value:
        cfg, why = (ds.value, None) if isinstance(ds.value, dict) else _read_ds_json(setup, str(ds.value))
        if cfg is None:
            notes.append(f"deepspeed={str(ds.value)[:200]!r}: {why}; its ZeRO stage is not known")
        else:
            fields, more = parse_deepspeed_config(cfg, hidden_size)
            ch.update(fields)
            notes.extend(more)
            if "zero_stage" in fields:
                notes.append(f"DeepSpeed config {str(ds.value)[:200] if not isinstance(ds.value, dict) else '(inline)'}: "
                             f"ZeRO-{fields['zero_stage']}"
                             + (", offload_optimizer cpu" if fields.get("offload_optimizer") else "")
                             + (", offload_param cpu" if fields.get("offload_param") else ""))
    fsdp = _known(setup, "training.fsdp")
    if fsdp is not None and fsdp.value and "zero_stage" not in ch:
        words = str(fsdp.value).lower().split() if not isinstance(fsdp.value, bool) else ["full_shard"]
        strategy = next((w for w in words if w in FSDP_STRATEGIES), None)
        if strategy:
            ch["fsdp"] = strategy
            if "offload" in words:
                ch["offload_param"] = ch["offload_optimizer"] = True
            notes.append(f"fsdp={fsdp.value!r}: FSDP {strategy}" + (" with CPU offload" if "offload" in words else ""))
    # ranks the file states: litgpt devices, a torchtune distributed recipe's header
    n = None
    for ev in getattr(setup, "launch", ()) or ():
        if ev.kind == "multi-gpu" and ev.detail.startswith("devices: "):
            try:
                n = int(ev.detail.split(":", 1)[1])
            except ValueError:
                pass
        if ev.kind == "fsdp" and getattr(inputs, "framework", "") == "torchtune":
            m = _PROCS.search(ev.detail)
            if m:
                n = int(m.group(1))
                ch.setdefault("fsdp", "full_shard")
                ch.setdefault("fsdp_version", 2)  # torchtune's recipes shard with fully_shard
    if n is not None and n > 1:
        ch["num_gpus"] = min(n, 1 << 16)
        if getattr(inputs, "framework", "") == "litgpt" and "fsdp" not in ch:
            ch.update(fsdp="full_shard", fsdp_version=2, gradient_checkpointing=True)
            notes.append("litgpt with several devices: FULL_SHARD with activation checkpointing per Block "
                         "(litgpt finetune/lora.py ModelParallelStrategy, FSDP2)")
    elif (ch.get("zero_stage") or ch.get("fsdp")) and (getattr(inputs, "num_gpus", 1) or 1) <= 1:
        notes.append("the number of GPUs is set at launch, not in the file: priced as one GPU (nothing is "
                     "partitioned on one rank); --num-gpus N for the per-GPU figure")
    return replace(inputs, **ch) if ch else inputs
