"""Measure what a litgpt LoRA training step holds, on the CPU, next to the litgpt profile's terms.

This pins the estimator's litgpt terms (``lintlora.estimate.profiles`` ``"litgpt"``) to what litgpt's
own code does, the way ``bench/saved_tensors.py`` pins the HF transformers + peft path. It builds
tiny random litgpt models from litgpt's own ``Config`` (no downloads): the real configuration of
each model the truth rows name, with the widths (``n_embd``, ``head_size``, ``intermediate_size``)
divided by ``--scale`` and a few layers, and the real vocabulary (the loss term scales with it);
wraps them with litgpt's LoRA classes (``litgpt.lora.GPT`` with the row's ``lora_query`` /
``lora_value`` / ... flags), casts to bf16 (``precision: bf16-true``) and runs the training step of
``litgpt/finetune/lora.py`` ``fit()``: ``model(input_ids, lm_head_chunk_size=128)``, the last
chunk shifted, ``chunked_cross_entropy`` and ``backward``.

Measured, per model:

* ``saved/tok/layer``: bytes of the distinct storages autograd saves in one forward
  (``torch.autograd.graph.saved_tensors_hooks``; parameters excluded), per token per decoder layer:
  the difference of an (L+2)- and an L-layer model, halved and divided by the tokens;
* ``loss/tok·V``: live bytes (every CPU allocation, from ``torch.profiler`` memory events) at the
  start of ``backward`` minus the live bytes when the final norm has run, per token and vocabulary
  entry: the logits chunks and what the loss keeps;
* ``peak``: the largest live bytes of the step above what was allocated before it, for the L-layer
  model, next to the estimator's ``activations + logits + transient`` for the same shapes (whose
  logits term is Fabric's fp32 one, ``bench/litgpt_fabric_step.py``; the ``model`` loss column is
  the same mechanism on the bf16 logits this direct call returns)
  (``lintlora.estimate.memory.estimate_memory`` on the catalog architecture with the same widths
  and layers, inputs built by ``bench/accuracy.py`` from the truth row); and ``lm_head grad``:
  whether the output layer's frozen weight gets a gradient (it should not).

Dropout runs through the kernel CUDA uses (a bool mask, ``saved_tensors._cuda_dropout``).
QLoRA (bitsandbytes 4-bit layers through Lightning's ``BitsandbytesPrecision``) needs CUDA and is
not measured here.

Needs torch and litgpt (not lintlora's dependencies). Set up as used for the numbers in
``lintlora/estimate/profiles.py``::

    python3.11 -m venv bench/out/litgpt-venv
    bench/out/litgpt-venv/bin/pip install numpy torch==2.13.0 litgpt==0.4.13
    bench/out/litgpt-venv/bin/python bench/litgpt_memory.py

litgpt 0.4.13 (2024-09-27) is the release closest to the end of the config-hub table's period
(2024-04..2024-09, the last models added are Llama 3.2); it pins lightning 2.4.0.dev20240728.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Case:
    """One truth row to mirror: its litgpt config name and the row it reproduces."""

    row_id: str
    litgpt_name: str
    hf_id: str


# one row per model family of the litgpt truth rows (tests/data/measured_peaks.csv)
CASES = [
    Case("53", "gemma-2b", "google/gemma-2b"),
    Case("57", "gemma-2-2b", "google/gemma-2-2b"),
    Case("69", "Llama-3.2-3B", "meta-llama/Llama-3.2-3B"),
    Case("63", "Llama-3-8B", "meta-llama/Meta-Llama-3-8B"),
    Case("73", "Mistral-7B-v0.1", "mistralai/Mistral-7B-v0.1"),
    Case("75", "phi-2", "microsoft/phi-2"),
    Case("77", "Phi-3-mini-4k-instruct", "microsoft/Phi-3-mini-4k-instruct"),
    Case("79", "stablelm-base-alpha-3b", "stabilityai/stablelm-base-alpha-3b"),
    Case("81", "tiny-llama-1.1b", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"),
    Case("50", "falcon-7b", "tiiuae/falcon-7b"),
]


def _row(row_id: str) -> dict:
    with open(ROOT / "tests" / "data" / "measured_peaks.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["row_id"] == row_id)


def _lora_flags(row: dict) -> dict:
    t = row["target_modules"].lower()
    if "q,v" in t and "mlp" not in t:
        return dict(lora_query=True, lora_value=True)
    return dict(lora_query=True, lora_key=True, lora_value=True, lora_projection=True, lora_mlp=True,
                lora_head="lm_head" in t)


def build(case: Case, layers: int, scale: int):
    """A random bf16 ``litgpt.lora.GPT`` with the case's config, widths / ``scale``, ``layers`` blocks."""
    import torch
    from litgpt.lora import GPT, Config, mark_only_lora_as_trainable

    row = _row(case.row_id)
    real = Config.from_name(case.litgpt_name)
    over = dict(n_layer=layers, n_embd=real.n_embd // scale, head_size=real.head_size // scale,
                intermediate_size=real.intermediate_size // scale,
                lora_r=int(row["lora_rank"]), lora_alpha=int(row["lora_alpha"] or 16),
                lora_dropout=float(row["lora_dropout"] or 0.0), **_lora_flags(row))
    if real.attention_scores_scalar:
        over["attention_scores_scalar"] = real.attention_scores_scalar // scale
    cfg = Config.from_name(case.litgpt_name, **over)
    torch.manual_seed(0)
    model = GPT(cfg).to(torch.bfloat16)
    mark_only_lora_as_trainable(model)
    model.max_seq_length = int(row["seq_len"])
    model.train()
    return model, cfg, real


def _step(model, ids, markers: dict | None = None):
    """litgpt/finetune/lora.py fit(): chunked lm_head, shifted last chunk, chunked CE, backward."""
    import torch
    from litgpt.utils import chunked_cross_entropy

    logits = model(ids, lm_head_chunk_size=128)
    logits[-1] = logits[-1][..., :-1, :]
    loss = chunked_cross_entropy(logits, ids[..., 1:])
    with torch.profiler.record_function("mark:backward"):
        pass
    loss.backward()
    return loss


def saved_bytes(model, ids) -> int:
    """Distinct storages autograd saves in one forward + loss (parameters excluded)."""
    import torch
    from litgpt.utils import chunked_cross_entropy

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        try:
            st = t.untyped_storage()
            if st.data_ptr() not in params and st.nbytes():
                seen[st.data_ptr()] = st.nbytes()
        except (RuntimeError, NotImplementedError):
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        x = model.transformer.wte(ids)
        if model.config.scale_embeddings:
            x = x * (model.config.n_embd ** 0.5)
        T = ids.size(1)
        for block in model.transformer.h:
            x = block(x, model.cos[:T], model.sin[:T], None, None)
    del x
    return sum(seen.values())


def timeline(model, ids) -> dict:
    """Live CPU bytes through one training step (torch.profiler memory events)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    def mark(_m, _i, _o):
        with torch.profiler.record_function("mark:ln_f"):
            pass

    h = model.transformer.ln_f.register_forward_hook(mark)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _step(model, ids)
    h.remove()
    evs = prof.profiler.kineto_results.events()
    marks = {e.name(): e.start_ns() for e in evs if e.name().startswith("mark:")}
    # the loss's backward nodes: nll_loss and log_softmax of every chunk
    loss_nodes = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in evs
                  if e.name().startswith("autograd::engine::evaluate_function: ")
                  and e.name().endswith(("NllLossBackward0", "LogSoftmaxBackward0"))]
    mem = sorted((e.start_ns(), e.nbytes()) for e in evs if e.name() == "[memory]")
    live, peak, loss_peak, at = 0, 0, 0, {}
    for t, n in mem:
        for k, tm in marks.items():
            if k not in at and t >= tm:
                at[k] = live
        live += n
        peak = max(peak, live)
        if any(a <= t <= b for a, b in loss_nodes):
            loss_peak = max(loss_peak, live)
    for k in marks:
        at.setdefault(k, live)
    return {"peak": peak, "loss_peak": loss_peak, "at_ln_f": at["mark:ln_f"], "at_backward": at["mark:backward"],
            "end": live}


def predicted(case: Case, layers: int, scale: int, batch: int, seq: int):
    """The estimator for the same shapes: (per-token-layer activations, loss k, allocated above weights)."""
    import accuracy
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.memory import activation_breakdown, estimate_memory
    from lintlora.estimate.params import count_trainable
    from lintlora.estimate.profiles import get_profile

    from litgpt import Config

    real = Config.from_name(case.litgpt_name)
    arch = resolve_architecture(case.hf_id)
    arch = replace(arch, hidden_size=real.n_embd // scale, head_dim=real.head_size // scale,
                   intermediate_size=real.intermediate_size // scale, num_hidden_layers=layers,
                   vocab_size=real.padded_vocab_size, params_total=0)
    row = _row(case.row_id)
    inputs, _ = accuracy.row_inputs(row, arch)
    inputs = replace(inputs, batch_size=batch, seq_len=seq)
    prof = get_profile("litgpt")
    tr = count_trainable(arch, inputs.lora_r, inputs.target_modules, inputs.modules_to_save)
    act = activation_breakdown(arch, inputs, prof, tr)
    est = estimate_memory(inputs, arch, prof)
    above = sum(est.breakdown[k] for k in ("activations", "logits", "transient"))
    # this script calls the model directly (no Fabric), so its logits stay bf16: the loss term
    # to compare is litgpt_terms' with output_bytes = the compute dtype's (the estimator's own,
    # through Fabric's fp32 cast, is measured by bench/litgpt_fabric_step.py)
    from lintlora.estimate.litgpt_terms import loss_moments

    direct_k = loss_moments(seq, prof.loss_chunk_tokens, 2, 2)["loss backward"]
    return act.per_token_layer, direct_k, above, act.parts, est


def measure(case: Case, layers: int = 2, scale: int = 8, batch: int = 2, seq: int | None = None) -> dict:
    """Measured and predicted terms for one case (see the module docstring)."""
    from unittest import mock

    import saved_tensors
    import torch

    row = _row(case.row_id)
    seq = seq or int(row["seq_len"])
    out: dict = {"row": case.row_id, "model": case.litgpt_name, "batch": batch, "seq": seq,
                 "layers": layers, "scale": scale}
    with mock.patch.object(torch.nn.functional, "dropout", saved_tensors._cuda_dropout):
        sb = {}
        for L in (layers, layers + 2):
            model, cfg, real = build(case, L, scale)
            ids = torch.randint(0, cfg.padded_vocab_size, (batch, seq))
            sb[L] = saved_bytes(model, ids)
            if L == layers:
                w = sum(p.numel() * p.element_size() for p in model.parameters())
                tl = timeline(model, ids)
                out["lm_head_weight_grad"] = model.lm_head.linear.weight.grad is not None
                out["wte_tied_to_lm_head"] = model.lm_head.linear.weight.data_ptr() == \
                    model.transformer.wte.weight.data_ptr()
                out["weights_bytes"] = w
        out["vocab"] = cfg.padded_vocab_size
    tokens = batch * seq
    out["saved_per_token_layer"] = (sb[layers + 2] - sb[layers]) / 2 / tokens
    out["loss_per_token_vocab"] = (tl["at_backward"] - tl["at_ln_f"]) / tokens / out["vocab"]
    out["loss_backward_per_token_vocab"] = (tl["loss_peak"] - tl["at_ln_f"]) / tokens / out["vocab"]
    out["step_peak_bytes"] = tl["peak"]
    out["loss_peak_bytes"] = tl["loss_peak"]
    p_layer, p_k, p_above, parts, est = predicted(case, layers, scale, batch, seq)
    out["model_per_token_layer"] = p_layer
    out["model_parts"] = parts
    out["model_loss_k"] = p_k
    out["model_step_bytes"] = p_above
    out["model_weights_bytes"] = est.breakdown["weights"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scale", type=int, default=8, help="divide the real widths by this")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=None, help="tokens per sequence (default: the row's)")
    ap.add_argument("--only", default="", help="comma-separated litgpt config names")
    args = ap.parse_args()
    import litgpt  # noqa: F401
    import torch
    from importlib.metadata import version

    cases = [c for c in CASES if not args.only or c.litgpt_name in args.only.split(",")]
    rows = [measure(c, scale=args.scale, batch=args.batch, seq=args.seq) for c in cases]
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return
    print(f"torch {torch.__version__}, litgpt {version('litgpt')}; widths / {args.scale}, batch {args.batch}")
    print(f"{'row':>3} {'model':24} {'saved B/tok/layer':>17} {'model':>7} {'loss@bwd':>8} {'loss peak':>9} {'model':>5} "
          f"{'step MB':>8} {'loss MB':>8} {'model':>7} {'weights MB':>10} {'model':>7} tied")
    for r in rows:
        print(f"{r['row']:>3} {r['model']:24} {r['saved_per_token_layer']:17.0f} {r['model_per_token_layer']:7.0f} "
              f"{r['loss_per_token_vocab']:8.2f} {r['loss_backward_per_token_vocab']:9.2f} {r['model_loss_k']:5.2f} "
              f"{r['step_peak_bytes'] / 1e6:8.1f} {r['loss_peak_bytes'] / 1e6:8.1f} {r['model_step_bytes'] / 1e6:7.1f} "
              f"{r['weights_bytes'] / 1e6:10.1f} {r['model_weights_bytes'] / 1e6:7.1f} {r['wte_tied_to_lm_head']}")
    print("loss@bwd / loss peak: bytes per token and vocabulary entry at the start of backward / the most while the "
          "loss's backward runs; step MB: CPU peak of the whole step (includes bf16 bmm fp32 buffers the CPU "
          "kernels allocate); loss MB: peak during the loss's backward; model: the estimator's "
          "activations + logits + transient")


if __name__ == "__main__":
    main()
