"""How much of one file lintlora analyses: limits counted cheaply before the expensive work.

In CI the files come from whoever opened the pull request, so a file under ``--max-file-size``
(5 MiB by default) must still be linted in a few seconds and a few hundred MB, or be refused up
front with a diagnostic naming the limit (``LL998``, an input problem like a file above the
size limit). Each limit is a count that costs far less than what it protects, and none is a
wall-clock timeout, so results do not depend on the machine or its load.

Measured on the development machine (2 cores, Python 3.11, LibCST 1.9): LibCST's parse and the
position pass cost about 50-60 µs per token (``bench/hostile.py``); CPython's own parse of a
5 MB script (the preflight and the prefilter use it) takes 15 s and 1.2 GB. Hence:

- :data:`MAX_PYTHON_TOKENS`: 50,000 tokens of one script or of a notebook's joined code cells
  (about 8,000 lines of ordinary training code, 4,000 of dense library code; real training
  scripts have a few hundred to a few thousand lines; at the limit a file takes about 3-4 s
  here, two thirds of it in LibCST), and :data:`MAX_PYTHON_LINES` = 50,000 lines (blank and comment lines
  cost LibCST nodes too). Counted with one regular-expression pass that stops at the limit
  (:func:`python_too_large`), before CPython or LibCST parse anything. A file beyond them that
  names no library lintlora reads cannot hold a setup and is skipped quietly (as the prefilter
  does); any other is refused with ``LL998``.
- :data:`MAX_NOTEBOOK_CELLS`: 10,000 cells (a real notebook has at most a few hundred), counted
  after the JSON is decoded and before the cells are joined.
- :data:`MAX_SETUPS`: 64 training setups per file (four 16-run sweeps): the rules and the
  estimator run once per setup, and each setup holds every call of its file, so the work of a
  file is setups times calls. The first 64 in source order are analysed and a notice says so.

The limits are for the default ``--max-file-size`` (5 MiB). A user who raises it asks for
larger files to be linted and accepts the time: every limit then grows in proportion
(:func:`scaled_for`, which the engine enters around each extraction; :func:`limit` reads it).
Lowering the size limit does not lower them.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import sys
from typing import Iterator

__all__ = ["MAX_PYTHON_TOKENS", "MAX_PYTHON_LINES", "MAX_NOTEBOOK_CELLS", "MAX_SETUPS",
           "python_too_large", "setups_left_out", "long_strings", "STRING_OR_COMMENT",
           "scaled_for", "limit"]

MAX_PYTHON_TOKENS = 50_000
"""Tokens (names, numbers, strings, comments, operators) of Python source analysed at most."""
MAX_PYTHON_LINES = 50_000
"""Lines of Python source analysed at most."""
MAX_NOTEBOOK_CELLS = 10_000
"""Cells of one notebook analysed at most."""
MAX_SETUPS = 64
"""Training setups of one file analysed at most (the first ones in source order)."""

_SCALE: contextvars.ContextVar[float] = contextvars.ContextVar("lintlora_limit_scale",
                                                               default=1.0)


@contextlib.contextmanager
def scaled_for(max_file_bytes: int) -> Iterator[None]:
    """Within the block, every limit is multiplied by ``max_file_bytes`` over the default
    size limit (5 MiB), when that is more than 1."""
    from lintlora.settings import DEFAULT_MAX_FILE_BYTES

    token = _SCALE.set(max(1.0, max_file_bytes / DEFAULT_MAX_FILE_BYTES))
    try:
        yield
    finally:
        _SCALE.reset(token)


def limit(base: int) -> int:
    """A limit as it applies now: ``base`` (one of the ``MAX_*`` above) times the scale of
    :func:`scaled_for`."""
    return int(base * _SCALE.get())

_LOOP = "*+" if sys.version_info >= (3, 11) else "*"
"""Possessive repetition where the ``re`` module has it (Python 3.11+): the same matches,
without a backtracking record per repetition (a 4 MB string of escapes cost ``re`` 250 MB
otherwise; on 3.10 the scan is still linear in time)."""

_ONE_LINE_STRING = (rf"[rRbBuUfF]{{0,2}}'(?:\\[\s\S]|[^'\\\n]){_LOOP}'?"
                    rf'|[rRbBuUfF]{{0,2}}"(?:\\[\s\S]|[^"\\\n]){_LOOP}"?')
"""A one-line string literal, closed or not (one left open runs to the end of its line)."""

_TOKEN = re.compile(
    r"#[^\n]*"                                      # a comment
    rf"|{_ONE_LINE_STRING}"                         # a one-line string
    r"|\w+"                                         # a name or a number
    r"|[^\w\s]")                                    # an operator or a bracket
"""An estimate of Python's tokens that costs one pass: a comment or a one-line string is one
token. Every alternative matches wherever it starts, so the pattern never fails after scanning
ahead and the pass is linear whatever the text (a line of ``\\"`` repeated made an earlier
form quadratic). Triple-quoted strings are skipped before (:func:`long_strings`): a long
prompt costs LibCST one node, while its words would count here."""

STRING_OR_COMMENT = re.compile(rf"#[^\n]*|{_ONE_LINE_STRING}")
"""A comment or a one-line string literal (for :func:`lintlora.extract.pysyntax`)."""


def long_strings(source: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each triple-quoted string (``str.find`` only: linear)."""
    spans = []
    i = 0
    while True:
        a, b = source.find("'''", i), source.find('"""', i)
        if a < 0 and b < 0:
            return spans
        start, quote = (a, "'''") if b < 0 or 0 <= a < b else (b, '"""')
        end = source.find(quote, start + 3)
        if end < 0:
            spans.append((start, len(source)))
            return spans
        spans.append((start, end + 3))
        i = end + 3


def _tokens_beyond(source: str, limit: int) -> bool:
    """Whether ``source`` has more than ``limit`` tokens (:data:`_TOKEN`); stops at the limit.

    The text between triple quotes is skipped (found with ``str.find``); a quote inside a
    comment or a one-line string can mis-pair them, which only moves the estimate."""
    count = 0
    pos = 0
    for start, end in long_strings(source) + [(len(source), len(source))]:
        for _ in _TOKEN.finditer(source, pos, start):
            count += 1
            if count > limit:
                return True
        count += 1  # the long string itself
        pos = end
    return count - 1 > limit


def python_too_large(source: str, what: str = "file") -> str | None:
    """Why Python ``source`` is too large to analyse (the message of an ``LL998``), or
    ``None``. ``what`` names the source in the message (``"file"``, ``"notebook's code"``).
    Linear in the source and cheap: a line count, then a token count that stops at the limit
    (a short file is not scanned at all)."""
    lines = source.count("\n") + 1
    most_lines, most_tokens = limit(MAX_PYTHON_LINES), limit(MAX_PYTHON_TOKENS)
    if lines > most_lines:
        return (f"too large to analyse: the {what} has {lines:,} lines of Python, above "
                f"lintlora's limit of {most_lines:,}; nothing in it was checked")
    if len(source) > most_tokens and _tokens_beyond(source, most_tokens):
        return (f"too large to analyse: the {what} has more than {most_tokens:,} Python "
                f"tokens (names, numbers, strings, operators; about "
                f"{round(most_tokens / 6000) * 1000:,} lines of ordinary code), lintlora's "
                "limit; nothing in it was checked")
    return None


def setups_left_out(trainer_calls: int) -> str:
    """The notice for a file with more training setups than :data:`MAX_SETUPS`."""
    return (f"only the first {limit(MAX_SETUPS)} training setups were analysed, lintlora's "
            f"limit per file (the file has {trainer_calls:,} trainer calls); the others were "
            "not checked")
