"""unsloth's mapping of MLP target names onto a MoE model's expert weights.

``FastLanguageModel.get_peft_model`` passes peft ``target_parameters`` for a MoE model's fused
expert weights when ``target_modules`` names the MLP projections (unsloth/models/_utils.py
``get_moe_target_parameters`` @ 015bdef0d94a: ``"gate_proj"``/``"up_proj"``/``"gate_up_proj"``
-> ``mlp.experts.gate_up_proj``, ``"down_proj"`` -> ``mlp.experts.down_proj``, each only where
such a parameter exists). gpt-oss's experts are such ``nn.Parameter`` tensors (transformers
``GptOssExperts``), so unsloth's gpt-oss notebooks' ``["q_proj", ..., "gate_proj", "up_proj",
"down_proj"]`` adapt every expert, where plain peft would match no module for the three MLP names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["unsloth_moe_targets"]

_GATE_UP = ("gate_proj", "up_proj", "gate_up_proj")


def unsloth_moe_targets(arch: Any, targets: Any, tparams: tuple[str, ...]) -> tuple[Any, tuple[str, ...], str | None]:
    """``(target_modules, target_parameters, note)`` as unsloth passes them to peft for ``arch``;
    unchanged (note ``None``) unless ``arch`` has fused expert parameters that a target names."""
    if not isinstance(targets, (tuple, list)) or not getattr(arch, "is_moe", False):
        return targets, tparams, None
    experts = {s.name: s for s in arch.block_linears() if getattr(s, "parameter", False)}
    modules = {s.name for s in arch.block_linears() if not getattr(s, "parameter", False)}
    wanted: list[str] = []
    if any(t in _GATE_UP for t in targets) and "gate_up_proj" in experts:
        wanted.append("mlp.experts.gate_up_proj")
    if "down_proj" in targets and "down_proj" in experts:
        wanted.append("mlp.experts.down_proj")
    if not wanted:
        return targets, tparams, None
    # the MLP names that are no module of the model are the ones unsloth turned into parameters
    kept = tuple(t for t in targets if not ((t in _GATE_UP or t == "down_proj") and t not in modules))
    new = tuple(dict.fromkeys(tuple(tparams) + tuple(wanted)))
    note = ("unsloth get_peft_model: target_modules " + ", ".join(t for t in targets if t not in kept)
            + " become LoRA on the fused expert weights (target_parameters " + ", ".join(wanted)
            + "; unsloth models/_utils.py get_moe_target_parameters)")
    return kept, new, note
