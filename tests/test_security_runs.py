"""Attacks on the run surface (launch files, binding, distributed configs, project versions, the
cache keyed by a run's files, --diff-only with run inputs, reporters' related locations).

Every test is an attack a pull request could make; each fails if its defence were missing."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lintlora.engine import lint_paths
from lintlora.report import render

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMATS = ("text", "json", "sarif", "github", "markdown", "rdjson", "gitlab", "junit", "concise")

TRAIN_PY = '''from dataclasses import dataclass, field
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
from peft import LoraConfig, get_peft_model


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/opt-125m")


parser = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, device_map="auto")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
trainer = Trainer(model=model, args=training_args)
trainer.train()
'''

FIRE_PY = '''import fire
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def main(x: str = "a", fp16: bool = False, lr: float = 1e-4):
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    args = TrainingArguments(output_dir="out", fp16=fp16, learning_rate=lr)
    Trainer(model=model, args=args).train()


if __name__ == "__main__":
    fire.Fire(main)
'''

LAUNCH = "torchrun --nproc_per_node 4 train.py --fp16 True"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")])
    env.pop("LINTLORA_DEBUG", None)
    env.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return env


def _git(*args: str, cwd) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=_env(), check=True, capture_output=True)


def _project(tmp_path: Path, launch: str | None = None, *, script: str = TRAIN_PY,
             name: str = "run.sh") -> Path:
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "train.py").write_text(script)
    if launch is not None:
        (root / name).write_text(launch)
    return root


def _reports(result) -> dict[str, str]:
    out = {}
    for fmt in FORMATS:
        buffer = io.StringIO()
        render(result, fmt, buffer)
        out[fmt] = buffer.getvalue()
    return out


def _all_text(result) -> str:
    """Every report format, and the runs' data (command, inputs, related locations)."""
    parts = list(_reports(result).values())
    for setups in (result.setups or {}).values():
        for setup in setups:
            parts.append(repr(setup.run))
            parts.append(repr(getattr(setup, "inputs", ())))
    for finding in result.findings:
        parts.append(repr(finding.related))
    return "\n".join(parts)


def _lint(paths, **kw):
    kw.setdefault("jobs", 1)
    return lint_paths([str(p) for p in paths], **kw)


def _timed_cli(args, cwd, max_s: float, max_rss_mb: int = 1500) -> tuple[str, float]:
    """lintlora in a child process under a 4 GiB address-space limit: its output and wall
    time; fails past ``max_s`` or ``max_rss_mb`` of peak memory."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
            "from lintlora.cli_app import app\n"
            "sys.argv[0] = 'lintlora'\n"
            "try:\n"
            "    app()\n"
            "finally:\n"
            "    try:\n"
            "        hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "        sys.stderr.write('\\npeak-rss-kib=%d\\n' % int(hwm[0].split()[1]))\n"
            "    except (OSError, IndexError, ValueError):\n"
            "        pass\n")
    start = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-c", code, "--no-cache", "-j", "1", *args],
                             cwd=cwd, env=_env(), capture_output=True, text=True,
                             timeout=max_s * 4)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lintlora ran past {max_s * 4:g} s")
    elapsed = time.monotonic() - start
    out = run.stdout + run.stderr
    assert run.returncode in (0, 1), out[-3000:]
    assert "Traceback" not in out and "MemoryError" not in out, out[-3000:]
    assert elapsed < max_s, f"{elapsed:.1f} s"
    marks = [line for line in run.stderr.splitlines() if line.startswith("peak-rss-kib=")]
    if marks:
        peak = int(marks[-1].split("=", 1)[1]) // 1024
        assert peak < max_rss_mb, f"{peak} MiB"
    sys.stderr.write(f"[timing] {args[-1] if args else ''}: {elapsed:.2f} s\n")
    return out, elapsed


# ---- 1. a launch file is read, never run ---------------------------------------------------------

def _marker_scripts(marker: str) -> dict[str, str]:
    m = marker
    return {
        "command_substitution": f'#!/bin/bash\nN=$(touch {m}; echo 4)\ntorchrun --nproc_per_node $N train.py --fp16 True\n',
        "backticks": f'#!/bin/bash\nN=`touch {m}`\ntorchrun --nproc_per_node `touch {m}` train.py --fp16 True\n',
        "eval": f'#!/bin/bash\neval "touch {m}"\neval "{LAUNCH}"\n',
        "source": f'#!/bin/bash\necho "touch {m}" > env.sh\nsource env.sh\n. ./env.sh\n{LAUNCH}\n',
        "process_substitution": f'#!/bin/bash\ncat <(touch {m})\n{LAUNCH} --x <(touch {m})\n',
        "trap": f'#!/bin/bash\ntrap "touch {m}" EXIT DEBUG ERR\n{LAUNCH}\n',
        "alias": f'#!/bin/bash\nshopt -s expand_aliases\nalias torchrun="touch {m}; torchrun"\n{LAUNCH}\n',
        "function": f'#!/bin/bash\ntorchrun() {{ touch {m}; }}\nlaunch() {{ touch {m}; {LAUNCH}; }}\nlaunch\n',
        "heredoc": f'#!/bin/bash\nbash <<EOF\ntouch {m}\nEOF\ncat <<EOF > x\n$(touch {m})\nEOF\n{LAUNCH}\n',
        "arith": f'#!/bin/bash\nN=$(( $(touch {m}) + 4 ))\na[$(touch {m})]=1\n{LAUNCH}\n',
        "param_default": f'#!/bin/bash\nN=${{X:-$(touch {m})}}\n{LAUNCH} --lr ${{LR:=$(touch {m})}}\n',
        "prompt_expansion": f'#!/bin/bash\nX=\'$(touch {m})\'\nN="${{X@P}}"\n{LAUNCH}\n',
        "coproc_exec": f'#!/bin/bash\ncoproc touch {m}\nexec touch {m}\n{LAUNCH}\n',
        "bash_c": f'#!/bin/bash\nbash -c "touch {m}"\nsh -c "touch {m}; {LAUNCH}"\n',
    }


@pytest.mark.parametrize("attack", sorted(_marker_scripts("M")))
def test_a_launch_script_is_never_executed(tmp_path, monkeypatch, attack):
    marker = tmp_path / "PWNED"
    root = _project(tmp_path, _marker_scripts(str(marker))[attack])
    # a Makefile and a workflow doing the same
    (root / "Makefile").write_text(f"X := $(shell touch {marker})\ntrain:\n\ttouch {marker}; {LAUNCH}\n")
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "t.yml").write_text(
        f"jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: |\n          touch {marker}\n          {LAUNCH}\n")
    (root / "Procfile").write_text(f"web: touch {marker}; {LAUNCH}\n")
    monkeypatch.chdir(root)
    result = _lint([root / "train.py"])
    _all_text(result)
    assert not marker.exists()
    assert not (root / "env.sh").exists() and not (root / "x").exists()


# ---- 2. binding never evaluates code -----------------------------------------------------------

@pytest.mark.parametrize("value", [
    "__import__('os').system('touch {m}')",
    "[__import__('os').system('touch {m}')]",
    "{{'a': __import__('os').system('touch {m}')}}",
    "lambda: __import__('os').system('touch {m}')",
    "(1).__class__.__base__.__subclasses__()",
    "open('{m}', 'w')",
])
def test_a_fire_value_is_never_evaluated(tmp_path, monkeypatch, value):
    marker = tmp_path / "PWNED"
    word = value.format(m=marker)
    root = _project(tmp_path, f'#!/bin/bash\npython train.py --x "{word}" --fp16 True\n',
                    script=FIRE_PY)
    monkeypatch.chdir(root)
    _all_text(_lint([root / "train.py"]))
    assert not marker.exists()


@pytest.mark.parametrize("text", [
    "(" * 100_000 + ")" * 100_000,
    "[" * 4000 + "]" * 4000,
    "(" * 90 + "1" + ")" * 90,
    "{'a': " * 1000 + "1" + "}" * 1000,
    "9" * 100_000,
    "9" * 4096,
    "-" * 4000 + "1",
    "1e" + "9" * 4000,
    "[" + ",".join(["[1,2,3]"] * 500) + "]",
    "'" + "\\N{LATIN SMALL LETTER A}" * 300 + "'",
])
def test_fire_literals_are_bounded(text):
    from lintlora.extract.argv_grammar import fire_value

    start = time.monotonic()
    try:
        value = fire_value(text)
    except ValueError:
        value = None
    assert time.monotonic() - start < 1.0
    if isinstance(value, int):
        assert value.bit_length() < 20_000


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000, "9" * 100_000, "{a: " * 5000 + "1" + "}" * 5000,
    "[" + ",".join(["1"] * 100_000) + "]", "!!python/object/apply:os.system ['touch {m}']",
    "&a [*a, *a, *a]", "${oc.env:HOME}", "${oc.decode:'{a: 1}'}",
])
def test_override_values_are_bounded_and_never_evaluated(tmp_path, text):
    from lintlora.extract.argv_grammar import convert
    from lintlora.extract.dialects.overrides import dotlist_value

    marker = tmp_path / "PWNED"
    text = text.replace("{m}", str(marker))
    start = time.monotonic()
    for call in (lambda: dotlist_value(text), lambda: dotlist_value(text, True),
                 *(lambda c=c: convert(c, text) for c in ("int", "float", "loose", "string_to_bool"))):
        try:
            value = call()
        except ValueError:
            continue
        assert not isinstance(value, int) or isinstance(value, bool) or value.bit_length() < 1000
    assert time.monotonic() - start < 1.0
    assert not marker.exists()


def test_huge_fire_values_in_a_launch_are_bounded(tmp_path):
    words = " ".join([
        '--x "' + "(" * 50_000 + ")" * 50_000 + '"',
        '--lr ' + "9" * 100_000,
        '--x "' + "{'a': " * 2000 + "1" + "}" * 2000 + '"',
    ])
    root = _project(tmp_path, f"#!/bin/bash\npython train.py {words}\n", script=FIRE_PY)
    _timed_cli([str(root / "train.py")], root, max_s=10)


# ---- 3. launch words never reach outside the project -------------------------------------------

CANARY = "CANARY-7f3a9c-outside-the-project"


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "ds.json").write_text(
        json.dumps({"zero_optimization": {"stage": 3}, "comment": CANARY,
                    "train_micro_batch_size_per_gpu": 1}))
    (folder / "accel.yaml").write_text(
        f"distributed_type: FSDP\nnum_processes: 8\nmachine_rank: 0\n# {CANARY}\nname: {CANARY}\n")
    (folder / "req.txt").write_text(f"transformers==4.30.0\n{CANARY}==1.0\n")
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "x"\ndependencies = ["transformers==4.30.0", "{CANARY}==1"]\n')
    return folder


class _Reads:
    """Every path opened (os.open, open) while linting, resolved."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        real_os_open, real_open = os.open, open
        import builtins

        def os_open(path, *a, **k):
            self._add(path)
            return real_os_open(path, *a, **k)

        def py_open(path, *a, **k):
            self._add(path)
            return real_open(path, *a, **k)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(builtins, "open", py_open)
        monkeypatch.setattr(io, "open", py_open)

    def _add(self, path):
        if isinstance(path, (str, bytes, os.PathLike)):
            try:
                self.paths.append(os.path.realpath(os.fsdecode(path)))
            except (TypeError, ValueError):
                pass

    def under(self, folder) -> list[str]:
        top = os.path.realpath(str(folder)) + os.sep
        return [p for p in self.paths if p.startswith(top)]


def _escapes(outside: Path, root: Path) -> dict[str, dict[str, str]]:
    """Attack name -> {file in the project: content}."""
    rel = os.path.relpath(outside, root)
    ds, acc, req = outside / "ds.json", outside / "accel.yaml", outside / "req.txt"
    return {
        "deepspeed_dotdot": {"run.sh": f"#!/bin/bash\n{LAUNCH} --deepspeed {rel}/ds.json\n"},
        "deepspeed_deep_dotdot": {"run.sh": f"#!/bin/bash\n{LAUNCH} --deepspeed ../../../../../../../..{ds}\n"},
        "deepspeed_absolute": {"run.sh": f"#!/bin/bash\n{LAUNCH} --deepspeed={ds}\n"},
        "deepspeed_tilde_env": {"run.sh": f"#!/bin/bash\nD={outside}\n{LAUNCH} --deepspeed $D/ds.json\n"},
        "accelerate_config_file": {"run.sh": f"#!/bin/bash\naccelerate launch --config_file {acc} train.py --fp16 True\n"},
        "accelerate_env_config": {"run.sh": f"#!/bin/bash\nACCELERATE_CONFIG_FILE={acc} accelerate launch train.py\n"},
        "deepspeed_cd_out": {"run.sh": f"#!/bin/bash\ncd {rel}\n{LAUNCH} --deepspeed ds.json\n"},
        "deepspeed_cd_absolute": {"run.sh": f"#!/bin/bash\ncd {outside}\n{LAUNCH} --deepspeed ds.json\n"},
        "workflow_working_directory": {
            ".github/workflows/t.yml": (
                "jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
                f"      - working-directory: ../{rel}\n        run: {LAUNCH} --deepspeed ds.json\n"
                f"      - working-directory: {outside}\n        run: {LAUNCH} --deepspeed ds.json\n")},
        "accelerate_nested_deepspeed_file": {
            "run.sh": "#!/bin/bash\naccelerate launch --config_file accel.yaml train.py --fp16 True\n",
            "accel.yaml": (f"distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                           f"  deepspeed_config_file: {ds}\nfsdp_config:\n  fsdp_config_file: {rel}/ds.json\n")},
        "deepspeed_json_includes": {
            "run.sh": f"#!/bin/bash\n{LAUNCH} --deepspeed ds.json\n",
            "ds.json": json.dumps({"zero_optimization": {"stage": 3, "offload_param": {"nvme_path": str(outside)}},
                                   "config_file": str(ds), "$ref": str(ds)})},
        "makefile_include": {"Makefile": f"include {acc}\n-include {rel}/ds.json\ntrain:\n\t{LAUNCH} --deepspeed {ds}\n"},
        "sbatch_chdir": {"job.sbatch": f"#!/bin/bash\n#SBATCH --chdir={outside}\n#SBATCH -D {outside}\n{LAUNCH} --deepspeed ds.json\n"},
        "pushd_out": {"run.sh": f"#!/bin/bash\npushd {outside}\n{LAUNCH} --deepspeed ./ds.json\npopd\n"},
        "requirements_include_dotdot": {"requirements.txt": f"-r {rel}/req.txt\n-c {rel}/req.txt\n"},
        "requirements_include_absolute": {"requirements.txt": f"-r {req}\n--requirement={req}\n-c {req}\n"},
        "requirements_include_etc": {"requirements.txt": "-r /etc/passwd\n-r /proc/self/environ\n-r /dev/zero\n"},
        "pyproject_path_dependency": {"pyproject.toml": (
            f'[project]\nname = "y"\ndependencies = ["x @ file://{outside}"]\n'
            f'[tool.poetry.dependencies]\nx = {{path = "{outside}"}}\n'
            f'[tool.uv.sources]\nx = {{path = "{outside}"}}\n')},
        "setup_py_reads": {"setup.py": (
            f"from setuptools import setup\nsetup(install_requires=open('{req}').read().splitlines())\n")},
        "environment_yml_pip_r": {"environment.yml": f"dependencies:\n  - pip:\n    - -r {req}\n    - -r {rel}/req.txt\n"},
        "notebook_pip_r": {"nb.ipynb": json.dumps({"cells": [{"cell_type": "code", "metadata": {},
                                                             "source": [f"%pip install -r {req}\n"],
                                                             "outputs": [], "execution_count": None}],
                                                  "metadata": {}, "nbformat": 4, "nbformat_minor": 5})},
    }


@pytest.mark.parametrize("attack", sorted(_escapes(Path("/o"), Path("/r"))))
def test_launch_words_never_read_outside_the_project(tmp_path, monkeypatch, outside, attack):
    root = _project(tmp_path)
    for name, text in _escapes(outside, root)[attack].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    reads = _Reads(monkeypatch)
    result = _lint([root / "train.py"], cache_dir=str(tmp_path / "cache"))  # the cache hashes inputs
    monkeypatch.undo()
    text = _all_text(result)
    assert CANARY not in text
    assert reads.under(outside) == []
    for setups in result.setups.values():
        for setup in setups:
            for path in getattr(setup, "inputs", ()):
                assert not os.path.realpath(path).startswith(str(outside)), path


@pytest.mark.parametrize("what", ["ds.json", "accel.yaml", "req.txt", "folder"])
def test_a_symlink_in_the_project_pointing_out_is_not_followed(tmp_path, monkeypatch, outside, what):
    root = _project(tmp_path)
    if what == "folder":
        os.symlink(outside, root / "configs")
        (root / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH} --deepspeed configs/ds.json\n")
        (root / "requirements.txt").write_text("-r configs/req.txt\n")
    else:
        link = {"ds.json": "ds.json", "accel.yaml": "accel.yaml", "req.txt": "requirements.txt"}[what]
        os.symlink(outside / what, root / link)
        (root / "run.sh").write_text(
            f"#!/bin/bash\n{LAUNCH} --deepspeed ds.json\n"
            "accelerate launch --config_file accel.yaml train.py\n")
    # a launch file that is itself a link out
    (outside / "evil.sh").write_text(f"#!/bin/bash\n{LAUNCH} --deepspeed {outside}/ds.json\n# {CANARY}\n")
    os.symlink(outside / "evil.sh", root / "launch.sh")
    reads = _Reads(monkeypatch)
    result = _lint([root / "train.py"], cache_dir=str(tmp_path / "cache"))
    monkeypatch.undo()
    assert CANARY not in _all_text(result)
    assert reads.under(outside) == []


# ---- 4. resource exhaustion ----------------------------------------------------------------------

def _big(path: Path, line: str, size: int) -> None:
    with open(path, "w") as handle:
        chunk = line * max(1, (1 << 20) // len(line))
        written = 0
        while written < size:
            handle.write(chunk)
            written += len(chunk)


def test_a_100_mb_run_sh_is_bounded(tmp_path):
    root = _project(tmp_path)
    _big(root / "run.sh", f"{LAUNCH}\n", 100 << 20)
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_million_line_run_sh_is_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "run.sh").write_text("#!/bin/bash\n" + "X=1\n" * 1_000_000 + LAUNCH + "\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_hundred_thousand_sweep_is_bounded(tmp_path):
    root = _project(tmp_path)
    values = " ".join(str(i) for i in range(100))
    loops = "".join(f"for v{i} in {values}; do\n" for i in range(6))
    dones = "done\n" * 6
    (root / "run.sh").write_text(f"#!/bin/bash\n{loops}{LAUNCH} --lr $v0 --x $v1$v2$v3$v4$v5\n{dones}")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_nested_expansion_doubling_is_bounded(tmp_path):
    root = _project(tmp_path)
    lines = ["A=xxxxxxxxxxxxxxxx"] + [f'A="$A$A"' for _ in range(60)]
    lines += ["ARR=(a b c)"] + ['ARR=("${ARR[@]}" "${ARR[@]}")' for _ in range(60)]
    (root / "run.sh").write_text("#!/bin/bash\n" + "\n".join(lines) + f'\n{LAUNCH} --x "$A" ${{ARR[@]}}\n')
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_big_array_expanded_by_every_word_is_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "run.sh").write_text("#!/bin/bash\nA=(" + "a " * 4000 + ")\n" + LAUNCH + " ${A[@]}" * 3000 + "\n"
                                 + f'{LAUNCH} "${{A[@]}}"\n' * 200)
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_recursive_functions_are_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "run.sh").write_text("#!/bin/bash\nf() { f; f; " + LAUNCH + "; }\ng() { f; g; }\nf\ng\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_ten_thousand_launch_files_are_bounded(tmp_path):
    root = _project(tmp_path)
    for i in range(10_000):
        folder = root / "scripts" / f"d{i // 500}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"r{i}.sh").write_text(f"#!/bin/bash\n{LAUNCH} --lr {i}\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_deep_folder_tree_is_bounded(tmp_path):
    root = _project(tmp_path)
    folder = root
    for i in range(300):
        folder = folder / "d"
        folder.mkdir()
        (folder / "r.sh").write_text(f"#!/bin/bash\n{LAUNCH}\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_requirements_include_chain_and_cycle_are_bounded(tmp_path):
    root = _project(tmp_path)
    for i in range(2000):
        (root / f"req{i}.txt").write_text(f"-r req{i + 1}.txt\n-r req{i // 2}.txt\ntorch==2.{i}\n")
    (root / "requirements.txt").write_text("-r req0.txt\n-r requirements.txt\n" * 50)
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_huge_uv_lock_is_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch"]\n')
    _big(root / "uv.lock", '[[package]]\nname = "p"\nversion = "1.0"\n', 60 << 20)
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_pyproject_with_1e5_dependencies_is_bounded(tmp_path):
    root = _project(tmp_path)
    deps = ",".join(f'"p{i}"' for i in range(100_000))  # under the 1 MiB manifest bound
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = [\n{deps}\n]\n')
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_deeply_nested_toml_is_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "requirements.txt").write_text("torch==2.1\n")
    (root / "uv.lock").write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    (root / "poetry.lock").write_text("x = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_yaml_alias_bomb_in_an_accelerate_config_is_bounded(tmp_path):
    root = _project(tmp_path)
    bomb = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    bomb += [f"a{i}: &a{i} [*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1}]"
             for i in range(1, 12)]
    (root / "accel.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: *a11\n" + "\n".join(bomb) + "\n")
    (root / "ds.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "run.sh").write_text("#!/bin/bash\naccelerate launch --config_file accel.yaml train.py --fp16 True\n"
                                 f"{LAUNCH} --deepspeed ds.json\n")
    _timed_cli([str(root / "train.py")], root, max_s=10)


def test_a_huge_environment_yml_and_notebook_pips_are_bounded(tmp_path):
    root = _project(tmp_path)
    (root / "environment.yml").write_text("dependencies:\n" + "".join(f"  - p{i}=1.{i}\n" for i in range(100_000)))
    (root / "Pipfile").write_text("[packages]\n" + "".join(f'p{i} = "==1.{i}"\n' for i in range(100_000)))
    _timed_cli([str(root / "train.py")], root, max_s=10)


# ---- 5. output injection ----------------------------------------------------------------------

INJECT = "x\n::error file=evil.py,line=1::PWNED\x1b[31mRED\x1b]8;;http://e\x07</details><script>alert(1)</script>|`"


def _check_escaped(reports: dict[str, str]) -> None:
    for fmt, text in reports.items():
        assert "\x1b" not in text and "\x07" not in text, fmt
        if fmt == "markdown":  # HTML matters where rendered: outside code spans
            import re

            prose = re.sub(r"``.*?``|`[^`\n]*`", "", text)
            assert "<script>" not in prose and "</details><" not in prose, prose
        for line in text.splitlines():
            if "PWNED" in line and fmt != "json" and fmt != "sarif":
                assert not line.lstrip().startswith("::error file=evil"), (fmt, line)
    json.loads(reports["json"])
    sarif = json.loads(reports["sarif"])
    assert sarif["version"] == "2.1.0"
    assert reports["markdown"].count("</details>") == reports["markdown"].count("<details>")
    github = reports["github"]
    for line in github.splitlines():
        if line.startswith("::"):
            assert "::error file=evil.py" not in line[2:] or line.startswith("::error file=evil.py") is False


@pytest.mark.parametrize("where", ["file_name", "word", "deepspeed_path", "env_value", "workflow"])
def test_injected_text_from_launch_files_is_escaped(tmp_path, where):
    root = _project(tmp_path)
    q = INJECT.replace("\n", "\\n")
    if where == "file_name":
        name = "run" + INJECT.replace("/", "_") + ".sh"
        (root / name).write_text(f"#!/bin/bash\n{LAUNCH}\n")
    elif where == "word":
        (root / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH} --output_dir $'{q}' --fp16 $'{q}'\n")
    elif where == "deepspeed_path":
        (root / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH} --deepspeed $'{q}.json'\n")
        (root / ("%s.json" % INJECT.replace("/", "_"))).write_text('{"zero_optimization": {"stage": 3}}')
    elif where == "env_value":
        (root / "run.sh").write_text(f"#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=$'{q}'\n{LAUNCH}\n")
    else:
        (root / ".github" / "workflows").mkdir(parents=True)
        (root / ".github" / "workflows" / "t.yml").write_text(
            "jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
            f"      - run: \"{LAUNCH} --deepspeed '{q}' --fp16 '{q}'\"\n")
    result = _lint([root / "train.py"])
    reports = _reports(result)
    assert result.findings or result.errors
    _check_escaped(reports)


# ---- 6. secrets in launch lines ----------------------------------------------------------------

SECRETS = ("hf_SeCrEtToKeN0123456789abcdefABCDEF", "wandb0123456789secretkeyvalue",
           "sk-proj-OPENAISECRET0123456789", "ghp_GITHUBSECRET0123456789abcdefABCD")


@pytest.mark.parametrize("shape", ["env_prefix", "export", "option", "option_equals", "positional",
                                   "makefile",
                                   "workflow_env", "config"])
def test_secrets_in_launch_lines_never_appear(tmp_path, shape):
    hf, wandb, oa, gh = SECRETS
    root = _project(tmp_path)
    cmd = f"torchrun --nproc_per_node 4 train.py --fp16 True --deepspeed ds.json"
    (root / "ds.json").write_text('{"zero_optimization": {"stage": 3}}')
    if shape == "env_prefix":
        text = f"#!/bin/bash\nHF_TOKEN={hf} WANDB_API_KEY={wandb} OPENAI_API_KEY={oa} GH_TOKEN={gh} {cmd}\n"
    elif shape == "export":
        text = f"#!/bin/bash\nexport HF_TOKEN={hf}\nexport WANDB_API_KEY={wandb}\nTOK={oa}\n{cmd} --x $TOK --y {gh}\n"
    elif shape == "option":
        text = f"#!/bin/bash\n{cmd} --hub_token {hf} --push_to_hub True --run_name {wandb} --api_key {oa} --token {gh}\n"
    elif shape == "option_equals":
        text = f"#!/bin/bash\n{cmd} --hub_token={hf} --hub_model_id={gh} --wandb_api_key={wandb} --fp16={oa}\n"
    elif shape == "positional":
        text = (f"#!/bin/bash\nenv HF_TOKEN={hf} {cmd} {wandb} -- {oa}\n"
                f"HUGGING_FACE_HUB_TOKEN={gh} accelerate launch train.py {hf}\n")
    elif shape == "makefile":
        (root / "Makefile").write_text(f"HF_TOKEN := {hf}\ntrain:\n\tHF_TOKEN=$(HF_TOKEN) WANDB_API_KEY={wandb} {cmd} --hub_token {oa}\n")
        text = None
    elif shape == "workflow_env":
        (root / ".github" / "workflows").mkdir(parents=True)
        (root / ".github" / "workflows" / "t.yml").write_text(
            f"env:\n  HF_TOKEN: {hf}\njobs:\n  t:\n    runs-on: ubuntu-latest\n    env:\n      WANDB_API_KEY: {wandb}\n"
            f"    steps:\n      - run: {cmd} --hub_token {oa}\n        env:\n          GH_TOKEN: {gh}\n")
        text = None
    else:
        (root / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": 3}, "hub_token": hf,
                                                  "wandb": {"api_key": wandb}}))
        (root / "accel.yaml").write_text(f"distributed_type: MULTI_GPU\nnum_processes: 4\nhf_token: {oa}\n")
        text = f"#!/bin/bash\naccelerate launch --config_file accel.yaml train.py --deepspeed ds.json --fp16 True\n"
    if text is not None:
        (root / "run.sh").write_text(text)
    result = _lint([root / "train.py"])
    assert any(s.run is not None for setups in result.setups.values() for s in setups)
    everything = _all_text(result)
    for secret in SECRETS:
        assert secret not in everything
        assert secret[4:20] not in everything
    out = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--show-setup", "train.py"],
                         cwd=root, env=_env(), capture_output=True, text=True, timeout=120)
    for secret in SECRETS:
        assert secret[4:20] not in out.stdout + out.stderr


# ---- 7. the cache keyed by a run's files ----------------------------------------------------------

def _cache_secret(cache_dir) -> bytes:
    import lintlora.cache as cache_module

    with open(os.path.join(str(cache_dir), f"v{cache_module.FORMAT}", cache_module.SECRET_NAME), "rb") as f:
        return f.read()


def _entries(cache_dir):
    import lintlora.cache as cache_module

    top = os.path.join(str(cache_dir), f"v{cache_module.FORMAT}")
    return sorted(os.path.join(d, f) for d, _, files in os.walk(top) for f in files if f.endswith(".json"))


def _resign(entry: str, cache_dir, mutate) -> None:
    with open(entry, "rb") as handle:
        raw = handle.read()
    _, _, body = raw.partition(b"\n")
    document = json.loads(body)
    mutate(document)
    body = json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    signature = hmac.new(_cache_secret(cache_dir), body, hashlib.sha256).hexdigest().encode()
    with open(entry, "wb") as handle:
        handle.write(signature + b"\n" + body)


@pytest.mark.parametrize("forgery", ["related_outside", "pattern_outside",
                                     "pattern_dotdot"])
def test_a_forged_run_entry_reaching_outside_is_a_miss(tmp_path, monkeypatch, outside, forgery):
    import lintlora.cache as cache_module

    root = _project(tmp_path, f"#!/bin/bash\n{LAUNCH}\n")
    cache = tmp_path / "cache"
    first = _lint([root / "train.py"], cache_dir=str(cache), keep_setups=False)
    plain = _reports(first)
    entries = [e for e in _entries(cache) if b"run.sh" in open(e, "rb").read()]
    assert entries
    canary = str(outside / "ds.json")
    state = cache_module.input_state(canary)

    def mutate(document):
        inputs = document["inputs"]
        if forgery == "related_outside":
            for finding in document["result"]["findings"]:
                finding["related"] = [[[canary, 1, 1, None, None, None], CANARY]]
                inputs.append([canary, state])
                break
            else:
                document["key"] = "0" * 64  # an entry without findings: a plain miss
        elif forgery == "pattern_outside":
            inputs.append([str(outside / "*.json"), cache_module.input_state(str(outside / "*.json"))])
        else:
            pattern = str(root) + "/../outside/*.json"
            inputs.append([pattern, cache_module.input_state(pattern)])

    for entry in entries:
        _resign(entry, cache, mutate)
    reads = _Reads(monkeypatch)
    again = _lint([root / "train.py"], cache_dir=str(cache), keep_setups=False)
    monkeypatch.undo()
    assert reads.under(outside) == []
    assert again.stats.cache_hits == 0
    assert _reports(again) == plain
    assert CANARY not in "".join(_reports(again).values())


# ---- 8. git never runs repository-configured programs during --diff-only -----------------------

def test_diff_only_with_launch_inputs_runs_no_configured_program(tmp_path):
    marker = tmp_path / "PWNED"
    root = tmp_path / "repo"
    root.mkdir()
    _git("init", "-q", cwd=root)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH}\n")
    (root / "ds.json").write_text('{"zero_optimization": {"stage": 2}}')
    (root / "requirements.txt").write_text("transformers==4.40.0\n")
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "base", cwd=root)
    evil = f"sh -c 'touch {marker}'"
    hook = root / "evil.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    hook.chmod(0o755)
    for key, value in [("core.fsmonitor", str(hook)), ("diff.external", str(hook)),
                       ("diff.evil.textconv", str(hook)), ("diff.evil.command", str(hook)),
                       ("filter.evil.clean", str(hook)), ("filter.evil.smudge", str(hook)),
                       ("filter.evil.process", str(hook)), ("core.pager", evil),
                       ("core.hooksPath", str(tmp_path)), ("core.sshCommand", evil),
                       ("alias.diff", "!" + evil), ("core.askPass", str(hook)),
                       ("credential.helper", "!" + evil), ("gpg.program", str(hook))]:
        _git("config", key, value, cwd=root)
    (root / ".gitattributes").write_text("* diff=evil filter=evil\n")
    (root / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH} --deepspeed ds.json\n")
    (root / "ds.json").write_text('{"zero_optimization": {"stage": 3}}')
    (root / "requirements.txt").write_text("transformers==4.30.0\n")
    for fmt in ("text", "sarif"):
        run = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--format", fmt,
                              "--diff-only", "HEAD", "train.py"], cwd=root, env=_env(),
                             capture_output=True, text=True, timeout=120)
        assert run.returncode in (0, 1), run.stdout + run.stderr
    assert not marker.exists()


# ---- 9. special files where launch files and configs are looked for -----------------------------

def test_special_files_in_the_project_never_stall(tmp_path):
    root = _project(tmp_path)
    os.mkfifo(root / "run.sh")  # a named pipe with no writer: opening it must not wait
    os.mkfifo(root / "ds.json")
    os.mkfifo(root / "requirements.txt")
    (root / "scripts").mkdir()
    os.mkfifo(root / "scripts" / "train")  # extensionless: its shebang would be read
    os.symlink("/dev/zero", root / "launch.sh")
    os.symlink("/dev/zero", root / "requirements-dev.txt")
    (root / "go.sh").write_text(f"#!/bin/bash\n{LAUNCH} --deepspeed ds.json\n"
                                "accelerate launch --config_file /dev/zero train.py\n"
                                f"{LAUNCH} --deepspeed /proc/self/environ\n")
    out, _ = _timed_cli([str(root / "train.py")], root, max_s=10)
    assert "Traceback" not in out


def test_a_file_started_by_hundreds_of_launches_is_extracted_a_bounded_number_of_times(tmp_path):
    from lintlora.engine import MAX_RUN_COMMAND_LINES

    root = _project(tmp_path)
    (root / "s").mkdir()
    for i in range(300):  # each another command line: one extraction of train.py each
        (root / "s" / f"r{i}.sh").write_text(f"#!/bin/bash\n{LAUNCH} --learning_rate {i}e-5\n")
    start = time.monotonic()
    result = _lint([root / "train.py"])
    assert time.monotonic() - start < 10
    (setups,) = result.setups.values()
    assert len(setups) == MAX_RUN_COMMAND_LINES
    assert any("only 64 are linted" in n.message for n in result.notices)
