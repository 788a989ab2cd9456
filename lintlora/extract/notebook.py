"""Jupyter notebooks (``.ipynb``) and Databricks notebook sources -> training setups, cell by
cell as one program.

The code cells are joined in order into one Python program and read by the Python extractor,
so a value set in one cell and used in another is followed like in a script. IPython-only lines
are masked first (:func:`mask_ipython`: each replaced by ``pass`` at its indentation, so blocks
stay valid, and no other line moves: line numbers and the columns of every other line are
kept): line magics (``%pip install``), shell escapes (``!nvidia-smi``, ``!!ls``,
``files = !ls``, ``x = %timeit f()``), help (``model?``, ``model??``, ``?model``, ``??model``),
the autocall escapes (``/f x``, ``;f x``, ``,f x``), ``get_ipython()`` calls, automagic lines
(``pip install x``, ``cd data``, ``conda install -y x``: a line magic's name without its
``%``, masked only when the line is not Python), and cell magics: a ``%%time``/``%%timeit``/
``%%capture`` cell keeps its Python body, while ``%%bash``, ``%%sh``, ``%%writefile``,
``%%html``, ``%%javascript`` and any other cell magic make the whole cell non-Python, which is
dropped. A candidate line is masked only where a statement starts (not inside brackets, a
string or after a backslash), so ``x = (a\\n     % b)`` stays Python.

The rules follow IPython's own transformers (``IPython/core/inputtransformer2.py``, IPython
8/9: ``cell_magic``, ``EscapedCommand`` for ``!``/``!!``/``%``/``%%``/``?``/``??``/``/``/``;``/
``,``, ``MagicAssign``, ``SystemAssign``, ``HelpEnd``; automagic from ``%automagic``, on by
default). IPython itself is not used: importing ``IPython.core.inputtransformer2`` loads the
whole IPython package and its dependencies (prompt_toolkit, jedi, pygments, traitlets, about
10 MB installed, and a start-up cost on every notebook), for a dozen line patterns.

Databricks notebook sources (``.py`` files whose first line is ``# Databricks notebook source``,
cells separated by ``# COMMAND ----------`` lines, non-Python cells as ``# MAGIC`` comment
lines) are read as notebooks too (:func:`extract_databricks`): the file's lines are kept, a raw
``%pip``/``%run`` line is masked, and a cell opened by a language magic (``%sql``, ``%sh``,
``%md``, ``%scala``, ``%r``, ``%fs``) is dropped.

Markdown and raw cells are ignored. Every span is mapped back to ``Span(cell=<1-based index
among code cells>, line=<line within that cell>)``, the numbering notebook viewers show
(``In [n]`` counts executions, not cells). A syntax error on a line that looks like IPython
syntax lintlora did not mask (a shell command without its ``!``, a magic inside brackets) says
so (:func:`ipython_hint`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from lintlora.extract import ExtractError
from lintlora.extract.databricks import databricks_cells
from lintlora.training_setup import TrainingSetup

__all__ = ["extract_notebook", "notebook_program", "mask_ipython", "ipython_hint",
           "extract_databricks", "databricks_program"]

_PY_CELL_MAGICS = frozenset({"capture", "time", "timeit", "prun", "debug", "memit", "pypy"})
"""Cell magics whose body is Python (IPython's ``%%time``/``%%timeit``/``%%capture``/
``%%prun``/``%%debug``, memory_profiler's ``%%memit``). Every other cell magic
(``%%bash``, ``%%sh``, ``%%writefile``, ``%%html``, ``%%javascript``, ``%%script``...) runs its
body as something else."""
_SHELL_ASSIGN = re.compile(r"^[\w\s,()\[\].]+=\s*(?:!|%(?!=))")
"""``files = !ls``, ``out = %timeit -o f()`` (IPython's ``SystemAssign``/``MagicAssign``)."""
_HELP = re.compile(r"^(?:\?{1,2}\s*[A-Za-z_*][\w.*\[\]]*|[A-Za-z_*][\w.*\[\]]*(?:\(\))?\s*\?{1,2})\s*$")
"""IPython's help syntax on a line of its own: ``model?``, ``model??``, ``?model``,
``trainer.train?``, ``np.*load*?`` (IPython's ``help_end`` and ``help`` transforms). ``?`` is
never valid Python outside strings and comments, so such a line is only this."""
_AUTOCALL = re.compile(r"^[/;,][A-Za-z_]\w*(?:\.\w+)*(?:\s|$)")
"""IPython's autocall escapes: ``/f x`` -> ``f(x)``, ``;f x`` -> ``f("x")``, ``,f x``."""
AUTOMAGICS = frozenset({
    "pip", "conda", "mamba", "micromamba", "uv", "cd", "ls", "ll", "pwd", "env", "set_env", "cat", "mkdir",
    "rmdir", "rm", "cp", "mv", "man", "less", "more", "clear", "pushd", "popd", "dhist", "bookmark",
    "alias", "unalias", "load_ext", "reload_ext", "unload_ext", "matplotlib", "config", "time",
    "timeit", "run", "who", "whos", "who_ls", "reset", "reset_selective", "history", "xmode",
    "autoreload", "aimport", "store", "sx", "sc", "system", "pinfo", "pinfo2", "psearch", "pdef",
    "pdoc", "psource", "pfile", "load", "save", "edit", "notebook", "gui", "prun", "debug",
    "killbgscripts", "precision", "page", "pycat", "tb", "colors", "doctest_mode", "automagic",
    "autocall", "logstart", "logstop", "logon", "logoff", "recall", "rerun", "macro",
    "writefile", "capture", "memit", "mprun", "lsmagic", "magic", "quickref",
})
"""IPython's line magics and default aliases (``%lsmagic`` in IPython 8/9; ``cat``, ``ls``,
``mkdir``... are the posix aliases): with ``%automagic`` on (the default) a line ``pip install
x`` runs ``%pip install x``. A line is taken for one only when it starts with such a name, then
whitespace and an argument that does not start like a Python operator or bracket, and does not
parse as Python on its own."""
_AUTOMAGIC_LINE = re.compile(r"^([A-Za-z_]\w*)\s+(?![=(\[{,:;*%<>!&|^@)\]}]|[-+/]\s|[-+/]=)\S")
"""A name, whitespace, and an argument that does not start like an operator or bracket (so
``time = (`` or ``run (a,`` opening a statement on several lines never matches); ``cd ..``,
``cd /content``, ``pip -q install x`` do."""
_SHELL_COMMANDS = frozenset({
    "accelerate", "torchrun", "deepspeed", "python", "python3", "huggingface-cli", "hf", "wget",
    "curl", "git", "apt", "apt-get", "nvidia-smi", "unzip", "tar", "bash", "sh", "export",
    "sudo", "echo", "axolotl", "llamafactory-cli", "tune", "litgpt", "trl", "sed", "head", "tail",
})
"""Shell commands that, written in a cell without ``!``, are neither Python nor an automagic:
IPython refuses them too. Only used to explain a syntax error (:func:`ipython_hint`)."""
_LANGUAGE_MAGICS = frozenset({"sql", "sh", "md", "scala", "r", "fs", "python3", "html",
                              "markdown", "sql_", "lsmagic"})
"""Databricks cell magics that make the whole cell another language (``%sql``, ``%sh``,
``%md``, ``%scala``, ``%r``, ``%fs``)."""


# ---- the masker -----------------------------------------------------------------------------------
PARSE_CHECKS = 4096
"""At most this many lines of one file are parsed on their own to tell an automagic or autocall
line from Python (:func:`_parses`); past it such lines are left as they are (a hostile file of
a million ``pip x`` lines then fails with ``LL000`` instead of costing seconds)."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int = PARSE_CHECKS) -> None:
        self.left = left



def _parses(line: str, budget: _Budget | None = None) -> bool:
    """Whether ``line`` alone is Python (CPython's parser: builds an AST, runs nothing). With an
    exhausted ``budget``, True (the line is then not masked)."""
    import ast

    if budget is not None:
        if budget.left <= 0:
            return True
        budget.left -= 1
    try:
        ast.parse(line)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _ipython_kind(stripped: str, budget: _Budget | None = None) -> str | None:
    """What IPython-only construct a statement-start line is, or ``None`` for Python:
    ``"magic"``, ``"shell"``, ``"help"``, ``"autocall"``, ``"automagic"``."""
    if not stripped or stripped.startswith("#"):
        return None
    head = stripped[0]
    if head == "%":
        return "magic"
    if head == "!":
        return "shell"
    if stripped.startswith("get_ipython()"):
        return "magic"
    if ("!" in stripped or "%" in stripped) and _SHELL_ASSIGN.match(stripped):
        return "shell" if "!" in stripped.split("=", 1)[1][:3] else "magic"
    if "?" in stripped and _HELP.match(stripped):
        return "help"
    if head in "/;," and _AUTOCALL.match(stripped) and not _parses(stripped, budget):
        return "autocall"
    if " " not in stripped and "\t" not in stripped:
        return None
    m = _AUTOMAGIC_LINE.match(stripped)
    if m and m.group(1) in AUTOMAGICS and not stripped.rstrip().endswith(("\\", ",", "(", "[", "{")) \
            and not _parses(stripped, budget):
        return "automagic"
    return None


class _Scanner:
    """Tracks, line by line, whether the next line starts a statement: not inside brackets, a
    triple-quoted string, or a backslash continuation. A light tokenizer (strings, comments,
    brackets); it never fails, and on odd input errs towards "inside" (which masks less)."""

    __slots__ = ("depth", "quote", "backslash")

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # an open triple quote
        self.backslash = False

    @property
    def at_statement(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def feed(self, line: str) -> None:
        self.backslash = False
        i, n = 0, len(line)
        while i < n:
            if self.quote is not None:
                end = line.find(self.quote, i)
                if end < 0:
                    return
                i = end + 3
                self.quote = None
                continue
            m = _TOKEN.search(line, i)
            if m is None:
                break
            kind = m.lastgroup
            if kind == "comment":
                return
            if kind == "triple":
                self.quote = m.group()
            elif kind == "open":
                self.depth = min(self.depth + 1, 1000)
            elif kind == "close":
                self.depth = max(0, self.depth - 1)
            i = m.end()
        self.backslash = line.endswith("\\")


_TOKEN = re.compile(r"""(?P<triple>\"\"\"|\'\'\')|(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
                    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<comment>\#)")
"""What :class:`_Scanner` looks at: a triple quote, a complete one-line string, a bracket, a
comment (an unterminated one-line string is skipped over character by character)."""


def mask_ipython(lines: list[str], *, language_magics: frozenset[str] = frozenset(),
                 budget: _Budget | None = None) -> list[str]:
    """The lines of one cell with every IPython-only line replaced by ``pass`` at its
    indentation (``""`` for the continuation lines of a masked backslash line and for a
    dropped cell), as many lines as given. ``language_magics`` are single-``%`` magics that,
    on a cell's first line, make the whole cell another language (Databricks' ``%sql``).
    ``budget`` bounds the lines parsed on their own (shared by the cells of one file;
    :data:`PARSE_CHECKS` when not given)."""
    if budget is None:
        budget = _Budget()
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split()[0] if len(first) > 2 else ""
        if magic not in _PY_CELL_MAGICS:
            return [""] * len(lines)
        lines = [""] + lines[1:]
    elif first.startswith("%") and first[1:].split()[:1] and first[1:].split()[0] in language_magics:
        return [""] * len(lines)
    out = []
    scanner = _Scanner()
    fed = 0  # lines of `out` the scanner has read: it reads them only when a candidate needs it
    masking_continuation = False
    for line in lines:
        stripped = line.lstrip()
        if masking_continuation:
            out.append("")
            fed = len(out)
            masking_continuation = stripped.rstrip().endswith("\\")
            continue
        if stripped and _ipython_kind(stripped, budget) is not None:
            for earlier in out[fed:]:
                scanner.feed(earlier)
            fed = len(out)
            if scanner.at_statement:
                indent = line[: len(line) - len(stripped)]
                out.append(f"{indent}pass")
                fed = len(out)
                masking_continuation = stripped.rstrip().endswith("\\")
                continue
        out.append(line)
    return out


_neutralise = mask_ipython  # the name earlier releases used


def ipython_hint(line: str, *, notebook: bool) -> str | None:
    """Why a line that does not parse looks like IPython syntax, for an ``LL000`` message, or
    ``None``: in a ``.py`` file any IPython construct; in a notebook, a shell command written
    without its ``!`` (IPython refuses it too) or a magic lintlora could not mask (inside
    brackets or a string)."""
    stripped = line.strip()
    kind = _ipython_kind(stripped, _Budget(2))
    words = {"magic": "an IPython magic (%)", "shell": "an IPython shell escape (!)",
             "help": "IPython help (?)", "autocall": "an IPython autocall escape",
             "automagic": "an IPython magic written without its % (automagic)"}
    if kind is not None:
        if notebook:
            return (f"the line looks like {words[kind]} inside a bracket, string or continued line, "
                    "where IPython does not read it either")
        return f"the line is {words[kind]}, which only a notebook runs: it is not Python in a .py file"
    first = stripped.split()[0] if stripped.split() else ""
    if first in _SHELL_COMMANDS and not _parses(stripped, _Budget(1)):
        return (f"the line looks like a shell command (`{first} ...`)" +
                (": in a notebook it needs a leading `!`" if notebook else ", not Python"))
    return None


def _with_hint(exc: ExtractError, line: str | None, *, notebook: bool) -> ExtractError:
    if line is None:
        return exc
    hint = ipython_hint(line, notebook=notebook)
    if hint is None:
        return exc
    return ExtractError(f"{exc.message} ({hint})", exc.line, exc.column, exc.code, exc.cell)


# ---- .ipynb -----------------------------------------------------------------------------------------
def extract_notebook(path: str, text: str) -> list[TrainingSetup]:
    """Extract the training setups of a notebook (a :class:`lintlora.extract.Setups`, as
    :func:`lintlora.extract.python.extract_python` returns).

    Raises:
        ExtractError: the file is not valid notebook JSON (with the JSON line and column), has no
            cell list, or its joined code does not parse (with the cell and the line in it, and
            :func:`ipython_hint` when the line looks like IPython syntax);
            ``LL998`` when it has more cells, or its code more tokens, than lintlora analyses
            (:mod:`lintlora.extract.limits`).
    """
    from lintlora.extract.python import extract_python_source

    program, line_map = notebook_program(text)
    if not program.strip():
        return []
    try:
        return extract_python_source(path, program, line_map=line_map, kind="notebook")
    except ExtractError as exc:
        raise _with_hint(exc, _cell_line(_code_cells(text), exc), notebook=True) from None


def _cell_line(cells: list[list[str]], exc: ExtractError) -> str | None:
    if exc.cell is None or exc.line is None or not 1 <= exc.cell <= len(cells):
        return None
    lines = cells[exc.cell - 1]
    return lines[exc.line - 1] if 1 <= exc.line <= len(lines) else None


def _code_cells(text: str) -> list[list[str]]:
    """The source lines of each code cell (``[]`` for text that is not a notebook)."""
    try:
        cells = _cells(json.loads(text))
    except (ExtractError, ValueError, RecursionError):
        return []
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", cell.get("input", ""))
            if isinstance(source, list):
                source = "".join(s for s in source if isinstance(s, str))
            out.append(source.splitlines() or [""] if isinstance(source, str) else [""])
    return out


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
    budget = _Budget()
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
        for i, line in enumerate(mask_ipython(cell_lines, budget=budget), 1):
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


# ---- Databricks notebook sources ----------------------------------------------------------------
def databricks_program(text: str) -> tuple[str, Callable[[int], tuple[int | None, int]]]:
    """The file as one program with IPython/Databricks-only lines masked, line for line (file
    line ``n`` is program line ``n``), and ``line_map(line) -> (cell, line_in_cell)``."""
    raw = text.lstrip("\ufeff").split("\n")
    program = list(raw)
    owner: dict[int, tuple[int, int]] = {}
    budget = _Budget()
    for index, (first, body) in enumerate(databricks_cells(text), start=1):
        masked = mask_ipython(body, language_magics=_LANGUAGE_MAGICS, budget=budget)
        for i, line in enumerate(masked):
            number = first + i
            if 1 <= number <= len(program):
                program[number - 1] = line if not program[number - 1].endswith("\r") else line + "\r"
                owner[number] = (index, i + 1)
    ordered = sorted(owner)

    def line_map(line: int) -> tuple[int | None, int]:
        hit = owner.get(line)
        if hit is not None:
            return hit
        # a separator or blank line between cells: the nearest cell line before it
        import bisect

        k = bisect.bisect_right(ordered, line) - 1
        if k >= 0:
            cell, in_cell = owner[ordered[k]]
            return cell, in_cell
        return (1, 1)

    return "\n".join(program), line_map


def extract_databricks(path: str, text: str) -> list[TrainingSetup]:
    """Extract the training setups of a Databricks notebook source (kind ``"notebook"``,
    spans by cell and line in the cell).

    Raises:
        ExtractError: the program does not parse (with the cell, the line in it, and
            :func:`ipython_hint` when the line looks like IPython syntax).
    """
    from lintlora.extract.python import extract_python_source

    program, line_map = databricks_program(text)
    try:
        return extract_python_source(path, program, line_map=line_map, kind="notebook")
    except ExtractError as exc:
        cells = [body for _first, body in databricks_cells(text)]
        raise _with_hint(exc, _cell_line(cells, exc), notebook=True) from None
