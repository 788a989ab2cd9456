"""TrainingArguments/SFTConfig files: trl YAML, plain JSON, Firefly JSON."""

from __future__ import annotations

from pathlib import Path

from lintlora.extract.yaml_config import extract_config
from lintlora.facts import checkpointing
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"))
    return setup


def text(body: str, path: str = "sft.yaml") -> TrainingSetup:
    [setup] = extract_config(path, body)
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_trl_cli_example_values_on_the_next_line():
    s = load("trl/cli_configs__example_config.yaml")
    name = s.get("model.name_or_path")
    assert (name.value, name.key_span.line, name.span.line) == ("Qwen/Qwen2.5-0.5B", 9, 10)
    assert at(s, "training.learning_rate") == (1e-4, Origin.LITERAL, 16)
    # no use_peft: full fine-tuning
    assert s.lora is None and s.quantization is None
    # SFTConfig defaults (lintlora.extract.defaults)
    assert at(s, "training.per_device_train_batch_size")[:2] == (8, Origin.LIBRARY_DEFAULT)
    gc = s.get("training.gradient_checkpointing")
    assert gc.origin is Origin.LIBRARY_DEFAULT and "sft_config" in gc.source


def test_trl_peft_and_4bit_with_model_config_defaults():
    s = load("bad/trl_qlora_fp16.yaml")
    assert at(s, "lora.r") == (32, Origin.LITERAL, 5)
    assert at(s, "lora.target_modules") == ("all-linear", Origin.LITERAL, 7)
    assert at(s, "lora.lora_dropout")[:2] == (0.05, Origin.LIBRARY_DEFAULT)  # ModelConfig
    assert at(s, "quantization.bits") == (4, Origin.LITERAL, 8)
    assert at(s, "quantization.bnb_4bit_quant_type")[:2] == ("nf4", Origin.LIBRARY_DEFAULT)
    assert at(s, "quantization.bnb_4bit_use_double_quant")[:2] == (False, Origin.LIBRARY_DEFAULT)
    assert at(s, "quantization.bnb_4bit_compute_dtype") == ("float16", Origin.LITERAL, 9)
    assert at(s, "training.max_seq_length") == (2048, Origin.LITERAL, 10)
    assert at(s, "training.gradient_checkpointing") == (False, Origin.LITERAL, 13)
    assert at(s, "training.fp16") == (True, Origin.LITERAL, 14)
    # SFTConfig: bf16 defaults to `not fp16`
    assert at(s, "training.bf16")[:2] == (False, Origin.LIBRARY_DEFAULT)


def test_trl_lora_defaults():
    s = load("good/trl_peft_bf16.yaml")
    assert at(s, "lora.r") == (16, Origin.LITERAL, 7)
    assert at(s, "lora.lora_alpha")[:2] == (32, Origin.LIBRARY_DEFAULT)
    assert at(s, "lora.target_modules") == (("q_proj", "v_proj"), Origin.LITERAL, 9)
    assert checkpointing(s).value is True


def test_firefly_json():
    s = load("hf-json/qlora__llama3-8b-sft-qlora.json")
    assert s.kind == "json" and s.dialect == "firefly"
    assert at(s, "model.name_or_path") == ("NousResearch/Meta-Llama-3-8B-Instruct",
                                           Origin.LITERAL, 3)
    # train_mode defaults to qlora in Firefly's CustomizedArguments
    assert at(s, "quantization.bits")[:2] == (4, Origin.LIBRARY_DEFAULT)
    assert at(s, "quantization.bnb_4bit_compute_dtype") == ("float16", Origin.LITERAL, 25)
    assert at(s, "lora.r") == (64, Origin.LITERAL, 16)
    assert at(s, "lora.target_modules")[0] == "all-linear"
    assert at(s, "training.max_seq_length") == (1024, Origin.LITERAL, 10)
    assert at(s, "training.dataloader_num_workers") == (10, Origin.LITERAL, 27)
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 21)
    assert at(s, "training.fp16") == (True, Origin.LITERAL, 25)
    assert at(s, "training.optim") == ("paged_adamw_32bit", Origin.LITERAL, 23)
    assert s.framework == "unsloth"  # use_unsloth: true


def test_firefly_full_mode_has_no_adapter():
    s = text('{"model_name_or_path": "x", "train_file": "d.jsonl", "train_mode": "full",'
             ' "max_seq_length": 512, "per_device_train_batch_size": 1}', "full.json")
    assert s.dialect == "firefly" and s.lora is None and s.quantization is None


def test_plain_training_arguments_json():
    s = load("good/training_args.json")
    assert s.dialect == "hf-training-args" and s.framework == "transformers"
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 8)
    assert at(s, "training.bf16") == (True, Origin.LITERAL, 7)
    assert at(s, "training.learning_rate") == (2e-4, Origin.LITERAL, 6)  # JSON 2e-4 is a number
    assert at(s, "lora.r") == (8, Origin.LITERAL, 10)
    # an unseen script: no LoRA defaults assumed
    assert not s.get("lora.target_modules").known


def test_deepspeed_and_fsdp_keys_are_launch_evidence():
    s = text("model_name_or_path: x\nper_device_train_batch_size: 1\n"
             "deepspeed: ds.json\nfsdp: full_shard auto_wrap\n")
    assert [(e.kind, e.span.line) for e in s.launch] == [("deepspeed", 3), ("fsdp", 4)]
