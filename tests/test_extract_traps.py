"""Traps seen in real scripts (PATTERNS.md §8): what must stay silent, unresolved or distinct."""

from pathlib import Path

from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

TRAPS = Path(__file__).resolve().parent.parent / "fixtures" / "python" / "traps"


def extract(name: str):
    path = TRAPS / name
    return extract_python(str(path), path.read_text())


def test_comments_and_strings_are_not_code():
    (s,) = extract("comments_and_strings.py")
    assert s.quantization is None and s.training is None and s.lora is None
    assert s.calls == ()
    assert s.model.name_or_path.value == "gpt2"
    assert s.model.device_map.value is None and not s.model.device_map.known
    assert s.is_training is False


def test_local_class_named_training_arguments_is_not_hf_but_subclass_is():
    (s,) = extract("local_training_arguments.py")
    t = s.training
    # the HF subclass: its overridden defaults, as dataclass defaults
    assert t.gradient_checkpointing.value is True
    assert t.gradient_checkpointing.origin is Origin.DATACLASS_DEFAULT
    assert t.optim.value == "paged_adamw_32bit"
    assert t.per_device_train_batch_size.value == 2
    assert t.fp16.value is True and t.fp16.origin is Origin.LITERAL
    # inherited from transformers
    assert t.gradient_accumulation_steps.origin is Origin.LIBRARY_DEFAULT
    # the look-alike class contributes nothing (its fp16=True is at line 17, never read)
    assert all(st.span is None or st.span.line != 17 for _n, st in t.settings())
    assert not t.packing.known and t.packing.source is None


def test_local_function_shadowing_prepare_is_not_peft():
    (s,) = extract("local_prepare_function.py")
    assert not s.has_call("prepare_model_for_kbit_training")
    assert s.quantization.bits.value == 8


def test_names_never_defined_stay_unknown():
    (s,) = extract("undefined_names.py")
    assert not s.lora.r.known
    assert "never defined" in s.lora.r.source and s.lora.r.expr == "lora_r"
    assert s.lora.lora_alpha.value == 16
    assert not s.training.max_seq_length.known
    assert s.training.max_seq_length.expr == "max_seq_length"
    assert not s.training.gradient_checkpointing.known
    # the model itself is unknown, and so is whether it is quantized (not "unquantized")
    assert not s.model.name_or_path.known and "never defined" in s.model.name_or_path.source
    assert not s.quantization.bits.known


def test_positional_bits_and_bytes_arguments():
    (s,) = extract("positional_bnb.py")
    # BitsAndBytesConfig(True): the first parameter is load_in_8bit
    assert s.quantization.bits.value == 8
    assert s.quantization.extra["load_in_8bit"].key_span is None


def test_checkpointing_disabled_then_reenabled_keeps_order():
    (s,) = extract("checkpointing_reenabled.py")
    kinds = [(c.order, c.kind) for c in s.calls]
    assert kinds == [(0, "gradient_checkpointing_enable"), (1, "gradient_checkpointing_disable"),
                     (2, "prepare_model_for_kbit_training"), (3, "get_peft_model"),
                     (4, "print_trainable_parameters")]
    from lintlora import facts

    assert facts.checkpointing(s).value is True
    # the disable under `if USE_EVAL_MODE:` (False as written) is dead code: not a call site
    assert len(s.calls_of("gradient_checkpointing_disable")) == 1


def test_sft_trainer_loads_model_by_name_with_model_init_kwargs():
    (s,) = extract("sft_model_by_name.py")
    assert s.model.name_or_path.value == "Qwen/Qwen2.5-0.5B"
    assert s.model.torch_dtype.value == "bfloat16"
    assert s.model.device_map.value == "auto"
    assert s.quantization.bits.value == 4
    assert s.quantization.bnb_4bit_quant_type.value == "nf4"
    assert s.training.max_seq_length.value == 1024
    assert "model_init_kwargs" not in s.training.extra


def test_non_bitsandbytes_quantization_is_named():
    (s,) = extract("non_bnb_quantization.py")
    assert s.quantization.method.value == "gptq"
    assert s.quantization.bits.value == 4
    assert not s.quantization.bnb_4bit_compute_dtype.known
