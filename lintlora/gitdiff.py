"""``--diff-only REF``: keep only findings on lines changed since a git ref (the review-bot mode).

The changed lines are those of ``git diff -U0 <base>`` where ``<base>`` is the merge base of
``REF`` and ``HEAD`` (so on a pull-request branch only the branch's own changes count, not what
landed on ``REF`` since), compared with the files as they are now (so uncommitted edits count
too). A file absent from the base (added since, or untracked and not ignored) counts as changed
throughout; an untracked file that git ignores counts as unchanged. A pure deletion marks the
lines on either side of it, so a finding caused by removing an argument still shows.

git never reads the working tree here and never runs in a linted file's folder, because the
files and folders come from whoever opened the pull request (:mod:`lintlora.gitrun`):

- only the repository holding the working directory is used, and only when its git folder
  is ``<top>/.git`` or the worktree's own (:func:`lintlora.gitrun.repository`). A linted file
  outside it is a usage error naming the file; a file inside a repository nested in it (a
  submodule, a clone: a folder between holding ``.git``) counts as wholly changed, git is not
  asked about it. A committed folder that merely looks like a repository (``HEAD``,
  ``objects/``, ``refs/``, ``config``) is an ordinary folder of the work tree.
- the base blob of each linted file is found with ``git ls-tree`` and read with
  ``git cat-file --batch`` (no ``--textconv``, no ``--filters``), bounded by its size; the
  current bytes are the ones lintlora reads itself (:func:`lintlora.safeio.read_bounded`),
  and the changed lines are computed in Python (:mod:`lintlora.linediff`, bounded time). An
  unchanged file is recognised by its blob id without reading the blob; a base blob that a
  partial clone lacks makes its file wholly changed (lintlora never fetches). No clean filter,
  textconv driver, external diff, fsmonitor or hook can run; a line-ending-only change
  (``core.autocrlf``) is no change.
- whether an untracked file is ignored is asked with ``git check-ignore`` (it reads ignore
  files, never file contents).

lintlora never writes to a repository.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from lintlora.gitrun import (GitDiffError, Repository, in_nested_repository, inside, is_tracked,
                             printable, relative_path, repository, run_git, run_git_bytes)
from lintlora.report.locations import file_line
from lintlora.safeio import read_bounded

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult
    from lintlora.training_setup import Span

__all__ = ["GitDiffError", "ChangedLines", "changed_lines", "filter_result", "run_git",
           "is_tracked", "MAX_COMPARED_BYTES"]

ChangedLines = dict  # real path -> set of 1-based line numbers, or None for "the whole file"

MAX_COMPARED_BYTES = 64 * 2**20
"""A linted file (or its base blob) above this many bytes counts as wholly changed (it is not
read to compare)."""

_BATCH_BYTES = 32 * 2**20  # blob bytes fetched by one `git cat-file --batch`
_ARGS_CHARS = 8000         # path characters on one git command line (Windows allows 32,767)

def _chunks(paths: list[str]) -> Iterable[list[str]]:
    """``paths`` in groups that fit one command line."""
    group: list[str] = []
    size = 0
    for path in paths:
        if group and size + len(path) > _ARGS_CHARS:
            yield group
            group, size = [], 0
        group.append(path)
        size += len(path) + 1
    if group:
        yield group


def _base_commit(repo: Repository, ref: str) -> str:
    """The commit ``--diff-only`` compares with: the merge base of ``ref`` and ``HEAD``, or
    ``ref`` itself when they share no history (a shallow clone).

    Raises:
        GitDiffError: ``ref`` is not a commit in ``repo`` (or is shaped like an option).
    """
    unknown = GitDiffError(f"unknown git ref {printable(repr(ref))} in the repository at "
                          f"{printable(repo.top)}")
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n\r"):
        raise unknown  # (no --end-of-options: rev-parse has it from git 2.30 only)
    try:
        commit = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                         repo.top).strip()
    except GitDiffError:
        raise unknown from None
    try:
        return run_git(["merge-base", commit, "HEAD"], repo.top).strip() or commit
    except GitDiffError:
        return commit


def _tree_entries(repo: Repository, base: str, paths: list[str]) -> dict[str, tuple[str, str]]:
    """``path -> (mode, object id)`` of the entries of ``base``'s tree named ``paths``
    (``git ls-tree``, which reads trees only: a blob a partial clone lacks is no matter; a
    path that ``base`` lacks has no entry)."""
    entries: dict[str, tuple[str, str]] = {}
    wanted = set(paths)
    for group in _chunks(paths):
        out = run_git(["ls-tree", "-z", "--full-tree", base, "--", *group], repo.top)
        for record in out.split("\0"):
            info, tab, path = record.partition("\t")
            fields = info.split()
            if tab and len(fields) == 3 and path in wanted:
                mode, _kind, oid = fields
                entries[path] = (mode, oid)
    return entries


def _blob_sizes(repo: Repository, oids: list[str]) -> dict[str, int]:
    """The size in bytes of each blob of ``oids`` that the repository has
    (``git cat-file --batch-check``; empty when git fails, as it does in a partial clone that
    lacks one: lintlora never fetches)."""
    if not oids:
        return {}
    data = "".join(oid + "\n" for oid in oids).encode("ascii")
    try:
        out = run_git(["cat-file", "--batch-check"], repo.top, input=data,
                      max_output=128 * len(oids) + 4096)
    except GitDiffError:
        return {}
    sizes = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "blob" and fields[2].isdigit():
            sizes[fields[0]] = int(fields[2])
    return sizes


def _ignored(repo: Repository, paths: list[str]) -> set[str]:
    """Those of the untracked-or-tracked ``paths`` that are untracked and ignored
    (``git check-ignore``; a tracked file is never reported). Empty when git cannot say."""
    if not paths:
        return set()
    # "./" keeps a name like ":(top)x" from being read as pathspec magic; git echoes it
    data = "".join(f"./{path}\0" for path in paths).encode("utf-8", "surrogateescape")
    try:
        out = run_git(["check-ignore", "-z", "--stdin"], repo.top, input=data, ok_status=(0, 1))
    except GitDiffError:
        return set()  # counted as changed: more findings shown, none hidden
    return {path[2:] for path in out.split("\0") if path.startswith("./")}


def _blob_id(data: bytes, oid_length: int) -> str:
    """git's id of a blob holding ``data`` (SHA-1, or SHA-256 for a 64-digit ``oid_length``)."""
    import hashlib  # only for --diff-only (start-up: test_startup)

    digest = hashlib.sha256 if oid_length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _fetch_blobs(repo: Repository, oids: list[str], total: int) -> dict[str, bytes]:
    """The contents of the blobs ``oids`` (``total`` bytes in all, as :func:`_blob_sizes`
    found them), read with one ``git cat-file --batch`` (raw bytes: no textconv, no
    filters). A missing object has no entry.

    Raises:
        GitDiffError: git failed; a partial clone (lintlora never fetches: ``protocol.allow``
            is ``never``) makes ``cat-file`` stop at the first blob it lacks.
    """
    data = "".join(oid + "\n" for oid in oids).encode("ascii")
    out = run_git_bytes(["cat-file", "--batch"], repo.top, input=data,
                        max_output=total + 128 * len(oids) + 4096)[1]
    blobs: dict[str, bytes] = {}
    position = 0
    while position < len(out):
        end = out.find(b"\n", position)
        if end < 0:
            break
        header = out[position:end].split()
        position = end + 1
        if len(header) == 3 and header[1] == b"blob" and header[2].isdigit():
            size = int(header[2])
            blobs[header[0].decode("ascii")] = out[position:position + size]
            position += size + 1
        # "<oid> missing": no contents follow
    return blobs


def _compare(repo: Repository, base: str, files: dict[str, str]) -> ChangedLines:
    """Changed lines of ``files`` (``git path -> real path``, all in ``repo``) since ``base``.

    A file whose bytes hash to its base blob's id is unchanged without reading the blob; the
    others' base blobs are sized (``cat-file --batch-check``), fetched in groups of at most
    :data:`_BATCH_BYTES` and compared with :func:`lintlora.linediff.changed_new_lines`. A file
    lintlora cannot read, a base entry that is no regular file (a symbolic link, a submodule,
    a folder), a blob the repository lacks and anything above :data:`MAX_COMPARED_BYTES`
    count as wholly changed.
    """
    from lintlora.linediff import changed_new_lines

    result: ChangedLines = {}
    entries = _tree_entries(repo, base, sorted(files))
    absent = []
    differing: list[tuple[str, str]] = []  # (real path, base blob id)
    for path, real in sorted(files.items()):
        entry = entries.get(path)
        if entry is None:
            absent.append(path)
            continue
        mode, oid = entry
        try:
            current = read_bounded(real, MAX_COMPARED_BYTES)
        except (OSError, ValueError):
            result[real] = None  # lintlora could not read it either: its error shows
            continue
        if mode not in ("100644", "100755"):
            result[real] = None
        elif _blob_id(current, len(oid)) != oid:
            differing.append((real, oid))
    sizes = _blob_sizes(repo, sorted({oid for _, oid in differing}))
    group: list[tuple[str, str]] = []
    group_bytes = 0

    def compare_group() -> None:
        try:
            blobs = _fetch_blobs(repo, sorted({oid for _, oid in group}), group_bytes)
        except GitDiffError:
            blobs = {}  # counted as wholly changed: more findings shown, none hidden
        for real, oid in group:
            old = blobs.get(oid)
            try:
                current = read_bounded(real, MAX_COMPARED_BYTES)
            except (OSError, ValueError):
                old = None
            lines = None if old is None else changed_new_lines(old, current)
            if lines is None or lines:
                result[real] = lines
        group.clear()

    for real, oid in differing:
        size = sizes.get(oid)
        if size is None or size > MAX_COMPARED_BYTES:
            result[real] = None
            continue
        if group and group_bytes + size > _BATCH_BYTES:
            compare_group()
            group_bytes = 0
        group.append((real, oid))
        group_bytes += size
    if group:
        compare_group()
    ignored = _ignored(repo, absent)
    for path in absent:
        if path not in ignored:
            result[files[path]] = None
    return result


def changed_lines(ref: str, cwd: str | None = None,
                  paths: Iterable[str] | None = None,
                  inputs: Iterable[str] = ()) -> ChangedLines:
    """Changed lines per file (keyed by real path) since ``ref``; ``None`` = whole file.

    A file with no changed line has no entry (its findings and errors are dropped by
    :func:`filter_result`).

    Args:
        ref: a git ref (branch, tag, commit) of the repository.
        cwd: the folder whose repository is used (default: the working directory). Only that
            repository is ever asked (see the module's notes).
        paths: the linted files; folders among them are skipped. Without ``paths``, every
            tracked file and every untracked file git does not ignore is compared.
        inputs: other files the linted files' results depend on (a run's launch file and
            configs: :attr:`lintlora.engine.RunResult.inputs`); compared like ``paths`` when
            they are regular files inside the repository, silently skipped otherwise (a
            Hugging Face cache folder, a missing config).

    Raises:
        GitDiffError: no git; ``cwd`` in no repository or a refused one; ``ref`` unknown
            there; a linted file outside the repository (the message names it); a git
            command failed.
    """
    repo = repository(cwd)
    base = _base_commit(repo, ref)
    result: ChangedLines = {}
    files: dict[str, str] = {}  # git path -> real path
    if paths is None:
        listed = run_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         repo.top)
        paths = [os.path.join(repo.top, p) for p in sorted(set(listed.split("\0")) - {""})]
    seen: dict[str, bool] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real == repo.top or os.path.isdir(real) and inside(real, repo):
            continue
        if not inside(real, repo):
            raise GitDiffError(f"{printable(os.fspath(path))} is outside the git repository at "
                               f"{printable(repo.top)} (--diff-only compares the files of the "
                               f"repository lintlora is started in)")
        if os.path.isdir(real):
            continue
        if in_nested_repository(real, repo, seen):
            result[real] = None  # another repository's file: never asked, counted as changed
            continue
        files[relative_path(real, repo)] = real
    for path in _expanded(inputs):
        real = os.path.realpath(path)
        if real in result or not os.path.isfile(real) or not inside(real, repo):
            continue
        if in_nested_repository(real, repo, seen):
            result[real] = None
            continue
        files[relative_path(real, repo)] = real
    result.update(_compare(repo, base, files))
    return result


MAX_PATTERN_MATCHES = 64
"""Files one pattern input (``/proj/requirements*.txt``) stands for at most when compared."""
MAX_PATTERN_FOLDER_NAMES = 4096
"""Names of a pattern input's folder looked at (the cache's own folder bound)."""


def _expanded(inputs: Iterable[str]) -> list[str]:
    """``inputs`` with each pattern input (a ``*`` in its last part, as
    :func:`lintlora.cache.input_state` reads them) replaced by the files of its folder whose
    names match it, case-insensitively (at most :data:`MAX_PATTERN_MATCHES`)."""
    from lintlora.safeio import matching_names

    out: list[str] = []
    for path in inputs:
        folder, name = os.path.split(path)
        if "*" not in name:
            out.append(path)
            continue
        try:
            names = matching_names(path, MAX_PATTERN_FOLDER_NAMES)
        except OSError:
            continue
        out.extend(os.path.join(folder, n) for n in (names or ())[:MAX_PATTERN_MATCHES])
    return out


def _about_whole_config(span: "Span") -> bool:
    """A config's setup-level anchor: column 1 of its top, no extent (see :func:`filter_result`)."""
    return (span.path.lower().endswith((".yaml", ".yml", ".json")) and span.column == 1
            and span.end_line is None and span.end_column is None)


def filter_result(result: "RunResult", changed: ChangedLines) -> "RunResult":
    """Keep findings that touch changed lines; errors of changed files and all internal errors;
    and every finding of a file whose result depends on a changed file (``result.inputs``: a
    launch file or a config its runs read).

    A notebook finding counts when the ``.ipynb`` file lines of its cell lines were changed
    (or the whole notebook when its cell map is unknown). A syntax error counts when its file
    changed at all, and so does a finding about a YAML/JSON config as a whole: one anchored
    at the top of the config with no extent (:meth:`lintlora.extract.dialects._base.
    ConfigDoc.top_span`), because the key it is about is absent. Any change to such a
    config can change it (a larger ``micro_batch_size`` turns a missing checkpointing switch
    into a "does not fit"), and it has no line of its own that a diff could touch.
    """
    def key(path: str) -> str:
        return os.path.realpath(path)

    # a run whose launch file or config changed is re-judged as a whole: a changed `--fp16
    # True` in run.sh, or a changed ds_z3.json, selects every finding of the runs that read it
    rerun = {key(path) for path, inputs in getattr(result, "inputs", {}).items()
             if any(key(p) in changed for p in _expanded(inputs))}
    kept = []
    for finding in result.findings:
        path = key(finding.span.path)
        if path not in changed:
            if path in rerun or any(key(r.span.path) in rerun for r in finding.related):
                kept.append(finding)
            continue
        if path in rerun:
            kept.append(finding)
            continue
        lines = changed[path]
        span = finding.span
        if lines is None or finding.code == "LL000" or _about_whole_config(span):
            kept.append(finding)
            continue
        if span.cell is not None:
            cells = result.cell_lines.get(finding.span.path)
            if not cells:
                kept.append(finding)
                continue
            touched = {file_line(cells, span.cell, n) for n in span.lines()}
        else:
            touched = set(span.lines())
        if touched & lines:
            kept.append(finding)
    result.findings = kept
    result.errors = [e for e in result.errors
                     if e.code == "LL999" or not e.path or key(e.path) in changed]
    return result
