"""Reporters: turn a :class:`lintlora.engine.RunResult` into text, JSON, SARIF, annotations,
Markdown, reviewdog's rdjson, a GitLab Code Quality report, JUnit XML or concise lines
(DESIGN.md, "Reporters").

Each reporter module has ``render(result, out, **options)`` writing to a text stream. Paths in
every format are relative to the working directory (:func:`display_path`). This package holds
what they share: memory figures in words, locations, rule metadata. Heavy libraries (rich) are
imported by the text reporter only.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import TYPE_CHECKING, Any, Iterable, TextIO

from lintlora.findings import FileError, Finding, MemoryFigures, Severity
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
    "rule_urls",
    "counts",
    "plural",
    "tally",
    "unparsed",
    "other_notices",
    "gpu_words",
    "gpu_size",
    "rule_page",
]

FORMATS = {
    "text": "lintlora.report.text",
    "json": "lintlora.report.json_out",
    "sarif": "lintlora.report.sarif",
    "github": "lintlora.report.github",
    "markdown": "lintlora.report.markdown",
    "rdjson": "lintlora.report.rdjson",
    "gitlab": "lintlora.report.gitlab",
    "junit": "lintlora.report.junit",
    "concise": "lintlora.report.concise",
}
"""``--format`` name -> reporter module."""


def render(result: "RunResult", fmt: str, out: TextIO, **options: Any) -> None:
    """Write ``result`` to ``out`` in format ``fmt`` (a key of :data:`FORMATS`)."""
    module = importlib.import_module(FORMATS[fmt])
    module.render(result, out, **options)


def gib(n: int | float | None) -> str:
    """Bytes as GiB (2**30) with one decimal: ``"27.9 GiB"``; ``"?"`` for ``None``."""
    if n is None:
        return "?"
    return f"{n / 2**30:.1f} GiB"


def gpu_size(estimate: MemoryFigures) -> str:
    """The GPU memory checked against: ``"23.7 GiB"``, or ``"48.0 GiB nominal"`` when it is the
    card's marketed size (:attr:`lintlora.findings.MemoryFigures.gpu_memory_nominal`)."""
    return gib(estimate.gpu_memory_bytes) + (" nominal" if estimate.gpu_memory_nominal else "")


def gpu_words(estimate: MemoryFigures) -> str | None:
    """The GPU checked against, in words: ``"RTX 3090: 24.0 GiB"`` for a named GPU (``"RTX
    A6000: 48.0 GiB nominal"`` when that is the card's marketed size, an upper bound), ``"GPU
    with 24.0 GiB"`` for ``--gpu-memory`` alone (no name to show), ``None`` for neither."""
    if not estimate.gpu_memory_bytes:
        return None
    if estimate.gpu:
        return f"{estimate.gpu}: {gpu_size(estimate)}"
    return f"GPU with {gib(estimate.gpu_memory_bytes)}"


def memory_line(estimate: MemoryFigures | None) -> str | None:
    """The memory figures in one line, or ``None`` when the finding has none.

    ``"peak ≈ 27.9 GiB as written → 18.6 GiB with the fix; RTX 3090: 24.0 GiB [Llama-2-7B]
    (batch 4 × 512 tokens; assumes 512 tokens per sequence: the script sets no sequence
    length)"``: the note, in parentheses at the end, states the shape the estimate was computed
    for and what of it was assumed (:class:`lintlora.findings.MemoryFigures`); with the model
    unknown: ``"peak not estimated (RTX 3090: 24.0 GiB): <why and how to supply it>"`` (the
    note is a sentence of its own, kept whole at the end).
    """
    if estimate is None:
        return None
    if estimate.peak_bytes is None:
        note = estimate.note or "the model's architecture is unknown"
        gpu = gpu_words(estimate)
        return f"peak not estimated{f' ({gpu})' if gpu else ''}: {note}"
    line = f"peak ≈ {gib(estimate.peak_bytes)} as written"
    after = estimate.peak_after_fix_bytes
    if after is not None:
        if after == estimate.peak_bytes:
            line += " (unchanged by the fix)"
        else:
            line += f" → {gib(after)} with the fix"
    if estimate.gpu_memory_bytes:
        line += f"; {gpu_words(estimate)}"
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


_PAGES_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rule_page(code: str, rule: type | None = None) -> str | None:
    """The Markdown page of ``code``: a plugin rule's ``page`` attribute (a ``.md`` path, or the
    text itself), else ``rules/CODE.md`` of the source tree or the installed
    ``lintlora/rule_pages/CODE.md``; ``None`` when there is none. Pages exist for every
    built-in rule and for the ``LL998``/``LL999`` diagnostics."""
    page = getattr(rule, "page", None) if rule is not None else None
    candidates = [os.path.join(os.path.dirname(_PAGES_HERE), "rules", f"{code}.md"),
                  os.path.join(_PAGES_HERE, "rule_pages", f"{code}.md")]
    if isinstance(page, str) and page.endswith(".md"):
        candidates.insert(0, page)
    elif isinstance(page, str) and page.strip():
        return page
    for candidate in candidates:
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as handle:
                    return handle.read()
            except (OSError, UnicodeDecodeError):
                continue
    return None


def _page_section(page: str | None, heading: str = "## What it flags") -> str | None:
    """The text of one section of a rule page as plain text, or ``None``: lines unwrapped
    within paragraphs and list items (each item on its own line), fenced code kept line by
    line, indented by four spaces, without its fences."""
    if not page or heading not in page:
        return None
    body = page.split(heading, 1)[1].split("\n## ", 1)[0].strip("\n")
    blocks: list[list[str]] = [[]]
    fenced = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            blocks.append([])
            continue
        if fenced:
            blocks[-1].append("    " + line)
        elif not stripped:
            blocks.append([])
        elif stripped.startswith(("- ", "* ")) or not blocks[-1]:
            blocks[-1].append(stripped)
        else:
            blocks[-1][-1] += " " + stripped
    return "\n\n".join("\n".join(b) for b in blocks if b) or None


def rule_urls(result: "RunResult") -> dict[str, str]:
    """Rule code -> its page's URL (:func:`rule_metadata`'s ``help_uri``), for the run's rules
    that have one."""
    urls = {}
    for rule in result.rules:
        meta = rule_metadata(rule)
        if meta["code"] and meta["help_uri"]:
            urls[meta["code"]] = meta["help_uri"]
    return urls


def rule_metadata(rule: type) -> dict[str, Any]:
    """``code``, ``name``, ``severity``, ``summary``, ``description``, ``help_uri`` of a rule class.

    ``description`` (SARIF ``fullDescription``) is written for users: the rule's
    ``description`` attribute when it has one, else the "What it flags" section of its page
    (:func:`rule_page`), else, for a plugin without either, the first paragraph of its class
    docstring; lintlora's own docstrings are developer notes and never used. Falls back to the
    summary. ``help_uri`` is ``None`` for a plugin rule that does not override ``help_uri``
    (the default would point at a lintlora page that does not exist).
    """
    severity = getattr(rule, "severity", Severity.WARNING)
    summary = getattr(rule, "summary", "") or ""
    code = getattr(rule, "code", "") or ""
    own = (getattr(rule, "__module__", "") or "").startswith("lintlora.")
    description = getattr(rule, "description", None)
    if not (isinstance(description, str) and description.strip()):
        description = _page_section(rule_page(code, rule)) if code else None
    if description is None and not own:
        doc = rule.__dict__.get("__doc__") if isinstance(rule, type) else None
        description = _first_paragraph(doc)
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
        "description": description or summary,
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


def tally(findings: Iterable[Finding]) -> str:
    """Findings per severity in words, zero counts left out: ``"1 error, 5 warnings, 4 info"``
    (``info`` is uncountable); ``""`` for no findings."""
    numbers = counts(findings)
    return ", ".join(plural(numbers[s], s) if s != "info" else f"{numbers[s]} info"
                     for s in ("error", "warning", "info") if numbers[s])


def unparsed(result: "RunResult") -> list[str]:
    """Paths of files that could not be parsed while their ``LL000`` syntax error is ignored
    or suppressed (the engine's ``LL000`` notices): reporters say they were not checked."""
    return sorted({n.path for n in result.notices if n.code == "LL000"})


def other_notices(result: "RunResult") -> list[FileError]:
    """The run's notices other than the ``LL000`` ones :func:`unparsed` covers: a named file
    of a type lintlora does not read, a named YAML file that is no training config, ``--model``
    given where every setup names its own model. Informational: they never change the exit
    status, but a review bot shows them as the terminal does (``note:`` lines)."""
    return [n for n in result.notices if n.code != "LL000"]
