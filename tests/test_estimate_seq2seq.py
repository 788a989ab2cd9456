"""Encoder-decoder models (T5, Flan-T5, mT5, T0/mt0, BART): catalog, parameter counts, LoRA on
both stacks, the activation model over source and target lengths, extraction, the flag.

Independent figures: each record's ``params_published`` (a published or printed total, its
source in the record); peft's README line for mt0-large LoRA; the CPU measurements of
``bench/seq2seq_saved_tensors.py`` (torch 2.13.0, transformers 5.24.0, peft 0.21.2), copied
into :data:`MEASURED`; and hand computations written out in the tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from lintlora.estimate.architecture import from_hf_config, resolve_architecture
from lintlora.estimate.memory import EstimateInputs, estimate_memory
from lintlora.estimate.params import count_trainable
from lintlora.estimate.profiles import get_profile
from lintlora.estimate.seq2seq import seq2seq_activations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "seq2seq"
NAMED = ["google-t5/t5-small", "t5-base", "t5-large", "t5-3b", "t5-11b",
         "google/flan-t5-small", "google/flan-t5-base", "google/flan-t5-large", "google/flan-t5-xl",
         "google/flan-t5-xxl", "google/t5-v1_1-large", "google/mt5-small", "google/mt5-base", "google/mt5-large",
         "google/mt5-xl", "google/mt5-xxl", "facebook/bart-base", "facebook/bart-large",
         "facebook/bart-large-cnn", "bigscience/T0_3B", "bigscience/mt0-xxl", "bigscience/mt0-large"]


def _records() -> list[dict]:
    from lintlora.estimate.architecture import _records as records

    return [r for r in records() if r.get("encoder_decoder")]


@pytest.mark.parametrize("name", NAMED)
def test_every_named_seq2seq_model_resolves_to_an_encoder_decoder(name):
    arch = resolve_architecture(name)
    assert arch.is_encoder_decoder, name
    assert arch.encoder_decoder.num_decoder_layers == arch.num_hidden_layers


@pytest.mark.parametrize("rec", _records(), ids=lambda r: r["hf_id"])
def test_parameter_count_within_1_percent_of_the_published_total(rec):
    """Computed from the shapes (``params_total_computed`` is what the code computes) against
    the published figure. A figure rounded in its source ("3.7B") cannot pin closer than its
    rounding: the tolerance is then half a unit of its last digit when that is wider than 1%
    (only mT5-XL, 3.7B: ±1.35%)."""
    arch = replace(resolve_architecture(rec["hf_id"]), params_total=0)
    computed = arch.total_params
    assert computed == rec["params_total_computed"]
    pub = rec["params_published"]
    assert pub["source"]
    tol = 0.01
    if not pub["exact"]:
        digits = re.sub(r"[^0-9.]", "", pub["stated"])
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        unit = {"M": 1e6, "B": 1e9, "G": 1e9}.get(pub["stated"][-1], 1)
        tol = max(tol, 0.5 * 10 ** -decimals * unit / pub["value"])
    assert abs(computed - pub["value"]) <= tol * pub["value"], (rec["hf_id"], computed, pub)


def test_exact_published_totals_are_matched_exactly():
    exact = [r for r in _records() if r["params_published"]["exact"]]
    assert len(exact) >= 13
    for rec in exact:
        assert replace(resolve_architecture(rec["hf_id"]), params_total=0).total_params == rec["params_published"]["value"]


def test_lora_q_v_adapts_encoder_self_decoder_self_and_cross_attention():
    """peft README: bigscience/mt0-large with LoraConfig(r=8) prints
    ``trainable params: 2359296 || all params: 1231940608``: 24 encoder + 24 decoder self +
    24 cross-attention blocks × (q, v) × 8 × (1024 + 1024) = 2,359,296."""
    arch = resolve_architecture("bigscience/mt0-large")
    tc = count_trainable(arch, 8, None)
    assert tc.lora_params == 72 * 2 * 8 * 2048 == 2359296
    assert tc.total_params == 1231940608
    paths = [m for m in tc.adapted]
    assert {m.role for m in paths} == {"qkv", "cross_kv"}


def test_module_paths_follow_modeling_t5_and_bart():
    from lintlora.estimate.params import _modules

    t5 = {m.path for m in _modules(resolve_architecture("google/flan-t5-small"))}
    for p in ("encoder.block.0.layer.0.SelfAttention.q", "encoder.block.7.layer.1.DenseReluDense.wi_1",
              "decoder.block.0.layer.1.EncDecAttention.v", "decoder.block.7.layer.2.DenseReluDense.wo", "lm_head"):
        assert p in t5
    bart = {m.path for m in _modules(resolve_architecture("facebook/bart-base"))}
    for p in ("model.encoder.layers.5.self_attn.out_proj", "model.decoder.layers.0.encoder_attn.k_proj",
              "model.decoder.layers.5.fc2"):
        assert p in bart


def test_a_local_t5_config_json_reads_as_an_encoder_decoder():
    """An mT5-small config.json (the values of google/mt5-small's): the same count as the
    published total 300,176,768 (asahi417/lm-vocab-trimmer)."""
    cfg = {"architectures": ["MT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
           "feed_forward_proj": "gated-gelu", "model_type": "mt5", "num_decoder_layers": 8, "num_heads": 6,
           "num_layers": 8, "relative_attention_num_buckets": 32, "tie_word_embeddings": False,
           "vocab_size": 250112, "dropout_rate": 0.1}
    arch = from_hf_config(cfg, name="local-mt5", source="test")
    assert arch.is_encoder_decoder and arch.total_params == 300176768
    assert count_trainable(arch, 8, None).lora_params == (8 + 8 + 8) * 2 * 8 * (512 + 384)


# ---- the activation model ---------------------------------------------------------------------
# bench/seq2seq_saved_tensors.py (torch 2.13.0+cpu, transformers 5.24.0, peft 0.21.2), exact
# depth-difference fits: encoder bytes per source token = a + b·S, decoder per target token
# = c + d·T + e·S, decoder per source token f; tiny configs of the bench's FAMILIES.
MEASURED = {
    ("t5-gated", "bfloat16", 0.1): (15848, 20, 18940, 20, 20, 1808),
    ("t5-gated", "bfloat16", 0.0): (15336, 20, 18172, 20, 20, 1552),
    ("t5-gated", "float32", 0.1): (25864, 36, 29484, 36, 36, 3360),
    ("t5-relu", "bfloat16", 0.1): (9768, 20, 12860, 20, 20, 1808),
}
TINY = {
    "t5-gated": dict(model_type="t5", d_model=256, d_ff=704, d_kv=64, num_heads=4, vocab_size=512,
                     feed_forward_proj="gated-gelu", tie_word_embeddings=False, dropout_rate=0.1),
    "t5-relu": dict(model_type="t5", d_model=256, d_ff=1024, d_kv=64, num_heads=4, vocab_size=512,
                    feed_forward_proj="relu", tie_word_embeddings=True, dropout_rate=0.1),
}


def _tiny(family: str):
    return from_hf_config(dict(TINY[family], num_layers=2, num_decoder_layers=2), name="tiny", source="test")


@pytest.mark.parametrize("key", list(MEASURED), ids=lambda k: "-".join(map(str, k)))
@pytest.mark.parametrize("S", [32, 128])
def test_t5_block_bytes_equal_the_cpu_measurement(key, S):
    family, dtype, p = key
    a, b, c, d, e, f = MEASURED[key]
    T = 16
    inputs = EstimateInputs(method="lora", batch_size=1, seq_len=S, target_seq_len=T, lora_r=8, lora_dropout=p,
                            attn_implementation="eager", compute_dtype=dtype, weight_dtype=dtype)
    act = seq2seq_activations(_tiny(family), inputs, get_profile("transformers"), 12.0, cuda=False)
    assert act.encoder_per_token == a + b * S
    assert act.decoder_per_token == c + d * T + e * S
    assert act.decoder_per_source_token == f


def test_cuda_prices_fp32_softmax_and_pow_above_the_cpu():
    """CUDA autocast runs ``softmax`` and ``pow`` in fp32 (torch autocast's float32 op list):
    per score 4 + 1 + 2 = 7 bytes instead of 5, and gelu_new keeps 21·I instead of 13·I."""
    inputs = EstimateInputs(method="lora", batch_size=1, seq_len=64, target_seq_len=16, lora_r=8, lora_dropout=0.1,
                            attn_implementation="eager")
    arch = _tiny("t5-gated")
    cpu = seq2seq_activations(arch, inputs, get_profile("transformers"), 12.0, cuda=False)
    gpu = seq2seq_activations(arch, inputs, get_profile("transformers"), 12.0)
    heads, I = 4, 704
    assert gpu.encoder_per_token - cpu.encoder_per_token == heads * 64 * (7 - 5) + (21 - 13) * I


def test_the_decoder_length_changes_the_activations_as_computed_by_hand():
    """flan-t5-large (h 1024, d_ff 2816, 16 heads of 64, 24 + 24 blocks), LoRA r=8 on q, v with
    dropout 0.1, bf16, SDPA, batch 1, source 512: going from 64 to 128 target tokens adds, per
    decoder block and target token (CUDA: _t5_layer):

    * 3 T5LayerNorms × (4h + 4 + 2h) = 18,444 and 3 residual-dropout masks 3h = 3,072;
    * self-attention SDPA 4·2·1024 + 4·16 = 8,256, cross-attention q and output 2·2·1024 +
      4·16 = 4,160;
    * gelu_new and gate product 20·2816 + dropout mask 2816 = 59,136;
    * LoRA on self q, self v, cross q: 3 × 3 bytes × 1024 = 9,216 + their rank-8 outputs 3·2·8 = 48;

    = 102,332 bytes per target token per block, × 24 blocks × 64 more tokens; the logits add
    32,128 × 12 bytes per target token (LOSS_K "hf"); the encoder's term is unchanged. Once per
    stack: the decoder's embedding-dropout mask (h bytes per target token) and, with SDPA, the
    position-bias tensors it keeps for self- and cross-attention, (T·T + T·S)·heads·2 bytes."""
    arch = resolve_architecture("google/flan-t5-large")
    base = EstimateInputs(method="lora", batch_size=1, seq_len=512, target_seq_len=64, lora_r=8, lora_dropout=0.1)
    a = estimate_memory(base, arch)
    b = estimate_memory(replace(base, target_seq_len=128), arch)
    per_token_block = 18444 + 3072 + 8256 + 4160 + 59136 + 9216 + 48
    assert per_token_block == 102332
    bias = 16 * 2 * ((128 * 128 + 128 * 512) - (64 * 64 + 64 * 512))
    embedding_mask = 64 * 1024
    assert (b.breakdown["activations"] - a.breakdown["activations"]
            == 24 * 64 * per_token_block + bias + embedding_mask)
    assert b.breakdown["logits"] - a.breakdown["logits"] == 32128 * 12 * 64
    # the encoder does not see the target: the source length alone scales its term
    c = estimate_memory(replace(base, seq_len=1024), arch)
    assert c.breakdown["activations"] > a.breakdown["activations"]


def test_unknown_target_length_is_assumed_equal_to_the_source_and_said():
    arch = resolve_architecture("google/flan-t5-base")
    m = estimate_memory(EstimateInputs(method="lora", seq_len=256), arch)
    assert any("target length unknown: assumed equal to the source length (256" in n for n in m.assumptions)
    same = estimate_memory(EstimateInputs(method="lora", seq_len=256, target_seq_len=256), arch)
    assert same.allocated_bytes == m.allocated_bytes


def test_t5_keeps_wo_in_fp32():
    """transformers T5PreTrainedModel._keep_in_fp32_modules = ["wo"]: flan-t5-large's 48 wo
    weights (2816 × 1024 each) cost 4 bytes, not 2, under a bf16 load."""
    arch = resolve_architecture("google/flan-t5-large")
    m = estimate_memory(EstimateInputs(method="lora", seq_len=128, target_seq_len=32), arch)
    assert m.breakdown["weights"] == 783150080 * 2 + 48 * 2816 * 1024 * 2


# ---- extraction and the command -----------------------------------------------------------------
def test_seq2seq_trainer_script_naming_flan_t5_large_gets_an_estimate():
    """fixtures/estimate/seq2seq/flan_t5_large_seq2seq_trainer.py: Seq2SeqTrainer, source
    max_length=max_source_length (512), labels tokenized with text_target= and
    max_length=max_target_length (5), per_device_train_batch_size=4, no LoRA (full)."""
    from lintlora.estimate.command import estimate_cmd

    res = CliRunner().invoke(estimate_cmd, [str(FIXTURES / "flan_t5_large_seq2seq_trainer.py"), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    est = data["estimate"] if "estimate" in data else data[0]["estimate"]
    assert est["model"] == "Flan-T5-Large"
    assert est["inputs"]["seq_len"] == 512 and est["inputs"]["target_seq_len"] == 5
    assert est["inputs"]["batch_size"] == 4 and est["inputs"]["method"] == "full"
    assert any("target (decoder) length 5 tokens" in n and "text_target=" in n for n in est["assumptions"])
    assert any("encoder-decoder: 24 encoder blocks over 512 source tokens" in n for n in est["assumptions"])


def test_target_length_flag_changes_only_an_encoder_decoder():
    from lintlora.estimate.command import estimate_cmd

    def run(*args):
        res = CliRunner().invoke(estimate_cmd, [*args, "--format", "json"])
        assert res.exit_code == 0, res.output
        d = json.loads(res.output)
        return d["estimate"] if "estimate" in d else d[0]["estimate"]

    short = run("--model", "google/flan-t5-base", "--seq-len", "512", "--target-seq-len", "32")
    long = run("--model", "google/flan-t5-base", "--seq-len", "512", "--target-seq-len", "512")
    assert short["inputs"]["target_seq_len"] == 32
    assert long["allocated_bytes"] > short["allocated_bytes"]
    llama = run("--model", "meta-llama/Llama-3.1-8B", "--target-seq-len", "32")
    assert any("--target-seq-len ignored" in n for n in llama["assumptions"])


def test_extraction_reads_source_and_target_lengths(tmp_path):
    from lintlora.extract.python import extract_python

    src = tmp_path / "train.py"
    src.write_text(
        "import argparse\n"
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--max_source_length', type=int, default=1024)\n"
        "p.add_argument('--max_target_length', type=int, default=128)\n"
        "args = p.parse_args()\n"
        "tokenizer = AutoTokenizer.from_pretrained('facebook/bart-large-cnn')\n"
        "model = AutoModelForSeq2SeqLM.from_pretrained('facebook/bart-large-cnn')\n"
        "def prep(b):\n"
        "    x = tokenizer(b['article'], max_length=args.max_source_length, truncation=True)\n"
        "    y = tokenizer(b['highlights'], max_length=args.max_target_length, truncation=True)\n"
        "    x['labels'] = y['input_ids']\n"
        "    return x\n"
        "ta = Seq2SeqTrainingArguments(output_dir='o', per_device_train_batch_size=2, bf16=True)\n"
        "Seq2SeqTrainer(model=model, args=ta).train()\n")
    setups = extract_python(str(src), src.read_text())
    setup = setups[0]
    assert setup.get("training.max_seq_length").value == 1024
    target = setup.training.extra["target_seq_len"]
    assert target.value == 128 and "guess by name" in target.source
