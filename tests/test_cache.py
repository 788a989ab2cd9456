"""The results cache (lintlora/cache.py): an unchanged file is not linted again, anything that
could change its result invalidates it, and a broken or foreign entry is never trusted."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import lintlora.cache as cache_module
from lintlora.cache import ResultCache, decode_result, default_cache_dir, encode_result
from lintlora.engine import lint_paths
from lintlora.report import render
from lintlora.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures")

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")


def _report(result, fmt="json") -> str:
    out = io.StringIO()
    render(result, fmt, out)
    return out.getvalue()


def _lint(paths, cache_dir, **kwargs):
    return lint_paths([str(p) for p in paths], cache_dir=str(cache_dir), keep_setups=False,
                      **kwargs)


def _entries(cache_dir) -> list[str]:
    root = os.path.join(cache_dir, f"v{cache_module.FORMAT}")
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files
                  if f.endswith(".json"))


@pytest.fixture
def fixtures_copy(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    return tmp_path / "fixtures"


def test_second_run_reads_every_file_from_the_cache_with_identical_output(fixtures_copy,
                                                                          tmp_path):
    cache = tmp_path / "cache"
    plain = lint_paths([str(fixtures_copy)], keep_setups=False)
    first = _lint([fixtures_copy], cache)
    second = _lint([fixtures_copy], cache)
    # every file is stored (also the YAML files that are no training config: their "skipped")
    assert first.stats.cache_hits == 0 and first.stats.cache_stored >= len(first.files)
    assert second.stats.cache_hits == first.stats.cache_stored
    assert second.stats.cache_stored == 0
    for fmt in ("json", "sarif", "text", "github", "markdown", "rdjson", "gitlab", "junit",
                "concise"):
        assert _report(plain, fmt) == _report(first, fmt) == _report(second, fmt), fmt
    assert second.exit_code() == plain.exit_code()


def test_a_cached_run_does_not_parse(fixtures_copy, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _lint([fixtures_copy], cache)
    import lintlora.engine as engine

    def no_extraction(*args, **kwargs):
        raise AssertionError("extracted although cached")

    monkeypatch.setattr(engine, "_extract", no_extraction)
    result = _lint([fixtures_copy], cache)
    assert all(e.code != "LL999" for e in result.errors)
    assert result.stats.cache_hits >= len(result.files) and result.stats.cache_stored == 0


def test_an_edited_file_is_linted_again_and_only_it(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a.py").write_text(TRAIN)
    (tmp_path / "b.py").write_text(TRAIN)
    first = _lint([tmp_path / "a.py", tmp_path / "b.py"], cache)
    assert [f.code for f in first.findings] == ["LL001", "LL001"]
    (tmp_path / "b.py").write_text(TRAIN.replace("False", "True"))
    second = _lint([tmp_path / "a.py", tmp_path / "b.py"], cache)
    assert second.stats.cache_hits == 1 and second.stats.cache_stored == 1
    assert [os.path.basename(f.span.path) for f in second.findings] == ["a.py"]


def test_settings_that_change_findings_are_part_of_the_key(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a.py").write_text(TRAIN)
    base = _lint([tmp_path], cache)
    assert base.findings[0].estimate.gpu is None
    other = _lint([tmp_path], cache, settings=Settings(gpu="rtx3090"))
    assert other.stats.cache_hits == 0
    assert other.findings[0].estimate.gpu is not None
    ignored = _lint([tmp_path], cache, settings=Settings(ignore=("LL001",)))
    assert ignored.stats.cache_hits == 0 and ignored.findings == []
    # fail_on is not in the key: it is applied to what is read back
    strict = _lint([tmp_path], cache, settings=Settings(fail_on=Settings().fail_on.ERROR))
    assert strict.stats.cache_hits == 1
    assert strict.fail_on[strict.files[0]].value == "error"


def test_rules_and_lintlora_itself_are_part_of_the_key(tmp_path, monkeypatch):
    from lintlora.engine import available_rules
    from lintlora.discovery import SourceFile

    rules = available_rules()
    source = SourceFile(str(tmp_path / "a.py"), "python", True)
    key = ResultCache(str(tmp_path / "c"), rules).key(source, Settings(), "0" * 64)
    assert ResultCache(str(tmp_path / "c"), rules[:-1]).key(source, Settings(), "0" * 64) != key
    monkeypatch.setattr(cache_module, "_package_state", lambda: "0" * 64)
    assert ResultCache(str(tmp_path / "c"), rules).key(source, Settings(), "0" * 64) != key


def test_a_json_file_the_script_names_is_an_input(tmp_path):
    cache = tmp_path / "cache"
    shutil.copy(os.path.join(FIXTURES, "python", "json_config_file.py"), tmp_path / "train.py")
    (tmp_path / "configs").mkdir()
    config = tmp_path / "configs" / "train_args.json"
    shutil.copy(os.path.join(FIXTURES, "python", "configs", "train_args.json"), config)
    data = json.loads(config.read_text())
    data["gradient_checkpointing"] = False
    config.write_text(json.dumps(data))
    first = _lint([tmp_path / "train.py"], cache)
    assert "LL001" in [f.code for f in first.findings]
    assert _lint([tmp_path / "train.py"], cache).stats.cache_hits == 1
    data["gradient_checkpointing"] = True
    config.write_text(json.dumps(data, indent=1))  # another size: a change the state sees
    third = _lint([tmp_path / "train.py"], cache)
    assert third.stats.cache_hits == 0
    assert "LL001" not in [f.code for f in third.findings]


def test_a_local_model_config_is_an_input(tmp_path):
    cache = tmp_path / "cache"
    model = tmp_path / "my-model"
    model.mkdir()
    hf = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
          "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
          "vocab_size": 32000}
    (model / "config.json").write_text(json.dumps(hf))
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('./my-model')\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    first = _lint([tmp_path / "train.py"], cache)
    peak = first.findings[0].estimate.peak_bytes
    assert peak
    assert _lint([tmp_path / "train.py"], cache).stats.cache_hits == 1
    hf["num_hidden_layers"] = 32
    (model / "config.json").write_text(json.dumps(hf, indent=2))
    second = _lint([tmp_path / "train.py"], cache)
    assert second.stats.cache_hits == 0 and second.findings[0].estimate.peak_bytes > peak


def test_a_model_appearing_in_the_hugging_face_cache_invalidates(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    hub = tmp_path / "hf" / "hub"
    hub.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('someone/unlisted-model')\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    first = _lint([tmp_path / "train.py"], cache)
    assert first.findings[0].estimate.peak_bytes is None  # unknown model
    assert _lint([tmp_path / "train.py"], cache).stats.cache_hits == 1
    snapshot = hub / "models--someone--unlisted-model" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
        "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
        "vocab_size": 32000}))
    second = _lint([tmp_path / "train.py"], cache)
    assert second.stats.cache_hits == 0 and second.findings[0].estimate.peak_bytes


@pytest.mark.parametrize("damage", [
    b"",                                  # empty
    b"\x00\xff garbage",                  # not JSON
    b'{"format": 1}',                     # missing fields
    b"[1, 2, 3]",                         # JSON of another shape
    "foreign",                            # a valid entry of another key
    "types",                              # right key, a finding of the wrong types
    "inputs",                             # right key, an input whose state differs
])
def test_a_corrupt_or_foreign_entry_is_ignored_and_replaced(tmp_path, damage):
    cache = tmp_path / "cache"
    (tmp_path / "a.py").write_text(TRAIN)
    (tmp_path / "b.py").write_text(TRAIN.replace("False", "True"))
    expected = _report(lint_paths([str(tmp_path / "a.py")], keep_setups=False))
    _lint([tmp_path / "a.py"], cache)
    _lint([tmp_path / "b.py"], cache)
    a_entry, b_entry = sorted(_entries(cache), key=lambda p: "LL001" not in open(p).read())
    # an entry is its HMAC (a line of hex), then its JSON; the damaged ones are signed again
    # with the folder's key, so the checks behind the signature are what rejects them
    signature, _, body = open(a_entry, "rb").read().partition(b"\n")
    assert len(signature) == 64
    data = json.loads(body)

    def signed(document) -> bytes:
        import hashlib
        import hmac

        key_file = os.path.join(cache, f"v{cache_module.FORMAT}", cache_module.SECRET_NAME)
        text = json.dumps(document).encode()
        secret = open(key_file, "rb").read()
        return hmac.new(secret, text, hashlib.sha256).hexdigest().encode() + b"\n" + text

    if damage == "foreign":
        raw = open(b_entry, "rb").read()
    elif damage == "types":
        data["result"]["findings"][0]["span"][1] = "seven"
        raw = signed(data)
    elif damage == "inputs":
        data["inputs"] = [[str(tmp_path / "b.py"), ["f", 1, 1]]]
        raw = signed(data)
    else:
        raw = damage
    with open(a_entry, "wb") as handle:
        handle.write(raw)
    again = _lint([tmp_path / "a.py"], cache)
    assert again.stats.cache_hits == 0 and again.stats.cache_stored == 1
    assert _report(again) == expected
    assert _lint([tmp_path / "a.py"], cache).stats.cache_hits == 1  # the entry was rewritten


def test_internal_errors_are_not_cached(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (tmp_path / "a.py").write_text(TRAIN)
    import lintlora.rules.ll001_gradient_checkpointing_off as ll001

    def boom(self, setup, context):
        raise RuntimeError("boom")

    monkeypatch.setattr(ll001.GradientCheckpointingOff, "check", boom)
    broken = _lint([tmp_path], cache)
    assert [e.code for e in broken.errors] == ["LL999"] and broken.stats.cache_stored == 0
    assert _entries(cache) == []


def test_show_setup_runs_do_not_read_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a.py").write_text(TRAIN)
    _lint([tmp_path], cache)
    shown = lint_paths([str(tmp_path)], cache_dir=str(cache), keep_setups=True)
    assert shown.stats.cache_hits == 0 and shown.setups


def test_an_unusable_cache_folder_turns_the_cache_off_and_linting_goes_on(tmp_path):
    (tmp_path / "a.py").write_text(TRAIN)
    (tmp_path / "file").write_text("not a folder")
    result = _lint([tmp_path / "a.py"], tmp_path / "file" / "cache")
    assert [f.code for f in result.findings] == ["LL001"]
    assert result.stats.cache_problem and "running without the cache" in result.stats.cache_problem


def test_results_of_every_fixture_survive_the_json_round_trip():
    result = lint_paths([FIXTURES], keep_setups=False)
    from lintlora.engine import FileResult

    by_path: dict[str, FileResult] = {}
    for finding in result.findings:
        # a cell number belongs to a notebook's result only, or to a Databricks notebook
        # source's, which carries its cell map (lintlora/cache_entry.py)
        kind = "notebook" if finding.span.path.endswith(".ipynb") else "python"
        by_path.setdefault(finding.span.path, FileResult(finding.span.path, kind)
                           ).findings.append(finding)
    assert by_path
    for path, file_result in by_path.items():
        if any(f.span.cell for f in file_result.findings):  # a notebook, or a Databricks source
            file_result.cell_lines = dict(result.cell_lines.get(path, {}))
        encoded = json.loads(json.dumps(encode_result(file_result)))
        # a run's findings may point at its launch file (related locations): the run's other
        # files, as the cache passes them from the entry's inputs
        other = {r.span.path for f in file_result.findings for r in f.related}
        other.update(result.inputs.get(path, ()))
        assert decode_result(encoded, other_paths=tuple(sorted(other))).findings == file_result.findings, path


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "lintlora")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/not/allowed")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "lintlora")


def _cli(*args, cwd, env_cache):
    env = dict(os.environ, XDG_CACHE_HOME=str(env_cache))
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_caches_by_default_and_no_cache_writes_nothing(tmp_path):
    (tmp_path / "a.py").write_text(TRAIN)
    xdg = tmp_path / "xdg"
    off = _cli("a.py", "--no-cache", "--format", "json", cwd=tmp_path, env_cache=xdg)
    assert off.returncode == 1 and not xdg.exists()
    on = _cli("a.py", "--format", "json", cwd=tmp_path, env_cache=xdg)
    assert on.stdout == off.stdout and _entries(xdg / "lintlora")
    other = tmp_path / "elsewhere"
    chosen = _cli("a.py", "--cache-dir", str(other), "--format", "json", cwd=tmp_path,
                  env_cache=xdg)
    assert chosen.stdout == off.stdout and _entries(other)
    assert (other / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
