"""LL016 quantized-without-adapter (page: ``rules/LL016.md``).

Flags a quantized base handed to a transformers/TRL trainer with nothing trainable on it:

(a) no adapter on the path: no ``get_peft_model`` (peft's or unsloth's), no
    ``PeftModel``/``AutoPeftModel*.from_pretrained``, no ``model.add_adapter(config)``, no TRL
    trainer given ``peft_config=`` (the ``trainer_peft_config`` call), no ``LoraConfig`` at all;
(b) ``merge_and_unload()`` after the last adapter wrap and before ``trainer.train()``: the
    adapters are folded into the base and removed, which leaves a purely quantized model.

transformers' ``Trainer.__init__`` refuses both: ``ValueError("You cannot perform fine-tuning on
purely quantized models. Please attach trainable adapters on top of the quantized model to
correctly perform fine-tuning. ...")`` when ``_is_quantized_and_base_model and not
_is_peft_model(model)`` (``src/transformers/trainer.py``, read through the code index: 4.3x-5.x
copies carry the same test). BN36 in bug-reports-2: BAAI-DCAI/Bunny#112 (fixed by deleting
``model = model.merge_and_unload()``), AGI-Edgerunners/LLM-Adapters#55.

Error. Silent: inference-only scripts (``setup.is_training`` False), hand-written loops (no
Trainer to refuse it), YAML dialects (their own validation speaks first), an unresolved
quantization, a ``LoraConfig`` the file builds but lintlora cannot follow to the model (unsure,
not flagged), a ``merge_and_unload()`` after ``train()`` (saving a merged model) or followed by a
new wrap (merging an old adapter before training a new one), a ``PeftModel.from_pretrained``
whose ``is_trainable`` cannot be read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["QuantizedWithoutAdapter", "adapter_calls"]

_ADAPTER_KINDS = ("get_peft_model", "peft_from_pretrained", "add_adapter", "trainer_peft_config")
_REFUSAL = ('transformers\' Trainer raises ValueError "You cannot perform fine-tuning on purely quantized models. '
            'Please attach trainable adapters on top of the quantized model" when it is built '
            "(src/transformers/trainer.py)")


def adapter_calls(setup: TrainingSetup) -> tuple[CallSite, ...]:
    """The calls that put adapters on the model (or have a TRL trainer do it), in source order;
    synthetic calls included (a fix being evaluated)."""
    return tuple(sorted((c for c in setup.calls if c.kind in _ADAPTER_KINDS), key=lambda c: c.order))


class QuantizedWithoutAdapter(Rule):
    """A quantized base given to a trainer with no adapter (see the module docstring)."""

    code = "LL016"
    name = "quantized-without-adapter"
    severity = Severity.ERROR
    summary = "A quantized base given to a Trainer with no adapter (or merged before train()): refused at init"
    depends_on_settings = False  # fires on the file alone
    fix_changes_memory = False

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.kind not in ("python", "notebook"):
            return
        if setup.framework not in ("transformers", "trl") or facts.is_quantized(setup) is not True:
            return
        trainer = setup.training.extra.get("trainer_class") if setup.training is not None else None
        if trainer is None or not trainer.known:
            return
        bits = facts.quant_bits(setup)
        width = f"{bits}-bit" if bits else "quantized"
        q = setup.quantization
        where = q.span if q is not None and q.span is not None else (setup.model.span if setup.model else None)
        wraps = adapter_calls(setup)
        if not wraps:
            if setup.lora is not None or facts.unsure_peft_wrap(setup):
                return  # an adapter config lintlora cannot follow to the model: unsure
            yield self.finding(
                context, setup, trainer.span or where,
                f"The base is loaded in {width} and handed to {str(trainer.value).rsplit('.', 1)[-1][:80]} with no adapter on "
                f"it (no get_peft_model, peft_config= or add_adapter): {_REFUSAL}; quantized weights cannot be "
                "trained directly (BN36: BAAI-DCAI/Bunny#112).",
                fix=("Attach adapters before training: model = get_peft_model(model, LoraConfig(...)) (after "
                     "prepare_model_for_kbit_training), or pass peft_config=LoraConfig(...) to a TRL trainer; to "
                     "fine-tune every weight, load the model unquantized."),
            )
            return
        last_wrap = max(c.order for c in wraps)
        for merge in setup.calls_of("merge_and_unload"):
            before = merge.args.get("before_train")
            if merge.synthetic or merge.order < last_wrap or before is None or not before.is_(True):
                continue
            if merge.receiver and setup.model is not None and setup.model.variable \
                    and merge.receiver != setup.model.variable:
                continue  # another model's merge (a reference model)
            yield self.finding(
                context, setup, merge.span,
                f"merge_and_unload() before train() folds the adapters into the {width} base and removes them, "
                f"so the trainer gets a purely quantized model: {_REFUSAL} (BN36: BAAI-DCAI/Bunny#112, fixed by "
                "deleting this line).",
                fix=("Remove the merge_and_unload() before training (merge after train(), to save a merged model); "
                     "to continue from a merged adapter, attach a new one with get_peft_model after the merge."),
            )
            return
