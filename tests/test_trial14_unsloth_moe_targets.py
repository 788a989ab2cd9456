"""unsloth's gpt-oss notebooks name gate_proj/up_proj/down_proj: unsloth adapts the experts
(issue 14 trial).

The fixture is derived from unslothai/notebooks nb/gpt-oss-(20B)-Fine-tuning.ipynb
@ bdda2efc7ad5ae129ea63cd2065d23c391406283 (its from_pretrained, get_peft_model and SFTTrainer
cells). unsloth passes peft ``target_parameters`` for a MoE model's fused expert weights when
``target_modules`` names the MLP projections (unsloth/models/_utils.py
``get_moe_target_parameters`` @ 015bdef0d94a). The estimate warned that the three names "match
no module of gpt-oss-20b" and counted only the attention adapters.
"""

import json
from pathlib import Path

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd

GPT_OSS_NOTEBOOK = (Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "trial14"
                    / "unsloth_gpt_oss_notebook.py").read_text()

# gpt-oss-20b config.json: 24 layers, hidden 2880, 64 query heads x 64 = 4096, 8 KV heads x 64 = 512,
# 32 experts of intermediate 2880 (gate_up_proj: 2880 -> 5760, down_proj: 2880 -> 2880).
R, H, Q, KV, E, I, LAYERS = 8, 2880, 4096, 512, 32, 2880, 24
ATTENTION = R * ((H + Q) + 2 * (H + KV) + (Q + H))
EXPERTS = R * E * ((H + 2 * I) + (I + H))  # peft ParamWrapper: r·E·(d_in + d_out) per fused weight
HAND = (ATTENTION + EXPERTS) * LAYERS  # 92,454,912


def test_unsloth_mlp_targets_adapt_gpt_oss_experts(tmp_path):
    p = tmp_path / "gpt_oss_20b.py"
    p.write_text(GPT_OSS_NOTEBOOK)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--format", "json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.output[r.output.index("{"):])["estimate"]
    assert e["trainable_params"] == HAND
    assert not any("match no module" in w for w in e["warnings"])
