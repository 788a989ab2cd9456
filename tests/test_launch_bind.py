"""A launch's words bound to the script's / config's options (issue 15 item 2).

Launches are read with :func:`lintlora.extract.launch.launches_in_text` and handed to the
extractors through :func:`lintlora.extract.launch_bind.command_line_of`.
"""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from lintlora.extract.argv_grammar import OptSpec, fire_value, parse_options, string_to_bool
from lintlora.extract.launch import launches_in_text
from lintlora.extract.launch_bind import (
    MAX_BOUND_WORDS, CommandLine, command_line_of, word_source,
)
from lintlora.extract.launch_model import ShellValue
from lintlora.extract.python import extract_python
from lintlora.extract.yaml_config import extract_config
from lintlora.training_setup import Origin

HF_SCRIPT = """\
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "the model"})
    lora_r: int = 8
    use_dora: bool = True
    lora_dropout: Optional[float] = None


parser = HfArgumentParser((ModelArguments, TrainingArguments))
if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
    model_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
else:
    model_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
model = get_peft_model(model, LoraConfig(r=model_args.lora_r, use_dora=model_args.use_dora,
                                         lora_dropout=model_args.lora_dropout))
Trainer(model=model, args=training_args).train()
"""

ARGPARSE_SCRIPT = """\
import argparse

from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--model_name", "-m", default="gpt2")
p.add_argument("--batch_size", "-b", type=int, default=1)
p.add_argument("--lr", type=float, default=1e-4)
p.add_argument("--grad_ckpt", action="store_true")
p.add_argument("--no_bf16", dest="bf16", action="store_false")
p.add_argument("--rank", type=int, choices=[8, 16], default=8)
p.add_argument("--targets", nargs="+", default=["q_proj"])
p.add_argument("--modules", action="append")
p.add_argument("--accum", type=lambda s: int(s) * 2, default=1)
p.add_argument("--alpha", nargs="?", type=int, const=64, default=16)
args = p.parse_args()
model = AutoModelForCausalLM.from_pretrained(args.model_name)
model = get_peft_model(model, LoraConfig(r=args.rank, lora_alpha=args.alpha,
                                         target_modules=args.targets,
                                         modules_to_save=args.modules))
ta = TrainingArguments("out", per_device_train_batch_size=args.batch_size,
                       learning_rate=args.lr, gradient_checkpointing=args.grad_ckpt,
                       bf16=args.bf16, gradient_accumulation_steps=args.accum)
Trainer(model=model, args=ta).train()
"""

FIRE_SCRIPT = """\
import fire
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def train(base_model: str = "gpt2", micro_batch_size: int = 4, lora_r: int = 8,
          gradient_checkpointing: bool = False, learning_rate: float = 3e-4):
    model = AutoModelForCausalLM.from_pretrained(base_model)
    model = get_peft_model(model, LoraConfig(r=lora_r))
    ta = TrainingArguments("out", per_device_train_batch_size=micro_batch_size,
                           gradient_checkpointing=gradient_checkpointing,
                           learning_rate=learning_rate)
    Trainer(model=model, args=ta).train()


if __name__ == "__main__":
    fire.Fire(train)
"""

TRL_SCRIPT = """\
from dataclasses import dataclass

from peft import LoraConfig
from transformers import AutoModelForCausalLM
from trl import SFTConfig, SFTTrainer, TrlParser


@dataclass
class ScriptArguments:
    model_name: str = "gpt2"
    lora_r: int = 8


parser = TrlParser((ScriptArguments, SFTConfig))
script_args, training_args = parser.parse_args_and_config()
model = AutoModelForCausalLM.from_pretrained(script_args.model_name)
SFTTrainer(model=model, args=training_args, peft_config=LoraConfig(r=script_args.lora_r)).train()
"""


def _launch(tmp_path, launch_text: str, index: int = 0):
    run = tmp_path / "run.sh"
    run.write_text(launch_text)
    found = launches_in_text(launch_text, str(run))
    assert found.launches, found.problems
    return command_line_of(found.launches[index])


def _setup(tmp_path, script: str, launch_text: str | None, name: str = "train.py"):
    (tmp_path / ".git").mkdir(exist_ok=True)  # the project root
    path = tmp_path / name
    path.write_text(script)
    cl = _launch(tmp_path, launch_text) if launch_text is not None else None
    setups = extract_python(str(path), script, command_line=cl)
    assert setups
    return setups[0]


def _at_launch(setting, line: int, tmp_path, value=None):
    assert setting.origin is Origin.LAUNCH, setting
    assert setting.span.path == str(tmp_path / "run.sh")
    # the value's word as written (issue 15 trial: no longer column 1 of the line)
    assert setting.span.line == line and setting.span.column >= 1
    if value is not None:
        assert setting.value == value


# ---- the acceptance shape ---------------------------------------------------------------------
def test_torchrun_hf_script_binds_model_fp16_and_deepspeed(tmp_path):
    launch = textwrap.dedent("""\
        #!/bin/bash
        MODEL=meta-llama/Llama-2-13b-hf
        torchrun --nproc_per_node 4 train.py \\
          --model_name_or_path $MODEL \\
          --fp16 True --deepspeed ds_z3.json
        """)
    s = _setup(tmp_path, HF_SCRIPT, launch)
    _at_launch(s.model.name_or_path, 4, tmp_path, "meta-llama/Llama-2-13b-hf")
    assert s.model.name_or_path.source == "--model_name_or_path meta-llama/Llama-2-13b-hf (run.sh:4)"
    _at_launch(s.training.fp16, 5, tmp_path, True)
    assert s.training.fp16.source == "--fp16 True (run.sh:5)"
    _at_launch(s.training.deepspeed, 5, tmp_path, "ds_z3.json")
    # not on the command line: the defaults, as today
    assert s.lora.r.value == 8 and s.lora.r.origin is Origin.DATACLASS_DEFAULT
    assert s.training.bf16.origin is Origin.ARGPARSE_DEFAULT


def test_without_a_command_line_nothing_changes(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT, None)
    assert not s.model.name_or_path.known
    assert s.training.fp16.origin is Origin.ARGPARSE_DEFAULT and s.training.fp16.value is False
    assert s.inputs == ()


# ---- HfArgumentParser ---------------------------------------------------------------------------
@pytest.mark.parametrize("words, value", [
    ("--fp16", True), ("--fp16 True", True), ("--fp16 false", False), ("--fp16 yes", True),
    ("--fp16 no", False), ("--fp16 1", True), ("--fp16 0", False), ("--fp16 t", True),
    ("--fp16 f", False), ("--fp16 y", True), ("--fp16 n", False), ("--fp16=True", True),
    ("--fp16 --bf16 False", True),
])
def test_hf_bool_forms(tmp_path, words, value):
    s = _setup(tmp_path, HF_SCRIPT, f"python train.py --model_name_or_path m {words}\n")
    _at_launch(s.training.fp16, 1, tmp_path, value)


def test_hf_bool_value_not_a_bool_is_unknown(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT, "python train.py --fp16 maybe\n")
    assert not s.training.fp16.known
    assert "does not convert" in s.training.fp16.source


def test_hf_dashed_alias_and_no_complement(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT,
               "python train.py --model-name-or-path m --lora-r 32 --no_use_dora "
               "--gradient-checkpointing --per-device-train-batch-size 2\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "m")
    _at_launch(s.lora.r, 1, tmp_path, 32)
    _at_launch(s.lora.use_dora, 1, tmp_path, False)
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, True)
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 2)


def test_hf_no_complement_only_for_true_defaults(tmp_path):
    # fp16 defaults to False: `--no_fp16` is no option of the parser
    s = _setup(tmp_path, HF_SCRIPT, "python train.py --no_fp16 --no-use-dora\n")
    assert s.training.fp16.origin is Origin.ARGPARSE_DEFAULT
    _at_launch(s.lora.use_dora, 1, tmp_path, False)


def test_hf_typed_by_annotation(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT, "python train.py --lora_dropout 0.05 --lora_r x\n")
    _at_launch(s.lora.lora_dropout, 1, tmp_path, 0.05)
    assert not s.lora.r.known and "does not convert" in s.lora.r.source


def test_hf_abbreviation_and_last_wins(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT,
               "python train.py --model_name m --per_device_train 2 --per_device_train 4\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "m")
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 4)


def test_hf_json_argument_is_read(tmp_path):
    (tmp_path / "args.json").write_text(
        '{\n  "model_name_or_path": "Qwen/Qwen2-7B",\n  "fp16": true,\n'
        '  "per_device_train_batch_size": 4\n}\n')
    s = _setup(tmp_path, HF_SCRIPT, "python train.py args.json\n")
    mp = s.model.name_or_path
    assert mp.value == "Qwen/Qwen2-7B" and mp.origin is Origin.CONFIG_FILE
    assert mp.span.path == str(tmp_path / "args.json") and mp.span.line == 2
    assert s.training.fp16.value is True and s.training.fp16.span.line == 3
    assert s.training.per_device_train_batch_size.value == 4
    assert s.inputs == (str(tmp_path / "args.json"),)


def test_hf_json_argument_missing_file_is_unknown_and_an_input(tmp_path):
    s = _setup(tmp_path, HF_SCRIPT, "python train.py nowhere.json\n")
    assert not s.model.name_or_path.known
    assert s.inputs == (str(tmp_path / "nowhere.json"),)


def test_hf_json_outside_the_project_is_not_read(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (tmp_path / "secret.json").write_text('{"model_name_or_path": "x"}')
    s = _setup(project, HF_SCRIPT, "python train.py ../secret.json\n")
    assert not s.model.name_or_path.known
    assert "outside the project" in s.model.name_or_path.source


def test_trl_config_file_then_command_line(tmp_path):
    (tmp_path / "recipe.yaml").write_text(
        "model_name: Qwen/Qwen2-0.5B\nlora_r: 16\nper_device_train_batch_size: 8\n"
        "gradient_checkpointing: true\n")
    s = _setup(tmp_path, TRL_SCRIPT,
               "accelerate launch train.py --config recipe.yaml --per_device_train_batch_size 2\n")
    assert s.model.name_or_path.value == "Qwen/Qwen2-0.5B"
    assert s.model.name_or_path.origin is Origin.CONFIG_FILE
    assert s.model.name_or_path.span.path == str(tmp_path / "recipe.yaml")
    assert s.lora.r.value == 16 and s.lora.r.span.line == 2
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 2)  # the command line wins
    assert s.training.gradient_checkpointing.value is True
    assert s.inputs == (str(tmp_path / "recipe.yaml"),)


# ---- argparse ------------------------------------------------------------------------------------
def test_argparse_forms(tmp_path):
    s = _setup(tmp_path, ARGPARSE_SCRIPT,
               "python train.py -m llama -b4 --lr=3e-4 --grad_ckpt --no_bf16 --rank 16 "
               "--targets q_proj v_proj --modules embed_tokens --modules lm_head --alpha\n",
               )
    _at_launch(s.model.name_or_path, 1, tmp_path, "llama")
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 4)
    assert s.training.per_device_train_batch_size.source == "-b4 (run.sh:1)"
    _at_launch(s.training.learning_rate, 1, tmp_path, 3e-4)
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, True)
    _at_launch(s.training.bf16, 1, tmp_path, False)
    _at_launch(s.lora.r, 1, tmp_path, 16)
    _at_launch(s.lora.target_modules, 1, tmp_path, ("q_proj", "v_proj"))
    _at_launch(s.lora.modules_to_save, 1, tmp_path, ("embed_tokens", "lm_head"))
    _at_launch(s.lora.lora_alpha, 1, tmp_path, 64)  # nargs="?" alone: const


def test_argparse_parse_known_args_and_vars(tmp_path):
    script = textwrap.dedent("""\
        import argparse
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        p = argparse.ArgumentParser()
        p.add_argument("--model", default="gpt2")
        p.add_argument("--per_device_train_batch_size", type=int, default=1)
        args, rest = p.parse_known_args()
        model = AutoModelForCausalLM.from_pretrained(args.model)
        kw = dict(vars(args))
        Trainer(model=model, args=TrainingArguments(
            "o", per_device_train_batch_size=kw["per_device_train_batch_size"])).train()
        """)
    s = _setup(tmp_path, script, "python train.py --model llama --unknown 1 "
                                 "--per_device_train_batch_size 8\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "llama")
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 8)


def test_argparse_prefix_and_defaults_kept(tmp_path):
    s = _setup(tmp_path, ARGPARSE_SCRIPT, "python train.py --model llama --batch 2\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "llama")
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 2)
    assert s.lora.r.value == 8 and s.lora.r.origin is Origin.ARGPARSE_DEFAULT
    assert s.training.gradient_checkpointing.value is False


def test_argparse_choices_and_other_types_unknown(tmp_path):
    s = _setup(tmp_path, ARGPARSE_SCRIPT, "python train.py --rank 32 --accum 4\n")
    assert not s.lora.r.known and "choices" in s.lora.r.source
    acc = s.training.gradient_accumulation_steps
    assert not acc.known and "not applied" in acc.source


def test_argparse_ambiguous_prefix_unknown(tmp_path):
    script = ARGPARSE_SCRIPT.replace('"--lr"', '"--lr_model"').replace('"--alpha"', '"--lr_head"')
    script = script.replace("args.lr,", "args.lr_model,")
    s = _setup(tmp_path, script, "python train.py --lr 1e-3\n")
    assert not s.training.learning_rate.known
    assert "ambiguous" in s.training.learning_rate.source


def test_argparse_allow_abbrev_false(tmp_path):
    script = ARGPARSE_SCRIPT.replace("argparse.ArgumentParser()",
                                     "argparse.ArgumentParser(allow_abbrev=False)")
    s = _setup(tmp_path, script, "python train.py --model llama\n")
    assert s.model.name_or_path.value == "gpt2"


def test_argparse_own_list_is_not_the_command_line(tmp_path):
    script = ARGPARSE_SCRIPT.replace("p.parse_args()", 'p.parse_args(["--rank", "16"])')
    s = _setup(tmp_path, script, "python train.py --model_name llama\n")
    assert s.model.name_or_path.value == "gpt2"


def test_unknown_words(tmp_path):
    s = _setup(tmp_path, ARGPARSE_SCRIPT, "python train.py --model_name $MODEL --rank $(cat r)\n")
    mp = s.model.name_or_path
    assert not mp.known and "set at launch by an unknown value" in mp.source
    assert "$MODEL" in mp.source
    assert not s.lora.r.known and "command substitution" in s.lora.r.source
    # an unknown word where an option could be: every option may be set by it
    s = _setup(tmp_path, ARGPARSE_SCRIPT, "python train.py $EXTRA_ARGS --model_name x\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "x")
    assert not s.lora.r.known and "may be set at launch" in s.lora.r.source


def test_sys_argv(tmp_path):
    script = textwrap.dedent("""\
        import sys
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
        n = len(sys.argv)
        Trainer(model=model, args=TrainingArguments("o", per_device_train_batch_size=int(sys.argv[2]),
                                                    gradient_accumulation_steps=n)).train()
        """)
    s = _setup(tmp_path, script, "python train.py meta-llama/Llama-3.1-8B 4\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "meta-llama/Llama-3.1-8B")
    assert s.training.per_device_train_batch_size.value == 4
    assert s.training.per_device_train_batch_size.origin is Origin.LAUNCH
    assert s.training.gradient_accumulation_steps.value == 3


# ---- fire ------------------------------------------------------------------------------------------
def test_fire_forms(tmp_path):
    s = _setup(tmp_path, FIRE_SCRIPT,
               "python train.py llama --micro-batch-size=2 --lora_r 16 --gradient_checkpointing "
               "--learning_rate 1e-4\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "llama")
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 2)
    assert s.training.per_device_train_batch_size.source == "--micro-batch-size=2 (run.sh:1)"
    _at_launch(s.lora.r, 1, tmp_path, 16)
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, True)
    _at_launch(s.training.learning_rate, 1, tmp_path, 1e-4)


def test_fire_noflag_and_defaults(tmp_path):
    s = _setup(tmp_path, FIRE_SCRIPT, "python train.py --nogradient_checkpointing\n")
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, False)
    assert s.model.name_or_path.value == "gpt2"
    assert s.model.name_or_path.origin is Origin.FUNCTION_DEFAULT


@pytest.mark.parametrize("text, value", [
    ("4", 4), ("1e-4", 1e-4), ("True", True), ("None", None), ("'quoted'", "quoted"),
    ("[1, 2]", (1, 2)), ("q_proj", "q_proj"), ("__import__('os')", "__import__('os')"),
])
def test_fire_values_never_evaluated(text, value):
    assert fire_value(text) == value


# ---- the YAML dialects --------------------------------------------------------------------------
def _config(tmp_path, name: str, text: str, launch: str):
    path = tmp_path / name
    path.write_text(text)
    cl = _launch(tmp_path, launch)
    return extract_config(str(path), text, explicit=True, command_line=cl)


LF = "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: lora\n" \
     "lora_rank: 8\nper_device_train_batch_size: 1\nbf16: true\n"


def test_llamafactory_dotlist(tmp_path):
    out = _config(tmp_path, "lf.yaml", LF,
                  "llamafactory-cli train lf.yaml lora_rank=16 per_device_train_batch_size=$BS\n")
    s = out[0]
    _at_launch(s.lora.r, 1, tmp_path, 16)
    assert s.lora.r.source == "lora_rank=16 (run.sh:1)"
    assert not s.training.per_device_train_batch_size.known
    assert "$BS" in s.training.per_device_train_batch_size.source
    assert s.model.name_or_path.origin is Origin.LITERAL


def test_llamafactory_without_launch_unchanged(tmp_path):
    s = extract_config(str(tmp_path / "lf.yaml"), LF, explicit=True)[0]
    assert s.lora.r.value == 8 and s.lora.r.origin is Origin.LITERAL


AX = "base_model: NousResearch/Llama-2-7b-hf\nadapter: qlora\nload_in_4bit: true\nlora_r: 32\n" \
     "micro_batch_size: 2\ngradient_checkpointing: true\nsequence_len: 4096\n"


def test_axolotl_options(tmp_path):
    s = _config(tmp_path, "ax.yml", AX,
                "axolotl train ax.yml --micro-batch-size 4 --no-gradient-checkpointing "
                "--lora_r=64\n")[0]
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 4)
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, False)
    _at_launch(s.lora.r, 1, tmp_path, 64)
    assert s.training.max_seq_length.value == 4096


TT = textwrap.dedent("""\
    model:
      _component_: torchtune.models.llama3.lora_llama3_8b
      lora_attn_modules: ['q_proj', 'v_proj']
      lora_rank: 8
      lora_alpha: 16
    batch_size: 2
    enable_activation_checkpointing: True
    dataset:
      _component_: torchtune.datasets.alpaca_cleaned_dataset
      packed: True
    """)


def test_torchtune_dotlist_removal_and_component(tmp_path):
    s = _config(tmp_path, "tt.yaml", TT,
                "tune run lora_finetune_single_device --config tt.yaml batch_size=8 "
                "model.lora_rank=16 ~dataset.packed enable_activation_checkpointing=False "
                "model=torchtune.models.llama3_1.lora_llama3_1_8b\n")[0]
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 8)
    _at_launch(s.lora.r, 1, tmp_path, 16)
    _at_launch(s.training.gradient_checkpointing, 1, tmp_path, False)
    assert s.training.packing.origin is Origin.LIBRARY_DEFAULT  # removed: the recipe's default
    assert s.model.name_or_path.value == "torchtune.models.llama3_1.lora_llama3_1_8b"
    assert s.model.name_or_path.origin is Origin.LAUNCH


def test_torchtune_bad_override_noted(tmp_path):
    out = _config(tmp_path, "tt.yaml", TT,
                  "tune run lora_finetune_single_device --config tt.yaml a=b=c batch_size\n")
    assert len(out.notes) == 2 and all("run.sh:1" in n for n in out.notes)
    assert out[0].training.per_device_train_batch_size.value == 2


LG = "checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf\nprecision: bf16-true\ndevices: 1\n" \
     "lora_r: 8\ntrain:\n  micro_batch_size: 4\n  max_seq_length: 512\n"


def test_litgpt_jsonargparse(tmp_path):
    s = _config(tmp_path, "lg.yaml", LG,
                "litgpt finetune_lora checkpoints/google/gemma-2b --config lg.yaml --devices 4 "
                "--train.micro_batch_size=2 --lora_r 16\n")[0]
    _at_launch(s.training.per_device_train_batch_size, 1, tmp_path, 2)
    _at_launch(s.lora.r, 1, tmp_path, 16)
    _at_launch(s.model.name_or_path, 1, tmp_path)
    assert "gemma-2b" in s.model.name_or_path.value
    assert s.training.max_seq_length.value == 512


# ---- hostile input ---------------------------------------------------------------------------------
def _cl(words: list[ShellValue]) -> CommandLine:
    return CommandLine(tuple(words), "/p/run.sh", 1, "python")


def test_ten_thousand_words_bounded(tmp_path):
    words = " ".join(f"--targets{i % 7} v{i}" for i in range(5_000))
    start = time.perf_counter()
    s = _setup(tmp_path, ARGPARSE_SCRIPT, f"python train.py --rank 16 {words}\n")
    assert time.perf_counter() - start < 30
    assert s.lora.r.value == 16
    assert not s.model.name_or_path.known and "4,096" in s.model.name_or_path.source
    specs = [OptSpec("x", ("--x",), nargs="+")]
    parsed = parse_options(specs, tuple(ShellValue(str(i), "literal", line=1)
                                        for i in range(10_000)), limit=MAX_BOUND_WORDS)
    assert parsed.blocked and "4,096" in parsed.blocked


def test_nested_and_binary_words():
    with pytest.raises(ValueError):
        fire_value("[" * 2000 + "]" * 2000)  # nested too deep: unknown, never parsed
    huge = "[" * 5000 + "]" * 5000
    assert fire_value(huge) == huge  # beyond the length bound: the text itself
    binary = "\x00\x01\xff" * 100
    parsed = parse_options([OptSpec("m", ("--m",))],
                           (ShellValue("--m", "literal", line=1),
                            ShellValue(binary, "literal", line=1)))
    assert parsed.values["m"][0] == binary
    shown = word_source(_cl([]), (ShellValue(binary, "literal", line=1),))
    assert "\x00" not in shown and len(shown) < 200


def test_hostile_yaml_overrides(tmp_path):
    deep_key = ".".join(["a"] * 100)
    out = _config(tmp_path, "lf.yaml", LF,
                  f"llamafactory-cli train lf.yaml {deep_key}=1 lora_rank=[[[1]]] "
                  "lora_alpha=$'\\x00' \n")
    assert out[0].model.name_or_path.value == "meta-llama/Meta-Llama-3-8B"
    assert not out[0].lora.r.known


def test_string_to_bool_matches_transformers():
    assert [string_to_bool(t) for t in ("yes", "TRUE", "t", "y", "1")] == [True] * 5
    assert [string_to_bool(t) for t in ("no", "False", "f", "n", "0")] == [False] * 5
    with pytest.raises(ValueError):
        string_to_bool("2")


def test_command_line_of_keeps_the_launch(tmp_path):
    cl = _launch(tmp_path, "cd /tmp && torchrun --nproc_per_node 2 train.py --fp16\n")
    assert cl.words[0].text == "--fp16" and cl.launcher == "torchrun"
    assert cl.where == "run.sh:1"
    assert os.path.isabs(cl.folder())


def test_fire_class_init_parameters(tmp_path):
    script = textwrap.dedent("""\
        import fire
        from transformers import AutoModelForCausalLM


        class Runner:
            def __init__(self, model_id: str = "gpt2", rank: int = 8):
                self.model = AutoModelForCausalLM.from_pretrained(model_id)


        if __name__ == "__main__":
            fire.Fire(Runner)
        """)
    s = _setup(tmp_path, script, "python train.py --model_id meta-llama/Llama-3.2-1B\n")
    _at_launch(s.model.name_or_path, 1, tmp_path, "meta-llama/Llama-3.2-1B")


def test_ten_thousand_yaml_overrides_bounded(tmp_path):
    words = " ".join(f"key_{i}={i}" for i in range(10_000))
    start = time.perf_counter()
    out = _config(tmp_path, "lf.yaml", LF, f"llamafactory-cli train lf.yaml {words} lora_rank=4\n")
    assert time.perf_counter() - start < 30
    assert out[0].lora.r.value == 8  # beyond the words read
    assert any("4,096" in n for n in out.notes)
