"""LL004 mended (issue 13, section 3): a TRL trainer that wraps the model itself from
``peft_config=`` is a wrap (TRL never prints the count), and the project's own helper that
prints the count is a report. Real pipeline on scripts written to ``tmp_path``."""

from __future__ import annotations

import textwrap

import pytest
from rules_support import lint

from lintlora.settings import Settings

HEADER = """\
from datasets import load_dataset
from peft import LoraConfig
from trl import {trainer}, SFTConfig
"""


def ll004(tmp_path, source, name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    result = lint(path, Settings(gpu="a100-80gb", select=("LL004",)))
    assert result.errors == []
    return [f for f in result.findings if f.code == "LL004"]


TRAINERS = ["SFTTrainer", "DPOTrainer", "ORPOTrainer", "KTOTrainer", "CPOTrainer", "GRPOTrainer",
            "RewardTrainer", "PPOTrainer", "RLOOTrainer", "OnlineDPOTrainer"]


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_trl_trainer_given_peft_config_is_a_wrap(tmp_path, trainer):
    src = HEADER.format(trainer=trainer) + textwrap.dedent(f"""\
        dataset = load_dataset("trl-lib/Capybara", split="train")
        args = SFTConfig(output_dir="out", gradient_checkpointing=True)
        trainer = {trainer}(
            model="Qwen/Qwen2.5-0.5B",
            args=args,
            train_dataset=dataset,
            peft_config=LoraConfig(r=16, target_modules=["q_proj", "v_proj"]),
        )
        trainer.train()
        """)
    [f] = ll004(tmp_path, src)
    assert f.span.line == 6
    assert f"{trainer}(peft_config=...)" in f.message and "never prints" in f.message
    assert "trainer.model.print_trainable_parameters()" in f.fix


def test_the_count_printed_from_the_trainer_model_silences_it(tmp_path):
    src = HEADER.format(trainer="SFTTrainer") + textwrap.dedent("""\
        trainer = SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="out"),
                             train_dataset=load_dataset("x"), peft_config=LoraConfig(r=8))
        trainer.model.print_trainable_parameters()
        trainer.train()
        """)
    assert ll004(tmp_path, src) == []


def test_peft_config_none_is_no_wrap_and_an_unresolved_one_is_said(tmp_path):
    src = HEADER.format(trainer="SFTTrainer") + textwrap.dedent("""\
        trainer = SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="out"),
                             train_dataset=load_dataset("x"), peft_config=None)
        trainer.train()
        """)
    assert ll004(tmp_path, src) == []
    src = HEADER.format(trainer="SFTTrainer") + textwrap.dedent("""\
        from trl import ModelConfig, TrlParser, get_peft_config
        model_args, training_args = TrlParser((ModelConfig, SFTConfig)).parse_args_and_config()
        trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                             train_dataset=load_dataset("x"), peft_config=get_peft_config(model_args))
        trainer.train()
        """)
    [f] = ll004(tmp_path, src, "b.py")
    assert "when peft_config is not None" in f.message


def test_only_the_trainer_given_peft_config_is_flagged(tmp_path):
    src = HEADER.format(trainer="SFTTrainer") + textwrap.dedent("""\
        full = SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="a"), train_dataset=load_dataset("x"))
        full.train()
        lora = SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="b"), train_dataset=load_dataset("x"),
                          peft_config=LoraConfig(r=8, target_modules=["q_proj"]))
        lora.train()
        """)
    assert [f.span.line for f in ll004(tmp_path, src)] == [6]


WRAPPED = """\
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
{imports}
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
{report}
Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=train_dataset).train()
"""


@pytest.mark.parametrize("imports, report", [
    ("from utils import print_trainable_parameters", "print_trainable_parameters(model)"),
    ("from .helpers import print_trainable_params", "print_trainable_params(model)"),
    ("import utils", "utils.print_trainable_parameters(model)"),
    ("from common.log import log_trainable_parameters", "log_trainable_parameters(model, logger)"),
    ("def print_trainable_parameters(model):\n    print(sum(p.numel() for p in model.parameters()))",
     "print_trainable_parameters(model)"),
    ("def print_number_of_trainable_model_parameters(m):\n    return 0",
     "print(print_number_of_trainable_model_parameters(model))"),
])
def test_the_projects_own_helper_is_a_report(tmp_path, imports, report):
    assert ll004(tmp_path, WRAPPED.format(imports=imports, report=report)) == []


@pytest.mark.parametrize("imports, call", [
    ("from utils import mark_only_lora_as_trainable", "mark_only_lora_as_trainable(model)"),
    ("from utils import set_trainable_params", "set_trainable_params(model)"),
    ("", "print(model)"),
])
def test_helpers_that_do_not_print_the_count_are_not_reports(tmp_path, imports, call):
    [f] = ll004(tmp_path, WRAPPED.format(imports=imports, report=call))
    assert f.span.line == 6 and "model.print_trainable_parameters()" in f.fix
