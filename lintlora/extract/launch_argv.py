"""Which training launcher a command is, and what its own options say (pure; no I/O).

:func:`classify` takes the expanded words of one command (:class:`ShellValue`) and returns the
:class:`~lintlora.extract.launch_model.Launch` fields, or ``None`` when the command starts no
training entry point. The launchers' option sets are read from their sources:

- ``torchrun`` / ``python -m torch.distributed.run``: ``torch/distributed/run.py``
  (``get_args_parser``): every option takes a value except ``--standalone``, ``-m/--module``,
  ``--no-python``/``--no_python``, ``--run-path``/``--run_path``, ``--virtual-local-rank``;
  ``torch.distributed.launch`` adds ``--use-env``/``--use_env``. Options are accepted with
  ``-`` or ``_`` (``--nproc-per-node``/``--nproc_per_node``).
- ``accelerate launch``: ``src/accelerate/commands/launch.py`` (huggingface/accelerate
  16cb6eb8, 2026-07-24): the ``store_true`` options are listed in :data:`_ACCELERATE_FLAGS`;
  hyphens and underscores are both accepted (``_convert_nargs_to_dict``'s ``option[2:].replace
  ("-", "_")``); ``--num_processes`` is the total over all machines.
- ``deepspeed``: ``deepspeed/launcher/runner.py`` (microsoft/DeepSpeed 38327e07): flags in
  :data:`_DEEPSPEED_FLAGS`; ``--num_gpus``/``--num_accelerators`` per node, ``--num_nodes``,
  ``-i/--include host:0,1``.
- ``llamafactory-cli train x.yaml`` / ``python -m llamafactory.cli``, ``axolotl train x.yml`` /
  ``python -m axolotl.cli.train x.yml``, ``tune run [torchrun options] recipe --config x.yaml
  key=value``, ``litgpt <subcommand> ... --devices N --num_nodes N --precision P``.

Wrappers in front of a launcher are stepped over: ``nohup``, ``exec``, ``time``, ``nice``,
``env VAR=value``, ``srun``/``mpirun`` options, ``uv run``, ``poetry run``, ``pipenv run``,
``conda run -n env``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from lintlora.extract.launch_model import Count, ShellValue

__all__ = ["Classified", "classify", "visible_device_count", "split_option"]

_TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--no_python",
                   "--run-path", "--run_path", "--virtual-local-rank", "--virtual_local_rank",
                   "--use-env", "--use_env"}
_ACCELERATE_FLAGS = {"--quiet", "-q", "--cpu", "--multi_gpu", "--tpu", "--enable_cpu_affinity",
                     "--dynamo_use_fullgraph", "--dynamo_use_dynamic",
                     "--dynamo_use_regional_compilation", "--use_deepspeed", "--use_fsdp",
                     "--use_parallelism_config", "--use_megatron_lm", "--same_network", "-m",
                     "--module", "--no_python", "--tpu_cluster", "--no_tpu_cluster",
                     "--tpu_use_sudo", "--downcast_bf16", "--fp8_use_autocast_during_eval",
                     "--debug", "-h", "--help"}
_DEEPSPEED_FLAGS = {"--module", "--no_python", "--no_local_rank", "--no_ssh", "--no_ssh_check",
                    "--force_multi", "--save_pid", "--elastic_training", "--bind_cores_to_rank"}
_PYTHON_VALUED = {"-W", "-X", "-Q"}
_DISTRIBUTED_FLAGS = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
                      "--standalone", "--cpu", "--tpu", "--force_multi"}
_SRUN_VALUED = {"-N", "-n", "-c", "-p", "-J", "-o", "-e", "-t", "-G", "-w", "-A", "-q",
                "--nodes", "--ntasks", "--cpus-per-task", "--partition", "--job-name",
                "--output", "--error", "--time", "--gpus", "--gres", "--ntasks-per-node",
                "--nodelist", "--account", "--qos", "--mem", "--gpus-per-node",
                "--gpus-per-task", "--container-image", "--container-mounts", "-np", "-H",
                "--hostfile", "-x"}
_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_LITERAL_OPTION = re.compile(r"(--?[A-Za-z][A-Za-z0-9_.-]*)=")
_PYTHON = re.compile(r"(^|/)python(3(\.\d+)?)?$")


@dataclass
class Classified:
    """The launcher-specific part of a :class:`Launch` (see its attributes)."""
    launcher: str
    launcher_argv: list[ShellValue] = field(default_factory=list)
    entry: ShellValue | None = None
    module: str | None = None
    subcommand: str | None = None
    argv: list[ShellValue] = field(default_factory=list)
    processes_per_node: Count | None = None
    nodes: Count | None = None
    processes: Count | None = None
    visible_gpus: Count | None = None
    distributed: list[str] = field(default_factory=list)
    mixed_precision: ShellValue | None = None
    configs: list[tuple[str, str | None, ShellValue]] = field(default_factory=list)
    env: list[tuple[str, ShellValue]] = field(default_factory=list)


def _count(value: ShellValue, source: str) -> Count:
    text = value.text
    number = int(text) if text is not None and re.fullmatch(r"[1-9][0-9]{0,5}", text) else None
    return Count(number, text, source, value.line)


def visible_device_count(value: ShellValue, source: str) -> Count:
    """The number of devices a ``CUDA_VISIBLE_DEVICES``-like list names (``0,1`` is 2; an
    empty list is 0; ``None`` when the text is unknown or not a list of ids/UUIDs)."""
    text = value.text
    if text is None:
        return Count(None, None, source, value.line)
    items = [t.strip() for t in text.split(",")] if text.strip() else []
    ok = all(re.fullmatch(r"[0-9]+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+", t) for t in items)
    return Count(len(items) if ok else None, text, source, value.line)


def split_option(word: ShellValue) -> tuple[str | None, ShellValue | None]:
    """``--name=value`` -> (``--name``, value); ``--name`` -> (``--name``, None); anything
    else -> (None, None). A word whose value is unknown but whose option name is written
    literally (``--lr=$LR``, ``--output_dir="$(date)"``) gives the name and an unknown value."""
    text = word.text
    if text is None:
        m = _LITERAL_OPTION.match(word.raw)
        if m is None:
            return None, None
        return m.group(1), ShellValue(None, "unknown", word.raw, word.line, word.note,
                                      column=word.column)
    if not text.startswith("-") or text == "-":
        return None, None
    if text.startswith("--") and "=" in text:
        name, _, value = text.partition("=")
        return name, ShellValue(value, word.origin, word.raw, word.line, word.note,
                                word.assigned_line, word.column)
    return text, None


def _norm(name: str) -> str:
    return "--" + name[2:].replace("-", "_") if name.startswith("--") else name


def _options(words: list[ShellValue], flags: set[str]) -> tuple[dict[str, ShellValue | None],
                                                                 list[ShellValue], int]:
    """Launcher options up to the first positional word: (normalised name -> value or None
    for a flag, the words read, the index of the positional word)."""
    found: dict[str, ShellValue | None] = {}
    i = 0
    norm_flags = {_norm(f) for f in flags}
    while i < len(words):
        word = words[i]
        name, value = split_option(word)
        if name is None:
            break
        if name == "--":
            i += 1
            break
        key = _norm(name)
        if value is None and key not in norm_flags:
            if i + 1 < len(words):
                value = words[i + 1]
                i += 1
            else:
                value = ShellValue(None, "unknown", note=f"{name} without a value")
        found[key] = value
        i += 1
    return found, words[:i], i


def _strip_wrappers(words: list[ShellValue]) -> tuple[list[ShellValue], list[tuple[str, ShellValue]]]:
    env: list[tuple[str, ShellValue]] = []
    for _ in range(8):
        if not words or not words[0].known:
            return words, env
        head = os.path.basename(words[0].text)
        if head in ("nohup", "exec", "time", "stdbuf", "unbuffer", "command", "builtin"):
            words = words[1:]
            while words and words[0].known and words[0].text.startswith("-"):
                words = words[1:]
        elif head == "nice":
            words = words[1:]
            if words and words[0].text in ("-n",):
                words = words[2:]
            elif words and words[0].known and words[0].text.startswith("-"):
                words = words[1:]
        elif head == "env":
            words = words[1:]
            while words and words[0].known and (words[0].text.startswith("-") or
                                                "=" in words[0].text):
                text = words[0].text
                if "=" in text and not text.startswith("-"):
                    name, _, value = text.partition("=")
                    env.append((name, ShellValue(value, words[0].origin, words[0].raw,
                                                 words[0].line)))
                words = words[1:]
        elif head in ("srun", "mpirun", "mpiexec"):
            words = words[1:]
            while words and words[0].known and words[0].text.startswith("-"):
                name = words[0].text
                words = words[2:] if name in _SRUN_VALUED else words[1:]
        elif head in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye") and len(words) > 1 \
                and words[1].text == "run":
            words = words[2:]
            while words and words[0].known and words[0].text.startswith("-"):
                words = words[1:]
        elif head in ("conda", "mamba", "micromamba") and len(words) > 1 and \
                words[1].text == "run":
            words = words[2:]
            while words and words[0].known and words[0].text.startswith("-"):
                takes = words[0].text in ("-n", "--name", "-p", "--prefix")
                words = words[2:] if takes else words[1:]
        else:
            return words, env
    return words, env


def classify(words: list[ShellValue]) -> Classified | None:
    """The launch a command's words start, or ``None`` (not a training launcher, an unknown
    command name, ``python -c``, ``python -m pip``, a launcher without an entry point)."""
    words, env = _strip_wrappers(list(words))
    if not words or not words[0].known:
        return None
    head = words[0].text
    base = os.path.basename(head)
    rest = words[1:]
    result: Classified | None
    if _PYTHON.search(head):
        result = _python(rest)
    elif base == "torchrun":
        result = _torchrun(rest, "torchrun")
    elif base == "accelerate":
        result = _accelerate(rest[1:]) if rest and rest[0].text == "launch" else None
    elif base == "deepspeed":
        result = _deepspeed(rest)
    elif base in ("llamafactory-cli", "lmf"):
        result = _subcommand_cli("llamafactory", rest)
    elif base == "axolotl":
        result = _subcommand_cli("axolotl", rest)
    elif base == "tune":
        result = _tune(rest)
    elif base == "litgpt":
        result = _litgpt(rest)
    else:
        return None
    if result is not None:
        result.env = env + result.env
    return result


def _python(words: list[ShellValue]) -> Classified | None:
    i = 0
    while i < len(words):
        text = words[i].text
        if text is None:
            break  # an unknown script (python "$SCRIPT"): a launch whose entry is unknown
        if text == "-m":
            if i + 1 >= len(words) or not words[i + 1].known:
                return None
            module = words[i + 1].text
            return _python_module(module, words[:i + 2], words[i + 2:])
        if text.startswith("-m") and len(text) > 2:
            return _python_module(text[2:], words[:i + 1], words[i + 1:])
        if text in ("-c",) or text.startswith("-c"):
            return None
        if text in _PYTHON_VALUED:
            i += 2
            continue
        if text.startswith("-") and text != "-":
            i += 1
            continue
        break
    if i >= len(words):
        return None
    entry = words[i]
    if entry.known and not entry.text.endswith(".py") and "/" not in entry.text:
        # python somefile without .py is still a script, but "python -" (stdin) is not
        if entry.text == "-":
            return None
    return Classified("python", words[:i], entry=entry, argv=words[i + 1:],
                      configs=_argv_configs(words[i + 1:]))


def _python_module(module: str, launcher_words, after: list[ShellValue]) -> Classified | None:
    if module in ("torch.distributed.run", "torch.distributed.launch"):
        result = _torchrun(after, "torchrun")
        if result is not None:
            result.launcher_argv = list(launcher_words) + result.launcher_argv
        return result
    if module in ("accelerate.commands.launch",):
        result = _accelerate(after)
        if result is not None:
            result.launcher_argv = list(launcher_words) + result.launcher_argv
        return result
    if module in ("deepspeed.launcher.runner",):
        return _deepspeed(after)
    if module in ("llamafactory.cli", "llmtuner.cli"):
        return _subcommand_cli("llamafactory", after, launcher_words)
    if module.startswith("axolotl.cli"):
        return _axolotl_module(module, launcher_words, after, "python")
    if module in ("pip", "venv", "pytest", "unittest", "http.server", "json.tool"):
        return None
    return Classified("python", list(launcher_words), module=module, argv=after,
                      configs=_argv_configs(after))


def _axolotl_module(module: str, launcher_words, after, launcher: str) -> Classified:
    result = Classified(launcher, list(launcher_words), module=module, argv=list(after),
                        subcommand=module.rsplit(".", 1)[-1])
    if after and after[0].known and after[0].text.endswith((".yml", ".yaml")):
        result.configs.append(("axolotl", None, after[0]))
    result.configs += _argv_configs(after[1:] if result.configs else after)
    return result


def _torchrun(words: list[ShellValue], launcher: str) -> Classified | None:
    opts, read, i = _options(words, _TORCHRUN_FLAGS)
    if i >= len(words):
        return None
    module = "--module" in opts or "-m" in opts
    entry = words[i]
    result = Classified(launcher, read, argv=words[i + 1:])
    if module:
        result.module = entry.text
        if entry.text and entry.text.startswith("axolotl.cli"):
            result = _axolotl_module(entry.text, read, words[i + 1:], launcher)
    else:
        result.entry = entry
        result.configs = _argv_configs(words[i + 1:])
    _torchrun_counts(result, opts)
    return result


def _torchrun_counts(result: Classified, opts: dict[str, ShellValue | None]) -> None:
    for key in ("--nproc_per_node",):
        if opts.get(key) is not None:
            result.processes_per_node = _count(opts[key], "--nproc_per_node")
    if opts.get("--nnodes") is not None:
        result.nodes = _count(opts["--nnodes"], "--nnodes")
    if "--standalone" in opts:
        result.distributed.append("--standalone")


def _accelerate(words: list[ShellValue]) -> Classified | None:
    opts, read, i = _options(words, _ACCELERATE_FLAGS)
    if i >= len(words):
        return None
    entry = words[i]
    module = "--module" in opts or "-m" in opts
    after = words[i + 1:]
    if module and entry.text and entry.text.startswith("axolotl.cli"):
        result = _axolotl_module(entry.text, read, after, "accelerate")
    elif module:
        result = Classified("accelerate", read, module=entry.text, argv=after,
                            configs=_argv_configs(after))
    else:
        result = Classified("accelerate", read, entry=entry, argv=after,
                            configs=_argv_configs(after))
    result.launcher_argv = read
    if opts.get("--num_processes") is not None:
        result.processes = _count(opts["--num_processes"], "--num_processes")
    if opts.get("--num_machines") is not None:
        result.nodes = _count(opts["--num_machines"], "--num_machines")
    if opts.get("--gpu_ids") is not None and opts["--gpu_ids"].text != "all":
        result.visible_gpus = visible_device_count(opts["--gpu_ids"], "--gpu_ids")
    if opts.get("--mixed_precision") is not None:
        result.mixed_precision = opts["--mixed_precision"]
    for flag in opts:
        if flag in _DISTRIBUTED_FLAGS:
            result.distributed.append(flag)
    own = []
    if opts.get("--config_file") is not None:
        own.append(("accelerate", "--config_file", opts["--config_file"]))
    if opts.get("--deepspeed_config_file") is not None:
        own.append(("deepspeed", "--deepspeed_config_file", opts["--deepspeed_config_file"]))
    result.configs = own + result.configs
    return result


def _deepspeed(words: list[ShellValue]) -> Classified | None:
    aliases = {"-H": "--hostfile", "-i": "--include", "-e": "--exclude"}
    opts, read, i = _options(words, _DEEPSPEED_FLAGS)
    opts = {aliases.get(k, k): v for k, v in opts.items()}
    if i >= len(words):
        return None
    entry = words[i]
    after = words[i + 1:]
    if "--module" in opts:
        result = Classified("deepspeed", read, module=entry.text, argv=after,
                            configs=_argv_configs(after))
    else:
        result = Classified("deepspeed", read, entry=entry, argv=after,
                            configs=_argv_configs(after))
    gpus = opts.get("--num_gpus") or opts.get("--num_accelerators")
    if gpus is not None:
        result.processes_per_node = _count(gpus, "--num_gpus")
    if opts.get("--num_nodes") is not None:
        result.nodes = _count(opts["--num_nodes"], "--num_nodes")
    include = opts.get("--include")
    if include is not None:
        result.visible_gpus = _include_count(include)
    if "--force_multi" in opts:
        result.distributed.append("--force_multi")
    return result


def _include_count(value: ShellValue) -> Count:
    """``--include localhost:0,1`` (one host) -> 2 devices; several hosts (``a:0@b:1``) or no
    slot list -> unknown. DeepSpeed's runner ``parse_resource_filter``."""
    text = value.text
    if text is None or "@" in text or ":" not in text:
        return Count(None, text, "--include", value.line)
    slots = text.split(":", 1)[1]
    return visible_device_count(ShellValue(slots, value.origin, line=value.line), "--include")


def _subcommand_cli(launcher: str, words: list[ShellValue], launcher_words=()) -> Classified | None:
    if not words or not words[0].known:
        return None
    sub = words[0].text
    after = words[1:]
    result = Classified(launcher, list(launcher_words) + [words[0]], subcommand=sub,
                        argv=after)
    if after and after[0].known and after[0].text.endswith(_CONFIG_SUFFIXES):
        result.configs.append((launcher, None, after[0]))
        result.configs += _argv_configs(after[1:])
    else:
        result.configs += _argv_configs(after)
    return result


def _tune(words: list[ShellValue]) -> Classified | None:
    if not words or words[0].text != "run":
        return None
    opts, read, i = _options(words[1:], _TORCHRUN_FLAGS)
    i += 1
    if i >= len(words) or not words[i].known:
        return None
    recipe = words[i]
    after = words[i + 1:]
    result = Classified("tune", [words[0]] + read, subcommand="run", argv=after)
    if recipe.text.endswith(".py"):
        result.entry = recipe
    else:
        result.module = recipe.text
    _torchrun_counts(result, opts)
    for k, word in enumerate(after):
        name, value = split_option(word)
        if name == "--config":
            value = value if value is not None else (after[k + 1] if k + 1 < len(after) else None)
            if value is not None:
                result.configs.append(("torchtune", "--config", value))
    return result


def _litgpt(words: list[ShellValue]) -> Classified | None:
    if not words or not words[0].known:
        return None
    sub = words[0].text
    k = 1
    if sub in ("finetune", "pretrain") and len(words) > 1 and words[1].known and \
            words[1].text in ("lora", "qlora", "adapter", "adapter_v2", "full"):
        sub = f"{sub}_{words[1].text}"
        k = 2
    after = words[k:]
    result = Classified("litgpt", words[:k], subcommand=sub, argv=after)
    for j, word in enumerate(after):
        name, value = split_option(word)
        if name is None:
            continue
        if value is None and j + 1 < len(after):
            value = after[j + 1]
        if value is None:
            continue
        key = _norm(name)
        if key == "--devices":
            result.processes_per_node = _count(value, "--devices")
        elif key == "--num_nodes":
            result.nodes = _count(value, "--num_nodes")
        elif key == "--precision":
            result.mixed_precision = value
        elif key == "--config":
            result.configs.append(("litgpt", "--config", value))
    return result


def _argv_configs(words: list[ShellValue]) -> list[tuple[str, str | None, ShellValue]]:
    """Config files among an entry point's arguments: ``--deepspeed x.json`` (transformers'
    ``TrainingArguments.deepspeed``), and any ``.json``/``.yaml``/``.yml`` word (with the
    option before it, if any)."""
    found: list[tuple[str, str | None, ShellValue]] = []
    previous: str | None = None
    for word in words:
        name, value = split_option(word)
        target = value if value is not None else (word if name is None else None)
        option = name if value is not None else previous
        if target is not None and target.known and target.text.endswith(_CONFIG_SUFFIXES):
            role = "deepspeed" if option in ("--deepspeed", "--deepspeed_config") else "argument"
            found.append((role, option, target))
        elif target is not None and not target.known and option in ("--deepspeed",):
            found.append(("deepspeed", option, target))
        previous = name if (name is not None and value is None) else None
    return found
