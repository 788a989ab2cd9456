"""Applying fixes (issue 17): :class:`lintlora.findings.EditOp` s resolved against a file's text
into :class:`lintlora.findings.TextEdit` s, and the edits applied without overlap, keeping the
author's formatting, encoding, BOM and newline style.

Interface (the engine layer calls it; reporters read the resolved edits):

- ``resolve(fix, text, kind) -> tuple[TextEdit, ...]``: every op of ``fix`` placed in
  ``text`` (the decoded text of the file the ops' spans name; ``kind`` one of ``python``,
  ``notebook``, ``yaml``, ``json``, ``shell``). Raises :class:`FixError` when an op cannot be
  placed (the fix is then not offered);
- ``apply_edits(text, edits) -> str``: the edits applied (raises :class:`FixError` on
  overlapping edits or a position outside the text);
- ``plan(fixes, read) -> FixPlan``: several fixes (of one or more files) composed in one pass:
  each resolved, accepted when its edits overlap none accepted before (else skipped, "not
  applied: overlaps"), the new text of each file computed; a notebook's fixes compose inside
  the cell's source.

Positions: 1-based lines and columns counted in characters of the decoded text, end exclusive
(the :class:`~lintlora.training_setup.Span` convention). In a notebook an op's span carries
``cell`` (1-based among code cells) and a line within the cell; the resolved edits are against
the ``.ipynb`` JSON text and change only the strings of that cell's ``"source"``, every other
byte kept (unchanged source lines keep their JSON string as written).

How each kind is placed (``EditOp``'s docstring has their meaning):

- Python (LibCST, positions from the metadata wrapper): ``replace`` replaces the span;
  ``set_keyword``/``remove_keyword``/``rename_keyword`` work on the innermost call whose range
  holds the span's start; a keyword added to a call laid out one argument per line is a new
  line at the last argument's indentation with a trailing comma when the last argument has one
  (else one is added after it, before any comment), inline calls get ``, kw=value``;
  ``insert_after``/``delete_statement`` work on the innermost statement holding the span's
  start (a block left empty gets ``pass``).
- YAML/JSON (``yaml_set``, also ``replace``): span-exact text edits from PyYAML's node marks:
  a scalar replaced in place (a quoted scalar stays quoted in its quote style when the new
  value is a string), a missing key added after its mapping's last entry at the mapping's
  indentation (JSON: ``, "key": value`` in the object's own layout).
- Shell (``launch_set``, also ``replace``): the option's value word replaced (``--opt v`` or
  ``--opt=v``), a bare flag given the value, or `` --opt value`` appended to the command's
  last line before a trailing comment.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from lintlora.findings import EditOp, Fix, TextEdit

__all__ = ["FixError", "KINDS", "resolve", "apply_edits", "plan", "FixPlan", "FixOutcome",
           "edits_overlap", "newline_of"]

KINDS = ("replace", "set_keyword", "remove_keyword", "rename_keyword", "insert_after",
         "delete_statement", "yaml_set", "launch_set")
"""Every :class:`~lintlora.findings.EditOp` kind this module places."""


class FixError(ValueError):
    """A fix that cannot be applied as stated (an op whose span no longer matches the text,
    overlapping edits): the fix is skipped and said so, never half applied."""


# ---- positions --------------------------------------------------------------------------------

class _Lines:
    """Offsets of line starts in a text: (line, column) <-> offset, 1-based, in characters."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(self, line: int, column: int) -> int:
        if not 1 <= line <= len(self.starts):
            raise FixError(f"line {line} is outside the file ({len(self.starts)} lines)")
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        offset = start + column - 1
        if column < 1 or offset > end:
            raise FixError(f"column {column} is outside line {line}")
        return offset

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1

    def line_text(self, line: int) -> str:
        """Line ``line`` without its line break."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def line_end(self, line: int) -> int:
        """Offset just past line ``line``'s break (the text's end for the last line)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    @property
    def count(self) -> int:
        return len(self.starts)


def newline_of(text: str) -> str:
    """The text's newline style: its first line break (``\\r\\n``, ``\\r``), else ``\\n``."""
    m = re.search(r"\r\n|\r|\n", text)
    return m.group(0) if m else "\n"


def _edit(path: str, lines: _Lines, start: int, end: int, new_text: str) -> TextEdit:
    line, column = lines.position(start)
    end_line, end_column = lines.position(end)
    return TextEdit(path, line, column, end_line, end_column, new_text)


def _offsets(edit: TextEdit, lines: _Lines) -> tuple[int, int]:
    start = lines.offset(edit.line, edit.column)
    end = lines.offset(edit.end_line, edit.end_column)
    if end < start:
        raise FixError("an edit ends before it starts")
    return start, end


def edits_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two offset ranges conflict: they share a character, or one inserts strictly
    inside the other. Insertions at one point do not conflict: they are applied in the order
    given (a fix accepted earlier first)."""
    (s1, e1), (s2, e2) = a, b
    if s1 == e1 and s2 == e2:
        return False
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with ``edits`` applied (their order does not matter).

    Raises:
        FixError: two edits overlap, or an edit lies outside the text.
    """
    lines = _Lines(text)
    ranges = sorted(((*_offsets(e, lines), i, e) for i, e in enumerate(edits)),
                    key=lambda r: (r[0], r[1], r[2]))
    for (s1, e1, _, _), (s2, e2, _, _) in zip(ranges, ranges[1:]):
        if edits_overlap((s1, e1), (s2, e2)):
            raise FixError("overlapping edits")
    out = []
    at = 0
    for start, end, _, edit in ranges:
        out.append(text[at:start])
        out.append(edit.new_text)
        at = end
    out.append(text[at:])
    return "".join(out)


# ---- resolving --------------------------------------------------------------------------------

def resolve(fix: Fix, text: str, kind: str) -> tuple[TextEdit, ...]:
    """The text edits that carry out every op of ``fix`` in ``text``.

    Args:
        fix: the fix; every op's span must name the same file (that of ``text``).
        text: the file's decoded text (a notebook's JSON text for ``notebook``).
        kind: ``python``, ``notebook``, ``yaml``, ``json`` or ``shell``.

    Raises:
        FixError: an op of an unknown kind, of a kind the file's kind cannot take, whose span
            does not match the text (the file changed, a value lintlora could not place), or
            ops whose edits overlap.
    """
    if not fix.ops:
        raise FixError("a fix with no edits")
    paths = {op.span.path for op in fix.ops}
    if len(paths) != 1:
        raise FixError("a fix whose edits span several files: resolve each file's ops")
    if kind == "notebook":
        by_cell = _notebook_cell_edits(fix.ops, text)
        return _notebook_edits(text, by_cell, fix.ops[0].span.path)
    edits = _resolve_ops(fix.ops, text, kind)
    _check_disjoint(edits, text)
    return tuple(edits)


def _resolve_ops(ops: Sequence[EditOp], text: str, kind: str, path: str | None = None
                 ) -> list[TextEdit]:
    """The edits of several ops on one text. In Python the text is parsed once, and keywords
    that several ops add to one call are added together (one edit, in the ops' order)."""
    if kind != "python":
        return [e for op in ops for e in _resolve_op(op, text, kind, path)]
    if any(op.span.cell is not None for op in ops) and path is None:
        ops = _databricks_file_spans(ops, text)
    import libcst as cst

    tree: _PyTree | None = None
    edits: list[TextEdit] = []
    groups: dict[int, tuple[Any, list[tuple[str, str]]]] = {}
    for op in ops:
        where = path if path is not None else op.span.path
        if op.kind == "replace" or op.kind not in KINDS:
            edits.extend(_resolve_op(op, text, kind, where))
            continue
        if tree is None:
            tree = _PyTree(text)
        if op.kind == "set_keyword" and op.keyword:
            start, _end = _span_offsets(op.span, tree.lines)
            call = tree.innermost(start, (cst.Call,))
            if call is not None and not any(a.keyword is not None and a.keyword.value == op.keyword
                                            for a in call.args):
                pairs = groups.setdefault(id(call), (call, []))[1]
                if op.keyword not in [k for k, _v in pairs]:
                    pairs.append((op.keyword, op.text))
                continue
        edits.extend(_python_op(op, tree, where))
    for call, pairs in groups.values():
        edits.extend(_append_keywords(pairs, call, tree, path if path is not None else ops[0].span.path))
    return edits


def _check_disjoint(edits: Sequence[TextEdit], text: str) -> None:
    apply_edits(text, edits)  # raises FixError on overlap


def _databricks_file_spans(ops: Sequence[EditOp], text: str) -> list[EditOp]:
    """Ops on a Databricks notebook source (a ``.py`` file read by cell: spans carry ``cell``
    and a line within it) with their spans as file lines (the cells' lines are the file's)."""
    from lintlora.extract.databricks import databricks_cell_lines

    cells = databricks_cell_lines(text)
    out = []
    for op in ops:
        span = op.span
        if span.cell is None:
            out.append(op)
            continue
        lines = cells.get(span.cell)
        last = span.last_line
        if not lines or not 1 <= span.line <= len(lines) or not 1 <= last <= len(lines):
            raise FixError(f"no line {span.line} in cell {span.cell}")
        out.append(dataclasses.replace(op, span=dataclasses.replace(
            span, line=lines[span.line - 1],
            end_line=None if span.end_line is None else lines[last - 1], cell=None)))
    return out


def _resolve_op(op: EditOp, text: str, kind: str, path: str | None = None) -> list[TextEdit]:
    path = path if path is not None else op.span.path
    if op.kind not in KINDS:
        raise FixError(f"unknown edit kind {op.kind!r}")
    if op.kind == "replace":
        lines = _Lines(text)
        start, end = _span_offsets(op.span, lines)
        return [_edit(path, lines, start, end, op.text)]
    if kind == "python":
        return _python_op(op, _PyTree(text), path)
    if op.kind == "launch_set" and kind in ("shell", "yaml"):
        # a launch line: a shell script, a Makefile recipe, a workflow's `run:` step
        return _launch_set(op, text, path)
    if kind in ("yaml", "json"):
        if op.kind != "yaml_set":
            raise FixError(f"a {op.kind} edit in a {kind} file")
        return _yaml_set(op, text, kind, path)
    if kind == "shell":
        if op.kind != "launch_set":
            raise FixError(f"a {op.kind} edit in a shell file")
        return _launch_set(op, text, path)
    raise FixError(f"a {op.kind} edit in a file of kind {kind!r}")


def _span_offsets(span: Any, lines: _Lines) -> tuple[int, int]:
    start = lines.offset(span.line, span.column)
    end_line = span.end_line if span.end_line is not None else span.line
    end_column = span.end_column if span.end_column is not None else span.column
    end = lines.offset(end_line, end_column)
    if end < start:
        raise FixError("a span that ends before it starts")
    return start, end


# ---- Python -----------------------------------------------------------------------------------

class _PyTree:
    """A module parsed once with the positions and parents of its nodes."""

    def __init__(self, text: str) -> None:
        import libcst as cst
        from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

        try:
            module = cst.parse_module(text)
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            self.positions = wrapper.resolve(PositionProvider)
            self.parents = wrapper.resolve(ParentNodeProvider)
        except cst.ParserSyntaxError as exc:
            raise FixError(f"the file does not parse: {exc.message}") from None
        except (RecursionError, MemoryError, KeyError):
            # code nested too deeply for LibCST's metadata (it raises KeyError while unwinding
            # a RecursionError): the extractor refuses such files too (extract/pysyntax.py)
            raise FixError("the file is nested too deeply to edit") from None
        self.module = module
        self.lines = _Lines(text)
        self.text = text

    def range(self, node: Any) -> tuple[int, int]:
        """Start and end offsets of a node (its syntactic range)."""
        pos = self.positions[node]
        return (self.lines.offset(pos.start.line, pos.start.column + 1),
                self.lines.offset(pos.end.line, pos.end.column + 1))

    def innermost(self, offset: int, types: tuple) -> Any:
        """The smallest node of ``types`` whose range holds ``offset``."""
        best = None
        best_size = None
        for node in self.positions:
            if not isinstance(node, types):
                continue
            start, end = self.range(node)
            if start <= offset < end or (start == offset == end):
                size = end - start
                if best is None or size < best_size:
                    best, best_size = node, size
        return best


def _python_op(op: EditOp, tree: "_PyTree", path: str) -> list[TextEdit]:
    import libcst as cst

    lines = tree.lines
    start, _end = _span_offsets(op.span, lines)
    if op.kind in ("set_keyword", "remove_keyword", "rename_keyword"):
        if not op.keyword:
            raise FixError(f"a {op.kind} edit without a keyword")
        call = tree.innermost(start, (cst.Call,))
        if call is None:
            raise FixError(f"no call at line {op.span.line}")
        return _keyword_op(op, call, tree, path)
    if op.kind == "insert_after":
        statement = tree.innermost(start, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        if statement is None:
            raise FixError(f"no statement at line {op.span.line}")
        return _insert_after(op, statement, tree, path)
    if op.kind == "delete_statement":
        small = tree.innermost(start, (cst.BaseSmallStatement,))
        if small is None:
            raise FixError(f"no statement at line {op.span.line}")
        return _delete_statement(small, tree, path)
    raise FixError(f"a {op.kind} edit in a Python file")


def _keyword_op(op: EditOp, call: Any, tree: _PyTree, path: str) -> list[TextEdit]:
    import libcst as cst

    lines = tree.lines
    text = tree.text
    args = list(call.args)
    index = next((i for i, a in enumerate(args)
                  if a.keyword is not None and a.keyword.value == op.keyword), None)
    if op.kind == "rename_keyword":
        if index is None:
            raise FixError(f"the call has no keyword {op.keyword}")
        if not op.text.isidentifier():
            raise FixError(f"not a keyword name: {op.text!r}")
        if any(a.keyword is not None and a.keyword.value == op.text for a in args):
            raise FixError(f"the call has keyword {op.text} already")
        s, e = tree.range(args[index].keyword)
        return [_edit(path, lines, s, e, op.text)]
    if op.kind == "set_keyword":
        if index is not None:
            s, e = tree.range(args[index].value)
            if text[s:e] == op.text:
                return []  # already so
            return [_edit(path, lines, s, e, op.text)]
        return _append_keywords([(op.keyword, op.text)], call, tree, path)
    # remove_keyword
    if index is None:
        return []  # nothing to remove: already fixed
    arg = args[index]
    s, e = tree.range(arg)
    comma = arg.comma if isinstance(arg.comma, cst.Comma) else None
    comma_end = tree.range(comma)[1] if comma is not None else e
    line_start = lines.starts[lines.position(s)[0] - 1]
    end_line = lines.position(comma_end)[0]
    after = text[comma_end:lines.line_end(end_line)]
    call_start, call_end = tree.range(call)
    own_line = (not text[line_start:s].strip() and (not after.strip() or after.strip().startswith("#"))
                and lines.position(call_start)[0] < lines.position(s)[0]
                and lines.position(call_end)[0] > end_line)
    if own_line:
        return [_edit(path, lines, line_start, lines.line_end(end_line), "")]
    if index + 1 < len(args):  # inline, not last: the argument, its comma and the space after
        next_start = tree.range(args[index + 1])[0]
        if lines.position(next_start)[0] != lines.position(comma_end)[0]:
            # the next argument is on a later line: this one ends its line, so the space
            # before it goes too (no trailing space is left)
            if index > 0 and isinstance(args[index - 1].comma, cst.Comma):
                prev_comma_end = tree.range(args[index - 1].comma)[1]
                if lines.position(prev_comma_end)[0] == lines.position(s)[0]:
                    return [_edit(path, lines, prev_comma_end, comma_end, "")]
            next_start = comma_end
        return [_edit(path, lines, s, next_start, "")]
    if index > 0:  # inline, last: from the previous argument's end (its comma goes)
        prev = args[index - 1]
        prev_end = tree.range(prev)[1]
        if comma is not None and isinstance(prev.comma, cst.Comma):
            # a trailing comma stays: `f(a, b,)` -> `f(a,)`
            return [_edit(path, lines, tree.range(prev.comma)[1], comma_end, "")]
        return [_edit(path, lines, prev_end, e, "")]
    return [_edit(path, lines, s, comma_end, "")]  # the only argument


def _append_keywords(pairs: list[tuple[str, str]], call: Any, tree: _PyTree, path: str
                     ) -> list[TextEdit]:
    """Keywords ``pairs`` (name, value source) added after the call's last argument, in the
    call's own layout (module docstring)."""
    import libcst as cst

    for keyword, _value in pairs:
        if not keyword.isidentifier():
            raise FixError(f"not a keyword name: {keyword!r}")
    args = list(call.args)
    lines = tree.lines
    text = tree.text
    items = [f"{k}={v}" for k, v in pairs]
    new = ", ".join(items)
    call_start, call_end = tree.range(call)
    if text[call_end - 1:call_end] != ")":
        raise FixError("a call whose closing parenthesis cannot be found")
    if not args:
        inside = text[tree.range(call.func)[1]:call_end]
        open_at = tree.range(call.func)[1] + inside.index("(") + 1
        between = text[open_at:call_end - 1]
        if "\n" in between or "\r" in between:
            # `f(\n)`: one argument on its own line, at the closing line's indentation + 4
            close_line = lines.position(call_end - 1)[0]
            indent = re.match(r"[ \t]*", lines.line_text(close_line)).group(0)
            nl = newline_of(text)
            line_start = lines.starts[close_line - 1]
            body = "".join(f"{indent}    {item},{nl}" for item in items)
            return [_edit(path, lines, line_start, line_start, body)]
        return [_edit(path, lines, open_at, call_end - 1, new)]
    last = args[-1]
    if len(args) == 1 and isinstance(last.value, cst.GeneratorExp) and not last.value.lpar:
        raise FixError("a call whose only argument is a generator without parentheses")
    s, e = tree.range(last)
    comma = last.comma if isinstance(last.comma, cst.Comma) else None
    comma_end = tree.range(comma)[1] if comma is not None else e
    last_line = lines.position(s)[0]
    end_line = lines.position(comma_end)[0]
    close_line = lines.position(call_end - 1)[0]
    line_start = lines.starts[last_line - 1]
    one_per_line = (not text[line_start:s].strip() and close_line > end_line
                    and lines.position(call_start)[0] < last_line)
    if one_per_line:
        indent = text[line_start:s]
        nl = newline_of(text)
        insert_at = lines.line_end(end_line)
        edits = []
        if comma is None:
            edits.append(_edit(path, lines, e, e, ","))
        if insert_at == len(text) and not text.endswith(("\n", "\r")):  # pragma: no cover
            raise FixError("a call at the end of the file without a line break")
        trailing = "," if comma is not None else ""
        body = f",{nl}".join(f"{indent}{item}" for item in items)
        edits.append(_edit(path, lines, insert_at, insert_at, f"{body}{trailing}{nl}"))
        return edits
    aligned = (not text[line_start:s].strip() and close_line == end_line
               and lines.position(call_start)[0] < last_line and comma is None)
    if aligned:
        # continuation lines aligned under the first argument, the parenthesis closing the
        # last one: `F(a=1,\n  b=2)` -> `F(a=1,\n  b=2,\n  kw=v)`
        indent = text[line_start:s]
        nl = newline_of(text)
        return [_edit(path, lines, e, e, "".join(f",{nl}{indent}{item}" for item in items))]
    if comma is not None:
        # `f(a,)` -> `f(a, kw=v,)`; `f(a, )` -> `f(a, kw=v)`
        rest = text[comma_end:call_end - 1]
        if rest.strip():
            raise FixError("unexpected text before the closing parenthesis")
        return [_edit(path, lines, comma_end, comma_end, f" {new},")] if not rest \
            else [_edit(path, lines, comma_end, call_end - 1, f" {new}")]
    return [_edit(path, lines, e, e, f", {new}")]


def _statement_indent(tree: _PyTree, start: int) -> tuple[int, str]:
    lines = tree.lines
    line = lines.position(start)[0]
    line_start = lines.starts[line - 1]
    return line, tree.text[line_start:start]


def _insert_after(op: EditOp, statement: Any, tree: _PyTree, path: str) -> list[TextEdit]:
    lines = tree.lines
    text = tree.text
    start, end = tree.range(statement)
    _line, indent = _statement_indent(tree, start)
    if indent.strip():  # `if x: a = f()` or `a; b`: the statement does not begin its line
        indent = re.match(r"[ \t]*", indent).group(0)
    nl = newline_of(text)
    end_line = lines.position(end)[0]
    if lines.position(end)[1] == 1 and end_line > 1:  # a compound statement ends after its break
        end_line -= 1
    # a text of several lines (a guarded call) is indented as a block: its first line at the
    # statement's indentation, the others keeping their own indentation beyond it (four spaces
    # become a tab where the statement is indented with tabs: no TabError)
    body = op.text.split("\n")
    if "\t" in indent:
        body = [re.sub(r"^(    )+", lambda m: "\t" * (len(m.group(0)) // 4), b) for b in body]
    new_line = nl.join(f"{indent}{b}" for b in body)
    # already there (a second --fix): the next statement line is the text's first line
    following = end_line + 1
    while following <= lines.count and not lines.line_text(following).strip():
        following += 1
    if following <= lines.count and lines.line_text(following).strip() == body[0].strip():
        return []
    insert_at = lines.line_end(end_line)
    if insert_at == len(text) and not text[insert_at - 1:insert_at] in ("\n", "\r"):
        return [_edit(path, lines, insert_at, insert_at, f"{nl}{new_line}")]
    return [_edit(path, lines, insert_at, insert_at, f"{new_line}{nl}")]


def _delete_statement(small: Any, tree: _PyTree, path: str) -> list[TextEdit]:
    import libcst as cst

    lines = tree.lines
    parent = tree.parents.get(small)
    if not isinstance(parent, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        raise FixError("a statement that cannot be removed alone")
    body = list(parent.body)
    s, e = tree.range(small)
    if len(body) > 1:  # `a; b`: this statement and one semicolon go
        index = body.index(small)
        if index + 1 < len(body):
            return [_edit(path, lines, s, tree.range(body[index + 1])[0], "")]
        prev_end = tree.range(body[index - 1])[1]
        semi = small.semicolon if isinstance(small.semicolon, cst.Semicolon) else None
        return [_edit(path, lines, prev_end, tree.range(semi)[1] if semi else e, "")]
    if isinstance(parent, cst.SimpleStatementSuite):
        return [_edit(path, lines, s, e, "pass")]
    block = tree.parents.get(parent)
    if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
        return [_edit(path, lines, s, e, "pass")]
    ps, pe = tree.range(parent)
    first = lines.position(ps)[0]
    last = lines.position(pe)[0]
    return [_edit(path, lines, lines.starts[first - 1], lines.line_end(last), "")]


# ---- YAML and JSON ----------------------------------------------------------------------------

def _yaml_root(text: str) -> Any:
    import yaml

    try:
        return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise FixError(f"the file does not parse: {str(exc).splitlines()[0]}") from None


def _scalar_text(value: str, kind: str, old: Any = None) -> str:
    """The source of the new scalar: ``value`` as given, quoted in the old value's style (or
    JSON's) when it is a string that would otherwise not be one."""
    import yaml

    try:
        loaded = yaml.safe_load(value) if value.strip() else value
    except yaml.YAMLError:
        loaded = value
    quoted = value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1
    if kind == "json":
        if quoted and value[0] == '"':
            return value
        if isinstance(loaded, str) or quoted:
            return json.dumps(loaded if not quoted else value[1:-1], ensure_ascii=False)
        if isinstance(loaded, bool):
            return "true" if loaded else "false"
        if loaded is None:
            return "null"
        return value
    style = getattr(old, "style", None)
    before = getattr(old, "value", None)
    if isinstance(loaded, bool) and not style and isinstance(before, str) \
            and before.lower() in ("true", "false") and before != before.lower():
        # a boolean replaced keeps the file's spelling: torchtune's configs write `False`/`True`
        return value.upper() if before.isupper() else value.capitalize()
    if not quoted and style in ("'", '"') and isinstance(loaded, str):
        if style == '"':
            return json.dumps(value, ensure_ascii=False)
        return "'" + value.replace("'", "''") + "'"
    return value


def _yaml_set(op: EditOp, text: str, kind: str, path: str) -> list[TextEdit]:
    import yaml

    if not op.keyword:
        raise FixError("a yaml_set edit without a key path")
    keys = op.keyword.split(".")
    root = _yaml_root(text)
    if root is None:
        raise FixError("an empty document")
    lines = _Lines(text)
    node = root
    depth = 0
    while depth < len(keys):
        if not isinstance(node, yaml.MappingNode):
            raise FixError(f"{'.'.join(keys[:depth]) or 'the document'} is not a mapping")
        found = None
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == keys[depth]:
                found = (key_node, value_node)
        if found is None:
            break
        found_key, node = found
        depth += 1
    if depth == len(keys):
        if not isinstance(node, yaml.ScalarNode):
            raise FixError(f"{op.keyword} is not a scalar")
        new = _scalar_text(op.text, kind, node)
        start, end = node.start_mark.index, node.end_mark.index
        if text[start:end] == new:
            return []
        if start == end:  # `key:` with no value: the value goes after the colon
            colon = text.find(":", found_key.end_mark.index)
            if colon < 0:
                raise FixError(f"{op.keyword}: the key's colon cannot be found")
            start = end = colon + 1
            new = " " + new
        return [_edit(path, lines, start, end, new)]
    return _yaml_add(node, keys[depth:], op.text, text, kind, lines, path)


def _yaml_add(mapping: Any, keys: list[str], value: str, text: str, kind: str, lines: _Lines,
              path: str) -> list[TextEdit]:
    nl = newline_of(text)
    new_value = _scalar_text(value, kind)
    if mapping.flow_style or kind == "json":
        return _flow_add(mapping, keys, new_value, text, kind, lines, path)
    if not mapping.value:
        raise FixError("an empty block mapping")
    first_key = mapping.value[0][0]
    indent = " " * first_key.start_mark.column
    step = "  "
    last_value = mapping.value[-1][1]
    end = last_value.end_mark
    # the line to insert before: the one after the last entry's last line
    end_line = end.line + 1 if end.column > 0 else end.line  # 1-based line of the last entry
    if end_line < 1:
        end_line = 1
    if end_line > lines.count:
        end_line = lines.count
    insert_at = lines.line_end(end_line)
    body = []
    for i, key in enumerate(keys):
        prefix = indent + step * i
        body.append(f"{prefix}{_yaml_key(key)}:" + (f" {new_value}" if i == len(keys) - 1 else ""))
    block = nl.join(body)
    if insert_at == len(text) and not text.endswith(("\n", "\r")):
        return [_edit(path, lines, insert_at, insert_at, nl + block)]
    return [_edit(path, lines, insert_at, insert_at, block + nl)]


def _yaml_key(key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", key):
        return key
    return json.dumps(key)


def _flow_add(mapping: Any, keys: list[str], new_value: str, text: str, kind: str,
              lines: _Lines, path: str) -> list[TextEdit]:
    def key_text(k: str) -> str:
        return json.dumps(k) if kind == "json" else _yaml_key(k)

    inner = new_value
    for key in reversed(keys[1:]):
        inner = "{" + f"{key_text(key)}: {inner}" + "}"
    entry = f"{key_text(keys[0])}: {inner}"
    end = mapping.end_mark.index  # just past the closing brace
    close = text.rfind("}", mapping.start_mark.index, end)
    if close < 0:
        raise FixError("a mapping whose closing brace cannot be found")
    if not mapping.value:
        return [_edit(path, lines, close, close, entry)]
    last_end = mapping.value[-1][1].end_mark.index
    first_key = mapping.value[0][0]
    open_line = lines.position(mapping.start_mark.index)[0]
    first_line = lines.position(first_key.start_mark.index)[0]
    if first_line > open_line:  # one member per line
        indent = " " * first_key.start_mark.column
        return [_edit(path, lines, last_end, last_end, f",{newline_of(text)}{indent}{entry}")]
    return [_edit(path, lines, last_end, last_end, f", {entry}")]


# ---- shell ------------------------------------------------------------------------------------

_WORD = re.compile(r"""(?:[^\s'"\\#]|\\.|'[^']*'|"(?:[^"\\]|\\.)*"|(?<=\S)\#)+""")


def _shell_words(line: str) -> list[tuple[int, int]]:
    """(start, end) of each word of one line, up to a comment."""
    out = []
    i = 0
    while i < len(line):
        if line[i].isspace():
            i += 1
            continue
        if line[i] == "#":
            break
        m = _WORD.match(line, i)
        if not m or m.end() == i:
            i += 1
            continue
        out.append((i, m.end()))
        i = m.end()
    return out


def _launch_set(op: EditOp, text: str, path: str) -> list[TextEdit]:
    if not op.keyword or not op.keyword.startswith("-"):
        raise FixError("a launch_set edit without an option")
    lines = _Lines(text)
    first = op.span.line
    if not 1 <= first <= lines.count:
        raise FixError(f"line {first} is outside the file")
    last = first
    while last < lines.count and lines.line_text(last).endswith("\\"):
        last += 1
    value = op.text if re.fullmatch(r"[A-Za-z0-9_.,:/@%+=-]+", op.text or "x") else shlex.quote(op.text)
    words: list[tuple[int, int]] = []  # offsets in the text
    for number in range(first, last + 1):
        line_text = lines.line_text(number)
        body = line_text[:-1] if line_text.endswith("\\") else line_text
        base = lines.starts[number - 1]
        words.extend((base + s, base + e) for s, e in _shell_words(body))
    opt = op.keyword
    for i, (s, e) in enumerate(words):
        word = text[s:e]
        if word == opt:
            if i + 1 < len(words) and not text[words[i + 1][0]:words[i + 1][1]].startswith("-"):
                vs, ve = words[i + 1]
                if text[vs:ve] == value:
                    return []
                return [_edit(path, lines, vs, ve, value)]
            return [_edit(path, lines, e, e, f" {value}")]  # a bare flag gets the value
        if word.startswith(opt + "="):
            vs = s + len(opt) + 1
            if text[vs:e] == value:
                return []
            return [_edit(path, lines, vs, e, value)]
    if not words:
        raise FixError(f"no command at line {first}")
    end = words[-1][1]
    return [_edit(path, lines, end, end, f" {opt} {value}")]


# ---- notebooks --------------------------------------------------------------------------------

@dataclass
class _SourceTokens:
    """The JSON strings of one code cell's ``"source"``: each ``(start, end, value)``; ``array``
    when the source is a list (else one string); ``open_end``/``close_start``: the offsets just
    inside the brackets."""

    tokens: list[tuple[int, int, str]]
    array: bool
    open_end: int
    close_start: int


def _json_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _json_string(text: str, i: int) -> tuple[str, int]:
    if text[i:i + 1] != '"':
        raise FixError("the notebook's JSON is not as expected")
    return json.decoder.scanstring(text, i + 1)


def _json_skip(text: str, i: int) -> int:
    depth = 0
    while True:
        i = _json_ws(text, i)
        if i >= len(text):
            raise FixError("the notebook's JSON ends early")
        char = text[i]
        if char == '"':
            _, i = _json_string(text, i)
        elif char in "[{":
            depth += 1
            i += 1
            continue
        elif char in "]}":
            depth -= 1
            i += 1
        elif char in ",:":
            i += 1
            continue
        else:
            m = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null").match(text, i)
            if not m:
                raise FixError("the notebook's JSON is not as expected")
            i = m.end()
        if depth <= 0:
            return i


def _json_members(text: str, i: int):
    """Yield ``(key, value_start)`` for an object at ``i``; the caller returns the offset past
    the value by sending it... (here: the generator skips each value itself after yield)."""
    i = _json_ws(text, i)
    if text[i:i + 1] != "{":
        raise FixError("the notebook's JSON is not as expected")
    i = _json_ws(text, i + 1)
    if text[i:i + 1] == "}":
        return
    while True:
        key, i = _json_string(text, _json_ws(text, i))
        i = _json_ws(text, i)
        if text[i:i + 1] != ":":
            raise FixError("the notebook's JSON is not as expected")
        value_start = _json_ws(text, i + 1)
        yield key, value_start
        i = _json_ws(text, _json_skip(text, value_start))
        if text[i:i + 1] == ",":
            i += 1
            continue
        if text[i:i + 1] == "}":
            return
        raise FixError("the notebook's JSON is not as expected")


def _json_items(text: str, i: int) -> list[int]:
    """The start offset of each item of the array at ``i``."""
    i = _json_ws(text, i)
    if text[i:i + 1] != "[":
        raise FixError("the notebook's JSON is not as expected")
    out = []
    i = _json_ws(text, i + 1)
    if text[i:i + 1] == "]":
        return out
    while True:
        out.append(i)
        i = _json_ws(text, _json_skip(text, i))
        if text[i:i + 1] == ",":
            i = _json_ws(text, i + 1)
            continue
        if text[i:i + 1] == "]":
            return out
        raise FixError("the notebook's JSON is not as expected")


def _code_cell_sources(text: str) -> list[_SourceTokens]:
    """Every code cell's source tokens, in order."""
    start = 1 if text.startswith("\ufeff") else 0
    cells_at = None
    for key, value_start in _json_members(text, start):
        if key == "cells":
            cells_at = value_start
    if cells_at is None:
        raise FixError("not a notebook with a list of cells (nbformat 4)")
    out = []
    for cell_start in _json_items(text, cells_at):
        if text[cell_start:cell_start + 1] != "{":
            continue
        cell_type = None
        source = None
        for key, value_start in _json_members(text, cell_start):
            if key == "cell_type" and text[value_start:value_start + 1] == '"':
                cell_type = _json_string(text, value_start)[0]
            elif key == "source":
                source = value_start
        if cell_type != "code":
            continue
        if source is None:
            raise FixError("a code cell without a source")
        if text[source] == '"':
            value, end = _json_string(text, source)
            out.append(_SourceTokens([(source, end, value)], False, source, end))
        else:
            items = _json_items(text, source)
            tokens = []
            for item in items:
                value, end = _json_string(text, item)
                tokens.append((item, end, value))
            close = _json_ws(text, _json_skip(text, source)) - 1
            out.append(_SourceTokens(tokens, True, source + 1, close))
    return out


def _cell_source(tokens: _SourceTokens) -> str:
    return "".join(value for _s, _e, value in tokens.tokens)


def _notebook_cell_edits(ops: Sequence[EditOp], text: str) -> dict[int, list[TextEdit]]:
    """Each op resolved against its cell's source: cell -> edits in cell coordinates."""
    cells = _code_cell_sources(text)
    by_cell: dict[int, list[EditOp]] = {}
    for op in ops:
        cell = op.span.cell
        if cell is None or not 1 <= cell <= len(cells):
            raise FixError(f"no code cell {cell} in the notebook")
        if op.kind in ("yaml_set", "launch_set"):
            raise FixError(f"a {op.kind} edit in a notebook")
        by_cell.setdefault(cell, []).append(op)
    out: dict[int, list[TextEdit]] = {}
    for cell, cell_ops in by_cell.items():
        out[cell] = _resolve_ops(cell_ops, _cell_source(cells[cell - 1]), "python",
                                 path=cell_ops[0].span.path)
    for cell, edits in out.items():
        apply_edits(_cell_source(cells[cell - 1]), edits)  # overlap check
    return out


def _notebook_edits(text: str, by_cell: dict[int, list[TextEdit]], path: str
                    ) -> tuple[TextEdit, ...]:
    """The ``.ipynb`` text edits carrying out cell-level edits: per cell, the source strings
    from the first changed line to the last replaced by the new lines' strings (unchanged
    strings kept as written, the array's own separator between items)."""
    cells = _code_cell_sources(text)
    lines = _Lines(text)
    ascii_only = "\\u" in text and not re.search(r"[^\x00-\x7f]", text)
    result: list[TextEdit] = []
    for cell in sorted(by_cell):
        tokens = cells[cell - 1]
        old_source = _cell_source(tokens)
        new_source = apply_edits(old_source, by_cell[cell])
        if new_source == old_source:
            continue
        if not tokens.array:
            s, e, _ = tokens.tokens[0]
            result.append(_edit(path, lines, s, e, json.dumps(new_source, ensure_ascii=ascii_only)))
            continue
        old = [value for _s, _e, value in tokens.tokens]
        new = new_source.splitlines(keepends=True)
        prefix = 0
        while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < min(len(old), len(new)) - prefix and \
                old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
            suffix += 1
        changed_new = new[prefix:len(new) - suffix]
        # the separator between items as the file writes it
        if len(tokens.tokens) > 1:
            separator = text[tokens.tokens[0][1]:tokens.tokens[1][0]]
        else:
            separator = ",\n" + " " * _item_indent(text, tokens)
        encoded = [json.dumps(v, ensure_ascii=ascii_only) for v in changed_new]
        old_changed = tokens.tokens[prefix:len(old) - suffix]
        if old_changed:
            start, end = old_changed[0][0], old_changed[-1][1]
            result.append(_edit(path, lines, start, end, separator.join(encoded)))
        elif prefix > 0:  # lines inserted after item prefix-1
            at = tokens.tokens[prefix - 1][1]
            result.append(_edit(path, lines, at, at, "".join(separator + v for v in encoded)))
        elif tokens.tokens:  # lines inserted before the first item
            at = tokens.tokens[0][0]
            result.append(_edit(path, lines, at, at, "".join(v + separator for v in encoded)))
        else:  # an empty source
            result.append(_edit(path, lines, tokens.open_end, tokens.close_start,
                                ", ".join(encoded)))
        if old_changed and not changed_new:
            # lines removed: take one separator with them
            result.pop()
            start, end = old_changed[0][0], old_changed[-1][1]
            if prefix > 0:
                start = tokens.tokens[prefix - 1][1]
            elif prefix + len(old_changed) < len(old):
                end = tokens.tokens[prefix + len(old_changed)][0]
            result.append(_edit(path, lines, start, end, ""))
    return tuple(result)


def _item_indent(text: str, tokens: _SourceTokens) -> int:
    start = tokens.tokens[0][0] if tokens.tokens else tokens.open_end
    line_start = text.rfind("\n", 0, start) + 1
    return start - line_start


# ---- composing --------------------------------------------------------------------------------

@dataclass
class FixOutcome:
    """What became of one fix in :func:`plan`: ``status`` ``"applied"`` (its ``edits`` are in
    the plan), ``"unchanged"`` (the text already is as the fix wants it), ``"overlaps"``
    (its edits overlap a fix accepted before: "not applied: overlaps") or ``"error"``
    (``reason`` says why it could not be placed)."""

    fix: Fix
    status: str
    edits: tuple[TextEdit, ...] = ()
    reason: str = ""


@dataclass
class FixPlan:
    """Fixes composed: per file its old and new text, and each fix's :class:`FixOutcome`."""

    old: dict[str, str] = field(default_factory=dict)
    new: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    outcomes: list[FixOutcome] = field(default_factory=list)

    def changed(self) -> list[str]:
        """The paths whose text the plan changes, sorted."""
        return sorted(p for p in self.new if self.new[p] != self.old.get(p))


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Edits of two fixes conflict when they overlap (:func:`edits_overlap`) or insert at one
    point: the second fix is then left to the next pass (``--fix`` lints again and retries),
    where it is placed against the text the first one left (two keywords appended to one
    call, two keys added to one mapping)."""
    return edits_overlap(a, b) or (a[0] == a[1] == b[0] == b[1])


def plan(fixes: Sequence[Fix], read: Callable[[str], tuple[str, str]]) -> FixPlan:
    """Compose ``fixes`` in one pass, in order.

    Args:
        fixes: the fixes, in the order they are tried (the findings' order).
        read: ``path -> (text, kind)`` of a file the ops name (raising ``OSError`` or
            :class:`FixError` when it cannot be read; the fixes naming it are then errors).

    A fix is applied whole or not at all: its edits in every file it names are checked against
    the edits accepted before; a notebook's edits compose inside each cell's source.
    """
    result = FixPlan()
    accepted: dict[str, list[tuple[int, int]]] = {}  # path -> offset ranges (file or cell level)
    cell_level: dict[str, dict[int, list[TextEdit]]] = {}
    flat: dict[str, list[TextEdit]] = {}
    cell_sources: dict[str, list[_SourceTokens]] = {}

    def text_of(path: str) -> tuple[str, str]:
        if path not in result.old:
            text, kind = read(path)
            result.old[path] = text
            result.kinds[path] = kind
        return result.old[path], result.kinds[path]

    for fix in fixes:
        try:
            by_path: dict[str, list[EditOp]] = {}
            for op in fix.ops:
                by_path.setdefault(op.span.path, []).append(op)
            if not by_path:
                raise FixError("a fix with no edits")
            pending_flat: dict[str, list[tuple[int, int, TextEdit]]] = {}
            pending_cells: dict[str, dict[int, list[tuple[int, int, TextEdit]]]] = {}
            resolved: list[TextEdit] = []
            for path, ops in by_path.items():
                text, kind = text_of(path)
                if kind == "notebook":
                    if path not in cell_sources:
                        cell_sources[path] = _code_cell_sources(text)
                    cells = cell_sources[path]
                    by_cell = _notebook_cell_edits(ops, text)
                    for cell, edits in by_cell.items():
                        lines = _Lines(_cell_source(cells[cell - 1]))
                        pending_cells.setdefault(path, {})[cell] = [
                            (*_offsets(e, lines), e) for e in edits]
                    resolved.extend(_notebook_edits(text, by_cell, path))
                else:
                    edits = _resolve_ops(ops, text, kind)
                    _check_disjoint(edits, text)
                    lines = _Lines(text)
                    pending_flat[path] = [(*_offsets(e, lines), e) for e in edits]
                    resolved.extend(edits)
            if not resolved:
                result.outcomes.append(FixOutcome(fix, "unchanged"))
                continue
            overlap = False
            for path, items in pending_flat.items():
                taken = accepted.get(path, [])
                overlap |= any(_conflict((s, e), r) for s, e, _ in items for r in taken)
            for path, cells in pending_cells.items():
                for cell, items in cells.items():
                    taken = accepted.get(f"{path}\0{cell}", [])
                    overlap |= any(_conflict((s, e), r) for s, e, _ in items for r in taken)
            if overlap:
                result.outcomes.append(FixOutcome(fix, "overlaps", tuple(resolved),
                                                  "not applied: overlaps another fix"))
                continue
            for path, items in pending_flat.items():
                accepted.setdefault(path, []).extend((s, e) for s, e, _ in items)
                flat.setdefault(path, []).extend(e for _s, _e, e in items)
            for path, cells in pending_cells.items():
                for cell, items in cells.items():
                    accepted.setdefault(f"{path}\0{cell}", []).extend((s, e) for s, e, _ in items)
                    cell_level.setdefault(path, {}).setdefault(cell, []).extend(
                        e for _s, _e, e in items)
            result.outcomes.append(FixOutcome(fix, "applied", tuple(resolved)))
        except (FixError, OSError, RecursionError) as exc:
            result.outcomes.append(FixOutcome(fix, "error", (), str(exc) or type(exc).__name__))
        except Exception as exc:  # noqa: BLE001 - a bug here must not stop the other fixes
            result.outcomes.append(FixOutcome(
                fix, "error", (), f"internal error placing the fix ({type(exc).__name__}: "
                                  f"{str(exc)[:200]}); please report it"))
    for path, edits in flat.items():
        result.new[path] = apply_edits(result.old[path], edits)
    for path, by_cell in cell_level.items():
        result.new[path] = apply_edits(result.old[path],
                                       _notebook_edits(result.old[path], by_cell, path))
    return result


def with_path(edits: Iterable[TextEdit], path: str) -> tuple[TextEdit, ...]:
    """``edits`` with their path replaced (for reporters that show a display path)."""
    return tuple(dataclasses.replace(e, path=path) for e in edits)
