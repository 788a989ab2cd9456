"""The prefilter: skip, before parsing, a file that cannot hold a training setup (issue 8).

Most Python files in a repository are ordinary code: utilities, tests, data tools. The Python
extractor parses a file with LibCST (about 80 µs a line here, most of a run) and then gives up
on it unless the module imports one of the libraries it reads or calls one of the methods it
recognises (:meth:`lintlora.extract.python._Extractor.run`, the test after ``build_index``:
``imported_roots & _INTERESTING_ROOTS or methods & _INTERESTING_METHODS``). An import spells
its module name and a method call spells its method name, so a file whose text contains none
of those words fails that test for certain, and parsing it with LibCST can only end in
"nothing to extract". :func:`skips_unparsed` decides that from the text with substring
searches (about 1 µs per kilobyte) before LibCST is even imported; it is the first step of
:func:`lintlora.extract.python.extract_python_source`, so notebooks (their code cells joined,
JSON escapes already decoded) go through it too.

The rule is conservative on purpose:

- a *substring* test: ``torch`` also matches ``torchvision`` and ``trl`` matches ``ctrl``;
  such files are parsed as before (the price is only speed);
- a file that CPython's own parser refuses (a syntax error, a Python 2 file, nesting past
  CPython's limits) is kept, so its ``LL000`` is reported exactly as before. That check builds
  the AST only (C, about a fifth of LibCST's parse time here) and runs nothing.

What the rule gives up: a file CPython parses but LibCST would not (syntax newer than LibCST
knows) is no longer reported as ``LL000`` when it names no training library; and such a file
is never handed to LibCST's native parser, which also cannot crash on it.

``tests/test_prefilter.py`` checks that the word lists cover the extractor's own sets, and
that over every fixture the prefilter never skips a file that has a finding. YAML and JSON
configs have their own cheap key test
(:func:`lintlora.extract.yaml_config.looks_like_training_config`).
"""

from __future__ import annotations

import warnings

__all__ = [
    "LIBRARY_ROOTS",
    "RECOGNISED_METHODS",
    "may_hold_setup",
    "skips_unparsed",
]

LIBRARY_ROOTS: tuple[str, ...] = (
    "transformers", "peft", "trl", "torch", "unsloth", "accelerate", "bitsandbytes", "deepspeed",
)
"""Top-level packages the Python extractor reads (its ``_INTERESTING_ROOTS``)."""

RECOGNISED_METHODS: tuple[str, ...] = (
    "gradient_checkpointing_enable", "gradient_checkpointing_disable",
    "activation_checkpointing_enable", "activation_checkpointing_disable",
    "print_trainable_parameters", "get_nb_trainable_parameters", "enable_input_require_grads",
    "from_pretrained", "empty_cache", "backward",
)
"""Method names that make the extractor look at a file importing none of those packages (its
``_INTERESTING_METHODS``)."""

_WORDS = LIBRARY_ROOTS + RECOGNISED_METHODS


def may_hold_setup(text: str) -> bool:
    """Whether Python source ``text`` names one of :data:`LIBRARY_ROOTS` or
    :data:`RECOGNISED_METHODS`. ``False`` means the extractor would find no setup in it.

    (Suppression comments need no word here: the engine reads them, and reports unused ones,
    whatever the extractor returns.)"""
    return any(word in text for word in _WORDS)


def skips_unparsed(text: str) -> bool:
    """Whether the Python extractor may return "no setup" for ``text`` without parsing it:
    :func:`may_hold_setup` is false and CPython parses the text (AST only; a file it refuses
    goes on to the extractor, which reports the problem as ``LL000``)."""
    if may_hold_setup(text):
        return False
    import ast

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code
            compile(text[1:] if text.startswith("\ufeff") else text, "<lintlora-prefilter>",
                    "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True
