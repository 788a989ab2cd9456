"""LL021 compute-loss-signature: a trainer subclass's compute_loss without num_items_in_batch
(TypeError from transformers 4.46), or taking it and ignoring it under accumulation."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll021_compute_loss_signature import ComputeLossSignature as R

TEMPLATE = """
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
class WeightedTrainer(BASE):
    ATTR
    def compute_loss(SIGNATURE):
        BODY
args = TrainingArguments(output_dir="out", bf16=True, gradient_accumulation_steps=GA)
WeightedTrainer(model=model, args=args, train_dataset=ds).train()
"""


def script(signature="self, model, inputs, return_outputs=False", body="return model(**inputs).loss",
           ga=1, base="Trainer", attr="pass"):
    return (TEMPLATE.replace("SIGNATURE", signature).replace("BODY", body).replace("GA", str(ga))
            .replace("BASE", base).replace("ATTR", attr))


def test_missing_parameter_is_a_type_error_on_4_46():
    [f] = findings(R, script(), transformers="4.46.0")
    assert f.severity is Severity.ERROR and f.span.line == 6
    assert "WeightedTrainer.compute_loss" in f.message
    assert "unexpected keyword argument 'num_items_in_batch'" in f.message
    assert "transformers==4.46.0 from requirements.txt:1" in f.message


def test_assumed_current_release_is_named():
    [f] = findings(R, script())
    assert "assumed: the current release" in f.message


def test_before_4_46_nothing_is_passed():
    assert findings(R, script(), transformers="4.45.2") == []


def test_a_trl_trainer_subclass_counts():
    src = script(base="SFTTrainer").replace("from transformers import", "from trl import SFTTrainer\nfrom transformers import")
    [f] = findings(R, src, transformers="4.51.3")
    assert f.severity is Severity.ERROR


def test_ignored_count_with_accumulation_is_a_warning():
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", ga=4)
    [f] = findings(R, src, transformers="4.57.1")
    assert f.severity is Severity.WARNING and "gradient_accumulation_steps=4" in f.message
    assert "4x too large" in f.message


def test_kwargs_swallowed_with_accumulation_is_a_warning():
    src = script("self, model, inputs, return_outputs=False, **kwargs", ga=8)
    [f] = findings(R, src)
    assert f.severity is Severity.WARNING and "takes **kwargs" in f.message


# ---- silent traps --------------------------------------------------------------------------------
def test_count_used_is_silent():
    body = ("loss = model(**inputs).loss\n        return loss if num_items_in_batch is None "
            "else loss * inputs['labels'].ne(-100).sum() / num_items_in_batch")
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", body, ga=4)
    assert findings(R, src) == []


def test_count_forwarded_to_super_is_silent():
    body = "return super().compute_loss(model, inputs, return_outputs, num_items_in_batch=num_items_in_batch)"
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", body, ga=4)
    assert findings(R, src) == []


def test_kwargs_forwarded_is_silent():
    src = script("self, model, inputs, return_outputs=False, **kwargs",
                 "return super().compute_loss(model, inputs, return_outputs, **kwargs)", ga=4)
    assert findings(R, src) == []


def test_ignored_count_without_accumulation_is_silent():
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", ga=1)
    assert findings(R, src) == []


def test_model_accepts_loss_kwargs_false_is_silent():
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", ga=4,
                 attr="model_accepts_loss_kwargs = False")
    assert findings(R, src) == []


def test_a_class_that_is_not_a_trainer_is_silent():
    src = script(base="object").replace("WeightedTrainer(model=model", "Trainer(model=model")
    assert findings(R, src) == []


def test_accumulation_set_at_launch_is_info():
    src = script("self, model, inputs, return_outputs=False, num_items_in_batch=None", ga="cli.ga")
    src = src.replace("from transformers import", "import argparse\nfrom transformers import").replace(
        "args = TrainingArguments", 'p = argparse.ArgumentParser()\np.add_argument("--ga", type=int, default=4)\n'
        "cli = p.parse_args()\nargs = TrainingArguments")
    [f] = findings(R, src)
    assert f.severity is Severity.INFO and "unless --ga is passed at launch" in f.message


def test_a_class_defined_but_never_constructed_is_silent():
    src = script().replace("WeightedTrainer(model=model", "Trainer(model=model")
    assert findings(R, src) == []


def test_a_subclass_constructed_counts():
    src = script().replace("WeightedTrainer(model=model", "class Final(WeightedTrainer):\n    pass\nFinal(model=model")
    assert len(findings(R, src)) == 1
