"""A finding whose value the launch passed points at the value's word in the launch file, not
at column 1 of its line (issue 15 trial): lm-sys/FastChat scripts/train_lora.sh's
``    --fp16 True \\`` gave LL002 at train_lora.sh:9:1-9:1, an empty span at the indentation.
The span is now the word's (``True``: columns 12-16 here), as written in the file."""

import json
from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "launch_column"


def test_launch_value_span_is_the_word(capsys, tmp_path):
    import shutil

    root = tmp_path / "p"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()
    try:
        main([str(root / "train_lora.py"), "--gpu", "a100-80gb", "--no-cache", "--format", "json",
              "--select", "LL002"])
    except SystemExit:
        pass
    found = json.loads(capsys.readouterr().out)["findings"]
    assert len(found) == 1, found
    f = found[0]
    assert f["path"].endswith("train_lora.sh") and f["line"] == 4
    line = (FIXTURE / "train_lora.sh").read_text().splitlines()[3]
    assert line[f["column"] - 1:f["end_column"] - 1] == "True", (f["column"], f["end_column"])
    passed = [r for r in f["related"] if "passed by" in r["message"]]
    assert passed and passed[0]["column"] == f["column"]
