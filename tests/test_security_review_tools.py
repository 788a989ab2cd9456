"""Attacks on issue 18's review tools, as a hostile party would make them (helper attack18).

Groups:

- **chunks**: :mod:`lintlora.extract.cst_chunks` against LibCST's whole-file parse: crafted
  texts (the defects found: ``\\r\\n`` mixed with ``\\n``, blocks indented unlike the file's
  first, a byte order mark, form feeds) and generated ones (line fragments with decorators,
  clauses, strings over lines, continuations, tabs, CR/CRLF; hypothesmith programs): the
  same module (``deep_equals``), the same code and the same node positions; the cache bounded.
- **server**: ``lintlora server`` over stdio fed malformed frames, ranges out of bounds,
  versions going backwards, URIs outside the workspace (``..``, a link, ``/dev/zero``, a FIFO,
  ``%00``), wrong-typed settings, mismatched notebook cells, hover/code actions past the end:
  it answers the next request, never an ``LL999``, and reads nothing outside the workspace
  for a document there (:meth:`lintlora.server.LintloraServer.document_path`).
- **github**: :mod:`lintlora.github_review` against hostile event payloads, a token with a
  line break (was printed by http.client's error), pagination links looping back, a response
  body trickled byte by byte, malformed HTTP answers, workflow-command injection.
- **formats**: rdjson, gitlab, junit, concise with messages and paths holding line and
  paragraph separators, NEL, lone surrogates, XML-illegal characters, a forged
  ``::warning::`` line and a 200 000-character line.
"""

from __future__ import annotations

import io
import json
import os
import random
import socket
import sys
import threading
import time
from pathlib import Path

import libcst as cst
import pytest

from lintlora.extract._cstpos import _fast_index
from lintlora.extract.cst_chunks import MAX_CACHED_CHARS, ChunkParser

ROOT = Path(__file__).resolve().parents[1]


# ==== chunks =====================================================================================

def _chunk_difference(source: str, parser: ChunkParser | None = None) -> str | None:
    """How the chunked parse of ``source`` differs from LibCST's whole-file parse, or
    ``None``: the same exception type, or the same module, code and node positions (the
    module node's own range aside where LibCST's code is not the text: LibCST drops a BOM
    and some whitespace-only trailing lines)."""
    parser = parser or ChunkParser()
    try:
        full = cst.parse_module(source)
    except Exception as exc:  # noqa: BLE001
        try:
            parser.parse(source)
        except Exception as mine:  # noqa: BLE001
            return None if type(mine) is type(exc) else f"raised {type(mine).__name__}"
        return "the chunks parsed a text LibCST refuses"
    module = parser.parse(source)
    if not module.deep_equals(full):
        return "another module"
    if module.code != full.code:
        return "another code"
    index = parser.index(module, source)
    if index is None:
        return None  # the whole-file parse was used
    ref = _fast_index(full, source)
    stack = [(module, full)]
    while stack:
        mine, theirs = stack.pop()
        if not isinstance(mine, cst.Module) and index.get(mine) != ref.get(theirs):
            return f"{type(mine).__name__} at {index.get(mine)}, not {ref.get(theirs)}"
        if len(mine.children) != len(theirs.children):
            return "other children"
        stack.extend(zip(mine.children, theirs.children))
    return None


FOUND = {
    "crlf then lf": "x = 1\r\ny = 2\nz = 3\r\n",
    "lf then crlf": "x = 1\ny = 2\r\nif y:\n  z=1\n",
    "tab block then space block": "if x:\n\ty = 1\nz = 2\nif z:\n        pass\n",
    "space block then tab block": "if x:\n        y = 1\nz = 2\nif z:\n\tpass\n",
    "three spaces then four": "x = 1\nif x:\n   y = 1\nif z:\n    pass\n",
    "nested tab then spaces": "if a:\n\tif b:\n\t    c=1\nd = 1\nif e:\n    f=1\n",
    "byte order mark": "\ufeffx = 1\ny = 2\n",
    "form feed before code": "x = 1\n\fy = 2\nif x:\n    z = 3\n",
    "form feed first": "\fx = 1\ny = 2\n",
    "comment ending in a backslash": "x = 1 # \\\ny = 2\n",
}
"""Texts whose chunked parse differed from the whole-file one before this module's fixes."""

EDGES = {
    "decorator then comment": "@d\n# c\ndef f(): pass\nx = 1\n",
    "else after a comment": "if x:\n    pass\n# c\nelse:\n    pass\ny = 1\n",
    "if __name__": "def main():\n    pass\nif __name__ == '__main__':\n    main()\n",
    "semicolons and continuation": "x = 1; \\\ny = 2\nz = 3\n",
    "docstring at column 0 after a block": "def f():\n    pass\n'''doc'''\nx = 1\n",
    "unterminated triple quote": "x = '''\ny = 1\n",
    "type comment": "x = []  # type: List[int]\ny = 2\n",
    "encoding cookie": "# -*- coding: latin-1 -*-\nx = 1\ny = 2\n",
    "no trailing newline": "x = 1\ny = 2",
    "whitespace at the end": "x = 1\ny = 2\n   ",
    "a lone CR": "x = 1\ry = 2\n",
    "async and match": "async def f():\n    await g()\nmatch x:\n    case 1:\n        pass\ny = 1\n",
    "string prefixes": "x = u'a'\ny = Rb'''\nz'''\nw=1\n",
    "comment then blank at the top": "# a\n\nimport os\nx = 1\n",
    "vertical tab": "x = 1\n\x0by = 2\n",
    "indent through a bracket first": "x = (\n  1)\nif x:\n    pass\ny = 1\n",
    "indent in a string first": "x = '''\n  a'''\nif x:\n    pass\ny = 1\n",
}


@pytest.mark.parametrize("name", sorted(FOUND) + sorted(EDGES))
def test_chunks_equal_the_whole_file_parse(name):
    assert _chunk_difference({**FOUND, **EDGES}[name]) is None


def test_the_found_texts_are_still_linted_exactly(tmp_path):
    """The fallbacks still give the whole-file module (the parse is used, not refused)."""
    parser = ChunkParser()
    for source in FOUND.values():
        assert parser.parse(source).deep_equals(cst.parse_module(source))


_FRAGMENTS = [
    "x = 1", "@dec", "y = 2  # \\", "def f():", "    pass", "\tpass", "  pass", "        y = 2",
    "if __name__ == '__main__':", "# c", "    # c", "", "   ", "else:", "elif x:", "try:",
    "except E:", "finally:", "class A:", "x = 1; y = 2", "x = 1 + \\", "'''doc", "'''", '"""',
    'z = """', "s = '#'", "a = (", ")", "b = [1,", "2]", "async def g():", "    await h()",
    "match x:", "    case 1:", "        pass", "x = []  # type: List[int]",
    "# -*- coding: latin-1 -*-", "\f", "\fx = 3", "with a:", "    with b:", "        c = 1",
    "'doc at 0'", "r'\\''", "f'{x}'", "b'\\\\'", "x = '''\\", "print(1)", "global q",
    "    return 1", "while 1:", "for i in x:", "@d(", "    1)", "x = {", "}", "\t# t",
]


def _fragment_texts(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        newline = rng.choice(["\n", "\n", "\r\n"])
        text = "".join(rng.choice(_FRAGMENTS)
                       + (newline if rng.random() > 0.05 else rng.choice(["\n", "\r\n", "\r"]))
                       for _ in range(rng.randint(2, 14)))
        yield text.rstrip("\r\n") if rng.random() < 0.2 else text


def test_chunks_equal_the_whole_file_parse_on_generated_line_mixes():
    """2 000 texts from a fixed seed (the attack ran 50 000 without a difference after the
    fixes; seven of the first 20 000 differed before)."""
    bad = [(t, d) for t in _fragment_texts(18, 2000) if (d := _chunk_difference(t))]
    assert not bad, bad[:3]


def test_chunks_equal_the_whole_file_parse_on_hypothesmith_programs():
    hypothesmith = pytest.importorskip("hypothesmith")
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar() | hypothesmith.from_node())
    def check(source):
        assert _chunk_difference(source) is None

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        check()


def test_the_chunk_cache_stays_bounded():
    parser = ChunkParser(max_chunks=64)
    for n in range(40):
        text = "".join(f"v{n}_{i} = {'x' * 200!r}\n" for i in range(60))
        module = parser.parse(text)
        parser.index(module, text)
    assert len(parser._cache) <= 64
    assert parser._chars <= MAX_CACHED_CHARS
    live = {id(entry) for entry in parser._cache.values()}
    assert all(id(entry) in live for entry in parser._owner.values())  # no evicted nodes kept


# ==== server =====================================================================================

BAD_SCRIPT = ("from transformers import TrainingArguments\n"
              "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("ws") / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    return root


@pytest.fixture(scope="module")
def lsp(workspace):
    pytest.importorskip("pygls")
    from lsp_client import LspClient

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = LspClient(cwd=str(workspace), env=env)
    client.request("initialize", {"processId": None, "rootUri": workspace.as_uri(),
                                  "capabilities": {"general": {"positionEncodings": ["utf-16"]}}})
    client.notify("initialized", {})
    yield client
    client.close()


def _alive(lsp) -> None:
    """The server answers a request (a hover on a document it does not know)."""
    assert lsp.request("textDocument/hover", {"textDocument": {"uri": "file:///none.py"},
                                              "position": {"line": 0, "character": 0}},
                       timeout=60) is None


def _open(lsp, uri: str, text: str, language: str = "python") -> list:
    mark = lsp.mark()
    lsp.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": text}})
    return lsp.diagnostics(uri, since=mark)


def _framed(body: bytes, length: int | str | None = None) -> bytes:
    return b"Content-Length: %s\r\n\r\n" % str(len(body) if length is None else length).encode() \
        + body


@pytest.mark.parametrize("frame", [
    _framed(b"{abc}"), _framed(b"\xff\xfe\x00\x01"), b"Content-Length: -5\r\n\r\n",
    b"Content-Length: abc\r\n\r\n", b"X-Other: 1\r\n\r\n", _framed(b"[]"), _framed(b"5"),
    _framed(json.dumps({"jsonrpc": "2.0", "id": 9001, "method": "$/unknown"}).encode()),
    _framed(json.dumps({"jsonrpc": "2.0", "id": 9002, "method": "textDocument/hover",
                        "params": {"textDocument": 5}}).encode()),
], ids=["bad-json", "not-utf8", "negative-length", "length-not-a-number", "no-length",
        "array", "number", "unknown-method", "wrong-params"])
def test_server_survives_malformed_frames(lsp, frame):
    lsp.proc.stdin.write(frame)
    lsp.proc.stdin.flush()
    _alive(lsp)


@pytest.mark.parametrize("length", [10**11, 2**63, 10**30])
def test_server_survives_a_huge_content_length(workspace, length):
    """It waits for the body (reading and dropping it in pieces), not ends with a
    ``MemoryError`` or ``OverflowError`` as it did."""
    pytest.importorskip("pygls")
    from lsp_client import LspClient

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = LspClient(cwd=str(workspace), env=env)
    try:
        client.request("initialize", {"processId": None, "rootUri": workspace.as_uri(),
                                      "capabilities": {}})
        client.proc.stdin.write(b"Content-Length: %d\r\n\r\n{}" % length)
        client.proc.stdin.flush()
        for _ in range(300):
            if b"skipped" in b"".join(client.stderr) or client.proc.poll() is not None:
                break
            time.sleep(0.1)
        assert client.proc.poll() is None, b"".join(client.stderr)[-500:]
        assert b"skipped" in b"".join(client.stderr)
    finally:
        client.close()


def test_a_content_length_of_thousands_of_digits_ends_the_input():
    """pygls calls int() on the header's digits outside its error handling; over Python's
    4,300-digit limit that raised ValueError in its reading loop. The line reads as the end."""
    pytest.importorskip("pygls")
    from lintlora import server

    stream = server._BoundedStdin(io.BytesIO(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n"))
    assert stream.readline() == b""
    ok = server._BoundedStdin(io.BytesIO(b"Content-Length: 268435456\r\n"))
    assert ok.readline() == b"Content-Length: 268435456\r\n"


def test_server_drops_an_oversized_body_in_step(monkeypatch):
    pytest.importorskip("pygls")
    from lintlora import server

    monkeypatch.setattr(server, "MAX_MESSAGE_BYTES", 10)
    stream = server._BoundedStdin(io.BytesIO(b"x" * 25 + b"Content-Length: 2\r\n" + b"y" * 70000))
    assert stream.read(5) == b"xxxxx"
    assert stream.read(20) == b"null"  # the 20 bytes read and dropped
    assert stream.readline() == b"Content-Length: 2\r\n"
    assert len(stream.readline()) == server.MAX_HEADER_LINE_BYTES
    assert stream.read(10**6) == b""  # the end of input


def test_server_survives_a_request_flood(lsp, workspace):
    uri = (workspace / "flood.py").as_uri()
    _open(lsp, uri, BAD_SCRIPT)
    for version in range(2, 202):
        lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                              "contentChanges": [{"text": BAD_SCRIPT + "#" * version}]})
    diags = lsp.diagnostics(uri, version=201)
    assert {d["code"] for d in diags} == {"LL001"}


@pytest.mark.parametrize("change", [
    {"range": {"start": {"line": 100, "character": 5}, "end": {"line": 200, "character": 0}},
     "text": "x"},
    {"range": {"start": {"line": 1, "character": 5}, "end": {"line": 0, "character": 0}},
     "text": "y"},
    {"range": {"start": {"line": 0, "character": 10**9}, "end": {"line": 0, "character": 10**9}},
     "text": "\ud83d"},
    {"range": {"start": {"line": -1, "character": -5}, "end": {"line": 0, "character": 0}},
     "text": "y"},
], ids=["past-the-end", "reversed", "huge-column-lone-surrogate", "negative"])
def test_server_survives_changes_out_of_bounds(lsp, workspace, change):
    uri = (workspace / "ranges.py").as_uri()
    _open(lsp, uri, BAD_SCRIPT)
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                          "contentChanges": [change]})
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 1},
                                          "contentChanges": [{"text": BAD_SCRIPT}]})  # backwards
    _alive(lsp)
    diags = lsp.diagnostics(uri, version=1, predicate=lambda d: any(x["code"] == "LL001"
                                                                     for x in d))
    assert all(d["code"] != "LL999" for d in diags)


@pytest.mark.parametrize("position", [(0, 10**6), (10**6, 0), (2**31 - 1, 2**31 - 1)])
def test_server_hover_and_actions_past_the_end(lsp, workspace, position):
    uri = (workspace / "past.py").as_uri()
    _open(lsp, uri, BAD_SCRIPT)
    at = {"line": position[0], "character": position[1]}
    assert lsp.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at}) \
        is None
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": at, "end": at},
        "context": {"diagnostics": []}})
    # no quick fix there (a "fix all safe" source action may come: the script's LL001 fix
    # is unsafe since its model is unknown, so none does here)
    assert actions is not None and all(a["kind"] != "quickfix" for a in actions)


def _outside_uris(workspace: Path, tmp_path: Path) -> list[str]:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    fifo = outside / "fifo.py"
    if not fifo.exists():
        os.mkfifo(fifo)
    link = workspace / "link_out.py"
    if not link.is_symlink():
        link.symlink_to(outside / "target.py")
    return [workspace.as_uri() + "/../../outside/dotdot.py", "file:///dev/zero",
            fifo.as_uri(), link.as_uri(), (outside / "plain.py").as_uri()]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_server_lints_outside_documents_from_their_buffer_alone(workspace, tmp_path):
    pytest.importorskip("pygls")
    from lintlora.server import LintloraServer

    server = LintloraServer()
    server.root = str(workspace)
    for uri in _outside_uris(workspace, tmp_path):
        path, on_disk = server.document_path(uri, "python")
        assert not on_disk, uri  # no launch discovery, no other file read for it
    assert server.document_path((workspace / "in.py").as_uri(), "python") == (
        str(workspace / "in.py"), True)
    path, on_disk = server.document_path("file:///%00x.py", "python")
    assert "\x00" not in path and not on_disk and path.startswith(str(workspace))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_server_outside_and_unnameable_uris_give_no_internal_error(lsp, workspace, tmp_path):
    for uri in [*_outside_uris(workspace, tmp_path), "file:///%00x.py", "file://host/share/x.py",
                "weird:" + "a" * 10_000, "untitled:Untitled-1"]:
        diags = _open(lsp, uri, BAD_SCRIPT)
        assert not [d for d in diags if d["code"] == "LL999"], (uri, diags)
        assert [d for d in diags if d["code"] == "LL001"], uri  # the buffer is linted
    _alive(lsp)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_server_never_reads_a_document_it_was_not_given(lsp, workspace, tmp_path):
    """A hover, code action, change or save naming a URI the client never opened reads
    nothing from disk (pygls' ``get_text_document`` would read ``/dev/zero`` whole: the
    server hung; a FIFO: it waited for a writer)."""
    secret = tmp_path / "secret.py"
    secret.write_text(BAD_SCRIPT, encoding="utf-8")
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    at = {"line": 0, "character": 0}
    for uri in ["file:///dev/zero", fifo.as_uri(), secret.as_uri()]:
        lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})  # if opened before
        _alive(lsp)
        mark = lsp.mark()
        assert lsp.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at},
                           timeout=30) is None
        assert lsp.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": at, "end": at},
            "context": {"diagnostics": []}}, timeout=30) == []
        lsp.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                              "contentChanges": [{"text": "x = 1\n"}]})
        _alive(lsp)
        published = [n for _t, n in lsp.notifications[mark:]
                     if n.get("method") == "textDocument/publishDiagnostics"
                     and n["params"]["uri"] == uri and n["params"]["diagnostics"]]
        assert not published, published


def test_server_huge_buffer_and_surrogates(lsp, workspace):
    diags = _open(lsp, (workspace / "big.py").as_uri(), BAD_SCRIPT * 40_000)
    assert [d["code"] for d in diags] == ["LL998"]
    diags = _open(lsp, (workspace / "sur.py").as_uri(), "x = '\ud83d\ude00'; y = '\udc00'\n")
    assert all(d["code"] != "LL999" for d in diags)
    _alive(lsp)


@pytest.mark.parametrize("settings", [
    {"lintlora": {"gpu": 5, "model": {"a": 1}}}, {"lintlora": {"gpu": "x" * 10**6}},
    {"lintlora": [1, 2]}, 5, None,
    {"lintlora": {"gpu": ["a100"], "select": "LL001", "ignore": 7, "maxFileSize": -1}},
    {"lintlora": {"maxFileSize": "1e100 GB"}},
], ids=["numbers-objects", "huge-string", "list", "number", "null", "mixed", "huge-size"])
def test_server_survives_wrong_typed_settings(lsp, workspace, settings):
    uri = (workspace / "settings.py").as_uri()
    _open(lsp, uri, BAD_SCRIPT)
    lsp.notify("workspace/didChangeConfiguration", {"settings": settings})
    _alive(lsp)
    lsp.notify("workspace/didChangeConfiguration", {"settings": {"lintlora": {}}})


def test_server_survives_mismatched_notebook_cells(lsp, workspace):
    uri = (workspace / "n.ipynb").as_uri()
    lsp.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": uri, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": "cell1"},
                                       {"kind": 2, "document": "cell-never-opened"}]},
        "cellTextDocuments": [{"uri": "cell1", "languageId": "python", "version": 1,
                               "text": BAD_SCRIPT}]})
    _alive(lsp)
    lsp.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 2},
        "change": {"cells": {
            "structure": {"array": {"start": 50, "deleteCount": 10,
                                    "cells": [{"kind": 2, "document": "c3"}]},
                          "didOpen": [{"uri": "c3", "languageId": "python", "version": 1,
                                       "text": "x"}]},
            "textContent": [{"document": {"uri": "nope", "version": 3},
                             "changes": [{"text": "y"}]}]}}})
    _alive(lsp)


def test_server_code_action_on_a_stale_version_uses_the_current_text(lsp, workspace):
    uri = (workspace / "stale.py").as_uri()
    _open(lsp, uri, BAD_SCRIPT)
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                          "contentChanges": [{"text": "x = 1\n"}]})
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": []}})
    assert actions == []  # the edits of version 1 are not offered on version 2's text


# ==== github =====================================================================================

from lintlora import github_review as gr  # noqa: E402

SECRET = "ghs_SECRETtoken1234567890"


@pytest.mark.parametrize("token", [SECRET + "\r\nX-Evil: 1", "Bearer " + SECRET,
                                   SECRET + "\x00", "é" + SECRET, " \n"])
def test_github_a_token_http_cannot_carry_is_refused_without_being_shown(token):
    with pytest.raises(gr.ApiError) as caught:
        gr.GitHubClient("http://127.0.0.1:9", token)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\u2028"])
def test_github_a_token_with_its_line_break_is_used_stripped(tail):
    assert gr.GitHubClient("http://127.0.0.1:9", SECRET + tail)._token == SECRET


def _pr_event(tmp_path: Path, **pr) -> Path:
    event = {"number": 7, "pull_request": {
        "number": 7, "head": {"sha": "a" * 40, "repo": {"full_name": "o/r"}},
        "base": {"sha": "b" * 40, "repo": {"full_name": "o/r"}}, **pr}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


def test_github_the_token_is_not_printed_when_http_refuses_it(tmp_path, capsys):
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(_pr_event(tmp_path)),
           "GITHUB_REPOSITORY": "o/r", "GITHUB_API_URL": "http://127.0.0.1:9",
           "GITHUB_TOKEN": SECRET + " \n" + SECRET, "GITHUB_WORKSPACE": str(tmp_path),
           "INPUT_COMMENT": "true"}
    assert gr.report_main(env) == 0
    out = capsys.readouterr()
    assert SECRET not in out.out and SECRET not in out.err
    assert "::warning" in out.out


@pytest.mark.parametrize("pr", [
    {"number": "7/../../../orgs/x"}, {"number": True}, {"number": -1}, {"number": 10**30},
    {"number": 7.0}, {"head": {"sha": "../" * 14}}, {"head": "x"}, {"base": {"repo": {
        "full_name": "../.."}}}, {"base": {"repo": {"full_name": "o/.."}}},
    {"base": {"repo": {"full_name": "o/r/../../x"}}}, {"base": {"repo": 5}},
])
def test_github_hostile_event_payloads_give_no_pull_request(pr):
    event = {"number": 7, "pull_request": {
        "number": 7, "head": {"sha": "a" * 40, "repo": {"full_name": "o/r"}},
        "base": {"repo": {"full_name": "o/r"}}}}
    event["pull_request"].update(pr)
    found = gr.pull_request_of(event, "../..")
    assert found is None or (found.owner_repo == "o/r" and isinstance(found.number, int)
                             and found.number == 7)
    if "number" in pr:
        assert found is None


class _RawServer:
    """A socket server answering every request with ``respond(conn, request_bytes)``."""

    def __init__(self, respond) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.respond = respond
        self.requests: list[bytes] = []
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(10)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    data += piece
                self.requests.append(data)
                try:
                    self.respond(self, conn, data)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.sock.close()


def _json_answer(body: bytes, extra: str = "") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s"
            b"Connection: close\r\n\r\n" % (len(body), extra.encode())) + body


def test_github_a_pagination_link_back_to_page_one_is_not_followed(capsys):
    def respond(server, conn, request):
        conn.sendall(_json_answer(b"[1]", f'Link: <{server.url}/items?per_page=100>; '
                                          f'rel="next"\r\n'))
    server = _RawServer(respond)
    try:
        items = gr.GitHubClient(server.url, SECRET).paginate("/items")
    finally:
        server.close()
    assert items == [1] and len(server.requests) == 1
    assert "loops back" in capsys.readouterr().out


def test_github_a_trickled_response_is_cut_off(monkeypatch):
    monkeypatch.setattr(gr, "MAX_RESPONSE_SECONDS", 0.3)

    def respond(server, conn, request):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n[")
        for _ in range(40):
            time.sleep(0.05)
            conn.sendall(b"1,")
    server = _RawServer(respond)
    monkeypatch.setattr(gr, "_sleep", lambda s: None)
    try:
        with pytest.raises(gr.ApiError) as caught:
            gr.GitHubClient(server.url, SECRET).request("GET", "/slow")
    finally:
        server.close()
    assert "took longer" in str(caught.value)


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 abc\r\n\r\n",                                          # a bad status line
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[1,2",           # a body cut short
    b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70000 + b"\r\n\r\n[]",  # a header too long
    b"garbage\r\n\r\n",
], ids=["status-line", "incomplete", "long-header", "garbage"])
def test_github_malformed_http_answers_are_api_errors(monkeypatch, answer):
    def respond(server, conn, request):
        conn.sendall(answer)
    server = _RawServer(respond)
    monkeypatch.setattr(gr, "_sleep", lambda s: None)
    try:
        with pytest.raises(gr.ApiError) as caught:
            gr.GitHubClient(server.url, SECRET).request("GET", "/x")
    finally:
        server.close()
    assert SECRET not in str(caught.value)


def test_github_report_paths_outside_the_workspace_are_never_commented_nor_read(
        tmp_path, monkeypatch):
    """Report paths with ``..``, absolute ones, line breaks: no review comment outside the
    workspace, and no file read for a suggestion there."""
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(root)
    read: list[str] = []
    import lintlora.autofix as autofix

    original = autofix.read_source_text
    monkeypatch.setattr(autofix, "read_source_text", lambda p, *a, **k: (read.append(p),
                                                                         original(p, *a, **k))[1])
    paths = ["../outside.py", str(tmp_path / "outside.py"), "sub/../../outside.py",
             "a\nb.py", "/etc/passwd"]
    findings = [{"code": "LL001", "path": p, "line": 1, "message": "m", "autofix": {
        "safety": "safe", "title": "t", "edits": [{"path": p, "line": 1, "column": 1,
                                                   "end_line": 1, "end_column": 2,
                                                   "new_text": "y"}]}} for p in paths]
    added = {"outside.py": {1}, "etc/passwd": {1}, "a\nb.py": {1}, "../outside.py": {1}}
    planned, left = gr.plan_comments(findings, added, str(root))
    assert [c.path for c in planned] == ["a\nb.py"]  # inside the workspace: its own name
    assert not planned[0].suggestion and len(left) == 4
    assert all(os.path.realpath(p).startswith(str(root)) for p in read), read


def test_github_warnings_cannot_forge_workflow_commands():
    out = io.StringIO()
    gr.warning("path\n::error file=x::pwned\r\n##[error]legacy %0A", out)
    gr.notice("a\u2028::error::b", out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("::") for line in lines)
    assert "\n::error" not in out.getvalue() and "##[" not in out.getvalue()


@pytest.mark.parametrize("args", ["-o/tmp/x", "--output=/tmp/x", "--format=json", "--fix",
                                  "--diff-only HEAD~5", "-- /etc/passwd"])
def test_github_args_cannot_set_the_actions_own_options(args):
    with pytest.raises(gr._UsageError):
        gr.lint_argv({"INPUT_ARGS": args}, None)


# ==== formats ====================================================================================

EVIL = ("a\u2028b\x85c\u2029d\ud800e\U0010ffff f\x0bg\x0ch\x7fi\x9bj\x00k\ufffe"
        "\n::warning file=x::forged\r\nother.py:1:1: LL001 forged" + "Z" * 200_000)


@pytest.fixture
def evil_run(tmp_path, monkeypatch):
    import dataclasses

    import format_support

    monkeypatch.chdir(tmp_path)
    run = format_support.hostile_run(str(tmp_path))
    first = run.findings[0]
    run.findings.append(dataclasses.replace(first, message=EVIL, fix=EVIL, autofix=None))
    run.findings.append(dataclasses.replace(first, message="m", autofix=None, span=dataclasses.replace(
        first.span, path=str(tmp_path / "p\u2028q\ud800\n::warning::x.py"))))
    return run


@pytest.mark.parametrize("fmt", ["rdjson", "gitlab", "junit", "concise"])
def test_formats_hold_separators_surrogates_and_long_lines(evil_run, fmt):
    from lintlora.report import render

    out = io.StringIO()
    render(evil_run, fmt, out)
    text = out.getvalue()
    text.encode("utf-8")  # every output is writable as UTF-8 (no lone surrogate)
    if fmt in ("rdjson", "gitlab"):
        assert json.loads(text)
    elif fmt == "junit":
        import xml.etree.ElementTree as ET

        ET.fromstring(text.encode("utf-8"))
    else:
        lines = text.splitlines()  # str.splitlines breaks at U+2028, NEL, FF, VT too
        assert not [line for line in lines if line.startswith(("::", "other.py:"))]
        assert len([line for line in lines if "TX001" in line]) == \
            len([f for f in evil_run.findings if f.code == "TX001"])
    assert "\n::warning" not in text
