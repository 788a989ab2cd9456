"""LL016 quantized-without-adapter: a quantized base a Trainer refuses (no adapter, or merged before train())."""

from __future__ import annotations

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll016_quantized_without_adapter import QuantizedWithoutAdapter as R
from lintlora.settings import Settings

HEAD = """import torch
from peft import LoraConfig, PeftModel, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments
from trl import SFTConfig, SFTTrainer
bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb)
"""
TRAIN = """args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True)
trainer = Trainer(model=model, args=args)
trainer.train()
"""
WRAP = 'model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))\n'


def setup_of(tmp_path, body, head=HEAD):
    path = tmp_path / "train.py"
    path.write_text(head + body, encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    return s


def run(s):
    return list(R().check(s, Context(Settings(gpu="a100-80gb"))))


def test_no_adapter_is_an_error_at_the_trainer(tmp_path):
    [f] = run(setup_of(tmp_path, TRAIN))
    assert (f.code, f.severity, f.span.line) == ("LL016", Severity.ERROR, 8)
    assert "purely quantized models" in f.message and "4-bit" in f.message
    assert "get_peft_model" in f.fix


def test_merge_before_train_is_an_error_at_the_merge(tmp_path):
    [f] = run(setup_of(tmp_path, WRAP + "model = model.merge_and_unload()\n" + TRAIN))
    assert (f.severity, f.span.line) == (Severity.ERROR, 8)
    assert "merge_and_unload() before train()" in f.message
    loaded = 'model = PeftModel.from_pretrained(model, "old-adapter")\nmodel = model.merge_and_unload()\n'
    [g] = run(setup_of(tmp_path, loaded + TRAIN))
    assert g.span.line == 8


def test_silent_traps(tmp_path):
    bodies = {
        "wrapped": WRAP + TRAIN,
        "merge after train": WRAP + TRAIN + "merged = model.merge_and_unload()\n",
        "merge then a new adapter": ('model = PeftModel.from_pretrained(model, "old")\nmodel = model.merge_and_unload()\n'
                                     + WRAP + TRAIN),
        "TRL peft_config": ('trainer = SFTTrainer(model=model, args=SFTConfig(output_dir="o"), '
                            'peft_config=LoraConfig(r=8))\ntrainer.train()\n'),
        "add_adapter": 'model.add_adapter(LoraConfig(r=8))\n' + TRAIN,
        "a LoraConfig not followed": 'cfg = LoraConfig(r=8)\nmodel = my_wrap(model, cfg)\n' + TRAIN,
        "inference": "out = model.generate()\n",
        "evaluate only": TRAIN.replace("trainer.train()", "trainer.evaluate()"),
    }
    for name, body in bodies.items():
        assert run(setup_of(tmp_path, body)) == [], name
    unquantized = HEAD.replace("quantization_config=bnb", "torch_dtype=torch.bfloat16")
    assert run(setup_of(tmp_path, TRAIN, head=unquantized)) == []
