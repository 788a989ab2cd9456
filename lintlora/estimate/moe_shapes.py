"""Block layouts of the mixture-of-experts (and MLA, and Gemma-3n) families whose modules the generic
layout of :mod:`lintlora.estimate.architecture` does not describe.

One builder per Hugging Face ``model_type``; each reads the model's ``config.json`` keys (a
local config, or a catalog record, whose keys are the same names) and returns the
:class:`~lintlora.estimate.architecture.Architecture` with its block shapes
(``block_shapes``, ``dense_layers``/``dense_shapes``), its shared-expert width, its frozen
towers and its exact parameter count (``params_total``: weights, biases, norms, attention sinks).

Module layouts, read in transformers' modeling files (huggingface/transformers @00d4b3d2 unless
said otherwise):

* ``gpt_oss`` (``models/gpt_oss/modeling_gpt_oss.py``): ``self_attn.{q,k,v,o}_proj``
  (``nn.Linear``, ``bias=attention_bias``), ``self_attn.sinks`` (one per head);
  ``mlp.router`` (``GptOssTopKRouter``: raw ``weight`` (E, h) and ``bias`` (E), not an
  ``nn.Linear``); ``mlp.experts`` (``GptOssExperts``: 3-D ``gate_up_proj`` (E, h, 2I) with
  ``gate_up_proj_bias`` (E, 2I), ``down_proj`` (E, I, h) with ``down_proj_bias`` (E, h)).
* ``qwen2_moe`` / ``qwen3_moe`` (``models/qwen2_moe``, ``models/qwen3_moe``, transformers 4.5x):
  ``mlp.gate`` (``nn.Linear`` h → E), ``mlp.experts.{e}.{gate,up,down}_proj``; Qwen2-MoE adds
  ``mlp.shared_expert.{gate,up,down}_proj`` (``shared_expert_intermediate_size``) and
  ``mlp.shared_expert_gate`` (h → 1), and biases on q/k/v; Qwen3-MoE has ``q_norm``/``k_norm``
  (head_dim each). ``decoder_sparse_step``/``mlp_only_layers`` name dense blocks.
* ``deepseek_v2`` (``models/deepseek_v2/modeling_deepseek_v2.py``; the same names as the
  checkpoint's remote code): MLA attention ``self_attn.q_proj`` (h → heads·(nope+rope); or
  ``q_a_proj``/``q_a_layernorm``/``q_b_proj`` when ``q_lora_rank`` is set),
  ``kv_a_proj_with_mqa`` (h → kv_lora_rank + rope), ``kv_a_layernorm``, ``kv_b_proj``
  (kv_lora_rank → heads·(nope + v_head_dim)), ``o_proj`` (heads·v_head_dim → h); the first
  ``first_k_dense_replace`` blocks (and those off ``moe_layer_freq``) have a dense ``mlp``;
  MoE blocks have ``mlp.gate`` (raw ``weight`` (E, h)), ``mlp.experts.{e}.*`` and
  ``mlp.shared_experts.*`` (``n_shared_experts × moe_intermediate_size`` wide).
* ``llama4`` / ``llama4_text`` (``models/llama4/modeling_llama4.py``): ``feed_forward`` is
  ``Llama4TextMoe`` in the blocks of ``moe_layers`` (every ``interleave_moe_layer_step``-th):
  ``router`` (``Llama4Router``, an ``nn.Linear`` h → E), ``experts`` (``Llama4TextExperts``:
  3-D ``gate_up_proj`` (E, h, 2I), ``down_proj`` (E, I, h), no biases) and ``shared_expert``
  (``Llama4TextMLP``, width ``intermediate_size``); the other blocks a dense ``Llama4TextMLP`` of
  ``intermediate_size_mlp``. The vision tower and projector are frozen weights
  (:func:`llama4_vision_params`).
* ``granitemoe`` (``models/granitemoe/modeling_granitemoe.py``): ``block_sparse_moe.router.layer``
  (``nn.Linear`` h → E), ``block_sparse_moe.input_linear.weight`` (``GraniteMoeParallelExperts``:
  (E, 2I, h)) and ``output_linear.weight`` ((E, h, I)).

Recent transformers releases (the v5 line) store every MoE's experts as fused 3-D parameters;
the layouts above are those of the 4.5x releases the catalogued scripts run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from lintlora.estimate.architecture import (
    FIELD_RANGES,
    Architecture,
    LinearShape,
    UnknownModelError,
    _whole_number,
)

__all__ = ["apply_layout", "LAYOUT_TYPES", "llama4_vision_params", "record_config"]

_BIG = 1 << 21  # ranks and widths of the MLA/shared-expert keys (as FIELD_RANGES' intermediate)


def _int(cfg: dict[str, Any], key: str, default: int, source: str, hi: int = _BIG) -> int:
    """``cfg[key]`` as a whole number in ``0..hi`` (``default`` when absent or null)."""
    value = cfg.get(key)
    if value is None:
        return default
    return _whole_number(value, key, 0, hi, source)


def _lin(name: str, path: str, d_in: int, d_out: int, group: str, role: str, count: int = 1,
         *, parameter: bool = False, bias: bool = False) -> LinearShape:
    return LinearShape(name, path, d_in, d_out, group, role, count, parameter, bias)


def _gqa(a: Architecture, c: str, *, qkv_bias: bool, o_bias: bool) -> list[LinearShape]:
    h = a.hidden_size
    return [_lin("q_proj", f"{c}.q_proj", h, a.q_width, "attention", "qkv", bias=qkv_bias),
            _lin("k_proj", f"{c}.k_proj", h, a.kv_width, "attention", "qkv", bias=qkv_bias),
            _lin("v_proj", f"{c}.v_proj", h, a.kv_width, "attention", "qkv", bias=qkv_bias),
            _lin("o_proj", f"{c}.o_proj", a.q_width, h, "attention", "attn_out", bias=o_bias)]


def _gated(prefix: str, h: int, width: int, group: str = "mlp", count: int = 1) -> list[LinearShape]:
    """gate_proj/up_proj (h → width) and down_proj (width → h) under ``prefix``."""
    return [_lin("gate_proj", f"{prefix}.gate_proj", h, width, group, "mlp_in", count),
            _lin("up_proj", f"{prefix}.up_proj", h, width, group, "mlp_in", count),
            _lin("down_proj", f"{prefix}.down_proj", width, h, group, "mlp_out", count)]


def _shape_params(shapes: tuple[LinearShape, ...]) -> int:
    """Weights and biases of ``shapes`` (one block)."""
    return sum(s.params + (s.d_out * s.count if s.bias else 0) for s in shapes)


def _finish(a: Architecture, moe: tuple[LinearShape, ...], dense: tuple[LinearShape, ...],
            dense_layers: tuple[int, ...], per_layer_extra: int, *, shared: int = 0,
            towers: int = 0, model_extra: int = 0, blocks: int | None = None,
            **changes: Any) -> Architecture:
    """The architecture with its layout and its exact parameter count: blocks (weights, biases,
    ``per_layer_extra`` norms/sinks; or ``blocks`` when the caller counted them), embeddings,
    the final norm, ``model_extra`` (model-level tensors outside the blocks) and frozen towers."""
    L = a.num_hidden_layers
    n_dense = sum(1 for i in dense_layers if 0 <= i < L)
    if blocks is None:
        blocks = (L - n_dense) * _shape_params(moe) + n_dense * _shape_params(dense) + L * per_layer_extra
    tied = changes.get("tie_word_embeddings", a.tie_word_embeddings)
    emb = a.vocab_size * a.hidden_size
    total = blocks + emb + (0 if tied else emb) + a.hidden_size + model_extra + towers
    return replace(a, block_shapes=moe, dense_shapes=dense if n_dense else (),
                   dense_layers=tuple(i for i in dense_layers if 0 <= i < L),
                   shared_expert_intermediate_size=shared, frozen_tower_params=towers,
                   params_total=total, **changes)


# ---- builders ------------------------------------------------------------------------------------
def _gpt_oss(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    h, I, E = a.hidden_size, a.intermediate_size, a.num_experts
    bias = cfg.get("attention_bias", True) is not False
    shapes = tuple(_gqa(a, "self_attn", qkv_bias=bias, o_bias=bias) + [
        _lin("router", "mlp.router.weight", h, E, "router", "router", parameter=True, bias=True),
        _lin("gate_up_proj", "mlp.experts.gate_up_proj", h, 2 * I, "expert", "mlp_in", E,
             parameter=True, bias=True),
        _lin("down_proj", "mlp.experts.down_proj", I, h, "expert", "mlp_out", E,
             parameter=True, bias=True),
    ])
    # per block: the attention sinks (one per head) and two RMSNorms
    return _finish(a, shapes, (), (), a.num_attention_heads + 2 * h,
                   attention_modules=("q_proj", "k_proj", "v_proj", "o_proj"),
                   mlp_modules=("gate_up_proj", "down_proj"), router_module="router",
                   mlp_container="mlp", attention_bias=bias, peft_default_targets=None)


def _moe_flags(cfg: dict[str, Any], L: int, source: str) -> tuple[int, ...]:
    """Dense blocks of Qwen2/3-MoE: ``mlp_only_layers`` and those off ``decoder_sparse_step``
    (``Qwen2MoeDecoderLayer``: MoE when ``layer_idx not in mlp_only_layers and
    (layer_idx + 1) % decoder_sparse_step == 0``)."""
    step = _int(cfg, "decoder_sparse_step", 1, source, 1 << 12) or 1
    only = cfg.get("mlp_only_layers") or []
    only = {int(x) for x in only if isinstance(x, int) and not isinstance(x, bool)} \
        if isinstance(only, (list, tuple)) and len(only) <= 1 << 12 else set()
    return tuple(i for i in range(L) if i in only or (i + 1) % step != 0)


def _qwen_moe(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    h, I, E = a.hidden_size, a.intermediate_size, a.num_experts
    qwen2 = a.model_type == "qwen2_moe"
    shared = _int(cfg, "shared_expert_intermediate_size", 0, source) if qwen2 else 0
    attn = _gqa(a, "self_attn", qkv_bias=qwen2, o_bias=False)
    moe = attn + [_lin("gate", "mlp.gate", h, E, "router", "router")]
    moe += _gated("mlp.experts.{e}", h, I, "expert", E)
    if shared:
        moe += _gated("mlp.shared_expert", h, shared)
        moe.append(_lin("shared_expert_gate", "mlp.shared_expert_gate", h, 1, "router", "router"))
    dense_width = _int(cfg, "intermediate_size", I, source)
    dense = tuple(attn + _gated("mlp", h, dense_width))
    extra = 2 * h + (0 if qwen2 else 2 * a.head_dim)  # two RMSNorms (+ Qwen3 q_norm, k_norm)
    return _finish(a, tuple(moe), dense, _moe_flags(cfg, a.num_hidden_layers, source), extra,
                   shared=shared, router_module="gate", mlp_container="mlp",
                   attention_bias=qwen2)


def _deepseek_v2(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    h, I, E = a.hidden_size, a.intermediate_size, a.num_experts
    heads = a.num_attention_heads
    q_rank = _int(cfg, "q_lora_rank", 0, source)
    kv_rank = _int(cfg, "kv_lora_rank", 512, source)
    nope = _int(cfg, "qk_nope_head_dim", 128, source)
    rope = _int(cfg, "qk_rope_head_dim", 64, source)
    v_dim = _int(cfg, "v_head_dim", 128, source)
    n_shared = _int(cfg, "n_shared_experts", 0, source, 1 << 10)
    first_dense = _int(cfg, "first_k_dense_replace", 0, source, 1 << 12)
    freq = _int(cfg, "moe_layer_freq", 1, source, 1 << 12) or 1
    dense_width = _int(cfg, "intermediate_size", I, source)
    c = "self_attn"
    attn: list[LinearShape] = []
    if q_rank:
        attn += [_lin("q_a_proj", f"{c}.q_a_proj", h, q_rank, "attention", "qkv"),
                 _lin("q_b_proj", f"{c}.q_b_proj", q_rank, heads * (nope + rope), "attention", "qkv")]
    else:
        attn.append(_lin("q_proj", f"{c}.q_proj", h, heads * (nope + rope), "attention", "qkv"))
    attn += [_lin("kv_a_proj_with_mqa", f"{c}.kv_a_proj_with_mqa", h, kv_rank + rope, "attention", "qkv"),
             _lin("kv_b_proj", f"{c}.kv_b_proj", kv_rank, heads * (nope + v_dim), "attention", "qkv"),
             _lin("o_proj", f"{c}.o_proj", heads * v_dim, h, "attention", "attn_out")]
    shared = n_shared * I
    moe = attn + [_lin("gate", "mlp.gate.weight", h, E, "router", "router", parameter=True)]
    moe += _gated("mlp.experts.{e}", h, I, "expert", E)
    if shared:
        moe += _gated("mlp.shared_experts", h, shared)
    dense = tuple(attn + _gated("mlp", h, dense_width))
    L = a.num_hidden_layers
    # DeepseekV2DecoderLayer: MoE when layer_idx >= first_k_dense_replace and
    # layer_idx % moe_layer_freq == 0
    dense_layers = tuple(i for i in range(L) if not (i >= first_dense and i % freq == 0))
    extra = 2 * h + kv_rank + q_rank  # two RMSNorms, kv_a_layernorm (+ q_a_layernorm)
    return _finish(a, tuple(moe), dense, dense_layers, extra, shared=shared,
                   attention_modules=tuple(s.name for s in attn),
                   head_dim=nope + rope, num_key_value_heads=heads,
                   router_module="gate", mlp_container="mlp", attention_bias=False)


def llama4_vision_params(vision: dict[str, Any], text_hidden: int, source: str) -> int:
    """Parameters of Llama-4's vision tower and projector (transformers
    ``models/llama4/modeling_llama4.py``: ``Llama4VisionModel`` and
    ``Llama4MultiModalProjector``), from the config's ``vision_config``:

    * patch embedding ``Llama4UnfoldConvolution``: ``Linear(3·p², d, bias=False)``;
    * ``class_embedding`` (d) and ``positional_embedding_vlm`` ((image/p)² + 1 rows of d);
    * ``layernorm_pre``/``layernorm_post`` (LayerNorm with bias: 2d each);
    * per encoder layer: q/k/v/o ``Linear(d, d)`` with bias, ``fc1`` (d → I) and ``fc2`` (I → d)
      with bias, two LayerNorms with bias;
    * ``vision_adapter`` (``Llama4VisionPixelShuffleMLP`` → ``Llama4VisionMLP2``): ``fc1``
      (I → projector_input_dim) and ``fc2`` (projector_output_dim → projector_output_dim), no bias;
    * ``multi_modal_projector.linear_1``: ``Linear(vision_output_dim, text hidden, bias=False)``.
    """
    d = _int(vision, "hidden_size", 1408, source)
    n = _int(vision, "num_hidden_layers", 34, source, 1 << 12)
    inner = _int(vision, "intermediate_size", 5632, source)
    patch = _int(vision, "patch_size", 14, source, 1 << 12) or 14
    image = _int(vision, "image_size", 336, source, 1 << 16)
    channels = _int(vision, "num_channels", 3, source, 64)
    p_in = _int(vision, "projector_input_dim", 4096, source)
    p_out = _int(vision, "projector_output_dim", 4096, source)
    v_out = _int(vision, "vision_output_dim", 4096, source)
    layer = 4 * (d * d + d) + (d * inner + inner) + (inner * d + d) + 2 * 2 * d
    embed = channels * patch * patch * d + d + ((image // patch) ** 2 + 1) * d + 2 * 2 * d
    adapter = inner * p_in + p_out * p_out
    return embed + n * layer + adapter + v_out * text_hidden


def _llama4(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    h, I, E = a.hidden_size, a.intermediate_size, a.num_experts
    L = a.num_hidden_layers
    step = _int(cfg, "interleave_moe_layer_step", 1, source, 1 << 12) or 1
    moe_layers = cfg.get("moe_layers")
    if isinstance(moe_layers, (list, tuple)) and len(moe_layers) <= 1 << 12 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in moe_layers):
        moe_set = set(moe_layers)
    else:  # Llama4TextConfig: list(range(step - 1, num_hidden_layers, step))
        moe_set = set(range(step - 1, L, step))
    dense_width = _int(cfg, "intermediate_size_mlp", 2 * I, source)
    attn = _gqa(a, "self_attn", qkv_bias=False, o_bias=False)
    moe = attn + [
        _lin("router", "feed_forward.router", h, E, "router", "router"),
        _lin("gate_up_proj", "feed_forward.experts.gate_up_proj", h, 2 * I, "expert", "mlp_in", E,
             parameter=True),
        _lin("down_proj", "feed_forward.experts.down_proj", I, h, "expert", "mlp_out", E,
             parameter=True),
    ] + _gated("feed_forward.shared_expert", h, I)
    dense = tuple(attn + _gated("feed_forward", h, dense_width))
    vision = cfg.get("vision_config")
    towers = llama4_vision_params(vision, h, source) if isinstance(vision, dict) else 0
    return _finish(a, tuple(moe), dense, tuple(i for i in range(L) if i not in moe_set), 2 * h,
                   shared=I, towers=towers, router_module="router", mlp_container="feed_forward",
                   attention_bias=False)


def _granitemoe(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    h, I, E = a.hidden_size, a.intermediate_size, a.num_experts
    c = "block_sparse_moe"
    shapes = tuple(_gqa(a, "self_attn", qkv_bias=False, o_bias=False) + [
        _lin("layer", f"{c}.router.layer", h, E, "router", "router"),
        _lin("input_linear", f"{c}.input_linear.weight", h, 2 * I, "expert", "mlp_in", E,
             parameter=True),
        _lin("output_linear", f"{c}.output_linear.weight", I, h, "expert", "mlp_out", E,
             parameter=True),
    ])
    return _finish(a, shapes, (), (), 2 * h, router_module="layer", mlp_container=c,
                   mlp_modules=("input_linear", "output_linear"), attention_bias=False)


def _gemma3n(a: Architecture, cfg: dict[str, Any], source: str) -> Architecture:
    """Gemma-3n's text model (transformers ``models/gemma3n/modeling_gemma3n.py``,
    ``Gemma3nTextModel`` / ``Gemma3nTextDecoderLayer``), all of it priced as stored:

    * per block: q/k/v/o (every block owns k_proj/v_proj, the KV-shared ones too),
      ``q_norm``/``k_norm`` (head_dim; ``v_norm`` has no weight), the MLP of
      ``intermediate_size[i]``, four RMSNorms, ``altup`` (``correct_output_scale`` h,
      ``correction_coefs`` n→n, ``prediction_coefs`` n→n², ``modality_router`` h→n,
      ``router_norm`` h), ``laurel`` (``linear_left`` h→rank, ``linear_right`` rank→h,
      ``post_laurel_norm`` h), ``per_layer_input_gate`` (h→p), ``per_layer_projection`` (p→h),
      ``post_per_layer_input_norm`` h;
    * per model: ``embed_tokens`` (vocab × h, tied to the head), ``embed_tokens_per_layer``
      (``vocab_size_per_layer_input`` × L·p: the per-layer embeddings, PLE),
      ``per_layer_model_projection`` (h → L·p), ``per_layer_projection_norm`` (p),
      ``altup_projections`` and ``altup_unembed_projections`` (n-1 of h→h each), ``norm``.

    The vision (MobileNet-V5) and audio encoders of the multimodal checkpoint are not counted
    (their layouts are timm/conformer modules lintlora does not read). The activation model
    treats a block as a Gemma block of width h with the AltUp stream kept as
    ``altup_num_inputs`` copies of the residual stream at each checkpointed block input
    (``Architecture.residual_streams``); AltUp's prediction/correction tensors, LAuReL's rank-64
    branch and the PLE inputs (p per layer per token) are not modelled (small next to the MLP).
    """
    h, hd = a.hidden_size, a.head_dim
    L = a.num_hidden_layers
    n = _int(cfg, "altup_num_inputs", 4, source, 64) or 1
    rank = _int(cfg, "laurel_rank", 64, source)
    p = _int(cfg, "hidden_size_per_layer_input", 256, source)
    v_ple = _int(cfg, "vocab_size_per_layer_input", a.vocab_size, source, FIELD_RANGES["vocab_size"][1])
    widths = cfg.get("_intermediate_sizes")
    if not (isinstance(widths, (list, tuple)) and len(widths) == L):
        widths = [a.intermediate_size] * L
    attn = _gqa(a, "self_attn", qkv_bias=False, o_bias=False)
    extras = [_lin("linear_left", "laurel.linear_left", h, rank, "mlp", "mlp_in"),
              _lin("linear_right", "laurel.linear_right", rank, h, "mlp", "mlp_out"),
              _lin("per_layer_input_gate", "per_layer_input_gate", h, p, "mlp", "mlp_in"),
              _lin("per_layer_projection", "per_layer_projection", p, h, "mlp", "mlp_out"),
              _lin("correction_coefs", "altup.correction_coefs", n, n, "router", "router"),
              _lin("prediction_coefs", "altup.prediction_coefs", n, n * n, "router", "router"),
              _lin("modality_router", "altup.modality_router", h, n, "router", "router")]
    shapes = tuple(attn + _gated("mlp", h, a.intermediate_size) + extras)
    # norms: 4 block RMSNorms, q_norm/k_norm, altup correct_output_scale + router_norm,
    # post_laurel_norm, post_per_layer_input_norm
    per_layer = 4 * h + 2 * hd + 2 * h + h + h
    fixed = _shape_params(tuple(attn + extras)) + per_layer
    blocks = sum(fixed + 3 * h * int(w) for w in widths)
    model_extra = v_ple * L * p + h * L * p + p + 2 * (n - 1) * h * h
    return _finish(a, shapes, (), (), per_layer, blocks=blocks, model_extra=model_extra,
                   residual_streams=n, mlp_container="mlp", attention_bias=False,
                   tie_word_embeddings=True if a.tie_word_embeddings is None else a.tie_word_embeddings)


_BUILDERS: dict[str, Callable[[Architecture, dict[str, Any], str], Architecture]] = {
    "gpt_oss": _gpt_oss,
    "qwen2_moe": _qwen_moe,
    "qwen3_moe": _qwen_moe,
    "deepseek_v2": _deepseek_v2,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "granitemoe": _granitemoe,
    "gemma3n": _gemma3n,
    "gemma3n_text": _gemma3n,
}
LAYOUT_TYPES = frozenset(_BUILDERS)
"""The ``model_type``s with a layout of their own here."""


def record_config(rec: dict[str, Any]) -> dict[str, Any]:
    """A catalog record as the config keys the builders read: its top-level keys with its
    ``moe`` and ``mla`` blocks (config.json names) merged in."""
    cfg = dict(rec)
    for key in ("moe", "mla"):
        if isinstance(rec.get(key), dict):
            cfg.update(rec[key])
    return cfg


def apply_layout(arch: Architecture, cfg: dict[str, Any]) -> Architecture:
    """``arch`` with the layout of its ``model_type`` (unchanged for other types).

    Raises:
        UnknownModelError: a layout key is not a whole number in range (the message names it).
    """
    builder = _BUILDERS.get(arch.model_type)
    if builder is None or (not arch.is_moe and not arch.model_type.startswith("gemma3n")):
        return arch
    try:
        return builder(arch, cfg, arch.source)
    except (TypeError, ValueError) as exc:  # pragma: no cover - defensive: a malformed record
        raise UnknownModelError(f"{arch.source}: cannot build the {arch.model_type} layout ({exc})") from None


assert FIELD_RANGES["intermediate_size"][1] == _BIG  # the same bound as the MLP widths
