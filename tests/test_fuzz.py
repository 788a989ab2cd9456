"""Property-based fuzzing of the whole lint (issue 7): no exception escapes ``lint_paths``, no
``LL999`` internal error, and the JSON and SARIF output stay valid JSON, whatever the input.

Inputs: the fixtures mutated (tokens and lines deleted, duplicated, swapped, inserted, lines
re-indented, text truncated, names/numbers/strings replaced, bytes damaged), notebooks mutated
inside their cells, random YAML shaped like training configs, YAML dumped from random data
under training keys, and valid-but-odd Python from hypothesmith's grammar strategy. The
mutation functions are ``bench/fuzz.py``'s, whose long run (``python bench/fuzz.py``) tries
tens of thousands of inputs; here the examples are bounded to keep CI fast.
"""

from __future__ import annotations

import os
import random
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_support import load_bench

fuzz = load_bench("fuzz")
CORPUS = fuzz.load_corpus()
BY_SUFFIX = {suffix: [text for s, text in CORPUS if s == suffix] for suffix, _ in CORPUS}
FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(files: list[tuple[str, bytes]]) -> None:
    """Write the inputs to a fresh folder, lint it in one run, and assert no problem."""
    with tempfile.TemporaryDirectory(prefix="lintlora-fuzz-test-") as folder:
        for i, (suffix, data) in enumerate(files):
            with open(os.path.join(folder, f"input_{i}{suffix}"), "wb") as handle:
                handle.write(data)
        problems = fuzz.check_run([folder])
        assert problems == [], "\n".join(problems)


def test_the_corpus_covers_every_kind():
    assert {".py", ".ipynb", ".json"} <= set(BY_SUFFIX)
    assert BY_SUFFIX.get(".yaml") or BY_SUFFIX.get(".yml")
    assert len(CORPUS) > 50


def test_the_check_catches_an_escaping_exception(monkeypatch):
    """Control: if something escaped lint_paths, check_run would say so."""
    import lintlora.engine as engine

    def explode(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "lint_paths", explode)
    problems = fuzz.check_run(["nothing"])
    assert problems and problems[0].startswith("escaped lint_paths: RuntimeError: boom")


def test_mutations_do_change_the_text():
    rng = random.Random(0)
    source = BY_SUFFIX[".py"][0]
    changed = sum(fuzz.MUTATIONS[name](source, rng) != source
                  for name in sorted(fuzz.MUTATIONS) for _ in range(5))
    assert changed > 0.8 * 5 * len(fuzz.MUTATIONS)


@FAST
@given(which=st.integers(0, len(BY_SUFFIX[".py"]) - 1), rng=st.randoms(use_true_random=False),
       damage=st.booleans())
def test_mutated_python_scripts(which, rng, damage):
    data = fuzz.mutate(BY_SUFFIX[".py"][which], rng).encode("utf-8", "surrogatepass")
    if damage:
        data = fuzz.damage_bytes(data, rng)
    _check([(".py", data)])


@FAST
@given(which=st.integers(0, len(BY_SUFFIX[".ipynb"]) - 1), rng=st.randoms(use_true_random=False),
       raw=st.booleans())
def test_mutated_notebooks(which, rng, raw):
    text = BY_SUFFIX[".ipynb"][which]
    text = fuzz.mutate(text, rng) if raw else fuzz.mutate_notebook_cells(text, rng)
    _check([(".ipynb", text.encode("utf-8", "surrogatepass"))])


CONFIGS = [(s, t) for s, t in CORPUS if s in (".yaml", ".yml", ".json")]


@FAST
@given(which=st.integers(0, len(CONFIGS) - 1), rng=st.randoms(use_true_random=False),
       damage=st.booleans())
def test_mutated_configs(which, rng, damage):
    suffix, text = CONFIGS[which]
    data = fuzz.mutate(text, rng).encode("utf-8", "surrogatepass")
    if damage:
        data = fuzz.damage_bytes(data, rng)
    _check([(suffix, data)])


@FAST
@given(rng=st.randoms(use_true_random=False))
def test_random_yaml_documents(rng):
    _check([(".yaml", fuzz.random_yaml(rng).encode("utf-8", "surrogatepass"))])


_SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
            | st.sampled_from(["bf16", "fp16", "auto", "all-linear", "q_proj", "nf4",
                               "meta-llama/Llama-2-7b-hf", "paged_adamw_8bit"]))
_KEYS = st.sampled_from(fuzz._YAML_KEYS) | st.text(min_size=1, max_size=12)
_DATA = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(_KEYS, inner, max_size=5), max_leaves=25)


@FAST
@given(data=st.dictionaries(_KEYS, _DATA, min_size=1, max_size=12), as_json=st.booleans())
def test_random_data_under_training_keys(data, as_json):
    """Well-formed documents with values of any type where the dialects expect numbers,
    strings or lists: the dialect mapping and the rules must cope."""
    import json

    import yaml

    if as_json:
        text = json.dumps(data, allow_nan=True)
        _check([(".json", text.encode())])
    else:
        text = yaml.safe_dump(data, allow_unicode=True)
        _check([(".yaml", text.encode("utf-8", "surrogatepass"))])


@FAST
@given(inputs=st.lists(st.tuples(st.sampled_from(sorted(BY_SUFFIX)),
                                 st.randoms(use_true_random=False)), min_size=2, max_size=5))
def test_several_broken_files_in_one_run(inputs):
    """Isolation: bad files together in one run, each mutated from its own kind."""
    files = []
    for suffix, rng in inputs:
        text = rng.choice(BY_SUFFIX[suffix])
        files.append((suffix, fuzz.mutate(text, rng).encode("utf-8", "surrogatepass")))
    _check(files)


try:
    import hypothesmith  # grammar-based Python programs (slow: ~1 s an example)
except ImportError:  # pragma: no cover - optional test dependency
    hypothesmith = None


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(data=st.data())
def test_valid_odd_python_from_the_grammar(data):
    """Syntactically valid programs no human writes, with a training setup appended so the
    extractor's resolver has to walk through them."""
    source = data.draw(hypothesmith.from_grammar())
    tail = ("\nfrom transformers import TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    _check([(".py", (source + tail).encode("utf-8", "surrogatepass"))])
