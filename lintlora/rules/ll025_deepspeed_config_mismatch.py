"""LL025 deepspeed-config-mismatch (page: ``rules/LL025.md``).

Two failures of a DeepSpeed JSON that meet the run before step 1:

(a) **A hard-coded value that disagrees with the training arguments** (HF Trainer: transformers
    ``TrainingArguments``, TRL configs, LLaMA-Factory's YAML, which are the same arguments).
    transformers ``src/transformers/integrations/deepspeed.py`` (at 02348331b, the 5.x line;
    the same code since 4.x) ``HfTrainerDeepSpeedConfig.trainer_config_process`` calls
    ``fill_match`` for ``train_micro_batch_size_per_gpu`` (``per_device_train_batch_size``),
    ``gradient_accumulation_steps``, ``train_batch_size`` (``world_size ×
    per_device_train_batch_size × gradient_accumulation_steps``), ``gradient_clipping``
    (``max_grad_norm``), ``fp16.enabled`` (``fp16 or fp16_full_eval`` with the amp backend)
    and ``bf16.enabled`` (``bf16 or bf16_full_eval``): an ``"auto"`` value is filled in, any
    other value that differs is collected, and ``trainer_config_finalize`` (from
    ``deepspeed_init``, before the first step) raises ``ValueError: Please correct the
    following DeepSpeed config values that mismatch TrainingArguments values: - ds
    bf16.enabled=True vs hf bf16|bf16_full_eval=False ... The easiest method is to set these
    DeepSpeed config values to 'auto'.`` (Ucas-HaoranWei/GOT-OCR2.0#134,
    huggingface/transformers#27830; bug-reports-2 BN23/BN24). With ``auto_find_batch_size`` the
    two batch keys are filled without a check (``must_match=False``).
(b) **``"auto"`` in a JSON handed to DeepSpeed itself** (``deepspeed.initialize(...)`` in a
    script with no HF Trainer): DeepSpeed does not resolve ``"auto"``. deepspeed
    ``deepspeed/runtime/config.py`` (0.19.6, edaa72212) reads ``train_batch_size``,
    ``train_micro_batch_size_per_gpu`` and ``gradient_accumulation_steps`` with
    ``get_scalar_param`` as they are, and ``DeepSpeedConfig._batch_assertion`` compares them
    with ``> 0``: ``TypeError: '>' not supported between instances of 'str' and 'int'``
    (Roblox/FAI-RL PR #70 and #72; BN26). ``"auto"`` is a transformers/accelerate convention.

Reported at the JSON key's line (the :class:`~lintlora.training_setup.Distributed` Setting's
span, from the run's distribution), with a :class:`~lintlora.findings.RelatedLocation` at the
training argument's value (or, for a library default, at the training arguments) and at the
launch line. A value unknown on either side, a launch-time default the run may override
(:func:`lintlora.facts.set_at_launch`), or a precision that came from an accelerate config and
not the JSON is not judged. Axolotl configs are left alone (axolotl fills the JSON from its own
keys). Severity: error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable

from lintlora import facts
from lintlora.findings import Finding, RelatedLocation, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import UNKNOWN, Distributed, Origin, Setting, Span, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["DeepSpeedConfigMismatch", "HF_TRAINER_FRAMEWORKS", "AUTO_KEYS"]

HF_TRAINER_FRAMEWORKS = frozenset({"transformers", "trl", "unsloth", "llama-factory"})
"""Frameworks whose training arguments are transformers' ``TrainingArguments`` (so the HF
DeepSpeed integration checks the JSON against them)."""

AUTO_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
             "gradient_clipping")
"""Distributed fields (DeepSpeed JSON keys) whose ``"auto"`` DeepSpeed itself cannot read."""

_TA_DEFAULT_MAX_GRAD_NORM = 1.0
"""``TrainingArguments.max_grad_norm`` default (transformers ``training_args.py``; the table in
:mod:`lintlora.extract.defaults`)."""


def _number(s: Setting | None) -> float | None:
    if s is None or not s.known or isinstance(s.value, bool) or not isinstance(s.value, (int, float)):
        return None
    return s.value


def _flag(s: Setting | None) -> bool | None:
    if s is None or not s.known or not isinstance(s.value, bool):
        return None
    return s.value


def _ds_side(s: Setting) -> bool:
    """A DeepSpeed value that the HF integration checks: known, not ``"auto"``."""
    return s.known and s.value != "auto" and s.value is not None


class _Hf:
    """The training argument side: one value, its spelling and where it is."""

    def __init__(self, name: str, setting: Setting | None, value: Any, span: Span | None) -> None:
        self.name, self.setting, self.value, self.span = name, setting, value, span


def _hf(setup: TrainingSetup, name: str) -> _Hf | None:
    """The training argument ``name`` as the run uses it, or ``None`` when not known (unknown,
    a launch-time default the run may override)."""
    training = setup.training
    if training is None:
        return None
    s = training.extra.get(name) if not hasattr(training, name) else getattr(training, name)
    if s is None:
        if name == "max_grad_norm" and setup.kind == "python":
            from lintlora.extract.defaults import TRAINING_ARGUMENTS

            value = TRAINING_ARGUMENTS.values.get("max_grad_norm", _TA_DEFAULT_MAX_GRAD_NORM)
            return _Hf(name, Setting.library_default(value, TRAINING_ARGUMENTS.cite("max_grad_norm")), value,
                       training.span)
        if name in ("fp16_full_eval", "bf16_full_eval"):
            return _Hf(name, None, False, None)
        return None
    if not s.known or facts.set_at_launch(s, setup):
        return None
    return _Hf(name, s, s.value, s.span or s.key_span or training.span)


def _hf_related(hf: _Hf) -> tuple[RelatedLocation, ...]:
    if hf.span is None:
        return ()
    origin = hf.setting.origin if hf.setting is not None else None
    if origin is Origin.LIBRARY_DEFAULT:
        text = f"{hf.name}={hf.value!r} is the TrainingArguments default"
    elif origin is Origin.LAUNCH:
        text = f"{hf.name}={hf.value!r} passed by {facts.where(hf.span)}"
    else:
        text = f"{hf.name}={hf.value!r} in the training arguments"
    return (RelatedLocation(hf.span, text),)


def _json_name(dist: Distributed) -> str:
    return os.path.basename(dist.config_path) if dist.config_path else "the DeepSpeed config"


def _json_values(dist: Distributed) -> dict[str, Setting]:
    """The DeepSpeed JSON's values the integration checks, by JSON key: the Distributed fields,
    and ``fp16.enabled``/``bf16.enabled`` from ``mixed_precision`` when it was read from the JSON
    (the enabled block; a block the JSON leaves ``"auto"`` or off says nothing here)."""
    out = {key: getattr(dist, key) for key in AUTO_KEYS}
    mp = dist.mixed_precision
    if mp.known and mp.value in ("fp16", "bf16") and _from_json(dist, mp):
        out[f"{mp.value}.enabled"] = Setting(True, mp.origin, mp.span, mp.key_span, mp.source)
    for block in ("fp16", "bf16"):
        s = dist.extra.get(f"{block}_enabled")  # when the distribution keeps each block's own value
        if s is not None and s.known and isinstance(s.value, bool):
            out[f"{block}.enabled"] = s
    return out


def _inline_values(inline: Setting) -> dict[str, Setting]:
    """The same keys from a literal ``deepspeed={...}`` dict; every value at the dict's span."""
    cfg = inline.value
    span = inline.span or inline.key_span

    def lit(v: Any) -> Setting:
        return Setting(v, Origin.LITERAL, span, inline.key_span, "deepspeed={...}")

    out = {key: lit(cfg[key]) for key in AUTO_KEYS if key in cfg}
    for block in ("fp16", "bf16"):
        b = cfg.get(block)
        if isinstance(b, dict) and "enabled" in b:
            out[f"{block}.enabled"] = lit(b["enabled"])
    return out


def _from_json(dist: Distributed, s: Setting) -> bool:
    """Whether the value was read from the DeepSpeed JSON (not an accelerate config)."""
    span = s.span or s.key_span
    if span is None or not dist.config_path:
        return dist.config_path is not None and dist.accelerate_config is None
    return os.path.abspath(span.path) == os.path.abspath(dist.config_path)


class DeepSpeedConfigMismatch(Rule):
    """A DeepSpeed JSON that the HF integration or DeepSpeed refuses (module docstring)."""

    code = "LL025"
    name = "deepspeed-config-mismatch"
    severity = Severity.ERROR
    fix_changes_memory = False  # the run does not start as written; the fix changes no figure
    depends_on_settings = False  # fires on the files of the run alone (LL900 may report its suppressions)
    summary = "DeepSpeed JSON values that disagree with the training arguments, or \"auto\" DeepSpeed cannot read"

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.framework == "axolotl":
            return
        dist = setup.distributed
        hf_trainer = setup.training is not None and setup.framework in HF_TRAINER_FRAMEWORKS
        if dist is not None and dist.config_path is not None:
            if hf_trainer:
                yield from self._mismatches(setup, _json_values(dist), _json_name(dist), context)
            elif self._plain_deepspeed(setup):
                yield from self._autos(setup, dist, context)
            return
        inline = setup.get("training.deepspeed")
        if hf_trainer and inline.known and isinstance(inline.value, dict):
            # TrainingArguments(deepspeed={...}): the same check on a literal dict
            yield from self._mismatches(setup, _inline_values(inline), "the deepspeed={...} dict", context)

    # ---- (a) -----------------------------------------------------------------------------
    def _mismatches(self, setup: TrainingSetup, ds: dict[str, Setting], name: str,
                    context: "Context") -> Iterable[Finding]:
        auto_batch = _hf(setup, "auto_find_batch_size")
        checked_batch = not (auto_batch is not None and auto_batch.value is True)
        micro = _hf(setup, "per_device_train_batch_size")
        ga = _hf(setup, "gradient_accumulation_steps")
        pairs: list[tuple[str, Setting, Any, str, list[_Hf]]] = []
        if checked_batch and micro is not None and _number(micro.setting) is not None:
            pairs.append(("train_micro_batch_size_per_gpu", ds.get("train_micro_batch_size_per_gpu", UNKNOWN),
                          micro.value, "per_device_train_batch_size", [micro]))
        if ga is not None and _number(ga.setting) is not None:
            pairs.append(("gradient_accumulation_steps", ds.get("gradient_accumulation_steps", UNKNOWN), ga.value,
                          "gradient_accumulation_steps", [ga]))
        clip = _hf(setup, "max_grad_norm")
        if clip is not None and _number(clip.setting) is not None:
            pairs.append(("gradient_clipping", ds.get("gradient_clipping", UNKNOWN), clip.value, "max_grad_norm",
                          [clip]))
        processes = facts.run_processes(setup)
        if checked_batch and micro is not None and ga is not None and processes is not None \
                and _number(micro.setting) is not None and _number(ga.setting) is not None:
            total = processes.value * micro.value * ga.value
            pairs.append(("train_batch_size", ds.get("train_batch_size", UNKNOWN), total,
                          f"train_batch_size (calculated: {processes.value} processes × {micro.value} × {ga.value})",
                          [micro, ga]))
        for block in ("fp16", "bf16"):
            enabled = ds.get(f"{block}.enabled", UNKNOWN)
            flag, full = _hf(setup, block), _hf(setup, f"{block}_full_eval")
            if _flag(enabled) is not None and flag is not None and _flag(flag.setting) is not None \
                    and full is not None:
                pairs.append((f"{block}.enabled", enabled, bool(flag.value) or bool(full.value),
                              f"{block}|{block}_full_eval", [flag]))
        for key, ds, hf_value, hf_name, hfs in pairs:
            if not _ds_side(ds):
                continue
            ds_value = ds.value
            if isinstance(ds_value, bool) != isinstance(hf_value, bool):
                continue  # an enabled flag against a number, or the other way: not this check
            if not isinstance(ds_value, (int, float)) or ds_value == hf_value:
                continue
            span = ds.span or ds.key_span or setup.get("training.deepspeed").span or setup.anchor
            related: tuple[RelatedLocation, ...] = ()
            for hf in hfs:
                related += _hf_related(hf)
            related = facts.launch_related(setup) + related
            shown_ds = "true" if ds_value is True else "false" if ds_value is False else ds_value
            message = (f"{name} sets {key}={shown_ds} but the training arguments give {hf_name}={hf_value}: "
                       "the HF DeepSpeed integration refuses the mismatch before the first step (\"Please correct "
                       "the following DeepSpeed config values that mismatch TrainingArguments values: - ds "
                       f"{key}={ds_value} vs hf {hf_name.split(' ')[0]}={hf_value}\"; transformers "
                       "integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_finalize).")
            if key.endswith(".enabled"):
                block = key.split(".")[0]
                fix = (f"Set \"enabled\": \"auto\" in the {block} block of {name} so the integration follows the "
                       f"training arguments, or pass {block}={'True' if ds_value else 'False'} to them.")
            else:
                arg = hfs[0].name if len(hfs) == 1 else "per_device_train_batch_size/gradient_accumulation_steps"
                fix = (f"Set \"{key}\": \"auto\" in {name} so the integration fills it from the training "
                       f"arguments, or make {arg} agree with {ds_value!r}.")
            yield self.finding(context, setup, span, message, fix=fix, related=related)

    # ---- (b) -----------------------------------------------------------------------------
    @staticmethod
    def _plain_deepspeed(setup: TrainingSetup) -> bool:
        """``deepspeed.initialize(...)`` in a script with no HF Trainer (no training arguments,
        or a hand-written loop)."""
        calls = any(e.kind == "deepspeed" and e.detail == "deepspeed.initialize" for e in setup.launch)
        return calls and (setup.training is None or setup.framework == "torch")

    def _autos(self, setup: TrainingSetup, dist: Distributed, context: "Context") -> Iterable[Finding]:
        name = _json_name(dist)
        autos = [(key, getattr(dist, key)) for key in AUTO_KEYS
                 if getattr(dist, key).is_("auto") and _from_json(dist, getattr(dist, key))]
        if not autos:
            return
        keys = ", ".join(f'"{k}": "auto"' for k, _ in autos)
        first = autos[0][1]
        span = first.span or first.key_span or dist.span
        related = tuple(RelatedLocation(s.span or s.key_span, f'"{k}": "auto" ({facts.where(s.span or s.key_span)})')
                        for k, s in autos[1:] if (s.span or s.key_span) is not None)
        call = next((e for e in setup.launch if e.kind == "deepspeed" and e.detail == "deepspeed.initialize"), None)
        if call is not None and call.span is not None:
            related = (RelatedLocation(call.span, f"deepspeed.initialize at {facts.where(call.span)}"),) + related
        related = facts.launch_related(setup) + related
        message = (f"{name} has {keys}, and the script hands it to deepspeed.initialize without an HF Trainer: "
                   "only transformers' and accelerate's integrations fill \"auto\"; DeepSpeed reads the string as it "
                   "is and its batch check fails at initialize (\"'>' not supported between instances of 'str' and "
                   "'int'\", deepspeed/runtime/config.py DeepSpeedConfig._batch_assertion; Roblox/FAI-RL PR #70).")
        fix = (f"Write numbers in {name} for {', '.join(k for k, _ in autos)} "
               "(train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps × world size), "
               "or train through the HF Trainer, which fills \"auto\".")
        yield self.finding(context, setup, span, message, fix=fix, related=related)
