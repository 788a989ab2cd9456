"""LL015 kbit-prep-unquantized (page: ``rules/LL015.md``).

Flags ``prepare_model_for_kbit_training`` on a base loaded without any quantization
(:func:`lintlora.facts.kbit_prep_without_checkpointing`: a hub id read, no quantization config,
no sign of a checkpoint saved quantized). peft's helper (:data:`lintlora.facts.KBIT_PREP_SOURCE`,
``src/peft/utils/other.py``) is meant for k-bit bases:

- for a model that is not GPTQ/AQLM/EETQ/HQQ/torchao-quantized it casts every float16/bfloat16
  parameter that is not a ``Params4bit`` to float32: on an unquantized base, every weight (twice
  the weight memory, and float32 activations through the up-cast layers);
- it calls ``gradient_checkpointing_enable()`` only when the model ``is_loaded_in_8bit``/
  ``_4bit`` or otherwise quantized, so the checkpointing the call seems to promise
  (``use_gradient_checkpointing=True``, its default) is not turned on
  (:func:`lintlora.facts.kbit_prep_checkpoints`).

BN35 in bug-reports-2 (oobabooga/textgen PR #5161: the helper "was being run on unquantized
models that didn't need it (causing an OOM error)"). The finding prices the weights as written
and with the call removed and checkpointing turned on in its place.

Silent: a quantized base (a quantization config, or a checkpoint saved quantized by its name:
:func:`lintlora.facts.prequantized_name` logic), a base whose quantization cannot be told (a load
lintlora does not follow, a branch it cannot decide), inference scripts. Where the weights are
float32 already (no dtype under transformers 4.x, LL013) the up-cast adds nothing to them and the
message says so; the missing checkpointing still stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.rules._text import weights_phrase
from lintlora.training_setup import TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["KbitPrepUnquantized"]


class KbitPrepUnquantized(Rule):
    """prepare_model_for_kbit_training on an unquantized base (see the module docstring)."""

    code = "LL015"
    name = "kbit-prep-unquantized"
    severity = Severity.WARNING
    summary = "prepare_model_for_kbit_training on an unquantized base: weights up-cast to float32, no checkpointing"
    depends_on_settings = True  # a model name --model supplies decides whether the base is quantized

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        call = facts.kbit_prep_without_checkpointing(setup)
        if call is None:
            return
        dtype = setup.get("model.torch_dtype")
        sixteen = dtype.known and dtype.value in ("bfloat16", "float16")
        gc_arg = call.args.get("use_gradient_checkpointing")
        asks_gc = gc_arg is None or not gc_arg.known or gc_arg.value is not False
        # checkpointing turned on elsewhere (gradient_checkpointing=True): the helper's failure to do
        # it costs nothing
        asks_gc = asks_gc and facts.checkpointing(setup).value is not True
        fixed = setup.without_calls("prepare_model_for_kbit_training")
        if asks_gc and facts.checkpointing(fixed).value is not True:
            fixed = fixed.set("training.gradient_checkpointing", True, "LL015 fix: checkpointing in place of the helper")
        if sixteen:
            upcast = (f"peft casts every float16/bfloat16 parameter that is not 4-bit to float32, here every weight "
                      f"of the {dtype.value} base: twice the weight memory")
        else:
            upcast = ("peft casts every float16/bfloat16 parameter that is not 4-bit to float32 (the weights here are "
                      "not loaded in 16 bits, so they are float32 already: see LL013)")
        gc = (" and, the model being unquantized, it does not call gradient_checkpointing_enable() "
              "(use_gradient_checkpointing=True only applies to quantized models)") if asks_gc else ""
        message = (f"prepare_model_for_kbit_training() on a base loaded without quantization: {upcast}{gc} "
                   f"({facts.KBIT_PREP_SOURCE}; BN35: oobabooga/textgen PR #5161)."
                   f"{weights_phrase(context, setup, fixed)}")
        fix = "Remove the call: it is for 4-bit/8-bit bases."
        if asks_gc:
            fix += (" Turn checkpointing on yourself (gradient_checkpointing=True in the training arguments, or "
                    "model.gradient_checkpointing_enable() with model.enable_input_require_grads() for adapters).")
        yield self.finding(context, setup, call.span, message, fix=fix, fixed_setup=fixed,
                           severity=Severity.WARNING)
