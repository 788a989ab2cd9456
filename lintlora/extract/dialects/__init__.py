"""Config dialects: which tool a YAML/JSON file is for, and how its keys map to a TrainingSetup.

One module per dialect (``axolotl``, ``llama_factory`` with the v0 and v1 schemas,
``torchtune``, ``litgpt``, ``hf_args`` for TrainingArguments/SFTConfig files and Firefly,
``chatglm`` for the ChatGLM3/GLM-4 finetune_demo configs, ``generic``), each citing its tool's own defaults. :func:`detect` tries them in a fixed order,
most specific first, so a file matches at most one.

:func:`config_key` and :func:`yaml_snippet` give the key a dialect uses for a setup field, so a
rule's fix can be phrased in the file's own terms (``enable_activation_checkpointing: True``
for torchtune, ``disable_gradient_checkpointing: false`` for LLaMA-Factory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from lintlora.extract.dialects import axolotl, chatglm, generic, hf_args, litgpt, llama_factory, torchtune
from lintlora.extract.dialects._base import ConfigDoc
from lintlora.training_setup import TrainingSetup

__all__ = ["Dialect", "detect", "DIALECT_NAMES", "config_key", "yaml_snippet"]


@dataclass(frozen=True)
class Dialect:
    """A detected dialect: its name and the function that builds the setup."""

    name: str
    build: Callable[[ConfigDoc], TrainingSetup]


def detect(doc: ConfigDoc, explicit: bool = True) -> Dialect | None:
    """The dialect of a parsed config, or ``None`` when no dialect's keys are there.

    ``explicit`` is False in folder scans, where the generic dialect needs stronger evidence.
    A torchtune match turns on ``doc.interpolate`` (OmegaConf ``${...}`` references), as
    torchtune's own loader resolves them.
    """
    if torchtune.matches(doc):
        doc.interpolate = True
        return Dialect(torchtune.NAME, torchtune.build)
    if chatglm.matches(doc):
        return Dialect(chatglm.NAME, chatglm.build)
    if llama_factory.matches_v1(doc):
        return Dialect(llama_factory.NAME_V1, llama_factory.build_v1)
    if litgpt.matches(doc):
        return Dialect(litgpt.NAME, litgpt.build)
    if axolotl.matches(doc):
        return Dialect(axolotl.NAME, axolotl.build)
    if llama_factory.matches(doc):
        return Dialect(llama_factory.NAME, llama_factory.build)
    name = hf_args.matches(doc)
    if name is not None:
        return Dialect(name, lambda d, _n=name: hf_args.build(d, _n))
    if generic.matches(doc, explicit):
        return Dialect(generic.NAME, generic.build)
    return None


DIALECT_NAMES = (torchtune.NAME, chatglm.NAME, llama_factory.NAME_V1, litgpt.NAME, axolotl.NAME,
                 llama_factory.NAME, *hf_args.NAMES, generic.NAME)

_TA = {
    "training.gradient_checkpointing": "gradient_checkpointing",
    "training.fp16": "fp16",
    "training.bf16": "bf16",
    "training.per_device_train_batch_size": "per_device_train_batch_size",
    "training.gradient_accumulation_steps": "gradient_accumulation_steps",
    "training.optim": "optim",
    "training.dataloader_num_workers": "dataloader_num_workers",
    "training.max_seq_length": "max_length",
    "training.packing": "packing",
}
_KEYS: dict[str, dict[str, str | None]] = {
    "axolotl": {
        "training.gradient_checkpointing": "gradient_checkpointing",
        "training.fp16": "fp16",
        "training.bf16": "bf16",
        "training.per_device_train_batch_size": "micro_batch_size",
        "training.gradient_accumulation_steps": "gradient_accumulation_steps",
        "training.max_seq_length": "sequence_len",
        "training.optim": "optimizer",
        "training.dataloader_num_workers": "dataloader_num_workers",
        "training.packing": "sample_packing",
        "lora.r": "lora_r",
        "lora.lora_alpha": "lora_alpha",
        "lora.target_modules": "lora_target_modules",
        "lora.modules_to_save": "lora_modules_to_save",
        "quantization.bits": "load_in_4bit",
        "model.name_or_path": "base_model",
    },
    "llama-factory": {
        **_TA,
        "training.gradient_checkpointing": "disable_gradient_checkpointing",
        "training.max_seq_length": "cutoff_len",
        "lora.r": "lora_rank",
        "lora.lora_alpha": "lora_alpha",
        "lora.target_modules": "lora_target",
        "lora.modules_to_save": "additional_target",
        "quantization.bits": "quantization_bit",
        "model.name_or_path": "model_name_or_path",
    },
    "llama-factory-v1": {
        "training.gradient_checkpointing": "enable_activation_checkpointing",
        "training.bf16": "bf16",
        "training.per_device_train_batch_size": "micro_batch_size",
        "training.max_seq_length": "cutoff_len",
        "lora.r": "peft_config.r",
        "lora.lora_alpha": "peft_config.lora_alpha",
        "lora.target_modules": "peft_config.target_modules",
        "quantization.bits": "quant_config.quantization_bit",
        "model.name_or_path": "model",
    },
    "torchtune": {
        "training.gradient_checkpointing": "enable_activation_checkpointing",
        "training.fp16": "dtype",
        "training.bf16": "dtype",
        "training.per_device_train_batch_size": "batch_size",
        "training.gradient_accumulation_steps": "gradient_accumulation_steps",
        "training.max_seq_length": "tokenizer.max_seq_len",
        "training.optim": "optimizer._component_",
        "training.packing": "dataset.packed",
        "lora.r": "model.lora_rank",
        "lora.lora_alpha": "model.lora_alpha",
        "lora.target_modules": "model.lora_attn_modules",
        "model.name_or_path": "model._component_",
    },
    "litgpt": {
        "training.gradient_checkpointing": None,
        "training.fp16": "precision",
        "training.bf16": "precision",
        "training.per_device_train_batch_size": "train.micro_batch_size",
        "training.max_seq_length": "train.max_seq_length",
        "training.optim": "optimizer",
        "dataloader.num_workers": "data.init_args.num_workers",
        "lora.r": "lora_r",
        "lora.lora_alpha": "lora_alpha",
        "quantization.bits": "quantize",
        "model.name_or_path": "checkpoint_dir",
    },
    "trl": {**_TA, "lora.r": "lora_r", "lora.lora_alpha": "lora_alpha",
            "lora.target_modules": "lora_target_modules",
            "lora.modules_to_save": "lora_modules_to_save", "quantization.bits": "load_in_4bit",
            "model.name_or_path": "model_name_or_path"},
    "hf-training-args": dict(_TA),
    "chatglm-finetune": {**{k: f"training_args.{v}" for k, v in _TA.items()},
                         "training.max_seq_length": "max_input_length",
                         "lora.r": "peft_config.r", "lora.lora_alpha": "peft_config.lora_alpha",
                         "lora.target_modules": "peft_config.target_modules"},
    "firefly": {**_TA, "training.max_seq_length": "max_seq_length", "lora.r": "lora_rank",
                "lora.lora_alpha": "lora_alpha", "model.name_or_path": "model_name_or_path"},
    "generic": {**_TA, "training.max_seq_length": "max_seq_length",
                "lora.target_modules": "target_modules"},
}


def config_key(dialect: str | None, field: str) -> str | None:
    """The key (dotted path) a dialect uses for a setup field such as
    ``"training.gradient_checkpointing"``; ``None`` when the dialect has no such key (litgpt
    has no checkpointing key) or the field is not mapped."""
    return _KEYS.get(dialect or "", {}).get(field)


def _yaml_scalar(value: Any, dialect: str) -> str:
    if isinstance(value, bool):
        return ("True" if value else "False") if dialect == "torchtune" else (
            "true" if value else "false")
    if value is None:
        return "null"
    return str(value)


def yaml_snippet(dialect: str | None, field: str, value: Any) -> str | None:
    """The line to write in a dialect's config to give ``field`` the value ``value``.

    Examples: ``("torchtune", "training.gradient_checkpointing", True)`` ->
    ``"enable_activation_checkpointing: True"``; ``("llama-factory",
    "training.gradient_checkpointing", True)`` -> ``"disable_gradient_checkpointing: false"``;
    ``("torchtune", "training.bf16", True)`` -> ``"dtype: bf16"``. ``None`` when the dialect
    cannot express it.
    """
    key = config_key(dialect, field)
    if key is None or dialect is None:
        return None
    if dialect == "llama-factory" and field == "training.gradient_checkpointing":
        return f"{key}: {_yaml_scalar(not value, dialect)}"
    if dialect == "torchtune" and field in ("training.bf16", "training.fp16"):
        if not value:
            return "dtype: fp32"
        return "dtype: bf16" if field == "training.bf16" else None
    if dialect == "litgpt" and field in ("training.bf16", "training.fp16"):
        if not value:
            return "precision: 32-true"
        return "precision: bf16-true" if field == "training.bf16" else "precision: 16-true"
    return f"{key}: {_yaml_scalar(value, dialect)}"
