"""``--format gitlab``: a GitLab Code Quality report (``artifacts: reports: codequality:``), so
the merge request widget and changes view show the findings.

Format: GitLab's "Implement a custom tool" section of the Code Quality page
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format; the source
``doc/ci/testing/code_quality.md`` of gitlab-org/gitlab): a JSON array of objects with
``description``, ``check_name``, ``fingerprint``, ``severity`` (``info``, ``minor``, ``major``,
``critical``, ``blocker``), ``location.path`` and ``location.lines.begin``, "a subset of the
Code Climate spec" (https://github.com/codeclimate/platform/blob/master/spec/analyzers/SPEC.md,
"Issues", "Locations"), whose ``type: "issue"``, ``categories``, ``lines.end`` and ``content``
are written too. GitLab validates each entry with its
``app/validators/json_schemas/codeclimate.json`` (copied to ``fixtures/schemas/gitlab/`` with
the commit, validated in the tests, with a stricter schema written from the two documents) and
stops reading the report at the first entry that fails (``Gitlab::Ci::Parsers::Codequality::
CodeClimate#parse_all``: ``break unless valid_degradation?``), so every entry is complete.

Severity: ``error`` -> ``critical``, ``warning`` -> ``major``, ``info`` -> ``info``; a file
that could not be linted is ``major`` (``LL998``) or ``critical`` (``LL999``, an internal
error); a file not parsed with ``LL000`` ignored, and the run's notices, are ``info``.

Fingerprint: GitLab keys findings by fingerprint (``CodequalityReports#add_degradation``: a
second entry with the same fingerprint replaces the first) and compares the merge request's
report with the target branch's by it, so it must be distinct for distinct findings and the
same for the same finding when lines above it move. :func:`fingerprint` is the SHA-256 of the
path, the code, the message with its line references normalised (``line 12`` -> ``line #``,
``run.sh:3`` -> ``run.sh:#``), the content of the finding's first line with white space
collapsed (none for a finding about the whole file, the empty span at 1:1), and the
finding's rank among findings of the same path, code, message and line content (identical
lines flagged twice). No line or column number goes in.

Text: ``description`` is one line (Code Climate: "Descriptions must be a single line of text
(no newlines), with no HTML formatting"): the message with unprintable characters, line
breaks included, shown as escapes (:func:`lintlora.report.escape.visible`; GitLab shows it
as text, not HTML), cut at 2,000 characters; ``content.body`` (Markdown, which GitLab ignores and other Code
Climate readers show) has the memory estimate, the fix and the rule page, escaped with
:func:`~lintlora.report.escape.markdown_text`. Paths are relative to the working directory
(GitLab resolves them against the repository root: run lintlora there) and exact. The
document is strict ASCII JSON with no byte order mark (GitLab's parser refuses one).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, TextIO

from lintlora.findings import FileError, Finding, FixSafety, Severity
from lintlora.report import memory_line, other_notices, rule_urls, unparsed
from lintlora.report.escape import json_dumps, markdown_text, visible
from lintlora.report.locations import display_path, file_line, related_text
from lintlora.report.sourcelines import SourceLines

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "to_gitlab", "fingerprint", "SEVERITY"]

SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}
"""lintlora severity -> GitLab Code Quality severity."""

_FINGERPRINT_VERSION = "lintlora-codequality-1"
_LINE_REFERENCE = re.compile(r"\b(lines?|cell) \d+(?:\s*[-–]\s*\d+)?")
_FILE_LINE = re.compile(r"(\.[A-Za-z0-9_]+):\d+(?::\d+)?")
_MAX_DESCRIPTION = 2000
"""Characters of a description kept (a very long message is cut, with ``…``)."""


def _normalised(message: str) -> str:
    text = _LINE_REFERENCE.sub(lambda m: m.group(1) + " #", message)
    text = _FILE_LINE.sub(lambda m: m.group(1) + ":#", text)
    return " ".join(text.split())


def fingerprint(path: str, code: str, message: str, line_text: str | None, rank: int) -> str:
    """The stable fingerprint of one finding (see the module docstring): 64 hex digits."""
    parts = [_FINGERPRINT_VERSION, path, code, _normalised(message),
             " ".join((line_text or "").split()), str(rank)]
    data = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _about_the_file(span: Any) -> bool:
    """Whether the span is the empty one at 1:1 a rule gives a finding that no line holds (a
    default of the recipe: ``Span(path, 1, 1)``, ``lintlora/rules/base.py``): its fingerprint
    then holds no line content, so a line added at the top (a licence header) leaves it the
    same (litgpt's ``config_hub/finetune/gemma-7b/lora.yaml``, LL001)."""
    return span.cell is None and span.line == 1 and span.column == 1 and \
        span.end_line in (None, 1) and span.end_column in (None, 1)


def _description(text: str) -> str:
    line = visible(text)
    if len(line) > _MAX_DESCRIPTION:
        line = line[:_MAX_DESCRIPTION - 1] + "…"
    return line


def _lines(finding: Finding, cell_lines: dict | None) -> dict[str, int]:
    span = finding.span
    if span.cell is not None:
        begin = file_line(cell_lines, span.cell, span.line)
        end = file_line(cell_lines, span.cell, span.last_line)
    else:
        begin, end = span.line, span.last_line
    begin = max(int(begin), 1)
    return {"begin": begin, "end": max(int(end), begin)}


def _body(finding: Finding, url: str | None) -> str:
    parts = [markdown_text(finding.message)]
    memory = memory_line(finding.estimate)
    if memory:
        parts.append(markdown_text(memory))
    for related in finding.related:
        parts.append(markdown_text(related_text(related)))
    if finding.fix:
        parts.append("Fix: " + markdown_text(finding.fix))
    if finding.autofix is not None:
        flag = "--fix" if finding.autofix.safety is FixSafety.SAFE else "--fix --unsafe-fixes"
        parts.append(f"Autofix ({finding.autofix.safety.value}, `lintlora {flag}`): "
                     + markdown_text(finding.autofix.title))
    if url and re.fullmatch(r"https?://[^\s()<>\[\]`|\\]+", url):
        parts.append(f"Rule: {url}")
    return "\n\n".join(parts)


def _issue(check_name: str, description: str, severity: str, path: str, lines: dict,
           fingerprint_: str, body: str | None = None) -> dict[str, Any]:
    issue: dict[str, Any] = {
        "type": "issue",
        "check_name": check_name,
        "description": _description(description),
        "categories": ["Bug Risk"],
        "severity": severity,
        "fingerprint": fingerprint_,
        "location": {"path": path, "lines": lines},
    }
    if body:
        issue["content"] = {"body": body}
    return issue


def to_gitlab(result: "RunResult") -> list[dict[str, Any]]:
    """The report as a list of Code Climate issues."""
    urls = rule_urls(result)
    source = SourceLines()
    seen: dict[tuple, int] = {}
    issues = []
    for finding in result.findings:
        path = display_path(finding.span.path)
        lines = _lines(finding, result.cell_lines.get(finding.span.path))
        line_text = None if _about_the_file(finding.span) else \
            source.line(finding.span.path, lines["begin"])
        key = (path, finding.code, _normalised(finding.message), " ".join((line_text or "").split()))
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        message = finding.message
        if finding.span.cell is not None:
            message = f"cell {finding.span.cell}, line {finding.span.line}: {message}"
        issues.append(_issue(finding.code, message, SEVERITY[finding.severity], path, lines,
                             fingerprint(path, finding.code, finding.message, line_text, rank),
                             _body(finding, urls.get(finding.code))))
    extra: list[tuple[FileError, str, str]] = []
    for error in result.errors:
        kind = "internal error" if error.code == "LL999" else "could not be fully linted"
        extra.append((error, "critical" if error.code == "LL999" else "major",
                      f"{kind}: {error.message}"))
    for path in unparsed(result):
        extra.append((FileError(path, "", "LL000"), "info",
                      "could not be parsed; LL000 syntax-error is ignored here, so nothing in "
                      "this file was checked"))
    for notice in other_notices(result):
        extra.append((notice, "info", f"note: {notice.message}"))
    for item, severity, description in extra:
        path = display_path(item.path) if item.path else "."
        key = (path, item.code, _normalised(description), "")
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        begin = max(int(item.line or 1), 1)
        issues.append(_issue(item.code, description, severity, path,
                             {"begin": begin, "end": begin},
                             fingerprint(path, item.code, description, None, rank)))
    return issues


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the report (a JSON array) and a newline."""
    out.write(json_dumps(to_gitlab(result)) + "\n")
