"""Parse-time diagnostics for Python sources: refusing input that would crash the parser, and
locating syntax errors precisely."""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

from lintlora.extract import ExtractError

__all__ = ["preflight", "syntax_error", "recursion_room", "LIMIT_CODE"]

LIMIT_CODE = "LL998"
"""The code of a valid file lintlora does not analyse (a limit of lintlora or of LibCST, not a
syntax error: CPython parses it)."""

_MAX_PAREN_DEPTH = 200     # CPython's tokenizer limit ("too many nested parentheses")
_MAX_EXPR_DEPTH = 500      # LibCST's native parser overflows its stack near 5,000-10,000
                           # and slows down badly from about 1,000 (a 2,000-term sum: 4.5 s,
                           # 4,000 terms: 28 s, LibCST 1.9 here)
_MAX_LIBCST_DEPTH = 2_000  # every LibCST level, the cheap ones included: each link of an
                           # ``elif`` chain and each part of an implicitly concatenated string
                           # nest one level in LibCST but parse fast (2,000 parts: 0.06 s,
                           # 2,000 elifs: 0.7 s); LibCST's parser itself refuses a few
                           # thousand string parts (a ParserSyntaxError)
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


def recursion_room():
    """A context manager giving LibCST's Python side (code generation for positions, visitors)
    the recursion depth the preflight admits: about two Python frames per LibCST level, for
    :data:`_MAX_LIBCST_DEPTH` levels (a 520-part prompt nests 520 levels: past Python's
    default limit of 1,000 frames).

    Raised only in the main thread, where the C stack is the process's (8 MiB by default on
    Linux): measured, 10,000 nested Python calls with a ``with`` block each are safe there on
    CPython 3.10 (which recurses on the C stack per call; 30,000 crash) and on 3.11+ (which
    does not). Other threads keep the limit they have (a deep file is then refused with
    ``LL998``, as before)."""
    import contextlib
    import sys
    import threading

    @contextlib.contextmanager
    def room():
        before = sys.getrecursionlimit()
        wanted = 3 * _MAX_LIBCST_DEPTH + 1_000
        raise_it = threading.current_thread() is threading.main_thread() and before < wanted
        if raise_it:
            sys.setrecursionlimit(wanted)
        try:
            yield
        finally:
            if raise_it:
                sys.setrecursionlimit(before)

    return room()


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
      :func:`_libcst_extra_depth`), or deeper than :data:`_MAX_LIBCST_DEPTH` counting also the
      levels that are cheap for LibCST (``elif`` links, parts of implicitly concatenated
      strings), is refused with ``LL998``: the file is valid Python, so this is a limit of
      lintlora, not a syntax error; only long statements are walked (:func:`_too_deep`);
    - another syntax error: refused with CPython's message when cheap counts make the file
      suspicious (:func:`_suspicious`); otherwise LibCST decides, since it may accept syntax
      newer than the running Python.

    Raises:
        ExtractError: ``LL000`` with the reason, at the place CPython names when it names one
            (CPython refuses the file); ``LL998`` for a valid file nested too deeply for
            LibCST.
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
    found = _too_deep(tree, source)
    if found is not None:
        node, what = found
        line = getattr(node, "lineno", None)
        cell = None
        if line is not None and line_map is not None:
            cell, line = line_map(line)
        raise ExtractError(f"too deeply nested to analyse: {what}; this is a limit of lintlora "
                           "(of LibCST, the parser it uses), not a syntax error, and nothing in "
                           "the file was checked", line, None, code=LIMIT_CODE, cell=cell)


_DEPTH_MARGIN = 16
"""AST levels a statement adds without source characters of its own (``Expr``, ``Load``...),
with room to spare: below this, every AST level takes at least one character of its statement
(an operator, a bracket, a dot, a keyword), so a short statement cannot be deep."""


_DEEP_EXPRESSION = f"an expression nested more than {_MAX_EXPR_DEPTH} levels deep"
_DEEP_LIBCST = (f"more than {_MAX_LIBCST_DEPTH} levels deep for LibCST (counting each `elif` "
                "and each part of an implicitly concatenated string as a level)")


def _too_deep(tree: Any, source: str) -> tuple[Any, str] | None:
    """The first node found nested too deeply, with which limit it passes, or ``None``.

    Two depths are followed: the levels that cost LibCST's parser (``hard``: blocks,
    operators, brackets, calls; at most :data:`_MAX_EXPR_DEPTH`) and every level of LibCST's
    tree (``soft``: also each ``elif`` link and each implicitly concatenated string part; at
    most :data:`_MAX_LIBCST_DEPTH`).

    Iterative. Statements are followed through their blocks (an ``elif`` chain nests too); the
    expressions of a simple statement, and those of a compound statement's header (a
    decorator, a condition), are walked only when their lines hold more characters than the
    depth they could reach (``n`` characters are at most ``n`` plus :data:`_DEPTH_MARGIN`
    levels deep), so ordinary files cost one pass over their statements.
    """
    import ast
    from itertools import accumulate

    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    ends = list(accumulate(len(line) + 1 for line in lines))

    def lines_chars(first: int | None, last: int | None) -> int:  # an upper bound
        if first is None or first > len(ends):  # (line counting that disagrees: no bound)
            return len(source)
        last = min(max(last or first, first), len(ends))
        return ends[last - 1] - (ends[first - 2] if first >= 2 else 0)

    def chars(node: Any) -> int:  # characters of the lines the node covers
        return lines_chars(getattr(node, "lineno", None), getattr(node, "end_lineno", None))

    def long(hard: int, soft: int, bound: int) -> bool:  # could it be too deep?
        return (hard + bound + _DEPTH_MARGIN > _MAX_EXPR_DEPTH
                or soft + bound + _DEPTH_MARGIN > _MAX_LIBCST_DEPTH)

    def parts(node: Any) -> int:  # string literals of an implicit concatenation
        return _string_parts(lines, node)

    statements = [(s, 1, 1) for s in tree.body]
    while statements:
        node, hard, soft = statements.pop()
        if hard > _MAX_EXPR_DEPTH:
            return node, _DEEP_EXPRESSION
        if soft > _MAX_LIBCST_DEPTH:
            return node, _DEEP_LIBCST
        if "body" in node._fields:  # compound: walk the header, follow the blocks
            body = getattr(node, "body", None) or ()
            # a header part without a position of its own (a function's ``arguments``) lies
            # on the lines from the statement's first to its block's first
            header = lines_chars(getattr(node, "lineno", None),
                                 getattr(body[0], "lineno", None) if body else None)
            for name in node._fields:
                value = getattr(node, name, None)
                if name in ("body", "orelse", "finalbody", "handlers", "cases"):
                    # an elif (an ``if`` alone in an ``else``) nests in LibCST, cheaply
                    elif_link = (name == "orelse" and isinstance(node, ast.If)
                                 and len(value) == 1 and isinstance(value[0], ast.If))
                    statements.extend((st, hard + (not elif_link), soft + 1)
                                      for st in value or ())
                    continue
                for child in value if isinstance(value, list) else (value,):
                    if not isinstance(child, ast.AST):
                        continue
                    bound = chars(child) if hasattr(child, "lineno") else header
                    if long(hard + 1, soft + 1, bound):
                        found = _deepest_expression(child, hard + 1, soft + 1, parts)
                        if found is not None:
                            return found
        elif long(hard, soft, chars(node)):
            found = _deepest_expression(node, hard, soft, parts)
            if found is not None:
                return found
    return None


def _string_parts(lines: list[str], node: Any) -> int:
    """How many string literals a ``str``/``bytes`` constant or an f-string is written with
    (``"a" "b"`` is one constant in CPython's AST, two nested nodes in LibCST's), counted over
    the lines it covers (a literal sharing its first or last line is counted too: an
    over-estimate); 1 when it covers one line with at most two quote pairs. Linear in the
    lines' length: triple-quoted strings found with ``str.find``, the others with one pass of
    a pattern that never backtracks far (:mod:`lintlora.extract.limits`)."""
    from lintlora.extract.limits import STRING_OR_COMMENT, long_strings

    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if first is None or last is None:
        return 1
    text = "\n".join(lines[first - 1:last])
    if first == last and text.count('"') + text.count("'") <= 4:
        return 1
    spans = long_strings(text)
    count, pos = len(spans), 0
    for start, end in spans + [(len(text), len(text))]:
        count += sum(1 for m in STRING_OR_COMMENT.finditer(text, pos, start)
                     if not m.group().startswith("#"))
        pos = end
    return max(count, 1)


def _deepest_expression(root: Any, hard: int, soft: int, parts: Callable[[Any], int]
                        ) -> tuple[Any, str] | None:
    """The first node under ``root`` (itself at depths ``hard``/``soft``: see
    :func:`_too_deep`) deeper than a limit, with the limit's wording, or ``None``; counts the
    levels LibCST adds (:func:`_libcst_extra_depth`, and ``parts`` for string constants)."""
    import ast

    stack = [(root, hard, soft, False, root)]
    while stack:
        node, hard, soft, in_fstring, at = stack.pop()
        if hasattr(node, "lineno"):
            at = node  # the nearest node with a position (``Load`` has none)
        extra = _libcst_extra_depth(node)
        hard, soft = hard + extra, soft + extra
        joined = isinstance(node, ast.JoinedStr)
        if joined or (not in_fstring and isinstance(node, ast.Constant)
                      and isinstance(node.value, (str, bytes))):
            soft += parts(node) - 1  # (an f-string's own text pieces are its parts)
        if hard > _MAX_EXPR_DEPTH:
            return at, _DEEP_EXPRESSION
        if soft > _MAX_LIBCST_DEPTH:
            return at, _DEEP_LIBCST
        for child in ast.iter_child_nodes(node):
            # the text pieces of an f-string are its own parts, counted with it
            stack.append((child, hard + 1, soft + 1, joined, at))
    return None


def syntax_error(exc: Any, source: str, line_map: Callable | None) -> ExtractError:
    """The error for a file LibCST cannot parse: ``LL000`` when CPython agrees the file is
    invalid, ``LL998`` when CPython parses it (a limit of LibCST, such as its refusal of a few
    thousand implicitly concatenated strings, or syntax newer than it knows: not the user's
    syntax error).

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
    valid = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code
            ast.parse(source)
        valid = True
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
    if valid:
        return ExtractError(f"valid Python that LibCST, the parser lintlora uses, cannot read "
                            f"({message}); a limit of lintlora, not a syntax error: nothing in "
                            "the file was checked", line, col, code=LIMIT_CODE, cell=cell)
    return ExtractError(f"syntax error: {message}", line, col, cell=cell)

