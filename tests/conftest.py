"""Shared test set-up.

The ``lintlora`` command caches results under ``$XDG_CACHE_HOME/lintlora`` by default
(:mod:`lintlora.cache`). Every test gets its own empty cache folder, so no test reads what
another test (or a developer's own runs) left behind, and nothing is written to the real
``~/.cache``; child processes inherit the variable.
"""

import pytest


@pytest.fixture(autouse=True)
def _own_results_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
