"""Running git on a repository whose files come from whoever opened the pull request.

git runs commands that a repository configures: ``core.fsmonitor`` on any command that reads
the index, a diff ``textconv`` driver and a ``clean``/``process`` filter (assigned in a committed
``.gitattributes``) whenever git reads a working-tree file or shows a diff, hooks, transports
(``core.sshCommand``, a promisor remote's lazy fetch). A pull request cannot write
``.git/config``, but it can commit a folder that git takes for a repository of its own (a copied
``.git`` layout: ``HEAD``, ``objects/``, ``refs/``, a ``config``), and git's discovery from a file
in that folder uses it. Every git call lintlora makes goes through :func:`run_git`, which is
safe by construction:

- **one repository**: :func:`repository` accepts only the repository holding the working
  directory, and only when its git folder is ``<top>/.git`` (or, through a ``.git`` file, a
  linked worktree's ``<common>/worktrees/<name>`` or a submodule's ``.git/modules/...``); a
  folder that git found as a bare repository (``safe.bareRepository=explicit`` refuses it
  where git knows the setting) is refused. git never runs in a linted file's own folder.
- **fixed hardening** before every command: ``--no-pager``, ``--no-replace-objects`` and
  ``-c`` overrides (:data:`HARDENING`), which take precedence over every configuration file;
  commands limited to read-only plumbing that reads no working-tree file content
  (:data:`ALLOWED_COMMANDS`; ``--textconv``, ``--filters``, ``ls-files -m`` refused), so no
  filter, textconv driver or external diff can run even if a caller asks.
- **a minimal environment** (:func:`git_environment`): no ``GIT_*`` variable is inherited
  (``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_CONFIG_PARAMETERS``/``GIT_CONFIG_COUNT``,
  ``GIT_EXEC_PATH``, ``GIT_SSH``...); a ``GIT_DIR`` set in lintlora's environment is
  deliberately ignored, since a CI step can set it as easily as a user (lintlora always uses
  the repository it is started in; to compare another, start it there). The system
  configuration is not read (``GIT_CONFIG_NOSYSTEM``, ``GIT_ATTR_NOSYSTEM``); the user's
  global configuration still is (``safe.directory`` lives there in CI), under the same ``-c``
  overrides. ``PATH`` keeps only absolute folders.
- **the executable** is ``git`` found in an absolute folder of ``PATH`` (never the current
  folder, so a committed ``git`` or ``git.exe`` is not run) and outside the project.
- no shell, stdin closed unless lintlora feeds it, a timeout (:data:`GIT_TIMEOUT_S`), bounded
  output (:data:`MAX_OUTPUT_BYTES`; git is stopped beyond it).

This module is in the model layer beside :mod:`lintlora.safeio`; it imports nothing else of
lintlora.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass

from lintlora.safeio import is_within, project_root, read_bounded

__all__ = ["GitDiffError", "printable", "Repository", "run_git", "run_git_bytes", "repository",
           "is_tracked", "relative_path", "inside", "in_nested_repository", "git_environment",
           "HARDENING", "ALLOWED_COMMANDS", "GIT_TIMEOUT_S", "MAX_OUTPUT_BYTES"]

GIT_TIMEOUT_S = 60.0
"""Wall-clock limit of one git command, in seconds."""

MAX_OUTPUT_BYTES = 64 * 2**20
"""Default bound of one git command's standard output, in bytes (git is stopped beyond it)."""

_MAX_STDERR_BYTES = 64 * 2**10  # kept for the message; the rest is read and dropped

HARDENING = (
    "--no-pager",
    "--no-replace-objects",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "safe.bareRepository=explicit",
    "-c", f"core.hooksPath={os.devnull}",
    "-c", f"core.attributesFile={os.devnull}",
    "-c", "protocol.allow=never",
    "-c", "core.sshCommand=false",
    "-c", "core.askPass=false",
    "-c", "credential.helper=",
    "-c", "log.showSignature=false",
    "-c", "core.quotePath=false",
)
"""Global options before every git command. ``-c`` wins over every configuration file and over
the (never inherited) ``GIT_CONFIG_PARAMETERS``. ``safe.bareRepository`` needs git 2.38; older
git ignores it, and :func:`repository` refuses such a folder anyway."""

_FORCED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LITERAL_PATHSPECS": "1",  # a path is a path: no `:(glob)` magic, no wildcards
    "GIT_NO_LAZY_FETCH": "1",      # git 2.44+: a partial clone never fetches a missing object
    "GIT_OPTIONAL_LOCKS": "0",     # never write the index (lintlora writes no repository)
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TRACE2": "0", "GIT_TRACE2_EVENT": "0", "GIT_TRACE2_PERF": "0",
    "GIT_ADVICE": "0",
    "LC_ALL": "C",
}
_KEPT_ENV = ("HOME", "XDG_CONFIG_HOME", "SYSTEMROOT", "USERPROFILE", "HOMEDRIVE", "HOMEPATH",
             "PATHEXT", "WINDIR")

ALLOWED_COMMANDS = frozenset({"rev-parse", "merge-base", "ls-tree", "cat-file", "check-ignore",
                              "ls-files", "version"})
"""git commands :func:`run_git` runs: read-only plumbing that reads objects, refs, the index and
ignore files, never a working-tree file's content (so no clean filter), and shows no diff (so no
textconv driver or external diff)."""

_COMMAND_ENV = {
    # check-ignore supports no pathspec magic, not even `literal` (callers pass "./<path>")
    "check-ignore": {"GIT_LITERAL_PATHSPECS": "0"},
}

_REFUSED_OPTIONS = {
    "cat-file": ("--textconv", "--filters"),
    "ls-files": ("-m", "--modified"),  # compares file contents: runs clean filters
}


class GitDiffError(Exception):
    """git is missing, the folder is in no repository (or one lintlora refuses), a path is
    outside it, the ref does not exist, or a git command failed; ``str(exc)`` is a sentence
    naming the folder, path or ref."""


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes (git's messages quote repository
    paths, and a path may hold a newline or an ESC)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _git_executable(cwd: str) -> str:
    """The ``git`` program: the first one in an absolute ``PATH`` folder, outside the project
    holding ``cwd``.

    Raises:
        GitDiffError: none found, or the first one found lies inside the project.
    """
    names = ("git.exe", "git") if os.name == "nt" else ("git",)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue  # "" and "." mean the current folder: a committed `git` would run
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                if is_within(candidate, project_root(cwd)):
                    raise GitDiffError(f"the git program found on PATH, {printable(candidate)}, "
                                       f"is inside the project; not run")
                return candidate
    raise GitDiffError("git is not installed or not on PATH")


def git_environment(command: str = "") -> dict[str, str]:
    """The environment git runs ``command`` in: ``PATH`` (absolute folders only), the home
    folders git reads the user's configuration from, Windows' essentials, and
    :data:`_FORCED_ENV`; nothing else of lintlora's environment (no ``GIT_*``)."""
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                  if p and os.path.isabs(p))
    env.update(_FORCED_ENV)
    env.update(_COMMAND_ENV.get(command, {}))
    return env


def _check_command(args: list[str]) -> None:
    if not args or args[0] not in ALLOWED_COMMANDS:
        raise GitDiffError(f"lintlora does not run `git {args[0] if args else ''}` (only "
                           f"{', '.join(sorted(ALLOWED_COMMANDS))})")
    refused = _REFUSED_OPTIONS.get(args[0], ())
    for arg in args[1:]:
        if arg == "--":
            break
        short = arg.startswith("-") and not arg.startswith("--")
        if arg.split("=", 1)[0] in refused or (
                short and any(f"-{c}" in refused for c in arg[1:])):
            raise GitDiffError(f"lintlora does not run `git {args[0]} {arg}`")


def _pump(stream, limit: int, chunks: list[bytes], over: list[bool], proc, stop: bool) -> None:
    """Read ``stream`` to its end, keeping at most ``limit`` bytes in ``chunks``; beyond it set
    ``over[0]`` and, when ``stop``, kill ``proc`` (otherwise keep reading and drop the rest)."""
    size = 0
    try:
        while True:
            chunk = stream.read1(1 << 16)
            if not chunk:
                return
            if size + len(chunk) > limit:
                over[0] = True
                if stop:
                    proc.kill()
                    return
                continue
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError):
        return
    finally:
        stream.close()


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
    except OSError:  # git exited early (it says why on stderr)
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def run_git_bytes(args: list[str], cwd: str, *, input: bytes | None = None,
                  ok_status: tuple[int, ...] = (0,), max_output: int = MAX_OUTPUT_BYTES,
                  timeout: float = GIT_TIMEOUT_S) -> tuple[int, bytes]:
    """:func:`run_git`, returning ``(exit status, stdout bytes)``."""
    _check_command(args)
    argv = [_git_executable(cwd), *HARDENING, *args]
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=git_environment(args[0]), shell=False,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
    except OSError as exc:
        raise GitDiffError(f"cannot run git in {printable(cwd)}: {exc.strerror or exc}") from None
    out: list[bytes] = []
    err: list[bytes] = []
    out_over, err_over = [False], [False]
    threads = [threading.Thread(target=_pump, args=(proc.stdout, max_output, out, out_over, proc,
                                                    True), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, _MAX_STDERR_BYTES, err,
                                                    err_over, proc, False), daemon=True)]
    if input is not None:
        threads.append(threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True))
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    threads[0].join(timeout)  # stdout ends when git exits (waiting on it polls with sleeps)
    try:
        if threads[0].is_alive():
            raise subprocess.TimeoutExpired(argv, timeout)
        status = proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise GitDiffError(f"git {args[0]} took longer than {timeout:g} s in "
                           f"{printable(cwd)}; stopped") from None
    finally:
        for thread in threads:
            thread.join(timeout=5)
    if out_over[0]:
        raise GitDiffError(f"git {args[0]} wrote more than {max_output // 2**20} MiB in "
                           f"{printable(cwd)}; stopped")
    if status not in ok_status:
        message = b"".join(err).decode("utf-8", "replace").strip()
        lines = [line.removeprefix("fatal: ").removeprefix("error: ")
                 for line in message.splitlines() if line.strip()]
        raise GitDiffError(printable("; ".join(lines[:3])) or f"git {args[0]} failed "
                                                              f"(exit status {status})")
    return status, b"".join(out)


def run_git(args: list[str], cwd: str, *, input: bytes | None = None,
            ok_status: tuple[int, ...] = (0,), max_output: int = MAX_OUTPUT_BYTES,
            timeout: float = GIT_TIMEOUT_S) -> str:
    """Run ``git <args>`` in ``cwd`` with the hardening of this module; its standard output.

    Args:
        args: the command and its arguments, starting with one of :data:`ALLOWED_COMMANDS`
            (no global options: those are fixed, :data:`HARDENING`).
        cwd: the folder git runs in (pass the repository's top, :attr:`Repository.top`).
        input: bytes for git's standard input (``--stdin``, ``--batch``); else stdin is closed.
        ok_status: exit statuses that are not failures (``check-ignore`` exits 1 when
            nothing is ignored).
        max_output: bound of the standard output, in bytes.
        timeout: wall-clock limit, in seconds.

    Returns:
        The standard output, decoded as UTF-8 (undecodable bytes kept as surrogates, so a
        path round-trips to ``os.fsencode``).

    Raises:
        GitDiffError: git missing, a refused command or option, a failure (git's message,
            control characters escaped), the timeout or the output bound.
    """
    return run_git_bytes(args, cwd, input=input, ok_status=ok_status, max_output=max_output,
                         timeout=timeout)[1].decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Repository:
    """A repository lintlora accepted: ``top`` the work tree's top folder and ``git_dir`` its
    git folder (both real paths)."""

    top: str
    git_dir: str


def _accepted_git_file(dot_git: str, git_dir: str, common_dir: str) -> bool:
    """Whether the ``.git`` file ``dot_git`` (a linked worktree's or a submodule's) points at
    ``git_dir`` and that is a linked worktree's (``<common>/worktrees/<name>``) or a
    submodule's (under ``.git/modules/``) git folder."""
    try:
        text = read_bounded(dot_git, 4096).decode("utf-8", "surrogateescape")
    except (OSError, ValueError):
        return False
    if not text.startswith("gitdir: "):
        return False
    target = text[len("gitdir: "):].strip("\r\n")
    target = os.path.realpath(os.path.join(os.path.dirname(dot_git), target))
    if target != git_dir:
        return False
    parent = os.path.dirname(git_dir)
    if os.path.basename(parent) == "worktrees" and os.path.dirname(parent) == common_dir:
        return True
    marker = f"{os.sep}.git{os.sep}modules{os.sep}"
    return marker in git_dir + os.sep


def repository(cwd: str | None = None) -> Repository:
    """The repository holding ``cwd`` (default: the working directory), found with
    :func:`run_git` and accepted only when its git folder is ``<top>/.git`` or the worktree's
    own (see :func:`_accepted_git_file`).

    Raises:
        GitDiffError: no git; ``cwd`` in no repository; a bare or otherwise refused repository
            (a folder git took for one, e.g. a committed copy of a ``.git`` layout); the message
            names the folder.
    """
    folder = os.path.realpath(cwd or os.getcwd())
    try:
        text = run_git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"],
                       folder)
    except GitDiffError as exc:
        if "not a git repository" in str(exc):
            raise GitDiffError(f"{printable(folder)} is not in a git repository") from None
        raise GitDiffError(f"no usable git repository at {printable(folder)}: {exc}") from None
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise GitDiffError(f"no usable git repository at {printable(folder)} (its path holds a "
                           f"line break)")
    top, git_dir = os.path.realpath(lines[0]), os.path.realpath(lines[1])
    common_dir = os.path.realpath(os.path.join(folder, lines[2]))
    dot_git = os.path.join(top, ".git")
    accepted = (os.path.realpath(dot_git) == git_dir and os.path.isdir(dot_git)) or (
        os.path.isfile(dot_git) and _accepted_git_file(dot_git, git_dir, common_dir))
    if not accepted or not is_within(folder, top):
        raise GitDiffError(f"refused the git repository found at {printable(folder)}: its git "
                           f"folder is {printable(git_dir)}, not {printable(dot_git)} (a folder "
                           f"that git takes for a repository is never used)")
    return Repository(top=top, git_dir=git_dir)


def inside(real_path: str, repo: Repository) -> bool:
    """Whether the real path ``real_path`` lies inside ``repo.top`` (below it, not the top
    itself); both are real paths, so a prefix test is exact."""
    return real_path.startswith(repo.top.rstrip(os.sep) + os.sep)


def in_nested_repository(real_path: str, repo: Repository,
                         seen: dict[str, bool] | None = None) -> bool:
    """Whether the file ``real_path`` (a real path :func:`inside` ``repo``) lies in another
    repository nested in the work tree (a folder between holding a ``.git`` entry: a
    submodule, a clone) or inside a ``.git`` folder; found without running git. ``seen``
    caches the answer per folder across calls of one run."""
    if ".git" in relative_path(real_path, repo).split("/"):
        return True
    seen = {} if seen is None else seen
    folder = os.path.dirname(real_path)
    walked = []
    answer = False
    while folder != repo.top and inside(folder, repo):
        if folder in seen:
            answer = seen[folder]
            break
        walked.append(folder)
        if os.path.lexists(os.path.join(folder, ".git")):
            answer = True
            break
        folder = os.path.dirname(folder)
    for name in walked:
        seen[name] = answer
    return answer


def relative_path(real_path: str, repo: Repository) -> str:
    """``real_path`` (:func:`inside` ``repo``) relative to ``repo.top``, with ``/`` separators
    (git's form)."""
    return real_path[len(repo.top.rstrip(os.sep)) + 1:].replace(os.sep, "/")


def is_tracked(path: str, cwd: str | None = None) -> bool:
    """Whether git tracks ``path`` (in the index) in the repository holding ``cwd`` (default:
    the working directory), asked with the hardened :func:`run_git`
    (``ls-files --error-unmatch``).

    False when git is missing, the working directory is in no repository or a refused one,
    ``path`` (symbolic links resolved) is outside that repository or in a repository nested
    in it, or git fails; never raises :class:`GitDiffError`.
    """
    try:
        repo = repository(cwd)
    except GitDiffError:
        return False
    real = os.path.realpath(path)
    if not inside(real, repo) or in_nested_repository(real, repo):
        return False
    try:
        run_git(["ls-files", "--error-unmatch", "-z", "--", relative_path(real, repo)], repo.top,
                max_output=2**20)
    except GitDiffError:
        return False
    return True
