"""Fixes of values the run sets outside the script (issue 17): the launch line in the shell
script that runs the script, and an accelerate config the launch names, pinned byte for byte.

Each folder of ``fixtures/fix_launch/`` is a project (``train.py``, ``run.sh``, maybe
``configs/accelerate.yaml``); ``X.fixed.EXT`` is file ``X.EXT`` after ``--fix --unsafe-fixes``.
The project is copied (without the ``.fixed`` files) and linted whole; the finding's fix is
unsafe and its title the rule's launch one; the files it changes come out as pinned, the others
untouched; linting the fixed project again reports the finding no more.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rules_support import ROOT

from lintlora.findings import FixSafety

FIXTURES = ROOT / "fixtures" / "fix_launch"

CASES = {
    # folder: (GPU, rule, the fix's title, the files the fix changes)
    "LL001_run_sh": ("a100-40gb", "LL001", "turn gradient checkpointing on in the launch command", ["run.sh"]),
    "LL002_run_sh": ("a100-80gb", "LL002", "train in bfloat16 in the launch command or its config", ["run.sh"]),
    "LL002_accelerate": ("a100-80gb", "LL002", "train in bfloat16 in the launch command or its config",
                         ["configs/accelerate.yaml"]),
    "LL009_run_sh": ("a100-80gb", "LL009", "use non-reentrant checkpointing in the launch command", ["run.sh"]),
    "LL017_accelerate": ("t4", "LL017", "train in float32 in the launch command or its config",
                         ["configs/accelerate.yaml"]),
}


def _fixed_name(rel: str) -> str:
    path = Path(rel)
    return str(path.with_name(f"{path.stem}.fixed{path.suffix}"))


def _project(name: str, tmp_path: Path) -> Path:
    work = tmp_path / name
    shutil.copytree(FIXTURES / name, work, ignore=shutil.ignore_patterns("*.fixed.*"))
    (work / ".git").mkdir()  # the project's root (lintlora.safeio.confinement_root)
    return work


def _lint(work: Path, gpu: str):
    from lintlora.engine import lint_paths
    from lintlora.settings import Settings

    return lint_paths([str(work)], Settings(gpu=gpu))


def test_every_case_folder_is_listed():
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_launch_fix_is_unsafe_and_gives_the_pinned_files(name, tmp_path):
    from lintlora.autofix import plan_fixes, write_back

    gpu, code, title, changed = CASES[name]
    work = _project(name, tmp_path)
    before = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    result = _lint(work, gpu)
    findings = [f for f in result.findings if f.code == code]
    assert findings, [(f.code, f.span) for f in result.findings]
    assert all(f.autofix is not None and f.autofix.title == title and f.autofix.safety is FixSafety.UNSAFE
               for f in findings), [f.autofix for f in findings]
    safe_only = plan_fixes(findings, lambda _p: None, unsafe=False, linted=result.files)
    assert safe_only.plan.changed() == []  # --fix alone leaves a launch script alone
    inputs = [p for read in result.inputs.values() for p in read]
    run = plan_fixes(findings, lambda _p: None, unsafe=True, linted=result.files, read_inputs=inputs)
    assert [o.status for o in run.plan.outcomes] == ["applied"] * len(findings), run.plan.outcomes
    written, problems = write_back(run)
    assert problems == {}
    assert sorted(str(Path(p).relative_to(work)) for p in written) == sorted(changed)
    for path, data in before.items():
        rel = str(path.relative_to(work))
        if rel in changed:
            assert path.read_bytes() == (FIXTURES / name / _fixed_name(rel)).read_bytes(), rel
        else:
            assert path.read_bytes() == data, f"{rel} changed"
    again = _lint(work, gpu)
    assert [f for f in again.findings if f.code == code] == []
