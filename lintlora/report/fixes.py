"""The resolved edits of a finding's autofix, for the reporters (issue 17).

:func:`fix_edits` reads the files a fix names (bounded, no link followed:
:func:`lintlora.autofix.read_source_text`) and places its ops (:func:`lintlora.fixing.resolve`),
once per finding and run (memoized on the result, which the CLI may fill beforehand). A fix
that cannot be placed has no edits: reporters then show only its title.
"""

from __future__ import annotations

from typing import Any

from lintlora.findings import Finding, TextEdit

__all__ = ["fix_edits", "fix_to_json", "suggestion", "region_of", "changed_region"]

_MEMO = "_lintlora_fix_edits"


def fix_edits(result: Any, finding: Finding) -> tuple[TextEdit, ...] | None:
    """The text edits of ``finding``'s autofix (``None``: no fix, or it cannot be placed)."""
    if finding.autofix is None:
        return None
    from lintlora.autofix import fix_key

    memo = getattr(result, _MEMO, None) if result is not None else None
    if memo is None:
        memo = {}
        if result is not None:
            try:
                setattr(result, _MEMO, memo)
            except AttributeError:  # pragma: no cover - a result without a __dict__
                pass
    key = fix_key(finding)
    if key not in memo:
        memo[key] = _resolve(finding)
    return memo[key]


def _resolve(finding: Finding) -> tuple[TextEdit, ...] | None:
    from lintlora.autofix import read_source_text
    from lintlora.fixing import FixError, resolve

    fix = finding.autofix
    edits: list[TextEdit] = []
    try:
        by_path: dict[str, list] = {}
        for op in fix.ops:
            by_path.setdefault(op.span.path, []).append(op)
        for path, ops in by_path.items():
            source = read_source_text(path)
            edits.extend(resolve(type(fix)(fix.title, fix.safety, tuple(ops)), source.text,
                                 source.kind))
    except (FixError, OSError, RecursionError, ValueError):
        return None
    except Exception:  # noqa: BLE001 - a report is written without the fix rather than not at all
        return None
    return tuple(edits)


def fix_to_json(result: Any, finding: Finding) -> dict[str, Any] | None:
    """The ``autofix`` object of a JSON finding: ``{"title", "safety", "edits": [{"path",
    "line", "column", "end_line", "end_column", "new_text"}]}`` (``edits`` empty when the fix
    cannot be placed in the files as they are now), or ``None``."""
    if finding.autofix is None:
        return None
    from lintlora.report.locations import display_path

    edits = fix_edits(result, finding) or ()
    return {"title": finding.autofix.title, "safety": finding.autofix.safety.value,
            "edits": [{"path": display_path(e.path), "line": e.line, "column": e.column,
                       "end_line": e.end_line, "end_column": e.end_column,
                       "new_text": e.new_text} for e in edits]}


def suggestion(result: Any, finding: Finding) -> tuple[str, int, int, str] | None:
    """``(path, first_line, last_line, new_lines)``: the whole lines of the one file the fix
    changes, from the first line an edit touches to the last, as they read after the fix (what
    a GitHub ``suggestion`` block replaces those lines with); ``None`` when there is no fix,
    it cannot be placed, or it changes several files (or an empty one). Lines are the file's
    own (:func:`lintlora.fixing.split_lines`), and always lines the file has: an insertion
    after the last line is a suggestion on that line, a removed last line one on it alone."""
    edits = fix_edits(result, finding)
    region = region_of(edits) if edits else None
    return (edits[0].path, *region) if region is not None else None


def region_of(edits: "tuple[TextEdit, ...]") -> tuple[int, int, str] | None:
    """:func:`changed_region` of ``edits`` (non-empty) in their one file, read as ``--fix``
    reads it (:func:`lintlora.autofix.read_source_text`: bounded, no link followed); ``None``
    when they name several files or cannot be applied. Shared by :func:`suggestion` and
    :mod:`lintlora.github_review` (which has the edits from the JSON report)."""
    if len({e.path for e in edits}) != 1:
        return None
    from lintlora.autofix import read_source_text
    from lintlora.fixing import FixError, apply_edits

    try:
        old = read_source_text(edits[0].path).text
        return changed_region(old, apply_edits(old, edits), edits)
    except (FixError, OSError, ValueError):
        return None


def changed_region(old: str, new: str, edits: "tuple[TextEdit, ...] | list[TextEdit]"
                   ) -> tuple[int, int, str]:
    """``(first_line, last_line, new_lines)`` of ``edits`` (non-empty) that turn ``old`` into
    ``new``: the 1-based whole lines ``first``..``last`` of ``old`` that an edit touches, and
    the text that replaces them (what a GitHub ``suggestion`` block holds). Shared by
    :func:`suggestion` and :mod:`lintlora.github_review` (which has the edits from the JSON
    report).

    Raises:
        ValueError: ``old`` is empty (no line to name).
    """
    from lintlora.fixing import split_lines

    old_lines = split_lines(old)  # the lines the edits count (not str.splitlines': U+2028...)
    new_lines = split_lines(new)
    if not old_lines:
        raise ValueError("no line to suggest a change to")
    count = len(old_lines)
    # an edit ending at column 1 of a later line ends with the line before it (a removed
    # line's break); one past the last line (an insertion at the end) is the last line's
    first = min(min(e.line for e in edits), count)
    last = min(max(e.end_line - 1 if e.end_column == 1 and e.end_line > e.line else e.end_line
                   for e in edits), count)
    last = max(last, first)
    # the changed region: the old lines first..last, and as many lines in the new text as the
    # old text has after them kept identical
    tail = count - last
    region = new_lines[first - 1:len(new_lines) - tail if tail > 0 else None]
    return first, last, "".join(region)
