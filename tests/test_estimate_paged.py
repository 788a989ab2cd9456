"""Paged optimizers (lintlora.estimate.paged): bitsandbytes keeps the states of tensors of 1e5
elements or more in CUDA unified memory, outside PyTorch's allocator (bitsandbytes
functional.get_paged / optim/optimizer.py get_state_buffer), so no counter holds them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.command import estimate_cmd
from lintlora.estimate.memory import EstimateInputs, estimate_memory
from lintlora.estimate.paged import PAGED_MIN_ELEMENTS, is_paged

LLAMA2 = "meta-llama/Llama-2-7b-hf"


def _est(**kw):
    arch = resolve_architecture(LLAMA2)
    return estimate_memory(EstimateInputs(batch_size=1, seq_len=512, gradient_checkpointing=True, **kw), arch)


@pytest.mark.parametrize("name,paged", [("paged_adamw_32bit", True), ("paged_adamw_8bit", True),
                                        ("paged_lion_8bit", True), ("bitsandbytes.optim.PagedAdamW", True),
                                        ("adamw_torch", False), ("adamw_bnb_8bit", False), (None, False)])
def test_paged_names(name, paged):
    assert is_paged(name) is paged


def test_full_fine_tune_paged_states_leave_every_counter():
    arch = resolve_architecture(LLAMA2)
    torch_adamw = _est(method="full", optim="adamw_torch")
    paged = _est(method="full", optim="paged_adamw_32bit")
    # paged_adamw_32bit: two fp32 states per parameter, 8 bytes × N, all in unified memory
    assert paged.paged_optimizer_bytes == pytest.approx(8 * arch.total_params, rel=1e-6)
    assert paged.breakdown["optimizer_states"] == 0
    # the same step with the states on the GPU (torch AdamW on bf16 weights: 2 × 2 bytes)
    assert torch_adamw.breakdown["optimizer_states"] == pytest.approx(4 * arch.total_params, rel=1e-6)
    assert paged.allocated_bytes < torch_adamw.allocated_bytes
    assert any("unified memory" in a for a in paged.assumptions)


def test_lora_states_of_small_adapters_stay_on_the_gpu():
    # r=8 on q_proj/v_proj of Llama-2-7B: A is 8 × 4096 = 32,768 elements and B 4096 × 8, both
    # under 1e5, so bitsandbytes allocates them with torch.zeros_like on the GPU
    assert 8 * 4096 < PAGED_MIN_ELEMENTS
    small = _est(lora_r=8, target_modules=("q_proj", "v_proj"), optim="paged_adamw_32bit")
    assert small.paged_optimizer_bytes == 0
    assert small.breakdown["optimizer_states"] == pytest.approx(8 * small.trainable_params, rel=1e-6)
    # r=32: 32 × 4096 = 131,072 elements each: every A and B paged
    big = _est(lora_r=32, target_modules=("q_proj", "v_proj"), optim="paged_adamw_32bit")
    assert 32 * 4096 >= PAGED_MIN_ELEMENTS
    assert big.paged_optimizer_bytes == pytest.approx(8 * big.trainable_params, rel=1e-6)
    assert big.breakdown["optimizer_states"] == 0


def test_the_json_report_states_the_paged_bytes():
    r = CliRunner().invoke(estimate_cmd, ["--model", LLAMA2, "--method", "full", "--optim", "paged_adamw_8bit",
                                          "--format", "json"])
    assert r.exit_code == 0, r.output
    est = json.loads(r.output)["estimate"]
    # 8-bit states: one byte per state, two states per parameter
    n = resolve_architecture(LLAMA2).total_params
    assert est["paged_optimizer_bytes"] == pytest.approx(2 * n, rel=0.01)
    assert sum(est["breakdown"].values()) == est["device_bytes"]
