"""Text output for a terminal (rich): findings grouped by file, memory figures, fixes, a summary.

Each finding is one line ``path:line:col CODE name message`` (``path:cell 3:line 5`` in a
notebook), so editors and terminals can jump to it, followed by the memory line, what the
finding rests on, and the fix, indented. Lines are never wrapped. Colour only on a terminal,
and never when ``NO_COLOR`` is set (rich's own rules); ``color=True/False`` forces it.

The report is first built as lines of styled parts (:func:`report_lines`). Rich prints them
where it may style them. Where it would not (``color=False``, or a stream that is no terminal,
the case of pre-commit, CI and pipes), rich writes each line's characters unchanged, so the
lines are written directly and rich is not imported (about 20 ms of a one-file run):
:func:`_unstyled` says when, and :func:`_written_as_is` which characters rich would change
(it drops some control characters and expands tabs; such a report goes through rich).
``tests/test_report_text_plain.py`` checks the two paths write the same bytes.

Every path, name, value and message is the pull request's text and goes through
:func:`lintlora.report.escape.for_terminal` (control characters, ESC sequences, bidi overrides
and line breaks shown as ``\\x1b``, ``<U+202E>``, ``\\n``), and every line through
:func:`~lintlora.report.escape.terminal_line`: this report is what pre-commit prints in a GitHub
Actions log, where a line starting with ``::`` is a workflow command (:func:`_guarded`).
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, TextIO

from lintlora.findings import FileError, Finding
from lintlora.report import counts, display_path, location, memory_line, plural, tally, unparsed
from lintlora.report.escape import for_terminal, terminal_line
from lintlora.report.locations import related_text

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "make_console", "Line", "report_lines", "fix_mode", "FIX_MARK"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class Line(NamedTuple):
    """One printed line: ``parts``, each ``(text, style)``, after one another; ``style`` (a
    rich style definition, ``""`` for none) applies to the whole line. An empty ``parts`` is
    an empty line."""

    parts: tuple[tuple[str, str], ...] = ()
    style: str = ""

    @property
    def plain(self) -> str:
        """The line's characters, without styles."""
        return "".join(text for text, _ in self.parts)


def _line(text: str, style: str = "") -> Line:
    return Line(((text, ""),), style)


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


FIX_MARK = "[*]"
"""Marks a finding whose fix ``--fix`` applies (ruff's marker for a fix available in the
current mode: ``F401 [*] ...``), after the rule's name so ``CODE name`` stays one word pair."""


def fix_mode(finding: Finding) -> str | None:
    """The default of :func:`report_lines`' ``fixable``: ``"safe"`` for a finding whose
    :attr:`~lintlora.findings.Finding.autofix` is safe, ``"unsafe"`` for an unsafe one, else
    ``None`` (the command line passes one that also reads ``fixable``/``unfixable``)."""
    fix = finding.autofix
    if fix is None or not fix.ops:
        return None
    return fix.safety.value


def _finding_lines(finding: Finding, mode: str | None = None) -> Iterator[Line]:
    code_style = _STYLE.get(finding.severity.value, "")
    rule_url = _url(finding.code)
    mark = ((FIX_MARK, "bold green"), (" ", "")) if mode == "safe" else ()
    yield Line(((for_terminal(location(finding)), "bold"), (" ", ""),
                (for_terminal(finding.code),
                 f"{code_style} link {rule_url}" if rule_url else code_style),
                (" ", ""), (for_terminal(finding.name), code_style), (" ", ""), *mark,
                (for_terminal(finding.message), "")))
    memory = memory_line(finding.estimate)
    if memory:
        yield _line("    " + for_terminal(memory), "magenta")
    if finding.rests_on:
        yield _line("    rests on: " + "; ".join(for_terminal(r) for r in finding.rests_on), "dim")
    for related in finding.related:  # "launched by run.sh:3", a launch value's line
        yield _line("    " + for_terminal(related_text(related)), "dim")
    if finding.fix:
        # a plugin's fix may have lines of its own: each printed indented, escaped, and
        # guarded by _guarded (a line break is the only character kept from the fix)
        fix_lines = [for_terminal(piece) for piece in finding.fix.replace("\r\n", "\n").split("\n")]
        yield _line("    fix: " + fix_lines[0], "green")
        for extra in fix_lines[1:]:
            yield _line("         " + extra, "green")


def _url(code: str) -> str | None:
    from lintlora.rules.base import DOCS_URL

    return DOCS_URL.format(code=code) if code.startswith("LL") else None


def _error_line(error: FileError) -> Line:
    where = for_terminal(display_path(error.path)) if error.path else "lintlora"
    if error.line:
        where += f":{error.line}:{error.column or 1}"
    return Line(((where, "bold"), (" ", ""),
                 (for_terminal(error.code), "bold red" if error.code == "LL999" else "red"),
                 (" ", ""), (for_terminal(error.message), "")))


def _guarded(line: Line) -> Line:
    """``line``, made no GitHub Actions workflow command (:func:`terminal_line`): a file
    named ``::error file=x::y.py`` would otherwise start its header and finding lines."""
    plain = line.plain
    guarded = terminal_line(plain)
    if guarded == plain:
        return line
    parts = list(line.parts)
    for i, (text, style) in enumerate(parts):
        if text.strip():
            parts[i] = (terminal_line(text), style)
            break
    return Line(tuple(parts), line.style)


def report_lines(result: "RunResult", fixable: Callable[[Finding], str | None] | None = None
                 ) -> list[Line]:
    """The report of ``result``, line by line (see :class:`Line`).

    ``fixable(finding)`` says which fix ``--fix`` would apply to a finding: ``"safe"`` (marked
    :data:`FIX_MARK`; ``--fix``), ``"unsafe"`` (``--fix --unsafe-fixes``) or ``None``
    (default :func:`fix_mode`); the summary counts them (``2 fixable with --fix (1 more with
    --unsafe-fixes)``, ruff's closing line).
    """
    fixable = fixable or fix_mode
    modes = {id(f): fixable(f) for f in result.findings}
    lines: list[Line] = []
    by_path: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.span.path, []).append(finding)
    errors_by_path: dict[str, list[FileError]] = {}
    for error in result.errors:
        errors_by_path.setdefault(error.path, []).append(error)

    for path in sorted(set(by_path) | set(errors_by_path), key=lambda p: display_path(p) if p else ""):
        lines.append(_line(for_terminal(display_path(path)) if path else "lintlora",
                           "bold underline"))
        for error in errors_by_path.get(path, []):
            lines.append(_error_line(error))
        for finding in by_path.get(path, []):
            lines.extend(_finding_lines(finding, modes[id(finding)]))
        lines.append(Line())

    for notice in result.notices:
        lines.append(_line(f"note: {for_terminal(display_path(notice.path))}: "
                           f"{for_terminal(notice.message)}", "dim"))

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
    # the fixes counted on the line before the summary (ruff's "[*] N fixable with the --fix
    # option", kept off the summary line, which CI logs and hooks read as the run's last word)
    safe = sum(1 for m in modes.values() if m == "safe")
    unsafe = sum(1 for m in modes.values() if m == "unsafe")
    if safe:
        more = f" ({unsafe} more with --unsafe-fixes)" if unsafe else ""
        lines.append(_line(f"{FIX_MARK} {safe} fixable with --fix{more}.", "green"))
    elif unsafe:
        lines.append(_line(f"{unsafe} fixable with --fix --unsafe-fixes.", "green"))
    lines.append(_line(summary + ".", style))
    if result.findings:
        lines.append(_line("Each rule's page: `lintlora explain CODE`.", "dim"))
    if result.errors:
        internal = sum(1 for e in result.errors if e.code == "LL999")
        line = f"{plural(len(result.errors), 'file')} could not be fully linted"
        if internal:
            line += f" ({internal} internal error{'s' if internal != 1 else ''}: please report)"
        lines.append(_line(line + ".", "bold red"))
    return [_guarded(line) for line in lines]


def _unstyled(out: TextIO, color: bool | None) -> bool:
    """Whether the rich console of :func:`make_console` would write ``out`` without escape
    codes: ``color=False``, or ``color=None`` on a stream whose ``isatty()`` is false.

    Rich 13-15 (``Console.is_terminal``) also lets ``FORCE_COLOR`` and ``TTY_COMPATIBLE``
    make any stream a terminal, and treats Jupyter, IDLE and legacy Windows consoles in ways
    of their own: with any of those present this says ``False`` and rich decides.
    """
    if "get_ipython" in vars(builtins) or "idlelib" in sys.modules or sys.platform == "win32":
        return False
    if color is not None:
        return not color
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    isatty = getattr(out, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stream: rich's own answer is "no terminal", but let it say
        return False


_CHANGED_BY_RICH = re.compile("[\t\a\b\v\f\r]")
"""Characters rich's ``Text`` does not print as they are: it drops BEL, BS, VT, FF and CR
(``rich.control.strip_control_codes``) and expands tabs (``Text.expand_tabs``)."""


def _written_as_is(lines: list[Line]) -> bool:
    """Whether rich, writing unstyled, would write every line's characters unchanged."""
    return not any(_CHANGED_BY_RICH.search(text) for line in lines for text, _ in line.parts)


def render(result: "RunResult", out: TextIO, *, color: bool | None = None,
           fixable: Callable[[Finding], str | None] | None = None, **_: object) -> None:
    """Write the report for ``result`` to ``out`` (``fixable``: see :func:`report_lines`)."""
    lines = report_lines(result, fixable)
    if _unstyled(out, color) and _written_as_is(lines):
        for line in lines:  # written and flushed line by line, as rich does each print
            out.write(line.plain + "\n")
            out.flush()
        return
    _render_rich(lines, out, color)


def _render_rich(lines: list[Line], out: TextIO, color: bool | None) -> None:
    from rich.text import Text

    console = make_console(out, color)
    for line in lines:
        if line.parts:
            console.print(Text.assemble(*line.parts, style=line.style))
        else:
            console.print()
