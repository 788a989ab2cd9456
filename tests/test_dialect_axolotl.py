"""axolotl dialect: values, lines and axolotl's own defaults."""

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


def text(body: str) -> TrainingSetup:
    [setup] = extract_config("axolotl.yml", body)
    return setup


def at(setup: TrainingSetup, dotted: str):
    """(value, origin, line of the value or None)."""
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_llama2_qlora_corpus_values_and_lines():
    s = load("axolotl/llama-2__qlora.yml")
    assert at(s, "model.name_or_path") == ("NousResearch/Llama-2-7b-hf", Origin.LITERAL, 1)
    assert at(s, "quantization.bits") == (4, Origin.LITERAL, 9)
    assert at(s, "quantization.method")[0] == "bitsandbytes"
    # axolotl's QLoRA BitsAndBytesConfig: nf4 with double quantization (loaders/model.py)
    assert at(s, "quantization.bnb_4bit_quant_type")[:2] == ("nf4", Origin.LIBRARY_DEFAULT)
    assert at(s, "quantization.bnb_4bit_use_double_quant")[:2] == (True, Origin.LIBRARY_DEFAULT)
    assert at(s, "lora.r") == (32, Origin.LITERAL, 25)
    assert at(s, "lora.lora_alpha") == (16, Origin.LITERAL, 26)
    assert at(s, "lora.target_modules") == ("all-linear", Origin.LITERAL, 28)
    assert at(s, "training.max_seq_length") == (4096, Origin.LITERAL, 21)
    assert at(s, "training.packing") == (True, Origin.LITERAL, 22)
    assert at(s, "training.per_device_train_batch_size") == (2, Origin.LITERAL, 37)
    assert at(s, "training.gradient_accumulation_steps") == (4, Origin.LITERAL, 36)
    assert at(s, "training.optim") == ("paged_adamw_32bit", Origin.LITERAL, 39)
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 46)
    assert at(s, "training.bf16") == ("auto", Origin.LITERAL, 43)
    assert at(s, "model.attn_implementation") == ("flash_attention_2", Origin.LITERAL, 49)
    # bf16: auto decides the dtype on the GPU: unknown from the file alone
    assert not s.get("model.torch_dtype").known
    assert "bf16: auto" in s.get("model.torch_dtype").expr
    assert s.get("training.gradient_checkpointing").key_span.line == 46


def test_load_in_8bit_lora_is_8bit_bitsandbytes():
    s = load("axolotl/llama-2__lora.yml")
    assert at(s, "quantization.bits") == (8, Origin.LITERAL, 8)
    assert at(s, "training.optim")[0] == "adamw_bnb_8bit"


def test_fp16_true_turns_auto_bf16_off_and_sets_float16():
    s = load("axolotl/openllama-3b__qlora.yml")
    assert at(s, "training.fp16") == (True, Origin.LITERAL, 38)
    assert at(s, "training.bf16") == (False, Origin.LITERAL, 37)
    assert at(s, "model.torch_dtype")[0] == "float16"
    assert at(s, "quantization.bnb_4bit_compute_dtype")[0] == "float16"


def test_defaults_when_keys_are_absent():
    s = load("axolotl/pythia__lora.yml")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin) == (False, Origin.LIBRARY_DEFAULT)
    assert "axolotl" in gc.source and "config.py" in gc.source
    assert gc.expr == "gradient_checkpointing"
    assert at(s, "training.optim")[:2] == ("adamw_torch_fused", Origin.LIBRARY_DEFAULT)
    assert at(s, "training.packing")[:2] == (False, Origin.LIBRARY_DEFAULT)
    # lora_target_linear is empty (None): only the listed module
    assert at(s, "lora.target_modules") == (("query_key_value",), Origin.LITERAL, 18)
    fact = checkpointing(s)
    assert fact.value is False and fact.from_default


def test_missing_micro_batch_and_sequence_len_take_axolotl_defaults():
    s = text("base_model: x/y\nadapter: lora\nlora_r: 8\nlora_alpha: 16\n"
             "lora_target_linear: true\n")
    assert at(s, "training.per_device_train_batch_size")[:2] == (1, Origin.LIBRARY_DEFAULT)
    assert at(s, "training.max_seq_length")[:2] == (512, Origin.LIBRARY_DEFAULT)
    assert at(s, "training.bf16")[:2] == ("auto", Origin.LIBRARY_DEFAULT)


def test_gradient_checkpointing_offload_counts_as_on():
    s = load("good/axolotl_gc_offload.yml")
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 12)
    assert s.training.extra["gradient_checkpointing_mode"].value == "offload"
    assert checkpointing(s).value is True


def test_fsdp_activation_checkpointing_counts_as_on():
    s = load("good/axolotl_fsdp_ac.yml")
    assert at(s, "training.gradient_checkpointing") == (True, Origin.LITERAL, 16)
    assert [e.kind for e in s.launch] == ["fsdp"]
    assert at(s, "training.fsdp")[0] == "full_shard auto_wrap"
    s2 = text("base_model: x/y\nadapter: lora\nfsdp_config:\n  fsdp_version: 2\n"
              "  activation_checkpointing: true\n")
    assert at(s2, "training.gradient_checkpointing") == (True, Origin.LITERAL, 5)


def test_jamba_fsdp_and_explicit_target_list():
    s = load("axolotl/jamba__qlora_fsdp_large.yaml")
    assert [e.kind for e in s.launch] == ["fsdp"]
    assert s.launch[0].span.line == 54
    targets = s.get("lora.target_modules")
    assert targets.value[:2] == ("down_proj", "gate_proj") and len(targets.value) == 10
    assert at(s, "training.gradient_checkpointing_kwargs") == ({"use_reentrant": True},
                                                              Origin.LITERAL, 45)


def test_target_linear_plus_embedding_names_keeps_them():
    s = text("base_model: x/y\nadapter: lora\nlora_target_linear: true\n"
             "lora_target_modules: [lm_head, q_proj]\n")
    assert s.get("lora.target_modules").value == ("lm_head", "all-linear")


def test_regex_target_string_stays_a_pattern():
    s = text("base_model: x/y\nadapter: lora\n"
             "lora_target_modules: 'language_model.model.layers.[\\d]+.(mlp|self_attn).(up|down|gate|q|k|v|o)_proj'\n")
    assert isinstance(s.get("lora.target_modules").value, str)


def test_no_adapter_means_full_finetuning_and_modules_to_save_listed():
    s = text("base_model: x/y\nmicro_batch_size: 1\nsequence_len: 512\n")
    assert s.lora is None and s.quantization is None
    s2 = load("bad/axolotl_embed_targets.yml")
    assert at(s2, "lora.modules_to_save") == (("embed_tokens", "lm_head"), Origin.LITERAL, 14)


def test_qlora_without_load_in_4bit_still_means_4bit_and_bnb_kwargs_override():
    s = text("base_model: x/y\nadapter: qlora\n")
    assert s.get("quantization.bits").value == 4
    s2 = text("base_model: x/y\nadapter: qlora\nload_in_4bit: true\nbf16: true\n"
              "bnb_config_kwargs:\n  bnb_4bit_quant_type: fp4\n  bnb_4bit_use_double_quant: false\n")
    assert at(s2, "quantization.bnb_4bit_quant_type") == ("fp4", Origin.LITERAL, 6)
    assert at(s2, "quantization.bnb_4bit_use_double_quant") == (False, Origin.LITERAL, 7)
    assert at(s2, "quantization.bnb_4bit_compute_dtype")[0] == "bfloat16"


def test_torchao_backend_is_not_bitsandbytes():
    s = text("base_model: x/y\nadapter: lora\npeft:\n  backend: torchao\n  weight_dtype: nf4\n")
    assert s.get("quantization.method").value == "torchao"
    assert s.get("quantization.bits").value == 4


def test_attention_flags_and_deepspeed_evidence():
    s = text("base_model: x/y\nadapter: lora\nsdp_attention: true\n"
             "deepspeed: deepspeed_configs/zero2.json\n")
    assert s.get("model.attn_implementation").value == "sdpa"
    assert [(e.kind, e.span.line) for e in s.launch] == [("deepspeed", 4)]


def test_bf16_false_without_fp16_trains_in_float32():
    s = text("base_model: x/y\nadapter: lora\nbf16: false\n")
    assert s.get("model.torch_dtype").value == "float32"
    assert s.get("training.fp16").value is False
