"""ChatGLM3 / GLM-4 finetune_demo dialect (issue 13, section 3): the real configs of
THUDM/ChatGLM3 (finetune_demo/configs) and THUDM/GLM-4 (finetune/configs) are read, no longer
skipped as "no training config", and their ``dataloader_num_workers: 16`` is judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from rules_support import lint

from lintlora import facts
from lintlora.extract import NotATrainingConfig
from lintlora.extract.yaml_config import extract_config, looks_like_training_config
from lintlora.settings import Settings
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"), explicit=False)
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


@pytest.mark.parametrize("rel", ["chatglm/chatglm3__lora.yaml", "chatglm/chatglm3__ptuning_v2.yaml",
                                 "chatglm/chatglm3__sft.yaml", "chatglm/glm4__lora.yaml"])
def test_every_finetune_demo_config_is_recognised(rel):
    assert looks_like_training_config((CONFIGS / rel).read_text(encoding="utf-8"))
    s = load(rel)
    assert (s.kind, s.dialect, s.framework) == ("yaml", "chatglm-finetune", "transformers")
    assert not s.model.name_or_path.known and "command-line argument" in s.model.name_or_path.source
    assert s.training.dataloader_num_workers.value == 16


def test_chatglm3_lora():
    s = load("chatglm/chatglm3__lora.yaml")
    assert at(s, "training.per_device_train_batch_size") == (4, Origin.LITERAL, 15)
    assert at(s, "training.learning_rate")[0] == 5e-5
    assert at(s, "training.max_steps") == (3000, Origin.LITERAL, 11)
    assert at(s, "training.dataloader_num_workers") == (16, Origin.LITERAL, 16)
    # max_input_length 256 + max_output_length 512 + 1 (finetune_hf.py process_batch)
    assert s.training.max_seq_length.value == 769 and s.training.max_seq_length.span.line == 6
    assert (s.lora.r.value, s.lora.lora_alpha.value, s.lora.lora_dropout.value) == (8, 32, 0.1)
    assert s.lora.target_modules.origin is Origin.LIBRARY_DEFAULT  # peft's per-architecture default
    # finetune_hf.py calls model.gradient_checkpointing_enable() itself
    fact = facts.checkpointing(s)
    assert fact.value is True and "finetune_hf.py" in s.training.gradient_checkpointing.source
    # the training_args gradient_accumulation default is Seq2SeqTrainingArguments'
    assert s.training.gradient_accumulation_steps.origin is Origin.LIBRARY_DEFAULT


def test_chatglm3_prefix_tuning_and_full_finetune_have_no_lora():
    assert load("chatglm/chatglm3__ptuning_v2.yaml").lora is None
    assert load("chatglm/chatglm3__sft.yaml").lora is None


def test_glm4_lora():
    s = load("chatglm/glm4__lora.yaml")
    assert s.lora.target_modules.value == ("q_proj", "k_proj", "v_proj")
    assert s.training.max_seq_length.value == 1025
    assert at(s, "model.torch_dtype")[0] == "bfloat16"
    assert facts.checkpointing(s).value is False  # GLM-4's finetune.py checkpoints only on resume
    assert [e.kind for e in s.launch] == ["deepspeed"]  # deepspeed: configs/ds_zero_2.json


def test_the_workers_are_flagged_and_preprocessing_processes_are_not(tmp_path):
    result = lint(CONFIGS / "chatglm" / "chatglm3__lora.yaml", Settings(cpus=8))
    assert result.errors == []
    assert [(f.code, f.span.line) for f in result.findings] == [("LL007", 16)]  # not data_config.num_proc


def test_glm4_checkpointing_finding_names_the_section():
    result = lint(CONFIGS / "chatglm" / "glm4__lora.yaml", Settings(cpus=16, select=("LL001",)))
    [f] = result.findings
    assert f.span.line == 13 and "training_args" in f.fix and "only when resuming" in f.message


@pytest.mark.parametrize("text", [
    "training_args:\n  output_dir: out\n",                    # nothing of the dataclass beside it
    "max_input_length: 5\ntraining_args:\n  a: 1\nmodel: x\n",  # a key the dataclass does not have
    "max_input_length: 256\ntraining_args: [1, 2]\n",          # not a mapping
])
def test_other_files_with_such_keys_are_not_this_dialect(text):
    try:
        [setup] = extract_config("x.yaml", text)
    except NotATrainingConfig:
        return
    assert setup.dialect != "chatglm-finetune"
