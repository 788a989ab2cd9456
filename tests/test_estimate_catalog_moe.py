"""The mixture-of-experts (and MLA) models of lintlora/data/models_moe.json: each gets an estimate
from a script that names it, its parameter count is pinned against the model's published total,
its active-parameter count against the published "A..B" figure, and the LoRA trainable counts on
gpt-oss are computed by hand here (lintlora.estimate.moe_shapes, lintlora.estimate.params).

Published figures (the independent side of every pin; each also in the record's
``params_published`` with its source):

* gpt-oss-20b / 120b: OpenAI's gpt-oss model card, Table 1: 20.91B / 116.83B total, 3.61B / 5.13B
  active. OpenAI's active count is attention + active MLP + unembedding, i.e. without the input
  embedding table (20.91 - 19.12 x 28/32 - 0.58 = 3.61).
* Qwen3-235B-A22B: model card "235B in total and 22B activated"; Qwen3-Coder-30B-A3B-Instruct
  "30.5B in total and 3.3B activated"; Qwen2-57B-A14B: 57B / 14B (Qwen2 report, Table 1);
  Qwen1.5-MoE-A2.7B: "14.3B parameters in total and 2.7B activated". Qwen's figures include the
  embeddings.
* Llama-4-Scout-17B-16E: model card "17B activated, 109B total" (the total includes the vision
  tower).
* DeepSeek-V2-Lite: model card "15.7B total parameters, 2.4B activated" (activated without the
  input embedding: with it the figure would be 2.66B).
* granite-3.0-1b-a400m: the Hub's safetensors count 1.33B (the card's "1.3B" rounded);
  granite-3.0-3b-a800m: card 3.3B.

The "A..B" labels are given to two significant digits: active counts are pinned within 3%,
totals within 1%.
"""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lintlora.estimate.architecture import from_hf_config, resolve_architecture
from lintlora.estimate.command import estimate_cmd
from lintlora.estimate.params import count_trainable

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "estimate" / "moe"

# hub id, published total, published active, whether the published active leaves out the
# input embedding
PUBLISHED = [
    ("openai/gpt-oss-20b", 20.91e9, 3.61e9, True),
    ("openai/gpt-oss-120b", 116.83e9, 5.13e9, True),
    ("Qwen/Qwen3-30B-A3B", 30.5e9, 3.3e9, False),
    ("Qwen/Qwen3-235B-A22B", 235e9, 22e9, False),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 30.5e9, 3.3e9, False),
    ("Qwen/Qwen2-57B-A14B", 57e9, 14e9, False),
    ("Qwen/Qwen1.5-MoE-A2.7B", 14.3e9, 2.7e9, False),
    ("meta-llama/Llama-4-Scout-17B-16E", 109e9, 17e9, False),
    ("deepseek-ai/DeepSeek-V2-Lite", 15.7e9, 2.4e9, True),
    ("ibm-granite/granite-3.0-1b-a400m-base", 1.33e9, None, True),
    ("ibm-granite/granite-3.0-3b-a800m-base", 3.3e9, None, True),
]

SCRIPT = '''\
from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer

model = AutoModelForCausalLM.from_pretrained("{model}", torch_dtype="bfloat16")
model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
args = SFTConfig(output_dir="out", per_device_train_batch_size=1, max_length=1024, bf16=True,
                 gradient_checkpointing=True)
SFTTrainer(model=model, args=args, train_dataset=None).train()
'''


def _estimate(path, *flags):
    r = CliRunner().invoke(estimate_cmd, [str(path), "--format", "json", *flags])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["estimate"]


@pytest.mark.parametrize("hub_id,total,active,no_embedding", PUBLISHED,
                         ids=[p[0].split("/")[1] for p in PUBLISHED])
def test_a_script_naming_the_model_gets_an_estimate_and_the_published_count(tmp_path, hub_id, total,
                                                                             active, no_embedding):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(model=hub_id))
    est = _estimate(script)
    arch = resolve_architecture(hub_id)
    assert est["model"] == arch.name and not est["rough"]
    if arch.stored_quant is not None:  # gpt-oss: experts stored in MXFP4 (4.25 bits per weight:
        # 4-bit values plus one E8M0 scale byte per 32-element block, OCP MX spec v1.0), the rest bf16
        floor = arch.expert_params * 4.25 / 8 + 2 * (arch.total_params - arch.expert_params)
    else:
        floor = 2 * arch.total_params  # at least the bf16 weights
    assert est["device_bytes"] > floor
    assert abs(arch.total_params / total - 1) < 0.01, (hub_id, arch.total_params)
    if active is not None:
        counted = arch.active_params - (arch.embedding_params if no_embedding else 0)
        assert abs(counted / active - 1) < 0.03, (hub_id, counted)
    assert arch.is_moe and arch.active_params < arch.total_params


def test_instruct_and_modelscope_ids_resolve_to_the_base_records():
    for alias, base in (("openai/gpt-oss-20b", "openai/gpt-oss-20b"),
                        ("unsloth/gpt-oss-20b-BF16", "openai/gpt-oss-20b"),
                        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B"),
                        ("qwen/Qwen1.5-MoE-A2.7B-Chat", "Qwen/Qwen1.5-MoE-A2.7B"),
                        ("deepseek-ai/DeepSeek-V2-Lite-Chat", "deepseek-ai/DeepSeek-V2-Lite"),
                        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Scout-17B-16E"),
                        ("ibm-granite/granite-3.1-3b-a800m-instruct", "ibm-granite/granite-3.0-3b-a800m-base")):
        assert resolve_architecture(alias).hf_id == base


def test_gpt_oss_20b_total_by_hand():
    """20.91B from the config: per block attention 2·2880·4096 + 2·2880·512 weights + biases
    4096 + 512 + 512 + 2880, 64 sinks, router 32·2880 + 32, experts 32·(2880·5760 + 5760 +
    2880·2880 + 2880), two norms of 2880; untied embeddings 2·201088·2880; final norm."""
    attn = 2 * 2880 * 4096 + 2 * 2880 * 512 + (4096 + 512 + 512 + 2880) + 64
    router = 32 * 2880 + 32
    experts = 32 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880)
    block = attn + router + experts + 2 * 2880
    total = 24 * block + 2 * 201088 * 2880 + 2880
    assert resolve_architecture("openai/gpt-oss-20b").total_params == total == 20_914_757_184
    # the experts are what MXFP4 stores: the architecture names them (group "expert")
    arch = resolve_architecture("openai/gpt-oss-20b")
    assert arch.expert_params == 24 * 32 * (2880 * 5760 + 2880 * 2880)
    experts_shapes = [s for s in arch.block_linears() if s.group == "expert"]
    assert {s.path for s in experts_shapes} == {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}
    assert all(s.parameter and s.count == 32 for s in experts_shapes)


def test_gpt_oss_record_carries_its_mxfp4_quantization_config():
    data = json.loads((ROOT / "lintlora" / "data" / "models_moe.json").read_text())
    cfg = json.loads((FIX / "gpt-oss-20b" / "config.json").read_text())
    rec = next(r for r in data if r["hf_id"] == "openai/gpt-oss-20b")
    assert rec["quantization_config"] == cfg["quantization_config"]
    assert rec["quantization_config"]["quant_method"] == "mxfp4"


def test_gpt_oss_all_linear_adapts_the_attention_only():
    """peft "all-linear" takes every nn.Linear but the output layer; in a gpt-oss block those are
    q/k/v/o_proj (the router and experts are raw parameters). r=16, by hand:
    q 16·(2880+4096), k and v 16·(2880+512), o 16·(4096+2880), 24 blocks."""
    for hub_id, layers in (("openai/gpt-oss-20b", 24), ("openai/gpt-oss-120b", 36)):
        arch = resolve_architecture(hub_id)
        c = count_trainable(arch, 16, "all-linear")
        per_block = 16 * (2880 + 4096) + 2 * 16 * (2880 + 512) + 16 * (4096 + 2880)
        assert c.trainable == layers * per_block
        assert set(c.matched) == {"q_proj", "k_proj", "v_proj", "o_proj"}
    # a list naming the experts as modules matches nothing (peft raises "not found")
    c = count_trainable(resolve_architecture("openai/gpt-oss-20b"), 16, ["gate_up_proj", "down_proj"])
    assert c.trainable == 0 and set(c.unmatched) == {"gate_up_proj", "down_proj"}


def test_gpt_oss_target_parameters_as_in_the_openai_cookbook():
    """The OpenAI cookbook (cookbook.openai.com/articles/gpt-oss/fine-tune-transfomers) trains
    gpt-oss-20b with LoraConfig(r=8, target_modules="all-linear", target_parameters=[the
    gate_up_proj/down_proj of blocks 7, 15, 23]) and prints "trainable params: 15,040,512 || all
    params: 20,929,797,696". By hand: all-linear 24·8·(6976 + 3392 + 3392 + 6976) = 3,981,312;
    ParamWrapper r·E·(in + out): 3 blocks × 8·32·((2880 + 5760) + (2880 + 2880)) = 11,059,200."""
    arch = resolve_architecture("openai/gpt-oss-20b")
    tp = [f"{i}.mlp.experts.{p}" for i in (7, 15, 23) for p in ("gate_up_proj", "down_proj")]
    c = count_trainable(arch, 8, "all-linear", target_parameters=tp)
    assert 24 * 8 * (6976 + 3392 + 3392 + 6976) == 3_981_312
    assert 3 * 8 * 32 * ((2880 + 5760) + (2880 + 2880)) == 11_059_200
    assert c.trainable == 15_040_512
    assert c.total_params == 20_929_797_696
    # every block's experts, and an entry that names nothing
    c = count_trainable(arch, 8, [], target_parameters=["mlp.experts.down_proj", "mlp.experts.nope"])
    assert c.trainable == 24 * 8 * 32 * (2880 + 2880)
    assert c.unmatched == ("mlp.experts.nope",)


COOKBOOK = '''\
import torch
from transformers import AutoModelForCausalLM, Mxfp4Config
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer

quantization_config = Mxfp4Config(dequantize=True)
model = AutoModelForCausalLM.from_pretrained("openai/gpt-oss-20b", torch_dtype=torch.bfloat16,
    quantization_config=quantization_config, attn_implementation="eager", use_cache=False)
peft_config = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
    target_parameters=["7.mlp.experts.gate_up_proj", "7.mlp.experts.down_proj",
                       "15.mlp.experts.gate_up_proj", "15.mlp.experts.down_proj",
                       "23.mlp.experts.gate_up_proj", "23.mlp.experts.down_proj"])
peft_model = get_peft_model(model, peft_config)
args = SFTConfig(per_device_train_batch_size=4, gradient_accumulation_steps=4, max_length=2048,
                 gradient_checkpointing=True, bf16=True, output_dir="out")
SFTTrainer(model=peft_model, args=args, train_dataset=None).train()
'''


def test_the_cookbook_script_is_priced_with_its_target_parameters_at_16_bits(tmp_path):
    script = tmp_path / "cookbook.py"
    script.write_text(COOKBOOK)
    est = _estimate(script)
    assert est["inputs"]["target_parameters"] == [
        "7.mlp.experts.gate_up_proj", "7.mlp.experts.down_proj", "15.mlp.experts.gate_up_proj",
        "15.mlp.experts.down_proj", "23.mlp.experts.gate_up_proj", "23.mlp.experts.down_proj"]
    assert est["trainable_params"] == 15_040_512
    # dequantize=True: the experts are bf16 after loading, the weights the whole model × 2 B
    assert est["inputs"]["method"] == "lora"
    assert est["breakdown"]["weights"] == 2 * 20_914_757_184
    assert any("dequantize=True" in a for a in est["assumptions"])


def test_deepseek_v2_lite_mla_and_dense_first_block():
    """MLA shapes from the config (q_lora_rank null): q_proj 2048 → 16·192, kv_a_proj_with_mqa
    2048 → 512 + 64, kv_b_proj 512 → 16·(128 + 128), o_proj 16·128 → 2048; block 0 dense
    (10944), blocks 1–26 MoE: 64 experts of 1408 and shared experts 2·1408."""
    arch = resolve_architecture("deepseek-ai/DeepSeek-V2-Lite")
    shapes = {s.name: (s.d_in, s.d_out) for s in arch.block_linears() if s.group == "attention"}
    assert shapes == {"q_proj": (2048, 3072), "kv_a_proj_with_mqa": (2048, 576),
                      "kv_b_proj": (512, 4096), "o_proj": (2048, 2048)}
    assert arch.dense_layers == (0,)
    assert arch.shared_expert_intermediate_size == 2 * 1408
    attn = 2048 * 3072 + 2048 * 576 + 512 + 512 * 4096 + 2048 * 2048
    dense = attn + 3 * 2048 * 10944 + 2 * 2048
    moe = attn + 64 * 2048 + 64 * 3 * 2048 * 1408 + 3 * 2048 * 2816 + 2 * 2048
    assert arch.total_params == dense + 26 * moe + 2 * 102400 * 2048 + 2048
    # gate_proj: block 0's dense one, 26 × (64 experts + the shared one)
    c = count_trainable(arch, 8, ["gate_proj"])
    assert c.trainable == (8 * (2048 + 10944) + 26 * (64 * 8 * (2048 + 1408) + 8 * (2048 + 2816)))
    # the router is a raw parameter (MoEGate.weight): "all-linear" leaves it out
    assert "gate" not in count_trainable(arch, 8, "all-linear").matched


def test_qwen2_moe_shared_expert_and_activation_width():
    arch = resolve_architecture("Qwen/Qwen1.5-MoE-A2.7B")
    names = {s.path for s in arch.block_linears()}
    assert {"mlp.shared_expert.gate_proj", "mlp.shared_expert_gate", "mlp.gate"} <= names
    # a token runs through 4 routed experts of 1408 and the shared expert of 5632
    assert arch.active_mlp_width == 4 * 1408 + 5632
    c = count_trainable(arch, 8, ["down_proj"])
    assert c.trainable == 24 * (60 * 8 * (1408 + 2048) + 8 * (5632 + 2048))


def test_llama4_scout_fused_experts_shared_expert_and_frozen_vision():
    arch = resolve_architecture("meta-llama/Llama-4-Scout-17B-16E")
    # all-linear: q/k/v/o, the router (Llama4Router is an nn.Linear) and the shared expert
    c = count_trainable(arch, 8, "all-linear")
    per_block = (8 * (5120 + 5120) * 2 + 8 * (5120 + 1024) * 2 + 8 * (5120 + 16)
                 + 8 * (5120 + 8192) * 3)
    assert c.trainable == 48 * per_block
    c = count_trainable(arch, 8, [], target_parameters=["feed_forward.experts.gate_up_proj"])
    assert c.trainable == 48 * 8 * 16 * (5120 + 16384)
    # text blocks by hand + the vision tower as frozen weights
    block = (2 * 5120 * 5120 + 2 * 5120 * 1024 + 16 * 3 * 5120 * 8192 + 3 * 5120 * 8192
             + 5120 * 16 + 2 * 5120)
    text = 48 * block + 2 * 202048 * 5120 + 5120
    assert arch.total_params == text + arch.frozen_tower_params
    assert 0.8e9 < arch.frozen_tower_params < 0.9e9  # ~1.5% of the total: without it, 1.1% short
    assert abs(text / 109e9 - 1) > 0.01


def test_granite_moe_experts_are_parameters_and_the_router_a_linear():
    arch = resolve_architecture("ibm-granite/granite-3.0-1b-a400m-base")
    c = count_trainable(arch, 8, "all-linear")
    assert set(c.matched) == {"q_proj", "k_proj", "v_proj", "o_proj", "layer"}
    assert c.trainable == 24 * (2 * 8 * (1024 + 1024) + 2 * 8 * (1024 + 512) + 8 * (1024 + 32))
    by_hand = 24 * (2 * 1024 * 1024 + 2 * 1024 * 512 + 32 * 3 * 1024 * 512 + 1024 * 32
                    + 2 * 1024) + 49155 * 1024 + 1024  # tied embeddings
    assert arch.total_params == by_hand


@pytest.mark.parametrize("folder,hub_id", [
    ("gpt-oss-20b", "openai/gpt-oss-20b"),
    ("DeepSeek-V2-Lite-Chat", "deepseek-ai/DeepSeek-V2-Lite"),
    ("Qwen1.5-MoE-A2.7B-Chat", "Qwen/Qwen1.5-MoE-A2.7B"),
    ("granite-3.1-3b-a800m-instruct", "ibm-granite/granite-3.0-3b-a800m-base"),
])
def test_a_local_config_gives_the_catalog_layout(folder, hub_id):
    cfg = json.loads((FIX / folder / "config.json").read_text())
    local = from_hf_config(cfg, name=folder, source=f"fixture {folder}")
    known = resolve_architecture(hub_id)
    assert local.total_params == known.total_params
    assert local.active_params == known.active_params
    assert [s.path for s in local.block_linears()] == [s.path for s in known.block_linears()]
    assert count_trainable(local, 8, "all-linear").trainable == count_trainable(known, 8, "all-linear").trainable


def test_llama4_composite_config_counts_the_vision_tower():
    """A Llama4ForConditionalGeneration config.json (text_config + vision_config): the text
    model's layout and the vision tower as frozen weights, as the catalog record."""
    record = next(r for r in json.loads((ROOT / "lintlora" / "data" / "models_moe.json").read_text())
                  if r["model_type"] == "llama4")
    text = {k: record[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                   "num_key_value_heads", "head_dim", "intermediate_size",
                                   "intermediate_size_mlp", "vocab_size", "tie_word_embeddings")}
    text.update(model_type="llama4_text", num_local_experts=16, num_experts_per_tok=1,
                interleave_moe_layer_step=1)
    cfg = {"model_type": "llama4", "text_config": text, "vision_config": record["vision_config"]}
    local = from_hf_config(cfg, name="scout", source="t")
    assert local.total_params == resolve_architecture("meta-llama/Llama-4-Scout-17B-16E").total_params
    # Maverick-style interleaving: every second block MoE, the others dense (16384)
    maverick = from_hf_config({**cfg, "text_config": {**text, "interleave_moe_layer_step": 2}},
                              name="m", source="t")
    assert maverick.dense_layers == tuple(range(0, 48, 2))
    assert maverick.total_params < local.total_params


def test_catalog_counts_match_the_layout():
    """Every MoE record's stored count is the count its layout gives (a record edited without
    its count fails here)."""
    for rec in json.loads((ROOT / "lintlora" / "data" / "models_moe.json").read_text()):
        arch = resolve_architecture(rec["hf_id"])
        assert arch.total_params == rec["params_total_computed"], rec["name"]
        if rec["params_published"]["total"]:
            assert abs(rec["params_total_computed"] / rec["params_published"]["total"] - 1) < 0.01


def test_a_bad_layout_key_is_a_diagnostic_not_a_traceback():
    from lintlora.estimate.architecture import UnknownModelError

    cfg = json.loads((FIX / "DeepSeek-V2-Lite-Chat" / "config.json").read_text())
    with pytest.raises(UnknownModelError, match="kv_lora_rank"):
        from_hf_config({**cfg, "kv_lora_rank": "512"}, name="x", source="x")
    with pytest.raises(UnknownModelError, match="first_k_dense_replace"):
        from_hf_config({**cfg, "first_k_dense_replace": 1e400}, name="x", source="x")


def test_bitsandbytes_4bit_leaves_fused_experts_in_16_bits():
    """load_in_4bit swaps nn.Linear modules only (transformers replace_with_bnb_linear): on
    gpt-oss the attention is quantized, the 3-D experts (and the raw router) stay bf16."""
    from lintlora.estimate.memory import EstimateInputs, estimate_memory

    arch = resolve_architecture("openai/gpt-oss-20b")
    linear = 24 * (2 * 2880 * 4096 + 2 * 2880 * 512)
    assert arch.linear_module_params == linear
    est = estimate_memory(EstimateInputs(method="qlora", quant="nf4", target_modules="all-linear",
                                         batch_size=1, seq_len=512), arch)
    assert f"{linear:,} quantized params" in next(a for a in est.assumptions if a.startswith("weights"))
    # a model whose experts are nn.Linear modules quantizes them (Qwen1.5-MoE: all block linears)
    q = resolve_architecture("Qwen/Qwen1.5-MoE-A2.7B")
    assert q.linear_module_params == q.block_linear_params


def test_ll012_does_not_take_expert_parameters_for_modules():
    """target_modules=["gate_up_proj", "down_proj"] on gpt-oss: no module has those names (they
    are parameters of GptOssExperts), peft raises "Target modules ... not found"."""
    from lintlora.rules.ll012_target_modules_unmatched import unmatched_entries

    arch = resolve_architecture("openai/gpt-oss-20b")
    u = unmatched_entries(["q_proj", "gate_up_proj", "down_proj"], arch)
    assert u is not None and set(u.unmatched) == {"gate_up_proj", "down_proj"}
    assert "gate_up_proj" not in u.meant and "down_proj" not in u.meant
    assert unmatched_entries(["q_proj", "k_proj", "v_proj", "o_proj"], arch) is None


GEMMA3N_E2B_TEXT = {
    # google/gemma-3n-E2B config.json text_config (the fields the layout reads)
    "model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 30,
    "intermediate_size": [8192] * 30, "num_attention_heads": 8, "num_key_value_heads": 2,
    "head_dim": 256, "vocab_size": 262400, "vocab_size_per_layer_input": 262144,
    "hidden_size_per_layer_input": 256, "altup_num_inputs": 4, "laurel_rank": 64,
    "num_kv_shared_layers": 10, "hidden_activation": "gelu_pytorch_tanh",
}


@pytest.mark.parametrize("hub_id,effective", [("google/gemma-3n-E2B-it", 1.91e9),
                                              ("google/gemma-3n-E4B-it", 4.0e9)])
def test_gemma3n_priced_as_stored_and_its_effective_count(tmp_path, hub_id, effective):
    """Google's "effective" figure (E2B: 1.91B, ai.google.dev gemma-3n docs; E4B: the 4B of its
    name) is the text model without its two embedding tables (embed_tokens and the per-layer
    embeddings); the estimate prices what is stored, the tables included."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(model=hub_id))
    est = _estimate(script)
    arch = resolve_architecture(hub_id)
    assert est["model"] == arch.name and not est["rough"]
    L = arch.num_hidden_layers
    ple = 262144 * L * 256
    assert abs((arch.total_params - ple - arch.embedding_params) / effective - 1) < 0.01
    assert est["breakdown"]["weights"] >= 2 * arch.total_params  # bf16, the PLE table included
    assert arch.residual_streams == 4


def test_gemma3n_e2b_text_model_by_hand_and_from_its_config():
    """4.46B text parameters (maceip/gemma3n-executorch's export of gemma-3n-E2B-it, language
    model + head): by hand from the config and transformers' Gemma3nText modules."""
    h, L, I, hd, n, p, rank = 2048, 30, 8192, 256, 4, 256, 64
    attn = h * 8 * hd + 2 * h * 2 * hd + 8 * hd * h + 2 * hd
    mlp = 3 * h * I
    altup = h + n * n + n * n * n + h * n + h
    laurel = h * rank + rank * h + h
    ple_block = h * p + p * h + h
    block = attn + mlp + 4 * h + altup + laurel + ple_block
    model = 262400 * h + 262144 * L * p + h * L * p + p + 2 * (n - 1) * h * h + h
    by_hand = L * block + model
    arch = resolve_architecture("google/gemma-3n-E2B")
    assert arch.total_params == by_hand
    assert abs(by_hand / 4.46e9 - 1) < 0.01
    local = from_hf_config({"model_type": "gemma3n", "text_config": GEMMA3N_E2B_TEXT},
                           name="e2b", source="t")
    assert local.total_params == by_hand and local.tie_word_embeddings
    # MatFormer: per-block widths are read as a list (a narrower slice counts fewer)
    sliced = from_hf_config({"model_type": "gemma3n", "text_config": {
        **GEMMA3N_E2B_TEXT, "intermediate_size": [8192] * 20 + [4096] * 10}}, name="s", source="t")
    assert by_hand - sliced.total_params == 10 * 3 * h * (8192 - 4096)
    with pytest.raises(Exception, match="intermediate_size"):
        from_hf_config({"model_type": "gemma3n", "text_config": {
            **GEMMA3N_E2B_TEXT, "intermediate_size": [8192, "x"]}}, name="s", source="t")


def test_gemma3n_checkpointed_input_holds_the_altup_streams():
    """With gradient checkpointing each block's saved input is AltUp's stack of 4 streams
    (Gemma3nTextModel stacks altup_num_inputs hidden states before the blocks)."""
    from lintlora.estimate.memory import EstimateInputs, activation_breakdown
    from lintlora.estimate.profiles import get_profile

    arch = resolve_architecture("google/gemma-3n-E2B")
    inputs = EstimateInputs(method="lora", batch_size=1, seq_len=512, gradient_checkpointing=True)
    terms = activation_breakdown(arch, inputs, get_profile("transformers"), None)
    assert terms.checkpoint_per_token_layer == 2 * 2048 * 4


def test_compute_time_counts_active_parameters_without_frozen_towers():
    """The FLOPs a token costs follow the parameters it reads: Llama-4's vision tower (frozen,
    not run on text) adds nothing; DeepSeek's dense first block counts in full."""
    from dataclasses import replace

    from lintlora.estimate.compute import estimate_time
    from lintlora.estimate.memory import EstimateInputs

    inputs = EstimateInputs(method="lora", batch_size=1, seq_len=1024)
    scout = resolve_architecture("meta-llama/Llama-4-Scout-17B-16E")
    text_only = replace(scout, frozen_tower_params=0,
                        params_total=scout.total_params - scout.frozen_tower_params)
    assert estimate_time(inputs, scout, 989.4).flops_per_token == \
        estimate_time(inputs, text_only, 989.4).flops_per_token
