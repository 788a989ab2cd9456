"""The command line's fixing modes (issue 17): --fix, --diff, --unsafe-fixes, --fix-only,
--show-fixes, [tool.lintlora] fixable/unfixable, exit statuses and the summary; the fix in the
JSON/SARIF/Markdown/GitHub reports and the results cache; the lintlora-fix pre-commit hook.

The rules are the test-only ones of ``fix_support`` (TX001 safe, TX002 unsafe) with the real
extractors, so these tests do not depend on which built-in rules offer fixes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import fix_support
from lintlora.cli_app import app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRAIN = textwrap.dedent('''\
    from transformers import TrainingArguments
    from peft import LoraConfig

    args = TrainingArguments(
        output_dir="out",  # keep me
        fp16=True,
    )
    cfg = LoraConfig(r=64, lora_alpha=16)
    ''')
FIXED_SAFE = TRAIN.replace("fp16=True", "bf16=True")
FIXED_ALL = FIXED_SAFE.replace("r=64", "r=8")


@pytest.fixture(autouse=True)
def _rules(monkeypatch):
    fix_support.install(monkeypatch)


@pytest.fixture
def work(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False)


def test_plain_lint_is_unchanged_and_its_report_counts_the_fixes(work):
    """A plain lint changes nothing; its text report closes as ruff's does: the fixable
    findings counted (the safe one marked ``[*]``), the unsafe ones as "more"."""
    result = invoke("train.py")
    assert result.exit_code == 1
    assert (work / "train.py").read_text() == TRAIN
    assert "[*] 1 fixable with --fix (1 more with --unsafe-fixes)." in result.output.splitlines()


def test_diff_prints_the_change_and_changes_nothing(work):
    result = invoke("train.py", "--diff")
    assert result.exit_code == 1
    assert "--- a/train.py\n+++ b/train.py\n" in result.stdout
    assert "-    fp16=True,\n+    bf16=True,\n" in result.stdout and "r=8" not in result.stdout
    assert "Would fix 1 problem (1 more fixable with --unsafe-fixes)" in result.stderr
    assert (work / "train.py").read_text() == TRAIN
    result = invoke("train.py", "--diff", "--unsafe-fixes")
    assert result.exit_code == 1 and "+cfg = LoraConfig(r=8, lora_alpha=16)" in result.stdout
    (work / "train.py").write_text(FIXED_ALL)
    result = invoke("train.py", "--diff")
    assert result.exit_code == 0 and result.stdout == ""


def test_fix_applies_safe_fixes_relints_and_summarises(work):
    result = invoke("train.py", "--fix")
    assert (work / "train.py").read_text() == FIXED_SAFE
    assert result.exit_code == 1  # TX002 remains
    assert "TX002" in result.stdout and "TX001" not in result.stdout
    assert "Fixed 1 problem (1 more fixable with --unsafe-fixes); 1 remaining" in result.stderr
    again = invoke("train.py", "--fix")  # idempotent
    assert (work / "train.py").read_text() == FIXED_SAFE
    assert "Fixed 0 problems" in again.stderr


def test_unsafe_fixes_and_exit_zero_when_nothing_remains(work):
    result = invoke("train.py", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0
    assert (work / "train.py").read_text() == FIXED_ALL
    assert "Fixed 2 problems; 0 remaining" in result.stderr
    assert invoke("train.py", "--fix", "--unsafe-fixes").exit_code == 0
    assert (work / "train.py").read_text() == FIXED_ALL


def test_fix_only_reports_no_findings(work):
    result = invoke("train.py", "--fix-only")
    assert result.exit_code == 0 and result.stdout == ""
    assert (work / "train.py").read_text() == FIXED_SAFE
    assert "Fixed 1 problem" in result.stderr


def test_show_fixes(work):
    result = invoke("train.py", "--show-fixes")
    assert "Fixes available:" in result.stderr
    assert "train.py:6:10 TX001 use bf16 (safe; --fix)" in result.stderr
    assert "TX002 set r=8 (unsafe; --unsafe-fixes)" in result.stderr
    assert "1 problem fixable with --fix (1 more with --unsafe-fixes)" in result.stderr
    result = invoke("train.py", "--fix", "--show-fixes")
    assert "Fixed 1 problem:\n  train.py:6:10 TX001 use bf16 (safe)" in result.stderr
    assert "Fixes not applied:" in result.stderr
    alone = invoke("train.py", "--unsafe-fixes")  # without --fix: shown as available
    assert "TX002 fix available (unsafe): set r=8" in alone.stderr


def test_fixable_and_unfixable_in_the_configuration(work):
    (work / "pyproject.toml").write_text('[tool.lintlora]\nunfixable = ["TX001"]\n')
    result = invoke("train.py", "--fix", "--unsafe-fixes")
    assert (work / "train.py").read_text() == TRAIN.replace("r=64", "r=8")
    assert "1 remaining" in result.stderr
    (work / "train.py").write_text(TRAIN)
    (work / "pyproject.toml").write_text('[tool.lintlora]\nfixable = ["TX002"]\n')
    invoke("train.py", "--fix", "--unsafe-fixes")
    assert (work / "train.py").read_text() == TRAIN.replace("r=64", "r=8")
    (work / "pyproject.toml").write_text('[tool.lintlora]\nfixable = ["NOPE9"]\n')
    assert invoke("train.py", "--fix").exit_code == 2  # an unknown code is a configuration error


def test_yaml_and_notebook_through_the_cli(work):
    (work / "cfg.yaml").write_text("# axolotl\nbase_model: meta-llama/Llama-2-7b-hf\nadapter: lora\n"
                                   "lora_r: 16\nfp16: true   # old GPU\n")
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["from transformers import TrainingArguments\n",
                                "args = TrainingArguments(output_dir='o', fp16=True)\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1) + "\n"
    (work / "nb.ipynb").write_text(text)
    result = invoke("cfg.yaml", "nb.ipynb", "--fix")
    assert (work / "nb.ipynb").read_text() == text.replace("fp16=True", "bf16=True")
    yaml_text = (work / "cfg.yaml").read_text()
    if "TX001" in invoke("cfg.yaml", "--format", "json").stdout or "bf16" in yaml_text:
        assert yaml_text.endswith("bf16: true   # old GPU\n")
    assert "remaining" in result.stderr


def test_json_sarif_markdown_and_github_carry_the_fix(work):
    doc = json.loads(invoke("train.py", "--format", "json").stdout)
    [tx1] = [f for f in doc["findings"] if f["code"] == "TX001"]
    assert tx1["fix"] == "use bf16=True"  # the prose field is kept
    assert tx1["autofix"] == {"title": "use bf16", "safety": "safe", "edits": [
        {"path": "train.py", "line": 6, "column": 5, "end_line": 6, "end_column": 9,
         "new_text": "bf16"}]}
    sarif = json.loads(invoke("train.py", "--format", "sarif").stdout)
    import jsonschema

    with open(os.path.join(REPO, "tests", "sarif-schema-2.1.0.json")) as handle:
        jsonschema.Draft4Validator(json.load(handle)).validate(sarif)
    [res] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "TX001"]
    [change] = res["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "train.py"
    assert change["replacements"] == [{"deletedRegion": {"startLine": 6, "startColumn": 5,
                                                         "endLine": 6, "endColumn": 9},
                                       "insertedContent": {"text": "bf16"}}]
    assert res["fixes"][0]["properties"]["safety"] == "safe"
    md = invoke("train.py", "--format", "markdown").stdout
    assert "```suggestion\n    bf16=True,\n```" in md and "`train.py` line 6" in md
    gh = invoke("train.py", "--format", "github").stdout
    assert "Autofix (safe, lintlora --fix): use bf16" in gh


def test_a_second_fix_changes_nothing_and_the_cache_keeps_the_fix(work, tmp_path):
    cache = str(tmp_path / "cache")
    runner = CliRunner()
    first = runner.invoke(app, ["train.py", "--cache-dir", cache, "--format", "json"])
    second = runner.invoke(app, ["train.py", "--cache-dir", cache, "--format", "json"])
    assert first.stdout == second.stdout and '"autofix"' in second.stdout
    runner.invoke(app, ["train.py", "--cache-dir", cache, "--fix"])
    assert (work / "train.py").read_text() == FIXED_SAFE


def test_cache_entry_round_trip_and_validation():
    from lintlora.cache import decode_result, encode_result
    from lintlora.engine import FileResult
    from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
    from lintlora.training_setup import Span

    r = FileResult("/p/t.py", "python")
    fix = Fix("t", FixSafety.UNSAFE, (EditOp("set_keyword", Span("/p/t.py", 2, 1), "1", "k"),
                                      EditOp("launch_set", Span("/p/run.sh", 3, 1), "x", "--o")))
    r.findings.append(Finding("TX001", "n", Severity.INFO, Span("/p/t.py", 2), "m", autofix=fix))
    r.findings.append(Finding("TX001", "n", Severity.INFO, Span("/p/t.py", 3), "m"))
    data = json.loads(json.dumps(encode_result(r)))
    back = decode_result(data, other_paths=["/p/run.sh"])
    assert back.findings[0].autofix == fix and back.findings[1].autofix is None
    with pytest.raises(ValueError):  # an op in a file that is not the run's
        decode_result(data)
    bad = json.loads(json.dumps(data))
    bad["findings"][0]["autofix"]["ops"][0][0] = "rm -rf"
    with pytest.raises(ValueError):
        decode_result(bad, other_paths=["/p/run.sh"])
    bad["findings"][0]["autofix"]["ops"] = [data["findings"][0]["autofix"]["ops"][0]] * 65
    with pytest.raises(ValueError):
        decode_result(bad, other_paths=["/p/run.sh"])


def test_usage_errors(work):
    assert invoke("train.py", "--fix", "--diff").exit_code == 2
    assert invoke("train.py", "--fix", "--show-setup").exit_code == 2


def _hook_entry() -> list[str]:
    import yaml

    with open(os.path.join(REPO, ".pre-commit-hooks.yaml")) as handle:
        hooks = {h["id"]: h for h in yaml.safe_load(handle)}
    hook = hooks["lintlora-fix"]
    assert hook["entry"].split()[0] == "lintlora"
    return hook["entry"].split()[1:]


def test_pre_commit_hook_fixes_fails_then_passes(work):
    """Real pre-commit, with the hook's entry as .pre-commit-hooks.yaml states it, run as a
    local ``system`` hook through a launcher that installs the test rules (pre-commit cannot
    install lintlora into its own environment offline)."""
    if shutil.which("pre-commit") is None and not os.path.exists(
            os.path.join(os.path.dirname(sys.executable), "pre-commit")):
        pytest.skip("pre-commit is not installed")
    pre_commit = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable),
                                                            "pre-commit")
    shutil.rmtree(work / ".git")
    launcher = work / "launch_lintlora.py"
    launcher.write_text(textwrap.dedent(f'''\
        import sys
        sys.path.insert(0, {os.path.join(REPO, "tests")!r})
        import fix_support, lintlora.engine
        from lintlora.rules.ll000_syntax_error import SyntaxErrorRule
        from lintlora.suppression import UnusedSuppression
        lintlora.engine.available_rules = lambda: [SyntaxErrorRule, fix_support.Fp16ToBf16, UnusedSuppression]
        from lintlora.cli_app import app
        app(sys.argv[1:], prog_name="lintlora")
        '''))
    entry = " ".join([sys.executable, str(launcher), *_hook_entry(), "--no-cache"])
    (work / ".pre-commit-config.yaml").write_text(textwrap.dedent(f'''\
        repos:
          - repo: local
            hooks:
              - id: lintlora-fix
                name: lintlora (fix)
                entry: {entry}
                language: system
                types_or: [python, yaml, jupyter]
                exclude: ^launch_lintlora\\.py$
                require_serial: true
        '''))
    (work / "train.py").write_text(TRAIN.replace("r=64", "r=8"))
    env = dict(os.environ, PRE_COMMIT_HOME=str(work.parent / "pc-home"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=work, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    run = subprocess.run([pre_commit, "run", "--all-files"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "files were modified by this hook" in run.stdout
    assert (work / "train.py").read_text() == FIXED_ALL
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    again = subprocess.run([pre_commit, "run", "--all-files"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr


def test_fix_with_diff_only_fixes_only_the_changed_lines(work):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    shutil.rmtree(work / ".git")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=work, check=True, env=env)
    (work / "train.py").write_text(TRAIN.replace("r=64", "r=32"))  # only line 8 changes
    result = invoke("train.py", "--fix", "--unsafe-fixes", "--diff-only", "HEAD")
    text = (work / "train.py").read_text()
    assert "r=8" in text and "fp16=True" in text, result.output  # line 6's fix is not applied
