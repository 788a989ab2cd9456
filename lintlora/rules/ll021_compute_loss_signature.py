"""LL021 compute-loss-signature (page: ``rules/LL021.md``).

Reads the ``"compute_loss_override"`` CallSites (:mod:`lintlora.extract.pyidioms16`): a
``compute_loss`` method of a local subclass of a transformers or TRL trainer.

(a) Error: the method has neither a ``num_items_in_batch`` parameter nor ``**kwargs``, under
    transformers >= 4.46. Since 4.46 ``Trainer.training_step`` calls ``self.compute_loss(model,
    inputs, num_items_in_batch=num_items_in_batch)`` unconditionally (transformers
    ``src/transformers/trainer.py``, ``training_step``; read at commit 000945a9, a 4.5x
    release), so the first step raises ``TypeError: compute_loss() got an unexpected keyword
    argument 'num_items_in_batch'`` (huggingface/transformers#36331, on 4.49.0).
(b) Warning: the method takes the count (by name or through ``**kwargs``) and never reads or
    forwards it, while ``gradient_accumulation_steps`` > 1. When the count is passed, the
    Trainer skips its own division by the accumulation steps for a model whose ``forward``
    accepts loss kwargs (same ``training_step``: ``if (not self.model_accepts_loss_kwargs or
    num_items_in_batch is None) and self.compute_loss_func is None: loss = loss /
    self.current_gradient_accumulation_steps``), so a loss averaged per micro-batch is
    gradient-accumulation times too large (MakazhanAlpamys/Soup#720 measured the ratio 4.0 at
    four micro-batches). Silent when the file sets ``model_accepts_loss_kwargs = False``.

Info when the accumulation count is a default the launch may change (an argparse option,
``HfArgumentParser``), with how it is set. Silent: a class the file defines but never constructs (the file trains with another trainer),
transformers older than 4.46 (the count is not passed), overrides of classes that are
not trainers, inference-only files, an accumulation count lintlora cannot resolve or of 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from packaging.version import Version

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["ComputeLossSignature", "PASSED_SINCE"]

PASSED_SINCE = Version("4.46.0")
"""First transformers release whose ``training_step`` passes ``num_items_in_batch=`` to
``compute_loss`` (huggingface/transformers#36331; trainer.py ``training_step``)."""


class ComputeLossSignature(Rule):
    """A trainer subclass's ``compute_loss`` that breaks or mis-scales under transformers >= 4.46."""

    code = "LL021"
    name = "compute-loss-signature"
    severity = Severity.ERROR
    summary = "compute_loss without num_items_in_batch (TypeError), or ignoring it under accumulation"
    fix_changes_memory = False
    depends_on_settings = True  # the verdict follows the library versions (--assume-version) or the model

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        overrides = setup.calls_of("compute_loss_override")
        if not overrides or not setup.is_training:
            return
        used = context.library_version(setup, "transformers")
        if used.version is None or used.version < PASSED_SINCE:
            return
        ga = setup.get("training.gradient_accumulation_steps")
        for call in overrides:
            a = call.args
            if a.get("instantiated") is not None and not a["instantiated"].is_(True):
                continue  # defined but never constructed in this file: another trainer runs
            takes = a["num_items_in_batch"].value is True
            star = a["var_kwargs"].value is True
            method = call.qualified_name
            if not takes and not star:
                yield self.finding(
                    context, setup, call.span,
                    f"{method}(...) has no num_items_in_batch parameter and no **kwargs, but the Trainer "
                    f"calls self.compute_loss(model, inputs, num_items_in_batch=...) on every step since "
                    f"transformers 4.46 (trainer.py training_step; {used.where}): the first step raises "
                    "TypeError: compute_loss() got an unexpected keyword argument 'num_items_in_batch' "
                    "(transformers#36331).",
                    fix=("Add the parameter and use it: def compute_loss(self, model, inputs, return_outputs=False, "
                         "num_items_in_batch=None), dividing a summed loss by num_items_in_batch (or pass it on to "
                         "super().compute_loss)."),
                    severity=Severity.ERROR,
                )
                continue
            if a["reads_num_items"].value is True:
                continue
            flag = a.get("model_accepts_loss_kwargs")
            if flag is not None and (not flag.known or flag.value is False):
                continue
            if not (ga.known and isinstance(ga.value, int) and not isinstance(ga.value, bool) and ga.value > 1):
                continue
            via = "num_items_in_batch" if takes else "**kwargs"
            hint = facts.launch_hint(ga)
            launch = f" This is gradient_accumulation_steps={ga.value} {hint}." if hint else ""
            yield self.finding(
                context, setup, call.span,
                f"{method}(...) takes {via} and never uses it, with gradient_accumulation_steps={ga.value}: when "
                "the Trainer passes the count it no longer divides the loss by the accumulation steps (for models "
                f"whose forward accepts loss kwargs; trainer.py training_step, {used.where}), so a loss averaged "
                f"per micro-batch makes the gradients {ga.value}x too large (Soup#720 measured 4.0x at 4 steps)."
                f"{launch}",
                fix=("Sum the per-token loss and divide by num_items_in_batch when it is given (as transformers' "
                     "ForCausalLMLoss does), or pass it on to super().compute_loss(..., num_items_in_batch="
                     "num_items_in_batch); or set model_accepts_loss_kwargs = False on the trainer class so the "
                     "Trainer divides by the accumulation steps itself."),
                severity=Severity.INFO if hint else Severity.WARNING,
            )
