"""Reading files that come from whoever opened the pull request (DESIGN.md, "The trust boundary").

Every file lintlora opens that the linted repository controls (a script, a config a script
names, a model ``config.json``, a ``pyproject.toml``, a cache entry) goes through
:func:`read_bounded`:

- opened with ``O_NONBLOCK`` (opening a named pipe does not wait for a writer), ``O_CLOEXEC``
  and, where the caller asks, ``O_NOFOLLOW`` (a symbolic link is refused, not followed);
- checked *after* opening, on the descriptor (``fstat``), to be a regular file, so a path
  swapped for a FIFO, a device (``/dev/zero`` reports size 0) or a folder between a check and
  the open is still refused;
- read with a byte bound: at most ``max_bytes + 1`` bytes are ever read, so a file that grows
  while it is read (or lies about its size) cannot grow lintlora's memory.

Files that a *script* names (``json.load(open("cfg.json"))``) are also confined to the project:
:func:`project_root` finds the root without running git (the nearest folder above the file
holding a ``.git`` entry), and :func:`is_within` checks a path, symbolic links resolved, against
it. Pseudo-file systems (``/proc``, ``/dev``, ``/sys``) are never inside a project.

This module is in the model layer: it imports nothing of lintlora.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from typing import Iterator

__all__ = [
    "UnsafeFileError",
    "read_bounded",
    "read_text_bounded",
    "overlay",
    "describe_mode",
    "project_root",
    "work_tree_root",
    "is_within",
    "confinement_root",
    "too_wide_folders",
    "matching_names",
    "PSEUDO_FILE_SYSTEMS",
]

PSEUDO_FILE_SYSTEMS = ("/proc", "/dev", "/sys", "/run")
"""Folders whose files are never a project's file (devices, kernel and process state)."""


class UnsafeFileError(OSError):
    """A file lintlora refuses to read: not a regular file, a symbolic link where links are not
    followed, or larger than the byte bound. ``str(exc)`` is a sentence for a diagnostic
    (``"not a regular file (a named pipe)"``); ``exc.filename`` is the path."""

    def __init__(self, message: str, path: str | None = None, reason: str = "special") -> None:
        super().__init__(message)
        self.message = message
        self.filename = path
        self.reason = reason
        """``"special"`` (not a regular file), ``"link"`` (a link not followed) or ``"size"``
        (above the bound): what a caller adds to the message depends on it."""

    def __str__(self) -> str:
        return self.message


def describe_mode(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words (``"a named pipe"``, ``"a device"``, ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a special file"


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def read_bounded(path: str | os.PathLike, max_bytes: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them.

    Args:
        path: the file.
        max_bytes: the bound, in bytes; a larger file is refused before it is read.
        follow_links: ``False`` opens with ``O_NOFOLLOW``: a symbolic link as the last
            component is refused (links in the folders above are followed as usual).

    Raises:
        UnsafeFileError: not a regular file (checked with ``fstat`` on the open descriptor),
            a symbolic link when ``follow_links`` is false, or above ``max_bytes``.
        IsADirectoryError: a folder.
        OSError: missing, permissions, ... (as ``open`` raises them).
    """
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
             | getattr(os, "O_CLOEXEC", 0))
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_links and exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise UnsafeFileError("a symbolic link; not followed", os.fspath(path),
                                  "link") from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(f"not a regular file ({describe_mode(info.st_mode)})",
                                  os.fspath(path))
        if info.st_size > max_bytes:
            raise UnsafeFileError(f"file is {_size(info.st_size)}, above the {_size(max_bytes)} "
                                  f"limit", os.fspath(path), "size")
        pending = _OVERLAY.get(os.path.realpath(path)) if _OVERLAY else None
        if pending is not None and len(pending) > max_bytes:
            raise UnsafeFileError(f"file is {_size(len(pending))}, above the {_size(max_bytes)} "
                                  f"limit", os.fspath(path), "size")
    except BaseException:
        os.close(fd)
        raise
    if pending is not None:
        os.close(fd)
        return pending
    with open(fd, "rb", buffering=0) as handle:
        # what fstat announced (+1, to see growth) in one read, not a buffer of the whole bound
        # (a 5 MiB allocation per file cost a cached run over 600 files 20 ms); a file that
        # grew is read on in chunks, up to the bound
        first = handle.read(info.st_size + 1)
        chunks = [first]
        left = max_bytes + 1 - len(first)
        grew = len(first) == info.st_size + 1
        while grew and left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew between fstat and read
        raise UnsafeFileError(f"file is above the {_size(max_bytes)} limit", os.fspath(path),
                              "size")
    return data


_OVERLAY: dict[str, bytes] = {}
"""Real path -> the bytes :func:`read_bounded` returns for that file instead of its own, while
:func:`overlay` holds them (``--diff`` lints the text ``--fix`` would write, in memory)."""


@contextlib.contextmanager
def overlay(files: "dict[str, bytes]") -> Iterator[None]:
    """While the block runs, :func:`read_bounded` of a file of ``files`` (path -> bytes)
    returns those bytes in place of the file's own, after every check of the real file (it
    must still be a regular file, not a link where links are refused; the bytes must be within
    the bound). Forked workers (:mod:`lintlora.parallel`) inherit it. Not reentrant."""
    previous = dict(_OVERLAY)
    _OVERLAY.update({os.path.realpath(p): bytes(d) for p, d in files.items()})
    try:
        yield
    finally:
        _OVERLAY.clear()
        _OVERLAY.update(previous)


def read_text_bounded(path: str | os.PathLike, max_bytes: int, *, follow_links: bool = True,
                      encoding: str = "utf-8") -> str:
    """:func:`read_bounded`, decoded (``UnicodeDecodeError`` when the bytes are not ``encoding``)."""
    return read_bounded(path, max_bytes, follow_links=follow_links).decode(encoding)


@functools.lru_cache(maxsize=256)
def _root_above(folder: str) -> str | None:
    current = folder
    for _ in range(256):  # bounded: a path has far fewer components
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def project_root(path: str | os.PathLike, fallback: str | os.PathLike | None = None) -> str:
    """The project a file belongs to: the nearest folder above it (symbolic links resolved)
    holding a ``.git`` entry (a repository's or a worktree's top), found without running git;
    else ``fallback`` resolved (the folder the lint's paths were given from), else the file's
    own folder.
    """
    real = os.path.realpath(path)
    folder = real if os.path.isdir(real) else os.path.dirname(real)
    root = _root_above(folder)
    if root is not None:
        return root
    if fallback is not None:
        return os.path.realpath(fallback)
    return folder


def work_tree_root(folder: str | os.PathLike) -> str | None:
    """The nearest folder at or above the folder ``folder`` (symbolic links resolved) that
    holds a ``.git`` entry (a repository's or a worktree's top), found without running git;
    ``None`` when there is none, or when it is the file-system root or the home folder
    (:func:`too_wide_folders`)."""
    root = _root_above(os.path.realpath(folder))
    if root is None or root in too_wide_folders():
        return None
    return root


def is_within(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``path``, symbolic links resolved, lies inside the folder ``root`` (resolved too),
    and not in a pseudo-file system (:data:`PSEUDO_FILE_SYSTEMS`) whatever the root. A path
    the system cannot name (a NUL character) is not inside."""
    try:
        real = os.path.realpath(path)
        top = os.path.realpath(root)
    except ValueError:  # embedded NUL
        return False
    for pseudo in PSEUDO_FILE_SYSTEMS:
        if real == pseudo or real.startswith(pseudo + os.sep):
            return False
    try:
        return os.path.commonpath([real, top]) == top
    except ValueError:  # another drive on Windows
        return False


def too_wide_folders() -> set[str]:
    """Folders too wide to be a project, resolved: the file-system root and the user's home
    folder (whatever lies below them is not one project's)."""
    wide = {os.path.realpath(os.sep)}
    home = os.path.expanduser("~")
    if home and home != "~":
        wide.add(os.path.realpath(home))
    return wide


def confinement_root(path: str | os.PathLike) -> str:
    """The folder that files a linted file *names* must lie in (a config its code opens, a
    model folder it loads): the repository the file belongs to (:func:`project_root`: the
    nearest folder above holding ``.git``); without one, the current working folder when the
    file lies inside it (the folder the lint was started from), else the file's own folder.

    Never the file-system root or the home folder (a dotfiles repository at ``~`` would
    otherwise put ``~/.docker/config.json`` inside the "project"): then the file's own folder.
    Symbolic links are resolved. Check a named file with ``is_within(named, root)``.
    """
    real = os.path.realpath(path)
    own = real if os.path.isdir(real) else os.path.dirname(real)
    root = _root_above(own)
    if root is None:
        cwd = os.path.realpath(os.getcwd())
        root = cwd if is_within(own, cwd) else own
    if root in too_wide_folders():
        return own
    return root


def matching_names(pattern_path: str, max_names: int) -> list[str] | None:
    """The names in the folder of a pattern input (``/proj/requirements*.txt``: a ``*`` in its
    last part) that match that part, case-insensitively (:func:`fnmatch.fnmatchcase` on lower
    case), sorted; ``None`` when the folder holds more than ``max_names`` entries (not listed
    further). Nothing is opened but the folder's listing.

    Raises:
        OSError: the folder cannot be listed (``FileNotFoundError`` when it is not there).
    """
    import fnmatch

    folder, pattern = os.path.split(pattern_path)
    pattern = pattern.lower()
    names = []
    with os.scandir(folder) as listing:
        for count, entry in enumerate(listing):
            if count >= max_names:
                return None
            if fnmatch.fnmatchcase(entry.name.lower(), pattern):
                names.append(entry.name)
    return sorted(names)
