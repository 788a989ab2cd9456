"""LL011 fp16-trainable-weights: hand-built setups, the extraction it reads, fixtures."""

from __future__ import annotations

from rules_support import (
    ROOT,
    Origin,
    Setting,
    at,
    call,
    lint,
    lit,
    lora,
    model,
    qlora4,
    run,
    settings_from_args,
    setup,
    training,
)

from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll011_fp16_trainable_weights import Fp16TrainableWeights as R
from lintlora.rules.ll011_fp16_trainable_weights import fp16_scaler_uses

WRAP = call("get_peft_model", 8, "peft.get_peft_model")
FP16 = lit("float16", 5, 60)


def fp16_on(**kw):
    return training(fp16=lit(True, 12, 20), **kw)


def base(**kw):
    return model(torch_dtype=FP16, **kw)


# ---- what counts as fp16 mixed precision --------------------------------------------------
def test_fp16_mixed_precision_is_the_flag_the_accelerator_or_a_scaler():
    flag = setup(training=fp16_on())
    acc = setup(calls=(call("autocast", 3, "accelerate.Accelerator",
                            args={"dtype": lit("float16", 3), "mixed_precision": lit("fp16", 3)}),))
    scaler = setup(calls=(call("grad_scaler", 9, "torch.amp.GradScaler"),))
    off = setup(calls=(call("grad_scaler", 9, "torch.amp.GradScaler", args={"enabled": lit(False, 9)}),))
    unknown = setup(calls=(call("grad_scaler", 9, "torch.amp.GradScaler",
                                args={"enabled": Setting.unknown("args.fp16")}),))
    autocast_only = setup(calls=(call("autocast", 3, "torch.autocast", args={"dtype": lit("float16", 3)}),))
    assert [u.what for u in fp16_scaler_uses(flag)] == ["fp16=True"]
    assert [u.what for u in fp16_scaler_uses(acc)] == ['Accelerator(mixed_precision="fp16")']
    assert [u.what for u in fp16_scaler_uses(scaler)] == ["GradScaler()"]
    assert fp16_scaler_uses(off) == fp16_scaler_uses(unknown) == fp16_scaler_uses(autocast_only) == []


# ---- the float16 trainable tensors ---------------------------------------------------------
def test_modules_to_save_on_a_float16_base_is_an_error_at_the_list():
    saves = lit(("embed_tokens", "lm_head"), 7, 44)
    s = setup(model=base(), lora=lora(modules_to_save=saves), training=fp16_on(), calls=(WRAP,))
    [f] = run(R, s)
    assert (f.code, f.name, f.severity) == ("LL011", "fp16-trainable-weights", Severity.ERROR)
    assert (f.span.line, f.span.column) == (7, 44)
    assert "Attempting to unscale FP16 gradients" in f.message and "embed_tokens, lm_head" in f.message
    assert "fp16=True" in f.message and "p.data.float()" in f.fix


def test_plain_lora_on_a_float16_base_is_silent():
    """peft >= 0.12 up-casts adapter layers (autocast_adapter_dtype=True by default)."""
    assert run(R, setup(model=base(), lora=lora(), training=fp16_on(), calls=(WRAP,))) == []
    on_embeddings = lora(targets=("q_proj", "embed_tokens", "lm_head"))
    assert run(R, setup(model=base(), lora=on_embeddings, training=fp16_on(), calls=(WRAP,))) == []


def test_autocast_adapter_dtype_false_keeps_the_adapters_float16():
    wrap = call("get_peft_model", 8, "peft.get_peft_model",
                args={"autocast_adapter_dtype": lit(False, 8, 50)})
    [f] = run(R, setup(model=base(), lora=lora(), training=fp16_on(), calls=(wrap,)))
    assert f.severity is Severity.ERROR and (f.span.line, f.span.column) == (8, 50)
    assert f.fix.startswith("Drop autocast_adapter_dtype=False")
    bf16_base = model(torch_dtype=lit("bfloat16", 5))
    assert run(R, setup(model=bf16_base, lora=lora(), training=fp16_on(), calls=(wrap,))) == []


def test_a_cast_to_float16_after_the_wrap_and_not_undone():
    half = call("model_cast", 10, "model.half", receiver="model", args={"dtype": lit("float16", 10)})
    up = call("model_cast", 11, "model.float", receiver="model", args={"dtype": lit("float32", 11)})
    scaler = call("grad_scaler", 14, "torch.amp.GradScaler")
    [f] = run(R, setup(model=model(), lora=lora(), framework="torch", calls=(WRAP, half, scaler)))
    assert f.span.line == 10 and "model.half() after the adapters" in f.message
    assert f.severity is Severity.ERROR and f.fix.startswith("Remove the cast after wrapping")
    assert run(R, setup(model=model(), lora=lora(), framework="torch", calls=(WRAP, half, up, scaler))) == []
    before = call("model_cast", 6, "model.half", receiver="model", args={"dtype": lit("float16", 6)})
    assert run(R, setup(model=model(), lora=lora(), framework="torch", calls=(before, WRAP, scaler))) == []


def test_a_full_fine_tune_in_float16_is_a_warning_resting_on_no_adapter_seen():
    [f] = run(R, setup(model=base(), training=fp16_on()))
    assert f.severity is Severity.WARNING and f.span.line == 5
    assert "no adapter is attached in this file" in f.message and "float32" in f.fix
    # quantized, an adapter config, an unknown quantization: not a full fine-tune as far as we know
    assert run(R, setup(model=base(), quantization=qlora4(), training=fp16_on())) == []
    assert run(R, setup(model=base(), lora=lora(), training=fp16_on())) == []
    assert run(R, setup(model=base(), training=fp16_on(),
                        calls=(call("prepare_model_for_kbit_training", 6),))) == []


def test_silent_for_bf16_unknown_dtype_casts_back_unsloth_yaml_and_inference():
    saves = lit(("lm_head",), 7)
    bad = dict(model=base(), lora=lora(modules_to_save=saves), calls=(WRAP,))
    assert run(R, setup(training=fp16_on(), **bad))  # the control: it does fire
    assert run(R, setup(training=training(bf16=lit(True, 12)), **bad)) == []
    unknown = model(torch_dtype=Setting.unknown("args.dtype"))
    assert run(R, setup(model=unknown, lora=lora(modules_to_save=saves), training=fp16_on(), calls=(WRAP,))) == []
    cast = call("cast_trainable_fp32", 9, "param.data.float")
    assert run(R, setup(training=fp16_on(), **{**bad, "calls": (WRAP, cast)})) == []
    assert run(R, setup(training=fp16_on(), framework="unsloth", **bad)) == []
    assert run(R, setup(training=fp16_on(), kind="yaml", framework="axolotl", **bad)) == []
    assert run(R, setup(training=fp16_on(), is_training=False, **bad)) == []


def test_modules_to_save_on_a_prepared_quantized_base_is_silent():
    saves = lit(("lm_head",), 7)
    prep = call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training")
    prepared = setup(model=base(), quantization=qlora4(), lora=lora(modules_to_save=saves),
                     training=fp16_on(), calls=(prep, WRAP))
    assert run(R, prepared) == []
    unprepared = setup(model=base(), quantization=qlora4(), lora=lora(modules_to_save=saves),
                       training=fp16_on(), calls=(WRAP,))
    assert [f.code for f in run(R, unprepared)] == ["LL011"]


def test_trl_wraps_the_lora_config_itself():
    saves = lit(("lm_head",), 7)
    s = setup(model=base(), lora=lora(modules_to_save=saves), training=fp16_on(), framework="trl")
    assert [f.code for f in run(R, s)] == ["LL011"]


def test_a_launch_default_makes_it_info():
    flag = Setting(True, Origin.ARGPARSE_DEFAULT, at(12, 20), at(12, 5), "--fp16", "args.fp16")
    s = setup(model=base(), lora=lora(modules_to_save=lit(("lm_head",), 7)),
              training=training(fp16=flag), calls=(WRAP,))
    [f] = run(R, s)
    assert f.severity is Severity.INFO and "--fp16" in f.message


# ---- extraction it reads -------------------------------------------------------------------
HEAD = ("import torch\nfrom peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-0.5B', torch_dtype=torch.float16)\n")


def test_casts_scalers_and_autocast_adapter_dtype_are_extracted():
    body = ("model = get_peft_model(model, LoraConfig(r=8), autocast_adapter_dtype=False)\n"
            "model.half()\nmodel = model.to(torch.float16)\nmodel.to(dtype=torch.float32)\n"
            "model.to('cuda')\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"
            "scaler2 = torch.amp.GradScaler('cuda')\n"
            "for p in model.parameters():\n    p.data = p.data.float()\nloss.float()\n")
    [s] = extract_python("t.py", HEAD + body)
    [wrap] = s.calls_of("get_peft_model")
    assert wrap.args["autocast_adapter_dtype"].is_(False)
    assert [c.args["dtype"].value for c in s.calls_of("model_cast")] == ["float16", "float16", "float32"]
    assert len(s.calls_of("model_move")) == 1
    scalers = s.calls_of("grad_scaler")
    assert [c.qualified_name for c in scalers] == ["torch.amp.GradScaler"] * 2
    assert scalers[0].args["enabled"].is_(True)
    assert [c.span.line for c in s.calls_of("cast_trainable_fp32")] == [13]  # not loss.float()


def lint_source(tmp_path, body):
    path = tmp_path / "train.py"
    path.write_text(HEAD + body)
    return [(f.code, f.severity, f.span.line) for f in lint(path, settings_from_args("--gpu t4")).findings
            if f.code == "LL011"]


def test_an_accelerate_loop_end_to_end(tmp_path):
    body = ("from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
            "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj']), autocast_adapter_dtype=False)\n"
            "model.print_trainable_parameters()\n"
            "for batch in loader:\n    loss = model(**batch).loss\n    accelerator.backward(loss)\n"
            "    optimizer.step()\n")
    assert lint_source(tmp_path, body) == [("LL011", Severity.ERROR, 7)]
    assert lint_source(tmp_path, body.replace("'fp16'", "'bf16'")) == []
    assert lint_source(tmp_path, body.replace(", autocast_adapter_dtype=False", "")) == []


def test_the_notebook_fixture_reports_in_its_cell():
    result = lint(ROOT / "fixtures" / "rules" / "ll011_bad_notebook.ipynb", settings_from_args("--gpu t4"))
    assert result.errors == []
    # a Qwen2.5 base trained in float16 on a T4 is also LL017's case (BN27)
    assert sorted(x.code for x in result.findings) == ["LL011", "LL017"]
    [f] = [x for x in result.findings if x.code == "LL011"]
    assert (f.code, f.span.cell, f.span.line, f.severity) == ("LL011", 3, 4, Severity.ERROR)
    assert "embed_tokens, lm_head" in f.message


def test_fixtures_exist_in_every_style():
    names = {p.name for p in (ROOT / "fixtures" / "rules").rglob("*")}
    for name in ("ll011_bad_modules_to_save.py", "ll011_bad_half_after_wrap.py", "ll011_bad_accelerate_loop.py",
                 "ll011_bad_full_finetune.py", "ll011_bad_notebook.ipynb", "ll011_good_lora_fp16_base.py",
                 "ll011_good_bf16.py", "qlora_prepare_modules_to_save_fp16.py",
                 "llama_factory_fp16_additional_target.yaml", "axolotl_fp16_lora_modules_to_save.yml"):
        assert name in names, name
