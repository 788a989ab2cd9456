"""A bounded reader of POSIX shell / bash text for launch discovery. It never runs anything.

Three steps, each bounded (:mod:`lintlora.extract.launch_model` limits); the first two are in
:mod:`lintlora.extract.launch_shell_syntax`:

1. :func:`tokenize`: words (kept as written, quotes included), operators, newlines and
   redirections, with line continuations, comments and here-documents; nested ``$(``, ``${``,
   backticks and quotes are followed with an explicit stack (no recursion) up to
   ``MAX_NESTING`` levels. An unterminated quote is a problem at the line that opened it.
2. :func:`parse`: a small recursive-descent parser into simple commands, ``for`` loops,
   ``if``/``case`` branches, ``while``/``until`` loops, ``{ }``/``( )`` groups and function
   definitions (depth bounded).
3. :class:`Evaluator`: walks the tree keeping the variables the script assigns (``VAR=``,
   ``export``, ``declare``/``local``, arrays ``A=(...)``, ``${VAR:=d}``) and the working folder
   (``cd``), expands each word as far as its parts are known, replays ``for`` loops over literal
   values (``MAX_LOOP_VALUES`` per loop) and calls of functions the script defines, and hands
   every simple command to a callback. A variable assigned in only some branches of an
   ``if``/``case``/``&&``/``||`` is unknown after it unless every branch gave it the same value.

Why not ``bashlex``: it is GPLv3+ (lintlora is Apache-2.0), raises on constructs common in run
scripts (``[[ ]]``, ``case``, arrays, ``$(( ))``) so a whole file would be lost, and recurses
once per nesting level (10,000 nested ``$(`` is a ``RecursionError``). ``shlex`` cannot tell a
quoted ``"$X"`` from a literal one nor follow ``$(`` nesting. This reader is small and bounded.

Unknown, never guessed: command substitution ``$(...)`` and backticks (except the idiom
``$(dirname "$0")`` / ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``, the launch file's own
folder, which is read, not run), arithmetic ``$((...))``, ``~``, script arguments ``$1``/``$@``,
variables the file never assigns (they come from the environment), and every variable after
``source``/``.``/``eval`` (except a virtual environment's ``activate`` script and the
``eval "$(conda shell.bash hook)"`` idiom, which set only ``PATH``-like variables).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable

from lintlora.extract.launch_model import (
    LIMIT_CODE, MAX_ARRAY_EXPANSION, MAX_CALL_DEPTH, MAX_COMMANDS, MAX_EXPANSION_DEPTH,
    MAX_FIELDS, MAX_LOOP_VALUES, MAX_SWEEP, MAX_WORD_CHARS, ShellValue,
)
from lintlora.extract.launch_shell_syntax import (
    ASSIGN, NAME, ArrayAssign, Branches, For, FuncDef, Group, LineMap, ShellError, Simple, Tok,
    parse, tokenize,
)

__all__ = ["ShellError", "Tok", "tokenize", "parse", "Evaluator", "Command", "LineMap"]


# ---------------------------------------------------------------------------------------------
# 3. evaluation

@dataclass
class _Var:
    value: ShellValue | tuple[ShellValue, ...]
    exported: bool = False


@dataclass
class Command:
    """One simple command as the evaluator reached it."""
    fields: list[ShellValue]
    prefixes: list[tuple[str, ShellValue]]
    exported: list[tuple[str, ShellValue]]
    line: int
    column: int
    workdir: str | None
    sweep: int | None
    loop_values: tuple[tuple[str, str], ...]
    function: str | None


_SCRIPT_DIR = re.compile(
    r"""^\s*(?:cd\s+(?:--\s+)?"?\$\(\s*)?dirname\s+(?:--\s+)?("?)(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)\1\s*(?:\)"?\s*(?:(?:&>|>)\s*/dev/null\s*)?&&\s*pwd(?:\s+-P)?\s*)?$""")
_REALPATH_SCRIPT = re.compile(
    r"""^\s*(?:realpath|readlink\s+-f)\s+("?)(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\})\1\s*$""")
_HARMLESS_SOURCE = re.compile(r"(^|/)activate$")
_HARMLESS_EVAL = re.compile(r"""^"?\$\(\s*(conda|micromamba|mamba)\s+shell\.\w+\s+hook\s*\)"?$""")
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")


class _Unknown(Exception):
    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


class Evaluator:
    """Walks a tree, calling ``on_command`` for every simple command reached.

    Args:
        path: the launch file (``$0``).
        workdir: the folder the text starts in, absolute; ``None`` when it is the caller's
            (unknown: a shell script runs in whatever folder it is started from).
        lines: the file's :class:`LineMap`.
        text: the text the offsets point into.
        env: variables known before the text (a workflow's ``env:``, a Makefile's unknown
            variables), name to value, exported.
        problems: where limit notices go, as ``(message, offset, code)``.
    """

    def __init__(self, path: str, text: str, lines: LineMap,
                 on_command: Callable[[Command], bool],
                 env: dict[str, ShellValue] | None = None, workdir: str | None = None,
                 problems: list | None = None) -> None:
        self.path = path
        self.text = text
        self.lines = lines
        self.on_command = on_command
        self.vars: dict[str, _Var] = {k: _Var(v, True) for k, v in (env or {}).items()}
        self.workdir: str | None = workdir  # None: unknown (the caller's folder)
        self.funcs: dict[str, FuncDef] = {}
        self.calls: list[str] = []
        self.positional: list[ShellValue] | None = None  # None: the script's own (unknown)
        self.tainted: str | None = None  # "after `source x` at line N"
        self.loops: list[tuple[str, str]] = []
        self.sweep: int | None = None
        self.sweep_count = 0
        self.commands = 0
        self.array_items = 0  # array items expanded in the whole file (MAX_ARRAY_EXPANSION)
        self.stopped = False
        self.problems = problems if problems is not None else []
        self._noted: set[str] = set()

    # --- limits -----------------------------------------------------------------------------
    def note(self, message: str, offset: int, code: str = LIMIT_CODE) -> None:
        if message not in self._noted:
            self._noted.add(message)
            self.problems.append((message, offset, code))

    # --- walking ------------------------------------------------------------------------------
    def run(self, nodes: list) -> None:
        for node in nodes:
            if self.stopped:
                return
            self.visit(node)

    def visit(self, node) -> None:
        if isinstance(node, Simple):
            self.simple(node)
        elif isinstance(node, ArrayAssign):
            items: list[ShellValue] = []
            for tok in node.items:
                items.extend(self.expand(tok))
                if len(items) > MAX_FIELDS:  # doubling an array per line: bounded, unknown
                    note = f"an array of more than {MAX_FIELDS} items"
                    self.assign(node.name, ShellValue(None, "unknown", tok.text,
                                                      self.lines.line(tok.start), note),
                                node.start)
                    return
            self.assign(node.name, tuple(items), node.start)
        elif isinstance(node, For):
            self.for_loop(node)
        elif isinstance(node, Branches):
            self.branches(node)
        elif isinstance(node, Group):
            if node.subshell:
                saved = self._snapshot()
                self.run(node.body)
                self._restore(saved)
            else:
                self.run(node.body)
        elif isinstance(node, FuncDef):
            self.funcs[node.name] = node

    # variables are never changed in place (an assignment stores a new _Var), so a snapshot is
    # a shallow copy and the names an arm changed are those whose _Var is not the one before
    def _snapshot(self):
        return (dict(self.vars), self.workdir, self.tainted)

    def _restore(self, saved) -> None:
        self.vars, self.workdir, self.tainted = dict(saved[0]), saved[1], saved[2]

    def branches(self, node: Branches) -> None:
        self.run(node.conditions)
        before = self._snapshot()
        outcomes = []
        for arm in node.arms:
            self._restore(before)
            self.run(arm)
            outcomes.append(self._snapshot())
        if not node.complete:
            outcomes.append(before)
        self._restore(before)
        names = set()
        for vars_, _, _ in outcomes:
            names.update(k for k, v in vars_.items() if before[0].get(k) is not v)
            names.update(k for k in before[0] if k not in vars_)
        for name in names:
            values = [o[0].get(name) for o in outcomes]
            first = values[0]
            same = all(v is not None and first is not None and _same(v.value, first.value)
                       for v in values)
            exported = any(v is not None and v.exported for v in values)
            if same:
                self.vars[name] = _Var(first.value, exported)
            elif any(v is not None for v in values):
                line = self.lines.line(node.start)
                self.vars[name] = _Var(ShellValue(None, "unknown", note=(
                    f"${name} is assigned in only some branches of the construct at line "
                    f"{line}")), exported)
        workdirs = {o[1] for o in outcomes}
        self.workdir = workdirs.pop() if len(workdirs) == 1 else None
        taints = [o[2] for o in outcomes if o[2]]
        self.tainted = taints[0] if taints else self.tainted

    def for_loop(self, node: For) -> None:
        if node.c_style or node.items is None:
            # values not literal: the body once, with the loop variable unknown
            if node.var:
                self.assign(node.var, ShellValue(None, "unknown", note=(
                    f"the loop variable of line {self.lines.line(node.start)}")), node.start)
            self.branches(Branches([], [node.body], False, node.start))
            return
        values: list[ShellValue] = []
        for tok in node.items:
            values.extend(self.expand(tok))
            if len(values) > MAX_LOOP_VALUES:
                break
        if any(not v.known for v in values):
            self.assign(node.var, ShellValue(None, "unknown", note=(
                f"the loop over values not known at line {self.lines.line(node.start)}")),
                node.start)
            self.branches(Branches([], [node.body], False, node.start))
            return
        if len(values) > MAX_LOOP_VALUES:
            self.note(f"a for loop over more than {MAX_LOOP_VALUES} values: only the first "
                      f"{MAX_LOOP_VALUES} are followed", node.start)
            values = values[:MAX_LOOP_VALUES]
        outer_sweep = self.sweep
        for value in values:
            if self.stopped:
                return
            if self.sweep_count >= MAX_SWEEP:
                self.note(f"nested for loops over more than {MAX_SWEEP} iterations: only the "
                          f"first {MAX_SWEEP} are followed", node.start)
                break
            self.assign(node.var, ShellValue(value.text, "variable", raw=value.raw,
                                             line=value.line, note=f"loop variable ${node.var}",
                                             assigned_line=self.lines.line(node.start)),
                        node.start)
            self.loops.append((node.var, value.text or ""))
            has_inner = any(isinstance(n, For) for n in node.body)
            if not has_inner:
                self.sweep = self.sweep_count
                self.sweep_count += 1
            self.run(node.body)
            self.loops.pop()
        self.sweep = outer_sweep

    def assign(self, name: str, value, offset: int, exported: bool | None = None) -> None:
        old = self.vars.get(name)
        keep = old.exported if old is not None else False
        line = self.lines.line(offset)
        if isinstance(value, ShellValue):
            origin = "unknown" if not value.known else \
                ("default" if value.origin == "default" else "variable")
            value = ShellValue(value.text, origin, value.raw, value.line, value.note, line)
        self.vars[name] = _Var(value, keep if exported is None else exported or keep)

    # --- simple commands ----------------------------------------------------------------------
    def simple(self, node: Simple) -> None:
        self.commands += 1
        if self.commands > MAX_COMMANDS:
            self.note(f"more than {MAX_COMMANDS} shell commands: the rest is not read",
                      node.start)
            self.stopped = True
            return
        words = node.words
        prefixes: list[tuple[str, ShellValue]] = []
        k = 0
        while k < len(words) and ASSIGN.match(words[k].text):
            name, value = self._assignment(words[k])
            prefixes.append((name, value))
            k += 1
        if k == len(words):
            for (name, value), tok in zip(prefixes, words):
                self.assign(name, value, tok.start)
            return
        fields: list[ShellValue] = []
        for tok in words[k:]:
            fields.extend(self.expand(tok))  # bounded: tokens, and array items expanded
        if not fields:
            return
        head = fields[0].text
        line, column = self.lines.line(words[k].start), self.lines.column(words[k].start)
        if head in ("export", "declare", "typeset", "local", "readonly"):
            self._declare(head, words[k + 1:])
            return
        if head == "unset":
            for f in fields[1:]:
                if f.text and not f.text.startswith("-"):
                    self.vars.pop(f.text, None)
            return
        if head in ("cd", "pushd"):
            self._cd(fields[1:])
            return
        if head == "popd":
            self.workdir = None
            return
        if head in ("source", ".") and len(fields) > 1:
            if not (fields[1].text and _HARMLESS_SOURCE.search(fields[1].text)):
                self._taint(f"`{head} {fields[1].raw}` at line {line}")
            return
        if head == "eval":
            raw = " ".join(t.text for t in words[k + 1:])
            if not _HARMLESS_EVAL.match(raw):
                self._taint(f"`eval` at line {line}")
            return
        if head == ":":
            return
        if head in self.funcs:
            self._call(head, fields[1:], node.start)
            return
        exported = [(n, v.value) for n, v in self.vars.items()
                    if v.exported and isinstance(v.value, ShellValue)]
        command = Command(fields, prefixes, exported, line, column, self.workdir, self.sweep,
                          tuple(self.loops), self.calls[-1] if self.calls else None)
        if not self.on_command(command):
            self.stopped = True

    def _assignment(self, tok: Tok) -> tuple[str, ShellValue]:
        m = ASSIGN.match(tok.text)
        name = m.group(1)
        rest = tok.text[m.end():]
        if m.group(2) or "+=" in tok.text[:m.end()]:
            return name, ShellValue(None, "unknown", raw=tok.text, line=self.lines.line(tok.start),
                                    note=f"${name} is appended to or indexed")
        values = self._expand_text(rest, tok.start + m.end(), split=False)
        value = values[0] if values else ShellValue("", "literal", raw=rest,
                                                    line=self.lines.line(tok.start))
        return name, value

    def _declare(self, head: str, words: list[Tok]) -> None:
        export = head == "export"
        for tok in words:
            if tok.text.startswith("-"):
                export = export or "x" in tok.text
                continue
            if ASSIGN.match(tok.text):
                name, value = self._assignment(tok)
                self.assign(name, value, tok.start, exported=export)
            elif NAME.match(tok.text):
                old = self.vars.get(tok.text)
                if old is not None:
                    self.vars[tok.text] = _Var(old.value, old.exported or export)
                elif export:
                    self.vars[tok.text] = _Var(self._unset(tok.text), True)

    def _cd(self, args: list[ShellValue]) -> None:
        args = [a for a in args if a.text not in ("--", "-P", "-L")]
        if not args:
            self.workdir = None  # $HOME
            return
        target = args[0]
        if target.known and os.path.isabs(target.text):
            self.workdir = os.path.normpath(target.text)
            return
        if not target.known or self.workdir is None or target.text == "-":
            self.workdir = None
            return
        self.workdir = os.path.normpath(os.path.join(self.workdir, target.text))

    def _taint(self, what: str) -> None:
        self.tainted = what
        for name, var in list(self.vars.items()):
            self.vars[name] = _Var(ShellValue(None, "unknown", note=f"${name} may be changed by {what}"),
                                   var.exported)

    def _call(self, name: str, args: list[ShellValue], offset: int) -> None:
        if name in self.calls or len(self.calls) >= MAX_CALL_DEPTH:
            self.note(f"calls of shell functions nested deeper than {MAX_CALL_DEPTH} (or "
                      f"recursive) are not followed", offset)
            return
        saved = self.positional
        self.positional = args
        self.calls.append(name)
        self.run(self.funcs[name].body)
        self.calls.pop()
        self.positional = saved

    # --- expansion ----------------------------------------------------------------------------
    def expand(self, tok: Tok) -> list[ShellValue]:
        return self._expand_text(tok.text, tok.start, split=True)

    def _unset(self, name: str) -> ShellValue:
        if self.tainted:
            return ShellValue(None, "unknown", note=f"${name} may be set by {self.tainted}")
        return ShellValue(None, "unknown", note=f"${name} is not assigned in the file (it comes "
                                                f"from the environment)")

    def _lookup(self, name: str) -> ShellValue | tuple[ShellValue, ...] | None:
        """The variable's value; ``None`` when it is not set in the file (its value then is
        the environment's)."""
        if name.isdigit():
            if name == "0":
                return ShellValue(self.path, "literal")
            if self.positional is None:
                return None
            index = int(name) - 1
            return self.positional[index] if index < len(self.positional) else \
                ShellValue("", "literal")
        if name in ("@", "*"):
            return tuple(self.positional) if self.positional is not None else None
        if name == "#" and self.positional is not None:
            return ShellValue(str(len(self.positional)), "literal")
        if name == "BASH_SOURCE":
            return ShellValue(self.path, "literal")
        var = self.vars.get(name)
        return None if var is None else var.value

    def _expand_text(self, raw: str, offset: int, split: bool) -> list[ShellValue]:
        """The fields of one word (field splitting of unquoted expansions when ``split``)."""
        line = self.lines.line(offset)
        column = self.lines.column(offset) if getattr(self.lines, "exact_columns", False) else 0
        fields: list[list] = []  # each: [parts (str or _Unknown), quoted-or-nonempty flag]
        current: list = [[], False]
        origin = ["literal"]
        assigned: list[int | None] = [None]
        count_vars = [0]

        def add(piece: str | _Unknown, quoted: bool, splittable: bool) -> None:
            nonlocal current
            if isinstance(piece, _Unknown):
                current[0].append(piece)
                current[1] = True
                return
            if not splittable:
                current[0].append(piece)
                current[1] = current[1] or quoted or bool(piece)
                return
            pieces = re.split(r"[ \t\n]+", piece)
            for index, part in enumerate(pieces):
                if index > 0:
                    if current[1]:
                        fields.append(current)
                    current = [[], False]
                if part:
                    current[0].append(part)
                    current[1] = True

        def expand_value(value, quoted: bool) -> None:
            nonlocal current
            count_vars[0] += 1
            if isinstance(value, tuple):  # an array: one field per element
                self.array_items += len(value)
                if self.array_items > MAX_ARRAY_EXPANSION:  # 3,000 words of a 4,000-item array
                    raise _Unknown(f"more than {MAX_ARRAY_EXPANSION} array items expanded in "
                                   f"the file")
                for index, item in enumerate(value):
                    if index > 0 and (quoted or not split):
                        fields.append(current)
                        current = [[], False]
                    if item.known:
                        add(item.text, quoted, split and not quoted)
                    else:
                        add(_Unknown(item.note), quoted, False)
                if origin[0] == "literal":
                    origin[0] = "variable"
                return
            if value.known:
                add(value.text, quoted, split and not quoted)
                if value.origin == "default":
                    origin[0] = "default"
                elif origin[0] == "literal":
                    origin[0] = "variable"
                assigned[0] = value.assigned_line
            else:
                add(_Unknown(value.note or "unknown"), quoted, False)

        try:
            self._walk(raw, add, expand_value, 0)
        except _Unknown as exc:  # the whole word is beyond the reader
            return [ShellValue(None, "unknown", raw=raw, line=line, column=column, note=exc.note)]
        if current[1]:
            fields.append(current)
        out: list[ShellValue] = []
        for parts, _ in fields:
            unknown = next((p for p in parts if isinstance(p, _Unknown)), None)
            if unknown is not None:
                out.append(ShellValue(None, "unknown", raw=raw, line=line, column=column, note=unknown.note))
                continue
            text = "".join(parts)
            if len(text) > MAX_WORD_CHARS:
                out.append(ShellValue(None, "unknown", raw=raw, line=line, column=column,
                                      note=f"longer than {MAX_WORD_CHARS} characters"))
                continue
            out.append(ShellValue(text, origin[0], raw=raw, line=line, column=column,
                                  assigned_line=assigned[0] if count_vars[0] == 1 else None))
        return out

    def _walk(self, raw: str, add, expand_value, depth: int) -> None:
        """Calls ``add``/``expand_value`` for the parts of ``raw`` (quotes removed)."""
        if depth > MAX_EXPANSION_DEPTH:
            raise _Unknown(f"defaults nested deeper than {MAX_EXPANSION_DEPTH} levels")
        i, n = 0, len(raw)
        quoted = False
        buffer: list[str] = []
        total = [0]

        def flush() -> None:
            if buffer:
                text = "".join(buffer)
                total[0] += len(text)
                if total[0] > MAX_WORD_CHARS:
                    raise _Unknown(f"longer than {MAX_WORD_CHARS} characters")
                add(text, quoted, False)
                buffer.clear()

        while i < n:
            c = raw[i]
            if c == "\\":
                nxt = raw[i + 1] if i + 1 < n else ""
                if nxt == "\n":
                    i += 2
                    continue
                if quoted and nxt not in '"\\$`':
                    buffer.append(c)
                    i += 1
                    continue
                buffer.append(nxt)
                i += 2
                continue
            if c == "'" and not quoted:
                end = raw.index("'", i + 1)
                buffer.append(raw[i + 1:end])
                flush_quoted = "".join(buffer)
                buffer.clear()
                add(flush_quoted, True, False)
                i = end + 1
                continue
            if c == "$" and raw.startswith("$'", i) and not quoted:
                end = i + 2
                while end < n and raw[end] != "'":
                    end += 2 if raw[end] == "\\" else 1
                body = raw[i + 2:end]
                body = body.replace("\\t", "\t").replace("\\n", "\n").replace("\\'", "'") \
                    .replace("\\\\", "\\")
                flush()
                add(body, True, False)
                i = end + 1
                continue
            if c == '"':
                flush()
                if quoted:
                    add("", True, False)  # "" keeps an empty field
                quoted = not quoted
                i += 1
                continue
            if c == "`":
                flush()
                add(_Unknown("command substitution (`...`) is not run"), quoted, False)
                i = raw.index("`", i + 1) + 1 if "`" in raw[i + 1:] else n
                continue
            if c == "$" and i + 1 < n:
                flush()
                i = self._dollar(raw, i, quoted, add, expand_value, depth)
                continue
            if c == "~" and i == 0 and not quoted:
                flush()
                add(_Unknown("~ (the home folder) is not known"), quoted, False)
                i += 1
                continue
            buffer.append(c)
            i += 1
        flush()

    def _dollar(self, raw: str, i: int, quoted: bool, add, expand_value, depth: int) -> int:
        n = len(raw)
        if raw.startswith("$((", i):
            end = self._matching(raw, i + 1)
            add(_Unknown("arithmetic $((...)) is not evaluated"), quoted, False)
            return end
        if raw.startswith("$(", i):
            end = self._matching(raw, i + 1)
            inner = raw[i + 2:end - 1]
            if _SCRIPT_DIR.match(inner) or _REALPATH_SCRIPT.match(inner):
                folder = os.path.dirname(os.path.abspath(self.path))
                if _REALPATH_SCRIPT.match(inner):
                    folder = os.path.abspath(self.path)
                expand_value(ShellValue(folder, "literal"), True)
            else:
                add(_Unknown(f"command substitution $({inner[:40]}) is not run"), quoted, False)
            return end
        if raw.startswith("${", i):
            end = self._matching(raw, i + 1, "{", "}")
            self._braced(raw[i + 2:end - 1], quoted, add, expand_value, depth)
            return end
        m = _PARAM.match(raw, i + 1)
        if m is None:
            add("$", quoted, False)
            return i + 1
        name = m.group(1)
        if name[0].isdigit():
            name = name[0]  # $10 is ${1}0
        value = self._lookup(name)
        if value is None:
            value = self._unset(name) if not name.isdigit() and name not in "@*#" else \
                ShellValue(None, "unknown", note=f"${name} (an argument given to the script)")
        elif isinstance(value, ShellValue) and value.known and name != "0" and \
                value.origin == "literal":
            value = ShellValue(value.text, "variable", assigned_line=value.assigned_line)
        expand_value(value, quoted)
        return i + 1 + len(name)

    @staticmethod
    def _matching(raw: str, i: int, opener: str = "(", closer: str = ")") -> int:
        """The end (exclusive) of the bracketed part opening at ``raw[i]``."""
        depth = 0
        j = i
        quote = None
        while j < len(raw):
            c = raw[j]
            if quote:
                if c == "\\" and quote == '"':
                    j += 2
                    continue
                if c == quote:
                    quote = None
            elif c == "\\":
                j += 2
                continue
            elif c in "'\"" and opener == "(":
                quote = c
            elif c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise _Unknown("an unterminated expansion")

    def _braced(self, body: str, quoted: bool, add, expand_value, depth: int) -> None:
        m = re.match(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?])(\[(@|\*|0)\])?", body)
        if m is None:
            add(_Unknown(f"${{{body[:40]}}} is not followed"), quoted, False)
            return
        length, name, index = m.group(1), m.group(2), m.group(4)
        rest = body[m.end():]
        value = self._lookup(name)
        if name == "BASH_SOURCE":
            value = ShellValue(self.path, "literal")
        elif index is not None and isinstance(value, tuple):
            value = (value if index in "@*" else (value[0] if value else ShellValue("", "literal")))
        elif index is not None and isinstance(value, ShellValue) and index == "0":
            pass
        elif index is not None:
            value = None if value is None else ShellValue(None, "unknown",
                                                          note=f"${{{name}[{index}]}}")
        if length:
            add(_Unknown(f"${{#{name}}} is not evaluated"), quoted, False)
            return
        if not rest:
            if value is None:
                value = self._unset(name) if not name.isdigit() else ShellValue(
                    None, "unknown", note=f"${name} (an argument given to the script)")
            elif isinstance(value, ShellValue) and value.known and value.origin == "literal" \
                    and name not in ("0", "BASH_SOURCE"):
                value = ShellValue(value.text, "variable", assigned_line=value.assigned_line)
            expand_value(value, quoted)
            return
        op = re.match(r":?[-=+?]", rest)
        if op is None:
            add(_Unknown(f"${{{body[:40]}}} (an operation on ${name}) is not evaluated"),
                quoted, False)
            return
        word = rest[op.end():]
        colon = op.group(0).startswith(":")
        kind = op.group(0)[-1]
        if isinstance(value, tuple):
            value = ShellValue(" ".join(v.text or "" for v in value), "variable") \
                if all(v.known for v in value) else ShellValue(None, "unknown", note="an array")
        if value is not None and not value.known:
            add(_Unknown(value.note), quoted, False)
            return
        is_set = value is not None and (not colon or bool(value.text))
        if self.tainted and value is None:
            add(_Unknown(f"${name} may be set by {self.tainted}"), quoted, False)
            return
        if kind in "-=?":
            if is_set:
                expand_value(value, quoted)
                return
            if kind == "?":
                add(_Unknown(f"${name} is required from the environment"), quoted, False)
                return
            default = self._default(word, depth, name)
            if kind == "=" and not name.isdigit():
                self.vars[name] = _Var(default, False)
            expand_value(default, quoted)
            return
        # ${VAR:+word}
        if value is None:
            add(_Unknown(f"${{{name}:+...}} depends on whether ${name} is set"), quoted, False)
        elif is_set:
            expand_value(self._default(word, depth, name), quoted)

    def _default(self, word: str, depth: int, name: str) -> ShellValue:
        parts: list[str] = []
        unknown: list[str] = []

        def add(piece, quoted, splittable) -> None:
            if isinstance(piece, _Unknown):
                unknown.append(piece.note)
            else:
                parts.append(piece)

        def expand_value(value, quoted) -> None:
            if isinstance(value, tuple) or not value.known:
                unknown.append(getattr(value, "note", "an array"))
            else:
                parts.append(value.text)

        self._walk(word, add, expand_value, depth + 1)
        if unknown:
            return ShellValue(None, "unknown", note=unknown[0])
        who = "the caller" if name.isdigit() else "the environment"
        return ShellValue("".join(parts), "default",
                          note=f"the default of ${name}, unless {who} sets it")


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(_same(x, y) for x, y in zip(a, b))
    return a.known and b.known and a.text == b.text
