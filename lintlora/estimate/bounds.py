"""The largest value of each estimator input read from a training setup (issue 12, item 10).

A script or a config can ask for ``per_device_train_batch_size=10**30`` or ``r=2**120`` (the
resolver keeps integers up to 2**128; YAML dialects up to 10**15): multiplied together such
values leave float range (an ``OverflowError``) or give a peak of 10**50 GiB that means nothing.
Each bound is far above any real run and low enough that the products the estimator forms
(batch x sequence x vocabulary x 4 bytes is at most 2**20 x 2**24 x 2**18 x 4 = 2**64) stay
exact in a float. A value beyond its bound is treated as unknown, and the estimate says so with
the value and where it was written, as for any other value it cannot use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_LORA_R", "MAX_BATCH", "MAX_SEQ_LEN", "beyond_bound", "shown", "out_of_range"]

MAX_LORA_R = 2**17
"""131,072: a LoRA rank above the widest layer of any model in the catalog (36,864)."""
MAX_BATCH = 2**20
"""1,048,576 sequences per device per step."""
MAX_SEQ_LEN = 2**24
"""16,777,216 tokens per sequence (the longest context windows in use are 1-10 million)."""


def beyond_bound(value: Any, bound: int) -> bool:
    """Whether ``value`` is a number (not a bool) above ``bound`` or not finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not (value <= bound)  # NaN compares false: beyond too


def out_of_range(name: str, value: Any, bound: int, where: str = "") -> str:
    """The sentence for a value beyond its bound: ``per_device_train_batch_size 10**30 (line
    12) is beyond lintlora's bound of 1,048,576``."""
    at = f" ({where})" if where else ""
    return f"{name} {shown(value)}{at} is beyond lintlora's bound of {bound:,}"


def shown(value: Any) -> str:
    """A number as a message shows it: at most 24 characters (``1.2e+30``, ``2**120`` as
    ``1329227995784915872903...``)."""
    text = f"{value:,}" if isinstance(value, int) and value < 10**15 else repr(value)
    return text if len(text) <= 24 else text[:21] + "..."
