"""axolotl configs (``axolotl train config.yml``): flat keys, axolotl's own defaults.

Defaults and behaviour, read from axolotl's source (axolotl-ai-cloud/axolotl):

- ``src/axolotl/utils/schemas/config.py`` @ 002a637c86864c8acf451757ee45040b5ea5e25f
  (``AxolotlInputConfig``): ``bf16 = "auto"``, ``fp16 = None``,
  ``gradient_checkpointing: Literal["offload", "offload_disk"] | bool | None = False``,
  ``sequence_len = 512``, ``sample_packing = None``, ``dataloader_num_workers = None``
  (TrainingArguments' own default then applies).
- ``src/axolotl/utils/schemas/training.py`` @ 002a637c (``HyperparametersConfig``):
  ``micro_batch_size = 1``, ``gradient_accumulation_steps = 1``,
  ``optimizer = OptimizerNames.ADAMW_TORCH_FUSED``, ``num_epochs = 1.0``.
- ``src/axolotl/utils/schemas/peft.py`` @ 00564c8f9909b0a895823b620145c0618991cb55
  (``LoraConfig``): ``load_in_4bit/8bit = False``, ``lora_r``/``lora_alpha`` = None (no
  default: peft needs them), ``lora_dropout`` 0.0 when an adapter is set,
  ``lora_target_linear`` = None; ``adapter: qlora`` requires ``load_in_4bit: true``;
  ``peft: {backend: torchao, weight_dtype: nf4}`` is torchao quantization, not bitsandbytes.
- ``src/axolotl/utils/config/__init__.py`` @ 00ce8882ab23c7e72e4d705b6dec41c9a2dcf94a
  (``resolve_dtype``): ``bf16: auto`` becomes ``True`` on GPUs with bf16 support, otherwise
  ``False`` with ``fp16`` turned on; ``fp16: true`` turns ``bf16: auto`` off; the model is
  loaded in bfloat16 when bf16, in float16 when ``load_in_8bit`` or fp16, else in float32.
  ``normalize_config`` sets ``gradient_checkpointing_kwargs = {"use_reentrant": True}`` when
  checkpointing is on and no kwargs are given.
- ``src/axolotl/loaders/model.py`` @ 002a637c (``_set_quantization_config``): QLoRA loads with
  ``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=cfg.torch_dtype,
  bnb_4bit_use_double_quant=True, bnb_4bit_quant_type="nf4", ...)`` updated by
  ``bnb_config_kwargs``; ``_set_attention_config`` maps ``flash_attention`` ->
  ``flash_attention_2``, ``sdp_attention`` -> ``sdpa``, ``flex_attention``, ``eager_attention``.
- ``src/axolotl/loaders/tokenizer.py`` (``TokenizerPostProcessor``): ``tokens`` are added with
  ``add_tokens``, ``special_tokens`` with ``add_special_tokens`` (and, with an adapter, a changed
  special token raises "Please set lora_modules_to_save to [...]" unless the embedding and
  output layers are listed); ``added_tokens_overrides`` renames reserved tokens. Recorded as
  ``model.extra["added_tokens"]``.
- ``src/axolotl/utils/schemas/fsdp.py`` @ 06dcd85d0287: ``fsdp_config.activation_checkpointing``
  (``fsdp_activation_checkpointing`` in the older prefixed spelling) checkpoints activations
  under FSDP in place of ``gradient_checkpointing``.
"""

from __future__ import annotations

from typing import Any

from lintlora.extract.dialects._rl import axolotl_rl
from lintlora.extract.dialects._base import (
    BadValue,
    ConfigDoc,
    added_tokens,
    as_bool,
    as_float,
    as_count,
    as_int,
    as_workers,
    as_module_list,
    as_str,
    default,
    derived,
)
from lintlora.extract.dialects.hf_args import tf32_setting
from lintlora.extract.yaml_loader import YMap, YSeq
from lintlora.training_setup import (
    Evidence,
    Lora,
    ModelLoad,
    Origin,
    Quantization,
    Setting,
    TrainingArgs,
    TrainingSetup,
)

__all__ = ["NAME", "matches", "build"]

NAME = "axolotl"
_SRC_CONFIG = "axolotl src/axolotl/utils/schemas/config.py @ 002a637c86864c"
_SRC_TRAINING = "axolotl src/axolotl/utils/schemas/training.py @ 002a637c86864c"
_SRC_PEFT = "axolotl src/axolotl/utils/schemas/peft.py @ 00564c8f9909b0"
_SRC_DTYPE = "axolotl src/axolotl/utils/config/__init__.py resolve_dtype @ 00ce8882ab23c7"
_SRC_NORMALIZE = "axolotl src/axolotl/utils/config/__init__.py normalize_config @ 00ce8882ab23c7"
_SRC_LOADER = "axolotl src/axolotl/loaders/model.py _set_quantization_config @ 002a637c86864c"
_SRC_TOKENS = ("axolotl src/axolotl/loaders/tokenizer.py (TokenizerPostProcessor: `tokens` go to "
               "add_tokens, `special_tokens` to add_special_tokens; with an adapter, changed special "
               "tokens require lora_modules_to_save to hold the embedding and output layers)")

# Keys that only axolotl configs use (detection).
_AXOLOTL_ONLY = frozenset({
    "adapter", "sequence_len", "lora_target_linear", "sample_packing", "lora_model_dir",
    "dataset_prepared_path", "val_set_size", "evals_per_epoch", "saves_per_epoch",
    "pad_to_sequence_len", "eval_sample_packing", "tokenizer_type", "lora_fan_in_fan_out",
})

# Modules a lora_target_modules list may name beyond the decoder blocks' linear layers.
_NON_BLOCK = {"lm_head", "embed_tokens", "wte", "wpe", "embed_out", "word_embeddings",
              "output", "tok_embeddings", "embeddings"}


_AXOLOTL_MARKERS = _AXOLOTL_ONLY | frozenset({
    "micro_batch_size", "flash_attention", "sdp_attention", "xformers_attention",
    "bnb_config_kwargs", "peft_use_dora",
})
"""Keys that, next to ``base_model``, say a file is an axolotl config. Names other tools share
(``lora_r``, ``num_epochs``, ``optimizer``, ``load_in_4bit``, ``lora_target_modules`` in TRL's
``ModelConfig``...) do not: a hand-written YAML with ``base_model``, ``lora_r`` and
``num_epochs`` is not read with axolotl's defaults."""


def _typed_datasets(doc: ConfigDoc) -> bool:
    """``datasets:`` as axolotl writes it: a list of mappings naming a ``type`` (prompt format)."""
    seq = doc.node("datasets")
    if not isinstance(seq, YSeq):
        return False
    return any(isinstance(item, YMap) and "type" in item for item in seq.items)


def matches(doc: ConfigDoc) -> bool:
    """``base_model`` plus a key that is axolotl's own (:data:`_AXOLOTL_MARKERS`) or axolotl's
    ``datasets`` list with ``type`` entries; or two keys only axolotl uses."""
    keys = set(doc.root.keys())
    if "base_model" in keys and (keys & _AXOLOTL_MARKERS or _typed_datasets(doc)):
        return True
    return len(keys & _AXOLOTL_ONLY) >= 2


def _gc_value(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() in ("offload", "offload_disk", "unsloth"):
        return v.strip().lower()
    return as_bool(v)


def _bf16_value(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    return as_bool(v)


def _targets(v: Any) -> Any:
    if v is None:
        return ()
    if isinstance(v, str):
        text = v.strip()
        # a lone plain name is a list of one; anything else is a peft regular expression
        return (text,) if text.replace("_", "").isalnum() else text
    return as_module_list(v)


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of an axolotl config."""
    model, dtype_for_compute = _model(doc)
    quant = _quantization(doc, dtype_for_compute)
    lora = _lora(doc)
    training, launch = _training(doc)
    return doc.new_setup("axolotl", NAME, model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(launch))


# ---- model -------------------------------------------------------------------------------------
def _precision(doc: ConfigDoc) -> tuple[Setting, Setting, Setting]:
    """(bf16, fp16, torch_dtype) after axolotl's resolve_dtype, as far as the file decides it."""
    bf16 = doc.setting("bf16", _bf16_value)
    fp16 = doc.setting("fp16", as_bool)
    bfloat16 = doc.setting("bfloat16", as_bool)
    float16 = doc.setting("float16", as_bool)
    load8 = doc.setting("load_in_8bit", as_bool)

    if fp16 is not None and fp16.is_(True) and (bf16 is None or bf16.is_("auto")):
        bf16_eff = Setting(False, Origin.LIBRARY_DEFAULT, None, None,
                           f"{_SRC_DTYPE}: fp16: true turns bf16: auto off", "bf16")
    elif bf16 is None:
        bf16_eff = default("auto", _SRC_CONFIG + " (bf16 where the GPU supports it, else fp16)",
                           "bf16")
    else:
        bf16_eff = bf16
    if fp16 is not None and fp16.is_(True) and bf16_eff.is_(True):
        fp16_eff = Setting(False, Origin.LIBRARY_DEFAULT, None, None,
                           f"{_SRC_DTYPE}: bf16: true turns fp16 off", "fp16")
    elif fp16 is not None:
        fp16_eff = fp16
    elif bf16_eff.is_("auto"):
        fp16_eff = default(False, _SRC_DTYPE + ": with bf16: auto, fp16 is turned on only on "
                           "GPUs without bf16 support", "fp16")
    else:
        fp16_eff = default(False, _SRC_CONFIG + " (fp16 = None)", "fp16")

    # torch_dtype (resolve_dtype's last step)
    if bf16_eff.is_(True) or (bfloat16 is not None and bfloat16.is_(True)):
        decider = bf16_eff if bf16_eff.is_(True) else bfloat16
        dtype = derived("bfloat16", decider, _SRC_DTYPE)  # type: ignore[arg-type]
    elif bf16_eff.is_("auto"):
        dtype = Setting(None, Origin.UNKNOWN, None, None, None,
                        "bf16: auto (bfloat16 on GPUs that support it, else float16)")
    elif (load8 is not None and load8.is_(True)) or fp16_eff.is_(True) or (
            float16 is not None and float16.is_(True)):
        decider = next(s for s in (fp16_eff, load8, float16) if s is not None and s.is_(True))
        dtype = derived("float16", decider, _SRC_DTYPE)
    elif bf16_eff.known:
        dtype = derived("float32", bf16_eff, _SRC_DTYPE + ": neither bf16 nor fp16")
    else:
        dtype = Setting()
    return bf16_eff, fp16_eff, dtype


def _model(doc: ConfigDoc) -> tuple[ModelLoad, Setting]:
    name = doc.setting("base_model", as_str)
    _, _, dtype = _precision(doc)
    fields: dict[str, Any] = {"torch_dtype": dtype}
    if name is not None:
        fields["name_or_path"] = name
    attn = doc.setting("attn_implementation", as_str)
    if attn is None:
        for key, impl in (("flex_attention", "flex_attention"),
                          ("flash_attention", "flash_attention_2"),
                          ("sdp_attention", "sdpa"), ("eager_attention", "eager"),
                          ("xformers_attention", "xformers")):
            s = doc.setting(key, as_bool)
            if s is not None and s.is_(True):
                attn = derived(impl, s, "axolotl src/axolotl/loaders/model.py "
                               "_set_attention_config")
                break
    if attn is not None:
        fields["attn_implementation"] = attn
    for key in ("trust_remote_code", "device_map", "max_memory"):
        s = doc.setting(key, as_bool if key == "trust_remote_code" else (lambda v: v))
        if s is not None:
            fields[key] = s
    extra = added_tokens(doc, ("tokens", "added_tokens_overrides", "special_tokens"), _SRC_TOKENS)
    return ModelLoad(span=name.key_span if name else None, extra=extra, **fields), dtype


# ---- quantization ------------------------------------------------------------------------------
def _quantization(doc: ConfigDoc, compute: Setting) -> Quantization | None:
    adapter = doc.setting("adapter", as_str)
    q4 = doc.setting("load_in_4bit", as_bool)
    q8 = doc.setting("load_in_8bit", as_bool)
    gptq = doc.setting("gptq", as_bool)
    backend = doc.setting("peft.backend", as_str)
    weight_dtype = doc.setting("peft.weight_dtype", as_str)

    if backend is not None and backend.is_("torchao") and weight_dtype is not None:
        bits = {"nf4": 4, "int4": 4, "int8": 8}.get(str(weight_dtype.value).lower())
        if bits is None:
            return None
        fields: dict[str, Any] = {"method": derived("torchao", backend),
                                  "bits": derived(bits, weight_dtype)}
        if weight_dtype.is_("nf4"):
            fields["bnb_4bit_quant_type"] = derived("nf4", weight_dtype)
        return Quantization(span=backend.key_span, **fields)
    stored = _model_quantization_config(doc)
    if stored is not None:
        return stored
    if gptq is not None and gptq.is_(True):
        return Quantization(method=derived("gptq", gptq), bits=derived(4, gptq, _SRC_PEFT
                                                                      + " (gptq: 4-bit GPTQ)"),
                            span=gptq.key_span)
    if (backend is not None and backend.is_("bnb") and weight_dtype is not None
            and weight_dtype.is_("nf4") and q4 is None):
        q4 = derived(True, weight_dtype, _SRC_PEFT + " (peft.weight_dtype: nf4 sets load_in_4bit)")
    if q4 is not None and q4.is_(True):
        fields = {"method": derived("bitsandbytes", q4), "bits": derived(4, q4)}
        if adapter is not None and adapter.is_("qlora"):
            fields.update(
                bnb_4bit_quant_type=default("nf4", _SRC_LOADER, "bnb_config_kwargs"),
                bnb_4bit_use_double_quant=default(True, _SRC_LOADER, "bnb_config_kwargs"),
                bnb_4bit_compute_dtype=derived(compute.value, compute, _SRC_LOADER
                                               + " (bnb_4bit_compute_dtype = torch_dtype)")
                if compute.known else compute,
            )
            kwargs = doc.mapping("bnb_config_kwargs")
            if kwargs is not None:
                for key in ("bnb_4bit_quant_type", "bnb_4bit_use_double_quant",
                            "bnb_4bit_compute_dtype"):
                    e = kwargs.get(key)
                    if e is not None:
                        from lintlora.extract.dialects._base import as_dtype

                        conv = (as_str if key.endswith("type") else
                                as_bool if key.endswith("quant") else as_dtype)
                        fields[key] = doc.entry_setting(e, conv,
                                                        expr=f"bnb_config_kwargs.{key}")
        return Quantization(span=q4.key_span, **fields)
    if adapter is not None and adapter.is_("qlora") and (q4 is None or not q4.known):
        # axolotl refuses qlora without load_in_4bit (peft.py validate_qlora); the intent is 4-bit
        return Quantization(method=derived("bitsandbytes", adapter),
                            bits=derived(4, adapter, _SRC_PEFT + " (adapter: qlora requires "
                                         "load_in_4bit: true)"),
                            span=adapter.key_span)
    if q8 is not None and q8.is_(True):
        return Quantization(method=derived("bitsandbytes", q8), bits=derived(8, q8),
                            span=q8.key_span)
    return None


_CCE_PLUGIN = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"


def _cce_plugin(doc: ConfigDoc) -> Setting | None:
    """``cut_cross_entropy: true`` implied by ``plugins: [...CutCrossEntropyPlugin]`` with no
    ``cut_cross_entropy`` key: the plugin's own argument defaults to True
    (``src/axolotl/integrations/cut_cross_entropy/args.py`` ``CutCrossEntropyArgs`` @ 067b021c8b87,
    ``cut_cross_entropy: Optional[bool] = True``)."""
    plugins = doc.setting("plugins")
    if plugins is None or not plugins.known or not isinstance(plugins.value, (list, tuple)):
        return None
    if not any(isinstance(p, str) and p.strip() == _CCE_PLUGIN for p in plugins.value[:64]):
        return None
    return derived(True, plugins, "axolotl src/axolotl/integrations/cut_cross_entropy/args.py @ 067b021c8b87 "
                   "(plugins: CutCrossEntropyPlugin; cut_cross_entropy defaults to True)")


_MODEL_QUANT_CONFIGS = {"Mxfp4Config": ("mxfp4", 4), "FineGrainedFP8Config": ("fp8", 8)}


def _model_quantization_config(doc: ConfigDoc) -> Quantization | None:
    """``model_quantization_config: Mxfp4Config|FineGrainedFP8Config`` with its
    ``model_quantization_config_kwargs`` (``dequantize: true``): axolotl passes
    ``Mxfp4Config(**model_quantization_config_kwargs)`` as the ``quantization_config``
    (``src/axolotl/loaders/model.py`` ``_set_quantization_config`` @ 067b021c8b87; the schema
    allows only these two names, ``utils/schemas/model.py``), as a Python script's
    ``Mxfp4Config(dequantize=True)`` would be read.
    """
    cls = doc.setting("model_quantization_config", as_str)
    if cls is None or not cls.known:
        return None
    found = _MODEL_QUANT_CONFIGS.get(str(cls.value).strip())
    if found is None:
        return None
    method, bits = found
    src = "axolotl src/axolotl/loaders/model.py _set_quantization_config @ 067b021c8b87"
    extra: dict[str, Setting] = {}
    kwargs = doc.mapping("model_quantization_config_kwargs")
    e = kwargs.get("dequantize") if kwargs is not None else None
    if e is not None:
        extra["dequantize"] = doc.entry_setting(e, as_bool,
                                                expr="model_quantization_config_kwargs.dequantize")
    return Quantization(method=derived(method, cls, src), bits=derived(bits, cls, src),
                        span=cls.key_span, extra=extra)


# ---- LoRA --------------------------------------------------------------------------------------
def _lora(doc: ConfigDoc) -> Lora | None:
    adapter = doc.setting("adapter", as_str)
    if adapter is None or not adapter.known or adapter.value not in ("lora", "qlora"):
        return None
    fields: dict[str, Any] = {}
    r = doc.setting("lora_r", as_count)
    if r is not None:
        fields["r"] = r
    alpha = doc.setting("lora_alpha", as_int)
    if alpha is not None:
        fields["lora_alpha"] = alpha
    fields["lora_dropout"] = (doc.setting("lora_dropout", as_float)
                              or default(0.0, _SRC_PEFT + " (validate_lora_dropout)",
                                         "lora_dropout"))
    fields["target_modules"] = _target_modules(doc)
    fields["modules_to_save"] = (doc.setting("lora_modules_to_save", _targets)
                                 or default(None, _SRC_PEFT, "lora_modules_to_save"))
    for field, key in (("use_dora", "peft_use_dora"), ("use_rslora", "peft_use_rslora")):
        s = doc.setting(key, as_bool)
        fields[field] = s if s is not None else default(False, _SRC_PEFT, key)
    return Lora(span=adapter.key_span, **fields)


def _target_modules(doc: ConfigDoc) -> Setting:
    """``lora_target_linear: true`` adds every linear layer but the head (peft "all-linear")
    to ``lora_target_modules`` (axolotl loaders/adapter.py: find_all_linear_names)."""
    linear = doc.setting("lora_target_linear", as_bool)
    listed = doc.setting("lora_target_modules", _targets)
    if linear is not None and linear.is_(True):
        extra = ()
        if listed is not None and listed.known and isinstance(listed.value, tuple):
            extra = tuple(m for m in listed.value if m in _NON_BLOCK)
        value: Any = "all-linear" if not extra else extra + ("all-linear",)
        return derived(value, linear, "axolotl src/axolotl/loaders/adapter.py "
                       "(find_all_linear_names: every Linear except lm_head)")
    if listed is not None:
        return listed
    return Setting(None, Origin.UNKNOWN, None, None, None,
                   "lora_target_modules / lora_target_linear (neither set)")


# ---- training ----------------------------------------------------------------------------------
def _training(doc: ConfigDoc) -> tuple[TrainingArgs, list[Evidence]]:
    bf16, fp16, _ = _precision(doc)
    f: dict[str, Any] = {"bf16": bf16, "fp16": fp16}
    f["per_device_train_batch_size"] = (doc.setting("micro_batch_size", as_count)
                                        or default(1, _SRC_TRAINING, "micro_batch_size"))
    f["gradient_accumulation_steps"] = (doc.setting("gradient_accumulation_steps", as_count)
                                        or default(1, _SRC_TRAINING,
                                                   "gradient_accumulation_steps"))
    f["max_seq_length"] = (doc.setting("sequence_len", as_count)
                           or default(512, _SRC_CONFIG, "sequence_len"))
    f["packing"] = (doc.setting("sample_packing", as_bool)
                    or default(False, _SRC_CONFIG + " (sample_packing = None)", "sample_packing"))
    f["optim"] = (doc.setting("optimizer", as_str)
                  or default("adamw_torch_fused", _SRC_TRAINING, "optimizer"))
    for field, key, conv in (("learning_rate", "learning_rate", as_float),
                             ("num_train_epochs", "num_epochs", as_float),
                             ("max_steps", "max_steps", as_int),
                             ("dataloader_num_workers", "dataloader_num_workers", as_workers),
                             ("dataloader_pin_memory", "dataloader_pin_memory", as_bool),
                             ("torch_compile", "torch_compile", _bf16_value)):
        s = doc.setting(key, conv)
        if s is not None:
            f[field] = s
    extra: dict[str, Setting] = {}
    gc, gc_extra = _checkpointing(doc)
    f["gradient_checkpointing"] = gc
    extra.update(gc_extra)
    kwargs = doc.setting("gradient_checkpointing_kwargs", _dict)
    if kwargs is not None:
        f["gradient_checkpointing_kwargs"] = kwargs
    elif gc.is_(True) and not doc.has("unfrozen_parameters") and not doc.has("rl"):
        f["gradient_checkpointing_kwargs"] = default({"use_reentrant": True}, _SRC_NORMALIZE,
                                                     "gradient_checkpointing_kwargs")
    liger = doc.setting("liger_fused_linear_cross_entropy", as_bool)
    if liger is not None:
        f["use_liger_kernel"] = liger
    # expert/tensor/context parallel sizes split the model or each sequence over the ranks
    # (src/axolotl/utils/schemas/config.py, integrations/expert_parallel/plugin.py @ 067b021c8):
    # kept for LL008, which gives no verdict on a split the estimate does not model
    for key in ("cut_cross_entropy", "activation_offloading", "liger_fused_linear_cross_entropy",
                "expert_parallel_size", "tensor_parallel_size", "context_parallel_size",
                "sequence_parallel_degree"):
        s = doc.setting(key)
        if s is not None:
            extra[key] = s
    cce_plugin = _cce_plugin(doc)
    if "cut_cross_entropy" not in extra and cce_plugin is not None:
        extra["cut_cross_entropy"] = cce_plugin
    extra.update(axolotl_rl(doc))  # rl: dpo|ipo|orpo|kto|simpo|grpo (dialects/_rl.py)
    tf32 = tf32_setting(doc)  # passed to TrainingArguments: src/axolotl/core/builders/base.py
    if tf32 is not None:
        extra["tf32"] = tf32

    launch: list[Evidence] = []
    ds = doc.setting("deepspeed", lambda v: v if isinstance(v, (str, dict)) else _bad(v))
    if ds is not None:
        f["deepspeed"] = ds
        if ds.known and ds.value:
            launch.append(Evidence("deepspeed", ds.span, "deepspeed: "
                                   + (ds.value if isinstance(ds.value, str) else "{...}")))
    fsdp = doc.setting("fsdp", _fsdp)
    fsdp_cfg = doc.mapping("fsdp_config")
    if fsdp is not None:
        f["fsdp"] = fsdp
    if (fsdp is not None and fsdp.known and fsdp.value) or fsdp_cfg is not None:
        where = fsdp if fsdp is not None else doc.setting("fsdp_config")
        launch.append(Evidence("fsdp", where.span if where else None,
                               f"fsdp: {fsdp.value}" if fsdp is not None and fsdp.known
                               else "fsdp_config"))
    if "deepspeed" not in f:
        f["deepspeed"] = default(None, _SRC_CONFIG, "deepspeed")
    if "fsdp" not in f:
        f["fsdp"] = default(None, _SRC_CONFIG, "fsdp")
    return TrainingArgs(extra=extra, **f), launch


def _checkpointing(doc: ConfigDoc) -> tuple[Setting, dict[str, Setting]]:
    """gradient_checkpointing: true | offload | offload_disk, or FSDP activation checkpointing."""
    extra: dict[str, Setting] = {}
    gc = doc.setting("gradient_checkpointing", _gc_value)
    for key in ("fsdp_config.activation_checkpointing",
                "fsdp_config.fsdp_activation_checkpointing"):
        fsdp_ac = doc.setting(key, as_bool)
        if fsdp_ac is not None and fsdp_ac.is_(True) and not (gc is not None and gc.known
                                                               and gc.value):
            extra["gradient_checkpointing_via"] = derived("fsdp", fsdp_ac)
            return derived(True, fsdp_ac, "axolotl src/axolotl/utils/schemas/fsdp.py "
                           "(FSDP activation checkpointing)"), extra
    if gc is None:
        return default(False, _SRC_CONFIG, "gradient_checkpointing"), extra
    if gc.known and isinstance(gc.value, str):
        extra["gradient_checkpointing_mode"] = gc
        return derived(True, gc, f"gradient_checkpointing: {gc.value} (checkpointing with "
                       "activations offloaded)"), extra
    return gc, extra


def _dict(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    raise BadValue(v)


def _bad(v: Any) -> Any:
    raise BadValue(v)


def _fsdp(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list) and all(isinstance(i, str) for i in v):
        return " ".join(v)
    if isinstance(v, str):
        return v.strip()
    raise BadValue(v)
