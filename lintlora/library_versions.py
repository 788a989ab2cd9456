"""The libraries whose release lintlora reads, their names, and ``PKG=VER`` (issue 16).

Model layer (imports nothing of lintlora): the configuration (``[tool.lintlora] versions``), the
command line (``--assume-version``), the extraction of a project's pins
(:mod:`lintlora.extract.project_versions`) and the estimator (:mod:`lintlora.estimate.versions`,
which re-exports these names) share them.
"""

from __future__ import annotations

__all__ = ["KNOWN_PACKAGES", "canonical_package", "parse_assume_version", "MAX_VERSION_CHARS"]

KNOWN_PACKAGES: tuple[str, ...] = (
    "bitsandbytes", "transformers", "peft", "trl", "torch", "torchao",
    "accelerate", "deepspeed", "unsloth", "axolotl", "llamafactory", "torchtune", "litgpt",
    "flash-attn",
)
"""Every package ``--assume-version``, ``[tool.lintlora] versions`` and the project's files are
read for (PEP 503 names): those a term of the estimate depends on
(:data:`lintlora.estimate.versions.TERM_PACKAGES`, the first six) and those rules may depend on."""

_ALIASES = {
    # LLaMA-Factory's setup.py names the distribution "llamafactory"; people also write the
    # repository's name
    "llama-factory": "llamafactory",
    # the repository's name (Dao-AILab/flash-attention); the distribution is flash-attn
    "flash-attention": "flash-attn",
    # conda names PyTorch "pytorch" (conda-forge and the pytorch channel)
    "pytorch": "torch",
}

MAX_VERSION_CHARS = 40
"""A version string longer than this is not a release number (bounded input)."""


def canonical_package(name: str) -> str:
    """``"Llama_Factory"`` -> ``"llamafactory"``: the PEP 503 name (``packaging``'s
    ``canonicalize_name``), with the other names people write for one distribution folded in
    (``llama-factory``, ``flash-attention``, conda's ``pytorch``)."""
    from packaging.utils import canonicalize_name

    n = canonicalize_name(str(name).strip())
    return _ALIASES.get(n, n)


def parse_assume_version(text: str) -> tuple[str, str]:
    """``"bitsandbytes=0.41.1"`` (or ``PKG==VER``) -> ``("bitsandbytes", "0.41.1")``.

    Raises:
        ValueError: not ``PKG=VER``, a package lintlora does not read the release of
            (:data:`KNOWN_PACKAGES`), or a version :class:`packaging.version.Version` refuses.
    """
    from packaging.version import InvalidVersion, Version

    if not isinstance(text, str) or "=" not in text or len(text) > 80:
        raise ValueError(f"{str(text)[:80]!r}: expected PKG=VER (for example bitsandbytes=0.41.1)")
    pkg, _, ver = text.partition("=")
    pkg = canonical_package(pkg)
    ver = ver.strip().lstrip("=")  # PKG==VER as pip writes it
    if pkg not in KNOWN_PACKAGES:
        raise ValueError(f"{pkg!r}: not a package lintlora reads the release of (known: {', '.join(KNOWN_PACKAGES)})")
    if not ver or len(ver) > MAX_VERSION_CHARS:
        raise ValueError(f"{pkg}: {ver[:MAX_VERSION_CHARS]!r} is not a release number")
    try:
        Version(ver)
    except InvalidVersion:
        raise ValueError(f"{pkg}: {ver!r} is not a release number (PEP 440)") from None
    return pkg, ver
