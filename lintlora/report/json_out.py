"""``--format json``: one JSON object, documented in the README ("JSON output").

Shape::

    {"version": "<lintlora version>",
     "files": ["relative/path.py", ...],
     "findings": [{"code", "name", "severity", "path", "line", "column", "end_line",
                   "end_column", "message", "fix",
                   "estimate": {"peak_bytes", "peak_after_fix_bytes", "gpu",
                                "gpu_memory_bytes", "gpu_memory_nominal", "breakdown",
                                "model", "note"} | null,
                   "cell": <1-based code cell>  (notebooks only; lines are then within the cell)
                   "related": [{"path", "line", "column", "message"}, ...]
                              (only when the finding has related locations: the launch of
                              its run, "launched by run.sh:3"; a launch line a value came from)
                   "autofix": {"title", "safety": "safe" | "unsafe",
                               "edits": [{"path", "line", "column", "end_line", "end_column",
                                          "new_text"}, ...]}
                              (only when the rule offers the fix as source changes; ``fix``
                              stays the remedy in words; ``edits`` is empty when the fix
                              cannot be placed in the files as they are)
                  }, ...],
     "errors": [{"code", "path", "line", "column", "message"}, ...],
     "notices": [{"code", "path", "line", "column", "message"}, ...]}

``notices`` are what the text report prints as ``note:`` lines (a named YAML file that is no
training config, ``--model`` not used where a file names its model, ...): informational, never
counted in the exit status.

``peak_bytes`` is the device counter (what must fit on the card, what nvidia-smi shows); all
sizes are bytes. ``end_line``/``end_column`` fall back to the start when unknown. Keys are in a
fixed order and findings sorted, so the same input gives byte-identical output. Strings are
exact (JSON's own escaping; ASCII only, so a file name that is not UTF-8 is written as its
``\\udcff`` escape); ``##[`` in a string is written ``#\\u0023[`` (the same string, but no
GitHub Actions log command when the document is printed in a job's log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from lintlora import __version__
from lintlora.findings import FileError, Finding
from lintlora.report.escape import json_dumps
from lintlora.report.locations import display_path

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "finding_to_json", "error_to_json", "to_json"]


def finding_to_json(finding: Finding, result: "RunResult | None" = None) -> dict[str, Any]:
    """One finding as the README documents it (``result``: the run, whose memo of resolved
    fix edits :func:`lintlora.report.fixes.fix_edits` keeps)."""
    span = finding.span
    item: dict[str, Any] = {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity.value,
        "path": display_path(span.path),
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line if span.end_line is not None else span.line,
        "end_column": span.end_column if span.end_column is not None else span.column,
        "message": finding.message,
        "fix": finding.fix,
        "estimate": finding.estimate.to_json() if finding.estimate is not None else None,
    }
    if span.cell is not None:
        item["cell"] = span.cell
    if finding.related:
        item["related"] = [{"path": display_path(r.span.path), "line": r.span.line,
                            "column": r.span.column, "message": r.message}
                           for r in finding.related]
    if finding.autofix is not None:
        from lintlora.report.fixes import fix_to_json

        item["autofix"] = fix_to_json(result, finding)
    return item


def error_to_json(error: FileError) -> dict[str, Any]:
    """One ``errors`` entry (``LL998`` input problem, ``LL999`` internal error)."""
    item = error.to_json()
    if error.path:
        item["path"] = display_path(error.path)
    return item


def to_json(result: "RunResult") -> dict[str, Any]:
    """The whole document as a dict."""
    return {
        "version": __version__,
        "files": [display_path(p) for p in result.files],
        "findings": [finding_to_json(f, result) for f in result.findings],
        "errors": [error_to_json(e) for e in result.errors],
        "notices": [error_to_json(n) for n in result.notices],
    }


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the JSON document and a newline: strict JSON, exact (a NaN or infinite number,
    which JSON cannot hold, becomes ``null``: :func:`lintlora.report.escape.json_dumps`)."""
    out.write(json_dumps(to_json(result)) + "\n")
