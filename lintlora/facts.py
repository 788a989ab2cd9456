"""Facts derived from a TrainingSetup that several rules and the estimator share.

Keeping them here means one answer to "is checkpointing on?" for every rule and for the
estimator, instead of each re-deriving it slightly differently.

One policy for values set at launch (:func:`set_at_launch`): an argparse option (including
the options ``HfArgumentParser``/``TrlParser`` make of ``TrainingArguments`` fields), a
dataclass field, a function parameter or an environment variable is what the run uses only if
the launch does not pass another value. A finding resting on one says how it is set
(:func:`launch_hint`) and is reported at info.

When the run is known (``setup.run``, issue 15), the launch decides: a value it passes has
origin ``LAUNCH`` and is the run's value, not "set at launch"; an argparse/dataclass/function
default it does not override is the run's value too (:func:`run_decides`), worded
``"run.sh:3 does not pass --X"`` (:func:`unpassed_hint`); :func:`set_at_launch` and
:func:`launch_hint` take the setup for that. The run's own facts: :func:`run_processes`,
:func:`launch_evidence` (data-parallel evidence of kind ``"launch"``), :func:`sharded_run`,
:func:`run_fp16_uses`, and :func:`launch_related` / :func:`setting_related`, the
:class:`~lintlora.findings.RelatedLocation` every finding resting on the launch carries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import os

from lintlora.findings import RelatedLocation
from lintlora.training_setup import CallSite, Evidence, Origin, Setting, Span, TrainingSetup

__all__ = [
    "Fact", "checkpointing", "is_quantized", "quant_bits", "DATA_PARALLEL_KINDS",
    "WEAK_PARALLEL_KINDS", "data_parallel", "weak_parallel", "frozen_base", "Use", "fp16_uses",
    "dataloader_workers", "LAUNCH_ORIGINS", "set_at_launch", "launch_hint", "added_tokens",
    "has_hf_model", "deciding_call", "peft_wraps", "unsure_peft_wrap", "kbit_prep_checkpoints",
    "kbit_prep_without_checkpointing", "checkpointing_reset", "KBIT_PREP_SOURCE",
    "prequantized_name", "half_precision_uses", "half_dtype", "OverflowFamily", "OVERFLOW_FAMILIES",
    "overflow_family",
    "RUN_DECIDED_ORIGINS", "run_decides", "unpassed_hint", "run_processes", "launch_evidence",
    "launch_related", "setting_related", "sharded_run", "where", "run_fp16_uses", "Sharding",
]

# ---- values the user sets at launch ----------------------------------------------------------

LAUNCH_ORIGINS = frozenset({Origin.ARGPARSE_DEFAULT, Origin.DATACLASS_DEFAULT,
                            Origin.FUNCTION_DEFAULT, Origin.ENV_DEFAULT})
"""Origins of values that are defaults the user replaces without editing the file: argparse
options (``HfArgumentParser``/``TrlParser`` fields included, see
:mod:`lintlora.extract.pyargs`), dataclass fields, function parameters (``fire`` entry
points and helpers) and environment variables."""


RUN_DECIDED_ORIGINS = frozenset({Origin.ARGPARSE_DEFAULT, Origin.DATACLASS_DEFAULT,
                                  Origin.FUNCTION_DEFAULT})
"""Launch-time defaults that the run's launch decides when it is known (``setup.run``): the
launch command binds every option it passes (``Origin.LAUNCH``, issue 15 item 2), so an
option still at its argparse / dataclass / function default is one the command does not
pass, and the default is the run's value. Environment defaults are not among them: the
environment of a run is more than its launch line (a shell profile, a scheduler)."""


def run_decides(setting: Setting | None, setup: TrainingSetup | None) -> bool:
    """Whether ``setting`` is a launch-time default that the known launch of ``setup`` leaves
    as it is (:data:`RUN_DECIDED_ORIGINS`, ``setup.run`` set): the value is definite."""
    return (setup is not None and setup.run is not None and setting is not None and setting.known
            and setting.origin in RUN_DECIDED_ORIGINS)


def set_at_launch(setting: Setting | None, setup: TrainingSetup | None = None) -> bool:
    """Whether ``setting`` is a default the user may replace at launch (:data:`LAUNCH_ORIGINS`).

    The policy every rule follows: a finding that rests on such a value says so
    (:func:`launch_hint`) and is reported at ``info``, since the run the user launches may
    well pass another value. A value the launch passed (``Origin.LAUNCH``) is never one: it
    is the run's value. Given ``setup`` whose launch is known (``setup.run``), a default the
    launch does not override is not one either (:func:`run_decides`); :func:`unpassed_hint`
    then words it.
    """
    if setting is None or not setting.known or setting.origin not in LAUNCH_ORIGINS:
        return False
    return not run_decides(setting, setup)


def _option_words(setting: Setting) -> str:
    """The option that sets a launch-time default, as the user types it: ``--gc``,
    ``--gradient_checkpointing`` (a dataclass field), ``$VAR``; ``"the option"`` when the
    source does not name one."""
    source = (setting.source or "").strip()
    first = source.split()[0].rstrip(":;,") if source else ""
    if setting.origin is Origin.ARGPARSE_DEFAULT and first.startswith("-"):
        return first
    if setting.origin is Origin.ENV_DEFAULT and first.startswith("$"):
        return first
    if setting.origin is Origin.DATACLASS_DEFAULT:
        field_name = source.rsplit(".", 1)[-1] if source else ""
        if field_name.isidentifier():
            return f"--{field_name}"
    return "the option"


def where(span: Span | None) -> str:
    """``"run.sh:5"``: a span's file name and line, for messages (``""`` for none)."""
    if span is None:
        return ""
    return f"{os.path.basename(span.path)}:{span.line}"


def unpassed_hint(setting: Setting | None, setup: TrainingSetup | None) -> str | None:
    """For a default the known launch leaves as it is (:func:`run_decides`), the clause
    ``"run.sh:3 does not pass --gradient_checkpointing"``; ``None`` otherwise."""
    if not run_decides(setting, setup):
        return None
    assert setting is not None and setup is not None and setup.run is not None
    return f"{setup.run.where} does not pass {_option_words(setting)}"


def launch_hint(setting: Setting | None, setup: TrainingSetup | None = None) -> str | None:
    """How the user overrides a launch-time default, as a clause for messages:
    ``"unless --gradient_checkpointing is passed at launch"``, ``"unless $LOCAL_RANK is set"``;
    ``None`` when ``setting`` is not one (:func:`set_at_launch`, with ``setup``: a launch
    value, or a default the known launch leaves, is none; see :func:`unpassed_hint`)."""
    if not set_at_launch(setting, setup):
        return None
    assert setting is not None
    source = (setting.source or "").strip()
    first = source.split()[0].rstrip(":;,") if source else ""
    if setting.origin is Origin.ARGPARSE_DEFAULT:
        flag = first if first.startswith("-") else "the option"
        return f"unless {flag} is passed at launch"
    if setting.origin is Origin.ENV_DEFAULT:
        var = first if first.startswith("$") else "the environment variable"
        return f"unless {var} is set at launch"
    if setting.origin is Origin.DATACLASS_DEFAULT:
        field_name = source.rsplit(".", 1)[-1] if source else ""
        if field_name.isidentifier():
            return f"unless --{field_name} is passed at launch (the default of {source})"
        return "unless the dataclass default is overridden at launch"
    where = f" for {source}" if source else ""
    return f"unless another value is passed{where}"



@dataclass(frozen=True)
class Fact:
    """A derived yes/no/unknown answer with the place that decided it.

    Attributes:
        value: ``True``/``False``, or ``None`` when it cannot be decided.
        span: the span of the deciding setting or call (``None`` for a default).
        reason: a short phrase for messages ("gradient_checkpointing=False",
            "TrainingArguments default (False)").
        from_default: the answer rests on a library default or assumption, not on code the
            user wrote.
        at_launch: when the answer rests on a default the user replaces at launch
            (:func:`set_at_launch`), how: ``"unless --gradient_checkpointing is passed at
            launch"``; ``None`` otherwise.
        condition: when the answer holds on one branch of the script only, that branch in
            words (``"set to False at line 16 under `if model_args.use_peft:`"``); ``None``
            otherwise.
        at_run: when the answer rests on a launch-time default that the run's known launch
            does not override (:func:`unpassed_hint`), how that reads:
            ``"run.sh:3 does not pass --gradient_checkpointing"``; the answer is then
            definite (``at_launch`` is ``None``).
    """

    value: bool | None
    span: Span | None
    reason: str
    from_default: bool = False
    at_launch: str | None = None
    condition: str | None = None
    at_run: str | None = None


def deciding_call(setup: TrainingSetup, fact: Fact) -> CallSite | None:
    """The call of ``setup`` whose span decided ``fact`` (``prepare_model_for_kbit_training``,
    ``gradient_checkpointing_disable()``, ...), or ``None`` when a setting or a default did."""
    if fact.span is None:
        return None
    return next((call for call in setup.calls if call.span == fact.span), None)


KBIT_PREP_SOURCE = "peft src/peft/utils/other.py, prepare_model_for_kbit_training (0.20.1.dev0 at 5d602fdbf)"
"""Where :func:`kbit_prep_checkpoints` is read from: the helper calls
``model.gradient_checkpointing_enable()`` only when the model ``is_loaded_in_8bit``/``_4bit``
or is GPTQ/AQLM/EETQ/HQQ/torchao-quantized, and ``use_gradient_checkpointing`` (default True)."""

_PREQUANTIZED_NAME = ("gptq", "awq", "bnb", "4bit", "8bit", "int4", "int8", "nf4", "hqq", "aqlm", "eetq",
                      "torchao", "fp8", "gguf", "exl2", "quant")
"""Words in a hub id that mark a checkpoint saved quantized (``TheBloke/...-GPTQ``,
``unsloth/...-bnb-4bit``): its config.json carries the quantization, so the model loads
quantized without a config in the script."""


def prequantized_name(name: Setting | None) -> bool:
    """Whether a model id names a checkpoint saved quantized (:data:`_PREQUANTIZED_NAME`:
    ``TheBloke/...-GPTQ``, ``unsloth/...-bnb-4bit``), which loads quantized without a
    quantization config in the script. ``False`` for an unresolved or non-string name."""
    if name is None or not name.known or not isinstance(name.value, str):
        return False
    low = name.value.lower()[:400]
    return any(word in low for word in _PREQUANTIZED_NAME)


def _quantized_base(bits: Setting | None, method: Setting | None, name: Setting | None) -> bool | None:
    if bits is None or not bits.known:
        return None
    value = bits.value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        width = int(value)
    except (ValueError, OverflowError):
        return None
    if width > 0:
        return True
    if method is not None and method.known and method.value not in (None, "", "bitsandbytes"):
        return True  # GPTQ/AWQ/HQQ... configs: quantized whatever the bit field says
    if name is None or not name.known or not isinstance(name.value, str):
        return None
    if any(word in name.value.lower() for word in _PREQUANTIZED_NAME):
        return None
    return False


def kbit_prep_checkpoints(setup: TrainingSetup, call: CallSite | None = None) -> bool | None:
    """Whether ``prepare_model_for_kbit_training`` can turn checkpointing on for the base it
    prepares (:data:`KBIT_PREP_SOURCE`): True for a base loaded quantized, False for one loaded
    unquantized (a model whose hub id is read, with no quantization config and no sign of a
    checkpoint saved quantized), None when that cannot be told (the load is not followed, its
    quantization is unresolved).

    The base is the call's own (``call.args`` ``base_bits``/``base_method``/``base_name``, the
    model the Python extractor followed from the call's argument: in ``if quantize: model =
    ...(quantization_config=...); model = prepare_model_for_kbit_training(model) else: model =
    ...()`` the call prepares the quantized load); without them, the setup's model. With several
    calls and no ``call``, True if any prepares a quantized base."""
    calls = [call] if call is not None else [c for c in setup.calls if c.kind == "prepare_model_for_kbit_training"]
    answers = []
    for c in calls:
        if "base_bits" in c.args:
            answers.append(_quantized_base(c.args.get("base_bits"), c.args.get("base_method"),
                                           c.args.get("base_name")))
    if answers:
        if True in answers:
            return True
        return None if None in answers else False
    q = setup.quantization
    bits = Setting(0, Origin.LITERAL) if q is None else q.bits
    name = setup.model.name_or_path if setup.model is not None else None
    return _quantized_base(bits, q.method if q is not None else None, name)


def kbit_prep_without_checkpointing(setup: TrainingSetup) -> CallSite | None:
    """The last ``prepare_model_for_kbit_training`` call that does not turn checkpointing on
    because the base is loaded unquantized (:func:`kbit_prep_checkpoints` is False; BN35 in
    bug-reports-2), or ``None``."""
    if kbit_prep_checkpoints(setup) is not False:
        return None
    calls = [c for c in setup.calls if c.kind == "prepare_model_for_kbit_training" and not c.synthetic]
    return max(calls, key=lambda c: c.order) if calls else None


def checkpointing_reset(setup: TrainingSetup) -> Setting | None:
    """The conditional ``training_args.gradient_checkpointing = False`` of the setup (the
    Python extractor's ``gradient_checkpointing_reset`` extra: a write under an ``if`` the file
    does not decide, its ``source`` naming the condition), or ``None``."""
    training = setup.training
    if training is None:
        return None
    reset = training.extra.get("gradient_checkpointing_reset")
    if reset is None or not reset.is_(False):
        return None
    return reset


def _call_enables(call: CallSite, kbit_base: bool | None = True) -> bool | None:
    """Whether a call turns checkpointing on (True), off (False), or is unrelated (None).
    ``kbit_base`` is :func:`kbit_prep_checkpoints` (``prepare_model_for_kbit_training`` on an
    unquantized base does neither: the caller skips it)."""
    if call.kind == "gradient_checkpointing_enable":
        return True
    if call.kind == "gradient_checkpointing_disable":
        return False
    if call.kind == "prepare_model_for_kbit_training":
        # peft src/peft/utils/other.py (0.20.1.dev0): use_gradient_checkpointing defaults to
        # True and, when true and the base is quantized, the helper calls
        # model.gradient_checkpointing_enable(); on an unquantized base it does not
        arg = call.args.get("use_gradient_checkpointing")
        if arg is None:
            return True
        if not arg.known:
            return None
        return bool(arg.value)
    return None


def _fsdp_checkpointing(setup: TrainingSetup) -> Fact | None:
    """FSDP's own activation checkpointing, when the trainer shards with FSDP.

    ``TrainingArguments(fsdp=..., fsdp_config={"activation_checkpointing": True})`` (the
    ``fsdp_``-prefixed key is accepted too) checkpoints every wrapped layer in place of
    ``gradient_checkpointing``: transformers ``training_args.py`` (5.24.0,
    ``_process_fsdp_args``, which strips the ``fsdp_`` prefix and prefers it over the training
    argument) and ``trainer.py`` (refuses both at once). ``None`` when FSDP is off; an unknown
    answer when FSDP is on but its config cannot be read (a JSON file path, a variable).
    """
    training = setup.training
    if training is None:
        return None
    fsdp = training.fsdp
    if not (fsdp.known and fsdp.value not in (None, "", False, ())):
        return None
    cfg = training.extra.get("fsdp_config")
    if cfg is None or (cfg.known and cfg.value is None):
        return None
    if not cfg.known or not isinstance(cfg.value, dict):
        return Fact(None, cfg.span or cfg.key_span, "fsdp_config is not resolved (FSDP may checkpoint)")
    for key in ("activation_checkpointing", "fsdp_activation_checkpointing"):
        if cfg.value.get(key) is True:
            return Fact(True, cfg.span or cfg.key_span, f"FSDP activation checkpointing (fsdp_config {key})")
    return None


LITGPT_FSDP_CHECKPOINTING = ("litgpt litgpt/finetune/lora.py: with devices > 1 the recipe's "
                             "ModelParallelStrategy/FSDPStrategy wraps every Block with activation "
                             "checkpointing")
"""Why a litgpt run on several devices checkpoints (the estimator's litgpt sharding says the
same: :mod:`lintlora.estimate.sharding_setup`)."""


def _run_fsdp_checkpointing(setup: TrainingSetup) -> Fact | None:
    """FSDP activation checkpointing that the run's distribution turns on
    (``setup.distributed``): an accelerate config's ``fsdp_activation_checkpointing: true``
    (accelerate's ``FullyShardedDataParallelPlugin(activation_checkpointing=True)``, which
    ``Accelerator.prepare`` applies to every wrapped layer; transformers' Trainer refuses it
    together with ``gradient_checkpointing``, as :func:`_fsdp_checkpointing` cites), or litgpt on several devices
    (:data:`LITGPT_FSDP_CHECKPOINTING`). ``None`` when the run says nothing of it, or is one
    process."""
    dist = setup.distributed
    if dist is None:
        return None
    processes = run_processes(setup)
    if processes is not None and processes.value == 1:
        return None
    ac = dist.fsdp_activation_checkpointing
    if ac.is_(True) and not dist.backend.is_("ddp") and not dist.backend.is_("single"):
        where_set = ac.source or "fsdp_activation_checkpointing: true"
        return Fact(True, ac.span or ac.key_span, f"FSDP activation checkpointing ({where_set})")
    if setup.framework == "litgpt" and dist.backend.is_("fsdp") and processes is not None and processes.value > 1 \
            and not ac.is_(False):
        return Fact(True, dist.backend.span, f"litgpt FSDP on {processes.value} devices ({LITGPT_FSDP_CHECKPOINTING})")
    return None


def has_hf_model(setup: TrainingSetup) -> bool:
    """Whether the setup trains a model that has transformers' checkpointing switch
    (``gradient_checkpointing_enable``): a ``from_pretrained`` model of transformers, peft or
    unsloth, an adapter config or peft wrapping, a trainer's arguments, or a framework config.
    A hand-written loop over some other model (a torchvision ResNet) has none of these."""
    return (setup.model is not None or setup.lora is not None or setup.training is not None
            or setup.has_call("get_peft_model") or setup.has_call("prepare_model_for_kbit_training")
            or setup.kind in ("yaml", "json"))


def checkpointing(setup: TrainingSetup) -> Fact:
    """Whether activation (gradient) checkpointing is on for the training run.

    The trainer's ``gradient_checkpointing=True`` turns it on at ``train()`` time
    (transformers ``Trainer._inner_training_loop`` calls ``model.gradient_checkpointing_enable``
    when ``args.gradient_checkpointing``); ``False`` does *not* undo an earlier
    ``model.gradient_checkpointing_enable()``. FSDP's ``fsdp_config`` activation checkpointing
    counts (:func:`_fsdp_checkpointing`). Explicit calls apply in source order, the last one
    winning. A call whose arguments cannot be resolved makes the answer unknown only if no
    later call settles it. An answer resting on a default the user sets at launch carries
    :attr:`Fact.at_launch`. A hand-written loop with no checkpointing call is "off" only for a
    transformers/peft model (:func:`has_hf_model`); for anything else it is unknown.

    ``prepare_model_for_kbit_training`` turns checkpointing on only for a quantized base
    (:func:`kbit_prep_checkpoints`): on a base loaded unquantized the call is skipped (it
    neither enables nor disables), and on one whose quantization cannot be told it counts as
    enabling (the reading that cannot produce a false "off"). A conditional
    ``training_args.gradient_checkpointing = False`` (:func:`checkpointing_reset`) makes the
    answer off on that branch, unless a call turns checkpointing on: the Fact then carries
    :attr:`Fact.condition` and no :attr:`Fact.at_launch` (no launch option undoes it).
    """
    state: bool | None = False
    span: Span | None = None
    reason = ""
    decided = False
    decider: Setting | None = None
    unknown_call: CallSite | None = None
    kbit_base = kbit_prep_checkpoints(setup) if setup.has_call("prepare_model_for_kbit_training") else True
    for call in sorted(setup.calls, key=lambda c: c.order):
        if call.kind not in ("gradient_checkpointing_enable", "gradient_checkpointing_disable",
                             "prepare_model_for_kbit_training"):
            continue
        if call.kind == "prepare_model_for_kbit_training" and kbit_base is False:
            continue  # peft turns checkpointing on only for a quantized base
        effect = _call_enables(call, kbit_base)
        if effect is None:
            unknown_call = call
            decided = False
            continue
        unknown_call = None
        state, span, decided = effect, call.span, True
        decider = call.args.get("use_gradient_checkpointing")
        reason = f"{call.qualified_name.rsplit('.', 1)[-1]}()"
    trainer_gc: Setting = setup.get("training.gradient_checkpointing")
    reset = checkpointing_reset(setup)
    if reset is not None and not (decided and state) and trainer_gc.origin is not Origin.ASSUMED:
        # (an ASSUMED flag is a fix being evaluated: turning checkpointing on there means
        # dropping the reset too)
        written = f"{reset.expr or 'False'}"
        return Fact(False, reset.key_span or reset.span, f"gradient_checkpointing = {written}",
                    condition=reset.source or "under a condition")
    if trainer_gc.known and trainer_gc.value:
        return Fact(True, trainer_gc.span, "gradient_checkpointing=True",
                    from_default=trainer_gc.origin.is_default)
    if decided and state:
        return Fact(True, span, reason)
    fsdp = _fsdp_checkpointing(setup)
    if fsdp is not None:
        return fsdp
    run_fsdp = _run_fsdp_checkpointing(setup)
    if run_fsdp is not None:
        return run_fsdp
    if unknown_call is not None:
        return Fact(None, unknown_call.span, "an unresolved checkpointing argument")
    if decided and not state:
        return Fact(False, span, reason, from_default=set_at_launch(decider, setup) or run_decides(decider, setup),
                    at_launch=launch_hint(decider, setup), at_run=unpassed_hint(decider, setup))
    if trainer_gc.known:
        if trainer_gc.origin is Origin.LIBRARY_DEFAULT:
            return Fact(False, trainer_gc.key_span,
                        f"the default gradient_checkpointing=False ({trainer_gc.source})",
                        from_default=True)
        if trainer_gc.origin is Origin.LAUNCH:
            return Fact(False, trainer_gc.span or trainer_gc.key_span,
                        f"the launch passes {trainer_gc.source or 'gradient_checkpointing False'}")
        return Fact(False, trainer_gc.span or trainer_gc.key_span,
                    "gradient_checkpointing=False", from_default=trainer_gc.origin.is_default,
                    at_launch=launch_hint(trainer_gc, setup), at_run=unpassed_hint(trainer_gc, setup))
    if setup.training is None and setup.framework in ("torch", "transformers", "trl", "unsloth"):
        if not has_hf_model(setup):
            return Fact(None, None, "no transformers or peft model: nothing to switch checkpointing on")
        # A hand-written loop with no checkpointing call: off, as transformers models start
        # with checkpointing disabled.
        if kbit_base is False:
            return Fact(False, None, "no call in the script turns it on", from_default=True)
        return Fact(False, None, "no checkpointing call in the script", from_default=True)
    return Fact(None, trainer_gc.span, "gradient_checkpointing could not be resolved")


def quant_bits(setup: TrainingSetup) -> int | None:
    """4 or 8 when the base model is loaded quantized, 0 when not, ``None`` when unknown."""
    q = setup.quantization
    if q is None:
        return 0
    if not q.bits.known:
        return None
    value = q.bits.value
    if not value:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return int(value)
    except (ValueError, OverflowError):  # not a bit width (a value an extractor could not normalise)
        return None


def is_quantized(setup: TrainingSetup) -> bool | None:
    """Whether the base model is loaded in 4 or 8 bits (``None`` when unknown)."""
    bits = quant_bits(setup)
    return None if bits is None else bits > 0


# ---- facts added for the rules (LL001-LL007) -------------------------------------------------

DATA_PARALLEL_KINDS = frozenset(
    {"accelerator", "env-rank", "deepspeed", "fsdp", "torchrun", "multi-gpu", "launch"}
)
"""Evidence kinds (see :class:`lintlora.training_setup.Evidence`; ``"launch"``: the run's own
launch, :func:`launch_evidence`) meaning the script runs one
process per GPU, each holding its own replica or shard of the model."""

WEAK_PARALLEL_KINDS = frozenset({"ddp-argument", "env-read"})
"""Evidence kinds that do not show multi-process training by themselves: ``ddp_*`` training
arguments (often copied into single-GPU scripts; the Trainer ignores them in one process) and
reads of ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` that feed nothing placing the model (the
rank read to decide who logs)."""


def data_parallel(setup: TrainingSetup) -> tuple:
    """The launch evidence that the setup trains data-parallel (or sharded): the run's own
    launch first when it starts several processes (:func:`launch_evidence`, kind
    ``"launch"``), then the file's strong kinds (:data:`DATA_PARALLEL_KINDS`) in source order.

    Empty when the known run is one process (:func:`run_processes` is 1: the launcher starts
    one, whatever the file prepares for), and when nothing says so; the latter is not proof
    of a single process (a launcher outside the file can still start several), so rules that
    need this evidence stay silent without it, and so they do with weak evidence alone
    (:func:`weak_parallel`).
    """
    launched = launch_evidence(setup)
    processes = run_processes(setup)
    if launched is None and processes is not None and processes.value == 1:
        return ()
    in_file = tuple(e for e in setup.launch if e.kind in DATA_PARALLEL_KINDS)
    return ((launched,) if launched is not None else ()) + in_file


# ---- the run (issue 15): the launch and its distribution -------------------------------------

MAX_PROCESSES = 1 << 20
"""Process counts above this are not believed (a value no launcher states)."""


def _count(setting: Setting | None) -> Setting | None:
    if setting is None or not setting.known:
        return None
    v = setting.value
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_PROCESSES:
        return None
    return setting


def run_processes(setup: TrainingSetup) -> Setting | None:
    """The number of processes of the run, an ``int`` Setting, or ``None`` when not known:
    the launcher's count (``setup.run.processes``: ``torchrun --nproc_per_node 4``,
    ``accelerate launch --num_processes 4``), else the distribution's world size
    (``setup.distributed.world_size``: an accelerate config's ``num_processes``)."""
    run_count = _count(setup.run.processes) if setup.run is not None else None
    if run_count is not None:
        return run_count
    if setup.distributed is not None:
        return _count(setup.distributed.world_size)
    return None


def _launcher_words(setup: TrainingSetup) -> str:
    run = setup.run
    return f" ({run.launcher})" if run is not None and run.launcher else ""


def launch_evidence(setup: TrainingSetup) -> Evidence | None:
    """The run's launch as data-parallel evidence (kind ``"launch"``), or ``None``: a known run
    of more than one process (:func:`run_processes`), or a distribution whose backend is
    ``ddp``/``deepspeed``/``fsdp`` with a world size above one. The span is the launch line
    (or the line stating the count); ``detail`` is ``"run.sh:3 launches 4 processes
    (torchrun)"``."""
    processes = run_processes(setup)
    if processes is None or processes.value <= 1:
        return None
    dist = setup.distributed
    backend = dist.backend.value if dist is not None and dist.backend.known else None
    if setup.run is None and backend not in ("ddp", "deepspeed", "fsdp"):
        return None
    if setup.run is not None:
        span = setup.run.span
        detail = f"{setup.run.where} launches {processes.value} processes{_launcher_words(setup)}"
    else:
        span = processes.span or (dist.span if dist is not None else None)
        detail = f"{where(span) or 'the run configuration'} states {processes.value} processes ({backend})"
    return Evidence("launch", span, detail)


def launch_related(setup: TrainingSetup) -> tuple[RelatedLocation, ...]:
    """``RelatedLocation(run span, "launched by run.sh:3 with 4 processes")`` for a setup whose
    launch is known, else ``()``. Every finding resting on the launch carries it."""
    run = setup.run
    if run is None:
        return ()
    processes = run_processes(setup)
    count = f" with {processes.value} process{'es' if processes.value != 1 else ''}" if processes is not None else ""
    return (RelatedLocation(run.span, f"launched by {run.where}{count}{_launcher_words(setup)}"),)


def setting_related(setting: Setting | None, what: str) -> tuple[RelatedLocation, ...]:
    """``RelatedLocation(span, "<what> from run.sh:5")`` for a value that the launch passed
    (``Origin.LAUNCH``) or a run configuration file holds (``Origin.CONFIG_FILE``), when it
    has a span; ``()`` otherwise. ``what`` names the value (``"--fp16 True"``)."""
    if setting is None or not setting.known or setting.origin not in (Origin.LAUNCH, Origin.CONFIG_FILE):
        return ()
    span = setting.span or setting.key_span
    if span is None:
        return ()
    verb = "passed by" if setting.origin is Origin.LAUNCH else "set in"
    return (RelatedLocation(span, f"{what} {verb} {where(span)}"),)


@dataclass(frozen=True)
class Sharding:
    """How a run shards the model over its processes (:func:`sharded_run`).

    Attributes:
        kind: ``"fsdp"`` or ``"zero3"``.
        words: for messages: ``"FSDP (accelerate config fsdp_config)"``, ``"DeepSpeed ZeRO-3
            (ds_z3.json)"``, ``"fsdp='full_shard auto_wrap'"``.
        span: where it is stated; ``setting`` the deciding Setting, when there is one.
        version: the FSDP version when stated (1 or 2), else ``None``.
    """

    kind: str
    words: str
    span: Span | None
    setting: Setting | None = None
    version: int | None = None


_FSDP_OFF = (None, False, "", (), [], {})


def _fsdp_words(value: object) -> str | None:
    """The FSDP sharding strategy a ``TrainingArguments.fsdp`` value asks for, lower case
    (``True`` is ``full_shard``: transformers ``training_args.py``), or ``None`` when off."""
    if value in _FSDP_OFF:
        return None
    if value is True:
        return "full_shard"
    words = " ".join(value) if isinstance(value, (list, tuple)) else str(value)
    return words.lower()


def sharded_run(setup: TrainingSetup) -> Sharding | None:
    """Whether the run shards the model's parameters over its processes, the way FSDP
    (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD: ``NO_SHARD`` is data parallel) and DeepSpeed
    ZeRO-3 do; ``None`` when nothing says so (DDP, ZeRO-0/1/2, one process, unknown).

    Read from the run's distribution (``setup.distributed``: backend ``fsdp`` with a sharding
    strategy other than ``NO_SHARD``, or ``zero_stage`` 3) and from the file itself
    (``TrainingArguments(fsdp=...)``, a literal ``deepspeed={...}`` dict with
    ``zero_optimization.stage`` 3). A run known to be one process (:func:`run_processes`)
    shards nothing.
    """
    processes = run_processes(setup)
    if processes is not None and processes.value == 1:
        return None
    dist = setup.distributed
    if dist is not None:
        version = dist.fsdp_version.value if dist.fsdp_version.known and dist.fsdp_version.value in (1, 2) else None
        if dist.zero_stage.is_(3):
            src = f" ({os.path.basename(dist.config_path)})" if dist.config_path else ""
            return Sharding("zero3", f"DeepSpeed ZeRO-3{src}", dist.zero_stage.span or dist.span, dist.zero_stage)
        if dist.backend.is_("fsdp") and not dist.fsdp_sharding_strategy.is_("NO_SHARD"):
            strategy = dist.fsdp_sharding_strategy.value if dist.fsdp_sharding_strategy.known else None
            deciding = dist.fsdp_sharding_strategy if strategy else dist.backend
            words = f"FSDP{version or ''}" + (f" {strategy}" if strategy else "")
            return Sharding("fsdp", words, deciding.span or dist.span, deciding, version)
    training = setup.training
    if training is not None:
        fsdp = training.fsdp
        words = _fsdp_words(fsdp.value) if fsdp.known else None
        if words is not None and "no_shard" not in words.split():
            return Sharding("fsdp", f"fsdp={fsdp.value!r}", fsdp.span or fsdp.key_span, fsdp)
        ds = training.deepspeed
        if ds.known and isinstance(ds.value, dict):
            zo = ds.value.get("zero_optimization")
            if isinstance(zo, dict) and zo.get("stage") == 3 and not isinstance(zo.get("stage"), bool):
                return Sharding("zero3", "DeepSpeed ZeRO-3 (deepspeed={...})", ds.span or ds.key_span, ds)
    return None


def weak_parallel(setup: TrainingSetup) -> tuple:
    """The weak launch evidence (:data:`WEAK_PARALLEL_KINDS`), in source order."""
    return tuple(e for e in setup.launch if e.kind in WEAK_PARALLEL_KINDS)


def frozen_base(setup: TrainingSetup) -> bool | None:
    """Whether the base weights stay frozen while adapters train (LoRA / QLoRA).

    True when the setup has an adapter configuration (a ``LoraConfig`` or a dialect's LoRA
    keys), wraps the model with ``get_peft_model``, or loads it quantized (bitsandbytes 4/8-bit
    weights cannot be trained directly, only through adapters). ``None`` otherwise: no adapter
    seen is not proof of full fine-tuning.
    """
    if setup.lora is not None or setup.has_call("get_peft_model"):
        return True
    if is_quantized(setup):
        return True
    return None


@dataclass(frozen=True)
class Use:
    """One place where the setup asks for something, for messages and fixes.

    Attributes:
        what: the user's own spelling, e.g. ``"fp16=True"`` or ``"autocast(dtype=torch.float16)"``.
        path: the setup path (``"training.fp16"``) a fix can ``set``, or ``None`` for a call.
        span: where it is written (``None`` for defaults without a location).
        setting: the Setting, when it is one.
        call: the CallSite, when it is one.
    """

    what: str
    path: str | None
    span: Span | None
    setting: Setting | None = None
    call: CallSite | None = None


def _fp16_words(setup: TrainingSetup, fp16: Setting, spell: Callable[[str, str, str], str]) -> str:
    """The trainer's float16 flag as the file writes it: ``fp16=True`` / ``fp16: true``, or a
    config's own key when float16 comes from another one (torchtune ``dtype: fp16``, the only
    float16 name of torchtune's ``get_dtype``; litgpt's ``precision``, whose written value,
    ``16-mixed`` or ``16-true``, the setup does not keep: named by its key alone)."""
    key = fp16.expr if setup.kind in ("yaml", "json") else None
    if not key or key == "fp16":
        return spell("fp16", "True", "true")
    if setup.framework == "torchtune" and key == "dtype":
        return "dtype: fp16"
    return f"`{key}`"


def fp16_uses(setup: TrainingSetup) -> list[Use]:
    """Every place the setup trains in float16, in this order: the trainer's ``fp16``, the
    ``autocast`` calls, the 4-bit compute dtype, the model's load dtype.

    Then the run's own (:func:`run_fp16_uses`: the launcher's ``--mixed_precision fp16``, the
    distribution's ``mixed_precision``). Only known values count; a library default of
    ``fp16=False`` or a float32 compute dtype is not a use. An ``autocast`` counts only where it runs per training step (see below). The load dtype counts only when the setup trains (``is_training``).
    """
    uses: list[Use] = []
    config = setup.kind in ("yaml", "json")

    def spell(key: str, python: str, yaml: str) -> str:
        return f"{key}: {yaml}" if config else f"{key}={python}"

    fp16 = setup.get("training.fp16")
    if fp16.known and fp16.value is True:
        # a value the launch passed is spelled as on the command line (``--fp16 True``)
        launched = (fp16.source or "").split(" (")[0] if fp16.origin is Origin.LAUNCH else ""
        uses.append(Use(launched or _fp16_words(setup, fp16, spell), "training.fp16",
                        fp16.span or fp16.key_span, setting=fp16))
    for call in setup.calls_of("autocast"):
        dtype = call.args.get("dtype")
        # An autocast region is training precision only when it runs per training step (the
        # extractor marks loops that call .backward()/.step() and per-step hooks) or when it
        # is Accelerator(mixed_precision=...), which wraps every forward it prepares. A float16
        # autocast around generate() or evaluation after training is not a training setting.
        per_step = call.in_step_callback or "mixed_precision" in call.args
        if per_step and dtype is not None and dtype.is_("float16"):
            uses.append(Use("autocast(dtype=torch.float16)", None, call.span, call=call))
    compute = setup.get("quantization.bnb_4bit_compute_dtype")
    if compute.is_("float16"):
        uses.append(Use(spell("bnb_4bit_compute_dtype", "torch.float16", "float16"),
                        "quantization.bnb_4bit_compute_dtype", compute.span or compute.key_span,
                        setting=compute))
    dtype = setup.get("model.torch_dtype")
    if setup.is_training and dtype.is_("float16"):
        uses.append(Use(spell("torch_dtype", "torch.float16", "float16"), "model.torch_dtype",
                        dtype.span or dtype.key_span, setting=dtype))
    uses.extend(run_fp16_uses(setup))
    return uses


def run_fp16_uses(setup: TrainingSetup) -> list[Use]:
    """The run's own float16 choices (issue 15): the launcher's ``--mixed_precision fp16``
    (``setup.run.mixed_precision``, path ``"run.mixed_precision"``) and the distribution's
    ``mixed_precision`` (``setup.distributed``: an accelerate config's ``mixed_precision: fp16``,
    a DeepSpeed JSON's ``fp16.enabled: true``; path ``"distributed.mixed_precision"``).

    A DeepSpeed ``"auto"`` is no use of its own: the HF integration fills it from the training
    arguments (transformers ``integrations/deepspeed.py`` ``fill_match``), which
    :func:`fp16_uses` reads. Neither counts when the training arguments set ``bf16=True``:
    transformers' ``TrainingArguments`` then sets ``ACCELERATE_MIXED_PRECISION`` to ``bf16``
    over the launcher's value, and a DeepSpeed JSON saying otherwise is LL025's mismatch.
    """
    if setup.get("training.bf16").is_(True):
        return []
    uses: list[Use] = []
    run = setup.run
    if run is not None and run.mixed_precision.is_("fp16"):
        s = run.mixed_precision
        uses.append(Use("--mixed_precision fp16", "run.mixed_precision", s.span or run.span, setting=s))
    dist = setup.distributed
    if dist is not None and dist.mixed_precision.is_("fp16"):
        s = dist.mixed_precision
        in_json = s.span is not None and dist.config_path is not None \
            and os.path.abspath(s.span.path) == os.path.abspath(dist.config_path)
        if in_json:
            what = f'"fp16": {{"enabled": true}} in {os.path.basename(dist.config_path)}'
        elif dist.accelerate_config:
            what = f"mixed_precision: fp16 in {os.path.basename(dist.accelerate_config)}"
        else:
            what = "mixed_precision fp16"
        uses.append(Use(what, "distributed.mixed_precision", s.span or s.key_span or dist.span, setting=s))
    return uses


def dataloader_workers(setup: TrainingSetup) -> list[Use]:
    """The known worker counts of the setup's data loaders: ``dataloader_num_workers`` of the
    trainer, then each ``DataLoader(num_workers=...)``; unknown counts are left out.

    ``Use.path`` is ``"training.dataloader_num_workers"`` for the trainer's setting and ``None``
    for DataLoader calls; ``Use.setting.value`` is the count.
    """
    found: list[Use] = []
    sep = ": " if setup.kind in ("yaml", "json") else "="
    trainer = setup.get("training.dataloader_num_workers")
    if trainer.known and isinstance(trainer.value, int) and not isinstance(trainer.value, bool):
        found.append(Use(f"dataloader_num_workers{sep}{trainer.value}", "training.dataloader_num_workers",
                         trainer.span or trainer.key_span, setting=trainer))
    for loader in setup.dataloaders:
        n = loader.num_workers
        if n.known and isinstance(n.value, int) and not isinstance(n.value, bool):
            found.append(Use(f"num_workers{sep}{n.value}", None, n.span or n.key_span or loader.span,
                             setting=n))
    return found


def added_tokens(setup: TrainingSetup) -> Use | None:
    """Where the setup adds tokens to the vocabulary (so the embedding and output layers gain
    rows that must be trained): a ``resize_token_embeddings``, ``add_tokens`` or
    ``add_special_tokens`` call in a script, or a config key recorded by the dialects as
    ``model.extra["added_tokens"]`` (axolotl ``tokens``/``special_tokens``/
    ``added_tokens_overrides``, LLaMA-Factory ``add_tokens``/``add_special_tokens``/
    ``new_special_tokens``/``resize_vocab``). ``None`` when nothing adds tokens.
    """
    for kind in ("resize_token_embeddings", "add_tokens"):
        for call in setup.calls_of(kind):
            if not call.synthetic:
                name = call.qualified_name.rsplit(".", 1)[-1] or kind
                return Use(f"{name}()", None, call.span, call=call)
    extra = setup.model.extra if setup.model is not None else {}
    s = extra.get("added_tokens")
    if s is not None and s.known:
        return Use(f"`{s.expr or 'tokens'}`", "model.added_tokens", s.key_span or s.span, setting=s)
    return None


# ---- facts added for LL009 and LL011 ---------------------------------------------------------

def peft_wraps(setup: TrainingSetup) -> tuple[CallSite, ...]:
    """The calls that make the trained model a ``PeftModel`` with trainable adapters, in source
    order: peft's ``get_peft_model`` and ``PeftModel``/``AutoPeftModel*.from_pretrained`` with
    ``is_trainable`` known to be true (its default is ``False``: an adapter loaded for
    inference, peft src/peft/peft_model.py 0.20.1.dev0, line 420). Unsloth's wrapper and
    synthetic calls are left out."""
    out = []
    for call in setup.calls:
        if call.synthetic:
            continue
        if call.kind == "get_peft_model" and call.qualified_name == "peft.get_peft_model":
            out.append(call)
        elif call.kind == "peft_from_pretrained":
            trainable = call.args.get("is_trainable")
            if trainable is not None and trainable.is_(True):
                out.append(call)
    return tuple(out)


def unsure_peft_wrap(setup: TrainingSetup) -> bool:
    """Whether a ``PeftModel.from_pretrained`` call's ``is_trainable`` cannot be resolved (an
    argument lintlora cannot read): whether adapters train is then unknown."""
    for call in setup.calls:
        if call.kind == "peft_from_pretrained" and not call.synthetic:
            trainable = call.args.get("is_trainable")
            if trainable is None or not trainable.known:
                return True
    return False


# ---- facts added for LL013, LL014 and LL017 --------------------------------------------------

def half_precision_uses(setup: TrainingSetup) -> list[Use]:
    """The places that make the run compute in 16 bits, in this order: the trainer's ``bf16``
    and ``fp16`` flags (known to be True, a library default included: TRL's configs default to
    ``bf16 = not fp16``, trl ``trl/trainer/base_config.py`` v1.9.0), then the per-step
    ``autocast`` calls (``Accelerator(mixed_precision=...)`` among them) in float16 or
    bfloat16. Not the load dtype nor the 4-bit compute dtype (what the rules about those ask).
    ``Use.setting.value``/``Use.call.args["dtype"]`` says which; :func:`half_dtype` reads it."""
    uses: list[Use] = []
    config = setup.kind in ("yaml", "json")
    for key in ("bf16", "fp16"):
        flag = setup.get(f"training.{key}")
        if flag.known and flag.value is True:
            what = f"{key}: true" if config else f"{key}=True"
            where = flag.span or flag.key_span or (setup.training.span if setup.training is not None else None)
            uses.append(Use(what, f"training.{key}", where, setting=flag))
    for call in setup.calls_of("autocast"):
        dtype = call.args.get("dtype")
        per_step = call.in_step_callback or "mixed_precision" in call.args
        if per_step and dtype is not None and dtype.known and dtype.value in ("float16", "bfloat16"):
            what = (f'Accelerator(mixed_precision="{"bf16" if dtype.value == "bfloat16" else "fp16"}")'
                    if "mixed_precision" in call.args else f"autocast(dtype=torch.{dtype.value})")
            uses.append(Use(what, None, call.span, call=call))
    # the run's own mixed precision (issue 15): the launcher's --mixed_precision, an accelerate
    # config's or DeepSpeed JSON's (not when the training arguments say otherwise)
    if not any(u.path in ("training.bf16", "training.fp16") for u in uses):
        run_mp = setup.run.mixed_precision if setup.run is not None else None
        dist_mp = setup.distributed.mixed_precision if setup.distributed is not None else None
        for path, s in (("run.mixed_precision", run_mp), ("distributed.mixed_precision", dist_mp)):
            if s is not None and s.known and s.value in ("fp16", "bf16"):
                uses.append(Use(f"mixed_precision {s.value}", path, s.span, setting=s))
                break
    return uses


def half_dtype(use: Use) -> str:
    """``"bfloat16"`` or ``"float16"``: the 16-bit type one of :func:`half_precision_uses`
    asks for."""
    if use.path == "training.bf16":
        return "bfloat16"
    if use.path == "training.fp16":
        return "float16"
    if use.setting is not None and use.setting.value in ("bf16", "fp16"):
        return "bfloat16" if use.setting.value == "bf16" else "float16"
    dtype = use.call.args.get("dtype") if use.call is not None else None
    return "bfloat16" if dtype is not None and dtype.is_("bfloat16") else "float16"


# ---- model families that overflow float16 (LL017, LL013) ------------------------------------

@dataclass(frozen=True)
class OverflowFamily:
    """A model family known to overflow float16.

    Attributes:
        label: for messages (``"Qwen2/2.5/3"``).
        model_types: HF ``model_type`` values of its configs.
        name: a pattern on the hub id (case-insensitive).
        sources: the public reports (``owner/repo#N``), the bug-reports entry first.
    """

    label: str
    model_types: frozenset
    name: re.Pattern
    sources: str


OVERFLOW_FAMILIES: tuple[OverflowFamily, ...] = (
    OverflowFamily("Gemma-2/3/4", frozenset({"gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma4", "gemma4_text"}),
           re.compile(r"(?i)(?:^|[/_-])(?:code)?gemma-?(?:2|3|4)(?:n)?(?:$|[-_.])"),
           "BN29/BN30: hiyouga/LlamaFactory#7755 (Gemma-3 LoRA, fp16 on V100S: loss 0), unslothai/unsloth "
           "PR #5092 (Gemma-4 fp16: gate/up saturate at 65,504, down_proj gives +inf; unsloth routes Gemma-3/3n "
           "to float32)"),
    OverflowFamily("Qwen2/2.5/3", frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_vl", "qwen2_5_vl"}),
           re.compile(r"(?i)(?:^|[/_-])qwen(?:2|2\.5|3)(?:$|[-_.])"),
           "BN27/BN28: QwenLM/Qwen3#670 and #868 (Qwen2-7B in fp16: NaN logits, loss 0; the maintainer: trained "
           "in bf16, use bf16 or fp32), lzhxmu/CPPO#3 (Qwen2.5-7B GRPO in fp16 on V100: grad_norm NaN)"),
    OverflowFamily("T5/mT5/Flan-T5", frozenset({"t5", "mt5", "umt5", "longt5"}),
           re.compile(r"(?i)(?:^|[/_-])(?:flan-|m|um|by|long-?)?t5(?:$|[-_.])"),
           "huggingface/transformers#14189 (T5-v1.1 loss NaN with fp16), #10956 (T5/mT5 inf under amp: a "
           "bfloat16-trained model does not fit float16), #5651 (T5DenseReluDense overflow: 66,246 > 65,504), "
           "google-research/text-to-text-transfer-transformer#539 (\"All of our experiments use bfloat16 "
           "activations\")"),
)
"""The families, with their sources (bug-reports-2 BN27-BN30; the T5 threads from the issues
corpus). A family is added only with a public report of float16 training or inference turning
into inf/NaN on its released checkpoints."""


def overflow_family(setup: TrainingSetup, model_type: str | None = None) -> OverflowFamily | None:
    """The :data:`OVERFLOW_FAMILIES` entry of the setup's model, by ``model_type`` (when the architecture
    is known) or by the hub id; ``None`` for another or an unresolved model."""
    if model_type:
        for fam in OVERFLOW_FAMILIES:
            if model_type in fam.model_types:
                return fam
        return None
    name = setup.get("model.name_or_path")
    if not name.known or not isinstance(name.value, str):
        return None
    text = name.value[:300]
    for fam in OVERFLOW_FAMILIES:
        if fam.name.search(text):
            return fam
    return None
