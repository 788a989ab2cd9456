"""Which values read from a file that a script names lintlora may quote in its reports.

A script can open any file of the project (``json.load(open("cfg.json"))``), and every value
lintlora shows ends up in a report, which in CI becomes a pull-request comment. So a value read
from such a file (or from a model's ``config.json``) is kept, and shown, only when it is one of
the settings lintlora models (DESIGN.md, "The trust boundary"):

- ``None``, a boolean, or a finite number of at most :data:`MAX_QUOTED_INT_BITS` bits;
- a string shaped like a Hugging Face hub id (``org/name``: the model names lintlora looks
  up);
- a short "setting word" (letters, digits, ``_ . : / + -`` and single spaces, at most
  :data:`MAX_QUOTED_CHARS` characters: ``bfloat16``, ``paged_adamw_8bit``, ``q_proj``,
  ``full_shard auto_wrap``) read under a key that names a setting lintlora models
  (:data:`MODELLED_KEYS`: the fields of :mod:`lintlora.training_setup` and their usual
  spellings in configs);
- a list of such values, under the same key.

Anything else (a token under ``"auth"``, an ``output_dir``, free text) is named by its key and
not printed, and nothing under a key that names a credential (``hub_token``, ``password``,
``api_key``...: :data:`_CREDENTIAL_KEY_RE`) is printed, whatever its shape: :func:`quotable`
decides. This module is in the model layer.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from lintlora import training_setup as _ts

__all__ = ["quotable", "MODELLED_KEYS", "MAX_QUOTED_CHARS", "MAX_QUOTED_INT_BITS",
           "MAX_QUOTED_ITEMS", "HUB_ID_RE"]

MAX_QUOTED_CHARS = 128
"""Longest string quoted (hub ids are at most 96 characters per part on the Hub)."""

MAX_QUOTED_INT_BITS = 64
"""Widest integer quoted: every count lintlora models (batch sizes, ranks, steps) fits."""

MAX_QUOTED_ITEMS = 256
"""Longest list quoted (``target_modules`` lists a few names)."""

HUB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
"""A Hugging Face hub id, ``org/name`` (the Hub's own rule: letters, digits, ``- _ .``)."""

_WORD_RE = re.compile(r"[A-Za-z0-9_.:/+-]+(?: [A-Za-z0-9_.:/+-]+)*")

_ALIASES = frozenset({
    # the model
    "model", "model_name", "model_name_or_path", "model_id", "base_model", "pretrained_model_name_or_path",
    "dtype", "torch_dtype", "attn_implementation", "device_map",
    # quantization
    "load_in_4bit", "load_in_8bit", "quant_type", "bnb_4bit_quant_type", "bnb_4bit_compute_dtype",
    "bnb_4bit_quant_storage", "quantization", "quantization_bit",
    # LoRA
    "lora_r", "lora_rank", "rank", "lora_alpha", "alpha", "lora_dropout", "lora_target",
    "lora_target_modules", "target_modules", "modules_to_save", "bias", "task_type",
    # training
    "batch_size", "micro_batch_size", "per_device_train_batch_size", "train_batch_size",
    "gradient_accumulation_steps", "max_length", "max_seq_len", "max_seq_length", "seq_len",
    "sequence_len", "cutoff_len", "optimizer", "optim", "lr", "learning_rate", "lr_scheduler_type",
    "precision", "mixed_precision", "fsdp", "fsdp_config", "deepspeed", "packing",
    "gradient_checkpointing", "num_train_epochs", "epochs", "max_steps",
})


def _setup_field_names() -> frozenset[str]:
    names: set[str] = set()
    for cls in (_ts.ModelLoad, _ts.Quantization, _ts.Lora, _ts.TrainingArgs, _ts.DataLoaderSpec):
        names.update(f.name for f in dataclasses.fields(cls) 
                     if f.type in ("Setting", _ts.Setting))
    return frozenset(names)


MODELLED_KEYS = _setup_field_names() | _ALIASES
"""Keys under which a setting word is quoted: every field of the training setup (model,
quantization, LoRA, training, data loader sections) and the usual spellings of them in JSON/YAML
configs."""


_CREDENTIAL_KEY_RE = re.compile(
    r"(?<!pad_)(?<!bos_)(?<!eos_)(?<!unk_)(?<!sep_)(?<!cls_)(?<!mask_)"
    r"token(?!s|izer|_?len|_?ids?\b|_?count|_?type|_?num)|"
    r"secret|passw|pwd|auth|credential|api[_-]?key|access[_-]?key|private|cookie|"
    r"session|signature|bearer|cert|ssh|otp|pin\b", re.IGNORECASE)
"""Key names that hold credentials (``hub_token``, ``HF_TOKEN``, ``password``, ``auth``,
``api_key``, ``aws_secret_access_key``, ``private_key_id``): nothing read under such a key is
quoted, not even a number or a hub-id-shaped string (``"abc/def"`` is a valid hub id and a
plausible secret). Token *counts* and special tokens (``max_tokens``, ``tokenizer``,
``pad_token``, ``bos_token_id``) are not credentials."""


def _scalar_quotable(key: Any, value: Any) -> bool:
    if isinstance(key, str) and _CREDENTIAL_KEY_RE.search(key):
        return False
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return value.bit_length() <= MAX_QUOTED_INT_BITS
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        if len(value) > MAX_QUOTED_CHARS or not value.isascii():
            return False
        if HUB_ID_RE.fullmatch(value) and ".." not in value:
            return True
        return (isinstance(key, str) and key.lower() in MODELLED_KEYS
                and _WORD_RE.fullmatch(value) is not None)
    return False


def quotable(key: Any, value: Any) -> bool:
    """Whether ``value``, read under ``key`` from a file a script names, may be kept and shown.

    Args:
        key: the key it was read under (``cfg["optim"]`` -> ``"optim"``; ``None`` when
            unknown: then only numbers, booleans, ``None`` and hub ids qualify).
        value: the value as the JSON/YAML loader returned it.

    Returns:
        ``True`` for the settings lintlora models (see the module docstring); ``False`` for
        any other value, which the caller names by its key instead of printing it. Dicts are
        never quotable as a whole (their entries are decided one by one).
    """
    if isinstance(value, (list, tuple)):
        return len(value) <= MAX_QUOTED_ITEMS and all(_scalar_quotable(key, v) for v in value)
    return _scalar_quotable(key, value)
