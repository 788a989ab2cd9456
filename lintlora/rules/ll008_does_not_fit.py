"""LL008 does-not-fit (page: ``rules/LL008.md``).

The estimate as a verdict: flags a training setup whose estimated device peak (what nvidia-smi
would show, :attr:`lintlora.estimate.memory.MemoryEstimate.device_bytes`) exceeds the named
GPU's memory, or comes within the estimator's stated uncertainty of it ("tight": less than
:data:`lintlora.estimate.verdict.TIGHT_HEADROOM`, 10%, left free; the module docstring of
:mod:`lintlora.estimate.verdict` cites the accuracy figures). The message gives the peak, the
capacity and the phase of the peak, then the changes that would make it fit, each re-estimated,
in the file's own terms (:mod:`lintlora.estimate.fit`, with the batch size and the sequence
length searched: :func:`lintlora.estimate.verdict.largest_batch`); where no single change does,
the changes together, and the smallest catalogued GPU that holds the setup as written.

Sources: allenai/open-instruct#65 (QLoRA OOM at 75 GiB on an 80 GB card);
axolotl-ai-cloud/axolotl#1717 (a 4-bit 70B on 24 GB cards OOMs; bug-reports-2 BN16);
huggingface/peft#2894 (reserved memory grows with fragmentation, the "tight" band).

Severity:

- error: the estimate rests only on values the file sets, or does not fit even with every
  value it does not set at its most favourable (batch 1, 1-token sequences, a 4-bit base for
  an assumed 16-bit one, checkpointing on where it is assumed or a launch default);
- warning: the estimate exceeds the capacity by less than 10% of it (within the estimator's
  uncertainty, as the "tight" band below it); the verdict rests on an assumed batch size, sequence length or 16-bit base, or on a
  library default (transformers' ``per_device_train_batch_size=8``, trl's ``max_length=1024``):
  the message names it; also every "tight" verdict, a rough estimate (``--params``), and a model
  spread by ``device_map="auto"`` (several visible GPUs lower the per-device peak; not estimated);
- info: the verdict rests on a default chosen at launch (:func:`lintlora.facts.set_at_launch`:
  an argparse option, a dataclass field, an environment variable), the model name included.

A sharded run is judged per GPU when the estimate knows the sharding and the number of ranks
(:mod:`lintlora.estimate.sharding_setup`: litgpt ``devices``, a torchtune distributed recipe,
and the run's distribution): the message says "per GPU (DeepSpeed ZeRO-3 × 4 ranks)", the fix
does not propose sharding again, and the finding carries the launch line when the run is known.

Silent: no GPU named (nothing to fit against), the model unknown (no verdict is guessed), a file
that does not train, a method the estimate prices as another (LLaMA-Factory ``finetuning_type:
oft``/``freeze``, ``use_galore``/``use_apollo``/``use_badam``/``use_kt``, Megatron tensor or pipeline
parallel sizes above 1; axolotl ``expert_parallel_size``, ``tensor_parallel_size``,
``context_parallel_size`` above 1; a TRL recipe's ``spectrum_config_path``: a partial
fine-tune), a sharded run whose number of ranks the estimate does not know (DeepSpeed
or FSDP named, in the file or in the run's distribution), and when LL001's fix (checkpointing
on) alone makes it fit: LL001 is then
the finding that says so (one problem, one finding), unless LL001 is not selected.

Anchor: where a user acts on it: the model load when the weights, gradients and optimizer states
alone do not fit (no batch or length would), else the batch size when a smaller one fits, else
the sequence length, else the training arguments.

Cost: the fit list, the searches and the comparison with LL001 run only when the rule fires;
a setup that fits costs one comparison with the estimate every rule shares.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import capacity as capacity_text, gib
from lintlora.rules._fit import _not_modelled, _per_rank, _sharded
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, Setting, Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["DoesNotFit", "TOP"]

TOP = 3
"""How many fitting changes the message lists."""

MIN_SEQUENCE = 128
"""The shortest sequence length (tokens) the fit list proposes: below it a shorter sequence is
no training run anyone wants, and the list says what else would fit instead."""

SEQUENCE_STEP = 64
"""Sequence lengths the fit list proposes are multiples of this many tokens (round numbers, and
half the re-estimates of an exact search)."""

_SPREAD_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")
"""``device_map`` values with which accelerate spreads the model over every visible GPU."""


def _selected(code: str, context: "Context") -> bool:
    """Whether the run's ``select``/``ignore`` settings keep rule ``code`` (the engine's
    selection without per-file ignores)."""
    s = context.settings

    def named(selectors) -> bool:
        return any(x == "ALL" or code.startswith(x) for x in selectors or ())

    chosen = s.select is None or named(s.select) or named(s.extend_select)
    return chosen and not named(s.ignore)


def _offloaded(setup: TrainingSetup) -> bool:
    """A ``device_map`` that places modules on the CPU or disk: LL005 reports that, with the
    estimate of everything on the GPU, and the estimate here does not model the offload."""
    dm = setup.get("model.device_map")
    values = dm.value.values() if dm.known and isinstance(dm.value, dict) else \
        [dm.value] if dm.known else []
    return any(str(v).lower() in ("cpu", "disk", "meta") for v in values)


def _spread(setup: TrainingSetup) -> str | None:
    """``device_map="auto"`` (or another value spreading the model over the visible GPUs), as
    written, or ``None``."""
    dm = setup.get("model.device_map")
    if not dm.known:
        return None
    if isinstance(dm.value, str) and dm.value in _SPREAD_MAPS:
        return f'device_map="{dm.value}"'
    if isinstance(dm.value, dict) and len({str(v) for v in dm.value.values()}) > 1:
        return "a device_map over several devices"
    return None


def _ll001_covers(setup: TrainingSetup, context: "Context", target: int) -> bool:
    """Whether LL001 reports this setup with a fix (checkpointing on) whose estimate is at most
    ``target`` bytes: then LL001 is the finding that says checkpointing makes it fit."""
    if not _selected("LL001", context):
        return False
    from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff

    for finding in GradientCheckpointingOff().check(setup, context):
        after = finding.estimate.peak_after_fix_bytes if finding.estimate is not None else None
        if after is not None and after <= target:
            return True
    return False


def _batch_setting(setup: TrainingSetup, batch: int) -> Setting | None:
    """The setting the estimate's batch came from (the training arguments', else a DataLoader's)."""
    bs = setup.get("training.per_device_train_batch_size")
    if bs.known and bs.value == batch:
        return bs
    return next((d.batch_size for d in setup.dataloaders
                 if d.batch_size.known and d.batch_size.value == batch), None)


def _possessive(setting: Setting) -> str:
    from lintlora.estimate.shape import library_possessive

    return library_possessive(setting)


class _Basis:
    """What the verdict rests on besides the file's own values, and the estimate with each of
    them at its most favourable (``floor``)."""

    def __init__(self, setup: TrainingSetup, inputs) -> None:
        from lintlora.estimate.shape import shape_of

        self.guessed: list[str] = []   # assumed values and library defaults, in words
        self.launch: list[str] = []    # launch-time defaults: how each is set
        self.floor: dict = {}          # EstimateInputs changes for the floor estimate
        self.floor_words: list[str] = []
        self.model_at_launch: str | None = None
        assumed = set(inputs.assumed)
        shape = shape_of(inputs, setup)
        self.guessed.extend(shape.guessed_words if shape is not None else ())

        batch = _batch_setting(setup, inputs.batch_size) if "batch_size" not in assumed else None
        if batch is not None and batch.origin is Origin.LIBRARY_DEFAULT:
            self.guessed.append(f"{_possessive(batch)} default per_device_train_batch_size={inputs.batch_size}")
        if batch is not None and facts.set_at_launch(batch, setup):
            self.launch.append(f"batch {inputs.batch_size} {facts.launch_hint(batch, setup)}")
        if inputs.batch_size > 1 and ("batch_size" in assumed or batch is None or batch.origin is Origin.LIBRARY_DEFAULT
                                      or facts.set_at_launch(batch, setup)):
            self.floor["batch_size"] = 1
            self.floor_words.append("batch 1")

        from lintlora.estimate.shape import training_length

        seq = training_length(setup, inputs.seq_len)
        seq_from_file = "seq_len" not in assumed and seq.known and seq.value == inputs.seq_len
        if seq_from_file and facts.set_at_launch(seq, setup):
            self.launch.append(f"{inputs.seq_len} tokens per sequence {facts.launch_hint(seq, setup)}")
        if inputs.seq_len > 1 and (not seq_from_file or seq.origin is Origin.LIBRARY_DEFAULT
                                   or facts.set_at_launch(seq, setup)):
            self.floor["seq_len"] = 1
            self.floor_words.append("1-token sequences")

        if "quant" in assumed and inputs.quant is None and inputs.method != "full":
            self.floor.update(method="qlora", quant="nf4", double_quant=True,
                              quant_compute_dtype=inputs.compute_dtype)
            self.floor_words.append("a 4-bit base")
        gc = facts.checkpointing(setup)
        if not inputs.gradient_checkpointing and ("gradient_checkpointing" in assumed or gc.at_launch):
            if "gradient_checkpointing" in assumed:
                self.guessed.append("checkpointing assumed off")
            else:
                self.launch.append(f"checkpointing off {gc.at_launch}")
            self.floor["gradient_checkpointing"] = True
            self.floor_words.append("checkpointing on")

        name = setup.get("model.name_or_path")
        if facts.set_at_launch(name, setup):
            self.model_at_launch = f"the model {name.value} {facts.launch_hint(name, setup)}"

    @property
    def words(self) -> str:
        from lintlora.rules._text import join_words

        return join_words([*self.guessed, *self.launch, *([self.model_at_launch] if self.model_at_launch else [])])


_DIVISOR_WINDOW = 1024
"""How many candidates :func:`_largest_divisor` tries below its bound (the loop stays bounded
for any batch a file can set)."""


def _largest_divisor(n: int, at_most: int) -> int:
    """A divisor of ``n`` (``n >= 1``) at most ``at_most``: the largest among the
    :data:`_DIVISOR_WINDOW` values below ``at_most``, else the largest up to
    :data:`_DIVISOR_WINDOW` (1 at worst). At most twice the window of trials."""
    top = max(1, min(n, at_most))
    for d in range(top, max(0, top - _DIVISOR_WINDOW), -1):
        if n % d == 0:
            return d
    return max(d for d in range(1, min(top, _DIVISOR_WINDOW) + 1) if n % d == 0)


def _searched_options(setup: TrainingSetup, estimate, arch, target: int) -> list:
    """The batch size and the sequence length that bring the estimate to ``target`` bytes,
    searched (:mod:`lintlora.estimate.verdict`) rather than halved, as fit options phrased in
    the file's terms; values the file does not set are not offered."""
    from lintlora.estimate.fit import FitOption, batch_text, sequence_text
    from lintlora.estimate.verdict import largest_fitting

    out = []
    i = estimate.inputs
    assumed = set(i.assumed)
    dialect = setup.dialect
    if i.batch_size > 1 and "batch_size" not in assumed:
        found = largest_fitting(estimate, arch, "batch_size", 1, i.batch_size - 1, target)
        if found.value is not None:
            ga_setting = setup.get("training.gradient_accumulation_steps")
            ga = ga_setting.value if ga_setting.known and isinstance(ga_setting.value, int) \
                and not isinstance(ga_setting.value, bool) and ga_setting.value > 0 else None
            effective = i.batch_size * (ga or 1)
            new = _largest_divisor(effective if ga else i.batch_size, found.value)
            est = found.estimate if new == found.value else None
            if est is None:
                from lintlora.estimate.memory import estimate_memory
                from lintlora.estimate.profiles import get_profile

                est = estimate_memory(dataclasses.replace(i, batch_size=new), arch, get_profile(i.framework),
                                      gpu=estimate.gpu, gpu_memory_bytes=estimate.gpu_memory_bytes)
            text = batch_text(setup, dialect, i.batch_size, new, ga, effective // new if ga else None)
            if text is not None:
                out.append(FitOption("fit_batch", text, est.device_bytes, estimate.device_bytes - est.device_bytes,
                                     est.fits, est))
    if i.seq_len > MIN_SEQUENCE + SEQUENCE_STEP and "seq_len" not in assumed:
        found = largest_fitting(estimate, arch, "seq_len", MIN_SEQUENCE, i.seq_len - 1, target, step=SEQUENCE_STEP)
        if found.value is not None and found.estimate is not None:
            text = sequence_text(setup, dialect, i.seq_len, found.value)
            if text is not None:
                est = found.estimate
                out.append(FitOption("fit_sequence", text, est.device_bytes, estimate.device_bytes - est.device_bytes,
                                     est.fits, est))
        if i.batch_size > 1 and "batch_size" not in assumed and not any(o.key == "fit_batch" for o in out):
            # no batch fits at this length: batch 1 (the accumulation keeping the effective
            # batch) with the longest sequence that fits at batch 1
            at_one = dataclasses.replace(estimate, inputs=dataclasses.replace(i, batch_size=1))
            found = largest_fitting(at_one, arch, "seq_len", MIN_SEQUENCE, i.seq_len - 1, target, step=SEQUENCE_STEP)
            ga_setting = setup.get("training.gradient_accumulation_steps")
            ga = ga_setting.value if ga_setting.known and isinstance(ga_setting.value, int) \
                and not isinstance(ga_setting.value, bool) and ga_setting.value > 0 else None
            batch = batch_text(setup, dialect, i.batch_size, 1, ga, i.batch_size * ga if ga else None)
            seq = sequence_text(setup, dialect, i.seq_len, found.value) if found.value is not None else None
            if found.estimate is not None and batch is not None and seq is not None:
                est = found.estimate
                out.append(FitOption("fit_batch_and_sequence", f"{batch}, and {seq}", est.device_bytes,
                                     estimate.device_bytes - est.device_bytes, est.fits, est))
    return out


def _anchor(setup: TrainingSetup, estimate, arch, target: int, options: list) -> tuple[Span | None, int | None]:
    """Where the finding points (module docstring), and the device peak at batch 1 with a
    1-token sequence when even that exceeds ``target`` (the model alone is too big), else
    ``None``."""
    from lintlora.estimate.memory import estimate_memory
    from lintlora.estimate.profiles import get_profile

    i = estimate.inputs
    bare = estimate_memory(dataclasses.replace(i, batch_size=1, seq_len=1), arch, get_profile(i.framework))
    model_span = (setup.model.span if setup.model is not None else None) \
        or setup.get("model.name_or_path").span or setup.get("model.name_or_path").key_span
    if bare.device_bytes > target:
        return model_span or setup.anchor, bare.device_bytes
    batch = _batch_setting(setup, i.batch_size) if "batch_size" not in i.assumed else None
    seq = setup.get("training.max_seq_length")
    keys = {o.key for o in options}
    if "fit_batch" in keys and batch is not None and batch.span is not None:
        return batch.span, None
    if keys & {"fit_sequence", "fit_batch_and_sequence"} and seq.span is not None:
        return seq.span, None
    for s in (batch, seq):
        if s is not None and s.span is not None:
            return s.span, None
    training = setup.training.span if setup.training is not None else None
    return training or setup.anchor or model_span, None


FIX_SEQUENCE = "shorten the sequence length to fit"
"""The sequence fix's title: the length written replaced by the longest that fits (searched).
Unsafe: samples are truncated shorter."""
FIX_BATCH = "lower the batch size to fit"
"""The batch fix's title: the batch written replaced by the largest that fits, the gradient
accumulation raised to keep the effective batch. Unsafe: it changes the optimisation."""


def _value_op(setup: TrainingSetup, setting: Setting | None, value: int, call: Span | None,
              keyword: str) -> EditOp | None:
    """``value`` where ``setting`` is written (a config key, a literal), or set on the training
    arguments' call when the setting is the library's default there."""
    if setting is None:
        return None
    if setup.kind in ("yaml", "json"):
        if setting.origin is not Origin.LITERAL or not setting.expr:
            return None
        return ops.yaml_set(setup, setting.expr, str(value), setting)
    if setting.origin is Origin.LIBRARY_DEFAULT:
        return ops.set_keyword(call, setup.path, keyword, str(value), setting)
    return ops.replace_value(setting, setup.path, str(value))


def _autofix(setup: TrainingSetup, estimate, best) -> Fix | None:
    """The first change of the fit list as source edits, when it is the searched sequence
    length or batch size (one value, the batch with its accumulation); others (a 4-bit load,
    another optimizer) are not one edit that is right in general."""
    if best is None or best.estimate is None or ";" in best.change:
        return None
    call = setup.training.span if setup.training is not None else None
    new = best.estimate.inputs
    if best.key == "fit_sequence":
        seq = setup.get("training.max_seq_length")
        if seq.origin is Origin.LIBRARY_DEFAULT:
            return None  # the keyword's name depends on the trainer's version: LL020's to say
        return ops.make_fix(FIX_SEQUENCE, FixSafety.UNSAFE, [_value_op(setup, seq, new.seq_len, call, "")])
    if best.key == "fit_batch":
        old = estimate.inputs.batch_size
        batch = _batch_setting(setup, old)
        edits = [_value_op(setup, batch, new.batch_size, call, "per_device_train_batch_size")]
        ga = setup.get("training.gradient_accumulation_steps")
        if ga.known and isinstance(ga.value, int) and not isinstance(ga.value, bool) and ga.value > 0:
            effective = old * ga.value
            if effective % new.batch_size:
                return None
            if effective // new.batch_size != ga.value:
                edits.append(_value_op(setup, ga, effective // new.batch_size, call,
                                       "gradient_accumulation_steps"))
        elif ga.known or ga.span is not None:
            return None
        return ops.make_fix(FIX_BATCH, FixSafety.UNSAFE, edits)
    return None


class DoesNotFit(Rule):
    """The estimated peak exceeds (or nearly fills) the named GPU (see the module docstring)."""

    code = "LL008"
    name = "does-not-fit"
    severity = Severity.ERROR
    summary = "The estimated peak GPU memory of the setup as written exceeds the named GPU's memory"
    fixes = {FIX_SEQUENCE: FixSafety.UNSAFE, FIX_BATCH: FixSafety.UNSAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        capacity = context.gpu_memory_bytes
        if not setup.is_training or not capacity or _offloaded(setup) or _not_modelled(setup):
            return
        estimate = context.estimate(setup)
        inputs = getattr(estimate, "inputs", None)
        if estimate is None or inputs is None or inputs.method == "load":
            return
        if _sharded(setup) and not _per_rank(inputs):
            return  # sharded over a number of GPUs the estimate does not know
        from lintlora.estimate.verdict import comfortable_bytes, verdict

        state = verdict(estimate.device_bytes, capacity)
        if state not in ("over", "tight"):
            return
        target = capacity if state == "over" else comfortable_bytes(capacity)
        if _ll001_covers(setup, context, target):
            return
        arch = context.architecture(setup)
        if arch is None:  # pragma: no cover - an estimate implies an architecture
            return
        yield self._finding(setup, context, estimate, arch, state, capacity, target)

    def _finding(self, setup, context, estimate, arch, state: str, capacity: int, target: int) -> Finding:
        from lintlora.estimate.fit import fit_options
        from lintlora.estimate.memory import estimate_memory
        from lintlora.estimate.profiles import get_profile
        from lintlora.estimate.verdict import TIGHT_HEADROOM, combine, comfortable_bytes, phase_words, smallest_gpu

        figures = context.figures(setup)
        where_gpu = f"the {figures.gpu}" if figures.gpu else "the GPU"
        cap = capacity_text(figures)
        shape = context.shape(setup)
        dims = f", {shape.dims}" if shape is not None else ""
        phase = phase_words(estimate.peak_phase)
        peak = estimate.device_bytes
        parts: list[str] = []
        sharding = getattr(estimate, "sharding", "") or ""
        per_gpu = f" per GPU ({sharding})" if sharding and (getattr(estimate.inputs, "num_gpus", 1) or 1) > 1 else ""
        if state == "over":
            parts.append(f"Estimated peak {gib(peak)}{per_gpu} ({phase}{dims}) does not fit on {where_gpu} ({cap}).")
        else:
            parts.append(f"Estimated peak {gib(peak)}{per_gpu} ({phase}{dims}) leaves {gib(capacity - peak)} of {where_gpu}'s "
                         f"{cap} free, less than the 10% the estimate's accuracy calls for: it may run out of "
                         "memory on a longer batch than the estimate's or with a fragmented allocator.")

        # what the verdict rests on, and whether it stands without it
        basis = _Basis(setup, estimate.inputs)
        severity = Severity.ERROR if state == "over" else Severity.WARNING
        rests_on: list[str] = []
        stands = True
        if basis.floor:
            floor = estimate_memory(dataclasses.replace(estimate.inputs, **basis.floor), arch,
                                    get_profile(estimate.inputs.framework))
            stands = floor.device_bytes > target
        if basis.guessed or basis.launch:
            if stands and basis.floor:
                from lintlora.rules._text import join_words

                parts.append(f"It rests on {basis.words}, but the file's own values decide it: even with "
                             f"{join_words(basis.floor_words)} the estimate is {gib(floor.device_bytes)}.")
            elif not stands:
                rests_on.append(basis.words)
                severity = Severity.INFO if basis.launch else Severity.WARNING
                parts.append(f"It rests on {basis.words}: reported as {severity.value}, since the file does not "
                             "settle it.")
        if basis.model_at_launch:
            severity = Severity.INFO
            rests_on.append(basis.model_at_launch)
            parts.append(f"It rests on {basis.model_at_launch}: reported as info.")
        if state == "over" and severity is Severity.ERROR and peak <= capacity * (1 + TIGHT_HEADROOM):
            severity = Severity.WARNING
            parts.append(f"Reported as a warning: it is over by {gib(peak - capacity)}, within the estimate's "
                         "10% uncertainty.")
        if getattr(estimate, "rough", False) and severity is Severity.ERROR:
            severity = Severity.WARNING
            parts.append("Reported as a warning: the estimate is a rough one, from a parameter count.")
        spread = _spread(setup)
        if spread and severity is Severity.ERROR:
            severity = Severity.WARNING
            parts.append(f"Reported as a warning: {spread} spreads the model over every visible GPU, so with "
                         "several cards the per-device peak is lower (not estimated); on one card it does not fit.")

        # the changes, each re-estimated
        searched = _searched_options(setup, estimate, arch, comfortable_bytes(capacity))
        replaced = {"halve_batch" if o.key == "fit_batch" else "shorter_sequence" for o in searched}
        options = [o for o in fit_options(estimate, arch, dialect=setup.dialect, setup=setup)
                   if o.key not in replaced]
        everything = sorted([*options, *searched], key=lambda o: o.device_bytes)
        fitting = [o for o in everything if o.device_bytes <= target]
        span, bare = _anchor(setup, estimate, arch, target, searched)
        if bare is not None:
            parts.append(f"The model and its training state (weights, gradients, optimizer states) take "
                         f"{gib(bare)} at batch 1 with 1-token sequences: no batch size or sequence length would "
                         + ("make it fit." if state == "over" else "leave 10% free."))
        goal = "make it fit" if state == "over" else "leave 10% free"
        best = None
        fix: str
        if fitting:
            # those leaving 10% free first, then the searched batch and length (they keep the model
            # and the method as written), then the lowest peak
            room = comfortable_bytes(capacity)
            fitting.sort(key=lambda o: (o.device_bytes > room, not o.key.startswith("fit_"),
                                        o.device_bytes))
            shown = fitting[:TOP]
            best = shown[0]
            listed = "; ".join(f"{n}) {o.change}: {gib(o.device_bytes)}" for n, o in enumerate(shown, 1))
            parts.append(f"What would {goal} (each re-estimated): {listed}.")
            fix = f"Make this change: {best.change}."
        else:
            together = combine(estimate, arch, everything, target)
            gpu = smallest_gpu(peak)
            larger = (f"the smallest catalogued GPU that holds it as written is the {gpu.name} ({gib(gpu.memory_bytes)})"
                      if gpu is not None else "no catalogued GPU holds it as written")
            if together is not None and together[1].device_bytes <= target:
                used, est = together
                best = dataclasses.replace(used[-1], change="; ".join(o.change for o in used))
                parts.append(f"No single change would {goal} (each re-estimated); together they would: "
                             f"{best.change}: {gib(est.device_bytes)}. Otherwise {larger}.")
                fix = f"Make these changes together: {best.change}; or train on a larger GPU ({larger})."
            else:
                closest = "; ".join(f"{o.change}: {gib(o.device_bytes)}" for o in everything[:TOP])
                if closest:
                    also = (f"; together ({len(together[0])} changes): {gib(together[1].device_bytes)}"
                            if together is not None and len(together[0]) > 1 else "")
                    parts.append(f"No change lintlora knows of would {goal}, alone or together (each re-estimated: "
                                 f"{closest}{also}); {larger}.")
                else:
                    parts.append(f"No change lintlora knows of would {goal}; {larger}.")
                fix = (f"Train on a GPU with more memory ({larger}), or shard the model over several GPUs "
                       "(FSDP or DeepSpeed ZeRO-3)." if not per_gpu else
                       f"Train on GPUs with more memory ({larger}, per GPU as sharded), or on more of them: "
                       f"{sharding} shares the sharded terms among the ranks.")
        if best is not None:
            figures = dataclasses.replace(figures, peak_after_fix_bytes=best.device_bytes)
        return Finding(code=self.code, name=self.name, severity=severity,
                       span=span or setup.anchor or Span(setup.path, 1, 1),
                       message=" ".join(parts), fix=fix, estimate=figures, rests_on=tuple(rests_on),
                       related=facts.launch_related(setup) if per_gpu or setup.run is not None else (),
                       autofix=_autofix(setup, estimate, best) if fitting else None)
