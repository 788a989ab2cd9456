"""Encoder-decoder models (T5, T5 v1.1, Flan-T5, mT5, T0/mt0, BART): shapes and activations.

A decoder-only :class:`~lintlora.estimate.architecture.Architecture` has one stack of blocks;
an encoder-decoder one carries :class:`Seq2SeqFacts` (``Architecture.encoder_decoder``): an
encoder stack that reads the source (``EstimateInputs.seq_len`` tokens) and a decoder stack that
reads the target (``EstimateInputs.target_seq_len`` tokens) with self-attention and
cross-attention over the encoder output. ``Architecture.num_hidden_layers`` is the encoder's
depth (HF ``T5Config.num_layers``, ``BartConfig.encoder_layers``), ``num_decoder_layers`` the
decoder's.

Module names follow transformers 5.24.0 ``models/t5/modeling_t5.py`` (``encoder.block.{i}.layer.0
.SelfAttention.{q,k,v,o}``; decoder ``layer.1.EncDecAttention.{q,k,v,o}``; feed-forward
``layer.{1|2}.DenseReluDense.{wi,wo}`` or ``{wi_0,wi_1,wo}`` for ``gated-gelu``; no biases;
``shared`` embedding; T5LayerNorm weights only; one ``relative_attention_bias`` table of
``buckets × heads`` in block 0 of each stack) and ``models/bart/modeling_bart.py``
(``model.{encoder,decoder}.layers.{i}.self_attn.{q,k,v,out}_proj`` with biases,
``encoder_attn.*`` in the decoder, ``fc1``/``fc2``, LayerNorms with biases, learned positions of
``max_position_embeddings + 2`` rows per stack, ``layernorm_embedding`` per stack, ``lm_head``
tied to ``model.shared``; ``final_logits_bias`` is a buffer, not a parameter).

peft's default targets (``src/peft/utils/constants.py`` at 0.21.2,
``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``): t5/mt5 ``["q", "v"]``, bart
``["q_proj", "v_proj"]``; matched by name they adapt the encoder's self-attention and the
decoder's self- and cross-attention (peft README: mt0-large with r=8 trains 2,359,296
parameters = 72 attention modules × 2 × 8 × (1024 + 1024)).

The activation model (:func:`seq2seq_activations`) is the bytes autograd keeps, measured on the
CPU with ``bench/seq2seq_saved_tensors.py`` (torch 2.13.0, transformers 5.24.0, peft 0.21.2;
tiny random configs, LoRA r=8 on peft's default targets, dropout through CUDA's fused kernel,
eager attention). The depth differences fitted exactly (residual < 1e-17) to
``constant + a·tokens + b·tokens·length``, per layer:

===========================  ================  ===================  ==========================
variant (h=256, heads=4)     encoder B/token   decoder B/target tok  decoder B/source token
===========================  ================  ===================  ==========================
T5 gated I=704 bf16 p=0.1    15,848 + 20·S     18,940 + 20·T + 20·S  1,808
T5 gated I=704 bf16 p=0      15,336 + 20·S     18,172 + 20·T + 20·S  1,552
T5 gated I=704 fp32 p=0.1    25,864 + 36·S     29,484 + 36·T + 36·S  3,360
T5 relu I=1024 bf16 p=0.1     9,768 + 20·S     12,860 + 20·T + 20·S  1,808
BART I=1024 bf16 p=0.1 sdpa   7,224            9,820                 1,808
===========================  ================  ===================  ==========================

and a per-layer constant (bf16 only) of 2 bytes per ``wo`` weight element plus 2 per LoRA
weight element: autocast casts T5's fp32 ``wo`` (``_keep_in_fp32_modules = ["wo"]``) and the
fp32 adapters to bf16 on every call and the copy is saved for backward (T5 I=704: 376,832 =
704·256·2 + 4·2,048·2 bytes per encoder layer). Every T5 figure above is reproduced exactly by
the parts of :func:`_t5_layer` with eager attention; the SDPA parts are those of the
decoder-only model (``memory.activation_breakdown``, measured by ``bench/saved_tensors.py``).
BART's CPU figure is 1.8% above the parts with a 16-bit LayerNorm (CPU autocast keeps
``layer_norm`` in bf16; CUDA autocast runs it in fp32, which the model prices).
``python bench/seq2seq_saved_tensors.py`` prints the model beside each measurement (CPU policy):
T5 eager within 0.4% per block, BART SDPA within 1.1%; T5 with ``sdpa`` on the CPU measures
17-23% above the model, because the CPU's SDPA with T5's float position-bias mask and
attention dropout falls back to the math path and keeps the scores, while the model prices the
CUDA memory-efficient kernel (q, k, v, output, log-sum-exp; not measured here: no GPU in this
task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover - types only (architecture imports this module lazily)
    from lintlora.estimate.architecture import Architecture, LinearShape
    from lintlora.estimate.memory import EstimateInputs
    from lintlora.estimate.profiles import Profile

__all__ = ["target_length_from_setup", "Seq2SeqFacts", "Seq2SeqActivations", "facts_from_record", "facts_from_hf_config",
           "stack_linears", "total_params", "seq2seq_activations", "keep_fp32_params",
           "SEQ2SEQ_MODEL_TYPES"]

SEQ2SEQ_MODEL_TYPES = ("t5", "mt5", "bart")
"""HF ``model_type`` values this module prices (T0 and mt0 checkpoints are t5 / mt5)."""


@dataclass(frozen=True)
class Seq2SeqFacts:
    """What an encoder-decoder adds to :class:`~lintlora.estimate.architecture.Architecture`.

    Attributes:
        family: ``"t5"`` (T5, T5 v1.1, Flan-T5, mT5, T0, mt0) or ``"bart"``.
        num_decoder_layers: decoder depth (HF ``num_decoder_layers`` / ``decoder_layers``).
        ffn: ``"gated-gelu"`` (T5 v1.1: ``wi_0``, ``wi_1``, ``wo``; ``gelu_new``), ``"relu"``
            (T5 v1.0: ``wi``, ``wo``) or ``"gelu"`` (BART ``fc1``, ``fc2``).
        relative_attention_num_buckets: rows of T5's relative position table (0 for BART).
        learned_positions: rows of each stack's learned position table (BART:
            ``max_position_embeddings + 2``, ``BartLearnedPositionalEmbedding`` offset 2).
        dropout: residual dropout (T5 ``dropout_rate``, also applied to the attention
            probabilities; BART ``dropout``).
        attention_dropout: dropout on the attention probabilities (T5: ``dropout_rate``;
            BART ``attention_dropout``).
        activation_dropout: dropout after the feed-forward activation (T5: ``dropout_rate``
            in ``DenseReluDense``; BART ``activation_dropout``).
        keep_fp32: leaf names transformers keeps in fp32 when the model loads in 16 bits
            (``T5PreTrainedModel._keep_in_fp32_modules = ["wo"]``; also excluded from
            bitsandbytes quantization: ``quantizers/base.py`` adds them to
            ``modules_to_not_convert``).
    """

    family: str
    num_decoder_layers: int
    ffn: str = "gated-gelu"
    relative_attention_num_buckets: int = 0
    learned_positions: int = 0
    dropout: float = 0.1
    attention_dropout: float = 0.1
    activation_dropout: float = 0.1
    keep_fp32: tuple[str, ...] = field(default=())

    @property
    def encoder_layer_path(self) -> str:
        """Block path pattern of the encoder (``encoder.block.{i}``)."""
        return "encoder.block.{i}" if self.family == "t5" else "model.encoder.layers.{i}"

    @property
    def decoder_layer_path(self) -> str:
        """Block path pattern of the decoder (``decoder.block.{i}``)."""
        return "decoder.block.{i}" if self.family == "t5" else "model.decoder.layers.{i}"


def facts_from_record(rec: dict[str, Any]) -> Seq2SeqFacts | None:
    """The :class:`Seq2SeqFacts` of a catalog record (its ``encoder_decoder`` object), or
    ``None`` for a decoder-only record."""
    ed = rec.get("encoder_decoder")
    if not isinstance(ed, dict):
        return None
    family = "bart" if rec.get("model_type") == "bart" else "t5"
    return Seq2SeqFacts(
        family=family, num_decoder_layers=int(ed["num_decoder_layers"]),
        ffn=str(ed.get("ffn") or ("gelu" if family == "bart" else "gated-gelu")),
        relative_attention_num_buckets=int(ed.get("relative_attention_num_buckets") or 0),
        learned_positions=int(ed.get("learned_positions") or 0),
        dropout=float(ed.get("dropout", 0.1)),
        attention_dropout=float(ed.get("attention_dropout", 0.1)),
        activation_dropout=float(ed.get("activation_dropout", 0.1)),
        keep_fp32=tuple(ed.get("keep_fp32") or ()))


def _prob(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return default


def facts_from_hf_config(cfg: dict[str, Any], model_type: str, num_layers: int,
                         count: Any) -> Seq2SeqFacts:
    """:class:`Seq2SeqFacts` from a local T5/mT5/BART ``config.json`` (defaults: transformers
    ``T5Config`` / ``BartConfig`` at 5.24.0). ``count(names, default)`` reads a bounded whole
    number (``architecture.from_hf_config``'s reader)."""
    if model_type == "bart":
        dec = count(("decoder_layers",), num_layers, "num_hidden_layers")
        pos = count(("max_position_embeddings",), 1024, "max_position_embeddings")
        return Seq2SeqFacts(family="bart", num_decoder_layers=dec, ffn="gelu", learned_positions=pos + 2,
                            dropout=_prob(cfg.get("dropout"), 0.1),
                            attention_dropout=_prob(cfg.get("attention_dropout"), 0.0),
                            activation_dropout=_prob(cfg.get("activation_dropout"), 0.0))
    dec = count(("num_decoder_layers",), num_layers, "num_hidden_layers")
    proj = cfg.get("feed_forward_proj")
    ffn = "gated-gelu" if isinstance(proj, str) and proj.startswith("gated") else "relu"
    buckets = count(("relative_attention_num_buckets",), 32, "intermediate_size")
    rate = _prob(cfg.get("dropout_rate"), 0.1)
    return Seq2SeqFacts(family="t5", num_decoder_layers=dec, ffn=ffn,
                        relative_attention_num_buckets=buckets, dropout=rate, attention_dropout=rate,
                        activation_dropout=rate, keep_fp32=("wo",))


# ---- shapes ---------------------------------------------------------------------------------
def _attention(arch: "Architecture", prefix: str, names: Sequence[str], cross: bool) -> list:
    from lintlora.estimate.architecture import LinearShape

    h, inner = arch.hidden_size, arch.q_width
    q, k, v, o = names
    return [LinearShape(q, f"{prefix}.{q}", h, inner, "attention", "qkv"),
            LinearShape(k, f"{prefix}.{k}", h, arch.kv_width, "attention", "cross_kv" if cross else "qkv"),
            LinearShape(v, f"{prefix}.{v}", h, arch.kv_width, "attention", "cross_kv" if cross else "qkv"),
            LinearShape(o, f"{prefix}.{o}", inner, h, "attention", "attn_out")]


def _ffn(arch: "Architecture", prefix: str) -> list:
    from lintlora.estimate.architecture import LinearShape

    h, I = arch.hidden_size, arch.intermediate_size
    kind = arch.encoder_decoder.ffn if arch.encoder_decoder else "relu"
    if kind == "gated-gelu":
        return [LinearShape("wi_0", f"{prefix}.wi_0", h, I, "mlp", "mlp_in"),
                LinearShape("wi_1", f"{prefix}.wi_1", h, I, "mlp", "mlp_in"),
                LinearShape("wo", f"{prefix}.wo", I, h, "mlp", "mlp_out")]
    if kind == "relu":
        return [LinearShape("wi", f"{prefix}.wi", h, I, "mlp", "mlp_in"),
                LinearShape("wo", f"{prefix}.wo", I, h, "mlp", "mlp_out")]
    return [LinearShape("fc1", "fc1", h, I, "mlp", "mlp_in"),
            LinearShape("fc2", "fc2", I, h, "mlp", "mlp_out")]


def stack_linears(arch: "Architecture") -> tuple[tuple[str, int, tuple["LinearShape", ...]], ...]:
    """``((layer_path, layers, shapes), ...)`` for the encoder, then the decoder: the linear
    layers of one block of each stack, paths relative to the block. Cross-attention's ``k`` and
    ``v`` read the encoder output (role ``"cross_kv"``); its ``q`` reads the decoder stream
    (``"qkv"``) and its output projection is ``"attn_out"``."""
    f = arch.encoder_decoder
    assert f is not None
    if f.family == "t5":
        names = ("q", "k", "v", "o")
        enc = _attention(arch, "layer.0.SelfAttention", names, False) + _ffn(arch, "layer.1.DenseReluDense")
        dec = (_attention(arch, "layer.0.SelfAttention", names, False)
               + _attention(arch, "layer.1.EncDecAttention", names, True) + _ffn(arch, "layer.2.DenseReluDense"))
    else:
        names = ("q_proj", "k_proj", "v_proj", "out_proj")
        enc = _attention(arch, "self_attn", names, False) + _ffn(arch, "")
        dec = (_attention(arch, "self_attn", names, False) + _attention(arch, "encoder_attn", names, True)
               + _ffn(arch, ""))
    return ((f.encoder_layer_path, arch.num_hidden_layers, tuple(enc)),
            (f.decoder_layer_path, f.num_decoder_layers, tuple(dec)))


def total_params(arch: "Architecture") -> int:
    """Parameters of the ``...ForConditionalGeneration`` model, computed from the shapes.

    T5: ``shared`` (V·h), the block linears, one T5LayerNorm weight (h) per sub-layer (2 per
    encoder block, 3 per decoder block) and one final norm per stack, one relative position
    table (buckets × heads) per stack, and ``lm_head`` (V·h) unless tied (T5 v1.0).
    BART: ``shared`` (tied to ``lm_head`` and both ``embed_tokens``), the linears with their
    biases, learned positions and ``layernorm_embedding`` (weight and bias) per stack, two
    LayerNorms per encoder block and three per decoder block (weight and bias).
    """
    f = arch.encoder_decoder
    assert f is not None
    h, V = arch.hidden_size, arch.vocab_size
    n = V * h + (0 if arch.tie_word_embeddings else V * h)
    for _path, layers, shapes in stack_linears(arch):
        per = sum(s.params for s in shapes)
        if f.family == "bart":
            per += sum(s.d_out for s in shapes)  # biases
        n += layers * per
    Le, Ld = arch.num_hidden_layers, f.num_decoder_layers
    if f.family == "t5":
        n += (2 * Le + 3 * Ld + 2) * h + 2 * f.relative_attention_num_buckets * arch.num_attention_heads
    else:
        n += (2 * Le + 3 * Ld) * 2 * h + 2 * (f.learned_positions * h + 2 * h)
    return n


def keep_fp32_params(arch: "Architecture") -> int:
    """Elements of the linears transformers keeps in fp32 under a 16-bit load (T5's ``wo``)."""
    f = arch.encoder_decoder
    if f is None or not f.keep_fp32:
        return 0
    return sum(layers * sum(s.params for s in shapes if s.name in f.keep_fp32)
               for _p, layers, shapes in stack_linears(arch))


# ---- activations ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Seq2SeqActivations:
    """Activation memory of one encoder-decoder training step, in bytes (allocated).

    Attributes:
        all_layers: every block's saved tensors (no checkpointing), both stacks, plus the
            tensors saved once per stack (position-bias tensors, embedding dropout masks).
        checkpointed: with checkpointing, the block inputs kept (encoder blocks over the
            source, decoder blocks over the target) plus the encoder output every decoder block
            reads and the once-per-stack tensors.
        one_layer: the largest block recomputed in the backward (checkpointing).
        logits: loss buffers over the target tokens only.
        backward_temp: one block's backward temporaries.
        extra_weight_bytes: what the weights cost beyond ``memory._weights``' figure (T5's
            fp32 ``wo`` under a 16-bit load: 2 more bytes per element, 4 more when quantized).
        notes: sentences for the estimate's assumptions.
        encoder_per_token, decoder_per_token, decoder_per_source_token: bytes one encoder block
            keeps per source token, one decoder block per target token and per source token
            (the parts :func:`_t5_layer` / :func:`_bart_layer` price).
        per_layer_constant: autocast's 16-bit copies of fp32 weights kept for backward, all
            blocks together (T5's ``wo``).
    """

    all_layers: float
    checkpointed: float
    one_layer: float
    logits: float
    backward_temp: float
    extra_weight_bytes: float
    notes: list[str]
    encoder_per_token: float = 0.0
    decoder_per_token: float = 0.0
    decoder_per_source_token: float = 0.0
    per_layer_constant: float = 0.0


def _adapted_per_layer(arch: "Architecture", target_modules: Any, modules_to_save: Sequence[str]
                       ) -> dict[tuple[int, str], float]:
    """Average adapted modules per block by (stack index, role), matched as
    :func:`lintlora.estimate.params.count_trainable` matches them (a regex may pick one
    stack). Bounded: layers × shapes per stack (at most 4096 × 14)."""
    from lintlora.estimate.params import _list_match, resolve_targets
    from lintlora.target_regex import compile_target_pattern

    targets = resolve_targets(arch, target_modules)
    all_linear = isinstance(target_modules, str) and target_modules.lower() in ("all-linear", "all_linear")
    regex = compile_target_pattern(targets) if isinstance(targets, str) and not all_linear else None
    out: dict[tuple[int, str], float] = {}
    for si, (path, layers, shapes) in enumerate(stack_linears(arch)):
        for i in range(layers):
            base = path.format(i=i)
            for s in shapes:
                full = f"{base}.{s.path}"
                if any(full.endswith(m) for m in modules_to_save):
                    continue
                if all_linear:
                    hit = s.name in targets
                elif regex is not None:
                    hit = regex.fullmatch(full) is not None
                else:
                    hit = _list_match(full, targets) is not None
                if hit:
                    key = (si, s.role)
                    out[key] = out.get(key, 0.0) + 1.0 / max(1, layers)
    return out


def _scores(c: int, cuda: bool, p_attn: float) -> float:
    """Bytes per attention score eager attention keeps: the softmax output (fp32 under CUDA
    autocast, whose float32 op list has ``softmax``; the compute dtype on the CPU), the
    dropout mask (1) and the probabilities the value matmul keeps (a 16-bit copy when the
    softmax ran in fp32; otherwise the dropout output, or the softmax output itself)."""
    sm = 4 if (cuda and c == 2) else c
    if p_attn > 0:
        return sm + 1 + c
    return sm + (c if sm != c else 0)


def _attention_bytes(arch: "Architecture", c: int, sdpa: bool, decoder: bool, own: float, other: float,
                     score: float) -> tuple[float, float]:
    """(bytes per own-stack token, bytes per source token) a block's attention keeps, T5's and
    BART's alike: eager keeps q, k, v (``3c·w``) and ``heads × own`` scores of ``score`` bytes
    each per token (:func:`_scores`); SDPA keeps q, k, v, the output and an fp32 log-sum-exp
    per head (``4c·w + 4·heads``). A decoder's cross-attention adds q and the output (SDPA; eager:
    q and ``heads × other`` scores) per target token, and k, v (``2c·kv_width``) per source token.
    ``w`` = heads × head_dim."""
    w, heads = arch.q_width, arch.num_attention_heads
    per_tok = (4 * c * w + 4 * heads) if sdpa else (3 * c * w + heads * own * score)
    per_src = 0.0
    if decoder:
        per_tok += (2 * c * w + 4 * heads) if sdpa else (c * w + heads * other * score)
        per_src += 2 * c * arch.kv_width
    return per_tok, per_src


def _t5_layer(arch: "Architecture", c: int, lora_in: float, sdpa: bool, decoder: bool,
              own: float, other: float, p_attn: float, p_act: float, p_res: float,
              n_lora: float, n_lora_cross_kv: float, cuda: bool = True) -> tuple[float, float]:
    """(bytes per own-stack token, bytes per source token) one T5 block keeps.

    Parts (``c`` compute bytes, ``h`` hidden, ``w`` = heads × d_kv, ``I`` d_ff):

    * T5LayerNorm (2 per encoder block, 3 per decoder block): ``hidden_states.to(float32)``
      kept by ``pow`` (4h; the same tensor when already fp32), the input kept by the product
      with ``rsqrt`` (c·h, 16-bit only) and the fp32 ``rsqrt`` (4): ``4h + 4 (+ 2h)``;
    * attention: eager keeps q, k, v (``3c·w``) and per score :func:`_scores` (CPU bf16 with
      dropout: 2 + 1 + 2 = 5, measured; CUDA bf16: 4 + 1 + 2 = 7); SDPA keeps q, k, v, the
      output and an fp32 log-sum-exp per head: ``4c·w + 4·heads``. Cross-attention keeps q and
      the output per target token and k, v per source token;
    * feed-forward: ``gelu_new`` (``NewGELUActivation``: ``0.5·x·(1 + tanh(√(2/π)·(x +
      0.044715·x³)))``) keeps ``pow``'s input, ``tanh``'s output and both factors of the last
      product, and the gate product both of its factors, then the dropout mask (1 byte):
      ``(6c + 1)·I`` when every op runs in the compute dtype (the CPU, or fp32: measured);
      under CUDA autocast ``pow`` runs in fp32 (autocast's float32 op list), so ``pow``'s
      input copy, ``tanh``, ``1 + tanh`` and the GELU output are fp32: ``(4+4+2+4+4+2+1)·I =
      21·I``. ReLU keeps its output and the mask: ``(c + 1)·I``;
    * residual dropout masks: 1 byte per element, one per sub-layer;
    * LoRA: ``lora_in`` bytes per input element per adapted module (profile: ``n_lora``
      input elements per own-stack token, ``n_lora_cross_kv`` per source token); the rank-r
      ``lora_A`` outputs are added by the caller.
    """
    f = arch.encoder_decoder
    assert f is not None
    h, I = arch.hidden_size, arch.intermediate_size
    subs = 3 if decoder else 2
    norm = 4 * h + 4 + (c * h if c != 4 else 0)
    attn_tok, per_src = _attention_bytes(arch, c, sdpa, decoder, own, other, _scores(c, cuda, p_attn))
    per_tok = subs * norm + subs * h * (1 if p_res > 0 else 0) + attn_tok
    act_mask = 1 if p_act > 0 else 0
    gelu = 20 if (cuda and c == 2) else 6 * c
    per_tok += ((gelu + act_mask) if f.ffn == "gated-gelu" else (c + act_mask)) * I
    per_tok += lora_in * n_lora
    per_src += lora_in * n_lora_cross_kv
    return per_tok, per_src


def _bart_layer(arch: "Architecture", c: int, lora_in: float, sdpa: bool, decoder: bool,
                own: float, other: float, p_attn: float, p_act: float, p_res: float,
                n_lora: float, n_lora_cross_kv: float, cuda: bool = True) -> tuple[float, float]:
    """(bytes per own-stack token, bytes per source token) one BART block keeps (post-LN).

    Under CUDA autocast ``layer_norm`` runs in fp32 (torch autocast's fp32 op list): each of
    the 2 (encoder) or 3 (decoder) LayerNorms keeps its fp32 input (4h) and mean/rstd (8), and
    the residual stream is fp32 between blocks (``lora_in`` per element then comes from the
    profile as for an fp32-cast input). GELU keeps its 16-bit input (c·I), activation dropout
    its mask (I); residual dropout one mask byte per element per sub-layer; attention as T5's
    (without the relative position bias)."""
    h, I = arch.hidden_size, arch.intermediate_size
    subs = 3 if decoder else 2
    ln = 4 if (cuda and c == 2) else c  # CPU autocast keeps layer_norm in bf16 (measured)
    attn_tok, per_src = _attention_bytes(arch, c, sdpa, decoder, own, other, _scores(c, cuda, p_attn))
    per_tok = subs * (ln * h + 8) + subs * h * (1 if p_res > 0 else 0) + attn_tok
    per_tok += (c + (1 if p_act > 0 else 0)) * I
    per_tok += lora_in * n_lora
    per_src += lora_in * n_lora_cross_kv
    return per_tok, per_src


def seq2seq_activations(arch: "Architecture", inputs: "EstimateInputs", profile: "Profile",
                        loss_k: float, *, cuda: bool = True) -> Seq2SeqActivations:
    """Activation memory of ``inputs`` on an encoder-decoder ``arch`` (HF transformers + peft).

    The encoder runs over ``seq_len`` source tokens, the decoder over ``target_seq_len``
    target tokens (``None``: equal to ``seq_len``, stated in the notes); both per sequence,
    ``batch_size × sequences_per_example`` sequences. ``cuda``: the dtype policy of CUDA autocast
    (``False``: the CPU's, for checking against ``bench/seq2seq_saved_tensors.py``; the
    per-layer constant of autocast's weight copies is priced either way). ``loss_k``: bytes per target token and
    vocabulary entry at the loss (``profiles.LOSS_K``); the logits cover the decoder only.
    Full fine-tuning adds each block's linear inputs (c per distinct input element) and the
    norms' 16-bit outputs. Attention: SDPA unless ``attn_implementation="eager"`` (T5 and BART
    both set ``_supports_sdpa = True`` in transformers 5.24.0); with SDPA each stack also keeps
    its position-bias tensor once (T5: ``heads × len × len`` in the compute dtype, shared by
    its blocks: ``T5Stack`` computes it in block 0 and passes it on).
    """
    from lintlora.estimate.memory import DTYPE_BYTES

    f = arch.encoder_decoder
    assert f is not None
    notes: list[str] = []
    c = DTYPE_BYTES.get(inputs.compute_dtype, 2)
    S = max(1, int(inputs.seq_len))
    T = inputs.target_seq_len
    if not T:
        T = S
        notes.append(f"target length unknown: assumed equal to the source length ({S} tokens); "
                     "give max_target_length or --target-seq-len")
    T = max(1, int(T))
    n_seq = inputs.batch_size * inputs.sequences_per_example
    full = inputs.method == "full"
    sdpa = inputs.attn_implementation != "eager"
    lora_in = 0.0
    counts: dict[tuple[int, str], float] = {}
    dropout = (inputs.lora_dropout or 0) > 0
    shared_inputs = False
    if not full:
        lora_in = profile.lora_in_bytes_dropout if dropout else profile.lora_in_bytes_p0
        if c == 4:
            # fp32 without autocast: no 16-bit copy; with dropout its mask (1) and fp32 output (4)
            # per module, without it lora_A keeps the very input tensor, shared by the modules
            # reading it (measured: T5 fp32 p=0.1, 2 × 5h per block)
            lora_in, shared_inputs = (5.0, False) if dropout else (4.0, True)
        counts = _adapted_per_layer(arch, inputs.target_modules, inputs.modules_to_save)
    layer = _t5_layer if f.family == "t5" else _bart_layer
    h, I, w = arch.hidden_size, arch.intermediate_size, arch.q_width

    r = max(0, int(inputs.lora_r or 0))

    def block(si: int, decoder: bool) -> tuple[float, float]:
        roles = {ro: n for (s, ro), n in counts.items() if s == si}
        width = {"qkv": h, "mlp_in": h, "attn_out": w, "mlp_out": I}
        if shared_inputs:  # one saved input per distinct input tensor
            n_stream = sum(min(1.0, n) * width.get(ro, 0) for ro, n in roles.items())
            n_cross = min(1.0, roles.get("cross_kv", 0.0)) * h
        else:
            n_stream = sum(n * width.get(ro, 0) for ro, n in roles.items())
            n_cross = roles.get("cross_kv", 0.0) * h
        mods_stream = sum(n for ro, n in roles.items() if ro in width)
        own, other = (T, S) if decoder else (S, S)
        per_tok, per_src = layer(arch, c, lora_in, sdpa, decoder, own, other, f.attention_dropout,
                                 f.activation_dropout, f.dropout, n_stream, n_cross, cuda)
        # each adapted module's lora_A output (rank r, 16-bit) is kept for lora_B's gradient
        per_tok += c * r * mods_stream
        per_src += c * r * roles.get("cross_kv", 0.0)
        if full:
            # every linear keeps its input: the stream (h) for q/k/v and the MLP input, the
            # attention output (w), the MLP intermediate (I); cross k/v read the encoder output
            per_tok += c * (h + w + h + I) + (c * (h + w) if decoder else 0)
            per_src += c * h if decoder else 0
            per_tok += (3 if decoder else 2) * c * h  # trainable norms keep their output
        return per_tok, per_src

    enc_tok, _ = block(0, False)
    dec_tok, dec_src = block(1, True)
    Le, Ld = arch.num_hidden_layers, f.num_decoder_layers
    enc_layer = enc_tok * S * n_seq
    dec_layer = (dec_tok * T + dec_src * S) * n_seq
    # tensors kept once per stack: embedding dropout masks (1 B per element), the encoder's
    # final norm (and the output every cross-attention reads), SDPA's position-bias tensors
    heads = arch.num_attention_heads
    once = n_seq * ((S + T) * h * (1 if f.dropout > 0 else 0) + S * (4 * h + 4 + c * h))
    if sdpa and f.family == "t5":
        once += n_seq * heads * c * (S * S + T * T + T * S)
    # the 16-bit copies autocast makes of fp32 weights per call, kept for backward (measured
    # constant): T5's fp32 wo, and every fp32 LoRA A/B
    per_layer_const = 0.0
    wo_fp32 = keep_fp32_params(arch) if (f.keep_fp32 and DTYPE_BYTES.get(inputs.weight_dtype, 2) == 2
                                         and not inputs.master_fp32) else 0
    if wo_fp32 and c == 2:
        per_layer_const = wo_fp32 * c  # summed over all layers already
    if not full and c == 2 and DTYPE_BYTES.get(inputs.compute_dtype, 2) == 2 and profile.adapter_bytes == 4:
        # peft's fp32 adapters, cast per call (measured: 4 × 2,048 × 2 B per T5 encoder block)
        from lintlora.estimate.params import count_trainable

        per_layer_const += c * count_trainable(arch, r or 8, inputs.target_modules, inputs.modules_to_save).lora_params
    all_layers = Le * enc_layer + Ld * dec_layer + once + per_layer_const
    # checkpointing (HF: each T5Block / BartEncoderLayer / BartDecoderLayer): the block inputs
    # in the stream dtype, the encoder output, the per-stack tensors, one block recomputed
    sb = 4 if (f.family == "bart" and c == 2) else c
    checkpointed = n_seq * (Le * S + Ld * T) * sb * h + n_seq * S * sb * h + once
    one_layer = max(enc_layer, dec_layer) + (per_layer_const / max(1, Le + Ld))
    logits = arch.vocab_size * loss_k * T * n_seq
    backward_temp = 2 * c * max(h, I) * max(S, T) * n_seq
    extra_w = 0.0
    if wo_fp32:
        extra_w = wo_fp32 * (2.0 if not inputs.quant else 4.0 - _quant_bytes(inputs))
        where = "16-bit" if not inputs.quant else "quantized"
        notes.append(f"T5 keeps its {wo_fp32:,} `wo` weights in float32 (transformers "
                     f"_keep_in_fp32_modules = ['wo'], not {where}): +{extra_w / 2**30:.2f} GiB of weights"
                     + (f", and autocast's bf16 copy of each kept for backward (+{wo_fp32 * c / 2**30:.2f} GiB)"
                        if per_layer_const else "")
                     + ("; their gradients and optimizer states are counted in the 16-bit dtype (fp32 in fact)"
                        if full else ""))
    if inputs.kbit_upcast:
        notes.append("prepare_model_for_kbit_training's fp32 up-cast of norms and embeddings is not modelled for "
                     "encoder-decoders: the stream is priced in the compute dtype (a lower bound there)")
    lora_txt = ", ".join(f"{'encoder' if s == 0 else 'decoder'} {r} {n:g}/block"
                         for (s, r), n in sorted(counts.items()))
    notes.append(f"encoder-decoder: {Le} encoder blocks over {S} source tokens ({enc_tok:,.0f} B/token/block), "
                 f"{Ld} decoder blocks over {T} target tokens ({dec_tok:,.0f} B/token/block, self- and "
                 f"cross-attention) + {dec_src:,.0f} B per source token per decoder block (cross-attention "
                 f"k/v over the encoder output), × {n_seq} sequences"
                 + (f"; LoRA modules {lora_txt}" if lora_txt else "")
                 + ("; attention eager" if not sdpa else "; attention sdpa")
                 + " (lintlora/estimate/seq2seq.py, measured by bench/seq2seq_saved_tensors.py)")
    notes.append(f"loss buffers over the {T} decoder tokens only: vocab {arch.vocab_size:,} × {loss_k:g} B")
    return Seq2SeqActivations(all_layers, checkpointed, one_layer, logits, backward_temp, extra_w, notes,
                              enc_tok, dec_tok, dec_src, per_layer_const)


def _quant_bytes(inputs: "EstimateInputs") -> float:
    """Bytes per element ``memory._weights`` priced a quantized linear at (so the fp32 ``wo``
    kept out of quantization can be re-priced)."""
    from lintlora.estimate import memory as m

    q = inputs.quant
    if q in ("nf4", "fp4"):
        return m.NF4_DQ_BYTES if inputs.double_quant else m.NF4_BYTES
    return {"int8": m.INT8_BYTES, "gptq4": m.GPTQ4_BYTES, "torchao-nf4": m.TORCHAO_NF4_BYTES}.get(q or "", m.NF4_BYTES)


# ---- the setup's target length ------------------------------------------------------------------
def target_length_from_setup(setup: Any, arch: "Architecture", notes: list[str], bound: int) -> int | None:
    """The decoder length of ``setup`` for an encoder-decoder ``arch``, with a note saying where
    it came from; ``None`` (the source length is then assumed, :func:`seq2seq_activations`).

    In order: the labels' tokenizer call (``TrainingArgs.extra["target_seq_len"]``,
    :mod:`lintlora.extract.pytargets`), then ``Seq2SeqTrainingArguments.generation_max_length``
    (the length evaluation generates to, taken as the label length: stated). Values beyond
    ``bound`` are ignored with a note."""
    if not arch.is_encoder_decoder:
        return None
    training = getattr(setup, "training", None)
    extra = training.extra if training is not None else {}
    for key, how in (("target_seq_len", "the labels' truncation length"),
                     ("generation_max_length", "generation_max_length (the length evaluation generates to), "
                                               "taken as the label length")):
        st = extra.get(key)
        if st is None or not st.known:
            continue
        value = st.value
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            continue
        if value > bound:
            notes.append(f"{key} {value} is beyond {bound:,} tokens: ignored")
            continue
        where = ""
        span = st.span or st.key_span
        if span is not None:
            where = f" at line {span.line}"
        source = f" ({st.source})" if st.source and key == "target_seq_len" else ""
        notes.append(f"target (decoder) length {value} tokens: {how}{where}{source}")
        return value
    return None
