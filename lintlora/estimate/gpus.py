"""GPU catalog: usable memory, bf16 support, dense tensor TFLOP/s, memory bandwidth.

Facts come from ``lintlora/data/gpus.json`` (a copy of the shared catalog; every record names
its sources, resolved by the file's ``source_index``). The file is read once, on first use.

Memory figure (``Gpu.memory_bytes``): what a process can allocate in, which the estimator's
*device* counter (PyTorch's reserved pool + the CUDA context) has to fit. The first of these a
record has, each with its source in the record:

1. ``usable_total_mib``: the total the CUDA driver gives a process, as PyTorch
   (``get_device_properties().total_memory``, "GPU 0 has a total capacity of X GiB"),
   TensorFlow (``deviceMemorySize``) or older nvidia-smi releases print it (Tesla T4: 15109 MiB,
   14.75 GiB);
2. ``reported_total_bytes``: deviceQuery's ``totalGlobalMem`` (the same CUDA-visible total);
3. ``reported_total_mib``: nvidia-smi's "Total" under recent drivers, which also counts a few
   hundred MiB the driver reserves for itself (T4: 15360 MiB, the 16 GiB less ECC's 1/16), so it
   can be 1-2% above what is usable;
4. the marketed capacity ``memory_gb × 2**30`` (for DRAM the marketed "GB" is binary): an upper
   bound; ECC and the driver take several hundred MiB more.

``Gpu.memory_source`` says which one applies and ``lintlora estimate --list-gpus`` prints it.
"""

from __future__ import annotations

import json
import pkgutil
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Gpu", "UnknownGpuError", "find_gpu", "list_gpus"]


class UnknownGpuError(LookupError):
    """No catalogued GPU matches the name. The message lists close matches."""


@dataclass(frozen=True)
class Gpu:
    """One accelerator.

    Attributes:
        name: catalog display name (``"GeForce RTX 3090"``).
        key: normalised lookup key of ``name``.
        memory_bytes: total device memory in bytes (see the module docstring).
        memory_source: where ``memory_bytes`` comes from, with its source (module docstring).
        memory_kind: ``"usable"`` (the CUDA-visible total), ``"nvidia-smi"`` (its Total, which
            includes the driver's reserve) or ``"nominal"`` (the marketed size).
        bf16_supported: bf16 tensor math available (compute capability >= 8.0 on NVIDIA).
        bf16_tflops: dense BF16 tensor TFLOP/s (10**12 FLOP/s), ``None`` without bf16.
        fp16_tflops: dense FP16 tensor TFLOP/s with FP32 accumulate (what AMP training uses).
        memory_bandwidth_gbps: peak DRAM bandwidth in GB/s (10**9 bytes/s).
        compute_capability: CUDA ``"major.minor"`` or ``None`` (AMD); every NVIDIA record cites
            it in ``compute_capability_source`` (NVIDIA's developer.nvidia.com/cuda-gpus table
            and the catalog's other sources). ``bf16_supported`` agrees with it (8.0 and newer),
            which ``tests/test_estimate_catalogs.py`` checks for every record.
        compute_capability_source: the catalog's source tags for ``compute_capability``.
        vendor, arch: identification.
        sources: the catalog's source tags for this record.
        aliases: lookup names from the catalog (``t4``, ``rtx3090``), the usual one first.
        ambiguity_note: set when an ambiguous alias (``a100``) was resolved to this record.
    """

    name: str
    key: str
    memory_bytes: int
    memory_source: str
    bf16_supported: bool
    bf16_tflops: float | None
    fp16_tflops: float | None
    memory_bandwidth_gbps: float | None
    compute_capability: str | None
    vendor: str = ""
    arch: str = ""
    sources: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    memory_kind: str = "nominal"
    ambiguity_note: str | None = None
    compute_capability_source: str = ""

    @property
    def capability(self) -> tuple[int, int] | None:
        """``compute_capability`` as ``(major, minor)`` integers (``"7.5"`` -> ``(7, 5)``), or
        ``None`` when the card has none (AMD) or the catalog text is not ``"major.minor"``."""
        text = self.compute_capability
        if not isinstance(text, str):
            return None
        major, _, minor = text.partition(".")
        if not (major.isdigit() and (minor.isdigit() or not minor)):
            return None
        return int(major), int(minor or 0)

    @property
    def pre_ampere(self) -> bool | None:
        """Whether the card predates NVIDIA Ampere: compute capability below 8.0, the line
        below which there are no bfloat16 or TF32 tensor cores and no FlashAttention-2 kernels
        (T4 7.5, V100 7.0, P100 6.0, RTX 20xx 7.5). ``None`` without a compute capability."""
        cap = self.capability
        return None if cap is None else cap < (8, 0)

    @property
    def memory_gib(self) -> float:
        """``memory_bytes`` in GiB (2**30 bytes)."""
        return self.memory_bytes / 2**30

    def training_tflops(self, dtype: str = "bfloat16") -> float | None:
        """Dense TFLOP/s for training in ``dtype`` (bf16 rate, else fp16 with fp32 accumulate).

        Source: the catalog README's guidance ("Which TFLOPS to use for a training-time
        estimate"); fp32 training is taken as the fp16 tensor rate / 2 (TF32 on Ampere+ is half
        the bf16 dense rate on A100/H100 datasheets), falling back to ``None`` when unknown.
        """
        if dtype == "bfloat16" and self.bf16_tflops:
            return self.bf16_tflops
        if dtype == "float32":
            base = self.bf16_tflops or self.fp16_tflops
            return base / 2 if base else None
        return self.fp16_tflops or self.bf16_tflops


def normalise(name: str) -> str:
    """Lower-case and drop spaces, dashes, underscores and a leading "nvidia"/"geforce"/"tesla".

    ``"NVIDIA GeForce RTX 3090"``, ``"rtx-3090"`` and ``"RTX 3090"`` all become ``"rtx3090"``.
    """
    s = name.lower().strip()
    s = re.sub(r"[\s_\-]+", "", s)
    for prefix in ("nvidia", "geforce", "tesla", "amd"):
        if s.startswith(prefix) and len(s) > len(prefix):
            s = s[len(prefix):]
    return s


@lru_cache(maxsize=1)
def _catalog() -> tuple[tuple[Gpu, ...], dict[str, Gpu], dict[str, list[str]]]:
    """Load gpus.json once: (records, index key -> Gpu, ambiguous key -> candidate names)."""
    # pkgutil.get_data: the package's own loader (a zip works too), cheaper to import than
    # importlib.resources
    data = pkgutil.get_data("lintlora", "data/gpus.json")
    if data is None:  # pragma: no cover - a loader that cannot read data files
        raise OSError("lintlora/data/gpus.json cannot be read")
    raw = json.loads(data)
    gpus: list[Gpu] = []
    index: dict[str, Gpu] = {}
    by_name: dict[str, Gpu] = {}
    for rec in raw["gpus"]:
        if rec.get("usable_total_mib"):
            mem = int(rec["usable_total_mib"]) * 2**20
            msrc = (f"CUDA-visible total {rec['usable_total_mib']} MiB ({mem / 2**30:.2f} GiB): "
                    f"{rec.get('usable_total_source', 'catalog sources')}")
            kind = "usable"
        elif rec.get("reported_total_bytes"):
            mem = int(rec["reported_total_bytes"])
            msrc = f"CUDA-visible total {mem} bytes: {rec.get('reported_total_source', 'catalog sources')}"
            kind = "usable"
        elif rec.get("reported_total_mib"):
            mem = int(rec["reported_total_mib"]) * 2**20
            msrc = (f"nvidia-smi total {rec['reported_total_mib']} MiB (includes memory the driver reserves): "
                    f"{rec.get('reported_total_source', 'catalog sources')}")
            kind = "nvidia-smi"
        else:
            per_device = rec.get("per_device_memory_gb") or rec["memory_gb"]
            mem = int(per_device * 2**30)
            msrc = f"nominal {per_device} GiB (marketed capacity; an upper bound)"
            kind = "nominal"
        gpu = Gpu(
            name=rec["name"],
            key=normalise(rec["name"]),
            memory_bytes=mem,
            memory_source=msrc,
            memory_kind=kind,
            bf16_supported=bool(rec.get("bf16_supported")),
            bf16_tflops=rec.get("bf16_tflops_dense"),
            fp16_tflops=rec.get("fp16_fp32acc_tflops_dense") or rec.get("fp16_tensor_tflops_dense"),
            memory_bandwidth_gbps=rec.get("memory_bandwidth_gbps"),
            compute_capability=rec.get("compute_capability"),
            compute_capability_source=rec.get("compute_capability_source", ""),
            vendor=rec.get("vendor", ""),
            arch=rec.get("arch", ""),
            sources=tuple(rec.get("sources", ())),
            aliases=tuple(rec.get("aliases", ())),
        )
        gpus.append(gpu)
        by_name[rec["name"]] = gpu
        # device names are not unique (3080 10/12 GB share one): the first record wins,
        # which is the smaller card as the catalog lists sizes in ascending order.
        for alias in [rec["name"], *rec.get("aliases", ()), *rec.get("device_names", ())]:
            index.setdefault(normalise(alias), gpu)
    ambiguous = {normalise(k): v for k, v in raw.get("ambiguous_aliases", {}).items()}
    return tuple(gpus), index, {k: [n for n in v if n in by_name] for k, v in ambiguous.items()}


def list_gpus() -> tuple[Gpu, ...]:
    """Every catalogued GPU, in catalog order."""
    return _catalog()[0]


def find_gpu(name: str) -> Gpu:
    """Look a GPU up by catalog name, alias or nvidia-smi name (case/space/dash-insensitive).

    Ambiguous aliases (``a100``, ``v100``, ``h100``, ``3080``) resolve to the smallest-memory
    candidate; the returned record's ``ambiguity_note`` says so and names the others.

    Raises:
        UnknownGpuError: nothing matches; the message lists close matches.
    """
    gpus, index, ambiguous = _catalog()
    key = normalise(name)
    if key in ambiguous and ambiguous[key]:
        candidates = [index[normalise(n)] for n in ambiguous[key] if normalise(n) in index]
        if candidates:
            pick = min(candidates, key=lambda g: g.memory_bytes)
            if len(candidates) == 1:
                return pick
            others = ", ".join(g.name for g in candidates if g is not pick)
            note = (f"{name!r} is ambiguous; assumed the smallest-memory match {pick.name} "
                    f"({pick.memory_gib:.0f} GiB); others: {others}. Name the exact card to change it.")
            from dataclasses import replace

            return replace(pick, ambiguity_note=note)
    if key in index:
        return index[key]
    keys = list(index)
    from difflib import get_close_matches  # only for a name not found

    close = get_close_matches(key, keys, n=5, cutoff=0.5)
    if not close:
        close = [k for k in keys if key and (key in k or k in key)][:5]
    names = []
    for k in close:
        if index[k].name not in names:
            names.append(index[k].name)
    hint = f" Close matches: {', '.join(names)}." if names else ""
    raise UnknownGpuError(
        f"unknown GPU {name!r}.{hint} `lintlora estimate --list-gpus` lists the catalog; "
        f"or give the memory directly with --gpu-memory 24GiB.")
