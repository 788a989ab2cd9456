"""The activation term agrees with what autograd saves (bench/saved_tensors.py).

Runs only where the optional ``measure`` extra (torch, transformers, peft) is installed.
"""

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import saved_tensors  # noqa: E402


@pytest.mark.parametrize("variant", saved_tensors.VARIANTS[:6] + saved_tensors.VARIANTS[8:9],
                         ids=lambda v: f"{v.family}-{v.targets}-{v.dropout}-{v.attn}-{'gc' if v.checkpointing else 'nogc'}")
def test_activation_term_within_5_percent(variant):
    row = saved_tensors.run([variant], batch=2, seq=128)[0]
    assert abs(row["error_pct"]) <= 5.0, row


@pytest.mark.parametrize("variant", saved_tensors.QLORA_VARIANTS,
                         ids=lambda v: f"nf4{'-kbit' if v.kbit else ''}-{v.targets}-{v.dropout}-{'gc' if v.checkpointing else 'nogc'}")
def test_qlora_activation_term_within_5_percent(variant):
    """NF4 base (bitsandbytes' CPU backend), with and without the kbit fp32 up-cast."""
    pytest.importorskip("bitsandbytes")
    row = saved_tensors.run([variant], batch=2, seq=128)[0]
    assert abs(row["error_pct"]) <= 5.0, row
