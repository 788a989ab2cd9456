"""What the estimator assumes when the model is loaded where lintlora cannot follow (a helper
in the author's own module): it does not invent a 4-bit base, and it does not call an unknown
``torch_dtype`` "not given"."""

from __future__ import annotations

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.from_setup import inputs_from_setup
from lintlora.extract.python import extract_python

HEAD = ("from transformers import TrainingArguments, BitsAndBytesConfig\n"
        "from trl import SFTTrainer\n"
        "from helpers import create_and_prepare_model\n")
TAIL = ("args = TrainingArguments(output_dir='o', per_device_train_batch_size=2, bf16=True)\n"
        "SFTTrainer(model=model, args=args).train()\n")


def _inputs(body: str, quantization_section: bool = True):
    (setup,) = extract_python("train.py", HEAD + body + TAIL)
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    # the cases below depend on the section existing (only its values unknown) or not
    assert (setup.quantization is not None) is quantization_section
    return inputs_from_setup(setup, arch)


def test_a_model_from_a_helper_is_not_assumed_quantized():
    inputs, notes = _inputs("model = create_and_prepare_model()\n")
    assert inputs.quant is None and inputs.method != "qlora"
    assert "quant" in inputs.assumed
    [note] = [n for n in notes if n.startswith("quantization unknown")]
    assert "create_and_prepare_model" in note and "assumed none" in note
    assert not any("not given" in n for n in notes if "torch_dtype" in n)
    assert any(n.startswith("torch_dtype unknown (result of") for n in notes)


def test_a_bitsandbytes_config_with_unresolved_bits_is_still_4bit():
    # the script builds a BitsAndBytesConfig: quantization is certain, only its bits are not
    body = ("from transformers import AutoModelForCausalLM\n"
            "q = BitsAndBytesConfig(**load_kwargs())\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', quantization_config=q)\n")
    inputs, notes = _inputs(body)
    assert inputs.quant in ("nf4", "fp4") and "quant" not in inputs.assumed
    assert "quantization bits unknown: assumed 4-bit" in notes


def test_a_load_without_dtype_is_not_given():
    body = ("from transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n")
    _inputs_, notes = _inputs(body, quantization_section=False)
    assert any(n.startswith("torch_dtype not given") for n in notes)


def test_an_assumed_16bit_base_makes_a_fit_verdict_a_guess():
    from lintlora.estimate.shape import shape_of

    inputs, _notes = _inputs("model = create_and_prepare_model()\n")
    shape = shape_of(inputs)
    assert shape.guessed and "the assumed 16-bit base" in shape.basis
    assert "assumes a 16-bit base: the quantization is unknown" in shape.note
