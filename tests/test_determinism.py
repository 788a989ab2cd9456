"""Deterministic output (issue 7): the same input gives byte-identical output in every format,
whatever order the files were found in, the order the paths were given in, the hash seed of
the process (set and dict-of-set iteration), and how the files were linted (one process or a
pool, cold or warm results cache, where the engine offers those).

The input is the shipped fixtures (scripts, notebooks, configs of every dialect, with findings
of every rule), linted with the real extractors, rules and estimator.
"""

from __future__ import annotations

import inspect
import io
import os
import random
import subprocess
import sys

import pytest

from lintlora.engine import lint_paths
from lintlora.report import render
from lintlora.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = [p for p in ("fixtures/python", "fixtures/configs", "fixtures/cases", "fixtures/rules",
                     "fixtures/examples") if os.path.isdir(os.path.join(REPO, p))]
FORMATS = ("json", "sarif", "text", "markdown", "github", "rdjson", "gitlab", "junit", "concise")
GPU = Settings(gpu="rtx3090")


def _outputs(result) -> dict[str, str]:
    out = {}
    for fmt in FORMATS:
        buffer = io.StringIO()
        options = {"color": False} if fmt == "text" else {}
        render(result, fmt, buffer, **options)
        out[fmt] = buffer.getvalue()
    return out


def _lint(paths=PATHS, settings=GPU, **kwargs):
    accepted = inspect.signature(lint_paths).parameters
    return lint_paths(list(paths), settings, **{k: v for k, v in kwargs.items() if k in accepted})


@pytest.fixture(scope="module")
def baseline():
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        result = _lint()
        assert len(result.files) > 50 and len({f.code for f in result.findings}) >= 6
        return _outputs(result)
    finally:
        os.chdir(cwd)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def _patch_discover(monkeypatch, reorder):
    import lintlora.discovery as discovery
    import lintlora.engine as engine

    real = discovery.discover

    def reordered(*args, **kwargs):
        files, missing = real(*args, **kwargs)
        return reorder(list(files)), missing

    for module in (engine, discovery):
        if getattr(module, "discover", None) is real:
            monkeypatch.setattr(module, "discover", reordered)


@pytest.mark.parametrize("order", ["reversed", "shuffled-1", "shuffled-2", "shuffled-3"])
def test_discovery_order_does_not_change_the_output(baseline, in_repo, monkeypatch, order):
    rng = random.Random(order)

    def reorder(files):
        if order == "reversed":
            return files[::-1]
        rng.shuffle(files)
        return files

    _patch_discover(monkeypatch, reorder)
    assert _outputs(_lint()) == baseline


def test_directory_listing_order_does_not_change_the_output(baseline, in_repo, monkeypatch):
    """The operating system lists folders in any order: reversed here, below discovery."""
    real_scandir = os.scandir

    class Reversed:
        def __init__(self, path="."):
            with real_scandir(path) as entries:
                self._entries = iter(list(entries)[::-1])

        def __iter__(self):
            return self

        def __next__(self):
            return next(self._entries)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def close(self):
            pass

    monkeypatch.setattr(os, "scandir", Reversed)
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path=".": real_listdir(path)[::-1])
    assert _outputs(_lint()) == baseline


def test_order_of_the_given_paths_does_not_change_the_output(baseline, in_repo):
    assert _outputs(_lint(PATHS[::-1])) == baseline
    # a file named explicitly as well as inside a named folder counts once
    assert _outputs(_lint(PATHS + ["fixtures/rules/ll001_bad_argparse.py"])) == baseline


def test_repeated_runs_in_one_process_are_identical(baseline, in_repo):
    """Nothing carried over from a previous run (caches of catalogs, rule instances...)."""
    for _ in range(2):
        assert _outputs(_lint()) == baseline


def test_worker_pool_and_results_cache_do_not_change_the_output(baseline, in_repo, tmp_path):
    accepted = inspect.signature(lint_paths).parameters
    if "jobs" not in accepted and "cache_dir" not in accepted:
        pytest.skip("lint_paths has no worker pool or results cache here")
    assert _outputs(_lint(jobs=2)) == baseline
    cache = str(tmp_path / "cache")
    cold = _outputs(_lint(jobs=1, cache_dir=cache, keep_setups=False))
    warm = _outputs(_lint(jobs=2, cache_dir=cache, keep_setups=False))
    assert cold == baseline and warm == baseline


@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_the_command_is_identical_across_hash_seeds(fmt):
    """Separate processes with different ``PYTHONHASHSEED``: any output that depended on the
    iteration order of a set of strings would differ between them."""
    outputs = []
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONPATH=REPO, PYTHONHASHSEED=seed, NO_COLOR="1")
        done = subprocess.run([sys.executable, "-m", "lintlora", *PATHS, "--gpu", "rtx3090",
                               "--format", fmt], cwd=REPO, env=env, capture_output=True,
                              timeout=600)
        assert done.returncode == 1, done.stderr.decode(errors="replace")
        outputs.append(done.stdout)
    assert outputs[0] and outputs[0] == outputs[1] == outputs[2]
