"""Source positions of LibCST nodes, computed once per file and cheaply.

LibCST's ``PositionProvider`` gives exact positions but spends most of its time turning every
generated token into line/column numbers for every node (about 85 ms for a 500-line file here,
twice the parse). This module runs the same code generation once, records only the *token
index* where each node starts and ends (two list lengths per node), and converts a node's
indices to a line and column only when the extractor asks for that node's span.

The recorded bounds follow ``PositionProvider``'s rules: a node's syntactic range
(``record_syntactic_position``) wins over its whitespace-inclusive range, so a statement starts
at its first token, not at the blank lines and comments above it. ``tests/test_extract_positions.py``
checks the two agree on every node of the fixtures.

If LibCST's code-generation internals ever change shape, :func:`index_positions` falls back to the
public ``PositionProvider`` (slower, same answers).
"""

from __future__ import annotations

import bisect
from itertools import accumulate

import libcst as cst

__all__ = ["PositionIndex", "index_positions"]


def _line_starts(text: str) -> list[int]:
    """Offsets (in characters) where each line starts; LibCST's newline rules (\\r\\n, \\r, \\n)."""
    starts = [0]
    i, n = 0, len(text)
    find = text.find
    while i < n:
        j = find("\n", i)
        k = find("\r", i)
        if j < 0 and k < 0:
            break
        if k >= 0 and (j < 0 or k < j):
            i = k + 2 if k + 1 < n and text[k + 1] == "\n" else k + 1
        else:
            i = j + 1
        starts.append(i)
    return starts


class PositionIndex:
    """Maps nodes to ``(line, column, end_line, end_column)``: 1-based lines, 0-based columns.

    Columns count characters (not bytes), as LibCST does.
    """

    def __init__(self, text: str, bounds: dict, offsets: list[int] | None,
                 ranges: dict | None = None, module: cst.Module | None = None) -> None:
        self._text = text
        self._module = module        # kept alive: the bounds are keyed by its nodes' ids
        self._bounds = bounds        # id(node) -> (start token index, end token index)
        self._offsets = offsets      # token index -> character offset
        self._ranges = ranges        # fallback: node -> CodeRange
        self._line_starts = _line_starts(text)

    def _loc(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line]

    def get(self, node: cst.CSTNode) -> tuple[int, int, int, int] | None:
        """The node's range, or ``None`` for a node not in the indexed module."""
        if self._ranges is not None:
            r = self._ranges.get(node)
            if r is None:
                return None
            return r.start.line, r.start.column, r.end.line, r.end.column
        b = self._bounds.get(id(node))
        if b is None:
            return None
        offsets = self._offsets
        last = len(offsets) - 1
        start = offsets[min(b[0], last)]
        end = offsets[min(b[1], last)]
        line, col = self._loc(start)
        end_line, end_col = self._loc(end)
        return line, col, end_line, end_col


class _Syntactic:
    """What ``record_syntactic_position`` returns: the context manager LibCST's code generation
    enters around a node's syntactic part. On leaving it records the node's range: from where
    it was entered (or ``start_node``'s start) to where it is left (or ``end_node``'s end).

    A small class rather than ``@contextmanager``: LibCST enters one for most nodes, and a
    generator-based context manager costs about three times as much.
    """

    __slots__ = ("bounds", "tokens", "node", "start_node", "end_node", "start")

    def __init__(self, bounds: dict, tokens: list, node: cst.CSTNode, start_node: object,
                 end_node: object) -> None:
        self.bounds = bounds
        self.tokens = tokens
        self.node = node
        self.start_node = start_node
        self.end_node = end_node
        self.start = 0

    def __enter__(self) -> None:
        self.start = len(self.tokens)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # nothing is recorded when code generation fails (a RecursionError on a deeply nested
        # file): the error must propagate as it is, not as a KeyError for a node whose bounds
        # were never recorded
        if exc_type is not None:
            return
        bounds = self.bounds
        start = self.start if self.start_node is None else bounds[id(self.start_node)][0]
        end = len(self.tokens) if self.end_node is None else bounds[id(self.end_node)][1]
        bounds[id(self.node)] = (start, end)


def _fast_index(module: cst.Module, text: str) -> PositionIndex:
    from libcst._nodes.internal import CodegenState  # private, hence the fallback below

    # keyed by id(node): LibCST nodes are equal only by identity, and their __hash__ is a
    # Python-level method (two calls per node here, ~5% of a run on the benchmark corpus)
    bounds: dict = {}

    class _State(CodegenState):
        def __init__(self) -> None:
            super().__init__(default_indent=module.default_indent,
                             default_newline=module.default_newline)
            # LibCST calls these two for every node: plain functions bound to this state's
            # token list (which code generation only appends to), not methods looking up
            # ``self.tokens`` each time
            tokens = self.tokens
            stack: list[int] = []
            push, pop = stack.append, stack.pop
            first = bounds.setdefault  # a syntactic range recorded inside the node wins

            def before_codegen(node: cst.CSTNode) -> None:
                push(len(tokens))

            def after_codegen(node: cst.CSTNode) -> None:
                first(id(node), (pop(), len(tokens)))

            self.before_codegen = before_codegen  # type: ignore[method-assign]
            self.after_codegen = after_codegen  # type: ignore[method-assign]

        def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None,
                                      end_node=None) -> _Syntactic:
            return _Syntactic(bounds, self.tokens, node, start_node, end_node)

    state = _State()
    module._codegen(state)
    offsets = [0]
    offsets.extend(accumulate(len(t) for t in state.tokens))
    return PositionIndex(text, bounds, offsets, module=module)


def _slow_index(module: cst.Module, text: str) -> PositionIndex:
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return PositionIndex(text, {}, None, dict(wrapper.resolve(PositionProvider)))


INDEXER = None
"""``(module, text) -> PositionIndex | None``: the index of a module built another way (the
editor server's incremental parse keeps each chunk's positions:
:meth:`lintlora.extract.cst_chunks.ChunkParser.index`), or ``None`` for this module's."""


def index_positions(module: cst.Module, text: str, *, fast: bool = True) -> PositionIndex:
    """Index the positions of every node of ``module`` (parsed from ``text``)."""
    if INDEXER is not None:
        found = INDEXER(module, text)
        if found is not None:
            return found
    if fast:
        try:
            return _fast_index(module, text)
        except (ImportError, AttributeError, TypeError):  # pragma: no cover - LibCST changed
            pass
    return _slow_index(module, text)
