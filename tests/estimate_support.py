"""Helpers for the estimator's command-line tests: ``lintlora estimate ... --format json`` run
in-process, and a fixture file copied with edits."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd


def estimate_json(*argv: str) -> dict:
    """The ``estimate`` object of ``lintlora estimate ARGV --format json``; the command must
    exit 0 (its output is the assertion message otherwise)."""
    r = CliRunner().invoke(estimate_cmd, [*argv, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["estimate"]


def variant(tmp_path: Path, src: Path, name: str, *edits: tuple[str, str]) -> Path:
    """``src`` written to ``tmp_path/name`` with each ``(old, new)`` replacement made (each
    ``old`` must occur)."""
    text = src.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    p = tmp_path / name
    p.write_text(text)
    return p
