"""The engine with stand-in extractors and rules: isolation, selection, determinism, reading."""

from __future__ import annotations

import codecs
import os
import random
import sys

import pytest

import engine_stubs
from lintlora.engine import (
    RunResult,
    lint_paths,
    read_setups,
    rule_enabled,
)
from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.findings import Severity
from lintlora.settings import Settings


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    engine_stubs.install(monkeypatch)


def _write(path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _codes(result):
    return [(os.path.basename(f.span.path), f.code, f.span.line) for f in result.findings]


def test_findings_from_every_file_sorted(tmp_path):
    _write(tmp_path / "b.py", "x = 1\nbad()\n")
    _write(tmp_path / "a.py", "bad()\nargs = TrainingArguments(gradient_checkpointing=False)\n")
    result = lint_paths([str(tmp_path)], Settings(select=("TS001", "TS002")))
    assert _codes(result) == [("a.py", "TS001", 1), ("a.py", "TS002", 2), ("b.py", "TS001", 2)]
    assert [os.path.basename(p) for p in result.files] == ["a.py", "b.py"]
    assert result.exit_code() == 1


def test_ignored_syntax_error_leaves_a_notice(tmp_path):
    """With LL000 ignored the file still could not be parsed: a notice (code LL000) says so,
    so the report does not read as a clean check; no finding, exit status 0."""
    _write(tmp_path / "a.py", "def f(:\n  pass\n")
    for settings in (Settings(ignore=("LL000",)),
                     Settings(per_file_ignores=(("a.py", ("LL000",)),))):
        result = lint_paths([str(tmp_path / "a.py")], settings)
        assert result.findings == [] and result.exit_code() == 0
        (notice,) = result.notices
        assert notice.code == "LL000" and notice.line == 1
        assert "could not be parsed" in notice.message and "nothing in this file was checked" \
            in notice.message
    assert lint_paths([str(tmp_path / "a.py")], Settings()).notices == []


def test_syntax_error_is_ll000_and_others_still_linted(tmp_path):
    _write(tmp_path / "a.py", "def f(:\n  pass\n")
    _write(tmp_path / "b.py", "bad()\n")
    result = lint_paths([str(tmp_path)], Settings(select=("TS001",)))
    assert _codes(result) == [("a.py", "LL000", 1), ("b.py", "TS001", 1)]
    ll000 = result.findings[0]
    assert ll000.severity is Severity.ERROR and ll000.name == "syntax-error"
    assert ll000.span.column >= 1
    assert result.exit_code() == 1


def test_crashing_rule_is_ll999_and_others_still_run(tmp_path):
    _write(tmp_path / "a.py", "crash()\nbad()\n")
    _write(tmp_path / "b.py", "bad()\n")
    result = lint_paths([str(tmp_path)])
    assert [(os.path.basename(e.path), e.code) for e in result.errors] == [("a.py", "LL999")]
    message = result.errors[0].message
    assert "rule TS009 crashy" in message and "ValueError: boom" in message
    assert "please report" in message and "engine_stubs.py" in message
    assert ("a.py", "TS001", 2) in _codes(result) and ("b.py", "TS001", 1) in _codes(result)
    assert result.exit_code() == 2


def test_crashing_extractor_is_ll999(tmp_path, monkeypatch):
    def boom(path, text):
        raise KeyError("oops")

    monkeypatch.setattr(sys.modules["lintlora.extract.python"], "extract_python", boom)
    _write(tmp_path / "a.py", "bad()\n")
    _write(tmp_path / "c.yaml", "gradient_checkpointing: false\n")
    result = lint_paths([str(tmp_path)], Settings(select=("TS002",)))
    assert [e.code for e in result.errors] == ["LL999"]
    assert "the python extractor" in result.errors[0].message
    assert _codes(result) == [("c.yaml", "TS002", 1)]
    assert result.exit_code() == 2


def test_crash_in_estimator_is_named(tmp_path, monkeypatch):
    import lintlora.estimate as estimate_pkg

    fake = type(sys)("lintlora.estimate.fake_boom")
    fake.__file__ = os.path.join(os.path.dirname(estimate_pkg.__file__), "fake_boom.py")
    code = compile("def explode():\n    raise ZeroDivisionError('division')\n", fake.__file__, "exec")
    exec(code, fake.__dict__)  # a function whose frame looks like the estimator's

    from engine_stubs import BadCallRule

    class UsesEstimator(BadCallRule):
        code = "TS004"

        def check(self, setup, context):
            fake.explode()

    _write(tmp_path / "a.py", "bad()\n")
    result = lint_paths([str(tmp_path)], rules=[UsesEstimator])
    assert "the estimator (while running rule TS004 bad-call)" in result.errors[0].message


def test_unreadable_and_vanished_files(tmp_path, monkeypatch):
    good = _write(tmp_path / "good.py", "bad()\n")
    locked = _write(tmp_path / "locked.py", "bad()\n")
    gone = _write(tmp_path / "gone.py", "bad()\n")
    os.chmod(locked, 0)
    import lintlora.engine as engine

    real_discover = engine.discover

    def discover_then_delete(paths, is_excluded=None):
        files, missing = real_discover(paths, is_excluded)
        os.remove(gone)
        return files, missing

    monkeypatch.setattr(engine, "discover", discover_then_delete)
    try:
        result = lint_paths([str(tmp_path)], Settings(select=("TS001",)))
    finally:
        os.chmod(locked, 0o644)
    errors = {os.path.basename(e.path): (e.code, e.message) for e in result.errors}
    assert errors["gone.py"][0] == "LL998" and "not found" in errors["gone.py"][1]
    if os.geteuid() != 0:  # root reads anything
        assert errors["locked.py"][0] == "LL998" and "cannot read" in errors["locked.py"][1]
    assert ("good.py", "TS001", 1) in _codes(result)
    assert result.exit_code() == 1


def test_size_limit(tmp_path):
    _write(tmp_path / "big.py", "bad()\n" + "x = 1\n" * 5000)
    result = lint_paths([str(tmp_path)], Settings(max_file_bytes=1000))
    assert [e.code for e in result.errors] == ["LL998"]
    assert "above the 1.0 KiB limit" in result.errors[0].message
    assert "--max-file-size" in result.errors[0].message
    assert result.errors[0].message.startswith("file is ")  # its own words, no "cannot read:"
    assert result.findings == []


@pytest.mark.parametrize("data,line,words", [
    (b"x = 1\n\x00\x01\x02", 2, ["NUL", "binary"]),
    (b"x = 1\ns = '\xe9t\xe9'\n", 2, ["0xe9", "utf-8", "coding line"]),
    (b"s = '\xe9'\n", 1, ["0xe9", "utf-8", "coding line"]),
    (b"# -*- coding: nosuch -*-\nx = 1\n", 1, ["unknown encoding: nosuch", "coding line"]),
])
def test_undecodable_python_is_ll000(tmp_path, data, line, words):
    _write(tmp_path / "a.py", data)
    result = lint_paths([str(tmp_path)])
    assert [(f.code, f.span.line) for f in result.findings] == [("LL000", line)]
    for word in words:
        assert word in result.findings[0].message


@pytest.mark.parametrize("encoding,words", [
    ("utf-16", ["UTF-16 (little-endian)"]),  # Python's utf-16 codec writes a little-endian BOM
    ("utf-16-be", ["UTF-16 (big-endian)"]),
    ("utf-32", ["UTF-32 (little-endian)"]),  # its BOM starts with UTF-16-LE's: not mistaken
])
def test_utf16_or_32_python_is_named_not_called_binary(tmp_path, encoding, words):
    """A UTF-16/32 script is text Python cannot run (PEP 263: encodings must be
    ASCII-compatible); said so at 1:1, not "NUL bytes: binary" at the first NUL's column."""
    bom = {"utf-16-be": codecs.BOM_UTF16_BE}.get(encoding, b"")
    _write(tmp_path / "a.py", bom + "import torch\nbad()\n".encode(encoding))
    result = lint_paths([str(tmp_path)])
    [finding] = result.findings
    assert (finding.code, finding.span.line, finding.span.column) == ("LL000", 1, 1)
    for word in [*words, "byte-order mark", "PEP 263", "save it as UTF-8"]:
        assert word in finding.message
    assert "binary" not in finding.message


def test_pep263_and_bom_are_decoded(tmp_path):
    _write(tmp_path / "latin.py", "# -*- coding: latin-1 -*-\ns = 'é'\nbad()\n".encode("latin-1"))
    _write(tmp_path / "bom.py", b"\xef\xbb\xbfbad()\r\nx = 1\r\n")
    result = lint_paths([str(tmp_path)], Settings(select=("TS001",)))
    assert _codes(result) == [("bom.py", "TS001", 1), ("latin.py", "TS001", 3)]
    assert result.errors == []


def test_yaml_not_a_training_config(tmp_path):
    other = _write(tmp_path / "ci.yaml", "on: push\n")
    result = lint_paths([str(tmp_path)])
    assert result.notices == [] and result.findings == [] and result.files == []
    result = lint_paths([str(other)])
    assert [n.message for n in result.notices] == ["not a training config (no known dialect); skipped"]
    assert result.exit_code() == 0


def test_not_a_training_config_is_noted_only_when_it_is_the_one_path(tmp_path):
    """pre-commit names every staged YAML file: with other paths, one that is no training config
    (named or found, parsable or not) is skipped quietly; alone, or with ``verbose``, noted."""
    ci = _write(tmp_path / "ci.yaml", "on: push\n")
    helm = _write(tmp_path / "chart.yaml", "metadata:\n  name: {{ .Release.Name }}\n\tbad: [\n")
    script = _write(tmp_path / "a.py", "bad()\n")
    paths = [str(ci), str(helm), str(script)]
    assert lint_paths(paths).notices == []
    assert lint_paths([str(tmp_path)]).notices == []
    noted = lint_paths(paths, verbose=True).notices
    assert sorted(os.path.basename(n.path) for n in noted) == ["chart.yaml", "ci.yaml"]
    assert all(n.message.startswith("not a training config") for n in noted)
    for alone in (ci, helm):
        (notice,) = lint_paths([str(alone)]).notices
        assert notice.message.startswith("not a training config")
    # other notices are not filtered
    other = lint_paths([str(_write(tmp_path / "notes.txt", "x")), str(script)]).notices
    assert ["not a file type" in n.message for n in other] == [True]


def test_explicit_unsupported_file_is_a_notice(tmp_path):
    f = _write(tmp_path / "notes.txt", "bad()\n")
    result = lint_paths([str(f)])
    assert result.findings == [] and result.errors == []
    assert "not a file type lintlora reads" in result.notices[0].message


def test_select_ignore_extend_per_file(tmp_path):
    s = Settings(select=("TS00",), ignore=("TS002",))
    assert rule_enabled("TS001", s, "a.py") and not rule_enabled("TS002", s, "a.py")
    assert rule_enabled("LL000", s, "a.py")  # syntax errors are always selected...
    assert not rule_enabled("LL000", Settings(ignore=("LL000",)), "a.py")  # ...unless ignored
    s = Settings(select=("TS001",), extend_select=("TS003",))
    assert rule_enabled("TS003", s, "a.py") and not rule_enabled("TS002", s, "a.py")
    assert rule_enabled("TS002", Settings(select=("ALL",)), "a.py")
    s = Settings(per_file_ignores=(("tests/*", ("TS001",)),))
    assert not rule_enabled("TS001", s, "tests/x.py") and rule_enabled("TS001", s, "src/x.py")


def test_per_file_ignores_in_a_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "tests" / "t.py", "bad()\n")
    _write(tmp_path / "src" / "s.py", "bad()\n")
    result = lint_paths(["."], Settings(per_file_ignores=(("tests/*", ("TS001",)),)))
    assert _codes(result) == [("s.py", "TS001", 1)]


def test_fail_on(tmp_path):
    _write(tmp_path / "a.py", "args = TrainingArguments(per_device_train_batch_size=1)\n")
    info_only = lint_paths([str(tmp_path)], Settings(select=("TS003",)))
    assert [f.severity for f in info_only.findings] == [Severity.INFO]
    assert info_only.exit_code() == 1
    assert info_only.exit_code(Severity.WARNING) == 0
    warning = lint_paths([str(tmp_path)], Settings(select=("TS003",), fail_on=Severity.WARNING))
    assert warning.exit_code() == 0
    _write(tmp_path / "a.py", "bad()\n")
    assert lint_paths([str(tmp_path)], Settings(fail_on=Severity.WARNING)).exit_code() == 1
    assert lint_paths([str(tmp_path)], Settings(fail_on=Severity.ERROR)).exit_code() == 0


def test_settings_for_each_path(tmp_path):
    _write(tmp_path / "strict" / "a.py", "bad()\n")
    _write(tmp_path / "lax" / "b.py", "bad()\n")

    def settings_for(path):
        return Settings(ignore=("TS001",)) if "lax" in path else Settings()

    result = lint_paths([str(tmp_path)], settings_for=settings_for)
    assert _codes(result) == [("a.py", "TS001", 1)]


def test_exclude_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "legacy" / "a.py", "bad()\n")
    named = _write(tmp_path / "gen_b.py", "bad()\n")
    _write(tmp_path / "c.py", "bad()\n")
    result = lint_paths([".", str(named)], Settings(exclude=("legacy", "gen_*")))
    assert _codes(result) == [("c.py", "TS001", 1)]


def test_duplicate_findings_across_setups_reported_once(tmp_path, monkeypatch):
    real = engine_stubs.stub_extract_python
    monkeypatch.setattr(sys.modules["lintlora.extract.python"], "extract_python",
                        lambda path, text: real(path, text) * 2)
    _write(tmp_path / "a.py", "bad()\n")
    result = lint_paths([str(tmp_path)], Settings(select=("TS001",)))
    assert _codes(result) == [("a.py", "TS001", 1)]
    assert len(result.setups[str(tmp_path / "a.py")]) == 2


def test_model_override_applied_to_setups(tmp_path):
    _write(tmp_path / "a.py", "bad()\n")
    result = lint_paths([str(tmp_path)], Settings(model="org/model"))
    (setup,) = result.setups[str(tmp_path / "a.py")]
    assert setup.get("model.name_or_path").value == "org/model"


def test_read_setups_dispatch_and_errors(tmp_path):
    py = _write(tmp_path / "a.py", "bad()\n")
    assert read_setups(str(py))[0].calls[0].kind == "bad"
    with pytest.raises(ExtractError):
        read_setups(str(_write(tmp_path / "b.py", "def (\n")))
    with pytest.raises(NotATrainingConfig):
        read_setups(str(_write(tmp_path / "c.yml", "on: push\n")))
    with pytest.raises(OSError):
        read_setups(str(tmp_path / "missing.py"))
    with pytest.raises(OSError, match="limit"):
        read_setups(str(py), Settings(max_file_bytes=2))
    with pytest.raises(OSError, match="not a file type"):
        read_setups(str(_write(tmp_path / "d.txt", "x")))


def test_output_identical_whatever_the_discovery_order(tmp_path, monkeypatch):
    for i in range(12):
        _write(tmp_path / f"d{i % 3}" / f"f{i}.py", "bad()\n" * (i % 4 + 1))
    from lintlora.report.json_out import to_json

    monkeypatch.chdir(tmp_path)
    baseline = to_json(lint_paths(["."]))
    import lintlora.engine as engine

    real_discover = engine.discover

    def shuffled(paths, is_excluded=None):
        files, missing = real_discover(paths, is_excluded)
        random.shuffle(files)
        return files, missing

    monkeypatch.setattr(engine, "discover", shuffled)
    for _ in range(3):
        assert to_json(lint_paths(["."])) == baseline


def test_run_result_exit_code_defaults():
    assert RunResult().exit_code() == 0
