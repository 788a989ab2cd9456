"""LL002 fp16-instead-of-bf16 (page: ``rules/LL002.md``).

Flags float16 training (``fp16=True``, a float16 ``bnb_4bit_compute_dtype``, a float16
``torch_dtype`` for a model being trained, ``autocast(dtype=torch.float16)``; see
:func:`lintlora.facts.fp16_uses`) on a GPU that supports bfloat16.

Why: float16 has 5 exponent bits (largest finite value 65,504) where bfloat16 keeps float32's 8
(largest about 3.4e38), so float16 training needs loss scaling and can still overflow into
inf/NaN losses and skipped steps; bfloat16 takes the same memory and runs at the same tensor-core
rate on GPUs that have it (NVIDIA Ampere, compute capability 8.0, and newer). Formats: IEEE 754
binary16 and Google's bfloat16 (as ``torch.finfo(torch.float16).max`` / ``torch.finfo(
torch.bfloat16).max`` report). Reported case: hiyouga/LlamaFactory#3638 (fp16=true on an A100).

The run's precision counts too (issue 15, :func:`lintlora.facts.run_fp16_uses`): a value the
launch passes (``--fp16 True`` in ``run.sh`` line 5, origin ``LAUNCH``: reported at that
line), the launcher's ``--mixed_precision fp16`` and the distribution's ``mixed_precision``
(an accelerate config's ``mixed_precision: fp16``, a DeepSpeed JSON's enabled ``fp16`` block);
a DeepSpeed ``"auto"`` follows the training arguments, and ``bf16=True`` in them wins over the
launcher. Such a finding carries the launch line and the value's line as related locations.

Severity: warning on a GPU with bf16 support; info, with the condition stated, when no GPU was
named; silent on GPUs without bf16 (T4, V100), where float16 is the right choice. Info when
every float16 use is a default the user sets at launch (:func:`lintlora.facts.set_at_launch`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["Fp16InsteadOfBf16"]

_PYTHON_FIX = {
    "training.fp16": "bf16=True instead of fp16=True",
    "quantization.bnb_4bit_compute_dtype": "bnb_4bit_compute_dtype=torch.bfloat16",
    "model.torch_dtype": "torch_dtype=torch.bfloat16",
    "run.mixed_precision": "--mixed_precision bf16 in the launch command",
    "distributed.mixed_precision": "bf16 in the run's configuration (accelerate mixed_precision: bf16, or "
                                   'the DeepSpeed JSON\'s "bf16": {"enabled": true} in place of its fp16 block)',
    None: "torch.autocast(..., dtype=torch.bfloat16)",
}

_YAML_FIX = {
    "axolotl": "`bf16: true` and remove `fp16: true`",
    "llama-factory": "`bf16: true` and remove `fp16: true`",
    "torchtune": "`dtype: bf16`",
    "litgpt": "`precision: bf16-true` (or `bf16-mixed`)",
}


def _fixed_setup(setup: TrainingSetup, uses: list[facts.Use]) -> TrainingSetup:
    fixed = setup
    for use in uses:
        if use.path == "training.fp16":
            fixed = fixed.set("training.fp16", False, "LL002 fix").set("training.bf16", True, "LL002 fix")
        elif use.path == "run.mixed_precision" and fixed.run is not None:
            fixed = fixed.replace(run=dataclasses.replace(
                fixed.run, mixed_precision=Setting.assumed("bf16", "LL002 fix")))
        elif use.path == "distributed.mixed_precision":
            fixed = fixed.set("distributed.mixed_precision", "bf16", "LL002 fix")
        elif use.path is not None:
            fixed = fixed.set(use.path, "bfloat16", "LL002 fix")
    if any(u.call is not None for u in uses):
        calls = tuple(
            dataclasses.replace(c, args={**dict(c.args), "dtype": Setting.assumed("bfloat16", "LL002 fix")},
                                synthetic=True)
            if c.kind == "autocast" and c.args.get("dtype") is not None and c.args["dtype"].is_("float16")
            else c
            for c in fixed.calls
        )
        fixed = fixed.replace(calls=calls)
    return fixed


def _fix_text(setup: TrainingSetup, uses: list[facts.Use]) -> str:
    run_paths = ("run.mixed_precision", "distributed.mixed_precision")
    if setup.kind in ("yaml", "json"):
        wording = _YAML_FIX.get(setup.framework, "`bf16: true` instead of `fp16: true`")
        extra = [_PYTHON_FIX[u.path] for u in uses if u.path in run_paths]
        return f"Use {join_words([wording, *dict.fromkeys(extra)])}."
    seen: list[str] = []
    for use in uses:
        text = _PYTHON_FIX[use.path]
        if use.path == "training.fp16" and use.setting is not None and use.setting.origin is Origin.LAUNCH:
            text = f"--bf16 True in place of {use.what} in the launch command ({facts.where(use.span)})"
        if text not in seen:
            seen.append(text)
    return (f"Use {join_words(seen)}. The memory stays the same; drop any GradScaler, bfloat16 does "
            "not need loss scaling.")


FIX_BF16 = "train in bfloat16"
"""The fix's title: every float16 use of the finding switched to bfloat16 where it is written
(``fp16=True`` renamed ``bf16=True``, ``torch.float16`` dtypes ``torch.bfloat16``, accelerate's
``mixed_precision="fp16"`` ``"bf16"``; a config's ``fp16: true`` false with ``bf16: true``,
torchtune's ``dtype: bf16``). Offered only on a named GPU that supports bfloat16, and only when
every use can be edited (a use set at launch or in the run's configuration makes it
:data:`FIX_LAUNCH`)."""


def _dtype_op(setting: Setting | None, path: str, strings: bool = True) -> EditOp | None:
    """``torch.float16``/``torch.half`` -> ``torch.bfloat16``; any other 9-character spelling
    (``"float16"``, an aliased ``T.float16``) -> ``"bfloat16"``, which transformers' dtype
    arguments accept (``strings``; ``torch.autocast`` does not: refused there)."""
    span = ops.literal_span(setting, path)
    if span is None or span.end_column is None:
        return None
    width = span.end_column - span.column
    if width in (10, 13):
        return EditOp("replace", span, "torch.bfloat16")
    return EditOp("replace", span, '"bfloat16"') if strings else None


def _python_ops(setup: TrainingSetup, uses: list[facts.Use]) -> list[EditOp | None]:
    out: list[EditOp | None] = []
    path = setup.path
    for use in uses:
        if use.path == "training.fp16":
            fp16, bf16 = use.setting, setup.get("training.bf16")
            call = setup.training.span if setup.training is not None else None
            if fp16 is not None and fp16.origin is Origin.LAUNCH:
                # HfArgumentParser's bool options (`--fp16 True`, `--fp16`): both words edited
                out.append(ops.launch_set(fp16, "--fp16", "False", setup))
                out.append(ops.launch_set(fp16, "--bf16", "True", setup))
            elif fp16 is None:
                out.append(None)
            elif bf16.origin is Origin.LIBRARY_DEFAULT:
                out.append(ops.rename_keyword(call, path, "fp16", "bf16", fp16))
            else:
                out.append(ops.remove_keyword(call, path, "fp16", fp16))
                out.append(ops.set_keyword(call, path, "bf16", "True", bf16))
        elif use.path in ("model.torch_dtype", "quantization.bnb_4bit_compute_dtype"):
            out.append(_dtype_op(use.setting, path))
        elif use.path is None and use.call is not None:
            mp = use.call.args.get("mixed_precision")
            out.append(ops.replace_value(mp, path, '"bf16"') if mp is not None
                       else _dtype_op(use.call.args.get("dtype"), path, strings=False))
        elif use.path in ("run.mixed_precision", "distributed.mixed_precision"):
            # `accelerate launch --mixed_precision fp16`, or its config's `mixed_precision: fp16`
            out.append(ops.run_value(use.setting, "--mixed_precision", "mixed_precision", "bf16", setup))
        else:
            out.append(None)
    return out


def _yaml_ops(setup: TrainingSetup, uses: list[facts.Use]) -> list[EditOp | None]:
    out: list[EditOp | None] = []
    for use in uses:
        s = use.setting
        if use.path in ("run.mixed_precision", "distributed.mixed_precision"):
            out.append(ops.run_value(s, "--mixed_precision", "mixed_precision", "bf16", setup))
        elif s is None or not s.expr or s.origin is not Origin.LITERAL:
            out.append(None)
        elif setup.framework in ("axolotl", "llama-factory") and s.expr == "fp16":
            out.append(ops.yaml_set(setup, "fp16", "false", s))
            bf16 = setup.get("training.bf16")
            out.append(ops.yaml_set(setup, "bf16", "true", bf16 if bf16.span is not None else None))
        elif setup.framework == "torchtune" and s.expr == "dtype":
            out.append(ops.yaml_set(setup, "dtype", "bf16", s))
        elif setup.framework == "litgpt" and s.expr == "precision":
            # litgpt's precision, Lightning Fabric's names (lightning/fabric/connector.py
            # _PRECISION_INPUT: "16-mixed", "16-true", "bf16-mixed", "bf16-true"; litgpt's
            # config_hub comment: 'Possible choices: "bf16-true", "bf16-mixed", "32-true"'):
            # 16-mixed -> bf16-mixed, 16-true (float16 weights) -> bf16-true
            true = setup.get("model.torch_dtype").is_("float16")
            out.append(ops.yaml_set(setup, "precision", "bf16-true" if true else "bf16-mixed", s))
        else:
            out.append(None)
    return out


FIX_LAUNCH = "train in bfloat16 in the launch command or its config"
"""The title when a use is set outside the script: the launch line's ``--fp16``/``--bf16`` or
``--mixed_precision``, or an accelerate config's ``mixed_precision`` key. Unsafe, as every edit
of a launch script or a run's configuration: the file serves other runs too."""


def _autofix(setup: TrainingSetup, uses: list[facts.Use]) -> Fix | None:
    edits = _yaml_ops(setup, uses) if setup.kind in ("yaml", "json") else \
        _python_ops(setup, uses) if setup.kind in ("python", "notebook") else [None]
    outside = any(e is not None and (e.kind == "launch_set" or e.span.path != setup.path) for e in edits)
    if outside:
        return ops.make_fix(FIX_LAUNCH, FixSafety.UNSAFE, edits)
    return ops.make_fix(FIX_BF16, FixSafety.SAFE, edits)


class Fp16InsteadOfBf16(Rule):
    """float16 training on a GPU that supports bfloat16 (see the module docstring)."""

    code = "LL002"
    name = "fp16-instead-of-bf16"
    severity = Severity.WARNING
    summary = "Training in float16 on a GPU that supports bfloat16 risks overflow for no gain"
    fixes = {FIX_BF16: FixSafety.SAFE, FIX_LAUNCH: FixSafety.UNSAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        uses = facts.fp16_uses(setup)
        if not uses:
            return
        gpu = context.gpu
        supported = getattr(gpu, "bf16_supported", None) if gpu is not None else None
        if gpu is not None and supported is False:
            return  # T4, V100...: float16 is the right choice there
        # settings a config derives from one key (axolotl's fp16: true also sets the load and
        # compute dtypes) share that key's span: name each written place once
        written: list[facts.Use] = []
        for u in uses:
            if u.span is None or all(u.span != w.span for w in written):
                written.append(u)
        what = join_words([u.what for u in written])
        why = ("float16 tops out at 65,504, so training needs loss scaling and can still overflow to "
               "inf/NaN losses and skipped steps; bfloat16 has float32's range at the same memory and speed")
        if gpu is not None and supported:
            severity = Severity.WARNING
            message = f"Trains in float16 ({what}) on the {gpu.name}, which supports bfloat16: {why}."
        else:
            severity = Severity.INFO
            where = "no GPU was named" if gpu is None else f"bf16 support of the {gpu.name} is not known"
            message = (f"Trains in float16 ({what}); if your GPU is Ampere or newer (A100, RTX 30xx/40xx, "
                       f"L4, H100...), use bfloat16 instead: {why}. ({where}: pass --gpu to decide.)")
        hints = [facts.launch_hint(u.setting, setup) for u in uses]
        if all(hints):
            # every float16 use is a default chosen at launch (facts.set_at_launch): info
            severity = Severity.INFO
            message += " " + " ".join(f"{u.what} applies {h}." for u, h in zip(uses, hints))
        first = uses[0]
        rests_on = tuple(f"{u.what} ({u.setting.origin.value})" for u in uses
                         if u.setting is not None and u.setting.origin.is_default)
        related: tuple = ()
        for u in uses:
            related += facts.setting_related(u.setting, u.what)
        if related:
            related = facts.launch_related(setup) + related
        yield self.finding(
            context, setup, first.span, message,
            fix=_fix_text(setup, uses), fixed_setup=_fixed_setup(setup, uses), severity=severity,
            rests_on=rests_on, related=related,
            autofix=_autofix(setup, uses) if gpu is not None and supported else None,
        )
