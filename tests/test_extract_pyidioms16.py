"""The issue-16 CallSites the Python extractor records (lintlora.extract.pyidioms16)."""

from __future__ import annotations

import time

from rules16b_support import setups


def calls(source, kind):
    out = []
    for s in setups(source):
        out.extend(c for c in s.calls if c.kind == kind)
    return out


def inputs(source):
    [c] = calls(source, "trainer_inputs")[:1]
    return {k: v for k, v in c.args.items()}


TRAINER = """
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments
tok = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
"""


# ---- pad_token_is_eos ---------------------------------------------------------------------------
def test_pad_token_assignments():
    src = TRAINER + """
tok.pad_token = tok.eos_token
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    [c] = calls(src, "pad_token_is_eos")
    assert c.span.line == 6 and c.receiver == "tok" and c.qualified_name == "tok.pad_token = tok.eos_token"


def test_processor_tokenizer_and_pad_id_forms():
    src = TRAINER + """
processor.tokenizer.pad_token_id = processor.tokenizer.eos_token_id
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    [c] = calls(src, "pad_token_is_eos")
    assert c.receiver == "processor"


def test_a_later_distinct_pad_token_wins():
    for later in ('tok.pad_token = "<pad>"', 'tok.add_special_tokens({"pad_token": "[PAD]"})',
                  "tok.pad_token_id = 0"):
        src = TRAINER + f"""
tok.pad_token = tok.eos_token
{later}
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
        assert calls(src, "pad_token_is_eos") == [], later


def test_an_eos_pad_after_a_distinct_one_counts():
    src = TRAINER + """
tok.pad_token = "<pad>"
tok.pad_token = tok.eos_token
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    assert len(calls(src, "pad_token_is_eos")) == 1


def test_other_objects_are_not_tokenizers():
    src = TRAINER + """
model.config.pad_token_id = model.config.eos_token_id
generation_config.pad_token_id = generation_config.eos_token_id
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    assert calls(src, "pad_token_is_eos") == []


# ---- compute_loss_override ----------------------------------------------------------------------
def test_compute_loss_signatures():
    src = TRAINER + """
class Base(Trainer):
    pass
class A(Base):
    model_accepts_loss_kwargs = False
    def compute_loss(self, model, inputs, return_outputs=False, **kw):
        return super().compute_loss(model, inputs, return_outputs, **kw)
class NotATrainer:
    def compute_loss(self, model, inputs):
        return 0
A(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    [c] = calls(src, "compute_loss_override")
    a = {k: v.value for k, v in c.args.items()}
    assert c.qualified_name == "A.compute_loss" and c.span.line == 10
    assert a == {"num_items_in_batch": False, "var_kwargs": True, "reads_num_items": True,
                 "base": "transformers.Trainer", "model_accepts_loss_kwargs": False, "instantiated": True}


def test_model_accepts_loss_kwargs_set_in_init():
    src = TRAINER + """
class A(Trainer):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.model_accepts_loss_kwargs = False
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return model(**inputs).loss
A(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds).train()
"""
    [c] = calls(src, "compute_loss_override")
    assert c.args["model_accepts_loss_kwargs"].value is False
    assert c.args["reads_num_items"].value is False


# ---- trainer_inputs -----------------------------------------------------------------------------
def test_library_collator_and_mlm():
    src = TRAINER + """
from transformers import DataCollatorForLanguageModeling
c = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=c).train()
"""
    a = inputs(src)
    assert a["data_collator"].value == "transformers.DataCollatorForLanguageModeling"
    assert a["collator_mlm"].value is False and a["data_collator"].span.line == 7
    assert a["model_class"].value == "AutoModelForCausalLM"


def test_mlm_default_is_the_library_default():
    src = TRAINER + """
from transformers import DataCollatorForLanguageModeling
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds,
        data_collator=DataCollatorForLanguageModeling(tok)).train()
"""
    a = inputs(src)
    assert a["collator_mlm"].value is True and a["collator_mlm"].origin.value == "library-default"


def test_local_collator_columns():
    src = TRAINER + """
def collate(features):
    first = features[0]["image"]
    texts = [f["text"] for f in features]
    for ex in features:
        ex.get("answer")
        ex["input_ids"]
    return {"input_ids": tok(texts)}
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=collate).train()
"""
    a = inputs(src)
    assert a["data_collator"].value == "local:collate"
    assert a["collator_columns"].value == ("image", "text", "answer", "input_ids")
    assert a["collator_columns"].span.line == 6


def test_local_collator_class_instance():
    src = TRAINER + """
class Collate:
    def __init__(self, tok):
        self.tok = tok
    def __call__(self, batch):
        return self.tok([b["messages"] for b in batch])
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=Collate(tok)).train()
"""
    a = inputs(src)
    assert a["data_collator"].value == "local:Collate" and a["collator_columns"].value == ("messages",)


def test_unfollowed_collator_is_unknown():
    src = TRAINER + """
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=make()).train()
"""
    a = inputs(src)
    assert not a["data_collator"].known


def test_metrics_inputs():
    src = TRAINER + """
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, eval_dataset=None,
        compute_metrics=cm, preprocess_logits_for_metrics=None).train()
"""
    a = inputs(src)
    assert a["compute_metrics"].value is True
    assert a["eval_dataset"].value is False and a["preprocess_logits_for_metrics"].value is False


def test_model_class_through_peft_and_strings():
    src = TRAINER + """
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer
m = get_peft_model(model, LoraConfig(r=8))
SFTTrainer(model=m, args=SFTConfig(output_dir="o"), train_dataset=ds).train()
"""
    assert inputs(src)["model_class"].value == "AutoModelForCausalLM"
    src = """
from trl import SFTConfig, SFTTrainer
SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="o"), train_dataset=ds).train()
"""
    assert inputs(src)["model_class"].value == "AutoModelForCausalLM"


def test_max_seq_length_keyword_and_intended_length():
    src = TRAINER + """
from trl import SFTConfig, SFTTrainer
CUTOFF_LEN = 3072
tok2 = AutoTokenizer.from_pretrained("x", model_max_length=8192)
model.generate(max_length=100000)
SFTTrainer(model=model, args=SFTConfig(output_dir="o", max_seq_length=CUTOFF_LEN), train_dataset=ds).train()
"""
    a = inputs(src)
    assert a["max_seq_length_keyword"].value == 3072 and a["max_seq_length_keyword"].source == "SFTConfig"
    assert a["max_seq_length_keyword"].key_span.line == 10
    assert a["intended_length"].value == 8192 and "model_max_length" in a["intended_length"].source


def test_no_intended_length_without_a_long_one():
    src = TRAINER + """
from trl import SFTConfig, SFTTrainer
max_new_tokens = 4096
SFTTrainer(model=model, args=SFTConfig(output_dir="o"), train_dataset=ds).train()
"""
    assert "intended_length" not in inputs(src)


# ---- bounds ---------------------------------------------------------------------------------------
def test_a_huge_collator_body_is_bounded():
    body = "\n".join(f'    x{i} = [f["c{i}"] for f in features]' for i in range(3000))
    src = TRAINER + f"""
def collate(features):
{body}
    return x0
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=collate).train()
"""
    start = time.perf_counter()
    a = inputs(src)
    assert len(a["collator_columns"].value) <= 64
    assert time.perf_counter() - start < 60


def test_odd_keys_are_ignored():
    src = TRAINER + """
def collate(features):
    return [(f[b"raw"], f[0], f[k], f[1:2], f["a" "b"]) for f in features]
Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=collate).train()
"""
    assert inputs(src)["collator_columns"].value == ("ab",)
