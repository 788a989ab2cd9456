"""The litgpt profile's terms (measured with litgpt 0.4.13 by bench/litgpt_memory.py).

Each test pins one mechanism read in litgpt's code and measured on the CPU: the separate output
layer, the chunked loss's backward, LoRAQKVLinear's zero padding, multi-head attention's v view,
Gemma-2's eager soft-capped attention and four norms, LayerNorm's bf16 input, and the 4-bit
output layer dequantized in its backward. The last test runs the measurement itself when torch
and litgpt are installed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.memory import EstimateInputs, activation_breakdown, estimate_memory
from lintlora.estimate.params import count_trainable
from lintlora.estimate.profiles import LOSS_K, get_profile

LITGPT = get_profile("litgpt")
HF = get_profile("transformers")


def _act(model: str, profile, **kw):
    arch = resolve_architecture(model)
    inputs = EstimateInputs(**{"lora_r": 8, "lora_dropout": 0.05, "target_modules": ("q_proj", "v_proj"),
                               "framework": profile.name, **kw})
    tr = count_trainable(arch, inputs.lora_r, inputs.target_modules)
    return arch, inputs, activation_breakdown(arch, inputs, profile, tr)


def test_litgpt_keeps_a_separate_output_layer_for_tied_checkpoints():
    arch = resolve_architecture("google/gemma-2b")
    assert arch.tie_word_embeddings
    inputs = EstimateInputs(method="lora", target_modules=("q_proj", "v_proj"), framework="litgpt")
    lit = estimate_memory(inputs, arch, LITGPT)
    hf = estimate_memory(replace(inputs, framework="transformers"), arch, HF)
    head = arch.vocab_size * arch.hidden_size
    assert lit.breakdown["weights"] - hf.breakdown["weights"] == head * 2
    # an untied model is unchanged
    llama = resolve_architecture("meta-llama/Llama-2-7b-hf")
    a = estimate_memory(inputs, llama, LITGPT).breakdown["weights"]
    assert a == llama.total_params * 2


# the largest chunk holds min(s, 128) tokens: 1000 tokens split into 7 × 128 + 104. Fabric hands
# the loss fp32 chunks (tests/test_estimate_litgpt_terms.py), so every byte of the bf16 figures
# measured calling the model directly (LOSS_K["chunked"] + 4 · min(s, 128) / s: 5.0 at 512) doubles
@pytest.mark.parametrize("seq, k", [(512, 10.0), (256, 12.0), (128, 16.0), (100, 16.0), (1000, 9.024)])
def test_litgpt_chunked_loss_backward_term(seq, k):
    arch, _, act = _act("meta-llama/Llama-2-7b-hf", LITGPT, seq_len=seq)
    assert act.logits_per_token == pytest.approx(arch.vocab_size * k)
    assert k == pytest.approx(2 * (LOSS_K["chunked"] + 4 * min(seq, 128) / seq))
    # the other profiles' chunked loss (torchtune) keeps its constant
    _, _, tt = _act("meta-llama/Llama-2-7b-hf", get_profile("torchtune"), seq_len=seq, loss_impl="chunked")
    assert tt.logits_per_token == pytest.approx(arch.vocab_size * LOSS_K["chunked"])


def test_litgpt_qkv_zero_padding_keeps_the_update_when_not_all_of_qkv_are_adapted():
    arch, _, qv = _act("meta-llama/Llama-3.2-3B", LITGPT)
    _, _, qkv = _act("meta-llama/Llama-3.2-3B", LITGPT, target_modules=("q_proj", "k_proj", "v_proj"))
    c, r = 2, 8
    # q,v: the lora_B output (q and v widths) plus the rank-r output of lora_A per enabled part
    assert qv.parts["lora"] == pytest.approx(3 * arch.hidden_size + c * (arch.q_width + arch.kv_width) + c * r * 2)
    # all of q, k, v: no padding, three rank-r parts
    assert qkv.parts["lora"] == pytest.approx(3 * arch.hidden_size + c * r * 3)


def test_litgpt_multi_head_attention_keeps_the_whole_qkv_output():
    arch, _, mha = _act("meta-llama/Llama-2-7b-hf", LITGPT)
    assert arch.num_key_value_heads == arch.num_attention_heads
    c = 2
    base = c * 4 * arch.q_width + 4 * arch.num_attention_heads
    assert mha.parts["attention"] == base + c * (arch.q_width + arch.kv_width)
    # grouped-query attention expands (copies) k and v: no view of the qkv output is kept
    gqa, _, act = _act("meta-llama/Llama-3.2-3B", LITGPT)
    assert act.parts["attention"] == c * 4 * gqa.q_width + 4 * gqa.num_attention_heads


def test_litgpt_gemma2_eager_softcapped_attention_and_four_norms():
    arch, inputs, act = _act("google/gemma-2-2b", LITGPT, seq_len=512)
    assert arch.norms_per_layer == 4
    assert act.parts["norms"] == 4 * arch.hidden_size * 4
    assert act.parts["attention"] == 3 * 2 * arch.q_width + 8 * arch.num_attention_heads * 512
    # the term grows with the sequence (s² scores per layer)
    _, _, longer = _act("google/gemma-2-2b", LITGPT, seq_len=1024)
    assert longer.parts["attention"] > act.parts["attention"]


def test_litgpt_layernorm_keeps_bf16_input():
    arch, _, act = _act("microsoft/phi-2", LITGPT)
    assert arch.norm == "layernorm"
    assert act.parts["norms"] == arch.norms_per_layer * arch.hidden_size * 2
    _, _, hf = _act("microsoft/phi-2", HF)
    assert hf.parts["norms"] == arch.norms_per_layer * arch.hidden_size * 4


def test_litgpt_qlora_output_layer_dequantized_in_its_backward():
    arch = resolve_architecture("meta-llama/Meta-Llama-3.1-8B")
    inputs = EstimateInputs(method="qlora", quant="nf4", batch_size=2, seq_len=512, lora_r=32,
                            lora_dropout=0.05, target_modules=("q_proj", "v_proj"), framework="litgpt")
    est = estimate_memory(inputs, arch, LITGPT)
    assert est.peak_phase == "lm_head backward"
    assert est.breakdown["transient"] == arch.vocab_size * arch.hidden_size * 4
    # the kept fp32 chunks (4 B, Fabric's cast) and their gradients cast back to bf16 (2 B)
    assert est.breakdown["logits"] == arch.vocab_size * (4 + 2) * inputs.tokens
    # more tokens never lower the peak
    bigger = estimate_memory(replace(inputs, batch_size=4), arch, LITGPT)
    assert bigger.allocated_bytes > est.allocated_bytes


def test_litgpt_terms_agree_with_litgpt_itself():
    """bench/litgpt_memory.py on one GQA and one MHA model: per-layer saved bytes and the loss's
    backward peak within 2% of the model (needs torch and litgpt; skipped otherwise)."""
    pytest.importorskip("torch")
    pytest.importorskip("litgpt")
    sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))
    import litgpt_memory

    for name in ("Llama-3.2-3B", "phi-2"):
        case = next(c for c in litgpt_memory.CASES if c.litgpt_name == name)
        r = litgpt_memory.measure(case, scale=8, batch=2, seq=256)
        assert r["model_per_token_layer"] == pytest.approx(r["saved_per_token_layer"], rel=0.02)
        # the model called directly (no Fabric): bf16 logits (litgpt_terms with output_bytes = 2)
        assert r["model_loss_k"] == pytest.approx(r["loss_backward_per_token_vocab"], rel=0.02)
        assert r["model_weights_bytes"] == pytest.approx(r["weights_bytes"], rel=0.05)
