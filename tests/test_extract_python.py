"""Python extraction on the style fixtures: values, origins and lines."""

from pathlib import Path

import pytest

from lintlora.extract import ExtractError
from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "python"


def extract(name: str):
    path = FIX / name
    return extract_python(str(path), path.read_text())


def one(name: str):
    setups = extract(name)
    assert len(setups) == 1, [s.anchor for s in setups]
    return setups[0]


def line_of(name: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing ``needle`` (keeps tests readable)."""
    hits = [i for i, text in enumerate((FIX / name).read_text().splitlines(), 1) if needle in text]
    return hits[nth - 1]


def test_hf_trainer_qlora():
    s = one("hf_trainer_qlora.py")
    f = "hf_trainer_qlora.py"
    assert s.framework == "transformers" and s.is_training
    assert s.anchor.line == line_of(f, "trainer = Trainer(")
    assert s.model.name_or_path.value == "meta-llama/Llama-2-7b-hf"
    assert s.model.name_or_path.origin is Origin.VARIABLE
    assert s.model.name_or_path.span.line == line_of(f, 'MODEL_ID = "')
    assert s.model.device_map.value == {"": 0}
    assert s.model.use_cache.value is False
    q = s.quantization
    assert (q.method.value, q.bits.value) == ("bitsandbytes", 4)
    assert q.bnb_4bit_compute_dtype.value == "bfloat16"
    assert q.bnb_4bit_compute_dtype.span.line == line_of(f, "bnb_4bit_compute_dtype=")
    assert q.bnb_4bit_quant_type.value == "nf4"
    assert q.bnb_4bit_use_double_quant.value is True
    assert s.lora.r.value == 16 and s.lora.lora_alpha.value == 32
    assert s.lora.target_modules.value == ("q_proj", "k_proj", "v_proj", "o_proj")
    t = s.training
    assert t.per_device_train_batch_size.value == 4
    assert t.per_device_train_batch_size.key_span.line == line_of(f, "per_device_train_batch_size=4")
    assert t.fp16.value is True and t.fp16.origin is Origin.LITERAL
    assert t.gradient_checkpointing.value is False
    assert t.gradient_checkpointing.origin is Origin.LIBRARY_DEFAULT
    assert "training_args.py" in t.gradient_checkpointing.source
    assert t.optim.value == "paged_adamw_8bit"
    assert t.span.line == line_of(f, "training_args = TrainingArguments(")
    # no max_seq_length among TrainingArguments: the tokenizer's truncation length stands in
    assert t.max_seq_length.value == 512
    assert t.max_seq_length.source == "the data pipeline's truncation length"
    assert t.max_seq_length.span.line == line_of(f, "max_length=512")
    kinds = [c.kind for c in s.calls]
    assert kinds == ["pad_token_is_eos", "prepare_model_for_kbit_training", "get_peft_model",
                     "print_trainable_parameters", "trainer_inputs"]
    prep = s.calls[1]
    assert prep.args["use_gradient_checkpointing"].value is True
    assert prep.args["use_gradient_checkpointing"].origin is Origin.LIBRARY_DEFAULT
    assert [c.order for c in s.calls] == [0, 1, 2, 3, 4]


def test_trl_sft():
    s = one("trl_sft.py")
    assert s.framework == "trl"
    assert s.model.torch_dtype.value == "bfloat16"
    assert s.model.attn_implementation.value == "flash_attention_2"
    assert s.lora.target_modules.value == "all-linear"
    assert s.lora.r.value == 64
    t = s.training
    assert t.max_seq_length.value == 2048
    assert t.packing.value is True
    # SFTConfig's own defaults, not TrainingArguments'
    assert t.gradient_checkpointing.value is True
    assert t.gradient_checkpointing.origin is Origin.LIBRARY_DEFAULT
    assert "sft_config.py" in t.gradient_checkpointing.source
    assert t.bf16.value is True  # not fp16
    assert [c.kind for c in s.calls] == ["trainer_peft_config", "trainer_inputs", "print_trainable_parameters"]
    assert s.calls[0].qualified_name == "trl.SFTTrainer"
    assert s.calls[2].qualified_name == "trainer.model.print_trainable_parameters"


def test_torch_loop():
    s = one("torch_loop.py")
    f = "torch_loop.py"
    assert s.framework == "torch" and s.is_training
    assert s.training is None
    (dl,) = s.dataloaders
    assert dl.batch_size.value == 8 and dl.batch_size.key_span is None  # positional
    assert dl.num_workers.value == 4 and dl.pin_memory.value is True
    assert dl.persistent_workers.origin is Origin.LIBRARY_DEFAULT
    moves = s.calls_of("model_move")
    assert len(moves) == 1 and moves[0].args["device"].value == "cuda"
    assert moves[0].receiver == "model"
    (autocast,) = s.calls_of("autocast")
    assert autocast.args["dtype"].value == "float16"
    assert autocast.in_loop and autocast.in_step_callback
    flushes = s.calls_of("empty_cache")
    assert [(c.span.line, c.in_loop, c.in_step_callback) for c in flushes] == [
        (line_of(f, "torch.cuda.empty_cache()"), True, True),
        (line_of(f, "torch.cuda.empty_cache()", 2), False, False),
    ]


def test_argparse_defaults():
    s = one("argparse_driven.py")
    f = "argparse_driven.py"
    name = s.model.name_or_path
    assert name.value == "meta-llama/Llama-2-13b-hf"
    assert name.origin is Origin.ARGPARSE_DEFAULT and name.source == "--model_name"
    assert name.expr == "args.model_name"
    assert name.span.line == line_of(f, '"--model_name"')
    assert s.lora.r.value == 64 and s.lora.r.origin is Origin.ARGPARSE_DEFAULT
    assert s.lora.target_modules.value == ("q_proj", "k_proj", "v_proj", "o_proj")
    t = s.training
    assert t.per_device_train_batch_size.value == 2  # type=int applied to the "2" default
    assert t.gradient_checkpointing.value is False
    assert t.gradient_checkpointing.origin is Origin.ARGPARSE_DEFAULT
    assert t.bf16.value is False and t.fp16.value is False
    # the ternary on args.bf16 picks float16 and says it rests on a default
    cd = s.quantization.bnb_4bit_compute_dtype
    assert cd.value == "float16" and cd.origin is Origin.ARGPARSE_DEFAULT
    assert s.quantization.bnb_4bit_use_double_quant.value is True  # store_false -> True
    out = t.extra["output_dir"]
    assert not out.known and "command line" in out.source
    prep = s.calls_of("prepare_model_for_kbit_training")[0]
    assert prep.args["use_gradient_checkpointing"].value is False


def test_aliased_imports():
    s = one("aliased_imports.py")
    assert s.quantization.bits.value == 8
    assert s.model.torch_dtype.value == "float16"
    assert s.model.device_map.value == "auto"
    assert s.lora.modules_to_save.value == ("lm_head",)
    assert s.training.dataloader_num_workers.value == 16
    kinds = [c.kind for c in s.calls]
    assert kinds == ["gradient_checkpointing_enable", "get_peft_model", "trainer_inputs", "empty_cache"]
    gc = s.calls[0]
    assert gc.args["gradient_checkpointing_kwargs"].value == {"use_reentrant": False}
    assert gc.receiver == "base"
    assert not s.calls[2].in_loop


def test_syntax_error_has_location():
    with pytest.raises(ExtractError) as info:
        extract_python("bad.py", "x = 1\nfp116 = 2\n1abc = 3\n")
    err = info.value
    assert err.line == 3 and err.code == "LL000"
    assert "syntax error" in err.message


def test_files_without_training_code_give_nothing():
    assert extract_python("util.py", "import os\n\ndef f(x):\n    return x + 1\n") == []
    assert extract_python("empty.py", "") == []
