"""The composite action's own steps run in order, as the runner would run them.

Each ``run:`` step of ``action.yml`` runs under ``bash --noprofile --norc -eo pipefail`` (the
runner's ``shell: bash``: https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#jobsjob_idstepsshell)
with the environment its ``env:`` gives, the expressions there evaluated from the inputs and the
earlier steps' ``$GITHUB_OUTPUT``; ``if:`` is evaluated too. The two steps that need the network
are stood in for: actions/setup-python (its ``python-path`` output is this interpreter) and the
install step (``bash -n`` checks its script; its ``python`` output is this interpreter, which has
lintlora installed). The API is tests/github_fake.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.github_fake import FakeGitHub
from tests.test_github_review import REPO, TOKEN, pr_repo  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parent.parent
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class _Context:
    def __init__(self, inputs: dict[str, str], action_path: str) -> None:
        self.inputs = inputs
        self.steps: dict[str, dict[str, str]] = {}
        self.action_path = action_path

    def value(self, expr: str) -> str:
        expr = expr.strip()
        if expr.startswith("inputs."):
            return self.inputs[expr[len("inputs."):]]
        match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if match:
            return self.steps.get(match.group(1), {}).get(match.group(2), "")
        if expr == "github.action_path":
            return self.action_path
        if expr == "github.token":
            return TOKEN
        raise AssertionError(f"the simulator does not know {expr!r}")

    def render(self, text: str) -> str:
        return _EXPR.sub(lambda m: self.value(m.group(1)), str(text))

    def condition(self, text: str | None) -> bool:
        if text is None:
            return True  # success() by default; the lint step always exits 0 here
        inner = _EXPR.fullmatch(text.strip())
        terms = (inner.group(1) if inner else text).split("&&")
        ok = True
        for term in terms:
            term = term.strip()
            if term == "always()":
                continue
            match = re.fullmatch(r"(\S+) != ''", term)
            assert match, f"the simulator does not know the condition {term!r}"
            ok = ok and self.value(match.group(1)) != ""
        return ok


def _run_action(repo: Path, inputs: dict[str, str], base_env: dict[str, str], tmp: Path):
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    declared = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    assert set(inputs) <= set(declared)
    ctx = _Context({}, str(ROOT))
    ctx.inputs = {name: ctx.render(value) for name, value in {**declared, **inputs}.items()}
    statuses = []
    for index, step in enumerate(action["runs"]["steps"]):
        if not ctx.condition(step.get("if")):
            statuses.append(None)
            continue
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@")
            ctx.steps[step["id"]] = {"python-path": sys.executable}
            statuses.append(0)
            continue
        script = tmp / f"step{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        if step.get("id") == "install":
            subprocess.run(["bash", "-n", str(script)], check=True)
            ctx.steps["install"] = {"python": sys.executable}
            statuses.append(0)
            continue
        output = tmp / f"output{index}"
        output.write_text("")
        env = {**base_env, "GITHUB_OUTPUT": str(output),
               **{k: ctx.render(v) for k, v in step.get("env", {}).items()}}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        statuses.append(done.returncode)
        (tmp / f"log{index}").write_text(done.stdout + done.stderr)
        if "id" in step:
            ctx.steps[step["id"]] = dict(line.split("=", 1)
                                         for line in output.read_text().splitlines())
    return statuses, ctx


def test_the_action_runs_its_steps_end_to_end(pr_repo, tmp_path):  # noqa: F811
    repo = pr_repo["repo"]
    summary = tmp_path / "summary.md"
    summary.touch()
    with FakeGitHub(REPO, 7, files=pr_repo["patches"]) as fake:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
               "XDG_CACHE_HOME": str(tmp_path / "cache"),
               "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(pr_repo["event"]),
               "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url,
               "GITHUB_WORKSPACE": str(repo), "GITHUB_STEP_SUMMARY": str(summary),
               "RUNNER_TEMP": str(tmp_path / "runner_temp")}
        hostile = '"; touch PWNED; echo "$(touch PWNED2)'
        statuses, ctx = _run_action(repo, {
            "gpu": "a100-40gb", "fail-on": "warning", "paths": "a.py b.py",
            "args": f"--select LL001 --exclude '{hostile}'",
            "sarif": str(tmp_path / "lintlora.sarif")}, env, tmp_path)
        assert statuses == [0, 0, 0, 0, 1]  # the verdict: a warning at fail-on warning
        assert ctx.steps["lint"]["status"] == "1" and ctx.steps["lint"]["findings"] == "2"
        assert len(fake.issue_comments) == 1 and len(fake.reviews) == 1
        assert all(r["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)
    assert not (repo / "PWNED").exists() and not (repo / "PWNED2").exists()
    assert json.loads((tmp_path / "lintlora.sarif").read_text())["version"] == "2.1.0"
    assert summary.read_text().startswith("### lintlora: 2 findings")
    logs = "".join(p.read_text() for p in tmp_path.glob("log*"))
    assert logs.count("::warning file=") == 2 and TOKEN not in logs


def test_comment_false_and_a_usage_error(pr_repo, tmp_path):  # noqa: F811
    summary = tmp_path / "summary.md"
    summary.touch()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "GITHUB_EVENT_NAME": "push",
           "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(tmp_path / "t")}
    statuses, _ = _run_action(pr_repo["repo"], {"paths": "a.py", "comment": "false",
                                                "fail-on": "error",
                                                "args": "--select LL001 --gpu a100-40gb"},
                              env, tmp_path)
    assert statuses == [0, 0, 0, 0, 0]  # LL001 is a warning, fail-on error
    assert summary.read_text().startswith("### lintlora: 1 finding")
    statuses, _ = _run_action(pr_repo["repo"], {"gpu": "no-such-gpu"}, env, tmp_path)
    assert statuses == [0, 0, 0, None, 2]  # no report: the report step is skipped
