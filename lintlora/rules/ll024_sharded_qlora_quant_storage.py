"""LL024 sharded-qlora-quant-storage (page: ``rules/LL024.md``).

Flags a bitsandbytes 4-bit base (``BitsAndBytesConfig(load_in_4bit=True)``) trained under a
run that shards parameters (FSDP FULL_SHARD / SHARD_GRAD_OP / HYBRID_SHARD, or DeepSpeed
ZeRO-3: :func:`lintlora.facts.sharded_run`, from the run's distribution or the file's own
``fsdp=`` / literal ``deepspeed={...}``) whose ``bnb_4bit_quant_storage`` is not the model's
float dtype.

Why, with sources:

- bitsandbytes packs 4-bit weights into ``bnb_4bit_quant_storage``, ``uint8`` by default
  (transformers ``src/transformers/utils/quantization_config.py``: ``None`` becomes
  ``torch.uint8``). FSDP1 flattens the parameters of each wrapped unit into one flat parameter
  and refuses anything else: torch ``torch/distributed/fsdp/_flat_param.py``
  (``FlatParamHandle._validate_tensors_to_flatten``) raises ``"Cannot flatten integer dtype
  tensors"`` for a uint8 weight and ``"Must flatten tensors with uniform dtype but got ... and
  ..."`` for a float storage other than the unit's other parameters
  (huggingface/alignment-handbook#169, huggingface/peft#1432, axolotl-ai-cloud/axolotl#1482,
  hiyouga/LlamaFactory#3853; bug-reports-2 BN13/BN14/BN15). With FSDP2 and accelerate >= 1.14
  the uint8 weights are left out of sharding with a warning (accelerate
  ``src/accelerate/utils/fsdp_utils.py``, PR #3987): no crash, but every rank keeps the whole
  4-bit model.
- Under ZeRO-3 the uint8-stored weights are not partitioned at load: every rank holds the whole
  quantized model (bitsandbytes-foundation/bitsandbytes#1249, axolotl-ai-cloud/axolotl#1717;
  BN16).
- The fix is the documented one: ``bnb_4bit_quant_storage`` equal to the ``torch_dtype`` the
  model is loaded in (peft ``docs/source/accelerate/fsdp.md`` at 018ca9d6f, "Notice that
  ``dtype`` for ``AutoModelForCausalLM`` is same as the ``bnb_4bit_quant_storage`` data type";
  the same sentence in ``docs/source/accelerate/deepspeed.md`` at 09802c1b4 for ZeRO-3 QLoRA;
  bitsandbytes ``docs/source/fsdp_qlora.md``, "Quantized data storage"). With float16 mixed precision peft's page asks
  for ``float32`` storage (and load dtype).

Severity: error. Silent when the run does not shard parameters (DDP, ZeRO-0/1/2, FSDP
``NO_SHARD``, a run known to be one process), for axolotl and LLaMA-Factory configs (both set
the storage themselves: axolotl ``src/axolotl/loaders/model.py``
``ModelLoader._set_quantization_config`` at 002a637c8, ``"bnb_4bit_quant_storage": torch.bfloat16``;
LLaMA-Factory ``src/llamafactory/model/model_utils/quantization.py``,
``bnb_4bit_quant_storage=model_args.compute_dtype`` at 8c0a721c4), when the storage dtype equals the model's
float dtype, and when either cannot be read (a float storage against an unknown or ``"auto"``
load dtype is not judged). Under ZeRO-3 only an integer storage is reported: a float storage is
partitioned, and the uniform-dtype check is FSDP's.

The message gives the per-GPU estimate as written and with the fix (the estimator prices
unsharded 4-bit weights when the storage is not the model's dtype:
:mod:`lintlora.estimate.sharding`), with the sharding and the number of ranks the estimate
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Fix, FixSafety, RelatedLocation, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import gib
from lintlora.rules.base import Rule
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["ShardedQloraQuantStorage", "FLOAT_DTYPES", "SETS_QUANT_STORAGE"]

FLOAT_DTYPES = frozenset({"bfloat16", "float16", "float32"})
"""Storage dtypes FSDP can flatten (floating point: torch ``_flat_param.py``)."""

SETS_QUANT_STORAGE = frozenset({"axolotl", "llama-factory"})
"""Frameworks that set ``bnb_4bit_quant_storage`` themselves (module docstring)."""

_TORCH_NAME = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32"}


def _model_dtype(setup: TrainingSetup) -> str | None:
    """The float dtype the base is loaded in (``torch_dtype``/``dtype``), or ``None`` when not
    a known float dtype (unset, ``"auto"``, unresolved)."""
    dtype = setup.get("model.torch_dtype")
    if dtype.known and dtype.value in FLOAT_DTYPES:
        return dtype.value
    return None


def _fix_dtype(setup: TrainingSetup) -> tuple[str, bool]:
    """The storage dtype to propose and whether the load dtype must be set to it too: the
    model's float dtype when known; else ``bfloat16`` for bf16 training, ``float32`` for fp16
    training (peft's FSDP page), ``bfloat16`` otherwise; the load dtype is then unset and the
    fix sets both."""
    model = _model_dtype(setup)
    if model is not None:
        return model, False
    if setup.get("training.fp16").is_(True) and not setup.get("training.bf16").is_(True):
        return "float32", True
    return "bfloat16", True


FIX_STORAGE = "store the 4-bit weights in the model's dtype"
"""The fix's title: ``bnb_4bit_quant_storage=torch.<the model's load dtype>`` on the
BitsAndBytesConfig call (or in place of the value written); offered only when the load dtype
is known and the file spells dtypes through ``torch``."""


def _autofix(setup: TrainingSetup, storage: Setting, dtype: str, set_load: bool) -> Fix | None:
    q = setup.quantization
    if q is None or set_load or setup.kind not in ("python", "notebook") or not ops.torch_named(setup):
        return None
    text = _TORCH_NAME[dtype]
    op = ops.quantization_keyword(setup, "bnb_4bit_quant_storage", storage, text)
    return ops.make_fix(FIX_STORAGE, FixSafety.SAFE, [op])


class ShardedQloraQuantStorage(Rule):
    """4-bit bitsandbytes under FSDP/ZeRO-3 without a matching storage dtype (module docstring)."""

    code = "LL024"
    name = "sharded-qlora-quant-storage"
    severity = Severity.ERROR
    depends_on_settings = False  # fires on the files of the run alone (LL900 may report its suppressions)
    fixes = {FIX_STORAGE: FixSafety.SAFE}
    summary = "4-bit bitsandbytes under FSDP or ZeRO-3 needs bnb_4bit_quant_storage equal to the model's dtype"

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.framework in SETS_QUANT_STORAGE:
            return
        q = setup.quantization
        if q is None or facts.quant_bits(setup) != 4:
            return
        if q.method.known and q.method.value not in (None, "", "bitsandbytes"):
            return  # GPTQ/AWQ/torchao...: another storage story
        shard = facts.sharded_run(setup)
        if shard is None:
            return
        storage: Setting = q.bnb_4bit_quant_storage
        if not storage.known or not isinstance(storage.value, str):
            return
        model = _model_dtype(setup)
        value = storage.value
        if value in FLOAT_DTYPES and (model is None or value == model or shard.kind == "zero3"):
            return  # matches, or the load dtype cannot be compared; ZeRO-3 partitions float storage
        fix_dtype, set_load = _fix_dtype(setup)
        fixed = setup.set("quantization.bnb_4bit_quant_storage", fix_dtype, "LL024 fix")
        if set_load:
            fixed = fixed.set("model.torch_dtype", fix_dtype, "LL024 fix")

        written = (f"bnb_4bit_quant_storage={value}" if not storage.origin.is_default
                   else f"bnb_4bit_quant_storage left at its default ({value})")
        if shard.kind == "zero3":
            effect = ("DeepSpeed ZeRO-3 does not partition the uint8-stored 4-bit weights at load: every rank "
                      "holds the whole quantized model (bitsandbytes#1249, axolotl#1717)")
        elif value not in FLOAT_DTYPES:
            effect = ("FSDP flattens only floating-point parameters, so preparing the model stops with "
                      "\"Cannot flatten integer dtype tensors\" (FSDP1: torch fsdp/_flat_param.py; "
                      "alignment-handbook#169, peft#1432); with FSDP2 and accelerate >= 1.14 the uint8 weights "
                      "are left out of sharding instead, and every rank holds the whole 4-bit model")
        else:
            effect = (f"FSDP flattens each wrapped block into one tensor of one dtype, and the 4-bit weights "
                      f"stored as {value} sit next to {model} parameters: preparing the model stops with "
                      f"\"Must flatten tensors with uniform dtype but got ...\" (torch fsdp/_flat_param.py; "
                      "axolotl#1482, LlamaFactory#3853)")
        parts = [f"The 4-bit bitsandbytes base has {written} while the run shards it with {shard.words}: "
                 f"{effect}."]
        figures = self._figures_text(setup, fixed, context)
        if figures:
            parts.append(figures)
        load = (f" and load the model with torch_dtype={_TORCH_NAME[fix_dtype]} (peft: the load dtype must "
                "be the storage dtype)" if set_load else "")
        fix = (f"Pass bnb_4bit_quant_storage={_TORCH_NAME[fix_dtype]} to BitsAndBytesConfig{load}; under FSDP "
               "keep the adapters in the same dtype (no fp32 up-cast of the LoRA weights).")
        related: tuple[RelatedLocation, ...] = ()
        if shard.span is not None:
            related += (RelatedLocation(shard.span, f"sharded by {shard.words} ({facts.where(shard.span)})"),)
        related = facts.launch_related(setup) + related
        span = storage.span or storage.key_span or q.span
        yield self.finding(context, setup, span, " ".join(parts), fix=fix, fixed_setup=fixed,
                           related=related, rests_on=(written,) if storage.origin.is_default else (),
                           autofix=_autofix(setup, storage, fix_dtype, set_load))

    @staticmethod
    def _figures_text(setup: TrainingSetup, fixed: TrainingSetup, context: "Context") -> str:
        """The per-GPU estimate as written and with the fix, with the sharding it used; ``""``
        without an estimate."""
        before = context.estimate(setup)
        after = context.estimate(fixed)
        if before is None or after is None:
            return ""
        sharding = getattr(before, "sharding", "") or ""
        ranks = getattr(getattr(before, "inputs", None), "num_gpus", 1) or 1
        if ranks <= 1:
            return (f"Estimated peak {gib(before.device_bytes)} as written, {gib(after.device_bytes)} with the fix "
                    "(priced as one GPU: the number of GPUs is not known, and one rank shards nothing).")
        return (f"Estimated peak per GPU ({sharding or f'{ranks} ranks'}): {gib(before.device_bytes)} as written, "
                f"{gib(after.device_bytes)} with the fix.")
