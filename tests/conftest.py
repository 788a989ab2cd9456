"""Shared test set-up.

The ``lintlora`` command caches results under ``$XDG_CACHE_HOME/lintlora`` by default
(:mod:`lintlora.cache`). Every test gets its own empty cache folder, so no test reads what
another test (or a developer's own runs) left behind, and nothing is written to the real
``~/.cache``; child processes inherit the variable.

Property tests (Hypothesis) draw new examples on every run on a developer's machine, which is
how they find new failures. Under CI (``CI`` set, as ``.ci/run`` does) they run derandomized:
the same examples on every run, so a change lands or fails on its own merits and not on the
draw. Failures found by random runs become deterministic regression tests beside the
behaviour.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _own_results_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
