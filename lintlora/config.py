"""Configuration: ``[tool.lintlora]`` in ``pyproject.toml``, merged with command-line flags.

The configuration of a file is the nearest ``pyproject.toml`` holding a ``[tool.lintlora]``
table, searched from the file's folder upward (a ``pyproject.toml`` without that table is
passed over, so a package's own ``pyproject.toml`` does not hide the repository's), up to the
top of the file's repository: a ``pyproject.toml`` above it (``/tmp``, ``$HOME``) never
applies (:func:`search_boundary`). Each file is read bounded (:data:`PYPROJECT_MAX_BYTES`) and
parsed once per run. ``--config``
names one file for every linted path; ``--no-config`` ignores them all. Flags given on the
command line override the file key by key; ``--extend-select`` adds to the file's
``extend-select``.

Keys (kebab-case, as in the file)::

    [tool.lintlora]
    select = ["LL"]                 # codes or prefixes; default: every registered rule
    ignore = ["LL004"]
    extend-select = ["EX001"]
    per-file-ignores = { "tests/*" = ["LL006"] }
    exclude = ["legacy/", "*.ipynb"]
    fail-on = "warning"             # info | warning | error
    gpu = "rtx3090"
    gpu-memory = "24GiB"            # or a number of bytes; at most 1 PiB
    model = "meta-llama/Llama-2-7b-hf"  # used where a script's model cannot be resolved
    model-config = "configs/config.json"  # likewise (it must exist); --model-config overrides
    cpus = 16                       # 1 to 8192
    max-file-size = "5MiB"          # or a number of bytes; at most 1 GiB
    versions = { transformers = "4.46", bitsandbytes = "0.41.1" }  # releases the run uses
    fixable = ["LL"]                # rules whose autofixes --fix applies (default: all)
    unfixable = ["LL003"]           # rules whose autofixes it never applies

Paths and glob patterns in the file are relative to the file's folder. Unknown keys, values of
the wrong type or out of range (the ranges and why: :mod:`lintlora.limits`), unknown rule codes
and a ``model-config`` that does not exist raise :class:`ConfigError` naming the key and the
file.

``versions`` states library releases (the packages of
:data:`lintlora.library_versions.KNOWN_PACKAGES`, PEP 440 versions); they override the pins
read from the project's files, and ``--assume-version`` overrides them package by package
(``Settings.assume_versions``).

``model`` and ``model-config`` are defaults: they apply only where a script's model cannot be
resolved (``Settings.default_model`` / ``Settings.default_model_config``); ``--model`` and
``--model-config`` on the command line override what a script names.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from lintlora.findings import Severity
from lintlora.limits import (MAX_CPUS, MAX_FILE_SIZE_LIMIT, MAX_GPU_MEMORY_BYTES,
                             MAX_NUMBER_CHARS, format_bytes)
from lintlora.settings import Settings, parse_memory_size

__all__ = [
    "ConfigError",
    "ConfigFile",
    "CONFIG_KEYS",
    "find_config_file",
    "search_boundary",
    "PYPROJECT_MAX_BYTES",
    "load_config_file",
    "parse_codes",
    "validate_codes",
    "parse_file_size",
    "anchor_pattern",
    "parse_versions_table",
    "SettingsResolver",
]

CONFIG_KEYS = (
    "select", "ignore", "extend-select", "per-file-ignores", "exclude", "fail-on", "gpu",
    "gpu-memory", "model", "model-config", "cpus", "max-file-size", "versions", "fixable",
    "unfixable",
)
"""Every key ``[tool.lintlora]`` accepts."""


class ConfigError(Exception):
    """A configuration problem; the message names the file and the key. Exit status 2."""


@dataclass(frozen=True)
class ConfigFile:
    """One parsed and validated ``[tool.lintlora]`` table.

    Attributes:
        path: the TOML file.
        root: its folder; relative paths and patterns in it are relative to this folder.
        values: ``Settings`` field name -> value, only for keys the file sets, already
            converted (codes as tuples, sizes in bytes, ``fail_on`` as a :class:`Severity`).
    """

    path: str
    root: str
    values: Mapping[str, Any]


PYPROJECT_MAX_BYTES = 1 * 2**20
"""The largest ``pyproject.toml`` lintlora reads: 1 MiB. Real ones are a few KB (large projects'
stay under 100 KB); Python's ``tomllib`` parses roughly 10 MB/s, so one file costs at most a
tenth of a second. A larger file is a :class:`ConfigError` naming it (not read whole)."""


def _load_toml(path: str) -> dict:
    """The parsed TOML of ``path``, read with :func:`lintlora.safeio.read_bounded` (a regular
    file, at most :data:`PYPROJECT_MAX_BYTES`).

    Raises:
        ConfigError: unreadable, not a regular file, too large, not UTF-8, or invalid TOML;
            the message names the file.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    from lintlora.safeio import UnsafeFileError, read_bounded

    try:
        raw = read_bounded(path, PYPROJECT_MAX_BYTES)
    except UnsafeFileError as exc:
        raise ConfigError(f"{path}: not read: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                          f"{exc.start}); TOML files are UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply to parse") from None


def _lintlora_table(data: dict) -> dict | None:
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return None
    table = tool.get("lintlora")
    return table if isinstance(table, dict) else None


def search_boundary(start: str) -> str | None:
    """The highest folder :func:`find_config_file` looks in for ``start``: the top of the
    repository ``start`` belongs to (the nearest folder above holding ``.git``, found without
    git), so a ``pyproject.toml`` in a folder above the repository (``/tmp``, ``$HOME``) never
    applies. ``None`` outside a repository: then every folder up to the file-system root is
    searched, except the file-system root itself and the home folder (and the command line
    notes a configuration found that way above the current folder)."""
    from lintlora.safeio import project_root

    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    root = project_root(folder, fallback=os.sep)
    return None if root == os.path.realpath(os.sep) else root


def find_config_file(start: str, *, loaded: dict[str, dict] | None = None) -> str | None:
    """The nearest ``pyproject.toml`` with a ``[tool.lintlora]`` table at or above ``start``,
    up to :func:`search_boundary` (the repository's top).

    ``start`` is a file or a folder. Returns ``None`` when there is none. The file-system
    root and the home folder are never searched (:func:`lintlora.safeio.too_wide_folders`).
    A ``pyproject.toml`` that is not valid TOML, or (in a repository) a link to a file outside
    it, stops the search with a :class:`ConfigError` (silently skipping it could apply the
    wrong settings). ``loaded`` (path -> parsed TOML) is a cache the caller keeps for a run,
    so each file is read and parsed once however many folders it serves.
    """
    from lintlora.safeio import is_within, too_wide_folders

    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    boundary = search_boundary(folder)
    never = too_wide_folders()
    for _ in range(4096):  # bounded: a path has far fewer components
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.realpath(folder) not in never and os.path.isfile(candidate):
            if boundary is not None and not is_within(candidate, boundary):
                raise ConfigError(f"{candidate}: a link to a file outside the repository "
                                  f"({boundary}): not read (--config names a file on purpose)")
            if loaded is None:
                data = _load_toml(candidate)
            else:
                if candidate not in loaded:
                    loaded[candidate] = _load_toml(candidate)
                data = loaded[candidate]
            if _lintlora_table(data) is not None:
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder or (boundary is not None
                                and os.path.realpath(folder) == boundary):
            return None
        folder = parent
    return None


def parse_codes(value: Any, where: str) -> tuple[str, ...]:
    """Codes from a list of strings or a comma/space-separated string, upper-cased.

    Raises:
        ConfigError: the value is neither (``where`` names the key and file).
    """
    if isinstance(value, str):
        items = value.replace(",", " ").split()
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [part for v in value for part in v.replace(",", " ").split()]
    else:
        raise ConfigError(f"{where}: expected a list of rule codes, got {value!r}")
    return tuple(item.strip().upper() for item in items if item.strip())


def validate_codes(codes: Iterable[str], known: Iterable[str], where: str) -> None:
    """Check each code or prefix names at least one registered rule (``ALL`` names all).

    Raises:
        ConfigError: naming the first unknown code, ``where`` it was given, and close matches.
    """
    known = sorted(set(known))
    for code in codes:
        if code == "ALL" or any(k.startswith(code) for k in known):
            continue
        from difflib import get_close_matches  # only on an error

        close = get_close_matches(code, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"{where}: unknown rule code {code!r}{hint}; "
                          f"see `lintlora rules` for the codes")


def parse_file_size(value: Any) -> int:
    """A file-size limit: a number of bytes (``5242880``) or a size with a unit (``5MiB``).

    Unlike ``--gpu-memory``, a bare number is always bytes here. At most
    :data:`lintlora.limits.MAX_FILE_SIZE_LIMIT` (1 GiB).

    Raises:
        ValueError: not a positive size, or above the limit.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a file size: {value!r}")
    if isinstance(value, str) and len(value) > MAX_NUMBER_CHARS:
        raise ValueError(f"not a file size: {value[:24]!r}... is {len(value):,} characters long "
                         f"(examples: 5MiB, 1048576)")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        size = int(value.strip())
    elif isinstance(value, str):
        size = parse_memory_size(value, maximum=MAX_FILE_SIZE_LIMIT)
    else:
        raise ValueError(f"not a file size: {value!r} (examples: 5MiB, 1048576)")
    if size <= 0:
        raise ValueError(f"file size must be positive: {value!r}")
    if size > MAX_FILE_SIZE_LIMIT:
        raise ValueError(f"{_short(value)} is more than {format_bytes(MAX_FILE_SIZE_LIMIT)}, the "
                         f"largest file size limit accepted")
    return size


def _short(value: Any) -> str:
    """``repr(value)`` for a message, at most about 40 characters (a 400-digit number is cut)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text):,} characters)"


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _patterns(value: Any, where: str, root: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: expected a list of glob patterns, got {value!r}")
    return tuple(anchor_pattern(v, root) for v in value)


def anchor_pattern(pattern: str, root: str) -> str:
    """Make a pattern with ``/`` absolute (relative to ``root``); leave bare names as they are."""
    if "/" not in pattern.rstrip("/") or pattern.startswith("/"):
        return pattern
    if pattern.startswith("./"):
        pattern = pattern[2:]
    return os.path.abspath(root).replace(os.sep, "/").rstrip("/") + "/" + pattern


def _convert(key: str, value: Any, where: str, root: str, known_codes: Iterable[str] | None,
             confine_to: str | None = None) -> tuple[str, Any]:
    """One ``[tool.lintlora]`` entry -> (Settings field name, converted value); a
    ``model-config`` must lie in ``confine_to`` when given."""
    if key in ("select", "ignore", "extend-select", "fixable", "unfixable"):
        codes = parse_codes(value, where)
        if known_codes is not None:
            validate_codes(codes, known_codes, where)
        return key.replace("-", "_"), codes
    if key == "per-file-ignores":
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table of glob pattern = [codes], got {value!r}")
        entries = []
        for pattern, codes_value in value.items():
            codes = parse_codes(codes_value, f"{where}.{pattern!r}")
            if known_codes is not None:
                validate_codes(codes, known_codes, f"{where} (pattern {pattern!r})")
            entries.append((anchor_pattern(pattern, root), codes))
        return "per_file_ignores", tuple(entries)
    if key == "exclude":
        return "exclude", _patterns(value, where, root)
    if key == "fail-on":
        try:
            return "fail_on", Severity(_string(value, where).lower())
        except ValueError:
            raise ConfigError(f"{where}: expected one of info, warning, error; got {value!r}") from None
    if key in ("gpu", "model"):
        return ("gpu" if key == "gpu" else "default_model"), _string(value, where)
    if key == "model-config":
        given = _string(value, where)
        path = os.path.normpath(os.path.join(root, given if confine_to else
                                             os.path.expanduser(given)))
        if confine_to is not None:
            from lintlora.safeio import is_within

            if not is_within(path, confine_to):
                raise ConfigError(f"{where}: {given!r} not followed: outside the project "
                                  f"({confine_to}); a configuration file found in the "
                                  f"repository names files inside it (use --model-config for "
                                  f"another one)")
        if not os.path.exists(path):
            raise ConfigError(f"{where}: no such file or folder: {path} (the path is relative "
                              f"to the folder of the configuration file)")
        # a default, like `model`: it describes the model where the script's is unresolved
        return "default_model_config", path
    if key == "gpu-memory":
        try:
            if isinstance(value, int) and not isinstance(value, bool):
                if value <= 0:
                    raise ValueError(f"memory size must be positive: {_short(value)}")
                if value > MAX_GPU_MEMORY_BYTES:
                    raise ValueError(f"{_short(value)} bytes is more than "
                                     f"{format_bytes(MAX_GPU_MEMORY_BYTES)}, the largest size "
                                     f"accepted")
                return "gpu_memory_bytes", value
            return "gpu_memory_bytes", parse_memory_size(_string(value, where))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if key == "cpus":
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_CPUS:
            raise ConfigError(f"{where}: expected a positive integer, at most {MAX_CPUS:,} "
                              f"(Linux's largest CPU count), got {_short(value)}")
        return "cpus", value
    if key == "max-file-size":
        try:
            return "max_file_bytes", parse_file_size(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if key == "versions":
        return "assume_versions", parse_versions_table(value, where)
    raise AssertionError(key)  # pragma: no cover - keys are checked before


MAX_VERSIONS = 32
"""Entries of ``[tool.lintlora] versions`` accepted (there are 15 known packages)."""


def parse_versions_table(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """``{transformers = "4.46"}`` -> ``(("transformers", "4.46"),)``, each entry checked by
    :func:`lintlora.library_versions.parse_assume_version` (a known package, a PEP 440
    version).

    Raises:
        ConfigError: not a table of strings, too many entries, an unknown package or a version
            that is not one (``where`` names the file and key).
    """
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of package = \"version\" "
                          f"(versions = {{ transformers = \"4.46\" }}), got {_short(value)}")
    if len(value) > MAX_VERSIONS:
        raise ConfigError(f"{where}: {len(value)} entries, at most {MAX_VERSIONS}")
    from lintlora.library_versions import parse_assume_version

    out: dict[str, str] = {}
    for package, version in value.items():
        if not isinstance(version, str):
            raise ConfigError(f"{where}: {package} = {_short(version)}: expected the version as a "
                              f"string ({package} = \"{_short(version)}\")")
        try:
            pkg, ver = parse_assume_version(f"{package}={version}")
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        out[pkg] = ver
    return tuple(out.items())


def load_config_file(path: str, known_codes: Iterable[str] | None = None, *,
                     data: dict | None = None, trusted: bool = False) -> ConfigFile:
    """Read and validate the ``[tool.lintlora]`` table of ``path``.

    Args:
        known_codes: registered rule codes; when given, codes in ``select``/``ignore``/
            ``extend-select``/``per-file-ignores`` must name at least one of them.
        data: the file's parsed TOML when the caller has it (read once per run).
        trusted: the user named the file (``--config``): its ``model-config`` may name any
            file. Otherwise, for a file inside a repository (it comes with the repository:
            in CI, from the pull request), ``model-config`` must lie in that repository
            (the nearest folder above holding ``.git``, :func:`lintlora.safeio.project_root`).

    Raises:
        ConfigError: unreadable or invalid TOML, no ``[tool.lintlora]`` table, an unknown key,
            a value of the wrong type, an unknown rule code. The message names file and key.
    """
    table = _lintlora_table(_load_toml(path) if data is None else data)
    if table is None:
        raise ConfigError(f"{path}: no [tool.lintlora] table")
    root = os.path.dirname(os.path.abspath(path))
    confine_to = None
    if not trusted:
        from lintlora.safeio import project_root

        top = project_root(root, fallback=os.sep)
        confine_to = None if top == os.path.realpath(os.sep) else top
    known = list(known_codes) if known_codes is not None else None
    values: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}: [tool.lintlora] {key}"
        if key not in CONFIG_KEYS:
            from difflib import get_close_matches

            close = get_close_matches(key.replace("_", "-"), CONFIG_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.lintlora]{hint}")
        field_name, converted = _convert(key, value, where, root, known, confine_to)
        values[field_name] = converted
    return ConfigFile(path=path, root=root, values=values)


class SettingsResolver:
    """Settings for each linted path: its configuration file merged with command-line flags.

    Args:
        cli_values: ``Settings`` field name -> value for the flags the user gave (only those).
        config_path: ``--config``: use this file for every path.
        use_config: ``False`` for ``--no-config``.
        known_codes: registered rule codes, to validate codes in configuration files.
        on_config: called with each :class:`ConfigFile` the first time it is used (the CLI
            validates its GPU name through it).

    ``for_path`` caches per folder, so a walk over many files reads each ``pyproject.toml`` once.
    Raises :class:`ConfigError` from ``for_path`` (and from the constructor for ``--config``).
    """

    def __init__(self, cli_values: Mapping[str, Any] | None = None, *,
                 config_path: str | None = None, use_config: bool = True,
                 known_codes: Iterable[str] | None = None,
                 on_config: Callable[[ConfigFile], None] | None = None) -> None:
        self.cli_values = dict(cli_values or {})
        self.use_config = use_config
        self.known_codes = list(known_codes) if known_codes is not None else None
        self._on_config = on_config
        self._configs: dict[str, ConfigFile] = {}
        self._by_folder: dict[str, Settings] = {}
        self._fixed: ConfigFile | None = None
        self._toml: dict[str, dict] = {}  # path -> parsed TOML: each file parsed once a run
        if config_path is not None and use_config:
            self._fixed = self._load(config_path, trusted=True)

    def _load(self, path: str, trusted: bool = False) -> ConfigFile:
        key = os.path.abspath(path)
        if key not in self._configs:
            config = load_config_file(path, self.known_codes, data=self._toml.get(path),
                                      trusted=trusted)
            if self._on_config is not None:
                self._on_config(config)
            self._configs[key] = config
        return self._configs[key]

    @property
    def fixed(self) -> ConfigFile | None:
        """The ``--config`` file, applied to every path (``None`` when not given)."""
        return self._fixed

    @property
    def configs(self) -> list[ConfigFile]:
        """The configuration files used so far."""
        return list(self._configs.values())

    def config_for(self, path: str) -> ConfigFile | None:
        """The configuration file that applies to ``path`` (``None``: defaults only)."""
        if not self.use_config:
            return None
        if self._fixed is not None:
            return self._fixed
        found = find_config_file(path, loaded=self._toml)
        return self._load(found) if found else None

    def merge(self, config: ConfigFile | None) -> Settings:
        """``Settings`` from a configuration file's values overridden by the flags."""
        values: dict[str, Any] = dict(config.values) if config else {}
        for name, value in self.cli_values.items():
            if name == "extend_select":
                values[name] = tuple(values.get(name, ())) + tuple(value)
            elif name == "exclude":
                values[name] = tuple(values.get(name, ())) + tuple(value)
            elif name == "assume_versions":  # per package: the flag wins
                merged = dict(values.get(name, ()))
                merged.update(dict(value))
                values[name] = tuple(merged.items())
                values["version_flags"] = tuple(p for p, _v in value)
            else:
                values[name] = value
        valid = {f.name for f in dataclasses.fields(Settings)}
        unknown = set(values) - valid
        if unknown:  # pragma: no cover - a programming error in the CLI
            raise TypeError(f"not Settings fields: {sorted(unknown)}")
        return Settings(**values)

    def for_path(self, path: str) -> Settings:
        """The settings that apply to ``path`` (a file or a folder)."""
        absolute = os.path.abspath(path)
        folder = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        if folder not in self._by_folder:
            self._by_folder[folder] = self.merge(self.config_for(folder))
        return self._by_folder[folder]
