"""Regressions from trying ``--fix`` on real public training scripts and configs (issue 17's
"fix trial", ``bench/trials/fix_trial.py``). Each fixture under ``fixtures/fix_trial/`` is a real
file (or a trimmed copy of one) whose source and commit its header or ``README.md`` names; the
``.fixed`` file beside it is what ``lintlora --fix`` must write, byte for byte.

Checked per case: the fixed file is the pinned one and parses (LibCST, ``yaml.safe_load_all``,
JSON and each code cell), a second ``--fix`` changes nothing, and a lint of the fixed file
reports none of the codes fixed. Then the defects themselves: the safety of a fix where the
real file shows it could break the run, and fixes that must not be offered at all.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import libcst
import pytest
import yaml
from click.testing import CliRunner

from lintlora.cli_app import app

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "fix_trial"


def _project(tmp_path: Path, *names: str) -> Path:
    """A project folder (``.git`` marks its top) holding copies of the fixtures ``names``."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    for name in names:
        source = FIXTURES / name
        target = tmp_path / source.name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
    return tmp_path


def _invoke(monkeypatch, folder: Path, *args: str):
    monkeypatch.chdir(folder)
    return CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False)


def _findings(monkeypatch, folder: Path, *args: str) -> list[dict]:
    result = _invoke(monkeypatch, folder, "--format", "json", *args)
    return json.loads(result.stdout)["findings"]


def _parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        libcst.parse_module(text)
    elif path.suffix in (".yaml", ".yml"):
        list(yaml.safe_load_all(text))
    elif path.suffix == ".ipynb":
        for cell in json.loads(text)["cells"]:
            if cell["cell_type"] == "code":
                libcst.parse_module("".join(cell["source"]))


def _fixed_name(name: str) -> str:
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}.fixed.{suffix}"


CASES = [
    # (fixture, flags, codes the fix removes)
    ("trl_sft_get_peft_config.py", ("--gpu", "a100-80gb"), {"LL004"}),
    ("nemotron_gc_off.ipynb", ("--gpu", "a100-80gb", "--unsafe-fixes"), {"LL001"}),
    ("torchtune_llama2_7B_lora.yaml", ("--gpu", "a100-80gb"), {"LL001"}),
    ("torchtune_mistral_7B_lora_single_device.yaml", ("--gpu", "a100-80gb", "--unsafe-fixes"),
     {"LL003"}),
    ("litgpt_gemma_2b_lora.yaml", ("--gpu", "a100-80gb", "--unsafe-fixes"), {"LL003"}),
    ("axolotl_lfm2_vl_lora.yaml", ("--gpu", "t4"), set()),
    ("grpo_qwen3_vl_fp16_t4.ipynb", ("--gpu", "t4", "--unsafe-fixes"), {"LL017", "LL004"}),
    ("llama_factory_qwen3_lora_sft.yaml", ("--gpu", "t4", "--unsafe-fixes"), {"LL010"}),
    ("grpo_trl_lora_qlora_t4.ipynb", ("--gpu", "t4", "--unsafe-fixes"), {"LL017", "LL010", "LL004"}),
]


@pytest.mark.parametrize("name,flags,codes", CASES, ids=[c[0] for c in CASES])
def test_fix_writes_the_pinned_file_parses_is_idempotent_and_the_findings_go(
        tmp_path, monkeypatch, name, flags, codes):
    folder = _project(tmp_path, name)
    path = folder / name
    before = {f["code"] for f in _findings(monkeypatch, folder, *flags, name)}
    assert codes <= before, f"{name}: the fixture no longer gives {codes - before}"
    _invoke(monkeypatch, folder, "--fix", *flags, name)
    fixed = path.read_bytes()
    assert fixed == (FIXTURES / _fixed_name(name)).read_bytes()
    _parses(path)
    _invoke(monkeypatch, folder, "--fix", *flags, name)
    assert path.read_bytes() == fixed, "a second --fix changed the file"
    after = {f["code"] for f in _findings(monkeypatch, folder, *flags, name)}
    assert not codes & after


def test_trl_peft_config_that_may_be_none_gets_a_guarded_report(tmp_path, monkeypatch):
    """trl/scripts/sft.py: ``get_peft_config(model_args)`` is None without ``--use_peft``, so
    an unguarded ``trainer.model.print_trainable_parameters()`` raises AttributeError on the
    script's default (full fine-tuning) run."""
    folder = _project(tmp_path, "trl_sft_get_peft_config.py")
    (finding,) = [f for f in _findings(monkeypatch, folder, "trl_sft_get_peft_config.py")
                  if f["code"] == "LL004"]
    fix = finding["autofix"]
    assert fix["safety"] == "safe"
    (edit,) = fix["edits"]
    assert edit["new_text"] == ('    if hasattr(trainer.model, "print_trainable_parameters"):\n'
                                "        trainer.model.print_trainable_parameters()\n")


def test_trl_peft_config_that_is_a_lora_config_gets_the_plain_call(tmp_path, monkeypatch):
    """A ``LoraConfig(...)`` is never None: the report stays one plain line (trl
    examples/scripts/grpo_2048.py passes ``peft_config=LoraConfig()``)."""
    source = (FIXTURES / "trl_sft_get_peft_config.py").read_text(encoding="utf-8")
    source = source.replace("peft_config=get_peft_config(model_args)", "peft_config=LoraConfig()")
    source = source.replace("from datasets import load_dataset",
                            "from datasets import load_dataset\n    from peft import LoraConfig")
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    (finding,) = [f for f in _findings(monkeypatch, tmp_path, "train.py") if f["code"] == "LL004"]
    (edit,) = finding["autofix"]["edits"]
    assert edit["new_text"] == "    trainer.model.print_trainable_parameters()\n"


def test_a_tab_indented_guarded_report_stays_tab_indented():
    """The guarded insert's second line follows the statement's own indentation (a tab-indented
    file would otherwise mix tabs and spaces: TabError)."""
    from lintlora import fixing
    from lintlora.findings import EditOp, Fix, FixSafety
    from lintlora.training_setup import Span

    text = "def main():\n\ttrainer = make()\n\ttrainer.train()\n"
    op = EditOp("insert_after", Span("t.py", 2, 2, 2, 17),
                'if hasattr(trainer.model, "print_trainable_parameters"):\n'
                "    trainer.model.print_trainable_parameters()")
    edits = fixing.resolve(Fix("print", FixSafety.SAFE, (op,)), text, "python")
    fixed = fixing.apply_edits(text, edits)
    assert fixed == ("def main():\n\ttrainer = make()\n"
                     '\tif hasattr(trainer.model, "print_trainable_parameters"):\n'
                     "\t\ttrainer.model.print_trainable_parameters()\n\ttrainer.train()\n")
    compile(fixed, "t.py", "exec")
    assert fixing.resolve(Fix("print", FixSafety.SAFE, (op,)), fixed, "python") == ()


def test_checkpointing_the_file_turns_off_on_an_unknown_model_is_unsafe(tmp_path, monkeypatch):
    """trl examples/notebooks/sft_nemotron_3.ipynb writes ``gradient_checkpointing=False,  #
    NemotronH does not support gradient checkpointing``: lintlora has no architecture for the
    model, so it cannot tell; turning it on is only an unsafe fix, and ``--fix`` leaves it."""
    folder = _project(tmp_path, "nemotron_gc_off.ipynb")
    (finding,) = [f for f in _findings(monkeypatch, folder, "nemotron_gc_off.ipynb")
                  if f["code"] == "LL001"]
    assert finding["autofix"]["safety"] == "unsafe"
    before = (folder / "nemotron_gc_off.ipynb").read_bytes()
    _invoke(monkeypatch, folder, "--fix", "nemotron_gc_off.ipynb")
    assert (folder / "nemotron_gc_off.ipynb").read_bytes() == before


def test_checkpointing_the_file_turns_off_on_a_known_model_stays_safe(tmp_path, monkeypatch):
    """The same notebook with a catalogued model (which supports checkpointing): safe."""
    folder = _project(tmp_path, "nemotron_gc_off.ipynb")
    path = folder / "nemotron_gc_off.ipynb"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "meta-llama/Llama-2-7b-hf"), encoding="utf-8")
    (finding,) = [f for f in _findings(monkeypatch, folder, "--gpu", "a100-80gb", path.name)
                  if f["code"] == "LL001"]
    assert finding["autofix"]["safety"] == "safe"


def test_no_gradient_checkpointing_kwargs_on_transformers_older_than_4_35(tmp_path, monkeypatch):
    """artidoro/qlora pins transformers==4.31.0, whose TrainingArguments and
    gradient_checkpointing_enable take no ``gradient_checkpointing_kwargs`` (TypeError): LL001
    on a frozen base and LL009 offer no edit there (their prose fix stays)."""
    folder = _project(tmp_path, "old_transformers") / "old_transformers"
    findings = _findings(monkeypatch, folder, "--gpu", "a100-80gb", ".")
    by_code = {(f["path"], f["code"]): f for f in findings}
    assert ("train.py", "LL001") in by_code and ("enable.py", "LL009") in by_code
    assert "autofix" not in by_code["train.py", "LL001"]
    assert "autofix" not in by_code["enable.py", "LL009"]
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    _invoke(monkeypatch, folder, "--fix", "--unsafe-fixes", "--gpu", "a100-80gb", ".")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_on_transformers_4_35_the_kwargs_are_added(tmp_path, monkeypatch):
    folder = _project(tmp_path, "old_transformers") / "old_transformers"
    (folder / "requirements.txt").write_text("transformers==4.35.0\n", encoding="utf-8")
    findings = _findings(monkeypatch, folder, "--gpu", "a100-80gb", ".")
    (gc,) = [f for f in findings if f["code"] == "LL001" and f["path"] == "train.py"]
    assert any("gradient_checkpointing_kwargs" in e["new_text"] for e in gc["autofix"]["edits"])
    (reentrant,) = [f for f in findings if f["code"] == "LL009" and f["path"] == "enable.py"]
    assert reentrant["autofix"]["safety"] == "safe"


@pytest.mark.parametrize("before,after", [("False", "True"), ("TRUE", "FALSE"), ("true", "false")])
def test_a_yaml_boolean_keeps_the_files_spelling(before, after):
    """torchtune's configs write ``False``/``True``: a fix writes the same spelling."""
    from lintlora import fixing
    from lintlora.findings import EditOp, Fix, FixSafety
    from lintlora.training_setup import Span

    text = f"enable_activation_checkpointing: {before}  # True reduces memory\n"
    value = "true" if after.lower() == "true" else "false"
    op = EditOp("yaml_set", Span("c.yaml", 1, 1), value, "enable_activation_checkpointing")
    fixed = fixing.apply_edits(text, fixing.resolve(Fix("t", FixSafety.SAFE, (op,)), text, "yaml"))
    assert fixed == f"enable_activation_checkpointing: {after}  # True reduces memory\n"


def test_axolotl_attn_implementation_becomes_sdpa_not_false(tmp_path, monkeypatch):
    """axolotl examples write ``attn_implementation: flash_attention_2`` (the current key; 190
    of its example configs): on a T4 the fix is ``attn_implementation: sdpa``. It used to write
    ``attn_implementation: false`` plus ``sdp_attention: true`` (the legacy flag's fix), which is
    no attention implementation."""
    folder = _project(tmp_path, "axolotl_lfm2_vl_lora.yaml")
    findings = _findings(monkeypatch, folder, "--gpu", "t4", "axolotl_lfm2_vl_lora.yaml")
    (attn,) = [f for f in findings if f["code"] == "LL010" and "FlashAttention" in f["message"]]
    assert attn["message"].startswith("attn_implementation: flash_attention_2 on ")
    assert "attn_implementation: sdpa" in attn["fix"]
    assert [e["new_text"] for e in attn["autofix"]["edits"]] == ["sdpa"]


def test_trl_config_with_fp16_is_not_reported_as_bf16(tmp_path, monkeypatch):
    """GRPOConfig(fp16=True) leaves bf16 unset, which TRL derives as ``not fp16`` (False) for
    every TRL config, not SFTConfig alone: no LL010 "bfloat16 on a T4" finding."""
    folder = _project(tmp_path, "grpo_qwen3_vl_fp16_t4.ipynb")
    findings = _findings(monkeypatch, folder, "--gpu", "t4", "grpo_qwen3_vl_fp16_t4.ipynb")
    assert not [f for f in findings if f["code"] == "LL010"]


@pytest.mark.parametrize("name", ["grpo_qwen3_vl_fp16_t4.ipynb", "grpo_trl_lora_qlora_t4.ipynb"])
def test_float32_fix_of_a_trl_config_writes_bf16_false_and_settles_in_one_pass(tmp_path, monkeypatch, name):
    """LL017's float32 fix removed ``fp16=True`` from a GRPOConfig (or, with neither flag
    written, left TRL's bf16 default on); TRL then trains in bf16, so LL014 set the 4-bit
    compute dtype back to 16 bits and LL017 to float32 again, pass after pass ("Fixed 9
    problems"). With ``bf16=False`` written the run is float32 and the fixes agree."""
    folder = _project(tmp_path, name)
    result = _invoke(monkeypatch, folder, "--fix", "--unsafe-fixes", "--show-fixes", "--gpu", "t4", name)
    applied = [line for line in result.stderr.splitlines() if line.startswith("  ") and " LL0" in line]
    assert sorted(re.search(r" (LL\d{3}) ", line).group(1) for line in applied) == ["LL004", "LL017"]
    assert "Fixes not applied" not in result.stderr


def test_no_launch_fix_when_an_expression_of_the_option_turns_checkpointing_off(tmp_path, monkeypatch):
    """peft examples/sft: ``training_args.gradient_checkpointing = training_args.
    gradient_checkpointing and not model_args.use_unsloth`` with ``--gradient_checkpointing
    True`` in the launch. The launch fix offered ``--gradient_checkpointing True`` in place of
    itself (no change, "Fixed 0 problems"); the option is not what turns it off: no fix."""
    folder = _project(tmp_path, "peft_sft_unsloth") / "peft_sft_unsloth"
    (finding,) = [f for f in _findings(monkeypatch, folder, "--gpu", "rtx4090", "train.py")
                  if f["code"] == "LL001"]
    assert "autofix" not in finding
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = _invoke(monkeypatch, folder, "--fix", "--unsafe-fixes", "--gpu", "rtx4090", "train.py")
    assert "Fixed 0 problems" in result.stderr and "fixable" not in result.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_bf16_on_a_t4_config_has_an_unsafe_float16_fix(tmp_path, monkeypatch):
    """``bf16: true`` on a T4 was the most common finding left after ``--fix`` (LL010: 52
    LLaMA-Factory and 66 axolotl example configs) and had no edit. It now has the prose fix's
    edit, unsafe: ``bf16: false`` with ``fp16: true`` (axolotl examples/LiquidAI/lfm2-vl-lora.yaml,
    an LFM2 model)..."""
    folder = _project(tmp_path, "axolotl_lfm2_vl_lora.yaml")
    (bf16,) = [f for f in _findings(monkeypatch, folder, "--gpu", "t4", "axolotl_lfm2_vl_lora.yaml")
               if f["code"] == "LL010" and "bfloat16" in f["message"]]
    assert (bf16["autofix"]["title"], bf16["autofix"]["safety"]) == ("train in float16", "unsafe")
    # the config has an empty `fp16:` key: its value is set
    assert [e["new_text"].strip() for e in bf16["autofix"]["edits"]] == ["false", "true"]


def test_bf16_on_a_t4_for_a_family_that_overflows_float16_is_fixed_to_float32(tmp_path, monkeypatch):
    """...but for Qwen3 (LLaMA-Factory examples/train_lora/qwen3_lora_sft.yaml) float16 would
    trade LL010 for LL017 (trl examples/scripts/sft_gemma3.py went bf16=True -> fp16=True ->
    removed, bf16=False appended, over two passes): the fix is ``bf16: false`` in place."""
    folder = _project(tmp_path, "llama_factory_qwen3_lora_sft.yaml")
    (bf16,) = [f for f in _findings(monkeypatch, folder, "--gpu", "t4", "llama_factory_qwen3_lora_sft.yaml")
               if f["code"] == "LL010"]
    assert (bf16["autofix"]["title"], bf16["autofix"]["safety"]) == ("train in float32", "unsafe")
    assert [e["new_text"] for e in bf16["autofix"]["edits"]] == ["false"]