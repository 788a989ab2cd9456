"""The run, not the file (issue 15): an entry file, the launch that starts it, the configs it
names and the files its values came from.

A **run** is one entry file (a training script, or a dialect YAML that a CLI such as
``llamafactory-cli train x.yaml`` starts) together with the launch command that starts it
(:class:`lintlora.extract.launch_model.Launch`, or none), the configs that launch names, and
every file the run's result rests on. A file that *N* launches start is *N* runs (a ``for``
loop over values is one launch per value); a file no launch starts is one run without a
launch, linted exactly as before runs existed.

This module is in the engine layer. :func:`assemble_run` is pure (data in, data out);
:class:`LaunchIndex` does the one bounded walk per project root that finds the launches of a
lint run (through :func:`lintlora.extract.launch.discover_launches`, which never runs
anything), and maps each launch to the files it starts.

Shapes:

- :class:`Run` ``(entry, launch, configs, files)``: absolute paths.
- :func:`launched_files` ``(launch) -> tuple[str, ...]``: the entry files a launch starts.
- :func:`assemble_run` ``(setup, launch, distributed, files) -> TrainingSetup``.
- :func:`run_launch` ``(launch) -> RunLaunch``.
- :class:`LaunchIndex` ``.launches_for(path) -> tuple[Launch, ...]``,
  ``.problems_of(path)``, ``.discovery(root)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable

from lintlora.training_setup import Origin, RunLaunch, Setting, Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.extract.launch_model import Count, Launch, LaunchDiscovery, LaunchProblem
    from lintlora.training_setup import Distributed

__all__ = ["Run", "LaunchIndex", "launched_files", "assemble_run", "run_launch",
           "related_of", "MAX_WALK_ENTRIES", "DIALECT_LAUNCHERS", "MAX_COMMAND_CHARS"]

MAX_WALK_ENTRIES = 20_000
"""Directory entries (files and folders) looked at per project walk at most. A training
repository has a few hundred; the walk that finds launch files around a named script stops
here (and at :data:`lintlora.extract.launch.MAX_FILES` launch files), so linting one file in a
huge monorepo stays bounded. A walk that stops says so (a notice)."""

DIALECT_LAUNCHERS = {"llamafactory": "llamafactory", "axolotl": "axolotl", "tune": "torchtune",
                     "litgpt": "litgpt"}
"""Launchers whose entry point is a YAML config of a dialect (``llamafactory-cli train x.yaml``,
``axolotl train x.yml``, ``tune run recipe --config x.yaml``, ``litgpt finetune_lora --config
x.yaml``) -> the :attr:`ConfigRef.role` of that YAML."""

MAX_COMMAND_CHARS = 200
"""Longest :attr:`RunLaunch.command` text (:class:`lintlora.training_setup.RunLaunch`)."""

_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                   "site-packages", ".pytest_cache", ".hg", ".svn", "build", "dist", ".eggs"})


@dataclass(frozen=True)
class Run:
    """One run: ``entry`` (absolute path of the script or dialect YAML), the ``launch`` that
    starts it (``None``: no launch found), ``configs`` (absolute paths of the config files the
    launch names) and ``files`` (every file the run is made of: the entry, the launch file, the
    configs)."""

    entry: str
    launch: "Launch | None" = None
    configs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    @classmethod
    def of(cls, entry: str, launch: "Launch | None") -> "Run":
        """The run of ``entry`` started by ``launch``."""
        entry = os.path.abspath(entry)
        if launch is None:
            return cls(entry, None, (), (entry,))
        configs = tuple(dict.fromkeys(c.path for c in launch.configs if c.path))
        files = tuple(dict.fromkeys((entry, os.path.abspath(launch.path), *configs)))
        return cls(entry, launch, configs, files)


def launched_files(launch: "Launch") -> tuple[str, ...]:
    """The entry files ``launch`` starts, absolute: its script (``entry_path``), the project
    file of its ``-m`` module (``module_path``), and for a dialect CLI
    (:data:`DIALECT_LAUNCHERS`) the YAML config of that dialect it names."""
    out = []
    for path in (launch.entry_path, launch.module_path):
        if path:
            out.append(os.path.abspath(path))
    role = DIALECT_LAUNCHERS.get(launch.launcher)
    if role is not None:
        for ref in launch.configs:
            if ref.path and ref.role == role:
                out.append(os.path.abspath(ref.path))
    return tuple(dict.fromkeys(out))


def _count_setting(count: "Count | None", path: str, label: str) -> Setting:
    if count is None or count.value is None:
        return Setting.unknown(None if count is None else f"{count.source} {count.text}")
    line = count.line or 1
    return Setting(count.value, Origin.LAUNCH, Span(path, line, 1), None,
                   f"{count.source} {count.text} ({os.path.basename(path)}:{line})")


def _processes(launch: "Launch", path: str) -> Setting:
    """``nodes × processes per node``, or the world size the launcher states, or one process
    for a plain ``python`` launch; unknown otherwise (a launcher's default that depends on the
    machine, ``deepspeed`` without ``--num_gpus``: every visible GPU, is not guessed)."""
    name = os.path.basename(path)
    if launch.processes is not None:
        return _count_setting(launch.processes, path, "processes")
    per_node = launch.processes_per_node
    if per_node is None and launch.launcher == "deepspeed" and launch.visible_gpus is not None:
        per_node = launch.visible_gpus  # deepspeed starts one process per GPU it is given
    if per_node is not None and per_node.value is not None:
        nodes = launch.nodes
        if nodes is None:
            return _count_setting(per_node, path, "processes")
        if nodes.value is None:
            return Setting.unknown(f"{nodes.source} {nodes.text}")
        line = per_node.line or launch.line
        total = per_node.value * nodes.value
        return Setting(total, Origin.LAUNCH, Span(path, line, 1), None,
                       f"{nodes.source} {nodes.text} × {per_node.source} {per_node.text} "
                       f"({name}:{line})")
    if launch.launcher == "python" and not launch.distributed:
        return Setting(1, Origin.LAUNCH, Span(path, launch.line, 1), None,
                       f"python: one process ({name}:{launch.line})")
    return Setting.unknown(None)


def _command_text(launch: "Launch") -> str:
    """The launcher, its option names, the entry and the script's option names: never a value
    (a token or a password passed on the command line is not repeated in a report)."""
    words = [launch.launcher if launch.launcher != "llamafactory" else "llamafactory-cli"]
    words += [w.text.split("=", 1)[0] for w in launch.launcher_argv
              if w.text and w.text.startswith("-")]
    if launch.subcommand:
        words.append(launch.subcommand)
    if launch.entry is not None and launch.entry.text:
        words.append(os.path.basename(launch.entry.text))
    elif launch.module:
        words += ["-m", launch.module]
    words += [w.text.split("=", 1)[0] for w in launch.argv if w.text and w.text.startswith("-")]
    text = " ".join(words)
    return text if len(text) <= MAX_COMMAND_CHARS else text[:MAX_COMMAND_CHARS - 3] + "..."


def run_launch(launch: "Launch") -> RunLaunch:
    """The :class:`RunLaunch` rules and the estimator see for ``launch``: its span (the launch
    file, absolute, and the command's first line), the processes in all, the nodes, the
    launcher's precision and distributed flags, and the sweep index."""
    path = os.path.abspath(launch.path)
    mixed = Setting.unknown(None)
    value = launch.mixed_precision
    if value is not None:
        line = value.line or launch.line
        if value.text is not None:
            mixed = Setting(value.text, Origin.LAUNCH, Span(path, line, 1), None,
                            f"{value.raw or value.text} ({os.path.basename(path)}:{line})")
        else:
            mixed = Setting.unknown(value.raw or None, Span(path, line, 1))
    return RunLaunch(span=Span(path, launch.line, 1), launcher=launch.launcher,
                     command=_command_text(launch), processes=_processes(launch, path),
                     nodes=_count_setting(launch.nodes, path, "nodes"),
                     mixed_precision=mixed, distributed=tuple(launch.distributed),
                     sweep=launch.sweep)


def assemble_run(setup: TrainingSetup, launch: "Launch | None",
                 distributed: "Distributed | None", files: Iterable[str]) -> TrainingSetup:
    """``setup`` as one run: ``run`` from ``launch`` (:func:`run_launch`; left as it is when
    ``launch`` is ``None``), ``distributed`` (left as it is when ``None``) and ``inputs``
    extended by ``files`` (absolute paths, present or not: the launch file, the configs, the
    files :func:`lintlora.extract.distributed.distributed_for` read), order kept, repeats and
    the setup's own file dropped. Pure: no file is read."""
    changes: dict = {}
    if launch is not None:
        changes["run"] = run_launch(launch)
    if distributed is not None:
        changes["distributed"] = distributed
    own = os.path.abspath(setup.path) if setup.path else None
    inputs = tuple(p for p in dict.fromkeys((*setup.inputs, *(os.path.abspath(f) for f in files)))
                   if p != own)
    if inputs != setup.inputs:
        changes["inputs"] = inputs
    return replace(setup, **changes) if changes else setup


def related_of(launch_span: Span) -> "RelatedLocation":
    """The ``RelatedLocation`` the engine adds to every finding of a launched run:
    ``"launched by run.sh:3"``."""
    from lintlora.findings import RelatedLocation

    return RelatedLocation(launch_span, f"launched by {os.path.basename(launch_span.path)}:"
                                        f"{launch_span.line}")


if TYPE_CHECKING:  # pragma: no cover
    from lintlora.findings import RelatedLocation


# ---- finding the launches of a lint run -----------------------------------------------------

class LaunchIndex:
    """The launches of one lint run, found once per project root and kept for the run.

    :meth:`launches_for` gives the launches that start a file (found in the paths given and in
    the project around the file: :func:`lintlora.safeio.confinement_root`); the walk of a root
    is bounded (:data:`MAX_WALK_ENTRIES` entries, :data:`lintlora.extract.launch.MAX_FILES`
    launch files) and skips ``.git``, virtual environments, ``node_modules`` and build folders.
    """

    def __init__(self, names: Iterable[str] | None = None) -> None:
        # the file names (without suffix) of the files the lint will judge: a launch file that
        # names none of them is not parsed (see _mentions)
        self._names = None if names is None else tuple(sorted(
            {n.encode("utf-8", "surrogateescape") for n in names if n}))
        self._roots: dict[str, "LaunchDiscovery | None"] = {}
        self._by_entry: dict[str, list["Launch"]] = {}
        self._seen: dict[str, set["Launch"]] = {}
        self._walk_notes: dict[str, str] = {}
        self._root_of: dict[str, str] = {}

    def root_of(self, path: str) -> str:
        """The project root of ``path`` (resolved once per folder)."""
        from lintlora.safeio import confinement_root

        if os.path.islink(path):  # a link is resolved on its own
            return confinement_root(path)
        folder = os.path.dirname(os.path.abspath(path))
        root = self._root_of.get(folder)
        if root is None:
            root = self._root_of[folder] = confinement_root(path)
        return root

    def discovery(self, root: str) -> "LaunchDiscovery":
        """What the walk of ``root`` found (walked the first time it is asked)."""
        found = self._walked(root)
        if found is None:
            from lintlora.extract.launch_model import LaunchDiscovery

            return LaunchDiscovery()
        return found

    def _walked(self, root: str) -> "LaunchDiscovery | None":
        """:meth:`discovery`, ``None`` when the walk found no launch file (then the launch
        reader is not even imported: a one-file run in a project without launch files pays
        only the walk)."""
        if root in self._roots:
            return self._roots[root]
        candidates, note = _launch_candidates(root)
        if note:
            self._walk_notes[root] = note
        if self._names is not None:
            candidates = [c for c in candidates if _mentions(c, self._names)]
        found = None
        if candidates:
            from lintlora.extract.launch import discover_launches

            found = discover_launches(candidates, root=root)
            self.add(found)
        self._roots[root] = found
        return found

    def add_names(self, names: Iterable[str]) -> None:
        """More file names a launch file may name to be parsed (before the walk of a root)."""
        if self._names is not None:
            self._names = tuple(sorted(set(self._names) | {
                n.encode("utf-8", "surrogateescape") for n in names if n}))

    def add(self, found: "LaunchDiscovery") -> None:
        """Also map the launches of ``found`` (a named launch file's, read on its own) to the
        files they start (a launch already known is not added twice)."""
        for launch in found.launches:
            for entry in launched_files(launch):
                real = os.path.realpath(entry)
                known = self._by_entry.setdefault(real, [])
                seen = self._seen.setdefault(real, set())
                if launch not in seen:  # a set: 2,000 launches of one file stay linear
                    seen.add(launch)
                    known.append(launch)

    def walk_note(self, root: str) -> str | None:
        """Why the walk of ``root`` stopped early, or ``None``."""
        return self._walk_notes.get(root)

    def launches_for(self, path: str) -> tuple["Launch", ...]:
        """The launches that start ``path`` (the file's real path matched), in launch-file and
        line order."""
        self._walked(self.root_of(path))
        if not self._by_entry:
            return ()
        try:
            real = os.path.realpath(path)
        except ValueError:
            return ()
        found = self._by_entry.get(real, ())
        return tuple(sorted(found, key=lambda l: (l.path, l.line, l.sweep or 0)))


_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".sbatch")
_LAUNCH_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile", "Procfile"})


def _maybe_launch_name(name: str, folder: str) -> bool:
    """A cheap superset of :func:`lintlora.extract.launch.launch_file_kind` by name alone (so
    a walk over files that are no launch files imports no shell reader): shell and SLURM
    suffixes, Makefiles, ``Procfile``, a workflow's YAML, an extensionless file (its shebang
    is then checked)."""
    if name.endswith(_SHELL_SUFFIXES) or name in _LAUNCH_NAMES or name.endswith(".mk"):
        return True
    if name.endswith((".yml", ".yaml")):
        return os.path.basename(folder) == "workflows" and \
            os.path.basename(os.path.dirname(folder)) == ".github"
    return "." not in name


def _launch_candidates(root: str) -> tuple[list[str], str | None]:
    """The launch files under ``root`` by name (:func:`lintlora.extract.launch.launch_file_kind`)
    or, for an extensionless file, by a shell shebang in its first 128 bytes. Not entered:
    folders of :data:`_SKIP`, hidden folders but ``.github``, linked folders, and folders
    marked as caches (a ``CACHEDIR.TAG``, https://bford.info/cachedir/: lintlora's own results
    cache among them). Bounded: see :class:`LaunchIndex`."""
    from lintlora import safeio

    out: list[str] = []
    seen = 0
    pending = [root]
    kind_of = None
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        if any(e.name == "CACHEDIR.TAG" for e in entries):
            continue
        subfolders = []
        for entry in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                return sorted(out), (f"more than {MAX_WALK_ENTRIES} files and folders in the "
                                     f"project {root}: launch files beyond were not looked for")
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in _SKIP and (not name.startswith(".") or name == ".github"):
                        subfolders.append(entry.path)
                    continue
                if not _maybe_launch_name(name, folder) or not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if kind_of is None:
                from lintlora.extract.launch import launch_file_kind as kind_of
            if kind_of(entry.path) is None:
                try:
                    head = safeio.read_bounded(entry.path, 1 << 16, follow_links=False)[:128]
                except OSError:
                    continue
                if not head.startswith(b"#!") or kind_of(entry.path, head.decode("latin-1")) is None:
                    continue
            out.append(entry.path)
            if len(out) >= _max_files():
                return sorted(out), (f"more than {_max_files()} launch files in the project "
                                     f"{root}: the rest were not read")
        pending.extend(reversed(subfolders))  # depth first, in name order: deterministic
    return sorted(out), None


def _mentions(path: str, names: tuple[bytes, ...]) -> bool:
    """Whether the launch file ``path`` holds one of ``names`` (the linted files' names without
    suffix: ``train`` for ``train.py``, ``python -m src.train``, ``--config train.yaml``), read
    bounded without following a link. A launch can only start a file it names; one that names
    none of the linted files is not parsed (shell parsing is the costly part of discovery).
    A file that cannot be read is kept (discovery then says why)."""
    from lintlora import safeio
    from lintlora.extract.launch_model import MAX_LAUNCH_FILE_BYTES

    try:
        data = safeio.read_bounded(path, MAX_LAUNCH_FILE_BYTES, follow_links=False)
    except (OSError, ValueError):
        return True
    return any(name in data for name in names)


def _max_files() -> int:
    from lintlora.extract.launch import MAX_FILES

    return MAX_FILES


def problem_codes(problem: "LaunchProblem") -> str:
    """The diagnostic code of a launch problem: ``LL000`` (not readable as shell) or
    ``LL998`` (a limit, or a file that cannot be opened: an input problem, not lintlora's bug)."""
    return "LL000" if problem.code == "LL000" else "LL998"
