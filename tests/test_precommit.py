"""The pre-commit hook, for real: a temporary git repository, ``pre-commit install``, commits.

The hook definition is read from this checkout's ``.pre-commit-hooks.yaml`` (validated with
pre-commit's own manifest schema) and used as a ``repo: local`` hook with ``language: system``
running this checkout's ``lintlora`` under the test's Python, so the test needs no network (a
``language: python`` hook would make pre-commit build a virtual environment from an index).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BAD_CONFIG = textwrap.dedent("""\
    base_model: mistralai/Mistral-7B-v0.1
    load_in_4bit: true
    adapter: qlora
    lora_r: 16
    lora_target_modules:
      - q_proj
      - v_proj
    sequence_len: 2048
    micro_batch_size: 2
    bf16: true
    gradient_checkpointing: false
""")


def _manifest_hook(hook_id: str = "lintlora") -> dict:
    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(os.path.join(REPO, ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"lintlora", "lintlora-fix"}  # lintlora-fix: issue 17's --fix hook
    return hooks[hook_id]


def test_manifest_is_valid_and_as_documented():
    hook = _manifest_hook()
    # `check`: a file named like a command is linted; --paths-last: from the first file name
    # on, nothing is an option (tests below: file names that look like options)
    assert hook["id"] == "lintlora" and hook["entry"] == "lintlora check --paths-last"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "yaml", "jupyter"]
    assert hook["pass_filenames"] is True
    # one lintlora process for all the files (it parallelises itself), so one summary line
    assert hook["require_serial"] is True
    fixing = _manifest_hook("lintlora-fix")
    assert fixing["entry"] == "lintlora check --fix --paths-last"
    assert {k: v for k, v in fixing.items() if k not in ("id", "name", "entry", "description")} \
        == {k: v for k, v in hook.items() if k not in ("id", "name", "entry", "description")}


@pytest.fixture
def repo(tmp_path, request):
    """A git repository with the hook installed; ``indirect`` parametrization gives the hook's
    ``args`` (as a user's ``.pre-commit-config.yaml`` would)."""
    import yaml

    hook = _manifest_hook()
    program, *entry_args = hook["entry"].split()
    assert program == "lintlora"
    local = {
        "id": hook["id"],
        "name": hook["name"],
        "entry": " ".join([sys.executable, "-m", "lintlora", *entry_args]),
        "language": "system",
        "types_or": hook["types_or"],
        "pass_filenames": hook["pass_filenames"],
        "require_serial": hook["require_serial"],
    }
    args = getattr(request, "param", None)
    if args is not None:
        local["args"] = list(args)
    work = tmp_path / "project"
    work.mkdir()
    (work / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False))
    env = dict(os.environ)
    env.update({
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
        "PYTHONPATH": os.pathsep.join([REPO, env.get("PYTHONPATH", "")]),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    })
    env.pop("PRE_COMMIT", None)

    def run(*args, check=True):
        done = subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError(f"{args} failed:\n{done.stdout}\n{done.stderr}")
        return done

    run("git", "init", "-q")
    run(sys.executable, "-m", "pre_commit", "install")
    run("git", "add", ".pre-commit-config.yaml")
    run("git", "commit", "-q", "-m", "pre-commit config")
    return work, run


def test_bad_config_blocks_the_commit_good_one_passes(repo):
    work, run = repo
    (work / "axolotl.yml").write_text(BAD_CONFIG)
    (work / "ci.yml").write_text("on: push\njobs: {}\n")  # YAML that is no training config
    run("git", "add", "axolotl.yml", "ci.yml")
    done = run("git", "commit", "-m", "bad", check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "lintlora" in output and "Failed" in output
    assert "axolotl.yml:11:25 LL001 gradient-checkpointing-off" in output
    # a YAML file that is no training config, passed along with others, is skipped quietly
    assert "not a training config" not in output

    (work / "axolotl.yml").write_text(BAD_CONFIG.replace("gradient_checkpointing: false",
                                                         "gradient_checkpointing: true"))
    run("git", "add", "axolotl.yml")
    done = run("git", "commit", "-m", "good", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout + done.stderr


def test_one_summary_for_all_the_staged_files(repo):
    """pre-commit runs one lintlora for every file (require_serial): the failed hook's last
    line counts them all, not one batch's ("No problems found; 2 files checked")."""
    work, run = repo
    names = [f"train_{i}.yml" for i in range(6)]
    for i, name in enumerate(names):
        (work / name).write_text(BAD_CONFIG if i == 0 else BAD_CONFIG.replace(
            "gradient_checkpointing: false", "gradient_checkpointing: true"))
    run("git", "add", *names)
    done = run("git", "commit", "-m", "six", check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    summaries = [line for line in output.splitlines()
                 if "files checked" in line or "file checked" in line]
    assert summaries == ["Found 1 problem (1 warning) in 1 file; 6 files checked."], output


def test_no_matching_files_is_clean(repo):
    work, run = repo
    (work / "README.md").write_text("hello\n")
    run("git", "add", "README.md")
    done = run("git", "commit", "-m", "docs", check=False)
    assert done.returncode == 0
    assert "no files to check" in (done.stdout + done.stderr).lower()
    # and the entry itself exits cleanly when given no filenames
    done = run(sys.executable, "-m", "lintlora", check=False)
    assert done.returncode == 0


def test_python_script_blocks_the_commit(repo):
    pytest.importorskip("lintlora.extract.python")
    work, run = repo
    # batch 16: the activations set the peak, so LL001 reports (a full fine-tune of a 7B model
    # at batch 4 peaks at the optimizer step, where checkpointing saves nothing)
    script = textwrap.dedent("""\
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
        args = TrainingArguments(
            output_dir="out",
            per_device_train_batch_size=16,
            gradient_checkpointing=False,
        )
        Trainer(model=model, args=args).train()
    """)
    (work / "train.py").write_text(script)
    run("git", "add", "train.py")
    done = run("git", "commit", "-m", "bad", check=False)
    assert done.returncode != 0
    assert "train.py:7:28 LL001 gradient-checkpointing-off" in done.stdout + done.stderr

    (work / "train.py").write_text(script.replace("gradient_checkpointing=False",
                                                  "gradient_checkpointing=True"))
    run("git", "add", "train.py")
    done = run("git", "commit", "-m", "good", check=False)
    output = done.stdout + done.stderr
    assert "LL001" not in output


# ---- file names that look like options (issue 12, item 3) -----------------------------------
# pre-commit runs `entry + args + file names` with no `--` before the file names.

HOSTILE_OUTPUT = "--output=.github/workflows/ci.yml"
"""A file (in a folder named ``--output=.github``) whose name, read as an option, sends the
report over the repository's CI workflow."""

WORKFLOW = "on: push\njobs: {}\n"


def _commit_workflow(work, run):
    (work / ".github" / "workflows").mkdir(parents=True)
    (work / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW)
    run("git", "add", ".github/workflows/ci.yml")
    run("git", "commit", "-q", "-m", "workflow")


@pytest.mark.parametrize("repo", [["--fail-on", "warning"]], indirect=True)
def test_a_file_named_like_exclude_does_not_switch_the_hook_off(repo):
    """A committed ``--exclude=*.yml`` used to be read as the option: every YAML file was
    excluded, 0 files checked, and the hook passed with the bad config staged."""
    work, run = repo
    (work / "axolotl.yml").write_text(BAD_CONFIG)
    (work / "--exclude=*.yml").write_text("{}\n")
    run("git", "add", "--", "axolotl.yml", "--exclude=*.yml")
    done = run("git", "commit", "-m", "hostile", check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "axolotl.yml:11:25 LL001 gradient-checkpointing-off" in output
    assert "0 files checked" not in output


@pytest.mark.parametrize("repo", [["--fail-on", "warning"]], indirect=True)
def test_a_file_named_like_output_overwrites_nothing(repo):
    """A committed ``--output=.github/workflows/ci.yml`` used to be read as ``-o``: the report
    replaced the repository's workflow file."""
    work, run = repo
    _commit_workflow(work, run)
    hostile = work / HOSTILE_OUTPUT
    hostile.parent.mkdir(parents=True)
    hostile.write_text("name: decoy\n")
    (work / "axolotl.yml").write_text(BAD_CONFIG)
    run("git", "add", "--", HOSTILE_OUTPUT, "axolotl.yml")
    done = run("git", "commit", "-m", "hostile", check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "axolotl.yml:11:25 LL001 gradient-checkpointing-off" in output  # checked, printed
    assert (work / ".github" / "workflows" / "ci.yml").read_text() == WORKFLOW
    assert hostile.read_text() == "name: decoy\n"
    assert run("git", "status", "--porcelain", "--", ".github").stdout == ""


@pytest.mark.parametrize("repo", [["--fail-on", "error"]], indirect=True)
def test_the_hooks_args_still_work_next_to_hostile_file_names(repo):
    """The hook's args are still options: ``--fail-on error`` lets the warning pass (were
    ``--fail-on`` taken for a path, the hook would fail on a missing file ``error``), while
    both hostile names are linted as paths and overwrite nothing."""
    work, run = repo
    _commit_workflow(work, run)
    hostile = work / HOSTILE_OUTPUT
    hostile.parent.mkdir(parents=True)
    hostile.write_text("name: decoy\n")
    (work / "--exclude=*.yml").write_text("{}\n")
    (work / "axolotl.yml").write_text(BAD_CONFIG)
    run("git", "add", "--", HOSTILE_OUTPUT, "--exclude=*.yml", "axolotl.yml")
    done = run("git", "commit", "-m", "hostile", check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert (work / ".github" / "workflows" / "ci.yml").read_text() == WORKFLOW
    # the same run, shown: the finding is reported (a warning, under --fail-on error)
    done = run(sys.executable, "-m", "pre_commit", "run", "--verbose", "--all-files",
               check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "axolotl.yml:11:25 LL001 gradient-checkpointing-off" in output
    assert (work / ".github" / "workflows" / "ci.yml").read_text() == WORKFLOW
