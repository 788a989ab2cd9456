"""The rules' fixes as source changes (issue 17), on the fixtures under ``fixtures/fix/``.

Each fixture ``fixtures/fix/<CODE>/<style>.<ext>`` (a style the rule applies to: HF Trainer,
TRL, plain torch, notebook, a YAML dialect) gives findings of ``CODE`` that each carry an
``autofix``; ``<style>.fixed.<ext>`` beside it is the file after ``--fix``. Checked here:

- every finding of the fixture's rule carries a fix whose title and safety the rule declares
  (``Rule.fixes``) and whose ops are the ones :data:`OPS` pins (kind, keyword, text, span);
- the applier (:mod:`lintlora.fixing`: ``resolve``/``apply_edits``) gives the ``.fixed`` file
  byte for byte, and linting that file again reports none of the rule's findings (the fix is
  idempotent by construction).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rules_support import ROOT, lint, read_header, settings_from_args

from lintlora.findings import EditOp, FixSafety

FIXTURES = ROOT / "fixtures" / "fix"


def _is_source(p: Path) -> bool:
    """A fixture whose fix is pinned (``<style>.nofix.<ext>``: a finding that carries no fix,
    checked by tests/test_fix_matrix.py)."""
    return p.is_file() and ".fixed." not in p.name and ".nofix." not in p.name \
        and p.suffix in (".py", ".ipynb", ".yml", ".yaml")


SOURCES = sorted(p for p in FIXTURES.rglob("*") if _is_source(p))

NOTEBOOK_ARGS = {"LL001/notebook.ipynb": "--gpu a100-40gb", "LL002/notebook.ipynb": "--gpu a100-80gb",
                 "LL006/notebook.ipynb": "--gpu a100-80gb", "LL007/notebook.ipynb": "--gpu a100-80gb",
                 "LL004/notebook.ipynb": "--gpu a100-80gb",
                 "LL009/notebook.ipynb": "--gpu a100-80gb", "LL010/notebook.ipynb": "--gpu t4",
                 "LL003/notebook.ipynb": "--gpu rtx4090", "LL008/notebook.ipynb": "--gpu rtx4090",
                 "LL014/notebook.ipynb": "--gpu a100-80gb", "LL017/notebook.ipynb": "--gpu t4",
                 "LL020/notebook.ipynb": "--gpu a100-80gb", "LL024/notebook.ipynb": "--gpu a100-80gb"}
"""The settings of the notebook fixtures (a notebook has no header comment)."""

OPS = {
    "LL001/trainer.py": [("set_keyword", "gradient_checkpointing", "True", 12),
                         ("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 12)],
    "LL001/trl.py": [("replace", None, "True", 17),
                     ("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 14)],
    "LL001/argparse_default.py": [("replace", None, "True", 10),
                                  ("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}',
                                   16)],
    "LL001/torch.py": [("replace", None, "True", 19)],
    "LL001/torch_loop.py": [("insert_after", None,
                             'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})',
                             8)],
    "LL001/notebook.ipynb": [("set_keyword", "gradient_checkpointing", "True", 1),
                             ("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 1)],
    "LL001/axolotl.yml": [("yaml_set", "gradient_checkpointing", "true", 1),
                          ("yaml_set", "gradient_checkpointing_kwargs.use_reentrant", "false", 1)],
    "LL001/torchtune.yaml": [("yaml_set", "enable_activation_checkpointing", "true", 85)],
    "LL001/llama_factory.yaml": [("yaml_set", "disable_gradient_checkpointing", "false", 10)],
    "LL002/trainer.py": [("rename_keyword", "fp16", "bf16", 13), ("replace", None, "torch.bfloat16", 9)],
    "LL002/torch.py": [("replace", None, "torch.bfloat16", 19)],
    "LL002/axolotl.yml": [("yaml_set", "fp16", "false", 16), ("yaml_set", "bf16", "true", 15)],
    "LL003/trainer.py": [("replace", None, "None", 15)],
    "LL003/trl.py": [("replace", None,
                      '["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]', 13)],
    "LL012/trainer.py": [("replace", None, '["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]', 13)],
    "LL012/notebook.ipynb": [("replace", None, '["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]', 6)],
    "LL012/trl.py": [("replace", None, '["c_attn"]', 10)],
    "LL012/llama_factory.yaml": [("yaml_set", "lora_target", "c_attn", 7)],
    "LL002/trl.py": [("rename_keyword", "fp16", "bf16", 9)],
    "LL002/notebook.ipynb": [("rename_keyword", "fp16", "bf16", 1), ("replace", None, "torch.bfloat16", 1)],
    "LL004/torch.py": [("insert_after", None, "model.print_trainable_parameters()", 9)],
    "LL006/notebook.ipynb": [("delete_statement", None, "", 6)],
    "LL007/notebook.ipynb": [("replace", None, "8", 6)],
    "LL004/trainer.py": [("insert_after", None, "peft_model.print_trainable_parameters()", 14)],
    "LL004/trl.py": [("insert_after", None, "trainer.model.print_trainable_parameters()", 12)],
    "LL004/notebook.ipynb": [("insert_after", None, "model.print_trainable_parameters()", 2)],
    "LL006/torch.py": [("delete_statement", None, "", 25)],
    "LL006/trainer.py": [("delete_statement", None, "", 16)],
    "LL007/torch.py": [("replace", None, "8", 31)],
    "LL007/trainer.py": [("replace", None, "16", 16)],
    "LL007/llama_factory.yaml": [("yaml_set", "dataloader_num_workers", "8", 15)],
    "LL008/trainer.py": [("replace", None, "4", 21), ("replace", None, "8", 22)],
    "LL008/trl.py": [("replace", None, "2", 10), ("replace", None, "4", 11)],
    "LL008/axolotl.yml": [("yaml_set", "micro_batch_size", "2", 10),
                          ("yaml_set", "gradient_accumulation_steps", "8", 11)],
    "LL017/trainer.py": [("remove_keyword", "fp16", "", 11), ("replace", None, "torch.float32", 8)],
    "LL017/llama_factory.yaml": [("yaml_set", "fp16", "false", 15)],
    "LL009/trainer.py": [("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 14)],
    "LL009/torch.py": [("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 12)],
    "LL009/notebook.ipynb": [("set_keyword", "gradient_checkpointing_kwargs", '{"use_reentrant": False}', 1)],
    "LL010/trainer.py": [("replace", None, '"sdpa"', 19), ("remove_keyword", "tf32", "", 25)],
    "LL010/axolotl.yml": [("yaml_set", "tf32", "false", 14), ("yaml_set", "flash_attention", "false", 15),
                          ("yaml_set", "sdp_attention", "true", 1)],
    "LL010/llama_factory.yaml": [("yaml_set", "flash_attn", "sdpa", 16)],
    "LL014/trainer.py": [("set_keyword", "bnb_4bit_compute_dtype", "torch.bfloat16", 8)],
    "LL020/trl.py": [("rename_keyword", "max_seq_length", "max_length", 9)],
    "LL020/trl_default.py": [("set_keyword", "max_length", "4096", 10)],
    "LL024/trainer.py": [("set_keyword", "bnb_4bit_quant_storage", "torch.bfloat16", 7)],
    # issue 17's acceptance matrix (tests/test_fix_matrix.py): the rest of the styles
    "LL002/litgpt.yaml": [('yaml_set', 'precision', 'bf16-mixed', 9)],
    "LL002/llama_factory.yaml": [('yaml_set', 'fp16', 'false', 17), ('yaml_set', 'bf16', 'true', 1)],
    "LL002/torchtune.yaml": [('yaml_set', 'dtype', 'bf16', 89)],
    "LL003/axolotl.yml": [('yaml_set', 'lora_target_modules', '["q_proj", "v_proj"]', 7)],
    "LL003/litgpt.yaml": [('yaml_set', 'lora_head', 'false', 45)],
    "LL003/llama_factory.yaml": [('yaml_set', 'lora_target', 'q_proj,v_proj', 8)],
    "LL003/notebook.ipynb": [('replace', None, 'None', 6)],
    "LL003/torch.py": [('replace', None, '["q_proj", "v_proj"]', 9)],
    "LL003/torchtune.yaml": [('yaml_set', 'model.apply_lora_to_output', 'False', 26)],
    "LL006/trl.py": [('delete_statement', None, '', 11)],
    "LL002/databricks.py": [("rename_keyword", "fp16", "bf16", 1), ("replace", None, "torch.bfloat16", 1)],
    "LL007/litgpt.yaml": [('yaml_set', 'data.init_args.num_workers', '16', 55)],
    "LL007/axolotl.yml": [('yaml_set', 'dataloader_num_workers', '16', 12)],
    "LL007/trl.py": [('replace', None, '16', 11)],
    "LL008/litgpt.yaml": [("yaml_set", "train.micro_batch_size", "1", 69),
                          ("yaml_set", "train.global_batch_size", "64", 66)],  # the global batch kept
    "LL008/llama_factory.yaml": [('yaml_set', 'per_device_train_batch_size', '2', 14), ('yaml_set', 'gradient_accumulation_steps', '8', 15)],
    "LL008/notebook.ipynb": [('replace', None, '4', 3), ('replace', None, '8', 4)],
    "LL008/torchtune.yaml": [('yaml_set', 'batch_size', '8', 74), ('yaml_set', 'gradient_accumulation_steps', '16', 77)],
    "LL010/litgpt.yaml": [('yaml_set', 'precision', '16-mixed', 9)],
    "LL010/notebook.ipynb": [('remove_keyword', 'tf32', '', 1)],
    "LL010/torch.py": [('replace', None, '"sdpa"', 9)],
    "LL010/torchtune.yaml": [('yaml_set', 'dtype', 'fp32', 89)],
    "LL010/trainer_bf16.py": [('rename_keyword', 'bf16', 'fp16', 10), ('replace', None, 'torch.float16', 7)],
    "LL010/trl.py": [('replace', None, '"sdpa"', 11), ('remove_keyword', 'tf32', '', 13)],
    "LL012/axolotl.yml": [('yaml_set', 'lora_target_modules', '["c_attn"]', 7)],
    "LL012/torch.py": [('replace', None, '["c_attn"]', 8)],
    "LL014/notebook.ipynb": [('set_keyword', 'bnb_4bit_compute_dtype', 'torch.bfloat16', 1)],
    "LL014/torch.py": [('set_keyword', 'bnb_4bit_compute_dtype', 'torch.bfloat16', 7)],
    "LL014/trl.py": [('set_keyword', 'bnb_4bit_compute_dtype', 'torch.bfloat16', 9)],
    "LL017/axolotl.yml": [('yaml_set', 'fp16', 'false', 12)],
    "LL017/litgpt.yaml": [('yaml_set', 'precision', '32-true', 9)],
    "LL017/notebook.ipynb": [('remove_keyword', 'fp16', '', 1), ('replace', None, 'torch.float32', 1)],
    "LL017/torch.py": [('replace', None, 'torch.float32', 14)],
    "LL017/torchtune.yaml": [('yaml_set', 'dtype', 'fp32', 49)],
    "LL017/trl.py": [('rename_keyword', 'fp16', 'bf16', 9), ('replace', None, 'False', 10), ('replace', None, 'torch.float32', 8)],
    "LL020/notebook.ipynb": [('rename_keyword', 'max_seq_length', 'max_length', 2)],
    "LL024/notebook.ipynb": [('set_keyword', 'bnb_4bit_quant_storage', 'torch.bfloat16', 1)],
    "LL024/trl.py": [('set_keyword', 'bnb_4bit_quant_storage', 'torch.bfloat16', 8)],
}
"""Per fixture: the ops of its findings' fixes, in order, as (kind, keyword, text, span line)."""


def _key(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def _fixed(path: Path) -> Path:
    return path.with_name(path.name.replace(path.suffix, ".fixed" + path.suffix, 1))


def _settings(path: Path):
    args = NOTEBOOK_ARGS.get(_key(path)) if path.suffix == ".ipynb" else read_header(path)["args"]
    return settings_from_args(args or "")


def _findings(path: Path):
    code = path.parent.name
    result = lint(path, _settings(path))
    assert result.errors == []
    return [f for f in result.findings if f.code == code]


# ---- a minimal applier (this module only) ----------------------------------------------------

class _Lines:
    """Offsets of a text's lines (1-based line, 1-based column in characters)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column - 1

    def line_end(self, line: int) -> int:
        """The offset after the line's newline (or the text's end)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def indent(self, line: int) -> str:
        start = self.starts[line - 1]
        return re.match(r"[ \t]*", self.text[start:]).group(0)


def test_there_is_a_fixture_per_fixable_rule():
    from lintlora.engine import available_rules

    fixable = sorted(r.code for r in available_rules() if r.__module__.startswith("lintlora.") and r.fixes)
    have = sorted({p.parent.name for p in SOURCES})
    assert have == fixable
    assert sorted(_key(p) for p in SOURCES) == sorted(OPS)
    for path in SOURCES:
        assert _fixed(path).is_file(), f"no expected output for {path}"


def test_every_declared_fix_has_a_page_line():
    from lintlora.engine import available_rules

    for rule in available_rules():
        if not rule.__module__.startswith("lintlora."):
            continue
        page = (ROOT / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
        m = re.search(r"^\*\*Fix:\*\* (.*)$", page, re.M)
        assert m, f"{rule.code}: no Fix line"
        line = m.group(1)
        if not rule.fixes:
            assert line.startswith("no automatic fix"), rule.code
        for title, safety in rule.fixes.items():
            assert f"{title} ({safety.value}): " in line, (rule.code, title)


@pytest.mark.parametrize("path", SOURCES, ids=_key)
def test_the_findings_carry_the_pinned_ops(path):
    from lintlora.engine import available_rules

    rule = next(r for r in available_rules() if r.code == path.parent.name)
    findings = _findings(path)
    assert findings, f"{path}: the fixture gives no {rule.code} finding"
    got = []
    for f in findings:
        assert f.autofix is not None, f"{path}: {f.code} at line {f.span.line} offers no fix"
        assert rule.fixes.get(f.autofix.title) is f.autofix.safety, f.autofix.title
        for op in f.autofix.ops:
            assert op.span.path == str(path)
            got.append((op.kind, op.keyword, op.text, op.span.line))
    assert got == OPS[_key(path)]


@pytest.mark.parametrize("path", SOURCES, ids=_key)
def test_the_ops_give_the_fixed_file_and_the_finding_is_gone(path, tmp_path):
    from lintlora import fixing

    text = path.read_text(encoding="utf-8")
    kind = {".py": "python", ".ipynb": "notebook"}.get(path.suffix, "yaml")
    edits = [e for f in _findings(path) for e in fixing.resolve(f.autofix, text, kind)]
    fixed = fixing.apply_edits(text, edits)
    assert fixed == _fixed(path).read_text(encoding="utf-8")
    # re-lint the fixed file under the fixture's settings: the rule is silent (idempotence)
    again = tmp_path / path.name
    again.write_text(fixed, encoding="utf-8")
    args = _settings(path)
    result = lint(again, args)
    assert [f.code for f in result.findings if f.code == path.parent.name] == []


def test_fixes_are_all_safe_but_the_launch_one():
    from lintlora.engine import available_rules

    for rule in available_rules():
        for title, safety in rule.fixes.items():
            assert isinstance(safety, FixSafety)
            if "launch command" in title:
                assert safety is FixSafety.UNSAFE


def test_a_value_set_at_launch_is_fixed_in_the_launch_command_as_unsafe(tmp_path):
    """``--gradient_checkpointing False`` in run.sh: the fix edits the launch command (the
    run's command span), unsafe, with the non-reentrant kwargs as a JSON word on a frozen base."""
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
        "(training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)\n'
        'model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))\n'
        "model.print_trainable_parameters()\n"
        "Trainer(model=model, args=training_args, train_dataset=ds).train()\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython train.py \\\n    --output_dir out \\\n    --per_device_train_batch_size 8 \\\n"
        "    --gradient_checkpointing False \\\n    --bf16 True\n", encoding="utf-8")
    from lintlora.engine import lint_paths
    from lintlora.settings import Settings

    [f] = [f for f in lint_paths([str(tmp_path)], Settings(gpu="a100-40gb")).findings if f.code == "LL001"]
    assert f.autofix is not None and f.autofix.safety is FixSafety.UNSAFE
    assert [(o.kind, o.keyword, o.text, o.span.path.endswith("run.sh"), o.span.line) for o in f.autofix.ops] == [
        ("launch_set", "--gradient_checkpointing", "True", True, 2),
        ("launch_set", "--gradient_checkpointing_kwargs", '{"use_reentrant": false}', True, 2)]


def test_the_op_helpers_refuse_what_lintlora_could_not_resolve():
    from lintlora.rules import _fixops as ops
    from lintlora.training_setup import Origin, Setting, Span

    call = Span("t.py", 3, 8, 9, 2)
    unknown = Setting.unknown("opts['gc']", Span("t.py", 5, 28, 5, 38))
    computed = Setting(False, Origin.LITERAL, Span("t.py", 5, 28, 5, 45), Span("t.py", 5, 5))  # `a and b`
    written = Setting(False, Origin.LITERAL, Span("t.py", 5, 28, 5, 33), Span("t.py", 5, 5))
    default = Setting.library_default(False, "transformers")
    elsewhere = Setting(False, Origin.LITERAL, Span("other.py", 5, 28, 5, 33), Span("other.py", 5, 5))
    assert ops.replace_value(unknown, "t.py", "True") is None
    assert ops.replace_value(computed, "t.py", "True") is None  # an expression, not the literal
    assert ops.replace_value(elsewhere, "t.py", "True") is None
    assert ops.replace_value(default, "t.py", "True") is None
    assert ops.replace_value(written, "t.py", "True").span == written.span
    # set_keyword: refused when the keyword's value is unresolved (a **kwargs call leaves the
    # parameters it may carry unknown, never defaulted) or written outside the call
    assert ops.set_keyword(call, "t.py", "gc", "True", unknown) is None
    assert ops.set_keyword(call, "t.py", "gc", "True", Setting()) is None
    assert ops.set_keyword(call, "t.py", "gc", "True", elsewhere) is None
    assert ops.set_keyword(call, "t.py", "gc", "True", default).kind == "set_keyword"
    assert ops.set_keyword(call, "t.py", "gc", "True", written).kind == "set_keyword"
    assert ops.remove_keyword(call, "t.py", "gc", default) is None  # nothing written to remove
    assert ops.make_fix("t", FixSafety.SAFE, [ops.replace_value(written, "t.py", "True"), None]) is None
    assert ops.make_fix("t", FixSafety.SAFE, []) is None


def test_a_kwargs_call_gets_no_set_keyword(tmp_path):
    """``TrainingArguments(**opts)``: its absent parameters are unknown, so no rule adds a
    keyword to it (LL010's tf32 written there is still removed: it is written in the call)."""
    p = tmp_path / "train.py"
    p.write_text(
        "import torch\n"
        "from peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "opts = load_options()\n"
        'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)\n'
        'model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))\n'
        "model.print_trainable_parameters()\n"
        'args = TrainingArguments(output_dir="out", gradient_checkpointing=True, **opts)\n'
        "Trainer(model=model, args=args, train_dataset=ds).train()\n",
        encoding="utf-8")
    for f in lint(p, settings_from_args("--gpu a100-80gb")).findings:
        if f.autofix is not None:
            assert all(op.kind != "set_keyword" or op.span.line != 8 for op in f.autofix.ops), f


def test_a_fix_survives_the_results_cache():
    """Cache format 5 carries each finding's ``autofix`` (title, safety, ops), so a cached
    result offers the same fix; a malformed op is refused."""
    from lintlora.cache import decode_result, encode_result
    from lintlora.engine import FileResult
    from lintlora.findings import Finding, Fix, Severity
    from lintlora.training_setup import Span

    fix = Fix("drop tf32=True", FixSafety.SAFE, (EditOp("remove_keyword", Span("/proj/train.py", 3, 8, 9, 2), "",
                                                         "tf32"),))
    r = FileResult("/proj/train.py", "python")
    r.findings.append(Finding("LL010", "precision-unsupported-by-gpu", Severity.ERROR, Span("/proj/train.py", 5, 7),
                              "message", fix="fix", autofix=fix))
    r.findings.append(Finding("LL003", "broad-target-modules", Severity.WARNING, Span("/proj/train.py", 6, 7),
                              "message", fix="fix"))
    encoded = json.loads(json.dumps(encode_result(r)))
    back = decode_result(encoded)
    assert [f.autofix for f in back.findings] == [fix, None]
    encoded["findings"][0]["autofix"]["ops"][0][0] = "rm -rf"
    with pytest.raises(ValueError, match="not a lintlora cache entry"):
        decode_result(encoded)
