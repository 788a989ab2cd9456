"""LL022 eval-logits-on-gpu (page: ``rules/LL022.md``).

A trainer given ``compute_metrics=`` and ``eval_dataset=`` for a causal LM (the
``"trainer_inputs"`` CallSite: ``model_class`` names a ``...ForCausalLM`` class, Unsloth's
``FastLanguageModel``, or a hub id a TRL trainer loads as one), without
``preprocess_logits_for_metrics=`` and without ``eval_accumulation_steps``: the Trainer's
``evaluation_loop`` keeps every batch's logits on the GPU (``EvalLoopContainer``, concatenated
on the device until ``eval_accumulation_steps``, default ``None``: never; transformers
``trainer.py`` / ``training_args.py``) and hands the lot to ``compute_metrics``. The logits of
a causal LM are samples × sequence × vocabulary values: 500 × 1,024 × 128,256 × 2 B ≈ 122 GiB
for Llama-3 (huggingface/transformers#26702: "CUDA out of memory. Tried to allocate
12.94 GiB" in ``evaluate()``; huggingface/trl#893).

The price: for the eval set's size when the file writes it (``ds.select(range(N))``,
``ds.take(N)``: ``eval_samples``), else per 1,000 eval samples, at the training
sequence length (the estimate's shape; eval batches pad to their longest sample, at most this
length) and the vocabulary of the catalogued model, 2 bytes per value for a 16-bit or quantized
model (logits come out in the model's dtype), 4 for a float32 one; and how many samples fill
the named GPU. Without a catalogued model the message gives the formula only. Warning; info
when the training arguments are parsed from the command line (the launch may pass
``--eval_accumulation_steps``).

Silent: ``preprocess_logits_for_metrics`` given (the usual ``logits.argmax(-1)`` keeps one id
per token), ``eval_accumulation_steps`` set (moves them to the CPU every N steps: host RAM
instead, huggingface/transformers#28938), no eval dataset or no ``compute_metrics``, a model
class that is not a causal LM (sequence classification logits are tiny), Seq2Seq trainers
(``predict_with_generate`` returns token ids), a value lintlora cannot resolve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Severity
from lintlora.rules._text import at_line, count, gib
from lintlora.rules.base import Rule
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["EvalLogitsOnGpu", "logits_bytes", "PER_SAMPLES"]

PER_SAMPLES = 1000
"""The eval-set size the price is quoted for when the file does not give one."""


def logits_bytes(samples: int, seq_len: int, vocab: int, width: int) -> int:
    """Bytes of the logits the evaluation loop keeps: ``samples`` × ``seq_len`` × ``vocab`` ×
    ``width`` (2 for 16-bit, 4 for float32 values)."""
    return samples * seq_len * vocab * width


def _causal(model_class: Setting | None) -> bool:
    if model_class is None or not model_class.known or not isinstance(model_class.value, str):
        return False
    name = model_class.value
    return "CausalLM" in name or name in ("FastLanguageModel", "AutoPeftModelForCausalLM")


class EvalLogitsOnGpu(Rule):
    """compute_metrics on a causal LM keeps every eval logit on the GPU."""

    code = "LL022"
    name = "eval-logits-on-gpu"
    severity = Severity.WARNING
    summary = "compute_metrics on a causal LM without preprocess_logits_for_metrics: eval logits on the GPU"
    fix_changes_memory = False
    depends_on_settings = False  # fires on the file alone (LL900 may report its suppressions)

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        calls = setup.calls_of("trainer_inputs")
        if not calls or setup.kind not in ("python", "notebook"):
            return
        call = calls[0]
        a = call.args
        metrics, evalset = a.get("compute_metrics"), a.get("eval_dataset")
        if not (metrics is not None and metrics.is_(True) and evalset is not None and evalset.is_(True)):
            return
        pre = a.get("preprocess_logits_for_metrics")
        if pre is not None and not pre.is_(False):
            return
        if not _causal(a.get("model_class")) or "Seq2Seq" in call.qualified_name:
            return
        extra = setup.training.extra if setup.training is not None else {}
        acc = extra.get("eval_accumulation_steps")
        if acc is not None and not acc.is_(None):
            return
        # training arguments parsed from the command line (HfArgumentParser): the launch may
        # pass --eval_accumulation_steps
        parsed = setup.training is not None and facts.set_at_launch(setup.training.gradient_accumulation_steps)
        arch = context.architecture(setup)
        shape = context.shape(setup)
        price = ""
        if arch is not None and getattr(arch, "vocab_size", None) and shape is not None:
            width = 2 if facts.is_quantized(setup) or setup.get("model.torch_dtype").value in (
                "bfloat16", "float16", "auto") else 4
            samples = a.get("eval_samples")
            known = samples is not None and samples.known and isinstance(samples.value, int)
            n = samples.value if known else PER_SAMPLES
            per = logits_bytes(n, shape.seq_len, arch.vocab_size, width)
            what = (f"for the {count(n)} eval samples ({samples.source})" if known
                    else f"per {count(PER_SAMPLES)} eval samples")
            price = (f" For {arch.name} that is {count(n)} samples × {count(shape.seq_len)} tokens × "
                     f"{count(arch.vocab_size)} vocabulary × {width} B = {gib(per)} {what}")
            gpu = context.gpu_memory_bytes
            if gpu and known:
                # the weights and the optimizer state stay on the GPU during evaluation: the
                # training peak is an upper bound on what the logits come on top of
                peak = context.figures(setup).peak_bytes or 0
                total = per + peak
                verdict = "more than" if total > gpu else "within"
                on_top = f"; with the estimated training peak of {gib(peak)} that is {gib(total)}" if peak else ""
                price += f"{on_top}, {verdict} the {context.gpu_label or 'GPU'}'s {gib(gpu)}"
            elif gpu:
                fit = max(0, gpu // (shape.seq_len * arch.vocab_size * width))
                price += (f"; the {context.gpu_label or 'GPU'}'s {gib(gpu)} hold the logits of about "
                          f"{count(fit)} samples")
            price += "."
        else:
            price = " They take eval samples × sequence length × vocabulary size × 2 bytes (4 in float32)."
        line = f" ({at_line(metrics.key_span)})" if metrics.key_span is not None else ""
        yield self.finding(
            context, setup, metrics.key_span or metrics.span or call.span,
            f"compute_metrics{line} with an eval dataset on a causal LM, without preprocess_logits_for_metrics or "
            "eval_accumulation_steps: the evaluation loop keeps every batch's logits on the GPU until the end of "
            "evaluation and then passes them all to compute_metrics, so the first evaluation runs out of memory "
            f"once they outgrow the GPU (transformers#26702, trl#893).{price}"
            + (" The training arguments are parsed from the command line: unless the launch passes "
               "--eval_accumulation_steps." if parsed else ""),
            fix=("Reduce the logits per batch: preprocess_logits_for_metrics=lambda logits, labels: "
                 "logits.argmax(dim=-1) (compute_metrics then gets token ids); or set eval_accumulation_steps "
                 "to move them to the CPU every few steps (host RAM then holds them)."),
            severity=Severity.INFO if parsed else Severity.WARNING,
        )
