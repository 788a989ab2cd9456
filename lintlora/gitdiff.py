"""``--diff-only REF``: keep only findings on lines changed since a git ref (the review-bot mode).

The changed lines are those of ``git diff -U0 <base>`` where ``<base>`` is the merge base of
``REF`` and ``HEAD`` (so on a pull-request branch only the branch's own changes count, not what
landed on ``REF`` since), compared with the working tree (so uncommitted edits count too).
Untracked files (not ignored) count as changed throughout. A pure deletion marks the lines on
either side of it, so a finding caused by removing an argument still shows.

git runs in the repository of each linted file (``git -C <its folder>``), not in the working
directory, so the linted files may live in another repository, or in several. It runs as a
subprocess with a fixed argument list (no shell); lintlora never writes to a repository.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import TYPE_CHECKING, Iterable

from lintlora.report.locations import file_line

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult
    from lintlora.training_setup import Span

__all__ = ["GitDiffError", "ChangedLines", "changed_lines", "parse_unified_diff", "filter_result"]

ChangedLines = dict  # real path -> set of 1-based line numbers, or None for "the whole file"

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_OCTAL = re.compile(r"\\([0-7]{3})|\\(.)")


class GitDiffError(Exception):
    """git is missing, the folder is not a repository, or the ref does not exist."""


def _git(args: list[str], cwd: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitDiffError("git is not installed or not on PATH") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        raise GitDiffError(message)
    return done.stdout.decode("utf-8", "surrogateescape")


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths (``"a\\303\\251.py"``)."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    body = path[1:-1]
    raw = bytearray()
    simple = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
              "r": "\r", "v": "\v"}
    position = 0
    for m in _OCTAL.finditer(body):
        raw += body[position:m.start()].encode("utf-8", "surrogateescape")
        if m.group(1):
            raw.append(int(m.group(1), 8))
        else:
            raw += simple.get(m.group(2), m.group(2)).encode("utf-8")
        position = m.end()
    raw += body[position:].encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "surrogateescape")


def parse_unified_diff(text: str) -> dict[str, set[int]]:
    """Changed lines of the new side of a ``git diff -U0`` (paths as in the diff, no ``b/``)."""
    changed: dict[str, set[int]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            if target == "/dev/null":
                current = None
            else:
                current = target[2:] if target.startswith("b/") else target
                changed.setdefault(current, set())
            continue
        if current is None:
            continue
        m = _HUNK.match(line)
        if not m:
            continue
        start = int(m.group(1))
        count = int(m.group(2)) if m.group(2) is not None else 1
        if count == 0:  # a pure deletion after line `start`
            changed[current].update({max(start, 1), start + 1})
        else:
            changed[current].update(range(start, start + count))
    return changed


def _repository_of(folder: str) -> str:
    """The top folder of the git work tree holding ``folder`` (git runs *in* that folder, so
    the answer does not depend on lintlora's working directory).

    Raises:
        GitDiffError: no git, or ``folder`` is in no repository (the message names it).
    """
    try:
        return _git(["-C", folder, "rev-parse", "--show-toplevel"], folder).strip()
    except GitDiffError as exc:
        if "not a git repository" in str(exc):
            raise GitDiffError(f"{folder} is not in a git repository") from None
        raise


def _changed_in(top: str, ref: str) -> ChangedLines:
    """Changed lines since ``ref`` in the repository whose top folder is ``top``."""
    try:
        _git(["-C", top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    except GitDiffError:
        raise GitDiffError(f"unknown git ref {ref!r} in the repository at {top}") from None
    try:
        base = _git(["-C", top, "merge-base", ref, "HEAD"], top).strip() or ref
    except GitDiffError:
        base = ref  # no common history (a shallow clone): compare with the ref itself
    diff = _git(["-C", top, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff",
                 "-U0", "--src-prefix=a/", "--dst-prefix=b/", base, "--"], top)
    result: ChangedLines = {}
    for path, lines in parse_unified_diff(diff).items():
        result[os.path.realpath(os.path.join(top, path))] = lines
    untracked = _git(["-C", top, "ls-files", "--others", "--exclude-standard", "-z"], top)
    for path in untracked.split("\0"):
        if path:
            result[os.path.realpath(os.path.join(top, path))] = None
    return result


def changed_lines(ref: str, cwd: str | None = None,
                  paths: Iterable[str] | None = None) -> ChangedLines:
    """Changed lines per file (keyed by real path) since ``ref``; ``None`` = whole file.

    Args:
        ref: a git ref (branch, tag, commit) known in each repository involved.
        cwd: without ``paths``: the folder whose repository is compared (default: the
            working directory).
        paths: the linted files (or folders): git runs in the repository of each (``git -C``),
            so ``lintlora --diff-only main ../other-repo/train.py`` works from anywhere, and
            files of two repositories are each compared with their own ``ref``.

    Raises:
        GitDiffError: no git, a path in no repository (named), or ``ref`` unknown in one.
    """
    if paths is None:
        folders = [cwd or os.getcwd()]
    else:
        folders = []
        for path in paths:
            absolute = os.path.realpath(path)
            folders.append(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))
    tops: dict[str, str] = {}  # folder -> its repository's top
    result: ChangedLines = {}
    done: set[str] = set()
    for folder in folders:
        if folder not in tops:
            tops[folder] = _repository_of(folder)
        top = tops[folder]
        if top not in done:
            done.add(top)
            result.update(_changed_in(top, ref))
    return result


def _about_whole_config(span: "Span") -> bool:
    """A config's setup-level anchor: column 1 of its top, no extent (see :func:`filter_result`)."""
    return (span.path.lower().endswith((".yaml", ".yml", ".json")) and span.column == 1
            and span.end_line is None and span.end_column is None)


def filter_result(result: "RunResult", changed: ChangedLines) -> "RunResult":
    """Keep findings that touch changed lines; errors of changed files and all internal errors.

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

    kept = []
    for finding in result.findings:
        path = key(finding.span.path)
        if path not in changed:
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
