"""LL013 base-loaded-in-fp32: a frozen unquantized base loaded in float32 while training in 16 bits."""

from __future__ import annotations

import dataclasses

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll013_base_loaded_in_fp32 import BaseLoadedInFp32 as R
from lintlora.settings import Settings
from lintlora.training_setup import PinnedVersion, Span

HEAD = """import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
"""
LORA = """model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
"""
TRAIN = """args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True)
Trainer(model=model, args=args).train()
"""


def setup_of(tmp_path, load, lora=LORA, train=TRAIN, pin=None):
    path = tmp_path / "train.py"
    path.write_text(HEAD + load + lora + train, encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    if pin is not None:
        req = tmp_path / "requirements.txt"
        req.write_text(f"peft\ntorch\ntransformers=={pin}\n", encoding="utf-8")
        s = dataclasses.replace(s, versions=(PinnedVersion("transformers", f"=={pin}", pin,
                                                           Span(str(req), 3), "requirements"),))
    return s


def run(s, gpu=None):
    return list(R().check(s, Context(Settings(gpu=gpu))))


NO_DTYPE = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")\n'


def test_no_dtype_under_transformers_4_is_priced_with_the_pin_named(tmp_path):
    [f] = run(setup_of(tmp_path, NO_DTYPE, pin="4.44.2"), "a100-80gb")
    assert (f.code, f.severity, f.span.line) == ("LL013", Severity.WARNING, 4)
    assert "transformers 4.44.2" in f.message and "transformers==4.44.2 from requirements.txt:3" in f.message
    assert "bf16=True" in f.message and "Estimated weights" in f.message
    assert f.estimate.peak_after_fix_bytes < f.estimate.peak_bytes
    # the estimate itself uses the run's version: 4 bytes a weight as written, about half with the fix
    w = f.estimate.breakdown["weights"]
    assert w > 24 * 2**30
    assert "torch_dtype=torch.bfloat16" in f.fix


def test_the_same_script_under_transformers_5_is_silent(tmp_path):
    assert run(setup_of(tmp_path, NO_DTYPE, pin="5.1.0")) == []


def test_no_pin_assumes_the_current_release_and_stays_silent(tmp_path):
    assert run(setup_of(tmp_path, NO_DTYPE)) == []


def test_explicit_float32_fires_on_any_version(tmp_path):
    load = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.float32)\n'
    [f] = run(setup_of(tmp_path, load))
    assert "torch_dtype=torch.float32" in f.message and f.span.line == 4 and f.span.column > 40
    [g] = run(setup_of(tmp_path, load, pin="5.1.0"))
    assert g.code == "LL013"


def test_fp16_training_proposes_float16(tmp_path):
    train = TRAIN.replace("bf16=True", "fp16=True")
    [f] = run(setup_of(tmp_path, NO_DTYPE, train=train, pin="4.46.3"))
    assert "float16" in f.message and "torch_dtype=torch.float16" in f.fix


def test_silent_traps(tmp_path):
    auto = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="auto")\n'
    bf16 = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)\n'
    unresolved = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=pick())\n'
    cast = NO_DTYPE + "model = model.to(torch.bfloat16)\n"
    quant = ('model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", '
             'load_in_4bit=True)\n')
    gptq = 'model = AutoModelForCausalLM.from_pretrained("TheBloke/Llama-2-7B-GPTQ")\n'
    for load in (auto, bf16, unresolved, cast, quant, gptq):
        assert run(setup_of(tmp_path, load, pin="4.44.2")) == [], load
    # a full fine-tune: float32 master weights are the point
    assert run(setup_of(tmp_path, NO_DTYPE, lora="", pin="4.44.2")) == []
    # a float32 run
    fp32 = TRAIN.replace("bf16=True", "bf16=False")
    assert run(setup_of(tmp_path, NO_DTYPE, train=fp32, pin="4.44.2")) == []
    # inference only
    infer = 'out = model.generate()\n'
    assert run(setup_of(tmp_path, NO_DTYPE, train=infer, pin="4.44.2")) == []


def test_a_launch_default_dtype_is_info(tmp_path):
    load = ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--dtype", default="float32")\n'
            'a = p.parse_args()\n'
            'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=a.dtype)\n')
    found = run(setup_of(tmp_path, load))
    assert [f.severity for f in found] == [Severity.INFO]
    assert "at launch" in found[0].message


def test_acceptance_a_project_pinning_transformers_4_reports_it(tmp_path):
    """Issue 16's acceptance, through the real pipeline: the pin is read from the project's
    requirements.txt (helper vers16's lintlora.extract.project_versions); skipped until that
    reading is in the tree."""
    import pytest
    from rules_support import lint

    pytest.importorskip("lintlora.extract.project_versions")
    script = HEAD + NO_DTYPE + LORA + TRAIN
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("peft==0.12.0\ntransformers==4.44.2\n", encoding="utf-8")
    found = [f for f in lint(tmp_path / "train.py", Settings(gpu="a100-80gb", use_cache=False)).findings
             if f.code == "LL013"]
    assert len(found) == 1 and "requirements.txt:2" in found[0].message
    assert found[0].estimate.breakdown["weights"] > 24 * 2**30
    (tmp_path / "requirements.txt").write_text("peft==0.12.0\ntransformers==5.1.0\n", encoding="utf-8")
    again = lint(tmp_path / "train.py", Settings(gpu="a100-80gb", use_cache=False))
    assert "LL013" not in [f.code for f in again.findings]


def test_a_16_bit_run_that_is_a_launch_default_is_info(tmp_path):
    """TRL's bf16 default read through an argument parser (the run may ask for float32 at launch):
    peft's psoft example loads float32 by default with SFTConfig's bf16 default."""
    script = ('import torch\nfrom peft import LoraConfig, get_peft_model\n'
              'from transformers import AutoModelForCausalLM, HfArgumentParser\nfrom trl import SFTConfig, SFTTrainer\n'
              'args = HfArgumentParser(SFTConfig).parse_args_into_dataclasses()[0]\n'
              'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.float32)\n'
              'model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))\n'
              'SFTTrainer(model=model, args=args).train()\n')
    path = tmp_path / "train.py"
    path.write_text(script, encoding="utf-8")
    [s] = extract_python(str(path), script)
    found = run(s)
    assert [f.severity for f in found] == [Severity.INFO] and "at launch" in found[0].message


def test_an_fp16_run_of_a_family_that_overflows_is_not_told_to_load_float16(tmp_path):
    load = 'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n'
    train = TRAIN.replace("bf16=True", "fp16=True")
    [f] = run(setup_of(tmp_path, load, train=train, pin="4.44.2"), "t4")
    assert "torch_dtype=torch.float16" not in f.fix and "LL017" in f.fix and "fp16=False" in f.fix
