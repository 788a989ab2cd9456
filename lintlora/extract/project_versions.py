"""The library releases a project states: pins and bounds read from its dependency files (issue 16).

:func:`versions_in_project` looks in the folder of a linted file and in each folder above it up
to the project's root (``root``, :func:`lintlora.safeio.confinement_root` for the engine), and
reads, in each folder, the files below (nothing is run, installed or imported):

===============================  ============================================================
file                             what is read
===============================  ============================================================
``uv.lock``, ``poetry.lock``     ``[[package]] name/version``: the exact releases (TOML)
``Pipfile.lock``                 ``default``/``develop`` ``version`` (JSON)
``requirements*.txt``,           PEP 508 lines; ``-r``/``--requirement`` and ``-c``/
``requirements/*.txt``           ``--constraint`` includes followed inside the project
                                 (:data:`MAX_INCLUDE_DEPTH`, cycles cut); ``-e``/URL lines
``pyproject.toml``               PEP 621 ``[project] dependencies`` and
                                 ``optional-dependencies``, PEP 735 ``[dependency-groups]``,
                                 Poetry ``[tool.poetry.dependencies]`` (and its groups; ``^``/
                                 ``~`` constraints translated to PEP 440), PDM
                                 ``[tool.pdm.dev-dependencies]``
``setup.cfg``                    ``[options] install_requires`` and ``[options.extras_require]``
``setup.py``                     ``install_requires=[...]``/``extras_require={...}`` literals of
                                 the ``setup(...)`` call (or a module-level list they name),
                                 read with LibCST
``Pipfile``                      ``[packages]``/``[dev-packages]`` (TOML)
``environment.yml``/``.yaml``    conda ``dependencies`` (``pytorch=2.1`` is torch) and their
                                 ``pip:`` list, with lintlora's bounded YAML loader
===============================  ============================================================

and :func:`versions_in_notebook` reads a notebook's own ``!pip install x==v`` /
``%pip install`` lines (:func:`pins_in_pip_lines` for any list of lines).

Specifiers, versions and names are read with ``packaging`` (``Requirement``, ``SpecifierSet``,
``Version``, ``canonicalize_name``). A requirement with an environment marker is kept when the
marker holds on the host a CUDA fine-tune runs on (:data:`TRAINING_HOST`: Linux x86-64,
CPython 3.11) and dropped otherwise; a URL or VCS requirement (``name @ git+https://...``,
``-e git+...#egg=name``) gives a pin with ``version=None``, except a wheel URL, whose file name
states its release (``packaging.utils.parse_wheel_filename``).

Nearest wins: for each package only the pins of the nearest folder that names it are returned
(every pin of that folder, lock files first; :meth:`lintlora.context.Context.library_version`
prefers an exact one). Only the packages of :data:`PACKAGES` are kept.

Trust (DESIGN.md "The trust boundary"): every file is read with
:func:`lintlora.safeio.read_bounded` (a regular file, at most :data:`MAX_MANIFEST_BYTES` /
:data:`MAX_LOCK_BYTES` / :data:`MAX_SETUP_PY_BYTES`), never through a symbolic link
(``follow_links=False``), and only inside ``root`` (:func:`lintlora.safeio.is_within`, links
resolved); a file that cannot be read or parsed (too large, binary, invalid TOML, a link out of
the project) is skipped: nothing is raised. The files looked at, present or not, are returned:
they are inputs of the results cache.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from typing import Any, Iterable, Iterator

from lintlora.library_versions import KNOWN_PACKAGES, canonical_package
from lintlora.training_setup import PinnedVersion, Span

__all__ = [
    "PACKAGES",
    "versions_in_project",
    "versions_in_notebook",
    "pins_in_pip_lines",
    "pins_in_file",
    "MAX_MANIFEST_BYTES",
    "MAX_LOCK_BYTES",
    "MAX_SETUP_PY_BYTES",
    "MAX_INCLUDE_DEPTH",
    "TRAINING_HOST",
]

PACKAGES = frozenset(KNOWN_PACKAGES)
"""The distributions whose release a rule or the estimator may depend on (PEP 503 names,
:data:`lintlora.library_versions.KNOWN_PACKAGES`)."""

MAX_MANIFEST_BYTES = 1 * 2**20
"""The largest ``requirements*.txt``, ``pyproject.toml``, ``setup.cfg``, ``Pipfile`` or
``environment.yml`` read: 1 MiB, as ``[tool.lintlora]``'s ``pyproject.toml``
(:data:`lintlora.config.PYPROJECT_MAX_BYTES`): real ones are a few KB."""

MAX_LOCK_BYTES = 8 * 2**20
"""The largest ``uv.lock``, ``poetry.lock`` or ``Pipfile.lock`` read: 8 MiB. A lock lists every
package of the resolution with the hash of each wheel of each platform, so it is far larger than
a manifest (a few hundred packages make about 1 MiB); ``tomllib`` parses about 10 MB/s, so the
bound costs under a second, once per file and run (parsed files are cached)."""

MAX_SETUP_PY_BYTES = 256 * 2**10
"""The largest ``setup.py`` parsed: 256 KiB (LibCST parses about 1 MB/s; transformers' own
``setup.py`` is about 20 KB)."""

MAX_INCLUDE_DEPTH = 8
"""``-r``/``-c`` includes followed at most this deep (real chains are 1-3: ``requirements/
dev.txt`` including ``base.txt``); deeper ones, and cycles, are cut."""

MAX_INCLUDED_FILES = 64
"""Files one requirements file brings in through its includes, itself counted (a fan-out of
``-r`` lines cannot multiply the reads)."""

MAX_REQUIREMENT_FILES = 32
"""``requirements*.txt`` files read per folder (and as many in ``requirements/``)."""

MAX_FOLDER_ENTRIES = 4096
"""Entries of one folder looked at when listing its ``requirements*.txt``."""

MAX_FOLDERS = 64
"""Folders walked up from the linted file (a path has fewer components)."""

MAX_LINE_CHARS = 4096
"""A requirement line longer than this is not read (PEP 508 lines are short; URLs a few
hundred characters)."""

MAX_PINS_PER_FILE = 4096
"""Pins kept per file (a lock of a large resolution lists a few hundred packages)."""

TRAINING_HOST = {
    "os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
    "platform_machine": "x86_64", "platform_python_implementation": "CPython",
    "implementation_name": "cpython", "python_version": "3.11", "python_full_version": "3.11.0",
    "implementation_version": "3.11.0",
}
"""The environment markers are evaluated in (``packaging.markers.Marker.evaluate``): a Linux
x86-64 CUDA host with CPython 3.11, where the fine-tunes lintlora reads run (a pin for macOS or
Windows only is not the training run's)."""

_LOCKS = ("uv.lock", "poetry.lock", "Pipfile.lock")
_MANIFESTS = ("pyproject.toml", "setup.cfg", "setup.py", "Pipfile", "environment.yml",
              "environment.yaml")
_REQ_NAME = re.compile(r"requirements[^/\\]*\.txt\Z", re.IGNORECASE)


# ---- the walk ---------------------------------------------------------------------------------
def versions_in_project(path: str, *, root: str) -> tuple[tuple[PinnedVersion, ...], tuple[str, ...]]:
    """The pins of :data:`PACKAGES` the project around ``path`` states, and the files looked at.

    Args:
        path: the linted file (or a folder): its folder is looked in first.
        root: the project's top (its files only are read; the walk stops there). When ``path``
            is not inside it, only the file's own folder is looked in.

    Returns:
        ``(pins, files)``: the pins, nearest folder first (per package only the nearest folder
        that names it), and the absolute paths looked at, present or not (each folder walked and
        its ``requirements/`` folder, whose listings change when a requirements file is added,
        each folder's fixed names, the ``requirements*.txt`` found, included files).
        Never raises for the project's content.
    """
    real_root = os.path.realpath(root)
    start = os.path.realpath(path)
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    folders: list[str] = []
    current = folder
    for _ in range(MAX_FOLDERS):
        folders.append(current)
        if current == real_root or not _within(current, real_root):
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    confine = real_root if _within(folder, real_root) else folder
    pins: list[PinnedVersion] = []
    files: list[str] = []
    seen_packages: set[str] = set()
    for f in folders:
        # a file both read on its own and included by another gives its pins once
        found = list(dict.fromkeys(_folder_pins(f, confine, files)))
        named = {p.package for p in found}
        pins.extend(p for p in found if p.package not in seen_packages)
        seen_packages |= named
    return tuple(pins), tuple(dict.fromkeys(files))


def _within(path: str, root: str) -> bool:
    from lintlora.safeio import is_within

    return is_within(path, root)


def _folder_pins(folder: str, confine: str, files: list[str]) -> Iterator[PinnedVersion]:
    for name in _LOCKS:
        yield from pins_in_file(os.path.join(folder, name), confine=confine, files=files)
    for req in _requirements_files(folder, files):
        yield from pins_in_file(req, confine=confine, files=files)
    for name in _MANIFESTS:
        yield from pins_in_file(os.path.join(folder, name), confine=confine, files=files)


def _requirements_files(folder: str, files: list[str]) -> list[str]:
    """``requirements*.txt`` of ``folder`` and ``*.txt`` of ``folder/requirements``, sorted."""
    out: list[str] = []
    sub = os.path.join(folder, "requirements")
    # the names that match are inputs (a pattern input: lintlora/cache.py input_state): a
    # requirements file added later changes them, another file in the folder does not
    files.extend((os.path.join(folder, "requirements*.txt"), os.path.join(sub, "*.txt")))
    for where, wanted in ((folder, _REQ_NAME.match), (sub, lambda n: n.lower().endswith(".txt"))):
        names = []
        try:
            with os.scandir(where) as it:
                for i, entry in enumerate(it):
                    if i >= MAX_FOLDER_ENTRIES:
                        break
                    if wanted(entry.name):
                        names.append(entry.name)
        except OSError:
            continue
        out.extend(os.path.join(where, n) for n in sorted(names)[:MAX_REQUIREMENT_FILES])
    return out


# ---- one file -----------------------------------------------------------------------------------
def _kind_of(path: str) -> str | None:
    name = os.path.basename(path)
    if name in _LOCKS or name in ("pyproject.toml", "setup.cfg", "setup.py", "Pipfile"):
        return name
    if name in ("environment.yml", "environment.yaml"):
        return "environment.yml"
    if name.lower().endswith(".txt"):
        return "requirements"
    return None


def pins_in_file(path: str, *, confine: str, files: list[str] | None = None,
                 _depth: int = 0, _seen: set[str] | None = None) -> list[PinnedVersion]:
    """The pins of :data:`PACKAGES` one dependency file states (its kind from its name; a
    requirements file's includes followed, each file once, at most :data:`MAX_INCLUDE_DEPTH`
    deep and :data:`MAX_INCLUDED_FILES` in all, so cycles and fan-outs end). ``files``
    collects the paths looked at. A file outside ``confine``, a link, missing or unreadable,
    gives ``[]``."""
    if files is not None:
        files.append(os.path.abspath(path))
    seen = set() if _seen is None else _seen
    kind = _kind_of(path)
    if kind is None or not os.path.lexists(path) or os.path.islink(path):
        return []
    if not _within(path, confine):
        return []
    real = os.path.realpath(path)
    if real in seen or len(seen) >= MAX_INCLUDED_FILES:  # a cycle, a file included twice
        return []
    seen.add(real)
    try:
        st = os.lstat(path)
    except OSError:
        return []
    parsed = _parsed(real, kind, st.st_mtime_ns, st.st_size, st.st_ino)
    if parsed is None:
        return []
    pins, includes = parsed
    out = list(pins)
    if includes and _depth < MAX_INCLUDE_DEPTH:
        for target in includes[:MAX_INCLUDED_FILES]:
            inc = os.path.normpath(os.path.join(os.path.dirname(real), target))
            out.extend(pins_in_file(inc, confine=confine, files=files, _depth=_depth + 1, _seen=seen))
            if len(out) >= MAX_PINS_PER_FILE:
                break
    return out[:MAX_PINS_PER_FILE]


@functools.lru_cache(maxsize=512)
def _parsed(real: str, kind: str, mtime_ns: int, size: int, ino: int
            ) -> tuple[tuple[PinnedVersion, ...], tuple[str, ...]] | None:
    """``(pins, includes)`` of one file, cached by its identity and modification time;
    ``None`` when it cannot be read or parsed."""
    from lintlora.safeio import read_bounded

    bound = (MAX_LOCK_BYTES if kind in _LOCKS else
             MAX_SETUP_PY_BYTES if kind == "setup.py" else MAX_MANIFEST_BYTES)
    try:
        raw = read_bounded(real, bound, follow_links=False)
        if b"\x00" in raw:  # binary
            return None
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        if kind == "requirements":
            return _requirements(text, real)
        reader = _READERS[kind]
        return tuple(reader(text, real))[:MAX_PINS_PER_FILE], ()
    except (RecursionError, MemoryError):
        return None
    except Exception:  # noqa: BLE001 - any parser's error (tomllib, LibCST, YAML, JSON): skipped
        return None


# ---- requirement strings ------------------------------------------------------------------------
def _canonical(name: str) -> str:
    return canonical_package(name)


def _exact(spec: Any) -> str | None:
    """The release a ``SpecifierSet`` pins exactly (one ``==``/``===`` without ``*``), else
    ``None``."""
    from packaging.version import InvalidVersion, Version

    items = list(spec)
    if len(items) != 1 or items[0].operator not in ("==", "===") or items[0].version.endswith("*"):
        return None
    try:
        Version(items[0].version)
    except InvalidVersion:
        return None
    return items[0].version


def _pin(name: str, spec_text: str, path: str, line: int, source: str, *,
         version: str | None = None, cell: int | None = None) -> PinnedVersion | None:
    """A pin of ``name`` (canonicalised) with the specifier ``spec_text`` (validated with
    ``SpecifierSet``), or ``None`` for a package not in :data:`PACKAGES` or a bad specifier."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    package = _canonical(name)
    if package not in PACKAGES:
        return None
    try:
        spec = SpecifierSet(spec_text or "")
    except InvalidSpecifier:
        return None
    text = str(spec) if spec_text else ""
    if version is None:
        version = _exact(spec)
    return PinnedVersion(package, text, version, Span(path, max(1, line), cell=cell), source)


def _requirement_pin(text: str, path: str, line: int, source: str,
                     cell: int | None = None) -> PinnedVersion | None:
    """A PEP 508 requirement (``transformers[torch]==4.44.2; python_version >= "3.9"``,
    ``peft @ git+https://...``, a wheel URL) -> its pin, or ``None``."""
    from packaging.markers import UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    text = text.strip()
    if not text or len(text) > MAX_LINE_CHARS:
        return None
    wheel = _wheel_pin(text, path, line, source, cell)
    if wheel is not None or "://" in text and "@" not in text.split("://", 1)[0]:
        return wheel
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    if req.marker is not None:
        try:
            if not req.marker.evaluate(dict(TRAINING_HOST, extra="")):
                return None
        except (UndefinedEnvironmentName, ValueError, TypeError):
            pass  # a marker on something unknown: kept
    if req.url:
        if req.url.split("?")[0].endswith(".whl"):
            w = _wheel_pin(req.url, path, line, source, cell)
            if w is not None:
                return w
        return _pin(req.name, "", path, line, source, cell=cell)
    return _pin(req.name, str(req.specifier), path, line, source, cell=cell)


def _wheel_pin(text: str, path: str, line: int, source: str, cell: int | None) -> PinnedVersion | None:
    """A wheel URL or file name (``.../flash_attn-2.6.3+cu123torch2.4-cp311-...whl``) -> a pin
    of its release (``packaging.utils.parse_wheel_filename``), else ``None``."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    base = text.split("#", 1)[0].split("?", 1)[0].rstrip()
    if not base.endswith(".whl"):
        return None
    try:
        name, version, _build, _tags = parse_wheel_filename(base.rsplit("/", 1)[-1])
    except (InvalidWheelFilename, ValueError):
        return None
    return _pin(str(name), f"=={version}", path, line, source, version=str(version), cell=cell)


def _egg_pin(text: str, path: str, line: int, source: str, cell: int | None) -> PinnedVersion | None:
    """An editable/VCS line's ``#egg=name`` -> a pin with no version."""
    m = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    if m:
        return _pin(m.group(1).split("==")[0], "", path, line, source, cell=cell)
    return None


# ---- requirements*.txt ------------------------------------------------------------------------------
_INCLUDE = re.compile(r"(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+|(?=\S))(\S+)")
_OPTION = re.compile(r"-{1,2}[A-Za-z]")


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, text)`` of each logical line: ``\\`` continuations joined,
    comments (`` #`` or a line starting with ``#``) removed."""
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = n
        line = raw
        if line.endswith("\\"):
            buf.append(line[:-1])
            continue
        buf.append(line)
        joined = "".join(buf)
        buf = []
        joined = re.sub(r"(^|\s)#.*", "", joined)
        if joined.strip():
            yield start, joined.strip()
    if buf:
        joined = re.sub(r"(^|\s)#.*", "", "".join(buf))
        if joined.strip():
            yield start, joined.strip()


def _requirements(text: str, path: str) -> tuple[tuple[PinnedVersion, ...], tuple[str, ...]]:
    pins: list[PinnedVersion] = []
    includes: list[str] = []
    for line_no, line in _logical_lines(text):
        if len(line) > MAX_LINE_CHARS:
            continue
        m = _INCLUDE.match(line)
        if m:
            target = m.group(1)
            if "://" not in target:  # a remote include is not the project's file
                includes.append(target)
            continue
        if line.startswith(("-e", "--editable")):
            target = re.sub(r"^(-e|--editable)(\s*=\s*|\s*)", "", line)
            pin = _egg_pin(target, path, line_no, "requirements", None)
            if pin is None and not target.startswith((".", "/")) and "://" not in target:
                pin = _requirement_pin(target, path, line_no, "requirements")
        elif _OPTION.match(line):
            continue  # --index-url, -f, --hash lines of their own, ...
        else:
            # pip's per-requirement options (``--hash=sha256:...``) follow the requirement
            req = re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]
            if "://" not in req and ".whl" not in req and not _wanted_requirement(req):
                continue  # another package: not parsed
            pin = _requirement_pin(req, path, line_no, "requirements") or \
                _egg_pin(line, path, line_no, "requirements", None)
        if pin is not None:
            pins.append(pin)
        if len(pins) >= MAX_PINS_PER_FILE:
            break
    return tuple(pins), tuple(includes)


# ---- TOML files ---------------------------------------------------------------------------------
def _toml(text: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def _line_of(lines: list[str], *needles: str, after: int = 0) -> int:
    """The 1-based number of the first line at or after ``after`` (0-based) holding every one
    of ``needles``; else of the first one anywhere; else 1. (TOML and configparser give no
    positions: the entry's own text locates it.)"""
    for start in (after, 0):
        for i in range(start, len(lines)):
            if all(n in lines[i] for n in needles):
                return i + 1
    return 1


def _header_line(lines: list[str], header: str) -> int:
    """The 0-based index of the line opening the TOML table ``header`` (``[tool.poetry.
    dependencies]``), or 0."""
    target = header.replace(" ", "")
    for i, line in enumerate(lines):
        if line.replace(" ", "").startswith(target):
            return i
    return 0


_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _wanted(name: str) -> bool:
    """Whether ``name`` is one of :data:`PACKAGES` (checked before an entry's line is looked
    for, so a file of many other dependencies costs one pass)."""
    return canonical_package(name) in PACKAGES


def _wanted_requirement(text: str) -> bool:
    """Whether a PEP 508 string names one of :data:`PACKAGES` (its leading name)."""
    m = _NAME.match(text)
    return bool(m) and _wanted(m.group(1))


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _pep508_list(items: Iterable[str], lines: list[str], path: str, source: str,
                 after: int = 0) -> Iterator[PinnedVersion]:
    for item in items:
        if not _wanted_requirement(item):
            continue
        pin = _requirement_pin(item, path, _line_of(lines, item.strip(), after=after), source)
        if pin is not None:
            yield pin


def _pyproject(text: str, path: str) -> Iterator[PinnedVersion]:
    data = _toml(text)
    lines = text.splitlines()
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    yield from _pep508_list(_strings(project.get("dependencies")), lines, path, "pyproject",
                            _header_line(lines, "[project]"))
    optional = project.get("optional-dependencies")
    if isinstance(optional, dict):
        for group in optional.values():
            yield from _pep508_list(_strings(group), lines, path, "pyproject")
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):  # PEP 735 (uv's dev groups)
        for group in groups.values():
            yield from _pep508_list(_strings(group), lines, path, "pyproject")
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    tables = [("[tool.poetry.dependencies]", poetry.get("dependencies")),
              ("[tool.poetry.dev-dependencies]", poetry.get("dev-dependencies"))]
    group = poetry.get("group")
    if isinstance(group, dict):
        tables.extend((f"[tool.poetry.group.{g}.dependencies]", t.get("dependencies"))
                      for g, t in group.items() if isinstance(t, dict))
    for header, table in tables:
        if isinstance(table, dict):
            yield from _poetry_table(table, lines, path, "pyproject", _header_line(lines, header))
    pdm = tool.get("pdm") if isinstance(tool.get("pdm"), dict) else {}
    dev = pdm.get("dev-dependencies")
    if isinstance(dev, dict):
        for group in dev.values():
            yield from _pep508_list(_strings(group), lines, path, "pyproject")


def _poetry_table(table: dict, lines: list[str], path: str, source: str,
                  after: int) -> Iterator[PinnedVersion]:
    """Poetry/Pipfile dependency tables: ``name = "^4.44"`` or ``{version = "...", ...}`` or
    ``{git = "..."}`` (no version)."""
    for name, value in table.items():
        if not isinstance(name, str) or not _wanted(name):
            continue
        if isinstance(value, dict):
            constraint = value.get("version")
            if not isinstance(constraint, str):
                constraint = "*"
        elif isinstance(value, str):
            constraint = value
        else:
            continue
        try:
            spec = _poetry_spec(constraint) if source == "pyproject" else _pipfile_spec(constraint)
        except ValueError:
            continue
        line = _line_of(lines, name, "=", after=after)
        pin = _pin(name, spec, path, line, source)
        if pin is not None:
            yield pin


def _pipfile_spec(text: str) -> str:
    """A Pipfile constraint: PEP 440 (``"==4.44.2"``, ``">=4.40"``) or ``"*"``."""
    text = text.strip()
    return "" if text in ("", "*") else text


def _poetry_spec(text: str) -> str:
    """A Poetry constraint as a PEP 440 specifier string (``SpecifierSet`` validates it).

    Poetry's own syntax (python-poetry "Dependency specification"): ``^1.2.3`` is
    ``>=1.2.3,<2.0.0`` (the leftmost non-zero part may not change: ``^0.2.3`` is
    ``>=0.2.3,<0.3.0``), ``~1.2.3`` is ``>=1.2.3,<1.3.0`` (``~1`` is ``>=1,<2``), a bare
    ``1.2.3`` is ``==1.2.3``, ``*`` any; PEP 440 operators pass through.

    Raises:
        ValueError: an ``||`` alternative (no single PEP 440 specifier) or a malformed part.
    """
    from packaging.version import Version

    text = text.strip()
    if "||" in text or "|" in text:
        raise ValueError(text)
    parts = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", text):
        part = part.strip()
        if not part or part == "*":
            continue
        if part.startswith("^") or (part.startswith("~") and not part.startswith("~=")):
            caret = part[0] == "^"
            v = part[1:].strip()
            release = [int(x) for x in Version(v).release]
            if caret:
                idx = next((i for i, x in enumerate(release) if x != 0), len(release) - 1)
            else:
                idx = 1 if len(release) >= 2 else 0
                idx = min(idx, len(release) - 1) if len(release) > 1 else 0
            upper = release[:idx + 1]
            upper[-1] += 1
            parts += [f">={v}", "<" + ".".join(str(x) for x in upper)]
        elif part[0].isdigit():
            parts.append(f"=={part}")
        else:
            parts.append(part)
    return ",".join(parts)


def _locked(text: str, path: str, source: str) -> Iterator[PinnedVersion]:
    """``[[package]] name = ... version = ...`` of ``uv.lock`` and ``poetry.lock``."""
    data = _toml(text)
    lines = text.splitlines()
    packages = data.get("package")
    if not isinstance(packages, list):
        return
    for entry in packages:
        if not isinstance(entry, dict):
            continue
        name, version = entry.get("name"), entry.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            continue
        if _canonical(name) not in PACKAGES:
            continue
        line = _line_of(lines, f'name = "{name}"')
        pin = _pin(name, f"=={version}", path, line, source, version=version)
        if pin is not None:
            yield pin


def _uv_lock(text: str, path: str) -> Iterator[PinnedVersion]:
    return _locked(text, path, "uv.lock")


def _poetry_lock(text: str, path: str) -> Iterator[PinnedVersion]:
    return _locked(text, path, "poetry.lock")


def _pipfile(text: str, path: str) -> Iterator[PinnedVersion]:
    data = _toml(text)
    lines = text.splitlines()
    for header in ("packages", "dev-packages"):
        table = data.get(header)
        if isinstance(table, dict):
            yield from _poetry_table(table, lines, path, "Pipfile", _header_line(lines, f"[{header}]"))


def _pipfile_lock(text: str, path: str) -> Iterator[PinnedVersion]:
    data = json.loads(text)
    lines = text.splitlines()
    if not isinstance(data, dict):
        return
    for section in ("default", "develop"):
        table = data.get(section)
        if not isinstance(table, dict):
            continue
        for name, entry in table.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("version"), str) or not _wanted(name):
                continue
            spec = entry["version"]
            pin = _pin(name, spec, path, _line_of(lines, f'"{name}"'), "Pipfile.lock")
            if pin is not None:
                yield pin


# ---- setup.cfg / setup.py -----------------------------------------------------------------------
def _setup_cfg(text: str, path: str) -> Iterator[PinnedVersion]:
    import configparser

    parser = configparser.RawConfigParser(strict=False)
    parser.read_string(text)
    lines = text.splitlines()
    values: list[str] = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(v for _k, v in parser.items("options.extras_require"))
    for value in values:
        for item in value.splitlines():
            item = item.split(" #", 1)[0].strip()
            if item and not item.startswith("#") and _wanted_requirement(item):
                pin = _requirement_pin(item, path, _line_of(lines, item), "setup.cfg")
                if pin is not None:
                    yield pin


def _setup_py(text: str, path: str) -> Iterator[PinnedVersion]:
    """``install_requires``/``extras_require`` of ``setup(...)``: list literals of strings, or a
    module-level name bound to one (``install_requires=REQUIRED``); nothing is run."""
    from lintlora.extract._cst import import_libcst

    cst = import_libcst()
    module = cst.parse_module(text)
    lines = text.splitlines()
    names: dict[str, Any] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name):
                    names[small.targets[0].target.value] = small.value

    def strings(node: Any, depth: int = 0) -> list[Any]:
        if isinstance(node, cst.Name) and node.value in names and depth < 2:
            return strings(names[node.value], depth + 1)
        if isinstance(node, (cst.List, cst.Tuple)):
            return [e.value for e in node.elements
                    if isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString)]
        if isinstance(node, cst.Dict) and depth < 2:
            out: list[Any] = []
            for e in node.elements:
                if isinstance(e, cst.DictElement):
                    out.extend(strings(e.value, depth + 1))
            return out
        return []

    found: list[Any] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Call(self, node: Any) -> None:
            func = node.func
            name = func.value if isinstance(func, cst.Name) else \
                func.attr.value if isinstance(func, cst.Attribute) else ""
            if name != "setup":
                return
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("install_requires", "extras_require"):
                    found.extend(strings(arg.value))

    module.visit(_Visitor())
    for node in found:
        value = node.evaluated_value
        if not isinstance(value, str) or not _wanted_requirement(value):
            continue
        pin = _requirement_pin(value, path, _line_of(lines, node.value), "setup.py")
        if pin is not None:
            yield pin


# ---- environment.yml ----------------------------------------------------------------------------
_CONDA = re.compile(r"\s*(?:[A-Za-z0-9_.-]+::)?([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)")


def _conda_pin(text: str, path: str, line: int) -> PinnedVersion | None:
    """A conda match spec (``pytorch=2.1.0=py3.10_cuda12.1_0``, ``transformers==4.44.2``,
    ``peft>=0.10``, ``conda-forge::accelerate``) -> a pin: ``name=V`` is conda's fuzzy match,
    ``==V.*`` in PEP 440 (``version`` is then ``None`` unless ``V`` has three parts, a release);
    a build string after a second ``=`` is dropped."""
    m = _CONDA.fullmatch(text)
    if not m:
        return None
    name, rest = m.group(1), m.group(2).strip().replace(" ", "")
    if not rest:
        return _pin(name, "", path, line, "environment.yml")
    if rest.startswith("=") and not rest.startswith("=="):
        version = rest[1:].split("=", 1)[0].rstrip("*").rstrip(".")
        exact = version if version.count(".") >= 2 else None
        pin = _pin(name, f"=={version}.*" if not exact else f"=={version}", path, line,
                   "environment.yml")
        return pin
    if rest.startswith("=="):
        rest = "==" + rest[2:].split("=", 1)[0]
    return _pin(name, rest, path, line, "environment.yml")


def _environment(text: str, path: str) -> Iterator[PinnedVersion]:
    from lintlora.extract.yaml_loader import YMap, YScalar, YSeq, load_config_text

    root = load_config_text(text, path, max_chars=MAX_MANIFEST_BYTES)
    if not isinstance(root, YMap):
        return
    deps = root.get("dependencies")
    if deps is None or not isinstance(deps.value, YSeq):
        return
    for item in deps.value.items:
        if isinstance(item, YScalar) and isinstance(item.value, str):
            pin = _conda_pin(item.value, path, item.span.line)
            if pin is not None:
                yield pin
        elif isinstance(item, YMap):
            pip = item.get("pip")
            if pip is not None and isinstance(pip.value, YSeq):
                for p in pip.value.items:
                    if isinstance(p, YScalar) and isinstance(p.value, str):
                        pin = _requirement_pin(p.value, path, p.span.line, "environment.yml") or \
                            _egg_pin(p.value, path, p.span.line, "environment.yml", None)
                        if pin is not None:
                            yield pin


_READERS = {
    "uv.lock": _uv_lock, "poetry.lock": _poetry_lock, "Pipfile.lock": _pipfile_lock,
    "pyproject.toml": _pyproject, "setup.cfg": _setup_cfg, "setup.py": _setup_py,
    "Pipfile": _pipfile, "environment.yml": _environment,
}


# ---- notebooks ----------------------------------------------------------------------------------
_PIP_LINE = re.compile(
    r"^\s*(?:!|%)\s*(?:uv\s+pip|pip3?|python3?\s+-m\s+pip|conda)\s+install\b(.*)$")
_PIP_VALUE_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links",
                                "-c", "--constraint", "-r", "--requirement", "--target", "-t",
                                "--prefix", "--root", "--python", "-p", "--channel"})


def pins_in_pip_lines(lines: Iterable[str], path: str, *, cell: int | None = None,
                      source: str = "notebook") -> list[PinnedVersion]:
    """The pins of ``!pip install ...`` / ``%pip install ...`` (also ``!pip3``, ``!uv pip``,
    ``!python -m pip``) lines; ``Span(path, line, cell=cell)`` with the 1-based line in
    ``lines``. Options are skipped (with their value where they take one); each other word is a
    requirement (``transformers==4.44.2``, ``"peft>=0.10"``, a wheel URL). A line ending in a
    backslash goes on on the next (IPython joins them before running the command:
    IPython/core/inputtransformer2.py ``find_end_of_continued_line``/``assemble_continued_line``);
    each requirement keeps the line it is written on."""
    import shlex

    lines = list(lines) if not isinstance(lines, list) else lines
    out: list[PinnedVersion] = []
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS or "install" not in line:
            continue
        m = _PIP_LINE.match(line)
        if not m:
            continue
        segments = [(n, m.group(1))]
        while segments[-1][1].rstrip().endswith("\\") and len(segments) < 256:
            at, text = segments[-1]
            segments[-1] = (at, text.rstrip()[:-1])
            nxt = at  # the next physical line (lines is 0-based, ``at`` 1-based)
            if nxt >= len(lines) or len(lines[nxt]) > MAX_LINE_CHARS:
                break
            segments.append((nxt + 1, lines[nxt]))
        skip = False
        for at, rest in segments:
            rest = rest.split(" #", 1)[0]
            try:
                words = shlex.split(rest)
            except ValueError:
                words = rest.split()
            for word in words[:256]:
                if skip:
                    skip = False
                    continue
                if word.startswith("-"):
                    skip = word in _PIP_VALUE_OPTIONS
                    continue
                if word.startswith(("$", "{")):  # a variable: unknown
                    continue
                pin = (_requirement_pin(word, path, at, source, cell)
                       or _egg_pin(word, path, at, source, cell))
                if pin is not None:
                    out.append(pin)
        if len(out) >= MAX_PINS_PER_FILE:
            break
    return out


def versions_in_notebook(text: str, path: str) -> tuple[PinnedVersion, ...]:
    """The pins of a notebook's own install lines (``text``: the ``.ipynb`` JSON), spans with
    the 1-based code cell and the line in it; ``()`` for text that is not a notebook."""
    if len(text) > 64 * MAX_MANIFEST_BYTES:
        return ()
    out: list[PinnedVersion] = []
    for i, cell in enumerate(_code_cells(text), 1):
        out.extend(pins_in_pip_lines(cell, path, cell=i))
        if len(out) >= MAX_PINS_PER_FILE:
            break
    return tuple(out)


def _code_cells(text: str) -> list[list[str]]:
    """The source lines of each code cell of a notebook's JSON, numbered as
    :func:`lintlora.extract.notebook.extract_notebook` numbers them (1-based among code cells;
    nbformat 4 ``cells`` and nbformat 3 ``worksheets``); ``[]`` for anything else."""
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(nb, dict):
        return []
    cells = nb.get("cells")
    worksheets = nb.get("worksheets")  # nbformat 3: the first worksheet, as extract_notebook
    if cells is None and isinstance(worksheets, list) and worksheets and isinstance(worksheets[0], dict):
        cells = worksheets[0].get("cells")
    if not isinstance(cells, list):
        return []
    out: list[list[str]] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list):
            source = "".join(x for x in source if isinstance(x, str))
        out.append(source.splitlines() if isinstance(source, str) else [])
    return out
