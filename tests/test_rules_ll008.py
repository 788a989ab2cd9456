"""LL008 does-not-fit through the real pipeline (extractors, estimator, engine): the verdict,
its severity, its anchor, the fit list (each change re-estimated), and the cases where it must
stay silent (no GPU, unknown model, LL001's fix is enough, sharded runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rules_support import ROOT, lint
from lintlora.settings import Settings

RULES = ROOT / "fixtures" / "rules"
QLORA_70B = RULES / "ll008_bad_qlora_70b_trainer.py"
BATCH = RULES / "ll008_bad_batch_trainer.py"


def _ll008(path, **settings):
    result = lint(path, Settings(**settings))
    assert not result.errors, result.errors
    return [f for f in result.findings if f.code == "LL008"], result.findings


def _line(path: Path, needle: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def test_70b_qlora_on_a_4090_is_an_error_with_a_fit_list_at_the_model_load():
    found, _ = _ll008(QLORA_70B, gpu="rtx4090")
    assert len(found) == 1
    f = found[0]
    assert f.severity.value == "error"
    assert f.span.line == _line(QLORA_70B, "from_pretrained(\"meta-llama/Llama-3.1-70B\"")
    assert "23.6 GiB" in f.message and "does not fit" in f.message and "at the loss" in f.message
    assert "each re-estimated" in f.message and "per_device_train_batch_size 2 -> 1" in f.message
    assert "smallest catalogued GPU" in f.message and f.fix
    peak = float(re.search(r"Estimated peak ([\d.]+) GiB", f.message).group(1))
    assert peak > 40 and f.estimate.peak_bytes > f.estimate.gpu_memory_bytes


def test_the_same_script_on_an_80gb_card_gets_no_ll008():
    assert _ll008(QLORA_70B, gpu="a100-80gb")[0] == []
    assert _ll008(QLORA_70B, gpu="h100-80gb")[0] == []


def test_no_gpu_named_means_no_verdict():
    assert _ll008(QLORA_70B)[0] == []


def test_an_unknown_model_never_gets_ll008(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(QLORA_70B.read_text().replace("meta-llama/Llama-3.1-70B", "my-org/private-70b"))
    for gpu in ("rtx4090", "t4"):
        assert _ll008(path, gpu=gpu)[0] == []


def test_the_batch_is_anchored_and_the_proposed_change_is_re_estimated_to_fit(tmp_path):
    found, _ = _ll008(BATCH, gpu="rtx4090")
    assert len(found) == 1 and found[0].severity.value == "error"
    f = found[0]
    assert f.span.line == _line(BATCH, "per_device_train_batch_size=16")
    m = re.search(r"per_device_train_batch_size=16 -> (\d+) with gradient_accumulation_steps 2 -> (\d+) "
                  r"\(same effective batch, 32\)", f.message)
    assert m, f.message
    batch, accumulation = int(m.group(1)), int(m.group(2))
    assert batch * accumulation == 32 and batch < 16
    assert f.estimate.peak_after_fix_bytes < f.estimate.gpu_memory_bytes * 0.9
    # the change, made in the file, fits: LL008 goes quiet
    fixed = tmp_path / "train.py"
    fixed.write_text(BATCH.read_text().replace("per_device_train_batch_size=16", f"per_device_train_batch_size={batch}")
                     .replace("gradient_accumulation_steps=2", f"gradient_accumulation_steps={accumulation}"))
    assert _ll008(fixed, gpu="rtx4090")[0] == []


def test_ll001_keeps_the_finding_when_checkpointing_alone_makes_it_fit(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(BATCH.read_text().replace("per_device_train_batch_size=16", "per_device_train_batch_size=4")
                    .replace("gradient_checkpointing=True", "gradient_checkpointing=False"))
    findings = _ll008(path, gpu="rtx4090")[1]
    ll001 = [f for f in findings if f.code == "LL001"]
    assert ll001 and ll001[0].severity.value == "error"
    assert not [f for f in findings if f.code == "LL008"]
    # with LL001 not selected, LL008 gives the verdict itself
    found, _ = _ll008(path, gpu="rtx4090", ignore=("LL001",))
    assert len(found) == 1 and "checkpointing" in found[0].message


def test_a_verdict_resting_on_an_assumed_length_is_a_warning_that_says_so(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(BATCH.read_text().replace(", max_length=2048", ""))
    found, _ = _ll008(path, gpu_memory_bytes=18 * 2**30)  # 20.1 GiB at 16 × 512; 14.8 GiB at 1 token
    assert len(found) == 1
    f = found[0]
    assert f.severity.value == "warning" and "assumed 512 tokens per sequence" in f.message, f.message
    assert f.rests_on


def test_the_model_alone_too_big_stays_an_error_whatever_the_assumed_length(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(QLORA_70B.read_text().replace(", max_length=1024", ""))
    found, _ = _ll008(path, gpu="rtx4090")
    assert len(found) == 1 and found[0].severity.value == "error"
    assert "even with 1-token sequences" in found[0].message


def test_tight_band_warns_within_ten_percent_of_the_capacity():
    peak = _ll008(BATCH, gpu="rtx4090")[0][0].estimate.peak_bytes
    found, _ = _ll008(BATCH, gpu_memory_bytes=int(peak / 0.95))
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "less than the 10%" in found[0].message
    assert _ll008(BATCH, gpu_memory_bytes=int(peak / 0.85))[0] == []


def test_over_by_less_than_ten_percent_is_a_warning():
    peak = _ll008(BATCH, gpu="rtx4090")[0][0].estimate.peak_bytes
    found, _ = _ll008(BATCH, gpu_memory_bytes=int(peak / 1.05))
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "within the estimate's 10% uncertainty" in found[0].message


def test_notebook_gets_the_verdict_in_the_cell_that_sets_the_length():
    found, _ = _ll008(RULES / "ll008_bad_notebook.ipynb", gpu="t4")
    assert len(found) == 1
    f = found[0]
    assert f.severity.value == "error" and f.span.cell == 3
    assert "per_device_train_batch_size=8 -> 1 with gradient_accumulation_steps 2 -> 16" in f.message


@pytest.mark.parametrize("name,gpu,key", [
    ("ll008_bad_axolotl.yml", "a100-40gb", "micro_batch_size: 2 (from 8) with gradient_accumulation_steps: 8 (from 2)"),
    ("ll008_bad_llama_factory.yaml", "a100-40gb", "optim: paged_adamw_8bit"),
    ("ll008_bad_sft_trainer.py", "a100-40gb", "per_device_train_batch_size=4 -> 2 with gradient_accumulation_steps 2 -> 4"),
])
def test_yaml_and_trl_changes_are_written_in_the_files_own_keys(name, gpu, key):
    found, _ = _ll008(RULES / name, gpu=gpu)
    assert len(found) == 1 and key in found[0].message, found[0].message


def test_llama_factory_full_fine_tune_points_at_the_model_and_names_a_larger_gpu():
    path = RULES / "ll008_bad_llama_factory.yaml"
    f = _ll008(path, gpu="a100-40gb")[0][0]
    assert f.span.line == _line(path, "model_name_or_path:")
    assert "No change lintlora knows of" in f.message and "smallest catalogued GPU" in f.message


def test_sharded_runs_are_not_judged_on_one_device():
    assert _ll008(RULES / "traps" / "ll008_deepspeed_zero3.py", gpu="rtx4090")[0] == []


def test_device_map_auto_caps_the_verdict_at_a_warning(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(QLORA_70B.read_text().replace("quantization_config=bnb,", 'quantization_config=bnb, device_map="auto",'))
    found, _ = _ll008(path, gpu="rtx4090")
    assert len(found) == 1 and found[0].severity.value == "warning" and 'device_map="auto"' in found[0].message


def test_a_file_that_does_not_train_gets_no_verdict(tmp_path):
    path = tmp_path / "infer.py"
    path.write_text('from transformers import AutoModelForCausalLM\n'
                    'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-70B")\n'
                    'print(model.generate(inputs))\n')
    assert _ll008(path, gpu="t4")[0] == []


def test_the_searches_return_the_largest_value_that_fits():
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.memory import EstimateInputs, estimate_memory
    from lintlora.estimate.verdict import largest_batch, longest_sequence

    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    e = estimate_memory(EstimateInputs(batch_size=4, seq_len=1024, gradient_checkpointing=True), arch,
                        gpu_memory_bytes=24 * 2**30)
    for found, field in ((largest_batch(e, arch), "batch_size"), (longest_sequence(e, arch), "seq_len")):
        n = found.value
        assert n is not None and 1 <= n < found.high
        from dataclasses import replace

        assert estimate_memory(replace(e.inputs, **{field: n}), arch).device_bytes <= 24 * 2**30
        assert estimate_memory(replace(e.inputs, **{field: n + 1}), arch).device_bytes > 24 * 2**30
        assert found.estimates <= found.high.bit_length() + 2


def test_ll008_has_bad_and_good_fixtures_in_the_styles_people_write():
    names = {p.name for p in RULES.glob("ll008_*")}
    assert {"ll008_bad_batch_trainer.py", "ll008_bad_sft_trainer.py", "ll008_bad_notebook.ipynb",
            "ll008_bad_axolotl.yml", "ll008_bad_llama_factory.yaml", "ll008_good_qlora_70b_80gb.py"} <= names


def test_the_divisor_search_is_bounded_and_exact():
    from lintlora.rules.ll008_does_not_fit import _largest_divisor

    assert _largest_divisor(32, 3) == 2 and _largest_divisor(32, 16) == 16 and _largest_divisor(7, 6) == 1
    big_prime = 1_000_003
    assert _largest_divisor(big_prime * 2, 10**6) == 2  # no divisor in the window: the small ones
