"""litgpt's loss buffers: the chunked logits as Lightning Fabric hands them to the loss.

litgpt's fine-tuning scripts call the model through ``fabric.setup_module(model)``
(``litgpt/finetune/lora.py`` 0.4.13 ``setup()``; lit-gpt 8641822 ``finetune/lora.py`` alike), a
``_FabricModule`` whose ``forward`` ends with ``precision.convert_output(output)``
(``lightning/fabric/wrappers.py``). ``HalfPrecision`` (``bf16-true``/``16-true``),
``BitsandbytesPrecision`` (QLoRA) and ``MixedPrecision`` convert every floating-point output to
``torch.get_default_dtype()``, float32 outside the forward context
(``lightning/fabric/plugins/precision/{half,bitsandbytes,amp}.py``, ``convert_output``; the same in
lightning 71aed751 (2023-10-05, lit-gpt 8641822's pin), 2.1.0 and 2.4.0, since Lightning PR
#17287, 2023-04-27). So the list of ``ceil(s / 128)`` logit chunks ``model(input_ids,
lm_head_chunk_size=128)`` returns is float32 whatever the compute dtype, and
``chunked_cross_entropy`` (``litgpt/utils.py``) runs ``cross_entropy`` (``log_softmax`` +
``nll_loss``) on fp32 chunks.

Bytes per token and vocabulary entry (``o`` = 4, the fp32 the outputs are cast to; ``c`` = the
compute dtype the output layer runs in, 2 for bf16; ``n`` = the largest chunk's share of the
sequence, ``min(s, 128) / s``), at the three moments where every layer's activations are alive:

* **forward end** (``convert_output``): the ``c``-byte chunks the output layer produced and their
  ``o``-byte copies (the 16-bit list is freed once ``apply_to_collection`` returns), plus the
  previous iteration's ``o``-byte chunks: ``fit()`` binds them to ``logits``, which is rebound
  only when ``model(...)`` has returned. ``c + o + o`` (no copy when ``c == o``: ``o + o``), the
  previous micro-batch assumed as long as this one (the steady state of batches at the sequence
  length; stated in the estimate's notes);
* **loss backward**: the kept fp32 chunks (``o``), the saved ``log_softmax`` outputs turning into
  the logits' gradients (``o`` together: autograd runs every chunk's nll and log-softmax backward
  before any output-layer matmul backward, higher sequence numbers first), and one chunk's two
  fresh gradients (``2·o·n``): ``2·o + 2·o·n``;
* **output-layer backward** (the 4-bit output layer dequantized whole, QLoRA): the kept fp32
  chunks (``o``) and the gradients cast back to the compute dtype (``c``; ``convert_output``'s
  ``ToCopyBackward`` nodes come after the loss's and before the output layer's).

Measured on the CPU through Fabric (``bench/litgpt_fabric_step.py``, litgpt 0.4.13, lightning
2.4.0.dev20240728, torch 2.13.0, TinyLlama's 32,000-entry vocabulary, widths / 16): chunks
returned as ``torch.float32``; forward end 6.00 above the final norm (+ 4.07 for the previous
iteration's chunks); loss backward 9.99 at s = 512 (model 10), 11.99 at s = 256 (12), 8.98 at
s = 1044 (8.98); the same step called without Fabric (what ``bench/litgpt_memory.py`` measured):
5.00, 5.99 and 4.49, the bf16 figures (``o = 2``).
"""

from __future__ import annotations

__all__ = ["FABRIC_OUTPUT_BYTES", "loss_moments", "chunked_loss_k", "head_backward_k", "loss_note",
           "previous_step_bytes", "forward_end_phases", "logit_chunks", "validation_phase"]

FABRIC_OUTPUT_BYTES = 4
"""Bytes per element of the tensors a Fabric-wrapped model returns: ``torch.get_default_dtype()``,
float32 (``convert_output`` of Lightning Fabric's precision plugins, see the module docstring)."""


def logit_chunks(seq_len: int, chunk_tokens: int = 128) -> int:
    """How many chunks ``x.split(lm_head_chunk_size, dim=1)`` makes of ``seq_len`` positions
    (``litgpt/model.py`` ``GPT.forward``): ``ceil(s / chunk)``."""
    s, c = max(1, int(seq_len)), max(1, int(chunk_tokens))
    return -(-s // c)


def loss_moments(seq_len: int, chunk_tokens: int = 128, compute_bytes: int = 2,
                 output_bytes: int = FABRIC_OUTPUT_BYTES, previous_ratio: float = 1.0) -> dict[str, float]:
    """Bytes per token and vocabulary entry alive beside every layer's activations, by moment.

    Args:
        seq_len: tokens per sequence (``s``).
        chunk_tokens: litgpt's ``lm_head_chunk_size`` (128 in ``fit()``).
        compute_bytes: bytes per element of the output layer's result (the compute dtype).
        output_bytes: bytes per element of the chunks the model returns (4 under Fabric; the
            compute dtype's when the model is called directly).
        previous_ratio: the previous micro-batch's tokens over this one's (1: as long).

    Returns:
        ``{"forward end": ..., "loss backward": ..., "lm_head backward": ...}`` (see the module
        docstring).
    """
    s = max(1, int(seq_len))
    o, c = output_bytes, compute_bytes
    share = min(s, max(1, chunk_tokens)) / s
    copy = c if c != o else 0
    return {
        "forward end": copy + o + o * previous_ratio,
        "loss backward": 2 * o + 2 * o * share,
        "lm_head backward": o + c,
    }


def chunked_loss_k(seq_len: int, chunk_tokens: int = 128, compute_bytes: int = 2,
                   output_bytes: int = FABRIC_OUTPUT_BYTES) -> float:
    """The loss term at the start of litgpt's backward (bytes per token·vocab): the loss's
    backward moment. The forward's end is its own phase (:func:`forward_end_phases`)."""
    return loss_moments(seq_len, chunk_tokens, compute_bytes, output_bytes)["loss backward"]


def head_backward_k(compute_bytes: int = 2, output_bytes: int = FABRIC_OUTPUT_BYTES) -> float:
    """Bytes per token·vocab alive while the output layer runs its backward (kept chunks + their
    gradients in the compute dtype)."""
    return loss_moments(1, 1, compute_bytes, output_bytes)["lm_head backward"]


def loss_note(seq_len: int, chunk_tokens: int, compute_bytes: int, output_bytes: int, *,
              previous_ratio: float = 1.0, previous_step: int = 0, phase: str = "") -> list[str]:
    """The sentences for the estimate's notes: the fp32 loss and the previous-step assumption."""
    m = loss_moments(seq_len, chunk_tokens, compute_bytes, output_bytes, previous_ratio)
    prev = ("the previous micro-batch assumed as long as this one (steady state)" if previous_ratio >= 1 else
            f"the previous micro-batch taken as {previous_ratio:.0%} of this one's tokens")
    out = [f"litgpt: Fabric returns the {chunk_tokens}-token logit chunks in float32 (convert_output to the default "
           f"dtype), so the chunked loss runs in fp32: {m['loss backward']:.2f} B per token·vocab in its backward, "
           f"{m['forward end']:.2f} at the forward's end, where fit() still binds the previous step's fp32 logits "
           f"({prev})"]
    if previous_step:
        out.append(f"litgpt: fit() keeps the previous step's loss and logits, and through them its autograd graph, "
                   f"until the next forward and loss have run; the inputs bitsandbytes < 0.43.2 MatMul4Bit stores "
                   f"as ctx.tensors are not freed by backward: {previous_step / 2**30:.2f} GiB of the previous "
                   f"micro-batch's quantized-linear inputs at the forward's end")
    if phase == "validation":
        out.append("litgpt: the peak is validate(): the whole b × s × vocabulary logits in fp32 at once (no chunks), "
                   "a reshaped copy and the log-softmax output, with the last training step's fp32 logits still bound")
    return out


def previous_step_bytes(linear_inputs_per_token_layer: float, layers: int, tokens: int, *, bnb_keeps_input: bool,
                        checkpointing: bool, previous_ratio: float = 1.0) -> float:
    """Bytes of the previous step's autograd graph that are still alive during the next forward.

    ``fit()`` keeps the previous iteration's ``logits`` and ``loss`` bound until the next
    ``logits = model(...)`` and ``loss = chunked_cross_entropy(...)`` have run, and through their
    ``grad_fn`` the whole autograd graph of that step. A backward pass frees what nodes saved
    with ``save_for_backward``, not the tensors a custom ``torch.autograd.Function`` stores as
    ``ctx`` attributes: bitsandbytes before 0.43.2 ``MatMul4Bit.forward`` keeps its input as
    ``ctx.tensors = (A, B)`` (bitsandbytes/autograd/_functions.py, 0.41.0 and 0.42.0; PR #1270,
    2024-07-16, made it ``(None, B)``). So on a 4-bit base with such a release every quantized
    linear's input of the previous micro-batch (one tensor per distinct input, the
    ``linear_inputs`` activation term) is alive until the next forward and loss have returned.
    litgpt's own LoRA layers are built-in ops (nothing left after backward). With checkpointing
    the 4-bit matmuls of the forward run without a graph and their recomputed graph is freed in
    the backward: nothing is kept.

    Args:
        linear_inputs_per_token_layer: the ``linear_inputs`` activation term (bytes per token
            per layer).
        layers, tokens: decoder layers and tokens of a micro-batch.
        bnb_keeps_input: a bitsandbytes release before 0.43.2 (``EstimateInputs.bnb_saves_input``).
        checkpointing: activation checkpointing on.
        previous_ratio: the previous micro-batch's tokens over this one's.
    """
    if not bnb_keeps_input or checkpointing:
        return 0.0
    return linear_inputs_per_token_layer * layers * tokens * previous_ratio


def forward_end_phases(*, activations: float, gradients: float, previous_step: float, vocab: int, tokens: int,
                       seq_len: int, chunk_tokens: int, compute_bytes: int, output_bytes: int,
                       head_dequant: float, previous_ratio: float = 1.0) -> list[tuple[str, dict[str, float]]]:
    """The moments at the end of litgpt's forward, every layer's activations alive (bytes).

    * ``"forward end"``: ``convert_output`` has made the fp32 copies of every chunk:
      :func:`loss_moments`' ``forward end`` bytes per token·vocab, and the previous step's graph
      (:func:`previous_step_bytes`, the ``previous_step`` entry of the breakdown);
    * ``"lm_head forward"`` (a 4-bit output layer, ``head_dequant`` > 0): the last chunk's output
      layer dequantizes its weight whole while the 16-bit chunks and the previous step's fp32
      chunks are alive (``c + o`` per token·vocab).
    """
    m = loss_moments(seq_len, chunk_tokens, compute_bytes, output_bytes, previous_ratio)
    base = {"gradients": gradients, "activations": activations}
    phases = [("forward end", {**base, "logits": vocab * m["forward end"] * tokens, "transient": 0.0,
                               "previous_step": previous_step})]
    if head_dequant:
        k = compute_bytes + output_bytes * previous_ratio
        phases.append(("lm_head forward", {**base, "logits": vocab * k * tokens, "transient": head_dequant,
                                           "previous_step": previous_step}))
    return phases


def validation_phase(*, gradients: float, previous_step: float, vocab: int, tokens: int, batch_size: int,
                     output_bytes: int = FABRIC_OUTPUT_BYTES, compute_bytes: int = 2,
                     previous_ratio: float = 1.0) -> tuple[str, dict[str, float]]:
    """litgpt's ``validate()`` between optimizer steps (bytes): no activations, every logit at once.

    ``validate()`` (``litgpt/finetune/lora.py`` 0.4.13, under ``torch.no_grad``) calls
    ``model(input_ids)`` without ``lm_head_chunk_size``: one ``b × s × V`` logits tensor, cast to
    fp32 by Fabric (the 16-bit one alive while its copy is made: ``c + o``), then
    ``chunked_cross_entropy(logits[..., :-1, :], ..., chunk_size=0)``: ``reshape(-1, V)`` of the
    sliced logits copies them when the batch has more than one row (``o``), and ``cross_entropy``'s
    ``log_softmax`` output (``o``): ``3·o`` (``2·o`` for one row). The validation batch is the micro
    batch (``data.connect(batch_size=train.micro_batch_size)``). ``fit()`` still binds the last
    training step's fp32 logits and, through them, its graph (:func:`previous_step_bytes`). It is
    the peak only where the vocabulary outweighs the activations (``6·V`` bytes per token against
    every layer's saved bytes: small models with 256k vocabularies).
    """
    during = max(compute_bytes + output_bytes, (3 if batch_size > 1 else 2) * output_bytes)
    return ("validation", {"gradients": gradients, "activations": 0.0,
                           "logits": vocab * tokens * (during + output_bytes * previous_ratio),
                           "transient": 0.0, "previous_step": previous_step})
