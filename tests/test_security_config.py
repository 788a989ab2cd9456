"""``pyproject.toml`` from the linted repository (issue 12, items 5, 10, 12, 13): read bounded,
parsed once per run, searched only up to the repository's top; bad files are a usage error
(exit 2) naming the file, never an internal error. A "repository" is a folder holding a
``.git`` entry (found without running git). Inputs are generated in ``tmp_path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import lintlora.config as config
from lintlora.cli_app import app
from lintlora.config import ConfigError, SettingsResolver, find_config_file

TRAIN = textwrap.dedent("""\
    from transformers import TrainingArguments
    args = TrainingArguments(output_dir="o", per_device_train_batch_size=4)
""")


def _repo(tmp_path, name="repo"):
    repo = tmp_path / name
    (repo / ".git").mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    return repo


def _lint(*args):
    return CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False)


# ---- item 10: a bad pyproject.toml is a usage error naming the file ------------------------
@pytest.mark.parametrize("where", ["same", "parent"])
def test_a_non_utf8_pyproject_is_a_usage_error(tmp_path, monkeypatch, where):
    repo = _repo(tmp_path)
    folder = repo if where == "parent" else repo / "sub"
    folder.mkdir(exist_ok=True)
    (repo / "sub").mkdir(exist_ok=True)
    (repo / "sub" / "train.py").write_text(TRAIN)
    (folder / "pyproject.toml").write_bytes(b"\xff\xfe[tool.lintlora]\nselect = [\"LL\"]\n")
    monkeypatch.chdir(repo)
    result = _lint("sub/train.py")
    assert result.exit_code == 2
    assert "internal error" not in result.output
    assert str(folder / "pyproject.toml") in result.output and "not UTF-8" in result.output


@pytest.mark.parametrize("text,words", [
    ("[tool.lintlora\nselect = 1\n", ["invalid TOML"]),
    ("a = " + "[" * 50_000 + "]" * 50_000 + "\n", ["invalid TOML", "nested too deeply"]),
])
def test_an_invalid_pyproject_is_a_usage_error(tmp_path, monkeypatch, text, words):
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text(text)
    monkeypatch.chdir(repo)
    result = _lint("train.py")
    assert result.exit_code == 2
    assert "internal error" not in result.output
    for word in words:
        assert word in result.output


# ---- item 12: bounded, and parsed once per run ----------------------------------------------
def test_a_huge_pyproject_is_refused_with_a_clear_error(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    with open(repo / "pyproject.toml", "w") as handle:
        handle.write("[tool.lintlora]\nselect = [\"LL\"]\n# ")
        handle.write("x" * (config.PYPROJECT_MAX_BYTES + 10))
    monkeypatch.chdir(repo)
    result = _lint("train.py")
    assert result.exit_code == 2
    assert "above the 1.0 MiB limit" in result.output and "pyproject.toml" in result.output


def test_each_pyproject_is_parsed_once_per_run(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text("[tool.lintlora]\nignore = [\"LL004\"]\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")  # no table
    for i in range(20):
        (repo / "pkg" / f"d{i}").mkdir()
        (repo / "pkg" / f"d{i}" / "train.py").write_text(TRAIN)
    calls = []
    real = config._load_toml
    monkeypatch.setattr(config, "_load_toml", lambda path: calls.append(path) or real(path))
    resolver = SettingsResolver()
    for i in range(20):
        assert resolver.for_path(str(repo / "pkg" / f"d{i}" / "train.py")).ignore == ("LL004",)
    assert sorted(calls) == sorted({str(repo / "pyproject.toml"),
                                    str(repo / "pkg" / "pyproject.toml")})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_special_file_as_config_is_refused(tmp_path):
    # in a subprocess with a timeout: opening a FIFO for reading used to wait for a writer
    os.mkfifo(tmp_path / "fifo.toml")
    code = ("import sys\nfrom lintlora.config import ConfigError, load_config_file\n"
            "try:\n    load_config_file(sys.argv[1])\nexcept ConfigError as exc:\n"
            "    print(exc)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "fifo.toml")],
                          capture_output=True, text=True, timeout=30, env=env)
    assert "not a regular file (a named pipe)" in done.stdout, done.stderr


# ---- item 13: the search stops at the repository's top -------------------------------------
def test_a_pyproject_above_the_repository_does_not_apply(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.lintlora]\nignore = [\"LL001\"]\n")
    repo = _repo(tmp_path)
    (repo / "sub").mkdir()
    assert find_config_file(str(repo / "sub" / "x.py")) is None
    monkeypatch.chdir(repo)
    result = _lint("--verbose", "train.py")
    assert "LL001" in result.output  # not ignored by the file above the repository
    assert f"searched up to {repo.resolve()}" in result.output
    # the repository's own file applies, and --verbose names it
    (repo / "pyproject.toml").write_text("[tool.lintlora]\nignore = [\"LL001\"]\n")
    assert find_config_file(str(repo / "sub" / "x.py")) == str(repo / "pyproject.toml")
    result = _lint("--verbose", "train.py")
    assert "LL001" not in result.output.replace("configuration", "")
    assert f"configuration: {repo / 'pyproject.toml'}" in result.output


def test_config_path_still_names_any_file(tmp_path, monkeypatch):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "model").mkdir()
    (outside / "model" / "config.json").write_text("{}")
    (outside / "lint.toml").write_text("[tool.lintlora]\nignore = [\"LL001\"]\n"
                                       f"model-config = \"{outside / 'model' / 'config.json'}\"\n")
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    result = _lint("--config", str(outside / "lint.toml"), "train.py")
    assert result.exit_code in (0, 1)
    assert "LL001" not in result.output


def test_a_repository_config_cannot_name_a_model_config_outside_it(tmp_path, monkeypatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text("[tool.lintlora]\nmodel-config = \"../model\"\n")
    monkeypatch.chdir(repo)
    result = _lint("train.py")
    assert result.exit_code == 2
    assert "model-config" in result.output and "not followed: outside the project" in result.output


def test_a_config_outside_any_repository_above_the_current_folder_is_noted(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.lintlora]\nignore = [\"LL001\"]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path / "sub")
    result = _lint("train.py")
    assert f"using the configuration in {tmp_path / 'pyproject.toml'}" in result.output
    monkeypatch.chdir(tmp_path)  # from the folder holding it: the user's own, no note
    assert "using the configuration" not in _lint("sub/train.py").output


def test_a_linked_pyproject_outside_the_repository_is_not_read(tmp_path, monkeypatch):
    (tmp_path / "private.toml").write_text("[tool.lintlora]\ngpu = 'SECRET-VALUE'\n")
    repo = _repo(tmp_path)
    os.symlink(tmp_path / "private.toml", repo / "pyproject.toml")
    monkeypatch.chdir(repo)
    result = _lint("train.py")
    assert result.exit_code == 2
    assert "SECRET-VALUE" not in result.output
    assert "outside the repository" in result.output
