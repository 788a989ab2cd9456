"""Lint time grows (close to) linearly with file size (issue 7, "bounded time").

``bench/scaling.py`` measures it from 1,000 to 100,000 lines (exponent about 1.1 on the team's
VM); here two sizes eight times apart are compared, loosely enough for a busy CI machine:
linear growth gives a ratio near 8 (about 10 measured), quadratic growth would give 64.
"""

from __future__ import annotations

import time

from bench_support import load_bench

from lintlora.engine import lint_paths
from lintlora.settings import Settings



def _scaling():
    return load_bench("scaling")


def _best_seconds(path, runs: int = 2) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        result = lint_paths([str(path)], Settings(max_file_bytes=1 << 30))
        best = min(best, time.perf_counter() - start)
        assert [f.code for f in result.findings] == ["LL001"] and result.errors == []
    return best


def test_lint_time_grows_about_linearly(tmp_path):
    scaling = _scaling()
    small, large = tmp_path / "small.py", tmp_path / "large.py"
    small.write_text(scaling.script(1_500))
    large.write_text(scaling.script(12_000))
    lint_paths([str(small)])  # imports, catalogs
    ratio = _best_seconds(large) / _best_seconds(small)
    assert ratio < 20, f"12,000 lines took {ratio:.1f} times as long as 1,500 lines"


def test_generated_scripts_have_the_stated_shape():
    scaling = _scaling()
    for lines in (40, 1_000, 12_345):
        text = scaling.script(lines)
        assert text.count("\n") == lines
        assert "gradient_checkpointing=False" in text.splitlines()[lines - 2]
