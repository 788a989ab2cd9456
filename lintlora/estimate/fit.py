"""The ranked "what would make it fit" list.

Each option changes the estimator inputs the way the user would change the setup and runs the
memory model again on the changed inputs: the savings are recomputed, never asserted.
Options (only those that apply): gradient checkpointing on; batch halved with gradient
accumulation doubled (same effective batch); sequence length halved; an 8-bit optimizer;
a 4-bit (NF4, double-quantized) base; fewer LoRA targets (attention projections only);
a fused linear + cross-entropy loss (Liger; torchtune's chunked ``LinearCrossEntropyLoss``); SDPA instead
of eager attention. Ranked by the resulting device peak, lowest first.

A value the estimate assumed (``EstimateInputs.assumed``: the file does not say it) is never
"changed": halving an assumed batch or sequence length is not offered, and an option that
flips an assumed switch says the current value was assumed. Each change is phrased in the
file's own terms: TrainingArguments/peft names for Python files and flags, the dialect's keys
for YAML configs (:func:`lintlora.extract.dialects.yaml_snippet`, plus the dialect-specific
spellings below, each from the tool's own docs or source as cited by its dialect module).

:func:`heading` titles the list: "what would make it fit" only when the estimate does not fit
the GPU or leaves less than :data:`TIGHT_HEADROOM` of it free, "ways to lower the peak" otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.memory import EstimateInputs, MemoryEstimate, estimate_memory
from lintlora.estimate.profiles import Profile, get_profile
from lintlora.training_setup import Origin

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.training_setup import Setting, TrainingSetup

__all__ = ["FitOption", "fit_options", "heading", "TIGHT_HEADROOM", "batch_text", "sequence_text"]


@dataclass(frozen=True)
class FitOption:
    """One change and its re-estimated peak.

    Attributes:
        key: stable identifier (``gradient_checkpointing``, ``halve_batch``, ...).
        change: what to change, in the setup's terms.
        device_bytes: device peak after the change; ``saving_bytes``: before − after.
        fits: whether it fits the GPU (``None`` without a GPU).
        estimate: the full re-estimate.
    """

    key: str
    change: str
    device_bytes: int
    saving_bytes: int
    fits: bool | None
    estimate: MemoryEstimate

    def to_json(self) -> dict:
        """Plain-data form for ``--format json``."""
        return {"key": self.key, "change": self.change, "device_bytes": self.device_bytes,
                "saving_bytes": self.saving_bytes, "fits": self.fits}


# headroom below this fraction of the GPU's memory counts as "tight": allocator fragmentation
# and batches longer than the estimate's can take a few percent (reserved/allocated is
# 1.05-1.15, estimator-notes §3)
TIGHT_HEADROOM = 0.10

# Dialect spellings yaml_snippet does not cover, per option key. Sources: axolotl
# (lintlora/extract/dialects/axolotl.py: adapter: qlora requires load_in_4bit: true;
# sdp_attention -> sdpa; liger_fused_linear_cross_entropy with axolotl's LigerPlugin),
# LLaMA-Factory (llama_factory.py: quantization_bit, enable_liger_kernel, flash_attn, lora_target),
# torchtune (qlora_* model builders, LoRA on attention via lora_attn_modules whose output
# projection is output_proj, apply_lora_to_mlp; docs/source/tutorials/memory_optimizations.rst
# for bitsandbytes.optim.PagedAdamW8bit and LinearCrossEntropyLoss), litgpt (finetune_lora
# --quantize bnb.nf4-dq, lora_mlp/lora_head switches).
_DIALECT_TEXT: dict[str, dict[str, str]] = {
    "axolotl": {
        "quantize_4bit": "adapter: qlora with load_in_4bit: true",
        "fused_loss": "plugins: [axolotl.integrations.liger.LigerPlugin] with liger_fused_linear_cross_entropy: true",
        "sdpa": "sdp_attention: true",
        "fewer_targets": "lora_target_modules: {attn} (lora_target_linear: false){no_save}",
    },
    "llama-factory": {
        "quantize_4bit": "quantization_bit: 4",
        "fused_loss": "enable_liger_kernel: true",
        "sdpa": "flash_attn: sdpa",
        "fewer_targets": "lora_target: {attn_csv}{no_save}",
    },
    "torchtune": {
        "optimizer_8bit": "optimizer._component_: bitsandbytes.optim.PagedAdamW8bit",
        "quantize_4bit": "the model's QLoRA builder in model._component_ (qlora_... instead of lora_...)",
        "fused_loss": "loss._component_: torchtune.modules.loss.LinearCrossEntropyLoss",
        "fewer_targets": "model.lora_attn_modules: ['q_proj', 'k_proj', 'v_proj', 'output_proj'] with "
                         "apply_lora_to_mlp: False",
    },
    "litgpt": {
        "quantize_4bit": "quantize: bnb.nf4-dq",
        "fewer_targets": "lora_mlp: false and lora_head: false",
    },
}
# TrainingArguments/SFTConfig YAML (hf_args.py): use_liger_kernel is a TrainingArguments field;
# TrlParser's ModelConfig adds load_in_4bit and attn_implementation
_HF_YAML = {"fused_loss": "use_liger_kernel: true"}
for _name in ("hf-training-args", "firefly", "generic"):
    _DIALECT_TEXT[_name] = dict(_HF_YAML)
_DIALECT_TEXT["trl"] = {**_HF_YAML, "quantize_4bit": "load_in_4bit: true", "sdpa": "attn_implementation: sdpa",
                        "fewer_targets": "lora_target_modules: {attn}{no_save}"}
_DIALECT_TEXT["llama-factory-v1"] = {k: v for k, v in _DIALECT_TEXT["llama-factory"].items()
                                     if k not in ("fewer_targets",)}
# how each dialect says "and drop the modules_to_save" (fewer_targets), added only when the file
# sets some: the dialect's modules_to_save key (axolotl lora_modules_to_save, LLaMA-Factory
# additional_target, trl ModelConfig lora_modules_to_save); peft's name for Python files
_NO_SAVE = {"axolotl": " and no lora_modules_to_save", "llama-factory": " and no additional_target",
            "trl": " and no lora_modules_to_save", None: " and no modules_to_save"}
# options a dialect cannot express (no key): left out rather than phrased in another tool's terms
_NOT_IN = {"litgpt": {"gradient_checkpointing", "optimizer_8bit", "fused_loss", "sdpa"},
           "llama-factory-v1": {"optimizer_8bit", "fused_loss", "sdpa", "quantize_4bit"}}


class _Phrasing:
    """How a change is written for one file kind: ``dialect`` ``None`` = Python / flags."""

    def __init__(self, dialect: str | None) -> None:
        self.dialect = dialect
        self._snippet = None
        if dialect is not None:
            from lintlora.extract.dialects import config_key, yaml_snippet

            self._snippet, self._key = yaml_snippet, config_key

    def can(self, key: str) -> bool:
        return key not in _NOT_IN.get(self.dialect or "", set())

    def setting(self, field: str, value, python: str) -> str | None:
        """The YAML line for ``field: value`` in the dialect, or ``python`` for Python files."""
        if self.dialect is None:
            return python
        return self._snippet(self.dialect, field, value)

    def key(self, field: str) -> str | None:
        return None if self.dialect is None else self._key(self.dialect, field)

    def text(self, option: str, python: str, **fmt) -> str | None:
        if self.dialect is None:
            return python
        t = _DIALECT_TEXT.get(self.dialect, {}).get(option)
        return t.format(**fmt) if t is not None else None


_NAME = re.compile(r"-{0,2}[A-Za-z_][\w.\-]*")
"""A ``Setting.source`` that is a name the script uses (``--max_len``, ``max_seq_length``,
``ScriptArguments.max_len``) rather than a citation."""


def _script_name(setting: "Setting") -> str | None:
    """The name the script gives a value it reads from elsewhere (an argparse flag, a variable,
    a dataclass field), or ``None`` for a literal or a library default."""
    if setting.origin in (Origin.LITERAL, Origin.LIBRARY_DEFAULT, Origin.UNKNOWN, Origin.ASSUMED):
        return None
    src = (setting.source or "").strip()
    return src if _NAME.fullmatch(src) else None


def _python_sequence(setup: "TrainingSetup | None", seq: int, new: int) -> str:
    """The sequence-length change in the script's own terms: the flag or variable it comes from
    (``--max_len 2048 -> 1024 (the tokenizer's max_length)``), a library default named as such,
    else ``sequence length 2048 -> 1024``; without a setup (flags), TrainingArguments' name."""
    if setup is None:
        return f"max_seq_length {seq} -> {new}"
    setting = setup.get("training.max_seq_length")
    if not setting.known or setting.value != seq:
        return f"sequence length {seq} -> {new}"
    if setting.origin is Origin.LIBRARY_DEFAULT:
        from lintlora.estimate.shape import library_possessive

        return f"sequence length {seq} ({library_possessive(setting)} default) -> {new}"
    from lintlora.estimate.from_setup import _from_tokenizer

    tokenizer = _from_tokenizer(setup, setting)
    name = _script_name(setting)
    if name:
        return f"{name} {seq} -> {new}" + (" (the tokenizer's max_length)" if tokenizer else "")
    what = "the tokenizer's max_length" if tokenizer else "sequence length"
    return f"{what} {seq} -> {new}"


def _python_batch(setup: "TrainingSetup | None", batch: int, new: int) -> str:
    """The batch change in the script's own terms: ``per_device_train_batch_size`` (through the
    flag or variable it comes from) with gradient accumulation, or a DataLoader's
    ``batch_size`` in a hand-written loop."""
    same = "with gradient_accumulation_steps doubled (same effective batch)"
    if setup is None:
        return f"per_device_train_batch_size {batch} -> {new} {same}"
    setting = setup.get("training.per_device_train_batch_size")
    if setting.known and setting.value == batch:
        name = _script_name(setting)
        if name and not name.endswith("per_device_train_batch_size"):
            return f"{name} {batch} -> {new} (per_device_train_batch_size) {same}"
        return f"per_device_train_batch_size {batch} -> {new} {same}"
    if any(d.batch_size.known and d.batch_size.value == batch for d in setup.dataloaders):
        return (f"DataLoader batch_size {batch} -> {new}, stepping the optimizer every 2 batches "
                "(same effective batch)")
    return f"batch size {batch} -> {new} with gradient accumulation doubled (same effective batch)"


def batch_text(setup: "TrainingSetup | None", dialect: str | None, batch: int, new: int,
               accumulation: int | None, new_accumulation: int | None) -> str | None:
    """A batch change to ``new`` in the file's own terms, with the gradient accumulation that
    keeps the effective batch (``accumulation`` as the file sets it, ``None`` when unknown):
    ``per_device_train_batch_size=8 -> 2 with gradient_accumulation_steps 4 -> 16 (same
    effective batch, 32)``, the flag or variable it comes from, a DataLoader's ``batch_size``,
    or the dialect's keys (``micro_batch_size: 2 (from 8) with gradient_accumulation_steps: 16
    (from 4)``). ``None`` when the dialect has no batch key."""
    factor = batch // new if new and batch % new == 0 else None
    same = (f" (same effective batch, {batch * accumulation})" if accumulation else " (same effective batch)")
    if dialect is not None:
        say = _Phrasing(dialect)
        line = say.setting("training.per_device_train_batch_size", new, "")
        ga = say.key("training.gradient_accumulation_steps")
        if line is None:
            return None
        if ga and accumulation and new_accumulation:
            return f"{line} (from {batch}) with {ga}: {new_accumulation} (from {accumulation}){same}"
        if ga and factor:
            return f"{line} (from {batch}) with {ga} {factor}× as large{same}"
        return f"{line} (from {batch}), the same effective batch through gradient accumulation"
    if accumulation and new_accumulation:
        acc = f"gradient_accumulation_steps {accumulation} -> {new_accumulation}"
    else:
        acc = f"gradient accumulation {factor}× as large" if factor else "gradient accumulation raised to match"
    if setup is not None:
        setting = setup.get("training.per_device_train_batch_size")
        if setting.known and setting.value == batch:
            name = _script_name(setting)
            if name and not name.endswith("per_device_train_batch_size"):
                return f"{name} {batch} -> {new} (per_device_train_batch_size) with {acc}{same}"
            return f"per_device_train_batch_size={batch} -> {new} with {acc}{same}"
        if any(d.batch_size.known and d.batch_size.value == batch for d in setup.dataloaders):
            every = f", stepping the optimizer every {factor} batches" if factor else ""
            return f"DataLoader batch_size {batch} -> {new}{every} (same effective batch)"
    return f"batch size {batch} -> {new} with {acc}{same}"


def _yaml_sequence(setup: "TrainingSetup | None", dialect: str, new: int) -> str | None:
    """``key: new`` for the sequence length in a config, under the key the file itself writes
    when that is a top-level key other than the dialect's current one (an older TRL config's
    ``max_seq_length``, which TRL read until 0.20, where current TRL says ``max_length``);
    else the dialect's key; ``None`` when the dialect has no such key."""
    line = _Phrasing(dialect).setting("training.max_seq_length", new, "")
    if line is None or setup is None:
        return line
    s = setup.get("training.max_seq_length")
    own = s.expr if s.origin is Origin.LITERAL and s.expr else None
    if own and _KEY.fullmatch(own) and ":" in line and _KEY.fullmatch(line.split(":", 1)[0]):
        return f"{own}: {new}"
    return line


_KEY = re.compile(r"[A-Za-z_]\w*")
"""A top-level config key (no dots: a nested key is written by :func:`yaml_snippet` alone)."""


def sequence_text(setup: "TrainingSetup | None", dialect: str | None, seq: int, new: int) -> str | None:
    """A sequence-length change to ``new`` tokens in the file's own terms (the key the file
    writes, else the dialect's key; for Python the script's flag, variable or the tokenizer's
    ``max_length``); ``None`` when the dialect has no such key."""
    if dialect is None:
        return _python_sequence(setup, seq, new)
    line = _yaml_sequence(setup, dialect, new)
    return None if line is None else f"{line} (from {seq})"


_GC_TRAINER = ("turn gradient checkpointing on (gradient_checkpointing=True with "
               "gradient_checkpointing_kwargs={'use_reentrant': False})")


def _python_checkpointing(setup: "TrainingSetup | None") -> str:
    """Turning checkpointing on where the script turns it off, as LL001's fix says (both read
    :func:`lintlora.facts.checkpointing`): ``prepare_model_for_kbit_training``'s argument when
    that call decides it, the ``gradient_checkpointing_disable()`` call, unsloth's
    ``get_peft_model`` argument, a ``gradient_checkpointing_enable`` call in a loop without a
    trainer; else the training arguments' flag."""
    if setup is None:
        return _GC_TRAINER
    from lintlora import facts

    call = facts.deciding_call(setup, facts.checkpointing(setup))
    if call is not None and call.kind == "prepare_model_for_kbit_training":
        return ("turn gradient checkpointing on: use_gradient_checkpointing=True in "
                "prepare_model_for_kbit_training (its default)")
    if call is not None and call.kind == "gradient_checkpointing_disable":
        return "turn gradient checkpointing on: remove the gradient_checkpointing_disable() call"
    if setup.framework == "unsloth":
        return 'turn gradient checkpointing on: use_gradient_checkpointing="unsloth" in FastLanguageModel.get_peft_model'
    if setup.training is None:
        return ("turn gradient checkpointing on: model.gradient_checkpointing_enable("
                "gradient_checkpointing_kwargs={'use_reentrant': False}) after loading the model")
    return _GC_TRAINER


def _candidates(arch: Architecture, i: EstimateInputs, dialect: str | None = None,
                setup: "TrainingSetup | None" = None) -> list[tuple[str, str, EstimateInputs]]:
    out: list[tuple[str, str, EstimateInputs]] = []
    say = _Phrasing(dialect)
    assumed = set(i.assumed)

    def note(fld: str, what: str) -> str:
        return f" (the estimate assumed {what}: not given)" if fld in assumed else ""

    def add(key: str, change: str | None, new: EstimateInputs) -> None:
        if change is not None and say.can(key):
            out.append((key, change, new))

    if not i.gradient_checkpointing:
        change = say.setting("training.gradient_checkpointing", True,
                             _python_checkpointing(setup) if dialect is None else "")
        if change is not None:
            change += note("gradient_checkpointing", "it off")
        add("gradient_checkpointing", change, replace(i, gradient_checkpointing=True))
    if i.batch_size > 1 and "batch_size" not in assumed:
        nb = i.batch_size // 2
        if dialect is None:
            change = _python_batch(setup, i.batch_size, nb)
        else:
            line = say.setting("training.per_device_train_batch_size", nb, "")
            ga = say.key("training.gradient_accumulation_steps")
            change = None if line is None else (
                f"{line} (from {i.batch_size}) with {ga} doubled (same effective batch)" if ga
                else f"{line} (from {i.batch_size}), the same effective batch through gradient accumulation")
        add("halve_batch", change, replace(i, batch_size=nb))
    if i.seq_len > 256 and "seq_len" not in assumed:
        ns = i.seq_len // 2
        line = (_python_sequence(setup, i.seq_len, ns) if dialect is None
                else _yaml_sequence(setup, dialect, ns))
        if line is not None and dialect is not None:
            line += f" (from {i.seq_len})"
        add("shorter_sequence", line, replace(i, seq_len=ns))
    o = i.optim.lower()
    if "8bit" not in o and "4bit" not in o and "adafactor" not in o and not o.startswith("sgd"):
        python = f"optim {i.optim} -> paged_adamw_8bit"
        change = say.text("optimizer_8bit", python) or say.setting("training.optim", "paged_adamw_8bit", python)
        if change is not None:
            change += note("optim", f"{i.optim}")
        add("optimizer_8bit", change, replace(i, optim="paged_adamw_8bit"))
    if not i.quant and i.method != "full":
        change = say.text("quantize_4bit", "load the base in 4 bits (BitsAndBytesConfig(load_in_4bit=True, "
                          "bnb_4bit_quant_type='nf4', bnb_4bit_use_double_quant=True, "
                          "bnb_4bit_compute_dtype=torch.bfloat16))")
        add("quantize_4bit", change,
            replace(i, method="qlora", quant="nf4", double_quant=True, quant_compute_dtype=i.compute_dtype))
    if i.method != "full" and "target_modules" not in assumed:
        attn_only = tuple(n for n in arch.attention_modules)
        current = i.target_modules
        broad = current == "all-linear" or (isinstance(current, tuple) and any(
            n in arch.mlp_modules for n in current)) or bool(i.modules_to_save)
        if broad:
            no_save = _NO_SAVE.get(dialect, "") if i.modules_to_save else ""
            change = say.text("fewer_targets", f"target_modules={list(attn_only)}{no_save}",
                              attn=list(attn_only), attn_csv=",".join(attn_only), no_save=no_save)
            add("fewer_targets", change, replace(i, target_modules=attn_only, modules_to_save=()))
    fused = i.liger or (i.loss_impl == "fused")
    if not fused and i.framework in ("transformers", "trl", "axolotl", "llama-factory"):
        add("fused_loss", say.text("fused_loss", "use_liger_kernel=True (fused norms, SwiGLU and linear + "
                                   "cross-entropy)"), replace(i, liger=True))
    elif not fused and i.framework == "torchtune" and i.loss_impl != "chunked" and i.trainer == "sft":
        # (a preference recipe's loss._component_ is its DPOLoss/RSOLoss: no cross-entropy to swap)
        # torchtune's chunked losses keep ~4 B per token·vocab (from_setup._TORCHTUNE_LOSSES)
        add("fused_loss", say.text("fused_loss", "loss._component_: torchtune.modules.loss.LinearCrossEntropyLoss"),
            replace(i, loss_impl="chunked"))
    if i.attn_implementation == "eager":
        add("sdpa", say.text("sdpa", "attn_implementation='sdpa' (no s² attention probabilities kept)"),
            replace(i, attn_implementation="sdpa"))
    return out


def heading(estimate: MemoryEstimate, setup=None) -> str:
    """The list's title: ``"what would make it fit"`` when the estimate does not fit the GPU or
    leaves less than :data:`TIGHT_HEADROOM` of its memory free; ``"ways to lower the peak"``
    when it fits comfortably or no GPU is known.

    When that verdict rests on a batch size or sequence length the file does not set
    (:attr:`lintlora.estimate.shape.Shape.guessed`; ``setup``, the file's
    :class:`~lintlora.training_setup.TrainingSetup` when there is one, lets library defaults
    count too), the title says so: ``"what would make it fit at the assumed 512 tokens per
    sequence"``."""
    mem = estimate.gpu_memory_bytes
    if mem and estimate.headroom_bytes is not None and estimate.headroom_bytes < TIGHT_HEADROOM * mem:
        from lintlora.estimate.shape import shape_of

        shape = shape_of(estimate.inputs, setup)
        return "what would make it fit" + (f" at {shape.basis}" if shape is not None and shape.guessed else "")
    return "ways to lower the peak"


def fit_options(estimate: MemoryEstimate, arch: Architecture, profile: Profile | None = None,
                dialect: str | None = None, setup: "TrainingSetup | None" = None) -> list[FitOption]:
    """Re-estimate every applicable change of ``estimate.inputs``; lowest peak first.

    Args:
        dialect: the config dialect (``TrainingSetup.dialect``) to phrase changes in its keys;
            ``None`` for Python files and flags (TrainingArguments / peft names).
        setup: the file's setup, when the estimate is of a file: a Python script's batch and
            sequence length are then named as the script names them (its flag or variable,
            a DataLoader's ``batch_size``, the tokenizer's ``max_length``).

    Options that save less than 1% of the device peak are dropped; a load-only estimate (a file
    that does not train) has none.
    """
    if estimate.inputs.method == "load":
        return []
    profile = profile or get_profile(estimate.inputs.framework)
    before = estimate.device_bytes
    options: list[FitOption] = []
    for key, change, new_inputs in _candidates(arch, estimate.inputs, dialect, setup):
        try:
            est = estimate_memory(new_inputs, arch, profile, gpu=estimate.gpu,
                                  gpu_memory_bytes=estimate.gpu_memory_bytes)
        except ValueError:
            continue
        saving = before - est.device_bytes
        if saving < 0.01 * before:
            continue
        options.append(FitOption(key, change, est.device_bytes, saving, est.fits, est))
    options.sort(key=lambda o: o.device_bytes)
    return options
