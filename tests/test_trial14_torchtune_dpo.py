"""torchtune's DPO recipe config priced as DPO (issue 14 trial).

The fixture is the real file cut to the keys that price it:
pytorch/torchtune recipes/configs/llama3_1/8B_lora_dpo_single_device.yaml
@ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 (checkpointer file list, logger and profiler dropped).
``tune run lora_dpo_single_device`` concatenates each example's chosen and rejected sequences
along the batch (recipes/lora_dpo_single_device.py ``concatenated_forward``) and takes the
reference forward with the adapter disabled (``disable_adapter(self._model)``). Read as SFT, the
config was priced on batch_size × max_seq_len tokens (half the activations), and the fit list
advised swapping its DPOLoss for a cross-entropy loss.
"""

import json

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

TORCHTUNE_LORA_DPO = """\
# Config for single device LoRA DPO alignment in lora_dpo_single_device.py
# using a Llama3.1 8B model
#   tune run lora_dpo_single_device --config llama3_1/8B_lora_dpo_single_device
output_dir: /tmp/torchtune/llama3_1_8B/lora_dpo_single_device
model:
  _component_: torchtune.models.llama3_1.lora_llama3_1_8b
  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
  apply_lora_to_mlp: True
  apply_lora_to_output: False
  lora_rank: 8
  lora_alpha: 16
  lora_dropout: 0.0
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Meta-Llama-3.1-8B-Instruct/original/tokenizer.model
  max_seq_len: 1024
checkpointer:
  _component_: torchtune.training.FullModelHFCheckpointer
  checkpoint_dir: /tmp/Meta-Llama-3.1-8B-Instruct/
  checkpoint_files: [model-00001-of-00004.safetensors]
  output_dir: ${output_dir}
  model_type: LLAMA3
dataset:
  _component_: torchtune.datasets.stack_exchange_paired_dataset
batch_size: 4
optimizer:
  _component_: torch.optim.AdamW
  fused: True
  weight_decay: 0.05
  lr: 5e-4
loss:
  _component_: torchtune.rlhf.loss.DPOLoss
epochs: 1
gradient_accumulation_steps: 8
compile: False
device: cuda
dtype: bf16
enable_activation_checkpointing: True
enable_activation_offloading: False
"""

SFT_LOSS = "torchtune.modules.loss.CEWithChunkedOutputLoss"


def _run(tmp_path, text, name):
    p = tmp_path / name
    p.write_text(text)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--gpu", "a100-80gb", "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_torchtune_dpo_loss_prices_chosen_and_rejected_with_the_adapter_disabled_reference(tmp_path):
    e = _run(tmp_path, TORCHTUNE_LORA_DPO, "8B_lora_dpo_single_device.yaml")["estimate"]
    i = e["inputs"]
    assert (i["trainer"], i["sequences_per_example"], i["batch_size"], i["seq_len"]) == ("dpo", 2, 4, 1024)
    assert i["reference_model"] is False and i["reference_forward"] is True


def test_torchtune_dpo_doubles_the_sft_activations(tmp_path):
    dpo = _run(tmp_path, TORCHTUNE_LORA_DPO, "dpo.yaml")["estimate"]
    sft = _run(tmp_path, TORCHTUNE_LORA_DPO.replace("torchtune.rlhf.loss.DPOLoss", SFT_LOSS), "sft.yaml")["estimate"]
    assert sft["inputs"]["trainer"] == "sft"
    # hand: the same batch of 4 × 1024 tokens, twice over (chosen + rejected) under checkpointing
    ratio = dpo["breakdown"]["activations"] / sft["breakdown"]["activations"]
    assert 1.9 < ratio < 2.1


def test_torchtune_dpo_is_not_advised_a_cross_entropy_loss(tmp_path):
    fit = _run(tmp_path, TORCHTUNE_LORA_DPO, "dpo.yaml")["fit"]
    assert not any("CrossEntropy" in f["change"] for f in fit)
    notes = " ".join(_run(tmp_path, TORCHTUNE_LORA_DPO, "dpo.yaml")["estimate"]["assumptions"])
    assert "not a loss lintlora knows" not in notes
