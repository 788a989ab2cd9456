"""What the setup says about the trainer and its loss changes the estimate
(lintlora.estimate.from_setup): torchtune's chunked losses, trl's preference trainers (chosen and
rejected in one forward, a reference model), unsloth's 4-bit loading, and where a sequence
length came from."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

ROOT = Path(__file__).resolve().parents[1]
TORCHTUNE = ROOT / "fixtures" / "configs" / "torchtune" / "llama3_1__8B_lora.yaml"


def _estimate(path, *flags):
    r = CliRunner().invoke(estimate_cmd, [str(path), "--format", "json", *flags])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["estimate"]


# ---- torchtune's loss component -------------------------------------------------------------------
@pytest.fixture
def torchtune_with_loss(tmp_path):
    text = TORCHTUNE.read_text()
    assert "torchtune.modules.loss.LinearCrossEntropyLoss" in text

    def write(component):
        p = tmp_path / f"{component.rsplit('.', 1)[-1]}.yaml"
        p.write_text(text.replace("torchtune.modules.loss.LinearCrossEntropyLoss", component))
        return p
    return write


def test_torchtune_chunked_losses_shrink_the_logits_term(torchtune_with_loss):
    plain = _estimate(torchtune_with_loss("torch.nn.CrossEntropyLoss"), "--no-gradient-checkpointing")
    linear = _estimate(torchtune_with_loss("torchtune.modules.loss.LinearCrossEntropyLoss"),
                       "--no-gradient-checkpointing")
    chunked = _estimate(torchtune_with_loss("torchtune.modules.loss.CEWithChunkedOutputLoss"),
                        "--no-gradient-checkpointing")
    assert plain["inputs"]["loss_impl"] == "bf16-own"
    assert linear["inputs"]["loss_impl"] == chunked["inputs"]["loss_impl"] == "chunked"
    tokens = plain["inputs"]["batch_size"] * plain["inputs"]["seq_len"]
    # 10 B vs 4 B per token × vocab (128,256) at the loss
    assert plain["breakdown"]["logits"] == 10 * 128_256 * tokens
    assert linear["breakdown"]["logits"] == 4 * 128_256 * tokens
    assert linear["device_bytes"] < plain["device_bytes"]
    assert any("LinearCrossEntropyLoss" in a for a in linear["assumptions"])


def test_torchtune_fit_list_offers_the_chunked_loss_only_when_not_used(torchtune_with_loss):
    def changes(path):
        r = CliRunner().invoke(estimate_cmd, [str(path), "--format", "json", "--gpu", "t4"])
        return [f["change"] for f in json.loads(r.output)["fit"]]
    assert any("LinearCrossEntropyLoss" in c for c in changes(torchtune_with_loss("torch.nn.CrossEntropyLoss")))
    assert not any("LinearCrossEntropyLoss" in c
                   for c in changes(torchtune_with_loss("torchtune.modules.loss.LinearCrossEntropyLoss")))


# ---- trl preference trainers ---------------------------------------------------------------------
HEAD = '''from transformers import AutoModelForCausalLM
from trl import {trainer}, {config}
from peft import LoraConfig
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
cfg = {config}(output_dir="o", per_device_train_batch_size=2, max_length=1024, bf16=True,
               gradient_checkpointing=True{extra})
trainer = {trainer}(model=model, args=cfg, train_dataset=ds{peft})
trainer.train()
'''
PEFT = ', peft_config=LoraConfig(r=16, target_modules=["q_proj", "v_proj"])'


def _script(tmp_path, trainer, config, peft=True, extra=""):
    p = tmp_path / f"{trainer}_{peft}_{bool(extra)}.py"
    p.write_text(HEAD.format(trainer=trainer, config=config, peft=PEFT if peft else "", extra=extra))
    return p


def test_dpo_runs_chosen_and_rejected_together(tmp_path):
    sft = _estimate(_script(tmp_path, "SFTTrainer", "SFTConfig"))
    dpo = _estimate(_script(tmp_path, "DPOTrainer", "DPOConfig"))
    orpo = _estimate(_script(tmp_path, "ORPOTrainer", "ORPOConfig"))
    assert sft["inputs"]["sequences_per_example"] == 1
    assert dpo["inputs"]["sequences_per_example"] == orpo["inputs"]["sequences_per_example"] == 2
    # chosen and rejected: twice SFT's saved activations; the loss buffers are trl's
    # selective_log_softmax on bf16 logits (6 B per token·vocab, against transformers' 12 B
    # cross-entropy) over the doubled batch, and the reference forward's bf16 logits (2 B per
    # token·vocab) plus one sequence's log_softmax row coexist with them
    V, tokens = 32_000, 2 * 2 * 1024
    assert dpo["breakdown"]["activations"] == 2 * sft["breakdown"]["activations"]
    assert sft["breakdown"]["logits"] == 12 * V * 2 * 1024
    assert dpo["breakdown"]["logits"] == 6 * V * tokens
    assert dpo["peak_phase"] == "reference forward"
    assert dpo["breakdown"]["transient"] == 2 * V * tokens + 2 * V * 1024
    assert dpo["device_bytes"] > sft["device_bytes"]
    # peft: the adapter-disabled policy is the reference, no second copy
    assert dpo["inputs"]["reference_model"] is False
    assert dpo["breakdown"]["weights"] == sft["breakdown"]["weights"]
    assert any("adapter disabled" in a for a in dpo["assumptions"])


def test_dpo_without_peft_keeps_a_reference_copy_unless_precomputed(tmp_path):
    full = _estimate(_script(tmp_path, "DPOTrainer", "DPOConfig", peft=False))
    assert full["inputs"]["reference_model"] is True
    assert full["breakdown"]["weights"] == 2 * 6_738_415_616 * 2
    pre = _estimate(_script(tmp_path, "DPOTrainer", "DPOConfig", peft=False, extra=", precompute_ref_log_probs=True"))
    assert pre["inputs"]["reference_model"] is False
    assert pre["breakdown"]["weights"] == 6_738_415_616 * 2
    orpo = _estimate(_script(tmp_path, "ORPOTrainer", "ORPOConfig", peft=False))
    assert orpo["inputs"]["reference_model"] is False  # ORPO has no reference model


def test_kto_keeps_one_sequence_per_example(tmp_path):
    kto = _estimate(_script(tmp_path, "KTOTrainer", "KTOConfig"))
    assert kto["inputs"]["sequences_per_example"] == 1


# ---- unsloth ------------------------------------------------------------------------------------
UNSLOTH = '''from unsloth import FastLanguageModel
from trl import SFTTrainer
from transformers import TrainingArguments
max_seq_length = 2048
model, tokenizer = FastLanguageModel.from_pretrained(
    model_name = "unsloth/llama-3-8b-bnb-4bit", max_seq_length = max_seq_length, load_in_4bit = True)
model = FastLanguageModel.get_peft_model(model, r = 16, target_modules = ["q_proj", "v_proj"],
                                         use_gradient_checkpointing = "unsloth")
trainer = SFTTrainer(model = model, tokenizer = tokenizer, train_dataset = ds,
    max_seq_length = max_seq_length,
    args = TrainingArguments(per_device_train_batch_size = 2, bf16 = True, output_dir = "o"))
trainer.train()
'''


def test_unsloth_load_in_4bit_is_nf4_with_double_quantization(tmp_path):
    p = tmp_path / "unsloth_ft.py"
    p.write_text(UNSLOTH)
    e = _estimate(p)
    assert e["inputs"]["quant"] == "nf4" and e["inputs"]["double_quant"] is True
    assert any("unsloth" in a and "double quantization" in a for a in e["assumptions"])
    # the length is SFTTrainer's max_seq_length (through a variable), not a tokenizer's
    assert e["inputs"]["seq_len"] == 2048
    assert not any("truncation length" in a for a in e["assumptions"])
