"""Issue 17's acceptance matrix: for every fixable rule, a fixture per style it applies to.

Styles (:data:`STYLES`): HF Trainer, TRL, plain torch, notebook and the YAML dialects
(axolotl, LLaMA-Factory, torchtune, litgpt). For each (fixable rule, style) exactly one holds:

- a pinned fixture ``fixtures/fix/<CODE>/<style>.<ext>`` whose ``--fix`` output
  (``<style>.fixed.<ext>``) and ops ``tests/test_rule_fixes.py`` checks byte for byte, with the
  finding gone on a second lint;
- a ``<style>.nofix.<ext>`` fixture listed in :data:`NO_FIX` with the reason no edit is right
  in general there: the finding fires and carries no autofix (checked here), and the rule page's
  Fix line says so;
- a reason in :data:`DOES_NOT_APPLY`: the rule does not report in that style at all;
- a reason in :data:`OPEN`: not covered yet, said so (the report lists these).

A rule that becomes fixable, or a fixture removed, fails :func:`test_every_cell_is_pinned_or_has_a_reason`
until its cells are filled or given a reason, so the matrix cannot rot silently.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rules_support import ROOT, lint, read_header, settings_from_args

FIXTURES = ROOT / "fixtures" / "fix"

STYLES = {"trainer": ".py", "trl": ".py", "torch": ".py", "notebook": ".ipynb", "axolotl": ".yml",
          "llama_factory": ".yaml", "torchtune": ".yaml", "litgpt": ".yaml"}
"""Style name -> the fixture file's extension."""

_PYTHON = ("trainer", "trl", "torch", "notebook")
_CONFIGS = ("axolotl", "llama_factory", "torchtune", "litgpt")

NO_FIX = {
    ("LL001", "litgpt"): "litgpt's LoRA recipe has no checkpointing key: it checkpoints only on several devices, "
                         "so the change is to the run, not one value",
}
"""(rule, style) -> why the finding there carries no autofix (a ``<style>.nofix.<ext>`` fixture)."""

DOES_NOT_APPLY = {
    **{("LL004", s): "config frameworks report the trainable parameters themselves; the rule reads Python only"
       for s in _CONFIGS},
    **{("LL006", s): "a config has no code to call torch.cuda.empty_cache()" for s in _CONFIGS},
    ("LL007", "torchtune"): "the torchtune dialect reads no DataLoader worker count "
                            "(lintlora/extract/dialects/torchtune.py)",
    ("LL008", "torch"): "a hand-written loop's batch (a DataLoader's batch_size) is no estimator input: "
                        "LL008 stays silent (tried: a 7B at batch 16 x 2048 tokens on 24 GB)",
    ("LL009", "trl"): "TRL's trainers make the inputs require grad and default to non-reentrant checkpointing "
                      "(trl sft_trainer.py): the rule stays silent",
    **{("LL009", s): "the config frameworks wire checkpointing themselves; the rule reads Python only"
       for s in _CONFIGS},
    ("LL012", "torchtune"): "torchtune's LoRA names its layers by the builder's fixed names (lora_attn_modules); "
                            "LL012 does not report there",
    ("LL012", "litgpt"): "litgpt's LoRA picks layers by lora_* switches, not module names",
    **{("LL014", s): "the config frameworks derive the 4-bit compute dtype from their precision keys (axolotl, "
                     "LLaMA-Factory) or quantize without bitsandbytes (torchtune); the rule is silent on configs"
       for s in _CONFIGS},
    **{("LL020", s): "SFTConfig's max_seq_length is TRL's keyword: only TRL scripts and notebooks use it"
       for s in ("trainer", "torch", *_CONFIGS)},
    ("LL024", "axolotl"): "axolotl sets bnb_4bit_quant_storage itself (ModelLoader._set_quantization_config); "
                          "the rule is silent",
    ("LL024", "llama_factory"): "LLaMA-Factory sets bnb_4bit_quant_storage to the compute dtype itself; the rule "
                                "is silent",
    ("LL024", "torchtune"): "torchtune's QLoRA quantizes with its own NF4 tensors, not bitsandbytes",
    ("LL024", "litgpt"): "litgpt refuses --quantize on more than one device (litgpt/finetune/lora.py: "
                         "'Quantization is currently not supported for multi-GPU training'), so never sharded",
}
"""(rule, style) -> why the rule does not report in that style."""

OPEN = {
    ("LL024", "torch"): "no fixture yet: a hand-written FSDP(...) wrap is not read as a sharded run",
}
"""(rule, style) -> a cell not covered yet, and why (listed in the issue's report)."""


def _fixable_rules():
    from lintlora.engine import available_rules

    return sorted((r for r in available_rules() if r.__module__.startswith("lintlora.") and r.fixes),
                  key=lambda r: r.code)


def _pinned(code: str, style: str) -> Path:
    return FIXTURES / code / f"{style}{STYLES[style]}"


def _nofix(code: str, style: str) -> Path:
    return FIXTURES / code / f"{style}.nofix{STYLES[style]}"


def test_every_cell_is_pinned_or_has_a_reason():
    missing, doubled = [], []
    for rule in _fixable_rules():
        for style in STYLES:
            cell = (rule.code, style)
            have = [_pinned(*cell).is_file(), _nofix(*cell).is_file() and cell in NO_FIX,
                    cell in DOES_NOT_APPLY, cell in OPEN]
            if not any(have):
                missing.append(f"{rule.code}/{style}")
            elif sum(have) > 1:
                doubled.append(f"{rule.code}/{style}")
    assert missing == [], f"fixable rules with a style neither pinned nor given a reason: {missing}"
    assert doubled == [], f"cells both pinned and given a reason (drop the stale reason): {doubled}"


def test_every_listed_reason_names_a_fixable_rule_and_a_style():
    codes = {r.code for r in _fixable_rules()}
    for cell in (*NO_FIX, *DOES_NOT_APPLY, *OPEN):
        assert cell[0] in codes and cell[1] in STYLES, cell
    for cell in NO_FIX:
        assert _nofix(*cell).is_file(), f"{cell}: no {_nofix(*cell).name} fixture"
    for path in FIXTURES.rglob("*.nofix.*"):
        assert (path.parent.name, path.name.split(".")[0]) in NO_FIX, f"{path}: no reason in NO_FIX"


@pytest.mark.parametrize("cell", sorted(NO_FIX), ids=lambda c: f"{c[0]}-{c[1]}")
def test_a_finding_without_a_fix_carries_none_and_its_page_says_why(cell):
    code, style = cell
    path = _nofix(code, style)
    result = lint(path, settings_from_args(read_header(path)["args"] or ""))
    findings = [f for f in result.findings if f.code == code]
    assert findings, f"{path}: no {code} finding"
    assert all(f.autofix is None for f in findings), [f.autofix for f in findings]
    page = (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8")
    fix_line = re.search(r"^\*\*Fix:\*\* (.*)$", page, re.M).group(1)
    assert "No fix for" in fix_line, f"{code}: the page does not say where no fix is offered"


def test_each_fixable_rule_has_a_python_and_where_it_applies_a_config_fixture():
    """No rule is fixable in name only: every one pins at least one Python style."""
    for rule in _fixable_rules():
        assert any(_pinned(rule.code, s).is_file() for s in _PYTHON), rule.code


_ALIASED = '''\
import torch as t
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb,
                                             torch_dtype=t.bfloat16)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True,
                         gradient_checkpointing_kwargs={"use_reentrant": False},
                         fsdp="full_shard auto_wrap")
Trainer(model=model, args=args, train_dataset=train_dataset).train()
'''


@pytest.mark.parametrize("variant", ["aliased", "no load dtype"])
def test_dtype_fixes_are_not_offered_where_the_spelling_or_the_dtype_is_unknown(variant, tmp_path):
    """LL014/LL024 write ``torch.<dtype>``: a file that names torch otherwise (``import torch
    as t``) gets no fix (no import is added, the spelling is not guessed), nor does LL024 when
    the load gives no dtype (the storage must be the dtype the author loads in). Their pages
    say so."""
    text = _ALIASED if variant == "aliased" else _ALIASED.replace(",\n                                             torch_dtype=t.bfloat16)", ")")
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    found = {f.code: f for f in lint(path, settings_from_args("--gpu a100-80gb")).findings}
    assert {"LL014", "LL024"} <= set(found), sorted(found)
    assert found["LL014"].autofix is None and found["LL024"].autofix is None
    for code in ("LL014", "LL024"):
        page = (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8")
        assert "import torch as t" in re.search(r"^\*\*Fix:\*\* (.*)$", page, re.M).group(1)
