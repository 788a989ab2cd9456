"""Target (decoder) lengths of sequence-to-sequence scripts: which tokenizer calls truncate the
labels, and the ``target_seq_len`` setup fact (``TrainingArgs.extra["target_seq_len"]``).

A seq2seq script tokenizes its sources and its targets separately, e.g. transformers
``examples/pytorch/summarization/run_summarization.py``::

    model_inputs = tokenizer(inputs, max_length=data_args.max_source_length, truncation=True)
    labels = tokenizer(text_target=targets, max_length=max_target_length, truncation=True)

A tokenizer call is read as tokenizing targets when it passes ``text_target=`` (transformers
``PreTrainedTokenizerBase.__call__``) or names its length with a target word (``max_target_length``,
``max_output_length``, ``max_label_length``, ``target_max_len``, ``summary``: the names the
transformers examples and their copies use). The last is a reading by name and the setting's
``source`` says so (the older ``with tokenizer.as_target_tokenizer():`` idiom is recognised
through its length's name only). Its ``max_length`` is the decoder length; the others give the source length
(:meth:`lintlora.extract.pysections.SectionBuilders.truncation_lengths`).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TARGET_KEY", "target_kind", "TARGET_WORDS"]

TARGET_KEY = "target_seq_len"
"""``TrainingArgs.extra`` key of the decoder length read from the labels' tokenizer call."""

TARGET_WORDS = re.compile(r"(?:^|[._])(?:max_)?(?:target|output|label|labels|summary|tgt|answer|decoder)"
                          r"(?:_max)?(?:_seq)?(?:_len|_length)?(?:$|[._])|max_(?:target|output|label|tgt)_",
                          re.IGNORECASE)
"""A length expression naming the target side (``max_target_length``, ``args.max_output_len``,
``data_args.max_label_length``, ``tgt_len``)."""


def target_kind(builder: Any, rec: Any, length_node: Any) -> str | None:
    """How a tokenizer call is known to tokenize targets: ``"text_target"``, ``"by name"`` (its
    length expression names the target side), or ``None`` (a source call)."""
    for a in rec.node.args:
        if a.keyword is not None and a.keyword.value == "text_target":
            return "text_target"
    text = builder.text(length_node) if length_node is not None else ""
    if text and len(text) <= 200 and TARGET_WORDS.search(text):
        return "by name"
    return None
