"""litgpt dialect: precision, quantize, LoRA switches, batch arithmetic, devices."""

from __future__ import annotations

from pathlib import Path

import pytest

from lintlora.extract.dialects.litgpt import hf_module_names
from lintlora.extract.yaml_config import extract_config
from lintlora.facts import checkpointing
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"))
    return setup


def text(body: str) -> TrainingSetup:
    [setup] = extract_config("lit.yaml", body)
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_llama31_qlora_corpus():
    s = load("litgpt/llama-3.1-8b__qlora.yaml")
    assert at(s, "model.name_or_path") == ("checkpoints/meta-llama/Meta-Llama-3.1-8B",
                                           Origin.LITERAL, 2)
    assert at(s, "model.torch_dtype") == ("bfloat16", Origin.LITERAL, 8)
    assert at(s, "training.bf16") == (True, Origin.LITERAL, 8)
    assert at(s, "quantization.method") == ("bitsandbytes", Origin.LITERAL, 11)
    assert at(s, "quantization.bits")[0] == 4
    assert at(s, "quantization.bnb_4bit_quant_type")[0] == "nf4"
    assert at(s, "quantization.bnb_4bit_use_double_quant")[0] is False  # bnb.nf4, not nf4-dq
    assert at(s, "lora.r") == (32, Origin.LITERAL, 20)
    assert at(s, "lora.target_modules")[0] == ("q_proj", "v_proj")
    assert at(s, "training.per_device_train_batch_size") == (2, Origin.LITERAL, 70)
    # global 8 // 1 device // micro 2
    assert at(s, "training.gradient_accumulation_steps") == (4, Origin.LITERAL, 67)
    assert at(s, "training.max_seq_length") == (512, Origin.LITERAL, 85)
    assert at(s, "training.optim") == ("adamw_torch", Origin.LITERAL, 121)
    [loader] = s.dataloaders
    assert (loader.num_workers.value, loader.num_workers.span.line) == (4, 55)


def test_empty_quantize_is_no_quantization_whatever_the_out_dir_says():
    s = load("litgpt/gemma-7b__lora.yaml")  # out_dir says "qlora", quantize is empty
    assert s.quantization is None
    targets = s.get("lora.target_modules").value
    assert targets == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                       "down_proj", "lm_head")


def test_single_device_has_no_checkpointing_and_no_key_for_it():
    s = load("litgpt/mistral-7b__lora.yaml")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin) == (False, Origin.LIBRARY_DEFAULT)
    assert "no config key" in gc.source
    assert checkpointing(s).value is False


def test_multi_device_uses_fsdp_activation_checkpointing():
    s = load("good/litgpt_multi_gpu.yaml")
    assert at(s, "training.gradient_checkpointing")[0] is True
    assert checkpointing(s).value is True
    assert {e.kind for e in s.launch} == {"multi-gpu", "fsdp"}
    assert at(s, "training.gradient_accumulation_steps")[0] == 4  # 64 // 4 // 4


@pytest.mark.parametrize("precision,bf16,fp16,dtype", [
    ("bf16-true", True, False, "bfloat16"),
    ("bf16-mixed", True, False, "float32"),
    ("16-true", False, True, "float16"),
    ("16-mixed", False, True, "float32"),
    ("32-true", False, False, "float32"),
])
def test_precision_strings(precision, bf16, fp16, dtype):
    s = text(f"checkpoint_dir: checkpoints/mistralai/Mistral-7B-v0.1\nprecision: {precision}\n"
             "lora_r: 8\n")
    assert (s.get("training.bf16").value, s.get("training.fp16").value,
            s.get("model.torch_dtype").value) == (bf16, fp16, dtype)


def test_defaults_when_precision_and_switches_are_absent():
    s = text("checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf\nlora_r: 4\n")
    assert at(s, "training.bf16")[:2] == ("auto", Origin.LIBRARY_DEFAULT)
    # lora_query and lora_value default to True
    assert s.get("lora.target_modules").value == ("q_proj", "v_proj")
    assert at(s, "training.per_device_train_batch_size")[:2] == (4, Origin.LIBRARY_DEFAULT)
    assert at(s, "training.max_seq_length")[:2] == (None, Origin.LIBRARY_DEFAULT)


@pytest.mark.parametrize("quantize,bits,dq", [("bnb.nf4-dq", 4, True), ("bnb.fp4", 4, False),
                                              ("bnb.int8-training", 8, None)])
def test_quantize_modes(quantize, bits, dq):
    s = text(f"checkpoint_dir: checkpoints/x/y\nquantize: {quantize}\nprecision: bf16-true\n")
    assert s.get("quantization.bits").value == bits
    if dq is not None:
        assert s.get("quantization.bnb_4bit_use_double_quant").value is dq
    assert s.get("training.optim").value == "paged_adamw_32bit"


def test_unknown_architecture_leaves_targets_unknown():
    s = text("checkpoint_dir: checkpoints/EleutherAI/pythia-1b\nlora_r: 8\nlora_mlp: true\n")
    assert not s.get("lora.target_modules").known
    assert hf_module_names("checkpoints/mistralai/Mixtral-8x7B-v0.1", {
        "lora_query": True, "lora_key": False, "lora_value": True, "lora_projection": False,
        "lora_mlp": False, "lora_head": False}) is None
    assert hf_module_names("checkpoints/microsoft/Phi-3-mini-4k-instruct", {
        "lora_query": True, "lora_key": True, "lora_value": True, "lora_projection": True,
        "lora_mlp": True, "lora_head": False}) == ("qkv_proj", "o_proj", "gate_up_proj",
                                                     "down_proj")


def test_phi_2_and_phi_1_5_switches_name_transformers_phi_modules():
    every = {k: True for k in ("lora_query", "lora_key", "lora_value", "lora_projection",
                               "lora_mlp", "lora_head")}
    for ckpt in ("checkpoints/microsoft/phi-2", "checkpoints/microsoft/phi-1_5"):
        assert hf_module_names(ckpt, every) == ("q_proj", "k_proj", "v_proj", "dense", "fc1",
                                                "fc2", "lm_head")
    s = text("checkpoint_dir: checkpoints/microsoft/phi-2\nlora_r: 8\nlora_head: true\n")
    assert s.get("lora.target_modules").value == ("q_proj", "v_proj", "lm_head")


def test_devices_auto_makes_checkpointing_unknown():
    s = text("checkpoint_dir: checkpoints/x/y\ndevices: auto\nlora_r: 8\n")
    assert checkpointing(s).value is None
