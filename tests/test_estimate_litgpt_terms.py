"""litgpt's step as Lightning Fabric runs it (lintlora.estimate.litgpt_terms).

Three mechanisms found by running litgpt 0.4.13's ``fit()`` loop through ``L.Fabric`` on the CPU
(``bench/litgpt_fabric_step.py``; the earlier ``bench/litgpt_memory.py`` called the model directly):

* Fabric's ``convert_output`` casts the logit chunks to float32 (the default dtype), so the
  chunked loss keeps fp32 chunks, fp32 log-softmax outputs and fp32 gradients, and ``fit()``'s
  ``logits`` keeps the previous step's fp32 chunks into the next forward;
* through ``fit()``'s ``loss``/``logits`` the previous step's autograd graph stays alive into the
  next forward, and with it what bitsandbytes < 0.43.2 ``MatMul4Bit`` stores as ``ctx.tensors``
  (every quantized linear's input), which backward does not free;
* under ``bf16-mixed`` every logit chunk casts the frozen fp32 output layer anew and keeps its
  bf16 copy for backward.

Numbers are pinned to hand computations from the architecture and to litgpt's published peaks
(tests/data/measured_peaks.csv, ``torch.cuda.max_memory_allocated()``/1e9). The last test reruns the
CPU measurement when torch, litgpt and lightning are installed.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.memory import EstimateInputs, estimate_memory
from lintlora.estimate.profiles import get_profile

LITGPT = get_profile("litgpt")


def _inputs(**kw) -> EstimateInputs:
    base = dict(method="lora", lora_dropout=0.05, loss_impl="chunked", framework="litgpt")
    return EstimateInputs(**{**base, **kw})


# ---- Fabric's fp32 logits ------------------------------------------------------------------------
# the CPU measurement (bench/litgpt_fabric_step.py, TinyLlama's vocabulary, bytes per token·vocab):
# loss backward 9.99 at s = 512, 11.99 at s = 256, 8.98 at s = 1044; forward end 6.00 (+ 4.07 for
# the previous step's chunks); without Fabric 5.00 / 5.99 / 4.49
@pytest.mark.parametrize("seq, measured", [(512, 9.99), (256, 11.99), (1044, 8.98)])
def test_loss_backward_in_fp32_matches_the_fabric_measurement(seq, measured):
    from lintlora.estimate.litgpt_terms import loss_moments

    m = loss_moments(seq)
    # by hand: kept fp32 chunks 4 + log-softmax outputs/gradients 4 + one chunk's two fresh fp32
    # gradients 8 · min(s, 128) / s
    assert m["loss backward"] == pytest.approx(4 + 4 + 8 * min(seq, 128) / seq)
    assert m["loss backward"] == pytest.approx(measured, abs=0.03)
    # bf16 chunks + their fp32 copies + the previous step's fp32 chunks
    assert m["forward end"] == pytest.approx(2 + 4 + 4)
    assert m["forward end"] - 4 == pytest.approx(6.00, abs=0.03)
    # the same step on bf16 logits (the model called directly): the old figures
    direct = loss_moments(seq, output_bytes=2)
    assert direct["loss backward"] == pytest.approx(measured / 2, abs=0.03)


def test_tinyllama_lora_matches_its_published_peak():
    """Config hub row 81: TinyLlama 1.1B LoRA r32 all linear, micro-batch 8 × 512, A10G: 13.50 GB.
    Before the fp32 logits the estimate was 12.85 GB (-4.8 %): the missing 32000 × 4096 × 5 B."""
    arch = resolve_architecture("TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")
    inputs = _inputs(batch_size=8, seq_len=512, lora_r=32, target_modules="all-linear")
    est = estimate_memory(inputs, arch, LITGPT)
    # logits term by hand: vocabulary × tokens × (8 + 8 · 128 / 512) = 10 B
    assert est.breakdown["logits"] == pytest.approx(arch.vocab_size * 8 * 512 * 10, rel=1e-6)
    assert est.allocated_bytes == pytest.approx(13.50e9, rel=0.01)
    assert any("float32" in n and "Fabric" in n for n in est.assumptions)


def test_gemma_lora_with_its_256k_vocabulary_matches_its_published_peak():
    """Config hub row 53: Gemma-2B LoRA r8 all linear, 2 × 512: 12.62 GB (was -11 %)."""
    arch = resolve_architecture("google/gemma-2b")
    inputs = _inputs(batch_size=2, seq_len=512, lora_r=8, lora_dropout=0.1, target_modules="all-linear")
    est = estimate_memory(inputs, arch, LITGPT)
    assert est.allocated_bytes == pytest.approx(12.62e9, rel=0.01)


# ---- the previous step's graph (bitsandbytes < 0.43.2) ---------------------------------------------
def _llama2_qlora(**kw) -> tuple:
    """Config hub row 62: Llama-2-7B QLoRA nf4 r32 q,v, 2 × 512, bitsandbytes 0.42.0: 13.68 GB."""
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    inputs = _inputs(method="qlora", quant="nf4", batch_size=2, seq_len=512, lora_r=32,
                     target_modules=("q_proj", "v_proj"), optim="paged_adamw_32bit", bnb_saves_input=True)
    return arch, replace(inputs, **kw)


def test_previous_step_keeps_every_quantized_linear_input():
    arch, inputs = _llama2_qlora()
    est = estimate_memory(inputs, arch, LITGPT)
    h, I, L = arch.hidden_size, arch.intermediate_size, arch.num_hidden_layers
    # one bf16 tensor per distinct linear input (qkv, proj, fc_1/fc_2, mlp.proj) per layer
    # (measured: 1472 B per token per layer = 2·(3·128 + 352) at widths / 16, --old-bnb)
    assert est.breakdown["previous_step"] == 2 * (3 * h + I) * L * inputs.tokens
    # its moment: the last chunk's output layer dequantized whole (4 B per weight) at the
    # forward's end, with the 16-bit chunks (2) and the previous step's fp32 chunks (4)
    assert est.peak_phase == "lm_head forward"
    assert est.breakdown["logits"] == arch.vocab_size * (2 + 4) * inputs.tokens
    assert est.breakdown["transient"] == arch.vocab_size * h * 4
    # the published peak (was 12.02 GB, -12 %)
    assert est.allocated_bytes == pytest.approx(13.68e9, rel=0.01)


@pytest.mark.parametrize("change", [dict(bnb_saves_input=False), dict(gradient_checkpointing=True),
                                    dict(previous_batch_ratio=0.0), dict(quant=None, method="lora")])
def test_no_previous_step_graph_without_old_bitsandbytes_or_with_checkpointing(change):
    arch, inputs = _llama2_qlora(**change)
    est = estimate_memory(inputs, arch, LITGPT)
    assert est.breakdown.get("previous_step", 0) == 0


def test_other_frameworks_free_the_previous_step():
    arch, inputs = _llama2_qlora(framework="transformers", loss_impl=None)
    est = estimate_memory(inputs, arch, get_profile("transformers"))
    assert est.breakdown.get("previous_step", 0) == 0


def test_first_step_protocol_matches_the_2023_resource_table():
    """Resource tables row 12 (lit-gpt 8641822, the longest Alpaca sample forced into the first
    micro-batch): Llama-2-7B QLoRA nf4 r8, 1 × 1304, bitsandbytes 0.41.1: 14.14 GB. Its peak is
    the first step's: nothing of a previous step is alive."""
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    inputs = _inputs(method="qlora", quant="nf4", batch_size=1, seq_len=1304, lora_r=8,
                     target_modules=("q_proj", "v_proj"), optim="paged_adamw_32bit", bnb_saves_input=True,
                     previous_batch_ratio=0.0)
    first = estimate_memory(inputs, arch, LITGPT)
    assert first.allocated_bytes == pytest.approx(14.14e9, rel=0.01)
    steady = estimate_memory(replace(inputs, previous_batch_ratio=1.0), arch, LITGPT)
    lin = 2 * (3 * arch.hidden_size + arch.intermediate_size) * arch.num_hidden_layers * 1304
    assert steady.allocated_bytes - first.allocated_bytes >= lin


# ---- parallel blocks with one norm ----------------------------------------------------------------
def test_parallel_block_with_one_norm_keeps_its_input_once():
    """phi-2 (parallel attention + MLP on one LayerNorm output): 2·(h + q + I) per token per layer
    (measured 1920 B = 2·(160 + 160 + 640) at widths / 16). Config hub row 76, phi-2 QLoRA r8 all
    linear, 4 × 512: 14.27 GB."""
    arch = resolve_architecture("microsoft/phi-2")
    assert arch.norms_per_layer == 1
    inputs = _inputs(method="qlora", quant="nf4", batch_size=4, seq_len=512, lora_r=8, target_modules="all-linear",
                     optim="paged_adamw_32bit", bnb_saves_input=True)
    est = estimate_memory(inputs, arch, LITGPT)
    per = 2 * (arch.hidden_size + arch.q_width + arch.intermediate_size)
    assert est.breakdown["previous_step"] == per * arch.num_hidden_layers * inputs.tokens
    assert est.allocated_bytes == pytest.approx(14.27e9, rel=0.01)


# ---- bf16-mixed: one output-layer copy per chunk ----------------------------------------------------
def test_bf16_mixed_keeps_one_output_layer_copy_per_logit_chunk():
    """finetune_lora.md: StableLM-3B LoRA bf16-mixed, 1 × 1034: 26.92 GB (was 23.49 GB, -12.7 %).
    Autocast casts the frozen fp32 output layer anew for each of the ceil(1034 / 128) = 9 chunks
    (measured: 9 bf16 copies saved, bench/litgpt_fabric_step.py --mixed)."""
    arch = resolve_architecture("stabilityai/stablelm-base-alpha-3b")
    inputs = _inputs(batch_size=1, seq_len=1034, lora_r=8, target_modules=("query_key_value",),
                     weight_dtype="float32", master_fp32=True, previous_batch_ratio=0.0)
    est = estimate_memory(inputs, arch, LITGPT)
    one = estimate_memory(replace(inputs, seq_len=128), arch, LITGPT)
    head = arch.vocab_size * arch.hidden_size
    assert math.ceil(1034 / 128) == 9
    assert est.breakdown["weights"] - one.breakdown["weights"] == 8 * head * 2
    assert est.allocated_bytes == pytest.approx(26.92e9, rel=0.01)


def test_fabric_measurement_agrees_with_the_terms():
    """bench/litgpt_fabric_step.py on TinyLlama's vocabulary (needs torch, litgpt and lightning)."""
    pytest.importorskip("torch")
    pytest.importorskip("litgpt")
    pytest.importorskip("lightning")
    sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))
    import litgpt_fabric_step

    from lintlora.estimate.litgpt_terms import loss_moments

    r = litgpt_fabric_step.run_case("tiny-llama-1.1b", "81", 2, 256, scale=16, old_bnb=True)
    m = loss_moments(256)
    fab = r["fabric"]
    assert fab["dtype"] == "torch.float32"
    assert fab["loss_bwd1"] == pytest.approx(m["loss backward"], rel=0.02)
    assert fab["fwd_end1"] == pytest.approx(m["forward end"] - 4, rel=0.02)
    assert fab["previous_step_per_token_layer"] == pytest.approx(fab["distinct_linear_inputs_per_token_layer"], rel=0.02)
    assert r["direct"]["loss_bwd1"] == pytest.approx(loss_moments(256, output_bytes=2)["loss backward"], rel=0.02)


# ---- validate(): full fp32 logits, no activations ----------------------------------------------------
@pytest.mark.parametrize("batch, measured", [(1, 7.98), (2, 11.97)])
def test_validation_keeps_the_whole_fp32_logits(batch, measured):
    """litgpt's validate() through Fabric (bench/litgpt_fabric_step.py --validate, TinyLlama's
    vocabulary, 256 tokens): 7.98 / 11.97 B per token·vocab above what was live before it."""
    from lintlora.estimate.litgpt_terms import validation_phase

    _, m = validation_phase(gradients=0, previous_step=0, vocab=1, tokens=1, batch_size=batch, previous_ratio=0.0)
    # by hand: fp32 logits 4 + the reshape copy of the sliced logits 4 (batch > 1) + log_softmax 4
    assert m["logits"] == (12 if batch > 1 else 8)
    assert m["logits"] == pytest.approx(measured, abs=0.05)


def test_a_small_model_with_a_256k_vocabulary_peaks_in_validation():
    arch = resolve_architecture("google/gemma-3-270m")
    inputs = _inputs(batch_size=4, seq_len=512, lora_r=8, target_modules="all-linear")
    est = estimate_memory(inputs, arch, LITGPT)
    assert est.peak_phase == "validation"
    assert est.breakdown["activations"] == 0
    # the whole logits: 12 B per token·vocab, plus the last training step's fp32 chunks (4)
    assert est.breakdown["logits"] == pytest.approx(arch.vocab_size * inputs.tokens * 16, rel=1e-6)
    assert any("validate()" in n for n in est.assumptions)


def test_validation_runs_after_zero_grad_so_no_gradient_is_alive():
    # litgpt's fit() calls validate() right after optimizer.step(); optimizer.zero_grad()
    # (finetune/lora.py at 8641822 and v0.4.13): the gradients are None then, even the
    # accumulated unsharded ones of FSDP1's no_sync
    arch = resolve_architecture("google/gemma-3-270m")
    inputs = _inputs(batch_size=4, seq_len=512, lora_r=8, target_modules="all-linear")
    est = estimate_memory(inputs, arch, LITGPT)
    assert est.peak_phase == "validation"
    assert est.breakdown["gradients"] == 0
