"""``--format concise``: one line per finding, for pre-commit, editors' problem matchers and
terminals, in the shape of ruff's ``--output-format concise``::

    train.py:12:5: LL001 [*] gradient checkpointing is off ... (est. 27.9 GiB)
    nb.ipynb:cell 3:2:1: LL004 ... (est. 14.2 GiB)
    bad.py:1:1: LL998 could not be fully linted: ...
    note: cfg.yaml: not a training config (no model, no trainer keys)
    Found 2 findings (1 error, 1 warning) in 3 checked files.
    [*] 1 fixable with `lintlora --fix` (1 more with `lintlora --fix --unsafe-fixes`).

The finding line is ``path:line:column: CODE [*] message (est. PEAK)``: ruff's
``path:row:col: CODE [*] message``, ``[*]`` when the finding has a safe autofix (ruff's marker
for a fix ``--fix`` applies); notebook findings read ``path:cell N:line:column`` as ruff
writes them (``notebook.ipynb:cell 2:7:12: F401 [*] ...`` in astral-sh/ruff#11833); the
estimated peak (GPU memory, as written) ends the line when there is one. Files that could not
be linted are lines of the same shape (``LL998``/``LL999``, at line 1 when the error has no
line), so a problem matcher sees them; files not parsed (``LL000`` ignored) and notices are
``note:`` lines, which no ``path:line:col:`` matcher takes for a finding. The summary follows
ruff's (``Found 2 errors.``, ``[*] 1 fixable with the `--fix` option.``, as ruff >= 0.1 prints
them: the expected output in pydantic/pytest-examples' ``tests/test_run_examples.py``, updated
for ruff 0.1.0) in lintlora's words.

Every name and message goes through :func:`lintlora.report.escape.for_terminal` (control
characters, ESC sequences, bidirectional overrides and line breaks shown as escapes, ``##[``
broken) and each whole line through :func:`~lintlora.report.escape.terminal_line`, so a file
name or message can neither colour the terminal nor start a line of its own (a forged
finding, a GitHub Actions workflow command). No colour, no rich import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TextIO

from lintlora.findings import Finding
from lintlora.report import gib, other_notices, plural, tally, unparsed
from lintlora.report.escape import for_terminal, terminal_line
from lintlora.report.locations import display_path

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "finding_line"]


def _default_mode(finding: Finding) -> str | None:
    """``"safe"``/``"unsafe"`` from the finding's own fix (no ``fixable``/``unfixable`` read):
    the mode when the caller passes none."""
    fix = finding.autofix
    return fix.safety.value if fix is not None and fix.ops else None


def finding_line(finding: Finding, safe_fix: bool | None = None) -> str:
    """One finding as a concise line (no line break); ``safe_fix``: whether plain ``--fix``
    fixes it (marked ``[*]``; ``None``: read from its own fix)."""
    span = finding.span
    path = for_terminal(display_path(span.path))
    where = (f"{path}:cell {span.cell}:{span.line}:{span.column}" if span.cell is not None
             else f"{path}:{span.line}:{span.column}")
    if safe_fix is None:
        safe_fix = _default_mode(finding) == "safe"
    marker = " [*]" if safe_fix else ""
    line = f"{where}: {for_terminal(finding.code)}{marker} {for_terminal(finding.message)}"
    estimate = finding.estimate
    if estimate is not None and estimate.peak_bytes is not None:
        line += f" (est. {gib(estimate.peak_bytes)})"
    return terminal_line(line)


def render(result: "RunResult", out: TextIO,
           fixable: Callable[[Finding], str | None] | None = None, **_: object) -> None:
    """Write one line per finding, file error and notice, then the summary. ``fixable``: as
    the text reporter's (:func:`lintlora.report.text.report_lines`: the command line passes
    one that reads ``[tool.lintlora] fixable``/``unfixable``)."""
    modes = [(fixable or _default_mode)(f) for f in result.findings]
    for finding, mode in zip(result.findings, modes):
        out.write(finding_line(finding, mode == "safe") + "\n")
    for error in result.errors:
        kind = "internal error" if error.code == "LL999" else "could not be fully linted"
        where = for_terminal(display_path(error.path)) if error.path else "lintlora"
        out.write(terminal_line(f"{where}:{error.line or 1}:{error.column or 1}: "
                                f"{for_terminal(error.code)} {kind}: "
                                f"{for_terminal(error.message)}") + "\n")
    not_parsed = unparsed(result)
    for path in not_parsed:
        out.write(terminal_line(f"note: {for_terminal(display_path(path))}: could not be "
                                f"parsed; LL000 syntax-error is ignored here, so nothing in "
                                f"this file was checked") + "\n")
    for notice in other_notices(result):
        where = f"{for_terminal(display_path(notice.path))}: " if notice.path else ""
        out.write(terminal_line(f"note: {where}{for_terminal(notice.message)}") + "\n")
    checked = plural(len(result.files) - len(not_parsed), "checked file")
    if result.findings:
        summary = (f"Found {plural(len(result.findings), 'finding')} "
                   f"({tally(result.findings)}) in {checked}.")
    else:
        summary = f"All checks passed ({checked})."
    if result.errors:
        summary += f" {plural(len(result.errors), 'file')} could not be fully linted."
    out.write(summary + "\n")
    safe = modes.count("safe")
    unsafe = modes.count("unsafe")
    if safe or unsafe:
        words = f"[*] {safe} fixable with `lintlora --fix`" if safe else "No safe fixes"
        if unsafe:
            words += (f" ({unsafe} {'more' if safe else 'unsafe'} with "
                      f"`lintlora --fix --unsafe-fixes`)")
        out.write(words + ".\n")
