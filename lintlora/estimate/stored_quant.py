"""Checkpoints stored quantized (GPTQ, AWQ, bitsandbytes, MXFP4, FP8): what they weigh as stored
and what a LoRA run loads on top of them.

A checkpoint's own quantization is read, in this order of trust, from

1. its ``config.json`` ``quantization_config`` (a local config or the Hugging Face cache,
   :func:`from_quantization_config`, called by :func:`lintlora.estimate.architecture.from_hf_config`);
2. a catalog record's ``quantization_config`` key (copied from the model's config.json);
3. the hub id's conventions (:func:`from_name`): ``-GPTQ``, ``-AWQ``, ``-Int4``/``-Int8`` (Qwen's
   GPTQ releases, ``Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4``), ``-bnb-4bit``, ``-4bit``/``-8bit``
   (unsloth, ``mlx-community`` excepted: MLX checkpoints are not loadable by transformers),
   ``-fp8``/``-FP8``, and gpt-oss (MXFP4). A reading by name is always said to be one.

Priced as stored (bytes of GPU memory, per linear layer of ``d_in`` inputs and ``d_out``
outputs; ``b`` bits, ``g`` group size):

* GPTQ (AutoGPTQ ``auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py`` ``QuantLinear.__init__``,
  AutoGPTQ@9f7d370, the layout gptqmodel and optimum keep): ``qweight`` int32
  ``[d_in/32·b, d_out]`` (8 4-bit values per int32), ``qzeros`` int32 ``[ceil(d_in/g), d_out/32·b]``,
  ``scales`` fp16 ``[ceil(d_in/g), d_out]``, ``g_idx`` int32 ``[d_in]`` (written for every
  checkpoint, act-order or not): ``d_in·d_out·b/8 + ceil(d_in/g)·d_out·(b/8 + 2) + 4·d_in``;
  ``group_size = -1`` is one group per column.
* AWQ (AutoAWQ ``awq/modules/linear/gemm.py`` ``WQLinear_GEMM.__init__``, AutoAWQ@88e4c76):
  ``qweight`` int32 ``[d_in, d_out/(32/b)]``, ``qzeros`` int32 ``[d_in/g, d_out/(32/b)]``,
  ``scales`` fp16 ``[d_in/g, d_out]``, no ``g_idx``: ``d_in·d_out·b/8 + d_in/g·d_out·(b/8 + 2)``.
* bitsandbytes 4-bit as stored (``Params4bit``: NF4/FP4 values, an fp32 absmax per 64, or with
  double quantization an 8-bit absmax and an fp32 scale per 256 blocks: the constants of
  :mod:`lintlora.estimate.memory`); LLM.int8: 1 byte per weight + an fp32 scale per row.
* MXFP4 (OCP Microscaling Formats (MX) Specification v1.0, §5: blocks of 32 FP4 E2M1 values
  sharing one E8M0 scale byte, 4.25 bits per value; transformers
  ``integrations/mxfp4.py`` ``Mxfp4GptOssExperts``: ``gate_up_proj_blocks`` uint8
  ``[E, 2·I, h/32, 16]`` and ``gate_up_proj_scales`` uint8 ``[E, 2·I, h/32]``, likewise
  ``down_proj``): only the experts; attention, router, embeddings and lm_head stay bf16
  (gpt-oss's ``modules_to_not_convert``). transformers dequantizes the experts to bf16 when
  ``Mxfp4Config(dequantize=True)`` is passed, on a GPU of compute capability below 7.5, or without
  triton >= 3.4.0 and the ``kernels`` package (``quantizers/quantizer_mxfp4.py``
  ``validate_environment``); LLaMA-Factory always passes ``dequantize=True``
  (``model/model_utils/quantization.py`` ``configure_quantization``, LLaMA-Factory@ff6d4d1).
* FP8 (transformers ``FineGrainedFP8Config``: 1 byte per weight and an fp32 scale per block of
  ``weight_block_size``, 128 × 128 by default): dequantized to bf16 on a GPU of compute
  capability below 8.9, or with ``dequantize=True`` (``quantizers/quantizer_finegrained_fp8.py``
  ``validate_environment``; LLaMA-Factory passes ``dequantize=True``).

Modules kept in 16 bits: embeddings, lm_head, norms, routers, and every linear a
``modules_to_not_convert`` / ``llm_int8_skip_modules`` pattern names.

On top of such a checkpoint a LoRA run keeps the base packed: peft wraps GPTQ and AWQ linears in
``GPTQLoraLinear`` / ``AwqLoraLinear`` (``src/peft/tuners/lora/gptq.py``, ``awq.py``,
peft@5d602fd: ``result = self.quant_linear_module(x)`` plus the adapter), and a
``BitsAndBytesConfig`` passed for a checkpoint quantized otherwise is not applied: transformers
``quantizers/auto.py`` ``AutoHfQuantizer.merge_quantization_configs`` uses the checkpoint's
``quantization_config`` ("The `quantization_config` from the model will be used"; current releases
raise ``ValueError`` when the two config classes differ, "Please make sure to pass the same
quantization config class"), only its loading attributes (``dequantize``, ``use_exllama``) are
taken; LLaMA-Factory ignores ``quantization_bit`` for such a model ("`quantization_bit` will not
affect on the PTQ-quantized models").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # no import cycle: architecture.py imports this module
    from lintlora.estimate.architecture import Architecture

__all__ = [
    "StoredQuant",
    "STORED_QUANTS",
    "from_quantization_config",
    "from_name",
    "SIXTEEN_BIT",
    "stored_weight_bytes",
    "resolve_for_gpu",
    "reconcile",
    "from_flags",
]

STORED_QUANTS = ("gptq", "awq", "mxfp4", "fp8")
"""``EstimateInputs.quant`` keys of checkpoints that are only ever stored quantized (a
bitsandbytes checkpoint uses ``nf4``/``fp4``/``int8``, with ``stored_quant`` set)."""

MXFP4_BYTES = (16 + 1) / 32
"""Bytes per MXFP4 weight: 16 bytes of packed E2M1 pairs and one E8M0 scale per block of 32
(OCP MX v1.0; transformers ``Mxfp4GptOssExperts``)."""

DEFAULT_GROUP_SIZE = 128
"""GPTQ/AWQ group size when none is stated: transformers ``GPTQConfig`` and ``AwqConfig``
default ``group_size=128`` (``utils/quantization_config.py``), AutoAWQ's ``q_group_size`` 128."""

FP8_BLOCK = (128, 128)
"""transformers ``FineGrainedFP8Config.weight_block_size`` default (``utils/quantization_config.py``)."""

MAX_SKIP_PATTERNS = 64
"""The most ``modules_to_not_convert`` entries read (real ones list a handful; unsloth's dynamic
4-bit uploads a few dozen); more are a diagnostic, not a loop."""

MAX_PATTERN_CHARS = 200


@dataclass(frozen=True)
class StoredQuant:
    """How a checkpoint's weights are stored (or will be, for a config that quantizes on load).

    Attributes:
        method: ``"gptq"``, ``"awq"``, ``"nf4"``, ``"fp4"``, ``"int8"`` (bitsandbytes),
            ``"mxfp4"`` or ``"fp8"``.
        bits: bits per quantized weight (GPTQ/AWQ 2-8; 4 for nf4/fp4/mxfp4; 8 for int8/fp8).
        group_size: GPTQ/AWQ inputs per scale (``-1``: one group per column).
        desc_act: GPTQ act-order (``g_idx`` then permutes the groups; stored either way).
        double_quant: bitsandbytes ``bnb_4bit_use_double_quant``.
        compute_dtype: bitsandbytes ``bnb_4bit_compute_dtype`` as stored, when given.
        skip: ``modules_to_not_convert`` / ``llm_int8_skip_modules`` patterns (kept 16-bit).
        block: FP8 ``weight_block_size``.
        dequantize: loaded dequantized to bf16 (MXFP4, FP8).
        reading: how it was read, one sentence for the estimate's assumptions.
        by_name: read from the hub id's conventions, not from a config.
        prequantized: the checkpoint is stored so (``False``: a script's config quantizes a
            16-bit checkpoint while loading, e.g. ``GPTQConfig(dataset=...)``).
    """

    method: str
    bits: int = 4
    group_size: int = DEFAULT_GROUP_SIZE
    desc_act: bool = False
    double_quant: bool = False
    compute_dtype: str | None = None
    skip: tuple[str, ...] = ()
    block: tuple[int, int] = FP8_BLOCK
    dequantize: bool = False
    reading: str = ""
    by_name: bool = False
    prequantized: bool = True

    @property
    def estimate_quant(self) -> str:
        """The ``EstimateInputs.quant`` key: the method, also when dequantized to bf16 (the
        weights are then priced at 2 bytes, and the fit list still never proposes quantizing a
        checkpoint that is stored quantized)."""
        return self.method

    @property
    def label(self) -> str:
        """``AWQ 4-bit, group size 128`` and the like."""
        if self.method in ("gptq", "awq"):
            g = "per column" if self.group_size == -1 else f"group size {self.group_size}"
            return f"{self.method.upper()} {self.bits}-bit, {g}" + (", act-order" if self.desc_act else "")
        if self.method in ("nf4", "fp4"):
            return f"bitsandbytes {self.method.upper()}" + (" + double quantization" if self.double_quant else "")
        if self.method == "int8":
            return "bitsandbytes LLM.int8 (8-bit)"
        if self.method == "mxfp4":
            return "MXFP4 experts" + (" (dequantized to bf16 on load)" if self.dequantize else "")
        return (f"FP8 with {self.block[0]}×{self.block[1]} block scales"
                + (" (dequantized to bf16 on load)" if self.dequantize else ""))


class _SixteenBit:
    """The id names a 16-bit release (``-BF16``, ``-fp16``, ``-16bit``): not quantized, even if
    its catalog record's default checkpoint is."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "SIXTEEN_BIT"


SIXTEEN_BIT = _SixteenBit()


# ---- reading a quantization_config ----------------------------------------------------------
def _int(value: Any, lo: int, hi: int, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return default
    value = int(value)
    return value if lo <= value <= hi else default


def _patterns(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return ()
    out = [v[:MAX_PATTERN_CHARS] for v in value[:MAX_SKIP_PATTERNS] if isinstance(v, str) and v]
    return tuple(out)


def from_quantization_config(qc: Any, source: str) -> StoredQuant | None:
    """The stored quantization a ``config.json`` ``quantization_config`` mapping describes, or
    ``None`` (absent, not a mapping, or a method lintlora does not price: the caller prices the
    weights as 16-bit, the larger figure). Every value is bounded; a bad one falls back to the
    method's default rather than raising."""
    if not isinstance(qc, Mapping):
        return None
    method = qc.get("quant_method")
    method = method.lower().strip() if isinstance(method, str) else ""
    if not method and (qc.get("load_in_4bit") is True or qc.get("load_in_8bit") is True):
        method = "bitsandbytes"  # configs written before quant_method existed
    where = f"{source} quantization_config"
    if method == "gptq":
        bits = _int(qc.get("bits"), 2, 8, 4)
        g = _int(qc.get("group_size"), -1, 1 << 20, DEFAULT_GROUP_SIZE) or DEFAULT_GROUP_SIZE
        act = qc.get("desc_act") is True
        sq = StoredQuant("gptq", bits=bits, group_size=g, desc_act=act,
                         skip=_patterns(qc.get("modules_to_not_convert")))
        return replace(sq, reading=f"{where}: {sq.label}")
    if method == "awq":
        bits = _int(qc.get("bits", qc.get("w_bit")), 2, 8, 4)
        g = _int(qc.get("group_size", qc.get("q_group_size")), -1, 1 << 20, DEFAULT_GROUP_SIZE) or DEFAULT_GROUP_SIZE
        sq = StoredQuant("awq", bits=bits, group_size=g, skip=_patterns(qc.get("modules_to_not_convert")))
        return replace(sq, reading=f"{where}: {sq.label}")
    if method == "bitsandbytes":
        skip = _patterns(qc.get("llm_int8_skip_modules")) or _patterns(qc.get("modules_to_not_convert"))
        if qc.get("load_in_4bit") is True:
            qt = qc.get("bnb_4bit_quant_type")
            cd = qc.get("bnb_4bit_compute_dtype")
            sq = StoredQuant("fp4" if qt == "fp4" else "nf4", bits=4,
                             double_quant=qc.get("bnb_4bit_use_double_quant") is True,
                             compute_dtype=cd if cd in ("bfloat16", "float16", "float32") else None, skip=skip)
            return replace(sq, reading=f"{where}: {sq.label}")
        if qc.get("load_in_8bit") is True:
            sq = StoredQuant("int8", bits=8, skip=skip)
            return replace(sq, reading=f"{where}: {sq.label}")
        return None
    if method == "mxfp4":
        sq = StoredQuant("mxfp4", bits=4, skip=_patterns(qc.get("modules_to_not_convert")),
                         dequantize=qc.get("dequantize") is True)
        return replace(sq, reading=f"{where}: {sq.label}")
    if method in ("fp8", "fbgemm_fp8"):
        blk = qc.get("weight_block_size")
        block = FP8_BLOCK
        if isinstance(blk, (list, tuple)) and len(blk) == 2:
            block = (_int(blk[0], 1, 1 << 16, 128), _int(blk[1], 1, 1 << 16, 128))
        elif method == "fbgemm_fp8":
            block = (1, 1 << 16)  # FbgemmFp8Config: one fp32 scale per output row
        sq = StoredQuant("fp8", bits=8, block=block, skip=_patterns(qc.get("modules_to_not_convert")),
                         dequantize=qc.get("dequantize") is True)
        return replace(sq, reading=f"{where}: {sq.label}")
    return None


# ---- reading a hub id ---------------------------------------------------------------------------
_SIXTEEN_RE = re.compile(r"(?:^|[-_.])(?:bf16|fp16|16bit|f16)(?:$|[-_.])")
_BITS_RE = re.compile(r"(?:^|[-_.])(?:int|w)(\d)(?:$|[-_.a])")


# what a reading by name adds for a GPTQ/AWQ id
_NO_CONFIG = "(no config.json read; give --model-config for the checkpoint's own quantization_config)"


def from_name(name: str | None) -> StoredQuant | _SixteenBit | None:
    """What a hub id's conventions say about its storage: a :class:`StoredQuant` (``by_name``,
    with a sentence naming the convention and every value assumed), :data:`SIXTEEN_BIT` for an
    id that names a 16-bit release, or ``None`` when it says nothing.

    ``mlx-community/...`` ids (and ``-mlx`` ones) are MLX checkpoints (Apple's MLX format, group
    size 64 with scales and biases) that transformers does not load: ``None``, the caller says so.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    text = name.strip().lower().rstrip("/")[:300]
    org, _, leaf = text.rpartition("/")
    if org.endswith("mlx-community") or "mlx" in leaf.split("-"):
        return None
    quoted = name.strip()[:120]
    if "gptq" in leaf or re.search(r"(?:^|-)int[48](?:$|-)", leaf) and "awq" not in leaf:
        m = _BITS_RE.search(leaf)
        bits = int(m.group(1)) if m and m.group(1) in ("2", "3", "4", "8") else 4
        g = re.search(r"(?:^|[-_])(\d{2,4})g(?:$|[-_])", leaf)
        group = int(g.group(1)) if g else DEFAULT_GROUP_SIZE
        what = "-GPTQ" if "gptq" in leaf else f"-Int{bits} (Qwen's GPTQ releases)"
        sq = StoredQuant("gptq", bits=bits, group_size=group, by_name=True)
        return replace(sq, reading=f"{what} in the id {quoted!r}: assumed {sq.label} {_NO_CONFIG}")
    if "awq" in leaf:
        m = _BITS_RE.search(leaf)
        bits = int(m.group(1)) if m and m.group(1) in ("2", "3", "4", "8") else 4
        sq = StoredQuant("awq", bits=bits, by_name=True)
        return replace(sq, reading=f"-AWQ in the id {quoted!r}: assumed {sq.label} {_NO_CONFIG}")
    if re.search(r"(?:^|[-_])fp8(?:$|[-_])", leaf):
        sq = StoredQuant("fp8", bits=8, by_name=True)
        return replace(sq, reading=f"-FP8 in the id {quoted!r}: assumed {sq.label} (transformers "
                                   "FineGrainedFP8Config's default block; no config.json read)")
    if re.search(r"(?:^|[-_])(?:bnb-)?4bit(?:$|[-_])", leaf):
        dynamic = "unsloth-bnb-4bit" in leaf
        sq = StoredQuant("nf4", bits=4, double_quant=True, by_name=True)
        extra = (" unsloth's dynamic 4-bit uploads keep some layers in 16 bits (listed in their "
                 "llm_int8_skip_modules), so the checkpoint is somewhat larger;" if dynamic else "")
        conv = "-bnb-4bit" if "bnb-4bit" in leaf else "-4bit"
        return replace(sq, reading=f"{conv} in the id {quoted!r}: assumed a bitsandbytes NF4 checkpoint with "
                                   f"double quantization (unsloth's uploads);{extra} no config.json read")
    if re.search(r"(?:^|[-_])(?:bnb-)?8bit(?:$|[-_])", leaf):
        sq = StoredQuant("int8", bits=8, by_name=True)
        return replace(sq, reading=f"-8bit in the id {quoted!r}: assumed a bitsandbytes LLM.int8 checkpoint; "
                                   "no config.json read")
    if _SIXTEEN_RE.search(leaf):
        return SIXTEEN_BIT
    if "gpt-oss" in leaf:
        sq = StoredQuant("mxfp4", bits=4, by_name=True,
                         skip=("model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"))
        return replace(sq, reading=f"gpt-oss id {quoted!r}: assumed OpenAI's release, MXFP4 experts "
                                   "(openai/gpt-oss-20b config.json quantization_config quant_method mxfp4)")
    return None


def mlx_note(name: str | None) -> str | None:
    """The sentence for an MLX checkpoint id, or ``None``."""
    if not isinstance(name, str):
        return None
    text = name.strip().lower()
    org, _, leaf = text.rpartition("/")
    if org.endswith("mlx-community") or "mlx" in leaf.split("-"):
        return (f"warning: {name.strip()[:120]!r} is an MLX checkpoint (Apple's MLX format), which transformers "
                "and peft do not load for GPU training; the estimate is for the base model's architecture "
                "with its weights in 16 bits")
    return None


# ---- pricing -----------------------------------------------------------------------------------
def _matches(path: str, pattern: str) -> bool:
    """Whether ``pattern`` (a ``modules_to_not_convert`` entry) names the module at ``path``:
    a glob with ``*`` (gpt-oss's ``model.layers.*.self_attn``) matched against the path and its
    prefixes, else a substring as transformers' bitsandbytes/AWQ integrations test it
    (``any(key in current_key_name for key in modules_to_not_convert)``)."""
    if "*" in pattern:
        rx = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + r"(?:\.|$)"
        return re.search(rx, path) is not None
    return pattern in path


def _linear_bytes(sq: StoredQuant, d_in: int, d_out: int) -> float:
    """Bytes of one quantized linear's weight as stored (see the module docstring)."""
    from lintlora.estimate.memory import INT8_BYTES, NF4_BYTES, NF4_DQ_BYTES

    n = d_in * d_out
    if sq.method in ("gptq", "awq"):
        g = d_in if sq.group_size in (-1, 0) else sq.group_size
        groups = math.ceil(d_in / max(1, g))
        packed = n * sq.bits / 8 + groups * d_out * (sq.bits / 8 + 2)
        return packed + (4 * d_in if sq.method == "gptq" else 0)
    if sq.method in ("nf4", "fp4"):
        return n * (NF4_DQ_BYTES if sq.double_quant else NF4_BYTES)
    if sq.method == "int8":
        return n * INT8_BYTES + 4 * d_out
    if sq.method == "mxfp4":
        return n * MXFP4_BYTES
    # fp8: one byte per weight and an fp32 scale per block
    bo, bi = sq.block
    return n * 1.0 + math.ceil(d_out / max(1, bo)) * math.ceil(d_in / max(1, bi)) * 4


def stored_weight_bytes(arch: "Architecture", sq: StoredQuant, rest_bytes: int) -> tuple[float, int, str]:
    """Bytes of the base weights as loaded: quantized linears as stored, everything else at
    ``rest_bytes`` per parameter. Returns ``(bytes, quantized parameter count, description)``.

    Quantized: every block linear except routers and those a skip pattern names (GPTQ, AWQ,
    bitsandbytes, FP8); for MXFP4 the experts only (transformers replaces ``GptOssExperts``
    alone). Dequantized MXFP4/FP8: nothing (bf16 weights).
    """
    if sq.dequantize:
        total = arch.total_params
        return (total * 2.0, 0, f"{total:,} params × 2 B (bf16: {sq.label})")
    L = max(1, arch.num_hidden_layers)
    layer_specific = any(re.search(r"layers\.\d", p) for p in sq.skip)
    quantized = 0
    qbytes = 0.0
    for sh in arch.block_linears():
        if sh.role == "router" or (sq.method == "mxfp4" and sh.group != "expert"):
            continue
        copies = sh.count
        if sq.skip:
            if layer_specific and L <= 4096:
                layers = sum(1 for i in range(L)
                             if not any(_matches(arch.module_path(i, sh), p) for p in sq.skip))
            else:
                layers = 0 if any(_matches(arch.module_path(0, sh), p) for p in sq.skip) else L
        else:
            layers = L
        if not layers:
            continue
        quantized += sh.d_in * sh.d_out * copies * layers
        qbytes += _linear_bytes(sq, sh.d_in, sh.d_out) * copies * layers
    rest = arch.total_params - quantized
    per = qbytes / quantized if quantized else 0.0
    desc = (f"{quantized:,} quantized params × {per:.4f} B as stored ({sq.label}) + {rest:,} others × "
            f"{rest_bytes} B")
    return qbytes + rest * rest_bytes, quantized, desc


# ---- what a run loads ---------------------------------------------------------------------------
def _capability(gpu: Any) -> tuple[int, int] | None:
    cc = getattr(gpu, "compute_capability", None) if gpu is not None else None
    if isinstance(cc, str):
        m = re.fullmatch(r"\s*(\d{1,2})\.(\d{1,2})\s*", cc)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def resolve_for_gpu(sq: StoredQuant, gpu: Any) -> tuple[StoredQuant, list[str]]:
    """MXFP4 and FP8 on the GPU named: dequantized to bf16 where transformers would (compute
    capability below 7.5 for MXFP4, below 8.9 for FP8), with the sentences saying so."""
    notes: list[str] = []
    if sq.dequantize or sq.method not in ("mxfp4", "fp8"):
        return sq, notes
    cc = _capability(gpu)
    need = (7, 5) if sq.method == "mxfp4" else (8, 9)
    if cc is not None and cc < need:
        notes.append(f"{getattr(gpu, 'name', 'the GPU')} (compute capability {cc[0]}.{cc[1]}) has no "
                     f"{sq.method.upper()} kernels (transformers needs {need[0]}.{need[1]}): transformers "
                     "dequantizes the weights to bf16 while loading")
        return replace(sq, dequantize=True), notes
    if sq.method == "mxfp4":
        notes.append("MXFP4 kept packed: assumes a GPU of compute capability >= 7.5 with triton >= 3.4.0 and the "
                     "`kernels` package (transformers quantizer_mxfp4.py); without them transformers dequantizes "
                     "the experts to bf16 (Mxfp4Config(dequantize=True) prices that case)")
    return sq, notes


def _setting(section: Any, name: str) -> Any:
    s = getattr(section, name, None)
    if s is None:
        extra = getattr(section, "extra", None) or {}
        s = extra.get(name) if isinstance(extra, Mapping) else None
    if s is None or not getattr(s, "known", False):
        return None
    return s.value


def reconcile(stored: StoredQuant | None, quant: Any, framework: str, gpu: Any = None
              ) -> tuple[StoredQuant | None, list[str]]:
    """The storage a run loads, from the checkpoint's own (``stored``) and the file's
    quantization section (``quant``, a :class:`lintlora.training_setup.Quantization` or
    ``None``), with the sentences for the assumptions. ``None``: the file's section decides
    alone (bitsandbytes on a 16-bit checkpoint, handled by the caller).
    """
    notes: list[str] = []
    method = str(_setting(quant, "method") or "").lower() if quant is not None else ""
    if stored is not None:
        notes.append(f"stored quantization: {stored.reading}")
        if method == "bitsandbytes" and stored.method not in ("nf4", "fp4", "int8"):
            if framework == "llama-factory":
                notes.append("quantization_bit is ignored for a checkpoint already quantized (LLaMA-Factory "
                             "model_utils/quantization.py: \"`quantization_bit` will not affect on the PTQ-quantized "
                             "models\"): priced as stored")
            else:
                notes.append("warning: a BitsAndBytesConfig (load_in_4bit/8bit) for a checkpoint stored as "
                             f"{stored.method.upper()} is not applied: transformers uses the checkpoint's own "
                             "quantization_config (quantizers/auto.py merge_quantization_configs; current releases "
                             "raise ValueError for a different config class): priced as stored")
        elif method == "bitsandbytes":
            notes.append("the BitsAndBytesConfig passed for a checkpoint already stored in bitsandbytes 4/8-bit adds "
                         "nothing: transformers uses the checkpoint's quantization_config (quantizers/auto.py)")
        if method in ("mxfp4", "fp8") and _setting(quant, "dequantize") is True and stored.method == method:
            stored = replace(stored, dequantize=True)
            notes.append(f"{'Mxfp4Config' if method == 'mxfp4' else 'FineGrainedFP8Config'}(dequantize=True): the "
                         "weights are dequantized to bf16 while loading (a loading attribute transformers takes "
                         "from the passed config)")
        if framework == "llama-factory" and stored.method in ("mxfp4", "fp8") and not stored.dequantize:
            stored = replace(stored, dequantize=True)
            notes.append(f"LLaMA-Factory loads {stored.method.upper()} checkpoints with dequantize=True "
                         "(model_utils/quantization.py configure_quantization): bf16 weights")
        stored, more = resolve_for_gpu(stored, gpu)
        return stored, notes + more
    if method in ("gptq", "awq") and quant is not None:
        bits = _setting(quant, "bits")
        bits = bits if isinstance(bits, int) and not isinstance(bits, bool) and 2 <= bits <= 8 else 4
        g = _setting(quant, "group_size")
        g = g if isinstance(g, int) and not isinstance(g, bool) and (g == -1 or 1 <= g <= 1 << 20) else DEFAULT_GROUP_SIZE
        act = _setting(quant, "desc_act") is True
        sq = StoredQuant(method, bits=bits, group_size=g, desc_act=act)
        if framework == "llama-factory":
            how = (f"quantization_method: {method} names a {method.upper()} checkpoint (LLaMA-Factory quantizes on the "
                   "fly only with bnb, hqq or eetq): assumed")
        elif framework == "axolotl":
            how = "gptq: true names a GPTQ checkpoint: assumed"
        elif method == "awq":
            how = "AwqConfig loads an AWQ checkpoint (transformers cannot quantize to AWQ itself): assumed"
        else:
            how = ("GPTQConfig: the checkpoint is GPTQ (or is quantized while loading, whose calibration pass is "
                   "not counted): assumed")
        notes.append(f"{how} {sq.label}")
        return replace(sq, reading=how), notes
    if method in ("mxfp4", "fp8") and quant is not None:
        deq = _setting(quant, "dequantize") is True
        sq = StoredQuant(method, bits=4 if method == "mxfp4" else 8, dequantize=deq, prequantized=False)
        name = "Mxfp4Config" if method == "mxfp4" else "an FP8 config"
        notes.append(f"{name} on a checkpoint not known to be quantized: " +
                     ("dequantize=True, bf16 weights" if deq else f"assumed {sq.label}"))
        sq, more = resolve_for_gpu(sq, gpu)
        return sq, notes + more
    return None, notes


def from_flags(quant: str, bits: int | None, group_size: int | None, double_quant: bool | None
               ) -> tuple[str | None, StoredQuant | None, bool, list[str]]:
    """``lintlora estimate --quant ...`` as ``(EstimateInputs.quant, stored_quant,
    double_quant, notes)``. ``nf4``/``fp4``/``int8`` quantize a 16-bit checkpoint while loading
    (bitsandbytes); ``gptq``/``awq``/``mxfp4``/``fp8`` describe a checkpoint stored so."""
    q = quant.lower()
    notes: list[str] = []
    if q == "none":
        notes.append("--quant none: 16-bit base weights")
        return None, None, False, notes
    if q in ("nf4", "fp4"):
        dq = True if double_quant is None else double_quant
        notes.append(f"--quant {q}: bitsandbytes {q.upper()} quantized while loading"
                     + (", double quantization" if dq else ", no double quantization")
                     + (" (--double-quant not given: on)" if double_quant is None else ""))
        return q, None, dq, notes
    if q == "int8":
        return "int8", None, False, ["--quant int8: bitsandbytes LLM.int8 quantized while loading"]
    if q in ("gptq", "awq"):
        b = bits or 4
        g = group_size or DEFAULT_GROUP_SIZE
        sq = StoredQuant(q, bits=b, group_size=g, reading=f"--quant {q}")
        if bits is None or group_size is None:
            notes.append(f"--quant {q}: " + ", ".join(
                x for x in ("--quant-bits not given: 4" if bits is None else "",
                            f"--quant-group-size not given: {DEFAULT_GROUP_SIZE} (GPTQConfig/AwqConfig default)"
                            if group_size is None else "") if x))
        notes.append(f"stored quantization: {sq.label} (from the flags)")
        return q, sq, False, notes
    if q == "mxfp4":
        sq = StoredQuant("mxfp4", bits=4, reading="--quant mxfp4")
        notes.append("stored quantization: MXFP4 experts, attention/router/embeddings/lm_head in bf16 (from the flags)")
        return "mxfp4", sq, False, notes
    sq = StoredQuant("fp8", bits=8, reading="--quant fp8")
    notes.append(f"stored quantization: {sq.label} (from the flags)")
    return "fp8", sq, False, notes
