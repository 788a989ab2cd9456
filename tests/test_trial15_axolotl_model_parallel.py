"""LL008 is silent on an axolotl config that splits the model over GPUs in a way the estimator
does not model (issue 15 trial): ``expert_parallel_size`` (ExpertParallelPlugin: the experts
divided among the ranks, axolotl src/axolotl/integrations/expert_parallel/plugin.py @ 067b021c8),
``tensor_parallel_size`` (DeepSpeed AutoTP) and ``context_parallel_size`` (each sequence split
among the ranks; src/axolotl/utils/schemas/config.py). The shipped
examples/expert_parallel/qwen3_30ba3b_ep_fft_4gpu.yaml got an LL008 *error* (246.6 GiB on one
A100-80GB, "no batch size or sequence length would make it fit") for a run meant for 4 GPUs.
Without the parallel size the same config is still reported.
"""

from pathlib import Path

import pytest

from lintlora.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "axolotl"


def _lint(capsys, name, tmp_path=None, text=None):
    path = FIXTURES / name
    if text is not None:
        path = tmp_path / name
        path.write_text(text)
    try:
        main([str(path), "--gpu", "a100-80gb", "--no-cache", "--select", "LL008"])
    except SystemExit:
        pass
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ["qwen3_30ba3b_ep_fft_4gpu.yaml", "qwen3_30ba3b_tp4_fft.yaml"])
def test_ll008_silent_under_model_parallelism(capsys, name):
    assert "LL008" not in _lint(capsys, name)


def test_ll008_silent_under_context_parallelism(capsys, tmp_path):
    text = (FIXTURES / "qwen3_30ba3b_ep_fft_4gpu.yaml").read_text().replace(
        "expert_parallel_size: 4 # world size 4", "context_parallel_size: 4")
    assert "LL008" not in _lint(capsys, "cp.yaml", tmp_path, text)


def test_ll008_still_fires_on_one_gpu(capsys):
    assert "LL008" in _lint(capsys, "qwen3_30ba3b_fft_one_gpu.yaml")
