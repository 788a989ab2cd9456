"""LL005 mended (issue 13, section 3): a branch on the world size is evidence of data-parallel
launch only for the arm it guards. The map a launcher's process passes is read with the
launcher's environment (``model.extra["device_map_launched"]``): ``None if world_size != 1 else
"auto"`` and its if/else, ``ddp`` and ``{"": local_rank}`` variants choose "auto" only in one
process (silent), while ``"auto" if world_size > 1 else None`` splits exactly under the
launcher (error). Real pipeline on scripts written to ``tmp_path``."""

from __future__ import annotations

import textwrap

import pytest
from rules_support import lint

from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.settings import Settings

HEAD = """\
import argparse
import os
import torch
from accelerate import Accelerator
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments

accelerator = Accelerator()
"""
TAIL = """\
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", torch_dtype=torch.bfloat16, device_map=device_map)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True)
Trainer(model=model, args=args, train_dataset=train_dataset).train()
"""


def ll005(tmp_path, middle):
    path = tmp_path / "train.py"
    path.write_text(HEAD + textwrap.dedent(middle) + TAIL, encoding="utf-8")
    result = lint(path, Settings(gpu="a10g", select=("LL005",)))
    assert result.errors == []
    return [f for f in result.findings if f.code == "LL005"]


SINGLE_PROCESS_AUTO = {
    "ifexp": """\
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        device_map = None if world_size != 1 else "auto"
        """,
    "ifexp-local-rank": """\
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        device_map = {"": int(os.environ.get("LOCAL_RANK") or 0)} if world_size != 1 else "auto"
        """,
    "ddp-flag": """\
        ddp = int(os.environ.get("WORLD_SIZE", 1)) != 1
        device_map = {"": int(os.environ.get("LOCAL_RANK", 0))} if ddp else "auto"
        """,
    "if-statement": """\
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        if world_size != 1:
            device_map = {"": int(os.environ["LOCAL_RANK"])}
        else:
            device_map = "auto"
        """,
    "later-if": """\
        device_map = "auto"
        if int(os.environ.get("WORLD_SIZE", 1)) > 1:
            device_map = None
        """,
    "argparse-world-size": """\
        parser = argparse.ArgumentParser()
        parser.add_argument("--world_size", type=int, default=1)
        cli = parser.parse_args()
        device_map = None if cli.world_size != 1 else "auto"
        """,
    "training-args-local-rank": """\
        (targs,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
        device_map = {"": targs.local_rank} if targs.local_rank != -1 else "auto"
        """,
}


@pytest.mark.parametrize("idiom", sorted(SINGLE_PROCESS_AUTO))
def test_auto_chosen_only_in_one_process_is_the_correct_idiom(tmp_path, idiom):
    assert ll005(tmp_path, SINGLE_PROCESS_AUTO[idiom]) == []


def test_auto_chosen_exactly_under_the_launcher_is_an_error(tmp_path):
    [f] = ll005(tmp_path, """\
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        device_map = "auto" if world_size > 1 else None
        """)
    assert f.severity is Severity.ERROR and f.span.line == 10
    assert "Under a data-parallel launcher" in f.message and 'device_map="auto"' in f.message


def test_gpu_zero_chosen_under_the_launcher_is_a_warning(tmp_path):
    [f] = ll005(tmp_path, """\
        ddp = int(os.environ.get("WORLD_SIZE", 1)) != 1
        device_map = {"": 0} if ddp else "auto"
        """)
    assert f.severity is Severity.WARNING and "GPU 0 in every process" in f.message


def test_the_launched_map_is_extracted_only_where_it_differs():
    src = HEAD + textwrap.dedent(SINGLE_PROCESS_AUTO["ifexp-local-rank"]) + TAIL
    [s] = extract_python("train.py", src)
    assert s.model.device_map.value == "auto"
    assert s.model.extra["device_map_launched"].value == {"": 1}
    plain = HEAD + 'device_map = {"": 0}\n' + TAIL
    [s] = extract_python("train.py", plain)
    assert "device_map_launched" not in s.model.extra
