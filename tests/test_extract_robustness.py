"""Hostile or broken input: a clear ExtractError with a location, never a crash or a hang."""

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lintlora.extract import ExtractError
from lintlora.extract.notebook import extract_notebook
from lintlora.extract.python import extract_python

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "python"
SCRIPTS = [p.read_text() for p in sorted(FIX.glob("*.py"))]


def outcome(source: str):
    try:
        return extract_python("f.py", source)
    except ExtractError as exc:
        # LL000: CPython refuses the file too; LL998: valid, but past a limit of lintlora
        assert exc.message and exc.code in ("LL000", "LL998")
        return exc


HOSTILE = {
    # each of these crashed or stalled LibCST's native parser before the preflight check
    "nested brackets": "x = " + "(" * 5000 + "1" + ")" * 5000,
    "nested lists": "x = " + "[" * 1500 + "]" * 1500,
    "long sum": "x = " + " + ".join(["1"] * 20000),
    "unary chain": "x = " + "-" * 20000 + "1",
    "not chain": "x = " + "not " * 5000 + "y",
    "attribute chain": "x = a" + ".b" * 20000,
    "call chain": "x = f" + "()" * 20000,
    "deep blocks": "".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "pass",
    "null bytes": "import torch\x00\nx = 1",
    "lone surrogate": "import torch\nx = '\udcff'\n",
    "binary junk": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_refused_quickly(name):
    start = time.perf_counter()
    result = outcome("import torch\n" + HOSTILE[name] + "\n")
    assert time.perf_counter() - start < 10, name
    assert isinstance(result, (list, ExtractError))


def test_refusal_names_the_problem():
    err = outcome("import torch\nx = " + " + ".join(["1"] * 1200) + "\n")
    assert isinstance(err, ExtractError)
    assert "nested more than" in err.message and err.line == 2
    assert err.code == "LL998"  # valid Python: a limit of lintlora, not a syntax error


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("import torch.()[]{}=:,'\"\n #+-*\\x01peftLoraConfig")),
               max_size=400))
def test_random_text_never_raises_anything_else(text):
    outcome(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SCRIPTS) - 1), st.integers(0, 10_000), st.integers(0, 40),
       st.text(max_size=8))
def test_mutated_scripts_never_raise_anything_else(which, at, cut, insert):
    src = SCRIPTS[which]
    at %= len(src) + 1
    outcome(src[:at] + insert + src[at + cut:])


@settings(max_examples=40, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=4)
                    | st.dictionaries(st.sampled_from(["cells", "cell_type", "source", "input"]),
                                      children, max_size=4), max_leaves=20))
def test_random_notebook_json_never_raises_anything_else(data):
    import json

    try:
        extract_notebook("n.ipynb", json.dumps(data))
    except ExtractError:
        pass
