"""LL013 base-loaded-in-fp32 (page: ``rules/LL013.md``).

Flags a frozen base (adapters train on it: :func:`lintlora.facts.frozen_base`), loaded
unquantized by ``from_pretrained``, whose weights are float32 while the run computes in 16 bits
(:func:`lintlora.facts.half_precision_uses`: ``bf16=True``/``fp16=True``, a per-step autocast):

- no ``torch_dtype``/``dtype`` under transformers < 5: ``from_pretrained`` materialises float32
  weights (transformers 4.x ``modeling_utils.py``: without ``torch_dtype`` the default dtype,
  float32, is used); transformers 5 loads the checkpoint's own dtype (``dtype="auto"`` became the
  default: huggingface/transformers PR #34919, released with v5). The version is the run's
  (:meth:`lintlora.context.Context.library_version`), and the message names it and where it was
  read;
- ``torch_dtype=torch.float32`` (``"float32"``), on any version.

``bf16=True`` changes the compute, not the stored weights: every frozen weight takes 4 bytes
instead of 2 (BN17 in bug-reports-2: MakazhanAlpamys/Soup#339, goodfire-ai/spd PR #559: a
Llama-3.1-8B OOM on 4×L40 that fits with ``dtype="auto"``). The finding prices the weights as
written and with ``torch_dtype`` set to the run's 16-bit type (the estimate of the fixed setup).

Silent: transformers >= 5 without a dtype, ``torch_dtype="auto"`` or a 16-bit dtype, an
unresolved dtype expression, a cast to 16 bits after loading (``model.half()``,
``.to(torch.bfloat16)``), full fine-tuning (no adapter: float32 master weights are then the
point), quantized bases and checkpoints saved quantized (:func:`lintlora.facts.
prequantized_name`), runs computing in float32, inference scripts, and stacks that choose the load
dtype themselves (unsloth, axolotl, LLaMA-Factory, torchtune, litgpt). A dtype that is a default
chosen at launch makes the finding info (:func:`lintlora.facts.launch_hint`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules._text import weights_phrase
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["BaseLoadedInFp32"]

_FRAMEWORKS = frozenset({"transformers", "trl", "torch"})
"""Stacks whose model load is the script's own ``from_pretrained`` call (unsloth passes its own
``dtype``; the YAML dialects choose the load dtype from their precision keys)."""

SOURCE = ("transformers PR #34919 (from_pretrained dtype='auto' by default, released with v5); "
          "4.x modeling_utils.py loads torch.get_default_dtype() (float32) without torch_dtype")



def _cast_to_half(setup: TrainingSetup) -> bool:
    """A ``.half()``/``.bfloat16()``/``.to(torch.bfloat16)`` of the model after loading."""
    for call in setup.calls_of("model_cast"):
        dtype = call.args.get("dtype")
        if dtype is not None and dtype.known and dtype.value in ("float16", "bfloat16"):
            return True
    return False


class BaseLoadedInFp32(Rule):
    """A frozen base loaded in float32 while training in 16 bits (see the module docstring)."""

    code = "LL013"
    name = "base-loaded-in-fp32"
    severity = Severity.WARNING
    summary = "A frozen (adapter-trained) base loaded in float32 while training in 16 bits: twice the weight memory"
    depends_on_settings = True  # the transformers version (--assume-version, [tool.lintlora] versions) decides a missing dtype

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.model is None or setup.framework not in _FRAMEWORKS:
            return
        if setup.kind not in ("python", "notebook"):
            return
        if facts.frozen_base(setup) is not True or facts.is_quantized(setup) is not False:
            return
        if facts.prequantized_name(setup.model.name_or_path) or _cast_to_half(setup):
            return
        uses = facts.half_precision_uses(setup)
        if not uses:
            return
        half = facts.half_dtype(uses[0])
        dtype = setup.get("model.torch_dtype")
        used = context.library_version(setup, "transformers")
        if dtype.known:
            if dtype.value != "float32":
                return
            why = (f"torch_dtype=torch.float32 loads every frozen weight in float32 (4 bytes each), on any "
                   f"transformers release")
            span = dtype.span or dtype.key_span or setup.model.span
        elif dtype.origin is Origin.UNKNOWN and dtype.span is None and dtype.key_span is None:
            if used.version is None or used.version.major >= 5:
                return  # transformers 5 loads the checkpoint's own dtype
            why = (f"from_pretrained without torch_dtype loads every frozen weight in float32 (4 bytes each) under "
                   f"transformers {used.version} ({used.where}); transformers 5 loads the checkpoint's own "
                   "dtype (PR #34919)")
            span = setup.model.span
        else:
            return  # an expression lintlora cannot resolve
        flags = ", ".join(u.what for u in uses)
        fixed = setup.set("model.torch_dtype", half, "LL013 fix: load in the training dtype")
        message = (f"{why}, while the run computes in {half} ({flags}): {flags} changes the compute, not the "
                   f"stored weights, so the frozen base takes twice the memory it needs (BN17: "
                   f"MakazhanAlpamys/Soup#339).{weights_phrase(context, setup, fixed)}")
        severity = self.severity
        hint = facts.launch_hint(dtype, setup) if dtype.known else None
        if hint:
            severity = Severity.INFO
            message += f" torch_dtype=float32 applies {hint}."
        flag_hints = [facts.launch_hint(u.setting, setup) for u in uses]
        if all(flag_hints):
            # the 16-bit run itself is a default chosen at launch (TRL's bf16 = not fp16 read
            # through TrlParser): the launch may well ask for float32
            severity = Severity.INFO
            message += " " + " ".join(f"{u.what} applies {h}." for u, h in zip(uses, flag_hints))
        rests_on = (f"transformers {used.version} ({used.where})",) if not dtype.known else ()
        fix = (f"Pass torch_dtype=torch.{half} to from_pretrained (dtype= on transformers 5), or "
               "torch_dtype=\"auto\" to load the checkpoint's own dtype; the adapters are kept in float32 by peft.")
        arch = context.architecture(setup)
        family = facts.overflow_family(setup, getattr(arch, "model_type", None) if arch is not None else None) \
            or facts.overflow_family(setup)
        if half == "float16" and family is not None:
            # LL017's case: this family overflows float16, and LL017 proposes bfloat16 or float32
            fix = (f"{family.label} overflows float16 (LL017): on a GPU with bfloat16 train with bf16=True and "
                   "torch_dtype=torch.bfloat16; on one without, keep the float32 weights and train in float32 "
                   "(fp16=False).")
        yield self.finding(context, setup, span, message, fix=fix, fixed_setup=fixed, severity=severity,
                           rests_on=rests_on)
