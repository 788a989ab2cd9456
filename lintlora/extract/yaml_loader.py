"""Safe loading of YAML and JSON training configs, keeping the position of every key and value.

This module never builds Python objects from YAML tags. It asks PyYAML only to *compose* the
document (``yaml.SafeLoader``'s scanner, parser and composer: nodes with marks), then walks the
nodes itself into a small tree of :class:`YMap`, :class:`YSeq` and :class:`YScalar`, each with
its :class:`~lintlora.training_setup.Span` (1-based line and column). Scalars are converted for
the core YAML 1.1 tags only (null, bool, int, float, str; timestamps and binary stay text), the
way ``yaml.safe_load`` would; any other tag (``!!python/object:...``, ``!Ref``, ``!include``) is
reported as unsupported and never constructed.

Hostile input is bounded, so every call returns or raises :class:`ExtractError` quickly:

- text longer than ``max_chars`` (default :data:`MAX_CONFIG_CHARS`) is refused before parsing;
  the engine passes ``max_chars=None``, as it has already applied ``--max-file-size`` before
  reading, so for linted files that option is the one size limit;
- NUL bytes (binary data decoded as text) are refused before parsing;
- at most :data:`MAX_NODES` nodes are composed and the nesting depth is capped at
  :data:`MAX_DEPTH` (the composer recurses per level; the cap keeps it far from Python's
  recursion limit);
- aliases are expanded while walking, counted against :data:`MAX_EXPANDED` (an "alias bomb"
  that would expand to millions of nodes stops there), and a recursive alias stops at the depth
  cap;
- merge keys (``<<: *base``) are honoured, with the mapping's own keys winning.

A stream of several documents (``---``) is read whole: :func:`load_config_documents` returns
every non-empty document (the limits count over the whole stream), :func:`load_config_text`
the first.

JSON (``kind="json"``) is first validated with the standard library's :func:`json.loads` (whose
errors carry line and column), then composed by the same YAML machinery for positions (JSON is
YAML 1.2; tabs between tokens, which PyYAML's 1.1 scanner refuses, are replaced by spaces, one
for one, so columns do not move). Plain JSON scalars are converted with :func:`json.loads`, so
``2e-4`` is a number as in JSON, not a string as in YAML 1.1.

Errors: :class:`lintlora.extract.ExtractError`. ``code="LL000"`` (the engine's syntax-error
diagnostic) for text that is not valid YAML/JSON (a syntax error, with the line and column
PyYAML or ``json`` reports; binary data; characters YAML forbids; an unsupported tag).
``code="LL998"`` (an input problem, like a file above ``--max-file-size``) for valid text
refused by one of lintlora's limits (size, depth, node count, alias expansion): the message
names the limit. Limits are checked as parsing goes, so a refused file costs at most the work
up to the limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Union

from lintlora.extract import ExtractError
from lintlora.training_setup import Span

__all__ = [
    "YScalar",
    "YSeq",
    "YMap",
    "YEntry",
    "YNode",
    "load_config_text",
    "load_config_documents",
    "LIMIT_CODE",
    "MAX_CONFIG_CHARS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_EXPANDED",
    "to_python",
]

MAX_CONFIG_CHARS = 1 * 2**20
"""Default ``max_chars``: the largest text :func:`load_config_text` parses for a direct caller
(characters, ~1 MiB). Real training configs are under 20 KB; the pure-Python YAML scanner reads
roughly 1-3 MB/s, so this keeps one file under about a second. Linted files are bounded by
``--max-file-size`` instead (the engine passes ``max_chars=None``)."""

LIMIT_CODE = "LL998"
"""``ExtractError.code`` for text refused by a limit: the engine's input-problem code (as for a
file above ``--max-file-size``), not ``LL000``: the file is not broken, only beyond what
lintlora reads."""

MAX_DEPTH = 64
"""Deepest nesting of collections accepted (real configs nest 3-5 levels)."""

MAX_NODES = 20_000
"""Most nodes composed from the text (aliases do not add nodes here)."""

MAX_EXPANDED = 50_000
"""Most nodes visited while walking the document with aliases expanded."""

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {
    _CORE + name
    for name in ("null", "bool", "int", "float", "str", "seq", "map", "timestamp", "binary",
                 "merge", "omap", "pairs", "set", "value")
}


@dataclass(frozen=True)
class YScalar:
    """A scalar value.

    Attributes:
        value: ``None``, ``bool``, ``int``, ``float`` or ``str`` (YAML 1.1 core schema as
            ``yaml.safe_load`` reads it; for JSON, as ``json.loads`` reads it).
        span: where the value's text is (for an empty value, the end of its key).
        text: the scalar's source text as PyYAML scanned it (unquoted).
        plain: the scalar was written without quotes.
    """

    value: Any
    span: Span
    text: str = ""
    plain: bool = True


@dataclass(frozen=True)
class YEntry:
    """One ``key: value`` pair of a mapping; ``key`` is the key's text."""

    key: str
    key_span: Span
    value: "YNode"


@dataclass(frozen=True)
class YMap:
    """A mapping; ``entries`` keeps source order, later duplicates replacing earlier ones."""

    entries: dict[str, YEntry]
    span: Span

    def get(self, key: str) -> "YEntry | None":
        """The entry for ``key``, or ``None``."""
        return self.entries.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def keys(self) -> Iterator[str]:
        """Keys in source order."""
        return iter(self.entries)


@dataclass(frozen=True)
class YSeq:
    """A sequence of nodes."""

    items: tuple["YNode", ...]
    span: Span


YNode = Union[YScalar, YSeq, YMap]


class _Refused(Exception):
    """Internal: a limit was hit (``code`` :data:`LIMIT_CODE`) or the text is refused as not
    plain YAML data (``code="LL000"``); carries the message and the node mark."""

    def __init__(self, message: str, mark: Any = None, code: str = "LL000") -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.code = code


def _span(path: str, start: Any, end: Any) -> Span:
    return Span(path, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def _loader_class() -> type:
    """A ``yaml.SafeLoader`` subclass that counts composed nodes and caps the nesting depth."""
    import yaml

    class _BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._depth = 0
            self._nodes = 0

        def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D401 - PyYAML hook
            if self.check_event(yaml.AliasEvent):
                return super().compose_node(parent, index)
            self._nodes += 1
            if self._nodes > MAX_NODES:
                raise _Refused(
                    f"more than {MAX_NODES:,} YAML nodes (lintlora's fixed limit; training "
                    f"configs hold a few hundred): not parsed", self.peek_event().start_mark,
                    LIMIT_CODE)
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise _Refused(
                        f"YAML nested deeper than {MAX_DEPTH} levels (lintlora's fixed limit; "
                        "training configs nest a few): not parsed", self.peek_event().start_mark,
                        LIMIT_CODE)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return _BoundedLoader


_LOADER: type | None = None


def _get_loader() -> type:
    global _LOADER
    if _LOADER is None:
        _LOADER = _loader_class()
    return _LOADER


def _line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character ``index`` in ``text``."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def load_config_text(text: str, path: str, *, kind: str = "yaml",
                     max_chars: int | None = MAX_CONFIG_CHARS) -> YNode | None:
    """Parse ``text`` (YAML, or JSON when ``kind == "json"``) into a positioned tree.

    Args:
        text: the decoded file content.
        path: used in spans and messages.
        kind: ``"yaml"`` or ``"json"``.
        max_chars: refuse longer text before parsing (``None``: no limit of its own).

    Returns:
        The root node of the first non-empty document, or ``None`` when there is none.

    Raises:
        ExtractError: a syntax error (``LL000``) or an input refused by a limit
            (:data:`LIMIT_CODE`), with 1-based line and column where known.
    """
    documents = load_config_documents(text, path, kind=kind, max_chars=max_chars, first_only=True)
    return documents[0] if documents else None


def load_config_documents(text: str, path: str, *, kind: str = "yaml",
                          max_chars: int | None = MAX_CONFIG_CHARS,
                          first_only: bool = False) -> list[YNode]:
    """Every non-empty document of a YAML stream (``---`` separated), in order; JSON has one.

    Args and errors as :func:`load_config_text`; the node and alias-expansion limits count
    over the whole stream. ``first_only`` stops after the first non-empty document.
    """
    if max_chars is not None and len(text) > max_chars:
        raise ExtractError(
            f"{kind.upper()} file is {len(text) / 2**20:.1f} MiB, above the "
            f"{max_chars / 2**20:g} MiB lintlora parses of a config passed to it directly: "
            f"not parsed", code=LIMIT_CODE)
    nul = text.find("\x00")
    if nul >= 0:
        line, column = _line_col(text, nul)
        raise ExtractError(
            "binary data (a NUL byte), not a YAML/JSON text file: not parsed",
            line, column)
    if kind == "json":
        _check_json(text)
        text = text.replace("\t", " ")
    import yaml

    loader = None
    roots = []
    try:
        loader = _get_loader()(text)
        while loader.check_node():
            root = loader.get_node()
            if root is not None and not _empty_document(root):
                roots.append(root)
                if first_only:
                    break
    except _Refused as exc:
        mark = exc.mark
        raise ExtractError(exc.message, mark.line + 1 if mark else None,
                           mark.column + 1 if mark else None, code=exc.code) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        context = f"{exc.context}: " if exc.context else ""
        raise ExtractError(f"YAML syntax error: {context}{problem}",
                           mark.line + 1 if mark else None,
                           mark.column + 1 if mark else None) from None
    except yaml.reader.ReaderError as exc:
        line, column = _line_col(text, exc.position)
        char = (f"U+{exc.character:04X}" if isinstance(exc.character, int)
                else repr(exc.character))
        raise ExtractError(
            f"not YAML text: character {char} is not allowed ({exc.reason})",
            line, column) from None
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error is one of the above
        raise ExtractError(f"YAML error: {exc}") from None
    except RecursionError:
        raise ExtractError("YAML nested too deeply to parse (lintlora's limit): not parsed",
                           code=LIMIT_CODE) from None
    finally:
        if loader is not None:
            loader.dispose()
    walker = _Walker(path, kind == "json", loader)  # one expansion budget for the stream
    try:
        return [walker.convert(root, 0) for root in roots]
    except _Refused as exc:
        mark = exc.mark
        raise ExtractError(exc.message, mark.line + 1 if mark else None,
                           mark.column + 1 if mark else None, code=exc.code) from None
    except RecursionError:
        raise ExtractError("YAML aliases nested too deeply to expand (lintlora's limit): not "
                           "parsed", code=LIMIT_CODE) from None


def _empty_document(node: Any) -> bool:
    """An explicit document with no content (``---`` followed by ``---``): an empty null."""
    return node.tag == _CORE + "null" and node.value == "" and node.style is None


def _check_json(text: str) -> None:
    """Validate JSON with the standard library so syntax errors read as JSON errors."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExtractError(f"JSON syntax error: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise ExtractError("JSON nested too deeply to parse") from None
    except ValueError as exc:  # e.g. integer string too long to convert
        raise ExtractError(f"JSON value error: {exc}") from None


class _Walker:
    """Converts composed PyYAML nodes into YNode trees with an expansion budget."""

    def __init__(self, path: str, json_mode: bool, loader: Any) -> None:
        self.path = path
        self.json_mode = json_mode
        self.visited = 0
        self.loader = loader

    def _check(self, node: Any, depth: int) -> None:
        self.visited += 1
        if self.visited > MAX_EXPANDED:
            raise _Refused(
                f"YAML aliases expand to more than {MAX_EXPANDED:,} nodes (an alias bomb?; "
                "lintlora's fixed limit): not parsed", node.start_mark, LIMIT_CODE)
        if depth > MAX_DEPTH:
            raise _Refused(f"YAML aliases nest deeper than {MAX_DEPTH} levels (a recursive "
                           "alias?; lintlora's fixed limit): not parsed", node.start_mark,
                           LIMIT_CODE)
        tag = node.tag
        if tag not in _ALLOWED_TAGS:
            shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
            raise _Refused(
                f"unsupported YAML tag {shown!r}: lintlora reads plain data only and never "
                "constructs tagged objects", node.start_mark)

    def convert(self, node: Any, depth: int) -> YNode:
        import yaml

        self._check(node, depth)
        span = _span(self.path, node.start_mark, node.end_mark)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, span)
        if isinstance(node, yaml.SequenceNode):
            return YSeq(tuple(self.convert(item, depth + 1) for item in node.value), span)
        # MappingNode
        merged: dict[str, YEntry] = {}
        own: dict[str, YEntry] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _CORE + "merge":
                self._merge(value_node, depth + 1, merged)
                continue
            self._check(key_node, depth + 1)
            if not isinstance(key_node, yaml.ScalarNode):
                # Complex keys (``? [a, b]``) name nothing a training config uses.
                self.convert(value_node, depth + 1)
                continue
            key_span = _span(self.path, key_node.start_mark, key_node.end_mark)
            value = self.convert(value_node, depth + 1)
            if isinstance(value, YScalar) and value.value is None and value.text == "":
                # An empty value: point at the end of its key, not at the next token.
                value = YScalar(None, Span(self.path, key_span.last_line,
                                           (key_span.end_column or key_span.column) + 1),
                                "", True)
            own[str(key_node.value)] = YEntry(str(key_node.value), key_span, value)
        entries = dict(merged)
        for key, entry in own.items():
            entries.pop(key, None)
            entries[key] = entry
        return YMap(entries, span)

    def _merge(self, value_node: Any, depth: int, merged: dict[str, YEntry]) -> None:
        """YAML merge key: earlier mappings win over later ones; the mapping's own keys win."""
        value = self.convert(value_node, depth)
        sources = [value] if isinstance(value, YMap) else (
            [v for v in value.items if isinstance(v, YMap)] if isinstance(value, YSeq) else [])
        for source in sources:
            for key, entry in source.entries.items():
                merged.setdefault(key, entry)

    def _scalar(self, node: Any, span: Span) -> YScalar:
        text = node.value
        plain = node.style is None
        tag = node.tag
        if self.json_mode:
            if plain:
                try:
                    return YScalar(json.loads(text), span, text, True)
                except ValueError:
                    return YScalar(text, span, text, True)
            return YScalar(text, span, text, False)
        if tag == _CORE + "null":
            return YScalar(None, span, text, plain)
        try:
            if tag == _CORE + "bool":
                return YScalar(self.loader.bool_values[text.lower()], span, text, plain)
            if tag == _CORE + "int":
                return YScalar(self.loader.construct_yaml_int(node), span, text, plain)
            if tag == _CORE + "float":
                return YScalar(self.loader.construct_yaml_float(node), span, text, plain)
        except (ValueError, KeyError, IndexError, OverflowError):
            if tag == _CORE + "int" and text.replace("_", "").lstrip("+-").isdigit():
                return YScalar(text, span, text, plain)  # an integer too long to convert
            # an explicit tag on text that is not of its type (``!!float abc``, an empty
            # ``!!bool``): PyYAML's constructors raise ValueError/KeyError/IndexError here
            raise _Refused(f"YAML value {text!r} is tagged !!{tag[len(_CORE):]} but is not "
                           "one", node.start_mark) from None
        return YScalar(str(text), span, text, plain)


def to_python(node: YNode | None, budget: int = MAX_EXPANDED) -> Any:
    """Plain Python data for ``node`` (dicts, lists, scalars), for values kept whole.

    The tree is already bounded by the loader's limits; ``budget`` is a second guard.
    """
    count = 0

    def conv(n: YNode | None) -> Any:
        nonlocal count
        count += 1
        if count > budget:
            raise ValueError("value too large")
        if n is None:
            return None
        if isinstance(n, YScalar):
            return n.value
        if isinstance(n, YSeq):
            return [conv(i) for i in n.items]
        return {k: conv(e.value) for k, e in n.entries.items()}

    return conv(node)
