"""Measure what ``torch.compile`` changes in the bytes autograd saves for one decoder layer, on the CPU.

torchtune's ``compile: True`` compiles each ``TransformerSelfAttentionLayer`` on its own
(``torchtune/training/_compile.py`` ``compile_model``: ``m.compile(backend=...)`` per layer).
Inductor's default partitioner (AOTAutograd ``min_cut_rematerialization_partition``,
``torch/_functorch/partitioners.py``) recomputes cheap pointwise ops in backward instead of
saving their outputs, so a compiled layer saves fewer bytes than the eager one. This script
builds a layer written like torchtune's (``torchtune/modules/rms_norm.py``: RMSNorm on the
fp32 up-cast input; ``attention.py``: q/k/v/o projections, K/V expanded for GQA, SDPA;
``feed_forward.py``: ``w2(silu(w1(x)) * w3(x))``), in bf16, and sums the bytes of every
distinct storage autograd saves (``torch.autograd.graph.saved_tensors_hooks``, parameters
excluded, deduplicated by storage), eager and compiled, for full fine-tuning (every weight
trains) and for frozen weights (the LoRA case: no weight gradients).

Usage: ``python bench/compile_saved_tensors.py`` (torch with a C++ compiler for Inductor's CPU
backend; not needed by CI). Prints bytes per token per layer and the parts they match.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F
from torch import nn

H, I, HEADS, KV, HD = 256, 688, 8, 2, 32
B, S = 2, 256


class RMSNorm(nn.Module):
    """torchtune/modules/rms_norm.py: normalise the fp32 input, scale, cast back."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x_fp32 = x.float()
        x_normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return x_normed * self.scale


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.sa_norm = RMSNorm(H)
        self.q_proj = nn.Linear(H, HEADS * HD, bias=False)
        self.k_proj = nn.Linear(H, KV * HD, bias=False)
        self.v_proj = nn.Linear(H, KV * HD, bias=False)
        self.output_proj = nn.Linear(HEADS * HD, H, bias=False)
        self.mlp_norm = RMSNorm(H)
        self.w1 = nn.Linear(H, I, bias=False)
        self.w2 = nn.Linear(I, H, bias=False)
        self.w3 = nn.Linear(H, I, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.sa_norm(x)
        q = self.q_proj(h).view(b, s, HEADS, HD).transpose(1, 2)
        k = self.k_proj(h).view(b, s, KV, HD).transpose(1, 2)
        v = self.v_proj(h).view(b, s, KV, HD).transpose(1, 2)
        # torchtune attention.py (2024-2025): K/V expanded to every head before SDPA
        k = k.unsqueeze(2).expand(b, KV, HEADS // KV, s, HD).reshape(b, HEADS, s, HD)
        v = v.unsqueeze(2).expand(b, KV, HEADS // KV, s, HD).reshape(b, HEADS, s, HD)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, s, HEADS * HD)
        x = x + self.output_proj(a)
        m = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(m)) * self.w3(m))


def saved_bytes(layer: nn.Module, fn, x) -> int:
    params = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in params and ptr != x.untyped_storage().data_ptr():
            seen[ptr] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    out.float().sum().backward()
    return sum(seen.values())


def measure(full: bool) -> dict[str, float]:
    torch.manual_seed(0)
    layer = Layer().to(torch.bfloat16)
    for p in layer.parameters():
        p.requires_grad_(full)
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    eager = saved_bytes(layer, layer, x)
    compiled_fn = torch.compile(layer)
    compiled_fn(x).float().sum().backward()  # compile once (warm-up)
    compiled = saved_bytes(layer, compiled_fn, x)
    t = B * S
    return {"eager_per_token": eager / t, "compiled_per_token": compiled / t,
            "saved_per_token": (eager - compiled) / t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    res = {"full": measure(True), "frozen": measure(False),
           "shape": {"h": H, "I": I, "heads": HEADS, "kv_heads": KV, "head_dim": HD, "tokens": B * S},
           "torch": torch.__version__}
    if args.json:
        print(json.dumps(res, indent=2))
        return
    for k in ("full", "frozen"):
        r = res[k]
        print(f"{k:7s} eager {r['eager_per_token']:9.1f} B/token  compiled {r['compiled_per_token']:9.1f} B/token  "
              f"saved {r['saved_per_token']:9.1f} B/token = {r['saved_per_token'] / H:.2f}·h = "
              f"{r['saved_per_token'] / I:.2f}·I")


if __name__ == "__main__":
    main()
