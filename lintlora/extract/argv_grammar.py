"""How command-line parsers read their words: argparse's matching and fire's values.

Pure functions over :class:`OptSpec` tables and :class:`~lintlora.extract.launch_model.ShellValue`
words, used by :mod:`lintlora.extract.pybind` (Python scripts). Nothing here reads a file or
evaluates text: fire's values are read with :func:`ast.literal_eval` on bounded text only
(never ``eval``).

The rules follow CPython's ``Lib/argparse.py`` (3.12): an option string starts with ``-``
unless it looks like a negative number (``_negative_number_matcher``, when no option does);
``--opt=value`` splits at the first ``=``; ``-bVALUE`` attaches a short option's value;
with ``allow_abbrev`` (the default) a unique prefix of a long option selects it
(``_get_option_tuples``), two or more make the parse fail ("ambiguous option"); ``--`` ends
the options; ``nargs`` ``None`` takes one word, ``"?"`` one if present (else ``const``),
``"*"``/``"+"`` every word up to the next option, ``N`` exactly N; the last occurrence of an
option wins, ``append`` collects; ``type`` converts each word, then ``choices`` is checked.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

from lintlora.extract.launch_bind import MAX_OPTION_VALUES
from lintlora.extract.launch_model import ShellValue

__all__ = ["OptSpec", "Parsed", "parse_options", "convert", "string_to_bool", "fire_value",
           "is_option", "MAX_FIRE_NESTING", "MAX_NUMBER_CHARS"]

MAX_NUMBER_CHARS = 64
"""Characters of a word converted by ``type=int``/``float`` at most (Python's own int() limit
is 4,300 digits; no setting needs more than a few): a longer word is unknown."""
MAX_FIRE_NESTING = 16
"""Brackets nested in a fire value read with :func:`ast.literal_eval` at most (a list of lists
of settings is depth 2); deeper text stays a string of unknown meaning (unknown)."""
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
"""argparse's ``_negative_number_matcher`` (Lib/argparse.py)."""


@dataclass(frozen=True)
class OptSpec:
    """One ``add_argument`` (or dataclass field) as argparse sees it.

    Attributes:
        dest: the attribute name.
        flags: option strings (``("--fp16",)``); empty for a positional argument.
        action: ``"store"``, ``"store_true"``, ``"store_false"``, ``"store_const"``,
            ``"append"``, ``"append_const"``, ``"count"``, ``"boolean_optional"``
            (``argparse.BooleanOptionalAction``) or ``"unknown"``.
        nargs: ``None``, ``"?"``, ``"*"``, ``"+"``, an int, or ``"unknown"``.
        conv: the type: ``"str"``, ``"int"``, ``"float"``, ``"bool"`` (the builtin),
            ``"string_to_bool"`` (transformers), ``"loose"`` (a field whose type is not known:
            text kept unless it reads as a number) or ``"other:<name>"`` (not applied).
        const: the value of ``const=`` (``store_const``, ``nargs="?"``), already a Python value.
        choices: the allowed values, or ``None``.
        choice_map: for ``Literal`` fields, ``str(choice) -> choice`` (transformers'
            ``make_choice_type_function``).
        default: the default as a Python value, when known (``append`` starts from it).
    """

    dest: str
    flags: tuple[str, ...] = ()
    action: str = "store"
    nargs: Any = None
    conv: str = "str"
    const: Any = None
    choices: tuple | None = None
    choice_map: dict | None = None
    default: Any = None

    @property
    def positional(self) -> bool:
        return not self.flags

    def takes_values(self) -> bool:
        return self.action in ("store", "append", "unknown")


@dataclass
class Parsed:
    """What one parse gave: per dest, ``(values, words)``: ``values`` the converted Python
    value or an ``str`` note (``Unknown`` reason) in ``notes``; ``words`` the words that set it.
    ``blocked``: why options not set explicitly may still be set (an unknown word where an
    option could be, or words beyond the limit), or ``None``."""

    values: dict[str, tuple[Any, tuple[ShellValue, ...]]] = field(default_factory=dict)
    notes: dict[str, tuple[str, tuple[ShellValue, ...]]] = field(default_factory=dict)
    blocked: str | None = None
    leftover: list[ShellValue] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    """TrlParser: values of its ``--config`` file by field (defaults the words override)."""

    def set(self, dest: str, value: Any, words: tuple[ShellValue, ...]) -> None:
        self.notes.pop(dest, None)
        self.values[dest] = (value, words)

    def fail(self, dest: str, note: str, words: tuple[ShellValue, ...]) -> None:
        self.values.pop(dest, None)
        self.notes[dest] = (note, words)


def is_option(text: str | None, negative_options: bool = False) -> bool:
    """Whether argparse reads ``text`` as an option string rather than a value."""
    if text is None or len(text) < 2 or not text.startswith("-"):
        return False
    if not negative_options and _NEGATIVE.match(text):
        return False
    return " " not in text or text.startswith("--")


def string_to_bool(text: str) -> bool:
    """transformers ``hf_argparser.py`` ``string_to_bool``: yes/true/t/y/1 and no/false/f/n/0,
    case-insensitive; anything else raises ``ValueError`` (argparse: "invalid value")."""
    low = text.lower()
    if low in ("yes", "true", "t", "y", "1"):
        return True
    if low in ("no", "false", "f", "n", "0"):
        return False
    raise ValueError(text)


def convert(conv: str, text: str) -> Any:
    """``text`` converted as ``type=`` does; raises ``ValueError`` with the reason (bounded:
    numbers of more than :data:`MAX_NUMBER_CHARS` characters are refused)."""
    if conv == "str":
        return text
    if conv in ("int", "float", "loose") and len(text) > MAX_NUMBER_CHARS:
        if conv == "loose" and not re.fullmatch(r"\s*[+-]?[\d._]+(e[+-]?\d+)?\s*", text, re.I):
            return text
        raise ValueError(f"a number of more than {MAX_NUMBER_CHARS} characters")
    if conv == "int":
        return int(text)
    if conv == "float":
        number = float(text)
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    if conv == "bool":
        return bool(text)  # argparse's type=bool: any non-empty word is True
    if conv == "string_to_bool":
        return string_to_bool(text)
    if conv == "loose":
        if re.fullmatch(r"\s*[+-]?\d[\d_]*(\.\d*)?(e[+-]?\d+)?\s*|\s*[+-]?\.\d+(e[+-]?\d+)?\s*",
                        text, re.I):
            raise ValueError("the field's type is not known (a number may be an int, a float "
                             "or a string)")
        return text
    raise ValueError(f"type={conv.split(':', 1)[-1]} is not applied by lintlora")


def _values_for(spec: OptSpec, words: list[ShellValue], i: int, attached: ShellValue | None,
                negative: bool) -> tuple[list[ShellValue] | None, int]:
    """The value words of an option found at ``i`` (already past it): (words, next index), or
    (None, i) when argparse would refuse (a missing value)."""
    nargs = spec.nargs
    taken: list[ShellValue] = [attached] if attached is not None else []
    if nargs is None or nargs == "?":
        if taken:
            return taken, i
        if i < len(words) and not is_option(words[i].text, negative):
            return [words[i]], i + 1
        return ([] if nargs == "?" else None), i
    if isinstance(nargs, int):
        while len(taken) < nargs and i < len(words) and not is_option(words[i].text, negative):
            taken.append(words[i])
            i += 1
        return (taken if len(taken) == nargs else None), i
    if nargs in ("*", "+"):
        while i < len(words) and not is_option(words[i].text, negative):
            taken.append(words[i])
            i += 1
            if len(taken) > MAX_OPTION_VALUES:
                return None, i
        return (taken if (taken or nargs == "*") else None), i
    return None, i


def _match(name: str, table: dict[str, tuple[OptSpec, bool]], abbrev: bool
           ) -> tuple[OptSpec | None, bool, list[OptSpec]]:
    """(spec, negated, ambiguous candidates) for an option string."""
    hit = table.get(name)
    if hit is not None:
        return hit[0], hit[1], []
    if abbrev and name.startswith("--") and len(name) > 2:
        found = {id(s): (s, neg) for flag, (s, neg) in table.items()
                 if flag.startswith(name) and flag.startswith("--")}
        if len(found) == 1:
            s, neg = next(iter(found.values()))
            return s, neg, []
        if len(found) > 1:
            return None, False, [s for s, _n in found.values()]
    return None, False, []


def parse_options(specs: list[OptSpec], words: tuple[ShellValue, ...], *, abbrev: bool = True,
                  limit: int = 4096) -> Parsed:
    """Parse ``words`` against ``specs`` as argparse's ``parse_known_args`` does (see the
    module docstring); values are converted and checked against ``choices``.

    A word whose text is unknown where an option could stand makes ``blocked`` say so (it may
    be any option); as a value it makes that option's value unknown. Words beyond ``limit``
    are not read (``blocked``).
    """
    out = Parsed()
    table: dict[str, tuple[OptSpec, bool]] = {}
    for s in specs:
        for f in s.flags:
            table.setdefault(f, (s, False))
            if s.action == "boolean_optional" and f.startswith("--"):
                table.setdefault("--no-" + f[2:], (s, True))
    negative = any(_NEGATIVE.match(f) for f in table)
    ws = list(words[:limit])
    if len(words) > limit:
        out.blocked = f"the command line has more than {limit:,} words (only the first are read)"
    positional_words: list[ShellValue] = []
    counts: dict[str, int] = {}
    appended: dict[str, list] = {}
    only_positional = False
    i = 0
    while i < len(ws):
        w = ws[i]
        text = w.text
        i += 1
        if text is None and not only_positional:
            out.blocked = out.blocked or (
                f"an unknown word ({w.note or w.raw or 'not known'}) stands where an option "
                "could be")
            continue
        if only_positional or not is_option(text, negative):
            positional_words.append(w)
            continue
        if text == "--":
            only_positional = True
            continue
        attached: ShellValue | None = None
        name = text
        if text.startswith("--") and "=" in text:
            name, rest = text.split("=", 1)
            attached = ShellValue(rest, w.origin, w.raw, w.line, w.note, w.assigned_line, w.column)
        spec, negated, ambiguous = _match(name, table, abbrev)
        if spec is None and not text.startswith("--") and len(text) > 2 and text[:2] in table:
            spec, negated = table[text[:2]]
            rest = text[2:]
            if spec.takes_values():
                attached = ShellValue(rest[1:] if rest.startswith("=") else rest, w.origin,
                                      w.raw, w.line, w.note, w.assigned_line, w.column)
        if spec is None:
            for cand in ambiguous:
                out.fail(cand.dest, f"`{name}` is an ambiguous abbreviation (argparse refuses "
                                    "the command line)", (w,))
            if not ambiguous:
                out.leftover.append(w)
            continue
        flag_words = (w,)
        action = spec.action
        if action == "unknown":
            out.fail(spec.dest, f"`{name}` uses an action lintlora does not follow", flag_words)
            _vals, i = _values_for(spec, ws, i, attached, negative)
            continue
        if not spec.takes_values():
            if attached is not None:
                out.fail(spec.dest, f"`{name}` takes no value (argparse refuses "
                                    f"`{text}`)", flag_words)
                continue
            if action == "store_true":
                out.set(spec.dest, True, flag_words)
            elif action == "store_false":
                out.set(spec.dest, False, flag_words)
            elif action == "store_const":
                out.set(spec.dest, spec.const, flag_words)
            elif action == "boolean_optional":
                out.set(spec.dest, not negated, flag_words)
            elif action == "count":
                counts[spec.dest] = counts.get(spec.dest, 0) + 1
                base = spec.default if isinstance(spec.default, int) else 0
                out.set(spec.dest, base + counts[spec.dest], flag_words)
            elif action == "append_const":
                appended.setdefault(spec.dest, list(spec.default or ()) if isinstance(
                    spec.default, (list, tuple)) else []).append(spec.const)
                out.set(spec.dest, tuple(appended[spec.dest]), flag_words)
            continue
        vals, i = _values_for(spec, ws, i, attached, negative)
        if vals is None:
            out.fail(spec.dest, f"`{name}` is given without its value (argparse refuses the "
                                "command line)", flag_words)
            continue
        used = flag_words + tuple(v for v in vals if v is not attached)  # `--x=1`: one word
        value = _converted(spec, vals, name)
        if isinstance(value, _Note):
            out.fail(spec.dest, value.text, used)
            continue
        if action == "append":
            start = appended.get(spec.dest)
            if start is None:
                start = list(spec.default) if isinstance(spec.default, (list, tuple)) else []
                appended[spec.dest] = start
            start.append(value)
            out.set(spec.dest, tuple(start), used)
        else:
            out.set(spec.dest, value, used)
    _positionals(specs, positional_words, out)
    return out


class _Note:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_SHOWN_VALUE = re.compile(r"[\w.+-]{0,16}", re.ASCII)


def _shown(text: str) -> str:
    """A launch word as a note may quote it: a short plain word (``maybe``, ``1e-4x``) as it is,
    anything else by its length. A value that does not convert may be a credential passed to
    the wrong option (``--fp16 $HF_TOKEN`` expanded): a note is printed in every report."""
    return text if _SHOWN_VALUE.fullmatch(text) else f"<a value of {len(text)} characters>"


def _converted(spec: OptSpec, vals: list[ShellValue], name: str) -> Any:
    """The option's value from its words (a :class:`_Note` when it cannot be known)."""
    for v in vals:
        if v.text is None:
            return _Note(f"`{name}` is set at launch by an unknown value: "
                         f"{v.note or v.raw or 'not known'}")
    if not vals:  # nargs="?" without a value
        return spec.const
    items = []
    for v in vals:
        try:
            item = convert(spec.conv, v.text)  # type: ignore[arg-type]
        except ValueError as exc:
            shown = _shown(v.text)  # type: ignore[arg-type]
            reason = str(exc).replace(v.text, shown) if v.text else str(exc)
            return _Note(f"`{name} {shown}` does not convert ({reason})")
        if spec.choice_map is not None:
            item = spec.choice_map.get(item, item)
        if spec.choices is not None and item not in spec.choices:
            return _Note(f"`{name} {_shown(v.text)}` is not one of the choices "  # type: ignore[arg-type]
                         f"{', '.join(map(str, spec.choices[:8]))} (argparse refuses it)")
        items.append(item)
    if spec.nargs is None or spec.nargs == "?":
        return items[0]
    return tuple(items)


def _positionals(specs: list[OptSpec], words: list[ShellValue], out: Parsed) -> None:
    """Positional arguments in declaration order (``nargs`` ``None``/``"?"`` one word each,
    ``"*"``/``"+"`` the rest)."""
    i = 0
    for spec in specs:
        if not spec.positional:
            continue
        if spec.nargs in ("*", "+"):
            vals, i = words[i:], len(words)
        elif isinstance(spec.nargs, int):
            vals, i = words[i:i + spec.nargs], i + spec.nargs
        elif i < len(words):
            vals, i = [words[i]], i + 1
        else:
            continue
        if not vals:
            continue
        value = _converted(spec, list(vals), spec.dest)
        if isinstance(value, _Note):
            out.fail(spec.dest, value.text, tuple(vals))
        else:
            out.set(spec.dest, value, tuple(vals))
    out.leftover.extend(words[i:])


def fire_value(text: str) -> Any:
    """A fire argument's value (python-fire ``fire/parser.py`` ``DefaultParseValue``: a Python
    literal when the text is one, with bare names read as strings; else the text itself).

    Read with :func:`ast.literal_eval` on text of at most 4,096 characters and at most
    :data:`MAX_FIRE_NESTING` nested brackets; never evaluated. Bare words inside containers
    are not turned into strings here: such a value stays the text.
    """
    stripped = text.strip()
    if len(stripped) > 4096:
        return text
    depth = best = 0
    for ch in stripped:
        if ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth -= 1
    if best > MAX_FIRE_NESTING:
        raise ValueError(f"nested more than {MAX_FIRE_NESTING} deep")
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text
    if isinstance(value, (set, frozenset, bytes, complex)):
        return text
    if isinstance(value, list):
        value = tuple(value)
    return value
