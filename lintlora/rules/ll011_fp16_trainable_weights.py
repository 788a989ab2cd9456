"""LL011 fp16-trainable-weights (page: ``rules/LL011.md``).

Flags fp16 mixed precision while a tensor that trains is *stored* in float16. fp16 mixed
precision unscales the gradients with a ``GradScaler`` before the optimizer step (and before
gradient clipping), and the scaler refuses float16 gradients: ``_unscale_grads_`` raises
"ValueError: Attempting to unscale FP16 gradients." when ``allow_fp16`` is false, which
``unscale_`` always passes (torch ``torch/amp/grad_scaler.py``). Mixed precision expects float32
trainable weights that are autocast to float16 in the forward pass. Sources (bug-reports-2):
BN08 (mst272/LLM-Dojo#11), BN09 (huggingface/transformers#30559, an accelerate loop), BN10
(oobabooga/textgen PR #5268, fixed by casting the trainable parameters to float32); peft's own
test ``test_model_using_float16_with_amp_raises`` (tests/test_gpu_examples.py 0.20.1.dev0,
lines 3624-3646) and its troubleshooting page (docs/source/developer_guides/troubleshooting.md,
lines 44-75).

fp16 mixed precision, as the file states it: ``fp16=True`` in the training arguments,
``Accelerator(mixed_precision="fp16")``, or a ``torch.amp``/``torch.cuda.amp.GradScaler``
(not ``enabled=False``). ``bf16=True`` uses no scaler and is not flagged.

Trainable tensors stored in float16:

- ``model.half()`` / ``model.to(torch.float16)`` after the adapters are attached (and no later
  ``.float()``): the adapters become float16;
- ``autocast_adapter_dtype=False`` to ``get_peft_model``/``PeftModel.from_pretrained`` on a base
  loaded with ``torch_dtype=torch.float16``: the adapters keep the base layers' dtype;
- ``modules_to_save`` on a float16 base: peft's ``ModulesToSaveWrapper`` trains a deep copy of
  the module in its own dtype, and its up-cast (``cast_adapter_dtype``) only touches
  ``BaseTunerLayer`` modules, which the wrapper is not (peft src/peft/tuners/tuners_utils.py
  0.20.1.dev0, lines 2657-2700; src/peft/utils/other.py lines 303, 598 and 653). Not on a
  quantized base prepared with ``prepare_model_for_kbit_training``, which casts every
  non-quantized parameter to float32 first (other.py lines 197-209);
- a full fine-tune of a model loaded in float16 (no adapter, quantization or peft call in the
  setup; reported as a warning, since an adapter attached somewhere lintlora cannot follow
  would change the verdict), or cast to float16 with ``.half()``.

Silent when the script casts the trainable parameters to float32 itself (a ``.float()`` /
``.to(torch.float32)`` in a loop over ``model.parameters()``, peft's
``cast_mixed_precision_params``: the fix peft's troubleshooting page gives). Silent for plain
LoRA on a float16 base: since peft v0.12.0 (PR #1706, 2024-05-16)
``get_peft_model``/``PeftModel.from_pretrained`` default to ``autocast_adapter_dtype=True``,
which up-casts float16/bfloat16 adapter weights to float32 (peft_model.py 0.20.1.dev0, lines
127-130 and 156; mapping_func.py line 110). LoRA adapters on ``embed_tokens``/``lm_head`` in
``target_modules`` are tuner layers and are up-cast too, so they are not flagged either. Silent
for YAML/JSON configs (LLaMA-Factory casts every trainable parameter to float32 unless
``pure_bf16``, src/llamafactory/model/adapter.py lines 310-312 and 336-349; axolotl up-casts the
embedding modules to float32, src/axolotl/loaders/model.py lines 422-437), for unsloth (its
``prepare_model_for_training`` up-casts ``modules_to_save``, unsloth_zoo/training_utils.py
lines 490-500), and whenever the base dtype or the precision cannot be resolved.

Severity: error when both the fp16 mixed precision and the float16 trainable tensor are written
in the file; warning for the full fine-tune (it rests on no adapter being seen); info when a
value is a default set at launch (:func:`lintlora.facts.set_at_launch`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.facts import Use
from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["Fp16TrainableWeights", "fp16_scaler_uses"]


def fp16_scaler_uses(setup: TrainingSetup) -> list[Use]:
    """Where the setup trains with fp16 mixed precision, which unscales gradients with a
    ``GradScaler``: ``fp16=True``, ``Accelerator(mixed_precision="fp16")``, ``GradScaler()``
    (unless ``enabled`` is false or unresolved). Known values only, in that order."""
    uses: list[Use] = []
    fp16 = setup.get("training.fp16")
    if fp16.is_(True):
        uses.append(Use("fp16=True", "training.fp16", fp16.span or fp16.key_span, setting=fp16))
    for call in setup.calls_of("autocast"):
        mp = call.args.get("mixed_precision")
        if mp is not None and mp.is_("fp16"):
            uses.append(Use('Accelerator(mixed_precision="fp16")', None, call.span, setting=mp, call=call))
    for call in setup.calls_of("grad_scaler"):
        enabled = call.args.get("enabled")
        if enabled is None or enabled.is_(True):
            uses.append(Use("GradScaler()", None, call.span, setting=enabled, call=call))
    return uses


def _base_fp16(setup: TrainingSetup) -> Setting | None:
    """The base's load dtype when it is known to be float16, else ``None``."""
    dtype = setup.get("model.torch_dtype")
    return dtype if dtype.is_("float16") else None


def _trainables(setup: TrainingSetup) -> list[tuple[Use, str, bool]]:
    """The float16 trainable tensors: ``(where, what it is, certain)``; ``certain`` is False for
    a full fine-tune inferred from no adapter being seen."""
    found: list[tuple[Use, str, bool]] = []
    wraps = facts.peft_wraps(setup)
    adds = setup.calls_of("add_adapter")
    attached = tuple(sorted(wraps + adds, key=lambda c: c.order))
    trl_wraps = setup.framework == "trl" and setup.lora is not None
    casts = [c for c in setup.calls_of("model_cast") if not c.synthetic]
    first = attached[0].order if attached else None
    # a cast to float16 after the adapters exist, not undone by a later cast
    for call in casts:
        dtype = call.args.get("dtype")
        if dtype is None or not dtype.is_("float16"):
            continue
        later = [c for c in casts if c.order > call.order]
        if any(not (c.args.get("dtype") or Setting()).is_("float16") for c in later):
            continue
        name = call.qualified_name.rsplit(".", 1)[-1]
        written = f"{call.receiver or 'model'}.{name}({'' if name == 'half' else 'torch.float16'})"
        if first is not None and call.order > first:
            found.append((Use(written, None, call.span, call=call),
                          f"{written} after the adapters are attached casts them to float16", True))
        elif first is None and not trl_wraps and setup.lora is None and not facts.is_quantized(setup):
            found.append((Use(written, None, call.span, call=call),
                          f"{written} casts every parameter of the model it fine-tunes in full to float16",
                          False))
    if found:
        return found
    base = _base_fp16(setup)
    if base is None:
        return found
    where = "torch_dtype=torch.float16"
    quantized = facts.is_quantized(setup)
    for call in wraps:
        auto = call.args.get("autocast_adapter_dtype")
        if auto is not None and auto.is_(False) and not quantized:
            found.append((Use("autocast_adapter_dtype=False", None, auto.span or call.span, setting=auto, call=call),
                          f"autocast_adapter_dtype=False keeps the adapters in the base layers' float16 "
                          f"({where})", True))
    saves = setup.get("lora.modules_to_save")
    prepared = quantized and setup.has_call("prepare_model_for_kbit_training")
    if (wraps or trl_wraps) and saves.known and saves.value and not prepared and quantized is not None:
        names = saves.value if isinstance(saves.value, (list, tuple)) else (saves.value,)
        if all(isinstance(n, str) for n in names):
            listed = ", ".join(names)
            found.append((Use(f"modules_to_save={list(names)!r}", "lora.modules_to_save",
                              saves.span or saves.key_span, setting=saves),
                          f"modules_to_save ({listed}) trains full copies of those modules in the base's "
                          f"float16 ({where}): peft up-casts adapter layers, not these copies", True))
    no_adapter = (not attached and not trl_wraps and setup.lora is None and quantized is False
                  and not setup.has_call("get_peft_model") and not setup.has_call("peft_from_pretrained")
                  and not setup.has_call("prepare_model_for_kbit_training"))
    if no_adapter and setup.model is not None and setup.model.name_or_path.known:
        found.append((Use(where, "model.torch_dtype", base.span or base.key_span, setting=base),
                      f"no adapter is attached in this file, so every parameter trains, stored in float16 "
                      f"({where})", False))
    return found


class Fp16TrainableWeights(Rule):
    """fp16 mixed precision with float16 trainable weights (see the module docstring)."""

    code = "LL011"
    name = "fp16-trainable-weights"
    severity = Severity.ERROR
    summary = 'fp16 mixed precision with float16 trainable weights fails: "Attempting to unscale FP16 gradients"'
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.kind in ("yaml", "json") or setup.framework == "unsloth":
            return
        amp = fp16_scaler_uses(setup)
        if not amp:
            return
        if any(not c.synthetic for c in setup.calls_of("cast_trainable_fp32")):
            return  # the script casts the trainable parameters to float32 itself
        trainables = _trainables(setup)
        if not trainables:
            return
        use, what, certain = trainables[0]
        mp = amp[0]
        lead = ("The GradScaler of fp16 mixed precision unscales the gradients and refuses float16 ones"
                if mp.what == "GradScaler()" else
                f"fp16 mixed precision ({mp.what}) unscales the gradients with a GradScaler, which refuses "
                "float16 ones")
        message = (
            f"{lead}, and {what}. The first optimizer step (or gradient clipping) then fails with "
            '"ValueError: Attempting to unscale FP16 gradients." (torch/amp/grad_scaler.py; '
            "peft's test_model_using_float16_with_amp_raises). Mixed precision needs float32 trainable "
            "weights; only the frozen base may stay float16.")
        severity = Severity.ERROR if certain else Severity.WARNING
        if not certain:
            message += (" Reported as a warning: it rests on no adapter being attached in this file "
                        "(an adapter attached elsewhere would train in float32).")
        launch = facts.launch_hint(mp.setting) or facts.launch_hint(use.setting)
        if launch:
            severity = Severity.INFO
            message += f" Reported as info: it rests on a default chosen at launch ({launch})."
        yield self.finding(context, setup, use.span or mp.span, message,
                           fix=self._fix(use, what), severity=severity)

    @staticmethod
    def _fix(use: Use, what: str) -> str:
        tail = (" Or train in bf16 (bf16=True) on a GPU that supports it, which needs no GradScaler.")
        cast = ("cast the trainable parameters to float32 after wrapping (`for p in model.parameters(): "
                "if p.requires_grad: p.data = p.data.float()`, or peft's "
                "cast_mixed_precision_params(model, dtype=torch.float16))")
        if use.call is not None and use.call.kind == "model_cast":
            if "after the adapters" in what:
                return ("Remove the cast after wrapping: load the base with torch_dtype=torch.float16 instead "
                        "and peft keeps the adapters in float32 (autocast_adapter_dtype=True, peft >= 0.12)."
                        + tail)
            return ("Keep the weights in float32 for fp16 mixed precision (drop the cast; autocast runs the "
                    "forward in float16)." + tail)
        if use.what == "autocast_adapter_dtype=False":
            return ("Drop autocast_adapter_dtype=False: its default (True, peft >= 0.12) up-casts the adapters "
                    "to float32, or " + cast + "." + tail)
        if use.path == "lora.modules_to_save":
            return ("After get_peft_model, " + cast + ", or load the base in float32." + tail)
        return ("Load the model in float32 (drop torch_dtype=torch.float16): fp16=True keeps float32 "
                "master weights and autocasts the forward to float16." + tail)
