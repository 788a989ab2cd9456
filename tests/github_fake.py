"""A local stand-in for the GitHub REST endpoints the action calls (tests/test_github_review.py).

An :class:`http.server.ThreadingHTTPServer` on 127.0.0.1 and a free port, in a thread. It keeps
the pull request's issue comments and review comments in memory, answers with copies of the
documented payloads in ``fixtures/github/`` (see its README for the doc pages), paginates every
listing by ``page``/``per_page`` with a ``Link`` header as GitHub does (``page_size`` caps a
page, so a test sees several pages), and records every request (method, path, query,
Authorization header, JSON body).
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "github"


def payload(name: str):
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


class FakeGitHub:
    def __init__(self, repo: str = "octocat/Hello-World", number: int = 7,
                 files: dict[str, str] | None = None, page_size: int = 100) -> None:
        self.repo = repo
        self.number = number
        self.files = files or {}          # filename -> patch
        self.page_size = page_size
        self.issue_comments: list[dict] = []
        self.review_comments: list[dict] = []
        self.reviews: list[dict] = []
        self.requests: list[dict] = []
        self.forbid_writes = False        # a read-only token: writes answer 403
        self.rate_limited = 0             # that many requests answer a rate limit first
        self.rate_limit_headers: dict[str, str] = {}
        self.server_errors = 0            # that many requests answer 502 first
        self.post_errors = 0              # that many POSTs answer 502 (after doing nothing)
        self.extra_link: str | None = None  # a Link header to send on the first page instead
        self._next_id = 100
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with fake._lock:
                    status, headers, data = fake.answer(method, self.path, body,
                                                        dict(self.headers))
                out = json.dumps(data).encode() if data is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(out)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeGitHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- the endpoints --------------------------------------------------------------------

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _page(self, path: str, query: dict, items: list) -> tuple[int, dict, list]:
        per_page = min(int(query.get("per_page", ["30"])[0]), 100, self.page_size)
        page = int(query.get("page", ["1"])[0])
        start = (page - 1) * per_page
        chunk = items[start:start + per_page]
        headers = {}
        last = max(1, -(-len(items) // per_page))
        if page < last:
            headers["Link"] = (f'<{self.url}{path}?per_page={per_page}&page={page + 1}>; '
                               f'rel="next", <{self.url}{path}?per_page={per_page}&page={last}>; '
                               f'rel="last"')
        if self.extra_link and page == 1:
            headers["Link"] = self.extra_link
        return 200, headers, copy.deepcopy(chunk)

    def answer(self, method: str, raw_path: str, body, headers: dict):
        parts = urlsplit(raw_path)
        path, query = parts.path, parse_qs(parts.query)
        self.requests.append({"method": method, "path": path, "query": parts.query,
                              "authorization": headers.get("Authorization"), "body": body})
        if self.server_errors:
            self.server_errors -= 1
            return 502, {}, {"message": "Server Error"}
        if self.post_errors and method == "POST":
            self.post_errors -= 1
            return 502, {}, {"message": "Server Error"}
        if self.rate_limited:
            self.rate_limited -= 1
            return 403, dict(self.rate_limit_headers), payload("error-rate-limit.json")
        base = f"/repos/{self.repo}"
        n = self.number
        if method in ("POST", "PATCH") and self.forbid_writes:
            return 403, {}, payload("error-403.json")
        if method == "GET" and path == f"{base}/issues/{n}/comments":
            return self._page(path, query, self.issue_comments)
        if method == "POST" and path == f"{base}/issues/{n}/comments":
            item = payload("issue-comment.json")
            item.update(id=self._id(), body=body["body"],
                        user={"login": "github-actions[bot]", "id": 41898282, "type": "Bot"})
            self.issue_comments.append(item)
            return 201, {}, item
        if method == "PATCH" and path.startswith(f"{base}/issues/comments/"):
            wanted = int(path.rsplit("/", 1)[1])
            for item in self.issue_comments:
                if item["id"] == wanted:
                    item["body"] = body["body"]
                    return 200, {}, item
            return 404, {}, {"message": "Not Found"}
        if method == "GET" and path == f"{base}/pulls/{n}/files":
            items = []
            for name, patch in self.files.items():
                item = payload("pull-file.json")
                item.update(filename=name, status="modified", patch=patch)
                items.append(item)
            return self._page(path, query, items)
        if method == "GET" and path == f"{base}/pulls/{n}/comments":
            return self._page(path, query, self.review_comments)
        if method == "POST" and path == f"{base}/pulls/{n}/reviews":
            review = payload("review.json")
            review.update(id=self._id(), body=body.get("body"), commit_id=body.get("commit_id"))
            self.reviews.append(body)
            for comment in body.get("comments", []):
                item = payload("review-comment.json")
                item.update(id=self._id(), pull_request_review_id=review["id"],
                            path=comment["path"], body=comment["body"], line=comment["line"],
                            side=comment.get("side"), start_line=comment.get("start_line"),
                            start_side=comment.get("start_side"), commit_id=body["commit_id"],
                            user={"login": "github-actions[bot]", "id": 41898282, "type": "Bot"})
                self.review_comments.append(item)
            return 200, {}, review
        return 404, {}, {"message": "Not Found"}

    def writes(self) -> list[dict]:
        return [r for r in self.requests if r["method"] in ("POST", "PATCH")]
