"""Static evaluation of expressions in a script, without running it.

:class:`Resolver` answers "what value does this expression have, and where was it written?"
for the expressions the extractor cares about. It follows values the way scripts route them:
literals; names assigned in the module or the enclosing function (the last assignment that
runs before the use; ``if`` tests that can be decided pick a branch); tuple unpacking;
``dict(...)``/``{...}`` with later item assignments and ``.update``; list ``.append``;
arithmetic, comparisons, f-strings, ``x if c else y``; argparse ``add_argument`` defaults read
through ``args.NAME``; dataclass ``field(default=...)`` through ``HfArgumentParser``; helper
functions (their ``return``, their parameters bound to the call's arguments, or their defaults);
``os.environ.get("X", default)``; ``getattr(torch, "bfloat16")``; attribute assignments made
after an object is built.

Values are :class:`V` instances: :class:`Const` (plain data with its :class:`Origin`, the node
it was written at and a ``source`` naming the path it took), :class:`DictV`/:class:`SeqV`
(containers whose items may be objects), :class:`Obj` (an object the extractor tracks: an
imported name, a local function or class, a call of a recognised constructor, an argparse
namespace, a dataclass instance...), and :class:`Unknown` (with the reason). Nothing is ever
guessed: when two assignments could apply and disagree, the value is unknown.
"""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

from lintlora.extract import pybounds
from lintlora.extract.pyargs import ArgumentSources
from lintlora.extract.pyindex import Binding, CallRecord, ModuleIndex, Scope
from lintlora.extract.pyvalues import (  # noqa: F401 - re-exported for the extractor
    INF, _BINOPS, _CMPOPS, _literal_string, _number, _DICT_MUTATORS, _FLOW_METHODS, _LIST_MUTATORS, _MAX_DEPTH,
    _ORIGIN_RANK, _STR_METHODS, _TORCH_DTYPES, Const, DictV, DType, Env, Frame, Obj, SeqV,
    Unknown, V, _is_plain, _launch_merge, _same, _truth, weakest,
)
from lintlora.extract.qualnames import (  # noqa: F401 - re-exported for the extractor
    _BUILTINS, _CALL_OBJECTS, _MODEL_FLOW, _UNPACKED_LOADERS, DEFAULTS_CLASS, canonical,
)
from lintlora.extract.pysetters import SETTERS as _SETTERS
from lintlora.training_setup import Origin

_TA_CLASSES = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "TRLConfig"})
"""Defaults entries of the training-argument classes (they all inherit the ``set_*`` helpers)."""

__all__ = ["DType", "V", "Const", "Unknown", "Obj", "DictV", "SeqV", "Env", "Frame", "Resolver",
           "weakest", "INF", "LAUNCHER_ENV"]

LAUNCHER_ENV = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1"}
"""What the second process of a two-process data-parallel launch reads (torchrun, accelerate
launch, deepspeed set these per process): rank 1, so a per-rank placement
(``{"": local_rank}``) is told from a hard-coded GPU 0."""


MAX_ALTERNATIVES = 32
"""Most bindings of one name, each under a condition lintlora cannot decide, that a lookup
weighs (each one is evaluated); beyond it the name is unknown ("assigned in more than 32
branches that may run"), so the work per lookup is bounded."""


class Resolver(ArgumentSources):
    """Evaluates expressions of one indexed module.

    ``text_of(node)`` gives a node's source text (for messages); ``base_dir`` is the folder of
    the script, used to read JSON/YAML files it names by literal path (``None`` disables it).
    """

    def __init__(self, index: ModuleIndex, text_of: Callable[[cst.CSTNode], str],
                 base_dir: str | None = None) -> None:
        self.index = index
        self.text_of = text_of
        self.base_dir = base_dir
        self.module_env = Env(index.root)
        self._depth = 0
        self._memo: dict[tuple, V] = {}
        self._active: set[tuple] = set()
        self._callsites: dict[int, list[CallRecord]] | None = None
        self._argparse: dict[int, dict[str, tuple]] = {}
        self._argparse_groups: dict[int, list[CallRecord]] | None = None
        self._argparse_building = False
        self._method_calls: dict[tuple[str, str], list[CallRecord]] | None = None
        self._star_imports = [b.value for b in index.root.bindings.get("*", ())]
        self._file_cache: dict[str, Any] = {}
        self.files_read: list[str] = []
        """The files named by literal path that :meth:`load_file` looked at (absolute, present
        or not): the extractor copies them into ``TrainingSetup.inputs``."""
        self._root: str | None = None  # the project files the script names must lie in
        self._call_index = {id(r.node): r for r in index.calls}
        self._kwargs_memo: dict[tuple, tuple] = {}
        self._dataclass_fields_memo: dict[int, tuple] = {}  # id(class scope) -> (it, fields)
        self._idioms: dict[int, bool] = {}
        self._orders: dict[int, list[int] | tuple] = {}  # see _before
        self.spent = 0
        """Cost units of the values computed so far (bounded by pybounds.FILE_BUDGET)."""
        self.binder: Any = None
        """The :class:`lintlora.extract.pybind.LaunchBinder` of the command line the script is
        launched with, or ``None`` (no launch: options keep their defaults)."""
        self.launch_env: dict[str, str] | None = None
        """Environment values to read instead of the script's defaults (``WORLD_SIZE="2"``...):
        set on a second resolver that evaluates what a data-parallel launcher's process sees
        (:data:`LAUNCHER_ENV`); ``None`` reads the defaults."""

    # ---- public entry points -----------------------------------------------------------------
    def ev(self, node: cst.BaseExpression | None, env: Env, order: int) -> V:
        """The value of ``node`` evaluated in ``env`` at statement ``order``."""
        if node is None:
            return Const(None)
        key = (id(node), id(env.frame), env.scope is self.index.root, order)
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        if key in self._active:
            return Unknown(node, "the value depends on itself")
        if self._depth > _MAX_DEPTH:
            return Unknown(node, f"followed through more than {_MAX_DEPTH} steps")
        self._active.add(key)
        self._depth += 1
        try:
            result = self._ev(node, env, order)
        except RecursionError:
            result = Unknown(node, "too deeply nested to follow")
        finally:
            self._depth -= 1
            self._active.discard(key)
        self._memo[key] = result
        return result

    def env_for(self, rec: CallRecord) -> Env:
        """The environment a recorded call is evaluated in (no call context)."""
        return Env(rec.scope) if rec.scope is not self.index.root else self.module_env

    def qualname(self, node: cst.BaseExpression, env: Env, order: int) -> str | None:
        """The qualified name an expression refers to (``transformers.TrainingArguments``)."""
        v = self.ev(node, env, order)
        return v.data if isinstance(v, Obj) and v.kind == "qual" else None

    def guard_state(self, guards: tuple, scope: Scope, frame: Frame | None
                    ) -> tuple[bool | None, Const | None]:
        """Whether statements under ``guards`` run: True, False or None (cannot tell), and the
        deciding constant when the decision rests on a resolved value (for its origin)."""
        state: bool | None = True
        decider: Const | None = None
        for g in guards:
            if g.kind == "loop":
                continue
            if g.kind == "maybe":
                state = None
                continue
            v = self.ev(g.test, Env(scope, frame), g.order)
            if not isinstance(v, Const):
                state = None
                continue
            t = _truth(v.value)
            if t is None:
                state = None
                continue
            if t != g.polarity:
                return False, v
            if decider is None or _ORIGIN_RANK[v.origin] > _ORIGIN_RANK[decider.origin]:
                decider = v
        return state, decider

    # ---- dispatch ----------------------------------------------------------------------------
    def _ev(self, node: cst.BaseExpression, env: Env, order: int) -> V:
        t = type(node)
        if t is cst.Name:
            name = node.value
            if name == "True":
                return Const(True, Origin.LITERAL, node)
            if name == "False":
                return Const(False, Origin.LITERAL, node)
            if name == "None":
                return Const(None, Origin.LITERAL, node)
            return self.lookup(name, env, order, node)
        if t is cst.Integer or t is cst.Float:
            v = _number(node)
            if v is not None:
                return Const(v, Origin.LITERAL, node)
            # an integer literal that cannot be read is one beyond the bound (10**400)
            return Unknown(node, pybounds.INT_REFUSED if t is cst.Integer else "number")
        if t is cst.SimpleString:
            s = _literal_string(node)
            if s is not None:
                return Const(s, Origin.LITERAL, node)
            return Unknown(node, pybounds.STR_REFUSED if len(node.value) > pybounds.MAX_STR
                           else "string")
        if t is cst.ConcatenatedString:
            return self._concatenated(node, env, order)
        if t is cst.FormattedString:
            return self._fstring(node, env, order)
        if t is cst.Attribute:
            return self._attribute(node, env, order)
        if t is cst.Call:
            return self._call(node, env, order)
        if t in (cst.List, cst.Tuple, cst.Set):
            return self._sequence(node, env, order, sort=t is cst.Set)
        if t is cst.Dict:
            return self._dict_literal(node, env, order)
        if t is cst.Subscript:
            return self._subscript(node, env, order)
        if t is cst.BinaryOperation:
            return self._binop(node.operator, self.ev(node.left, env, order),
                               self.ev(node.right, env, order), node)
        if t is cst.UnaryOperation:
            v = self.ev(node.expression, env, order)
            if not isinstance(v, Const):
                return Unknown(node, getattr(v, "reason", ""))
            op = type(node.operator)
            try:
                if op is cst.Minus:
                    return self._combine(-v.value, node, v)
                if op is cst.Plus:
                    return self._combine(+v.value, node, v)
                if op is cst.Not:
                    return self._combine(not v.value, node, v)
            except TypeError:
                pass
            return Unknown(node, "operation")
        if t is cst.BooleanOperation:
            left = self.ev(node.left, env, order)
            if isinstance(left, Const):
                truth = _truth(left.value)
                is_and = type(node.operator) is cst.And
                if truth is not None and truth != is_and:
                    return self._combine(left.value, node, left)
                right = self.ev(node.right, env, order)
                if isinstance(right, Const):
                    return self._combine(right.value, node, left, right)
                return right if truth is not None else Unknown(node, "condition")
            return Unknown(node, getattr(left, "reason", "condition"))
        if t is cst.Comparison:
            return self._compare(node, env, order)
        if t is cst.IfExp:
            test = self.ev(node.test, env, order)
            if isinstance(test, Const) and _truth(test.value) is not None:
                chosen = self.ev(node.body if test.value else node.orelse, env, order)
                return self._weaken(chosen, test)
            a = self.ev(node.body, env, order)
            b = self.ev(node.orelse, env, order)
            if isinstance(a, Const) and isinstance(b, Const) and a.value == b.value:
                return a
            return Unknown(node, f"depends on `{self._text(node.test)}`")
        if t is cst.NamedExpr:
            return self.ev(node.value, env, order)
        if t is cst.Await:
            return Unknown(node, "await")
        if t is cst.Lambda:
            return Obj("lambda", node.body, node, env)
        return Unknown(node, "expression")

    def _text(self, node: cst.CSTNode) -> str:
        try:
            return self.text_of(node)
        except Exception:  # pragma: no cover - positions always exist for indexed nodes
            return "?"

    # ---- constants -------------------------------------------------------------------------
    def _combine(self, value: Any, node: cst.CSTNode, *parts: Const) -> V:
        """A computed value as a :class:`Const` with the weakest origin of ``parts``; unknown
        when it is not plain data, beyond the bounds of :mod:`.pybounds`, or when the file's
        budget of computed values is spent."""
        size = pybounds.measure(value)
        if isinstance(size, str):
            return Unknown(node, size)
        self.spent += size
        if self.spent > pybounds.FILE_BUDGET:
            return Unknown(node, f"not computed: the file computes more than "
                                 f"{pybounds.FILE_BUDGET:,} items and characters of values, "
                                 "lintlora's bound for one file")
        origin = weakest(*(p.origin for p in parts))
        source = None
        for p in parts:
            if p.origin is origin and p.source:
                source = p.source
                break
        if origin is Origin.LITERAL:
            return Const(value, Origin.LITERAL, node)
        return Const(value, origin, node, source)

    def _weaken(self, v: V, decider: Const | None) -> V:
        """Make ``v`` carry the weaker origin of the constant that decided which branch ran."""
        if decider is None or not isinstance(v, Const) or decider.origin in (Origin.LITERAL,
                                                                             Origin.VARIABLE):
            return v
        launch_env = (decider.origin is Origin.ENV_DEFAULT and v.origin in (
            Origin.ARGPARSE_DEFAULT, Origin.DATACLASS_DEFAULT, Origin.FUNCTION_DEFAULT))
        if _ORIGIN_RANK[decider.origin] <= _ORIGIN_RANK[v.origin] and not launch_env:
            # (a value chosen because WORLD_SIZE/LOCAL_RANK is unset rests on the environment
            # above all: under a launcher the other branch runs)
            return v
        return Const(v.value, decider.origin, v.node, decider.source)

    def _binop(self, op: cst.BaseBinaryOp, a: V, b: V, node: cst.CSTNode) -> V:
        if not (isinstance(a, Const) and isinstance(b, Const)):
            reason = a.reason if isinstance(a, Unknown) else getattr(b, "reason", "")
            return Unknown(node, reason or "operation on unresolved values")
        f = _BINOPS.get(type(op))
        if f is None:
            return Unknown(node, "operation")
        av, bv = a.value, b.value
        refusal = pybounds.binop_refusal(type(op).__name__, av, bv)
        if refusal is not None:
            return Unknown(node, refusal)
        try:
            value = f(av, bv)
        except Exception:
            return Unknown(node, "operation fails on these values")
        return self._combine(value, node, a, b)

    def _concatenated(self, node: cst.ConcatenatedString, env: Env, order: int) -> V:
        """``"a" "b" f"{c}"``: LibCST nests each implicit concatenation in the next
        (``ConcatenatedString(left, right=ConcatenatedString(...))``), so a long prompt is
        walked as a list rather than by recursion, and its length checked as it grows."""
        parts: list[Const] = []
        length = 0
        kinds = set()
        current: cst.BaseExpression = node
        while True:
            if type(current) is cst.ConcatenatedString:
                piece, current = current.left, current.right  # type: ignore[union-attr]
            else:
                piece, current = current, None  # type: ignore[assignment]
            v = self.ev(piece, env, order)
            if not isinstance(v, Const) or not isinstance(v.value, (str, bytes)):
                return Unknown(node, getattr(v, "reason", "") or "string")
            kinds.add(type(v.value))
            length += len(v.value)
            if length > pybounds.MAX_STR:
                return Unknown(node, pybounds.beyond(f"longer than {pybounds.MAX_STR:,} "
                                                     "characters"))
            parts.append(v)
            if current is None:
                break
        if len(kinds) > 1:
            return Unknown(node, "string")  # str and bytes: a TypeError when it runs
        text = ("" if str in kinds else b"").join(p.value for p in parts)
        return self._combine(text, node, *parts)

    def _compare(self, node: cst.Comparison, env: Env, order: int) -> V:
        left = self.ev(node.left, env, order)
        parts = [left]
        result = True
        for target in node.comparisons:
            right = self.ev(target.comparator, env, order)
            parts.append(right)
            f = _CMPOPS.get(type(target.operator))
            if not (isinstance(left, Const) and isinstance(right, Const)) or f is None:
                return Unknown(node, "comparison of unresolved values")
            try:
                ok = f(left.value, right.value)
            except Exception:
                return Unknown(node, "comparison")
            result = result and bool(ok)
            left = right
        return self._combine(result, node, *parts)  # type: ignore[arg-type]

    def _fstring(self, node: cst.FormattedString, env: Env, order: int) -> V:
        out = []
        parts: list[Const] = []
        length = 0
        for part in node.parts:
            if type(part) is cst.FormattedStringText:
                out.append(part.value)
                length += len(part.value)
                continue
            v = self.ev(part.expression, env, order)
            if not isinstance(v, Const) or part.format_spec:
                reason = v.reason if isinstance(v, Unknown) and v.reason.startswith(
                    "not computed") else "f-string with unresolved parts"
                return Unknown(node, reason)
            parts.append(v)
            conv = part.conversion
            # the value is within the bounds, so its str/repr is bounded too
            piece = (repr(v.value) if conv == "r" else ascii(v.value) if conv == "a"
                     else str(v.value))
            length += len(piece)
            if length > pybounds.MAX_STR:
                return Unknown(node, pybounds.beyond(f"longer than {pybounds.MAX_STR:,} "
                                                     "characters"))
            out.append(piece)
        text = "".join(out).replace("{{", "{").replace("}}", "}")
        if not parts:
            return Const(text, Origin.LITERAL, node)
        return self._combine(text, node, *parts)

    def _sequence(self, node: cst.List | cst.Tuple | cst.Set, env: Env, order: int,
                  sort: bool = False) -> V:
        items: list[V] = []
        size = 1
        for el in node.elements:
            if type(el) is cst.StarredElement:
                v = self.ev(el.value, env, order)
                if isinstance(v, Const) and isinstance(v.value, tuple):
                    size += (pybounds.cost(v.value) or pybounds.MAX_COST) - 1
                    if size > pybounds.MAX_COST:
                        break
                    items.extend(Const(x, v.origin, v.node, v.source) for x in v.value)
                    continue
                if isinstance(v, SeqV):
                    size += len(v.items)
                    if size > pybounds.MAX_COST:
                        break
                    items.extend(v.items)
                    continue
                return Unknown(node, "unpacks an unresolved sequence")
            item = self.ev(el.value, env, order)
            size += (pybounds.cost(item.value) or pybounds.MAX_COST) if isinstance(item, Const) else 1
            if size > pybounds.MAX_COST:
                break
            items.append(item)
        if size > pybounds.MAX_COST:
            return Unknown(node, pybounds.beyond(f"larger than {pybounds.MAX_COST:,} items and "
                                                 "characters"))
        if all(isinstance(i, Const) for i in items):
            values = tuple(i.value for i in items)  # type: ignore[union-attr]
            if sort:
                try:
                    values = tuple(sorted(set(values)))
                except TypeError:
                    return Unknown(node, "set of mixed values")
            return self._combine(values, node, *items) if items else Const((), Origin.LITERAL, node)
        return SeqV(items, node)

    def _dict_literal(self, node: cst.Dict, env: Env, order: int) -> V:
        items: dict = {}
        complete = True
        unresolved: list[str] = []
        for el in node.elements:
            if type(el) is cst.StarredDictElement:
                inner = self.as_mapping(self.ev(el.value, env, order))
                if inner is None:
                    complete = False
                    unresolved.append("**" + self._text(el.value))
                    continue
                items.update(inner.items)
                complete = complete and inner.complete
                unresolved.extend(inner.unresolved)
                continue
            k = self.ev(el.key, env, order)
            if not isinstance(k, Const) or not isinstance(k.value, (str, int)):
                complete = False
                unresolved.append(self._text(el.key))
                continue
            items[k.value] = (self.ev(el.value, env, order), el.key)
        return DictV(items, complete, node, tuple(unresolved))

    def _subscript(self, node: cst.Subscript, env: Env, order: int) -> V:
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return Unknown(node, "slice")
        key_node = node.slice[0].slice.value
        # item assignments on a plain name are handled by lookup's mutation pass
        base = self.ev(node.value, env, order)
        key = self.ev(key_node, env, order)
        if isinstance(base, Obj) and base.kind == "qual" and base.data in ("os.environ",):
            if self.launch_env is not None and isinstance(key, Const) and key.value in self.launch_env:
                return Const(self.launch_env[key.value], Origin.ENV_DEFAULT, node,
                             f"${key.value} (under a launcher)")
            return Unknown(node, f"environment variable {self._text(key_node)} (set at launch)")
        if not isinstance(key, Const):
            return Unknown(node, "unresolved key")
        if self.binder is not None and isinstance(base, Obj) and base.kind == "qual" \
                and base.data == "sys.argv":  # `from sys import argv; argv[1]`
            base = self.binder.argv()
        return self.item(base, key.value, node)

    def item(self, base: V, key: Any, node: cst.CSTNode | None) -> V:
        """``base[key]``."""
        if isinstance(base, DictV):
            hit = base.items.get(key)
            if hit is not None:
                return hit[0]
            return Unknown(node, f"key {key!r} not found" if base.complete else
                           f"key {key!r} may come from {', '.join(base.unresolved) or 'elsewhere'}")
        if isinstance(base, Const):
            try:
                return Const(base.value[key], base.origin, base.node, base.source)
            except Exception:
                return Unknown(node, "index")
        if isinstance(base, SeqV) and isinstance(key, int):
            try:
                return base.items[key]
            except IndexError:
                return Unknown(node, "index")
        if isinstance(base, Obj) and base.kind == "file":
            data = base.data
            if isinstance(data, dict) and key in data:
                return self._file_value(data[key], base, key)
            return Unknown(node, f"key {key!r} not in {base.path}")
        return Unknown(node, getattr(base, "reason", "") or "item of an unresolved value")

    # ---- names -------------------------------------------------------------------------------
    def lookup(self, name: str, env: Env, order: int, node: cst.CSTNode | None = None) -> V:
        """The value a name has at ``order`` in ``env``."""
        frame = env.frame
        if frame is not None and name in frame.loop:
            return frame.loop[name]
        scope: Scope | None = env.scope
        use_scope = env.scope
        o = order
        while scope is not None:
            if scope.kind == "class" and scope is not use_scope:
                scope = scope.parent
                continue
            if name in scope.globals and scope.parent is not None:
                scope = scope.module()
                o = INF
            bindings = scope.bindings.get(name)
            if bindings:
                f = frame if scope is use_scope else None
                v = self._choose(name, bindings, scope, f, o, node)
                if v is not None:
                    return v
            if scope.kind == "function":
                o = INF  # names of enclosing scopes are read when the function runs, later
            scope = scope.parent
        for base in reversed(self._star_imports):
            if not base.startswith("."):
                return Obj("qual", f"{base}.{name}")
        if name in _BUILTINS:
            return Obj("builtin", name)
        return Unknown(node, f"`{name}` is never defined in this file")

    def _choose(self, name: str, bindings: list[Binding], scope: Scope, frame: Frame | None,
                order: int, node: cst.CSTNode | None) -> V | None:
        base: Binding | None = None
        base_decider: Const | None = None
        alts: list[Binding] = []
        ruled_out: Const | None = None
        for b in reversed(bindings[:self._before(bindings, order)]):
            if b.order >= order:
                continue
            state, decider = self.guard_state(b.guards, b.scope, frame)
            if state is False:
                # a later branch ruled out by a default (env/argparse): the value chosen instead
                # rests on that default too (alpaca-lora's `if ddp: device_map = {...}`)
                if decider is not None and (ruled_out is None
                                            or _ORIGIN_RANK[decider.origin] > _ORIGIN_RANK[ruled_out.origin]):
                    ruled_out = decider
                continue
            if state is True:
                base, base_decider = b, decider
                break
            alts.append(b)
            if len(alts) > MAX_ALTERNATIVES:
                # each alternative is evaluated, and each may read the name again (`else:
                # x = x + 1` 3,000 times took 35 s: quadratic); so many branches rarely agree
                return Unknown(node, f"`{name}` is assigned in more than {MAX_ALTERNATIVES} "
                                     f"branches that may run")
        if base is None and not alts:
            return None
        if base is not None:
            # an `except` fallback does not replace what the `try` body bound
            alts = [a for a in alts if not any(g.kind == "maybe" for g in a.guards)]
        chosen = ([base] if base is not None else []) + alts
        values = [self._binding_value(b, frame, order, node) for b in chosen]
        first = values[0]
        if len(values) == 1 or all(_same(first, v) for v in values[1:]):
            return self._weaken(self._weaken(first, base_decider) if base is not None else first, ruled_out)
        merged = _launch_merge(values)
        if merged is not None:
            return merged
        if all(isinstance(v, (Obj, SeqV, DictV)) for v in values):
            # several objects depending on a branch (a model, or the same model wrapped by
            # get_peft_model): keep them all for callers that follow objects
            return Obj("either", values, node)
        texts = sorted({f"line-order {b.order}" for b in chosen})
        return Unknown(node, f"`{name}` is assigned differently in branches that may run "
                             f"({len(texts)} assignments)")

    def _before(self, bindings: list[Binding], order: int) -> int:
        """How many of ``bindings`` can precede ``order``: found by bisection when their
        orders ascend (a name bound thousands of times was scanned from the end at every use:
        quadratic), else all of them."""
        key = id(bindings)
        orders = self._orders.get(key)
        if orders is None or len(orders) != len(bindings):
            values = [b.order for b in bindings]
            orders = values if all(a <= b for a, b in zip(values, values[1:])) else ()
            self._orders[key] = orders
        if not orders:
            return len(bindings)
        import bisect

        return bisect.bisect_left(orders, order)

    def _binding_value(self, b: Binding, frame: Frame | None, use_order: int,
                       node: cst.CSTNode | None) -> V:
        kind = b.kind
        env = Env(b.scope, frame) if frame is not None else (
            self.module_env if b.scope is self.index.root else Env(b.scope))
        if kind in ("assign", "annassign"):
            if b.value is None:
                return Unknown(node, f"`{b.name}` is declared without a value")
            v = self.ev(b.value, env, b.order)
            for i in b.path:
                v = self.item(v, i, node) if not isinstance(v, Obj) else Unknown(node, "unpacking")
            v = self._apply_mutations(b, v, env, use_order)
            if isinstance(v, Const):
                if v.origin is Origin.LITERAL:
                    return Const(v.value, Origin.VARIABLE, v.node, b.name)
            return v
        if kind == "import":
            return Obj("qual", b.value)
        if kind in ("def", "class"):
            return Obj("scope", b.value, b.node)
        if kind == "param":
            return self._param(b, frame, node)
        if kind == "for":
            it = self.ev(b.value, env, b.order)
            if isinstance(it, Const) and isinstance(it.value, tuple) and it.value and not b.path:
                if all(x == it.value[0] for x in it.value):
                    return Const(it.value[0], weakest(it.origin, Origin.VARIABLE), it.node, b.name)
            return Unknown(node, f"`{b.name}` takes each value of a loop")
        if kind == "augassign":
            prev = self.lookup(b.name, env, b.order, node)
            rhs = self.ev(b.value, env, b.order)
            if isinstance(b.op, cst.BaseAugOp):
                op_name = type(b.op).__name__.replace("Assign", "")
                op = getattr(cst, op_name, None)
                if op is not None:
                    v = self._binop(op(), prev, rhs, b.node)
                    if isinstance(v, Const) and v.origin is Origin.LITERAL:
                        return Const(v.value, Origin.VARIABLE, v.node, b.name)
                    return v
            return Unknown(node, "augmented assignment")
        if kind == "with":
            return Unknown(node, f"`{b.name}` is bound by a `with` statement")
        return Unknown(node, f"`{b.name}` cannot be followed")

    def _apply_mutations(self, b: Binding, v: V, env: Env, use_order: int) -> V:
        """Apply item assignments / ``.update`` / ``.append`` made to the name after binding."""
        if not isinstance(v, (DictV, Const)):
            return v
        if isinstance(v, Const) and not isinstance(v.value, tuple):
            return v
        name = b.name
        events: list[tuple[int, str, Any]] = []
        for m in self.index.mutations_of(name):
            if (m.scope is b.scope and b.order < m.order < use_order
                    and m.kind in ("setitem", "augitem")):
                events.append((m.order, m.kind, m))
        for rec in self._method_calls_on(name, b.scope):
            if b.order < rec.order < use_order:
                events.append((rec.order, rec.method or "", rec))
        if not events:
            return v
        events.sort(key=lambda e: e[0])
        if isinstance(v, DictV):
            items = dict(v.items)
            complete = v.complete
            unresolved = list(v.unresolved)
            for _, kind, m in events:
                state, _d = self.guard_state(m.guards, m.scope, env.frame)
                if state is False:
                    continue
                if kind == "setitem":
                    k = self.ev(m.key, env, m.order) if m.key is not None else None
                    if not isinstance(k, Const):
                        complete = False
                        unresolved.append(self._text(m.node))
                        continue
                    val = self.ev(m.value, env, m.order)
                    if state is None and k.value in items and not _same(items[k.value][0], val):
                        val = Unknown(m.value, "assigned under a condition")
                    items[k.value] = (val, m.node)
                elif kind == "augitem":
                    complete = False
                elif kind in ("update", "setdefault", "pop"):
                    self._dict_method(items, m, env, kind, state)
                    if kind == "update" and not self._update_resolved(m, env):
                        complete = False
                        unresolved.append(self._text(m.node))
            return DictV(items, complete, v.node, tuple(unresolved))
        # list mutations on a tuple constant
        values = list(v.value)
        origin = v.origin
        size = pybounds.cost(v.value) or 0
        for _, kind, m in events:
            if kind not in _LIST_MUTATORS:
                continue
            state, _d = self.guard_state(m.guards, m.scope, env.frame)
            if state is False:
                continue
            args = m.node.args
            if state is None or not args:
                return Unknown(m.node, f"`{name}` is changed under a condition")
            arg = self.ev(args[-1].value, env, m.order)
            if not isinstance(arg, Const):
                return Unknown(m.node, f"`{name}` is extended with unresolved values")
            size += pybounds.cost(arg.value) or pybounds.MAX_COST
            if size > pybounds.MAX_COST:  # x.extend(x) doubles the list each time
                return Unknown(m.node, pybounds.beyond(f"larger than {pybounds.MAX_COST:,} "
                                                       "items and characters"))
            origin = weakest(origin, arg.origin)
            try:
                if kind == "append":
                    values.append(arg.value)
                elif kind == "extend":
                    values.extend(arg.value)
                elif kind == "remove":
                    values.remove(arg.value)
                elif kind == "insert" and len(args) == 2:
                    idx = self.ev(args[0].value, env, m.order)
                    values.insert(idx.value if isinstance(idx, Const) else len(values), arg.value)
            except Exception:
                return Unknown(m.node, "list operation")
        return self._combine(tuple(values), v.node, Const(None, weakest(
            origin, Origin.VARIABLE), v.node, v.source or name))

    def _update_resolved(self, rec: CallRecord, env: Env) -> bool:
        for a in rec.node.args:
            if a.keyword is None:
                inner = self.as_mapping(self.ev(a.value, env, rec.order))
                if inner is None or not inner.complete:
                    return False
        return True

    def _dict_method(self, items: dict, rec: CallRecord, env: Env, kind: str,
                     state: bool | None) -> None:
        args = rec.node.args
        if kind == "update":
            for a in args:
                if a.keyword is not None:
                    val = self.ev(a.value, env, rec.order)
                    items[a.keyword.value] = (val if state else Unknown(a.value, "conditional"),
                                              a.keyword)
                elif a.star == "":
                    inner = self.as_mapping(self.ev(a.value, env, rec.order))
                    if inner is not None:
                        for k, (val, kn) in inner.items.items():
                            items[k] = (val if state else Unknown(a.value, "conditional"), kn)
        elif kind == "setdefault" and len(args) == 2:
            k = self.ev(args[0].value, env, rec.order)
            if isinstance(k, Const) and k.value not in items:
                items[k.value] = (self.ev(args[1].value, env, rec.order), args[0].value)
        elif kind == "pop" and args:
            k = self.ev(args[0].value, env, rec.order)
            if isinstance(k, Const):
                items.pop(k.value, None)

    def _method_calls_on(self, name: str, scope: Scope) -> list[CallRecord]:
        if self._method_calls is None:
            table: dict[tuple[str, str], list[CallRecord]] = {}
            for rec in self.index.calls:
                if rec.method in _LIST_MUTATORS or rec.method in _DICT_MUTATORS:
                    recv = rec.node.func.value  # type: ignore[attr-defined]
                    if type(recv) is cst.Name:
                        table.setdefault((recv.value, id(rec.scope)), []).append(rec)  # type: ignore[arg-type]
            self._method_calls = table  # type: ignore[assignment]
        return self._method_calls.get((name, id(scope)), [])  # type: ignore[union-attr, call-overload]

    # ---- function parameters ---------------------------------------------------------------------
    def _param(self, b: Binding, frame: Frame | None, node: cst.CSTNode | None) -> V:
        scope = b.scope
        param: cst.Param = b.value
        pname = b.name
        kind = next((k for n, p, k in scope.params if p is param), "normal")
        if kind in ("star", "starstar"):
            return Unknown(node, f"`{pname}` collects extra arguments")
        if scope.is_method and scope.params and scope.params[0][1] is param:
            cls = scope.parent
            return Obj("self", cls, None, None)
        if frame is not None and frame.func is scope and frame.call is not None:
            return self._bound_argument(scope, param, pname, kind, frame.call, frame.caller, node)
        if self.binder is not None:
            bound = self.binder.fire_param(scope, pname)
            if bound is not None:
                return bound
        sites = self.call_sites(scope)
        if sites:
            values = []
            for rec in sites[:8]:
                caller = self.env_for(rec)
                values.append(self._bound_argument(scope, param, pname, kind, rec.node, caller,
                                                   node))
            first = values[0]
            if all(_same(first, v) for v in values[1:]):
                return first
            return Unknown(node, f"`{pname}` differs between the calls of {scope.name}()")
        return self._param_default(scope, param, pname, node)

    def _param_default(self, scope: Scope, param: cst.Param, pname: str,
                       node: cst.CSTNode | None) -> V:
        if param.default is None:
            return Unknown(node, f"`{pname}` is a parameter of {scope.name}() with no default")
        parent_env = Env(scope.parent) if scope.parent is not None else self.module_env
        v = self.ev(param.default, parent_env, scope.order)
        if isinstance(v, Const):
            origin = Origin.FUNCTION_DEFAULT if _ORIGIN_RANK[v.origin] <= 2 else v.origin
            return Const(v.value, origin, v.node if origin is not Origin.FUNCTION_DEFAULT
                         else param.default, f"{scope.name}({pname}=...)")
        return v

    def _bound_argument(self, scope: Scope, param: cst.Param, pname: str, kind: str,
                        call: cst.Call, caller: Env | None, node: cst.CSTNode | None) -> V:
        caller = caller or self.module_env
        order = self._order_of_call(call)
        positional = [n for n, p, k in scope.params if k in ("posonly", "normal")]
        shift = 1 if scope.is_method and positional and type(call.func) is cst.Attribute else 0
        if scope.is_method and type(call.func) is cst.Attribute:
            positional = positional[1:]
            shift = 0
        pos_index = 0
        for a in call.args:
            if a.star == "*":
                return Unknown(node, f"`{pname}` may come from *{self._text(a.value)}")
            if a.star == "**":
                inner = self.as_mapping(self.ev(a.value, caller, order))
                if inner is not None and pname in inner.items:
                    return inner.items[pname][0]
                if inner is None or not inner.complete:
                    return Unknown(node, f"`{pname}` may come from **{self._text(a.value)}")
                continue
            if a.keyword is not None:
                if a.keyword.value == pname:
                    return self.ev(a.value, caller, order)
                continue
            idx = pos_index + shift
            pos_index += 1
            if kind != "kwonly" and idx < len(positional) and positional[idx] == pname:
                return self.ev(a.value, caller, order)
        return self._param_default(scope, param, pname, node)

    def call_sites(self, scope: Scope) -> list[CallRecord]:
        """The calls in this file that call the local function ``scope``."""
        if self._callsites is None:
            table: dict[int, list[CallRecord]] = {}
            names = {s.name for s in self.index.scopes if s.kind == "function"}
            for rec in self.index.calls:
                func = rec.node.func
                fname = (func.value if type(func) is cst.Name else
                         func.attr.value if type(func) is cst.Attribute else None)
                if fname not in names:
                    continue
                v = self.ev(func, self.env_for(rec), rec.order)
                if isinstance(v, Obj) and v.kind == "scope":
                    table.setdefault(id(v.data), []).append(rec)
            self._callsites = table
        return self._callsites.get(id(scope), [])

    def _order_of_call(self, call: cst.Call) -> int:
        rec = self._call_index.get(id(call))
        return rec.order if rec is not None else INF

    def record_of(self, call: cst.Call) -> CallRecord | None:
        """The :class:`CallRecord` of a call node."""
        return self._call_index.get(id(call))

    # ---- attributes -----------------------------------------------------------------------------
    def _attribute(self, node: cst.Attribute, env: Env, order: int) -> V:
        attr = node.attr.value
        root = node.value
        if type(root) is cst.Name:
            mutated = self._attr_mutation(root.value, attr, env, order, node)
            if mutated is not None:
                return mutated
        base = self.ev(root, env, order)
        return self.getattr(base, attr, node, order)

    def _attr_mutation(self, name: str, attr: str, env: Env, order: int,
                       node: cst.CSTNode) -> V | None:
        """``name.attr`` after ``name.attr = value`` statements (same scope, or the module's
        when the use is inside a function)."""
        candidates = []
        for m in self.index.mutations_of(name, attr):  # setattr/augattr of name.attr
            if m.scope is env.scope and m.order < order:
                candidates.append(m)
            elif m.scope is self.index.root and env.scope is not self.index.root:
                candidates.append(m)
        if not candidates:
            return None
        candidates.sort(key=lambda m: m.order)
        alts = []
        base = None
        for m in reversed(candidates):
            state, decider = self.guard_state(m.guards, m.scope, env.frame
                                              if m.scope is env.scope else None)
            if state is False:
                continue
            if state is True:
                base = (m, decider)
                break
            alts.append(m)
        if base is None and not alts:
            return None
        if alts and base is None:
            return None if len(alts) == 0 else Unknown(node, f"`{name}.{attr}` is set under a condition")
        ms = [base[0]] + alts if base else alts
        values = []
        for m in ms:
            if m.kind == "augattr":
                return Unknown(node, f"`{name}.{attr}` is changed in place")
            menv = env if m.scope is env.scope else self.module_env
            v = self.ev(m.value, menv, m.order)
            if isinstance(v, Const) and v.origin is Origin.LITERAL:
                v = Const(v.value, Origin.VARIABLE, v.node, f"{name}.{attr}")
            values.append(v)
        if all(_same(values[0], v) for v in values[1:]):
            return self._weaken(values[0], base[1] if base else None)
        return Unknown(node, f"`{name}.{attr}` is set differently under conditions")

    def getattr(self, base: V, attr: str, node: cst.CSTNode | None, order: int = INF) -> V:
        """``base.attr``."""
        if isinstance(base, Obj):
            kind = base.kind
            if kind == "qual":
                q = f"{base.data}.{attr}"
                if q == "sys.argv" and self.binder is not None:
                    return self.binder.argv()
                if base.data == "torch" and attr in _TORCH_DTYPES:
                    return Const(DType(_TORCH_DTYPES[attr]), Origin.LITERAL, node)
                return Obj("qual", q)
            if kind == "argparse_ns":
                if self.binder is not None:
                    bound = self.binder.namespace_attr(base, attr, node)
                    if bound is not None:
                        return bound
                return self._argparse_value(base.data, attr, node)
            if kind == "instance":
                return self._instance_attr(base, attr, node)
            if kind == "namespace":
                hit = base.data.items.get(attr) if isinstance(base.data, DictV) else None
                if hit is not None:
                    return hit[0]
                return Unknown(node, f"`{attr}` is not set on the namespace")
            if kind == "scope" and base.data.kind == "class":
                return self._class_attr(base.data, attr, node)
            if kind == "self":
                return self._self_attr(base.data, attr, node)
            if kind == "call" and base.data in DEFAULTS_CLASS:
                return self.config_value(base, attr, node)
            if kind == "file":
                data = base.data
                if isinstance(data, dict) and attr in data:
                    return self._file_value(data[attr], base, attr)
        if isinstance(base, Unknown):
            return Unknown(node, base.reason)
        return Unknown(node, f"attribute `{attr}` of an object lintlora does not follow")

    def _class_attr(self, cls: Scope, attr: str, node: cst.CSTNode | None) -> V:
        bindings = cls.bindings.get(attr)
        if bindings:
            b = bindings[-1]
            return self._binding_value(b, None, INF, node)
        for base in cls.bases:
            bv = self.ev(base, Env(cls.parent) if cls.parent else self.module_env, cls.order)
            if isinstance(bv, Obj) and bv.kind == "scope" and bv.data.kind == "class":
                return self._class_attr(bv.data, attr, node)
        return Unknown(node, f"class {cls.name} has no attribute `{attr}`")

    def _self_attr(self, cls: Scope | None, attr: str, node: cst.CSTNode | None) -> V:
        if cls is None:
            return Unknown(node, "self")
        found = [m for m in self.index.mutations_of("self", attr)
                 if m.kind == "setattr" and m.scope.parent is cls]
        if len(found) == 1 and not found[0].guards:
            m = found[0]
            return self.ev(m.value, Env(m.scope), m.order)
        if not found:
            # a dataclass-style field set by the constructor: the instances built in this file
            values = []
            for rec in self.index.calls_named(cls.name):
                func = rec.node.func
                fv = self.ev(func, self.env_for(rec), rec.order)
                if not (isinstance(fv, Obj) and fv.kind == "scope" and fv.data is cls):
                    continue
                for a in rec.node.args:
                    if a.keyword is not None and a.keyword.value == attr:
                        values.append(self.ev(a.value, self.env_for(rec), rec.order))
                        break
                else:
                    values.append(None)
            if values and all(v is not None for v in values):
                if all(_same(values[0], v) for v in values[1:]):
                    return values[0]  # type: ignore[return-value]
                return Unknown(node, f"`self.{attr}` differs between the {cls.name}(...) calls")
        if cls.bindings.get(attr):
            return self._class_attr(cls, attr, node)
        return Unknown(node, f"`self.{attr}`")

    # ---- mappings ---------------------------------------------------------------------------------
    def as_mapping(self, v: V) -> DictV | None:
        """A value usable with ``**``: a dict, ``vars(namespace)``, a namespace, a config file."""
        if isinstance(v, DictV):
            return v
        if isinstance(v, Const) and isinstance(v.value, dict):
            return DictV({k: (Const(x, v.origin, v.node, v.source), v.node)
                          for k, x in v.value.items()}, True, v.node)
        if isinstance(v, Obj):
            if v.kind == "namespace" and isinstance(v.data, DictV):
                return v.data
            if v.kind == "file" and isinstance(v.data, dict):
                return DictV({k: (self._file_value(x, v, k), None) for k, x in v.data.items()},
                             True, v.node)
            if v.kind == "vars":
                inner = v.data
                if isinstance(inner, Obj) and inner.kind == "argparse_ns":
                    table = self.argparse_table(inner.data)
                    if table is not None:
                        items = {k: (e[0], None) for k, e in table.items()}
                        if self.binder is not None:  # vars(args) of a launched script
                            for k in items:
                                bound = self.binder.namespace_attr(inner, k, None)
                                if bound is not None:
                                    items[k] = (bound, None)
                        return DictV(items, True, v.node)
                if isinstance(inner, Obj) and inner.kind == "instance" and isinstance(
                        inner.data, Obj) and inner.data.kind in ("scope", "qual"):
                    names: list[str] = []
                    lib = inner.data.data if inner.data.kind == "qual" else None
                    if inner.data.kind == "scope":
                        names = list(self.dataclass_fields(inner.data.data))
                        lib = self.library_base(inner.data.data)
                    if lib is not None:
                        cls = DEFAULTS_CLASS.get(canonical(lib))
                        if cls is not None:
                            from lintlora.extract.defaults import entry_for

                            names += [n for n in entry_for(cls).values if n not in names]
                    items = {k: (self._instance_attr(inner, k, None), None) for k in names}
                    # a library base has more fields than the defaults table lists
                    return DictV(items, lib is None, v.node,
                                 (f"other fields of {lib}",) if lib else ())
                if isinstance(inner, Obj) and inner.kind == "namespace":
                    return inner.data
        return None

    # ---- calls --------------------------------------------------------------------------------------
    def _call(self, node: cst.Call, env: Env, order: int) -> V:
        func = node.func
        if type(func) is cst.Attribute:
            method = func.attr.value
            recv = self.ev(func.value, env, order)
            if isinstance(recv, Obj) and recv.kind == "qual":
                return self._qual_call(f"{recv.data}.{method}", node, env, order)
            return self._method_call(recv, method, node, env, order)
        fv = self.ev(func, env, order)
        if isinstance(fv, Obj):
            if fv.kind == "qual":
                return self._qual_call(fv.data, node, env, order)
            if fv.kind == "builtin":
                return self._builtin_call(fv.data, node, env, order)
            if fv.kind == "scope":
                scope = fv.data
                if scope.kind == "function":
                    return self.call_function(scope, node, env)
                if scope.kind == "class":
                    return Obj("instance", fv, node, env)
        return Unknown(node, f"result of `{self._text(func)}(...)`")

    def call_function(self, scope: Scope, call: cst.Call, caller: Env) -> V:
        """The value a local function returns for this call."""
        depth = caller.frame.depth + 1 if caller.frame is not None else 1
        if depth > 8:
            return Unknown(call, "helper calls nested too deeply")
        frame = Frame(scope, call, caller, depth=depth)
        env = Env(scope, frame)
        if self._all_linear(scope):
            return Const("all-linear", Origin.VARIABLE, call,
                         f"{scope.name}(): every linear layer but lm_head, as peft's \"all-linear\"")
        if not scope.returns:
            return Const(None, Origin.LITERAL, call)
        chosen: list[tuple] = []
        for value, guards, order in scope.returns:
            state, _d = self.guard_state(guards, scope, frame)
            if state is False:
                continue
            chosen.append((value, order))
            if state is True:
                break
        if not chosen:
            return Unknown(call, f"{scope.name}() returns nothing that runs")
        values = [self.ev(v, env, o) if v is not None else Const(None) for v, o in chosen]
        if all(_same(values[0], v) for v in values[1:]):
            return values[0]
        known = [v for v in values if not (isinstance(v, Const) and v.value is None)]
        if len(known) == 1 and isinstance(known[0], Obj):
            return known[0]
        return Unknown(call, f"{scope.name}() returns different values on different paths")

    def _all_linear(self, scope: Scope) -> bool:
        """Whether a helper is the "every linear layer" idiom (:mod:`.pyidioms`), once per helper."""
        known = self._idioms.get(id(scope))
        if known is None:
            from lintlora.extract.pyidioms import all_linear_helper

            known = all_linear_helper(scope, self.index.calls, self.text_of)
            self._idioms[id(scope)] = known
        return known

    def _builtin_call(self, name: str, node: cst.Call, env: Env, order: int) -> V:
        args = node.args
        pos = [a for a in args if a.keyword is None and not a.star]
        if name in ("int", "float", "str", "bool") and len(pos) == 1:
            v = self.ev(pos[0].value, env, order)
            if isinstance(v, Const):
                try:
                    conv = {"int": int, "float": float, "str": str, "bool": bool}[name]
                    return self._combine(conv(v.value), node, v)
                except (TypeError, ValueError, OverflowError):
                    return Unknown(node, f"{name}() of {self._text(pos[0].value)}")
            return v if isinstance(v, Unknown) else Unknown(node, f"{name}() of an object")
        if name == "len" and len(pos) == 1 and self.binder is not None:
            v = self.ev(pos[0].value, env, order)
            if (isinstance(v, Obj) and v.kind == "qual" and v.data == "sys.argv") or (
                    isinstance(v, SeqV) and v.items and isinstance(v.items[0], Const)
                    and v.items[0].origin is Origin.LAUNCH and v.items[0].value == "<script>"):
                return self.binder.argv_length()
            return Unknown(node, "result of len()")
        if name == "dict":
            items: dict = {}
            complete = True
            unresolved: list[str] = []
            for a in args:
                if a.keyword is not None:
                    items[a.keyword.value] = (self.ev(a.value, env, order), a.keyword)
                else:
                    inner = self.as_mapping(self.ev(a.value, env, order))
                    if inner is None:
                        complete = False
                        unresolved.append(self._text(a.value))
                        continue
                    items.update(inner.items)
                    complete = complete and inner.complete
            return DictV(items, complete, node, tuple(unresolved))
        if name in ("list", "tuple", "sorted", "set") and len(pos) == 1:
            v = self.ev(pos[0].value, env, order)
            if isinstance(v, Const) and isinstance(v.value, (tuple, str)):
                values = tuple(v.value)
                if name in ("sorted", "set"):
                    try:
                        values = tuple(sorted(set(values)))
                    except TypeError:
                        return Unknown(node, name)
                return self._combine(values, node, v)
            if isinstance(v, Const) and isinstance(v.value, dict):
                return self._combine(tuple(v.value), node, v)
            return v if isinstance(v, SeqV) else Unknown(node, f"{name}() of unresolved values")
        if name in ("max", "min") and pos:
            vals = [self.ev(a.value, env, order) for a in pos]
            if all(isinstance(v, Const) for v in vals):
                try:
                    raw = [v.value for v in vals]  # type: ignore[union-attr]
                    out = (max if name == "max" else min)(*raw) if len(raw) > 1 else (
                        max if name == "max" else min)(raw[0])
                    return self._combine(out, node, *vals)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    pass
            return Unknown(node, name)
        if name == "getattr" and len(pos) >= 2:
            obj = self.ev(pos[0].value, env, order)
            attr = self.ev(pos[1].value, env, order)
            if isinstance(attr, Const) and isinstance(attr.value, str):
                if isinstance(obj, Obj) and obj.kind == "qual" and obj.data == "torch":
                    dt = _TORCH_DTYPES.get(attr.value)
                    if dt is None:
                        return Unknown(node, f"torch.{attr.value} is not a dtype")
                    return Const(DType(dt), weakest(attr.origin), attr.node, attr.source)
                v = self.getattr(obj, attr.value, node, order)
                if isinstance(v, Unknown) and len(pos) == 3:
                    return Unknown(node, "getattr with a fallback")
                return v
            return Unknown(node, "getattr of an unresolved name")
        if name == "vars" and len(pos) == 1:
            return Obj("vars", self.ev(pos[0].value, env, order), node)
        if name == "open":
            return Obj("open", self.ev(pos[0].value, env, order) if pos else None, node)
        return Unknown(node, f"result of {name}()")

    def _qual_call(self, q: str, node: cst.Call, env: Env, order: int) -> V:
        canon = canonical(q)
        if canon in _CALL_OBJECTS:
            if canon in _UNPACKED_LOADERS:
                return SeqV([Obj("call", canon, node, env), Unknown(node, "tokenizer")], node)
            return Obj("call", canon, node, env)
        args = node.args
        pos = [a for a in args if a.keyword is None and not a.star]
        kw = {a.keyword.value: a for a in args if a.keyword is not None}
        if q in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
            if not pos:
                return Unknown(node, "environment variable")
            key = self.ev(pos[0].value, env, order)
            kname = key.value if isinstance(key, Const) else self._text(pos[0].value)
            if self.launch_env is not None and kname in self.launch_env:
                return Const(self.launch_env[kname], Origin.ENV_DEFAULT, node, f"${kname} (under a launcher)")
            dnode = pos[1].value if len(pos) > 1 else (kw["default"].value if "default" in kw
                                                      else None)
            if dnode is None:
                return Const(None, Origin.ENV_DEFAULT, node, f"${kname} (unset)")
            d = self.ev(dnode, env, order)
            if isinstance(d, Const):
                return Const(d.value, Origin.ENV_DEFAULT, d.node or dnode, f"${kname}")
            return d
        if q in ("dataclasses.asdict", "asdict") and pos:
            return Obj("vars", self.ev(pos[0].value, env, order), node)
        if q in ("copy.deepcopy", "copy.copy") and pos:
            return self.ev(pos[0].value, env, order)
        if q in ("types.SimpleNamespace", "argparse.Namespace", "SimpleNamespace",
                 "easydict.EasyDict", "addict.Dict", "munch.Munch"):
            inner = self._builtin_call("dict", node, env, order)
            return Obj("namespace", inner, node, env)
        if q in ("os.path.abspath", "os.path.expanduser", "os.path.normpath") and pos \
                and self.binder is not None:
            v = self.ev(pos[0].value, env, order)
            if isinstance(v, Const) and v.origin is Origin.LAUNCH and isinstance(v.value, str):
                return v  # read from the launch's folder by load_file
            return Unknown(node, f"result of {q}()")
        if q in ("torch.device",) and pos:
            return self.ev(pos[0].value, env, order)
        if q in ("json.load", "yaml.safe_load", "yaml.load", "yaml.full_load", "json.loads") \
                and pos:
            src = self.ev(pos[0].value, env, order)
            if isinstance(src, Obj) and src.kind == "open":
                return self.load_file(src.data, node)
            return Unknown(node, "data read from a file the script does not name")
        if q in ("torch.cuda.is_bf16_supported", "torch.cuda.is_available",
                 "torch.cuda.device_count", "torch.cuda.get_device_capability",
                 "unsloth.is_bfloat16_supported", "torch.cuda.mem_get_info"):
            return Unknown(node, f"{q}() depends on the machine it runs on")
        if q.startswith("trl.") and q.rsplit(".", 1)[-1] in (
                "get_peft_config", "get_quantization_config", "get_kbit_device_map"):
            return Unknown(node, f"{q.rsplit('.', 1)[-1]}() builds it from command-line arguments")
        if q == "omegaconf.OmegaConf.load" and pos:
            return self.load_file(self.ev(pos[0].value, env, order), node)
        return Unknown(node, f"result of {q}()")

    def _method_call(self, recv: V, method: str, node: cst.Call, env: Env, order: int) -> V:
        args = node.args
        pos = [a for a in args if a.keyword is None and not a.star]
        kw = {a.keyword.value: a for a in args if a.keyword is not None}
        if isinstance(recv, Const):
            value = recv.value
            if isinstance(value, str) and method in _STR_METHODS:
                vals = [self.ev(a.value, env, order) for a in pos]
                if not all(isinstance(v, Const) for v in vals):
                    return Unknown(node, "string method on unresolved values")
                refusal = _string_method_refusal(value, method,
                                                 tuple(v.value for v in vals))  # type: ignore[union-attr]
                if refusal is not None:
                    return Unknown(node, refusal)
                try:
                    out = getattr(value, method)(*[v.value for v in vals])  # type: ignore[union-attr]
                except Exception:
                    return Unknown(node, "string method")
                if isinstance(out, list):
                    out = tuple(out)
                return self._combine(out, node, recv, *vals)  # type: ignore[arg-type]
            if isinstance(value, dict) and method == "get" and pos:
                recv = self.as_mapping(recv) or recv
            elif isinstance(value, tuple) and method in ("copy",):
                return recv
        if isinstance(recv, DictV) or (isinstance(recv, Obj) and recv.kind in ("file",)):
            mapping = self.as_mapping(recv)
            if mapping is not None:
                if method == "get" and pos:
                    k = self.ev(pos[0].value, env, order)
                    if isinstance(k, Const):
                        hit = mapping.items.get(k.value)
                        if hit is not None:
                            return hit[0]
                        if not mapping.complete:
                            return Unknown(node, f"key {k.value!r} may be set elsewhere")
                        if len(pos) > 1:
                            return self.ev(pos[1].value, env, order)
                        return Const(None, Origin.LITERAL, node)
                    return Unknown(node, "unresolved key")
                if method == "copy":
                    return mapping
        if isinstance(recv, Obj):
            kind = recv.kind
            if kind == "call":
                canon = recv.data
                if canon == "argparse.ArgumentParser":
                    if method == "parse_args":
                        return Obj("argparse_ns", recv, node, env)
                    if method == "parse_known_args":
                        return SeqV([Obj("argparse_ns", recv, node, env),
                                     Unknown(node, "extra arguments")], node)
                    if method == "add_argument_group" or method == "add_mutually_exclusive_group":
                        return Obj("argparse_group", recv, node, env)
                if canon in ("transformers.HfArgumentParser", "trl.TrlParser"):
                    return self._hf_parse(recv, method, node, env, order, pos, kw)
                if canon in _MODEL_FLOW and method in _FLOW_METHODS:
                    return recv
                if method in _SETTERS and DEFAULTS_CLASS.get(canon) in _TA_CLASSES:
                    return recv  # TrainingArguments.set_training(...) and co. return self
            if kind == "instance" and method in _SETTERS:
                return recv
            if kind == "argparse_group" and method in ("add_argument_group",
                                                       "add_mutually_exclusive_group"):
                return Obj("argparse_group", recv.data, node, env)
        if isinstance(recv, SeqV) and method in ("copy",):
            return recv
        if isinstance(recv, Unknown):
            return Unknown(node, recv.reason)
        return Unknown(node, f"result of `.{method}()`")


def _string_method_refusal(value: str, method: str, args: tuple) -> str | None:
    """Why ``value.<method>(*args)`` is not computed (:mod:`.pybounds`), or ``None``: the
    methods whose result can be much longer than the string are estimated first; the others
    (``split``, ``strip``, ``upper``...) make at most a few times the string's length."""
    if method == "format":
        return pybounds.format_refusal(value, args)
    if method == "replace":
        return pybounds.replace_refusal(value, args)
    if method == "join":
        return pybounds.join_refusal(value, args)
    return None
