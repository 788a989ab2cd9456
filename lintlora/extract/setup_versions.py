"""Fill in a file's setups with the library releases its project states (issue 16).

The engine calls :func:`attach_versions` after extraction, once per linted file: each setup gets
``versions`` (the notebook's own ``!pip install`` pins first, then the project's,
:func:`lintlora.extract.project_versions.versions_in_project`) and the dependency files looked
at added to ``inputs`` (present or not: the results cache keys the file's results by them).
Rules read the versions through :meth:`lintlora.context.Context.library_version`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from lintlora.training_setup import PinnedVersion, TrainingSetup

__all__ = ["attach_versions", "pins_for"]


def pins_for(path: str, *, root: str, text: str | None = None,
             kind: str | None = None) -> tuple[tuple[PinnedVersion, ...], tuple[str, ...]]:
    """``(pins, files)`` for the file at ``path``: for a notebook (``kind == "notebook"`` with
    its ``text``, or a Databricks notebook source) its own install lines first, and the project's pins of the packages it does
    not name; the dependency files looked at (absolute paths)."""
    from lintlora.extract.project_versions import versions_in_notebook, versions_in_project

    pins, files = versions_in_project(path, root=root)
    own: tuple[PinnedVersion, ...] = ()
    if kind == "notebook" and text:
        own = versions_in_notebook(text, path)
    elif kind == "python" and text and text.lstrip("\ufeff").startswith("# Databricks notebook source"):
        # a Databricks source's `%pip install` cells (`# MAGIC %pip ...`); lines of the file
        import re

        from lintlora.extract.project_versions import pins_in_pip_lines

        lines = [re.sub(r"^#\s*MAGIC\s?", "", line) for line in text.splitlines()]
        own = tuple(pins_in_pip_lines(lines, path))
    if own:
        named = {p.package for p in own}
        pins = tuple(own) + tuple(p for p in pins if p.package not in named)
    return pins, files


def attach_versions(setups: Any, path: str, root: str | None = None, *, text: str | None = None,
                    kind: str | None = None,
                    found: tuple[tuple[PinnedVersion, ...], tuple[str, ...]] | None = None
                    ) -> tuple[Any, tuple[str, ...]]:
    """``setups`` (a list, changed in place and returned, so a ``Setups`` keeps its ``notes``)
    with ``versions`` and ``inputs`` filled in, and the files looked at.

    Args:
        setups: the setups extracted from ``path``.
        path: the linted file.
        root: the project's top; ``None``: :func:`lintlora.safeio.confinement_root` of ``path``.
        text, kind: the file's text and kind (``"notebook"`` reads its install lines).
        found: ``(pins, files)`` of :func:`pins_for` already read for ``path`` (the engine
            reads them once for every run of a file); ``None``: read here.

    A setup that already has ``versions`` (built by a test, or by a launch's assembly) keeps
    them. No file is read when there is no setup.
    """
    if not setups:
        return setups, ()
    if found is None:
        if root is None:
            from lintlora.safeio import confinement_root

            root = confinement_root(path)
        found = pins_for(path, root=root, text=text, kind=kind)
    pins, files = found
    for i, setup in enumerate(list(setups)):
        if not isinstance(setup, TrainingSetup):
            continue
        versions = setup.versions or pins
        inputs = tuple(dict.fromkeys(tuple(setup.inputs) + files))
        setups[i] = dataclasses.replace(setup, versions=versions, inputs=inputs)
    return setups, files
