"""The command line: default command, options, exit statuses, configuration errors, --diff-only.

In-process tests (click's CliRunner) use the stand-in extractors and rules of ``engine_stubs``;
the start-up test runs a real subprocess. End-to-end runs on real fixtures: test_cli_e2e.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import engine_stubs
from lintlora import __version__
from lintlora.cli_app import app, parse_count

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    engine_stubs.install(monkeypatch)


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        bad()
        args = TrainingArguments(
            gradient_checkpointing=False,
        )
    """))
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_default_command_lints_paths(work):
    result = invoke("train.py")
    assert result.exit_code == 1
    assert "train.py:1:1 TS001 bad-call bad() was called" in result.output
    assert "train.py:3:28 TS002 gc-off" in result.output
    # options may come after the paths, and `check` is the same command
    assert invoke("train.py", "--select", "TS001").output == invoke("check", "--select", "TS001",
                                                                    "train.py").output


def test_clean_file_exits_zero(work):
    result = invoke("clean.py")
    assert result.exit_code == 0
    assert "No problems found; 1 file checked." in result.output


def test_no_paths_exits_cleanly(work):
    result = invoke()
    assert result.exit_code == 0
    result = invoke("--fail-on", "warning")
    assert result.exit_code == 0 and "nothing to lint" in result.output


def test_missing_path_is_usage_error(work):
    result = CliRunner().invoke(app, ["nope.py"])
    assert result.exit_code == 2 and "does not exist" in result.output


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_named_broken_symlink_is_an_unreadable_file_not_a_usage_error(work):
    os.symlink("nowhere.py", work / "dangling.py")
    os.symlink("loop.py", work / "loop.py")
    result = CliRunner().invoke(app, ["dangling.py", "loop.py", "train.py", "--format", "json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    errors = {e["path"]: e for e in report["errors"]}
    assert errors["dangling.py"]["code"] == "LL998"
    assert errors["dangling.py"]["message"] == \
        "cannot read: a symbolic link to a missing file (nowhere.py)"
    assert errors["loop.py"]["code"] == "LL998" and "cannot read" in errors["loop.py"]["message"]
    assert {"TS001", "TS002"} <= {f["code"] for f in report["findings"] if f["path"] == "train.py"}
    # a path that is not there at all is still click's usage error
    missing = CliRunner().invoke(app, ["dangling.py", "nope.py"])
    assert missing.exit_code == 2 and "'nope.py' does not exist" in missing.output


def test_unknown_gpu_is_usage_error_with_suggestions(work):
    result = CliRunner().invoke(app, ["train.py", "--gpu", "rtx309"])
    assert result.exit_code == 2
    assert "--gpu" in result.output and "RTX 3090" in result.output


def test_ambiguous_gpu_notes_the_choice(work):
    result = CliRunner().invoke(app, ["clean.py", "--gpu", "a100"])
    assert result.exit_code == 0
    assert "ambiguous" in result.output


@pytest.mark.parametrize("args,words", [
    (["--select", "TS001,XX999"], ["--select", "unknown rule code 'XX999'"]),
    (["--ignore", "LL123"], ["--ignore", "'LL123'"]),
    (["--gpu-memory", "lots"], ["--gpu-memory", "not a memory size"]),
    (["--params", "seven"], ["--params", "not a count"]),
    (["--cpus", "0"], ["--cpus"]),
    (["--max-file-size", "big"], ["--max-file-size"]),
    (["--format", "xml"], ["--format"]),
    (["--gpu", ""], ["--gpu", "must not be empty"]),  # not silently "no GPU"
    (["--gpu", "  "], ["--gpu", "must not be empty"]),
    (["--model", ""], ["--model", "must not be empty"]),
    (["--gpu-memory", ""], ["--gpu-memory", "must not be empty"]),
    # zero or less is no size: it must not silently mean "no GPU" (the check was skipped)
    (["--gpu-memory", "0"], ["--gpu-memory", "must be positive"]),
    (["--gpu-memory", "0GiB"], ["--gpu-memory", "must be positive"]),
    (["--gpu-memory", "0.0"], ["--gpu-memory", "must be positive"]),
    (["--gpu-memory", "-1"], ["--gpu-memory", "must be positive"]),
    (["--gpu-memory=-24GiB"], ["--gpu-memory", "must be positive"]),
])
def test_bad_option_values_exit_2(work, args, words):
    result = CliRunner().invoke(app, ["train.py", *args])
    assert result.exit_code == 2, result.output
    for word in words:
        assert word in result.output


def test_select_ignore_extend_select(work):
    assert "TS002" not in invoke("train.py", "--select", "TS001").output
    out = invoke("train.py", "--select", "TS001", "--extend-select", "TS002").output
    assert "TS001" in out and "TS002" in out
    out = invoke("train.py", "--ignore", "TS001,TS003").output
    assert "TS001" not in out and "TS002" in out


def test_fail_on(work):
    assert invoke("train.py", "--select", "TS001", "--fail-on", "error").exit_code == 0
    assert invoke("train.py", "--select", "TS001", "--fail-on", "warning").exit_code == 1
    assert invoke("train.py", "--select", "TS002", "--fail-on", "error").exit_code == 1


def test_json_format_and_output_file(work):
    result = invoke("train.py", "--format", "json", "--select", "TS001")
    doc = json.loads(result.output)
    assert [(f["code"], f["path"], f["line"]) for f in doc["findings"]] == [("TS001", "train.py", 1)]
    result = invoke("train.py", "--format", "sarif", "-o", "out.sarif")
    assert result.exit_code == 1
    assert json.loads((work / "out.sarif").read_text())["version"] == "2.1.0"
    assert "report written to out.sarif" in result.output


def test_internal_error_exits_2(work):
    (work / "crash.py").write_text("crash()\n")
    result = invoke("crash.py", "clean.py")
    assert result.exit_code == 2
    assert "LL999" in result.output and "please report" in result.output


def test_max_file_size(work):
    result = invoke("train.py", "--max-file-size", "10")
    assert result.exit_code == 1
    assert "LL998" in result.output and "limit" in result.output


# ---- configuration ------------------------------------------------------------------------------

def test_config_applies_and_flags_override(work):
    (work / "pyproject.toml").write_text('[tool.lintlora]\nignore = ["TS001"]\nfail-on = "error"\n')
    result = invoke("train.py")
    assert "TS001" not in result.output and "TS002" in result.output
    assert result.exit_code == 1  # TS002 is an error
    assert invoke("train.py", "--select", "TS001").exit_code == 0  # fail-on error from the file
    assert invoke("train.py", "--no-config", "--select", "TS001").exit_code == 1


def test_nearest_config_per_folder(work):
    (work / "pyproject.toml").write_text('[tool.lintlora]\nignore = ["TS001"]\n')
    (work / "sub").mkdir()
    (work / "sub" / "pyproject.toml").write_text('[tool.lintlora]\nignore = ["TS002"]\n')
    (work / "sub" / "s.py").write_text("bad()\nTrainingArguments(gradient_checkpointing=False)\n")
    doc = json.loads(invoke(".", "--format", "json", "--select", "TS001,TS002").output)
    got = sorted((f["path"], f["code"]) for f in doc["findings"])
    assert got == [("sub/s.py", "TS001"), ("train.py", "TS002")]


def test_per_file_ignores_and_exclude_from_config(work):
    (work / "tests").mkdir()
    (work / "tests" / "t.py").write_text("bad()\n")
    (work / "legacy").mkdir()
    (work / "legacy" / "l.py").write_text("bad()\n")
    (work / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.lintlora]
        select = ["TS001"]
        per-file-ignores = { "tests/*" = ["TS001"] }
        exclude = ["legacy/"]
    """))
    doc = json.loads(invoke(".", "--format", "json").output)
    assert [f["path"] for f in doc["findings"]] == ["train.py"]
    # run from elsewhere: patterns stay relative to the pyproject's folder
    os.chdir(work / "tests")
    doc = json.loads(invoke("..", "--format", "json").output)
    assert [f["path"] for f in doc["findings"]] == ["../train.py"]


@pytest.mark.parametrize("body,words", [
    ('selct = ["TS001"]', ["unknown key 'selct'", "did you mean 'select'"]),
    ('select = ["TS00X"]', ["select", "unknown rule code 'TS00X'"]),
    ('gpu = "rtx309"', ["gpu", "RTX 3090"]),
    ("select = [", ["invalid TOML"]),
])
def test_config_errors_exit_2_naming_key_and_file(work, body, words):
    (work / "pyproject.toml").write_text("[tool.lintlora]\n" + body + "\n")
    result = CliRunner().invoke(app, ["train.py"])
    assert result.exit_code == 2
    assert "pyproject.toml" in result.output
    for word in words:
        assert word in result.output


def test_explicit_config_file(work):
    (work / "custom.toml").write_text('[tool.lintlora]\nselect = ["TS002"]\n')
    out = invoke("train.py", "--config", "custom.toml").output
    assert "TS002" in out and "TS001" not in out


# ---- rules, explain, estimate -----------------------------------------------------------------

def test_rules_lists_codes_names_severities(work):
    result = invoke("rules")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.split()[:3] == ["TS001", "bad-call", "warning"] for line in lines)
    assert any(line.startswith("LL900") for line in lines)
    doc = json.loads(invoke("rules", "--format", "json").output)
    assert {"code": "TS002", "name": "gc-off", "severity": "error", "fix": "none", "fixes": {},
            "summary": "Checkpointing off", "help_uri": None, "origin": "plugin (engine_stubs)"} in doc  # not lintlora's: a plugin
    assert doc[[r["code"] for r in doc].index("LL000")]["origin"] == "built-in"


def test_explain_prints_the_page_or_the_docstring(work):
    result = invoke("explain", "ll001")
    if os.path.exists(os.path.join(REPO, "rules", "LL001.md")):
        assert result.exit_code == 0
        with open(os.path.join(REPO, "rules", "LL001.md"), encoding="utf-8") as handle:
            assert result.output.strip() == handle.read().strip()
    result = invoke("explain", "TS001")  # no page: metadata and docstring
    assert result.exit_code == 0 and "TS001 bad-call" in result.output
    assert "Reports every" in result.output
    assert invoke("explain", "bad-call").output == result.output  # by name too
    result = CliRunner().invoke(app, ["explain", "TS0001"])
    assert result.exit_code == 2 and "did you mean" in result.output


@pytest.mark.parametrize("code,title", [("LL998", "input-error"), ("ll999", "internal-error")])
def test_explain_the_diagnostics_the_readme_documents(work, code, title):
    """LL998 and LL999 are no rules, but they have pages, shipped like the rules' pages."""
    result = invoke("explain", code)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"# {code.upper()} {title}\n")
    assert "## How to fix" in result.output
    result = CliRunner().invoke(app, ["explain", "LL997"])
    assert result.exit_code == 2 and "LL998" in result.output  # suggested


def test_estimate_registered_when_available(work):
    from lintlora.cli_app import _estimate_available

    result = invoke("--help")
    assert result.exit_code == 0
    assert "Usage: lintlora [OPTIONS] PATH..." in result.output
    assert "--gpu NAME" in result.output and "rules" in result.output
    assert ("estimate" in result.output.split("Commands:")[1]) == _estimate_available()


def test_usage_errors_show_the_command_as_typed(work):
    """Without the word ``check`` typed, a usage error's lines leave it out too."""
    def run(*args):
        return CliRunner().invoke(app, list(args), prog_name="lintlora")

    implicit = run("--gpu-memory", "0", "train.py")
    assert implicit.exit_code == 2
    assert "Usage: lintlora [OPTIONS] PATH...\n" in implicit.output
    assert "Try 'lintlora --help' for help." in implicit.output
    assert "lintlora check" not in implicit.output
    assert "Usage: lintlora [OPTIONS] PATH..." in run("train.py", "--no-such-option").output
    # typed: the usage says check, as typed
    explicit = run("check", "--gpu-memory", "0", "train.py")
    assert explicit.exit_code == 2 and "Usage: lintlora check [OPTIONS] PATH..." in explicit.output
    # the help of the default command reads the same way
    assert run("train.py", "-h").output.startswith("Usage: lintlora [OPTIONS] PATH...")


def test_version(work):
    assert invoke("--version").output == f"lintlora {__version__}\n"
    assert invoke("train.py", "--version").output == f"lintlora {__version__}\n"


def test_parse_count():
    assert parse_count("7B") == 7e9
    assert parse_count("1.5b") == 1.5e9
    assert parse_count("500M") == 5e8
    assert parse_count("7e9") == 7e9
    with pytest.raises(ValueError):
        parse_count("7X")


# ---- --diff-only --------------------------------------------------------------------------------

def _git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_diff_only_reports_changed_lines(work):
    _git(work, "init", "-q", "-b", "main")
    (work / "old.py").write_text("bad()\nx = 1\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "base")
    _git(work, "checkout", "-q", "-b", "feature")
    (work / "old.py").write_text("bad()\nx = 1\nbad()\n")  # line 3 is new
    _git(work, "commit", "-q", "-am", "feature")
    (work / "old.py").write_text("bad()\nx = 1\nbad()\nbad()\n")  # line 4 uncommitted
    (work / "new.py").write_text("bad()\n")  # untracked: whole file
    (work / "space name.py").write_text("bad()\n")
    doc = json.loads(invoke("old.py", "new.py", "train.py", "space name.py", "--select", "TS001",
                            "--format", "json", "--diff-only", "main").output)
    got = sorted((f["path"], f["line"]) for f in doc["findings"])
    # train.py was committed on main and is unchanged: none of its findings show
    assert got == [("new.py", 1), ("old.py", 3), ("old.py", 4), ("space name.py", 1)]
    # committed work only: nothing changed since HEAD in old.py's committed lines
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "all")
    result = invoke("old.py", "train.py", "--select", "TS001", "--changed-since", "HEAD")
    assert result.exit_code == 0


def test_diff_only_keeps_a_finding_about_a_changed_config_as_a_whole(tmp_path):
    """A YAML finding anchored at the config's top (the key it is about is absent) has no line
    a diff could touch: it counts when the config changed at all (a larger micro_batch_size
    makes a missing checkpointing switch an error), never for an unchanged one, and only for
    configs (a point anchor in a script is an ordinary location)."""
    from lintlora.engine import RunResult
    from lintlora.findings import Finding, Severity
    from lintlora.gitdiff import filter_result
    from lintlora.training_setup import Span

    cfg, other, script = (str(tmp_path / n) for n in ("cfg.yml", "same.yml", "t.py"))
    def finding(span):
        return Finding("LL001", "gradient-checkpointing-off", Severity.ERROR, span, "m")
    whole, at_key = finding(Span(cfg, 1, 1)), finding(Span(cfg, 5, 3, 5, 8))
    result = RunResult(files=[cfg, other, script],
                       findings=[whole, at_key, finding(Span(other, 1, 1)),
                                 finding(Span(script, 1, 1))])
    changed = {os.path.realpath(cfg): {9}, os.path.realpath(script): {4}}
    assert filter_result(result, changed).findings == [whole]


def test_diff_only_pure_deletion_marks_neighbours(work):
    """A pure deletion marks the lines on either side; added lines are marked themselves.
    (Until issue 12 this parsed ``git diff -U0`` output; the lines are now computed from the
    base blob and the file's bytes, :mod:`lintlora.linediff`, with the same meaning.)"""
    from lintlora.linediff import changed_new_lines

    old = "".join(f"line {n}\n" for n in range(1, 12)).encode()
    lines = old.decode().splitlines(keepends=True)
    del lines[2]                                   # old line 3 removed: after new line 2
    lines[8:10] = ["x\n", "y\n", "z\n"]            # old lines 10-11 replaced by three
    assert changed_new_lines(old, "".join(lines).encode()) == {2, 3, 9, 10, 11}
    assert changed_new_lines("é\n".encode(), "e\n".encode()) == {1}


def test_diff_only_bad_ref_and_not_a_repo(work):
    result = CliRunner().invoke(app, ["train.py", "--diff-only", "main"])
    assert result.exit_code == 2 and "--diff-only" in result.output
    _git(work, "init", "-q")
    result = CliRunner().invoke(app, ["train.py", "--diff-only", "no-such-ref"])
    assert result.exit_code == 2 and "unknown git ref" in result.output


def test_diff_only_compares_only_the_working_directory_s_repository(work, monkeypatch):
    """git runs only in the repository lintlora is started in (issue 12: never in a linted
    file's own folder, which may be a folder that git takes for a repository). From outside
    any repository that is a usage error; a file of another repository is one too, naming it.
    (Until issue 12 each file was compared in its own repository.)"""
    repos = []
    for name in ("one", "two"):
        repo = work / name
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        (repo / "t.py").write_text("bad()\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "base")
        (repo / "t.py").write_text("bad()\nbad()\n")  # line 2 is new
        repos.append(repo)
    outside = work / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)  # not a repository
    (outside / "loose.py").write_text("bad()\n")
    for paths in (["loose.py"], [str(repos[0] / "t.py")]):
        result = CliRunner().invoke(app, [*paths, "--diff-only", "main"])
        assert result.exit_code == 2 and "elsewhere is not in a git repository" in result.output
    monkeypatch.chdir(repos[0])
    result = invoke("t.py", "--select", "TS001", "--format", "json", "--diff-only", "main")
    assert [(f["path"], f["line"]) for f in json.loads(result.output)["findings"]] == \
        [("t.py", 2)]
    result = CliRunner().invoke(app, ["t.py", str(repos[1]), "--diff-only", "main"])
    assert result.exit_code == 2
    assert f"{repos[1] / 't.py'} is outside the git repository at" in result.output


# ---- start-up ----------------------------------------------------------------------------------

def test_version_imports_nothing_heavy():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "lintlora", "--version"],
                          capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert done.stdout == f"lintlora {__version__}\n"
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    for heavy in ("libcst", "rich", "yaml", "click", "lintlora.rules", "lintlora.extract",
                  "lintlora.estimate", "lintlora.engine"):
        assert heavy not in imported, heavy


def test_estimate_command_runs_through_the_main_app(work):
    from lintlora.cli_app import _estimate_available

    if not _estimate_available():
        pytest.skip("lintlora.estimate.command not present")
    result = invoke("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--method", "qlora",
                    "--batch-size", "1", "--seq-len", "512", "--gpu", "rtx3090",
                    "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["estimate"]["device_bytes"] > doc["estimate"]["allocated_bytes"] > 0


def test_unexpected_error_is_reported_without_a_traceback(work, monkeypatch, capsys):
    import lintlora.report
    from lintlora.cli import main

    def broken_render(*args, **kwargs):
        raise RuntimeError("reporter bug")

    monkeypatch.setattr(lintlora.report, "render", broken_render)
    assert main(["train.py"]) == 2
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: reporter bug" in err and "Traceback" not in err


def test_exclude_option_and_unwritable_output(work):
    (work / "legacy").mkdir()
    (work / "legacy" / "old.py").write_text("bad()\n")
    doc = json.loads(invoke(".", "--exclude", "legacy", "--exclude", "train.py",
                            "--format", "json").output)
    assert doc["findings"] == [] and doc["files"] == ["clean.py"]
    result = CliRunner().invoke(app, ["train.py", "-o", str(work / "no" / "such" / "dir.json")])
    assert result.exit_code == 2 and "cannot write" in result.output
