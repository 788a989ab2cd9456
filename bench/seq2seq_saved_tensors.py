"""Measure the bytes autograd saves in one LoRA forward of a tiny random T5 / BART, on the CPU.

The encoder-decoder counterpart of ``bench/saved_tensors.py`` (same method: a
``torch.autograd.graph.saved_tensors_hooks`` pack hook sums the full size of every distinct
storage autograd saves, parameters excluded; dropout runs through the fused kernel CUDA uses, a
bool mask). It pins :mod:`lintlora.estimate.seq2seq` to what torch / transformers / peft do.

The model is built from a config (no download), wrapped with peft LoRA on peft's default
targets (``q``, ``v`` for T5: encoder self-attention, decoder self-attention and cross-attention;
``q_proj``, ``v_proj`` for BART), run once with ``input_ids`` (``S`` source tokens) and ``labels``
(``T`` target tokens), loss excluded (only the model's forward is hooked).

Per-layer terms are isolated by depth differences: an encoder layer is
``(bytes(Le + 2, Ld) - bytes(Le, Ld)) / 2``, a decoder layer likewise with ``Ld``; each is
measured at two token counts, so the part that grows with the tokens (bytes per token) and the
part that does not (bytes per layer: a 16-bit copy of T5's fp32 ``wo`` weight cast by autocast)
are separated. Attention runs ``eager`` (the scores are materialised, as the CPU SDPA kernels
also do with a mask and dropout) and ``sdpa``; on CUDA SDPA keeps no scores (notes §2.2).

Usage: ``python bench/seq2seq_saved_tensors.py [--json]`` (needs torch, transformers, peft).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FAMILIES = {
    # tiny shapes keeping the ratios of the real ones: T5 v1.1 / Flan-T5 (gated-gelu, untied head,
    # d_ff/d_model = 2.75 as flan-t5-large), T5 v1.0 (relu, tied), BART (GELU fc1/fc2, biases)
    "t5-gated": dict(model_type="t5", d_model=256, d_ff=704, d_kv=64, num_heads=4, vocab_size=512,
                     feed_forward_proj="gated-gelu", tie_word_embeddings=False, dropout_rate=0.1),
    "t5-relu": dict(model_type="t5", d_model=256, d_ff=1024, d_kv=64, num_heads=4, vocab_size=512,
                    feed_forward_proj="relu", tie_word_embeddings=True, dropout_rate=0.1),
    "bart": dict(model_type="bart", d_model=256, encoder_ffn_dim=1024, decoder_ffn_dim=1024,
                 encoder_attention_heads=4, decoder_attention_heads=4, vocab_size=512,
                 max_position_embeddings=512, dropout=0.1, attention_dropout=0.0,
                 activation_dropout=0.0),
}
TARGETS = {"t5-gated": ["q", "v"], "t5-relu": ["q", "v"], "bart": ["q_proj", "v_proj"]}


@dataclass
class Variant:
    family: str
    dtype: str = "bfloat16"  # weights; "bfloat16" runs under bf16 autocast, "float32" without
    attn: str = "eager"
    lora_dropout: float = 0.1


def _cuda_dropout(input, p=0.5, training=True, inplace=False):
    """``F.dropout`` as CUDA runs it (a bool mask; see bench/saved_tensors.py)."""
    import torch

    if not training or p == 0.0:
        return input
    return torch.native_dropout(input, p, True)[0]


def _build(v: Variant, enc: int, dec: int):
    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    spec = dict(FAMILIES[v.family])
    model_type = spec.pop("model_type")
    if model_type == "t5":
        spec.update(num_layers=enc, num_decoder_layers=dec)
    else:
        spec.update(encoder_layers=enc, decoder_layers=dec)
    cfg = AutoConfig.for_model(model_type, **spec)
    torch.manual_seed(0)
    dtype = getattr(torch, v.dtype)
    model = AutoModelForSeq2SeqLM.from_config(cfg, attn_implementation=v.attn, dtype=dtype)
    if model_type == "t5" and dtype != torch.float32:
        # from_pretrained keeps T5's `wo` in float32 (T5PreTrainedModel._keep_in_fp32_modules);
        # from_config does not: do it by hand
        for name, mod in model.named_modules():
            if name.endswith("DenseReluDense.wo"):
                mod.float()
    model.config.use_cache = False
    return model


def saved_bytes(v: Variant, enc: int, dec: int, batch: int, src: int, tgt: int) -> int:
    """Bytes of distinct storages autograd saves in one forward (loss excluded)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from unittest import mock

    model = _build(v, enc, dec)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=v.lora_dropout,
                                             target_modules=TARGETS[v.family]))
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        try:
            st = t.untyped_storage()
            if st.data_ptr() in params or st.nbytes() == 0:
                return t
            seen[st.data_ptr()] = st.nbytes()
        except (RuntimeError, NotImplementedError):
            pass
        return t

    vocab = FAMILIES[v.family]["vocab_size"]
    torch.manual_seed(1)
    ids = torch.randint(3, vocab, (batch, src))
    labels = torch.randint(3, vocab, (batch, tgt))
    autocast = v.dtype != "float32"
    with mock.patch.object(torch.nn.functional, "dropout", _cuda_dropout):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                # the decoder input is the labels shifted right: random ids of the same length
                out = model(input_ids=ids, decoder_input_ids=labels)
    del out
    return sum(seen.values())


def layer_terms(v: Variant, stack: str, batch: int = 2, src: int = 64, tgt: int = 32) -> dict:
    """Bytes one encoder (``stack="encoder"``) or decoder layer saves: measured at the given
    lengths and at both lengths doubled (for the encoder only ``src`` matters, for the decoder
    ``tgt`` and ``src``), returning bytes at each, per token of its own stack, and the
    per-layer constant ``2·b(n) - b(2n)`` where the per-token part is linear."""
    def per_layer(s: int, t: int) -> float:
        if stack == "encoder":
            a, b = saved_bytes(v, 2, 1, batch, s, t), saved_bytes(v, 4, 1, batch, s, t)
        else:
            a, b = saved_bytes(v, 1, 2, batch, s, t), saved_bytes(v, 1, 4, batch, s, t)
        return (b - a) / 2

    one = per_layer(src, tgt)
    two = per_layer(2 * src, 2 * tgt)
    tokens = batch * (src if stack == "encoder" else tgt)
    return {"bytes_at_n": one, "bytes_at_2n": two, "tokens_n": tokens,
            "per_token_at_n": one / tokens, "constant": 2 * one - two}


def predicted(v: Variant, stack: str, batch: int = 2, src: int = 64, tgt: int = 32) -> float:
    """Bytes one layer keeps per :mod:`lintlora.estimate.seq2seq` under the CPU's autocast policy
    (``cuda=False``), at the lengths of :func:`layer_terms`' first point: per-token parts times
    the tokens, plus the per-layer constant (autocast's copies of fp32 ``wo`` and adapters)."""
    from lintlora.estimate.architecture import from_hf_config
    from lintlora.estimate.memory import EstimateInputs
    from lintlora.estimate.profiles import get_profile
    from lintlora.estimate.seq2seq import seq2seq_activations

    spec = dict(FAMILIES[v.family], num_layers=2, num_decoder_layers=2, encoder_layers=2, decoder_layers=2)
    arch = from_hf_config(spec, name=f"tiny-{v.family}", source="bench")
    inputs = EstimateInputs(method="lora", batch_size=batch, seq_len=src, target_seq_len=tgt, lora_r=8,
                            lora_dropout=v.lora_dropout, attn_implementation=v.attn, compute_dtype=v.dtype,
                            weight_dtype=v.dtype)
    act = seq2seq_activations(arch, inputs, get_profile("transformers"), 12.0, cuda=False)
    const = act.per_layer_constant / 4  # 2 encoder + 2 decoder layers
    if stack == "encoder":
        return act.encoder_per_token * batch * src + const
    return (act.decoder_per_token * tgt + act.decoder_per_source_token * src) * batch + const


VARIANTS = [
    Variant("t5-gated", "bfloat16", "eager", 0.1),
    Variant("t5-gated", "bfloat16", "sdpa", 0.1),
    Variant("t5-gated", "bfloat16", "sdpa", 0.0),
    Variant("t5-gated", "float32", "sdpa", 0.1),
    Variant("t5-relu", "bfloat16", "sdpa", 0.1),
    Variant("bart", "bfloat16", "sdpa", 0.1),
    Variant("bart", "bfloat16", "sdpa", 0.0),
]


def run(variants=VARIANTS, batch: int = 2, src: int = 64, tgt: int = 32) -> list[dict]:
    rows = []
    for v in variants:
        for stack in ("encoder", "decoder"):
            m = layer_terms(v, stack, batch, src, tgt)
            p = predicted(v, stack, batch, src, tgt)
            rows.append({"family": v.family, "dtype": v.dtype, "attn": v.attn,
                         "lora_dropout": v.lora_dropout, "stack": stack, "batch": batch, "src": src,
                         "tgt": tgt, **m, "predicted": p,
                         "error_pct": 100.0 * (p - m["bytes_at_n"]) / m["bytes_at_n"]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--src", type=int, default=64)
    ap.add_argument("--tgt", type=int, default=32)
    args = ap.parse_args()
    import peft
    import torch
    import transformers

    rows = run(batch=args.batch, src=args.src, tgt=args.tgt)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}; "
          f"batch {args.batch}, source {args.src}, target {args.tgt} (and both doubled)")
    for r in rows:
        print(f"{r['family']:9} {r['dtype']:8} {r['attn']:5} drop {r['lora_dropout']:.2f} {r['stack']:7} "
              f"layer bytes {r['bytes_at_n']:10.0f} / {r['bytes_at_2n']:10.0f} (2n); "
              f"{r['per_token_at_n']:8.1f} B/token; constant {r['constant']:9.0f}; "
              f"model {r['predicted']:10.0f} ({r['error_pct']:+.1f}%)")


if __name__ == "__main__":
    main()
