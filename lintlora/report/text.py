"""Text output for a terminal (rich): findings grouped by file, memory figures, fixes, a summary.

Each finding is one line ``path:line:col CODE name message`` (``path:cell 3:line 5`` in a
notebook), so editors and terminals can jump to it, followed by the memory line, what the
finding rests on, and the fix, indented. Lines are never wrapped. Colour only on a terminal,
and never when ``NO_COLOR`` is set (rich's own rules); ``color=True/False`` forces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from lintlora.findings import FileError, Finding
from lintlora.report import counts, display_path, location, memory_line, plural, tally, unparsed

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "make_console"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def make_console(out: TextIO, color: bool | None = None, width: int | None = None):
    """A rich ``Console`` on ``out``: no wrapping, no markup or emoji codes in our text.

    ``width`` fixes the width tables are laid out in (default: the terminal's, or 80).
    """
    from rich.console import Console

    kwargs: dict = {}
    if width is not None:
        kwargs["width"] = width
    if color is True:
        kwargs["force_terminal"] = True
    elif color is False:
        kwargs["no_color"] = True
        kwargs["force_terminal"] = False
    return Console(file=out, soft_wrap=True, highlight=False, markup=False, emoji=False,
                   **kwargs)


def _finding_lines(finding: Finding):
    from rich.text import Text

    head = Text()
    head.append(location(finding), style="bold")
    head.append(" ")
    code_style = _STYLE.get(finding.severity.value, "")
    rule_url = _url(finding.code)
    head.append(finding.code, style=f"{code_style} link {rule_url}" if rule_url else code_style)
    head.append(" ")
    head.append(finding.name, style=code_style)
    head.append(" ")
    head.append(finding.message)
    yield head
    memory = memory_line(finding.estimate)
    if memory:
        yield Text("    " + memory, style="magenta")
    if finding.rests_on:
        yield Text("    rests on: " + "; ".join(finding.rests_on), style="dim")
    if finding.fix:
        fix_lines = finding.fix.splitlines() or [""]
        yield Text("    fix: " + fix_lines[0], style="green")
        for extra in fix_lines[1:]:
            yield Text("         " + extra, style="green")


def _url(code: str) -> str | None:
    from lintlora.rules.base import DOCS_URL

    return DOCS_URL.format(code=code) if code.startswith("LL") else None


def _error_line(error: FileError):
    from rich.text import Text

    where = display_path(error.path) if error.path else "lintlora"
    if error.line:
        where += f":{error.line}:{error.column or 1}"
    text = Text()
    text.append(where, style="bold")
    text.append(" ")
    text.append(error.code, style="bold red" if error.code == "LL999" else "red")
    text.append(" ")
    text.append(error.message)
    return text


def render(result: "RunResult", out: TextIO, *, color: bool | None = None, **_: object) -> None:
    """Write the report for ``result`` to ``out``."""
    from rich.text import Text

    console = make_console(out, color)
    by_path: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.span.path, []).append(finding)
    errors_by_path: dict[str, list[FileError]] = {}
    for error in result.errors:
        errors_by_path.setdefault(error.path, []).append(error)

    for path in sorted(set(by_path) | set(errors_by_path), key=lambda p: display_path(p) if p else ""):
        console.print(Text(display_path(path) if path else "lintlora", style="bold underline"))
        for error in errors_by_path.get(path, []):
            console.print(_error_line(error))
        for finding in by_path.get(path, []):
            for line in _finding_lines(finding):
                console.print(line)
        console.print()

    for notice in result.notices:
        console.print(Text(f"note: {display_path(notice.path)}: {notice.message}", style="dim"))

    not_parsed = unparsed(result)  # read, but not parsed, and their LL000 ignored
    n_files = len(result.files) - len(not_parsed)
    numbers = counts(result.findings)
    if result.findings:
        summary = (f"Found {plural(len(result.findings), 'problem')} ({tally(result.findings)}) "
                   f"in {plural(len(by_path), 'file')}; {plural(n_files, 'file')} checked")
    else:
        summary = f"No problems found; {plural(n_files, 'file')} checked"
    if not_parsed:
        summary += (f"; {plural(len(not_parsed), 'file')} could not be parsed and "
                    f"{'was' if len(not_parsed) == 1 else 'were'} not checked (LL000 "
                    f"syntax-error is ignored there)")
    style = "bold red" if numbers["error"] or result.errors else \
        "bold yellow" if not_parsed else "bold"
    console.print(Text(summary + ".", style=style))
    if result.findings:
        console.print(Text("Each rule's page: `lintlora explain CODE`.", style="dim"))
    if result.errors:
        internal = sum(1 for e in result.errors if e.code == "LL999")
        line = f"{plural(len(result.errors), 'file')} could not be fully linted"
        if internal:
            line += f" ({internal} internal error{'s' if internal != 1 else ''}: please report)"
        console.print(Text(line + ".", style="bold red"))
