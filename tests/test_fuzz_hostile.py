"""The hostile-input classes of issue 12, kept fixed: a few cases of every generator in
``bench/fuzz_hostile.py`` (names carrying workflow commands and escapes, reads outside the
project and of special files, arithmetic and YAML bombs, LibCST-deep code, values beyond float
range), each linted as its own small project in a forked child with a memory and time limit
(``bench/fuzz.py``'s ``_in_child``), rendered in every format and checked. One case per class
is linted again with a tampered results cache. ``python bench/fuzz.py`` runs thousands.
"""

from __future__ import annotations

import os
import random
import sys

import pytest

from bench_support import load_bench

fuzz = load_bench("fuzz")
hostile = sys.modules["fuzz_hostile"]

SEEDS = range(5)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the checks run in a forked child")


@pytest.mark.parametrize("kind", sorted(hostile.GENERATORS))
@pytest.mark.parametrize("seed", SEEDS)
def test_hostile_case(kind, seed, tmp_path):
    rng = random.Random(f"{kind}/{seed}")
    case = hostile.GENERATORS[kind](rng)
    folder = tmp_path / "project"
    paths = hostile.write_case(case, str(folder))
    problems = fuzz._in_child(fuzz._hostile_checks,
                              (paths, case, seed == 0, str(tmp_path), seed), limit_s=60)
    assert problems == [], f"{kind} #{seed}: " + "\n".join(problems)


class _Result:
    def __init__(self, findings=(), errors=(), notices=()):
        self.findings, self.errors, self.notices = list(findings), list(errors), list(notices)


def test_the_output_checks_can_fail():
    """Control: each check of :func:`output_problems` reports what it looks for."""
    case = hostile.Case("control")
    problems = hostile.output_problems(case, {
        "json": '{"x": "%s"}' % hostile.SECRET,
        "text": "train.py:1:1 \x1b[2J\n::error file=x::pwned\n",
        "github": "::error file=a::b\n::error file=c::d\n",
        "markdown": "| a |\n|---|\n| <img src=x onerror=alert(1)> |\n",
    }, _Result())
    joined = "\n".join(problems)
    assert "secret leaked into the json output" in joined
    assert "raw control character U+001B in the text output" in joined
    assert "a line starting with '::' (a workflow command) in the text output" in joined
    assert "2 workflow commands in the github output for 0 findings" in joined
    assert "raw HTML in the markdown output" in joined


def test_the_child_reports_a_hang_and_a_death():
    import time

    assert fuzz._in_child(time.sleep, (30,), limit_s=1)[0].startswith("slow: no result")
    assert fuzz._in_child(os._exit, (3,), limit_s=10)[0].startswith("escaped: the child died")
