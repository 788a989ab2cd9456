"""``lintlora estimate``'s verdict: the exit status (0 fits, 1 does not fit, 2 usage error;
0 with no GPU named, and it says so), the launch guard ``lintlora estimate FILE --gpu X && next``,
and the largest batch / longest sequence that fit, checked against the estimator."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd
from rules_support import ROOT

QLORA_70B = ROOT / "fixtures" / "rules" / "ll008_bad_qlora_70b_trainer.py"
AXOLOTL = ROOT / "fixtures" / "rules" / "ll008_bad_axolotl.yml"
NOTEBOOK = ROOT / "fixtures" / "rules" / "ll008_bad_notebook.ipynb"


def _run(*args):
    return CliRunner().invoke(estimate_cmd, [str(a) for a in args])


@pytest.mark.parametrize("path,small,large", [
    (QLORA_70B, "rtx4090", "a100-80gb"), (AXOLOTL, "a100-40gb", "h200"), (NOTEBOOK, "t4", "a100-80gb")])
def test_exit_status_is_the_verdict_for_scripts_configs_and_notebooks(path, small, large):
    over = _run(path, "--gpu", small)
    assert over.exit_code == 1, over.output
    assert "does not fit (exit status 1)" in over.output
    fits = _run(path, "--gpu", large)
    assert fits.exit_code == 0, fits.output
    assert "verdict: fits" in fits.output or "verdict: tight" in fits.output


def test_no_gpu_named_is_exit_status_0_and_says_so():
    r = _run(QLORA_70B)
    assert r.exit_code == 0 and "no GPU named" in r.output and "exit status 0" in r.output


def test_usage_errors_are_exit_status_2():
    assert _run(QLORA_70B, "--gpu", "banana").exit_code == 2
    assert _run("--model", "nobody/nothing", "--gpu", "rtx4090").exit_code == 2


def test_flags_alone_get_the_verdict_too():
    args = ("--model", "meta-llama/Llama-2-7b-hf", "--batch-size", "8", "--seq-len", "2048")
    assert _run(*args, "--gpu", "rtx3090").exit_code == 1
    assert _run(*args, "--gpu", "h200").exit_code == 0
    assert _run(*args, "--gpu-memory", "200GiB").exit_code == 0


@pytest.mark.parametrize("gpu,launched", [("rtx4090", False), ("a100-80gb", True)])
def test_launch_guard_in_a_shell(tmp_path, gpu, launched):
    marker = tmp_path / "launched"
    cmd = (f'"{sys.executable}" -m lintlora estimate "{QLORA_70B}" --gpu {gpu} > /dev/null '
           f'&& touch "{marker}"')
    subprocess.run(cmd, shell=True, cwd=ROOT, timeout=120, check=False)
    assert marker.exists() is launched


def test_json_verdict_and_the_searches_agree_with_the_estimator():
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.memory import EstimateInputs, estimate_memory
    from lintlora.estimate.profiles import get_profile

    r = _run(QLORA_70B, "--gpu", "a100-80gb", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    v = data["verdict"]
    assert v["state"] in ("fits", "tight") and v["fits"] is True
    inputs = EstimateInputs(**{k: tuple(x) if isinstance(x, list) else x for k, x in data["estimate"]["inputs"].items()})
    arch = resolve_architecture("meta-llama/Llama-3.1-70B")
    cap = data["estimate"]["gpu_memory_bytes"]

    def peak(**change):
        return estimate_memory(replace(inputs, **change), arch, get_profile(inputs.framework)).device_bytes

    b = v["largest_batch"]
    assert b["low"] == 1 and b["high"] == 1048576 and b["fits"] >= inputs.batch_size
    assert peak(batch_size=b["fits"]) <= cap < peak(batch_size=b["fits"] + 1)
    assert peak(batch_size=b["fits_with_headroom"]) <= 0.9 * cap < peak(batch_size=b["fits_with_headroom"] + 1)
    s = v["longest_seq_len"]
    assert s["high"] == arch.max_position_embeddings and s["fits"] >= inputs.seq_len
    assert peak(seq_len=s["fits"]) <= cap < peak(seq_len=s["fits"] + 1)


def test_text_prints_the_largest_batch_and_the_longest_sequence():
    r = _run(QLORA_70B, "--gpu", "a100-80gb")
    assert "largest per-device batch at 1,024 tokens that fits:" in r.output
    assert "longest sequence at batch 2 that fits:" in r.output and "searched 1 to 131,072" in r.output
    over = _run(QLORA_70B, "--gpu", "rtx4090")
    assert "none fits, not even 1" in over.output


def test_the_status_follows_the_model_the_script_loads(tmp_path):
    text = QLORA_70B.read_text()
    second = text.replace("meta-llama/Llama-3.1-70B", "meta-llama/Llama-2-7b-hf")
    path = tmp_path / "two.py"
    path.write_text(text)
    assert _run(path, "--gpu", "rtx4090").exit_code == 1
    path.write_text(second)
    assert _run(path, "--gpu", "a100-80gb").exit_code == 0
