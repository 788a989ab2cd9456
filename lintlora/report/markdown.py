"""``--format markdown``: a pull-request comment (GitHub-flavoured Markdown).

A heading with the counts, one table row per finding (severity, rule with a link to its page,
location, message with the estimate's note below it (the shape the peak was computed for, or
why there is none), estimated peak as written and after the fix, the GPU), then the fixes in a
collapsible section and any files that could not be linted.

Names, values and messages are the pull request's text: each goes through
:mod:`lintlora.report.escape`. Paths and locations are code spans built by CommonMark's rule
(:func:`~lintlora.report.escape.markdown_code_span`); messages keep their backtick-quoted code
as code spans and have every other Markdown-significant character escaped, ``<``/``>``/``&``
as entities, ``@`` and ``#`` neutralised (:func:`~lintlora.report.escape.markdown_text`); in
the table every ``|`` is escaped (:func:`~lintlora.report.escape.markdown_table_cell`). So a
message or a file name cannot break the table, start a heading, add HTML or a link, or mention
anyone; ``tests/test_security_escape.py`` renders the output with a CommonMark renderer to
check it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from lintlora.findings import Finding, Severity
from lintlora.report import (gib, gpu_size, location, memory_line, other_notices, plural,
                             rule_urls, tally, unparsed)
from lintlora.report.escape import markdown_code_span, markdown_table_cell, markdown_text
from lintlora.report.locations import display_path, related_text

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "escape_cell", "to_markdown", "markdown_fence", "MAX_SUGGESTION_LINES"]

_ICON = {Severity.ERROR: "🔴 error", Severity.WARNING: "🟠 warning", Severity.INFO: "🔵 info"}
_SAFE_URL = re.compile(r"https?://[^\s()<>\[\]`|\\]+")
"""A rule page's address that can be a link destination as it is (a plugin's ``help_uri``
that is not is shown without a link)."""


def escape_cell(text: str) -> str:
    """A message as the content of one table cell: :func:`markdown_text` (its backtick-quoted
    code kept as code), then :func:`markdown_table_cell`."""
    return markdown_table_cell(markdown_text(text))


def _code(text: str) -> str:
    """``text`` (a path, a location) as an inline code span showing it literally."""
    return markdown_code_span(text)


def _rule_link(finding: Finding, urls: dict[str, str]) -> str:
    url = urls.get(finding.code)
    code = markdown_text(finding.code)
    if url and _SAFE_URL.fullmatch(url):
        code = f"[{code}]({url})"
    return f"{code} {markdown_text(finding.name)}"


def _peaks(finding: Finding) -> tuple[str, str, str]:
    estimate = finding.estimate
    if estimate is None:
        return "—", "—", "—"
    gpu = "—"
    if estimate.gpu_memory_bytes:
        gpu = (f"{markdown_text(estimate.gpu)} ({gpu_size(estimate)})" if estimate.gpu
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


def markdown_fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (shared with
    :mod:`lintlora.github_review`'s review comments)."""
    longest = max((len(m.group(0)) for m in re.finditer("`+", text)), default=0)
    return "`" * max(3, longest + 1)


MAX_SUGGESTION_LINES = 20
"""Lines a fix's ``suggestion`` block may span in the comment; a fix whose edits lie further
apart is shown as a ``diff`` of the lines it changes (tloen/alpaca-lora's ``finetune.py``:
LL002's fix edits lines 115 and 242, a 128-line block for two words)."""


def _diff_block(path: str, first: int, last: int, new: str) -> str | None:
    """The lines ``first``..``last`` of ``path`` and their replacement ``new`` as ``@@ -a,n
    +b,m @@`` hunks of ``-``/``+`` lines (numbers of the file, no context), or ``None`` when
    the file cannot be read again; the regions come from :func:`lintlora.linediff.
    changed_regions` (bounded time)."""
    from lintlora.autofix import read_source_text
    from lintlora.fixing import split_lines
    from lintlora.linediff import changed_regions

    def lines_of(text: str) -> list[str]:  # the lines the edits count, without their breaks
        return [line.rstrip("\r\n") for line in split_lines(text)]

    try:
        old_lines = lines_of(read_source_text(path).text)[first - 1:last]
    except (OSError, ValueError):
        return None
    new_lines = lines_of(new)
    regions = sorted(changed_regions([x.encode("utf-8", "surrogatepass") for x in old_lines],
                                     [x.encode("utf-8", "surrogatepass") for x in new_lines]))
    out: list[str] = []
    for a_lo, a_hi, b_lo, b_hi in regions:
        out.append(f"@@ -{first + a_lo},{a_hi - a_lo} +{first + b_lo},{b_hi - b_lo} @@")
        out.extend("-" + line for line in old_lines[a_lo:a_hi])
        out.extend("+" + line for line in new_lines[b_lo:b_hi])
    return "\n".join(out) + "\n" if out else None


def _suggestions(result: "RunResult") -> list[str]:
    """The autofixes as GitHub ``suggestion`` blocks (issue 17): per fix, the lines it changes
    as they read after it, which a reviewer can apply from a review comment on those lines
    (a suggestion replaces the lines the comment covers: ``path`` lines ``first``-``last``);
    over :data:`MAX_SUGGESTION_LINES` lines, a ``diff`` of the changed lines instead.
    A notebook's fix is a suggestion on the ``.ipynb`` file's own lines, the JSON strings of
    the cell's source, as the pull request's source diff shows them (its rich diff takes no
    suggestions); the block says so."""
    from lintlora.report.fixes import suggestion

    out: list[str] = []
    for finding in result.findings:
        if finding.autofix is None:
            continue
        found = suggestion(result, finding)
        if found is None:
            continue
        path, first, last, new = found
        lines_ref = f"line {first}" if first == last else f"lines {first}-{last}"
        if finding.span.cell is not None and path.endswith(".ipynb"):
            lines_ref += " of the notebook's JSON"
        kind = "suggestion"
        if last - first + 1 > MAX_SUGGESTION_LINES:
            diff = _diff_block(path, first, last, new)
            if diff is not None:
                kind, new = "diff", diff
        fence = markdown_fence(new)
        body = new if new.endswith("\n") or not new else new + "\n"
        # the summary is fixed text: a line that opens an HTML block is not Markdown, so a
        # path or title there would be raw HTML; they go in the paragraph below it, escaped
        out.extend(["", "<details><summary>Autofix</summary>", "",
                    f"**{markdown_text(finding.code)}** at {_code(location(finding))}: "
                    f"{markdown_text(finding.autofix.title)} ({finding.autofix.safety.value}; "
                    f"{_code(display_path(path))} {lines_ref})", "",
                    f"{fence}{kind}",
                    # an empty block removes the lines (a blank line in it would be one line)
                    *([body.replace("\r\n", "\n").rstrip("\n")] if body else []), fence, "",
                    "</details>"])
    return out


def to_markdown(result: "RunResult") -> str:
    """The comment body."""
    urls = rule_urls(result)
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
            message = markdown_text(finding.message)
            if finding.estimate is not None and finding.estimate.note:
                # why there is no peak, or the shape the peak was computed for
                message += "<br><sub>" + markdown_text(finding.estimate.note) + "</sub>"
            for related in finding.related:  # "launched by run.sh:3"
                message += "<br><sub>" + markdown_text(related_text(related)) + "</sub>"
            cells = [_ICON[finding.severity], _rule_link(finding, urls), _code(location(finding)),
                     message, now, after, gpu]
            lines.append("| " + " | ".join(markdown_table_cell(c) for c in cells) + " |")
        fixes = [f for f in result.findings if f.fix]
        if fixes:
            lines.append("")
            lines.append("<details><summary>How to fix</summary>")
            lines.append("")
            for finding in fixes:
                memory = memory_line(finding.estimate)
                lines.append(f"- **{markdown_text(finding.code)}** at {_code(location(finding))}: "
                             f"{markdown_text(finding.fix or '')}"
                             + (f"<br><sub>{markdown_text(memory)}</sub>" if memory else ""))
            lines.append("")
            lines.append("</details>")
        lines.extend(_suggestions(result))
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
            lines.append(f"- {_code(where)} {markdown_text(error.code)}: "
                         f"{markdown_text(error.message)}")
    notices = other_notices(result)
    if notices:
        lines.append("")
        lines.append("**Notes:**")
        lines.append("")
        for notice in notices:
            where = display_path(notice.path) if notice.path else "lintlora"
            lines.append(f"- {_code(where)}: {markdown_text(notice.message)}")
    lines.append("")
    lines.append("<sub>Peaks are lintlora's estimates of GPU memory (what nvidia-smi would show), "
                 "not measurements.</sub>")
    return "\n".join(lines) + "\n"


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the comment body."""
    out.write(to_markdown(result))
