"""Resource bombs and values beyond range (issue 12, items 6, 10 and 11).

A pull request controls the files lintlora reads, so none of them may take minutes or
gigabytes, or crash the estimator: the user's arithmetic is bounded before it is computed
(:mod:`lintlora.extract.pybounds`), the work per file is counted up front
(:mod:`lintlora.extract.limits`), the per-setup work is linear, the estimator bounds what it
reads (:mod:`lintlora.estimate.bounds`), and a valid file that is merely deep for LibCST is a
limit of lintlora (``LL998``), not a syntax error. The bombs are the generators of
``bench/hostile.py`` at sizes that keep each test fast; where a bound is what is tested, the
bound is lowered instead of the input grown. Allocation is measured with :mod:`tracemalloc`
and work by counting calls, so nothing here depends on the machine's speed except the
generous wall-clock guards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest

from bench_support import load_bench
from lintlora.engine import lint_paths
from lintlora.extract import ExtractError
from lintlora.extract.notebook import extract_notebook
from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

hostile = load_bench("hostile")
REPO = Path(__file__).resolve().parents[1]
HEAD = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "from peft import LoraConfig, get_peft_model\n")


def _setting(source: str, path: str = "training.per_device_train_batch_size"):
    (setup,) = extract_python("t.py", source)
    return setup.get(path)


def _peak_mib(fn) -> tuple[object, float]:
    """``fn()`` and the peak of Python allocations while it ran, in MiB."""
    tracemalloc.start()
    try:
        result = fn()
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak / 2**20


# ---- item 6: the user's arithmetic, bounded before it is computed -----------------------------

def test_a_power_chain_is_unresolved_not_computed():
    _name, source = hostile.arith_power(steps=3)  # 10**64, then **64 twice: 10**262144
    start = time.perf_counter()
    batch = _setting(source)
    assert time.perf_counter() - start < 20
    assert not batch.known and "2**128" in batch.source


def _joined() -> tuple[str, str]:
    # one join of six 9,000-character strings: 100,000 characters from one call
    return "join.py", (HEAD + "s = 'x' * 9000\nt = s.join([s, s, s, s, s, s])\n"
                       "args = TrainingArguments(output_dir='o', run_name=t)\n")


@pytest.mark.parametrize("make, path", [
    (lambda: hostile.string_repeat("10**8"), "training.run_name"),
    (lambda: hostile.tuple_repeat("10**7"), "training.per_device_train_batch_size"),
    (lambda: hostile.string_doubling(steps=22, how="fstring"), "training.run_name"),
    (_joined, "training.run_name"),
    (lambda: hostile.string_doubling(steps=22, how="format"), "training.run_name"),
    (lambda: hostile.string_doubling(steps=19, how="percent"), "training.run_name"),
    (lambda: hostile.string_replace(steps=4), "training.run_name"),
    (lambda: hostile.format_width("100000000"), "training.run_name"),
    (lambda: hostile.list_extend(steps=22), "training.per_device_train_batch_size"),
    (lambda: hostile.star_doubling(steps=19), "training.per_device_train_batch_size"),
], ids=["str*n", "tuple*n", "f-string", "join", "format", "percent", "replace", "width",
        "extend", "unpacking"])
def test_growing_values_are_refused_before_they_are_allocated(make, path):
    _name, source = make()
    extract_python("warm.py", hostile.arith_power(steps=1)[1])  # imports are not the bomb's
    value, peak = _peak_mib(lambda: _setting(source, path))
    assert peak < 8, f"{peak:.0f} MiB allocated"  # about 0.1-6 MiB with the bounds
    assert not value.known and value.source, value


def test_a_shared_tuple_tree_is_not_walked():
    # t1 = (t0, t0) ...: 2**20 leaves in 20 small tuples; str() of it would be 6 MB
    _name, source = hostile.tuple_sharing(steps=20)
    value, peak = _peak_mib(lambda: _setting(source, "training.per_device_train_batch_size"))
    assert not value.known and peak < 20


def test_an_integer_literal_beyond_the_bound_says_so():
    batch = _setting(HEAD + f"args = TrainingArguments(output_dir='o', "
                            f"per_device_train_batch_size={10**60})\n")
    assert not batch.known and "2**128" in batch.source


def test_nesting_beyond_the_bound_is_unresolved():
    depth = 40  # under CPython's 200 brackets, over the value bound of 32 levels
    source = HEAD + "t = " + "(" * depth + "1" + ",)" * depth + "\n" \
        "args = TrainingArguments(output_dir='o', run_name=t)\n"
    name = _setting(source, "training.run_name")
    assert not name.known  # the innermost levels are refused; the outer ones hold them


def test_the_file_budget_stops_many_bounded_values(monkeypatch):
    from lintlora.extract import pybounds

    monkeypatch.setattr(pybounds, "FILE_BUDGET", 50_000)
    # 40 computed strings of 5,000 characters each: 200,000 units, four times the budget
    lines = ["s0 = 'x' * 5000"] + [f"s{i} = s0 + '{i}'" for i in range(1, 41)]
    source = HEAD + "\n".join(lines) + "\nd = {" + ", ".join(
        f"'k{i}': s{i}" for i in range(1, 41)) + "}\nargs = TrainingArguments(output_dir='o', " \
        "run_name=d['k40'])\n"
    name = _setting(source, "training.run_name")
    assert not name.known and "for one file" in name.source


def test_values_within_the_bounds_still_resolve():
    source = HEAD + textwrap.dedent("""
        bs = 2 ** 3
        steps = (1 << 4) * 3
        name = f"run-{bs}" + "-" * 3 + "x".join(["a", "b"]) + "{}".format(7) + "%02d" % 5
        mods = ["q_proj", "v_proj"] * 2
        args = TrainingArguments(output_dir='o', per_device_train_batch_size=bs,
                                 gradient_accumulation_steps=steps, run_name=name)
        LoraConfig(r=2**7, target_modules=mods)
    """)
    (setup,) = extract_python("t.py", source)
    assert setup.get("training.per_device_train_batch_size").value == 8
    assert setup.get("training.gradient_accumulation_steps").value == 48
    assert setup.get("training.run_name").value == "run-8---axb705"
    assert setup.lora.r.value == 128


# ---- item 6: the work of one file ---------------------------------------------------------------

def _positions_asked(monkeypatch, source: str) -> int:
    """How many node positions the extractor asks for while extracting ``source``."""
    from lintlora.extract import _cstpos

    counted = [0]
    real = _cstpos.PositionIndex.get

    def get(self, node):
        counted[0] += 1
        return real(self, node)

    monkeypatch.setattr(_cstpos.PositionIndex, "get", get)
    extract_python("big.py", source)
    return counted[0]


def test_the_work_per_setup_does_not_grow_with_the_file(monkeypatch):
    # each setup once read the text of every call of the file (with_tokenizer_length): work
    # quadratic in the number of setups. Twice the setups must cost about twice the work.
    block = len(hostile._BLOCK.format(i=0, bs=1, r=8))
    small = _positions_asked(monkeypatch, hostile.big_script(len(hostile._SCRIPT_HEADER)
                                                             + 16 * block + 100)[1])
    large = _positions_asked(monkeypatch, hostile.big_script(len(hostile._SCRIPT_HEADER)
                                                             + 32 * block + 100)[1])
    assert large < 2.5 * small, (small, large)


def test_setups_beyond_the_cap_are_left_out_with_a_notice(tmp_path):
    from lintlora.extract.limits import MAX_SETUPS

    name, source = hostile.many_calls(MAX_SETUPS + 36)
    (tmp_path / name).write_text(source)
    result = lint_paths([str(tmp_path / name)], jobs=1)
    assert len(result.setups[str(tmp_path / name)]) == MAX_SETUPS
    (notice,) = result.notices
    assert notice.code == "LL998" and f"first {MAX_SETUPS}" in notice.message
    assert f"{MAX_SETUPS + 36}" in notice.message
    assert result.errors == []


def test_a_file_past_the_token_limit_is_refused_before_any_parse(monkeypatch):
    import lintlora.extract.python as python

    def no_parse(*_args, **_kwargs):
        raise AssertionError("parsed although too large to analyse")

    import lintlora.prefilter as prefilter

    monkeypatch.setattr(python, "preflight", no_parse)
    monkeypatch.setattr(prefilter, "skips_unparsed", no_parse)
    _name, source = hostile.big_script(400_000)  # about 65,000 tokens
    with pytest.raises(ExtractError) as info:
        extract_python("big.py", source)
    assert info.value.code == "LL998" and "too large to analyse" in info.value.message
    assert "50,000" in info.value.message


def test_counting_tokens_is_linear_whatever_the_quotes():
    from lintlora.extract.limits import python_too_large

    # an unclosed string of escaped quotes once cost one scan to the end of the line per quote
    start = time.perf_counter()
    assert python_too_large("x = 1\n" + '\\"' * 200_000) is None
    _name, source = hostile.escaped_quotes(200_000)  # valid: one string of 200,000 escapes
    assert python_too_large(source) is None
    assert time.perf_counter() - start < 5


def test_a_large_file_naming_no_library_is_skipped_unparsed(monkeypatch):
    import lintlora.extract.python as python
    import lintlora.prefilter as prefilter

    def no_parse(*_args, **_kwargs):
        raise AssertionError("parsed a file that cannot hold a setup")

    monkeypatch.setattr(python, "preflight", no_parse)
    monkeypatch.setattr(prefilter, "skips_unparsed", no_parse)
    source = "".join(f"value_{i} = compute({i})\n" for i in range(60_000))  # a data table
    assert extract_python("table.py", source) == []


def test_a_notebook_past_the_cell_limit_is_refused_up_front():
    from lintlora.extract.limits import MAX_NOTEBOOK_CELLS

    _name, text = hostile.big_notebook(cells=MAX_NOTEBOOK_CELLS + 1)
    start = time.perf_counter()
    with pytest.raises(ExtractError) as info:
        extract_notebook("big.ipynb", text)
    assert time.perf_counter() - start < 10
    assert info.value.code == "LL998" and f"{MAX_NOTEBOOK_CELLS + 1:,} cells" in info.value.message


def _lint_in_child(path: Path, timeout: float) -> dict:
    """``lintlora --format json`` on ``path`` in a child process (a bomb that goes off is a
    failed test, not a stalled one); its seconds and report."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--format", "json",
                           "--", str(path)], capture_output=True, text=True, timeout=timeout,
                          cwd=str(REPO))
    report = json.loads(done.stdout)
    report["seconds"] = time.perf_counter() - start
    report["exit"] = done.returncode
    return report


def test_a_5_mb_training_script_gets_ll998_quickly(tmp_path):
    name, source = hostile.big_script()  # 2,500 ordinary setups, under the 5 MiB size limit
    (tmp_path / name).write_text(source)
    report = _lint_in_child(tmp_path / name, timeout=120)
    assert report["seconds"] < 30
    ((error),) = report["errors"]
    assert error["code"] == "LL998" and "too large to analyse" in error["message"]
    assert report["exit"] == 1


def test_a_script_at_the_limits_is_analysed_within_the_budget(tmp_path):
    name, source = hostile.big_script(280_000)  # just under the token limit: 128 setups
    (tmp_path / name).write_text(source)
    report = _lint_in_child(tmp_path / name, timeout=120)
    assert report["errors"] == [] and report["exit"] in (0, 1)
    assert report["seconds"] < 30  # about 4 s on the 2 cores of the development machine
    assert any("training setups were analysed" in n["message"] for n in report["notices"])


# ---- item 10: values beyond the estimator's range -------------------------------------------------

def _estimate(source: str):
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.from_setup import estimate_setup

    (setup,) = extract_python("t.py", source)
    return estimate_setup(setup, resolve_architecture("meta-llama/Llama-2-7b-hf"), None)


@pytest.mark.parametrize("big", [str(10**400), "10**400", "2**120", str(10**60), "1e400",
                                 "float('nan')"])
def test_sizes_beyond_range_are_assumed_with_a_note(big):
    estimate = _estimate(HEAD + textwrap.dedent(f"""
        model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')
        model = get_peft_model(model, LoraConfig(r={big}, lora_alpha=16))
        args = TrainingArguments(output_dir='o', per_device_train_batch_size={big}, bf16=True)
        Trainer(model=model, args=args, max_seq_length={big}).train()
    """))
    assert estimate.inputs.batch_size == 1 and estimate.inputs.seq_len <= 4096
    assert estimate.inputs.lora_r == 8
    assert estimate.device_bytes < 2**40  # a real figure, not 10**50 GiB
    text = " ".join(estimate.assumptions)
    assert "batch size unknown" in text or "beyond lintlora's bound" in text


def test_a_bounded_value_beyond_the_estimators_bound_names_its_line():
    estimate = _estimate(HEAD + "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
                                "args = TrainingArguments(output_dir='o',\n"
                                "    per_device_train_batch_size=2**100)\n"
                                "Trainer(model=model, args=args).train()\n")
    assert estimate.inputs.batch_size == 1
    (note,) = [a for a in estimate.assumptions if "bound" in a]
    assert "per_device_train_batch_size" in note and "line 5" in note


def test_the_trainable_count_refuses_a_rank_beyond_its_bound():
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.params import count_trainable

    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    with pytest.raises(ValueError, match="bound"):
        count_trainable(arch, 2**200, ("q_proj", "v_proj"))
    assert count_trainable(arch, 16, ("q_proj", "v_proj")).lora_params > 0


@pytest.mark.parametrize("case", ["big_literals", "big_yaml_values"])
def test_no_internal_error_for_values_beyond_range(tmp_path, case):
    name, text = hostile.CASES[case]()
    (tmp_path / name).write_text(text)
    result = lint_paths([str(tmp_path / name)], jobs=1)
    assert not result.internal_error, [e.message for e in result.errors]
    assert result.files


def test_a_yaml_size_beyond_range_says_which_bound(tmp_path):
    from lintlora.engine import read_setups

    name, text = hostile.big_yaml_values()
    (tmp_path / name).write_text(text)
    (setup,) = read_setups(str(tmp_path / name))
    for path in ("lora.r", "training.per_device_train_batch_size"):
        s = setup.get(path)
        assert s.origin is Origin.UNKNOWN and "lintlora's bound" in (s.source or ""), path
        assert s.span is not None and s.span.line > 1


# ---- item 11: deep for LibCST is a limit of lintlora, not a syntax error --------------------------

@pytest.mark.parametrize("make", [lambda: hostile.concatenated_strings(520),
                                  lambda: hostile.elif_chain(520),
                                  lambda: hostile.long_sum(490)],
                         ids=["520 prompt strings", "520 elifs", "490-term sum"])
def test_valid_deep_files_are_analysed(tmp_path, make):
    name, source = make()
    (tmp_path / name).write_text(source)
    result = lint_paths([str(tmp_path / name)], jobs=1)
    assert [f for f in result.findings if f.code == "LL000"] == []
    assert result.errors == []
    assert result.setups[str(tmp_path / name)]


@pytest.mark.parametrize("make, words", [
    (lambda: hostile.long_sum(600), "500 levels"),
    (lambda: hostile.concatenated_strings(2_500), "2000 levels"),
    (lambda: hostile.elif_chain(2_500), "2000 levels"),
], ids=["600-term sum", "2,500 prompt strings", "2,500 elifs"])
def test_valid_files_past_the_depth_limits_get_ll998(tmp_path, make, words):
    name, source = make()
    (tmp_path / name).write_text(source)
    result = lint_paths([str(tmp_path / name)], jobs=1)
    assert [f for f in result.findings if f.code == "LL000"] == []
    ((error),) = result.errors
    assert error.code == "LL998" and "limit of lintlora" in error.message and words in error.message
    assert error.line is not None
    assert result.exit_code() == 1


def test_a_file_libcst_refuses_but_cpython_parses_is_ll998():
    from lintlora.extract.pysyntax import syntax_error

    class Refusal(Exception):
        message = "Syntax Error @ 3:1.\nparser error: error at 3:1: expected one of STRING"

    err = syntax_error(Refusal(), "x = 1\ny = 2\n", None)
    assert err.code == "LL998" and "LibCST" in err.message
    err = syntax_error(Refusal(), "x = (\n", None)
    assert err.code == "LL000"


def test_a_real_syntax_error_stays_ll000():
    with pytest.raises(ExtractError) as info:
        extract_python("bad.py", HEAD + "x = (1,\ndef f(:\n")
    assert info.value.code == "LL000"
