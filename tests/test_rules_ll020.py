"""LL020 trl-max-length: the removed/deprecated max_seq_length name by TRL release, and the
silent truncation to TRL's 1,024 default when the file means a longer length."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll020_trl_max_length import TrlMaxLength as R

HEAD = """
from peft import LoraConfig
from transformers import AutoModelForCausalLM
from trl import SFTConfig, SFTTrainer
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
peft_config = LoraConfig(r=8, target_modules=["q_proj", "v_proj"])
"""

IN_CONFIG = HEAD + """
args = SFTConfig(output_dir="out", bf16=True, max_seq_length=2048)
SFTTrainer(model=model, args=args, train_dataset=ds, peft_config=peft_config).train()
"""


def test_config_keyword_is_a_type_error_from_trl_0_20():
    [f] = findings(R, IN_CONFIG, trl="0.20.0")
    assert f.severity is Severity.ERROR and f.span.line == 8
    assert "unexpected keyword argument 'max_seq_length'" in f.message
    assert "trl==0.20.0 from requirements.txt:1" in f.message
    assert "max_length=2048" in f.fix


def test_config_keyword_assumed_current_release_says_so():
    [f] = findings(R, IN_CONFIG)
    assert f.severity is Severity.ERROR and "assumed: the current release" in f.message


def test_config_keyword_deprecated_between_0_16_and_0_20():
    [f] = findings(R, IN_CONFIG, trl="0.19.1")
    assert f.severity is Severity.WARNING and "deprecated since trl 0.16" in f.message
    assert "trl==0.19.1" in f.message


def test_config_keyword_before_the_rename_is_silent():
    assert findings(R, IN_CONFIG, trl="0.15.2") == []


TRAINER_KW = HEAD + """
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds, max_seq_length=2048).train()
"""


def test_trainer_keyword_removed_in_0_13():
    [f] = findings(R, TRAINER_KW, trl="0.13.0")
    assert f.severity is Severity.ERROR and "not a parameter of SFTTrainer since trl 0.13" in f.message
    assert findings(R, TRAINER_KW, trl="0.12.2") == []


LONGER = HEAD + """
MAX_SEQ_LEN = 4096
args = SFTConfig(output_dir="out", bf16=True, packing=True)
SFTTrainer(model=model, args=args, train_dataset=ds, peft_config=peft_config).train()
"""


def test_default_length_below_the_files_own_length_is_a_warning_with_both_figures():
    [f] = findings(R, LONGER, trl="1.0.0")
    assert f.severity is Severity.WARNING and f.span.line == 9
    assert "truncates every sample to 1024 tokens" in f.message
    assert "MAX_SEQ_LEN = 4096" in f.message and "trl==1.0.0" in f.message
    assert "at 1024 tokens" in f.message and "at 4096" in f.message
    assert f.estimate.peak_after_fix_bytes > f.estimate.peak_bytes
    assert "max_length=4096" in f.fix


def test_tokenizer_length_counts_as_the_intended_length():
    src = HEAD + """
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf", model_max_length=8192)
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds, processing_class=tok).train()
"""
    [f] = findings(R, src)
    assert "model_max_length=8192" in f.message


# ---- silent traps --------------------------------------------------------------------------------
def test_max_length_given_is_silent():
    src = LONGER.replace("packing=True", "packing=True, max_length=MAX_SEQ_LEN")
    assert findings(R, src) == []


def test_no_longer_length_named_is_silent():
    src = HEAD + """
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds).train()
"""
    assert findings(R, src) == []


def test_a_generation_max_length_is_not_a_training_length():
    src = HEAD + """
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds).train()
out = model.generate(**batch, max_length=4096)
cfg = GenerationConfig(max_length=4096)
"""
    assert findings(R, src) == []


def test_short_lengths_are_silent():
    src = LONGER.replace("4096", "512")
    assert findings(R, src) == []


def test_unsloth_takes_the_length_from_the_loader():
    src = """
from unsloth import FastLanguageModel
from trl import SFTConfig, SFTTrainer
max_seq_length = 4096
model, tok = FastLanguageModel.from_pretrained("unsloth/llama-3-8b-bnb-4bit", max_seq_length=max_seq_length)
model = FastLanguageModel.get_peft_model(model, r=16)
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds).train()
"""
    assert findings(R, src) == []


def test_plain_trainer_is_silent():
    src = """
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
MAX_SEQ_LEN = 4096
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    assert findings(R, src) == []


def test_keyword_in_an_unpacked_dict():
    src = HEAD + """
cfg = {"output_dir": "out", "max_seq_length": 2048}
SFTTrainer(model=model, args=SFTConfig(**cfg), train_dataset=ds).train()
"""
    [f] = findings(R, src, trl="0.21.0")
    assert f.severity is Severity.ERROR and f.span.line == 8
