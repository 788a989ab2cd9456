"""Jupyter notebooks (``.ipynb``) -> training setups, cell by cell as one program.

The code cells are joined in order into one Python program and read by the Python extractor,
so a value set in one cell and used in another is followed like in a script. IPython-only lines
are neutralised first (each replaced by ``pass`` at its indentation, so blocks stay valid and
line numbers do not move): line magics (``%pip install``), shell escapes (``!nvidia-smi``,
``files = !ls``), help lines (``model?``, ``model??``, ``?model``), ``get_ipython()`` calls,
and cell magics (a ``%%capture``/``%%time`` cell keeps its Python body; ``%%bash``,
``%%writefile`` and other non-Python cells are dropped).
Markdown and raw cells are ignored.

Every span is mapped back to ``Span(cell=<1-based index among code cells>, line=<line within
that cell>)``, the numbering notebook viewers show (``In [n]`` counts executions, not cells).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lintlora.extract import ExtractError
from lintlora.training_setup import TrainingSetup

__all__ = ["extract_notebook", "notebook_program"]

_PY_CELL_MAGICS = frozenset({"capture", "time", "timeit", "prun", "debug", "memit"})
_SHELL_ASSIGN = re.compile(r"^[\w\s,()\[\]]+=\s*[!%]")
_HELP = re.compile(r"^(?:\?{1,2}\s*[A-Za-z_*][\w.*\[\]]*|[A-Za-z_*][\w.*\[\]]*(?:\(\))?\s*\?{1,2})\s*$")
"""IPython's help syntax on a line of its own: ``model?``, ``model??``, ``?model``,
``trainer.train?``, ``np.*load*?`` (IPython's ``help_end`` and ``help`` transforms). ``?`` is
never valid Python outside strings and comments, so such a line is only this."""


def extract_notebook(path: str, text: str) -> list[TrainingSetup]:
    """Extract the training setups of a notebook (a :class:`lintlora.extract.Setups`, as
    :func:`lintlora.extract.python.extract_python` returns).

    Raises:
        ExtractError: the file is not valid notebook JSON (with the JSON line and column), has no
            cell list, or its joined code does not parse (with the cell and the line in it);
            ``LL998`` when it has more cells, or its code more tokens, than lintlora analyses
            (:mod:`lintlora.extract.limits`).
    """
    from lintlora.extract.python import extract_python_source

    program, line_map = notebook_program(text)
    if not program.strip():
        return []
    return extract_python_source(path, program, line_map=line_map, kind="notebook")


def notebook_program(text: str) -> tuple[str, Any]:
    """The code cells as one program, and ``line_map(line) -> (cell, line_in_cell)``.

    Raises:
        ExtractError: invalid JSON or no cells; ``LL998`` for more than
            :data:`~lintlora.extract.limits.MAX_NOTEBOOK_CELLS` cells (counted before any is
            read).
    """
    from lintlora.extract.limits import MAX_NOTEBOOK_CELLS, limit

    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExtractError(f"not a valid notebook: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise ExtractError("not a valid notebook: nested too deeply", None, None) from None
    cells = _cells(nb)
    most = limit(MAX_NOTEBOOK_CELLS)
    if len(cells) > most:
        raise ExtractError(f"too large to analyse: the notebook has {len(cells):,} cells, above "
                           f"lintlora's limit of {most:,}; nothing in it was checked", None, None,
                           code="LL998")
    lines: list[str] = []
    origin: list[tuple[int, int]] = []
    index = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        index += 1
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise ExtractError(f"not a valid notebook: code cell {index} has no source text",
                               None, None, cell=index)
        cell_lines = source.splitlines() or [""]
        for i, line in enumerate(_neutralise(cell_lines), 1):
            lines.append(line)
            origin.append((index, i))
    program = "\n".join(lines) + "\n"
    last = origin[-1] if origin else (None, 1)

    def line_map(line: int) -> tuple[int | None, int]:
        if 1 <= line <= len(origin):
            return origin[line - 1]
        return last

    return program, line_map


def _cells(nb: Any) -> list:
    if isinstance(nb, dict):
        cells = nb.get("cells")
        if isinstance(cells, list):
            return cells
        worksheets = nb.get("worksheets")  # nbformat 3
        if isinstance(worksheets, list) and worksheets and isinstance(worksheets[0], dict):
            cells = worksheets[0].get("cells")
            if isinstance(cells, list):
                return cells
    raise ExtractError("not a valid notebook: no list of cells (expected nbformat 4 'cells')",
                       1, 1)


def _neutralise(lines: list[str]) -> list[str]:
    """Replace IPython-only lines by ``pass`` at the same indentation."""
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split()[0] if len(first) > 2 else ""
        if magic not in _PY_CELL_MAGICS:
            return [""] * len(lines)
        lines = [""] + lines[1:]
    out = []
    continued = False
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if continued or stripped.startswith(("%", "!")) or stripped.startswith("get_ipython()") \
                or _SHELL_ASSIGN.match(stripped) or _HELP.match(stripped):
            out.append(f"{indent}pass" if not continued else "")
            continued = stripped.endswith("\\")
            continue
        out.append(line)
    return out
