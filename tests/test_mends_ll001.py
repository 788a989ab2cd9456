"""LL001 mended (issue 13, section 3): ``prepare_model_for_kbit_training`` turns checkpointing
on only for a quantized base (peft ``src/peft/utils/other.py``, 0.20.1.dev0); a conditional
``training_args.gradient_checkpointing = False`` is reported with its condition, never as the
default; an unknown model gets no "largest saving" claim and stays at info. Real pipeline on
scripts written to ``tmp_path``."""

from __future__ import annotations

import textwrap

import pytest
from rules_support import lint

from lintlora import facts
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.settings import Settings

PREP = """\
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained({load})
model = prepare_model_for_kbit_training(model)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, bf16=True)
Trainer(model=model, args=args, train_dataset=train_dataset).train()
"""

LOOP = """\
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained({load})
model = prepare_model_for_kbit_training(model)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
for text in texts:
    batch = tokenizer(text, max_length=4096, truncation=True, padding="max_length", return_tensors="pt")
    model(**batch).loss.backward()
"""


def ll001(tmp_path, source, gpu="a100-80gb", name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    result = lint(path, Settings(gpu=gpu, select=("LL001",)))
    assert result.errors == []
    return [f for f in result.findings if f.code == "LL001"]


def setup_of(source):
    [s] = extract_python("train.py", textwrap.dedent(source))
    return s


UNQUANTIZED = '"meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16'
QUANTIZED = ('"meta-llama/Llama-2-7b-hf", quantization_config=BitsAndBytesConfig(load_in_4bit=True, '
             'bnb_4bit_compute_dtype=torch.bfloat16)')


def test_kbit_prep_on_an_unquantized_base_leaves_checkpointing_off(tmp_path):
    [f] = ll001(tmp_path, PREP.format(load=UNQUANTIZED))
    assert f.span.line == 6  # the call the user believed turned it on
    assert "only for a quantized base" in f.message and "loaded unquantized" in f.message
    assert "prepare_model_for_kbit_training (its default)" not in f.fix
    assert "gradient_checkpointing" in f.fix


@pytest.mark.parametrize("load", [
    QUANTIZED,
    '"meta-llama/Llama-2-7b-hf", load_in_4bit=True',
    '"TheBloke/Llama-2-7B-GPTQ", device_map="auto"',
    '"unsloth/llama-3-8b-bnb-4bit"',
    "model_path",  # not resolved: its quantization cannot be told
])
@pytest.mark.parametrize("template", [PREP, LOOP])
def test_kbit_prep_on_a_quantized_or_untold_base_still_counts_as_on(tmp_path, template, load):
    assert ll001(tmp_path, template.format(load=load)) == []


def test_kbit_prep_facts():
    assert facts.kbit_prep_checkpoints(setup_of(PREP.format(load=UNQUANTIZED))) is False
    assert facts.kbit_prep_checkpoints(setup_of(PREP.format(load=QUANTIZED))) is True
    assert facts.kbit_prep_checkpoints(setup_of(PREP.format(load='"TheBloke/Llama-2-7B-AWQ"'))) is None
    for template in (PREP, LOOP):
        s = setup_of(template.format(load=UNQUANTIZED))
        assert facts.checkpointing(s).value is False
        assert facts.kbit_prep_without_checkpointing(s).span.line == 6
        assert facts.checkpointing(setup_of(template.format(load=QUANTIZED))).value is True


def test_kbit_prep_on_an_unquantized_base_doubles_the_weights_in_the_estimate():
    from lintlora.estimate.architecture import catalog
    from lintlora.estimate.from_setup import inputs_from_setup

    arch = next(a for a in catalog() if "llama-2-7b" in a.name.lower())
    prepared = setup_of(PREP.format(load=UNQUANTIZED))
    plain = prepared.without_calls("prepare_model_for_kbit_training")
    assert inputs_from_setup(prepared, arch)[0].weight_dtype == "float32"
    assert inputs_from_setup(plain, arch)[0].weight_dtype == "bfloat16"


HF_PARSER = """\
from dataclasses import dataclass, field
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments

@dataclass
class ModelArguments:
    use_peft: bool = field(default={default})

model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
if model_args.use_peft:
    training_args.gradient_checkpointing = False
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
Trainer(model=model, args=training_args, train_dataset=train_dataset).train()
"""


@pytest.mark.parametrize("default", ["False", "True"])
def test_a_reset_under_an_if_is_reported_with_its_condition(tmp_path, default):
    [f] = ll001(tmp_path, HF_PARSER.format(default=default), gpu="rtx4090")
    assert f.span.line == 13
    assert "if model_args.use_peft:" in f.message and "line 13" in f.message
    assert "unless --gradient_checkpointing" not in f.message
    assert "--gradient_checkpointing" not in f.fix and "Remove the assignment" in f.fix
    assert f.severity is Severity.WARNING  # not the info of a launch default, never an error


def test_a_reset_under_an_undecided_if_overrides_a_literal_true(tmp_path):
    src = """\
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        from transformers.integrations import is_deepspeed_zero3_enabled

        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
        args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, gradient_checkpointing=True)
        if not is_deepspeed_zero3_enabled():
            if args.gradient_checkpointing:
                args.gradient_checkpointing = False
        model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
        model.print_trainable_parameters()
        Trainer(model=model, args=args, train_dataset=train_dataset).train()
        """
    [f] = ll001(tmp_path, src, gpu="rtx4090")
    assert f.span.line == 10
    # the test of the flag itself does not narrow when it ends up off
    assert "if not is_deepspeed_zero3_enabled():" in f.message and "args.gradient_checkpointing and" not in f.message


def test_a_reset_on_a_branch_the_file_rules_out_is_dead_code(tmp_path):
    src = HF_PARSER.format(default="False").replace("if model_args.use_peft:", "USE_PEFT = False\nif USE_PEFT:")
    src = src.replace("default=False", "default=False").replace(
        "TrainingArguments)).parse", "TrainingArguments)).parse")
    findings = ll001(tmp_path, src, gpu="rtx4090")
    # off by the launch default only, as before: the dead reset is not mentioned
    assert [f.severity for f in findings] == [Severity.INFO]
    assert "unless --gradient_checkpointing is passed" in findings[0].message
    assert "under `if" not in findings[0].message


def test_an_unknown_model_gets_no_saving_claim_and_stays_info(tmp_path):
    src = PREP.format(load=UNQUANTIZED).replace("meta-llama/Llama-2-7b-hf", "acme/seq2seq-400m")
    [f] = ll001(tmp_path, src, gpu="rtx4090")
    assert f.severity is Severity.INFO
    assert "largest saving" not in f.message and "no figure" in f.message


def test_kbit_prep_on_the_quantized_branch_is_judged_by_that_branch(tmp_path):
    """peft's own examples (alora_finetuning.py, lorafa_finetuning.py): the helper runs only on
    the branch that loads the model in 4 bits; the other branch's 16-bit load is not its base."""
    src = """\
        import torch
        from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments


        def train(base_model: str = "meta-llama/Llama-2-7b-hf", quantize: bool = False):
            if quantize:
                model = AutoModelForCausalLM.from_pretrained(
                    base_model, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
                model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
            else:
                model = AutoModelForCausalLM.from_pretrained(base_model)
            model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
            model.print_trainable_parameters()
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=8)
            Trainer(model=model, args=args, train_dataset=train_dataset).train()
        """
    assert [f for f in ll001(tmp_path, src, gpu="rtx4090") if "quantized base" in f.message] == []
    assert facts.kbit_prep_checkpoints(setup_of(src)) is True
