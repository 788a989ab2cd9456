"""Importing LibCST without running ``libcst.metadata``'s package ``__init__`` until it is used.

``import libcst`` imports two submodules of ``libcst.metadata`` (``base_provider`` and
``wrapper``, which ``libcst/__init__.py`` re-exports), and Python runs a package's
``__init__`` before any of its submodules. ``libcst/metadata/__init__.py`` imports every
metadata provider: scope analysis, type inference through Pyre (which imports
``subprocess``), the full-repository manager and nine more. lintlora uses none of them (it
computes positions itself, :mod:`lintlora.extract._cstpos`), and they cost a one-file run about
19 ms of LibCST's 140-170 ms import (libcst 1.9, CPython 3.11, measured with
``python -X importtime``: 3 of 14 ``libcst.metadata`` modules loaded instead of all).

:func:`import_libcst` therefore registers ``libcst.metadata`` as a placeholder package before
importing LibCST: a real module object with the package's spec, ``__path__`` and ``__file__``,
so ``libcst.metadata.base_provider`` and every other submodule import from their files as
usual, and a module ``__getattr__`` (PEP 562) that runs the real ``__init__`` in the
placeholder's namespace the first time a name it would define is looked up. Everything that
reads the package through attributes (``from libcst.metadata import PositionProvider``,
``libcst.metadata.ScopeProvider``, ``from libcst.metadata import *``) then sees exactly what an
ordinary import gives; only what it never reads is never run.

When LibCST is already imported, or its layout is not the expected one (no ``metadata``
package folder), LibCST is imported the ordinary way: the placeholder is an optimisation, never
a condition for correctness.
"""

from __future__ import annotations

import sys
from types import ModuleType

__all__ = ["import_libcst"]

_METADATA = "libcst.metadata"


def _metadata_placeholder() -> ModuleType | None:
    """A ``libcst.metadata`` module whose ``__init__`` runs on first use, or ``None`` when
    LibCST cannot be located this way (then nothing is registered)."""
    import importlib.util
    import os

    import _thread

    try:
        spec = importlib.util.find_spec("libcst")  # a top-level name: locates, runs nothing
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "metadata")
    init = os.path.join(folder, "__init__.py")
    if not os.path.isfile(init):
        return None
    meta_spec = importlib.util.spec_from_file_location(_METADATA, init,
                                                       submodule_search_locations=[folder])
    if meta_spec is None or meta_spec.loader is None:
        return None
    module = importlib.util.module_from_spec(meta_spec)
    lock = _thread.RLock()
    state = {"ran": False}

    def __getattr__(name: str) -> object:
        with lock:
            if not state["ran"]:
                state["ran"] = True
                # from here on a missing name is missing, as in an ordinary import
                module.__dict__.pop("__getattr__", None)
                meta_spec.loader.exec_module(module)  # type: ignore[union-attr]
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {_METADATA!r} has no attribute {name!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return module


def import_libcst() -> ModuleType:
    """``import libcst``, with ``libcst.metadata``'s ``__init__`` deferred until it is read.

    Returns:
        The ``libcst`` module.

    Raises:
        ImportError: LibCST is not installed (as ``import libcst`` would).
    """
    loaded = sys.modules.get("libcst")
    if loaded is not None:
        return loaded
    placeholder = None
    if _METADATA not in sys.modules:
        placeholder = _metadata_placeholder()
        if placeholder is not None:
            sys.modules[_METADATA] = placeholder
    try:
        import libcst
    except BaseException:
        if placeholder is not None and sys.modules.get(_METADATA) is placeholder:
            del sys.modules[_METADATA]
        raise
    if placeholder is not None and sys.modules.get(_METADATA) is placeholder:
        # what the import system does for a submodule it loads itself
        setattr(libcst, "metadata", placeholder)
    return libcst
