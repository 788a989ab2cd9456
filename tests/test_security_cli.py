"""The command line at the trust boundary (issue 12, items 3, 10 and 12).

- Item 3: an argument that names an existing file is a path, never an option (pre-commit and
  ``xargs`` append file names with no ``--``), and ``-o`` never overwrites a linted input or a
  file git tracks without ``--force``. Real pre-commit runs of the same: test_precommit.py.
- Item 10: every number an option or ``[tool.lintlora]`` key takes is bounded; out of range, it
  is a usage error naming the option (or the file and key), exit 2, never "internal error".
- Item 12: a closed or full standard output, ``-o /dev/full``, ``-o`` to a named pipe or a
  device, and a reader that goes away (``| head -1``) each end with a message (or, for the
  pipe, quietly) and a defined exit status, never a traceback or a hang.

The hostile inputs are generated in ``tmp_path``. Runs go through a real ``python -m lintlora``
where the process's own descriptors matter, and through click's runner elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from lintlora.cli_app import app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from test_precommit import BAD_CONFIG  # noqa: E402 - the axolotl config the hook tests lint
"""An axolotl config with one finding (LL001, a warning): the run's exit status is 1."""

CLEAN_CONFIG = BAD_CONFIG.replace("gradient_checkpointing: false", "gradient_checkpointing: true")

HUGE = "9" * 400
"""A 400-digit number: beyond float range, and slow to convert if nothing bounds it."""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")])
    env.pop("LINTLORA_DEBUG", None)
    env.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return env


def lintlora(*args: str, cwd, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """``python -m lintlora ARGS`` in ``cwd``; stdout and stderr captured as text."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=_env(),
                          text=True, timeout=timeout, **kwargs)


def shell(command: str, *args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    """``sh -c COMMAND`` with ``$LINTLORA`` = this Python's ``-m lintlora`` (for redirections
    such as ``>&-`` that subprocess cannot express)."""
    env = _env()
    env["PYTHON"] = sys.executable
    return subprocess.run(["sh", "-c", command, "sh", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)


def no_crash(output: str) -> None:
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    assert "LL999" not in output, output


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "axolotl.yml").write_text(BAD_CONFIG)
    return tmp_path


def _git(work, *args):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", *args], cwd=work, env=_env(), check=True, capture_output=True)


# ---- item 3: the argv rule, as a function -----------------------------------------------------
# (lintlora.argv is new: on the code before this branch these fail to import)

ARITY = {"-o": 1, "--output": 1, "--gpu": 1, "--exclude": 1, "--fail-on": 1, "-j": 1,
         "--jobs": 1, "-h": 0, "--help": 0, "-V": 0, "--no-cache": 0, "--paths-last": 0,
         "--pair": 2}


@pytest.mark.parametrize("args,existing,expected,shadowing", [
    # an option's value stays a value, even when it names a file
    (["--gpu", "t4", "a.py"], {"t4", "a.py"}, ["--gpu", "t4", "--", "a.py"], []),
    # an option-shaped argument naming a file is a path
    (["--exclude=*.py", "a.py"], {"--exclude=*.py", "a.py"}, ["--", "--exclude=*.py", "a.py"],
     ["--exclude=*.py"]),
    (["a.py", "--output=ci.yml"], {"a.py", "--output=ci.yml"}, ["--", "a.py", "--output=ci.yml"],
     ["--output=ci.yml"]),
    # ... and one that names nothing is an option (click reports it if unknown)
    (["--exclude=*.py", "a.py"], {"a.py"}, ["--exclude=*.py", "--", "a.py"], []),
    (["--bogus", "a.py"], {"a.py"}, ["--bogus", "--", "a.py"], []),
    # values of short options: separate, attached, at the end of a cluster
    (["-o", "--x", "a.py"], {"--x", "a.py"}, ["-o", "--x", "--", "a.py"], []),
    (["-j4", "-x.py"], {"-x.py"}, ["-j4", "--", "-x.py"], ["-x.py"]),
    (["-ho", "-r.txt"], {"-r.txt"}, ["-ho", "-r.txt"], []),
    (["-oj", "-r.txt"], {"-r.txt"}, ["-oj", "--", "-r.txt"], ["-r.txt"]),
    # an option taking two values takes both
    (["--pair", "-a", "-b", "-c"], {"-a", "-b", "-c"}, ["--pair", "-a", "-b", "--", "-c"], ["-c"]),
    # `--` ends the options; `-` alone is a path, as for click
    (["--", "-a.py", "--gpu"], set(), ["--", "-a.py", "--gpu"], []),
    (["-", "a.py"], {"a.py"}, ["--", "-", "a.py"], []),
    (["--", "b.py"], {"--", "b.py"}, ["--", "b.py"], []),
    # paths-last: from the first path on, everything is a path
    (["--paths-last", "--fail-on", "warning", "a.py", "--gpu", "t4"], {"a.py"},
     ["--paths-last", "--fail-on", "warning", "--", "a.py", "--gpu", "t4"], []),
    (["--paths-last", "--", "b.py"], {"--", "b.py"}, ["--paths-last", "--", "--", "b.py"], []),
    (["--paths-last", "--x.py", "--no-cache"], {"--x.py"},
     ["--paths-last", "--", "--x.py", "--no-cache"], ["--x.py"]),
    # no paths: the options unchanged
    (["--gpu", "t4"], set(), ["--gpu", "t4"], []),
])
def test_separate_paths(args, existing, expected, shadowing):
    from lintlora.argv import separate_paths

    result = separate_paths(args, ARITY, exists=existing.__contains__,
                            paths_last_flag="--paths-last")
    assert result.args == expected
    assert result.shadowing == shadowing


def test_separate_paths_never_looks_up_an_options_value():
    from lintlora.argv import separate_paths

    looked_up = []

    def exists(arg):
        looked_up.append(arg)
        return False

    separate_paths(["-o", "-v1", "--gpu", "-v2", "-j", "-v3", "--exclude=-v4", "-x"], ARITY,
                   exists=exists)
    assert looked_up == ["-o", "--gpu", "-j", "--exclude=-v4", "-x"]


def test_option_arity_of_the_check_command():
    from lintlora.argv import option_arity
    from lintlora.cli_app import check

    arity = option_arity(check)
    assert arity["-o"] == arity["--output"] == 1
    assert arity["-j"] == arity["--diff-only"] == arity["--changed-since"] == 1
    assert arity["--no-cache"] == arity["--color"] == arity["--no-color"] == 0
    assert arity["-h"] == arity["--force"] == arity["--paths-last"] == 0


# ---- item 3: file names that look like options ----------------------------------------------

def test_a_file_named_like_exclude_is_linted_not_read_as_the_option(work):
    (work / "--exclude=*.yml").write_text("{}\n")
    done = lintlora("--fail-on", "warning", "--exclude=*.yml", "axolotl.yml", "--no-cache",
                    cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "axolotl.yml:11:25 LL001" in done.stdout
    assert "'--exclude=*.yml' names an existing file" in done.stderr


def test_a_file_named_like_output_overwrites_nothing(work):
    workflow = work / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\n")
    hostile = work / "--output=.github" / "workflows" / "ci.yml"
    hostile.parent.mkdir(parents=True)
    hostile.write_text("name: decoy\n")
    done = lintlora("axolotl.yml", "--output=.github/workflows/ci.yml", "--no-cache", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "axolotl.yml:11:25 LL001" in done.stdout
    assert workflow.read_text() == "on: push\n"
    assert hostile.read_text() == "name: decoy\n"


@pytest.mark.parametrize("name", ["--version", "--help", "-h"])
def test_a_folder_named_like_a_group_option_is_linted(work, name):
    """``lintlora --version`` with a folder of that name (pre-commit passes names as they are)
    lints the folder instead of printing the version and passing."""
    folder = work / name
    folder.mkdir()
    (work / "axolotl.yml").rename(folder / "axolotl.yml")
    done = lintlora(name, "--no-cache", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "LL001" in done.stdout


def test_dash_dash_ends_the_options(work):
    """A guard (click honoured ``--`` before): the rule must not break it."""
    (work / "-x.yml").write_text(BAD_CONFIG)
    done = lintlora("--no-cache", "--", "-x.yml", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "-x.yml:11:25 LL001" in done.stdout
    assert "names an existing file" not in done.stderr  # nothing ambiguous after --


# ---- item 3: -o never overwrites an input or a tracked file ---------------------------------

def test_output_refuses_a_linted_input(work):
    done = lintlora("axolotl.yml", "-o", "axolotl.yml", "--no-cache", cwd=work)
    assert done.returncode == 2
    assert "axolotl.yml" in done.stderr and "--force" in done.stderr
    no_crash(done.stderr)
    assert (work / "axolotl.yml").read_text() == BAD_CONFIG


def test_output_refuses_a_link_to_an_input_and_a_file_found_in_a_folder(work):
    (work / "report.txt").symlink_to("axolotl.yml")
    done = lintlora("axolotl.yml", "-o", "report.txt", "--no-cache", cwd=work)
    assert done.returncode == 2 and "report.txt" in done.stderr, done.stderr
    assert (work / "axolotl.yml").read_text() == BAD_CONFIG
    # a file the walk of a folder finds (not named on the command line) is an input too
    (work / "sub").mkdir()
    (work / "sub" / "train.yml").write_text(BAD_CONFIG)
    done = lintlora(".", "-o", "sub/train.yml", "--no-cache", cwd=work)
    assert done.returncode == 2 and "sub/train.yml" in done.stderr, done.stderr
    assert (work / "sub" / "train.yml").read_text() == BAD_CONFIG


def test_output_never_creates_a_file_through_a_dangling_link(work, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "planted.sh"
    (work / "report.txt").symlink_to(outside)
    done = lintlora("axolotl.yml", "-o", "report.txt", "--no-cache", cwd=work)
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stderr
    no_crash(done.stderr)
    assert not outside.exists()


def test_output_refuses_a_file_git_tracks_unless_forced(work):
    _git(work, "init", "-q")
    (work / "notes.md").write_text("# notes\n")
    _git(work, "add", "notes.md")
    _git(work, "commit", "-q", "-m", "notes")
    done = lintlora("axolotl.yml", "-o", "notes.md", "--no-cache", cwd=work)
    assert done.returncode == 2
    assert "notes.md" in done.stderr and "tracked by git" in done.stderr
    assert (work / "notes.md").read_text() == "# notes\n"
    # a committed symbolic link where CI writes its report leads to a tracked file: refused
    (work / "report.sarif").symlink_to("notes.md")
    _git(work, "add", "report.sarif")
    done = lintlora("axolotl.yml", "-o", "report.sarif", "--format", "sarif", "--no-cache",
                    cwd=work)
    assert done.returncode == 2 and "report.sarif" in done.stderr, done.stderr
    assert (work / "notes.md").read_text() == "# notes\n"
    # --force: the user means it
    done = lintlora("axolotl.yml", "-o", "notes.md", "--force", "--no-cache", cwd=work)
    assert done.returncode == 1, done.stderr
    assert "LL001" in (work / "notes.md").read_text()


def test_output_writes_new_and_untracked_files(work):
    """A guard (as before this branch): the guard refuses only inputs and tracked files."""
    (work / "old.json").write_text("stale")
    for name in ("new.json", "old.json"):
        done = lintlora("axolotl.yml", "-o", name, "--format", "json", "--no-cache", cwd=work)
        assert done.returncode == 1, done.stderr
        assert [f["code"] for f in json.loads((work / name).read_text())["findings"]] == ["LL001"]


# ---- item 12: where -o may write ---------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_output_to_a_named_pipe_without_reader_is_refused_at_once(work):
    os.mkfifo(work / "pipe")
    try:
        done = lintlora("axolotl.yml", "-o", "pipe", "--no-cache", cwd=work, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("lintlora -o FIFO waited for a reader")
    assert done.returncode == 2
    assert "pipe" in done.stderr and "named pipe" in done.stderr
    no_crash(done.stderr)


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero"])
def test_output_to_a_device_is_refused(work, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    done = lintlora("axolotl.yml", "-o", device, "--no-cache", cwd=work)
    assert done.returncode == 2
    assert device in done.stderr and "device" in done.stderr
    no_crash(done.stderr)


def test_output_to_dev_null_and_dev_stdout(work):
    """A guard (these worked before): the targets -o accepts besides regular files."""
    done = lintlora("axolotl.yml", "-o", os.devnull, "--no-cache", cwd=work)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    done = lintlora("axolotl.yml", "-o", "/dev/stdout", "--format", "json", "--no-cache",
                    cwd=work)
    assert done.returncode == 1, done.stderr
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["LL001"]


def test_output_write_failure_is_a_clear_error(work, monkeypatch):
    """A full disk while writing the report (after the target was accepted): a message naming
    the file, exit 2 (in process: the stream's write fails)."""
    import io

    from lintlora import output

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "open_report",
                        lambda path, **_: output.Report(Full(), owned=True))
    result = CliRunner().invoke(app, ["axolotl.yml", "-o", "r.txt", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "cannot write the report to r.txt: No space left on device" in result.output
    no_crash(result.output)


# ---- item 12: standard output closed, full, or gone ------------------------------------------

def test_closed_standard_output(work):
    done = shell('exec "$PYTHON" -m lintlora axolotl.yml --no-cache >&-', cwd=work)
    assert done.returncode == 2
    assert "standard output is closed" in done.stderr
    no_crash(done.stderr)
    # -o does not need it
    done = shell('exec "$PYTHON" -m lintlora axolotl.yml -o r.txt --no-cache >&-', cwd=work)
    assert done.returncode == 1, done.stderr
    assert "LL001" in (work / "r.txt").read_text()
    # nor does a file lintlora opens become the output (descriptor 1 is taken up front)
    done = shell('exec "$PYTHON" -m lintlora rules >&-', cwd=work)
    assert done.returncode == 2 and "closed" in done.stderr
    no_crash(done.stderr)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["axolotl.yml", "--no-cache"], ["rules"],
                                  ["axolotl.yml", "--format", "json", "--no-cache"]])
def test_full_standard_output(work, args):
    with open("/dev/full", "w") as full:
        done = lintlora(*args, cwd=work, stdout=full)
    assert done.returncode == 2
    assert "No space left on device" in done.stderr
    no_crash(done.stderr)


@pytest.mark.parametrize("content,status", [(CLEAN_CONFIG, 0), (BAD_CONFIG, 1)])
def test_a_reader_that_goes_away_is_quiet_and_keeps_the_status(work, content, status):
    """``lintlora ... | head -1``: the pipe closes before the report is written; no message,
    and the exit status is still the lint's (before: always 1, so the clean case failed)."""
    (work / "axolotl.yml").write_text(content)
    proc = subprocess.Popen([sys.executable, "-m", "lintlora", "axolotl.yml", "--no-cache"],
                            cwd=work, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    proc.stdout.close()  # the reader is gone before the first write
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == status
    assert stderr == ""


# ---- item 10: numbers on the command line and in [tool.lintlora] -----------------------------

@pytest.mark.parametrize("option,value", [
    ("--params", "1e400"),        # inf as a float
    ("--params", "1e300"),        # finite, absurd
    ("--params", HUGE),
    ("--tokens", "1e400"),
    ("--tokens", "1e300"),
    ("--gpu-memory", HUGE),
    ("--gpu-memory", "9" * 60),   # short enough to read, far too large
    ("--gpu-memory", "2000TiB"),
    ("--cpus", HUGE),
    ("--cpus", "100000"),
    ("--jobs", HUGE),
    ("-j", "5000"),
    ("--max-file-size", HUGE),
    ("--max-file-size", "2GiB"),
    ("--max-file-size", "9" * 40),
])
def test_check_numbers_out_of_range_are_usage_errors(work, option, value):
    result = CliRunner().invoke(app, ["axolotl.yml", "--no-cache", option, value])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    assert option in result.output
    no_crash(result.output)
    assert HUGE not in result.output  # the number is not repeated whole


MODEL = ["--model", "meta-llama/Llama-2-7b-hf"]


@pytest.mark.parametrize("args,option", [
    (["--params", "1e300"], "--params"),
    (["--params", "1e400"], "--params"),
    (MODEL + ["--tokens", "1e300"], "--tokens"),
    (MODEL + ["--tokens", HUGE], "--tokens"),
    (MODEL + ["--batch-size", HUGE], "--batch-size"),
    (MODEL + ["--batch-size", "2000000"], "--batch-size"),
    (MODEL + ["--seq-len", HUGE], "--seq-len"),
    (MODEL + ["--seq-len", "99999999"], "--seq-len"),
    (MODEL + ["--rank", HUGE], "--rank"),
    (MODEL + ["--rank", "100000"], "--rank"),
    (MODEL + ["--gpu-memory", HUGE], "--gpu-memory"),
    (MODEL + ["--gpu-memory", "9" * 60], "--gpu-memory"),
    (MODEL + ["--dropout", "nan"], "--dropout"),  # NaN passed both bounds: "NaN" in the JSON
    (MODEL + ["--dropout", HUGE], "--dropout"),
])
def test_estimate_numbers_out_of_range_are_usage_errors(work, args, option):
    result = CliRunner().invoke(app, ["estimate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    assert option in result.output
    no_crash(result.output)
    assert HUGE not in result.output


@pytest.mark.parametrize("line,key", [
    (f'gpu-memory = "{HUGE}"', "gpu-memory"),
    (f"gpu-memory = {HUGE}", "gpu-memory"),
    ('gpu-memory = "2000TiB"', "gpu-memory"),
    (f"cpus = {HUGE}", "cpus"),
    ("cpus = 100000", "cpus"),
    (f"max-file-size = {HUGE}", "max-file-size"),
    (f'max-file-size = "{HUGE}"', "max-file-size"),
    ('max-file-size = "2GiB"', "max-file-size"),
])
def test_config_numbers_out_of_range_are_usage_errors(work, line, key):
    (work / "pyproject.toml").write_text(f"[tool.lintlora]\n{line}\n")
    result = CliRunner().invoke(app, ["axolotl.yml", "--no-cache"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    assert "pyproject.toml" in result.output and key in result.output
    no_crash(result.output)
    assert HUGE not in result.output


# a guard: the bounds leave every real value in range
@pytest.mark.parametrize("option,value", [
    ("--params", "2e12"), ("--tokens", "4e13"), ("--gpu-memory", "288GB"), ("--cpus", "8192"),
    ("--jobs", "1024"), ("--max-file-size", "1GiB"),
])
def test_large_but_real_numbers_are_accepted(work, option, value):
    result = CliRunner().invoke(app, ["axolotl.yml", "--no-cache", option, value])
    assert result.exit_code == 1, result.output  # the lint ran: LL001
    no_crash(result.output)


def test_the_bounds_keep_the_estimate_finite(work):
    """At every bound at once, the estimate is still finite numbers (valid JSON): the bounds
    are small enough (a guard for lintlora.limits; the estimator held there before too)."""
    from lintlora.limits import MAX_BATCH_SIZE, MAX_LORA_RANK, MAX_SEQ_LEN, MAX_TOKENS

    result = CliRunner().invoke(app, [
        "estimate", "--params", "1e15", "--batch-size", str(MAX_BATCH_SIZE),
        "--seq-len", str(MAX_SEQ_LEN), "--rank", str(MAX_LORA_RANK), "--gpu-memory", "1024TiB",
        "--tokens", str(MAX_TOKENS), "--gpu", "h100", "--format", "json"])
    # exit status 1: at those bounds it does not fit even 1 PiB (the verdict is the status)
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert (result.exit_code == 1) == (report["verdict"]["state"] == "over")
    assert report["estimate"]["device_bytes"] > 0
