"""The results cache: an unchanged file is not parsed again (issue 8).

One JSON file per linted file holds what linting it produced (its findings, its ``LL998``
input diagnostics and notices, the notebook line map): never pickles, never anything that is
executed or imported when read back.

**Where.** ``--cache-dir DIR``, else ``$XDG_CACHE_HOME/lintlora``, else ``~/.cache/lintlora``
(the XDG base-directory layout), under a ``v1`` folder (the entry format); entries are
``v1/<2 hex>/<sha256>.json``. A ``CACHEDIR.TAG`` marks the folder as a cache for backup tools
(https://bford.info/cachedir/).

**The key** (a SHA-256 over a canonical JSON document) holds everything a result depends on
that is known before linting:

- the file: its SHA-256, its path as given and as an absolute path (findings carry the path),
  its kind and whether it was named explicitly;
- the settings that change results (selection, per-file ignores, GPU, model, ``--params``,
  ``--cpus``, ``--tokens``, the size limit; not ``exclude``, ``fail_on``, jobs or the cache
  itself);
- lintlora: its version *and* the size and modification time of every module and data file
  of the installed package (so a development tree invalidates on every edit), the rule classes
  (plugins included, with their module files' size and time), the Python version, and the
  installed LibCST and PyYAML (their ``__init__`` files' size and time);
- the environment the model lookup reads: the working directory, ``HF_HUB_CACHE``,
  ``HF_HOME`` and ``HOME``.

**Inputs found while linting.** A result can also depend on other files: a JSON/YAML file a
script names by literal path (:mod:`lintlora.extract.pyargs`), a local ``config.json`` or a
Hugging Face cache folder the architecture lookup looked at, present or not
(:mod:`lintlora.estimate.architecture`). Those places call :func:`note_input`; the paths and
their state (kind, size, modification time; or absent) are stored with the entry, and an
entry is used only when every one is unchanged.

**Never trusted.** An entry that is not valid JSON, has another format, names another key
than its file name, fails a type check, or whose inputs changed is ignored (and replaced on the
next store). Writes go to a temporary file renamed into place, so concurrent runs and worker
processes never see half an entry. Results holding an internal error (``LL999``) are not
stored, nor any result whose JSON form does not read back equal to it, nor a file whose content
changed while it was linted. A cache folder that cannot be created or written turns the cache
off for the run (:attr:`ResultCache.problem`); linting goes on.

Not cached: ``--show-setup`` runs (the extracted setups are not stored); files that cannot be
read. Old entries are not pruned: delete the folder to reclaim the space.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.discovery import SourceFile
    from lintlora.engine import FileResult
    from lintlora.settings import Settings

__all__ = [
    "FORMAT",
    "default_cache_dir",
    "note_input",
    "note_inputs",
    "recording",
    "path_state",
    "ResultCache",
    "encode_result",
    "decode_result",
]

FORMAT = 2
"""Version of the entry format (the ``v1`` folder and the ``format`` field)."""

_KEY_EXCLUDED_SETTINGS = frozenset({"exclude", "fail_on", "jobs", "cache_dir", "use_cache"})
"""Settings that do not change a file's findings: discovery's excludes, the exit threshold
(re-applied when an entry is read) and the run's own machinery."""

_INTERNAL_ERROR = "LL999"


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/lintlora`` when that variable is set (and absolute, as the XDG base
    directory specification requires), else ``~/.cache/lintlora``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lintlora")


# ---- inputs found while linting ------------------------------------------------------------

_recorder: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "lintlora_cache_inputs", default=None)


def note_input(path: "str | os.PathLike[str]") -> None:
    """Record that the result being computed depends on ``path`` (a file or folder, present
    or not). A no-op outside :func:`recording`; cheap enough to call on every lookup."""
    inputs = _recorder.get()
    if inputs is not None:
        inputs.append(os.path.abspath(os.fspath(path)))


def note_inputs(paths: Iterable[str]) -> None:
    """:func:`note_input` for each of ``paths`` (absolute, as :func:`recording` gives them)."""
    inputs = _recorder.get()
    if inputs is not None:
        inputs.extend(paths)


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the paths :func:`note_input` is given inside the block (absolute, in order,
    repeats kept). Nested recordings also pass their paths to the enclosing one, so a result
    memoised inside a run (the architecture of a model) can be replayed with
    :func:`note_inputs` for the next file that uses it."""
    outer = _recorder.get()
    inputs: list[str] = []
    token = _recorder.set(inputs)
    try:
        yield inputs
    finally:
        _recorder.reset(token)
        if outer is not None:
            outer.extend(inputs)


def path_state(path: str) -> list | None:
    """What an input's validity rests on: ``["f", size, mtime_ns]`` for a file,
    ``["d", mtime_ns]`` for a folder (its time changes when entries are added or removed),
    ``["o", mode]`` for anything else, ``None`` when it does not exist or cannot be seen."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    import stat

    if stat.S_ISREG(info.st_mode):
        return ["f", info.st_size, info.st_mtime_ns]
    if stat.S_ISDIR(info.st_mode):
        return ["d", info.st_mtime_ns]
    return ["o", stat.S_IFMT(info.st_mode)]


# ---- the run's fingerprint -------------------------------------------------------------------

def _package_state() -> list:
    """Size and time of every module and data file of the lintlora package, sorted."""
    root = os.path.dirname(os.path.abspath(__file__))
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                full = os.path.join(folder, name)
                out.append([os.path.relpath(full, root), path_state(full)])
    return out


def _library_state(name: str) -> list | None:
    """Where the installed library ``name`` is and the state of its ``__init__`` file (an
    upgrade rewrites it), found without importing it or :mod:`importlib.metadata` (each would
    cost a one-file run tens of milliseconds)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return [origin, path_state(origin)] if origin else None


def _rules_state(rules: Sequence[type]) -> list:
    """Each rule class by module and name; for rules outside lintlora, the state of their
    module's file (a plugin being edited invalidates like lintlora does)."""
    out = []
    for cls in rules:
        module = getattr(cls, "__module__", "") or ""
        entry = [getattr(cls, "code", ""), module, getattr(cls, "__qualname__", repr(cls))]
        if not module.startswith("lintlora."):
            file = getattr(sys.modules.get(module), "__file__", None)
            entry.append(path_state(file) if file else None)
        out.append(entry)
    return out


def _settings_state(settings: "Settings") -> dict:
    out = {}
    for f in fields(settings):
        if f.name in _KEY_EXCLUDED_SETTINGS:
            continue
        out[f.name] = getattr(settings, f.name)
    return out


def _canonical(document: Any) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=repr)


# ---- entries ---------------------------------------------------------------------------------

def _span_json(span: Any) -> list:
    return [span.path, span.line, span.column, span.end_line, span.end_column, span.cell]


def _finding_json(finding: Any) -> dict:
    estimate = finding.estimate
    return {
        "code": finding.code, "name": finding.name, "severity": finding.severity.value,
        "span": _span_json(finding.span), "message": finding.message, "fix": finding.fix,
        "estimate": None if estimate is None else {
            "peak_bytes": estimate.peak_bytes,
            "peak_after_fix_bytes": estimate.peak_after_fix_bytes,
            "gpu": estimate.gpu, "gpu_memory_bytes": estimate.gpu_memory_bytes,
            "gpu_memory_nominal": estimate.gpu_memory_nominal,
            "breakdown": [[k, v] for k, v in estimate.breakdown.items()],
            "model": estimate.model, "note": estimate.note,
        },
        "rests_on": list(finding.rests_on),
    }


def _error_json(error: Any) -> list:
    return [error.path, error.message, error.code, error.line, error.column]


def encode_result(result: "FileResult") -> dict:
    """The JSON form of a :class:`~lintlora.engine.FileResult` without its setups.

    Raises:
        TypeError, AttributeError: a value that has no JSON form here (a plugin's odd finding).
    """
    return {
        "path": result.path, "kind": result.kind, "linted": result.linted,
        "findings": [_finding_json(f) for f in result.findings],
        "errors": [_error_json(e) for e in result.errors],
        "notices": [_error_json(e) for e in result.notices],
        "cell_lines": [[cell, list(lines)] for cell, lines in result.cell_lines.items()],
    }


class _Invalid(Exception):
    """An entry that fails a check."""


def _need(value: Any, *types: type) -> Any:
    # bool is an int: only accept it where bool is asked for
    if isinstance(value, bool) and bool not in types:
        raise _Invalid(repr(value))
    if not isinstance(value, types):
        raise _Invalid(repr(value))
    return value


def _opt_int(value: Any) -> int | None:
    return None if value is None else _need(value, int)


def _opt_str(value: Any) -> str | None:
    return None if value is None else _need(value, str)


def _span_of(data: Any) -> Any:
    from lintlora.training_setup import Span

    path, line, column, end_line, end_column, cell = _need(data, list)
    return Span(_need(path, str), _need(line, int), _need(column, int), _opt_int(end_line),
                _opt_int(end_column), _opt_int(cell))


def _finding_of(data: Any) -> Any:
    from lintlora.findings import Finding, MemoryFigures, Severity

    _need(data, dict)
    estimate = data["estimate"]
    figures = None
    if estimate is not None:
        _need(estimate, dict)
        breakdown = {}
        for item in _need(estimate["breakdown"], list):
            key, value = _need(item, list)
            breakdown[_need(key, str)] = _need(value, int, float)
        figures = MemoryFigures(
            peak_bytes=_opt_int(estimate["peak_bytes"]),
            peak_after_fix_bytes=_opt_int(estimate["peak_after_fix_bytes"]),
            gpu=_opt_str(estimate["gpu"]), gpu_memory_bytes=_opt_int(estimate["gpu_memory_bytes"]),
            gpu_memory_nominal=_need(estimate["gpu_memory_nominal"], bool),
            breakdown=breakdown, model=_opt_str(estimate["model"]), note=_opt_str(estimate["note"]))
    return Finding(
        code=_need(data["code"], str), name=_need(data["name"], str),
        severity=Severity(_need(data["severity"], str)), span=_span_of(data["span"]),
        message=_need(data["message"], str), fix=_opt_str(data["fix"]), estimate=figures,
        rests_on=tuple(_need(x, str) for x in _need(data["rests_on"], list)))


def _error_of(data: Any) -> Any:
    from lintlora.findings import FileError

    path, message, code, line, column = _need(data, list)
    return FileError(_need(path, str), _need(message, str), _need(code, str), _opt_int(line),
                     _opt_int(column))


def decode_result(data: Any, fail_on: Any = None) -> "FileResult":
    """Read back :func:`encode_result`'s form, checking every type.

    Raises:
        ValueError: the data is not a valid entry (its message says where it failed).
    """
    from lintlora.engine import FileResult

    try:
        _need(data, dict)
        result = FileResult(path=_need(data["path"], str), kind=_opt_str(data["kind"]),
                            linted=_need(data["linted"], bool))
        result.findings = [_finding_of(f) for f in _need(data["findings"], list)]
        result.errors = [_error_of(e) for e in _need(data["errors"], list)]
        result.notices = [_error_of(e) for e in _need(data["notices"], list)]
        for item in _need(data["cell_lines"], list):
            cell, lines = _need(item, list)
            result.cell_lines[_need(cell, int)] = tuple(_need(n, int) for n in _need(lines, list))
    except (_Invalid, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a lintlora cache entry ({type(exc).__name__}: {exc})"[:200]) from None
    if fail_on is not None:
        result.fail_on = fail_on
    return result


def _same(a: "FileResult", b: "FileResult") -> bool:
    return (a.path, a.kind, a.linted, a.findings, a.errors, a.notices, a.cell_lines) == \
           (b.path, b.kind, b.linted, b.findings, b.errors, b.notices, b.cell_lines)


class ResultCache:
    """The cache of one run.

    Args:
        directory: the cache folder (created when missing); its ``v1`` subfolder holds entries.
        rules: the rule classes of the run (part of every key).

    Attributes:
        problem: why the cache is off for this run (the folder cannot be created or written),
            or ``None``.
        hits, misses, stored, ignored: counters (``ignored``: entries rejected as invalid or
            stale).
    """

    def __init__(self, directory: str, rules: Sequence[type]) -> None:
        self.directory = os.path.abspath(os.path.expanduser(directory))
        self.root = os.path.join(self.directory, f"v{FORMAT}")
        self.problem: str | None = None
        self.hits = self.misses = self.stored = self.ignored = 0
        try:
            os.makedirs(self.root, exist_ok=True)
            tag = os.path.join(self.directory, "CACHEDIR.TAG")
            if not os.path.exists(tag):
                with open(tag, "w", encoding="ascii") as handle:
                    handle.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                                 "# This file marks a cache folder of lintlora (safe to delete).\n")
            if not os.access(self.root, os.W_OK):
                raise PermissionError("not writable")
        except OSError as exc:
            self.problem = f"cache folder {self.directory} is not usable ({exc.strerror or exc}); " \
                           "running without the cache"
        import lintlora

        self._run = _canonical({
            "format": FORMAT,
            "lintlora": lintlora.__version__,
            "package": _package_state(),
            "rules": _rules_state(rules),
            "python": list(sys.version_info[:3]) + [sys.implementation.name],
            "libcst": _library_state("libcst"),
            "pyyaml": _library_state("yaml"),
            "cwd": os.getcwd(),
            "env": {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HOME", "HOME")},
        })
        self._settings: dict[int, tuple[Any, str]] = {}

    @property
    def enabled(self) -> bool:
        """Whether entries are read and written in this run."""
        return self.problem is None

    # -- keys ----------------------------------------------------------------------------------
    def _settings_key(self, settings: "Settings") -> str:
        entry = self._settings.get(id(settings))
        if entry is None or entry[0] is not settings:
            entry = (settings, _canonical(_settings_state(settings)))
            self._settings[id(settings)] = entry
        return entry[1]

    def key(self, source: "SourceFile", settings: "Settings", digest: str) -> str:
        """The key of ``source`` with content SHA-256 ``digest`` under ``settings``."""
        document = "\n".join((
            self._run, self._settings_key(settings),
            _canonical([source.path, os.path.abspath(source.path), source.kind, source.explicit,
                        digest])))
        from hashlib import sha256  # here, not at the top: a run without the cache skips it

        return sha256(document.encode("utf-8", "surrogatepass")).hexdigest()

    @staticmethod
    def digest(path: str, max_bytes: int) -> str | None:
        """SHA-256 of the file's bytes, or ``None`` when it cannot be read or is larger than
        ``max_bytes`` (such files are linted without the cache)."""
        import stat

        try:
            # O_NONBLOCK: a named pipe must not block the run (only regular files are read)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
            with open(fd, "rb", buffering=0) as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                    return None
                data = handle.read(max_bytes + 1)
        except (OSError, ValueError):
            return None
        if len(data) > max_bytes:
            return None
        from hashlib import sha256

        return sha256(data).hexdigest()

    def _entry_path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".json")

    # -- reading -------------------------------------------------------------------------------
    def load(self, key: str, fail_on: Any = None) -> "FileResult | None":
        """The cached result for ``key``, or ``None`` (missing, invalid or stale)."""
        if not self.enabled:
            return None
        try:
            with open(self._entry_path(key), "rb") as handle:
                raw = handle.read()
        except OSError:
            self.misses += 1
            return None
        try:
            data = json.loads(raw)
            _need(data, dict)
            if data.get("format") != FORMAT or data.get("key") != key:
                raise _Invalid("format or key")
            for item in _need(data["inputs"], list):
                path, state = _need(item, list)
                if path_state(_need(path, str)) != state:
                    raise _Invalid("an input changed")
            result = decode_result(data["result"], fail_on)
        except (ValueError, _Invalid, KeyError, TypeError, RecursionError):
            self.ignored += 1
            self.misses += 1
            return None
        self.hits += 1
        return result

    # -- writing -------------------------------------------------------------------------------
    def store(self, key: str, result: "FileResult", inputs: Sequence[str]) -> bool:
        """Write ``result`` under ``key`` with the state of ``inputs``; ``False`` when it is not
        cacheable (see the module docstring) or cannot be written."""
        if not self.enabled or any(e.code == _INTERNAL_ERROR for e in result.errors):
            return False
        try:
            encoded = encode_result(result)
            if not _same(decode_result(json.loads(json.dumps(encoded))), result):
                return False
            unique = sorted(set(inputs))
            document = {"format": FORMAT, "key": key,
                        "inputs": [[p, path_state(p)] for p in unique], "result": encoded}
            # ASCII: a file name that is not UTF-8 (a lone surrogate) is written as its \udcff
            # escape, which json.loads gives back; as UTF-8 it could not be written at all
            text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
        except (TypeError, ValueError, AttributeError, RecursionError):
            return False
        target = self._entry_path(key)
        tmp = f"{target}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        self.stored += 1
        return True
