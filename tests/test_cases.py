"""The shared cases (``fixtures/cases/``): public failure reports as small inputs, each header
giving the arguments and the codes that must and must not be reported."""

from __future__ import annotations

import pytest
from rules_support import ROOT, lint, read_header, settings_from_args

CASES = sorted(p for p in (ROOT / "fixtures" / "cases").iterdir() if p.suffix in (".py", ".yml", ".yaml"))


def test_all_shared_cases_are_here():
    assert len(CASES) >= 11
    for path in CASES:
        header = read_header(path)
        assert header["expect"] is not None, path


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_case(path):
    header = read_header(path)
    result = lint(path, settings_from_args(header["args"]))
    assert result.errors == []
    codes = {f.code for f in result.findings}
    report = "\n".join(f"{f.code}:{f.span.line} {f.message}" for f in result.findings)
    for code in header["expect"]:
        assert code in codes, f"{path.name}: {code} expected\n{report}"
    for code in header["forbid"]:
        assert code not in codes, f"{path.name}: {code} forbidden\n{report}"
    if header["future"]:
        # cases for rules that do not exist yet: the codes they expect are none of ours
        assert not (set(header["expect"]) & codes)
