"""LL025 deepspeed-config-mismatch: a DeepSpeed JSON against the training arguments (HF
Trainer), and ``"auto"`` handed to ``deepspeed.initialize``. Setups are extracted from real
scripts; the run's distribution (the DeepSpeed JSON's values, with their lines) is added by
hand, as helper "dist" will build it."""

from __future__ import annotations

import dataclasses

import pytest

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll025_deepspeed_config_mismatch import DeepSpeedConfigMismatch as R
from lintlora.settings import Settings
from lintlora.training_setup import Distributed, Origin, RunLaunch, Setting, Span

RUN_SH = "/proj/run.sh"
DS = "/proj/ds_config.json"

TRAINER = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, gradient_accumulation_steps=2,
                         gradient_checkpointing=True{extra})
Trainer(model=model, args=args).train()
"""

PLAIN = """\
import deepspeed
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config="ds_config.json")
for batch in loader:
    loss = engine(**batch).loss
    engine.backward(loss)
    engine.step()
"""


def extract(tmp_path, text):
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    [s] = list(extract_python(str(path), text))
    return s


def trainer(tmp_path, extra=""):
    return extract(tmp_path, TRAINER.format(extra=extra))


def ds(line_of=None, **values):
    """A Distributed read from ds_config.json: each value at its own line (2, 3, ...)."""
    fields = {}
    for i, (k, v) in enumerate(values.items()):
        line = (line_of or {}).get(k, 2 + i)
        fields[k] = Setting(v, Origin.CONFIG_FILE, Span(DS, line, 5), Span(DS, line, 3))
    return Distributed(backend=Setting("deepspeed", Origin.CONFIG_FILE, Span(DS, 1)), config_path=DS,
                       span=Span(DS, 1), **fields)


def launch(processes=4):
    return RunLaunch(Span(RUN_SH, 3), "deepspeed", processes=Setting(processes, Origin.LAUNCH, Span(RUN_SH, 3)))


def check(s):
    return list(R().check(s, Context(Settings())))


def test_a_hard_coded_micro_batch_that_disagrees(tmp_path):
    s = dataclasses.replace(trainer(tmp_path), distributed=ds(train_micro_batch_size_per_gpu=1))
    [f] = check(s)
    assert (f.code, f.severity, f.span.path, f.span.line) == ("LL025", Severity.ERROR, DS, 2)
    assert "train_micro_batch_size_per_gpu=1" in f.message and "per_device_train_batch_size=4" in f.message
    assert "Please correct the following DeepSpeed config values" in f.message
    assert '"train_micro_batch_size_per_gpu": "auto"' in f.fix
    [r] = f.related  # no launch known: only the training argument
    assert r.span.path.endswith("train.py") and r.span.line == 4


def test_accumulation_clipping_and_the_total_batch(tmp_path):
    s = dataclasses.replace(trainer(tmp_path), run=launch(4),
                            distributed=ds(gradient_accumulation_steps=8, gradient_clipping=0.5,
                                           train_batch_size=16))
    found = {f.span.line: f for f in check(s)}
    assert set(found) == {2, 3, 4}
    assert "gradient_accumulation_steps=8" in found[2].message
    # max_grad_norm is not written: the TrainingArguments default 1.0
    assert "max_grad_norm=1.0" in found[3].message
    assert any("TrainingArguments default" in r.message for r in found[3].related)
    # 4 processes × 4 × 2 = 32
    assert "train_batch_size=16" in found[4].message and "4 processes × 4 × 2" in found[4].message
    assert any(r.message.startswith("launched by run.sh:3 with 4 processes") for r in found[4].related)


def test_the_total_batch_is_not_judged_without_the_number_of_processes(tmp_path):
    s = dataclasses.replace(trainer(tmp_path), distributed=ds(train_batch_size=16))
    assert check(s) == []


def test_an_fp16_block_without_fp16_in_the_arguments(tmp_path):
    dist = dataclasses.replace(ds(), mixed_precision=Setting("fp16", Origin.CONFIG_FILE, Span(DS, 6, 15)))
    [f] = check(dataclasses.replace(trainer(tmp_path), distributed=dist))
    assert f.span.line == 6 and "fp16.enabled=true" in f.message and "fp16|fp16_full_eval=False" in f.message
    assert "fp16=True" in f.fix


def test_matching_and_auto_values_are_silent(tmp_path):
    dist = dataclasses.replace(ds(train_micro_batch_size_per_gpu=4, gradient_accumulation_steps="auto",
                                  gradient_clipping=1.0, train_batch_size="auto"),
                               mixed_precision=Setting("bf16", Origin.CONFIG_FILE, Span(DS, 6)))
    s = dataclasses.replace(trainer(tmp_path, extra=", bf16=True"), run=launch(), distributed=dist)
    assert check(s) == []


def test_a_precision_from_the_accelerate_config_is_not_the_json(tmp_path):
    acc = "/proj/acc.yaml"
    dist = dataclasses.replace(ds(), accelerate_config=acc,
                               mixed_precision=Setting("fp16", Origin.CONFIG_FILE, Span(acc, 4)))
    assert check(dataclasses.replace(trainer(tmp_path), distributed=dist)) == []


def test_unknown_training_values_are_silent(tmp_path):
    text = TRAINER.format(extra="").replace("per_device_train_batch_size=4", "per_device_train_batch_size=bs")
    s = dataclasses.replace(extract(tmp_path, text), distributed=ds(train_micro_batch_size_per_gpu=1))
    assert check(s) == []


def test_auto_find_batch_size_skips_the_batch_keys(tmp_path):
    s = dataclasses.replace(trainer(tmp_path, extra=", auto_find_batch_size=True"),
                            distributed=ds(train_micro_batch_size_per_gpu=1))
    assert check(s) == []


def test_a_launch_passed_value_points_at_the_launch_line(tmp_path):
    s = trainer(tmp_path)
    bs = Setting(8, Origin.LAUNCH, Span(RUN_SH, 5, 33), source="--per_device_train_batch_size 8 (run.sh:5)")
    s = dataclasses.replace(s, training=dataclasses.replace(s.training, per_device_train_batch_size=bs),
                            run=launch(), distributed=ds(train_micro_batch_size_per_gpu=4))
    [f] = check(s)
    assert any(r.span == Span(RUN_SH, 5, 33) and "passed by run.sh:5" in r.message for r in f.related)


def test_a_literal_dict_is_checked_too(tmp_path):
    extra = ', bf16=True, deepspeed={"fp16": {"enabled": True}, "train_micro_batch_size_per_gpu": "auto"}'
    [f] = check(trainer(tmp_path, extra=extra))
    assert "fp16.enabled=true" in f.message and f.span.line == 5


def test_axolotl_is_left_alone(tmp_path):
    s = dataclasses.replace(trainer(tmp_path), framework="axolotl",
                            distributed=ds(train_micro_batch_size_per_gpu=1))
    assert check(s) == []


def test_auto_handed_to_deepspeed_initialize(tmp_path):
    s = dataclasses.replace(extract(tmp_path, PLAIN), run=launch(2),
                            distributed=ds(train_micro_batch_size_per_gpu="auto", gradient_accumulation_steps="auto",
                                           train_batch_size=16))
    [f] = check(s)
    assert f.span.path == DS and f.span.line == 2
    assert '"train_micro_batch_size_per_gpu": "auto"' in f.message and '"gradient_accumulation_steps": "auto"' in f.message
    assert "'>' not supported between instances of 'str' and 'int'" in f.message
    lines = {(r.span.path.rsplit("/", 1)[-1], r.span.line) for r in f.related}
    assert ("run.sh", 3) in lines and ("train.py", 6) in lines and ("ds_config.json", 3) in lines


def test_auto_with_the_hf_trainer_is_silent(tmp_path):
    s = dataclasses.replace(trainer(tmp_path), distributed=ds(train_micro_batch_size_per_gpu="auto"))
    assert check(s) == []


@pytest.mark.parametrize("values", [{"train_micro_batch_size_per_gpu": 2}, {}])
def test_no_auto_for_deepspeed_initialize_is_silent(tmp_path, values):
    s = dataclasses.replace(extract(tmp_path, PLAIN), distributed=ds(**values))
    assert check(s) == []
