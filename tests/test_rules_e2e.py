"""End to end: every rule fixture through the real pipeline (extractors, estimator, engine).

Each file under ``fixtures/rules/`` states in its header the exact findings it must give, as
``code:line`` pairs (``# expect:`` empty for files that must stay silent, the traps included).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest
from rules_support import ROOT, lint, read_header, settings_from_args

FIXTURES = sorted(p for p in (ROOT / "fixtures" / "rules").rglob("*")
                  if p.suffix in (".py", ".yml", ".yaml") and p.is_file())


def expected(path):
    header = read_header(path)
    assert header["expect"] is not None, f"{path} has no '# expect:' header"
    pairs = []
    for token in header["expect"]:
        code, line = token.split(":")
        pairs.append((code, int(line)))
    return header["args"], sorted(pairs)


def test_every_rule_has_bad_and_good_fixtures():
    names = [p.name for p in FIXTURES]
    from lintlora.rules import BUILTIN_RULES

    codes = sorted(code for code, _ in BUILTIN_RULES)
    assert "LL012" in codes
    for code in codes:
        stem = code.lower()
        assert any(x.startswith(f"{stem}_bad") for x in names), f"no bad fixture for {code}"
        if code != "LL000":
            assert any(x.startswith(f"{stem}_good") for x in names), f"no good fixture for {code}"
    assert len([p for p in FIXTURES if p.parent.name == "traps"]) >= 6


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures" / "rules")))
def test_fixture_gives_exactly_the_expected_findings(path):
    args, want = expected(path)
    result = lint(path, settings_from_args(args))
    assert result.errors == []
    got = sorted((f.code, f.span.line) for f in result.findings)
    assert got == want, "\n".join(f"{f.code}:{f.span.line} {f.message}" for f in result.findings)
    for f in result.findings:
        if f.code == "LL000":
            continue
        # every finding carries the estimate; the shipped fixtures all name catalogued models
        assert f.estimate is not None and f.estimate.peak_bytes, f
        assert f.estimate.gpu_memory_bytes, f
        assert f.fix, f
        assert "None" not in f.message and " ?" not in f.message, f.message


def test_the_cli_json_output_matches_the_headers():
    """``lintlora --format json`` per group of fixtures sharing the same arguments."""
    groups = defaultdict(list)
    for path in FIXTURES:
        args, want = expected(path)
        groups[args].append((path, want))
    for args, items in groups.items():
        cmd = [sys.executable, "-m", "lintlora", "--format", "json", *args.split(), *[str(p) for p, _ in items]]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert out.returncode in (0, 1), out.stderr
        data = json.loads(out.stdout)
        by_file = defaultdict(list)
        for f in data["findings"]:
            by_file[(ROOT / f["path"]).resolve()].append((f["code"], f["line"]))
            if f["code"] != "LL000":  # a file that does not parse has no setup to estimate
                assert f["estimate"] is not None and "peak_bytes" in f["estimate"]
        for path, want in items:
            assert sorted(by_file.get(path.resolve(), [])) == want, path
