"""A minimal Language Server Protocol client for the tests and the benchmark: JSON-RPC 2.0 with
``Content-Length`` framing over a subprocess's stdin/stdout (LSP 3.17, "Base Protocol":
https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#baseProtocol).

A reader thread parses every message the server writes: responses are matched to their request
by ``id``; notifications (``textDocument/publishDiagnostics``, ``window/showMessage``...) are
kept in order; a request from the server (``client/registerCapability``) is answered with
``null``.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable


class LspClient:
    """Starts ``command`` (default ``python -m lintlora server``) and talks to it."""

    def __init__(self, command: list[str] | None = None, cwd: str | None = None,
                 env: dict | None = None) -> None:
        self.proc = subprocess.Popen(command or [sys.executable, "-m", "lintlora", "server"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self._next = 0
        self._responses: dict[int, Any] = {}
        self._cond = threading.Condition()
        self.notifications: list[tuple[float, dict]] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # -- wire --
    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            message = json.loads(out.read(length or 0))
            with self._cond:
                if "id" in message and "method" in message:  # a request of the server
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif "id" in message:
                    self._responses[message["id"]] = message
                else:
                    self.notifications.append((time.perf_counter(), message))
                self._cond.notify_all()

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line)

    # -- API --
    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        """The response's ``result``; raises ``AssertionError`` for an error or no answer."""
        with self._cond:
            self._next += 1
            msg_id = self._next
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no answer to {method} (stderr: "
                                         f"{b''.join(self.stderr[-20:])!r})")
                self._cond.wait(left)
            response = self._responses.pop(msg_id)
        assert "error" not in response, response
        return response.get("result")

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 60,
                 since: int = 0) -> tuple[int, dict]:
        """The first notification from index ``since`` on for which ``predicate`` holds, and
        its index."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(since, len(self.notifications)):
                    if predicate(self.notifications[i][1]):
                        return i, self.notifications[i][1]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no such notification; got "
                                         f"{[n['method'] for _t, n in self.notifications[since:]]}"
                                         f" (stderr: {b''.join(self.stderr[-20:])!r})")
                self._cond.wait(left)

    def diagnostics(self, uri: str, predicate: Callable[[list], bool] = lambda d: True,
                    since: int = 0, version: int | None = None, timeout: float = 60) -> list:
        """The diagnostics of the first ``publishDiagnostics`` for ``uri`` (from notification
        ``since`` on, of ``version`` when given) that satisfy ``predicate``."""
        def wanted(n: dict) -> bool:
            if n.get("method") != "textDocument/publishDiagnostics":
                return False
            p = n["params"]
            return p["uri"] == uri and (version is None or p.get("version") == version) \
                and predicate(p["diagnostics"])

        return self.wait_for(wanted, timeout, since)[1]["params"]["diagnostics"]

    def mark(self) -> int:
        """The index the next notification will have."""
        with self._cond:
            return len(self.notifications)

    def close(self, timeout: float = 10) -> int | None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
