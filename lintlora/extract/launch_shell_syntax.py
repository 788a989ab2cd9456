"""The syntax half of the bounded shell reader (:mod:`lintlora.extract.launch_shell`): tokens
and the tree. It never runs anything.

1. :func:`tokenize`: words (kept as written, quotes included), operators, newlines and
   redirections, with line continuations, comments and here-documents; nested ``$(``, ``${``,
   backticks and quotes are followed with an explicit stack (no recursion) up to
   ``MAX_NESTING`` levels; ``[[ ... ]]`` is one word (its ``(``, ``|``, ``<`` are not operators).
   An unterminated quote is a problem at the place that opened it.
2. :func:`parse`: a small recursive-descent parser into simple commands, ``for`` loops,
   ``if``/``case`` branches, ``while``/``until`` loops, ``{ }``/``( )`` groups, ``(( ))``
   (skipped) and function definitions, its depth bounded by ``MAX_NESTING``.

Errors are :class:`ShellError` with the offset of the problem.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from lintlora.extract.launch_model import LIMIT_CODE, MAX_NESTING, MAX_TOKENS, SYNTAX_CODE

__all__ = ["ShellError", "LineMap", "Tok", "tokenize", "parse", "Simple", "ArrayAssign", "For",
           "Branches", "Group", "FuncDef", "NAME", "ASSIGN"]


class ShellError(Exception):
    """Text the reader cannot read: ``offset`` into the text, ``code`` LL000 or LL998."""

    def __init__(self, message: str, offset: int, code: str = SYNTAX_CODE) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.code = code


class LineMap:
    """Offsets of a text to 1-based (line, column), with a first line ``base`` (a recipe line
    or a workflow ``run:`` block sits inside a larger file). ``exact_columns``: the text is
    the file's own characters, so a column is the file's (not so for a text rewritten before
    it is read: a YAML block scalar without its indentation, a make-expanded recipe)."""

    def __init__(self, text: str, base: int = 1, column_base: int = 1,
                 exact_columns: bool = True) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.base = base
        self.column_base = column_base
        self.exact_columns = exact_columns

    def line(self, offset: int) -> int:
        return bisect_right(self._starts, offset) - 1 + self.base

    def column(self, offset: int) -> int:
        index = bisect_right(self._starts, offset) - 1
        return offset - self._starts[index] + (self.column_base if index == 0 else 1)


# ---------------------------------------------------------------------------------------------
# 1. tokens

@dataclass(frozen=True)
class Tok:
    kind: str  # "word", "op", "nl", "redir"
    text: str
    start: int


_OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "(", ")")
_REDIRECTS = ("&>>", "<<<", "<<-", "<<", ">>", "<&", ">&", "&>", ">|", "<>", "<", ">")
_BREAK = set(" \t\n;&|<>()")
_HEREDOC = re.compile(r"<<-?$")
_DOUBLE_BRACKET_END = re.compile(r"(?<=[ \t])\]\](?=[ \t\n;&|)]|$)")


def _scan_word(text: str, i: int) -> int:
    """The end of the word starting at ``i`` (quotes and ``$(``/``${``/backtick nesting
    followed with a stack). Raises :class:`ShellError` on an unterminated construct or
    nesting beyond ``MAX_NESTING``."""
    n = len(text)
    stack: list[tuple[str, int]] = []  # (closer kind, offset opened)
    while i < n:
        c = text[i]
        top = stack[-1][0] if stack else None
        if top == "'":
            if c == "'":
                stack.pop()
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if top == "`":
            if c == "`":
                stack.pop()
            i += 1
            continue
        if top == '"':
            if c == '"':
                stack.pop()
                i += 1
                continue
        elif top is None:
            if c in _BREAK:
                break
        if c == "$" and i + 1 < n and text[i + 1] in "({":
            if text.startswith("$((", i):
                stack.append(("))", i))
                i += 3
            else:
                stack.append((")" if text[i + 1] == "(" else "}", i))
                i += 2
        elif c == "`":
            stack.append(("`", i))
            i += 1
        elif c == '"' and top != '"':
            stack.append(('"', i))
            i += 1
        elif c == "'" and top not in ('"',):
            stack.append(("'", i))
            i += 1
        elif top in (")", "))", "(") and c == "(":
            stack.append(("(", i))
            i += 1
        elif top in (")", "(") and c == ")":
            stack.pop()
            i += 1
        elif top == "))" and text.startswith("))", i):
            stack.pop()
            i += 2
        elif top == "}" and c == "}":
            stack.pop()
            i += 1
        elif top in (")", "(", "))") and c == "#" and text[i - 1] in " \t\n":
            end = text.find("\n", i)  # a comment inside $( ... )
            i = n if end < 0 else end
        else:
            i += 1
        if len(stack) > MAX_NESTING:
            raise ShellError(f"nesting deeper than {MAX_NESTING} levels of quotes, $( or ${{",
                             stack[-1][1], LIMIT_CODE)
    if stack:
        kind, opened = stack[-1]
        what = {"'": "single quote", '"': "double quote", "`": "backtick", ")": "$(",
                "))": "$((", "}": "${", "(": "("}[kind]
        raise ShellError(f"unterminated {what}", opened)
    return i


def tokenize(text: str) -> list[Tok]:
    """The tokens of ``text``. Raises :class:`ShellError` (with the offset where the problem
    starts) on an unterminated construct, nesting beyond the limit or more than
    ``MAX_TOKENS`` tokens."""
    tokens: list[Tok] = []
    heredocs: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if len(tokens) > MAX_TOKENS:
            raise ShellError(f"more than {MAX_TOKENS} shell tokens", i, LIMIT_CODE)
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "\\" and text.startswith("\\\n", i):
            i += 2
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "\n":
            tokens.append(Tok("nl", "\n", i))
            i += 1
            for delimiter, strip_tabs in heredocs:
                i = _skip_heredoc(text, i, delimiter, strip_tabs)
            heredocs = []
            continue
        redirect = next((r for r in _REDIRECTS if text.startswith(r, i)), None)
        if redirect is not None:
            tokens.append(Tok("redir", redirect, i))
            i += len(redirect)
            if _HEREDOC.match(redirect):
                while i < n and text[i] in " \t":
                    i += 1
                end = _scan_word(text, i)
                word = text[i:end]
                heredocs.append((re.sub(r"[\"'\\]", "", word), redirect == "<<-"))
                tokens.append(Tok("word", word, i))
                i = end
            continue
        operator = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if operator is not None:
            tokens.append(Tok("op", operator, i))
            i += len(operator)
            continue
        end = _scan_word(text, i)
        word = text[i:end]
        if word == "[[":
            # inside [[ ]] the shell's operators are not operators ((, |, <): one word
            close = _DOUBLE_BRACKET_END.search(text, end)
            if close is None:
                raise ShellError("unterminated [[", i)
            end = close.start() + 2
            word = text[i:end]
        if word.isdigit() and end < n and text[end] in "<>":
            i = end  # an IO number (2>&1): part of the redirection that follows
            continue
        tokens.append(Tok("word", word, i))
        i = end
    return tokens


def _skip_heredoc(text: str, i: int, delimiter: str, strip_tabs: bool) -> int:
    n = len(text)
    while i < n:
        end = text.find("\n", i)
        line = text[i:n if end < 0 else end]
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return n if end < 0 else end + 1
        if end < 0:
            return n
        i = end + 1
    return n


# ---------------------------------------------------------------------------------------------
# 2. the tree

@dataclass
class Simple:
    words: list[Tok]
    start: int
    conditional: bool = False


@dataclass
class ArrayAssign:
    name: str
    items: list[Tok]
    start: int
    conditional: bool = False


@dataclass
class For:
    var: str
    items: list[Tok] | None  # None: "$@" (no "in"); [] for C-style loops
    body: list
    start: int
    c_style: bool = False


@dataclass
class Branches:
    """``if``/``case``/``while``/``until``: ``conditions`` run first, then one of ``arms``
    (``complete``: one arm always runs, as with an ``else``)."""
    conditions: list
    arms: list[list]
    complete: bool
    start: int


@dataclass
class Group:
    body: list
    subshell: bool
    start: int


@dataclass
class FuncDef:
    name: str
    body: list
    start: int


_RESERVED_CLOSERS = {"then", "elif", "else", "fi", "do", "done", "esac", "}", "in"}
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")


class _Parser:
    def __init__(self, tokens: list[Tok]) -> None:
        self.toks = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def at_word(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "word" and tok.text in words

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.text in ops

    def skip_newlines(self) -> None:
        while self.peek() is not None and (self.peek().kind == "nl" or self.at_op(";")):
            self.i += 1

    def expect_word(self, word: str, opened: int) -> None:
        self.skip_newlines()
        if not self.at_word(word):
            tok = self.peek()
            raise ShellError(f"expected '{word}'", tok.start if tok else opened)
        self.i += 1

    def parse_list(self, stops: set[str], stop_ops: tuple[str, ...] = ()) -> list:
        self.depth += 1
        if self.depth > MAX_NESTING:
            tok = self.peek()
            raise ShellError(f"shell constructs nested deeper than {MAX_NESTING} levels",
                             tok.start if tok else 0, LIMIT_CODE)
        nodes: list = []
        conditional = False
        while True:
            self.skip_newlines()
            tok = self.peek()
            if tok is None or (tok.kind == "word" and tok.text in stops) or \
                    (tok.kind == "op" and tok.text in stop_ops):
                break
            if tok.kind == "op" and tok.text in ("&&", "||", "|", "|&", "&"):
                conditional = tok.text in ("&&", "||") or conditional
                self.i += 1
                continue
            if tok.kind == "op" and tok.text == ")" and ")" not in stop_ops:
                raise ShellError("unexpected ')'", tok.start)
            if tok.kind == "op" and tok.text in (";;", ";&", ";;&") and not stop_ops:
                raise ShellError(f"unexpected '{tok.text}'", tok.start)
            before = self.i
            node = self.parse_command()
            if node is not None:
                if conditional:
                    node = Branches([], [[node]], False, getattr(node, "start", tok.start))
                nodes.append(node)
            if self.i == before:  # nothing consumed: an unexpected token
                raise ShellError(f"unexpected '{tok.text}'", tok.start)
            nxt = self.peek()
            if nxt is not None and nxt.kind == "op" and nxt.text in ("&&", "||"):
                conditional = True
            elif nxt is None or nxt.kind == "nl" or (nxt.kind == "op" and nxt.text in (";", "&")):
                conditional = False
        self.depth -= 1
        return nodes

    def parse_command(self):
        tok = self.peek()
        if tok.kind == "word":
            word = tok.text
            if word in ("!", "time"):
                self.i += 1
                return None
            if word == "for":
                return self.parse_for()
            if word == "if":
                return self.parse_if()
            if word in ("while", "until"):
                self.i += 1
                condition = self.parse_list({"do"})
                self.expect_word("do", tok.start)
                body = self.parse_list({"done"})
                self.expect_word("done", tok.start)
                return Branches(condition, [body], False, tok.start)
            if word == "case":
                return self.parse_case()
            if word == "{":
                self.i += 1
                body = self.parse_list({"}"})
                self.expect_word("}", tok.start)
                return Group(body, False, tok.start)
            if word == "function":
                self.i += 1
                name = self.peek()
                if name is None or name.kind != "word":
                    raise ShellError("expected a function name", tok.start)
                self.i += 1
                if self.at_op("("):
                    self.i += 1
                    self._expect_op(")", tok.start)
                return self.parse_function_body(name.text, tok.start)
            if word in _RESERVED_CLOSERS:
                raise ShellError(f"unexpected '{word}'", tok.start)
            nxt = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if nxt is not None and nxt.kind == "op" and nxt.text == "(" and NAME.match(word):
                after = self.toks[self.i + 2] if self.i + 2 < len(self.toks) else None
                if after is not None and after.kind == "op" and after.text == ")":
                    self.i += 3
                    return self.parse_function_body(word, tok.start)
            if nxt is not None and nxt.kind == "op" and nxt.text == "(" and \
                    ASSIGN.match(word) and word.endswith("=") and nxt.start == tok.start + len(word):
                return self.parse_array(word, tok.start)
            return self.parse_simple()
        if tok.kind == "op" and tok.text == "(":
            self.i += 1
            if self.at_op("(") and self.peek().start == tok.start + 1:  # (( arithmetic ))
                self.i += 1
                return self._skip_arithmetic(tok.start)
            body = self.parse_list(set(), (")",))
            self._expect_op(")", tok.start)
            return Group(body, True, tok.start)
        if tok.kind == "redir":
            return self.parse_simple()
        raise ShellError(f"unexpected '{tok.text}'", tok.start)

    def _skip_arithmetic(self, start: int):
        depth = 2
        while self.peek() is not None and depth > 0:
            tok = self.peek()
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                depth -= 1
            self.i += 1
        if depth:
            raise ShellError("unterminated ((", start)
        return None

    def _expect_op(self, op: str, opened: int) -> None:
        if not self.at_op(op):
            tok = self.peek()
            raise ShellError(f"expected '{op}'", tok.start if tok else opened)
        self.i += 1

    def parse_function_body(self, name: str, start: int) -> FuncDef:
        self.skip_newlines()
        tok = self.peek()
        if tok is None:
            raise ShellError("function without a body", start)
        body = self.parse_command()
        return FuncDef(name, [body] if body is not None else [], start)

    def parse_array(self, word: str, start: int) -> ArrayAssign:
        self.i += 2
        items: list[Tok] = []
        while True:
            tok = self.peek()
            if tok is None:
                raise ShellError("unterminated array assignment", start)
            self.i += 1
            if tok.kind == "op" and tok.text == ")":
                break
            if tok.kind == "word":
                items.append(tok)
        return ArrayAssign(ASSIGN.match(word).group(1), items, start)

    def parse_simple(self) -> Simple:
        words: list[Tok] = []
        start = self.peek().start
        while True:
            tok = self.peek()
            if tok is None or tok.kind in ("nl", "op"):
                break
            self.i += 1
            if tok.kind == "redir":
                target = self.peek()
                if target is not None and target.kind == "word":
                    self.i += 1
                continue
            words.append(tok)
        return Simple(words, start)

    def parse_for(self) -> For:
        start = self.peek().start
        self.i += 1
        if self.at_op("("):  # for (( ... )); do
            self._skip_arithmetic_for(start)
            self.skip_newlines()
            self.expect_word("do", start)
            body = self.parse_list({"done"})
            self.expect_word("done", start)
            return For("", [], body, start, c_style=True)
        var = self.peek()
        if var is None or var.kind != "word" or not NAME.match(var.text):
            raise ShellError("expected a loop variable after 'for'", start)
        self.i += 1
        items: list[Tok] | None = None
        while self.peek() is not None and self.peek().kind == "nl":
            self.i += 1
        if self.at_word("in"):
            self.i += 1
            items = []
            while self.peek() is not None and self.peek().kind == "word":
                items.append(self.peek())
                self.i += 1
        self.skip_newlines()
        self.expect_word("do", start)
        body = self.parse_list({"done"})
        self.expect_word("done", start)
        return For(var.text, items, body, start)

    def _skip_arithmetic_for(self, start: int) -> None:
        self.i += 1
        if not self.at_op("("):
            raise ShellError("expected '((' after 'for'", start)
        self.i += 1
        self._skip_arithmetic(start)

    def parse_if(self) -> Branches:
        start = self.peek().start
        self.i += 1
        conditions = self.parse_list({"then"})
        self.expect_word("then", start)
        arms = [self.parse_list({"elif", "else", "fi"})]
        complete = False
        while True:
            self.skip_newlines()
            if self.at_word("elif"):
                self.i += 1
                conditions += self.parse_list({"then"})
                self.expect_word("then", start)
                arms.append(self.parse_list({"elif", "else", "fi"}))
            elif self.at_word("else"):
                self.i += 1
                arms.append(self.parse_list({"fi"}))
                complete = True
            else:
                break
        self.expect_word("fi", start)
        return Branches(conditions, arms, complete, start)

    def parse_case(self) -> Branches:
        start = self.peek().start
        self.i += 1
        subject = self.peek()
        if subject is None or subject.kind != "word":
            raise ShellError("expected a word after 'case'", start)
        self.i += 1
        self.skip_newlines()
        self.expect_word("in", start)
        arms: list[list] = []
        complete = False
        while True:
            self.skip_newlines()
            if self.at_word("esac") or self.peek() is None:
                break
            if self.at_op("("):
                self.i += 1
            while self.peek() is not None and not self.at_op(")"):  # the patterns
                tok = self.peek()
                if tok.kind == "word" and tok.text == "*":
                    complete = True
                if tok.kind == "nl":
                    raise ShellError("expected ')' after a case pattern", tok.start)
                self.i += 1
            self._expect_op(")", start)
            arms.append(self.parse_list({"esac"}, (";;", ";&", ";;&")))
            if self.at_op(";;", ";&", ";;&"):
                self.i += 1
        self.expect_word("esac", start)
        return Branches([], arms, complete, start)


def parse(tokens: list[Tok]) -> list:
    """The tree of ``tokens`` (:func:`tokenize`). Raises :class:`ShellError`."""
    parser = _Parser(tokens)
    nodes = parser.parse_list(set())
    if parser.peek() is not None:
        tok = parser.peek()
        raise ShellError(f"unexpected '{tok.text}'", tok.start)
    return nodes
