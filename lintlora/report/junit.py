"""``--format junit``: JUnit XML, for CI systems that show test reports (Jenkins, GitLab
``artifacts: reports: junit:``, Azure Pipelines, CircleCI, Buildkite).

Shape (valid against the JUnit schema of Jenkins' xunit plugin, ``junit-10.xsd``, the schema
pytest's ``junit_family=xunit2`` output follows; copied to ``fixtures/schemas/junit/`` with its
source and validated in the tests, and read back with junitparser)::

    <?xml version="1.0" encoding="UTF-8"?>
    <testsuites name="lintlora" tests="3" failures="1" errors="1" time="0">
      <testsuite name="train.py" file="train.py" tests="1" failures="1" errors="0"
                 skipped="0" time="0">
        <testcase name="LL001 gradient-checkpointing-off (train.py:12:5)" classname="train.py"
                  time="0">
          <failure type="LL001" message="...">train.py:12:5: LL001 [warning] ...</failure>
        </testcase>
      </testsuite>
      <testsuite name="clean.py" ...><testcase name="lintlora" classname="clean.py" time="0"/>
      </testsuite>
      ...
    </testsuites>

One ``testsuite`` per file (in the run's order: every checked file, then any other file a
finding, error or notice names), one ``testcase`` per finding with a ``failure`` whose
``type`` is the rule code and whose ``message`` is the message; the text holds the location,
severity, memory estimate, fix and rule page. A checked file without findings has one passing
test case (``name="lintlora"``), so the CI shows it was checked; a file not parsed with
``LL000`` ignored has a ``skipped`` test case; a file that could not be (fully) linted has an
``error`` test case (``type`` ``LL998``/``LL999``); notices go in the suite's
``system-out`` (a file named only by a notice, such as a YAML file that is no training
config, has a ``skipped`` test case with the notice as its message). An error or notice without a path goes in a suite named ``lintlora``. The
schema has no ``file``/``line`` attribute on a test case, so the location is in the test
case's name and the failure text and the path in the suite's ``file``. Times are ``0``: a
linter runs no tests, and the output stays byte-identical for the same input.

Text: XML 1.0 allows no control character but tab, LF and CR, no lone surrogate and no
U+FFFE/U+FFFF (https://www.w3.org/TR/xml/#charsets); every string goes through
:func:`lintlora.report.escape.visible`, which shows each of them, and every line break a
message holds, as a visible escape, then ElementTree's escaping (``&``, ``<``, ``>``, quotes).
So the only line breaks are lintlora's own, between the parts of a failure's text, and no
line starts with ``::`` (:func:`~lintlora.report.escape.terminal_line`): the report printed
in a CI log forges no finding and no GitHub Actions workflow command. The document is ASCII: other characters are character
references (``&#8776;``), so it reads the same whatever the output stream's encoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from lintlora.findings import Finding, FixSafety
from lintlora.report import memory_line, other_notices, rule_urls, unparsed
from lintlora.report.escape import terminal_line, visible
from lintlora.report.locations import display_path, related_text

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "to_junit"]

_MAX_ATTRIBUTE = 2000
"""Characters of a ``message`` attribute kept (the whole text is in the element)."""


def _attr(text: str) -> str:
    line = visible(text)
    return line if len(line) <= _MAX_ATTRIBUTE else line[:_MAX_ATTRIBUTE - 1] + "…"


def _text(lines: list[str]) -> str:
    """Element text: each line's own line breaks and controls shown as escapes
    (:func:`visible`), so every line of the document starts with lintlora's own words, and a
    line that would start with ``::`` (a file name) gets its colon shown
    (:func:`~lintlora.report.escape.terminal_line`): the report printed in a GitHub Actions
    log holds no workflow command."""
    return "\n".join(terminal_line(visible(line)) for line in lines)


def _where(finding: Finding) -> str:
    span = finding.span
    path = display_path(span.path)
    if span.cell is not None:
        return f"{path}:cell {span.cell}:{span.line}:{span.column}"
    return f"{path}:{span.line}:{span.column}"


def _failure_text(finding: Finding, url: str | None) -> list[str]:
    lines = [f"{_where(finding)}: {finding.code} [{finding.severity.value}] {finding.message}"]
    memory = memory_line(finding.estimate)
    if memory:
        lines.append(memory)
    for related in finding.related:
        lines.append(related_text(related))
    if finding.fix:
        lines.append(f"Fix: {finding.fix}")
    if finding.autofix is not None:
        flag = "--fix" if finding.autofix.safety is FixSafety.SAFE else "--fix --unsafe-fixes"
        lines.append(f"Autofix ({finding.autofix.safety.value}, lintlora {flag}): "
                     f"{finding.autofix.title}")
    if url:
        lines.append(f"Rule: {url}")
    return lines


class _Suite:
    def __init__(self, path: str | None) -> None:
        self.path = path
        self.cases: list[tuple[str, str | None, dict[str, str], list[str]]] = []
        self.notes: list[str] = []


def to_junit(result: "RunResult") -> Any:
    """The report as an :class:`xml.etree.ElementTree.Element` (``testsuites``)."""
    import xml.etree.ElementTree as ET

    urls = rule_urls(result)
    suites: dict[str | None, _Suite] = {}

    def suite(path: str | None) -> _Suite:
        key = display_path(path) if path else None
        if key not in suites:
            suites[key] = _Suite(key)
        return suites[key]

    not_parsed = set(unparsed(result))
    checked = {display_path(p) for p in result.files}
    for path in result.files:
        suite(path)
    for finding in result.findings:
        name = f"{finding.code} {finding.name} ({_where(finding)})"
        suite(finding.span.path).cases.append((name, "failure", {
            "type": finding.code, "message": finding.message},
            _failure_text(finding, urls.get(finding.code))))
    for error in result.errors:
        kind = "internal error" if error.code == "LL999" else "could not be fully linted"
        where = display_path(error.path) if error.path else "lintlora"
        if error.line:
            where += f":{error.line}"
        suite(error.path).cases.append((f"{error.code} {kind}", "error", {
            "type": error.code, "message": f"{kind}: {error.message}"},
            [f"{where}: {error.code} {kind}: {error.message}"]))
    for path in sorted(not_parsed):
        suite(path).cases.append(("LL000 syntax-error (ignored)", "skipped", {
            "message": "could not be parsed; LL000 syntax-error is ignored here, so nothing "
                       "in this file was checked"}, []))
    for notice in other_notices(result):
        suite(notice.path).notes.append(f"note: {notice.message}")

    root = ET.Element("testsuites", {"name": "lintlora"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for key, item in suites.items():
        classname = key or "lintlora"
        if not item.cases and item.notes and key not in checked:
            # named but not linted (not a training config): skipped, the notice says why
            item.cases.append(("lintlora", "skipped", {"message": item.notes[0]}, []))
        elif not item.cases:
            item.cases.append(("lintlora", None, {}, []))
        failures = sum(1 for case in item.cases if case[1] == "failure")
        errors = sum(1 for case in item.cases if case[1] == "error")
        skipped = sum(1 for case in item.cases if case[1] == "skipped")
        attributes = {"name": _attr(classname)}
        if key:
            attributes["file"] = _attr(key)
        attributes.update({"tests": str(len(item.cases)), "failures": str(failures),
                           "errors": str(errors), "skipped": str(skipped), "time": "0"})
        element = ET.SubElement(root, "testsuite", attributes)
        for name, outcome, outcome_attributes, text in item.cases:
            case = ET.SubElement(element, "testcase", {"name": _attr(name),
                                                       "classname": _attr(classname),
                                                       "time": "0"})
            if outcome is not None:
                child = ET.SubElement(case, outcome,
                                      {k: _attr(v) for k, v in outcome_attributes.items()})
                if text:
                    child.text = _text(text)
        if item.notes:
            ET.SubElement(element, "system-out").text = _text(item.notes)
        totals["tests"] += len(item.cases)
        totals["failures"] += failures
        totals["errors"] += errors
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("time", "0")
    ET.indent(root)
    return root


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the XML document (ASCII, declared UTF-8) and a newline."""
    import xml.etree.ElementTree as ET

    body = ET.tostring(to_junit(result), encoding="unicode")
    body = body.encode("ascii", "xmlcharrefreplace").decode("ascii")
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n")
