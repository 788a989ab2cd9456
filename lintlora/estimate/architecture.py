"""Model architectures: the shapes the estimator computes with, and how a name resolves to one.

Sources, in the order :func:`resolve_architecture` tries them (never the network):

1. ``model_config=`` (``--model-config path/config.json``): a local Hugging Face config.
2. ``params=`` alone with no name: a rough Llama-shaped stand-in (``rough=True``).
3. A local directory or ``config.json`` path (relative paths also against the linted file's
   folder): HF ``config.json`` or litgpt's ``model_config.yaml``; a folder with neither (a
   peft adapter, a fine-tune's card) resolves through the base it names in
   ``adapter_config.json`` or its model card (:mod:`lintlora.estimate.model_names`).
4. The built-in catalog ``lintlora/data/models*.json`` (each record cites the configs it
   was read from): hub ids, aliases (instruct/chat variants, ``NousResearch/...``,
   ``unsloth/...-bnb-4bit``, ModelScope ids), same-architecture ids (with their note),
   torchtune component names (``torchtune.models.llama3_1.lora_llama3_1_8b``), litgpt
   checkpoint directories (``checkpoints/meta-llama/Meta-Llama-3.1-8B``), ModelScope mirror
   ids by repository name, and last the normalised name (org and variant suffixes removed).
   Everything after the exact ids is a reading by name: :attr:`Architecture.resolved_by`
   carries the sentence the estimate's assumptions show.
5. The local Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``,
   ``~/.cache/huggingface/hub``): ``models--org--name/snapshots/<rev>/config.json``, or the
   base an adapter snapshot names.
6. ``params=`` with an unknown name: the rough stand-in.

Otherwise :class:`UnknownModelError`, whose message says how to supply the model.
"""

from __future__ import annotations

import json
import math
import os
import pkgutil
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.estimate.seq2seq import Seq2SeqFacts

__all__ = [
    "Architecture",
    "LinearShape",
    "UnknownModelError",
    "resolve_architecture",
    "lookup_architecture",
    "ArchitectureLookup",
    "catalog",
    "from_hf_config",
    "rough_architecture",
]


class UnknownModelError(LookupError):
    """The model cannot be resolved to an architecture; the message says how to supply it."""


@dataclass(frozen=True)
class LinearShape:
    """One linear layer of a decoder block (or the model head).

    Attributes:
        name: leaf module name (``q_proj``).
        path: module path inside one block (``self_attn.q_proj``); ``{e}`` marks an expert index.
        d_in, d_out: input and output features.
        group: ``"attention"``, ``"mlp"``, ``"router"`` or ``"expert"``.
        role: what the layer does in the block: ``"qkv"`` (reads the attention input),
            ``"attn_out"``, ``"mlp_in"`` (reads the MLP input), ``"mlp_out"`` (reads the MLP
            intermediate) or ``"router"``.
        count: copies per block (number of experts for expert layers, else 1).
        parameter: ``True`` when the weights are an ``nn.Parameter`` of a module that is not an
            ``nn.Linear`` (``path`` is then the parameter's path: ``mlp.experts.gate_up_proj``):
            the fused 3-D expert tensors of transformers' gpt-oss, Llama-4 and GraniteMoE
            (``count`` experts stacked on the first axis) and the routers kept as raw
            parameters (gpt-oss ``mlp.router.weight``, DeepSeek ``mlp.gate.weight``). peft's
            ``target_modules`` (and ``"all-linear"``) never reaches them, bitsandbytes'
            ``load_in_4bit``/``8bit`` (which swaps ``nn.Linear`` modules) leaves them in 16
            bits; peft reaches them through ``target_parameters`` (peft >= 0.17, ``ParamWrapper``).
        bias: the module (or parameter) has a bias of ``d_out`` per copy.
    """

    name: str
    path: str
    d_in: int
    d_out: int
    group: str
    role: str
    count: int = 1
    parameter: bool = False
    bias: bool = False

    @property
    def params(self) -> int:
        """Weight elements of all copies in one block (biases excluded)."""
        return self.d_in * self.d_out * self.count


# Containers of the attention and MLP modules inside one block, per HF model_type
# (read from the printed module trees and modeling files cited in models.json).
_CONTAINERS: dict[str, tuple[str, str]] = {
    "gpt2": ("attn", "mlp"),
    "qwen": ("attn", "mlp"),
    "falcon": ("self_attention", "mlp"),
    "bloom": ("self_attention", "mlp"),
    "chatglm": ("self_attention", "mlp"),
    "gpt_neox": ("attention", "mlp"),
    "internlm2": ("attention", "feed_forward"),
    "opt": ("self_attn", ""),
    "mixtral": ("self_attn", "block_sparse_moe"),
}

_FUSED_QKV = {"qkv_proj", "query_key_value", "c_attn", "W_pack", "wqkv"}
_Q_NAMES = {"q_proj", "query", "q"}
_KV_NAMES = {"k_proj", "v_proj", "key", "value", "k", "v"}


@dataclass(frozen=True)
class Architecture:
    """A decoder-only language model's shapes, in Hugging Face ``config.json`` terms.

    Attributes:
        name: display name; ``hf_id``: canonical hub id (or the path it was read from).
        source: where the facts come from (catalog record sources, a config path, or
            "rough: ..." for a parameter-count stand-in).
        model_type: HF ``model_type``.
        hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
        intermediate_size (per MLP branch / per expert), vocab_size: HF config names.
        tie_word_embeddings: lm_head shares the embedding matrix (``None`` = unknown: counted
            as untied, the larger figure).
        mlp_kind: ``"gated"`` (SwiGLU/GeGLU: gate, up, down) or ``"plain"`` (two matrices).
        norm: ``"rmsnorm"`` or ``"layernorm"``; ``norms_per_layer``: 1 (parallel blocks with a
            shared norm) or 2.
        attention_modules, mlp_modules: leaf names of the block's linear layers (the names
            ``target_modules`` matches).
        embedding_name, lm_head_name: full module paths (``model.embed_tokens``, ``lm_head``).
        extra_embedding_names: other embedding modules, full paths (learned positions: GPT-2
            ``transformer.wpe``, OPT ``model.decoder.embed_positions``), ``max_position_embeddings``
            rows each.
        layer_path: block path pattern (``model.layers.{i}``).
        attention_container, mlp_container: module paths of attention and MLP inside a block.
        num_experts, num_experts_per_tok, router_module: MoE facts (0/0/None for dense models).
        peft_default_targets: peft's default ``target_modules`` for this model_type, or
            ``None`` when peft has none (it then raises and asks for ``target_modules``).
        params_total: parameter count of the language model (catalog figure or computed).
        max_position_embeddings: context length.
        rough: ``True`` for a stand-in built from a parameter count alone.
        stored_quant: how the checkpoint is stored when it is quantized
            (:class:`lintlora.estimate.stored_quant.StoredQuant`: its config.json
            ``quantization_config``, the catalog record's, or the hub id's conventions), else ``None``.
        resolved_by: how a name that is not a catalogued id was resolved, as a sentence for the
            estimate's assumptions (a guess by name, a ModelScope mirror, a fine-tune's base
            named in its local files, a same-architecture id's note); ``""`` for an exact
            catalog id, a local ``config.json`` or a rough stand-in (which says so itself).
        block_shapes: the linear layers (and parameter tensors) of one block when the
            architecture's own module layout builds them (:mod:`lintlora.estimate.moe_shapes`:
            MLA attention, fused experts, shared experts); empty: derived from the fields above.
        dense_layers, dense_shapes: block indices whose MLP is dense (DeepSeek's
            ``first_k_dense_replace``, Llama-4's ``interleave_moe_layer_step``) and their shapes.
        shared_expert_intermediate_size: width of the shared expert(s) every token runs through
            besides its routed experts (Qwen2-MoE ``shared_expert_intermediate_size``, DeepSeek
            ``n_shared_experts × moe_intermediate_size``, Llama-4's one shared expert); 0: none.
        frozen_tower_params: parameters of encoders stored with the model that a text-only run
            loads but neither trains nor runs (Llama-4's vision tower and projector): in
            ``total_params``, not in the block shapes.
        residual_streams: copies of the hidden state a block passes on (Gemma-3n's AltUp:
            ``altup_num_inputs``; 1 otherwise): what a checkpointed block input holds.
        encoder_decoder: the encoder-decoder facts (T5, mT5, BART: decoder depth, feed-forward
            kind, position tables; :class:`lintlora.estimate.seq2seq.Seq2SeqFacts`), ``None``
            for a decoder-only model. For an encoder-decoder ``num_hidden_layers`` is the
            encoder's depth, ``layer_path`` and :meth:`block_linears` the decoder's block.
    """

    name: str
    hf_id: str
    source: str
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool | None = False
    mlp_kind: str = "gated"
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    attention_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    mlp_modules: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    embedding_name: str = "model.embed_tokens"
    lm_head_name: str = "lm_head"
    extra_embedding_names: tuple[str, ...] = ()
    layer_path: str = "model.layers.{i}"
    attention_container: str = "self_attn"
    mlp_container: str = "mlp"
    num_experts: int = 0
    num_experts_per_tok: int = 0
    router_module: str | None = None
    peft_default_targets: tuple[str, ...] | None = ("q_proj", "v_proj")
    params_total: int = 0
    max_position_embeddings: int | None = None
    attention_bias: bool = False
    rough: bool = False
    aliases: tuple[str, ...] = field(default=(), repr=False)
    stored_quant: Any = None
    resolved_by: str = ""
    block_shapes: tuple[LinearShape, ...] = field(default=(), repr=False)
    dense_layers: tuple[int, ...] = ()
    dense_shapes: tuple[LinearShape, ...] = field(default=(), repr=False)
    shared_expert_intermediate_size: int = 0
    frozen_tower_params: int = 0
    residual_streams: int = 1
    encoder_decoder: "Seq2SeqFacts | None" = field(default=None, repr=False)

    # ---- derived shapes ----------------------------------------------------------------------
    @property
    def q_width(self) -> int:
        """Width of the query projection: heads × head_dim (not always hidden_size: Gemma)."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Width of each of the key and value projections: KV heads × head_dim (GQA/MQA)."""
        return self.num_key_value_heads * self.head_dim

    @property
    def is_encoder_decoder(self) -> bool:
        """Whether the model has an encoder and a decoder stack (T5, mT5, BART)."""
        return self.encoder_decoder is not None

    def layer_stacks(self) -> tuple[tuple[str, int, tuple[LinearShape, ...]], ...]:
        """``((layer_path, layers, block linears), ...)``: one stack for a decoder-only model,
        the encoder's and the decoder's for an encoder-decoder (:mod:`.seq2seq`)."""
        if self.encoder_decoder is not None:
            from lintlora.estimate.seq2seq import stack_linears

            return stack_linears(self)
        return ((self.layer_path, self.num_hidden_layers, self.block_linears()),)

    @property
    def is_moe(self) -> bool:
        """Whether the MLP is a mixture of experts."""
        return self.num_experts > 0

    def block_linears(self) -> tuple[LinearShape, ...]:
        """The linear layers of one decoder block with their real shapes.

        Shapes follow the HF modeling code: q (h → heads·head_dim), k/v (h → kv_heads·head_dim),
        fused qkv (h → (heads + 2·kv_heads)·head_dim), the attention output
        (heads·head_dim → h); gated MLPs: gate/up (h → I), down (I → h), fused gate_up
        (h → 2I); plain MLPs: (h → I), (I → h); MoE experts repeat per expert, the router is
        (h → experts). An architecture with its own layout (``block_shapes``) returns those;
        for models with dense layers among MoE ones this is the MoE block
        (:meth:`layer_linears` gives each block's own). For an encoder-decoder, the decoder
        block's linears (self-attention, cross-attention, feed-forward): every leaf name the
        model has.
        """
        if self.encoder_decoder is not None:
            return self.layer_stacks()[-1][2]
        return self.block_shapes or _block_linears(self)

    def layer_linears(self, layer: int) -> tuple[LinearShape, ...]:
        """The linear layers of block ``layer`` (the dense ones for ``dense_layers``)."""
        if self.dense_shapes and layer in self.dense_layers:
            return self.dense_shapes
        return self.block_linears()

    @property
    def linear_module_params(self) -> int:
        """Elements of the block weights held by ``nn.Linear`` modules, all blocks: what
        bitsandbytes' ``load_in_4bit``/``load_in_8bit`` quantizes (transformers
        ``integrations/bitsandbytes.py`` ``replace_with_bnb_linear`` swaps ``nn.Linear``
        modules; the 3-D expert parameters of gpt-oss, Llama-4 and GraniteMoE stay 16-bit)."""
        def linear(shapes: tuple[LinearShape, ...]) -> int:
            return sum(s.params for s in shapes if not s.parameter)

        if self.encoder_decoder is not None:  # both stacks, all nn.Linear
            return self.block_linear_params

        if self.dense_shapes and self.dense_layers:
            dense = sum(1 for i in self.dense_layers if 0 <= i < self.num_hidden_layers)
            return ((self.num_hidden_layers - dense) * linear(self.block_linears())
                    + dense * linear(self.dense_shapes))
        return self.num_hidden_layers * linear(self.block_linears())

    @property
    def expert_params(self) -> int:
        """Weight elements of all routed experts, all blocks (``group == "expert"``): what MoE
        checkpoints store in a format of their own (gpt-oss MXFP4) and what only the routed
        ``num_experts_per_tok`` of ``num_experts`` see per token."""
        moe_layers = self.num_hidden_layers - (len(self.dense_layers) if self.dense_shapes else 0)
        return moe_layers * sum(s.params for s in self.block_linears() if s.group == "expert")

    @property
    def active_params(self) -> int:
        """Parameters one token's forward pass reads: all but the routed experts it is not
        sent to (``total - experts × (1 - k/E)``), the input embedding table and frozen
        towers included (vendors differ: OpenAI's and DeepSeek's "active" figures leave the
        input embedding out, Qwen's and Meta's keep it; subtract ``embedding_params``)."""
        total = self.total_params - self.frozen_tower_params
        if not self.is_moe:
            return total
        idle = self.expert_params * (1 - self.num_experts_per_tok / max(1, self.num_experts))
        # expert biases (gpt-oss) idle with their experts
        moe_layers = self.num_hidden_layers - (len(self.dense_layers) if self.dense_shapes else 0)
        bias = moe_layers * sum(s.d_out * s.count for s in self.block_linears()
                                if s.group == "expert" and s.bias)
        idle += bias * (1 - self.num_experts_per_tok / max(1, self.num_experts))
        return int(round(total - idle))

    @property
    def active_mlp_width(self) -> int:
        """Intermediate features one token produces in an MLP block: ``I`` for a dense MLP,
        ``num_experts_per_tok × I`` plus the shared experts' width for a MoE block (what the
        activation model keeps per token)."""
        if not self.is_moe:
            return self.intermediate_size
        return (max(1, self.num_experts_per_tok) * self.intermediate_size
                + self.shared_expert_intermediate_size)

    @property
    def embedding_params(self) -> int:
        """Elements of the input embedding (vocab × hidden)."""
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """Elements of a separate output layer (0 when tied to the embedding)."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def block_linear_params(self) -> int:
        """Elements in the linear layers of all blocks: what 4/8-bit quantization compresses."""
        if self.encoder_decoder is not None:  # the encoder's and the decoder's stacks
            return sum(n * sum(s.params for s in shapes) for _p, n, shapes in self.layer_stacks())
        if self.dense_shapes and self.dense_layers:
            dense = sum(1 for i in self.dense_layers if 0 <= i < self.num_hidden_layers)
            return ((self.num_hidden_layers - dense) * sum(s.params for s in self.block_linears())
                    + dense * sum(s.params for s in self.dense_shapes))
        return self.num_hidden_layers * sum(s.params for s in self.block_linears())

    @property
    def total_params(self) -> int:
        """Parameter count: the catalog's figure when present, else embeddings + blocks + norms."""
        if self.params_total:
            return self.params_total
        if self.encoder_decoder is not None:
            from lintlora.estimate.seq2seq import total_params

            return total_params(self)
        norms = (self.num_hidden_layers * self.norms_per_layer + 1) * self.hidden_size
        return (self.embedding_params + self.lm_head_params + self.block_linear_params + norms
                + self.frozen_tower_params)

    @property
    def other_params(self) -> int:
        """Parameters outside the block linears and embeddings (norms, biases, position tables)."""
        return max(0, self.total_params - self.block_linear_params - self.embedding_params
                   - self.lm_head_params)

    def module_path(self, layer: int, shape: LinearShape, expert: int = 0) -> str:
        """Full module path of a block linear (``model.layers.3.self_attn.q_proj``)."""
        return self.layer_path.format(i=layer) + "." + shape.path.format(e=expert)


def _block_linears(a: Architecture) -> tuple[LinearShape, ...]:
    h, I = a.hidden_size, a.intermediate_size
    out: list[LinearShape] = []
    attn = list(a.attention_modules)
    for i, name in enumerate(attn):
        path = f"{a.attention_container}.{name}" if a.attention_container else name
        if name in _FUSED_QKV:
            out.append(LinearShape(name, path, h, a.q_width + 2 * a.kv_width, "attention", "qkv"))
        elif name in _Q_NAMES:
            out.append(LinearShape(name, path, h, a.q_width, "attention", "qkv"))
        elif name in _KV_NAMES:
            out.append(LinearShape(name, path, h, a.kv_width, "attention", "qkv"))
        elif i == len(attn) - 1:
            out.append(LinearShape(name, path, a.q_width, h, "attention", "attn_out"))
        else:  # unknown input projection: assume h -> h
            out.append(LinearShape(name, path, h, h, "attention", "qkv"))
    mlp = list(a.mlp_modules)
    group = "expert" if a.is_moe else "mlp"
    count = a.num_experts if a.is_moe else 1
    if a.is_moe:
        container = a.mlp_container + ".experts.{e}" if a.mlp_container else "experts.{e}"
    else:
        container = a.mlp_container
    for i, name in enumerate(mlp):
        path = f"{container}.{name}" if container else name
        last = i == len(mlp) - 1
        if last:
            out.append(LinearShape(name, path, I, h, group, "mlp_out", count))
        elif a.mlp_kind == "gated" and len(mlp) == 2:  # fused gate+up (Phi-3, ChatGLM)
            out.append(LinearShape(name, path, h, 2 * I, group, "mlp_in", count))
        else:
            out.append(LinearShape(name, path, h, I, group, "mlp_in", count))
    if a.is_moe and a.router_module:
        rpath = f"{a.mlp_container}.{a.router_module}" if a.mlp_container else a.router_module
        out.append(LinearShape(a.router_module, rpath, h, a.num_experts, "router", "router"))
    return tuple(out)


# ---- catalog -------------------------------------------------------------------------------
def _mlp_kind(text: str) -> str:
    return "gated" if str(text).startswith("gated") else "plain"


def _from_record(rec: dict[str, Any]) -> Architecture:
    lm = rec.get("linear_modules") or {}
    model_type = rec.get("model_type", "")
    attn_c, mlp_c = _CONTAINERS.get(model_type, ("self_attn", "mlp"))
    moe = rec.get("moe") or {}
    num_experts = int(moe.get("num_local_experts") or moe.get("num_experts")
                      or moe.get("n_routed_experts") or 0)
    router = None
    if num_experts:
        router = "gate"
        if model_type in ("qwen3_moe", "qwen2_moe"):
            mlp_c = "mlp"
    norm_text = str(rec.get("norm", "rmsnorm"))
    norms = 1 if ("one shared" in norm_text or model_type in ("phi", "gptj")) else 2
    if "x4 per layer" in norm_text:
        norms = 4  # Gemma-2: pre/post attention and pre/post MLP norms (the catalog's norm text)
    if model_type == "falcon" and rec.get("num_key_value_heads") == 1:
        norms = 1  # falcon-7b: one input_layernorm for the parallel attention + MLP
    inter = int(moe.get("expert_intermediate_size") or moe.get("moe_intermediate_size")
                or rec["intermediate_size"])
    tie = rec.get("tie_word_embeddings")
    from lintlora.estimate.seq2seq import facts_from_record

    enc_dec = facts_from_record(rec)
    arch = Architecture(
        name=rec["name"],
        hf_id=rec["hf_id"],
        source="; ".join(rec.get("sources", [])) or "lintlora catalog",
        model_type=model_type,
        hidden_size=int(rec["hidden_size"]),
        num_hidden_layers=int(rec["num_hidden_layers"]),
        num_attention_heads=int(rec["num_attention_heads"]),
        num_key_value_heads=int(rec.get("num_key_value_heads") or rec["num_attention_heads"]),
        head_dim=int(rec.get("head_dim") or rec["hidden_size"] // rec["num_attention_heads"]),
        intermediate_size=inter,
        vocab_size=int(rec["vocab_size"]),
        tie_word_embeddings=tie,
        mlp_kind=_mlp_kind(rec.get("mlp_kind", "gated")),
        norm="layernorm" if "layernorm" in norm_text else "rmsnorm",
        norms_per_layer=norms,
        attention_modules=tuple(lm.get("attention") or ("q_proj", "k_proj", "v_proj", "o_proj")),
        mlp_modules=tuple(lm.get("mlp") or ("gate_proj", "up_proj", "down_proj")),
        embedding_name=lm.get("embedding") or "model.embed_tokens",
        lm_head_name=lm.get("lm_head") or "lm_head",
        extra_embedding_names=tuple(lm.get("extra_embeddings") or ()),
        layer_path=lm.get("layer_path") or "model.layers.{i}",
        attention_container=attn_c,
        mlp_container=mlp_c,
        num_experts=num_experts,
        num_experts_per_tok=int(moe.get("num_experts_per_tok") or 0),
        router_module=router,
        peft_default_targets=(tuple(rec["peft_default_lora_targets"])
                              if rec.get("peft_default_lora_targets") else None),
        params_total=int(rec.get("params_total_computed") or 0),
        max_position_embeddings=rec.get("max_position_embeddings"),
        attention_bias=bool(rec.get("attention_bias")),
        aliases=tuple(rec.get("aliases", ())),
        stored_quant=_stored_quant(rec.get("quantization_config"), f"catalog record {rec['hf_id']}"),
        encoder_decoder=enc_dec,
    )
    arch = _layout(arch, rec)
    if tie is None and arch.params_total:
        # tying not established by a source: take the reading the catalog's count was made with
        untied = replace(arch, tie_word_embeddings=False, params_total=0).total_params
        tied = replace(arch, tie_word_embeddings=True, params_total=0).total_params
        arch = replace(arch, tie_word_embeddings=abs(tied - arch.params_total) <= abs(untied - arch.params_total))
    return arch


def _stored_quant(qc: Any, source: str) -> Any:
    """A ``quantization_config`` mapping read (:mod:`lintlora.estimate.stored_quant`)."""
    from lintlora.estimate.stored_quant import from_quantization_config

    return from_quantization_config(qc, source)


def _with_name_quant(arch: Architecture, name: str) -> Architecture:
    """``arch`` found in the catalog under ``name``, with the storage the id's conventions say
    (``-AWQ``, ``-bnb-4bit``...; :func:`lintlora.estimate.stored_quant.from_name`) when the record
    has none of the same method, and none for an id naming a 16-bit release."""
    from lintlora.estimate.stored_quant import SIXTEEN_BIT, from_name

    said = from_name(name)
    if said is SIXTEEN_BIT:
        return replace(arch, stored_quant=None) if arch.stored_quant is not None else arch
    if said is None or (arch.stored_quant is not None and arch.stored_quant.method == said.method):
        return arch
    return replace(arch, stored_quant=said)


def _layout(arch: Architecture, cfg: dict[str, Any], record: bool = True) -> Architecture:
    """The block layout of a MoE/MLA family with modules of its own
    (:mod:`lintlora.estimate.moe_shapes`); other architectures unchanged."""
    from lintlora.estimate import moe_shapes

    if arch.model_type not in moe_shapes.LAYOUT_TYPES:
        return arch
    return moe_shapes.apply_layout(arch, moe_shapes.record_config(cfg) if record else cfg)


_SUFFIXES = ("-unsloth-bnb-4bit", "-bnb-4bit", "-4bit", "-8bit", "-gptq", "-awq", "-int4", "-int8", "-fp8",
             "-instruct", "-chat", "-it", "-hf", "-base", "-bf16", "-fp16")


def _norm_name(name: str) -> str:
    """Lower-case, drop the org and common variant suffixes (``-Instruct``, ``-bnb-4bit``)."""
    s = name.strip().lower().rstrip("/")
    s = s.rsplit("/", 1)[-1]
    changed = True
    while changed:
        changed = False
        for suf in _SUFFIXES:
            if s.endswith(suf) and len(s) > len(suf):
                s = s[: -len(suf)]
                changed = True
    return s.replace("_", "-").replace(".", "-")


# The catalog's files, read in this order (the first record naming an id wins): the original
# catalog, then one file per family group added later (each record cites its own sources).
_CATALOG_FILES = ("models.json", "models_dense_2025.json", "models_moe.json", "models_seq2seq.json")


@lru_cache(maxsize=1)
def _records() -> tuple[dict[str, Any], ...]:
    """The records of the catalog files ``lintlora/data/models*.json`` (:data:`_CATALOG_FILES`),
    read once (``pkgutil.get_data``: the package's own loader, so an installed zip works too;
    ``importlib.resources`` would cost a one-file run ~7 ms more to import).

    Raises:
        OSError: a catalog file cannot be read (a broken installation).
    """
    records: list[dict[str, Any]] = []
    for name in _CATALOG_FILES:
        data = pkgutil.get_data("lintlora", f"data/{name}")
        if data is None:  # pragma: no cover - a loader that cannot read data files
            raise OSError(f"lintlora/data/{name} cannot be read")
        records.extend(json.loads(data))
    return tuple(records)


@lru_cache(maxsize=None)
def _architecture(index: int) -> Architecture:
    """The :class:`Architecture` of record ``index``, built on its first use (one object per
    record, so every lookup of a model returns the same one)."""
    return _from_record(_records()[index])


def _record_ids(rec: dict[str, Any]) -> list[str]:
    ids = [rec["hf_id"], *rec.get("aliases", ())]
    ids += [x["id"] for x in rec.get("same_architecture_ids", ()) if isinstance(x, dict)]
    return ids


@lru_cache(maxsize=1)
def _exact_index() -> dict[str, int]:
    """Lower-cased hub id, alias or same-architecture id -> record index (the first record
    naming an id wins)."""
    exact: dict[str, int] = {}
    for index, rec in enumerate(_records()):
        for i in _record_ids(rec):
            exact.setdefault(i.lower(), index)
    return exact


@lru_cache(maxsize=1)
def _loose_index() -> dict[str, int]:
    """Normalised name (:func:`_norm_name`) of every id and display name -> record index; built
    only when a name is not found exactly."""
    loose: dict[str, int] = {}
    for index, rec in enumerate(_records()):
        for i in _record_ids(rec):
            loose.setdefault(_norm_name(i), index)
        loose.setdefault(_norm_name(rec["name"]), index)
    return loose


def catalog() -> tuple[Architecture, ...]:
    """Every catalogued architecture."""
    return tuple(_architecture(index) for index in range(len(_records())))


def _lookup(name: str) -> Architecture | None:
    """The catalog record ``name`` names (exactly, or by its normalised name); see
    :func:`_lookup_noted` for the same lookup with the sentence saying how."""
    return _lookup_noted(name, with_note=False)


@lru_cache(maxsize=1)
def _all_ids() -> list[tuple[str, int]]:
    """Every catalogued hub id, alias and same-architecture id with its record index."""
    return [(i, index) for index, rec in enumerate(_records()) for i in _record_ids(rec)]


def _same_architecture_note(index: int, key: str) -> str | None:
    """The catalog's note for ``key`` when it is one of record ``index``'s same-architecture ids."""
    for entry in _records()[index].get("same_architecture_ids", ()):
        if isinstance(entry, dict) and str(entry.get("id", "")).lower() == key:
            return str(entry.get("note") or "same shapes")
    return None


def _lookup_noted(name: str, with_note: bool = True) -> Architecture | None:
    """The catalog record ``name`` resolves to, carrying in :attr:`Architecture.resolved_by`
    how, when it was not an exact hub id or alias.

    In order: an exact id or alias (no note); a same-architecture id (the record's note, e.g.
    "vocab 32016"); a litgpt checkpoint folder ``.../<org>/<name>``; a ModelScope mirror id
    (:func:`lintlora.estimate.model_names.modelscope_original`: a reading by name, said so);
    the normalised name, with the org and variant suffixes (:data:`_SUFFIXES`) removed (a guess
    by name, said so).
    """
    from lintlora.estimate.model_names import modelscope_original

    exact = _exact_index()
    shown = name.strip()
    key = shown.lower().rstrip("/")

    def noted(index: int, note: str) -> Architecture:
        arch = _architecture(index)
        return replace(arch, resolved_by=note) if with_note and note else arch

    if key in exact:
        index = exact[key]
        same = _same_architecture_note(index, key)
        rec = _architecture(index)
        return noted(index, "" if same is None else (
            f"model {shown!r} is not catalogued itself: priced with the shapes of {rec.name} "
            f"({rec.hf_id}), which the catalog records as its architecture ({same})"))
    # litgpt checkpoint dir: .../checkpoints/<org>/<name>
    parts = [p for p in re.split(r"[\\/]", key) if p]
    if len(parts) >= 2 and "/".join(parts[-2:]) in exact:
        return _architecture(exact["/".join(parts[-2:])])
    mirror = modelscope_original(shown, _all_ids()) if len(parts) == 2 else None
    if mirror is not None:
        index, hub_id = mirror
        rec = _architecture(index)
        return noted(index, f"model {shown!r} read as the Hugging Face repository {hub_id} "
                            f"({rec.name}): ModelScope's {parts[0]!r} organisation mirrors hub "
                            f"models under the same repository name (a reading by name)")
    index = _loose_index().get(_norm_name(key))
    if index is None:
        return None
    rec = _architecture(index)
    return noted(index, f"model {shown!r} is not a catalogued id: taken as {rec.name} ({rec.hf_id}) "
                        f"by its name with the organisation and the variant suffixes (-Instruct, "
                        f"-Chat, -it, -hf, -bnb-4bit, ...) removed, a guess by name; give "
                        f"--model-config path/config.json for the model's own shapes")


# torchtune builders: torchtune/models/<family>/_model_builders.py names
# (lora_llama3_1_8b, qlora_llama3_1_8b, llama3_1_8b, lora_qwen2_5_7b_instruct, lora_phi3_mini ...).
_TORCHTUNE = {
    ("llama2", "7b"): "meta-llama/Llama-2-7b-hf", ("llama2", "13b"): "meta-llama/Llama-2-13b-hf",
    ("llama2", "70b"): "meta-llama/Llama-2-70b-hf",
    ("llama3", "8b"): "meta-llama/Meta-Llama-3-8B", ("llama3", "70b"): "meta-llama/Meta-Llama-3-70B",
    ("llama3_1", "8b"): "meta-llama/Llama-3.1-8B", ("llama3_1", "70b"): "meta-llama/Llama-3.1-70B",
    ("llama3_2", "1b"): "meta-llama/Llama-3.2-1B", ("llama3_2", "3b"): "meta-llama/Llama-3.2-3B",
    ("llama3_3", "70b"): "meta-llama/Llama-3.3-70B-Instruct",
    ("mistral", "7b"): "mistralai/Mistral-7B-v0.1",
    ("gemma", "2b"): "google/gemma-2b", ("gemma", "7b"): "google/gemma-7b",
    ("gemma2", "2b"): "google/gemma-2-2b", ("gemma2", "9b"): "google/gemma-2-9b",
    ("gemma2", "27b"): "google/gemma-2-27b",
    ("qwen2_5", "0_5b"): "Qwen/Qwen2.5-0.5B", ("qwen2_5", "1_5b"): "Qwen/Qwen2.5-1.5B",
    ("qwen2_5", "3b"): "Qwen/Qwen2.5-3B", ("qwen2_5", "7b"): "Qwen/Qwen2.5-7B",
    ("qwen2_5", "14b"): "Qwen/Qwen2.5-14B", ("qwen2_5", "32b"): "Qwen/Qwen2.5-32B",
    ("qwen2_5", "72b"): "Qwen/Qwen2.5-72B",
    ("qwen2", "0_5b"): "Qwen/Qwen2-0.5B", ("qwen2", "1_5b"): "Qwen/Qwen2-1.5B",
    ("qwen2", "7b"): "Qwen/Qwen2-7B",
    ("qwen3", "0_6b"): "Qwen/Qwen3-0.6B", ("qwen3", "1_7b"): "Qwen/Qwen3-1.7B",
    ("qwen3", "4b"): "Qwen/Qwen3-4B", ("qwen3", "8b"): "Qwen/Qwen3-8B",
    ("qwen3", "14b"): "Qwen/Qwen3-14B", ("qwen3", "32b"): "Qwen/Qwen3-32B",
    ("phi3", "mini"): "microsoft/Phi-3-mini-4k-instruct", ("phi4", "14b"): "microsoft/phi-4",
    ("phi4", "mini"): "microsoft/Phi-4-mini-instruct",
}
_TT_RE = (r"(?:^|\.)(?:q?lora_|dora_|qdora_)?(llama2|llama3_1|llama3_2|llama3_3|llama3|mistral|"
          r"gemma2|gemma|qwen2_5|qwen2|qwen3|phi3|phi4)_([0-9_]+b|mini)(?:_[a-z]+)?$")
"""A torchtune model builder's name (a string: ``re`` compiles it on first use, for torchtune
configs only)."""


def _torchtune(name: str) -> Architecture | None:
    leaf = name.strip().rsplit(".", 1)[-1] if name.startswith("torchtune") else name.strip()
    m = re.search(_TT_RE, leaf)
    if not m:
        return None
    hf = _TORCHTUNE.get((m.group(1), m.group(2)))
    return _lookup(hf) if hf else None


# ---- local configs ---------------------------------------------------------------------------
def from_hf_config(cfg: dict[str, Any], *, name: str, source: str) -> Architecture:
    """Build an architecture from a Hugging Face ``config.json`` mapping.

    Reads the standard names and the GPT-2/Falcon/ChatGLM/MoE variants; a vision-language
    config's ``text_config`` is used for the language model.

    Raises:
        UnknownModelError: the mapping lacks the hidden size, layer count or head count.
    """
    stored = _stored_quant(cfg.get("quantization_config"), source)
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        merged = dict(cfg["text_config"])
        merged.setdefault("model_type", cfg.get("model_type", ""))
        if isinstance(cfg.get("vision_config"), dict):  # a frozen tower some layouts count
            merged.setdefault("vision_config", cfg["vision_config"])
        cfg = merged

    def field_of(*names: str) -> tuple[str, Any]:
        """The first of ``names`` set (truthy, as ``cfg.get(a) or cfg.get(b)``), and its value."""
        for n in names:
            v = cfg.get(n)
            if v:
                return n, v
        return names[0], None

    def count(names: tuple[str, ...], default: Any = None, hi_field: str = "") -> int | None:
        key, value = field_of(*names)
        if value is None:
            return default
        lo, hi = FIELD_RANGES[hi_field or names[0]]
        return _whole_number(value, key, lo, hi, source)

    widths = cfg.get("intermediate_size")
    if isinstance(widths, list) and widths and len(widths) <= FIELD_RANGES["num_hidden_layers"][1]:
        # Gemma-3n: one MLP width per block (MatFormer); the largest for the block shapes, the
        # list for the layout's parameter count
        lo, hi = FIELD_RANGES["intermediate_size"]
        sizes = [_whole_number(w, "intermediate_size", lo, hi, source) for w in widths]
        cfg = {**cfg, "intermediate_size": max(sizes), "_intermediate_sizes": sizes}
    get = cfg.get
    h = count(("hidden_size", "n_embd", "d_model"))
    # T5Config: num_layers, num_heads, d_kv, d_ff; BartConfig: encoder_layers,
    # encoder_attention_heads, encoder_ffn_dim (the encoder's; the decoder's: lintlora/estimate/seq2seq.py)
    L = count(("num_hidden_layers", "n_layer", "num_layers", "encoder_layers"))
    a = count(("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"))
    if not (h and L and a):
        raise UnknownModelError(
            f"{source}: not a decoder config lintlora can read (needs hidden_size, "
            f"num_hidden_layers, num_attention_heads)")
    if a > h:
        raise UnknownModelError(f"{source}: `num_attention_heads` ({a}) is larger than "
                                f"`hidden_size` ({h})")
    model_type = get("model_type")
    model_type = model_type if isinstance(model_type, str) and _WORD.fullmatch(model_type) else ""
    kv = count(("num_key_value_heads", "multi_query_group_num", "n_head_kv"))
    if kv is None and get("multi_query") is True:
        kv = 1
    kv = kv or a
    if kv > a:
        raise UnknownModelError(f"{source}: `num_key_value_heads` ({kv}) is larger than "
                                f"`num_attention_heads` ({a})")
    head_dim = count(("head_dim", "kv_channels", "d_kv")) or h // a
    moe_n = count(("num_local_experts", "num_experts", "n_routed_experts"), 0)
    inter = count(("moe_intermediate_size",), hi_field="intermediate_size") if moe_n else None
    inter = inter or count(("intermediate_size", "ffn_hidden_size", "n_inner", "d_ff", "encoder_ffn_dim")) or 4 * h
    act = get("hidden_act") or get("activation_function") or "silu"
    act = act if isinstance(act, str) and len(act) <= 64 else "silu"
    gated = model_type not in ("gpt2", "gpt_neox", "falcon", "bloom", "opt", "phi", "gptj", "starcoder2", "qwen") \
        and "gelu" not in act or model_type.startswith("gemma")
    if model_type == "qwen":  # Qwen-1 remote code: config intermediate_size is 2x the branch width
        gated, inter = True, inter // 2
    vocab = count(("vocab_size", "padded_vocab_size"), 32000)
    tie = get("tie_word_embeddings")
    tie = tie if isinstance(tie, bool) else None
    if tie is None and model_type in ("gpt2", "gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n",
                                      "gemma3n_text", "opt", "bloom", "t5", "bart"):
        tie = True  # T5Config / BartConfig: PretrainedConfig's tie_word_embeddings=True
    per_tok = count(("num_experts_per_tok",), 0)
    if per_tok > max(moe_n, 1):
        raise UnknownModelError(f"{source}: `num_experts_per_tok` ({per_tok}) is larger than "
                                f"the number of experts ({moe_n})")
    context = count(("max_position_embeddings", "n_positions", "seq_length"),
                    hi_field="max_position_embeddings")
    rec_like = next((x for x in catalog() if x.model_type == model_type), None)
    attn_mods = rec_like.attention_modules if rec_like else ("q_proj", "k_proj", "v_proj", "o_proj")
    mlp_mods = rec_like.mlp_modules if rec_like else (("gate_proj", "up_proj", "down_proj") if gated
                                                       else ("fc1", "fc2"))
    base = rec_like or Architecture(name="", hf_id="", source="", model_type=model_type,
                                    hidden_size=h, num_hidden_layers=L, num_attention_heads=a,
                                    num_key_value_heads=kv, head_dim=head_dim,
                                    intermediate_size=inter, vocab_size=vocab)
    fields = dict(
        name=name, hf_id=name, source=source, model_type=model_type, hidden_size=h,
        num_hidden_layers=L, num_attention_heads=a, num_key_value_heads=kv, head_dim=head_dim,
        intermediate_size=inter, vocab_size=vocab, tie_word_embeddings=tie,
        mlp_kind="gated" if gated else "plain", attention_modules=attn_mods, mlp_modules=mlp_mods,
        num_experts=moe_n, num_experts_per_tok=per_tok,
        router_module="gate" if moe_n else None, params_total=0,
        max_position_embeddings=context,
        rough=False, aliases=(), stored_quant=stored, block_shapes=(), dense_layers=(), dense_shapes=(),
        shared_expert_intermediate_size=0, frozen_tower_params=0, residual_streams=1)
    fields.update(_seq2seq_fields(cfg, model_type, L, count))
    return _layout(replace(base, **fields), cfg, record=False)


def _seq2seq_fields(cfg: dict[str, Any], model_type: str, layers: int, count: Any) -> dict[str, Any]:
    """The :class:`Architecture` fields of a T5/mT5/BART ``config.json`` (encoder-decoder facts,
    module paths; :mod:`lintlora.estimate.seq2seq`), ``{"encoder_decoder": None}`` otherwise."""
    from lintlora.estimate.seq2seq import SEQ2SEQ_MODEL_TYPES, facts_from_hf_config

    if model_type not in SEQ2SEQ_MODEL_TYPES:
        return {"encoder_decoder": None}
    facts = facts_from_hf_config(cfg, model_type, layers, count)
    t5 = facts.family == "t5"
    return {"encoder_decoder": facts, "mlp_kind": "gated" if facts.ffn == "gated-gelu" else "plain",
            "embedding_name": "shared" if t5 else "model.shared", "lm_head_name": "lm_head",
            "layer_path": facts.decoder_layer_path, "norm": "rmsnorm" if t5 else "layernorm",
            "attention_modules": ("q", "k", "v", "o") if t5 else ("q_proj", "k_proj", "v_proj", "out_proj"),
            "mlp_modules": (("wi_0", "wi_1", "wo") if facts.ffn == "gated-gelu" else ("wi", "wo")) if t5
            else ("fc1", "fc2"),
            "peft_default_targets": ("q", "v") if t5 else ("q_proj", "v_proj")}


FIELD_RANGES: dict[str, tuple[int, int]] = {
    # the largest published decoders, for scale: Llama-3.1-405B (hidden 16384, 126 layers,
    # 128 heads, 8 KV heads, MLP 53248; meta-llama/Llama-3.1-405B config.json), PaLM-540B
    # (hidden 18432), Gemma 3 (vocab 262144, head_dim 256), DeepSeek-V3 (256 routed experts,
    # 8 per token), Llama 4 Scout (10M tokens of context). Each bound leaves at least 8x
    # headroom above them, and keeps every product the estimator forms (h*h*L, V*h, E*h*I)
    # far inside float precision.
    "hidden_size": (1, 1 << 18),
    "num_hidden_layers": (1, 1 << 12),
    "num_attention_heads": (1, 1 << 14),
    "num_key_value_heads": (1, 1 << 14),
    "head_dim": (1, 1 << 14),
    "intermediate_size": (1, 1 << 21),
    "vocab_size": (1, 1 << 23),
    "num_local_experts": (0, 1 << 14),
    "num_experts_per_tok": (0, 1 << 14),
    "max_position_embeddings": (1, 1 << 30),
}
"""The range each architecture field of a local ``config.json`` / litgpt ``model_config.yaml``
must lie in (inclusive; keyed by the Hugging Face name, its aliases share it). A value outside,
or not a whole number, is a :class:`UnknownModelError` naming the file and the key."""

_WORD = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""A ``model_type`` kept from a config file (anything else is treated as unnamed)."""


def _kind_of(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _whole_number(value: Any, key: str, lo: int, hi: int, source: str) -> int:
    """``value`` as an int in ``lo..hi``, else :class:`UnknownModelError` naming ``key``.

    Only ints and integral finite floats are accepted (``4096.0``); a string, list, boolean,
    ``inf``/``nan`` (JSON's ``1e400``, ``NaN``) or fraction is refused, without quoting a
    string (it came from a file)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float):
            shown = "not finite" if not math.isfinite(value) else f"{value:g}, not a whole number"
            raise UnknownModelError(f"{source}: `{key}` must be a whole number ({shown})")
        raise UnknownModelError(f"{source}: `{key}` must be a whole number, got {_kind_of(value)}")
    if not lo <= value <= hi:
        shown = str(value) if value.bit_length() <= 64 else f"a {value.bit_length()}-bit number"
        raise UnknownModelError(f"{source}: `{key}` = {shown} is outside the range lintlora "
                                f"accepts ({lo} to {hi})")
    return value


MODEL_CONFIG_MAX_BYTES = 4 * 2**20
"""The most bytes read of a local model ``config.json`` or litgpt ``model_config.yaml``: 4 MiB.
Real ones are a few KB (Llama-3.1-405B's is under 1 KB; label maps of classification heads
reach some hundred KB); parsing 4 MiB of JSON takes well under a second. A larger file is an
:class:`UnknownModelError` ("above the limit"), never read whole."""


def _read_model_file(path: Path, confined: bool) -> str:
    """The text of a model config file, read bounded (:func:`lintlora.safeio.read_bounded`).

    ``confined``: the path was checked to lie in the project, links resolved, so the resolved
    path is opened without following a link (a Hugging Face cache's ``config.json`` is a link
    to a blob, so cache files are read following links).

    Raises:
        UnknownModelError: not a regular file, above :data:`MODEL_CONFIG_MAX_BYTES`,
            unreadable, or not UTF-8; the message names the file.
    """
    from lintlora import safeio

    target = os.path.realpath(path) if confined else path
    try:
        return safeio.read_bounded(target, MODEL_CONFIG_MAX_BYTES,
                                   follow_links=not confined).decode("utf-8")
    except UnicodeDecodeError:
        raise UnknownModelError(f"cannot read model config {path}: not UTF-8 text") from None
    except OSError as exc:
        raise UnknownModelError(f"cannot read model config {path}: "
                                f"{exc.strerror or exc}") from None


def _shown_name(value: Any, fallback: str) -> str:
    """A model name read from a config file (``_name_or_path``, litgpt's ``name``) when it may
    be shown: a hub id (:func:`lintlora.file_values.quotable` with no key; the field often
    holds a path on the machine that saved the model), else ``fallback`` (the name the user
    or the script gave)."""
    from lintlora.file_values import quotable

    if isinstance(value, str) and value and quotable(None, value):
        return value
    return fallback


_LITGPT_COUNTS = {"n_embd": "hidden_size", "n_head": "num_attention_heads",
                  "n_layer": "num_hidden_layers", "n_query_groups": "num_key_value_heads",
                  "head_size": "head_dim", "intermediate_size": "intermediate_size",
                  "padded_vocab_size": "vocab_size", "vocab_size": "vocab_size"}


def _from_litgpt_yaml(path: Path, confined: bool = False) -> Architecture:
    # the bounded loader (node, depth and alias-expansion limits) of the extraction layer: a
    # model_config.yaml is as untrusted as a training config
    from lintlora.extract import ExtractError
    from lintlora.extract.yaml_loader import load_config_text, to_python

    text = _read_model_file(path, confined)
    try:
        cfg = to_python(load_config_text(text, str(path))) or {}
    except ExtractError as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise UnknownModelError(f"cannot read litgpt model config {path}{where}: "
                                f"{exc.message}") from None
    except ValueError:
        raise UnknownModelError(f"litgpt model config {path} is too large to analyse") from None
    if not isinstance(cfg, dict):
        raise UnknownModelError(f"litgpt model config {path}: expected a mapping of settings, "
                                f"got {_kind_of(cfg)}")
    source = f"litgpt model_config.yaml at {path}"
    counts: dict[str, int] = {}
    for key, hf_key in _LITGPT_COUNTS.items():
        if cfg.get(key) is not None:
            lo, hi = FIELD_RANGES[hf_key]
            counts[key] = _whole_number(cfg[key], key, lo, hi, source)
    n_embd, n_head = counts.get("n_embd", 4096), counts.get("n_head", 32)
    mlp = cfg.get("mlp_class_name", cfg.get("_mlp_class", "GptNeoxMLP"))
    mlp = mlp if isinstance(mlp, str) else "GptNeoxMLP"
    hf = {
        "model_type": "llama" if mlp in ("LLaMAMLP", "GemmaMLP") else "gpt_neox",
        "hidden_size": n_embd, "num_hidden_layers": counts.get("n_layer", 16),
        "num_attention_heads": n_head,
        "num_key_value_heads": counts.get("n_query_groups") or n_head,
        "head_dim": counts.get("head_size") or n_embd // n_head,
        "intermediate_size": counts.get("intermediate_size") or 4 * n_embd,
        "vocab_size": counts.get("padded_vocab_size") or counts.get("vocab_size") or 50254,
        "hidden_act": "silu" if mlp in ("LLaMAMLP",) else "gelu",
    }
    name = _shown_name(cfg.get("name"), path.parent.name)
    return from_hf_config(hf, name=name, source=source)


def _read_local(path: Path, label: str, confined: bool = False,
                reads: list | None = None) -> Architecture | None:
    """The architecture in a local model folder or config file, ``None`` when it holds none.

    ``confined``: the path was checked to lie in the linted file's project (see
    :func:`resolve_architecture`); files are then opened by their resolved path, links not
    followed.

    Raises:
        UnknownModelError: the config cannot be read or is not one lintlora can use (the
            message names the file and the key).
    """
    reads = _note(reads, path)  # what was consulted, present or not (ArchitectureLookup.inputs)
    if path.is_dir():
        _note(reads, path / "config.json", path / "model_config.yaml")
        if (path / "config.json").is_file():
            path = path / "config.json"
        elif (path / "model_config.yaml").is_file():
            return _from_litgpt_yaml(path / "model_config.yaml", confined)
        else:
            return _through_base_model(path, label, confined, reads=reads)
    if not path.exists():
        return None
    if path.suffix in (".yaml", ".yml"):
        return _from_litgpt_yaml(path, confined)
    text = _read_model_file(path, confined)
    try:
        cfg = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = (f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
                  if isinstance(exc, json.JSONDecodeError) else "not JSON lintlora can read")
        raise UnknownModelError(f"cannot read model config {path}: {detail}") from None
    if not isinstance(cfg, dict):
        raise UnknownModelError(f"model config {path} is not a JSON object")
    name = _shown_name(cfg.get("_name_or_path"), label)
    # a local copy of a catalogued model keeps the catalog's module facts and name
    return from_hf_config(cfg, name=name, source=f"local config {path}")


def _hf_cache_dirs() -> list[Path]:
    dirs: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    dirs.append(Path.home() / ".cache" / "huggingface" / "hub")
    return dirs


def _from_hf_cache(hub_id: str, depth: int = 0, reads: list | None = None) -> Architecture | None:
    if "/" not in hub_id or hub_id.count("/") != 1:
        return None
    folder = "models--" + hub_id.replace("/", "--")
    for d in _hf_cache_dirs():
        snaps = d / folder / "snapshots"
        reads = _note(reads, snaps)  # present or not: consulted (ArchitectureLookup.inputs)
        if not snaps.is_dir():
            continue
        for snapshot in snaps.iterdir():
            _note(reads, snapshot / "config.json")
        configs = sorted((p / "config.json" for p in snaps.iterdir() if (p / "config.json").is_file()),
                         key=lambda p: p.stat().st_mtime, reverse=True)
        if configs:
            return _read_local(configs[0], hub_id, reads=reads)
        # an adapter or a card-only snapshot: the base it names (newest snapshot first)
        for snapshot in sorted((p for p in snaps.iterdir() if p.is_dir()),
                               key=lambda p: p.stat().st_mtime, reverse=True)[:_MAX_SNAPSHOTS]:
            arch = _through_base_model(snapshot, hub_id, False, depth, reads=reads)
            if arch is not None:
                return arch
    return None


_MAX_SNAPSHOTS = 8
"""The most snapshots of one cached repository searched for a base model's name (a cache
holds one per revision downloaded; the newest come first)."""

_MAX_BASE_DEPTH = 2
"""How many fine-tune -> base links are followed (an adapter of a fine-tune of a base is two)."""


def _through_base_model(folder: Path, label: str, confined: bool,
                        depth: int = 0, reads: list | None = None) -> Architecture | None:
    """The architecture of the base model a fine-tune's folder names in its own files
    (:func:`lintlora.estimate.model_names.base_model_named_in`: ``adapter_config.json``'s
    ``base_model_name_or_path`` or the model card's ``base_model:``), resolved through the
    catalog or the local Hugging Face cache (never a path, never the network); ``None`` when the
    folder names none or the base is unknown. The sentence saying so is in ``resolved_by``."""
    from lintlora.estimate.model_names import base_model_named_in

    if depth >= _MAX_BASE_DEPTH:
        return None
    named = base_model_named_in(folder, lambda p: _read_model_file(p, confined), reads=reads)
    if named is None:
        return None
    base, file_name = named
    arch = _lookup_noted(base) or _from_hf_cache(base, depth + 1, reads=reads)
    if arch is None:
        return None
    key = "base_model_name_or_path" if file_name.endswith(".json") else "base_model"
    note = (f"model {label!r}: a fine-tune of {base} (its {file_name} names it as `{key}`), "
            f"priced with the base's shapes ({arch.name}); a fine-tune that resized its "
            f"vocabulary or changed shapes is not seen")
    return replace(arch, resolved_by=note + (f"; {arch.resolved_by}" if arch.resolved_by else ""))


# ---- rough stand-in ----------------------------------------------------------------------------
# Llama-family shapes by size class (Llama-2 7B/13B/70B, TinyLlama, Llama-3.2-3B, Yi-34B;
# catalog records), used to build a stand-in whose parameter count matches the user's.
_ROUGH_SHAPES = ((1.1e9, 2048, 22), (3e9, 3072, 28), (7e9, 4096, 32), (13e9, 5120, 40),
                 (34e9, 7168, 60), (70e9, 8192, 80))


def format_count(n: float) -> str:
    """A count with a K/M/B/T suffix and up to four significant digits: ``7e9`` -> ``"7B"``,
    ``1e12`` -> ``"1T"``, ``1.5e8`` -> ``"150M"``; below a thousand the plain number."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.4g}{unit}"
    return f"{n:g}"


def rough_architecture(params: float, name: str | None = None) -> Architecture:
    """A Llama-shaped stand-in with ``params`` parameters (vocab 32000, MHA, gated MLP).

    The hidden size and depth come from the nearest Llama-family size class; the MLP width is
    solved so that ``2·V·h + L·(4h² + 3·h·I) ≈ params``. Everything built on it is labelled
    rough.

    Raises:
        UnknownModelError: ``params`` is not positive.
    """
    if not params or params <= 0:
        raise UnknownModelError("--params must be a positive parameter count (e.g. 7B)")
    _, h, L = min(_ROUGH_SHAPES, key=lambda t: abs(math.log(params / t[0])))
    V = 32000
    inter = max(h, int((params - 2 * V * h - L * 4 * h * h) / (3 * h * L)))
    label = name or f"{format_count(params)}-parameter model"
    return Architecture(
        name=f"{label} (rough, Llama-shaped)", hf_id=name or "", model_type="llama",
        source=f"rough: a Llama-shaped stand-in for {format_count(params)} parameters (hidden {h}, "
               f"{L} layers, MLP {inter}, vocab {V}); not a real config",
        hidden_size=h, num_hidden_layers=L, num_attention_heads=h // 128, num_key_value_heads=h // 128,
        head_dim=128, intermediate_size=inter, vocab_size=V, tie_word_embeddings=False,
        params_total=int(params), rough=True)


# ---- resolution ----------------------------------------------------------------------------------
def _how_to(name: str | None) -> str:
    what = f"unknown model {name!r}" if name else "the model is not named in the file"
    return (f"{what}: lintlora has no architecture for it (built-in catalog, local path, or the "
            f"local Hugging Face cache). Supply it with --model HUB_ID (a catalogued id such as "
            f"meta-llama/Llama-3.1-8B), --model-config path/config.json, or --params 7B for a "
            f"rough estimate.")


def _note(reads: list | None, *paths: "Path | str") -> list:
    """Append ``paths`` (absolute) to ``reads`` (a new list when ``None``) and return it: the
    files and folders a lookup consulted, present or not, returned as data by
    :func:`lookup_architecture` (the results cache keys a result by their contents)."""
    if reads is None:
        reads = []
    for p in paths:
        reads.append(os.path.abspath(os.fspath(p)))
    return reads


@dataclass(frozen=True)
class ArchitectureLookup:
    """What :func:`lookup_architecture` found: the ``architecture`` (``None`` when nothing
    resolves), the ``problem`` (the :class:`UnknownModelError` message, or ``None``), and the
    ``inputs``: every local file and folder consulted, absolute, present or not, in order
    (a ``config.json``, a Hugging Face cache ``snapshots`` folder, ``adapter_config.json``)."""

    architecture: "Architecture | None"
    problem: str | None
    inputs: tuple[str, ...] = ()


def lookup_architecture(
    name_or_path: str | None,
    *,
    framework: str | None = None,
    model_config: str | None = None,
    params: float | None = None,
    base_dir: str | None = None,
    root: str | None = None,
) -> ArchitectureLookup:
    """:func:`resolve_architecture` returning, as data, what it consulted; never raises
    :class:`UnknownModelError` (its message is :attr:`ArchitectureLookup.problem`)."""
    reads: list[str] = []
    try:
        arch = _resolve(name_or_path, framework=framework, model_config=model_config,
                        params=params, base_dir=base_dir, root=root, reads=reads)
    except UnknownModelError as exc:
        return ArchitectureLookup(None, str(exc), tuple(reads))
    return ArchitectureLookup(arch, None, tuple(reads))


def resolve_architecture(
    name_or_path: str | None,
    *,
    framework: str | None = None,
    model_config: str | None = None,
    params: float | None = None,
    base_dir: str | None = None,
    root: str | None = None,
) -> Architecture:
    """Resolve a model name, path or framework identity to an :class:`Architecture`.

    Args:
        name_or_path: hub id, alias, local directory / ``config.json`` path, torchtune
            component, litgpt checkpoint dir; ``None`` when the file does not name it.
        framework: the setup's framework (``torchtune`` makes component names preferred).
        model_config: a local ``config.json`` that overrides everything else (the user's
            ``--model-config``, or a configured default already checked by the caller; not
            confined to ``root``).
        params: a parameter count for a rough stand-in (used when nothing else resolves,
            or alone).
        base_dir: the linted file's path (or its folder); relative paths are tried there too.
        root: where a local path in ``name_or_path`` must lie (the linted file's project,
            :func:`lintlora.safeio.confinement_root`), when the name comes from the linted
            files; ``None`` (a name the user gave) follows any path. A path outside is not
            read: the error says "not followed: outside the project".

    Raises:
        UnknownModelError: nothing resolves; the message says how to supply the model.
    """
    return _resolve(name_or_path, framework=framework, model_config=model_config,
                    params=params, base_dir=base_dir, root=root, reads=None)


def _resolve(name_or_path: str | None, *, framework: str | None, model_config: str | None,
             params: float | None, base_dir: str | None, root: str | None,
             reads: list | None) -> Architecture:
    """:func:`resolve_architecture`, appending what it consults to ``reads`` (see
    :func:`_note`)."""
    if model_config:
        arch = _read_local(Path(model_config).expanduser(), str(model_config), reads=reads)
        if arch is None:
            raise UnknownModelError(f"--model-config {model_config}: no such config.json")
        return arch
    name = name_or_path.strip() if isinstance(name_or_path, str) else None
    if not name:
        if params:
            return rough_architecture(params)
        raise UnknownModelError(_how_to(None))
    if framework == "torchtune" or name.startswith("torchtune."):
        arch = _torchtune(name)
        if arch is not None:
            return arch
    # a local path (absolute, relative to cwd, or relative to the linted file)
    candidates = [Path(name) if root is not None else Path(name).expanduser()]
    if base_dir and not Path(name).is_absolute():
        base = Path(base_dir)
        candidates.append((base if base.is_dir() else base.parent) / name)
    from lintlora.safeio import is_within

    outside = False
    for p in candidates:
        _note(reads, p)  # present or not: consulted (ArchitectureLookup.inputs)
        try:
            if p.exists():
                if root is not None and not is_within(p, root):
                    outside = True
                    continue
                arch = _read_local(p, name, confined=root is not None, reads=reads)
                if arch is not None:
                    # a local copy of a catalogued model: keep the catalog's identity
                    known = None if arch.resolved_by else _lookup(p.name)
                    if known is not None and (known.model_type, known.hidden_size,
                                              known.num_hidden_layers) == (
                            arch.model_type, arch.hidden_size, arch.num_hidden_layers):
                        return replace(known, source=f"{arch.source}; matches catalog record "
                                                      f"{known.hf_id}", stored_quant=arch.stored_quant)
                    return arch
        except OSError:
            continue
    arch = _lookup_noted(name)
    if arch is not None:
        return _with_name_quant(arch, name)
    arch = _torchtune(name)
    if arch is not None:
        return arch
    arch = _from_hf_cache(name, reads=reads)
    if arch is not None:
        return arch
    if params:
        return _with_name_quant(rough_architecture(params, name), name)
    if outside:
        raise UnknownModelError(
            f"model path {name!r} not followed: outside the project (lintlora reads only files "
            f"inside the linted file's repository). Supply the model with --model HUB_ID, "
            f"--model-config path/config.json, or --params 7B for a rough estimate.")
    raise UnknownModelError(_how_to(name))
