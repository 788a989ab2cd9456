"""The rule registry: entry points, the built-in fallback, plugin problems, metadata, import cost."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lintlora.rules as registry
from lintlora.findings import Severity
from lintlora.rules import BUILTIN_RULES, DuplicateRuleError, find_rule, load_problems, load_rules
from lintlora.training_setup import TrainingSetup

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = {
    "LL000": "syntax-error",
    "LL001": "gradient-checkpointing-off",
    "LL002": "fp16-instead-of-bf16",
    "LL003": "broad-target-modules",
    "LL004": "no-trainable-parameter-report",
    "LL005": "device-map",
    "LL006": "empty-cache-misuse",
    "LL007": "dataloader-workers",
    "LL008": "does-not-fit",
    "LL009": "checkpointing-without-input-grads",
    "LL010": "precision-unsupported-by-gpu",
    "LL011": "fp16-trainable-weights",
    "LL012": "target-modules-unmatched",
    "LL013": "base-loaded-in-fp32",
    "LL014": "compute-dtype-fp32",
    "LL015": "kbit-prep-unquantized",
    "LL016": "quantized-without-adapter",
    "LL017": "fp16-overflow-model",
    "LL018": "gemma-eager-attention",
    "LL019": "pad-token-is-eos",
    "LL020": "trl-max-length",
    "LL021": "compute-loss-signature",
    "LL022": "eval-logits-on-gpu",
    "LL023": "collator-columns-dropped",
    "LL024": "sharded-qlora-quant-storage",
    "LL025": "deepspeed-config-mismatch",
}


@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test starts and ends with a re-read registry (plugins patched in do not leak)."""
    load_rules(refresh=True)
    yield
    load_rules(refresh=True)


def test_codes_and_names_are_exact_and_sorted():
    rules = load_rules()
    assert [(r.code, r.name) for r in rules] == sorted(EXPECTED.items())


def test_builtin_table_equals_pyproject_entry_points():
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover
        import tomli as tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    table = data["project"]["entry-points"]["lintlora.rules"]
    assert table == dict(BUILTIN_RULES)


def test_metadata_is_complete():
    for rule in load_rules():
        assert re.fullmatch(r"LL\d{3}", rule.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
        assert isinstance(rule.severity, Severity)
        assert rule.summary and len(rule.summary) <= 100 and not rule.summary.endswith(".")
        assert rule.help_uri().endswith(f"rules/{rule.code}.md")
        assert rule.__doc__ and sys.modules[rule.__module__].__doc__


def test_rules_never_raise_on_sparse_setups():
    from rules_support import ctx

    sparse = [
        TrainingSetup("x.py"),
        TrainingSetup("x.yaml", kind="yaml", framework="axolotl"),
        TrainingSetup("x.py", framework="torch", is_training=False),
    ]
    for rule in load_rules():
        for s in sparse:
            list(rule().check(s, ctx()))
            list(rule().check(s, ctx(known_model=False)))


def test_find_rule():
    assert find_rule("ll003").name == "broad-target-modules"
    assert find_rule("LL999") is None


def _write_plugin(tmp_path: Path, body: str) -> None:
    (tmp_path / "fake_plugin_rules.py").write_text(textwrap.dedent(body))


PLUGIN = """
    from lintlora.rules.base import Rule
    from lintlora.findings import Severity

    class Good(Rule):
        code = "XP001"
        name = "example-plugin"
        severity = Severity.INFO
        summary = "An example plugin rule"
        def check(self, setup, context):
            return ()

    class Clash(Good):
        code = "LL001"
        name = "clash"

    class NotARule:
        code = "XP002"
"""


def test_plugins_are_added_and_problems_reported(tmp_path, monkeypatch):
    _write_plugin(tmp_path, PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_entry_points", lambda: [
        ("LL001", BUILTIN_RULES[1][1]),  # the built-in's own entry point: not a duplicate
        ("XP001", "fake_plugin_rules:Good"),
        ("XP002", "fake_plugin_rules:NotARule"),
        ("XP003", "no_such_module_anywhere:Rule"),
    ])
    codes = [r.code for r in load_rules(refresh=True)]
    assert codes == sorted(list(EXPECTED) + ["XP001"])
    problems = {p.name: p.message for p in load_problems()}
    assert "not a subclass" in problems["XP002"]
    assert "failed to import" in problems["XP003"] and "no_such_module_anywhere" in problems["XP003"]
    assert str(load_problems()[0]).startswith("rule plugin ")


def test_two_classes_with_one_code_is_a_clear_error(tmp_path, monkeypatch):
    _write_plugin(tmp_path, PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    # A context of its own: the patch is undone before fresh_registry re-reads the registry at
    # teardown (the shared monkeypatch is torn down after it).
    with monkeypatch.context() as patch:
        patch.setattr(registry, "_entry_points", lambda: [("LL001", "fake_plugin_rules:Clash")])
        with pytest.raises(DuplicateRuleError) as err:
            load_rules(refresh=True)
    assert "LL001" in str(err.value)
    assert "fake_plugin_rules:Clash" in str(err.value)
    assert "ll001_gradient_checkpointing_off:GradientCheckpointingOff" in str(err.value)


def test_loading_rules_imports_no_heavy_module():
    code = ("import sys, lintlora.rules as r; r.load_rules(); "
            "print(sorted(m for m in ('libcst', 'yaml', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
