"""LL018 gemma-eager-attention (page: ``rules/LL018.md``).

Gemma-2 (``model_type`` ``gemma2``, from the model catalog, or a hub id naming ``gemma-2``)
trained with an attention implementation that drops its attention logit soft-capping
(``attn_logit_softcapping=50.0`` in Gemma-2's config: scores become ``50 · tanh(s / 50)``).
transformers ``src/transformers/models/gemma2/modeling_gemma2.py`` (read at commit 006e8693,
the 4.47 development line): ``eager_attention_forward`` applies the cap,
``flex_attention_forward`` applies it in its ``score_mod``, ``flash_attention_forward`` passes
``softcap=`` only ``if is_flash_attn_greater_or_equal("2.6.0")``, and
``sdpa_attention_forward`` calls ``torch.nn.functional.scaled_dot_product_attention`` without
it; ``Gemma2ForCausalLM.forward`` warns in training "It is strongly recommended to train Gemma2
models with the `eager` attention implementation instead of `...`". Reports:
huggingface/transformers#32390 (NaN with the default SDPA and padding), #33333 (loss 0 and NaN
from the first step on 4.44.2), huggingface/peft#2111.

Judged against the transformers release the run uses (the message names it):

- ``attn_implementation="sdpa"`` written: warning, any release;
- not written: transformers' default is ``sdpa`` from 4.47 (the development code read has no
  override); older Gemma-2 code overrode ``_check_and_enable_sdpa`` to swap the default
  ``sdpa`` for ``eager`` ("DISABLE torch SDPA by default on Gemma2 models"), so releases
  before 4.47 are not reported (a conservative bound: lintlora read the override in the
  4.42-era code and its absence in the 4.47 development code);
- ``"flash_attention_2"`` with a pinned ``flash-attn`` older than 2.6: warning; unpinned:
  silent (2.6 and later apply the cap).

The fix is priced: the estimate with ``attn_implementation="eager"`` keeps each layer's
attention scores (the estimator's eager attention terms, :mod:`lintlora.estimate.memory`), so
the finding shows the peak as written and with eager.

Silent: Gemma-3 (no attention soft-capping: ``Gemma3TextConfig(attn_logit_softcapping=None)``,
``configuration_gemma3.py``; transformers still prints its "train Gemma3 with eager" warning,
and LL017 covers float16 on Gemma-3), ``eager`` or ``flex_attention`` written, Unsloth (its
own Gemma-2 kernels apply the cap), YAML configs, an implementation lintlora cannot resolve.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

from packaging.version import Version

from lintlora.findings import Finding, Severity
from lintlora.rules._text import gib
from lintlora.rules.base import Rule
from lintlora.training_setup import TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["GemmaEagerAttention", "SDPA_DEFAULT_SINCE", "FLASH_SOFTCAP_SINCE"]

SDPA_DEFAULT_SINCE = Version("4.47.0")
"""First transformers release lintlora takes to run Gemma-2 with SDPA by default (module
docstring: the override swapping it for eager is absent from the 4.47 development code)."""
FLASH_SOFTCAP_SINCE = Version("2.6.0")
"""flash-attn release that added ``softcap`` (modeling_gemma2.py: ``is_flash_attn_greater_or_equal("2.6.0")``)."""
_GEMMA2_NAME = re.compile(r"(?i)gemma-?2(?![\d.])")


class GemmaEagerAttention(Rule):
    """Gemma-2 trained with an attention path that drops its logit soft-capping."""

    code = "LL018"
    name = "gemma-eager-attention"
    severity = Severity.WARNING
    summary = "Gemma-2 trained with sdpa (or old flash-attn): attention logit soft-capping is not applied"
    depends_on_settings = True  # the verdict follows the library versions (--assume-version) or the model

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if setup.kind not in ("python", "notebook") or not setup.is_training or setup.model is None \
                or setup.framework == "unsloth":
            return
        arch = context.architecture(setup)
        name = setup.get("model.name_or_path")
        if arch is not None and getattr(arch, "model_type", None):
            if arch.model_type != "gemma2":
                return
        elif not (name.known and isinstance(name.value, str) and _GEMMA2_NAME.search(name.value)):
            return
        attn = setup.get("model.attn_implementation")
        transformers = context.library_version(setup, "transformers")
        span = attn.key_span or attn.span or setup.model.span
        if attn.known:
            value = attn.value
            if value == "sdpa":
                why = 'attn_implementation="sdpa" calls torch\'s scaled_dot_product_attention, which has no soft-capping'
            elif isinstance(value, str) and value.startswith("flash_attention"):
                flash = context.library_version(setup, "flash-attn")
                if flash.version is None or flash.version >= FLASH_SOFTCAP_SINCE:
                    return
                why = (f'attn_implementation="{value}" with flash-attn older than 2.6 ({flash.where}) runs '
                       "without softcap (modeling_gemma2.py passes it only from flash-attn 2.6)")
            else:
                return  # eager, flex_attention, or something else
        else:
            if "not passed" not in (attn.source or ""):
                return  # passed but not resolved
            if transformers.version is None or transformers.version < SDPA_DEFAULT_SINCE:
                return
            why = ("no attn_implementation is given, so transformers uses sdpa "
                   f"({transformers.where}), which has no soft-capping")
        fixed = setup.set("model.attn_implementation", "eager", "LL018 fix: eager attention")
        figures = context.figures(setup, fixed)
        price = ""
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None:
            price = (f" Eager attention keeps each layer's attention scores: estimated peak "
                     f"{gib(figures.peak_bytes)} as written, {gib(figures.peak_after_fix_bytes)} with eager.")
        model = getattr(arch, "name", None) or name.value
        yield self.finding(
            context, setup, span,
            f"{model} is trained with an attention path that drops Gemma-2's attention logit soft-capping: {why}. "
            "transformers warns \"It is strongly recommended to train Gemma2 models with the `eager` attention "
            "implementation\" (modeling_gemma2.py); runs without the cap report NaN losses or a loss of 0 "
            f"(transformers#32390, #33333).{price}",
            fix=('Load the model with attn_implementation="eager" (or "flex_attention" on torch 2.5+, or '
                 '"flash_attention_2" with flash-attn 2.6 or later).'),
            fixed_setup=fixed,
        )
