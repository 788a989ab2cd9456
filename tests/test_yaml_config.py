"""extract_config: dialect detection over every config fixture, attribution, and non-configs."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.extract.dialects import DIALECT_NAMES, config_key, yaml_snippet
from lintlora.extract.yaml_config import extract_config, looks_like_training_config
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def setup_of(rel: str, *, explicit: bool = True) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"), explicit=explicit)
    return setup


# file -> (dialect, framework, kind)
EXPECTED = {
    "axolotl/jamba__qlora_fsdp_large.yaml": ("axolotl", "axolotl", "yaml"),
    "axolotl/llama-2__lora.yml": ("axolotl", "axolotl", "yaml"),
    "axolotl/llama-2__qlora.yml": ("axolotl", "axolotl", "yaml"),
    "axolotl/mistral__qlora.yml": ("axolotl", "axolotl", "yaml"),
    "axolotl/openllama-3b__qlora.yml": ("axolotl", "axolotl", "yaml"),
    "axolotl/pythia__lora.yml": ("axolotl", "axolotl", "yaml"),
    "hf-json/qlora__llama3-8b-sft-qlora.json": ("firefly", "unsloth", "json"),
    "litgpt/gemma-7b__lora.yaml": ("litgpt", "litgpt", "yaml"),
    "litgpt/llama-3.1-8b__qlora.yaml": ("litgpt", "litgpt", "yaml"),
    "litgpt/mistral-7b__lora.yaml": ("litgpt", "litgpt", "yaml"),
    "llama-factory/lora_single_gpu__llama3_lora_sft.yaml": ("llama-factory", "llama-factory",
                                                           "yaml"),
    "llama-factory/train_lora__qwen3_lora_sft.yaml": ("llama-factory", "llama-factory", "yaml"),
    "llama-factory/train_qlora__quantization.yaml": ("llama-factory-v1", "llama-factory",
                                                     "yaml"),
    "torchtune/llama3_1__8B_lora.yaml": ("torchtune", "torchtune", "yaml"),
    "torchtune/llama3_1__8B_qlora_single_device.yaml": ("torchtune", "torchtune", "yaml"),
    "torchtune/mistral__7B_lora_single_device.yaml": ("torchtune", "torchtune", "yaml"),
    "trl/cli_configs__example_config.yaml": ("trl", "trl", "yaml"),
    "chatglm/chatglm3__lora.yaml": ("chatglm-finetune", "transformers", "yaml"),
    "chatglm/chatglm3__ptuning_v2.yaml": ("chatglm-finetune", "transformers", "yaml"),
    "chatglm/chatglm3__sft.yaml": ("chatglm-finetune", "transformers", "yaml"),
    "chatglm/glm4__lora.yaml": ("chatglm-finetune", "transformers", "yaml"),
    "bad/axolotl_gc_off.yml": ("axolotl", "axolotl", "yaml"),
    "bad/axolotl_gc_absent.yml": ("axolotl", "axolotl", "yaml"),
    "bad/axolotl_embed_targets.yml": ("axolotl", "axolotl", "yaml"),
    "bad/llama_factory_gc_disabled.yaml": ("llama-factory", "llama-factory", "yaml"),
    "bad/torchtune_no_ac.yaml": ("torchtune", "torchtune", "yaml"),
    "bad/trl_qlora_fp16.yaml": ("trl", "trl", "yaml"),
    "bad/generic_blog.yaml": ("generic", "transformers", "yaml"),
    "good/axolotl_gc_offload.yml": ("axolotl", "axolotl", "yaml"),
    "good/axolotl_fsdp_ac.yml": ("axolotl", "axolotl", "yaml"),
    "good/axolotl_suppressed.yml": ("axolotl", "axolotl", "yaml"),
    "good/llama_factory_hqq.yaml": ("llama-factory", "llama-factory", "yaml"),
    "good/torchtune_ac.yaml": ("torchtune", "torchtune", "yaml"),
    "good/litgpt_multi_gpu.yaml": ("litgpt", "litgpt", "yaml"),
    "good/trl_peft_bf16.yaml": ("trl", "trl", "yaml"),
    "good/training_args.json": ("hf-training-args", "transformers", "json"),
}


def _config_files() -> list[str]:
    return sorted(str(p.relative_to(CONFIGS)) for p in CONFIGS.rglob("*")
                  if p.suffix in (".yaml", ".yml", ".json"))


def test_every_config_fixture_has_an_expectation():
    others = {f for f in _config_files() if f.startswith("other/")}
    assert set(_config_files()) - others == set(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_dialect_framework_and_kind(rel):
    setup = setup_of(rel)
    assert (setup.dialect, setup.framework, setup.kind) == EXPECTED[rel]
    assert setup.dialect in DIALECT_NAMES
    assert setup.anchor is not None and (setup.anchor.line, setup.anchor.column) == (1, 1)
    assert setup.path.endswith(rel)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_every_written_setting_points_into_the_file(rel):
    """Each value read from the file carries its key's line and a value span on or after it."""
    setup = setup_of(rel)
    lines = (CONFIGS / rel).read_text(encoding="utf-8").splitlines()
    for section in (setup.model, setup.quantization, setup.lora, setup.training):
        if section is None:
            continue
        for name, s in section.settings():
            if s.origin is Origin.LITERAL and s.key_span is not None:
                assert 1 <= s.key_span.line <= len(lines), (name, s)
                assert s.span is not None and s.span.line >= s.key_span.line, (name, s)
                assert s.span.path == setup.path
            if s.origin is Origin.LIBRARY_DEFAULT:
                assert s.source, f"{rel}: default {name} has no citation"
                assert s.span is None


def test_sources_tsv_attributes_every_fixture():
    with open(CONFIGS / "SOURCES.tsv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    listed = {r["file"] for r in rows}
    assert listed == set(_config_files())
    for r in rows:
        if not r["file"].startswith(("bad/", "good/", "other/")):
            assert len(r["commit"]) == 40 and "/" in r["repo"], r


# ---- not a config ----------------------------------------------------------------------------
@pytest.mark.parametrize("rel", ["other/mkdocs.yml", "other/workflow.yml"])
def test_other_yaml_is_not_a_training_config(rel):
    with pytest.raises(NotATrainingConfig) as info:
        setup_of(rel)
    assert "keys" in str(info.value)
    with pytest.raises(NotATrainingConfig):
        setup_of(rel, explicit=False)


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ("# nothing\n", "empty"),
    ("- a\n- b\n", "list"),
    ("just a string\n", "single value"),
])
def test_degenerate_documents(text, reason):
    with pytest.raises(NotATrainingConfig) as info:
        extract_config("x.yaml", text)
    assert reason in str(info.value)


def test_folder_scan_skips_files_without_training_keys_before_parsing():
    # Invalid YAML (a Helm template) in a folder scan is skipped, not reported as an error...
    helm = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Values.name }}\n  x: [\n"
    assert not looks_like_training_config(helm)
    with pytest.raises(NotATrainingConfig):
        extract_config("chart/service.yaml", helm, explicit=False)
    # ...but named explicitly it is parsed and its syntax error reported.
    with pytest.raises(ExtractError):
        extract_config("chart/service.yaml", helm, explicit=True)


def test_folder_scan_still_reports_a_broken_training_config():
    broken = "base_model: meta-llama/Llama-2-7b-hf\nlora_target_modules: [q_proj, v_proj\n"
    assert looks_like_training_config(broken)
    with pytest.raises(ExtractError) as info:
        extract_config("train.yml", broken, explicit=False)
    assert info.value.line == 3 and info.value.code == "LL000"


def test_generic_dialect_needs_more_evidence_in_folder_scans():
    text = "lora_r: 8\nlora_alpha: 16\n"
    assert setup_of_text(text).dialect == "generic"
    with pytest.raises(NotATrainingConfig):
        extract_config("x.yaml", text, explicit=False)


def setup_of_text(text: str, path: str = "cfg.yaml", explicit: bool = True) -> TrainingSetup:
    [setup] = extract_config(path, text, explicit=explicit)
    return setup


def test_hostile_input_through_extract_config_is_an_extract_error():
    start = time.perf_counter()
    with pytest.raises(ExtractError):
        extract_config("x.yaml", "lora_r: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(ExtractError):
        extract_config("x.yaml", "lora_r: 8\n" + "x" * (60 * 2**20))
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize("text", [
    "lora_r: [1, 2]\nlora_alpha: {a: 1}\nbase_model: 7\nadapter: lora\nsequence_len: many\n",
    "model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n  lora_rank: x\n"
    "  lora_attn_modules: q_proj\nbatch_size: ${missing}\ndtype: 9\n",
    "checkpoint_dir: 5\nprecision: 12\nquantize: bnb.bogus\ndevices: auto\nlora_r: '-'\n"
    "train: 3\n",
    "model_name_or_path: [a]\nfinetuning_type: lora\nlora_rank: big\ncutoff_len: null\n"
    "quantization_bit: four\ndo_train: maybe\n",
])
def test_wrong_types_become_unknown_settings_not_errors(text):
    setup = setup_of_text(text)
    unknown = [s for sec in (setup.model, setup.lora, setup.training, setup.quantization)
               if sec is not None for _, s in sec.settings()
               if not s.known and s.key_span is not None]
    assert unknown, "a wrongly typed value should be kept as unknown, with its key"
    for s in unknown:
        assert s.expr, s


# ---- key names for fixes ---------------------------------------------------------------------
def test_config_keys_and_snippets_speak_each_dialect():
    gc = "training.gradient_checkpointing"
    assert yaml_snippet("axolotl", gc, True) == "gradient_checkpointing: true"
    assert yaml_snippet("torchtune", gc, True) == "enable_activation_checkpointing: True"
    assert yaml_snippet("llama-factory", gc, True) == "disable_gradient_checkpointing: false"
    assert config_key("litgpt", gc) is None and yaml_snippet("litgpt", gc, True) is None
    assert yaml_snippet("torchtune", "training.bf16", True) == "dtype: bf16"
    assert yaml_snippet("litgpt", "training.bf16", True) == "precision: bf16-true"
    assert config_key("axolotl", "training.per_device_train_batch_size") == "micro_batch_size"
    assert config_key("llama-factory", "training.max_seq_length") == "cutoff_len"
    assert config_key(None, gc) is None


@pytest.mark.parametrize("body", [
    "base_model: x/y\nadapter: lora\nmicro_batch_size: -1\nlora_r: 0\nsequence_len: .inf\n",
    "base_model: x/y\nadapter: lora\nmicro_batch_size: 99999999999999999999999\n"
    "lora_r: .nan\nsequence_len: 1e400\n",
])
def test_nonsense_numbers_stay_unknown(body):
    setup = setup_of_text(body, "axolotl.yml")
    for dotted in ("training.per_device_train_batch_size", "lora.r", "training.max_seq_length"):
        s = setup.get(dotted)
        assert not s.known and s.key_span is not None, (dotted, s)


# ---- never anything but the two documented exceptions ------------------------------------------
_FUZZ_TOKENS = ["true", "false", "null", "~", "-1", "0", "1e400", "nan", ".inf", "'x'", "[1,2]",
                "{a: 1}", "${x}", "${oc.env:A}", "&a", "*a", "<<: *a", "!!str", "!!python/name:os",
                "[", "]", "{", "}", ":", "- ", "\t", "\x00", "\udcff", "lm_head", "all", "auto",
                "offload", "bnb.nf4", "torchtune.models.x.qlora_y", "? [a]", "|", ">", "'", '"']


def _mutations():
    from hypothesis import strategies as st

    files = [CONFIGS / rel for rel in sorted(EXPECTED)]
    return st.tuples(
        st.sampled_from(files),
        st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10_000), st.integers(0, 10_000),
                           st.sampled_from(_FUZZ_TOKENS)), min_size=1, max_size=5),
        st.booleans())


def test_mutated_fixtures_raise_only_documented_errors():
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=400, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(_mutations())
    def run(case):
        path, ops, explicit = case
        lines = path.read_text(encoding="utf-8").split("\n")
        for op, i, j, token in ops:
            if not lines:
                break
            i %= len(lines)
            j %= len(lines)
            if op == 0:
                del lines[i]
            elif op == 1:
                lines.insert(i, lines[j])
            elif op == 2:
                lines[i], lines[j] = lines[j], lines[i]
            elif op == 3:
                parts = lines[i].split(" ")
                parts[j % len(parts)] = token
                lines[i] = " ".join(parts)
            else:
                lines = lines[:i]
        text = "\n".join(lines)
        start = time.perf_counter()
        try:
            extract_config(str(path), text, explicit=explicit)
        except (ExtractError, NotATrainingConfig):
            pass
        assert time.perf_counter() - start < 2.0

    run()


def test_a_saved_adapter_config_is_not_a_training_config():
    adapter_config = ('{"base_model_name_or_path": "meta-llama/Llama-2-7b-hf", "peft_type": "LORA",'
                      ' "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],'
                      ' "lora_dropout": 0.05, "task_type": "CAUSAL_LM"}')
    with pytest.raises(NotATrainingConfig):
        extract_config("adapter_config.json", adapter_config)


def test_base_model_with_a_single_shared_key_is_not_taken_for_axolotl():
    s = setup_of_text("base_model: meta-llama/Llama-2-7b-hf\nlora_r: 8\nlora_alpha: 16\n")
    assert s.dialect == "generic"


MULTI = """\
base_model: meta-llama/Llama-2-7b-hf
adapter: lora
gradient_checkpointing: false
---
# the second run
base_model: mistralai/Mistral-7B-v0.1
adapter: qlora
load_in_4bit: true
"""


def test_each_document_of_a_stream_is_a_setup():
    """A `---` stream is read whole: one setup per training-config document, the later ones
    anchored at their own first line (not silently only the first document)."""
    first, second = extract_config("multi.yaml", MULTI)
    assert first.get("model.name_or_path").value == "meta-llama/Llama-2-7b-hf"
    assert second.get("model.name_or_path").value == "mistralai/Mistral-7B-v0.1"
    assert second.get("model.name_or_path").span.line == 6
    assert (first.anchor.line, second.anchor.line) == (1, 6)
    assert second.get("quantization.bits").value == 4


def test_documents_of_no_dialect_in_a_stream_are_passed_over():
    text = "kind: Job\nmetadata: {name: x}\n---\n" + MULTI.split("---\n")[0]
    [setup] = extract_config("mixed.yaml", text)
    assert setup.dialect == "axolotl" and setup.anchor.line == 4
    with pytest.raises(NotATrainingConfig, match="each of its 2 documents"):
        extract_config("k8s.yaml", "kind: Job\n---\nkind: Service\n")
    with pytest.raises(NotATrainingConfig, match="empty"):
        extract_config("empty.yaml", "---\n---\n")
