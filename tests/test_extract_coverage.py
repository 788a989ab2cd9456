"""bench/coverage.py scores what the estimator needs, and explains what is missing."""

import json
from pathlib import Path

from bench_support import load_bench

ROOT = Path(__file__).resolve().parent.parent
coverage = load_bench("coverage")


def test_full_and_partial_scores(capsys):
    coverage.main([str(ROOT / "fixtures/python/traps/sft_model_by_name.py"),
                   str(ROOT / "fixtures/python/traps/undefined_names.py"), "--json"])
    data = json.loads(capsys.readouterr().out)
    full, empty = data["files"]
    assert full["score"] == 1.0 and full["why"] == [{}]
    assert empty["score"] == 0.0
    assert "never defined" in empty["why"][0]["lora_r"]
    assert data["overall"] == 0.5


def test_text_report_and_syntax_errors(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef f(:\n")
    coverage.main([str(bad), str(ROOT / "fixtures/python/torch_loop.py"), "--why"])
    out = capsys.readouterr().out
    assert "LL000" in out and "optimizer: no training arguments" in out
    assert out.strip().splitlines()[-1].startswith("overall:")
