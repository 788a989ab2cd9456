"""Locations for reporters: paths relative to the working directory, notebook cells to file lines.

A notebook finding's span is ``(cell, line within the cell)``. Text output prints it as
``path:cell 3:line 5``; SARIF and GitHub annotations need a line of the ``.ipynb`` file itself,
which :func:`notebook_cell_lines` computes from the raw JSON (nbformat writes each source line
of a cell as one JSON string on its own line, so that line is where a viewer of the file shows
the code).
"""

from __future__ import annotations

import bisect
import json.decoder
import os
import re

__all__ = ["display_path", "notebook_cell_lines", "file_line", "related_text"]


def display_path(path: str, cwd: str | None = None) -> str:
    """``path`` relative to the working directory, with ``/`` separators.

    A path outside the working directory keeps its ``../`` form; on another drive (Windows) it
    stays absolute.
    """
    try:
        relative = os.path.relpath(os.path.abspath(path), cwd or os.getcwd())
    except ValueError:
        relative = os.path.abspath(path)
    return relative.replace(os.sep, "/")


# notebooks only: strings for ``re``, compiled on first use (cached by ``re``)
_WS = r"[ \t\n\r]*"
_SCALAR = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null"


class _Scanner:
    """A minimal position-aware JSON walker (strings via the standard library's scanner)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self._ws = re.compile(_WS).match
        self._scalar = re.compile(_SCALAR).match

    def ws(self) -> None:
        self.i = self._ws(self.text, self.i).end()

    def expect(self, char: str) -> None:
        self.ws()
        if self.text[self.i:self.i + 1] != char:
            raise ValueError(f"expected {char!r} at {self.i}")
        self.i += 1

    def peek(self) -> str:
        self.ws()
        return self.text[self.i:self.i + 1]

    def string(self) -> tuple[str, int]:
        self.ws()
        start = self.i
        if self.text[start:start + 1] != '"':
            raise ValueError(f"expected a string at {start}")
        value, self.i = json.decoder.scanstring(self.text, start + 1)
        return value, start

    def skip(self) -> None:
        """Skip one value of any depth without recursion."""
        depth = 0
        while True:
            char = self.peek()
            if char == '"':
                self.string()
            elif char in "[{":
                depth += 1
                self.i += 1
                continue
            elif char in "]}":
                depth -= 1
                self.i += 1
            elif char in ",:":
                self.i += 1
                continue
            else:
                m = self._scalar(self.text, self.i)
                if not m:
                    raise ValueError(f"unexpected {char!r} at {self.i}")
                self.i = m.end()
            if depth == 0:
                return

    def members(self):
        """Iterate ``(key, None)`` over an object's members; the caller reads or skips values."""
        self.expect("{")
        if self.peek() == "}":
            self.i += 1
            return
        while True:
            key, _ = self.string()
            self.expect(":")
            yield key
            char = self.peek()
            if char == ",":
                self.i += 1
                continue
            if char == "}":
                self.i += 1
                return
            raise ValueError(f"expected ',' or '}}' at {self.i}")

    def items(self):
        """Iterate over an array's items; the caller reads or skips each."""
        self.expect("[")
        if self.peek() == "]":
            self.i += 1
            return
        while True:
            yield None
            char = self.peek()
            if char == ",":
                self.i += 1
                continue
            if char == "]":
                self.i += 1
                return
            raise ValueError(f"expected ',' or ']' at {self.i}")


def related_text(related) -> str:
    """One related location of a finding (:class:`lintlora.findings.RelatedLocation`) as the
    reporters show it: its message, followed by ``(path:line)`` unless the message already
    names the file and line (``"launched by run.sh:3"``)."""
    span = related.span
    where = f"{os.path.basename(span.path)}:{span.line}"
    if where in related.message:
        return related.message
    return f"{related.message} ({display_path(span.path)}:{span.line})"


def notebook_cell_lines(text: str) -> dict[int, tuple[int, ...]]:
    """Code-cell index (1-based, code cells only) -> the file line of each source line.

    Entry ``k - 1`` of a cell's tuple is the 1-based line of the ``.ipynb`` file on which the
    cell's source line ``k`` starts. A source stored as one string puts every line on that
    string's file line. Returns ``{}`` for text that is not a notebook.
    """
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(newlines, offset - 1) + 1

    scanner = _Scanner(text)
    result: dict[int, tuple[int, ...]] = {}
    try:
        if scanner.peek() == "\ufeff":
            scanner.i += 1
        code_index = 0
        for key in scanner.members():
            if key != "cells" or scanner.peek() != "[":
                scanner.skip()
                continue
            for _ in scanner.items():
                if scanner.peek() != "{":
                    scanner.skip()
                    continue
                cell_type = None
                pieces: list[tuple[str, int]] = []
                for cell_key in scanner.members():
                    if cell_key == "cell_type" and scanner.peek() == '"':
                        cell_type, _ = scanner.string()
                    elif cell_key == "source" and scanner.peek() == '"':
                        pieces = [scanner.string()]
                    elif cell_key == "source" and scanner.peek() == "[":
                        pieces = []
                        for _ in scanner.items():
                            if scanner.peek() == '"':
                                pieces.append(scanner.string())
                            else:
                                scanner.skip()
                    else:
                        scanner.skip()
                if cell_type != "code":
                    continue
                code_index += 1
                lines: list[int] = []
                at_line_start = True
                for value, offset in pieces:
                    file_line = line_of(offset)
                    for char in value:
                        if at_line_start:
                            lines.append(file_line)
                            at_line_start = False
                        if char == "\n":
                            at_line_start = True
                if at_line_start and pieces:
                    lines.append(line_of(pieces[-1][1]))
                result[code_index] = tuple(lines)
    except (ValueError, IndexError):
        return result
    return result


def file_line(cell_lines: dict[int, tuple[int, ...]] | None, cell: int | None, line: int) -> int:
    """The ``.ipynb`` file line of ``line`` in code cell ``cell`` (``line`` itself if unmapped)."""
    if cell is None or not cell_lines or cell not in cell_lines:
        return line
    lines = cell_lines[cell]
    if not lines:
        return line
    return lines[min(max(line, 1), len(lines)) - 1]
