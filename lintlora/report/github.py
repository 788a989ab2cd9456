"""``--format github``: GitHub Actions workflow commands that annotate the pull request.

One line per finding, e.g.::

    ::warning file=train.py,line=12,col=5,endLine=12,endColumn=40,title=LL001 gradient-checkpointing-off::message%0Apeak ≈ ...

Severity maps to ``error``/``warning``/``notice``. Every name and message goes through
:func:`lintlora.report.escape.for_github_command_property` or
:func:`~lintlora.report.escape.for_github_command_data`: unprintable characters shown
(``\\x1b``, ``<U+202E>``), then the runner's escaping (actions/toolkit
``packages/core/src/command.ts``, ``escapeData`` and ``escapeProperty``): ``%``, ``\\r`` and
``\\n`` in the message; additionally ``:`` and ``,`` in property values. So each finding is
exactly one line, one workflow command, whatever its file name or message holds. Notebook
findings point at the ``.ipynb`` file line holding the cell's source line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from lintlora.findings import Finding, Severity
from lintlora.report import memory_line, other_notices, plural, rule_urls, tally, unparsed
from lintlora.report.escape import for_github_command_data, for_github_command_property
from lintlora.report.locations import display_path, file_line, related_text

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "escape_data", "escape_property", "annotation"]

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message (unprintable characters shown, line breaks kept
    as ``%0A``): :func:`lintlora.report.escape.for_github_command_data`."""
    return for_github_command_data(text)


def escape_property(text: str) -> str:
    """Escape a workflow command's property value:
    :func:`lintlora.report.escape.for_github_command_property`."""
    return for_github_command_property(text)


def _command(kind: str, properties: list[tuple[str, object]], message: str) -> str:
    """One workflow command: every property value and the message escaped here, so no
    caller can forget it."""
    props = ",".join(f"{key}={for_github_command_property(str(value))}"
                     for key, value in properties if value is not None)
    data = for_github_command_data(message)
    return f"::{kind} {props}::{data}" if props else f"::{kind}::{data}"


def annotation(finding: Finding, cell_lines: dict | None = None,
               help_uri: str | None = None) -> str:
    """The workflow command for one finding (``help_uri``: the rule's page, appended)."""
    span = finding.span
    props: list[tuple[str, object]] = [("file", display_path(span.path))]
    message = finding.message
    if span.cell is not None:
        start = file_line(cell_lines, span.cell, span.line)
        props += [("line", start), ("endLine", max(start, file_line(cell_lines, span.cell,
                                                                      span.last_line)))]
        message = f"cell {span.cell}, line {span.line}: {message}"
    else:
        end_line = span.end_line if span.end_line is not None else span.line
        props += [("line", span.line), ("endLine", end_line)]
        if end_line == span.line:
            # columns only on a one-line span: the runner rejects col/endColumn when line and
            # endLine differ (actions/runner#2082, ValidateLinesAndColumns; the toolkit's
            # AnnotationProperties: "Cannot be sent when StartLine and EndLine are different")
            props.insert(2, ("col", span.column))
            if span.end_column is not None and span.end_column > span.column:
                props.append(("endColumn", span.end_column))
    props.append(("title", f"{finding.code} {finding.name}"))
    memory = memory_line(finding.estimate)
    if memory:
        message += "\n" + memory
    for related in finding.related:  # "launched by run.sh:3"
        message += "\n" + related_text(related)
    if finding.fix:
        message += "\nFix: " + finding.fix
    if finding.autofix is not None:  # issue 17: `lintlora --fix` applies it
        flag = "--fix" if finding.autofix.safety.value == "safe" else "--fix --unsafe-fixes"
        message += f"\nAutofix ({finding.autofix.safety.value}, lintlora {flag}): {finding.autofix.title}"
    if help_uri:
        message += "\nRule: " + help_uri
    return _command(_COMMAND[finding.severity], props, message)


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write one workflow command per finding, error and notice, then a plain summary line."""
    urls = rule_urls(result)
    for finding in result.findings:
        out.write(annotation(finding, result.cell_lines.get(finding.span.path),
                             urls.get(finding.code)) + "\n")
    for error in result.errors:
        props: list[tuple[str, object]] = []
        if error.path:
            props.append(("file", display_path(error.path)))
        if error.line:
            props.append(("line", error.line))
        props.append(("title", f"{error.code} {'internal-error' if error.code == 'LL999' else 'input-error'}"))
        out.write(_command("error", props, error.message) + "\n")
    not_parsed = unparsed(result)
    for path in not_parsed:
        out.write(_command("notice", [("file", display_path(path)),
                                       ("title", "LL000 syntax-error (ignored)")],
                           "could not be parsed; LL000 is ignored here, so nothing in this file "
                           "was checked") + "\n")
    for notice in other_notices(result):
        props = [("file", display_path(notice.path))] if notice.path else []
        if notice.line:
            props.append(("line", notice.line))
        props.append(("title", "lintlora note"))
        out.write(_command("notice", props, notice.message) + "\n")
    summary = f"lintlora: {plural(len(result.findings), 'finding')}"
    if result.findings:
        summary += f" ({tally(result.findings)})"
    summary += f" in {plural(len(result.files) - len(not_parsed), 'checked file')}"
    if not_parsed:
        summary += f"; {plural(len(not_parsed), 'file')} not parsed (LL000 ignored)"
    if result.errors:
        summary += f"; {plural(len(result.errors), 'file')} could not be fully linted"
    out.write(summary + "\n")
