"""Measure litgpt's LoRA training step *through Lightning Fabric*, on the CPU: the logits dtype and
the loss buffers that ``bench/litgpt_memory.py`` (which calls the model directly) cannot see.

``litgpt/finetune/lora.py`` (0.4.13 ``fit()``; lit-gpt 8641822 ``train()`` alike) calls the model
through ``fabric.setup_module(model)``, a ``_FabricModule`` whose ``forward`` ends with
``precision.convert_output(output)``: ``HalfPrecision`` (``precision="bf16-true"``) and
``BitsandbytesPrecision`` (QLoRA) both convert every floating-point output to
``torch.get_default_dtype()``, float32 outside the forward context
(``lightning/fabric/plugins/precision/half.py`` and ``bitsandbytes.py``, lightning 2.1.0 and
2.4.0; ``_convert_fp_tensor``: ``tensor.to(dst_type)``). So the list of logit chunks litgpt's
loss sees is float32: ``chunked_cross_entropy`` runs ``log_softmax`` on fp32 chunks and keeps fp32
outputs, its gradients are fp32, and the ``logits`` variable of ``fit()`` keeps the fp32 chunks
alive until the next iteration's ``logits = model(...)`` has returned.

This script builds a tiny random ``litgpt.lora.GPT`` (real vocabulary, widths / ``--scale``, two
layers; LoRA flags of the truth row), sets it up with ``L.Fabric(accelerator="cpu",
precision="bf16-true")`` and runs two iterations of the loop body of ``fit()`` verbatim (the
second with the first one's ``logits`` still bound, as in ``fit()``), recording every CPU
allocation with ``torch.profiler`` (``profile_memory=True``). It prints, per token and vocabulary
entry (``T·V``, ``T`` = batch × sequence tokens):

* ``dtype``: the dtype of the chunks ``model(...)`` returns;
* ``fwd end``: the most live bytes from the final norm's forward (all activations saved) to the
  end of ``logits = model(...)``, above the live bytes at the final norm: the bf16 chunks and
  their fp32 copies (and, in iteration 2, the previous iteration's fp32 logits, which are
  already live at the final norm and so not in this difference: see ``old logits``);
* ``old logits``: live bytes at iteration 2's final norm minus iteration 1's (same shapes):
  the previous iteration's logits still bound to ``logits``;
* ``bwd start``: live bytes when ``fabric.backward`` starts, above the final norm;
* ``loss bwd``: the most live bytes while the loss's backward nodes (``NllLossBackward0``,
  ``LogSoftmaxBackward0``) run, above the final norm;
* the same three for the model called directly (no Fabric), as ``bench/litgpt_memory.py`` did,
  and the estimator's litgpt loss terms for the same shapes.

``--old-bnb`` runs every frozen ``nn.Linear`` through bitsandbytes 0.42.0's ``MatMul4Bit``
(its code, the 4-bit dequantization left out), which stores its input as ``ctx.tensors``: the
bytes of iteration 2's final norm beyond iteration 1's, less the previous logits and the LoRA
gradients, per token per layer, are the previous step's quantized-linear inputs that ``fit()``
keeps alive through the graph of its ``loss``/``logits`` (printed next to the distinct linear
inputs, ``2·(h + q + h + I)``, one ``h`` fewer for a parallel block with one norm).
``--validate`` runs litgpt's own ``validate()`` on one batch (full logits, no chunks).
``--mixed`` counts the bf16 copies of the frozen output layer's weight saved under
``precision="bf16-mixed"`` (one per logit chunk).

Set up as for ``bench/litgpt_memory.py`` (litgpt 0.4.13 pins lightning 2.4.0.dev20240728)::

    python3.11 -m venv bench/out/litgpt-venv
    bench/out/litgpt-venv/bin/pip install numpy torch==2.13.0 litgpt==0.4.13
    bench/out/litgpt-venv/bin/python bench/litgpt_fabric_step.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

# (litgpt config name, truth row, batch, sequence length): the real vocabularies of the rows'
# families; sequence lengths on both sides of 512, where the loss's two peaks cross
CASES = [
    ("tiny-llama-1.1b", "81", 2, 512),
    ("tiny-llama-1.1b", "81", 2, 256),
    ("tiny-llama-1.1b", "81", 1, 1044),
    ("phi-2", "75", 2, 512),
    ("Llama-2-7b-hf", "14", 1, 1304),
    ("gemma-2b", "53", 1, 512),
]


def _timeline(fn, marks_wanted=()):
    """Run ``fn`` under the profiler; the live-bytes walk with marks and the loss-backward peak."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    evs = prof.profiler.kineto_results.events()
    marks = sorted((e.start_ns(), e.name()) for e in evs if e.name().startswith("mark:"))
    loss_nodes = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in evs
                  if e.name().startswith("autograd::engine::evaluate_function: ")
                  and e.name().endswith(("NllLossBackward0", "LogSoftmaxBackward0"))]
    mem = sorted((e.start_ns(), e.nbytes()) for e in evs if e.name() == "[memory]")
    return marks, loss_nodes, mem


def _walk(marks, loss_nodes, mem):
    """Live bytes at each mark; per window between marks the most live bytes; loss peak per window."""
    at: dict[str, int] = {}
    win_peak: dict[str, int] = {}
    loss_peak: dict[str, int] = {}
    live = 0
    mi = 0
    current = "start"
    for t, n in mem:
        while mi < len(marks) and marks[mi][0] <= t:
            current = marks[mi][1]
            at[current] = live
            win_peak.setdefault(current, live)
            mi += 1
        live += n
        win_peak[current] = max(win_peak.get(current, live), live)
        if any(a <= t <= b for a, b in loss_nodes):
            loss_peak[current] = max(loss_peak.get(current, live), live)
    while mi < len(marks):
        at[marks[mi][1]] = live
        mi += 1
    return at, win_peak, loss_peak


def _mark(name: str) -> None:
    import torch

    with torch.profiler.record_function("mark:" + name):
        pass


def build(name: str, row_id: str, scale: int, layers: int = 2):
    import litgpt_memory
    import torch
    from litgpt.lora import GPT, Config, mark_only_lora_as_trainable

    row = litgpt_memory._row(row_id)
    real = Config.from_name(name)
    over = dict(n_layer=layers, n_embd=real.n_embd // scale, head_size=real.head_size // scale,
                intermediate_size=real.intermediate_size // scale,
                lora_r=int(row["lora_rank"]), lora_alpha=int(row["lora_alpha"] or 16),
                lora_dropout=float(row["lora_dropout"] or 0.0), **litgpt_memory._lora_flags(row))
    if real.attention_scores_scalar:
        over["attention_scores_scalar"] = real.attention_scores_scalar // scale
    cfg = Config.from_name(name, **over)
    torch.manual_seed(0)
    model = GPT(cfg)
    mark_only_lora_as_trainable(model)
    return model, cfg


def _matmul4bit_042():
    """bitsandbytes 0.42.0 ``MatMul4Bit`` (bitsandbytes/autograd/_functions.py) with the 4-bit
    dequantization left out (the weight is already 16-bit here): same ``forward``/``backward`` and,
    what matters, the same ``ctx.tensors = (A, B)``, which a backward pass does not free."""
    import torch

    class MatMul4Bit(torch.autograd.Function):
        @staticmethod
        def forward(ctx, A, B, out=None, bias=None):
            output = torch.nn.functional.linear(A, B.to(A.dtype), bias)
            if any(ctx.needs_input_grad[:2]):
                ctx.tensors = (A, B)
            else:
                ctx.tensors = (None, None)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            A, B = ctx.tensors
            grad_A = torch.matmul(grad_output, B.to(grad_output.dtype)) if ctx.needs_input_grad[0] else None
            return grad_A, None, None, None

    return MatMul4Bit


def _as_old_bnb(model) -> int:
    """Run every frozen ``nn.Linear`` (the layers Lightning's ``BitsandbytesPrecision`` swaps for
    ``Linear4bit``, the output layer included) through :func:`_matmul4bit_042`; how many."""
    import torch

    fn = _matmul4bit_042()
    n = 0
    for m in model.modules():
        if type(m) is torch.nn.Linear:
            m.forward = (lambda mod: (lambda x: fn.apply(x, mod.weight, None, mod.bias)))(m)
            n += 1
    return n


def run_case(name: str, row_id: str, batch: int, seq: int, scale: int, old_bnb: bool = False) -> dict:
    import lightning as L
    import torch
    from litgpt.utils import chunked_cross_entropy

    out: dict = {"model": name, "row": row_id, "batch": batch, "seq": seq, "scale": scale, "old_bnb": old_bnb}
    for mode in ("fabric", "direct"):
        model, cfg = build(name, row_id, scale)
        if old_bnb:
            out["old_bnb_linears"] = _as_old_bnb(model)
        if mode == "fabric":
            fabric = L.Fabric(accelerator="cpu", devices=1, precision="bf16-true")
            model = fabric.setup_module(model)  # converts to bf16 (HalfPrecision.convert_module)
            inner = model.module
            backward = fabric.backward
        else:
            model = model.to(torch.bfloat16)
            inner = model
            backward = lambda loss: loss.backward()  # noqa: E731
        inner.max_seq_length = seq
        model.train()
        V = cfg.padded_vocab_size
        ids = [torch.randint(0, V, (batch, seq)) for _ in range(2)]
        seen: dict = {}

        def hook(_m, _i, _o):
            _mark(f"ln_f{seen['it']}")

        inner.transformer.ln_f.register_forward_hook(hook)

        def two_iterations():
            logits = None
            for it in (1, 2):
                seen["it"] = it
                input_ids, targets = ids[it - 1], ids[it - 1]
                # litgpt 0.4.13 litgpt/finetune/lora.py fit(), the loop body:
                logits = model(input_ids, lm_head_chunk_size=128)
                _mark(f"fwd_done{it}")
                seen[f"dtype{it}"] = str(logits[0].dtype)
                # shift the targets such that output n predicts token n+1
                logits[-1] = logits[-1][..., :-1, :]
                loss = chunked_cross_entropy(logits, targets[..., 1:])
                _mark(f"bwd{it}")
                backward(loss)
                _mark(f"bwd_done{it}")
            del logits

        marks, loss_nodes, mem = _timeline(two_iterations)
        at, win, lossp = _walk(marks, loss_nodes, mem)
        TV = batch * seq * V
        res = {"dtype": seen["dtype1"]}
        for it in (1, 2):
            base = at[f"mark:ln_f{it}"]
            res[f"fwd_end{it}"] = (max(win[f"mark:ln_f{it}"], at[f"mark:fwd_done{it}"]) - base) / TV
            res[f"bwd_start{it}"] = (at[f"mark:bwd{it}"] - base) / TV
            res[f"loss_bwd{it}"] = (lossp.get(f"mark:bwd{it}", 0) - base) / TV
        res["old_logits"] = (at["mark:ln_f2"] - at["mark:ln_f1"]) / TV
        # what iteration 2's final norm sees beyond iteration 1's, per token and layer, less the
        # previous logits (o bytes per token·vocab in Fabric, the compute dtype's without it)
        # and less the trainable parameters' gradients, allocated by iteration 1's backward
        o = 4 if res["dtype"] == "torch.float32" else 2
        grads = sum(p.numel() * p.element_size() for p in inner.parameters() if p.requires_grad)
        res["previous_step_per_token_layer"] = ((at["mark:ln_f2"] - at["mark:ln_f1"]) - o * TV - grads) \
            / (batch * seq) / cfg.n_layer
        res["distinct_linear_inputs_per_token_layer"] = _distinct_inputs(cfg)
        out[mode] = res
    try:
        out["estimator"] = estimator_terms(name, row_id, batch, seq)
    except ImportError as e:  # an older checkout without lintlora.estimate.litgpt_terms
        out["estimator"] = {"unavailable": str(e)}
    return out


def _distinct_inputs(cfg) -> int:
    """Bytes per token per layer of the distinct tensors litgpt's block linears read, in bf16:
    the attention input (qkv), the attention output (proj), the MLP input (fc / fc_1 and fc_2
    share it; the same tensor as the attention input in a parallel block with one norm) and the
    MLP's inner activation (proj)."""
    h, I = cfg.n_embd, cfg.intermediate_size
    q = cfg.n_head * cfg.head_size
    shared = cfg.parallel_residual and cfg.shared_attention_norm
    return 2 * (h + q + (0 if shared else h) + I)


def mixed_head_copies(name: str = "stablelm-base-alpha-3b", row_id: str = "35", seq: int = 1034,
                      scale: int = 16) -> dict:
    """``precision="bf16-mixed"`` (fp32 weights under autocast): how many bf16 copies of the frozen
    output layer's weight the chunked forward saves for backward (autocast casts a frozen weight
    anew at each use: ``cached_cast`` caches only leaves that require grad)."""
    import lightning as L
    import torch

    model, cfg = build(name, row_id, scale)
    fabric = L.Fabric(accelerator="cpu", devices=1, precision="bf16-mixed")
    model = fabric.setup_module(model)
    model.module.max_seq_length = seq
    head = model.module.lm_head
    w = getattr(head, "linear", head).weight
    ids = torch.randint(0, cfg.padded_vocab_size, (1, seq))
    seen: dict[int, int] = {}

    def pack(t):
        if t.dtype == torch.bfloat16 and t.numel() == w.numel():
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(ids, lm_head_chunk_size=128)
    return {"model": name, "seq": seq, "chunks": len(logits), "weight_dtype": str(w.dtype),
            "bf16_head_copies_saved": len(seen), "copy_bytes": w.numel() * 2}


def validation_peak(name: str = "tiny-llama-1.1b", row_id: str = "81", batch: int = 2, seq: int = 256,
                    scale: int = 16) -> dict:
    """litgpt 0.4.13's own ``validate()`` (``litgpt/finetune/lora.py``) through Fabric, one batch:
    the most live bytes above what was live before it, per token and vocabulary entry."""
    import lightning as L
    import torch
    from litgpt.args import EvalArgs
    from litgpt.finetune.lora import validate

    model, cfg = build(name, row_id, scale)
    fabric = L.Fabric(accelerator="cpu", devices=1, precision="bf16-true")
    model = fabric.setup_module(model)
    model.module.max_seq_length = seq
    V = cfg.padded_vocab_size
    ids = torch.randint(0, V, (batch, seq))
    batches = [{"input_ids": ids, "labels": ids}]

    def run():
        _mark("validate")
        validate(fabric, model, batches, EvalArgs(max_iters=1), verbose=False)

    marks, _, mem = _timeline(run)
    at, win, _ = _walk(marks, [], mem)
    return {"model": name, "batch": batch, "seq": seq, "vocab": V,
            "validation_peak_per_token_vocab": (win["mark:validate"] - at["mark:validate"]) / (batch * seq * V)}


def estimator_terms(name: str, row_id: str, batch: int, seq: int) -> dict:
    """The litgpt profile's loss terms for these shapes (bytes per token·vocab)."""
    from dataclasses import replace

    import accuracy
    import litgpt_memory
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate import litgpt_terms

    case = next((c for c in litgpt_memory.CASES if c.row_id == row_id), None)
    hf_id = case.hf_id if case else accuracy.load()[0]["model"]
    if row_id == "14":
        hf_id = "meta-llama/Llama-2-7b-hf"
    arch = resolve_architecture(hf_id)
    row = litgpt_memory._row(row_id)
    inputs, _ = accuracy.row_inputs(row, arch)
    inputs = replace(inputs, batch_size=batch, seq_len=seq)
    return {k: round(v, 3) for k, v in litgpt_terms.loss_moments(seq).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scale", type=int, default=16, help="divide the real widths by this")
    ap.add_argument("--only", default="", help="comma-separated litgpt config names")
    ap.add_argument("--old-bnb", action="store_true",
                    help="run the frozen linears through bitsandbytes 0.42.0's MatMul4Bit (ctx.tensors = (A, B))")
    ap.add_argument("--mixed", action="store_true",
                    help="bf16-mixed: count the output layer's bf16 weight copies saved per logit chunk")
    ap.add_argument("--validate", action="store_true",
                    help="litgpt's validate(): its peak above what was live, per token and vocabulary entry")
    args = ap.parse_args()
    import torch
    from importlib.metadata import version

    if args.validate:
        print(json.dumps([validation_peak(batch=b) for b in (1, 2)], indent=1))
        return
    if args.mixed:
        print(json.dumps(mixed_head_copies(scale=args.scale), indent=1))
        return
    cases = [c for c in CASES if not args.only or c[0] in args.only.split(",")]
    rows = [run_case(*c, scale=args.scale, old_bnb=args.old_bnb) for c in cases]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"torch {torch.__version__}, litgpt {version('litgpt')}, lightning {version('lightning')}; "
          f"widths / {args.scale}, 2 layers; bytes per token and vocabulary entry above the final norm")
    print(f"{'model':16} {'b':>2} {'s':>5} {'path':7} {'dtype':15} {'fwd end':>7} {'bwd start':>9} {'loss bwd':>8} "
          f"{'it2 fwd end':>11} {'it2 loss bwd':>12} {'old logits':>10}")
    for r in rows:
        for mode in ("fabric", "direct"):
            m = r[mode]
            print(f"{r['model']:16} {r['batch']:>2} {r['seq']:>5} {mode:7} {m['dtype']:15} {m['fwd_end1']:7.2f} "
                  f"{m['bwd_start1']:9.2f} {m['loss_bwd1']:8.2f} {m['fwd_end2']:11.2f} {m['loss_bwd2']:12.2f} "
                  f"{m['old_logits']:10.2f}")
        print(f"{'':16} {'':>2} {'':>5} {'model':7} {'':15} {r['estimator']}")
        if r["old_bnb"]:
            m = r["fabric"]
            print(f"{'':16} {'':>2} {'':>5} {'':7} previous step kept at iteration 2's final norm: "
                  f"{m['previous_step_per_token_layer']:.0f} B per token per layer ({r['old_bnb_linears']} linears as "
                  f"bitsandbytes 0.42.0 MatMul4Bit); distinct linear inputs: "
                  f"{m['distinct_linear_inputs_per_token_layer']} B")


if __name__ == "__main__":
    main()
