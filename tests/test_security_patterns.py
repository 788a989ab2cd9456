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


def test_long_and_many_target_names_are_bounded(tmp_path):
    """A list of long names (built here, a few MB of source): judged in bounded time, and each
    name the message repeats is cut to 80 characters; more than 64 entries are not judged."""
    # names under the resolver's string bound (lintlora/extract/pybounds.py, 10,000
    # characters); a longer one leaves the list unresolved, and LL012 silent (checked below)
    long = "q_proj" + "x" * 9_000
    names = ["q_proj", "v_proj", "gate_proj", "o_proj." + "y" * 8_000, long]
    path = tmp_path / "train.py"
    script = SCRIPT.replace("{pattern!r}", repr(names)).replace("meta-llama/Llama-2-7b-hf",
                                                                 "microsoft/Phi-3-mini-4k-instruct")
    path.write_text(script, encoding="utf-8")
    from rules_support import lint

    from lintlora.settings import Settings

    start = time.monotonic()
    result = lint(path, Settings(gpu="a100-80gb"))
    assert time.monotonic() - start < 30
    [f] = [f for f in result.findings if f.code == "LL012"]
    assert len(f.message) < 2_000 and len(f.fix or "") < 2_000
    many = tmp_path / "many.py"
    many.write_text(SCRIPT.replace("{pattern!r}", repr([f"q_proj{i}" for i in range(65)] + ["q_proj"]))
                    .replace("meta-llama/Llama-2-7b-hf", "microsoft/Phi-3-mini-4k-instruct"), encoding="utf-8")
    assert [f for f in lint(many, Settings()).findings if f.code == "LL012"] == []
    beyond = tmp_path / "beyond.py"
    beyond.write_text(script.replace("x" * 9_000, "x" * 200_000), encoding="utf-8")
    assert [f for f in lint(beyond, Settings(gpu="a100-80gb")).findings if f.code == "LL012"] == []
