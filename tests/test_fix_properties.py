"""Properties of applied fixes (issue 17) over the fixtures and fuzzed inputs (``bench/fuzz.py``'s
corpus and mutations): for random ops placed on random calls, statements, keys and launch
lines, the resolved edits

- never produce a file LibCST (Python, a notebook's cells) or YAML/JSON cannot parse, and a
  notebook stays a notebook whose other fields are unchanged;
- never change a byte outside the edits (checked against offsets computed independently);
- are idempotent: the same op placed again on the result asks for no edit (for the kinds
  that state a target: set/remove keyword, yaml_set, launch_set, insert_after);

and ``--fix`` over a copy of the fixtures (with the test rules of ``fix_support``) leaves files
that parse, and a second pass changes nothing."""

from __future__ import annotations

import json
import os
import random
import shutil

import libcst
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench_support import load_bench
from lintlora.findings import EditOp, Fix, FixSafety
from lintlora.fixing import FixError, apply_edits, resolve
from lintlora.training_setup import Span

fuzz = load_bench("fuzz")
CORPUS = fuzz.load_corpus()
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROPS = settings(max_examples=80, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])
IDEMPOTENT = {"set_keyword", "remove_keyword", "yaml_set", "launch_set", "insert_after"}
VALUES = ["True", "False", "0", "8", '"sdpa"', "{'use_reentrant': False}", "torch.bfloat16"]


def _parses_python(text: str) -> bool:
    try:
        libcst.parse_module(text)
        return True
    except Exception:  # noqa: BLE001
        return False


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[:line - 1]) + column - 1


def _only_edited_bytes_changed(old: str, new: str, edits) -> None:
    ranges = [(a, b, t) for a, b, _i, t in sorted(
        (_offset(old, e.line, e.column), _offset(old, e.end_line, e.end_column), i, e.new_text)
        for i, e in enumerate(edits))]
    at_old = at_new = 0
    for start, end, inserted in ranges:
        gap = old[at_old:start]
        assert new[at_new:at_new + len(gap)] == gap
        at_new += len(gap)
        assert new[at_new:at_new + len(inserted)] == inserted
        at_new += len(inserted)
        at_old = end
    assert new[at_new:] == old[at_old:]


def _python_ops(text: str, rng: random.Random, path: str, cell=None) -> list[EditOp]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(libcst.parse_module(text))
    positions = wrapper.resolve(PositionProvider)
    calls = [positions[n] for n in positions if isinstance(n, libcst.Call)]
    statements = [positions[n] for n in positions if isinstance(n, libcst.SimpleStatementLine)]
    smalls = [positions[n] for n in positions if isinstance(n, libcst.Expr)]
    ops = []
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        if calls and choice < 0.6:
            pos = rng.choice(calls)
            span = Span(path, pos.start.line, pos.start.column + 1, cell=cell)
            kind = rng.choice(["set_keyword", "set_keyword", "remove_keyword", "rename_keyword"])
            keyword = rng.choice(["fp16", "bf16", "gradient_checkpointing", "r", "num_workers",
                                  "torch_dtype", "attn_implementation", "max_seq_length"])
            text_ = rng.choice(VALUES) if kind == "set_keyword" else rng.choice(
                ["max_length", "bf16_full_eval"])
            ops.append(EditOp(kind, span, text_, keyword))
        elif statements and choice < 0.85:
            pos = rng.choice(statements)
            ops.append(EditOp("insert_after", Span(path, pos.start.line, pos.start.column + 1,
                                                   cell=cell),
                              "model.print_trainable_parameters()"))
        elif smalls:
            pos = rng.choice(smalls)
            ops.append(EditOp("delete_statement", Span(path, pos.start.line,
                                                       pos.start.column + 1, cell=cell)))
    return ops


def _check_python(text: str, rng: random.Random) -> None:
    assume(_parses_python(text))
    ops = _python_ops(text, rng, "t.py")
    assume(ops)
    try:
        edits = resolve(Fix("t", FixSafety.SAFE, tuple(ops)), text, "python")
    except FixError:
        assume(False)
    new = apply_edits(text, edits)
    assert _parses_python(new), (ops, new)
    _only_edited_bytes_changed(text, new, edits)
    if len(ops) == 1 and ops[0].kind in IDEMPOTENT and ops[0].kind != "insert_after":
        # the call is still where it was (an edit inside a call keeps its start)
        assert resolve(Fix("t", FixSafety.SAFE, tuple(ops)), new, "python") == ()


PY = [t for s, t in CORPUS if s == ".py"]
NB = [t for s, t in CORPUS if s == ".ipynb"]
CONFIGS = [(s, t) for s, t in CORPUS if s in (".yaml", ".yml", ".json")]


@PROPS
@given(which=st.integers(0, len(PY) - 1), rng=st.randoms(use_true_random=False),
       mutate=st.booleans())
def test_python_edits_parse_touch_nothing_else_and_are_idempotent(which, rng, mutate):
    text = PY[which]
    if mutate:
        text = fuzz.mutate(text, rng)
    _check_python(text, rng)


@PROPS
@given(which=st.integers(0, len(NB) - 1), rng=st.randoms(use_true_random=False),
       mutate=st.booleans())
def test_notebook_edits_change_only_cell_sources(which, rng, mutate):
    text = NB[which]
    if mutate:
        text = fuzz.mutate_notebook_cells(text, rng)
    try:
        nb = json.loads(text)
    except ValueError:
        assume(False)
    assume(isinstance(nb, dict) and isinstance(nb.get("cells"), list))
    cells = [c for c in nb["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    assume(cells)
    index = rng.randrange(len(cells))
    source = cells[index].get("source", "")
    if isinstance(source, list):
        assume(all(isinstance(x, str) for x in source))
        source = "".join(source)
    assume(isinstance(source, str) and source.strip() and _parses_python(source))
    ops = _python_ops(source, rng, "n.ipynb", cell=index + 1)
    assume(ops)
    try:
        edits = resolve(Fix("t", FixSafety.SAFE, tuple(ops)), text, "notebook")
    except FixError:
        assume(False)
    new = apply_edits(text, edits)
    _only_edited_bytes_changed(text, new, edits)
    after = json.loads(new)
    new_cells = [c for c in after["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    for i, (a, b) in enumerate(zip(cells, new_cells)):
        assert {k: v for k, v in a.items() if k != "source"} == \
            {k: v for k, v in b.items() if k != "source"}
        if i != index:
            assert a == b
    assert {k: v for k, v in nb.items() if k != "cells"} == \
        {k: v for k, v in after.items() if k != "cells"}
    changed = new_cells[index]["source"]
    assert _parses_python("".join(changed) if isinstance(changed, list) else changed)


def _key_paths(node, prefix=()):
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and "." not in key:
                yield prefix + (key,)
                yield from _key_paths(value, prefix + (key,))


@PROPS
@given(which=st.integers(0, len(CONFIGS) - 1), rng=st.randoms(use_true_random=False),
       mutate=st.booleans(), value=st.sampled_from(["true", "false", "8", "sdpa", "1e-4",
                                                    "'quoted'", "bfloat16"]))
def test_yaml_and_json_edits_parse_and_set_the_value(which, rng, mutate, value):
    suffix, text = CONFIGS[which]
    kind = "json" if suffix == ".json" else "yaml"
    if mutate:
        text = fuzz.mutate(text, rng)
    try:
        data = yaml.safe_load(text) if kind == "yaml" else json.loads(text)
    except Exception:  # noqa: BLE001
        assume(False)
    assume(isinstance(data, dict) and data)
    paths = list(_key_paths(data))
    assume(paths)
    base = rng.choice(paths)
    keys = base if rng.random() < 0.6 else base[:-1] + ("lintlora_new_key",)
    op = EditOp("yaml_set", Span("c" + suffix, 1, 1), value, ".".join(keys))
    try:
        edits = resolve(Fix("t", FixSafety.SAFE, (op,)), text, kind)
    except FixError:
        assume(False)
    new = apply_edits(text, edits)
    _only_edited_bytes_changed(text, new, edits)
    loaded = yaml.safe_load(new) if kind == "yaml" else json.loads(new)
    node = loaded
    for key in keys:
        node = node[key]
    expected = yaml.safe_load(value)
    assert node == expected or (kind == "json" and isinstance(expected, float)) or \
        str(node) == str(expected), (keys, node, value)
    assert resolve(Fix("t", FixSafety.SAFE, (op,)), new, kind) == ()


SHELL = ["torchrun --nproc_per_node 2 train.py --fp16 True --lr 1e-4\n",
         "accelerate launch train.py \\\n  --bf16 \\\n  --lr=2e-5  # go\n",
         "#!/bin/bash\nset -e\npython train.py --config cfg.yaml\necho done\n"]


@PROPS
@given(which=st.integers(0, len(SHELL) - 1), option=st.sampled_from(["--fp16", "--bf16", "--lr",
                                                                      "--gradient_checkpointing"]),
       value=st.sampled_from(["True", "False", "3e-4", "a b"]))
def test_launch_edits_touch_only_the_command_and_are_idempotent(which, option, value):
    import shlex

    text = SHELL[which]
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "train.py" in x)
    op = EditOp("launch_set", Span("run.sh", line, 1), value, option)
    edits = resolve(Fix("t", FixSafety.SAFE, (op,)), text, "shell")
    new = apply_edits(text, edits)
    _only_edited_bytes_changed(text, new, edits)
    command = new.replace("\\\n", " ").splitlines()[line - 1].split("#")[0]
    words = shlex.split(command)
    assert option in words or any(w.startswith(option + "=") for w in words)
    assert resolve(Fix("t", FixSafety.SAFE, (op,)), new, "shell") == ()


def test_fix_over_the_fixtures_parses_and_a_second_pass_changes_nothing(tmp_path, monkeypatch):
    import fix_support
    from lintlora.autofix import plan_fixes, write_back
    from lintlora.engine import lint_paths
    from lintlora.settings import Settings

    copy = tmp_path / "fixtures"
    shutil.copytree(os.path.join(REPO, "fixtures"), copy, symlinks=True)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)

    def lint():
        return lint_paths([str(copy)], rules=fix_support.TEST_RULES, jobs=1)

    result = lint()
    fixable = [f for f in result.findings if f.autofix is not None]
    assert fixable, "the test rules find something to fix in the fixtures"
    run = plan_fixes(result.findings, lambda p: Settings(), unsafe=True, linted=result.files)
    written, problems = write_back(run)
    assert written and not problems
    for path in written:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if path.endswith(".py"):
            assert _parses_python(text), path
        elif path.endswith((".yaml", ".yml")):
            yaml.safe_load(text)
        elif path.endswith((".json", ".ipynb")):
            json.loads(text)
    again = lint()
    assert not [f for f in again.findings if f.autofix is not None and f.code == "TX001"]
    second = plan_fixes(again.findings, lambda p: Settings(), unsafe=True, linted=again.files)
    assert second.plan.changed() == []
