"""Static values the resolver works with, and the environments it evaluates in.

See :mod:`lintlora.extract.pyresolve` for how they are produced. Every value is one of
:class:`Const` (plain data with its origin), :class:`DictV`/:class:`SeqV` (containers that may
hold objects), :class:`Obj` (an object the extractor follows) or :class:`Unknown` (with the
reason it could not be resolved).
"""

from __future__ import annotations

import ast
from typing import Any, Callable

import libcst as cst

from lintlora.extract.pybounds import MAX_INT_BITS, MAX_STR, measure
from lintlora.extract.pyindex import Scope
from lintlora.training_setup import Origin

__all__ = ["DType", "V", "Const", "Unknown", "Obj", "DictV", "SeqV", "Env", "Frame", "weakest",
           "INF", "bounded_names", "MAX_UNRESOLVED_NAMES"]

INF = 1 << 60
"""An order after every statement (names read when a function runs, later)."""
_MAX_DEPTH = 60
"""How deep one evaluation may nest before the value is called unknown."""

_ORIGIN_RANK = {
    Origin.LITERAL: 0, Origin.VARIABLE: 1, Origin.CONFIG_FILE: 2, Origin.CLI_OVERRIDE: 2,
    Origin.LAUNCH: 2,
    Origin.ARGPARSE_DEFAULT: 3, Origin.DATACLASS_DEFAULT: 3, Origin.FUNCTION_DEFAULT: 3,
    Origin.ENV_DEFAULT: 3, Origin.LIBRARY_DEFAULT: 4, Origin.ASSUMED: 5, Origin.UNKNOWN: 6,
}


class DType(str):
    """A torch dtype, by its ``torch`` attribute name (``DType("bfloat16")``)."""

    __slots__ = ()


_TORCH_DTYPES = {
    "bfloat16": "bfloat16", "float16": "float16", "half": "float16", "float32": "float32",
    "float": "float32", "float64": "float64", "double": "float64", "uint8": "uint8",
    "int8": "int8", "float8_e4m3fn": "float8_e4m3fn",
}


# ---- values ---------------------------------------------------------------------------------
class V:
    """A static value."""

    __slots__ = ()


class Const(V):
    """Plain data (numbers, strings, bools, ``None``, tuples, dicts, :class:`DType`)."""

    __slots__ = ("value", "origin", "node", "source")

    def __init__(self, value: Any, origin: Origin = Origin.LITERAL,
                 node: cst.CSTNode | None = None, source: str | None = None) -> None:
        self.value = value
        self.origin = origin
        self.node = node
        self.source = source

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Const({self.value!r}, {self.origin.value}, {self.source!r})"


class Unknown(V):
    """A value that cannot be resolved statically; ``reason`` says why."""

    __slots__ = ("node", "reason")

    def __init__(self, node: cst.CSTNode | None = None, reason: str = "") -> None:
        self.node = node
        self.reason = reason

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Unknown({self.reason!r})"


class Obj(V):
    """A tracked object.

    ``kind``: ``"qual"`` (an imported name; ``data`` the dotted qualified name), ``"scope"``
    (a local ``def``/``class``; ``data`` the :class:`Scope`), ``"call"`` (a call of a recognised
    callable; ``data`` its canonical name, ``node`` the call, ``env`` where it was evaluated),
    ``"instance"`` (an instance of a local or library class; ``data`` the class value, ``node``
    the creating call, ``extra`` the config-file values when parsed from one),
    ``"argparse_ns"`` (``data`` the parser), ``"argparse_group"``, ``"namespace"``
    (``SimpleNamespace``/``argparse.Namespace``; ``data`` a :class:`DictV`), ``"vars"``
    (``vars(x)``/``asdict(x)``; ``data`` the object), ``"builtin"`` (``data`` its name),
    ``"self"`` (``data`` the class scope).
    """

    __slots__ = ("kind", "data", "node", "env", "extra", "path")

    def __init__(self, kind: str, data: Any = None, node: cst.CSTNode | None = None,
                 env: "Env | None" = None, extra: Any = None, path: str | None = None) -> None:
        self.kind = kind
        self.data = data
        self.node = node
        self.env = env
        self.extra = extra
        self.path = path

    def same(self, other: V) -> bool:
        return (isinstance(other, Obj) and other.kind == self.kind and other.node is self.node
                and (other.data is self.data or other.data == self.data))

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Obj({self.kind}, {self.data!r})"


MAX_UNRESOLVED_NAMES = 32
"""Most unresolved parts a dict (or a call's keyword arguments) remembers by name, for
messages: ``d1 = {**d0, **d0}; d2 = {**d1, **d1}; ...`` would otherwise double the list at each
line (2**30 names after 30 lines of a 2 KB file: lintlora was killed at 22 GB)."""


def bounded_names(names) -> tuple[str, ...]:
    """``names`` in order, without repeats, at most :data:`MAX_UNRESOLVED_NAMES` of them."""
    kept: dict[str, None] = {}
    for name in names:
        if name not in kept:
            kept[name] = None
            if len(kept) >= MAX_UNRESOLVED_NAMES:
                break
    return tuple(kept)


class DictV(V):
    """A dict built in the script: ``items`` maps each string key to ``(value, key node)``;
    ``complete`` is False when some entries could not be resolved (an unknown ``**`` or
    ``.update``), so a missing key may still be present at run time; ``unresolved`` names
    those parts (:func:`bounded_names`)."""

    __slots__ = ("items", "complete", "node", "unresolved")

    def __init__(self, items: dict, complete: bool = True, node: cst.CSTNode | None = None,
                 unresolved: tuple[str, ...] = ()) -> None:
        self.items = items
        self.complete = complete
        self.node = node
        self.unresolved = bounded_names(unresolved)


class SeqV(V):
    """A tuple or list whose items may be objects (``HfArgumentParser((A, B))``, the tuple a
    helper returns)."""

    __slots__ = ("items", "node")

    def __init__(self, items: list, node: cst.CSTNode | None = None) -> None:
        self.items = items
        self.node = node


def weakest(*origins: Origin) -> Origin:
    """The least certain of several origins (a literal combined with a default is a default)."""
    best = Origin.LITERAL
    for o in origins:
        if _ORIGIN_RANK[o] > _ORIGIN_RANK[best]:
            best = o
    return best


# ---- environments ---------------------------------------------------------------------------
class Frame:
    """One invocation context of a function (arguments bound to a call) and/or fixed values for
    loop variables (a sweep expanded by the extractor)."""

    __slots__ = ("func", "call", "caller", "loop", "depth")

    def __init__(self, func: Scope | None = None, call: cst.Call | None = None,
                 caller: "Env | None" = None, loop: dict | None = None, depth: int = 0) -> None:
        self.func = func
        self.call = call
        self.caller = caller
        self.loop = loop or {}
        self.depth = depth


class Env:
    """Where an expression is evaluated: its scope and (optionally) a :class:`Frame`."""

    __slots__ = ("scope", "frame")

    def __init__(self, scope: Scope, frame: Frame | None = None) -> None:
        self.scope = scope
        self.frame = frame


# ---- helpers ----------------------------------------------------------------------------------
def _literal_string(node: cst.SimpleString) -> str | bytes | None:
    """The value of a string literal; ``None`` when it cannot be read or is longer than
    :data:`~lintlora.extract.pybounds.MAX_STR` (its source text is about as long: at most
    four times for escapes)."""
    if len(node.value) > 4 * MAX_STR + 8:
        return None
    try:
        value = ast.literal_eval(node.value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (str, bytes)) and len(value) <= MAX_STR else None


def _number(node: cst.BaseExpression) -> Any:
    """The value of a number literal; ``None`` when it cannot be read or is beyond the bounds
    (:mod:`lintlora.extract.pybounds`: an integer of more than 128 bits)."""
    text = node.value.replace("_", "")  # type: ignore[attr-defined]
    if len(text) > 200:  # no number within the bounds is written with more characters
        return None
    if text.isascii() and text.isdigit() and (text[0] != "0" or not text.strip("0")):
        value = int(text)  # the common case, without compiling it (ast.literal_eval)
        return value if value.bit_length() <= MAX_INT_BITS else None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(measure(value), int) else None


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.FloorDivide: lambda a, b: a // b,
    cst.Modulo: lambda a, b: a % b,
    cst.Power: lambda a, b: a ** b,
    cst.BitOr: lambda a, b: a | b,
    cst.BitAnd: lambda a, b: a & b,
    cst.BitXor: lambda a, b: a ^ b,
    cst.LeftShift: lambda a, b: a << b,
    cst.RightShift: lambda a, b: a >> b,
}
"""The operators the resolver folds. None is computed before
:func:`lintlora.extract.pybounds.binop_refusal` has estimated its result from the operands."""
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
    cst.Is: lambda a, b: a is b,
    cst.IsNot: lambda a, b: a is not b,
}
_STR_METHODS = {"split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "replace",
                "format", "join", "startswith", "endswith", "title"}
_LIST_MUTATORS = {"append", "extend", "insert", "remove"}
_DICT_MUTATORS = {"update", "setdefault", "pop"}
_FLOW_METHODS = {"to", "cuda", "half", "bfloat16", "float", "train", "eval", "requires_grad_"}


def _is_plain(value: Any) -> bool:
    """Whether ``value`` is plain data within the resolver's bounds
    (:func:`lintlora.extract.pybounds.measure`)."""
    return isinstance(measure(value), int)


def _truth(value: Any) -> bool | None:
    try:
        return bool(value)
    except Exception:  # pragma: no cover - plain data always has a truth value
        return None


def _launch_merge(values: list[V]) -> V | None:
    """``parse_json_file(sys.argv[1])`` in one branch, ``parse_args_into_dataclasses()`` in the
    other: both give the dataclasses' defaults unless the launch supplies values (a JSON file
    the script does not name, or flags), so the command-line branch stands for both."""
    if not all(isinstance(v, Obj) and v.kind == "instance" for v in values):
        return None
    first = values[0]
    if not all(v.data is first.data or (isinstance(v.data, Obj) and v.data.same(first.data))  # type: ignore[union-attr]
               for v in values[1:]):
        return None
    plain = [v for v in values if v.extra is None]  # type: ignore[union-attr]
    others = [v for v in values if v.extra is not None]  # type: ignore[union-attr]
    if len(plain) >= 1 and all(isinstance(v.extra, Unknown) for v in others):  # type: ignore[union-attr]
        return plain[0]
    return None


def _same(a: V, b: V) -> bool:
    if isinstance(a, Const) and isinstance(b, Const):
        return type(a.value) is type(b.value) and a.value == b.value
    if isinstance(a, Obj):
        return a.same(b)
    return a is b
