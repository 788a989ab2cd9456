"""Count what each rank holds under FSDP1 / FSDP2 with a LoRA-style frozen base, on the CPU.

Two (or ``--ranks N``) gloo processes train a tiny Llama-shaped model (embedding, blocks of
q/k/v/o + gated MLP, untied output layer) with rank-``r`` LoRA on q and v and the base frozen,
and report, per rank, the bytes of the parameters and gradients it holds (local shards:
``DTensor.to_local()`` for FSDP2, the ``FlatParameter`` and its ``.grad`` for FSDP1). This checks
the rules of :mod:`lintlora.estimate.sharding` that do not need a GPU:

* FSDP2 (``fully_shard`` per block): parameters / N, gradients of the trainable ones only;
* FSDP1 (``use_orig_params=True``, one unit per block with its LoRA weights): the flat
  gradient covers the whole unit (frozen included), sharded / N after the reduce-scatter, and
  unsharded under ``no_sync`` (gradient accumulation).

Counted bytes, not allocator peaks (the CPU has no ``max_memory_allocated``). Needs torch (not a
project dependency): ``python -m venv /tmp/t && /tmp/t/bin/pip install torch`` then
``/tmp/t/bin/python bench/sharding_gloo.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

H, I, L, V, R = 64, 176, 4, 256, 4


class LoRALinear(nn.Module):
    def __init__(self, d_in: int, d_out: int, r: int = 0):
        super().__init__()
        self.base = nn.Linear(d_in, d_out, bias=False)
        self.base.weight.requires_grad_(False)
        self.lora_A = nn.Linear(d_in, r, bias=False) if r else None
        self.lora_B = nn.Linear(r, d_out, bias=False) if r else None

    def forward(self, x):
        y = self.base(x)
        if self.lora_A is not None:
            y = y + self.lora_B(self.lora_A(x))
        return y


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = LoRALinear(H, H, R)
        self.k = LoRALinear(H, H)
        self.v = LoRALinear(H, H, R)
        self.o = LoRALinear(H, H)
        self.gate = LoRALinear(H, I)
        self.up = LoRALinear(H, I)
        self.down = LoRALinear(I, H)

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / H**0.5, -1) @ self.v(x)
        x = x + self.o(a)
        return x + self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.emb.weight.requires_grad_(False)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.head = nn.Linear(H, V, bias=False)
        self.head.weight.requires_grad_(False)

    def forward(self, t):
        x = self.emb(t)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def _counts(model: nn.Module) -> dict:
    from torch.distributed.tensor import DTensor

    out = {"param_bytes": 0, "grad_bytes": 0, "frozen_param_bytes": 0, "trainable_param_bytes": 0}
    for p in model.parameters():
        t = p.to_local() if isinstance(p, DTensor) else p
        b = t.numel() * t.element_size()
        out["param_bytes"] += b
        out["trainable_param_bytes" if p.requires_grad else "frozen_param_bytes"] += b
        if p.grad is not None:
            g = p.grad.to_local() if isinstance(p.grad, DTensor) else p.grad
            out["grad_bytes"] += g.numel() * g.element_size()
    return out


def _flat_grad_bytes(model: nn.Module) -> int:
    """Bytes of the ``.grad`` of every FSDP1 unit's ``FlatParameter`` on this rank."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    total = 0
    for unit in FSDP.fsdp_modules(model):
        handle = getattr(unit, "_handle", None)
        fp = getattr(handle, "flat_param", None)
        if fp is not None and fp.grad is not None:
            total += fp.grad.numel() * fp.grad.element_size()
    return total


def _worker(rank: int, world: int, port: int, q) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    res: dict = {"rank": rank}
    tokens = torch.randint(0, V, (2, 16))
    # FSDP2
    from torch.distributed.fsdp import fully_shard

    m = Model()
    for b in m.blocks:
        fully_shard(b)
    fully_shard(m)
    m(tokens).float().logsumexp(-1).mean().backward()
    res["fsdp2"] = _counts(m)
    # FSDP1, use_orig_params=True, one unit per Block (LoRA inside), as litgpt's FSDPStrategy
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    m1 = FSDP(Model(), auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=True,
              device_id=torch.device("cpu"))
    with m1.no_sync():
        m1(tokens).float().logsumexp(-1).mean().backward()
    res["fsdp1_no_sync_flat_grad_bytes"] = _flat_grad_bytes(m1)
    m1.zero_grad(set_to_none=True)
    for unit in FSDP.fsdp_modules(m1):
        if getattr(unit, "_handle", None) is not None:
            unit._handle.flat_param.grad = None
    m1(tokens).float().logsumexp(-1).mean().backward()
    res["fsdp1_flat_grad_bytes"] = _flat_grad_bytes(m1)
    q.put(res)
    dist.destroy_process_group()


def expected(world: int) -> dict:
    """The figures :mod:`lintlora.estimate.sharding` predicts for this model (fp32, 4 B)."""
    block = 4 * H * H + 3 * H * I
    lora = 2 * R * (H + H)
    total = V * H * 2 + L * (block + lora)
    return {"fsdp2_param_bytes": 4 * total / world, "fsdp2_grad_bytes": 4 * L * lora / world,
            "fsdp1_flat_grad_bytes": 4 * L * (block + lora) / world,
            "fsdp1_no_sync_flat_grad_bytes": 4 * L * (block + lora)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--port", type=int, default=29533)
    a = ap.parse_args()
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(_worker, args=(a.ranks, a.port, q), nprocs=a.ranks, join=True)
    got = sorted((q.get() for _ in range(a.ranks)), key=lambda r: r["rank"])
    print(json.dumps({"torch": torch.__version__, "ranks": a.ranks, "expected": expected(a.ranks), "measured": got},
                     indent=1))


if __name__ == "__main__":
    sys.exit(main())
