"""Online RL and reward modelling (lintlora.estimate.trainers, lintlora.estimate.rl): GRPO's
generation phase and training step, the reference model behind ``beta``, vLLM, RLOO, PPO's extra
models, reward models. Fixtures: fixtures/estimate/grpo/ (README.md cites each file's source)."""

from pathlib import Path


from estimate_support import estimate_json, variant

ROOT = Path(__file__).resolve().parents[1]
GRPO = ROOT / "fixtures" / "estimate" / "grpo"
PREF = ROOT / "fixtures" / "estimate" / "preference"

# Qwen/Qwen3-4B config.json: 36 layers, hidden 2560, 8 KV heads × head_dim 128, intermediate
# 9728, vocab 151,936
L, H, KV, I, V = 36, 2560, 8 * 128, 9728, 151_936


def _estimate(path, *flags):
    return estimate_json(str(path), *flags)


def _flags(*flags):
    return estimate_json(*flags)


_variant = variant


def test_grpo_script_trains_on_prompt_plus_completion_and_says_how_generations_are_priced():
    e = _estimate(GRPO / "grpo_2048.py")
    i = e["inputs"]
    assert i["trainer"] == "grpo"
    # per_device_train_batch_size counts completions; each is prompt (512, assumed) + 2048
    assert (i["batch_size"], i["sequences_per_example"], i["seq_len"]) == (4, 1, 512 + 2048)
    assert i["max_completion_length"] == 2048 and i["max_prompt_length"] == 512
    # one generation batch: 4 completions × gradient_accumulation_steps 2
    assert i["generation_batch_size"] == 8
    # the logits of the completion only (logits_to_keep = 2048 + 1), trl's 6 B per token·vocab
    assert e["breakdown"]["logits"] == 6 * V * 4 * 2049
    assert e["peak_phase"] == "loss"  # here the training step is above the generation phase
    said = " ".join(e["assumptions"])
    assert "generation phase" in said and "KV cache" in said and "model.generate" in said
    assert "prompt length not set: 512" in said
    assert i["reference_model"] is False and i["reference_forward"] is False  # beta = 0.0


def test_generation_phase_is_the_peak_for_a_large_generation_batch(tmp_path):
    p = _variant(tmp_path, GRPO / "grpo_2048.py", "big.py",
                 ("gradient_accumulation_steps=2", "gradient_accumulation_steps=64"))
    e = _estimate(p)
    rows, tokens = 4 * 64, 512 + 2048
    assert e["inputs"]["generation_batch_size"] == rows
    assert e["peak_phase"] == "generation"
    b = e["breakdown"]
    # keys and values of every layer and token in bf16 (transformers DynamicCache)
    assert b["kv_cache"] == rows * tokens * L * 2 * KV * 2
    assert b["activations"] == 0
    assert b["logits"] == 3 * 4 * V * rows  # fp32 next-token logits, scores, probabilities
    assert b["transient"] == 3 * I * 2 * rows * 512  # the prefill's MLP intermediates
    parts = ("weights", "adapter_weights", "gradients", "optimizer_states", "kv_cache", "logits", "transient",
             "framework")
    assert e["allocated_bytes"] == sum(b[k] for k in parts)
    assert any("peak in the generation phase" in a for a in e["assumptions"])


def test_grpo_reference_model_needs_beta(tmp_path):
    lora = _estimate(_variant(tmp_path, GRPO / "grpo_2048.py", "beta.py",
                              ("max_completion_length=2048,", "max_completion_length=2048, beta=0.04,")))
    assert lora["inputs"]["reference_forward"] is True and lora["inputs"]["reference_model"] is False
    quick = GRPO / "train_grpo_quickstart.py"
    full = _estimate(quick)
    assert full["inputs"]["method"] == "full" and full["inputs"]["reference_model"] is False
    src = quick.read_text().replace("from trl import GRPOTrainer", "from trl import GRPOConfig, GRPOTrainer")
    src = src.replace("    train_dataset=dataset,\n", "    train_dataset=dataset,\n    args=GRPOConfig(output_dir='o', beta=0.04),\n")
    p = tmp_path / "quick_beta.py"
    p.write_text(src)
    ref = _estimate(p)
    assert ref["inputs"]["reference_model"] is True
    assert ref["breakdown"]["weights"] == 2 * full["breakdown"]["weights"]


def test_vllm_colocated_share_and_server_mode(tmp_path):
    colo = _variant(tmp_path, GRPO / "grpo_2048.py", "colo.py",
                    ("max_completion_length=2048,", "max_completion_length=2048, use_vllm=True,"))
    e = _estimate(colo, "--gpu-memory", "80GiB")
    assert e["inputs"]["generation_batch_size"] is None  # vLLM generates
    assert e["breakdown"]["vllm_reserved"] == int(0.3 * 80 * 2**30)  # trl's vllm_gpu_memory_utilization
    no_gpu = _estimate(colo)
    assert "vllm_reserved" not in no_gpu["breakdown"]
    assert any("counted only when the GPU's memory is known" in a for a in no_gpu["assumptions"])
    server = _variant(tmp_path, GRPO / "grpo_2048.py", "server.py",
                      ("max_completion_length=2048,", "max_completion_length=2048, use_vllm=True, vllm_mode='server',"))
    s = _estimate(server, "--gpu-memory", "80GiB")
    assert "vllm_reserved" not in s["breakdown"] and s["inputs"]["generation_batch_size"] is None
    assert any("vllm_mode='server'" in a for a in s["assumptions"])


def test_axolotl_grpo_config():
    e = _estimate(GRPO / "axolotl_grpo_docs.yaml")
    i = e["inputs"]
    assert i["trainer"] == "grpo" and i["batch_size"] == 2
    assert i["seq_len"] == 512 + 512  # prompt (assumed) + trl.max_completion_length
    # trl.use_vllm without vllm_mode: axolotl's docs run a server, trl's default is colocate
    assert i["generation_batch_size"] is None and "vllm_reserved" not in e["breakdown"]
    assert any("mode undecided" in a for a in e["assumptions"])


def test_grpo_flags_price_what_the_script_prices(tmp_path):
    p = _variant(tmp_path, GRPO / "grpo_2048.py", "ga1.py", ("            gradient_accumulation_steps=2,\n", ""))
    script = _estimate(p)
    flags = _flags("--model", "Qwen/Qwen3-4B", "--framework", "trl", "--method", "lora", "--rank", "8",
                   "--batch-size", "4", "--gradient-checkpointing", "--trainer", "grpo",
                   "--max-prompt-length", "512", "--max-completion-length", "2048", "--num-generations", "8")
    assert flags["breakdown"] == script["breakdown"]
    assert flags["device_bytes"] == script["device_bytes"]
    assert flags["inputs"]["generation_batch_size"] == script["inputs"]["generation_batch_size"] == 4


# ---- RLOO, PPO, reward models ----------------------------------------------------------------
LLAMA2_7B = 6_738_415_616           # Llama-2-7b-hf parameters (model card: 6.74B)
LLAMA2_LM_HEAD = 32_000 * 4096      # its untied output layer


def test_rloo_keeps_a_reference_by_default():
    base = ["--model", "meta-llama/Llama-2-7b-hf", "--framework", "trl", "--batch-size", "2", "--trainer", "rloo"]
    full = _flags(*base, "--method", "full")
    assert full["inputs"]["reference_model"] is True  # RLOOConfig beta = 0.05
    assert full["inputs"]["seq_len"] == 512 + 256
    lora = _flags(*base)
    assert lora["inputs"]["reference_model"] is False and lora["inputs"]["reference_forward"] is True


def test_ppo_loads_policy_reference_reward_and_value_models():
    e = _flags("--model", "meta-llama/Llama-2-7b-hf", "--framework", "trl", "--method", "full", "--batch-size", "1",
               "--trainer", "ppo")
    i = e["inputs"]
    assert i["reference_model"] and i["reward_model"] and i["value_model"]
    assert i["sequences_per_example"] == 2  # the critic's backbone runs on the same tokens
    assert i["seq_len"] == 512 + 53  # trl PPOConfig response_length = 53
    value = LLAMA2_7B - LLAMA2_LM_HEAD + 4096  # the backbone and a hidden × 1 score head
    assert e["breakdown"]["weights"] == 2 * (3 * LLAMA2_7B + value)


def test_llama_factory_ppo_puts_value_head_on_the_policy_and_reward_on_an_adapter(tmp_path):
    p = _variant(tmp_path, PREF / "llama_factory_qwen3_lora_dpo.yaml", "ppo.yaml",
                 ("stage: dpo", "stage: ppo\nreward_model: saves/qwen3-4b/lora/reward"))
    e = _estimate(p)
    i = e["inputs"]
    assert i["trainer"] == "ppo" and i["sequences_per_example"] == 1
    assert not (i["reference_model"] or i["reward_model"] or i["value_model"])
    assert i["seq_len"] == 2048 + 1024  # cutoff_len query + max_new_tokens (generating_args.py)
    assert i["generation_batch_size"] == 1  # one mini-batch generated at a time
    full_rm = _estimate(_variant(tmp_path, p, "ppo_full_rm.yaml",
                                 ("reward_model: saves", "reward_model_type: full\nreward_model: saves")))
    assert full_rm["inputs"]["reward_model"] is True
    assert full_rm["breakdown"]["weights"] == 2 * e["breakdown"]["weights"]


def test_trl_reward_trainer_is_a_paired_score_head(tmp_path):
    p = tmp_path / "rm.py"
    p.write_text('''from transformers import AutoModelForSequenceClassification
from trl import RewardConfig, RewardTrainer
from peft import LoraConfig
model = AutoModelForSequenceClassification.from_pretrained("Qwen/Qwen2.5-0.5B", num_labels=1, torch_dtype="bfloat16")
args = RewardConfig(output_dir="o", per_device_train_batch_size=4, max_length=1024, bf16=True)
trainer = RewardTrainer(model=model, args=args, train_dataset=ds, peft_config=LoraConfig(r=8))
trainer.train()
''')
    e = _estimate(p)
    assert (e["inputs"]["trainer"], e["inputs"]["sequences_per_example"], e["inputs"]["seq_len"]) == ("rm", 2, 1024)
    assert e["breakdown"]["logits"] == 0
