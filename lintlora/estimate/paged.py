"""Paged optimizers: the optimizer states bitsandbytes keeps in CUDA unified memory.

bitsandbytes' paged optimizers (``paged_adamw_32bit``, ``paged_adamw_8bit``, ``PagedAdamW``,
``PagedLion``, ``paged_ademamix_*``) allocate each state buffer of a parameter with at least
:data:`PAGED_MIN_ELEMENTS` elements through ``bitsandbytes.functional.get_paged``: a
``cudaMallocManaged`` block (``lib.cget_managed_ptr``) wrapped with ``torch.frombuffer`` as a
CPU tensor marked ``is_paged`` (bitsandbytes ``bitsandbytes/functional.py`` ``get_paged`` and
``bitsandbytes/optim/optimizer.py`` ``get_state_buffer``, 0.50.2.dev0 @ 95f9af30). Smaller
parameters get ``torch.zeros_like`` on the GPU as with any optimizer.

Consequences for the counters (:class:`lintlora.estimate.memory.MemoryEstimate`):

* those buffers are outside PyTorch's caching allocator, so neither
  ``torch.cuda.max_memory_allocated()`` nor ``max_memory_reserved()`` counts them;
* the CUDA driver migrates managed pages between the GPU and CPU RAM on demand, evicting them
  when the GPU is full, so they need not fit beside the training step's peak (the point of
  paging: the step is then slower, each step moving them over PCIe). The ``device`` counter
  is what must fit, so they are left out of it too and reported as their own figure
  (``MemoryEstimate.paged_optimizer_bytes``); ``nvidia-smi`` shows them on top while there is
  room for them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAGED_MIN_ELEMENTS", "is_paged", "paged_state_elements"]

# bitsandbytes/optim/optimizer.py get_state_buffer: ``if not self.is_paged or p.numel() < 1e5:
# return torch.zeros_like(p, ...)`` (0.50.2.dev0 @ 95f9af30; the same test since the paged
# optimizers were added in 0.39.0)
PAGED_MIN_ELEMENTS = 100_000


def is_paged(optim: str | None) -> bool:
    """Whether ``optim`` (a TrainingArguments ``optim`` name or a bitsandbytes class name as the
    dialects map it) is one of bitsandbytes' paged optimizers."""
    o = (optim or "").lower().replace("-", "_")
    return o.startswith("paged") or ".paged" in o


def paged_state_elements(trainable: Any, *, lora_r: int = 0, full_params: int | None = None) -> tuple[int, int]:
    """``(paged, total)``: trainable elements whose optimizer states a paged optimizer keeps in
    unified memory, and all trainable elements.

    Args:
        trainable: a :class:`lintlora.estimate.params.TrainableCount` (LoRA/QLoRA): each
            adapted module contributes its A (``r × d_in``) and B (``d_out × r``) per copy, paged
            when that tensor has :data:`PAGED_MIN_ELEMENTS` elements or more; each
            ``modules_to_save`` copy is paged by its own size. ``None`` for full fine-tuning.
        full_params: for full fine-tuning, the trainable parameters: all taken as paged (every
            weight matrix and embedding is far above 1e5 elements; the norm and bias vectors
            that are not are under 0.1% of a decoder's parameters).
        lora_r: the LoRA rank ``r`` (A is ``r × d_in``, B is ``d_out × r``; a DoRA magnitude
            vector, ``d_out`` elements, is counted with B).
    """
    if trainable is None:
        n = int(full_params or 0)
        return n, n
    paged = 0
    total = 0
    r = max(0, int(lora_r))
    for m in getattr(trainable, "adapted", ()):
        copies = max(0, int(m.copies))
        per_copy = m.params // copies if copies else 0
        a = r * m.d_in if r else per_copy // 2
        b = per_copy - a
        total += m.params
        paged += copies * ((a if a >= PAGED_MIN_ELEMENTS else 0) + (b if b >= PAGED_MIN_ELEMENTS else 0))
    for m in getattr(trainable, "saved", ()):
        copies = max(1, int(m.copies))
        per_copy = m.params // copies
        total += m.params
        paged += m.params if per_copy >= PAGED_MIN_ELEMENTS else 0
    # DoRA magnitudes and anything not itemised: counted on the GPU (small vectors)
    total = max(total, int(getattr(trainable, "trainable", 0)))
    return min(paged, total), total

