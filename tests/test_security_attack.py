"""Attacks on the trust boundary after issue 12's fixes, as a hostile pull request would try them.

Each test builds its hostile input in ``tmp_path`` (a real git repository where git matters)
and runs the real command line (``python -m lintlora``), then checks the guarantee the README's
"Security" section states.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""\
    from transformers import AutoModelForCausalLM, TrainingArguments
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    args = TrainingArguments(output_dir="out", fp16=True)
""")
"""A training script with findings (LL002 at least)."""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")])
    env.pop("LINTLORA_DEBUG", None)
    env.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return env


def _lintlora(*args: str, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    cache = [] if args and args[0] == "estimate" else ["--no-cache"]
    return subprocess.run([sys.executable, "-m", "lintlora", *cache, *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=timeout)


def _git(*args: str, cwd) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=_env(), check=True, capture_output=True)


def _repository(tmp_path):
    """``(work tree, outside folder)``: a git repository holding a training script, and a
    folder beside it holding ``victim.txt``, a file outside the repository."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("the runner's own file\n")
    (repo / "train.py").write_text(SCRIPT)
    _git("init", "-q", cwd=repo)
    return repo, outside


# ---- -o through a committed symbolic link --------------------------------------------------------
@pytest.mark.parametrize("shape", ["link_as_report", "link_as_parent_folder",
                                   "dubious_ownership"])
def test_output_never_writes_through_a_committed_link(tmp_path, shape):
    """The README's workflow step writes ``--output lintlora.sarif`` in the pull request's
    checkout. A pull request that commits ``lintlora.sarif`` as a symbolic link (or a folder
    link above the report) to a file outside the repository must not make ``-o`` overwrite
    that file (the runner's ``~/.bashrc``, a later step's script): a link inside the work tree
    is refused without ``--force``, even when git refuses to read the repository (a checkout
    owned by another user: "dubious ownership", where nothing would count as tracked)."""
    repo, outside = _repository(tmp_path)
    if shape == "dubious_ownership" and not (hasattr(os, "geteuid") and os.geteuid() == 0):
        pytest.skip("needs root to give the checkout to another user")
    if shape != "link_as_parent_folder":
        os.symlink(os.path.join("..", "outside", "victim.txt"), repo / "lintlora.sarif")
        target = "lintlora.sarif"
    else:
        os.symlink(os.path.join("..", "outside"), repo / "reports")
        target = os.path.join("reports", "victim.txt")
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "hostile link", cwd=repo)
    if shape == "dubious_ownership":
        for folder, dirs, files in os.walk(repo):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(folder, name), 65534, 65534)
        os.lchown(repo, 65534, 65534)
    run = _lintlora("train.py", "--format", "sarif", "--output", target, cwd=repo)
    assert (outside / "victim.txt").read_text() == "the runner's own file\n", run.stderr
    assert run.returncode == 2, run.stderr
    assert "symbolic link" in run.stderr
    forced = _lintlora("train.py", "--format", "sarif", "--output", target, "--force", cwd=repo)
    assert forced.returncode == 1, forced.stderr  # --force still writes where it is told
    assert '"version": "2.1.0"' in (outside / "victim.txt").read_text()


# ---- linted files that are committed links out of the project -----------------------------------
PRIVATE_CONFIG = textwrap.dedent("""\
    base_model: private-org/unreleased-model-x
    adapter: qlora
    load_in_4bit: true
    sequence_len: 4096
    micro_batch_size: 2
    lora_target_modules: [q_proj, v_proj]
""")
"""An axolotl config of someone else's (another checkout on a self-hosted runner)."""


@pytest.mark.parametrize("how", ["walk", "named"])
def test_a_committed_link_out_of_the_project_is_not_linted(tmp_path, how):
    """A pull request commits ``configs/x.yml`` as a symbolic link to a file outside the
    repository (another checkout on the runner, ``/proc/self/environ``). The README's SARIF
    step walks ``.``, and its diff step passes the changed names explicitly: either way lintlora
    would read the target and print its settings in the report. A link whose target lies
    outside the project is not followed (an LL998 notice naming the link), like a file a script
    names."""
    repo, outside = _repository(tmp_path)
    (outside / "private.yml").write_text(PRIVATE_CONFIG)
    (repo / "configs").mkdir()
    os.symlink(str(outside / "private.yml"), repo / "configs" / "x.yml")
    os.symlink("/proc/self/environ", repo / "configs" / "env.yml")
    (repo / "configs" / "own.yml").write_text(PRIVATE_CONFIG.replace(
        "private-org/unreleased-model-x", "mistralai/Mistral-7B-v0.1"))
    os.symlink("own.yml", repo / "configs" / "alias.yml")  # a link inside the project: linted
    os.symlink(str(outside), repo / "elsewhere")  # a folder link: not walked; named, refused
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "links", cwd=repo)
    paths = ["."] if how == "walk" else [os.path.join("configs", name) for name in
                                         ("x.yml", "env.yml", "own.yml", "alias.yml")] + [
                                             os.path.join("elsewhere", "private.yml")]
    for fmt in ("text", "json"):
        run = _lintlora("--show-setup", "--format", fmt, "--", *paths, cwd=repo)
        assert run.returncode in (0, 1), run.stderr
        assert "unreleased-model-x" not in run.stdout + run.stderr
        assert "Mistral-7B" in run.stdout  # the project's own config (and the link to it)
        assert "alias.yml" in run.stdout
    run = _lintlora("--", *paths, cwd=repo)
    if how == "named":
        assert "outside the project" in run.stdout + run.stderr


# ---- a regular-expression bomb in target_modules -------------------------------------------------
@pytest.mark.parametrize("pattern", [r"(.|.)*Z", r"(.*)*Z", r"(\w+\.?)+Z", ".*" * 6 + "Z"])
@pytest.mark.parametrize("kind", ["python", "yaml"])
def test_target_modules_regex_bomb_is_bounded(tmp_path, pattern, kind):
    """peft ``re.fullmatch``es a string ``target_modules``, and so did lintlora, with Python's
    backtracking ``re`` and no time limit: ``(.|.)*Z`` (a 60-byte script) kept it matching
    Llama-2-70B's module paths for longer than any CI job. Such a pattern is now "not
    evaluated" (peft's default assumed, with a note), and the run ends in seconds with no
    internal error."""
    if kind == "python":
        path = tmp_path / "train.py"
        path.write_text(textwrap.dedent(f"""\
            from transformers import AutoModelForCausalLM
            from peft import LoraConfig, get_peft_model
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf")
            model = get_peft_model(model, LoraConfig(r=8, target_modules={pattern!r}))
        """))
    else:
        path = tmp_path / "axolotl.yml"
        path.write_text(PRIVATE_CONFIG.replace("private-org/unreleased-model-x",
                                               "meta-llama/Llama-2-70b-hf").replace(
            "[q_proj, v_proj]", "'" + pattern + "'"))
    for command in (["--gpu", "t4", "--format", "json", str(path)],
                    ["estimate", "--gpu", "t4", str(path)]):
        try:
            run = _lintlora(*command, cwd=tmp_path, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"lintlora {' '.join(command)} ran past 30 s on target_modules={pattern!r}")
        assert run.returncode in (0, 1), run.stdout + run.stderr
        assert "LL999" not in run.stdout + run.stderr and "internal error" not in run.stderr


def test_real_target_module_patterns_still_match():
    """The check refuses only the unbounded shapes: the patterns real configs use compile."""
    from lintlora.target_regex import UnsafePatternError, compile_target_pattern

    for pattern in (r".*\.(q_proj|v_proj)$", r"model\.layers\.\d+\.self_attn\.(q|k|v|o)_proj",
                    r"^(?!.*vision).*model\.layers\.\d+\.self_attn\.(q|k|v|o)_proj$",
                    r".*(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"):
        assert compile_target_pattern(pattern).fullmatch("model.layers.3.self_attn.q_proj")
    for pattern in (r"(.|.)*Z", r"(a+)+", r"(a?a?)*", r"(\w+)\1", ".*" * 5):
        with pytest.raises(UnsafePatternError):
            compile_target_pattern(pattern)


# ---- a secret shaped like a setting, read from a file a script names ----------------------------
def test_hub_id_shaped_secret_under_a_credential_key_is_not_quoted(tmp_path):
    """A file in the checkout that the pull request did not write (a CI step's credentials,
    ``hub_token``/``password``/``aws_secret_access_key``) can hold a secret that happens to be
    shaped like a hub id (``abc/def``: one slash, letters and digits) or a number. A script that
    passes it as the model name made lintlora quote it in the report (the PR comment): the
    hub-id shape was quoted under any key. Nothing under a credential-named key is quoted."""
    repo, _ = _repository(tmp_path)
    secrets = {"password": "Sup3rSecret/Passw0rd", "hub_token": "hf_tokenvalue/part2",
               "aws_secret_access_key": "AKIAxyzSECRET/abc123", "auth": 982451653}
    (repo / "creds.json").write_text(__import__("json").dumps(secrets))
    (repo / "train.py").write_text(textwrap.dedent("""\
        import json
        from transformers import AutoModelForCausalLM, TrainingArguments
        cfg = json.load(open("creds.json"))
        model = AutoModelForCausalLM.from_pretrained(cfg["password"])
        m2 = AutoModelForCausalLM.from_pretrained(cfg["hub_token"])
        m3 = AutoModelForCausalLM.from_pretrained(cfg["aws_secret_access_key"])
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=cfg["auth"])
    """))
    for options in (["--show-setup"], ["--show-setup", "--format", "json"],
                    ["--format", "markdown", "--gpu", "t4"], ["estimate", "--gpu", "t4"]):
        run = _lintlora(*options, "train.py", cwd=repo)
        out = run.stdout + run.stderr
        assert run.returncode in (0, 1, 2) and "Traceback" not in out, out
        for value in secrets.values():
            assert str(value) not in out, (options, value)
    from lintlora.file_values import quotable

    assert quotable("model_name_or_path", "meta-llama/Llama-2-7b-hf")
    assert quotable("base", "meta-llama/Llama-2-7b-hf") and quotable("lora_r", 16)


# ---- analysis bombs in ordinary-looking code -----------------------------------------------------
def _run_bounded(tmp_path, source: str, *, max_s: float, max_rss_mb: int) -> str:
    """Lint ``source`` in a child process under a 4 GiB address-space limit; checks its wall
    time (``max_s``) and, on Linux, peak memory (the child's ``VmHWM``, ``max_rss_mb``)."""
    import time

    path = tmp_path / "train.py"
    path.write_text(source)
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
            "from lintlora.cli_app import app\n"
            "sys.argv[0] = 'lintlora'\n"
            "try:\n"
            "    app()\n"
            "finally:\n"
            "    try:\n"  # VmHWM: this process's peak since exec (ru_maxrss keeps the parent's)
            "        hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "        sys.stderr.write('\\npeak-rss-kib=%d\\n' % int(hwm[0].split()[1]))\n"
            "    except (OSError, IndexError, ValueError):\n"
            "        pass\n")
    start = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-c", code, "--no-cache", "-j", "1", str(path)],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=max_s * 4)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lintlora ran past {max_s * 4:g} s")
    elapsed = time.monotonic() - start
    out = run.stdout + run.stderr
    marks = [line for line in run.stderr.splitlines() if line.startswith("peak-rss-kib=")]
    assert run.returncode in (0, 1), out[-2000:]
    assert "LL999" not in out and "MemoryError" not in out, out[-2000:]
    assert elapsed < max_s, f"{elapsed:.1f} s"
    if marks:  # Linux: the child's peak resident memory, in KiB
        peak_kib = int(marks[-1].split("=", 1)[1])
        assert peak_kib < max_rss_mb * 1024, f"{peak_kib // 1024} MiB"
    return out


HEADER = "from transformers import TrainingArguments, Trainer\nm = None\n"


def test_doubling_dict_spread_is_bounded(tmp_path):
    """``d1 = {**d0, **d0}`` repeated 60 times (2 KB): the dict's list of unresolved parts
    doubled at every line; lintlora was killed by the kernel at 22 GB (an internal error,
    MemoryError, under a 3 GB limit)."""
    source = HEADER + "d0 = {'per_device_train_batch_size': 1}\n" + "".join(
        f"d{i + 1} = {{**d{i}, **d{i}}}\n" for i in range(60)) + (
        "a = TrainingArguments(output_dir='o', **d60)\nTrainer(model=m, args=a).train()\n")
    _run_bounded(tmp_path, source, max_s=10, max_rss_mb=1000)


def test_many_conditional_rebinds_are_linear(tmp_path):
    """3,000 ``if c: x = i / else: x = x + 1`` blocks (60 KB, under every limit): each lookup
    of ``x`` weighed every earlier conditional binding, each reading ``x`` again (35 s)."""
    source = HEADER + "x = 1\n" + "".join(
        f"if c{i}:\n    x = {i}\nelse:\n    x = x + 1\n" for i in range(3000)) + (
        "a = TrainingArguments(output_dir='o', per_device_train_batch_size=x)\n"
        "Trainer(model=m, args=a).train()\n")
    _run_bounded(tmp_path, source, max_s=12, max_rss_mb=1000)
