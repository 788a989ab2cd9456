"""The review-tool formats (rdjson, gitlab, junit, concise) on files whose names a pull
request chose: line breaks, ESC sequences, bidi overrides, backtick runs around HTML, ``@``
mentions, ``##[`` and bytes that are not UTF-8 (issue 12's attack names, issue 18's formats),
through the real command, to standard output and to ``-o``. Each output must stay valid for
its reader and carry the name, exact where the format is exact, shown where it is text."""

from __future__ import annotations

import json
import os

import pytest

import format_support
from lintlora.report import FORMATS

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
NAMES = ["nl\n::error file=ci.yml::pwned", "esc\x1b[2J\x1b[31m", "bidi\u202eyp",
         "ticks`` <img src=x onerror=alert(1)> ``", "@someone | x", "##[error]legacy", "ü漢"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile") / "repo"
    root.mkdir()
    for name in NAMES:
        (root / f"{name}.py").write_text(TRAIN, encoding="utf-8")
    with open(os.path.join(os.fsencode(root), b"\xff\xfe.py"), "wb") as handle:
        handle.write(TRAIN.encode())
    return root


def _no_raw_controls(text: str) -> bool:
    return not [c for c in text if not c.isprintable() and c not in "\n"]


@pytest.mark.parametrize("to_file", [False, True])
@pytest.mark.parametrize("fmt", ["rdjson", "gitlab", "junit", "concise"])
def test_hostile_names_through_the_command_line(tree, fmt, to_file):
    status, report, stderr = format_support.lintlora_cli(
        str(tree), "--format", fmt, ".", output="report.out" if to_file else None)
    assert status == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    n_files = len(NAMES) + 1
    if fmt == "rdjson":
        document = json.loads(report)
        paths = {d["location"]["path"] for d in document["diagnostics"]}
        assert "\udcff\udcfe.py" in paths and f"{NAMES[0]}.py" in paths  # exact
        assert len([d for d in document["diagnostics"] if d["code"]["value"] == "LL001"]) \
            == n_files
        assert report.isascii() and "##[" not in report
    elif fmt == "gitlab":
        document = json.loads(report)
        assert len({i["fingerprint"] for i in document}) == len(document)
        assert "\udcff\udcfe.py" in {i["location"]["path"] for i in document}
        assert all("\n" not in i["description"] for i in document)
    elif fmt == "junit":
        import xml.etree.ElementTree as ET

        import xmlschema

        xmlschema.XMLSchema(os.path.join(format_support.SCHEMAS, "junit",
                                         "junit-10.xsd")).validate(report)
        suites = [s.get("name") for s in ET.fromstring(report)]
        assert "\\xff\\xfe.py" in suites and "nl\\n::error file=ci.yml::pwned.py" in suites
        assert "esc\\x1b[2J\\x1b[31m.py" in suites
    else:
        lines = report.splitlines()
        assert _no_raw_controls(report) and "##[" not in report
        assert not any(line.lstrip().startswith("::") for line in lines)
        assert sum(" LL001 " in line for line in lines) == n_files
        assert any(line.startswith("\\xff\\xfe.py:2:") for line in lines)
        assert any(line.startswith("ü漢.py:2:") for line in lines)


def test_every_registered_format_is_a_cli_choice():
    from click.testing import CliRunner

    from lintlora.cli_app import check

    choices = next(p for p in check.params if p.name == "fmt").type.choices
    assert list(choices) == list(FORMATS)
    help_text = CliRunner().invoke(check, ["--help"]).output
    for name in ("rdjson", "gitlab", "junit", "concise"):
        assert name in help_text
