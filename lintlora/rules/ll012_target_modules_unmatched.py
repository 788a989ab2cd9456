"""LL012 target-modules-unmatched (page: ``rules/LL012.md``).

Flags ``target_modules`` entries that name no module of the model being adapted, matched by
peft's own rules (:func:`lintlora.estimate.params.target_matches`: a string is a regular
expression that must ``re.fullmatch`` a module's full path, a list entry must equal the path or
end it after a dot; peft ``check_target_module_exists`` in ``src/peft/tuners/tuners_utils.py``
at 0.20.1.dev0, 5d602fdb). Read from ``LoraConfig`` in Python
(plain Trainer, TRL's ``peft_config=``, notebooks), axolotl ``lora_target_modules`` and
LLaMA-Factory ``lora_target``.

- Every entry unmatched: **error**. peft adapts nothing and raises when the model is wrapped
  (``get_peft_model``, a TRL trainer given ``peft_config``, axolotl's and LLaMA-Factory's
  adapter setup): ``Target modules {...} not found in the base model. Please check the target
  modules and try again.`` (``BaseTuner.inject_adapter``, tuners_utils.py lines 1031-1040 at
  0.20.1.dev0; a ``ValueError``, ``NoMatchingPeftModuleError``). Reported case:
  hiyouga/LlamaFactory#2401 (``q_proj``/``v_proj`` on Qwen-1, whose attention is ``c_attn``).
- Some unmatched: **warning**. peft adapts the rest and says nothing, so the run trains a
  fraction of what the list meant (microsoft/PhiCookBook#185: Llama names on Phi-3, which fuses
  ``qkv_proj`` and ``gate_up_proj``, adapt only ``o_proj`` and ``down_proj``; huggingface/peft
  PR #1375: "the error is silent, leading to poor LoRA fine-tuning performance"). The message
  gives the trainable count as written and with the names the list evidently meant: each
  unmatched name is mapped by its role in the catalogued architectures (query/key/value,
  attention output, MLP input, MLP output) to this model's modules of that role (Phi-3
  ``qkv_proj``/``gate_up_proj``, Qwen-1 ``c_attn``, Baichuan ``W_pack``, ChatGLM/Falcon/BLOOM/
  GPT-NeoX ``query_key_value``).

Judged only when lintlora knows the model's module names: a catalog architecture (or a local
``config.json`` of a catalogued ``model_type``), not a rough ``--params`` stand-in and not a
vision-language model whose vision tower the catalog does not describe (Qwen2-VL, Gemma-3 4B+).
An entry is called unmatched only when its last name is a module name of some catalogued
architecture (a Llama name on Phi-3); other names (a norm, a container, a typo lintlora cannot
tell from a module it does not model) are never reported by themselves. Silent for
``"all-linear"``, a regular expression that matches a module, peft's default (``None``),
values lintlora could not resolve (bug-reports-2 BN11, BN12), ``exclude_modules``,
``layers_to_transform``/``layers_pattern`` and ``target_parameters`` (matching those change),
for torchtune/litgpt, whose own LoRA validates its switches, and for unsloth and its
``unsloth/...`` uploads (see :data:`_PEFT_FRAMEWORKS`). A list that is a default
chosen at launch (:func:`lintlora.facts.set_at_launch`) is reported at info.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

from lintlora import facts
from lintlora.findings import Finding, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import count, join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context
    from lintlora.estimate.architecture import Architecture

__all__ = ["TargetModulesUnmatched", "unmatched_entries", "names_known", "Unmatched"]

_PEFT_FRAMEWORKS = frozenset({"transformers", "trl", "torch", "axolotl", "llama-factory"})
"""Stacks that hand ``target_modules`` to peft's ``LoraConfig`` as written (axolotl
``loaders/adapter.py``, LLaMA-Factory ``model/adapter.py``). Not unsloth: its uploads and
loaders rewrite some architectures into Llama's layout (its Phi-3/Phi-4 models take the seven
Llama names, unslothai/unsloth PR #397), so the catalog's names are not the model's."""

_PARTIAL_MODEL_TYPES = frozenset({
    "qwen2_vl", "qwen2_5_vl", "gemma3", "mllama", "llava", "llava_next", "idefics2", "idefics3",
    "paligemma", "qwen2_audio",
})
"""``model_type``s whose module tree holds more than the language model the catalog describes
(a vision or audio tower and a projector with their own linear layers): a name the catalog
does not list may still match there."""

_CHANGES_MATCHING = ("exclude_modules", "layers_to_transform", "layers_pattern", "target_parameters")
"""``LoraConfig`` options that change what matches (peft ``check_target_module_exists``,
``inject_adapter``); with one set, the rule stays silent."""

_ALL_LINEAR = ("all-linear", "all_linear")
_MAX_ENTRIES = 64
"""Longest list judged (a longer one is not a hand-written target list)."""


@lru_cache(maxsize=1)
def _catalog_names() -> tuple[frozenset[str], dict[str, frozenset[str]], frozenset[str]]:
    """(every module leaf name of the catalogued architectures, leaf name -> the roles it has
    there, the catalogued ``model_type``s)."""
    from lintlora.estimate.architecture import catalog

    names: set[str] = set()
    roles: dict[str, set[str]] = {}
    types: set[str] = set()
    for arch in catalog():
        types.add(arch.model_type)
        for shape in arch.block_linears():
            names.add(shape.name)
            roles.setdefault(shape.name, set()).add(shape.role)
        for path in (arch.embedding_name, arch.lm_head_name, *arch.extra_embedding_names):
            names.add(path.rsplit(".", 1)[-1])
    return frozenset(names), {k: frozenset(v) for k, v in roles.items()}, frozenset(types)


def names_known(arch: "Architecture | None") -> bool:
    """Whether lintlora knows ``arch``'s module names: a catalogued ``model_type`` (the catalog
    record, or a local ``config.json`` that takes its names from one), not a rough stand-in,
    and not a multimodal model whose other towers the catalog leaves out."""
    if arch is None or getattr(arch, "rough", False):
        return False
    if arch.model_type in _PARTIAL_MODEL_TYPES:
        return False
    return arch.model_type in _catalog_names()[2]


class Unmatched:
    """What of a ``target_modules`` value matches nothing on an architecture.

    Attributes:
        entries: the list as judged (strings), or ``(pattern,)`` for a regular expression.
        pattern: the regular expression, when the value is one.
        unmatched: entries (catalogued module names) that match no module.
        unknown: unmatched entries whose name lintlora does not know (never reported alone).
        matched: entries that match a module.
        meant: this model's modules the unmatched names evidently meant, in block order.
    """

    def __init__(self, entries: tuple[str, ...], pattern: str | None, unmatched: tuple[str, ...],
                 unknown: tuple[str, ...], matched: tuple[str, ...], meant: tuple[str, ...]) -> None:
        self.entries, self.pattern = entries, pattern
        self.unmatched, self.unknown, self.matched, self.meant = unmatched, unknown, matched, meant

    @property
    def none_match(self) -> bool:
        """Every entry names no module (peft raises when it wraps the model)."""
        return bool(self.unmatched) and not self.matched and not self.unknown


def _leaf(entry: str) -> str:
    return entry.rsplit(".", 1)[-1]


def unmatched_entries(value: Any, arch: "Architecture") -> Unmatched | None:
    """Judge a ``target_modules`` value against ``arch`` with peft's matching; ``None`` when
    there is nothing to report (everything matches, the value is not judged: ``None``,
    ``"all-linear"``, an invalid or matching regular expression, a list of non-strings)."""
    from lintlora.estimate.params import count_trainable

    if isinstance(value, str):
        if value.strip().lower() in _ALL_LINEAR:
            return None
        try:
            re.compile(value)
            # refuses a pattern whose matching could take unbounded time (UnsafePatternError,
            # a re.error: lintlora/target_regex.py): the pattern comes from the linted file
            c = count_trainable(arch, 8, value, None)
        except (re.error, ValueError, TypeError, RecursionError):
            return None  # peft raises on an invalid pattern itself
        if not c.unmatched:
            return None
        return Unmatched((value,), value, (value,), (), (), ())
    if not isinstance(value, (list, tuple)) or not value or len(value) > _MAX_ENTRIES:
        return None
    if not all(isinstance(e, str) for e in value):
        return None
    entries = tuple(dict.fromkeys(e for e in value if e and e.lower() not in _ALL_LINEAR))
    if not entries:
        return None
    # the common case without walking every module: plain names that are all this model's
    # nn.Parameter tensors (gpt-oss / Llama-4 fused experts) are no module target_modules reaches
    leaves = {s.name for s in arch.block_linears() if not s.parameter} | {
        p.rsplit(".", 1)[-1] for p in (arch.embedding_name, arch.lm_head_name, *arch.extra_embedding_names)}
    if all("." not in e and e in leaves for e in entries):
        return None
    try:
        c = count_trainable(arch, 8, entries, None)
    except (ValueError, TypeError):
        return None
    missing = set(c.unmatched)
    known, roles, _ = _catalog_names()
    unmatched = tuple(e for e in entries if e in missing and _leaf(e) in known)
    if not unmatched:
        return None
    unknown = tuple(e for e in entries if e in missing and _leaf(e) not in known)
    matched = tuple(e for e in entries if e not in missing)
    wanted_roles = set().union(*(roles.get(_leaf(e), frozenset()) for e in unmatched))
    have = {_leaf(e) for e in matched}
    meant = tuple(dict.fromkeys(
        s.name for s in arch.block_linears()
        if s.role in wanted_roles and s.name not in have and s.role != "router" and not s.parameter))
    return Unmatched(entries, None, unmatched, unknown, matched, meant)


def _r(setup: TrainingSetup) -> int | None:
    r = setup.get("lora.r")
    return r.value if r.known and isinstance(r.value, int) and not isinstance(r.value, bool) else None


def _trainable(arch: Any, r: int, targets: Any, saves: Any) -> int | None:
    from lintlora.estimate.params import count_trainable

    try:
        return count_trainable(arch, r, targets, saves).trainable
    except (ValueError, re.error, TypeError):
        return None


_SHOWN_CHARS = 80
"""Longest name a message repeats (the names come from the linted file)."""


def _shown(name: str) -> str:
    return name if len(name) <= _SHOWN_CHARS else name[:_SHOWN_CHARS] + "..."


def _words(names: Iterable[str]) -> str:
    return join_words([f"`{_shown(n)}`" for n in names])


FIX_NAMES = "use the architecture's module names"
"""The fix's title: the list written in the LoraConfig call replaced by the names the model has
that the list evidently means (``qkv_proj`` for Phi-3's ``q_proj``/``k_proj``/``v_proj``).
Unsafe: it changes what trains."""


class TargetModulesUnmatched(Rule):
    """``target_modules`` naming modules the model does not have (see the module docstring)."""

    code = "LL012"
    fixes = {FIX_NAMES: FixSafety.UNSAFE}
    name = "target-modules-unmatched"
    severity = Severity.WARNING
    summary = "target_modules entries that match no module of the model (peft ignores them, or raises)"

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        lora = setup.lora
        if not setup.is_training or lora is None or setup.framework not in _PEFT_FRAMEWORKS:
            return
        targets: Setting = lora.target_modules
        if not targets.known or targets.value is None:
            return
        name = setup.get("model.name_or_path")
        if name.known and isinstance(name.value, str) and name.value.strip().lower().startswith("unsloth/"):
            return  # an unsloth upload: possibly rewritten into Llama's layout (see _PEFT_FRAMEWORKS)
        for key in _CHANGES_MATCHING:
            s = lora.extra.get(key)
            if isinstance(s, Setting) and (not s.known or s.value not in (None, (), [], "")):
                return
        arch = context.architecture(setup)
        if not names_known(arch):
            return
        assert arch is not None
        result = unmatched_entries(targets.value, arch)
        if result is None:
            return
        yield self._finding(context, setup, arch, targets, result)

    def _finding(self, context: "Context", setup: TrainingSetup, arch: Any, targets: Setting,
                 u: Unmatched) -> Finding:
        lora = setup.lora
        assert lora is not None
        config = setup.kind in ("yaml", "json")
        key = targets.expr if config and targets.expr else "target_modules"
        saves = lora.modules_to_save.value if lora.modules_to_save.known else None
        r = _r(setup)
        rank = r or 8
        parts: list[str] = []
        fixed_targets: Any = None
        if u.pattern is not None:
            severity = Severity.ERROR
            parts.append(f"{key}={_shown(u.pattern)!r} matches no module of {arch.name} (a string is a regular "
                         "expression peft must match against a module's full name, such as "
                         f"`{arch.module_path(0, arch.block_linears()[0])}`): peft raises \"Target modules "
                         f"{_shown(u.pattern)} not found in the base model\" when it wraps the model.")
            fixed_targets = "all-linear"
            fix = ('Name the modules in a list (peft then matches each name as the end of a module path), '
                   f'e.g. {list(dict.fromkeys(s.name for s in arch.block_linears() if s.role != "router" and not s.parameter))}, '
                   'or use "all-linear".')
        else:
            have = join_words([f"`{n}`" for n in dict.fromkeys(
                s.name for s in arch.block_linears() if s.role != "router" and not s.parameter)])
            missing = _words(u.unmatched)
            order = {name: i for i, name in enumerate(s.name for s in arch.block_linears())}
            kept = sorted(dict.fromkeys(u.matched + u.meant), key=lambda e: order.get(_leaf(e), len(order)))
            fixed_targets = tuple(kept) + tuple(e for e in u.unknown if e not in kept) or None
            if u.none_match:
                severity = Severity.ERROR
                listed = "{" + ", ".join(repr(_shown(e)) for e in u.entries) + "}"
                parts.append(f"{key} lists {missing}, none of which {arch.name} has (its linear layers are "
                             f"{have}): peft adapts nothing and raises \"Target modules {listed} not found in "
                             "the base model\" when it wraps the model.")
            else:
                severity = Severity.WARNING
                parts.append(f"{key} lists {missing}, which {arch.name} does not have (its linear layers are "
                             f"{have}): peft skips them without a word")
                if u.matched:
                    parts[-1] += f" and adapts only {_words(u.matched)}."
                else:
                    parts[-1] += (f"; whether {_words(u.unknown)} match depends on modules lintlora does "
                                  "not model.")
            if u.meant:
                parts.append(f"For {arch.name} the list evidently means {_words(u.meant)}.")
            as_written = _trainable(arch, rank, u.entries, saves)
            meant_count = _trainable(arch, rank, fixed_targets, saves) if fixed_targets and u.meant else None
            if as_written is not None and not u.none_match:
                text = f"That trains {count(as_written)} parameters"
                if meant_count is not None and meant_count != as_written:
                    text += f" instead of {count(meant_count)} with {[_shown(e) for e in fixed_targets]}"
                text += "."
                if r is None:
                    text += " (LoRA rank not resolved: counted with r=8, peft's default.)"
                parts.append(text)
            if fixed_targets:
                names = [_shown(e) for e in fixed_targets]
                shown = ", ".join(names) if config and setup.framework == "llama-factory" else names
                fix = f"Use the names {arch.name} has: {key}={shown}" + (
                    ' (or "all-linear" for every linear layer but the output layer).'
                    if not config else ".")
            else:
                fix = f'Use the names {arch.name} has ({have}), or "all-linear".'
        fixed = setup.set("lora.target_modules", fixed_targets, "LL012 fix")
        message = " ".join(parts)
        hint = facts.launch_hint(targets)
        if hint is not None:
            severity = Severity.INFO
            message += f" The list is a default chosen at launch: {hint}."
        span = targets.span or targets.key_span or lora.span
        autofix = None
        if fixed_targets and u.meant and not config and lora is not None:
            autofix = ops.make_fix(FIX_NAMES, FixSafety.UNSAFE, [ops.replace_module_list(
                targets, lora.span, setup.path, [_shown(e) for e in fixed_targets])])
        elif fixed_targets and u.meant and config and setup.framework == "llama-factory" and targets.expr:
            # LLaMA-Factory's `lora_target: a,b` is one comma-separated scalar
            autofix = ops.make_fix(FIX_NAMES, FixSafety.UNSAFE, [ops.yaml_set(
                setup, targets.expr, ",".join(_shown(e) for e in fixed_targets), targets)])
        elif fixed_targets and u.meant and config and setup.framework == "axolotl" and targets.expr \
                and targets.origin is Origin.LITERAL and isinstance(targets.value, (list, tuple)):
            # axolotl's `lora_target_modules:` list, rewritten in its own layout (fixing._yaml_sequence)
            text = ops.module_list_text([_shown(e) for e in fixed_targets])
            autofix = ops.make_fix(FIX_NAMES, FixSafety.UNSAFE, [
                ops.yaml_set(setup, targets.expr, text, targets) if text else None])
        return self.finding(context, setup, span, message, fix=fix, fixed_setup=fixed, severity=severity,
                            autofix=autofix)
