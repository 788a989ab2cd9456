"""``lintlora server``: a Language Server Protocol server over stdio (issue 18, item 3).

Built on pygls 2.x (https://github.com/openlawlibrary/pygls, ``pygls/lsp/server.py``
``LanguageServer``; the handlers follow ``examples/servers/publish_diagnostics.py``,
``code_actions.py`` and ``hover.py``: ``@server.feature(types.TEXT_DOCUMENT_DID_OPEN)``,
``ls.workspace.get_text_document(uri)``, ``ls.text_document_publish_diagnostics(
PublishDiagnosticsParams(...))``, ``ls.window_show_message(ShowMessageParams(...))``) and
lsprotocol's LSP 3.17 types. pygls is an optional dependency (``pip install
'lintlora[server]'``) imported only here; the lint of a buffer, its diagnostics, hover text
and fix edits are :mod:`lintlora.server_lint`, which needs no pygls.

What the server does:

- ``textDocument/didOpen``, ``didChange``, ``didSave``: lints the buffer (never the file on
  disk; never imports or runs it) and publishes its diagnostics; changes are debounced
  (:data:`DEBOUNCE_SECONDS`: only the latest version of a burst is linted). ``didClose``
  clears them. Python, ``.ipynb`` notebooks opened as text documents (their JSON: a cell's
  finding is placed on the file line of the cell's source line), YAML (axolotl,
  LLaMA-Factory, torchtune, litgpt) and JSON.
- ``notebookDocument/didOpen``, ``didChange``, ``didSave``, ``didClose`` (LSP 3.17 notebook
  sync, :data:`NOTEBOOK_SYNC`): the cells are linted together as the notebook, each cell's
  diagnostics published on that cell; quick fixes edit the cells (no "fix all" in a notebook).
- ``textDocument/hover`` on a finding: its message, memory figures and breakdown, LL008's fit
  list (:func:`lintlora.server_lint.hover_markdown`).
- ``textDocument/codeAction``: a ``quickfix`` per finding with an autofix (``isPreferred``
  when safe, "(unsafe)" in the title otherwise) and ``source.fixAll.lintlora`` for every
  safe fix at once.
- settings from ``initializationOptions`` and ``workspace/didChangeConfiguration``
  (:func:`lintlora.server_lint.client_values`); a bad value is a ``window/showMessage``
  warning. A saved or changed ``pyproject.toml``, launch script or config
  (``didSave``, ``workspace/didChangeWatchedFiles``) drops the cached settings and launches
  and lints the open documents again.
- Position encoding: pygls picks the first of the client's ``general.positionEncodings`` it
  supports (``utf-8``, ``utf-16``, ``utf-32``; ``pygls/capabilities.py``
  ``choose_position_encoding``), else UTF-16, the LSP default; diagnostics and edits are
  counted in it.

Every handler is an isolation boundary: an exception is logged (``window/logMessage``) and, for
a lint, shown as one ``LL999`` diagnostic; the server keeps running.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from lintlora import __version__
from lintlora.server_lint import (
    FIX_ALL_KIND, SOURCE, Diag, LintSession, cell_diagnostics, cell_fix_edits, contains,
    diagnostics, fix_all_safe, fix_edits_for, hover_markdown, is_invalidating, kind_for,
    notebook_json,
)

__all__ = ["LintloraServer", "make_server", "main", "DEBOUNCE_SECONDS"]

DEBOUNCE_SECONDS = 0.01
"""How long a ``didChange`` waits before its lint; a newer change of the same document in that
time replaces it (so a burst of keystrokes is linted once, at its last version). Short: the
changes of a burst are already in the pipe when the first is handled."""

MAX_MESSAGE_BYTES = 256 * 2**20
"""The largest JSON-RPC message body read, in bytes (a ``didOpen`` of a file far above
``max-file-size``); a larger ``Content-Length`` is skipped (:class:`_BoundedStdin`)."""

MAX_HEADER_LINE_BYTES = 65536
"""The longest header line read at once (a longer one is read in pieces, none of which is a
``Content-Length`` header)."""

_SUFFIX_OF_LANGUAGE = {"python": ".py", "yaml": ".yaml", "json": ".json", "jsonc": ".json",
                       "jupyter": ".ipynb"}

logger = logging.getLogger("lintlora.server")


class _Linted:
    """A document's last lint: its version, text, result and diagnostics."""

    __slots__ = ("version", "text", "path", "kind", "result", "diags", "settings", "notebook")

    def __init__(self, version: Any, text: str, path: str, kind: str | None, result: Any,
                 diags: list[Diag], settings: Any, notebook: Any = None) -> None:
        self.version = version
        self.text = text
        self.path = path
        self.kind = kind
        self.result = result
        self.diags = diags
        self.settings = settings
        # a notebook cell (notebook sync): (notebook uri, notebook JSON, code cells' texts,
        # code cells' uris); ``None`` for a text document
        self.notebook = notebook


NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[
    types.NotebookDocumentFilterWithCells(notebook="jupyter-notebook",
                                          cells=[types.NotebookCellLanguage(language="python")])])
"""The notebooks the server asks the client to sync cell by cell (LSP 3.17
``notebookDocumentSync``; ``jupyter-notebook`` is VS Code's type of ``.ipynb`` files). The
cells are linted together as the notebook (:func:`lintlora.server_lint.notebook_json`), each
cell's diagnostics published on the cell's own document."""


class LintloraServer(LanguageServer):
    """The pygls server with the lint session (:class:`lintlora.server_lint.LintSession`)."""

    def __init__(self) -> None:
        super().__init__("lintlora", __version__, notebook_document_sync=NOTEBOOK_SYNC)
        self.session: LintSession | None = None
        self.linted: dict[str, _Linted] = {}
        self.notebooks: dict[str, list[str]] = {}  # notebook uri -> its cells' uris
        self.pending: dict[str, Any] = {}
        self.root: str | None = None

    # -- helpers --
    @property
    def encoding(self) -> str:
        try:
            value = self.workspace.position_encoding
        except Exception:  # noqa: BLE001 - before initialize
            return "utf-16"
        return str(getattr(value, "value", value) or "utf-16")

    def lint_session(self) -> LintSession:
        if self.session is None:
            self.session = LintSession(None, root=self.root)
        return self.session

    def say(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        try:
            self.window_show_message(types.ShowMessageParams(type=kind,
                                                             message=f"lintlora: {message}"))
        except Exception:  # noqa: BLE001
            logger.warning("%s", message)

    def log(self, message: str) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=f"lintlora: {message}"))
        except Exception:  # noqa: BLE001
            logger.error("%s", message)

    def show_warnings(self) -> None:
        for warning in self.lint_session().take_warnings()[:8]:
            self.say(warning)

    def open_document(self, uri: str) -> Any:
        """The open text document ``uri`` (pygls' ``TextDocument``), or ``None``.

        Never pygls' ``workspace.get_text_document`` for a URI the client did not open: it
        makes a document whose ``source`` reads the file from disk, whole and unbounded
        (``pygls/workspace/text_document.py``, ``pathlib.Path(self.path).read_text()``), so
        a hover or a ``didChange`` naming ``file:///dev/zero`` or a FIFO would hang the
        server, and one naming a file outside the workspace would lint it from disk (found
        by ``tests/test_security_review_tools.py``). pygls keys open documents by the
        unquoted URI (``Workspace.get_text_document``)."""
        from urllib.parse import unquote

        return self.workspace.text_documents.get(unquote(uri))

    def document_path(self, uri: str, language_id: str | None) -> tuple[str, bool]:
        """``(path, on_disk)``: the file path of a ``file:`` URI, else a made-up path in the
        workspace named after the URI with the suffix of the document's language.

        ``on_disk`` is false for a file outside the workspace folder (symbolic links
        resolved: ``file:///proj/../etc/x.py``, a link to ``/etc``, ``/dev/zero``), so no
        launch script or other file is read for it there: only its buffer is linted. A path
        the system cannot name (``%00``) is a made-up one."""
        path = None
        try:
            path = to_fs_path(uri) if uri.startswith("file:") else None
        except Exception:  # noqa: BLE001 - a malformed URI
            path = None
        if path and "\x00" not in path:
            from lintlora.safeio import is_within

            return path, self.root is None or is_within(path, self.root)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in uri.split(":")[-1])[:64]
        suffix = _SUFFIX_OF_LANGUAGE.get((language_id or "").lower(), "")
        if kind_for(name) is None:
            name = (name or "untitled") + suffix
        return os.path.join(self.root or os.getcwd(), name or "untitled"), False

    # -- linting --
    def lint_uri(self, uri: str) -> _Linted | None:
        """Lint the open document ``uri`` now and publish its diagnostics."""
        document = self.open_document(uri)
        if document is None:  # not open (a change or save of a closed document): nothing read
            self.linted.pop(uri, None)
            return None
        try:
            text = document.source
            version = document.version
            path, on_disk = self.document_path(uri, document.language_id)
            kind = kind_for(path, document.language_id)
            session = self.lint_session()
            if kind is None:
                linted = _Linted(version, text, path, kind, None, [], None)
            else:
                result = session.lint(path, text, kind, on_disk=on_disk)
                diags = diagnostics(result, text, self.encoding, session.rule_of)
                linted = _Linted(version, text, path, kind, result, diags,
                                 session.settings_for(path))
        except Exception as exc:  # noqa: BLE001 - the server keeps running
            self.log(f"linting {uri} failed: {type(exc).__name__}: {exc}")
            linted = _Linted(None, "", "", None, None, [Diag(
                (0, 0, 0, 1), 1, "LL999", None,
                f"internal error in the editor server: {type(exc).__name__}; please report it "
                f"at https://github.com/lintlora/lintlora/issues")], None)
        self.linted[uri] = linted
        self.publish(uri, linted)
        if self.session is not None and self.session.warnings:
            self.show_warnings()
        return linted

    def lint_notebook(self, uri: str) -> None:
        """Lint the open notebook ``uri`` (its cells as one ``.ipynb``) and publish each
        cell's diagnostics on the cell."""
        cells_uris: list[str] = []
        try:
            notebook = self.workspace.get_notebook_document(notebook_uri=uri)
            if notebook is None:
                return
            cells: list[tuple[bool, str]] = []
            code_texts: list[str] = []
            code_uris: list[str] = []
            for cell in notebook.cells[:10_000]:
                document = self.open_document(cell.document)  # a cell never opened: empty
                source = document.source if document is not None else ""
                language = (document.language_id if document is not None else None) or "python"
                is_code = cell.kind == types.NotebookCellKind.Code and language == "python"
                cells.append((is_code, source))
                cells_uris.append(cell.document)
                if is_code:
                    code_texts.append(source)
                    code_uris.append(cell.document)
            text = notebook_json(cells)
            path, on_disk = self.document_path(uri, "jupyter")
            if not path.endswith(".ipynb"):
                path += ".ipynb"
            session = self.lint_session()
            result = session.lint(path, text, "notebook", on_disk=on_disk)
            by_cell = cell_diagnostics(result, code_texts, self.encoding, session.rule_of)
            settings = session.settings_for(path)
            for index, cell_uri in enumerate(code_uris, start=1):
                linted = _Linted(notebook.version, code_texts[index - 1], path, "notebook", result,
                                 by_cell.get(index, []), settings,
                                 (uri, text, code_texts, code_uris))
                self.linted[cell_uri] = linted
                self.publish(cell_uri, linted, version=False)
        except Exception as exc:  # noqa: BLE001 - the server keeps running
            self.log(f"linting {uri} failed: {type(exc).__name__}: {exc}")
        for old in self.notebooks.get(uri, []):
            if old not in cells_uris or old not in self.linted:  # a cell deleted or no code
                self.linted.pop(old, None)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=old, diagnostics=[]))
        self.notebooks[uri] = cells_uris
        if self.session is not None and self.session.warnings:
            self.show_warnings()

    def publish(self, uri: str, linted: _Linted, version: bool = True) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=linted.version if version and isinstance(linted.version, int)
            else None,
            diagnostics=[to_diagnostic(d) for d in linted.diags]))

    def current(self, uri: str) -> _Linted | None:
        """The lint of the document's current version (linted now if it is stale)."""
        linted = self.linted.get(uri)
        if linted is not None and linted.notebook is not None:
            notebook = self.workspace.get_notebook_document(notebook_uri=linted.notebook[0])
            if notebook is not None and notebook.version != linted.version:
                self.pending.pop(linted.notebook[0], None)
                self.lint_notebook(linted.notebook[0])
                linted = self.linted.get(uri)
            return linted
        document = self.open_document(uri)
        if document is None:
            return None  # not open: nothing is read from disk for it
        version = document.version
        if linted is None or linted.version != version:
            self.pending.pop(uri, None)
            linted = self.lint_uri(uri)
        return linted

    def relint_all(self) -> None:
        for uri in list(self.linted):
            if self.linted.get(uri) is not None and self.linted[uri].notebook is None:
                self.lint_uri(uri)
        for uri in list(self.notebooks):
            self.lint_notebook(uri)


def _range(r: tuple[int, int, int, int]) -> types.Range:
    return types.Range(start=types.Position(line=r[0], character=r[1]),
                       end=types.Position(line=r[2], character=r[3]))


def to_diagnostic(diag: Diag) -> types.Diagnostic:
    """A :class:`lintlora.server_lint.Diag` as an lsprotocol ``Diagnostic``."""
    related = None
    if diag.related:
        related = [types.DiagnosticRelatedInformation(
            location=types.Location(uri=from_fs_path(os.path.abspath(path)) or path,
                                    range=_range(rng)),
            message=message) for path, rng, message in diag.related]
    return types.Diagnostic(
        range=_range(diag.range), severity=types.DiagnosticSeverity(diag.severity),
        code=diag.code,
        code_description=types.CodeDescription(href=diag.href) if diag.href else None,
        source=SOURCE, message=diag.message, related_information=related)


def _overlaps(a: tuple[int, int, int, int], b: types.Range) -> bool:
    return (a[0], a[1]) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a[2], a[3])


def _workspace_edit(edits: dict, uri: str, path: str) -> types.WorkspaceEdit:
    from lintlora.server_lint import _same_file

    changes: dict[str, list[types.TextEdit]] = {}
    for edit_path, (_old, items) in edits.items():
        target = uri if _same_file(edit_path, path) else from_fs_path(os.path.abspath(edit_path))
        changes.setdefault(target, []).extend(
            types.TextEdit(range=_range(rng), new_text=new) for rng, new in items)
    return types.WorkspaceEdit(changes=changes)


def make_server() -> LintloraServer:
    """A server with lintlora's handlers registered."""
    server = LintloraServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: LintloraServer, params: types.InitializeParams) -> None:
        root = None
        try:
            if params.workspace_folders:
                root = to_fs_path(params.workspace_folders[0].uri)
            elif params.root_uri:
                root = to_fs_path(params.root_uri)
            elif params.root_path:
                root = params.root_path
        except Exception:  # noqa: BLE001
            root = None
        ls.root = root
        ls.session = LintSession(params.initialization_options, root=root)

    @server.feature(types.INITIALIZED)
    def initialized(ls: LintloraServer, params: types.InitializedParams) -> None:
        ls.show_warnings()
        try:
            caps = ls.client_capabilities.workspace
            watched = caps.did_change_watched_files if caps else None
            if watched is not None and watched.dynamic_registration:
                ls.client_register_capability(types.RegistrationParams(registrations=[
                    types.Registration(
                        id="lintlora-watched-files",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[types.FileSystemWatcher(glob_pattern=g) for g in (
                                "**/pyproject.toml", "**/*.{sh,bash,slurm,sbatch}",
                                "**/Makefile", "**/*.{yaml,yml,json}",
                                "**/requirements*.txt")]))]))
        except Exception as exc:  # noqa: BLE001 - watching is a nicety
            ls.log(f"could not register file watchers: {exc}")

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LintloraServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint_uri(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: LintloraServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        version = params.text_document.version
        ls.pending[uri] = version
        await asyncio.sleep(DEBOUNCE_SECONDS)
        if ls.pending.get(uri) != version:
            return  # a newer change of the document is waiting: it is linted instead
        ls.pending.pop(uri, None)
        ls.lint_uri(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LintloraServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path, on_disk = ls.document_path(uri, None)
        if on_disk and is_invalidating(path):  # settings, pins, a launch or a config
            ls.lint_session().invalidate()
            ls.relint_all()
            return
        if uri in ls.linted:
            ls.lint_uri(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LintloraServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.linted.pop(uri, None)
        ls.pending.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                            diagnostics=[]))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: LintloraServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: LintloraServer,
                              params: types.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        version = params.notebook_document.version
        ls.pending[uri] = version
        await asyncio.sleep(DEBOUNCE_SECONDS)
        if ls.pending.get(uri) != version:
            return
        ls.pending.pop(uri, None)
        ls.lint_notebook(uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: LintloraServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: LintloraServer, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.pending.pop(uri, None)
        cells = ls.notebooks.pop(uri, [])
        cells.extend(c.uri for c in params.cell_text_documents or [])
        for cell in dict.fromkeys(cells):
            ls.linted.pop(cell, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell,
                                                                                diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: LintloraServer, params: types.DidChangeWatchedFilesParams) -> None:
        paths = [to_fs_path(c.uri) for c in params.changes[:10_000] if c.uri.startswith("file:")]
        if any(p and is_invalidating(p) for p in paths):
            ls.lint_session().invalidate()
            ls.relint_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration(ls: LintloraServer, params: types.DidChangeConfigurationParams) -> None:
        ls.lint_session().configure(params.settings)
        ls.show_warnings()
        ls.relint_all()

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: LintloraServer, params: types.HoverParams) -> types.Hover | None:
        try:
            linted = ls.current(params.text_document.uri)
            if linted is None:
                return None
            at = params.position
            hits = [d for d in linted.diags if contains(d.range, at.line, at.character)]
            if not hits:
                return None
            text = "\n\n---\n\n".join(hover_markdown(d) for d in hits[:8])
            first = hits[0].range
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                            value=text), range=_range(first))
        except Exception as exc:  # noqa: BLE001
            ls.log(f"hover failed: {type(exc).__name__}: {exc}")
            return None

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    def code_action(ls: LintloraServer, params: types.CodeActionParams
                    ) -> list[types.CodeAction] | None:
        try:
            return _code_actions(ls, params)
        except Exception as exc:  # noqa: BLE001
            ls.log(f"code actions failed: {type(exc).__name__}: {exc}")
            return None

    return server


def _wanted(only: list[str] | None, kind: str) -> bool:
    """Whether a code action of ``kind`` is asked for by ``context.only`` (LSP: a kind matches
    its prefixes, ``source`` includes ``source.fixAll.lintlora``)."""
    if not only:
        return True
    return any(kind == o or kind.startswith(f"{o}.") for o in only)


def _code_actions(ls: LintloraServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    linted = ls.current(uri)
    if linted is None or linted.result is None:
        return []
    only = [str(getattr(k, "value", k)) for k in (params.context.only or [])] or None
    actions: list[types.CodeAction] = []
    encoding = ls.encoding
    if linted.notebook is not None:
        return _cell_actions(linted, params, only, encoding)
    if _wanted(only, types.CodeActionKind.QuickFix.value):
        for diag in linted.diags:
            finding = diag.finding
            if finding is None or finding.autofix is None or not _overlaps(diag.range, params.range):
                continue
            edits = fix_edits_for(finding, linted.path, linted.text, linted.kind, encoding)
            if not edits:
                continue
            from lintlora.findings import FixSafety

            safe = finding.autofix.safety is FixSafety.SAFE
            title = f"lintlora: {finding.autofix.title} ({finding.code})" + ("" if safe else " (unsafe)")
            actions.append(types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix,
                diagnostics=[to_diagnostic(diag)], is_preferred=safe or None,
                edit=_workspace_edit(edits, uri, linted.path)))
    if _wanted(only, FIX_ALL_KIND):
        findings = [d.finding for d in linted.diags if d.finding is not None]
        edits = fix_all_safe(findings, linted.path, linted.text, linted.kind, linted.settings,
                             encoding)
        if edits:
            actions.append(types.CodeAction(title="lintlora: fix all safe", kind=FIX_ALL_KIND,
                                            edit=_workspace_edit(edits, uri, linted.path)))
    return actions


def _cell_actions(linted: _Linted, params: types.CodeActionParams, only: list[str] | None,
                  encoding: str) -> list[types.CodeAction]:
    """Quick fixes on a notebook cell (edits on the cells they change); no "fix all" there."""
    from lintlora.findings import FixSafety

    _uri, text, code_texts, code_uris = linted.notebook
    actions = []
    if not _wanted(only, types.CodeActionKind.QuickFix.value):
        return actions
    for diag in linted.diags:
        finding = diag.finding
        if finding is None or finding.autofix is None or not _overlaps(diag.range, params.range):
            continue
        edits = cell_fix_edits(finding, text, code_texts, encoding)
        if not edits:
            continue
        safe = finding.autofix.safety is FixSafety.SAFE
        changes = {code_uris[cell - 1]: [types.TextEdit(range=_range(rng), new_text=new)
                                         for rng, new in items] for cell, items in edits.items()}
        actions.append(types.CodeAction(
            title=f"lintlora: {finding.autofix.title} ({finding.code})" + ("" if safe else " (unsafe)"),
            kind=types.CodeActionKind.QuickFix, diagnostics=[to_diagnostic(diag)],
            is_preferred=safe or None, edit=types.WorkspaceEdit(changes=changes)))
    return actions


class _BoundedStdin:
    """Standard input for pygls' stdio reader (``pygls/io_.py`` ``StdinAsyncReader`` calls
    ``readline()`` and ``read(n)`` with ``n`` the frame's ``Content-Length``), bounded.

    pygls reads ``n`` bytes in one ``read`` call, and Python allocates them first: a frame
    announcing ``Content-Length: 100000000000`` ended the server with a ``MemoryError``, and
    ``2**63`` with an ``OverflowError`` (``tests/test_security_review_tools.py``). A body over
    :data:`MAX_MESSAGE_BYTES` is read and dropped in 1 MiB pieces (memory stays bounded and the
    stream stays in step with its frames) and is handed on as ``null``, which pygls logs as a
    message it cannot handle, going on with the next one. A header line is read at most
    :data:`MAX_HEADER_LINE_BYTES` at a time; a ``Content-Length`` line longer than
    :data:`_MAX_LENGTH_LINE` bytes (pygls calls ``int()`` on its digits outside its error
    handling, and Python refuses more than 4,300 digits with a ``ValueError``) is read as the
    end of input: the server stops as at any end, no traceback."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        line = self.raw.readline(MAX_HEADER_LINE_BYTES)
        if len(line) > _MAX_LENGTH_LINE and line[:15].lower() == b"content-length:":
            logger.error("a Content-Length header of %d bytes: input ended", len(line))
            return b""
        return line


    def read(self, n: int) -> bytes:
        if n <= MAX_MESSAGE_BYTES:
            return self.raw.read(n)
        logger.error("a message of %d bytes (more than %d) skipped", n, MAX_MESSAGE_BYTES)
        left = n
        while left > 0:
            piece = self.raw.read(min(left, 2**20))
            if not piece:
                return b""  # the end of input: pygls ends its loop, as at any end
            left -= len(piece)
        return b"null"


_MAX_LENGTH_LINE = 64
"""Bytes of a ``Content-Length`` header line at most (``Content-Length: `` and the digits of
:data:`MAX_MESSAGE_BYTES` with room to spare)."""


def main() -> int:
    """Serve over stdio until the client's ``exit``; returns the exit status."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    server = make_server()
    server.start_io(stdin=_BoundedStdin(sys.stdin.buffer))
    # pygls closed standard output with the connection: later flushes (the CLI's at its end)
    # must not fail on it
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    # LSP 3.17 "exit": "The server should exit with success code 0 if the shutdown request has
    # been received before; otherwise with error code 1" (pygls keeps that in the protocol's
    # _shutdown flag, pygls/protocol/language_server.py lsp_shutdown)
    return 0 if getattr(server.protocol, "_shutdown", True) else 1
