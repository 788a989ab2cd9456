"""LL009 checkpointing-without-input-grads: hand-built setups, the extraction it reads, fixtures."""

from __future__ import annotations

import json

from rules_support import (
    ROOT,
    Evidence,
    Origin,
    Quantization,
    Setting,
    at,
    call,
    default,
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
from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff
from lintlora.rules.ll009_checkpointing_without_input_grads import CheckpointingWithoutInputGrads as R
from lintlora.rules.ll009_checkpointing_without_input_grads import reentrant

WRAP = call("get_peft_model", 8, "peft.get_peft_model")


def targs(**kw):
    """Training arguments with the library defaults the extractor fills in."""
    for name in ("gradient_checkpointing_kwargs", "deepspeed", "fsdp"):
        kw.setdefault(name, default(None))
    return training(**kw)


def gc_on(line=12, **kw):
    return targs(gradient_checkpointing=lit(True, line, 27), **kw)


def peft_setup(calls=(WRAP,), **kw):
    kw.setdefault("training", gc_on())
    return setup(model=model(), lora=lora(), calls=calls, **kw)


# ---- the input-grad case -------------------------------------------------------------------
def test_trainer_checkpointing_after_the_wrap_warns_and_names_the_version_condition():
    [f] = run(R, peft_setup())
    assert (f.code, f.name, f.severity) == ("LL009", "checkpointing-without-input-grads", Severity.WARNING)
    assert (f.span.line, f.span.column) == (12, 27)  # at gradient_checkpointing=True
    assert "with transformers 4.x, whose default is reentrant" in f.message
    assert "PR #43203" in f.message and "element 0 of tensors does not require grad" in f.message
    assert "not for a PeftModel" in f.message
    assert '"use_reentrant": False' in f.fix and "enable_input_require_grads" in f.fix
    assert f.rests_on  # the library default
    # the fix changes no memory: the after figure is the before one
    assert f.estimate.peak_bytes and f.estimate.peak_after_fix_bytes == f.estimate.peak_bytes


def test_explicit_use_reentrant_true_is_an_error_at_the_kwargs():
    t = gc_on(gradient_checkpointing_kwargs=lit({"use_reentrant": True}, 13, 35))
    [f] = run(R, peft_setup(training=t))
    assert f.severity is Severity.ERROR and (f.span.line, f.span.column) == (13, 35)
    assert "use_reentrant=True is written" in f.message and "transformers 4.x" in f.message
    assert f.fix.startswith("Set ") and not f.rests_on


def test_everything_that_makes_the_inputs_require_grad_silences_it():
    hook = call("enable_input_require_grads", 9)
    before = call("gradient_checkpointing_enable", 6)  # before the wrap, 16-bit base
    prep = call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training")
    assert run(R, peft_setup(calls=(WRAP, hook))) == []
    assert run(R, peft_setup(calls=(before, WRAP))) == []
    assert run(R, peft_setup(calls=(prep, WRAP), quantization=qlora4())) == []


def test_non_reentrant_or_unreadable_kwargs_are_silent():
    off = gc_on(gradient_checkpointing_kwargs=lit({"use_reentrant": False}, 13))
    written = gc_on(gradient_checkpointing_kwargs=Setting(
        None, Origin.UNKNOWN, at(13), at(13), "set under a condition", "dict(use_reentrant=False)"))
    unknown = gc_on(gradient_checkpointing_kwargs=Setting.unknown("args.gc_kwargs", at(13)))
    for t in (off, written, unknown):
        assert run(R, peft_setup(training=t)) == []
    assert reentrant(lit({"use_reentrant": True}, 1)) == "explicit"
    assert reentrant(lit({"other": 1}, 1)) == "default" and reentrant(None) == "default"


def test_enable_before_the_wrap_does_not_help_a_quantized_base():
    before = call("gradient_checkpointing_enable", 6)
    [f] = run(R, peft_setup(calls=(before, WRAP), quantization=qlora4(), training=None))
    assert f.span.line == 6 and "quantized" in f.message
    assert "prepare_model_for_kbit_training(model) before get_peft_model" in f.fix
    # the base's quantization unknown: whether peft installed the hook cannot be told
    unknown_q = peft_setup(calls=(before, WRAP), training=None, quantization=Quantization(
        method=lit("bitsandbytes", 4), bits=Setting.unknown("args.bits"), span=at(4)))
    assert run(R, unknown_q) == []


def test_enable_after_the_wrap_in_a_loop_is_reported_at_the_call():
    after = call("gradient_checkpointing_enable", 10, receiver="model")
    [f] = run(R, setup(model=model(), lora=lora(), framework="torch", calls=(WRAP, after)))
    assert f.span.line == 10 and "model.gradient_checkpointing_enable()" in f.message
    assert "in model.gradient_checkpointing_enable(...)" in f.fix


def test_no_adapters_no_checkpointing_no_training_are_silent():
    assert run(R, setup(model=model(), training=gc_on())) == []  # full fine-tune
    assert run(R, peft_setup(training=training(gradient_checkpointing=lit(False, 12)))) == []
    assert run(R, peft_setup(is_training=False)) == []
    disabled = (WRAP, call("gradient_checkpointing_enable", 9), call("gradient_checkpointing_disable", 10))
    assert run(R, peft_setup(calls=disabled, training=None, framework="torch")) == []


def test_frameworks_that_install_the_hook_are_silent():
    assert run(R, peft_setup(framework="trl")) == []
    assert run(R, peft_setup(framework="unsloth")) == []
    for dialect in ("axolotl", "llama-factory"):
        assert run(R, peft_setup(kind="yaml", framework=dialect, dialect=dialect)) == []


def test_peft_model_from_pretrained_counts_only_when_trainable():
    def load(value):
        return call("peft_from_pretrained", 8, "peft.PeftModel.from_pretrained",
                    args={"is_trainable": value})

    [f] = run(R, peft_setup(calls=(load(lit(True, 8)),)))
    assert "PeftModel.from_pretrained(..., is_trainable=True)" in f.message
    assert run(R, peft_setup(calls=(load(Setting.library_default(False, "peft")),))) == []
    # unresolved is_trainable: cannot tell whether adapters train
    assert run(R, peft_setup(calls=(WRAP, load(Setting.unknown("args.resume")),))) == []


def test_add_adapter_is_hooked_by_a_later_enable_only():
    add = call("add_adapter", 8)
    assert run(R, peft_setup(calls=(add,))) == []  # the Trainer enables it after add_adapter
    early = call("gradient_checkpointing_enable", 6)
    [f] = run(R, peft_setup(calls=(early, add), training=None, framework="torch"))
    assert "add_adapter" in f.message and f.span.line == 6


def test_a_launch_default_makes_it_info():
    flag = Setting(True, Origin.ARGPARSE_DEFAULT, at(12, 27), at(12, 5), "--gradient_checkpointing", "args.gc")
    [f] = run(R, peft_setup(training=targs(gradient_checkpointing=flag)))
    assert f.severity is Severity.INFO and "--gradient_checkpointing" in f.message


# ---- the DDP case --------------------------------------------------------------------------
RANK = (Evidence("env-rank", at(3), "LOCAL_RANK places the model"),)
PREP = call("prepare_model_for_kbit_training", 6, "peft.prepare_model_for_kbit_training")


def ddp_setup(train=None, **kw):
    kw.setdefault("quantization", qlora4())
    kw.setdefault("calls", (PREP, WRAP))
    return setup(model=model(), lora=lora(), training=train or targs(), launch=RANK, **kw)


def test_ddp_with_the_trainers_find_unused_default_warns_even_with_the_hook():
    [f] = run(R, ddp_setup())
    assert f.severity is Severity.WARNING and f.span.line == 6  # the prepare call turns it on
    assert "Expected to mark a variable ready only once" in f.message and "ready twice" in f.message
    assert "element 0" not in f.message  # prepare_model_for_kbit_training installed the hook
    assert "ddp_find_unused_parameters=False" in f.fix


def test_ddp_is_silent_when_find_unused_is_off_or_decided_at_launch_or_sharded():
    off = targs(extra={"ddp_find_unused_parameters": lit(False, 11)})
    launch = targs(extra={"ddp_find_unused_parameters": Setting(
        None, Origin.ENV_DEFAULT, at(11), at(11), "$WORLD_SIZE (unset)", "False if ddp else None")})
    for t in (off, launch):
        assert run(R, ddp_setup(t)) == []
    assert run(R, ddp_setup(targs(deepspeed=lit("ds_z3.json", 11)))) == []
    assert run(R, setup(model=model(), lora=lora(), training=targs(), quantization=qlora4(),
                        calls=(PREP, WRAP))) == []  # no launch evidence


def test_ddp_under_trl_needs_use_reentrant_true_written():
    assert run(R, ddp_setup(framework="trl")) == []  # trl >= 0.27 defaults to non-reentrant
    t = targs(gradient_checkpointing=lit(True, 12),
              gradient_checkpointing_kwargs=lit({"use_reentrant": True}, 13),
              extra={"ddp_find_unused_parameters": lit(True, 14)})
    [f] = run(R, ddp_setup(t, framework="trl"))
    assert f.severity is Severity.ERROR and "ready twice" in f.message and "element 0" not in f.message
    assert f.span.line == 14  # at the explicit find_unused_parameters=True


def test_both_failures_make_one_finding():
    [f] = run(R, setup(model=model(), lora=lora(), training=gc_on(), calls=(WRAP,), launch=RANK))
    assert "element 0 of tensors" in f.message and "Under DDP it also fails" in f.message


# ---- extraction it reads -------------------------------------------------------------------
HEAD = ("import torch\nfrom peft import LoraConfig, PeftModel, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype=torch.bfloat16)\n")


def lint_source(tmp_path, body, name="train.py"):
    path = tmp_path / name
    path.write_text(HEAD + body)
    return lint(path, settings_from_args("--gpu a100-80gb"))


def codes(result, code="LL009"):
    return [(f.severity, f.span.line) for f in result.findings if f.code == code]


def test_input_embedding_hook_written_out_counts_as_the_hook(tmp_path):
    body = ("model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj']))\n"
            "args = TrainingArguments(output_dir='o', gradient_checkpointing=True)\n"
            "Trainer(model=model, args=args).train()\n")
    assert codes(lint_source(tmp_path, body)) == [(Severity.WARNING, 6)]
    hooked = "model.get_input_embeddings().register_forward_hook(make_inputs_require_grad)\n" + body
    assert codes(lint_source(tmp_path, hooked)) == []
    other = "model.lm_head.register_forward_hook(log_logits)\n" + body  # not the embedding
    assert codes(lint_source(tmp_path, other)) == [(Severity.WARNING, 7)]


def test_peft_model_from_pretrained_is_extracted(tmp_path):
    body = ("model = PeftModel.from_pretrained(model, 'adapter', is_trainable=True)\n"
            "Trainer(model=model, args=TrainingArguments(output_dir='o', gradient_checkpointing=True)).train()\n")
    [s] = extract_python("t.py", HEAD + body)
    [load] = s.calls_of("peft_from_pretrained")
    assert load.args["is_trainable"].is_(True) and load.args["autocast_adapter_dtype"].value is True
    assert s.model.name_or_path.value == "meta-llama/Llama-2-7b-hf"  # followed through the wrap
    assert codes(lint_source(tmp_path, body)) == [(Severity.WARNING, 6)]
    inference = body.replace(", is_trainable=True", "")
    assert codes(lint_source(tmp_path, inference)) == []


def test_use_reentrant_true_set_after_parsing_is_an_error(tmp_path):
    """The pattern of many trl/transformers example forks: the kwargs assigned after parsing."""
    body = ("training_args = TrainingArguments(output_dir='o', gradient_checkpointing=True)\n"
            "training_args.gradient_checkpointing_kwargs = {'use_reentrant': True}\n"
            "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj']))\n"
            "Trainer(model=model, args=training_args).train()\n")
    assert codes(lint_source(tmp_path, body)) == [(Severity.ERROR, 6)]


def test_add_adapter_is_extracted(tmp_path):
    body = ("model.gradient_checkpointing_enable()\nmodel.add_adapter(LoraConfig(r=8))\n"
            "for batch in loader:\n    model(**batch).loss.backward()\n")
    [s] = extract_python("t.py", HEAD + body)
    assert [c.kind for c in s.calls if c.kind in ("add_adapter", "gradient_checkpointing_enable")] == [
        "gradient_checkpointing_enable", "add_adapter"]
    assert codes(lint_source(tmp_path, body)) == [(Severity.WARNING, 5)]


def test_the_notebook_fixture_reports_in_its_cell():
    result = lint(ROOT / "fixtures" / "rules" / "ll009_bad_notebook.ipynb", settings_from_args("--gpu a100-80gb"))
    assert result.errors == []
    [f] = result.findings
    assert (f.code, f.span.cell, f.span.line, f.severity) == ("LL009", 4, 8, Severity.WARNING)
    cells = [c for c in json.loads((ROOT / "fixtures/rules/ll009_bad_notebook.ipynb").read_text())["cells"]
             if c["cell_type"] == "code"]
    assert "gradient_checkpointing=True" in cells[3]["source"][f.span.line - 1]


def test_fixtures_exist_in_every_style():
    names = {p.name for p in (ROOT / "fixtures" / "rules").rglob("*")}
    for name in ("ll009_bad_trainer.py", "ll009_bad_torch_loop.py", "ll009_bad_notebook.ipynb",
                 "ll009_bad_ddp_find_unused.py", "ll009_good_non_reentrant.py",
                 "trl_sft_trainer_checkpointing.py", "unsloth_checkpointing.py",
                 "axolotl_lora_reentrant_default.yml"):
        assert name in names, name


# ---- LL001 leaves the reentrant explanation to LL009 ---------------------------------------
def test_ll001_fix_points_to_ll009_instead_of_repeating_it():
    s = setup(model=model(), lora=lora(), training=training(gradient_checkpointing=lit(False, 12)))
    [f] = run(GradientCheckpointingOff, s)
    assert '"use_reentrant": False' in f.fix and "LL009" in f.fix
    assert "receive no gradient" not in f.fix and "enable_input_require_grads" not in f.fix


def test_an_enable_call_under_a_launch_flag_is_info(tmp_path):
    """peft's dreambooth examples: `if args.gradient_checkpointing: text_encoder.gradient_checkpointing_enable()`
    after the wrap, the flag off by default (CallSite.guard)."""
    body = ("import argparse\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--gradient_checkpointing', action='store_true')\n"
            "args = parser.parse_args()\n"
            "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj']))\n"
            "if args.gradient_checkpointing:\n    model.gradient_checkpointing_enable()\n"
            "for batch in loader:\n    model(**batch).loss.backward()\n")
    [s] = extract_python("t.py", HEAD + body)
    [enable] = s.calls_of("gradient_checkpointing_enable")
    assert enable.guard is not None and enable.guard.origin is Origin.ARGPARSE_DEFAULT
    result = lint_source(tmp_path, body)
    assert codes(result) == [(Severity.INFO, 11)]
    assert any("--gradient_checkpointing" in f.message for f in result.findings if f.code == "LL009")
    unguarded = body.replace("if args.gradient_checkpointing:\n    ", "")
    assert codes(lint_source(tmp_path, unguarded)) == [(Severity.WARNING, 10)]
