"""``lintlora estimate``: the full memory breakdown, time estimate and fit list for a script,
a config, or flags alone.

Heavy modules (rich, the extractors) are imported inside the command function.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import replace

import click

from lintlora.argv import PathsFirstCommand
from lintlora.cli_numbers import BoundedInt, FiniteFloatRange
from lintlora.estimate.knob_flags import apply_knobs, knob_options, versions_from_flags
from lintlora.estimate.trainer_flags import apply_trainer_flags, trainer_options
from lintlora.limits import (MAX_BATCH_SIZE, MAX_LORA_RANK, MAX_NUMBER_CHARS, MAX_PARAMS,
                             MAX_SEQ_LEN, MAX_TOKENS)

__all__ = ["estimate_cmd", "build_report"]


# the smallest --params taken as a model size: below it the number was surely meant in
# billions (``--params 7``); the smallest causal LMs people fine-tune have tens of millions
MIN_PARAMS = 1e6

def _parse_count(text: str | None, option: str = "--params", maximum: float = MAX_PARAMS
                 ) -> float | None:
    """``7B``/``7e9``/``500M``/``1.5T`` -> a float; ``None`` for ``None``.

    Args:
        maximum: the largest count accepted (:mod:`lintlora.limits`).

    Raises:
        click.BadParameter: not a number with an optional K/M/B/G/T suffix, longer than
            :data:`lintlora.limits.MAX_NUMBER_CHARS`, not finite, or above ``maximum``
            (exit 2, naming ``option``).
    """
    if text is None:
        return None
    if len(str(text)) > MAX_NUMBER_CHARS:
        raise click.BadParameter(f"not a count: {str(text)[:24]!r}... is {len(str(text)):,} "
                                 f"characters long (examples: 7B, 7e9, 500M)", param_hint=option)
    t = str(text).strip().upper().replace("_", "")
    mult = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
    try:
        v = float(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else float(t)
    except ValueError:
        raise click.BadParameter(f"not a count: {text!r} (examples: 7B, 7e9, 500M)", param_hint=option) from None
    if not math.isfinite(v) or v > maximum:
        raise click.BadParameter(f"{text!r} is too large (at most {maximum:.0e})".replace("e+", "e"),
                                 param_hint=option)
    return v


def _print_gpus(fmt: str) -> None:
    """``--list-gpus``: the catalog as a table (or JSON): lookup name, name, memory, bf16, CUDA
    compute capability (``cc``; ``-`` for AMD cards; JSON also gives its source)."""
    from lintlora.estimate.gpus import list_gpus

    gpus = list_gpus()
    if fmt == "json":
        click.echo(json.dumps([{"key": (g.aliases or (g.key,))[0], "name": g.name, "memory_bytes": g.memory_bytes,
                                "memory_kind": g.memory_kind, "memory_source": g.memory_source,
                                "bf16": g.bf16_supported, "compute_capability": g.compute_capability,
                                "compute_capability_source": g.compute_capability_source} for g in gpus],
                              indent=2))
        return
    rows = [((g.aliases or (g.key,))[0], g.name, f"{g.memory_gib:.2f}",
             g.memory_kind,
             "yes" if g.bf16_supported else "no", g.compute_capability or "-") for g in gpus]
    head = ("--gpu", "name", "GiB", "memory", "bf16", "cc")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head, *rows]:
        click.echo("  ".join(c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    click.echo("memory: 'usable' is the total CUDA gives a process (PyTorch's 'total capacity'); 'nvidia-smi' its "
               "Total, which also counts memory the driver reserves; 'nominal' the marketed size, an upper bound. "
               "--gpu-memory overrides it.")


def build_report(estimate, arch, gpu, tokens: int | None, dialect: str | None = None,
                 setup=None) -> dict:
    """The JSON object: ``{"estimate": {...}, "fit": [...], "fit_heading": "..."}``.

    ``dialect``: the config dialect, so that the fit list uses the file's own keys; ``setup``:
    the file's TrainingSetup, so that a script's options use its own names and the heading
    says when the fit rests on a shape the file does not set.
    """
    from lintlora.estimate.compute import estimate_time
    from lintlora.estimate.fit import fit_options, heading

    training = estimate.inputs.method != "load"
    t = None
    if gpu is not None and training:
        t = estimate_time(estimate.inputs, arch, gpu.training_tflops(estimate.inputs.compute_dtype),
                          gpu.memory_bandwidth_gbps, tokens)
    from lintlora.estimate.report_schema import SCHEMA_VERSION, counters_json
    from lintlora.estimate.versions import TERM_PACKAGES, version_of

    est = estimate.to_json()
    est["counters"] = counters_json(estimate)
    given = tuple(e[0] for e in estimate.inputs.assumed_versions if e[0] not in TERM_PACKAGES)
    est["assumed_versions"] = {p: {"version": str(v), "origin": o} for p in TERM_PACKAGES + given
                               for v, o in [version_of(estimate.inputs.assumed_versions, p)]}
    est["time_seconds"] = (t.total_seconds if t and t.total_seconds is not None else None)
    est["step_seconds"] = t.step_seconds if t else None
    est["tokens_per_second"] = t.tokens_per_second if t else None
    est["gpu_memory_bytes"] = estimate.gpu_memory_bytes
    if gpu is not None and gpu.memory_kind == "nominal" and estimate.gpu_memory_bytes == gpu.memory_bytes:
        # no cited CUDA-visible total for this card: the marketed size, which the usable total
        # falls short of (lintlora/data/gpus.json: RTX 3090 24,269 MiB and RTX 4090 24,207 MiB of
        # 24 GiB, 1.2-1.5% less; ECC cards T4 15,109 of 16,384 MiB and A10G 22,731 of 24,576 MiB,
        # about 8% less)
        est["assumptions"] = est["assumptions"] + [
            f"{gpu.name}: {gpu.memory_bytes / 2**30:.2f} GiB is the card's nominal (marketed) size; "
            "CUDA reports less (1-2% less on the cards lintlora has figures for, about 8% with ECC "
            "on), so a small headroom may be none: pass --gpu-memory with what "
            "torch.cuda.get_device_properties(0).total_memory reports"]
        est["gpu_memory_nominal"] = True
    if t:
        est["assumptions"] = est["assumptions"] + t.assumptions
    if gpu is not None and getattr(gpu, "ambiguity_note", None):
        est["assumptions"].append(gpu.ambiguity_note)
    est["warnings"] = [a for a in est["assumptions"] if a.startswith("warning:")]
    est["training"] = training
    fit = [o.to_json() for o in fit_options(estimate, arch, dialect=dialect, setup=setup)] if training else []
    return {"schema_version": SCHEMA_VERSION, "estimate": est, "fit": fit, "fit_heading": heading(estimate, setup),
            "verdict": verdict_report(estimate, arch) if training else None}


def _search_json(found, headroom) -> dict | None:
    if found is None:
        return None
    return {"fits": found.value, "fits_with_headroom": headroom.value if headroom is not None else None,
            "low": found.low, "high": found.high, "estimates": found.estimates + (headroom.estimates if headroom else 0)}


def verdict_report(estimate, arch) -> dict | None:
    """The verdict object of the JSON report (``None`` without a GPU): ``state`` (``"fits"``,
    ``"tight"``, ``"over"``: :func:`lintlora.estimate.verdict.verdict`), ``fits``, and the
    searches: ``largest_batch`` (per device, at the estimate's sequence length) and
    ``longest_seq_len`` (tokens, at its batch), each ``{"fits", "fits_with_headroom", "low",
    "high", "estimates"}``: the largest value that fits (``None``: not even ``low``), the
    largest that leaves :data:`~lintlora.estimate.verdict.TIGHT_HEADROOM` free, the bounds
    searched and the re-estimates made."""
    from lintlora.estimate.verdict import TIGHT_HEADROOM, largest_batch, longest_sequence, verdict

    state = verdict(estimate.device_bytes, estimate.gpu_memory_bytes)
    if state is None:
        return None
    batch = largest_batch(estimate, arch)
    batch_room = largest_batch(estimate, arch, headroom=True, high=batch.value) if batch and batch.value else None
    seq = longest_sequence(estimate, arch)
    seq_room = longest_sequence(estimate, arch, headroom=True, high=seq.value) if seq and seq.value else None
    return {"state": state, "fits": state != "over", "headroom_share": TIGHT_HEADROOM,
            "largest_batch": _search_json(batch, batch_room), "longest_seq_len": _search_json(seq, seq_room),
            "seq_len": estimate.inputs.seq_len, "batch_size": estimate.inputs.batch_size}


def _verdict_lines(v: dict | None, gpu_named: bool) -> list[str]:
    """The verdict and search lines of the text report."""
    if v is None:
        return ([] if gpu_named else
                ["verdict: none, no GPU named (--gpu or --gpu-memory): exit status 0"])
    state = {"over": "[red]does not fit[/red] (exit status 1)",
             "tight": "[yellow]tight[/yellow]: fits with less than 10% free, may run out of memory on a longer "
                      "batch or a fragmented allocator (exit status 0)",
             "fits": "[green]fits[/green] (exit status 0)"}[v["state"]]
    lines = [f"verdict: {state}"]

    def found(item: dict | None, what: str, unit: str, bound: str) -> str | None:
        if item is None:
            return None
        if item["fits"] is None:
            return f"{what}: none fits, not even {item['low']:,}{unit.rstrip('s') if item['low'] == 1 else unit}"
        text = f"{what}: {item['fits']:,}{unit}"
        if item["fits_with_headroom"] != item["fits"]:
            room = item["fits_with_headroom"]
            text += f" ({room:,}{unit} with 10% free)" if room else " (none with 10% free)"
        return text + f"; searched {item['low']:,} to {item['high']:,}{bound}"

    for line in (found(v["largest_batch"], f"largest per-device batch at {v['seq_len']:,} tokens that fits", "", ""),
                 found(v["longest_seq_len"], f"longest sequence at batch {v['batch_size']:,} that fits", " tokens",
                       " (the model's context)")):
        if line:
            lines.append(line)
    return lines


def _gib(b: float | None) -> str:
    return "—" if b is None else f"{b / 2**30:.2f} GiB"


def _render_text(report: dict, console) -> None:
    from rich.markup import escape as _markup
    from rich.table import Table

    from lintlora.report.escape import for_terminal, terminal_line

    def escape(text: str) -> str:  # names and values from the file: shown, then rich-escaped
        return _markup(for_terminal(text))

    e = report["estimate"]
    for w in e.get("warnings", ()):
        console.print(f"[bold yellow]{escape(w)}[/bold yellow]")
    title = f"{e['model']} · {e['framework']} · peak at {e['peak_phase']}"
    if e.get("sharding"):  # several GPUs (lintlora.estimate.sharding): the figures are per GPU
        title += f" · {e['sharding']}, per GPU"
    if not e.get("training", True):
        title = f"{e['model']} · {e['framework']} · load only (no training)"
    # the title on a line of its own: as a table title it is wrapped to the table's width
    console.print(f"[bold]{_markup(terminal_line(for_terminal(title)))}[/bold]")
    table = Table(show_lines=False)
    table.add_column("component")
    table.add_column("GiB", justify="right")
    table.add_column("", no_wrap=True)
    total = max(1, e["device_bytes"])
    for k, v in e["breakdown"].items():
        bar = "█" * int(round(30 * v / total))
        table.add_row(k.replace("_", " "), f"{v / 2**30:.2f}", bar)
    console.print(table)
    console.print(f"allocated (torch max_memory_allocated): {_gib(e['allocated_bytes'])}")
    console.print(f"reserved (torch max_memory_reserved):   {_gib(e['reserved_bytes'])}")
    console.print(f"device (nvidia-smi, must fit):          [bold]{_gib(e['device_bytes'])}[/bold]")
    if e.get("host_offload_bytes"):
        console.print(f"host RAM (CPU offload, per rank):       {_gib(e['host_offload_bytes'])}")
    if e["gpu"]:
        head = e["headroom_bytes"]
        colour = "green" if head is not None and head >= 0 else "red"
        nominal = " (nominal size)" if e.get("gpu_memory_nominal") else ""
        console.print(f"GPU {escape(e['gpu'])}: {_gib(e['gpu_memory_bytes'])}{nominal}, headroom "
                      f"[{colour}]{_gib(head)}[/{colour}]")
    for line in _verdict_lines(report.get("verdict"), bool(e["gpu_memory_bytes"])):
        console.print(line)
    if e.get("step_seconds"):
        line = f"time: {e['step_seconds']:.2f} s per micro-batch, {e['tokens_per_second']:,.0f} tokens/s"
        if e.get("time_seconds"):
            line += f", {e['time_seconds'] / 3600:.2f} h for the training tokens"
        console.print(line)
    if report["fit"]:
        console.print(f"[bold]{report.get('fit_heading', 'what would make it fit')}[/bold] (each re-estimated):")
        for i, o in enumerate(report["fit"], 1):
            mark = "" if o["fits"] is None else (" ✓ fits" if o["fits"] else " ✗")
            console.print(f"  {i}. {escape(o['change'])}: {_gib(o['device_bytes'])} "
                          f"(−{_gib(o['saving_bytes'])}){mark}")
    console.print("[dim]assumptions:[/dim]")
    for a in e["assumptions"]:
        if a not in e.get("warnings", ()):
            console.print(f"  [dim]- {escape(a)}[/dim]")


@click.command("estimate", cls=PathsFirstCommand)
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model", help="hub id (or local path) of the base model")
@click.option("--model-config", type=click.Path(), help="local config.json of the model")
@click.option("--params", help="parameter count for a rough estimate of an unknown model (7B; 1e6 to 1e15)")
@click.option("--method", type=click.Choice(["lora", "qlora", "full"]), default=None)
@click.option("--batch-size", type=BoundedInt(min=1, max=MAX_BATCH_SIZE), default=None,
              help="sequences per micro-batch")
@click.option("--seq-len", type=BoundedInt(min=1, max=MAX_SEQ_LEN), default=None,
              help="tokens per sequence (an encoder-decoder's source length)")
@click.option("--target-seq-len", type=BoundedInt(min=1, max=MAX_SEQ_LEN), default=None,
              help="decoder (target) tokens per sequence of an encoder-decoder model (T5, BART)")
@click.option("--gpu", help="GPU name (rtx4090, a100-80gb, 'NVIDIA GeForce RTX 3090')")
@click.option("--gpu-memory", help="usable GPU memory (24GiB, at most 1 PiB), overriding the catalog")
@click.option("--rank", type=BoundedInt(min=1, max=MAX_LORA_RANK), default=None,
              help="LoRA rank r")
@click.option("--targets", help="comma-separated target_modules, or all-linear")
@click.option("--dropout", type=FiniteFloatRange(0, 1, max_open=True), default=None,
              help="lora_dropout, in [0, 1)")
@click.option("--optim", help="optimizer, a TrainingArguments optim name (adamw_torch, paged_adamw_8bit, ...)")
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None)
@click.option("--attn", "attn", type=click.Choice(["sdpa", "flash_attention_2", "eager"]), default=None)
@click.option("--framework", type=click.Choice(["transformers", "trl", "torch", "unsloth", "axolotl",
                                                 "llama-factory", "torchtune", "litgpt"]), default=None)
@click.option("--tokens", type=str, default=None, help="training tokens for the time estimate (2e8, 200M; at most 1e15)")
@click.option("--quant", "quant_flag", type=click.Choice(["nf4", "fp4", "int8", "gptq", "awq", "mxfp4", "fp8", "none"]),
              default=None, help="base weights: bitsandbytes nf4/fp4/int8 quantized on load, a checkpoint stored as "
                                 "gptq/awq/mxfp4/fp8, or none (16-bit); default: the checkpoint's own")
@click.option("--double-quant/--no-double-quant", "double_quant", default=None,
              help="bitsandbytes bnb_4bit_use_double_quant (nf4/fp4; default on)")
@click.option("--quant-bits", type=BoundedInt(min=2, max=8), default=None, help="GPTQ/AWQ bits (default 4)")
@click.option("--quant-group-size", type=BoundedInt(min=-1, max=1 << 20), default=None,
              help="GPTQ/AWQ group size (default 128; -1: one group per column)")
@click.option("--modules-to-save", "modules_to_save", default=None,
              help="comma-separated modules trained in full next to the adapter (peft modules_to_save: embed_tokens,lm_head)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--list-gpus", "list_gpus", is_flag=True,
              help="list the GPU catalog (names for --gpu, memory, bf16) and exit")
@knob_options
@trainer_options
def estimate_cmd(file, model, model_config, params, method, batch_size, seq_len, target_seq_len, gpu, gpu_memory,
                 rank, targets, dropout, optim, gradient_checkpointing, attn, framework, tokens, quant_flag, double_quant,
                 quant_bits, quant_group_size, modules_to_save, fmt, list_gpus, **flags):
    """Estimate peak GPU memory and training time for FILE or for the flags given.

    Exit status: 0 when the estimate fits the GPU (also "tight", and with no GPU named: no
    verdict), 1 when it does not fit (any setup of FILE), 2 for a usage error (an unknown model,
    GPU or option value, a file with no training setup)."""
    # the two flag groups' keyword arguments: the trainer's (trainer_flags.trainer_options) and
    # the framework knobs' (knob_flags.knob_options)
    trainer_flags = {k: flags.pop(k) for k in ("trainer", "max_prompt_length", "max_completion_length",
                                               "num_generations", "precompute_ref_log_probs", "ref_model")}
    knobs = flags
    if list_gpus:
        _print_gpus(fmt)
        return
    from lintlora.estimate.architecture import UnknownModelError, resolve_architecture
    from lintlora.estimate.gpus import UnknownGpuError, find_gpu
    from lintlora.estimate.architecture import format_count
    from lintlora.estimate.memory import KNOWN_OPTIMIZERS, EstimateInputs, estimate_memory
    from lintlora.estimate.params import NoDefaultTargetsError
    from lintlora.estimate.profiles import get_profile
    from lintlora.report.escape import for_terminal
    from lintlora.settings import parse_memory_size

    try:
        g = find_gpu(gpu) if gpu else None
    except UnknownGpuError as exc:
        raise click.UsageError(str(exc)) from None
    mem = None
    if gpu_memory:
        try:
            mem = parse_memory_size(gpu_memory)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--gpu-memory") from None
    mem = mem or (g.memory_bytes if g else None)
    n_params = _parse_count(params, "--params")
    if n_params is not None and n_params < MIN_PARAMS:
        hint = f" — did you mean {params.strip()}B?" if n_params > 0 else ""
        raise click.BadParameter(f"{params!r} is {format_count(n_params)} parameters; a model has at least a million "
                                 f"(write 7B, 7e9 or 500M){hint}", param_hint="--params")
    n_tokens = None
    if tokens is not None:
        n = _parse_count(tokens, "--tokens", MAX_TOKENS)
        if n is None or n < 1:
            raise click.BadParameter(f"{tokens!r}: the number of training tokens must be positive "
                                     f"(examples: 2e8, 200M)", param_hint="--tokens")
        n_tokens = int(n)
    if optim is not None and optim not in KNOWN_OPTIMIZERS:
        import difflib

        close = difflib.get_close_matches(optim, KNOWN_OPTIMIZERS, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise click.BadParameter(f"unknown optimizer {optim!r}.{hint} Known (TrainingArguments optim): "
                                 f"{', '.join(KNOWN_OPTIMIZERS)}", param_hint="--optim")
    if quant_group_size == 0:
        raise click.BadParameter("0 is not a group size (-1 for one group per column, or 1 and up)",
                                 param_hint="--quant-group-size")
    if (quant_bits is not None or quant_group_size is not None) and quant_flag not in ("gptq", "awq"):
        raise click.BadParameter("--quant-bits and --quant-group-size describe a GPTQ or AWQ checkpoint: "
                                 "give --quant gptq or --quant awq", param_hint="--quant-bits")
    mts_value = tuple(m.strip() for m in modules_to_save.split(",") if m.strip()) if modules_to_save else None
    target_value = None
    if targets:
        target_value = targets if targets.lower() in ("all-linear", "all_linear") else tuple(
            t.strip() for t in targets.split(",") if t.strip())

    reports = []
    versions = versions_from_flags(knobs.get("assume_version"))
    try:
        if file:
            setups = _read_setups(file)
            if not setups:
                raise click.UsageError(f"{for_terminal(file)}: no training setup found")
            from lintlora.estimate.from_setup import inputs_from_setup

            project_versions = _project_versions(setups, file)
            for setup in setups:
                setup, run_notes = _with_distribution(setup, file)
                name = model or (setup.get("model.name_or_path").value
                                 if setup.get("model.name_or_path").known else None)
                # a model path the file names is followed only inside its project
                from lintlora.safeio import confinement_root

                arch = resolve_architecture(name, framework=setup.framework, model_config=model_config,
                                            params=n_params, base_dir=file,
                                            root=None if model else confinement_root(file))
                inputs, notes = inputs_from_setup(setup, arch, g,
                                                  assumed_versions=versions or project_versions(setup))
                notes.extend(run_notes)
                changes = {}
                if quant_flag is not None or double_quant is not None:
                    changes.update(_quant_override(inputs, quant_flag, quant_bits, quant_group_size,
                                                   double_quant, notes))
                if mts_value is not None:
                    changes["modules_to_save"] = mts_value
                if method:
                    changes["method"] = method
                    if method == "qlora" and not changes.get("quant", inputs.quant):
                        changes.update(quant="nf4", double_quant=True)
                if batch_size:
                    changes["batch_size"] = batch_size
                if seq_len:
                    changes["seq_len"] = seq_len
                if target_seq_len:
                    changes["target_seq_len"] = target_seq_len
                if rank:
                    changes["lora_r"] = rank
                if target_value is not None:
                    changes["target_modules"] = target_value
                if dropout is not None:
                    changes["lora_dropout"] = dropout
                if optim:
                    changes["optim"] = optim
                if gradient_checkpointing is not None:
                    changes["gradient_checkpointing"] = gradient_checkpointing
                if attn:
                    changes["attn_implementation"] = attn
                if trainer_flags.get("trainer"):
                    # --trainer on a file: the file's run priced as that trainer (its own trainer
                    # settings are replaced by the flags')
                    inputs = apply_trainer_flags(replace(inputs, seq_len=int(changes.get("seq_len", inputs.seq_len))),
                                                 notes, **trainer_flags)
                if changes:
                    notes.append("command-line flags override the file: " + ", ".join(
                        f"{k}={getattr(v, 'label', v)}" for k, v in changes.items()))
                    changes["assumed"] = tuple(a for a in inputs.assumed if a not in changes)
                    inputs = replace(inputs, **changes)
                inputs = apply_knobs(inputs, knobs, notes, flags_only=False)
                if target_seq_len and not arch.is_encoder_decoder:
                    notes.append(f"--target-seq-len ignored: {arch.name} is a decoder-only model")
                est = estimate_memory(inputs, arch, get_profile(inputs.framework), assumptions=notes,
                                      gpu=g.name if g else None, gpu_memory_bytes=mem)
                reports.append(build_report(est, arch, g, n_tokens, setup.dialect, setup=setup))
        else:
            if not (model or model_config or n_params):
                raise click.UsageError("give a FILE, or --model HUB_ID (or --model-config / --params)")
            arch = resolve_architecture(model, framework=framework, model_config=model_config, params=n_params)
            notes = []
            m = method or "lora"
            if method is None:
                notes.append("--method not given: assumed lora")
            if batch_size is None:
                notes.append("--batch-size not given: assumed 1")
            if seq_len is None:
                notes.append("--seq-len not given: assumed 512")
            if target_seq_len and not arch.is_encoder_decoder:
                notes.append(f"--target-seq-len ignored: {arch.name} is a decoder-only model")
            fw = framework or "transformers"
            quant, stored, dq, qnotes = _flag_quant(arch, g, m, quant_flag, quant_bits, quant_group_size, double_quant,
                                                 framework=fw)
            notes.extend(qnotes)
            if quant and m == "lora":
                m = "qlora"
            if quant and m == "full":
                raise click.UsageError("a quantized base cannot be fine-tuned in full: give --method lora, or "
                                       "--quant none for a 16-bit checkpoint")
            # QLoRA through HF: prepare_model_for_kbit_training is assumed, and it turns checkpointing
            # on unless told otherwise (peft src/peft/utils/other.py, use_gradient_checkpointing=True);
            # LLaMA-Factory enables it unless disable_gradient_checkpointing
            # (src/llamafactory/model/model_utils/checkpointing.py prepare_model_for_training)
            prep = m == "qlora" and fw in ("transformers", "trl", "torch")
            kbit = prep and quant in ("nf4", "fp4", "int8")
            # Unsloth's get_peft_model checkpoints by default (use_gradient_checkpointing="unsloth",
            # unsloth/models/llama.py FastLlamaModel.get_peft_model)
            gc_default = prep or fw in ("llama-factory", "unsloth")
            if gradient_checkpointing is None:
                if prep:
                    notes.append("--gradient-checkpointing not given: on, as prepare_model_for_kbit_training "
                                 "enables it by default (use_gradient_checkpointing=True); "
                                 "--no-gradient-checkpointing for a run without it")
                elif gc_default:
                    notes.append("--gradient-checkpointing not given: on (" + ("Unsloth's get_peft_model"
                                 if fw == "unsloth" else "LLaMA-Factory's") + " default)")
                else:
                    notes.append("--gradient-checkpointing not given: assumed off")
            if m != "full" and rank is None:
                notes.append("--rank not given: assumed 8 (peft default)")
            if m != "full" and target_value is None:
                notes.append("--targets not given: peft's default target_modules for the model type")
            given = {"batch_size": batch_size, "seq_len": seq_len, "lora_r": rank, "target_modules": target_value,
                     "optim": optim, "attn_implementation": attn,
                     "gradient_checkpointing": True if gc_default else gradient_checkpointing}
            inputs = EstimateInputs(
                method=m, batch_size=batch_size or 1, seq_len=seq_len or 512,
                gradient_checkpointing=gc_default if gradient_checkpointing is None else gradient_checkpointing,
                quant=quant, double_quant=dq, stored_quant=stored,
                modules_to_save=mts_value or (),
                lora_r=rank or 8, lora_dropout=dropout if dropout is not None else 0.0,
                target_modules=target_value, optim=optim or "adamw_torch",
                attn_implementation=attn or "sdpa", kbit_upcast=kbit, framework=fw, target_seq_len=target_seq_len,
                assumed=tuple(k for k, v in given.items() if v is None))
            if kbit:
                notes.append(f"qlora: {quant.upper()}{' with double quantization' if dq else ''}, bf16 compute, "
                             "prepare_model_for_kbit_training (fp32 non-quantized weights and residual stream) assumed")
            elif m == "qlora" and fw in ("axolotl", "llama-factory"):
                notes.append(f"qlora under {fw}: non-quantized weights stay in torch_dtype (axolotl casts them "
                             "back after prepare_model_for_kbit_training; LLaMA-Factory does not call it)")
            if quant in ("nf4", "fp4"):
                from lintlora.estimate.versions import bnb_note

                notes.append(bnb_note(versions, fw))
            inputs = apply_knobs(inputs, knobs, notes, flags_only=True)
            inputs = apply_trainer_flags(inputs, notes, **trainer_flags)
            est = estimate_memory(inputs, arch, get_profile(fw), assumptions=notes,
                                  gpu=g.name if g else None, gpu_memory_bytes=mem)
            reports.append(build_report(est, arch, g, n_tokens))
    except (UnknownModelError, NoDefaultTargetsError) as exc:
        raise click.UsageError(for_terminal(str(exc))) from None

    if fmt == "json":
        from lintlora.report.escape import json_dumps

        for r in reports:
            for w in r["estimate"]["warnings"]:
                click.echo(for_terminal(w), err=True)
        out = reports[0] if len(reports) == 1 else {"schema_version": reports[0]["schema_version"], "estimates": reports}
        click.echo(json_dumps(out))
    else:
        from rich.console import Console

        # piped or redirected: no wrapping of the sentences at the 80 columns rich assumes there
        console = Console(file=sys.stdout, soft_wrap=not sys.stdout.isatty())
        for r in reports:
            _render_text(r, console)
    # the verdict as the exit status: 1 when a setup does not fit the GPU, so that
    # `lintlora estimate train.py --gpu a100-40gb && accelerate launch train.py` guards a launch
    if any((r.get("verdict") or {}).get("state") == "over" for r in reports):
        click.get_current_context().exit(1)


def _flag_quant(arch, gpu, method: str, quant_flag: str | None, bits: int | None, group_size: int | None,
                double_quant: bool | None, framework: str = "transformers"):
    """The base weights of a flags-only estimate: ``(EstimateInputs.quant, stored_quant,
    double_quant, notes)``. ``--quant`` wins; else the checkpoint's own storage
    (``arch.stored_quant``); else for ``--method qlora`` bitsandbytes NF4 with double
    quantization, or torchao's NF4 under torchtune (its ``qlora_*`` builders: torchao
    ``to_nf4``, block 64 with the block scales quantized again, as the torchtune dialect reads it)."""
    from lintlora.estimate.stored_quant import from_flags, resolve_for_gpu

    if quant_flag is not None:
        q, sq, dq, notes = from_flags(quant_flag, bits, group_size, double_quant)
        own = getattr(arch, "stored_quant", None)
        if own is not None and (sq is None or sq.method != own.method):
            notes.append(f"--quant {quant_flag} overrides the checkpoint's own storage ({own.label})")
    elif getattr(arch, "stored_quant", None) is not None:
        sq = arch.stored_quant
        q, dq, notes = sq.method, sq.double_quant, [f"stored quantization: {sq.reading}"]
    elif method == "qlora" and framework == "torchtune":
        return "torchao-nf4", None, True, ["qlora under torchtune: torchao NF4 (to_nf4, block 64, double-quantized "
                                           "scales)"]
    elif method == "qlora":
        dq = True if double_quant is None else double_quant
        return "nf4", None, dq, []
    else:
        return None, None, False, []
    if sq is not None:
        sq, more = resolve_for_gpu(sq, gpu)
        notes.extend(more)
    return q, sq, dq, notes


def _quant_override(inputs, quant_flag: str | None, bits: int | None, group_size: int | None,
                    double_quant: bool | None, notes: list) -> dict:
    """EstimateInputs changes for ``--quant``/``--double-quant`` given with a FILE."""
    from lintlora.estimate.stored_quant import from_flags

    if quant_flag is None:
        if inputs.quant in ("nf4", "fp4"):
            return {"double_quant": bool(double_quant)}
        notes.append("--double-quant/--no-double-quant ignored: the base is not bitsandbytes 4-bit")
        return {}
    q, sq, dq, more = from_flags(quant_flag, bits, group_size, double_quant)
    notes.extend(more)
    changes = {"quant": q, "stored_quant": sq, "double_quant": dq}
    if q is None and inputs.method == "qlora":
        changes["method"] = "lora"
    elif q is not None and inputs.method == "lora":
        changes["method"] = "qlora"
    if q not in ("nf4", "fp4", "int8"):
        changes["kbit_upcast"] = False
    return changes


def _launch_of(path: str, root: str):
    """The launch that runs ``path`` (a command in a launch file of its project, found by the
    same bounded walk as lint's: :class:`lintlora.runs.LaunchIndex`, so ``scripts/train.sh``
    beside, above or in a sibling folder of the script; one whose entry point, ``-m`` module
    file or dialect config is ``path``), the number of them found, and the files read. Launch
    discovery reads, never runs (lintlora.extract.launch)."""
    from lintlora.runs import LaunchIndex

    index = LaunchIndex([os.path.splitext(os.path.basename(path))[0]])
    mine = index.launches_for(path)
    return (mine[0] if mine else None), len(mine), tuple(index.discovery(root).files_read)


def _with_distribution(setup, path: str):
    """``setup`` with its ``distributed`` section (:func:`lintlora.extract.distributed.distributed_for`:
    the launch that runs the file when one is found beside or above it, the DeepSpeed JSON,
    accelerate config, ``fsdp_config`` and dialect keys it names), and the problems met as notes.
    A setup that already has the section (built with its run) is kept."""
    if setup.distributed is not None:
        run = setup.run
        return setup, ([f"launched by {run.where} ({run.launcher})"] if run is not None else [])
    from lintlora.extract.distributed import distributed_for
    from lintlora.safeio import confinement_root

    root = confinement_root(path)
    launch, count, launch_files = _launch_of(path, root)
    dist, files, problems = distributed_for(setup, launch, root=root)
    notes = [f"{p.message} ({os.path.basename(p.path)}{':' + str(p.line) if p.line else ''})" for p in problems]
    if launch is not None:
        notes.append(f"launched by {os.path.basename(launch.path)}:{launch.line} ({launch.launcher})"
                     + (f"; {count} launches run this file, the first is priced" if count > 1 else ""))
    inputs = tuple(dict.fromkeys((*setup.inputs, *launch_files, *files)))
    if dist is None and inputs == setup.inputs:
        return setup, notes
    return setup.replace(distributed=dist, inputs=inputs), notes
def _project_versions(setups: list, path: str):
    """``setup -> ((package, version, origin), ...)``: the releases the project around ``path``
    pins (its requirements, pyproject.toml, lock files; the notebook's install lines), as the
    linter reads them (:func:`lintlora.extract.setup_versions.attach_versions`,
    :meth:`lintlora.context.Context.estimator_versions`). ``--assume-version`` overrides them
    (:func:`lintlora.estimate.knob_flags.apply_knobs`). Reading them never fails the estimate."""
    try:
        from lintlora.context import Context
        from lintlora.discovery import file_kind
        from lintlora.extract.setup_versions import attach_versions
        from lintlora.safeio import read_text_bounded
        from lintlora.settings import DEFAULT_MAX_FILE_BYTES

        kind = file_kind(path, explicit=True)
        text = read_text_bounded(path, DEFAULT_MAX_FILE_BYTES) if kind == "notebook" else None
        attach_versions(setups, path, text=text, kind=kind)
        context = Context()
    except Exception:  # noqa: BLE001 - the versions are a refinement; the defaults then apply
        return lambda setup: ()

    def versions(setup) -> tuple:
        try:
            return context.estimator_versions(setup)
        except Exception:  # noqa: BLE001
            return ()

    return versions


def _read_setups(path: str):
    """Setups of a file through the engine (``lintlora.engine.read_setups``), as the run the
    launch found beside or above it starts them (:func:`_launch_of`), when there is one.

    Raises:
        click.UsageError: the file cannot be read or parsed, or the extractor for its kind is
            not available; the message names the file and the location when known.
    """
    from lintlora.extract import ExtractError, NotATrainingConfig

    try:
        from lintlora.engine import read_setups
        from lintlora.safeio import confinement_root
        from lintlora.settings import Settings

        # the launch that runs the file (run.sh beside or above it): its values are the run's
        launch = _launch_of(path, confinement_root(path))[0]
        return list(read_setups(path, Settings(), launch=launch))
    except ExtractError as exc:
        # a notebook's error line counts within its code cell (as lint's reports say it)
        cell = f":cell {exc.cell}" if getattr(exc, "cell", None) else ""
        where = (f"{cell}:line {exc.line}" if cell and exc.line else cell if cell
                 else f":{exc.line}:{exc.column or 1}" if exc.line else "")
        raise click.UsageError(f"{path}{where}: {exc.message}") from None
    except NotATrainingConfig as exc:
        raise click.UsageError(f"{path}: not a training config ({exc})") from None
    except ImportError as exc:
        raise click.UsageError(f"{path}: this file kind cannot be read yet ({exc}); "
                               f"use --model with the flags instead") from None
    except OSError as exc:
        raise click.UsageError(f"{path}: {exc}") from None
