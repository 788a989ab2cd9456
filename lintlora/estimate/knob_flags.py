"""``lintlora estimate`` flags for the framework knobs the script path prices, and
``--assume-version``.

Each flag sets the :class:`~lintlora.estimate.memory.EstimateInputs` field the script path
sets from a file (:mod:`lintlora.estimate.setup_knobs`, :mod:`lintlora.estimate.from_setup`):

==========================  =============================  ==========================================
flag                        field                          written in a file as
==========================  =============================  ==========================================
``--optimizer-in-bwd``      ``optimizer_in_bwd``           torchtune ``optimizer_in_bwd: True``
``--activation-offloading`` ``activation_offload``         torchtune ``enable_activation_offloading``
``--compile``               ``compile``                    torchtune ``compile: True``
``--checkpoint-offload``    ``checkpoint_offload``         Unsloth ``use_gradient_checkpointing=
                                                           "unsloth"``, axolotl
                                                           ``gradient_checkpointing: offload``,
                                                           LLaMA-Factory ``use_unsloth_gc``
``--liger``                 ``liger``                      ``use_liger_kernel``, axolotl
                                                           ``liger_*``, LLaMA-Factory
                                                           ``enable_liger_kernel``
``--loss``                  ``loss_impl``                  torchtune ``loss._component_``, axolotl
                                                           ``cut_cross_entropy``
``--precision P``            ``weight_dtype``,              litgpt ``precision``, ``bf16``/``fp16``
                            ``compute_dtype``,             with ``torch_dtype``
                            ``master_fp32``
``--assume-version P=V``    ``assumed_versions``           the project's pins (``lintlora check``)
``--num-gpus N``            ``num_gpus``                   ``torchrun --nproc_per_node``, litgpt
                                                           ``devices``
``--zero-stage S``          ``zero_stage``                 DeepSpeed ``zero_optimization.stage``
``--fsdp STRATEGY``         ``fsdp``                       TrainingArguments ``fsdp=``, accelerate
                                                           ``fsdp_sharding_strategy``
``--fsdp-version 1|2``      ``fsdp_version``               accelerate ``fsdp_version``
``--offload W``             ``offload_optimizer``,         DeepSpeed ``offload_optimizer``/
                            ``offload_param``              ``offload_param`` ``device: cpu``
``--gradient-accumulation-  ``gradient_accumulation_steps``TrainingArguments
steps N``                                                  ``gradient_accumulation_steps``
``--quant-storage DTYPE``   ``quant_storage``              ``bnb_4bit_quant_storage``
==========================  =============================  ==========================================

litgpt with ``--num-gpus`` above 1 and no ``--fsdp``/``--zero-stage`` is priced as litgpt runs
it: FULL_SHARD, each ``Block`` one unit, checkpointed; FSDP2 (``ModelParallelStrategy``, litgpt
since 2025-08) unless ``--fsdp-version 1`` (``FSDPStrategy``, ``use_orig_params=True``), said so.

Packing (``packing``, LLaMA-Factory ``neat_packing``, torchtune ``dataset.packed``) has no flag:
the estimate already takes every sequence at ``--seq-len`` tokens, which packing makes exact.
``--json-schema`` prints :data:`lintlora.estimate.report_schema.REPORT_SCHEMA` and exits.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

import click

from lintlora.estimate.profiles import LOSS_K

__all__ = ["knob_options", "apply_knobs", "versions_from_flags", "KNOB_FIELDS", "apply_sharding"]

_MAX_GPUS = 1 << 16

# flag parameter -> EstimateInputs field
KNOB_FIELDS = {"optimizer_in_bwd": "optimizer_in_bwd", "activation_offloading": "activation_offload",
               "compile_layers": "compile", "checkpoint_offload": "checkpoint_offload", "liger": "liger",
               "loss": "loss_impl"}
# --precision -> (weight dtype, compute dtype): litgpt's precision names (litgpt/utils.py
# get_default_supported_precision, Lightning's precision plugins: "-true" keeps the weights in
# that dtype, "-mixed" keeps float32 weights and computes in 16 bits under autocast) and short ones
PRECISIONS: dict[str, tuple[str, str]] = {
    "bf16": ("bfloat16", "bfloat16"), "bf16-true": ("bfloat16", "bfloat16"),
    "fp16": ("float16", "float16"), "16-true": ("float16", "float16"),
    "fp32": ("float32", "float32"), "32-true": ("float32", "float32"),
    "bf16-mixed": ("float32", "bfloat16"), "fp16-mixed": ("float32", "float16"), "16-mixed": ("float32", "float16"),
}
# more --assume-version flags than packages is a mistake, not a request (bounded input)
_MAX_ASSUME = 16


def _print_schema(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from lintlora.estimate.report_schema import REPORT_SCHEMA

    click.echo(json.dumps(REPORT_SCHEMA, indent=2))
    ctx.exit(0)


def knob_options(f: Callable) -> Callable:
    """Add the framework-knob flags to a click command (they arrive as keyword arguments named
    as in :data:`KNOB_FIELDS`, plus ``assume_version``)."""
    options = [
        click.option("--assume-version", "assume_version", multiple=True, metavar="PKG=VER",
                     help="a library release the estimate assumes (bitsandbytes, transformers, peft, trl, torch, torchao "
                          "change its terms; repeatable), e.g. bitsandbytes=0.41.1"),
        click.option("--optimizer-in-bwd/--no-optimizer-in-bwd", "optimizer_in_bwd", default=None,
                     help="optimizer step fused into backward (torchtune optimizer_in_bwd): no gradient buffers"),
        click.option("--activation-offloading/--no-activation-offloading", "activation_offloading", default=None,
                     help="saved activations offloaded to CPU RAM (torchtune enable_activation_offloading)"),
        click.option("--compile/--no-compile", "compile_layers", default=None,
                     help="decoder layers compiled with torch.compile (torchtune compile: True)"),
        click.option("--checkpoint-offload/--no-checkpoint-offload", "checkpoint_offload", default=None,
                     help="checkpointed layer inputs offloaded to CPU RAM (Unsloth 'unsloth' checkpointing)"),
        click.option("--precision", "precision", type=click.Choice(list(PRECISIONS)), default=None,
                     help="weights and compute dtype: bf16/fp16/fp32 (litgpt bf16-true/16-true/32-true), or "
                          "bf16-mixed/fp16-mixed (float32 weights, 16-bit autocast); default bf16"),
        click.option("--liger/--no-liger", "liger", default=None,
                     help="Liger kernels (fused RMSNorm, SwiGLU, linear + cross-entropy)"),
        click.option("--loss", "loss", type=click.Choice(sorted(LOSS_K)), default=None,
                     help="loss implementation: hf (transformers >= 4.46), hf-legacy, bf16-own, chunked "
                          "(torchtune CEWithChunkedOutputLoss, litgpt), fused (Liger, Cut Cross-Entropy)"),
        click.option("--num-gpus", "num_gpus", type=click.IntRange(1, _MAX_GPUS), default=None,
                     help="data-parallel ranks (GPUs); alone: DDP replicas; the estimate is per GPU"),
        click.option("--zero-stage", "zero_stage", type=click.Choice(["0", "1", "2", "3"]), default=None,
                     help="DeepSpeed ZeRO stage: 1 optimizer states, 2 + gradients, 3 + parameters partitioned"),
        click.option("--fsdp", "fsdp", type=click.Choice(["full_shard", "shard_grad_op", "hybrid_shard", "no_shard"]),
                     default=None, help="FSDP sharding strategy"),
        click.option("--fsdp-version", "fsdp_version", type=click.Choice(["1", "2"]), default=None,
                     help="FSDP1 (flat parameters, the default) or FSDP2 (fully_shard, per parameter)"),
        click.option("--offload", "offload", type=click.Choice(["none", "optimizer", "param", "both"]), default=None,
                     help="DeepSpeed/FSDP CPU offload: optimizer states and/or parameters in host RAM"),
        click.option("--gradient-accumulation-steps", "gradient_accumulation_steps", type=click.IntRange(1, 1 << 20),
                     default=None, help="micro-batches per optimizer step (FSDP1 no_sync keeps unsharded gradients)"),
        click.option("--quant-storage", "quant_storage", type=click.Choice(["bfloat16", "float16", "float32", "uint8"]),
                     default=None, help="bnb_4bit_quant_storage (FSDP/ZeRO-3 shard 4-bit weights only in the model dtype)"),
        click.option("--json-schema", "json_schema", is_flag=True, expose_value=False, is_eager=True,
                     callback=_print_schema, help="print the JSON schema of --format json and exit"),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def versions_from_flags(values: tuple[str, ...] | None) -> tuple[tuple[str, str], ...]:
    """``--assume-version`` values as ``((package, version), ...)``, the last one of a package
    winning.

    Raises:
        click.BadParameter: a value :func:`lintlora.estimate.versions.parse_assume_version` refuses.
    """
    from lintlora.estimate.versions import parse_assume_version

    values = tuple(values or ())
    if len(values) > _MAX_ASSUME:
        raise click.BadParameter(f"{len(values)} values: at most {_MAX_ASSUME}", param_hint="--assume-version")
    out: dict[str, str] = {}
    for v in values:
        try:
            pkg, ver = parse_assume_version(v)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--assume-version") from None
        out[pkg] = ver
    return tuple(out.items())


def apply_knobs(inputs: Any, knobs: dict[str, Any], notes: list[str], *, flags_only: bool) -> Any:
    """``inputs`` with the knob flags given (``None`` = not given) applied; notes appended.

    ``flags_only``: no file was read, so the framework's own defaults are applied as the script
    path applies them: Unsloth's ``get_peft_model`` checkpoints with ``"unsloth"`` (offloaded)
    by default, below 512 tokens plainly (:mod:`lintlora.estimate.setup_knobs`).
    """
    from lintlora.estimate import versions as V
    from lintlora.estimate.setup_knobs import UNSLOTH_OFFLOAD_MIN_TOKENS

    changes: dict[str, Any] = {}
    given = []
    for param, field in KNOB_FIELDS.items():
        v = knobs.get(param)
        if v is not None:
            changes[field] = v
            given.append(f"--{param.replace('_layers', '').replace('_', '-')}={v}")
    if changes.get("activation_offload") and not inputs.gradient_checkpointing and "gradient_checkpointing" not in changes:
        notes.append("--activation-offloading without checkpointing: torchtune requires enable_activation_checkpointing "
                     "with it (recipes raise otherwise); priced as offloading every saved activation")
    if flags_only and inputs.framework == "unsloth" and "checkpoint_offload" not in changes and inputs.gradient_checkpointing:
        off = inputs.seq_len >= UNSLOTH_OFFLOAD_MIN_TOKENS
        changes["checkpoint_offload"] = off
        notes.append("unsloth: get_peft_model's default use_gradient_checkpointing='unsloth' assumed: "
                     + ("checkpointed layer inputs offloaded to CPU RAM" if off else
                        f"below {UNSLOTH_OFFLOAD_MIN_TOKENS} tokens plain checkpointing")
                     + " (--no-checkpoint-offload for True)")
    precision = knobs.get("precision")
    if precision:
        weight, compute = PRECISIONS[precision]
        changes.update(weight_dtype=weight, compute_dtype=compute,
                       master_fp32=inputs.method == "full" and weight == "float32" and compute != "float32")
        given.append(f"--precision={precision}")
    versions = versions_from_flags(knobs.get("assume_version"))
    if versions:
        flagged = {p for p, _v in versions}
        # the flags win package by package over the releases the project's files pinned
        versions = versions + tuple(e for e in inputs.assumed_versions if e[0] not in flagged)
        changes["assumed_versions"] = versions
        given.append("--assume-version " + " ".join(f"{p}={v}" for p, v, *_ in versions if p in flagged))
    quant = getattr(inputs, "quant", None)
    if quant in ("nf4", "fp4"):
        vers = versions or inputs.assumed_versions
        changes["bnb_saves_input"] = V.bnb_saves_input(vers)
        if versions:
            notes[:] = [n for n in notes if not n.startswith(("bitsandbytes ", "bitsandbytes >="))]
            notes.append(V.bnb_note(vers))
    if quant == "torchao-nf4" and versions:
        changes["torchao_unchunked"] = V.torchao_unchunked(versions)
    changes.update(apply_sharding(inputs, knobs, given, notes))
    if given:
        notes.append("command-line knobs: " + ", ".join(given))
    if not changes:
        return inputs
    return replace(inputs, **changes)


def apply_sharding(inputs: Any, knobs: dict[str, Any], given: list[str], notes: list[str]) -> dict[str, Any]:
    """The :class:`~lintlora.estimate.memory.EstimateInputs` changes of the sharding flags
    (``--num-gpus``, ``--zero-stage``, ``--fsdp``, ``--fsdp-version``, ``--offload``,
    ``--gradient-accumulation-steps``, ``--quant-storage``); flags given are appended to
    ``given``, defaults taken to ``notes``."""
    ch: dict[str, Any] = {}
    if knobs.get("num_gpus") is not None:
        ch["num_gpus"] = int(knobs["num_gpus"])
    if knobs.get("zero_stage") is not None:
        ch["zero_stage"] = int(knobs["zero_stage"])
    if knobs.get("fsdp") is not None:
        ch["fsdp"] = knobs["fsdp"]
    if knobs.get("fsdp_version") is not None:
        ch["fsdp_version"] = int(knobs["fsdp_version"])
    off = knobs.get("offload")
    if off is not None:
        ch["offload_optimizer"] = off in ("optimizer", "both")
        ch["offload_param"] = off in ("param", "both")
    if knobs.get("gradient_accumulation_steps") is not None:
        ch["gradient_accumulation_steps"] = int(knobs["gradient_accumulation_steps"])
    if knobs.get("quant_storage") is not None:
        ch["quant_storage"] = knobs["quant_storage"]
    for k in ("num_gpus", "zero_stage", "fsdp", "fsdp_version", "offload", "gradient_accumulation_steps",
              "quant_storage"):
        if knobs.get(k) is not None:
            given.append(f"--{k.replace('_', '-')}={knobs[k]}")
    n = ch.get("num_gpus", getattr(inputs, "num_gpus", 1))
    if "num_gpus" in ch:  # the file's "set at launch" line no longer applies
        notes[:] = [x for x in notes if not x.startswith("the number of GPUs is set at launch")]
    if ch.get("zero_stage") and ch.get("fsdp"):
        raise click.UsageError("--zero-stage and --fsdp are two different shardings: give one")
    if (ch.get("zero_stage") or ch.get("fsdp")) and n == 1 and "num_gpus" not in ch:
        notes.append("--zero-stage/--fsdp without --num-gpus: one rank, nothing is partitioned (give --num-gpus N)")
    if (n > 1 and getattr(inputs, "framework", "") == "litgpt" and not ch.get("zero_stage") and not ch.get("fsdp")
            and not getattr(inputs, "fsdp", None)):
        # litgpt finetune/lora.py with devices > 1: since litgpt #2086 (2025-08-13,
        # Lightning-AI/litgpt@26857050 litgpt/finetune/lora.py:158 and parallelize_fn:522)
        # ModelParallelStrategy, each Block checkpoint-wrapped and fully_shard-ed (FSDP2); before,
        # FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block}) (FSDP1,
        # Lightning-AI/litgpt@8641822 finetune/lora.py): --fsdp-version 1
        ch["fsdp"] = "full_shard"
        ch["gradient_checkpointing"] = True
        ch.setdefault("fsdp_version", 2)
        notes.append("litgpt with several devices: FULL_SHARD with activation checkpointing per Block assumed "
                     "(litgpt finetune/lora.py: ModelParallelStrategy/fully_shard since litgpt 2025-08, FSDP2; "
                     "--fsdp-version 1 for the FSDPStrategy of earlier releases)")
    if ch.get("offload_param") and not (ch.get("zero_stage", getattr(inputs, "zero_stage", 0)) == 3
                                        or ch.get("fsdp", getattr(inputs, "fsdp", None))):
        notes.append("--offload param needs ZeRO-3 or FSDP: ignored")
        ch["offload_param"] = False
    return ch
