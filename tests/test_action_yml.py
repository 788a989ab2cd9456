"""``action.yml`` against the published action metadata schema, its scripts against injection,
and the README's workflow against the workflow schema and the action's inputs.

Schemas: SchemaStore's ``github-action.json`` and ``github-workflow.json``, copied into
fixtures/schemas/ (its README names the commit).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "fixtures" / "schemas"


def _load_yaml(text: str) -> dict:
    data = yaml.safe_load(text)
    if True in data:  # YAML 1.1 reads the key `on` as true
        data["on"] = data.pop(True)
    return data


@pytest.fixture(scope="module")
def action() -> dict:
    return _load_yaml((ROOT / "action.yml").read_text(encoding="utf-8"))


def _validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_action_yml_matches_the_action_metadata_schema(action):
    errors = sorted(_validator("github-action.json").iter_errors(action), key=str)
    assert errors == [], [e.message for e in errors]


def test_the_schema_check_can_fail(action):
    broken = {**action, "runs": {**action["runs"], "using": "composite-ish"}}
    assert list(_validator("github-action.json").iter_errors(broken))
    assert list(_validator("github-action.json").iter_errors({**action, "inputz": {}}))


def test_the_inputs_the_brief_names(action):
    assert set(action["inputs"]) == {"gpu", "model", "fail-on", "args", "paths", "sarif",
                                     "comment", "github-token", "python-version"}
    assert action["inputs"]["paths"]["default"] == "."
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert action["runs"]["using"] == "composite"


def test_no_run_script_interpolates_an_expression(action):
    """Every value reaches a script through ``env:``; ``${{ ... }}`` in ``run:`` would paste it
    into the script (a script injection)."""
    runs = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert len(runs) == 4
    for script in runs:
        assert "${{" not in script, script


def test_only_declared_inputs_are_used(action):
    text = json.dumps([action["runs"], action["outputs"]])  # not the comments
    used = set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", text))
    assert used and used <= set(action["inputs"]), used - set(action["inputs"])
    assert "github.event" not in text


def test_lintlora_is_installed_from_the_action_not_the_checkout(action):
    install = next(s for s in action["runs"]["steps"] if s.get("id") == "install")
    assert install["env"]["LINTLORA_ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install --disable-pip-version-check --quiet "$LINTLORA_ACTION_PATH"' \
        in install["run"]
    assert "github.workspace" not in json.dumps(action)


def test_third_party_actions_are_pinned_to_a_commit(action):
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    setup = next(s for s in action["runs"]["steps"] if "uses" in s)
    assert setup["with"]["update-environment"] is False  # the job's Python is left alone


def test_the_verdict_is_the_lints_exit_status(action):
    steps = action["runs"]["steps"]
    verdict = steps[-1]
    assert verdict["if"] == "${{ always() }}"
    assert verdict["env"]["LINTLORA_STATUS"] == "${{ steps.lint.outputs.status }}"
    report = next(s for s in steps if "report" in s.get("run", ""))
    assert "always()" in report["if"]


def _readme_workflow() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Review bot in CI (GitHub Action)", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "no workflow in the README section"
    return _load_yaml(block.group(1))


def test_the_readme_workflow_is_a_valid_workflow():
    workflow = _readme_workflow()
    errors = sorted(_validator("github-workflow.json").iter_errors(workflow), key=str)
    assert errors == [], [e.message for e in errors]
    assert set(workflow["on"]) == {"pull_request", "push"}
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write",
                                       "security-events": "write"}


def test_the_readme_workflow_uses_only_declared_inputs(action):
    steps = _readme_workflow()["jobs"]["lintlora"]["steps"]
    ours = [s for s in steps if s.get("uses", "").startswith("lintlora/lintlora@")]
    assert len(ours) == 1
    assert set(ours[0]["with"]) <= set(action["inputs"])
    assert {"gpu", "model", "sarif"} <= set(ours[0]["with"])
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == ours[0]["with"]["sarif"]


def test_every_python_runs_isolated(action):
    """`python -m X` puts the working folder (the pull request's checkout) first on sys.path;
    each Python the action starts runs with -I, so a `lintlora/`, `pip/` or `venv.py` the pull
    request adds cannot stand in for the installed one."""
    runs = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    calls = [line for run in runs for line in run.splitlines() if " -m " in line]
    assert len(calls) >= 4, calls
    assert all(" -I -m " in line for line in calls), calls


def test_the_lint_runs_the_installed_lintlora_not_the_checkouts(tmp_path, monkeypatch):
    """github_review starts lintlora with -I: a `lintlora` package in the working folder is
    not the one that runs."""
    from lintlora import github_review

    fake = tmp_path / "lintlora"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("raise SystemExit(42)\n")
    monkeypatch.chdir(tmp_path)
    assert github_review._run_lintlora(["--version"]) == 0
