"""LL005 device-map (page: ``rules/LL005.md``).

Four sub-cases, each with its own message and fix:

(a) ``device_map="auto"``/``"balanced"``/``"balanced_low_0"``/``"sequential"`` or a dict spanning
    several GPUs, in a script that trains data-parallel (:func:`lintlora.facts.data_parallel`):
    the map splits one model over the GPUs of one process, while DistributedDataParallel needs
    a full replica per process; accelerate refuses to prepare such a model
    (huggingface/accelerate#1802, #1840; QwenLM/Qwen#745). Error.
(b) a hard-coded device 0 (``device_map={"": 0}``, ``"cuda:0"``, ``0``) under the same
    evidence: every process loads its replica on GPU 0. Warning.
(c) a quantized model moved with ``.cuda()``/``.to(...)`` (``model_move`` calls): transformers'
    ``PreTrainedModel.cuda``/``.to`` refuse it for 8-bit models and, with bitsandbytes older than
    0.43.2, for 4-bit ones, and refuse any dtype cast of a bitsandbytes model
    (transformers ``modeling_utils.py``; nuprl/MultiPL-E#137, bitsandbytes#547,
    transformers#24540). Error for a cast, warning for a move.
(d) offload to ``"cpu"``/``"disk"`` (device_map values, ``llm_int8_enable_fp32_cpu_offload=True``)
    for a model being trained: bitsandbytes cannot train offloaded quantized layers
    (unslothai/unsloth#1629, transformers#26153), and offloaded layers are copied to the GPU on
    every forward pass. Error when quantized, warning otherwise.

(a) and (b) stay silent without data-parallel evidence in the file; weak signs (``ddp_*``
arguments, a rank read that places nothing: :data:`lintlora.facts.WEAK_PARALLEL_KINDS`) are not
evidence. A ``device_map`` (or offload flag) that is a default the user sets at launch makes the
finding info, with how it is set (:func:`lintlora.facts.launch_hint`).

When the run is known (issue 15), its launch is evidence too, and the first named: a launch of
more than one process (``torchrun --nproc_per_node 4``, ``accelerate launch --num_processes
4``: :func:`lintlora.facts.launch_evidence`), or a distribution stating a world size above one
(an accelerate config's ``num_processes``); the finding then carries a
:class:`~lintlora.findings.RelatedLocation` at the launch line ("launched by run.sh:3 with 4
processes"). A run known to be one process has no data-parallel evidence at all, whatever the
file prepares for. A map that is a launch-time default the known launch does not override is
the run's value: an error, worded "run.sh:3 does not pass --device_map".

A branch on the world size is evidence only for the arm it guards: (a) and (b) judge the map a
launcher's process passes (``ModelLoad.extra["device_map_launched"]``, read by the Python
extractor with ``WORLD_SIZE=2``/``LOCAL_RANK=1`` where the map depends on them), so
``None if world_size != 1 else "auto"`` (and its if/else, ``ddp`` and ``{"": local_rank}``
forms) is silent, and ``"auto" if world_size > 1 else None`` is an error. A map chosen by a
launch-time option naming the rank or world size (:data:`_RANK_OPTION`) is not judged.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules._text import capacity, gib, join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, Evidence, Origin, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["DeviceMap", "classify_device_map"]

SPLITTING_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})
"""device_map strings that let accelerate spread one model over every visible GPU
(transformers ``from_pretrained`` docs; accelerate ``infer_auto_device_map``)."""

_DTYPES = frozenset({"bfloat16", "float16", "float32", "float64", "half", "float", "double"})
_CAST_METHODS = (".half", ".float", ".bfloat16", ".double")

_PER_RANK_MAP = ('device_map={"": int(os.environ.get("LOCAL_RANK", 0))} (or {"": '
                 'Accelerator().process_index})')

_RANK_OPTION = re.compile(r"(?i)(?:^|[-.\s])(?:local_rank|local-rank|world_size|world-size|num_processes|"
                          r"process_index|local_process_index|rank)\b")
"""A launch-time option or field naming the rank or world size (``--local_rank``, which
``torch.distributed.launch`` passes per process, ``TrainingArguments.local_rank``,
``--world_size``): a device_map chosen by it follows the launch, like one chosen by
``$WORLD_SIZE``."""

_EVIDENCE_WORDS = {
    "accelerator": "creates an accelerate Accelerator",
    "env-rank": "places or launches processes by the rank / world size it reads from the environment",
    "deepspeed": "configures DeepSpeed",
    "fsdp": "configures FSDP",
    "ddp-argument": "passes ddp_* training arguments",
    "torchrun": "initialises torch.distributed",
    "multi-gpu": "asks for several GPUs",
}


def _device(value: Any) -> str | None:
    """One device_map target as ``"cuda:N"``, ``"cuda"``, ``"cpu"``, ``"disk"``, ``"mps"``...;
    ``None`` when it is not a recognisable device."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"cuda:{value}"
    if isinstance(value, str):
        v = value.strip().lower()
        if v.isascii() and v.isdigit():  # '²'.isdigit() is True but int('²') raises
            return f"cuda:{int(v)}"
        if v in ("cuda", "cpu", "disk", "mps", "meta", "xpu", "npu") or v.startswith(("cuda:", "xpu:", "npu:")):
            return v
    return None


def classify_device_map(value: Any) -> dict[str, Any]:
    """Classify a normalised device_map value.

    Returns a dict with:
        ``splits``: True for a splitting string or a dict over two or more GPUs;
        ``zero``: True when every module goes to GPU 0 (``0``, ``"cuda:0"``, ``{"": 0}``...);
        ``offloaded``: the module names sent to ``"cpu"``/``"disk"`` while others go to a GPU
        (or any module sent to disk); empty when nothing is offloaded.
    """
    out: dict[str, Any] = {"splits": False, "zero": False, "offloaded": ()}
    if isinstance(value, str) and value.strip().lower() in SPLITTING_MAPS:
        out["splits"] = True
        return out
    if isinstance(value, dict):
        devices = {k: _device(v) for k, v in value.items()}
        if any(d is None for d in devices.values()):
            return out  # something we cannot read: judge nothing
        gpus = {d for d in devices.values() if d.startswith(("cuda", "xpu", "npu"))}
        off = tuple(k or "(whole model)" for k, d in devices.items() if d in ("cpu", "disk"))
        if off and (gpus or any(d == "disk" for d in devices.values())):
            out["offloaded"] = off
        if len(gpus) >= 2:
            out["splits"] = True
        elif gpus == {"cuda:0"} and not off:
            out["zero"] = True
        return out
    device = _device(value)
    if device == "cuda:0":
        out["zero"] = True
    return out


def _evidence_phrase(evidence: tuple[Evidence, ...]) -> str:
    first = evidence[0]
    if first.kind == "launch":  # the run's launch (facts.launch_evidence): "run.sh:3 launches 4 processes"
        return first.detail or "the run is launched with several processes"
    words = _EVIDENCE_WORDS.get(first.kind, first.kind)
    if first.detail:
        words += f" ({first.detail})"
    if first.span is not None:
        words += f" at line {first.span.line}"
    return f"the script {words}"


def _map_text(value: Any) -> str:
    if isinstance(value, str):
        return f'device_map="{value}"'
    return f"device_map={value!r}"


class DeviceMap(Rule):
    """device_map and model placement that break or slow training (see the module docstring)."""

    code = "LL005"
    name = "device-map"
    severity = Severity.ERROR
    summary = "device_map or model placement that breaks data-parallel, quantized or any training"
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        evidence = facts.data_parallel(setup)
        quantized = facts.is_quantized(setup)
        bits = facts.quant_bits(setup)
        dm = setup.get("model.device_map")
        dm_span = dm.span or dm.key_span or (setup.model.span if setup.model is not None else None)
        kind = classify_device_map(dm.value) if dm.known else {"splits": False, "zero": False, "offloaded": ()}
        # Under data-parallel launch the environment is set per process, so a map that rests on an
        # environment default (`os.environ.get("LOCAL_RANK", 0)`, or a branch ruled out by
        # `WORLD_SIZE`'s default) is not what runs; nor is a launch-time default such as an
        # argparse `--local_rank` (torch.distributed.launch passes it per process) for (b).
        launch_decided = dm.origin is Origin.ENV_DEFAULT or (
            facts.set_at_launch(dm, setup) and _RANK_OPTION.search(dm.source or "") is not None)
        hard_coded = dm.origin in (Origin.LITERAL, Origin.VARIABLE, Origin.CONFIG_FILE)
        launched = setup.model.extra.get("device_map_launched") if setup.model is not None else None
        if launched is not None and launched.known:
            # the map a launcher's process passes, read with the launcher's environment: a branch
            # on the world size is evidence only for the arm it guards. `None if world_size != 1
            # else "auto"` splits only in one process (correct); `"auto" if world_size > 1 else
            # None` splits exactly under the launcher (reported)
            ddp_kind = classify_device_map(launched.value)
            ddp_map = launched
        else:
            ddp_kind, ddp_map = kind, dm
        rests_on = (f"{_map_text(dm.value)} ({dm.origin.value}{', ' + dm.source if dm.source else ''})",) \
            if dm.known and dm.origin.is_default else ()

        # a map that is a default chosen at launch: said so, at info (facts.set_at_launch)
        hint = facts.launch_hint(dm, setup)
        unpassed = facts.unpassed_hint(dm, setup)
        at_launch = (f" This is {_map_text(dm.value)} {hint}." if hint
                     else f" This is {_map_text(dm.value)}: {unpassed}." if unpassed else "")
        # the places the data-parallel verdict rests on: the run's launch, a launch-passed map
        related = (facts.launch_related(setup) if evidence and evidence[0].kind == "launch" else ()) \
            + facts.setting_related(dm, _map_text(dm.value)) + (
                facts.launch_related(setup) if unpassed else ())

        # (a) a map splitting the model, under data-parallel training
        by_launcher = ddp_map is not dm
        if evidence and ddp_kind["splits"] and setup.is_training and (by_launcher or not launch_decided):
            qual = f" For a {bits}-bit model accelerate blocks this on purpose." if quantized else ""
            shown = _map_text(ddp_map.value)
            if by_launcher:
                single = ("no device_map" if dm.known and dm.value is None
                          else _map_text(dm.value) if dm.known else "another map")
                lead = (f"Under a data-parallel launcher (WORLD_SIZE above 1) the script chooses {shown} "
                        f"(a single process gets {single}), which splits one model over several GPUs inside "
                        "one process")
            else:
                lead = f"{shown} splits one model over several GPUs inside one process"
            yield self.finding(
                context, setup, (ddp_map.span or ddp_map.key_span or dm_span) if by_launcher else dm_span,
                f"{lead}, but {_evidence_phrase(evidence)}, so it trains data-parallel: DistributedDataParallel "
                f"needs a full replica per process, and accelerate refuses to prepare a model spread over "
                f"devices (accelerate#1802).{qual}{'' if by_launcher else at_launch}",
                fix=(f"Load one full replica per process with {_PER_RANK_MAP}; or keep {shown} "
                     "and run a single process (python train.py, or accelerate launch --num_processes 1)."),
                fixed_setup=setup.set("model.device_map", None, "LL005 fix: one replica per process"),
                severity=Severity.INFO if hint and not by_launcher else Severity.ERROR,
                rests_on=() if by_launcher else rests_on, related=related,
            )

        # (b) everything on GPU 0, under data-parallel training
        if evidence and ddp_kind["zero"] and setup.is_training and (hard_coded or by_launcher):
            yield self._zero_finding(context, setup, (ddp_map.span or dm_span) if by_launcher else dm_span,
                                     _map_text(ddp_map.value), evidence, related)
        if evidence and setup.is_training and not quantized:
            for call in setup.calls_of("model_move"):
                if any(_device(a.value) == "cuda:0" for a in call.args.values() if a.known):
                    yield self._zero_finding(context, setup, call.span, f"{call.qualified_name}(\"cuda:0\")",
                                             evidence, related)

        # (c) a quantized model moved or cast by hand
        if quantized:
            for call in setup.calls_of("model_move"):
                if call.receiver and setup.model is not None and setup.model.variable \
                        and call.receiver != setup.model.variable:
                    continue  # another model (a reference or reward model), not the quantized one
                yield self._move_finding(context, setup, call, bits)

        # (d) offload for a model being trained
        flag = setup.get("quantization.llm_int8_enable_fp32_cpu_offload")
        flag_on = flag.known and flag.value is True
        if setup.is_training and (kind["offloaded"] or flag_on):
            parts = []
            if kind["offloaded"]:
                places = sorted({_device(v) for v in dm.value.values() if _device(v) in ("cpu", "disk")}) \
                    if isinstance(dm.value, dict) else ["cpu"]
                where = " and ".join("the CPU" if p == "cpu" else "disk" for p in places)
                parts.append(f"device_map sends {join_words(kind['offloaded'])} to {where}")
            if flag_on:
                parts.append("llm_int8_enable_fp32_cpu_offload=True lets loading put modules on the CPU")
            span = dm_span if kind["offloaded"] else (flag.span or flag.key_span)
            fixed = setup.set("model.device_map", None, "LL005 fix: no offload")
            if flag_on:
                fixed = fixed.set("quantization.llm_int8_enable_fp32_cpu_offload", False, "LL005 fix")
            figures = context.figures(setup, fixed)
            fit = ""
            if figures.peak_bytes is not None and figures.gpu_memory_bytes:
                fit = (f" With everything on the GPU the estimated peak is {gib(figures.peak_bytes)} against "
                       f"{capacity(figures)} on the {figures.gpu or 'GPU'}.")
            lead = "; ".join(parts)
            if quantized:
                message = (f"{lead}. The {bits}-bit model is being trained, but bitsandbytes cannot train "
                           "offloaded quantized layers; offload is meant for inference "
                           f"(unsloth#1629, transformers#26153).{fit}")
                severity = Severity.ERROR
            else:
                message = (f"{lead}, for a model being trained: offloaded layers are copied to the GPU on "
                           f"every forward pass, which makes each step many times slower.{fit}")
                severity = Severity.WARNING
            flag_hint = facts.launch_hint(flag, setup) if flag_on else None
            if (hint or not kind["offloaded"]) and (flag_hint or not flag_on):
                # every offload in the message is a default chosen at launch
                message += "".join(f" This is {w} {h}." for w, h in (
                    (_map_text(dm.value), hint), ("llm_int8_enable_fp32_cpu_offload=True", flag_hint)) if h)
                severity = Severity.INFO
            yield self.finding(
                context, setup, span, message,
                fix=('Keep the whole model on the GPU (device_map={"": 0}, or {"": local_rank} per process) '
                     "and drop llm_int8_enable_fp32_cpu_offload; if it does not fit, use a smaller model, "
                     "a GPU with more memory, or shard across GPUs (FSDP / DeepSpeed ZeRO-3)."),
                fixed_setup=fixed, severity=severity,
            )

    def _zero_finding(self, context: "Context", setup: TrainingSetup, span, what: str,
                      evidence: tuple[Evidence, ...], related: tuple = ()) -> Finding:
        return self.finding(
            context, setup, span,
            f"{what} puts the model on GPU 0 in every process, but {_evidence_phrase(evidence)}, so it "
            "trains data-parallel: every replica lands on GPU 0 (out of memory there) while the other "
            "GPUs idle.",
            fix=f"Place each process's replica on its own GPU: {_PER_RANK_MAP}.",
            fixed_setup=setup.set("model.device_map", None, "LL005 fix: one replica per process"),
            severity=Severity.WARNING, related=related,
        )

    def _move_finding(self, context: "Context", setup: TrainingSetup, call: CallSite,
                      bits: int | None) -> Finding:
        method = call.qualified_name.rsplit(".", 1)[-1] if call.qualified_name else "to"
        cast = call.qualified_name.endswith(_CAST_METHODS) or any(
            a.known and isinstance(a.value, str) and a.value in _DTYPES for a in call.args.values())
        width = f"{bits}-bit" if bits else "quantized"
        fixed = setup.without_calls("model_move")
        if cast:
            return self.finding(
                context, setup, call.span,
                f".{method}(...) casts a model loaded in {width}: transformers refuses to cast a "
                "bitsandbytes-quantized model to another dtype.",
                fix=("Remove the cast; set the dtype of the layers that stay unquantized with "
                     "torch_dtype=torch.bfloat16 in from_pretrained (and bnb_4bit_compute_dtype for the "
                     "quantized ones)."),
                fixed_setup=fixed, severity=Severity.ERROR,
            )
        return self.finding(
            context, setup, call.span,
            f".{method}() moves a model loaded in {width}: from_pretrained has already placed the quantized "
            "weights (on the GPU when no device_map is given), and transformers refuses the move for 8-bit "
            "models in most releases and, with bitsandbytes older than 0.43.2, for 4-bit ones "
            "(bitsandbytes#547, transformers#24540).",
            fix=('Remove the call; choose the device when loading: device_map={"": 0}, or '
                 '{"": local_rank} per process under data-parallel training.'),
            fixed_setup=fixed, severity=Severity.WARNING,
        )
