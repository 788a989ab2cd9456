"""LL017 fp16-overflow-model (page: ``rules/LL017.md``).

Flags float16 training (:func:`lintlora.facts.fp16_uses`: ``fp16=True``, a per-step float16
autocast, a float16 4-bit compute dtype, a float16 load dtype of a model being trained) of a
model family whose activations are known to exceed float16's range (65,504) and turn into
inf/NaN: :data:`FAMILIES`, each with its public reports. These checkpoints were trained in
bfloat16; float16 loss scaling protects the gradients, not the forward activations.

How it shares the ground with LL002 (float16 on a GPU with bfloat16) and LL010:

- a named GPU with bfloat16 (A100, L4, RTX 30xx+): LL017 is **silent**; LL002 warns there and its
  fix (bfloat16) is the cure, so a second finding on the same flag would repeat it;
- a named GPU without bfloat16 (T4, V100, RTX 20xx): LL002 and LL010 are silent by design, and
  this is the warning that matters; the fix is float32 (``fp16=False``, the model loaded in
  float32, a float32 4-bit compute dtype), priced: the finding gives the estimated peak with
  float32 next to the card's memory;
- no GPU named: a warning saying both remedies (bfloat16 on Ampere or newer, what LL002's info
  note says too; float32 elsewhere), with the float32 estimate.

The family is read from the model's ``model_type`` (the architecture lintlora resolves) or its
hub id (:func:`lintlora.facts.overflow_family`; LL013 reads it too, so as not to propose a
float16 load where this rule proposes float32). Silent: other families, unresolved model names, inference scripts, bfloat16/float32 runs.
A float16 use that is a default chosen at launch makes the finding info.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import capacity, gib, join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["Fp16OverflowModel", "FAMILIES", "overflow_family", "Family"]

FAMILIES, Family, overflow_family = facts.OVERFLOW_FAMILIES, facts.OverflowFamily, facts.overflow_family


def _fp32_setup(setup: TrainingSetup, uses: list[facts.Use]) -> TrainingSetup:
    """The setup trained in float32: ``fp16`` off, float16 dtypes made float32, float16
    autocasts turned into float32 ones (synthetic)."""
    fixed = setup
    for use in uses:
        if use.path == "training.fp16":
            fixed = fixed.set("training.fp16", False, "LL017 fix: float32")
        elif use.path is not None and use.path.startswith(("run.", "distributed.")):
            fixed = fixed.set(use.path, "no", "LL017 fix: no mixed precision")
        elif use.path is not None:
            fixed = fixed.set(use.path, "float32", "LL017 fix: float32")
    if not any(u.path == "model.torch_dtype" for u in uses) and setup.model is not None:
        fixed = fixed.set("model.torch_dtype", "float32", "LL017 fix: float32")
    if any(u.call is not None for u in uses):
        calls = tuple(
            dataclasses.replace(c, args={**dict(c.args), "dtype": Setting.assumed("float32", "LL017 fix")},
                                synthetic=True)
            if c.kind == "autocast" and c.args.get("dtype") is not None and c.args["dtype"].is_("float16") else c
            for c in fixed.calls)
        fixed = fixed.replace(calls=calls)
    return fixed


FIX_FP32 = "train in float32"
"""The fix's title (a GPU without bfloat16): every float16 use of the finding switched to
float32 where it is written (``fp16=True`` removed, ``bf16=False`` in its place in a TRL config
whose unset ``bf16`` is ``not fp16``, ``torch.float16`` dtypes
``torch.float32``, a config's ``fp16:`` false, torchtune ``dtype: fp32``, litgpt
``precision: 32-true``). Unsafe: it changes the numerics and doubles the
weights' memory."""


FIX_LAUNCH = "train in float32 in the launch command or its config"
"""The title when a use is set outside the script: the launch line's ``--fp16 False`` (with
``--bf16 False`` for TRL, whose unset bf16 is ``not fp16``), ``--mixed_precision no``, or an
accelerate config's ``mixed_precision: "no"``."""


def _dtype32(setting: Setting | None, path: str, strings: bool = True) -> EditOp | None:
    span = ops.literal_span(setting, path)
    if span is None or span.end_column is None:
        return None
    if span.end_column - span.column in (10, 13):
        return EditOp("replace", span, "torch.float32")
    return EditOp("replace", span, '"float32"') if strings else None


def _autofix(setup: TrainingSetup, uses: list[facts.Use]) -> Fix | None:
    edits: list[EditOp | None] = []
    for use in uses:
        s = use.setting
        if setup.kind in ("yaml", "json"):
            literal = s is not None and s.origin is Origin.LITERAL
            if literal and s.expr == "fp16":
                edits.append(ops.yaml_set(setup, "fp16", "false", s))
            elif literal and setup.framework == "torchtune" and s.expr == "dtype":
                edits.append(ops.yaml_set(setup, "dtype", "fp32", s))  # torchtune's get_dtype names
            elif literal and setup.framework == "litgpt" and s.expr == "precision":
                edits.append(ops.yaml_set(setup, "precision", "32-true", s))  # Lightning's float32
            else:
                edits.append(None)
        elif use.path == "training.fp16" and s is not None and s.origin is Origin.LAUNCH:
            edits.append(ops.launch_set(s, "--fp16", "False", setup))
            if setup.framework == "trl" and setup.get("training.bf16").origin.is_default:
                edits.append(ops.launch_set(s, "--bf16", "False", setup))  # TRL: bf16 = not fp16
        elif use.path in ("run.mixed_precision", "distributed.mixed_precision"):
            edits.append(ops.run_value(s, "--mixed_precision", "mixed_precision", "no", setup))
        elif use.path == "training.fp16":
            call = setup.training.span if setup.training is not None else None
            if s is not None and setup.framework == "trl" and setup.get("training.bf16").origin.is_default:
                # TRL's configs turn an unset bf16 on (bf16 = not fp16: trl/trainer/sft_config.py
                # __post_init__), so removing fp16=True would train in bfloat16, which this GPU
                # lacks: fp16=True becomes bf16=False (float32)
                edits.append(ops.rename_keyword(call, setup.path, "fp16", "bf16", s))
                edits.append(ops.replace_value(s, setup.path, "False"))
            else:
                edits.append(None if s is None else ops.remove_keyword(call, setup.path, "fp16", s))
        elif use.path in ("model.torch_dtype", "quantization.bnb_4bit_compute_dtype"):
            edits.append(_dtype32(s, setup.path))
        elif use.path is None and use.call is not None and "mixed_precision" not in use.call.args:
            edits.append(_dtype32(use.call.args.get("dtype"), setup.path, strings=False))
        else:
            edits.append(None)
    outside = any(e is not None and (e.kind == "launch_set" or e.span.path != setup.path) for e in edits)
    return ops.make_fix(FIX_LAUNCH if outside else FIX_FP32, FixSafety.UNSAFE, edits)


class Fp16OverflowModel(Rule):
    """float16 training of a family known to overflow float16 (see the module docstring)."""

    code = "LL017"
    name = "fp16-overflow-model"
    severity = Severity.WARNING
    summary = "float16 training of a model family known to overflow float16 (Gemma-2/3/4, Qwen2/2.5/3, T5)"
    depends_on_settings = True  # the GPU (silent with bfloat16) and the model's architecture decide
    fixes = {FIX_FP32: FixSafety.UNSAFE, FIX_LAUNCH: FixSafety.UNSAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        uses = facts.fp16_uses(setup)
        if not uses:
            return
        gpu = context.gpu
        supported = getattr(gpu, "bf16_supported", None) if gpu is not None else None
        if supported is True:
            return  # LL002 warns, and its fix (bfloat16) is the cure
        arch = context.architecture(setup)
        fam = overflow_family(setup, getattr(arch, "model_type", None) if arch is not None else None)
        if fam is None and arch is not None:
            fam = overflow_family(setup)  # a hub id the catalog describes with another model_type
        if fam is None:
            return
        written: list[facts.Use] = []
        for u in uses:
            if u.span is None or all(u.span != w.span for w in written):
                written.append(u)
        what = join_words([u.what for u in written])
        raw = setup.get("model.name_or_path").value
        name = raw[:200] if isinstance(raw, str) and raw.strip() else "the model"
        fixed = _fp32_setup(setup, uses)
        figures = context.figures(setup, fixed)
        cost = ""
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None:
            cost = f" In float32 the estimated peak is {gib(figures.peak_after_fix_bytes)} (float16: {gib(figures.peak_bytes)})"
            if figures.gpu_memory_bytes:
                cost += f" against {capacity(figures)} on the {figures.gpu or 'GPU'}"
            cost += "."
        lead = (f"Trains {name} ({fam.label}) in float16 ({what}): this family's activations exceed float16's "
                f"largest value, 65,504, and turn into inf/NaN (loss 0 or NaN, skipped steps); loss scaling guards "
                f"the gradients, not the forward ({fam.sources}).")
        if supported is False:
            message = (f"{lead} The {gpu.name} has no bfloat16, so train in float32.{cost}")
            fix = "Train in float32: fp16=False and torch_dtype=torch.float32 (and bnb_4bit_compute_dtype=torch.float32 for a 4-bit base)."
        else:
            message = (f"{lead} On a GPU with bfloat16 (Ampere or newer) use bfloat16 (LL002); on one without "
                       f"(T4, V100), float32. (no GPU was named: pass --gpu to decide.){cost}")
            fix = ("On Ampere or newer: bf16=True instead of fp16=True (torch_dtype=torch.bfloat16). On T4/V100: "
                   "fp16=False and torch_dtype=torch.float32.")
        if setup.kind in ("yaml", "json"):
            fix = ("On Ampere or newer: `bf16: true` in place of `fp16: true`; on T4/V100: remove `fp16: true` "
                   "(float32)." if supported is not False else "Remove `fp16: true` and train in float32.")
        severity = self.severity
        hints = [facts.launch_hint(u.setting, setup) for u in uses]
        if all(hints):
            severity = Severity.INFO
            message += " " + " ".join(f"{u.what} applies {h}." for u, h in zip(uses, hints))
        yield self.finding(context, setup, written[0].span, message, fix=fix, fixed_setup=fixed, severity=severity,
                           autofix=_autofix(setup, uses) if supported is False else None)
