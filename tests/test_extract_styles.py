"""Issue 4 styles: dataclass arguments, helpers, namespaces, config files, sweeps, fire, exports."""

from pathlib import Path

from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "python"


def extract(name: str):
    path = FIX / name
    return extract_python(str(path), path.read_text())


def line_of(name: str, needle: str, nth: int = 1) -> int:
    hits = [i for i, text in enumerate((FIX / name).read_text().splitlines(), 1) if needle in text]
    return hits[nth - 1]


def test_hf_argument_parser_dataclasses_and_merged_namespace():
    f = "hf_argparser_dataclasses.py"
    (s,) = extract(f)
    assert s.model.name_or_path.value == "huggyllama/llama-7b"
    assert s.model.name_or_path.origin is Origin.DATACLASS_DEFAULT
    assert s.model.name_or_path.span.line == line_of(f, 'default="huggyllama/llama-7b"')
    q = s.quantization
    assert q.bits.value == 4 and q.bits.origin is Origin.DATACLASS_DEFAULT  # args.bits == 4
    assert q.bnb_4bit_quant_type.value == "nf4"
    assert q.bnb_4bit_use_double_quant.value is True
    # fp16 comes from transformers' TrainingArguments (False), bf16 from the subclass (False)
    assert q.bnb_4bit_compute_dtype.value == "float32"
    assert s.lora.r.value == 64 and s.lora.r.source == "TrainingArguments.lora_r"
    assert s.lora.target_modules.value == ("q_proj", "v_proj", "k_proj", "o_proj")  # default_factory
    t = s.training
    assert t.gradient_checkpointing.value is True
    assert t.gradient_checkpointing.origin is Origin.DATACLASS_DEFAULT
    assert t.gradient_checkpointing.span.line == line_of(f, "gradient_checkpointing: bool")
    assert t.optim.value == "paged_adamw_32bit"
    assert t.per_device_train_batch_size.value == 1
    assert t.gradient_accumulation_steps.value == 16
    # a library default read through HfArgumentParser is a command-line option's default
    assert t.learning_rate.origin is Origin.ARGPARSE_DEFAULT
    assert t.learning_rate.source.startswith("--learning_rate: a command-line option")
    assert "training_args.py" in t.learning_rate.source
    prep = s.calls_of("prepare_model_for_kbit_training")[0]
    assert prep.args["use_gradient_checkpointing"].value is True


def test_helpers_dicts_and_namespaces():
    f = "helpers_and_namespaces.py"
    (s,) = extract(f)
    assert s.model.name_or_path.value == "google/gemma-2-9b"  # SimpleNamespace attribute
    assert s.model.torch_dtype.value == "bfloat16"
    assert s.model.torch_dtype.origin is Origin.FUNCTION_DEFAULT
    assert s.model.device_map.value == {"": 0}  # item assignment before **
    assert s.model.device_map.span.line == line_of(f, 'kwargs["device_map"]')
    assert s.model.use_cache.value is False  # .update(...)
    assert s.lora.r.value == 32  # the call's argument, not the helper's default
    assert s.lora.lora_alpha.value == 64 and s.lora.lora_alpha.origin is Origin.FUNCTION_DEFAULT
    t = s.training
    assert t.per_device_train_batch_size.value == 4  # 2 * cfg.base_bs
    assert t.gradient_accumulation_steps.value == 8  # 32 // 4 // WORLD_SIZE (default 1)
    assert t.gradient_accumulation_steps.origin is Origin.ENV_DEFAULT
    assert t.gradient_checkpointing.value is True and t.bf16.value is True  # dict.update
    assert t.gradient_checkpointing_kwargs.value == {"use_reentrant": False}
    assert t.extra["output_dir"].value == "runs/gemma-r32"  # f-string
    # WORLD_SIZE only divides the accumulation steps: it places no process (weak evidence)
    assert [e.kind for e in s.launch] == ["env-read"]


def test_vars_of_argparse_namespace():
    (s,) = extract("vars_args.py")
    t = s.training
    assert t.per_device_train_batch_size.value == 16
    assert t.per_device_train_batch_size.origin is Origin.ARGPARSE_DEFAULT
    assert t.dataloader_num_workers.value == 12
    assert t.gradient_checkpointing.value is False
    # not among the parser's arguments: TrainingArguments' own default
    assert t.gradient_accumulation_steps.origin is Origin.LIBRARY_DEFAULT


def test_sweep_and_two_trainers_give_one_setup_each():
    f = "sweep_and_two_trainers.py"
    setups = extract(f)
    assert len(setups) == 4
    sweep = setups[:2]
    assert [s.lora.r.value for s in sweep] == [8, 64]
    assert [s.lora.lora_alpha.value for s in sweep] == [16, 128]
    assert all(s.anchor.line == line_of(f, "SFTTrainer(model=base, args=sweep_args") for s in sweep)
    assert sweep[1].lora.r.span.line == line_of(f, "for rank in")
    assert sweep[1].training.extra["output_dir"].value == "sweep-r64"
    sft, dpo = setups[2:]
    assert sft.anchor.line == line_of(f, "sft = SFTTrainer(")
    assert sft.training.gradient_checkpointing.value is False
    assert sft.lora.r.value == 16
    assert dpo.anchor.line == line_of(f, "dpo = DPOTrainer(")
    assert dpo.training.max_seq_length.value == 1024
    assert dpo.training.gradient_checkpointing.value is True  # TRL configs default it on
    assert dpo.model.name_or_path.value == "Qwen/Qwen2.5-1.5B"
    assert all(s.framework == "trl" for s in setups)


def test_json_config_file_named_by_literal_path():
    (s,) = extract("json_config_file.py")
    assert s.model.name_or_path.value == "Qwen/Qwen-7B-Chat"
    assert s.model.name_or_path.origin is Origin.CONFIG_FILE
    assert s.model.name_or_path.source == "configs/train_args.json:3"
    assert s.lora.r.value == 64
    t = s.training
    assert t.per_device_train_batch_size.value == 4
    assert t.gradient_checkpointing.value is True and t.fp16.value is True
    assert t.max_seq_length.value == 1024
    assert t.learning_rate.origin is Origin.CONFIG_FILE
    assert t.bf16.origin is Origin.LIBRARY_DEFAULT  # not in the file


def test_fire_entry_point_defaults():
    f = "fire_entry.py"
    (s,) = extract(f)
    assert s.model.name_or_path.origin is Origin.FUNCTION_DEFAULT
    assert s.model.name_or_path.source == "train(base_model=...)"
    assert s.lora.target_modules.value == ("q_proj", "v_proj")
    t = s.training
    assert t.per_device_train_batch_size.value == 4
    assert t.gradient_accumulation_steps.value == 32  # 128 // 4, ddp ruled out by WORLD_SIZE=1
    # device_map: "auto" unless WORLD_SIZE says DDP: rests on the environment's default
    assert s.model.device_map.value == "auto"
    assert s.model.device_map.origin is Origin.ENV_DEFAULT
    assert {e.kind for e in s.launch} == {"env-rank", "ddp-argument"}


def test_colab_globals_style():
    f = "colab_globals.py"
    (s,) = extract(f)
    assert s.framework == "trl"
    q = s.quantization
    assert q.bits.value == 4 and q.bits.origin is Origin.VARIABLE
    assert q.bnb_4bit_compute_dtype.value == "float16"  # getattr(torch, "float16")
    assert q.bnb_4bit_compute_dtype.span.line == line_of(f, 'bnb_4bit_compute_dtype = "float16"')
    t = s.training
    assert t.fp16.value is False and t.bf16.value is False
    # `gradient_checkpointing = True` is defined but never passed: the default stands
    assert t.gradient_checkpointing.value is False
    assert t.gradient_checkpointing.origin is Origin.LIBRARY_DEFAULT
    # max_seq_length=None on the old SFTTrainer: trl's fallback of 1024
    assert t.max_seq_length.value == 1024 and t.max_seq_length.origin is Origin.LIBRARY_DEFAULT
    assert t.packing.value is False and t.packing.origin is Origin.VARIABLE
    assert s.model.use_cache.value is False


def test_unsloth_export():
    (s,) = extract("unsloth_export.py")
    assert s.framework == "unsloth"
    assert s.model.name_or_path.value == "unsloth/llama-3-8b-bnb-4bit"
    assert s.quantization.bits.value == 4
    assert s.lora.r.value == 16 and len(s.lora.target_modules.value) == 7
    assert s.training.max_seq_length.value == 2048
    assert s.training.fp16.value is True
    gc = s.calls_of("gradient_checkpointing_enable")
    assert len(gc) == 1 and gc[0].args["use_gradient_checkpointing"].value == "unsloth"


def test_config_class_attributes_and_yaml_file(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "train.yaml").write_text(
        "per_device_train_batch_size: 3\ngradient_checkpointing: true\nbf16: true\n")
    script = tmp_path / "train.py"
    script.write_text(
        "from peft import LoraConfig\n"
        "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
        "class CFG:\n"
        "    rank = 24\n"
        "    targets = ['q_proj', 'v_proj']\n"
        "lora = LoraConfig(r=CFG.rank, target_modules=CFG.targets)\n"
        "(targs,) = HfArgumentParser(TrainingArguments).parse_yaml_file('conf/train.yaml')\n"
        "Trainer(model=None, args=targs, peft_config=lora).train()\n")
    (s,) = extract_python(str(script), script.read_text())
    assert s.lora.r.value == 24 and s.lora.r.origin is Origin.VARIABLE
    assert s.lora.target_modules.value == ("q_proj", "v_proj")
    t = s.training
    assert t.per_device_train_batch_size.value == 3
    assert t.per_device_train_batch_size.origin is Origin.CONFIG_FILE
    assert t.per_device_train_batch_size.source == "conf/train.yaml:1"
    assert t.gradient_checkpointing.value is True and t.bf16.value is True
    assert t.fp16.origin is Origin.LIBRARY_DEFAULT


def test_missing_config_file_leaves_values_unknown(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
        "(targs,) = HfArgumentParser(TrainingArguments).parse_json_file('absent.json')\n"
        "Trainer(model=None, args=targs).train()\n")
    (s,) = extract_python(str(script), script.read_text())
    bs = s.training.per_device_train_batch_size
    assert not bs.known and "absent.json" in bs.source


def test_trl_parser_with_sft_config_gives_library_defaults_as_launch_options():
    src = ("from trl import SFTConfig, SFTTrainer, TrlParser\n"
           "from dataclasses import dataclass\n"
           "@dataclass\nclass Script:\n    model: str = 'Qwen/Qwen2.5-0.5B'\n"
           "script, cfg = TrlParser((Script, SFTConfig)).parse_args_and_config()\n"
           "SFTTrainer(model=script.model, args=cfg).train()\n")
    (s,) = extract_python("t.py", src)
    assert s.model.name_or_path.value == "Qwen/Qwen2.5-0.5B"
    assert s.model.name_or_path.origin is Origin.DATACLASS_DEFAULT
    assert s.training.max_seq_length.value == 1024
    assert s.training.gradient_checkpointing.value is True
    # SFTConfig's default, as the --gradient_checkpointing option TrlParser makes of it
    assert s.training.gradient_checkpointing.origin is Origin.ARGPARSE_DEFAULT
