"""The fast position index agrees with LibCST's PositionProvider on every node."""

from pathlib import Path

import libcst as cst
import pytest

from lintlora.extract._cstpos import index_positions

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "fixtures" / "python").glob("*.py")) + [ROOT / "lintlora" / "training_setup.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_fast_positions_match_position_provider(path):
    text = path.read_text()
    module = cst.parse_module(text)
    fast = index_positions(module, text)
    slow = index_positions(module, text, fast=False)
    checked = 0
    for node, r in slow._ranges.items():
        assert fast.get(node) == (r.start.line, r.start.column, r.end.line, r.end.column), node
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("text", ["x = 1", "x = 1\r\ny = (\r\n  2)\r\n", "a = 1\rb = 2\r",
                                  "s = 'é€'\nt = f(s)\n", "\n\n# c\nx = [\n 1,\n]"])
def test_newline_styles_and_unicode(text):
    module = cst.parse_module(text)
    fast = index_positions(module, text)
    slow = index_positions(module, text, fast=False)
    lines = len(text.splitlines())
    for node, r in slow._ranges.items():
        if r.end.line > lines:
            # PositionProvider counts the newline LibCST adds (then drops) at the end of a file
            # without one; only whitespace nodes at the very end differ, and they are never
            # reported.
            assert isinstance(node, (cst.Module, cst.Newline, cst.TrailingWhitespace))
            continue
        assert fast.get(node) == (r.start.line, r.start.column, r.end.line, r.end.column)
