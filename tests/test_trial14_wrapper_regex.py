"""A regex ``lora_target_modules`` written for a vision-language wrapper's layout (issue 14 trial).

The fixture is the real file cut to the keys that price it:
axolotl-ai-cloud/axolotl examples/mistral-small/mistral-small-3.1-24B-lora.yml
@ 067b021c8b87e5e380b9173c704cf7340e30f5. Its pattern
``model.language_model.layers.[\\d]+.(mlp|cross_attn|self_attn).(up|down|gate|q|k|v|o)_proj``
names the text decoder's modules inside ``Mistral3ForConditionalGeneration`` (transformers
>= 4.52: ``model.language_model.layers.N``). The catalog prices Mistral Small 3.1 with the text
decoder record Mistral-Small-24B (``model.layers.N``), so the pattern matched nothing: a false
"peft would raise" warning, an LL012 error, and 0 adapter parameters in the estimate.
"""

import json

import pytest
from click.testing import CliRunner

from lintlora.cli import main
from lintlora.estimate.command import estimate_cmd

MISTRAL_SMALL_31_LORA = """\
base_model: mistralai/Mistral-Small-3.1-24B-Instruct-2503
processor_type: AutoProcessor
load_in_8bit: true
datasets:
  - path: Nanobit/text-vision-2k-test
    type: chat_template
adapter: lora
sequence_len: 2048
lora_r: 32
lora_alpha: 16
lora_dropout: 0.05
lora_target_modules: 'model.language_model.layers.[\\d]+.(mlp|cross_attn|self_attn).(up|down|gate|q|k|v|o)_proj'
gradient_accumulation_steps: 1
micro_batch_size: 2
optimizer: adamw_bnb_8bit
learning_rate: 0.0002
bf16: true
gradient_checkpointing: true
"""

# Mistral-Small-3.1-24B text_config (config.json): hidden 5120, 40 layers, 32 heads x 128 = 4096 (q),
# 8 KV heads x 128 = 1024 (k, v), intermediate 32768. LoRA r=32 adds r·(d_in + d_out) per module.
R, H, Q, KV, I, LAYERS = 32, 5120, 4096, 1024, 32768, 40
PER_LAYER = R * ((H + Q) + 2 * (H + KV) + (Q + H) + 2 * (H + I) + (I + H))
HAND_LORA_PARAMS = PER_LAYER * LAYERS  # 184,811,520


def _json(output):
    """The JSON document of ``--format json`` (a warning line may precede it on stderr)."""
    return json.loads(output[output.index("{"):])["estimate"]


def _write(tmp_path):
    p = tmp_path / "mistral-small-3.1-24B-lora.yml"
    p.write_text(MISTRAL_SMALL_31_LORA)
    return p


def test_wrapper_layout_regex_adapts_every_decoder_linear(tmp_path):
    r = CliRunner().invoke(estimate_cmd, [str(_write(tmp_path)), "--format", "json"])
    assert r.exit_code == 0, r.output
    e = _json(r.output)
    assert e["trainable_params"] == HAND_LORA_PARAMS
    assert not any("matches no module" in w for w in e["warnings"])


def test_wrapper_layout_regex_is_no_ll012(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(_write(tmp_path))])
    out = capsys.readouterr().out
    assert "LL012" not in out, out


def test_a_regex_that_matches_no_layout_still_warns(tmp_path):
    p = tmp_path / "typo.yml"
    p.write_text(MISTRAL_SMALL_31_LORA.replace("(up|down|gate|q|k|v|o)_proj", "(up|down|gate|q|k|v|o)_prj"))
    r = CliRunner().invoke(estimate_cmd, [str(p), "--format", "json"])
    e = _json(r.output)
    assert e["trainable_params"] == 0
    assert any("matches no module" in w for w in e["warnings"])
