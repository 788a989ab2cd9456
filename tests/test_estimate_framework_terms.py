"""Framework defaults and knobs the estimate prices: LLaMA-Factory v1 defaults, Unsloth's own
``max_seq_length`` and offloaded checkpointing, torchtune ``optimizer_in_bwd`` / activation
offloading / ``compile``, and the library releases assumed (``--assume-version``).

Each figure is pinned against a hand computation shown here, a CPU measurement
(``bench/compile_saved_tensors.py``) or a published measured row (torchtune README
"Optimization flags" table: Llama 3.2 3B, batch 2, 4096 tokens, A100, peak active memory,
rows 96-101 of tests/data/measured_peaks.csv). Fixtures: fixtures/estimate/frame/README.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.framework_terms import compiled_parts
from lintlora.estimate.from_setup import inputs_from_setup
from lintlora.estimate.memory import EstimateInputs, activation_breakdown, estimate_memory
from lintlora.estimate.profiles import LOSS_K, get_profile
from lintlora.estimate.versions import parse_assume_version

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "frame"
GIB = 2**30


def _setups(path: Path):
    from lintlora.engine import read_setups
    from lintlora.settings import Settings

    return list(read_setups(str(path), Settings()))


def _inputs(path: Path, model: str | None = None, **kw):
    (setup,) = _setups(path)
    name = model or setup.get("model.name_or_path").value
    arch = resolve_architecture(name, framework=setup.framework)
    inputs, notes = inputs_from_setup(setup, arch, **kw)
    return inputs, notes, arch


# ---- LLaMA-Factory v1 -------------------------------------------------------------------------
def test_llama_factory_v1_defaults_turn_checkpointing_on():
    # training_args.py @ ff6d4d12: enable_activation_checkpointing = True, cutoff_len = 2048,
    # micro_batch_size = 1, bf16 = True; model_args.py: flash_attn = sdpa
    inputs, notes, arch = _inputs(FIX / "lf_v1_train_lora_sft.yaml")
    assert inputs.gradient_checkpointing is True
    assert "gradient_checkpointing" not in inputs.assumed
    assert (inputs.seq_len, inputs.batch_size, inputs.compute_dtype, inputs.attn_implementation) == (
        2048, 1, "bfloat16", "sdpa")
    on = estimate_memory(inputs, arch)
    off = estimate_memory(replace(inputs, gradient_checkpointing=False), arch)
    # with checkpointing the saved activations are the L layer inputs (2·h bytes per token each,
    # bf16) plus one layer: far below the L layers' activations without it
    L, h, t = arch.num_hidden_layers, arch.hidden_size, inputs.tokens
    assert on.breakdown["activations"] <= L * 2 * h * t + on.activations_per_token_layer * t + 1
    assert off.device_bytes > 1.5 * on.device_bytes


def test_llama_factory_v1_liger_keeps_the_plain_loss():
    # kernel_config.name: liger_kernel; in training LLaMA-Factory v1 passes require_logits=True,
    # which turns fused_linear_cross_entropy off (liger_kernel_ops.py): the logits are materialised
    inputs, notes, arch = _inputs(FIX / "lf_v1_train_full_liger_kernel.yaml")
    assert inputs.liger is True and inputs.loss_impl == "hf"
    act = activation_breakdown(arch, inputs, get_profile(inputs.framework))
    assert act.logits_per_token == pytest.approx(arch.vocab_size * LOSS_K["hf"])  # 12 B per token·vocab
    assert any("without the fused linear cross-entropy" in n for n in notes)


# ---- Unsloth ----------------------------------------------------------------------------------
def _unsloth_copy(tmp_path: Path, *, trainer_length: bool, max_seq_length: int = 2048) -> Path:
    """The README example with a catalogued model (Mistral-7B for gpt-oss-20b), the model's
    max_seq_length set to ``max_seq_length`` and, unless ``trainer_length``, the SFTConfig's
    own ``max_seq_length`` line removed."""
    text = (FIX / "unsloth_readme_sft.py").read_text()
    text = text.replace('model_name = "unsloth/gpt-oss-20b"', 'model_name = "unsloth/mistral-7b-bnb-4bit"')
    text = text.replace("max_seq_length = 2048 #", f"max_seq_length = {max_seq_length} #")
    if not trainer_length:
        text = text.replace("        max_seq_length = max_seq_length,\n        per_device_train_batch_size",
                            "        per_device_train_batch_size")
        assert "SFTConfig(\n        per_device_train_batch_size" in text
    p = tmp_path / "train.py"
    p.write_text(text)
    return p


def test_unsloth_max_seq_length_is_the_training_length(tmp_path):
    # unsloth models/rl.py: args.max_seq_length None -> model.max_seq_length (4096 here), not
    # trl's SFTConfig default of 1024
    inputs, notes, _ = _inputs(_unsloth_copy(tmp_path, trainer_length=False, max_seq_length=4096))
    assert inputs.seq_len == 4096
    assert "seq_len" not in inputs.assumed
    assert not any(n.startswith("max_seq_length not set") for n in notes)


def test_unsloth_readme_offloads_checkpointed_inputs(tmp_path):
    inputs, notes, arch = _inputs(_unsloth_copy(tmp_path, trainer_length=True))
    assert inputs.seq_len == 2048 and inputs.gradient_checkpointing and inputs.checkpoint_offload
    est = estimate_memory(inputs, arch)
    # offloaded: only the recomputed layer is on the GPU, no L × 2·h per-token layer inputs
    assert est.breakdown["activations"] == pytest.approx(est.activations_per_token_layer * inputs.tokens, rel=1e-6)


def test_unsloth_short_sequences_checkpoint_on_the_gpu(tmp_path):
    # unsloth models/_utils.py apply_unsloth_gradient_checkpointing: below 512 tokens plain GC
    inputs, notes, _ = _inputs(_unsloth_copy(tmp_path, trainer_length=True, max_seq_length=256))
    assert inputs.gradient_checkpointing and not inputs.checkpoint_offload


# ---- torchtune --------------------------------------------------------------------------------
def test_torchtune_optimizer_in_bwd_has_no_gradient_buffers():
    # the config: optimizer_in_bwd: True, enable_activation_checkpointing: True, full, bf16
    inputs, notes, arch = _inputs(FIX / "torchtune_3B_full_single_device.yaml")
    assert inputs.method == "full" and inputs.optimizer_in_bwd
    est = estimate_memory(inputs, arch)
    assert est.peak_phase != "optimizer step"
    # at most one gradient at a time: the largest is the tied 128,256 × 3,072 embedding, in bf16,
    # stepped last (activations freed) with a temporary of its size
    emb = 128256 * 3072 * 2
    assert est.breakdown["gradients"] <= emb
    if est.peak_phase == "optimizer step in backward":
        assert (est.breakdown["gradients"], est.breakdown["transient"], est.breakdown["activations"]) == (emb, emb, 0)
    without = estimate_memory(replace(inputs, optimizer_in_bwd=False), arch)
    assert without.allocated_bytes > est.allocated_bytes


def test_compiled_parts_match_the_cpu_measurement():
    # bench/compile_saved_tensors.py, torch 2.13.0 CPU, h=256, I=688 (torchtune-style layer):
    # eager - compiled = 2,912 B/token frozen and 3,936 full, of which 2·h = 512 is the layer
    # input the compiled layer saves itself (not a per-layer saving in a stack)
    arch = resolve_architecture("meta-llama/Llama-3.2-3B")
    small = replace(arch, hidden_size=256, intermediate_size=688)
    parts = {"norms": 2 * 256 * 4, "mlp": 6 * 688, "attention": 1000.0}
    frozen = compiled_parts(parts, small, c=2, sb=2, full=False, norm_bytes=4, gated=True, mlp_bytes=6, experts=1)
    assert sum(parts.values()) - sum(frozen.values()) == pytest.approx(2912 - 512)
    full_parts = dict(parts, norms=2 * 256 * (4 + 2))
    full = compiled_parts(full_parts, small, c=2, sb=2, full=True, norm_bytes=4, gated=True, mlp_bytes=6, experts=1)
    assert sum(full_parts.values()) - sum(full.values()) == pytest.approx(3936 - 512)
    assert full["attention"] == parts["attention"]


def _row(**kw) -> EstimateInputs:
    # torchtune README "Optimization flags": Llama 3.2 3B full, bs 2, 4096 tokens, bf16, AdamW,
    # no checkpointing, packed; the loss "CE full" up-casts to fp32 (LOSS_K["hf"])
    base = dict(method="full", batch_size=2, seq_len=4096, framework="torchtune", loss_impl="hf",
                weight_dtype="bfloat16", compute_dtype="bfloat16")
    base.update(kw)
    return EstimateInputs(**base)


@pytest.mark.parametrize("kw, measured_gib", [
    ({}, 60.0),                                                     # row 96: + packed dataset
    ({"compile": True}, 51.0),                                      # row 97: + compile
    ({"compile": True, "loss_impl": "chunked"}, 42.9),              # row 98: + chunked CE
    ({"compile": True, "loss_impl": "chunked", "gradient_checkpointing": True,
      "optimizer_in_bwd": True, "activation_offload": True}, 21.8),  # row 101: + AC, in-bwd, offload
])
def test_torchtune_full_rows(kw, measured_gib):
    arch = resolve_architecture("meta-llama/Llama-3.2-3B", framework="torchtune")
    est = estimate_memory(_row(**kw), arch)
    # the table reports peak active memory: compared with allocated
    assert est.allocated_bytes == pytest.approx(measured_gib * GIB, rel=0.10)


def test_activation_offloading_keeps_no_saved_inputs_on_the_gpu():
    arch = resolve_architecture("meta-llama/Llama-3.2-3B", framework="torchtune")
    gc = estimate_memory(_row(gradient_checkpointing=True), arch)
    off = estimate_memory(_row(gradient_checkpointing=True, activation_offload=True), arch)
    L, h, t = arch.num_hidden_layers, arch.hidden_size, 2 * 4096
    # the checkpointed layer inputs (L × 2·h B per token, bf16) are what offloading removes
    assert gc.breakdown["activations"] - off.breakdown["activations"] == pytest.approx(L * 2 * h * t, rel=1e-6)


# ---- versions ---------------------------------------------------------------------------------
def test_old_bitsandbytes_keeps_each_4bit_input():
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    base = EstimateInputs(method="qlora", quant="nf4", double_quant=True, batch_size=1, seq_len=512)
    old = replace(base, bnb_saves_input=True)
    parts = activation_breakdown(arch, old, get_profile("transformers")).parts
    # one bf16 copy per distinct input: q/k/v (h), o_proj (h), gate/up (h), down (I) = 2·(3h + I)
    assert parts["linear_inputs"] == 2 * (3 * 4096 + 11008)
    assert activation_breakdown(arch, base, get_profile("transformers")).parts.get("linear_inputs", 0) == 0


def test_assume_version_reaches_the_script_path(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(
        "import torch\n"
        "from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments, Trainer\n"
        "from peft import LoraConfig, get_peft_model\n"
        "bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', bnb_4bit_compute_dtype=torch.bfloat16)\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', quantization_config=bnb)\n"
        "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))\n"
        "args = TrainingArguments(output_dir='o', per_device_train_batch_size=1, bf16=True)\n"
        "Trainer(model=model, args=args, train_dataset=None).train()\n")
    new, notes_new, _ = _inputs(p)
    old, notes_old, _ = _inputs(p, assumed_versions=(("bitsandbytes", "0.41.1"),))
    assert not new.bnb_saves_input and old.bnb_saves_input
    assert any("bitsandbytes 0.50.2 (assumed, not read from the project)" in n for n in notes_new)
    assert any("bitsandbytes 0.41.1 (--assume-version)" in n for n in notes_old)


def test_transformers_4_loads_float32_without_torch_dtype(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n"
        "from peft import LoraConfig, get_peft_model\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
        "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))\n"
        "args = TrainingArguments(output_dir='o', per_device_train_batch_size=1, bf16=True)\n"
        "Trainer(model=model, args=args, train_dataset=None).train()\n")
    v5, _, arch = _inputs(p)
    v4, notes, _ = _inputs(p, assumed_versions=(("transformers", "4.46.3"),))
    assert (v5.weight_dtype, v4.weight_dtype) == ("bfloat16", "float32")
    assert any("transformers 4.46.3 (--assume-version) loads float32" in n for n in notes)
    # 6,738,415,616 parameters (Llama-2-7B) × 4 B, plus bf16 autocast copies of the linears
    w = estimate_memory(v4, arch).breakdown["weights"]
    assert w >= 6_738_415_616 * 4


@pytest.mark.parametrize("text", ["bitsandbytes", "foo=1.0", "bitsandbytes=not-a-version", "torch=" + "9" * 60])
def test_assume_version_refuses_bad_values(text):
    with pytest.raises(ValueError):
        parse_assume_version(text)


def test_assume_version_accepts_pip_spelling():
    assert parse_assume_version("bitsandbytes==0.42.0") == ("bitsandbytes", "0.42.0")
    assert parse_assume_version("Transformers=4.46") == ("transformers", "4.46")


def test_litgpt_qlora_names_the_bitsandbytes_litgpt_pinned(tmp_path):
    # litgpt pinned bitsandbytes==0.42.0 until 2024-12 (pyproject.toml fe96c636): the note says so
    from lintlora.estimate.versions import bnb_note

    assert "bitsandbytes==0.42.0" in bnb_note((), "litgpt")
    assert "0.42.0" not in bnb_note((), "transformers")
    assert bnb_note((("bitsandbytes", "0.42.0"),), "litgpt").startswith("bitsandbytes 0.42.0 (--assume-version): before")
