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

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.extract.launch_bind import CommandLine

import dataclasses
import re
from typing import Any

from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.extract.yaml_loader import MAX_CONFIG_CHARS
from lintlora.training_setup import Span, TrainingSetup

__all__ = ["extract_config", "looks_like_training_config"]

# Keys at least one dialect needs; a file with none of them cannot be a training config.
_SIGNATURE = re.compile(
    r"""(?:^|[{,])[ \t]*["']?(?:base_model|model_name_or_path|checkpoint_dir|_component_|"""
    r"""lora_r|lora_rank|lora_alpha|lora_target\w*|target_modules|finetuning_type|"""
    r"""peft_config|per_device_train_batch_size|micro_batch_size|gradient_checkpointing|"""
    r"""use_peft|adapter|load_in_4bit|load_in_8bit|quantization_bit|sequence_len|"""
    r"""cutoff_len|max_seq_length|enable_activation_checkpointing|max_input_length)["']?[ \t]*:""",
    re.MULTILINE)


def looks_like_training_config(text: str) -> bool:
    """Cheap test before parsing in folder scans: does the text name any dialect's key?"""
    return _SIGNATURE.search(text) is not None


def extract_config(path: str, text: str, *, explicit: bool = True,
                   max_chars: int | None = MAX_CONFIG_CHARS,
                   command_line: CommandLine | None = None) -> list[TrainingSetup]:
    """Read a YAML (``.yaml``/``.yml``) or JSON (``.json``) training config.

    Args:
        path: the file's path; a name ending in ``.json`` is read as JSON.
        text: the decoded content.
        explicit: the file was named on the command line (or by a script). In folder scans
            (``False``) a file that names no training key is skipped before parsing, and the
            generic dialect needs stronger evidence.
        command_line: the arguments a launch hands to the dialect's CLI with this file
            (:class:`lintlora.extract.launch_bind.CommandLine`: ``key=value`` overrides);
            ``None``: no launch.
        max_chars: the loader's own size limit (``None`` for none: the engine has applied
            ``--max-file-size`` before reading).

    Returns:
        One TrainingSetup per training-config document (``kind`` ``"yaml"`` or ``"json"``,
        ``dialect``, ``framework``). A YAML stream of several documents (``---``) gives one
        setup per document that is a training config, in order; the first is anchored at
        line 1, each later one at its document's first line. Documents of no dialect in a
        stream that has a training config are passed over.

    Raises:
        ExtractError: unparsable or refused input (syntax error, binary data, unsupported tag:
            ``code="LL000"``; a size, nesting, node-count or alias-expansion limit:
            ``code="LL998"``), with line and column where known.
        NotATrainingConfig: no document matches a dialect; the message is the reason for the
            first document, without the path (the engine reports it only for files named
            explicitly).
    """
    from lintlora.extract.yaml_loader import load_config_documents

    kind = "json" if path.lower().endswith(".json") else "yaml"
    if not explicit and not looks_like_training_config(text):
        raise NotATrainingConfig("names no training-config key")
    documents = load_config_documents(text, path, kind=kind, max_chars=max_chars)
    if not documents:
        raise NotATrainingConfig(f"empty {kind.upper()} document")
    setups: list[TrainingSetup] = []
    notes: list[str] = []
    first_reason: str | None = None
    for index, root in enumerate(documents):
        try:
            setup = _document_setup(root, path, kind, explicit, text if index == 0 else "",
                                    command_line if index == 0 else None, notes)
        except NotATrainingConfig as exc:
            first_reason = first_reason or str(exc)
            continue
        if index > 0:  # findings about the whole document point at its start, not line 1
            setup = dataclasses.replace(setup, anchor=Span(path, root.span.line, 1))
        setups.append(setup)
    if not setups:
        if len(documents) > 1:
            first_reason = f"{first_reason} (in each of its {len(documents)} documents)"
        raise NotATrainingConfig(first_reason or "no training-config document")
    if notes:
        from lintlora.extract import Setups

        return Setups(setups, notes)
    return setups


def _document_setup(root: Any, path: str, kind: str, explicit: bool,
                    text: str = "", command_line: CommandLine | None = None,
                    notes: list[str] | None = None) -> TrainingSetup:
    """The setup of one document, or :class:`NotATrainingConfig` with the reason.

    With ``command_line``, the dialect is detected from the file as written, then its setup is
    built from the file with the launch's overrides applied
    (:func:`lintlora.extract.dialects.overrides.apply_launch`); words it could not apply are
    added to ``notes``."""
    from lintlora.extract.dialects import detect
    from lintlora.extract.dialects._base import ConfigDoc
    from lintlora.extract.yaml_loader import YMap

    if not isinstance(root, YMap):
        raise NotATrainingConfig(
            f"the top level is a {'list' if hasattr(root, 'items') else 'single value'}, "
            "not a mapping of settings")
    doc = ConfigDoc(root, path, kind, text=text)
    dialect = detect(doc, explicit)
    if dialect is None:
        raise NotATrainingConfig(
            "no axolotl, LLaMA-Factory, torchtune, litgpt, TrainingArguments/SFTConfig or LoRA "
            "keys")
    if command_line is not None:
        from lintlora.extract.dialects.overrides import apply_launch

        new_root, problems = apply_launch(root, command_line, dialect.name)
        if notes is not None:
            notes.extend(f"launch {command_line.where}: {p}" for p in problems)
        if new_root is not root:
            doc = ConfigDoc(new_root, path, kind, interpolate=doc.interpolate, text=text)
    return dialect.build(doc)


# Re-exported so callers can catch both from here.
__all__ += ["ExtractError", "NotATrainingConfig"]
