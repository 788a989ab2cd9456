"""``lintlora server``: the real server driven over stdio by an LSP client (issue 18, item 3).

One server process for the module (:func:`lsp`), started in a temporary project holding copies
of the fix fixtures (``fixtures/fix/<CODE>/``); the client is :mod:`lsp_client` (JSON-RPC with
``Content-Length`` framing). Checked: the capabilities, diagnostics of a bad script and their
clearing by an edit that fixes it, a half-typed file (``LL000``, and the server answers the next
request), the hover's memory figures and LL008's fit list, quick fixes and "fix all safe"
applied give ``fixtures/fix/<CODE>/*.fixed.*``, a settings change (``gpu``) changing a
diagnostic, a bad setting shown as a warning, YAML and notebook diagnostics, an ``untitled:``
document, didClose clearing, and a clean ``shutdown``/``exit``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsp_client import LspClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "fix"


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lsp")
    (root / ".git").mkdir()  # the project's top: configuration and launches are looked up below
    for code in ("LL002", "LL008", "LL001"):
        shutil.copytree(FIX / code, root / code)
    return root


@pytest.fixture(scope="module")
def lsp(project):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = LspClient(cwd=str(project), env=env)
    client.init_result = client.request("initialize", {
        "processId": os.getpid(), "rootUri": _uri(project),
        "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                         "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}},
                         "notebookDocument": {"synchronization": {}}},
        "initializationOptions": {"lintlora": {"gpu": "a100-80gb"}},
    })
    client.notify("initialized", {})
    yield client
    client.close()


_versions: dict[str, int] = {}


def _open(lsp: LspClient, path: Path, text: str | None = None, language: str = "python") -> tuple[str, list]:
    uri = _uri(path)
    text = path.read_text(encoding="utf-8") if text is None else text
    _versions[uri] = 1
    mark = lsp.mark()
    lsp.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": text}})
    return uri, lsp.diagnostics(uri, since=mark, version=1)


def _change(lsp: LspClient, uri: str, text: str) -> list:
    _versions[uri] += 1
    version = _versions[uri]
    mark = lsp.mark()
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                          "contentChanges": [{"text": text}]})
    return lsp.diagnostics(uri, since=mark, version=version)


def _close(lsp: LspClient, uri: str) -> list:
    mark = lsp.mark()
    lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return lsp.diagnostics(uri, since=mark)


def _configure(lsp: LspClient, settings: dict) -> int:
    mark = lsp.mark()
    lsp.notify("workspace/didChangeConfiguration", {"settings": {"lintlora": settings}})
    return mark


def _codes(diagnostics: list) -> list[str]:
    return sorted(d["code"] for d in diagnostics)


def _offset(lines: list[str], line: int, character: int) -> int:
    """A UTF-16 position as an offset into the text (the test's texts are ASCII but the
    notebook's)."""
    before = sum(len(x) for x in lines[:line])
    text = lines[line] if line < len(lines) else ""
    units = 0
    for i, ch in enumerate(text):
        if units >= character:
            return before + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return before + len(text)


def _apply(text: str, edits: list[dict]) -> str:
    """Apply LSP ``TextEdit`` s (non-overlapping, positions against ``text``)."""
    lines = text.splitlines(keepends=True) or [""]
    spans = []
    for edit in edits:
        r = edit["range"]
        start = _offset(lines, r["start"]["line"], r["start"]["character"])
        end = _offset(lines, r["end"]["line"], r["end"]["character"])
        spans.append((start, end, edit["newText"]))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def test_initialize_announces_the_features(lsp):
    caps = lsp.init_result["capabilities"]
    assert lsp.init_result["serverInfo"]["name"] == "lintlora"
    assert caps["hoverProvider"] in (True, {}) or caps["hoverProvider"]
    assert set(caps["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.lintlora"}
    assert caps["textDocumentSync"]["openClose"] is True
    assert caps["textDocumentSync"]["change"] in (1, 2)
    assert caps["positionEncoding"] == "utf-16"
    assert caps["notebookDocumentSync"]["notebookSelector"][0]["notebook"] == "jupyter-notebook"


def test_bad_script_then_the_fixing_edit_clears_it(lsp, project):
    path = project / "LL002" / "trainer.py"
    uri, diags = _open(lsp, path)
    ll002 = [d for d in diags if d["code"] == "LL002"]
    assert ll002, diags
    d = ll002[0]
    assert d["source"] == "lintlora" and d["severity"] == 2
    assert d["codeDescription"]["href"].endswith("/rules/LL002.md")
    lines = path.read_text().splitlines()
    start, end = d["range"]["start"], d["range"]["end"]
    # the span of the finding: `True` of `fp16=True` (0-based line 17)
    assert lines[start["line"]][start["character"]:end["character"]] == "True"
    fixed = (FIX / "LL002" / "trainer.fixed.py").read_text()
    assert "LL002" not in _codes(_change(lsp, uri, fixed))
    _close(lsp, uri)


def test_half_typed_file_is_LL000_and_the_server_answers_on(lsp, project):
    uri, diags = _open(lsp, project / "half.py", "import torch\nmodel = AutoModelForCausalLM.from_pretrained(\n")
    assert _codes(diags) == ["LL000"]
    assert diags[0]["severity"] == 1 and diags[0]["range"]["start"]["line"] == 1
    # the next requests are answered: a hover and a code action on the broken buffer
    assert lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                               "position": {"line": 0, "character": 0}}) is None
    assert lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diags[0]["range"],
        "context": {"diagnostics": []}}) == []
    assert _codes(_change(lsp, uri, "model = AutoModelForCausalLM.from_pretrained(\n    'x',\n")) == ["LL000"]
    assert _change(lsp, uri, "import torch\n") == []
    _close(lsp, uri)


def test_hover_shows_the_memory_figures(lsp, project):
    uri, diags = _open(lsp, project / "LL002" / "trainer.py")
    d = next(d for d in diags if d["code"] == "LL002")
    hover = lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": d["range"]["start"]})
    text = hover["contents"]["value"]
    assert hover["contents"]["kind"] == "markdown"
    assert "**LL002**" in text and "peak ≈" in text and "as written" in text
    assert "A100 SXM4 80GB" in text
    assert re.search(r"\| weights \| \d+\.\d GiB \|", text), text
    _close(lsp, uri)


def _quickfix(lsp, uri, diag) -> dict:
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"],
        "context": {"diagnostics": [diag], "only": ["quickfix"]}})
    return next(a for a in actions if a["kind"] == "quickfix" and f"({diag['code']})" in a["title"])


def test_code_action_gives_the_fixed_file(lsp, project):
    path = project / "LL002" / "trainer.py"
    uri, diags = _open(lsp, path)
    action = _quickfix(lsp, uri, next(d for d in diags if d["code"] == "LL002"))
    assert action["isPreferred"] is True and "(unsafe)" not in action["title"]
    edits = action["edit"]["changes"][uri]
    assert _apply(path.read_text(), edits) == (FIX / "LL002" / "trainer.fixed.py").read_text()
    # fix all safe, asked as a source action
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source"]}})
    assert [a["kind"] for a in actions] == ["source.fixAll.lintlora"]
    fixed = _apply(path.read_text(), actions[0]["edit"]["changes"][uri])
    assert fixed == (FIX / "LL002" / "trainer.fixed.py").read_text()
    _close(lsp, uri)


def test_gpu_setting_changes_a_diagnostic_and_hover_lists_the_fit(lsp, project):
    path = project / "LL008" / "trainer.py"
    uri, diags = _open(lsp, path)
    assert "LL008" not in _codes(diags)  # fits on an 80 GB A100 (initializationOptions)
    mark = _configure(lsp, {"gpu": "rtx4090"})
    diags = lsp.diagnostics(uri, lambda ds: any(d["code"] == "LL008" for d in ds), since=mark)
    d = next(d for d in diags if d["code"] == "LL008")
    hover = lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": d["range"]["start"]})["contents"]["value"]
    assert "RTX 4090" in hover and "peak ≈" in hover and "with the fix" in hover
    assert re.search(r"What would make it fit \(each re-estimated\):\*\*\n\n1\. ", hover), hover
    action = _quickfix(lsp, uri, d)
    fixed = _apply(path.read_text(), action["edit"]["changes"][uri])
    assert fixed == (FIX / "LL008" / "trainer.fixed.py").read_text()
    mark = _configure(lsp, {"gpu": "a100-80gb"})
    lsp.diagnostics(uri, lambda ds: "LL008" not in _codes(ds), since=mark)
    _close(lsp, uri)


def test_bad_setting_is_a_warning_not_a_crash(lsp, project):
    uri, _ = _open(lsp, project / "LL002" / "trainer.py")
    mark = _configure(lsp, {"gpu": "rtx9999-nonesuch", "failOn": "sometimes"})
    _i, message = lsp.wait_for(lambda n: n.get("method") == "window/showMessage"
                               and "lintlora.gpu" in n["params"]["message"], since=mark)
    assert message["params"]["type"] == 2  # MessageType.Warning
    lsp.wait_for(lambda n: n.get("method") == "window/showMessage"
                 and "lintlora.failOn" in n["params"]["message"], since=mark)
    # still serving; the bad GPU was left out, so no GPU is assumed: LL002 is then info
    d = next(d for d in lsp.diagnostics(uri, since=mark) if d["code"] == "LL002")
    assert d["severity"] == 3 and "no GPU was named" in d["message"]
    mark = _configure(lsp, {"gpu": "a100-80gb"})
    d = next(d for d in lsp.diagnostics(uri, since=mark) if d["code"] == "LL002")
    assert d["severity"] == 2
    _close(lsp, uri)


def test_yaml_config_gets_diagnostics(lsp, project):
    path = project / "LL002" / "axolotl.yml"
    uri, diags = _open(lsp, path, language="yaml")
    d = next(d for d in diags if d["code"] == "LL002")
    line = path.read_text().splitlines()[d["range"]["start"]["line"]]
    assert line.startswith(("fp16", "bf16")), line
    action = _quickfix(lsp, uri, d)
    assert _apply(path.read_text(), action["edit"]["changes"][uri]) == \
        (FIX / "LL002" / "axolotl.fixed.yml").read_text()
    _close(lsp, uri)


def test_notebook_gets_diagnostics_on_its_cell_lines(lsp, project):
    path = project / "LL002" / "notebook.ipynb"
    uri, diags = _open(lsp, path, language="json")
    d = next(d for d in diags if d["code"] == "LL002")
    line = path.read_text().splitlines()[d["range"]["start"]["line"]]
    r = d["range"]
    assert "fp16" in line or "float16" in line, line
    assert r["start"]["line"] == r["end"]["line"] and r["end"]["character"] > r["start"]["character"]
    action = _quickfix(lsp, uri, d)
    assert _apply(path.read_text(), action["edit"]["changes"][uri]) == \
        (FIX / "LL002" / "notebook.fixed.ipynb").read_text()
    _close(lsp, uri)


def test_untitled_document_and_close_clears(lsp):
    uri = "untitled:Untitled-1"
    text = (FIX / "LL002" / "trainer.py").read_text()
    _versions[uri] = 1
    mark = lsp.mark()
    lsp.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    assert "LL002" in _codes(lsp.diagnostics(uri, since=mark))
    assert _close(lsp, uri) == []


def test_utf16_columns(lsp, project):
    text = (FIX / "LL002" / "trainer.py").read_text().replace(
        'output_dir="out",', 'output_dir="out-\U0001F600",  # 😀')
    text = text.replace("    fp16=True,  # mixed precision", '    run_name="é😀", fp16=True,')
    uri, diags = _open(lsp, project / "LL002" / "wide.py", text)
    d = next(d for d in diags if d["code"] == "LL002")
    line = text.splitlines()[d["range"]["start"]["line"]]
    assert line.startswith('    run_name="é😀", fp16=')
    # UTF-16: the emoji counts 2 units, é 1: `True` starts at code point 24, unit 25
    assert line[24:28] == "True" and d["range"]["start"]["character"] == 25
    _close(lsp, uri)


def test_notebook_sync_lints_the_cells_together(lsp):
    import json

    notebook = json.loads((FIX / "LL002" / "notebook.ipynb").read_text())
    nb_uri = "file:///nowhere/lsp-notebook.ipynb"
    cells, docs = [], []
    for i, cell in enumerate(notebook["cells"]):
        uri = f"vscode-notebook-cell:/nowhere/lsp-notebook.ipynb#cell{i}"
        code = cell["cell_type"] == "code"
        cells.append({"kind": 2 if code else 1, "document": uri})
        docs.append({"uri": uri, "languageId": "python" if code else "markdown", "version": 1,
                     "text": "".join(cell["source"])})
    mark = lsp.mark()
    lsp.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": cells},
        "cellTextDocuments": docs})
    # the finding is on the cell holding `fp16=True`, at its line in that cell
    target = next(d for d in docs if "fp16=True" in d["text"])
    diags = lsp.diagnostics(target["uri"], lambda ds: any(d["code"] == "LL002" for d in ds),
                            since=mark)
    d = next(d for d in diags if d["code"] == "LL002")
    line = target["text"].splitlines()[d["range"]["start"]["line"]]
    assert line[d["range"]["start"]["character"]:d["range"]["end"]["character"]] == "True"
    action = _quickfix(lsp, target["uri"], d)
    changes = action["edit"]["changes"]
    fixed_nb = json.loads((FIX / "LL002" / "notebook.fixed.ipynb").read_text())
    for doc, fixed_cell in zip(docs, fixed_nb["cells"]):
        text = _apply(doc["text"], changes.get(doc["uri"], []))
        assert text == "".join(fixed_cell["source"]), doc["uri"]
    mark = lsp.mark()
    lsp.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb_uri},
                                             "cellTextDocuments": [{"uri": d["uri"]} for d in docs]})
    assert lsp.diagnostics(target["uri"], since=mark) == []


def test_shutdown_and_exit_are_clean(lsp):
    assert lsp.request("shutdown") is None
    lsp.notify("exit")
    assert lsp.proc.wait(20) == 0


def test_without_pygls_a_clear_message(tmp_path):
    code = ("import sys; sys.modules['pygls'] = None; from lintlora.cli import main; "
            "sys.exit(main(['server']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2
    assert "pip install 'lintlora[server]'" in done.stderr
    assert "Traceback" not in done.stderr
