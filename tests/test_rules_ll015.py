"""LL015 kbit-prep-unquantized: prepare_model_for_kbit_training on a base loaded without quantization."""

from __future__ import annotations

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll015_kbit_prep_unquantized import KbitPrepUnquantized as R
from lintlora.settings import Settings

HEAD = """import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments
"""
LOAD = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)\n'
REST = """model = prepare_model_for_kbit_training(model)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="out", bf16=True)
Trainer(model=model, args=args).train()
"""


def setup_of(tmp_path, load=LOAD, rest=REST):
    path = tmp_path / "train.py"
    path.write_text(HEAD + load + rest, encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    return s


def run(s, gpu="a100-80gb"):
    return list(R().check(s, Context(Settings(gpu=gpu))))


def test_upcast_and_no_checkpointing_priced(tmp_path):
    [f] = run(setup_of(tmp_path))
    assert (f.code, f.severity, f.span.line) == ("LL015", Severity.WARNING, 5)
    assert "every weight of the bfloat16 base" in f.message
    assert "does not call gradient_checkpointing_enable()" in f.message
    assert "src/peft/utils/other.py" in f.message and "Estimated weights" in f.message
    assert f.estimate.peak_after_fix_bytes < f.estimate.peak_bytes
    assert "Remove the call" in f.fix and "gradient_checkpointing=True" in f.fix


def test_checkpointing_on_elsewhere_is_not_called_missing(tmp_path):
    rest = REST.replace("bf16=True", "bf16=True, gradient_checkpointing=True")
    [f] = run(setup_of(tmp_path, rest=rest))
    assert "gradient_checkpointing_enable" not in f.message and "Turn checkpointing" not in f.fix


def test_float32_weights_say_the_upcast_adds_nothing(tmp_path):
    load = 'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.float32)\n'
    [f] = run(setup_of(tmp_path, load))
    assert "float32 already" in f.message and "LL013" in f.message


def test_silent_traps(tmp_path):
    quant = ('bnb = BitsAndBytesConfig(load_in_4bit=True)\n'
             'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb)\n')
    prequant = 'model = AutoModelForCausalLM.from_pretrained("unsloth/llama-2-7b-bnb-4bit")\n'
    gptq = 'model = AutoModelForCausalLM.from_pretrained("TheBloke/Llama-2-7B-GPTQ")\n'
    unknown = 'model = load_my_model()\n'
    for load in (quant, prequant, gptq, unknown):
        assert run(setup_of(tmp_path, load)) == [], load
    assert run(setup_of(tmp_path).replace(is_training=False)) == []  # an inference-only setup
