"""Output escaping, one function per format: what a file name, a value or a message may hold
never becomes structure of the report it is printed in.

In CI the names and values lintlora prints come from whoever opened the pull request (a file
name, an environment-variable name, a model id, a message quoting a script). Each reporter
passes every such string through its format's function here, applied to whole messages (the
message is the untrusted part, whoever built it):

- :func:`for_terminal`: text reports, ``--show-setup``, ``lintlora estimate``, stderr lines;
  :func:`terminal_line` for a whole printed line.
- :func:`for_github_command_data`, :func:`for_github_command_property`: GitHub Actions
  workflow commands (``--format github``).
- :func:`markdown_code_span`, :func:`markdown_text`, :func:`markdown_table_cell`:
  ``--format markdown`` (a pull-request comment).
- :func:`for_sarif_text`, :func:`sarif_uri`: ``--format sarif``.
- :func:`json_dumps`: every JSON document (exact: only non-finite numbers are changed).

Characters no format may print as they are (:func:`visible`): every character that
:meth:`str.isprintable` rejects except the space, that is Unicode's "Other" (``Cc`` controls:
C0, DEL, C1; ``Cf`` format characters, among them the bidirectional overrides and isolates
U+202A-U+202E, U+2066-U+2069 and the marks U+200E, U+200F, U+061C; ``Cs`` surrogates; ``Co``
private use; ``Cn`` unassigned) and "Separator" (``Zl`` U+2028, ``Zp`` U+2029, ``Zs`` spaces
other than U+0020) categories. Each is shown as an escape a reader can see: ``\\n``, ``\\r``,
``\\t``; ``\\x1b`` for the others up to U+00FF; ``\\xff`` for a byte of a file name that is not
UTF-8 (Python decodes such a byte ``b`` as the lone surrogate ``U+DC00 + b``, PEP 383);
``<U+202E>`` for the rest (the notation ``less`` uses for such characters). A backslash is
not doubled, so ``\\x1b`` in a report may also be those four characters in a name: the
escapes are for reading, the exact value is in the JSON output.

Also neutralised everywhere: ``##[``, the GitHub Actions runner's legacy command prefix, which
it looks for anywhere in a line of a job's log (``ActionCommand.TryParse``:
``message.IndexOf("##[")`` for any registered command, ``stop-commands`` and ``error``
included), shown as ``#\\x23[``.
"""

from __future__ import annotations

import json
import math
import os
import re
import urllib.parse
from typing import Any

__all__ = [
    "visible",
    "for_terminal",
    "terminal_line",
    "for_github_command_data",
    "for_github_command_property",
    "markdown_code_span",
    "markdown_text",
    "markdown_table_cell",
    "for_sarif_text",
    "sarif_uri",
    "json_dumps",
]

_CANDIDATE = re.compile(r"[^ -~]")
"""Every character outside printable ASCII: the only ones :func:`visible` may change."""

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

_LEGACY_COMMAND = "##["
_LEGACY_COMMAND_SHOWN = "#\\x23["


def _shown(char: str) -> str:
    """The visible escape of one unprintable character."""
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a non-UTF-8 name, surrogate-escaped (PEP 383)
        return f"\\x{code - 0xDC00:02x}"
    return f"<U+{code:04X}>"


def _visible_char(match: re.Match[str]) -> str:
    char = match.group()
    return char if char.isprintable() else _shown(char)


def _visible_keeping_newlines(match: re.Match[str]) -> str:
    char = match.group()
    return char if char == "\n" or char.isprintable() else _shown(char)


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that is neither printable nor the space replaced by a
    visible escape (see the module docstring), and the runner's ``##[`` broken up.

    ``keep_newlines=True`` keeps ``\\n`` (for formats that carry a line break safely, as
    workflow-command data does with ``%0A``); ``\\r`` is always escaped (a lone CR returns
    a terminal's cursor to the line start and overprints). Linear in ``len(text)``.
    """
    text = str(text)
    if not (text.isascii() and text.isprintable()):
        text = _CANDIDATE.sub(_visible_keeping_newlines if keep_newlines else _visible_char,
                              text)
    if _LEGACY_COMMAND in text:
        text = text.replace(_LEGACY_COMMAND, _LEGACY_COMMAND_SHOWN)
    return text


# ---- terminal ----------------------------------------------------------------------------------

def for_terminal(text: str) -> str:
    """``text`` (a name, a value, a message) for a line of terminal output: no control
    character, no ESC sequence, no bidirectional override, no line break (``\\n`` shown),
    no ``##[``. The text report is what pre-commit and CI print in a GitHub Actions log, so a
    line break in a name would start a line the runner reads as a workflow command."""
    return visible(text)


_COMMAND_START = re.compile(r"\s*::")


def terminal_line(line: str) -> str:
    """A whole printed line, made so that the GitHub Actions runner cannot take it for a
    workflow command: one whose first characters after leading white space are ``::``
    (``ActionCommand.TryParseV2``: ``message.TrimStart()``, then ``StartsWith("::")``) gets
    its first ``:`` shown as ``\\x3a``. The line's parts must already have gone through
    :func:`for_terminal` (it holds no line break)."""
    match = _COMMAND_START.match(line)
    if match is None:
        return line
    colon = match.end() - 2
    return line[:colon] + "\\x3a" + line[colon + 1:]


# ---- GitHub workflow commands ---------------------------------------------------------------------

def for_github_command_data(text: str) -> str:
    """``text`` as the data (message) of a GitHub Actions workflow command
    (``::warning file=...::DATA``).

    Unprintable characters are shown (:func:`visible`); line breaks (CR, LF) stay line
    breaks of the annotation, encoded, so the command stays one line: the runner's own
    escaping, as the toolkit writes it (actions/toolkit ``packages/core/src/command.ts``
    ``escapeData``) and the runner reverses it (actions/runner
    ``src/Runner.Common/ActionCommand.cs`` ``_escapeDataMappings``): ``%`` -> ``%25``,
    CR -> ``%0D``, LF -> ``%0A``.
    """
    return "%0D".join(visible(piece, keep_newlines=True).replace("%", "%25").replace("\n", "%0A")
                      for piece in str(text).split("\r"))


def for_github_command_property(text: str) -> str:
    """``text`` as a property value of a workflow command (``file=``, ``title=``).

    As :func:`for_github_command_data` (unprintable characters shown; CR and LF encoded, so
    the runner gives back a file name that holds one exactly and the annotation lands on that
    file), then also the properties' own escaping (``escapeProperty`` in actions/toolkit
    ``command.ts``; the runner's ``_escapePropertyMappings``): ``:`` -> ``%3A`` (which would
    end the properties) and ``,`` -> ``%2C`` (which would start another property).
    """
    return for_github_command_data(text).replace(":", "%3A").replace(",", "%2C")


# ---- Markdown (CommonMark, GitHub-flavoured) ------------------------------------------------------

_BACKTICKS = re.compile(r"`+")


def markdown_code_span(text: str) -> str:
    """``text`` as one CommonMark code span that shows it literally.

    Built by the rule of the CommonMark spec (0.31.2, section 6.1 "Code spans": "A code span
    begins with a backtick string and ends with a backtick string of equal length"; "If the
    resulting string both begins and ends with a space character, but does not consist
    entirely of space characters, a single space character is removed from the front and
    back"): the fence is one backtick longer than the longest backtick run inside, so no run
    inside can close it, and a space pads both ends when the content starts or ends with a
    backtick (which would join the fence) or both starts and ends with a space (which the
    parser would strip). A line break cannot be in a code span of a table cell (it ends the
    row) and would become a space anyway: it is shown as ``\\n``, as every unprintable
    character is (:func:`visible`). ``|`` is left to :func:`markdown_table_cell`. Returns
    ``""`` for ``""``.
    """
    content = visible(text)
    if not content:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * (longest + 1)
    if (content[0] == "`" or content[-1] == "`"
            or (content[0] == " " and content[-1] == " " and content.strip(" "))):
        content = f" {content} "
    return f"{fence}{content}{fence}"


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]~$])")
"""Backslash-escaped outside code spans (CommonMark 2.4 "Backslash escapes": any ASCII
punctuation may be escaped): emphasis, code, links and images, GFM strikethrough, GitHub's
math; ``<``, ``>`` and ``&`` become entities, so neither raw HTML nor an autolink nor an
entity can start."""

_REFERENCE = re.compile(r"([@#])")

_AUTOLINK = re.compile(r"(?i)://|www\.")
"""What GFM's autolink extension (GFM spec section 6.9) starts a link at: ``www.`` and a
scheme's ``://``; a zero-width space before the last character stops it."""


def _markdown_literal(text: str) -> str:
    """Plain ``text`` (no code spans) as Markdown inline content that renders as ``text``."""
    text = visible(text.replace("\r\n", "\n"), keep_newlines=True)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)
    # GitHub links @user and @org/team (a notification) and #123 (a cross-reference) in
    # comment text; a zero-width space after the sign stops that and reads the same, as
    # Renovate's and Dependabot's pull-request bodies write them ("@&#8203;user")
    text = _REFERENCE.sub(r"\1&#8203;", text)
    # nor a bare address a link (GFM's autolink extension links "www." and "scheme://")
    text = _AUTOLINK.sub(lambda m: m.group()[:-1] + "&#8203;" + m.group()[-1], text)
    return text.replace("\n", "<br>")


def _code_spans(text: str) -> list[tuple[bool, str]]:
    """``text`` split into ``(is_code, content)`` pieces by CommonMark's pairing of backtick
    strings (section 6.1): a run of ``n`` backticks opens a code span closed by the next run
    of exactly ``n``; a run with no such partner is literal backticks. Code content is
    normalised as the spec says (line endings to spaces; one space stripped from each end
    when both ends have one and it is not all spaces). Linear in ``len(text)``."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    partner: list[int | None] = [None] * len(runs)
    later: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        partner[index] = later.get(length)
        later[length] = index
    pieces: list[tuple[bool, str]] = []
    position = 0
    index = 0
    while index < len(runs):
        close = partner[index]
        if close is None:
            index += 1
            continue
        start, end = runs[index]
        if start > position:
            pieces.append((False, text[position:start]))
        content = text[end:runs[close][0]].replace("\r\n", " ").replace("\n", " ")
        if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
            content = content[1:-1]
        pieces.append((True, content))
        position = runs[close][1]
        index = close + 1
    if position < len(text):
        pieces.append((False, text[position:]))
    return pieces


def markdown_text(text: str) -> str:
    """A message (plain text whose backtick-quoted parts are code, as lintlora's rules write
    them) as Markdown inline content that renders as exactly that text.

    The message is split into code spans by CommonMark's own pairing rule (:func:`_code_spans`);
    each code part is written again by :func:`markdown_code_span` (its fence chosen here, so
    nothing inside can end it early), each text part with every Markdown-significant character
    escaped: ``\\``, backticks, ``*``, ``_``, ``[``, ``]``, ``~``, ``$`` backslash-escaped;
    ``<``, ``>``, ``&`` as entities (no raw HTML, no autolink); ``@`` and ``#`` followed by a
    zero-width space (``&#8203;``), so ``@org/team`` notifies nobody and ``#12`` links no issue,
    and one inside ``://`` and ``www.`` so no bare address becomes a link (GFM's extended
    autolinks); line breaks as ``<br>``. Unprintable characters are shown (:func:`visible`). Inline content
    only: the caller puts it after other text on a line (a table cell, a list item), so no
    block (heading, list, quote) can start. ``|`` is left to :func:`markdown_table_cell`.
    """
    return "".join(markdown_code_span(content) if is_code else _markdown_literal(content)
                   for is_code, content in _code_spans(str(text)))


def markdown_table_cell(markdown: str) -> str:
    """Inline Markdown (built by :func:`markdown_text`, :func:`markdown_code_span`) made safe
    as a GFM table cell: every ``|`` written ``\\|``. The GitHub Flavored Markdown spec
    (section 4.10, "Tables (extension)") splits a row at unescaped pipes before any inline
    parsing, code spans included ("It is possible to include a pipe in a cell's content by
    escaping it, including inside other inline spans"), and removes the backslash again."""
    return markdown.replace("|", "\\|")


# ---- SARIF ------------------------------------------------------------------------------------------

_SARIF_BRACKET = re.compile(r"([\[\]])")


def for_sarif_text(text: str) -> str:
    """``text`` for a SARIF ``message.text`` (a plain-text message, SARIF 2.1.0 section
    3.11.3). Unprintable characters are shown (:func:`visible`, line breaks kept: JSON
    carries them and viewers show them as such); ``[`` and ``]`` are backslash-escaped, as
    section 3.11.6 ("Messages with embedded links") requires of literal brackets, so a
    ``[text](target)`` in a name is no link in a viewer."""
    return _SARIF_BRACKET.sub(r"\\\1", visible(text, keep_newlines=True))


def sarif_uri(path: str) -> str:
    """A relative path (``/``-separated) as a SARIF ``artifactLocation.uri``: a URI reference
    (SARIF 2.1.0 section 3.4.3; RFC 3986), each byte of the file name percent-encoded except
    the unreserved characters and ``/`` (RFC 3986 section 2.1, 2.3). The bytes are the name's
    own (:func:`os.fsencode`): a name that is not UTF-8 keeps its bytes (``b"\\xff.py"`` ->
    ``%FF.py``) instead of failing to encode."""
    return urllib.parse.quote(os.fsencode(path), safe="/")


# ---- JSON -------------------------------------------------------------------------------------------

def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None`` (JSON has no such
    number: RFC 8259 section 6, "Numeric values that cannot be represented ... such as
    Infinity and NaN are not permitted")."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def json_dumps(document: Any, *, indent: int | None = 2) -> str:
    """``document`` as JSON text that any parser accepts, exact otherwise.

    Strict JSON (``allow_nan=False``): a NaN or infinite float, which :func:`json.dumps`
    would write as ``NaN``/``Infinity`` (no JSON), becomes ``null``, "not known". ASCII only
    (``ensure_ascii``): a name that is not UTF-8 (a lone surrogate) is written as its
    ``\\udcff`` escape instead of failing on a UTF-8 stream. ``##[`` inside a string is
    written ``#\\u0023[``: the same JSON string, but not the runner's legacy command prefix
    when the document is printed in a GitHub Actions log.
    """
    try:
        text = json.dumps(document, indent=indent, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(document), indent=indent, allow_nan=False)
    return text.replace(_LEGACY_COMMAND, "#\\u0023[")
