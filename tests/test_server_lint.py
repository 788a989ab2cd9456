"""The editor server's pygls-free part (:mod:`lintlora.server_lint`): client settings, the lint
of a buffer (never the file on disk), positions in the negotiated encoding, and the isolation
boundary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lintlora import server_lint
from lintlora.server_lint import (
    LintSession, client_values, diagnostics, fix_all_safe, hover_markdown, kind_for, units,
)

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "fix"


@pytest.fixture(scope="module")
def session():
    return LintSession({"gpu": "a100-80gb"})


def test_client_values_map_like_the_cli_and_warn_on_bad_ones():
    values, warnings = client_values({"lintlora": {
        "gpu": "rtx4090", "gpuMemory": "20GiB", "failOn": "Warning", "select": "LL001, LL002",
        "ignore": ["LL019"], "maxFileSize": "1MiB", "assumeVersion": ["peft=0.13.0"],
        "params": "7B"}})
    assert warnings == []
    assert values["gpu"] == "rtx4090" and values["gpu_memory_bytes"] == 20 * 2**30
    assert values["fail_on"].value == "warning" and values["select"] == ("LL001", "LL002")
    assert values["ignore"] == ("LL019",) and values["max_file_bytes"] == 2**20
    assert values["assume_versions"] == (("peft", "0.13.0"),) and values["params"] == 7e9
    values, warnings = client_values({"gpu": "nonesuch-9000", "gpuMemory": "-1", "failOn": 3,
                                      "select": "LL9999", "gpuu": "x", "model": "x" * 5000},
                                     known_codes=["LL001", "LL002"])
    assert values == {}
    assert [w.split(":")[0] for w in warnings] == [
        "lintlora.gpuu", "lintlora.gpu", "lintlora.gpuMemory", "lintlora.model",
        "lintlora.failOn", "lintlora.select"]
    assert "did you mean 'gpu'" in warnings[0]
    assert client_values("not a mapping") == ({}, [])


def test_the_buffer_is_linted_not_the_file(session, tmp_path):
    path = tmp_path / "train.py"
    path.write_text("print('on disk')\n")
    text = (FIX / "LL002" / "trainer.py").read_text()
    result = session.lint(str(path), text)
    assert [f.code for f in result.findings] == ["LL002"]


def test_a_buffer_above_the_size_limit_is_an_input_error(tmp_path):
    session = LintSession({"maxFileSize": "1KiB"})
    text = "x = 1\n" * 1000
    result = session.lint(str(tmp_path / "big.py"), text)
    assert result.findings == [] and [e.code for e in result.errors] == ["LL998"]
    [diag] = diagnostics(result, text)
    assert diag.severity == 2 and "max-file-size" in diag.message


def test_an_exception_in_the_lint_is_one_diagnostic(session, tmp_path, monkeypatch):
    import lintlora.engine

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(lintlora.engine, "lint_file", broken)
    result = session.lint(str(tmp_path / "x.py"), "import torch\n")
    [diag] = diagnostics(result, "import torch\n")
    assert diag.code == "LL999" and diag.severity == 1 and "boom" in diag.message


def test_kinds_by_suffix_then_language():
    assert kind_for("a/train.py") == "python" and kind_for("c.yml") == "yaml"
    assert kind_for("nb.ipynb") == "notebook" and kind_for("ds.json") == "json"
    assert kind_for("untitled-1", "python") == "python" and kind_for("README.md") is None


def test_units_per_encoding():
    assert units("aé😀", "utf-16") == 4 and units("aé😀", "utf-8") == 7
    assert units("aé😀", "utf-32") == 3 and units("plain", "utf-16") == 5


def test_positions_in_utf8_and_with_a_bom(session, tmp_path):
    text = (FIX / "LL002" / "trainer.py").read_text().replace(
        "    fp16=True,  # mixed precision", '    run_name="é😀", fp16=True,')
    result = session.lint(str(tmp_path / "w.py"), text)
    [d8] = [d for d in diagnostics(result, text, "utf-8") if d.code == "LL002"]
    [d16] = [d for d in diagnostics(result, text, "utf-16") if d.code == "LL002"]
    assert d8.range[1] == 24 + 1 + 3 and d16.range[1] == 24 + 1  # é 2 bytes, 😀 4 bytes / 2 units
    bom = "\ufeff" + text
    result = session.lint(str(tmp_path / "b.py"), bom)
    [d] = [d for d in diagnostics(result, bom) if d.code == "LL002"]
    assert d.range == d16.range  # the mark is on the first line only


def test_notebook_findings_land_on_the_cell_source_line(session):
    path = FIX / "LL002" / "notebook.ipynb"
    text = path.read_text()
    result = session.lint(str(path), text, "notebook")
    ds = [d for d in diagnostics(result, text) if d.code == "LL002"]
    assert ds
    cells = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
    lines = text.splitlines()
    for d, finding in ((d, d.finding) for d in ds):
        source_line = "".join(cells[finding.span.cell - 1]["source"]).splitlines()[finding.span.line - 1]
        file_line = lines[d.range[0]]
        assert json.loads(file_line.strip().rstrip(",")).rstrip("\n") == source_line
        # the range covers the finding's text inside the JSON string
        shown = file_line[d.range[1]:d.range[3]]
        code = source_line[finding.span.column - 1:finding.span.end_column - 1]
        assert shown == code, (shown, code)


def test_a_finding_in_another_file_is_placed_at_the_top(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text((FIX / "LL002" / "trl.py").read_text())
    (tmp_path / "run.sh").write_text("python train.py --fp16 True\n")
    from lintlora.file_result import FileResult
    from lintlora.findings import Finding, Severity
    from lintlora.training_setup import Span

    result = FileResult(path=str(tmp_path / "train.py"), kind="python")
    result.findings.append(Finding("LL002", "fp16-instead-of-bf16", Severity.WARNING,
                                   Span(str(tmp_path / "run.sh"), 1, 17, 1, 26), "fp16 on a bf16 GPU"))
    [d] = diagnostics(result, "import torch\n")
    assert d.range[0] == 0 and "run.sh:1: " in d.message
    assert d.related[0][0].endswith("run.sh") and d.related[0][1] == (0, 16, 0, 25)


def test_hover_escapes_markdown_and_fix_all(session):
    path = FIX / "LL002" / "trainer.py"
    text = path.read_text()
    result = session.lint(str(path), text)
    [d] = [d for d in diagnostics(result, text) if d.code == "LL002"]
    markdown = hover_markdown(d)
    assert "torch\\_dtype" in markdown and "| **peak** |" in markdown
    edits = fix_all_safe(result.findings, str(path), text, "python")
    [(old, [(rng, new)])] = edits.values()
    assert old == text and new == (FIX / "LL002" / "trainer.fixed.py").read_text()


def test_the_fit_list_is_split_out():
    message = ("Estimated peak 30.0 GiB does not fit. What would make it fit (each re-estimated): "
               "1) batch 4 (accumulation 4): 20.1 GiB; 2) gradient checkpointing on: 18.0 GiB. "
               "Reported as a warning.")
    rest, heading, items = server_lint._fit_list(message)
    assert heading == "What would make it fit (each re-estimated)"
    assert items == ["batch 4 (accumulation 4): 20.1 GiB", "gradient checkpointing on: 18.0 GiB"]
    assert rest == "Estimated peak 30.0 GiB does not fit. Reported as a warning."


def test_a_broken_project_configuration_keeps_one_context(tmp_path):
    """While pyproject.toml is broken each lint falls back to the client's values alone: the
    same Settings each time, so one Context, not one more per keystroke."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.lintlora]\ngpu = 5\n")
    session = LintSession(root=str(tmp_path))
    text = (FIX / "LL002" / "trainer.py").read_text()
    for _ in range(5):
        session.lint(str(tmp_path / "train.py"), text)
    assert session.take_warnings()  # the broken configuration is reported
    assert len(session._contexts) == 1
