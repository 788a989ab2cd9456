"""``--fix`` and ``--diff`` (issue 17): which findings' fixes apply, the files they change read
and written back safely, and the unified diff.

- **Which**: a finding's :attr:`~lintlora.findings.Finding.autofix`, when its safety is allowed
  (``SAFE``; ``UNSAFE`` too with ``--unsafe-fixes``) and its code is ``fixable`` and not
  ``unfixable`` in the settings of the finding's file (:func:`fix_allowed`).
- **Reading**: each file a fix names is read bounded (:func:`lintlora.safeio.read_bounded`,
  links not followed) and decoded the way it will be encoded again (:class:`SourceText`: a
  UTF-8 BOM, a PEP 263 coding line, UTF-16 with a BOM; newlines are never translated, so a
  CRLF file stays CRLF and an inserted line takes the file's own line break).
- **Which files may be written** (:func:`writable_reason`): a regular file, reached through no
  symbolic link, inside the project of a file the run linted (its
  :func:`~lintlora.safeio.confinement_root`), that the run linted or read (a launch file, a
  config) or that a fix's span names; never anything else.
- **Writing** (:func:`write_back`): the file is read again just before it is written and left
  alone when its bytes changed since they were read for the fix ("changed on disk since it was
  linted; not overwritten"); the new bytes go to a temporary file in the same folder, get the
  old file's permission bits, and replace it with :func:`os.replace` (atomic).
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from lintlora.findings import Finding, FixSafety
from lintlora.fixing import FixError, FixPlan, plan

__all__ = ["SourceText", "fix_allowed", "fix_key", "read_source_text", "writable_reason",
           "FixRun", "fix_mode", "plan_fixes", "write_back", "unified_diff", "diff_texts",
           "MAX_FIX_FILE_BYTES"]

MAX_FIX_FILE_BYTES = 64 * 2**20
"""The largest file a fix reads (the lint's own ``--max-file-size`` is lower by default)."""


def fix_key(finding: Finding) -> tuple:
    """A finding's identity within a run (the engine's de-duplication key)."""
    return (finding.code, finding.span, finding.message)


def _matches(code: str, selectors: Iterable[str]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in selectors)


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
    if fixable is not None and not _matches(code, fixable):
        return False
    return not _matches(code, unfixable)


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
    return SourceText(path, data, text, encoding, bom, kind)


def writable_reason(path: str, roots: Iterable[str], allowed: Iterable[str]) -> str | None:
    """Why ``path`` must not be written, or ``None`` when a fix may write it.

    Args:
        roots: the project folders of the linted files.
        allowed: the paths the run linted or read, and those a fix's span names.
    """
    from lintlora.safeio import is_within

    absolute = os.path.abspath(path)
    if absolute not in {os.path.abspath(p) for p in allowed}:
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
    allowed = set(linted) | set(read_inputs) | {op.span.path for f in chosen
                                                 for op in f.autofix.ops}
    run = FixRun(plan=FixPlan())
    sources: dict[str, SourceText] = {}

    def read(path: str) -> tuple[str, str]:
        reason = writable_reason(path, roots, allowed)
        if reason is not None:
            run.refused[path] = reason
            raise FixError(f"{path}: {reason}")
        if path not in sources:
            sources[path] = read_source_text(path)
        return sources[path].text, sources[path].kind

    run.plan = plan([f.autofix for f in chosen], read)
    run.sources = sources
    run.chosen = chosen
    return run


# ---- writing ------------------------------------------------------------------------------------

def write_back(run: FixRun) -> tuple[list[str], dict[str, str]]:
    """Write every file the plan changes. Returns (the paths written, path -> why a file was
    not written: changed on disk since it was read, or a write error)."""
    written: list[str] = []
    problems: dict[str, str] = {}
    for path in run.plan.changed():
        source = run.sources[path]
        try:
            _replace_file(path, source, source.encode(run.plan.new[path]))
        except _Changed:
            problems[path] = "changed on disk since it was linted; not overwritten"
            continue
        except (OSError, UnicodeEncodeError) as exc:
            problems[path] = f"cannot be written: {getattr(exc, 'strerror', None) or exc}"
            continue
        written.append(path)
    return written, problems


class _Changed(Exception):
    pass


def _replace_file(path: str, source: SourceText, data: bytes) -> None:
    from lintlora.safeio import UnsafeFileError, read_bounded

    try:
        current = read_bounded(path, len(source.data) + 1, follow_links=False)
    except UnsafeFileError:  # grew past the bound
        current = None
    if current != source.data:
        raise _Changed()
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
    text changes, in path order."""
    import difflib  # only for --diff (a plain lint never loads it: tests/test_startup.py)

    out: list[str] = []
    for path in sorted(p for p in new_texts if new_texts[p] != old_texts.get(p)):
        old = old_texts[path].splitlines(keepends=True)
        new = new_texts[path].splitlines(keepends=True)
        name = display(path)
        for line in difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"):
            out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fix_counts(findings: Sequence[Finding], settings_for: Callable[[str], Any]
               ) -> tuple[int, int]:
    """(findings with a safe fix ``--fix`` would apply, more with an unsafe one)."""
    safe = sum(1 for f in findings if fix_allowed(f, settings_for(f.span.path), False))
    unsafe = sum(1 for f in findings if fix_allowed(f, settings_for(f.span.path), True)) - safe
    return safe, unsafe
