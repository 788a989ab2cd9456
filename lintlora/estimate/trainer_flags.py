"""``lintlora estimate`` flags for preference and RL trainers (``--trainer``,
``--max-prompt-length``, ``--max-completion-length``, ``--num-generations``,
``--precompute-ref-log-probs``, ``--ref-model/--no-ref-model``): the flag path resolves them with
the same rules as a script (:func:`lintlora.estimate.trainers.resolve`), so a run written as flags
and the same run written as a TRL script price the same.

What a script says and the flags cannot (``beta``, ``use_vllm``, ``gradient_accumulation_steps``)
takes trl's defaults, stated in the notes: ``beta`` GRPOConfig 0.0 / RLOOConfig 0.05 (so
``--ref-model`` is how to ask for a reference copy), no vLLM, and one micro-batch per
generation batch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import click

from lintlora.estimate.trainers import TRAINERS, resolve, spec_of

__all__ = ["trainer_options", "apply_trainer_flags"]

_MAX_LEN = 1_048_576
_MAX_GENERATIONS = 4096


def trainer_options(f: Callable) -> Callable:
    """The trainer flags, as click options on ``estimate_cmd``."""
    opts = [
        click.option("--trainer", type=click.Choice(list(TRAINERS)), default=None,
                     help="training objective: sft (default), a preference trainer (dpo, ipo, orpo, simpo, cpo, "
                          "kto), online RL (grpo, rloo, ppo) or reward modelling (rm)"),
        click.option("--max-prompt-length", type=click.IntRange(1, _MAX_LEN), default=None,
                     help="GRPO/RLOO/PPO: prompt tokens (default 512)"),
        click.option("--max-completion-length", type=click.IntRange(1, _MAX_LEN), default=None,
                     help="GRPO/RLOO/PPO: generated tokens per completion (trl default 256)"),
        click.option("--num-generations", type=click.IntRange(1, _MAX_GENERATIONS), default=None,
                     help="GRPO/RLOO: completions per prompt (trl default 8 / 2)"),
        click.option("--precompute-ref-log-probs", is_flag=True, default=False,
                     help="DPO/IPO/KTO: reference log-probs computed before training (no reference model kept)"),
        click.option("--ref-model/--no-ref-model", "ref_model", default=None,
                     help="a separate reference model is loaded (a frozen copy) / none is"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def apply_trainer_flags(inputs: Any, notes: list[str], *, trainer: str | None,
                        max_prompt_length: int | None, max_completion_length: int | None,
                        num_generations: int | None, precompute_ref_log_probs: bool,
                        ref_model: bool | None) -> Any:
    """``inputs`` (``EstimateInputs``) for the trainer the flags name; ``notes`` gets the
    trainer's sentences. Unchanged for ``sft`` (or no ``--trainer``)."""
    from lintlora.estimate.trainer_setup import loss_impl_for

    key = trainer or "sft"
    spec = spec_of(key)
    if key == "sft":
        if any(v is not None for v in (max_prompt_length, max_completion_length, num_generations, ref_model)) \
                or precompute_ref_log_probs:
            notes.append("preference/RL flags ignored without --trainer")
        return inputs
    assumed = inputs.assumed
    if spec.generates:
        assumed = tuple(a for a in assumed if a != "seq_len")
        notes[:] = [n for n in notes if not n.startswith("--seq-len not given")]
        notes.append("generation batch: --batch-size completions (gradient_accumulation_steps 1 assumed)")
    plan = resolve(key, peft=inputs.method != "full", batch_size=inputs.batch_size, seq_len=inputs.seq_len,
                   precompute_ref_log_probs=precompute_ref_log_probs or None, ref_model=ref_model,
                   max_prompt_length=max_prompt_length, max_completion_length=max_completion_length,
                   num_generations=num_generations, steps_per_generation=1, framework=inputs.framework,
                   value_head_on_policy=inputs.framework == "llama-factory")
    notes.extend(plan.notes)
    out = replace(
        inputs, assumed=assumed, trainer=plan.trainer, sequences_per_example=plan.sequences_per_example,
        seq_len=int(plan.seq_len or inputs.seq_len), reference_model=plan.reference_model,
        reference_forward=plan.reference_forward, generation_batch_size=plan.generation_batch_size,
        reward_model=plan.reward_model, value_model=plan.value_model,
        num_generations=num_generations if spec.generates else None,
        max_prompt_length=plan.prompt_length, max_completion_length=plan.completion_length)
    return replace(out, loss_impl=loss_impl_for(plan.trainer, out))
