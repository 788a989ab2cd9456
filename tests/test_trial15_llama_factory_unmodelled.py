"""LL008 is silent on a LLaMA-Factory config whose training method the estimator does not model
(issue 15 trial, hiyouga/LLaMA-Factory examples @ ff6d4d12).

``finetuning_type: oft`` (peft OFT adapters on a frozen base: LLaMA-Factory
src/llamafactory/model/adapter.py ``_setup_lora_tuning``, ``finetuning_type == "oft"``) was priced
as a full fine-tune; ``use_galore`` / ``use_apollo`` (low-rank projected optimizer states) and
``use_badam`` (one block trained at a time) were priced as AdamW over every parameter
(src/llamafactory/train/trainer_utils.py ``create_custom_optimizer``); a Megatron config
(``tensor_model_parallel_size`` / ``pipeline_model_parallel_size`` > 1, mcore_adapter) splits
the model over GPUs; ``use_kt`` (KTransformers' AMX MoE backend: the experts on the CPU,
src/llamafactory/hparams/model_args.py) keeps most of a MoE model off the GPU. Each got "does not fit ... no batch size or sequence length would make it
fit" on an A100-80GB, a verdict on a run lintlora did not model. A plain full fine-tune of the
same model still gets LL008.
"""

from pathlib import Path

import pytest

from lintlora.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "llama_factory"


def _lint(capsys, name):
    try:
        main([str(FIXTURES / name), "--gpu", "a100-80gb", "--no-cache", "--select", "LL008"])
    except SystemExit:
        pass
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ["llama3_oft_sft.yaml", "llama3_galore_sft.yaml",
                                  "llama3_badam_sft.yaml", "llama3_apollo_sft.yaml",
                                  "megatron_full.yaml", "qwen3moe_lora_sft_kt.yaml"])
def test_ll008_silent_on_a_method_not_modelled(capsys, name):
    assert "LL008" not in _lint(capsys, name)


def test_ll008_still_fires_on_the_plain_full_fine_tune(capsys):
    assert "LL008" in _lint(capsys, "llama3_full_sft.yaml")
