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
_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")


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


def preflight(source: str, line_map: Callable | None) -> None:
    """Refuse, with a diagnostic, input that would crash LibCST's native parser.

    The parser is a recursive-descent parser running on the C stack: thousands of nested
    brackets, or an expression chaining thousands of operators, overflow it and kill the
    process, which no ``except`` can catch (measured with LibCST 1.9: 1,500 nested brackets or
    a 10,000-term sum). Such files are never real training scripts; CPython itself refuses more
    than 200 nested brackets. Cheap counts select the rare file worth checking (brackets inside
    strings are counted too, which only costs a check), and CPython's parser, which has
    recursion guards, measures it.
    """
    import ast

    suspicious = False
    if source.count("(") + source.count("[") + source.count("{") > _MAX_PAREN_DEPTH:
        suspicious = _bracket_depth(_NOT_BRACKETS.sub("", source)) > _MAX_PAREN_DEPTH
    if not suspicious:
        suspicious = (any(source.count(c) > _SUSPICIOUS_OPERATORS for c in "+-*/%|&^@<>~")
                      or any(source.count(c) > _SUSPICIOUS_COMMON for c in ".,\"'(=")
                      or source.count("not ") > _SUSPICIOUS_OPERATORS)
    if not suspicious:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError as err:
        line, col = err.lineno, err.offset
        cell = None
        if line is not None and line_map is not None:
            cell, line = line_map(line)
        raise ExtractError(f"syntax error: {err.msg}", line, col, cell=cell) from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise ExtractError("the file is nested too deeply to parse", None, None) from None
    # deepest expression nesting, iteratively
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > _MAX_EXPR_DEPTH:
                line = getattr(node, "lineno", None)
                cell = None
                if line is not None and line_map is not None:
                    cell, line = line_map(line)
                raise ExtractError(f"an expression is nested more than {_MAX_EXPR_DEPTH} levels "
                                   "deep; lintlora does not analyse files like this", line,
                                   None, cell=cell)
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))


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

