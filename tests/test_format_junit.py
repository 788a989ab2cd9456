"""``--format junit`` (issue 18 item 2): JUnit XML, valid against Jenkins' ``junit-10.xsd``
(``fixtures/schemas/junit``, with xmlschema) and read back by a real consumer (junitparser),
with every character XML 1.0 forbids shown as an escape instead."""

from __future__ import annotations

import io
import os
import re
import xml.etree.ElementTree as ET

import pytest

import format_support
from lintlora.report import render

XSD = os.path.join(format_support.SCHEMAS, "junit", "junit-10.xsd")
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters outside XML 1.0's ``Char`` production (https://www.w3.org/TR/xml/#charsets)."""


@pytest.fixture(scope="module")
def schema():
    import xmlschema

    return xmlschema.XMLSchema(XSD)


def _render(result) -> str:
    out = io.StringIO()
    render(result, "junit", out)
    return out.getvalue()


@pytest.fixture
def report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = _render(format_support.hostile_run(str(tmp_path)))
    (tmp_path / "report.xml").write_text(text, encoding="utf-8")
    return text, str(tmp_path / "report.xml")


def test_the_report_is_valid_against_the_junit_schema(schema, report):
    text, _ = report
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n') and text.isascii()
    schema.validate(text)


def test_the_schema_is_not_vacuous(schema):
    with pytest.raises(Exception):
        schema.validate('<testsuites><testsuite name="x"><testcase/></testsuite></testsuites>')


def test_no_character_xml_forbids_and_the_hostile_text_reads_back(report):
    text, _ = report
    root = ET.fromstring(text.encode("ascii"))  # a strict XML parser reads it
    for element in root.iter():
        for value in [element.text or "", element.tail or "", *element.attrib.values()]:
            assert not _XML_ILLEGAL.search(value)
    failures = [f for f in root.iter("failure")]
    hostile = next(f for f in failures if f.get("type") == "TS001" and "fence" in f.text)
    assert "]]>" in hostile.text and "<img src=x" in hostile.text  # exact, but as text
    assert "\\x00" in hostile.text and "\\x1b[31m" in hostile.text and "<U+202E>" in hostile.text
    assert "\n" not in hostile.get("message") and len(hostile.get("message")) <= 2000
    assert "é漢𐐀" not in hostile.text  # (the line text is not quoted; non-ASCII reads back:)
    assert any("≈" in (f.text or "") for f in failures)


def test_a_real_consumer_reads_suites_cases_and_outcomes(report):
    from junitparser import Error, Failure, JUnitXml, Skipped

    _, path = report
    xml = JUnitXml.fromfile(path)
    suites = {suite.name: suite for suite in xml}
    assert list(suites) == ["broken.py", "clean.py", "nb.ipynb", "train.py", "huge.py",
                            "odd.py", "cfg.yaml"]
    outcome = {name: [type(r).__name__ for case in suite for r in case.result]
               for name, suite in suites.items()}
    assert outcome["train.py"] == ["Failure", "Failure", "Failure"]
    assert outcome["clean.py"] == []  # checked, no findings: one passing test case
    assert [case.name for case in suites["clean.py"]] == ["lintlora"]
    assert outcome["broken.py"] == ["Skipped"]
    assert outcome["huge.py"] == ["Error"] and outcome["odd.py"] == ["Error"]
    first = next(iter(suites["train.py"]))
    assert first.name == "TX001 test-fp16 (train.py:2:37)"
    assert first.classname == "train.py"
    failure = first.result[0]
    assert isinstance(failure, Failure) and failure.type == "TX001"
    assert failure.message == "fp16 on a bf16 GPU"
    assert "Autofix (safe, lintlora --fix): use bf16" in failure.text
    nb_case = next(iter(suites["nb.ipynb"]))
    assert nb_case.name == "TS001 bad-call (nb.ipynb:cell 1:2:1)"
    assert xml.tests == 9 and xml.failures == 4 and xml.errors == 2
    assert isinstance(next(iter(suites["odd.py"])).result[0], Error)
    assert isinstance(next(iter(suites["broken.py"])).result[0], Skipped)
    out = [s.findtext("system-out") for s in ET.parse(path).getroot()
           if s.get("name") == "cfg.yaml"]  # junitparser has no suite system-out reader
    assert "not a training config" in out[0]
    assert outcome["cfg.yaml"] == ["Skipped"]  # named, not linted: not a pass


def test_the_real_command_with_output(schema, tmp_path):
    status, report, stderr = format_support.lintlora_cli(
        str(tmp_path), "--format", "junit", "--gpu", "rtx3090",
        *format_support.fixtures_with_findings(), output="junit.xml")
    assert status == 1, stderr
    schema.validate(report)
    from junitparser import JUnitXml

    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    assert xml.failures >= 1 and xml.tests >= xml.failures


def test_a_run_without_findings_passes(schema, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = format_support.hostile_run(str(tmp_path), with_problems=False)
    run.findings = []
    text = _render(run)
    schema.validate(text)
    root = ET.fromstring(text)
    assert root.get("tests") == "3" and root.get("failures") == "0"


def test_printed_in_a_ci_log_the_report_forges_no_line(tmp_path, monkeypatch):
    """A message or a file name with a line break and ``::error``: every line of the document
    is markup or lintlora's own words, none a workflow command or a ``path:1:1:`` finding."""
    from lintlora.findings import Finding, Severity
    from lintlora.training_setup import Span

    monkeypatch.chdir(tmp_path)
    run = format_support.hostile_run(str(tmp_path))
    evil = "x\n::error file=evil.py,line=1::PWNED\r\n  ::warning::again\nother.py:1:1: LL001 forged"
    run.findings.append(Finding("TS001", "bad-call", Severity.WARNING,
                                Span(str(tmp_path / f"::error file={evil}.py"), 1, 1),
                                evil, fix=evil))
    text = _render(run)
    lines = text.splitlines()
    assert not [line for line in lines if line.lstrip().startswith("::")]
    assert not [line for line in lines if line.startswith("other.py:1:1:")]
    assert "##[" not in text
