"""LLaMA-Factory dialects (v0 flat, v1 nested): values, lines and LLaMA-Factory's defaults."""

from __future__ import annotations

from pathlib import Path

from lintlora.extract.yaml_config import extract_config
from lintlora.facts import checkpointing, is_quantized
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"))
    return setup


def text(body: str) -> TrainingSetup:
    [setup] = extract_config("lf.yaml", body)
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_qwen3_lora_sft_corpus():
    s = load("llama-factory/train_lora__qwen3_lora_sft.yaml")
    assert at(s, "model.name_or_path") == ("Qwen/Qwen3-4B-Instruct-2507", Origin.LITERAL, 2)
    assert at(s, "model.trust_remote_code") == (True, Origin.LITERAL, 3)
    assert at(s, "lora.r") == (8, Origin.LITERAL, 9)
    assert at(s, "lora.target_modules") == ("all-linear", Origin.LITERAL, 10)
    # lora_alpha defaults to lora_rank * 2 (finetuning_args.py)
    assert at(s, "lora.lora_alpha")[:2] == (16, Origin.LIBRARY_DEFAULT)
    assert at(s, "training.max_seq_length") == (2048, Origin.LITERAL, 15)
    assert at(s, "training.per_device_train_batch_size") == (1, Origin.LITERAL, 30)
    assert at(s, "training.bf16") == (True, Origin.LITERAL, 36)
    assert at(s, "model.torch_dtype")[0] == "bfloat16"
    # dataloader_num_workers is the DataLoader setting; preprocessing_num_workers is not
    assert at(s, "training.dataloader_num_workers") == (4, Origin.LITERAL, 18)
    assert s.training.extra["preprocessing_num_workers"].value == 16
    assert s.is_training is True
    assert s.quantization is None


def test_checkpointing_is_on_by_default_in_llama_factory():
    s = load("llama-factory/lora_single_gpu__llama3_lora_sft.yaml")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin) == (True, Origin.LIBRARY_DEFAULT)
    assert "disable_gradient_checkpointing" in gc.source
    assert checkpointing(s).value is True
    assert at(s, "training.gradient_checkpointing_kwargs")[0] == {"use_reentrant": True}
    # defaults the file leaves out: rank 8, alpha 16
    assert at(s, "lora.r")[:2] == (8, Origin.LIBRARY_DEFAULT)
    assert at(s, "training.fp16") == (True, Origin.LITERAL, 32)
    assert at(s, "training.dataloader_num_workers")[:2] == (0, Origin.LIBRARY_DEFAULT)
    assert s.training.extra["preprocessing_num_workers"].value == 16


def test_disable_gradient_checkpointing_points_at_its_line():
    s = load("bad/llama_factory_gc_disabled.yaml")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin, gc.span.line, gc.key_span.line) == (False, Origin.LITERAL, 9, 9)
    assert gc.expr == "disable_gradient_checkpointing"
    assert checkpointing(s).value is False
    assert at(s, "lora.target_modules") == (("q_proj", "v_proj"), Origin.LITERAL, 8)
    assert at(s, "lora.lora_alpha")[:2] == (32, Origin.LIBRARY_DEFAULT)


def test_quantization_bit_with_bitsandbytes_defaults():
    s = text("model_name_or_path: meta-llama/Llama-2-7b-hf\nfinetuning_type: lora\n"
             "quantization_bit: 4\nbf16: true\ndo_train: true\n")
    assert at(s, "quantization.bits") == (4, Origin.LITERAL, 3)
    assert at(s, "quantization.method")[:2] == ("bitsandbytes", Origin.LIBRARY_DEFAULT)
    assert at(s, "quantization.bnb_4bit_quant_type")[0] == "nf4"
    assert at(s, "quantization.bnb_4bit_use_double_quant")[0] is True
    assert at(s, "quantization.bnb_4bit_compute_dtype")[0] == "bfloat16"
    assert is_quantized(s) is True


def test_hqq_and_eetq_are_not_bitsandbytes():
    s = load("good/llama_factory_hqq.yaml")
    assert at(s, "quantization.method") == ("hqq", Origin.LITERAL, 4)
    assert s.quantization.bnb_4bit_quant_type.known is False
    s2 = text("model_name_or_path: x\nstage: sft\nquantization_bit: 8\nquantization_method: eetq\n")
    assert at(s2, "quantization.method")[0] == "eetq"
    s3 = text("model_name_or_path: x\nstage: sft\nquantization_bit: 4\n"
              "quantization_method: bitsandbytes\n")
    assert at(s3, "quantization.method")[0] == "bitsandbytes"


def test_additional_target_is_modules_to_save_and_full_finetuning_has_no_lora():
    s = text("model_name_or_path: x\nfinetuning_type: lora\nadditional_target: embed_tokens,lm_head\n")
    assert at(s, "lora.modules_to_save") == (("embed_tokens", "lm_head"), Origin.LITERAL, 3)
    assert text("model_name_or_path: x\nfinetuning_type: full\n").lora is None


def test_without_do_train_llama_factory_does_not_train():
    s = text("model_name_or_path: x\nfinetuning_type: lora\ntemplate: llama3\n")
    assert s.is_training is False


def test_packing_flash_attn_and_liger():
    s = text("model_name_or_path: x\nstage: pt\nflash_attn: fa2\nenable_liger_kernel: true\n")
    assert at(s, "training.packing")[:2] == (True, Origin.LIBRARY_DEFAULT)  # on for stage pt
    assert at(s, "model.attn_implementation") == ("flash_attention_2", Origin.LITERAL, 3)
    assert at(s, "training.use_liger_kernel") == (True, Origin.LITERAL, 4)
    s2 = text("model_name_or_path: x\nstage: sft\nneat_packing: true\nflash_attn: disabled\n")
    assert at(s2, "training.packing")[0] is True
    assert at(s2, "model.attn_implementation")[0] == "eager"


def test_deepspeed_is_launch_evidence():
    s = text("model_name_or_path: x\nstage: sft\ndeepspeed: examples/deepspeed/ds_z3_config.json\n")
    assert [(e.kind, e.span.line) for e in s.launch] == [("deepspeed", 3)]


def test_v1_nested_schema():
    s = load("llama-factory/train_qlora__quantization.yaml")
    assert s.dialect == "llama-factory-v1"
    assert at(s, "model.name_or_path") == ("Qwen/Qwen3-0.6B", Origin.LITERAL, 1)
    assert at(s, "lora.r") == (16, Origin.LITERAL, 7)
    assert at(s, "lora.lora_alpha") == (32, Origin.LITERAL, 8)
    assert at(s, "lora.target_modules") == ("all-linear", Origin.LITERAL, 10)
    assert at(s, "quantization.method") == ("bitsandbytes", Origin.LITERAL, 23)
    assert at(s, "quantization.bits") == (4, Origin.LITERAL, 24)
    assert at(s, "training.per_device_train_batch_size") == (1, Origin.LITERAL, 31)
    assert at(s, "training.max_seq_length") == (2048, Origin.LITERAL, 32)
    assert [(e.kind, e.span.line) for e in s.launch] == [("fsdp", 18)]
    # v1's current default (training_args.py @ ff6d4d12: enable_activation_checkpointing = True,
    # since 28a6ea1cd, 2026-04-21), named as a library default
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.origin) == (True, Origin.LIBRARY_DEFAULT)
    assert checkpointing(s).value is True


# use_unsloth_gc picks the checkpoint function, it does not turn checkpointing on: LLaMA-Factory
# src/llamafactory/model/model_utils/checkpointing.py @ 908cd68e457daf38e7aae14cbc99e5ac01524496
# (prepare_model_for_training passes it to _gradient_checkpointing_enable only under
# `if not model_args.disable_gradient_checkpointing`).
_LF_HEAD = ("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: lora\n"
            "do_train: true\n")


def test_use_unsloth_gc_is_checkpointing_with_offloaded_inputs():
    s = text(_LF_HEAD + "use_unsloth_gc: true\n")
    assert checkpointing(s).value is True
    mode = s.training.extra["gradient_checkpointing_mode"]
    assert (mode.value, mode.span.line, mode.expr) == ("unsloth", 5, "use_unsloth_gc")
    assert s.training.extra["use_unsloth_gc"].value is True


def test_use_unsloth_gc_does_not_undo_disable_gradient_checkpointing():
    s = text(_LF_HEAD + "disable_gradient_checkpointing: true\nuse_unsloth_gc: true\n")
    gc = s.get("training.gradient_checkpointing")
    assert (gc.value, gc.expr, gc.span.line) == (False, "disable_gradient_checkpointing", 5)
    assert checkpointing(s).value is False
    assert "gradient_checkpointing_mode" not in s.training.extra
    assert s.training.extra["use_unsloth_gc"].value is True  # kept, as written


def test_use_unsloth_gc_false_keeps_plain_checkpointing():
    s = text(_LF_HEAD + "use_unsloth_gc: false\n")
    assert checkpointing(s).value is True
    assert "gradient_checkpointing_mode" not in s.training.extra


def test_use_unsloth_gc_moves_checkpointed_inputs_off_the_gpu_in_the_estimate():
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.from_setup import estimate_setup

    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    body = _LF_HEAD + "bf16: true\ncutoff_len: 4096\nper_device_train_batch_size: 4\n"
    plain = estimate_setup(text(body), arch, None)
    offloaded = estimate_setup(text(body + "use_unsloth_gc: true\n"), arch, None)
    assert plain.breakdown["activations"] > 0 and offloaded.breakdown["activations"] == 0
    assert offloaded.device_bytes < plain.device_bytes
