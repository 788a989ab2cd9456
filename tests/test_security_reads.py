"""Files lintlora opens besides the linted ones (issue 12, items 4, 5, 10, 12): the JSON/YAML
files a script names, a model's ``config.json``, litgpt's ``model_config.yaml``.

Every hostile input is generated in ``tmp_path``. A "repository" is a folder holding a
``.git`` entry (lintlora finds the project root without running git). Cases that made the
original code hang (a FIFO, an alias bomb) run lintlora in a subprocess with a timeout, so a
regression fails instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from lintlora.cli_app import app
from lintlora.estimate.architecture import (FIELD_RANGES, MODEL_CONFIG_MAX_BYTES,
                                            UnknownModelError, resolve_architecture)
from lintlora.file_values import quotable
from lintlora.safeio import confinement_root

SECRET = "SECRET-TOKEN-d41d8cd98f00b204"

SCRIPT = """\
import json
from transformers import AutoModelForCausalLM, TrainingArguments
cfg = json.load(open({path!r}))
model = AutoModelForCausalLM.from_pretrained(cfg["auth"])
args = TrainingArguments(output_dir=cfg["out"], per_device_train_batch_size=cfg["bs"],
                         optim=cfg["optim"])
"""

SMALL_MODEL = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
               "vocab_size": 1000}


def _repo(tmp_path, name="repo"):
    repo = tmp_path / name
    (repo / ".git").mkdir(parents=True)
    return repo


def _secret_file(folder):
    path = folder / "secret.json"
    path.write_text(json.dumps({"auth": SECRET, "out": SECRET + "-out", "bs": 4,
                                "optim": "paged_adamw_8bit"}))
    return path


def _training(output):
    """The training section's settings of the first setup in ``--show-setup --format json``."""
    return json.loads(output)["setups"][0]["sections"]["training"]["settings"]


def _show_setup(path, *extra):
    result = CliRunner().invoke(app, ["--no-cache", "--show-setup", "--format", "json",
                                      *extra, str(path)], catch_exceptions=False)
    return result


# ---- item 4: files a script names are read only inside the project -------------------------
@pytest.mark.parametrize("how", ["parent", "absolute", "symlink"])
def test_a_file_named_outside_the_project_is_not_read(tmp_path, monkeypatch, how):
    repo = _repo(tmp_path)
    secret = _secret_file(tmp_path)  # beside the repository, not in it
    if how == "parent":
        named = "../secret.json"
    elif how == "absolute":
        named = str(secret)
    else:
        os.symlink(secret, repo / "link.json")
        named = "link.json"
    (repo / "train.py").write_text(SCRIPT.format(path=named))
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert SECRET not in result.output
    assert "not followed: outside the project" in result.output
    batch = _training(result.output)["per_device_train_batch_size"]
    assert batch["value"] is None  # not read, so not 4


@pytest.mark.parametrize("suffix,read", [
    ("json", "cfg = json.load(open({path!r}))"),
    ("yaml", "cfg = yaml.safe_load(open({path!r}))"),
    ("yaml", "cfg = OmegaConf.load({path!r})"),
])
def test_every_way_a_script_reads_a_file_is_confined(tmp_path, monkeypatch, suffix, read):
    repo = _repo(tmp_path)
    secret = tmp_path / f"secret.{suffix}"
    secret.write_text(json.dumps({"output_dir": SECRET, "per_device_train_batch_size": 4}))
    (repo / "train.py").write_text(textwrap.dedent(f"""\
        import json, yaml
        from omegaconf import OmegaConf
        from transformers import TrainingArguments
        {read.format(path=str(secret))}
        args = TrainingArguments(output_dir=cfg["output_dir"],
                                 per_device_train_batch_size=cfg["per_device_train_batch_size"])
    """))
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert SECRET not in result.output
    assert "not followed: outside the project" in result.output
    assert _training(result.output)["per_device_train_batch_size"]["value"] is None


@pytest.mark.parametrize("method,suffix", [("parse_json_file", "json"),
                                           ("parse_yaml_file", "yaml")])
def test_hf_argument_parser_files_are_confined(tmp_path, monkeypatch, method, suffix):
    repo = _repo(tmp_path)
    secret = tmp_path / f"args.{suffix}"
    secret.write_text(json.dumps({"output_dir": SECRET, "per_device_train_batch_size": 4}))
    (repo / "train.py").write_text(textwrap.dedent(f"""\
        from transformers import HfArgumentParser, TrainingArguments, Trainer
        (args,) = HfArgumentParser((TrainingArguments,)).{method}({str(secret)!r})
        trainer = Trainer(model=None, args=args)
    """))
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert SECRET not in result.output
    assert "not followed: outside the project" in result.output
    # inside the project the same file is read, and its modelled values are used
    (repo / f"args.{suffix}").write_text(secret.read_text())
    (repo / "train.py").write_text((repo / "train.py").read_text().replace(
        repr(str(secret)), repr(f"args.{suffix}")))
    result = _show_setup(repo / "train.py")
    assert SECRET not in result.output
    assert _training(result.output)["per_device_train_batch_size"]["value"] == 4


def test_only_modelled_values_of_a_project_file_are_quoted(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    _secret_file(repo)
    (repo / "train.py").write_text(SCRIPT.format(path="secret.json"))
    monkeypatch.chdir(repo)
    for fmt in ("json", "text"):
        result = CliRunner().invoke(app, ["--no-cache", "--show-setup", "--format", fmt,
                                          "train.py"], catch_exceptions=False)
        assert SECRET not in result.output
        assert "paged_adamw_8bit" in result.output  # a setting lintlora models is shown
        assert "`auth` in secret.json" in result.output  # the other is named by its key
    training = _training(_show_setup(repo / "train.py").output)
    assert training["per_device_train_batch_size"]["value"] == 4


def test_nested_mappings_of_a_file_are_decided_entry_by_entry(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    (repo / "cfg.json").write_text(json.dumps({"registry": {"auth": SECRET, "r": 8}}))
    (repo / "train.py").write_text(textwrap.dedent("""\
        import json
        from transformers import TrainingArguments
        cfg = json.load(open("cfg.json"))
        args = TrainingArguments(output_dir=cfg["registry"]["auth"],
                                 per_device_train_batch_size=cfg["registry"]["r"])
    """))
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert SECRET not in result.output
    training = _training(result.output)
    assert training["per_device_train_batch_size"]["value"] == 8


@pytest.mark.parametrize("key,value,expected", [
    ("bs", 4, True), ("x", 2.5e-4, True), ("x", True, True), ("x", None, True),
    ("x", float("inf"), False), ("x", float("nan"), False), ("x", 10**30, False),
    (None, "meta-llama/Llama-3.1-8B", True), ("model", "Qwen/Qwen2.5-0.5B", True),
    ("optim", "paged_adamw_8bit", True), ("target_modules", ["q_proj", "v_proj"], True),
    ("fsdp", "full_shard auto_wrap", True), ("torch_dtype", "bfloat16", True),
    ("auth", SECRET, False), ("output_dir", "runs", False), (None, "bfloat16", False),
    ("optim", "a" * 200, False), ("optim", "adamw\n::error::x", False),
    ("optim", "ad\u202eamw", False), ("x", "a/..", False), ("x", {"a": 1}, False),
    ("target_modules", ["q_proj", SECRET + " !"], False), ("x", list(range(1000)), False),
])
def test_quotable(key, value, expected):
    assert quotable(key, value) is expected


def test_confinement_root(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    (repo / "sub").mkdir()
    assert confinement_root(repo / "sub" / "train.py") == str(repo.resolve())
    # no repository: the current folder when the file is inside it, else the file's folder
    plain = tmp_path / "plain" / "deep"
    plain.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "plain")
    assert confinement_root(plain / "t.py") == str((tmp_path / "plain").resolve())
    monkeypatch.chdir(repo)
    assert confinement_root(plain / "t.py") == str(plain.resolve())
    # a dotfiles repository in the home folder never makes the home folder the project
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    (home / "proj").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert confinement_root(home / "proj" / "t.py") == str((home / "proj").resolve())


# ---- item 5: special files and size bounds ----------------------------------------------
def _lint_in_subprocess(repo, *args, timeout=60):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", *args],
                          cwd=repo, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link", "dev-zero", "dev-stdin"])
def test_a_special_file_named_by_a_script_neither_blocks_nor_grows(tmp_path, kind):
    repo = _repo(tmp_path)
    if kind == "fifo":
        os.mkfifo(repo / "cfg.json")
        named = "cfg.json"
    elif kind == "dev-zero-link":
        os.symlink("/dev/zero", repo / "cfg.json")
        named = "cfg.json"
    else:
        named = "/dev/zero" if kind == "dev-zero" else "/dev/stdin"
    (repo / "train.py").write_text(SCRIPT.format(path=named))
    start = time.monotonic()
    done = _lint_in_subprocess(repo, "--show-setup", "train.py", timeout=60)
    assert time.monotonic() - start < 60
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr
    assert ("not a regular file" in done.stdout if kind == "fifo"
            else "not followed: outside the project" in done.stdout)


def test_a_named_path_with_a_nul_character_is_unknown_not_an_internal_error(tmp_path,
                                                                           monkeypatch):
    repo = _repo(tmp_path)
    (repo / "train.py").write_text(SCRIPT.format(path="cfg\x00.json"))
    (repo / "t2.py").write_text('from transformers import AutoModelForCausalLM\n'
                                'model = AutoModelForCausalLM.from_pretrained("m\\x00")\n')
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert "NUL character" in result.output
    assert json.loads(result.output)["errors"] == []
    result = CliRunner().invoke(app, ["--no-cache", "t2.py"], catch_exceptions=False)
    assert "internal error" not in result.output


def test_a_large_named_config_is_not_read_whole(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    with open(repo / "cfg.json", "wb") as handle:  # sparse: costs no disk
        handle.truncate(1 << 30)
    (repo / "train.py").write_text(SCRIPT.format(path="cfg.json"))
    monkeypatch.chdir(repo)
    result = _show_setup(repo / "train.py")
    assert "above the 1.0 MiB limit" in result.output


ALIAS_BOMB = "a: &a {" + ", ".join(f"k{j}: 1" for j in range(9)) + "}\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} {{" + ", ".join(f"k{j}: *{chr(97 + i)}" for j in range(9))
    + "}\n" for i in range(8))
"""Nine levels of mappings of nine aliases each: under 800 bytes, 9**9 (387 million) nodes
once expanded (``yaml.safe_load`` shares them; walking the result does not)."""


def test_a_yaml_alias_bomb_named_by_a_script_is_refused_quickly(tmp_path):
    repo = _repo(tmp_path)
    assert len(ALIAS_BOMB) < 800
    (repo / "bomb.yaml").write_text(ALIAS_BOMB)
    (repo / "train.py").write_text(textwrap.dedent("""\
        import yaml
        from transformers import TrainingArguments
        cfg = yaml.safe_load(open("bomb.yaml"))
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=cfg["i"])
    """))
    start = time.monotonic()
    done = _lint_in_subprocess(repo, "--show-setup", "train.py", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode == 0, done.stderr
    assert "could not be parsed" in done.stdout and "alias" in done.stdout


def test_a_large_model_config_is_not_read_whole(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    with open(folder / "config.json", "wb") as handle:
        handle.truncate(1 << 30)
    start = time.monotonic()
    with pytest.raises(UnknownModelError, match="above the 4.0 MiB limit"):
        resolve_architecture(str(folder))
    assert time.monotonic() - start < 5
    assert MODEL_CONFIG_MAX_BYTES == 4 * 2**20


# ---- item 10: hostile model configs are the user's input, not lintlora's bugs ------------
@pytest.mark.parametrize("text,words", [
    ('"abc"', ["a string"]), ("[1]", ["a list"]), ("1e400", ["not finite"]),
    ("NaN", ["not finite"]), ("-5", ["-5", "outside"]), ("0.5", ["not a whole number"]),
    ("true", ["a boolean"]), ("99999999999999999999", ["outside"]),
    (str(FIELD_RANGES["hidden_size"][1] + 1), ["outside"]),
])
def test_a_bad_hidden_size_names_the_file_and_key(tmp_path, text, words):
    folder = tmp_path / "m"
    folder.mkdir()
    fields = dict(SMALL_MODEL)
    body = json.dumps(fields).replace('"hidden_size": 64', f'"hidden_size": {text}')
    (folder / "config.json").write_text(body)
    with pytest.raises(UnknownModelError) as caught:
        resolve_architecture(str(folder))
    message = str(caught.value)
    assert "config.json" in message and "`hidden_size`" in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("key,value", [("num_hidden_layers", 10**6), ("vocab_size", -1),
                                       ("num_key_value_heads", 5), ("intermediate_size", "x"),
                                       ("num_local_experts", 10**9),
                                       ("max_position_embeddings", [1])])
def test_every_architecture_field_is_bounded(tmp_path, key, value):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**SMALL_MODEL, key: value}))
    with pytest.raises(UnknownModelError, match=f"`{key}`"):
        resolve_architecture(str(folder))


def test_a_good_local_config_still_resolves(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**SMALL_MODEL, "hidden_size": 64.0}))
    arch = resolve_architecture(str(folder))
    assert (arch.hidden_size, arch.num_hidden_layers, arch.vocab_size) == (64, 2, 1000)


@pytest.mark.parametrize("text,match", [
    ("- a\n- b\n", "expected a mapping of settings, got a list"),
    ("n_embd: abc\nn_head: 2\nn_layer: 2\n", "`n_embd` must be a whole number"),
    (ALIAS_BOMB, "alias"),
    ("n_embd: !!python/object:os.system x\n", "model_config.yaml"),
])
def test_a_bad_litgpt_model_config_names_the_file(tmp_path, text, match):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "model_config.yaml").write_text(text)
    start = time.monotonic()
    with pytest.raises(UnknownModelError, match=match):
        resolve_architecture(str(folder))
    assert time.monotonic() - start < 10


def test_a_model_path_outside_the_project_is_not_followed(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    outside = tmp_path / "private-model"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({**SMALL_MODEL, "_name_or_path": SECRET}))
    with pytest.raises(UnknownModelError, match="not followed: outside the project"):
        resolve_architecture("../private-model", base_dir=str(repo / "train.py"),
                             root=confinement_root(repo / "train.py"))
    # through a lint: the script names it
    (repo / "train.py").write_text(textwrap.dedent("""\
        from transformers import AutoModelForCausalLM, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("../private-model")
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=4)
    """))
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(app, ["--no-cache", "train.py"], catch_exceptions=False)
    assert SECRET not in result.output
    assert "not followed: outside the project" in result.output
    # the user's own --model-config is the user's choice: it still works
    result = CliRunner().invoke(app, ["--no-cache", "--model-config",
                                      str(outside / "config.json"), "train.py"],
                                catch_exceptions=False)
    assert "not followed" not in result.output


def test_a_name_from_a_model_config_is_shown_only_when_quotable(tmp_path):
    repo = _repo(tmp_path)
    folder = repo / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**SMALL_MODEL, "_name_or_path": SECRET}))
    arch = resolve_architecture("m", base_dir=str(repo / "train.py"),
                                root=confinement_root(repo / "train.py"))
    assert SECRET not in arch.name and SECRET not in arch.hf_id
    (folder / "config.json").write_text(json.dumps({**SMALL_MODEL,
                                                    "_name_or_path": "org/tiny-model"}))
    arch = resolve_architecture(str(folder))
    assert arch.name == "org/tiny-model"
