"""Helpers for the rule unit tests: hand-built setups and a context with a toy estimator.

The toy estimator is deliberately simple and *different* from the real one, so the rule tests
pin the rules' logic (what they flag, where, with which severity and fixed setup), not the
estimator's numbers; the end-to-end tests (``test_rules_e2e.py``, ``test_cases.py``) use the
real estimator.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from lintlora import facts
from lintlora.context import Context
from lintlora.settings import Settings
from lintlora.training_setup import (
    CallSite,
    DataLoaderSpec,
    Evidence,
    Lora,
    ModelLoad,
    Origin,
    Quantization,
    Setting,
    Span,
    TrainingArgs,
    TrainingSetup,
)

GiB = 2**30
PATH = "train.py"


def at(line: int, column: int = 1, end_line: int | None = None) -> Span:
    """A span in the test file."""
    return Span(PATH, line, column, end_line)


def lit(value: Any, line: int, column: int = 1) -> Setting:
    """A literal value written at ``line``."""
    return Setting.literal(value, at(line, column), at(line, max(1, column - 5)))


def default(value: Any, source: str = "transformers/training_args.py (v4.46)") -> Setting:
    return Setting.library_default(value, source)


def call(kind: str, line: int, qualified: str | None = None, order: int | None = None, **kw: Any) -> CallSite:
    """A call site; ``args`` given as keyword ``args={...}``; ``order`` defaults to the line."""
    return CallSite(kind, qualified or f"model.{kind}", at(line), order=line if order is None else order, **kw)


def model(name: str = "meta-llama/Llama-2-7b-hf", line: int = 5, variable: str = "model", **fields: Any) -> ModelLoad:
    return ModelLoad(name_or_path=lit(name, line), span=at(line), variable=variable, **fields)


def lora(r: int | None = 8, targets: Any = ("q_proj", "v_proj"), line: int = 7, **fields: Any) -> Lora:
    return Lora(r=lit(r, line) if r is not None else Setting.unknown("args.r"),
                target_modules=lit(targets, line, 30), span=at(line), **fields)


def qlora4(line: int = 4, **fields: Any) -> Quantization:
    return Quantization(method=lit("bitsandbytes", line), bits=lit(4, line), span=at(line), **fields)


def training(line: int = 10, **fields: Any) -> TrainingArgs:
    fields.setdefault("gradient_checkpointing", default(False))
    return TrainingArgs(span=at(line, 8, line + 6), **fields)


def setup(**kw: Any) -> TrainingSetup:
    kw.setdefault("anchor", at(20))
    return TrainingSetup(PATH, **kw)


class ToyContext(Context):
    """A Context whose memory estimate is a toy function of the setup.

    device peak = weights (14 GiB, or 4 GiB when quantized) + activations (12 GiB without
    checkpointing, 2 GiB with) + 16 bytes per parameter trained in full (modules_to_save copies)
    + 1 GiB per LoRA target pattern that reaches the output layer. Architectures are the real
    catalog's; ``known_model=False`` makes every model unknown.
    """

    def __init__(self, settings: Settings | None = None, *, known_model: bool = True) -> None:
        super().__init__(settings)
        self.known_model = known_model

    def architecture(self, s: TrainingSetup):  # type: ignore[override]
        return super().architecture(s) if self.known_model else None

    def architecture_problem(self, s: TrainingSetup):  # type: ignore[override]
        if not self.known_model:
            return "model unknown: pass --model HUB_ID or --model-config path/config.json"
        return super().architecture_problem(s)

    def estimate(self, s: TrainingSetup):  # type: ignore[override]
        arch = self.architecture(s)
        if arch is None:
            return None
        weights = (4 if facts.is_quantized(s) else 14) * GiB
        act = (2 if facts.checkpointing(s).value is True else 12) * GiB
        full = 0
        saves = s.lora.modules_to_save.value if s.lora is not None and s.lora.modules_to_save.known else None
        if isinstance(saves, (list, tuple)) and all(isinstance(x, str) for x in saves):
            from lintlora.estimate.params import count_trainable

            full = count_trainable(arch, 8, ("q_proj",), saves).full_params * 16
        head = 0
        if s.lora is not None and s.lora.target_modules.known:
            t = s.lora.target_modules.value
            if (isinstance(t, (list, tuple)) and "lm_head" in t) or t == ".*":
                head = GiB
        breakdown = {"weights": weights, "activations": act, "full_copies": full, "lm_head_adapter": head}
        return SimpleNamespace(device_bytes=sum(breakdown.values()), breakdown=breakdown, rough=False)


def ctx(gpu: str | None = None, **settings: Any) -> ToyContext:
    known = settings.pop("known_model", True)
    return ToyContext(Settings(gpu=gpu, **settings), known_model=known)


def run(rule_cls: type, s: TrainingSetup, context: Context | None = None) -> list:
    """The findings of one rule on one setup."""
    return list(rule_cls().check(s, context or ctx()))


__all__ = [
    "GiB", "PATH", "at", "lit", "default", "call", "model", "lora", "qlora4", "training", "setup",
    "ToyContext", "ctx", "run", "Evidence", "DataLoaderSpec", "Setting", "Origin", "CallSite",
    "Quantization", "Lora", "ModelLoad", "TrainingArgs", "Span",
]


# ---- fixtures with headers ------------------------------------------------------------------

import re as _re
import shlex as _shlex
from pathlib import Path as _Path

ROOT = _Path(__file__).resolve().parents[1]


def settings_from_args(args: str) -> Settings:
    """Settings for a header's ``args=`` (the CLI flags the fixtures use: ``--gpu``,
    ``--gpu-memory``, ``--cpus``, ``--model``)."""
    from lintlora.settings import parse_memory_size

    words = _shlex.split(args)
    kw: dict[str, Any] = {}
    i = 0
    while i < len(words):
        flag, value = words[i], words[i + 1] if i + 1 < len(words) else None
        if flag == "--gpu":
            kw["gpu"] = value
        elif flag == "--gpu-memory":
            kw["gpu_memory_bytes"] = parse_memory_size(value)
        elif flag == "--cpus":
            kw["cpus"] = int(value)
        elif flag == "--model":
            kw["model"] = value
        else:
            raise ValueError(f"fixture header flag not understood: {flag}")
        i += 2
    return Settings(**kw)


def read_header(path: _Path) -> dict[str, Any]:
    """``{"args": str, "expect": [...], "forbid": [...], "future": bool}`` from the leading
    comment lines of a fixture or case (``# lintlora-fixture: args=...`` /
    ``# lintlora-case: args=...``, ``# expect: ...``, ``# forbid: ...``, ``# future: ...``)."""
    out: dict[str, Any] = {"args": "", "expect": None, "forbid": [], "future": False}
    for line in path.read_text(encoding="utf-8").splitlines()[:8]:
        m = _re.match(r"#\s*lintlora-(?:fixture|case):\s*args=(.*)$", line)
        if m:
            out["args"] = m.group(1).strip()
        m = _re.match(r"#\s*(expect|forbid):(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).split()
        if _re.match(r"#\s*future:", line):
            out["future"] = True
    return out


def lint(path: _Path | str, settings: Settings):
    """Run the real pipeline on one file."""
    from lintlora.engine import lint_paths

    return lint_paths([str(path)], settings)


__all__ += ["ROOT", "settings_from_args", "read_header", "lint"]
