"""``--format gitlab`` (issue 18 item 2): a GitLab Code Quality report, checked against the
schema GitLab validates each entry with and a stricter one written from GitLab's and Code
Climate's documents (``fixtures/schemas/gitlab``), with fingerprints that survive moved lines
and tell distinct findings apart (GitLab keeps one entry per fingerprint)."""

from __future__ import annotations

import dataclasses
import io
import json
import os

import jsonschema
import pytest

import format_support
from lintlora.findings import Finding, Severity
from lintlora.report import render
from lintlora.report.gitlab import fingerprint
from lintlora.training_setup import Span

SCHEMA_DIR = os.path.join(format_support.SCHEMAS, "gitlab")


def _schema(name: str) -> dict:
    with open(os.path.join(SCHEMA_DIR, name), encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def _render(result) -> str:
    out = io.StringIO()
    render(result, "gitlab", out)
    return out.getvalue()


def _validate(document) -> None:
    jsonschema.validate(document, _schema("code-quality-report.json"))
    entry = _schema("codeclimate.json")  # what GitLab itself checks, entry by entry
    for item in document:
        jsonschema.validate(item, entry)


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return format_support.hostile_run(str(tmp_path))


def test_the_report_is_valid_for_gitlab(run):
    text = _render(run)
    assert text.isascii() and not text.startswith("\ufeff")  # GitLab refuses a BOM
    document = json.loads(text)
    _validate(document)
    assert [i["check_name"] for i in document] == ["TX001", "TX002", "TS001", "TS001",
                                                   "LL998", "LL999", "LL000", "LL998"]
    assert [i["severity"] for i in document] == ["major", "info", "critical", "major",
                                                 "major", "critical", "info", "info"]


def test_a_broken_entry_is_caught():
    with pytest.raises(jsonschema.ValidationError):
        _validate([{"description": "x", "check_name": "c", "fingerprint": "f",
                    "severity": "fatal", "location": {"path": "a", "lines": {"begin": 1}}}])
    with pytest.raises(jsonschema.ValidationError):
        _validate([{"description": "two\nlines", "check_name": "c", "fingerprint": "f",
                    "severity": "info", "location": {"path": "a", "lines": {"begin": 1}}}])


def test_locations_are_relative_lines_and_notebooks_point_at_the_file_line(run):
    document = json.loads(_render(run))
    assert document[0]["location"] == {"path": "train.py", "lines": {"begin": 2, "end": 2}}
    notebook = document[3]["location"]
    assert notebook["path"] == "nb.ipynb"
    with open("nb.ipynb", encoding="utf-8") as handle:
        assert handle.read().splitlines()[notebook["lines"]["begin"] - 1].strip() == '"bad()\\n"'
    assert document[3]["description"].startswith("cell 1, line 2: ")
    assert document[4]["location"] == {"path": "huge.py", "lines": {"begin": 3, "end": 3}}


def test_descriptions_are_one_line_with_controls_shown(run):
    document = json.loads(_render(run))
    hostile = document[2]["description"]
    assert "\n" not in hostile and "\x00" not in hostile and "\x1b" not in hostile
    assert "\\x1b[31m" in hostile and "\\r\\n" in hostile and "<U+202E>" in hostile
    assert len(hostile) <= 2000
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(document[2]["content"]["body"])
    assert "<img" not in html and "&lt;img" in html  # Markdown: code or text, never HTML
    assert "<a " not in html and "<h1" not in html


def test_fingerprints_are_distinct_for_distinct_findings(run):
    document = json.loads(_render(run))
    prints = [i["fingerprint"] for i in document]
    assert len(set(prints)) == len(prints)
    # two identical findings on identical lines of one file: still two entries
    twin = dataclasses.replace(run.findings[2])
    run.findings.insert(3, twin)
    prints = [i["fingerprint"] for i in json.loads(_render(run))]
    assert len(set(prints)) == len(prints)


def test_fingerprints_survive_lines_inserted_above(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = json.loads(_render(format_support.hostile_run(str(tmp_path))))
    # the same file with three lines added at the top: every finding moves down by 3
    moved = format_support.hostile_run(str(tmp_path))
    with open("train.py", encoding="utf-8") as handle:
        text = handle.read()
    with open("train.py", "w", encoding="utf-8") as handle:
        handle.write("# a\n# b\n# c\n" + text)
    shifted = []
    for finding in moved.findings:
        if finding.span.path.endswith("train.py"):
            span = dataclasses.replace(finding.span, line=finding.span.line + 3,
                                       end_line=finding.span.last_line + 3)
            finding = dataclasses.replace(finding, span=span, autofix=None)
        shifted.append(finding)
    moved.findings = shifted
    after = json.loads(_render(moved))
    assert [i["location"]["lines"]["begin"] for i in after[:3]] == [5, 6, 7]
    assert [i["fingerprint"] for i in after] == [i["fingerprint"] for i in before]


def test_a_message_naming_a_line_keeps_its_fingerprint_when_lines_move():
    a = fingerprint("t.py", "LL019", "collator (line 70) sets labels; see run.sh:3", "x = 1", 0)
    b = fingerprint("t.py", "LL019", "collator (line 73) sets labels; see run.sh:6", "x = 1", 0)
    c = fingerprint("t.py", "LL019", "collator (line 73) sets labels; see run.sh:6", "x = 2", 0)
    d = fingerprint("t.py", "LL019", "collator (line 73) sets labels; see run.sh:6", "x = 2", 1)
    e = fingerprint("u.py", "LL019", "collator (line 73) sets labels; see run.sh:6", "x = 2", 1)
    f = fingerprint("u.py", "LL020", "collator (line 73) sets labels; see run.sh:6", "x = 2", 1)
    assert a == b and len({b, c, d, e, f}) == 5
    assert len(a) == 64 and int(a, 16) >= 0


def test_a_clean_run_is_an_empty_array(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = format_support.hostile_run(str(tmp_path), with_problems=False)
    run.findings = []
    assert json.loads(_render(run)) == []


def test_the_real_command_on_fixtures(tmp_path):
    status, report, stderr = format_support.lintlora_cli(
        str(tmp_path), "--format", "gitlab", "--gpu", "rtx3090",
        *format_support.fixtures_with_findings(), output="gl-code-quality-report.json")
    assert status == 1, stderr
    document = json.loads(report)
    _validate(document)
    assert document and all("Rule: https://" in i["content"]["body"] for i in document)
    assert len({i["fingerprint"] for i in document}) == len(document)


def test_an_unreadable_file_still_gets_a_fingerprint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finding = Finding("TS001", "bad-call", Severity.WARNING,
                      Span(str(tmp_path / "gone.py"), 9, 1), "bad() was called")
    from lintlora.engine import RunResult

    document = json.loads(_render(RunResult(files=[], findings=[finding])))
    _validate(document)
    assert document[0]["location"]["path"] == "gone.py"
