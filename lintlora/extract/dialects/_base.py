"""Shared machinery for the config dialects: key lookup, value conversion, Settings with spans.

A dialect module reads a :class:`ConfigDoc` (the positioned tree from
:mod:`lintlora.extract.yaml_loader` plus the file's path and kind) and builds a
:class:`~lintlora.training_setup.TrainingSetup`. Every value it takes from the file becomes a
``Setting`` with ``span`` = the value's text, ``key_span`` = the key, and ``expr`` = the key's
dotted path as written in the file (``model.lora_rank``), so rules and fixes can name the key
in the dialect's own spelling. Values the tool applies when a key is absent become
``LIBRARY_DEFAULT`` settings whose ``source`` cites the tool's file and commit, and whose
``expr`` is the key that would set them.

Conversion never raises for bad input: a value of the wrong type becomes
``Setting.unknown(expr="key: text", span)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from lintlora.extract.yaml_loader import YEntry, YMap, YNode, YScalar, to_python
from lintlora.training_setup import Origin, Setting, Span, TrainingSetup

__all__ = [
    "ConfigDoc",
    "LaunchEntry",
    "BadValue",
    "as_bool",
    "as_int",
    "as_count",
    "as_workers",
    "as_float",
    "as_str",
    "as_module_list",
    "as_dtype",
    "default",
    "derived",
    "pick",
    "or_default",
]


class BadValue(ValueError):
    """A value of the wrong type for its key (turned into an unknown Setting); ``reason``,
    when given, says why (a number beyond lintlora's bound) and becomes the Setting's
    source."""

    def __init__(self, value: Any = None, reason: str | None = None) -> None:
        super().__init__(value)
        self.reason = reason


# ---- converters ------------------------------------------------------------------------------
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0", "none", "null", ""}


def as_bool(value: Any) -> bool:
    """``True``/``False`` from a YAML bool, 0/1, or the strings tools accept ("True", "false").

    ``None`` (an empty value) is ``False``, as every tool here tests these keys for truth.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise BadValue(value)


_INT_LIMIT = 10**15
"""Largest magnitude accepted for an integer setting; nothing in a training config comes near
(token budgets are ~1e13), and bounding it keeps later float arithmetic finite."""


def as_int(value: Any) -> int:
    """An ``int`` from an int, an integral float, or a decimal string (``"4"``); magnitudes
    above 10**15 are rejected as not a real setting."""
    if isinstance(value, bool) or value is None:
        raise BadValue(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,16}\s*", value):
        value = int(value)
    if isinstance(value, int) and abs(value) <= _INT_LIMIT:
        return value
    if isinstance(value, (int, float)) or (isinstance(value, str)
                                           and re.fullmatch(r"\s*[+-]?\d+\s*", value)):
        raise BadValue(value, "a number beyond 10**15, lintlora's bound for a setting")
    raise BadValue(value)


def as_count(value: Any) -> int:
    """A positive int (batch sizes, ranks, sequence lengths, accumulation steps, bits): zero or
    a negative number is not a real setting and stays unknown."""
    n = as_int(value)
    if n < 1:
        raise BadValue(value)
    return n


def as_workers(value: Any) -> int:
    """A worker count: an int of 0 or more."""
    n = as_int(value)
    if n < 0:
        raise BadValue(value)
    return n


def as_float(value: Any) -> float:
    """A finite ``float`` from a number or a numeric string (YAML 1.1 reads ``3e-4`` as a
    string); infinities and NaN are rejected."""
    if isinstance(value, bool) or value is None:
        raise BadValue(value)
    try:
        number = float(value) if isinstance(value, (int, float, str)) else None
    except (ValueError, OverflowError):
        raise BadValue(value) from None
    if number is None:
        raise BadValue(value)
    if not math.isfinite(number) or abs(number) > 1e300:
        raise BadValue(value, "not a finite number within ±1e300, lintlora's bound for a "
                              "setting")
    return number


def as_str(value: Any) -> str:
    """A non-empty string (numbers are not accepted where a name is expected)."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise BadValue(value)


def as_module_list(value: Any) -> tuple[str, ...] | str:
    """Module names from a YAML list or a comma-separated string; a lone name stays a string
    only when it is a pattern (peft treats a string as a regular expression)."""
    if isinstance(value, (list, tuple)):
        names = tuple(str(v).strip() for v in value if isinstance(v, (str, int)) and str(v).strip())
        if len(names) != len(value):
            raise BadValue(value)
        return names
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if "," in text:
            return tuple(p.strip() for p in text.split(",") if p.strip())
        if re.fullmatch(r"[A-Za-z0-9_.\-]+", text) and "." not in text:
            return (text,)
        return text
    raise BadValue(value)


_DTYPES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16", "torch.bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16", "torch.float16": "float16",
    "fp32": "float32", "float32": "float32", "float": "float32", "torch.float32": "float32",
    "auto": "auto",
}


def as_dtype(value: Any) -> str:
    """A dtype normalised as ``training_setup`` says (``"bf16"`` -> ``"bfloat16"``)."""
    if isinstance(value, str) and value.strip().lower() in _DTYPES:
        return _DTYPES[value.strip().lower()]
    raise BadValue(value)


def default(value: Any, source: str, key: str | None = None) -> Setting:
    """A tool's default for an absent key, citing ``source``; ``expr`` names the key."""
    return Setting(value, Origin.LIBRARY_DEFAULT, None, None, source, key)


def derived(value: Any, base: Setting, source: str | None = None,
            expr: str | None = None) -> Setting:
    """A value computed from another setting, keeping its origin and position."""
    return Setting(value, base.origin, base.span, base.key_span,
                   source if source is not None else base.source,
                   expr if expr is not None else base.expr)


def added_tokens(doc: "ConfigDoc", keys: tuple[str, ...], source: str) -> dict[str, Setting]:
    """``{"added_tokens": Setting}`` when one of ``keys`` adds tokens to the tokenizer (a
    non-empty list, mapping or string, or ``true`` for a switch such as LLaMA-Factory's
    ``resize_vocab``), else ``{}``. The Setting keeps the key's position; ``expr`` names the
    key and ``source`` cites the tool. Rules read it through
    :func:`lintlora.facts.added_tokens` (the model section's ``extra``)."""
    for key in keys:
        s = doc.setting(key)
        if s is not None and s.known and s.value not in (None, False, "", (), [], {}):
            return {"added_tokens": Setting(s.value, s.origin, s.span, s.key_span, source, key)}
    return {}


# ---- values set at launch ---------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchEntry(YEntry):
    """An entry set (or replaced) by the launch's command line
    (:mod:`lintlora.extract.dialects.overrides`): its Setting has origin ``LAUNCH`` and
    ``source`` the words (``"lora_rank=16 (run.sh:4)"``); ``note`` says why the value is
    unknown (a word the shell reader could not follow), empty when it is known."""

    source: str = ""
    note: str = ""


# ---- the document ------------------------------------------------------------------------------
_INTERP = re.compile(r"\$\{([^{}]*)\}")
_MAX_INTERP_DEPTH = 16


@dataclass
class ConfigDoc:
    """A parsed config with the helpers dialects use.

    Attributes:
        root: the top-level mapping.
        path: the file's path (for spans).
        kind: ``"yaml"`` or ``"json"``.
        interpolate: resolve OmegaConf ``${a.b}`` references within the file (torchtune).
        text: the file's text, for what only its comments say (torchtune's header names the
            recipe and the launch: :func:`header_comments`); empty when not given.
    """

    root: YMap
    path: str
    kind: str = "yaml"
    interpolate: bool = False
    text: str = ""

    def header_comments(self, max_lines: int = 64) -> list[tuple[int, str]]:
        """The comment lines (1-based line number, text after ``#``) before the first key, at
        most ``max_lines`` lines read (a bound: a header is a few dozen lines)."""
        out = []
        for number, line in enumerate(self.text.splitlines()[:max_lines], start=1):
            stripped = line.strip()
            if stripped.startswith("#"):
                out.append((number, stripped[1:].strip()))
            elif stripped:
                break
        return out

    # -- lookup ------------------------------------------------------------------------------
    def entry(self, dotted: str, base: YMap | None = None) -> YEntry | None:
        """The entry at a dotted key path (``"train.micro_batch_size"``), or ``None``."""
        node: YNode | None = base if base is not None else self.root
        found: YEntry | None = None
        for part in dotted.split("."):
            if not isinstance(node, YMap):
                return None
            found = node.get(part)
            if found is None:
                return None
            node = found.value
        return found

    def node(self, dotted: str) -> YNode | None:
        """The value node at a dotted key path, or ``None``."""
        e = self.entry(dotted)
        return e.value if e is not None else None

    def has(self, dotted: str) -> bool:
        """Whether the key path exists (whatever its value, empty included)."""
        return self.entry(dotted) is not None

    def mapping(self, dotted: str) -> YMap | None:
        """The mapping at a key path, or ``None`` when absent or not a mapping."""
        n = self.node(dotted)
        return n if isinstance(n, YMap) else None

    def raw(self, dotted: str) -> Any:
        """Plain Python value at a key path (interpolations resolved when enabled), or
        ``None`` when absent."""
        e = self.entry(dotted)
        if e is None:
            return None
        if isinstance(e.value, YScalar):
            value, _ = self._resolve_scalar(e.value, dotted, 0)
            return None if value is _UNRESOLVED else value
        try:
            return to_python(e.value)
        except ValueError:
            return None

    def top_span(self) -> Span:
        """The top of the file (where setup-level findings point)."""
        return Span(self.path, 1, 1)

    # -- settings ----------------------------------------------------------------------------
    def setting(self, dotted: str, convert: Callable[[Any], Any] = lambda v: v, *,
                expr: str | None = None) -> Setting | None:
        """The Setting for a key path, or ``None`` when the key is absent.

        Scalars are converted with ``convert``; sequences and mappings are passed to it as
        plain Python data. A value ``convert`` rejects becomes an unknown Setting with the
        key's text. An OmegaConf interpolation that cannot be resolved in the file is unknown.
        """
        e = self.entry(dotted)
        if e is None:
            return None
        return self.entry_setting(e, convert, expr=expr or dotted, key=dotted)

    def entry_setting(self, e: YEntry, convert: Callable[[Any], Any] = lambda v: v, *,
                      expr: str | None = None, key: str | None = None) -> Setting:
        """The Setting of one entry (see :meth:`setting`)."""
        name = expr or e.key
        source = None
        if isinstance(e, LaunchEntry):
            if e.note:
                return Setting(None, Origin.UNKNOWN, e.value.span, e.key_span, e.note,
                               f"{name}: (set at launch)")
            s = self.entry_setting(YEntry(e.key, e.key_span, e.value), convert, expr=expr, key=key)
            if not s.known:
                return s
            return Setting(s.value, Origin.LAUNCH, s.span, s.key_span, e.source, s.expr)
        if isinstance(e.value, YScalar):
            value, source = self._resolve_scalar(e.value, key or e.key, 0)
            if value is _UNRESOLVED:
                return Setting(None, Origin.UNKNOWN, e.value.span, e.key_span, None,
                               f"{name}: {e.value.text}")
        else:
            try:
                value = to_python(e.value)
            except ValueError:
                return Setting(None, Origin.UNKNOWN, e.value.span, e.key_span, None, name)
        try:
            converted = convert(value)
        except (BadValue, ValueError, TypeError) as exc:
            text = e.value.text if isinstance(e.value, YScalar) else "..."
            return Setting(None, Origin.UNKNOWN, e.value.span, e.key_span,
                           getattr(exc, "reason", None), f"{name}: {text}")
        origin = Origin.VARIABLE if source else Origin.LITERAL
        return Setting(converted, origin, e.value.span, e.key_span, source, name)

    # -- OmegaConf interpolation ---------------------------------------------------------------
    def _resolve_scalar(self, node: YScalar, key: str, depth: int) -> tuple[Any, str | None]:
        """(value, source) of a scalar; ``source`` names the interpolation when one was used.

        Only references to keys of this file are resolved (``${batch_size}``,
        ``${.sibling}``); resolvers (``${oc.env:HOME}``) and missing keys are unresolved.
        """
        value = node.value
        if not (self.interpolate and isinstance(value, str) and "${" in value):
            return value, None
        if depth > _MAX_INTERP_DEPTH:
            return _UNRESOLVED, None
        whole = _INTERP.fullmatch(value.strip())
        if whole:
            target = self._lookup_ref(whole.group(1), key)
            if target is None or not isinstance(target[1], YScalar):
                return _UNRESOLVED, None
            resolved, _ = self._resolve_scalar(target[1], target[0], depth + 1)
            if resolved is _UNRESOLVED:
                return _UNRESOLVED, None
            return resolved, "${" + whole.group(1) + "}"

        parts: list[str] = []
        pos = 0
        for m in _INTERP.finditer(value):
            target = self._lookup_ref(m.group(1), key)
            if target is None or not isinstance(target[1], YScalar):
                return _UNRESOLVED, None
            resolved, _ = self._resolve_scalar(target[1], target[0], depth + 1)
            if resolved is _UNRESOLVED:
                return _UNRESOLVED, None
            parts.append(value[pos:m.start()])
            parts.append("null" if resolved is None else str(resolved))
            pos = m.end()
        parts.append(value[pos:])
        return "".join(parts), value

    def _lookup_ref(self, ref: str, key: str) -> tuple[str, YNode] | None:
        ref = ref.strip()
        if not ref or ":" in ref:  # a resolver such as oc.env:VAR
            return None
        if ref.startswith("."):
            # relative: one dot = the key's own mapping, each further dot one level up
            dots = len(ref) - len(ref.lstrip("."))
            parent = key.split(".")[:-1]
            if dots - 1 > len(parent):
                return None
            base = parent[: len(parent) - (dots - 1)]
            target = ".".join(base + [ref[dots:]]) if ref[dots:] else ".".join(base)
        else:
            target = ref
        e = self.entry(target)
        return (target, e.value) if e is not None else None

    # -- setup ---------------------------------------------------------------------------------
    def new_setup(self, framework: str, dialect: str, **sections: Any) -> TrainingSetup:
        """A TrainingSetup for this file anchored at its top."""
        return TrainingSetup(path=self.path, kind=self.kind, framework=framework,
                             dialect=dialect, anchor=self.top_span(), **sections)


class _Unresolved:
    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "<unresolved>"


_UNRESOLVED: Any = _Unresolved()


def pick(*settings: Setting | None) -> Setting | None:
    """The first setting that is present (not ``None``)."""
    for s in settings:
        if s is not None:
            return s
    return None


def or_default(setting: Setting | None, value: Any, source: str, key: str) -> Setting:
    """``setting`` when the key was written, else the tool's cited default."""
    return setting if setting is not None else default(value, source, key)

