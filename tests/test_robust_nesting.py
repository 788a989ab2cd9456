"""Deep nesting (issue 7): thousands of nested brackets, ``if``s, chained operators, ``elif``s.

LibCST's native parser recurses on the C stack and kills the interpreter (a segmentation
fault, which no ``except`` can catch) on such input; its Python side raises ``RecursionError``.
Each file must give one clear diagnostic about the nesting, quickly, and the run must go on:
``LL000`` when CPython itself refuses the file (a syntax error), ``LL998`` when CPython parses
it and only lintlora's limits refuse it (issue 12, item 11); a chain that is deep only for
LibCST's tree and cheap to parse (an ``elif`` chain of 520) is analysed.

The files are linted through :func:`lintlora.engine.lint_paths` in a child process, so a crash
fails the test (with the name of the file that crashed) instead of killing pytest. Both
arrangements are checked: the engine as it is, and the engine without its own CPython-AST
nesting guard (``engine._nesting_guard``, which may be removed for speed), so the Python
extractor's preflight (``lintlora/extract/pysyntax.py``) is shown to be enough on its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _chain(n: int) -> dict[str, str]:
    """Constructs nested ``n`` levels deep (each line 2 of its file, after ``import torch``)."""
    return {
        "brackets": "x = " + "(" * n + "1" + ")" * n,
        "lists": "x = " + "[" * n + "]" * n,
        "calls": "x = f" + "()" * n,
        "subscripts": "x = a" + "[0]" * n,
        "attributes": "x = a" + ".b" * n,
        "sum": "x = " + " + ".join(["1"] * n),
        "power": "x = " + "2 ** " * n + "2",
        "unary": "x = " + "-" * n + "1",
        "not": "x = " + "not " * n + "y",
        "lambda": "x = " + "lambda: " * n + "1",
        "ternary": "x = " + "a if b else " * n + "c",
        "and": "x = " + " and ".join(["a"] * n),
        "or": "x = " + " or ".join(["a"] * n),
        "dotted import": "import " + ".".join(["a"] * n),
        "dotted from-import": "from " + ".".join(["a"] * n) + " import b",
        "elif": "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
        "ifs": "".join(" " * i + "if x:\n" for i in range(min(n, 1500))) + " " * min(n, 1500)
               + "pass",
        "tab ifs": "".join("\t" * i + "if x:\n" for i in range(min(n, 1500)))
                   + "\t" * min(n, 1500) + "pass",
        "defs": "".join(" " * i + f"def f{i}():\n" for i in range(min(n, 1500)))
                + " " * min(n, 1500) + "pass",
        # in a compound statement's header (walked by the preflight like a statement)
        "default argument": "def f(a=" + "not " * n + "y):\n    pass",
        "with item": "with (\n    a as b,\n    " + "-" * n + "c as d,\n):\n    pass",
        "decorator": "@d(" + "~" * n + "x)\ndef f():\n    pass",
        "lambda then syntax error": "x = " + "lambda: " * n + "1\ndef f(:\n    pass",
        "and then syntax error": "x = " + " and ".join(["a"] * n) + "\ndef f(:\n    pass",
    }


CHILD = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[3])
    import lintlora.engine as engine
    from lintlora.settings import Settings
    if sys.argv[2] == "without-guard" and hasattr(engine, "_nesting_guard"):
        engine._nesting_guard = lambda kind, text: None
    folder = sys.argv[1]
    runs = ([os.path.join(folder, name)] for name in sorted(os.listdir(folder)))
    if sys.argv[4] == "one-run":
        runs = [[folder]]
    for paths in runs:
        name = os.path.basename(paths[0])
        print("START", name, flush=True)
        start = time.perf_counter()
        result = engine.lint_paths(paths, Settings(max_file_bytes=64 * 2**20))
        print(json.dumps({
            "file": name, "seconds": time.perf_counter() - start,
            "findings": [[f.code, f.span.line, f.message, os.path.basename(f.span.path),
                          f.span.cell] for f in result.findings],
            "errors": [[e.code, e.message] for e in result.errors],
            "exit": result.exit_code()}), flush=True)
""")


def _lint_in_child(folder, arrangement: str, mode: str = "each") -> list[dict]:
    """Lint each file of ``folder`` (``mode="each"``) or the folder in one run
    (``"one-run"``) in a child process; a crash fails the test naming the file."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder), arrangement, REPO, mode],
                          capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    if done.returncode != 0:
        started = [line.split(" ", 1)[1] for line in lines if line.startswith("START ")]
        pytest.fail(f"the interpreter died (status {done.returncode}) while linting "
                    f"{started[-1] if started else '?'} ({arrangement}):\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.fixture(scope="module")
def deep_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deep")
    for depth in (520, 12_000):
        for name, source in _chain(depth).items():
            slug = name.replace(" ", "_").replace("-", "_")
            (folder / f"{slug}_{depth}.py").write_text("import torch\n" + source + "\n")
    return folder


def _diagnostic(result: dict) -> tuple[str, int | None, str] | None:
    """The one nesting diagnostic of a linted file (an LL000 finding or an LL998 error), or
    ``None`` when the file was analysed; no LL999 ever."""
    name = result["file"]
    assert all(code != "LL999" for code, _message in result["errors"]), name
    diagnostics = ([(f[0], f[1], f[2]) for f in result["findings"] if f[0] == "LL000"]
                   + [(code, None, message) for code, message in result["errors"]])
    assert len(diagnostics) <= 1, (name, diagnostics)
    if not diagnostics:
        return None
    code = diagnostics[0][0]
    if code == "LL998":
        assert result["findings"] == [], name
        assert "limit of lintlora" in diagnostics[0][2], name
    else:
        assert code == "LL000" and result["errors"] == [], name
    assert result["exit"] == 1, name
    return diagnostics[0]


@pytest.mark.parametrize("arrangement", ["as-is", "without-guard"])
def test_deep_nesting_is_one_clear_diagnostic_never_a_crash(deep_files, arrangement):
    results = _lint_in_child(deep_files, arrangement)
    assert len(results) == len(os.listdir(deep_files))
    for result in results:
        name = result["file"]
        found = _diagnostic(result)
        if found is None:  # deep only for LibCST's tree, cheap to parse: analysed
            assert name == "elif_520.py", name
            continue
        code, line, message = found
        nesting = any(word in message for word in ("nest", "indentation"))
        if "syntax_error" in name:
            # either the nesting or the syntax error after it (CPython's AST is flat for
            # ``and`` chains, so it reaches the error on line 3) is a clear diagnostic
            assert nesting or ("syntax" in message and line == 3), (name, message, line)
        else:
            assert nesting, (name, message)
        assert result["seconds"] < 30, (name, result["seconds"])


def test_nesting_just_under_the_limit_is_linted_or_refused_cleanly(tmp_path):
    """490 levels: under the preflight's limit (500) but past Python's recursion limit for
    LibCST's visitors: a RecursionError there must surface as LL000, not as an internal error
    (it once became a KeyError from the position recorder, whose message itself recursed)."""
    for name, source in _chain(490).items():
        slug = name.replace(" ", "_").replace("-", "_")
        (tmp_path / f"{slug}.py").write_text("import torch\n" + source + "\n")
    for result in _lint_in_child(tmp_path, "without-guard"):
        _diagnostic(result)  # LL000, LL998 or analysed: never LL999


def test_deep_nesting_does_not_hide_other_files(tmp_path):
    (tmp_path / "a_deep.py").write_text("import torch\nx = " + " and ".join(["a"] * 20_000) + "\n")
    (tmp_path / "b_train.py").write_text(
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    (run,) = _lint_in_child(tmp_path, "without-guard", "one-run")
    got = [(path, code) for code, _line, _message, path, _cell in run["findings"]]
    assert ("b_train.py", "LL001") in got
    # 20,000 chained ``and``: valid Python (one BoolOp for CPython), too deep for LibCST
    assert [code for code, _message in run["errors"]] == ["LL998"]
    assert not any(path == "a_deep.py" for path, _code in got)


def test_deep_notebook_cell_is_refused_with_its_cell(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import torch\n"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["x = 1\n", "y = " + " or ".join(["a"] * 20_000) + "\n"]}]
    (tmp_path / "deep.ipynb").write_text(json.dumps({"cells": cells, "metadata": {},
                                                     "nbformat": 4, "nbformat_minor": 5}))
    for arrangement in ("as-is", "without-guard"):
        (run,) = _lint_in_child(tmp_path, arrangement)
        assert run["findings"] == []
        ((code, message),) = run["errors"]
        assert code == "LL998" and "nest" in message and message.startswith("code cell 2:")
