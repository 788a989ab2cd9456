"""Run settings: what the user asked for on the command line or in ``[tool.lintlora]``.

This is plain data. ``lintlora.config`` reads ``pyproject.toml`` into it and the CLI overrides
it; rules read it through :class:`lintlora.context.Context`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from lintlora.findings import Severity
from lintlora.limits import MAX_GPU_MEMORY_BYTES, MAX_NUMBER_CHARS, format_bytes

__all__ = ["Settings", "parse_memory_size", "DEFAULT_MAX_FILE_BYTES"]

DEFAULT_MAX_FILE_BYTES = 5 * 2**20
"""Files larger than this (5 MiB) are reported and skipped; ``--max-file-size`` changes it."""


@dataclass(frozen=True)
class Settings:
    """Options for one run.

    Attributes:
        select, ignore, extend_select: rule codes or code prefixes (``LL0``); ``select=None``
            means every registered rule.
        per_file_ignores: glob pattern -> codes ignored in matching files.
        exclude: glob patterns of paths discovery skips.
        fail_on: the lowest severity that makes the exit status 1.
        gpu: a GPU catalog name or alias, or an nvidia-smi device name.
        gpu_memory_bytes: usable GPU memory in bytes (``--gpu-memory 24GiB``), overriding the
            catalog's figure.
        model: hub id given on the command line (``--model``), for scripts that read the
            model from their own arguments: it replaces a model that is unresolved
            (``sys.argv[1]``, an empty default) or a default chosen at launch (argparse,
            ``HfArgumentParser``/dataclass, ``fire``/function and environment defaults:
            :func:`lintlora.facts.set_at_launch`), not a model the code or a config file
            names itself (:func:`lintlora.context.model_named_in_file`; such a file gets a
            notice that it was not used) unless lintlora has no architecture for that one.
        default_model: hub id from ``[tool.lintlora] model``; used only where the script's
            model cannot be resolved.
        model_config: path to a local ``config.json`` describing the model's architecture
            (``--model-config``); applies where ``model`` would (also without it): not to a
            model the file names, unless lintlora has no architecture for that one.
        default_model_config: the same from ``[tool.lintlora] model-config``; used only where
            the script's model cannot be resolved (like ``default_model``).
        params: a parameter count (``7e9``) for a rough estimate of an unknown model.
        cpus: host CPU count for LL007 (``None``: the rule's fixed threshold of 8).
        tokens: training-set size in tokens, for the time estimate.
        max_file_bytes: files above this size are reported and skipped.
        jobs: worker processes (``None``: number of CPUs).
        cache_dir, use_cache: the results cache.
        assume_versions: ``((package, version), ...)``: library releases given with
            ``--assume-version PKG=VER`` or ``[tool.lintlora] versions = {PKG = "VER"}`` (the flag
            winning per package), validated with ``packaging``; they override the project's
            pins (:meth:`lintlora.context.Context.library_version`).
        fixable, unfixable: the rule codes or prefixes whose autofixes ``--fix`` may apply
            (``fixable=None``: every rule's) and those it never applies (issue 17; ruff's
            ``fixable``/``unfixable``); ``unfixable`` wins.
        version_flags: the packages of ``assume_versions`` given with ``--assume-version`` (the
            others came from ``[tool.lintlora] versions``), for the messages' "where".
    """

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    fail_on: Severity = Severity.INFO
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    model: str | None = None
    default_model: str | None = None
    model_config: str | None = None
    default_model_config: str | None = None
    params: float | None = None
    cpus: int | None = None
    tokens: int | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    jobs: int | None = None
    cache_dir: str | None = None
    use_cache: bool = True
    assume_versions: tuple[tuple[str, str], ...] = ()
    version_flags: tuple[str, ...] = ()
    fixable: tuple[str, ...] | None = None
    unfixable: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)


_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
}


def parse_memory_size(text: str, maximum: int = MAX_GPU_MEMORY_BYTES) -> int:
    """Parse ``"24GiB"``, ``"24 GB"``, ``"80g"``, ``"25769803776"`` into bytes.

    ``GB`` is 10**9 and ``GiB`` 2**30 bytes; a bare ``G`` is read as GiB (as nvidia-smi and
    PyTorch count). A number without a unit is bytes, except that numbers below 4096 are read
    as GiB (``--gpu-memory 24``). The number is read exactly (decimal, not a float), so a
    400-digit one is simply too large, not an overflow.

    Args:
        maximum: the largest size accepted, in bytes (default
            :data:`lintlora.limits.MAX_GPU_MEMORY_BYTES`, 1 PiB).

    Raises:
        ValueError: the text is not a size (or is longer than
            :data:`lintlora.limits.MAX_NUMBER_CHARS` characters), the size is zero or negative
            (``"0"``, ``"-24GiB"``, ``"0.1B"``): there is no "no GPU" value; or it is above
            ``maximum``.
    """
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"not a memory size: {text[:24]!r}... is {len(text):,} characters long "
                         f"(examples: 24GiB, 80GB, 16g)")
    m = re.fullmatch(r"\s*([-+]?)\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m:
        raise ValueError(f"not a memory size: {text!r} (examples: 24GiB, 80GB, 16g)")
    number = Decimal(m.group(2))
    unit = m.group(3).lower()
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown unit {m.group(3)!r} in {text!r} (use B, KB, MB, GB, KiB, MiB, GiB)")
    if unit == "" and number < 4096:
        value = int(number * 2**30)
    else:
        value = int(number * _SIZE_UNITS[unit])
    if m.group(1) == "-" or value <= 0:
        # zero or less is no GPU memory at all; it must not quietly mean "no GPU given"
        raise ValueError(f"memory size must be positive: {text!r} (leave the option out when "
                         f"there is no GPU to check against)")
    if value > maximum:
        raise ValueError(f"{text.strip()!r} is more than {format_bytes(maximum)}, the largest "
                         f"size accepted")
    return value
