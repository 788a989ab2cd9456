"""Databricks notebook sources: recognising them and splitting them into cells.

Databricks exports a notebook (and stores it in Repos) as a ``.py`` file whose first line is
``# Databricks notebook source``; cells are separated by ``# COMMAND ----------`` lines, each
followed (and preceded) by one blank line, and a non-Python cell's lines are written as
``# MAGIC ...`` comments (``# MAGIC %md``, ``# MAGIC %sql``). This module only splits the
text (pure string work, no parsing, no imports beyond the standard library), so the engine and
the suppression reader can ask "is this a notebook, and where are its cells?" cheaply; reading
the code is :func:`lintlora.extract.notebook.extract_databricks`.
"""

from __future__ import annotations

__all__ = ["DATABRICKS_HEADER", "is_databricks_source", "databricks_cells", "databricks_cell_lines"]

DATABRICKS_HEADER = "# Databricks notebook source"
_DATABRICKS_SEPARATOR = "# COMMAND ----------"


def is_databricks_source(text: str) -> bool:
    """Whether a ``.py`` file is a Databricks notebook source export: its first line is
    ``# Databricks notebook source`` (what Databricks writes on export and in Repos)."""
    head = text[:200].lstrip("\ufeff")
    return head.split("\n", 1)[0].rstrip("\r").rstrip() == DATABRICKS_HEADER


def databricks_cells(text: str) -> list[tuple[int, list[str]]]:
    """The cells of a Databricks source as ``(first file line, lines)``, in order: the lines
    between the header and the first ``# COMMAND ----------`` separator, then between
    separators. The one blank line Databricks writes after each separator (and the one before
    it) is not part of the cell, so cell lines count as the notebook shows them."""
    lines = text.lstrip("\ufeff").split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if lines and lines[-1] == "":
        lines.pop()
    cells: list[tuple[int, list[str]]] = []
    start = 2  # 1-based file line of the current cell's first line (after the header)
    current: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip() == _DATABRICKS_SEPARATOR:
            cells.append((start, current))
            current, start = [], number + 1
            continue
        if not current and number == start and line.strip() == "" and cells:
            start = number + 1  # the blank line after a separator
            continue
        current.append(line)
    cells.append((start, current))
    out = []
    for first, body in cells:
        while body and body[-1].strip() == "":
            body = body[:-1]
        out.append((first, body or [""]))
    return out


def databricks_cell_lines(text: str) -> dict[int, tuple[int, ...]]:
    """Cell index (1-based) -> the file line of each of its lines (for reporters that point
    at file lines: SARIF, GitHub annotations)."""
    return {index: tuple(first + i for i in range(len(body)))
            for index, (first, body) in enumerate(databricks_cells(text), start=1)}
