"""litgpt finetuning configs (``litgpt finetune_lora --config x.yaml``; jsonargparse).

Defaults and behaviour read from Lightning-AI/litgpt ``litgpt/finetune/lora.py`` @
01fe959c5f43a22d02e2b2686478694ca60531f7 (``setup``'s signature):
``checkpoint_dir = checkpoints/stabilityai/stablelm-base-alpha-3b``, ``precision = None`` (then
``litgpt/utils.py get_default_supported_precision(training=True)``: ``bf16-mixed`` where the
GPU supports bf16, else ``16-mixed``), ``quantize = None`` (``bnb.nf4``, ``bnb.nf4-dq``,
``bnb.fp4``, ``bnb.fp4-dq``, ``bnb.int8-training``: bitsandbytes through Lightning's
``BitsandbytesPrecision(mode, dtype)``, which refuses ``-mixed`` precisions), ``devices = 1``,
``lora_r = 8``, ``lora_alpha = 16``, ``lora_dropout = 0.05``, ``lora_query = True``,
``lora_key = False``, ``lora_value = True``, ``lora_projection = False``, ``lora_mlp = False``,
``lora_head = False``, ``train.micro_batch_size = 4``, ``train.global_batch_size = 128``,
``train.max_seq_length = None`` (the longest sample). The optimizer is
``bitsandbytes.optim.PagedAdamW`` when quantized, else ``torch.optim.AdamW`` (newer releases
take ``optimizer:`` from the config). Gradient accumulation is
``global_batch_size // devices // micro_batch_size`` (``litgpt/args.py``
``TrainArgs.gradient_accumulation_iters``).

Activation checkpointing has no config key: with ``devices > 1`` the script uses
``FSDPStrategy(..., activation_checkpointing_policy={Block})``; on one device it runs without.
The data module's DataLoader takes ``data.init_args.num_workers`` (``litgpt/data/alpaca.py``:
``num_workers = 4``), a real DataLoader setting.

LoRA switches map to Hugging Face module names (``litgpt/scripts/convert_hf_checkpoint.py``:
``q_proj``/``k_proj``/``v_proj`` -> ``attn.qkv``, ``o_proj`` -> ``attn.proj``, ``gate_proj``/
``up_proj``/``down_proj`` -> ``mlp.fc_1``/``fc_2``/``proj``, ``lm_head``) for Llama-style
checkpoints (Llama, Mistral, Gemma, Qwen2/3, TinyLlama...) and Phi-3 (fused ``qkv_proj`` and
``gate_up_proj``); for other architectures the targets are left unknown rather than guessed.
"""

from __future__ import annotations

import re
from typing import Any

from lintlora.extract.dialects._base import (
    ConfigDoc,
    as_bool,
    as_float,
    as_count,
    as_int,
    as_workers,
    as_str,
    default,
    derived,
)
from lintlora.training_setup import (
    DataLoaderSpec,
    Evidence,
    Lora,
    ModelLoad,
    Origin,
    Quantization,
    Setting,
    TrainingArgs,
    TrainingSetup,
)

__all__ = ["NAME", "matches", "build", "hf_module_names"]

NAME = "litgpt"
_SRC = "litgpt litgpt/finetune/lora.py @ 01fe959c5f43 (setup)"
_SRC_PREC = "litgpt litgpt/utils.py get_default_supported_precision"
_SRC_DATA = "litgpt litgpt/data/alpaca.py (num_workers = 4)"
_SRC_CONVERT = "litgpt litgpt/scripts/convert_hf_checkpoint.py"

_SWITCHES = ("lora_query", "lora_key", "lora_value", "lora_projection", "lora_mlp", "lora_head")
_SWITCH_DEFAULTS = {"lora_query": True, "lora_key": False, "lora_value": True,
                    "lora_projection": False, "lora_mlp": False, "lora_head": False}
_LITGPT_KEYS = frozenset({"precision", "quantize", "devices", "num_nodes", "out_dir", "train",
                          "eval", "logger_name", "data", "lora_r", "lora_alpha", "lora_dropout",
                          *_SWITCHES})

_LLAMA_STYLE = re.compile(
    r"llama|mistral|gemma|qwen(?:1\.5|2|2\.5|3)|vicuna|longchat|codellama|code-llama|smollm|"
    r"open_llama|openllama|yi-|deepseek-llm|r1-distill|nous-hermes|zephyr|mathstral",
    re.IGNORECASE)
# mixture-of-experts checkpoints name their MLP layers per expert
_MOE = re.compile(r"mixtral|moe|-a\d+b|llama-4|llama4", re.IGNORECASE)
_PHI3 = re.compile(r"phi-3|phi-4|phi3|phi4", re.IGNORECASE)
_PHI = re.compile(r"phi-2|phi-1_5|phi-1\.5", re.IGNORECASE)
"""phi-1.5 / phi-2: transformers' PhiForCausalLM names (q/k/v_proj, ``dense`` for the attention
output, ``fc1``/``fc2`` for the MLP: the catalog's Phi-2 and phi-1.5 records), which litgpt's
``convert_hf_checkpoint.py`` maps to its ``attn.proj`` and ``mlp.fc``/``mlp.proj``."""

# litgpt precision -> (bf16, fp16, weight dtype)
_PRECISION = {
    "bf16-true": (True, False, "bfloat16"),
    "bf16-mixed": (True, False, "float32"),
    "bf16": (True, False, "float32"),
    "16-true": (False, True, "float16"),
    "16-mixed": (False, True, "float32"),
    "16": (False, True, "float32"),
    "32-true": (False, False, "float32"),
    "32": (False, False, "float32"),
}
# quantize -> (bits, bnb_4bit_quant_type, double quant)
_QUANTIZE = {
    "bnb.nf4": (4, "nf4", False),
    "bnb.nf4-dq": (4, "nf4", True),
    "bnb.fp4": (4, "fp4", False),
    "bnb.fp4-dq": (4, "fp4", True),
    "bnb.int8-training": (8, None, None),
    "bnb.int8": (8, None, None),
}


def matches(doc: ConfigDoc) -> bool:
    """A top-level ``checkpoint_dir`` plus litgpt's own keys."""
    keys = set(doc.root.keys())
    return "checkpoint_dir" in keys and bool(keys & _LITGPT_KEYS)


def hf_module_names(checkpoint_dir: str, switches: dict[str, bool]) -> tuple[str, ...] | None:
    """peft-style module names for litgpt's LoRA switches, or ``None`` when the architecture
    is not one whose naming is known."""
    name = checkpoint_dir.rstrip("/").split("/")[-1] if checkpoint_dir else ""
    if _PHI3.search(name):
        attn = ("qkv_proj",) * 3
        proj, mlp = "o_proj", ("gate_up_proj", "down_proj")
    elif _PHI.search(name):
        attn = ("q_proj", "k_proj", "v_proj")
        proj, mlp = "dense", ("fc1", "fc2")
    elif _LLAMA_STYLE.search(name) and not _MOE.search(name):
        attn = ("q_proj", "k_proj", "v_proj")
        proj, mlp = "o_proj", ("gate_proj", "up_proj", "down_proj")
    else:
        return None
    names: list[str] = []
    for on, module in zip((switches["lora_query"], switches["lora_key"],
                           switches["lora_value"]), attn):
        if on and module not in names:
            names.append(module)
    if switches["lora_projection"]:
        names.append(proj)
    if switches["lora_mlp"]:
        names.extend(mlp)
    if switches["lora_head"]:
        names.append("lm_head")
    return tuple(names)


def _devices(v: Any) -> int:
    """``devices``: an int, or a string of an int; ``auto``/``-1`` cannot be known from the file."""
    n = as_int(v)
    if n < 1:
        raise ValueError(v)
    return n


def _optimizer_name(v: Any, quantized: bool) -> str:
    name = v.get("class_path") if isinstance(v, dict) else v
    name = as_str(name)
    short = name.rsplit(".", 1)[-1]
    table = {"AdamW": "adamw_torch", "Adam": "adam", "SGD": "sgd",
             "PagedAdamW": "paged_adamw_32bit", "PagedAdamW8bit": "paged_adamw_8bit",
             "AdamW8bit": "adamw_bnb_8bit"}
    return table.get(short, name)


def build(doc: ConfigDoc) -> TrainingSetup:
    """The TrainingSetup of a litgpt finetuning config."""
    ckpt = doc.setting("checkpoint_dir", as_str) or default(
        "checkpoints/stabilityai/stablelm-base-alpha-3b", _SRC, "checkpoint_dir")

    prec = doc.setting("precision", lambda v: None if v is None else as_str(v).lower())
    if prec is None or (prec.known and prec.value is None):
        where = prec
        bf16 = Setting("auto", Origin.LIBRARY_DEFAULT, None, None,
                       _SRC_PREC + " (bf16-mixed where the GPU supports bf16, else 16-mixed)",
                       "precision")
        fp16 = Setting(False, Origin.LIBRARY_DEFAULT, None, None,
                       _SRC_PREC + " (16-mixed only on GPUs without bf16)", "precision")
        dtype = Setting("float32", Origin.LIBRARY_DEFAULT, None, None,
                        _SRC_PREC + " (-mixed: float32 weights)", "precision")
        if where is not None:
            bf16 = Setting("auto", Origin.LITERAL, where.span, where.key_span, bf16.source,
                           "precision")
    elif prec.known and prec.value in _PRECISION:
        b, f, d = _PRECISION[prec.value]
        bf16, fp16, dtype = derived(b, prec), derived(f, prec), derived(d, prec)
    else:
        bf16 = fp16 = dtype = Setting(None, Origin.UNKNOWN, prec.span, prec.key_span, None,
                                      prec.expr if not prec.known else f"precision: {prec.value}")

    model = ModelLoad(name_or_path=ckpt, torch_dtype=dtype, span=ckpt.key_span)

    quantize = doc.setting("quantize", lambda v: None if v is None else as_str(v).lower())
    quant = None
    quantized = False
    if quantize is not None and quantize.known and quantize.value is not None:
        spec = _QUANTIZE.get(quantize.value)
        if spec is None:
            quant = Quantization(method=Setting(None, Origin.UNKNOWN, quantize.span,
                                                quantize.key_span, None,
                                                f"quantize: {quantize.value}"),
                                 bits=Setting.unknown(f"quantize: {quantize.value}"),
                                 span=quantize.key_span)
        else:
            quantized = True
            bits, qtype, dq = spec
            fields: dict[str, Any] = {"method": derived("bitsandbytes", quantize),
                                      "bits": derived(bits, quantize)}
            if qtype is not None:
                fields["bnb_4bit_quant_type"] = derived(qtype, quantize)
                fields["bnb_4bit_use_double_quant"] = derived(dq, quantize)
                fields["bnb_4bit_compute_dtype"] = dtype
            quant = Quantization(span=quantize.key_span, **fields)
    elif quantize is not None and not quantize.known:
        quant = Quantization(method=quantize, bits=quantize, span=quantize.key_span)

    lora = _lora(doc, ckpt)
    devices = doc.setting("devices", _devices) or default(1, _SRC, "devices")
    nodes = doc.setting("num_nodes", _devices) or default(1, _SRC, "num_nodes")
    training, dataloaders = _training(doc, bf16, fp16, devices, nodes, quantized)
    launch: list[Evidence] = []
    for s, what in ((devices, "devices"), (nodes, "num_nodes")):
        if s.known and s.value > 1 and s.origin is not Origin.LIBRARY_DEFAULT:
            launch.append(Evidence("multi-gpu", s.span, f"{what}: {s.value}"))
    if launch:
        launch.append(Evidence("fsdp", launch[0].span,
                               "litgpt finetune/lora.py uses FSDPStrategy when devices > 1"))
    return doc.new_setup("litgpt", NAME, model=model, quantization=quant, lora=lora,
                         training=training, dataloaders=dataloaders, launch=tuple(launch))


def _lora(doc: ConfigDoc, ckpt: Setting) -> Lora | None:
    present = [k for k in ("lora_r", "lora_alpha", "lora_dropout", *_SWITCHES) if doc.has(k)]
    if not present:
        return None  # a full or adapter finetuning config
    switches: dict[str, Setting] = {
        k: doc.setting(k, as_bool) or default(_SWITCH_DEFAULTS[k], _SRC, k) for k in _SWITCHES}
    if all(s.known for s in switches.values()) and ckpt.known:
        names = hf_module_names(str(ckpt.value), {k: bool(s.value) for k, s in switches.items()})
    else:
        names = None
    first = next((s for s in switches.values() if s.span is not None), None)
    if names is not None:
        on = [k for k, s in switches.items() if s.value]
        targets = Setting(names, Origin.LITERAL if first else Origin.LIBRARY_DEFAULT,
                          first.span if first else None, first.key_span if first else None,
                          f"{_SRC_CONVERT} ({', '.join(on)})", "lora_query/.../lora_head")
    else:
        targets = Setting(None, Origin.UNKNOWN, first.span if first else None,
                          first.key_span if first else None, None,
                          "lora_query/lora_key/lora_value/lora_projection/lora_mlp/lora_head "
                          "(module names of this checkpoint's architecture not known)")
    head = switches["lora_head"]
    return Lora(
        r=doc.setting("lora_r", as_count) or default(8, _SRC, "lora_r"),
        lora_alpha=doc.setting("lora_alpha", as_int) or default(16, _SRC, "lora_alpha"),
        lora_dropout=doc.setting("lora_dropout", as_float) or default(0.05, _SRC,
                                                                      "lora_dropout"),
        target_modules=targets,
        modules_to_save=default(None, _SRC, "lora_head"),
        span=(doc.entry(present[0]).key_span if doc.entry(present[0]) else None),
        extra={k: s for k, s in switches.items()} | {"lora_head": head},
    )


def _training(doc: ConfigDoc, bf16: Setting, fp16: Setting, devices: Setting, nodes: Setting,
              quantized: bool) -> tuple[TrainingArgs, tuple[DataLoaderSpec, ...]]:
    f: dict[str, Any] = {"bf16": bf16, "fp16": fp16}
    micro = doc.setting("train.micro_batch_size", as_count) or default(4, _SRC,
                                                                     "train.micro_batch_size")
    f["per_device_train_batch_size"] = micro
    glob = doc.setting("train.global_batch_size", as_count) or default(
        128, _SRC, "train.global_batch_size")
    if glob.known and micro.known and devices.known and micro.value > 0:
        per_device = glob.value // devices.value
        gas = max(1, per_device // micro.value)
        origin_from = glob if glob.origin is not Origin.LIBRARY_DEFAULT else micro
        f["gradient_accumulation_steps"] = Setting(
            gas, origin_from.origin, origin_from.span, origin_from.key_span,
            f"train.global_batch_size {glob.value} // devices {devices.value} // "
            f"train.micro_batch_size {micro.value} (litgpt/args.py gradient_accumulation_iters)",
            "train.global_batch_size")
    seq = doc.setting("train.max_seq_length", lambda v: None if v is None else as_count(v))
    f["max_seq_length"] = seq or default(None, _SRC + " (None: the longest sample)",
                                         "train.max_seq_length")
    if devices.known and nodes.known:
        multi = devices.value * nodes.value > 1
        src = (_SRC + ": devices > 1 runs FSDPStrategy(activation_checkpointing_policy={Block})"
               if multi else _SRC + ": on one device there is no activation checkpointing and "
               "no config key to turn it on")
        base = devices if devices.origin is not Origin.LIBRARY_DEFAULT else None
        f["gradient_checkpointing"] = Setting(multi, Origin.LIBRARY_DEFAULT, None, None, src,
                                              None if base is None else "devices")
    else:
        f["gradient_checkpointing"] = Setting(None, Origin.UNKNOWN, devices.span,
                                              devices.key_span, None, "devices")
    opt = doc.setting("optimizer", lambda v: _optimizer_name(v, quantized))
    if opt is None:
        opt = default("paged_adamw_32bit" if quantized else "adamw_torch",
                      _SRC + (" (bitsandbytes PagedAdamW when quantized)" if quantized
                              else " (torch.optim.AdamW)"), "optimizer")
    f["optim"] = opt
    lr = doc.setting("optimizer.init_args.lr", as_float) or doc.setting("train.learning_rate",
                                                                        as_float)
    if lr is not None:
        f["learning_rate"] = lr
    for field, key, conv in (("num_train_epochs", "train.epochs", as_float),
                             ("max_steps", "train.max_steps",
                              lambda v: None if v is None else as_int(v))):
        s = doc.setting(key, conv)
        if s is not None:
            f[field] = s
    workers = doc.setting("data.init_args.num_workers", as_workers)
    if workers is None and not doc.has("data"):
        workers = default(4, _SRC_DATA, "data.init_args.num_workers")
    loaders: tuple[DataLoaderSpec, ...] = ()
    if workers is not None:
        loaders = (DataLoaderSpec(num_workers=workers, batch_size=micro,
                                  span=workers.key_span),)
    return TrainingArgs(**f), loaders
