"""No rule raises, whatever an extractor hands it: random setups built from odd values."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st
from rules_support import ctx

from lintlora.rules import load_rules
from lintlora.training_setup import (
    CallSite,
    DataLoaderSpec,
    Evidence,
    Lora,
    ModelLoad,
    Quantization,
    Setting,
    Span,
    TrainingArgs,
    TrainingSetup,
)

SPAN = Span("x.py", 3, 1)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 100), st.floats(allow_nan=True), st.text(max_size=12),
    st.sampled_from(["auto", "balanced", "cuda:0", "cpu", "disk", "float16", "bfloat16", ".*", "all-linear",
                     "embed_tokens", "lm_head", "([", "unsloth"]),
)
values = st.one_of(
    scalars,
    st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["q_proj", "lm_head", "embed_tokens", "wte"])),
             max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(0, 3), st.sampled_from(["cpu", "disk", "cuda:1"])),
                    max_size=3),
)
settings_st = st.one_of(
    st.just(Setting()),
    values.map(lambda v: Setting.literal(v, SPAN)),
    values.map(lambda v: Setting.library_default(v, "lib")),
    st.just(Setting.unknown("args.x")),
)
kinds = st.sampled_from(["gradient_checkpointing_enable", "gradient_checkpointing_disable", "empty_cache",
                         "prepare_model_for_kbit_training", "get_peft_model", "model_move", "autocast",
                         "print_trainable_parameters", "custom"])
calls = st.builds(lambda k, loop, step, arg, order: CallSite(k, f"m.{k}", SPAN, loop, step, {"dtype": arg,
                  "use_gradient_checkpointing": arg}, "model", order),
                  kinds, st.booleans(), st.booleans(), settings_st, st.integers(0, 5))
setups = st.builds(
    lambda kind, fw, name, dm, bits, fp16, gc, targets, saves, r, workers, cs, ev, train: TrainingSetup(
        "x.py", kind=kind, framework=fw,
        model=ModelLoad(name_or_path=name, device_map=dm, torch_dtype=fp16, variable="model"),
        quantization=Quantization(bits=bits, bnb_4bit_compute_dtype=fp16, llm_int8_enable_fp32_cpu_offload=bits),
        lora=Lora(r=r, target_modules=targets, modules_to_save=saves),
        training=TrainingArgs(fp16=fp16, gradient_checkpointing=gc, dataloader_num_workers=workers),
        dataloaders=(DataLoaderSpec(num_workers=workers),),
        calls=tuple(cs), launch=tuple(Evidence(e, SPAN) for e in ev), is_training=train),
    st.sampled_from(["python", "yaml", "notebook"]), st.sampled_from(["transformers", "torch", "unsloth", "axolotl"]),
    # model names are strings or unknown (the extractors' contract)
    st.sampled_from([Setting.literal("meta-llama/Llama-2-7b-hf", SPAN), Setting.literal("gpt2", SPAN),
                     Setting.literal("nobody/unknown-model", SPAN), Setting.unknown("args.model")]),
    settings_st, settings_st, settings_st, settings_st, settings_st, settings_st, settings_st, settings_st,
    st.lists(calls, max_size=4), st.lists(st.sampled_from(["env-rank", "accelerator", "other"]), max_size=2),
    st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, st.sampled_from([None, "t4", "a100-80gb"]))
def test_rules_never_raise(setup, gpu):
    context = ctx(gpu, known_model=True)
    for rule in load_rules():
        for finding in rule().check(setup, context):
            assert finding.code == rule.code and finding.message and finding.span is not None
