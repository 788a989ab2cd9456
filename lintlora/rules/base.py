"""The rule interface (DESIGN.md, "Rules").

A rule is one small class in one module of ``lintlora.rules``: a stable ``code`` (``LL001``),
a kebab-case ``name``, a default ``severity``, a one-line ``summary``, and
``check(setup, context)`` yielding :class:`lintlora.findings.Finding`. Rules read the extracted
:class:`~lintlora.training_setup.TrainingSetup` only, never syntax trees.

A rule whose fix changes the setup builds the changed setup (``setup.set(...)``) and passes it
to :meth:`Rule.finding`; the "after" figure is then the estimator run on that setup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Iterable

from lintlora.findings import Finding, Fix, FixSafety, RelatedLocation, Severity
from lintlora.training_setup import Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["Rule", "DOCS_URL"]

DOCS_URL = "https://github.com/lintlora/lintlora/blob/main/rules/{code}.md"
"""Where each rule's page is published; ``{code}`` is the rule code. Pages live in ``rules/``."""


class Rule:
    """Base class for rules. Subclasses set the class attributes and implement :meth:`check`.

    Attributes:
        code: ``"LL"`` and three digits for built-ins; plugins use their own prefix.
        name: kebab-case name used in output and suppressions' documentation.
        severity: default severity of the rule's findings.
        summary: one line for ``lintlora rules`` and SARIF ``shortDescription``.
        fix_changes_memory: whether the fix is expected to change GPU memory (LL007's fix
            does not: its "after" figure equals the "before" one, and the message says so).
        depends_on_settings: whether the rule's firing (not only its wording or figures) can
            change with the run's settings: the GPU (``--gpu``/``--gpu-memory``), the model
            (``--model``/``--model-config``/``--params``), ``--cpus``, ``--tokens``. A
            suppression of such a rule's code is never reported unused (``LL900``), since a
            run with other settings (a teammate's GPU) may need it. ``True`` unless a rule
            declares otherwise (the safe answer for plugins).
        fixes: the fixes the rule can offer as source changes and their safety, for
            ``lintlora rules``, the page and ``[tool.lintlora] fixable`` (issue 17):
            ``{"set gradient_checkpointing=True": FixSafety.SAFE}``; empty when it offers none.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    summary: ClassVar[str] = ""
    fix_changes_memory: ClassVar[bool] = True
    depends_on_settings: ClassVar[bool] = True
    fixes: ClassVar[dict[str, "FixSafety"]] = {}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        """Yield findings for one setup. Must not raise for any setup an extractor can build."""
        raise NotImplementedError

    @classmethod
    def help_uri(cls) -> str:
        """URL of the rule's page."""
        return DOCS_URL.format(code=cls.code)

    def finding(
        self,
        context: "Context",
        setup: TrainingSetup,
        span: Span | None,
        message: str,
        *,
        fix: str | None = None,
        fixed_setup: TrainingSetup | None = None,
        severity: Severity | None = None,
        rests_on: Iterable[str] = (),
        related: Iterable[RelatedLocation] = (),
        autofix: Fix | None = None,
    ) -> Finding:
        """Build a finding with memory figures attached.

        Args:
            span: where to point; falls back to the setup's anchor, then to line 1.
            fixed_setup: the setup after the fix, estimated for ``peak_after_fix_bytes``; when
                ``None`` and ``fix_changes_memory`` is False, the "after" figure equals the
                "before" one.
            related: other places the finding rests on (:class:`RelatedLocation`: the launch
                line of the run, a launch or config line a value came from), in order; a
                repeated (span, message) pair is kept once.
            autofix: the fix as source changes (:class:`lintlora.findings.Fix`), issue 17.
        """
        where = span or setup.anchor or Span(setup.path, 1, 1)
        figures = context.figures(setup, fixed_setup, unchanged=not self.fix_changes_memory)
        return Finding(
            code=self.code,
            name=self.name,
            severity=severity or self.severity,
            span=where,
            message=message,
            fix=fix,
            estimate=figures,
            rests_on=tuple(rests_on),
            related=_unique(related),
            autofix=autofix,
        )


def _unique(related: Iterable[RelatedLocation]) -> tuple[RelatedLocation, ...]:
    """``related`` without repeated entries, first occurrence kept."""
    out: list[RelatedLocation] = []
    for r in related:
        if r not in out:
            out.append(r)
    return tuple(out)
