"""LLaMA-Factory v1 ``quant_config: {name: bnb}`` takes v1's own BnbParams defaults (issue 14 trial).

The fixture is the real file: hiyouga/LLaMA-Factory examples/v1/train_qlora/quantization.yaml
@ ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30 (comments shortened). v1 builds
``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quantization_type,
bnb_4bit_use_double_quant=double_quantization, ...)`` from ``BnbParams`` (quantization_type "nf4",
double_quantization True, compute_dtype "float16"; src/llamafactory/v1/plugins/model_plugins/
quantization.py). Left unknown, the estimate fell back to bitsandbytes' own defaults: fp4 without
double quantization.
"""

import json

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

V1_QLORA = """\
model: Qwen/Qwen3-0.6B
model_class: llm

peft_config:
  name: lora
  r: 16
  lora_alpha: 32
  lora_dropout: 0.05
  target_modules: all

kernel_config:
  name: auto

dist_config:
  name: fsdp2
  dcp_path: null

quant_config:
  name: bnb # choice: auto/bnb
  quantization_bit: 4 # choice: 8/4(bnb)

train_dataset: data/v1_sft_demo.yaml
output_dir: outputs/test_quantization
micro_batch_size: 1
cutoff_len: 2048
learning_rate: 1.0e-4
max_steps: 10
"""


def _estimate(tmp_path, text, name):
    p = tmp_path / name
    p.write_text(text)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output[r.output.index("{"):])["estimate"]


def test_v1_bnb_defaults_are_nf4_with_double_quantization(tmp_path):
    e = _estimate(tmp_path, V1_QLORA, "quantization.yaml")
    assert (e["inputs"]["quant"], e["inputs"]["double_quant"]) == ("nf4", True)
    spelled = _estimate(tmp_path, V1_QLORA.replace(
        "  quantization_bit: 4 # choice: 8/4(bnb)\n",
        "  quantization_bit: 4\n  quantization_type: nf4\n  double_quantization: true\n"), "spelled.yaml")
    assert e["breakdown"]["weights"] == spelled["breakdown"]["weights"]
    fp4 = _estimate(tmp_path, V1_QLORA.replace(
        "  quantization_bit: 4 # choice: 8/4(bnb)\n",
        "  quantization_bit: 4\n  quantization_type: fp4\n  double_quantization: false\n"), "fp4.yaml")
    assert fp4["inputs"]["quant"] == "fp4" and fp4["breakdown"]["weights"] > e["breakdown"]["weights"]


def test_v1_bnb_without_bits_is_4bit(tmp_path):
    e = _estimate(tmp_path, V1_QLORA.replace("  quantization_bit: 4 # choice: 8/4(bnb)\n", ""), "nobits.yaml")
    assert e["inputs"]["method"] == "qlora" and e["inputs"]["quant"] == "nf4"
