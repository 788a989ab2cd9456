"""Shared helpers of the LL019-LL023 tests: extract a script with the real Python extractor,
pin library versions, and run one rule with the real context."""

from __future__ import annotations

import dataclasses
import textwrap

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.settings import Settings
from lintlora.training_setup import PinnedVersion, Span, TrainingSetup

PATH = "/proj/train.py"


def setups(source: str) -> list[TrainingSetup]:
    """The setups the real extractor builds from ``source`` (dedented)."""
    return list(extract_python(PATH, textwrap.dedent(source)))


def pinned(setup: TrainingSetup, **versions: str) -> TrainingSetup:
    """``setup`` with exact pins (``trl="0.19.1"``) read from requirements.txt line 1, 2..."""
    pins = tuple(PinnedVersion(name, f"=={v}", v, Span("/proj/requirements.txt", i + 1), "requirements")
                 for i, (name, v) in enumerate(versions.items()))
    return dataclasses.replace(setup, versions=pins)


def findings(rule_cls: type, source: str, gpu: str | None = None, **versions: str) -> list:
    """The findings of ``rule_cls`` over every setup of ``source``, deduplicated by span."""
    context = Context(Settings(gpu=gpu) if gpu else Settings())
    out, seen = [], set()
    for s in setups(source):
        if versions:
            s = pinned(s, **versions)
        for f in rule_cls().check(context.apply_overrides(s), context):
            key = (f.span.line, f.span.column, f.message)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out
