"""LL002 fp16-instead-of-bf16 on hand-built setups."""

from __future__ import annotations

from rules_support import call, ctx, lit, lora, model, qlora4, run, setup, training

from lintlora import facts
from lintlora.findings import Severity
from lintlora.rules.ll002_fp16_instead_of_bf16 import Fp16InsteadOfBf16 as R, _fixed_setup
from lintlora.training_setup import Setting


def fp16_setup(**kw):
    return setup(model=model(), lora=lora(), training=training(fp16=lit(True, 11, 5)), **kw)


def test_fp16_on_a_bf16_gpu_is_a_warning_at_the_flag():
    [f] = run(R, fp16_setup(), ctx("a100-80gb"))
    assert (f.code, f.severity, f.span.line, f.span.column) == ("LL002", Severity.WARNING, 11, 5)
    assert "fp16=True" in f.message and "A100" in f.message and "65,504" in f.message
    assert "bf16=True" in f.fix


def test_silent_on_gpus_without_bf16():
    assert run(R, fp16_setup(), ctx("t4")) == []
    assert run(R, fp16_setup(), ctx("v100-32gb")) == []


def test_no_gpu_named_is_info_stating_the_condition():
    [f] = run(R, fp16_setup(), ctx())
    assert f.severity is Severity.INFO
    assert "if your GPU is Ampere or newer" in f.message


def test_all_fp16_sources_are_listed_and_fixed_together():
    q = qlora4(bnb_4bit_compute_dtype=lit("float16", 4, 60))
    s = setup(model=model(torch_dtype=lit("float16", 5, 70)), quantization=q, lora=lora(),
              training=training(fp16=lit(True, 11)),
              calls=(call("autocast", 15, "torch.autocast", in_step_callback=True,
                         args={"dtype": lit("float16", 15, 30)}),))
    [f] = run(R, s, ctx("rtx3090"))
    assert f.span.line == 11  # the trainer flag comes first
    for text in ("fp16=True", "autocast(dtype=torch.float16)", "bnb_4bit_compute_dtype=torch.float16",
                 "torch_dtype=torch.float16"):
        assert text in f.message
    fixed = _fixed_setup(s, facts.fp16_uses(s))
    assert facts.fp16_uses(fixed) == []
    assert fixed.get("training.bf16").value is True
    assert "bnb_4bit_compute_dtype=torch.bfloat16" in f.fix and "torch_dtype=torch.bfloat16" in f.fix


def test_compute_dtype_alone_is_flagged_but_its_float32_default_is_not():
    q16 = setup(model=model(), quantization=qlora4(bnb_4bit_compute_dtype=lit("float16", 4, 60)), lora=lora(),
                training=training(bf16=lit(True, 11)))
    [f] = run(R, q16, ctx("l4"))
    assert f.span.line == 4
    q32 = setup(model=model(), lora=lora(), training=training(bf16=lit(True, 11)),
                quantization=qlora4(bnb_4bit_compute_dtype=Setting.library_default("float32", "bnb")))
    assert run(R, q32, ctx("l4")) == []


def test_inference_and_unknown_values_are_silent():
    inference = setup(model=model(torch_dtype=lit("float16", 5)), is_training=False)
    unknown = setup(model=model(), training=training(fp16=Setting.unknown("args.fp16")))
    bf16 = setup(model=model(torch_dtype=lit("bfloat16", 5)), training=training(bf16=lit(True, 9)))
    for s in (inference, unknown, bf16):
        assert run(R, s, ctx("a100-80gb")) == []


def test_yaml_wording():
    s = setup(kind="yaml", framework="axolotl", model=model(), lora=lora(), training=training(fp16=lit(True, 19)))
    [f] = run(R, s, ctx("l4"))
    assert "fp16: true" in f.message and "`bf16: true`" in f.fix


def test_autocast_outside_the_training_step_is_not_training_precision():
    """A float16 autocast around generate() after training is inference, not a training dtype."""
    s = setup(model=model(), lora=lora(), training=training(bf16=lit(True, 11)),
              calls=(call("autocast", 30, "torch.autocast", args={"dtype": lit("float16", 30, 30)}),))
    assert run(R, s, ctx("rtx3090")) == []
    per_step = s.replace(calls=(call("autocast", 30, "torch.autocast", in_step_callback=True,
                                     args={"dtype": lit("float16", 30, 30)}),))
    [f] = run(R, per_step, ctx("rtx3090"))
    assert f.span.line == 30


def test_a_config_names_its_own_float16_key(tmp_path):
    """torchtune's float16 is `dtype: fp16` and litgpt's a `precision` value: the message names
    that key, not axolotl's `fp16: true` the file does not have (fixtures/fix/LL002)."""
    from pathlib import Path

    from lintlora.context import Context
    from lintlora.engine import read_setups
    from lintlora.settings import Settings

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "fix" / "LL002"
    context = Context(Settings(gpu="rtx3090"))
    for name, words in (("torchtune.yaml", "(dtype: fp16)"), ("litgpt.yaml", "(`precision`)")):
        messages = [f.message for s in read_setups(str(fixtures / name))
                    for f in R().check(s, context)]
        assert messages and all(words in m and "fp16: true" not in m for m in messages), messages
