"""The library releases an estimate assumes, and the terms that depend on them.

Some terms of the memory model changed with a library release:

* bitsandbytes < 0.43.2: ``MatMul4Bit.forward`` kept its input for backward
  (``ctx.tensors = (A, B)``); bitsandbytes PR #1270 (merged 2024-07-16, released in 0.43.2,
  CHANGELOG "QLoRA bug fix") saves ``(None, B)`` (:func:`bnb_saves_input`,
  ``EstimateInputs.bnb_saves_input``).
* torchao < 0.2: ``to_nf4`` quantized each weight in one piece (before pytorch/ao PR #196,
  2024-05-01), a load-phase transient of many bytes per element
  (:func:`torchao_unchunked`, ``EstimateInputs.torchao_unchunked``).
* transformers < 5: ``from_pretrained`` without ``torch_dtype`` loaded float32 weights;
  transformers 5 loads the checkpoint's own dtype (``dtype="auto"`` by default)
  (:func:`transformers_loads_fp32`).

The releases come from ``assumed_versions``: ``(package, version)`` pairs given with
``--assume-version PKG=VER`` (``origin`` "--assume-version"), or ``(package, version, origin)``
triples the linter's :class:`lintlora.context.Context` builds from
:meth:`~lintlora.context.Context.library_version` (``--assume-version``, ``[tool.lintlora]
versions``, or the project's own pins: ``origin`` then names the file and line,
``"bitsandbytes==0.41.1 from requirements.txt:3"``; the estimator reads no file). A package not
given takes :data:`DEFAULT_VERSIONS` (``origin`` "assumed, not read from the project"), the
releases the estimator's other terms were read or measured with (:mod:`.profiles`: torch 2.13,
transformers 5.24, peft 0.21.2, bitsandbytes 0.50.2, trl 1.x).

``EstimateInputs.assumed_versions`` carries those entries; :func:`version_of` answers for any
package of :data:`DEFAULT_VERSIONS` with the default filled in.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from lintlora.library_versions import KNOWN_PACKAGES, canonical_package, parse_assume_version

__all__ = ["DEFAULT_VERSIONS", "KNOWN_PACKAGES", "parse_assume_version", "canonical_package", "version_of",
           "bnb_saves_input", "torchao_unchunked", "transformers_loads_fp32", "version_notes", "bnb_note",
           "BNB_INPUT_FIX", "ORIGIN_FLAG", "ORIGIN_DEFAULT", "KNOWN_RELEASES", "TERM_PACKAGES"]

# the releases the estimator's terms were read or measured with (profiles.py module docstring)
DEFAULT_VERSIONS: dict[str, str] = {
    "bitsandbytes": "0.50.2",
    "transformers": "5.24.0",
    "peft": "0.21.2",
    "trl": "1.0.0",
    "torch": "2.13.0",
    # the newest torchao on PyPI on 2026-12-01 (``pip index versions torchao``)
    "torchao": "0.18.0",
}
TERM_PACKAGES = tuple(DEFAULT_VERSIONS)
"""The packages a term of the estimate depends on (each has a default release)."""
assert set(TERM_PACKAGES) <= set(KNOWN_PACKAGES)

KNOWN_RELEASES: dict[str, tuple[str, ...]] = {
    # 4.46.0: Trainer passes num_items_in_batch to compute_loss (the 4.46 gradient-accumulation
    # loss fix, issue 16 LL021); 4.57.6: the newest 4.x release lintlora's rules cite (LL009:
    # modeling_utils.py 4.57.6); 5.0.0: dtype="auto"
    # and non-reentrant checkpointing by default
    "transformers": ("4.46.0", "4.57.6", "5.0.0"),
    # 0.42.0: litgpt's 2024 pin (LITGPT_2024_BNB below); 0.43.2: PR #1270
    "bitsandbytes": ("0.42.0", "0.43.2"),
    "torchao": ("0.2.0",),
}
"""Releases lintlora knows besides :data:`DEFAULT_VERSIONS`, where a version-dependent term or
rule changes: a bounded specifier of the project (``transformers<5``) is taken as the newest of
these (or of the releases its own clauses name, or the default) that it allows
(:meth:`lintlora.context.Context.library_version`)."""
# bitsandbytes PR #1270 (released in 0.43.2): 4-bit matmuls no longer keep their input
BNB_INPUT_FIX = Version("0.43.2")
# pytorch/ao PR #196 (released in 0.2.0): NF4 quantization in chunks
TORCHAO_CHUNKED = Version("0.2.0")
ORIGIN_FLAG = "--assume-version"
ORIGIN_DEFAULT = "assumed, not read from the project"


def _given(assumed_versions, pkg: str) -> tuple[str, str] | None:
    for entry in assumed_versions or ():
        if entry[0] == pkg:
            return entry[1], (entry[2] if len(entry) > 2 and entry[2] else ORIGIN_FLAG)
    return None


def version_of(assumed_versions, pkg: str) -> tuple[Version, str]:
    """The release of ``pkg`` the estimate assumes, and where it came from: the entry's own
    origin (a triple's third element: ``"bitsandbytes==0.41.1 from requirements.txt:3"``),
    :data:`ORIGIN_FLAG` for a pair, else :data:`ORIGIN_DEFAULT`.

    Raises:
        KeyError: ``pkg`` neither given nor in :data:`DEFAULT_VERSIONS`.
    """
    given = _given(assumed_versions, pkg)
    if given is not None:
        try:
            return Version(given[0]), given[1]
        except InvalidVersion:
            pass
    return Version(DEFAULT_VERSIONS[pkg]), ORIGIN_DEFAULT


def bnb_saves_input(assumed_versions) -> bool:
    """Whether the assumed bitsandbytes keeps each 4-bit matmul's input (< 0.43.2)."""
    return version_of(assumed_versions, "bitsandbytes")[0] < BNB_INPUT_FIX


def torchao_unchunked(assumed_versions) -> bool:
    """Whether the assumed torchao quantizes a weight to NF4 in one piece (< 0.2)."""
    return version_of(assumed_versions, "torchao")[0] < TORCHAO_CHUNKED


def transformers_loads_fp32(assumed_versions) -> bool:
    """Whether the assumed transformers loads float32 weights when ``torch_dtype`` is not given
    (transformers < 5; 5.0 made ``dtype="auto"`` the default of ``from_pretrained``)."""
    return version_of(assumed_versions, "transformers")[0].major < 5


# litgpt's pyproject.toml pinned bitsandbytes==0.42.0 (with lightning 2.3-2.4) up to fe96c636
# (2024-12-23) and bitsandbytes>=0.45.2,<0.46 on Linux from 1f00c068 (2025-03-12)
# (Lightning-AI/litgpt history of pyproject.toml): a litgpt QLoRA run of 2024 had the old
# 4-bit matmul that keeps its input.
LITGPT_2024_BNB = "0.42.0"


def bnb_note(assumed_versions, framework: str | None = None) -> str:
    """The sentence naming the bitsandbytes release assumed and what it keeps for backward."""
    v, origin = version_of(assumed_versions, "bitsandbytes")
    if framework == "litgpt" and origin == ORIGIN_DEFAULT:
        return (f"bitsandbytes {v} ({origin}): 4-bit matmuls keep no copy of their input (bitsandbytes PR #1270, "
                f"0.43.2); litgpt pinned bitsandbytes=={LITGPT_2024_BNB} until 2024-12 (pyproject.toml, fe96c636), "
                f"which keeps one per quantized linear: --assume-version bitsandbytes={LITGPT_2024_BNB} for a run of "
                "that time")
    if v < BNB_INPUT_FIX:
        return (f"bitsandbytes {v} ({origin}): before 0.43.2 each 4-bit matmul keeps its input for backward "
                "(MatMul4Bit ctx.tensors = (A, B); fixed by bitsandbytes PR #1270), about 2·(3h + I) bytes per "
                "token per layer without checkpointing")
    return (f"bitsandbytes {v} ({origin}): 4-bit matmuls keep no copy of their input (bitsandbytes PR #1270, "
            "0.43.2); older releases keep one per quantized linear, which adds about 2·(3h + I) bytes per token "
            "per layer without checkpointing")


def version_notes(assumed_versions, packages: tuple[str, ...]) -> list[str]:
    """One sentence per package in ``packages``: the release assumed and its origin."""
    out = []
    for pkg in packages:
        v, origin = version_of(assumed_versions, pkg)
        out.append(f"{pkg} {v} ({origin})")
    return out
