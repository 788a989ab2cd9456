"""False positives and misses from the new-user trial (task J), rule by rule on hand-built setups
(toy estimator, see rules_support), plus the real pipeline where the severity matters.

Policy pinned here: a finding that rests on a value the user sets at launch (an argparse or
HfArgumentParser option, a dataclass field, a function parameter, an environment variable) says
how to set it and is reported at info; weak launch evidence (``ddp_*`` arguments, a rank read
for logging) never makes LL005 fire.
"""

from __future__ import annotations

import dataclasses

import pytest
from rules_support import (
    ROOT, DataLoaderSpec, Evidence, at, call, ctx, default, lint, lit, lora, model, qlora4, run,
    settings_from_args, setup, training,
)

from lintlora import facts
from lintlora.findings import Severity
from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff as LL001
from lintlora.rules.ll002_fp16_instead_of_bf16 import Fp16InsteadOfBf16 as LL002
from lintlora.rules.ll003_broad_target_modules import BroadTargetModules as LL003
from lintlora.rules.ll004_no_trainable_parameter_report import NoTrainableParameterReport as LL004
from lintlora.rules.ll005_device_map import DeviceMap as LL005
from lintlora.rules.ll006_empty_cache_misuse import EmptyCacheMisuse as LL006
from lintlora.rules.ll007_dataloader_workers import DataloaderWorkers as LL007
from lintlora.training_setup import Lora, Origin, Setting, TrainingArgs


def launch(value, origin=Origin.ARGPARSE_DEFAULT, source="--gradient_checkpointing", line=12):
    return Setting(value, origin, at(line, 20), at(line, 5), source, "args.x")


# ---- facts: values set at launch ----------------------------------------------------------------
@pytest.mark.parametrize("origin, source, hint", [
    (Origin.ARGPARSE_DEFAULT, "--gc", "unless --gc is passed at launch"),
    (Origin.ARGPARSE_DEFAULT, "--gradient_checkpointing: a command-line option; default from x",
     "unless --gradient_checkpointing is passed at launch"),
    (Origin.ENV_DEFAULT, "$GC", "unless $GC is set at launch"),
    (Origin.DATACLASS_DEFAULT, "ScriptArgs.use_gc",
     "unless --use_gc is passed at launch (the default of ScriptArgs.use_gc)"),
    (Origin.FUNCTION_DEFAULT, "train(gc=...)", "unless another value is passed for train(gc=...)"),
])
def test_launch_hint_names_how_the_value_is_set(origin, source, hint):
    s = Setting(False, origin, None, None, source)
    assert facts.set_at_launch(s) and facts.launch_hint(s) == hint


@pytest.mark.parametrize("s", [lit(False, 3), default(False), Setting.unknown("args.gc"), None])
def test_written_values_and_library_defaults_are_not_launch_values(s):
    assert not facts.set_at_launch(s) and facts.launch_hint(s) is None


# ---- LL001 --------------------------------------------------------------------------------------
def test_ll001_on_a_launch_default_is_info_and_says_how_to_turn_it_on():
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=launch(False)))
    [f] = run(LL001, s, ctx("rtx3090"))  # does not fit as written: error before the launch policy
    assert f.severity is Severity.INFO
    assert "off unless --gradient_checkpointing is passed at launch" in f.message
    assert "pass --gradient_checkpointing at launch" in f.fix
    assert f.rests_on


def test_ll001_prepare_call_with_a_launch_argument_is_info():
    prep = call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training",
                args={"use_gradient_checkpointing": launch(False, line=6)})
    s = setup(model=model(), lora=lora(), quantization=qlora4(), training=training(), calls=(prep,))
    [f] = run(LL001, s, ctx("rtx3090"))
    assert f.severity is Severity.INFO and "unless --gradient_checkpointing" in f.message
    assert "use_gradient_checkpointing=args.x" in f.message


def test_ll001_written_false_keeps_its_severity():
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(LL001, s, ctx("rtx3090"))
    assert f.severity is Severity.ERROR and "at launch" not in f.message


def test_ll001_fsdp_activation_checkpointing_counts():
    cfg = {"activation_checkpointing": True, "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}
    t = training(fsdp=lit("full_shard auto_wrap", 11), extra={"fsdp_config": lit(cfg, 12)})
    s = setup(model=model(), lora=lora(), training=t)
    assert facts.checkpointing(s).value is True and run(LL001, s) == []
    # the prefixed spelling transformers also accepts
    t2 = dataclasses.replace(t, extra={"fsdp_config": lit({"fsdp_activation_checkpointing": True}, 12)})
    assert run(LL001, setup(model=model(), lora=lora(), training=t2)) == []
    # FSDP on with a config file lintlora does not read: undecided, silent
    t3 = dataclasses.replace(t, extra={"fsdp_config": lit("fsdp.json", 12)})
    assert facts.checkpointing(setup(training=t3)).value is None
    # no FSDP: fsdp_config alone changes nothing
    t4 = training(extra={"fsdp_config": lit(cfg, 12)})
    assert facts.checkpointing(setup(model=model(), training=t4)).value is False


def test_ll001_needs_a_transformers_or_peft_model_in_a_hand_written_loop():
    resnet = setup(framework="torch", calls=(call("empty_cache", 14, "torch.cuda.empty_cache"),))
    assert facts.checkpointing(resnet).value is None and run(LL001, resnet) == []
    hf = setup(framework="torch", model=model())
    assert facts.checkpointing(hf).value is False and len(run(LL001, hf)) == 1


def test_ll001_set_training_reset_names_the_call():
    src = ("transformers src/transformers/training_args.py (5.24.0), TrainingArguments.set_training: "
           "the call at line 9 leaves `activation_checkpointing` out, which resets it to False")
    gc = Setting(False, Origin.LIBRARY_DEFAULT, None, at(9), src)
    [f] = run(LL001, setup(model=model(), lora=lora(), training=training(gradient_checkpointing=gc)))
    assert f.span.line == 9 and "set_training(...) resets gradient_checkpointing" in f.message
    assert "to the set_training(...) call" in f.fix


# ---- LL002 / LL003 / LL007 under the launch policy ------------------------------------------------
def test_ll002_fp16_from_a_launch_option_is_info():
    s = setup(model=model(), training=training(fp16=launch(True, source="--fp16")))
    [f] = run(LL002, s, ctx("a100-80gb"))
    assert f.severity is Severity.INFO and "fp16=True applies unless --fp16 is passed at launch" in f.message
    written = setup(model=model(), training=training(fp16=lit(True, 12)))
    [g] = run(LL002, written, ctx("a100-80gb"))
    assert g.severity is Severity.WARNING


def test_ll003_targets_from_a_launch_option_are_info():
    targets = launch(("q_proj", "lm_head"), source="--target_modules", line=7)
    s = setup(model=model(), lora=Lora(r=lit(8, 7), target_modules=targets, span=at(7)), training=training())
    [f] = run(LL003, s)
    assert f.severity is Severity.INFO and "unless --target_modules is passed at launch" in f.message


def test_ll007_workers_from_a_launch_option_are_info_even_with_cpus():
    t = training(dataloader_num_workers=launch(32, source="--workers"))
    [f] = run(LL007, setup(model=model(), training=t), ctx(cpus=8))
    assert f.severity is Severity.INFO and "unless --workers is passed at launch" in f.message


def test_ll007_without_cpus_names_the_limit():
    t = training(dataloader_num_workers=lit(64, 12))
    [f] = run(LL007, setup(model=model(), training=t))
    assert "more than 8 workers (the limit used when the host's CPU count is not given with --cpus)" in f.message


# ---- LL003: tokens added ------------------------------------------------------------------------
def added(kind="resize_token_embeddings"):
    return (call(kind, 9, f"model.{kind}"),)


def test_ll003_is_silent_when_the_script_adds_tokens():
    saves = lora(targets="all-linear", modules_to_save=lit(("embed_tokens", "lm_head"), 8))
    targets = lora(targets=("q_proj", "embed_tokens", "lm_head"))
    for lo in (saves, targets):
        assert len(run(LL003, setup(model=model(), lora=lo, training=training()))) == 1
        for kind in ("resize_token_embeddings", "add_tokens"):
            assert run(LL003, setup(model=model(), lora=lo, training=training(), calls=added(kind))) == []


def test_ll003_a_pattern_matching_everything_is_reported_even_with_added_tokens():
    s = setup(model=model(), lora=lora(targets=".*"), training=training(), calls=added())
    assert len(run(LL003, s)) == 1


def test_ll003_config_keys_adding_tokens_count():
    tokens = Setting(("<|im_start|>",), Origin.LITERAL, at(14), at(14), "axolotl tokenizer", "tokens")
    m = dataclasses.replace(model(), extra={"added_tokens": tokens})
    lo = lora(targets="all-linear", modules_to_save=lit(("embed_tokens", "lm_head"), 8))
    s = setup(kind="yaml", framework="axolotl", model=m, lora=lo, training=TrainingArgs())
    assert facts.added_tokens(s).span.line == 14 and run(LL003, s) == []


# ---- LL004: a hand-written count ----------------------------------------------------------------
def test_ll004_accepts_a_hand_written_trainable_count():
    wrap = call("get_peft_model", 6, "peft.get_peft_model")
    assert len(run(LL004, setup(model=model(), lora=lora(), calls=(wrap,)))) == 1
    counted = (wrap, call("trainable_parameter_count", 7, "sum(p.numel() ... if p.requires_grad)"))
    assert run(LL004, setup(model=model(), lora=lora(), calls=counted)) == []


# ---- LL005: evidence strength ---------------------------------------------------------------------
@pytest.mark.parametrize("weak", [
    (Evidence("ddp-argument", at(18), "ddp_find_unused_parameters"),),
    (Evidence("env-read", at(5), "os.environ.get('RANK')"),),
    (Evidence("ddp-argument", at(18), "x"), Evidence("env-read", at(5), "y")),
])
def test_ll005_weak_evidence_alone_is_silent(weak):
    s = setup(model=model(device_map=lit("auto", 5, 40)), lora=lora(), training=training(), launch=weak)
    assert facts.data_parallel(s) == () and facts.weak_parallel(s) == weak
    assert run(LL005, s) == []


def test_ll005_strong_evidence_still_reports_and_a_launch_map_is_info():
    strong = (Evidence("env-rank", at(4), "os.environ.get('LOCAL_RANK') -> torch.cuda.set_device(...)"),)
    s = setup(model=model(device_map=lit("auto", 5, 40)), lora=lora(), training=training(), launch=strong)
    [f] = run(LL005, s)
    assert f.severity is Severity.ERROR and "set_device" in f.message
    dm = Setting("auto", Origin.ARGPARSE_DEFAULT, at(5, 40), None, "--device_map", "args.device_map")
    s2 = setup(model=model(device_map=dm), lora=lora(), training=training(), launch=strong)
    [g] = run(LL005, s2)
    assert g.severity is Severity.INFO and "unless --device_map is passed at launch" in g.message


# ---- LL006: periodic flushes --------------------------------------------------------------------
def test_ll006_is_silent_for_periodic_calls_only():
    every = call("empty_cache", 20, "torch.cuda.empty_cache", in_loop=True, in_step_callback=True)
    periodic = dataclasses.replace(every, periodic=True)
    assert len(run(LL006, setup(model=model(), calls=(every,)))) == 1
    assert run(LL006, setup(model=model(), calls=(periodic,))) == []


# ---- the real pipeline: severities the fixture headers cannot state --------------------------------
def test_hf_argument_parser_fixture_is_info_naming_the_option():
    path = ROOT / "fixtures" / "rules" / "ll001_info_hf_argparser.py"
    result = lint(path, settings_from_args("--gpu rtx3090"))
    [f] = result.findings
    assert f.code == "LL001" and f.severity is Severity.INFO
    assert "unless --gradient_checkpointing is passed at launch" in f.message
    assert "pass --gradient_checkpointing at launch" in f.fix
    assert "on the parsed training arguments" in f.fix  # its default lives in transformers


def test_ll001_fix_for_an_environment_default_says_set():
    gc = launch(False, Origin.ENV_DEFAULT, "$USE_GC")
    [f] = run(LL001, setup(model=model(), lora=lora(), training=training(gradient_checkpointing=gc)))
    assert "unless $USE_GC is set at launch" in f.message and "set $USE_GC at launch" in f.fix


def test_dataloader_spec_counts_are_unchanged_by_the_policy():
    # a DataLoader written in the file stays at the rule's own severity with --cpus
    dl = DataLoaderSpec(num_workers=lit(32, 9), span=at(9))
    [f] = run(LL007, setup(model=model(), dataloaders=(dl,)), ctx(cpus=8))
    assert f.severity is Severity.WARNING
