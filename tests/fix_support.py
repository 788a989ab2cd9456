"""Test-only rules with autofixes (issue 17), so the ``--fix`` path runs end to end whatever the
built-in rules offer: ``TX001`` (safe) renames a literal ``fp16=True`` keyword to ``bf16`` (in
YAML: sets ``bf16: true`` by replacing the ``fp16`` key); ``TX002`` (unsafe) sets LoRA ``r`` to
8 in place."""

from __future__ import annotations

from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin


class Fp16ToBf16(Rule):
    code = "TX001"
    name = "test-fp16"
    severity = Severity.WARNING
    summary = "test rule: fp16 -> bf16"
    fixes = {"use bf16": FixSafety.SAFE}

    def check(self, setup, context):
        s = setup.get("training.fp16")
        if s.value is not True or s.origin is not Origin.LITERAL or s.key_span is None:
            return
        k = s.key_span
        fix = Fix("use bf16", FixSafety.SAFE, (EditOp("replace", k, "bf16"),))
        yield Finding(self.code, self.name, self.severity, s.span, "fp16 on a bf16 GPU",
                      fix="use bf16=True", autofix=fix)


class LoraRank(Rule):
    code = "TX002"
    name = "test-rank"
    severity = Severity.INFO
    summary = "test rule: r -> 8"
    fixes = {"set r=8": FixSafety.UNSAFE}

    def check(self, setup, context):
        s = setup.get("lora.r")
        if s.origin is not Origin.LITERAL or s.span is None or s.value == 8:
            return
        fix = Fix("set r=8", FixSafety.UNSAFE, (EditOp("replace", s.span, "8"),))
        yield Finding(self.code, self.name, self.severity, s.span, "rank", fix="r=8",
                      autofix=fix)


TEST_RULES = [Fp16ToBf16, LoraRank]


def install(monkeypatch) -> None:
    """The engine's rules: LL000 and the test rules only."""
    import lintlora.engine
    from lintlora.rules.ll000_syntax_error import SyntaxErrorRule
    from lintlora.suppression import UnusedSuppression

    monkeypatch.setattr(lintlora.engine, "available_rules",
                        lambda: [SyntaxErrorRule, *TEST_RULES, UnusedSuppression])
