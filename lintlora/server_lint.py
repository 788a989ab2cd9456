"""The editor server's lint of an open buffer, without the LSP library (issue 18, item 3).

:mod:`lintlora.server` speaks the Language Server Protocol with pygls; everything that does not
need pygls lives here, so it is testable and importable without it:

- :class:`LintSession`: the rules (instances made once), the ``[tool.lintlora]`` resolver, one
  :class:`lintlora.context.Context` per distinct :class:`Settings` and the
  :class:`lintlora.runs.LaunchIndex` of the launch scripts, built once and kept across
  keystrokes; :meth:`LintSession.invalidate` drops them (a saved ``pyproject.toml``, launch
  script or config). :meth:`LintSession.lint` lints the buffer's text, never the file on disk
  (:func:`lintlora.engine.lint_file` with ``data=``), and never imports or runs it.
- :func:`client_values`: the client's settings (``initializationOptions`` and
  ``workspace/didChangeConfiguration``: ``gpu``, ``gpuMemory``, ``model``, ``modelConfig``,
  ``params``, ``failOn``, ``select``, ``ignore``, ``extendSelect``, ``maxFileSize``) as the
  ``Settings`` fields the CLI's flags set, validated as the CLI validates them
  (:mod:`lintlora.cli_app` ``_cli_values``); a bad value is a warning, and left out.
- :func:`diagnostics`: a :class:`FileResult` as LSP diagnostics (:class:`Diag`): 0-based lines
  and characters counted in the negotiated position encoding.
- :func:`hover_markdown`, :func:`fix_edits_for`, :func:`fix_all_safe`: a hover's Markdown and the
  edits of the code actions.

Positions (LSP 3.17, "Position" and "PositionEncodingKind",
https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#position):
``line`` is 0-based, ``character`` a 0-based offset in the line counted in UTF-16 code units
unless the server announced another encoding (``utf-8``: bytes, ``utf-32``: code points)
that the client offered in ``general.positionEncodings``. lintlora's spans are 1-based and
count code points (:class:`lintlora.training_setup.Span`); :func:`units` converts. Line breaks
are ``\\n``, ``\\r\\n`` and ``\\r`` (LSP "Text Documents": "the protocol supports all three"),
as :mod:`lintlora.fixing` counts them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from lintlora.findings import FileError, Finding, FixSafety, Severity, TextEdit

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.file_result import FileResult
    from lintlora.settings import Settings

__all__ = [
    "SOURCE",
    "FIX_ALL_KIND",
    "LANGUAGE_KINDS",
    "INVALIDATING_NAMES",
    "Diag",
    "LintSession",
    "client_values",
    "kind_for",
    "units",
    "diagnostics",
    "hover_markdown",
    "fix_edits_for",
    "fix_all_safe",
    "is_invalidating",
    "notebook_json",
    "cell_diagnostics",
    "cell_fix_edits",
]

SOURCE = "lintlora"
"""The ``source`` of every diagnostic (LSP ``Diagnostic.source``: "a human-readable string
describing the source of this diagnostic")."""

FIX_ALL_KIND = "source.fixAll.lintlora"
"""The code-action kind of "fix all safe": LSP 3.17 ``CodeActionKind.SourceFixAll`` is
``source.fixAll`` ("Base kind for an auto-fix source action"), and kinds are hierarchical with
``.`` (ruff's server announces ``source.fixAll.ruff`` alike)."""

LANGUAGE_KINDS = {"python": "python", "yaml": "yaml", "json": "json", "jsonc": "json",
                  "jupyter": "notebook", "ipynb": "notebook"}
"""LSP ``languageId`` -> lintlora's file kind, for a document whose name says nothing
(``untitled:``); the identifiers are the LSP 3.17 table's ("Text Document Item": ``python``,
``yaml``, ``json``) and VS Code's ``jsonc`` and ``jupyter``."""

INVALIDATING_NAMES = ("pyproject.toml",)
"""Files whose change drops the session's settings and caches; plus launch files (shell,
Makefile, Procfile, workflows: :func:`lintlora.extract.launch.launch_file_kind`) and the YAML/
JSON configs a script or launch may name (:func:`is_invalidating`)."""

MAX_CLIENT_TEXT = 1000
"""Characters of one client setting read at most (a GPU or model name, a code list)."""

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

LSP_SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}
"""lintlora severity -> LSP ``DiagnosticSeverity`` (1 Error, 2 Warning, 3 Information,
4 Hint: LSP 3.17)."""


# ---- positions ---------------------------------------------------------------------------------

def units(text: str, encoding: str = "utf-16") -> int:
    """The length of ``text`` in the code units of ``encoding`` (``utf-16``, ``utf-8`` or
    ``utf-32``; anything else counts as ``utf-16``, the LSP default)."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class _Lines:
    """The lines of a text without their breaks (``\\n``, ``\\r\\n``, ``\\r``)."""

    def __init__(self, text: str) -> None:
        self.lines = _LINE_BREAK.split(text)

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> str:
        """0-based line ``index`` (``""`` outside the text)."""
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def position(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """1-based ``line``/``column`` (code points) -> 0-based LSP (line, character), clamped
        to the text."""
        index = min(max(line, 1), max(len(self.lines), 1)) - 1
        text = self.line(index)
        return index, units(text[:max(column, 1) - 1], encoding)

    def end_of(self, index: int, encoding: str) -> int:
        return units(self.line(index).rstrip(), encoding)


Range = tuple[int, int, int, int]
"""``(start line, start character, end line, end character)``, 0-based, in client units."""


@dataclass(frozen=True)
class Diag:
    """One diagnostic as the LSP ``Diagnostic`` carries it.

    Attributes:
        range: :data:`Range`.
        severity: LSP ``DiagnosticSeverity`` (:data:`LSP_SEVERITY`).
        code: ``LL001``, ``LL998``...
        href: the rule's page (``codeDescription.href``), or ``None``.
        message: the text shown.
        related: ``(path, range, message)`` of each related location (``relatedInformation``).
        finding: the finding it shows (``None`` for an input error or a notice).
    """

    range: Range
    severity: int
    code: str
    href: str | None
    message: str
    related: tuple[tuple[str, Range, str], ...] = ()
    finding: Finding | None = field(default=None, compare=False)


# ---- client settings ---------------------------------------------------------------------------

_CLIENT_KEYS = ("gpu", "gpuMemory", "model", "modelConfig", "params", "failOn", "select",
                "ignore", "extendSelect", "maxFileSize", "assumeVersion")


def _options_of(options: Any) -> Mapping[str, Any]:
    """The lintlora settings of a client's options: ``{"lintlora": {...}}`` (VS Code's
    ``settings.json`` section, what ``didChangeConfiguration`` sends), or the keys at the top
    (``initializationOptions`` of a generic client); ``{}`` for anything else."""
    if not isinstance(options, Mapping):
        return {}
    inner = options.get("lintlora")
    if isinstance(inner, Mapping):
        return inner
    return options


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {type(value).__name__}")
    if len(value) > MAX_CLIENT_TEXT:
        raise ValueError(f"is {len(value):,} characters long (at most {MAX_CLIENT_TEXT:,})")
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def _codes(value: Any, key: str, known: Sequence[str] | None) -> tuple[str, ...]:
    from lintlora.config import validate_codes

    if isinstance(value, str):
        items = [c for c in re.split(r"[,\s]+", value) if c]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise ValueError("must be a list of rule codes")
    if len(items) > 256 or any(len(c) > 32 for c in items):
        raise ValueError("too many or too long rule codes")
    codes = tuple(c.strip().upper() for c in items)
    if known is not None:
        try:
            validate_codes(codes, known, key)
        except Exception as exc:  # ConfigError: its own words
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return codes


def client_values(options: Any, known_codes: Sequence[str] | None = None
                  ) -> tuple[dict[str, Any], list[str]]:
    """The client's lintlora settings as ``Settings`` field values, and a warning per bad one.

    Args:
        options: ``initializationOptions`` or a ``didChangeConfiguration`` ``settings``
            object: ``{"lintlora": {"gpu": "rtx4090", ...}}`` or ``{"gpu": ...}``. Keys:
            ``gpu`` (a catalog name: :func:`lintlora.estimate.gpus.find_gpu`), ``gpuMemory``
            (``24GiB``: :func:`lintlora.settings.parse_memory_size`), ``model`` (hub id),
            ``modelConfig`` (a local ``config.json``), ``params`` (``7B``), ``failOn``
            (``info``/``warning``/``error``), ``select``/``ignore``/``extendSelect`` (codes,
            a list or a comma-separated string), ``maxFileSize`` (``5MiB``), ``assumeVersion``
            (``{"peft": "0.13.0"}`` or ``["peft=0.13.0"]``). ``null`` leaves a key unset.
        known_codes: the registered rule codes, to validate code lists.

    Returns:
        ``(values, warnings)``: each warning names the key and why it was left out; never
        raises.
    """
    values: dict[str, Any] = {}
    warnings: list[str] = []
    opts = _options_of(options)
    for key in opts:
        if isinstance(key, str) and key not in _CLIENT_KEYS and len(warnings) < 16:
            import difflib

            close = difflib.get_close_matches(str(key), _CLIENT_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warnings.append(f"lintlora.{str(key)[:64]}: unknown setting{hint}; ignored")
    for key in _CLIENT_KEYS:
        value = opts.get(key)
        if value is None:
            continue
        try:
            _client_value(key, value, values, known_codes)
        except (ValueError, LookupError, TypeError) as exc:
            detail = str(exc).strip("'\"")[:300]
            warnings.append(f"lintlora.{key}: {detail}; ignored")
        except Exception as exc:  # noqa: BLE001 - a bad setting must never stop the server
            warnings.append(f"lintlora.{key}: cannot be read ({type(exc).__name__}); ignored")
    return values, warnings


def _client_value(key: str, value: Any, values: dict[str, Any],
                  known_codes: Sequence[str] | None) -> None:
    """Set the field(s) of one client setting in ``values``; raises ``ValueError``/
    ``LookupError`` for a bad value (as the CLI's options do)."""
    from lintlora.limits import MAX_PARAMS

    if key == "gpu":
        from lintlora.estimate.gpus import find_gpu

        name = _text(value, key)
        find_gpu(name)  # LookupError: unknown, with close matches
        values["gpu"] = name
    elif key == "gpuMemory":
        from lintlora.settings import parse_memory_size

        values["gpu_memory_bytes"] = parse_memory_size(_text(value, key))
    elif key == "model":
        values["model"] = _text(value, key)
    elif key == "modelConfig":
        path = os.path.expanduser(_text(value, key))
        if not os.path.isfile(path):
            raise ValueError(f"{path!r} is not a file")
        values["model_config"] = path
    elif key == "params":
        from lintlora.cli_numbers import parse_count

        values["params"] = parse_count(str(value) if isinstance(value, (int, float)) else
                                       _text(value, key), MAX_PARAMS)
    elif key == "failOn":
        from lintlora.findings import Severity

        try:
            values["fail_on"] = Severity(_text(value, key).lower())
        except ValueError:
            raise ValueError("must be info, warning or error") from None
    elif key in ("select", "ignore", "extendSelect"):
        field_name = {"extendSelect": "extend_select"}.get(key, key)
        values[field_name] = _codes(value, f"lintlora.{key}", known_codes)
    elif key == "maxFileSize":
        from lintlora.config import parse_file_size

        values["max_file_bytes"] = parse_file_size(value)
    elif key == "assumeVersion":
        from lintlora.config import parse_versions_table

        if isinstance(value, list) and all(isinstance(v, str) and "=" in v for v in value):
            value = dict(v.split("=", 1) for v in value[:256])
        if not isinstance(value, Mapping):
            raise ValueError('must be {"package": "version"} or ["package=version"]')
        try:
            values["assume_versions"] = parse_versions_table(dict(value), "lintlora.assumeVersion")
        except Exception as exc:  # ConfigError: its words
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
        values["version_flags"] = tuple(p for p, _v in values["assume_versions"])


# ---- the session -------------------------------------------------------------------------------

def kind_for(path: str, language_id: str | None = None) -> str | None:
    """lintlora's kind of a document: by its suffix (``.py``, ``.ipynb``, ``.yaml``/``.yml``,
    ``.json``), else by its ``languageId`` (:data:`LANGUAGE_KINDS`); ``None``: not linted."""
    suffix = os.path.splitext(path)[1].lower()
    by_suffix = {".py": "python", ".pyi": None, ".ipynb": "notebook", ".yaml": "yaml",
                 ".yml": "yaml", ".json": "json"}
    if suffix in by_suffix:
        return by_suffix[suffix]
    return LANGUAGE_KINDS.get((language_id or "").lower())


def is_invalidating(path: str) -> bool:
    """Whether a change of ``path`` on disk can change a buffer's result: a ``pyproject.toml``
    (settings, pins), a requirements or lock file (pins), a launch file, a YAML/JSON config (a
    script or launch names it), a model ``config.json``."""
    name = os.path.basename(path)
    if name in INVALIDATING_NAMES or name.startswith("requirements") or name.endswith(
            (".lock", ".yaml", ".yml", ".json", ".cfg", ".toml", ".txt")):
        return True
    from lintlora.extract.launch import launch_file_kind

    try:
        return launch_file_kind(path) is not None
    except Exception:  # noqa: BLE001 - a name lintlora cannot judge: be safe
        return True


class LintSession:
    """What the server keeps between lints: rules, settings, contexts, launches.

    Args:
        options: the client's settings (:func:`client_values`).
        rules: rule classes (default :func:`lintlora.engine.available_rules`).
        root: the workspace folder (``None``: each file's own project).

    Attributes:
        warnings: what the last :meth:`configure` (and configuration lookups since) found
            wrong, for the server to show once (``window/showMessage``); cleared by
            :meth:`take_warnings`.
    """

    def __init__(self, options: Any = None, *, rules: Sequence[type] | None = None,
                 root: str | None = None) -> None:
        from lintlora.engine import _load_rule_instances

        self.root = root
        self.instances, self.rule_classes, errors = _load_rule_instances(rules)
        self.warnings: list[str] = [e.message for e in errors]
        self.known_codes = [getattr(r, "code", "") for r in self.rule_classes]
        self._rules_by_code = {getattr(r, "code", ""): r for r in self.rule_classes}
        self.values: dict[str, Any] = {}
        self._resolver: Any = None
        self._fallback: Any = None  # the Settings used while the project configuration is broken
        self._contexts: dict[int, tuple[Any, Any]] = {}
        self._index: Any = None
        from lintlora.extract.cst_chunks import ChunkParser

        self.parser = ChunkParser()  # kept across settings: a parse depends on the text only
        self.configure(options)

    # -- settings --
    def configure(self, options: Any) -> list[str]:
        """Take the client's settings (a bad one is left out with a warning) and drop what
        was built from the old ones; returns the warnings."""
        values, warnings = client_values(options, self.known_codes)
        self.values = values
        self.warnings.extend(warnings)
        self.invalidate()
        return warnings

    def invalidate(self) -> None:
        """Forget settings, contexts and launches: built again on the next lint."""
        self._resolver = None
        self._fallback = None
        self._contexts = {}
        self._index = None

    def take_warnings(self) -> list[str]:
        out, self.warnings = self.warnings, []
        return out

    def _warn(self, message: str) -> None:
        if message not in self.warnings and len(self.warnings) < 64:
            self.warnings.append(message)

    def settings_for(self, path: str) -> "Settings":
        """The settings of ``path``: its ``[tool.lintlora]`` merged with the client's values
        (the client's win, as flags do); a broken configuration file is a warning, and the
        client's values alone apply."""
        from lintlora.config import ConfigError, SettingsResolver

        if self._resolver is None:
            self._resolver = SettingsResolver(self.values, known_codes=self.known_codes,
                                              on_config=self._check_config_gpu)
        try:
            return self._resolver.for_path(path)
        except (ConfigError, OSError, ValueError) as exc:
            self._warn(str(exc)[:500])
            # one fallback until the next invalidate(): a new resolver per keystroke gave a
            # new Settings, and so a new Context kept in _contexts, on every lint
            if self._fallback is None:
                self._fallback = SettingsResolver(self.values, use_config=False).for_path(path)
            return self._fallback

    @staticmethod
    def _check_config_gpu(config: Any) -> None:
        name = config.values.get("gpu")
        if not name:
            return
        from lintlora.config import ConfigError
        from lintlora.estimate.gpus import find_gpu

        try:
            find_gpu(name)
        except LookupError as exc:
            raise ConfigError(f"{config.path}: [tool.lintlora] gpu: {str(exc).strip(chr(39))}"
                              ) from None

    def context_for(self, settings: "Settings") -> Any:
        """The :class:`lintlora.context.Context` of ``settings`` (one per settings object)."""
        entry = self._contexts.get(id(settings))
        if entry is None or entry[0] is not settings:
            from lintlora.context import Context

            entry = (settings, Context(settings))
            self._contexts[id(settings)] = entry
        return entry[1]

    def rule_of(self, code: str) -> type | None:
        return self._rules_by_code.get(code)

    # -- linting --
    def lint(self, path: str, text: str, kind: str | None = None, *,
             on_disk: bool = True) -> "FileResult":
        """Lint the buffer ``text`` of ``path``; never raises.

        Args:
            path: the document's file path (for an ``untitled:`` document, a made-up path in
                the workspace with the suffix of its language).
            text: the buffer.
            kind: ``python``/``notebook``/``yaml``/``json`` (default :func:`kind_for`).
            on_disk: whether the path is a real file's (launches are looked up only then).

        A buffer larger than ``max-file-size`` is an ``LL998`` error, not linted; a
        half-typed file an ``LL000`` finding; anything raised inside an ``LL999`` error.
        """
        from lintlora.discovery import SourceFile
        from lintlora.engine import INPUT_ERROR_CODE, _internal, lint_file
        from lintlora.file_result import FileResult

        kind = kind or kind_for(path)
        result = FileResult(path=path, kind=kind)
        try:
            settings = self.settings_for(path)
            result.fail_on = settings.fail_on
            data = _encode(text, kind)
            if len(data) > settings.max_file_bytes:
                from lintlora.limits import format_bytes

                result.errors.append(FileError(
                    path, f"the buffer is {format_bytes(len(data))}, more than max-file-size "
                          f"({format_bytes(settings.max_file_bytes)}); not linted (raise "
                          f"lintlora.maxFileSize or [tool.lintlora] max-file-size)",
                    INPUT_ERROR_CODE, 1, 1))
                return result
            try:
                context = self.context_for(settings)
            except LookupError as exc:  # an unknown GPU of a configuration file
                result.errors.append(FileError(path, str(exc)[:500], INPUT_ERROR_CODE, 1, 1))
                return result
            launches: tuple = ()
            root = None
            if on_disk and kind is not None:
                try:
                    index = self._launch_index()
                    root = index.root_of(path)
                    launches = index.launches_for(path)
                except Exception as exc:  # noqa: BLE001 - the isolation boundary
                    result.errors.append(_internal(path, "launch discovery", exc))
            # explicit for Python (a half-typed script is reported); YAML/JSON quiet: an open
            # CI workflow or package.json is not lintlora's business (no "not a config" notice)
            source = SourceFile(path, kind, explicit=kind in ("python", "notebook"))
            from lintlora.extract.cst_chunks import parsing_with

            try:
                with parsing_with(self.parser):  # only the changed statements are parsed again
                    return lint_file(source, settings, self.instances, context, data=data,
                                     launches=launches, root=root)
            finally:
                forget = getattr(context, "forget_estimates", None)
                if forget is not None:
                    forget()
        except Exception as exc:  # noqa: BLE001 - the server keeps running
            result.errors.append(_internal(path, "the editor server's lint", exc))
            return result

    def _launch_index(self) -> Any:
        if self._index is None:
            from lintlora.runs import LaunchIndex

            self._index = LaunchIndex(None)  # every launch file of a root, walked once
        return self._index


def _encode(text: str, kind: str | None) -> bytes:
    """The bytes the engine decodes back into ``text``: UTF-8, or for Python the encoding a
    PEP 263 coding line declares (the engine decodes by it); a character that encoding
    cannot hold makes it UTF-8 again (the engine then names the line as it would a file's)."""
    data = text.encode("utf-8", "surrogatepass")
    if kind == "python" and b"coding" in data[:400]:
        import io
        import tokenize

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:
            return data
        if encoding not in ("utf-8", "utf-8-sig"):
            try:
                return text.encode(encoding)
            except (LookupError, UnicodeError):
                return data
    return data


# ---- diagnostics -------------------------------------------------------------------------------

def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
    except ValueError:
        return a == b


def _href(code: str, rule: type | None) -> str | None:
    if rule is not None:
        from lintlora.report import rule_metadata

        try:
            uri = rule_metadata(rule).get("help_uri")
        except Exception:  # noqa: BLE001 - a plugin's metadata
            uri = None
        if uri:
            return uri
    if code.startswith("LL"):
        from lintlora.rules.base import DOCS_URL

        return DOCS_URL.format(code=code)
    return None


class _Placer:
    """Places spans of the buffer's file into LSP ranges (cells of a notebook included)."""

    def __init__(self, result: "FileResult", text: str, encoding: str) -> None:
        self.result = result
        self.text = text
        self.encoding = encoding
        self.lines = _Lines(text)
        self._cells: dict[int, tuple[int, ...]] | None = None
        # a byte-order mark the engine strips shifts the first line's columns
        self.bom = 1 if text.startswith("\ufeff") else 0

    def cell_lines(self) -> dict[int, tuple[int, ...]]:
        if self._cells is None:
            cells = self.result.cell_lines
            if not cells:
                try:
                    if self.result.kind == "notebook":
                        from lintlora.report.locations import notebook_cell_lines

                        cells = notebook_cell_lines(self.text)
                    else:
                        from lintlora.extract.databricks import databricks_cell_lines

                        cells = databricks_cell_lines(self.text)
                except Exception:  # noqa: BLE001 - an unmapped cell goes to its line
                    cells = {}
            self._cells = cells or {}
        return self._cells

    def point(self, line: int, column: int) -> tuple[int, int]:
        if line == 1:
            column += self.bom
        return self.lines.position(line, column, self.encoding)

    def span(self, line: int, column: int, end_line: int | None, end_column: int | None,
             cell: int | None) -> Range:
        if cell is not None:
            return self._cell_span(line, column, end_line, end_column, cell)
        start = self.point(line, column)
        if end_line is None or end_column is None or (end_line, end_column) <= (line, column):
            end = (start[0], max(self.lines.end_of(start[0], self.encoding), start[1]))
            if end == start:  # an empty line, or the column at its end: one character
                end = (start[0], start[1] + 1)
            return (*start, *end)
        return (*start, *self.point(end_line, end_column))

    def _cell_span(self, line: int, column: int, end_line: int | None,
                   end_column: int | None, cell: int) -> Range:
        from lintlora.report.locations import file_line

        cells = self.cell_lines()
        first = file_line(cells, cell, line)
        last = file_line(cells, cell, end_line if end_line is not None else line)
        if self.result.kind != "notebook":  # a Databricks source: columns are the file's
            return self.span(first, column, last if end_line is not None else None,
                             end_column if last != first or end_line is not None else None,
                             None)
        # a notebook's JSON: the cell's source line is a JSON string on that file line; its
        # column is mapped through the string's escapes when the string starts that line
        start = self._json_column(first, column)
        end = self._json_column(last, end_column) if end_column is not None else None
        if end is None or (last, end) <= (first, start if start is not None else 0):
            begin = start if start is not None else self._indent(first)
            return (first - 1, begin, last - 1, max(self.lines.end_of(last - 1, self.encoding),
                                                    begin + 1))
        return (first - 1, start if start is not None else self._indent(first), last - 1, end)

    def _indent(self, line: int) -> int:
        text = self.lines.line(line - 1)
        return units(text[:len(text) - len(text.lstrip())], self.encoding)

    def _json_column(self, line: int, column: int | None) -> int | None:
        """The character of the file line ``line`` (1-based) holding code column ``column``
        of the JSON string that starts the line (escapes counted), or ``None``."""
        if column is None:
            return None
        raw = self.lines.line(line - 1)
        quote = len(raw) - len(raw.lstrip())
        if raw[quote:quote + 1] != '"':
            return None
        i = quote + 1
        for _ in range(max(column, 1) - 1):
            if i >= len(raw) or raw[i] == '"':
                break
            if raw[i] == "\\":
                if raw[i + 1:i + 2] == "u":
                    code = raw[i + 2:i + 6]
                    i += 6
                    if code[:1].lower() == "d" and code[1:2].lower() in "89ab" \
                            and raw[i:i + 2] == "\\u":
                        i += 6  # a surrogate pair: one code point
                else:
                    i += 2
            else:
                i += 1
        return units(raw[:min(i, len(raw))], self.encoding)


def diagnostics(result: "FileResult", text: str, encoding: str = "utf-16",
                rule_of: Callable[[str], type | None] | None = None) -> list[Diag]:
    """The diagnostics of one buffer's result.

    Findings at their span; a finding whose span lies in another file (a launch line
    ``run.sh:5``) at the top of the buffer, its message saying where, with that place as
    related information; ``LL998``/``LL999`` errors (warning and error) and notices
    (information) at their line or the first. ``encoding``: the negotiated position encoding.
    """
    from lintlora.report import display_path
    from lintlora.report.locations import related_text

    placer = _Placer(result, text, encoding)
    rule_of = rule_of or (lambda _code: None)
    out: list[Diag] = []
    for finding in result.findings:
        span = finding.span
        related = tuple((r.span.path, _foreign_range(r.span), related_text(r))
                        for r in finding.related)
        message = finding.message
        if _same_file(span.path, result.path):
            where = placer.span(span.line, span.column, span.end_line, span.end_column,
                                span.cell)
        else:
            where = (0, 0, 0, max(placer.lines.end_of(0, encoding), 1))
            message = f"{display_path(span.path)}:{span.line}: {message}"
            related = ((span.path, _foreign_range(span), "here"),) + related
        out.append(Diag(where, LSP_SEVERITY.get(finding.severity, 2), finding.code,
                        _href(finding.code, rule_of(finding.code)), message, related, finding))
    for error, severity in ([(e, 1 if e.code == "LL999" else 2) for e in result.errors]
                            + [(n, 3) for n in result.notices]):
        line = error.line or 1
        where = placer.span(line, error.column or 1, None, None, None)
        out.append(Diag(where, severity, error.code, _href(error.code, None), error.message))
    return out


def _foreign_range(span: Any) -> Range:
    """A span of another file (its text not at hand): code points as characters."""
    line = max(span.line, 1) - 1
    start = max(span.column, 1) - 1
    if span.end_line is not None and span.end_column is not None and \
            (span.end_line, span.end_column) > (span.line, span.column):
        return (line, start, span.end_line - 1, span.end_column - 1)
    return (line, start, line, start)


def contains(rng: Range, line: int, character: int) -> bool:
    """Whether the position is inside ``rng`` (its end included: a hover at a word's end)."""
    return (rng[0], rng[1]) <= (line, character) <= (rng[2], rng[3])


# ---- hover -------------------------------------------------------------------------------------

_FIT_LIST = re.compile(r"(What would (?:make it fit|leave 10% free) \(each re-estimated\)): "
                       r"(.*?)\.(?= |$)")
_FIT_ITEM = re.compile(r"(?:^|; )(\d+)\) ")


def _fit_list(message: str) -> tuple[str, str | None, list[str]]:
    """LL008's message split into the text without its fit list, the list's heading and its
    items (``1) batch 2: 20.1 GiB; 2) ...``: :mod:`lintlora.rules.ll008_does_not_fit`)."""
    match = _FIT_LIST.search(message)
    if not match:
        return message, None, []
    body = match.group(2)
    starts = [m for m in _FIT_ITEM.finditer(body)]
    items = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        items.append(body[m.end():end])
    rest = (message[:match.start()] + message[match.end() + 1:]).strip()
    return re.sub(r"  +", " ", rest), match.group(1), items


def hover_markdown(diag: Diag) -> str:
    """The Markdown of a hover on ``diag``: the rule, the message, the memory figures (as
    written, after the fix, the GPU: :func:`lintlora.report.memory_line`) and the estimate's
    breakdown, LL008's fit list as a list, what the finding rests on, the fix in words, and
    the rule's page. Every piece of text from the file is escaped
    (:func:`lintlora.report.escape.markdown_text`)."""
    from lintlora.report import gib, memory_line
    from lintlora.report.escape import markdown_code_span, markdown_table_cell, markdown_text

    finding = diag.finding
    parts: list[str] = []
    if finding is None:
        parts.append(f"**{markdown_text(diag.code)}** {markdown_text(diag.message)}")
    else:
        parts.append(f"**{markdown_text(finding.code)}** {markdown_code_span(finding.name)} "
                     f"· {finding.severity.value}")
        message, heading, items = _fit_list(diag.message)
        parts.append(markdown_text(message))
        figures = finding.estimate
        memory = memory_line(figures)
        if memory:
            parts.append(f"**Memory:** {markdown_text(memory)}")
        if figures is not None and figures.breakdown:
            rows = ["| component | as written |", "|---|---:|"]
            for name, size in list(figures.breakdown.items())[:32]:
                rows.append(f"| {markdown_table_cell(markdown_text(str(name)))} | {gib(size)} |")
            rows.append(f"| **peak** | **{gib(figures.peak_bytes)}** |")
            parts.append("\n".join(rows))
        if heading and items:
            parts.append(f"**{markdown_text(heading)}:**\n\n" + "\n".join(
                f"{n}. {markdown_text(item)}" for n, item in enumerate(items, 1)))
        if finding.rests_on:
            parts.append("**Rests on:** " + "; ".join(markdown_text(r) for r in finding.rests_on))
        if finding.fix:
            parts.append(f"**Fix:** {markdown_text(finding.fix)}")
        if finding.autofix is not None:
            unsafe = " (unsafe)" if finding.autofix.safety is FixSafety.UNSAFE else ""
            parts.append(f"Quick fix: {markdown_text(finding.autofix.title)}{unsafe}")
    if diag.href:
        parts.append(f"[{markdown_text(diag.code)} rule page](<{diag.href}>)")
    return "\n\n".join(parts)


# ---- fixes -------------------------------------------------------------------------------------

Edits = dict[str, tuple[str, list[tuple[Range, str]]]]
"""path -> (that file's text before the fix, [(range, new text)]) in client units."""


def _reader(path: str, text: str, kind: str | None) -> Callable[[str], tuple[str, str]]:
    """``plan``'s reader: the buffer for its own path, a bounded read for another file."""

    def read(other: str) -> tuple[str, str]:
        if _same_file(other, path):
            return text, kind or "python"
        from lintlora.autofix import read_source_text

        source = read_source_text(other)
        return source.text, source.kind

    return read


def _to_ranges(edits: Iterable[TextEdit], texts: Mapping[str, str], encoding: str) -> Edits:
    out: Edits = {}
    lines_of: dict[str, _Lines] = {}
    for edit in edits:
        old = texts[edit.path]
        lines = lines_of.setdefault(edit.path, _Lines(old))
        start = lines.position(edit.line, edit.column, encoding)
        end = lines.position(edit.end_line, edit.end_column, encoding)
        out.setdefault(edit.path, (old, []))[1].append(((*start, *end), edit.new_text))
    return out


def fix_edits_for(finding: Finding, path: str, text: str, kind: str | None,
                  encoding: str = "utf-16") -> Edits | None:
    """The edits of ``finding``'s autofix against the buffer (other files it names read from
    disk, bounded), or ``None`` when it has none or it cannot be placed."""
    if finding.autofix is None or not finding.autofix.ops:
        return None
    from lintlora.fixing import plan

    try:
        composed = plan([finding.autofix], _reader(path, text, kind))
    except Exception:  # noqa: BLE001 - a code action is left out, never the server
        return None
    outcome = composed.outcomes[0] if composed.outcomes else None
    if outcome is None or outcome.status != "applied" or not outcome.edits:
        return None
    try:
        return _to_ranges(outcome.edits, composed.old, encoding)
    except Exception:  # noqa: BLE001
        return None


def fix_all_safe(findings: Sequence[Finding], path: str, text: str, kind: str | None,
                 settings: Any = None, encoding: str = "utf-16") -> Edits | None:
    """Every safe autofix of ``findings`` composed in one pass as ``--fix`` does
    (:func:`lintlora.fixing.plan`; ``fixable``/``unfixable`` of ``settings`` honoured): per
    changed file one edit replacing its whole text by the fixed one; ``None``: nothing to do."""
    from lintlora.autofix import fix_allowed
    from lintlora.fixing import plan

    fixes = [f.autofix for f in findings
             if f.autofix is not None and (settings is None or fix_allowed(f, settings, False))
             and f.autofix.safety is FixSafety.SAFE]
    if not fixes:
        return None
    try:
        composed = plan(fixes, _reader(path, text, kind))
    except Exception:  # noqa: BLE001
        return None
    out: Edits = {}
    for changed in composed.changed():
        old = composed.old[changed]
        lines = _Lines(old)
        last = len(lines) - 1
        end = (last, units(lines.line(last), encoding))
        out[changed] = (old, [((0, 0, *end), composed.new[changed])])
    return out or None


# ---- notebook documents (LSP notebook sync: one text document per cell) ------------------------

def notebook_json(cells: Sequence[tuple[bool, str]]) -> str:
    """The ``.ipynb`` JSON (nbformat 4) of a notebook's cells, ``(is_code, source)`` each, as
    the notebook extractor reads it (code cells' ``source`` as a list of lines: nbformat 4
    "Cell types", https://nbformat.readthedocs.io/en/latest/format_description.html)."""
    import json

    out = []
    for is_code, source in cells:
        cell: dict[str, Any] = {"cell_type": "code" if is_code else "markdown", "metadata": {},
                                "source": source.splitlines(keepends=True)}
        if is_code:
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1, ensure_ascii=False)


def cell_diagnostics(result: "FileResult", code_cells: Sequence[str], encoding: str = "utf-16",
                     rule_of: Callable[[str], type | None] | None = None
                     ) -> dict[int, list[Diag]]:
    """The diagnostics of a notebook's result by code cell (1-based, code cells only, as
    :class:`lintlora.training_setup.Span` ``cell`` counts them), positions in each cell's own
    text; a finding without a cell, in another file, and the errors and notices go to the
    first code cell (:func:`diagnostics` places those)."""
    rule_of = rule_of or (lambda _code: None)
    out: dict[int, list[Diag]] = {i: [] for i in range(1, len(code_cells) + 1)}
    if not code_cells:
        return out
    placers = {}
    rest = dataclasses_replace_result(result)
    for finding in result.findings:
        span = finding.span
        if span.cell is None or not 1 <= span.cell <= len(code_cells) \
                or not _same_file(span.path, result.path):
            rest.findings.append(finding)
            continue
        placer = placers.get(span.cell)
        if placer is None:
            from lintlora.file_result import FileResult

            placer = placers[span.cell] = _Placer(FileResult(result.path, "python"),
                                                  code_cells[span.cell - 1], encoding)
        where = placer.span(span.line, span.column, span.end_line, span.end_column, None)
        from lintlora.report.locations import related_text

        related = tuple((r.span.path, _foreign_range(r.span), related_text(r))
                        for r in finding.related)
        out[span.cell].append(Diag(where, LSP_SEVERITY.get(finding.severity, 2), finding.code,
                                   _href(finding.code, rule_of(finding.code)), finding.message,
                                   related, finding))
    out[1].extend(diagnostics(rest, code_cells[0], encoding, rule_of))
    return out


def dataclasses_replace_result(result: "FileResult") -> "FileResult":
    """A copy of ``result`` without findings (its errors and notices kept)."""
    from lintlora.file_result import FileResult

    return FileResult(path=result.path, kind="python", errors=list(result.errors),
                      notices=list(result.notices))


def cell_fix_edits(finding: Finding, notebook_text: str, code_cells: Sequence[str],
                   encoding: str = "utf-16") -> dict[int, list[tuple[Range, str]]] | None:
    """The edits of ``finding``'s autofix per code cell (cell coordinates, client units), or
    ``None`` (no fix, one that names another file, or it cannot be placed)."""
    fix = finding.autofix
    if fix is None or not fix.ops or any(op.span.cell is None for op in fix.ops):
        return None
    from lintlora.fixing import _notebook_cell_edits

    try:
        by_cell = _notebook_cell_edits(fix.ops, notebook_text)
    except Exception:  # noqa: BLE001 - FixError and the like: no code action
        return None
    out: dict[int, list[tuple[Range, str]]] = {}
    for cell, edits in by_cell.items():
        if not 1 <= cell <= len(code_cells):
            return None
        lines = _Lines(code_cells[cell - 1])
        out[cell] = [((*lines.position(e.line, e.column, encoding),
                       *lines.position(e.end_line, e.end_column, encoding)), e.new_text)
                     for e in edits]
    return out or None
