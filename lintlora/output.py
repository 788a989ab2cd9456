"""Where a report goes: ``-o FILE`` opened safely, and standard output that may fail.

``-o FILE`` (:func:`open_report`):

- writes only to a *regular file* (created when missing, never through a symbolic link to a
  missing file; truncated only after the checks below), to ``/dev/null``, or to this process's own standard output or error (``/dev/stdout``,
  ``/dev/stderr``, ``/dev/fd/1``, or any path to the same file, pipe or terminal: the report
  then goes through ``sys.stdout``/``sys.stderr``, at their position, not from offset 0). Any
  other target is refused before anything is written: a named pipe (opened with
  ``O_NONBLOCK``, so one with no reader is refused at once instead of waiting forever), a
  device (``/dev/full``, ``/dev/zero``, a terminal other than the process's own), a socket.
  Pipe the standard output instead (``lintlora ... | gzip``).
- never overwrites a file that is one of the linted inputs (same device and inode, so a
  symbolic or hard link to one counts), one git tracks (the file a symbolic link leads to), or
  one reached through a symbolic link inside a git work tree (the path itself or a folder above
  it: a committed ``lintlora.sarif`` -> ``~/.bashrc``; :func:`link_in_work_tree`), unless
  ``force`` (``--force``): a pull request can commit a file
  named ``--output=.github/workflows/ci.yml``, or a symbolic link where CI writes its report.

Refusals raise :class:`OutputError`: the command line prints ``lintlora: error: ...`` naming the
file and exits with status 2. Failures while writing (a full disk, an I/O error) are reported
the same way by the caller (:func:`describe_write_error`); a closed pipe on standard output
(``lintlora ... | head -1``) is quiet and keeps the run's exit status (:func:`silence_stdout`).

This module is part of the command line (it imports click nowhere, so it is testable alone).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
from typing import IO, Iterable, NamedTuple

from lintlora.safeio import describe_mode

__all__ = ["OutputError", "Report", "open_report", "protected_reason", "link_in_work_tree",
           "describe_write_error",
           "silence_stdout", "ClosedStream", "reserve_standard_fds"]


class OutputError(Exception):
    """The report cannot go to the target named by ``-o``; ``str(exc)`` names it and why."""


class Report(NamedTuple):
    """An open report target: ``stream`` to write to; ``owned``: whether closing it is ours
    (``False`` for the process's own standard output or error)."""

    stream: IO[str]
    owned: bool


_OWN_STDOUT_PATHS = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")

_WRITE_FLAGS = (os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))


def open_report(path: str, *, inputs: Iterable[str] = (), force: bool = False) -> Report:
    """Open ``path`` for the report (see the module docstring for what is accepted).

    Args:
        path: the ``-o`` value.
        inputs: the linted files (and files that could not be read): the report never
            replaces one of them unless ``force``.
        force: also overwrite a linted input or a file git tracks.

    Raises:
        OutputError: the target is not a regular file (nor ``/dev/null`` or the process's own
            standard output or error), is a linted input or tracked by git (without
            ``force``), or cannot be opened (the system's reason). A file this call created
            is removed again before it raises.
    """
    if path in _OWN_STDOUT_PATHS and isinstance(sys.stdout, ClosedStream):
        return Report(sys.stdout, owned=False)  # writing fails: "it is closed"
    fd, created = _open_for_writing(path)
    try:
        st = os.fstat(fd)
        own = _own_stream(st)
        if own is not None:
            os.close(fd)
            return Report(own, owned=False)
        if stat.S_ISCHR(st.st_mode) and _is_null_device(st):
            return Report(_text_stream(fd), owned=True)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path} is {describe_mode(st.st_mode)}: -o writes a report only "
                              f"to a regular file, /dev/null, /dev/stdout or /dev/stderr (pipe "
                              f"the standard output to send it elsewhere)")
        if not force:
            reason = _protected(path, st, inputs)
            if reason:
                raise OutputError(f"refusing to overwrite {path}: it is {reason} (pass --force "
                                  f"to overwrite it anyway)")
        os.ftruncate(fd, 0)
        return Report(_text_stream(fd), owned=True)
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        if created:
            try:
                os.unlink(path)
            except OSError:
                pass
        raise


def _open_for_writing(path: str) -> tuple[int, bool]:
    """``(descriptor, created)``: ``path`` opened for writing, not truncated, never blocking."""
    try:
        try:
            return os.open(path, _WRITE_FLAGS), False
        except FileNotFoundError:
            return os.open(path, _WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o666), True
    except OSError as exc:
        if exc.errno == errno.EEXIST and os.path.islink(path):  # O_EXCL refuses a link
            raise OutputError(f"{path} is a symbolic link to a missing file: -o does not create "
                              f"a file through a link (remove the link, or name its target)"
                              ) from None
        if exc.errno == errno.ENXIO:  # a named pipe (or a socket file) that nobody reads
            raise OutputError(f"{path} is a named pipe with no reader: -o writes a report only "
                              f"to a regular file, /dev/null, /dev/stdout or /dev/stderr") from None
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _text_stream(fd: int) -> IO[str]:
    """A UTF-8 text stream over ``fd``, back in blocking mode, ``\\n`` line ends."""
    if getattr(os, "O_NONBLOCK", 0):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _own_stream(st: os.stat_result) -> IO[str] | None:
    """``sys.stdout`` or ``sys.stderr`` when ``st`` is the file, pipe or terminal it writes to."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and _identity(os.fstat(stream.fileno())) == _identity(st):
                return stream
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            continue  # no descriptor (a test's capture), or a closed one
    return None


def _is_null_device(st: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:  # pragma: no cover - every POSIX system has /dev/null
        return False
    return stat.S_ISCHR(null.st_mode) and st.st_rdev == null.st_rdev


def protected_reason(path: str, inputs: Iterable[str] = ()) -> str | None:
    """Why ``-o path`` must not overwrite its file without ``--force``, or ``None``:
    ``"one of the linted files"`` (``path`` is the same file as one of ``inputs``) or
    ``"tracked by git"``. A path that does not exist yet can still be tracked (deleted in the
    work tree); a target that is no regular file is :func:`open_report`'s to refuse."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        return None
    return _protected(path, st, inputs)


def _protected(path: str, st: os.stat_result | None, inputs: Iterable[str]) -> str | None:
    """Why the regular file ``path`` (``st``: its status, ``None`` when it does not exist)
    must not be overwritten, or None."""
    if st is not None:
        target = _identity(st)
        for item in inputs:
            try:
                if _identity(os.stat(item)) == target:
                    return "one of the linted files"
            except (OSError, ValueError):
                continue
    from lintlora.gitrun import is_tracked  # not gitdiff: that loads difflib and hashlib

    link = link_in_work_tree(path)
    if link is not None:
        return (f"reached through {link}, a symbolic link inside the repository at "
                f"{os.path.dirname(link)}")
    if is_tracked(path):
        return "tracked by git"
    return None


def link_in_work_tree(path: str) -> str | None:
    """The first symbolic link on ``path`` (its last component or a folder above it) that lies
    in a git work tree, or ``None``.

    A pull request can commit a symbolic link where CI writes its report (``lintlora.sarif``
    -> ``~/.bashrc``, or a folder link above it). Whether git tracks the link cannot decide it:
    git refuses a repository owned by another user ("dubious ownership", common in container
    jobs), and then nothing would be tracked. So any link inside a work tree (a folder at or
    above it holding ``.git``, found without running git:
    :func:`lintlora.safeio.work_tree_root`) counts. ``path`` is walked the way the system
    resolves it (relative to the working folder; ``..`` taken after the links before it).
    """
    from lintlora.safeio import work_tree_root

    try:
        current = os.sep if os.path.isabs(path) else os.path.realpath(os.getcwd())
        for part in path.split(os.sep):
            if part in ("", "."):
                continue
            if part == "..":
                current = os.path.dirname(current)
                continue
            candidate = os.path.join(current, part)
            if os.path.islink(candidate):
                if work_tree_root(current) is not None:
                    return candidate
                current = os.path.realpath(candidate)
            else:
                current = candidate
    except (OSError, ValueError):  # a NUL, an unreadable folder: the open reports it
        return None
    return None


def describe_write_error(exc: OSError) -> str:
    """Why a write failed, in words (``"No space left on device"``, ``"it is closed"``)."""
    if exc.errno == errno.EBADF:
        return "it is closed"
    return exc.strerror or str(exc) or type(exc).__name__


def silence_stdout() -> None:
    """After a closed pipe: point the standard output's descriptor at ``/dev/null``, so that
    whatever is still buffered for it (flushed at exit) goes nowhere instead of failing again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.dup2(devnull, fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(devnull)


class ClosedStream(io.TextIOBase):
    """Stands in for ``sys.stdout`` when the process started with that
    descriptor closed (``lintlora x.py >&-``; Python then sets it to ``None``): every write
    raises ``OSError(EBADF)``, which the command line reports as "cannot write ...: it is
    closed" (exit status 2), instead of a traceback or a silently missing report."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:  # type: ignore[override]
        raise OSError(errno.EBADF, f"{self._name} is closed")

    def flush(self) -> None:
        return None


def reserve_standard_fds() -> None:
    """Open ``/dev/null`` on any of the descriptors 0, 1, 2 that the process started without,
    so that no file lintlora opens later becomes descriptor 1 (and receives the report) or 2;
    and replace a ``None`` ``sys.stdout`` by a :class:`ClosedStream`, a ``None``
    ``sys.stderr`` by a stream to ``/dev/null``."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:  # pragma: no cover
                continue
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdout is None:
        sys.stdout = ClosedStream("standard output")
    if sys.stderr is None:  # messages then go nowhere: there is no one to tell
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
