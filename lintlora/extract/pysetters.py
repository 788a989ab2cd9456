"""``TrainingArguments.set_*`` helpers: which fields each one assigns, and to what.

transformers groups related arguments in methods that assign them on an existing
``TrainingArguments`` and return it (``args = args.set_training(learning_rate=1e-4)``).
Each helper assigns *every* field it covers: a parameter left out is reset to the helper's own
default, not kept. ``args.set_training(learning_rate=1e-4)`` therefore turns checkpointing off
and sets the batch size to 8 even if the constructor said otherwise.

Read from transformers ``src/transformers/training_args.py`` as released in 5.24.0
(``set_training``, ``set_optimizer``, ``set_lr_scheduler``, ``set_dataloader``; the installed
package in the development environment). In 5.24 ``set_training`` takes
``activation_checkpointing=False`` and a deprecated ``gradient_checkpointing=None`` alias that
wins when given; it assigns both attributes. Only fields lintlora's setups carry are listed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SETTERS", "SETTER_SOURCE", "setter_fields"]

SETTER_SOURCE = "transformers src/transformers/training_args.py (5.24.0), TrainingArguments.{method}"
"""Citation for a value a helper assigns by default (``{method}`` is filled in)."""

SETTERS: dict[str, tuple[tuple[str, str, Any], ...]] = {
    # (parameter, TrainingArguments field it assigns, the helper's default), in positional order
    "set_training": (
        ("learning_rate", "learning_rate", 5e-5),
        ("batch_size", "per_device_train_batch_size", 8),
        ("weight_decay", "weight_decay", 0),
        ("num_epochs", "num_train_epochs", 3),
        ("max_steps", "max_steps", -1),
        ("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
        ("seed", "seed", 42),
        ("activation_checkpointing", "gradient_checkpointing", False),
    ),
    "set_optimizer": (
        ("name", "optim", "adamw_torch"),
        ("learning_rate", "learning_rate", 5e-5),
        ("weight_decay", "weight_decay", 0),
        ("beta1", "adam_beta1", 0.9),
        ("beta2", "adam_beta2", 0.999),
        ("epsilon", "adam_epsilon", 1e-8),
        ("args", "optim_args", None),
    ),
    "set_lr_scheduler": (
        ("name", "lr_scheduler_type", "linear"),
        ("num_epochs", "num_train_epochs", 3.0),
        ("max_steps", "max_steps", -1),
        ("warmup_steps", "warmup_steps", 0),
    ),
    "set_dataloader": (
        ("train_batch_size", "per_device_train_batch_size", 8),
        ("eval_batch_size", "per_device_eval_batch_size", 8),
        ("drop_last", "dataloader_drop_last", False),
        ("num_workers", "dataloader_num_workers", 0),
        ("pin_memory", "dataloader_pin_memory", True),
        ("persistent_workers", "dataloader_persistent_workers", False),
        ("prefetch_factor", "dataloader_prefetch_factor", None),
        ("auto_find_batch_size", "auto_find_batch_size", False),
    ),
}
"""Helper name -> the fields it assigns: ``(parameter, field, default)`` in positional order."""

_ALIASES = {"set_training": {"gradient_checkpointing": "activation_checkpointing"}}
"""Deprecated parameter names that win over the new one when given (5.24 ``set_training``)."""


def setter_fields(method: str, passed: dict[str, Any]) -> dict[str, tuple[str, Any, bool]]:
    """What one helper call assigns.

    Args:
        method: the helper's name (a key of :data:`SETTERS`).
        passed: parameter name -> the value passed (any object; positional arguments already
            mapped to their parameter names).

    Returns:
        field name -> ``(parameter, value, given)``: ``given`` is True when the call passed the
        parameter (``value`` is then the passed object), False when the helper's default applies
        (``value`` is that default).
    """
    out: dict[str, tuple[str, Any, bool]] = {}
    for param, field_name, default in SETTERS[method]:
        names = [param] + [old for old, new in _ALIASES.get(method, {}).items() if new == param]
        given = next((n for n in reversed(names) if n in passed), None)
        if given is not None:
            out[field_name] = (given, passed[given], True)
        else:
            out[field_name] = (param, default, False)
    return out
