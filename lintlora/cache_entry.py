"""The JSON form of one file's result in the results cache (:mod:`lintlora.cache`), and the
check that every entry read back passes before it is used.

An entry is data that lintlora wrote, but it is read from a folder others may reach (a CI cache
restored from another branch, a shared folder), so it is checked like input: a schema of exact
field sets and types, with

- **paths**: the file's own, or one of the run's other files (the entry's ``inputs``: a launch
  line that passed a value, a config a run read). The result's path is the file's; every
  finding's span, related location and diagnostic belongs to the linted file or to one of its
  inputs (``Span.cell`` locates a notebook's cells; a cell number, and the
  notebook line map, only in a notebook's result, or a Databricks notebook source's: a
  ``python`` result with a cell map);
- **numbers**: integers, never booleans; positions (lines, columns, cells) from 1 to
  :data:`MAX_POSITION`; byte figures from 0 to :data:`MAX_BYTES_FIGURE` (breakdown
  components may be floats: finite, within the same magnitude). JSON's ``NaN``, ``Infinity``
  and ``1e400`` (read by Python as ``inf``) are refused, so no reporter can print an invalid
  JSON/SARIF number or overflow converting one;
- **strings**: at most :data:`MAX_TEXT` characters; a lone surrogate (which no UTF-8 output can
  encode) only where the file's own path has it (a path from a non-UTF-8 file name);
- **enumerations**: the severity one of :class:`~lintlora.findings.Severity`; the kind one of
  lintlora's four; a finding's code one of the run's rules (or ``LL000``/``LL900``/``LL998``,
  which the engine itself reports); a diagnostic's code ``LL998``, a notice's ``LL998`` or
  ``LL000`` (``LL999`` internal errors are never stored).

Anything else is a :class:`ValueError`, which the cache treats as a miss.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Collection

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.file_result import FileResult

__all__ = ["MAX_TEXT", "MAX_POSITION", "MAX_BYTES_FIGURE", "encode_result", "decode_result"]

MAX_TEXT = 64 * 2**10
"""Longest string of an entry, in characters. lintlora's longest messages are under 1,000
characters (the longest over the 600-file benchmark corpus: 657); the bound leaves room for
quoted values and long paths while keeping a forged string from flooding a report."""

MAX_POSITION = 2**31 - 1
"""Largest line, column or cell number (a file under the size limit has far fewer)."""

MAX_BYTES_FIGURE = 2**64
"""Largest byte figure of an estimate (16 EiB): far above any GPU or host, still a float
without overflow for every reporter's arithmetic."""

_KINDS = frozenset({"python", "notebook", "yaml", "json"})
_ENGINE_FINDING_CODES = frozenset({"LL000", "LL900", "LL998"})
_ERROR_CODES = frozenset({"LL998"})
_NOTICE_CODES = frozenset({"LL998", "LL000"})
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")

_RESULT_FIELDS = frozenset({"path", "kind", "linted", "findings", "errors", "notices",
                            "cell_lines"})
_FINDING_FIELDS = frozenset({"code", "name", "severity", "span", "message", "fix", "estimate",
                             "rests_on", "related", "autofix"})
_AUTOFIX_FIELDS = frozenset({"title", "safety", "ops"})
_MAX_OPS = 64
"""Edit operations kept per autofix in an entry (lintlora's fixes have a few)."""
_MAX_RELATED = 64
"""Related locations kept per finding in an entry (more is not a finding lintlora writes)."""
_ESTIMATE_FIELDS = frozenset({"peak_bytes", "peak_after_fix_bytes", "gpu", "gpu_memory_bytes",
                              "gpu_memory_nominal", "breakdown", "model", "note"})


# ---- writing -----------------------------------------------------------------------------------

def _span_json(span: Any) -> list:
    return [span.path, span.line, span.column, span.end_line, span.end_column, span.cell]


def _finding_json(finding: Any) -> dict:
    estimate = finding.estimate
    return {
        "code": finding.code, "name": finding.name, "severity": finding.severity.value,
        "span": _span_json(finding.span), "message": finding.message, "fix": finding.fix,
        "estimate": None if estimate is None else {
            "peak_bytes": estimate.peak_bytes,
            "peak_after_fix_bytes": estimate.peak_after_fix_bytes,
            "gpu": estimate.gpu, "gpu_memory_bytes": estimate.gpu_memory_bytes,
            "gpu_memory_nominal": estimate.gpu_memory_nominal,
            "breakdown": [[k, v] for k, v in estimate.breakdown.items()],
            "model": estimate.model, "note": estimate.note,
        },
        "rests_on": list(finding.rests_on),
        "related": [[_span_json(r.span), r.message] for r in finding.related],
        "autofix": None if finding.autofix is None else {
            "title": finding.autofix.title, "safety": finding.autofix.safety.value,
            "ops": [[op.kind, _span_json(op.span), op.text, op.keyword]
                    for op in finding.autofix.ops],
        },
    }


def _error_json(error: Any) -> list:
    return [error.path, error.message, error.code, error.line, error.column]


def encode_result(result: "FileResult") -> dict:
    """The JSON form of a :class:`~lintlora.engine.FileResult` without its setups.

    Raises:
        TypeError, AttributeError: a value that has no JSON form here (a plugin's odd finding).
    """
    return {
        "path": result.path, "kind": result.kind, "linted": result.linted,
        "findings": [_finding_json(f) for f in result.findings],
        "errors": [_error_json(e) for e in result.errors],
        "notices": [_error_json(e) for e in result.notices],
        "cell_lines": [[cell, list(lines)] for cell, lines in result.cell_lines.items()],
    }


# ---- reading -----------------------------------------------------------------------------------

class _Invalid(Exception):
    """An entry that fails a check."""


_ANY = object()


class _Reader:
    """Checks one result's JSON form against the file it must describe."""

    def __init__(self, path: str | None, kind: Any, codes: Collection[str] | None,
                 other_paths: Collection[str] = ()) -> None:
        self.path = path
        self.others = frozenset(other_paths)
        self.kind = kind
        self.codes = None if codes is None else frozenset(codes) | _ENGINE_FINDING_CODES
        self.surrogates: frozenset[str] = frozenset()
        self.notebook = False

    # -- scalars
    def text(self, value: Any) -> str:
        if type(value) is not str or len(value) > MAX_TEXT:
            raise _Invalid("a string")
        if _SURROGATE.search(value) and not set(_SURROGATE.findall(value)) <= self.surrogates:
            raise _Invalid("a lone surrogate")
        return value

    def opt_text(self, value: Any) -> str | None:
        return None if value is None else self.text(value)

    @staticmethod
    def integer(value: Any, low: int, high: int) -> int:
        if type(value) is not int or not low <= value <= high:
            raise _Invalid("an integer out of range")
        return value

    def opt_integer(self, value: Any, low: int, high: int) -> int | None:
        return None if value is None else self.integer(value, low, high)

    def position(self, value: Any) -> int:
        return self.integer(value, 1, MAX_POSITION)

    def opt_position(self, value: Any) -> int | None:
        return None if value is None else self.position(value)

    def opt_bytes(self, value: Any) -> int | None:
        return self.opt_integer(value, 0, MAX_BYTES_FIGURE)

    @staticmethod
    def number(value: Any) -> int | float:
        if type(value) not in (int, float) or not math.isfinite(value) \
                or not -MAX_BYTES_FIGURE <= value <= MAX_BYTES_FIGURE:
            raise _Invalid("a number out of range")
        return value

    @staticmethod
    def flag(value: Any) -> bool:
        if type(value) is not bool:
            raise _Invalid("a boolean")
        return value

    @staticmethod
    def items(value: Any, length: int | None = None) -> list:
        if type(value) is not list or (length is not None and len(value) != length):
            raise _Invalid("a list")
        return value

    @staticmethod
    def fields(value: Any, names: frozenset) -> dict:
        if type(value) is not dict or value.keys() != names:
            raise _Invalid("an object")
        return value

    def own_path(self, value: Any) -> str:
        if type(value) is not str or value != self.path:
            raise _Invalid("another file's path")
        return value

    def run_path(self, value: Any) -> str:
        """The file's own path or one of the run's other files (absolute, an input)."""
        if type(value) is str and value in self.others:
            return value
        return self.own_path(value)

    def code(self, value: Any, allowed: Collection[str] | None) -> str:
        if type(value) is not str or not _CODE.match(value):
            raise _Invalid("a code")
        if allowed is not None and value not in allowed:
            raise _Invalid("an unknown code")
        return value

    # -- structures
    def span(self, data: Any) -> Any:
        from lintlora.training_setup import Span

        path, line, column, end_line, end_column, cell = self.items(data, 6)
        if cell is not None and (not self.notebook or path != self.path):
            raise _Invalid("a cell outside a notebook")
        return Span(self.run_path(path), self.position(line), self.position(column),
                    self.opt_position(end_line), self.opt_position(end_column),
                    self.opt_position(cell))

    def estimate(self, data: Any) -> Any:
        from lintlora.findings import MemoryFigures

        if data is None:
            return None
        self.fields(data, _ESTIMATE_FIELDS)
        breakdown = {}
        for item in self.items(data["breakdown"]):
            key, value = self.items(item, 2)
            breakdown[self.text(key)] = self.number(value)
        return MemoryFigures(
            peak_bytes=self.opt_bytes(data["peak_bytes"]),
            peak_after_fix_bytes=self.opt_bytes(data["peak_after_fix_bytes"]),
            gpu=self.opt_text(data["gpu"]),
            gpu_memory_bytes=self.opt_bytes(data["gpu_memory_bytes"]),
            gpu_memory_nominal=self.flag(data["gpu_memory_nominal"]),
            breakdown=breakdown, model=self.opt_text(data["model"]),
            note=self.opt_text(data["note"]))

    def related(self, data: Any) -> tuple:
        """Related locations: ``[[span], message]`` each; a span may name another file of the
        run (the launch script, a config): the file's own path or one of its inputs (a forged
        entry cannot point a report at a file outside the run, /etc/passwd)."""
        from lintlora.findings import RelatedLocation
        from lintlora.training_setup import Span

        entries = self.items(data)
        if len(entries) > _MAX_RELATED:
            raise _Invalid("too many related locations")
        out = []
        for entry in entries:
            span, message = self.items(entry, 2)
            path, line, column, end_line, end_column, cell = self.items(span, 6)
            out.append(RelatedLocation(Span(self.run_path(self.text(path)), self.position(line), self.position(column),
                                            self.opt_position(end_line), self.opt_position(end_column),
                                            self.opt_position(cell)), self.text(message)))
        return tuple(out)

    def autofix(self, data: Any) -> Any:
        """An autofix: title, safety (``safe``/``unsafe``) and at most :data:`_MAX_OPS` ops
        ``[kind, span, text, keyword]``, each kind one :mod:`lintlora.fixing` places, each
        span the file's own or one of the run's inputs (:meth:`span`)."""
        from lintlora.findings import EditOp, Fix, FixSafety
        from lintlora.fixing import KINDS

        if data is None:
            return None
        self.fields(data, _AUTOFIX_FIELDS)
        if data["safety"] not in ("safe", "unsafe"):
            raise _Invalid("a fix safety")
        entries = self.items(data["ops"])
        if not 1 <= len(entries) <= _MAX_OPS:
            raise _Invalid("a fix's edit count")
        ops = []
        for entry in entries:
            kind, span, text, keyword = self.items(entry, 4)
            if kind not in KINDS:
                raise _Invalid("an edit kind")
            ops.append(EditOp(kind, self.span(span), self.text(text), self.opt_text(keyword)))
        return Fix(self.text(data["title"]), FixSafety(data["safety"]), tuple(ops))

    def finding(self, data: Any) -> Any:
        from lintlora.findings import Finding, Severity

        self.fields(data, _FINDING_FIELDS)
        severity = data["severity"]
        if severity not in ("info", "warning", "error"):
            raise _Invalid("a severity")
        return Finding(
            code=self.code(data["code"], self.codes), name=self.text(data["name"]),
            severity=Severity(severity), span=self.span(data["span"]),
            message=self.text(data["message"]), fix=self.opt_text(data["fix"]),
            estimate=self.estimate(data["estimate"]),
            rests_on=tuple(self.text(x) for x in self.items(data["rests_on"])),
            related=self.related(data["related"]), autofix=self.autofix(data["autofix"]))

    def error(self, data: Any, codes: frozenset) -> Any:
        from lintlora.findings import FileError

        path, message, code, line, column = self.items(data, 5)
        return FileError(self.run_path(path), self.text(message), self.code(code, codes),
                         self.opt_position(line), self.opt_position(column))

    def result(self, data: Any, fail_on: Any) -> "FileResult":
        from lintlora.file_result import FileResult

        self.fields(data, _RESULT_FIELDS)
        path = data["path"]
        if type(path) is not str or len(path) > MAX_TEXT:
            raise _Invalid("a path")
        if self.path is None:
            self.path = path
        self.own_path(path)
        self.surrogates = frozenset(_SURROGATE.findall(path))
        kind = data["kind"]
        if kind is not None and kind not in _KINDS:
            raise _Invalid("a kind")
        if self.kind is not _ANY and kind != self.kind:
            raise _Invalid("another kind")
        # cells belong to a notebook, or to a Databricks notebook source (a ``.py`` file read
        # by cell, lintlora/extract/databricks.py), whose result always carries its cell map
        self.notebook = kind == "notebook" or (kind == "python" and bool(data["cell_lines"]))
        result = FileResult(path=path, kind=kind, linted=self.flag(data["linted"]))
        result.findings = [self.finding(f) for f in self.items(data["findings"])]
        result.errors = [self.error(e, _ERROR_CODES) for e in self.items(data["errors"])]
        result.notices = [self.error(e, _NOTICE_CODES) for e in self.items(data["notices"])]
        cell_lines = self.items(data["cell_lines"])
        if cell_lines and not self.notebook:
            raise _Invalid("a cell map outside a notebook")
        for item in cell_lines:
            cell, lines = self.items(item, 2)
            result.cell_lines[self.integer(cell, 0, MAX_POSITION)] = tuple(
                self.position(n) for n in self.items(lines))
        if fail_on is not None:
            result.fail_on = fail_on
        return result


def decode_result(data: Any, fail_on: Any = None, *, path: str | None = None, kind: Any = _ANY,
                  codes: Collection[str] | None = None,
                  other_paths: Collection[str] = ()) -> "FileResult":
    """Read back :func:`encode_result`'s form, checking everything (see the module docstring).

    Args:
        data: the parsed JSON.
        fail_on: the severity threshold to give the result (not part of the entry).
        path: the linted file's path, which every path in the entry must be; ``None``: the
            entry's own ``path`` (its findings and diagnostics must still all be that file's).
        kind: the file's kind (``None`` for files lintlora does not read); default: any.
        codes: the codes of the run's rules; ``None``: any well-formed code.
        other_paths: the run's other files (the entry's inputs, absolute): spans and
            diagnostics may also be theirs (a finding at a launch line).

    Raises:
        ValueError: the data is not a valid entry for that file (the message says which check
            failed).
    """
    try:
        return _Reader(path, kind, codes, other_paths).result(data, fail_on)
    except (_Invalid, KeyError, TypeError, ValueError, RecursionError) as exc:
        message = f"not a lintlora cache entry ({type(exc).__name__}: {exc})"
        raise ValueError(message[:200]) from None
