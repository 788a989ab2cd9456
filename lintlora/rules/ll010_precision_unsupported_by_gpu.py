"""LL010 precision-unsupported-by-gpu (page: ``rules/LL010.md``).

Flags, on a named GPU below compute capability 8.0 (:attr:`lintlora.estimate.gpus.Gpu.
pre_ampere`: T4 and RTX 20xx 7.5, V100 7.0, P100 6.0; NVIDIA's developer.nvidia.com/cuda-gpus
table, cited per card in ``lintlora/data/gpus.json``), what those cards have no hardware for.
One finding per kind, each saying what fails and when:

- **bfloat16** (warning): ``bf16=True`` (TRL's configs default to it: ``bf16 = not fp16``,
  trl ``trl/trainer/base_config.py`` v1.9.0), ``Accelerator(mixed_precision="bf16")``, a
  per-step ``autocast(dtype=torch.bfloat16)``, ``bnb_4bit_compute_dtype=torch.bfloat16``,
  ``torch_dtype=torch.bfloat16`` for a model being trained; YAML ``bf16: true`` (axolotl,
  LLaMA-Factory, TRL/HF), litgpt ``precision: bf16-*``, torchtune ``dtype: bf16``. Every library
  gate asks ``torch.cuda.is_bf16_supported()``: transformers ``TrainingArguments._validate_args``
  (``training_args.py`` 5.24.0; 4.38-4.57 likewise, through ``is_torch_bf16_gpu_available``),
  accelerate ``Accelerator.__init__`` (``is_bf16_available``, 1.15.0.dev0), torchtune
  ``training/precision.py`` ``get_dtype``, litgpt ``get_default_supported_precision``. With torch
  2.2 or older that answers False below 8.0, and each raises when it is built ("Your setup
  doesn't support bf16/gpu", BN06/BN10; pytorch/pytorch#124996 on a V100); since torch 2.3 it
  also counts emulation (pytorch/pytorch PR #115924: "try creating a bf16 tensor as a last
  resort"; torch 2.13.0 ``torch/cuda/__init__.py`` lines 191-220), so the run starts and its
  bfloat16 math is emulated: slow, some kernels missing (pytorch/pytorch PR #148322;
  huggingface/diffusers PR #14129: no cuDNN bfloat16 convolutions below 8.0).
- **TF32** (error): ``tf32=True`` (YAML ``tf32: true``): transformers raises
  ``ValueError("--tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7")`` when
  ``TrainingArguments`` is built (``training_args.py`` 5.24.0 and 4.46.3;
  ``is_torch_tf32_available`` tests ``major < 8`` itself, whatever the torch version).
  georgian-io/LLM-Finetuning-Toolkit#134 (BN06).
- **FlashAttention** (error): ``attn_implementation="flash_attention_2"`` (axolotl
  ``flash_attention: true``, HF/TRL YAML ``attn_implementation``): flash-attn's kernels start at
  8.0; with flash-attn installed the model loads and the first forward raises ``RuntimeError:
  FlashAttention only supports Ampere GPUs or newer.`` (flash-attn ``csrc/flash_attn/
  flash_api.cpp`` line 393 at 0251105a), without it ``from_pretrained`` raises ``ImportError``
  (transformers ``modeling_utils.py`` ``_flash_attn_import_error``, 5.24.0).
  ``flash_attention_3`` is refused at load ("requires compute capability >= 8",
  ``modeling_flash_attention_utils.py``). huggingface/transformers#28188,
  Dao-AILab/flash-attention#762 (BN07). LLaMA-Factory ``flash_attn: fa2`` is a warning: it
  falls back to the default attention, with a warning, when flash-attn is not installed
  (``model/model_utils/attention.py`` at ff6d4d12).

Silent without a named GPU (nothing to judge against; ``--gpu-memory`` names none), on GPUs of
8.0 and newer and on AMD cards (no compute capability), for ``bf16: auto`` / ``tf32: auto`` and
values lintlora could not resolve (``bf16=torch.cuda.is_bf16_supported()``), and for inference
scripts. A use that is a default chosen at launch (:func:`lintlora.facts.set_at_launch`) is
info. The mirror of LL002 (float16 on a GPU with bfloat16): LL002 is silent exactly where this
rule can fire (``bf16_supported`` is compute capability >= 8.0, checked per card), so the two
never judge the same setting both ways.
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
    from lintlora.estimate.gpus import Gpu

__all__ = ["PrecisionUnsupportedByGpu", "bf16_uses"]

_TRAINER_FRAMEWORKS = frozenset({"transformers", "trl", "unsloth", "axolotl", "llama-factory"})
"""Stacks whose precision flags reach ``transformers.TrainingArguments`` (axolotl
``core/builders/base.py`` ``_configure_precision_settings``; LLaMA-Factory
``Seq2SeqTrainingArguments``; unsloth scripts build TRL/transformers configs)."""

_FLASH = {"flash_attention_2": "FlashAttention-2", "flash_attention_3": "FlashAttention-3"}


def _spell(setup: TrainingSetup, key: str, python: str, yaml: str) -> str:
    return f"{key}: {yaml}" if setup.kind in ("yaml", "json") else f"{key}={python}"


def bf16_uses(setup: TrainingSetup) -> list[facts.Use]:
    """Every place the setup trains in bfloat16, in this order: the trainer's ``bf16``, the
    per-step ``autocast`` calls (``Accelerator(mixed_precision="bf16")`` among them), the 4-bit
    compute dtype, the load dtype of a model being trained (not under float16 autocast, which
    runs the matmuls in float16). Only known values count: ``bf16: auto`` (axolotl's choice at
    run time) and unresolved values do not."""
    uses: list[facts.Use] = []
    bf16 = setup.get("training.bf16")
    # Unsloth's trainers rewrite the TRL config defaults to bf16=False, fp16=False and, with
    # neither written, pick bf16 only where the GPU supports it, float16 elsewhere (T4, V100):
    # unsloth unsloth/models/rl.py @ 015bdef0d94a (the replacements "bf16": False / "fp16": False,
    # and "use_bf16_amp = (not float16) and _bf16_supported()"). A default is then no bf16.
    unsloth_default = bf16.origin.is_default and setup.framework == "unsloth"
    if bf16.known and bf16.value is True and not unsloth_default:
        what = _spell(setup, "bf16", "True", "true")
        if setup.framework == "litgpt":
            true = setup.get("model.torch_dtype").is_("bfloat16")
            what = "precision: bf16-true" if true else "precision: bf16-mixed"
        elif setup.framework == "torchtune":
            what = "dtype: bf16"
        elif bf16.origin.is_default and setup.framework == "trl":
            what = "bf16 left unset, which TRL's configs turn on (bf16 = not fp16)"
        elif bf16.origin.is_default:
            what = "bf16=True (a library default)"
        # a library default has no span of its own: point at the arguments it belongs to
        where = bf16.span or bf16.key_span or (setup.training.span if setup.training is not None else None)
        uses.append(facts.Use(what, "training.bf16", where, setting=bf16))
    for call in setup.calls_of("autocast"):
        dtype = call.args.get("dtype")
        per_step = call.in_step_callback or "mixed_precision" in call.args
        if per_step and dtype is not None and dtype.is_("bfloat16"):
            what = ('Accelerator(mixed_precision="bf16")' if "mixed_precision" in call.args
                    else "autocast(dtype=torch.bfloat16)")
            uses.append(facts.Use(what, None, call.span, call=call))
    compute = setup.get("quantization.bnb_4bit_compute_dtype")
    if compute.is_("bfloat16"):
        uses.append(facts.Use(_spell(setup, "bnb_4bit_compute_dtype", "torch.bfloat16", "bfloat16"),
                              "quantization.bnb_4bit_compute_dtype", compute.span or compute.key_span,
                              setting=compute))
    dtype = setup.get("model.torch_dtype")
    # under float16 autocast the matmuls of bfloat16 weights run in float16 (autocast casts
    # their inputs): the load dtype alone is then no bfloat16 training
    fp16_amp = setup.get("training.fp16").is_(True) or any(
        (c.in_step_callback or "mixed_precision" in c.args) and c.args.get("dtype") is not None
        and c.args["dtype"].is_("float16") for c in setup.calls_of("autocast"))
    if setup.is_training and dtype.is_("bfloat16") and not fp16_amp:
        uses.append(facts.Use(_spell(setup, "torch_dtype", "torch.bfloat16", "bfloat16"), "model.torch_dtype",
                              dtype.span or dtype.key_span, setting=dtype))
    # settings a config derives from one key (axolotl's bf16: true sets the load and compute
    # dtypes too; litgpt's precision sets bf16 and the weights) share that key's span
    written: list[facts.Use] = []
    for u in uses:
        if u.span is None or all(u.span != w.span for w in written):
            written.append(u)
    return written


def _capability(gpu: "Gpu") -> str:
    return f"the {gpu.name} (compute capability {gpu.compute_capability})"


def _launch(severity: Severity, message: str, settings: list[Setting | None]) -> tuple[Severity, str]:
    hints = [facts.launch_hint(s) for s in settings]
    if settings and all(hints):
        return Severity.INFO, message + " " + " ".join(f"It applies {h}." for h in dict.fromkeys(hints))
    return severity, message


_BF16_FIX = {
    "axolotl": "`bf16: false` and `fp16: true` (not `bf16: auto`: with torch 2.3 or newer axolotl's "
               "check answers yes on this card too)",
    "llama-factory": "`fp16: true` instead of `bf16: true`",
    "torchtune": "`dtype: fp32` (torchtune's recipes do not train in float16)",
    "litgpt": "`precision: 16-mixed` (what litgpt picks itself on a card without bfloat16)",
}


FIX_TF32 = "drop tf32=True"
"""The TF32 fix's title: the keyword removed from the training arguments' call (a config's
``tf32:`` set to false)."""
FIX_SDPA = "use sdpa attention"
"""The FlashAttention fix's title: ``attn_implementation="sdpa"`` where it is written
(LLaMA-Factory ``flash_attn: sdpa``; axolotl ``flash_attention: false`` with
``sdp_attention: true``)."""


FIX_FP16 = "train in float16"
"""The bfloat16 fix's title (a GPU without bfloat16, a model of no family known to overflow
float16: :data:`lintlora.facts.OVERFLOW_FAMILIES`, LL017's list): every bfloat16 use of the
finding switched to float16 where it is written (``bf16=True`` -> ``fp16=True``,
``torch.bfloat16`` -> ``torch.float16``, ``mixed_precision="fp16"``; axolotl/LLaMA-Factory
``bf16: false`` with ``fp16: true``; litgpt ``precision: 16-mixed``; torchtune
``dtype: fp32``, its recipes having no float16 training). Unsafe: float16's range is
65,504, so the run needs loss scaling and its numerics change."""


def _dtype16(setting: Setting | None, path: str, low: str = "float16", strings: bool = True) -> EditOp | None:
    """``torch.bfloat16`` -> ``torch.<low>``; ``"bfloat16"`` -> ``"<low>"`` (``strings``:
    transformers' dtype arguments accept the name; ``torch.autocast`` does not)."""
    span = ops.literal_span(setting, path)
    if span is None or span.end_column is None:
        return None
    width = span.end_column - span.column
    if width == len("torch.bfloat16"):
        return EditOp("replace", span, f"torch.{low}")
    return EditOp("replace", span, f'"{low}"') if strings and width == len('"bfloat16"') else None


def _fp16_fix(setup: TrainingSetup, uses: list[facts.Use], context: "Context") -> Fix | None:
    """:data:`FIX_FP16`, or ``None`` for a family that overflows float16 (LL017's families;
    an unresolved model counts as one: its family is not known) or a use not written where
    it can be edited."""
    arch = context.architecture(setup)
    name = setup.get("model.name_or_path")
    if not name.known or facts.overflow_family(setup, getattr(arch, "model_type", None) if arch else None) \
            or facts.overflow_family(setup):
        return None
    edits: list[EditOp | None] = []
    path = setup.path
    if setup.kind in ("yaml", "json"):
        for u in uses:
            s = u.setting
            if s is None or not s.expr or s.origin is not Origin.LITERAL:
                edits.append(None)
            elif setup.framework in ("axolotl", "llama-factory") and s.expr == "bf16":
                fp16 = setup.get("training.fp16")
                edits.append(ops.yaml_set(setup, "bf16", "false", s))
                edits.append(ops.yaml_set(setup, "fp16", "true", fp16 if fp16.span is not None else None))
            elif setup.framework == "torchtune" and s.expr == "dtype":
                edits.append(ops.yaml_set(setup, "dtype", "fp32", s))
            elif setup.framework == "litgpt" and s.expr == "precision" and s.span is not None:
                # what litgpt picks itself without bfloat16 (litgpt/utils.py get_default_supported_precision);
                # never 16-true: float16 weights and optimizer state without loss scaling
                edits.append(ops.yaml_set(setup, "precision", "16-mixed", s))
            else:
                edits.append(None)
        return ops.make_fix(FIX_FP16, FixSafety.UNSAFE, edits)
    if setup.kind not in ("python", "notebook"):
        return None
    call = setup.training.span if setup.training is not None else None
    for u in uses:
        s = u.setting
        if u.path == "training.bf16":
            fp16 = setup.get("training.fp16")
            if s is None or s.origin is Origin.LAUNCH:
                edits.append(None)
            elif s.origin.is_default:
                # TRL's unset bf16 is `not fp16`: fp16=True turns it off
                edits.append(ops.set_keyword(call, path, "fp16", "True", fp16)
                             if setup.framework == "trl" else None)
            elif fp16.origin is Origin.LIBRARY_DEFAULT:
                edits.append(ops.rename_keyword(call, path, "bf16", "fp16", s))
            else:
                edits.append(ops.remove_keyword(call, path, "bf16", s))
                edits.append(ops.set_keyword(call, path, "fp16", "True", fp16))
        elif u.path in ("model.torch_dtype", "quantization.bnb_4bit_compute_dtype"):
            edits.append(_dtype16(s, path))
        elif u.path is None and u.call is not None:
            mp = u.call.args.get("mixed_precision")
            edits.append(ops.replace_value(mp, path, '"fp16"') if mp is not None
                         else _dtype16(u.call.args.get("dtype"), path, strings=False))
        else:
            edits.append(None)
    return ops.make_fix(FIX_FP16, FixSafety.UNSAFE, edits)


def _tf32_fix(setup: TrainingSetup, tf32: Setting) -> Fix | None:
    if setup.kind in ("yaml", "json"):
        key = tf32.expr or "tf32"
        return ops.make_fix(FIX_TF32, FixSafety.SAFE, [ops.yaml_set(setup, key, "false", tf32)])
    call = setup.training.span if setup.training is not None else None
    return ops.make_fix(FIX_TF32, FixSafety.SAFE, [ops.remove_keyword(call, setup.path, "tf32", tf32)])


def _sdpa_fix(setup: TrainingSetup, attn: Setting) -> Fix | None:
    if setup.kind in ("yaml", "json"):
        if attn.origin is not Origin.LITERAL or not attn.expr:
            return None
        if setup.framework == "axolotl":
            return ops.make_fix(FIX_SDPA, FixSafety.SAFE, [ops.yaml_set(setup, attn.expr, "false", attn),
                                                           ops.yaml_set(setup, "sdp_attention", "true")])
        return ops.make_fix(FIX_SDPA, FixSafety.SAFE, [ops.yaml_set(setup, attn.expr, "sdpa", attn)])
    return ops.make_fix(FIX_SDPA, FixSafety.SAFE, [ops.replace_value(attn, setup.path, '"sdpa"')])


class PrecisionUnsupportedByGpu(Rule):
    """bfloat16, TF32 or FlashAttention on a GPU older than Ampere (see the module docstring)."""

    code = "LL010"
    fixes = {FIX_TF32: FixSafety.SAFE, FIX_SDPA: FixSafety.SAFE, FIX_FP16: FixSafety.UNSAFE}
    name = "precision-unsupported-by-gpu"
    severity = Severity.WARNING
    summary = "bfloat16, TF32 or FlashAttention on a GPU below compute capability 8.0 (T4, V100, P100, RTX 20xx)"
    fix_changes_memory = False
    """float16 takes the bytes bfloat16 does, dropping TF32 changes no tensor, SDPA's
    memory-efficient kernel keeps no score matrix either: the "after" figure is the "before" one
    (no second estimate). torchtune's fix (float32) does change memory and is estimated."""

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        gpu = context.gpu
        if not setup.is_training or gpu is None or gpu.pre_ampere is not True:
            return
        yield from self._bf16(setup, context, gpu)
        yield from self._tf32(setup, context, gpu)
        yield from self._attention(setup, context, gpu)

    # ---- bfloat16 -----------------------------------------------------------------------------
    def _bf16(self, setup: TrainingSetup, context: "Context", gpu: "Gpu") -> Iterable[Finding]:
        uses = bf16_uses(setup)
        if not uses:
            return
        what = join_words([u.what for u in uses])
        gates = []
        if any(u.path == "training.bf16" for u in uses):
            if setup.framework == "torchtune":
                gates.append("torchtune's get_dtype raises \"bf16 precision was requested but not available "
                             "on this hardware\"")
            elif setup.framework != "litgpt":
                gates.append("TrainingArguments raises \"Your setup doesn't support bf16/gpu\" when it is built")
        if any(u.call is not None and "mixed_precision" in u.call.args for u in uses):
            gates.append("Accelerator() raises \"bf16 mixed precision requires PyTorch >= 1.10 and a supported "
                         "device.\"")
        if gates:
            when = (f"With torch 2.2 or older {join_words(gates)}; torch 2.3 and newer count emulated bfloat16 "
                    "as supported (torch.cuda.is_bf16_supported()), so the run starts and every bfloat16 "
                    "matmul is emulated")
        elif setup.framework == "litgpt":
            when = ("litgpt picks 16-mixed by itself where torch.cuda.is_bf16_supported() is False, but a "
                    "precision the config names is used as written: every bfloat16 matmul is emulated")
        else:
            when = "Nothing refuses it: every bfloat16 matmul is emulated"
        fp16 = f" (its float16 tensor cores: {gpu.fp16_tflops:g} TFLOP/s)" if gpu.fp16_tflops else ""
        message = (f"Trains in bfloat16 ({what}) on {_capability(gpu)}, which has no bfloat16 tensor cores "
                   f"(they start at 8.0, Ampere). {when}, far slower than float16 on this card{fp16}.")
        severity, message = _launch(Severity.WARNING, message, [u.setting for u in uses])
        rests_on = tuple(f"{u.what} ({u.setting.origin.value})" for u in uses
                         if u.setting is not None and u.setting.origin.is_default)
        fixed = self._bf16_fixed(setup, uses) if setup.framework == "torchtune" else None
        yield self.finding(context, setup, uses[0].span, message, fix=self._bf16_fix(setup, uses, gpu),
                           fixed_setup=fixed, severity=severity, rests_on=rests_on,
                           autofix=_fp16_fix(setup, uses, context))

    @staticmethod
    def _bf16_fix(setup: TrainingSetup, uses: list[facts.Use], gpu: "Gpu") -> str:
        if setup.kind in ("yaml", "json"):
            return "Use " + _BF16_FIX.get(setup.framework, "`fp16: true` instead of `bf16: true`") + "."
        texts = {"training.bf16": "fp16=True instead of bf16=True",
                 "quantization.bnb_4bit_compute_dtype": "bnb_4bit_compute_dtype=torch.float16",
                 "model.torch_dtype": "torch_dtype=torch.float16"}
        seen: list[str] = []
        for u in uses:
            text = texts.get(u.path or "", 'mixed_precision="fp16"' if u.call is not None
                             and "mixed_precision" in u.call.args else "autocast(dtype=torch.float16)")
            if text not in seen:
                seen.append(text)
        return (f"On the {gpu.name} use {join_words(seen)}. To choose at run time, test "
                "torch.cuda.get_device_capability()[0] >= 8, not torch.cuda.is_bf16_supported(), which "
                "answers True here with torch 2.3 or newer.")

    @staticmethod
    def _bf16_fixed(setup: TrainingSetup, uses: list[facts.Use]) -> TrainingSetup:
        fixed = setup
        low = "float32" if setup.framework == "torchtune" else "float16"
        for u in uses:
            if u.path == "training.bf16":
                fixed = fixed.set("training.bf16", False, "LL010 fix")
                if setup.framework != "torchtune":
                    fixed = fixed.set("training.fp16", True, "LL010 fix")
            elif u.path is not None:
                fixed = fixed.set(u.path, low, "LL010 fix")
        if any(u.call is not None for u in uses):
            calls = tuple(
                dataclasses.replace(c, args={**dict(c.args), "dtype": Setting.assumed("float16", "LL010 fix")},
                                    synthetic=True)
                if c.kind == "autocast" and c.args.get("dtype") is not None and c.args["dtype"].is_("bfloat16")
                else c
                for c in fixed.calls
            )
            fixed = fixed.replace(calls=calls)
        return fixed

    # ---- TF32 ---------------------------------------------------------------------------------
    def _tf32(self, setup: TrainingSetup, context: "Context", gpu: "Gpu") -> Iterable[Finding]:
        if setup.framework not in _TRAINER_FRAMEWORKS or setup.training is None:
            return
        tf32 = setup.training.extra.get("tf32")
        if not isinstance(tf32, Setting) or not tf32.known or tf32.value is not True:
            return
        config = setup.kind in ("yaml", "json")
        what = "tf32: true" if config else "tf32=True"
        message = (f"{what} on {_capability(gpu)}: TF32 tensor cores start at 8.0 (Ampere), and transformers "
                   "raises ValueError \"--tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7\" "
                   "when TrainingArguments is built, before any training (it tests the compute capability "
                   "itself, whatever the torch version).")
        severity, message = _launch(Severity.ERROR, message, [tf32])
        if setup.framework == "axolotl" and config:
            fix = "Remove `tf32: true` (axolotl's default, `tf32: auto`, turns it on only where the GPU has it)."
        elif config:
            fix = "Remove `tf32: true` (or set `tf32: false`)."
        else:
            fix = "Remove tf32=True (or set it from torch.cuda.get_device_capability()[0] >= 8)."
        yield self.finding(context, setup, tf32.span or tf32.key_span, message, fix=fix, severity=severity,
                           autofix=_tf32_fix(setup, tf32))

    # ---- FlashAttention -----------------------------------------------------------------------
    def _attention(self, setup: TrainingSetup, context: "Context", gpu: "Gpu") -> Iterable[Finding]:
        attn = setup.get("model.attn_implementation")
        if not attn.known or attn.value not in _FLASH:
            return
        if setup.framework in ("torchtune", "litgpt"):
            return
        impl = attn.value
        config = setup.kind in ("yaml", "json")
        key = attn.expr if config and attn.expr else None
        if setup.framework == "axolotl" and config:
            what = "flash_attention: true"
        elif setup.framework == "llama-factory" and config:
            what = f"flash_attn: {'fa2' if impl == 'flash_attention_2' else 'fa3'}"
        elif config:
            what = f"{key or 'attn_implementation'}: {impl}"
        else:
            what = f'attn_implementation="{impl}"'
        name = _FLASH[impl]
        if impl == "flash_attention_2":
            when = ("with flash-attn installed the model loads and the first forward raises RuntimeError "
                    "\"FlashAttention only supports Ampere GPUs or newer.\"; without it from_pretrained "
                    "raises ImportError")
        else:
            when = "transformers refuses it when the model is loaded (\"requires compute capability >= 8\")"
        severity = Severity.ERROR
        if setup.framework == "llama-factory":
            severity = Severity.WARNING
            when += (" (LLaMA-Factory falls back to the default attention, with a warning, when flash-attn "
                     "is not installed)")
        message = f"{what} on {_capability(gpu)}: {name} has kernels only for 8.0 and newer; {when}."
        severity, message = _launch(severity, message, [attn])
        fix = {"axolotl": "Use `sdp_attention: true` instead of `flash_attention: true`.",
               "llama-factory": "Use `flash_attn: sdpa` (or `auto`)."}.get(setup.framework) if config else None
        if fix is None:
            fix = ('Use attn_implementation="sdpa" (PyTorch\'s scaled-dot-product attention, whose '
                   'memory-efficient kernel runs on this card).') if not config else \
                "Use `attn_implementation: sdpa`."
        yield self.finding(context, setup, attn.span or attn.key_span, message, fix=fix, severity=severity,
                           autofix=_sdpa_fix(setup, attn))
