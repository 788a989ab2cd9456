"""How the reports show fixes (issue 17): the text report's ``[*]`` marker and closing count
(ruff's conventions), ``lintlora rules``' Fix column, a notebook fix as a Markdown suggestion
on the ``.ipynb`` file's own lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner
from rules_support import ROOT, lint, settings_from_args

from lintlora.cli_app import app
from lintlora.report import render

FIX = ROOT / "fixtures" / "fix"


def _text(result, **options) -> list[str]:
    out = io.StringIO()
    render(result, "text", out, color=False, **options)
    return out.getvalue().splitlines()


def test_a_safe_fix_is_marked_and_counted():
    result = lint(FIX / "LL002" / "trainer.py", settings_from_args("--gpu a100-80gb"))
    lines = _text(result)
    finding = next(line for line in lines if " LL002 " in line)
    assert " LL002 fp16-instead-of-bf16 [*] Trains in float16" in finding
    assert "[*] 1 fixable with --fix." in lines
    assert lines.index("[*] 1 fixable with --fix.") == len(lines) - 3  # before the summary line
    assert lines[-2].startswith("Found 1 problem")


def test_an_unsafe_fix_is_not_marked_but_counted_as_more():
    result = lint(FIX / "LL012" / "trainer.py", settings_from_args("--gpu a100-80gb"))
    lines = _text(result)
    assert not any("[*]" in line for line in lines if " LL012 " in line)
    assert "1 fixable with --fix --unsafe-fixes." in lines
    both = lint(FIX / "LL010" / "trl.py", settings_from_args("--gpu t4"))  # LL010 safe, LL017 unsafe
    assert "[*] 2 fixable with --fix (1 more with --unsafe-fixes)." in _text(both)


def test_the_settings_decide_what_is_fixable():
    """``fixable`` from the command line (``[tool.lintlora] unfixable``): an unfixable rule's
    finding is not marked nor counted."""
    result = lint(FIX / "LL002" / "trainer.py", settings_from_args("--gpu a100-80gb"))
    lines = _text(result, fixable=lambda finding: None)
    assert not any("[*]" in line or "fixable" in line for line in lines)


def test_a_finding_without_a_fix_says_nothing_about_fixes():
    result = lint(FIX / "LL001" / "litgpt.nofix.yaml", settings_from_args("--gpu a100-80gb"))
    lines = _text(result)
    assert not any("[*]" in line or "fixable" in line for line in lines)


def test_rules_lists_each_rules_fix_safety():
    runner = CliRunner()
    out = runner.invoke(app, ["rules"]).output.splitlines()
    assert out[0].split() == ["CODE", "NAME", "SEVERITY", "FIX", "SUMMARY"]
    rows = {line.split()[0]: line.split()[3] for line in out[1:] if line.startswith("LL")}
    assert rows["LL001"] == "safe"  # a safe fix and an unsafe launch one
    assert rows["LL003"] == "unsafe" and rows["LL012"] == "unsafe" and rows["LL005"] == "none"
    doc = {r["code"]: r for r in json.loads(runner.invoke(app, ["rules", "--format", "json"]).output)}
    from lintlora.engine import available_rules

    for rule in available_rules():
        if rule.__module__.startswith("lintlora."):
            assert doc[rule.code]["fixes"] == {t: s.value for t, s in rule.fixes.items()}
            assert doc[rule.code]["fix"] == ("none" if not rule.fixes else "safe" if any(
                s.value == "safe" for s in rule.fixes.values()) else "unsafe")


def test_a_notebook_fix_is_a_suggestion_on_the_notebooks_json_lines():
    path = FIX / "LL014" / "notebook.ipynb"
    result = lint(path, settings_from_args("--gpu a100-80gb"))
    out = io.StringIO()
    render(result, "markdown", out)
    body = out.getvalue()
    text = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, t in enumerate(text, 1) if "bnb = BitsAndBytesConfig" in t)
    assert f"line {line} of the notebook's JSON" in body
    block = body.split("```suggestion\n", 1)[1].split("\n```", 1)[0]
    fixed = Path(str(path).replace(".ipynb", ".fixed.ipynb")).read_text(encoding="utf-8").splitlines()
    assert block == fixed[line - 1]  # the JSON line as --fix writes it
