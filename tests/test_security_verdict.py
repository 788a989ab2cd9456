"""Hostile values against LL008 and ``lintlora estimate``'s verdict: batch sizes, accumulation
steps and sequence lengths at and beyond lintlora's bounds, on a named GPU. The searches and
the divisor loop stay bounded (no LL999, no traceback, a few seconds at most) and the exit
status stays one of 0, 1, 2."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd
from rules_support import lint
from lintlora.settings import Settings

HUGE = ["1048576", "999999999999", "10**400", "1e400", "-5", "0", "2147483647"]


def _axolotl(batch: str, accumulation: str, seq: str) -> str:
    return (f"base_model: meta-llama/Llama-2-7b-hf\nadapter: lora\nlora_r: 8\nlora_target_modules: [q_proj, v_proj]\n"
            f"sequence_len: {seq}\nmicro_batch_size: {batch}\ngradient_accumulation_steps: {accumulation}\n"
            "gradient_checkpointing: true\nbf16: true\n")


def _script(batch: str, accumulation: str, seq: str) -> str:
    return ("import torch\nfrom peft import LoraConfig, get_peft_model\n"
            "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype=torch.bfloat16)\n"
            "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))\n"
            "model.print_trainable_parameters()\n"
            f"tok = lambda b: tokenizer(b['text'], truncation=True, max_length={seq})\n"
            f"args = TrainingArguments(output_dir='o', per_device_train_batch_size={batch}, "
            f"gradient_accumulation_steps={accumulation}, gradient_checkpointing=True, bf16=True)\n"
            "Trainer(model=model, args=args, train_dataset=ds.map(tok)).train()\n")


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("make,name", [(_axolotl, "train.yml"), (_script, "train.py")])
def test_huge_values_keep_the_verdict_bounded(tmp_path, value, make, name):
    path = tmp_path / name
    path.write_text(make(value, value, value))
    start = time.monotonic()
    result = lint(path, Settings(gpu="t4"))
    assert time.monotonic() - start < 30
    assert not [e for e in result.errors if e.code == "LL999"], result.errors
    for f in result.findings:
        if f.code == "LL008":
            assert f.estimate.peak_bytes and f.message and f.fix
    r = CliRunner().invoke(estimate_cmd, [str(path), "--gpu", "t4"])
    assert r.exit_code in (0, 1, 2), r.output
    assert "Traceback" not in r.output and "internal error" not in r.output


def test_the_largest_legal_batch_with_a_prime_accumulation_is_fast(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(_script("1048576", "1000003", "4096"))
    start = time.monotonic()
    result = lint(path, Settings(gpu="h200"))
    assert time.monotonic() - start < 30
    assert not result.errors
    found = [f for f in result.findings if f.code == "LL008"]
    assert found and "per_device_train_batch_size=1048576 -> " in found[0].message
