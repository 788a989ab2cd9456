"""``lintlora estimate`` (lintlora.estimate.command.estimate_cmd)."""

import json

import pytest

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
    assert r.exit_code == 1, r.output  # it does not fit: the verdict is the exit status
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


# ---- option validation (usage errors exit 2 with a hint) ----------------------------------------
LLAMA = ("--model", "meta-llama/Llama-2-7b-hf")


def test_params_below_a_million_is_refused_with_a_hint():
    r = _run("--params", "7")
    assert r.exit_code == 2
    assert "did you mean 7B?" in r.output


def test_params_in_trillions_is_formatted():
    r = _run("--params", "1T", "--format", "json")
    assert r.exit_code == 0, r.output
    model = json.loads(r.output)["estimate"]["model"]
    assert model.startswith("1T-parameter model") and "e+" not in model


@pytest.mark.parametrize("args", [
    ("--dropout", "5"), ("--dropout", "1"), ("--dropout", "-0.1"),
    ("--optim", "sgd_bogus"), ("--tokens", "-5"), ("--tokens", "0"), ("--params", "-3B"),
])
def test_bad_values_are_usage_errors(args):
    r = _run(*LLAMA, *args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


def test_unknown_optimizer_lists_the_known_ones():
    r = _run(*LLAMA, "--optim", "adamw_8bi")
    assert r.exit_code == 2
    assert "adamw_8bit" in r.output and "paged_adamw_8bit" in r.output and "adafactor" in r.output


def test_known_optimizers_are_transformers_optimizer_names():
    transformers = pytest.importorskip("transformers.training_args")
    names = {o.value for o in transformers.OptimizerNames}
    from lintlora.estimate.memory import KNOWN_OPTIMIZERS
    assert names <= set(KNOWN_OPTIMIZERS)


def test_dropout_in_range_and_known_optimizer_are_accepted():
    r = _run(*LLAMA, "--dropout", "0.1", "--optim", "paged_adamw_8bit", "--format", "json")
    assert r.exit_code == 0, r.output
    inputs = json.loads(r.output)["estimate"]["inputs"]
    assert inputs["lora_dropout"] == 0.1 and inputs["optim"] == "paged_adamw_8bit"


def test_targets_matching_no_module_warn():
    r = CliRunner().invoke(estimate_cmd, [*LLAMA, "--targets", "q_proj,bogus_proj",
                                                          "--format", "json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.stdout)["estimate"]
    assert e["warnings"] and "'bogus_proj' matches no module of Llama-2-7B" in e["warnings"][0]
    assert "bogus_proj" in r.stderr
    text = _run(*LLAMA, "--targets", "bogus_proj").output
    assert "no LoRA target matches" in text and "q_proj" in text


# ---- --list-gpus ------------------------------------------------------------------------------
def test_list_gpus_prints_the_catalog():
    from lintlora.estimate.gpus import find_gpu, list_gpus

    r = _run("--list-gpus")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) >= len(list_gpus()) + 1
    t4 = next(line for line in lines if "Tesla T4" in line)
    assert t4.split()[0] == "t4" and f"{find_gpu('t4').memory_gib:.2f}" in t4
    data = json.loads(_run("--list-gpus", "--format", "json").output)
    assert {d["name"] for d in data} == {g.name for g in list_gpus()}
    # every listed key is a name --gpu accepts
    assert all(find_gpu(d["key"]).name == d["name"] for d in data)


def test_unknown_gpu_message_names_an_option_that_exists():
    r = _run(*LLAMA, "--gpu", "banana")
    assert r.exit_code == 2 and "--list-gpus" in r.output
    assert _run("--list-gpus").exit_code == 0


# ---- files that do not train -------------------------------------------------------------------
MERGE = '''import torch
from transformers import AutoModelForCausalLM
from peft import PeftModel
base = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.float16)
model = PeftModel.from_pretrained(base, "out/checkpoint-1000")
model = model.merge_and_unload()
model.save_pretrained("merged")
'''


def test_merge_only_script_gets_a_labelled_load_estimate_not_a_training_one(tmp_path):
    script = tmp_path / "merge.py"
    script.write_text(MERGE)
    r = _run(str(script), "--gpu", "t4", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    e = data["estimate"]
    assert e["training"] is False and e["peak_phase"] == "load"
    assert data["fit"] == [] and e["time_seconds"] is None
    for k in ("gradients", "optimizer_states", "activations", "logits"):
        assert e["breakdown"][k] == 0
    assert e["breakdown"]["weights"] == 6_738_415_616 * 2
    assert any("no training in this file" in a for a in e["assumptions"])
    assert not any("batch size" in a or "full fine-tuning" in a for a in e["assumptions"])
    text = _run(str(script)).output
    assert "load only (no training)" in text and "what would make it fit" not in text


@pytest.mark.parametrize("gpu,nominal", [("h200", True), ("rtx4090", False)])
def test_a_nominal_gpu_size_is_said_to_be_nominal(gpu, nominal):
    """A card without a cited CUDA-visible total is checked against its marketed size: the
    output says so (text and JSON), and a measured total (RTX 4090: 23.64 GiB) is not labelled."""
    args = ("--model", "meta-llama/Llama-2-7b-hf", "--method", "qlora", "--gpu", gpu)
    text = _run(*args)
    assert text.exit_code == 0, text.output
    assert ("(nominal size)" in text.output) is nominal
    e = json.loads(_run(*args, "--format", "json").output)["estimate"]
    assert bool(e.get("gpu_memory_nominal")) is nominal
    assert any("nominal (marketed) size" in a for a in e["assumptions"]) is nominal
    # --gpu-memory replaces the catalog's figure: nothing nominal about it
    given = json.loads(_run(*args, "--gpu-memory", "139GiB", "--format", "json").output)["estimate"]
    assert not given.get("gpu_memory_nominal")
