"""LL003 broad-target-modules (page: ``rules/LL003.md``).

Flags ``target_modules`` or ``modules_to_save`` that train far more than adapters need: the
embedding or the output layer (``embed_tokens``, ``lm_head``, ``wte``, ``wpe``, ``embed_out``,
``word_embeddings``, torchtune's ``output``...), or a regular expression matching every module
(``".*"``). peft's ``"all-linear"`` excludes the output layer and is a legitimate choice: it is
never flagged by itself.

What each spelling costs (peft 0.13-0.17, unchanged since):

- ``modules_to_save``: peft wraps the module in a ``ModulesToSaveWrapper`` holding a full
  trainable copy (``peft/utils/other.py``): the copy, its gradient and its optimizer state, and
  the whole matrix in every saved adapter (QwenLM/Qwen#797: "28% trainable whatever the rank").
- ``target_modules`` with plain peft: LoRA on the embedding (``lora.Embedding``) and on the
  output layer; peft then saves both layers in full with every adapter checkpoint
  (``save_embedding_layers="auto"``, ``peft/utils/save_and_load.py``), and the output layer's
  adapter computes one more vocabulary-sized output per token (unslothai/unsloth#918: a 7.3 GB
  adapter instead of about 0.5 GB).
- ``target_modules`` under unsloth: unsloth moves them to ``modules_to_save`` and trains them in
  full (unslothai/unsloth#1093).

Silent when the setup adds tokens to the vocabulary (:func:`lintlora.facts.added_tokens`:
``resize_token_embeddings``/``add_tokens``/``add_special_tokens`` calls, axolotl ``tokens`` /
``special_tokens`` / ``added_tokens_overrides``, LLaMA-Factory ``add_tokens`` /
``add_special_tokens`` / ``new_special_tokens`` / ``resize_vocab``): the new rows of the
embedding and output layers must then be trained, which is what these lists do (axolotl refuses
changed special tokens with an adapter unless ``lora_modules_to_save`` lists both layers). A
pattern matching every module is still reported. A list that is a default chosen at launch
(:func:`lintlora.facts.set_at_launch`) is reported at info.

Counts come from :func:`lintlora.estimate.params.count_trainable` on the model's architecture,
the memory cost from the estimator run with and without the broad entries. With the model
unknown the rule still reports, without a count, and says so.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from lintlora import facts
from lintlora.findings import Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules._text import count, gib, join_words
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin
from lintlora.target_regex import compile_target_pattern
from lintlora.training_setup import Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["BroadTargetModules", "EMBEDDING_OUTPUT_NAMES", "Broad", "broad_entries"]

EMBEDDING_OUTPUT_NAMES = frozenset({
    "embed_tokens", "lm_head", "wte", "wpe", "embed_out", "embed_in", "word_embeddings",
    "tok_embeddings", "output",
})
"""Leaf names of input-embedding and output layers across common architectures (HF Llama /
Mistral / Qwen / Gemma ``embed_tokens``/``lm_head``; GPT-2 ``wte``/``wpe``; GPT-NeoX
``embed_in``/``embed_out``; BLOOM/Falcon ``word_embeddings``; torchtune and Meta's original
Llama ``tok_embeddings``/``output``). Used when the architecture is unknown; with a known
architecture its own embedding and head paths are used instead."""

_EMBEDDING_PROBES = ("model.embed_tokens", "transformer.wte", "transformer.wpe", "gpt_neox.embed_in",
                     "transformer.word_embeddings", "tok_embeddings")
_OUTPUT_PROBES = ("lm_head", "embed_out", "output")
_EMBEDDING_LEAVES = frozenset({"embed_tokens", "wte", "wpe", "embed_in", "word_embeddings", "tok_embeddings"})
_BLOCK_PROBES = ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj", "model.norm",
                 "model.layers.0.input_layernorm", "model.layers.0")
_PEFT_EMBEDDING_LAYER_NAMES = ("embed_tokens", "lm_head")
"""peft ``utils/constants.py`` ``EMBEDDING_LAYER_NAMES`` (peft @00073fe8): targeting one of these
makes ``save_pretrained`` store the full embedding layers (``save_embedding_layers="auto"``)."""


def _module_paths(text: str) -> list[str]:
    """Module paths named by a catalog field: the first word, plus dotted paths in a note
    (``"transformer.wte (+ transformer.wpe positions)"`` -> ``transformer.wte``, ``transformer.wpe``)."""
    text = (text or "").strip()
    if not text:
        return []
    first = text.split()[0]
    rest = re.findall(r"[A-Za-z_]\w*(?:\.\w+)+", text[len(first):])
    return [first] + [p for p in rest if p != first]


def _layer_paths(arch: Any, framework: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(embedding paths, output-layer paths) for this architecture, or generic probes."""
    if arch is None:
        return _EMBEDDING_PROBES, _OUTPUT_PROBES
    emb, out = _module_paths(arch.embedding_name), _module_paths(arch.lm_head_name)
    emb += [p for p in getattr(arch, "extra_embedding_names", ()) if p not in emb]
    if framework == "torchtune":
        emb.append("tok_embeddings")
        out.append("output")
    return tuple(emb), tuple(out)


def _entry_hits(entry: str, paths: tuple[str, ...], leaves: frozenset[str] | None, save: bool) -> bool:
    """Whether a list entry names one of ``paths`` under peft's matching (``target_modules``: equal
    or ``"." + entry`` suffix; ``modules_to_save``: plain suffix, peft ``_set_trainable``), or,
    with ``leaves`` given (architecture unknown), ends in one of those leaf names."""
    if save:
        matched = any(p.endswith(entry) for p in paths)
    else:
        from lintlora.estimate.params import target_matches

        matched = any(target_matches(p, (entry,)) for p in paths)
    if leaves is not None and entry.rsplit(".", 1)[-1] in leaves:
        matched = True
    return matched


@dataclass(frozen=True)
class Broad:
    """What a ``target_modules``/``modules_to_save`` value reaches.

    Attributes:
        entries: list entries naming an embedding or output layer.
        pattern: the string itself, for a regular expression reaching such a layer.
        embedding, output: whether the input embedding / the output layer is reached.
        peft_saves_embeddings: peft will store the full embedding layers with every checkpoint
            (an entry, or a matched path, is one of peft's ``EMBEDDING_LAYER_NAMES``).
    """

    entries: tuple[str, ...] = ()
    pattern: str | None = None
    embedding: bool = False
    output: bool = False
    peft_saves_embeddings: bool = False

    def __bool__(self) -> bool:
        return bool(self.entries or self.pattern)


def broad_entries(value: Any, arch: Any, framework: str, *, save: bool = False) -> Broad:
    """What in a ``target_modules``/``modules_to_save`` value reaches an embedding/output layer.

    A string ``target_modules`` is a regular expression peft ``re.fullmatch``es against full
    module paths; ``"all-linear"`` never counts; an invalid expression counts as nothing (peft
    raises on it), and so does one whose matching could take unbounded time
    (:func:`lintlora.target_regex.compile_target_pattern`). A string ``modules_to_save`` is
    read as one entry.
    """
    emb_paths, out_paths = _layer_paths(arch, framework)
    if value is None:
        return Broad()
    if isinstance(value, str) and not save:
        if value.lower() in ("all-linear", "all_linear"):
            return Broad()
        try:  # refuses a pattern whose matching could take unbounded time (hostile input)
            regex = compile_target_pattern(value)
        except re.error:
            return Broad()
        emb = any(regex.fullmatch(p) for p in emb_paths)
        out = any(regex.fullmatch(p) for p in out_paths)
        if not (emb or out):
            return Broad()
        saves = any(regex.fullmatch(p) and p.rsplit(".", 1)[-1] in _PEFT_EMBEDDING_LAYER_NAMES
                    for p in emb_paths + out_paths)
        return Broad((), value, emb, out, saves)
    entries = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    unknown = arch is None
    hits, emb, out = [], False, False
    for e in entries:
        if not isinstance(e, str) or not e:
            continue
        e_emb = _entry_hits(e, emb_paths, _EMBEDDING_LEAVES if unknown else None, save)
        e_out = _entry_hits(e, out_paths, frozenset(_OUTPUT_PROBES) if unknown else None, save)
        if e_emb or e_out:
            hits.append(e)
            emb, out = emb or e_emb, out or e_out
    saves = any(e in _PEFT_EMBEDDING_LAYER_NAMES for e in hits)
    return Broad(tuple(hits), None, emb, out, saves)


def _matches_everything(pattern: str) -> bool:
    regex = compile_target_pattern(pattern)
    return all(regex.fullmatch(p) for p in ("model.embed_tokens", "lm_head") + _BLOCK_PROBES)


def _r(setup: TrainingSetup) -> int | None:
    r = setup.get("lora.r")
    return r.value if r.known and isinstance(r.value, int) and not isinstance(r.value, bool) else None


def _counts(arch: Any, r: int, targets: Any, saves: Any, use_dora: bool) -> Any:
    """``count_trainable`` or ``None`` when it cannot count (no peft default, bad pattern)."""
    from lintlora.estimate.params import count_trainable

    try:
        return count_trainable(arch, r, targets, saves, use_dora=use_dora)
    except (ValueError, re.error, TypeError):
        return None


def _as_list(value: Any) -> list:
    """A module list as a list: a tuple/list as is, one string as a list of one, else empty."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] if isinstance(value, str) else []


def _layer_words(entries: Iterable[str]) -> str:
    return join_words([f"`{e}`" for e in entries])


_PEFT_FRAMEWORKS = frozenset({"transformers", "trl", "torch", "axolotl", "llama-factory"})
"""Stacks whose LoRA is peft's (axolotl and LLaMA-Factory build peft ``LoraConfig``s)."""

_OWN_OUTPUT_SWITCH = {
    "torchtune": ("`apply_lora_to_output: True`", "`apply_lora_to_output: False`",
                  "apply_lora_to_output"),
    "litgpt": ("`lora_head: true`", "`lora_head: false`", "lora_head"),
}
"""Configs whose own LoRA implementation adapts the output layer through a switch (torchtune
``lora_*`` builders, litgpt ``lora.py``): the only way their LoRA reaches that layer. Each
entry: the switch on and off, as the message and fix write them, and its key in
``Lora.extra`` (where the dialect keeps its Setting, with the switch's span)."""


def _layers(b: Broad) -> str:
    if b.embedding and b.output:
        return "the embedding and output layers"
    return "the embedding layer" if b.embedding else "the output layer"


FIX_TARGETS = "narrow target_modules"
"""The target-list fix's title: the list written in the LoraConfig call replaced by the list
without the embedding/output layers (a pattern by the layers it means, or ``"all-linear"``).
Unsafe: it changes what trains."""
FIX_SAVES = "drop the layers from modules_to_save"
"""The modules_to_save fix's title: the list written in the call without the embedding/output
layers (``None`` when nothing is left). Unsafe: it changes what trains."""


def _list_fix(setup: TrainingSetup, setting: Setting, value: Any, title: str) -> Fix | None:
    """The list written in the LoraConfig call replaced by ``value``; in a config, the key's
    list (axolotl ``lora_target_modules``/``lora_modules_to_save``) or LLaMA-Factory's
    comma-separated ``lora_target``/``additional_target`` string, by a list of names only
    (a pattern or nothing left is not written into a config)."""
    if setup.kind in ("yaml", "json"):
        if not isinstance(value, (list, tuple)) or not value or not setting.expr \
                or "/" in setting.expr or setting.origin is not Origin.LITERAL:
            return None
        if setup.framework == "llama-factory":
            text = ",".join(str(v) for v in value)
        else:
            text = ops.module_list_text(value)
        if text is None:
            return None
        return ops.make_fix(title, FixSafety.UNSAFE, [ops.yaml_set(setup, setting.expr, text, setting)])
    if setup.kind not in ("python", "notebook") or setup.lora is None:
        return None
    op = ops.replace_module_list(setting, setup.lora.span, setup.path, value)
    return ops.make_fix(title, FixSafety.UNSAFE, [op])


FIX_SWITCH = "turn off the output layer's adapter"
"""The own-switch fix's title (torchtune ``apply_lora_to_output``, litgpt ``lora_head``): the
switch written true set false. Unsafe: it changes what trains."""


def _switch_fix(setup: TrainingSetup, own_switch: tuple[str, str, str]) -> Fix | None:
    """``yaml_set`` of the dialect's output-layer switch to off, in the file's own spelling of
    a false value (torchtune's configs write Python's ``False``, litgpt's ``false``)."""
    switch = setup.lora.extra.get(own_switch[2]) if setup.lora is not None else None
    if not isinstance(switch, Setting) or not switch.expr or switch.origin is not Origin.LITERAL:
        return None
    off = "False" if setup.framework == "torchtune" else "false"
    return ops.make_fix(FIX_SWITCH, FixSafety.UNSAFE, [ops.yaml_set(setup, switch.expr, off, switch)])


class BroadTargetModules(Rule):
    """Adapters (or full copies) on the embedding/output layers (see the module docstring)."""

    code = "LL003"
    fixes = {FIX_TARGETS: FixSafety.UNSAFE, FIX_SAVES: FixSafety.UNSAFE, FIX_SWITCH: FixSafety.UNSAFE}
    name = "broad-target-modules"
    severity = Severity.WARNING
    summary = "target_modules or modules_to_save that train the embedding or output layer"

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training or setup.lora is None:
            return
        # tokens added to the vocabulary: the embedding and output layers gain rows that must
        # be trained, the case this rule's own fix says to keep (axolotl even requires it)
        adds = facts.added_tokens(setup)
        arch = context.architecture(setup)
        lora = setup.lora
        dora = lora.use_dora.known and lora.use_dora.value is True
        targets: Setting = lora.target_modules
        saves: Setting = lora.modules_to_save
        saves_value = saves.value if saves.known else None
        targets_value = targets.value if targets.known else None

        if targets.known:
            broad = broad_entries(targets.value, arch, setup.framework)
            if broad and not (adds is not None and not (
                    broad.pattern is not None and _matches_everything(broad.pattern))):
                yield self._launch(self._targets_finding(context, setup, arch, broad, saves_value, dora),
                                   targets)
        if saves.known and saves.value and adds is None:
            broad = broad_entries(saves.value, arch, setup.framework, save=True)
            if broad:
                yield self._launch(self._saves_finding(context, setup, arch, broad, targets_value, dora),
                                   saves)

    @staticmethod
    def _launch(finding: Finding, setting: Setting) -> Finding:
        """A finding resting on a list chosen at launch (facts.set_at_launch): said so, at info."""
        hint = facts.launch_hint(setting)
        if hint is None:
            return finding
        return dataclasses.replace(finding, severity=Severity.INFO,
                                   message=f"{finding.message} The list is a default chosen at launch: {hint}.")

    # ---- modules_to_save -------------------------------------------------------------------------
    def _saves_finding(self, context: "Context", setup: TrainingSetup, arch: Any, broad: Broad,
                       targets_value: Any, dora: bool) -> Finding:
        saves = setup.lora.modules_to_save  # type: ignore[union-attr]
        values = list(saves.value) if isinstance(saves.value, (list, tuple)) else [saves.value]
        kept = tuple(v for v in values if v not in broad.entries)
        fixed = setup.set("lora.modules_to_save", kept or None, "LL003 fix")
        key = saves.expr if setup.kind in ("yaml", "json") and saves.expr else "modules_to_save"
        parts = [f"{key} lists {_layer_words(broad.entries)}: peft trains a full copy of "
                 f"{_layers(broad)}, with its own gradient and optimizer state, and saves the whole "
                 "matrix in every adapter checkpoint."]
        parts += self._count_sentences(context, setup, fixed, arch, (targets_value, values),
                                       (targets_value, kept or None), dora, needs_r=False)
        return self.finding(
            context, setup, saves.span or saves.key_span or setup.lora.span,  # type: ignore[union-attr]
            " ".join(parts),
            fix=(f"Remove {_layer_words(broad.entries)} from {key}. Train them only when you add tokens "
                 "or a new chat format; then keep them and suppress this finding, or train just the new rows "
                 "with peft's trainable_token_indices."),
            fixed_setup=fixed,
            autofix=_list_fix(setup, saves, kept or None, FIX_SAVES),
        )

    # ---- target_modules --------------------------------------------------------------------------
    def _targets_finding(self, context: "Context", setup: TrainingSetup, arch: Any, broad: Broad,
                         saves_value: Any, dora: bool) -> Finding:
        targets = setup.lora.target_modules  # type: ignore[union-attr]
        framework = setup.framework
        unsloth = framework == "unsloth"
        own_switch = _OWN_OUTPUT_SWITCH.get(framework) if setup.kind in ("yaml", "json") else None
        key = targets.expr if setup.kind in ("yaml", "json") and targets.expr else "target_modules"
        severity = Severity.WARNING
        if broad.pattern is not None:
            pattern = broad.pattern
            fixed_targets: Any = "all-linear"
            if arch is not None:
                c = _counts(arch, _r(setup) or 8, pattern, saves_value, dora)
                leaves = tuple(dict.fromkeys(
                    m.name for m in (c.adapted if c else ()) if m.role not in ("embedding", "lm_head")))
                fixed_targets = leaves or "all-linear"
            if _matches_everything(pattern):
                what = (f"{key}={pattern!r} matches every module, {_layers(broad)} included (and "
                        "container modules LoRA cannot wrap)")
            else:
                what = f"the pattern {key}={pattern!r} also matches {_layers(broad)}"
            fix = ('Name the layers to adapt: target_modules="all-linear" (every linear layer except the output '
                   'layer) or a list such as ["q_proj", "k_proj", "v_proj", "o_proj"].')
            before_targets: Any = pattern
        else:
            before_targets = list(targets.value)
            fixed_targets = tuple(v for v in before_targets if v not in broad.entries) or None
            if own_switch is not None:
                what = f"{own_switch[0]} puts a LoRA adapter on the output layer"
                fix = (f"Set {own_switch[1]} unless you need the output layer adapted (for example after "
                       "adding tokens).")
            else:
                what = f"`{key}` lists {_layer_words(broad.entries)}" if key != "target_modules" else \
                    f"target_modules lists {_layer_words(broad.entries)}"
                fix = (f"Remove {_layer_words(broad.entries)} from {key} (adapters on the attention and MLP "
                       'projections, or "all-linear", are the usual choice); train the embedding and output '
                       "layer only when you add tokens, then suppress this finding.")
        fixed = setup.set("lora.target_modules", fixed_targets, "LL003 fix")
        saved_bytes = 0
        if unsloth:
            consequences = [f"unsloth trains {_layers(broad)} named in target_modules in full (it moves them to "
                            "modules_to_save): full copies with gradients and optimizer state, saved whole "
                            "in every adapter"]
        elif framework in _PEFT_FRAMEWORKS:
            consequences = [f"peft puts LoRA adapters on {_layers(broad)}"]
            if broad.peft_saves_embeddings:
                consequences.append(f"stores the full {'matrices' if broad.embedding and broad.output else 'matrix'} "
                                    'with every adapter checkpoint (save_embedding_layers="auto")')
                if arch is not None:
                    saved_bytes = 2 * ((arch.embedding_params if broad.embedding else 0)
                                       + (arch.vocab_size * arch.hidden_size if broad.output else 0))
            if broad.output:
                consequences.append("the output layer's adapter computes one more vocabulary-sized output "
                                    "per token")
        else:
            # torchtune / litgpt: their own LoRA on the output layer; no full copies are saved
            severity = Severity.INFO
            consequences = ["its adapter computes one more vocabulary-sized output per token"
                            if broad.output else "the embedding's adapter trains on every vocabulary row"]
        parts = [f"{what}: {join_words(consequences)}."]
        if saved_bytes:
            parts.append(f"That is about {gib(saved_bytes)} more per checkpoint in 16-bit.")
        count_before: tuple[Any, Any] = (before_targets, saves_value)
        if unsloth and broad.pattern is None:
            # unsloth: the named embedding/output layers become fully trained copies
            count_before = ([v for v in before_targets if v not in broad.entries] or None,
                            _as_list(saves_value) + list(broad.entries))
        parts += self._count_sentences(context, setup, fixed, arch, count_before,
                                       (fixed_targets, saves_value), dora, needs_r=True)
        span = targets.span or targets.key_span or setup.lora.span  # type: ignore[union-attr]
        if own_switch is not None:
            # litgpt/torchtune: point at the switch that adds the output layer, not at the
            # first of the switches the target list was converted from
            switch = setup.lora.extra.get(own_switch[2]) if setup.lora is not None else None
            if isinstance(switch, Setting) and switch.span is not None:
                span = switch.span
        if own_switch is not None:
            autofix = _switch_fix(setup, own_switch)
        else:
            autofix = _list_fix(setup, targets, fixed_targets, FIX_TARGETS)
        return self.finding(
            context, setup, span, " ".join(parts), fix=fix, fixed_setup=fixed, severity=severity,
            autofix=autofix,
        )

    # ---- shared wording ----------------------------------------------------------------------------
    def _count_sentences(self, context: "Context", setup: TrainingSetup, fixed: TrainingSetup, arch: Any,
                         before: tuple[Any, Any], after: tuple[Any, Any], dora: bool, *,
                         needs_r: bool) -> list[str]:
        """The trainable-parameter count and memory cost, as sentences.

        ``before``/``after`` are ``(target_modules, modules_to_save)`` as counted.
        """
        out: list[str] = []
        if arch is None:
            problem = context.architecture_problem(setup) or "the model is unknown"
            out.append(f"No parameter count: {problem.rstrip('.')}.")
            return out
        r = _r(setup)
        if r is None and needs_r:
            out.append("No parameter count: the LoRA rank r is not resolved.")
        else:
            rank = r or 8  # full copies do not depend on r; 8 is peft's default rank
            c_before = _counts(arch, rank, before[0], before[1], dora)
            c_after = _counts(arch, rank, after[0], after[1], dora)
            if c_before is not None and c_after is not None:
                extra = c_before.trainable - c_after.trainable
                text = (f"On {arch.name} that makes {count(c_before.trainable)} trainable parameters instead of "
                        f"{count(c_after.trainable)}")
                text += f" ({count(extra)} more)." if extra > 0 else "."
                if r is None:
                    text += " (LoRA rank not resolved: counted with r=8, peft's default.)"
                out.append(text)
        figures = context.figures(setup, fixed)
        if figures.peak_bytes is not None and figures.peak_after_fix_bytes is not None:
            delta = figures.peak_bytes - figures.peak_after_fix_bytes
            if delta >= 0.05 * 2**30:  # below 0.1 GiB once rounded: not worth a sentence
                out.append(f"It costs about {gib(delta)} of GPU memory (estimated peak "
                           f"{gib(figures.peak_bytes)} -> {gib(figures.peak_after_fix_bytes)} without it).")
        return out
