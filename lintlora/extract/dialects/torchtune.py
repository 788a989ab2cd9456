"""torchtune recipe configs (``tune run lora_finetune_single_device --config x.yaml``).

The model is a builder named by ``model._component_``
(``torchtune.models.llama3_1.lora_llama3_1_8b``): a ``lora_*`` builder is LoRA, a
``qlora_*`` builder (or ``quantize_base: True``) keeps the frozen base in torchao's NF4
(``torchao/dtypes/nf4tensor.py``: ``to_nf4(tensor, block_size=64, scaler_block_size=256)``,
the block scales themselves quantized: QLoRA's double quantization). That is torchao, not
bitsandbytes.

Defaults and behaviour read from pytorch/torchtune:

- ``torchtune/models/llama3_1/_model_builders.py`` (``lora_llama3_1_8b``; every family's LoRA
  builder has the same signature): ``apply_lora_to_mlp = False``,
  ``apply_lora_to_output = False``, ``lora_rank = 8``, ``lora_alpha = 16``,
  ``lora_dropout = 0.0``, ``use_dora = False``; ``lora_attn_modules`` has no default.
- ``recipes/lora_finetune_single_device.py`` / ``lora_finetune_distributed.py``:
  ``enable_activation_checkpointing`` and ``enable_activation_offloading`` are read with
  ``cfg.get(..., False)``; ``batch_size`` and ``dtype`` are required; the recipe rejects fp16
  ("fp16 precision is not supported in this recipe") and trains in ``dtype`` without AMP;
  ``dataset.packed`` is read with ``cfg_dataset.get("packed", False)`` and a list of datasets
  is never packed. ``compile`` defaults to False.
- LoRA module names map to Hugging Face ones as ``torchtune/models/convert_weights.py`` maps
  checkpoints: ``output_proj`` <-> ``o_proj``, ``w1``/``w3``/``w2`` <-> ``gate_proj``/
  ``up_proj``/``down_proj``, ``output`` <-> ``lm_head`` (phi3/phi4: fused ``qkv_proj`` and
  ``gate_up_proj``).

OmegaConf interpolations (``${output_dir}``, ``${batch_size}``) are resolved within the file.
"""

from __future__ import annotations

import re
from typing import Any

from lintlora.extract.dialects._base import (
    ConfigDoc,
    as_bool,
    as_dtype,
    as_float,
    as_count,
    as_str,
    default,
    derived,
)
from lintlora.extract.yaml_loader import YMap, YScalar, YSeq
from lintlora.training_setup import (
    Evidence,
    Lora,
    ModelLoad,
    Origin,
    Quantization,
    Setting,
    Span,
    TrainingArgs,
    TrainingSetup,
)

__all__ = ["NAME", "matches", "build", "hf_module_names"]

NAME = "torchtune"
_SRC_BUILDER = "torchtune torchtune/models/<family>/_model_builders.py (lora_* builders)"
_SRC_RECIPE = ("torchtune recipes/lora_finetune_single_device.py and "
               "lora_finetune_distributed.py")
_SRC_NF4 = "torchao torchao/dtypes/nf4tensor.py to_nf4 (block 64, scaler block 256)"
_SRC_CONVERT = "torchtune torchtune/models/convert_weights.py"
_SRC_DTYPE = "torchtune torchtune/training/precision.py get_dtype (None -> float32)"

_LLAMA_STYLE = frozenset({
    "llama2", "llama3", "llama3_1", "llama3_2", "llama3_3", "code_llama2", "mistral", "qwen2",
    "qwen2_5", "qwen3", "gemma", "gemma2",
})
_PHI3_STYLE = frozenset({"phi3", "phi4"})

_OPTIMIZERS = {
    "torch.optim.AdamW": "adamw_torch",
    "torch.optim.SGD": "sgd",
    "torch.optim.Adafactor": "adafactor",
    "bitsandbytes.optim.PagedAdamW": "paged_adamw_32bit",
    "bitsandbytes.optim.PagedAdamW32bit": "paged_adamw_32bit",
    "bitsandbytes.optim.PagedAdamW8bit": "paged_adamw_8bit",
    "bitsandbytes.optim.AdamW8bit": "adamw_bnb_8bit",
    "torchao.optim.AdamW8bit": "adamw_torch_8bit",
    "torchao.optim.AdamW4bit": "adamw_torch_4bit",
    "torchao.prototype.low_bit_optim.AdamW8bit": "adamw_torch_8bit",
    "torchao.prototype.low_bit_optim.AdamW4bit": "adamw_torch_4bit",
}


def matches(doc: ConfigDoc) -> bool:
    """A top-level section whose ``_component_`` is a ``torchtune.`` name."""
    for entry in doc.root.entries.values():
        node = entry.value
        if isinstance(node, YMap):
            comp = node.get("_component_")
            if comp is not None and isinstance(comp.value, YScalar) and isinstance(
                    comp.value.value, str) and comp.value.value.startswith("torchtune."):
                return True
    return False


def _family_and_builder(component: str) -> tuple[str | None, str]:
    parts = component.split(".")
    builder = parts[-1]
    family = parts[-2] if len(parts) >= 2 and parts[-2] != "models" else None
    return family, builder


def hf_module_names(family: str | None, attn: tuple[str, ...], mlp: bool,
                    output: bool) -> tuple[str, ...] | None:
    """peft-style module names for torchtune's LoRA choices, or ``None`` for an unknown family.

    ``attn`` holds torchtune's names (``q_proj``, ``k_proj``, ``v_proj``, ``output_proj``).
    """
    names: list[str] = []
    if family in _LLAMA_STYLE:
        table = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj",
                 "output_proj": "o_proj"}
        mlp_names = ("gate_proj", "up_proj", "down_proj")
    elif family in _PHI3_STYLE:
        table = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
                 "output_proj": "o_proj"}
        mlp_names = ("gate_up_proj", "down_proj")
    else:
        return None
    for m in attn:
        if m not in table:
            return None
        if table[m] not in names:
            names.append(table[m])
    if mlp:
        names.extend(mlp_names)
    if output:
        names.append("lm_head")
    return tuple(names)


def _attn_list(v: Any) -> tuple[str, ...]:
    if isinstance(v, list) and all(isinstance(i, str) for i in v):
        return tuple(i.strip() for i in v)
    raise ValueError(v)


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a torchtune config."""
    comp = doc.setting("model._component_", as_str)
    family, builder = (_family_and_builder(str(comp.value)) if comp is not None and comp.known
                       else (None, ""))
    is_lora = builder.startswith(("lora_", "qlora_"))
    quantize_base = doc.setting("model.quantize_base", as_bool)
    is_qlora = builder.startswith("qlora_") or (quantize_base is not None
                                               and quantize_base.is_(True))

    # precision: the recipe trains in cfg.dtype, without AMP
    dtype = doc.setting("dtype", as_dtype) or default("float32", _SRC_DTYPE, "dtype")
    mfields: dict[str, Any] = {"torch_dtype": dtype}
    if comp is not None:
        mfields["name_or_path"] = comp
    model = ModelLoad(span=comp.key_span if comp else None, **mfields)

    quant = None
    if is_qlora and comp is not None:
        decider = comp if builder.startswith("qlora_") else quantize_base
        quant = Quantization(
            method=derived("torchao", decider, _SRC_NF4),  # type: ignore[arg-type]
            bits=derived(4, decider, _SRC_NF4),  # type: ignore[arg-type]
            bnb_4bit_quant_type=derived("nf4", decider, _SRC_NF4),  # type: ignore[arg-type]
            bnb_4bit_use_double_quant=derived(True, decider, _SRC_NF4),  # type: ignore[arg-type]
            bnb_4bit_compute_dtype=dtype,
            span=comp.key_span,
        )

    lora = _lora(doc, family, comp) if is_lora else None
    training, launch = _training(doc, dtype)
    is_training = doc.has("optimizer") or is_lora
    return doc.new_setup("torchtune", NAME, model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(launch), is_training=is_training)


def _lora(doc: ConfigDoc, family: str | None, comp: Setting | None) -> Lora:
    src = _SRC_BUILDER
    attn = doc.setting("model.lora_attn_modules", _attn_list)
    mlp = doc.setting("model.apply_lora_to_mlp", as_bool) or default(False, src,
                                                                     "model.apply_lora_to_mlp")
    out = doc.setting("model.apply_lora_to_output", as_bool) or default(
        False, src, "model.apply_lora_to_output")
    if attn is not None and attn.known and mlp.known and out.known:
        names = hf_module_names(family, attn.value, bool(mlp.value), bool(out.value))
        if names is not None:
            targets = Setting(names, attn.origin, attn.span, attn.key_span,
                              f"{_SRC_CONVERT} (torchtune names {list(attn.value)}"
                              f"{', MLP' if mlp.value else ''}{', output' if out.value else ''})",
                              "model.lora_attn_modules")
        else:
            targets = Setting(None, Origin.UNKNOWN, attn.span, attn.key_span, None,
                              f"model.lora_attn_modules for torchtune family {family!r}")
    elif attn is not None and not attn.known:
        targets = attn
    else:
        targets = Setting(None, Origin.UNKNOWN, attn.span if attn else None,
                          attn.key_span if attn else None, None, "model.lora_attn_modules")
    extra = {"apply_lora_to_mlp": mlp, "apply_lora_to_output": out}
    if attn is not None:
        extra["lora_attn_modules"] = attn
    return Lora(
        r=doc.setting("model.lora_rank", as_count) or default(8, src, "model.lora_rank"),
        lora_alpha=doc.setting("model.lora_alpha", _number) or default(16, src,
                                                                       "model.lora_alpha"),
        lora_dropout=doc.setting("model.lora_dropout", as_float)
        or default(0.0, src, "model.lora_dropout"),
        target_modules=targets,
        modules_to_save=default(None, src, "model"),
        use_dora=doc.setting("model.use_dora", as_bool) or default(False, src, "model.use_dora"),
        span=comp.key_span if comp else None,
        extra=extra,
    )


def _number(v: Any) -> int | float:
    """An int when integral (``16``), else a float (``16.5``)."""
    value = as_float(v)
    return int(value) if value.is_integer() else value


def _seq_len(v: Any) -> int | None:
    return None if v is None else as_count(v)


def _training(doc: ConfigDoc, dtype: Setting) -> tuple[TrainingArgs, list[Evidence]]:
    f: dict[str, Any] = {}
    bs = doc.setting("batch_size", as_count)
    if bs is not None:
        f["per_device_train_batch_size"] = bs
    gas = doc.setting("gradient_accumulation_steps", as_count)
    if gas is not None:
        f["gradient_accumulation_steps"] = gas
    seq = None
    for key in ("tokenizer.max_seq_len", "dataset.max_seq_len", "max_seq_len"):
        seq = doc.setting(key, _seq_len)
        if seq is not None:
            break
    if seq is not None:
        f["max_seq_length"] = seq
    if isinstance(doc.node("dataset"), YSeq):
        f["packing"] = derived(False, doc.setting("dataset") or Setting(),
                               _SRC_RECIPE + " (a list of datasets is not packed)", "dataset")
    else:
        f["packing"] = doc.setting("dataset.packed", as_bool) or default(False, _SRC_RECIPE,
                                                                        "dataset.packed")
    f["gradient_checkpointing"] = (doc.setting("enable_activation_checkpointing", as_bool)
                                   or default(False, _SRC_RECIPE,
                                              "enable_activation_checkpointing"))
    if dtype.known:
        f["bf16"] = derived(dtype.value == "bfloat16", dtype)
        f["fp16"] = derived(dtype.value == "float16", dtype)
    f["torch_compile"] = doc.setting("compile", as_bool) or default(False, _SRC_RECIPE,
                                                                    "compile")
    opt = doc.setting("optimizer._component_", as_str)
    if opt is not None and opt.known:
        name = _OPTIMIZERS.get(str(opt.value), str(opt.value))
        fused = doc.setting("optimizer.fused", as_bool)
        if name == "adamw_torch" and fused is not None and fused.is_(True):
            name = "adamw_torch_fused"
        f["optim"] = derived(name, opt)
    elif opt is not None:
        f["optim"] = opt
    lr = doc.setting("optimizer.lr", as_float)
    if lr is not None:
        f["learning_rate"] = lr
    epochs = doc.setting("epochs", as_float)
    if epochs is not None:
        f["num_train_epochs"] = epochs
    extra: dict[str, Setting] = {}
    for key in ("enable_activation_offloading", "optimizer_in_bwd", "max_steps_per_epoch",
                "loss._component_"):
        s = doc.setting(key)
        if s is not None:
            extra[key.split(".")[0]] = s
    trainer = _preference_trainer(extra.get("loss"))
    if trainer is not None:
        extra["trainer"] = trainer
    launch: list[Evidence] = []
    for key in ("fsdp_cpu_offload", "fsdp_reshard_after_forward", "tensor_parallel_dim",
                "data_parallel_shard_dim"):
        s = doc.setting(key)
        if s is not None:
            launch.append(Evidence("fsdp", s.key_span, f"{key} (a distributed recipe option)"))
            break
    if not launch:
        launch += _distributed_header(doc)
    return TrainingArgs(extra=extra, **f), launch


_DISTRIBUTED_RECIPE = re.compile(r"\btune\s+run\b.*?\b(\w+_distributed)\b")
_NPROC = re.compile(r"--nproc_per_node[\s=]+(\d{1,4})\b")


def _distributed_header(doc: ConfigDoc) -> list[Evidence]:
    """The launch a torchtune config's header comment gives: every config in torchtune's
    ``recipes/configs`` opens with the ``tune run`` command it is meant for (``tune run
    --nproc_per_node 8 lora_finetune_distributed --config llama3_3/70B_lora``), and a
    distributed recipe shards the model with FSDP over the processes (torchtune
    ``recipes/lora_finetune_distributed.py``), which the one-device estimate does not model.
    Only a ``tune run`` line naming a ``*_distributed`` recipe with more than one process
    (or no count) counts; a comment is the author's word, so it is evidence of a sharded run,
    never a value."""
    for number, comment in doc.header_comments():
        m = _DISTRIBUTED_RECIPE.search(comment)
        if not m:
            continue
        n = _NPROC.search(comment)
        if n and int(n.group(1)) <= 1:
            continue
        span = Span(doc.path, number, 1)
        return [Evidence("fsdp", span, f"the config's header runs it with {m.group(1)}"
                         + (f" on {n.group(1)} processes" if n else ""))]
    return []


# torchtune's preference losses (torchtune/rlhf/loss/dpo.py @ bd2a0fc7c314: DPOLoss, RSOLoss;
# older releases: torchtune.modules.rlhf.loss, with IPOLoss and SimPOLoss), as the
# ``--trainer`` key whose sequence shape they train with. The DPO recipes
# (recipes/lora_dpo_single_device.py, lora_dpo_distributed.py, full_dpo_distributed.py) run
# chosen and rejected concatenated along the batch (``concatenated_forward``: padded_collate_dpo
# stacks both, ``len_chosen = input_ids.shape[0] // 2``), and the LoRA recipes take the
# reference forward under ``disable_adapter(self._model)``, no second copy; the full recipe loads
# a reference model (``full_dpo_distributed.py``: ``self._ref_model``).
_PREFERENCE_LOSSES = {"DPOLoss": "dpo", "RSOLoss": "dpo", "IPOLoss": "ipo", "SimPOLoss": "simpo"}


def _preference_trainer(loss: Setting | None) -> Setting | None:
    """``training.extra["trainer"]`` for a ``loss._component_`` naming a preference loss."""
    if loss is None or not loss.known or not isinstance(loss.value, str):
        return None
    module, _, cls = loss.value.strip().rpartition(".")
    key = _PREFERENCE_LOSSES.get(cls)
    if key is None or not module.startswith("torchtune.") or "rlhf" not in module:
        return None
    return derived(key, loss, f"loss._component_: {cls} (torchtune recipes/lora_dpo_single_device.py "
                   "concatenated_forward: chosen and rejected in one batch)")
