"""Score the memory estimator against published measured peaks, on three paths, next to the
best dedicated calculators that install and run here.

Reads ``tests/data/measured_peaks.csv`` (a copy of the shared truth table plus the rows added
from public measurements, each citing its source; columns described in
``shared/estimator-notes.md`` §5) and scores every usable row on:

* **script**: the training script or config the row describes, generated in a temporary folder
  in its framework's own form (``bench/rowgen.py``: HF Trainer / TRL / unsloth Python scripts,
  litgpt, torchtune, axolotl and LLaMA-Factory YAML) and estimated as ``lintlora estimate FILE
  --format json`` does (the engine's extraction, then ``from_setup``);
* **flags**: the ``lintlora estimate --model ... --format json`` argv for the same row, run
  in-process with click's ``CliRunner``. A flag the command does not know yet is left out, the
  nearest known flags are used and the row says ``flag missing: --x``;
* **inputs**: the estimator called directly with the inputs read from the row (what the model
  gives when extraction is perfect; it separates extraction loss from model error);
* **fitcheck** (``fitcheck-llm==0.3.1``) and **ftuneai** (``ftuneai==0.4.1``), each from its own
  venv under ``bench/out/`` (not project dependencies; ``--install-calculators`` creates them).

Each path estimates the counter the row reports (allocated / reserved / device); the
calculators give one figure each (their total, process memory: scored as the device counter
against whatever the row reports, as a user reading them would). Per source, framework and
method: median and 90th-percentile absolute % error; bound rows (fits / OOM / max context)
scored right or wrong against the card's capacity.

Rows left out, with the reason printed: LLaMA-Factory rules of thumb (not measurements),
multi-GPU rows whose data-parallel setup is not named (:func:`_sharding` scores the FSDP ones
per GPU on the inputs and flags paths), load-phase-only rows, rows with no sequence length, models the
catalog does not know (``unknown model``).

``--holdout`` fits each constant of ``lintlora/estimate/profiles.py`` / ``memory.py`` that was
fitted to rows (marked *fitted* there) on half of its rows and reports the error on the other
half, with the committed value and with the refit (see :data:`FITTED`).

Issue-2 anchors (``--anchors`` prints them, computed, on an RTX 3090):

* Llama-2-7B LoRA r=8 q,v, batch 4, sequence 512, 16-bit weights, no checkpointing: about
  21.8 GB in nvidia-smi (row 224, a secondary source with a partial config). The estimate for a
  batch of four full 512-token samples is higher, and is left so: scripts of that era tokenize
  with ``max_length=512`` and pad to the longest sample in the batch, so 512 is an upper bound.
* QLoRA 7B, batch 1, sequence 512, checkpointing: 8-10 GB seen by practitioners (see
  ``--anchors`` for the with/without bitsandbytes < 0.43.2 and checkpointing figures).

Usage: ``python bench/accuracy.py [--rows] [--holdout] [--anchors] [--csv PATH]
[--paths script,flags,inputs,fitcheck,ftuneai] [--install-calculators]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from lintlora.estimate.architecture import UnknownModelError, resolve_architecture  # noqa: E402
from lintlora.estimate.memory import EstimateInputs, estimate_memory  # noqa: E402
from lintlora.estimate.profiles import get_profile  # noqa: E402
from rowgen import RowSetup, argv_for, context_flags, estimate_options, generator_for, script_for  # noqa: E402

CSV = ROOT / "tests" / "data" / "measured_peaks.csv"
OUT = ROOT / "bench" / "out"
GB = 1e9
GIB = 2**30

_MODEL_IDS = {"7B LLaMA-family": "meta-llama/Llama-2-7b-hf"}

# the calculators, each pinned, in its own venv under bench/out (bench/out/ is git-ignored)
CALCULATORS = {
    "fitcheck": {"pip": "fitcheck-llm==0.3.1", "venv": OUT / "calc-venv", "runner": "calc_fitcheck.py"},
    "ftuneai": {"pip": "ftuneai==0.4.1", "venv": OUT / "calc2-venv", "runner": "calc_ftuneai.py"},
}
PATHS = ("script", "flags", "inputs", "fitcheck", "ftuneai")


def _int(x: str) -> int | None:
    m = re.match(r"\s*(\d+)", x or "")
    return int(m.group(1)) if m else None


def _framework(row: dict) -> str:
    fw = row["framework"].lower()
    if "lit" in fw:
        return "litgpt"
    if "torchtune" in fw:
        return "torchtune"
    if "unsloth (" in fw or fw.startswith("unsloth"):
        return "unsloth"
    return "transformers"


def _targets(row: dict, arch) -> tuple[str, ...] | str:
    t = row["target_modules"].lower()
    attn = arch.attention_modules
    if "all linear" in t or "q,k,v,o,gate,up,down" in t or ("mlp" in t and "q,k,v" in t):
        return "all-linear"
    if "output_proj + mlp" in t or "output_proj + ml" in t:
        if "q_proj,v_proj,output_proj" in t.replace(" ", ""):
            names = [n for n in ("q_proj", "v_proj", "o_proj") if n in attn] + list(arch.mlp_modules)
            return tuple(names)
        return "all-linear"
    if "q,v" in t or "q_proj,v_proj" in t:
        if any(n in attn for n in ("q_proj",)):
            return ("q_proj", "v_proj")
        return (attn[0],)  # fused qkv: litgpt lora_query + lora_value share one LoRAQKVLinear
    if "peft defaults" in t:
        return None  # type: ignore[return-value]
    return "all-linear" if not t else tuple(x.strip() for x in t.split(","))


def _quant(row: dict) -> tuple[str | None, bool]:
    q = row["quant"].lower()
    if q in ("none", "", "16-bit"):
        return None, False
    if "gptq" in q:
        return "gptq4", False
    if "torchao" in q:
        return "torchao-nf4", True
    if "int8" in q or "8-bit" in q:
        return "int8", False
    if "fp4" in q:
        return "fp4", False
    return "nf4", "dq" in q


def _counter(row: dict) -> str:
    c = row["counter"].lower()
    if "allocated" in c or "tracemalloc" in c:
        return "allocated"
    if "reserved" in c:
        return "reserved"
    if "active" in c:
        return "allocated"
    return "device"  # unstated, nvidia-smi, per-GPU peak, torchtune "peak memory"


def _unit(row: dict) -> float:
    u = row["peak_unit"].lower()
    return GIB if "gib" in u else GB


def row_inputs(row: dict, arch) -> tuple[EstimateInputs, str]:
    """The estimator inputs a truth row describes (framework, method, quant, batch, ...)."""
    fw = _framework(row)
    q, dq = _quant(row)
    method = row["method"].lower()
    full = method.startswith("full")
    mts: tuple[str, ...] = ()
    if "modules_to_save" in method:
        mts = (arch.embedding_name.rsplit(".", 1)[-1], arch.lm_head_name.rsplit(".", 1)[-1])
    prec = row["precision"].lower()
    compute = "float16" if "fp16" in prec else ("float32" if "32-true" in prec else "bfloat16")
    weight = "float32" if ("32-true" in prec or "bf16-mixed" in prec) else compute
    master = "bf16-mixed" in prec
    gc_text = row["grad_ckpt"].lower()
    gc = gc_text.startswith("on") or "unsloth" in gc_text or "default on" in gc_text or fw == "unsloth"
    offload = "unsloth" in gc_text or (fw == "unsloth")
    optim = row["optimizer"].lower()
    if "paged" in optim and "8" not in optim:
        optim_name = "paged_adamw_32bit"
    elif "8bit" in optim or "8-bit" in optim:
        optim_name = "adamw_8bit"
    else:
        optim_name = "adamw_torch"
    loss_t = row["loss_impl"].lower()
    loss = None
    if "chunk" in loss_t:
        loss = "chunked"
    elif "linearcrossentropy" in loss_t or "cce" in row["framework"].lower():
        loss = "fused"
    elif "own ce" in loss_t:
        loss = "bf16-own"
    elif fw == "transformers" and ("2023" in row["framework"] or "eager (2023" in row["attention"].lower()):
        loss = "hf-legacy"
    elif "ce full" in loss_t:
        loss = "hf"  # torchtune 2025 full CE up-casts to fp32
    attn = row["attention"].lower()
    attn_impl = "eager" if attn.startswith("eager") else (
        "flash_attention_2" if ("flash-attention 2" in attn or attn.startswith("fa2")) else "sdpa")
    r = _int(row["lora_rank"]) or 8
    drop = float(row["lora_dropout"] or 0.0) if not full else 0.0
    if fw == "transformers" and row["lora_dropout"] == "":
        drop = 0.05
    targets = None if full else _targets(row, arch)
    bs = _int(row["micro_batch"]) or 1
    seq = _int(row["seq_len"]) or 512
    kbit = fw == "transformers" and q in ("nf4", "fp4", "int8")
    if fw == "transformers" and q == "gptq4":
        kbit = False
    # bitsandbytes before 0.43.2 kept every 4-bit matmul's input (bitsandbytes PR #1270,
    # released 2024-07): rows dated 2022-2023 or naming bnb <= 0.42; the litgpt config-hub table
    # was produced with the configs added from 2024-04, before that release (an assumption for
    # the rows dated up to 2024-09, stated here). Other bnb rows: a current release.
    src = row["source_path_or_url"]
    bnb_old = q in ("nf4", "fp4") and (re.search(r"\b20(22|23)\b|bnb 0\.(39|40|41|42)", src) is not None
                                        or (fw == "litgpt" and "2024" in src))
    # torchao before PR #196 (2024-05-01) quantized NF4 without chunking: torchtune rows whose
    # source is dated 2024-04.
    ao_old = q == "torchao-nf4" and "2024-04" in src
    inputs = EstimateInputs(
        method="full" if full else ("qlora" if q else "lora"), batch_size=bs, seq_len=seq,
        gradient_checkpointing=gc, quant=q, double_quant=dq, weight_dtype=weight,
        compute_dtype=compute, lora_r=r, lora_dropout=drop, target_modules=targets,
        modules_to_save=mts, optim=optim_name, attn_implementation=attn_impl,
        kbit_upcast=kbit, loss_impl=loss, master_fp32=master, framework=fw,
        checkpoint_offload=offload and fw == "unsloth", bnb_saves_input=bnb_old,
        torchao_unchunked=ao_old,
        # lit-gpt 2023 forced its longest sample into the first micro-batch, so that step (with
        # no previous step's graph alive) is the peak the row measured; the estimator's default
        # is the steady state (EstimateInputs.previous_batch_ratio, lintlora/estimate/litgpt_terms.py).
        # Only this path can say so: no script or flag states a data-loading protocol.
        previous_batch_ratio=0.0 if _first_step_protocol(row) else 1.0)
    sh = _sharding(row) if (_int(row["num_gpus"]) or 1) > 1 else None
    if sh is not None and not isinstance(sh, str):
        # a multi-GPU row of a named data-parallel setup: per GPU (lintlora.estimate.sharding)
        inputs = replace(inputs, **sh[0])
    return inputs, _counter(row)


# the rows' seq_len_note wording for lit-gpt 2023's first micro-batch (tests/data/measured_peaks.csv)
FIRST_STEP_NOTES = ("first micro-batch forced to contain the longest sample", "longest sample forced first")


def _first_step_protocol(row: dict) -> bool:
    """The row's run forced its longest sample into the first micro-batch (lit-gpt 2023)."""
    note = (row.get("seq_len_note") or "").lower()
    return any(n in note for n in FIRST_STEP_NOTES)


def _sharding(row: dict) -> tuple[dict, list[str]] | str:
    """The :class:`EstimateInputs` fields and the ``lintlora estimate`` flags of a multi-GPU row
    (:mod:`lintlora.estimate.sharding`), or why it is not scored.

    * litgpt rows (``Lightning-AI/litgpt@8641822`` ``finetune/lora.py``): ``FSDPStrategy``
      (FULL_SHARD, FSDP1, each ``Block`` a unit with ``use_orig_params=True``), checkpointing per
      Block, global batch 128 by gradient accumulation under ``no_backward_sync``: 128 /
      (micro-batch × devices) micro-batches per step.
    * torchtune's distributed LoRA recipe (``lora_finetune_distributed``): FSDP2 ``fully_shard``
      per layer; its 70B configs enable activation checkpointing (``70B_lora.yaml``
      ``enable_activation_checkpointing: True``, an assumption for the README's table);
      "no grad accumulation" as the row says.
    * philschmid's FSDP-QLoRA notebook: TRL + accelerate FSDP1 ``full_shard auto_wrap offload``
      with ``bnb_4bit_quant_storage=torch.bfloat16``, checkpointing on.
    """
    n = _int(row["num_gpus"]) or 1
    fw = row["framework"].lower()
    src = (row["source"] + " " + row["framework"]).lower()
    if "lit-gpt" in fw or "litgpt" in fw:
        gas = max(1, 128 // max(1, (_int(row["micro_batch"]) or 1) * n))
        f = {"num_gpus": n, "fsdp": "full_shard", "fsdp_version": 1, "gradient_accumulation_steps": gas,
             "gradient_checkpointing": True}
    elif "torchtune" in src:
        f = {"num_gpus": n, "fsdp": "full_shard", "fsdp_version": 2, "gradient_checkpointing": True,
             "compile": "compile on" in row["source_path_or_url"]}
    elif "fsdp + qlora" in fw:
        f = {"num_gpus": n, "fsdp": "full_shard", "fsdp_version": 1, "quant_storage": "bfloat16",
             "offload_optimizer": True, "offload_param": True, "gradient_checkpointing": True}
    else:
        return "multi-GPU, a setup the row does not name (model split, not data parallel)"
    flags = ["--num-gpus", str(n), "--fsdp", f["fsdp"], "--fsdp-version", str(f["fsdp_version"]),
             "--gradient-checkpointing"]
    if f.get("gradient_accumulation_steps"):
        flags += ["--gradient-accumulation-steps", str(f["gradient_accumulation_steps"])]
    if f.get("quant_storage"):
        flags += ["--quant-storage", f["quant_storage"]]
    if f.get("offload_param"):
        flags += ["--offload", "both"]
    if f.get("compile"):
        flags += ["--compile"]
    return f, flags


def _skip(row: dict) -> str | None:
    """Why a row is left out of every path, or ``None``."""
    k = row["kind"].lower()
    if k.startswith("estimate"):
        return "rule of thumb, not a measurement"
    if (_int(row["num_gpus"]) or 1) > 1 and not k.startswith("bound_oom"):
        sh = _sharding(row)
        if isinstance(sh, str):
            return sh
    if "after model" in k and "training" not in k:
        return "load phase, not a training peak"
    if not row["seq_len"] and not k.startswith("bound_oom at any"):
        return "no sequence length in the row"
    return None


def _capacity(row: dict) -> float | None:
    m = re.search(r"(\d+)\s*GB", row["gpu"])
    if m:
        return int(m.group(1)) * GIB
    if row["peak_gb"]:
        return float(row["peak_gb"]) * GIB
    m = re.search(r"~(\d+)", row["kind"])
    return int(m.group(1)) * GIB if m else None


def method_label(row: dict) -> str:
    """The row's method for the per-method table: lora, qlora (bnb), qlora-gptq,
    qlora-torchao, lora-8bit, lora+modules_to_save, full, or a trainer name (dpo, orpo...)."""
    m = row["method"].lower()
    q = row["quant"].lower()
    for t in ("dpo", "orpo", "kto", "grpo", "ppo", "simpo", "cpo"):
        if re.search(rf"\b{t}\b", m):
            return t
    if m.startswith("full"):
        return "full"
    if "modules_to_save" in m:
        return "lora+modules_to_save"
    if "8-bit" in m or "int8" in q or "8-bit" in q:
        return "lora-8bit"
    if "gptq" in q or "awq" in q:
        return "qlora-gptq/awq"
    if "torchao" in q:
        return "qlora-torchao"
    if m.startswith("qlora") or "4bit" in q or "nf4" in q or "fp4" in q or "4-bit" in q:
        return "qlora"
    return "lora"


def _script_model(row: dict, name: str, inputs: EstimateInputs) -> str:
    """The hub id a script of this row names: Qwen's Q-LoRA loads the ``-Int4`` checkpoint
    (QwenLM/Qwen README: ``Qwen/Qwen-7B-Chat-Int4``)."""
    if inputs.quant == "gptq4" and "qwen/qwen-" in name.lower() and not name.endswith("-Int4"):
        return name + "-Int4"
    return name


def _extra(row: dict, inputs: EstimateInputs) -> dict:
    """Framework knobs of the row that :class:`EstimateInputs` does not carry."""
    extra: dict = {}
    gc = row["grad_ckpt"].lower()
    notes = (row["notes"] + " " + row["kind"]).lower()
    if inputs.framework == "torchtune":
        if "offload" in gc:
            extra["enable_activation_offloading"] = True
        if "compile" in notes:
            extra["compile"] = True
        if "opt_in_bwd" in notes.replace("no opt_in_bwd", "") or "optimizer_in_bwd: true" in notes:
            extra["optimizer_in_bwd"] = True
    t = row["target_modules"].lower()
    if "lm_head" in t or "head" in t.split(","):
        extra["lora_head"] = True
    label = method_label(row)
    if label in ("dpo", "orpo", "kto", "grpo", "ppo", "simpo", "cpo"):
        extra["trainer"] = label
    return extra


def row_setup(row: dict) -> RowSetup | str:
    """The row as a :class:`rowgen.RowSetup`, or why it is left out (a sentence)."""
    why = _skip(row)
    name = _MODEL_IDS.get(row["model"], row["model"])
    try:
        arch = resolve_architecture(name)
    except UnknownModelError:
        arch = None
    if why:
        if why.startswith("no sequence length") and arch is None:
            why += f"; unknown model {row['model']}"  # the encoder-decoder rows (T0, mt0) until catalogued
        return why
    if arch is None:
        return f"unknown model {row['model']}"
    inputs, _ = row_inputs(row, arch)
    extra = _extra(row, inputs)
    sh = _sharding(row) if (_int(row["num_gpus"]) or 1) > 1 else None
    if sh is not None and not isinstance(sh, str):  # row_inputs applied its fields
        extra["sharding_flags"] = sh[1]
    if row["kind"].lower().startswith("bound_oom at any"):
        inputs = replace(inputs, seq_len=1)
    gen = generator_for(row, inputs.framework)
    return RowSetup(row["row_id"], _script_model(row, name, inputs), gen, inputs, extra)


@dataclass
class PathResult:
    """One path's estimate of one row: bytes per counter, or why there is none."""

    allocated: float | None = None
    reserved: float | None = None
    device: float | None = None
    error: str | None = None
    missing: list[str] = field(default_factory=list)
    detail: str = ""  # the file name or argv, for --rows

    def value(self, counter: str) -> float | None:
        return {"allocated": self.allocated, "reserved": self.reserved, "device": self.device}[counter]


@dataclass
class RowResult:
    row: dict
    setup: RowSetup
    counter: str
    kind: str  # "measure", "low" (low reliability: printed, not summarised), "bound"
    measured: float | None  # bytes (for a bound: the capacity)
    paths: dict[str, PathResult] = field(default_factory=dict)

    def error_pct(self, path: str) -> float | None:
        """Signed % error of a path on a measured row (``None``: no estimate, or a bound)."""
        p = self.paths.get(path)
        if p is None or p.error or self.kind == "bound" or not self.measured:
            return None
        v = p.device if path in CALCULATORS else p.value(self.counter)
        return None if v is None else 100.0 * (v - self.measured) / self.measured

    def bound_right(self, path: str) -> bool | None:
        p = self.paths.get(path)
        if p is None or p.error or self.kind != "bound" or p.device is None:
            return None
        dev, cap, k = p.device, self.measured, self.row["kind"].lower()
        if k.startswith("bound_oom"):
            return dev > cap * 0.95
        if k.startswith("bound_fit"):
            return dev <= cap
        return 0.75 * cap <= dev <= 1.25 * cap  # max context: the peak there is about the capacity


def _from_json(out: str) -> PathResult:
    """The counters of ``lintlora estimate --format json`` output (the first setup's)."""
    start = out.find("{")
    if start < 0:
        return PathResult(error=out.strip().splitlines()[-1][:200] if out.strip() else "no output")
    data = json.loads(out[start:])
    if "estimates" in data:
        data = data["estimates"][0]
    e = data["estimate"]
    return PathResult(e["allocated_bytes"], e["reserved_bytes"], e["device_bytes"])


def _invoke(args: list[str]) -> PathResult:
    from click.testing import CliRunner

    from lintlora.estimate.command import estimate_cmd

    res = CliRunner().invoke(estimate_cmd, args, catch_exceptions=True)
    if res.exception and not isinstance(res.exception, SystemExit):
        return PathResult(error=f"{type(res.exception).__name__}: {res.exception}"[:200])
    stdout = getattr(res, "stdout", res.output)
    if res.exit_code not in (0, 1):
        msg = (res.output or "").strip().splitlines()
        return PathResult(error=(msg[-1] if msg else f"exit {res.exit_code}")[:200])
    try:
        return _from_json(stdout)
    except (ValueError, KeyError) as exc:
        return PathResult(error=f"unreadable JSON: {exc}"[:200])


def script_estimate(s: RowSetup, folder: Path, known: set[str] | None = None) -> PathResult:
    """The script path: write the row's script/config into ``folder`` and estimate it, with
    the run's library releases (:func:`rowgen.context_flags`), which no file states."""
    try:
        arch = resolve_architecture(s.model)
    except UnknownModelError:
        arch = None
    try:
        name, text = script_for(s, arch)
    except (KeyError, ValueError) as exc:
        return PathResult(error=f"no generator for this row: {exc}")
    path = folder / name
    path.write_text(text, encoding="utf-8")
    flags, missing = context_flags(s, known)
    r = _invoke([str(path), "--format", "json", *flags])
    r.missing = missing
    r.detail = " ".join([name, *flags])
    if r.error and "unknown model" in r.error:
        r.error = "unknown model " + s.model
    return r


def flag_estimate(s: RowSetup, known: set[str]) -> PathResult:
    """The flag path: the row's ``lintlora estimate`` argv."""
    argv, missing = argv_for(s, known)
    if s.extra.get("sharding_flags"):  # a multi-GPU row: the per-GPU flags (_sharding)
        argv = [a for a in argv if a != "--no-gradient-checkpointing"] + list(s.extra["sharding_flags"])
    r = _invoke(argv)
    r.missing = missing
    r.detail = " ".join(argv)
    return r


def inputs_estimate(s: RowSetup, profile_overrides: dict | None = None) -> PathResult:
    """The inputs path: :func:`estimate_memory` on the inputs read from the row."""
    arch = resolve_architecture(_MODEL_IDS.get(s.model, s.model))
    prof = get_profile(s.inputs.framework)
    if profile_overrides and prof.name in profile_overrides:
        prof = replace(prof, **profile_overrides[prof.name])
    elif profile_overrides and "*" in profile_overrides:
        prof = replace(prof, **profile_overrides["*"])
    est = estimate_memory(s.inputs, arch, prof)
    return PathResult(est.allocated_bytes, est.reserved_bytes, est.device_bytes)


# ---- the calculators ------------------------------------------------------------------------

_FITCHECK_GPUS = (("a100-sxm4-40", "a100-40"), ("a100 40", "a100-40"), ("a100-40", "a100-40"),
                  ("a100 80", "a100-80"), ("a100-80", "a100-80"), ("h100", "h100"), ("a10g", "a10"),
                  ("t4", "t4"), ("3090", "3090"), ("4090", "4090"), ("a6000", "a6000"), ("l40s", "l40s"),
                  ("l4 ", "l4"), ("h200", "h200"))
_CANON = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _canonical_targets(s: RowSetup, arch) -> list[str]:
    """The row's LoRA targets in the q/k/v/o/gate/up/down names the calculators know (fused
    qkv counts as q, k, v; a plain MLP's two matrices as up, down)."""
    t = s.inputs.target_modules
    if t is None:
        t = arch.peft_default_targets or ("q_proj", "v_proj")
    if isinstance(t, str):
        return list(_CANON)
    out: list[str] = []
    fused = arch.attention_modules[0] if arch.attention_modules[0] not in ("q_proj",) else None
    for n in t:
        if n in _CANON:
            out.append(n)
        elif fused and n == fused:
            out += ["q_proj", "v_proj"] if len(t) == 1 else ["q_proj", "k_proj", "v_proj"]
        elif n in arch.attention_modules:
            out.append("o_proj")
        elif n in arch.mlp_modules:
            out += (["gate_proj", "up_proj", "down_proj"] if arch.mlp_kind == "gated" else ["up_proj", "down_proj"])
    seen: list[str] = []
    for n in out:
        if n not in seen:
            seen.append(n)
    return seen or ["q_proj", "v_proj"]


def _capacity_mib(row: dict) -> int:
    m = re.search(r"(\d+)\s*GB", row["gpu"])
    return int(m.group(1)) * 1024 if m else 80 * 1024


def calculator_inputs(s: RowSetup, row: dict, calc: str) -> dict | None:
    """The calculator's inputs for a row (``None``: it cannot express the row at all)."""
    arch = resolve_architecture(_MODEL_IDS.get(s.model, s.model))
    i = s.inputs
    full = i.method == "full"
    if calc == "fitcheck":
        model = {"name": s.model, "num_params": int(arch.total_params), "hidden_size": arch.hidden_size,
                 "num_layers": arch.num_hidden_layers, "num_attention_heads": arch.num_attention_heads,
                 "num_kv_heads": arch.num_key_value_heads, "intermediate_size": arch.intermediate_size,
                 "vocab_size": arch.vocab_size, "head_dim": arch.head_dim,
                 "tie_word_embeddings": bool(arch.tie_word_embeddings)}
        q = {"nf4": "nf4", "fp4": "nf4", "gptq4": "nf4", "torchao-nf4": "nf4", "int8": "int8"}.get(i.quant or "", "none")
        prec = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[i.compute_dtype if i.weight_dtype != "float32" or i.master_fp32 else "float32"]
        optim = "adam8bit" if "8bit" in i.optim else "adamw"
        odt = "bf16" if (i.framework in ("litgpt", "torchtune") and optim == "adamw" and i.weight_dtype == "bfloat16"
                         and "paged" not in i.optim) else "fp32"
        training = {"precision": prec, "quantization": q, "double_quant": bool(i.double_quant and q == "nf4"),
                    "optimizer": optim, "optimizer_dtype": odt, "batch_size": i.batch_size, "seq_len": i.seq_len,
                    "lora_rank": None if full else i.lora_r,
                    "lora_targets": list(_CANON) if full else _canonical_targets(s, arch),
                    "grad_checkpoint": bool(i.gradient_checkpointing),
                    "flash_attn": i.attn_implementation != "eager"}
        g = row["gpu"].lower() + " "
        key = next((k for pat, k in _FITCHECK_GPUS if pat in g), None)
        return {"id": s.row_id, "model": model, "training": training, "gpu": key,
                "vram_mib": None if key else _capacity_mib(row)}
    if calc == "ftuneai":
        model = {"name": s.model, "parameters": int(arch.total_params), "hidden_size": arch.hidden_size,
                 "num_layers": arch.num_hidden_layers, "num_attention_heads": arch.num_attention_heads,
                 "num_kv_heads": arch.num_key_value_heads, "intermediate_size": arch.intermediate_size,
                 "vocab_size": arch.vocab_size, "max_seq_length": max(i.seq_len, arch.max_position_embeddings or 0)}
        t = _canonical_targets(s, arch)
        target = ("all_linear" if any(n in t for n in ("gate_proj", "up_proj", "down_proj")) else
                  "attention_all" if "k_proj" in t or "o_proj" in t else "attention")
        method = "full" if full else ("qlora" if i.quant in ("nf4", "fp4", "gptq4", "torchao-nf4") else "lora")
        quant = {"nf4": "4bit", "fp4": "4bit", "gptq4": "4bit", "torchao-nf4": "4bit", "int8": "8bit"}.get(i.quant or "", "none")
        training = {"model": s.model, "method": method, "quantization": quant, "batch_size": i.batch_size,
                    "seq_length": i.seq_len, "gradient_checkpointing": bool(i.gradient_checkpointing),
                    "optimizer": "adam_8bit" if "8bit" in i.optim else "adamw", "lora_rank": i.lora_r,
                    "lora_alpha": 2 * i.lora_r, "lora_target": target,
                    "flash_attention": i.attn_implementation != "eager"}
        return {"id": s.row_id, "model": model, "training": training}
    return None


def _venv_python(calc: str) -> Path:
    return CALCULATORS[calc]["venv"] / "bin" / "python"


def install_calculators() -> None:
    """Create each calculator's venv under bench/out and pip-install its pinned release."""
    for name, c in CALCULATORS.items():
        if not _venv_python(name).exists():
            subprocess.run([sys.executable, "-m", "venv", str(c["venv"])], check=True)
        subprocess.run([str(_venv_python(name)), "-m", "pip", "install", "-q", c["pip"]], check=True)
        print(f"{name}: {c['pip']} in {c['venv']}")


def calculator_estimates(calc: str, setups: list[tuple[RowSetup, dict]]) -> dict[str, PathResult]:
    """Run one calculator over the rows in its venv (one subprocess): row id -> result."""
    py = _venv_python(calc)
    if not py.exists():
        return {s.row_id: PathResult(error=f"{calc} not installed (--install-calculators)") for s, _ in setups}
    items, out = [], {}
    for s, row in setups:
        try:
            it = calculator_inputs(s, row, calc)
        except UnknownModelError:
            it = None
        if it is None:
            out[s.row_id] = PathResult(error=f"{calc} cannot express this row")
        else:
            items.append(it)
    runner = ROOT / "bench" / CALCULATORS[calc]["runner"]
    proc = subprocess.run([str(py), str(runner)], input=json.dumps(items), capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        res = json.loads(proc.stdout)
    except ValueError:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {s.row_id: PathResult(error=f"{calc}: {err}") for s, _ in setups}
    if isinstance(res, dict):
        return {s.row_id: PathResult(error=res.get("error", "?")) for s, _ in setups}
    for r in res:
        if "error" in r:
            out[r["id"]] = PathResult(error=r["error"])
        else:
            b = r["total_mib"] * 2**20 if "total_mib" in r else r["total_gib"] * GIB
            out[r["id"]] = PathResult(device=b)
    return out


# ---- scoring --------------------------------------------------------------------------------

def _kind(row: dict) -> str:
    k = row["kind"].lower()
    if k.startswith("bound"):
        return "bound"
    if row["reliability"].lower().startswith(("low (", "low as")):
        return "low"
    return "measure"


def score_paths(rows: list[dict], paths: tuple[str, ...] = PATHS) -> tuple[list[RowResult], list[tuple[str, str]]]:
    """Every usable row on every path; the rows left out with the reason."""
    results: list[RowResult] = []
    skipped: list[tuple[str, str]] = []
    known = estimate_options()
    with tempfile.TemporaryDirectory(prefix="lintlora-bench-") as tmp:
        for row in rows:
            s = row_setup(row)
            if isinstance(s, str):
                skipped.append((row["row_id"], s))
                continue
            kind = _kind(row)
            if kind == "bound":
                measured = _capacity(row)
                if measured is None:
                    skipped.append((row["row_id"], "bound without capacity"))
                    continue
            else:
                measured = float(row["peak_gb"]) * _unit(row)
            rr = RowResult(row, s, _counter(row), kind, measured)
            if "inputs" in paths:
                rr.paths["inputs"] = inputs_estimate(s)
            if "script" in paths and s.extra.get("sharding_flags"):
                # the launch (torchrun/accelerate/litgpt --devices) is not generated: launch
                # discovery is issue 15's other part
                rr.paths["script"] = PathResult(error="multi-GPU: no launch generated for the script path")
            elif "script" in paths:
                rr.paths["script"] = script_estimate(s, Path(tmp), known)
            if "flags" in paths:
                rr.paths["flags"] = flag_estimate(s, known)
            results.append(rr)
    for calc in CALCULATORS:
        if calc in paths:
            got = calculator_estimates(calc, [(r.setup, r.row) for r in results])
            for r in results:
                r.paths[calc] = got.get(r.setup.row_id, PathResult(error="no result"))
    return results, skipped


def _p90(errs: list[float]) -> float:
    errs = sorted(errs)
    return errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))] if errs else float("nan")


def group_stats(results: list[RowResult], path: str) -> tuple[int, float, float, int, int]:
    """``(n, median |err| %, p90 |err| %, bounds right, bounds scored)`` of one path."""
    errs = [abs(e) for r in results if r.kind == "measure" and (e := r.error_pct(path)) is not None]
    bounds = [b for r in results if r.kind == "bound" and (b := r.bound_right(path)) is not None]
    med = statistics.median(errs) if errs else float("nan")
    return len(errs), med, _p90(errs), sum(bounds), len(bounds)


def _group_key(r: RowResult, by: str) -> str:
    if by == "source":
        return r.row["source"]
    if by == "framework":
        return r.setup.generator
    return method_label(r.row)


def print_table(results: list[RowResult], paths: tuple[str, ...], by: str) -> None:
    """One line per group: each path's n, median and p90 |err| %, bounds right/scored."""
    cols = "".join(f" | {p:^22}" for p in paths)
    print(f"\nper {by}:\n{by:32} {'rows':>4}{cols}")
    print(f"{'':32} {'':>4}" + "".join(f" | {'n':>3} {'med':>5} {'p90':>5} {'bnd':>5}" for _ in paths))
    groups = sorted({_group_key(r, by) for r in results}) + ["ALL"]
    for g in groups:
        sub = results if g == "ALL" else [r for r in results if _group_key(r, by) == g]
        line = f"{g[:32]:32} {len(sub):4d}"
        for p in paths:
            n, med, p90, br, bt = group_stats(sub, p)
            line += f" | {n:3d} {med:5.1f} {p90:5.1f} {f'{br}/{bt}':>5}"
        print(line)


def print_rows(results: list[RowResult], paths: tuple[str, ...]) -> None:
    """Every row: measured (or capacity), each path's estimate of the row's counter and error."""
    print(f"{'row':>4} {'framework':13} {'method':16} {'model':34} {'ctr':9} {'meas':>6}"
          + "".join(f" {p[:8]:>8} {'err':>6}" for p in paths))
    for r in results:
        meas = r.measured / (GIB if r.kind == "bound" else GB)
        line = (f"{r.setup.row_id:>4} {r.setup.generator:13} {method_label(r.row)[:16]:16} {r.row['model'][:34]:34} "
                f"{(r.counter if r.kind != 'bound' else r.row['kind'].split('(')[0].strip())[:9]:9} "
                f"{meas:6.2f}{'G' if r.kind == 'bound' else ''}")
        notes = []
        for p in paths:
            pr = r.paths.get(p)
            if pr is None or pr.error:
                line += f" {'-':>8} {'':>6}"
                if pr is not None and pr.error:
                    notes.append(f"{p}: {pr.error}")
                continue
            v = pr.device if (p in CALCULATORS or r.kind == "bound") else pr.value(r.counter)
            if r.kind == "bound":
                ok = r.bound_right(p)
                line += f" {v / GIB:7.2f}G {'right' if ok else 'WRONG':>6}"
            else:
                line += f" {v / GB:8.2f} {r.error_pct(p):6.1f}"
            if pr.missing:
                notes.append(f"{p}: flag missing: {', '.join(pr.missing)}")
        if r.kind == "low":
            notes.append("low reliability: not in the summary")
        print(line + ("   # " + "; ".join(notes) if notes else ""))


@dataclass
class Scored:
    row_id: str
    source: str
    model: str
    kind: str  # "measure" or "bound"
    counter: str
    measured: float | None  # bytes
    estimated: float  # bytes
    error_pct: float | None
    right: bool | None
    note: str = ""


def score(rows: list[dict], factors: dict[str, float] | None = None) -> tuple[list[Scored], list[tuple[str, str]]]:
    """The inputs path alone, one :class:`Scored` per usable row (the API tests/test_estimate_memory.py
    pins rows with). ``factors``: activation_factor per framework."""
    out: list[Scored] = []
    skipped: list[tuple[str, str]] = []
    for row in rows:
        why = _skip(row)
        if why:
            skipped.append((row["row_id"], why))
            continue
        name = _MODEL_IDS.get(row["model"], row["model"])
        try:
            arch = resolve_architecture(name)
        except UnknownModelError:
            skipped.append((row["row_id"], f"model {row['model']} not in catalog"))
            continue
        inputs, counter = row_inputs(row, arch)
        prof = get_profile(inputs.framework)
        if factors and inputs.framework in factors:
            prof = replace(prof, activation_factor=factors[inputs.framework])
        est = estimate_memory(inputs, arch, prof)
        value = {"allocated": est.allocated_bytes, "reserved": est.reserved_bytes,
                 "device": est.device_bytes}[counter]
        kind = row["kind"].lower()
        low = row["reliability"].lower().startswith(("low (", "low as"))
        if low and (kind.startswith("measurement") or kind.startswith("claim")):
            measured = float(row["peak_gb"]) * _unit(row)
            err = 100.0 * (value - measured) / measured
            out.append(Scored(row["row_id"], row["source"], row["model"], "low", counter, measured, value, err, None,
                              row["reliability"]))
        elif kind.startswith("measurement") or kind.startswith("claim"):
            measured = float(row["peak_gb"]) * _unit(row)
            err = 100.0 * (value - measured) / measured
            out.append(Scored(row["row_id"], row["source"], row["model"], "measure", counter, measured, value, err, None))
        elif kind.startswith("bound"):
            cap = _capacity(row)
            if cap is None:
                skipped.append((row["row_id"], "bound without capacity"))
                continue
            dev = est.device_bytes
            if kind.startswith("bound_oom"):
                right = dev > cap * 0.95
            elif kind.startswith("bound_fit"):
                right = dev <= cap
            else:  # max context: the peak at that length is about the capacity
                right = 0.75 * cap <= dev <= 1.25 * cap
            out.append(Scored(row["row_id"], row["source"], row["model"], "bound", "device", cap, dev, None, right,
                              kind.split("(")[0].strip()))
    return out, skipped


def summary(scored: list[Scored]) -> list[tuple[str, int, float, float, int, int]]:
    """Per source: (source, n measured, median |err|%, p90 |err|%, bounds right, bounds total)."""
    res = []
    for src in sorted({s.source for s in scored}):
        errs = sorted(abs(s.error_pct) for s in scored if s.source == src and s.kind == "measure")
        b = [s for s in scored if s.source == src and s.kind == "bound"]
        med = statistics.median(errs) if errs else float("nan")
        p90 = errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))] if errs else float("nan")
        res.append((src, len(errs), med, p90, sum(1 for x in b if x.right), len(b)))
    errs = sorted(abs(s.error_pct) for s in scored if s.kind == "measure")
    b = [s for s in scored if s.kind == "bound"]
    res.append(("ALL", len(errs), statistics.median(errs) if errs else float("nan"),
                errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))] if errs else float("nan"),
                sum(1 for x in b if x.right), len(b)))
    return res


# ---- fitted constants, checked on held-out rows ----------------------------------------------

@dataclass(frozen=True)
class Fitted:
    """A constant of the estimator that was fitted to truth rows (marked *fitted* where it is
    defined), how to set it for a trial, the rows it bears on, and how it could be measured
    instead."""

    name: str
    where: str
    committed: float
    grid: tuple[float, ...]
    applies: object  # RowSetup -> bool
    profile_field: str | None = None  # a Profile field (overridden per profile or for all: "*")
    profiles: tuple[str, ...] = ("*",)
    loss_key: str | None = None  # a LOSS_K entry
    measurable: str = ""


def _loss_key(s: RowSetup) -> str:
    i = s.inputs
    return "fused" if i.liger else (i.loss_impl or get_profile(i.framework).loss)


def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    n = int(round((hi - lo) / step))
    return tuple(round(lo + k * step, 6) for k in range(n + 1))


FITTED: tuple[Fitted, ...] = (
    Fitted("reserved_ratio", "profiles.Profile.reserved_ratio (every profile)", 1.08, _grid(1.0, 1.3, 0.01),
           lambda s: True, profile_field="reserved_ratio",
           measurable="GPU only: max_memory_reserved / max_memory_allocated of a training step "
                      "(the caching allocator); no CPU analogue"),
    Fitted("framework_bytes[transformers]", "profiles.Profile.framework_bytes (HF profiles)", 300e6,
           _grid(0, 1.5e9, 50e6), lambda s: get_profile(s.inputs.framework).name in
           ("transformers", "trl", "torch", "axolotl", "llama-factory", "unsloth"),
           profile_field="framework_bytes",
           profiles=("transformers", "trl", "torch", "axolotl", "llama-factory", "unsloth"),
           measurable="GPU: torch.cuda.memory_allocated() after the first step minus the counted "
                      "components (cuBLAS workspace, RoPE caches)"),
    Fitted("framework_bytes[torchtune]", "profiles.PROFILES['torchtune'].framework_bytes", 100e6,
           _grid(0, 1.5e9, 50e6), lambda s: s.inputs.framework == "torchtune", profile_field="framework_bytes",
           profiles=("torchtune",), measurable="GPU, as for transformers"),
    Fitted("LOSS_K['bf16-own']", "profiles.LOSS_K['bf16-own'] (Qwen-1 remote code, torchtune 2024)", 10.0,
           _grid(4, 16, 0.5), lambda s: _loss_key(s) == "bf16-own", loss_key="bf16-own",
           measurable="CPU: saved-tensor bytes of the model's own loss on bf16 logits "
                      "(bench/saved_tensors.py's hooks on a tiny Qwen-1-style head): a measured term"),
    Fitted("LOSS_K['chunked']", "profiles.LOSS_K['chunked'] (torchtune CEWithChunkedOutputLoss; litgpt's chunked loss is priced by litgpt_terms)",
           4.0, _grid(1, 12, 0.5), lambda s: _loss_key(s) == "chunked", loss_key="chunked",
           measurable="CPU: litgpt's part is measured (bench/litgpt_memory.py, 4.98-5.00 with the chunk "
                      "gradients); torchtune's CEWithChunkedOutputLoss can be measured the same way"),
    Fitted("activation_factor[litgpt]", "profiles.Profile.activation_factor", 1.0, _grid(0.8, 1.6, 0.02),
           lambda s: s.inputs.framework == "litgpt", profile_field="activation_factor", profiles=("litgpt",),
           measurable="CPU: the per-layer terms are measured by bench/litgpt_memory.py; a factor "
                      "other than 1.0 would hide a missing term"),
    Fitted("activation_factor[transformers]", "profiles.Profile.activation_factor", 1.0, _grid(0.8, 1.6, 0.02),
           lambda s: get_profile(s.inputs.framework).name == "transformers", profile_field="activation_factor",
           profiles=("transformers",), measurable="CPU: bench/saved_tensors.py measures these terms (within 3%)"),
    Fitted("activation_factor[torchtune]", "profiles.Profile.activation_factor", 1.0, _grid(0.8, 1.6, 0.02),
           lambda s: s.inputs.framework == "torchtune", profile_field="activation_factor", profiles=("torchtune",),
           measurable="CPU: torchtune's modules run on the CPU; saved-tensor hooks as in bench/saved_tensors.py"),
)


def _trial(setups: list[tuple[RowSetup, dict]], f: Fitted, value: float) -> list[float]:
    """|error| % of the inputs path on ``setups`` (measured rows) with ``f`` set to ``value``."""
    import lintlora.estimate.profiles as profiles

    over = None
    if f.profile_field:
        v = int(value) if f.profile_field == "framework_bytes" else value
        over = {p: {f.profile_field: v} for p in f.profiles}
    saved = profiles.LOSS_K.get(f.loss_key) if f.loss_key else None
    if f.loss_key:
        profiles.LOSS_K[f.loss_key] = value
    try:
        errs = []
        for s, row in setups:
            est = inputs_estimate(s, over)
            measured = float(row["peak_gb"]) * _unit(row)
            errs.append(abs(100.0 * (est.value(_counter(row)) - measured) / measured))
        return errs
    finally:
        if f.loss_key:
            profiles.LOSS_K[f.loss_key] = saved


def holdout(rows: list[dict]) -> None:
    """Fit each :data:`FITTED` constant on the even-numbered rows it bears on (grid search,
    least median |error|) and report the odd-numbered (held-out) rows' error with the
    committed value and the refit; then the same with the halves swapped."""
    setups = []
    for row in rows:
        s = row_setup(row)
        if isinstance(s, RowSetup) and _kind(row) == "measure":
            setups.append((s, row))
    print("A = the rows with an even row_id, B = odd; each constant fitted on one half (grid search, least "
          "median |error| of the inputs path), scored on the other: median/p90 |error| % with the committed "
          "value and with the refit")
    print(f"{'constant':32} {'rows':>4} {'committed':>10} | {'fit on A':>9} {'B: med/p90 committed':>21} "
          f"{'B: med/p90 refit':>17} | {'fit on B':>9} {'A: committed':>13} {'A: refit':>11}")
    for f in FITTED:
        mine = [(s, r) for s, r in setups if f.applies(s)]
        a = [x for x in mine if int(x[0].row_id) % 2 == 0]
        b = [x for x in mine if int(x[0].row_id) % 2 == 1]
        line = f"{f.name:32} {len(mine):4d} {f.committed:10.4g} |"
        for fit_on, held in ((a, b), (b, a)):
            if not fit_on or not held:
                line += f" {'-':>9} {'(no split)':>21} {'':>17} |"
                continue
            best = min(f.grid, key=lambda v: (statistics.median(_trial(fit_on, f, v)), abs(v - f.committed)))
            c = _trial(held, f, f.committed)
            r = _trial(held, f, best)
            line += (f" {best:9.4g} {statistics.median(c):10.1f}/{_p90(c):<10.1f}"
                     f" {statistics.median(r):8.1f}/{_p90(r):<8.1f} |")
        print(line.rstrip(" |"))
        print(f"{'':32}   measurable instead: {f.measurable}")


def anchors() -> list[str]:
    """The issue-2 anchors as lines of text: estimates (device bytes, GB) next to what was seen."""
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    lora = EstimateInputs(method="lora", batch_size=4, seq_len=512, lora_r=8, lora_dropout=0.05,
                          target_modules=("q_proj", "v_proj"), compute_dtype="float16", weight_dtype="float16")
    qlora = EstimateInputs(method="qlora", batch_size=1, seq_len=512, gradient_checkpointing=True, quant="nf4",
                           double_quant=True, quant_compute_dtype="bfloat16", lora_r=8, lora_dropout=0.05,
                           target_modules=("q_proj", "v_proj"), kbit_upcast=True, optim="paged_adamw_8bit")

    def dev(i: EstimateInputs) -> float:
        return estimate_memory(i, arch).device_bytes / GB

    out = [f"LoRA r8 q,v bs4 s512 fp16 no GC (measured ~21.8 GB): {dev(lora):.2f} GB for full 512-token batches; "
           f"2023-era eager attention + legacy loss {dev(replace(lora, attn_implementation='eager', loss_impl='hf-legacy')):.2f} GB"]
    for s in (200, 256, 300, 400):
        out.append(f"  longest sample {s} tokens: {dev(replace(lora, seq_len=s)):.2f} GB "
                   f"(eager 2023: {dev(replace(lora, seq_len=s, attn_implementation='eager', loss_impl='hf-legacy')):.2f} GB)")
    out.append(f"QLoRA nf4-dq r8 q,v bs1 s512 GC, kbit up-cast (seen 8-10 GB): {dev(qlora):.2f} GB; "
               f"bitsandbytes < 0.43.2 {dev(replace(qlora, bnb_saves_input=True)):.2f} GB; "
               f"no GC {dev(replace(qlora, gradient_checkpointing=False)):.2f} GB; "
               f"no GC, bitsandbytes < 0.43.2 {dev(replace(qlora, gradient_checkpointing=False, bnb_saves_input=True)):.2f} GB")
    out.append(f"  same, batch 4: GC {dev(replace(qlora, batch_size=4)):.2f} GB; "
               f"no GC {dev(replace(qlora, batch_size=4, gradient_checkpointing=False)):.2f} GB")
    return out


def load(path: Path = CSV) -> list[dict]:
    """The truth rows."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def main() -> None:
    ap = argparse.ArgumentParser(description="score the estimator's script and flag paths and two "
                                             "calculators against measured peaks")
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    ap.add_argument("--holdout", action="store_true", help="fit each fitted constant on half its rows, "
                                                            "score the other half")
    ap.add_argument("--anchors", action="store_true", help="print the issue-2 RTX 3090 anchors")
    ap.add_argument("--install-calculators", action="store_true",
                    help="create bench/out/calc-venv (fitcheck-llm 0.3.1) and calc2-venv (ftuneai 0.4.1)")
    args = ap.parse_args()
    if args.install_calculators:
        install_calculators()
        return
    if args.anchors:
        for line in anchors():
            print(line)
        return
    rows = load(args.csv)
    if args.holdout:
        holdout(rows)
        return
    paths = tuple(p for p in args.paths.split(",") if p in PATHS)
    results, skipped = score_paths(rows, paths)
    if args.rows:
        print_rows(results, paths)
    print(f"\nleft out {len(skipped)} rows: " + "; ".join(f"{r} ({w})" for r, w in skipped))
    missing: dict[str, int] = {}
    for r in results:
        for p in ("script", "flags"):
            for flag in (r.paths.get(p) or PathResult()).missing:
                missing[(p, flag)] = missing.get((p, flag), 0) + 1
    for p in ("script", "flags"):
        got = {f: n for (q, f), n in missing.items() if q == p}
        if got:
            print(f"{p} path: flags this checkout's `lintlora estimate` lacks (rows needing each): "
                  + ", ".join(f"{k} ({v})" for k, v in sorted(got.items())))
    for p in paths:
        errs = [r for r in results if r.paths.get(p) and r.paths[p].error]
        if errs:
            why: dict[str, int] = {}
            for r in errs:
                key = re.sub(r"\d[\d.,]*", "N", r.paths[p].error)[:90]
                why[key] = why.get(key, 0) + 1
            print(f"{p}: no estimate for {len(errs)} rows: " + "; ".join(f"{k} ({v})" for k, v in why.items()))
    print("\nmedian / p90 = |estimate - measured| / measured in %, on measured rows (n); "
          "bnd = bound rows (fits / OOM / max context) right/scored")
    for by in ("source", "framework", "method"):
        print_table(results, paths, by)
    print_multi_gpu(results, paths)


def print_multi_gpu(results: list[RowResult], paths: tuple[str, ...]) -> None:
    """The multi-GPU rows, per GPU (:func:`_sharding`): each row's setup and error per path, then
    n / median / p90 |err| % over the measured ones."""
    multi = [r for r in results if r.setup.extra.get("sharding_flags")]
    if not multi:
        return
    print("\nmulti-GPU rows, per GPU (lintlora/estimate/sharding.py):")
    for r in multi:
        cells = []
        for p in paths:
            e = r.error_pct(p)
            b = r.bound_right(p)
            cells.append(f"{p} " + (f"{e:+.1f}%" if e is not None else ("right" if b else "wrong" if b is not None
                                                                          else "-")))
        print(f"  row {r.row['row_id']:>4} {r.row['model'][:34]:34} {r.row['num_gpus']} GPUs "
              f"{' '.join(r.setup.extra['sharding_flags'])}: " + ", ".join(cells))
    for p in paths:
        n, med, p90, br, bt = group_stats(multi, p)
        print(f"  {p}: n={n} median {med:.1f}% p90 {p90:.1f}% bounds {br}/{bt}")


if __name__ == "__main__":
    main()
