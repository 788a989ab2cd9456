"""YAML / JSON training configs -> :class:`~lintlora.training_setup.TrainingSetup`.

:func:`extract_config` loads the file safely (:mod:`lintlora.extract.yaml_loader`: PyYAML's
composer with ``SafeLoader``, positions kept, limits on size, depth, node count and alias
expansion, no tags constructed), detects the dialect from its keys
(:mod:`lintlora.extract.dialects`) and maps it into the same TrainingSetup the Python extractor
builds, so the same rules and the same estimator run on it.

Model identity per dialect (``setup.model.name_or_path``): axolotl ``base_model`` and
LLaMA-Factory ``model_name_or_path``/``model`` (hub ids or local paths), the torchtune builder
component (``torchtune.models.llama3_1.lora_llama3_1_8b``), the litgpt ``checkpoint_dir``
(``checkpoints/meta-llama/Meta-Llama-3.1-8B``), TRL/TrainingArguments ``model_name_or_path``.
"""

from __future__ import annotations

import re

from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.training_setup import TrainingSetup

__all__ = ["extract_config", "looks_like_training_config"]

# Keys at least one dialect needs; a file with none of them cannot be a training config.
_SIGNATURE = re.compile(
    r"""(?:^|[{,])[ \t]*["']?(?:base_model|model_name_or_path|checkpoint_dir|_component_|"""
    r"""lora_r|lora_rank|lora_alpha|lora_target\w*|target_modules|finetuning_type|"""
    r"""peft_config|per_device_train_batch_size|micro_batch_size|gradient_checkpointing|"""
    r"""use_peft|adapter|load_in_4bit|load_in_8bit|quantization_bit|sequence_len|"""
    r"""cutoff_len|max_seq_length|enable_activation_checkpointing)["']?[ \t]*:""",
    re.MULTILINE)


def looks_like_training_config(text: str) -> bool:
    """Cheap test before parsing in folder scans: does the text name any dialect's key?"""
    return _SIGNATURE.search(text) is not None


def extract_config(path: str, text: str, *, explicit: bool = True) -> list[TrainingSetup]:
    """Read a YAML (``.yaml``/``.yml``) or JSON (``.json``) training config.

    Args:
        path: the file's path; a name ending in ``.json`` is read as JSON.
        text: the decoded content.
        explicit: the file was named on the command line (or by a script). In folder scans
            (``False``) a file that names no training key is skipped before parsing, and the
            generic dialect needs stronger evidence.

    Returns:
        One TrainingSetup (``kind`` ``"yaml"`` or ``"json"``, ``dialect``, ``framework``,
        ``anchor`` = line 1), in a list like the other extractors.

    Raises:
        ExtractError: unparsable or refused input (syntax error, size or nesting limit, alias
            bomb, unsupported tag, binary data), ``code="LL000"``, with line and column where
            known.
        NotATrainingConfig: the file matches no dialect; the message is the reason, without
            the path (the engine reports it only for files named explicitly).
    """
    from lintlora.extract.dialects import detect
    from lintlora.extract.dialects._base import ConfigDoc
    from lintlora.extract.yaml_loader import YMap, load_config_text

    kind = "json" if path.lower().endswith(".json") else "yaml"
    if not explicit and not looks_like_training_config(text):
        raise NotATrainingConfig("names no training-config key")
    root = load_config_text(text, path, kind=kind)
    if root is None:
        raise NotATrainingConfig(f"empty {kind.upper()} document")
    if not isinstance(root, YMap):
        raise NotATrainingConfig(
            f"the top level is a {'list' if hasattr(root, 'items') else 'single value'}, "
            "not a mapping of settings")
    doc = ConfigDoc(root, path, kind)
    dialect = detect(doc, explicit)
    if dialect is None:
        raise NotATrainingConfig(
            "no axolotl, LLaMA-Factory, torchtune, litgpt, TrainingArguments/SFTConfig or LoRA "
            "keys")
    return [dialect.build(doc)]


# Re-exported so callers can catch both from here.
__all__ += ["ExtractError", "NotATrainingConfig"]
