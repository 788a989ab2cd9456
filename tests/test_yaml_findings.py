"""Findings on YAML/JSON configs through the real pipeline (lintlora.engine.lint_paths).

Pinned by code AND line. The same seven rules run on configs as on scripts; these tests check
that what the dialects extract makes them point at the right line of the config.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lintlora.engine import lint_paths
from lintlora.settings import Settings

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"
RULES = {"LL001", "LL002", "LL003", "LL004", "LL005", "LL006", "LL007"}


def findings(rel: str, **settings) -> set[tuple[str, int]]:
    result = lint_paths([str(CONFIGS / rel)], Settings(**settings))
    assert not result.errors, result.errors
    return {(f.code, f.span.line) for f in result.findings if f.code in RULES}


# (code, line) expected with no GPU named
EXPECTED = {
    # our own bad/good configs
    "bad/axolotl_gc_off.yml": {("LL001", 16)},
    "bad/axolotl_gc_absent.yml": {("LL001", 1)},
    "bad/axolotl_embed_targets.yml": {("LL003", 7), ("LL003", 14)},
    "bad/llama_factory_gc_disabled.yaml": {("LL001", 9), ("LL007", 21)},
    "bad/torchtune_no_ac.yaml": {("LL001", 1)},
    "bad/trl_qlora_fp16.yaml": {("LL001", 13), ("LL002", 14)},
    "bad/generic_blog.yaml": {("LL003", 9), ("LL001", 15), ("LL007", 16)},
    "good/axolotl_gc_offload.yml": set(),
    "good/axolotl_fsdp_ac.yml": set(),
    "good/axolotl_suppressed.yml": set(),
    "good/llama_factory_hqq.yaml": set(),
    "good/torchtune_ac.yaml": set(),
    "good/litgpt_multi_gpu.yaml": set(),
    "good/trl_peft_bf16.yaml": set(),
    "good/training_args.json": set(),
    # the public corpus
    "axolotl/jamba__qlora_fsdp_large.yaml": set(),
    "axolotl/llama-2__lora.yml": set(),
    "axolotl/llama-2__qlora.yml": set(),
    "axolotl/mistral__qlora.yml": set(),
    "axolotl/openllama-3b__qlora.yml": {("LL002", 38)},
    "axolotl/pythia__lora.yml": {("LL001", 1)},
    "hf-json/qlora__llama3-8b-sft-qlora.json": {("LL002", 25), ("LL007", 27)},
    "llama-factory/lora_single_gpu__llama3_lora_sft.yaml": {("LL002", 32)},
    "llama-factory/train_lora__qwen3_lora_sft.yaml": set(),
    "llama-factory/train_qlora__quantization.yaml": set(),
    "torchtune/llama3_1__8B_lora.yaml": {("LL001", 100)},
    "torchtune/llama3_1__8B_qlora_single_device.yaml": set(),
    "torchtune/mistral__7B_lora_single_device.yaml": {("LL003", 42)},  # apply_lora_to_output
    "trl/cli_configs__example_config.yaml": set(),
    "litgpt/gemma-7b__lora.yaml": {("LL003", 44)},  # lora_head: true
    "litgpt/llama-3.1-8b__qlora.yaml": set(),
    "litgpt/mistral-7b__lora.yaml": set(),
}
# litgpt on one device has checkpointing off and no config key to turn it on; whether LL001
# reports that (at line 1, naming litgpt's behaviour) is the rule's decision, so it is allowed
# but not required here.
OPTIONAL = {("LL001", 1)}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_findings_by_code_and_line(rel):
    got = findings(rel)
    if rel.startswith("litgpt/"):
        got -= OPTIONAL
    assert got == EXPECTED[rel]


def test_gc_off_points_at_the_gradient_checkpointing_false_line():
    result = lint_paths([str(CONFIGS / "bad/axolotl_gc_off.yml")], Settings())
    [f] = [f for f in result.findings if f.code == "LL001"]
    line = (CONFIGS / "bad/axolotl_gc_off.yml").read_text().splitlines()[f.span.line - 1]
    assert line.startswith("gradient_checkpointing: false")
    assert f.span.column == line.index("false") + 1


def test_gc_absent_points_at_the_top_and_names_axolotls_default():
    result = lint_paths([str(CONFIGS / "bad/axolotl_gc_absent.yml")], Settings())
    [f] = [f for f in result.findings if f.code == "LL001"]
    assert (f.span.line, f.span.column) == (1, 1)
    assert "axolotl" in f.message and "gradient_checkpointing" in f.message


@pytest.mark.parametrize("rel", ["llama-factory/lora_single_gpu__llama3_lora_sft.yaml",
                                 "llama-factory/train_lora__qwen3_lora_sft.yaml"])
def test_llama_factory_without_disable_key_has_no_ll001(rel):
    assert not {c for c, _ in findings(rel)} & {"LL001"}


def test_llama_factory_preprocessing_workers_are_not_dataloader_workers():
    # preprocessing_num_workers: 64 in this file, no dataloader_num_workers
    assert findings("good/llama_factory_hqq.yaml") == set()


def test_suppression_comment_on_the_line_above_the_key(tmp_path):
    src = (CONFIGS / "good/axolotl_suppressed.yml").read_text()
    assert findings("good/axolotl_suppressed.yml") == set()
    without = tmp_path / "unsuppressed.yml"
    without.write_text(src.replace("# lintlora: ignore[LL001]\n", ""))
    result = lint_paths([str(without)], Settings())
    assert {(f.code, f.span.line) for f in result.findings} >= {("LL001", 10)}


def test_fp16_on_a_bf16_gpu_is_a_warning_and_silent_on_t4():
    on_l4 = lint_paths([str(CONFIGS / "bad/trl_qlora_fp16.yaml")], Settings(gpu="l4"))
    [ll002] = [f for f in on_l4.findings if f.code == "LL002"]
    assert ll002.severity.value == "warning" and ll002.span.line == 14
    on_t4 = lint_paths([str(CONFIGS / "bad/trl_qlora_fp16.yaml")], Settings(gpu="t4"))
    assert not [f for f in on_t4.findings if f.code == "LL002"]


def test_estimates_are_attached_for_catalogued_models():
    result = lint_paths([str(CONFIGS / "bad/axolotl_gc_off.yml")], Settings(gpu="a100-80gb"))
    [f] = [f for f in result.findings if f.code == "LL001"]
    assert f.estimate is not None and f.estimate.peak_bytes
    assert f.estimate.peak_after_fix_bytes < f.estimate.peak_bytes


def test_torchtune_component_and_litgpt_dir_resolve_to_architectures():
    # on a T4 (litgpt's LL001 speaks only when the estimate does not fit the named GPU)
    for rel in ("torchtune/llama3_1__8B_lora.yaml", "litgpt/mistral-7b__lora.yaml"):
        result = lint_paths([str(CONFIGS / rel)], Settings(gpu="t4"))
        estimates = [f.estimate for f in result.findings if f.estimate is not None]
        assert estimates and all(e.peak_bytes for e in estimates), rel


def test_non_config_yaml_named_explicitly_is_a_notice_and_silent_in_folder_scans(tmp_path):
    named = lint_paths([str(CONFIGS / "other/mkdocs.yml")], Settings())
    assert not named.findings and not named.errors
    assert len(named.notices) == 1 and "not a training config" in named.notices[0].message
    folder = tmp_path / "repo"
    shutil.copytree(CONFIGS / "other", folder)
    scanned = lint_paths([str(folder)], Settings())
    assert not scanned.findings and not scanned.errors and not scanned.notices


def test_hostile_yaml_is_reported_and_other_files_are_still_linted(tmp_path):
    """An alias bomb is refused by a limit (LL998, an input problem); a Python tag is not
    plain YAML data (LL000); the good file next to them is linted."""
    bomb = tmp_path / "bomb.yaml"
    lines = ['lora_r: 8', 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    bomb.write_text("\n".join(lines) + "\n")
    tagged = tmp_path / "tagged.yml"
    tagged.write_text("base_model: !!python/object/apply:os.system ['echo pwned']\n")
    good = tmp_path / "gc_off.yml"
    shutil.copy(CONFIGS / "bad/axolotl_gc_off.yml", good)
    result = lint_paths([str(bomb), str(tagged), str(good)], Settings())
    by_file = {(Path(f.span.path).name, f.code) for f in result.findings}
    assert [(Path(e.path).name, e.code) for e in result.errors] == [("bomb.yaml", "LL998")]
    assert "alias" in result.errors[0].message and "not parsed" in result.errors[0].message
    assert ("tagged.yml", "LL000") in by_file
    assert ("gc_off.yml", "LL001") in by_file
    assert not result.internal_error


def test_every_document_of_a_stream_is_linted(tmp_path):
    path = tmp_path / "runs.yml"
    path.write_text("base_model: meta-llama/Llama-2-7b-hf\nadapter: lora\n"
                    "gradient_checkpointing: false\n---\n"
                    "base_model: mistralai/Mistral-7B-v0.1\nadapter: lora\n"
                    "gradient_checkpointing: false\n")
    result = lint_paths([str(path)], Settings())
    assert [(f.code, f.span.line) for f in result.findings] == [("LL001", 3), ("LL001", 7)]
    assert [f.estimate.model for f in result.findings] == ["Llama-2-7B", "Mistral-7B-v0.1"]


def test_a_config_beyond_the_node_limit_is_an_input_problem(tmp_path):
    """LL998 (could not be linted, exit 1), not an LL000 syntax error: the YAML is valid."""
    path = tmp_path / "datasets.yml"
    path.write_text("base_model: meta-llama/Llama-2-7b-hf\nadapter: lora\ndatasets:\n"
                    + "".join(f"  - path: org/ds{i}\n    type: alpaca\n" for i in range(8000)))
    result = lint_paths([str(path)], Settings())
    assert result.findings == [] and result.files == []
    (error,) = result.errors
    assert error.code == "LL998" and "20,000 YAML nodes" in error.message and error.line > 1
    assert result.exit_code() == 1
