"""Trainable-parameter counting with peft's target-matching rules (used by LL003/LL004).

Matching follows peft ``src/peft/tuners/tuners_utils.py`` (``check_target_module_exists``,
peft 0.13–0.17, unchanged in 0.21): a string ``target_modules`` is matched with
``re.fullmatch`` against each module's full path; a list matches a module when an entry equals
the full path or the path ends with ``"." + entry``. ``"all-linear"`` means every
``nn.Linear`` (and GPT-2 ``Conv1D``) except the output layer (peft
``_maybe_include_all_linear_layers``). ``None`` means peft's per-model_type default
(``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``, copied per record into the catalog);
with no default, peft raises "Please specify `target_modules`".

``target_parameters`` (peft >= 0.17; ``LoraConfig.target_parameters``, peft
``src/peft/tuners/lora/config.py`` and ``BaseTuner._inject_parameters`` in
``src/peft/tuners/tuners_utils.py`` @5d602fdb) reaches ``nn.Parameter`` tensors of modules that
are not ``nn.Linear`` (the fused 3-D experts of gpt-oss, Llama-4, GraniteMoE): a list entry
matches the parameter whose full name (``model.layers.7.mlp.experts.gate_up_proj``) equals it or
ends with ``"." + entry``. Each match is wrapped in ``lora.ParamWrapper``
(``src/peft/tuners/lora/layer.py``), whose ``lora_A`` is ``nn.Linear(in, r·E)`` and ``lora_B``
``nn.Linear(r·E, out)`` for a parameter of shape (E, in, out) (E = 1 for a 2-D one):
``r·E·(in + out)`` trainable parameters. ``target_modules`` (and ``"all-linear"``) never
matches such a parameter: on gpt-oss ``"all-linear"`` adapts q/k/v/o only (its router is a
raw parameter too).

``modules_to_save`` follows peft ``_set_trainable``: a module is wrapped when its full path
ends with an entry (no dot required); the wrapper trains a full copy of the module.

LoRA parameters per adapted linear: ``r·(d_in + d_out)`` (A is r×d_in, B is d_out×r; LoRA
paper, Hu et al. 2021, §4); on an embedding: ``r·(V + h)``. DoRA adds a magnitude vector of
``d_out`` per module (peft ``DoraLinearLayer``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from lintlora.estimate.architecture import Architecture
from lintlora.target_regex import MAX_PATTERN_CHARS, UnsafePatternError, compile_target_pattern

__all__ = ["AdaptedModule", "TrainableCount", "count_trainable", "NoDefaultTargetsError", "target_matches",
           "UnsafePatternError", "pattern_may_backtrack", "MAX_PATTERN_CHARS"]


class NoDefaultTargetsError(ValueError):
    """``target_modules=None`` on a model_type peft has no default for (peft raises too)."""


def pattern_may_backtrack(pattern: str) -> bool:
    """Whether lintlora refuses to match the ``target_modules`` pattern: one that could take
    unbounded time in ``re.fullmatch`` (nested or alternating repetition, backreferences, too
    many quantifiers, too long: :func:`lintlora.target_regex.compile_target_pattern`, the one
    check every caller shares), or one that is not a valid expression at all."""
    try:
        compile_target_pattern(pattern)
    except re.error:  # UnsafePatternError is a re.error
        return True
    return False


@dataclass(frozen=True)
class AdaptedModule:
    """One adapted (or fully trained) module kind, summed over layers.

    Attributes:
        name: leaf name (``q_proj``) or full path for embeddings/heads.
        role: ``"qkv"``, ``"attn_out"``, ``"mlp_in"``, ``"mlp_out"``, ``"router"``,
            ``"embedding"`` or ``"lm_head"``.
        d_in, d_out: feature sizes of one copy.
        copies: how many modules (layers × experts) are adapted.
        params: trainable parameters added (LoRA A+B, or the full copy for modules_to_save).
    """

    name: str
    role: str
    d_in: int
    d_out: int
    copies: int
    params: int


@dataclass(frozen=True)
class TrainableCount:
    """What a LoRA configuration trains on an architecture.

    Attributes:
        lora_params: LoRA A/B (and DoRA magnitude) parameters.
        full_params: parameters trained in full (``modules_to_save`` copies).
        trainable: ``lora_params + full_params`` (what ``print_trainable_parameters`` shows).
        total_params: all parameters of the peft model: base + LoRA + modules_to_save copies
            (peft's "all params").
        adapted: LoRA-adapted module kinds with shapes and counts.
        saved: ``modules_to_save`` module kinds trained in full.
        matched: leaf names (or paths) that matched, in architecture order.
        unmatched: requested ``target_modules``/``modules_to_save`` entries that matched nothing.
        targets_used: the targets after resolving ``None``/``"all-linear"`` (for messages).
    """

    lora_params: int
    full_params: int
    trainable: int
    total_params: int
    adapted: tuple[AdaptedModule, ...]
    saved: tuple[AdaptedModule, ...]
    matched: tuple[str, ...]
    unmatched: tuple[str, ...]
    targets_used: tuple[str, ...] | str

    @property
    def trainable_percent(self) -> float:
        """``100 · trainable / total_params`` as peft prints it."""
        return 100.0 * self.trainable / self.total_params if self.total_params else 0.0

    def peft_line(self) -> str:
        """The line ``print_trainable_parameters()`` prints for this setup."""
        return (f"trainable params: {self.trainable:,} || all params: {self.total_params:,} || "
                f"trainable%: {self.trainable_percent:.4f}")


class _Module(NamedTuple):
    """One module of the model as peft's matching sees it (built by the hundreds per count:
    a named tuple, not a frozen dataclass, whose ``__init__`` costs ~3 times as much)."""

    path: str
    leaf: str
    role: str
    d_in: int
    d_out: int
    is_linear: bool
    parameter: bool = False
    experts: int = 1


def _modules(arch: Architecture) -> list[_Module]:
    mods: list[_Module] = [_Module(arch.embedding_name, arch.embedding_name.rsplit(".", 1)[-1],
                                   "embedding", arch.vocab_size, arch.hidden_size, False)]
    for path in arch.extra_embedding_names:  # learned position embeddings (GPT-2 wpe, OPT)
        mods.append(_Module(path, path.rsplit(".", 1)[-1], "embedding",
                            int(arch.max_position_embeddings or 0), arch.hidden_size, False))
    if arch.encoder_decoder is not None:
        # the same shapes for every block of a stack (computed, not stored): an encoder's and a
        # decoder's (lintlora/estimate/seq2seq.py)
        for layer_path, layers, shapes in arch.layer_stacks():
            for i in range(layers):
                base = layer_path.format(i=i) + "."
                for shape in shapes:
                    for e in range(shape.count):
                        mods.append(_Module(base + shape.path.format(e=e), shape.name, shape.role,
                                            shape.d_in, shape.d_out, True))
    else:
        for i in range(arch.num_hidden_layers):
            for shape in arch.layer_linears(i):  # computed, not stored (dense blocks of MoE models)
                if shape.parameter:  # one tensor for all experts: reached by target_parameters only
                    mods.append(_Module(arch.module_path(i, shape), shape.name, shape.role,
                                        shape.d_in, shape.d_out, False, True, shape.count))
                    continue
                for e in range(shape.count):
                    path = arch.module_path(i, shape, e)
                    mods.append(_Module(path, shape.name, shape.role, shape.d_in, shape.d_out, True))
    if not arch.tie_word_embeddings:
        mods.append(_Module(arch.lm_head_name, arch.lm_head_name.rsplit(".", 1)[-1], "lm_head",
                            arch.hidden_size, arch.vocab_size, True))
    else:
        # a tied head is still a module (lm_head) whose weight is the embedding's
        mods.append(_Module(arch.lm_head_name, arch.lm_head_name.rsplit(".", 1)[-1], "lm_head",
                            arch.hidden_size, arch.vocab_size, True))
    return mods


def _list_match(path: str, names: Sequence[str]) -> str | None:
    for n in names:
        if path == n or path.endswith("." + n):
            return n
    return None


_WRAPPER_LAYER_PREFIXES = ("model.language_model.layers.", "language_model.model.layers.")
"""Where a vision-language ``*ForConditionalGeneration`` wrapper puts its text decoder's layers:
``model.language_model.layers.N`` (transformers >= 4.52, e.g. ``Gemma3ForConditionalGeneration``
and ``Mistral3ForConditionalGeneration``: ``self.model = Gemma3Model(config)`` holding
``self.language_model``) and ``language_model.model.layers.N`` (the layout before 4.52)."""


def _regex_hits(regex: "re.Pattern[str]", path: str, wrapper: bool) -> bool:
    """``regex.fullmatch(path)``; with ``wrapper`` (a pattern naming ``language_model`` on a
    text-decoder record laid out as ``model.layers.N``) also the same module in either
    wrapper layout of :data:`_WRAPPER_LAYER_PREFIXES`: the catalog prices the decoder of a
    vision-language checkpoint with its text model's shapes, so a pattern written for the
    wrapper (axolotl's Gemma-3 and Mistral-Small-3.1 examples) names the same modules."""
    if regex.fullmatch(path):
        return True
    if not wrapper or not path.startswith("model.layers."):
        return False
    rest = path[len("model.layers."):]
    return any(regex.fullmatch(prefix + rest) for prefix in _WRAPPER_LAYER_PREFIXES)


def target_matches(path: str, target_modules: str | Sequence[str]) -> bool:
    """Whether peft adapts the module at ``path`` (its full name in ``named_modules()``) for
    ``target_modules``: a string is a regular expression that must ``re.fullmatch`` the path,
    a list matches when an entry equals the path or the path ends with ``"." + entry``
    (peft ``check_target_module_exists`` and ``match_target_against_key``,
    ``src/peft/tuners/tuners_utils.py`` / ``src/peft/utils/other.py`` at 0.20.1.dev0,
    5d602fdb). ``exclude_modules``, ``layers_to_transform`` and ``modules_to_save`` are not
    applied here. ``"all-linear"`` is not a pattern (see :func:`resolve_targets`).

    Raises:
        re.error: a string that is not a valid regular expression (peft raises too).
    """
    if isinstance(target_modules, str):
        return re.fullmatch(target_modules, path) is not None
    return _list_match(path, target_modules) is not None


def resolve_targets(arch: Architecture, target_modules: str | Sequence[str] | None) -> tuple[str, ...] | str:
    """Resolve ``None`` to peft's default and ``"all-linear"`` to the leaf names it covers.

    Raises:
        NoDefaultTargetsError: ``None`` for a model_type peft has no default for.
    """
    if target_modules is None:
        if arch.peft_default_targets is None:
            raise NoDefaultTargetsError(
                f"peft has no default target_modules for model_type {arch.model_type!r}; "
                f"LoraConfig needs target_modules")
        return tuple(arch.peft_default_targets)
    if isinstance(target_modules, str):
        if target_modules.lower() in ("all-linear", "all_linear"):
            names: list[str] = []
            shapes = arch.block_linears() + arch.dense_shapes
            for s in shapes:
                if s.name not in names and not s.parameter:
                    names.append(s.name)
            return tuple(names)
        return target_modules
    return tuple(target_modules)


def count_trainable(
    arch: Architecture,
    r: int,
    target_modules: str | Sequence[str] | None,
    modules_to_save: Iterable[str] | None = None,
    *,
    use_dora: bool = False,
    target_parameters: Sequence[str] | None = None,
) -> TrainableCount:
    """Count what ``LoraConfig(r, target_modules, modules_to_save, target_parameters)`` trains
    on ``arch`` (``target_parameters``: see the module docstring; an entry matching nothing is
    in ``unmatched``, as peft warns or raises for it).

    ``all-linear`` excludes the output layer. The tied lm_head of a model with
    ``tie_word_embeddings`` counts once in ``total_params``.

    Raises:
        NoDefaultTargetsError: ``target_modules=None`` on a model_type without a peft default.
        re.error: a string ``target_modules`` that is not a valid regular expression, or one
            whose matching could take unbounded time
            (:class:`lintlora.target_regex.UnsafePatternError`, a ``re.error``).
        ValueError: ``r`` beyond :data:`lintlora.estimate.bounds.MAX_LORA_R` (the counts would
            be meaningless, and beyond float range when printed as a share).
    """
    from lintlora.estimate.bounds import MAX_LORA_R, beyond_bound, out_of_range

    if beyond_bound(r, MAX_LORA_R):
        raise ValueError(out_of_range("the LoRA rank r", r, MAX_LORA_R))
    targets = resolve_targets(arch, target_modules)
    all_linear = isinstance(target_modules, str) and target_modules.lower() in ("all-linear", "all_linear")
    regex = compile_target_pattern(targets) if isinstance(targets, str) else None
    wrapper = regex is not None and "language_model" in targets and "language_model" not in arch.layer_path
    save = tuple(modules_to_save or ())
    params_t = tuple(t for t in (target_parameters or ()) if isinstance(t, str) and t)
    adapted: dict[tuple[str, str], list] = {}
    saved: dict[tuple[str, str], list] = {}
    hit_targets: set[str] = set()
    hit_saves: set[str] = set()
    lora = full = 0
    for m in _modules(arch):
        if m.parameter:
            hit = _list_match(m.path, params_t) if params_t else None
            if hit is not None:
                hit_targets.add(hit)
                p = r * m.experts * (m.d_in + m.d_out)  # ParamWrapper: lora_A (in, r·E), lora_B (r·E, out)
                lora += p
                key = (m.leaf, m.role)
                adapted.setdefault(key, [m, 0, 0])
                adapted[key][1] += 1
                adapted[key][2] += p
            continue
        # modules_to_save wins over LoRA for the same module (peft wraps it, LoRA skips it)
        s_hit = next((n for n in save if m.path.endswith(n)), None)
        if s_hit is not None:
            hit_saves.add(s_hit)
            p = m.d_in * m.d_out
            if m.role == "lm_head" and arch.tie_word_embeddings:
                p = arch.vocab_size * arch.hidden_size
            full += p
            saved.setdefault((m.leaf, m.role), [m, 0, 0])
            saved[(m.leaf, m.role)][1] += 1
            saved[(m.leaf, m.role)][2] += p
            continue
        if all_linear:
            hit = m.leaf if (m.is_linear and m.role != "lm_head" and m.leaf in targets) else None
        elif regex is not None:
            hit = targets if _regex_hits(regex, m.path, wrapper) else None
        else:
            hit = _list_match(m.path, targets)  # type: ignore[arg-type]
        if hit is None:
            continue
        hit_targets.add(hit)
        p = r * (m.d_in + m.d_out) + (m.d_out if use_dora and m.is_linear else 0)
        lora += p
        key = (m.leaf, m.role)
        adapted.setdefault(key, [m, 0, 0])
        adapted[key][1] += 1
        adapted[key][2] += p

    def pack(d: dict) -> tuple[AdaptedModule, ...]:
        return tuple(AdaptedModule(k[0], k[1], v[0].d_in, v[0].d_out, v[1], v[2]) for k, v in d.items())

    if isinstance(targets, str):
        unmatched_t: list[str] = [] if hit_targets else [targets]
    else:
        unmatched_t = [t for t in targets if t not in hit_targets]
    if all_linear:
        unmatched_t = []
    unmatched_t += [t for t in params_t if t not in hit_targets]
    unmatched = tuple(unmatched_t + [s for s in save if s not in hit_saves])
    matched = tuple(k[0] for k in adapted) + tuple(k[0] for k in saved)
    return TrainableCount(
        lora_params=lora,
        full_params=full,
        trainable=lora + full,
        total_params=arch.total_params + lora + full,
        adapted=pack(adapted),
        saved=pack(saved),
        matched=matched,
        unmatched=unmatched,
        targets_used=targets,
    )
