"""Every finding of a launched run names the launch the same way (issue 15 trial): with
tloen/alpaca-lora's ``torchrun --nproc_per_node=2 finetune.py`` LL002 said only "launched by
run.sh:1" while LL001/LL005 findings of the same kind of run said "launched by run.sh:1 with 2
processes (torchrun)"; the engine's related location now carries the count and the launcher."""

import json
import shutil
from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "alpaca_lora"


def test_engine_related_names_processes_and_launcher(capsys, tmp_path):
    root = tmp_path / "p"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()
    try:
        main([str(root / "finetune.py"), "--gpu", "a100-80gb", "--no-cache", "--format", "json",
              "--select", "LL002"])
    except SystemExit:
        pass
    found = json.loads(capsys.readouterr().out)["findings"]
    assert len(found) == 1, found
    messages = [r["message"] for r in found[0]["related"]]
    assert messages == ["launched by run.sh:1 with 2 processes (torchrun)"], messages
