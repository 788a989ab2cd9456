"""The prefilter (lintlora/prefilter.py): a file that cannot hold a training setup is skipped
before LibCST parses it, and that never changes what a run reports."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from bench_support import load_bench

import lintlora.prefilter as prefilter
from lintlora.engine import lint_paths
from lintlora.extract.python import extract_python
from lintlora.report import render

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures")


def _corpus_module():
    return load_bench("corpus")


def _report(result) -> str:
    out = io.StringIO()
    render(result, "json", out)
    return out.getvalue()


@pytest.fixture
def no_prefilter(monkeypatch):
    """Turn the prefilter off: every file is parsed, as before it existed."""
    def off():
        monkeypatch.setattr(prefilter, "skips_unparsed", lambda text: False)
    return off


def test_the_word_lists_cover_the_extractors_own_test():
    import lintlora.extract.python as python

    assert set(python._INTERESTING_ROOTS) <= set(prefilter.LIBRARY_ROOTS)
    assert set(python._INTERESTING_METHODS) <= set(prefilter.RECOGNISED_METHODS)


def test_over_every_fixture_the_prefilter_changes_nothing(monkeypatch, no_prefilter):
    with_filter = lint_paths([FIXTURES], keep_setups=True)
    no_prefilter()
    without = lint_paths([FIXTURES], keep_setups=True)
    assert with_filter.findings  # the fixtures have findings to lose
    assert _report(with_filter) == _report(without)
    assert with_filter.setups == without.setups
    # and, file by file: a fixture the prefilter would skip has no finding at all
    with_findings = {f.span.path for f in without.findings}
    for path in without.files:
        if path.endswith(".py"):
            with open(path, encoding="utf-8", errors="replace") as handle:
                if prefilter.skips_unparsed(handle.read()):
                    assert path not in with_findings, path


def test_on_a_generated_repository_it_skips_plain_files_and_changes_nothing(tmp_path,
                                                                           no_prefilter):
    # the corpus copies every fixture first, then generates the rest: leave room for 60 files
    # of its own however many fixtures there are
    module = _corpus_module()
    fixtures = sum(1 for p in module.FIXTURES.rglob("*") if p.is_file() and "plugin" not in p.parts
                   and p.suffix in (".py", ".ipynb", ".yaml", ".yml", ".json"))
    corpus = module.build_corpus(tmp_path / "repo", files=fixtures + 60, seed=3)
    skipped = [f for f in corpus.python_files()
               if prefilter.skips_unparsed((tmp_path / "repo" / f).read_text())]
    plain = [f for f in corpus.python_files() if corpus.kinds[f] == "plain"]
    assert plain and set(plain) <= set(skipped)  # every plain module is skipped
    assert not any(corpus.kinds[f] == "training" for f in skipped)
    with_filter = lint_paths([str(tmp_path / "repo")], keep_setups=True)
    no_prefilter()
    without = lint_paths([str(tmp_path / "repo")], keep_setups=True)
    assert _report(with_filter) == _report(without)
    assert with_filter.setups == without.setups
    assert with_filter.files == without.files  # skipped files still count as checked


@pytest.mark.parametrize("text", [
    "import os\nprint 'training'\n",              # Python 2
    "def f(:\n    pass\n",                         # a syntax error
    "x = " + "(" * 300 + "1" + ")" * 300 + "\n",  # past CPython's bracket limit
    "if True:\n        x = 1\n\ty = 2\n",          # inconsistent tabs
])
def test_a_file_cpython_refuses_is_not_skipped_and_keeps_its_ll000(tmp_path, text):
    assert not prefilter.may_hold_setup(text)
    assert not prefilter.skips_unparsed(text)
    (tmp_path / "broken.py").write_text(text)
    result = lint_paths([str(tmp_path)])
    assert [f.code for f in result.findings] == ["LL000"]


def test_words_keep_a_file_even_in_comments_and_longer_names():
    assert not prefilter.skips_unparsed("import torchvision\n")          # substring of torch
    assert not prefilter.skips_unparsed("# we used to call model.backward()\nx = 1\n")
    assert prefilter.skips_unparsed("import numpy as np\nx = np.zeros(3)\n")
    assert prefilter.skips_unparsed("\ufeffx = 1\n")  # a BOM is not a reason to parse


def test_a_skipped_file_is_never_given_to_libcst(tmp_path):
    # deep enough that LibCST's parser would take seconds (or crash), flat for CPython's AST:
    # the prefilter answers first, so the child neither crashes nor imports LibCST
    (tmp_path / "deep_plain.py").write_text("x = " + " and ".join(["a"] * 20_000) + "\n")
    (tmp_path / "util.py").write_text("import json\n\n\ndef load(p):\n    return json.load(p)\n")
    code = ("import sys, json\nfrom lintlora.engine import lint_paths\n"
            f"r = lint_paths([{str(tmp_path)!r}])\n"
            "print(json.dumps([len(r.files), len(r.findings), 'libcst' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [2, 0, False]


def test_suppression_comments_in_a_skipped_file_are_still_read(tmp_path):
    # LL006 fires on the file alone, so an unused suppression of it is LL900 (LL001's would
    # not be: its firing depends on the model, Rule.depends_on_settings)
    (tmp_path / "util.py").write_text("x = 1  # lintlora: ignore[LL006]\n")
    assert prefilter.skips_unparsed((tmp_path / "util.py").read_text())
    result = lint_paths([str(tmp_path)])
    assert [f.code for f in result.findings] == ["LL900"]  # unused, as before the prefilter


def test_notebook_code_is_filtered_after_json_decoding(tmp_path):
    def notebook(source: str) -> str:
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                      "execution_count": None, "source": source}],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    train = ("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    # "\u0074" is "t": the raw JSON text never spells the library's name
    hidden = notebook(train).replace("transformers", "\\u0074ransformers")
    assert "transformers" not in hidden
    (tmp_path / "hidden.ipynb").write_text(hidden)
    (tmp_path / "plain.ipynb").write_text(notebook("x = 1\nprint(x)\n"))
    result = lint_paths([str(tmp_path)])
    assert [(os.path.basename(f.span.path), f.code) for f in result.findings] == [
        ("hidden.ipynb", "LL001")]


def test_extract_python_answers_no_setup_for_plain_code_without_parsing(monkeypatch):
    import lintlora.extract.python as python

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(python, "preflight", no_parse)
    assert extract_python("u.py", "def f(x):\n    return x * 2\n") == []
    with pytest.raises(AssertionError):
        extract_python("t.py", "import torch\n")


def test_fixture_copy_with_the_prefilter_skipping_everything_is_still_linted(tmp_path):
    # the count of checked files does not depend on the prefilter
    shutil.copytree(os.path.join(FIXTURES, "rules"), tmp_path / "rules")
    (tmp_path / "rules" / "plain_helper.py").write_text("def add(a, b):\n    return a + b\n")
    result = lint_paths([str(tmp_path / "rules")])
    assert any(p.endswith("plain_helper.py") for p in result.files)
