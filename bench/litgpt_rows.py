"""Score the litgpt rows of the truth table with each row's data protocol stated.

``bench/accuracy.py`` prices every row at the steady state (``EstimateInputs.previous_batch_ratio``
= 1: the micro-batch before the peak one was as long), which is what litgpt's CLI does with
truncated data (the config-hub table, 2024: Alpaca2k truncated at 512 tokens, shuffled). The
lit-gpt tables of 2023 (resource tables at 8641822, finetune_lora.md at 78fd897e) ran
``finetune/lora.py`` whose ``get_batch(fabric, train_data, longest_seq_ix if iter_num == 0 else
None)`` forces the single longest Alpaca sample into the first micro-batch and draws the others at
random (padded to the longest in each, mostly far shorter): their peak is the first step's, with
no previous step alive (``previous_batch_ratio`` = 0). The rows say so in ``seq_len_note``
("first micro-batch forced to contain the longest sample", "longest sample forced first").

Prints, per measured single-GPU litgpt row, the measured peak, the estimate at the steady state
(as ``bench/accuracy.py``'s inputs path) and the estimate with the row's protocol, and the median
and p90 of |error| for both. Needs only lintlora.

Usage: ``python bench/litgpt_rows.py``
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import accuracy  # noqa: E402
from lintlora.estimate.architecture import resolve_architecture  # noqa: E402
from lintlora.estimate.memory import estimate_memory  # noqa: E402
from lintlora.estimate.profiles import get_profile  # noqa: E402

FIRST_STEP_NOTES = accuracy.FIRST_STEP_NOTES
first_step_protocol = accuracy._first_step_protocol


def _p90(errs: list[float]) -> float:
    return accuracy._p90(errs)


def main() -> None:
    rows = accuracy.load()
    out = []
    for row in rows:
        if accuracy._framework(row) != "litgpt" or not row["peak_gb"]:
            continue
        if "low" in row["reliability"].lower():
            continue  # bench/accuracy.py leaves low-reliability rows out of its summary
        s = accuracy.row_setup(row)
        if isinstance(s, str):
            continue
        arch = resolve_architecture(accuracy._MODEL_IDS.get(s.model, s.model))
        prof = get_profile("litgpt")
        meas = float(row["peak_gb"]) * accuracy._unit(row)
        # row_inputs already applies the row's protocol; the steady state is the estimator's default
        steady = estimate_memory(replace(s.inputs, previous_batch_ratio=1.0), arch, prof)
        first = first_step_protocol(row)
        proto = estimate_memory(replace(s.inputs, previous_batch_ratio=0.0), arch, prof) if first else steady
        out.append((row, meas, steady, proto, first))
    print(f"{'row':>4} {'model':34} {'method':6} {'meas GB':>8} {'steady':>7} {'err %':>6} {'protocol':>9} {'err %':>6}  phase")
    e_steady, e_proto = [], []
    for row, meas, steady, proto, first in out:
        a = 100 * (steady.allocated_bytes - meas) / meas
        b = 100 * (proto.allocated_bytes - meas) / meas
        e_steady.append(abs(a))
        e_proto.append(abs(b))
        print(f"{row['row_id']:>4} {row['model'][:34]:34} {row['method'][:6]:6} {meas / 1e9:8.2f} "
              f"{steady.allocated_bytes / 1e9:7.2f} {a:6.1f} {proto.allocated_bytes / 1e9:9.2f} {b:6.1f}  "
              f"{proto.peak_phase}{' (first step)' if first else ''}")
    print(f"n = {len(out)}: steady state median {statistics.median(e_steady):.1f} % p90 {_p90(e_steady):.1f} %; "
          f"each row's protocol median {statistics.median(e_proto):.1f} % p90 {_p90(e_proto):.1f} %")


if __name__ == "__main__":
    main()
