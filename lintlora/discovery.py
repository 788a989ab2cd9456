"""Discovery: turn the paths given on the command line into the files to lint (DESIGN.md, "paths").

A path may be a file or a folder. Files named explicitly are linted whatever their location
(unless an ``exclude`` pattern matches them); folders are walked for ``*.py``, ``*.ipynb``,
``*.yaml`` and ``*.yml``, skipping hidden entries, virtual environments and build output.
JSON files are linted only when named explicitly (a repository holds far more JSON that is not
a training config than JSON that is).

Symbolic links to folders are not followed during a walk (so a link loop cannot hang the run);
a link to a file is linted like the file. A walk takes regular files only: named pipes, sockets
and devices (and dangling links) are passed over; named explicitly they are reported by the
engine (``LL998``, never read). The result is sorted and free of duplicates, so the
output does not depend on the order the operating system lists directories in.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

__all__ = [
    "SourceFile",
    "SKIPPED_DIR_NAMES",
    "discover",
    "file_kind",
    "matches_any",
]

SKIPPED_DIR_NAMES = frozenset({
    "venv", "build", "dist", "node_modules", "__pycache__", "site-packages",
})
"""Folder names never entered during a walk (hidden folders, any name starting with ``.``, and
folders holding a ``pyvenv.cfg`` are skipped too)."""

_SCANNED_SUFFIXES = {".py": "python", ".ipynb": "notebook", ".yaml": "yaml", ".yml": "yaml"}
_EXPLICIT_ONLY_SUFFIXES = {".json": "json"}


@dataclass(frozen=True, order=True)
class SourceFile:
    """One file to lint.

    Attributes:
        path: the path as the user gave it or as found under a folder they gave (joined with
            ``os.path.join``); reporters make it relative to the working directory.
        kind: ``"python"``, ``"notebook"``, ``"yaml"`` or ``"json"``; ``None`` for a file named
            explicitly whose type lintlora does not read (the engine reports it as a notice).
        explicit: whether the user (or pre-commit) named this file; a YAML/JSON file that is no
            training config is reported only when named.
    """

    path: str
    kind: str | None
    explicit: bool


def _has_python_shebang(path: str) -> bool:
    """Whether the file's first line is a ``#!`` line naming python (extensionless scripts).

    Only a regular file is opened (checked with ``stat`` first, and opened non-blocking): a
    named pipe given as ``lintlora train`` would otherwise wait for a writer forever.
    """
    if not os.path.isfile(path):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(fd, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def file_kind(path: str, explicit: bool) -> str | None:
    """The kind of file at ``path`` by its suffix, or ``None`` when lintlora does not read it.

    ``.json`` counts only when ``explicit``. An explicitly named file without a suffix whose
    first line is a python ``#!`` line is Python (pre-commit's ``python`` type includes those).
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix in _SCANNED_SUFFIXES:
        return _SCANNED_SUFFIXES[suffix]
    if explicit and suffix in _EXPLICIT_ONLY_SUFFIXES:
        return _EXPLICIT_ONLY_SUFFIXES[suffix]
    if explicit and suffix == "" and _has_python_shebang(path):
        return "python"
    return None


def matches_any(path: str, patterns: Iterable[str], root: str | None = None) -> bool:
    """Whether ``path`` matches one of the glob ``patterns``.

    A pattern without ``/`` is matched against every component of the path (``build2``,
    ``*.ipynb``, ``legacy_*``). A pattern with ``/`` is matched against the path relative to
    ``root`` (default: the working directory), in ``/`` form, or against the absolute path when
    the pattern is absolute; ``*`` also crosses ``/`` (so ``fixtures/*`` and ``fixtures/**``
    both cover everything under ``fixtures``). Matching is case-sensitive.
    """
    patterns = tuple(patterns)
    if not patterns:
        return False
    absolute = os.path.abspath(path)
    base = os.path.abspath(root) if root else os.getcwd()
    try:
        relative = os.path.relpath(absolute, base)
    except ValueError:  # another drive on Windows
        relative = absolute
    relative = relative.replace(os.sep, "/")
    absolute_posix = absolute.replace(os.sep, "/")
    parts = [p for p in relative.split("/") if p not in ("", ".", "..")]
    for raw in patterns:
        pattern = raw.rstrip("/") or raw
        if "/" not in pattern:
            if any(fnmatch.fnmatchcase(part, pattern) for part in parts):
                return True
            continue
        if pattern.startswith("./"):
            pattern = pattern[2:]
        target = absolute_posix if pattern.startswith("/") else relative
        if fnmatch.fnmatchcase(target, pattern) or fnmatch.fnmatchcase(target, pattern + "/*"):
            return True
    return False


def _skip_dir(dirpath: str, name: str) -> bool:
    if name.startswith(".") or name in SKIPPED_DIR_NAMES:
        return True
    return os.path.isfile(os.path.join(dirpath, name, "pyvenv.cfg"))


def _walk(folder: str, is_excluded: Callable[[str], bool]) -> Iterable[SourceFile]:
    # followlinks=False: links to folders are listed in dirnames but not entered, so a link
    # loop cannot make the walk endless. Errors (an unreadable folder) are skipped.
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        kept = []
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if _skip_dir(dirpath, name) or os.path.islink(full) or is_excluded(full):
                continue
            kept.append(name)
        dirnames[:] = sorted(kept)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = os.path.join(dirpath, name)
            kind = file_kind(full, explicit=False)
            if kind is None or is_excluded(full):
                continue
            if not os.path.isfile(full):
                # regular files only (``isfile`` follows links and is true only for S_ISREG):
                # a named pipe, socket or device named ``x.py`` is no source (reading a pipe
                # would wait for a writer), nor is a dangling link. Named explicitly, such a
                # file reaches the engine, which reports it as LL998 "not a regular file".
                continue
            yield SourceFile(full, kind, explicit=False)


def discover(paths: Sequence[str], is_excluded: Callable[[str], bool] | None = None
             ) -> tuple[list[SourceFile], list[str]]:
    """Expand ``paths`` into the files to lint.

    Args:
        paths: files and folders as given on the command line.
        is_excluded: predicate on a path (file or folder) telling whether configuration
            excludes it; applied to explicitly named files too, so a pre-commit run honours
            ``exclude`` like a folder scan does.

    Returns:
        ``(files, missing)``: the files sorted by path with duplicates removed (a file both
        named and found under a named folder counts as named), and the given paths that do not
        exist. A named symbolic link that leads nowhere (dangling, or a loop) is a file, not a
        missing path: reading it fails, and the engine reports it like any unreadable file
        (``LL998``), while such links inside a scanned folder are skipped quietly.
    """
    excluded = is_excluded or (lambda _p: False)
    found: dict[str, SourceFile] = {}
    missing: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for source in _walk(path, excluded):
                key = os.path.normpath(os.path.abspath(source.path))
                found.setdefault(key, source)
        elif os.path.exists(path) or os.path.islink(path):
            if excluded(path):
                continue
            key = os.path.normpath(os.path.abspath(path))
            found[key] = SourceFile(path, file_kind(path, explicit=True), explicit=True)
        else:
            missing.append(path)
    files = sorted(found.values(), key=lambda s: (os.path.normpath(s.path), s.kind or ""))
    return files, missing
