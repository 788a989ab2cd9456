"""LL020 trl-max-length (page: ``rules/LL020.md``).

Two sub-cases about TRL's SFT sequence length, read from the ``"trainer_inputs"`` CallSite
(:mod:`lintlora.extract.pyidioms16`) and judged against the TRL release the run uses
(:meth:`lintlora.context.Context.library_version`; every message names it and where it came
from):

(a) ``max_seq_length=`` written in ``SFTConfig(...)``: TRL 0.16.0 renamed it ``max_length``
    and deprecated the old name (``trl/trainer/sft_config.py`` v0.16.0: "`max_seq_length` is
    deprecated and will be remove in version 0.20.0. Use `max_length` instead.", then
    ``self.max_length = self.max_seq_length``); TRL 0.20.0 removed the field, so
    ``SFTConfig(max_seq_length=...)`` raises ``TypeError: SFTConfig.__init__() got an
    unexpected keyword argument 'max_seq_length'`` (trl#3704; unslothai/unsloth#10785,
    huggingface/course#1171). Error from 0.20, warning from 0.16, silent before.
    ``SFTTrainer(max_seq_length=...)``: the trainer keyword left ``SFTTrainer.__init__`` in
    0.13.0 (``trl/trainer/sft_trainer.py`` v0.13.0 takes it from ``args`` only): a
    ``TypeError`` from 0.13 on, silent before, and silent under Unsloth, whose trainer patch
    moves the old trainer keywords into the config (``unsloth/trainer.py``
    ``_backwards_compatible_trainer``: "From `trl>=0.13.0`, they changed how to pass several
    params to the trainer").
(b) ``SFTTrainer`` run with TRL's default length (``SFTConfig.max_length=1024``,
    ``trl/trainer/sft_config.py`` v1.9.0 line 205, truncation ``keep_start``; 0.x:
    ``min(tokenizer.model_max_length, 1024)``) while the file names a longer one elsewhere
    (``extra["intended_length"]``: a tokenizer's ``max_length``/``model_max_length``, a
    ``max_seq_length=`` given to another call, a module variable named like
    ``MAX_SEQ_LEN``/``cutoff_len``): every sample is cut at 1,024 tokens without a word
    (unslothai/unsloth#2904, PR #2669). Warning. The finding's estimate is at the length TRL
    runs with, the "after" figure at the file's length, and the message gives both.

Silent: Unsloth scripts in (b) (Unsloth's trainer patch takes the length from
``FastLanguageModel.from_pretrained(max_seq_length=...)``: ``estimate/setup_knobs.py``), a
length lintlora cannot resolve, any ``max_length=`` the SFTConfig is given, trainers other than
``SFTTrainer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from packaging.version import Version

from lintlora.findings import Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import at_line, gib
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["TrlMaxLength", "RENAMED_IN", "REMOVED_IN", "TRAINER_KEYWORD_REMOVED_IN"]

RENAMED_IN = Version("0.16.0")
"""``SFTConfig.max_seq_length`` deprecated for ``max_length`` (trl ``sft_config.py`` v0.16.0)."""
REMOVED_IN = Version("0.20.0")
"""``SFTConfig.max_seq_length`` removed (trl ``sft_config.py`` v0.20.0 has only ``max_length``)."""
TRAINER_KEYWORD_REMOVED_IN = Version("0.13.0")
"""``SFTTrainer(max_seq_length=...)`` no longer a parameter (trl ``sft_trainer.py`` v0.13.0)."""
DEFAULT_LENGTH = 1024
"""``SFTConfig.max_length`` default (trl ``trl/trainer/sft_config.py`` v1.9.0 line 205)."""


def _inputs(setup: TrainingSetup) -> dict[str, Setting]:
    for call in setup.calls_of("trainer_inputs"):
        if call.span == setup.anchor or len(setup.calls_of("trainer_inputs")) == 1:
            return dict(call.args)
    return {}


FIX_RENAME = "rename max_seq_length to max_length"
"""The rename fix's title: the config call's keyword renamed (trl 0.16 and newer have it)."""
FIX_LENGTH = "pass max_length to the config"
"""The default-length fix's title: ``max_length=<the length the file means>`` set on the
config's call (trl 0.16 and newer; older ones name it max_seq_length)."""


class TrlMaxLength(Rule):
    """TRL's SFT length: the removed ``max_seq_length`` name, or the silent 1,024 default."""

    code = "LL020"
    name = "trl-max-length"
    severity = Severity.ERROR
    summary = "max_seq_length= on a TRL that removed it, or SFT silently truncating to 1,024 tokens"
    depends_on_settings = True  # the verdict follows the library versions (--assume-version) or the model
    fixes = {FIX_RENAME: FixSafety.SAFE, FIX_LENGTH: FixSafety.SAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if setup.kind not in ("python", "notebook"):
            return
        args = _inputs(setup)
        keyword = args.get("max_seq_length_keyword")
        used = context.library_version(setup, "trl")
        if keyword is not None and used.version is not None:
            finding = self._renamed(context, setup, keyword, used)
            if finding is not None:
                yield finding
            return
        intended = args.get("intended_length")
        trainer = setup.training.extra.get("trainer_class", Setting()) if setup.training is not None else Setting()
        msl = setup.get("training.max_seq_length")
        if intended is None or not trainer.is_("trl.SFTTrainer") or setup.framework == "unsloth" \
                or not setup.is_training:
            return
        if not (msl.known and msl.origin is Origin.LIBRARY_DEFAULT and msl.value == DEFAULT_LENGTH):
            return
        fixed = setup.set("training.max_seq_length", intended.value, "LL020 fix: max_length as the file means")
        figures = context.figures(setup, fixed)
        money = ""
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None:
            money = (f" The estimate is at the length TRL runs with: peak {gib(figures.peak_bytes)} at "
                     f"{DEFAULT_LENGTH} tokens, {gib(figures.peak_after_fix_bytes)} at {intended.value}.")
        where = f" ({at_line(intended.span)})" if intended.span is not None else ""
        yield self.finding(
            context, setup, setup.training.span if setup.training is not None else setup.anchor,
            f"SFTConfig sets no max_length, so TRL truncates every sample to {DEFAULT_LENGTH} tokens "
            f"(SFTConfig.max_length default, trl sft_config.py; {used.where}), but the file means "
            f"{intended.value}: {intended.source}{where}. Samples longer than {DEFAULT_LENGTH} tokens lose "
            f"their end without a warning (unsloth#2904).{money}",
            fix=f"Pass max_length={intended.value} to SFTConfig (max_seq_length= in trl older than 0.16).",
            fixed_setup=fixed, severity=Severity.WARNING,
            autofix=self._length_fix(setup, intended, used),
        )

    @staticmethod
    def _length_fix(setup: TrainingSetup, intended: Setting, used) -> Fix | None:
        """``set_keyword max_length=<n>`` on the SFTConfig call, where the trl used has the name."""
        if used.version is None or used.version < RENAMED_IN or not isinstance(intended.value, int) \
                or setup.training is None:
            return None
        msl = setup.get("training.max_seq_length")
        op = ops.set_keyword(setup.training.span, setup.path, "max_length", str(intended.value), msl)
        return ops.make_fix(FIX_LENGTH, FixSafety.SAFE, [op])

    @staticmethod
    def _rename_fix(setup: TrainingSetup, keyword: Setting) -> Fix | None:
        """``rename_keyword`` in the SFTConfig call the keyword is written in."""
        if setup.training is None:
            return None
        op = ops.rename_keyword(setup.training.span, setup.path, "max_seq_length", "max_length", keyword)
        return ops.make_fix(FIX_RENAME, FixSafety.SAFE, [op])

    def _renamed(self, context: "Context", setup: TrainingSetup, keyword: Setting, used) -> Finding | None:
        version = used.version
        in_trainer = keyword.source == "SFTTrainer"
        span = keyword.key_span or keyword.span
        value = keyword.value if keyword.known else (keyword.expr or "...")
        fixed = setup  # the same length under its new name: memory unchanged
        if in_trainer:
            if version < TRAINER_KEYWORD_REMOVED_IN or setup.framework == "unsloth":
                # Unsloth's trainer patch moves the old trainer keywords into the config
                # (unsloth/trainer.py _backwards_compatible_trainer, "From `trl>=0.13.0`")
                return None
            return self.finding(
                context, setup, span,
                f"SFTTrainer(max_seq_length=...) is not a parameter of SFTTrainer since trl 0.13 "
                f"(trl sft_trainer.py), so the trainer call raises TypeError: unexpected keyword argument "
                f"'max_seq_length' ({used.where}).",
                fix=(f"Pass the length to the config: SFTConfig(max_length={value}) "
                     "(max_seq_length= in trl 0.13-0.15)."),
                fixed_setup=fixed, severity=Severity.ERROR,
            )
        if version >= REMOVED_IN:
            return self.finding(
                context, setup, span,
                f"SFTConfig(max_seq_length=...) raises TypeError: SFTConfig.__init__() got an unexpected "
                f"keyword argument 'max_seq_length': trl renamed it max_length in 0.16 and removed the old "
                f"name in 0.20 (trl#3704, unsloth#10785; {used.where}).",
                fix=f"Rename it: SFTConfig(max_length={value}).",
                fixed_setup=fixed, severity=Severity.ERROR, autofix=self._rename_fix(setup, keyword),
            )
        if version >= RENAMED_IN:
            return self.finding(
                context, setup, span,
                f"SFTConfig(max_seq_length=...) is deprecated since trl 0.16 (renamed max_length) and is "
                f"removed in trl 0.20, where it raises TypeError ({used.where}); it still works here.",
                fix=f"Rename it: SFTConfig(max_length={value}).",
                fixed_setup=fixed, severity=Severity.WARNING, autofix=self._rename_fix(setup, keyword),
            )
        return None
