"""Rules: one module per rule, registered through the ``lintlora.rules`` entry-point group.

Built-in rules are listed in ``pyproject.toml`` under ``[project.entry-points."lintlora.rules"]``
like any plugin's. :func:`load_rules` reads that group with ``importlib.metadata``; when lintlora
runs from a source tree that was never installed (no entry points), or from an install whose
metadata predates a rule, it falls back to :data:`BUILTIN_RULES`, the same list.

Importing this package is cheap: it imports no rule module (and never libcst, rich or yaml);
rule modules themselves import only the setup model, findings and facts, so ``lintlora rules``
and ``lintlora explain`` stay fast.

Public API:

- :func:`load_rules` -> ``list[type[Rule]]`` sorted by code (cached per process);
- :func:`load_problems` -> the plugin problems met by the last load (import failures, entry
  points that are not rules), each a :class:`RuleLoadProblem`; they are reported, not fatal;
- :func:`find_rule` -> the rule class for a code, or ``None``;
- :class:`DuplicateRuleError` when two different classes claim one code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.rules.base import Rule

__all__ = [
    "ENTRY_POINT_GROUP",
    "BUILTIN_RULES",
    "RuleLoadProblem",
    "DuplicateRuleError",
    "load_rules",
    "load_problems",
    "find_rule",
]

ENTRY_POINT_GROUP = "lintlora.rules"
"""The entry-point group built-in and third-party rules are registered in."""

BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    ("LL000", "lintlora.rules.ll000_syntax_error:SyntaxErrorRule"),
    ("LL001", "lintlora.rules.ll001_gradient_checkpointing_off:GradientCheckpointingOff"),
    ("LL002", "lintlora.rules.ll002_fp16_instead_of_bf16:Fp16InsteadOfBf16"),
    ("LL003", "lintlora.rules.ll003_broad_target_modules:BroadTargetModules"),
    ("LL004", "lintlora.rules.ll004_no_trainable_parameter_report:NoTrainableParameterReport"),
    ("LL005", "lintlora.rules.ll005_device_map:DeviceMap"),
    ("LL006", "lintlora.rules.ll006_empty_cache_misuse:EmptyCacheMisuse"),
    ("LL007", "lintlora.rules.ll007_dataloader_workers:DataloaderWorkers"),
    ("LL008", "lintlora.rules.ll008_does_not_fit:DoesNotFit"),
    ("LL009", "lintlora.rules.ll009_checkpointing_without_input_grads:CheckpointingWithoutInputGrads"),
    ("LL010", "lintlora.rules.ll010_precision_unsupported_by_gpu:PrecisionUnsupportedByGpu"),
    ("LL011", "lintlora.rules.ll011_fp16_trainable_weights:Fp16TrainableWeights"),
    ("LL012", "lintlora.rules.ll012_target_modules_unmatched:TargetModulesUnmatched"),
    ("LL013", "lintlora.rules.ll013_base_loaded_in_fp32:BaseLoadedInFp32"),
    ("LL014", "lintlora.rules.ll014_compute_dtype_fp32:ComputeDtypeFp32"),
    ("LL015", "lintlora.rules.ll015_kbit_prep_unquantized:KbitPrepUnquantized"),
    ("LL016", "lintlora.rules.ll016_quantized_without_adapter:QuantizedWithoutAdapter"),
    ("LL017", "lintlora.rules.ll017_fp16_overflow_model:Fp16OverflowModel"),
    ("LL018", "lintlora.rules.ll018_gemma_eager_attention:GemmaEagerAttention"),
    ("LL019", "lintlora.rules.ll019_pad_token_is_eos:PadTokenIsEos"),
    ("LL020", "lintlora.rules.ll020_trl_max_length:TrlMaxLength"),
    ("LL021", "lintlora.rules.ll021_compute_loss_signature:ComputeLossSignature"),
    ("LL022", "lintlora.rules.ll022_eval_logits_on_gpu:EvalLogitsOnGpu"),
    ("LL023", "lintlora.rules.ll023_collator_columns_dropped:CollatorColumnsDropped"),
    ("LL024", "lintlora.rules.ll024_sharded_qlora_quant_storage:ShardedQloraQuantStorage"),
    ("LL025", "lintlora.rules.ll025_deepspeed_config_mismatch:DeepSpeedConfigMismatch"),
)
"""``(code, "module:Class")`` of every built-in rule: the same table as pyproject's entry points
(a test keeps the two equal)."""


@dataclass(frozen=True)
class RuleLoadProblem:
    """A registered rule that could not be used.

    Attributes:
        name: the entry point's name (normally the rule code).
        target: the entry point's value, ``"module:Class"``.
        message: what went wrong, phrased for the user.
    """

    name: str
    target: str
    message: str

    def __str__(self) -> str:
        return f"rule plugin {self.name} ({self.target}): {self.message}"


class DuplicateRuleError(Exception):
    """Two different rule classes are registered under one code.

    The message names both targets so the user can uninstall or rename one.
    """


_cache: list | None = None
_problems: list[RuleLoadProblem] = []


def _import_target(target: str) -> object:
    """Import ``"package.module:Attr"`` and return the attribute (raises what the import raises)."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name.strip())
    obj: object = module
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj


def _entry_points() -> list[tuple[str, str]]:
    """``(name, value)`` of every entry point in the group; empty when metadata is unavailable."""
    only_builtins = _builtin_entry_points_only()
    if only_builtins is not None:
        return only_builtins
    try:
        from importlib.metadata import entry_points
    except ImportError:  # pragma: no cover - Python < 3.8 is not supported anyway
        return []
    try:
        eps: Iterable = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # pragma: no cover - broken metadata of some installed distribution
        return []
    return [(ep.name, ep.value) for ep in eps]


def _builtin_entry_points_only() -> list[tuple[str, str]] | None:
    """The group's entry points when a plain look at the import path shows that only
    lintlora's own built-ins are registered, or ``None`` when it cannot be sure.

    ``importlib.metadata`` costs a one-file run 20-35 ms to import (``email``, ``zipfile``,
    ``csv``...). When every ``sys.path`` entry is a folder (or missing), the only finder
    offering distributions is the standard ``PathFinder``, and every ``entry_points.txt`` of
    a ``*.dist-info``/``*.egg-info`` folder that mentions the group lists built-in targets only,
    ``importlib.metadata`` would find exactly those. Anything else (a zip on the path, another
    metadata finder, a plugin, a line this reader does not understand) returns ``None``, and
    ``importlib.metadata`` decides.
    """
    import os
    import sys
    from importlib.machinery import PathFinder

    if any(finder is not PathFinder and hasattr(finder, "find_distributions")
           for finder in sys.meta_path):
        return None
    builtin = {target.replace(" ", "") for _, target in BUILTIN_RULES}
    header = f"[{ENTRY_POINT_GROUP}]"
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return None  # a zip archive (or another kind of entry) holding distributions
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except (FileNotFoundError, NotADirectoryError):
                continue
            except (OSError, UnicodeDecodeError):
                return None
            if ENTRY_POINT_GROUP not in text:
                continue
            lines = [line.strip() for line in text.splitlines()]
            if header not in lines:
                return None
            for line in lines[lines.index(header) + 1:]:
                if line.startswith("["):
                    break
                if not line or line.startswith(("#", ";")):
                    continue
                key, sep, value = line.partition("=")
                if not sep or value.strip().replace(" ", "") not in builtin:
                    return None  # a plugin (or a line not understood here)
                found.append((key.strip(), value.strip()))
    return found


def _validate(name: str, target: str, obj: object) -> str | None:
    """Why ``obj`` is not a usable rule class, or ``None`` when it is."""
    from lintlora.rules.base import Rule

    if not isinstance(obj, type) or not issubclass(obj, Rule):
        return "is not a subclass of lintlora.rules.base.Rule"
    if not obj.code or not obj.name:
        return "does not set both `code` and `name`"
    if not callable(getattr(obj, "check", None)) or obj.check is Rule.check:
        return "does not implement check(setup, context)"
    return None


def load_rules(*, refresh: bool = False) -> "list[type[Rule]]":
    """Every registered rule class, built-ins and plugins, sorted by code.

    The built-ins of :data:`BUILTIN_RULES` are always loaded (an install whose metadata is stale
    or missing still gets them); entry points of the ``lintlora.rules`` group are added. An entry
    point naming the same class as a built-in is the built-in itself.

    Plugins that fail to import, or that name something that is not a :class:`Rule` subclass,
    are skipped and recorded (see :func:`load_problems`); a failing *built-in* is a bug in
    lintlora and raises.

    Args:
        refresh: re-read the entry points instead of returning the cached list (tests that
            install a plugin use it).

    Raises:
        DuplicateRuleError: two different classes claim one code; the message names both.
    """
    global _cache, _problems
    if _cache is not None and not refresh:
        return list(_cache)
    problems: list[RuleLoadProblem] = []
    by_code: dict[str, tuple[type, str]] = {}

    def add(cls: type, target: str) -> None:
        code = cls.code  # type: ignore[attr-defined]
        if code in by_code:
            previous, previous_target = by_code[code]
            if previous is cls:
                return
            raise DuplicateRuleError(
                f"rule code {code} is registered twice: {previous_target} and {target}; "
                f"uninstall one of the packages or give the plugin rule another code"
            )
        by_code[code] = (cls, target)

    for code, target in BUILTIN_RULES:
        cls = _import_target(target)
        why = _validate(code, target, cls)
        if why is not None:  # pragma: no cover - guarded by tests
            raise RuntimeError(f"built-in rule {code} ({target}) {why}")
        add(cls, target)  # type: ignore[arg-type]

    builtin_targets = {t.replace(" ", "") for _, t in BUILTIN_RULES}
    for name, target in _entry_points():
        if target.replace(" ", "") in builtin_targets:
            continue
        try:
            obj = _import_target(target)
        except Exception as exc:  # a plugin failing to import is reported, not fatal
            problems.append(RuleLoadProblem(name, target, f"failed to import: {type(exc).__name__}: {exc}"))
            continue
        why = _validate(name, target, obj)
        if why is not None:
            problems.append(RuleLoadProblem(name, target, why))
            continue
        if obj.code != name:  # type: ignore[attr-defined]
            problems.append(RuleLoadProblem(
                name, target, f"entry point name differs from the rule's code {obj.code!r}; "  # type: ignore[attr-defined]
                "the code is used"))
        add(obj, target)  # type: ignore[arg-type]

    _cache = [cls for _, (cls, _) in sorted(by_code.items())]
    _problems = problems
    return list(_cache)


def load_problems() -> list[RuleLoadProblem]:
    """Plugin problems met by the last :func:`load_rules` call (loads the rules if needed)."""
    if _cache is None:
        load_rules()
    return list(_problems)


def find_rule(code: str) -> "type[Rule] | None":
    """The registered rule class with this code (case-insensitive), or ``None``."""
    wanted = code.strip().upper()
    for cls in load_rules():
        if cls.code.upper() == wanted:
            return cls
    return None
