"""``--format concise`` (issue 18 item 2): one ``path:line:col: CODE [*] message (est. X)``
line per finding in ruff's concise shape, notes and a summary; a hostile message never
forges a line, colours the terminal or starts a workflow command; rich is never imported."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap

import pytest

import format_support
from lintlora.report import render

_LINE = re.compile(r"^(?P<path>[^:]+):(?:cell (?P<cell>\d+):)?(?P<line>\d+):(?P<col>\d+): "
                   r"(?P<code>[A-Z]+\d+)(?P<fix> \[\*\])? (?P<message>.*)$")
"""What an editor's problem matcher (``%f:%l:%c: %m``) or a pre-commit reader takes for a
finding."""


def _render(result) -> str:
    out = io.StringIO()
    render(result, "concise", out)
    return out.getvalue()


@pytest.fixture
def lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return _render(format_support.hostile_run(str(tmp_path))).split("\n")


def test_one_line_per_finding_and_file_error_in_ruffs_shape(lines):
    assert lines[-1] == ""  # ends with a line break
    matched = [m for m in map(_LINE.match, lines) if m]
    assert [(m["path"], m["line"], m["col"], m["code"], bool(m["fix"])) for m in matched] == [
        ("train.py", "2", "37", "TX001", True),   # safe fix: [*]
        ("train.py", "3", "21", "TX002", False),  # unsafe fix: no marker
        ("train.py", "4", "1", "TS001", False),
        ("nb.ipynb", "2", "1", "TS001", False),
        ("huge.py", "3", "1", "LL998", False),
        ("odd.py", "1", "1", "LL999", False),
    ]
    assert matched[3]["cell"] == "1"
    assert lines[0] == "train.py:2:37: TX001 [*] fp16 on a bf16 GPU (est. 30.0 GiB)"
    assert lines[1] == "train.py:3:21: TX002 rank 64 is large"


def test_notes_and_the_summary(lines):
    notes = [line for line in lines if line.startswith("note: ")]
    assert notes[0].startswith("note: broken.py: could not be parsed; LL000")
    assert notes[1].startswith("note: cfg.yaml: not a training config")
    assert lines[-3] == ("Found 4 findings (1 error, 2 warnings, 1 info) in 3 checked files. "
                         "2 files could not be fully linted.")
    assert lines[-2] == ("[*] 1 fixable with `lintlora --fix` "
                         "(1 more with `lintlora --fix --unsafe-fixes`).")
    assert not any(_LINE.match(n) for n in notes)  # a matcher takes no note for a finding


def test_a_hostile_message_stays_on_its_line(lines):
    hostile = [line for line in lines if "bad() was called: fence" in line]
    assert len(hostile) == 1  # the finding's message, whole, on one line
    line = hostile[0]
    assert line.startswith("train.py:4:1: TS001 bad() was called: fence ")
    assert "\\r\\nnext\\nother.py:1:1: LL001 forged line" in line
    assert "\\x1b[31m" in line and "\\x00" in line and "<U+202E>" in line and "\\xff" in line
    assert "##[" not in line
    text = "\n".join(lines)
    assert not [c for c in text if not c.isprintable() and c != "\n"]
    assert sum(1 for line in text.splitlines() if "forged line" in line) == 1
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())


def test_a_clean_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = format_support.hostile_run(str(tmp_path), with_problems=False)
    run.findings = []
    assert _render(run) == "All checks passed (3 checked files).\n"


def test_the_real_command_with_output_and_without_rich(tmp_path):
    status, report, stderr = format_support.lintlora_cli(
        str(tmp_path), "--format", "concise", "--gpu", "rtx3090",
        *format_support.fixtures_with_findings(), output="lint.txt")
    assert status == 1, stderr
    findings = [m for m in map(_LINE.match, report.splitlines()) if m]
    assert findings and all(m["path"].endswith(".py") for m in findings)
    assert any(m["fix"] for m in findings)
    assert report.splitlines()[-1].startswith("[*] ")
    probe = textwrap.dedent(f"""
        import io, json, sys
        out = io.StringIO()
        sys.stdout = out
        from lintlora.cli import main
        try:
            main(["--no-cache", "--format", "concise", {format_support.fixtures_with_findings()[0]!r}])
        except SystemExit as exc:
            status = exc.code
        sys.stdout = sys.__stdout__
        print(json.dumps([status, out.getvalue(), "rich" in sys.modules]))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300)
    status, text, rich_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 1 and "Found " in text and rich_loaded is False
