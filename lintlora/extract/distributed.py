"""The distribution of a run: processes, DeepSpeed ZeRO, FSDP, mixed precision (issue 15).

:func:`distributed_for` reads what the launch and the files it names say (the launcher's
flags, an accelerate config YAML, a DeepSpeed JSON) and what the setup itself says
(``deepspeed=``, ``fsdp=``/``fsdp_config=``, a dialect's ``deepspeed:``/``fsdp:`` keys, litgpt
``devices``, a torchtune ``*_distributed`` recipe) into one
:class:`lintlora.training_setup.Distributed` section. Files are read bounded
(:func:`lintlora.safeio.read_text_bounded`, :data:`MAX_CONFIG_BYTES`) with the project's bounded
YAML/JSON loader (:mod:`lintlora.extract.yaml_loader`, so every value keeps its line) and only
inside the project (``root``); nothing is ever run. A file that cannot be read is a
:class:`~lintlora.extract.launch_model.LaunchProblem` with its path and line, never an exception.
This module is in the extraction layer (it imports nothing of the estimator).

Precedence: what the run actually uses, highest first (a value of a higher source replaces a
lower one field by field; each Setting says where it came from):

1. **A DeepSpeed JSON's explicit values** (not ``"auto"``): DeepSpeed reads them as written.
   The JSON is the one the Trainer gets (TrainingArguments ``deepspeed=``, a path or a dict: the
   Trainer hands its ``HfTrainerDeepSpeedConfig`` to accelerate's DeepSpeed plugin and only
   without it propagates accelerate's own settings: transformers ``src/transformers/trainer.py``
   ``create_accelerator_and_postprocess``), else the launch's (``accelerate
   --deepspeed_config_file``, a script's ``--deepspeed x.json``), else the accelerate config's
   ``deepspeed_config.deepspeed_config_file``.
2. **The launcher's flags** (``torchrun --nproc_per_node × --nnodes``, ``accelerate
   --num_processes``/``--use_deepspeed``/``--zero_stage``/``--fsdp_*``/``--mixed_precision``,
   ``deepspeed --num_gpus``/``--num_nodes``/``--include``, ``tune run --nproc_per_node``,
   ``litgpt --devices``). accelerate's own flags override its config file: in
   ``accelerate/commands/launch.py`` ``_validate_launch_command`` (huggingface/accelerate
   @16cb6eb8) the config's ``distributed_type`` is used only when no ``--multi_gpu``/
   ``--use_deepspeed``/``--use_fsdp`` flag is given, ``num_processes``/``num_machines`` only
   when the flag is absent (``getattr(args, name) is None``), nested ``deepspeed_config``/
   ``fsdp_config`` keys only when not in ``args.nondefault`` (given on the command line), and
   ``mixed_precision`` only when ``--mixed_precision`` is absent. Both spellings
   ``--flag_name``/``--flag-name`` are accepted (``accelerate/commands/utils.py``
   ``_StoreAction`` adds the ``-`` form of every ``_`` option).
3. **The accelerate config YAML** named by ``--config_file``. accelerate's default config
   (``~/.cache/huggingface/accelerate/default_config.yaml``) lies outside the project and is
   never read: without ``--config_file`` a run under ``accelerate launch`` has whatever that
   file says, so the note says the default config is unknown.
4. **The setup's own keys**: TrainingArguments ``fsdp=``/``fsdp_config=`` (a dict or a JSON
   path; keys with or without the ``fsdp_`` prefix, which ``training_args.py``
   ``__post_init__`` strips: ``if k.startswith("fsdp_"): ... self.fsdp_config[k[5:]] = v``),
   axolotl ``fsdp:`` (list) / ``fsdp_config:`` / ``fsdp_version:``, litgpt ``devices``, a
   torchtune distributed recipe's header.
5. ``"auto"`` values of the DeepSpeed JSON: kept as ``"auto"`` only when nothing else states
   the field (the Trainer or accelerate fill them: ``integrations/deepspeed.py``
   ``trainer_config_process``).

The world size is ``processes`` where the launcher states the total (``accelerate
--num_processes``, the accelerate config's ``num_processes``), else processes per node × nodes
(``--nproc_per_node gpu``/``auto`` is the visible GPUs, ``CUDA_VISIBLE_DEVICES``); a plain
``python train.py`` is one process (``"single"``) unless the config says otherwise (litgpt
``devices`` starts its own processes through Lightning Fabric). With no launch at all the world
size stays unknown (set at launch).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from lintlora.extract.launch_model import LIMIT_CODE, SYNTAX_CODE, Count, Launch, LaunchProblem, ShellValue
from lintlora.training_setup import Distributed, Origin, Setting, Span, TrainingSetup

__all__ = ["distributed_for", "MAX_CONFIG_BYTES", "FSDP_STRATEGY_NUMBERS", "parse_fsdp_option"]

MAX_CONFIG_BYTES = 1 << 20
"""A DeepSpeed JSON or accelerate YAML larger than 1 MiB is refused (real ones are a few KB)."""
MAX_PATH_CHARS = 4096
"""A path value longer than this is no path (refused, as :func:`os.path` would be asked to
normalise anything)."""
MAX_WORLD = 1 << 16
"""Largest world size kept (65,536 processes); a larger stated count is refused as input."""

FSDP_STRATEGY_NUMBERS = {1: "FULL_SHARD", 2: "SHARD_GRAD_OP", 3: "NO_SHARD", 4: "HYBRID_SHARD",
                         5: "HYBRID_SHARD_ZERO2"}
"""accelerate's older configs write ``fsdp_sharding_strategy`` as 1-5: the 1-based index in
``FSDP_SHARDING_STRATEGY`` (accelerate ``src/accelerate/utils/constants.py``), read by
``FullyShardedDataParallelPlugin.__post_init__`` as ``ShardingStrategy(int)``."""
_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
_OFFLOAD_DEVICES = ("cpu", "nvme", "none")
_PRECISIONS = ("no", "fp16", "bf16", "fp8")

# precedence ranks (higher wins), see the module docstring
_AUTO, _SETUP, _ACCEL_CONFIG, _LAUNCH, _DS_JSON = 0, 10, 20, 30, 40

_ACCELERATE_DS_FLAGS = {  # accelerate launch.py DeepSpeed arguments -> field
    "--zero_stage": "zero_stage", "--offload_optimizer_device": "offload_optimizer",
    "--offload_param_device": "offload_param", "--gradient_accumulation_steps": "gradient_accumulation_steps",
    "--gradient_clipping": "gradient_clipping"}
_ACCELERATE_FSDP_FLAGS = {  # accelerate launch.py FSDP arguments -> field
    "--fsdp_sharding_strategy": "fsdp_sharding_strategy", "--fsdp_version": "fsdp_version",
    "--fsdp_offload_params": "fsdp_offload_params",
    "--fsdp_activation_checkpointing": "fsdp_activation_checkpointing",
    "--fsdp_cpu_ram_efficient_loading": "fsdp_cpu_ram_efficient_loading",
    "--fsdp_reshard_after_forward": "fsdp_reshard_after_forward"}
_ACCELERATE_VALUE_FLAGS = ("--config_file", "--mixed_precision", "--num_processes", "--num_machines",
                           "--deepspeed_config_file", "--gpu_ids", "--main_process_port", "--machine_rank",
                           "--main_process_ip", "--dynamo_backend", *_ACCELERATE_DS_FLAGS, *_ACCELERATE_FSDP_FLAGS)


# ---- values with places ------------------------------------------------------------------------

@dataclass
class _Acc:
    """The fields gathered so far, each with its precedence rank; files read and problems."""

    root: str
    values: dict[str, tuple[int, Setting]] = field(default_factory=dict)
    extra: dict[str, Setting] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    problems: list[LaunchProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config_path: str | None = None
    accelerate_config: str | None = None

    def put(self, name: str, setting: Setting | None, rank: int) -> None:
        if setting is None:
            return
        old = self.values.get(name)
        if old is None or rank >= old[0]:
            self.values[name] = (rank, setting)

    def get(self, name: str) -> Any:
        v = self.values.get(name)
        return None if v is None else v[1].value

    def rank(self, name: str) -> int:
        v = self.values.get(name)
        return -1 if v is None else v[0]

    def problem(self, path: str, line: int | None, message: str, code: str = SYNTAX_CODE,
                column: int | None = None) -> None:
        self.problems.append(LaunchProblem(path, line, column, message, code))

    def read_file(self, path: str) -> None:
        if path not in self.files:
            self.files.append(path)


def _base(path: str) -> str:
    return os.path.basename(path) or path


def _file_setting(value: Any, span: Span | None, what: str, key_span: Span | None = None) -> Setting:
    where = f" ({_base(span.path)}:{span.line})" if span is not None else ""
    return Setting(value, Origin.CONFIG_FILE, span, key_span, f"{what}{where}")


def _launch_setting(value: Any, launch: Launch, line: int, what: str) -> Setting:
    span = Span(launch.path, line or launch.line)
    return Setting(value, Origin.LAUNCH, span, None, f"{what} ({_base(launch.path)}:{span.line})")


def _derived(value: Any, s: Setting, what: str) -> Setting:
    """A value derived from a setup Setting, keeping its origin and place."""
    return Setting(value, s.origin, s.span, s.key_span, what)


# ---- conversions (None: not a value of the field) -------------------------------------------

def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.strip().lower() in ("true", "yes", "1")
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    return None


def _as_int(v: Any, lo: int, hi: int) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= 12:
        v = int(v.strip())
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        v = int(v)
    return v if isinstance(v, int) and lo <= v <= hi else None


def _as_number(v: Any) -> int | float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            v = float(v) if len(v) <= 40 else None
        except ValueError:
            return None
    if isinstance(v, (int, float)) and v == v and 0 <= v <= 1e15:
        return int(v) if float(v).is_integer() else float(v)
    return None


def _strategy(v: Any) -> str | None:
    if isinstance(v, int) and not isinstance(v, bool):
        return FSDP_STRATEGY_NUMBERS.get(v)
    if isinstance(v, str):
        t = v.strip().upper()
        if t.isdigit() and len(t) <= 2:
            return FSDP_STRATEGY_NUMBERS.get(int(t))
        t = t.rsplit(".", 1)[-1]  # ShardingStrategy.FULL_SHARD
        return t if t in _STRATEGIES else None
    return None


def _device(v: Any) -> str | None:
    if v is None:
        return "none"
    t = str(v).strip().lower() if isinstance(v, str) else None
    return t if t in _OFFLOAD_DEVICES else None


def _precision(v: Any) -> str | None:
    t = str(v).strip().lower() if isinstance(v, str) else None
    return t if t in _PRECISIONS else None


def parse_fsdp_option(value: Any) -> tuple[str | None, bool, list[str]]:
    """TrainingArguments ``fsdp=`` as transformers reads it (``training_args.py``: a string of
    ``FSDPOption`` words split on spaces, a list of them, ``True`` for ``full_shard`` in recent
    releases): ``(strategy or None, offload, words)``. ``strategy`` is upper case
    (``"FULL_SHARD"``; ``hybrid_shard_zero2`` -> ``"HYBRID_SHARD_ZERO2"``)."""
    if value is True:
        return "FULL_SHARD", False, ["full_shard"]
    if isinstance(value, (list, tuple)):
        words = [str(w).lower() for w in value[:16] if isinstance(w, str)]
    elif isinstance(value, str):
        words = value.lower().split()[:16]
    else:
        return None, False, []
    strategy = next((w.upper() for w in words if w.upper() in _STRATEGIES), None)
    return strategy, "offload" in words, words


# ---- reading files --------------------------------------------------------------------------

def _read_tree(acc: _Acc, path: str, *, kind: str, what: str, cited: Span | None) -> Any:
    """The positioned tree of the config at ``path`` (read inside the project), or ``None``
    with a problem. ``cited`` is where the file was named (for a file outside the project)."""
    from lintlora.extract import ExtractError
    from lintlora.extract.yaml_loader import load_config_text
    from lintlora.safeio import UnsafeFileError, is_within, read_text_bounded

    where_path = cited.path if cited is not None else path
    where_line = cited.line if cited is not None else None
    if not is_within(path, acc.root):
        acc.problem(where_path, where_line, f"{what} {path} lies outside the project ({acc.root}): not read",
                    LIMIT_CODE)
        return None
    acc.read_file(path)
    # a link inside the project is read at its target (checked inside above, realpath), and
    # that target is opened without following links (no swap between the check and the read)
    path = os.path.realpath(path) if os.path.islink(path) else path
    if not os.path.exists(path):
        # not a problem of the input (a config that lives elsewhere, a path relative to where
        # the run is started): the run's values from it are unknown, said in the notes
        acc.notes.append(f"{what} {_base(path)} not found in the project: its settings are unknown")
        return None
    try:
        text = read_text_bounded(path, MAX_CONFIG_BYTES, follow_links=False)
    except UnsafeFileError as exc:
        acc.problem(path, None, f"{what}: {exc}: not read",
                    LIMIT_CODE if exc.reason == "size" else SYNTAX_CODE)
        return None
    except UnicodeDecodeError:
        acc.problem(path, None, f"{what}: not UTF-8 text (binary data?): not read")
        return None
    except OSError as exc:
        acc.problem(path, None, f"{what}: cannot be read ({exc.strerror or exc}): not read", LIMIT_CODE)
        return None
    try:
        return load_config_text(text, path, kind=kind, max_chars=MAX_CONFIG_BYTES)
    except ExtractError as exc:
        acc.problem(path, exc.line, f"{what}: {exc.message}", exc.code, exc.column)
    except (RecursionError, ValueError) as exc:  # a guard: the loader bounds depth itself
        acc.problem(path, None, f"{what}: {type(exc).__name__}: not read")
    return None


def _resolve(value: str, bases: Iterable[str], root: str) -> str | None:
    """The first existing ``value`` under ``bases`` (absolute), else the first candidate."""
    if not value or len(value) > MAX_PATH_CHARS or "\x00" in value:
        return None
    value = os.path.expanduser(value) if value.startswith("~") else value
    cands = [os.path.normpath(value)] if os.path.isabs(value) else [
        os.path.normpath(os.path.join(b, value)) for b in bases if b]
    for c in cands:
        if os.path.isfile(c):
            return c
    return cands[0] if cands else None


class _Node:
    """A mapping value with places: a YAML/JSON :class:`YMap` (each key its own line), or a
    Python dict from the setup (every key at the setting's span)."""

    def __init__(self, node: Any, span: Span | None = None) -> None:
        self.node = node
        self.span = span

    def items(self) -> Iterable[tuple[str, Any, Span | None, Span | None]]:
        from lintlora.extract.yaml_loader import YMap, YScalar, YSeq, to_python

        n = self.node
        if isinstance(n, YMap):
            for k, e in list(n.entries.items())[:256]:
                v = e.value
                if isinstance(v, YScalar):
                    yield k, v.value, v.span, e.key_span
                elif isinstance(v, YMap):
                    yield k, _Node(v, v.span), v.span, e.key_span
                elif isinstance(v, YSeq):
                    try:
                        yield k, to_python(v, 1000), v.span, e.key_span
                    except ValueError:
                        continue
        elif isinstance(n, dict):
            for k, v in list(n.items())[:256]:
                if isinstance(k, str):
                    yield k, (_Node(v, self.span) if isinstance(v, dict) else v), self.span, self.span

    def get(self, key: str) -> tuple[Any, Span | None, Span | None] | None:
        for k, v, s, ks in self.items():
            if k == key:
                return v, s, ks
        return None


# ---- DeepSpeed JSON ---------------------------------------------------------------------------

def _read_deepspeed(acc: _Acc, cfg: _Node, label: str) -> None:
    """Fields of a DeepSpeed config (``deepspeed/runtime/config.py`` and ``runtime/zero/config.py``
    key names, microsoft/DeepSpeed@38327e07): explicit values at rank :data:`_DS_JSON`,
    ``"auto"`` at :data:`_AUTO`."""
    def put(name: str, value: Any, span: Span | None, what: str, key_span: Span | None = None,
            shown: Any = None) -> None:
        auto = value == "auto"
        text = f"{what} {(value if shown is None else shown)!r}"
        acc.put(name, _file_setting(value, span, f"{text} in {label}", key_span), _AUTO if auto else _DS_JSON)

    for key, name in (("train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu"),
                      ("train_batch_size", "train_batch_size"),
                      ("gradient_accumulation_steps", "gradient_accumulation_steps")):
        got = cfg.get(key)
        if got is not None:
            v = got[0] if got[0] == "auto" else _as_int(got[0], 1, 1 << 30)
            if v is None:
                acc.problem(got[1].path if got[1] else label, got[1].line if got[1] else None,
                            f"{key} {got[0]!r} in {label} is not a positive integer or \"auto\": not used")
            else:
                put(name, v, got[1], key, got[2])
    got = cfg.get("gradient_clipping")
    if got is not None:
        v = got[0] if got[0] == "auto" else _as_number(got[0])
        if v is not None:
            put("gradient_clipping", v, got[1], "gradient_clipping", got[2])
    for block, prec in (("bf16", "bf16"), ("fp16", "fp16")):
        got = cfg.get(block)
        if got is not None and isinstance(got[0], _Node):
            en = got[0].get("enabled")
            if en is not None:
                if en[0] == "auto":
                    put("mixed_precision", "auto", en[1], f"{block}.enabled", en[2])
                elif _as_bool(en[0]) is True:
                    put("mixed_precision", prec, en[1], f"{block}.enabled", en[2], True)
    if cfg.get("bfloat16") is not None and acc.rank("mixed_precision") < _DS_JSON:  # the older name
        got = cfg.get("bfloat16")
        if isinstance(got[0], _Node) and (en := got[0].get("enabled")) is not None and _as_bool(en[0]) is True:
            put("mixed_precision", "bf16", en[1], "bfloat16.enabled", en[2], True)
    zo = cfg.get("zero_optimization")
    if zo is None:
        return
    if not isinstance(zo[0], _Node):
        acc.problem(zo[1].path if zo[1] else label, zo[1].line if zo[1] else None,
                    f"zero_optimization in {label} is not a mapping: not read")
        return
    z = zo[0]
    st = z.get("stage")
    if st is not None:
        stage = _as_int(st[0], 0, 3) if not isinstance(st[0], str) else None
        if stage is None:
            acc.problem(st[1].path if st[1] else label, st[1].line if st[1] else None,
                        f"zero_optimization.stage {st[0]!r} in {label} is not 0-3: not used")
        else:
            put("zero_stage", stage, st[1], "zero_optimization.stage", st[2])
    for key, name in (("offload_optimizer", "offload_optimizer"), ("offload_param", "offload_param")):
        got = z.get(key)
        if got is None:
            continue
        if isinstance(got[0], _Node):
            dev = got[0].get("device")
            if dev is not None:
                d = _device(dev[0])
                if d is None:
                    acc.problem(dev[1].path if dev[1] else label, dev[1].line if dev[1] else None,
                                f"zero_optimization.{key}.device {dev[0]!r} in {label} is not cpu/nvme/none")
                else:
                    put(name, d, dev[1], f"zero_optimization.{key}.device", dev[2])
        elif got[0] is None:
            put(name, "none", got[1], f"zero_optimization.{key}", got[2])
    for key, name in (("reduce_bucket_size", "reduce_bucket_size"),
                      ("stage3_prefetch_bucket_size", "prefetch_bucket_size")):
        got = z.get(key)
        if got is not None:
            v = got[0] if got[0] == "auto" else _as_number(got[0])
            if v is not None:
                put(name, int(v) if v != "auto" else v, got[1], f"zero_optimization.{key}", got[2])
    got = z.get("overlap_comm")
    if got is not None and _as_bool(got[0]) is not None and not isinstance(got[0], str):
        put("overlap_comm", bool(got[0]), got[1], "zero_optimization.overlap_comm", got[2])


def _deepspeed_file(acc: _Acc, value: str, bases: list[str], cited: Span | None, label: str) -> bool:
    path = _resolve(value, bases, acc.root)
    if path is None:
        acc.problem(cited.path if cited else label, cited.line if cited else None,
                    f"DeepSpeed config {value[:200]!r} is not a path: not read")
        return False
    tree = _read_tree(acc, path, kind="json" if not path.endswith((".yaml", ".yml")) else "yaml",
                      what="DeepSpeed config", cited=cited)
    from lintlora.extract.yaml_loader import YMap

    if tree is None:
        return False
    if not isinstance(tree, YMap):
        acc.problem(path, getattr(getattr(tree, "span", None), "line", 1),
                    "DeepSpeed config is not a JSON object: not read")
        return False
    acc.config_path = path
    _read_deepspeed(acc, _Node(tree, tree.span), _base(path))
    # TrainingArguments(deepspeed=...) sets ACCELERATE_USE_DEEPSPEED (transformers training_args.py
    # __post_init__), so the Trainer runs DeepSpeed whatever the accelerate config's distributed_type
    acc.put("backend", _file_setting("deepspeed", tree.span, f"DeepSpeed config {_base(path)}"), _DS_JSON)
    return True


# ---- accelerate --------------------------------------------------------------------------------

def _flags(words: tuple[ShellValue, ...], value_flags: Iterable[str]) -> dict[str, tuple[str | None, int]]:
    """accelerate's own options as ``{"--name_with_underscores": (value or None, line)}``; the
    ``--flag-name`` and ``--flag=value`` forms are normalised (``accelerate/commands/utils.py``
    ``_StoreAction``)."""
    takes = {f for f in value_flags}
    out: dict[str, tuple[str | None, int]] = {}
    i = 0
    n = min(len(words), 512)
    while i < n:
        w = words[i]
        t = w.text or ""
        if t.startswith("--"):
            name, eq, val = t.partition("=")
            name = "--" + name[2:].replace("-", "_")
            if eq:
                out[name] = (val, w.line)
            elif name in takes and i + 1 < n:
                nxt = words[i + 1]
                out[name] = (nxt.text, nxt.line)
                i += 1
            else:
                out[name] = ("", w.line)  # a store_true flag
        i += 1
    return out


def _accelerate_config(acc: _Acc, path: str, cited: Span | None, cli: dict[str, tuple[str | None, int]]
                       ) -> _Node | None:
    """Read an accelerate config (YAML or JSON, as ``load_config_from_file`` takes both) at rank
    :data:`_ACCEL_CONFIG`; returns its ``deepspeed_config`` mapping (for its config file)."""
    from lintlora.extract.yaml_loader import YMap

    tree = _read_tree(acc, path, kind="json" if path.endswith(".json") else "yaml",
                      what="accelerate config", cited=cited)
    if tree is None:
        return None
    if not isinstance(tree, YMap):
        acc.problem(path, 1, "accelerate config is not a mapping: not read")
        return None
    acc.accelerate_config = path
    cfg = _Node(tree, tree.span)
    label = _base(path)
    r = _ACCEL_CONFIG
    got = cfg.get("distributed_type")
    cli_kind = any(f in cli for f in ("--multi_gpu", "--use_deepspeed", "--use_fsdp", "--cpu", "--tpu"))
    if got is not None and isinstance(got[0], str) and not cli_kind:
        kind = got[0].strip().upper()
        backend = {"NO": "single", "MULTI_GPU": "ddp", "DEEPSPEED": "deepspeed", "FSDP": "fsdp"}.get(kind)
        if backend is not None:
            acc.put("backend", _file_setting(backend, got[1], f"distributed_type {got[0]} in {label}", got[2]), r)
        else:
            acc.notes.append(f"distributed_type {got[0]!r} in {label}: not a GPU data-parallel type lintlora prices")
    got = cfg.get("num_processes")
    if got is not None and "--num_processes" not in cli:
        n = _as_int(got[0], 1, MAX_WORLD)
        if n is not None:
            acc.put("world_size", _file_setting(n, got[1], f"num_processes {n} in {label}", got[2]), r)
    got = cfg.get("num_machines")
    if got is not None and "--num_machines" not in cli:
        n = _as_int(got[0], 1, MAX_WORLD)
        if n is not None:
            acc.extra["num_machines"] = _file_setting(n, got[1], f"num_machines {n} in {label}", got[2])
    got = cfg.get("mixed_precision")
    if got is not None and "--mixed_precision" not in cli:
        p = _precision(got[0])
        if p is not None:
            acc.put("mixed_precision", _file_setting(p, got[1], f"mixed_precision {p} in {label}", got[2]), r)
    ds = cfg.get("deepspeed_config")
    ds_node = ds[0] if ds is not None and isinstance(ds[0], _Node) else None
    if ds_node is not None:
        for key, name, conv in (("zero_stage", "zero_stage", lambda v: _as_int(v, 0, 3)),
                                ("offload_optimizer_device", "offload_optimizer", _device),
                                ("offload_param_device", "offload_param", _device),
                                ("gradient_accumulation_steps", "gradient_accumulation_steps",
                                 lambda v: _as_int(v, 1, 1 << 30)),
                                ("gradient_clipping", "gradient_clipping", _as_number),
                                ("zero3_init_flag", "zero3_init_flag", _as_bool)):
            got = ds_node.get(key)
            if got is None or f"--{key}" in cli:
                continue
            v = conv(got[0])
            if v is None:
                if key == "zero_stage":
                    acc.problem(path, got[1].line if got[1] else None,
                                f"deepspeed_config.zero_stage {got[0]!r} in {label} is not 0-3: not used")
                continue
            s = _file_setting(v, got[1], f"deepspeed_config.{key} {v!r} in {label}", got[2])
            if name == "zero3_init_flag":
                acc.extra[name] = s
            else:
                acc.put(name, s, r)
    fs = cfg.get("fsdp_config")
    if fs is not None and isinstance(fs[0], _Node):
        _fsdp_config(acc, fs[0], label, r, skip={k for k in cli})
    return ds_node


def _fsdp_config(acc: _Acc, node: _Node, label: str, rank: int, skip: set[str] = frozenset(),
                 origin_setting: Setting | None = None) -> None:
    """FSDP keys of an accelerate ``fsdp_config``, TrainingArguments' ``fsdp_config`` or axolotl's
    (with or without the ``fsdp_`` prefix). ``origin_setting``: the setup Setting the mapping is
    (a Python dict from the script), whose origin the values keep."""
    def mk(value: Any, span: Span | None, key: str, key_span: Span | None) -> Setting:
        what = f"fsdp_config.{key} {value!r} in {label}"
        if origin_setting is not None:
            return _derived(value, origin_setting, what)
        return _file_setting(value, span, what, key_span)

    reshard = None
    for key, value, span, key_span in node.items():
        k = key[5:] if key.startswith("fsdp_") else key
        if f"--fsdp_{k}" in skip:
            continue
        if k == "sharding_strategy":
            v = _strategy(value)
            if v is None:
                acc.problem(span.path if span else label, span.line if span else None,
                            f"fsdp_sharding_strategy {value!r} in {label} is not a sharding strategy: not used")
                continue
            acc.put("fsdp_sharding_strategy", mk(v, span, key, key_span), rank)
        elif k == "version":
            v = _as_int(value, 1, 2)
            if v is not None:
                acc.put("fsdp_version", mk(v, span, key, key_span), rank)
        elif k in ("offload_params", "activation_checkpointing", "cpu_ram_efficient_loading"):
            v = _as_bool(value)
            if v is not None:
                acc.put(f"fsdp_{k}", mk(v, span, key, key_span), rank)
        elif k == "reshard_after_forward":
            reshard = (value, span, key, key_span)
        elif k in ("auto_wrap_policy", "transformer_layer_cls_to_wrap") and not isinstance(value, _Node):
            acc.extra[f"fsdp_{k}"] = mk(value, span, key, key_span)
    if reshard is not None:
        # FSDP2 has no sharding strategy: reshard_after_forward False keeps the parameters
        # gathered from forward to backward (SHARD_GRAD_OP); accelerate also takes FSDP1's
        # names here (launch.py --fsdp_reshard_after_forward help)
        value, span, key, key_span = reshard
        b = _as_bool(value)
        v = _strategy(value) if b is None else ("FULL_SHARD" if b else "SHARD_GRAD_OP")
        if v is not None and acc.rank("fsdp_sharding_strategy") <= rank:
            acc.put("fsdp_sharding_strategy", mk(v, span, key, key_span), rank)


def _from_accelerate(acc: _Acc, launch: Launch, bases: list[str]) -> list[tuple[str, list[str], Span | None]]:
    """The accelerate launcher's flags and its config file; returns DeepSpeed JSONs it names."""
    cli = _flags(launch.launcher_argv, _ACCELERATE_VALUE_FLAGS)
    ds_files: list[tuple[str, list[str], Span | None]] = []
    cfg_ref = next((c for c in launch.configs if c.role == "accelerate"), None)
    ds_node = None
    if cfg_ref is not None and cfg_ref.value.known:
        path = cfg_ref.path or _resolve(cfg_ref.value.text or "", bases, acc.root)
        if path:
            ds_node = _accelerate_config(acc, path, Span(launch.path, cfg_ref.value.line or launch.line), cli)
            if acc.accelerate_config is None:
                acc.notes.append(f"accelerate config {cfg_ref.value.text} was not read: its settings are unknown")
    elif cfg_ref is not None:
        acc.notes.append(f"accelerate --config_file is not known ({cfg_ref.value.note or 'unknown'}): "
                         "its settings are unknown")
    else:
        acc.notes.append("accelerate launch without --config_file: the default config "
                         "(~/.cache/huggingface/accelerate/default_config.yaml) is outside the project and not "
                         "read; its settings are unknown")
    r = _LAUNCH
    for flag, backend in (("--use_deepspeed", "deepspeed"), ("--use_fsdp", "fsdp"), ("--multi_gpu", "ddp")):
        if flag in cli:
            acc.put("backend", _launch_setting(backend, launch, cli[flag][1], flag), r)
            break
    if "--mixed_precision" in cli:
        v, line = cli["--mixed_precision"]
        p = _precision(v)
        if p is not None:
            acc.put("mixed_precision", _launch_setting(p, launch, line, f"--mixed_precision {p}"), r)
    if "--num_machines" in cli:
        v, line = cli["--num_machines"]
        n = _as_int(v, 1, MAX_WORLD)
        if n is not None:
            acc.extra["num_machines"] = _launch_setting(n, launch, line, f"--num_machines {n}")
    for flag, name in _ACCELERATE_DS_FLAGS.items():
        if flag in cli:
            v, line = cli[flag]
            conv = {"zero_stage": lambda x: _as_int(x, 0, 3), "offload_optimizer": _device,
                    "offload_param": _device, "gradient_accumulation_steps": lambda x: _as_int(x, 1, 1 << 30),
                    "gradient_clipping": _as_number}[name]
            val = conv(v)
            if val is None:
                if name == "zero_stage":
                    acc.problem(launch.path, line, f"--zero_stage {v!r} is not 0-3: not used")
                continue
            acc.put(name, _launch_setting(val, launch, line, f"{flag} {v}"), r)
    for flag, name in _ACCELERATE_FSDP_FLAGS.items():
        if flag in cli:
            v, line = cli[flag]
            if name == "fsdp_sharding_strategy":
                val = _strategy(v)
            elif name == "fsdp_version":
                val = _as_int(v, 1, 2)
            elif name == "fsdp_reshard_after_forward":
                b = _as_bool(v)
                val = _strategy(v) if b is None else ("FULL_SHARD" if b else "SHARD_GRAD_OP")
                name = "fsdp_sharding_strategy" if acc.rank("fsdp_sharding_strategy") < r else ""
            else:
                val = _as_bool(v)
            if val is not None and name:
                acc.put(name, _launch_setting(val, launch, line, f"{flag} {v}"), r)
    if "--deepspeed_config_file" in cli and cli["--deepspeed_config_file"][0]:
        v, line = cli["--deepspeed_config_file"]
        ds_files.append((v, bases, Span(launch.path, line)))
    if ds_node is not None and "--deepspeed_config_file" not in cli:
        got = ds_node.get("deepspeed_config_file")
        if got is not None and isinstance(got[0], str) and got[0].strip().lower() not in ("", "none"):
            # relative to the folder the command runs in (accelerate opens it as given)
            ds_files.append((got[0], bases, got[1]))
    return ds_files


# ---- counts -----------------------------------------------------------------------------------

def _count(c: Count | None, visible: Count | None) -> tuple[int | None, Count | None]:
    if c is None:
        return None, None
    if c.value is not None:
        return (c.value if 1 <= c.value <= MAX_WORLD else None), c
    if (c.text or "").strip().lower() in ("gpu", "auto") and visible is not None and visible.value:
        # torch/distributed/run.py determine_local_world_size: "gpu" is torch.cuda.device_count(),
        # "auto" the same on a CUDA host: the visible devices
        return visible.value, c
    return None, c


def _from_launcher(acc: _Acc, launch: Launch) -> None:
    """World size from the launcher's counts (rank :data:`_LAUNCH`)."""
    vis = launch.visible_gpus
    where = launch.processes or launch.processes_per_node or launch.nodes or vis
    if launch.processes is not None:
        n, c = _count(launch.processes, vis)
        if n is not None:
            acc.put("world_size", _launch_setting(n, launch, c.line, f"{c.source} {c.text}"), _LAUNCH)
            return
    per, cp = _count(launch.processes_per_node, vis)
    nodes, cn = _count(launch.nodes, vis)
    if cn is not None and nodes is None:
        acc.notes.append(f"{cn.source} {cn.text!r}: the number of nodes is not a plain count; world size unknown")
        return
    if cn is None and launch.launcher == "deepspeed" and any(
            (w.text or "").startswith(("--hostfile", "-H")) for w in launch.launcher_argv):
        # deepspeed/launcher/runner.py: without --num_nodes every host of the hostfile runs
        acc.notes.append("deepspeed --hostfile without --num_nodes: every host it lists runs; world size unknown")
        return
    nodes = nodes or 1
    if per is None and launch.launcher == "deepspeed" and vis is not None and vis.value:
        per, cp = vis.value, vis  # deepspeed --include: the listed GPUs (deepspeed/launcher/runner.py)
    if per is None and launch.launcher == "torchrun" and launch.processes_per_node is None:
        per, cp = 1, None  # torch/distributed/run.py: --nproc_per_node defaults to 1
    if per is None and launch.launcher == "python":
        per, cp = 1, None
    if per is None and launch.launcher == "llamafactory" and vis is not None and vis.value:
        # LLaMA-Factory src/llamafactory/cli.py: `train` re-launches itself under torchrun with
        # NPROC_PER_NODE or get_device_count() processes when more than one device is visible
        per, cp = vis.value, vis
    if per is not None:
        text = f"{cp.source} {cp.text}" if cp is not None else f"{launch.launcher} (one process per node)"
        if nodes > 1:
            text += f" × {cn.source} {cn.text}"
        acc.put("world_size", _launch_setting(min(per * nodes, MAX_WORLD), launch,
                                              (cp or cn or where).line if (cp or cn or where) else launch.line,
                                              text), _LAUNCH)
    elif cp is not None:
        acc.notes.append(f"{cp.source} {cp.text!r}: the number of processes is not known")


# ---- the setup's own keys ---------------------------------------------------------------------

def _known(setup: TrainingSetup, key: str) -> Setting | None:
    try:
        s = setup.get(key)
    except (AttributeError, KeyError):
        return None
    if s is None or not s.known or s.origin is Origin.LIBRARY_DEFAULT:
        return None
    return s


def _yaml_of_setup(acc: _Acc, setup: TrainingSetup) -> _Node | None:
    """The setup's own YAML (a dialect config), re-read with positions for keys the dialect
    does not carry (axolotl ``fsdp_config``/``fsdp_version``, torchtune ``fsdp_cpu_offload``)."""
    from lintlora.extract.yaml_loader import YMap

    path = setup.path
    if not path.endswith((".yaml", ".yml")) or not os.path.isfile(path):
        return None
    tree = _read_tree(acc, os.path.abspath(path), kind="yaml", what="config", cited=None)
    return _Node(tree, tree.span) if isinstance(tree, YMap) else None


def _from_setup(acc: _Acc, setup: TrainingSetup, launch: Launch | None,
                ds_values: list[tuple[Any, list[str], Span | None, Setting | None]]) -> None:
    fw = setup.framework or ""
    r = _SETUP
    here = os.path.dirname(os.path.abspath(setup.path))
    bases = [b for b in ((launch.workdir if launch else None), here, acc.root) if b]
    ds = _known(setup, "training.deepspeed")
    if ds is not None and isinstance(ds.value, str) and not ds.value.strip().lower().endswith(
            (".json", ".yaml", ".yml")) and ("/" not in ds.value or ds.value.strip().startswith("{")):
        # LLaMA-Factory v1 dist_config.name ("deepspeed_zero3"), or transformers' JSON/base64 text
        # (integrations/deepspeed.py HfDeepSpeedConfig): no file to read
        acc.notes.append(f"deepspeed {ds.value[:80]!r}: not a config file path; its values are unknown")
    elif ds is not None and isinstance(ds.value, (str, dict)) and ds.value:
        ds_values.append((ds.value, bases, ds.span, ds))
    fsdp = _known(setup, "training.fsdp")
    if fsdp is not None and fsdp.value:
        strategy, offload, _words = parse_fsdp_option(fsdp.value)
        if strategy is not None:
            acc.put("backend", _derived("fsdp", fsdp, f"fsdp={fsdp.value!r}"), r)
            acc.put("fsdp_sharding_strategy", _derived(strategy, fsdp, f"fsdp={fsdp.value!r}"), r)
            if offload:
                acc.put("fsdp_offload_params", _derived(True, fsdp, f"fsdp={fsdp.value!r} (offload)"), r)
    fc = setup.training.extra.get("fsdp_config") if setup.training is not None else None
    if fc is not None and fc.known and fc.value:
        if isinstance(fc.value, dict):
            _fsdp_config(acc, _Node(fc.value, fc.span), _base(setup.path), r, origin_setting=fc)
        elif isinstance(fc.value, str):
            path = _resolve(fc.value, bases, acc.root)
            tree = _read_tree(acc, path, kind="json", what="fsdp_config", cited=fc.span) if path else None
            from lintlora.extract.yaml_loader import YMap

            if isinstance(tree, YMap):
                _fsdp_config(acc, _Node(tree, tree.span), _base(path), r)
    own = _yaml_of_setup(acc, setup) if fw in ("axolotl", "torchtune") else None
    if own is not None and fw == "axolotl":
        got = own.get("fsdp_config")
        if got is not None and isinstance(got[0], _Node):
            _fsdp_config(acc, got[0], _base(setup.path), r)
            acc.put("backend", _file_setting("fsdp", got[1], f"fsdp_config in {_base(setup.path)}", got[2]), r - 1)
        got = own.get("fsdp_version")
        if got is not None and _as_int(got[0], 1, 2) is not None:
            acc.put("fsdp_version", _file_setting(_as_int(got[0], 1, 2), got[1],
                                                  f"fsdp_version {got[0]} in {_base(setup.path)}", got[2]), r)
    _torchtune(acc, setup, launch, own)
    _litgpt(acc, setup, launch)


def _torchtune(acc: _Acc, setup: TrainingSetup, launch: Launch | None, own: _Node | None) -> None:
    """torchtune ``*_distributed`` recipes shard with FSDP2 ``fully_shard`` per layer
    (``recipes/lora_finetune_distributed.py`` ``training.shard_model``, reshard after forward
    unless ``fsdp_reshard_after_forward: False``; ``fsdp_cpu_offload`` offloads parameters):
    pytorch/torchtune, the recipe and ``torchtune/training/_distributed.py`` ``shard_model``."""
    if setup.framework != "torchtune":
        return
    recipe = launch.module if launch is not None and launch.launcher == "tune" else None
    header = next((e for e in setup.launch if e.kind == "fsdp"), None)
    if recipe and recipe.endswith("_single_device"):
        # a single-device recipe runs one process whatever the launcher (recipes/*_single_device.py)
        span = Span(launch.path, launch.line)
        one = Setting(1, Origin.LAUNCH, span, None, f"tune run {recipe} ({_base(launch.path)}:{launch.line})")
        acc.put("world_size", one, _LAUNCH + 1)
        acc.put("backend", Setting("single", Origin.LAUNCH, span, None, one.source), _LAUNCH + 1)
        return
    if not ((recipe and recipe.endswith("_distributed")) or (recipe is None and header is not None)):
        return
    if recipe:
        span, what = Span(launch.path, launch.line), f"tune run {recipe} ({_base(launch.path)}:{launch.line})"
        mk = lambda v, w: Setting(v, Origin.LAUNCH, span, None, f"{w}: {what}")  # noqa: E731
    else:
        mk = lambda v, w: Setting(v, Origin.CONFIG_FILE, header.span, None, f"{w}: {header.detail}")  # noqa: E731
        import re

        m = re.search(r"on (\d{1,5}) processes", header.detail)
        if m:
            acc.put("world_size", mk(int(m.group(1)), "the config's header"), _SETUP)
    acc.put("backend", mk("fsdp", "torchtune distributed recipe"), _SETUP)
    acc.put("fsdp_version", mk(2, "torchtune shards with fully_shard (FSDP2)"), _SETUP)
    acc.put("fsdp_sharding_strategy", mk("FULL_SHARD", "fully_shard, reshard after forward"), _SETUP)
    if own is not None:
        label = _base(setup.path)
        got = own.get("fsdp_cpu_offload")
        if got is not None and _as_bool(got[0]) is not None:
            acc.put("fsdp_offload_params", _file_setting(_as_bool(got[0]), got[1],
                                                         f"fsdp_cpu_offload in {label}", got[2]), _SETUP)
        got = own.get("fsdp_reshard_after_forward")
        if got is not None and _as_bool(got[0]) is False:
            acc.put("fsdp_sharding_strategy", _file_setting("SHARD_GRAD_OP", got[1],
                                                            f"fsdp_reshard_after_forward False in {label}",
                                                            got[2]), _SETUP)
        got = own.get("enable_activation_checkpointing")
        if got is not None and _as_bool(got[0]) is not None:
            acc.put("fsdp_activation_checkpointing", _file_setting(
                _as_bool(got[0]), got[1], f"enable_activation_checkpointing in {label}", got[2]), _SETUP)


def _litgpt(acc: _Acc, setup: TrainingSetup, launch: Launch | None) -> None:
    """litgpt with ``devices`` > 1 launches its processes through Lightning Fabric and shards:
    current litgpt (Lightning-AI/litgpt@26857050 ``litgpt/finetune/lora.py:158``) uses
    ``ModelParallelStrategy`` (FSDP2 ``fully_shard`` per Block, activation checkpointing per
    Block); before it (@8641822) ``FSDPStrategy(auto_wrap_policy={Block},
    activation_checkpointing_policy={Block})``. ``devices × num_nodes`` processes."""
    if setup.framework != "litgpt":
        return
    devices = nodes = None
    dspan = None
    for ev in setup.launch:
        if ev.kind == "multi-gpu" and ":" in ev.detail:
            what, _, v = ev.detail.partition(":")
            n = _as_int(v.strip(), 1, MAX_WORLD)
            if what == "devices":
                devices, dspan = n, ev.span
            elif what == "num_nodes":
                nodes = n
    dev_setting = None
    if devices is not None and dspan is not None:
        dev_setting = _file_setting(devices * (nodes or 1), dspan, f"devices: {devices}"
                                    + (f" × num_nodes: {nodes}" if nodes else ""))
    if launch is not None and launch.launcher == "litgpt" and launch.processes_per_node is not None:
        n, c = _count(launch.processes_per_node, launch.visible_gpus)
        if n is not None:
            dev_setting = _launch_setting(n * (nodes or 1), launch, c.line, f"{c.source} {c.text}")
    if dev_setting is None or not isinstance(dev_setting.value, int) or dev_setting.value <= 1:
        return
    rank = _LAUNCH if dev_setting.origin is Origin.LAUNCH else _SETUP
    acc.put("world_size", dev_setting, rank)
    src = "litgpt finetune/lora.py ModelParallelStrategy (Lightning-AI/litgpt@26857050)"
    acc.put("backend", _derived("fsdp", dev_setting, src), rank)
    acc.put("fsdp_version", _derived(2, dev_setting, src + ": fully_shard, FSDP2"), rank)
    acc.put("fsdp_sharding_strategy", _derived("FULL_SHARD", dev_setting, src), rank)
    acc.put("fsdp_activation_checkpointing", _derived(True, dev_setting, src + ": checkpointing per Block"), rank)


# ---- the whole ----------------------------------------------------------------------------------

def distributed_for(setup: TrainingSetup, launch: Launch | None, *, root: str
                    ) -> tuple[Distributed | None, tuple[str, ...], tuple[LaunchProblem, ...]]:
    """The :class:`Distributed` section of the run ``setup`` launched by ``launch``.

    Args:
        setup: the entry point's extracted setup (``training.deepspeed``/``fsdp``/``extra
            ["fsdp_config"]``, its launch evidence, its own YAML for dialect keys).
        launch: the launch command (``None``: none found; the world size is then unknown
            unless the config states it, as litgpt ``devices`` or a torchtune header does).
        root: the project folder; no file outside it is read (a problem says so).

    Returns:
        ``(distributed, files_read, problems)``: the section (``None`` when nothing states a
        distribution), the absolute paths of the files read or looked for (present or not:
        inputs of the results cache), and the problems met, each with its path and line.
        Never raises for bad input.
    """
    acc = _Acc(root=os.path.realpath(root) if root else os.path.realpath(os.path.dirname(setup.path) or "."))
    ds_values: list[tuple[Any, list[str], Span | None, Setting | None]] = []
    _from_setup(acc, setup, launch, ds_values)
    if launch is not None:
        bases = [b for b in (launch.workdir, *launch.path_search, os.path.dirname(os.path.abspath(launch.path)))
                 if b]
        launch_ds: list[tuple[str, list[str], Span | None]] = []
        if launch.launcher == "accelerate":
            launch_ds = _from_accelerate(acc, launch, bases)
        elif launch.launcher == "deepspeed":
            acc.put("backend", _launch_setting("deepspeed", launch, launch.line, "deepspeed launcher"), _LAUNCH - 1)
        if launch.launcher != "litgpt":
            _from_launcher(acc, launch)
        for c in launch.configs:
            if c.role == "deepspeed" and c.option != "--deepspeed_config_file" and c.value.known:
                launch_ds.append((c.value.text or "", bases, Span(launch.path, c.value.line or launch.line)))
        if not ds_values:  # the Trainer's deepspeed= wins (module docstring, 1.)
            for value, b, cited in launch_ds[:1]:
                ds_values.append((value, b, cited, None))
    for value, bases, cited, s in ds_values[:1]:
        if isinstance(value, dict):
            acc.config_path = None
            _read_deepspeed(acc, _Node(value, s.span if s else None), f"deepspeed= ({_base(setup.path)})")
            if s is not None:
                for name, (rank, st) in list(acc.values.items()):
                    if st.origin is Origin.CONFIG_FILE and st.span == s.span:
                        acc.values[name] = (rank, _derived(st.value, s, st.source or ""))
                acc.put("backend", _derived("deepspeed", s, "deepspeed= (a dict)"), _DS_JSON)
        else:
            _deepspeed_file(acc, str(value), bases, cited, str(value)[:200])
    return _assemble(acc, setup, launch)


def _assemble(acc: _Acc, setup: TrainingSetup, launch: Launch | None
              ) -> tuple[Distributed | None, tuple[str, ...], tuple[LaunchProblem, ...]]:
    files = tuple(acc.files)
    problems = tuple(acc.problems)
    backend = acc.values.get("backend")
    world = acc.values.get("world_size")
    if backend is None and world is None and not acc.values and (launch is None or not acc.notes):
        return None, files, problems
    fsdp_keys = ("fsdp_sharding_strategy", "fsdp_version", "fsdp_offload_params")
    if backend is None:
        if any(k in acc.values for k in fsdp_keys) and acc.get("fsdp_sharding_strategy") not in (None, "NO_SHARD"):
            backend = (_SETUP, acc.values.get("fsdp_sharding_strategy", acc.values.get("fsdp_version"))[1])
            backend = (backend[0], Setting("fsdp", backend[1].origin, backend[1].span, None, backend[1].source))
        elif "zero_stage" in acc.values:
            z = acc.values["zero_stage"][1]
            backend = (_SETUP, Setting("deepspeed", z.origin, z.span, None, z.source))
    b = backend[1].value if backend is not None else None
    if b == "deepspeed" and acc.rank("fsdp_sharding_strategy") >= _SETUP and "zero_stage" in acc.values:
        s = acc.values["fsdp_sharding_strategy"][1]
        acc.notes.append(f"both DeepSpeed and FSDP are configured ({s.source}; transformers refuses the pair "
                         "in training_args.py): DeepSpeed taken")
    w = world[1].value if world is not None else None
    if b in (None, "ddp") and isinstance(w, int):
        src = world[1]
        backend = (_LAUNCH, Setting("single" if w == 1 else "ddp", src.origin, src.span, None,
                                    f"{'one process' if w == 1 else 'replicas'}: {src.source}"))
    if b == "single" and isinstance(w, int) and w > 1:
        src = world[1]
        backend = (_LAUNCH, Setting("ddp", src.origin, src.span, None, f"replicas: {src.source}"))
    fields: dict[str, Setting] = {name: st for name, (_r, st) in acc.values.items()
                                  if name in Distributed.__dataclass_fields__ and name != "backend"}
    if backend is not None:
        fields["backend"] = backend[1]
    extra = dict(acc.extra)
    if acc.notes:  # what could not be known, as sentences (the estimator shows them)
        extra["notes"] = Setting(tuple(acc.notes[:8]), Origin.ASSUMED,
                                 Span(launch.path, launch.line) if launch else None, None, "; ".join(acc.notes[:8]))
    span = Span(launch.path, launch.line) if launch is not None else (
        backend[1].span if backend is not None else None)
    dist = Distributed(config_path=acc.config_path, accelerate_config=acc.accelerate_config, span=span,
                       extra=extra, **fields)
    return dist, files, problems
