"""Issue 12, items 1-2: ``--diff-only`` never runs what the linted repository configures.

Each test builds a real git repository in ``tmp_path`` whose configuration would run a command
(``core.fsmonitor``, a diff ``textconv`` driver, a ``clean`` filter, a committed folder that git
takes for a repository, a hostile ``GIT_DIR``/``GIT_CONFIG_PARAMETERS``, a committed ``git``
program). Each command would create a marker file; the tests assert that none exists and that
the findings are those of the same repository without the hostile part (the benign twin). The
repositories differ from their base commit at line 36 of ``train.py`` (checkpointing switched
off: LL001 there), while LL002's line 62 is unchanged, so "the same findings" is one LL001.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from lintlora.cli_app import app

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(REPO, "fixtures", "examples", "qlora_trainer.py"), encoding="utf-8") as f:
    NOW = f.read()
BASE = NOW.replace("use_gradient_checkpointing=False", "use_gradient_checkpointing=True")
assert BASE != NOW


def _git_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    env.update(extra)
    return env


def git(cwd, *args):
    """The tests' own git (set-up only; never hardened, never the code under test)."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          env=_git_env()).stdout.decode()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    """No GIT_* of the developer's, and an empty home: the user's global config is not read."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


def make_repo(root, folder="", commit_extra=None):
    """A repository at ``root`` with ``<folder>/train.py`` committed as BASE and now NOW."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    target = root / folder / "train.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(BASE)
    (root / "other.py").write_text(NOW)  # committed as is: its findings never show
    if commit_extra:
        commit_extra(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    target.write_text(NOW)
    return target


def lint(cwd, *paths, ref="HEAD"):
    """lintlora's JSON findings as (path relative to cwd, line, code), and the result."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, [*paths, "--no-cache", "--format", "json",
                                          "--diff-only", ref])
    finally:
        os.chdir(old)
    if result.exit_code not in (0, 1):
        return None, result
    doc = json.loads(result.output)
    return sorted((f["path"], f["line"], f["code"]) for f in doc["findings"]), result


def benign(tmp_path, folder=""):
    target = make_repo(tmp_path / "benign", folder)
    found, result = lint(tmp_path / "benign", os.path.relpath(target, tmp_path / "benign"),
                         "other.py")
    assert found == [(os.path.join(folder, "train.py"), 36, "LL001")], result.output
    return found


def marker_command(marker):
    return f"touch {shlex.quote(str(marker))}; false"


# ---- hostile repository configuration -----------------------------------------------------------

def test_core_fsmonitor_in_git_config_does_not_run(tmp_path):
    expected = benign(tmp_path)
    marker = tmp_path / "PWNED"
    make_repo(tmp_path / "r")
    git(tmp_path / "r", "config", "core.fsmonitor", marker_command(marker))
    found, result = lint(tmp_path / "r", "train.py", "other.py")
    assert not marker.exists()
    assert found == expected, result.output


@pytest.mark.parametrize("where", ["committed .gitattributes", ".git/info/attributes"])
@pytest.mark.parametrize("driver", ["diff textconv", "clean filter", "filter process"])
def test_textconv_and_filters_do_not_run(tmp_path, where, driver):
    expected = benign(tmp_path)
    marker = tmp_path / "PWNED"
    command = f"touch {shlex.quote(str(marker))}; cat"
    attribute = {"diff textconv": "diff=x", "clean filter": "filter=x",
                 "filter process": "filter=x"}[driver]

    def attributes(root):
        if where == "committed .gitattributes":
            (root / ".gitattributes").write_text(f"*.py {attribute}\n")

    root = tmp_path / "r"
    make_repo(root, commit_extra=attributes)
    if where == ".git/info/attributes":
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "attributes").write_text(f"*.py {attribute}\n")
    key = {"diff textconv": "diff.x.textconv", "clean filter": "filter.x.clean",
           "filter process": "filter.x.process"}[driver]
    git(root, "config", key, command if driver != "filter process" else marker_command(marker))
    # the index is stat-clean after `git add`; a later touch makes git re-read the file
    os.utime(root / "other.py", (time.time() + 5, time.time() + 5))
    found, result = lint(root, "train.py", "other.py")
    assert not marker.exists()
    assert found == expected, result.output


def _fake_repository(folder, marker):
    """Commit-able files that make ``folder`` look like a repository to git: a copy of a real
    ``.git`` layout (HEAD, objects, refs, index) whose config runs ``marker``'s command."""
    scratch = folder.parent / (folder.name + "-scratch")
    scratch.mkdir()
    git(scratch, "init", "-q", "-b", "main")
    (scratch / "train.py").write_text(NOW)  # "unchanged", says the fake
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "fake")
    shutil.rmtree(scratch / ".git" / "hooks")
    shutil.copytree(scratch / ".git", folder, dirs_exist_ok=True)
    shutil.rmtree(scratch)
    config = folder / "config"
    for key, value in (("core.bare", "false"), ("core.worktree", "."),
                       ("core.fsmonitor", marker_command(marker))):
        subprocess.run(["git", "config", "-f", str(config), key, value], check=True,
                       env=_git_env())


def test_committed_fake_repository_folder_is_an_ordinary_folder(tmp_path):
    """The README's CI step lints the PR's files from the checkout's top; a file inside a
    committed copy of a .git layout is compared in the checkout's repository, not the fake."""
    expected = benign(tmp_path, folder="evil")
    marker = tmp_path / "PWNED"
    make_repo(tmp_path / "r", folder="evil",
              commit_extra=lambda root: _fake_repository(root / "evil", marker))
    assert "evil/HEAD" in git(tmp_path / "r", "ls-files")  # committed, as a PR would
    found, result = lint(tmp_path / "r", "evil/train.py", "other.py")
    assert not marker.exists()
    assert found == expected, result.output
    # and as the README's workflow runs it: a real process, the changed files from xargs
    done = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--format", "json",
                           "--diff-only", "HEAD", "evil/train.py"], cwd=tmp_path / "r",
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert not marker.exists()
    assert [(f["path"], f["line"]) for f in json.loads(done.stdout)["findings"]] == \
        [("evil/train.py", 36)], done.stderr


def test_started_inside_a_fake_repository_folder_is_refused(tmp_path):
    marker = tmp_path / "PWNED"
    make_repo(tmp_path / "r", folder="evil",
              commit_extra=lambda root: _fake_repository(root / "evil", marker))
    found, result = lint(tmp_path / "r" / "evil", "train.py")
    assert not marker.exists()
    assert found is None and result.exit_code == 2
    assert "--diff-only" in result.output and "repository" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"])
def test_hostile_git_environment_is_not_inherited(tmp_path, monkeypatch, variable):
    expected = benign(tmp_path)
    marker = tmp_path / "PWNED"
    root = tmp_path / "r"
    make_repo(root)
    if variable == "GIT_DIR":
        hostile = tmp_path / "hostile.git"
        shutil.copytree(root / ".git", hostile)
        subprocess.run(["git", "config", "-f", str(hostile / "config"), "core.fsmonitor",
                        marker_command(marker)], check=True, env=_git_env())
        monkeypatch.setenv("GIT_DIR", str(hostile))
        monkeypatch.setenv("GIT_WORK_TREE", str(root))
    elif variable == "GIT_CONFIG_PARAMETERS":
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS",
                           shlex.quote("core.fsmonitor=" + marker_command(marker)))
    else:
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", marker_command(marker))
    found, result = lint(root, "train.py", "other.py")
    assert not marker.exists()
    assert found == expected, result.output


@pytest.mark.skipif(os.name == "nt", reason="POSIX exec bit and PATH semantics")
def test_a_committed_git_program_is_not_run(tmp_path, monkeypatch):
    """A PR can commit an executable ``git``; a PATH with an empty or relative entry (or a
    venv folder inside the checkout) would run it."""
    expected = benign(tmp_path)
    marker = tmp_path / "PWNED"
    root = tmp_path / "r"

    def program(root):
        fake = root / "git"
        fake.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\nexit 1\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)

    make_repo(root, commit_extra=program)
    real_git = os.path.dirname(shutil.which("git"))
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", real_git, os.environ["PATH"]]))
    found, result = lint(root, "train.py", "other.py")
    assert not marker.exists()
    assert found == expected, result.output
    # an absolute PATH folder inside the project (a venv the workflow created in the checkout)
    monkeypatch.setenv("PATH", os.pathsep.join([str(root), real_git, os.environ["PATH"]]))
    found, result = lint(root, "train.py", "other.py")
    assert not marker.exists()
    assert found is None and "is inside the project; not run" in result.output


# ---- which repository, which files --------------------------------------------------------------

def test_a_file_outside_the_repository_is_a_usage_error(tmp_path):
    make_repo(tmp_path / "r")
    make_repo(tmp_path / "other")
    found, result = lint(tmp_path / "r", "train.py", os.path.join("..", "other", "train.py"))
    assert found is None and result.exit_code == 2
    assert "other/train.py is outside the git repository" in result.output


def test_a_file_of_a_nested_repository_counts_as_wholly_changed(tmp_path):
    """A clone inside the work tree (a folder between holding .git) is another repository:
    git is not asked about it, all its findings show."""
    root = tmp_path / "r"
    make_repo(root)
    nested = root / "vendor"
    make_repo(nested)
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "now")  # unchanged in its own repository
    found, result = lint(root, "train.py", "vendor/train.py")
    assert found == [("train.py", 36, "LL001"), ("vendor/train.py", 36, "LL001"),
                     ("vendor/train.py", 49, "LL019"), ("vendor/train.py", 62, "LL002")], result.output


def test_untracked_files_count_as_changed_unless_ignored(tmp_path):
    root = tmp_path / "r"
    make_repo(root, commit_extra=lambda r: (r / ".gitignore").write_text("ignored.py\n"))
    (root / "new.py").write_text(NOW)
    (root / "ignored.py").write_text(NOW)
    found, result = lint(root, "new.py", "ignored.py")
    assert found == [("new.py", 36, "LL001"), ("new.py", 49, "LL019"), ("new.py", 62, "LL002")], result.output


def test_a_linked_worktree_is_accepted(tmp_path):
    root = tmp_path / "r"
    make_repo(root)
    git(root, "commit", "-q", "-am", "now")
    git(root, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature")
    (tmp_path / "wt" / "train.py").write_text(NOW.replace("fp16=True", "fp16=True "))
    found, result = lint(tmp_path / "wt", "train.py", ref="main")
    assert found == [("train.py", 62, "LL002")], result.output


def test_line_ending_only_changes_are_no_change(tmp_path):
    root = tmp_path / "r"
    make_repo(root)
    git(root, "commit", "-q", "-am", "now")
    (root / "train.py").write_bytes(NOW.replace("\n", "\r\n").encode())
    found, result = lint(root, "train.py")
    assert found == [], result.output


# ---- the hardened runner ------------------------------------------------------------------------

def test_run_git_refuses_commands_that_read_contents_or_run_drivers(tmp_path):
    from lintlora.gitdiff import GitDiffError, run_git

    make_repo(tmp_path / "r")
    for args in (["diff", "HEAD"], ["status"], ["-c", "core.fsmonitor=x", "status"],
                 ["cat-file", "--textconv", "HEAD:train.py"], ["ls-files", "-mz"],
                 ["ls-files", "--modified"], ["show", "HEAD:train.py"]):
        with pytest.raises(GitDiffError, match="does not run"):
            run_git(args, str(tmp_path / "r"))
    assert run_git(["rev-parse", "--show-toplevel"], str(tmp_path / "r")).strip() == \
        os.path.realpath(tmp_path / "r")


def test_run_git_bounds_output_and_reports_failures(tmp_path):
    from lintlora.gitdiff import GitDiffError, run_git

    make_repo(tmp_path / "r")
    with pytest.raises(GitDiffError, match="more than"):
        run_git(["cat-file", "-p", "HEAD:train.py"], str(tmp_path / "r"), max_output=100)
    with pytest.raises(GitDiffError, match="no-such"):
        run_git(["cat-file", "-p", "HEAD:no-such.py"], str(tmp_path / "r"))


def test_is_tracked(tmp_path, monkeypatch):
    from lintlora.gitdiff import is_tracked

    root = tmp_path / "r"
    make_repo(root, folder="evil",
              commit_extra=lambda r: _fake_repository(r / "evil", tmp_path / "PWNED"))
    (root / "untracked.py").write_text("x\n")
    monkeypatch.chdir(root)
    assert is_tracked("other.py") and is_tracked(str(root / "evil" / "train.py"))
    assert is_tracked("evil/HEAD")  # a committed file, whatever git would make of its folder
    assert not is_tracked("untracked.py") and not is_tracked("missing.py")
    assert not is_tracked(str(tmp_path / "elsewhere.py"))
    monkeypatch.chdir(root / "evil")  # a folder git would take for a repository: refused
    assert not is_tracked("train.py")
    monkeypatch.chdir(tmp_path)  # in no repository
    assert not is_tracked(str(root / "other.py"))
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert not is_tracked("other.py")
    assert not (tmp_path / "PWNED").exists()


def _fake_git(folder, body):
    folder.mkdir()
    program = folder / "git"
    program.write_text("#!/bin/sh\n" + body + "\n")
    program.chmod(0o755)


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for git")
def test_run_git_stops_a_hanging_or_flooding_git(tmp_path, monkeypatch):
    from lintlora.gitdiff import GitDiffError, run_git

    (tmp_path / "r").mkdir()
    _fake_git(tmp_path / "slow", f"exec {shutil.which('sleep')} 30")
    monkeypatch.setenv("PATH", str(tmp_path / "slow"))
    started = time.monotonic()
    with pytest.raises(GitDiffError, match="took longer than 0.5 s"):
        run_git(["version"], str(tmp_path / "r"), timeout=0.5)
    assert time.monotonic() - started < 10
    _fake_git(tmp_path / "loud", "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")
    monkeypatch.setenv("PATH", str(tmp_path / "loud"))
    with pytest.raises(GitDiffError, match="more than 1 MiB"):
        run_git(["version"], str(tmp_path / "r"), max_output=2**20)


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for git")
def test_git_gets_a_minimal_environment(tmp_path, monkeypatch):
    from lintlora.gitdiff import run_git

    (tmp_path / "r").mkdir()
    _fake_git(tmp_path / "bin", f"exec {shutil.which('env')}")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), "relative", ""]))
    for name, value in (("GIT_DIR", "/x"), ("GIT_WORK_TREE", "/x"), ("GIT_EXEC_PATH", "/x"),
                        ("GIT_CONFIG_PARAMETERS", "'a.b'='c'"), ("GIT_CONFIG_GLOBAL", "/x"),
                        ("GIT_SSH_COMMAND", "x"), ("PYTHONPATH", "/x"), ("SECRET_TOKEN", "t")):
        monkeypatch.setenv(name, value)
    env = dict(line.split("=", 1) for line in run_git(["version"], str(tmp_path / "r"))
               .splitlines() if "=" in line)
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["PATH"] == str(tmp_path / "bin")  # relative and empty entries dropped
    assert env["HOME"] == os.environ["HOME"]
    assert not {"GIT_DIR", "GIT_WORK_TREE", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS",
                "GIT_CONFIG_GLOBAL", "GIT_SSH_COMMAND", "PYTHONPATH", "SECRET_TOKEN"} & set(env)


# ---- the line comparison ------------------------------------------------------------------------

def test_changed_lines_keep_git_diff_s_meaning():
    from lintlora.linediff import changed_new_lines

    old = b"a\nb\nc\nd\n"
    assert changed_new_lines(old, old) == set()
    assert changed_new_lines(old, b"a\nb\nc\nd\ne\n") == {5}        # appended
    assert changed_new_lines(old, b"a\nB\nc\nd\n") == {2}           # replaced
    assert changed_new_lines(old, b"a\nc\nd\n") == {1, 2}           # deleted after line 1
    assert changed_new_lines(old, b"b\nc\nd\n") == {1}              # deleted at the top
    assert changed_new_lines(old, b"a\r\nb\r\nc\r\nd") == set()     # line endings only
    assert changed_new_lines(b"", b"x\n") == {1}


def _valid(a, b, regions):
    """The regions turn ``a`` into ``b``: between them, equal runs of equal length."""
    pa = pb = 0
    for a_lo, a_hi, b_lo, b_hi in sorted(regions):
        if a[pa:a_lo] != b[pb:b_lo]:
            return False
        pa, pb = a_hi, b_hi
    return a[pa:] == b[pb:]



_lines = st.lists(st.sampled_from([b"x", b"y", b"z", b"w", b"    pass", b""]), max_size=40)


@given(_lines, _lines)
def test_changed_regions_are_a_valid_diff(a, b):
    from lintlora.linediff import changed_regions

    regions = changed_regions(a, b)
    assert _valid(a, b, regions)
    assert (regions == []) == (a == b)


def test_a_five_megabyte_file_is_compared_in_bounded_time():
    """Issue 12: no quadratic time. Measured on the 2-core development machine: 0.3 s for
    ordinary code with a few edits, 0.5 s for 524,288 lines of 40 distinct values with 5,000
    random edits (beyond the bounds: counted as replaced)."""
    import random

    from lintlora.linediff import changed_new_lines, changed_regions, split_lines

    rng = random.Random(12)
    vocab = [b"    x = %d" % i for i in range(40)]
    a = [rng.choice(vocab) for _ in range(5 * 2**20 // 10)]
    b = list(a)
    for _ in range(5000):
        b[rng.randrange(len(b))] = rng.choice(vocab)
    old, new = b"\n".join(a), b"\n".join(b)
    assert len(new) >= 5 * 2**20
    started = time.monotonic()
    lines = changed_new_lines(old, new)
    assert time.monotonic() - started < 30
    assert _valid(a, b, changed_regions(split_lines(old), split_lines(new)))
    assert lines  # the edits show


def test_a_partial_clone_never_fetches_and_counts_the_file_as_changed(tmp_path):
    """A blobless clone (``actions/checkout`` with ``filter: blob:none``) lacks the base blob;
    fetching it would start a transport (``protocol.allow=never``): the file counts as
    wholly changed, the run still succeeds."""
    source = tmp_path / "source"
    make_repo(source)
    git(source, "config", "uploadpack.allowFilter", "true")
    git(source, "commit", "-q", "-am", "now")
    git(tmp_path, "clone", "-q", "--filter=blob:none", source.as_uri(), "clone")
    found, result = lint(tmp_path / "clone", "train.py", ref="HEAD~1")
    assert found == [("train.py", 36, "LL001"), ("train.py", 49, "LL019"), ("train.py", 62, "LL002")], result.output


@pytest.mark.parametrize("ref", ["--output=x", "-h", "HEAD\nmain", "HEAD:train.py"])
def test_option_shaped_or_odd_refs_are_unknown(tmp_path, ref):
    make_repo(tmp_path / "r")
    found, result = lint(tmp_path / "r", "train.py", ref=ref)
    assert found is None and result.exit_code == 2
    assert "unknown git ref" in result.output or "requires an argument" in result.output
    assert not (tmp_path / "r" / "x").exists()
