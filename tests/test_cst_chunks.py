"""The editor server's incremental parse (:mod:`lintlora.extract.cst_chunks`) gives the module
and positions LibCST's whole-file parse gives: for every Python fixture and lintlora's own
modules, for crafted edge cases (decorators, clauses at column 0, comments after blocks, strings
over lines, duplicate statements, CRLF, tabs), and after edits that reuse cached chunks; and the
engine's results are the same with it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from lintlora.extract._cstpos import _fast_index
from lintlora.extract.cst_chunks import ChunkParser, parsing_with

ROOT = Path(__file__).resolve().parents[1]

SOURCES = sorted(p for p in ROOT.glob("fixtures/**/*.py") if p.is_file()) + \
    sorted(ROOT.glob("lintlora/**/*.py"))[::8]
"""Every Python fixture, and every eighth of lintlora's own modules (larger files with every
construct; all of them pass too, in about a minute)."""

CASES = {
    "decorators": "import x\n\n@dec\n@other(\n    1,\n)\ndef f():\n    pass\n\n\nclass A:\n    y = 1\n",
    "clauses": "try:\n    a = 1\nexcept E:\n    pass\nelse:\n    b = 2\nfinally:\n    c = 3\nif a:\n    pass\nelif b:\n    pass\nelse:\n    pass\nz = 1\n",
    "comments after blocks": "def f():\n    pass\n    # in the block\n\n# d\nx = 1\ndef g():\n    pass\n# d\n    # e\ny = 2\ndef h():\n    return 1\n\n  # two\nz = 3\n",
    "strings over lines": 'x = """\nnot = code\n\n# nor this\n"""\ny = f"{x}" + \'\'\'a\nb\'\'\'\nz = r"\\\\" + "\\"" \n',
    "continuations": "x = 1 + \\\n2\ny = (\n1)\nz = [\n]\n",
    "duplicates": "print(1)\nprint(1)\n\nprint(1)\nx = 1; y = 2\nprint(1)\n",
    "crlf": "import a\r\n\r\ndef f():\r\n  return 1\r\n\r\nx = f()\r\n",
    "tabs": "if x:\n\ty = 1\nz = 2\nif z:\n\tpass\n",
    "header and footer": "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\"\"\"Doc\nat column 0.\"\"\"\nimport os\n\nx = 1\n# trailing\n\n",
    "no trailing newline": "a = 1\nb = 2",
    "async and match": "async def f():\n    await g()\nmatch x:\n    case 1:\n        pass\ny = 1\n",
}


def _same(source: str, parser: ChunkParser | None = None) -> None:
    parser = parser or ChunkParser()
    module = parser.parse(source)
    full = cst.parse_module(source)
    assert module.code == source
    assert module.deep_equals(full)
    index = parser.index(module, source)
    if index is None:
        return  # the whole-file parse was used
    ref = _fast_index(module, source)
    stack = [module]
    while stack:
        node = stack.pop()
        assert index.get(node) == ref.get(node), type(node).__name__
        stack.extend(node.children)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_module_and_positions_of_every_source(path):
    source = path.read_text(encoding="utf-8")
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("not valid for LibCST")
    _same(source)


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_cases(name):
    _same(CASES[name])


def test_edits_reuse_cached_chunks_and_stay_exact():
    parser = ChunkParser()
    base = (ROOT / "fixtures" / "python" / "hf_trainer_qlora.py").read_text(encoding="utf-8")
    helpers = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(20))
    text = helpers + "\n\n" + base
    _same(text, parser)
    misses = parser.misses
    for edit in range(4):
        text = text.replace(f"return x + {edit}\n", f"return x + {edit}  # edited\n", 1)
        _same(text, parser)
    assert parser.misses - misses <= 8  # one changed chunk per edit (plus duplicates)
    assert parser.hits > 0


def test_invalid_source_raises_as_libcst_does():
    parser = ChunkParser()
    with pytest.raises(cst.ParserSyntaxError):
        parser.parse("x = 1\ny = (\nz = 2\n")


def test_lint_results_equal_with_and_without(tmp_path):
    from lintlora.engine import _load_rule_instances, lint_file
    from lintlora.context import Context
    from lintlora.discovery import SourceFile
    from lintlora.settings import Settings

    instances, _classes, _errors = _load_rule_instances(None)
    settings = Settings(gpu="rtx4090")
    parser = ChunkParser()
    for path in sorted((ROOT / "fixtures" / "fix").glob("*/*.py")):
        if ".fixed." in path.name:
            continue
        data = path.read_bytes()
        source = SourceFile(str(path), "python", explicit=True)
        plain = lint_file(source, settings, instances, Context(settings), data=data)
        with parsing_with(parser):
            chunked = lint_file(source, settings, instances, Context(settings), data=data)
        assert chunked.findings == plain.findings, path
        assert chunked.setups == plain.setups, path
