"""LL900 does not call a suppression unused because this run's settings silenced its rule.

``fp16=True,  # noqa: LL002`` is needed with ``--gpu rtx3090`` and looks unused with ``--gpu
t4`` (LL002 is silent on GPUs without bfloat16); teams lint with different GPUs. Rules declare
whether their firing depends on the run's settings (``Rule.depends_on_settings``); only the
codes of rules that do not are reported unused. Real extractors and rules here.
"""

from __future__ import annotations

import textwrap

import pytest

from lintlora.engine import available_rules, lint_paths
from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.settings import Settings
from lintlora.suppression import UnusedSuppression

FP16 = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
args = TrainingArguments(
    output_dir="out",
    gradient_checkpointing=True,
    fp16=True,  {comment}
)
Trainer(model=model, args=args).train()
"""


def _codes(tmp_path, text, **settings):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text))
    result = lint_paths([str(path)], Settings(**settings))
    assert not result.errors, result.errors
    return [(f.code, f.span.line) for f in result.findings]


@pytest.mark.parametrize("comment", ["# noqa: LL002", "# lintlora: ignore[LL002]",
                                     "# lintlora: ignore"])
@pytest.mark.parametrize("gpu", ["t4", "rtx3090", None])
def test_a_gpu_dependent_suppression_is_never_unused(tmp_path, comment, gpu):
    found = _codes(tmp_path, FP16.format(comment=comment), gpu=gpu)
    assert ("LL900", 6) not in found and ("LL002", 6) not in found, found


def test_the_same_comment_is_needed_on_another_gpu(tmp_path):
    """The reason: without the comment, rtx3090 reports LL002 where t4 does not."""
    bare = FP16.format(comment="")
    assert ("LL002", 6) in _codes(tmp_path, bare, gpu="rtx3090")
    assert ("LL002", 6) not in _codes(tmp_path, bare, gpu="t4")


def test_a_stale_suppression_of_a_file_only_rule_is_still_reported(tmp_path):
    found = _codes(tmp_path, """\
        import torch
        torch.cuda.empty_cache()  # noqa: LL006
        x = 1  # lintlora: ignore[LL004]
    """)
    assert ("LL900", 2) in found and ("LL900", 3) in found


def test_which_rules_depend_on_settings():
    declared = {getattr(r, "code", ""): r.depends_on_settings for r in available_rules()
                if getattr(r, "code", "").startswith("LL")}
    # LL001: the estimate (model); LL002: the GPU; LL003: the architecture; LL007: --cpus;
    # LL008: the GPU and the estimate; LL010: the GPU; LL012: the architecture; LL013: the
    # transformers version (--assume-version); LL015: the model name (--model); LL017: the GPU
    # and the architecture; LL018: the architecture and the transformers version; LL020/LL021:
    # the TRL/transformers version
    assert {c for c, d in declared.items() if d} == {"LL001", "LL002", "LL003", "LL007", "LL008",
                                                      "LL010", "LL012", "LL013", "LL015", "LL017",
                                                      "LL018", "LL020", "LL021"}
    assert not UnusedSuppression.depends_on_settings


class _PluginRule(Rule):
    """A plugin that declares nothing: assumed to depend on settings (the safe answer)."""

    code = "XP001"
    name = "xp"
    severity = Severity.WARNING
    summary = "x"

    def check(self, setup, context):
        return ()


class _FileOnlyPlugin(_PluginRule):
    code = "XP002"
    depends_on_settings = False


def test_plugins_depend_on_settings_unless_they_say_not(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1  # noqa: XP001\ny = 2  # noqa: XP002\n")
    result = lint_paths([str(path)], rules=[_PluginRule, _FileOnlyPlugin, UnusedSuppression])
    assert [(f.code, f.span.line) for f in result.findings] == [("LL900", 2)]
    assert isinstance(result.findings[0], Finding) and "XP002" in result.findings[0].message
