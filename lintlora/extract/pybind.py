"""A launch's words bound to a Python script's options, as its parser would (issue 15 item 2).

:class:`LaunchBinder` is attached to a :class:`lintlora.extract.pyresolve.Resolver` when
:func:`lintlora.extract.python.extract_python` is given a
:class:`~lintlora.extract.launch_bind.CommandLine`. The resolver asks it for:

- ``args.NAME`` after ``parser.parse_args()`` / ``parse_known_args()`` of an
  ``argparse.ArgumentParser`` (:meth:`namespace_attr`; the options are read from the file's
  ``add_argument`` calls and matched by :mod:`lintlora.extract.argv_grammar`);
- the fields of the dataclasses of ``HfArgumentParser(...).parse_args_into_dataclasses()`` and
  ``TrlParser(...).parse_args_and_config()`` (:meth:`hf_values`): every field is an option
  ``--name`` plus ``--name-with-dashes`` when the name has an underscore; a bool field takes
  ``--name`` alone (``const=True``) or a word read by ``string_to_bool``, and a bool field
  defaulting to True also ``--no_name``/``--no-name`` (transformers
  ``src/transformers/hf_argparser.py``, ``HfArgumentParser._parse_dataclass_field``,
  read at commit 002496228f0c); ``Optional[X]`` is X, ``list[X]`` takes ``nargs="+"``, ``Literal[...]`` choices;
  TrlParser's ``--config x.yaml`` sets defaults from the file and the command line wins
  (trl ``trl/scripts/utils.py``, ``TrlParser.parse_args_and_config`` and
  ``set_defaults_with_config``: ``--config`` is that exact word, found with
  ``args.index``);
- ``sys.argv`` (:meth:`argv`: the script's path, then the words) and so ``len(sys.argv)``,
  ``sys.argv[1]``;
- the parameters of a function (or class ``__init__``) handed to ``fire.Fire``
  (:meth:`fire_param`: ``--name value``, ``--name=value``, ``--flag``, ``--noflag``, dashes read
  as underscores, the other words filling the parameters in order; values as fire's
  ``fire/parser.py`` ``DefaultParseValue`` reads them).

Every bound value is a ``Const`` of origin ``LAUNCH`` whose node is the launch file's span
(:func:`lintlora.extract.launch_bind.word_span`) and whose source quotes the words
(``"--fp16 True (run.sh:5)"``). A word whose text is unknown makes the option unknown ("set at
launch by an unknown value: ..."), never its default; an unknown word where an option could be
makes every option not set explicitly unknown. Files the command line names and the script
reads (``parser.parse_json_file(sys.argv[1])``, TrlParser ``--config``) are read from the
launch's folder, bounded and confined (:meth:`Resolver.load_file`), and listed in
:attr:`LaunchBinder.inputs`.
"""

from __future__ import annotations

import os
from typing import Any

import libcst as cst

from lintlora.extract.argv_grammar import OptSpec, Parsed, fire_value, parse_options
from lintlora.extract.launch_bind import MAX_BOUND_WORDS, CommandLine, word_source, word_span
from lintlora.extract.launch_model import ShellValue
from lintlora.extract.pyindex import Scope
from lintlora.extract.pyvalues import Const, Env, Obj, SeqV, Unknown, V
from lintlora.training_setup import Origin

__all__ = ["LaunchBinder", "MAX_DATACLASS_FIELDS"]

MAX_DATACLASS_FIELDS = 2_048
"""Options one parser is given at most (dataclass fields and ``add_argument`` calls together;
``TrainingArguments`` has about 120, LLaMA-Factory's five argument classes about 400)."""

_SCALARS = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


class LaunchBinder:
    """Binds one command line for one resolver (see the module docstring).

    ``inputs``: absolute paths of the files read because the command line named them.
    """

    def __init__(self, resolver: Any, command_line: CommandLine) -> None:
        self.r = resolver
        self.cl = command_line
        self.words: tuple[ShellValue, ...] = tuple(command_line.words)
        self.inputs: list[str] = []
        self._parsed: dict[int, Parsed] = {}
        self._fire: dict[int, Parsed] | None = None

    # ---- values ---------------------------------------------------------------------------
    def const(self, value: Any, words: tuple[ShellValue, ...]) -> Const:
        """A value bound from ``words`` (origin LAUNCH, span the last word's line)."""
        return Const(value, Origin.LAUNCH, word_span(self.cl, words[-1] if words else None),
                     word_source(self.cl, words))

    def _result(self, parsed: Parsed, dest: str) -> V | None:
        hit = parsed.values.get(dest)
        if hit is not None:
            return self.const(hit[0], hit[1])
        note = parsed.notes.get(dest)
        if note is not None:
            line = next((w.line for w in reversed(note[1]) if w.line), self.cl.line)
            return Unknown(None, f"{note[0]} ({os.path.basename(self.cl.path)}:{line})")
        if parsed.blocked:
            return Unknown(None, f"may be set at launch ({self.cl.where}): {parsed.blocked}")
        return None

    # ---- sys.argv ---------------------------------------------------------------------------
    def argv(self) -> V:
        """``sys.argv``: the script (as launched), then the words (unknown ones unknown)."""
        items: list[V] = [Const("<script>", Origin.LAUNCH, word_span(self.cl, None),
                                f"sys.argv[0] ({self.cl.where})")]
        for w in self.words[:MAX_BOUND_WORDS]:
            items.append(self.const(w.text, (w,)) if w.text is not None else Unknown(
                None, f"set at launch by an unknown value: {w.note or w.raw or 'not known'}"))
        if len(self.words) > MAX_BOUND_WORDS:
            items.append(Unknown(None, f"more than {MAX_BOUND_WORDS:,} words"))
        return SeqV(items, None)

    def argv_length(self) -> V:
        if len(self.words) > MAX_BOUND_WORDS:
            return Unknown(None, f"the command line has more than {MAX_BOUND_WORDS:,} words")
        return Const(len(self.words) + 1, Origin.LAUNCH, word_span(self.cl, None),
                     f"len(sys.argv) ({self.cl.where})")

    # ---- argparse -----------------------------------------------------------------------------
    def namespace_attr(self, ns: Obj, attr: str, node: cst.CSTNode | None) -> V | None:
        """``args.attr`` bound from the command line, or ``None`` (use the default)."""
        parser = ns.data
        call = ns.node
        if type(call) is cst.Call and any(not a.star and (a.keyword is None or a.keyword.value
                                                          == "args") for a in call.args):
            return None  # parse_args([...]) parses its own list, not the command line
        key = id(parser.node)
        parsed = self._parsed.get(key)
        if parsed is None:
            specs, abbrev = self._argparse_specs(parser)
            parsed = parse_options(specs, self.words, abbrev=abbrev, limit=MAX_BOUND_WORDS)
            self._parsed[key] = parsed
        return self._result(parsed, attr)

    def _argparse_specs(self, parser: Obj) -> tuple[list[OptSpec], bool]:
        r = self.r
        abbrev = True
        pcall = parser.node
        if type(pcall) is cst.Call:
            for a in pcall.args:
                if a.keyword is not None and a.keyword.value == "allow_abbrev":
                    v = r.ev(a.value, parser.env or r.module_env, r._order_of_call(pcall))
                    abbrev = not (isinstance(v, Const) and v.value is False)
        groups = r._argparse_calls() or {}
        table = r.argparse_table(parser) or {}
        specs: list[OptSpec] = []
        for rec in groups.get(id(parser.node), ())[:MAX_DATACLASS_FIELDS]:
            if rec.method != "add_argument":
                continue
            spec = self._argparse_spec(rec, table)
            if spec is not None:
                specs.append(spec)
        return specs, abbrev

    def _argparse_spec(self, rec: Any, table: dict) -> OptSpec | None:
        r = self.r
        env = r.env_for(rec)
        flags: list[str] = []
        kw: dict[str, cst.Arg] = {}
        for a in rec.node.args:
            if a.keyword is None and not a.star:
                v = r.ev(a.value, env, rec.order)
                if isinstance(v, Const) and isinstance(v.value, str):
                    flags.append(v.value)
            elif a.keyword is not None:
                kw[a.keyword.value] = a

        def val(name: str) -> V | None:
            return r.ev(kw[name].value, env, rec.order) if name in kw else None

        d = val("dest")
        dest = d.value if isinstance(d, Const) and isinstance(d.value, str) else None
        options = [f for f in flags if f.startswith("-")]
        if dest is None:
            longs = [f for f in options if f.startswith("--")]
            pick = longs[0] if longs else options[0] if options else flags[0] if flags else None
            if pick is None:
                return None
            dest = pick.lstrip("-").replace("-", "_")
        action = "store"
        av = val("action")
        if av is not None:
            if isinstance(av, Const) and isinstance(av.value, str):
                action = av.value if av.value in (
                    "store", "store_true", "store_false", "store_const", "append",
                    "append_const", "count") else "unknown"
            elif isinstance(av, Obj) and av.kind == "qual" and av.data.endswith(
                    "BooleanOptionalAction"):
                action = "boolean_optional"
            else:
                action = "unknown"
        nargs: Any = None
        nv = val("nargs")
        if nv is not None:
            nargs = nv.value if isinstance(nv, Const) and (
                nv.value in ("?", "*", "+") or (isinstance(nv.value, int)
                                                and not isinstance(nv.value, bool)
                                                and 0 <= nv.value <= 256)) else "unknown"
            if nargs == "unknown":
                action = "unknown"
        conv = "str"
        tv = val("type")
        if tv is not None:
            if isinstance(tv, Obj) and tv.kind == "builtin" and tv.data in _SCALARS:
                conv = _SCALARS[tv.data]
            elif isinstance(tv, Obj) and tv.kind == "qual" and tv.data.endswith("string_to_bool"):
                conv = "string_to_bool"
            else:
                conv = "other:" + (r._text(kw["type"].value)[:40])
        cv = val("const")
        const = cv.value if isinstance(cv, Const) else None
        if action in ("store_const", "append_const") and not isinstance(cv, Const):
            action = "unknown"
        choices = None
        chv = val("choices")
        if chv is not None:
            plain = _plain(chv)
            choices = tuple(plain) if isinstance(plain, (tuple, list)) else None
        default = None
        entry = table.get(dest)
        if entry is not None and isinstance(entry[0], Const):
            default = entry[0].value
        return OptSpec(dest, tuple(options), action, nargs, conv, const, choices, None, default)

    # ---- HfArgumentParser / TrlParser ---------------------------------------------------------
    def hf_values(self, parser: Obj, classes: list[V], method: str, call: cst.Call,
                  pos: list, kw: dict) -> Obj | None:
        """The command line bound to the parser's dataclass fields: an ``Obj("launch", {field:
        value}, extra=blocked note)`` for the instances, or ``None`` (the parse is given its own
        ``args``: today's defaults)."""
        if pos or "args" in kw:
            return None
        key = id(call)
        parsed = self._parsed.get(key)
        if parsed is None:
            specs: list[OptSpec] = []
            for c in classes:
                specs.extend(self._class_specs(c))
                if len(specs) > MAX_DATACLASS_FIELDS:
                    specs = specs[:MAX_DATACLASS_FIELDS]
                    break
            words = self.words
            config: dict[str, V] = {}
            if parser.data == "trl.TrlParser" and method != "parse_args_into_dataclasses":
                words, config = self._trl_config(words, call)
            parsed = parse_options(specs, words, abbrev=True, limit=MAX_BOUND_WORDS)
            parsed.config = config
            self._parsed[key] = parsed
        values: dict[str, V] = {}
        for dest in set(parsed.values) | set(parsed.notes):
            got = self._result(parsed, dest)
            if got is not None:
                values[dest] = got
        for dest, v in parsed.config.items():
            values.setdefault(dest, v)
        return Obj("launch", values, call, None, parsed.blocked and (
            f"may be set at launch ({self.cl.where}): {parsed.blocked}"))

    def _trl_config(self, words: tuple[ShellValue, ...], call: cst.Call
                    ) -> tuple[tuple[ShellValue, ...], dict[str, V]]:
        """TrlParser: ``--config PATH`` (that exact word, then the path) removed from the
        words; the file's top-level keys become defaults (origin CONFIG_FILE)."""
        texts = [w.text for w in words]
        if "--config" not in texts:
            return words, {}
        i = texts.index("--config")
        rest = words[:i] + words[i + 2:]
        if i + 1 >= len(words):
            return rest, {}
        path_word = words[i + 1]
        if path_word.text is None:
            return rest, {"*": Unknown(None, "TrlParser --config names an unknown file: "
                                              f"{path_word.note or path_word.raw}")}
        file_v = self.r.load_file(self.const(path_word.text, (words[i], path_word)), call)
        if not (isinstance(file_v, Obj) and file_v.kind == "file" and isinstance(file_v.data, dict)):
            reason = file_v.reason if isinstance(file_v, Unknown) else "not a mapping"
            return rest, {"*": Unknown(None, reason)}
        out = {k: self.r._file_value(v, file_v, k) for k, v in list(file_v.data.items())[
            :MAX_DATACLASS_FIELDS] if isinstance(k, str) and k != "env"}
        return rest, out

    def _class_specs(self, cls_v: V) -> list[OptSpec]:
        if isinstance(cls_v, Obj) and cls_v.kind == "scope" and cls_v.data.kind == "class":
            return self._local_specs(cls_v.data, set())
        if isinstance(cls_v, Obj) and cls_v.kind == "qual":
            return _library_specs(cls_v.data)
        return []

    def _local_specs(self, cls: Scope, seen: set) -> list[OptSpec]:
        if id(cls) in seen:
            return []
        seen.add(id(cls))
        r = self.r
        specs: list[OptSpec] = []
        own: dict[str, OptSpec] = {}
        penv = Env(cls.parent) if cls.parent else r.module_env
        for base in cls.bases:
            bv = r.ev(base, penv, cls.order)
            if isinstance(bv, Obj) and bv.kind == "scope" and bv.data.kind == "class":
                specs.extend(self._local_specs(bv.data, seen))
            elif isinstance(bv, Obj) and bv.kind == "qual":
                specs.extend(_library_specs(bv.data))
        defaults = r.dataclass_fields(cls)
        body = getattr(getattr(cls.node, "body", None), "body", ())
        for stmt in body:
            for small in getattr(stmt, "body", ()) if type(stmt) is cst.SimpleStatementLine else ():
                if type(small) is cst.AnnAssign and type(small.target) is cst.Name:
                    name = small.target.value
                    d = defaults.get(name)
                    default = d.value if isinstance(d, Const) else _MISSING
                    own[name] = _field_spec(name, _annotation_type(small.annotation.annotation,
                                                                   r, penv, cls.order), default)
        names = {s.dest for s in own.values()}
        return [s for s in specs if s.dest not in names] + [
            s for spec in own.values() for s in _expand(spec)]

    # ---- fire ---------------------------------------------------------------------------------
    def fire_param(self, scope: Scope, pname: str) -> V | None:
        """A parameter of a function given to ``fire.Fire`` bound from the command line, or
        ``None`` (its default applies)."""
        targets = self._fire_targets()
        parsed = targets.get(id(scope))
        if parsed is None:
            return None
        return self._result(parsed, pname)

    def _fire_targets(self) -> dict[int, Parsed]:
        if self._fire is not None:
            return self._fire
        self._fire = {}
        r = self.r
        for rec in r.index.calls[:4096]:
            func = rec.node.func
            if not (type(func) in (cst.Name, cst.Attribute)):
                continue
            q = r.qualname(func, r.env_for(rec), rec.order)
            if q not in ("fire.Fire",):
                continue
            args = [a for a in rec.node.args if a.keyword is None and not a.star]
            if not args:
                continue
            target = r.ev(args[0].value, r.env_for(rec), rec.order)
            if not (isinstance(target, Obj) and target.kind == "scope"):
                continue
            scope = target.data
            if scope.kind == "class":
                init = scope.bindings.get("__init__")
                if not init or init[-1].kind != "def":
                    continue
                scope = init[-1].value
            if scope.kind != "function":
                continue
            self._fire[id(scope)] = _fire_parse(scope, self.words)
        return self._fire


_MISSING: Any = object()


def _plain(v: V) -> Any:
    if isinstance(v, Const):
        return v.value
    if isinstance(v, SeqV) and all(isinstance(i, Const) for i in v.items):
        return tuple(i.value for i in v.items)  # type: ignore[union-attr]
    return None


def _annotation_type(node: cst.BaseExpression, r: Any, env: Env, order: int) -> tuple:
    """A field's annotation as ``(kind, arg)``: ``("scalar", "int"|"float"|"str"|"bool")``,
    ``("optional_bool", None)``, ``("list", conv)``, ``("literal", choices)``,
    ``("other", text)``."""
    t = type(node)
    if t is cst.SimpleString:
        try:
            import ast as _ast

            text = _ast.literal_eval(node.value)
            node = cst.parse_expression(text) if isinstance(text, str) and len(text) < 200 else node
            t = type(node)
        except Exception:  # noqa: BLE001 - a string annotation that does not parse
            return ("other", "?")
    if t is cst.Name:
        return ("scalar", node.value) if node.value in _SCALARS else ("other", node.value)
    if t is cst.BinaryOperation and type(node.operator) is cst.BitOr:
        parts = [node.left, node.right]
        rest = [p for p in parts if not (type(p) is cst.Name and p.value == "None")]
        if len(rest) == 1:
            inner = _annotation_type(rest[0], r, env, order)
            return ("optional_bool", None) if inner == ("scalar", "bool") else inner
        return ("other", "union")
    if t is cst.Subscript:
        head = node.value
        name = head.attr.value if type(head) is cst.Attribute else (
            head.value if type(head) is cst.Name else "")
        elems = [e.slice.value for e in node.slice if type(e.slice) is cst.Index]
        if name == "Optional" and len(elems) == 1:
            inner = _annotation_type(elems[0], r, env, order)
            return ("optional_bool", None) if inner == ("scalar", "bool") else inner
        if name == "Union":
            rest = [e for e in elems if not (type(e) is cst.Name and e.value == "None")]
            if len(rest) == 1 and len(elems) == 2:
                inner = _annotation_type(rest[0], r, env, order)
                return ("optional_bool", None) if inner == ("scalar", "bool") else inner
            return ("other", "union")
        if name in ("list", "List") and len(elems) == 1:
            inner = _annotation_type(elems[0], r, env, order)
            return ("list", inner[1] if inner[0] == "scalar" else "other:" + str(inner[1]))
        if name == "Literal":
            values = []
            for e in elems:
                v = r.ev(e, env, order)
                if not isinstance(v, Const):
                    return ("other", "Literal")
                values.append(v.value)
            return ("literal", tuple(values))
    return ("other", "annotation")


def _field_spec(name: str, kind: tuple, default: Any) -> OptSpec:
    """One dataclass field as HfArgumentParser adds it (``_parse_dataclass_field``)."""
    flags = (f"--{name}",) + ((f"--{name.replace('_', '-')}",) if "_" in name else ())
    d = None if default is _MISSING else default
    k, arg = kind
    if k == "scalar" and arg == "bool":
        return OptSpec(name, flags, "store", "?", "string_to_bool", True, None, None,
                       False if default is _MISSING else d)
    if k == "optional_bool":
        if default is not _MISSING and default is not None:
            return OptSpec(name, flags, "store", "?", "string_to_bool", True, None, None, d)
        return OptSpec(name, flags, "store", None, "string_to_bool", None, None, None, d)
    if k == "scalar":
        return OptSpec(name, flags, "store", None, _SCALARS[arg], None, None, None, d)
    if k == "list":
        return OptSpec(name, flags, "store", "+", arg if arg in _SCALARS.values() else arg,
                       None, None, None, d)
    if k == "literal":
        return OptSpec(name, flags, "store", None, "str", None, arg,
                       {str(c): c for c in arg}, d)
    # another type (an Enum, a local class, a path): kept as text unless it reads as a number
    return OptSpec(name, flags, "store", None, "loose", None, None, None, d)


def _expand(spec: OptSpec) -> list[OptSpec]:
    """The field's option, and its ``--no_name`` complement when it is a bool defaulting to
    True (``_parse_dataclass_field`` adds it with ``action="store_false"``)."""
    out = [spec]
    if spec.conv == "string_to_bool" and spec.default is True:
        dashed = spec.dest.replace("_", "-")
        out.append(OptSpec(spec.dest, (f"--no_{spec.dest}", f"--no-{dashed}"), "store_false"))
    return out


def _library_specs(qualname: str) -> list[OptSpec]:
    """The tabulated fields of a library argument class (``TrainingArguments``,
    ``SFTConfig``...), typed by their default value (:mod:`lintlora.extract.defaults`)."""
    from lintlora.extract.defaults import entry_for
    from lintlora.extract.qualnames import DEFAULTS_CLASS, canonical

    cls = DEFAULTS_CLASS.get(canonical(qualname))
    if cls is None:
        return []
    specs: list[OptSpec] = []
    for name, default in list(entry_for(cls).values.items())[:MAX_DATACLASS_FIELDS]:
        if isinstance(default, bool):
            kind: tuple = ("scalar", "bool")
        elif isinstance(default, int):
            kind = ("scalar", "int")
        elif isinstance(default, float):
            kind = ("scalar", "float")
        elif isinstance(default, str):
            kind = ("scalar", "str")
        elif isinstance(default, (list, tuple)):
            kind = ("list", "str")
        else:
            kind = ("other", "unknown")
        specs.extend(_expand(_field_spec(name, kind, default)))
    return specs


def _fire_parse(scope: Scope, words: tuple[ShellValue, ...]) -> Parsed:
    """python-fire's reading of ``words`` for a function's parameters (``fire/core.py``
    ``_ParseArgs``/``_ParseKeywordArgs``: ``--name value``, ``--name=value``, a bare ``--flag``
    before another ``--`` word or at the end is True, ``--noflag`` is False when ``flag`` is a
    parameter; ``-`` in names read as ``_``; the remaining words fill the parameters in
    order)."""
    params = [n for n, _p, k in scope.params if k in ("posonly", "normal", "kwonly")]
    if scope.is_method and params:
        params = params[1:]
    out = Parsed()
    given: set[str] = set()
    positional: list[ShellValue] = []
    ws = list(words[:MAX_BOUND_WORDS])
    if len(words) > MAX_BOUND_WORDS:
        out.blocked = f"the command line has more than {MAX_BOUND_WORDS:,} words"
    i = 0
    while i < len(ws):
        w = ws[i]
        i += 1
        t = w.text
        if t is None:
            out.blocked = out.blocked or (
                f"an unknown word ({w.note or w.raw or 'not known'}) stands where an "
                "argument could be")
            continue
        if not (t.startswith("--") and len(t) > 2):
            positional.append(w)
            continue
        body = t[2:]
        value_word: ShellValue | None = None
        attached = "=" in body
        if attached:
            body, rest = body.split("=", 1)
            value_word = ShellValue(rest, w.origin, w.raw, w.line, w.note, w.assigned_line)
        name = body.replace("-", "_")
        if name not in params and name.startswith("no") and name[2:] in params \
                and value_word is None:
            out.set(name[2:], False, (w,))
            given.add(name[2:])
            continue
        if name not in params:
            out.leftover.append(w)
            continue
        if value_word is None:
            if i < len(ws) and not (ws[i].text or "").startswith("--"):
                value_word = ws[i]
                i += 1
            else:
                out.set(name, True, (w,))
                given.add(name)
                continue
        given.add(name)
        words_used = (w,) if attached else (w, value_word)
        if value_word.text is None:
            out.fail(name, f"`--{body}` is set at launch by an unknown value: "
                           f"{value_word.note or value_word.raw or 'not known'}", (w, value_word))
            continue
        try:
            out.set(name, fire_value(value_word.text), words_used)
        except ValueError as exc:
            out.fail(name, f"`--{body}` is not read ({exc})", words_used)
    free = [p for p in params if p not in given]
    for p, w in zip(free, positional):
        try:
            out.set(p, fire_value(w.text or ""), (w,))
        except ValueError as exc:
            out.fail(p, f"`{p}` is not read ({exc})", (w,))
    return out


def read_relative(cl: CommandLine, path: str) -> str:
    """A path named on the command line, absolute (relative ones from the launch's folder)."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(cl.folder(), path))
