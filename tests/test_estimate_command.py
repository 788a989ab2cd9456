"""``lintlora estimate`` (lintlora.estimate.command.estimate_cmd)."""

import json

from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd


def _run(*args):
    return CliRunner().invoke(estimate_cmd, list(args))


def test_json_output_has_the_documented_keys_and_adds_up():
    r = _run("--model", "meta-llama/Llama-2-7b-hf", "--method", "qlora", "--batch-size", "4",
             "--seq-len", "512", "--gpu", "rtx4090", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    e = data["estimate"]
    for key in ("allocated_bytes", "reserved_bytes", "device_bytes", "breakdown", "gpu",
                "gpu_memory_bytes", "time_seconds", "assumptions"):
        assert key in e
    assert sum(e["breakdown"].values()) == e["device_bytes"]
    assert e["gpu"] == "GeForce RTX 4090"
    assert data["fit"] and all(f["device_bytes"] < e["device_bytes"] for f in data["fit"])


def test_text_output_shows_counters_and_fit_list():
    r = _run("--model", "meta-llama/Llama-2-7b-hf", "--batch-size", "8", "--seq-len", "1024", "--gpu", "rtx3090")
    assert r.exit_code == 0, r.output
    assert "nvidia-smi" in r.output and "what would make it fit" in r.output


def test_unknown_model_and_gpu_are_usage_errors():
    assert _run("--model", "nobody/nothing").exit_code == 2
    assert _run("--model", "meta-llama/Llama-2-7b-hf", "--gpu", "banana").exit_code == 2


def test_params_gives_rough_estimate():
    r = _run("--params", "7B", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["estimate"]["rough"] is True


def test_qlora_flags_assume_prepare_model_for_kbit_training_checkpointing():
    base = ("--model", "meta-llama/Llama-2-7b-hf", "--method", "qlora", "--batch-size", "1", "--seq-len", "512",
            "--format", "json")
    on = json.loads(_run(*base).output)["estimate"]
    off = json.loads(_run(*base, "--no-gradient-checkpointing").output)["estimate"]
    assert on["inputs"]["gradient_checkpointing"] is True and on["inputs"]["kbit_upcast"] is True
    assert any("use_gradient_checkpointing=True" in a for a in on["assumptions"])
    assert off["device_bytes"] > on["device_bytes"]
    axo = json.loads(_run(*base, "--framework", "axolotl").output)["estimate"]
    assert axo["inputs"]["kbit_upcast"] is False
