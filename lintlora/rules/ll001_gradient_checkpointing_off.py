"""LL001 gradient-checkpointing-off (page: ``rules/LL001.md``).

Flags a training setup whose activation (gradient) checkpointing is off, as decided by
:func:`lintlora.facts.checkpointing` (``False``, never ``None``). Without checkpointing every
decoder layer keeps its intermediate activations until the backward pass; with it only each
layer's input is kept and one layer at a time is recomputed, for about one extra forward pass
of compute per step. Sources: allenai/open-instruct#65 (QLoRA OOM at 75 GiB on an 80 GB card,
fixed by turning checkpointing on), gke-labs/open-rl PR #99 (about 70 GiB of activations at
13k tokens for a 4B model without it), axolotl-ai-cloud/axolotl PR #2412.

Silent when the estimate is known and the fix lowers its peak by less than :data:`MIN_SAVING`
(10%) of it: the peak is then set by something else (full fine-tuning at a small batch peaks
at the optimizer step, after the activations are freed), and checkpointing would only cost
speed.

Severity: warning; error when the estimate as written exceeds the GPU's memory and the fix
brings it under, unless that estimate rests on something the file does not set
(:attr:`lintlora.estimate.shape.Shape.guessed`: an assumed batch size, sequence length or
16-bit base, or a library's default sequence length): the finding then stays a warning and
says so; info when the estimate as written fits with :data:`HEADROOM` to spare
(checkpointing then only costs speed), and info whenever the deciding value is a default the
user sets at launch (:attr:`lintlora.facts.Fact.at_launch`: an argparse or HfArgumentParser
option, a dataclass field, an environment variable); the message then says how to set it.
Info too when there is no figure (the model is unknown): the message then says what
checkpointing does, not that it is the largest saving (a small seq2seq model may save little).
A reset under a condition (:attr:`lintlora.facts.Fact.condition`: ``if model_args.use_peft:
training_args.gradient_checkpointing = False``) is at most a warning; its message names the
condition and its fix removes the reset, never "pass --gradient_checkpointing" (the script
would reset it). ``prepare_model_for_kbit_training`` on a base loaded unquantized turns
nothing on (:func:`lintlora.facts.kbit_prep_without_checkpointing`; peft
``src/peft/utils/other.py``, 0.20.1.dev0): the message says so and, without a trainer flag to
point at, the finding points at that call.

When the run is known (issue 15): a launch passing ``--gradient_checkpointing True`` (origin
``LAUNCH``) turns it on and the rule is silent; ``--gradient_checkpointing False`` is reported
at the launch line; a launch that does not pass it makes the default the run's value, so the
finding is not "info: unless passed at launch" but says "run.sh:3 does not pass
--gradient_checkpointing" (:attr:`lintlora.facts.Fact.at_run`) at the usual severity, and
its fix names the launch command. The run's FSDP activation checkpointing (an accelerate
config's ``fsdp_activation_checkpointing: true``; litgpt on several devices) counts as on.
Findings resting on the launch carry its line as a related location.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import HEADROOM, capacity as capacity_text, fits, gib
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["GradientCheckpointingOff", "MIN_SAVING"]

MIN_SAVING = HEADROOM
"""Share of the estimated peak (as written) the fix must save for LL001 to report.

Checkpointing lowers the peak only where the activations set it. Where the peak is set
elsewhere (full fine-tuning at a small batch peaks at the optimizer step, with weights,
gradients and optimizer states and no activations left) the fix saves about nothing, and a
saving smaller than the estimator's accuracy target (:data:`lintlora.rules._text.HEADROOM`,
10%) cannot be told from none: the rule stays silent. Unknown figures (unknown model) do not
silence it.
"""

_REENTRANT_NOTE = (
    'On a frozen base (LoRA/QLoRA) enable it with gradient_checkpointing_kwargs={"use_reentrant": False} '
    "(why: LL009)."
)
"""The frozen-base clause of the fix. Why reentrant checkpointing needs the inputs to require
grad, and what else provides it, is LL009's (checkpointing-without-input-grads) to say; LL001
only names the setting so that its fix does not produce an LL009 finding."""


_NON_REENTRANT = r"""use_reentrant['"]?\s*[=:]\s*False\b"""
"""``use_reentrant=False`` / ``"use_reentrant": False`` in a kwargs expression's source text."""


def _reentrant_handled(setup: TrainingSetup) -> bool:
    """Whether the script already keeps the adapters' gradients under checkpointing: it passes
    ``gradient_checkpointing_kwargs`` with ``use_reentrant`` False (a value read, or written in
    an expression lintlora could not resolve, e.g. set under a condition), or calls
    ``enable_input_require_grads()``. The fix then does not tell the user to add them."""
    if setup.has_call("enable_input_require_grads"):
        return True
    kwargs = setup.get("training.gradient_checkpointing_kwargs")
    if kwargs.known and isinstance(kwargs.value, dict):
        return kwargs.value.get("use_reentrant") is False
    if kwargs.expr and kwargs.span is not None:
        return re.search(_NON_REENTRANT, kwargs.expr) is not None
    return False


def _activation_bytes(estimate: object) -> int | None:
    """Sum of the estimate's activation components (breakdown keys naming activations)."""
    breakdown = getattr(estimate, "breakdown", None) or {}
    parts = [v for k, v in breakdown.items() if "activation" in k.lower() and isinstance(v, (int, float))]
    return int(sum(parts)) if parts else None


_YAML_GC_KEY = {"axolotl": "gradient_checkpointing", "torchtune": "enable_activation_checkpointing"}
"""The checkpointing key of each YAML dialect whose default is off (others use the
TrainingArguments name; LLaMA-Factory's default is on)."""


_SIMPLE_EXPR = re.compile(r"[A-Za-z_][\w.]*")
"""A name or attribute (``args.gc``), quoted as written; anything else is an expression."""


def _launch_words(setting: Setting) -> str:
    """``argparse default of --gc`` / ``dataclass default of Args.gc``: where a launch-time
    default comes from, for messages."""
    origin = setting.origin.value.replace("-", " ")
    return f"{origin} of {setting.source}" if setting.source else origin


def _reason(setup: TrainingSetup, fact: facts.Fact) -> str:
    """What turned checkpointing off, in the file's own spelling."""
    if fact.condition:
        return (f"the training arguments' gradient_checkpointing is {fact.condition}, which no launch "
                "option undoes")
    call = facts.deciding_call(setup, fact)
    if call is not None and call.kind == "prepare_model_for_kbit_training":
        arg = call.args.get("use_gradient_checkpointing")
        if facts.set_at_launch(arg):
            assert arg is not None
            written = arg.expr or "use_gradient_checkpointing"
            return (f"prepare_model_for_kbit_training(use_gradient_checkpointing={written}) and "
                    f"{written} defaults to False ({_launch_words(arg)})")
        return "prepare_model_for_kbit_training(use_gradient_checkpointing=False)"
    if call is not None and call.kind == "gradient_checkpointing_disable":
        return "gradient_checkpointing_disable() is the last checkpointing call"
    reason = fact.reason
    trainer = setup.get("training.gradient_checkpointing")
    if trainer.origin is Origin.LIBRARY_DEFAULT and trainer.source and ".set_training" in trainer.source:
        return f"set_training(...) resets gradient_checkpointing to False ({trainer.source})"
    if facts.set_at_launch(trainer) and fact.span == (trainer.span or trainer.key_span):
        if trainer.expr and not _SIMPLE_EXPR.fullmatch(trainer.expr.strip()) and trainer.source:
            # an expression (`training_args.gradient_checkpointing and not args.use_unsloth`):
            # name the option that decides it and its default, not the whole expression
            option, _, detail = trainer.source.partition(":")
            reason = f"{option.strip()} decides it and defaults to False ({detail.strip() or _launch_words(trainer)})"
        else:
            written = f"gradient_checkpointing={trainer.expr}" if trainer.expr else "gradient_checkpointing"
            reason = f"{written} defaults to False ({_launch_words(trainer)})"
    if setup.kind in ("yaml", "json"):
        if setup.dialect == "chatglm-finetune" and trainer.known and trainer.origin is Origin.LIBRARY_DEFAULT:
            return (f"`training_args:` leaves gradient_checkpointing at False and GLM-4's finetune.py turns it "
                    f"on only when resuming ({trainer.source})")
        if trainer.known and trainer.origin is Origin.LIBRARY_DEFAULT:
            where = f" ({trainer.source})" if trainer.source else ""
            if setup.framework == "litgpt":
                return f"litgpt's LoRA recipe does not checkpoint on one device{where}"
            key = _YAML_GC_KEY.get(setup.framework, "gradient_checkpointing")
            return f"{setup.framework}'s default `{key}: false`{where}"
        if trainer.known and trainer.expr and fact.span == (trainer.span or trainer.key_span):
            return f"`{trainer.expr}` in the config turns it off"
        reason = reason.replace("gradient_checkpointing=False", "gradient_checkpointing: false")
    return reason


def _fixed_setup(setup: TrainingSetup) -> TrainingSetup:
    """The setup with checkpointing on: the trainer's flag when there is a trainer section (it
    wins over any call), else a synthetic ``gradient_checkpointing_enable`` call after the rest."""
    if setup.training is not None:
        return setup.set("training.gradient_checkpointing", True, "LL001 fix: checkpointing on")
    order = max((c.order for c in setup.calls), default=-1) + 1
    return setup.with_call(CallSite(
        "gradient_checkpointing_enable", "model.gradient_checkpointing_enable", None,
        args={"gradient_checkpointing_kwargs": Setting.assumed({"use_reentrant": False}, "LL001 fix")},
        order=order, synthetic=True,
    ))


def _fix_text(setup: TrainingSetup, fact: facts.Fact, frozen: bool) -> str:
    """The complete remedy, in the terms of the file's own framework or dialect."""
    call = facts.deciding_call(setup, fact)
    framework = setup.framework
    if fact.condition and setup.kind not in ("yaml", "json"):
        return (f"Remove the assignment that turns it off (gradient_checkpointing {fact.condition}), or "
                "assign True there; without it checkpointing follows the training arguments' own "
                "gradient_checkpointing, which must be on too.")
    if setup.kind in ("yaml", "json"):
        if framework == "llama-factory":
            return ("Remove `disable_gradient_checkpointing: true` (LLaMA-Factory turns checkpointing "
                    "on by default and makes the inputs require grad for adapters itself).")
        if framework == "torchtune":
            return "Set `enable_activation_checkpointing: True` in the config."
        if framework == "litgpt":
            return ("litgpt's LoRA recipe checkpoints activations only when it trains on several devices "
                    "(FSDP); on one device, lower `train.micro_batch_size` or `train.max_seq_length` if "
                    "memory is short, or switch to a recipe with a checkpointing option.")
        if setup.dialect == "chatglm-finetune":
            text = "Set `gradient_checkpointing: true` under `training_args:`"
            if frozen:
                text += " with `gradient_checkpointing_kwargs: {use_reentrant: false}`"
            return text + "."
        if framework == "axolotl":
            text = "Set `gradient_checkpointing: true`"
            if frozen:
                text += " and `gradient_checkpointing_kwargs: {use_reentrant: false}`"
            return text + " in the config."
        text = "Set `gradient_checkpointing: true`"
        if frozen:
            text += ' and `gradient_checkpointing_kwargs: {"use_reentrant": false}`'
        return text + " in the config."
    if call is not None and call.kind == "prepare_model_for_kbit_training":
        return ("Pass use_gradient_checkpointing=True to prepare_model_for_kbit_training (its default); "
                "with it the helper also makes the inputs require grad, so the adapters still train.")
    if call is not None and call.kind == "gradient_checkpointing_disable":
        text = "Remove the gradient_checkpointing_disable() call, or enable checkpointing after it."
        return text + (" " + _REENTRANT_NOTE if frozen else "")
    if framework == "unsloth":
        return ('Pass use_gradient_checkpointing="unsloth" (or True) to FastLanguageModel.get_peft_model.')
    trainer = setup.get("training.gradient_checkpointing")
    if trainer.origin is Origin.LAUNCH and fact.span == (trainer.span or trainer.key_span):
        text = (f"Pass gradient checkpointing on in the launch command ({facts.where(trainer.span)}: "
                f"--gradient_checkpointing True in place of {trainer.source or 'the value passed'})")
        if frozen:
            text += ', with gradient_checkpointing_kwargs={"use_reentrant": False} (on a frozen base; why: LL009)'
        return text + "."
    if setup.training is not None and facts.set_at_launch(trainer) \
            and fact.span == (trainer.span or trainer.key_span):
        how = (fact.at_launch or "").replace("unless ", "", 1)
        if fact.at_run and " does not pass " in fact.at_run:
            where, _, option = fact.at_run.partition(" does not pass ")
            how = f"add {option} True to the command at {where}" if option.startswith("-") \
                else f"pass the option in the command at {where}"
        elif " is set at launch" in how:
            how = "set " + how.replace(" is set at launch", " at launch")
        else:
            how = "pass " + how.replace(" is passed at launch", " at launch") if how else "pass the option"
        parsed = ": a command-line option" in (trainer.source or "")  # HfArgumentParser/TrlParser field
        other = ("or set gradient_checkpointing = True on the parsed training arguments in the script"
                 if parsed else "or make its default True in the script")
        text = f"Turn it on where the value comes from: {how}, {other}"
        if frozen:
            text += (', and add gradient_checkpointing_kwargs={"use_reentrant": False} to the training '
                     "arguments (on a frozen base; why: LL009).")
        else:
            text += "."
        return text
    if setup.training is not None and trainer.source and ".set_training" in trainer.source:
        text = ("Pass gradient_checkpointing=True (activation_checkpointing=True from transformers 5.24) to "
                "the set_training(...) call: it resets every training field it is not given")
        if frozen:
            text += (', and gradient_checkpointing_kwargs={"use_reentrant": False} to the training arguments '
                     "(on a frozen base; why: LL009)")
        return text + "."
    if setup.training is not None:
        text = "Pass gradient_checkpointing=True to the training arguments"
        if frozen:
            text += (' together with gradient_checkpointing_kwargs={"use_reentrant": False} (on a frozen '
                     "base; why: LL009).")
        else:
            text += "."
        return text
    text = ('Call model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}) '
            "after loading the model")
    if frozen:
        text += " (non-reentrant, as a frozen base needs; why: LL009)."
    else:
        text += "."
    return text


FIX_ON = "turn gradient checkpointing on"
"""The fix's title: the value that turns it off set to on where it is written (the training
arguments' keyword, the assignment, the option's default, the config key, the helper's
``use_gradient_checkpointing``), with non-reentrant checkpointing on a frozen base."""
FIX_LAUNCH = "turn gradient checkpointing on in the launch command"
"""The title when the value is one the launch passes (unsafe: it edits the launch script)."""

_KWARGS = '{"use_reentrant": False}'


def _autofix(setup: TrainingSetup, fact: facts.Fact, frozen: bool) -> Fix | None:
    """The fix as source changes (issue 17), or ``None`` where no edit is right: a reset under
    a condition, a ``gradient_checkpointing_disable()`` call, ``set_training(...)``, unsloth,
    litgpt, a store-true option (no default to replace), or a value lintlora could not
    resolve."""
    path = setup.path
    if fact.condition:
        return None
    trainer = setup.get("training.gradient_checkpointing")
    if setup.kind in ("yaml", "json"):
        return _yaml_fix(setup, trainer, frozen)
    if setup.kind not in ("python", "notebook") or setup.framework == "unsloth":
        return None
    call = facts.deciding_call(setup, fact)
    if call is not None and call.kind == "prepare_model_for_kbit_training":
        op = ops.replace_value(call.args.get("use_gradient_checkpointing"), path, "True")
        return ops.make_fix(FIX_ON, FixSafety.SAFE, [op])
    if call is None and setup.training is None:
        return _enable_call(setup)
    if call is not None:
        return None
    if trainer.source and ".set_training" in trainer.source:
        return None
    if fact.span != (trainer.span or trainer.key_span) and trainer.origin is not Origin.LIBRARY_DEFAULT \
            and fact.span != setup.training.span:
        return None
    safety, title = FixSafety.SAFE, FIX_ON
    if trainer.origin is Origin.LAUNCH:
        first = ops.launch_set(trainer, "--gradient_checkpointing", "True", setup)
        safety, title = FixSafety.UNSAFE, FIX_LAUNCH
    elif trainer.origin is Origin.LIBRARY_DEFAULT:
        first = ops.set_keyword(setup.training.span, path, "gradient_checkpointing", "True", trainer)
    else:
        first = ops.replace_value(trainer, path, "True")
    edits = [first]
    if frozen and trainer.origin is Origin.LAUNCH:
        # HfArgumentParser reads a dict field from a JSON word; the value is the word as the
        # program receives it (the fixer shell-quotes it: '{"use_reentrant": false}')
        edits.append(ops.launch_set(trainer, "--gradient_checkpointing_kwargs", '{"use_reentrant": false}', setup))
    elif frozen:
        kwargs = setup.get("training.gradient_checkpointing_kwargs")
        edits.append(ops.set_keyword(setup.training.span, path, "gradient_checkpointing_kwargs", _KWARGS, kwargs))
    return ops.make_fix(title, safety, edits)


def _enable_call(setup: TrainingSetup) -> Fix | None:
    """A script with no trainer (a hand-written loop): ``<model>.gradient_checkpointing_enable(
    gradient_checkpointing_kwargs={"use_reentrant": False})`` inserted after the statement that
    loads the model, through the name the load binds (before any adapter wrap)."""
    model = setup.model
    if model is None or model.span is None or not model.variable or model.span.path != setup.path \
            or not model.variable.isidentifier():
        return None
    text = f'{model.variable}.gradient_checkpointing_enable(gradient_checkpointing_kwargs={_KWARGS})'
    return Fix(FIX_ON, FixSafety.SAFE, (EditOp("insert_after", model.span, text),))


def _yaml_fix(setup: TrainingSetup, trainer: Setting, frozen: bool) -> Fix | None:
    """``yaml_set`` of the dialect's checkpointing key (LLaMA-Factory's
    ``disable_gradient_checkpointing`` to false), with non-reentrant checkpointing on a frozen
    base where the dialect passes ``gradient_checkpointing_kwargs`` through."""
    if setup.framework == "litgpt":
        return None
    prefix = "training_args." if setup.dialect == "chatglm-finetune" else ""
    if trainer.known and trainer.origin is not Origin.LIBRARY_DEFAULT:
        key = trainer.expr
        if not key:
            return None
        edits = [ops.yaml_set(setup, key, "false" if key.endswith("disable_gradient_checkpointing") else "true",
                              trainer)]
    elif trainer.origin is Origin.LIBRARY_DEFAULT:
        key = prefix + _YAML_GC_KEY.get(setup.framework, "gradient_checkpointing")
        edits = [ops.yaml_set(setup, key, "true", trainer)]
    else:
        return None
    if frozen and setup.framework not in ("llama-factory", "torchtune"):
        kwargs = setup.get("training.gradient_checkpointing_kwargs")
        edits.append(ops.yaml_set(setup, prefix + "gradient_checkpointing_kwargs.use_reentrant", "false",
                                  kwargs if kwargs.span is not None else None))
    return ops.make_fix(FIX_ON, FixSafety.SAFE, edits)


class GradientCheckpointingOff(Rule):
    """Training with activation checkpointing off (see the module docstring)."""

    code = "LL001"
    name = "gradient-checkpointing-off"
    severity = Severity.WARNING
    summary = "Training with gradient checkpointing off keeps every layer's activations in GPU memory"
    fixes = {FIX_ON: FixSafety.SAFE, FIX_LAUNCH: FixSafety.UNSAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        fact = facts.checkpointing(setup)
        if fact.value is not False:
            return
        fixed = _fixed_setup(setup)
        if facts.checkpointing(fixed).value is not True:  # pragma: no cover - defensive
            fixed = None
        figures = context.figures(setup, fixed)
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None \
                and figures.peak_bytes - figures.peak_after_fix_bytes < MIN_SAVING * figures.peak_bytes:
            return  # the activations do not set the peak: checkpointing saves nothing that matters
        # a frozen base needs non-reentrant checkpointing (or inputs that require grad): the
        # fix says so only where the script does not already see to it
        frozen = facts.frozen_base(setup) is True and not _reentrant_handled(setup)
        capacity = figures.gpu_memory_bytes
        capacity_words = capacity_text(figures)

        when = f" {fact.at_launch}" if fact.at_launch else f" ({fact.at_run})" if fact.at_run else ""
        parts = [f"Gradient checkpointing is off{when}: {_reason(setup, fact)}. Every layer keeps its "
                 "activations until the backward pass."]
        before = context.estimate(setup)
        after = context.estimate(fixed) if fixed is not None else None
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None:
            act_before, act_after = _activation_bytes(before), _activation_bytes(after)
            saved = figures.peak_bytes - figures.peak_after_fix_bytes
            # the peak's drop is the saving; the activation figures are those held at each
            # estimate's own peak (the two peaks may fall in different phases)
            text = (f"Turning it on lowers the estimated peak by {gib(saved)} "
                    f"({gib(figures.peak_bytes)} -> {gib(figures.peak_after_fix_bytes)})")
            if act_before is not None and act_after is not None:
                text += f"; activations held at the peak {gib(act_before)} -> {gib(act_after)}"
            parts.append(text + ".")
        else:
            # no figure: how much it saves is not known (a small seq2seq model at short sequences
            # saves little), so the finding says less and stays at info (below)
            parts.append("Turning it on keeps only each layer's input and recomputes the rest during the "
                         "backward pass; how much that saves here is not estimated (no figure: the model "
                         "is unknown).")
        parts.append("It costs about one extra forward pass per step.")
        noop = facts.kbit_prep_without_checkpointing(setup)
        if noop is not None:
            line = f" (line {noop.span.line})" if noop.span is not None else ""
            parts.append(f"prepare_model_for_kbit_training(){line} does not turn it on: peft enables "
                         "checkpointing there only for a quantized base (peft src/peft/utils/other.py), and "
                         "this model is loaded unquantized.")

        severity = Severity.WARNING
        no_switch = setup.framework == "litgpt" and setup.kind in ("yaml", "json")
        over = fits(figures.peak_bytes, capacity)
        from lintlora.rules._fit import fit_not_judged

        if over is False and fit_not_judged(setup, before):
            # a sharded run of unknown size, a split or method the estimate does not model: its
            # one-GPU figure is an upper bound, so "does not fit" says nothing (LL008 is silent)
            over = None
        if no_switch and over is not False:
            # the config has no checkpointing switch to set: the finding is only worth having
            # when the estimate does not fit the named GPU (then the fix text says what to
            # lower); otherwise it would flag every litgpt config, fit or no GPU named
            return
        shape = context.shape(setup) if over is False else None
        at = f" at {shape.basis}" if shape is not None and shape.guessed else ""
        if over is False and fits(figures.peak_after_fix_bytes, capacity) is True:
            severity = Severity.WARNING if no_switch or at else Severity.ERROR
            parts.append(f"As written the estimate does not fit on the {figures.gpu or 'GPU'} "
                         f"({capacity_words}){at}; with checkpointing it does.")
            if at and not no_switch:
                parts.append("Reported as a warning, not an error: whether it fits depends on "
                             "what the file does not set.")
        elif over is False:
            parts.append(f"As written the estimate does not fit on the {figures.gpu or 'GPU'} "
                         f"({capacity_words}){at}, and checkpointing alone does not bring it under.")
        elif fits(figures.peak_bytes, capacity, HEADROOM) is True:
            # fits with room to spare
            severity = Severity.INFO
            parts.append(f"The estimate fits on the {figures.gpu or 'GPU'} ({capacity_words}) as written, "
                         "so this matters only if you need the headroom (longer sequences, bigger batches).")

        if fact.condition and severity is Severity.ERROR:
            severity = Severity.WARNING
            parts.append("Reported as a warning, not an error: it holds on that branch of the script.")
        if figures.peak_bytes is None and severity is not Severity.INFO:
            severity = Severity.INFO
            parts.append("Reported as info: without a figure it may save little.")
        if fact.at_launch and severity is not Severity.INFO:
            # the run may well be launched with checkpointing on: say so, at info (facts.set_at_launch)
            severity = Severity.INFO
            parts.append("Reported as info: the value is a default chosen at launch.")

        span = fact.span or (noop.span if noop is not None else None) \
            or (setup.training.span if setup.training is not None else None) or setup.anchor or (setup.model.span if setup.model is not None else None)
        rests_on = (_reason(setup, fact),) if fact.from_default else ()
        yield self.finding(
            context, setup, span, " ".join(parts),
            fix=_fix_text(setup, fact, frozen), fixed_setup=fixed, severity=severity, rests_on=rests_on,
            related=_related(setup, fact), autofix=_autofix(setup, fact, frozen),
        )


def _related(setup: TrainingSetup, fact: facts.Fact) -> tuple:
    """The launch places the answer rests on: the launch line of the run when the answer is a
    value the launch passed or a default it does not override (:attr:`facts.Fact.at_run`),
    and the launch value itself."""
    trainer = setup.get("training.gradient_checkpointing")
    out: tuple = ()
    if trainer.origin is Origin.LAUNCH and fact.span == (trainer.span or trainer.key_span):
        out += facts.setting_related(trainer, trainer.source or "gradient_checkpointing")
    if out or fact.at_run:
        out = facts.launch_related(setup) + out
    return out
