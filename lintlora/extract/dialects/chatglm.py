"""ChatGLM3 / GLM-4 ``finetune_demo`` configs (``configs/lora.yaml``, ``ptuning_v2.yaml``,
``sft.yaml``), read by ``finetune_hf.py`` (ChatGLM3) and ``finetune.py`` (GLM-4).

The file is the ``FinetuningConfig`` dataclass of those scripts: ``data_config:`` (files and
``num_proc``, the dataset preprocessing processes, not DataLoader workers), ``max_input_length``
and ``max_output_length``, ``training_args:`` holding ``transformers.Seq2SeqTrainingArguments``
keys (``Seq2SeqTrainingArguments(**training_args)``), and ``peft_config:`` passed to peft's
``get_peft_config`` (``peft_type: LORA`` with ``r``/``lora_alpha``/``lora_dropout``/
``target_modules``, or ``PREFIX_TUNING``). GLM-4's adds ``combine`` and ``freezeV``.

What the scripts do beyond the file (cited; the model directory is a command-line argument, so
the model is never named here):

- ChatGLM3 ``finetune_demo/finetune_hf.py`` (THUDM/ChatGLM3 @ 732294f, 2025-01-13):
  ``AutoModelForCausalLM.from_pretrained(model_dir, trust_remote_code=True, empty_init=False,
  use_cache=False)`` with no dtype, ``get_peft_model`` for LORA, then before training
  ``model.gradient_checkpointing_enable()`` and ``model.enable_input_require_grads()``
  unconditionally: checkpointing is on whatever ``training_args`` says.
- GLM-4 ``finetune/finetune.py`` (THUDM/GLM-4 @ 3f79b54, 2025-07-04): ``from_pretrained(...,
  torch_dtype=torch.bfloat16)``; ``gradient_checkpointing_enable()`` only when resuming from a
  checkpoint, so a fresh run checkpoints only if ``training_args.gradient_checkpointing`` is
  set (Seq2SeqTrainingArguments' default is False).
- Both truncate each training example to ``max_input_length + max_output_length + 1`` tokens
  (``process_batch``: ``max_length = max_input_length + max_output_length + 1``), the sequence
  length here, and pad batches to their longest sample (``DataCollatorForSeq2Seq(padding=
  'longest')``).
- A ``peft_config`` without ``target_modules`` gets peft's default for the architecture
  (``query_key_value`` for ChatGLM), left to the estimator as for any peft config.
"""

from __future__ import annotations

from typing import Any

from lintlora.extract.dialects._base import (
    ConfigDoc,
    as_bool,
    as_count,
    as_float,
    as_int,
    as_str,
    default,
    derived,
)
from lintlora.training_setup import Lora, ModelLoad, Origin, Setting, TrainingArgs, TrainingSetup

__all__ = ["NAME", "matches", "build"]

NAME = "chatglm-finetune"

_CHATGLM3 = "THUDM/ChatGLM3 finetune_demo/finetune_hf.py @ 732294f"
_GLM4 = "THUDM/GLM-4 finetune/finetune.py @ 3f79b54"
_TOP_KEYS = frozenset({"data_config", "max_input_length", "max_output_length", "training_args",
                       "peft_config", "combine", "freezeV", "swanlab"})


def matches(doc: ConfigDoc) -> bool:
    """A finetune_demo config: a ``training_args`` mapping beside ``max_input_length``/
    ``max_output_length`` or ``data_config``, and no key outside the dataclass's fields."""
    keys = set(doc.root.keys())
    if doc.mapping("training_args") is None:
        return False
    if not keys & {"max_input_length", "max_output_length", "data_config"}:
        return False
    return keys <= _TOP_KEYS


def _glm4(doc: ConfigDoc) -> bool:
    """GLM-4's config (its ``FinetuningConfig`` adds ``combine`` and ``freezeV``)."""
    return doc.has("combine") or doc.has("freezeV")


def _sequence_length(doc: ConfigDoc, script: str) -> Setting | None:
    inp = doc.setting("max_input_length", as_count)
    out = doc.setting("max_output_length", as_count)
    if inp is None or out is None:
        return None
    if not (inp.known and out.known):
        return Setting(None, Origin.UNKNOWN, inp.span, inp.key_span, None,
                       "max_input_length + max_output_length + 1")
    return derived(inp.value + out.value + 1, inp,
                   f"{script} process_batch: max_input_length + max_output_length + 1",
                   "max_input_length + max_output_length + 1")


def _targets(v: Any) -> Any:
    from lintlora.extract.dialects.hf_args import _targets as peft_targets

    return peft_targets(v)


def _lora(doc: ConfigDoc) -> Lora | None:
    """The LoRA adapter of a ``peft_config`` with ``peft_type: LORA`` (peft's LoraConfig
    defaults for absent keys), ``None`` for another peft type or none."""
    kind = doc.setting("peft_config.peft_type", as_str)
    if kind is None or not (kind.known and str(kind.value).upper() == "LORA"):
        return None
    from lintlora.extract.defaults import defaults_for

    peft = defaults_for("LoraConfig")

    def get(key: str, conv: Any) -> Setting:
        s = doc.setting(f"peft_config.{key}", conv)
        if s is not None:
            return s
        d = peft.get(key)
        return Setting(d.value, d.origin, None, None, d.source, f"peft_config.{key}") if d is not None \
            else Setting.unknown(f"peft_config.{key}")

    return Lora(r=get("r", as_count), lora_alpha=get("lora_alpha", as_int),
                lora_dropout=get("lora_dropout", as_float), target_modules=get("target_modules", _targets),
                modules_to_save=get("modules_to_save", _targets), use_dora=get("use_dora", as_bool),
                use_rslora=get("use_rslora", as_bool), bias=get("bias", as_str), span=kind.key_span)


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a ChatGLM3/GLM-4 finetune_demo config."""
    from lintlora.extract.dialects.hf_args import training_arguments

    glm4 = _glm4(doc)
    script = _GLM4 if glm4 else _CHATGLM3
    fields, evidence = training_arguments(doc, "Seq2SeqTrainingArguments", prefix="training_args.")
    seq = _sequence_length(doc, script)
    if seq is not None:
        fields["max_seq_length"] = seq
    gc = doc.setting("training_args.gradient_checkpointing")
    if not glm4 and not (gc is not None and gc.is_(True)):
        # finetune_hf.py turns it on itself, whatever the file says
        fields["gradient_checkpointing"] = default(
            True, f"{_CHATGLM3}: model.gradient_checkpointing_enable() and model.enable_input_require_grads() "
                  "before training", "training_args.gradient_checkpointing")
    elif glm4 and gc is None:
        fields["gradient_checkpointing"] = default(
            False, f"{_GLM4}: gradient_checkpointing_enable() only when resuming; Seq2SeqTrainingArguments' "
                   "default gradient_checkpointing=False", "training_args.gradient_checkpointing")
    model_fields: dict[str, Any] = {
        "name_or_path": Setting(None, Origin.UNKNOWN, None, None,
                                f"the model directory is a command-line argument of {script.split(' @')[0]}",
                                "model_dir"),
        "trust_remote_code": default(True, f"{script}: from_pretrained(..., trust_remote_code=True)"),
    }
    if glm4:
        model_fields["torch_dtype"] = default("bfloat16", f"{_GLM4}: from_pretrained(..., torch_dtype=torch.bfloat16)")
    model = ModelLoad(**model_fields)
    extra = {}
    sa = doc.setting("training_args.save_strategy", as_str)
    if sa is not None:
        extra["save_strategy"] = sa
    section = doc.entry("training_args")
    training = TrainingArgs(extra=extra, span=section.key_span if section is not None else doc.top_span(),
                            **fields)
    return doc.new_setup("transformers", NAME, model=model, lora=_lora(doc), training=training,
                         launch=tuple(evidence))
