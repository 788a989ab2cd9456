"""Where scripts get their settings from: argparse, dataclasses, config files, library defaults.

A mixin of :class:`lintlora.extract.pyresolve.Resolver`: ``args.NAME`` after
``parser.parse_args()`` (the ``add_argument`` default, ``store_true`` -> False, ``type=``
applied to string defaults), dataclass ``field(default=...)`` declarations (bases first, local
subclasses of ``TrainingArguments`` overriding the library's defaults), ``HfArgumentParser`` /
``TrlParser`` parse methods, JSON/YAML files named by literal path (read relative to the script,
never executed), and the library defaults table for recognised config classes.

When the script is launched (``Resolver.binder``, :mod:`lintlora.extract.pybind`), the parsers'
options take the launch's words instead of their defaults, and files the command line names
are read from the launch's folder and point into themselves.
"""

from __future__ import annotations

import os
import re
from typing import Any

import libcst as cst

from lintlora.extract.pyindex import Binding, CallRecord, Scope
from lintlora.extract.pyvalues import (
    _ORIGIN_RANK, Const, Env, Obj, SeqV, Unknown, V, _is_plain, bounded_names,
)
from lintlora.extract.qualnames import _KNOWN_LIBRARIES, DEFAULTS_CLASS, canonical
from lintlora.training_setup import Origin

__all__ = ["ArgumentSources", "NAMED_CONFIG_MAX_BYTES"]

NAMED_CONFIG_MAX_BYTES = 1 * 2**20
"""The most bytes read of a JSON/YAML file a script names (``json.load(open(...))``,
``parse_json_file``, ``OmegaConf.load``): 1 MiB, the bounded YAML loader's own limit
(:data:`lintlora.extract.yaml_loader.MAX_CONFIG_CHARS`; real training configs are under 20 KB,
and the pure-Python YAML scanner reads about 1-3 MB/s, so one file costs at most about a
second). A larger file is not read: its values are unknown."""

_KEY_SHOWN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
"""A key named in a message about a value that is not shown (other keys are "a value")."""

_KEY_AT_LINE_START = re.compile(
    r"""(?m)^[ \t]*(?:"([^"\n]{1,200})"|'([^'\n]{1,200})'|([^\s"'#:][^:\n]{0,199}?))[ \t]*:""")
"""A key written at the start of a line of a JSON/YAML text (quoted or not), for the line a
value read from the file is reported at."""


class _FileText:
    """The text of a config file a script reads, and the line each key is first written on
    (found in one pass over the text, the first time a line is asked for: a script that
    spreads a file of many keys, ``TrainingArguments(**cfg)``, costs one pass, not one per
    key)."""

    __slots__ = ("text", "_lines", "abs_path")

    def __init__(self, text: str, abs_path: str | None = None) -> None:
        self.text = text
        self._lines: dict[str, int] | None = None
        self.abs_path = abs_path
        """The file's absolute path when the launch's command line named it: its values then
        point into it (a span in the file), else ``None`` (today's: the script's place)."""

    def line_of(self, key: str) -> int | None:
        """The 1-based line where ``key`` is first written at the start of a line, or ``None``."""
        if self._lines is None:
            lines: dict[str, int] = {}
            line, pos = 1, 0
            for m in _KEY_AT_LINE_START.finditer(self.text):
                line += self.text.count("\n", pos, m.start())
                pos = m.start()
                lines.setdefault(m.group(1) or m.group(2) or m.group(3), line)
            self._lines = lines
        return self._lines.get(key)

_CLI_PARSE_METHODS = frozenset({"parse_args_into_dataclasses", "parse_args_and_config",
                                "parse_args_and_config_into_dataclasses"})
"""``HfArgumentParser``/``TrlParser`` methods that read the command line (and, for TrlParser,
a ``--config`` file named at launch)."""


class ArgumentSources:
    """Resolver methods for arguments that come from parsers, dataclasses and files."""

    # ---- argparse ---------------------------------------------------------------------------------
    def _argparse_value(self, parser: V, attr: str, node: cst.CSTNode | None) -> V:
        table = self.argparse_table(parser)
        if table is None:
            return Unknown(node, "argument parser not followed")
        entry = table.get(attr)
        if entry is None:
            return Unknown(node, f"`--{attr}` is not defined by the parser in this file")
        return entry[0]

    def argparse_table(self, parser: V) -> dict[str, tuple] | None:
        """dest -> (default value, add_argument call) for an ``argparse.ArgumentParser``."""
        if not (isinstance(parser, Obj) and parser.kind == "call"
                and parser.data == "argparse.ArgumentParser"):
            return None
        key = id(parser.node)
        cached = self._argparse.get(key)
        if cached is not None:
            return cached
        groups = self._argparse_calls()
        if groups is None:  # a receiver evaluated while the calls are grouped
            return None
        table: dict[str, tuple] = {}
        self._argparse[key] = table
        for rec in groups.get(key, ()):
            env = self.env_for(rec)
            if rec.method == "set_defaults":
                for a in rec.node.args:
                    if a.keyword is not None:
                        v = self.ev(a.value, env, rec.order)
                        table[a.keyword.value] = (self._as_default(v, a.value, a.keyword.value),
                                                  rec.node)
                continue
            dest, default = self._add_argument(rec, env)
            if dest:
                table[dest] = (default, rec.node)
        return table

    def _argparse_calls(self) -> dict[int, list[CallRecord]] | None:
        """The file's ``add_argument``/``set_defaults`` calls by the parser they add to (the
        ``id`` of its constructing call; through argument groups), in source order: each
        receiver is resolved once for the file, not once per parser. ``None`` while the
        grouping itself runs."""
        groups = self._argparse_groups
        if groups is not None or self._argparse_building:
            return groups
        self._argparse_building = True
        groups = {}
        try:
            for rec in self.index.calls_with_method("add_argument", "set_defaults"):
                recv = self.ev(rec.node.func.value, self.env_for(rec), rec.order)  # type: ignore[attr-defined]
                owner = recv
                if isinstance(recv, Obj) and recv.kind == "argparse_group":
                    owner = recv.data
                if isinstance(owner, Obj) and owner.node is not None:
                    groups.setdefault(id(owner.node), []).append(rec)
        finally:
            self._argparse_building = False
        self._argparse_groups = groups
        return groups

    def _as_default(self, v: V, node: cst.CSTNode | None, dest: str) -> V:
        if isinstance(v, Const):
            return Const(v.value, Origin.ARGPARSE_DEFAULT if _ORIGIN_RANK[v.origin] <= 2
                         else v.origin, v.node or node, f"--{dest}")
        return v

    def _add_argument(self, rec: CallRecord, env: Env) -> tuple[str | None, V]:
        flags: list[str] = []
        kw: dict[str, cst.Arg] = {}
        for a in rec.node.args:
            if a.keyword is None and not a.star:
                v = self.ev(a.value, env, rec.order)
                if isinstance(v, Const) and isinstance(v.value, str):
                    flags.append(v.value)
            elif a.keyword is not None:
                kw[a.keyword.value] = a
        dest = None
        if "dest" in kw:
            d = self.ev(kw["dest"].value, env, rec.order)
            dest = d.value if isinstance(d, Const) and isinstance(d.value, str) else None
        if dest is None:
            longs = [f for f in flags if f.startswith("--")]
            shorts = [f for f in flags if f.startswith("-") and not f.startswith("--")]
            pos = [f for f in flags if not f.startswith("-")]
            pick = longs[0] if longs else shorts[0] if shorts else pos[0] if pos else None
            if pick is None:
                return None, Unknown(rec.node, "add_argument")
            dest = pick.lstrip("-").replace("-", "_")
        action = None
        if "action" in kw:
            av = self.ev(kw["action"].value, env, rec.order)
            action = av.value if isinstance(av, Const) else "?"
        if "default" in kw:
            v = self.ev(kw["default"].value, env, rec.order)
            if isinstance(v, Const) and isinstance(v.value, str) and "type" in kw:
                tv = self.ev(kw["type"].value, env, rec.order)
                conv = {"int": int, "float": float, "str": str}.get(
                    tv.data if isinstance(tv, Obj) and tv.kind == "builtin" else "")
                if conv is not None:
                    try:
                        v = Const(conv(v.value), v.origin, v.node, v.source)
                    except ValueError:
                        v = Unknown(kw["default"].value, "default does not convert")
            return dest, self._as_default(v, kw["default"].value, dest)
        if action in ("store_true", "store_false"):
            return dest, Const(action == "store_false", Origin.ARGPARSE_DEFAULT, rec.node,
                               f"--{dest}")
        if action == "?":
            return dest, Unknown(rec.node, f"`--{dest}` uses an unresolved action")
        if "required" in kw:
            rv = self.ev(kw["required"].value, env, rec.order)
            if not (isinstance(rv, Const) and rv.value is False):
                return dest, Unknown(rec.node, f"`--{dest}` must be given on the command line")
        if flags and not flags[0].startswith("-") and "nargs" not in kw:
            return dest, Unknown(rec.node, f"`{dest}` is a positional argument")
        return dest, Const(None, Origin.ARGPARSE_DEFAULT, rec.node, f"--{dest}")

    # ---- dataclasses ------------------------------------------------------------------------------
    def dataclass_fields(self, cls: Scope) -> dict[str, V]:
        """Field name -> default value (``DATACLASS_DEFAULT``) of a local dataclass, bases
        first, so a subclass's own fields override its bases'. Kept per class for the
        resolver's life, as :meth:`ev` keeps every value: a script reading ``args.x`` for
        each of its fields would compute them all again at each read (artidoro/qlora's
        ``qlora.py``: about 480 reads of four argument dataclasses per lint)."""
        memo = self._dataclass_fields_memo
        hit = memo.get(id(cls))
        if hit is not None and hit[0] is cls:
            return dict(hit[1])
        fields = self._dataclass_fields(cls)
        memo[id(cls)] = (cls, fields)
        return dict(fields)

    def _dataclass_fields(self, cls: Scope) -> dict[str, V]:
        fields: dict[str, V] = {}
        env = Env(cls)
        for base in cls.bases:
            bv = self.ev(base, Env(cls.parent) if cls.parent else self.module_env, cls.order)
            if isinstance(bv, Obj) and bv.kind == "scope" and bv.data.kind == "class":
                fields.update(self.dataclass_fields(bv.data))
        for name, bindings in cls.bindings.items():
            b = bindings[-1]
            if b.kind != "annassign":
                continue
            fields[name] = self._field_default(b, env, cls)
        return fields

    def _field_default(self, b: Binding, env: Env, cls: Scope) -> V:
        value = b.value
        node = b.node
        if value is None:
            return Unknown(node, f"{cls.name}.{b.name} has no default (must be given)")
        if type(value) is cst.Call:
            fv = self.ev(value.func, env, b.order)
            if isinstance(fv, Obj) and fv.kind == "qual" and fv.data in ("dataclasses.field",
                                                                         "field"):
                for a in value.args:
                    if a.keyword is None:
                        continue
                    if a.keyword.value == "default":
                        return self._as_field(self.ev(a.value, env, b.order), a.value, cls, b.name)
                    if a.keyword.value == "default_factory":
                        fac = self.ev(a.value, env, b.order)
                        if isinstance(fac, Obj) and fac.kind == "lambda":
                            return self._as_field(self.ev(fac.data, fac.env or env, b.order),
                                                  fac.data, cls, b.name)
                        if isinstance(fac, Obj) and fac.kind == "builtin" and fac.data in (
                                "list", "dict", "tuple", "set"):
                            empty: Any = {} if fac.data == "dict" else ()
                            return Const(empty, Origin.DATACLASS_DEFAULT, a.value,
                                         f"{cls.name}.{b.name}")
                        return Unknown(a.value, "default factory")
                return Unknown(node, f"{cls.name}.{b.name} has no default (must be given)")
        return self._as_field(self.ev(value, env, b.order), value, cls, b.name)

    def _as_field(self, v: V, node: cst.CSTNode, cls: Scope, name: str) -> V:
        if isinstance(v, Const):
            origin = Origin.DATACLASS_DEFAULT if _ORIGIN_RANK[v.origin] <= 2 else v.origin
            return Const(v.value, origin, node, f"{cls.name}.{name}")
        return v

    def is_dataclass(self, cls: Scope) -> bool:
        env = Env(cls.parent) if cls.parent else self.module_env
        for d in cls.decorators:
            target = d.func if type(d) is cst.Call else d
            v = self.ev(target, env, cls.order)
            if isinstance(v, Obj) and v.kind == "qual" and v.data in (
                    "dataclasses.dataclass", "dataclass", "pydantic.dataclasses.dataclass"):
                return True
        return False

    def library_base(self, cls: Scope, seen: set | None = None) -> str | None:
        """The qualified name of the first non-local base class (following local bases)."""
        seen = seen or set()
        if id(cls) in seen:
            return None
        seen.add(id(cls))
        env = Env(cls.parent) if cls.parent else self.module_env
        for base in cls.bases:
            bv = self.ev(base, env, cls.order)
            if isinstance(bv, Obj) and bv.kind == "qual":
                return bv.data
            if isinstance(bv, Obj) and bv.kind == "scope" and bv.data.kind == "class":
                q = self.library_base(bv.data, seen)
                if q:
                    return q
        return None

    def _instance_attr(self, inst: Obj, attr: str, node: cst.CSTNode | None) -> V:
        cls = inst.data
        file_values = inst.extra
        if isinstance(file_values, Obj) and file_values.kind == "launch":
            # bound from the launch's command line (lintlora.extract.pybind)
            hit = file_values.data.get(attr)
            if hit is None:
                hit = file_values.data.get("*")
            if hit is not None:
                return hit
            if file_values.extra:
                return Unknown(node, file_values.extra)
            file_values = None
        if isinstance(file_values, Obj) and file_values.kind == "file":
            data = file_values.data
            if isinstance(data, dict) and attr in data:
                return self._file_value(data[attr], file_values, attr)
        elif isinstance(file_values, Unknown):
            return Unknown(node, file_values.reason)
        # explicit constructor arguments
        if inst.node is not None and type(inst.node) is cst.Call and file_values is None \
                and isinstance(cls, Obj) and cls.kind == "scope":
            call = inst.node
            env = inst.env or self.module_env
            order = self._order_of_call(call)
            for a in call.args:
                if a.keyword is not None and a.keyword.value == attr:
                    return self.ev(a.value, env, order)
        if isinstance(cls, Obj) and cls.kind == "scope":
            fields = self.dataclass_fields(cls.data)
            if attr in fields:
                return fields[attr]
            lib = self.library_base(cls.data)
            if lib is not None:
                return self._parsed_default(inst, self.library_default(lib, attr, node), attr)
            return Unknown(node, f"{cls.data.name} has no field `{attr}`")
        if isinstance(cls, Obj) and cls.kind == "qual":
            return self._parsed_default(inst, self.library_default(cls.data, attr, node), attr)
        return Unknown(node, "instance of an unresolved class")

    def _parsed_default(self, inst: Obj, v: V, attr: str) -> V:
        """A library default read through ``HfArgumentParser``/``TrlParser`` command-line parsing
        is an argparse default: the parser turns every dataclass field into a ``--attr`` option
        whose default is the field's (transformers ``hf_argparser.py``, ``_parse_dataclass_field``),
        so the user sets it at launch. Its source names the option, then the library citation."""
        node = inst.node
        launched = isinstance(inst.extra, Obj) and inst.extra.kind == "launch"
        if not (isinstance(v, Const) and v.origin is Origin.LIBRARY_DEFAULT
                and (inst.extra is None or launched)
                and type(node) is cst.Call and type(node.func) is cst.Attribute
                and node.func.attr.value in _CLI_PARSE_METHODS):
            return v
        return Const(v.value, Origin.ARGPARSE_DEFAULT, None,
                     f"--{attr}: a command-line option; default from {v.source}")

    # ---- recognised constructors ------------------------------------------------------------
    def call_kwargs(self, call: cst.Call, env: Env, order: int,
                    positional: tuple[str, ...] = ()) -> tuple[dict, bool, tuple[str, ...]]:
        """The arguments of a call by parameter name.

        Returns ``(args, complete, unresolved)``: ``args`` maps a name to ``(value, key node,
        value node)`` (the key node is the keyword, or the dict key of a ``**`` entry; ``None``
        for positional arguments); ``complete`` is False when a ``*``/``**`` argument could not
        be resolved, in which case an absent name may still be passed at run time;
        ``unresolved`` lists those arguments' source texts.
        """
        key = (id(call), id(env.frame), order)
        hit = self._kwargs_memo.get(key)
        if hit is not None:
            return hit
        out: dict = {}
        complete = True
        unresolved: list[str] = []
        pi = 0
        for a in call.args:
            if a.star == "*":
                complete = False
                unresolved.append("*" + self._text(a.value))
                pi = 1 << 30
                continue
            if a.star == "**":
                m = self.as_mapping(self.ev(a.value, env, order))
                if m is None:
                    complete = False
                    unresolved.append("**" + self._text(a.value))
                    continue
                for k, (v, kn) in m.items.items():
                    if isinstance(k, str):
                        out[k] = (v, kn, None)
                if not m.complete:
                    complete = False
                    unresolved.extend(m.unresolved or ("**" + self._text(a.value),))
                continue
            if a.keyword is not None:
                out[a.keyword.value] = (self.ev(a.value, env, order), a.keyword, a.value)
                continue
            if pi < len(positional):
                out[positional[pi]] = (self.ev(a.value, env, order), None, a.value)
            pi += 1
        result = (out, complete, bounded_names(unresolved))
        self._kwargs_memo[key] = result
        return result

    def config_value(self, obj: Obj, attr: str, node: cst.CSTNode | None) -> V:
        """``config.attr`` for a recognised config object built in the script
        (``TrainingArguments(...).per_device_train_batch_size``)."""
        call = obj.node
        env = obj.env or self.module_env
        cls = DEFAULTS_CLASS[obj.data]
        from lintlora.extract.defaults import positional_parameters

        args, complete, unresolved = self.call_kwargs(call, env, self._order_of_call(call),
                                                      positional_parameters(cls))
        if attr in args:
            return args[attr][0]
        if not complete:
            return Unknown(node, f"`{attr}` may be passed through {', '.join(unresolved)}")
        return self.library_default(obj.data, attr, node)

    def library_default(self, qualname: str, attr: str, node: cst.CSTNode | None) -> V:
        """A library class's default for ``attr`` as a ``LIBRARY_DEFAULT`` constant."""
        cls = DEFAULTS_CLASS.get(canonical(qualname))
        if cls is None:
            root = qualname.split(".")[0]
            if root in _KNOWN_LIBRARIES:
                return Unknown(node, f"`{attr}` of {qualname} (library default not tabulated)")
            return Unknown(node, f"`{attr}` of {qualname}, defined in another file")
        from lintlora.extract.defaults import entry_for

        entry = entry_for(cls)
        if attr not in entry.values:
            return Unknown(node, f"{cls}.{attr} default not tabulated")
        return Const(entry.values[attr], Origin.LIBRARY_DEFAULT, None, entry.cite(attr))

    # ---- files named by literal path --------------------------------------------------------------
    def load_file(self, path_v: V, node: cst.CSTNode | None) -> V:
        """Read a JSON/YAML file named by a resolved path, relative to the script's folder.

        The file must lie in the script's project (:func:`lintlora.safeio.confinement_root`,
        symbolic links resolved); anything else is an :class:`Unknown` "not followed: outside
        the project". It is read with :func:`lintlora.safeio.read_bounded` (a regular file, at
        most :data:`NAMED_CONFIG_MAX_BYTES`) and parsed by the bounded loader
        (:mod:`lintlora.extract.yaml_loader`: node, depth and alias-expansion limits).
        """
        if not isinstance(path_v, Const) or not isinstance(path_v.value, str):
            return Unknown(node, "the config file's path is not written in the script")
        rel = path_v.value
        binder = getattr(self, "binder", None)
        if binder is not None and path_v.origin is Origin.LAUNCH:
            # named on the command line: read from the launch's folder, listed in the inputs
            from lintlora.extract.pybind import read_relative

            full = read_relative(binder.cl, rel)
            if full not in binder.inputs:
                binder.inputs.append(full)
            key = "launch:" + full
            cached = self._file_cache.get(key)
            if cached is None:
                cached = self._read_named_file(full, rel, node, launched=True)
                self._file_cache[key] = cached
            return cached
        if self.base_dir is None:
            return Unknown(node, f"config file {rel} not read")
        cached = self._file_cache.get(rel)
        if cached is not None:
            return cached
        full = rel if os.path.isabs(rel) else os.path.join(self.base_dir, rel)
        # present or not, an input of the setup (TrainingSetup.inputs: the results cache keys
        # the run by its contents)
        self.files_read.append(os.path.abspath(full))
        result = self._read_named_file(full, rel, node)
        self._file_cache[rel] = result
        return result

    def _read_named_file(self, full: str, rel: str, node: cst.CSTNode | None,
                         launched: bool = False) -> V:
        from lintlora import safeio
        from lintlora.extract import ExtractError
        from lintlora.extract.yaml_loader import load_config_text, to_python

        if "\x00" in full:
            return Unknown(node, "config file path holds a NUL character: not read")
        if self._root is None:
            self._root = safeio.confinement_root(self.base_dir or os.path.dirname(full) or ".")
        if not safeio.is_within(full, self._root):
            return Unknown(node, f"config file {rel} not followed: outside the project")
        kind = "yaml" if full.endswith((".yaml", ".yml")) else "json"
        try:
            # the path is resolved and checked above; the last component must not turn into
            # a link between the check and the open
            raw = safeio.read_bounded(os.path.realpath(full), NAMED_CONFIG_MAX_BYTES,
                                      follow_links=False)
            text = raw.decode("utf-8")
            data = to_python(load_config_text(text, full, kind=kind))
        except safeio.UnsafeFileError as exc:
            return Unknown(node, f"config file {rel} not read: {exc}")
        except UnicodeDecodeError:
            return Unknown(node, f"config file {rel} could not be read (not UTF-8 text)")
        except OSError as exc:
            return Unknown(node, f"config file {rel} could not be read "
                                 f"({exc.strerror or exc.__class__.__name__})")
        except ExtractError as exc:
            where = f" at line {exc.line}" if exc.line else ""
            return Unknown(node, f"config file {rel} could not be parsed{where} ({exc.message})")
        except ValueError:  # to_python's second guard
            return Unknown(node, f"config file {rel} is too large to analyse")
        return Obj("file", data, node, None, _FileText(text, os.path.abspath(full) if launched
                                                       else None), rel)

    def _file_value(self, value: Any, file_obj: Obj, key: Any = None) -> V:
        """A value read from a config file; ``source`` is ``path:line`` of its key when found.

        A nested mapping stays a file object (its entries are decided one by one); any other
        value is kept only when :func:`lintlora.file_values.quotable` allows it: otherwise it
        is :class:`Unknown`, named by its key and never shown.
        """
        rel = file_obj.path
        source = rel
        text = file_obj.extra
        span = None
        if isinstance(key, str) and isinstance(text, _FileText):
            line = text.line_of(key)
            if line is not None:
                source = f"{rel}:{line}"
            if text.abs_path is not None:  # named at launch: the value points into the file
                from lintlora.training_setup import Span

                span = Span(text.abs_path, line or 1, 1)
        if isinstance(value, dict):
            return Obj("file", value, file_obj.node, None, text, rel)
        if isinstance(value, list):
            value = tuple(value)
        from lintlora.file_values import quotable

        if not quotable(key, value):
            what = f"`{key}`" if isinstance(key, str) and _KEY_SHOWN_RE.fullmatch(key) else "a value"
            return Unknown(None, f"{what} in {source} (not a setting lintlora models; not shown)")
        if _is_plain(value):
            return Const(value, Origin.CONFIG_FILE, span, source)
        return Unknown(None, f"value in {source}")

    def _hf_parse(self, parser: Obj, method: str, node: cst.Call, env: Env, order: int,
                  pos: list, kw: dict) -> V:
        pcall: cst.Call = parser.node  # type: ignore[assignment]
        penv = parser.env or self.module_env
        porder = self._order_of_call(pcall)
        types_arg = None
        for a in pcall.args:
            if a.keyword is None and not a.star:
                types_arg = a.value
                break
            if a.keyword is not None and a.keyword.value == "dataclass_types":
                types_arg = a.value
                break
        if types_arg is None:
            return Unknown(node, "parser without dataclass types")
        tv = self.ev(types_arg, penv, porder)
        classes: list[V]
        if isinstance(tv, SeqV):
            classes = list(tv.items)
        elif isinstance(tv, Obj):
            classes = [tv]
        else:
            return Unknown(node, "parser dataclass types not resolved")
        extra: Any = None
        if method in ("parse_json_file", "parse_yaml_file"):
            path_node = pos[0].value if pos else (kw["json_file"].value if "json_file" in kw else
                                                   kw["yaml_file"].value if "yaml_file" in kw
                                                   else None)
            extra = self.load_file(self.ev(path_node, env, order), node)
        elif method == "parse_dict" and pos:
            d = self.as_mapping(self.ev(pos[0].value, env, order))
            extra = Unknown(node, "parse_dict of an unresolved dict") if d is None else None
        elif method in _CLI_PARSE_METHODS:
            extra = None
            binder = getattr(self, "binder", None)
            if binder is not None:
                extra = binder.hf_values(parser, classes, method, node, pos, kw)
        else:
            return Unknown(node, f"`{method}` of the argument parser")
        items: list[V] = [Obj("instance", c, node, env, extra) for c in classes]
        rem = kw.get("return_remaining_strings")
        if rem is not None:
            rv = self.ev(rem.value, env, order)
            if isinstance(rv, Const) and rv.value:
                items.append(Unknown(node, "remaining command-line strings"))
        return SeqV(items, node)
