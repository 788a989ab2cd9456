"""The context rules run in: run settings, the GPU, the model's architecture and the estimator.

One :class:`Context` serves a whole run. It resolves the GPU once, resolves each setup's model
architecture once, and caches estimates per setup object, so every rule that attaches figures
to its findings shares one estimate of the setup as written.

The estimator modules (``lintlora.estimate.*``) are imported lazily, on the first estimate.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from lintlora.findings import MemoryFigures
from lintlora.settings import Settings
from lintlora.training_setup import Origin, Setting, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.estimate.architecture import Architecture
    from lintlora.estimate.gpus import Gpu
    from lintlora.estimate.memory import MemoryEstimate
    from lintlora.estimate.shape import Shape

__all__ = ["Context", "model_named_in_file", "VersionUsed"]

_DEFAULT_MODEL_SOURCE = "[tool.lintlora] model"
_IN_PLACE_OF = ", in place of "
"""Joins an override's source and the model the file named (``"--model, in place of X"``):
written by :meth:`Context.apply_overrides`, read by :meth:`Context.figures`."""
"""``Setting.source`` of a model name filled in from the configuration's default."""


def _folder_of(path: str | None, model_id: str | None, model_config: str | None) -> str | None:
    """The absolute folder of the linted file at ``path`` when the architecture lookup of
    ``model_id`` may depend on it (a relative name, no ``model_config``), else ``None``."""
    if not path or model_id is None or model_config:
        return None
    if os.path.isabs(model_id.strip()):  # as resolve_architecture tests it
        return None
    return os.path.dirname(os.path.abspath(path))


def model_named_in_file(name: Setting, setup: TrainingSetup | None = None) -> bool:
    """Whether the model ``name`` (a setup's ``model.name_or_path``) is named by the linted
    file itself: a non-empty string written in the code (a literal, a variable) or read from a
    config file, which ``--model`` and ``--model-config`` leave alone. ``False`` when it is
    unresolved, not a string, empty, a default chosen at launch (:func:`lintlora.facts.
    set_at_launch`: argparse, dataclass, function and environment defaults), or already an
    override (``--model``, the configured default). Given the ``setup`` of a known run
    (``setup.run``), a model the launch passes (``Origin.LAUNCH``) or a default it does not
    override is the run's model, named (:func:`lintlora.facts.set_at_launch`)."""
    from lintlora.facts import set_at_launch

    if not name.known or name.origin is Origin.CLI_OVERRIDE or set_at_launch(name, setup):
        return False
    return isinstance(name.value, str) and bool(name.value.strip())


@dataclasses.dataclass(frozen=True)
class VersionUsed:
    """The release of a library a verdict assumes (issue 16), and where it came from.

    Attributes:
        package: the distribution name (``"transformers"``).
        version: the release (a ``packaging.version.Version``); for a bounded specifier the
            newest release the bound allows that lintlora knows of (see ``where``); ``None``
            when unknown (no default, or a bound allowing no release lintlora knows).
        where: for messages: ``"transformers==4.44.2 from requirements.txt:3"``,
            ``"--assume-version transformers=4.46"``, ``"[tool.lintlora] versions
            transformers=4.46"``, ``"transformers<5 from pyproject.toml:12, taken as 4.57.6: ..."``
            or ``"transformers 5.24.0 assumed: the current release, not read from the project"``.
        assumed: True when no file of the project and no setting gave it.
        pin: the :class:`~lintlora.training_setup.PinnedVersion` it was read from, if any.
    """

    package: str
    version: Any
    where: str
    assumed: bool = True
    pin: Any = None


class Context:
    """Shared state for one run.

    Raises (at construction):
        lintlora.estimate.gpus.UnknownGpuError: ``settings.gpu`` names no catalogued GPU.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._gpu: Gpu | None = None
        if self.settings.gpu:
            from lintlora.estimate.gpus import find_gpu

            self._gpu = find_gpu(self.settings.gpu)
        self._arch_cache: dict[tuple, tuple[Any, str | None]] = {}
        self._arch_inputs: dict[tuple, tuple[str, ...]] = {}  # files each lookup looked at
        self._consulted: dict[str, None] = {}  # see take_inputs (a set, in order)
        self._estimates: dict[int, tuple[TrainingSetup, Any]] = {}

    # ---- library versions (issue 16) --------------------------------------------------------------
    def library_version(self, setup: TrainingSetup, package: str) -> VersionUsed:
        """The release of ``package`` the run uses, and where that came from.

        Precedence (first that applies):

        1. ``--assume-version PKG=VER`` / ``[tool.lintlora] versions`` (``Settings.
           assume_versions``): where ``"--assume-version transformers=4.46"`` or
           ``"[tool.lintlora] versions transformers=4.46"``.
        2. an exact pin or lock entry of the project (``setup.versions``, nearest folder first,
           :func:`lintlora.extract.project_versions.versions_in_project`): where
           ``"transformers==4.44.2 from requirements.txt:3"``.
        3. a bounded specifier (``>=4.40``, ``<5``, ``~=0.30.0``): the newest release it allows
           among those lintlora knows (:data:`~lintlora.estimate.versions.DEFAULT_VERSIONS`,
           :data:`~lintlora.estimate.versions.KNOWN_RELEASES` and the releases its own clauses
           name): ``transformers<5`` is taken as 4.57.6, ``>=4.40`` as the current release;
           where ``"transformers<5 from pyproject.toml:12, taken as 4.57.6: the newest release
           it allows that lintlora knows"``. When it allows none of them, ``version`` is
           ``None`` (a rule must then stay silent or say it is unsure).
        4. the assumed current release (``DEFAULT_VERSIONS``): where ``"transformers 5.24.0
           assumed: the current release, not read from the project"``, ``assumed`` True. A
           package with no default has ``version`` ``None``.

        A pin's file is named relative to the linted file's folder (``../requirements.txt:3``).
        Never raises.
        """
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import InvalidVersion, Version

        from lintlora.estimate.versions import DEFAULT_VERSIONS, KNOWN_RELEASES, canonical_package

        package = canonical_package(package)
        s = self.settings
        for pkg, ver in s.assume_versions:
            if pkg == package:
                try:
                    v = Version(ver)
                except InvalidVersion:  # validated when read; kept safe
                    break
                if pkg in s.version_flags:
                    return VersionUsed(package, v, f"--assume-version {pkg}={ver}", False)
                return VersionUsed(package, v, f"[tool.lintlora] versions {pkg}={ver}", False)
        pins = [p for p in setup.versions if p.package == package]
        for pin in pins:
            if pin.version:
                try:
                    v = Version(pin.version)
                except InvalidVersion:
                    continue
                where = f"{package}{pin.specifier or '==' + pin.version} from {self._pin_place(setup, pin)}"
                return VersionUsed(package, v, where, False, pin)
        default = DEFAULT_VERSIONS.get(package)
        for pin in pins:
            if not pin.specifier:
                continue
            try:
                spec = SpecifierSet(pin.specifier)
            except InvalidSpecifier:
                continue
            candidates = set(KNOWN_RELEASES.get(package, ()))
            if default:
                candidates.add(default)
            candidates.update(c.version.rstrip("*").rstrip(".") for c in spec
                              if c.operator in ("==", "===", "~=", ">=", "<=", ">"))
            allowed = []
            for c in candidates:
                try:
                    cv = Version(c)
                except InvalidVersion:
                    continue
                if spec.contains(cv, prereleases=True):
                    allowed.append(cv)
            place = f"{package}{pin.specifier} from {self._pin_place(setup, pin)}"
            if not allowed:
                return VersionUsed(package, None, f"{place}, allowing no release known to lintlora",
                                   False, pin)
            v = max(allowed)
            return VersionUsed(package, v, f"{place}, taken as {v}: the newest release it allows that "
                                           f"lintlora knows", False, pin)
        named = ""
        if pins:  # named without a version
            named = f" ({self._pin_place(setup, pins[0])} names {package} without a version)"
        if default is None:
            return VersionUsed(package, None,
                               f"{package}: version unknown (not read from the project){named}")
        return VersionUsed(package, Version(default),
                           f"{package} {default} assumed: the current release, not read from the "
                           f"project{named}")

    @staticmethod
    def _pin_place(setup: TrainingSetup, pin: Any) -> str:
        """``requirements.txt:3``: relative to the linted file's folder (``../requirements.txt``,
        ``../requirements/base.txt``) when the two share a folder below the file-system root and
        the path is short, else the file's name;
        ``train.ipynb cell 2 line 1`` for a notebook's own install line."""
        span = pin.span
        if span is None:
            return pin.source or "the project"
        name = os.path.basename(span.path)
        if setup.path:
            here = os.path.dirname(os.path.abspath(setup.path))
            there = os.path.dirname(os.path.abspath(span.path))
            try:
                rel = os.path.relpath(span.path, here)
                common = os.path.commonpath([here, there])
                near = common != os.path.dirname(common)  # they share more than the file-system root
            except ValueError:  # another drive
                rel, near = name, False
            if near and rel.count("..") <= 4 and len(rel) <= 80:
                name = rel.replace(os.sep, "/")
        if span.cell is not None:
            return f"{name} cell {span.cell} line {span.line}"
        return f"{name}:{span.line}"

    def estimator_versions(self, setup: TrainingSetup) -> tuple[tuple[str, str, str], ...]:
        """``((package, version, origin), ...)`` for the estimator's version-dependent terms
        (:data:`lintlora.estimate.versions.TERM_PACKAGES`), from :meth:`library_version`: only
        the releases a setting or the project states (the estimator fills in its own default,
        said as assumed, for the rest)."""
        from lintlora.estimate.versions import TERM_PACKAGES

        out = []
        for package in TERM_PACKAGES:
            used = self.library_version(setup, package)
            if not used.assumed and used.version is not None:
                out.append((package, str(used.version), used.where))
        return tuple(out)

    def time_estimate(self, setup: TrainingSetup) -> Any:
        """The training time per micro-batch of ``setup`` on the named GPU
        (:func:`lintlora.estimate.compute.estimate_time`, a ``TimeEstimate``), or ``None``
        without a GPU, an estimate, or for a setup that trains nothing. A 4-bit base whose
        ``bnb_4bit_compute_dtype`` is float32 while the run computes in 16 bits has its
        quantized matmuls priced at the GPU's float32 rate."""
        gpu = self.gpu
        est = self.estimate(setup)
        inputs = getattr(est, "inputs", None)
        arch = self.architecture(setup)
        if gpu is None or inputs is None or arch is None or getattr(inputs, "method", None) == "load":
            return None
        from lintlora.estimate.compute import estimate_time

        tflops = gpu.training_tflops(inputs.compute_dtype)
        quant_tflops = None
        if inputs.quant in ("nf4", "fp4") and inputs.quant_compute_dtype == "float32":
            quant_tflops = gpu.training_tflops("float32")
        return estimate_time(inputs, arch, tflops, gpu.memory_bandwidth_gbps,
                             quant_matmul_tflops=quant_tflops)

    # ---- GPU ---------------------------------------------------------------------------------
    @property
    def gpu(self) -> "Gpu | None":
        """The named GPU, or ``None`` when none was given."""
        return self._gpu

    @property
    def gpu_memory_bytes(self) -> int | None:
        """Usable GPU memory in bytes: ``--gpu-memory`` if given, else the catalog's figure."""
        if self.settings.gpu_memory_bytes:
            return self.settings.gpu_memory_bytes
        return self._gpu.memory_bytes if self._gpu else None

    @property
    def gpu_memory_nominal(self) -> bool:
        """Whether :attr:`gpu_memory_bytes` is the named card's marketed size (no cited
        CUDA-visible total in the catalog); never for ``--gpu-memory``, which the user measured
        or chose."""
        return (not self.settings.gpu_memory_bytes and self._gpu is not None
                and self._gpu.memory_kind == "nominal")

    @property
    def gpu_label(self) -> str | None:
        """Display name of the named GPU for messages, or ``None`` when none was named
        (``--gpu-memory`` alone gives no name: reporters then say "GPU with 24.0 GiB", rules
        "the GPU (24.0 GiB)", rather than repeating the size as a name)."""
        return self._gpu.name if self._gpu else None

    # ---- model ---------------------------------------------------------------------------------
    def apply_overrides(self, setup: TrainingSetup) -> TrainingSetup:
        """Apply ``--model`` and the configured default model (``[tool.lintlora] model``).

        ``--model`` replaces the setup's model only where the file does not name it
        (:func:`model_named_in_file`): unresolved (``sys.argv[1]``, an empty argparse default)
        or a default chosen at launch (argparse / ``HfArgumentParser`` / dataclass / ``fire``
        defaults, ``os.environ.get`` defaults). A model the code or a config file names
        itself is kept (``--model`` is for scripts that read the model from their
        arguments), unless lintlora has no architecture for it (a private model: the
        "unknown model" note asks for ``--model`` or ``--model-config`` there); then
        ``--model`` replaces it, and ``--model-config`` alone marks it (source
        ``"--model-config"``) so :meth:`_model_config_for` describes it with that file.
        The configured default fills in an unresolved model, and replaces a named one lintlora
        has no architecture for, as ``--model`` does.

        A replaced model that the file names is said in the source (``"--model, in place of
        facebook/opt-350m"``), which the estimate's note repeats (:meth:`figures`): the
        figures are then for another model than the file's, and every report says so.
        """
        s = self.settings
        current = setup.get("model.name_or_path")
        named = model_named_in_file(current, setup)
        if named and (s.model or s.model_config or s.default_model) \
                and self._named_model_unknown(setup):
            instead = f"{_IN_PLACE_OF}{current.value}"
            if s.model:
                value = Setting(s.model, Origin.CLI_OVERRIDE, current.span, current.key_span,
                                "--model" + instead)
            elif s.model_config:
                value = Setting(current.value, Origin.CLI_OVERRIDE, current.span,
                                current.key_span, "--model-config")
            else:
                value = Setting(s.default_model, Origin.CLI_OVERRIDE, current.span,
                                current.key_span, _DEFAULT_MODEL_SOURCE + instead)
        elif s.model and not named:
            value = Setting(s.model, Origin.CLI_OVERRIDE, current.span, current.key_span, "--model")
        elif s.default_model and not current.known:
            value = Setting(s.default_model, Origin.CLI_OVERRIDE, current.span, current.key_span,
                            _DEFAULT_MODEL_SOURCE)
        else:
            return setup
        from lintlora.training_setup import ModelLoad

        model = setup.model or ModelLoad()
        return dataclasses.replace(setup, model=dataclasses.replace(model, name_or_path=value))

    def _named_model_unknown(self, setup: TrainingSetup) -> bool:
        """Whether lintlora has no architecture for the model ``setup`` names (none, or only a
        rough one from ``--params``); part of :meth:`apply_overrides`."""
        arch = self.architecture(setup)
        return arch is None or bool(getattr(arch, "rough", False))

    def architecture(self, setup: TrainingSetup) -> "Architecture | None":
        """The architecture of the setup's model, or ``None`` (see :meth:`architecture_problem`)."""
        return self._resolve_architecture(setup)[0]

    def architecture_problem(self, setup: TrainingSetup) -> str | None:
        """Why the architecture is unknown, phrased for the user, or ``None`` when it is known."""
        return self._resolve_architecture(setup)[1]

    def _model_config_for(self, name: Setting, model_id: str | None) -> str | None:
        """The ``config.json`` describing the setup's model (``name``: after
        :meth:`apply_overrides`): ``--model-config`` where the file does not name its model
        (like ``--model``: unresolved, chosen at launch, or replaced by ``--model`` or the
        configured default; :func:`model_named_in_file`); ``[tool.lintlora] model-config``
        only where the script's model is unresolved (like ``[tool.lintlora] model``: when
        ``model_id`` is ``None`` or came from that default)."""
        s = self.settings
        if s.model_config and not model_named_in_file(name):
            return s.model_config
        if s.default_model_config and (model_id is None or (name.source or "").startswith(
                _DEFAULT_MODEL_SOURCE)):
            return s.default_model_config
        return None

    def _resolve_architecture(self, setup: TrainingSetup) -> tuple[Any, str | None]:
        from lintlora.estimate.architecture import lookup_architecture

        name = setup.get("model.name_or_path")
        # Only a string names a model; anything else an extractor kept (a dict, a list) is
        # treated as unresolved rather than hashed.
        model_id = name.value if name.known and isinstance(name.value, str) else None
        model_config = self._model_config_for(name, model_id)
        # a model path the linted files name (in the code, a config file, or a configured
        # default) is followed only inside the file's project; one the user gave with
        # --model is the user's choice
        root = None
        if model_id is not None and not model_config and setup.path \
                and not (name.source or "").startswith("--model"):
            from lintlora.safeio import confinement_root

            root = confinement_root(setup.path)
        # a relative name may be a folder beside the linted file (resolve_architecture tries
        # there too), so the lookup depends on that folder as well; absolute paths and a given
        # model_config do not. One lookup per (name, folder) keeps the cache's saving for the
        # common case, many scripts in one folder naming one hub id.
        key = (model_id, setup.framework, model_config, self.settings.params,
               _folder_of(setup.path, model_id, model_config), root)
        if key not in self._arch_cache:
            # the local files and cache folders the lookup looked at, returned by it as data
            # (ArchitectureLookup.inputs); collected for the engine (take_inputs)
            found = lookup_architecture(
                key[0],
                framework=setup.framework,
                model_config=model_config,
                params=self.settings.params,
                base_dir=setup.path,
                root=root,
            )
            self._arch_cache[key] = (found.architecture, found.problem)
            self._arch_inputs[key] = found.inputs
        self._consulted.update(dict.fromkeys(self._arch_inputs.get(key, ())))
        return self._arch_cache[key]

    def take_inputs(self) -> tuple[str, ...]:
        """The files and folders (absolute, present or not) that the architecture lookups and
        estimates asked of this context consulted since the last call, repeats dropped, and
        forget them: the engine calls it before and after each file, so a file's result is
        keyed by what its rules' lookups read (memoised lookups included)."""
        out = tuple(self._consulted)
        self._consulted.clear()
        return out

    # ---- estimates -------------------------------------------------------------------------
    def forget_estimates(self) -> None:
        """Drop the estimates kept per setup object (the engine calls it after each file, so
        a run over many files does not keep every setup and estimate alive to its end)."""
        self._estimates.clear()

    def estimate(self, setup: TrainingSetup) -> "MemoryEstimate | None":
        """The memory estimate of ``setup`` (cached per setup object), or ``None``.

        ``None`` means the model's architecture is unknown; see :meth:`architecture_problem`.
        """
        cached = self._estimates.get(id(setup))
        if cached is not None and cached[0] is setup:
            return cached[1]
        arch = self.architecture(setup)
        result = None
        if arch is not None:
            from lintlora.estimate.from_setup import estimate_setup

            result = estimate_setup(setup, arch, self.gpu, gpu_memory_bytes=self.gpu_memory_bytes,
                                    assumed_versions=self.estimator_versions(setup))
        self._estimates[id(setup)] = (setup, result)
        return result

    def shape(self, setup: TrainingSetup) -> "Shape | None":
        """The batch × tokens per sequence the estimate of ``setup`` was computed for, and
        what of it the file did not say (:func:`lintlora.estimate.shape.shape_of`); ``None``
        without an estimate (unknown model) or for a load-only one."""
        inputs = getattr(self.estimate(setup), "inputs", None)
        if inputs is None:
            return None
        from lintlora.estimate.shape import shape_of

        return shape_of(inputs, setup)

    def figures(self, setup: TrainingSetup, fixed: TrainingSetup | None = None,
                unchanged: bool = False) -> MemoryFigures:
        """Memory figures for a finding: the peak as written and after the fix.

        Args:
            fixed: the setup with the fix applied; estimated for ``peak_after_fix_bytes``.
            unchanged: the fix does not change GPU memory, so the "after" figure is the
                "before" one.
        """
        before = self.estimate(setup)
        arch = self.architecture(setup)
        if before is None:
            return MemoryFigures(gpu=self.gpu_label, gpu_memory_bytes=self.gpu_memory_bytes,
                                 gpu_memory_nominal=self.gpu_memory_nominal,
                                 note=self.architecture_problem(setup))
        after_bytes = None
        if fixed is not None:
            after = self.estimate(fixed)
            after_bytes = after.device_bytes if after is not None else None
        elif unchanged:
            after_bytes = before.device_bytes
        notes = ["rough estimate from a parameter count"] if getattr(before, "rough", False) else []
        name = setup.get("model.name_or_path")
        if name.origin is Origin.CLI_OVERRIDE and _IN_PLACE_OF in (name.source or ""):
            # another model than the one the file names: say whose figures these are
            notes.insert(0, f"model {name.value} from {name.source}")
        shape = self.shape(setup)
        if shape is not None:
            notes.append(shape.note)
        elif getattr(getattr(before, "inputs", None), "method", None) == "load":
            notes.append("memory to load the model: the file trains nothing")
        note = "; ".join(notes) or None
        return MemoryFigures(
            peak_bytes=before.device_bytes,
            peak_after_fix_bytes=after_bytes,
            gpu=self.gpu_label,
            gpu_memory_bytes=self.gpu_memory_bytes,
            gpu_memory_nominal=self.gpu_memory_nominal,
            breakdown=dict(before.breakdown),
            model=getattr(arch, "name", None),
            note=note,
        )
