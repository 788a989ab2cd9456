"""Numbers on the command line: bounded, and refused with a usage error naming the option.

Every number an option takes is the user's input (:mod:`lintlora.limits` gives the ranges and
why): out of range, too long to read, not finite or not a number, it is a usage error (exit
status 2) naming the option, never an overflow in the estimator.
"""

from __future__ import annotations

import math
import re
from typing import Any

import click

from lintlora.limits import MAX_NUMBER_CHARS

__all__ = ["BoundedInt", "FiniteFloatRange", "parse_count", "check_length"]


def check_length(text: str, what: str) -> None:
    """Refuse a number's text longer than :data:`lintlora.limits.MAX_NUMBER_CHARS`.

    Raises:
        ValueError: naming ``what`` it should have been and the length.
    """
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"not {what}: {text[:24]!r}... is {len(text):,} characters long")


class BoundedInt(click.IntRange):
    """``click.IntRange(min, max)`` that also refuses a text longer than
    :data:`lintlora.limits.MAX_NUMBER_CHARS` before converting it (Python refuses integers of
    more than 4,300 digits, and click would repeat the whole text in its message)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                check_length(value.strip(), "an integer")
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that refuses ``nan`` (which compares false with both bounds, so
    click lets it through: ``--dropout nan`` reached the JSON report as ``NaN``, which is not
    JSON) and a text longer than :data:`lintlora.limits.MAX_NUMBER_CHARS`."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                check_length(value.strip(), "a number")
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


_COUNT = r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*"  # compiled on use
_COUNT_UNITS = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_count(text: str, maximum: float | None = None) -> float:
    """``"7B"`` -> 7e9, ``"1.5b"``, ``"500M"``, ``"7e9"``, ``"20k"`` (decimal units).

    Args:
        maximum: the largest count accepted (``None``: any finite count).

    Raises:
        ValueError: not a positive, finite count (``"1e400"`` is infinite as a float), longer
            than :data:`lintlora.limits.MAX_NUMBER_CHARS`, or above ``maximum``.
    """
    check_length(text, "a count")
    m = re.fullmatch(_COUNT, text)
    if not m:
        raise ValueError(f"not a count: {text!r} (examples: 7B, 500M, 7e9)")
    value = float(m.group(1)) * _COUNT_UNITS[m.group(2).lower()]
    if not math.isfinite(value) or (maximum is not None and value > maximum):
        limit = f"{maximum:.0e}".replace("e+", "e") if maximum is not None else "a float"
        raise ValueError(f"{text.strip()!r} is too large (at most {limit})")
    if value <= 0:
        raise ValueError(f"must be positive: {text!r}")
    return value
