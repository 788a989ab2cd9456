"""The ranges of the numbers a user gives lintlora (options and ``[tool.lintlora]`` keys).

Each number on the command line or in a configuration file is the user's input, so a value out
of range is a usage error naming the option (or the file and key), exit status 2, never an
overflow deep in the estimator (``--params 1e400`` used to reach it as ``inf``; a 400-digit
``--gpu-memory`` raised ``OverflowError``; both ended as "internal error"). The bounds are
far beyond any real value, so that no one meets them in use, and small enough that every
product the estimator forms from them (bytes = parameters x bytes per parameter; activations =
batch x sequence x width x layers x bytes) stays an exact integer or a finite float.

This module is in the model layer: it imports nothing.
"""

from __future__ import annotations

__all__ = [
    "MAX_NUMBER_CHARS", "MAX_GPU_MEMORY_BYTES", "MAX_PARAMS", "MAX_TOKENS", "MAX_CPUS",
    "MAX_JOBS", "MAX_FILE_SIZE_LIMIT", "MAX_BATCH_SIZE", "MAX_SEQ_LEN", "MAX_LORA_RANK",
    "format_bytes",
]

MAX_NUMBER_CHARS = 64
"""Longest text read as a number (``"24GiB"``, ``"7e9"``): a 64-character number is already
far beyond every bound below, and a longer one is not converted at all (Python refuses to
convert integers of more than 4,300 digits, and converting long ones costs time)."""

MAX_GPU_MEMORY_BYTES = 2**50
"""``--gpu-memory`` / ``gpu-memory``: at most 1 PiB. The largest single accelerators have
288 GB (NVIDIA B300), more than three orders of magnitude less."""

MAX_PARAMS = 10**15
"""``--params``: at most 10^15 parameters, 500 times the largest published models (about
2 x 10^12)."""

MAX_TOKENS = 10**15
"""``--tokens``: at most 10^15 training tokens, about 25 times the largest pre-training corpora
(about 4 x 10^13 tokens); fine-tuning sets are many orders of magnitude smaller."""

MAX_CPUS = 8192
"""``--cpus`` / ``cpus``: at most 8,192, the largest CPU count a Linux kernel can be built for
(``NR_CPUS`` with ``CONFIG_MAXSMP`` on x86-64)."""

MAX_JOBS = 1024
"""``--jobs``: at most 1,024 worker processes. A worker per CPU is the useful maximum, and each
imports LibCST and the rules (tens of MB), so a larger pool only exhausts memory and the
process table."""

MAX_FILE_SIZE_LIMIT = 2**30
"""``--max-file-size`` / ``max-file-size``: at most 1 GiB (the default is 5 MiB). A file is read
whole and parsed in memory, at many times its size; beyond this no run could finish."""

MAX_BATCH_SIZE = 2**20
"""``lintlora estimate --batch-size``: at most 1,048,576 sequences per micro-batch."""

MAX_SEQ_LEN = 2**24
"""``lintlora estimate --seq-len``: at most 16,777,216 tokens, beyond the longest context
windows published (10 million tokens)."""

MAX_LORA_RANK = 2**16
"""``lintlora estimate --rank``: at most 65,536; a rank is useful only up to the layer's
width, and the widest projections of published models are about 53,000 (Llama 3.1 405B's
MLP)."""


def format_bytes(count: int) -> str:
    """A byte count for a message: ``"1 PiB"``, ``"1 GiB"``, ``"512 MiB"`` (binary units)."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count:,} bytes"
