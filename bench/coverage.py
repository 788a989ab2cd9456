"""Extraction coverage: how much of what the estimator needs lintlora resolved, per file and overall.

    python bench/coverage.py PATH... [--why] [--json]

PATH is a script, a notebook or a folder (``*.py`` and ``*.ipynb`` inside, recursively). For
each setup the nine settings the memory estimate rests on are checked:

    model          model.name_or_path
    quantization   whether (and in how many bits) the base model is quantized
    lora_r         lora.r
    lora_targets   lora.target_modules (None = peft's per-architecture default, a value too)
    batch_size     training.per_device_train_batch_size, else a DataLoader's batch_size
    seq_len        training.max_seq_length
    checkpointing  lintlora.facts.checkpointing (training argument, calls, prepare helper)
    precision      fp16/bf16 training arguments, else torch_dtype or an autocast dtype
    optimizer      training.optim

A setting counts as resolved when lintlora knows its value, whatever the origin (a literal, an
argparse or dataclass default, a library default...): that is what the estimator can use. A file
scores the mean of its setups; the overall figure is the mean over files. ``--why`` lists what
stayed unresolved with lintlora's reason. Files that fail to parse, or hold no setup, score 0 and
are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lintlora import facts  # noqa: E402
from lintlora.extract import ExtractError  # noqa: E402
from lintlora.training_setup import Setting, TrainingSetup  # noqa: E402

ITEMS = ("model", "quantization", "lora_r", "lora_targets", "batch_size", "seq_len",
         "checkpointing", "precision", "optimizer")


def _why(setting: Setting | None, fallback: str) -> str:
    if setting is None:
        return fallback
    text = setting.source or fallback
    if setting.expr:
        text += f" (`{' '.join(setting.expr.split())[:60]}`)"
    return text


def score(setup: TrainingSetup) -> dict[str, tuple[bool, str]]:
    """Item -> (resolved, reason when not)."""
    out: dict[str, tuple[bool, str]] = {}
    m = setup.model
    out["model"] = ((m is not None and m.name_or_path.known),
                    _why(m.name_or_path if m else None, "no model load found"))
    bits = facts.quant_bits(setup)
    q_ok = bits is not None and (setup.model is not None or setup.quantization is not None)
    q_why = ("no model load found" if setup.model is None and setup.quantization is None
             else _why(setup.quantization.bits if setup.quantization else None, "unresolved"))
    out["quantization"] = (q_ok, q_why)
    lora = setup.lora
    out["lora_r"] = (lora is not None and lora.r.known,
                     _why(lora.r if lora else None, "no adapter config found"))
    out["lora_targets"] = (lora is not None and lora.target_modules.known,
                           _why(lora.target_modules if lora else None, "no adapter config found"))
    t = setup.training
    bs_ok = t is not None and t.per_device_train_batch_size.known
    if not bs_ok and any(d.batch_size.known for d in setup.dataloaders):
        bs_ok = True
    out["batch_size"] = (bs_ok, _why(t.per_device_train_batch_size if t else None,
                                     "no training arguments or DataLoader found"))
    out["seq_len"] = (t is not None and t.max_seq_length.known,
                      _why(t.max_seq_length if t else None,
                           "no sequence length in the training arguments (set by tokenization)"))
    gc = facts.checkpointing(setup)
    out["checkpointing"] = (gc.value is not None, gc.reason)
    if t is not None:
        p_ok = t.fp16.known and t.bf16.known
        p_why = _why(t.fp16 if not t.fp16.known else t.bf16, "unresolved")
    else:
        autocast = [c for c in setup.calls_of("autocast") if "dtype" in c.args]
        p_ok = (m is not None and m.torch_dtype.known) or any(c.args["dtype"].known for c in autocast)
        p_why = _why(m.torch_dtype if m else None, "no dtype found")
    out["precision"] = (p_ok, p_why)
    out["optimizer"] = (t is not None and t.optim.known,
                        _why(t.optim if t else None,
                             "no training arguments (a hand-written loop's optimizer is not read)"))
    return out


def extract(path: str) -> list[TrainingSetup]:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if path.endswith(".ipynb"):
        from lintlora.extract.notebook import extract_notebook

        return extract_notebook(path, text)
    from lintlora.extract.python import extract_python

    return extract_python(path, text)


def files_under(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                out += [os.path.join(root, n) for n in sorted(names)
                        if n.endswith((".py", ".ipynb"))]
        else:
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--why", action="store_true", help="list what stayed unresolved and why")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    results = []
    for path in files_under(args.paths):
        t0 = time.perf_counter()
        try:
            setups = extract(path)
            error = None
        except ExtractError as exc:
            setups, error = [], f"LL000 {exc.message} (line {exc.line})"
        ms = (time.perf_counter() - t0) * 1000
        per_setup = [score(s) for s in setups]
        if per_setup:
            file_score = sum(sum(ok for ok, _ in sc.values()) / len(ITEMS)
                             for sc in per_setup) / len(per_setup)
        else:
            file_score = 0.0
        results.append({"path": path, "ms": round(ms, 1), "setups": len(setups),
                        "score": round(file_score, 3), "error": error,
                        "items": [{k: ok for k, (ok, _w) in sc.items()} for sc in per_setup],
                        "why": [{k: w for k, (ok, w) in sc.items() if not ok} for sc in per_setup]})

    overall = sum(r["score"] for r in results) / len(results) if results else 0.0
    if args.json:
        print(json.dumps({"items": ITEMS, "files": results, "overall": round(overall, 3)},
                         indent=2))
        return 0
    width = max((len(os.path.relpath(r["path"])) for r in results), default=10)
    header = f"{'file':<{width}}  setups  " + " ".join(f"{i[:6]:>6}" for i in ITEMS) + "  score    ms"
    print(header)
    for r in results:
        name = os.path.relpath(r["path"])
        if r["error"] or not r["items"]:
            print(f"{name:<{width}}  {r['setups']:>6}  {r['error'] or 'no setup found'}")
            continue
        for i, items in enumerate(r["items"]):
            marks = " ".join(f"{'yes' if items[k] else 'no':>6}" for k in ITEMS)
            label = name if i == 0 else ""
            tail = f"  {r['score']:>5.0%} {r['ms']:>6.1f}" if i == 0 else ""
            print(f"{label:<{width}}  {r['setups'] if i == 0 else '':>6}  {marks}{tail}")
        if args.why:
            for i, why in enumerate(r["why"]):
                for k, w in why.items():
                    print(f"{'':<{width}}    setup {i + 1} {k}: {w}")
    print(f"overall: {overall:.0%} of the estimator's settings resolved over {len(results)} file(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
