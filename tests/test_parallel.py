"""``--jobs``: a process pool above a file-count threshold, with output identical to one process
(lintlora/parallel.py)."""

from __future__ import annotations

import gc
import io
import os
import shutil
import signal
import subprocess
import sys

import pytest

import lintlora.parallel as parallel
from lintlora.engine import lint_paths
from lintlora.report import render

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures")

needs_fork = pytest.mark.skipif(not parallel.pool_available(),
                                reason="worker processes are forked (Linux only)")


def _report(result, fmt) -> str:
    out = io.StringIO()
    render(result, fmt, out)
    return out.getvalue()


@needs_fork
def test_two_workers_give_the_same_output_as_one(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    one = lint_paths([str(tmp_path / "fixtures")], jobs=1, keep_setups=True)
    two = lint_paths([str(tmp_path / "fixtures")], jobs=2, keep_setups=True)
    assert one.stats.jobs == 1 and two.stats.jobs == 2  # the pool really ran
    for fmt in ("json", "sarif", "text", "github", "markdown", "rdjson", "gitlab", "junit",
                "concise"):
        assert _report(one, fmt) == _report(two, fmt), fmt
    assert one.files == two.files and one.errors == two.errors and one.notices == two.notices
    assert one.setups == two.setups and list(one.setups) == list(two.setups)
    assert one.cell_lines == two.cell_lines and one.fail_on == two.fail_on
    assert one.exit_code() == two.exit_code()


@needs_fork
def test_no_pool_below_the_threshold(tmp_path):
    for i in range(parallel.POOL_MIN_FILES - 1):
        (tmp_path / f"s{i}.py").write_text("import torch\n")
    assert lint_paths([str(tmp_path)], jobs=4).stats.jobs == 1
    (tmp_path / "one_more.py").write_text("import torch\n")
    assert lint_paths([str(tmp_path)], jobs=4).stats.jobs == 4


@needs_fork
def test_a_worker_that_dies_costs_only_its_file(tmp_path, monkeypatch):
    # a stand-in for a crash of LibCST's native parser: the worker process is killed by
    # SIGSEGV while it lints boom.py; the forked workers inherit this patch
    import lintlora.engine as engine

    real = engine._extract

    def crashing(path, kind, text, explicit):
        if path.endswith("boom.py"):
            import faulthandler

            faulthandler.disable()  # no traceback dump from the dying worker in the test log
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, kind, text, explicit)

    monkeypatch.setattr(engine, "_extract", crashing)
    for i in range(parallel.POOL_MIN_FILES + 4):
        (tmp_path / f"s{i:02d}.py").write_text(
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    (tmp_path / "boom.py").write_text("import torch\n")
    result = lint_paths([str(tmp_path)], jobs=2)
    assert result.stats.crashed == [str(tmp_path / "boom.py")]
    assert [(os.path.basename(e.path), e.code) for e in result.errors] == [("boom.py", "LL999")]
    assert "worker process" in result.errors[0].message
    assert len(result.findings) == parallel.POOL_MIN_FILES + 4  # every other file linted
    assert result.exit_code() == 2


@needs_fork
def test_cache_entries_written_by_workers_are_read_back(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    cache = str(tmp_path / "cache")
    first = lint_paths([str(tmp_path / "fixtures")], jobs=2, cache_dir=cache, keep_setups=False)
    second = lint_paths([str(tmp_path / "fixtures")], jobs=2, cache_dir=cache, keep_setups=False)
    assert first.stats.jobs == 2 and first.stats.cache_stored > 0
    assert second.stats.cache_hits == first.stats.cache_stored and second.stats.jobs == 1
    assert _report(first, "json") == _report(second, "json")


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(tmp_path, enabled):
    (tmp_path / "a.py").write_text("import torch\n")
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        lint_paths([str(tmp_path)])
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_a_run_collects_between_files_only(tmp_path, monkeypatch):
    """Automatic collection is off during a run; each file's garbage (its LibCST tree and scope
    graph) is collected before the next file, so memory stays bounded by one file's."""
    import lintlora.engine as engine

    train = ("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(train * 200)  # enough objects to pass the default threshold
    during, between = [], []
    inside = [False]
    lint_file = engine.lint_file

    def tracked(*args, **kwargs):
        inside[0] = True
        try:
            return lint_file(*args, **kwargs)
        finally:
            inside[0] = False

    def record(phase, info):
        if phase == "start":
            (during if inside[0] else between).append(info["generation"])

    monkeypatch.setattr(engine, "lint_file", tracked)
    was = gc.isenabled()
    gc.callbacks.append(record)
    try:
        gc.enable()
        assert len(lint_paths([str(tmp_path)], jobs=1).files) == 3
        assert during == []
        gc.disable()  # restored by the run: no automatic collection after it either
        between.clear()
        assert len(lint_paths([str(tmp_path)], jobs=1).files) == 3
    finally:
        gc.callbacks.remove(record)
        gc.enable() if was else gc.disable()
    assert during == [] and between == [0, 0]  # before the second and the third file


def test_default_jobs_is_the_cpus_this_process_may_use():
    jobs = parallel.default_jobs()
    assert jobs >= 1
    if hasattr(os, "sched_getaffinity"):
        assert jobs == len(os.sched_getaffinity(0))


def test_cli_jobs_option(tmp_path):
    for i in range(parallel.POOL_MIN_FILES):
        (tmp_path / f"s{i:02d}.py").write_text(
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    outputs = []
    for jobs in ("1", "2"):
        done = subprocess.run([sys.executable, "-m", "lintlora", ".", "--jobs", jobs,
                               "--no-cache", "--format", "json"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count('"LL001"') == parallel.POOL_MIN_FILES
    bad = subprocess.run([sys.executable, "-m", "lintlora", ".", "--jobs", "0"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--jobs" in bad.stderr
