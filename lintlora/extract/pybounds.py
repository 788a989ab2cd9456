"""Bounds on the values the resolver computes from a script (issue 12: resource bombs).

The resolver (:mod:`lintlora.extract.pyresolve`) folds the script's own arithmetic and string
operations, and the script is written by whoever opened the pull request: ``a = 10**64;
b = a**64; ...`` or ``'a' * (4 * 10**9)`` must not take minutes or gigabytes. Every value is
therefore bounded, and every operation that can grow a value is estimated from its operands
*before* it is computed; beyond a bound the value is unresolved (``Unknown`` with the reason
from this module), never an exception.

The bounds, and why they are enough for what lintlora reads from a script (batch sizes,
sequence lengths, ranks, token counts, learning rates, flags, dtype names, model ids, paths,
target-module lists):

- integers: :data:`MAX_INT_BITS` = 128 bits (magnitude below 2**128, about 3.4e38): a token
  count, a parameter count or a seed needs at most 64 bits; twice that leaves room for
  intermediate products. Beyond it CPython's big-integer arithmetic is what makes
  ``a**64`` chains and ``1 << 10**10`` expensive.
- strings and bytes: :data:`MAX_STR` = 10,000 characters (the resolver's limit before this
  module): a model id, a path or a module name is under 200; a prompt template the script
  builds is not a setting lintlora models.
- containers: :data:`MAX_COST` = 65,536 units for one value, counting one unit per scalar and
  container and one per character of its strings (a ``target_modules`` list is about 100 units,
  a JSON config of a few hundred keys a few thousand), nested at most :data:`MAX_NEST` = 32
  levels. The cost counts a shared item each time it appears, as any walk of the value would
  (``t1 = (t0, t0)`` doubles), so comparisons, ``str()`` and hashing of a bounded value are
  bounded too.
- the whole file: :data:`FILE_BUDGET` = 2**24 cost units of computed values (about 16 million
  characters or items, a few hundred MB at most), so a file cannot multiply bounded values by
  computing many of them; beyond it computed values are unresolved.

Widths in formatting (``'%0999999999d' % 1``, ``'{:999999999}'.format(1)``) are bounded by
:data:`MAX_WIDTH`. Each function here takes plain operands already within the bounds and is
cheap: linear in the size of its operands at most.
"""

from __future__ import annotations

import re
import string
from typing import Any

__all__ = ["MAX_INT_BITS", "MAX_STR", "MAX_COST", "MAX_NEST", "MAX_WIDTH", "FILE_BUDGET",
           "INT_REFUSED", "STR_REFUSED",
           "measure", "cost", "beyond", "binop_refusal", "format_refusal", "percent_refusal",
           "replace_refusal", "join_refusal"]

MAX_INT_BITS = 128
"""Largest integer the resolver keeps, in bits of its magnitude (see the module docstring)."""
MAX_STR = 10_000
"""Longest string or bytes value the resolver keeps, in characters (bytes)."""
MAX_COST = 65_536
"""Largest plain value the resolver keeps, in cost units (:func:`cost`)."""
MAX_NEST = 32
"""Deepest nesting of tuples and dicts in one value."""
MAX_WIDTH = 1_000
"""Largest field width or precision a format may ask for."""
FILE_BUDGET = 2**24
"""Cost units of computed values one file may produce in all (see the module docstring)."""

_SCALARS = (bool, int, float, type(None))
_INT_REASON = f"an integer beyond 2**{MAX_INT_BITS}"
_STR_REASON = f"longer than {MAX_STR:,} characters"
_SIZE_REASON = f"larger than {MAX_COST:,} items and characters"
_INT_REFUSED = INT_REFUSED = f"{_INT_REASON}, lintlora's bound for a setting"
"""Why an integer beyond :data:`MAX_INT_BITS` is unresolved."""
_STR_REFUSED = STR_REFUSED = f"a string {_STR_REASON}, lintlora's bound for a setting"
"""Why a string longer than :data:`MAX_STR` is unresolved."""
_SIZE_REFUSED = f"a value {_SIZE_REASON}, lintlora's bound for a setting"
_NEST_REFUSED = f"a value nested more than {MAX_NEST} levels deep, lintlora's bound"


def measure(value: Any, limit: int = MAX_COST) -> int | str:
    """The cost of a plain value, or why it is refused (a reason for ``Unknown``).

    The cost is one unit per scalar, tuple or dict (keys and values both counted), plus one
    per character of each ``str`` and byte of each ``bytes``. A value is refused when it is not
    plain data (anything but ``None``, bools, numbers, strings, bytes, tuples, and dicts with
    string or integer keys) or beyond a bound: cost above ``limit``, an integer of more than
    :data:`MAX_INT_BITS` bits, a string longer than :data:`MAX_STR`, nesting deeper than
    :data:`MAX_NEST`. Iterative, and stops as soon as ``limit`` is passed: at most ``limit``
    steps whatever the value (a tree of shared tuples included).
    """
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        total += 1
        if total > limit:
            return _SIZE_REFUSED
        t = type(v)
        if t is int:
            if v.bit_length() > MAX_INT_BITS:
                return _INT_REFUSED
        elif t in _SCALARS:
            continue
        elif isinstance(v, (str, bytes)):
            if len(v) > MAX_STR:
                return _STR_REFUSED
            total += len(v)
        elif t is tuple or t is dict:
            if depth >= MAX_NEST:
                return _NEST_REFUSED
            if t is tuple:
                stack.extend((x, depth + 1) for x in v)
                continue
            for k, x in v.items():
                if not isinstance(k, (str, int)):
                    return "not plain data"
                stack.append((k, depth + 1))
                stack.append((x, depth + 1))
        else:  # an object, or an int/float subclass (an enum member): not data
            return "not plain data"
    return total if total <= limit else _SIZE_REFUSED


def cost(value: Any, limit: int = MAX_COST) -> int | None:
    """The cost of a plain value (:func:`measure`), or ``None`` when it is refused."""
    size = measure(value, limit)
    return size if isinstance(size, int) else None


def beyond(reason: str) -> str:
    """The wording of a refused operation."""
    return f"not computed: the result would be {reason}"


def _is_int(v: Any) -> bool:
    return type(v) is int or type(v) is bool


def _seq_refusal(seq: Any, times: int) -> str | None:
    if times <= 0:
        return None
    if isinstance(seq, (str, bytes)) and len(seq) * times > MAX_STR:
        return beyond(_STR_REASON)
    size = cost(seq)
    if size is None or (size - 1) * times + 1 > MAX_COST:
        return beyond(_SIZE_REASON)
    return None


def binop_refusal(op: str, a: Any, b: Any) -> str | None:
    """Why ``a <op> b`` is not computed (the result would be beyond a bound), or ``None``.

    ``op`` is the LibCST operator class name (``Multiply``, ``Power``, ``LeftShift``,
    ``Add``...); ``a`` and ``b`` are plain values within the bounds. Only operators that can
    grow a value beyond its operands' sizes are estimated; the result of the others is checked
    by :func:`cost` after it is computed, which is cheap for bounded operands.
    """
    if op == "Multiply":
        if _is_int(a) and _is_int(b):
            if a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
                return beyond(_INT_REASON)
            return None
        if _is_int(b) and isinstance(a, (str, bytes, tuple)):
            return _seq_refusal(a, b)
        if _is_int(a) and isinstance(b, (str, bytes, tuple)):
            return _seq_refusal(b, a)
        return None
    if op == "Power":
        if _is_int(a) and _is_int(b) and b > 0 and abs(a) > 1:
            # |a|**b >= 2**((bits(a) - 1) * b); computed only when that is within the bound,
            # so the result has at most bits(a) * b <= 2 * (MAX_INT_BITS + 1) bits
            if (a.bit_length() - 1) * b > MAX_INT_BITS:
                return beyond(_INT_REASON)
        return None
    if op == "LeftShift":
        if _is_int(a) and _is_int(b) and a and b > 0 and a.bit_length() + b > MAX_INT_BITS + 1:
            return beyond(_INT_REASON)
        return None
    if op == "Add":
        if isinstance(a, (str, bytes)) and isinstance(b, (str, bytes)):
            return beyond(_STR_REASON) if len(a) + len(b) > MAX_STR else None
        if isinstance(a, tuple) and isinstance(b, tuple):
            ca, cb = cost(a), cost(b)
            if ca is None or cb is None or ca + cb > MAX_COST:
                return beyond(_SIZE_REASON)
        return None
    if op == "Modulo" and isinstance(a, (str, bytes)):
        return percent_refusal(a, b)
    return None


def _widths_refusal(spec: str) -> str | None:
    if "{" in spec or "*" in spec:
        return "not computed: a width taken from another value"
    if any(int(n) > MAX_WIDTH for n in re.findall(r"\d+", spec)):
        return beyond(f"padded to a width above {MAX_WIDTH:,}")
    return None


def _piece(value: Any, conversion: str | None) -> int:
    """An upper bound of the characters one replacement field of ``value`` produces
    (without padding)."""
    try:
        return len(repr(value) if conversion in ("r", "a") else str(value)) * (
            6 if conversion == "a" else 1)
    except Exception:  # noqa: BLE001 - plain data always has a str/repr
        return MAX_STR + 1


_PERCENT_SPEC = re.compile(r"%(\([^)]*\))?([#0 +\-]*)(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)


def percent_refusal(fmt: str | bytes, args: Any) -> str | None:
    """Why ``fmt % args`` (printf-style formatting) is not computed, or ``None``.

    The result has at most the format's own characters plus, for each conversion, the width
    it asks for (each bounded by :data:`MAX_WIDTH`) and the longest ``str``/``repr`` among the
    arguments."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    values = (tuple(args) if isinstance(args, tuple) else
              tuple(args.values()) if isinstance(args, dict) else (args,))
    longest = max((_piece(v, "r") for v in values), default=0)
    total = len(text)
    for m in _PERCENT_SPEC.finditer(text):
        if m.group(5) == "%":
            continue
        width, precision = m.group(3), m.group(4)
        if "*" in (width, precision):
            return "not computed: a width taken from another value"
        pad = max(int(width or 0), int(precision or 0))
        if pad > MAX_WIDTH:
            return beyond(f"padded to a width above {MAX_WIDTH:,}")
        total += pad + longest
        if total > MAX_STR:
            return beyond(_STR_REASON)
    return None


def format_refusal(fmt: str, args: tuple) -> str | None:
    """Why ``fmt.format(*args)`` is not computed, or ``None``: a format that cannot be parsed
    or names an attribute (``{0.attr}``), a nested or too wide format spec, or a result that
    could be longer than :data:`MAX_STR` (the literal text plus, for each field, its width and
    the longest ``str``/``repr`` of the arguments)."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return "not computed: the format is invalid"
    longest = max((_piece(v, "r") for v in args), default=0)
    total = 0
    for literal, name, spec, _conversion in fields:
        total += len(literal)
        if name is None:
            continue
        if "." in name:
            return "not computed: the format reads an attribute"
        refusal = _widths_refusal(spec or "")
        if refusal is not None:
            return refusal
        widths = [int(n) for n in re.findall(r"\d+", spec or "")]
        total += longest + max(widths, default=0)
        if total > MAX_STR:
            return beyond(_STR_REASON)
    return None


def replace_refusal(s: str, args: tuple) -> str | None:
    """Why ``s.replace(old, new[, count])`` is not computed, or ``None``: the result's length
    is known from the number of occurrences before replacing."""
    if len(args) < 2 or not all(isinstance(x, str) for x in args[:2]):
        return None  # a TypeError, reported as such
    old, new = args[0], args[1]
    found = s.count(old) if old else len(s) + 1
    if len(args) > 2 and _is_int(args[2]) and args[2] >= 0:
        found = min(found, args[2])
    if len(s) + found * (len(new) - len(old)) > MAX_STR:
        return beyond(_STR_REASON)
    return None


def join_refusal(sep: str, args: tuple) -> str | None:
    """Why ``sep.join(items)`` is not computed, or ``None`` (the length is the items' plus the
    separators')."""
    if len(args) != 1:
        return None
    items = args[0]
    if isinstance(items, str):
        n = len(items)
        total = n + len(sep) * max(n - 1, 0)
    elif isinstance(items, tuple):
        if not all(isinstance(x, str) for x in items):
            return None  # a TypeError, reported as such
        total = sum(len(x) for x in items) + len(sep) * max(len(items) - 1, 0)
    else:
        return None
    return beyond(_STR_REASON) if total > MAX_STR else None
