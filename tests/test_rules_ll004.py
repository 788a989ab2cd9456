"""LL004 no-trainable-parameter-report on hand-built setups."""

from __future__ import annotations

from rules_support import call, ctx, lit, lora, model, run, setup, training

from lintlora.findings import Severity
from lintlora.rules.ll004_no_trainable_parameter_report import NoTrainableParameterReport as R


def wrapped(**kw):
    kw.setdefault("calls", (call("get_peft_model", 12, "peft.get_peft_model"),))
    return setup(model=model("meta-llama/Llama-2-7b-hf"), lora=lora(8, ["q_proj", "v_proj"]),
                 training=training(), **kw)


def test_reports_the_line_peft_would_print():
    [f] = run(R, wrapped())
    assert (f.code, f.severity, f.span.line) == ("LL004", Severity.INFO, 12)
    # Llama-2-7B, r=8 on q_proj/v_proj: the figures peft prints for this setup
    assert "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622" in f.message
    assert "print_trainable_parameters()" in f.fix
    assert f.estimate.peak_after_fix_bytes == f.estimate.peak_bytes  # no memory change


def test_either_report_call_silences_it():
    for kind in ("print_trainable_parameters", "get_nb_trainable_parameters"):
        s = wrapped(calls=(call("get_peft_model", 12, "peft.get_peft_model"), call(kind, 13)))
        assert run(R, s) == []


def test_prepare_alone_counts_as_wrapping():
    s = wrapped(calls=(call("prepare_model_for_kbit_training", 9, "peft.prepare_model_for_kbit_training"),))
    [f] = run(R, s)
    assert f.span.line == 9 and "prepare_model_for_kbit_training()" in f.message


def test_points_at_get_peft_model_when_both_are_present():
    s = wrapped(calls=(call("prepare_model_for_kbit_training", 9, "peft.prepare_model_for_kbit_training"),
                       call("get_peft_model", 12, "peft.get_peft_model")))
    [f] = run(R, s)
    assert f.span.line == 12


def test_configs_unsloth_and_unwrapped_scripts_are_silent():
    assert run(R, wrapped(kind="yaml", framework="axolotl")) == []
    assert run(R, wrapped(framework="unsloth")) == []
    assert run(R, wrapped(calls=())) == []


def test_unknown_pieces_are_said_not_guessed():
    [f] = run(R, wrapped(), ctx(known_model=False))
    assert "No expected count" in f.message and "trainable params:" not in f.message
    s = setup(model=model("meta-llama/Llama-2-7b-hf"), lora=lora(None, ["q_proj"]), training=training(),
              calls=(call("get_peft_model", 12, "peft.get_peft_model"),))
    [f] = run(R, s)
    assert "rank r is not resolved" in f.message
    s = setup(model=model("meta-llama/Llama-2-7b-hf"), training=training(),
              calls=(call("get_peft_model", 12, "peft.get_peft_model"),))
    [f] = run(R, s)
    assert "no LoraConfig" in f.message


def test_modules_to_save_appear_in_the_expected_count():
    s = setup(model=model("meta-llama/Llama-2-7b-hf"), training=training(),
              lora=lora(8, ["q_proj", "v_proj"], modules_to_save=lit(["lm_head"], 7)),
              calls=(call("get_peft_model", 12, "peft.get_peft_model"),))
    [f] = run(R, s)
    trainable = 4_194_304 + 32_000 * 4_096
    assert f"trainable params: {trainable:,}" in f.message
