"""The GitHub Action's steps (``action.yml``): lint a pull request, then report on it.

Run as ``python -m lintlora.github_review lint`` and ``python -m lintlora.github_review report``
(not a ``lintlora`` subcommand, so the linter's own command line imports none of this). Both read
their settings from the environment the action sets (``INPUT_*`` from the action's inputs, the
runner's ``GITHUB_*``: https://docs.github.com/en/actions/reference/variables-reference) and never
from an interpolated script, so no pull request text reaches a shell.

``lint``
    runs ``lintlora check`` once per report format, from the same settings: JSON (the verdict:
    its exit status is the job's), Markdown, SARIF when ``INPUT_SARIF`` names a file, and
    ``--format github`` on standard output (the annotations). The runs after the first are served
    by lintlora's results cache. On a pull request only the lines it changes count
    (``--diff-only <base sha>``; :mod:`lintlora.gitdiff` takes the merge base of that commit and
    ``HEAD``, so the checkout needs the base commit: ``fetch-depth: 0``, or this step fetches
    the one commit, ``git fetch --depth=1 origin <sha>``, after which the merge base is the
    commit itself); on any other event every file. It writes ``status=<0|1|2>`` and the report
    paths to ``$GITHUB_OUTPUT`` and exits 0 unless it could not run lintlora at all.

``report``
    writes the Markdown report into the job summary (``$GITHUB_STEP_SUMMARY``) and, when
    ``INPUT_COMMENT`` is ``true`` on a pull request from the same repository, keeps one
    pull-request comment holding it (found again by :data:`REPORT_MARKER` and updated) and posts
    one review with a comment on each finding whose line the pull request adds, with the fix as
    a ``suggestion`` block when the finding has a safe autofix whose lines the pull request also
    adds. A finding already commented (its :data:`FINDING_MARKER` in a review comment) is not
    posted again. Review comments go only on files the checkout holds as the pull request's
    head commit has them (a merge-commit checkout where the base changed the file too has other
    line numbers; without the head commit to compare, comments carry no suggestion). Every API
    problem (permissions, rate limit, server error, timeout, a malformed
    or oversized response) is a ``::warning::`` workflow command; this step always exits 0.

REST endpoints (API version 2022-11-28):

- list/create/update issue comments: https://docs.github.com/en/rest/issues/comments
  (``GET /repos/{owner}/{repo}/issues/{n}/comments``, ``POST`` the same,
  ``PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}``; body: ``{"body"}``)
- list pull request files: https://docs.github.com/en/rest/pulls/pulls#list-pull-requests-files
  (``GET /repos/{owner}/{repo}/pulls/{n}/files``: ``[{"filename", "status", "patch"?}]``, at
  most 3000 files, ``per_page`` up to 100; ``patch`` absent for a binary or too large diff)
- list review comments: https://docs.github.com/en/rest/pulls/comments#list-review-comments-on-a-pull-request
- create a review: https://docs.github.com/en/rest/pulls/reviews#create-a-review-for-a-pull-request
  (``POST /repos/{owner}/{repo}/pulls/{n}/reviews`` ``{"commit_id", "body", "event": "COMMENT",
  "comments": [{"path", "body", "line", "side": "RIGHT", "start_line"?, "start_side"?}]}``;
  ``line``/``side`` rather than the deprecated ``position``)
- pagination by the ``Link`` header: https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
- rate limits (``403``/``429``, ``retry-after``, ``x-ratelimit-remaining: 0`` with
  ``x-ratelimit-reset`` in epoch seconds): https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
- suggestion blocks: https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/reviewing-changes-in-pull-requests/commenting-on-a-pull-request#adding-line-comments-to-a-pull-request
- workflow commands and the job summary (1 MiB per step):
  https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions
- a forked pull request's ``GITHUB_TOKEN`` is read-only:
  https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication#permissions-for-the-github_token

The token is sent only to the API host (``GITHUB_API_URL``; a ``Link`` to another host is not
followed) and never printed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

__all__ = ["main", "lint_main", "report_main", "GitHubClient", "ApiError", "changed_lines",
           "plan_comments", "PlannedComment", "warning", "REPORT_MARKER", "FINDING_MARKER",
           "MAX_BODY_CHARS"]

REPORT_MARKER = "<!-- lintlora-report -->"
"""The hidden first line of the pull-request comment that holds the report."""

FINDING_MARKER = "<!-- lintlora-finding:{key} -->"
"""The hidden last line of a review comment (``key``: :func:`finding_key`, hex)."""

_FINDING_KEY = re.compile(r"<!-- lintlora-finding:([0-9a-f]{20}) -->")

MAX_BODY_CHARS = 65536
"""GitHub's limit on a comment body, in characters (the API answers 422 above it)."""

MAX_SUMMARY_BYTES = 2**20
"""GitHub's limit on what one step writes to ``$GITHUB_STEP_SUMMARY`` (1 MiB)."""

MAX_RESPONSE_BYTES = 16 * 2**20
"""Bytes read of one API response; a longer one is an error (a page of 100 files with their
patches stays well below)."""

MAX_PAGES = 30
"""Pages followed of one listing (30 x 100 = GitHub's 3000-file limit of the files listing)."""

PER_PAGE = 100
"""``per_page`` of a listing (GitHub's maximum)."""

MAX_WAIT_S = 60.0
"""Longest wait for a rate limit to reset; a longer one gives up (a warning)."""

MAX_ATTEMPTS = 3
"""Tries of one request (rate limit waits and 5xx retries together)."""

TIMEOUT_S = 30.0
"""Socket timeout of one request, in seconds."""

MAX_REVIEW_COMMENTS = 50
"""Review comments posted by one run; the other findings stay in the report comment."""

MAX_EVENT_BYTES = 32 * 2**20
"""Bytes read of ``$GITHUB_EVENT_PATH`` (webhook payloads are capped at 25 MB)."""

MAX_REPORT_BYTES = 64 * 2**20
"""Bytes read of the JSON or Markdown report lintlora wrote."""

MAX_PATCH_CHARS = 4 * 2**20
"""Characters of one file's ``patch`` parsed (GitHub truncates large diffs itself)."""

_TOKEN_CHARS = re.compile(r"[!-~]+")
"""What a token may hold: printable ASCII without the space (GitHub's tokens are
``[A-Za-z0-9_]``; ``ghs_``/``ghp_``/``github_pat_`` prefixes). Found by
``tests/test_security_review_tools.py``: a secret pasted with its line break made
:mod:`http.client` raise ``ValueError("Invalid header value b'Bearer <token>\\n'")``, and that
text went into the step's warning."""

MAX_RESPONSE_SECONDS = 120.0
"""Longest time one response's body may take to arrive, in seconds (the socket timeout,
:data:`TIMEOUT_S`, bounds each read only: a server trickling a byte at a time would hold the
step for hours)."""

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_LINK_NEXT = re.compile(r'<([^<>\s]+)>\s*;\s*rel="?next"?')
_REFUSED_ARGS = ("--format", "-o", "--output", "--fix", "--unsafe-fixes", "--diff",
                 "--fix-only", "--show-fixes", "--show-setup", "--diff-only", "--changed-since",
                 "--force", "--paths-last")
"""Options of ``INPUT_ARGS`` the action sets itself or that would change files: refused."""


# ---- workflow commands ------------------------------------------------------------------------

def warning(message: str, out: Any = None) -> None:
    """Print ``message`` as one ``::warning::`` workflow command (``%``, CR, LF escaped as the
    runner requires: :func:`lintlora.report.escape.for_github_command_data`)."""
    from lintlora.report.escape import for_github_command_data

    stream = out or sys.stdout
    stream.write(f"::warning title=lintlora::{for_github_command_data(message)}\n")
    stream.flush()


def notice(message: str, out: Any = None) -> None:
    """Print ``message`` as one ``::notice::`` workflow command."""
    from lintlora.report.escape import for_github_command_data

    stream = out or sys.stdout
    stream.write(f"::notice title=lintlora::{for_github_command_data(message)}\n")
    stream.flush()


# ---- the HTTP client --------------------------------------------------------------------------

class ApiError(Exception):
    """A request that failed: ``status`` (0: no HTTP answer) and a message naming the request
    (method and path, never a header or the token)."""

    def __init__(self, message: str, status: int = 0, *, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.rate_limited = rate_limited

    @property
    def forbidden(self) -> bool:
        """401, 403 (not a rate limit) or 404: the token may not do this (a fork's read-only
        token, a missing ``permissions:`` entry)."""
        return self.status in (401, 403, 404) and not self.rate_limited


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    data: Any
    next_url: str | None = None


class GitHubClient:
    """A small REST client on :mod:`urllib.request` (imported on first use).

    Args:
        api_url: ``GITHUB_API_URL`` (``https://api.github.com``; a GitHub Enterprise Server's
            ``https://HOST/api/v3``).
        token: sent as ``Authorization: Bearer``, only to ``api_url``'s scheme and host.
        sleep, now: injectable for the tests (seconds).
    """

    def __init__(self, api_url: str, token: str, *, timeout: float = TIMEOUT_S,
                 sleep: Callable[[float], None] | None = None,
                 now: Callable[[], float] | None = None, max_wait: float = MAX_WAIT_S) -> None:
        from urllib.parse import urlsplit

        self.api_url = api_url.rstrip("/")
        parts = urlsplit(self.api_url)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise ApiError("GITHUB_API_URL is not an http(s) address")
        self._origin = (parts.scheme, parts.netloc)
        token = token.strip()
        if not _TOKEN_CHARS.fullmatch(token):
            # http.client would refuse the header with its value, token and all, in the
            # exception's text (``Invalid header value b'Bearer ...'``): never sent, never shown
            raise ApiError("the token is empty or holds characters an HTTP header cannot carry "
                           "(a line break, a space, a non-ASCII character); not used")
        self._token = token
        self.timeout = timeout
        self.sleep = sleep or _sleep
        self.now = now or time.time
        self.max_wait = max_wait
        self.requests = 0

    def _url(self, path_or_url: str) -> str:
        from urllib.parse import urlsplit

        if path_or_url.startswith("/"):
            return self.api_url + path_or_url
        parts = urlsplit(path_or_url)
        if (parts.scheme, parts.netloc) != self._origin:
            raise ApiError("a pagination link points away from the API host; not followed")
        return path_or_url

    def request(self, method: str, path_or_url: str, body: Any = None) -> Response:
        """One request, retried on a rate limit (waiting ``retry-after`` or until
        ``x-ratelimit-reset``, at most :data:`MAX_WAIT_S`; the request was not carried out) and,
        for GET and PATCH only (a POST may have been carried out: it would post twice), on a 5xx
        or a timeout (after 1 s, then 2 s), :data:`MAX_ATTEMPTS` tries in all.

        Raises:
            ApiError: a 4xx answer, a rate limit longer than the bound, the tries spent, a
                response over :data:`MAX_RESPONSE_BYTES` or not JSON.
        """
        url = self._url(path_or_url)
        what = f"{method} {_path_of(url)}"
        idempotent = method in ("GET", "PATCH")  # a POST that timed out may have been done
        for attempt in range(1, MAX_ATTEMPTS + 1):
            status, headers, raw = self._send(method, url, body, what)
            if status == 0 or status >= 500:
                if attempt == MAX_ATTEMPTS or not idempotent:
                    raise ApiError(f"{what}: {_status_text(status, raw)} after {attempt} tries",
                                   status)
                self.sleep(float(attempt))
                continue
            if status in (403, 429) and _rate_limited(status, headers):
                wait = _rate_limit_wait(headers, self.now())
                if wait is None or wait > self.max_wait or attempt == MAX_ATTEMPTS:
                    raise ApiError(f"{what}: rate limited (HTTP {status}); gave up"
                                   + (f" (reset in {wait:.0f} s)" if wait else ""), status,
                                   rate_limited=True)
                self.sleep(wait)
                continue
            if status >= 300:  # a redirect is not followed (see _no_redirect_handler)
                raise ApiError(f"{what}: {_status_text(status, raw)}", status)
            data = None
            if raw.strip():
                try:
                    data = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    raise ApiError(f"{what}: the response is not JSON", status) from None
            return Response(status, headers, data, _next_link(headers.get("link", "")))
        raise ApiError(f"{what}: no answer", 0)  # pragma: no cover - the loop returns or raises

    def _send(self, method: str, url: str, body: Any, what: str) -> tuple[int, dict, bytes]:
        """``(status, lower-cased headers, body bytes)``; status 0 on a timeout or a
        connection error."""
        import http.client
        import socket
        import urllib.error
        import urllib.request

        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "lintlora-action",
            **({"Content-Type": "application/json"} if data is not None else {}),
        })
        self.requests += 1
        opener = urllib.request.build_opener(_no_redirect_handler())
        try:
            with opener.open(req, timeout=self.timeout) as resp:
                return resp.status, _headers(resp.headers), _read_bounded(resp, what)
        except urllib.error.HTTPError as exc:
            try:
                raw = _read_bounded(exc, what)
            except ApiError:
                raw = b""
            return exc.code, _headers(exc.headers), raw
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError,
                http.client.HTTPException, ValueError):
            # HTTPException: a malformed status line or header, a body cut short
            # (IncompleteRead); ValueError: a URL or header http.client refuses. Their text
            # is not kept (it may quote a header)
            return 0, {}, b""

    def paginate(self, path: str, max_pages: int = MAX_PAGES) -> list[Any]:
        """Every item of a listing, following ``rel="next"`` links, at most ``max_pages``
        pages (a warning when more are left).

        Raises:
            ApiError: as :meth:`request`; a page that is not a JSON list.
        """
        sep = "&" if "?" in path else "?"
        url: str | None = f"{path}{sep}per_page={PER_PAGE}"
        items: list[Any] = []
        seen: set[str] = set()
        for _ in range(max_pages):
            seen.add(self._url(url))
            resp = self.request("GET", url)
            if not isinstance(resp.data, list):
                raise ApiError(f"GET {_path_of(url)}: the response is not a list")
            items.extend(resp.data)
            url = resp.next_url
            if not url:
                return items
            if self._url(url) in seen:  # a link back to a page read: the same items again
                warning(f"GET {_path_of(path)}: a pagination link loops back; not followed")
                return items
        warning(f"GET {_path_of(path)}: more than {max_pages} pages; the rest not read")
        return items


def _no_redirect_handler() -> Any:
    """A handler that follows no redirect (urllib would resend the Authorization header to
    wherever it points); a 3xx is then an error answer."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return NoRedirect()


def _sleep(seconds: float) -> None:
    """:func:`time.sleep` (the tests replace this)."""
    time.sleep(seconds)


def _headers(message: Any) -> dict[str, str]:
    return {k.lower(): str(v)[:1000] for k, v in (message.items() if message else [])}


def _read_bounded(resp: Any, what: str) -> bytes:
    """The response body: at most :data:`MAX_RESPONSE_BYTES`, read in 64 KiB pieces within
    :data:`MAX_RESPONSE_SECONDS` (a slow drip is cut off).

    Raises:
        ApiError: a longer body, or one that takes longer.
    """
    deadline = time.monotonic() + MAX_RESPONSE_SECONDS
    pieces: list[bytes] = []
    size = 0
    while size <= MAX_RESPONSE_BYTES:
        piece = resp.read(min(65536, MAX_RESPONSE_BYTES + 1 - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
        if time.monotonic() > deadline and size <= MAX_RESPONSE_BYTES:
            raise ApiError(f"{what}: the response took longer than "
                           f"{MAX_RESPONSE_SECONDS:.0f} s to arrive")
    if size > MAX_RESPONSE_BYTES:
        raise ApiError(f"{what}: the response is larger than {MAX_RESPONSE_BYTES // 2**20} MiB")
    return b"".join(pieces)


def _path_of(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _status_text(status: int, raw: bytes) -> str:
    if status == 0:
        return "no answer (timeout or connection error)"
    text = f"HTTP {status}"
    try:
        message = json.loads(raw.decode("utf-8")).get("message")
    except (UnicodeDecodeError, ValueError, AttributeError):
        message = None
    if isinstance(message, str) and message:
        text += f": {message[:300]}"
    return text


def _rate_limited(status: int, headers: dict[str, str]) -> bool:
    """A primary (``x-ratelimit-remaining: 0``) or secondary (``retry-after``; a 429) limit."""
    return (status == 429 or headers.get("x-ratelimit-remaining") == "0"
            or "retry-after" in headers)


def _rate_limit_wait(headers: dict[str, str], now: float) -> float | None:
    """Seconds to wait: ``retry-after``, else until ``x-ratelimit-reset``, else 60 (the docs'
    advice for a secondary limit without either); ``None`` when a header is malformed."""
    try:
        if "retry-after" in headers:
            return max(0.0, float(int(headers["retry-after"])))
        if "x-ratelimit-reset" in headers:
            return max(0.0, float(int(headers["x-ratelimit-reset"])) - now)
    except ValueError:
        return None
    return 60.0


def _next_link(link: str) -> str | None:
    match = _LINK_NEXT.search(link or "")
    return match.group(1) if match else None


# ---- the diff ---------------------------------------------------------------------------------

def changed_lines(patch: str) -> set[int]:
    """The right-side (new file) line numbers that a unified-diff ``patch`` (a files listing's
    ``patch``: hunks only, no ``diff --git`` header) adds: the lines starting with ``+``."""
    added: set[int] = set()
    line = 0
    in_hunk = False
    for text in patch[:MAX_PATCH_CHARS].split("\n"):
        match = _HUNK.match(text)
        if match:
            line = int(match.group(1))
            in_hunk = True
            continue
        if not in_hunk or not text:
            continue
        mark = text[0]
        if mark == "+":
            added.add(line)
            line += 1
        elif mark == " ":
            line += 1
        # "-" is the left side only; "\" is "\ No newline at end of file"
    return added


# ---- planning the review ----------------------------------------------------------------------

@dataclass
class PlannedComment:
    """One review comment: ``line`` (and ``start_line`` for several) on the right side."""

    key: str
    path: str
    line: int
    body: str
    start_line: int | None = None
    suggestion: bool = False

    def to_api(self) -> dict[str, Any]:
        item: dict[str, Any] = {"path": self.path, "body": self.body, "line": self.line,
                                "side": "RIGHT"}
        if self.start_line is not None and self.start_line < self.line:
            item["start_line"] = self.start_line
            item["start_side"] = "RIGHT"
        return item


def finding_key(finding: dict[str, Any], path: str) -> str:
    """A stable id of a finding (rule, file, line, message): 20 hex digits of SHA-256."""
    text = "\0".join([str(finding.get("code")), path, str(finding.get("line")),
                      str(finding.get("message"))])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@functools.lru_cache(maxsize=16)
def _folder_real(folder: str) -> str:
    """:func:`os.path.realpath` of the working or workspace folder, once per step: a report
    of a million findings took a minute in :func:`plan_comments` resolving the same two
    folders for each (``tests/test_security_review_tools.py``)."""
    return os.path.realpath(folder)


def repo_path(path: str, root: str) -> str | None:
    """A report path (relative to the working directory) as a path in the repository (``/``
    separators), or ``None`` when it lies outside ``root``."""
    full = os.path.normpath(os.path.join(_folder_real(os.getcwd()), path))
    rel = os.path.relpath(full, _folder_real(root))  # the folders' links resolved alike
    if rel == os.curdir or rel.startswith(os.pardir) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def _suggestion(finding: dict[str, Any]) -> tuple[int, int, str] | None:
    """``(first, last, new_lines)`` of a finding's SAFE autofix from its JSON ``edits``
    (one file, the finding's own), or ``None``; the file is read as ``--fix`` reads it
    (:func:`lintlora.autofix.read_source_text`: bounded, no link followed)."""
    fix = finding.get("autofix")
    if not isinstance(fix, dict) or fix.get("safety") != "safe":
        return None
    edits = fix.get("edits")
    if not isinstance(edits, list) or not edits or "cell" in finding:
        return None
    from lintlora.findings import TextEdit

    try:
        resolved = tuple(TextEdit(str(e["path"]), int(e["line"]), int(e["column"]),
                                  int(e["end_line"]), int(e["end_column"]), str(e["new_text"]))
                         for e in edits)
    except (KeyError, TypeError, ValueError):
        return None
    if {e.path for e in resolved} != {finding.get("path")}:
        return None
    from lintlora.report.fixes import region_of
    from lintlora.report.markdown import MAX_SUGGESTION_LINES

    region = region_of(resolved)
    # as the Markdown report: a fix over more lines (LL002's two far-apart dtype edits) is no
    # suggestion block; the comment names the fix in words
    if region is None or region[1] - region[0] + 1 > MAX_SUGGESTION_LINES:
        return None
    return region


def _comment_body(finding: dict[str, Any], key: str,
                  suggestion: tuple[int, int, str] | None) -> str | None:
    """The review comment's Markdown (every text of the report escaped:
    :func:`lintlora.report.escape.markdown_text`; the suggestion in a fence longer than any
    backtick run in it), ending with the finding's hidden marker; at most
    :data:`MAX_BODY_CHARS` (a longer text is cut), ``None`` when a suggestion does not fit."""
    from lintlora.report.escape import markdown_text
    from lintlora.report.markdown import markdown_fence

    severity = str(finding.get("severity", ""))
    lines = [f"**{markdown_text(str(finding.get('code', '')))} "
             f"{markdown_text(str(finding.get('name', '')))}** ({markdown_text(severity)}): "
             f"{markdown_text(str(finding.get('message', '')))}"]
    line = finding.get("line")
    if suggestion is not None and isinstance(line, int) and \
            not suggestion[0] <= line <= suggestion[1]:
        lines += ["", f"_(The finding is at line {line}; the fix changes the lines of this "
                      f"comment.)_"]
    if finding.get("fix"):
        lines += ["", "Fix: " + markdown_text(str(finding["fix"]))]
    fix = finding.get("autofix")
    if isinstance(fix, dict) and fix.get("title"):
        flag = "--fix" if fix.get("safety") == "safe" else "--fix --unsafe-fixes"
        lines += ["", f"Autofix ({markdown_text(str(fix.get('safety')))}, `lintlora {flag}`): "
                      f"{markdown_text(str(fix['title']))}"]
    if suggestion is not None:
        # the block holds the new lines, each ended by the block's own line breaks; an empty
        # block deletes the lines the comment covers
        new = suggestion[2].replace("\r\n", "\n")
        fence = markdown_fence(new)
        content = new[:-1] if new.endswith("\n") else new
        lines += ["", f"{fence}suggestion", *([content] if new else []), fence]
    lines += ["", FINDING_MARKER.format(key=key)]
    body = "\n".join(lines)
    if len(body) > MAX_BODY_CHARS:
        if suggestion is not None:
            return None  # the caller comments without it (a cut fence would not apply)
        return _truncate(body, MAX_BODY_CHARS, FINDING_MARKER.format(key=key))
    return body


def plan_comments(findings: Iterable[dict[str, Any]], added: dict[str, set[int]], root: str,
                  *, posted: set[str] = frozenset(), limit: int = MAX_REVIEW_COMMENTS,
                  same_as_head: Callable[[str], bool | None] | None = None,
                  ) -> tuple[list[PlannedComment], list[dict[str, Any]]]:
    """The review comments for ``findings`` (JSON report findings) and the findings left to
    the report comment (not on an added line, a notebook cell, over ``limit``).

    A finding is commented on its first line when the pull request adds that line
    (``added``: repository path -> added right-side lines); with a SAFE autofix whose
    changed lines the pull request all adds, the comment covers those lines and holds the fix
    as a ``suggestion`` block (a suggestion replaces the lines its comment covers). A finding
    whose key is in ``posted`` is skipped (already commented by an earlier run).

    ``same_as_head(path)``: whether the linted file is the pull request's head version
    (``False``: it differs, e.g. a merge commit's checkout after the base changed the file, so
    its line numbers are not the diff's: no comment; ``None``: unknown: comments, but no
    suggestion, which would put text from another version of the file into the author's).
    """
    planned: list[PlannedComment] = []
    left: list[dict[str, Any]] = []
    for finding in findings:
        if not isinstance(finding, dict):
            continue
        path = repo_path(str(finding.get("path", "")), root)
        line = finding.get("line")
        lines = added.get(path or "", set())
        exact = same_as_head(path) if same_as_head is not None and path else True
        if path is None or not isinstance(line, int) or "cell" in finding or line not in lines \
                or exact is False:
            left.append(finding)
            continue
        key = finding_key(finding, path)
        if key in posted:
            continue
        if len(planned) >= limit:
            left.append(finding)
            continue
        found = _suggestion(finding) if exact else None
        body = None
        if found is not None and all(n in lines for n in range(found[0], found[1] + 1)):
            body = _comment_body(finding, key, found)
        if body is not None:
            planned.append(PlannedComment(key, path, found[1], body, start_line=found[0],
                                          suggestion=True))
        else:
            planned.append(PlannedComment(key, path, line, _comment_body(finding, key, None)
                                          or ""))
    return planned, left


# ---- the report step --------------------------------------------------------------------------

def _truncate(text: str, limit: int, tail: str = "") -> str:
    """``text`` cut to at most ``limit`` characters, with a note (and ``tail``) at the end."""
    if len(text) <= limit:
        return text
    note = "\n\n_(lintlora: the report is cut here, it exceeds GitHub's limit; the whole report " \
           "is in the job summary and the workflow log.)_\n" + (("\n" + tail) if tail else "")
    return text[:max(0, limit - len(note))] + note


def _read_json_file(path: str, limit: int) -> Any:
    from lintlora.safeio import read_bounded

    return json.loads(read_bounded(path, limit).decode("utf-8"))


def _read_text_file(path: str, limit: int) -> str:
    from lintlora.safeio import read_bounded

    return read_bounded(path, limit).decode("utf-8", "replace")


@dataclass
class PullRequest:
    owner_repo: str
    number: int
    head_sha: str
    from_fork: bool


def pull_request_of(event: Any, repository: str) -> PullRequest | None:
    """The pull request of a ``pull_request``/``pull_request_target`` event payload, or
    ``None`` (another event, or a payload without the fields)."""
    if not isinstance(event, dict) or not isinstance(event.get("pull_request"), dict):
        return None
    pr = event["pull_request"]
    number = pr.get("number", event.get("number"))
    head = pr.get("head") if isinstance(pr.get("head"), dict) else {}
    base = pr.get("base") if isinstance(pr.get("base"), dict) else {}
    head_sha = head.get("sha")
    if type(number) is not int or not 0 < number < 2**53 or not isinstance(head_sha, str) \
            or not _SHA.fullmatch(head_sha):
        return None  # a bool, a string ("7/../../x"), a negative or absurd number: no PR
    base_repo = (base.get("repo") or {}).get("full_name") if isinstance(base.get("repo"), dict) \
        else None
    head_repo = (head.get("repo") or {}).get("full_name") if isinstance(head.get("repo"), dict) \
        else None
    owner_repo = base_repo or repository
    if not isinstance(owner_repo, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+",
                                                           owner_repo) \
            or any(part.strip(".") == "" for part in owner_repo.split("/")):
        return None  # ``../..`` would make ``/repos/../../...`` another endpoint
    return PullRequest(owner_repo, number, head_sha,
                       from_fork=not isinstance(head_repo, str) or head_repo != owner_repo)


def _write_summary(markdown: str, note: str, env: dict[str, str]) -> None:
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    text = markdown + (f"\n{note}\n" if note else "")
    data = text.encode("utf-8", "surrogateescape")
    if len(data) > MAX_SUMMARY_BYTES - 1024:  # the limit is in bytes
        text = data[:MAX_SUMMARY_BYTES - 2048].decode("utf-8", "ignore") + \
            "\n\n_(lintlora: the report is cut here: the job summary takes 1 MiB a step.)_\n"
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        warning(f"cannot write the job summary: {exc.strerror or exc}")


_TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""``author_association`` values of people with a say in the repository
(https://docs.github.com/en/graphql/reference/enums#commentauthorassociation)."""


def _trusted(comment: Any) -> bool:
    """Whether a comment's markers count: written by a bot (``github-actions[bot]``, the job's
    token) or by someone the repository trusts (a personal token's owner). Anyone can comment
    on a public pull request, so a stranger's copy of a marker neither becomes the report
    comment nor hides a finding."""
    if not isinstance(comment, dict) or not isinstance(comment.get("body"), str):
        return False
    user = comment.get("user") if isinstance(comment.get("user"), dict) else {}
    return user.get("type") == "Bot" or comment.get("author_association") in _TRUSTED_ASSOCIATIONS


def _existing_report_comment(comments: list[Any]) -> int | None:
    """The id of the report comment (a trusted comment whose body starts with
    :data:`REPORT_MARKER`), a bot's first, then the oldest."""
    ours = [c for c in comments if _trusted(c) and isinstance(c.get("id"), int)
            and c["body"].startswith(REPORT_MARKER)]
    ours.sort(key=lambda c: (((c.get("user") or {}).get("type") != "Bot"), c["id"]))
    return ours[0]["id"] if ours else None


def _posted_keys(comments: list[Any]) -> set[str]:
    """The finding keys in the trusted review comments."""
    keys: set[str] = set()
    for comment in comments:
        if _trusted(comment):
            keys.update(_FINDING_KEY.findall(comment["body"]))
    return keys


def review(client: GitHubClient, pr: PullRequest, report: dict[str, Any], markdown: str,
           root: str) -> str:
    """Post or update the report comment, then one review; returns a note for the job summary
    ("" when all went well). API errors become warnings (:class:`ApiError` is caught here)."""
    base = f"/repos/{pr.owner_repo}"
    findings = [f for f in report.get("findings", []) if isinstance(f, dict)] \
        if isinstance(report.get("findings"), list) else []
    # the report comment
    body = _truncate(REPORT_MARKER + "\n" + markdown, MAX_BODY_CHARS)
    try:
        comment_id = _existing_report_comment(
            client.paginate(f"{base}/issues/{pr.number}/comments"))
        if comment_id is not None:  # updated even when clean: it shows the findings are gone
            client.request("PATCH", f"{base}/issues/comments/{comment_id}", {"body": body})
        elif findings or report.get("errors"):  # a clean first run posts nothing
            client.request("POST", f"{base}/issues/{pr.number}/comments", {"body": body})
    except ApiError as exc:
        warning(f"the pull-request comment was not posted: {exc}" + _permission_hint(exc))
        if exc.forbidden:
            return "_lintlora could not comment on the pull request (the token may not write); " \
                   "the report is above and the findings are annotations._"
    # the review
    try:
        added: dict[str, set[int]] = {}
        for item in client.paginate(f"{base}/pulls/{pr.number}/files"):
            if isinstance(item, dict) and isinstance(item.get("filename"), str) \
                    and isinstance(item.get("patch"), str):
                added[item["filename"]] = changed_lines(item["patch"])
        posted = _posted_keys(client.paginate(f"{base}/pulls/{pr.number}/comments"))
        planned, left = plan_comments(findings, added, root, posted=posted,
                                      same_as_head=_head_check(root, pr.head_sha))
        if planned:
            client.request("POST", f"{base}/pulls/{pr.number}/reviews", {
                "commit_id": pr.head_sha, "event": "COMMENT",
                "body": f"lintlora: {len(planned)} finding(s) on the lines this pull request "
                        f"changes.",
                "comments": [c.to_api() for c in planned]})
    except ApiError as exc:
        warning(f"the review comments were not posted: {exc}" + _permission_hint(exc))
        return "_lintlora could not post review comments; the report is above._"
    if left:
        return (f"_{len(left)} finding(s) are not on lines this pull request adds (or are in a "
                f"notebook); they are in the report above, not review comments._")
    return ""


def _head_check(root: str, head_sha: str) -> Callable[[str], bool | None]:
    """``path -> bool | None``: whether the checkout's ``HEAD`` holds the same blob at
    ``path`` as the pull request's head commit (``git rev-parse HEAD:<path>`` and
    ``<head>:<path>`` through :func:`lintlora.gitrun.run_git`); ``None`` when git cannot say
    (the head commit not fetched: a shallow merge-commit checkout). Memoized per path."""
    from lintlora.gitrun import GitDiffError, run_git

    memo: dict[str, bool | None] = {}

    def blob(rev: str, path: str) -> str | None:
        try:
            return run_git(["rev-parse", "--verify", "--quiet", f"{rev}:{path}"], root).strip()
        except GitDiffError:
            return None

    def check(path: str) -> bool | None:
        if path not in memo:
            here, there = blob("HEAD", path), blob(head_sha, path)
            memo[path] = None if here is None or there is None else here == there
        return memo[path]

    return check


def _permission_hint(exc: ApiError) -> str:
    if exc.forbidden:
        return (" (the token may not write here: a forked pull request's token is read-only; "
                "otherwise give the job `permissions: pull-requests: write`)")
    return ""


def report_main(env: dict[str, str] | None = None, argv: Sequence[str] = ()) -> int:
    """The ``report`` step; always 0."""
    env = dict(os.environ if env is None else env)
    try:
        return _report(env, list(argv))
    except Exception as exc:  # noqa: BLE001 - API or report trouble never fails the job
        warning(f"lintlora report step: {type(exc).__name__}: {exc}")
        return 0


def _arg(argv: list[str], name: str, default: str = "") -> str:
    if name in argv and argv.index(name) + 1 < len(argv):
        return argv[argv.index(name) + 1]
    return default


def _report(env: dict[str, str], argv: list[str]) -> int:
    json_path = _arg(argv, "--json", env.get("LINTLORA_JSON", ""))
    md_path = _arg(argv, "--markdown", env.get("LINTLORA_MARKDOWN", ""))
    try:
        markdown = _read_text_file(md_path, MAX_REPORT_BYTES) if md_path else ""
    except OSError as exc:
        warning(f"cannot read the Markdown report: {exc.strerror or exc}")
        markdown = ""
    try:
        report = _read_json_file(json_path, MAX_REPORT_BYTES) if json_path else {}
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        warning(f"cannot read the JSON report: {getattr(exc, 'strerror', None) or exc}")
        report = {}
    comment = env.get("INPUT_COMMENT", "true").strip().lower() == "true"
    note = ""
    if comment:
        note = _comment(env, report, markdown)
    _write_summary(markdown, note, env)
    return 0


def _comment(env: dict[str, str], report: dict[str, Any], markdown: str) -> str:
    event: Any = None
    if env.get("GITHUB_EVENT_PATH"):
        try:
            event = _read_json_file(env["GITHUB_EVENT_PATH"], MAX_EVENT_BYTES)
        except (OSError, ValueError) as exc:
            warning(f"cannot read the event payload: {getattr(exc, 'strerror', None) or exc}")
    pr = pull_request_of(event, env.get("GITHUB_REPOSITORY", ""))
    if pr is None:
        return ""  # a push: annotations and the summary only
    if pr.from_fork:
        notice("a pull request from a fork: its token is read-only, so no pull-request comment "
               "or review; the findings are annotations and the report is in the job summary")
        return "_A pull request from a fork: no pull-request comment (read-only token)._"
    token = env.get("GITHUB_TOKEN") or env.get("INPUT_GITHUB_TOKEN") or ""
    if not token:
        warning("no token (input github-token): no pull-request comment")
        return ""
    try:
        client = GitHubClient(env.get("GITHUB_API_URL") or "https://api.github.com", token)
    except ApiError as exc:
        warning(str(exc))
        return ""
    root = env.get("GITHUB_WORKSPACE") or os.getcwd()
    return review(client, pr, report, markdown, os.path.realpath(root))


# ---- the lint step ----------------------------------------------------------------------------

def _split(text: str, what: str) -> list[str]:
    import shlex

    try:
        return shlex.split(text)
    except ValueError as exc:
        raise _UsageError(f"input {what}: {exc}") from None


class _UsageError(Exception):
    pass


def lint_argv(env: dict[str, str], base: str | None) -> tuple[list[str], list[str]]:
    """``(options, paths)`` of the ``lintlora check`` runs from the action's inputs: ``gpu``,
    ``model``, ``fail-on`` as their options, ``args`` split like a POSIX shell would
    (:func:`shlex.split`, no expansion), ``paths`` likewise (default ``.``).

    Raises:
        _UsageError: an input that cannot be split, or ``args`` naming an option the action
            sets itself (:data:`_REFUSED_ARGS`).
    """
    options: list[str] = []
    for name, flag in (("INPUT_GPU", "--gpu"), ("INPUT_MODEL", "--model"),
                       ("INPUT_FAIL_ON", "--fail-on")):
        value = env.get(name, "").strip()
        if value:
            options += [flag, value]
    extra = _split(env.get("INPUT_ARGS", ""), "args")
    for item in extra:
        name = item.split("=", 1)[0]
        if name in _REFUSED_ARGS or (name.startswith("-o") and not name.startswith("--")):
            raise _UsageError(f"input args: {name} is set by the action (or would change files); "
                              f"leave it out")
        if item == "--":
            raise _UsageError("input args: `--` ends the options; give files in input paths")
    options += extra
    if base:
        options += ["--diff-only", base]
    paths = _split(env.get("INPUT_PATHS", "."), "paths") or ["."]
    return options, paths


def _base_sha(env: dict[str, str]) -> str | None:
    if env.get("GITHUB_EVENT_NAME") not in ("pull_request", "pull_request_target"):
        return None
    try:
        event = _read_json_file(env.get("GITHUB_EVENT_PATH", ""), MAX_EVENT_BYTES)
        sha = event["pull_request"]["base"]["sha"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warning(f"cannot read the pull request's base commit from the event ({exc}); "
                f"linting every file")
        return None
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        warning("the event's base commit is not a commit id; linting every file")
        return None
    return sha


def _ensure_commit(sha: str, cwd: str) -> bool:
    """Whether ``sha`` is in the checkout, fetching that one commit when it is not (a shallow
    ``actions/checkout``: ``git fetch --no-tags --depth=1 origin <sha>``)."""
    import subprocess

    from lintlora.gitrun import GitDiffError, run_git

    try:
        run_git(["rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"], cwd)
        return True
    except GitDiffError:
        pass
    try:
        done = subprocess.run(["git", "-c", "core.hooksPath=" + os.devnull, "fetch", "--no-tags",
                               "--no-recurse-submodules", "--depth=1", "origin", sha],
                              cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        warning(f"cannot fetch the base commit {sha}: {exc}")
        return False
    if done.returncode != 0:
        warning(f"cannot fetch the base commit {sha} (git fetch exited {done.returncode}); "
                f"use actions/checkout with fetch-depth: 0")
        return False
    return True


def _run_lintlora(args: list[str], stdout: Any = None) -> int:
    import subprocess

    try:
        return subprocess.run([sys.executable, "-I", "-m", "lintlora", "check", *args],
                              stdin=subprocess.DEVNULL, stdout=stdout, check=False,
                              timeout=3600).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        warning(f"cannot run lintlora: {exc}")
        return 2


def _set_outputs(env: dict[str, str], values: dict[str, str]) -> None:
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for name, value in values.items():
            if "\n" in value or "\r" in value:
                continue
            out.write(f"{name}={value}\n")


def lint_main(env: dict[str, str] | None = None, argv: Sequence[str] = ()) -> int:
    """The ``lint`` step: the lintlora runs (see the module docstring); 0 when the runs
    happened (their verdict, or 2 for an input the action refuses, goes to the ``status``
    output), 2 when the step could not run (no ``--out-dir`` nor ``RUNNER_TEMP``, a folder or
    file it cannot write: an ``::error::`` command says which)."""
    env = dict(os.environ if env is None else env)
    try:
        return _lint(env, list(argv))
    except OSError as exc:
        sys.stdout.write(f"::error title=lintlora::{_data(f'the lint step failed: {exc}')}\n")
        return 2


def _lint(env: dict[str, str], argv: list[str]) -> int:
    out_dir = _arg(argv, "--out-dir", env.get("RUNNER_TEMP", "") and
                   os.path.join(env["RUNNER_TEMP"], "lintlora"))
    if not out_dir:
        sys.stderr.write("lintlora lint step: --out-dir or RUNNER_TEMP is needed\n")
        return 2
    os.makedirs(out_dir, exist_ok=True)
    cwd = os.getcwd()
    base = _base_sha(env)
    if base is not None and not _ensure_commit(base, cwd):
        base = None
    try:
        options, paths = lint_argv(env, base)
    except _UsageError as exc:
        sys.stdout.write(f"::error title=lintlora::{_data(str(exc))}\n")
        _set_outputs(env, {"status": "2"})
        return 0
    json_path = os.path.join(out_dir, "report.json")
    md_path = os.path.join(out_dir, "report.md")
    tail = ["--", *paths]
    for stale in (json_path, md_path):  # a report of an earlier run is never taken for this one
        if os.path.lexists(stale):
            os.remove(stale)
    status = _run_lintlora(["--format", "json", "-o", json_path, *options, *tail])
    outputs = {"status": str(status)}
    if os.path.isfile(json_path):
        outputs["json"] = json_path
        # the same lint again, served by the results cache: one run per report format
        _run_lintlora(["--format", "markdown", "-o", md_path, *options, *tail])
        if os.path.isfile(md_path):
            outputs["markdown"] = md_path
        sarif = env.get("INPUT_SARIF", "").strip()
        if sarif:
            if _run_lintlora(["--format", "sarif", "-o", sarif, *options, *tail]) == 2:
                warning(f"the SARIF file {sarif} was not written (see the message above)")
            else:
                outputs["sarif"] = sarif
        _run_lintlora(["--format", "github", *options, *tail])
        try:
            report = _read_json_file(json_path, MAX_REPORT_BYTES)
            outputs["findings"] = str(len(report.get("findings", [])))
        except (OSError, ValueError, AttributeError):
            pass
    _set_outputs(env, outputs)
    return 0


def _data(text: str) -> str:
    from lintlora.report.escape import for_github_command_data

    return for_github_command_data(text)


# ---- entry ------------------------------------------------------------------------------------

_USAGE = """usage: python -m lintlora.github_review lint [--out-dir DIR]
       python -m lintlora.github_review report [--json FILE] [--markdown FILE]
(the GitHub Action's steps; settings from INPUT_* and GITHUB_* variables: see action.yml)
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["lint"]:
        return lint_main(argv=args[1:])
    if args[:1] == ["report"]:
        return report_main(argv=args[1:])
    sys.stderr.write(_USAGE)
    return 2


if __name__ == "__main__":
    sys.exit(main())
