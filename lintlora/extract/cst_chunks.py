"""An incremental LibCST parse for the editor server: a buffer is parsed by top-level statement
chunks, each chunk's parse kept by its text, so a keystroke re-parses only the chunk it changed
(issue 18, item 3: the re-lint of a 500-line script "in well under 100 ms"; LibCST's parse is
most of a lint: about 80 ms of 180 for 500 lines here).

How a module is rebuilt from chunks, so it is the module :func:`libcst.parse_module` would give
for the whole text, for everything lintlora reads of it (the same code generation, so the same
positions: :mod:`lintlora.extract._cstpos`; the same statements and expressions):

- the chunks are cut at line starts between top-level statements (CPython's :mod:`ast` gives
  their lines, decorators included), and only where every line between two statements is
  empty or a comment at column 0: LibCST gives such lines to the next statement
  (``leading_lines``), while an indented comment or a whitespace-only line after a block may
  belong to that block's ``footer`` (LibCST 1.x: a trailing comment indented at the block's
  level is the block's); statements sharing a line stay in one chunk;
- each chunk is parsed with the file's own ``default_indent`` and ``default_newline``
  (:class:`libcst.PartialParserConfig`), found as LibCST's tokenizer finds them (the first
  indented block's indentation; the first line break), so a block's ``indent`` is ``None``
  exactly where the whole-file parse has it ``None``;
- a chunk's ``header`` (its leading empty and comment lines) becomes its first statement's
  ``leading_lines`` (where the whole-file parse puts them), except for the first chunk (the
  module's header); the last chunk's ``footer`` is the module's;
- the same chunk text twice in one file is parsed twice (nodes are keyed by identity);
- anything else falls back to the whole-file parse: a text CPython does not parse (LibCST
  may accept newer syntax, or names the error), a lone ``\\r`` line break, ``\\r\\n`` mixed
  with ``\\n``, a byte order mark, a form feed in an indentation, a chunk whose first indented
  line is not indented like the file's first (:func:`_whole_file_only`, :func:`_cuts`), a
  chunk with a footer or without its final line break in the middle, any exception.

``tests/test_cst_chunks.py`` checks that the rebuilt module's code is the text and that its
nodes' positions and the extraction of every Python fixture equal the whole-file parse's.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["ChunkParser", "parsing_with"]

MAX_CACHED_CHUNKS = 2048
"""Chunk parses kept (least recently used dropped): a few open files of a few hundred
top-level statements each."""

MAX_CACHED_CHARS = 500_000
"""Characters of chunk text kept at most: a chunk's LibCST nodes and positions take about 550
bytes per source character (``tracemalloc`` on ``bench/server_latency.py``'s script), so
about 280 MiB at this bound, some 25 open 500-line scripts; a larger file is parsed by chunks
all the same, its least recently used chunks dropped."""

_SEPARATOR = re.compile(r"(?:#[^\n]*)?\r?\n?")


class ChunkParser:
    """Parses Python text by chunks; :meth:`parse` is a drop-in for ``libcst.parse_module``."""

    def __init__(self, max_chunks: int = MAX_CACHED_CHUNKS) -> None:
        self.max_chunks = max_chunks
        self._cache: OrderedDict[tuple[str, str, str], list] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._chars = 0
        # the last module built: (its id, its text, [(chunk entry, start offset, the chunk's
        # first statement, the node that replaced it or None)])
        self._last: tuple[int, str, list] | None = None
        self._last_module: Any = None
        # id(node) -> the cached chunk entry holding it (entries keep their nodes alive, and
        # an evicted entry's nodes are removed), so a node's position is found in O(1)
        self._owner: dict[int, list] = {}

    def parse(self, source: str) -> Any:
        """The module of ``source``; raises what ``libcst.parse_module`` raises."""
        import libcst as cst

        try:
            module = self._stitched(source)
        except Exception:  # noqa: BLE001 - the whole-file parse decides (and names the error)
            module = None
        return module if module is not None else cst.parse_module(source)

    # -- the chunks --
    def _stitched(self, source: str) -> Any:
        import libcst as cst

        if _whole_file_only(source):
            return None
        lines = source.split("\n")
        newline = "\r\n" if "\r\n" in source[:source.find("\n") + 1] else "\n"
        cuts, indent = _cuts(source, lines)
        if cuts is None or len(cuts) < 2:
            return None
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        pieces = []
        for k, first in enumerate(cuts):
            begin = starts[first]
            end = starts[cuts[k + 1]] if k + 1 < len(cuts) else len(source)
            pieces.append(source[begin:end])
        used: set[str] = set()
        body: list[Any] = []
        header: Any = ()
        footer: Any = ()
        encoding = "utf-8"
        has_trailing_newline = True
        layout: list[tuple[list, int, Any, Any]] = []
        base = 0
        for k, piece in enumerate(pieces):
            entry = self._chunk(piece, indent, newline, fresh=piece in used)
            chunk = entry[0]
            used.add(piece)
            if not chunk.body:
                return None
            if (chunk.footer or not chunk.has_trailing_newline) and k + 1 < len(pieces):
                # a footer in the middle; or a chunk LibCST reads as ending without its line
                # break (``x = 1  # \\`` at a chunk's end: the comment's backslash taken for a
                # continuation at the end of input), whose positions would end a line early
                return None
            statements_of = list(chunk.body)
            replaced = None
            if k == 0:
                header = chunk.header
                encoding = chunk.encoding
            elif chunk.header:
                first = statements_of[0]
                replaced = statements_of[0] = first.with_changes(
                    leading_lines=[*chunk.header, *first.leading_lines])
            layout.append((entry, base, chunk.body[0], replaced))
            base += len(piece)
            if k + 1 == len(pieces):
                footer = chunk.footer
                has_trailing_newline = chunk.has_trailing_newline
            body.extend(statements_of)
        module = cst.Module(body=body, header=header, footer=footer, encoding=encoding,
                            default_indent=indent, default_newline=newline,
                            has_trailing_newline=has_trailing_newline)
        self._last = (id(module), source, layout)
        self._last_module = module
        return module

    # -- positions --
    def index(self, module: Any, text: str) -> Any:
        """The :class:`lintlora.extract._cstpos.PositionIndex` of the module :meth:`parse`
        built last (for ``text``), from each chunk's positions (computed once per chunk: a
        chunk's nodes are where its own code generation puts them, shifted by where the chunk
        starts); ``None`` for any other module (then the whole module is indexed)."""
        try:
            return self._index(module, text)
        except Exception:  # noqa: BLE001 - the whole module is indexed instead
            return None

    def _index(self, module: Any, text: str) -> Any:
        last = self._last
        if last is None or last[0] != id(module) or self._last_module is not module \
                or last[1] != text:
            return None
        from lintlora.extract._cstpos import PositionIndex

        extra: dict[int, tuple[int, int]] = {id(module): (0, len(text))}
        overlay: dict[int, list] = {}
        base_of: dict[int, int] = {}
        for entry, base, first, replaced in last[2]:
            if entry[1] is None:
                entry[1] = _relative_bounds(entry[0], entry[2])
                if entry[3]:  # cached: its nodes are found through the parser's owner map
                    owner = self._owner
                    for key in entry[1]:
                        owner[key] = entry
            if not entry[3]:
                overlay.update(dict.fromkeys(entry[1], entry))
            base_of[id(entry)] = base
            if replaced is not None:
                start, end = entry[1][id(first)]
                extra[id(replaced)] = (start + base, end + base)
        bounds = _Bounds(self._owner, overlay, base_of, extra)
        return PositionIndex(text, bounds, _Identity(len(text)), module=module)  # type: ignore[arg-type]

    def _chunk(self, piece: str, indent: str, newline: str, fresh: bool) -> Any:
        import libcst as cst

        key = (piece, indent, newline)
        if not fresh:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return entry
        self.misses += 1
        module = cst.parse_module(piece, config=cst.PartialParserConfig(
            default_indent=indent, default_newline=newline))
        # the module, its nodes' offsets in the chunk (on first use), its text, whether cached
        entry = [module, None, piece, not fresh]
        if not fresh:
            self._cache[key] = entry
            self._chars += len(piece)
            while len(self._cache) > self.max_chunks or (
                    self._chars > MAX_CACHED_CHARS and len(self._cache) > 1):
                _key, dropped = self._cache.popitem(last=False)
                self._chars -= len(dropped[2])
                for node in dropped[1] or ():
                    if self._owner.get(node) is dropped:
                        del self._owner[node]
        return entry


def _whole_file_only(source: str) -> bool:
    """Whether ``source`` has what the chunks cannot rebuild as the whole-file parse does
    (found by ``tests/test_security_review_tools.py``, group chunks):

    - a lone ``\\r`` line break (a line break for LibCST, not for this splitter);
    - both ``\\r\\n`` and a lone ``\\n``: LibCST takes ``default_newline`` from the file's
      first line break and keeps the other kind on each line, but a chunk parsed with the
      file's ``default_newline`` loses the other kind (its own first break decides there);
    - a byte order mark (LibCST drops it from the code: the module's range then differs).
    """
    without_crlf = source.replace("\r\n", "")
    if "\r" in without_crlf:
        return True
    if "\n" in without_crlf and len(without_crlf) != len(source):
        return True
    return source.startswith("\ufeff")


_TOKEN = re.compile(r'#[^\n]*|[rRbBuUfFtT]{0,2}(?:\'\'\'|"""|\'|")|[()\[\]{}]|\\\r?\n|\n')
"""What the splitter follows: comments, string openings (with their prefixes), brackets, a
backslash-newline continuation, line breaks."""

_CLAUSES = re.compile(r"(?:else|elif|except|finally)\b")
"""Lines at column 0 that continue the statement before (no chunk starts there)."""


def _inside_lines(source: str, count: int) -> bytearray | None:
    """Per 0-based line, 1 when it starts inside a string, bracket or backslash continuation
    (it cannot start a statement); ``None`` when the scan gives up (an unterminated string,
    a one-quote string over a line break: the file goes to the whole-file parse)."""
    inside = bytearray(count + 1)
    depth = 0
    line = 0
    i = 0
    n = len(source)
    search = _TOKEN.search
    while i < n:
        m = search(source, i)
        if m is None:
            break
        token = m.group()
        i = m.end()
        head = token[0]
        if token == "\n":
            line += 1
            if depth:
                inside[line] = 1
        elif head == "#":
            continue
        elif head in "([{":
            depth += 1
        elif head in ")]}":
            depth = max(depth - 1, 0)
        elif head == "\\":
            line += 1
            inside[line] = 1
        else:  # a string: to its closing quote (one not escaped by a backslash)
            quote = token.lstrip("rRbBuUfFtT")
            j = i
            while True:
                k = source.find(quote, j)
                if k < 0:
                    return None
                b = k
                while b > j and source[b - 1] == "\\":
                    b -= 1
                if (k - b) % 2:
                    j = k + 1
                    continue
                break
            covered = source.count("\n", i, k)
            if covered and len(quote) == 1:
                return None
            for extra in range(1, covered + 1):
                inside[line + extra] = 1
            line += covered
            i = k + len(quote)
    return inside


def _cuts(source: str, lines: list[str]) -> tuple[list[int] | None, str]:
    """0-based lines where chunks start, and the file's ``default_indent``.

    A line starts a chunk when it begins, outside any string, bracket or continuation, with
    code at column 0 that is not an ``else``/``elif``/``except``/``finally`` clause nor
    follows a decorator, and every line between it and the code before is empty or a comment
    at column 0 (those lines then start the chunk). A wrong cut is harmless: a chunk cut
    inside a construct does not parse, and the whole file is parsed instead.

    The indentation is that of the first indented code line outside strings and brackets:
    LibCST's tokenizer takes ``default_indent`` from the first INDENT token, and the file's
    first such line is it (code at depth 0 is indented only by a block).
    """
    inside = _inside_lines(source, len(lines))
    if inside is None:
        return None, "    "
    cuts = [0]
    indent = None
    previous_code = -1  # the last line holding code
    previous_start = ""  # the last code line at column 0
    chunk_indented = False  # whether the current chunk has an indented code line yet
    for number, text in enumerate(lines):
        stripped = text.lstrip(" \t\f")
        if not stripped.strip("\r") or stripped.startswith("#"):
            continue
        if inside[number]:
            previous_code = number
            continue
        lead = text[:len(text) - len(stripped)]
        if lead:
            if "\f" in lead:
                return None, "    "  # a form feed resets the indentation: the whole file
            if indent is None:
                indent = lead
            if not chunk_indented:
                # LibCST takes a block's ``indent`` relative to the first indentation of the
                # text it parses (``config.default_indent`` does not change that), so a chunk
                # whose first indented line is not indented like the file's first one would
                # lose its own indentation: the whole file is parsed instead
                if lead != indent:
                    return None, "    "
                chunk_indented = True
        else:
            if number > 0 and not _CLAUSES.match(stripped) and not previous_start.startswith("@"):
                first = previous_code + 1
                if first > 0 and all(lines[k].startswith("#") or lines[k] in ("", "\r")
                                     for k in range(first, number)):
                    cuts.append(first)
                    chunk_indented = False
            previous_start = stripped
        previous_code = number
    return cuts, indent or "    "


class _Bounds:
    """The ``bounds`` of a :class:`lintlora.extract._cstpos.PositionIndex` over chunks:
    ``get(id(node))`` -> ``(start, end)`` character offsets in the whole text (the chunk's
    offsets shifted by where it starts in this text); ``None`` for a node not in it."""

    __slots__ = ("owner", "overlay", "base_of", "extra")

    def __init__(self, owner: dict, overlay: dict, base_of: dict, extra: dict) -> None:
        self.owner = owner
        self.overlay = overlay
        self.base_of = base_of
        self.extra = extra

    def get(self, key: int, default: Any = None) -> Any:
        found = self.extra.get(key)
        if found is not None:
            return found
        entry = self.overlay.get(key) or self.owner.get(key)
        if entry is None:
            return default
        base = self.base_of.get(id(entry))
        if base is None:  # a cached chunk that is not part of this text
            return default
        start, end = entry[1][key]
        return start + base, end + base


class _Identity:
    """The offsets list of a :class:`lintlora.extract._cstpos.PositionIndex` whose bounds are
    character offsets already: ``offsets[i] == i`` for ``0 <= i <= size``."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size + 1

    def __getitem__(self, index: int) -> int:
        return index


def _relative_bounds(module: Any, text: str) -> dict[int, tuple[int, int]]:
    """id(node) -> (start, end) character offsets in the chunk's text, for every node of the
    chunk's module but the module itself (:func:`lintlora.extract._cstpos._fast_index`)."""
    from lintlora.extract._cstpos import _fast_index

    index = _fast_index(module, text)
    offsets = index._offsets
    last = len(offsets) - 1
    own = id(module)
    return {key: (offsets[min(s, last)], offsets[min(e, last)])
            for key, (s, e) in index._bounds.items() if key != own}


@contextmanager
def parsing_with(parser: ChunkParser | None) -> Iterator[None]:
    """Within the block, the Python extractor parses with ``parser``
    (:data:`lintlora.extract.python.PARSE_MODULE`); ``None``: LibCST's own parse."""
    from lintlora.extract import _cstpos, python

    before = python.PARSE_MODULE, _cstpos.INDEXER
    python.PARSE_MODULE = parser.parse if parser is not None else None
    _cstpos.INDEXER = parser.index if parser is not None else None
    try:
        yield
    finally:
        python.PARSE_MODULE, _cstpos.INDEXER = before
