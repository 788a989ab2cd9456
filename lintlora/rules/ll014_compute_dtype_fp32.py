"""LL014 compute-dtype-fp32 (page: ``rules/LL014.md``).

Flags a bitsandbytes 4-bit base whose ``bnb_4bit_compute_dtype`` is float32 while the run
computes in 16 bits (:func:`lintlora.facts.half_precision_uses`, or a 16-bit load dtype of the
model being trained):

- not given: transformers' ``BitsAndBytesConfig.__init__`` replaces ``None`` by
  ``torch.float32`` (``src/transformers/utils/quantization_config.py``, read at 000e22311674 and
  in every 4.3x-5.x copy in the code index: ``if bnb_4bit_compute_dtype is None:
  self.bnb_4bit_compute_dtype = torch.float32``) and always hands it to ``Linear4bit``, so
  bitsandbytes' own warning (``bitsandbytes/nn/modules.py`` ``set_compute_type``, which runs
  only when no compute dtype was passed) never fires (BN18: bitsandbytes-foundation/bitsandbytes
  PR #2077; h2oai/h2ogpt PR #682: 5 -> 16 tokens/s once it was set);
- written as ``torch.float32``.

Every 4-bit matmul then dequantizes to float32 and multiplies in float32 (``Linear4bit.forward``
casts its input to ``compute_dtype``): slow. With a named GPU the finding gives the time per
micro-batch as written and with the fix (:meth:`lintlora.context.Context.time_estimate`,
:mod:`lintlora.estimate.compute`), and the memory of both (the dequantized copies are 4 bytes a
weight).

The 16-bit type proposed agrees with LL002/LL010: bfloat16 on a GPU with bfloat16 support
(compute capability 8.0+), float16 on one without (T4, V100), and with no GPU named the run's own
16-bit type with the other named for the other kind of card.

Silent: 8-bit bases (``bnb_4bit_compute_dtype`` applies to 4-bit only), GPTQ/AWQ and other
methods, runs computing in float32, unresolved values, inference scripts, and the stacks that set
the compute dtype themselves: axolotl (``src/axolotl/loaders/model.py`` @ 002a637c
``_set_quantization_config``: ``bnb_4bit_compute_dtype=cfg.torch_dtype``), LLaMA-Factory
(``src/llamafactory/model/model_utils/quantization.py`` @ ff6d4d12e line 186:
``bnb_4bit_compute_dtype=model_args.compute_dtype``, the training precision), unsloth
(``FastLanguageModel.from_pretrained`` builds ``BitsAndBytesConfig(..., bnb_4bit_compute_dtype=
dtype)``, unsloth ``models/llama.py`` @ 00060afeb383): their extractors record the derived value,
which is 16-bit whenever the run is. A float32 written in such a config is still flagged.

Not yet covered: TRL's ``get_quantization_config`` (``trl/trainer/utils.py`` @ f2cd57710) passes
``bnb_4bit_compute_dtype=model_args.dtype``, whose ``ModelConfig`` default is ``"float32"``
(``trl/trainer/model_config.py`` @ f2cd57710), so ``trl sft --load_in_4bit`` without ``--dtype``
computes in float32 too; the TRL YAML dialect leaves the compute dtype unknown when ``dtype`` is
not written, and the rule stays silent there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["ComputeDtypeFp32", "proposed_half"]

_DERIVING = frozenset({"axolotl", "llama-factory", "unsloth"})
"""Stacks that build the BitsAndBytesConfig with the training dtype as compute dtype (module
docstring): a float32 there is flagged only when the file writes it."""


def proposed_half(context: "Context", run_half: str | None) -> tuple[str, str]:
    """The 16-bit type to propose and a clause for the other kind of GPU, the way LL002 and
    LL010 decide: ``("bfloat16", "")`` on a GPU with bfloat16 support, ``("float16", "")`` on
    one without, and with no GPU (or unknown support) ``run_half`` (default bfloat16) with
    ``" (torch.float16 on a GPU without bfloat16: T4, V100)"`` or the bfloat16 counterpart."""
    gpu = context.gpu
    supported = getattr(gpu, "bf16_supported", None) if gpu is not None else None
    if supported is True:
        return "bfloat16", ""
    if supported is False:
        return "float16", ""
    half = run_half or "bfloat16"
    if half == "bfloat16":
        return half, " (torch.float16 on a GPU without bfloat16: T4, V100, RTX 20xx)"
    return half, " (torch.bfloat16 on a GPU that has it: Ampere or newer, A100, RTX 30xx/40xx, L4, H100)"


def _seconds(t, unit_of) -> str:
    """A step time in the unit chosen for ``unit_of`` (ms below 10 s, else s)."""
    s = getattr(t, "step_seconds", None)
    big = getattr(unit_of, "step_seconds", None)
    if s is None or big is None:
        return "?"
    return f"{s * 1000:.0f} ms" if big < 10 else f"{s:.1f} s"


FIX_COMPUTE = "set the 4-bit compute dtype to 16 bits"
"""The fix's title: ``bnb_4bit_compute_dtype=torch.bfloat16`` (``torch.float16`` where LL002 and
LL010 would choose it: :func:`proposed_half`) on the BitsAndBytesConfig call, or in place of
the float32 written. Only where the file spells dtypes through ``torch``."""


def _autofix(setup: TrainingSetup, half: str) -> Fix | None:
    q = setup.quantization
    if q is None or setup.kind not in ("python", "notebook") or not ops.torch_named(setup):
        return None
    compute = q.bnb_4bit_compute_dtype
    text = f"torch.{half}"
    op = ops.quantization_keyword(setup, "bnb_4bit_compute_dtype", compute, text)
    return ops.make_fix(FIX_COMPUTE, FixSafety.SAFE, [op])


class ComputeDtypeFp32(Rule):
    """A 4-bit base computing in float32 while training in 16 bits (see the module docstring)."""

    code = "LL014"
    name = "compute-dtype-fp32"
    severity = Severity.WARNING
    summary = "4-bit BitsAndBytesConfig computing in float32 (its default) while the run trains in 16 bits"
    depends_on_settings = False  # fires on the file alone; the GPU changes only the wording and the time figure
    fixes = {FIX_COMPUTE: FixSafety.SAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or facts.quant_bits(setup) != 4:
            return
        q = setup.quantization
        if q is None or not q.method.is_("bitsandbytes"):
            return
        compute = q.bnb_4bit_compute_dtype
        if not compute.is_("float32"):
            return
        defaulted = compute.origin is Origin.LIBRARY_DEFAULT
        if defaulted and (setup.framework in _DERIVING or setup.kind in ("yaml", "json")):
            return
        uses = facts.half_precision_uses(setup)
        load = setup.get("model.torch_dtype")
        if uses:
            run_half = facts.half_dtype(uses[0])
            what = ", ".join(u.what for u in uses)
        elif load.known and load.value in ("bfloat16", "float16"):
            run_half = load.value
            what = f"torch_dtype=torch.{load.value}"
        else:
            return  # the run computes in float32 anyway
        half, other = proposed_half(context, run_half)
        fixed = setup.set("quantization.bnb_4bit_compute_dtype", half, "LL014 fix")
        if defaulted:
            lead = ("The 4-bit BitsAndBytesConfig gives no bnb_4bit_compute_dtype, and transformers replaces it "
                    "by torch.float32 (src/transformers/utils/quantization_config.py)")
            span = q.span
        else:
            lead = "bnb_4bit_compute_dtype is torch.float32"
            span = compute.span or compute.key_span or q.span
        timing = ""
        before, after = context.time_estimate(setup), context.time_estimate(fixed)
        if before is not None and after is not None:
            timing = (f" Estimated time per micro-batch on the {context.gpu_label or 'GPU'}: {_seconds(before, before)} as "
                      f"written, {_seconds(after, before)} with torch.{half} (at least: the float32 rate assumed is TF32's, "
                      "which PyTorch leaves off by default).")
        message = (f"{lead}, while the run computes in {run_half} ({what}): every 4-bit matmul dequantizes its "
                   "weight to float32 and multiplies in float32, several times slower than in 16 bits, and "
                   "bitsandbytes does not warn when the value is passed (BN18: bitsandbytes-foundation/"
                   f"bitsandbytes PR #2077).{timing}")
        rests_on = (f"bnb_4bit_compute_dtype=float32 ({compute.source or 'library default'})",) if defaulted else ()
        severity = self.severity
        hints = [facts.launch_hint(u.setting, setup) for u in uses] if uses else [facts.launch_hint(load, setup)]
        written_hint = None if defaulted else facts.launch_hint(compute, setup)
        if all(hints) or written_hint:
            # the 16-bit run (or the float32 written) is a default chosen at launch
            severity = Severity.INFO
            message += " " + " ".join(f"It applies {h}." for h in dict.fromkeys(
                h for h in (hints if all(hints) else []) + [written_hint] if h))
        yield self.finding(
            context, setup, span, message,
            fix=f"Pass bnb_4bit_compute_dtype=torch.{half} to BitsAndBytesConfig{other}.",
            fixed_setup=fixed, rests_on=rests_on, severity=severity, autofix=_autofix(setup, half),
        )
