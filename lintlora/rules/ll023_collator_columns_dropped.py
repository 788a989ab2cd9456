"""LL023 collator-columns-dropped (page: ``rules/LL023.md``).

A collator the file defines (a function, or a class whose ``__call__`` is read) passed as
``data_collator=`` to a transformers ``Trainer`` (or a subclass), that reads columns of each
example which are not inputs of the model's ``forward`` (``"text"``, ``"messages"``,
``"images"``: the ``"trainer_inputs"`` CallSite's ``collator_columns``, against
:data:`MODEL_INPUT_COLUMNS`), while ``remove_unused_columns``
stays ``True`` (``TrainingArguments`` default ``True``, transformers
``src/transformers/training_args.py``). Before the collator runs, the Trainer drops every
dataset column the model's ``forward`` does not take (``Trainer._remove_unused_columns`` for a
``datasets.Dataset``, ``RemoveColumnsCollator`` around the collator for other datasets;
``trainer.py``), so the first batch raises ``KeyError: 'text'`` (or ``.get`` returns ``None``)
(TIGER-AI-Lab/VLM2Vec#43; huggingface/transformers PR #38091, where the maintainers point to
``remove_unused_columns=False``). Error.

Silent: ``remove_unused_columns=False`` (or a value lintlora cannot resolve), TRL trainers
(they tokenize the dataset themselves and set their own signature columns:
``trl/trainer/sft_trainer.py`` ``_set_signature_columns_if_needed``), library collators,
collators that read only model inputs or read columns in a way not followed (``{k: ... for k
in features[0]}``), a model whose class is not a transformers one (its ``forward`` may take the
columns), training arguments lintlora could not read. Info when the value is a default the
launch may change (training arguments parsed by ``HfArgumentParser``, an argparse option).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules._text import at_line, join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["CollatorColumnsDropped", "MODEL_INPUT_COLUMNS"]

MODEL_INPUT_COLUMNS = frozenset({
    "input_ids", "attention_mask", "labels", "token_type_ids", "position_ids", "inputs_embeds",
    "label", "label_ids", "decoder_input_ids", "decoder_attention_mask", "pixel_values",
    "image_sizes", "image_grid_thw", "pixel_attention_mask", "cache_position",
    "past_key_values", "use_cache",
})
"""Columns a causal LM's ``forward`` takes, plus ``label``/``label_ids`` which the Trainer always
keeps (transformers ``trainer.py`` ``_set_signature_columns_if_needed``: the forward's
parameters ``+ ["label", "label_ids"] + self.label_names``)."""


def _library_model(model_class: Setting | None) -> bool:
    if model_class is None or not model_class.known or not isinstance(model_class.value, str):
        return False
    name = model_class.value
    return name.startswith("Auto") or "For" in name or name in ("FastLanguageModel", "FastModel")


class CollatorColumnsDropped(Rule):
    """A custom collator reading columns the Trainer removes (remove_unused_columns=True)."""

    code = "LL023"
    name = "collator-columns-dropped"
    severity = Severity.ERROR
    summary = "custom collator reads columns that remove_unused_columns=True drops: KeyError at step 1"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        calls = setup.calls_of("trainer_inputs")
        if not calls or not setup.is_training or setup.training is None:
            return
        call = calls[0]
        if call.qualified_name.startswith("trl."):
            return
        a = call.args
        collator, columns = a.get("data_collator"), a.get("collator_columns")
        if collator is None or columns is None or not collator.known or not str(collator.value).startswith("local:"):
            return
        if not _library_model(a.get("model_class")):
            return
        dropped = [c for c in (columns.value or ()) if c not in MODEL_INPUT_COLUMNS]
        if not dropped:
            return
        ruc = setup.training.extra.get("remove_unused_columns")
        severity = Severity.ERROR
        launch = ""
        if ruc is not None:
            if not ruc.is_(True):
                return
            where = f"remove_unused_columns=True ({at_line(ruc.span)})" if ruc.span is not None else \
                "remove_unused_columns=True"
            if facts.set_at_launch(ruc):
                severity, launch = Severity.INFO, f" This is remove_unused_columns=True {facts.launch_hint(ruc)}."
        else:
            ga = setup.training.gradient_accumulation_steps
            if not ga.known:
                return  # the training arguments were not read completely: it may be passed
            where = "remove_unused_columns left at its default True (transformers training_args.py)"
            if facts.set_at_launch(ga):
                # parsed training arguments (HfArgumentParser): the launch may pass
                # --remove_unused_columns False
                severity = Severity.INFO
                launch = " The training arguments are parsed from the command line: unless the launch passes " \
                         "--remove_unused_columns False."
        name = str(collator.value).split(":", 1)[1]
        shown = join_words([f'"{c}"' for c in dropped[:6]])
        yield self.finding(
            context, setup, collator.span or call.span,
            f"The collator {name} reads {shown} from each example, but with {where} the Trainer removes every "
            f"dataset column the model's forward does not take before the collator runs: the first batch "
            f"raises KeyError: '{dropped[0]}' (VLM2Vec#43, transformers PR #38091).{launch}",
            fix=("Pass remove_unused_columns=False to the TrainingArguments (the collator then gets every column "
                 "and must return only model inputs), or tokenize those columns into input_ids/labels in "
                 "dataset.map before training."),
            severity=severity,
        )
