"""Preference training priced the same wherever it is written (lintlora.estimate.trainers,
lintlora.estimate.rl): TRL scripts, axolotl ``rl:`` configs, LLaMA-Factory ``stage:`` configs and
``lintlora estimate --trainer`` flags. Fixtures: fixtures/estimate/preference/ (README.md cites
each file's source)."""

from pathlib import Path

import pytest

from estimate_support import estimate_json, variant

ROOT = Path(__file__).resolve().parents[1]
PREF = ROOT / "fixtures" / "estimate" / "preference"
SAME = PREF / "same_setup"

# Meta-Llama-3-8B-Instruct, its config.json: 32 layers, hidden 4096, vocab 128,256
L, H, V = 32, 4096, 128_256
B, S = 2, 2048  # the same_setup run: batch 2, 2048 tokens per sequence


def _estimate(path, *flags):
    return estimate_json(str(path), *flags)


def _flags(*flags):
    return estimate_json(*flags)


_variant = variant


# ---- one DPO run, three ways ----------------------------------------------------------------------
SAME_TERMS = ("weights", "adapter_weights", "gradients", "optimizer_states", "activations", "framework")


def test_axolotl_llama_factory_and_trl_price_one_dpo_run_alike():
    trl = _estimate(SAME / "trl_dpo.py")
    ax = _estimate(SAME / "axolotl_dpo.yml")
    lf = _estimate(SAME / "llama_factory_dpo.yaml")
    for e in (trl, ax, lf):
        i = e["inputs"]
        assert (i["trainer"], i["sequences_per_example"], i["batch_size"], i["seq_len"]) == ("dpo", 2, B, S)
        assert (i["lora_r"], i["lora_dropout"], i["gradient_checkpointing"]) == (32, 0.05, True)
        assert i["reference_model"] is False and i["reference_forward"] is True  # adapter disabled
        assert e["peak_phase"] == "reference forward"
    # every term but the log-prob buffers is the same in all three
    for k in SAME_TERMS:
        assert trl["breakdown"][k] == ax["breakdown"][k] == lf["breakdown"][k], k
    # axolotl runs trl's DPOTrainer: the same estimate to the byte (tolerance 0)
    assert ax["allocated_bytes"] == trl["allocated_bytes"]
    assert ax["device_bytes"] == trl["device_bytes"]
    # LLaMA-Factory computes its log-probs from fp32 logits (dpo/trainer.py concatenated_forward
    # .to(torch.float32), get_batch_logps log_softmax): the stated difference is exactly those
    # buffers. trl: 6 B per token·vocab for the policy, 2 B + one sequence's row for the
    # reference; LLaMA-Factory: transformers' 12 B cross-entropy figure, 8 B for the reference
    t = B * 2 * S
    assert trl["breakdown"]["logits"] == 6 * V * t
    assert trl["breakdown"]["transient"] == 2 * V * t + 2 * V * S
    assert lf["breakdown"]["logits"] == 12 * V * t
    assert lf["breakdown"]["transient"] == 8 * V * t
    assert lf["allocated_bytes"] - trl["allocated_bytes"] == (12 - 6) * V * t + (8 - 2) * V * t - 2 * V * S


@pytest.mark.parametrize("dpo_file, sft_edits", [
    ("trl_dpo.py", [("DPOConfig", "SFTConfig"), ("DPOTrainer", "SFTTrainer")]),
    ("axolotl_dpo.yml", [("rl: dpo\n", "")]),
    ("llama_factory_dpo.yaml", [("stage: dpo", "stage: sft")]),
])
def test_each_dpo_estimate_is_above_its_sft_by_the_paired_amount(tmp_path, dpo_file, sft_edits):
    dpo = _estimate(SAME / dpo_file)
    sft = _estimate(_variant(tmp_path, SAME / dpo_file, "sft_" + dpo_file, *sft_edits))
    assert sft["inputs"]["trainer"] == "sft" and sft["inputs"]["sequences_per_example"] == 1
    assert sft["peak_phase"] == "loss"  # checkpointing: the layer inputs and the loss buffers
    t_sft, t_dpo = B * S, B * 2 * S
    # hand computation: checkpointed layer inputs are 2·h bytes (bf16) per token per layer,
    # and the rejected completions double the tokens
    paired_activations = L * 2 * H * (t_dpo - t_sft)
    sft_logits = 12 * V * t_sft                      # transformers' cross-entropy (profile "hf")
    if dpo_file == "llama_factory_dpo.yaml":
        dpo_logits, reference = 12 * V * t_dpo, 8 * V * t_dpo
    else:
        dpo_logits, reference = 6 * V * t_dpo, 2 * V * t_dpo + 2 * V * S
    assert sft["breakdown"]["activations"] == L * 2 * H * t_sft
    assert dpo["allocated_bytes"] - sft["allocated_bytes"] == \
        paired_activations + (dpo_logits - sft_logits) + reference
    assert dpo["device_bytes"] > sft["device_bytes"]


# ---- the reference model -------------------------------------------------------------------------
HEAD = '''from transformers import AutoModelForCausalLM
from trl import {trainer}, {config}
from peft import LoraConfig
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
{ref}cfg = {config}(output_dir="o", per_device_train_batch_size=2, max_length=1024, bf16=True,
               gradient_checkpointing=True{extra})
trainer = {trainer}(model=model, {refarg}args=cfg, train_dataset=ds{peft})
trainer.train()
'''
PEFT = ', peft_config=LoraConfig(r=16, target_modules=["q_proj", "v_proj"])'
LLAMA2_7B = 6_738_415_616  # Llama-2-7b-hf: 6.74B parameters (model card), 2 B each in bf16


def _script(tmp_path, trainer, config, peft=True, extra="", ref=False):
    p = tmp_path / f"{trainer}_{peft}_{abs(hash(extra))}_{ref}.py"
    p.write_text(HEAD.format(
        trainer=trainer, config=config, peft=PEFT if peft else "", extra=extra,
        ref='ref = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")\n'
        if ref else "", refarg="ref_model=ref, " if ref else ""))
    return p


@pytest.mark.parametrize("trainer, config, extra, peft, ref, copy, forward", [
    ("DPOTrainer", "DPOConfig", "", True, False, False, True),        # adapter disabled
    ("DPOTrainer", "DPOConfig", "", False, False, True, True),        # a second copy
    ("DPOTrainer", "DPOConfig", ", precompute_ref_log_probs=True", False, False, False, False),
    ("DPOTrainer", "DPOConfig", "", True, True, True, True),          # ref_model= passed
    ("DPOTrainer", "DPOConfig", ', loss_type="ipo"', False, False, True, True),
    ("KTOTrainer", "KTOConfig", "", False, False, True, True),
    ("KTOTrainer", "KTOConfig", ", precompute_ref_log_probs=True", False, False, False, False),
    ("ORPOTrainer", "ORPOConfig", "", False, False, False, False),    # reference-free
    ("CPOTrainer", "CPOConfig", ', loss_type="simpo"', False, False, False, False),
])
def test_reference_model_follows_trl(tmp_path, trainer, config, extra, peft, ref, copy, forward):
    e = _estimate(_script(tmp_path, trainer, config, peft=peft, extra=extra, ref=ref))
    assert e["inputs"]["reference_model"] is copy
    assert e["inputs"]["reference_forward"] is forward
    assert e["breakdown"]["weights"] == (2 if copy else 1) * LLAMA2_7B * 2
    if 'loss_type="ipo"' in extra:
        assert e["inputs"]["trainer"] == "ipo"
    if 'loss_type="simpo"' in extra:
        assert e["inputs"]["trainer"] == "simpo"


def test_dpo_length_defaults_to_trl_max_length(tmp_path):
    p = _variant(tmp_path, SAME / "trl_dpo.py", "nolen.py", ("    max_length=2048,\n", ""))
    e = _estimate(p)
    assert e["inputs"]["seq_len"] == 1024  # DPOConfig.max_length (trl dpo_config.py)
    assert any("max_length not set: trl's default 1024" in a for a in e["assumptions"])


def test_kto_runs_one_completion_with_gradients(tmp_path):
    kto = _estimate(_script(tmp_path, "KTOTrainer", "KTOConfig"))
    assert kto["inputs"]["sequences_per_example"] == 1
    assert any("KL completions" in a and "no_grad" in a for a in kto["assumptions"])


# ---- real axolotl and LLaMA-Factory examples ---------------------------------------------------
def test_axolotl_examples():
    dpo = _estimate(PREF / "axolotl_llama3_instruct_dpo_lora_8b.yml")
    assert (dpo["inputs"]["trainer"], dpo["inputs"]["sequences_per_example"], dpo["inputs"]["seq_len"]) == \
        ("dpo", 2, 4096)
    assert dpo["inputs"]["quant"] == "int8" and dpo["inputs"]["reference_model"] is False
    kto = _estimate(PREF / "axolotl_llama3_qlora_1b_kto.yaml")
    assert (kto["inputs"]["trainer"], kto["inputs"]["sequences_per_example"]) == ("kto", 1)
    assert kto["inputs"]["reference_forward"] is True and kto["inputs"]["reference_model"] is False
    orpo = _estimate(PREF / "axolotl_mistral_qlora_orpo.yml")
    assert (orpo["inputs"]["trainer"], orpo["inputs"]["sequences_per_example"]) == ("orpo", 2)
    assert orpo["inputs"]["reference_forward"] is False
    assert orpo["peak_phase"] != "reference forward"


def test_axolotl_reference_copies(tmp_path):
    src = SAME / "axolotl_dpo.yml"
    full = _estimate(_variant(tmp_path, src, "full.yml", ("adapter: lora\n", "")))
    assert full["inputs"]["method"] == "full" and full["inputs"]["reference_model"] is True
    own = _estimate(_variant(tmp_path, src, "own.yml", ("adapter: lora\n", "adapter: lora\nrl_adapter_ref_model: true\n")))
    assert own["inputs"]["reference_model"] is True
    lora = _estimate(src)
    assert own["breakdown"]["weights"] - lora["breakdown"]["weights"] == lora["breakdown"]["weights"]
    pre = _estimate(_variant(tmp_path, src, "pre.yml", ("adapter: lora\n", "precompute_ref_log_probs: true\n")))
    assert pre["inputs"]["reference_model"] is False and pre["inputs"]["reference_forward"] is False


def test_llama_factory_examples(tmp_path):
    dpo = _estimate(PREF / "llama_factory_qwen3_lora_dpo.yaml")
    assert (dpo["inputs"]["trainer"], dpo["inputs"]["sequences_per_example"], dpo["inputs"]["seq_len"]) == \
        ("dpo", 2, 2048)
    kto = _estimate(PREF / "llama_factory_qwen3_lora_kto.yaml")
    assert (kto["inputs"]["trainer"], kto["inputs"]["sequences_per_example"]) == ("kto", 1)
    rm = _estimate(PREF / "llama_factory_qwen3_lora_reward.yaml")
    assert (rm["inputs"]["trainer"], rm["inputs"]["sequences_per_example"]) == ("rm", 2)
    assert rm["breakdown"]["logits"] == 0  # a score head (hidden × 1), no vocabulary logits
    assert rm["inputs"]["reference_forward"] is False
    src = PREF / "llama_factory_qwen3_lora_dpo.yaml"
    orpo = _estimate(_variant(tmp_path, src, "orpo.yaml", ("pref_loss: sigmoid", "pref_loss: orpo")))
    assert orpo["inputs"]["trainer"] == "orpo" and orpo["inputs"]["reference_forward"] is False
    full = _estimate(_variant(tmp_path, src, "full.yaml", ("finetuning_type: lora", "finetuning_type: full")))
    assert full["inputs"]["reference_model"] is True
    named = _estimate(_variant(tmp_path, src, "named.yaml", ("pref_beta: 0.1", "pref_beta: 0.1\nref_model: Qwen/Qwen3-4B-Instruct-2507")))
    assert named["inputs"]["reference_model"] is True
    assert named["breakdown"]["weights"] == 2 * dpo["breakdown"]["weights"]


# ---- flags price what the script prices ------------------------------------------------------------
@pytest.mark.parametrize("trainer, config, extra, peft, flags", [
    ("DPOTrainer", "DPOConfig", "", True, ["--trainer", "dpo"]),
    ("DPOTrainer", "DPOConfig", "", False, ["--trainer", "dpo"]),
    ("DPOTrainer", "DPOConfig", ", precompute_ref_log_probs=True", False,
     ["--trainer", "dpo", "--precompute-ref-log-probs"]),
    ("KTOTrainer", "KTOConfig", "", False, ["--trainer", "kto"]),
    ("ORPOTrainer", "ORPOConfig", "", True, ["--trainer", "orpo"]),
])
def test_flag_path_prices_what_the_script_prices(tmp_path, trainer, config, extra, peft, flags):
    script = _estimate(_script(tmp_path, trainer, config, peft=peft, extra=extra))
    method = ["--method", "lora", "--rank", "16", "--targets", "q_proj,v_proj"] if peft else ["--method", "full"]
    flag = _flags("--model", "meta-llama/Llama-2-7b-hf", "--framework", "trl", "--batch-size", "2",
                  "--seq-len", "1024", "--gradient-checkpointing", *method, *flags)
    assert flag["breakdown"] == script["breakdown"]
    assert flag["device_bytes"] == script["device_bytes"]
    assert flag["peak_phase"] == script["peak_phase"]


def test_ref_model_flag(tmp_path):
    base = ["--model", "meta-llama/Llama-2-7b-hf", "--framework", "trl", "--batch-size", "1", "--seq-len", "512",
            "--trainer", "dpo"]
    lora = _flags(*base)
    with_ref = _flags(*base, "--ref-model")
    assert with_ref["breakdown"]["weights"] == 2 * lora["breakdown"]["weights"]
    none = _flags(*base, "--method", "full", "--no-ref-model")
    assert none["inputs"]["reference_model"] is False and none["inputs"]["reference_forward"] is False


def test_liger_dpo_never_materialises_the_reference_logits(tmp_path):
    # DPOConfig(use_liger_kernel=True): trl's _compute_loss_liger runs policy and reference
    # through the fused linear + DPO loss, so neither logits tensor exists whole
    plain = _estimate(SAME / "trl_dpo.py")
    liger = _estimate(_variant(tmp_path, SAME / "trl_dpo.py", "liger.py",
                               ("    optim=\"adamw_torch\",\n", "    optim=\"adamw_torch\",\n    use_liger_kernel=True,\n")))
    assert liger["inputs"]["liger"] is True
    t = B * 2 * S
    assert plain["peak_phase"] == "reference forward"
    assert plain["breakdown"]["transient"] == 2 * V * t + 2 * V * S
    # with Liger the reference forward holds a fused kernel's 0.5 B per token·vocab (not the
    # 2 B logits): the top layer's recompute is the peak now
    assert liger["peak_phase"] == "recompute"
    assert liger["device_bytes"] < plain["device_bytes"]


def test_trainer_flag_on_a_file_prices_the_file_as_that_trainer(tmp_path):
    # an SFT script asked as DPO (--trainer dpo) is priced like the DPO script of the same run
    sft = _variant(tmp_path, SAME / "trl_dpo.py", "sft.py", ("DPOConfig", "SFTConfig"), ("DPOTrainer", "SFTTrainer"))
    asked = _estimate(sft, "--trainer", "dpo")
    dpo = _estimate(SAME / "trl_dpo.py")
    assert asked["inputs"]["trainer"] == "dpo"
    assert asked["breakdown"] == dpo["breakdown"]
