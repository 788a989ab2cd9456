"""The JSON schema of ``lintlora estimate --format json`` (printed by ``--json-schema``).

A script can drive the command on this contract: ``schema_version`` changes only when a field
is removed or changes meaning (adding a field keeps it). One file with one setup (or flags
alone) prints one report object; a file with several setups prints
``{"schema_version": N, "estimates": [report, ...]}``.

Units: every ``*_bytes`` field and every ``breakdown`` value is bytes (GiB = 2**30 bytes);
``*_seconds`` are seconds; ``tokens_per_second`` tokens per second. The three counters say what
they predict (``counters``): ``allocated`` = ``torch.cuda.max_memory_allocated()``,
``reserved`` = ``torch.cuda.max_memory_reserved()``, ``device`` = what ``nvidia-smi`` shows
(reserved + CUDA context), the figure that must fit on the card.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "REPORT_SCHEMA", "COUNTERS", "counters_json"]

SCHEMA_VERSION = 1

COUNTERS = {
    "allocated": "torch.cuda.max_memory_allocated()",
    "reserved": "torch.cuda.max_memory_reserved()",
    "device": "nvidia-smi memory used by the process (reserved + CUDA context): what must fit",
}


def counters_json(estimate) -> dict:
    """``{"allocated": {"bytes": .., "predicts": ..}, ...}`` for a :class:`MemoryEstimate`."""
    return {name: {"bytes": int(getattr(estimate, f"{name}_bytes")), "unit": "bytes", "predicts": what}
            for name, what in COUNTERS.items()}


_BYTES = {"type": "integer", "minimum": 0}
_NBYTES = {"type": ["integer", "null"]}
_COUNTER = {"type": "object", "required": ["bytes", "unit", "predicts"],
            "properties": {"bytes": _BYTES, "unit": {"const": "bytes"}, "predicts": {"type": "string"}}}

_ESTIMATE = {
    "type": "object",
    "required": ["model", "framework", "allocated_bytes", "reserved_bytes", "device_bytes", "counters",
                 "breakdown", "peak_phase", "trainable_params", "assumptions", "inputs", "rough", "training",
                 "warnings", "gpu", "gpu_memory_bytes", "headroom_bytes"],
    "properties": {
        "model": {"type": "string"},
        "framework": {"type": "string"},
        "allocated_bytes": _BYTES,
        "reserved_bytes": _BYTES,
        "device_bytes": _BYTES,
        "counters": {"type": "object", "required": list(COUNTERS),
                     "properties": {k: _COUNTER for k in COUNTERS}},
        "breakdown": {"type": "object", "additionalProperties": {"type": "integer"},
                      "required": ["weights", "adapter_weights", "gradients", "optimizer_states", "activations",
                                   "logits", "transient", "framework", "allocator_slack", "cuda_context"]},
        "peak_phase": {"type": "string"},
        "trainable_params": {"type": "integer", "minimum": 0},
        "activations_per_token_layer_bytes": {"type": "number", "minimum": 0},
        "assumptions": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "assumed_versions": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["version", "origin"],
            "properties": {"version": {"type": "string"}, "origin": {"type": "string"}}}},
        "inputs": {"type": "object", "required": ["method", "batch_size", "seq_len", "gradient_checkpointing",
                                                  "framework", "optimizer_in_bwd", "activation_offload", "compile",
                                                  "checkpoint_offload", "liger", "assumed_versions"],
                   "properties": {"method": {"type": "string"}, "batch_size": {"type": "integer", "minimum": 1},
                                  "seq_len": {"type": "integer", "minimum": 1},
                                  "gradient_checkpointing": {"type": "boolean"}, "framework": {"type": "string"},
                                  "optimizer_in_bwd": {"type": "boolean"}, "activation_offload": {"type": "boolean"},
                                  "compile": {"type": "boolean"}, "checkpoint_offload": {"type": "boolean"},
                                  "liger": {"type": "boolean"}, "loss_impl": {"type": ["string", "null"]},
                                  "assumed_versions": {"type": "array", "items": {
                                      "type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}}}},
        "rough": {"type": "boolean"},
        "host_offload_bytes": _BYTES,
        "sharding": {"type": "string"},
        "training": {"type": "boolean"},
        "gpu": {"type": ["string", "null"]},
        "gpu_memory_bytes": _NBYTES,
        "headroom_bytes": _NBYTES,
        "time_seconds": {"type": ["number", "null"]},
        "step_seconds": {"type": ["number", "null"]},
        "tokens_per_second": {"type": ["number", "null"]},
    },
}

_REPORT = {
    "type": "object",
    "required": ["schema_version", "estimate", "fit", "fit_heading", "verdict"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "estimate": _ESTIMATE,
        "fit": {"type": "array", "items": {"type": "object"}},
        "fit_heading": {"type": "string"},
        "verdict": {"type": ["object", "null"]},
    },
}

REPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lintlora estimate --format json",
    "description": __doc__.strip().splitlines()[0],
    "oneOf": [
        _REPORT,
        {"type": "object", "required": ["schema_version", "estimates"],
         "properties": {"schema_version": {"const": SCHEMA_VERSION},
                        "estimates": {"type": "array", "items": _REPORT, "minItems": 2}}},
    ],
}
