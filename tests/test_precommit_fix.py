"""The ``lintlora-fix`` pre-commit hook with lintlora's own rules, for real (issue 17): a
temporary git repository, ``pre-commit install``, a commit of a config with a safe fix. The
hook fixes the file and fails the commit (pre-commit fails a hook that modifies files); the
fix staged, the next commit passes.

As in tests/test_precommit.py, the hook definition is read from this checkout's
``.pre-commit-hooks.yaml`` and run as a ``repo: local`` hook with ``language: system`` under
the test's Python, so nothing is fetched (tests/test_cli_fix.py runs the same hook with test
rules).
"""

from __future__ import annotations

import os
import subprocess
import sys

from test_precommit import BAD_CONFIG, _manifest_hook

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIXED_CONFIG = BAD_CONFIG.replace("gradient_checkpointing: false",
                                  "gradient_checkpointing: true\n"
                                  "gradient_checkpointing_kwargs:\n"
                                  "  use_reentrant: false")


def test_the_fix_hook_fixes_and_fails_then_the_next_commit_passes(tmp_path):
    import yaml

    hook = _manifest_hook("lintlora-fix")
    program, *entry_args = hook["entry"].split()
    assert program == "lintlora" and "--fix" in entry_args
    local = {"id": hook["id"], "name": hook["name"],
             "entry": " ".join([sys.executable, "-m", "lintlora", *entry_args, "--no-cache"]),
             "language": "system", "types_or": hook["types_or"],
             "pass_filenames": hook["pass_filenames"], "require_serial": hook["require_serial"]}
    work = tmp_path / "project"
    work.mkdir()
    (work / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False))
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-cache"),
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    env.pop("PRE_COMMIT", None)

    def run(*args, check=True):
        done = subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=300)
        if check and done.returncode != 0:
            raise AssertionError(f"{args} failed:\n{done.stdout}\n{done.stderr}")
        return done

    run("git", "init", "-q")
    run(sys.executable, "-m", "pre_commit", "install")
    run("git", "add", ".pre-commit-config.yaml")
    run("git", "commit", "-q", "-m", "pre-commit config")

    (work / "axolotl.yml").write_text(BAD_CONFIG)
    run("git", "add", "axolotl.yml")
    done = run("git", "commit", "-m", "bad", check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "files were modified by this hook" in output and "Failed" in output
    assert (work / "axolotl.yml").read_text() == FIXED_CONFIG
    assert "Fixed 1 problem; 0 remaining" in output

    run("git", "add", "axolotl.yml")
    done = run("git", "commit", "-m", "fixed", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout + done.stderr
    log = run("git", "log", "--format=%s").stdout.split()
    assert log[0] == "fixed"
