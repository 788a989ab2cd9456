"""The data that launch discovery returns (:mod:`lintlora.extract.launch`), and its limits.

A *launch* is one command that starts training: ``torchrun --nproc_per_node 4 train.py --fp16 True``
in ``run.sh`` line 3, with what the launcher itself says about the run (processes, nodes,
visible GPUs, the configs it names, mixed precision) and the arguments handed to the entry
point, each as a :class:`ShellValue` that says whether its text is known and where it came from.
Nothing here is ever run: a value the reader cannot follow (command substitution, a variable the
script never assigns, anything after ``source``/``eval``) is *unknown* (``text is None``), with a
note saying why, and never guessed.

This module is in the extraction layer and imports nothing of lintlora.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ShellValue", "Count", "ConfigRef", "EnvVar", "SlurmRequest", "Launch", "LaunchProblem",
    "LaunchDiscovery", "MAX_LAUNCH_FILE_BYTES", "MAX_COMMANDS", "MAX_LAUNCHES",
    "MAX_LOOP_VALUES", "MAX_SWEEP", "MAX_NESTING", "MAX_WORD_CHARS", "MAX_EXPANSION_DEPTH",
    "MAX_CALL_DEPTH", "MAX_ENV", "MAX_FIELDS", "MAX_ARRAY_EXPANSION", "MAX_TOKENS", "LIMIT_CODE", "SYNTAX_CODE",
]

MAX_LAUNCH_FILE_BYTES = 1 * 2**20
"""Largest launch file read (bytes, 1 MiB). Real run scripts, Makefiles and workflows are a
few KB; a larger file is refused with a diagnostic before it is read."""
MAX_TOKENS = 100_000
"""Shell tokens (words and operators) of one file read at most (a 4,800-line installer script
has about 40,000; tokenizing 100,000 takes about 0.6 s here)."""
MAX_COMMANDS = 4_000
"""Simple commands evaluated per file at most (loop and function replays count again)."""
MAX_LAUNCHES = 256
"""Launches returned per file at most."""
MAX_LOOP_VALUES = 16
"""Values of one ``for`` loop followed at most (one launch per value): a sweep of 16 runs."""
MAX_SWEEP = 64
"""Iterations of nested ``for`` loops followed at most, all levels together."""
MAX_NESTING = 32
"""Nesting depth of shell constructs (``$(``, quotes, ``if``, loops, groups) read at most."""
MAX_WORD_CHARS = 4_096
"""Characters of one expanded word (or variable value) at most; a longer one is unknown."""
MAX_FIELDS = 4_096
"""Items of one array after expansion at most (``A=("${A[@]}" "${A[@]}")`` doubles an array
per line); a longer array is unknown."""
MAX_ARRAY_EXPANSION = 200_000
"""Array items expanded in one file at most (each ``${A[@]}`` costs the array's length; past
it, a word expanding an array is unknown)."""
MAX_EXPANSION_DEPTH = 8
"""Nesting of ``${VAR:-${OTHER:-default}}`` defaults followed at most."""
MAX_CALL_DEPTH = 4
"""Nesting of calls to functions the script defines followed at most (never recursively)."""
MAX_ENV = 64
"""Environment variables recorded per launch at most."""

LIMIT_CODE = "LL998"
"""Problem code for input refused by one of these limits (as for a file above --max-file-size)."""
SYNTAX_CODE = "LL000"
"""Problem code for text the shell reader cannot parse (an unterminated quote, binary data)."""


@dataclass(frozen=True)
class ShellValue:
    """One word of a launch command after the shell's expansions, as far as they can be followed.

    Attributes:
        text: the value, or ``None`` when it is unknown.
        origin: ``"literal"`` (written in the command), ``"variable"`` (from a variable assigned
            in the launch file, see ``assigned_line``), ``"default"`` (the default of
            ``${VAR:-default}`` / ``${1:-default}``: the value unless the environment or the
            caller sets ``VAR``), ``"unknown"``.
        raw: the word as written (quotes and ``$`` kept).
        line: 1-based line of the word in the launch file.
        note: why the value is unknown, or which default it is (a sentence fragment).
        assigned_line: the line of the assignment the value came from, when it came from one
            variable of the file.
        column: 1-based column of the word as written on ``line`` (0: not known).
    """

    text: str | None
    origin: str
    raw: str = ""
    line: int = 0
    note: str = ""
    assigned_line: int | None = None
    column: int = 0

    @property
    def known(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class Count:
    """A number of processes, nodes or GPUs, with where it was stated.

    ``value`` is ``None`` when the text is not a plain positive integer (``--nproc_per_node
    gpu``, ``--nnodes 1:4``, an unknown variable); ``text`` keeps what was written then.
    ``source`` names what stated it (``"--nproc_per_node"``, ``"CUDA_VISIBLE_DEVICES"``,
    ``"#SBATCH --gres"``); ``line`` is 1-based in the launch file.
    """

    value: int | None
    text: str | None
    source: str
    line: int


@dataclass(frozen=True)
class ConfigRef:
    """A configuration file a launch names.

    ``role``: ``"accelerate"`` (``accelerate launch --config_file``), ``"deepspeed"`` (a
    DeepSpeed JSON: ``--deepspeed_config_file``, the script's ``--deepspeed x.json``),
    ``"llamafactory"``, ``"axolotl"``, ``"torchtune"``, ``"litgpt"`` (the dialect's YAML),
    ``"argument"`` (any other ``.json``/``.yaml``/``.yml`` argument of the entry point).
    ``option`` is the option that named it (``None`` for a positional argument); ``path`` is
    resolved against the launch's working folder (``None`` when that or the value is
    unknown); ``value`` is the word as read.
    """

    role: str
    option: str | None
    value: ShellValue
    path: str | None


@dataclass(frozen=True)
class EnvVar:
    """A variable in the environment of the launched process: exported in the launch file
    (``export VAR=...``) or a prefix of the command (``VAR=value cmd``; ``prefix`` true)."""

    name: str
    value: ShellValue
    prefix: bool


@dataclass(frozen=True)
class SlurmRequest:
    """What an ``sbatch`` script's ``#SBATCH`` lines ask for (each ``None`` when not stated)."""

    nodes: Count | None = None
    ntasks_per_node: Count | None = None
    gpus_per_node: Count | None = None
    gpus: Count | None = None


@dataclass(frozen=True)
class Launch:
    """One command that starts a training entry point.

    Attributes:
        path: the launch file (as given); ``line`` the 1-based line of the command's first word
            (for a command continued over several lines, its first line).
        source_kind: ``"shell"``, ``"makefile"``, ``"procfile"``, ``"workflow"``, ``"sbatch"``.
        launcher: ``"python"``, ``"torchrun"`` (also ``python -m torch.distributed.run`` /
            ``.launch``), ``"accelerate"``, ``"deepspeed"``, ``"llamafactory"`` (``llamafactory-cli``
            / ``python -m llamafactory.cli``), ``"axolotl"``, ``"tune"``, ``"litgpt"``.
        launcher_argv: the launcher's own words before the entry point (``--nproc_per_node``, 4).
        entry: the script as written (``None`` for a module or a CLI subcommand);
            ``entry_path`` it resolved against the working folder (``cd`` followed; see
            ``path_search`` when that is unknown), absolute, ``None`` when unknown; ``module``: the ``-m`` module (``axolotl.cli.train``) or the
            torchtune recipe named (``lora_finetune_distributed``).
        module_path: the file of ``module`` when it lies in the project (``src/train.py`` for
            ``python -m src.train``; set by :func:`discover_launches` only), else ``None``.
        subcommand: ``llamafactory-cli``/``axolotl``/``tune``/``litgpt``'s subcommand
            (``train``, ``run``, ``finetune_lora``; ``litgpt finetune lora`` is
            ``finetune_lora``), and the last part of an ``axolotl.cli.*`` module.
        argv: the words after the entry point (the script's own arguments).
        processes_per_node, nodes, processes (the world size where the launcher states the total,
        as ``accelerate --num_processes`` does), visible_gpus (``CUDA_VISIBLE_DEVICES``,
        ``deepspeed --include``, ``accelerate --gpu_ids``).
        distributed: the launcher's distributed flags, as written (``"--multi_gpu"``,
            ``"--use_deepspeed"``, ``"--use_fsdp"``, ``"--standalone"``).
        mixed_precision: the launcher's precision option (``accelerate --mixed_precision``,
            litgpt ``--precision``).
        configs: the config files named (:class:`ConfigRef`).
        env: the environment given to the process (:class:`EnvVar`).
        workdir: the folder the command runs in, absolute, ``None`` when unknown (a shell
            script runs in its caller's folder unless it ``cd``s; a Makefile recipe in the
            Makefile's folder; a workflow step in the repository or its
            ``working-directory``; a Procfile command in the Procfile's folder).
        path_search: when ``workdir`` is unknown, the folders :func:`discover_launches` looked
            in for the relative entry and config paths (the launch file's folder, then each
            one above it up to the project root; the first existing file is taken); empty
            otherwise (and from ``launches_in_text``, which opens no file).
        sweep: 0-based index of the iteration when the command is inside ``for`` loops over
            literal values (``None`` outside a loop); ``loop_values`` the loop variables and
            their values for it.
        slurm: the ``#SBATCH`` request of an sbatch script.
        function: the shell function the command was reached through, when it was.
    """

    path: str
    line: int
    source_kind: str
    launcher: str
    launcher_argv: tuple[ShellValue, ...] = ()
    entry: ShellValue | None = None
    entry_path: str | None = None
    module: str | None = None
    module_path: str | None = None
    subcommand: str | None = None
    argv: tuple[ShellValue, ...] = ()
    processes_per_node: Count | None = None
    nodes: Count | None = None
    processes: Count | None = None
    visible_gpus: Count | None = None
    distributed: tuple[str, ...] = ()
    mixed_precision: ShellValue | None = None
    configs: tuple[ConfigRef, ...] = ()
    env: tuple[EnvVar, ...] = ()
    workdir: str | None = None
    path_search: tuple[str, ...] = ()
    sweep: int | None = None
    loop_values: tuple[tuple[str, str], ...] = ()
    slurm: SlurmRequest | None = None
    function: str | None = None


@dataclass(frozen=True)
class LaunchProblem:
    """Something the reader could not read or follow, with its place (1-based line/column).

    ``code``: :data:`SYNTAX_CODE` (not readable as shell / YAML), :data:`LIMIT_CODE` (beyond a
    limit) or ``"LL999"`` (a file that could not be opened)."""

    path: str
    line: int | None
    column: int | None
    message: str
    code: str = SYNTAX_CODE


@dataclass(frozen=True)
class LaunchDiscovery:
    """What :func:`lintlora.extract.launch.discover_launches` found: the launches, the problems,
    and every file it read (absolute paths: the inputs a cached result depends on)."""

    launches: tuple[Launch, ...] = ()
    problems: tuple[LaunchProblem, ...] = ()
    files_read: tuple[str, ...] = field(default=())
