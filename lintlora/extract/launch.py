"""Launch discovery: the commands in a repository's run scripts that start training.

Entry points:

- :func:`discover_launches` ``(paths, *, root=None) -> LaunchDiscovery``: reads the given files
  (folders are walked, bounded) through :func:`lintlora.safeio.read_bounded`, each confined to
  its project (:func:`lintlora.safeio.confinement_root`, or ``root``), and returns every launch
  found, every problem (never an exception for bad input) and the files read.
- :func:`launches_in_text` ``(text, path, kind=None) -> LaunchDiscovery``: the same for text
  already read (pure: no file is opened).
- :func:`launch_file_kind` ``(path, head="")``: ``"shell"``, ``"sbatch"``, ``"makefile"``,
  ``"procfile"``, ``"workflow"`` or ``None``.

What is read (the data: :mod:`lintlora.extract.launch_model`):

- shell scripts (``*.sh``/``*.bash``/``*.zsh``/``*.slurm``/``*.sbatch``, or a ``sh``/``bash``/
  ``zsh``/``dash``/``ksh`` shebang) with :mod:`lintlora.extract.launch_shell`;
- SLURM batch scripts: a shell script with ``#SBATCH`` lines (``--nodes``/``-N``,
  ``--ntasks-per-node``, ``--gres=gpu[:type]:N``, ``--gpus-per-node``, ``--gpus``/``-G``),
  attached to each launch of the file as :class:`SlurmRequest`;
- Makefiles (``Makefile``, ``makefile``, ``GNUmakefile``, ``*.mk``): each recipe line is its own
  shell (as make runs it), after make's own expansion of ``$(VAR)``/``${VAR}`` from the simple
  assignments of the same Makefile (``=``, ``:=``, ``::=``, ``?=``, ``export VAR =``; ``$$`` is
  ``$``). A variable the Makefile does not assign, make functions (``$(shell ...)``,
  ``$(wildcard ...)``) and automatic variables (``$@``) are unknown. A value given on make's
  command line (``make train MODEL=x``) would replace the Makefile's: the Makefile's is reported;
- ``Procfile``: ``name: command`` lines;
- GitHub workflows (``.github/workflows/*.yml``): every ``jobs.<job>.steps[*].run``, read
  with the project's YAML loader, with the workflow's, job's and step's ``env:`` (a
  ``${{ ... }}`` expression is unknown) and ``working-directory`` (the repository is the folder
  above ``.github``); a step whose ``shell:`` (or the job's / workflow's ``defaults.run.shell``,
  or a Windows runner's default, ``pwsh``) is not ``bash``/``sh`` is skipped.

The layering: this module reads files and returns data; it imports only the model layer
(:mod:`lintlora.safeio`, :mod:`lintlora.training_setup`) and extraction.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from lintlora.extract import ExtractError
from lintlora.extract.launch_argv import Classified, classify, visible_device_count
from lintlora.extract.launch_model import (
    LIMIT_CODE, MAX_ENV, MAX_LAUNCH_FILE_BYTES, MAX_LAUNCHES, MAX_EXPANSION_DEPTH, SYNTAX_CODE,
    ConfigRef, Count, EnvVar, Launch, LaunchDiscovery, LaunchProblem, ShellValue, SlurmRequest,
)
from lintlora.extract.launch_shell import Command, Evaluator, LineMap, ShellError, parse, tokenize
from lintlora import safeio

__all__ = ["discover_launches", "launches_in_text", "launch_file_kind", "MAX_FILES"]

MAX_FILES = 2_000
"""Files looked at per folder walk at most (a repository's run scripts are a few dozen)."""
_SKIP_FOLDERS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                 "site-packages", ".pytest_cache", "build", "dist"}
_SHEBANG = re.compile(r"#!\s*\S*?(?:/|env\s+)(?:ba|z|da|k)?sh\b")
_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".sbatch")
_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")


def launch_file_kind(path: str, head: str = "") -> str | None:
    """What kind of launch file ``path`` is, from its name and (for a file without a known
    name) its first line ``head``; ``None`` when it is none."""
    name = os.path.basename(path)
    norm = path.replace(os.sep, "/")
    if name == "Procfile":
        return "procfile"
    if name in _MAKEFILES or name.endswith(".mk"):
        return "makefile"
    if "/.github/workflows/" in "/" + norm and name.endswith((".yml", ".yaml")):
        return "workflow"
    if name.endswith(_SHELL_SUFFIXES) or _SHEBANG.match(head.split("\n", 1)[0]):
        return "sbatch" if re.search(r"^#SBATCH\b", head, re.M) else "shell"
    return None


def discover_launches(paths, *, root: str | None = None) -> LaunchDiscovery:
    """The launches in ``paths`` (files, or folders walked for launch files). Every file is
    read with a byte bound (:data:`MAX_LAUNCH_FILE_BYTES`), without following a symbolic link,
    and only when it lies inside ``root`` (default: each path's own project,
    :func:`lintlora.safeio.confinement_root`)."""
    launches: list[Launch] = []
    problems: list[LaunchProblem] = []
    read: list[str] = []
    for path in _candidates(paths, problems):
        if launch_file_kind(path) is None and "." in os.path.basename(path):
            continue  # named, but by its name no launch file (train.py, cfg.yaml): not read
        top = root if root is not None else safeio.confinement_root(path)
        if not safeio.is_within(path, top):
            problems.append(LaunchProblem(path, None, None, "outside the project: not read",
                                          LIMIT_CODE))
            continue
        try:
            data = safeio.read_bounded(path, MAX_LAUNCH_FILE_BYTES, follow_links=False)
        except safeio.UnsafeFileError as exc:
            problems.append(LaunchProblem(path, None, None, str(exc),
                                          LIMIT_CODE if exc.reason == "size" else "LL999"))
            continue
        except OSError as exc:
            problems.append(LaunchProblem(path, None, None, f"cannot be read: {exc.strerror}",
                                          "LL999"))
            continue
        read.append(os.path.abspath(path))
        text, problem = _decode(data, path)
        if problem is not None:
            problems.append(problem)
            continue
        kind = launch_file_kind(path, text[:4096])
        if kind is None:
            continue  # an extensionless file without a shell shebang
        found = launches_in_text(text, path, kind)
        launches.extend(_located(launch, top) for launch in found.launches)
        problems.extend(found.problems)
    return LaunchDiscovery(tuple(launches), tuple(problems), tuple(read))


def _candidates(paths, problems: list[LaunchProblem]):
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    seen = 0
    for path in paths:
        path = os.fspath(path)
        if os.path.isdir(path) and not os.path.islink(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_FOLDERS
                                 and not os.path.islink(os.path.join(folder, d)))
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if launch_file_kind(full) is None and not _maybe_script(full, name):
                        continue
                    seen += 1
                    if seen > MAX_FILES:
                        problems.append(LaunchProblem(path, None, None, (
                            f"more than {MAX_FILES} launch files: the rest is not read"),
                            LIMIT_CODE))
                        return
                    yield full
        else:
            yield path


def _maybe_script(full: str, name: str) -> bool:
    """An extensionless file whose first bytes are a shell shebang (read bounded: 128 bytes)."""
    if "." in name or os.path.islink(full):
        return False
    try:
        head = safeio.read_bounded(full, 1 << 16, follow_links=False)[:128]
    except OSError:
        return False
    return bool(_SHEBANG.match(head.decode("latin-1")))


def _decode(data: bytes, path: str) -> tuple[str, LaunchProblem | None]:
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return "", LaunchProblem(path, line, nul - (data.rfind(b"\n", 0, nul) + 1) + 1,
                                 "binary data (a NUL byte): not read as a launch file")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return "", LaunchProblem(path, line, exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1,
                                 "not UTF-8 text: not read as a launch file")


def launches_in_text(text: str, path: str, kind: str | None = None) -> LaunchDiscovery:
    """The launches in ``text``, read as the launch file ``path`` of ``kind`` (default:
    :func:`launch_file_kind`; ``"shell"`` when that says none). Opens no file."""
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        return LaunchDiscovery((), (LaunchProblem(path, line, None, (
            "binary data (a NUL byte): not read as a launch file")),))
    if len(text) > MAX_LAUNCH_FILE_BYTES:
        return LaunchDiscovery((), (LaunchProblem(path, None, None, (
            f"above the {MAX_LAUNCH_FILE_BYTES // 2**20} MiB limit of a launch file"),
            LIMIT_CODE),))
    kind = kind or launch_file_kind(path, text[:4096]) or "shell"
    out = _Collector(path, kind)
    try:
        if kind == "makefile":
            _makefile(text, out)
        elif kind == "procfile":
            _procfile(text, out)
        elif kind == "workflow":
            _workflow(text, out)
        else:
            if kind == "sbatch" or re.search(r"^#SBATCH\b", text, re.M):
                out.kind = "sbatch"
                out.slurm = _sbatch(text)
            out.shell(text, LineMap(text))
    except RecursionError:  # pragma: no cover - every walk is bounded; a last guard
        out.problem(None, None, "nested too deeply to read", LIMIT_CODE)
    return LaunchDiscovery(tuple(out.launches), tuple(out.problems))


class _Collector:
    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.launches: list[Launch] = []
        self.problems: list[LaunchProblem] = []
        self.slurm: SlurmRequest | None = None
        self.full = False

    def problem(self, line, column, message, code=SYNTAX_CODE) -> None:
        self.problems.append(LaunchProblem(self.path, line, column, message, code))

    def shell(self, text: str, lines: LineMap, env: dict[str, ShellValue] | None = None,
              workdir: str | None = None) -> None:
        if self.full:
            return
        tree = self._tree(text, lines)
        if not tree:
            return
        notes: list = []
        evaluator = Evaluator(self.path, text, lines, self.command, env=env, workdir=workdir,
                              problems=notes)
        evaluator.run(tree)
        for message, offset, code in notes:
            self.problem(lines.line(offset), lines.column(offset), message, code)

    def _tree(self, text: str, lines: LineMap) -> list:
        try:
            return parse(tokenize(text))
        except ShellError as exc:
            self.problem(lines.line(exc.offset), lines.column(exc.offset),
                         f"{exc.message}: the shell text from here is not read", exc.code)
            cut = text.rfind("\n", 0, exc.offset)
            if cut <= 0:
                return []
            try:  # the complete commands before the line of the problem, as bash runs them
                return parse(tokenize(text[:cut + 1]))
            except ShellError:
                return []

    def command(self, command: Command) -> bool:
        found = classify(command.fields)
        if found is None:
            return True
        if len(self.launches) >= MAX_LAUNCHES:
            self.problem(command.line, command.column,
                         f"more than {MAX_LAUNCHES} launches in the file: the rest is not read",
                         LIMIT_CODE)
            self.full = True
            return False
        self.launches.append(_launch(self.path, self.kind, command, found, self.slurm))
        return True


def _launch(path: str, kind: str, command: Command, found: Classified,
            slurm: SlurmRequest | None) -> Launch:
    workdir = command.workdir
    env: dict[str, EnvVar] = {}
    for name, value in command.exported:
        if not name.startswith("__lintlora_"):  # the stand-ins for make / GitHub expressions
            env[name] = EnvVar(name, value, False)
    for name, value in command.prefixes + found.env:
        env[name] = EnvVar(name, value, True)
    env_vars = tuple(list(env.values())[:MAX_ENV])
    visible = found.visible_gpus
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None and cvd is not None:
        visible = visible_device_count(
            ShellValue(cvd.value.text, cvd.value.origin, cvd.value.raw,
                       cvd.value.line if cvd.prefix or not cvd.value.assigned_line
                       else cvd.value.assigned_line), "CUDA_VISIBLE_DEVICES")
        if not cvd.prefix and cvd.value.assigned_line:
            visible = Count(visible.value, visible.text, visible.source, cvd.value.assigned_line)
    if found.launcher == "llamafactory" and found.subcommand == "train":
        _llamafactory_env(found, env)
    entry_path = _resolve(found.entry, workdir) if found.entry is not None else None
    configs = tuple(ConfigRef(role, option, value, _resolve(value, workdir))
                    for role, option, value in found.configs)
    return Launch(
        path=path, line=command.line, source_kind=kind, launcher=found.launcher,
        launcher_argv=tuple(found.launcher_argv), entry=found.entry, entry_path=entry_path,
        module=found.module, subcommand=found.subcommand, argv=tuple(found.argv),
        processes_per_node=found.processes_per_node, nodes=found.nodes,
        processes=found.processes, visible_gpus=visible, distributed=tuple(found.distributed),
        mixed_precision=found.mixed_precision, configs=configs, env=env_vars, workdir=workdir,
        sweep=command.sweep, loop_values=command.loop_values, slurm=slurm,
        function=command.function)


def _llamafactory_env(found: Classified, env: dict[str, EnvVar]) -> None:
    """``llamafactory-cli train`` starts torchrun itself when ``FORCE_TORCHRUN`` is set or more
    than one device is visible, with ``--nproc_per_node $NPROC_PER_NODE`` (default: the device
    count) and ``--nnodes $NNODES`` (default 1): ``src/llamafactory/launcher.py`` ``launch()``,
    hiyouga/LLaMA-Factory ff6d4d12e (2026-08-18). The variables given are recorded here; their
    defaults (the visible device count) are the caller's to apply."""
    for name, attribute in (("NPROC_PER_NODE", "processes_per_node"), ("NNODES", "nodes")):
        var = env.get(name)
        if var is not None and getattr(found, attribute) is None:
            line = var.value.line if var.prefix or not var.value.assigned_line \
                else var.value.assigned_line
            text = var.value.text
            number = int(text) if text is not None and re.fullmatch(r"[1-9][0-9]{0,5}", text) \
                else None
            setattr(found, attribute, Count(number, text, name, line))
    force = env.get("FORCE_TORCHRUN")
    if force is not None and (force.value.text or "").lower() in ("true", "y", "1"):  # is_env_enabled
        found.distributed.append("FORCE_TORCHRUN")


def _resolve(value: ShellValue, workdir: str | None) -> str | None:
    if not value.known or not value.text:
        return None
    if os.path.isabs(value.text):
        return os.path.normpath(value.text)
    if workdir is None:
        return None
    return os.path.normpath(os.path.join(workdir, value.text))


def _search_folders(path: str, root: str) -> tuple[str, ...]:
    """The launch file's folder and each folder above it, up to ``root`` (bounded)."""
    folder = os.path.dirname(os.path.realpath(path))
    top = os.path.realpath(root)
    found: list[str] = []
    for _ in range(64):
        # both resolved already: a lexical test (is_within would resolve every folder of a
        # deep tree again, per launch file: quadratic in the depth)
        if folder != top and not folder.startswith(top.rstrip(os.sep) + os.sep):
            break
        found.append(folder)
        if folder == top:
            break
        folder = os.path.dirname(folder)
    return tuple(found)


def _located(launch: Launch, root: str) -> Launch:
    """``launch`` with its relative entry and config paths found, when its working folder is
    unknown, as the first existing regular file among :func:`_search_folders` (a run script
    is started from its own folder or from one above it, usually the repository's root:
    the file that exists there is the one meant; none found leaves the path ``None``)."""
    if launch.workdir is not None:
        return replace(launch, module_path=_module_file(launch.module, (launch.workdir,), root)) \
            if launch.module else launch
    folders = _search_folders(launch.path, root)

    def find(value: ShellValue | None) -> str | None:
        if value is None or not value.known or not value.text or os.path.isabs(value.text):
            return _resolve(value, None) if value is not None else None
        for folder in folders:
            candidate = os.path.normpath(os.path.join(folder, value.text))
            if os.path.isfile(candidate) and safeio.is_within(candidate, root):
                return candidate  # (the cheap test first: most folders do not hold it)
        return None

    configs = tuple(replace(c, path=find(c.value)) for c in launch.configs)
    return replace(launch, entry_path=find(launch.entry), configs=configs,
                   path_search=folders, module_path=_module_file(launch.module, folders, root))


def _module_file(module: str | None, folders: tuple[str, ...], root: str) -> str | None:
    """The file ``python -m module`` runs when the module lies in the project: ``a/b.py`` or
    ``a/b/__main__.py`` under the first of ``folders`` that holds one (as ``sys.path[0]`` is
    the working folder under ``-m``); ``None`` for an installed package or an unknown name."""
    if not module or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*",
                                      module):
        return None
    relative = module.replace(".", os.sep)
    for folder in folders:
        for candidate in (relative + ".py", os.path.join(relative, "__main__.py")):
            full = os.path.normpath(os.path.join(folder, candidate))
            if os.path.isfile(full) and safeio.is_within(full, root):
                return full
    return None


# --- SLURM ----------------------------------------------------------------------------------

_GRES = re.compile(r"(?:^|,)gpu(?::[A-Za-z0-9_.-]+)?:([0-9]+)")


def _sbatch(text: str) -> SlurmRequest:
    found: dict[str, Count] = {}
    for number, line in enumerate(text.split("\n")[:2_000], start=1):
        m = re.match(r"#SBATCH\s+(.*)", line)
        if m is None:
            continue
        words = m.group(1).split("#", 1)[0].split()
        k = 0
        while k < len(words):
            word = words[k]
            name, _, value = word.partition("=")
            if not value and name in ("-N", "-G", "--nodes", "--gpus", "--gres",
                                      "--ntasks-per-node", "--gpus-per-node") \
                    and k + 1 < len(words):
                value = words[k + 1]
                k += 1
            elif name.startswith("-N") and len(name) > 2:
                name, value = "-N", name[2:]
            k += 1
            if name in ("-N", "--nodes"):
                found["nodes"] = _slurm_count(value.split("-")[0], "#SBATCH --nodes", number)
            elif name == "--ntasks-per-node":
                found["ntasks_per_node"] = _slurm_count(value, "#SBATCH --ntasks-per-node",
                                                        number)
            elif name == "--gres":
                g = _GRES.search(value)
                found["gpus_per_node"] = _slurm_count(g.group(1) if g else value,
                                                      "#SBATCH --gres", number)
            elif name == "--gpus-per-node":
                found["gpus_per_node"] = _slurm_count(value.rsplit(":", 1)[-1],
                                                      "#SBATCH --gpus-per-node", number)
            elif name in ("-G", "--gpus"):
                found["gpus"] = _slurm_count(value.rsplit(":", 1)[-1], "#SBATCH --gpus", number)
    return SlurmRequest(**found)


def _slurm_count(text: str, source: str, line: int) -> Count:
    value = int(text) if re.fullmatch(r"[1-9][0-9]{0,5}", text) else None
    return Count(value, text, source, line)


# --- Procfile -------------------------------------------------------------------------------

def _procfile(text: str, out: _Collector) -> None:
    for number, line in enumerate(text.split("\n"), start=1):
        m = re.match(r"([A-Za-z0-9_-]+):[ \t]*(.*)$", line)
        if m is None or not m.group(2).strip():
            continue
        command = m.group(2)
        out.shell(command, LineMap(command, number, m.start(2) + 1),
                  workdir=os.path.dirname(os.path.abspath(out.path)))


# --- Makefile -------------------------------------------------------------------------------

_MAKE_ASSIGN = re.compile(
    r"(?:export\s+|override\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*(::=|:=|\?=|\+=|!=|=)\s*(.*)$")
_MAKE_RULE = re.compile(r"([^\t#=:][^=]*?)\s*::?(?!=)(.*)$")


def _makefile(text: str, out: _Collector) -> None:
    raw_lines = text.split("\n")
    variables: dict[str, str | None] = {}
    in_rule = False
    recipes: list[tuple[int, str]] = []  # (first line, text with continuations kept)
    i = 0
    while i < len(raw_lines):
        number = i + 1
        line = raw_lines[i]
        logical = line
        while logical.endswith("\\") and i + 1 < len(raw_lines):
            i += 1
            nxt = raw_lines[i]
            logical += "\n" + (nxt[1:] if nxt.startswith("\t") and line.startswith("\t") else nxt)
        i += 1
        if line.startswith("\t") and in_rule:
            recipes.append((number, logical[1:]))
            continue
        word = logical.strip().split(None, 1)[0] if logical.strip() else ""
        if word == "define":  # a multi-line variable: its lines are not rules
            variables[logical.split(None, 2)[1] if len(logical.split()) > 1 else ""] = None
            while i < len(raw_lines) and raw_lines[i].strip() != "endef":
                i += 1
            i += 1
            continue
        if word in ("ifeq", "ifneq", "ifdef", "ifndef", "else", "endif"):
            continue  # conditionals: the recipes of every branch are read
        stripped = logical.split("#", 1)[0].strip() if not line.startswith("\t") else ""
        if not stripped:
            continue
        m = _MAKE_ASSIGN.match(stripped)
        if m is not None:
            name, op, value = m.group(1), m.group(2), m.group(3).replace("\\\n", " ")
            if op == "!=":
                variables[name] = None
            elif op == "?=":
                variables.setdefault(name, value)
            elif op == "+=":
                old = variables.get(name, "")
                variables[name] = None if old is None else (old + " " + value).strip()
            else:
                variables[name] = value
            in_rule = False
            continue
        if _MAKE_RULE.match(stripped):
            in_rule = True
            continue
        in_rule = False
    folder = os.path.dirname(os.path.abspath(out.path))
    for number, recipe in recipes:
        unknown: dict[str, ShellValue] = {}
        shell_text = _make_expand(recipe.lstrip("@-+ \t"), variables, unknown, 0,
                                  [_MAKE_BUDGET])
        if not shell_text.strip():
            continue
        column = len(recipe) - len(recipe.lstrip("@-+ \t")) + 2
        out.shell(shell_text, LineMap(shell_text, number, column, exact_columns=False),
                  env=unknown, workdir=folder)


_MAKE_BUDGET = 65_536
"""Characters make's expansion of one recipe line may produce at most (``A = $(B)$(B)...``
nested eight deep would otherwise grow exponentially); beyond it a reference is unknown."""


def _make_expand(text: str, variables: dict[str, str | None], unknown: dict[str, ShellValue],
                 depth: int, budget: list[int]) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "$" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
            continue
        if nxt in "({":
            close = ")" if nxt == "(" else "}"
            level, j = 0, i + 1
            while j < n:
                if text[j] == nxt:
                    level += 1
                elif text[j] == close:
                    level -= 1
                    if level == 0:
                        break
                j += 1
            ref = text[i + 2:j]
            i = j + 1
        else:
            ref = nxt
            i += 2
        value = variables.get(ref) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", ref) else None
        if value is not None and depth < MAX_EXPANSION_DEPTH and len(value) <= budget[0]:
            budget[0] -= len(value)
            out.append(_make_expand(value, variables, unknown, depth + 1, budget))
            continue
        key = f"__lintlora_make_{len(unknown)}"
        why = ("is not assigned in the Makefile" if ref not in variables and
               re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", ref) else "is not expanded")
        unknown[key] = ShellValue(None, "unknown", note=f"make's $({ref[:40]}) {why}")
        out.append("${" + key + "}")
    return "".join(out)


# --- GitHub workflows -----------------------------------------------------------------------

_GHA_EXPR = re.compile(r"\$\{\{.*?\}\}", re.S)


def _workflow(text: str, out: _Collector) -> None:
    from lintlora.extract.yaml_loader import YMap, YScalar, YSeq, load_config_text, to_python
    try:
        root = load_config_text(text, out.path)
    except ExtractError as exc:
        out.problem(exc.line, exc.column, exc.message, exc.code)
        return
    if not isinstance(root, YMap):
        return
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(out.path))))
    source_lines = text.split("\n")

    def env_of(node) -> dict[str, ShellValue]:
        found: dict[str, ShellValue] = {}
        entry = node.get("env") if isinstance(node, YMap) else None
        if entry is None or not isinstance(entry.value, YMap):
            return found
        for key, item in entry.value.entries.items():
            if isinstance(item.value, YScalar) and item.value.value is not None:
                value = str(item.value.value)
                line = item.value.span.line
                found[key] = ShellValue(None, "unknown", raw=value, line=line,
                                        note="a GitHub expression ${{ }}") \
                    if "${{" in value else ShellValue(value, "literal", raw=value, line=line)
        return found

    def own_or_default(node, key: str):
        """``node[key]``, or ``node.defaults.run[key]`` (a job's or the workflow's default)."""
        entry = node.get(key)
        if entry is None:
            defaults = node.get("defaults")
            run = defaults.value.get("run") if defaults and isinstance(defaults.value, YMap) \
                else None
            entry = run.value.get(key) if run and isinstance(run.value, YMap) else None
        return entry

    def workdir_of(node, default: str) -> str:
        if not isinstance(node, YMap):
            return default
        entry = own_or_default(node, "working-directory")
        if entry is not None and isinstance(entry.value, YScalar) and \
                isinstance(entry.value.value, str) and "${{" not in entry.value.value:
            return os.path.normpath(os.path.join(repo, entry.value.value))
        return default

    def shell_of(node) -> str | None:
        """The ``shell:`` of a step, or ``defaults.run.shell`` of a job or the workflow."""
        if not isinstance(node, YMap):
            return None
        entry = own_or_default(node, "shell")
        if entry is not None and isinstance(entry.value, YScalar):
            return str(entry.value.value)
        return None

    def on_windows(job) -> bool:
        runs_on = job.get("runs-on")
        return runs_on is not None and "windows" in str(to_python(runs_on.value)).lower()

    top_env = env_of(root)
    top_shell = shell_of(root)
    top_dir = workdir_of(root, repo)
    jobs = root.get("jobs")
    if jobs is None or not isinstance(jobs.value, YMap):
        return
    for job in jobs.value.entries.values():
        if not isinstance(job.value, YMap):
            continue
        job_env = {**top_env, **env_of(job.value)}
        job_dir = workdir_of(job.value, top_dir)
        job_shell = shell_of(job.value) or top_shell
        steps = job.value.get("steps")
        if steps is None or not isinstance(steps.value, YSeq):
            continue
        for step in steps.value.items:
            if not isinstance(step, YMap):
                continue
            run = step.get("run")
            if run is None or not isinstance(run.value, YScalar) or \
                    not isinstance(run.value.value, str):
                continue
            shell = shell_of(step) or job_shell or ("pwsh" if on_windows(job.value) else "bash")
            if not re.match(r"(ba|z)?sh\b", shell):
                continue  # pwsh, cmd, python: not shell text (a Windows runner's default is pwsh)
            env = {**job_env, **env_of(step)}
            script = run.value.value
            counter = [0]

            def expression(match) -> str:
                counter[0] += 1
                key = f"__lintlora_gha_{counter[0]}"
                env[key] = ShellValue(None, "unknown",
                                      note=f"the GitHub expression {match.group(0)[:60]}")
                return "${" + key + "}"

            script = _GHA_EXPR.sub(expression, script)
            start = run.value.span.line
            first = source_lines[start - 1] if 0 < start <= len(source_lines) else ""
            block = re.search(r"(^|:\s*)[|>][-+0-9]*\s*(#.*)?$", first) is not None
            base = start + 1 if block else start
            out.shell(script, LineMap(script, base, 1 if block else run.value.span.column,
                                      exact_columns=False),
                      env=env, workdir=workdir_of(step, job_dir))
