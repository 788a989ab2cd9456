"""The GitHub Action's steps (lintlora/github_review.py) against a local fake of the REST API.

The lint step runs for real (lintlora in subprocesses) on a small git repository with a base
commit and a pull-request commit; the report step then talks to
:class:`tests.github_fake.FakeGitHub` (127.0.0.1, a free port), whose payloads are GitHub's
documented ones (fixtures/github/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from lintlora import github_review as gr
from tests.github_fake import FakeGitHub, payload

ROOT = Path(__file__).resolve().parent.parent
TRAINER = ROOT / "fixtures" / "fix" / "LL001" / "trainer.py"
TOKEN = "ghs_TESTTOKENabcdef0123456789SECRET"
REPO = "octocat/Hello-World"


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture(scope="module")
def pr_repo(tmp_path_factory):
    """A repository whose pull request changes line 12 of a.py (the LL001 finding's line; its
    fix would go on line 18, which the pull request leaves) and adds b.py (every line: the fix
    can be a suggestion). The lint step has run on it: ``(repo, outputs, stdout)``."""
    repo = tmp_path_factory.mktemp("pr")
    lines = TRAINER.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[11].startswith("args = TrainingArguments(")
    old = lines.copy()
    old[11] = "args = TrainingArguments(  # old line\n"
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("".join(old), encoding="utf-8")
    _git(repo, "add", "a.py")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("".join(lines), encoding="utf-8")
    shutil.copy(TRAINER, repo / "b.py")
    _git(repo, "add", "a.py", "b.py")
    _git(repo, "commit", "-q", "-m", "pr")
    head = _git(repo, "rev-parse", "HEAD").strip()
    event = payload("event-pull_request.json")
    event["pull_request"]["base"]["sha"] = base
    event["pull_request"]["head"]["sha"] = head
    event_path = repo.parent / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    out_dir = repo.parent / "out"
    github_output = repo.parent / "github_output"
    github_output.write_text("", encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event_path),
           "GITHUB_OUTPUT": str(github_output), "INPUT_GPU": "a100-40gb",
           "INPUT_PATHS": "a.py b.py", "INPUT_ARGS": "--select LL001", "INPUT_FAIL_ON": "warning",
           "INPUT_SARIF": str(repo.parent / "lintlora.sarif")}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo)
        mp.setenv("XDG_CACHE_HOME", str(repo.parent / "cache"))
        done = subprocess.run(
            [os.sys.executable, "-c", "import sys; from lintlora.github_review import lint_main; "
             "sys.exit(lint_main(argv=['--out-dir', sys.argv[1]]))", str(out_dir)],
            cwd=repo, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    outputs = dict(line.split("=", 1) for line in github_output.read_text().splitlines())
    patches = {}
    for name in ("a.py", "b.py"):
        diff = _git(repo, "diff", base, head, "--", name)
        patches[name] = diff[diff.index("@@"):]  # the files listing's patch: hunks only
    return {"repo": repo, "outputs": outputs, "stdout": done.stdout, "event": event_path,
            "patches": patches, "head": head, "base": base}


def _env(pr_repo, fake: FakeGitHub, tmp_path: Path, **extra) -> dict[str, str]:
    summary = tmp_path / "summary.md"
    summary.touch()
    return {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(pr_repo["event"]),
            "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url, "GITHUB_TOKEN": TOKEN,
            "GITHUB_WORKSPACE": str(pr_repo["repo"]), "GITHUB_STEP_SUMMARY": str(summary),
            "INPUT_COMMENT": "true", "LINTLORA_JSON": pr_repo["outputs"]["json"],
            "LINTLORA_MARKDOWN": pr_repo["outputs"]["markdown"], **extra}


@pytest.fixture
def in_repo(pr_repo, monkeypatch):
    monkeypatch.chdir(pr_repo["repo"])
    waits: list[float] = []
    monkeypatch.setattr(gr, "_sleep", waits.append)
    return waits


# ---- the lint step ------------------------------------------------------------------------------

def test_lint_step_writes_reports_annotations_and_the_verdict(pr_repo):
    out = pr_repo["outputs"]
    assert out["status"] == "1"  # LL001 is a warning, fail-on warning
    report = json.loads(Path(out["json"]).read_text())
    assert sorted((f["path"], f["line"]) for f in report["findings"]) == [("a.py", 12),
                                                                           ("b.py", 12)]
    assert out["findings"] == "2"
    assert Path(out["markdown"]).read_text().startswith("### lintlora: 2 findings")
    sarif = json.loads(Path(out["sarif"]).read_text())
    assert sarif["version"] == "2.1.0" and len(sarif["runs"][0]["results"]) == 2
    annotations = [line for line in pr_repo["stdout"].splitlines() if line.startswith("::warning")]
    assert len(annotations) == 2 and all("title=LL001" in a for a in annotations)


def test_lint_step_on_push_lints_every_line(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAINER.read_text())
    _git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    output = tmp_path / "out.txt"
    output.touch()
    env = {"GITHUB_EVENT_NAME": "push", "GITHUB_OUTPUT": str(output), "INPUT_PATHS": "train.py",
           "INPUT_ARGS": "--select LL001 --gpu a100-40gb"}
    assert gr.lint_main(env, ["--out-dir", str(tmp_path / "o")]) == 0
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert values["status"] == "1" and values["findings"] == "1"


def test_inputs_are_split_by_shlex_never_by_a_shell():
    options, paths = gr.lint_argv({"INPUT_ARGS": "--select 'LL001,LL008' --model \"$(touch x)\"",
                                   "INPUT_PATHS": "'my dir/train.py' ; rm -rf /",
                                   "INPUT_GPU": "a100; echo hi"}, "a" * 40)
    assert options == ["--gpu", "a100; echo hi", "--select", "LL001,LL008", "--model",
                       "$(touch x)", "--diff-only", "a" * 40]
    assert paths == ["my dir/train.py", ";", "rm", "-rf", "/"]  # file names, after `--`


@pytest.mark.parametrize("args", ["--format text", "-o x", "--output=x", "--fix", "--diff",
                                  "--diff-only main", "'unclosed", "-- x.py"])
def test_inputs_the_action_sets_itself_are_refused(args):
    with pytest.raises(gr._UsageError):
        gr.lint_argv({"INPUT_ARGS": args}, None)


def test_a_refused_input_is_an_error_annotation_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "out.txt"
    output.touch()
    gr.lint_main({"GITHUB_EVENT_NAME": "push", "GITHUB_OUTPUT": str(output),
                  "INPUT_ARGS": "--fix"}, ["--out-dir", str(tmp_path / "o")])
    assert output.read_text() == "status=2\n"
    assert capsys.readouterr().out.startswith("::error title=lintlora::input args: --fix")


# ---- the diff --------------------------------------------------------------------------------

def test_changed_lines_are_the_added_right_side_lines():
    patch = ("@@ -1,4 +1,5 @@ def f():\n a\n-b\n+B\n+C\n c\n d\n"
             "@@ -20,3 +21,2 @@\n x\n-y\n z\n\\ No newline at end of file")
    assert gr.changed_lines(patch) == {2, 3}
    assert gr.changed_lines("") == set()
    assert gr.changed_lines("+not in a hunk\n") == set()


# ---- the report step: comment, review, suggestions -----------------------------------------------

def test_comment_created_once_then_updated_and_review_comments_not_repeated(
        pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        env = _env(pr_repo, fake, tmp_path)
        assert gr.report_main(env) == 0
        assert len(fake.issue_comments) == 1
        first = fake.issue_comments[0]
        assert first["body"].startswith(gr.REPORT_MARKER + "\n### lintlora: 2 findings")
        assert len(fake.reviews) == 1
        review = fake.reviews[0]
        assert review["event"] == "COMMENT" and review["commit_id"] == pr_repo["head"]
        comments = {c["path"]: c for c in review["comments"]}
        # a.py: the finding's line 12 is changed, the fix's line 18 is not: no suggestion
        assert comments["a.py"]["line"] == 12 and comments["a.py"]["side"] == "RIGHT"
        assert "suggestion" not in comments["a.py"]["body"]
        assert "position" not in comments["a.py"]
        # b.py: every line added: the fix as a suggestion on the line it replaces
        assert comments["b.py"]["line"] == 18 and "start_line" not in comments["b.py"]
        assert "```suggestion\n    gradient_checkpointing=True,\n" in comments["b.py"]["body"]
        assert comments["b.py"]["body"].count("```") == 2
        assert "The finding is at line 12" in comments["b.py"]["body"]

        # the next push: the same comment is updated, no review comment posted again
        fake.requests.clear()
        assert gr.report_main(env) == 0
        assert len(fake.issue_comments) == 1 and fake.issue_comments[0]["id"] == first["id"]
        assert [(r["method"], r["path"]) for r in fake.writes()] == [
            ("PATCH", f"/repos/{REPO}/issues/comments/{first['id']}")]
        assert len(fake.reviews) == 1
    out = capsys.readouterr().out
    assert "::warning" not in out
    assert TOKEN not in out
    assert (tmp_path / "summary.md").read_text().startswith("### lintlora: 2 findings")


def test_pagination_is_followed_to_find_the_comment_and_the_files(pr_repo, in_repo, tmp_path):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"], page_size=1) as fake:
        for i in range(3):  # other people's comments first: the report is on page 4
            item = payload("issue-comment.json")
            item.update(id=i + 1, body=f"comment {i}")
            fake.issue_comments.append(item)
        env = _env(pr_repo, fake, tmp_path)
        gr.report_main(env)
        ours = fake.issue_comments[-1]
        assert ours["body"].startswith(gr.REPORT_MARKER)
        fake.requests.clear()
        gr.report_main(env)
        listing = [r["query"] for r in fake.requests
                   if r["path"] == f"/repos/{REPO}/issues/7/comments" and r["method"] == "GET"]
        assert len(listing) == 4 and "page=4" in listing[-1]
        files = [r for r in fake.requests if r["path"].endswith("/pulls/7/files")]
        assert len(files) == 2  # a.py on page 1, b.py on page 2
        assert [(r["method"], r["path"]) for r in fake.writes()] == [
            ("PATCH", f"/repos/{REPO}/issues/comments/{ours['id']}")]
        assert len(fake.issue_comments) == 4


def test_suggestions_only_on_changed_lines(pr_repo, in_repo):
    report = json.loads(Path(pr_repo["outputs"]["json"]).read_text())
    root = str(pr_repo["repo"])
    only_12 = {"a.py": {12}, "b.py": {12}}
    planned, left = gr.plan_comments(report["findings"], only_12, root)
    assert [(c.path, c.line, c.suggestion) for c in planned] == [("a.py", 12, False),
                                                                 ("b.py", 12, False)]
    planned, left = gr.plan_comments(report["findings"], {"b.py": {18}}, root)
    assert planned == [] and len(left) == 2  # line 12 not in the diff: the summary only


def test_a_multi_line_suggestion_covers_its_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("x = 1\ny = 2\nz = 3\n")
    finding = {"code": "LL999", "name": "n", "severity": "warning", "path": "t.py", "line": 1,
               "message": "m", "fix": None,
               "autofix": {"title": "t", "safety": "safe", "edits": [
                   {"path": "t.py", "line": 1, "column": 5, "end_line": 2, "end_column": 6,
                    "new_text": "10\ny = 20"}]}}
    planned, _ = gr.plan_comments([finding], {"t.py": {1, 2}}, str(tmp_path))
    api = planned[0].to_api()
    assert (api["start_line"], api["start_side"], api["line"], api["side"]) == (1, "RIGHT", 2,
                                                                                "RIGHT")
    assert "```suggestion\nx = 10\ny = 20\n```" in api["body"]
    unsafe = {**finding, "autofix": {**finding["autofix"], "safety": "unsafe"}}
    planned, _ = gr.plan_comments([unsafe], {"t.py": {1, 2}}, str(tmp_path))
    assert not planned[0].suggestion and "--unsafe-fixes" in planned[0].body


# ---- permissions, forks, limits, errors ---------------------------------------------------------

def test_read_only_token_403_is_a_warning_and_the_summary_holds_the_report(
        pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.forbid_writes = True
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
        assert fake.issue_comments == [] and fake.reviews == []
        assert len(fake.writes()) == 1  # no review tried after the refused comment
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1 and "HTTP 403: Resource not accessible by integration" in warnings[0]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### lintlora: 2 findings") and "could not comment" in summary


def test_fork_pull_request_makes_no_api_call(pr_repo, in_repo, tmp_path, capsys):
    event = json.loads(pr_repo["event"].read_text())
    event["pull_request"]["head"]["repo"] = {"full_name": "someone/Hello-World", "fork": True}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        assert gr.report_main(_env(pr_repo, fake, tmp_path, GITHUB_EVENT_PATH=str(path))) == 0
        assert fake.requests == []
    assert "::notice title=lintlora::a pull request from a fork" in capsys.readouterr().out
    assert (tmp_path / "summary.md").read_text().startswith("### lintlora: 2 findings")


def test_rate_limit_waits_for_the_reset_then_goes_on(pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.rate_limited = 1
        fake.rate_limit_headers = {"x-ratelimit-remaining": "0",
                                   "x-ratelimit-reset": str(int(time.time()) + 20)}
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
        assert len(fake.issue_comments) == 1 and len(fake.reviews) == 1
    assert len(in_repo) == 1 and 10 <= in_repo[0] <= 21
    assert "::warning" not in capsys.readouterr().out


def test_retry_after_is_honoured(pr_repo, in_repo, tmp_path):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.rate_limited = 2
        fake.rate_limit_headers = {"retry-after": "3"}
        gr.report_main(_env(pr_repo, fake, tmp_path))
        assert len(fake.issue_comments) == 1
    assert in_repo == [3.0, 3.0]


def test_a_long_rate_limit_gives_up_with_a_warning(pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.rate_limited = 100
        fake.rate_limit_headers = {"x-ratelimit-remaining": "0",
                                   "x-ratelimit-reset": str(int(time.time()) + 3600)}
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
        assert fake.issue_comments == [] and fake.reviews == []
    assert in_repo == []  # never waited an hour
    out = capsys.readouterr().out
    assert out.count("::warning") == 2 and "rate limited (HTTP 403); gave up" in out


def test_server_errors_are_retried_then_warned(pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.server_errors = 1
        gr.report_main(_env(pr_repo, fake, tmp_path))
        assert len(fake.issue_comments) == 1
        fake.server_errors = 100
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
    out = capsys.readouterr().out
    assert "HTTP 502" in out and "after 3 tries" in out


def test_a_post_is_never_repeated(pr_repo, in_repo, tmp_path, capsys):
    """A POST answered 5xx may still have been carried out: posting again could duplicate."""
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.post_errors = 1
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
        posts = [r["path"] for r in fake.requests if r["method"] == "POST"]
        assert posts == [f"/repos/{REPO}/issues/7/comments", f"/repos/{REPO}/pulls/7/reviews"]
        assert fake.issue_comments == [] and len(fake.reviews) == 1
    assert "HTTP 502" in capsys.readouterr().out


def test_no_answer_is_a_warning(pr_repo, in_repo, tmp_path, capsys):
    env = _env(pr_repo, FakeGitHub(), tmp_path, GITHUB_API_URL="http://127.0.0.1:9")
    assert gr.report_main(env) == 0  # the discard port: connection refused
    assert "no answer" in capsys.readouterr().out


def test_malformed_and_oversized_responses_are_warnings(pr_repo, in_repo, tmp_path, capsys,
                                                        monkeypatch):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        original = fake.answer
        fake.answer = lambda *a: (200, {}, {"not": "a list"}) if a[0] == "GET" else original(*a)
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
        monkeypatch.setattr(gr, "MAX_RESPONSE_BYTES", 10)
        fake.answer = original
        assert gr.report_main(_env(pr_repo, fake, tmp_path)) == 0
    out = capsys.readouterr().out
    assert "the response is not a list" in out and "the response is larger than" in out


def test_a_pagination_link_to_another_host_is_not_followed(pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.extra_link = '<http://127.0.0.2:1/steal?page=2>; rel="next"'
        gr.report_main(_env(pr_repo, fake, tmp_path))
        assert all(r["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)
    assert "points away from the API host" in capsys.readouterr().out


def test_the_token_is_never_printed(pr_repo, in_repo, tmp_path, capsys):
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        fake.forbid_writes = True
        original = fake.answer

        def echo_token(method, path, body, headers):  # a server that quotes the header back
            status, h, data = original(method, path, body, headers)
            if status >= 400:
                data = {"message": f"bad credentials {headers.get('Authorization')}"[:40]}
            return status, h, data
        fake.answer = echo_token
        gr.report_main(_env(pr_repo, fake, tmp_path))
    captured = capsys.readouterr()
    summary = (tmp_path / "summary.md").read_text()
    # the server's own message is quoted (bounded); lintlora adds nothing of the token
    assert TOKEN not in captured.out.replace("bad credentials Bearer ghs_TESTTOKENabc", "")
    assert TOKEN not in captured.err and TOKEN not in summary


def test_hostile_report_content_is_escaped(tmp_path, monkeypatch, capsys):
    from markdown_it import MarkdownIt

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("a = 1\n")
    hostile = ("```\n</details><img src=x onerror=alert(1)> @everyone #1 [x](javascript:1)\n"
               "::error file=t.py::pwned\r\n<!-- lintlora-finding:0123456789abcdef0123 -->")
    finding = {"code": "LL001", "name": "<b>n</b>", "severity": "warning", "path": "t.py",
               "line": 1, "message": hostile, "fix": hostile,
               "autofix": {"title": hostile, "safety": "safe", "edits": [
                   {"path": "t.py", "line": 1, "column": 5, "end_line": 1, "end_column": 6,
                    "new_text": "'````'"}]}}
    planned, _ = gr.plan_comments([finding], {"t.py": {1}}, str(tmp_path))
    body = planned[0].body
    html = MarkdownIt("commonmark").render(body)
    assert "<img" not in html and "<b>" not in html and "</details>" not in html
    assert 'href="javascript' not in html
    assert "@everyone" not in body and "#1" not in body.replace("&#35;1", "")  # no mention/link
    # the forged marker is escaped: only the comment's own is a marker
    assert gr._FINDING_KEY.findall(body) == [planned[0].key]
    assert "`````suggestion\na = '````'\n`````" in body  # a fence longer than the content's
    # a warning quoting hostile text stays one workflow command
    gr.warning(hostile)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("::warning title=lintlora::")


def test_comment_bodies_are_cut_at_githubs_limit(pr_repo, in_repo, tmp_path):
    huge = tmp_path / "huge.md"
    huge.write_text("x" * 200_000)
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        gr.report_main(_env(pr_repo, fake, tmp_path, LINTLORA_MARKDOWN=str(huge)))
        body = fake.issue_comments[0]["body"]
    assert len(body) <= gr.MAX_BODY_CHARS and "the report is cut here" in body
    assert body.startswith(gr.REPORT_MARKER)


def test_push_event_only_writes_the_summary(pr_repo, in_repo, tmp_path):
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "after": "a" * 40}))
    with FakeGitHub(REPO, 7) as fake:
        gr.report_main(_env(pr_repo, fake, tmp_path, GITHUB_EVENT_NAME="push",
                            GITHUB_EVENT_PATH=str(event)))
        assert fake.requests == []
    assert (tmp_path / "summary.md").read_text().startswith("### lintlora")


def test_malformed_event_and_report_are_warnings(tmp_path, capsys):
    (tmp_path / "event.json").write_text("{not json")
    (tmp_path / "r.json").write_text("[1, 2]")
    assert gr.report_main({"GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
                           "LINTLORA_JSON": str(tmp_path / "r.json"),
                           "LINTLORA_MARKDOWN": str(tmp_path / "missing.md")}) == 0
    out = capsys.readouterr().out
    assert out.count("::warning") == 3


def test_the_module_is_not_loaded_by_a_lint():
    done = subprocess.run([os.sys.executable, "-c",
                           "import sys; from lintlora.cli import main; import lintlora.cli_app; "
                           "print('lintlora.github_review' in sys.modules, "
                           "'urllib.request' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_a_clean_first_run_posts_nothing_and_a_clean_rerun_updates(pr_repo, in_repo, tmp_path):
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"version": "0.1.0", "files": ["a.py"], "findings": [],
                                 "errors": [], "notices": []}))
    md = tmp_path / "clean.md"
    md.write_text("### lintlora: no problems found in 1 checked file ✅\n")
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        env = _env(pr_repo, fake, tmp_path, LINTLORA_JSON=str(clean), LINTLORA_MARKDOWN=str(md))
        gr.report_main(env)
        assert fake.writes() == []
        gr.report_main(_env(pr_repo, fake, tmp_path))  # findings: the comment is created
        gr.report_main(env)                            # fixed: the same comment says so
        assert len(fake.issue_comments) == 1
        assert "no problems found" in fake.issue_comments[0]["body"]


def test_a_shallow_checkout_gets_the_base_commit_fetched(pr_repo, tmp_path, monkeypatch):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{pr_repo['repo']}", str(clone)],
                   check=True, capture_output=True)
    from lintlora.gitrun import GitDiffError, run_git

    with pytest.raises(GitDiffError):  # actions/checkout's default depth: no base commit
        run_git(["rev-parse", "--verify", "--quiet", f"{pr_repo['base']}^{{commit}}"], str(clone))
    assert gr._ensure_commit(pr_repo["base"], str(clone))
    run_git(["rev-parse", "--verify", "--quiet", f"{pr_repo['base']}^{{commit}}"], str(clone))
    # and --diff-only against it finds the same changed lines as with the whole history
    monkeypatch.chdir(clone)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    output = tmp_path / "out.txt"
    output.touch()
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(pr_repo["event"]),
           "GITHUB_OUTPUT": str(output), "INPUT_PATHS": "a.py b.py",
           "INPUT_ARGS": "--select LL001 --gpu a100-40gb"}
    assert gr.lint_main(env, ["--out-dir", str(tmp_path / "o")]) == 0
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    report = json.loads(Path(values["json"]).read_text())
    assert sorted((f["path"], f["line"]) for f in report["findings"]) == [("a.py", 12),
                                                                           ("b.py", 12)]


def test_a_base_commit_that_cannot_be_fetched_lints_every_line_with_a_warning(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text(TRAINER.read_text())
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "train.py")
    _git(tmp_path, "commit", "-q", "-m", "x")
    event = payload("event-pull_request.json")
    event["pull_request"]["base"]["sha"] = "0" * 40
    (tmp_path / "event.json").write_text(json.dumps(event))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    output = tmp_path / "out.txt"
    output.touch()
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
           "GITHUB_OUTPUT": str(output), "INPUT_PATHS": "train.py",
           "INPUT_ARGS": "--select LL001 --gpu a100-40gb"}
    assert gr.lint_main(env, ["--out-dir", str(tmp_path / "o")]) == 0
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert values["findings"] == "1"
    assert "::warning title=lintlora::cannot fetch the base commit" in capsys.readouterr().out


def test_a_strangers_copy_of_the_markers_is_ignored(pr_repo, in_repo, tmp_path):
    report = json.loads(Path(pr_repo["outputs"]["json"]).read_text())
    keys = [gr.finding_key(f, f["path"]) for f in report["findings"]]
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        stranger = {"type": "User", "login": "mallory"}
        item = payload("issue-comment.json")
        item.update(id=5, body=gr.REPORT_MARKER + "\nfake report", user=stranger,
                    author_association="NONE")
        fake.issue_comments.append(item)
        review_item = payload("review-comment.json")
        review_item.update(body="".join(gr.FINDING_MARKER.format(key=k) for k in keys),
                           user=stranger, author_association="FIRST_TIME_CONTRIBUTOR")
        fake.review_comments.append(review_item)
        gr.report_main(_env(pr_repo, fake, tmp_path))
        assert fake.issue_comments[0]["body"] == gr.REPORT_MARKER + "\nfake report"
        assert len(fake.issue_comments) == 2  # ours, new
        assert len(fake.reviews) == 1 and len(fake.reviews[0]["comments"]) == 2
        # a collaborator's (a personal token's) comment counts
        fake.issue_comments[0]["author_association"] = "COLLABORATOR"
        del fake.issue_comments[1]
        gr.report_main(_env(pr_repo, fake, tmp_path))
        assert len(fake.issue_comments) == 1 and "fake report" not in fake.issue_comments[0]["body"]


def test_review_comments_are_bounded(pr_repo, in_repo):
    report = json.loads(Path(pr_repo["outputs"]["json"]).read_text())
    planned, left = gr.plan_comments(report["findings"], {"a.py": {12}, "b.py": {12}},
                                     str(pr_repo["repo"]), limit=1)
    assert len(planned) == 1 and len(left) == 1


def test_a_merge_commit_checkout_comments_only_where_the_file_is_the_heads(pr_repo, tmp_path,
                                                                          monkeypatch):
    """actions/checkout's default for a pull request is the merge commit: where the base
    changed a file too, its lines are not the diff's lines, so no comment goes there."""
    clone = tmp_path / "merge"
    subprocess.run(["git", "clone", "-q", str(pr_repo["repo"]), str(clone)], check=True,
                   capture_output=True)
    _git(clone, "checkout", "-q", "-b", "moved", pr_repo["base"])
    text = (clone / "a.py").read_text()
    (clone / "a.py").write_text("# a line the base branch added\n" + text)
    _git(clone, "commit", "-q", "-am", "base moved")
    _git(clone, "merge", "-q", "--no-ff", "-m", "merge", pr_repo["head"])
    monkeypatch.chdir(clone)
    report = json.loads(Path(pr_repo["outputs"]["json"]).read_text())
    check = gr._head_check(str(clone), pr_repo["head"])
    assert check("a.py") is False and check("b.py") is True
    every = {"a.py": set(range(1, 40)), "b.py": set(range(1, 40))}
    planned, left = gr.plan_comments(report["findings"], every, str(clone), same_as_head=check)
    assert [(c.path, c.suggestion) for c in planned] == [("b.py", True)]
    assert [f["path"] for f in left] == ["a.py"]
    unknown = gr._head_check(str(clone), "f" * 40)  # the head commit not fetched
    planned, _ = gr.plan_comments(report["findings"], every, str(clone), same_as_head=unknown)
    assert [(c.path, c.suggestion) for c in planned] == [("a.py", False), ("b.py", False)]


def test_a_huge_finding_is_cut_and_loses_its_suggestion(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("a = 1\n")
    finding = {"code": "LL001", "name": "n", "severity": "warning", "path": "t.py", "line": 1,
               "message": "m " * 40_000, "fix": None,
               "autofix": {"title": "t", "safety": "safe", "edits": [
                   {"path": "t.py", "line": 1, "column": 5, "end_line": 1, "end_column": 6,
                    "new_text": "2"}]}}
    planned, _ = gr.plan_comments([finding], {"t.py": {1}}, str(tmp_path))
    assert not planned[0].suggestion and "suggestion" not in planned[0].body
    assert len(planned[0].body) <= gr.MAX_BODY_CHARS
    assert gr._FINDING_KEY.findall(planned[0].body) == [planned[0].key]
    finding["message"] = "short"
    planned, _ = gr.plan_comments([finding], {"t.py": {1}}, str(tmp_path))
    assert planned[0].suggestion and "```suggestion\na = 2\n```" in planned[0].body


def test_the_entry_point(tmp_path, capsys):
    assert gr.main([]) == 2 and "usage: python -m lintlora.github_review" in capsys.readouterr().err
    done = subprocess.run([os.sys.executable, "-m", "lintlora.github_review", "report"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "INPUT_COMMENT": "false"})
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_a_fix_over_more_lines_than_a_suggestion_holds_is_no_suggestion(tmp_path):
    """As the Markdown report (MAX_SUGGESTION_LINES): edits far apart in a file (LL002's two
    dtype edits in alpaca-lora finetune.py) give a comment without a suggestion block."""
    from lintlora import github_review
    from lintlora.report.markdown import MAX_SUGGESTION_LINES

    path = tmp_path / "train.py"
    path.write_text("".join(f"x{i} = {i}\n" for i in range(1, 61)))

    def finding(last: int) -> dict:
        edits = [{"path": str(path), "line": n, "column": 6, "end_line": n, "end_column": 7,
                  "new_text": "0"} for n in (1, last)]
        return {"path": str(path), "autofix": {"safety": "safe", "edits": edits}}

    near = github_review._suggestion(finding(MAX_SUGGESTION_LINES))
    assert near is not None and near[:2] == (1, MAX_SUGGESTION_LINES)
    assert github_review._suggestion(finding(MAX_SUGGESTION_LINES + 1)) is None
