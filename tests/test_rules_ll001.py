"""LL001 gradient-checkpointing-off on hand-built setups (toy estimator: see rules_support)."""

from __future__ import annotations

from rules_support import (
    GiB,
    ToyContext,
    at,
    call,
    ctx,
    lit,
    lora,
    model,
    qlora4,
    run,
    setup,
    training,
)

from lintlora import facts
from lintlora.findings import Severity
from lintlora.rules.ll001_gradient_checkpointing_off import MIN_SAVING
from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff as R
from lintlora.settings import Settings
from lintlora.training_setup import Origin, Setting, TrainingArgs


def test_literal_false_points_at_the_value_and_gives_complete_fix():
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(False, 12, 27)))
    [f] = run(R, s)
    assert (f.code, f.name, f.span.line, f.span.column) == ("LL001", "gradient-checkpointing-off", 12, 27)
    assert "gradient_checkpointing=False" in f.message
    # frozen base: the fix must also make the adapters get a gradient
    assert "gradient_checkpointing=True" in f.fix
    # (why reentrant checkpointing starves the adapters is LL009's to say: the fix points there)
    assert '"use_reentrant": False' in f.fix and "LL009" in f.fix
    # toy estimator: activations 12 GiB -> 2 GiB, weights 14 GiB
    assert "lowers the estimated peak by 10.0 GiB (26.0 GiB -> 16.0 GiB)" in f.message
    assert "activations held at the peak 12.0 GiB -> 2.0 GiB" in f.message
    assert f.estimate.peak_bytes == 26 * GiB and f.estimate.peak_after_fix_bytes == 16 * GiB
    assert f.severity is Severity.WARNING  # no GPU named


def test_library_default_points_at_the_trainer_call_and_names_the_default():
    s = setup(model=model(), lora=lora(), training=training(line=30))
    [f] = run(R, s)
    assert f.span.line == 30
    assert "default gradient_checkpointing=False" in f.message
    assert "training_args.py" in f.message
    assert f.rests_on  # rests on a library default


def test_full_fine_tuning_fix_has_no_frozen_base_note():
    s = setup(model=model(), training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(R, s)
    assert "use_reentrant" not in f.fix and f.fix.startswith("Pass gradient_checkpointing=True")


def test_checkpointing_on_in_any_way_is_silent():
    on_flag = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(True, 12)))
    on_call = setup(model=model(), lora=lora(), training=training(),
                    calls=(call("gradient_checkpointing_enable", 8),))
    on_prepare = setup(model=model(), lora=lora(), quantization=qlora4(), training=training(),
                       calls=(call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training"),))
    for s in (on_flag, on_call, on_prepare):
        assert run(R, s) == []


def test_unknown_value_and_inference_scripts_are_silent():
    unknown = setup(model=model(), lora=lora(),
                    training=training(gradient_checkpointing=Setting.unknown("args.gc")))
    inference = setup(model=model(), training=training(gradient_checkpointing=lit(False, 12)), is_training=False)
    assert run(R, unknown) == [] and run(R, inference) == []


def test_prepare_without_checkpointing_points_at_the_call():
    prep = call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training",
                args={"use_gradient_checkpointing": lit(False, 6, 40)})
    s = setup(model=model(), lora=lora(), quantization=qlora4(), training=training(), calls=(prep,))
    [f] = run(R, s)
    assert f.span.line == 6
    assert "use_gradient_checkpointing=False" in f.message
    assert "use_gradient_checkpointing=True" in f.fix


def test_disable_after_enable_is_reported_at_the_disable_call():
    s = setup(model=model(), lora=lora(), calls=(call("gradient_checkpointing_enable", 8),
                                                 call("gradient_checkpointing_disable", 9)),
              framework="torch")
    [f] = run(R, s)
    assert f.span.line == 9 and "gradient_checkpointing_disable" in f.fix


def test_torch_loop_without_call_is_fixed_by_a_synthetic_enable_call():
    s = setup(model=model(), lora=lora(), framework="torch")
    [f] = run(R, s)
    assert "no checkpointing call" in f.message
    assert "gradient_checkpointing_enable" in f.fix and "use_reentrant" in f.fix
    assert f.estimate.peak_after_fix_bytes == 16 * GiB  # the fixed setup really has checkpointing on
    assert f.span == at(20)  # the anchor


def test_severity_follows_the_gpu():
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(False, 12)))
    # 26 GiB as written, 16 GiB fixed; RTX 3090: 24 GiB -> does not fit, fix fits -> error
    [f] = run(R, s, ctx("rtx3090"))
    assert f.severity is Severity.ERROR and "does not fit" in f.message
    # A100 80GB: fits with room to spare -> info
    [f] = run(R, s, ctx("a100-80gb"))
    assert f.severity is Severity.INFO and "fits" in f.message
    # 27 GiB card: fits, but within the estimator's 10% margin -> warning
    [f] = run(R, s, ctx(gpu_memory_bytes=27 * GiB))
    assert f.severity is Severity.WARNING
    # 12 GiB card: does not fit even with checkpointing -> warning, said so
    [f] = run(R, s, ctx(gpu_memory_bytes=12 * GiB))
    assert f.severity is Severity.WARNING and "checkpointing alone does not" in f.message


def test_unknown_model_still_reports_without_figures():
    s = setup(model=model("my-org/private-model"), lora=lora(),
              training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(R, s, ctx(known_model=False))
    assert f.estimate.peak_bytes is None and "model is unknown" in f.message
    assert "--model" in (f.estimate.note or "")


def test_yaml_dialect_fixes_name_the_config_key():
    axolotl = setup(kind="yaml", framework="axolotl", dialect="axolotl", model=model(), lora=lora(),
                    training=TrainingArgs(gradient_checkpointing=lit(False, 20)))
    [f] = run(R, axolotl)
    assert f.span.line == 20 and "`gradient_checkpointing: true`" in f.fix and "use_reentrant" in f.fix
    lf = setup(kind="yaml", framework="llama-factory", model=model(), lora=lora(),
               training=TrainingArgs(gradient_checkpointing=lit(False, 9)))
    [f] = run(R, lf)
    assert "disable_gradient_checkpointing" in f.fix


def test_fixed_setup_turns_checkpointing_on():
    from lintlora.rules.ll001_gradient_checkpointing_off import _fixed_setup

    with_trainer = setup(training=training(gradient_checkpointing=lit(False, 3)),
                         calls=(call("gradient_checkpointing_disable", 9),))
    loop = setup(framework="torch", calls=(call("gradient_checkpointing_disable", 9),))
    assert facts.checkpointing(_fixed_setup(with_trainer)).value is True
    assert facts.checkpointing(_fixed_setup(loop)).value is True


def test_yaml_reasons_name_the_dialects_key():
    tt = setup(kind="yaml", framework="torchtune", model=model(), lora=lora(),
               training=TrainingArgs(gradient_checkpointing=Setting.library_default(False, "torchtune recipe")))
    [f] = run(R, tt)
    assert "torchtune's default `enable_activation_checkpointing: false`" in f.message
    assert "enable_activation_checkpointing: True" in f.fix
    written = Setting(False, Origin.LITERAL, at(9, 33), None, None, "disable_gradient_checkpointing")
    lf = setup(kind="yaml", framework="llama-factory", model=model(), lora=lora(),
               training=TrainingArgs(gradient_checkpointing=written))
    [f] = run(R, lf)
    assert "`disable_gradient_checkpointing` in the config turns it off" in f.message


def test_litgpt_has_no_switch_so_it_is_reported_only_when_it_does_not_fit():
    lg = setup(kind="yaml", framework="litgpt", model=model(), lora=lora(),
               training=TrainingArgs(gradient_checkpointing=Setting.library_default(False, "litgpt lora.py")))
    # no GPU named, or one it fits on: nothing the config could switch, so nothing to say
    assert run(R, lg) == [] and run(R, lg, ctx("a100-80gb")) == []
    [f] = run(R, lg, ctx("rtx3090"))  # 26 GiB does not fit, checkpointing would: still only a warning
    assert f.severity is Severity.WARNING and "several devices" in f.fix
    assert "(?)" not in f.message


# ---- only when the fix lowers the peak by a real margin ---------------------------------------
class _PeakElsewhere(ToyContext):
    """Toy estimate whose peak is set elsewhere (full fine-tuning's optimizer step): turning
    checkpointing on lowers it by ``saving`` bytes only."""

    def __init__(self, saving: int, **kw) -> None:
        super().__init__(**kw)
        self.saving = saving

    def estimate(self, s):  # type: ignore[override]
        from types import SimpleNamespace

        if self.architecture(s) is None:
            return None
        on = facts.checkpointing(s).value is True
        breakdown = {"weights": 14 * GiB, "gradients": 14 * GiB, "optimizer_states": 28 * GiB,
                     "activations": 0 if on else self.saving}
        return SimpleNamespace(device_bytes=sum(breakdown.values()), breakdown=breakdown,
                               rough=False)


def test_silent_when_the_fix_does_not_lower_the_peak():
    s = setup(model=model(), training=training(gradient_checkpointing=lit(False, 12)))
    assert run(R, s, _PeakElsewhere(0)) == []
    assert run(R, s, _PeakElsewhere(0, settings=Settings(gpu="rtx3090"))) == []


def test_silent_below_the_minimum_saving_and_reported_above_it():
    s = setup(model=model(), training=training(gradient_checkpointing=lit(False, 12)))
    base = 56 * GiB  # the peak without activations
    # saving share = saving / (base + saving)
    just_under = int(base * MIN_SAVING / (1 - MIN_SAVING)) - GiB // 4
    just_over = int(base * MIN_SAVING / (1 - MIN_SAVING)) + GiB // 4
    assert run(R, s, _PeakElsewhere(just_under)) == []
    [f] = run(R, s, _PeakElsewhere(just_over))
    saved = f.estimate.peak_bytes - f.estimate.peak_after_fix_bytes
    assert saved == just_over
    assert f"lowers the estimated peak by {saved / GiB:.1f} GiB" in f.message


def test_unknown_model_still_reported_without_figures():
    s = setup(model=model(), training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(R, s, ctx(known_model=False))
    assert f.estimate.peak_bytes is None and "no figure" in f.message


def test_full_fine_tune_small_batch_is_silent_with_the_real_estimator():
    """Full fine-tuning of a 7B model at batch 1: the peak is the optimizer step (weights,
    gradients and AdamW states), after the activations are freed, so checkpointing does not
    lower it; at batch 8 with LoRA the activations set the peak and the finding stays."""
    from lintlora.context import Context
    from lintlora.extract.python import extract_python

    src = '''\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from peft import LoraConfig, get_peft_model
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
{lora}
args = TrainingArguments(output_dir="out", per_device_train_batch_size={batch}, bf16=True)
Trainer(model=model, args=args, train_dataset=ds).train()
'''
    real = Context(Settings(gpu="a100-80gb"))
    (full,) = extract_python("train.py", src.format(lora="", batch=1))
    assert run(R, full, real) == []
    peft = "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))"
    (lora_b8,) = extract_python("train.py", src.format(lora=peft, batch=8))
    [f] = run(R, lora_b8, real)
    est = f.estimate
    assert est.peak_bytes - est.peak_after_fix_bytes >= MIN_SAVING * est.peak_bytes


# ---- the fix names only what is missing; the reason names the deciding option ----------------
def test_fix_leaves_out_the_reentrant_advice_when_the_script_already_sees_to_it():
    def fix_of(**kw):
        calls = kw.pop("calls", ())
        s = setup(model=model(), lora=lora(), calls=calls,
                  training=training(gradient_checkpointing=lit(False, 12), **kw))
        [f] = run(R, s)
        return f.fix

    assert "use_reentrant" in fix_of()  # nothing set: the adapters would get no gradient
    # a read dict, an expression set under a condition (trl's sft.py of 2023), or the input hook
    read = fix_of(gradient_checkpointing_kwargs=lit({"use_reentrant": False}, 13))
    written = fix_of(gradient_checkpointing_kwargs=Setting(
        None, Origin.UNKNOWN, at(24, 51), at(24, 5), "set under a condition at line 24", "dict(use_reentrant=False)"))
    hooked = fix_of(calls=(call("enable_input_require_grads", 9),))
    for fix in (read, written, hooked):
        assert fix == "Pass gradient_checkpointing=True to the training arguments."
    # use_reentrant=True set explicitly still needs the advice
    assert "use_reentrant" in fix_of(gradient_checkpointing_kwargs=lit({"use_reentrant": True}, 13))


def test_launch_default_through_an_expression_names_the_option_not_the_expression():
    """peft's examples/sft/train.py: `training_args.gradient_checkpointing =
    training_args.gradient_checkpointing and not model_args.use_unsloth`."""
    expr = "training_args.gradient_checkpointing and not model_args.use_unsloth"
    gc = Setting(False, Origin.ARGPARSE_DEFAULT, at(107, 44), at(107, 5),
                 "--gradient_checkpointing: a command-line option; default from transformers training_args.py", expr)
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=gc))
    [f] = run(R, s)
    assert expr not in f.message and expr not in " ".join(f.rests_on)
    assert ("--gradient_checkpointing decides it and defaults to False (a command-line option; default from "
            "transformers training_args.py)") in f.message
    # a plain name is still quoted as written
    plain = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=Setting(
        False, Origin.ARGPARSE_DEFAULT, at(12, 20), at(12, 5), "--gc", "args.gc")))
    [f] = run(R, plain)
    assert "gradient_checkpointing=args.gc defaults to False (argparse default of --gc)" in f.message


def test_an_assumed_shape_never_makes_it_an_error():
    """The toy estimate does not fit the RTX 3090 (26 GiB) and the fix brings it under: an error
    when the shape is read (test_severity_follows_the_gpu), a warning naming the assumed shape
    when the context says the shape was not set."""
    from lintlora.estimate.shape import Shape

    class Guessed(ToyContext):
        def shape(self, s):
            return Shape(4, 512, remarks=("assumes 512 tokens per sequence: the script sets no sequence length",),
                         guessed_words=("the assumed 512 tokens per sequence",))

    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(R, s, Guessed(Settings(gpu="rtx3090")))
    assert f.severity is Severity.WARNING
    assert "does not fit on the GeForce RTX 3090 (23.7 GiB) at the assumed 512 tokens per sequence" in f.message
    assert "Reported as a warning, not an error" in f.message
    [f] = run(R, s, ctx("rtx3090"))
    assert f.severity is Severity.ERROR and "assumed" not in f.message
