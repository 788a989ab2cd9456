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


def _manifest_hook() -> dict:
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(os.path.join(REPO, ".pre-commit-hooks.yaml"))
    return hook


def test_manifest_is_valid_and_as_documented():
    hook = _manifest_hook()
    assert hook["id"] == "lintlora" and hook["entry"] == "lintlora"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "yaml", "jupyter"]
    assert hook["pass_filenames"] is True
    # one lintlora process for all the files (it parallelises itself), so one summary line
    assert hook["require_serial"] is True


@pytest.fixture
def repo(tmp_path):
    import yaml

    hook = _manifest_hook()
    local = {
        "id": hook["id"],
        "name": hook["name"],
        "entry": f"{sys.executable} -m lintlora",
        "language": "system",
        "types_or": hook["types_or"],
        "pass_filenames": hook["pass_filenames"],
        "require_serial": hook["require_serial"],
    }
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
