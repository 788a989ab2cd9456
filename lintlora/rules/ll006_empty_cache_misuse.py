"""LL006 empty-cache-misuse (page: ``rules/LL006.md``).

Flags ``torch.cuda.empty_cache()`` (or another device's: ``torch.xpu``/``torch.npu``/
``torch.mps``, named as the script calls it, ``CallSite.qualified_name``) that runs once per
training step: inside a training loop
(a loop whose body runs ``.backward()``/``optimizer.step()``) or a per-step callback
(``CallSite.in_step_callback``, set by the extractor for both). A call in a loop that runs
between phases (a sweep, an epoch loop, an evaluation loop) is not flagged. Emptying the cache hands PyTorch's cached blocks
back to the driver, and the next step has to allocate them again with ``cudaMalloc`` (and
synchronise): every step gets slower, while the peak a step needs (``max_memory_allocated``) is
the same. Sources: huggingface/transformers#31372, fixed by PR #31530, which removed a per-step
call added by PR #28769; huggingface/peft PR #2894 (250 steps: 50 s with a flush every 10th
step, 45 s with none, 65 s with a flush every step once gc.collect was dropped; max reserved 19.3 -> 23.5 GB without any flush, so flushing every N steps
is the compromise when fragmentation matters). Once after training or between phases is fine, and
so is a call under an ``if`` that runs it every N steps or once (``if step % 100 == 0:``,
``if step == 0:``; ``CallSite.periodic``); ``step % 1 == 0`` is every step and still reported.

The fix does not change the estimated peak: the finding's "after" figure equals the "before"
one, and the message says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["EmptyCacheMisuse"]


FIX_REMOVE = "remove the per-step empty_cache() call"
"""The fix's title: the statement that calls it every step is deleted (``pass`` where the block
would be left empty)."""


def _autofix(setup: TrainingSetup, call: CallSite) -> Fix | None:
    """``delete_statement`` of the call, in the setup's own file."""
    if call.span is None or call.span.path != setup.path or setup.kind not in ("python", "notebook"):
        return None
    return Fix(FIX_REMOVE, FixSafety.SAFE, (EditOp("delete_statement", call.span),))


class EmptyCacheMisuse(Rule):
    """``torch.cuda.empty_cache()`` on every training step (see the module docstring)."""

    code = "LL006"
    name = "empty-cache-misuse"
    severity = Severity.WARNING
    summary = "torch.cuda.empty_cache() on every step slows training and does not lower the peak"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)
    fixes = {FIX_REMOVE: FixSafety.SAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        for call in setup.calls_of("empty_cache"):
            # `in_step_callback` marks calls that run once per training step: in a per-step hook,
            # or in a loop whose own body runs the step (`.backward()` / `optimizer.step()`).
            # A loop alone is not enough: a sweep, an epoch loop or an evaluation loop runs it
            # between phases, which is fine.
            if call.synthetic or not call.in_step_callback:
                continue
            if call.periodic:
                # `if step % 100 == 0:` / `if step == 0:`: every N steps or once, the compromise
                # the fix itself recommends (CallSite.periodic; a divisor of 1 is every step)
                continue
            where = "the training loop, on every step" if call.in_loop else "a per-step callback"
            # the device API the script calls (torch.xpu / torch.npu / torch.mps / torch.cuda)
            qualified = call.qualified_name or ""
            name = qualified if qualified.startswith("torch.") and qualified.endswith(".empty_cache") \
                else "torch.cuda.empty_cache"
            yield self.finding(
                context, setup, call.span,
                f"{name}() runs in {where}: it returns PyTorch's cached blocks to the driver, "
                "so the next step must allocate them again and synchronise, which slows every step "
                "(removed from the Trainer for that reason: transformers#31372, PR #31530; in PEFT's benchmark "
                "250 steps took 65 s with a flush every step and 45 s without, peft PR #2894). It does not lower the peak a step needs: the estimated "
                "peak is the same without the call.",
                fix=("Remove the call from the loop; call it once after training or between phases. If "
                     "fragmentation makes reserved memory grow, flush every N steps (e.g. `if step % 50 == 0:`) "
                     "or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."),
                autofix=_autofix(setup, call),
            )
