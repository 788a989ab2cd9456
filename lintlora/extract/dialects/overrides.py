"""Command-line overrides of a YAML config, as each tool's CLI applies them (issue 15 item 2).

:func:`apply_launch` returns the config's top-level mapping with the values the launch's
words set (each a :class:`~lintlora.extract.dialects._base.LaunchEntry`: its Setting has origin
``LAUNCH``, span the launch line, source the words); the dialect then builds the setup from it
as from the file. The grammars, by tool:

- **LLaMA-Factory** (``llamafactory-cli train x.yaml key=value ...``): ``read_args`` in
  ``src/llamafactory/hparams/parser.py`` (hiyouga/LLaMA-Factory, read at commit 003a2acb1a2e): when ``sys.argv[1]``
  ends with ``.yaml``/``.yml``/``.json``, ``OmegaConf.merge(OmegaConf.load(argv[1]),
  OmegaConf.from_cli(argv[2:]))``: each word ``key=value`` (``key`` dotted for nested keys),
  the value read by OmegaConf's grammar (:func:`dotlist_value`).
- **torchtune** (``tune run RECIPE --config x.yaml key=value ~key``):
  ``torchtune/config/_utils.py`` ``_merge_yaml_and_cli_args`` (pytorch/torchtune, read at commit 0383a7306c5e):
  ``~key.sub`` removes a key (not a ``_component_``), ``key=value`` must hold exactly one
  ``=``, ``key=value`` on a key whose value has a ``_component_`` sets that component;
  the dotlist is merged over the YAML (``OmegaConf.from_dotlist``).
- **axolotl** (``axolotl train x.yml --key value`` / ``--key=value`` / ``--flag`` /
  ``--no-flag``): ``src/axolotl/cli/utils.py`` ``add_options_from_config`` (click options
  ``--name-with-dashes``, bool fields ``--name/--no-name``) and ``load_cfg`` in
  ``src/axolotl/cli/config.py`` (axolotl-ai-cloud/axolotl; the same loop is in every version read, from
  ``scripts/finetune.py`` to ``cli/config.py``): each option given
  replaces the config's top-level key (``cfg[k] = kwargs[k]``; no nested keys). The
  fire-era ``python -m axolotl.cli.train x.yml --key value`` spells keys with underscores;
  both spellings are read. Values are click strings that axolotl's pydantic model then
  coerces; lintlora reads them as YAML scalars (numbers, booleans).
- **litgpt** (``litgpt finetune_lora CHECKPOINT --config x.yaml --devices 4
  --train.micro_batch_size 2``): jsonargparse's ``CLI`` over ``litgpt/finetune/lora.py``
  ``setup`` (Lightning-AI/litgpt; not re-read for this module): ``--a.b value`` / ``--a.b=value`` set nested keys,
  values read as YAML; the first positional word is ``checkpoint_dir``; the command line wins
  over ``--config``.

A word whose text is unknown makes the key it sets unknown ("set at launch by an unknown
value"); where the key itself cannot be read, the words are noted and the rest applies.
"""

from __future__ import annotations

import re
from typing import Any

from lintlora.extract.dialects._base import LaunchEntry
from lintlora.extract.launch_bind import (
    MAX_BOUND_WORDS, MAX_OPTION_VALUES, CommandLine, word_source, word_span,
)
from lintlora.extract.launch_model import ShellValue
from lintlora.extract.yaml_loader import YEntry, YMap, YNode, YScalar, YSeq

__all__ = ["apply_launch", "dotlist_value", "tool_of", "MAX_KEY_PARTS"]

MAX_KEY_PARTS = 16
"""Dotted parts of one override key at most (``model.lora_rank`` has 2; torchtune's deepest
keys have 4); a deeper key is not applied (noted)."""
MAX_KEY_CHARS = 200
"""Characters of one override key at most."""

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*")
_INT = re.compile(r"[+-]?\d[\d_]*")
_FLOAT = re.compile(r"[+-]?(\d[\d_]*\.?[\d_]*([eE][+-]?\d+)?|\.\d[\d_]*([eE][+-]?\d+)?)")
_REMOVE: Any = object()

_LAUNCHERS = {"llamafactory": "llamafactory", "tune": "tune", "axolotl": "axolotl",
              "litgpt": "litgpt"}
_DIALECTS = {"llama-factory": "llamafactory", "llama-factory-v1": "llamafactory",
             "torchtune": "tune", "axolotl": "axolotl", "litgpt": "litgpt"}


def tool_of(command_line: CommandLine, dialect: str | None) -> str | None:
    """Whose grammar reads the words: the launcher's (``llamafactory``, ``tune``, ``axolotl``,
    ``litgpt``), else the dialect's (a ``python -m axolotl.cli.train x.yml`` launch), else
    ``None`` (the words are not overrides lintlora reads)."""
    return _LAUNCHERS.get(command_line.launcher) or _DIALECTS.get(dialect or "")


def dotlist_value(text: str, yaml_bools: bool = False) -> Any:
    """A dotlist value as OmegaConf's grammar reads it (``omegaconf/grammar``): ``null``;
    ``true``/``false`` in any case (with ``yaml_bools`` also YAML 1.1's yes/no/on/off, as
    jsonargparse's YAML reading has); integers and floats (``_`` allowed, ``1e-4``);
    ``'quoted'``/``"quoted"`` strings; a flat ``[a, b]`` list; anything else the text.
    A nested list or a mapping raises ``ValueError`` (not read)."""
    t = text.strip()
    low = t.lower()
    if low == "null" or (yaml_bools and low in ("~", "")):
        return None
    if low in ("true", "false"):
        return low == "true"
    if yaml_bools and low in ("yes", "no", "on", "off"):
        return low in ("yes", "on")
    if len(t) <= 64 and _INT.fullmatch(t):
        return int(t.replace("_", ""))
    if len(t) <= 64 and _FLOAT.fullmatch(t) and any(c.isdigit() for c in t):
        try:
            return float(t.replace("_", ""))
        except ValueError:
            return t
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1]
        if "[" in inner or "{" in inner:
            raise ValueError("a nested list is not read")
        parts = [p for p in inner.split(",")] if inner.strip() else []
        if len(parts) > MAX_OPTION_VALUES:
            raise ValueError(f"a list of more than {MAX_OPTION_VALUES} items")
        return [dotlist_value(p, yaml_bools) for p in parts]
    if t.startswith("{"):
        raise ValueError("a mapping is not read")
    return t


class _Override:
    __slots__ = ("keys", "value", "words", "note")

    def __init__(self, keys: tuple[str, ...], value: Any, words: tuple[ShellValue, ...],
                 note: str = "") -> None:
        self.keys = keys
        self.value = value
        self.words = words
        self.note = note


def _unknown_note(w: ShellValue) -> str:
    return f"set at launch by an unknown value: {w.note or w.raw or 'not known'}"


def _key_parts(key: str) -> tuple[str, ...] | None:
    if len(key) > MAX_KEY_CHARS or not _KEY.fullmatch(key):
        return None
    parts = tuple(key.split("."))
    return parts if len(parts) <= MAX_KEY_PARTS else None


def _dotlist(words: list[ShellValue], notes: list[str], tune: bool, root: YMap) -> list[_Override]:
    """``key=value`` words (OmegaConf dotlist; torchtune's ``~key`` and ``_component_``)."""
    out: list[_Override] = []
    for w in words:
        text = w.text
        if text is None and tune and w.raw.startswith("~") and _key_parts(w.raw[1:]):
            text = w.raw  # `~key`: bash leaves it as written when no user has that name
        if text is None:
            raw = w.raw or ""
            head = raw.split("=", 1)[0]
            parts = _key_parts(head) if "=" in raw else None
            if parts is not None:
                out.append(_Override(parts, None, (w,), _unknown_note(w)))
            else:
                notes.append(f"an override the shell reader cannot follow ({w.note or raw}) "
                             f"at line {w.line}: it may set any key")
            continue
        if tune and text.startswith("~"):
            parts = _key_parts(text[1:].split("=")[0])
            if parts is not None:
                out.append(_Override(parts, _REMOVE, (w,)))
            continue
        if "=" not in text or (tune and text.count("=") != 1):
            notes.append(f"`{text[:60]}` at line {w.line} is not a key=value override "
                         "(the tool refuses the command line)")
            continue
        key, value_text = text.split("=", 1)
        parts = _key_parts(key)
        if parts is None:
            notes.append(f"`{key[:60]}` at line {w.line} is not a key lintlora reads")
            continue
        if tune and len(parts) == 1:
            e = root.get(parts[0])
            if e is not None and isinstance(e.value, YMap) and "_component_" in e.value:
                parts = (parts[0], "_component_")
        try:
            value = dotlist_value(value_text)
        except ValueError as exc:
            out.append(_Override(parts, None, (w,), f"set at launch to a value not read ({exc})"))
            continue
        out.append(_Override(parts, value, (w,)))
    return out


def _options(words: list[ShellValue], notes: list[str], tool: str) -> list[_Override]:
    """``--key value`` / ``--key=value`` words (axolotl's click options, litgpt's
    jsonargparse); axolotl's bare ``--flag`` is True and ``--no-flag`` False."""
    out: list[_Override] = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        text = w.text
        if text is None:
            notes.append(f"an unknown word ({w.note or w.raw}) at line {w.line} where an option "
                         "could be: it may set any key")
            continue
        if not text.startswith("--") or len(text) < 3:
            continue
        body, value_w = text[2:], None
        attached = "=" in body
        if attached:
            body, rest = body.split("=", 1)
            value_w = ShellValue(rest, w.origin, w.raw, w.line, w.note, w.assigned_line)
        if tool == "axolotl":
            key = body.replace("-", "_")
            if "." in key:
                notes.append(f"`--{body[:60]}` at line {w.line}: axolotl sets top-level keys only")
                continue
        else:
            key = body
        parts = _key_parts(key)
        if parts is None:
            notes.append(f"`--{body[:60]}` at line {w.line} is not a key lintlora reads")
            continue
        if value_w is None:
            nxt = words[i] if i < len(words) else None
            if nxt is not None and not (nxt.text or "").startswith("--"):
                value_w = nxt
                i += 1
            elif tool == "axolotl":
                if key.startswith("no_") and len(key) > 3:
                    out.append(_Override((key[3:],), False, (w,)))
                else:
                    out.append(_Override(parts, True, (w,)))
                continue
            else:
                notes.append(f"`--{body[:60]}` at line {w.line} has no value")
                continue
        used = (w,) if attached else (w, value_w)
        if value_w.text is None:
            out.append(_Override(parts, None, used, _unknown_note(value_w)))
            continue
        try:
            value = dotlist_value(value_w.text, yaml_bools=True)
        except ValueError as exc:
            out.append(_Override(parts, None, used, f"set at launch to a value not read ({exc})"))
            continue
        out.append(_Override(parts, value, used))
    return out


def _config_words(words: list[ShellValue]) -> list[ShellValue]:
    """The words without ``--config PATH`` / ``--config=PATH``."""
    out: list[ShellValue] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w.text == "--config":
            skip = True
            continue
        if w.text is not None and w.text.startswith("--config="):
            continue
        out.append(w)
    return out


def _overrides(tool: str, cl: CommandLine, root: YMap, notes: list[str]) -> list[_Override]:
    words = list(cl.words[:MAX_BOUND_WORDS])
    if len(cl.words) > MAX_BOUND_WORDS:
        notes.append(f"the command line has more than {MAX_BOUND_WORDS:,} words: only the first "
                     "are read")
    if tool == "llamafactory":
        if not words or not (words[0].text or "").lower().endswith((".yaml", ".yml", ".json")):
            return []
        return _dotlist(words[1:], notes, False, root)
    if tool == "tune":
        return _dotlist(_config_words(words), notes, True, root)
    if tool == "axolotl":
        rest = words[1:] if words and not (words[0].text or "--").startswith("--") else words
        return _options(rest, notes, tool)
    if tool == "litgpt":
        rest = _config_words(words)
        out: list[_Override] = []
        if rest and rest[0].text is not None and not rest[0].text.startswith("-"):
            out.append(_Override(("checkpoint_dir",), rest[0].text, (rest[0],)))
            rest = rest[1:]
        return out + _options(rest, notes, tool)
    return []


def _node(value: Any, cl: CommandLine, words: tuple[ShellValue, ...]) -> YNode:
    span = word_span(cl, words[-1])
    text = words[-1].text or ""
    if isinstance(value, list):
        return YSeq(tuple(YScalar(v, span, str(v)) for v in value), span)
    return YScalar(value, span, text)


def _set(m: YMap, keys: tuple[str, ...], ov: _Override, cl: CommandLine) -> YMap:
    entries = dict(m.entries)
    span = word_span(cl, ov.words[-1])
    head = keys[0]
    if len(keys) == 1:
        if ov.value is _REMOVE:
            entries.pop(head, None)
        else:
            value = YScalar(None, span, "") if ov.note else _node(ov.value, cl, ov.words)
            entries[head] = LaunchEntry(head, span, value, word_source(cl, ov.words), ov.note)
        return YMap(entries, m.span)
    cur = entries.get(head)
    if cur is None and ov.value is _REMOVE:
        return m
    sub = cur.value if cur is not None and isinstance(cur.value, YMap) else YMap({}, span)
    entries[head] = YEntry(head, cur.key_span if cur is not None else span,
                           _set(sub, keys[1:], ov, cl))
    return YMap(entries, m.span)


def apply_launch(root: YMap, command_line: CommandLine, dialect: str | None
                 ) -> tuple[YMap, list[str]]:
    """``root`` with the launch's overrides applied, and notes on words not applied (each
    with its line). Returns ``root`` itself when the words are not a tool's overrides."""
    tool = tool_of(command_line, dialect)
    notes: list[str] = []
    if tool is None:
        return root, notes
    for ov in _overrides(tool, command_line, root, notes):
        if tool == "axolotl" and ov.value is not None and not ov.note:
            e = root.get(ov.keys[0])
            if e is not None and isinstance(e.value, YScalar) and isinstance(e.value.value, bool):
                ov.value = bool(ov.value)  # load_cfg: `cfg[k] = bool(kwargs[k])` for a bool key
        root = _set(root, ov.keys, ov, command_line)
    return root, notes
