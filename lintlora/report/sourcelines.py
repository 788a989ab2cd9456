"""The text of a linted file's lines, for reporters whose positions are not lintlora's own.

lintlora's columns count characters (:class:`lintlora.training_setup.Span`); reviewdog's
columns count UTF-8 bytes (``proto/rdf/reviewdog.proto``, ``message Position``: "Column number,
starting at 1 (byte count in UTF-8)"), and the GitLab Code Quality fingerprint rests on a
line's content, not its number (:mod:`lintlora.report.gitlab`). :class:`SourceLines` reads each
file once per report, bounded and without following links
(:func:`lintlora.autofix.read_source_text`: the fix reader, which decodes a file as Python or
the YAML loader would), and splits it at ``\\r\\n``, ``\\r`` and ``\\n`` as the fix applier and
Python's tokenizer number lines (:mod:`lintlora.fixing`). A file that cannot be read (gone,
too large, a link, undecodable) has no lines: callers then leave columns out.
"""

from __future__ import annotations

import re

__all__ = ["SourceLines", "utf8_column"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def utf8_column(line_text: str | None, column: int) -> int | None:
    """The 1-based UTF-8 byte column of the 1-based character ``column`` of ``line_text``
    (``"a𐐀b"``: character column 3, the ``b``, is byte column 6), or ``None`` when the line is
    unknown. A column past the line's end (an exclusive end at the line end, or beyond) counts
    one byte per character past it. Characters that cannot be encoded (a lone surrogate from a
    file name or an undecodable byte) count as the three bytes ``surrogatepass`` gives them."""
    if line_text is None:
        return None
    column = max(int(column), 1)
    head = line_text[:column - 1]
    extra = (column - 1) - len(head)
    return len(head.encode("utf-8", "surrogatepass")) + extra + 1


class SourceLines:
    """Lines of the files a report names, read on first use and kept for the report.

    ``line(path, n)`` is the text of 1-based line ``n`` without its line break, or ``None``
    (no such line, or the file cannot be read). ``max_files`` bounds how many files are kept
    (each one bounded by the fix reader's size limit)."""

    def __init__(self, max_files: int = 4096) -> None:
        self._lines: dict[str, list[str] | None] = {}
        self._max_files = max_files

    def _read(self, path: str) -> list[str] | None:
        if path in self._lines:
            return self._lines[path]
        lines: list[str] | None = None
        if len(self._lines) < self._max_files:
            from lintlora.autofix import read_source_text

            try:
                text = read_source_text(path).text
            except Exception:  # noqa: BLE001 - OSError, FixError, a decoding error: no lines
                text = None
            if text is not None:
                lines = _LINE_BREAK.split(text)
        self._lines[path] = lines
        return lines

    def line(self, path: str, number: int) -> str | None:
        """Line ``number`` (1-based) of ``path``, or ``None``."""
        lines = self._read(path)
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]
