"""``--format rdjson`` (issue 18 item 2): reviewdog's Diagnostic Format, checked against
reviewdog's published JSON schemas (``fixtures/schemas/reviewdog``), with UTF-8 byte columns,
safe fixes as line-wise suggestions, unsafe ones only named, and Markdown-safe messages."""

from __future__ import annotations

import io
import json
import os

import jsonschema
import pytest
from referencing import Registry, Resource

import format_support
from lintlora.report import render

SCHEMA_DIR = os.path.join(format_support.SCHEMAS, "reviewdog")


def _validator(name: str = "DiagnosticResult.json") -> jsonschema.protocols.Validator:
    with open(os.path.join(SCHEMA_DIR, name), encoding="utf-8") as handle:
        schema = json.load(handle)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry().with_resource("", Resource.from_contents(schema)))


def _render(result) -> str:
    out = io.StringIO()
    render(result, "rdjson", out)
    return out.getvalue()


@pytest.fixture
def doc(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = _render(format_support.hostile_run(str(tmp_path)))
    return text, json.loads(text)


def test_the_document_is_valid_against_reviewdogs_schemas(doc):
    text, document = doc
    _validator().validate(document)
    diagnostic = _validator("Diagnostic.json")
    for item in document["diagnostics"]:  # each one also as an rdjsonl line would be
        diagnostic.validate(item)
    assert text.isascii()
    assert document["source"] == {"name": "lintlora",
                                  "url": "https://github.com/lintlora/lintlora"}


def test_a_schema_violation_is_caught():  # the validator is not vacuous
    bad = {"diagnostics": [{"message": 3, "severity": "FATAL"}]}
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(bad)


def test_columns_are_utf8_bytes_of_the_files_own_line(doc):
    _, document = doc
    first = document["diagnostics"][0]
    assert first["code"] == {"value": "TX001"}
    line = format_support.TRAIN.splitlines()[1]
    char_col = line.index("fp16") + 1
    byte_col = len(line[:char_col - 1].encode("utf-8")) + 1
    assert byte_col == char_col + 6  # é, 漢 and 𐐀: 1 + 2 + 3 extra bytes
    assert first["location"] == {"path": "train.py", "range": {
        "start": {"line": 2, "column": byte_col},
        "end": {"line": 2, "column": byte_col + len("fp16=True")}}}
    # the byte range is the text it names
    raw = line.encode("utf-8")
    assert raw[byte_col - 1:byte_col - 1 + len("fp16=True")] == b"fp16=True"


def test_a_safe_fix_is_a_linewise_suggestion_and_an_unsafe_one_is_only_named(doc):
    _, document = doc
    safe, unsafe = document["diagnostics"][0], document["diagnostics"][1]
    fixed_line = format_support.TRAIN.splitlines()[1].replace("fp16=", "bf16=")
    assert safe["suggestions"] == [{"range": {"start": {"line": 2}, "end": {"line": 2}},
                                    "text": fixed_line}]
    assert "Autofix (safe, suggested below; lintlora --fix): use bf16" in safe["message"]
    assert "suggestions" not in unsafe
    assert "unsafe, not suggested; lintlora --fix --unsafe-fixes" in unsafe["message"]


def test_severities_related_locations_and_the_notebook(doc):
    _, document = doc
    by_code = [(d["code"]["value"], d["severity"]) for d in document["diagnostics"]]
    assert by_code[:4] == [("TX001", "WARNING"), ("TX002", "INFO"), ("TS001", "ERROR"),
                           ("TS001", "WARNING")]
    hostile = document["diagnostics"][2]
    assert hostile["related_locations"][0]["location"] == {
        "path": "run.sh", "range": {"start": {"line": 3}}}  # no such file: no column
    notebook = document["diagnostics"][3]
    assert notebook["location"]["path"] == "nb.ipynb"
    rng = notebook["location"]["range"]
    assert "column" not in rng["start"] and rng["start"] == rng["end"]
    with open("nb.ipynb", encoding="utf-8") as handle:
        nb_lines = handle.read().splitlines()
    assert nb_lines[rng["start"]["line"] - 1].strip() == '"bad()\\n"'
    assert notebook["message"].startswith("cell 1, line 2: ")


def test_file_errors_and_notices_are_diagnostics(doc):
    _, document = doc
    rest = [(d["code"]["value"], d["severity"], d.get("location", {}).get("path"))
            for d in document["diagnostics"][4:]]
    assert rest == [("LL998", "ERROR", "huge.py"), ("LL999", "ERROR", "odd.py"),
                    ("LL000", "INFO", "broken.py"), ("LL998", "INFO", "cfg.yaml")]
    assert document["diagnostics"][4]["location"]["range"] == {"start": {"line": 3}}
    assert "internal error: " in document["diagnostics"][5]["message"]


def test_hostile_messages_are_one_markdown_line_that_renders_as_text(doc):
    from markdown_it import MarkdownIt

    _, document = doc
    for item in document["diagnostics"]:
        message = item["message"]
        assert "\n" not in message and "\r" not in message
        assert "\x00" not in message and "\x1b" not in message and "\u202e" not in message
        # reviewdog writes it after "<sub>...</sub><br>" in the comment body
        html = MarkdownIt("commonmark").render("<sub>reported by reviewdog</sub><br>" + message)
        assert "<img" not in html and "<a " not in html and "<script" not in html
        assert html.count("<p>") == 1  # one paragraph: no heading, list or fence started
    hostile = document["diagnostics"][2]["message"]
    assert "@\u200b" in hostile or "@&#8203;" in hostile  # no mention
    assert "\\x1b" in hostile and "\\x00" in hostile  # shown, not sent


def test_reviewdog_would_build_the_suggested_line_from_bytes(doc):
    """reviewdog's ``buildNonLineBasedSuggestion`` slices the source line by byte columns; a
    line-wise suggestion is the whole line, which it writes as is."""
    _, document = doc
    suggestion = document["diagnostics"][0]["suggestions"][0]
    assert "column" not in suggestion["range"]["start"]
    assert suggestion["text"].endswith("TrainingArguments(bf16=True)")
    assert "\n" not in suggestion["text"]


def test_the_real_command_on_fixtures(tmp_path):
    paths = format_support.fixtures_with_findings()
    status, report, stderr = format_support.lintlora_cli(
        str(tmp_path), "--format", "rdjson", "--gpu", "rtx3090", *paths, output="out.json")
    assert status == 1, stderr
    document = json.loads(report)
    _validator().validate(document)
    assert document["diagnostics"]
    assert all(d["location"]["path"].startswith("../") or not os.path.isabs(
        d["location"]["path"]) for d in document["diagnostics"])
    urls = {d["code"].get("url") for d in document["diagnostics"]}
    assert any(u and u.startswith("https://") for u in urls)
    assert any("suggestions" in d for d in document["diagnostics"])


def test_utf8_columns_follow_the_protos_own_example():
    from lintlora.report.sourcelines import utf8_column

    # reviewdog.proto, message Position: in 'a𐐀b' the column of a is 1, of 𐐀 2, of b 6
    assert [utf8_column("a𐐀b", c) for c in (1, 2, 3)] == [1, 2, 6]
    assert utf8_column("a𐐀b", 4) == 7  # the exclusive end at the line's end
    assert utf8_column("ab", 5) == 5  # past the end: one byte a character
    assert utf8_column("\udcff", 2) == 4  # a lone surrogate never raises
    assert utf8_column(None, 3) is None


def test_lines_are_split_as_python_and_the_fixer_number_them(tmp_path):
    from lintlora.report.sourcelines import SourceLines

    path = tmp_path / "crlf.py"
    path.write_bytes("a = 1\r\nb = 'é'\rc = 3\nd\x0ce = 5\n".encode("utf-8"))
    lines = SourceLines()
    assert [lines.line(str(path), n) for n in (1, 2, 3, 4, 5)] == [
        "a = 1", "b = 'é'", "c = 3", "d\x0ce = 5", ""]  # a form feed ends no line
    assert lines.line(str(path), 6) is None and lines.line(str(tmp_path / "gone.py"), 1) is None
    link = tmp_path / "link.py"
    link.symlink_to(path)
    assert lines.line(str(link), 1) is None  # never read through a link
