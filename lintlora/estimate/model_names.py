"""Names that are not a catalogued id: ModelScope mirrors, and a fine-tune's base named in its
own local files (the pieces :func:`lintlora.estimate.architecture.resolve_architecture` uses
when the exact catalog lookup fails). Local files only, read bounded through
:mod:`lintlora.safeio`; never the network.

Every resolution made here is a reading by name, so it comes back with a sentence for the
estimate's assumptions (:attr:`Architecture.resolved_by
<lintlora.estimate.architecture.Architecture.resolved_by>`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["MODELSCOPE_MIRRORS", "modelscope_original", "base_model_named_in", "BASE_MODEL_FILES",
           "FRONT_MATTER_MAX_CHARS"]

MODELSCOPE_MIRRORS: dict[str, tuple[str, ...]] = {
    # ModelScope org (lower-case) -> the Hugging Face orgs whose repositories it mirrors under the
    # same repository name; () = many orgs. Read from ms-swift's model registrations, which pair
    # the two ids of each model (modelscope/ms-swift @3602360a swift/model/models/*.py), e.g.
    # llama.py Model('LLM-Research/Meta-Llama-3-8B-Instruct', 'meta-llama/Meta-Llama-3-8B-Instruct'),
    # gemma.py Model('AI-ModelScope/gemma-7b', 'google/gemma-7b'),
    # glm.py Model('ZhipuAI/glm-4-9b-chat', 'zai-org/glm-4-9b-chat'),
    # internlm.py Model('Shanghai_AI_Laboratory/internlm2_5-7b-chat', 'internlm/internlm2_5-7b-chat'),
    # yi.py Model('01ai/Yi-1.5-9B-Chat', '01-ai/Yi-1.5-9B-Chat').
    # ("qwen/..." and "deepseek-ai/..." need no entry: the Hub's ids match them case-insensitively.)
    "llm-research": (),
    "ai-modelscope": (),
    "zhipuai": ("thudm", "zai-org"),
    "shanghai_ai_laboratory": ("internlm",),
    "01ai": ("01-ai",),
    "openbmb": ("openbmb",),
}

_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def modelscope_original(name: str, ids: list[tuple[str, int]]) -> tuple[int, str] | None:
    """The catalog record a ModelScope id mirrors, by repository name.

    Args:
        name: ``org/repo`` as written (``LLM-Research/Meta-Llama-3-8B-Instruct``).
        ids: every catalogued id with its record index.

    Returns:
        ``(record index, the hub id matched)`` when ``org`` is a known mirror org and exactly
        one record has an id with the same repository name under one of the orgs it mirrors;
        else ``None`` (two records, or none: no guess).
    """
    org, _, repo = name.strip().partition("/")
    allowed = MODELSCOPE_MIRRORS.get(org.lower())
    if allowed is None or not _REPO_RE.fullmatch(repo):
        return None
    found: dict[int, str] = {}
    for hub_id, index in ids:
        hub_org, _, hub_repo = hub_id.partition("/")
        if hub_repo.lower() == repo.lower() and (not allowed or hub_org.lower() in allowed):
            found.setdefault(index, hub_id)
    if len(found) != 1:
        return None
    ((index, hub_id),) = found.items()
    return index, hub_id


BASE_MODEL_FILES = ("adapter_config.json", "README.md")
"""The files of a model folder (a fine-tune's checkpoint or adapter, or a Hugging Face cache
snapshot) that name the base model when the folder has no ``config.json``: peft's
``adapter_config.json`` (``base_model_name_or_path``, written by ``PeftModel.save_pretrained``)
and the model card's YAML front matter (``base_model:``, the Hub's model-card metadata field)."""

FRONT_MATTER_MAX_CHARS = 64 * 1024
"""The most characters of a model card searched for its closing ``---`` (front matter is a few
hundred bytes; a card without one within 64 Ki characters is treated as having none)."""


def _hub_id(value: Any) -> str | None:
    """``value`` when it is one hub id (``org/name``; a local path or anything else: ``None``)."""
    if isinstance(value, list) and len(value) == 1:  # model-card metadata allows a list
        value = value[0]
    if isinstance(value, str) and _HUB_ID_RE.fullmatch(value.strip()):
        return value.strip()
    return None


def _front_matter(text: str, path: Path) -> dict[str, Any] | None:
    """The YAML front matter of a model card (between a first line ``---`` and the next line
    ``---``), parsed with the extraction layer's bounded loader; ``None`` when there is none or
    it cannot be read."""
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3, FRONT_MATTER_MAX_CHARS)
    if end < 0:
        return None
    from lintlora.extract import ExtractError
    from lintlora.extract.yaml_loader import load_config_text, to_python

    try:
        data = to_python(load_config_text(text[3:end], str(path)))
    except (ExtractError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def base_model_named_in(folder: Path, read_text, reads: list | None = None
                        ) -> tuple[str, str] | None:
    """The base model a fine-tune's folder names in its own files, and the file that says so.

    Tries :data:`BASE_MODEL_FILES` in order: ``adapter_config.json``'s
    ``base_model_name_or_path``, then the model card's ``base_model:``. Only a hub id is taken
    (a path on the machine that trained it is not followed); a card naming several bases (a
    merge) names none.

    Args:
        folder: the model folder.
        read_text: ``read_text(path) -> str``, the caller's bounded, confined reader (it raises
            ``OSError`` or the caller's lookup error for a file it will not read).
        reads: a list the files consulted are appended to (absolute, present or not).

    Returns:
        ``(base hub id, file name)`` or ``None``.
    """
    for file_name in BASE_MODEL_FILES:
        path = folder / file_name
        if reads is not None:  # present or not: consulted (the caller returns it as data)
            reads.append(os.path.abspath(os.fspath(path)))
        if not path.is_file():
            continue
        try:
            text = read_text(path)
        except (OSError, LookupError):
            continue
        if file_name.endswith(".json"):
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                continue
            base = _hub_id(data.get("base_model_name_or_path")) if isinstance(data, dict) else None
        else:
            meta = _front_matter(text, path)
            base = _hub_id(meta.get("base_model")) if meta else None
        if base:
            return base, file_name
    return None
