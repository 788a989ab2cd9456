"""The launch a script's own module docstring gives for it, as launch evidence.

TRL's example scripts open with the command they are meant for (huggingface/trl
``examples/scripts/sft_gemma3.py`` @ f2cd57710ae3: ``accelerate launch --config_file
examples/accelerate_configs/deepspeed_zero3.yaml examples/scripts/sft_gemma3.py``), and so do many
scripts derived from them. A launch through a DeepSpeed or FSDP accelerate config (or the
``deepspeed`` launcher, or ``--deepspeed``) shards the model over the processes, which the
one-device estimate does not model (LL008 stays silent for a sharded run,
``rules/ll008_does_not_fit.py`` ``_sharded``). As in the torchtune dialect's header comment
(``dialects/torchtune.py`` ``_distributed_header``), the docstring is the author's word: evidence of
a sharded run, never a value. Only the module docstring is read (the first statement), at most
:data:`MAX_DOCSTRING_CHARS` characters of it.
"""

from __future__ import annotations

import re
from typing import Any

from lintlora.training_setup import Evidence, Span

__all__ = ["docstring_launch", "MAX_DOCSTRING_CHARS"]

MAX_DOCSTRING_CHARS = 20_000
"""Longest docstring read (TRL's run to a few hundred characters)."""

# a launch line: `accelerate launch ... --config_file <a DeepSpeed / ZeRO / FSDP config>`,
# `deepspeed [--num_gpus N] script.py`, or any launch line passing `--deepspeed <json>`
_ACCELERATE = re.compile(r"\baccelerate\s+launch\b[^\n]*?--config[_-]file[\s=]+(\S*(?:deepspeed|zero|fsdp)\S*)",
                         re.IGNORECASE)
_DEEPSPEED_LAUNCHER = re.compile(r"^\s*deepspeed\s+(?:--[\w-]+(?:[\s=]+\d+)?\s+){0,8}\S+\.py\b", re.MULTILINE)
_DEEPSPEED_FLAG = re.compile(r"\b(?:accelerate\s+launch|torchrun|python3?)\b[^\n]*?--deepspeed[\s=]+(\S+)")


def docstring_launch(docstring: str | None, source: str, path: str) -> list[Evidence]:
    """``[Evidence]`` of a sharded launch the module docstring gives, or ``[]``."""
    if not docstring:
        return []
    text = docstring[:MAX_DOCSTRING_CHARS]
    m = _ACCELERATE.search(text)
    kind = None
    if m:
        kind = "fsdp" if "fsdp" in m.group(1).lower() else "deepspeed"
    else:
        m = _DEEPSPEED_LAUNCHER.search(text) or _DEEPSPEED_FLAG.search(text)
        kind = "deepspeed" if m else None
    if m is None or kind is None:
        return []
    line_text = text[text.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
    return [Evidence(kind, Span(path, _line_of(line_text, source), 1),
                     f"the script's docstring launches it: {line_text[:200]}")]


def _line_of(line_text: str, source: str) -> int:
    """The 1-based line of ``line_text`` in the first part of ``source`` (1 when not found)."""
    head = source[:MAX_DOCSTRING_CHARS * 2]
    at = head.find(line_text) if line_text else -1
    return head.count("\n", 0, at) + 1 if at >= 0 else 1


def module_docstring(module: Any) -> str | None:
    """A LibCST module's docstring (``cst.Module.get_docstring``), ``None`` when it has none."""
    try:
        return module.get_docstring(clean=False)
    except (AttributeError, TypeError, ValueError, SyntaxError, RecursionError):
        # LibCST evaluates the string literal with ast.literal_eval, which raises SyntaxError
        # for a NUL byte in it (CPython 3.11) and ValueError on other releases
        return None
