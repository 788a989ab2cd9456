"""One pass over a LibCST module: scopes, name bindings, calls and mutations, in source order.

The extractor never walks the tree again after this pass: name resolution
(:mod:`lintlora.extract.pyresolve`) and recognition (:mod:`lintlora.extract.python`) work from
the records built here. The walk is hand-written rather than a ``CSTVisitor`` because the
visitor machinery visits every whitespace node and costs about ten times more (about 50 ms
against 5 ms for a 500-line file); only the fields that can hold code are followed.

What is recorded:

- :class:`Scope` for the module, each function and each class, with its :class:`Binding` s
  (assignments, imports, ``def``/``class``, parameters, loop targets...);
- every call (:class:`CallRecord`) with its scope, statement order, the ``if`` tests that guard
  it, the innermost enclosing loop and whether it sits in a per-step hook;
- attribute and item assignments (:class:`Mutation`): ``args.fp16 = True``,
  ``kwargs["device_map"] = ...``;
- reads of ``os.environ[...]`` by subscript.

Statement order (``order``) is a counter over statements in source order (each of the
``;``-separated simple statements on one line counts as one); an expression is ordered by the
statement that contains it, and a binding made by a statement is visible to statements with a
larger order.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

import libcst as cst

__all__ = ["Scope", "Binding", "Guard", "LoopFrame", "CallRecord", "Mutation", "ModuleIndex",
           "build_index", "STEP_HOOKS"]

STEP_HOOKS = frozenset({
    "on_step_begin", "on_step_end", "on_substep_end", "on_pre_optimizer_step",
    "on_optimizer_step", "training_step", "compute_loss",
})
"""Methods that run once per training step (transformers ``TrainerCallback`` hooks and the
``Trainer`` methods subclasses override)."""


class Scope:
    """A module, function or class body."""

    __slots__ = ("kind", "node", "parent", "name", "bindings", "globals", "params", "returns",
                 "order", "guards", "decorators", "bases", "keywords", "is_method")

    def __init__(self, kind: str, node: cst.CSTNode, parent: "Scope | None", name: str,
                 order: int, guards: tuple) -> None:
        self.kind = kind                  # "module" | "function" | "class"
        self.node = node
        self.parent = parent
        self.name = name
        self.bindings: dict[str, list[Binding]] = {}
        self.globals: set[str] = set()
        self.params: list[tuple[str, cst.Param, str]] = []  # (name, node, kind)
        self.returns: list[tuple[cst.BaseExpression | None, tuple, int]] = []
        self.order = order                # order of the def/class statement
        self.guards = guards              # guards of the def/class statement in its parent
        self.decorators: tuple[cst.BaseExpression, ...] = ()
        self.bases: tuple[cst.BaseExpression, ...] = ()
        self.keywords: tuple[cst.Arg, ...] = ()
        self.is_method = False

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<Scope {self.kind} {self.name}>"

    def function_scope(self) -> "Scope | None":
        """The nearest enclosing function scope (itself if a function)."""
        s: Scope | None = self
        while s is not None and s.kind != "function":
            s = s.parent
        return s

    def module(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


class Guard:
    """A condition on a statement's execution within its scope.

    ``kind`` is ``"if"`` (``test`` must evaluate to ``polarity``), ``"loop"`` (the statement runs
    inside a loop body: assumed to run, maybe several times) or ``"maybe"`` (an ``except``
    handler, a ``match`` case: may not run).
    """

    __slots__ = ("kind", "test", "polarity", "order")

    def __init__(self, kind: str, test: cst.BaseExpression | None = None, polarity: bool = True,
                 order: int = 0) -> None:
        self.kind = kind
        self.test = test
        self.polarity = polarity
        self.order = order


class Binding:
    """One binding of a name in a scope.

    ``kind``: ``assign`` (``value`` is the expression, ``path`` the index path into a tuple
    target), ``annassign``, ``augassign`` (``value``; ``op`` the operator node), ``import``
    (``value`` the qualified name), ``def``/``class`` (``value`` the new :class:`Scope`),
    ``param`` (``value`` the ``Param``), ``for`` (``value`` the iterable, ``path`` as for
    assign; ``loop`` the loop), ``with``/``except``/``del`` (unknown value).
    """

    __slots__ = ("name", "kind", "value", "path", "order", "scope", "guards", "node", "op", "loop")

    def __init__(self, name: str, kind: str, value: Any, order: int, scope: Scope,
                 guards: tuple, node: cst.CSTNode | None = None, path: tuple = (),
                 op: Any = None, loop: "LoopFrame | None" = None) -> None:
        self.name = name
        self.kind = kind
        self.value = value
        self.path = path
        self.order = order
        self.scope = scope
        self.guards = guards
        self.node = node
        self.op = op
        self.loop = loop

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<Binding {self.kind} {self.name}@{self.order}>"


class LoopFrame:
    """A ``for``/``while`` loop; ``has_step`` is set when its body (not a nested loop's) calls
    ``.backward()`` or ``.step()`` (a loop that runs once per training step)."""

    __slots__ = ("node", "parent", "has_step", "scope", "order", "guards")

    def __init__(self, node: cst.CSTNode, parent: "LoopFrame | None", scope: Scope, order: int,
                 guards: tuple) -> None:
        self.node = node
        self.parent = parent
        self.has_step = False
        self.scope = scope
        self.order = order
        self.guards = guards


class CallRecord:
    """A call expression with where it sits."""

    __slots__ = ("node", "scope", "order", "guards", "loop", "hook", "method")

    def __init__(self, node: cst.Call, scope: Scope, order: int, guards: tuple,
                 loop: LoopFrame | None, hook: str | None) -> None:
        self.node = node
        self.scope = scope
        self.order = order
        self.guards = guards
        self.loop = loop
        self.hook = hook
        func = node.func
        self.method = func.attr.value if type(func) is cst.Attribute else None


class Mutation:
    """``root.attr = value`` (``kind="setattr"``), ``root[key] = value`` (``"setitem"``) or an
    augmented form of either (``"augattr"``/``"augitem"``, value unknown)."""

    __slots__ = ("kind", "root", "key", "value", "order", "scope", "guards", "node")

    def __init__(self, kind: str, root: cst.BaseExpression, key: Any, value: Any, order: int,
                 scope: Scope, guards: tuple, node: cst.CSTNode) -> None:
        self.kind = kind
        self.root = root
        self.key = key
        self.value = value
        self.order = order
        self.scope = scope
        self.guards = guards
        self.node = node


@dataclasses.dataclass
class ModuleIndex:
    """Everything the single pass recorded for one module."""

    module: cst.Module
    root: Scope
    scopes: list[Scope]
    calls: list[CallRecord]
    mutations: list[Mutation]
    env_reads: list[tuple[cst.Subscript, str, Scope, int]]
    imported_roots: set[str]
    methods: set[str]
    _tables: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    """Lookup tables built on first use (below), so that what is asked per setup, per name or
    per attribute is a lookup, not a scan of the whole file (issue 12: a 5 MB script of 2,500
    setups was quadratic)."""

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        """The scope a ``def``/``class`` node opened."""
        table = self._tables.get("scope_of")
        if table is None:
            table = self._tables["scope_of"] = {}
            for s in self.scopes:
                table.setdefault(id(s.node), s)
        return table.get(id(node))

    def calls_with_method(self, *methods: str) -> list[CallRecord]:
        """The calls ``x.<method>(...)`` of any of ``methods``, in source order."""
        table = self._tables.get("method")
        if table is None:
            table = self._tables["method"] = {}
            for rec in self.calls:
                if rec.method is not None:
                    table.setdefault(rec.method, []).append(rec)
        if len(methods) == 1:
            return table.get(methods[0], [])
        return sorted((r for m in set(methods) for r in table.get(m, ())),
                      key=self._call_position)

    def calls_named(self, name: str) -> list[CallRecord]:
        """The calls ``name(...)`` of a plain name, in source order."""
        table = self._tables.get("named")
        if table is None:
            table = self._tables["named"] = {}
            for rec in self.calls:
                func = rec.node.func
                if type(func) is cst.Name:
                    table.setdefault(func.value, []).append(rec)
        return table.get(name, [])

    def _call_position(self, rec: CallRecord) -> int:
        table = self._tables.get("call_position")
        if table is None:
            table = self._tables["call_position"] = {id(r): i for i, r in enumerate(self.calls)}
        return table[id(rec)]

    def mutations_of(self, root: str | None = None, key: Any = None) -> list[Mutation]:
        """The mutations of the plain name ``root`` (``root.x = ...``, ``root[k] = ...``), or,
        with ``key``, the attribute assignments ``<any>.key = ...`` (``root`` ``None``) or
        ``root.key = ...``; in source order."""
        if root is not None and key is None:
            table = self._tables.get("by_root")
            if table is None:
                table = self._tables["by_root"] = {}
                for m in self.mutations:
                    if type(m.root) is cst.Name:
                        table.setdefault(m.root.value, []).append(m)
            return table.get(root, [])
        table = self._tables.get("by_key")
        if table is None:
            table = self._tables["by_key"] = {}
            for m in self.mutations:
                if m.kind in ("setattr", "augattr"):
                    table.setdefault(m.key, []).append(m)
        found = table.get(key, [])
        if root is None:
            return found
        return [m for m in found if type(m.root) is cst.Name and m.root.value == root]

    def assigned_name(self, value: cst.CSTNode) -> str | None:
        """The name a plain assignment ``name = <value>`` binds to this very node (the first
        such binding in scope order), or ``None``."""
        table = self._tables.get("assigned")
        if table is None:
            table = self._tables["assigned"] = {}
            for scope in self.scopes:
                for name, bindings in scope.bindings.items():
                    for b in bindings:
                        if b.kind == "assign" and b.value is not None:
                            table.setdefault(id(b.value), name)
        return table.get(id(value))


# ---- the walk -------------------------------------------------------------------------------
_SKIP_FIELDS = frozenset({
    "lpar", "rpar", "leading_lines", "header", "footer", "comma", "semicolon", "equal", "colon",
    "dot", "trailing_whitespace", "lines_after_decorators", "lbrace", "rbrace", "lbracket",
    "rbracket", "asynchronous", "newline", "operator", "indent", "start", "end", "star",
    "conversion", "first_colon", "second_colon", "default_indent", "default_newline",
    "encoding", "has_trailing_newline", "leading_whitespace", "relative", "walrus",
})
_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def _code_fields(t: type) -> tuple[str, ...]:
    f = _FIELD_CACHE.get(t)
    if f is None:
        f = tuple(x.name for x in dataclasses.fields(t)
                  if x.name not in _SKIP_FIELDS and not x.name.startswith("whitespace"))
        _FIELD_CACHE[t] = f
    return f


_ENV_KEYS = frozenset({"LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"})


def _dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _import_name(node: cst.BaseExpression) -> str:
    return _dotted(node) or ""


class _Walker:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.order = 0
        self.scopes: list[Scope] = []
        self.calls: list[CallRecord] = []
        self.mutations: list[Mutation] = []
        self.env_reads: list[tuple[cst.Subscript, str, Scope, int]] = []
        self.imported_roots: set[str] = set()
        self.methods: set[str] = set()
        # current context
        self.scope: Scope = Scope("module", module, None, "<module>", 0, ())
        self.scopes.append(self.scope)
        self.guards: tuple = ()
        self.loop: LoopFrame | None = None
        self.hook: str | None = None

    # -- bindings ------------------------------------------------------------------------------
    def bind(self, name: str, kind: str, value: Any, node: cst.CSTNode | None = None,
             path: tuple = (), op: Any = None) -> None:
        scope = self.scope
        guards = self.guards
        if name in scope.globals and scope.parent is not None:
            scope = scope.module()
            guards = (Guard("maybe"),)
        b = Binding(name, kind, value, self.order, scope, guards, node, path, op, self.loop)
        scope.bindings.setdefault(name, []).append(b)

    def bind_target(self, target: cst.BaseExpression, kind: str, value: Any, path: tuple = ()) -> None:
        t = type(target)
        if t is cst.Name:
            self.bind(target.value, kind, value, target, path)
        elif t in (cst.Tuple, cst.List):
            for i, el in enumerate(target.elements):
                if type(el) is cst.StarredElement:
                    # a starred target makes later positions unknowable
                    self.bind_target(el.value, "unknown", None)
                else:
                    self.bind_target(el.value, kind, value, path + (i,))
        elif t is cst.Attribute:
            self.expr(target.value)
            if kind in ("assign", "annassign"):
                self.mutations.append(Mutation("setattr", target.value, target.attr.value, value,
                                               self.order, self.scope, self.guards, target))
        elif t is cst.Subscript:
            self.expr(target.value)
            key = None
            if len(target.slice) == 1 and type(target.slice[0].slice) is cst.Index:
                key = target.slice[0].slice.value
                self.expr(key)
            if kind in ("assign", "annassign"):
                self.mutations.append(Mutation("setitem", target.value, key, value, self.order,
                                               self.scope, self.guards, target))
        elif t is cst.StarredElement:
            self.bind_target(target.value, "unknown", None)

    # -- statements ----------------------------------------------------------------------------
    def block(self, body: Any) -> None:
        t = type(body)
        if t is cst.IndentedBlock or t is cst.Module:
            for stmt in body.body:
                self.stmt(stmt)
        elif t is cst.SimpleStatementSuite:
            for small in body.body:  # each ';'-separated statement has its own order
                self.order += 1
                self.small(small)
        else:  # pragma: no cover - defensive
            for stmt in getattr(body, "body", ()):
                self.stmt(stmt)

    def guarded(self, guard: Guard, body: Any) -> None:
        saved = self.guards
        self.guards = saved + (guard,)
        try:
            self.block(body)
        finally:
            self.guards = saved

    def stmt(self, stmt: cst.CSTNode) -> None:
        t = type(stmt)
        if t is cst.SimpleStatementLine:
            # each ';'-separated statement has its own order, so `import torch; torch.f()`
            # sees its import (same cost as one order per line for a one-statement line)
            for small in stmt.body:
                self.order += 1
                self.small(small)
            return
        self.order += 1
        if t is cst.FunctionDef:
            self.funcdef(stmt)
        elif t is cst.ClassDef:
            self.classdef(stmt)
        elif t is cst.If:
            self.if_(stmt)
        elif t is cst.For:
            self.expr(stmt.iter)
            order = self.order
            frame = LoopFrame(stmt, self.loop, self.scope, order, self.guards)
            saved_loop = self.loop
            self.loop = frame
            try:
                self.bind_target(stmt.target, "for", stmt.iter)
                self.guarded(Guard("loop", order=order), stmt.body)
            finally:
                self.loop = saved_loop
            if stmt.orelse is not None:
                self.block(stmt.orelse.body)
        elif t is cst.While:
            self.expr(stmt.test)
            frame = LoopFrame(stmt, self.loop, self.scope, self.order, self.guards)
            saved_loop = self.loop
            self.loop = frame
            try:
                self.guarded(Guard("loop", order=self.order), stmt.body)
            finally:
                self.loop = saved_loop
            if stmt.orelse is not None:
                self.block(stmt.orelse.body)
        elif t is cst.Try or t is cst.TryStar:
            self.block(stmt.body)
            for h in stmt.handlers:
                self.order += 1
                if h.type is not None:
                    self.expr(h.type)
                saved = self.guards
                self.guards = saved + (Guard("maybe"),)
                try:
                    if h.name is not None and type(h.name.name) is cst.Name:
                        self.bind(h.name.name.value, "except", None)
                    self.block(h.body)
                finally:
                    self.guards = saved
            if stmt.orelse is not None:
                self.block(stmt.orelse.body)
            if stmt.finalbody is not None:
                self.block(stmt.finalbody.body)
        elif t is cst.With:
            for item in stmt.items:
                self.expr(item.item)
                if item.asname is not None:
                    self.bind_target(item.asname.name, "with", item.item)
            self.block(stmt.body)
        elif t is cst.Match:
            self.expr(stmt.subject)
            for case in stmt.cases:
                self.order += 1
                if case.guard is not None:
                    self.expr(case.guard)
                self.guarded(Guard("maybe"), case.body)
        else:  # pragma: no cover - future statement types: walk their code generically
            self.expr(stmt)

    def if_(self, stmt: cst.If) -> None:
        self.expr(stmt.test)
        order = self.order
        self.guarded(Guard("if", stmt.test, True, order), stmt.body)
        orelse = stmt.orelse
        if orelse is None:
            return
        saved = self.guards
        self.guards = saved + (Guard("if", stmt.test, False, order),)
        try:
            if type(orelse) is cst.If:
                self.order += 1
                self.if_(orelse)
            else:
                self.block(orelse.body)
        finally:
            self.guards = saved

    def funcdef(self, node: cst.FunctionDef) -> None:
        for d in node.decorators:
            self.expr(d.decorator)
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if p.default is not None:
                self.expr(p.default)
        scope = Scope("function", node, self.scope, node.name.value, self.order, self.guards)
        scope.decorators = tuple(d.decorator for d in node.decorators)
        scope.is_method = self.scope.kind == "class"
        for p in params.posonly_params:
            scope.params.append((p.name.value, p, "posonly"))
        for p in params.params:
            scope.params.append((p.name.value, p, "normal"))
        if isinstance(params.star_arg, cst.Param):
            scope.params.append((params.star_arg.name.value, params.star_arg, "star"))
        for p in params.kwonly_params:
            scope.params.append((p.name.value, p, "kwonly"))
        if params.star_kwarg is not None:
            scope.params.append((params.star_kwarg.name.value, params.star_kwarg, "starstar"))
        self.bind(node.name.value, "def", scope, node)
        self.scopes.append(scope)
        saved = (self.scope, self.guards, self.loop, self.hook)
        self.scope, self.guards, self.loop = scope, (), None
        if node.name.value in STEP_HOOKS:
            self.hook = node.name.value
        try:
            for name, p, kind in scope.params:
                self.bind(name, "param", p, p)
            self.block(node.body)
        finally:
            self.scope, self.guards, self.loop, self.hook = saved

    def classdef(self, node: cst.ClassDef) -> None:
        for d in node.decorators:
            self.expr(d.decorator)
        for a in (*node.bases, *node.keywords):
            self.expr(a.value)
        scope = Scope("class", node, self.scope, node.name.value, self.order, self.guards)
        scope.decorators = tuple(d.decorator for d in node.decorators)
        scope.bases = tuple(a.value for a in node.bases)
        scope.keywords = tuple(node.keywords)
        self.bind(node.name.value, "class", scope, node)
        self.scopes.append(scope)
        saved = (self.scope, self.guards, self.loop)
        self.scope, self.guards, self.loop = scope, (), None
        try:
            self.block(node.body)
        finally:
            self.scope, self.guards, self.loop = saved

    def small(self, node: cst.CSTNode) -> None:
        t = type(node)
        if t is cst.Expr:
            self.expr(node.value)
        elif t is cst.Assign:
            self.expr(node.value)
            for target in node.targets:
                self.bind_target(target.target, "assign", node.value)
        elif t is cst.AnnAssign:
            if node.value is not None:
                self.expr(node.value)
                self.bind_target(node.target, "annassign", node.value)
            elif self.scope.kind == "class" and type(node.target) is cst.Name:
                # a dataclass field without a default
                self.bind(node.target.value, "annassign", None, node.target)
        elif t is cst.AugAssign:
            self.expr(node.value)
            target = node.target
            if type(target) is cst.Name:
                self.bind(target.value, "augassign", node.value, target, op=node.operator)
            elif type(target) is cst.Attribute:
                self.expr(target.value)
                self.mutations.append(Mutation("augattr", target.value, target.attr.value, None,
                                               self.order, self.scope, self.guards, target))
            elif type(target) is cst.Subscript:
                self.expr(target.value)
                self.mutations.append(Mutation("augitem", target.value, None, None, self.order,
                                               self.scope, self.guards, target))
        elif t is cst.Return:
            if node.value is not None:
                self.expr(node.value)
            self.scope.returns.append((node.value, self.guards, self.order))
        elif t is cst.Import:
            for alias in node.names:
                full = _import_name(alias.name)
                root = full.split(".")[0]
                self.imported_roots.add(root)
                if alias.asname is not None and type(alias.asname.name) is cst.Name:
                    self.bind(alias.asname.name.value, "import", full, alias)
                else:
                    self.bind(root, "import", root, alias)
        elif t is cst.ImportFrom:
            mod = _import_name(node.module) if node.module is not None else ""
            dots = "." * len(node.relative)
            base = dots + mod
            if not dots:
                self.imported_roots.add(mod.split(".")[0])
            if isinstance(node.names, cst.ImportStar):
                self.bind("*", "import", base, node)
            else:
                for alias in node.names:
                    name = _import_name(alias.name)
                    full = f"{base}.{name}" if base and not base.endswith(".") else base + name
                    local = (alias.asname.name.value
                             if alias.asname is not None and type(alias.asname.name) is cst.Name
                             else name)
                    self.bind(local, "import", full, alias)
        elif t is cst.Global:
            for n in node.names:
                self.scope.globals.add(n.name.value)
        elif t is cst.Nonlocal:
            pass  # the names stay bound in the enclosing function
        elif t is cst.Del:
            target = node.target
            names: Iterable = target.elements if type(target) is cst.Tuple else (target,)
            for el in names:
                # a tuple holds Elements (their .value is the target); a bare `del x` target is the
                # Name itself, whose .value is the identifier string
                v = el.value if isinstance(el, cst.BaseElement) else el
                if type(v) is cst.Name:
                    self.bind(v.value, "del", None, v)
                else:
                    self.expr(v)
        else:
            # Assert, Raise, Pass, Break, Continue, TypeAlias...: walk what holds code
            self.expr(node)

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, node: Any) -> None:
        stack = [node]
        pop = stack.pop
        push = stack.append
        while stack:
            n = pop()
            t = type(n)
            if t is cst.Call:
                self.call(n)
            elif t is cst.Name or t is cst.SimpleString or t is cst.Integer or t is cst.Float:
                continue
            elif t is cst.NamedExpr:
                if type(n.target) is cst.Name:
                    self.bind(n.target.value, "assign", n.value, n.target)
            elif t is cst.Subscript:
                self.subscript(n)
            elif t is cst.Lambda:
                push(n.body)
                continue
            elif t is cst.FunctionDef or t is cst.ClassDef:  # pragma: no cover - defensive
                continue
            for name in _code_fields(t):
                v = getattr(n, name)
                if v is None:
                    continue
                if isinstance(v, cst.CSTNode):
                    push(v)
                elif isinstance(v, (tuple, list)):
                    for x in reversed(v):
                        if isinstance(x, cst.CSTNode):
                            push(x)

    def call(self, node: cst.Call) -> None:
        rec = CallRecord(node, self.scope, self.order, self.guards, self.loop, self.hook)
        self.calls.append(rec)
        if rec.method is not None:
            self.methods.add(rec.method)
            if rec.method in ("backward", "step") and self.loop is not None:
                self.loop.has_step = True

    def subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            key = node.slice[0].slice.value
            if type(key) is cst.SimpleString:
                text = key.value.strip("'\"rbuRBU")
                if text in _ENV_KEYS and _dotted(node.value) in ("os.environ", "environ"):
                    self.env_reads.append((node, text, self.scope, self.order))


def build_index(module: cst.Module) -> ModuleIndex:
    """Walk ``module`` once and return its :class:`ModuleIndex`.

    Raises ``RecursionError`` for pathologically deep nesting (the caller turns it into an
    extraction error).
    """
    w = _Walker(module)
    w.block(module)
    return ModuleIndex(module, w.scopes[0], w.scopes, w.calls, w.mutations, w.env_reads,
                       w.imported_roots, w.methods)
