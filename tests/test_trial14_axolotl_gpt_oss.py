"""axolotl's gpt-oss LoRA example, as a new user runs it (issue 14 trial).

The fixture is the real file cut to the keys that price it:
axolotl-ai-cloud/axolotl examples/gpt-oss/gpt-oss-20b-sft-lora-singlegpu.yaml
@ 067b021c8b87e5e380b9173c704cf7340e30f5 (dataset, logging and wandb keys dropped).

- ``model_quantization_config: Mxfp4Config`` with ``model_quantization_config_kwargs:
  {dequantize: true}`` is ``Mxfp4Config(dequantize=True)`` (axolotl
  src/axolotl/loaders/model.py ``_set_quantization_config``): the experts load as bf16. Read as
  the checkpoint's packed MXFP4 it was priced at 12.8 GiB of weights instead of ~39 GiB.
- ``plugins: [axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin]`` turns Cut
  Cross-Entropy on (its ``cut_cross_entropy`` argument defaults to True,
  src/axolotl/integrations/cut_cross_entropy/args.py): no logits are materialised. Unread, the
  estimate carried 9.2 GiB of logits buffers.
"""

import json

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

GIB = 2 ** 30

AXOLOTL_GPT_OSS_LORA = """\
base_model: openai/gpt-oss-20b
use_kernels: true
model_quantization_config: Mxfp4Config
model_quantization_config_kwargs:
  dequantize: true

plugins:
  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin

datasets:
  - path: HuggingFaceH4/Multilingual-Thinking
    type: chat_template
sequence_len: 4096
sample_packing: true

adapter: lora
lora_r: 8
lora_alpha: 16
lora_dropout: 0.0
lora_target_linear: true

gradient_accumulation_steps: 8
micro_batch_size: 1
optimizer: adamw_torch_8bit
learning_rate: 2e-4
bf16: true
tf32: true
gradient_checkpointing: true
"""


def _estimate(tmp_path, text, name="gpt-oss-20b-sft-lora-singlegpu.yaml"):
    p = tmp_path / name
    p.write_text(text)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--gpu", "a100-80gb", "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["estimate"]


def test_axolotl_mxfp4_dequantize_kwargs_price_bf16_weights(tmp_path):
    e = _estimate(tmp_path, AXOLOTL_GPT_OSS_LORA)
    assert e["inputs"]["stored_quant"]["dequantize"] is True
    # gpt-oss-20b: 21B parameters in total (OpenAI model card, huggingface.co/openai/gpt-oss-20b),
    # all bf16 once dequantized: 2 bytes each
    assert abs(e["breakdown"]["weights"] / 2 - 21e9) / 21e9 < 0.02
    assert e["inputs"]["method"] == "lora"  # a 16-bit base, not QLoRA


def test_axolotl_mxfp4_without_dequantize_stays_packed(tmp_path):
    text = AXOLOTL_GPT_OSS_LORA.replace("model_quantization_config_kwargs:\n  dequantize: true\n", "")
    e = _estimate(tmp_path, text)
    # packed MXFP4 experts: well under half the bf16 size (4.25 bits vs 16 for the experts)
    assert e["breakdown"]["weights"] < 0.45 * 2 * 21e9


def test_axolotl_cut_cross_entropy_plugin_materialises_no_logits(tmp_path):
    with_plugin = _estimate(tmp_path, AXOLOTL_GPT_OSS_LORA)
    assert with_plugin["inputs"]["loss_impl"] == "fused"
    assert with_plugin["breakdown"]["logits"] == 0
    without = _estimate(tmp_path, AXOLOTL_GPT_OSS_LORA.replace(
        "plugins:\n  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin\n", ""), "no_cce.yaml")
    # hand: 4096 tokens x vocab 201,088 (gpt-oss config.json) x at least 2 B of bf16 logits
    assert without["breakdown"]["logits"] >= 4096 * 201_088 * 2


def test_axolotl_gpt_oss_example_lands_near_its_readme_figure(tmp_path):
    # axolotl examples/gpt-oss/README.md @ 067b021c8b87: "LoRA SFT linear layers (1x48GB @ ~44GiB)",
    # "Memory usage taken from `device_mem_reserved(gib)` from logs"
    e = _estimate(tmp_path, AXOLOTL_GPT_OSS_LORA)
    assert abs(e["reserved_bytes"] / GIB - 44) / 44 < 0.15
