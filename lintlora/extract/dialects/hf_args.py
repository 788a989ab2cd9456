"""TrainingArguments / SFTConfig files: ``trl sft --config`` YAML, ``parse_json_file`` JSON, Firefly.

Three dialects share one vocabulary, the field names of ``transformers.TrainingArguments`` and
``trl.SFTConfig`` themselves:

- ``trl``: a YAML for ``trl sft --config`` (TRL's ``TrlParser``). It mixes SFTConfig fields
  with TRL ``ModelConfig`` keys (``model_name_or_path``, ``use_peft``, ``lora_r``,
  ``lora_target_modules``, ``load_in_4bit``, ``torch_dtype``/``dtype``...). Absent SFTConfig
  fields take SFTConfig's defaults and absent ModelConfig keys take ModelConfig's (both cited).
- ``hf-training-args``: a plain JSON or YAML of TrainingArguments fields that some script reads
  with ``HfArgumentParser.parse_json_file``/``parse_yaml_file``. The script itself is not
  seen, so only the TrainingArguments defaults are applied; model, LoRA and quantization keys
  are taken as written, with no defaults.
- ``firefly``: the JSON files of the Firefly project (``train_args/sft/qlora/*.json``), whose
  ``train.py`` adds ``CustomizedArguments`` (``train_mode`` default ``qlora``, ``lora_rank``
  64...) and loads the model itself; its behaviour is cited below.

Library defaults come from :func:`lintlora.extract.defaults.defaults_for` (the one table of
transformers/trl/peft defaults); this module only adds TRL ModelConfig and Firefly defaults,
which that table does not hold.
"""

from __future__ import annotations

from typing import Any

from lintlora.extract.dialects._base import (
    BadValue,
    ConfigDoc,
    as_bool,
    as_dtype,
    as_float,
    as_count,
    as_int,
    as_workers,
    as_module_list,
    as_str,
    default,
    derived,
)
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

__all__ = ["NAMES", "matches", "build", "training_arguments", "TRAINING_ARGUMENT_KEYS"]

NAMES = ("trl", "hf-training-args", "firefly")

# TRL ModelConfig defaults: trl/trainer/model_config.py @ 040e32d68f43 (lora_r=16,
# lora_alpha=32, lora_dropout=0.05, lora_target_modules=None, load_in_4bit/8bit=False,
# bnb_4bit_quant_type="nf4", use_bnb_nested_quant=False, use_peft=False). The same values hold
# in later trl releases.
_TRL_MC = "trl trl/trainer/model_config.py @ 040e32d68f43 (ModelConfig)"
# trl/trainer/utils.py get_quantization_config: BitsAndBytesConfig(load_in_4bit=...,
# bnb_4bit_compute_dtype=model_args.torch_dtype/dtype, bnb_4bit_quant_type=...,
# bnb_4bit_use_double_quant=model_args.use_bnb_nested_quant).
_TRL_QUANT = "trl trl/trainer/utils.py get_quantization_config"

# Firefly: component/argument.py @ 9eb960208f95 (CustomizedArguments: train_mode="qlora",
# lora_rank=64, lora_alpha=16, lora_dropout=0.05, use_unsloth=False) and train.py, whose
# load_model builds BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=float16 if
# fp16 else bfloat16, bnb_4bit_use_double_quant=True, bnb_4bit_quant_type="nf4") for qlora and
# targets find_all_linear_names(model) (every Linear except lm_head); load_unsloth_model calls
# FastLanguageModel.get_peft_model(..., use_gradient_checkpointing=True).
_FIREFLY_ARGS = "Firefly component/argument.py @ 9eb960208f95 (CustomizedArguments)"
_FIREFLY_TRAIN = "Firefly train.py load_model / load_unsloth_model"

# Field names of TrainingArguments/SFTConfig commonly written in files (for detection only;
# the defaults live in lintlora.extract.defaults).
TRAINING_ARGUMENT_KEYS = frozenset({
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "per_device_train_batch_size",
    "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate",
    "weight_decay", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type",
    "warmup_ratio", "warmup_steps", "logging_steps", "logging_dir", "save_steps",
    "save_strategy", "save_total_limit", "eval_strategy", "evaluation_strategy", "eval_steps",
    "seed", "bf16", "fp16", "tf32", "gradient_checkpointing", "gradient_checkpointing_kwargs",
    "optim", "report_to", "run_name", "remove_unused_columns", "dataloader_num_workers",
    "dataloader_pin_memory", "deepspeed", "fsdp", "fsdp_config", "torch_compile",
    "use_liger_kernel", "push_to_hub", "hub_model_id", "load_best_model_at_end",
    "group_by_length", "ddp_find_unused_parameters", "lr_scheduler_kwargs", "disable_tqdm",
})
_TRL_KEYS = frozenset({
    "use_peft", "lora_r", "lora_target_modules", "lora_modules_to_save", "lora_task_type",
    "use_bnb_nested_quant", "dataset_name", "dataset_config", "dataset_train_split",
    "dataset_text_field", "max_seq_length", "max_length", "packing", "completion_only_loss",
    "assistant_only_loss", "model_revision", "padding_free",
})
_FIREFLY_KEYS = frozenset({"train_mode", "template_name", "train_file", "use_unsloth",
                           "tokenize_num_workers", "task_type"})
_MODEL_KEYS = ("model_name_or_path",)
# ms-swift's own argument names (swift/arguments/base_args/base_args.py @ 3602360a5623:
# BaseArguments.tuner_type, formerly train_type), fields of neither TrainingArguments nor TRL:
# a swift config shares max_length/packing/num_train_epochs with TRL but not TRL's defaults
_SWIFT_KEYS = frozenset({"tuner_type", "train_type"})


def matches(doc: ConfigDoc) -> str | None:
    """The dialect name when the file reads as TrainingArguments/SFTConfig fields, else None."""
    keys = set(doc.root.keys())
    if keys & _SWIFT_KEYS:
        return None
    ta = keys & TRAINING_ARGUMENT_KEYS
    trl = keys & _TRL_KEYS
    has_model = "model_name_or_path" in keys
    if has_model and keys & _FIREFLY_KEYS and ("train_file" in keys or "train_mode" in keys
                                                or "template_name" in keys):
        return "firefly"
    if has_model and (ta or trl) or len(ta) >= 3 or (len(ta) >= 2 and trl):
        if doc.kind == "yaml" and (trl or has_model):
            return "trl"
        return "hf-training-args"
    return None


# ---- TrainingArguments mapping shared with LLaMA-Factory --------------------------------------
def _hf_defaults(class_name: str) -> dict[str, Setting]:
    from lintlora.extract.defaults import defaults_for

    return defaults_for(class_name)


def _with_key(s: Setting, key: str) -> Setting:
    return Setting(s.value, s.origin, s.span, s.key_span, s.source, key)


def _dict_value(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    raise BadValue(v)


def _deepspeed(v: Any) -> Any:
    if v is None or isinstance(v, (str, dict)):
        return v
    raise BadValue(v)


def _fsdp(v: Any) -> Any:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, list) and all(isinstance(i, str) for i in v):
        return " ".join(v)
    raise BadValue(v)


def _max_len(v: Any) -> int | None:
    return None if v is None else as_count(v)


_TA_FIELDS: dict[str, tuple[str, Any]] = {
    "per_device_train_batch_size": ("per_device_train_batch_size", as_count),
    "gradient_accumulation_steps": ("gradient_accumulation_steps", as_count),
    "gradient_checkpointing": ("gradient_checkpointing", as_bool),
    "gradient_checkpointing_kwargs": ("gradient_checkpointing_kwargs", _dict_value),
    "fp16": ("fp16", as_bool),
    "bf16": ("bf16", as_bool),
    "optim": ("optim", as_str),
    "learning_rate": ("learning_rate", as_float),
    "packing": ("packing", as_bool),
    "dataloader_num_workers": ("dataloader_num_workers", as_workers),
    "dataloader_pin_memory": ("dataloader_pin_memory", as_bool),
    "deepspeed": ("deepspeed", _deepspeed),
    "fsdp": ("fsdp", _fsdp),
    "torch_compile": ("torch_compile", as_bool),
    "use_liger_kernel": ("use_liger_kernel", as_bool),
    "num_train_epochs": ("num_train_epochs", as_float),
    "max_steps": ("max_steps", as_int),
}


def training_arguments(doc: ConfigDoc, defaults_class: str | None, prefix: str = ""
                       ) -> tuple[dict[str, Setting], list[Evidence]]:
    """TrainingArgs fields from TrainingArguments-named keys, with the class's defaults.

    Args:
        doc: the config.
        defaults_class: ``"TrainingArguments"``, ``"Seq2SeqTrainingArguments"`` or
            ``"SFTConfig"`` for :func:`lintlora.extract.defaults.defaults_for`; ``None`` for
            no defaults.
        prefix: where the keys sit (``"training_args."`` for a nested section; ``""`` for the
            top level).

    Returns:
        (field name -> Setting, launch evidence from ``deepspeed``/``fsdp``).
    """
    defaults = _hf_defaults(defaults_class) if defaults_class else {}
    out: dict[str, Setting] = {}
    for field_name, (key, conv) in _TA_FIELDS.items():
        s = doc.setting(prefix + key, conv)
        if s is None and field_name in defaults:
            s = _with_key(defaults[field_name], prefix + key)
        if s is not None:
            out[field_name] = s
    # SFTConfig's use_liger (trl 0.10 to 0.17, the deprecated alias of use_liger_kernel that
    # __post_init__ copied over; removed in 0.18.0 by trl a8cfca6d0 "Remove deprecated (#3364)"):
    # read as Liger on, the reading under which the file runs at all (newer trl rejects the key)
    liger = out.get("use_liger_kernel")
    if liger is None or liger.origin.is_default:
        alias = doc.setting(prefix + "use_liger", as_bool)
        if alias is not None:
            out["use_liger_kernel"] = alias
    # sequence length: SFTConfig max_length (current trl) or max_seq_length (older trl)
    seq = doc.setting(prefix + "max_length", _max_len) or doc.setting(prefix + "max_seq_length", _max_len)
    if seq is None and "max_seq_length" in defaults:
        seq = _with_key(defaults["max_seq_length"], prefix + "max_length")
    if seq is not None:
        out["max_seq_length"] = seq
    if defaults_class in ("SFTConfig", "TRLConfig") and not doc.has(prefix + "bf16"):
        from lintlora.extract.defaults import sft_bf16_default

        out["bf16"] = _with_key(sft_bf16_default(out.get("fp16", Setting())), prefix + "bf16")
    evidence = launch_evidence(out)
    return out, evidence


def _tf32_value(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    return as_bool(v)


def tf32_setting(doc: ConfigDoc) -> Setting | None:
    """The config's ``tf32`` key (``TrainingArguments.tf32``, which every dialect built on
    the Trainer passes through), for ``training.extra["tf32"]``: ``True``/``False``, or
    ``"auto"`` (axolotl's default: ``is_torch_tf32_available()``, axolotl
    ``src/axolotl/utils/schemas/config.py`` ``check_tf32``); ``None`` when the key is absent.
    Read by LL010: transformers raises "--tf32 requires Ampere or a newer GPU arch" when
    ``TrainingArguments(tf32=True)`` is built on an older GPU (``training_args.py``, 5.24.0)."""
    return doc.setting("tf32", _tf32_value)


def launch_evidence(fields: dict[str, Setting]) -> list[Evidence]:
    """Evidence for DeepSpeed / FSDP named in the file (values written, not defaults)."""
    ev: list[Evidence] = []
    ds = fields.get("deepspeed")
    if ds is not None and ds.origin is Origin.LITERAL and ds.value:
        ev.append(Evidence("deepspeed", ds.span, f"deepspeed: {ds.value}"))
    fsdp = fields.get("fsdp")
    if fsdp is not None and fsdp.origin is Origin.LITERAL and fsdp.value:
        ev.append(Evidence("fsdp", fsdp.span, f"fsdp: {fsdp.value}"))
    return ev


# ---- model / quantization / LoRA ---------------------------------------------------------------
def _model(doc: ConfigDoc) -> ModelLoad:
    name = doc.setting("model_name_or_path", as_str)
    dtype = doc.setting("dtype", as_dtype) or doc.setting("torch_dtype", as_dtype)
    attn = doc.setting("attn_implementation", as_str)
    if attn is None:
        fa2 = doc.setting("use_flash_attention_2", as_bool)
        if fa2 is not None and fa2.is_(True):
            attn = derived("flash_attention_2", fa2)
    fields: dict[str, Any] = {}
    if name is not None:
        fields["name_or_path"] = name
    if dtype is not None:
        fields["torch_dtype"] = dtype
    if attn is not None:
        fields["attn_implementation"] = attn
    trc = doc.setting("trust_remote_code", as_bool)
    if trc is not None:
        fields["trust_remote_code"] = trc
    return ModelLoad(span=name.key_span if name else None, **fields)


def _bnb(doc: ConfigDoc, with_defaults: bool, compute: Setting | None) -> Quantization | None:
    q4 = doc.setting("load_in_4bit", as_bool)
    q8 = doc.setting("load_in_8bit", as_bool)
    if q4 is not None and q4.is_(True):
        quant_type = doc.setting("bnb_4bit_quant_type", as_str)
        nested = doc.setting("use_bnb_nested_quant", as_bool)
        if with_defaults:
            quant_type = quant_type or default("nf4", _TRL_MC, "bnb_4bit_quant_type")
            nested = nested or default(False, _TRL_MC, "use_bnb_nested_quant")
        fields: dict[str, Any] = {"method": derived("bitsandbytes", q4), "bits": derived(4, q4)}
        if quant_type is not None:
            fields["bnb_4bit_quant_type"] = quant_type
        if nested is not None:
            fields["bnb_4bit_use_double_quant"] = nested
        if compute is not None:
            fields["bnb_4bit_compute_dtype"] = Setting(compute.value, compute.origin,
                                                       compute.span, compute.key_span,
                                                       compute.source or _TRL_QUANT, compute.expr)
        return Quantization(span=q4.key_span, **fields)
    if q8 is not None and q8.is_(True):
        return Quantization(method=derived("bitsandbytes", q8), bits=derived(8, q8),
                            span=q8.key_span)
    return None


def _trl_lora(doc: ConfigDoc) -> Lora | None:
    use_peft = doc.setting("use_peft", as_bool)
    if use_peft is None or not use_peft.is_(True):
        return None
    d = _TRL_MC
    return Lora(
        r=doc.setting("lora_r", as_count) or default(16, d, "lora_r"),
        lora_alpha=doc.setting("lora_alpha", as_int) or default(32, d, "lora_alpha"),
        lora_dropout=doc.setting("lora_dropout", as_float) or default(0.05, d, "lora_dropout"),
        target_modules=doc.setting("lora_target_modules", _targets)
        or default(None, d, "lora_target_modules"),
        modules_to_save=doc.setting("lora_modules_to_save", _targets)
        or default(None, d, "lora_modules_to_save"),
        use_rslora=doc.setting("use_rslora", as_bool) or default(False, d, "use_rslora"),
        use_dora=doc.setting("use_dora", as_bool) or default(False, d, "use_dora"),
        span=use_peft.key_span,
    )


def _targets(v: Any) -> Any:
    """peft's target_modules: a list, ``"all-linear"``, or a regular expression string."""
    if v is None:
        return None
    if isinstance(v, str) and v.strip() in ("all-linear", "all_linear"):
        return "all-linear"
    if isinstance(v, list) and len(v) == 1 and v[0] in ("all-linear", "all_linear"):
        return "all-linear"
    if isinstance(v, str):
        return v.strip()  # TRL passes a single string through; peft reads it as a regex
    return as_module_list(v)


def _plain_lora(doc: ConfigDoc) -> Lora | None:
    """LoRA keys of a TrainingArguments file read by an unseen script: as written, no defaults."""
    r = doc.setting("lora_r", as_count) or doc.setting("lora_rank", as_count)
    alpha = doc.setting("lora_alpha", as_int)
    targets = doc.setting("lora_target_modules", _targets) or doc.setting("target_modules",
                                                                          _targets)
    if r is None and alpha is None and targets is None:
        return None
    fields = {k: v for k, v in (("r", r), ("lora_alpha", alpha), ("target_modules", targets),
                                ("lora_dropout", doc.setting("lora_dropout", as_float)))
              if v is not None}
    span = (r or alpha or targets).key_span  # type: ignore[union-attr]
    return Lora(span=span, **fields)


# ---- build -------------------------------------------------------------------------------------
def build(doc: ConfigDoc, dialect: str) -> TrainingSetup:
    """The TrainingSetup of a TrainingArguments/SFTConfig file (``dialect`` from :func:`matches`)."""
    if dialect == "firefly":
        return _build_firefly(doc)
    defaults_class = "SFTConfig" if dialect == "trl" else "TrainingArguments"
    fields, evidence = training_arguments(doc, defaults_class)
    model = _model(doc)
    if dialect == "trl":
        quant = _bnb(doc, True, model.torch_dtype if model.torch_dtype.known else None)
        lora = _trl_lora(doc)
        framework = "trl"
    else:
        quant = _bnb(doc, False, None)
        lora = _plain_lora(doc)
        framework = "transformers"
    extra = {}
    fsdp_config = doc.setting("fsdp_config")
    if fsdp_config is not None:  # FSDP's own activation checkpointing lives there
        extra["fsdp_config"] = fsdp_config
    # Spectrum (the script unfreezes only the parameters the file lists: philschmid/deep-learning-
    # pytorch-huggingface training/scripts/run_sft.py setup_model_for_spectrum @ 59b3797): a
    # partial fine-tune the estimate does not model (LL008's _not_modelled)
    spectrum = doc.setting("spectrum_config_path")
    if spectrum is not None:
        extra["spectrum_config_path"] = spectrum
    tf32 = tf32_setting(doc)
    if tf32 is not None:
        extra["tf32"] = tf32
    training = TrainingArgs(extra=extra, **fields)
    return doc.new_setup(framework, dialect, model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(evidence))


def _build_firefly(doc: ConfigDoc) -> TrainingSetup:
    fields, evidence = training_arguments(doc, "TrainingArguments")
    model = _model(doc)
    seq = doc.setting("max_seq_length", _max_len)
    if seq is not None:
        fields["max_seq_length"] = seq
    mode = doc.setting("train_mode", as_str) or default("qlora", _FIREFLY_ARGS, "train_mode")
    unsloth = doc.setting("use_unsloth", as_bool) or default(False, _FIREFLY_ARGS, "use_unsloth")
    framework = "unsloth" if unsloth.is_(True) else "transformers"
    quant = None
    lora = None
    if mode.known and mode.value in ("lora", "qlora"):
        lora = Lora(
            r=doc.setting("lora_rank", as_count) or default(64, _FIREFLY_ARGS, "lora_rank"),
            lora_alpha=doc.setting("lora_alpha", as_int) or default(16, _FIREFLY_ARGS,
                                                                    "lora_alpha"),
            lora_dropout=doc.setting("lora_dropout", as_float)
            or default(0.05, _FIREFLY_ARGS, "lora_dropout"),
            target_modules=derived("all-linear", mode, _FIREFLY_TRAIN + " (find_all_linear_names:"
                                   " every Linear except lm_head)", "train_mode"),
            span=mode.key_span,
        )
    if mode.known and mode.value == "qlora":
        fp16 = fields.get("fp16")
        compute = None
        if fp16 is not None and fp16.known:
            compute = derived("float16" if fp16.value else "bfloat16", fp16, _FIREFLY_TRAIN,
                              "fp16")
        quant = Quantization(
            method=derived("bitsandbytes", mode, _FIREFLY_TRAIN),
            bits=derived(4, mode, _FIREFLY_TRAIN),
            bnb_4bit_quant_type=default("nf4", _FIREFLY_TRAIN, "train_mode"),
            bnb_4bit_use_double_quant=default(True, _FIREFLY_TRAIN, "train_mode"),
            bnb_4bit_compute_dtype=compute or Setting.unknown("fp16"),
            span=mode.key_span,
        )
    if unsloth.is_(True) and lora is not None:
        gc = fields.get("gradient_checkpointing")
        if gc is None or not gc.is_(True):
            fields["gradient_checkpointing"] = derived(
                True, unsloth, _FIREFLY_TRAIN + ": get_peft_model(use_gradient_checkpointing="
                "True)", "use_unsloth")
    extra = {}
    for key in ("template_name", "task_type"):
        s = doc.setting(key)
        if s is not None:
            extra[key] = s
    tf32 = tf32_setting(doc)
    if tf32 is not None:
        extra["tf32"] = tf32
    training = TrainingArgs(extra=extra, **fields)
    return doc.new_setup(framework, "firefly", model=model, quantization=quant, lora=lora,
                         training=training, launch=tuple(evidence))
