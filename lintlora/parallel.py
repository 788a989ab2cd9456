"""Running the per-file work of a lint: the results cache first, then the files left, in this
process or in a pool of worker processes (issue 8).

:func:`lint_tasks` takes the files of a run, each with its settings and
:class:`~lintlora.context.Context`, and returns one :class:`~lintlora.file_result.FileResult` per
file, in the order given, whatever ran where: the output of a run is the same for every
``jobs`` (``tests/test_parallel.py``).

**Cache.** Each file is read once (the engine's ``read``, :func:`lintlora.engine.read_source_bytes`)
and keyed by the SHA-256 of those bytes and the launches that start it; on a miss the same bytes are linted (``lint_file(data=...)``, kept up to
:data:`KEEP_BYTES` in all, inherited by forked workers), so an entry always describes the bytes
its key was made from, and the file is not read a second time to hash it.

**Pool.** Used when ``jobs > 1``, at least :data:`POOL_MIN_FILES` files are left after the
cache, and the ``fork`` start method is available (Linux). Forked workers inherit the run's
state (files, settings, contexts, rules) instead of receiving it pickled; before forking, the
parent imports the extractor and estimator modules the files need, so the workers share those
pages, and freezes the garbage collector's view of them (:func:`gc.freeze`, as the
:mod:`gc` documentation advises before ``fork``), so a collection in a worker does not copy
them. Files are handed out largest first, in chunks of about :data:`CHUNK_BYTES`, so the
workers finish together. Results come back pickled; setups only when the caller keeps them.

A worker that dies (LibCST's native parser can overflow its stack on input the preflight did
not refuse) breaks the pool; the files not finished are then linted one at a time in a
single worker (a new one after each death), so the file that kills its worker is found and
reported as ``LL999`` while every other file gets its normal result.

Elsewhere (no ``fork``: Windows, and macOS where Python defaults to ``spawn``) the files are
linted in this process.

**Garbage collector.** A Python file's LibCST tree and the extractor's scope graph form
reference cycles (scopes point at their parents), so they are freed by the cyclic collector,
not by reference counts; with the default thresholds its full collections traverse every
object the imports created, over and over. During a run (:func:`tuned_gc`), the objects that
exist before it are frozen out of the collector's sight and automatic collection is off; the
young generation is collected explicitly *between* files instead, once a file's tree has
become garbage (:func:`_lint_one`, in this process and in each worker). A collection during a
file finds next to nothing: the tree and the scope graph live until the file is done (peak
memory of a 12,000-line script, 409 KB: 296 MB either way, measured), so it only traverses
them; a one-file run then collects nothing at all (about 12 ms of a 320 ms run, measured with
``bench/compare.py``'s single-file step). The previous state (enabled or not, frozen
objects) is restored at the end, so what the last file left is freed by the caller's next
collection.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.cache import ResultCache
    from lintlora.context import Context
    from lintlora.discovery import SourceFile
    from lintlora.extract.launch_model import Launch
    from lintlora.file_result import FileResult
    from lintlora.settings import Settings

__all__ = ["POOL_MIN_FILES", "CHUNK_BYTES", "KEEP_BYTES", "Task", "RunStats", "default_jobs",
           "pool_available", "lint_tasks", "tuned_gc"]

POOL_MIN_FILES = 16
"""Fewest files (left after the cache) for which a pool is started. Starting two workers and
importing the extractor before forking costs about 0.2 s on the 2-core machine the benchmark
ran on (``bench/compare.py``), as much as linting 3-4 ordinary training scripts; below about
16 files the pool saves less than it costs."""

CHUNK_BYTES = 48 * 1024
"""Files are sent to workers in chunks of about this many bytes (a large file goes alone)."""

KEEP_BYTES = 64 * 2**20
"""Most bytes of the files read for their cache keys that are kept until they are linted, so a
file the cache misses is read once (forked workers share the kept bytes); files beyond it are
read again when linted, and stored only if they still hash to their key."""



@dataclass
class Task:
    """One file to lint: where it is, the settings that apply, the run's context for them, and
    the launches that start it (one run each; none: the file alone, :mod:`lintlora.runs`)."""

    source: "SourceFile"
    settings: "Settings"
    context: "Context"
    launches: tuple["Launch", ...] = ()
    root: str | None = None  # the file's project root, when known


@dataclass
class RunStats:
    """What :func:`lint_tasks` did.

    Attributes:
        jobs: worker processes used (1: this process).
        cache_hits, cache_stored, cache_ignored: results read from the cache, written to it,
            and cache entries rejected (invalid or stale).
        cache_problem: why the cache was off, or ``None``.
        crashed: files whose worker process died.
    """

    jobs: int = 1
    cache_hits: int = 0
    cache_stored: int = 0
    cache_ignored: int = 0
    cache_problem: str | None = None
    crashed: list[str] = field(default_factory=list)


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13
    if count is not None:
        return max(1, count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_available() -> bool:
    """Whether worker processes can be forked here (Linux)."""
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@contextmanager
def tuned_gc() -> Iterator[None]:
    """Freeze the objects that exist now and turn automatic collection off for the block (files
    are collected between, by :func:`_lint_one`); restore both afterwards (see the module
    docstring)."""
    global _garbage_pending
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    _garbage_pending = False
    try:
        yield
    finally:
        _garbage_pending = False
        gc.unfreeze()
        if enabled:
            gc.enable()


_garbage_pending = False
"""Whether this process linted a file since its last collection (see :func:`_lint_one`)."""


# ---- the run's state, set before forking ------------------------------------------------------

class _Job:
    """The run's state, read by the workers (a plain class: one per run, never compared)."""

    __slots__ = ("tasks", "rules", "cache", "keys", "keep_setups", "lint", "read")

    def __init__(self, tasks: Sequence[Task], rules: Sequence[Any], cache: "ResultCache | None",
                 keys: dict[int, tuple[str, str, bytes | None]], keep_setups: bool,
                 lint: Callable[..., "FileResult"], read: Callable[[str, int], bytes]) -> None:
        self.lint = lint                # the engine's lint_file
        self.read = read                # the engine's read_source_bytes
        self.tasks = tasks
        self.rules = rules
        self.cache = cache
        self.keys = keys                # task index -> (cache key, digest, bytes or None)
        self.keep_setups = keep_setups


_JOB: _Job | None = None


def _read_for_key(task: Task) -> bytes | None:
    """The bytes of the task's file as the engine reads them, or ``None`` when it cannot be
    read (too large, not a regular file, missing: linted without the cache, which reports it)."""
    job = _JOB
    assert job is not None
    try:
        return job.read(task.source.path, task.settings.max_file_bytes)
    except (OSError, ValueError):
        return None


def _lint_one(index: int) -> tuple["FileResult", bool]:
    """Lint task ``index`` of the current job; returns the result and whether it was cached.

    The previous file's garbage (its tree, its scope graph) is collected first: automatic
    collection is off during a run (:func:`tuned_gc`).
    """
    global _garbage_pending
    if _garbage_pending:
        gc.collect(0)
    _garbage_pending = True
    job = _JOB
    assert job is not None
    task = job.tasks[index]
    entry = job.keys.get(index)
    stored = False
    if entry is None or job.cache is None:
        result = job.lint(task.source, task.settings, job.rules, task.context,
                          launches=task.launches, root=task.root)
    else:
        from lintlora.cache import content_digest

        key, digest, data = entry
        job.keys[index] = (key, digest, None)  # linted once: the bytes are not needed again
        if data is None:  # not kept (KEEP_BYTES): read again; stored only if still the same
            data = _read_for_key(task)
            if data is not None and content_digest(data) != digest:
                data = None
        result = job.lint(task.source, task.settings, job.rules, task.context, data=data,
                          launches=task.launches, root=task.root)
        # linted from the very bytes the key was made from, or not stored; keyed by the files
        # the result depends on (FileResult.inputs: the stages return them as data)
        if data is not None:
            stored = job.cache.store(key, task.source, result)
    forget = getattr(task.context, "forget_estimates", None)
    if forget is not None:
        forget()  # estimates are per setup object; no later file uses this file's setups
    if not job.keep_setups:
        result.setups = []
    return result, stored


def _lint_chunk(indices: Sequence[int]) -> list[tuple[int, "FileResult", bool]]:
    out = []
    for index in indices:
        result, stored = _lint_one(index)
        out.append((index, result, stored))
    return out


# ---- entry point --------------------------------------------------------------------------------

def lint_tasks(tasks: Sequence[Task], rules: Sequence[Any], *,
               lint: Callable[..., "FileResult"], read: Callable[[str, int], bytes],
               jobs: int = 1, cache: "ResultCache | None" = None, keep_setups: bool = True
               ) -> tuple[list["FileResult"], RunStats]:
    """Lint every task; results in the order of ``tasks``.

    Args:
        rules: rule instances (shared by every file).
        lint: lints one file: ``lint(source, settings, rules, context, *, data=None,
            launches=(), root=None) -> FileResult`` (:func:`lintlora.engine.lint_file`; passed in, so
            this module does not import the engine that calls it).
        read: ``read(path, max_bytes) -> bytes``, the bytes a file is keyed and linted by
            (:func:`lintlora.engine.read_source_bytes`).
        jobs: worker processes allowed (see the module docstring for when a pool is used).
        cache: the run's results cache, or ``None``. It is read only when ``keep_setups`` is
            false (cached entries hold no setups).
        keep_setups: return each file's setups (``--show-setup``).
    """
    global _JOB
    stats = RunStats()
    results: list[FileResult | None] = [None] * len(tasks)
    keys: dict[int, tuple[str, str, bytes | None]] = {}
    if cache is not None and not cache.enabled:
        stats.cache_problem = cache.problem
        cache = None
    _JOB = _Job(tasks, rules, cache, keys, keep_setups, lint, read)  # for _read_for_key
    if cache is not None:
        from lintlora.cache import content_digest

        kept = 0
        for index, task in enumerate(tasks):
            if task.source.kind is None:
                continue
            data = _read_for_key(task)
            if data is None:
                continue
            digest = content_digest(data)
            key = cache.key(task.source, task.settings, digest, task.launches)
            hit = None if keep_setups else cache.load(key, task.source, task.settings.fail_on)
            if hit is not None:
                results[index] = hit
            elif kept + len(data) <= KEEP_BYTES:
                kept += len(data)
                keys[index] = (key, digest, data)
            else:
                keys[index] = (key, digest, None)
        stats.cache_hits = cache.hits
        stats.cache_ignored = cache.ignored
    todo = [i for i, r in enumerate(results) if r is None]
    _JOB = _Job(tasks, rules, cache, keys, keep_setups, lint, read)
    try:
        with tuned_gc():
            if jobs > 1 and len(todo) >= POOL_MIN_FILES and pool_available():
                stats.jobs = min(jobs, len(todo))
                _run_pool(todo, results, stats)
            else:
                for index in todo:
                    result, stored = _lint_one(index)
                    results[index] = result
                    stats.cache_stored += stored
    finally:
        _JOB = None
    final = [r for r in results if r is not None]
    assert len(final) == len(tasks)
    return final, stats


# ---- the pool -----------------------------------------------------------------------------------

def _preimport(tasks: Sequence[Task], todo: Sequence[int]) -> None:
    """Import in the parent what the workers will need, so forked workers share it."""
    import importlib

    kinds = {tasks[i].source.kind for i in todo}
    modules = ["lintlora.suppression", "lintlora.estimate.from_setup"]
    if kinds & {"python", "notebook"}:
        modules += ["libcst", "lintlora.extract.python", "lintlora.extract.pyindex",
                    "lintlora.extract.pyresolve", "lintlora.extract._cstpos",
                    "lintlora.extract.notebook"]
    if kinds & {"yaml", "json"}:
        modules += ["yaml", "lintlora.extract.yaml_config", "lintlora.extract.yaml_loader",
                    "lintlora.extract.dialects"]
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker will meet (and report) the same problem
            pass


def _chunks(order: Sequence[int], sizes: dict[int, int]) -> list[list[int]]:
    chunks: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index in order:
        current.append(index)
        total += sizes[index]
        if total >= CHUNK_BYTES:
            chunks.append(current)
            current, total = [], 0
    if current:
        chunks.append(current)
    return chunks


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


def _run_pool(todo: list[int], results: list, stats: RunStats) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    job = _JOB
    assert job is not None
    _preimport(job.tasks, todo)
    gc.collect()
    gc.freeze()  # the imports above, out of the workers' collections (undone by tuned_gc)
    context = multiprocessing.get_context("fork")
    sizes = {i: _size(job.tasks[i].source.path) for i in todo}
    order = sorted(todo, key=lambda i: (-sizes[i], i))
    left = set(todo)
    try:
        with ProcessPoolExecutor(stats.jobs, mp_context=context) as pool:
            futures = [pool.submit(_lint_chunk, chunk) for chunk in _chunks(order, sizes)]
            for future in as_completed(futures):
                for index, result, stored in future.result():
                    results[index] = result
                    stats.cache_stored += stored
                    left.discard(index)
    except BrokenProcessPool:
        pass
    # a worker died: the rest one at a time in a single worker, so the file whose worker
    # dies is known; a new worker after each death
    pending = sorted(left)
    while pending:
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            while pending:
                index = pending.pop(0)
                try:
                    ((_, result, stored),) = pool.submit(_lint_chunk, [index]).result()
                except BrokenProcessPool:
                    results[index] = _crashed(job.tasks[index])
                    stats.crashed.append(job.tasks[index].source.path)
                    break
                results[index] = result
                stats.cache_stored += stored


def _crashed(task: Task) -> "FileResult":
    from lintlora.file_result import INTERNAL_ERROR_CODE, ISSUES_URL, FileResult
    from lintlora.findings import FileError

    result = FileResult(path=task.source.path, kind=task.source.kind,
                        fail_on=task.settings.fail_on)
    result.errors.append(FileError(
        task.source.path,
        "internal error: the worker process linting this file died (a crash of the parser, "
        f"or it ran out of memory); nothing in it was checked; please report it at {ISSUES_URL}",
        INTERNAL_ERROR_CODE))
    return result
