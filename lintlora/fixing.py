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
  value is a string), a list's items replaced in its own layout (:func:`_yaml_sequence`), a missing key added after its mapping's last entry at the mapping's
  indentation (JSON: ``, "key": value`` in the object's own layout).
- Shell (``launch_set``, also ``replace``): the option's value word replaced (``--opt v`` or
  ``--opt=v``), a bare flag given the value, or `` --opt value`` appended to the command's
  last line before a trailing comment.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from lintlora.findings import EditOp, Fix, TextEdit

__all__ = ["FixError", "KINDS", "resolve", "apply_edits", "plan", "FixPlan", "FixOutcome",
           "edits_overlap", "newline_of", "split_lines"]

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


_BREAK = re.compile(r"\r\n|\r|\n")
"""A line break as the fixer, LibCST and PyYAML count lines: ``\r\n``, ``\r``, ``\n`` only
(not the form feed, U+2028 and the other breaks :meth:`str.splitlines` also splits at)."""


def split_lines(text: str) -> list[str]:
    """``text``'s lines, each with its break (``\r\n``, ``\r`` or ``\n``; the last may have
    none): the lines the spans and edits count, where :meth:`str.splitlines` would also split
    at ``\x0b``, ``\x0c``, ``\x1c``-``\x1e``, ``\x85``, U+2028 and U+2029."""
    out = []
    at = 0
    for m in _BREAK.finditer(text):
        out.append(text[at:m.end()])
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


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
        edits = _notebook_edits(text, by_cell, fix.ops[0].span.path)
        if edits and _parses(text, kind) and not _parses(apply_edits(text, edits), kind):
            raise FixError("the fix would leave the notebook unparsable")
        return edits
    edits = _resolve_ops(fix.ops, text, kind)
    _check_disjoint(edits, text)
    if edits and _parses(text, kind) and not _parses(apply_edits(text, edits), kind):
        raise FixError("the fix would leave the file unparsable")
    return tuple(edits)


def _resolve_ops(ops: Sequence[EditOp], text: str, kind: str, path: str | None = None,
                 others: str = "") -> list[TextEdit]:
    """The edits of several ops on one text. In Python the text is parsed once, and keywords
    that several ops add to one call are added together (one edit, in the ops' order).
    ``others``: the source of a notebook's other code cells (a variable whose value a
    ``replace`` edits must not be used there either: :func:`_check_single_use`)."""
    if kind != "python":
        return [e for op in ops for e in _resolve_op(op, text, kind, path)]
    if any(op.span.cell is not None for op in ops) and path is None:
        ops = _databricks_file_spans(ops, text)

    tree: _PyTree | None = None
    use_tree: Any = None  # for _check_single_use: a _PyTree, or False when none can be had
    edits: list[TextEdit] = []
    groups: dict[int, tuple[Any, list[tuple[str, str]]]] = {}
    for op in ops:
        where = path if path is not None else op.span.path
        if op.kind == "replace" or op.kind not in KINDS:
            edits.extend(_resolve_op(op, text, kind, where))
            if op.kind == "replace":
                if use_tree is None:
                    use_tree = _use_tree(text) if tree is None else tree
                if use_tree is not False:
                    _check_single_use(op, use_tree, others)
            continue
        if tree is None:
            tree = _py_tree(text)
        if op.kind == "set_keyword" and op.keyword:
            _check_value_text(op, "python")
            start, _end = _span_offsets(op.span, tree.lines)
            call = tree.call_at(op.span)
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
        _check_value_text(op, kind)
        if kind in ("python", "notebook"):
            _check_form_feeds(op.span, text)
        lines = _Lines(text)
        start, end = _span_offsets(op.span, lines)
        if kind in ("yaml", "json"):
            _check_yaml_positions(text)
            _check_not_shared(text, start, end)
        new_text = _keep_quotes(text[start:end], op.text) if kind in ("python", "notebook") \
            else op.text
        return [_edit(path, lines, start, end, new_text)]
    if kind == "python":
        return _python_op(op, _py_tree(text), path)
    if op.kind == "launch_set" and kind in ("shell", "yaml"):
        # a launch line: a shell script, a Makefile recipe, a workflow's `run:` step
        return _launch_set(op, text, path, kind)
    if kind in ("yaml", "json"):
        if op.kind != "yaml_set":
            raise FixError(f"a {op.kind} edit in a {kind} file")
        return _yaml_set(op, text, kind, path)
    if kind == "shell":
        if op.kind != "launch_set":
            raise FixError(f"a {op.kind} edit in a shell file")
        return _launch_set(op, text, path)
    raise FixError(f"a {op.kind} edit in a file of kind {kind!r}")


_PLAIN_STRING = re.compile(r"""(["'])[^"'\\\r\n]*\1\Z""")
"""A one-line Python string literal with no prefix, escape or quote inside."""


def _keep_quotes(old: str, new: str) -> str:
    """``new`` in ``old``'s quote style when both are plain string literals (a rule writes
    ``"sdpa"``; the file wrote ``'flash_attention_2'``: ``'sdpa'``), else ``new``."""
    if _PLAIN_STRING.match(old) and _PLAIN_STRING.match(new) and old[0] != new[0]:
        return old[0] + new[1:-1] + old[0]
    return new


def _check_value_text(op: EditOp, kind: str) -> None:
    """Refuse an op whose new text is not one value of the file's language (it would add
    statements or keys around it): in Python (and a notebook's cells) a ``replace`` or
    ``set_keyword`` text must be one expression (:func:`libcst.parse_expression`), an
    ``insert_after`` text one simple statement on one line; in YAML/JSON a ``replace`` text
    one scalar on one line (:func:`_check_yaml_value`).

    Raises:
        FixError: the text is not such a value.
    """
    if kind in ("python", "notebook"):
        import libcst as cst

        if op.kind in ("replace", "set_keyword"):
            try:
                cst.parse_expression(op.text)
            except (cst.ParserSyntaxError, RecursionError, MemoryError):
                raise FixError(f"the new text is not one Python expression: {op.text[:80]!r}"
                               ) from None
        elif op.kind == "insert_after":
            try:
                statement = cst.parse_statement(op.text)
            except (cst.ParserSyntaxError, RecursionError, MemoryError):
                statement = None
            if not (_one_line_statement(statement, op.text) or _guarded_block(statement)):
                raise FixError(f"the new line is not one Python statement: {op.text[:80]!r}")
    elif kind in ("yaml", "json") and op.kind == "replace":
        _check_yaml_value(op.text, kind, lists=True)


def _one_line_statement(statement: Any, text: str) -> bool:
    """Whether ``statement`` (parsed from ``text``) is one simple statement on one line."""
    import libcst as cst

    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and not _BREAK.search(text.rstrip("\r\n")))


def _guarded_block(statement: Any) -> bool:
    """Whether ``statement`` is one ``if`` with no ``elif``/``else`` whose indented body holds
    only one-line simple statements (LL004's ``if hasattr(trainer.model, ...):`` guard around
    the print it inserts): the one compound statement an inserted line may be."""
    import libcst as cst

    if not isinstance(statement, cst.If) or statement.orelse is not None \
            or not isinstance(statement.body, cst.IndentedBlock):
        return False
    return all(isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
               for line in statement.body.body)


def _check_yaml_value(value: str, kind: str, lists: bool = False) -> None:
    """Refuse a new YAML/JSON value that is not one: a line break in it, or text that PyYAML
    (JSON: :func:`json.loads`) reads as anything but one scalar (``x: y``, ``1, "k": 2``,
    ``a # c``, ``{a: 1}``), or that carries a tag, an anchor or an alias. ``lists``: a flow
    sequence of such scalars on one line is a value too (``[q_proj, v_proj]``: a ``replace``
    of a module list).

    Raises:
        FixError: not one such value on one line.
    """
    import yaml

    if _BREAK.search(value) or any(c in value for c in "\x85\u2028\u2029"):
        raise FixError(f"the new value spans several lines: {value[:80]!r}")
    if kind == "json":
        try:
            loaded = json.loads(value)
        except ValueError:
            raise FixError(f"the new value is not one JSON value: {value[:80]!r}") from None
        items = loaded if lists and isinstance(loaded, list) else [loaded]
        if any(isinstance(item, (dict, list)) for item in items):
            raise FixError(f"the new value is not one JSON scalar: {value[:80]!r}")
        return
    if re.search(r"(?:^|[\s\[,])[!&*]", value):
        raise FixError(f"the new value carries a YAML tag, anchor or alias: {value[:80]!r}")
    try:
        node = yaml.compose(f"k: {value}\n", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        node = None
    ok = isinstance(node, yaml.MappingNode) and len(node.value) == 1
    if ok:
        new = node.value[0][1]
        ok = new.end_mark.index == 3 + len(value.rstrip())
        if isinstance(new, yaml.SequenceNode) and lists and new.flow_style:
            ok = ok and all(isinstance(item, yaml.ScalarNode) for item in new.value)
        elif not isinstance(new, yaml.ScalarNode):
            ok = False
    if not ok:
        raise FixError(f"the new value is not one YAML scalar: {value[:80]!r}")


def _check_yaml_positions(text: str) -> None:
    """Refuse a ``replace`` in a YAML file holding NEL, U+2028 or U+2029: PyYAML counts them
    as line breaks (``Reader``/``Scanner.forward``, YAML 1.1 §5.4), the fixer does not
    (:data:`_BREAK`), so a span's line would name another line than the extractor meant.

    Raises:
        FixError: such a character is in the text.
    """
    if any(c in text for c in "\x85\u2028\u2029"):
        raise FixError("the file holds a line break PyYAML counts and the fixer does not "
                       "(NEL, U+2028, U+2029)")


def _yaml_shared(root: Any) -> tuple[set[int], list[tuple[int, int]]]:
    """The nodes of a composed YAML document reached more than once (through an alias: an
    anchored node and every node under it), as ``(ids, ranges)``: their ``id`` s and their
    ``(start, end)`` character ranges in the text. Editing such a node edits every key that
    names it (``other: *base``), so no fix may (:func:`_check_not_shared`). Each node is
    walked once (an alias bomb costs the nodes composed, not their expansion)."""
    import yaml

    seen: dict[int, int] = {}
    shared: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        key = id(node)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            if seen[key] == 2:
                shared.append(node)
            continue
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    ids: set[int] = set()
    ranges = []
    stack = list(shared)
    for node in shared:
        ranges.append((node.start_mark.index, node.end_mark.index))
    while stack:
        node = stack.pop()
        if id(node) in ids:
            continue
        ids.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return ids, ranges


def _check_not_shared(text: str, start: int, end: int) -> None:
    """Refuse a YAML edit of ``[start, end)`` inside a node an alias reaches
    (:func:`_yaml_shared`).

    Raises:
        FixError: the edit lies in an anchored, aliased node (or the file does not parse).
    """
    root = _yaml_root(text)
    if root is None:
        return
    _ids, ranges = _yaml_shared(root)
    for s, e in ranges:
        if (s < end and start < e) or s <= start < e:
            raise FixError("the value is shared through a YAML alias (&anchor / *alias): "
                           "editing it would change every key that uses it")


def _span_offsets(span: Any, lines: _Lines) -> tuple[int, int]:
    start = lines.offset(span.line, span.column)
    end_line = span.end_line if span.end_line is not None else span.line
    end_column = span.end_column if span.end_column is not None else span.column
    end = lines.offset(end_line, end_column)
    if end < start:
        raise FixError("a span that ends before it starts")
    return start, end


# ---- Python -----------------------------------------------------------------------------------

_FORM_FEED_LINE = re.compile(r"(?m)^[ \t]*\x0c")
"""A line whose indentation holds a form feed: LibCST's positions on it do not count the
characters before the statement as the text does (``"\x0cT()"``: ``T`` at column 0, LibCST
1.x), so no fix places an edit there."""


def _form_feed_lines(text: str) -> set[int]:
    """The 1-based lines of ``text`` that :data:`_FORM_FEED_LINE` matches."""
    if "\x0c" not in text:
        return set()
    lines = _Lines(text)
    return {lines.position(m.start())[0] for m in _FORM_FEED_LINE.finditer(text)}


def _check_form_feeds(span: Any, text: str) -> None:
    """Refuse a span on a line :data:`_FORM_FEED_LINE` matches.

    Raises:
        FixError: the span's first or last line is such a line.
    """
    bad = _form_feed_lines(text)
    if bad and (span.line in bad or (span.end_line or span.line) in bad):
        raise FixError("a form feed in the line's indentation: positions on it are uncertain")


def _parse_python(text: str) -> Any:
    """``text`` parsed by LibCST after the extractor's preflight
    (:func:`lintlora.extract.pysyntax.preflight`): LibCST's native parser recurses on the C
    stack, and a file nested a few thousand levels deep kills the process (no ``except``
    catches that), so such a file is refused first, with CPython's own guarded parser.

    Raises:
        FixError: the preflight refuses the file, or it does not parse.
    """
    import libcst as cst

    from lintlora.extract import ExtractError
    from lintlora.extract.pysyntax import preflight

    try:
        preflight(text, None)
    except ExtractError as exc:
        raise FixError(f"the file cannot be edited: {exc}") from None
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the file does not parse: {exc.message}") from None


class _PyTree:
    """A module parsed once with the positions and parents of its nodes."""

    def __init__(self, text: str) -> None:
        from libcst.metadata import MetadataWrapper, PositionProvider

        module = _parse_python(text)  # FixError when it does not parse
        try:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            self.wrapper = wrapper
            self.positions = wrapper.resolve(PositionProvider)
        except (RecursionError, MemoryError, KeyError):
            # code nested too deeply for LibCST's metadata (it raises KeyError while unwinding
            # a RecursionError): the extractor refuses such files too (extract/pysyntax.py)
            raise FixError("the file is nested too deeply to edit") from None
        self.module = module
        self.lines = _Lines(text)
        self.text = text
        self.form_feed_lines = _form_feed_lines(text)
        self._parents: Any = None

    @property
    def parents(self) -> Any:
        """Node -> its parent, resolved on first use (only statement edits need it: a second
        walk of the tree that most fixes, keyword and value edits, skip)."""
        if self._parents is None:
            from libcst.metadata import ParentNodeProvider

            try:
                self._parents = self.wrapper.resolve(ParentNodeProvider)
            except (RecursionError, MemoryError, KeyError):
                raise FixError("the file is nested too deeply to edit") from None
        return self._parents

    def range(self, node: Any) -> tuple[int, int]:
        """Start and end offsets of a node (its syntactic range).

        Raises:
            FixError: the node starts or ends on a line whose indentation holds a form feed.
        """
        pos = self.positions[node]
        if self.form_feed_lines and (pos.start.line in self.form_feed_lines
                                     or pos.end.line in self.form_feed_lines):
            raise FixError("a form feed in the line's indentation: positions on it are "
                           "uncertain")
        return (self.lines.offset(pos.start.line, pos.start.column + 1),
                self.lines.offset(pos.end.line, pos.end.column + 1))

    def call_at(self, span: Any) -> Any:
        """The call a keyword op names: the one whose range is exactly ``span`` when the span
        has an end (``Trainer(...).train()``: the span of ``.train()``'s call starts where
        ``Trainer(...)`` does, and the innermost call holding that start is ``Trainer(...)``),
        else the innermost call holding the span's start (:meth:`innermost`)."""
        import libcst as cst

        start, end = _span_offsets(span, self.lines)
        if span.end_line is not None and span.end_column is not None and end > start:
            for node in self.positions:
                if isinstance(node, cst.Call):
                    try:
                        if self.range(node) == (start, end):
                            return node
                    except FixError:
                        continue
        return self.innermost(start, (cst.Call,))

    def innermost(self, offset: int, types: tuple) -> Any:
        """The smallest node of ``types`` whose range holds ``offset``."""
        best = None
        best_size = None
        for node in self.positions:
            if not isinstance(node, types):
                continue
            try:
                start, end = self.range(node)
            except FixError:  # on a form-feed line: not a candidate
                continue
            if start <= offset < end or (start == offset == end):
                size = end - start
                if best is None or size < best_size:
                    best, best_size = node, size
        return best


_MAGIC_LINE = re.compile(r"(?m)^([ \t]*)[%!?][^\r\n]*")
"""An IPython line (``%pip``, ``%%capture``, ``!nvidia-smi``, ``?obj``) in a notebook cell."""


def _use_tree(text: str) -> Any:
    """A :class:`_PyTree` of ``text`` for :func:`_check_single_use`: a notebook cell's IPython
    lines (:data:`_MAGIC_LINE`) read as ``pass`` (same lines; the columns of other lines
    kept), or ``False`` when even that does not parse (the check is then skipped: only a
    ``replace``'s own span is edited, as before)."""
    try:
        return _py_tree(text)
    except FixError:
        pass
    blanked = _MAGIC_LINE.sub(lambda m: m.group(1) + "pass", text)
    if blanked == text:
        return False
    try:
        return _py_tree(blanked)
    except FixError:
        return False


def _check_single_use(op: EditOp, tree: "_PyTree", others: str = "") -> None:
    """Refuse a ``replace`` of the value a variable is assigned (``dt = torch.float16``, the
    origin "variable" the extractor resolved) when the variable is read more than once: the
    rule checked one use (``torch_dtype=dt``), and the edit would change every other
    (``torch.ones(3, dtype=dt)``) too. Reads are LibCST's ``LOAD`` contexts of the name in
    the module (an attribute ``x.dt`` and a keyword ``dt=`` are other names); in a notebook,
    any mention of the name in another code cell (``others``) counts as a read.

    Raises:
        FixError: the variable is read more than once.
    """
    import libcst as cst
    from libcst.metadata import ExpressionContext, ExpressionContextProvider

    start, end = _span_offsets(op.span, tree.lines)
    names: set[str] = set()
    for node in tree.positions:
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            try:
                vs, ve = tree.range(node.value)
            except FixError:
                continue
            if (vs, ve) == (start, end):  # the whole value, not a part of a call
                targets = ([t.target for t in node.targets] if isinstance(node, cst.Assign)
                           else [node.target])
                names.update(t.value for t in targets if isinstance(t, cst.Name))
    if not names:
        return
    contexts = tree.wrapper.resolve(ExpressionContextProvider)
    reads = 0
    for node, context in contexts.items():
        if (isinstance(node, cst.Name) and node.value in names
                and context is ExpressionContext.LOAD
                and not (isinstance(tree.parents.get(node), cst.Attribute)
                         and tree.parents[node].attr is node)):
            reads += 1
    elsewhere = any(re.search(rf"(?<![\w.]){re.escape(n)}\b", others) for n in names)
    if reads > 1 or elsewhere:
        raise FixError(f"the variable {sorted(names)[0]} is used elsewhere too: editing its value "
                       "would change those uses")


@functools.lru_cache(maxsize=2)
def _py_tree(text: str) -> "_PyTree":
    """The :class:`_PyTree` of ``text``, kept for the next fix on the same text: :func:`plan`
    places each fix against a file's one text, and parsing it with positions costs about a
    second per 2,000 lines (measured, LibCST 1.x), so a file with a hundred fixable findings
    took minutes when each fix parsed it again (``bench/bench_fix_plan.py``: 466 s, now
    4.6 s). Two entries: the file and, for a notebook, the cell being fixed (the trees are
    read only)."""
    return _PyTree(text)


def _python_op(op: EditOp, tree: "_PyTree", path: str) -> list[TextEdit]:
    import libcst as cst

    lines = tree.lines
    start, _end = _span_offsets(op.span, lines)
    if op.kind in ("set_keyword", "remove_keyword", "rename_keyword"):
        if not op.keyword:
            raise FixError(f"a {op.kind} edit without a keyword")
        call = tree.call_at(op.span)
        if call is None:
            raise FixError(f"no call at line {op.span.line}")
        return _keyword_op(op, call, tree, path)
    if op.kind == "insert_after":
        _check_value_text(op, "python")
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


def _check_not_in_fstring(node: Any, tree: "_PyTree") -> None:
    """Refuse an edit of a call inside an f-string's replacement field: the new text's quotes
    would end the f-string before Python 3.12 (PEP 701), which LibCST's parser accepts.

    Raises:
        FixError: an f-string holds the node.
    """
    import libcst as cst

    parent = tree.parents.get(node)
    for _ in range(10_000):  # bounded: the tree's depth is
        if parent is None:
            return
        if isinstance(parent, cst.FormattedString):
            raise FixError("the call is inside an f-string")
        parent = tree.parents.get(parent)


def _keyword_op(op: EditOp, call: Any, tree: _PyTree, path: str) -> list[TextEdit]:
    import libcst as cst

    _check_not_in_fstring(call, tree)
    if op.kind == "set_keyword":
        _check_value_text(op, "python")

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
    if any(a.star == "**" for a in args):
        # `T(**cfg)`: the dict may hold the keyword already (a TypeError at the call) or set
        # it after lintlora's value; lintlora cannot see which
        raise FixError("the call passes **kwargs, which may set the keyword already")
    _check_not_in_fstring(call, tree)
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
    """The one document of ``text`` composed by the extractor's bounded loader
    (:func:`lintlora.extract.yaml_loader._get_loader`: PyYAML's SafeLoader with its depth and
    node caps, so a file changed since the lint, up to the fixer's 64 MiB, cannot exhaust the
    stack: libyaml's C loader, unbounded, crashes the process on 100,000 nested ``[``).

    Raises:
        FixError: it does not parse, holds several documents, exceeds a cap, or holds U+FEFF
            (a second BOM after the one the read removed: PyYAML's reader drops it, which
            would shift every edit by one character).
    """
    import yaml

    from lintlora.extract.yaml_loader import _get_loader, _Refused

    if "\ufeff" in text:
        raise FixError("a byte-order mark (U+FEFF) inside the text: positions are uncertain")
    try:
        return yaml.compose(text, Loader=_get_loader())
    except _Refused as exc:
        raise FixError(f"the file cannot be edited: {exc.message}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise FixError(f"the file does not parse: {str(exc).splitlines()[0] if str(exc) else exc!r}") from None


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
    # one scalar, or a one-line flow list of scalars that replaces a list (_yaml_sequence)
    _check_yaml_value(_scalar_text(op.text, kind), kind, lists=True)
    shared, _ranges = _yaml_shared(root)
    lines = _Lines(text)
    node = root
    depth = 0
    while depth < len(keys):
        if id(node) in shared:
            raise FixError("the value is shared through a YAML alias (&anchor / *alias): "
                           "editing it would change every key that uses it")
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
        if isinstance(node, yaml.SequenceNode):
            return _yaml_sequence(node, op, text, kind, lines, path)
        if not isinstance(node, yaml.ScalarNode):
            raise FixError(f"{op.keyword} is not a scalar")
        if id(node) in shared:
            raise FixError("the value is shared through a YAML alias (&anchor / *alias): "
                           "editing it would change every key that uses it")
        if node.style in ("|", ">"):
            raise FixError(f"{op.keyword} is a block scalar (| or >): edit it by hand")
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
        edits = [_edit(path, lines, start, end, new)]
    else:
        edits = _yaml_add(node, keys[depth:], op.text, text, kind, lines, path)
    _check_yaml_result(apply_edits(text, edits), keys, _scalar_text(op.text, kind), kind)
    return edits


def _check_yaml_result(new_text: str, keys: list[str], scalar: str, kind: str) -> None:
    """Refuse a ``yaml_set`` whose result does not read as intended: the key path ``keys``
    must lead, in the new text composed again, to a scalar whose value is the new scalar's
    (a key added to another mapping than meant, or a value that did not land where it was
    written, is refused; the fixer then offers nothing).

    Raises:
        FixError: the new text does not parse, or the path does not hold the value.
    """
    import yaml

    root = _yaml_root(new_text)
    node = root
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            node = None
            break
        found = None
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                found = value_node
        node = found
    expected = yaml.compose(f"k: {scalar}\n", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    want = expected.value[0][1]
    if not isinstance(node, yaml.ScalarNode) or node.tag != want.tag \
            or _scalar_key(node) != _scalar_key(want):
        raise FixError(f"{'.'.join(keys)}: the edit would not set the value where it is read")


def _scalar_key(node: Any) -> Any:
    """What a YAML scalar node means, for :func:`_check_yaml_result`: a boolean's truth (YAML
    1.1 spells it ``true``/``True``/``yes``/``on``..., and the fixer keeps the file's spelling:
    :func:`_scalar_text`), else its text."""
    if node.tag == "tag:yaml.org,2002:bool":
        return node.value.lower() in ("true", "yes", "on", "y")
    return node.value


_PLAIN_ITEM = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
"""A list item written unquoted (a module name): YAML reads it back as the same string."""


def _yaml_sequence(node: Any, op: EditOp, text: str, kind: str, lines: _Lines, path: str
                   ) -> list[TextEdit]:
    """A list's items replaced by those of ``op.text`` (a flow list of strings, ``["a", "b"]``)
    in the list's own layout: a flow list stays one (``[a, b]``), a block list gets one
    ``- item`` line per item at the first item's column; items keep the first item's quoting
    (plain where the old one was plain and the name needs no quotes). Refused (FixError) for
    an empty new list, items that are not strings, and a block list with a comment between
    its items (it would be lost)."""
    import yaml

    try:
        items = yaml.safe_load(op.text)
    except yaml.YAMLError:
        items = None
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise FixError(f"{op.keyword}: not a list of names: {op.text[:80]!r}")
    if not node.value:
        raise FixError(f"{op.keyword}: an empty list")
    style = getattr(node.value[0], "style", None)

    def item(name: str) -> str:
        if kind == "json" or style == '"' or not _PLAIN_ITEM.match(name):
            return json.dumps(name, ensure_ascii=False) if style != "'" or "'" in name \
                else f"'{name}'"
        return f"'{name}'" if style == "'" else name

    if node.flow_style or kind == "json":
        start, end = node.start_mark.index, node.end_mark.index
        new = "[" + ", ".join(item(i) for i in items) + "]"
    else:
        start, end = node.start_mark.index, node.value[-1].end_mark.index
        if "#" in text[start:end]:
            raise FixError(f"{op.keyword}: a comment between the list's items would be lost")
        column = node.start_mark.column
        new = (newline_of(text) + " " * column).join(f"- {item(i)}" for i in items)
    if text[start:end] == new:
        return []
    return [_edit(path, lines, start, end, new)]


def _yaml_add(mapping: Any, keys: list[str], value: str, text: str, kind: str, lines: _Lines,
              path: str) -> list[TextEdit]:
    nl = newline_of(text)
    new_value = _scalar_text(value, kind)
    if mapping.flow_style or kind == "json":
        return _flow_add(mapping, keys, new_value, text, kind, lines, path)
    if not mapping.value:
        raise FixError("an empty block mapping")
    last_key, last = mapping.value[-1]
    if last.start_mark.index < last_key.end_mark.index:
        # `c: *b`: the alias's node is the anchor's, its marks are there, not after `c:`
        raise FixError("the mapping ends with an alias (*name): where it ends is not known")
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

_LAUNCHERS = ("python", "python3", "torchrun", "accelerate", "deepspeed", "llamafactory-cli",
              "axolotl", "tune", "litgpt", "uv", "srun", "mpirun", "composer")
"""Commands that start a training run (a segment holding one, or a ``*.py`` word, is the
run's command when a line holds several)."""


def _shell_words(line: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_operator)`` of each word of one line, read by the extractor's own
    shell reader (:func:`lintlora.extract.launch_shell_syntax.tokenize`: bounded, quotes and
    ``$(...)`` nesting followed, nothing run), so the option edited is the one the launch was
    read with. A control operator (``&&``, ``;``, ``|``...) is a word of its own, and so is a
    redirection (``>``; its target is the next word).

    Raises:
        FixError: the line cannot be read (an unterminated quote, a limit).
    """
    from lintlora.extract.launch_shell_syntax import ShellError, tokenize

    try:
        tokens = tokenize(line)
    except ShellError as exc:
        raise FixError(f"the launch line cannot be read: {exc.message}") from None
    return [(tok.start, tok.start + len(tok.text), tok.kind == "op")
            for tok in tokens if tok.kind in ("word", "op", "redir")]


def _run_segment(segments: list[list[tuple[int, int]]], text: str, opt: str
                 ) -> list[tuple[int, int]]:
    """The words of the command a ``launch_set`` edits among the commands of one logical line
    (split at control operators): the last one naming the option, else the one command, else
    the last that starts a run (:data:`_LAUNCHERS`, a ``*.py`` word).

    Raises:
        FixError: no command, or several and none recognisable as the run.
    """
    segments = [seg for seg in segments if seg]
    if not segments:
        raise FixError("no command on the launch line")
    naming = [seg for seg in segments
              if any(text[s:e] == opt or text[s:e].startswith(opt + "=") for s, e in seg)]
    if naming:
        return naming[-1]
    if len(segments) == 1:
        return segments[0]
    runs = [seg for seg in segments
            if any(os.path.basename(text[s:e]) in _LAUNCHERS or text[s:e].endswith(".py")
                   for s, e in seg)]
    if not runs:
        raise FixError("several commands on the launch line, none recognisably the run")
    return runs[-1]


_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
"""A negative number (``-1``, ``-0.5``, ``-1e-3``): an option's value, not an option."""


def _launch_set(op: EditOp, text: str, path: str, kind: str = "shell") -> list[TextEdit]:
    """The option's value set in the launch command at the span's line (module docstring).

    The option's *last* occurrence is edited (argparse and HfArgumentParser keep the last
    value given); a value word may be a negative number (``--max_steps -1``); in a line of
    several commands (``cd x && python t.py ...``), only the run's (:func:`_run_segment`). The
    new value is one shell word (``shlex.quote`` unless plain) without control characters;
    in a YAML file (a workflow's ``run:`` step) also without ``#``, ``:``, quotes or
    backslashes, which would change the YAML scalar around it.

    Raises:
        FixError: no option name, a value that is not one word here, no command.
    """
    if not op.keyword or not re.fullmatch(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*", op.keyword):
        raise FixError(f"a launch_set edit without an option name: {op.keyword!r}")
    if not (op.text or "").isprintable():
        raise FixError(f"a launch value with control characters: {op.text[:80]!r}")
    lines = _Lines(text)
    first = op.span.line
    if not 1 <= first <= lines.count:
        raise FixError(f"line {first} is outside the file")
    last = first
    while last < lines.count and lines.line_text(last).endswith("\\"):
        last += 1
    value = op.text if re.fullmatch(r"[A-Za-z0-9_.,:/@%+=-]+", op.text or "x") else shlex.quote(op.text)
    if kind == "yaml" and re.search(r"[#:'\"\\]", value):
        raise FixError(f"a launch value that would change the YAML around it: {value[:80]!r}")
    segments: list[list[tuple[int, int]]] = [[]]  # the commands' words, offsets in the text
    for number in range(first, last + 1):
        line_text = lines.line_text(number)
        body = line_text[:-1] if line_text.endswith("\\") else line_text
        base = lines.starts[number - 1]
        for s, e, operator in _shell_words(body):
            if operator:
                segments.append([])
            else:
                segments[-1].append((base + s, base + e))
    words = _run_segment(segments, text, op.keyword)
    opt = op.keyword
    for i in range(len(words) - 1, -1, -1):
        s, e = words[i]
        word = text[s:e]
        if word == opt:
            if i + 1 < len(words):
                following = text[words[i + 1][0]:words[i + 1][1]]
                if not following.startswith("-") or _NUMBER.fullmatch(following):
                    vs, ve = words[i + 1]
                    if following == value:
                        return []
                    return [_edit(path, lines, vs, ve, value)]
            return [_edit(path, lines, e, e, f" {value}")]  # a bare flag gets the value
        if word.startswith(opt + "="):
            vs = s + len(opt) + 1
            if text[vs:e] == value:
                return []
            return [_edit(path, lines, vs, e, value)]
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
        others = "\n".join(_cell_source(c) for i, c in enumerate(cells, 1) if i != cell)
        out[cell] = _resolve_ops(cell_ops, _cell_source(cells[cell - 1]), "python",
                                 path=cell_ops[0].span.path, others=others)
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
        new = split_lines(new_source)
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
    taken_items: list[tuple[int, dict, dict]] = []  # (outcome index, its file and cell edits)
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
            for path, cells in pending_cells.items():
                for cell, items in cells.items():
                    accepted.setdefault(f"{path}\0{cell}", []).extend((s, e) for s, e, _ in items)
            taken_items.append((len(result.outcomes), pending_flat, pending_cells))
            result.outcomes.append(FixOutcome(fix, "applied", tuple(resolved)))
        except (FixError, OSError, RecursionError) as exc:
            result.outcomes.append(FixOutcome(fix, "error", (), str(exc) or type(exc).__name__))
        except Exception as exc:  # noqa: BLE001 - a bug here must not stop the other fixes
            result.outcomes.append(FixOutcome(
                fix, "error", (), f"internal error placing the fix ({type(exc).__name__}: "
                                  f"{str(exc)[:200]}); please report it"))
    _compose(result, taken_items)
    return result


def _compose(result: FixPlan, taken: list[tuple[int, dict, dict]]) -> None:
    """Fill ``result.new`` with the accepted fixes' edits, then check each changed file still
    parses as its kind did (:func:`_parses`). In a file the fixes together would leave
    unparsable, the fixes that break it alone are dropped (all of that file's, when none
    does alone): their outcomes become ``"error"`` ("would leave the file unparsable"), and
    the texts are composed again without them (a fix is applied whole or not at all, in
    every file it names). At most one round per fix."""
    while True:
        result.new.clear()
        flat: dict[str, list[TextEdit]] = {}
        cell_level: dict[str, dict[int, list[TextEdit]]] = {}
        for _index, pending_flat, pending_cells in taken:
            for path, items in pending_flat.items():
                flat.setdefault(path, []).extend(e for _s, _e, e in items)
            for path, cells in pending_cells.items():
                for cell, items in cells.items():
                    cell_level.setdefault(path, {}).setdefault(cell, []).extend(
                        e for _s, _e, e in items)
        for path, edits in flat.items():
            result.new[path] = apply_edits(result.old[path], edits)
        for path, by_cell in cell_level.items():
            result.new[path] = apply_edits(result.old[path],
                                           _notebook_edits(result.old[path], by_cell, path))
        broken = {path for path in result.changed()
                  if not _parses(result.new[path], result.kinds[path])
                  and _parses(result.old[path], result.kinds[path])}
        if not broken:
            return
        touching = [item for item in taken if broken & (set(item[1]) | set(item[2]))]
        # the fixes that break a file alone go; when none does alone, all those in it go
        bad = [item for item in touching if not _item_parses(result, item)] or touching
        for index, _flat, _cells in bad:
            old = result.outcomes[index]
            result.outcomes[index] = FixOutcome(
                old.fix, "error", (), "not applied: it would leave the file unparsable")
        taken = [item for item in taken if item not in bad]


def _item_parses(result: FixPlan, item: tuple[int, dict, dict]) -> bool:
    """Whether one accepted fix alone leaves every file it names parsing (:func:`_parses`)."""
    _index, pending_flat, pending_cells = item
    for path, items in pending_flat.items():
        new = apply_edits(result.old[path], [e for _s, _e, e in items])
        if not _parses(new, result.kinds[path]) and _parses(result.old[path], result.kinds[path]):
            return False
    for path, cells in pending_cells.items():
        by_cell = {cell: [e for _s, _e, e in items] for cell, items in cells.items()}
        new = apply_edits(result.old[path], _notebook_edits(result.old[path], by_cell, path))
        if not _parses(new, result.kinds[path]) and _parses(result.old[path], result.kinds[path]):
            return False
    return True


_PARSES: dict[tuple[bytes, str], bool] = {}
""":func:`_parses`' answers by text digest and kind (at most :data:`_PARSES_MAX`; texts not kept)."""

_PARSES_MAX = 256


def _parses(text: str, kind: str) -> bool:
    """Whether ``text`` parses as a file of ``kind`` (:func:`_parses_uncached`), memoized by
    the text's BLAKE2 digest (a report resolves each finding's fix against the same file)."""
    import hashlib

    key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), kind)
    if key not in _PARSES:
        if len(_PARSES) >= _PARSES_MAX:
            _PARSES.clear()
        _PARSES[key] = _parses_uncached(text, kind)
    return _PARSES[key]


def _parses_uncached(text: str, kind: str) -> bool:
    """Whether ``text`` parses as a file of ``kind``: Python with LibCST (the parser the
    extractor and the fixer use, after the extractor's preflight: :func:`_parse_python`), a notebook and JSON with :func:`json.loads` (a notebook's
    code cells with LibCST too, a cell holding IPython magics excepted), YAML with PyYAML's
    composer (one document, as :func:`_yaml_root`). A shell file is not checked."""
    try:
        if kind == "python":
            _parse_python(text)
        elif kind == "notebook":
            doc = json.loads(text.lstrip("\ufeff"))
            for cell in doc.get("cells", ()) if isinstance(doc, dict) else ():
                if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                    continue
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else str(source)
                if re.search(r"(?m)^[ \t]*[%!?]", source):
                    continue  # IPython syntax LibCST does not read
                _parse_python(source)
        elif kind == "json":
            json.loads(text.lstrip("\ufeff"))
        elif kind == "yaml":
            _yaml_root(text)
    except Exception:  # noqa: BLE001 - any parser failure (syntax, recursion, FixError) is "no"
        return False
    return True
