"""The results cache: an unchanged file is not parsed again (issue 8), and nothing found in
the cache folder can change a result (issue 12).

One JSON file per linted file holds what linting it produced (its findings, its ``LL998``
input diagnostics and notices, the notebook line map): never pickles, never anything that is
executed or imported when read back.

**Where.** ``--cache-dir DIR``, else ``$XDG_CACHE_HOME/lintlora``, else ``~/.cache/lintlora``
(the XDG base-directory layout), under a ``v<FORMAT>`` folder (the entry format, :data:`FORMAT`);
entries are ``v3/<2 hex>/<sha256>.json``. A ``CACHEDIR.TAG`` marks the folder as a cache for
backup tools (https://bford.info/cachedir/). :mod:`lintlora.cache_folder` creates and writes
all of it without following links.

**The key** (a SHA-256 over a canonical JSON document) holds everything a result depends on
that is known before linting, each by content where it can change under a checkout:

- the file: the SHA-256 of its bytes (the very bytes then linted: a file that changes while
  it is linted is not stored), its path as given and as an absolute path (findings carry the
  path), its project root (:func:`lintlora.safeio.project_root`: files a script names are
  read only inside it), its kind and whether it was named explicitly;
- the settings that change results (selection, per-file ignores, GPU, model, ``--params``,
  ``--cpus``, ``--tokens``, the size limit; not ``exclude``, ``fail_on``, jobs or the cache
  itself);
- lintlora: its version *and* the SHA-256 of every module and data file of the package (so a
  development tree invalidates on every edit), the rule classes (plugins included, with the
  SHA-256 of their module files), the Python version, and the installed LibCST and PyYAML
  (their ``__init__`` files' size and time: an upgrade rewrites them; the environment is the
  user's, not the pull request's);
- the environment the model lookup reads: the working directory, ``HF_HUB_CACHE``,
  ``HF_HOME`` and ``HOME``.

- the run: the launches that start the file (:class:`lintlora.extract.launch_model.Launch`,
  by value: a new or edited launch command is another key).

**Inputs found while linting.** A result can also depend on other files: a JSON/YAML file a
script names by literal path (:mod:`lintlora.extract.pyargs`), the launch file and the configs
a run names, a local ``config.json`` or a Hugging Face cache folder the architecture lookup
looked at, present or not (:mod:`lintlora.estimate.architecture`). Each stage returns them as
data (``TrainingSetup.inputs``, ``ArchitectureLookup.inputs``, collected by the context and the
engine into :attr:`lintlora.file_result.FileResult.inputs`; no global recorder); each path is
stored with its state (:func:`input_state`: a file's resolved path and the SHA-256 of its
bytes, a folder's resolved path and sorted names, or absent), and an entry is used only when
every one is unchanged. A file is never keyed by size and time: a same-size edit with its time
put back is seen. States are taken once per run (the first time an entry or a result needs
one); a file larger than :data:`MAX_INPUT_BYTES` or a folder of more than
:data:`MAX_FOLDER_NAMES` names has no state, and a result depending on it is not stored.

**Authentication: an HMAC, and what it does not do.** Each entry starts with an
HMAC-SHA256 (:mod:`hmac`) of its JSON text under a random key kept in the format folder
(:data:`lintlora.cache_folder.SECRET_NAME`, 0600, replaced when it is not a private regular
file of this user: see :mod:`lintlora.cache_folder`). It is checked before the text is parsed.
It rejects any entry not written by a run holding this folder's key: entries copied from
another cache folder, planted by another user or a tool in a shared folder, or committed by a
pull request into a cache folder kept in the repository (a checkout cannot produce the private
key file), and corruption. An HMAC is chosen over a content hash of the result, which anyone
can recompute and so detects only corruption; it costs the same (one SHA-256 pass over an
entry already read). It does **not** protect against whoever can read the key: this user's own
processes, or a whole cache folder restored in CI (``actions/cache`` restores the key with the
entries). For that case the guarantee comes from the key and the inputs: an entry restored from
another branch was computed from exactly the bytes, settings, lintlora and inputs that match
its key and states, so it is the right result or a miss. And every entry, signed or not, is
checked in full when read (:mod:`lintlora.cache_entry`: the file's own paths, finite numbers in
range, bounded strings, known codes), so even a forged one can only claim findings for that
file, never crash a run, point elsewhere or make a report invalid. Keep cache folders writable
only by runs you trust (in CI: do not save caches from pull-request jobs for the base branch).

**Never trusted.** An entry that is not a regular file (read with
:func:`lintlora.safeio.read_bounded` without following links, ``O_NONBLOCK``: a link to
``/dev/zero`` or a named pipe is refused at once), larger than :data:`MAX_ENTRY_BYTES`, not
ASCII, badly signed, not valid JSON, of another format, naming another key than its file
name, failing a check, or whose inputs changed is a miss (and replaced on the next store);
never an error. Writes go to a temporary file of random name renamed into place, so
concurrent runs and worker processes never see half an entry. Results holding an internal
error (``LL999``) are not stored, nor any result whose JSON form does not read back equal to
it (so whatever is stored passes the checks), nor a result larger than the entry cap. A cache
folder that cannot be created or written, or whose key cannot be made private, turns the cache
off for the run (:attr:`ResultCache.problem`); linting goes on.

Not cached: files that cannot be read. ``--show-setup`` runs write entries but do not read
them (entries hold no setups). Old entries and old format folders are not pruned: delete the
folder to reclaim the space.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Sequence

from lintlora.cache_entry import decode_result, encode_result
from lintlora.cache_folder import SECRET_NAME

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.cache_folder import CacheFolder
    from lintlora.discovery import SourceFile
    from lintlora.file_result import FileResult
    from lintlora.settings import Settings

__all__ = [
    "FORMAT",
    "MAX_ENTRY_BYTES",
    "MAX_INPUT_BYTES",
    "MAX_FOLDER_NAMES",
    "SECRET_NAME",
    "default_cache_dir",
    "input_state",
    "content_digest",
    "ResultCache",
    "encode_result",
    "decode_result",
]

FORMAT = 5
"""Version of the entry format (the ``v5`` folder and the ``format`` field). 3: signed
entries, inputs by content; 4: findings' related locations, spans in the run's other files
(a launch line); 5: findings' autofixes (issue 17)."""

MAX_ENTRY_BYTES = 8 * 2**20
"""Largest entry read or written, in bytes (8 MiB). Real entries are tiny (the largest over the
600-file benchmark corpus: 5.5 KB; the median 380 bytes); the cap still leaves room for a file
under the default 5 MiB size limit with thousands of findings, and bounds what one entry can
cost to read and parse (a few tens of milliseconds). A larger result is simply not cached."""

MAX_INPUT_BYTES = 64 * 2**20
"""Largest input file hashed for its state, in bytes (64 MiB: about 50 ms of SHA-256, once per
run). The files a result reads are configs far smaller; a result depending on a larger one is
not stored."""

MAX_FOLDER_NAMES = 4096
"""Most names listed for a folder input's state (the Hugging Face cache's snapshots of one
model, a model folder); a result depending on a larger folder is not stored."""

_KEY_EXCLUDED_SETTINGS = frozenset({"exclude", "fail_on", "jobs", "cache_dir", "use_cache"})
"""Settings that do not change a file's findings: discovery's excludes, the exit threshold
(re-applied when an entry is read) and the run's own machinery."""

_INTERNAL_ERROR = "LL999"
_MAC_LENGTH = 64  # hex digits of an HMAC-SHA256


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/lintlora`` when that variable is set (and absolute, as the XDG base
    directory specification requires), else ``~/.cache/lintlora``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lintlora")


def content_digest(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex: how files are keyed."""
    from hashlib import sha256  # here, not at the top: a run without the cache skips it

    return sha256(data).hexdigest()


# ---- inputs found while linting ------------------------------------------------------------

class _NoState(Exception):
    """An input whose state cannot be taken (too large, too many names, changing under us)."""


def input_state(path: str) -> list | None:
    """What an input's validity rests on, by content: ``["f", resolved path, sha256]`` for a
    regular file (links followed, as the readers follow them), ``["d", resolved path, sha256 of
    the sorted names]`` for a folder, ``["o", file type]`` for anything else (never opened),
    ``["u", errno]`` for a file that cannot be read, ``None`` when nothing is there.

    Raises:
        _NoState: a file above :data:`MAX_INPUT_BYTES`, a folder of more than
            :data:`MAX_FOLDER_NAMES` names, or a file that stops being regular as it is read.
    """
    from lintlora.safeio import UnsafeFileError, read_bounded

    if "*" in os.path.basename(path):
        return _pattern_state(path)
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(info.st_mode):
        try:
            data = read_bounded(path, MAX_INPUT_BYTES)
        except (UnsafeFileError, IsADirectoryError):
            raise _NoState(path) from None
        except OSError as exc:
            return ["u", exc.errno or 0]
        return ["f", os.path.realpath(path), content_digest(data)]
    if stat.S_ISDIR(info.st_mode):
        names = []
        try:
            with os.scandir(path) as listing:
                for entry in listing:
                    names.append(entry.name)
                    if len(names) > MAX_FOLDER_NAMES:
                        raise _NoState(path)
        except OSError as exc:
            return ["u", exc.errno or 0]
        joined = b"\0".join(sorted(os.fsencode(n) for n in names))
        return ["d", os.path.realpath(path), content_digest(joined)]
    return ["o", stat.S_IFMT(info.st_mode)]


def _pattern_state(path: str) -> list | None:
    """The state of a pattern input (``/proj/requirements*.txt``: a stage looked for the files
    of a folder whose names match, case-insensitively): ``["g", resolved folder, pattern, sha256
    of the sorted matching names]``, ``None`` when the folder is not there. Another file added
    to the folder leaves it unchanged; a matching one added or removed changes it.

    Raises:
        _NoState: a folder of more than :data:`MAX_FOLDER_NAMES` names.
    """
    from lintlora.safeio import matching_names

    folder, pattern = os.path.split(path)
    try:
        names = matching_names(path, MAX_FOLDER_NAMES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return ["u", exc.errno or 0]
    if names is None:
        raise _NoState(path)
    joined = b"\0".join(sorted(os.fsencode(n) for n in names))
    return ["g", os.path.realpath(folder), pattern.lower(), content_digest(joined)]


# ---- the run's fingerprint -------------------------------------------------------------------

def _package_state() -> str:
    """SHA-256 over the relative path and bytes of every module and data file of the lintlora
    package, in sorted order (about 1.2 MB: 2 ms)."""
    from hashlib import sha256

    root = os.path.dirname(os.path.abspath(__file__))
    digest = sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                full = os.path.join(folder, name)
                digest.update(os.fsencode(os.path.relpath(full, root)) + b"\0")
                try:
                    with open(full, "rb") as handle:
                        digest.update(handle.read())
                except OSError as exc:
                    digest.update(f"unreadable {exc.errno}".encode())
                digest.update(b"\0")
    return digest.hexdigest()


def _stat_state(path: str) -> list | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return [info.st_size, info.st_mtime_ns]


def _library_state(name: str) -> list | None:
    """Where the installed library ``name`` is and the size and time of its ``__init__`` file
    (an upgrade rewrites it), found without importing it or :mod:`importlib.metadata` (each would
    cost a one-file run tens of milliseconds)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return [origin, _stat_state(origin)] if origin else None


def _file_digest(path: str) -> str | None:
    from lintlora.safeio import read_bounded

    try:
        return content_digest(read_bounded(path, MAX_INPUT_BYTES))
    except OSError:
        return None


def _rules_state(rules: Sequence[type]) -> list:
    """Each rule class by module and name; for rules outside lintlora, the SHA-256 of their
    module's file (a plugin being edited invalidates like lintlora does)."""
    out = []
    for cls in rules:
        module = getattr(cls, "__module__", "") or ""
        entry = [getattr(cls, "code", ""), module, getattr(cls, "__qualname__", repr(cls))]
        if not module.startswith("lintlora."):
            file = getattr(sys.modules.get(module), "__file__", None)
            entry.append(_file_digest(file) if file else None)
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


def _same(a: "FileResult", b: "FileResult") -> bool:
    return (a.path, a.kind, a.linted, a.findings, a.errors, a.notices, a.cell_lines) == \
           (b.path, b.kind, b.linted, b.findings, b.errors, b.notices, b.cell_lines) \
        and set(a.inputs) == set(b.inputs)


class _Invalid(Exception):
    """An entry that fails a check."""


class ResultCache:
    """The cache of one run.

    Args:
        directory: the cache folder (created when missing); its ``v<FORMAT>`` subfolder holds
            entries.
        rules: the rule classes of the run (part of every key; their codes are the codes an
            entry's findings may have).

    Attributes:
        problem: why the cache is off for this run (the folder cannot be created or written,
            or its key cannot be made private), or ``None``.
        hits, misses, stored, ignored: counters (``ignored``: entries rejected as invalid or
            stale).
    """

    def __init__(self, directory: str, rules: Sequence[type]) -> None:
        from lintlora.cache_folder import CacheFolder

        self.directory = os.path.abspath(os.path.expanduser(directory))
        self.root = os.path.join(self.directory, f"v{FORMAT}")
        self.problem: str | None = None
        self.hits = self.misses = self.stored = self.ignored = 0
        self._folder: CacheFolder | None = None
        try:
            self._folder = CacheFolder(self.directory, f"v{FORMAT}")
        except OSError as exc:
            reason = exc.strerror or exc
            self.problem = f"cache folder {self.directory} is not usable ({reason}); " \
                           "running without the cache"
        import lintlora

        self._codes = frozenset(str(getattr(r, "code", "")) for r in rules) - {""}
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
        self._states: dict[str, Any] = {}
        self._roots: dict[str, str] = {}

    @property
    def enabled(self) -> bool:
        """Whether entries are read and written in this run."""
        return self.problem is None

    def close(self) -> None:
        """Release the cache folder's descriptor (the engine calls it at the end of a run)."""
        if self._folder is not None:
            self._folder.close()

    # -- keys ----------------------------------------------------------------------------------
    def _settings_key(self, settings: "Settings") -> str:
        entry = self._settings.get(id(settings))
        if entry is None or entry[0] is not settings:
            entry = (settings, _canonical(_settings_state(settings)))
            self._settings[id(settings)] = entry
        return entry[1]

    def key(self, source: "SourceFile", settings: "Settings", digest: str,
            launches: Sequence[Any] = ()) -> str:
        """The key of ``source`` with content SHA-256 ``digest`` under ``settings``, started
        by ``launches`` (the runs of the file: their launch data by value)."""
        from hashlib import sha256

        absolute = os.path.abspath(source.path)
        parts = [self._run, self._settings_key(settings),
                 _canonical([source.path, absolute, self._project_root(absolute), source.kind,
                             source.explicit, digest])]
        if launches:  # no launch: the key of a file is what it was before runs existed
            parts.append(_canonical([repr(launch) for launch in launches]))
        document = "\n".join(parts)
        return sha256(document.encode("utf-8", "surrogatepass")).hexdigest()

    def _project_root(self, absolute: str) -> str | None:
        """:func:`lintlora.safeio.project_root` of a file, resolved once per folder (a file
        that is itself a link is resolved on its own)."""
        from lintlora.safeio import project_root

        try:
            if os.path.islink(absolute):
                return project_root(absolute)
            folder = os.path.dirname(absolute)
            root = self._roots.get(folder)
            if root is None:
                root = self._roots[folder] = project_root(folder)
            return root
        except (OSError, ValueError):
            return None

    @staticmethod
    def _entry_name(key: str) -> tuple[str, str]:
        return key[:2], key + ".json"

    def _state(self, path: str) -> Any:
        """:func:`input_state`, once per path and run; ``_NoState`` as a sentinel value."""
        try:
            return self._states[path]
        except KeyError:
            pass
        try:
            state: Any = input_state(path)
        except _NoState:
            state = _NoState
        self._states[path] = state
        return state

    def _sign(self, body: bytes) -> bytes:
        import hashlib
        import hmac

        assert self._folder is not None
        return hmac.new(self._folder.secret, body, hashlib.sha256).hexdigest().encode("ascii")

    # -- reading -------------------------------------------------------------------------------
    def _parse(self, raw: bytes, key: str, source: "SourceFile", fail_on: Any,
               check_inputs: bool) -> "FileResult":
        """The result an entry's bytes hold, every check passed.

        Raises:
            _Invalid, ValueError, KeyError, TypeError, RecursionError: it fails one.
        """
        import hmac

        signature, body = raw[:_MAC_LENGTH], raw[_MAC_LENGTH + 1:]
        if raw[_MAC_LENGTH:_MAC_LENGTH + 1] != b"\n" or \
                not hmac.compare_digest(signature, self._sign(body)):
            raise _Invalid("signature")
        data = json.loads(body.decode("ascii"))
        if type(data) is not dict or data.keys() != {"format", "key", "inputs", "result"}:
            raise _Invalid("shape")
        if data["format"] != FORMAT or data["key"] != key:
            raise _Invalid("format or key")
        inputs = data["inputs"]
        if type(inputs) is not list:
            raise _Invalid("inputs")
        from lintlora.safeio import confinement_root, is_within

        root = confinement_root(source.path)
        inside = []
        for item in inputs:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str \
                    or not os.path.isabs(item[0]):
                raise _Invalid("an input")
            if is_within(item[0], root):
                inside.append(item[0])
            elif "*" in os.path.basename(item[0]):
                raise _Invalid("a pattern input outside the project")  # only a project's own
        paths = tuple(item[0] for item in inputs)
        # a span or related location is the linted file's or an input's inside the project (a
        # launch line, a config line): checked before any input's state is taken, so a forged
        # entry pointing outside never has that file opened
        result = decode_result(data["result"], fail_on, path=source.path, kind=source.kind,
                               codes=self._codes, other_paths=tuple(inside))
        if check_inputs:
            for item in inputs:
                if self._state(item[0]) != item[1]:
                    raise _Invalid("an input changed")
        result.inputs = paths
        return result

    def load(self, key: str, source: "SourceFile", fail_on: Any = None) -> "FileResult | None":
        """The cached result of ``source`` for ``key``, or ``None`` (missing, invalid or
        stale: see the module docstring). Never raises for what is in the cache folder."""
        if not self.enabled or self._folder is None:
            return None
        from lintlora.safeio import read_bounded

        try:
            raw = read_bounded(self._folder.entry_path(*self._entry_name(key)), MAX_ENTRY_BYTES,
                               follow_links=False)
        except (OSError, ValueError):
            self.misses += 1
            return None
        try:
            result = self._parse(raw, key, source, fail_on, check_inputs=True)
        except (_Invalid, ValueError, KeyError, TypeError, RecursionError):
            self.ignored += 1
            self.misses += 1
            return None
        self.hits += 1
        return result

    # -- writing -------------------------------------------------------------------------------
    def store(self, key: str, source: "SourceFile", result: "FileResult",
              inputs: Sequence[str] | None = None) -> bool:
        """Write ``result`` (of ``source``, linted from the bytes ``key`` was made from) under
        ``key`` with the state of ``inputs`` (default: ``result.inputs``, the files the result
        depends on); ``False`` when it is not cacheable (see the module docstring) or cannot be
        written."""
        if inputs is None:
            inputs = result.inputs
        if not self.enabled or self._folder is None \
                or any(e.code == _INTERNAL_ERROR for e in result.errors):
            return False
        try:
            unique = sorted({os.path.abspath(p) for p in inputs})
            states = [[p, self._state(p)] for p in unique]
            if any(state is _NoState for _, state in states):
                return False
            document = {"format": FORMAT, "key": key, "inputs": states,
                        "result": encode_result(result)}
            body = json.dumps(document, ensure_ascii=True, separators=(",", ":"),
                              allow_nan=False).encode("ascii")
        except (TypeError, ValueError, AttributeError, RecursionError):
            return False
        if len(body) + _MAC_LENGTH + 1 > MAX_ENTRY_BYTES:
            return False
        raw = self._sign(body) + b"\n" + body
        try:  # what is stored must read back as this very result
            if not _same(self._parse(raw, key, source, None, check_inputs=False), result):
                return False
        except (_Invalid, ValueError, KeyError, TypeError, RecursionError):
            return False
        if not self._folder.write(*self._entry_name(key), raw):
            return False
        self.stored += 1
        return True
