"""--assume-version on the linter, [tool.lintlora] versions, and the project's pins reaching the
findings (LL009) and the estimate (the bitsandbytes input-copy note)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lintlora.cli_app import app

ROOT = Path(__file__).resolve().parents[1]
LL009_BAD = ROOT / "fixtures" / "rules" / "ll009_bad_trainer.py"
QLORA = ROOT / "fixtures" / "examples" / "qlora_trainer.py"


def _repo(tmp_path, script=LL009_BAD, **files):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copy(script, repo / "train.py")
    for name, text in files.items():
        (repo / name.replace("__", ".")).write_text(text)
    return repo


def _lint(repo, *args):
    r = CliRunner().invoke(app, ["--no-cache", "--no-color", "--select", "LL009", *args, str(repo / "train.py")],
                           catch_exceptions=False)
    return r


def _ll009(result):
    return [line for line in result.output.splitlines() if "LL009" in line]


def test_a_pinned_4x_is_named_with_its_file_and_line(tmp_path):
    repo = _repo(tmp_path, requirements__txt="peft==0.12.0\ntransformers==4.44.2\n")
    r = _lint(repo)
    [line] = _ll009(r)
    assert "with transformers 4.44.2 (transformers==4.44.2 from requirements.txt:2)" in line


def test_no_pin_says_the_release_was_assumed(tmp_path):
    r = _lint(_repo(tmp_path))
    [line] = _ll009(r)
    assert "with transformers 4.x" in line and "assumed: the current release" in line


def test_a_pinned_5x_silences_the_default_verdict(tmp_path):
    r = _lint(_repo(tmp_path, requirements__txt="transformers==5.2.0\n"))
    assert _ll009(r) == [] and r.exit_code == 0


def test_assume_version_overrides_the_pin(tmp_path):
    repo = _repo(tmp_path, requirements__txt="transformers==4.44.2\n")
    assert _ll009(_lint(repo, "--assume-version", "transformers=5.0")) == []
    repo5 = _repo(tmp_path / "b", requirements__txt="transformers==5.0.0\n")
    [line] = _ll009(_lint(repo5, "--assume-version", "transformers==4.46.3"))
    assert "--assume-version transformers=4.46.3" in line


def test_config_versions_override_the_pin_and_the_flag_overrides_them(tmp_path):
    toml = '[tool.lintlora]\nversions = { transformers = "4.46", peft = "0.12" }\n'
    repo = _repo(tmp_path, requirements__txt="transformers==5.1.0\n", pyproject__toml=toml)
    [line] = _ll009(_lint(repo))
    assert "[tool.lintlora] versions transformers=4.46" in line
    assert _ll009(_lint(repo, "--assume-version", "transformers=5.1")) == []


@pytest.mark.parametrize("value, words", [
    ('{ transformer = "4.46" }', "'transformer': not a package lintlora reads"),
    ('{ transformers = "four" }', "not a release number"),
    ('{ transformers = 4.46 }', "expected the version as a string"),
    ('"4.46"', "expected a table"),
])
def test_bad_config_versions_are_a_clear_error(tmp_path, value, words):
    repo = _repo(tmp_path, pyproject__toml=f"[tool.lintlora]\nversions = {value}\n")
    r = _lint(repo)
    assert r.exit_code == 2 and "[tool.lintlora] versions" in r.output and words in r.output


def test_bad_flag_is_a_usage_error(tmp_path):
    r = _lint(_repo(tmp_path), "--assume-version", "nosuchpkg=1.0")
    assert r.exit_code == 2 and "--assume-version" in r.output and "nosuchpkg" in r.output


def test_the_estimate_note_follows_a_requirements_pin_of_bitsandbytes(tmp_path):
    repo = _repo(tmp_path, script=QLORA, requirements__txt="bitsandbytes==0.41.1\n")
    r = CliRunner().invoke(app, ["estimate", str(repo / "train.py"), "--format", "json"], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    report = json.loads(r.output)
    est = report[0]["estimate"] if isinstance(report, list) else report["estimate"]
    notes = " ".join(est["assumptions"])
    assert "bitsandbytes 0.41.1 (bitsandbytes==0.41.1 from requirements.txt:1): before 0.43.2" in notes
    assert est["assumed_versions"]["bitsandbytes"] == {
        "version": "0.41.1", "origin": "bitsandbytes==0.41.1 from requirements.txt:1"}


def test_the_linters_estimate_follows_the_pin_too(tmp_path):
    from lintlora.context import Context
    from lintlora.engine import lint_paths
    from lintlora.settings import Settings

    repo = _repo(tmp_path, script=QLORA, requirements__txt="bitsandbytes==0.41.1\n")
    result = lint_paths([str(repo / "train.py")], settings_for=lambda p: Settings(), keep_setups=True)
    [setup] = result.setups[str(repo / "train.py")]
    assert [p.version for p in setup.versions] == ["0.41.1"]
    assert str(repo / "requirements.txt") in setup.inputs
    est = Context().estimate(setup)
    assert est.inputs.bnb_saves_input
    assert any(n.startswith("bitsandbytes 0.41.1 (bitsandbytes==0.41.1 from requirements.txt:1)")
               for n in est.assumptions)


def test_a_requirements_edit_invalidates_the_cached_result(tmp_path):
    from lintlora.engine import lint_paths

    repo = _repo(tmp_path, requirements__txt="transformers==4.44.2\n")
    cache = tmp_path / "cache"

    def ll009():
        r = lint_paths([str(repo / "train.py")], cache_dir=str(cache), keep_setups=False)
        return [f for f in r.findings if f.code == "LL009"], r.stats.cache_hits

    found, hits = ll009()
    assert len(found) == 1 and hits == 0
    assert ll009()[1] == 1
    (repo / "requirements.txt").write_text("transformers==5.10.0\n")
    found, hits = ll009()
    assert found == [] and hits == 0
    (repo / "uv.lock").write_text('[[package]]\nname = "transformers"\nversion = "4.57.6"\n')  # a new file
    found, hits = ll009()
    assert len(found) == 1 and hits == 0 and "uv.lock:2" in found[0].message


def test_a_fifo_named_requirements_is_not_waited_on(tmp_path):
    import os

    from lintlora.extract.project_versions import versions_in_project

    repo = _repo(tmp_path)
    os.mkfifo(repo / "requirements.txt")
    assert versions_in_project(str(repo / "train.py"), root=str(repo))[0] == ()


# ---- the rules, on hand-built setups ------------------------------------------------------------
def _with(s, *pins):
    import dataclasses

    return dataclasses.replace(s, versions=tuple(pins))


def _bnb(version):
    from lintlora.training_setup import PinnedVersion, Span

    return PinnedVersion("bitsandbytes", f"=={version}", version, Span("/p/requirements.txt", 4), "requirements")


def test_ll005_move_follows_the_pinned_bitsandbytes():
    from rules_support import call, lora, model, qlora4, run, setup

    from lintlora.findings import Severity
    from lintlora.rules.ll005_device_map import DeviceMap

    s = setup(model=model(), quantization=qlora4(), lora=lora(),
              calls=(call("model_move", 6, "model.to", receiver="model"),))
    [old] = run(DeviceMap, _with(s, _bnb("0.41.1")))
    assert old.severity is Severity.ERROR and "bitsandbytes 0.41.1 (bitsandbytes==0.41.1 from" in old.message
    assert "requirements.txt:4" in old.message and "is not supported for `4-bit`" in old.message
    [new] = run(DeviceMap, _with(s, _bnb("0.45.0")))
    assert new.severity is Severity.INFO and "allows the move" in new.message
    [unknown] = run(DeviceMap, s)
    assert unknown.severity is Severity.WARNING and "assumed: the current release" in unknown.message


def test_ll009_default_case_follows_the_pinned_transformers():
    from rules_support import call, default, lit, lora, model, run, setup, training

    from lintlora.rules.ll009_checkpointing_without_input_grads import CheckpointingWithoutInputGrads
    from lintlora.training_setup import PinnedVersion, Span

    s = setup(model=model(), lora=lora(), calls=(call("get_peft_model", 8, "peft.get_peft_model"),),
              training=training(gradient_checkpointing=lit(True, 12, 27), deepspeed=default(None),
                                fsdp=default(None), gradient_checkpointing_kwargs=default(None)))
    v4 = PinnedVersion("transformers", "==4.44.2", "4.44.2", Span("/p/requirements.txt", 3), "requirements")
    v5 = PinnedVersion("transformers", ">=5", None, Span("/p/pyproject.toml", 9), "pyproject")
    [f] = run(CheckpointingWithoutInputGrads, _with(s, v4))
    assert "with transformers 4.44.2 (transformers==4.44.2 from requirements.txt:3)" in f.message
    assert any("requirements.txt:3" in r for r in f.rests_on)
    assert run(CheckpointingWithoutInputGrads, _with(s, v5)) == []
    [assumed] = run(CheckpointingWithoutInputGrads, s)
    assert "with transformers 4.x" in assumed.message and "not known" in assumed.message


def test_show_setup_lists_the_versions(tmp_path):
    repo = _repo(tmp_path, requirements__txt="transformers==4.44.2\n")
    r = CliRunner().invoke(app, ["--no-cache", "--show-setup", "--format", "json", str(repo / "train.py")],
                           catch_exceptions=False)
    [setup] = json.loads(r.output)["setups"]
    [v] = setup["versions"]
    assert (v["package"], v["version"], v["span"]["line"], v["source"]) == ("transformers", "4.44.2", 1,
                                                                           "requirements")
    text = CliRunner().invoke(app, ["--no-cache", "--no-color", "--show-setup", str(repo / "train.py")]).output
    assert "library versions: transformers==4.44.2 (" in text and "requirements.txt:1)" in text


def test_a_requirements_file_added_later_invalidates_the_cached_result(tmp_path):
    from lintlora.engine import lint_paths

    repo = _repo(tmp_path)
    cache = tmp_path / "cache"

    def run():
        r = lint_paths([str(repo / "train.py")], cache_dir=str(cache), keep_setups=False)
        return [f for f in r.findings if f.code == "LL009"], r.stats.cache_hits

    assert len(run()[0]) == 1 and run()[1] == 1
    (repo / "requirements-gpu.txt").write_text("transformers==5.3.0\n")
    assert run() == ([], 0)


def test_ll009_explicit_reentrant_on_a_stated_5x_keeps_only_the_ddp_case():
    from rules_support import call, default, lit, lora, model, run, setup, training

    from lintlora.rules.ll009_checkpointing_without_input_grads import CheckpointingWithoutInputGrads
    from lintlora.training_setup import PinnedVersion, Span

    s = setup(model=model(), lora=lora(), calls=(call("get_peft_model", 8, "peft.get_peft_model"),),
              training=training(gradient_checkpointing=lit(True, 12, 27), deepspeed=default(None),
                                fsdp=default(None),
                                gradient_checkpointing_kwargs=lit({"use_reentrant": True}, 13, 35)))
    v5 = PinnedVersion("transformers", "==5.2.0", "5.2.0", Span("/p/requirements.txt", 3), "requirements")
    [on4] = run(CheckpointingWithoutInputGrads, s)
    assert "element 0 of tensors" in on4.message
    assert run(CheckpointingWithoutInputGrads, _with(s, v5)) == []  # no DDP evidence: nothing left
