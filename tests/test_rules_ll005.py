"""LL005 device-map on hand-built setups: the four sub-cases and their silences."""

from __future__ import annotations

import pytest
from rules_support import Evidence, at, call, ctx, lit, lora, model, qlora4, run, setup, training

from lintlora.findings import Severity
from lintlora.rules.ll005_device_map import DeviceMap as R, classify_device_map
from lintlora.training_setup import Setting

WORLD = (Evidence("env-rank", at(3), "WORLD_SIZE"),)


def dm_setup(device_map, launch=WORLD, **kw):
    kw.setdefault("training", training())
    return setup(model=model(device_map=lit(device_map, 5, 40)), lora=lora(), launch=launch, **kw)


@pytest.mark.parametrize("value", ["auto", "balanced", "balanced_low_0", "sequential", {"a": 0, "b": 1}])
def test_a_splitting_map_under_data_parallel_is_an_error(value):
    [f] = run(R, dm_setup(value))
    assert (f.code, f.severity, f.span.line, f.span.column) == ("LL005", Severity.ERROR, 5, 40)
    assert "data-parallel" in f.message and "line 3" in f.message and "accelerate#1802" in f.message
    assert "LOCAL_RANK" in f.fix and "--num_processes 1" in f.fix


def test_a_splitting_map_without_evidence_is_silent():
    assert run(R, dm_setup("auto", launch=())) == []


@pytest.mark.parametrize("value", [{"": 0}, "cuda:0", 0, {"": "cuda:0"}])
def test_hard_coded_gpu_zero_under_data_parallel_is_a_warning(value):
    acc = (Evidence("accelerator", at(2)),)
    [f] = run(R, dm_setup(value, launch=acc))
    assert f.severity is Severity.WARNING and "GPU 0" in f.message and "Accelerator" in f.message
    assert "LOCAL_RANK" in f.fix


def test_hard_coded_gpu_zero_on_one_process_is_silent():
    assert run(R, dm_setup({"": 0}, launch=())) == []


def test_unresolved_device_map_is_silent():
    s = setup(model=model(device_map=Setting.unknown('{"": local_rank}')), lora=lora(), launch=WORLD,
              training=training())
    assert run(R, s) == []
    assert run(R, dm_setup({"": "weird-device"})) == []


def test_quantized_model_moved_by_hand():
    moved = call("model_move", 6, "model.cuda", receiver="model")
    s = setup(model=model(), quantization=qlora4(), lora=lora(), calls=(moved,))
    [f] = run(R, s)
    assert f.span.line == 6 and f.severity is Severity.WARNING
    assert "4-bit" in f.message and ".cuda()" in f.message and "0.43.2" in f.message
    assert "Remove the call" in f.fix


def test_quantized_model_cast_is_an_error():
    cast = call("model_move", 6, "model.to", receiver="model", args={"dtype": lit("bfloat16", 6, 10)})
    s = setup(model=model(), quantization=qlora4(), lora=lora(), calls=(cast,))
    [f] = run(R, s)
    assert f.severity is Severity.ERROR and "cast" in f.message and "torch_dtype" in f.fix


def test_moves_of_other_models_or_unquantized_models_are_silent():
    other = call("model_move", 6, "ref_model.cuda", receiver="ref_model")
    quantized_other = setup(model=model(), quantization=qlora4(), lora=lora(), calls=(other,))
    plain = setup(model=model(), lora=lora(), calls=(call("model_move", 6, "model.cuda", receiver="model"),))
    assert run(R, quantized_other) == [] and run(R, plain) == []


def test_offload_of_a_quantized_model_being_trained():
    offload = {"model.embed_tokens": 0, "model.layers": 0, "model.norm": "cpu", "lm_head": "cpu"}
    s = dm_setup(offload, launch=(), quantization=qlora4())
    [f] = run(R, s)
    assert f.severity is Severity.ERROR and f.span.line == 5
    assert "model.norm and lm_head" in f.message and "unsloth#1629" in f.message


def test_fp32_cpu_offload_flag_alone():
    q = qlora4(llm_int8_enable_fp32_cpu_offload=lit(True, 4, 70))
    s = setup(model=model(), quantization=q, lora=lora(), training=training())
    [f] = run(R, s)
    assert (f.severity, f.span.line, f.span.column) == (Severity.ERROR, 4, 70)
    assert "llm_int8_enable_fp32_cpu_offload" in f.message and "llm_int8_enable_fp32_cpu_offload" in f.fix


def test_offload_of_an_unquantized_model_is_a_warning_and_inference_is_silent():
    s = dm_setup({"model": 0, "lm_head": "disk"}, launch=())
    [f] = run(R, s)
    assert f.severity is Severity.WARNING and "slower" in f.message
    assert run(R, dm_setup({"model": 0, "lm_head": "cpu"}, launch=(), is_training=False)) == []
    assert run(R, dm_setup({"": "cpu"}, launch=())) == []  # all on the CPU: not offload


def test_classify_device_map():
    assert classify_device_map("auto")["splits"]
    assert classify_device_map({"a": "cuda:0", "b": "cuda:1"})["splits"]
    assert classify_device_map({"": 0})["zero"] and classify_device_map("cuda:0")["zero"]
    assert not classify_device_map("cuda")["zero"]  # the current device: set per process
    assert classify_device_map({"a": 0, "b": "cpu"})["offloaded"] == ("b",)
    assert classify_device_map({"": "disk"})["offloaded"] == ("(whole model)",)
    assert classify_device_map({"a": 0, "b": None}) == {"splits": False, "zero": False, "offloaded": ()}
    # str.isdigit() accepts superscripts and other non-ASCII digits that int() refuses
    assert classify_device_map("\u00b2") == {"splits": False, "zero": False, "offloaded": ()}
    assert classify_device_map({"": "\u0663"}) == {"splits": False, "zero": False, "offloaded": ()}


def test_maps_resting_on_launch_time_defaults_are_not_judged_under_data_parallel():
    from rules_support import Setting, Origin, at as _at

    env = Setting({"": 0}, Origin.ENV_DEFAULT, _at(5, 40), None, "$LOCAL_RANK")
    argp = Setting({"": 0}, Origin.ARGPARSE_DEFAULT, _at(5, 40), None, "args.local_rank")
    auto_env = Setting("auto", Origin.ENV_DEFAULT, _at(5, 40), None, "$WORLD_SIZE")
    for dm in (env, argp, auto_env):
        s = setup(model=model(device_map=dm), lora=lora(), launch=WORLD, training=training())
        assert run(R, s) == []
    # a launch-time default "auto" in a data-parallel script still splits the model: reported,
    # saying what it rests on
    auto_arg = Setting("auto", Origin.ARGPARSE_DEFAULT, _at(5, 40), None, "args.device_map")
    [f] = run(R, setup(model=model(device_map=auto_arg), lora=lora(), launch=WORLD, training=training()))
    assert f.rests_on and "argparse-default" in f.rests_on[0]
