"""``--format rdjson``: the Reviewdog Diagnostic Format, so reviewdog posts the findings as
review comments on GitHub, GitLab, Bitbucket or Gitea
(``lintlora --format rdjson . | reviewdog -f=rdjson -reporter=github-pr-review``).

Format: the JSON form of the ``DiagnosticResult`` message of reviewdog's
``proto/rdf/reviewdog.proto`` (https://github.com/reviewdog/reviewdog/tree/master/proto/rdf,
JSON schemas in ``proto/rdf/jsonschema``, copied to ``fixtures/schemas/reviewdog/`` at
reviewdog commit 6c307503194f0f32bf1956c7fcd2877636338db6 and validated in the tests)::

    {"source": {"name": "lintlora", "url": INFORMATION_URI},
     "diagnostics": [
       {"message": "...", "severity": "ERROR" | "WARNING" | "INFO",
        "location": {"path": "train.py",
                     "range": {"start": {"line": 12, "column": 5},
                               "end": {"line": 12, "column": 40}}},
        "code": {"value": "LL001", "url": "<the rule's page>"},
        "suggestions": [{"range": {"start": {"line": 12}, "end": {"line": 13}},
                         "text": "<lines 12-13 as they read after the fix>"}],
        "related_locations": [{"message": "launched by run.sh:3",
                               "location": {"path": "run.sh", "range": {...}}}]}]}

Positions: lines 1-based; columns 1-based **UTF-8 bytes** (the proto's ``Position``: "Column
number, starting at 1 (byte count in UTF-8)"), converted from lintlora's character columns with
the file's own line (:mod:`lintlora.report.sourcelines`); the end is exclusive. When the line
cannot be read, or for a notebook (whose finding is placed on the ``.ipynb`` file line holding
the cell's source line, as SARIF does), the range is line-wise (no columns).

Suggestions: only a **safe** autofix becomes a suggestion (a reviewer applies it with one click,
as ``lintlora --fix`` would); an unsafe one is named in the message with the command that
applies it (``lintlora --fix --unsafe-fixes``), never offered as a one-click change. A
suggestion is line-wise: the whole lines the fix touches, as they read after it
(:func:`lintlora.report.fixes.suggestion`), because reviewdog's GitHub reporter requires a
suggestion's line range to be the comment's (``service/github/github.go``,
``buildSingleSuggestion``: "GitHub comment range and suggestion line range must be same") and
its GitLab reporter replaces whole lines (``service/gitlab/gitlab_mr_discussion.go``,
``suggestion:-0+N``); reviewdog then places the comment on the suggestion's lines
(``githubCommentLineRange``). Notebook fixes are not suggested (a suggestion would be raw
notebook JSON).

Messages: reviewdog writes ``message`` into the review comment as Markdown
(``service/commentutil/commentutil.go``, ``MarkdownComment``), so every part is escaped with
:func:`lintlora.report.escape.markdown_text` (backtick code kept, HTML, links, mentions and
block starts neutralised) and the parts are joined by ``<br>`` on one line. Paths and the
suggestion text are exact. Files that could not be linted (``LL998``/``LL999``) are ``ERROR``
diagnostics; files not parsed with ``LL000`` ignored, and the run's notices, are ``INFO``
diagnostics (an error or notice without a path has no location). The document is strict
ASCII JSON (:func:`lintlora.report.escape.json_dumps`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TextIO

from lintlora.findings import FileError, Finding, FixSafety, Severity
from lintlora.report import memory_line, other_notices, rule_urls, unparsed
from lintlora.report.escape import json_dumps, markdown_text
from lintlora.report.locations import display_path, file_line, related_text
from lintlora.report.sourcelines import SourceLines, utf8_column

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "to_rdjson", "SEVERITY"]

SEVERITY = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}
"""lintlora severity -> the proto's ``enum Severity`` name."""

_SAFE_URL = re.compile(r"https?://[^\s()<>\[\]`|\\]+")
"""A rule page's address safe in reviewdog's ``<[CODE](URL)>`` link (others are left out)."""


def _position(lines: SourceLines, path: str, line: int, column: int | None) -> dict[str, int]:
    position = {"line": max(int(line), 1)}
    if column is not None:
        byte_column = utf8_column(lines.line(path, position["line"]), column)
        if byte_column is not None:
            position["column"] = byte_column
    return position


def _related_start(span: Any, lines: SourceLines, result: Any) -> dict[str, int]:
    if span.cell is not None:  # a notebook cell: the .ipynb file line, no column
        return {"line": max(file_line(result.cell_lines.get(span.path), span.cell, span.line), 1)}
    return _position(lines, span.path, span.line, span.column)


def _range(finding: Finding, lines: SourceLines, cell_lines: dict | None) -> dict[str, Any]:
    span = finding.span
    if span.cell is not None:
        start = file_line(cell_lines, span.cell, span.line)
        end = max(start, file_line(cell_lines, span.cell, span.last_line))
        return {"start": {"line": start}, "end": {"line": end}}
    start = _position(lines, span.path, span.line, span.column)
    end_line = max(span.last_line, start["line"])
    end_column = span.end_column
    if "column" not in start:
        return {"start": start, "end": {"line": end_line}}
    end = _position(lines, span.path, end_line, end_column) if end_column else {"line": end_line}
    if "column" in end and end_line == start["line"] and end["column"] < start["column"]:
        end["column"] = start["column"]
    if "column" not in end:  # no end column known: the start, or the end line as a whole
        end = dict(start) if end_line == start["line"] else {"line": end_line}
    return {"start": start, "end": end}


def _suggestions(finding: Finding, result: Any) -> list[dict[str, Any]]:
    fix = finding.autofix
    if fix is None or fix.safety is not FixSafety.SAFE or finding.span.cell is not None:
        return []
    from lintlora.report.fixes import suggestion

    found = suggestion(result, finding)
    if found is None:
        return []
    path, first, last, new = found
    if display_path(path) != display_path(finding.span.path):
        return []  # reviewdog places a suggestion in the diagnostic's own file
    text = new.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]  # reviewdog adds the last line break back (buildSingleSuggestion)
    return [{"range": {"start": {"line": first}, "end": {"line": last}}, "text": text}]


def _message(finding: Finding, suggested: bool) -> str:
    parts = [finding.message]
    if finding.span.cell is not None:
        parts[0] = f"cell {finding.span.cell}, line {finding.span.line}: {finding.message}"
    memory = memory_line(finding.estimate)
    if memory:
        parts.append(memory)
    if finding.fix:
        parts.append(f"Fix: {finding.fix}")
    fix = finding.autofix
    if fix is not None:
        if fix.safety is FixSafety.SAFE:
            how = "suggested below; lintlora --fix" if suggested else "lintlora --fix"
            parts.append(f"Autofix (safe, {how}): {fix.title}")
        else:
            parts.append(f"Autofix (unsafe, not suggested; lintlora --fix --unsafe-fixes): "
                         f"{fix.title}")
    return "<br>".join(markdown_text(part) for part in parts)


def _diagnostic(finding: Finding, result: Any, lines: SourceLines,
                urls: dict[str, str]) -> dict[str, Any]:
    suggestions = _suggestions(finding, result)
    item: dict[str, Any] = {
        "message": _message(finding, bool(suggestions)),
        "location": {"path": display_path(finding.span.path),
                     "range": _range(finding, lines, result.cell_lines.get(finding.span.path))},
        "severity": SEVERITY[finding.severity],
        "code": {"value": finding.code},
    }
    url = urls.get(finding.code)
    if url and _SAFE_URL.fullmatch(url):
        item["code"]["url"] = url
    if suggestions:
        item["suggestions"] = suggestions
    if finding.related:
        item["related_locations"] = [{
            "message": markdown_text(related_text(r)),
            "location": {"path": display_path(r.span.path),
                         "range": {"start": _related_start(r.span, lines, result)}},
        } for r in finding.related]
    return item


def _file_diagnostic(item: FileError, severity: str, message: str) -> dict[str, Any]:
    diagnostic: dict[str, Any] = {"message": markdown_text(message), "severity": severity,
                                  "code": {"value": item.code}}
    if item.path:
        location: dict[str, Any] = {"path": display_path(item.path)}
        if item.line:
            location["range"] = {"start": {"line": max(int(item.line), 1)}}
        diagnostic["location"] = location
    return diagnostic


def to_rdjson(result: "RunResult") -> dict[str, Any]:
    """The ``DiagnosticResult`` as a dict."""
    from lintlora.report.sarif import INFORMATION_URI

    urls = rule_urls(result)
    lines = SourceLines()
    diagnostics = [_diagnostic(f, result, lines, urls) for f in result.findings]
    for error in result.errors:
        kind = "internal error" if error.code == "LL999" else "could not be fully linted"
        diagnostics.append(_file_diagnostic(error, "ERROR", f"{kind}: {error.message}"))
    for path in unparsed(result):
        diagnostics.append(_file_diagnostic(
            FileError(path, "", "LL000"), "INFO",
            "could not be parsed; LL000 syntax-error is ignored here, so nothing in this file "
            "was checked"))
    for notice in other_notices(result):
        diagnostics.append(_file_diagnostic(notice, "INFO", f"note: {notice.message}"))
    return {"source": {"name": "lintlora", "url": INFORMATION_URI}, "diagnostics": diagnostics}


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the ``DiagnosticResult`` JSON and a newline."""
    out.write(json_dumps(to_rdjson(result)) + "\n")
