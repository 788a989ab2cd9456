"""The run as the unit (issue 15, lintlora/runs.py and the engine's wiring): launches found
around the linted files, one run per launch, the run's data (setup.run, setup.inputs), related
locations, the cache and --diff-only keyed by the run's files, hostile launch files."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lintlora.engine import lint_paths
from lintlora.findings import Finding, RelatedLocation, Severity
from lintlora.rules.base import Rule
from lintlora.runs import LaunchIndex, Run, assemble_run, launched_files, run_launch
from lintlora.training_setup import Origin, Span, TrainingSetup

RUN_SH = """#!/bin/bash
MODEL=meta-llama/Llama-2-13b-hf
torchrun --nproc_per_node 4 train.py \\
    --model_name_or_path $MODEL \\
    --fp16 True \\
    --deepspeed ds_z3.json
"""

TRAIN_PY = '''from dataclasses import dataclass, field
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
from peft import LoraConfig, get_peft_model


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/opt-125m")


parser = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, device_map="auto")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
trainer = Trainer(model=model, args=training_args)
trainer.train()
'''

DS_Z3 = '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()  # a project root (safeio.project_root: a .git entry)
    (root / "run.sh").write_text(RUN_SH)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "ds_z3.json").write_text(DS_Z3)
    return root


def _setups(result, path):
    return result.setups[str(path)]


# ---- the acceptance repository ---------------------------------------------------------------

def test_the_run_of_a_launched_script(repo):
    result = lint_paths([str(repo / "train.py")])
    (setup,) = _setups(result, repo / "train.py")
    run = setup.run
    assert run is not None and run.launcher == "torchrun"
    assert run.span.path == str(repo / "run.sh") and run.span.line == 3
    assert run.where == "run.sh:3"
    assert run.processes.value == 4 and run.processes.origin is Origin.LAUNCH
    assert run.processes.span.path == str(repo / "run.sh")
    assert "--fp16" in run.command and "meta-llama" not in run.command  # names, never values
    assert str(repo / "run.sh") in setup.inputs and str(repo / "ds_z3.json") in setup.inputs
    assert result.findings
    for finding in result.findings:  # every finding of the run points at its launch
        assert any(r.span == run.span and r.message.startswith("launched by run.sh:3")
                   for r in finding.related)
    assert str(repo / "run.sh") in result.inputs[str(repo / "train.py")]


def test_the_text_report_says_where_the_run_was_launched(repo, monkeypatch):
    from lintlora.report.text import render

    monkeypatch.chdir(repo)
    out = io.StringIO()
    render(lint_paths(["train.py"]), out, color=False)
    assert "    launched by run.sh:3" in out.getvalue()


def test_ll005_under_torchrun_points_at_the_launch(repo):
    result = lint_paths([str(repo / "train.py")])
    ll005 = [f for f in result.findings if f.code == "LL005"]
    assert ll005 and any(r.span.path == str(repo / "run.sh") for r in ll005[0].related)


def test_the_model_is_named_by_the_launch(repo):
    (setup,) = _setups(lint_paths([str(repo / "train.py")]), repo / "train.py")
    name = setup.get("model.name_or_path")
    assert name.value == "meta-llama/Llama-2-13b-hf" and name.origin is Origin.LAUNCH


def test_ll002_at_the_launch_line(repo):
    result = lint_paths([str(repo / "train.py")], _settings(gpu="a100-80gb"))
    assert any(f.code == "LL002" and f.span.path == str(repo / "run.sh") and f.span.line == 5
               for f in result.findings)


def test_the_estimate_says_zero3_times_4(repo):
    (setup,) = _setups(lint_paths([str(repo / "train.py")]), repo / "train.py")
    assert setup.distributed is not None and setup.distributed.zero_stage.value == 3
    assert setup.distributed.world_size.value == 4


def _settings(**kw):
    from lintlora.settings import Settings

    return Settings(**kw)


# ---- several runs of one file -----------------------------------------------------------------

def test_two_launches_are_two_runs(repo):
    (repo / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py\n"
                                 "torchrun --nnodes 2 --nproc_per_node 8 train.py --bf16 True\n")
    result = lint_paths([str(repo / "train.py")])
    setups = _setups(result, repo / "train.py")
    assert [s.run.processes.value for s in setups] == [2, 16]
    assert [s.run.span.line for s in setups] == [2, 3]
    # the same finding in both runs is reported once, with both launches (LL004: the same
    # words in both runs); a finding whose words name its run's launch (LL001 "run.sh:2 does
    # not pass ...", LL005 "run.sh:2 launches 2 processes") is one per run, each with its own
    def launches(finding):
        return [r.message[:len("launched by run.sh:2")] for r in finding.related
                if r.message.startswith("launched by")]

    both = ["launched by run.sh:2", "launched by run.sh:3"]
    ll004 = [f for f in result.findings if f.code == "LL004"]
    assert len(ll004) == 1 and launches(ll004[0]) == both
    for code in ("LL001", "LL005"):
        per_run = [launches(f) for f in result.findings if f.code == code]
        assert per_run == [both[:1], both[1:]], code


def test_a_sweep_is_one_run_per_value(repo):
    (repo / "run.sh").write_text("#!/bin/bash\nfor lr in 1e-4 2e-4 5e-4; do\n"
                                 "  python train.py --learning_rate $lr\ndone\n")
    setups = _setups(lint_paths([str(repo / "train.py")]), repo / "train.py")
    assert [s.run.sweep for s in setups] == [0, 1, 2]
    assert all(s.run.processes.value == 1 and s.run.launcher == "python" for s in setups)


def test_no_launch_keeps_the_file_alone(repo, monkeypatch):
    from lintlora.report.json_out import to_json

    monkeypatch.chdir(repo)
    (repo / "run.sh").unlink()
    alone = lint_paths(["train.py"])
    (setup,) = _setups(alone, "train.py")
    # no launch file, no distributed config: only the project's version manifests (issue 16:
    # requirements, pyproject.toml, lock files, present or not) are inputs of the result
    assert setup.run is None and setup.distributed is None
    assert not any(p.endswith((".sh", ".json")) for p in setup.inputs)
    assert all(not f.related for f in alone.findings)
    # a launch file that starts another script changes nothing for this one
    (repo / "other.sh").write_text("#!/bin/sh\npython other.py --fp16 True\n")
    again = lint_paths(["train.py"])
    assert json.dumps(to_json(again)) == json.dumps(to_json(alone))
    assert "related" not in json.dumps(to_json(again))


def test_a_named_launch_file_lints_what_it_launches(repo, monkeypatch):
    monkeypatch.chdir(repo)
    result = lint_paths(["run.sh"])
    assert str(repo / "train.py") in result.setups
    assert result.findings and not result.errors


def test_a_module_launch_and_a_dialect_yaml(repo):
    (repo / "src").mkdir()
    (repo / "src" / "train.py").write_text(TRAIN_PY)
    (repo / "cfg.yaml").write_text("model_name_or_path: x\nstage: sft\nfinetuning_type: lora\n")
    (repo / "run.sh").write_text("#!/bin/bash\npython -m src.train --fp16 True\n"
                                 "llamafactory-cli train cfg.yaml\n")
    index = LaunchIndex()
    assert [l.line for l in index.launches_for(str(repo / "src" / "train.py"))] == [2]
    assert [l.line for l in index.launches_for(str(repo / "cfg.yaml"))] == [3]
    (launch,) = index.launches_for(str(repo / "cfg.yaml"))
    assert launched_files(launch) == (str(repo / "cfg.yaml"),)


# ---- the pure assembly -------------------------------------------------------------------------

def test_assemble_run_is_pure(repo):
    index = LaunchIndex()
    (launch,) = index.launches_for(str(repo / "train.py"))
    setup = TrainingSetup(path=str(repo / "train.py"), inputs=(str(repo / "a.json"),))
    run = Run.of(setup.path, launch)
    assert run.files == (str(repo / "train.py"), str(repo / "run.sh"), str(repo / "ds_z3.json"))
    out = assemble_run(setup, launch, None, run.files[1:] + (str(repo / "run.sh"),))
    assert out.inputs == (str(repo / "a.json"), str(repo / "run.sh"), str(repo / "ds_z3.json"))
    assert out.run == run_launch(launch) and setup.run is None  # a new setup, the old kept
    assert assemble_run(setup, None, None, ()) is setup


# ---- findings at a launch line: reported there, suppressed there --------------------------------

class _AtTheLaunch(Rule):
    """A test rule: one finding at the launch line of a run (as a LAUNCH value's rule would)."""

    code = "LL002"
    name = "fp16-on-bf16-gpu"
    severity = Severity.WARNING
    summary = "test"

    def check(self, setup, context):
        if setup.run is not None:
            yield Finding(self.code, self.name, self.severity, setup.run.span, "at the launch")


def test_a_finding_at_the_launch_line_is_reported_there_and_suppressed_there(repo):
    result = lint_paths([str(repo / "train.py")], rules=[_AtTheLaunch])
    (finding,) = result.findings
    assert finding.span.path == str(repo / "run.sh") and finding.span.line == 3
    assert result.exit_code() == 1
    (repo / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 4 train.py "
                                 "--fp16 True  # noqa: LL002\n")
    assert lint_paths([str(repo / "train.py")], rules=[_AtTheLaunch]).findings == []
    (repo / "run.sh").write_text("#!/bin/bash\n"
                                 "torchrun --nproc_per_node 4 train.py --fp16 True  # noqa: LL001\n")
    assert len(lint_paths([str(repo / "train.py")], rules=[_AtTheLaunch]).findings) == 1
    # a continued command: the comment on its last line covers it
    (repo / "run.sh").write_text(RUN_SH.replace("ds_z3.json", "ds_z3.json  # noqa: LL002"))
    assert lint_paths([str(repo / "train.py")], rules=[_AtTheLaunch]).findings == []
    (repo / "run.sh").write_text(RUN_SH + "echo done  # noqa: LL002\n")
    assert len(lint_paths([str(repo / "train.py")], rules=[_AtTheLaunch]).findings) == 1


def test_sarif_related_locations_validate(repo, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    from lintlora.report.sarif import to_sarif

    monkeypatch.chdir(repo)
    doc = to_sarif(lint_paths(["train.py"], rules=None))
    schema = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(doc, schema)
    results = doc["runs"][0]["results"]
    assert results and all(r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]
                           ["uri"] == "run.sh" for r in results)


def test_json_github_and_markdown_show_the_launch(repo, monkeypatch):
    from lintlora.report import github, json_out, markdown

    monkeypatch.chdir(repo)
    result = lint_paths(["train.py"])
    doc = json_out.to_json(result)
    related = doc["findings"][0]["related"]
    assert related[0]["path"] == "run.sh" and related[0]["line"] == 3 and related[0]["column"] == 1
    assert related[0]["message"].startswith("launched by run.sh:3")
    out = io.StringIO()
    github.render(result, out)
    assert "launched by run.sh:3" in out.getvalue()
    assert "launched by run.sh:3" in markdown.to_markdown(result)


# ---- the cache and --diff-only -------------------------------------------------------------------

def test_the_cache_keys_a_run_by_its_files(repo, tmp_path):
    cache = str(tmp_path / "cache")

    def lint(rules=None):
        return lint_paths([str(repo / "train.py")], cache_dir=cache, keep_setups=False,
                          rules=rules)

    first = lint()
    assert first.stats.cache_stored == 1
    again = lint()
    assert again.stats.cache_hits == 1 and again.findings == first.findings
    (repo / "README.md").write_text("unrelated\n")
    assert lint().stats.cache_hits == 1
    (repo / "ds_z3.json").write_text(DS_Z3.replace("3", "2"))
    assert lint().stats.cache_hits == 0  # the run read it
    assert lint().stats.cache_hits == 1
    (repo / "run.sh").write_text(RUN_SH.replace("4", "8"))
    edited = lint()
    assert edited.stats.cache_hits == 0
    # an entry holding a finding at the launch line reads back the same
    at_launch = lint([_AtTheLaunch])
    assert lint([_AtTheLaunch]).findings == at_launch.findings and at_launch.findings


def _git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_diff_only_selects_the_runs_that_read_a_changed_file(repo, monkeypatch):
    from lintlora.gitdiff import changed_lines, filter_result

    shutil.rmtree(repo / ".git")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    monkeypatch.chdir(repo)

    def selected():
        result = lint_paths(["train.py"])
        inputs = sorted({p for ins in result.inputs.values() for p in ins})
        changed = changed_lines("HEAD", paths=sorted(result.files), inputs=inputs)
        return filter_result(result, changed).findings

    assert selected() == []
    (repo / "ds_z3.json").write_text(DS_Z3.replace("3", "2"))
    assert selected()
    _git(repo, "checkout", "--", "ds_z3.json")
    (repo / "run.sh").write_text(RUN_SH + "# a comment\n")
    assert selected()
    _git(repo, "checkout", "--", "run.sh")
    (repo / "notes.txt").write_text("x\n")
    assert selected() == []


# ---- never run, hostile launch files ------------------------------------------------------------

def test_a_launch_script_is_never_run(repo, tmp_path):
    marker = tmp_path / "LINTLORA_MARKER"
    (repo / "run.sh").write_text(f"#!/bin/bash\ntouch {marker}; python train.py\n"
                                 f"echo $(touch {marker}) && torchrun train.py\n")
    result = lint_paths([str(repo / "run.sh"), str(repo / "train.py")])
    assert str(repo / "train.py") in result.setups
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["huge", "binary", "nested", "link"])
def test_hostile_launch_files_give_diagnostics_and_the_script_is_linted(repo, kind):
    path = repo / "run.sh"
    if kind == "huge":
        path.write_text("#!/bin/bash\n" + "python train.py --x 1\n" * 500_000)  # ~11 MB
    elif kind == "binary":
        path.write_bytes(b"#!/bin/bash\npython train.py\n\x00\xff\xfe" * 100)
    elif kind == "nested":
        path.write_text("#!/bin/bash\npython train.py --x " + "$(" * 10_000 + ")" * 10_000 + "\n")
    else:
        path.unlink()
        os.symlink("/etc/passwd", path)
    result = lint_paths([str(path), str(repo / "train.py")])
    assert str(repo / "train.py") in result.setups  # the script is still linted
    said = [(e.path, e.message) for e in result.errors] + \
           [(f.span.path, f.message) for f in result.findings if f.code == "LL000"]
    assert any(p == str(path) for p, _ in said), said
    assert not result.internal_error
    # found only by the walk, it is silent and the script is linted alone
    alone = lint_paths([str(repo / "train.py")])
    assert str(repo / "train.py") in alone.setups and not alone.internal_error


def test_the_walk_is_bounded(repo, monkeypatch):
    import lintlora.runs as runs

    monkeypatch.setattr(runs, "MAX_WALK_ENTRIES", 3)
    for i in range(10):
        (repo / f"f{i}.txt").write_text("")
    index = LaunchIndex()
    index.discovery(index.root_of(str(repo / "train.py")))
    assert "launch files beyond were not looked for" in (index.walk_note(
        index.root_of(str(repo / "train.py"))) or "")


def test_a_launch_file_naming_no_linted_file_is_not_parsed(repo, monkeypatch):
    import lintlora.extract.launch as launch

    parsed = []
    original = launch.discover_launches
    monkeypatch.setattr(launch, "discover_launches",
                        lambda paths, **kw: parsed.extend(paths) or original(paths, **kw))
    (repo / "deploy.sh").write_text("#!/bin/sh\npython serve.py\n")
    result = lint_paths([str(repo / "train.py")])
    assert parsed == [str(repo / "run.sh")]
    assert _setups(result, repo / "train.py")[0].run is not None
    # a named launch file's entries are looked up in the other launch files too
    (repo / "sweep.sh").write_text("#!/bin/sh\ntorchrun --nproc_per_node 2 train.py\n")
    parsed.clear()
    named = lint_paths([str(repo / "sweep.sh")])
    assert [s.run.span.path for s in _setups(named, repo / "train.py")] == [
        str(repo / "run.sh"), str(repo / "sweep.sh")]
