"""The "what would make it fit" list (lintlora.estimate.fit) and how `lintlora estimate` shows it:
its title follows the headroom, it never changes a value the estimate assumed, and a YAML
config's options are written in the config's own keys."""

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.command import estimate_cmd
from lintlora.estimate.fit import TIGHT_HEADROOM, fit_options, heading
from lintlora.estimate.from_setup import estimate_setup
from lintlora.estimate.memory import EstimateInputs, estimate_memory
from lintlora.training_setup import Lora, Setting, TrainingArgs, TrainingSetup

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "fixtures" / "configs"
LLAMA2 = resolve_architecture("meta-llama/Llama-2-7b-hf")
GIB = 2**30


def _lora(**kw):
    base = dict(method="lora", batch_size=4, seq_len=1024, target_modules="all-linear")
    base.update(kw)
    return EstimateInputs(**base)


def _json(*args):
    r = CliRunner().invoke(estimate_cmd, [*map(str, args), "--format", "json"])
    # exit status 1: the estimate does not fit the GPU (tests/test_estimate_verdict.py)
    assert r.exit_code in (0, 1), r.output
    assert (r.exit_code == 1) == ((json.loads(r.output).get("verdict") or {}).get("state") == "over"), r.output
    return json.loads(r.output)


# ---- the heading follows the headroom -------------------------------------------------------------
def test_heading_says_fit_only_when_it_does_not_fit_or_is_tight():
    e = estimate_memory(_lora(), LLAMA2)
    assert heading(replace(e, gpu_memory_bytes=None)) == "ways to lower the peak"
    assert heading(replace(e, gpu_memory_bytes=e.device_bytes - 1)) == "what would make it fit"
    tight = int(e.device_bytes / (1 - TIGHT_HEADROOM / 2))  # 5% free
    assert heading(replace(e, gpu_memory_bytes=tight)) == "what would make it fit"
    roomy = e.device_bytes + 10 * GIB  # the new-user report: 9.8 GiB of headroom
    assert heading(replace(e, gpu_memory_bytes=roomy)) == "ways to lower the peak"


def test_cli_titles_the_list_by_headroom():
    small = CliRunner().invoke(estimate_cmd, ["--model", "meta-llama/Llama-2-7b-hf", "--batch-size", "8",
                                              "--seq-len", "1024", "--gpu", "rtx3090"]).output
    assert "what would make it fit" in small
    big = CliRunner().invoke(estimate_cmd, ["--model", "meta-llama/Llama-2-7b-hf", "--batch-size", "2",
                                            "--seq-len", "512", "--gpu", "h200"]).output
    assert "ways to lower the peak" in big and "what would make it fit" not in big
    assert _json("--model", "meta-llama/Llama-2-7b-hf", "--gpu", "h200")["fit_heading"] == "ways to lower the peak"


# ---- assumed values are not "changed" --------------------------------------------------------------
def test_assumed_sequence_length_and_batch_are_not_halved():
    given = {o.key for o in fit_options(estimate_memory(_lora(), LLAMA2), LLAMA2)}
    assert {"shorter_sequence", "halve_batch"} <= given
    assumed = estimate_memory(_lora(assumed=("seq_len", "batch_size")), LLAMA2)
    keys = {o.key for o in fit_options(assumed, LLAMA2)}
    assert "shorter_sequence" not in keys and "halve_batch" not in keys


def test_setup_without_sequence_length_marks_it_assumed_and_gets_no_max_seq_length_option():
    s = TrainingSetup(path="t.py", lora=Lora(r=Setting.literal(16), target_modules=Setting.literal("all-linear")),
                      training=TrainingArgs(per_device_train_batch_size=Setting.literal(4), bf16=Setting.literal(True)))
    e = estimate_setup(s, LLAMA2, None)
    assert "seq_len" in e.inputs.assumed and "batch_size" not in e.inputs.assumed
    changes = [o.change for o in fit_options(e, LLAMA2)]
    assert not any("max_seq_length" in c for c in changes)
    assert any("per_device_train_batch_size 4 -> 2" in c for c in changes)


def test_flags_not_given_are_assumed_and_said_so():
    data = _json("--model", "meta-llama/Llama-2-7b-hf", "--gpu", "t4")
    assert {"seq_len", "batch_size", "optim", "gradient_checkpointing"} <= set(data["estimate"]["inputs"]["assumed"])
    changes = [f["change"] for f in data["fit"]]
    assert not any("max_seq_length" in c for c in changes)
    gc = next(c for c in changes if "gradient checkpointing" in c)
    assert "assumed it off" in gc
    given = _json("--model", "meta-llama/Llama-2-7b-hf", "--seq-len", "2048", "--gpu", "t4")
    assert any("max_seq_length 2048 -> 1024" in f["change"] for f in given["fit"])


# ---- YAML configs get their own keys ---------------------------------------------------------------
def _changes(path, gpu="t4"):
    data = _json(path, "--gpu", gpu)
    return [f["change"] for f in data["fit"]]


PYTHON_NAMES = ("per_device_train_batch_size", "BitsAndBytesConfig", "max_seq_length", "use_liger_kernel=True",
                "gradient_checkpointing=True", "target_modules=")


def test_torchtune_options_use_torchtune_keys(tmp_path):
    cfg = (CONFIGS / "torchtune" / "mistral__7B_lora_single_device.yaml").read_text()
    cfg = cfg.replace("enable_activation_checkpointing: True", "enable_activation_checkpointing: False")
    path = tmp_path / "tt.yaml"
    path.write_text(cfg)
    changes = _changes(path)
    assert any(c.startswith("enable_activation_checkpointing: True") for c in changes)
    assert any(c.startswith("batch_size: 2 (from 4)") for c in changes)
    assert any("model._component_" in c and "qlora_" in c for c in changes)
    assert not any(n in c for c in changes for n in PYTHON_NAMES), changes


def test_llama_factory_options_use_llama_factory_keys():
    changes = _changes(CONFIGS / "llama-factory" / "lora_single_gpu__llama3_lora_sft.yaml")
    assert "quantization_bit: 4" in changes
    assert "cutoff_len: 512 (from 1024)" in changes
    assert "enable_liger_kernel: true" in changes
    assert not any(n in c for c in changes for n in PYTHON_NAMES), changes


def test_axolotl_options_use_axolotl_keys_and_brackets_survive_the_text_output():
    path = CONFIGS / "axolotl" / "llama-2__lora.yml"
    changes = _changes(path)
    assert "sequence_len: 2048 (from 4096)" in changes
    assert any(c.startswith("micro_batch_size: 1 (from 2)") for c in changes)
    assert not any(n in c for c in changes for n in PYTHON_NAMES), changes
    text = CliRunner().invoke(estimate_cmd, [str(path), "--gpu", "t4"]).output
    assert "[axolotl.integrations.liger.LigerPlugin]" in text.replace("\n", " ")


# ---- a script's options name what the script names ------------------------------------------------
def test_script_options_use_the_scripts_flags_and_agree_with_ll001(tmp_path):
    """fixtures/examples/qlora_trainer.py: batch and length come from --batch_size / --max_len
    (the length through the tokenizer's max_length); checkpointing is turned off by
    prepare_model_for_kbit_training(use_gradient_checkpointing=False), as LL001 says."""
    changes = _changes(ROOT / "fixtures" / "examples" / "qlora_trainer.py")
    assert "--max_len 2048 -> 1024 (the tokenizer's max_length)" in changes
    assert any(c.startswith("--batch_size 4 -> 2 (per_device_train_batch_size) with gradient_accumulation_steps")
               for c in changes)
    assert not any("max_seq_length" in c for c in changes), changes
    [gc] = [c for c in changes if "checkpointing" in c]
    assert "use_gradient_checkpointing=True in prepare_model_for_kbit_training" in gc
    assert "gradient_checkpointing=True with" not in gc


def test_literal_length_and_library_default_length_and_dataloader_batch(tmp_path):
    sft = tmp_path / "sft.py"
    sft.write_text(
        "from peft import LoraConfig\nfrom transformers import AutoModelForCausalLM\n"
        "from trl import SFTConfig, SFTTrainer\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype='bfloat16')\n"
        "args = SFTConfig(output_dir='o', per_device_train_batch_size=4, gradient_checkpointing=False{length})\n"
        "SFTTrainer(model=model, args=args, train_dataset=ds, peft_config=LoraConfig(r=8, "
        "target_modules='all-linear'{save})).train()\n".format(length=", max_length=2048", save=""))
    changes = _changes(sft, "a100-40gb")
    assert "sequence length 2048 -> 1024" in changes
    # no modules_to_save in the script: nothing to drop, and none said
    [fewer] = [c for c in changes if c.startswith("target_modules=")]
    assert fewer == "target_modules=['q_proj', 'k_proj', 'v_proj', 'o_proj']"
    sft.write_text(sft.read_text().replace(", max_length=2048", "").replace(
        "target_modules='all-linear'", "target_modules='all-linear', modules_to_save=['lm_head']"))
    changes = _changes(sft, "a100-40gb")
    assert "sequence length 1024 (trl's default) -> 512" in changes
    [fewer] = [c for c in changes if c.startswith("target_modules=")]
    assert fewer.endswith(" and no modules_to_save")

    loop = tmp_path / "loop.py"
    loop.write_text(
        "import torch\nfrom torch.utils.data import DataLoader\nfrom transformers import AutoModelForCausalLM\n"
        "from peft import LoraConfig, get_peft_model\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B', torch_dtype=torch.bfloat16)\n"
        "model = get_peft_model(model, LoraConfig(r=16, target_modules=['q_proj', 'v_proj']))\n"
        "loader = DataLoader(ds, batch_size=4)\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for batch in loader:\n    model(**batch).loss.backward()\n    opt.step()\n")
    data = _json(loop, "--gpu", "rtx4090")
    changes = [f["change"] for f in data["fit"]]
    assert any(c.startswith("DataLoader batch_size 4 -> 2") for c in changes), changes
    assert not any("per_device_train_batch_size" in c or "gradient_checkpointing=True" in c for c in changes)
    assert any("model.gradient_checkpointing_enable(" in c for c in changes)
    assert data["fit_heading"] == "what would make it fit at the assumed 512 tokens per sequence"


def test_dialects_drop_the_modules_to_save_clause_when_there_are_none():
    from lintlora.estimate.fit import _candidates

    for dialect, clause in (("axolotl", "lora_modules_to_save"), ("llama-factory", "additional_target"),
                            ("trl", "lora_modules_to_save"), (None, "modules_to_save")):
        none = dict((k, c) for k, c, _ in _candidates(LLAMA2, _lora(), dialect))["fewer_targets"]
        some = dict((k, c) for k, c, _ in _candidates(LLAMA2, _lora(modules_to_save=("lm_head",)), dialect))
        assert clause not in none and some["fewer_targets"].endswith(f" and no {clause}")
