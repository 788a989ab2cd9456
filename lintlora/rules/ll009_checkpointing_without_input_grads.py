"""LL009 checkpointing-without-input-grads (page: ``rules/LL009.md``).

Flags trainable adapters under *reentrant* activation checkpointing when nothing makes the
embedding output require grad. A reentrant checkpoint (``torch.utils.checkpoint`` with
``use_reentrant=True``) only builds a graph through a block whose inputs require grad; on a
frozen base the embedding output does not, so PyTorch warns "None of the inputs have
requires_grad=True. Gradients will be None" and the adapters inside the checkpointed blocks get
no gradient: backward fails with "element 0 of tensors does not require grad and does not have a
grad_fn", or, when something outside the blocks trains, the run silently does not learn
(bug-reports-2 BN01-BN04: huggingface/transformers#42489, datawhalechina/self-llm#172/#229/#423,
QwenLM/Qwen-VL#490, huggingface/transformers#35826).

What makes the inputs require grad (any one silences the rule), read from the sources:

- ``model.enable_input_require_grads()``, or its hook written out
  (``model.get_input_embeddings().register_forward_hook(make_inputs_require_grad)``);
- peft's wrap of an *unquantized* base that is already checkpointing: ``PeftModel.__init__``
  calls ``_prepare_model_for_gradient_checkpointing`` when ``model.is_gradient_checkpointing``,
  which calls ``enable_input_require_grads()`` unless the base is quantized (peft
  src/peft/peft_model.py 0.20.1.dev0, lines 183-184 and 726-740). So
  ``gradient_checkpointing_enable()`` *before* ``get_peft_model`` on a 16-bit base counts;
- ``prepare_model_for_kbit_training`` on a quantized base with checkpointing on (its default),
  which calls ``enable_input_require_grads()`` when ``use_reentrant`` is not ``False`` (peft
  src/peft/utils/other.py 0.20.1.dev0, lines 221-239);
- transformers' ``gradient_checkpointing_enable`` after ``model.add_adapter(...)``: it calls
  ``enable_input_require_grads()`` only for models whose ``_hf_peft_config_loaded`` is set,
  which ``add_adapter``/``load_adapter`` set and a ``PeftModel`` never does (transformers
  src/transformers/modeling_utils.py 4.57.6, lines 3709-3714; integrations/peft.py 238, 330).
  The Trainer's ``gradient_checkpointing=True`` calls it at ``train()`` time (trainer.py
  4.57.6, line 2447), after the wrap: for a ``PeftModel`` that installs nothing (BN01).

Which variant is in effect: what the file states (``gradient_checkpointing_kwargs`` of the
training arguments, of ``gradient_checkpointing_enable(...)``, of
``prepare_model_for_kbit_training``, whose own default ``{}`` passes no ``use_reentrant`` and
leaves torch's reentrant default, peft utils/other.py line 191), else the library default:
reentrant in transformers 4.x
(``gradient_checkpointing_kwargs=None`` becomes ``{"use_reentrant": True}``: modeling_utils.py
4.46.3 line 2598, 4.57.6 line 3692), non-reentrant from transformers 5 (PR #43203;
``activation_checkpointing_kwargs = {"use_reentrant": False}``, 5.24.0 line 3158). transformers
5.24.0 also installs the input hook itself for every model whose main input is ``input_ids``
(modeling_utils.py 5.24.0, lines 3190-3198).

The transformers release comes from :meth:`lintlora.context.Context.library_version` (the
project's pins, ``--assume-version``, ``[tool.lintlora] versions``): a verdict resting on the
library default is silent when a 5.x release is stated, names the 4.x release and where it was
read when one is (``transformers==4.44.2 from requirements.txt:3``), and otherwise keeps the
4.x condition and says that the release was assumed. With ``use_reentrant=True`` written and a
5.x release stated, only the DDP case is reported (5.x installs the input hook itself).

Severity: error when the file states ``use_reentrant=True`` (reentrant on every version; the
message names transformers 4.x, which installs no hook for a ``PeftModel``); warning when it
rests on the default, with the condition in the message ("with transformers 4.x, whose default
is reentrant"); info when the deciding value is a default set at launch
(:func:`lintlora.facts.set_at_launch`).

DDP sub-case (BN05: huggingface/trl#4782, huggingface/accelerate#3536, huggingface/trl#921):
reentrant checkpointing replays each block's forward during backward, so with
``find_unused_parameters=True`` DDP's hooks fire twice per adapter weight: "Expected to mark a
variable ready only once ... has been marked as ready twice". The Trainer passes
``find_unused_parameters = ddp_find_unused_parameters`` when set, else ``not
model.is_gradient_checkpointing`` for a ``PreTrainedModel`` and ``True`` for anything else, a
``PeftModel`` included (trainer.py 4.57.6, lines 2194-2201; 5.24.0, lines 749-756). Reported
with the plain Trainer (or a TRL trainer with ``use_reentrant=True`` written) and evidence of a
data-parallel launch (:func:`lintlora.facts.data_parallel`, not DeepSpeed/FSDP), whether or
not the inputs require grad; the same finding carries both failures when both apply.

Silent: TRL trainers for the input-grad case (every trainer calls
``model.enable_input_require_grads()`` for a PEFT model under checkpointing: trl
trl/trainer/sft_trainer.py v1.9.0, lines 1118-1121, since v0.26 (PR #4577); all trainers
default to ``use_reentrant=False`` on transformers < 5 since v0.27 (PR #4811), sft_trainer.py
lines 1328-1334); unsloth (``FastLanguageModel.get_peft_model`` runs
``prepare_model_for_kbit_training(..., use_reentrant=True)``, unsloth/models/llama.py lines
3641-3645, whose unsloth_zoo ``prepare_model_for_training`` calls
``enable_input_require_grads()``, unsloth_zoo/training_utils.py lines 477-487); YAML/JSON
configs (axolotl's ``load_adapter`` calls ``enable_input_require_grads()`` for every adapter,
src/axolotl/loaders/adapter.py lines 427-428; LLaMA-Factory's checkpoint function makes the
hidden states of every trainable layer require grad,
src/llamafactory/model/model_utils/checkpointing.py lines 100-121; torchtune and litgpt use
their own non-reentrant wrappers); and whenever a value cannot be resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from lintlora import facts
from lintlora.findings import Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, Origin, Setting, Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["CheckpointingWithoutInputGrads", "Enabler", "enabler", "reentrant"]

_V4_DEFAULT = ("with transformers 4.x, whose default is reentrant (modeling_utils.py 4.57.6, line 3692; "
               "transformers 5 defaults to non-reentrant, PR #43203)")
"""The condition a verdict resting on the library default names."""


def _default_condition(used: Any) -> str:
    """The condition a verdict resting on transformers' default names, with the release the
    run uses and where it came from (:meth:`lintlora.context.Context.library_version`): a 4.x
    release the project pins (``"with transformers 4.44.2 (transformers==4.44.2 from
    requirements.txt:3), whose default is reentrant ..."``), else the 4.x condition and the
    assumption."""
    if used is not None and not used.assumed and used.version is not None and used.version.major < 5:
        return (f"with transformers {used.version} ({used.where}), whose default is reentrant "
                "(modeling_utils.py 4.57.6, line 3692; transformers 5 defaults to non-reentrant, PR #43203)")
    where = getattr(used, "where", None)
    return _V4_DEFAULT + (f"; which transformers runs is not known ({where})" if where else "")


def _runs_v5(used: Any) -> bool:
    """Whether the project (or a setting) states a transformers 5 release: its default
    checkpointing is non-reentrant, so a verdict resting on 4.x's default does not apply."""
    return used is not None and not used.assumed and used.version is not None and used.version.major >= 5

_FALSE = re.compile(r"""use_reentrant['"]?\s*[=:]\s*False\b""")
_TRUE = re.compile(r"""use_reentrant['"]?\s*[=:]\s*True\b""")


@dataclass(frozen=True)
class Enabler:
    """What turns checkpointing on last, and the checkpoint variant it asks for.

    Attributes:
        what: the file's own spelling (``gradient_checkpointing=True``,
            ``model.gradient_checkpointing_enable()``).
        span: where it is written.
        kwargs: its ``gradient_checkpointing_kwargs`` (``None``: not passed).
        order: the call's position in source order; ``None`` for the trainer flag, which acts
            at ``train()``, after every call in the script.
        setting: the trainer flag's Setting, when the trainer flag decides.
        guard: for a call that runs only when the launch changes a default
            (:attr:`lintlora.training_setup.CallSite.guard`), that default.
    """

    what: str
    span: Span | None
    kwargs: Setting | None
    order: int | None
    setting: Setting | None = None
    guard: Setting | None = None


def enabler(setup: TrainingSetup) -> Enabler | None:
    """The last thing that turns checkpointing on: the trainer's ``gradient_checkpointing=True``
    (it runs at ``train()``, so it wins), else the last ``gradient_checkpointing_enable()`` or
    ``prepare_model_for_kbit_training`` on a quantized base. ``None`` when a later
    ``gradient_checkpointing_disable()`` undoes it, when checkpointing comes from FSDP or
    unsloth, or when none is found."""
    flag = setup.get("training.gradient_checkpointing")
    if flag.is_(True):
        config = setup.kind in ("yaml", "json")
        return Enabler("`gradient_checkpointing: true`" if config else "gradient_checkpointing=True",
                       flag.span or flag.key_span, setup.get("training.gradient_checkpointing_kwargs"),
                       None, flag)
    last: Enabler | None = None
    for call in sorted(setup.calls, key=lambda c: c.order):
        if call.synthetic or call.qualified_name.startswith("unsloth."):
            continue
        if call.kind == "gradient_checkpointing_disable":
            last = None
        elif call.kind == "gradient_checkpointing_enable":
            name = call.qualified_name.rsplit(".", 1)[-1] or "gradient_checkpointing_enable"
            receiver = f"{call.receiver}." if call.receiver else ""
            last = Enabler(f"{receiver}{name}()", call.span,
                           call.args.get("gradient_checkpointing_kwargs"), call.order, guard=call.guard)
        elif call.kind == "prepare_model_for_kbit_training" and facts.is_quantized(setup):
            use = call.args.get("use_gradient_checkpointing")
            if use is None or use.is_(True):
                last = Enabler("prepare_model_for_kbit_training()", call.span,
                               call.args.get("gradient_checkpointing_kwargs"), call.order, guard=call.guard)
            elif use is not None and use.known:
                continue
            else:
                return None  # unresolved: cannot tell
    return last


def reentrant(kwargs: Setting | None) -> str | None:
    """The checkpoint variant ``kwargs`` asks for: ``"explicit"`` (``use_reentrant`` True
    written), ``"off"`` (False written), ``"default"`` (not written: the library default
    applies), or ``None`` when it cannot be read."""
    if kwargs is None:
        return "default"
    if kwargs.known:
        value = kwargs.value
        if value is None:
            return "default"
        if isinstance(value, dict):
            if "use_reentrant" not in value:
                return "default"
            flag = value["use_reentrant"]
            return "explicit" if flag is True else "off" if flag is False else None
        return None
    text = kwargs.expr or ""
    if _FALSE.search(text):
        return "off"
    return None


def _prepares(setup: TrainingSetup) -> CallSite | None | bool:
    """The ``prepare_model_for_kbit_training`` call that installs the input hook (a quantized
    base, checkpointing on, ``use_reentrant`` not False); ``False`` when the base's quantization
    is unknown (cannot tell); ``None`` when there is none."""
    for call in setup.calls_of("prepare_model_for_kbit_training"):
        if call.synthetic:
            continue
        quantized = facts.is_quantized(setup)
        if quantized is None:
            return False
        if not quantized:
            continue  # peft only prepares a quantized base (other.py 0.20.1.dev0, lines 221-228)
        use = call.args.get("use_gradient_checkpointing")
        if use is not None and not use.known:
            return False
        if use is None or use.value:
            if reentrant(call.args.get("gradient_checkpointing_kwargs")) != "off":
                return call
    return None


def _hooked(setup: TrainingSetup, wraps: tuple[CallSite, ...], adds: tuple[CallSite, ...],
            on: Enabler) -> str | None | bool:
    """What makes the embedding output require grad (a phrase), ``None`` when nothing does,
    ``False`` when it cannot be told."""
    for call in setup.calls_of("enable_input_require_grads"):
        if not call.synthetic:
            return "enable_input_require_grads()"
    prep = _prepares(setup)
    if prep is False:
        return False
    if prep is not None:
        return "prepare_model_for_kbit_training"
    enables = [c for c in setup.calls_of("gradient_checkpointing_enable") if not c.synthetic]
    if wraps:
        first_wrap = min(c.order for c in wraps)
        if any(c.order < first_wrap for c in enables):
            bits = facts.quant_bits(setup)
            if bits is None:
                return False
            if bits == 0:
                return "peft's wrap of a base that is already checkpointing"
    if adds and not wraps:
        first_add = min(c.order for c in adds)
        if on.order is None or on.order > first_add:
            return "gradient_checkpointing_enable() after add_adapter()"
    return None


def _launch(*settings: Setting | None) -> str | None:
    for s in settings:
        hint = facts.launch_hint(s)
        if hint:
            return hint
    return None


def _wrap_words(wraps: tuple[CallSite, ...], adds: tuple[CallSite, ...]) -> str:
    if wraps:
        call = wraps[0]
        if call.kind == "get_peft_model":
            return "get_peft_model(...)"
        return "PeftModel.from_pretrained(..., is_trainable=True)"
    return "add_adapter(...)"


def _why_no_hook(setup: TrainingSetup, wraps: tuple[CallSite, ...], on: Enabler) -> str:
    if not wraps:
        return ("checkpointing is turned on before add_adapter(), and transformers installs the input "
                "hook only when gradient_checkpointing_enable() runs after it (modeling_utils.py 4.57.6, "
                "lines 3709-3714)")
    if facts.is_quantized(setup):
        return ("peft installs the input hook at wrap time only on an unquantized base, and "
                "prepare_model_for_kbit_training, which installs it for a quantized one, is not called "
                "(peft peft_model.py 0.20.1.dev0, lines 726-740; utils/other.py, lines 221-239)")
    when = "at train()" if on.order is None else "after the wrap"
    return (f"checkpointing is turned on {when}, and transformers 4.x's gradient_checkpointing_enable "
            "installs the input hook only for adapters added with add_adapter(), not for a PeftModel "
            "(modeling_utils.py 4.57.6, lines 3709-3714; transformers#42489)")


def _ddp(setup: TrainingSetup, wraps: tuple[CallSite, ...], variant: str) -> tuple[bool, Setting | None] | None:
    """Whether the DDP double-ready failure applies: ``(explicit, setting)`` with ``explicit``
    True when ``ddp_find_unused_parameters=True`` is written; ``None`` when it does not apply
    or cannot be told."""
    if setup.training is None or setup.framework not in ("transformers", "trl"):
        return None
    if setup.framework == "trl" and variant != "explicit":
        return None  # trl >= 0.27 defaults to use_reentrant=False (sft_trainer.py 1328-1334)
    evidence = facts.data_parallel(setup)
    if not evidence or any(e.kind in ("deepspeed", "fsdp") for e in evidence):
        return None
    dist = setup.distributed  # the run's own distribution (issue 15): DeepSpeed/FSDP are not DDP
    if dist is not None and (dist.backend.is_("deepspeed") or dist.backend.is_("fsdp")):
        return None
    for name in ("deepspeed", "fsdp"):
        s = setup.get(f"training.{name}")
        if not s.known or s.value not in (None, "", False, ()):
            return None
    unused = setup.training.extra.get("ddp_find_unused_parameters")
    if unused is not None and (not unused.known or facts.set_at_launch(unused) or unused.expr):
        # `False if ddp else None` (alpaca-lora), an option: decided at launch, False under DDP
        return None
    if unused is None or unused.value is None:
        # the Trainer's own choice: True for anything that is not a PreTrainedModel
        return (False, None) if wraps else None
    if unused.value is True:
        return (True, unused)
    return None


FIX_NON_REENTRANT = "use non-reentrant checkpointing"
"""The fix's title: ``gradient_checkpointing_kwargs={"use_reentrant": False}`` set on what turns
checkpointing on (the training arguments' call, or the ``gradient_checkpointing_enable`` /
``prepare_model_for_kbit_training`` call)."""


FIX_LAUNCH = "use non-reentrant checkpointing in the launch command"
"""The title when the launch line turns checkpointing on: ``--gradient_checkpointing_kwargs
'{"use_reentrant": false}'`` added to it (unsafe: it edits the launch script)."""


def _autofix(setup: TrainingSetup, on: Enabler) -> Fix | None:
    """``set_keyword`` of the kwargs on the enabling call; ``None`` when the kwargs are an
    expression lintlora could not read, a dict with other keys, or set elsewhere."""
    kwargs = on.kwargs
    if kwargs is not None and kwargs.known and isinstance(kwargs.value, dict) \
            and set(kwargs.value) - {"use_reentrant"}:
        return None
    launched = on.setting is not None and on.setting.origin is Origin.LAUNCH
    if on.order is None and launched and (kwargs is None or kwargs.origin.is_default):
        # `--gradient_checkpointing True` passed at launch: the kwargs go on that line, as the
        # JSON HfArgumentParser reads a dict field from (the applier shell-quotes the word)
        op = ops.launch_set(on.setting, "--gradient_checkpointing_kwargs", '{"use_reentrant": false}', setup)
        return ops.make_fix(FIX_LAUNCH, FixSafety.UNSAFE, [op])
    call = setup.training.span if on.order is None and setup.training is not None else on.span
    if on.order is None and kwargs is None:
        return None
    op = ops.set_keyword(call, setup.path, "gradient_checkpointing_kwargs", '{"use_reentrant": False}', kwargs)
    return ops.make_fix(FIX_NON_REENTRANT, FixSafety.SAFE, [op])


class CheckpointingWithoutInputGrads(Rule):
    """Adapters under reentrant checkpointing with no input-grad hook (see the module docstring)."""

    code = "LL009"
    name = "checkpointing-without-input-grads"
    severity = Severity.WARNING
    summary = "Adapters under reentrant checkpointing get no gradient unless the embedding output requires grad"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone
    fixes = {FIX_NON_REENTRANT: FixSafety.SAFE, FIX_LAUNCH: FixSafety.UNSAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.kind in ("yaml", "json") or setup.framework == "unsloth":
            return
        if facts.unsure_peft_wrap(setup):
            return
        wraps = facts.peft_wraps(setup)
        adds = tuple(c for c in setup.calls_of("add_adapter") if not c.synthetic)
        if not wraps and not adds:
            return
        if facts.checkpointing(setup).value is not True:
            return
        on = enabler(setup)
        if on is None:
            return
        variant = reentrant(on.kwargs)
        if variant not in ("explicit", "default"):
            return
        hook = _hooked(setup, wraps, adds, on)
        if hook is False:
            return
        explicit = variant == "explicit"
        used = context.library_version(setup, "transformers")
        if not explicit and not on.what.startswith("prepare_model_for_kbit_training") and _runs_v5(used):
            return  # transformers 5's default is non-reentrant: nothing to replay, no hook needed
        # transformers 5 installs the input hook itself for a text model (modeling_utils.py
        # 5.24.0, lines 3190-3198): with a stated 5.x release only the DDP replay remains
        inputs = hook is None and setup.framework != "trl" and not _runs_v5(used)
        ddp = _ddp(setup, wraps, variant)
        if not inputs and ddp is None:
            return

        kwargs = on.kwargs
        if explicit:
            how = f"Gradient checkpointing ({on.what}) is reentrant: use_reentrant=True is written"
        elif on.what.startswith("prepare_model_for_kbit_training"):
            how = (f"Gradient checkpointing ({on.what}) is reentrant: the helper passes "
                   "gradient_checkpointing_kwargs={} when none is given (peft utils/other.py 0.20.1.dev0, "
                   "line 191), so torch's checkpoint gets no use_reentrant and falls back to its reentrant "
                   "default, on transformers 4.x and 5.x alike")
        else:
            how = f"Gradient checkpointing ({on.what}) is reentrant {_default_condition(used)}"
        parts: list[str] = []
        if inputs:
            parts.append(
                f"{how}, and nothing makes the embedding "
                f"output require grad for the adapters attached with {_wrap_words(wraps, adds)}: "
                f"{_why_no_hook(setup, wraps, on)}. The checkpointed layers then see inputs that do not "
                'require grad: PyTorch warns that none of the inputs have requires_grad=True and their gradients '
                'will be missing, and backward fails with "element 0 of tensors does not require grad and does not '
                'have a grad_fn" (or, when a module outside the layers trains, the adapters inside them '
                "silently get no gradient).")
            if explicit:
                parts.append("transformers 5.x (5.24.0 read) installs the input hook itself for text models; "
                             f"on transformers 4.x nothing does (this run: {used.where}).")
        if ddp is not None:
            unused_explicit, unused = ddp
            cause = ("ddp_find_unused_parameters=True" if unused_explicit else
                     "the Trainer's find_unused_parameters=True, its choice for a PeftModel when "
                     "ddp_find_unused_parameters is not set (trainer.py 4.57.6, lines 2194-2201)")
            lead = "Under DDP it also fails" if inputs else (
                f"{how}, and the script runs data-parallel (DDP): it fails")
            parts.append(
                f"{lead} at the first backward with \"Expected to mark a variable ready only once\" "
                "(\"... lora_B.default.weight has been marked as ready twice\"): reentrant checkpointing "
                f"replays each layer's forward during backward, and with {cause} DDP's hooks fire twice "
                "per adapter weight (huggingface/trl#4782, accelerate#3536).")

        # use_reentrant=True written fails on 4.x whatever else is set; the default is 4.x's only
        severity = Severity.ERROR if explicit else Severity.WARNING
        launch = _launch(kwargs, on.setting, on.guard, ddp[1] if ddp else None)
        if launch:
            severity = Severity.INFO
            parts.append(f"Reported as info: it rests on a default chosen at launch ({launch}).")

        fix = self._fix(setup, on, inputs, ddp is not None, wraps, explicit)
        span = (kwargs.span or kwargs.key_span) if explicit and kwargs is not None else on.span
        if ddp is not None and not inputs and ddp[1] is not None:
            span = ddp[1].span or ddp[1].key_span or span
        rests_on = () if explicit else (
            ("torch's reentrant default",) if on.what.startswith("prepare_model_for_kbit_training")
            else (f"transformers 4.x's reentrant default ({used.where})",))
        yield self.finding(context, setup, span, " ".join(parts), fix=fix, severity=severity,
                           rests_on=rests_on, autofix=_autofix(setup, on))

    @staticmethod
    def _fix(setup: TrainingSetup, on: Enabler, inputs: bool, ddp: bool,
             wraps: tuple[CallSite, ...], explicit: bool) -> str:
        where = ("in the training arguments" if on.order is None else
                 f"in {on.what.rstrip('()')}(...)")
        verb = "Set" if explicit else "Pass"
        text = f'{verb} gradient_checkpointing_kwargs={{"use_reentrant": False}} {where}'
        if inputs and ddp:
            return text + (" (non-reentrant checkpointing needs no input hook and replays nothing under "
                           "DDP), or call model.enable_input_require_grads() before training and set "
                           "ddp_find_unused_parameters=False.")
        if ddp:
            return text + " (nothing is replayed under DDP), or set ddp_find_unused_parameters=False."
        alt = "or call model.enable_input_require_grads() before training"
        if wraps and facts.is_quantized(setup):
            alt += ", or prepare_model_for_kbit_training(model) before get_peft_model"
        return f"{text} (non-reentrant checkpointing needs no input hook), {alt}."
