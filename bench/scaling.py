"""Lint time against file size: how it grows (close to linear; issue 7, "bounded time").

    python bench/scaling.py [--sizes 1000,2000,...] [--repeat 3] [--yaml] [--stages] [--gc-off]
                            [--json]

For each size, a Python training script of that many lines is generated (:func:`script`: helper
functions, a class, dict and list literals, strings, and a QLoRA training setup at the end, so
the extractor resolves values and computes positions), written to a temporary folder and linted
through :func:`lintlora.engine.lint_paths` (reading, decoding, nesting checks, LibCST parse,
extraction, rules, estimator), best of ``--repeat`` runs. The size limit is raised for the run
so the largest file is linted, not refused.

Printed per size: lines, bytes, seconds, microseconds per line; then a least-squares fit
``t = a + b * lines`` and the exponent ``k`` of ``t ~ lines**k`` between the smallest and the
largest size (1.0 is linear, 2.0 quadratic). ``--stages`` adds a breakdown of the largest file:
decoding, CPython's AST parse (the nesting checks), LibCST's parse, and the whole extraction.
``--yaml`` does the same for YAML configs, up to the YAML loader's own limits
(:data:`lintlora.extract.yaml_loader.MAX_NODES`).

Measured on the team's 2-core VM (Python 3.11, libcst 1.9, other jobs running), best of 3:
1,000 lines 0.15 s (146 us/line) ... 100,000 lines 26 s (261 us/line); fit 0.26 s per 1,000
lines, r2 0.996, exponent 1.13: close to linear, the cost per line rising about 1.7 times over
a hundredfold size. ``--gc-off`` shows one part of the rise: with the cyclic garbage collector
off, 100,000 lines take 22 s instead of 26 s (exponent 1.09); LibCST's own parse goes from
106 to 128 us/line between 10,000 and 100,000 lines without the collector, 136 to 218 with it.
YAML: 62-72 us/line from 250 to 6,000 lines, exponent 0.95. The timings depend on the machine;
the exponent should not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lintlora.engine import lint_paths  # noqa: E402
from lintlora.settings import Settings  # noqa: E402

DEFAULT_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
YAML_SIZES = (250, 500, 1_000, 2_000, 4_000, 6_000)
"""Up to 6,000 lines: about 14,000 YAML nodes, under the loader's MAX_NODES (20,000)."""

_HEADER = [
    "import torch",
    "from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments, "
    "Trainer",
    "from peft import LoraConfig, get_peft_model",
    "",
]

_FOOTER = [
    "bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4',",
    "                         bnb_4bit_compute_dtype=torch.bfloat16)",
    "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf',",
    "                                             quantization_config=bnb)",
    "model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32,",
    "                                         target_modules=['q_proj', 'v_proj']))",
    "model.print_trainable_parameters()",
    "args = TrainingArguments(output_dir='out', per_device_train_batch_size=BATCH,",
    "                         gradient_checkpointing=False, bf16=True)",
    "Trainer(model=model, args=args).train()",
]
"""The setup at the end of every generated script; ``gradient_checkpointing=False`` is on the
line ``len(lines) - 1`` so a test can check that a finding in a huge file has the right line."""


def _block(i: int) -> list[str]:
    return [
        f"def helper_{i}(x, y=3, *args, name='h{i}', **kwargs):",
        f'    """Helper number {i}: returns a small mapping."""',
        f"    z = x * y + {i} - len(args)",
        "    if z > 10 and name:",
        "        values = [a for a in range(z) if a % 2]",
        "    else:",
        "        values = {'a': z, 'b': [1, 2, 3], 'c': (x, y)}",
        f"    return {{'name': name, 'values': values, 'n': {i}}}",
        "",
        f"class Holder{i}:",
        f"    size = {i % 97}",
        "",
        "    def get(self, key, default=None):",
        "        return getattr(self, key, default)",
        "",
    ]


def script(lines: int) -> str:
    """A Python training script of exactly ``lines`` lines (at least 40).

    The QLoRA setup of :data:`_FOOTER` ends the file, after ``BATCH = 4``; its
    ``gradient_checkpointing=False`` is on line ``lines - 1``.
    """
    lines = max(lines, 40)
    out = list(_HEADER)
    i = 0
    body_end = lines - len(_FOOTER) - 1
    while len(out) + len(_block(i + 1)) <= body_end:
        i += 1
        out.extend(_block(i))
    out.extend(f"# padding {n}" for n in range(body_end - len(out)))
    out.append("BATCH = 4")
    out.extend(_FOOTER)
    assert len(out) == lines, (len(out), lines)
    return "\n".join(out) + "\n"


def yaml_config(lines: int) -> str:
    """An axolotl config padded with ``lines`` lines of dataset entries (at least 20)."""
    out = ["base_model: meta-llama/Llama-2-7b-hf", "adapter: qlora", "load_in_4bit: true",
           "lora_r: 16", "lora_alpha: 32", "lora_target_linear: true", "sequence_len: 4096",
           "micro_batch_size: 2", "gradient_accumulation_steps: 4", "bf16: true",
           "gradient_checkpointing: false", "datasets:"]
    i = 0
    while len(out) < lines:
        i += 1
        out += [f"  - path: org/dataset-{i}", "    type: alpaca", f"    split: train[:{i}%]"]
    return "\n".join(out[:max(lines, 15)]) + "\n"


def _time_lint(path: str, repeat: int, gc_off: bool = False) -> float:
    import gc

    settings = Settings(max_file_bytes=1 << 30)
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if gc_off:
            gc.disable()
        try:
            start = time.perf_counter()
            result = lint_paths([path], settings)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
        codes = {f.code for f in result.findings}
        if result.errors or "LL000" in codes or "LL001" not in codes:
            raise SystemExit(f"unexpected result on {path}: {result.errors} {sorted(codes)}")
    return best


def _fit(points: list[tuple[int, float]]) -> dict:
    """Least-squares ``t = a + b*n`` and the exponent between the first and last point."""
    import math

    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    b = sxy / sxx if sxx else 0.0
    a = mean_y - b * mean_x
    ss_tot = sum((y - mean_y) ** 2 for _, y in points)
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in points)
    (x0, y0), (x1, y1) = points[0], points[-1]
    exponent = math.log(y1 / y0) / math.log(x1 / x0) if y0 > 0 and x1 != x0 else float("nan")
    return {"intercept_s": a, "seconds_per_1000_lines": b * 1000,
            "r2": 1 - ss_res / ss_tot if ss_tot else 1.0, "exponent": exponent}


def measure(kind: str, sizes: list[int], repeat: int, gc_off: bool = False) -> dict:
    """Lint generated files of each size; returns rows and the fit. ``gc_off``: with Python's
    cyclic garbage collector disabled while linting (its full collections traverse every live
    object, so their cost grows with the size of the file's trees)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        lint_paths([_write(folder, kind, 40)])  # warm imports and catalogs
        for size in sizes:
            path = _write(folder, kind, size)
            seconds = _time_lint(path, repeat, gc_off)
            rows.append({"lines": size, "bytes": os.path.getsize(path), "seconds": seconds,
                         "us_per_line": seconds / size * 1e6})
    return {"kind": kind + (" (gc off)" if gc_off else ""), "rows": rows,
            "fit": _fit([(r["lines"], r["seconds"]) for r in rows])}


def _write(folder: str, kind: str, size: int) -> str:
    path = os.path.join(folder, f"gen_{size}.{'py' if kind == 'python' else 'yml'}")
    text = script(size) if kind == "python" else yaml_config(size)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def stages(lines: int) -> dict:
    """Seconds spent per stage on one generated script (the stages overlap: ``extract``
    includes the preflight and LibCST's parse)."""
    import ast

    import libcst

    from lintlora.engine import read_source
    from lintlora.extract.python import extract_python

    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, "python", lines)
        out = {}
        start = time.perf_counter()
        text = read_source(path, "python", 1 << 30)
        out["read_and_decode"] = time.perf_counter() - start
        start = time.perf_counter()
        ast.parse(text)
        out["cpython_ast_parse"] = time.perf_counter() - start
        start = time.perf_counter()
        libcst.parse_module(text)
        out["libcst_parse"] = time.perf_counter() - start
        start = time.perf_counter()
        extract_python(path, text)
        out["extract_python"] = time.perf_counter() - start
        start = time.perf_counter()
        lint_paths([path], Settings(max_file_bytes=1 << 30))
        out["lint_paths"] = time.perf_counter() - start
    return out


def _print(report: dict) -> None:
    print(f"{report['kind']}: lines  bytes  seconds  us/line")
    for row in report["rows"]:
        print(f"  {row['lines']:>8,} {row['bytes']:>11,} {row['seconds']:8.3f} "
              f"{row['us_per_line']:8.1f}")
    fit = report["fit"]
    print(f"  fit: t = {fit['intercept_s']:.3f} s + {fit['seconds_per_1000_lines']:.4f} s per "
          f"1,000 lines (r2 {fit['r2']:.4f}); exponent {fit['exponent']:.2f} "
          f"(1.0 = linear)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="comma-separated line counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (best is kept)")
    parser.add_argument("--yaml", action="store_true", help="also measure YAML configs")
    parser.add_argument("--stages", action="store_true", help="stage breakdown, largest size")
    parser.add_argument("--gc-off", action="store_true",
                        help="also measure Python with the garbage collector disabled")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",")) if args.sizes else list(DEFAULT_SIZES)
    reports = [measure("python", sizes, args.repeat)]
    if args.gc_off:
        reports.append(measure("python", sizes, args.repeat, gc_off=True))
    if args.yaml:
        reports.append(measure("yaml", list(YAML_SIZES), args.repeat))
    out: dict = {"python": sys.version.split()[0], "reports": reports}
    if args.stages:
        out["stages"] = {"lines": sizes[-1], "seconds": stages(sizes[-1])}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for report in reports:
        _print(report)
    if args.stages:
        print(f"stages for {sizes[-1]:,} lines (seconds):")
        for name, seconds in out["stages"]["seconds"].items():
            print(f"  {name:<18} {seconds:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
