"""Hostile ``target_modules`` patterns: a regular expression from the linted file that could
backtrack for exponential time is never matched (estimator, LL003, LL012), so linting it ends.

``(.*)*x`` against a 31-character module path (``model.layers.0.self_attn.q_proj``) does not
finish in a minute in CPython's ``re``; before the guard, any finding on such a script (its
estimate counts the adapters with the pattern) hung the run. Each case runs in a subprocess
with a timeout so a regression fails instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from lintlora.estimate.params import UnsafePatternError, count_trainable, pattern_may_backtrack

SCRIPT = '''import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig(r=8, target_modules={pattern!r}))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="o", gradient_checkpointing=False, bf16=True)
Trainer(model=model, args=args, train_dataset=data).train()
'''

HOSTILE = [r"(.*)*x", r"(a|aa)*$", r"(\w+\.?)*zzz", r"((.*)*)*(embed_tokens|zz)", r"(.+)+\d{9}$",
           "(" * 200 + "a" + ")" * 200, "a" * 5000]


@pytest.mark.parametrize("pattern", HOSTILE, ids=range(len(HOSTILE)))
def test_linting_a_backtracking_pattern_ends(tmp_path, pattern):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(pattern=pattern), encoding="utf-8")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "lintlora", str(path), "--gpu", "t4", "--no-cache",
                           "--format", "json"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert time.monotonic() - start < 60
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "LL999" not in proc.stdout and "Traceback" not in proc.stderr


def test_the_guard():
    for pattern in HOSTILE[:5]:
        assert pattern_may_backtrack(pattern), pattern
    for pattern in (r".*\.(q_proj|v_proj)", r"model\.layers\.\d+\.self_attn\.(q|k|v|o)_proj", ".*",
                    r".*(?:\.\w+)?", "lm_head"):
        assert not pattern_may_backtrack(pattern), pattern
    from lintlora.estimate.architecture import resolve_architecture

    with pytest.raises(UnsafePatternError):
        count_trainable(resolve_architecture("meta-llama/Llama-2-7b-hf"), 8, r"(.*)*x")
