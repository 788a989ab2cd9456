"""LL008 names where an unsloth run's sequence length comes from (issue 14 trial).

Fixture: the gpt-oss notebook cells (the same as tests/test_trial14_unsloth_moe_targets.py; unslothai/notebooks
nb/gpt-oss-(20B)-Fine-tuning.ipynb @ bdda2efc7ad5ae129ea63cd2065d23c391406283), which pass
``max_seq_length = 1024`` to ``FastLanguageModel.from_pretrained`` and none to SFTConfig. The
estimate takes the model's 1024 (unsloth's trainer patch does), but LL008 on a Tesla T4 said
"It rests on trl's default 1024 tokens per sequence ... the notebook sets no sequence length"
(trl's default is also 1024) and weighed it as a guess.
"""

from pathlib import Path

import pytest

from lintlora.cli import main

GPT_OSS_NOTEBOOK = (Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "trial14"
                    / "unsloth_gpt_oss_notebook.py").read_text()


def test_ll008_says_the_length_is_the_files_own(tmp_path, capsys):
    p = tmp_path / "gpt_oss_20b.py"
    p.write_text(GPT_OSS_NOTEBOOK)
    with pytest.raises(SystemExit):
        main([str(p), "--gpu", "t4"])
    out = capsys.readouterr().out
    assert "LL008" in out  # the T4's 14.8 GiB against the estimate: still reported
    assert "trl's default" not in out and "sets no sequence length" not in out, out
