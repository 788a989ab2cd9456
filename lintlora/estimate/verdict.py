"""The verdict on an estimate: does it fit the GPU, and what is the most that fits.

Pure functions over :class:`~lintlora.estimate.memory.MemoryEstimate` (no I/O besides the GPU
catalog, read once by :mod:`lintlora.estimate.gpus`). Used by rule LL008 (``does-not-fit``) and
by ``lintlora estimate`` (its exit status and its "largest batch / longest sequence" line).

The verdict (:func:`verdict`) compares the *device* counter (what nvidia-smi shows:
``MemoryEstimate.device_bytes``) with the GPU's memory:

- ``"over"``: the estimate exceeds it;
- ``"tight"``: it fits but leaves less than :data:`TIGHT_HEADROOM` (10%) of the memory free.
  That share is the estimator's stated uncertainty: its accuracy target (median absolute error
  <= 10%, :data:`lintlora.rules._text.HEADROOM`, issue 3) and the allocator's slack range
  (reserved/allocated 1.05-1.15, :data:`lintlora.estimate.fit.TIGHT_HEADROOM`). Measured, the
  median absolute error over the 80 published peaks of ``tests/data/measured_peaks.csv`` is
  5.4% and the 90th percentile 18.4% (``python bench/accuracy.py``), so an estimate within 10%
  of the capacity may or may not fit: a longer batch than the estimate's or a fragmented
  allocator can tip it over;
- ``"fits"``: it fits with that headroom left; ``None`` without a GPU.

Searches (:func:`largest_batch`, :func:`longest_sequence`) re-estimate the same inputs with
one value changed and bisect: the device peak is non-decreasing in the tokens per micro-batch
(:mod:`lintlora.estimate.memory`, module docstring), so the values that fit form a prefix of
the searched range. Bounds: batch 1 to :data:`lintlora.limits.MAX_BATCH_SIZE` (1,048,576),
sequence length 1 to the model's ``max_position_embeddings`` (else
:data:`lintlora.limits.MAX_SEQ_LEN`); a search makes at most ``ceil(log2(high - low)) + 2``
estimates (about 2 ms each).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.fit import TIGHT_HEADROOM, FitOption
from lintlora.estimate.memory import EstimateInputs, MemoryEstimate, estimate_memory
from lintlora.estimate.profiles import Profile, get_profile
from lintlora.limits import MAX_BATCH_SIZE, MAX_SEQ_LEN

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.estimate.gpus import Gpu

__all__ = ["TIGHT_HEADROOM", "Largest", "verdict", "comfortable_bytes", "largest_fitting",
           "largest_batch", "longest_sequence", "smallest_gpu", "combine", "PHASE_WORDS",
           "phase_words"]

PHASE_WORDS = {
    "load": "while loading the model",
    "loss": "at the loss",
    "backward start": "at the start of the backward pass",
    "layer backward": "in the backward pass",
    "recompute": "in the backward pass, recomputing a checkpointed layer",
    "lm_head backward": "in the output layer's backward",
    "optimizer step": "at the optimizer step",
}
"""How each ``MemoryEstimate.peak_phase`` is said in messages."""


def phase_words(phase: str) -> str:
    """``"at the optimizer step"`` for ``MemoryEstimate.peak_phase``; ``"at <phase>"`` for a
    phase this table does not know."""
    return PHASE_WORDS.get(phase, f"at {phase}" if phase else "at its peak")


def comfortable_bytes(capacity_bytes: int) -> int:
    """The largest device peak that fits ``capacity_bytes`` with :data:`TIGHT_HEADROOM` free."""
    return int(capacity_bytes * (1.0 - TIGHT_HEADROOM))


def verdict(device_bytes: int | None, capacity_bytes: int | None) -> str | None:
    """``"over"``, ``"tight"`` or ``"fits"`` (module docstring); ``None`` when either is
    unknown (no GPU named, no estimate)."""
    if device_bytes is None or not capacity_bytes:
        return None
    if device_bytes > capacity_bytes:
        return "over"
    if device_bytes > comfortable_bytes(capacity_bytes):
        return "tight"
    return "fits"


@dataclass(frozen=True)
class Largest:
    """The result of a search.

    Attributes:
        field: the ``EstimateInputs`` field searched (``"batch_size"``, ``"seq_len"``).
        value: the largest value in ``[low, high]`` whose estimate is at most ``limit_bytes``;
            ``None`` when not even ``low`` is.
        low, high: the bounds searched (both included).
        limit_bytes: the device peak the value must not exceed.
        estimate: the estimate at ``value`` (``None`` with it).
        estimates: how many estimates the search made.
    """

    field: str
    value: int | None
    low: int
    high: int
    limit_bytes: int
    estimate: MemoryEstimate | None
    estimates: int

    @property
    def at_bound(self) -> bool:
        """Whether even ``high`` fits (more might, beyond the bound searched)."""
        return self.value is not None and self.value == self.high


def _estimate(inputs: EstimateInputs, arch: Architecture, profile: Profile,
              like: MemoryEstimate) -> MemoryEstimate | None:
    try:
        return estimate_memory(inputs, arch, profile, gpu=like.gpu, gpu_memory_bytes=like.gpu_memory_bytes)
    except ValueError:  # inputs the memory model refuses (none expected for a batch or length)
        return None


def largest_fitting(estimate: MemoryEstimate, arch: Architecture, field: str, low: int, high: int,
                    limit_bytes: int, profile: Profile | None = None, step: int = 1) -> Largest:
    """Bisect ``field`` of ``estimate.inputs`` over ``[low, high]`` for the largest value whose
    device peak is at most ``limit_bytes`` (the peak is non-decreasing in it: module docstring).

    ``step``: only multiples of it are tried (``low`` and ``high`` are rounded inwards to
    them), for values people write as round numbers (sequence lengths in multiples of 64); the
    search then makes at most ``ceil(log2((high - low) / step)) + 2`` estimates.

    Raises:
        ValueError: ``low < 1``, ``step < 1`` or no multiple of ``step`` in ``[low, high]``.
    """
    if step < 1 or low < 1 or high < low or -(-low // step) > high // step:
        raise ValueError(f"bad search bounds {low}..{high} (step {step})")
    profile = profile or get_profile(estimate.inputs.framework)
    count = 0
    cache: dict[int, MemoryEstimate | None] = {}
    low, high = -(-low // step) * step, (high // step) * step

    def at(n: int) -> MemoryEstimate | None:
        nonlocal count
        if n not in cache:
            count += 1
            cache[n] = _estimate(replace(estimate.inputs, **{field: n}), arch, profile, estimate)
        return cache[n]

    def ok(n: int) -> bool:
        e = at(n)
        return e is not None and e.device_bytes <= limit_bytes

    if not ok(low):
        return Largest(field, None, low, high, limit_bytes, None, count)
    if ok(high):
        return Largest(field, high, low, high, limit_bytes, at(high), count)
    good, bad = low, high  # ok(good), not ok(bad)
    while bad - good > step:  # at most ceil(log2((high - low) / step)) rounds
        mid = good + ((bad - good) // step // 2) * step
        if ok(mid):
            good = mid
        else:
            bad = mid
    return Largest(field, good, low, high, limit_bytes, at(good), count)


def _limit(estimate: MemoryEstimate, headroom: bool) -> int | None:
    cap = estimate.gpu_memory_bytes
    if not cap:
        return None
    return comfortable_bytes(cap) if headroom else cap


def largest_batch(estimate: MemoryEstimate, arch: Architecture, *, headroom: bool = False,
                  high: int | None = None, profile: Profile | None = None) -> Largest | None:
    """The largest per-device batch (same sequence length) whose estimate fits the GPU
    (leaving :data:`TIGHT_HEADROOM` free with ``headroom``), searched from 1 to ``high``
    (default :data:`lintlora.limits.MAX_BATCH_SIZE`). ``None`` without a GPU or for a load-only
    estimate."""
    limit = _limit(estimate, headroom)
    if limit is None or estimate.inputs.method == "load":
        return None
    return largest_fitting(estimate, arch, "batch_size", 1, max(1, min(high or MAX_BATCH_SIZE, MAX_BATCH_SIZE)),
                           limit, profile)


def sequence_bound(arch: Architecture) -> int:
    """The longest sequence searched: the model's ``max_position_embeddings`` (its context),
    else :data:`lintlora.limits.MAX_SEQ_LEN`."""
    ctx = getattr(arch, "max_position_embeddings", None)
    return max(1, min(int(ctx), MAX_SEQ_LEN)) if isinstance(ctx, int) and ctx > 0 else MAX_SEQ_LEN


def longest_sequence(estimate: MemoryEstimate, arch: Architecture, *, headroom: bool = False,
                     high: int | None = None, profile: Profile | None = None) -> Largest | None:
    """The longest sequence (tokens, at the estimate's batch) whose estimate fits the GPU
    (leaving :data:`TIGHT_HEADROOM` free with ``headroom``), searched from 1 to ``high``
    (default :func:`sequence_bound`). ``None`` without a GPU or for a load-only estimate."""
    limit = _limit(estimate, headroom)
    if limit is None or estimate.inputs.method == "load":
        return None
    bound = sequence_bound(arch)
    return largest_fitting(estimate, arch, "seq_len", 1, max(1, min(high or bound, bound)), limit, profile)


def smallest_gpu(device_bytes: int) -> "Gpu | None":
    """The catalogued NVIDIA GPU with the least memory that holds ``device_bytes`` with
    :data:`TIGHT_HEADROOM` to spare, else the least one that holds it at all (the estimator's
    profiles are CUDA's); the first in catalog order among equals; ``None`` when none does."""
    from lintlora.estimate.gpus import list_gpus

    gpus = [g for g in list_gpus() if g.vendor in ("NVIDIA", "")]
    for ok in (lambda g: device_bytes <= comfortable_bytes(g.memory_bytes),
               lambda g: device_bytes <= g.memory_bytes):
        fitting = [g for g in gpus if ok(g)]
        if fitting:
            return min(fitting, key=lambda g: g.memory_bytes)  # min keeps the first of equals
    return None


def _changes(base: EstimateInputs, new: EstimateInputs) -> dict:
    return {k: v for k, v in new.__dict__.items() if k != "assumed" and base.__dict__.get(k) != v}


def combine(estimate: MemoryEstimate, arch: Architecture, options: list[FitOption], limit_bytes: int,
            profile: Profile | None = None) -> tuple[list[FitOption], MemoryEstimate] | None:
    """The options of ``options`` applied together, in their order, until the estimate is at
    most ``limit_bytes`` (all of them when it never is): ``(the options used, the estimate of
    them together)``; the caller compares that estimate with the limit. An option that changes
    a field an earlier one already changed, or that lowers nothing on top of the earlier ones,
    is skipped; each used option's figures are the cumulative ones. ``None`` when no option
    applies. At most ``len(options)`` estimates."""
    profile = profile or get_profile(estimate.inputs.framework)
    base = estimate.inputs
    current: dict = {}
    used: list[FitOption] = []
    last: MemoryEstimate | None = None
    for option in options:
        change = _changes(base, option.estimate.inputs)
        if not change or any(k in current for k in change):
            continue
        trial = {**current, **change}
        est = _estimate(replace(base, **trial), arch, profile, estimate)
        if est is None or est.device_bytes >= (last or estimate).device_bytes:
            continue  # saves nothing on top of the others
        current, last = trial, est
        used.append(replace(option, device_bytes=est.device_bytes,
                            saving_bytes=estimate.device_bytes - est.device_bytes, fits=est.fits, estimate=est))
        if est.device_bytes <= limit_bytes:
            break
    return (used, last) if used and last is not None else None
