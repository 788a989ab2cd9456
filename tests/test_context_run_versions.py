"""Context.estimator_versions and Context.time_estimate: the estimate reads the run's pinned
versions (issue 16), and the time model prices 4-bit matmuls computed in float32."""

from __future__ import annotations

import dataclasses

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.settings import Settings
from lintlora.training_setup import PinnedVersion, Span

SCRIPT = """from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True)).train()
"""


def _setup(tmp_path, pins=()):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT, encoding="utf-8")
    [s] = extract_python(str(path), SCRIPT)
    return dataclasses.replace(s, versions=tuple(pins))


def _pin(package, version):
    return PinnedVersion(package, f"=={version}", version, Span("/p/requirements.txt", 2), "requirements")


def test_only_pinned_versions_reach_the_estimator(tmp_path):
    ctx = Context(Settings())
    assert ctx.estimator_versions(_setup(tmp_path)) == ()
    pinned = _setup(tmp_path, (_pin("transformers", "4.44.2"), _pin("flash-attn", "2.6.3")))
    assert [v[:2] for v in ctx.estimator_versions(pinned)] == [("transformers", "4.44.2")]


def test_the_float32_load_of_transformers_4_follows_the_pin(tmp_path):
    ctx = Context(Settings())
    five = ctx.estimate(_setup(tmp_path)).breakdown["weights"]
    four = ctx.estimate(_setup(tmp_path, (_pin("transformers", "4.44.2"),))).breakdown["weights"]
    # float32 weights (4 B), plus the estimator's 16-bit copies autocast makes of them
    assert four >= 1.9 * five


def test_no_time_without_a_gpu(tmp_path):
    assert Context(Settings()).time_estimate(_setup(tmp_path)) is None
    t = Context(Settings(gpu="l4")).time_estimate(_setup(tmp_path))
    assert t is not None and t.step_seconds > 0
