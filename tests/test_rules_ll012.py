"""LL012 target-modules-unmatched: peft's matching on catalogued architectures, the names the
list meant, and the silences (unknown models, all-linear, matching patterns, unresolved values)."""

from __future__ import annotations

import pytest
from rules_support import ROOT, Setting, ctx, lint, lit, lora, model, run, setup, training

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.params import target_matches
from lintlora.findings import Severity
from lintlora.rules.ll012_target_modules_unmatched import TargetModulesUnmatched as R
from lintlora.rules.ll012_target_modules_unmatched import names_known, unmatched_entries
from lintlora.settings import Settings
from lintlora.training_setup import Lora, Origin

LLAMA7 = ("k_proj", "q_proj", "v_proj", "o_proj", "gate_proj", "down_proj", "up_proj")


def lora_setup(name, targets, r=16, framework="transformers", kind="python", **lora_fields):
    return setup(kind=kind, framework=framework, model=model(name),
                 lora=lora(r=r, targets=targets, **lora_fields),
                 training=training(gradient_checkpointing=lit(True, 10)))


def test_peft_matching_rules():
    path = "model.layers.0.self_attn.q_proj"
    assert target_matches(path, ["q_proj"]) and target_matches(path, ["self_attn.q_proj"])
    assert target_matches(path, [path])
    assert not target_matches(path, ["proj"]) and not target_matches(path, ["_proj"])
    assert target_matches(path, r".*\.q_proj") and not target_matches(path, "q_proj")  # full match


def test_llama_names_on_phi3_warn_with_both_counts_and_the_fused_names():
    """microsoft/PhiCookBook#185 (BN11): 8.9M trainable as written, 25.2M with the fused names."""
    [f] = run(R, lora_setup("microsoft/Phi-3-mini-4k-instruct", LLAMA7), ctx("a100-80gb"))
    assert (f.code, f.severity, f.span.line) == ("LL012", Severity.WARNING, 7)
    assert "8,912,896" in f.message and "25,165,824" in f.message
    assert "`qkv_proj` and `gate_up_proj`" in f.message and "adapts only `o_proj` and `down_proj`" in f.message
    assert "qkv_proj" in f.fix and "gate_up_proj" in f.fix


def test_none_matching_is_an_error_quoting_peft():
    """hiyouga/LlamaFactory#2401 (BN12): Qwen-1 has c_attn, not q_proj/v_proj."""
    [f] = run(R, lora_setup("Qwen/Qwen-7B", ("q_proj", "v_proj")), ctx())
    assert f.severity is Severity.ERROR
    assert "not found in the base model" in f.message and "`c_attn`" in f.message
    assert f.fix and "c_attn" in f.fix


@pytest.mark.parametrize("name, meant", [
    ("baichuan-inc/Baichuan2-7B-Base", "W_pack"),
    ("THUDM/chatglm3-6b", "query_key_value"),
    ("tiiuae/falcon-7b", "query_key_value"),
    ("bigscience/bloom-7b1", "query_key_value"),
    ("EleutherAI/pythia-1b", "query_key_value"),
    ("microsoft/phi-4", "qkv_proj"),
])
def test_the_fused_attention_names_are_suggested(name, meant):
    arch = resolve_architecture(name)
    u = unmatched_entries(["q_proj", "v_proj"], arch)
    assert u is not None and meant in u.meant, (arch.name, u and u.meant)


@pytest.mark.parametrize("targets", [
    "all-linear", r".*\.(qkv_proj|o_proj)", ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"),
    ("o_proj", "all-linear"), (), ("q_porj",), ("mlp", "input_layernorm"),
])
def test_silent_for_all_linear_matching_regexes_fused_names_and_unknown_names(targets):
    assert run(R, lora_setup("microsoft/Phi-3-mini-4k-instruct", targets), ctx()) == []


def test_a_regex_matching_nothing_is_an_error():
    [f] = run(R, lora_setup("microsoft/Phi-3-mini-4k-instruct", r".*\.(q_proj|v_proj)"), ctx())
    assert f.severity is Severity.ERROR and "matches no module" in f.message


def test_silent_when_the_model_is_unknown_or_rough_or_multimodal():
    s = lora_setup("microsoft/Phi-3-mini-4k-instruct", LLAMA7)
    assert run(R, s, ctx(known_model=False)) == []
    assert run(R, lora_setup("acme/house-model", LLAMA7), ctx(params=7e9)) == []
    assert not names_known(resolve_architecture("Qwen/Qwen2-VL-2B-Instruct"))
    assert run(R, lora_setup("Qwen/Qwen2-VL-2B-Instruct", ("q_proj", "fc1", "fc2")), ctx()) == []


def test_silent_for_unresolved_values_the_peft_default_and_options_that_change_matching():
    phi3 = "microsoft/Phi-3-mini-4k-instruct"
    unresolved = setup(model=model(phi3), lora=Lora(r=lit(16, 7), target_modules=Setting.unknown("cfg['t']")))
    default = setup(model=model(phi3), lora=Lora(r=lit(16, 7), target_modules=Setting.library_default(None, "peft")))
    excluded = lora_setup(phi3, LLAMA7, extra={"exclude_modules": lit(["o_proj"], 7)})
    layers = lora_setup(phi3, LLAMA7, extra={"layers_to_transform": lit([0, 1], 7)})
    for s in (unresolved, default, excluded, layers):
        assert run(R, s, ctx()) == []


def test_silent_for_unsloth_whose_phi3_uploads_take_llama_names():
    assert run(R, lora_setup("unsloth/Phi-3-mini-4k-instruct", LLAMA7), ctx()) == []
    assert run(R, lora_setup("microsoft/Phi-3-mini-4k-instruct", LLAMA7, framework="unsloth"), ctx()) == []


def test_silent_for_torchtune_and_litgpt_and_inference():
    assert run(R, lora_setup("microsoft/Phi-3-mini-4k-instruct", LLAMA7, framework="torchtune", kind="yaml"),
               ctx()) == []
    inference = lora_setup("microsoft/Phi-3-mini-4k-instruct", LLAMA7).replace(is_training=False)
    assert run(R, inference, ctx()) == []


def test_a_launch_default_list_is_info():
    targets = Setting(("q_proj", "v_proj"), Origin.ARGPARSE_DEFAULT, None, None, "--lora_target_modules")
    s = setup(model=model("Qwen/Qwen-7B"), lora=Lora(r=lit(8, 7), target_modules=targets),
              training=training(gradient_checkpointing=lit(True, 10)))
    [f] = run(R, s, ctx())
    assert f.severity is Severity.INFO and "--lora_target_modules" in f.message


def test_yaml_keys_are_named_as_written():
    s = lora_setup("Qwen/Qwen-7B", ("q_proj", "v_proj"), framework="llama-factory", kind="yaml")
    s = s.replace(lora=Lora(r=lit(8, 5), target_modules=Setting(("q_proj", "v_proj"), Origin.LITERAL,
                                                                  None, None, None, "lora_target")))
    [f] = run(R, s, ctx())
    assert f.message.startswith("lora_target lists") and "lora_target=c_attn" in f.fix


def test_the_notebook_fixture(tmp_path):
    path = ROOT / "fixtures" / "rules" / "ll012_bad_phi3_notebook.ipynb"
    result = lint(path, Settings(gpu="a100-80gb"))
    assert result.errors == []
    assert [(f.code, f.severity, f.span.cell) for f in result.findings] == [("LL012", Severity.WARNING, 4)]
    assert "25,165,824" in result.findings[0].message
