"""lintlora.fixing and lintlora.autofix (issue 17): every EditOp kind on Python, notebooks,
YAML, JSON and shell; composition and overlap; idempotence; write-back (changed on disk,
BOM/CRLF/encoding kept, permissions, symlink and outside-project refusal)."""

from __future__ import annotations

import codecs
import json
import os
import stat
import textwrap

import libcst
import pytest
import yaml

from lintlora.autofix import plan_fixes, read_source_text, write_back, writable_reason
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity, TextEdit
from lintlora.fixing import FixError, apply_edits, edits_overlap, plan, resolve
from lintlora.settings import Settings
from lintlora.training_setup import Span

SAFE, UNSAFE = FixSafety.SAFE, FixSafety.UNSAFE


def fix(*ops, safety=SAFE, title="t"):
    return Fix(title, safety, tuple(ops))


def op(kind, line, column=1, text="", keyword=None, end_line=None, end_column=None, path="f",
       cell=None):
    return EditOp(kind, Span(path, line, column, end_line, end_column, cell), text, keyword)


def fixed(text, kind, *ops):
    edits = resolve(fix(*ops), text, kind)
    out = apply_edits(text, edits)
    # applying the same fix to the result changes nothing more (idempotence) where the op can
    # still be placed; a rename/replace is not meant to be re-applied
    return out


def dd(s):
    return textwrap.dedent(s)


# ---- Python --------------------------------------------------------------------------------

CALL = dd('''\
    args = TrainingArguments(
        output_dir="out",  # where it goes
        fp16=True,
    )
    x = f(a, b=1)
    y = g()
    ''')


def test_set_keyword_appends_one_per_line_with_trailing_comma():
    out = fixed(CALL, "python", op("set_keyword", 1, 8, "True", "gradient_checkpointing"))
    assert out == CALL.replace("    fp16=True,\n",
                               "    fp16=True,\n    gradient_checkpointing=True,\n")
    libcst.parse_module(out)


def test_set_keyword_one_per_line_without_trailing_comma_keeps_the_comment():
    text = 'a = F(\n    x=1,\n    y=2  # why\n)\n'
    out = fixed(text, "python", op("set_keyword", 1, 5, "3", "z"))
    assert out == 'a = F(\n    x=1,\n    y=2,  # why\n    z=3\n)\n'


def test_set_keyword_inline_and_empty_and_replace_in_place():
    assert fixed(CALL, "python", op("set_keyword", 5, 5, "2", "c")).splitlines()[4] == \
        "x = f(a, b=1, c=2)"
    assert fixed(CALL, "python", op("set_keyword", 6, 5, "2", "c")).splitlines()[5] == \
        "y = g(c=2)"
    assert fixed(CALL, "python", op("set_keyword", 5, 5, "7", "b")).splitlines()[4] == \
        "x = f(a, b=7)"
    assert fixed("f(a,)\n", "python", op("set_keyword", 1, 1, "1", "k")) == "f(a, k=1,)\n"
    # already so: nothing to do
    assert resolve(fix(op("set_keyword", 5, 5, "1", "b")), CALL, "python") == ()


def test_set_keyword_targets_the_innermost_call_at_the_span():
    text = "t = Trainer(model, args=TrainingArguments(fp16=True))\n"
    out = fixed(text, "python", op("set_keyword", 1, 43, "True", "bf16"))
    assert out == "t = Trainer(model, args=TrainingArguments(fp16=True, bf16=True))\n"


def test_remove_keyword_own_line_inline_last_and_only():
    out = fixed(CALL, "python", op("remove_keyword", 1, 8, keyword="output_dir"))
    assert out.splitlines()[:3] == ["args = TrainingArguments(", "    fp16=True,", ")"]
    assert fixed("f(a, b=1)\n", "python", op("remove_keyword", 1, 1, keyword="b")) == "f(a)\n"
    assert fixed("f(b=1, c=2)\n", "python", op("remove_keyword", 1, 1, keyword="b")) == "f(c=2)\n"
    assert fixed("f(a, b=1,)\n", "python", op("remove_keyword", 1, 1, keyword="b")) == "f(a,)\n"
    assert fixed("f(b=1)\n", "python", op("remove_keyword", 1, 1, keyword="b")) == "f()\n"
    assert resolve(fix(op("remove_keyword", 1, 1, keyword="zz")), "f(a)\n", "python") == ()


def test_rename_keyword():
    out = fixed(CALL, "python", op("rename_keyword", 1, 8, "bf16", "fp16"))
    assert "    bf16=True,\n" in out and "fp16" not in out
    with pytest.raises(FixError):
        resolve(fix(op("rename_keyword", 1, 8, "bf16", "nope")), CALL, "python")
    with pytest.raises(FixError):  # the new name exists already
        resolve(fix(op("rename_keyword", 5, 5, "a", "b")), "x = f(a=1, b=1)\n", "python")


def test_insert_after_keeps_indentation_and_is_idempotent():
    text = "def main():\n    model = get_peft_model(model, cfg)  # wrap\n    train()\n"
    o = op("insert_after", 2, 13, "model.print_trainable_parameters()")
    out = fixed(text, "python", o)
    assert out == ("def main():\n    model = get_peft_model(model, cfg)  # wrap\n"
                   "    model.print_trainable_parameters()\n    train()\n")
    assert resolve(fix(o), out, "python") == ()  # a second --fix inserts nothing
    # the last line without a line break
    assert fixed("m = w(m)", "python", op("insert_after", 1, 5, "p()")) == "m = w(m)\np()"


def test_insert_after_a_multiline_statement():
    text = "m = wrap(\n    m,\n)\nrest()\n"
    assert fixed(text, "python", op("insert_after", 1, 5, "p()")) == \
        "m = wrap(\n    m,\n)\np()\nrest()\n"


def test_delete_statement_line_block_and_suite():
    text = "for b in d:\n    step(b)\n    torch.cuda.empty_cache()  # free\n"
    assert fixed(text, "python", op("delete_statement", 3, 5)) == "for b in d:\n    step(b)\n"
    text = "for b in d:\n    torch.cuda.empty_cache()\n"
    assert fixed(text, "python", op("delete_statement", 2, 5)) == "for b in d:\n    pass\n"
    text = "for b in d: torch.cuda.empty_cache()\n"
    assert fixed(text, "python", op("delete_statement", 1, 13)) == "for b in d: pass\n"
    text = "step(); torch.cuda.empty_cache()\n"
    assert fixed(text, "python", op("delete_statement", 1, 9)) == "step()\n"
    text = "torch.cuda.empty_cache(); step()\n"
    assert fixed(text, "python", op("delete_statement", 1, 1)) == "step()\n"


def test_replace_and_bad_spans():
    assert fixed(CALL, "python", op("replace", 3, 10, "False", end_line=3, end_column=14)) == \
        CALL.replace("fp16=True", "fp16=False")
    with pytest.raises(FixError):
        resolve(fix(op("replace", 99, 1, "x", end_line=99, end_column=2)), CALL, "python")
    with pytest.raises(FixError):
        resolve(fix(op("set_keyword", 1, 1, "1", "k")), "def (:\n", "python")
    with pytest.raises(FixError):
        resolve(fix(op("frobnicate", 1, 1)), CALL, "python")
    with pytest.raises(FixError):
        resolve(fix(op("set_keyword", 1, 1, "1", "k")), "x = 1\n", "python")  # no call


def test_python_crlf_keeps_the_line_breaks():
    text = CALL.replace("\n", "\r\n")
    out = fixed(text, "python", op("set_keyword", 1, 8, "True", "gc"))
    assert out == text.replace("    fp16=True,\r\n", "    fp16=True,\r\n    gc=True,\r\n")
    assert "\n" not in out.replace("\r\n", "")


# ---- notebooks -----------------------------------------------------------------------------

def notebook(indent=1, source_as_string=False):
    source = ["import torch\n", "args = TrainingArguments(output_dir='o')\n", "trainer.train()"]
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Title ünï\n"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": "".join(source) if source_as_string else source}],
          "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"


def _only_source_changed(old, new):
    a, b = json.loads(old), json.loads(new)
    for cell_a, cell_b in zip(a["cells"], b["cells"]):
        assert {k: v for k, v in cell_a.items() if k != "source"} == \
            {k: v for k, v in cell_b.items() if k != "source"}
    assert {k: v for k, v in a.items() if k != "cells"} == {k: v for k, v in b.items() if k != "cells"}


@pytest.mark.parametrize("as_string", [False, True])
def test_notebook_edits_change_only_the_cell_source(as_string):
    text = notebook(source_as_string=as_string)
    ops = (op("set_keyword", 2, 8, "True", "bf16", path="n.ipynb", cell=1),
           op("insert_after", 1, 1, "import os", path="n.ipynb", cell=1))
    edits = resolve(fix(*ops), text, "notebook")
    out = apply_edits(text, edits)
    _only_source_changed(text, out)
    source = json.loads(out)["cells"][1]["source"]
    joined = source if isinstance(source, str) else "".join(source)
    assert joined == ("import torch\nimport os\nargs = TrainingArguments(output_dir='o', "
                      "bf16=True)\ntrainer.train()")
    if not as_string:  # unchanged lines keep their JSON string, the rest of the file its bytes
        assert out.replace('    "import os\\n",\n', "").replace(", bf16=True", "") == text
    assert resolve(fix(ops[1]), out, "notebook") == ()  # the line is there: nothing to insert


def test_notebook_composes_fixes_in_one_cell_and_refuses_a_bad_cell():
    text = notebook()
    a = fix(op("set_keyword", 2, 8, "True", "bf16", path="n.ipynb", cell=1))
    b = fix(op("delete_statement", 3, 1, path="n.ipynb", cell=1))
    result = plan([a, b], lambda p: (text, "notebook"))
    assert [o.status for o in result.outcomes] == ["applied", "applied"]
    source = "".join(json.loads(result.new["n.ipynb"])["cells"][1]["source"])
    assert source == "import torch\nargs = TrainingArguments(output_dir='o', bf16=True)\n"
    with pytest.raises(FixError):
        resolve(fix(op("replace", 1, 1, "x", path="n.ipynb", cell=5)), text, "notebook")


# ---- YAML and JSON -------------------------------------------------------------------------

YAML = dd('''\
    # training config
    model:
      name: meta-llama/Llama-2-7b-hf   # the base
      attn_implementation: "flash_attention_2"
    bf16: false
    lora_r: 64
    ''')


def test_yaml_replace_in_place_keeps_quotes_comments_and_order():
    out = fixed(YAML, "yaml", op("yaml_set", 1, text="sdpa", keyword="model.attn_implementation"),
                op("yaml_set", 1, text="true", keyword="bf16"))
    assert out == YAML.replace('"flash_attention_2"', '"sdpa"').replace("bf16: false", "bf16: true")
    assert resolve(fix(op("yaml_set", 1, text="true", keyword="bf16")), out, "yaml") == ()


def test_yaml_adds_missing_keys_at_the_mapping_indentation():
    out = fixed(YAML, "yaml", op("yaml_set", 1, text="true", keyword="model.use_cache_off"),
                op("yaml_set", 1, text="true", keyword="gradient_checkpointing"),
                op("yaml_set", 1, text="false", keyword="kwargs.use_reentrant"))
    assert "  attn_implementation: \"flash_attention_2\"\n  use_cache_off: true\nbf16" in out
    assert out.endswith("lora_r: 64\ngradient_checkpointing: true\nkwargs:\n  use_reentrant: false\n")
    data = yaml.safe_load(out)
    assert data["model"]["use_cache_off"] is True and data["kwargs"] == {"use_reentrant": False}
    # a file without a final line break
    assert fixed("a: 1", "yaml", op("yaml_set", 1, text="2", keyword="b")) == "a: 1\nb: 2"
    with pytest.raises(FixError):
        resolve(fix(op("yaml_set", 1, text="1", keyword="lora_r.x")), YAML, "yaml")


def test_json_configs():
    text = '{\n  "fp16": true,\n  "zero_optimization": {"stage": 2},\n  "name": "x"\n}\n'
    out = fixed(text, "json", op("yaml_set", 1, text="false", keyword="fp16"),
                op("yaml_set", 1, text="cpu", keyword="zero_optimization.offload"),
                op("yaml_set", 1, text="auto", keyword="train_batch_size"),
                op("yaml_set", 1, text="y", keyword="name"))
    assert out == ('{\n  "fp16": false,\n  "zero_optimization": {"stage": 2, "offload": "cpu"},'
                   '\n  "name": "y",\n  "train_batch_size": "auto"\n}\n')
    assert json.loads(out)["zero_optimization"]["offload"] == "cpu"
    assert fixed("{}", "json", op("yaml_set", 1, text="1", keyword="a")) == '{"a": 1}'


# ---- shell ---------------------------------------------------------------------------------

SH = "#!/bin/sh\ntorchrun --nproc_per_node 2 train.py \\\n  --fp16 True \\\n  --lr=1e-4  # go\necho done\n"


def test_launch_set_replaces_the_value_word_or_appends_before_a_comment():
    out = fixed(SH, "shell", op("launch_set", 2, text="False", keyword="--fp16"),
                op("launch_set", 2, text="2e-4", keyword="--lr"),
                op("launch_set", 2, text="True", keyword="--bf16"))
    assert out == SH.replace("--fp16 True", "--fp16 False").replace(
        "--lr=1e-4  # go", "--lr=2e-4 --bf16 True  # go")
    assert resolve(fix(op("launch_set", 2, text="False", keyword="--fp16")), out, "shell") == ()
    # a bare flag gets the value; a value needing quotes is quoted
    assert fixed("python t.py --fp16\n", "shell", op("launch_set", 1, text="False", keyword="--fp16")) \
        == "python t.py --fp16 False\n"
    assert fixed("python t.py\n", "shell", op("launch_set", 1, text="a b", keyword="--name")) \
        == "python t.py --name 'a b'\n"
    with pytest.raises(FixError):
        resolve(fix(op("launch_set", 40, text="1", keyword="--x")), SH, "shell")


def test_kinds_refused_where_they_do_not_belong():
    for kind, o in (("yaml", op("set_keyword", 1, 1, "1", "k")), ("shell", op("yaml_set", 1, text="1", keyword="a")),
                    ("python", op("yaml_set", 1, text="1", keyword="a"))):
        with pytest.raises(FixError):
            resolve(fix(o), "a: 1\n", kind)


# ---- composing -----------------------------------------------------------------------------

def test_apply_edits_refuses_overlaps_and_sorts():
    text = "abcdef\n"
    edits = [TextEdit("f", 1, 5, 1, 6, "E"), TextEdit("f", 1, 1, 1, 2, "A")]
    assert apply_edits(text, edits) == "AbcdEf\n"
    with pytest.raises(FixError):
        apply_edits(text, [TextEdit("f", 1, 1, 1, 4, "x"), TextEdit("f", 1, 3, 1, 5, "y")])
    # insertions at one point apply in the order given
    assert apply_edits(text, [TextEdit("f", 1, 2, 1, 2, "x"), TextEdit("f", 1, 2, 1, 2, "y")]) \
        == "axybcdef\n"
    assert not edits_overlap((0, 2), (2, 4)) and edits_overlap((0, 3), (2, 2))
    assert not edits_overlap((2, 2), (2, 2))


def test_plan_composes_and_skips_an_overlapping_fix():
    text = "x = f(a, b=1)\ny = g()\n"
    read = lambda p: (text, "python")  # noqa: E731
    first = fix(op("set_keyword", 1, 5, "2", "b"))
    clash = fix(op("remove_keyword", 1, 5, keyword="b"))
    other = fix(op("set_keyword", 2, 5, "1", "k"))
    broken = fix(op("replace", 50, 1, "x", end_line=50, end_column=2))
    result = plan([first, clash, other, broken], read)
    assert [o.status for o in result.outcomes] == ["applied", "overlaps", "applied", "error"]
    assert result.outcomes[1].reason == "not applied: overlaps another fix"
    assert result.new["f"] == "x = f(a, b=2)\ny = g(k=1)\n"
    assert result.changed() == ["f"]


def test_a_fix_spanning_two_files_is_applied_whole():
    files = {"a.py": ("f(x=1)\n", "python"), "c.yaml": ("x: 1\n", "yaml")}
    both = Fix("t", SAFE, (EditOp("set_keyword", Span("a.py", 1, 1), "2", "x"),
                           EditOp("yaml_set", Span("c.yaml", 1, 1), "2", "x")))
    result = plan([both], files.__getitem__)
    assert result.new == {"a.py": "f(x=2)\n", "c.yaml": "x: 2\n"}
    with pytest.raises(FixError):
        resolve(both, "f(x=1)\n", "python")  # resolve() takes one file's ops


# ---- write-back ----------------------------------------------------------------------------

def finding(path, *ops, safety=SAFE, code="TX001"):
    return Finding(code, "t", Severity.WARNING, Span(path, 1), "m",
                   autofix=Fix("t", safety, tuple(ops)))


def _project(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_write_back_keeps_bom_crlf_encoding_and_permissions(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    bom = root / "bom.py"
    bom.write_bytes(codecs.BOM_UTF8 + "f(x=1)  # é\r\n".encode())
    latin = root / "latin.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\nf(x=1)  # \xe9\n".encode("latin-1"))
    os.chmod(latin, 0o751)
    u16 = root / "c.yaml"
    u16.write_bytes(codecs.BOM_UTF16_LE + "x: 1\r\n".encode("utf-16-le"))
    fs = [finding(str(bom), EditOp("set_keyword", Span(str(bom), 1, 1), "2", "x")),
          finding(str(latin), EditOp("set_keyword", Span(str(latin), 2, 1), "2", "x")),
          finding(str(u16), EditOp("yaml_set", Span(str(u16), 1, 1), "2", "x"))]
    run = plan_fixes(fs, lambda p: Settings(), unsafe=False, linted=[str(bom), str(latin), str(u16)])
    written, problems = write_back(run)
    assert sorted(written) == sorted(map(str, (bom, latin, u16))) and not problems
    assert bom.read_bytes() == codecs.BOM_UTF8 + "f(x=2)  # é\r\n".encode()
    assert latin.read_bytes() == "# -*- coding: latin-1 -*-\nf(x=2)  # \xe9\n".encode("latin-1")
    assert stat.S_IMODE(os.stat(latin).st_mode) == 0o751
    assert u16.read_bytes() == codecs.BOM_UTF16_LE + "x: 2\r\n".encode("utf-16-le")
    assert not [n for n in os.listdir(root) if n.startswith(".lintlora-fix-")]


def test_a_file_changed_on_disk_is_not_overwritten(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    path = root / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([finding(str(path), EditOp("set_keyword", Span(str(path), 1, 1), "2", "x"))],
                     lambda p: Settings(), unsafe=False, linted=[str(path)])
    path.write_text("f(x=1)  # edited meanwhile\n")
    written, problems = write_back(run)
    assert written == [] and "changed on disk" in problems[str(path)]
    assert path.read_text() == "f(x=1)  # edited meanwhile\n"


def test_safety_fixable_and_unfixable_select_the_fixes(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    path = root / "t.py"
    path.write_text("f(x=1, y=1)\n")
    safe = finding(str(path), EditOp("set_keyword", Span(str(path), 1, 1), "2", "x"))
    unsafe = finding(str(path), EditOp("set_keyword", Span(str(path), 1, 1), "2", "y"),
                     safety=UNSAFE, code="TX002")
    run = plan_fixes([safe, unsafe], lambda p: Settings(), unsafe=False, linted=[str(path)])
    assert run.plan.new[str(path)] == "f(x=2, y=1)\n"
    run = plan_fixes([safe, unsafe], lambda p: Settings(), unsafe=True, linted=[str(path)])
    assert run.plan.new[str(path)] == "f(x=2, y=2)\n"
    run = plan_fixes([safe, unsafe], lambda p: Settings(unfixable=("TX001",)), unsafe=True,
                     linted=[str(path)])
    assert run.plan.new[str(path)] == "f(x=1, y=2)\n"
    run = plan_fixes([safe, unsafe], lambda p: Settings(fixable=("TX002",)), unsafe=False,
                     linted=[str(path)])
    assert run.chosen == []


def test_links_and_paths_outside_the_project_are_never_written(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text("f(x=1)\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    monkeypatch.chdir(root)
    own = root / "train.py"
    own.write_text("f(x=1)\n")
    link = root / "link.py"
    link.symlink_to(victim)
    fs = [finding(str(own), EditOp("set_keyword", Span(str(victim), 1, 1), "2", "x")),
          finding(str(own), EditOp("set_keyword", Span(str(link), 1, 1), "2", "x")),
          finding(str(own), EditOp("set_keyword", Span(str(own), 1, 1), "2", "x"))]
    run = plan_fixes(fs, lambda p: Settings(), unsafe=False, linted=[str(own)])
    assert [o.status for o in run.plan.outcomes] == ["error", "error", "applied"]
    assert run.refused[str(victim)] == "outside the project"
    assert "symbolic link" in run.refused[str(link)]
    write_back(run)
    assert victim.read_text() == "f(x=1)\n" and own.read_text() == "f(x=2)\n"
    assert writable_reason(str(root / "other.py"), [str(root)], [str(own)]) is not None


def test_read_source_text_refuses_links(tmp_path):
    target = tmp_path / "a.py"
    target.write_text("x\n")
    (tmp_path / "l.py").symlink_to(target)
    with pytest.raises(OSError):
        read_source_text(str(tmp_path / "l.py"))


def test_keywords_added_to_one_call_by_one_fix_go_together():
    assert fixed("f()\n", "python", op("set_keyword", 1, 1, "1", "a"),
                 op("set_keyword", 1, 1, "2", "b")) == "f(a=1, b=2)\n"
    assert fixed("f(x)\n", "python", op("set_keyword", 1, 1, "1", "a"),
                 op("set_keyword", 1, 1, "2", "b")) == "f(x, a=1, b=2)\n"
    text = "F(\n    x=1\n)\n"
    assert fixed(text, "python", op("set_keyword", 1, 1, "1", "a"),
                 op("set_keyword", 1, 1, "2", "b")) == "F(\n    x=1,\n    a=1,\n    b=2\n)\n"
    with pytest.raises(FixError):  # `sum(x for x in y, k=1)` would not parse
        resolve(fix(op("set_keyword", 1, 1, "1", "k")), "sum(x for x in y)\n", "python")


def test_two_fixes_inserting_at_one_point_are_left_to_the_next_pass():
    text = "f()\n"
    read = lambda p: (text, "python")  # noqa: E731
    result = plan([fix(op("set_keyword", 1, 1, "1", "a")), fix(op("set_keyword", 1, 1, "2", "b"))],
                  read)
    assert [o.status for o in result.outcomes] == ["applied", "overlaps"]
    assert result.new["f"] == "f(a=1)\n"


def test_launch_set_in_a_workflow_run_step():
    text = "jobs:\n  t:\n    steps:\n      - run: python train.py --fp16 True\n"
    assert fixed(text, "yaml", op("launch_set", 4, text="False", keyword="--fp16")) == \
        text.replace("--fp16 True", "--fp16 False")


def test_an_unexpected_error_in_placing_a_fix_is_an_error_outcome(monkeypatch):
    import lintlora.fixing as fixing

    def boom(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(fixing, "_resolve_ops", boom)
    result = plan([fix(op("set_keyword", 1, 1, "1", "k"))], lambda p: ("f()\n", "python"))
    assert result.outcomes[0].status == "error" and "internal error" in result.outcomes[0].reason
    assert result.changed() == []


def test_databricks_notebook_source_spans_are_cell_lines():
    from lintlora.extract.notebook import extract_databricks

    text = ("# Databricks notebook source\nfrom transformers import TrainingArguments\n\n"
            "# COMMAND ----------\n\nargs = TrainingArguments(output_dir='o', fp16=True)\n")
    [setup] = list(extract_databricks("d.py", text))
    key = setup.get("training.fp16").key_span
    assert key.cell == 2
    out = fixed(text, "python", EditOp("rename_keyword", key, "bf16", "fp16"),
                EditOp("set_keyword", key, "True", "gradient_checkpointing"))
    assert out == text.replace("fp16=True)", "bf16=True, gradient_checkpointing=True)")


def test_aligned_continuation_calls_get_a_new_aligned_line():
    text = 'b = B(load_in_4bit=True, quant="nf4",\n      dtype=torch.bfloat16)\n'
    assert fixed(text, "python", op("set_keyword", 1, 5, "torch.bfloat16", "storage")) == \
        'b = B(load_in_4bit=True, quant="nf4",\n      dtype=torch.bfloat16,\n      storage=torch.bfloat16)\n'
    text = 'a = T(out="o", bs=2, fp16=True,\n      gc=True)\n'
    assert fixed(text, "python", op("remove_keyword", 1, 5, keyword="fp16")) == \
        'a = T(out="o", bs=2,\n      gc=True)\n'
