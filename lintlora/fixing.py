"""Applying fixes (issue 17): :class:`lintlora.findings.EditOp` s resolved against a file's text
into :class:`lintlora.findings.TextEdit` s, and the edits applied without overlap, keeping the
author's formatting, encoding, BOM and newline style.

Interface (the engine layer calls it; reporters read the resolved edits):

- ``resolve(fix, text, kind) -> tuple[TextEdit, ...]`` (raises :class:`FixError` when an op
  cannot be placed: the fix is then not offered);
- ``apply_edits(text, edits) -> str`` (raises :class:`FixError` on overlapping edits).

Not implemented yet: the work of issue 17.
"""

from __future__ import annotations

__all__ = ["FixError"]


class FixError(ValueError):
    """A fix that cannot be applied as stated (an op whose span no longer matches the text,
    overlapping edits): the fix is skipped and said so, never half applied."""
