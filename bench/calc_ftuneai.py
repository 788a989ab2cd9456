"""Run ftuneai (PyPI ``ftuneai==0.4.1``, "Estimate GPU memory, training time, and costs for
LLM fine-tuning") on rows given as JSON on stdin; the second calculator of ``bench/accuracy.py``.

Executed with the Python of its own venv (``bench/out/calc2-venv``, not a project dependency).
Each item: ``{"id", "model": {ModelSpec fields}, "training": {TrainingConfig fields}}``; each
output ``{"id", "total_gib"}`` or ``{"id", "error"}``. ftuneai's ``total_gb`` is in GiB
(``BYTES_TO_GB = 1 / (1024**3)``, ftuneai ``core/memory.py``) and adds a fixed share of CUDA
overhead to the subtotal, so it is scored as the device counter. Its LoRA targets are three
presets (``attention``: q,v; ``attention_all``: q,k,v,o; ``all_linear``) and it has no 4-bit
data type choice, modules_to_save or paged optimizer.
"""

import json
import sys
from importlib.metadata import version

from ftuneai.core.memory import MemoryEstimator
from ftuneai.core.models import (FineTuneMethod, LoRATarget, ModelSpec, OptimizerType, Quantization,
                                 TrainingConfig)

PINNED = "0.4.1"


def main() -> None:
    if version("ftuneai") != PINNED:
        print(json.dumps({"error": f"ftuneai {version('ftuneai')} installed, {PINNED} pinned"}))
        return
    out = []
    for it in json.load(sys.stdin):
        try:
            t = dict(it["training"])
            t["method"] = FineTuneMethod(t["method"])
            t["quantization"] = Quantization(t["quantization"])
            t["optimizer"] = OptimizerType(t["optimizer"])
            t["lora_target"] = LoRATarget(t["lora_target"])
            rep = MemoryEstimator(ModelSpec(**it["model"]), TrainingConfig(**t)).estimate()
            out.append({"id": it["id"], "total_gib": rep.total_gb})
        except Exception as exc:  # the calculator refuses a setup: reported per row
            out.append({"id": it["id"], "error": f"{type(exc).__name__}: {exc}"[:300]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
