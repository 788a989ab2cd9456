"""Small wording helpers shared by the rule modules (units: bytes in, GiB = 2**30 out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora.findings import MemoryFigures
from lintlora.report import gib, gpu_size as capacity  # one wording of sizes for rules and reports

__all__ = ["gib", "count", "join_words", "peak_phrase", "fits", "capacity", "HEADROOM", "weights_phrase", "at_line"]

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context
    from lintlora.training_setup import TrainingSetup

HEADROOM = 0.10
"""Share of the GPU's memory an estimate must leave free to count as "fits comfortably".

It is the accuracy target set for the estimator (issue 3: median absolute error <= 10%), so an
estimate that fits with this much room left still fits when the estimate is off by its typical
error.
"""


def count(n: int) -> str:
    """An integer with thousands separators, as peft prints parameter counts (``4,194,304``)."""
    return f"{n:,}"


def join_words(items: Iterable[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def fits(peak_bytes: int | None, capacity_bytes: int | None, headroom: float = 0.0) -> bool | None:
    """Whether ``peak_bytes`` fits in ``capacity_bytes`` leaving ``headroom`` (a share) free;
    ``None`` when either is unknown."""
    if peak_bytes is None or not capacity_bytes:
        return None
    return peak_bytes <= capacity_bytes * (1.0 - headroom)


def peak_phrase(figures: MemoryFigures) -> str | None:
    """``"estimated peak 27.9 GiB -> 18.6 GiB with the fix (RTX 3090: 24.0 GiB)"``, or ``None``
    when there is no estimate."""
    if figures.peak_bytes is None:
        return None
    text = f"estimated peak {gib(figures.peak_bytes)}"
    if figures.peak_after_fix_bytes is not None and figures.peak_after_fix_bytes != figures.peak_bytes:
        text += f" -> {gib(figures.peak_after_fix_bytes)} with the fix"
    if figures.gpu_memory_bytes:
        text += f" ({figures.gpu or 'GPU'}: {capacity(figures)})"
    return text


def weights_phrase(context: "Context", setup: "TrainingSetup", fixed: "TrainingSetup") -> str:
    """``" Estimated weights: 37.4 GiB as written (...), 12.6 GiB with the fix."``, or ``""``
    without an estimate (unknown model): the ``weights`` terms of the two estimates (the
    estimator counts the 16-bit copies torch autocast casts of float32 weights and keeps for
    backward there: ``lintlora/estimate/memory.py``)."""
    before = context.estimate(setup)
    after = context.estimate(fixed)
    if before is None or after is None:
        return ""
    wb = dict(getattr(before, "breakdown", {}) or {}).get("weights")
    wa = dict(getattr(after, "breakdown", {}) or {}).get("weights")
    if not wb or not wa or wb == wa:
        return ""
    return (f" Estimated weights: {gib(wb)} as written (float32, and the 16-bit copies autocast keeps of float32 "
            f"weights for backward), {gib(wa)} with the fix.")


def at_line(span) -> str:
    """``"line 12"``, or ``"cell 3, line 2"`` for a notebook span (``Span.cell`` set), for
    messages that point at a second place of the file."""
    if span is None:
        return ""
    return f"cell {span.cell}, line {span.line}" if span.cell is not None else f"line {span.line}"
