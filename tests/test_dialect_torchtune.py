"""torchtune dialect: builder components, LoRA module mapping, recipe defaults, interpolation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lintlora.extract.dialects.torchtune import hf_module_names
from lintlora.extract.yaml_config import extract_config
from lintlora.facts import checkpointing
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"))
    return setup


def text(body: str) -> TrainingSetup:
    [setup] = extract_config("tt.yaml", body)
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_llama3_1_8b_lora_corpus():
    s = load("torchtune/llama3_1__8B_lora.yaml")
    assert at(s, "model.name_or_path") == ("torchtune.models.llama3_1.lora_llama3_1_8b",
                                           Origin.LITERAL, 30)
    assert s.quantization is None
    assert at(s, "lora.r") == (8, Origin.LITERAL, 34)
    assert at(s, "lora.lora_alpha") == (16, Origin.LITERAL, 35)
    # ['q_proj', 'v_proj', 'output_proj'] + MLP -> Hugging Face names
    assert at(s, "lora.target_modules") == (
        ("q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"), Origin.LITERAL, 31)
    assert at(s, "training.per_device_train_batch_size") == (2, Origin.LITERAL, 83)
    assert at(s, "training.gradient_accumulation_steps") == (8, Origin.LITERAL, 85)
    assert at(s, "training.gradient_checkpointing") == (False, Origin.LITERAL, 100)
    assert at(s, "training.bf16") == (True, Origin.LITERAL, 99)
    assert at(s, "model.torch_dtype") == ("bfloat16", Origin.LITERAL, 99)
    assert at(s, "training.optim") == ("adamw_torch_fused", Origin.LITERAL, 70)
    assert at(s, "training.learning_rate") == (3e-4, Origin.LITERAL, 73)  # '3e-4' read as text
    assert at(s, "training.packing") == (False, Origin.LITERAL, 56)
    # tokenizer.max_seq_len: null -> no truncation, written explicitly
    assert at(s, "training.max_seq_length") == (None, Origin.LITERAL, 26)
    assert s.training.extra["loss"].value == "torchtune.modules.loss.LinearCrossEntropyLoss"
    assert s.is_training


def test_qlora_builder_is_torchao_nf4_not_bitsandbytes():
    s = load("torchtune/llama3_1__8B_qlora_single_device.yaml")
    assert at(s, "quantization.method") == ("torchao", Origin.LITERAL, 22)
    assert at(s, "quantization.bits")[0] == 4
    assert at(s, "quantization.bnb_4bit_quant_type")[0] == "nf4"
    assert at(s, "quantization.bnb_4bit_use_double_quant")[0] is True
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 92)


def test_apply_lora_to_output_targets_lm_head():
    s = load("torchtune/mistral__7B_lora_single_device.yaml")
    targets = s.get("lora.target_modules").value
    assert targets[-1] == "lm_head" and "o_proj" in targets
    assert at(s, "lora.r") == (64, Origin.LITERAL, 43)


def test_absent_activation_checkpointing_is_the_recipe_default_off():
    s = load("bad/torchtune_no_ac.yaml")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin) == (False, Origin.LIBRARY_DEFAULT)
    assert gc.expr == "enable_activation_checkpointing" and "recipes" in gc.source
    fact = checkpointing(s)
    assert fact.value is False and fact.from_default


def test_interpolations_resolve_within_the_file():
    s = load("bad/torchtune_no_ac.yaml")
    seq = s.get("training.max_seq_length")
    # tokenizer.max_seq_len: ${max_seq_len} -> 4096, pointing at where the reference is written
    assert (seq.value, seq.origin, seq.span.line, seq.source) == (4096, Origin.VARIABLE, 16,
                                                                   "${max_seq_len}")
    assert at(s, "training.packing") == (True, Origin.LITERAL, 20)
    assert at(s, "training.optim")[0] == "paged_adamw_8bit"
    assert at(s, "lora.target_modules")[0] == ("q_proj", "k_proj", "v_proj", "o_proj",
                                               "gate_proj", "up_proj", "down_proj")


@pytest.mark.parametrize("ref,expected", [
    ("${batch_size}", 4),            # absolute
    ("${.inner}", 7),                # relative to the key's own mapping
    ("${..batch_size}", 4),          # one level up
    ("${oc.env:BATCH}", None),       # a resolver: unresolved
    ("${nowhere}", None),            # missing key: unresolved
    ("${loop_a}", None),             # a cycle: unresolved, no hang
])
def test_interpolation_forms(ref, expected):
    body = ("model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n"
            "  lora_attn_modules: [q_proj]\nbatch_size: 4\nloop_a: ${loop_b}\nloop_b: ${loop_a}\n"
            f"dataset:\n  _component_: torchtune.datasets.alpaca_dataset\n  inner: 7\n"
            f"  max_seq_len: {ref}\n")
    s = text(body)
    seq = s.get("training.max_seq_length")
    if expected is None:
        assert not seq.known and ref in seq.expr
    else:
        assert seq.value == expected and seq.origin is Origin.VARIABLE


def test_unknown_family_leaves_targets_unknown():
    s = text("model:\n  _component_: torchtune.models.clip.lora_clip_vision_encoder\n"
             "  lora_attn_modules: [q_proj, v_proj]\nbatch_size: 1\n")
    assert s.lora is not None and not s.get("lora.target_modules").known
    assert hf_module_names("phi3", ("q_proj", "v_proj"), True, False) == (
        "qkv_proj", "gate_up_proj", "down_proj")
    assert hf_module_names("llama2", ("output_proj",), False, True) == ("o_proj", "lm_head")
    assert hf_module_names("nope", ("q_proj",), False, False) is None


def test_full_finetune_builder_has_no_lora_and_generation_config_does_not_train():
    s = text("model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\n"
             "optimizer:\n  _component_: torch.optim.AdamW\nbatch_size: 2\ndtype: fp32\n")
    assert s.lora is None and s.is_training
    assert s.get("model.torch_dtype").value == "float32" and s.get("training.bf16").value is False
    gen = text("model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\n"
               "prompt: hello\nmax_new_tokens: 300\n")
    assert gen.is_training is False


def test_missing_dtype_is_float32_by_the_recipe_default():
    s = text("model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n"
             "  lora_attn_modules: [q_proj]\nbatch_size: 1\n")
    assert at(s, "model.torch_dtype")[:2] == ("float32", Origin.LIBRARY_DEFAULT)


def test_a_distributed_recipe_named_in_the_header_is_sharded_evidence():
    """torchtune configs open with the ``tune run`` command they are for; a ``*_distributed``
    recipe shards the model over its processes (FSDP), so the one-device verdict does not apply
    (LL008 stays silent); a single-device header, or one process, is no such evidence."""
    from lintlora.extract.yaml_config import extract_config

    body = ("model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_70b\n"
            "  lora_attn_modules: ['q_proj', 'v_proj']\n  lora_rank: 16\n"
            "batch_size: 2\ndtype: bf16\nenable_activation_checkpointing: True\n")
    header = "# Config for multi-device LoRA in lora_finetune_distributed.py\n" \
             "#   tune run --nproc_per_node 8 lora_finetune_distributed --config llama3_3/70B_lora\n"
    [setup] = extract_config("70B_lora.yaml", header + body, explicit=True)
    [evidence] = setup.launch
    assert evidence.kind == "fsdp" and evidence.span.line == 2 and "8 processes" in evidence.detail
    one = header.replace("--nproc_per_node 8", "--nproc_per_node 1")
    assert extract_config("one.yaml", one + body, explicit=True)[0].launch == ()
    single = "#   tune run lora_finetune_single_device --config llama3_1/8B_lora_single_device\n"
    assert extract_config("single.yaml", single + body, explicit=True)[0].launch == ()
    later = body + "# tune run --nproc_per_node 8 lora_finetune_distributed\n"  # not the header
    assert extract_config("later.yaml", later, explicit=True)[0].launch == ()


def test_ll008_is_silent_on_a_distributed_recipe_config(tmp_path):
    from rules_support import lint

    from lintlora.settings import Settings

    header = "#   tune run --nproc_per_node 8 lora_finetune_distributed --config llama3_3/70B_lora\n"
    body = ("model:\n  _component_: torchtune.models.llama3_3.lora_llama3_3_70b\n"
            "  lora_attn_modules: ['q_proj', 'k_proj', 'v_proj', 'output_proj']\n"
            "  lora_rank: 8\nbatch_size: 2\ndtype: bf16\nenable_activation_checkpointing: True\n"
            "tokenizer:\n  max_seq_len: 4096\n")
    sharded = tmp_path / "70B_lora.yaml"
    sharded.write_text(header + body, encoding="utf-8")
    alone = tmp_path / "70B_lora_single.yaml"
    alone.write_text(body, encoding="utf-8")
    settings = Settings(gpu="a100-80gb")
    assert [f for f in lint(sharded, settings).findings if f.code == "LL008"] == []
    assert [f for f in lint(alone, settings).findings if f.code == "LL008"]
