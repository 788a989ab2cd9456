"""``lintlora estimate`` prices the run a launch in a sibling folder starts, as lint does (issue
15 trial). lm-sys/FastChat launches fastchat/train/train_lora.py from scripts/train_lora.sh and
artidoro/qlora launches qlora.py from scripts/finetune*.sh: lint bound those launches' values
(the project walk of :class:`lintlora.runs.LaunchIndex`), while estimate looked only beside and
above the file, so it priced the script's defaults (qlora: Pythia-12B at batch 1) or failed with
"the model is not named in the file" (FastChat)."""

import shutil
from pathlib import Path

from estimate_support import estimate_json

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "fastchat_sibling"


def _project(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "p")
    (tmp_path / "p" / ".git").mkdir()  # the project root
    return tmp_path / "p"


def test_estimate_binds_a_launch_in_a_sibling_folder(tmp_path):
    root = _project(tmp_path)
    e = estimate_json(str(root / "fastchat" / "train" / "train_lora.py"))
    assert any(a.startswith("launched by train_lora.sh:1 (deepspeed)") for a in e["assumptions"]), e["assumptions"]
    assert e["model"] == "Llama-2-7B"
    assert e["inputs"]["batch_size"] == 2  # --per_device_train_batch_size 2 at train_lora.sh:6


def test_lint_binds_the_same_launch(tmp_path, capsys):
    from lintlora.cli import main

    root = _project(tmp_path)
    try:
        main([str(root / "fastchat" / "train" / "train_lora.py"), "--show-setup", "--no-cache"])
    except SystemExit:
        pass
    assert "meta-llama/Llama-2-7b-hf" in capsys.readouterr().out
