"""LL019 pad-token-is-eos (page: ``rules/LL019.md``).

``tokenizer.pad_token = tokenizer.eos_token`` (or ``pad_token_id = eos_token_id``: the
``"pad_token_is_eos"`` CallSite, kept by the extractor only when no later statement gives the
pad token another value) with a collator that turns every label equal to the pad id into
``-100``:

- transformers' ``DataCollatorForLanguageModeling(mlm=False)``: ``torch_call`` sets
  ``labels[labels == self.tokenizer.pad_token_id] = -100`` (transformers
  ``src/transformers/data/data_collator.py``; huggingface/transformers#23530);
- TRL's legacy ``DataCollatorForCompletionOnlyLM`` (a subclass calling the same
  ``torch_call``: trl ``trl/trainer/utils.py`` v0.19.0 line 138; removed in 0.20.0).

With pad == eos every EOS of the data is masked out of the loss, so the model never learns to
stop and generates until ``max_new_tokens`` (mlabonne/llm-course#33, unslothai/unsloth#416,
huggingface/open-r1 PR #494). Warning: training runs, the result is broken.

Silent: TRL's current SFT collator (``trl.trainer.sft_trainer.DataCollatorForLanguageModeling``
pads ``labels`` with ``-100`` by position, v1.9.0 lines 489-497, never by value),
``DataCollatorForSeq2Seq`` (pads labels with ``label_pad_token_id=-100``), no collator passed,
a collator lintlora cannot follow, ``mlm`` left at its default (``True``), a distinct pad token
set after the ``eos`` line, a tokenizer whose pad == eos by its own files (not read: the
rule's known gap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora.findings import Finding, Severity
from lintlora.rules._text import at_line
from lintlora.rules.base import Rule
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["PadTokenIsEos", "MASKING_COLLATORS"]

MASKING_COLLATORS = {
    "transformers.DataCollatorForLanguageModeling": "DataCollatorForLanguageModeling(mlm=False)",
    "trl.DataCollatorForCompletionOnlyLM": "DataCollatorForCompletionOnlyLM",
}
"""Collators whose labels are ``-100`` wherever the token equals the pad id (module docstring)."""


def _inputs(setup: TrainingSetup) -> dict[str, Setting]:
    calls = setup.calls_of("trainer_inputs")
    return dict(calls[0].args) if calls else {}


class PadTokenIsEos(Rule):
    """pad = eos with a collator that masks pad labels: the EOS is never learned."""

    code = "LL019"
    name = "pad-token-is-eos"
    severity = Severity.WARNING
    summary = "pad_token = eos_token with a collator that masks pad labels: the EOS is never learned"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        pads = setup.calls_of("pad_token_is_eos")
        if not pads or not setup.is_training:
            return
        args = _inputs(setup)
        collator = args.get("data_collator")
        if collator is None or not collator.known or collator.value not in MASKING_COLLATORS:
            return
        if collator.value == "transformers.DataCollatorForLanguageModeling":
            mlm = args.get("collator_mlm")
            if mlm is None or not mlm.is_(False):
                return
        pad = pads[-1]
        shown = MASKING_COLLATORS[collator.value]
        line = f" ({at_line(collator.span)})" if collator.span is not None else ""
        yield self.finding(
            context, setup, pad.span,
            f"{pad.qualified_name} makes the pad token the EOS, and {shown}{line} sets every label equal to the "
            "pad id to -100: every EOS of the data is left out of the loss, so the model never learns to "
            "stop and generates until max_new_tokens (transformers data_collator.py torch_call; "
            "llm-course#33, unsloth#416).",
            fix=("Give the tokenizer a pad token of its own (an unused reserved token, e.g. "
                 "tokenizer.pad_token = '<|finetune_right_pad_id|>' on Llama-3, or tokenizer.unk_token), or "
                 "use a collator that pads labels with -100 by position: DataCollatorForSeq2Seq, or TRL's "
                 "SFTTrainer with its own collator."),
        )
