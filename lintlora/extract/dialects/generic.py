"""The "generic" vocabulary of LoRA configs in blog posts and personal repositories.

These files feed a script lintlora does not see, so nothing is assumed: only what is written
is extracted, no tool's defaults are applied, and the setup's framework is ``transformers``
(the usual consumer). Keys are looked up at the top level and in the sections people commonly
use (``model``, ``lora``, ``peft``, ``training``, ``train``, ``trainer``, ``data``,
``quantization``, ``bnb``), first match wins, so ``lora: {r: 16}`` and ``lora_r: 16`` read
alike.
"""

from __future__ import annotations

from typing import Any

from lintlora.extract.dialects._base import (
    ConfigDoc,
    as_bool,
    as_dtype,
    as_float,
    as_count,
    as_workers,
    as_module_list,
    as_str,
    derived,
)
from lintlora.extract.dialects.hf_args import launch_evidence
from lintlora.extract.yaml_loader import YMap
from lintlora.training_setup import (
    Lora,
    ModelLoad,
    Quantization,
    Setting,
    TrainingArgs,
    TrainingSetup,
)

__all__ = ["NAME", "matches", "build"]

NAME = "generic"
_SECTIONS = ("", "model", "lora", "peft", "lora_config", "training", "train", "trainer",
             "training_args", "data", "quantization", "bnb", "hyperparameters")

_MODEL = ("model_name_or_path", "model_name", "base_model", "model_id", "pretrained_model",
          "model_path")
_LORA_R = ("lora_r", "lora_rank", "r", "rank")
_LORA_ALPHA = ("lora_alpha", "alpha")
_LORA_DROPOUT = ("lora_dropout", "dropout")
_TARGETS = ("target_modules", "lora_target_modules", "lora_targets")
_SAVE = ("modules_to_save", "lora_modules_to_save")
_SEQ = ("max_seq_length", "max_seq_len", "max_length", "seq_len", "sequence_length",
        "cutoff_len", "block_size")
_BATCH = ("per_device_train_batch_size", "micro_batch_size", "train_batch_size", "batch_size")
_GAS = ("gradient_accumulation_steps", "grad_accum_steps", "gradient_accumulation")
_OPTIM = ("optim", "optimizer")
_LR = ("learning_rate", "lr")
_WORKERS = ("dataloader_num_workers", "num_workers")
_EPOCHS = ("num_train_epochs", "epochs", "num_epochs")

_LORA_SIGNS = frozenset({"lora_r", "lora_rank", "lora_alpha", "target_modules",
                         "lora_target_modules", "lora_dropout"})
_TRAIN_SIGNS = frozenset(_SEQ + _BATCH + _GAS + _OPTIM + _LR + _EPOCHS + (
    "gradient_checkpointing", "fp16", "bf16", "load_in_4bit", "load_in_8bit"))


def _all_keys(doc: ConfigDoc) -> set[str]:
    keys = set(doc.root.keys())
    for section in _SECTIONS[1:]:
        m = doc.mapping(section)
        if m is not None:
            keys |= set(m.keys())
    return keys


def matches(doc: ConfigDoc, explicit: bool = True) -> bool:
    """LoRA vocabulary plus training or model keys; stricter in folder scans."""
    if "peft_type" in doc.root or "base_model_name_or_path" in doc.root:
        return False  # a saved adapter's adapter_config.json, not a training config
    keys = _all_keys(doc)
    lora = keys & _LORA_SIGNS
    sec_lora = isinstance(doc.node("lora"), YMap) and bool(
        keys & {"r", "rank", "alpha"} & set(doc.mapping("lora").keys()))  # type: ignore[union-attr]
    train = keys & _TRAIN_SIGNS
    model = keys & set(_MODEL)
    if not (lora or sec_lora):
        return False
    if explicit:
        return bool(train or model or len(lora) >= 2)
    return bool(train) and len(lora | train | model) >= 3


def _find(doc: ConfigDoc, names: tuple[str, ...], sections: tuple[str, ...] = _SECTIONS,
          convert: Any = lambda v: v) -> Setting | None:
    for section in sections:
        base = doc.root if section == "" else doc.mapping(section)
        if base is None:
            continue
        for name in names:
            if name in ("r", "rank", "alpha", "dropout") and section not in (
                    "lora", "peft", "lora_config"):
                continue  # too generic outside a LoRA section
            dotted = name if section == "" else f"{section}.{name}"
            s = doc.setting(dotted, convert)
            if s is not None:
                return s
    return None


def _targets(v: Any) -> Any:
    if isinstance(v, str) and v.strip() in ("all-linear", "all_linear"):
        return "all-linear"
    if isinstance(v, str):
        return v.strip()
    return as_module_list(v)


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a generic LoRA config (only what is written)."""
    mf: dict[str, Any] = {}
    name = _find(doc, _MODEL, convert=as_str)
    if name is None and not isinstance(doc.node("model"), YMap):
        name = doc.setting("model", as_str)
    for key in ("model.name", "model.id", "model.path"):
        if name is None:
            name = doc.setting(key, as_str)
    if name is not None:
        mf["name_or_path"] = name
    dtype = _find(doc, ("torch_dtype", "dtype"), convert=as_dtype)
    if dtype is not None:
        mf["torch_dtype"] = dtype
    attn = _find(doc, ("attn_implementation",), convert=as_str)
    if attn is not None:
        mf["attn_implementation"] = attn
    model = ModelLoad(span=name.key_span if name else None, **mf)

    quant = None
    q4 = _find(doc, ("load_in_4bit", "use_4bit"), convert=as_bool)
    q8 = _find(doc, ("load_in_8bit", "use_8bit"), convert=as_bool)
    if q4 is not None and q4.is_(True):
        qf: dict[str, Any] = {"method": derived("bitsandbytes", q4), "bits": derived(4, q4)}
        for field, keys, conv in (
                ("bnb_4bit_quant_type", ("bnb_4bit_quant_type",), as_str),
                ("bnb_4bit_compute_dtype", ("bnb_4bit_compute_dtype",), as_dtype),
                ("bnb_4bit_use_double_quant", ("bnb_4bit_use_double_quant", "use_nested_quant",
                                               "double_quant"), as_bool)):
            s = _find(doc, keys, convert=conv)
            if s is not None:
                qf[field] = s
        quant = Quantization(span=q4.key_span, **qf)
    elif q8 is not None and q8.is_(True):
        quant = Quantization(method=derived("bitsandbytes", q8), bits=derived(8, q8),
                             span=q8.key_span)

    lora = None
    lf: dict[str, Any] = {}
    for field, names, conv in (("r", _LORA_R, as_count), ("lora_alpha", _LORA_ALPHA, as_float),
                               ("lora_dropout", _LORA_DROPOUT, as_float),
                               ("target_modules", _TARGETS, _targets),
                               ("modules_to_save", _SAVE, _targets)):
        s = _find(doc, names, convert=conv)
        if s is not None:
            if field == "lora_alpha" and s.known and float(s.value).is_integer():
                s = derived(int(s.value), s)
            lf[field] = s
    if lf:
        first = next(iter(lf.values()))
        lora = Lora(span=first.key_span, **lf)

    tf: dict[str, Any] = {}
    for field, names, conv in (("per_device_train_batch_size", _BATCH, as_count),
                               ("gradient_accumulation_steps", _GAS, as_count),
                               ("max_seq_length", _SEQ, as_count),
                               ("optim", _OPTIM, as_str), ("learning_rate", _LR, as_float),
                               ("dataloader_num_workers", _WORKERS, as_workers),
                               ("num_train_epochs", _EPOCHS, as_float),
                               ("gradient_checkpointing", ("gradient_checkpointing",), as_bool),
                               ("fp16", ("fp16",), as_bool), ("bf16", ("bf16",), as_bool),
                               ("packing", ("packing",), as_bool),
                               ("deepspeed", ("deepspeed",), lambda v: v),
                               ("fsdp", ("fsdp",), lambda v: v)):
        s = _find(doc, names, convert=conv)
        if s is not None:
            tf[field] = s
    training = TrainingArgs(**tf)
    return doc.new_setup("transformers", NAME, model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(launch_evidence(tf)))
