"""Which lines of a file changed, computed from the two versions' bytes, in bounded time.

``--diff-only`` compares a base blob with the bytes lintlora read itself, rather than letting
git read the working tree (:mod:`lintlora.gitdiff`). The result has the meaning of the new
side of ``git diff -U0``: the 1-based numbers of the new lines that were added or replaced,
and for a pure deletion the lines on either side of it (a finding caused by removing an
argument still shows).

Lines are split at ``\\n``; a trailing ``\\r`` and a missing final newline do not count as a
change (git's ``core.autocrlf``/``eol`` conversion is not applied here, so a CRLF checkout of an
LF blob would otherwise look wholly changed).

Time is bounded, not quadratic: the common prefix and suffix are stripped (linear), lines that
occur once in each side anchor a patience-style split (the longest increasing run of
anchors, ``O(n log n)``), and only the remaining gaps go to :class:`difflib.SequenceMatcher`,
each while its ``old x new`` line product fits :data:`EXACT_CELLS` and in all at most
:data:`EXACT_BUDGET` cells. A gap beyond those bounds (no unique line to anchor on, or the budget
spent) counts as wholly replaced: the answer can only grow (more lines marked changed, so more
findings kept), never miss a change.

Pure Python, stdlib only; it imports nothing of lintlora.
"""

from __future__ import annotations

import bisect
from collections import Counter

__all__ = ["split_lines", "changed_new_lines", "changed_regions", "EXACT_CELLS", "EXACT_BUDGET"]

EXACT_CELLS = 40_000
"""Largest ``old lines x new lines`` product of one gap given to difflib."""

EXACT_BUDGET = 4_000_000
"""Total ``old x new`` cells given to difflib for one file."""

_ANCHOR_PASSES = 8
"""Anchor searches may read at most this many times the lines of both sides, in all."""


def split_lines(data: bytes) -> list[bytes]:
    """``data``'s lines, without their ``\\n`` or ``\\r\\n`` (a final newline adds no line)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _unique_anchors(a: list[bytes], a_lo: int, a_hi: int, b: list[bytes], b_lo: int,
                    b_hi: int) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` with ``a[i] == b[j]`` a line that occurs once in ``a[a_lo:a_hi]`` and
    once in ``b[b_lo:b_hi]``, the longest run increasing in both ``i`` and ``j``."""
    count_a = Counter(a[a_lo:a_hi])
    count_b = Counter(b[b_lo:b_hi])
    where_b = {b[j]: j for j in range(b_lo, b_hi) if count_b[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(a_lo, a_hi)
             if count_a[a[i]] == 1 and a[i] in where_b]
    if not pairs:
        return []
    # longest increasing subsequence of the j's (pairs are in increasing i): patience sorting
    tails: list[int] = []        # tails[k]: j of the smallest tail of a run of length k + 1
    tail_index: list[int] = []   # its index in pairs
    previous = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[k] = j
            tail_index[k] = index
        previous[index] = tail_index[k - 1] if k else -1
    run = []
    index = tail_index[-1]
    while index != -1:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run


def changed_regions(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int, int]]:
    """The differing regions ``(a_lo, a_hi, b_lo, b_hi)`` (0-based, half-open) between the
    line lists ``a`` (old) and ``b`` (new), in no particular order; see the module's notes on
    the bounds."""
    regions: list[tuple[int, int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    anchor_budget = _ANCHOR_PASSES * (len(a) + len(b))
    exact_budget = EXACT_BUDGET
    while stack:
        a_lo, a_hi, b_lo, b_hi = stack.pop()
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            a_lo += 1
            b_lo += 1
        while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
            a_hi -= 1
            b_hi -= 1
        if a_lo == a_hi and b_lo == b_hi:
            continue
        cells = (a_hi - a_lo) * (b_hi - b_lo)
        if cells == 0:
            regions.append((a_lo, a_hi, b_lo, b_hi))
            continue
        if cells <= EXACT_CELLS and cells <= exact_budget:
            exact_budget -= cells
            import difflib  # only when a file changed (start-up: test_startup)

            matcher = difflib.SequenceMatcher(None, a[a_lo:a_hi], b[b_lo:b_hi], autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag != "equal":
                    regions.append((a_lo + i1, a_lo + i2, b_lo + j1, b_lo + j2))
            continue
        anchor_budget -= (a_hi - a_lo) + (b_hi - b_lo)
        anchors = _unique_anchors(a, a_lo, a_hi, b, b_lo, b_hi) if anchor_budget >= 0 else []
        if not anchors:
            regions.append((a_lo, a_hi, b_lo, b_hi))
            continue
        previous_a, previous_b = a_lo, b_lo
        for i, j in anchors:
            stack.append((previous_a, i, previous_b, j))
            previous_a, previous_b = i + 1, j + 1
        stack.append((previous_a, a_hi, previous_b, b_hi))
    return regions


def changed_new_lines(old: bytes, new: bytes) -> set[int]:
    """The 1-based lines of ``new`` that differ from ``old`` (``git diff -U0``'s new side):
    added or replaced lines, and for a pure deletion after new line ``k`` the lines ``k`` and
    ``k + 1`` (line 1 for a deletion at the top). Empty when the two have the same lines."""
    if old == new:
        return set()
    changed: set[int] = set()
    for _a_lo, _a_hi, b_lo, b_hi in changed_regions(split_lines(old), split_lines(new)):
        if b_hi > b_lo:
            changed.update(range(b_lo + 1, b_hi + 1))
        else:
            changed.update((max(b_lo, 1), b_lo + 1))
    return changed
