"""LL003 broad-target-modules on hand-built setups (real architectures, toy memory estimate)."""

from __future__ import annotations

import pytest
from rules_support import GiB, ctx, lit, lora, model, run, setup, training

from lintlora.findings import Severity
from lintlora.rules.ll003_broad_target_modules import BroadTargetModules as R, broad_entries
from lintlora.training_setup import Setting

LLAMA2 = "meta-llama/Llama-2-7b-hf"  # vocab 32,000, hidden 4,096, untied head
LLAMA3 = "meta-llama/Meta-Llama-3-8B"  # vocab 128,256, hidden 4,096


def test_modules_to_save_embedding_and_head_counts_the_full_copies():
    s = setup(model=model(LLAMA2), training=training(),
              lora=lora(8, ("q_proj", "v_proj"), modules_to_save=lit(["embed_tokens", "lm_head"], 8, 12)))
    [f] = run(R, s)
    assert (f.code, f.severity, f.span.line, f.span.column) == ("LL003", Severity.WARNING, 8, 12)
    extra = 2 * 32_000 * 4_096  # two full 32,000 x 4,096 matrices
    lora_only = 4_194_304  # r=8 on q_proj and v_proj of 32 layers: 32 * 2 * 8 * (4096 + 4096)
    assert f"{extra + lora_only:,} trainable parameters instead of {lora_only:,}" in f.message
    assert f"({extra:,} more)" in f.message
    # toy estimator: 16 bytes per fully trained parameter
    assert f.estimate.peak_bytes - f.estimate.peak_after_fix_bytes == extra * 16
    assert "trainable_token_indices" in f.fix


def test_target_modules_with_embedding_and_head_under_peft():
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
               "embed_tokens", "lm_head"]
    s = setup(model=model(LLAMA3), training=training(), lora=lora(16, targets, line=9))
    [f] = run(R, s)
    assert f.span.line == 9
    assert "`embed_tokens` and `lm_head`" in f.message
    assert 'save_embedding_layers="auto"' in f.message
    assert "vocabulary-sized output" in f.message
    # LoRA on the embedding (r*(V+h)) and on lm_head (r*(h+V)): peft counts them as adapters
    assert f"({2 * 16 * (128_256 + 4_096):,} more)" in f.message
    # both 128,256 x 4,096 matrices stored in 16-bit with every checkpoint
    assert f"{2 * 128_256 * 4_096 * 2 / GiB:.1f} GiB more per checkpoint" in f.message
    assert f.estimate.peak_after_fix_bytes == f.estimate.peak_bytes - GiB  # toy: lm_head adapter


def test_unsloth_trains_named_embeddings_in_full():
    s = setup(framework="unsloth", model=model(LLAMA2), training=training(),
              lora=lora(16, ["q_proj", "v_proj", "embed_tokens", "lm_head"]))
    [f] = run(R, s)
    assert "unsloth trains" in f.message
    assert f"({2 * 32_000 * 4_096:,} more)" in f.message  # full copies instead of adapters


@pytest.mark.parametrize("targets", ["all-linear", ("q_proj", "v_proj"), r".*\.(q_proj|v_proj)", None,
                                     ("q_proj", "output")])
def test_legitimate_targets_are_silent(targets):
    s = setup(model=model(LLAMA2), training=training(), lora=lora(8, targets))
    assert run(R, s) == []


def test_a_pattern_matching_everything():
    s = setup(model=model(LLAMA2), training=training(), lora=lora(8, ".*"))
    [f] = run(R, s)
    assert "matches every module" in f.message and "all-linear" in f.fix
    # the fixed setup names the linear layers the pattern reached, minus the head and embedding
    # (toy estimator: a pattern reaching lm_head costs 1 GiB)
    assert f.estimate.peak_bytes - f.estimate.peak_after_fix_bytes == GiB
    assert f"{2 * 8 * (32_000 + 4_096):,} more" in f.message  # LoRA on embedding and head, r=8


def test_unknown_model_still_reports_without_a_count():
    s = setup(model=model("my-org/secret"), training=training(),
              lora=lora(8, ["q_proj", "lm_head"]))
    [f] = run(R, s, ctx(known_model=False))
    assert "No parameter count" in f.message and "--model" in f.message
    # without an architecture, the generic names decide: torchtune/Meta "output" counts too
    s2 = setup(model=model("x"), training=training(), lora=lora(8, ["q_proj", "output"]))
    assert len(run(R, s2, ctx(known_model=False))) == 1


def test_unknown_rank_gives_no_lora_count_but_full_copies_still_count():
    s = setup(model=model(LLAMA2), training=training(), lora=lora(None, ["q_proj", "lm_head"]))
    [f] = run(R, s)
    assert "rank r is not resolved" in f.message
    s2 = setup(model=model(LLAMA2), training=training(),
               lora=lora(None, ["q_proj"], modules_to_save=lit(["lm_head"], 8)))
    [f2] = run(R, s2)
    assert f"({32_000 * 4_096:,} more)" in f2.message and "counted with r=8" in f2.message


def test_unresolved_or_absent_lora_and_inference_are_silent():
    unresolved = setup(model=model(LLAMA2), training=training(),
                       lora=lora(8, ["q_proj"]).__class__(r=lit(8, 7), target_modules=Setting.unknown("args.t")))
    no_lora = setup(model=model(LLAMA2), training=training())
    inference = setup(model=model(LLAMA2), lora=lora(8, ["lm_head"]), is_training=False)
    for s in (unresolved, no_lora, inference):
        assert run(R, s) == []


def test_broad_entries_matching_rules():
    from lintlora.estimate.architecture import resolve_architecture

    gpt2 = resolve_architecture("gpt2")
    assert broad_entries(["c_attn", "wte"], gpt2, "transformers").entries == ("wte",)
    assert broad_entries(["c_attn", "wpe"], gpt2, "transformers").entries == ("wpe",)
    assert not broad_entries("all-linear", gpt2, "transformers")
    assert not broad_entries("([unclosed", gpt2, "transformers")  # invalid regex: peft raises, we don't judge
    llama = resolve_architecture(LLAMA2)
    b = broad_entries(["model.embed_tokens"], llama, "transformers")
    assert b.entries == ("model.embed_tokens",) and b.embedding and not b.output
    assert broad_entries(".*lm_head", llama, "transformers").output


def test_own_output_switch_of_torchtune_and_litgpt_is_info_in_their_words():
    for framework, switch in (("torchtune", "apply_lora_to_output: True"), ("litgpt", "lora_head: true")):
        s = setup(kind="yaml", framework=framework, model=model(LLAMA2), training=training(),
                  lora=lora(8, ["q_proj", "v_proj", "lm_head"]))
        [f] = run(R, s)
        assert f.severity is Severity.INFO
        assert switch in f.message and "peft" not in f.message and "per checkpoint" not in f.message


def test_yaml_messages_use_the_config_key():
    from rules_support import Lora, Origin, at

    targets = Setting(("q_proj", "lm_head"), Origin.LITERAL, at(9, 3), None, None, "lora_target_modules")
    lo = Lora(r=lit(8, 6), target_modules=targets)
    s = setup(kind="yaml", framework="axolotl", model=model(LLAMA2), training=training(), lora=lo)
    [f] = run(R, s)
    assert "`lora_target_modules` lists `lm_head`" in f.message and "from lora_target_modules" in f.fix
    # only the targeted output layer is stored with each checkpoint: 32,000 x 4,096 in 16-bit
    assert f"{32_000 * 4_096 * 2 / GiB:.1f} GiB more per checkpoint" in f.message
