"""Per-GPU peaks of multi-GPU LoRA/QLoRA runs against the estimate of the whole run.

Each row is turned into the files a user's repository holds: the training script or config
(``bench/rowgen.py``), the launch command in ``run.sh`` (``torchrun``, ``accelerate launch
--config_file``, ``tune run --nproc_per_node``, ``litgpt finetune_lora``) and the accelerate
config YAML where the source gives one. The run is then read as lintlora reads it: the setup
(``lintlora.engine.read_setups``), the launch (``lintlora.extract.launch.discover_launches``),
the distribution (``lintlora.extract.distributed.distributed_for``: world size, ZeRO stage,
FSDP strategy/version, offload) and the estimate from the setup (``inputs_from_setup`` and
``estimate_memory``). Nothing is given to the estimator by hand except the library release a
row ran where no file can state it (see ``release`` below).

Rows:

* ``tests/data/measured_peaks.csv`` (the shared truth table's copy, committed): its multi-GPU
  LoRA rows that name their data-parallel setup (``bench/accuracy.py`` ``_sharding``): litgpt's
  FSDP rows (Lightning-AI/litgpt@8641822 ``tutorials/resource-tables.md``, 2 × A100 40GB,
  ``torch.cuda.max_memory_allocated``), torchtune's 70B LoRA on 8 × A100, philschmid's FSDP-QLoRA
  70B (low reliability: printed, not summarised).
* The PEFT documentation's per-GPU figures (huggingface/peft@5d602fdb
  ``docs/source/accelerate/deepspeed.md`` and ``fsdp.md``, "Memory usage"; nvidia-smi, so the
  device counter): Llama-2-70B LoRA r=8 all-linear under ZeRO-3 on 8 × H100 (64 GB/GPU), QLoRA
  under ZeRO-3 on 2 GPUs (36.6 GB/GPU), QLoRA under FSDP with CPU offload on 2 × 24GB
  (19.6 GB/GPU) and without offload (35.6 GB/GPU); ``--packing True --max_seq_len 2048``,
  flash-attention 2, checkpointing, the accelerate configs of ``examples/sft/configs``. The
  script loads the base in bfloat16 as DeepSpeed/FSDP hold it under ``mixed_precision: bf16``
  (peft ``examples/sft/utils.py`` loads a non-quantized base in float32 and DeepSpeed's bf16
  engine casts it; a quantized one in ``bnb_4bit_quant_storage_dtype`` bfloat16).

``release``: litgpt's rows ran lit-gpt 8641822, whose ``finetune/lora.py`` used
``FSDPStrategy`` (FSDP1, mixed Block units); current litgpt (what the config alone implies)
uses ``ModelParallelStrategy`` (FSDP2). The row's release is a version context, as
``--assume-version`` is: ``fsdp_version`` 1 is set on the section with that source.

Usage: ``python bench/multi_gpu.py [--rows 25,30]``. Prints per row: the setup, the sharding ×
ranks the run was read as, the measured per-GPU peak, the estimate, the error; then the median
and p90 of |error| over the measured rows of normal reliability (acceptance: median within 15%).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from lintlora.engine import read_setups  # noqa: E402
from lintlora.estimate.architecture import resolve_architecture  # noqa: E402
from lintlora.estimate.from_setup import inputs_from_setup  # noqa: E402
from lintlora.estimate.memory import EstimateInputs, estimate_memory  # noqa: E402
from lintlora.estimate.profiles import get_profile  # noqa: E402
from lintlora.extract.distributed import distributed_for  # noqa: E402
from lintlora.extract.launch import discover_launches  # noqa: E402
from lintlora.training_setup import Origin, Setting  # noqa: E402
from rowgen import RowSetup, script_for  # noqa: E402

CSV = ROOT / "tests" / "data" / "measured_peaks.csv"
PEFT_DOCS = "huggingface/peft@5d602fdb docs/source/accelerate/"


@dataclass
class Row:
    """One run: its files, the measured per-GPU peak (bytes) and the counter it was read on."""

    row_id: str
    label: str
    files: dict[str, str]
    script: str
    measured: float
    counter: str  # "allocated" | "device"
    reliable: bool = True
    release_fsdp1: bool = False


def _text_launch(s: RowSetup, n: int) -> tuple[dict[str, str], str, bool]:
    """Files and entry of a truth-table row: the generated script/config and its launch."""
    name, text = script_for(s, resolve_architecture(s.model))
    if s.generator == "litgpt":
        # lit-gpt 8641822 finetune/lora.py: devices=2 (the table's runs), global batch 128
        text = text.replace("devices: 1\n", f"devices: {n}\n").replace(
            f"  global_batch_size: {max(s.inputs.batch_size, 16)}\n", "  global_batch_size: 128\n")
        return {name: text, "run.sh": f"litgpt finetune_lora --config {name}\n"}, name, True
    if s.generator == "torchtune":
        return ({name: text, "run.sh": f"tune run --nproc_per_node {n} lora_finetune_distributed --config {name}\n"},
                name, False)
    # philschmid's FSDP-QLoRA: torchrun with TrainingArguments fsdp="full_shard auto_wrap offload"
    # and bnb_4bit_quant_storage=torch.bfloat16 (training/scripts/run_fsdp_qlora.py, its yaml)
    text = text.replace("    load_in_4bit=True,\n", "    load_in_4bit=True,\n    bnb_4bit_quant_storage=torch.bfloat16,\n")
    text = text.replace("    output_dir=\"out\",\n", "    output_dir=\"out\",\n    fsdp=\"full_shard auto_wrap offload\",\n")
    return {name: text, "run.sh": f"torchrun --nproc_per_node {n} {name}\n"}, name, False


def truth_rows(wanted: set[str] | None) -> list[Row]:
    import accuracy

    out = []
    with open(CSV, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            n = accuracy._int(r["num_gpus"]) or 1
            if n <= 1 or (wanted and r["row_id"] not in wanted) or r["kind"].lower().startswith("bound"):
                continue
            s = accuracy.row_setup(r)
            if isinstance(s, str):
                print(f"  row {r['row_id']:>4}: left out ({s})")
                continue
            try:
                files, entry, fsdp1 = _text_launch(s, n)
            except (KeyError, ValueError) as exc:
                print(f"  row {r['row_id']:>4}: no generator ({exc})")
                continue
            measured = float(r["peak_gb"]) * accuracy._unit(r)
            reliable = not r["reliability"].lower().startswith("low")
            rows_counter = accuracy._counter(r)
            out.append(Row(r["row_id"], f"{r['model']} {r['method']} mb{r['micro_batch']} seq{r['seq_len']}",
                           files, entry, measured, rows_counter, reliable, fsdp1))
    return out


# ---- the PEFT documentation's runs ------------------------------------------------------------------

_ACC_DS = """compute_environment: LOCAL_MACHINE
deepspeed_config:
  deepspeed_multinode_launcher: standard
{gas}  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: {n}
"""
_ACC_FSDP = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
downcast_bf16: 'no'
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_cpu_ram_efficient_loading: true
  fsdp_forward_prefetch: false
  fsdp_offload_params: {offload}
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_sync_module_states: true
  fsdp_use_orig_params: false
machine_rank: 0
main_training_function: main
mixed_precision: 'no'
num_machines: 1
num_processes: {n}
"""


def _peft_row(row_id: str, label: str, quant: bool, bs: int, gas: int, acc: str, gb: float) -> Row:
    i = EstimateInputs(method="qlora" if quant else "lora", batch_size=bs, seq_len=2048, lora_r=8,
                       lora_dropout=0.1, target_modules="all-linear", attn_implementation="flash_attention_2",
                       gradient_checkpointing=True, framework="trl", quant="nf4" if quant else None,
                       double_quant=quant, weight_dtype="bfloat16", compute_dtype="bfloat16",
                       optim="adamw_torch")
    s = RowSetup(row_id, "meta-llama/Llama-2-70b-hf", "trl-sft", i, {})
    name, text = script_for(s, resolve_architecture(s.model))
    if quant:
        text = text.replace("    load_in_4bit=True,\n", "    load_in_4bit=True,\n    bnb_4bit_quant_storage=torch.bfloat16,\n")
    text = text.replace("    gradient_accumulation_steps=1,\n", f"    gradient_accumulation_steps={gas},\n")
    files = {name: text, "configs/acc.yaml": acc,
             "run.sh": f"accelerate launch --config_file \"configs/acc.yaml\" {name}\n"}
    return Row(row_id, label, files, name, gb * 1e9, "device")


def peft_rows() -> list[Row]:
    ds = PEFT_DOCS + "deepspeed.md"
    fs = PEFT_DOCS + "fsdp.md"
    return [
        _peft_row("peft-ds-z3-lora", f"Llama-2-70B LoRA bs8 ZeRO-3 8×H100 ({ds})", False, 8, 4,
                  _ACC_DS.format(gas="  gradient_accumulation_steps: 4\n", n=8), 64.0),
        _peft_row("peft-ds-z3-qlora", f"Llama-2-70B QLoRA bs2 ZeRO-3 2×GPU ({ds})", True, 2, 2,
                  _ACC_DS.format(gas="", n=2), 36.6),
        _peft_row("peft-fsdp-qlora-offload", f"Llama-2-70B QLoRA bs2 FSDP offload 2×24GB ({fs})", True, 2, 2,
                  _ACC_FSDP.format(offload="true", n=2), 19.6),
        _peft_row("peft-fsdp-qlora", f"Llama-2-70B QLoRA bs2 FSDP no offload 2×GPU ({fs})", True, 2, 2,
                  _ACC_FSDP.format(offload="false", n=2), 35.6),
    ]


# ---- reading a run -------------------------------------------------------------------------------------

def estimate_run(row: Row, folder: Path):
    """``(estimate, distributed, problems)`` of the run whose files ``row`` holds."""
    root = folder / row.row_id
    (root / ".git").mkdir(parents=True)
    for name, text in row.files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (setup,) = read_setups(str(root / row.script))
    found = discover_launches([str(root / "run.sh")], root=str(root))
    dist, _files, problems = distributed_for(setup, found.launches[0], root=str(root))
    if row.release_fsdp1 and dist is not None:
        dist = replace(dist, fsdp_version=Setting(1, Origin.ASSUMED, None, None,
                                                  "lit-gpt 8641822 finetune/lora.py FSDPStrategy (the row's release)"))
    setup = setup.replace(distributed=dist)
    name = setup.get("model.name_or_path").value
    if setup.framework == "litgpt":
        name = str(name).removeprefix("checkpoints/")
    arch = resolve_architecture(name, framework=setup.framework)
    inputs, notes = inputs_from_setup(setup, arch, None)
    if setup.framework == "litgpt":
        # lit-gpt 2023 forced its longest sample into the first micro-batch (the rows'
        # protocol; bench/accuracy.py row_inputs): no previous step's graph alive at that peak
        inputs = replace(inputs, previous_batch_ratio=0.0)
    est = estimate_memory(inputs, arch, get_profile(inputs.framework), assumptions=notes)
    return est, dist, tuple(found.problems) + tuple(problems)


def _p90(errs: list[float]) -> float:
    errs = sorted(errs)
    return errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))] if errs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", help="comma-separated row ids of the truth table (default: all multi-GPU rows)")
    args = ap.parse_args(argv)
    wanted = set(args.rows.split(",")) if args.rows else None
    rows = truth_rows(wanted) + ([] if wanted else peft_rows())
    errs: list[float] = []
    print("per-GPU peak of multi-GPU LoRA/QLoRA runs (measured vs lintlora's estimate of the run)")
    with tempfile.TemporaryDirectory(prefix="lintlora-multi-") as tmp:
        for row in rows:
            est, dist, problems = estimate_run(row, Path(tmp))
            got = est.allocated_bytes if row.counter == "allocated" else (
                est.reserved_bytes if row.counter == "reserved" else est.device_bytes)
            err = 100.0 * (got - row.measured) / row.measured
            ranks = dist.world_size.value if dist is not None and dist.world_size.known else "?"
            mark = "" if row.reliable else "  (low reliability: not summarised)"
            print(f"  {row.row_id:>24} {row.label[:70]:70}\n{'':27}{est.sharding or 'one GPU'} "
                  f"(world size {ranks}, {row.counter}): measured {row.measured / 1e9:6.2f} GB, "
                  f"estimate {got / 1e9:6.2f} GB, error {err:+6.1f}%{mark}")
            for p in problems:
                print(f"{'':27}problem: {os.path.basename(p.path)}:{p.line}: {p.message}")
            if row.reliable:
                errs.append(abs(err))
    if errs:
        print(f"  n={len(errs)} median |error| {statistics.median(errs):.1f}% p90 {_p90(errs):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
