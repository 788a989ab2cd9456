"""The engine: files -> setups -> rules -> suppression -> findings (DESIGN.md, the one picture).

:func:`lint_paths` runs a whole lint; :func:`lint_file` lints one file and is a pure function of
the file's bytes, its settings and the rules, so a process pool or a results cache can call it
per file (issue 8). Every stage of a file runs behind an isolation boundary:

- the file cannot be read, is too large, or is of a type lintlora does not read: a
  :class:`~lintlora.findings.FileError` ``LL998`` (an input problem, exit status 1);
- it cannot be parsed (:class:`~lintlora.extract.ExtractError`, including undecodable bytes):
  an ``LL000 syntax-error`` finding at the location;
- a YAML/JSON file of no training dialect (:class:`~lintlora.extract.NotATrainingConfig`): a
  notice, only when the file was named explicitly (and reported only when it is the run's one
  path, or with ``verbose``: :data:`NOT_A_CONFIG`);
- anything else raised by an extractor, the model override, a rule, or the estimator a rule
  calls: a ``LL999`` internal error naming the stage (and the rule) and asking for a report;
  the exit status is then 2. The other files, and the other rules on the same file, still run.

Output is deterministic: files are sorted, findings sorted by :meth:`Finding.sort_key`, and
identical findings from two setups of one file reported once.

**Runs** (issue 15, :mod:`lintlora.runs`): :func:`lint_paths` finds the launches around the
linted files (one bounded walk per project root) and hands each file the launches that start
it; :func:`lint_file` lints one run per launch (the launch's command line passed to the
extractor, the run assembled by :func:`lintlora.runs.assemble_run`), adds ``launched by
run.sh:3`` to every finding of a launched run, and returns in :attr:`FileResult.inputs` every
file its result rests on (each stage returns what it read as data), by which the results cache
keys it and ``--diff-only`` selects it. A file no launch starts is linted as before. A launch
file named on the command line lints the entries it starts.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from lintlora.discovery import SourceFile, discover, file_kind, matches_any
from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.findings import FileError, Finding, Severity
from lintlora.settings import Settings
from lintlora.training_setup import Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context
    from lintlora.rules.base import Rule

__all__ = [
    "SYNTAX_ERROR_CODE",
    "SYNTAX_ERROR_NAME",
    "INPUT_ERROR_CODE",
    "INTERNAL_ERROR_CODE",
    "ISSUES_URL",
    "NOT_A_CONFIG",
    "InputFileError",
    "FileResult",
    "RunResult",
    "read_source",
    "read_source_bytes",
    "read_setups",
    "code_matches",
    "rule_enabled",
    "lint_file",
    "lint_paths",
    "available_rules",
]

from lintlora.file_result import (  # noqa: E402 - the engine's data, one layer down
    INPUT_ERROR_CODE, INTERNAL_ERROR_CODE, ISSUES_URL, SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME,
    FileResult,
)

NOT_A_CONFIG = "not a training config"
"""How the notice about a YAML/JSON file of no training dialect begins. :func:`lint_paths`
keeps such notices only when that file is the one path of the run, or with ``verbose``: a
pre-commit run passes every staged YAML file (``.pre-commit-config.yaml``, CI workflows), and
a note for each on every run is noise, while ``lintlora config.yml`` that checks nothing must
say why."""


class InputFileError(OSError):
    """A file lintlora will not read: too large, or of a type it does not lint (``LL998``)."""


@dataclass
class RunResult:
    """The result of :func:`lint_paths`.

    Attributes:
        files: the paths linted (read and checked; a file with a syntax error counts), sorted.
        findings: every finding, sorted by :meth:`Finding.sort_key`.
        errors: ``LL998`` (input) and ``LL999`` (internal) diagnostics, sorted by path.
        notices: informational diagnostics (not counted in the exit status).
        setups: path -> setups, for ``--show-setup``.
        rules: the rule classes that were loaded (reporters list their metadata).
        cell_lines: path -> notebook cell line map (see :class:`FileResult`).
        fail_on: path -> the severity threshold that applied to that file.
        missing: paths given on the command line that do not exist.
        stats: how the run went (worker processes, cache hits and writes): a
            :class:`lintlora.parallel.RunStats`, or ``None`` before the files are linted.
        inputs: path -> the other files its result depends on (:attr:`FileResult.inputs`:
            launch files, configs, model configs consulted); ``--diff-only`` keeps a file's
            findings when one of them changed.
    """

    files: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notices: list[FileError] = field(default_factory=list)
    setups: dict[str, list[TrainingSetup]] = field(default_factory=dict)
    rules: list[type] = field(default_factory=list)
    cell_lines: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    fail_on: dict[str, Severity] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    stats: Any = None
    inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def internal_error(self) -> bool:
        """Whether a ``LL999`` internal error happened (exit status 2)."""
        return any(e.code == INTERNAL_ERROR_CODE for e in self.errors)

    def failing(self, fail_on: Severity | None = None) -> list[Finding]:
        """Findings at or above the threshold (``fail_on``, else each file's own)."""
        out = []
        for finding in self.findings:
            threshold = fail_on or self.fail_on.get(finding.span.path, Severity.INFO)
            if finding.severity.rank >= threshold.rank:
                out.append(finding)
        return out

    def exit_code(self, fail_on: Severity | None = None) -> int:
        """2 after an internal error; 1 for failing findings or input errors; else 0."""
        if self.internal_error:
            return 2
        if self.failing(fail_on) or any(e.code == INPUT_ERROR_CODE for e in self.errors):
            return 1
        return 0


# ---- reading -------------------------------------------------------------------------------

def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a byte offset (column counted in bytes)."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
              (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
              (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
              (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"))
"""Byte-order marks of encodings that are not ASCII-compatible (UTF-32's LE mark starts with
UTF-16's, so it is tried first): the Unicode Standard, section 23.8 "Specials", BOM table."""


def _wide_encoding(data: bytes) -> str | None:
    """The UTF-16/UTF-32 encoding ``data`` declares by its byte-order mark, or ``None``."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            return name
    return None


def _decode_python(data: bytes) -> str:
    """Decode Python source per PEP 263 (coding line) and PEP 3120 (UTF-8 default), BOM aware."""
    import tokenize

    wide = _wide_encoding(data)
    if wide is not None:
        # text, not binary: but CPython reads source only in ASCII-compatible encodings
        # (PEP 263), so the file does not run as Python either way (LL000, like other bytes
        # Python cannot decode)
        raise ExtractError(f"file is {wide} text (by its byte-order mark), which Python cannot "
                           f"run as source: source encodings must be ASCII-compatible (PEP 263 "
                           f"excludes UTF-16 and UTF-32); save it as UTF-8", 1, 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _position(data, nul)
        raise ExtractError("file contains NUL bytes: it is binary, not Python source", line, col)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # no (valid) coding line and the first lines are not UTF-8: decoding as UTF-8 below
        # names the first bad byte; a bad coding line itself is reported as it is
        if "invalid or missing encoding declaration" not in str(exc):
            # "unknown encoding: foo", "encoding problem: utf-8" (a BOM and another coding)
            line = 2 if b"coding" not in data.split(b"\n", 1)[0] else 1
            raise ExtractError(f"cannot decode: {exc} (in the coding line)", line, 1) from None
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except LookupError:
        raise ExtractError(f"unknown encoding {encoding!r} in the coding line", 1, 1) from None
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        hint = " (add a coding line such as `# -*- coding: latin-1 -*-` if that is the file's " \
               "encoding)" if encoding == "utf-8" else ""
        raise ExtractError(f"cannot decode byte 0x{data[exc.start]:02x} as {encoding}{hint}",
                           line, col) from None


def _decode_text(data: bytes, what: str) -> str:
    """Decode YAML/JSON: UTF-8 (BOM stripped), or UTF-16 with a BOM (YAML 1.2 allows it)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    nul = data.find(b"\x00")
    if encoding != "utf-16" and nul >= 0:
        line, col = _position(data, nul)
        raise ExtractError(f"file contains NUL bytes: it is binary, not {what}", line, col)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        raise ExtractError(f"not valid {encoding.replace('-sig', '').upper()} {what}: byte "
                           f"0x{data[exc.start]:02x} cannot be decoded", line, col) from None


def read_source(path: str, kind: str, max_bytes: int) -> str:
    """Read and decode one file.

    Raises:
        InputFileError: larger than ``max_bytes`` (checked before reading), or not a regular
            file (a named pipe or a device: never read, so it cannot block or stream).
        OSError: cannot be read (missing, permissions, a folder).
        ExtractError: cannot be decoded (``LL000`` at the offending byte).
    """
    return _decode_source(read_source_bytes(path, max_bytes), kind)


def read_source_bytes(path: str, max_bytes: int) -> bytes:
    """The bytes of one file to lint, as :func:`read_source` reads them: the results cache
    hashes these very bytes and lints them on a miss (``lint_file(data=...)``), so the cache
    and the engine read under one policy.

    Raises:
        InputFileError: larger than ``max_bytes`` (checked before reading), not a regular
            file (a named pipe or a device: never read, so it cannot block or stream), or a
            symbolic link to a file outside the project (:func:`_check_link_target`).
        OSError: cannot be read (missing, permissions, a folder).
    """
    from lintlora.safeio import UnsafeFileError, read_bounded

    _check_link_target(path)
    try:  # O_NONBLOCK (a FIFO named x.py cannot block), fstat after open, the byte bound
        return read_bounded(path, max_bytes)
    except UnsafeFileError as exc:
        hint = " (raise it with --max-file-size or max-file-size)" if exc.reason == "size" else ""
        raise InputFileError(f"{exc}; skipped{hint}") from None


def _check_link_target(path: str) -> None:
    """Refuse ``path`` when it is a symbolic link (or lies under a linked folder) whose target
    is outside the project of the folder the link lies in (:func:`lintlora.safeio.confinement_root`
    of the deepest folder above ``path`` that no link leads to)
    or in ``/proc``, ``/dev``, ``/sys``, ``/run``: a pull request can commit
    ``configs/x.yml`` -> another checkout's config or ``/proc/self/environ``, and the walk
    and the names a CI step passes would otherwise read it and print its settings.

    Raises:
        InputFileError: such a link ("not followed: outside the project").
    """
    from lintlora.safeio import confinement_root, is_within

    try:
        absolute = os.path.abspath(path)
        real = os.path.realpath(path)
    except ValueError:  # a NUL: open() says why
        return
    if real == absolute:
        return
    # the project of the deepest folder above that is reached through no link (a linked
    # folder's own target must not become the project)
    folder = os.path.dirname(absolute)
    for _ in range(256):
        if os.path.realpath(folder) == folder or os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    root = confinement_root(folder)
    if not is_within(real, root):
        target = _link_target(path) if os.path.islink(path) else real
        raise InputFileError(f"a symbolic link to {target}, outside the project "
                             f"({root}); not followed")


def _decode_source(data: bytes, kind: str) -> str:
    """Decode a file's bytes as its kind requires (:func:`read_source` without the reading).

    Raises:
        ExtractError: cannot be decoded (``LL000`` at the offending byte).
    """
    if kind == "python":
        return _decode_python(data)
    return _decode_text(data, {"notebook": "notebook JSON", "json": "JSON"}.get(kind, "YAML"))


def _link_target(path: str) -> str:
    """Where the symbolic link ``path`` points, as written in the link (``?`` if unreadable)."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _extract(path: str, kind: str, text: str, explicit: bool,
             command_line: Any = None) -> list[TrainingSetup]:
    """The setups of one file: a :class:`lintlora.extract.Setups` from the Python and notebook
    extractors, whose ``notes`` say what a limit left out (:mod:`lintlora.extract.limits`).

    ``command_line``: the :class:`lintlora.extract.launch_bind.CommandLine` of the launch of
    this run (``None``: no launch), passed to the Python and YAML extractors, which bind it."""
    # Input nested too deeply for LibCST's native parser is refused by the Python extractor's
    # own preflight (lintlora/extract/pysyntax.py: CPython's AST parse and a depth check), so
    # the engine no longer parses every file a second time (issue 8)
    if kind == "python":
        from lintlora.extract.databricks import is_databricks_source

        if is_databricks_source(text):  # a Databricks notebook source: read by cell
            from lintlora.extract.notebook import extract_databricks

            return list(extract_databricks(path, text))
        from lintlora.extract.python import extract_python

        if command_line is None:
            return extract_python(path, text)
        return extract_python(path, text, command_line=command_line)
    if kind == "notebook":
        from lintlora.extract.notebook import extract_notebook

        return extract_notebook(path, text)
    if kind in ("yaml", "json"):
        from lintlora.extract.yaml_config import extract_config

        # max_chars=None: the file was read under --max-file-size, the one size limit
        if command_line is None:
            return list(extract_config(path, text, explicit=explicit, max_chars=None))
        return list(extract_config(path, text, explicit=explicit, max_chars=None,
                                   command_line=command_line))
    raise InputFileError(f"not a file type lintlora reads ({kind})")


def _could_be_training_config(text: str) -> bool:
    """Whether YAML/JSON text names any training-config key (the YAML extractor's prefilter)."""
    try:
        from lintlora.extract.yaml_config import looks_like_training_config
    except ImportError:  # pragma: no cover - an extractor without the prefilter
        return True
    return bool(looks_like_training_config(text))


def read_setups(path: str, settings: Settings | None = None, *, explicit: bool = True,
                kind: str | None = None, launch: Any = None) -> list[TrainingSetup]:
    """Read ``path`` and extract its training setups (no rules, no overrides).

    Args:
        launch: a :class:`lintlora.extract.launch_model.Launch` that runs the file: the setups
            are then that run's (its command line bound, its distribution read and the run
            assembled: :func:`lintlora.runs.assemble_run`); the problems of the run's configs
            are left out (``lint_file`` reports them).
        settings: for ``max_file_bytes``.
        explicit: the user named the file (YAML/JSON of no known dialect then raises
            :class:`NotATrainingConfig`; extractors may be quieter on folder scans).
        kind: force a kind; default from the suffix (``.py``, ``.ipynb``, ``.yaml``/``.yml``,
            ``.json``, or an extensionless file with a python ``#!`` line).

    Raises:
        ExtractError: unparsable or undecodable (with line/column).
        NotATrainingConfig: a YAML/JSON file of no training dialect.
        InputFileError: too large, or of a type lintlora does not read (an ``OSError``).
        OSError: unreadable.
    """
    settings = settings or Settings()
    kind = kind or file_kind(path, explicit=True)
    if kind is None:
        raise InputFileError("not a file type lintlora reads (.py, .ipynb, .yaml, .yml, .json)")
    text = read_source(path, kind, settings.max_file_bytes)
    from lintlora.extract.limits import scaled_for

    with scaled_for(settings.max_file_bytes):  # a raised size limit raises the analysis limits
        if launch is None:
            return _extract(path, kind, text, explicit)
        [(_launch, setups)] = _extract_runs(path, kind, text, explicit, [launch])
    from lintlora.safeio import confinement_root

    quiet = FileResult(path=path, kind=kind)  # the run's problems: lint_file reports them
    root = confinement_root(path)
    return [_assembled(quiet, setup, launch, root) for setup in setups]


# ---- selection -----------------------------------------------------------------------------

def code_matches(code: str, selectors: Iterable[str]) -> bool:
    """Whether ``code`` is named by one of ``selectors`` (a full code, a prefix, or ``ALL``)."""
    return any(s == "ALL" or code.startswith(s) for s in selectors)


def rule_enabled(code: str, settings: Settings, path: str) -> bool:
    """Whether rule ``code`` runs on ``path`` under ``settings``.

    Selected when ``select`` is unset or names it, or ``extend-select`` names it (``LL000``,
    the syntax error, is always selected); then not ``ignore``d and not ignored for the file by
    a ``per-file-ignores`` pattern. Selectors are codes or prefixes (``LL00``) or ``ALL``.
    """
    selected = (settings.select is None or code == SYNTAX_ERROR_CODE
                or code_matches(code, settings.select)
                or code_matches(code, settings.extend_select))
    if not selected or code_matches(code, settings.ignore):
        return False
    for pattern, codes in settings.per_file_ignores:
        if code_matches(code, codes) and matches_any(path, [pattern]):
            return False
    return True


# ---- one file -----------------------------------------------------------------------------

def _where(exc: BaseException) -> str:
    """``file.py:123`` of the innermost frame outside the standard library (``lintlora/x.py``
    for lintlora's own modules), or ``""``."""
    import sysconfig
    import traceback

    paths = sysconfig.get_paths()
    stdlib = os.path.normcase(paths["stdlib"])
    installed = tuple(os.path.normcase(paths[k]) for k in ("purelib", "platlib"))
    frames = traceback.extract_tb(exc.__traceback__)
    chosen = None
    for frame in reversed(frames):
        name = os.path.normcase(os.path.abspath(frame.filename))
        if not name.startswith(stdlib) or name.startswith(installed):
            chosen = frame
            break
    chosen = chosen or (frames[-1] if frames else None)
    if chosen is None:
        return ""
    normalized = chosen.filename.replace(os.sep, "/")
    if "/lintlora/" in normalized:
        return "lintlora/" + normalized.rsplit("/lintlora/", 1)[1] + f":{chosen.lineno}"
    return f"{os.path.basename(chosen.filename)}:{chosen.lineno}"


def _describe(exc: BaseException) -> str:
    """``str(exc)``, which cannot itself fail: the text of an exception carrying a deeply
    nested object (a ``KeyError`` of a LibCST node) can raise ``RecursionError``, and this
    runs in the isolation boundary's ``except``."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001
        return "(its message could not be shown)"


def _internal(path: str, stage: str, exc: BaseException) -> FileError:
    try:
        where = _where(exc)
    except Exception:  # noqa: BLE001 - the isolation boundary must not fail itself
        where = ""
    detail = f"{type(exc).__name__}: {_describe(exc)}".rstrip(": ")
    if len(detail) > 300:
        detail = detail[:297] + "..."
    at = f" (at {where})" if where else ""
    return FileError(path=path, code=INTERNAL_ERROR_CODE,
                     message=f"internal error in {stage}: {detail}{at}; please report it at "
                             f"{ISSUES_URL}")


def _stage_of_rule(rule: "Rule", exc: BaseException) -> str:
    import traceback

    label = f"rule {rule.code} {rule.name}".strip()
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and "/lintlora/estimate/" in frames[-1].filename.replace(os.sep, "/"):
        return f"the estimator (while running {label})"
    return label


def _syntax_finding(path: str, exc: ExtractError) -> Finding:
    line = exc.line if exc.line and exc.line > 0 else 1
    column = exc.column if exc.column and exc.column > 0 else 1
    return Finding(code=exc.code or SYNTAX_ERROR_CODE, name=SYNTAX_ERROR_NAME,
                   severity=Severity.ERROR, span=Span(path, line, column, line, column, exc.cell),
                   message=exc.message,
                   fix="Fix the syntax so the file parses; lintlora checks nothing else in it "
                       "until then.")


def lint_file(source: SourceFile, settings: Settings, rules: Sequence["Rule"],
              context: "Context", *, data: bytes | None = None,
              launches: Sequence[Any] = (), root: str | None = None) -> FileResult:
    """Lint one file; never raises (see the module docstring for what each failure becomes).

    Args:
        source: the file and its kind.
        settings: the settings that apply to it (selection, size limit, fail-on).
        rules: rule instances; those not enabled for the file are skipped.
        context: the run's :class:`~lintlora.context.Context` for these settings.
        data: the file's bytes when the caller has read them already with
            :func:`read_source_bytes`: the results cache reads each file once, to hash it, and
            the same bytes are linted (so an entry always describes the bytes its key was made
            from); ``None``: read here.
        launches: the launches that start the file (:class:`lintlora.extract.launch_model.
            Launch`): one run each (:mod:`lintlora.runs`), extracted with the launch's command
            line and assembled with its distribution and files; none: the file alone, as
            before runs existed.
        root: the file's project root (:func:`lintlora.safeio.confinement_root`), when the
            caller knows it already; the distributed configs are read only inside it.
    """
    path = source.path
    result = FileResult(path=path, kind=source.kind, fail_on=settings.fail_on)
    if source.kind is None:
        result.notices.append(FileError(path, "not a file type lintlora reads (.py, .ipynb, "
                                              ".yaml, .yml, .json); skipped", INPUT_ERROR_CODE))
        return result
    try:
        if data is None:
            text = read_source(path, source.kind, settings.max_file_bytes)
        else:
            text = _decode_source(data, source.kind)
    except ExtractError as exc:
        result.linted = True
        return _finish(result, [(_syntax_finding(path, exc), None)], "", settings, (), set())
    except FileNotFoundError:
        if os.path.islink(path):  # named on the command line, leading nowhere
            message = f"cannot read: a symbolic link to a missing file ({_link_target(path)})"
        else:
            message = "file not found (deleted after it was listed?)"
        result.errors.append(FileError(path, message, INPUT_ERROR_CODE))
        return result
    except IsADirectoryError:
        result.errors.append(FileError(path, "is a folder, not a file", INPUT_ERROR_CODE))
        return result
    except InputFileError as exc:  # too large, or not a regular file: its own words
        result.errors.append(FileError(path, str(exc), INPUT_ERROR_CODE))
        return result
    except OSError as exc:
        reason = exc.strerror if exc.strerror else str(exc)
        result.errors.append(FileError(path, f"cannot read: {reason}", INPUT_ERROR_CODE))
        return result
    except Exception as exc:  # noqa: BLE001 - the isolation boundary
        result.errors.append(_internal(path, "reading the file", exc))
        return result

    from lintlora.extract.limits import scaled_for

    context_inputs = getattr(context, "take_inputs", None)
    if context_inputs is not None:
        context_inputs()  # what earlier files' lookups consulted is theirs
    try:
        with scaled_for(settings.max_file_bytes):  # a raised size limit raises the analysis limits
            runs = _extract_runs(path, source.kind, text, source.explicit, launches)
        if launches:
            note = _runs_note(path, launches, runs)
            if note is not None:
                result.notices.append(note)
    except ExtractError as exc:
        if source.kind in ("yaml", "json") and not _could_be_training_config(text):
            # broken YAML that names no training key (a Helm template, a CI file that
            # pre-commit passed along) is not lintlora's business: a notice, not LL000
            result.notices.append(FileError(
                path, f"{NOT_A_CONFIG} (and not parsable: {exc.message}); skipped",
                INPUT_ERROR_CODE, exc.line, exc.column))
            return result
        if exc.code == INPUT_ERROR_CODE:
            # refused by one of the extractor's limits (YAML node count, nesting, alias
            # expansion, a Python file too large or too deep to analyse): an input problem
            # like a file above --max-file-size, not broken syntax. A FileError has no cell:
            # a notebook's cell is named in the message (its line is the cell's)
            message = exc.message if not exc.cell else f"code cell {exc.cell}: {exc.message}"
            result.errors.append(FileError(path, message, INPUT_ERROR_CODE, exc.line,
                                           exc.column))
            return result
        result.linted = True
        return _finish(result, [(_syntax_finding(path, exc), None)], text, settings, (), set(),
                       _codes_of(rules))
    except NotATrainingConfig as exc:
        if source.explicit:
            reason = str(exc) or "no known training-config dialect"
            result.notices.append(FileError(path, f"{NOT_A_CONFIG} ({reason}); skipped",
                                            INPUT_ERROR_CODE))
        return result
    except RecursionError:
        result.errors.append(FileError(path, "nesting too deep to analyse; skipped",
                                       INPUT_ERROR_CODE))
        return result
    except Exception as exc:  # noqa: BLE001 - the isolation boundary
        result.errors.append(_internal(path, f"the {source.kind} extractor", exc))
        return result
    result.linted = True
    notes_seen: set[str] = set()
    for _launch, extracted in runs:
        for note in getattr(extracted, "notes", ()):  # what a limit of the analysis left out
            if note not in notes_seen:
                notes_seen.add(note)
                result.notices.append(FileError(path, note, INPUT_ERROR_CODE))
    try:  # the library releases the project states (issue 16): setup.versions, setup.inputs
        from lintlora.extract.setup_versions import attach_versions, pins_for

        found = None  # the project's pins, read once for all the file's runs
        for _launch, extracted in runs:
            if extracted and found is None:
                from lintlora.safeio import confinement_root

                found = pins_for(path, root=confinement_root(path), text=text, kind=source.kind)
            attach_versions(extracted, path, text=text, kind=source.kind, found=found)
    except Exception as exc:  # noqa: BLE001 - the isolation boundary
        result.errors.append(_internal(path, "reading the project's library versions", exc))

    enabled = [r for r in rules if rule_enabled(r.code, settings, path)]
    produced: list[tuple[Finding, TrainingSetup | None]] = []
    inputs: dict[str, None] = {}
    for launch, extracted in runs:
        for setup in extracted:
            if root is None:
                from lintlora.safeio import confinement_root

                root = confinement_root(path)
            setup = _assembled(result, setup, launch, root)
            try:
                setup = context.apply_overrides(setup)
            except Exception as exc:  # noqa: BLE001
                result.errors.append(_internal(path, "applying --model", exc))
                continue
            result.setups.append(setup)
            inputs.update(dict.fromkeys(setup.inputs))
            launched = None
            if setup.run is not None:
                from lintlora.facts import launch_related
                from lintlora.runs import related_of

                # the rules' own wording ("launched by run.sh:3 with 4 processes (torchrun)"),
                # so every finding of the run names its launch alike
                named = launch_related(setup)
                launched = named[0] if named else related_of(setup.run.span)
            for rule in enabled:
                try:
                    found = list(rule.check(setup, context))
                except Exception as exc:  # noqa: BLE001 - one rule's bug must not stop the others
                    error = _internal(path, _stage_of_rule(rule, exc), exc)
                    if error not in result.errors:
                        result.errors.append(error)
                    continue
                if launched is not None:
                    # a rule that named the launch itself ("launched by run.sh:3 with 4
                    # processes") keeps its wording; the engine's plain one is not added again
                    found = [f if any(r.span == launched.span for r in f.related) else
                             dataclasses.replace(f, related=f.related + (launched,))
                             for f in found]
                produced.extend((f, setup) for f in found)
    if settings.model or settings.model_config:
        notice = _unused_model_notice(path, result.setups, settings)
        if notice is not None:
            result.notices.append(notice)
    if context_inputs is not None:
        inputs.update(dict.fromkeys(context_inputs()))
    own = os.path.abspath(path)
    result.inputs = tuple(sorted(p for p in inputs if p != own))
    return _finish(result, produced, text, settings, enabled, {r.code for r in enabled},
                   _codes_of(rules))


def _extract_runs(path: str, kind: str, text: str, explicit: bool, launches: Sequence[Any]
                  ) -> list[tuple[Any, list[TrainingSetup]]]:
    """``(launch, setups)`` per run of the file: one per launch, extracted with the launch's
    command line (launches with equal command lines share one extraction), or ``[(None,
    setups)]`` without a launch. Raises what :func:`_extract` raises."""
    if not launches:
        return [(None, _extract(path, kind, text, explicit))]
    from lintlora.extract.launch_bind import command_line_of

    done: dict[Any, list[TrainingSetup]] = {}
    out = []
    for launch in launches[:MAX_RUNS]:
        command_line = command_line_of(launch)
        setups = done.get(command_line)
        if setups is None:
            if len(done) >= MAX_RUN_COMMAND_LINES:
                continue  # (the caller says so)
            setups = done[command_line] = _extract(path, kind, text, explicit, command_line)
        out.append((launch, setups))
    return out


MAX_RUNS = 256
"""Runs (launches) of one file linted at most: 2,000 launch files in a pull request, each
starting the file with another ``--lr``, would extract the file 2,000 times."""
MAX_RUN_COMMAND_LINES = 64
"""Distinct command lines one file is extracted with at most (each is a whole extraction of
the file; a sweep of :data:`lintlora.extract.launch_model.MAX_SWEEP` fits)."""


def _runs_note(path: str, launches: Sequence[Any], runs: Sequence[Any]) -> FileError | None:
    """The notice for a file started by more launches than are linted, or ``None``."""
    if len(runs) >= len(launches):
        return None
    return FileError(path, f"started by {len(launches)} launches: only {len(runs)} are linted "
                           f"(at most {MAX_RUNS} runs and {MAX_RUN_COMMAND_LINES} distinct "
                           f"command lines per file)", INPUT_ERROR_CODE)


def _assembled(result: FileResult, setup: TrainingSetup, launch: Any,
               root: str) -> TrainingSetup:
    """``setup`` as a run (:func:`lintlora.runs.assemble_run`): its launch, its distribution
    (:func:`lintlora.extract.distributed.distributed_for`, whose problems become notices at
    their file and line) and the run's files in ``inputs``. A failure of the distribution reader
    is an internal error (``LL999``); the setup is then linted without it."""
    from lintlora.runs import Run, assemble_run

    files: tuple[str, ...] = ()
    if launch is not None:
        run = Run.of(setup.path, launch)
        files = tuple(f for f in run.files if f != run.entry)
    distributed = None
    try:
        from lintlora.extract.distributed import distributed_for

        distributed, read, problems = distributed_for(setup, launch, root=root)
        files = files + tuple(read)
        for problem in problems:
            note = FileError(problem.path, problem.message,
                             SYNTAX_ERROR_CODE if problem.code == SYNTAX_ERROR_CODE
                             else INPUT_ERROR_CODE, problem.line, problem.column)
            if note not in result.notices:
                result.notices.append(note)
    except Exception as exc:  # noqa: BLE001 - the isolation boundary
        error = _internal(result.path, "reading the run's distributed configs", exc)
        if error not in result.errors:
            result.errors.append(error)
    return _confined_inputs(assemble_run(setup, launch, distributed, files), root)


def _confined_inputs(setup: TrainingSetup, root: str) -> TrainingSetup:
    """``setup`` without the inputs that lie outside the project ``root`` (links resolved): a
    launch word, a ``-r`` include or a link in the project naming a file outside was refused by
    its path and never read, so the result does not rest on its content, and the results cache
    (which takes every input's state by content) must not open it either."""
    from lintlora.safeio import is_within

    kept = tuple(p for p in setup.inputs if is_within(p, root))
    return setup if kept == setup.inputs else dataclasses.replace(setup, inputs=kept)


def _unused_model_notice(path: str, setups: Sequence[TrainingSetup],
                         settings: Settings) -> FileError | None:
    """One notice for a file whose setups name their model themselves, so ``--model`` /
    ``--model-config`` did not apply to them (:meth:`lintlora.context.Context.apply_overrides`);
    ``None`` when every setup took the option (or the file has none)."""
    from lintlora.context import model_named_in_file

    names = [s.get("model.name_or_path") for s in setups]
    kept = [n for n in names if model_named_in_file(n)]
    if not kept:
        return None
    options = " and ".join(f"{flag} {value}" for flag, value in (
        ("--model", settings.model), ("--model-config", settings.model_config)) if value)
    first = kept[0].span
    where = ""
    if first is not None:
        where = (f", cell {first.cell} line {first.line}" if first.cell is not None
                 else f", line {first.line}")
    models = ", ".join(dict.fromkeys(str(n.value) for n in kept))
    some = " for some of its setups" if len(kept) < len(names) else ""
    line = first.line if first is not None and first.cell is None else None
    column = first.column if line is not None else None
    return FileError(
        path, f"{options} not used{some}: the file names its model ({models}{where}); "
              f"{'they replace' if ' and ' in options else 'it replaces'} only a model chosen at "
              f"launch (an argparse, dataclass or environment default) or one the file leaves "
              f"unresolved", INPUT_ERROR_CODE, line, column)


def _codes_of(rules: Sequence["Rule"]) -> frozenset[str]:
    """The codes of the loaded rules (suppression comments naming another ``LL`` code are
    reported as naming no rule)."""
    return frozenset(getattr(r, "code", "") for r in rules) - {""}


def _finish(result: FileResult, produced: list[tuple[Finding, TrainingSetup | None]], text: str,
            settings: Settings, enabled: Sequence["Rule"], ran: set[str],
            known: Iterable[str] = ()) -> FileResult:
    """Suppression, selection, de-duplication, sorting and the notebook line map.

    A syntax error (``LL000``) that selection or a suppression drops is kept as a notice (code
    ``LL000``), so the report can still say the file could not be parsed and was not checked.
    """
    from lintlora.suppression import UNUSED_CODE, apply_suppressions, read_directives

    path = result.path
    kind = result.kind or ""
    elsewhere = [(f, s) for f, s in produced if f.span.path != path]  # at a launch line
    if elsewhere:
        produced = [(f, s) for f, s in produced if f.span.path == path]
    try:
        directives = read_directives(text, kind) if text else []
        # rules whose firing depends on the run's settings (GPU, model, --cpus...): their
        # suppressions are never "unused" because of this run's settings (Rule.depends_on_settings)
        dependent = {r.code for r in enabled if getattr(r, "depends_on_settings", True)}
        kept, unused = apply_suppressions(produced, directives, kind, ran, path, known,
                                          settings_dependent=dependent)
        if elsewhere:
            kept.extend(_suppressed_elsewhere(elsewhere, settings))
    except Exception as exc:  # noqa: BLE001
        result.errors.append(_internal(path, "reading suppression comments", exc))
        kept, unused = [f for f, _ in produced + elsewhere], []
    if rule_enabled(UNUSED_CODE, settings, path):
        kept.extend(unused)
    seen: dict[tuple, int] = {}
    final: list[Finding] = []
    for finding in kept:
        if not rule_enabled(finding.code, settings, path):
            continue
        # identical findings of two setups or two runs are one; the launches of the runs
        # that found it are all kept (related locations, in order)
        key = (finding.code, finding.span, finding.message)
        index = seen.get(key)
        if index is not None:
            first = final[index]
            more = tuple(r for r in finding.related if r not in first.related)
            if more:
                final[index] = dataclasses.replace(first, related=first.related + more)
            continue
        seen[key] = len(final)
        final.append(finding)
    final.sort(key=Finding.sort_key)
    result.findings = final
    for finding, _setup in produced:
        if finding.code == SYNTAX_ERROR_CODE and finding not in final:
            result.notices.append(FileError(
                path, f"could not be parsed ({finding.message}); {SYNTAX_ERROR_CODE} "
                      f"{SYNTAX_ERROR_NAME} is ignored here, so nothing in this file was checked",
                SYNTAX_ERROR_CODE, finding.span.line, finding.span.column))
    if kind in ("notebook", "python") and text and any(f.span.cell for f in final):
        from lintlora.extract.databricks import databricks_cell_lines
        from lintlora.report.locations import notebook_cell_lines

        try:
            # a .py file with cell spans is a Databricks notebook source
            result.cell_lines = notebook_cell_lines(text) if kind == "notebook" else databricks_cell_lines(text)
        except Exception:  # noqa: BLE001 - only a nicety for SARIF/annotations
            result.cell_lines = {}
    return result


def _suppressed_elsewhere(produced: list[tuple[Finding, TrainingSetup | None]],
                          settings: Settings) -> list[Finding]:
    """The findings of ``produced`` (spans in another file than the linted one: a launch line
    such as ``--fp16 True`` at ``run.sh:5``) that the suppression comments of that file leave
    (``# noqa: LL002`` or ``# lintlora: ignore[LL002]`` on the line, as in Python; a shell,
    Makefile or workflow comment). That file is read bounded, as launch discovery read it; its
    unused comments are not reported (they may be about another entry file's runs)."""
    from lintlora.suppression import apply_suppressions, read_directives

    by_path: dict[str, list[tuple[Finding, TrainingSetup | None]]] = {}
    for finding, setup in produced:
        by_path.setdefault(finding.span.path, []).append((finding, setup))
    kept: list[Finding] = []
    for other, items in by_path.items():
        text = _launch_text(other)
        directives = read_directives(text, "shell") if text else []
        if not directives:
            kept.extend(f for f, _ in items)
            continue
        lines = text.split("\n")
        # a command continued with a backslash cannot hold a comment before its last line:
        # a directive there covers every line of the command (a finding's region runs on to
        # the first line that does not end in a backslash)
        stretched = []
        for finding, _setup in items:
            end = finding.span.last_line
            for _ in range(4096):
                if not (1 <= end <= len(lines) and lines[end - 1].rstrip("\r").endswith("\\")):
                    break
                end += 1
            stretched.append((dataclasses.replace(finding, span=dataclasses.replace(
                finding.span, end_line=end)), finding))
        found, _unused = apply_suppressions([(s, None) for s, _ in stretched], directives,
                                            "shell", (), other)
        survivors = {id(f) for f in found}
        kept.extend(original for s, original in stretched if id(s) in survivors)
    return kept


def _launch_text(path: str) -> str:
    """The text of a launch file for its suppression comments, read bounded and without
    following a link (:data:`lintlora.extract.launch_model.MAX_LAUNCH_FILE_BYTES`); ``""`` when
    it cannot be read or decoded."""
    from lintlora.extract.launch_model import MAX_LAUNCH_FILE_BYTES
    from lintlora.safeio import read_bounded

    try:
        return read_bounded(path, MAX_LAUNCH_FILE_BYTES, follow_links=False).decode("utf-8-sig")
    except (OSError, ValueError):
        return ""


# ---- a run -------------------------------------------------------------------------------

def available_rules() -> list[type]:
    """Every rule class: the registry's (:func:`lintlora.rules.load_rules`: built-ins and
    plugins), plus the engine's own ``LL900 unused-suppression`` when the registry lacks it.
    Sorted by code."""
    from lintlora.rules import load_rules
    from lintlora.suppression import UnusedSuppression

    rules = list(load_rules())
    if not any(getattr(r, "code", None) == UnusedSuppression.code for r in rules):
        rules.append(UnusedSuppression)
    return sorted(rules, key=lambda r: getattr(r, "code", ""))


def _load_rule_instances(rules: Sequence[type] | None) -> tuple[list, list[type], list[FileError]]:
    errors: list[FileError] = []
    if rules is None:
        rules = available_rules()
    instances = []
    for cls in rules:
        try:
            instances.append(cls())
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the run
            errors.append(_internal(getattr(cls, "__module__", "?"),
                                    f"creating rule {getattr(cls, 'code', cls)!s}", exc))
    return instances, list(rules), errors


def lint_paths(paths: Sequence[str], settings: Settings | None = None, *,
               settings_for: Callable[[str], Settings] | None = None,
               rules: Sequence[type] | None = None, jobs: int | None = 1,
               cache_dir: str | None = None, keep_setups: bool = True,
               verbose: bool = False) -> RunResult:
    """Lint files and folders.

    Args:
        paths: files and folders (see :func:`lintlora.discovery.discover`).
        settings: the settings for every file (default ``Settings()``), used when
            ``settings_for`` is not given.
        settings_for: per-path settings (the CLI passes the configuration resolver's
            ``for_path``, so the nearest ``[tool.lintlora]`` applies to each file).
        rules: rule classes; default :func:`lintlora.rules.load_rules`.
        jobs: worker processes allowed; ``None`` means one per CPU. A pool is started only
            for enough files (:mod:`lintlora.parallel`); the result is the same for any value.
        cache_dir: the results cache folder (:mod:`lintlora.cache`); ``None``: no cache.
        keep_setups: keep every file's extracted setups in :attr:`RunResult.setups` (for
            ``--show-setup``); cached results hold none, so the cache is only read when this
            is false.
        verbose: keep every "not a training config" notice; by default one is kept only
            when its file is the one path given (:data:`NOT_A_CONFIG`).

    Returns:
        A :class:`RunResult`; this function does not raise for bad input files.
    """
    base = settings or Settings()
    resolve = settings_for or (lambda _path: base)

    def is_excluded(path: str) -> bool:
        return matches_any(path, resolve(path).exclude)

    sources, missing = discover(paths, is_excluded)
    instances, rule_classes, errors = _load_rule_instances(rules)
    contexts: dict[int, tuple[Settings, Context]] = {}

    def context_for(s: Settings) -> "Context":
        entry = contexts.get(id(s))
        if entry is None or entry[0] is not s:
            from lintlora.context import Context

            entry = (s, Context(s))
            contexts[id(s)] = entry
        return entry[1]

    run = RunResult(rules=rule_classes, missing=list(missing))
    run.errors.extend(errors)
    run.errors.extend(FileError(p, "no such file or folder", INPUT_ERROR_CODE) for p in missing)
    from lintlora.parallel import Task, default_jobs, lint_tasks
    from lintlora.runs import LaunchIndex

    # the launches around the linted files: one walk per project root; only launch files
    # naming a linted file (or a named launch file's entries) are parsed
    index = LaunchIndex(_stems(sources))
    sources, launch_results = _launch_files(sources, index, is_excluded,
                                            lambda p: resolve(p).fail_on)
    index.add_names(_stems(sources))  # the entries a named launch file starts
    for launch_result in launch_results:
        _collect(run, launch_result)
    tasks = []
    for source in sources:
        file_settings = resolve(source.path)
        try:
            context = context_for(file_settings)
        except LookupError as exc:  # an unknown GPU name in a configuration file
            run.errors.append(FileError(source.path, str(exc), INPUT_ERROR_CODE))
            continue
        launches: tuple = ()
        root = None
        if source.kind is not None:
            try:
                root = index.root_of(source.path)
                launches = index.launches_for(source.path)
            except Exception as exc:  # noqa: BLE001 - the isolation boundary
                run.errors.append(_internal(source.path, "launch discovery", exc))
        tasks.append(Task(source, file_settings, context, launches, root))
    cache = None
    if cache_dir is not None and tasks:
        from lintlora.cache import ResultCache

        cache = ResultCache(cache_dir, rule_classes)
    try:
        results, run.stats = lint_tasks(tasks, instances, lint=lint_file,
                                        read=read_source_bytes,
                                        jobs=default_jobs() if jobs is None else jobs,
                                        cache=cache, keep_setups=keep_setups)
    finally:
        if cache is not None:
            cache.close()
    for file_result in results:
        _collect(run, file_result)
    for root in sorted({t.root for t in tasks if t.root}):
        note = index.walk_note(root)
        if note:  # the walk for launch files stopped at a bound: say so
            run.notices.append(FileError(root, note, INPUT_ERROR_CODE))
    if not verbose:
        named_alone = os.path.normpath(paths[0]) if len(paths) == 1 else None
        run.notices = [n for n in run.notices if not n.message.startswith(NOT_A_CONFIG)
                       or os.path.normpath(n.path) == named_alone]
    run.files.sort()
    run.findings.sort(key=Finding.sort_key)
    run.errors.sort(key=lambda e: (e.path, e.line or 0, e.code, e.message))
    run.notices.sort(key=lambda e: (e.path, e.message))
    return run


def _launch_files(sources: list[SourceFile], index: Any, is_excluded: Callable[[str], bool],
                  fail_on: Callable[[str], Severity]) -> tuple[list[SourceFile], list[FileResult]]:
    """The sources to lint once the launch files named among them are read: a named launch
    file (``lintlora run.sh``: a file of no kind lintlora lints whose name or shebang says it
    is a shell script, Makefile, Procfile or workflow) is replaced by the entry files its
    launches start that lie inside its project (regular files, not excluded, not named
    already), and gets a result of its own holding its problems as diagnostics at their line:
    ``LL000`` (not readable as shell) a syntax-error finding, anything else an ``LL998`` input
    error. Launch files found only by the walk are not reported on (a broken deploy script
    beside the training code is not the lint's business)."""
    from lintlora.runs import launched_files, problem_codes

    named: list[SourceFile] = []
    kept: list[SourceFile] = []
    for source in sources:
        (named if source.kind is None and source.explicit and _is_launch_file(source.path)
         else kept).append(source)
    if not named:
        return sources, []
    from lintlora import safeio
    from lintlora.extract.launch import discover_launches

    present = {os.path.realpath(s.path) for s in kept}
    results = []
    for source in named:
        result = FileResult(path=source.path, kind=None, linted=True)
        try:
            result.fail_on = fail_on(source.path)
            root = index.root_of(source.path)
            found = discover_launches([source.path], root=root)
            index.add(found)
        except Exception as exc:  # noqa: BLE001 - the isolation boundary
            result.errors.append(_internal(source.path, "launch discovery", exc))
            results.append(result)
            continue
        for problem in found.problems:
            code = problem_codes(problem)
            if code == SYNTAX_ERROR_CODE:
                line = problem.line or 1
                column = problem.column or 1
                result.findings.append(Finding(
                    code=SYNTAX_ERROR_CODE, name=SYNTAX_ERROR_NAME, severity=Severity.ERROR,
                    span=Span(source.path, line, column, line, column), message=problem.message,
                    fix="Fix the shell syntax so the launch can be read; lintlora lints the "
                        "entry files it starts once it can."))
            else:
                result.errors.append(FileError(source.path, problem.message, INPUT_ERROR_CODE,
                                               problem.line, problem.column))
        if not found.launches and not found.problems:
            result.notices.append(FileError(
                source.path, "no command here starts a training entry point (python, torchrun, "
                             "accelerate, deepspeed, llamafactory-cli, axolotl, tune, litgpt); "
                             "nothing to lint", INPUT_ERROR_CODE))
        for launch in found.launches:
            for entry in launched_files(launch):
                real = os.path.realpath(entry)
                if real in present or not safeio.is_within(entry, root) \
                        or not os.path.isfile(entry) or is_excluded(entry):
                    continue
                kind = file_kind(entry, explicit=False)
                if kind is None:
                    continue
                present.add(real)
                kept.append(SourceFile(entry, kind, explicit=False))
        results.append(result)
    kept.sort(key=lambda s: (os.path.normpath(s.path), s.kind or ""))
    return kept, results


def _stems(sources: Sequence[SourceFile]) -> set[str]:
    """The names without suffix of the files a lint judges (:class:`lintlora.runs.LaunchIndex`
    parses only the launch files that name one of them)."""
    return {os.path.splitext(os.path.basename(s.path))[0] for s in sources}


def _is_launch_file(path: str) -> bool:
    """Whether ``path`` is a launch file by its name, or (no suffix) by a shell shebang in its
    first 128 bytes (read bounded, no link followed)."""
    from lintlora.extract.launch import launch_file_kind

    if launch_file_kind(path) is not None:
        return True
    if "." in os.path.basename(path):
        return False
    from lintlora.safeio import read_bounded

    try:
        head = read_bounded(path, 1 << 16, follow_links=False)[:128]
    except (OSError, ValueError):
        return os.path.islink(path)  # a link named like a script: discovery says why not
    return launch_file_kind(path, head.decode("latin-1")) is not None


def _collect(run: RunResult, result: FileResult) -> None:
    if result.linted:
        run.files.append(result.path)
    run.findings.extend(result.findings)
    run.errors.extend(result.errors)
    run.notices.extend(result.notices)
    run.fail_on[result.path] = result.fail_on
    for finding in result.findings:  # a finding at a launch line: its entry's threshold
        run.fail_on.setdefault(finding.span.path, result.fail_on)
    if result.inputs:
        run.inputs[result.path] = result.inputs
    if result.setups:
        run.setups[result.path] = result.setups
    if result.cell_lines:
        run.cell_lines[result.path] = result.cell_lines
