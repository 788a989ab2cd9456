"""Parse-time diagnostics for Python sources: refusing input that would crash the parser, and
locating syntax errors precisely."""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

from lintlora.extract import ExtractError

__all__ = ["preflight", "syntax_error"]

_MAX_PAREN_DEPTH = 200     # CPython's tokenizer limit ("too many nested parentheses")
_MAX_EXPR_DEPTH = 500      # LibCST's native parser overflows its stack near 5,000-10,000
                           # and slows down badly from about 1,000
_SUSPICIOUS_OPERATORS = 1000   # occurrences of one operator character that call for a check
_SUSPICIOUS_COMMON = 3000      # the same for characters every script is full of
_NOT_BRACKETS = r"[^()\[\]{}]+"  # compiled on use (``re``'s cache): suspicious files only


def _bracket_depth(brackets: str) -> int:
    """The deepest nesting of a string of bracket characters."""
    depth = deepest = 0
    for ch in brackets:
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def _suspicious(source: str) -> bool:
    """Cheap counts that select a file CPython refuses whose refusal should stand (see
    :func:`preflight`): deep brackets, or thousands of one operator or keyword."""
    if source.count("(") + source.count("[") + source.count("{") > _MAX_PAREN_DEPTH:
        if _bracket_depth(re.sub(_NOT_BRACKETS, "", source)) > _MAX_PAREN_DEPTH:
            return True
    return (any(source.count(c) > _SUSPICIOUS_OPERATORS for c in "+-*/%|&^@<>~")
            or any(source.count(c) > _SUSPICIOUS_COMMON for c in ".,\"'(=[:")
            or any(source.count(w) > _SUSPICIOUS_OPERATORS
                   for w in ("not ", " and ", " or ", "lambda", " if ", "await ")))


_NESTING_LIMITS = ("too many nested parentheses", "too many levels of indentation",
                   "too many indentation levels", "too many statically nested blocks")


def _libcst_extra_depth(node: Any) -> int:
    """Levels LibCST nests where CPython's AST is flat: ``a or b or c`` is one ``BoolOp`` but
    a chain of binary ``BooleanOperation`` nodes, and a dotted name in an import is a string
    in the AST but a chain of ``Attribute`` nodes (libcst 1.9, ``libcst/_nodes``)."""
    import ast

    if isinstance(node, ast.BoolOp):
        return max(len(node.values) - 2, 0)
    if isinstance(node, ast.alias):
        return node.name.count(".")
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").count(".")
    return 0


def preflight(source: str, line_map: Callable | None) -> None:
    """Refuse, with a diagnostic, input that would crash LibCST's native parser.

    The parser is a recursive-descent parser running on the C stack: thousands of nested
    brackets, or an expression chaining thousands of operators, overflow it and kill the
    process, which no ``except`` can catch (measured with LibCST 1.9: 1,500 nested brackets,
    a 10,000-term sum, 5,000 chained ``lambda:``, 10,000 chained ``and``, ``import`` of a
    10,000-part dotted name); from about 1,000 levels it is also very slow (3,000 chained
    subscripts ``a[0][0]...``: 20 s). Such files are never real training scripts.

    Every file is therefore parsed first by CPython's own parser (C, with recursion guards; it
    builds the AST only and runs nothing; about 7% of the extraction time, measured on
    generated scripts of 5,000-40,000 lines):

    - it runs out of recursion, or names a nesting limit (200 brackets, 100 indentation
      levels): refused;
    - it parses: a file nested deeper than :data:`_MAX_EXPR_DEPTH` (statements through their
      blocks, then expressions, counting the levels LibCST adds where the AST is flat:
      :func:`_libcst_extra_depth`) is refused; only long statements are walked
      (:func:`_too_deep`);
    - another syntax error: refused with CPython's message when cheap counts make the file
      suspicious (:func:`_suspicious`); otherwise LibCST decides, since it may accept syntax
      newer than the running Python.

    Raises:
        ExtractError: ``LL000`` with the reason, at the place CPython names when it names one.
    """
    import ast

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError as err:
        msg = err.msg or "invalid syntax"
        if not (any(limit in msg for limit in _NESTING_LIMITS) or _suspicious(source)):
            return
        line, col = err.lineno, err.offset
        cell = None
        if line is not None and line_map is not None:
            cell, line = line_map(line)
        raise ExtractError(f"syntax error: {msg}", line, col, cell=cell) from None
    except ValueError:
        if "\x00" in source:  # Python 3.10/3.11 raise ValueError for NUL bytes
            line = source.count("\n", 0, source.index("\x00")) + 1
            cell = None
            if line_map is not None:
                cell, line = line_map(line)
            raise ExtractError("the file contains NUL bytes: it is binary, not Python source",
                               line, None, cell=cell) from None
        raise ExtractError("the file is nested too deeply to parse", None, None) from None
    except (RecursionError, MemoryError, OverflowError):
        raise ExtractError("the file is nested too deeply to parse", None, None) from None
    node = _too_deep(tree, source)
    if node is not None:
        line = getattr(node, "lineno", None)
        cell = None
        if line is not None and line_map is not None:
            cell, line = line_map(line)
        raise ExtractError(f"an expression is nested more than {_MAX_EXPR_DEPTH} levels "
                           "deep; lintlora does not analyse files like this", line,
                           None, cell=cell)


_DEPTH_MARGIN = 16
"""AST levels a statement adds without source characters of its own (``Expr``, ``Load``...),
with room to spare: below this, every AST level takes at least one character of its statement
(an operator, a bracket, a dot, a keyword), so a short statement cannot be deep."""


def _too_deep(tree: Any, source: str) -> Any:
    """The first node found nested deeper than :data:`_MAX_EXPR_DEPTH`, or ``None``.

    Iterative. Statements are followed through their blocks (an ``elif`` chain nests too); the
    expressions of a simple statement, and those of a compound statement's header (a
    decorator, a condition), are walked only when their lines hold more characters than the
    depth they could reach (``n`` characters are at most ``n`` plus :data:`_DEPTH_MARGIN`
    levels deep), so ordinary files cost one pass over their statements.
    """
    import ast
    from itertools import accumulate

    ends = list(accumulate(len(line) + 1 for line in
                           source.replace("\r\n", "\n").replace("\r", "\n").split("\n")))

    def lines_chars(first: int | None, last: int | None) -> int:  # an upper bound
        if first is None or first > len(ends):  # (line counting that disagrees: no bound)
            return len(source)
        last = min(max(last or first, first), len(ends))
        return ends[last - 1] - (ends[first - 2] if first >= 2 else 0)

    def chars(node: Any) -> int:  # characters of the lines the node covers
        return lines_chars(getattr(node, "lineno", None), getattr(node, "end_lineno", None))

    statements = [(s, 1) for s in tree.body]
    while statements:
        node, depth = statements.pop()
        if depth > _MAX_EXPR_DEPTH:
            return node
        if "body" in node._fields:  # compound: walk the header, follow the blocks
            body = getattr(node, "body", None) or ()
            # a header part without a position of its own (a function's ``arguments``) lies
            # on the lines from the statement's first to its block's first
            header = lines_chars(getattr(node, "lineno", None),
                                 getattr(body[0], "lineno", None) if body else None)
            for name in node._fields:
                value = getattr(node, name, None)
                if name in ("body", "orelse", "finalbody", "handlers", "cases"):
                    statements.extend((s, depth + 1) for s in value or ())
                    continue
                for child in value if isinstance(value, list) else (value,):
                    if not isinstance(child, ast.AST):
                        continue
                    bound = chars(child) if hasattr(child, "lineno") else header
                    if depth + 1 + bound + _DEPTH_MARGIN > _MAX_EXPR_DEPTH:
                        found = _deepest_expression(child, depth + 1)
                        if found is not None:
                            return found
        elif depth + chars(node) + _DEPTH_MARGIN > _MAX_EXPR_DEPTH:
            found = _deepest_expression(node, depth)
            if found is not None:
                return found
    return None


def _deepest_expression(root: Any, depth: int) -> Any:
    """The first node under ``root`` (itself at ``depth``) deeper than the limit, or ``None``;
    counts the levels LibCST adds (:func:`_libcst_extra_depth`)."""
    import ast

    stack = [(root, depth)]
    while stack:
        node, depth = stack.pop()
        depth += _libcst_extra_depth(node)
        if depth > _MAX_EXPR_DEPTH:
            return node
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    return None


def syntax_error(exc: Any, source: str, line_map: Callable | None) -> ExtractError:
    """An LL000 error for a file LibCST cannot parse.

    LibCST's native parser often places the error at the token after the fault (or at line 1
    for tokenizer errors), so the location and wording come from CPython's own parser when it
    agrees the file is invalid (``ast.parse`` only parses; nothing is run).
    """
    import ast

    message = getattr(exc, "message", str(exc))
    line: int | None = getattr(exc, "raw_line", None)
    col: int | None = None
    m = re.search(r"error at (\d+):(\d+): (.*)", message, re.S)
    if m:
        line, col = int(m.group(1)), int(m.group(2)) + 1
        message = m.group(3)
    else:
        message = re.sub(r"^(tokenizer|parser) error: ", "", message)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code
            ast.parse(source)
    except SyntaxError as err:
        if err.lineno is not None:
            line, col = err.lineno, err.offset
            message = err.msg or message
    except (ValueError, RecursionError, MemoryError, OverflowError):
        pass
    message = message.strip().splitlines()[0] if message.strip() else "invalid syntax"
    if len(message) > 160:
        message = message[:157] + "..."
    cell = None
    if line is not None and line_map is not None:
        cell, line = line_map(line)
    return ExtractError(f"syntax error: {message}", line, col, cell=cell)

