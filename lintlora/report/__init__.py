"""Reporters: turn a :class:`lintlora.engine.RunResult` into text, JSON, SARIF, annotations or
Markdown (DESIGN.md, "Reporters").

Each reporter module has ``render(result, out, **options)`` writing to a text stream. Paths in
every format are relative to the working directory (:func:`display_path`). This package holds
what they share: memory figures in words, locations, rule metadata. Heavy libraries (rich) are
imported by the text reporter only.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any, Iterable, TextIO

from lintlora.findings import Finding, MemoryFigures, Severity
from lintlora.report.locations import display_path

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = [
    "FORMATS",
    "render",
    "display_path",
    "gib",
    "memory_line",
    "location",
    "rule_metadata",
    "counts",
    "plural",
]

FORMATS = {
    "text": "lintlora.report.text",
    "json": "lintlora.report.json_out",
    "sarif": "lintlora.report.sarif",
    "github": "lintlora.report.github",
    "markdown": "lintlora.report.markdown",
}
"""``--format`` name -> reporter module."""


def render(result: "RunResult", fmt: str, out: TextIO, **options: Any) -> None:
    """Write ``result`` to ``out`` in format ``fmt`` (a key of :data:`FORMATS`)."""
    module = importlib.import_module(FORMATS[fmt])
    module.render(result, out, **options)


def gib(n: int | None) -> str:
    """Bytes as GiB (2**30) with one decimal: ``"27.9 GiB"``; ``"?"`` for ``None``."""
    if n is None:
        return "?"
    return f"{n / 2**30:.1f} GiB"


def memory_line(estimate: MemoryFigures | None) -> str | None:
    """The memory figures in one line, or ``None`` when the finding has none.

    ``"peak ≈ 27.9 GiB as written → 18.6 GiB with the fix; RTX 3090: 24.0 GiB"``; with the model
    unknown: ``"peak not estimated: <why and how to supply it>"``.
    """
    if estimate is None:
        return None
    if estimate.peak_bytes is None:
        note = estimate.note or "the model's architecture is unknown"
        line = f"peak not estimated: {note}"
        if estimate.gpu_memory_bytes:
            line += f"; {estimate.gpu or 'GPU'}: {gib(estimate.gpu_memory_bytes)}"
        return line
    line = f"peak ≈ {gib(estimate.peak_bytes)} as written"
    after = estimate.peak_after_fix_bytes
    if after is not None:
        if after == estimate.peak_bytes:
            line += " (unchanged by the fix)"
        else:
            line += f" → {gib(after)} with the fix"
    if estimate.gpu_memory_bytes:
        line += f"; {estimate.gpu or 'GPU'}: {gib(estimate.gpu_memory_bytes)}"
        if estimate.peak_bytes > estimate.gpu_memory_bytes:
            line += " (does not fit)"
    if estimate.model:
        line += f" [{estimate.model}]"
    if estimate.note:
        line += f" ({estimate.note})"
    return line


def location(finding: Finding) -> str:
    """``path:line:col``, or ``path:cell 3:line 5`` for a notebook cell (path relative)."""
    span = finding.span
    path = display_path(span.path)
    if span.cell is not None:
        return f"{path}:cell {span.cell}:line {span.line}"
    return f"{path}:{span.line}:{span.column}"


def _first_paragraph(text: str | None) -> str | None:
    if not text:
        return None
    cleaned = inspect.cleandoc(text)
    paragraph = cleaned.split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or None


def _own_help_uri(rule: type) -> bool:
    """Whether ``rule.help_uri()`` points at a real page: lintlora's own rules use lintlora's
    ``rules/`` pages; a plugin rule has a page only if it overrides ``help_uri``."""
    if (getattr(rule, "__module__", "") or "").startswith("lintlora."):
        return True
    from lintlora.rules.base import Rule

    method = getattr(rule, "help_uri", None)
    return getattr(method, "__func__", method) is not getattr(Rule.help_uri, "__func__", None)


def rule_metadata(rule: type) -> dict[str, Any]:
    """``code``, ``name``, ``severity``, ``summary``, ``description``, ``help_uri`` of a rule class.

    ``description`` is the first paragraph of the class docstring, else the summary.
    ``help_uri`` is ``None`` for a plugin rule that does not override ``help_uri`` (the default
    would point at a lintlora page that does not exist).
    """
    severity = getattr(rule, "severity", Severity.WARNING)
    summary = getattr(rule, "summary", "") or ""
    doc = rule.__dict__.get("__doc__") if isinstance(rule, type) else None
    help_uri = None
    if hasattr(rule, "help_uri") and _own_help_uri(rule):
        try:
            help_uri = rule.help_uri()
        except Exception:  # noqa: BLE001 - a plugin's metadata must not break a report
            help_uri = None
    return {
        "code": getattr(rule, "code", "") or "",
        "name": getattr(rule, "name", "") or "",
        "severity": severity.value if isinstance(severity, Severity) else str(severity),
        "summary": summary,
        "description": _first_paragraph(doc) or summary,
        "help_uri": help_uri,
    }


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity: ``{"error": n, "warning": n, "info": n}``."""
    out = {"error": 0, "warning": 0, "info": 0}
    for finding in findings:
        out[finding.severity.value] += 1
    return out


def plural(n: int, word: str) -> str:
    """``"1 finding"``, ``"2 findings"``."""
    return f"{n} {word}" + ("" if n == 1 else "s")
