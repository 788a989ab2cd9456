"""unsloth's ``from_pretrained`` quantization flags with unsloth's own defaults (issue 14 trial).

The fixture is derived from the first cells of unslothai/notebooks nb/Qwen3_(4B)-GRPO.ipynb
@ bdda2efc7ad5ae129ea63cd2065d23c391406283 (``load_in_4bit = False # False for LoRA 16bit``).
``load_in_4bit=False`` alone left ``load_in_8bit`` unknown, so the bits were unknown and the
estimate assumed 4-bit: a 16-bit LoRA run priced with NF4 weights (3.7 GiB instead of 8.7).
unsloth's defaults (unsloth/models/loader.py @ 015bdef0d94a): ``load_in_4bit=True``,
``load_in_8bit=False``; ``full_finetuning=True`` disables 4-bit and 8-bit.
"""

import json

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

QWEN3_GRPO_LOAD = """\
from unsloth import FastLanguageModel
from trl import SFTConfig, SFTTrainer

max_seq_length = 2048
lora_rank = 32

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name = "unsloth/Qwen3-4B-Base",
    max_seq_length = max_seq_length,
    load_in_4bit = False, # False for LoRA 16bit
    fast_inference = True, # Enable vllm fast inference
    max_lora_rank = lora_rank,
    gpu_memory_utilization = 0.9, # Reduce if out of memory
)

model = FastLanguageModel.get_peft_model(
    model,
    r = lora_rank,
    target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    lora_alpha = lora_rank*2,
    use_gradient_checkpointing = "unsloth",
    random_state = 3407,
)

trainer = SFTTrainer(
    model = model,
    tokenizer = tokenizer,
    train_dataset = dataset,
    args = SFTConfig(per_device_train_batch_size = 1, gradient_accumulation_steps = 1,
                     optim = "adamw_8bit", output_dir = "outputs"),
)
"""

# Qwen3-4B: "Number of Parameters: 4.0B" (model card, huggingface.co/Qwen/Qwen3-4B-Base)
QWEN3_4B_PARAMS = 4.0e9


def _estimate(tmp_path, text):
    p = tmp_path / "qwen3_grpo.py"
    p.write_text(text)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output[r.output.index("{"):])["estimate"]


def test_load_in_4bit_false_is_16bit_lora(tmp_path):
    e = _estimate(tmp_path, QWEN3_GRPO_LOAD)
    assert e["inputs"]["method"] == "lora" and e["inputs"]["quant"] in (None, "none")
    # every weight in bf16: 2 bytes per parameter
    assert abs(e["breakdown"]["weights"] / 2 - QWEN3_4B_PARAMS) / QWEN3_4B_PARAMS < 0.03


def test_no_flag_is_unsloths_default_4bit(tmp_path):
    e = _estimate(tmp_path, QWEN3_GRPO_LOAD.replace("    load_in_4bit = False, # False for LoRA 16bit\n", ""))
    assert e["inputs"]["method"] == "qlora"
    # NF4: about half a byte per quantized weight, far under the 2 bytes of bf16
    assert e["breakdown"]["weights"] < 0.4 * 2 * QWEN3_4B_PARAMS


def test_full_finetuning_turns_the_default_4bit_off(tmp_path):
    text = QWEN3_GRPO_LOAD.replace("    load_in_4bit = False, # False for LoRA 16bit\n",
                                   "    full_finetuning = True,\n")
    e = _estimate(tmp_path, text)
    assert e["inputs"]["quant"] in (None, "none")
    assert abs(e["breakdown"]["weights"] / 2 - QWEN3_4B_PARAMS) / QWEN3_4B_PARAMS < 0.03


def test_fast_inference_vllm_share_is_stated(tmp_path):
    e = _estimate(tmp_path, QWEN3_GRPO_LOAD)
    assert any(a.startswith("fast_inference=True") and "0.9" in a for a in e["assumptions"])
    # from_pretrained's default share (unsloth models/loader.py: gpu_memory_utilization = 0.5)
    e = _estimate(tmp_path, QWEN3_GRPO_LOAD.replace("    gpu_memory_utilization = 0.9, # Reduce if out of memory\n", ""))
    assert any(a.startswith("fast_inference=True") and "0.5" in a for a in e["assumptions"])
