"""LL010 precision-unsupported-by-gpu: hand-built setups, the GPU catalog's compute capability,
the YAML dialects' tf32 key, and LL002/LL010 never judging one setting both ways."""

from __future__ import annotations

import json
import re

import pytest
from rules_support import ROOT, Setting, call, ctx, lint, lit, lora, model, qlora4, run, setup, training

from lintlora.estimate.gpus import find_gpu, list_gpus
from lintlora.findings import Severity
from lintlora.rules.ll002_fp16_instead_of_bf16 import Fp16InsteadOfBf16
from lintlora.rules.ll010_precision_unsupported_by_gpu import PrecisionUnsupportedByGpu as R
from lintlora.settings import Settings
from lintlora.training_setup import Origin


def bf16_setup(**kw):
    return setup(model=model(), lora=lora(), training=training(bf16=lit(True, 11, 5)), **kw)


# ---- the GPU catalog ----------------------------------------------------------------------------

def test_every_catalogued_card_has_a_cited_compute_capability():
    raw = json.loads((ROOT / "lintlora" / "data" / "gpus.json").read_text(encoding="utf-8"))
    tags = set(raw["source_index"])
    for gpu in list_gpus():
        assert gpu.compute_capability_source, gpu.name
        if gpu.vendor == "AMD":
            assert gpu.capability is None and gpu.pre_ampere is None, gpu.name
            continue
        assert gpu.capability is not None, gpu.name
        cited = set(re.findall(r"(?:^|; )([A-Z][A-Z0-9_]*) \[", gpu.compute_capability_source))
        assert cited and cited <= tags, (gpu.name, cited - tags)


def test_bf16_support_is_compute_capability_8_or_newer_for_every_nvidia_card():
    for gpu in list_gpus():
        if gpu.capability is not None:
            assert gpu.bf16_supported is (gpu.capability >= (8, 0)), gpu.name
            assert gpu.pre_ampere is (not gpu.bf16_supported), gpu.name


@pytest.mark.parametrize("name, pre", [("t4", True), ("v100-16gb", True), ("p100", True),
                                       ("rtx2080ti", True), ("a100-80gb", False), ("rtx3090", False),
                                       ("rtx4090", False), ("l4", False), ("h100", False)])
def test_pre_ampere_cards(name, pre):
    assert find_gpu(name).pre_ampere is pre


# ---- bfloat16 -----------------------------------------------------------------------------------

def test_bf16_on_a_t4_is_a_warning_at_the_flag_saying_what_fails_and_when():
    [f] = run(R, bf16_setup(), ctx("t4"))
    assert (f.code, f.severity, f.span.line, f.span.column) == ("LL010", Severity.WARNING, 11, 5)
    assert "compute capability 7.5" in f.message and "Your setup doesn't support bf16/gpu" in f.message
    assert "torch 2.2" in f.message and "emulated" in f.message
    assert "fp16=True" in f.fix and "get_device_capability" in f.fix


@pytest.mark.parametrize("gpu", ["a100-80gb", "rtx3090", "rtx4090", "l4", "h100", "mi300x"])
def test_silent_on_cards_with_bf16_or_without_a_compute_capability(gpu):
    assert run(R, bf16_setup(), ctx(gpu)) == []


def test_silent_without_a_named_gpu_even_with_a_memory_size():
    assert run(R, bf16_setup(), ctx()) == []
    assert run(R, bf16_setup(), ctx(gpu_memory_bytes=16 * 2**30)) == []


def test_every_bf16_place_is_one_finding_and_the_fix_moves_them_all_to_float16():
    q = qlora4(bnb_4bit_compute_dtype=lit("bfloat16", 4, 60))
    s = setup(model=model(torch_dtype=lit("bfloat16", 5, 70)), quantization=q, lora=lora(),
              training=training(bf16=lit(True, 11)),
              calls=(call("autocast", 15, "torch.autocast", in_step_callback=True,
                          args={"dtype": lit("bfloat16", 15, 30)}),))
    [f] = run(R, s, ctx("v100-32gb"))
    assert f.span.line == 11
    for text in ("bf16=True", "autocast(dtype=torch.bfloat16)", "bnb_4bit_compute_dtype=torch.bfloat16",
                 "torch_dtype=torch.bfloat16"):
        assert text in f.message
    fixed = R._bf16_fixed(s, __import__("lintlora.rules.ll010_precision_unsupported_by_gpu",
                                        fromlist=["bf16_uses"]).bf16_uses(s))
    assert fixed.get("training.fp16").value is True and fixed.get("training.bf16").value is False
    assert fixed.get("model.torch_dtype").value == "float16"
    assert fixed.get("quantization.bnb_4bit_compute_dtype").value == "float16"
    assert run(R, fixed, ctx("v100-32gb")) == []


def test_accelerator_bf16_names_accelerates_own_error():
    s = setup(model=model(), lora=lora(),
              calls=(call("autocast", 4, "accelerate.Accelerator",
                          args={"dtype": lit("bfloat16", 4), "mixed_precision": lit("bf16", 4)}),))
    [f] = run(R, s, ctx("t4"))
    assert 'Accelerator(mixed_precision="bf16")' in f.message
    assert "bf16 mixed precision requires PyTorch >= 1.10 and a supported device." in f.message
    assert 'mixed_precision="fp16"' in f.fix


def test_bfloat16_weights_under_float16_autocast_are_not_bfloat16_training():
    s = setup(model=model(torch_dtype=lit("bfloat16", 5)), lora=lora(), training=training(fp16=lit(True, 9)))
    assert run(R, s, ctx("t4")) == []
    pure = setup(model=model(torch_dtype=lit("bfloat16", 5)), lora=lora(), training=training())
    [f] = run(R, pure, ctx("t4"))
    assert f.span.line == 5 and "torch_dtype=torch.bfloat16" in f.message


def test_a_bf16_autocast_outside_the_training_step_is_not_training_precision():
    s = setup(model=model(), lora=lora(), training=training(fp16=lit(True, 9)),
              calls=(call("autocast", 30, "torch.autocast", args={"dtype": lit("bfloat16", 30)}),))
    assert run(R, s, ctx("t4")) == []


def test_auto_unknown_and_inference_are_silent():
    auto = setup(kind="yaml", framework="axolotl", model=model(), lora=lora(),
                 training=training(bf16=lit("auto", 19)))
    unknown = setup(model=model(), training=training(bf16=Setting.unknown("torch.cuda.is_bf16_supported()")))
    inference = setup(model=model(torch_dtype=lit("bfloat16", 5)), is_training=False)
    for s in (auto, unknown, inference):
        assert run(R, s, ctx("t4")) == []


def test_a_launch_default_is_info_and_says_how_it_is_set():
    flag = Setting(True, Origin.ARGPARSE_DEFAULT, None, None, "--bf16")
    s = setup(model=model(), lora=lora(), training=training(bf16=flag))
    [f] = run(R, s, ctx("t4"))
    assert f.severity is Severity.INFO and "unless --bf16 is passed at launch" in f.message


def test_trls_default_bf16_is_reported_and_named_as_the_default():
    default = Setting.library_default(True, "trl trl/trainer/base_config.py")
    s = setup(framework="trl", model=model(), lora=lora(), training=training(bf16=default))
    [f] = run(R, s, ctx("t4"))
    assert "TRL's configs turn on" in f.message and f.span.line == 10  # the config call
    assert f.rests_on


@pytest.mark.parametrize("framework, fix", [("axolotl", "`fp16: true`"), ("llama-factory", "`fp16: true`"),
                                            ("torchtune", "`dtype: fp32`"), ("litgpt", "`precision: 16-mixed`")])
def test_yaml_fixes_per_framework(framework, fix):
    s = setup(kind="yaml", framework=framework, model=model(), lora=lora(), training=training(bf16=lit(True, 9)))
    [f] = run(R, s, ctx("t4"))
    assert fix in f.fix


# ---- TF32 and FlashAttention ----------------------------------------------------------------------

def test_tf32_is_an_error_raised_when_the_arguments_are_built():
    s = setup(model=model(), lora=lora(), training=training(extra={"tf32": lit(True, 12, 9)}))
    [f] = run(R, s, ctx("t4"))
    assert (f.severity, f.span.line) == (Severity.ERROR, 12)
    assert "--tf32 requires Ampere or a newer GPU arch" in f.message
    assert run(R, s, ctx("a100-80gb")) == []
    auto = setup(kind="yaml", framework="axolotl", model=model(), lora=lora(),
                 training=training(extra={"tf32": lit("auto", 12)}))
    assert run(R, auto, ctx("t4")) == []


def test_flash_attention_2_is_an_error_at_the_first_forward():
    s = setup(model=model(attn_implementation=lit("flash_attention_2", 5, 40)), lora=lora(),
              training=training(fp16=lit(True, 9)))
    [f] = run(R, s, ctx("rtx2080ti"))
    assert (f.severity, f.span.line) == (Severity.ERROR, 5)
    assert "FlashAttention only supports Ampere GPUs or newer." in f.message
    assert 'attn_implementation="sdpa"' in f.fix
    sdpa = setup(model=model(attn_implementation=lit("sdpa", 5)), lora=lora(), training=training(fp16=lit(True, 9)))
    assert run(R, sdpa, ctx("rtx2080ti")) == []


def test_llama_factory_fa2_is_a_warning_because_it_falls_back_without_flash_attn():
    s = setup(kind="yaml", framework="llama-factory", model=model(attn_implementation=lit("flash_attention_2", 7)),
              lora=lora(), training=training(fp16=lit(True, 9)))
    [f] = run(R, s, ctx("t4"))
    assert f.severity is Severity.WARNING and "falls back" in f.message and "flash_attn: sdpa" in f.fix


# ---- LL002 is the mirror: never both on one setting -----------------------------------------------

def test_ll002_and_ll010_never_fire_on_the_same_gpu():
    """A setup with float16 and bfloat16 places: on every catalogued card at most one of the two
    rules reports, and LL002 never recommends bfloat16 where LL010 calls it unsupported."""
    mixed = setup(model=model(torch_dtype=lit("bfloat16", 5)), lora=lora(), quantization=qlora4(
        bnb_4bit_compute_dtype=lit("bfloat16", 4)), training=training(fp16=lit(True, 11)))
    for gpu in list_gpus():
        c = ctx(gpu.name)
        ll002 = [f for f in run(Fp16InsteadOfBf16, mixed, c) if f.severity is not Severity.INFO]
        ll010 = run(R, mixed, c)
        assert not (ll002 and ll010), gpu.name
        if gpu.pre_ampere:
            assert ll010 and not ll002, gpu.name


# ---- the YAML dialects carry tf32 ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "base_model: NousResearch/Llama-2-7b-hf\nadapter: lora\nlora_r: 8\nlora_alpha: 16\n"
    "lora_target_linear: true\nmicro_batch_size: 1\nsequence_len: 512\ngradient_checkpointing: true\n"
    "fp16: true\ntf32: true\ndatasets:\n  - path: x\n    type: alpaca\n",
    "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"
    "lora_target: all\ndataset: alpaca_en_demo\ntemplate: qwen\nfp16: true\ntf32: true\n",
    "model_name_or_path: Qwen/Qwen2.5-0.5B\noutput_dir: out\nper_device_train_batch_size: 1\n"
    "use_peft: true\nlora_target_modules: all-linear\nfp16: true\ntf32: true\nmax_length: 512\n",
])
def test_tf32_in_a_yaml_config_is_an_error_on_a_t4(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    result = lint(path, Settings(gpu="t4"))
    found = [f for f in result.findings if f.code == "LL010"]
    assert [(f.severity, f.span.line) for f in found] == [(Severity.ERROR, text.count("\n", 0, text.index("tf32")) + 1)]
    assert [f for f in lint(path, Settings(gpu="a100-80gb")).findings if f.code == "LL010"] == []


def test_list_gpus_shows_the_compute_capability_and_its_source():
    from click.testing import CliRunner

    from lintlora.estimate.command import estimate_cmd

    table = CliRunner().invoke(estimate_cmd, ["--list-gpus"]).output.splitlines()
    assert table[0].split()[-1] == "cc"
    assert next(line for line in table if "Tesla T4" in line).split()[-1] == "7.5"
    data = json.loads(CliRunner().invoke(estimate_cmd, ["--list-gpus", "--format", "json"]).output)
    t4 = next(d for d in data if d["name"] == "Tesla T4")
    assert t4["compute_capability"] == "7.5" and "NVCC" in t4["compute_capability_source"]
