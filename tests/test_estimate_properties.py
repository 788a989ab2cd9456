"""Properties the memory model must keep whatever the inputs (lintlora.estimate.memory).

The peak is the maximum over the moments of a step, each counted with every buffer alive then,
so more activation memory (more sequences, longer sequences, no checkpointing) can never lower
it. These were broken before: a full fine-tune of Llama-2-7B peaked at 68.7 GiB with batch 1 and
55.2 GiB with batch 4 (the optimizer-step moment was compared without its gradients), and
Qwen2.5-0.5B peaked higher with checkpointing on than off.
"""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lintlora.estimate.architecture import catalog, resolve_architecture
from lintlora.estimate.memory import EstimateInputs, estimate_memory

ARCHS = [a for a in catalog() if a.num_hidden_layers >= 2]
FRAMEWORKS = ["transformers", "trl", "unsloth", "axolotl", "llama-factory", "torchtune", "litgpt"]


@st.composite
def setups(draw):
    arch = draw(st.sampled_from(ARCHS))
    method = draw(st.sampled_from(["lora", "qlora", "full"]))
    fw = draw(st.sampled_from(FRAMEWORKS))
    quant = None
    if method == "qlora":
        quant = draw(st.sampled_from(["nf4", "fp4", "int8", "gptq4", "torchao-nf4"]))
    targets = draw(st.sampled_from(["all-linear", tuple(arch.attention_modules)]))
    inputs = EstimateInputs(
        method=method, batch_size=draw(st.integers(1, 16)), seq_len=draw(st.integers(16, 8192)),
        gradient_checkpointing=draw(st.booleans()), quant=quant, double_quant=draw(st.booleans()),
        weight_dtype=draw(st.sampled_from(["bfloat16", "float16", "float32"])),
        compute_dtype=draw(st.sampled_from(["bfloat16", "float16"])),
        lora_r=draw(st.sampled_from([4, 8, 64])), lora_dropout=draw(st.sampled_from([0.0, 0.05])),
        target_modules=targets, optim=draw(st.sampled_from(["adamw_torch", "paged_adamw_8bit", "sgd"])),
        attn_implementation=draw(st.sampled_from(["sdpa", "flash_attention_2", "eager"])),
        kbit_upcast=draw(st.booleans()) and quant in ("nf4", "fp4", "int8"),
        liger=draw(st.booleans()), master_fp32=draw(st.booleans()), framework=fw,
        checkpoint_offload=draw(st.booleans()), bnb_saves_input=draw(st.booleans()),
        torchao_unchunked=draw(st.booleans()))
    return arch, inputs


PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _peak(arch, inputs):
    return estimate_memory(inputs, arch).device_bytes


@PROPS
@given(setups(), st.integers(1, 16))
def test_peak_never_decreases_with_batch_size(case, more):
    arch, i = case
    assert _peak(arch, i) <= _peak(arch, replace(i, batch_size=i.batch_size + more))


@PROPS
@given(setups(), st.integers(1, 4096))
def test_peak_never_decreases_with_sequence_length(case, more):
    arch, i = case
    assert _peak(arch, i) <= _peak(arch, replace(i, seq_len=i.seq_len + more))


@PROPS
@given(setups())
def test_checkpointing_never_raises_the_peak(case):
    arch, i = case
    on = _peak(arch, replace(i, gradient_checkpointing=True))
    off = _peak(arch, replace(i, gradient_checkpointing=False))
    assert on <= off


@PROPS
@given(setups())
def test_the_peak_is_the_largest_moment_and_adds_up(case):
    arch, i = case
    e = estimate_memory(i, arch)
    alloc = sum(v for k, v in e.breakdown.items() if k not in ("allocator_slack", "cuda_context"))
    assert alloc == e.allocated_bytes
    # the optimizer step is one of the moments: the peak is never below it
    assert e.allocated_bytes >= (e.breakdown["weights"] + e.breakdown["adapter_weights"]
                                 + e.breakdown["optimizer_states"] + e.breakdown["framework"]) or e.peak_phase == "load"


LLAMA2 = resolve_architecture("meta-llama/Llama-2-7b-hf")


def test_reported_full_finetune_batches_are_monotonic():
    """The new-user report: bs 1, 2, 4, 8 gave 68.7, 68.7, 55.2, 68.8 GiB."""
    base = EstimateInputs(method="full", seq_len=512, gradient_checkpointing=False)
    peaks = [estimate_memory(replace(base, batch_size=b), LLAMA2) for b in (1, 2, 4, 8)]
    assert [p.device_bytes for p in peaks] == sorted(p.device_bytes for p in peaks)
    # batch 4's step still has every gradient and its temporaries: the optimizer step wins
    assert peaks[2].peak_phase == "optimizer step"
    assert peaks[2].breakdown["gradients"] == LLAMA2.total_params * 2


def test_reported_qwen_checkpointing_case():
    """Qwen2.5-0.5B full, bs 1: 5.6 GiB with checkpointing off and 5.9 on, before the fix."""
    arch = resolve_architecture("Qwen/Qwen2.5-0.5B")
    base = EstimateInputs(method="full", batch_size=1, seq_len=512)
    on = estimate_memory(replace(base, gradient_checkpointing=True), arch)
    off = estimate_memory(replace(base, gradient_checkpointing=False), arch)
    assert on.device_bytes <= off.device_bytes


@pytest.mark.parametrize("gc", [False, True])
def test_layer_backward_moment_counts_backward_temporaries(gc):
    """A model with a small vocabulary peaks in a layer's backward, not at the loss."""
    arch = replace(LLAMA2, vocab_size=256, params_total=0)
    e = estimate_memory(EstimateInputs(method="lora", batch_size=4, seq_len=1024, gradient_checkpointing=gc,
                                       target_modules=("q_proj", "v_proj")), arch)
    assert e.peak_phase == ("recompute" if gc else "layer backward")
    assert e.breakdown["logits"] == 0 and e.breakdown["transient"] > 0


def test_litgpt_chunked_loss_never_falls_past_a_chunk_boundary():
    """litgpt splits the logits into 128-token chunks; the peak counts the largest chunk's
    gradients. Counted as s / ceil(s / 128) tokens, 129 tokens peaked 2 MB below 128."""
    base = EstimateInputs(method="lora", batch_size=1, gradient_checkpointing=False,
                          lora_r=4, target_modules="all-linear", framework="litgpt")
    peaks = [estimate_memory(replace(base, seq_len=s), LLAMA2).breakdown["logits"]
             for s in (127, 128, 129, 255, 256, 257)]
    assert peaks == sorted(peaks) and len(set(peaks)) == len(peaks)
