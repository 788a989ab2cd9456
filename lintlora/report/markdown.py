"""``--format markdown``: a pull-request comment (GitHub-flavoured Markdown).

A heading with the counts, one table row per finding (severity, rule with a link to its page,
location, message with the estimate's note below it (the shape the peak was computed for, or
why there is none), estimated peak as written and after the fix, the GPU), then the fixes in a
collapsible section and any files that could not be linted. Text from findings is escaped so a
message cannot break the table or inject HTML: ``|`` becomes ``\\|``, line breaks ``<br>``, and
``<``, ``>``, ``&``, ``*``, ``_``, ``[``, ``]`` outside code spans are escaped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from lintlora.findings import Finding, Severity
from lintlora.report import (gib, gpu_size, location, memory_line, other_notices, plural,
                             rule_metadata, tally, unparsed)
from lintlora.report.locations import display_path

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "escape_cell", "to_markdown"]

_ICON = {Severity.ERROR: "🔴 error", Severity.WARNING: "🟠 warning", Severity.INFO: "🔵 info"}
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SPECIAL = re.compile(r"([\\*_\[\]])")


def _escape_text(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text)


def escape_cell(text: str) -> str:
    """Make ``text`` safe inside a table cell (code spans kept as code)."""
    pieces = []
    position = 0
    for m in _CODE_SPAN.finditer(text):
        pieces.append(_escape_text(text[position:m.start()]))
        pieces.append(m.group(0).replace("\n", " "))
        position = m.end()
    pieces.append(_escape_text(text[position:]))
    joined = "".join(pieces)
    return joined.replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def _code(text: str) -> str:
    """``text`` as an inline code span (backticks in it dropped)."""
    return "`" + text.replace("`", "") + "`"


def _rule_link(finding: Finding, urls: dict[str, str]) -> str:
    url = urls.get(finding.code)
    code = f"[{finding.code}]({url})" if url else finding.code
    return f"{code} {escape_cell(finding.name)}"


def _peaks(finding: Finding) -> tuple[str, str, str]:
    estimate = finding.estimate
    if estimate is None:
        return "—", "—", "—"
    gpu = "—"
    if estimate.gpu_memory_bytes:
        gpu = (f"{escape_cell(estimate.gpu)} ({gpu_size(estimate)})" if estimate.gpu
               else f"GPU with {gib(estimate.gpu_memory_bytes)}")
    if estimate.peak_bytes is None:
        return "not estimated", "—", gpu
    now = gib(estimate.peak_bytes)
    if estimate.gpu_memory_bytes and estimate.peak_bytes > estimate.gpu_memory_bytes:
        now += " ⚠️ does not fit"
    after = estimate.peak_after_fix_bytes
    if after is None:
        after_text = "—"
    elif after == estimate.peak_bytes:
        after_text = "unchanged"
    else:
        after_text = gib(after)
    return now, after_text, gpu


def to_markdown(result: "RunResult") -> str:
    """The comment body."""
    urls = {}
    for rule in result.rules:
        meta = rule_metadata(rule)
        if meta["code"] and meta["help_uri"]:
            urls[meta["code"]] = meta["help_uri"]
    lines: list[str] = []
    not_parsed = unparsed(result)  # read but not parsed, their LL000 ignored: not checked
    n_files = len(result.files) - len(not_parsed)
    if result.findings:
        lines.append(f"### lintlora: {plural(len(result.findings), 'finding')} "
                     f"({tally(result.findings)}) in {plural(n_files, 'checked file')}")
        lines.append("")
        lines.append("| Severity | Rule | Location | Finding | Peak as written | After the fix | GPU |")
        lines.append("|---|---|---|---|---|---|---|")
        for finding in result.findings:
            now, after, gpu = _peaks(finding)
            message = escape_cell(finding.message)
            if finding.estimate is not None and finding.estimate.note:
                # why there is no peak, or the shape the peak was computed for
                message += "<br><sub>" + escape_cell(finding.estimate.note) + "</sub>"
            where = _code(location(finding)).replace("|", "\\|")
            lines.append(f"| {_ICON[finding.severity]} | {_rule_link(finding, urls)} | "
                         f"{where} | {message} | {now} | {after} | {gpu} |")
        fixes = [f for f in result.findings if f.fix]
        if fixes:
            lines.append("")
            lines.append("<details><summary>How to fix</summary>")
            lines.append("")
            for finding in fixes:
                memory = memory_line(finding.estimate)
                lines.append(f"- **{finding.code}** at {_code(location(finding))}: "
                             f"{escape_cell(finding.fix or '')}"
                             + (f"<br><sub>{escape_cell(memory)}</sub>" if memory else ""))
            lines.append("")
            lines.append("</details>")
    elif not_parsed:
        lines.append(f"### lintlora: no problems found in {plural(n_files, 'checked file')}")
    else:
        lines.append(f"### lintlora: no problems found in {plural(n_files, 'checked file')} ✅")
    if not_parsed:
        lines.append("")
        lines.append(f"**{plural(len(not_parsed), 'file')} could not be parsed and "
                     f"{'was' if len(not_parsed) == 1 else 'were'} not checked** (LL000 "
                     f"syntax-error is ignored there): "
                     + ", ".join(_code(display_path(p)) for p in not_parsed))
    if result.errors:
        lines.append("")
        lines.append(f"**{plural(len(result.errors), 'file')} could not be fully linted:**")
        lines.append("")
        for error in result.errors:
            where = display_path(error.path) if error.path else "lintlora"
            lines.append(f"- {_code(where)} {error.code}: {escape_cell(error.message)}")
    notices = other_notices(result)
    if notices:
        lines.append("")
        lines.append("**Notes:**")
        lines.append("")
        for notice in notices:
            where = display_path(notice.path) if notice.path else "lintlora"
            lines.append(f"- {_code(where)}: {escape_cell(notice.message)}")
    lines.append("")
    lines.append("<sub>Peaks are lintlora's estimates of GPU memory (what nvidia-smi would show), "
                 "not measurements.</sub>")
    return "\n".join(lines) + "\n"


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the comment body."""
    out.write(to_markdown(result))
