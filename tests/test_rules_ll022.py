"""LL022 eval-logits-on-gpu: compute_metrics on a causal LM keeps every eval logit on the GPU."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll022_eval_logits_on_gpu import EvalLogitsOnGpu as R, logits_bytes

TEMPLATE = """
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, Trainer, TrainingArguments
model = LOADER.from_pretrained("meta-llama/Meta-Llama-3-8B", torch_dtype="bfloat16")
args = TrainingArguments(output_dir="out", bf16=True, eval_strategy="steps"ARGS)
Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev, compute_metrics=compute_metricsMORE).train()
"""


def script(loader="AutoModelForCausalLM", args="", more=""):
    return TEMPLATE.replace("LOADER", loader).replace("ARGS", args).replace("MORE", more)


def test_logits_formula():
    assert logits_bytes(500, 1024, 128_256, 2) == 500 * 1024 * 128_256 * 2


def test_causal_lm_with_metrics_is_a_warning_priced_per_1000_samples():
    [f] = findings(R, script(), gpu="a100-80gb")
    assert f.severity is Severity.WARNING and f.span.line == 5
    assert "preprocess_logits_for_metrics" in f.message and "per 1,000 eval samples" in f.message
    assert "128,256 vocabulary × 2 B" in f.message
    assert "hold the logits of about" in f.message


def test_without_a_gpu_the_price_is_still_given():
    [f] = findings(R, script())
    assert "per 1,000 eval samples" in f.message and "hold the logits" not in f.message


def test_float32_model_is_priced_at_4_bytes():
    [f] = findings(R, script().replace('torch_dtype="bfloat16"', 'torch_dtype="float32"'))
    assert "× 4 B" in f.message


# ---- silent traps --------------------------------------------------------------------------------
def test_preprocess_logits_given_is_silent():
    assert findings(R, script(more=", preprocess_logits_for_metrics=lambda l, y: l.argmax(-1)")) == []


def test_eval_accumulation_steps_set_is_silent():
    assert findings(R, script(args=", eval_accumulation_steps=4")) == []


def test_sequence_classification_is_silent():
    assert findings(R, script(loader="AutoModelForSequenceClassification")) == []


def test_no_eval_dataset_or_no_metrics_is_silent():
    assert findings(R, script().replace("eval_dataset=ev, ", "")) == []
    assert findings(R, script().replace(", compute_metrics=compute_metrics", "")) == []
    assert findings(R, script().replace("compute_metrics=compute_metrics", "compute_metrics=None")) == []


def test_a_written_eval_size_is_priced_against_the_gpu():
    src = script().replace("eval_dataset=ev", "eval_dataset=ev_all.select(range(500))")
    [f] = findings(R, src, gpu="a100-80gb")
    assert "for the 500 eval samples (ev_all.select(range(500)))" in f.message
    assert "more than the A100" in f.message


def test_an_eval_size_through_one_assignment():
    src = script().replace("Trainer(model", "ev = ds.take(200)\nTrainer(model")
    [f] = findings(R, src)
    assert "for the 200 eval samples" in f.message


def test_parsed_training_arguments_are_info():
    src = """
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
(targs,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B", torch_dtype="bfloat16")
Trainer(model=model, args=targs, train_dataset=ds, eval_dataset=ev, compute_metrics=cm).train()
"""
    [f] = findings(R, src)
    assert f.severity is Severity.INFO and "--eval_accumulation_steps" in f.message
