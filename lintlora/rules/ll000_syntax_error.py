"""LL000 syntax-error: a file the extractors cannot parse (page: ``rules/LL000.md``).

The engine emits LL000 findings itself, from the :class:`lintlora.extract.ExtractError` an
extractor raises, at the error's location; the run goes on with the other files. This class
only registers the code's metadata, so ``lintlora rules``, ``lintlora explain LL000``, the
selection options and SARIF's rule table know it like any other rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["SyntaxErrorRule"]


class SyntaxErrorRule(Rule):
    """The file cannot be parsed (Python syntax, notebook JSON or YAML); nothing in it was
    checked. ``check`` yields nothing: the engine reports LL000 from the extractor's error."""

    code = "LL000"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "The file cannot be parsed, so nothing in it was checked"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        """Yield nothing: a setup exists only for files that parsed."""
        return ()
