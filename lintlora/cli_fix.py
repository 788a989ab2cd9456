"""The command line's fixing modes (issue 17, ruff's conventions): ``--fix``, ``--fix-only``,
``--diff``, ``--unsafe-fixes``, ``--show-fixes``.

- ``--fix`` applies the safe fixes (``--unsafe-fixes``: the unsafe ones too), lints again and
  reports what remains; the exit status is the remaining findings'. Fixing runs in passes (at
  most :data:`MAX_PASSES`) until no fix changes anything, so fixes skipped because they
  overlapped another apply on the next pass and a second ``--fix`` changes nothing.
- ``--fix-only`` applies them and reports no findings (exit status 0, 2 on an internal error).
- ``--diff`` prints the unified diff ``--fix`` would write and changes nothing: exit status 1
  when it would change something, else 0. It makes the same passes, in memory
  (:func:`_diff_passes`: the next lint reads the texts the last pass would write through
  :func:`lintlora.safeio.overlay`), so it shows every edit ``--fix`` makes.
- ``--unsafe-fixes`` without ``--fix``/``--diff``: lints as usual and says which findings have
  a fix and of what safety (like ``--show-fixes``).
- ``--show-fixes``: the fixes applied (with ``--fix``) or available, per finding.

The summary goes to standard error, so the report on standard output stays a valid document
in every format: ``Fixed N problems (M more fixable with --unsafe-fixes); K remaining``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import click

__all__ = ["MAX_PASSES", "FixOptions", "run_fix_modes", "diff_for_output"]

MAX_PASSES = 8
"""Fix-and-relint rounds at most (ruff stops after 100; lintlora's fixes settle in one or two)."""


class FixOptions:
    def __init__(self, fix: bool, fix_only: bool, diff: bool, unsafe: bool, show: bool) -> None:
        self.fix = fix or fix_only
        self.fix_only = fix_only
        self.diff = diff
        self.unsafe = unsafe
        self.show = show

    @property
    def active(self) -> bool:
        return self.fix or self.diff


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _say(text: str) -> None:
    """One line on standard error: escaped for a terminal, and made so that the GitHub
    Actions runner cannot read it as a workflow command (``--show-fixes`` lines begin with a
    file's name, which may be ``::error::x.py``: :func:`lintlora.report.escape.terminal_line`)."""
    from lintlora.report.escape import for_terminal, terminal_line

    click.echo(terminal_line(for_terminal(text)), err=True)


def _plan(result: Any, settings_for: Callable[[str], Any], unsafe: bool) -> Any:
    from lintlora.autofix import plan_fixes

    inputs = [p for read in getattr(result, "inputs", {}).values() for p in read]
    return plan_fixes(result.findings, settings_for, unsafe=unsafe, linted=result.files,
                      read_inputs=inputs)


def run_fix_modes(options: FixOptions, result: Any, relint: Callable[[], Any],
                  settings_for: Callable[[str], Any]) -> tuple[Any, int | None, list]:
    """Carry out ``--diff`` or ``--fix`` on a finished lint.

    Returns ``(result, status, applied)``: the result to report (after fixing, the new lint),
    an exit status that overrides the report's (``--diff``, ``--fix-only``), or ``None``, and
    the ``(finding, outcome)`` pairs applied.
    """
    from lintlora.autofix import diff_texts, fix_counts, write_back
    from lintlora.report.locations import display_path

    if options.diff:
        old, new, would, run = _diff_passes(options, result, relint, settings_for)
        diff = diff_texts(old, new, display_path)
        if diff:
            sys.stdout.write(diff_for_output(diff, sys.stdout))
            sys.stdout.flush()
        _report_refusals(run)
        _report_skipped(run)
        safe, unsafe = fix_counts(result.findings, settings_for)
        more = unsafe if not options.unsafe else 0
        extra = f" ({more} more fixable with --unsafe-fixes)" if more else ""
        _say(f"Would fix {_plural(would, 'problem')}{extra}" if would else
             f"No fixes to apply{extra}")
        if result.internal_error:
            return result, 2, []
        return result, 1 if any(new[p] != old[p] for p in new) else 0, []
    applied: list = []
    for _round in range(MAX_PASSES):
        run = _plan(result, settings_for, options.unsafe)
        _report_refusals(run)
        if not run.plan.changed():
            _report_skipped(run)
            break
        written, problems = write_back(run)
        for path, why in sorted(problems.items()):
            _say(f"lintlora: warning: {display_path(path)}: {why}")
        written_set = set(written)
        applied.extend((f, o) for f, o in run.applied()
                       if all(e.path in written_set for e in o.edits))
        if not written:
            break
        result = relint()
    status = None
    if options.fix_only:
        status = 2 if result.internal_error else 0
    return result, status, applied


def _diff_passes(options: FixOptions, result: Any, relint: Callable[[], Any],
                 settings_for: Callable[[str], Any]) -> tuple[dict, dict, int, Any]:
    """``--diff``: the passes ``--fix`` would make, in memory. Each pass plans the fixes of the
    last lint; the texts it would write are put in :func:`lintlora.safeio.overlay`, and the
    next lint and plan read them there (nothing is written), up to :data:`MAX_PASSES`, until a
    pass changes nothing. Returns (path -> the text on disk, path -> the text after every
    pass, the fixes applied in all, the last pass's plan)."""
    from lintlora.safeio import overlay

    old: dict[str, str] = {}
    new: dict[str, str] = {}
    pending: dict[str, bytes] = {}
    would = 0
    run = _plan(result, settings_for, options.unsafe)
    for round_ in range(MAX_PASSES):
        changed = run.plan.changed()
        if not changed:
            break
        would += len(run.applied())
        for path in changed:
            old.setdefault(path, run.plan.old[path])
            new[path] = run.plan.new[path]
            pending[path] = run.sources[path].encode(run.plan.new[path])
        if round_ == MAX_PASSES - 1:
            break
        with overlay(pending):
            again = relint()
            run = _plan(again, settings_for, options.unsafe)
    return old, new, would, run


def diff_for_output(diff: str, out: Any, environ: Any = None) -> str:
    """The ``--diff`` text as it is printed: the lines of files a pull request's author wrote.

    - To a terminal (``out.isatty()``): every line's control and format characters shown as
      escapes (:func:`lintlora.report.escape.visible`; the tab and the line break kept), so
      an ESC sequence in a file cannot repaint, retitle or hide part of the screen. The diff
      is then for reading, not for ``git apply``.
    - In a GitHub Actions job (``GITHUB_ACTIONS=true``, not a terminal): the exact diff,
      between ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a random token, so a context
      line reading `` ::error::...`` or holding ``##[`` is not run as a workflow command (the
      runner's ``ActionCommandManager.TryProcessCommand`` ignores every command, of either
      form, until the token; ``ActionCommand.TryParseV2`` takes ``::`` after leading white
      space, ``TryParse`` ``##[`` anywhere; actions/runner ``src/Runner.Worker``). ``git
      apply`` and ``patch`` skip the two lines (text outside a hunk).
    - Elsewhere (a pipe, a file): the exact diff.
    """
    import os

    environ = os.environ if environ is None else environ
    isatty = getattr(out, "isatty", None)
    if callable(isatty) and isatty():
        from lintlora.fixing import split_lines
        from lintlora.report.escape import visible

        lines = []
        for line in split_lines(diff):
            body = line.rstrip("\r\n")
            lines.append("\t".join(visible(part) for part in body.split("\t")) + "\n")
        return "".join(lines)
    if environ.get("GITHUB_ACTIONS") == "true":
        import secrets

        token = secrets.token_hex(16)
        return f"::stop-commands::{token}\n{diff}::{token}::\n"
    return diff


def _report_refusals(run: Any) -> None:
    from lintlora.report.locations import display_path

    for path, why in sorted(run.refused.items()):
        _say(f"lintlora: warning: not fixing {display_path(path)}: {why}")


def _report_skipped(run: Any) -> None:
    from lintlora.report import location

    for finding, outcome in run.skipped():
        _say(f"lintlora: note: {location(finding)} {finding.code}: fix "
             f"{finding.autofix.title!r} not applied: "
             f"{'overlaps another fix' if outcome.status == 'overlaps' else outcome.reason}")


def summary(options: FixOptions, result: Any, applied: list,
            settings_for: Callable[[str], Any]) -> None:
    """The closing line(s) on standard error, and ``--show-fixes``' list."""
    from lintlora.autofix import fix_counts, fix_mode
    from lintlora.report import location

    if options.show:
        if options.fix:
            _say(f"Fixed {_plural(len(applied), 'problem')}" + (":" if applied else "."))
            for finding, outcome in applied:
                _say(f"  {location(finding)} {finding.code} {finding.autofix.title} "
                     f"({finding.autofix.safety.value})")
        available = [f for f in result.findings if f.autofix is not None]
        if available:
            _say("Fixes available:" if not options.fix else "Fixes not applied:")
            for finding in available:
                mode = fix_mode(finding, settings_for(finding.span.path))
                how = ("--fix" if mode == "safe" or (mode == "unsafe" and options.unsafe) else
                       "--unsafe-fixes" if mode == "unsafe" else "not fixable here (unfixable)")
                _say(f"  {location(finding)} {finding.code} {finding.autofix.title} "
                     f"({finding.autofix.safety.value}; {how})")
    elif options.unsafe and not options.active:
        for finding in result.findings:
            if finding.autofix is not None:
                _say(f"  {location(finding)} {finding.code} fix available "
                     f"({finding.autofix.safety.value}): {finding.autofix.title}")
    if not options.fix:
        if options.active or not (options.show or options.unsafe):
            return  # a plain lint says nothing more (its report is unchanged)
        safe, unsafe = fix_counts(result.findings, settings_for)
        if safe or (unsafe and options.unsafe):
            n = safe + (unsafe if options.unsafe else 0)
            hint = "--fix --unsafe-fixes" if options.unsafe and unsafe else "--fix"
            more = f" ({unsafe} more with --unsafe-fixes)" if unsafe and not options.unsafe else ""
            _say(f"{_plural(n, 'problem')} fixable with {hint}{more}")
        return
    safe, unsafe = fix_counts(result.findings, settings_for)
    more = f" ({unsafe} more fixable with --unsafe-fixes)" if unsafe and not options.unsafe else ""
    _say(f"Fixed {_plural(len(applied), 'problem')}{more}; {len(result.findings)} remaining")
