"""Loading a ``bench/`` script as a module, for the tests that exercise it (``bench/`` is not a
package: its scripts are run as files)."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` as the module ``bench_<name>``, registered in ``sys.modules`` (its
    dataclasses look their module up there). Raises ``FileNotFoundError`` when it is missing."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
