"""The ranked "what would make it fit" list.

Each option changes the estimator inputs the way the user would change the setup and runs the
memory model again on the changed inputs: the savings are recomputed, never asserted.
Options (only those that apply): gradient checkpointing on; batch halved with gradient
accumulation doubled (same effective batch); sequence length halved; an 8-bit optimizer;
a 4-bit (NF4, double-quantized) base; fewer LoRA targets (attention projections only);
a fused linear + cross-entropy loss (Liger); SDPA instead of eager attention. Ranked by the
resulting device peak, lowest first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.memory import EstimateInputs, MemoryEstimate, estimate_memory
from lintlora.estimate.profiles import Profile, get_profile

__all__ = ["FitOption", "fit_options"]


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


def _candidates(arch: Architecture, i: EstimateInputs) -> list[tuple[str, str, EstimateInputs]]:
    out: list[tuple[str, str, EstimateInputs]] = []
    if not i.gradient_checkpointing:
        out.append(("gradient_checkpointing", "turn gradient checkpointing on "
                    "(gradient_checkpointing=True with gradient_checkpointing_kwargs={'use_reentrant': False})",
                    replace(i, gradient_checkpointing=True)))
    if i.batch_size > 1:
        nb = i.batch_size // 2
        out.append(("halve_batch", f"per_device_train_batch_size {i.batch_size} -> {nb} with "
                    f"gradient_accumulation_steps doubled (same effective batch)", replace(i, batch_size=nb)))
    if i.seq_len > 256:
        ns = i.seq_len // 2
        out.append(("shorter_sequence", f"max_seq_length {i.seq_len} -> {ns}", replace(i, seq_len=ns)))
    o = i.optim.lower()
    if "8bit" not in o and "adafactor" not in o and not o.startswith("sgd"):
        out.append(("optimizer_8bit", f"optim {i.optim} -> paged_adamw_8bit", replace(i, optim="paged_adamw_8bit")))
    if not i.quant:
        m = "qlora" if i.method == "lora" else i.method
        if i.method != "full":
            out.append(("quantize_4bit", "load the base in 4 bits (BitsAndBytesConfig(load_in_4bit=True, "
                        "bnb_4bit_quant_type='nf4', bnb_4bit_use_double_quant=True, "
                        "bnb_4bit_compute_dtype=torch.bfloat16))",
                        replace(i, method=m, quant="nf4", double_quant=True, quant_compute_dtype=i.compute_dtype)))
    if i.method != "full":
        attn_only = tuple(n for n in arch.attention_modules)
        current = i.target_modules
        broad = current == "all-linear" or (isinstance(current, tuple) and any(
            n in arch.mlp_modules for n in current)) or bool(i.modules_to_save)
        if broad:
            out.append(("fewer_targets", f"target_modules={list(attn_only)} and no modules_to_save",
                        replace(i, target_modules=attn_only, modules_to_save=())))
    if not i.liger and i.framework in ("transformers", "trl", "axolotl", "llama-factory"):
        out.append(("fused_loss", "use_liger_kernel=True (fused norms, SwiGLU and linear + cross-entropy)",
                    replace(i, liger=True)))
    if i.attn_implementation == "eager":
        out.append(("sdpa", "attn_implementation='sdpa' (no s² attention probabilities kept)",
                    replace(i, attn_implementation="sdpa")))
    return out


def fit_options(estimate: MemoryEstimate, arch: Architecture, profile: Profile | None = None) -> list[FitOption]:
    """Re-estimate every applicable change of ``estimate.inputs``; lowest peak first.

    Options that save less than 1% of the device peak are dropped.
    """
    profile = profile or get_profile(estimate.inputs.framework)
    before = estimate.device_bytes
    options: list[FitOption] = []
    for key, change, new_inputs in _candidates(arch, estimate.inputs):
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
