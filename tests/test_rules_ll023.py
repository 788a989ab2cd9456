"""LL023 collator-columns-dropped: a custom collator reading columns remove_unused_columns drops."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll023_collator_columns_dropped import CollatorColumnsDropped as R

TEMPLATE = """
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
COLLATOR
args = TrainingArguments(output_dir="out", bf16=TrueARGS)
TRAINER(model=model, args=args, train_dataset=ds, data_collator=collate).train()
"""

FUNCTION = """def collate(features):
    texts = [f["text"] + f.get("answer", "") for f in features]
    return tokenizer(texts, return_tensors="pt", padding=True)"""

CLASS = """class Collate:
    def __call__(self, examples):
        return tokenizer([e["messages"] for e in examples], return_tensors="pt", padding=True)
collate = Collate()"""

MODEL_INPUTS = """def collate(features):
    ids = [f["input_ids"] for f in features]
    return {"input_ids": pad(ids), "labels": pad([f["labels"] for f in features])}"""


def script(collator=FUNCTION, args="", trainer="Trainer"):
    return TEMPLATE.replace("COLLATOR", collator).replace("ARGS", args).replace("TRAINER", trainer)


def test_function_collator_reading_text_is_an_error():
    [f] = findings(R, script())
    assert f.severity is Severity.ERROR and f.span.line == 9
    assert '"text" and "answer"' in f.message and "KeyError: 'text'" in f.message
    assert "default True" in f.message and "remove_unused_columns=False" in f.fix


def test_class_collator_and_explicit_true():
    [f] = findings(R, script(CLASS, ", remove_unused_columns=True"))
    assert '"messages"' in f.message and "remove_unused_columns=True (line 9)" in f.message


# ---- silent traps --------------------------------------------------------------------------------
def test_remove_unused_columns_false_is_silent():
    assert findings(R, script(args=", remove_unused_columns=False")) == []


def test_unresolved_remove_unused_columns_is_silent():
    assert findings(R, script(args=", remove_unused_columns=cfg.keep")) == []


def test_collator_reading_only_model_inputs_is_silent():
    assert findings(R, script(MODEL_INPUTS)) == []


def test_trl_trainers_manage_their_columns():
    src = script(trainer="SFTTrainer").replace("from transformers import", "from trl import SFTTrainer\nfrom transformers import")
    assert findings(R, src) == []


def test_library_collator_is_silent():
    src = script("from transformers import DataCollatorWithPadding\ncollate = DataCollatorWithPadding(tokenizer)")
    assert findings(R, src) == []


def test_keys_read_from_a_dict_it_builds_are_not_columns():
    collator = """def collate(features):
    batch = {"prompt": 1}
    x = batch["prompt"]
    return {"input_ids": [f["input_ids"] for f in features]}"""
    assert findings(R, script(collator)) == []


def test_parsed_training_arguments_are_info():
    src = """
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
parser = HfArgumentParser((TrainingArguments,))
(targs,) = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
def collate(features):
    return [f["text"] for f in features]
Trainer(model=model, args=targs, train_dataset=ds, data_collator=collate).train()
"""
    [f] = findings(R, src)
    assert f.severity is Severity.INFO and "--remove_unused_columns False" in f.message


def test_an_argparse_default_true_is_info():
    src = script(args=", remove_unused_columns=cli.keep").replace(
        "COLLATOR", "").replace("from transformers import", "import argparse\nfrom transformers import")
    src = src.replace("args = TrainingArguments", 'p = argparse.ArgumentParser()\np.add_argument("--keep", type=bool, default=True)\ncli = p.parse_args()\nargs = TrainingArguments')
    [f] = findings(R, src)
    assert f.severity is Severity.INFO and "unless" in f.message
