"""LL014 compute-dtype-fp32: a 4-bit BitsAndBytesConfig computing in float32 while training in 16 bits."""

from __future__ import annotations

from rules_support import ROOT, lint

from lintlora.context import Context
from lintlora.estimate.compute import estimate_time
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll014_compute_dtype_fp32 import ComputeDtypeFp32 as R
from lintlora.settings import Settings

HEAD = """import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments
"""
BNB = 'bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")\n'
REST = """model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb)
model = prepare_model_for_kbit_training(model)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True)
Trainer(model=model, args=args).train()
"""


def setup_of(tmp_path, bnb=BNB, rest=REST):
    path = tmp_path / "train.py"
    path.write_text(HEAD + bnb + rest, encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    return s


def run(s, gpu=None):
    return list(R().check(s, Context(Settings(gpu=gpu))))


def test_the_float32_default_is_flagged_at_the_config_with_the_time_cost(tmp_path):
    [f] = run(setup_of(tmp_path), "a100-80gb")
    assert (f.code, f.severity, f.span.line) == ("LL014", Severity.WARNING, 4)
    assert "torch.float32" in f.message and "bf16=True" in f.message
    assert "Estimated time per micro-batch on the A100" in f.message
    assert f.fix == "Pass bnb_4bit_compute_dtype=torch.bfloat16 to BitsAndBytesConfig."
    assert f.rests_on and "quantization_config.py" in f.rests_on[0]


def test_the_time_model_prices_float32_matmuls_slower(tmp_path):
    s = setup_of(tmp_path)
    ctx = Context(Settings(gpu="a100-80gb"))
    slow = ctx.time_estimate(s)
    fast = ctx.time_estimate(s.set("quantization.bnb_4bit_compute_dtype", "bfloat16"))
    assert slow.step_seconds > 1.5 * fast.step_seconds
    inputs, arch = ctx.estimate(s).inputs, ctx.architecture(s)
    same = estimate_time(inputs, arch, 300.0)
    assert same.step_seconds == estimate_time(inputs, arch, 300.0, quant_matmul_tflops=300.0).step_seconds


def test_written_float32_is_flagged_at_its_value(tmp_path):
    bnb = 'bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float32)\n'
    [f] = run(setup_of(tmp_path, bnb), "l4")
    assert f.span.line == 4 and f.span.column > 40 and not f.rests_on


def test_the_proposal_agrees_with_ll002_and_ll010(tmp_path):
    fp16 = REST.replace("bf16=True", "fp16=True")
    # bf16 GPU: bfloat16, whatever the run uses (LL002 proposes bf16 for the fp16 flag)
    [f] = run(setup_of(tmp_path, rest=fp16), "a100-80gb")
    assert "torch.bfloat16" in f.fix
    # no bf16 (T4): float16 (LL010 proposes fp16 for a bf16 flag)
    [g] = run(setup_of(tmp_path), "t4")
    assert "torch.float16 to" in g.fix
    # no GPU: the run's type, and the other named
    [h] = run(setup_of(tmp_path))
    assert "torch.bfloat16 to" in h.fix and "torch.float16 on a GPU without bfloat16" in h.fix
    [k] = run(setup_of(tmp_path, rest=fp16))
    assert "torch.float16 to" in k.fix and "torch.bfloat16 on a GPU that has it" in k.fix
    assert "Estimated time" not in h.message


def test_silent_traps(tmp_path):
    written = 'bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)\n'
    assigned = BNB + "bnb.bnb_4bit_compute_dtype = torch.bfloat16\n"
    eight = 'bnb = BitsAndBytesConfig(load_in_8bit=True)\n'
    unresolved = 'bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=pick())\n'
    for bnb in (written, assigned, eight, unresolved):
        assert run(setup_of(tmp_path, bnb), "a100-80gb") == [], bnb
    fp32_run = REST.replace("bf16=True", "bf16=False")
    assert run(setup_of(tmp_path, rest=fp32_run), "a100-80gb") == []
    inference = REST.split("args =")[0] + "out = model.generate()\n"
    assert run(setup_of(tmp_path, rest=inference), "a100-80gb") == []


def test_stacks_that_set_the_compute_dtype_are_silent():
    for rel in ("fixtures/configs/axolotl/llama-2__qlora.yml", "fixtures/configs/axolotl/mistral__qlora.yml",
                "fixtures/configs/llama-factory/train_qlora__quantization.yaml",
                "fixtures/estimate/frame/unsloth_readme_sft.py"):
        result = lint(ROOT / rel, Settings(gpu="a100-80gb"))
        assert "LL014" not in [f.code for f in result.findings], rel


def test_the_launchers_mixed_precision_is_a_16_bit_run(tmp_path):
    """`accelerate launch --mixed_precision bf16 train.py` with no precision flag in the script."""
    import dataclasses

    from lintlora.training_setup import Origin, RunLaunch, Setting, Span

    rest = REST.replace('bf16=True, ', '')
    s = setup_of(tmp_path, rest=rest)
    assert run(s, "a100-80gb") == []  # float32 compute with a float32 run: nothing to say
    launch = Span(str(tmp_path / "run.sh"), 3)
    mp = Setting("bf16", Origin.LAUNCH, launch, None, "--mixed_precision bf16 (run.sh:3)")
    s = dataclasses.replace(s, run=RunLaunch(launch, "accelerate", mixed_precision=mp))
    [f] = run(s, "a100-80gb")
    assert "mixed_precision bf16" in f.message and "torch.bfloat16" in f.fix
