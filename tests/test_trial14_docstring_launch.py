"""A script whose docstring launches it with a DeepSpeed/FSDP accelerate config is a sharded run
(issue 14 trial): LL008 compares a one-device estimate with one GPU, so it stays silent, as it does
for ``TrainingArguments(deepspeed=...)``.

The fixture is the real file cut to what prices it: huggingface/trl examples/scripts/sft_gemma3.py
@ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (full fine-tuning of Gemma-3-12B at 8192 tokens; its
docstring: ``accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml``).
On one A100-80GB it needs ~119 GiB, so LL008 fired with "no batch size or sequence length would
make it fit" on a script meant for ZeRO-3 over several GPUs.
"""

import pytest

from lintlora.cli import main

SFT_GEMMA3 = '''\
"""
Train Gemma-3 on the Codeforces COTS dataset.

accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml examples/scripts/sft_gemma3.py
"""

from datasets import load_dataset
from transformers import AutoModelForImageTextToText

from trl import SFTConfig, SFTTrainer


def main():
    train_dataset = load_dataset("open-r1/codeforces-cots", split="train")
    model_id = "google/gemma-3-12b-it"
    model = AutoModelForImageTextToText.from_pretrained(model_id, attn_implementation="eager")
    training_args = SFTConfig(
        output_dir=f"{model_id}-codeforces-SFT",
        bf16=True,
        use_liger_kernel=True,
        gradient_checkpointing=True,
        max_length=8192,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=8,
    )
    trainer = SFTTrainer(model=model, args=training_args, train_dataset=train_dataset)
    trainer.train()


if __name__ == "__main__":
    main()
'''


def _lint(tmp_path, capsys, text):
    p = tmp_path / "sft_gemma3.py"
    p.write_text(text)
    with pytest.raises(SystemExit):
        main([str(p), "--gpu", "a100-80gb"])
    return capsys.readouterr().out


def test_a_zero3_launch_in_the_docstring_silences_ll008(tmp_path, capsys):
    assert "LL008" not in _lint(tmp_path, capsys, SFT_GEMMA3)


def test_without_the_launch_line_ll008_still_fires(tmp_path, capsys):
    text = SFT_GEMMA3.replace(
        "accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml "
        "examples/scripts/sft_gemma3.py\n", "")
    assert "LL008" in _lint(tmp_path, capsys, text)


def test_docstring_launch_kinds_and_lines():
    from lintlora.extract.pylaunch import docstring_launch

    src = '"""Run:\n\n  accelerate launch --config_file fsdp_qlora.yaml train.py\n"""\n'
    (ev,) = docstring_launch("Run:\n\n  accelerate launch --config_file fsdp_qlora.yaml train.py\n", src, "t.py")
    assert ev.kind == "fsdp" and ev.span.line == 3
    assert docstring_launch("deepspeed --num_gpus 8 train.py --deepspeed ds.json", "", "t.py")[0].kind == "deepspeed"
    # a plain accelerate launch (DDP: every GPU holds the whole model) is no sharding
    assert docstring_launch("accelerate launch --config_file multi_gpu.yaml train.py", "", "t.py") == []
    assert docstring_launch("torchrun --nproc_per_node 4 train.py", "", "t.py") == []


def test_the_estimate_says_the_run_is_sharded(tmp_path):
    import json

    from click.testing import CliRunner

    from lintlora.estimate.command import estimate_cmd

    p = tmp_path / "sft_gemma3.py"
    p.write_text(SFT_GEMMA3)
    r = CliRunner().invoke(estimate_cmd, [str(p), "--gpu", "a100-80gb", "--format", "json"])
    e = json.loads(r.output[r.output.index("{"):])["estimate"]
    assert any(a.startswith("sharded launch") and "deepspeed_zero3.yaml" in a for a in e["assumptions"])


def test_a_docstring_with_a_nul_byte_is_no_launch_and_no_crash():
    # found by tests/test_extract_robustness.py's mutations: LibCST evaluates the docstring with
    # ast.literal_eval, which raises SyntaxError for a NUL byte on CPython 3.11
    import libcst as cst

    from lintlora.extract.pylaunch import module_docstring

    module = cst.parse_module('"""accelerate launch --config_file zero3.yaml \x00 train.py"""\nx = 1\n')
    assert module_docstring(module) is None
