"""Qualified names lintlora recognises, and the defaults-table entry of each config class.

``canonical`` folds the many import paths of one library object into one name
(``transformers.training_args.TrainingArguments`` and ``transformers.TrainingArguments`` are the
same class); the extractor recognises calls by these names only, never by bare spelling.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["canonical", "DEFAULTS_CLASS", "EMPTY_CACHE_DEVICES", "EMPTY_CACHE_CALLS"]

EMPTY_CACHE_DEVICES = ("cuda", "xpu", "mps", "npu")
"""Device modules of torch with an ``empty_cache()`` that frees the caching allocator's unused
blocks (``torch.cuda``, ``torch.xpu``, ``torch.mps``; ``torch.npu`` from Ascend's torch_npu)."""

EMPTY_CACHE_CALLS = frozenset(f"torch.{d}.empty_cache" for d in EMPTY_CACHE_DEVICES)

_KNOWN_LIBRARIES = frozenset({"transformers", "trl", "peft", "torch", "accelerate", "unsloth",
                               "datasets", "bitsandbytes", "deepspeed"})

_BUILTINS = frozenset({
    "int", "float", "str", "bool", "dict", "list", "tuple", "set", "sorted", "max", "min",
    "getattr", "vars", "open", "len", "range", "print", "isinstance", "zip", "enumerate",
    "sum", "abs", "round", "any", "all", "map", "filter", "type", "object", "super",
    "Exception", "ValueError", "RuntimeError", "hasattr", "setattr", "iter", "next",
})


# ---- canonical names of recognised callables ----------------------------------------------------
_CANON: dict[tuple[str, str], str] = {}


def _reg(root: str, leaves: Iterable[str], fmt: str = "{root}.{leaf}") -> None:
    for leaf in leaves:
        _CANON[(root, leaf)] = fmt.format(root=root, leaf=leaf)


_reg("transformers", ["TrainingArguments", "Seq2SeqTrainingArguments", "Trainer", "Seq2SeqTrainer",
                      "BitsAndBytesConfig", "GPTQConfig", "AwqConfig", "TorchAoConfig", "HqqConfig",
                      "EetqConfig", "Mxfp4Config", "QuantoConfig", "AqlmConfig",
                      "FbgemmFp8Config", "FineGrainedFP8Config", "CompressedTensorsConfig",
                      "HfArgumentParser", "TrainerCallback"])
_reg("trl", ["SFTTrainer", "SFTConfig", "DPOTrainer", "DPOConfig", "ORPOTrainer", "ORPOConfig",
             "KTOTrainer", "KTOConfig", "CPOTrainer", "CPOConfig", "GRPOTrainer", "GRPOConfig",
             "RewardTrainer", "RewardConfig", "TrlParser", "ModelConfig", "IterativeSFTTrainer"])
_reg("peft", ["LoraConfig", "get_peft_model", "prepare_model_for_kbit_training",
              "prepare_model_for_int8_training", "AdaLoraConfig", "cast_mixed_precision_params"])
_reg("torch", ["DataLoader"], "torch.utils.data.DataLoader")
_reg("accelerate", ["Accelerator", "PartialState"])
_reg("argparse", ["ArgumentParser"])
_reg("unsloth", ["FastLanguageModel", "FastModel", "FastVisionModel"])


def canonical(q: str) -> str:
    """Map a qualified name to the canonical name lintlora recognises, or return it unchanged.

    ``transformers.training_args.TrainingArguments`` -> ``transformers.TrainingArguments``;
    ``transformers.AutoModelForCausalLM.from_pretrained`` -> ``model_load``;
    ``unsloth.FastLanguageModel.from_pretrained`` -> ``unsloth.from_pretrained``;
    ``peft.PeftModelForCausalLM.from_pretrained`` -> ``peft.PeftModel.from_pretrained``;
    ``torch.cuda.amp.GradScaler`` -> ``torch.amp.GradScaler``.
    """
    parts = q.split(".")
    root = parts[0]
    leaf = parts[-1]
    if leaf == "from_pretrained" and len(parts) >= 3:
        cls = parts[-2]
        if root == "transformers" and (cls.startswith("AutoModel") or "For" in cls):
            return "model_load"
        if root == "peft" and cls.startswith("AutoPeftModel"):
            return "model_load"
        if root == "unsloth" and cls in ("FastLanguageModel", "FastModel", "FastVisionModel"):
            return "unsloth.from_pretrained"
        if root == "peft" and cls.startswith("PeftModel"):
            # PeftModel / PeftModelForCausalLM ...: loads an adapter onto a model already loaded
            return "peft.PeftModel.from_pretrained"
    if leaf == "get_peft_model" and root == "unsloth" and len(parts) >= 3:
        return "unsloth.get_peft_model"
    if root == "torch":
        if leaf == "empty_cache" and len(parts) >= 3 and parts[1] in EMPTY_CACHE_DEVICES:
            return f"torch.{parts[1]}.empty_cache"  # the device the script names, kept for messages
        if leaf == "autocast" or (leaf == "autocast" and "amp" in parts):
            return "torch.autocast"
        if leaf == "init_process_group":
            return "torch.distributed.init_process_group"
        if leaf == "DataLoader" and "data" in parts:
            return "torch.utils.data.DataLoader"
        if leaf == "GradScaler":  # torch.amp / torch.cuda.amp / torch.GradScaler: one class
            return "torch.amp.GradScaler"
        return q
    if root == "deepspeed" and leaf == "initialize":
        return "deepspeed.initialize"
    hit = _CANON.get((root, leaf))
    if hit is not None:
        return hit
    return q


_CALL_OBJECTS = frozenset(set(_CANON.values()) | {
    "model_load", "unsloth.from_pretrained", "unsloth.get_peft_model", "torch.autocast",
    "torch.utils.data.DataLoader", "torch.distributed.init_process_group",
    "deepspeed.initialize", "peft.PeftModel.from_pretrained", "torch.amp.GradScaler",
})
_UNPACKED_LOADERS = frozenset({"unsloth.from_pretrained"})
_MODEL_FLOW = frozenset({"model_load", "peft.get_peft_model", "peft.prepare_model_for_kbit_training",
                         "peft.prepare_model_for_int8_training", "unsloth.get_peft_model",
                         "unsloth.from_pretrained"})
DEFAULTS_CLASS: dict[str, str] = {
    "transformers.TrainingArguments": "TrainingArguments",
    "transformers.Seq2SeqTrainingArguments": "Seq2SeqTrainingArguments",
    "trl.SFTConfig": "SFTConfig",
    "trl.DPOConfig": "TRLConfig", "trl.ORPOConfig": "TRLConfig", "trl.KTOConfig": "TRLConfig",
    "trl.CPOConfig": "TRLConfig", "trl.GRPOConfig": "TRLConfig", "trl.RewardConfig": "TRLConfig",
    "peft.LoraConfig": "LoraConfig",
    "transformers.BitsAndBytesConfig": "BitsAndBytesConfig",
    "torch.utils.data.DataLoader": "DataLoader",
    "peft.prepare_model_for_kbit_training": "prepare_model_for_kbit_training",
}
"""Canonical name -> the :mod:`lintlora.extract.defaults` entry holding its defaults."""
