"""Measure the bytes autograd saves for a LoRA forward pass on tiny random models, on the CPU.

This pins the estimator's per-token, per-layer activation term (``lintlora.estimate.memory``,
HF transformers + peft profile) to what the installed torch / transformers / peft really do.
It builds tiny random-initialised Llama / Qwen2 / Gemma models from configs (no downloads),
wraps them with peft LoRA, runs one forward pass under ``torch.autograd.graph.saved_tensors_hooks``
and sums the bytes of every distinct storage autograd saves (deduplicated by storage pointer,
counting each storage's full size, since a saved view keeps its whole base alive).

Per-layer bytes are isolated as the difference between an (L+2)-layer and an L-layer model,
divided by 2 and by the number of tokens, so embedding, final norm and loss terms cancel.

Variants: LoRA dropout 0 / 0.05, attention ``sdpa`` / ``eager``, checkpointing off / on
(reentrant checkpointing, whose saved layer inputs the hooks can see), targets q,v / all-linear;
with bitsandbytes installed (its CPU backend) also a QLoRA NF4 base with and without
``prepare_model_for_kbit_training``. Dropout runs through the kernel CUDA uses (a bool mask, see
``_cuda_dropout``), since the estimator models a GPU.

Usage: ``python bench/saved_tensors.py [--json]``. Needs the optional ``measure`` extra
(torch, transformers, peft); not needed by CI.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FAMILIES = {
    # tiny shapes keeping the real ratios that matter: GQA (kv < heads), I/h ≈ 2.7
    "llama": dict(model_type="llama", hidden_size=256, intermediate_size=688, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=32, vocab_size=512),
    "qwen2": dict(model_type="qwen2", hidden_size=256, intermediate_size=704, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=32, vocab_size=512),
    "gemma": dict(model_type="gemma", hidden_size=256, intermediate_size=768, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=64, vocab_size=512),
}


@dataclass
class Variant:
    family: str
    targets: tuple[str, ...] | str
    dropout: float
    attn: str
    checkpointing: bool
    quant: bool = False  # bitsandbytes NF4 base (needs bitsandbytes with its CPU backend)
    kbit: bool = False  # prepare_model_for_kbit_training (fp32 embeddings/norms/lm_head)


def _cuda_dropout(input, p=0.5, training=True, inplace=False):
    """``F.dropout`` as CUDA runs it: the fused kernel, which keeps a bool mask.

    On CUDA ``at::dropout`` calls ``at::native_dropout`` (aten ``native/Dropout.cpp``,
    ``is_fused_kernel_acceptable``: CUDA/XPU/lazy inputs only); on the CPU it multiplies by a
    float noise tensor, which autograd keeps instead. The estimator models the CUDA path.
    """
    import torch

    if not training or p == 0.0:
        return input
    return torch.native_dropout(input, p, True)[0]


def _quantize(model) -> None:
    """Replace the decoder blocks' nn.Linear layers with bitsandbytes NF4 Linear4bit."""
    import bitsandbytes as bnb
    import torch

    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            if isinstance(child, torch.nn.Linear) and ".layers." in f"{name}.{child_name}":
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                      compute_dtype=torch.bfloat16, quant_type="nf4")
                q.weight = bnb.nn.Params4bit(child.weight.data.to(torch.bfloat16), requires_grad=False,
                                             quant_type="nf4")
                setattr(mod, child_name, q.to("cpu"))
    model.is_loaded_in_4bit = True


def _build(family: str, layers: int, attn: str):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = dict(FAMILIES[family])
    model_type = spec.pop("model_type")
    cfg = AutoConfig.for_model(model_type, num_hidden_layers=layers, **spec)
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=torch.bfloat16)
    model.config.use_cache = False
    return model


def saved_bytes(v: Variant, layers: int, batch: int, seq: int) -> int:
    """Bytes of distinct storages autograd saves in one forward pass (no loss)."""
    import torch
    from peft import LoraConfig, get_peft_model

    model = _build(v.family, layers, v.attn)
    if v.quant:
        _quantize(model)
    if v.kbit:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    targets = list(v.targets) if not isinstance(v.targets, str) else v.targets
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=v.dropout,
                                             target_modules=targets))
    model.train()
    if v.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.enable_input_require_grads()
    seen: dict[int, int] = {}
    # parameters are saved too (a frozen weight is needed for the input gradient) but they are
    # weights, not activations: skip their storages.
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t):
        try:
            st = t.untyped_storage()
            if st.data_ptr() in params or st.nbytes() == 0:
                return t
            seen[st.data_ptr()] = st.nbytes()
        except (RuntimeError, NotImplementedError):
            pass
        return t

    ids = torch.randint(0, FAMILIES[v.family]["vocab_size"], (batch, seq))
    from unittest import mock

    # torch.is_autocast_enabled() without a device type reports CUDA autocast only; on a GPU
    # peft's bitsandbytes LoRA layers see True there (and skip their input cast): report the
    # CPU autocast state in its place so the CPU run takes the GPU's path.
    cpu_autocast = torch.is_autocast_enabled

    def _autocast_enabled(*args):
        return cpu_autocast(*args) if args else cpu_autocast("cpu")

    with mock.patch.object(torch.nn.functional, "dropout", _cuda_dropout), \
            mock.patch.object(torch, "is_autocast_enabled", _autocast_enabled):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(input_ids=ids)
    del out
    return sum(seen.values())


def per_token_layer(v: Variant, batch: int = 2, seq: int = 128, layers: int = 2) -> float:
    """Saved bytes per token per decoder layer (difference of two depths)."""
    a = saved_bytes(v, layers, batch, seq)
    b = saved_bytes(v, layers + 2, batch, seq)
    return (b - a) / 2 / (batch * seq)


def predicted(v: Variant, batch: int = 2, seq: int = 128) -> float:
    """The estimator's activation term per token per layer for the same variant."""
    from lintlora.estimate.architecture import from_hf_config
    from lintlora.estimate.memory import EstimateInputs, activation_breakdown
    from lintlora.estimate.profiles import get_profile

    spec = dict(FAMILIES[v.family])
    arch = from_hf_config(dict(spec, num_hidden_layers=2), name=f"tiny-{v.family}", source="bench")
    inputs = EstimateInputs(method="qlora" if v.quant else "lora", batch_size=batch, seq_len=seq,
                            gradient_checkpointing=v.checkpointing, lora_r=8,
                            lora_dropout=v.dropout, target_modules=v.targets,
                            attn_implementation=v.attn, framework="transformers",
                            compute_dtype="bfloat16", weight_dtype="bfloat16",
                            quant="nf4" if v.quant else None, quant_compute_dtype="bfloat16" if v.quant else None,
                            kbit_upcast=v.kbit, bnb_saves_input=False)
    from lintlora.estimate.params import count_trainable

    trainable = count_trainable(arch, 8, v.targets)
    act = activation_breakdown(arch, inputs, get_profile("transformers"), trainable)
    if v.checkpointing:
        return act.checkpoint_per_token_layer
    return act.per_token_layer


VARIANTS = [
    Variant("llama", ("q_proj", "v_proj"), 0.0, "sdpa", False),
    Variant("llama", ("q_proj", "v_proj"), 0.05, "sdpa", False),
    Variant("llama", "all-linear", 0.05, "sdpa", False),
    Variant("llama", "all-linear", 0.0, "sdpa", False),
    Variant("llama", ("q_proj", "v_proj"), 0.05, "eager", False),
    Variant("llama", ("q_proj", "v_proj"), 0.05, "sdpa", True),
    Variant("qwen2", ("q_proj", "k_proj", "v_proj", "o_proj"), 0.05, "sdpa", False),
    Variant("qwen2", "all-linear", 0.1, "sdpa", False),
    Variant("gemma", ("q_proj", "v_proj"), 0.05, "sdpa", False),
    Variant("gemma", "all-linear", 0.0, "eager", False),
]

# QLoRA on a bitsandbytes NF4 base (bitsandbytes >= 0.43.2: 4-bit matmuls keep no input), with and
# without prepare_model_for_kbit_training's fp32 up-cast; run when bitsandbytes is importable.
QLORA_VARIANTS = [
    Variant("llama", ("q_proj", "v_proj"), 0.05, "sdpa", False, quant=True, kbit=True),
    Variant("llama", "all-linear", 0.0, "sdpa", False, quant=True, kbit=True),
    Variant("llama", "all-linear", 0.05, "sdpa", False, quant=True, kbit=False),
    Variant("llama", ("q_proj", "v_proj"), 0.0, "sdpa", False, quant=True, kbit=False),
    Variant("llama", ("q_proj", "v_proj"), 0.05, "sdpa", True, quant=True, kbit=True),
]


def run(variants=VARIANTS, batch: int = 2, seq: int = 128) -> list[dict]:
    """Measure and predict every variant; returns one dict per variant."""
    rows = []
    for v in variants:
        m = per_token_layer(v, batch, seq)
        p = predicted(v, batch, seq)
        rows.append({"family": v.family + ("-nf4" if v.quant else "") + ("-kbit" if v.kbit else ""),
                     "targets": v.targets if isinstance(v.targets, str) else ",".join(v.targets),
                     "dropout": v.dropout, "attn": v.attn, "checkpointing": v.checkpointing,
                     "measured": m, "predicted": p, "error_pct": 100.0 * (p - m) / m if m else None})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=2)
    args = ap.parse_args()
    import peft
    import torch
    import transformers

    variants = list(VARIANTS)
    try:
        import bitsandbytes  # noqa: F401

        variants += QLORA_VARIANTS
    except ImportError:
        print("bitsandbytes not installed: QLoRA variants skipped")
    rows = run(variants, batch=args.batch, seq=args.seq)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}; "
          f"batch {args.batch}, seq {args.seq}; bytes per token per layer")
    print(f"{'family':7} {'targets':24} {'drop':>5} {'attn':6} {'gc':3} {'measured':>9} {'model':>9} {'err%':>6}")
    for r in rows:
        print(f"{r['family']:7} {r['targets']:24} {r['dropout']:5.2f} {r['attn']:6} {'on' if r['checkpointing'] else 'off':3} "
              f"{r['measured']:9.1f} {r['predicted']:9.1f} {r['error_pct']:6.1f}")


if __name__ == "__main__":
    main()
