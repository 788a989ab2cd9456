"""Library defaults: what a class applies when a script leaves an argument out.

One table for every extractor (Python and the TrainingArguments/SFTConfig YAML dialect). Each
entry cites the library file and the commit it was read from (with the release line it belongs
to); each value is what that file's signature or dataclass ``field(default=...)`` says. Values
are normalised like every other setup value (dtypes as ``"bfloat16"``/``"float32"``..., module
lists as tuples).

Keys are the class's own parameter names. For ``SFTConfig``, ``max_seq_length`` is also given
(equal to ``max_length``): it is the :class:`~lintlora.training_setup.TrainingArgs` field name
and the parameter name older trl releases used.

The values were cross-checked against the packages installed in the development environment
(transformers 5.24.0, peft 0.21.2, torch 2.13; ``tests/test_defaults.py`` repeats the check when
they are importable). Version-dependent defaults are noted in the ``source`` text of the
Setting, so a finding resting on one can say which release it assumes:

- ``TrainingArguments.gradient_checkpointing`` became a deprecated alias of
  ``activation_checkpointing`` in transformers 5.24; both default to off.

- ``TrainingArguments.optim`` is ``"adamw_torch"``, or ``"adamw_torch_fused"`` when torch >= 2.8
  is installed; both keep two fp32 states per trainable parameter, so memory is the same.
- ``SFTConfig.gradient_checkpointing`` is ``True`` and ``bf16`` is ``not fp16`` in current trl
  (trl/trainer/base_config.py, introduced by huggingface/trl#3510 in 2025); earlier trl releases
  inherited ``False`` for both from ``TrainingArguments``. ``bf16`` is given here as ``True``
  (the value when ``fp16`` is not set); extractors that see ``fp16`` must use ``not fp16``:
  :func:`sft_bf16_default` does that.

Which release's defaults apply (issue 16): the table holds one release line per library,
:data:`TABLE_RELEASES` (the current releases, as the estimator's
:data:`lintlora.estimate.versions.DEFAULT_VERSIONS`); it has no per-release tables. The defaults
that changed between the releases people still pin are named in the ``source``/notes text
(the list above: transformers 4.x's float32 load and reentrant checkpointing, trl's
``gradient_checkpointing``/``bf16``), and the verdicts that rest on one of them ask
:meth:`lintlora.context.Context.library_version` which release the run uses (the project's pins,
``--assume-version``, ``[tool.lintlora] versions``) and say it with where it was read: LL009's
reentrant default, the estimator's float32 load and bitsandbytes input copy.
:func:`table_release_note` words the release a default was read from next to the run's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from lintlora.training_setup import Setting

__all__ = [
    "LibraryDefaults",
    "defaults_for",
    "entry_for",
    "known_classes",
    "positional_parameters",
    "sft_bf16_default",
    "TABLE_RELEASES",
    "table_release_note",
]

TABLE_RELEASES: Mapping[str, str] = MappingProxyType({
    "transformers": "5.24.0", "peft": "0.21.2", "torch": "2.13.0",
})
"""The release each library's defaults here were read from and cross-checked with (the module
docstring; trl's SFTConfig values: the current trl, ``trl/trainer/base_config.py``)."""


def table_release_note(package: str, version: Any, where: str) -> str | None:
    """A sentence for a finding resting on a default of ``package``: the release the table's
    default was read from and the one the run uses (``version``, ``where``: a
    :class:`lintlora.context.VersionUsed`'s fields), or ``None`` when they are the same release
    line (same major and minor) or the table has no release for the package."""
    table = TABLE_RELEASES.get(package)
    if table is None or version is None:
        return None
    try:
        from packaging.version import Version

        t, v = Version(table), Version(str(version))
    except Exception:  # noqa: BLE001 - an unparsable release: no sentence
        return None
    if (t.major, t.minor) == (v.major, v.minor):
        return None
    return (f"the {package} default was read from {package} {table}; this run uses {package} {v} "
            f"({where}), whose default may differ")


@dataclass(frozen=True)
class LibraryDefaults:
    """The defaults of one library class or function.

    Attributes:
        class_name: the name scripts use (``"TrainingArguments"``).
        source: the library file and commit the values were read from.
        values: parameter name -> normalised default value.
        notes: parameter name -> a remark appended to the citation (version dependence,
            conditional defaults).
        positional: parameter names in positional order (after ``self``), for calls that pass
            arguments by position; empty when positional use is not supported.
    """

    class_name: str
    source: str
    values: Mapping[str, Any]
    notes: Mapping[str, str] = field(default_factory=dict)
    positional: tuple[str, ...] = ()

    def cite(self, name: str) -> str:
        """The citation for one parameter: the source plus that parameter's note, if any."""
        note = self.notes.get(name)
        return f"{self.source}; {note}" if note else self.source


# ---- transformers TrainingArguments ---------------------------------------------------------
_TA_SOURCE = (
    "transformers src/transformers/training_args.py @ 00349ae87edd (5.x development line)"
)
_TA_VALUES: dict[str, Any] = {
    # Training duration and batch size
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "gradient_accumulation_steps": 1,
    "auto_find_batch_size": False,
    # Optimiser and schedule
    "learning_rate": 5e-5,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0,
    "optim": "adamw_torch",
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    # Precision
    "bf16": False,
    "fp16": False,
    "tf32": None,
    # Memory
    "gradient_checkpointing": False,
    "gradient_checkpointing_kwargs": None,
    "activation_checkpointing": False,
    "activation_checkpointing_kwargs": None,
    "torch_compile": False,
    "use_liger_kernel": False,
    "torch_empty_cache_steps": None,
    # Data loading
    "dataloader_num_workers": 0,
    "dataloader_pin_memory": True,
    "dataloader_persistent_workers": False,
    "dataloader_prefetch_factor": None,
    "group_by_length": False,
    # Distribution
    "deepspeed": None,
    "fsdp": None,
    "fsdp_config": None,
    "ddp_find_unused_parameters": None,
    "use_cpu": False,
    "local_rank": -1,
    # Bookkeeping
    "logging_steps": 500,
    "save_steps": 500,
    "seed": 42,
}
_TA_NOTES = {
    "optim": "adamw_torch_fused when torch >= 2.8 is installed (same optimizer-state memory)",
    "activation_checkpointing": "transformers 5.24 training_args.py: unset (None) becomes False "
                                "in __post_init__",
    "fsdp": "4.x releases used the empty string, equally 'no FSDP'",
}
# transformers.TrainingArguments is a dataclass whose first field is output_dir; positional use
# beyond it is not seen in practice.
_TA_POSITIONAL = ("output_dir",)

TRAINING_ARGUMENTS = LibraryDefaults(
    "TrainingArguments", _TA_SOURCE, MappingProxyType(_TA_VALUES), MappingProxyType(_TA_NOTES),
    _TA_POSITIONAL,
)

SEQ2SEQ_TRAINING_ARGUMENTS = LibraryDefaults(
    "Seq2SeqTrainingArguments",
    "transformers src/transformers/training_args_seq2seq.py (subclass of TrainingArguments "
    "adding generation options only); values from " + _TA_SOURCE,
    MappingProxyType({**_TA_VALUES, "predict_with_generate": False}),
    MappingProxyType(_TA_NOTES),
    _TA_POSITIONAL,
)

# ---- trl SFTConfig ----------------------------------------------------------------------------
_SFT_SOURCE = (
    "trl trl/trainer/sft_config.py @ 016013e88ace and trl/trainer/base_config.py @ 13e421be7804 "
    "(trl 1.x development line)"
)
_TRL_BASE_VALUES: dict[str, Any] = {
    **_TA_VALUES,
    # trl/trainer/base_config.py overrides for every TRL config
    "logging_steps": 10,
    "gradient_checkpointing": True,
    "bf16": True,
}
_SFT_VALUES: dict[str, Any] = {
    **_TRL_BASE_VALUES,
    "learning_rate": 2e-5,
    "max_length": 1024,
    "max_seq_length": 1024,
    "packing": False,
    "padding_free": False,
    "dataset_text_field": "text",
    "model_init_kwargs": None,
    "activation_offloading": False,
    "assistant_only_loss": False,
    "completion_only_loss": None,
}
_TRL_NOTES = {
    **_TA_NOTES,
    "gradient_checkpointing": "True since huggingface/trl#3510 (2025); older trl releases "
                              "inherited TrainingArguments' False",
    "bf16": "unset bf16 becomes `not fp16` (base_config.py __post_init__); older trl releases "
            "inherited TrainingArguments' False",
}
_SFT_NOTES = {
    **_TRL_NOTES,
    "max_seq_length": "named max_length in current trl, max_seq_length in older releases",
}

SFT_CONFIG = LibraryDefaults(
    "SFTConfig", _SFT_SOURCE, MappingProxyType(_SFT_VALUES), MappingProxyType(_SFT_NOTES),
    _TA_POSITIONAL,
)

TRL_CONFIG = LibraryDefaults(
    "TRLConfig",
    "trl trl/trainer/base_config.py @ 13e421be7804 (_BaseConfig, parent of every TRL trainer "
    "config: DPOConfig, ORPOConfig, KTOConfig, GRPOConfig, ...) over " + _TA_SOURCE,
    MappingProxyType(_TRL_BASE_VALUES),
    MappingProxyType(_TRL_NOTES),
    _TA_POSITIONAL,
)

# ---- peft LoraConfig --------------------------------------------------------------------------
LORA_CONFIG = LibraryDefaults(
    "LoraConfig",
    "peft src/peft/tuners/lora/config.py @ 00a4d0808579",
    MappingProxyType({
        "r": 8,
        "lora_alpha": 8,
        "lora_dropout": 0.0,
        "target_modules": None,
        "exclude_modules": None,
        "bias": "none",
        "use_rslora": False,
        "use_dora": False,
        "modules_to_save": None,
        "fan_in_fan_out": False,
        "init_lora_weights": True,
        "layers_to_transform": None,
    }),
    MappingProxyType({
        "target_modules": "None means peft's per-architecture default modules",
    }),
)

# ---- transformers BitsAndBytesConfig ------------------------------------------------------------
BITS_AND_BYTES_CONFIG = LibraryDefaults(
    "BitsAndBytesConfig",
    "transformers src/transformers/utils/quantization_config.py @ 000e22311674",
    MappingProxyType({
        "load_in_8bit": False,
        "load_in_4bit": False,
        "llm_int8_threshold": 6.0,
        "llm_int8_skip_modules": None,
        "llm_int8_enable_fp32_cpu_offload": False,
        "llm_int8_has_fp16_weight": False,
        "bnb_4bit_compute_dtype": "float32",
        "bnb_4bit_quant_type": "fp4",
        "bnb_4bit_use_double_quant": False,
        "bnb_4bit_quant_storage": "uint8",
    }),
    MappingProxyType({
        "bnb_4bit_compute_dtype": "None is replaced by torch.float32 in __init__",
        "bnb_4bit_quant_storage": "None is replaced by torch.uint8 in __init__",
    }),
    ("load_in_8bit", "load_in_4bit", "llm_int8_threshold", "llm_int8_skip_modules",
     "llm_int8_enable_fp32_cpu_offload", "llm_int8_has_fp16_weight", "bnb_4bit_compute_dtype",
     "bnb_4bit_quant_type", "bnb_4bit_use_double_quant", "bnb_4bit_quant_storage"),
)

# ---- torch DataLoader -----------------------------------------------------------------------------
DATA_LOADER = LibraryDefaults(
    "DataLoader",
    "pytorch torch/utils/data/dataloader.py @ 0025348e03d0 (DataLoader.__init__)",
    MappingProxyType({
        "batch_size": 1,
        "shuffle": None,
        "num_workers": 0,
        "pin_memory": False,
        "drop_last": False,
        "persistent_workers": False,
        "prefetch_factor": None,
    }),
    MappingProxyType({
        "prefetch_factor": "2 per worker when num_workers > 0",
    }),
    ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
     "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
     "multiprocessing_context", "generator"),
)

# ---- peft prepare_model_for_kbit_training -----------------------------------------------------
PREPARE_MODEL_FOR_KBIT_TRAINING = LibraryDefaults(
    "prepare_model_for_kbit_training",
    "peft src/peft/utils/other.py @ 012c0d5a9674",
    MappingProxyType({
        "use_gradient_checkpointing": True,
        "gradient_checkpointing_kwargs": None,
    }),
    MappingProxyType({
        "use_gradient_checkpointing": "when true and the model is loaded in 4/8 bits (or GPTQ) "
                                      "the helper calls model.gradient_checkpointing_enable()",
    }),
    ("model", "use_gradient_checkpointing", "gradient_checkpointing_kwargs"),
)

# ---- torch autocast -----------------------------------------------------------------------------
AUTOCAST = LibraryDefaults(
    "autocast",
    "pytorch torch/amp/autocast_mode.py (dtype=None means torch.get_autocast_dtype(device_type), "
    "float16 for cuda unless changed)",
    MappingProxyType({"dtype": "float16", "enabled": True}),
    MappingProxyType({}),
    ("device_type", "dtype", "enabled", "cache_enabled"),
)

# ---- transformers from_pretrained ----------------------------------------------------------------
# Only the arguments whose default is the same in every release are listed; the others
# (torch_dtype/dtype: float32 in 4.x, "auto" in 5.x; attn_implementation: eager or sdpa by
# version) stay unknown when not passed.
FROM_PRETRAINED = LibraryDefaults(
    "from_pretrained",
    "transformers src/transformers/models/auto/auto_factory.py @ 0059fab6f2dc (4.x) and 5.24.0 "
    "(FROM_PRETRAINED docstring: `trust_remote_code (bool, optional, defaults to False)`)",
    MappingProxyType({
        "trust_remote_code": False,
    }),
    MappingProxyType({
        "trust_remote_code": "left out it is None, which dynamic_module_utils."
                             "resolve_trust_remote_code treats as False: a model's own code "
                             "runs only after an explicit True (or a yes at an interactive "
                             "prompt); unsloth's FastLanguageModel.from_pretrained has "
                             "trust_remote_code=False in its signature",
    }),
)

_TABLE: dict[str, LibraryDefaults] = {
    e.class_name: e
    for e in (TRAINING_ARGUMENTS, SEQ2SEQ_TRAINING_ARGUMENTS, SFT_CONFIG, TRL_CONFIG, LORA_CONFIG,
              BITS_AND_BYTES_CONFIG, DATA_LOADER, PREPARE_MODEL_FOR_KBIT_TRAINING, AUTOCAST,
              FROM_PRETRAINED)
}
_ALIASES = {
    "transformers.TrainingArguments": "TrainingArguments",
    "transformers.Seq2SeqTrainingArguments": "Seq2SeqTrainingArguments",
    "trl.SFTConfig": "SFTConfig",
    "peft.LoraConfig": "LoraConfig",
    "transformers.BitsAndBytesConfig": "BitsAndBytesConfig",
    "torch.utils.data.DataLoader": "DataLoader",
    "peft.prepare_model_for_kbit_training": "prepare_model_for_kbit_training",
}


def known_classes() -> tuple[str, ...]:
    """The class (or function) names this table has defaults for."""
    return tuple(_TABLE)


def entry_for(class_name: str) -> LibraryDefaults:
    """The :class:`LibraryDefaults` of a class, by short or dotted name.

    Raises:
        KeyError: the class is not in the table (the message lists the known names).
    """
    key = _ALIASES.get(class_name, class_name)
    try:
        return _TABLE[key]
    except KeyError:
        raise KeyError(f"no library defaults for {class_name!r}; known: "
                       f"{', '.join(sorted(_TABLE))}") from None


def defaults_for(class_name: str) -> dict[str, Setting]:
    """Each parameter's default as a ``Setting.library_default`` citing its source.

    ``class_name`` is ``"TrainingArguments"``, ``"Seq2SeqTrainingArguments"``, ``"SFTConfig"``,
    ``"TRLConfig"`` (any other TRL trainer config), ``"LoraConfig"``, ``"BitsAndBytesConfig"``,
    ``"DataLoader"``, ``"prepare_model_for_kbit_training"``, ``"autocast"`` or
    ``"from_pretrained"`` (the model-loading arguments with a fixed default; dotted names such
    as ``"transformers.TrainingArguments"`` are accepted too). Returns a new dict each call.

    Raises:
        KeyError: the class is not in the table.
    """
    entry = entry_for(class_name)
    return {name: Setting.library_default(value, entry.cite(name))
            for name, value in entry.values.items()}


def positional_parameters(class_name: str) -> tuple[str, ...]:
    """Parameter names in positional order (empty when positional use is unsupported)."""
    return entry_for(class_name).positional


def sft_bf16_default(fp16: Setting) -> Setting:
    """SFTConfig's ``bf16`` when the script leaves it out: ``not fp16`` (current trl).

    ``fp16`` is the script's resolved ``fp16`` setting; when it is unknown the default is
    unknown too (it depends on it).
    """
    if not fp16.known:
        return Setting.unknown("not fp16 (SFTConfig default of bf16)")
    return Setting.library_default(not bool(fp16.value), SFT_CONFIG.cite("bf16"))
