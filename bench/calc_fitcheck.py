"""Run fitcheck-llm (PyPI ``fitcheck-llm==0.3.1``) on rows given as JSON on stdin.

Executed by ``bench/accuracy.py`` with the Python of its own venv (``bench/out/calc-venv``,
not a project dependency): ``python bench/calc_fitcheck.py < rows.json``. Each input item is
``{"id", "model": {ModelConfig fields}, "training": {TrainingConfig fields}, "gpu": key or
null, "vram_mib": int or null}``; each output item ``{"id", "total_mib"}`` or ``{"id",
"error"}``. fitcheck's ``total_mib`` is the process's memory (its ``overhead`` adds the CUDA
context and the caching allocator's fragmentation to allocated memory: fitcheck
``memory/overhead.py``, ``calibrate.py`` process_mib = reserved + context), so it is scored
as the device counter. The model shapes are passed in (lintlora's catalog: the same
config.json facts), so fitcheck reads nothing from the Hub.
"""

import json
import sys

import fitcheck
from fitcheck import ModelConfig, TrainingConfig, estimate, get_gpu

PINNED = "0.3.1"


def main() -> None:
    if fitcheck.__version__ != PINNED:
        print(json.dumps({"error": f"fitcheck-llm {fitcheck.__version__} installed, {PINNED} pinned"}))
        return
    items = json.load(sys.stdin)
    out = []
    for it in items:
        try:
            gpu = get_gpu(it["gpu"]) if it.get("gpu") else get_gpu("custom", vram_mib=int(it["vram_mib"]))
            rep = estimate(ModelConfig(**it["model"]), TrainingConfig(**it["training"]), gpu)
            out.append({"id": it["id"], "total_mib": rep.total_mib})
        except Exception as exc:  # fitcheck refuses a setup: reported per row
            out.append({"id": it["id"], "error": f"{type(exc).__name__}: {exc}"[:300]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
