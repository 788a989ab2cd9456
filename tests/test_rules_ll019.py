"""LL019 pad-token-is-eos: pad = eos with a collator that masks every pad label."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll019_pad_token_is_eos import PadTokenIsEos as R

TEMPLATE = """
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          DataCollatorForSeq2Seq, Trainer, TrainingArguments)
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
PAD
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
collator = COLLATOR
Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=ds, data_collator=collator).train()
"""


def script(pad="tokenizer.pad_token = tokenizer.eos_token",
           collator="DataCollatorForLanguageModeling(tokenizer, mlm=False)"):
    return TEMPLATE.replace("PAD", pad).replace("COLLATOR", collator)


def test_pad_eos_with_the_lm_collator_is_a_warning():
    [f] = findings(R, script())
    assert f.severity is Severity.WARNING and f.span.line == 5
    assert "tokenizer.pad_token = tokenizer.eos_token" in f.message
    assert "DataCollatorForLanguageModeling(mlm=False) (line 7)" in f.message
    assert "never learns to stop" in f.message


def test_pad_token_id_form():
    [f] = findings(R, script(pad="tokenizer.pad_token_id = tokenizer.eos_token_id"))
    assert "pad_token_id" in f.message


def test_legacy_completion_only_collator():
    src = script(collator='DataCollatorForCompletionOnlyLM("### Response:", tokenizer=tokenizer)')
    src = src.replace("from transformers import", "from trl import DataCollatorForCompletionOnlyLM\nfrom transformers import")
    [f] = findings(R, src)
    assert "DataCollatorForCompletionOnlyLM" in f.message


def test_collator_inline_in_the_trainer_call():
    src = script().replace("data_collator=collator", "data_collator=DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False)")
    assert len(findings(R, src)) == 1


# ---- silent traps --------------------------------------------------------------------------------
def test_seq2seq_collator_pads_labels_by_position():
    assert findings(R, script(collator="DataCollatorForSeq2Seq(tokenizer, padding=True)")) == []


def test_mlm_left_at_default_is_not_the_causal_collator():
    assert findings(R, script(collator="DataCollatorForLanguageModeling(tokenizer)")) == []


def test_distinct_pad_token():
    assert findings(R, script(pad='tokenizer.pad_token = "<|finetune_right_pad_id|>"')) == []
    assert findings(R, script(pad="tokenizer.pad_token = tokenizer.unk_token")) == []


def test_distinct_pad_set_after_the_eos_line():
    pad = "tokenizer.pad_token = tokenizer.eos_token\ntokenizer.add_special_tokens({'pad_token': '[PAD]'})"
    assert findings(R, script(pad=pad)) == []


def test_trl_sft_trainer_with_its_own_collator():
    src = """
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=ds, processing_class=tokenizer).train()
"""
    assert findings(R, src) == []


def test_model_config_pad_id_is_not_the_tokenizer():
    assert findings(R, script(pad="model_config.pad_token_id = model_config.eos_token_id")) == []


def test_trls_own_lm_collator_pads_labels_by_position():
    src = script(collator="TrlCollator(pad_token_id=tokenizer.pad_token_id)").replace(
        "from transformers import", "from trl.trainer.sft_trainer import DataCollatorForLanguageModeling as TrlCollator\nfrom transformers import")
    assert findings(R, src) == []


def test_notebook_cells_are_named_in_the_message():
    from rules_support import ROOT, lint, settings_from_args

    result = lint(ROOT / "fixtures" / "api_rules" / "pad_eos_notebook.ipynb", settings_from_args(""))
    [f] = [f for f in result.findings if f.code == "LL019"]
    assert f.span.cell == 2 and "(cell 3, line 2)" in f.message
