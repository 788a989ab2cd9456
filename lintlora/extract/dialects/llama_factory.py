"""LLaMA-Factory configs: the flat v0 schema (``llamafactory-cli train x.yaml``) and the nested v1.

v0 defaults and behaviour, read from hiyouga/LLaMA-Factory:

- ``src/llamafactory/hparams/model_args.py`` @ ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30:
  ``disable_gradient_checkpointing = False`` (LLaMA-Factory enables gradient checkpointing
  itself, with ``use_reentrant_gc = True``, unless this is set), ``flash_attn = "auto"``
  (``auto``/``disabled``/``sdpa``/``fa2``/``fa3``), ``quantization_method = "bnb"`` (older
  releases spell it ``bitsandbytes``; ``hqq``, ``eetq``, ``gptq``, ``awq`` are other
  libraries), ``quantization_bit = None``, ``quantization_type = "nf4"``,
  ``double_quantization = True``, ``enable_liger_kernel = False``, ``use_unsloth = False``.
- ``src/llamafactory/model/model_utils/checkpointing.py`` @
  908cd68e457daf38e7aae14cbc99e5ac01524496: ``use_unsloth_gc`` (default ``False``) swaps the
  checkpoint function for one that copies each checkpointed layer input to CPU RAM; it applies
  only where checkpointing is on (``disable_gradient_checkpointing`` false), and does not turn
  it on. Kept in ``training.extra["use_unsloth_gc"]``; with checkpointing on it is also
  ``training.extra["gradient_checkpointing_mode"] = "unsloth"`` (offloaded inputs).
- ``src/llamafactory/hparams/model_args.py`` also takes ``add_tokens``/``add_special_tokens``
  (``new_special_tokens`` in older releases) and ``resize_vocab``: tokens added to the
  tokenizer and the embedding resized; recorded as ``model.extra["added_tokens"]``.
- ``src/llamafactory/hparams/finetuning_args.py`` @ 00577a85775a2a78b14641ff8f68c58c6f46b027:
  ``finetuning_type = "lora"``, ``lora_rank = 8``, ``lora_alpha = None`` ("default:
  lora_rank * 2"), ``lora_dropout = 0.0``, ``lora_target = "all"`` ("all the linear modules"),
  ``additional_target = None`` (modules trained in full and saved), ``stage = "sft"``.
- ``src/llamafactory/hparams/data_args.py`` @ 072bfe29d3b10447b0702196028af2f0fb87ad6b:
  ``cutoff_len = 2048``, ``packing = None`` ("will automatically enable in pre-training"),
  ``neat_packing`` implies packing, ``preprocessing_num_workers`` = processes for dataset
  ``map`` (not DataLoader workers: ``dataloader_num_workers`` is the TrainingArguments key).
- Training keys are ``Seq2SeqTrainingArguments`` fields, whose defaults come from
  :mod:`lintlora.extract.defaults`. Training runs only with ``do_train: true``.

v1 (``examples/v1/...``): ``model``, ``peft_config{name, r, lora_alpha, target_modules}``,
``quant_config{name, quantization_bit}``, ``dist_config{name}``, ``micro_batch_size``,
``cutoff_len``, ``bf16``, ``kernel_config{name}``. Defaults read at hiyouga/LLaMA-Factory
ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30 (2026-08-18):

- ``src/llamafactory/v1/config/training_args.py`` (last changed 3f7710158067, 2026-07-24):
  ``micro_batch_size = 1``, ``cutoff_len = 2048``, ``bf16 = True``,
  ``enable_activation_checkpointing = True`` (``core/base_trainer.py`` then calls
  ``model.gradient_checkpointing_enable({"use_reentrant": False})``),
  ``batching_strategy = "normal"`` (padded batches). These defaults changed between v1
  revisions: ``enable_activation_checkpointing`` and ``bf16`` were ``False`` from 45d335c70
  (2026-02-28) to c4bbac49b (2026-04-20) and have been ``True`` since 28a6ea1cd (2026-04-21);
  the current ones are used, and each names its source in the setting.
- ``src/llamafactory/v1/config/model_args.py``: ``flash_attn = "sdpa"``,
  ``kernel_config = None``. ``kernel_config.name`` lists kernels; ``liger_kernel`` applies
  Liger's RMSNorm/SwiGLU/RoPE, but ``core/model_engine.py`` passes ``require_logits=is_train``
  and ``plugins/model_plugins/kernels/liger_kernel_ops.py`` then turns
  ``fused_linear_cross_entropy`` off and plain ``cross_entropy`` on: a v1 training run
  never gets Liger's fused loss (``training.extra["liger_fused_loss"] = False``).
"""

from __future__ import annotations

from typing import Any

from lintlora.extract.dialects._base import (
    ConfigDoc,
    added_tokens,
    as_bool,
    as_float,
    as_count,
    as_int,
    as_module_list,
    as_str,
    default,
    derived,
)
from lintlora.extract.dialects._rl import llama_factory_rl
from lintlora.extract.dialects.hf_args import tf32_setting, training_arguments
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

__all__ = ["NAME", "NAME_V1", "matches", "matches_v1", "build", "build_v1"]

NAME = "llama-factory"
NAME_V1 = "llama-factory-v1"
_SRC_MODEL = "LLaMA-Factory src/llamafactory/hparams/model_args.py @ ff6d4d12eeb035"
_SRC_FT = "LLaMA-Factory src/llamafactory/hparams/finetuning_args.py @ 00577a85775a2a"
_SRC_DATA = "LLaMA-Factory src/llamafactory/hparams/data_args.py @ 072bfe29d3b104"
_SRC_GC = "LLaMA-Factory src/llamafactory/model/model_utils/checkpointing.py @ 908cd68e457daf"
_SRC_V1 = "LLaMA-Factory src/llamafactory/v1/config/training_args.py @ ff6d4d12eeb035"
_SRC_V1_MODEL = "LLaMA-Factory src/llamafactory/v1/config/model_args.py @ ff6d4d12eeb035"
_SRC_V1_LIGER = ("LLaMA-Factory src/llamafactory/v1/plugins/model_plugins/kernels/liger_kernel_ops.py "
                 "@ ff6d4d12eeb035 (require_logits in training: fused_linear_cross_entropy off)")
# v1 defaults (see the module docstring): (TrainingArgs field, v1 key, default)
_V1_DEFAULTS = {"max_seq_length": ("cutoff_len", 2048), "bf16": ("bf16", True),
                "gradient_checkpointing": ("enable_activation_checkpointing", True)}

_LF_ONLY = frozenset({
    "finetuning_type", "stage", "lora_target", "cutoff_len", "quantization_bit",
    "quantization_method", "additional_target", "disable_gradient_checkpointing", "flash_attn",
    "template", "plot_loss", "val_size", "dataset_dir", "use_unsloth_gc", "pure_bf16",
    "upcast_layernorm", "neat_packing", "use_reentrant_gc", "enable_liger_kernel",
    "double_quantization",
})
_V1_KEYS = frozenset({"peft_config", "quant_config", "dist_config", "model_class",
                      "kernel_config", "train_dataset", "init_config", "optim_config"})

_ATTN = {"fa2": "flash_attention_2", "fa3": "flash_attention_3", "sdpa": "sdpa",
         "disabled": "eager", "eager": "eager", "flash_attention_2": "flash_attention_2"}


def _attn(v: Any) -> str | None:
    """``flash_attn`` -> ``attn_implementation``; ``auto`` leaves the choice to transformers."""
    text = as_str(v).lower()
    if text == "auto":
        return None
    return _ATTN.get(text, text)


def matches(doc: ConfigDoc) -> bool:
    """A v0 file: LLaMA-Factory-only keys with ``model_name_or_path`` (or a method key)."""
    keys = set(doc.root.keys())
    lf = keys & _LF_ONLY
    if not lf:
        return False
    return ("model_name_or_path" in keys or "finetuning_type" in keys or "stage" in keys
            or len(lf) >= 3)


def matches_v1(doc: ConfigDoc) -> bool:
    """A v1 file: ``model`` as a name plus one of the nested ``*_config`` sections."""
    model = doc.setting("model")
    return (model is not None and isinstance(model.value, str)
            and bool(set(doc.root.keys()) & _V1_KEYS))


# ---- v0 -----------------------------------------------------------------------------------------
def _split(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() == "all":
        return "all-linear"
    return as_module_list(v)


def _precision_dtype(training: dict[str, Setting]) -> Setting:
    bf16 = training.get("bf16")
    fp16 = training.get("fp16")
    if bf16 is not None and bf16.is_(True):
        return derived("bfloat16", bf16)
    if fp16 is not None and fp16.is_(True):
        return derived("float16", fp16)
    return Setting(None, Origin.UNKNOWN, None, None, None,
                   "neither bf16 nor fp16: LLaMA-Factory infers the dtype from the model and GPU")


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a LLaMA-Factory v0 config."""
    fields, launch = training_arguments(doc, "Seq2SeqTrainingArguments")
    pure = doc.setting("pure_bf16", as_bool)
    if pure is not None and pure.is_(True):
        fields["bf16"] = derived(True, pure, "LLaMA-Factory pure_bf16 (bf16 without AMP)")
    dtype = _precision_dtype(fields)
    if pure is not None and pure.is_(True):
        dtype = derived("bfloat16", pure)

    name = doc.setting("model_name_or_path", as_str)
    mfields: dict[str, Any] = {"torch_dtype": dtype}
    if name is not None:
        mfields["name_or_path"] = name
    attn = doc.setting("flash_attn", _attn)
    if attn is None:
        attn = default(None, _SRC_MODEL + " (flash_attn = auto: transformers chooses)",
                       "flash_attn")
    mfields["attn_implementation"] = attn
    trc = doc.setting("trust_remote_code", as_bool)
    if trc is not None:
        mfields["trust_remote_code"] = trc
    mfields["extra"] = added_tokens(doc, ("add_tokens", "add_special_tokens", "new_special_tokens",
                                          "resize_vocab"), _SRC_MODEL + " (add_tokens, "
                                    "add_special_tokens, new_special_tokens, resize_vocab)")
    model = ModelLoad(span=name.key_span if name else None, **mfields)

    quant = _quantization(doc, dtype)
    lora = _lora(doc)

    # checkpointing: on unless disable_gradient_checkpointing (LLaMA-Factory calls
    # model.gradient_checkpointing_enable itself; the TrainingArguments key is not used).
    disable = doc.setting("disable_gradient_checkpointing", as_bool)
    if disable is None:
        gc = default(True, _SRC_MODEL + " (on unless disable_gradient_checkpointing)",
                     "disable_gradient_checkpointing")
    elif disable.known:
        gc = derived(not disable.value, disable)
    else:
        gc = disable
    fields["gradient_checkpointing"] = gc
    # use_unsloth_gc picks the checkpoint function (each checkpointed layer input copied to CPU
    # RAM), it does not turn checkpointing on: checkpointing.py prepare_model_for_training
    # passes it to _gradient_checkpointing_enable only under `if not
    # disable_gradient_checkpointing`. Kept as written in the section's extra; where
    # checkpointing is on, it is the "unsloth" mode the estimator reads as offloaded inputs.
    unsloth_gc = doc.setting("use_unsloth_gc", as_bool)
    if gc.is_(True):
        reentrant = doc.setting("use_reentrant_gc", as_bool)
        fields["gradient_checkpointing_kwargs"] = (
            derived({"use_reentrant": reentrant.value}, reentrant) if reentrant is not None
            and reentrant.known else default({"use_reentrant": True}, _SRC_MODEL,
                                             "use_reentrant_gc"))

    fields["max_seq_length"] = (doc.setting("cutoff_len", as_count)
                                or default(2048, _SRC_DATA, "cutoff_len"))
    stage = doc.setting("stage", as_str) or default("sft", _SRC_FT, "stage")
    packing = doc.setting("packing", lambda v: None if v is None else as_bool(v))
    neat = doc.setting("neat_packing", as_bool)
    if neat is not None and neat.is_(True):
        packing = derived(True, neat)
    if packing is None or (packing.known and packing.value is None):
        packing = default(stage.is_("pt"), _SRC_DATA + " (packing = None: on for stage pt)",
                          "packing")
    fields["packing"] = packing
    liger = doc.setting("enable_liger_kernel", as_bool)
    fields["use_liger_kernel"] = liger or default(False, _SRC_MODEL, "enable_liger_kernel")

    extra: dict[str, Setting] = {"stage": stage}
    # stage dpo (CustomDPOTrainer, a trl DPOTrainer) and rm (PairwiseTrainer) feed each example's
    # chosen and rejected completions as one batch (PairwiseDataCollatorWithPadding; dpo/trainer.py
    # concatenated_forward: batch_size = input_ids.size(0) // 2), LLaMA-Factory @ ff6d4d12eeb0;
    # kto and ppo: dialects/_rl.py
    extra.update(llama_factory_rl(doc, stage))
    if unsloth_gc is not None:
        extra["use_unsloth_gc"] = unsloth_gc
        if unsloth_gc.is_(True) and gc.is_(True):
            extra["gradient_checkpointing_mode"] = derived(
                "unsloth", unsloth_gc, _SRC_GC + " (use_unsloth_gc: checkpointed layer inputs "
                "offloaded to CPU RAM)")
    # use_galore / use_apollo / use_badam (LLaMA-Factory src/llamafactory/train/trainer_utils.py
    # create_custom_optimizer), use_kt (KTransformers: MoE experts on the CPU, hparams/model_args.py)
    # and the Megatron parallel sizes (mcore_adapter) change what a
    # rank holds in ways the estimator does not model: kept for LL008 (rules/ll008 _not_modelled)
    for key in ("preprocessing_num_workers", "use_unsloth", "finetuning_type", "use_galore",
                "use_apollo", "use_badam", "use_kt", "tensor_model_parallel_size",
                "pipeline_model_parallel_size"):
        s = doc.setting(key)
        if s is not None:
            extra[key] = s
    tf32 = tf32_setting(doc)
    if tf32 is not None:
        extra["tf32"] = tf32
    launch += _header_launch(doc)
    if doc.has("fsdp_config") and not any(e.kind == "fsdp" for e in launch):
        where = doc.setting("fsdp_config")
        launch.append(Evidence("fsdp", where.span if where else None, "fsdp_config"))
    training = TrainingArgs(extra=extra, **fields)
    do_train = doc.setting("do_train", as_bool)
    framework = "unsloth" if (s := doc.setting("use_unsloth", as_bool)) is not None and s.is_(
        True) else "llama-factory"
    return doc.new_setup(framework, NAME, model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(launch),
                         is_training=bool(do_train is not None and do_train.is_(True)))


def _quantization(doc: ConfigDoc, compute: Setting) -> Quantization | None:
    bits = doc.setting("quantization_bit", lambda v: None if v is None else as_count(v))
    if bits is None or (bits.known and bits.value is None):
        return None
    method = doc.setting("quantization_method", lambda v: str(v).strip().lower())
    if method is None:
        method = default("bitsandbytes", _SRC_MODEL + " (quantization_method = bnb)",
                         "quantization_method")
    elif method.known and method.value in ("bnb", "bitsandbytes"):
        method = derived("bitsandbytes", method)
    fields: dict[str, Any] = {"method": method, "bits": bits}
    if method.is_("bitsandbytes") and bits.is_(4):
        fields["bnb_4bit_quant_type"] = (doc.setting("quantization_type", as_str)
                                         or default("nf4", _SRC_MODEL, "quantization_type"))
        fields["bnb_4bit_use_double_quant"] = (doc.setting("double_quantization", as_bool)
                                               or default(True, _SRC_MODEL,
                                                          "double_quantization"))
        fields["bnb_4bit_compute_dtype"] = compute
    return Quantization(span=bits.key_span, **fields)


def _lora(doc: ConfigDoc) -> Lora | None:
    ftype = doc.setting("finetuning_type", as_str) or default("lora", _SRC_FT, "finetuning_type")
    if not ftype.is_("lora"):
        return None
    r = doc.setting("lora_rank", as_count) or default(8, _SRC_FT, "lora_rank")
    alpha = doc.setting("lora_alpha", as_int)
    if alpha is None:
        alpha = (Setting(r.value * 2, Origin.LIBRARY_DEFAULT, None, None,
                         _SRC_FT + " (lora_alpha = lora_rank * 2)", "lora_alpha")
                 if r.known else Setting.unknown("lora_alpha (lora_rank * 2)"))
    return Lora(
        r=r,
        lora_alpha=alpha,
        lora_dropout=doc.setting("lora_dropout", as_float) or default(0.0, _SRC_FT,
                                                                      "lora_dropout"),
        target_modules=doc.setting("lora_target", _split)
        or default("all-linear", _SRC_FT + " (lora_target = all: every linear layer but the "
                   "output layer)", "lora_target"),
        modules_to_save=doc.setting("additional_target", as_module_list)
        or default(None, _SRC_FT, "additional_target"),
        use_dora=doc.setting("use_dora", as_bool) or default(False, _SRC_FT, "use_dora"),
        use_rslora=doc.setting("use_rslora", as_bool) or default(False, _SRC_FT, "use_rslora"),
        span=ftype.key_span,
    )


def _header_launch(doc: ConfigDoc) -> list[Evidence]:
    """The sharded launch a config's header comment gives (LLaMA-Factory's examples/ascend
    configs open with ``# accelerate launch \\`` / ``#     --config_file
    examples/accelerate/fsdp_config.yaml \\`` / ``#     src/train.py <this config>``, at
    ff6d4d12), read as a script's docstring launch is (:func:`lintlora.extract.pylaunch.
    docstring_launch`): comment lines continued with a backslash are joined; evidence of a
    sharded run, never a value."""
    from lintlora.extract.pylaunch import docstring_launch

    logical: list[tuple[int, str]] = []
    for number, comment in doc.header_comments():
        if logical and logical[-1][1].endswith("\\"):
            logical[-1] = (logical[-1][0], logical[-1][1][:-1] + " " + comment)
        else:
            logical.append((number, comment))
    for number, text in logical:
        found = docstring_launch(text, text, doc.path)
        if found:
            return [Evidence(found[0].kind, Span(doc.path, number, 1),
                             "the config's header comment launches it: " + text[:200])]
    return []


# ---- v1 -----------------------------------------------------------------------------------------
def build_v1(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a LLaMA-Factory v1 (nested) config."""
    name = doc.setting("model", as_str)
    mfields: dict[str, Any] = {}
    if name is not None:
        mfields["name_or_path"] = name
    attn = doc.setting("flash_attn", _attn)
    if attn is not None:
        mfields["attn_implementation"] = attn
    trc = doc.setting("trust_remote_code", as_bool)
    if trc is not None:
        mfields["trust_remote_code"] = trc

    tf: dict[str, Any] = {}
    tf["per_device_train_batch_size"] = (doc.setting("micro_batch_size", as_count)
                                         or default(1, _SRC_V1, "micro_batch_size"))
    for field, key, conv in (("max_seq_length", "cutoff_len", as_count),
                             ("bf16", "bf16", as_bool),
                             ("gradient_checkpointing", "enable_activation_checkpointing",
                              as_bool),
                             ("learning_rate", "learning_rate", as_float),
                             ("max_steps", "max_steps", as_int),
                             ("num_train_epochs", "num_train_epochs", as_float),
                             ("optim", "optim_config.name", as_str)):
        s = doc.setting(key, conv)
        if s is not None:
            tf[field] = s
        elif field in _V1_DEFAULTS:
            tf[field] = default(_V1_DEFAULTS[field][1], _SRC_V1, key)
    if attn is None:
        mfields["attn_implementation"] = default("sdpa", _SRC_V1_MODEL + " (flash_attn = sdpa)", "flash_attn")
    kernels = doc.setting("kernel_config.name", as_str)
    if kernels is not None and kernels.known and "liger" in str(kernels.value).lower():
        tf["use_liger_kernel"] = derived(True, kernels)
    bf16 = tf.get("bf16")
    if bf16 is not None and bf16.known:
        mfields["torch_dtype"] = derived("bfloat16" if bf16.value else "float32", bf16)
    extra: dict[str, Setting] = {}
    if "use_liger_kernel" in tf:
        extra["liger_fused_loss"] = default(False, _SRC_V1_LIGER, "kernel_config.name")
    gbs = doc.setting("global_batch_size", as_int)
    if gbs is not None:
        extra["global_batch_size"] = gbs

    quant = None
    qname = doc.setting("quant_config.name", as_str)
    if qname is not None:
        qbits = doc.setting("quant_config.quantization_bit", as_count) or Setting.unknown(
            "quant_config.quantization_bit")
        method = (derived("bitsandbytes", qname) if qname.is_("bnb")
                  else Setting(None, Origin.UNKNOWN, qname.span, qname.key_span, None,
                               f"quant_config.name: {qname.value}"))
        qfields: dict[str, Any] = {}
        if qname.is_("bnb"):
            qbits, qfields = _v1_bnb(doc, qbits)
        quant = Quantization(method=method, bits=qbits, span=qname.key_span, **qfields)

    lora = None
    pname = doc.setting("peft_config.name", as_str)
    if pname is not None and pname.is_("lora"):
        lfields: dict[str, Any] = {}
        for field, key, conv in (("r", "peft_config.r", as_count),
                                 ("lora_alpha", "peft_config.lora_alpha", as_int),
                                 ("lora_dropout", "peft_config.lora_dropout", as_float),
                                 ("target_modules", "peft_config.target_modules", _split),
                                 ("modules_to_save", "peft_config.modules_to_save",
                                  as_module_list)):
            s = doc.setting(key, conv)
            if s is not None:
                lfields[field] = s
        lora = Lora(span=pname.key_span, **lfields)

    launch: list[Evidence] = []
    dist = doc.setting("dist_config.name", as_str)
    if dist is not None and dist.known:
        kind = "deepspeed" if "deepspeed" in str(dist.value).lower() else "fsdp"
        launch.append(Evidence(kind, dist.span, f"dist_config.name: {dist.value}"))
        tf["deepspeed" if kind == "deepspeed" else "fsdp"] = dist
    model = ModelLoad(span=name.key_span if name else None, **mfields)
    return doc.new_setup("llama-factory", NAME_V1, model=model, quantization=quant, lora=lora,
                         training=TrainingArgs(extra=extra, **tf), launch=tuple(launch))


_SRC_V1_BNB = ("LLaMA-Factory src/llamafactory/v1/plugins/model_plugins/quantization.py @ ff6d4d12eeb0 "
               "(BnbParams)")


def _as_dtype(v: Any) -> Any:
    from lintlora.extract.dialects._base import as_dtype

    return as_dtype(v)


def _v1_bnb(doc: ConfigDoc, bits: Setting) -> tuple[Setting, dict[str, Setting]]:
    """A v1 ``quant_config: {name: bnb}``'s bits and BitsAndBytesConfig fields with v1's own
    defaults (``BnbParams``: ``quantization_bit`` None -> 4-bit, ``quantization_type: nf4``,
    ``double_quantization: True``, ``compute_dtype: float16`` (read only where written), passed as
    ``BitsAndBytesConfig(bnb_4bit_quant_type=..., bnb_4bit_use_double_quant=...,
    bnb_4bit_compute_dtype=...)``), not bitsandbytes' (fp4, no double quantization)."""
    if not doc.has("quant_config.quantization_bit"):
        bits = default(4, _SRC_V1_BNB + ": quantization_bit not specified defaults to 4-bit",
                       "quant_config.quantization_bit")
    if not bits.is_(4):
        return bits, {}
    fields = {
        "bnb_4bit_quant_type": doc.setting("quant_config.quantization_type", as_str)
        or default("nf4", _SRC_V1_BNB, "quant_config.quantization_type"),
        "bnb_4bit_use_double_quant": doc.setting("quant_config.double_quantization", as_bool)
        or default(True, _SRC_V1_BNB, "quant_config.double_quantization"),
    }
    # compute_dtype (v1 default "float16") is taken only as written: it changes no byte of the
    # estimate, and a library default is no ground for LL002's fp16 finding on v1's own example
    written = doc.setting("quant_config.compute_dtype", _as_dtype)
    if written is not None:
        fields["bnb_4bit_compute_dtype"] = written
    return bits, fields
