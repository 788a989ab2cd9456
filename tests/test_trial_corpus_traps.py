"""False alarms found by linting real public files (issue 13's acceptance trial), each reduced to a
trap fixture under ``fixtures/rules/traps/`` in the style of the file that showed it.

Sources: unslothai/notebooks nb/Llama3.1_(8B)-Alpaca.ipynb @ bdda2efc7ad5 (LL010 on a T4, the card
the notebook is written for); philschmid/deep-learning-pytorch-huggingface
training/receipes/llama-3-1-8b-qlora.yaml @ 59b37973074d (LL008 error with ``use_liger: true``);
modelscope/ms-swift examples/yaml/megatron/sft.yaml @ 3602360a5623 (read as a TRL config).
"""

from __future__ import annotations

from rules_support import ROOT, lint, settings_from_args

TRAPS = ROOT / "fixtures" / "rules" / "traps"


def _codes(name: str, args: str) -> list[tuple[str, str]]:
    result = lint(TRAPS / name, settings_from_args(args))
    return [(f.code, f.severity.value) for f in result.findings]


def test_unsloth_default_precision_is_chosen_by_the_gpu_not_bf16():
    # Unsloth turns SFTConfig's bf16/fp16 defaults off and picks float16 on a T4 itself
    assert [c for c in _codes("ll010_unsloth_precision_by_gpu.py", "--gpu t4") if c[0] == "LL010"] == []


def test_unsloth_written_bf16_on_a_t4_still_fires(tmp_path):
    src = (TRAPS / "ll010_unsloth_precision_by_gpu.py").read_text(encoding="utf-8")
    bad = tmp_path / "unsloth_bf16.py"
    bad.write_text(src.replace('report_to = "none",', 'report_to = "none",\n        bf16 = True,'),
                   encoding="utf-8")
    result = lint(bad, settings_from_args("--gpu t4"))
    assert [f.code for f in result.findings if f.code == "LL010"] == ["LL010"]


def test_trl_yaml_use_liger_counts_as_the_fused_loss():
    codes = _codes("ll008_trl_yaml_use_liger.yaml", "--gpu rtx4090")
    assert "LL008" not in [c for c, _ in codes]


def test_trl_yaml_without_liger_still_does_not_fit(tmp_path):
    src = (TRAPS / "ll008_trl_yaml_use_liger.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "no_liger.yaml"
    bad.write_text(src.replace("use_liger: true", "use_liger: false"), encoding="utf-8")
    result = lint(bad, settings_from_args("--gpu rtx4090"))
    assert [(f.code, f.severity.value) for f in result.findings if f.code == "LL008"] == [("LL008", "error")]


def test_ms_swift_config_is_not_read_as_trl():
    assert _codes("ms_swift_sft_not_trl.yaml", "--gpu t4") == []


def test_the_fit_list_names_the_sequence_key_the_config_writes(tmp_path):
    # an older TRL config writes max_seq_length; the change must name it, not current TRL's max_length
    src = (TRAPS / "ll008_trl_yaml_use_liger.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "no_liger.yaml"
    bad.write_text(src.replace("use_liger: true", "use_liger: false"), encoding="utf-8")
    (finding,) = [f for f in lint(bad, settings_from_args("--gpu rtx4090")).findings if f.code == "LL008"]
    assert "max_seq_length: " in finding.message and "max_length: " not in finding.message
    current = tmp_path / "current.yaml"
    current.write_text(bad.read_text(encoding="utf-8").replace("max_seq_length: 1024", "max_length: 1024"),
                       encoding="utf-8")
    (finding,) = [f for f in lint(current, settings_from_args("--gpu rtx4090")).findings if f.code == "LL008"]
    assert "max_length: " in finding.message and "max_seq_length" not in finding.message


def test_estimate_names_the_notebook_cell_of_a_syntax_error(tmp_path):
    # brevdev/notebooks mixtral-finetune.ipynb: output pasted into code cell 33 (line 17 of the cell)
    import json

    from click.testing import CliRunner

    from lintlora.estimate.command import estimate_cmd

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": src} for src in (
        ["from transformers import AutoModelForCausalLM\n",
         "model = AutoModelForCausalLM.from_pretrained('mistralai/Mistral-7B-v0.1')\n"],
        ["print(model)\n", "\n", "Meaning Representation: verify_attribute(name[Little Big Adventure])\n"])]
    nb = tmp_path / "finetune.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                  encoding="utf-8")
    r = CliRunner().invoke(estimate_cmd, [str(nb), "--gpu", "t4"])
    assert r.exit_code == 2
    assert "finetune.ipynb:cell 2:line 3" in r.output


_AXOLOTL_DPO = """base_model: mistralai/Mistral-7B-Instruct-v0.2
load_in_4bit: true
adapter: qlora
rl: dpo
datasets:
  - path: olivermolenschot/alpaca_messages_dpo_test
    type: chat_template.default
sequence_len: 2048
lora_r: 8
lora_alpha: 16
lora_target_linear: true
gradient_accumulation_steps: 4
micro_batch_size: 16
optimizer: adamw_bnb_8bit
bf16: auto
gradient_checkpointing: true
"""

_LLAMA_FACTORY_DPO = """model_name_or_path: Qwen/Qwen3-4B-Instruct-2507
stage: dpo
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all
pref_beta: 0.1
dataset: dpo_en_demo
template: qwen3_nothink
cutoff_len: 2048
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
bf16: true
"""


def _peak(path):
    from lintlora.engine import read_setups
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.from_setup import estimate_setup
    from lintlora.settings import Settings

    (setup,) = read_setups(str(path), Settings())
    arch = resolve_architecture(setup.get("model.name_or_path").value, framework=setup.framework)
    return estimate_setup(setup, arch)


def test_preference_configs_count_chosen_and_rejected_sequences(tmp_path):
    # axolotl rl: dpo (mistral/dpo/mistral-dpo-qlora.yml) and LLaMA-Factory stage: dpo / rm
    # (train_lora/qwen3_lora_dpo.yaml, qwen3_lora_reward.yaml) run both completions per example
    for name, text, key, plain in (("dpo.yml", _AXOLOTL_DPO, "rl: dpo", ""),
                                   ("lf_dpo.yaml", _LLAMA_FACTORY_DPO, "stage: dpo", "stage: sft"),
                                   ("lf_rm.yaml", _LLAMA_FACTORY_DPO.replace("stage: dpo", "stage: rm"),
                                    "stage: rm", "stage: sft")):
        paired, single = tmp_path / name, tmp_path / ("single_" + name)
        paired.write_text(text, encoding="utf-8")
        single.write_text(text.replace(key + "\n", plain + ("\n" if plain else "")), encoding="utf-8")
        p, s = _peak(paired), _peak(single)
        if key == "stage: rm":
            # a reward model's score head (hidden × 1) has no vocabulary logits: the pair
            # doubles the checkpointed activations, and the loss buffers vanish
            assert p.inputs.loss_impl == "none" and p.breakdown["logits"] == 0 and s.breakdown["logits"] > 0, name
            assert p.inputs.tokens == 2 * s.inputs.tokens, name
        else:
            assert p.device_bytes > s.device_bytes * 1.3, name
        assert any("2 sequences per example" in n for n in p.assumptions), name
        assert not any("2 sequences per example" in n for n in s.assumptions), name
