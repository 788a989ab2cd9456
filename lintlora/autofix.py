"""``--fix`` and ``--diff`` (issue 17): which findings' fixes apply, the files they change read
and written back safely, and the unified diff.

- **Which**: a finding's :attr:`~lintlora.findings.Finding.autofix`, when its safety is allowed
  (``SAFE``; ``UNSAFE`` too with ``--unsafe-fixes``) and its code is ``fixable`` and not
  ``unfixable`` in the settings of the finding's file (:func:`fix_allowed`).
- **Reading**: each file a fix names is read bounded (:func:`lintlora.safeio.read_bounded`,
  links not followed) and decoded the way it will be encoded again (:class:`SourceText`: a
  UTF-8 BOM, a PEP 263 coding line, UTF-16 with a BOM; newlines are never translated, so a
  CRLF file stays CRLF and an inserted line takes the file's own line break).
- **Which files may be written** (:func:`writable_reason`): a regular file, not a symbolic
  link, inside the project of a file the run linted (its
  :func:`~lintlora.safeio.confinement_root`, links resolved) and not in git's metadata
  (``.git``), that the run linted or read (a launch file, a config) or that a fix's span
  names; never anything else.
- **Writing** (:func:`write_back`, :func:`_replace_file`): through one descriptor of the
  file's folder, checked to be the folder the file was read from (a folder swapped for a link
  in between is refused); the file is read again just before it is written and left alone
  when its bytes changed since they were read for the fix ("changed on disk since it was
  linted; not overwritten"); the new bytes go to a new file in the same folder, get the old
  file's permission bits (and owner, where allowed), are ``fsync``-ed and replace it with
  :func:`os.replace` (atomic); nothing is left behind on failure.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from lintlora.findings import Finding, FixSafety
from lintlora.engine import code_matches
from lintlora.fixing import FixError, FixPlan, plan

__all__ = ["SourceText", "fix_allowed", "fix_key", "read_source_text", "writable_reason",
           "FixRun", "fix_mode", "plan_fixes", "write_back", "unified_diff", "diff_texts",
           "diff_name", "folder_identity",
           "MAX_FIX_FILE_BYTES"]

MAX_FIX_FILE_BYTES = 64 * 2**20
"""The largest file a fix reads (the lint's own ``--max-file-size`` is lower by default)."""


def fix_key(finding: Finding) -> tuple:
    """A finding's identity within a run (the engine's de-duplication key)."""
    return (finding.code, finding.span, finding.message)


def fix_allowed(finding: Finding, settings: Any, unsafe: bool) -> bool:
    """Whether ``--fix`` (with ``unsafe`` for ``--unsafe-fixes``) applies the finding's fix."""
    fix = finding.autofix
    if fix is None or not fix.ops:
        return False
    if fix.safety is FixSafety.UNSAFE and not unsafe:
        return False
    return code_fixable(finding.code, settings)


def fix_mode(finding: Finding, settings: Any) -> str | None:
    """Which fixing mode applies the finding's fix: ``"safe"`` (``--fix``), ``"unsafe"``
    (``--fix --unsafe-fixes`` only) or ``None`` (no fix, or its rule ``unfixable`` here); the
    text report's ``[*]`` marker and its closing count (:mod:`lintlora.report.text`)."""
    if fix_allowed(finding, settings, False):
        return "safe"
    if fix_allowed(finding, settings, True):
        return "unsafe"
    return None


def code_fixable(code: str, settings: Any) -> bool:
    """Whether ``[tool.lintlora] fixable``/``unfixable`` let rule ``code``'s fixes apply."""
    fixable = getattr(settings, "fixable", None)
    unfixable = getattr(settings, "unfixable", ()) or ()
    if fixable is not None and not code_matches(code, fixable):
        return False
    return not code_matches(code, unfixable)


# ---- reading ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceText:
    """A file's text and how to write it back: ``data`` the bytes read, ``text`` the decoded
    text (no BOM, newlines as in the file), ``encoding`` and ``bom`` to encode it again,
    ``kind`` the fixing kind (``python``, ``notebook``, ``yaml``, ``json``, ``shell``)."""

    path: str
    data: bytes
    text: str
    encoding: str
    bom: bytes
    kind: str
    folder: tuple[int, int] | None = None
    """The identity of the folder the file was read from (:func:`folder_identity`)."""

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.encoding)


def _fix_kind(path: str) -> str:
    from lintlora.discovery import file_kind

    kind = file_kind(path, explicit=True)
    return kind if kind in ("python", "notebook", "yaml", "json") else "shell"


def read_source_text(path: str, max_bytes: int = MAX_FIX_FILE_BYTES) -> SourceText:
    """Read and decode ``path`` for fixing.

    Raises:
        OSError: unreadable, not a regular file, a link, too large.
        FixError: not decodable in the encoding it declares.
    """
    from lintlora.safeio import UnsafeFileError, read_bounded

    folder = folder_identity(path)
    try:
        data = read_bounded(path, max_bytes, follow_links=False)
    except UnsafeFileError as exc:
        raise OSError(str(exc)) from None
    kind = _fix_kind(path)
    bom = b""
    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        bom, encoding = codecs.BOM_UTF8, "utf-8"
    elif data.startswith(codecs.BOM_UTF16_LE):
        bom, encoding = codecs.BOM_UTF16_LE, "utf-16-le"
    elif data.startswith(codecs.BOM_UTF16_BE):
        bom, encoding = codecs.BOM_UTF16_BE, "utf-16-be"
    elif kind == "python":
        import io
        import tokenize

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:
            encoding = "utf-8"
        if encoding == "utf-8-sig":  # pragma: no cover - the BOM is handled above
            encoding = "utf-8"
    try:
        text = data[len(bom):].decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FixError(f"cannot decode as {encoding}: {exc}") from None
    if folder_identity(path) != folder:
        raise OSError("its folder changed while it was read")
    return SourceText(path, data, text, encoding, bom, kind, folder)


def writable_reason(path: str, roots: Iterable[str], allowed: Iterable[str]) -> str | None:
    """Why ``path`` must not be written, or ``None`` when a fix may write it.

    Args:
        roots: the project folders of the linted files.
        allowed: the paths the run linted or read, and those a fix's span names (a
            ``frozenset`` of absolute paths is used as it is: :func:`plan_fixes` makes one per
            run, so each check is one lookup).
    """
    from lintlora.safeio import is_within

    absolute = os.path.abspath(path)
    if not isinstance(allowed, frozenset):
        allowed = frozenset(os.path.abspath(p) for p in allowed)
    if absolute not in allowed:
        return "not a file the run linted or a fix names"
    try:
        info = os.lstat(absolute)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link; not followed"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if not any(is_within(absolute, root) for root in roots):
        return "outside the project"
    if ".git" in os.path.realpath(absolute).split(os.sep):
        return "inside git's metadata (.git: hooks, config)"
    return None


# ---- planning -----------------------------------------------------------------------------------

@dataclass
class FixRun:
    """One pass of fixing: the plan, the source texts read, the findings whose fixes were tried
    (``chosen``), and the files refused (path -> reason)."""

    plan: FixPlan
    sources: dict[str, SourceText] = field(default_factory=dict)
    chosen: list[Finding] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def applied(self) -> list[tuple[Finding, Any]]:
        """``(finding, outcome)`` for each fix the plan applies."""
        return [(f, o) for f, o in zip(self.chosen, self.plan.outcomes) if o.status == "applied"]

    def skipped(self) -> list[tuple[Finding, Any]]:
        return [(f, o) for f, o in zip(self.chosen, self.plan.outcomes)
                if o.status in ("overlaps", "error")]


def plan_fixes(findings: Sequence[Finding], settings_for: Callable[[str], Any], *, unsafe: bool,
               linted: Iterable[str], read_inputs: Iterable[str] = ()) -> FixRun:
    """Plan the fixes of ``findings`` that apply (:func:`fix_allowed`), in the findings' order.

    Args:
        settings_for: the settings of a path (for ``fixable``/``unfixable``).
        linted: the files the run linted (their projects bound what may be written).
        read_inputs: other files the run read (launch files, configs).
    """
    from lintlora.safeio import confinement_root

    linted = list(linted)
    roots = {confinement_root(p) for p in linted}
    chosen = [f for f in findings if fix_allowed(f, settings_for(f.span.path), unsafe)]
    # absolute once: writable_reason looks each read up in it (twice per file)
    allowed = frozenset(os.path.abspath(p) for p in
                        (*linted, *read_inputs, *(op.span.path for f in chosen
                                                  for op in f.autofix.ops)))
    run = FixRun(plan=FixPlan())
    sources: dict[str, SourceText] = {}

    def read(path: str) -> tuple[str, str]:
        reason = writable_reason(path, roots, allowed)
        if reason is not None:
            run.refused[path] = reason
            raise FixError(f"{path}: {reason}")
        if path not in sources:
            source = read_source_text(path)
            # checked again once read: a folder swapped for a link while it was read is seen
            # here, and the folder identity recorded by the read is the one checked
            reason = writable_reason(path, roots, allowed)
            if reason is not None:
                run.refused[path] = reason
                raise FixError(f"{path}: {reason}")
            sources[path] = source
        return sources[path].text, sources[path].kind

    run.plan = plan([f.autofix for f in chosen], read)
    run.sources = sources
    run.chosen = chosen
    return run


# ---- writing ------------------------------------------------------------------------------------

def write_back(run: FixRun) -> tuple[list[str], dict[str, str]]:
    """Write every file the plan changes. Returns (the paths written, path -> why a file was
    not written: changed on disk since it was read, its folder replaced since it was read, a
    new text its encoding cannot hold, a write error, or a fix it shares with such a file).

    Every file is encoded and checked against the disk first (:func:`_replace_file` with
    ``check_only``); a file that fails, and every file a fix changes together with it (and so
    on, transitively), is not written, so a fix spanning several files is not left half
    applied by a file that could not be written (a write that fails after the check still
    can: the check and the rename are not one atomic step across files).
    """
    changed = run.plan.changed()
    problems: dict[str, str] = {}
    encoded: dict[str, bytes] = {}
    for path in changed:
        source = run.sources[path]
        try:
            encoded[path] = source.encode(run.plan.new[path])
            _replace_file(path, source, encoded[path], check_only=True)
        except _Changed as exc:
            problems[path] = str(exc) or "changed on disk since it was linted; not overwritten"
        except (OSError, UnicodeEncodeError) as exc:
            problems[path] = f"cannot be written: {getattr(exc, 'strerror', None) or exc}"
    _hold_back_together(run, problems)
    written: list[str] = []
    for path in changed:
        if path in problems:
            continue
        try:
            _replace_file(path, run.sources[path], encoded[path])
        except _Changed as exc:
            problems[path] = str(exc) or "changed on disk since it was linted; not overwritten"
            continue
        except OSError as exc:
            problems[path] = f"cannot be written: {exc.strerror or exc}"
            continue
        written.append(path)
    return written, problems


def _hold_back_together(run: FixRun, problems: dict[str, str]) -> None:
    """Add to ``problems`` every file an applied fix changes together with a file already in
    it, until no fix spans a written and an unwritten file."""
    groups = [{e.path for e in outcome.edits} for outcome in run.plan.outcomes
              if outcome.status == "applied"]
    grew = True
    while grew:
        grew = False
        for group in groups:
            blocked = sorted(group & problems.keys())
            if blocked:
                for path in sorted(group - problems.keys()):
                    problems[path] = (f"not written: a fix that also changes {blocked[0]} "
                                      "could not be applied there")
                    grew = True


class _Changed(Exception):
    """The file or its folder is not the one read for the fix: nothing is written."""


def folder_identity(path: str) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the folder holding ``path`` (links followed, as the read that
    follows sees it), or ``None`` when it cannot be stat-ed. :func:`write_back` writes only
    into a folder with the identity recorded when the file was read (a folder swapped for a
    symbolic link to elsewhere in between is refused, whatever it holds)."""
    try:
        info = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _replace_file(path: str, source: SourceText, data: bytes, check_only: bool = False) -> None:
    """Replace ``path``'s bytes with ``data`` atomically, inside the folder it was read from.

    Every step works on a descriptor of the folder opened once (``O_DIRECTORY``, its identity
    checked against :attr:`SourceText.folder`): the file is read again (``O_NOFOLLOW``, a
    regular file, the bytes read for the fix) and must be writable by this process
    (:func:`os.access`; a read-only file is not replaced), a new file is created beside it
    (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600 while written), given the old file's
    permission bits and, where the process may, its owner and group, written, ``fsync``-ed and
    renamed over the old name (:func:`os.replace`, atomic on POSIX), then the folder is
    ``fsync``-ed. On any failure the new file is removed (no ``.lintlora-fix-*`` left behind)
    and the old one is untouched. ``check_only``: stop after the checks (nothing written).

    Raises:
        _Changed: the file's bytes or its folder are not those read for the fix.
        OSError: the folder or file cannot be opened, written or renamed.
    """
    import secrets

    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    dir_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not hasattr(os, "O_DIRECTORY") or os.open not in os.supports_dir_fd:  # pragma: no cover
        return _replace_file_by_name(path, source, data, check_only)
    if source.folder is None:  # no identity to check: the folder itself must not be a link
        dir_flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        # links followed (a folder linked inside the project is written through): the
        # descriptor's identity is what is checked against the folder the read saw
        dir_fd = os.open(folder, dir_flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):  # now a link, or gone
            raise _Changed("its folder was replaced since it was linted; not written") from None
        raise
    try:
        info = os.fstat(dir_fd)
        if source.folder is not None and (info.st_dev, info.st_ino) != source.folder:
            raise _Changed("its folder was replaced since it was linted; not written")
        flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_CLOEXEC", 0))
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOENT):
                raise _Changed() from None
            raise
        with os.fdopen(fd, "rb", buffering=0) as handle:
            old = os.fstat(handle.fileno())
            if not stat.S_ISREG(old.st_mode):
                raise _Changed()
            current = handle.read(len(source.data) + 1)
        if current != source.data:
            raise _Changed()
        if not os.access(name, os.W_OK, dir_fd=dir_fd):
            # the rename below would replace a file its user may not write (a read-only file
            # stays so, as an in-place write would leave it)
            raise PermissionError(errno.EACCES, "the file is read-only", path)
        if check_only:
            return
        temp = f".lintlora-fix-{secrets.token_hex(8)}.tmp"
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                      | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
                handle.flush()
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(handle.fileno(), old.st_uid, old.st_gid)
                    except OSError:  # not allowed (not root): the writer's owner stays
                        pass
                os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
        try:
            os.fsync(dir_fd)
        except OSError:  # pragma: no cover - a file system that cannot sync a folder
            pass
    finally:
        os.close(dir_fd)


def _replace_file_by_name(path: str, source: SourceText, data: bytes,  # pragma: no cover
                          check_only: bool = False) -> None:
    """:func:`_replace_file` where folder descriptors are not available (Windows)."""
    from lintlora.safeio import UnsafeFileError, read_bounded

    try:
        current = read_bounded(path, len(source.data) + 1, follow_links=False)
    except UnsafeFileError:  # grew past the bound
        current = None
    if current != source.data:
        raise _Changed()
    if check_only:
        return
    info = os.lstat(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".lintlora-fix-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, stat.S_IMODE(info.st_mode))
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


# ---- diff ---------------------------------------------------------------------------------------

def unified_diff(run: FixRun, display: Callable[[str], str] = lambda p: p) -> str:
    """The unified diff of every file the plan changes (``--- a/PATH`` / ``+++ b/PATH``)."""
    return diff_texts(run.plan.old, {p: run.plan.new[p] for p in run.plan.changed()}, display)


def diff_texts(old_texts: dict[str, str], new_texts: dict[str, str],
               display: Callable[[str], str] = lambda p: p) -> str:
    """The unified diff from ``old_texts`` to ``new_texts`` (path -> text) of every path whose
    text changes, in path order.

    Lines are split where the fixer counts lines (:func:`lintlora.fixing.split_lines`: at
    ``\r\n``, ``\r`` and ``\n`` only; a form feed or U+2028 inside a line stays in it, so the
    hunk headers give the file's own line numbers). A name that holds a character outside
    printable ASCII, a quote or a backslash is written the way git writes it
    (:func:`diff_name`), so a file named ``"a\n::error::x"`` cannot start a line of its own.
    """
    import difflib  # only for --diff (a plain lint never loads it: tests/test_startup.py)

    from lintlora.fixing import split_lines

    out: list[str] = []
    for path in sorted(p for p in new_texts if new_texts[p] != old_texts.get(p)):
        old = split_lines(old_texts[path])
        new = split_lines(new_texts[path])
        name = display(path)
        for line in difflib.unified_diff(old, new, diff_name("a/" + name),
                                         diff_name("b/" + name)):
            out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def diff_name(name: str) -> str:
    """A file name for a diff header as git writes it (``quote_c_style`` in git's ``quote.c``,
    the default ``core.quotePath``): unchanged when it is printable ASCII without ``"`` or
    ``\\``, else in double quotes with C escapes and every other byte (UTF-8; a byte of a
    name that is not UTF-8, PEP 383) as a three-digit octal escape. ``git apply`` and GNU
    ``patch`` read such names back."""
    if all(" " <= c <= "~" and c not in '"\\' for c in name):
        return name
    out = []
    for c in name:
        if c in _C_ESCAPES:
            out.append(_C_ESCAPES[c])
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.extend(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape"))
    return '"' + "".join(out) + '"'


def fix_counts(findings: Sequence[Finding], settings_for: Callable[[str], Any]
               ) -> tuple[int, int]:
    """(findings with a safe fix ``--fix`` would apply, more with an unsafe one)."""
    modes = [fix_mode(f, settings_for(f.span.path)) for f in findings if f.autofix is not None]
    return modes.count("safe"), modes.count("unsafe")
