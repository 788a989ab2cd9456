"""``--precision`` (weights and compute dtype, litgpt's names too) and ``--assume-version
torchao=...`` on the flag path."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.command import estimate_cmd
from lintlora.estimate.versions import parse_assume_version, torchao_unchunked

LLAMA2 = "meta-llama/Llama-2-7b-hf"


def _est(*flags):
    r = CliRunner().invoke(estimate_cmd, ["--model", LLAMA2, "--seq-len", "512", *flags, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["estimate"]


@pytest.mark.parametrize("flag,weight_bytes", [("fp32", 4), ("32-true", 4), ("bf16-true", 2), ("fp16", 2)])
def test_precision_sets_the_weight_dtype(flag, weight_bytes):
    n = resolve_architecture(LLAMA2).total_params
    est = _est("--precision", flag)
    assert est["breakdown"]["weights"] == pytest.approx(weight_bytes * n, rel=1e-3)


def test_mixed_precision_keeps_float32_weights_and_their_autocast_copies():
    n = resolve_architecture(LLAMA2).total_params
    est = _est("--precision", "bf16-mixed")
    assert est["inputs"]["weight_dtype"] == "float32" and est["inputs"]["compute_dtype"] == "bfloat16"
    # float32 weights, plus the bf16 copies autocast makes of the block linears (kept for backward)
    assert est["breakdown"]["weights"] > 4 * n
    assert any("autocast copies" in a for a in est["assumptions"])


def test_mixed_precision_full_fine_tune_keeps_fp32_master_weights():
    n = resolve_architecture(LLAMA2).total_params
    mixed = _est("--method", "full", "--precision", "bf16-mixed")
    true16 = _est("--method", "full", "--precision", "bf16-true")
    assert mixed["inputs"]["master_fp32"] is True and true16["inputs"]["master_fp32"] is False
    # fp32 gradients (4 B per parameter) against bf16 ones (2 B) at the optimizer step
    assert mixed["breakdown"]["gradients"] == pytest.approx(4 * n, rel=0.01)
    assert true16["breakdown"]["gradients"] == pytest.approx(2 * n, rel=0.01)


def test_torchao_is_a_version_the_estimate_reads():
    assert parse_assume_version("torchao=0.1.0") == ("torchao", "0.1.0")
    assert torchao_unchunked((("torchao", "0.1.0"),)) is True
    assert torchao_unchunked((("torchao", "0.2.0"),)) is False
    assert torchao_unchunked(()) is False  # the default release chunks
