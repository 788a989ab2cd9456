"""bench/accuracy.py's generators: the script/config and the ``lintlora estimate`` argv it makes
for a truth row describe that row's setup (model, micro-batch, sequence length, LoRA rank,
method), as lintlora reads them back. The expected values are the row's own columns in
tests/data/measured_peaks.csv (the published configs), not figures from the code under test.
No timing and no accuracy figures are asserted here: those are printed by the script."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bench_support import load_bench

accuracy = load_bench("accuracy")
rowgen = load_bench("rowgen")

ROWS = {r["row_id"]: r for r in accuracy.load()}

# a sample of rows per framework form: HF Trainer (Qwen finetune.py: LoRA, GPTQ Q-LoRA,
# trainable embeddings), TRL SFTTrainer (HF 4-bit blog: NF4, FP4, 8-bit), litgpt (LoRA and
# QLoRA, fused and separate q/v), torchtune (LoRA, torchao QLoRA, full), unsloth (QLoRA)
SAMPLE = {
    "hf-trainer": ["105", "123", "135", "149", "224"],
    "trl-sft": ["185", "186", "191", "166"],
    "litgpt": ["1", "12", "14", "50", "63"],
    "torchtune": ["83", "87", "96", "103"],
    "unsloth": ["172", "182"],
}


def _int(text: str) -> int:
    return int(re.match(r"\s*(\d+)", text).group(1))


def _expected_method(row: dict) -> str:
    m = row["method"].lower()
    if m.startswith("full"):
        return "full"
    return "qlora" if row["quant"].lower() not in ("none", "", "16-bit") else "lora"


def _read_back(setup, tmp_path):
    """What ``lintlora estimate FILE`` reads from the generated file: the engine's setup, then
    from_setup's inputs (the command's own two steps)."""
    from lintlora.engine import read_setups
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.from_setup import inputs_from_setup
    from lintlora.settings import Settings

    arch = resolve_architecture(setup.model)
    name, text = rowgen.script_for(setup, arch)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    setups = read_setups(str(path), Settings())
    assert len(setups) == 1, text
    s = setups[0]
    model = s.get("model.name_or_path")
    arch_read = resolve_architecture(model.value if model.known else None, framework=s.framework)
    inputs, _ = inputs_from_setup(s, arch_read)
    return arch, arch_read, inputs, s


def _check(row, arch, arch_read, inputs):
    assert arch_read.hf_id == arch.hf_id
    assert inputs.batch_size == _int(row["micro_batch"])
    assert inputs.seq_len == _int(row["seq_len"])
    method = _expected_method(row)
    # a quantized base with LoRA is "qlora" whatever the bits (8-bit and GPTQ included)
    assert inputs.method == method
    if method != "full" and row["lora_rank"]:  # blank: not stated by the source
        assert inputs.lora_r == _int(row["lora_rank"])


@pytest.mark.parametrize("row_id", [r for ids in SAMPLE.values() for r in ids])
def test_generated_script_reads_back_as_the_row(row_id, tmp_path):
    row = ROWS[row_id]
    setup = accuracy.row_setup(row)
    assert not isinstance(setup, str), setup
    assert setup.generator in SAMPLE and row_id in SAMPLE[setup.generator]
    arch, arch_read, inputs, s = _read_back(setup, tmp_path)
    _check(row, arch, arch_read, inputs)
    # the file is in the framework's own form: the extractor saw that framework
    expected_fw = {"hf-trainer": "transformers", "trl-sft": "trl", "litgpt": "litgpt",
                   "torchtune": "torchtune", "unsloth": "unsloth"}[setup.generator]
    assert s.framework == expected_fw


@pytest.mark.parametrize("form", ["axolotl", "llama-factory"])
@pytest.mark.parametrize("row_id", ["123", "135", "185", "63"])
def test_rows_written_as_axolotl_and_llama_factory_configs_read_back(form, row_id, tmp_path):
    """No truth row is an axolotl or LLaMA-Factory measurement; the same setups written in
    those dialects still read back as the row (GPTQ rows stay LoRA there: neither dialect's
    generator writes a GPTQ base, so only the shape is checked)."""
    row = ROWS[row_id]
    setup = accuracy.row_setup(row)
    setup = replace(setup, generator=form)
    arch, arch_read, inputs, s = _read_back(setup, tmp_path)
    assert s.framework == form
    assert arch_read.hf_id == arch.hf_id
    assert inputs.batch_size == _int(row["micro_batch"])
    assert inputs.seq_len == _int(row["seq_len"])
    if row["lora_rank"]:
        assert inputs.lora_r == _int(row["lora_rank"])
    if setup.inputs.quant in ("nf4", "fp4", "int8"):
        assert inputs.method == "qlora"


def _parse_argv(argv):
    from lintlora.estimate.command import estimate_cmd

    ctx = estimate_cmd.make_context("estimate", list(argv))
    return ctx.params


@pytest.mark.parametrize("row_id", [r for ids in SAMPLE.values() for r in ids])
def test_generated_argv_parses_to_the_row(row_id):
    row = ROWS[row_id]
    setup = accuracy.row_setup(row)
    argv, missing = rowgen.argv_for(setup)
    params = _parse_argv(argv)  # only options this checkout's command knows
    from lintlora.estimate.architecture import resolve_architecture

    assert resolve_architecture(params["model"]).hf_id == resolve_architecture(setup.model).hf_id
    assert params["batch_size"] == _int(row["micro_batch"])
    assert params["seq_len"] == _int(row["seq_len"])
    assert params["fmt"] == "json"
    method = _expected_method(row)
    assert params["method"] == method
    if method != "full" and row["lora_rank"]:
        assert params["rank"] == _int(row["lora_rank"])
    for flag in missing:
        assert flag not in argv


def test_a_flag_the_command_lacks_is_marked_and_used_once_it_exists():
    """Row 149 (Qwen-14B LoRA with trainable wte and lm_head): ``--modules-to-save`` is left out
    and named while the command does not know it, and passed once it does."""
    setup = accuracy.row_setup(ROWS["149"])
    known = rowgen.estimate_options() - {"--modules-to-save"}
    argv, missing = rowgen.argv_for(setup, known)
    assert "--modules-to-save" in missing and "--modules-to-save" not in argv
    argv, missing = rowgen.argv_for(setup, known | {"--modules-to-save"})
    assert "--modules-to-save" not in missing
    i = argv.index("--modules-to-save")
    assert set(argv[i + 1].split(",")) == {"wte", "lm_head"}  # the row: "lora+trainable wte/lm_head"


def test_old_bitsandbytes_is_a_version_flag_on_both_paths():
    """Row 12 (litgpt QLoRA, Oct 2023, "bnb 0.41.1" in its source): both paths carry
    ``--assume-version bitsandbytes=0.41.1`` once the command knows the option."""
    setup = accuracy.row_setup(ROWS["12"])
    known = rowgen.estimate_options() | {"--assume-version"}
    flags, missing = rowgen.context_flags(setup, known)
    assert flags == ["--assume-version", "bitsandbytes=0.41.1"] and not missing
    argv, _ = rowgen.argv_for(setup, known)
    assert argv[-2:] == flags
    flags, missing = rowgen.context_flags(setup, known - {"--assume-version"})
    assert flags == [] and missing == ["--assume-version"]


def test_script_and_flag_paths_give_an_estimate_of_the_rows_counter(tmp_path):
    """Row 63 (litgpt Llama-3-8B LoRA, max_memory_allocated) through ``lintlora estimate``
    in-process: both paths return the three counters, the row's counter among them."""
    setup = accuracy.row_setup(ROWS["63"])
    s = accuracy.script_estimate(setup, tmp_path)
    f = accuracy.flag_estimate(setup, rowgen.estimate_options())
    for r in (s, f):
        assert r.error is None
        assert 0 < r.allocated <= r.reserved <= r.device
    assert accuracy._counter(ROWS["63"]) == "allocated"


def test_encoder_decoder_and_unknown_models_are_reported_not_dropped():
    """T0/mt0 rows are not skipped as "encoder-decoder": they are left out for what they lack
    (no sequence length in the row) or for an unknown model, with that reason."""
    why = accuracy.row_setup(ROWS["198"])
    assert isinstance(why, str) and "encoder-decoder" not in why
    assert why.startswith("no sequence length")  # the row has none: PEFT's example pads per batch
    fake = dict(ROWS["63"], model="example-org/no-such-model-7b")
    assert accuracy.row_setup(fake) == "unknown model example-org/no-such-model-7b"
