"""Suppression comments, and the ``LL900 unused-suppression`` check.

Forms understood:

- ``# noqa`` (every code) and ``# noqa: LL001,LL006`` (flake8's form; codes of other tools in
  the same list are ignored);
- ``# lintlora: ignore`` and ``# lintlora: ignore[LL001,LL006]``;
- ``# lintlora: file-ignore[LL001]`` anywhere in the file: the whole file (``# lintlora:
  file-ignore`` alone: every code).

A line directive in Python or a notebook cell suppresses a finding when it sits on a line of the
finding's span, or on any line of a call that encloses the finding (the extractor's section and
call spans: a comment on any line of a multi-line ``TrainingArguments(...)`` covers a finding
pointing at one of its keyword values). In YAML, a directive suppresses findings on its own line
and, when the comment stands alone on its line, on the next line holding content (the key below
it); a finding's region includes the key line of the value it points at.

Python comments are read with :mod:`tokenize`, so ``"# noqa"`` inside a string is not a
directive. YAML comments are read line by line (a ``#`` that starts a comment: at the start of
the line or after whitespace, outside quotes). JSON has no comments.

A directive naming a code of a rule that ran on the file and suppressing nothing is reported as
``LL900 unused-suppression`` (info), when that rule's firing does not depend on the run's
settings (``Rule.depends_on_settings``: the GPU, the model, ``--cpus``): ``fp16=True,  # noqa:
LL002`` is needed with ``--gpu rtx3090`` though LL002 is silent with ``--gpu t4``, and teams
lint with different GPUs. A directive without codes is reported only while no such rule ran.
Bare ``# noqa`` is never reported: other tools share it.

Codes are matched exactly, as ruff and flake8 do: ``# noqa: LL00`` suppresses nothing (it is
not a prefix of ``LL001``). A code in lintlora's ``LL`` namespace that names no registered rule
(a prefix such as ``LL01``, a typo, the ``LL998``/``LL999`` diagnostics, which are not findings)
is reported as ``LL900`` too, saying so; codes of other tools (``E501``) are left alone.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import Span, TrainingSetup

__all__ = [
    "Directive",
    "UNUSED_CODE",
    "UNUSED_NAME",
    "read_directives",
    "python_comments",
    "yaml_comments",
    "notebook_cells",
    "suppression_lines",
    "apply_suppressions",
    "UnusedSuppression",
]

UNUSED_CODE = "LL900"
UNUSED_NAME = "unused-suppression"

# Patterns needed only where a directive or a notebook is met are left as strings for the
# ``re`` functions, which compile them on first use (and cache them): most files have neither,
# and compiling them all at import cost a one-file run about 1.5 ms.
_NOQA = r"#\s*noqa(?::\s?(?P<codes>[A-Za-z][A-Za-z0-9]*(?:[\s,]+[A-Za-z][A-Za-z0-9]*)*))?"
_LINTLORA = r"#\s*lintlora\s*:\s*(?P<kind>file-ignore|ignore)\b(?:\s*\[(?P<codes>[^\]]*)\])?"
_CODE = r"[A-Za-z]+[0-9]+"
# what every directive starts with (both patterns above begin so): a Python or YAML file whose
# text never matches holds no directive, so it is not tokenized (the mere word is common:
# "lintlora-fixture" headers, "noqa" in prose). Notebook JSON may escape the whitespace.
_DIRECTIVE_START = re.compile(r"#\s*(?:noqa|lintlora\s*:)", re.IGNORECASE)


@dataclass(frozen=True)
class Directive:
    """One suppression comment.

    Attributes:
        scope: ``"line"`` or ``"file"``.
        codes: upper-cased codes, or ``None`` for every code.
        line, column: where the comment starts (1-based; in a notebook, within ``cell``).
        cell: the 1-based code-cell index for notebooks, else ``None``.
        standalone: the comment is alone on its line (YAML: it then covers the next line).
        bare_noqa: a ``# noqa`` without codes (shared with other tools; never reported unused).
        text: the comment text, for messages.
        covers: the lines (beyond its own) a YAML directive covers; filled by the reader.
    """

    scope: str
    codes: tuple[str, ...] | None
    line: int
    column: int
    cell: int | None = None
    standalone: bool = False
    bare_noqa: bool = False
    text: str = ""
    covers: tuple[int, ...] = field(default=())


def _parse_comment(comment: str, line: int, column: int, cell: int | None,
                   standalone: bool) -> list[Directive]:
    found: list[Directive] = []
    for m in re.finditer(_LINTLORA, comment, re.IGNORECASE):
        codes = None
        if m.group("codes") is not None:
            codes = tuple(c.upper() for c in re.findall(_CODE, m.group("codes")))
        scope = "file" if m.group("kind").lower() == "file-ignore" else "line"
        found.append(Directive(scope, codes, line, column + m.start(), cell, standalone,
                               text=m.group(0)))
    for m in re.finditer(_NOQA, comment, re.IGNORECASE):
        if m.group("codes"):
            codes = tuple(c.upper() for c in re.findall(_CODE, m.group("codes")))
            found.append(Directive("line", codes, line, column + m.start(), cell, standalone,
                                   text=m.group(0)))
        else:
            found.append(Directive("line", None, line, column + m.start(), cell, standalone,
                                   bare_noqa=True, text=m.group(0)))
    return found


def python_comments(source: str) -> list[tuple[int, int, str, bool]]:
    """``(line, column, text, standalone)`` for each comment of Python ``source`` (1-based).

    Uses :mod:`tokenize`. When the whole source does not tokenize (a syntax error), each line
    is tokenized on its own, so directives in the readable part still count.
    """
    try:
        return _tokenize_comments(source, 0)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    comments: list[tuple[int, int, str, bool]] = []
    for number, text in enumerate(source.splitlines(), start=1):
        if "#" not in text:
            continue
        try:
            comments.extend(_tokenize_comments(text + "\n", number - 1))
        except (tokenize.TokenError, SyntaxError, ValueError):
            continue
    return comments


def _tokenize_comments(source: str, line_offset: int) -> list[tuple[int, int, str, bool]]:
    out = []
    last_code_line = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line, col = tok.start
            out.append((line + line_offset, col + 1, tok.string, last_code_line != line))
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            last_code_line = tok.end[0]
    return out


_YAML_BREAKS = r"\r\n|\r|\n|\x85|\u2028|\u2029"
"""Line breaks as PyYAML counts them (so line numbers agree with the extractor's marks)."""


def yaml_comments(text: str) -> list[tuple[int, int, str, bool]]:
    """``(line, column, text, standalone)`` for each YAML comment (line-based scan).

    A ``#`` starts a comment at the start of a line or after a space or tab, outside single-
    and double-quoted scalars on that line (YAML 1.2, "Comments"). Block scalars (``|``/``>``)
    are not tracked: a directive-like line inside one is read as a directive, which can only
    suppress, never add, findings.
    """
    out = []
    for number, line in enumerate(re.split(_YAML_BREAKS, text), start=1):
        if "#" not in line:
            continue
        quote = None
        for index, char in enumerate(line):
            if quote:
                if char == quote:
                    quote = None
                continue
            if char in "'\"" and (index == 0 or line[index - 1] in " \t:[{,-"):
                quote = char
                continue
            if char == "#" and (index == 0 or line[index - 1] in " \t"):
                out.append((number, index + 1, line[index:], line[:index].strip() == ""))
                break
    return out


_MAGIC = r"^\s*(?:%|!|\?|[A-Za-z_*][\w.*\[\]]*(?:\(\))?\s*\?{1,2}\s*$)"


def notebook_cells(text: str) -> list[str]:
    """The sources of a notebook's code cells, in order (cell 1 first); ``[]`` if unreadable.

    IPython magic, shell and help lines (``%``, ``%%``, ``!``, ``?name``, ``name?``,
    ``name??``) are blanked so the rest tokenizes, keeping line numbers.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return []
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            source = ""
        lines = ["" if re.match(_MAGIC, line) else line for line in source.split("\n")]
        sources.append("\n".join(lines))
    return sources


def read_directives(text: str, kind: str) -> list[Directive]:
    """All suppression directives in a file of ``kind`` (python, notebook, yaml, json, shell:
    a launch file whose lines findings of a run can point at)."""
    directives: list[Directive] = []
    lowered = text.lower()  # ("in" on a lowered copy: ten times faster than a regex here)
    if "noqa" not in lowered and "lintlora" not in lowered:
        return directives  # most files hold no directive: skip tokenizing them
    if kind in ("python", "yaml", "shell") and not _DIRECTIVE_START.search(text):
        return directives
    if kind == "python":
        from lintlora.extract.databricks import is_databricks_source

        if is_databricks_source(text):
            from lintlora.extract.notebook import databricks_program

            # a Databricks notebook source: findings carry (cell, line in cell), so do directives
            program, line_map = databricks_program(text)
            for line, col, comment, standalone in python_comments(program):
                cell, in_cell = line_map(line)
                directives.extend(_parse_comment(comment, in_cell, col, cell, standalone))
        else:
            for line, col, comment, standalone in python_comments(text):
                directives.extend(_parse_comment(comment, line, col, None, standalone))
    elif kind == "notebook":
        for index, source in enumerate(notebook_cells(text), start=1):
            for line, col, comment, standalone in python_comments(source):
                directives.extend(_parse_comment(comment, line, col, index, standalone))
    elif kind == "shell":
        # a launch file (shell script, Makefile recipe, workflow step): ``#`` comments read
        # as YAML's (at the start of a line or after a blank, outside quotes); a directive
        # covers its own line, where the launch value sits
        for line, col, comment, standalone in yaml_comments(text):
            directives.extend(_parse_comment(comment, line, col, None, standalone))
    elif kind == "yaml":
        content_lines = _yaml_content_lines(text)
        for line, col, comment, standalone in yaml_comments(text):
            parsed = _parse_comment(comment, line, col, None, standalone)
            if standalone:
                following = next((n for n in content_lines if n > line), None)
                covers = (following,) if following is not None else ()
                parsed = [_with_covers(d, covers) for d in parsed]
            directives.extend(parsed)
    return directives


def _with_covers(directive: Directive, covers: tuple[int, ...]) -> Directive:
    return Directive(directive.scope, directive.codes, directive.line, directive.column,
                     directive.cell, directive.standalone, directive.bare_noqa, directive.text,
                     covers)


def _yaml_content_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(re.split(_YAML_BREAKS, text), start=1)
            if line.strip() and not line.lstrip().startswith("#")]


def _contains(outer: Span, inner: Span) -> bool:
    return outer.cell == inner.cell and outer.line <= inner.line <= outer.last_line


def _enclosing_spans(setup: TrainingSetup) -> Iterable[tuple[Span, Span | None]]:
    """``(span, key_span)`` of the setup's sections, calls and settings: the structures a
    finding can point into. ``key_span`` is the keyword or YAML key naming a setting's value."""
    if setup.anchor is not None:
        yield setup.anchor, None
    sections = [setup.model, setup.quantization, setup.lora, setup.training, *setup.dataloaders]
    for section in sections:
        if section is None:
            continue
        if section.span is not None:
            yield section.span, None
        for _name, setting in section.settings():
            if setting.span is not None:
                yield setting.span, setting.key_span
            elif setting.key_span is not None:
                yield setting.key_span, None
    for call in setup.calls:
        if call.span is not None:
            yield call.span, None
        for setting in call.args.values():
            if setting.span is not None:
                yield setting.span, setting.key_span
    for evidence in setup.launch:
        if evidence.span is not None:
            yield evidence.span, None


def suppression_lines(finding: Finding, setup: TrainingSetup | None) -> set[int]:
    """The lines on which a directive suppresses ``finding`` (same cell for notebooks).

    The finding's own lines, plus for every structure of ``setup`` (section, call, setting's
    value) whose span contains the finding's first line: that structure's lines and, for a
    setting, the lines of its key (``target_modules:`` above a YAML list).
    """
    span = finding.span
    lines = set(span.lines())
    if setup is not None:
        for outer, key in _enclosing_spans(setup):
            if _contains(outer, span):
                lines.update(outer.lines())
                if key is not None and key.cell == span.cell:
                    lines.update(key.lines())
    return lines


def _applies(directive: Directive, code: str) -> bool:
    return directive.codes is None or code in directive.codes


def apply_suppressions(
    findings: Sequence[tuple[Finding, TrainingSetup | None]],
    directives: Sequence[Directive],
    kind: str,
    ran_codes: Iterable[str],
    path: str,
    known_codes: Iterable[str] = (),
    settings_dependent: Iterable[str] = (),
) -> tuple[list[Finding], list[Finding]]:
    """Drop suppressed findings and report unused directives.

    Args:
        findings: each finding with the setup it came from (``None`` for engine findings such
            as LL000), in a deterministic order.
        directives: from :func:`read_directives`.
        kind: the file's kind (YAML directives also cover the next content line).
        ran_codes: codes of the rules that ran on this file; a directive naming another code
            is never reported unused (the rule may be enabled elsewhere).
        path: the file, for the LL900 findings' spans.
        known_codes: every registered rule's code; an ``LL`` code outside it names no rule
            and is reported (empty: not checked).
        settings_dependent: codes of the rules that ran whose firing depends on the run's
            settings (:attr:`lintlora.rules.base.Rule.depends_on_settings`: ``LL002`` is
            silent on a T4, firing on an RTX 3090). A directive naming one is never reported
            unused, and a directive without codes is not while any such rule ran: this run's
            settings silencing the finding does not make the comment stale for a run with
            other settings.

    Returns:
        ``(kept, unused)``: the findings not suppressed, and one ``LL900`` finding per directive
        code that suppressed nothing (a directive without codes: one finding for the directive)
        or that names no rule.
    """
    dependent = set(settings_dependent)
    ran = set(ran_codes) - dependent
    known = set(known_codes)
    used: dict[tuple[int, str | None], bool] = {}
    kept: list[Finding] = []
    for finding, setup in findings:
        suppressed = False
        region: set[int] | None = None
        for index, directive in enumerate(directives):
            if not _applies(directive, finding.code):
                continue
            if directive.scope == "file":
                hit = True
            else:
                if directive.cell != finding.span.cell:
                    continue
                if region is None:
                    region = suppression_lines(finding, setup)
                hit = directive.line in region or any(c in region for c in directive.covers)
            if hit:
                suppressed = True
                used[(index, finding.code if directive.codes else None)] = True
        if not suppressed:
            kept.append(finding)

    unused: list[tuple[int, Finding]] = []
    for index, directive in enumerate(directives):
        if directive.bare_noqa:
            continue
        span = Span(path, directive.line, directive.column, directive.line,
                    directive.column + len(directive.text), directive.cell)
        where = "this file" if directive.scope == "file" else "this line"
        if directive.codes is None:
            if not used.get((index, None)) and not dependent:
                unused.append((index, _unused(
                    span, f"`{directive.text}` suppresses nothing on {where}", directive)))
            continue
        for code in directive.codes:
            if known and code.startswith(_OWN_PREFIX) and code not in known:
                unused.append((index, _unused(
                    span, f"`{directive.text}`: {_unknown_code(code, known)}", directive, code)))
                continue
            # a directive naming LL900 silences LL900 findings (below); it is never itself
            # reported, so unused-suppression findings cannot chase each other
            if code in ran and code != UNUSED_CODE and not used.get((index, code)):
                unused.append((index, _unused(
                    span, f"`{directive.text}`: no {code} finding to suppress on {where}",
                    directive, code)))
    reported = []
    for about, finding in unused:
        silenced = False
        for index, directive in enumerate(directives):
            if index == about or not _applies(directive, UNUSED_CODE):
                continue
            if directive.scope == "file" or (directive.cell == finding.span.cell
                                             and directive.line == finding.span.line):
                silenced = True
                break
        if not silenced:
            reported.append(finding)
    return kept, reported


_OWN_PREFIX = "LL"
"""Codes in lintlora's namespace; a suppression naming one that is no registered rule is
reported (other tools' codes in a shared ``# noqa`` list are not lintlora's to judge)."""


def _unknown_code(code: str, known: set[str]) -> str:
    """Why ``code`` (an ``LL`` code of no rule) suppresses nothing, with the likely intent."""
    import difflib

    covered = sorted(k for k in known if k.startswith(code))
    if covered:
        return (f"{code} is not a rule code: codes are matched exactly, not as prefixes (as in "
                f"ruff), so it suppresses nothing; name the rule, e.g. {covered[0]}")
    if code in ("LL998", "LL999"):
        return (f"{code} is not a rule: it reports a file lintlora could not lint, which is "
                f"not a finding and cannot be suppressed by a comment")
    close = difflib.get_close_matches(code, sorted(known), n=2)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"no lintlora rule has the code {code}{hint}; see `lintlora rules`"


def _unused(span: Span, message: str, directive: Directive, code: str | None = None) -> Finding:
    what = f"remove {code} from the comment" if code and directive.codes and len(directive.codes) > 1 \
        else "remove the comment"
    return Finding(code=UNUSED_CODE, name=UNUSED_NAME, severity=Severity.INFO, span=span,
                   message=message, fix=f"{what[0].upper()}{what[1:]}.")



class UnusedSuppression(Rule):
    """A suppression comment (``# noqa: LL001``, ``# lintlora: ignore[...]``, ``# lintlora:
    file-ignore[...]``) that suppresses nothing: the finding it was written for is gone, or the
    comment sits on a line the finding does not cover. A stale comment would hide a future
    finding of the same code on that line.

    The engine reports these itself, after suppression; :meth:`check` yields nothing.
    """

    code = UNUSED_CODE
    name = UNUSED_NAME
    severity = Severity.INFO
    summary = "A suppression comment that suppresses nothing"
    fix_changes_memory = False
    depends_on_settings = False  # reported after suppression; never itself "unused"

    def check(self, setup: TrainingSetup, context: object) -> Iterable[Finding]:
        """Nothing: see the class docstring."""
        return ()
