"""The central model: what one training script or config asks for (DESIGN.md, "The central model").

A :class:`TrainingSetup` is immutable. Every value in it is a :class:`Setting`: the value, the
span it was read from and its :class:`Origin`. Rules and the estimator read setups, never syntax
trees; extractors (``lintlora.extract.python``, ``lintlora.extract.yaml_config``) are the only
code that builds them.

Values are normalised to plain Python data so that every extractor produces the same thing:

- booleans, ints, floats and strings as themselves;
- dtypes as the ``torch`` attribute name: ``"bfloat16"``, ``"float16"``, ``"float32"``, or
  ``"auto"`` (``torch.bfloat16``, ``"bf16"`` and ``"bfloat16"`` all become ``"bfloat16"``);
- module lists (``target_modules``, ``modules_to_save``) as a tuple of strings, or a single string
  where the library takes one (``"all-linear"``, a regular expression);
- ``device_map`` as a string, an int, or a dict of ``str -> str | int``.

Line numbers are 1-based; columns are 1-based too (LibCST's 0-based columns are shifted by the
extractor), so a span can be printed as ``path:line:column`` the way editors expect.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

__all__ = [
    "Span",
    "Origin",
    "Setting",
    "ModelLoad",
    "Quantization",
    "Lora",
    "TrainingArgs",
    "DataLoaderSpec",
    "RunLaunch",
    "Distributed",
    "PinnedVersion",
    "CallSite",
    "Evidence",
    "TrainingSetup",
    "UNKNOWN",
]


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file.

    Attributes:
        path: the file, as given on the command line or found by discovery (reporters make it
            relative to the working directory).
        line, column: start, 1-based. ``column`` counts characters, not bytes.
        end_line, end_column: end, 1-based, exclusive column; equal to the start when unknown.
        cell: for notebooks, the 1-based index of the code cell; ``line``/``end_line`` are then
            lines within that cell. ``None`` for ordinary files.
    """

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None
    cell: int | None = None

    @property
    def last_line(self) -> int:
        """The last line the span covers (``end_line`` or ``line``)."""
        return self.end_line if self.end_line is not None else self.line

    def lines(self) -> range:
        """The 1-based lines the span covers, inclusive."""
        return range(self.line, self.last_line + 1)


class Origin(str, enum.Enum):
    """Where a value came from (DESIGN.md, "Each value is a Setting").

    ``ENV_DEFAULT`` (the default of ``os.environ.get("X", default)``) and ``FUNCTION_DEFAULT``
    (a parameter default of a helper or a ``fire``/``jsonargparse`` entry point) extend DESIGN.md's
    list: both are stated defaults the user may override at launch, like ``ARGPARSE_DEFAULT``.
    ``CONFIG_FILE`` is a value read from a JSON/YAML file that a script names by literal path
    (or that the run's launch names: a DeepSpeed JSON, an accelerate config).
    ``LAUNCH`` is a value the launch command passes to the entry point (``--fp16 True`` in
    ``run.sh`` line 5); its span is the launch file's line (issue 15, "the run, not the file").
    """

    LITERAL = "literal"
    VARIABLE = "variable"
    ARGPARSE_DEFAULT = "argparse-default"
    DATACLASS_DEFAULT = "dataclass-default"
    FUNCTION_DEFAULT = "function-default"
    ENV_DEFAULT = "env-default"
    CONFIG_FILE = "config-file"
    LIBRARY_DEFAULT = "library-default"
    CLI_OVERRIDE = "cli-override"
    LAUNCH = "launch"
    ASSUMED = "assumed"
    UNKNOWN = "unknown"

    @property
    def is_default(self) -> bool:
        """True for values the user did not write at the use site (defaults and assumptions)."""
        return self in (
            Origin.ARGPARSE_DEFAULT,
            Origin.DATACLASS_DEFAULT,
            Origin.FUNCTION_DEFAULT,
            Origin.ENV_DEFAULT,
            Origin.LIBRARY_DEFAULT,
            Origin.ASSUMED,
        )


@dataclass(frozen=True, slots=True)
class Setting:
    """One extracted value with its provenance.

    Attributes:
        value: the normalised value (see the module docstring); ``None`` is a real value
            (``modules_to_save=None``) unless ``origin`` is ``UNKNOWN``.
        origin: how the value was obtained.
        span: where the value's expression (or YAML scalar) is; ``None`` for library defaults.
        key_span: where the keyword / YAML key naming it is, when there is one (for autofixes).
        source: for ``LIBRARY_DEFAULT``, the library file and version the default was read from;
            for ``VARIABLE``/``ARGPARSE_DEFAULT``/..., the name it was resolved through.
        expr: the source text of the expression, kept for unresolved values (``args.model``).
    """

    value: Any = None
    origin: Origin = Origin.UNKNOWN
    span: Span | None = None
    key_span: Span | None = None
    source: str | None = None
    expr: str | None = None

    @property
    def known(self) -> bool:
        """Whether the value was resolved (origin is not ``UNKNOWN``)."""
        return self.origin is not Origin.UNKNOWN

    def is_(self, value: Any) -> bool:
        """True only when the value is known and equal to ``value`` (never for unknowns)."""
        return self.known and self.value == value

    @classmethod
    def unknown(cls, expr: str | None = None, span: Span | None = None) -> "Setting":
        """An unresolved value, keeping the expression text and span for messages."""
        return cls(None, Origin.UNKNOWN, span, None, None, expr)

    @classmethod
    def literal(cls, value: Any, span: Span | None = None, key_span: Span | None = None) -> "Setting":
        """A value written at the use site."""
        return cls(value, Origin.LITERAL, span, key_span)

    @classmethod
    def library_default(cls, value: Any, source: str) -> "Setting":
        """A value the library applies when the argument is left out; ``source`` cites it."""
        return cls(value, Origin.LIBRARY_DEFAULT, None, None, source)

    @classmethod
    def assumed(cls, value: Any, source: str | None = None) -> "Setting":
        """A value lintlora assumes (a fix being evaluated, or a stated assumption)."""
        return cls(value, Origin.ASSUMED, None, None, source)


UNKNOWN = Setting()
"""The shared "nothing is known" setting; sections default every field to it."""


def _unknown() -> Setting:
    return UNKNOWN


class _Section:
    """Mixin for the frozen sections: iteration over (field name, Setting) pairs."""

    def settings(self) -> Iterator[tuple[str, Setting]]:
        """Yield ``(name, Setting)`` for every Setting-valued field, ``extra`` entries included."""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Setting):
                yield f.name, value
        extra = getattr(self, "extra", None)
        if extra:
            yield from extra.items()


@dataclass(frozen=True)
class ModelLoad(_Section):
    """The base model and how ``from_pretrained`` (or a config's model keys) loads it.

    ``name_or_path`` is a hub id (``meta-llama/Llama-2-7b-hf``), a local path, or for YAML
    dialects the framework's own identity (a torchtune component, a litgpt checkpoint dir).
    ``span`` is the loading call (or the YAML key).
    """

    name_or_path: Setting = field(default_factory=_unknown)
    torch_dtype: Setting = field(default_factory=_unknown)
    device_map: Setting = field(default_factory=_unknown)
    attn_implementation: Setting = field(default_factory=_unknown)
    use_cache: Setting = field(default_factory=_unknown)
    max_memory: Setting = field(default_factory=_unknown)
    trust_remote_code: Setting = field(default_factory=_unknown)
    span: Span | None = None
    variable: str | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class Quantization(_Section):
    """Weight quantization of the base model.

    ``method``: ``"bitsandbytes"``, ``"gptq"``, ``"awq"``, ``"torchao"``, ``"hqq"``, ``"eetq"``,
    ``"mxfp4"``...; ``bits``: 4 or 8 (int). The ``bnb_*`` / ``llm_int8_*`` fields carry
    bitsandbytes' own names (transformers ``BitsAndBytesConfig``).
    """

    method: Setting = field(default_factory=_unknown)
    bits: Setting = field(default_factory=_unknown)
    bnb_4bit_quant_type: Setting = field(default_factory=_unknown)
    bnb_4bit_compute_dtype: Setting = field(default_factory=_unknown)
    bnb_4bit_use_double_quant: Setting = field(default_factory=_unknown)
    bnb_4bit_quant_storage: Setting = field(default_factory=_unknown)
    llm_int8_enable_fp32_cpu_offload: Setting = field(default_factory=_unknown)
    span: Span | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class Lora(_Section):
    """Adapter configuration, in peft ``LoraConfig`` terms.

    ``target_modules`` is a tuple of module names, a string (``"all-linear"`` or a regular
    expression peft matches with ``re.fullmatch``), or ``None`` (peft's per-architecture default).
    """

    r: Setting = field(default_factory=_unknown)
    lora_alpha: Setting = field(default_factory=_unknown)
    lora_dropout: Setting = field(default_factory=_unknown)
    target_modules: Setting = field(default_factory=_unknown)
    modules_to_save: Setting = field(default_factory=_unknown)
    use_dora: Setting = field(default_factory=_unknown)
    use_rslora: Setting = field(default_factory=_unknown)
    bias: Setting = field(default_factory=_unknown)
    span: Span | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainingArgs(_Section):
    """Trainer settings in ``transformers.TrainingArguments`` / ``trl.SFTConfig`` terms.

    ``max_seq_length`` holds SFTConfig's ``max_seq_length``/``max_length`` or a dialect's
    cutoff length (tokens). ``deepspeed``/``fsdp`` hold what the config names (a path, a dict,
    a string of FSDP options) or ``None``.
    """

    per_device_train_batch_size: Setting = field(default_factory=_unknown)
    gradient_accumulation_steps: Setting = field(default_factory=_unknown)
    max_seq_length: Setting = field(default_factory=_unknown)
    gradient_checkpointing: Setting = field(default_factory=_unknown)
    gradient_checkpointing_kwargs: Setting = field(default_factory=_unknown)
    fp16: Setting = field(default_factory=_unknown)
    bf16: Setting = field(default_factory=_unknown)
    optim: Setting = field(default_factory=_unknown)
    learning_rate: Setting = field(default_factory=_unknown)
    packing: Setting = field(default_factory=_unknown)
    dataloader_num_workers: Setting = field(default_factory=_unknown)
    dataloader_pin_memory: Setting = field(default_factory=_unknown)
    deepspeed: Setting = field(default_factory=_unknown)
    fsdp: Setting = field(default_factory=_unknown)
    torch_compile: Setting = field(default_factory=_unknown)
    use_liger_kernel: Setting = field(default_factory=_unknown)
    num_train_epochs: Setting = field(default_factory=_unknown)
    max_steps: Setting = field(default_factory=_unknown)
    span: Span | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class DataLoaderSpec(_Section):
    """One ``torch.utils.data.DataLoader(...)`` call (or a dialect's loader settings)."""

    num_workers: Setting = field(default_factory=_unknown)
    batch_size: Setting = field(default_factory=_unknown)
    pin_memory: Setting = field(default_factory=_unknown)
    persistent_workers: Setting = field(default_factory=_unknown)
    span: Span | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class CallSite:
    """A call that rules judge as code.

    Attributes:
        kind: what the call is, one of ``"gradient_checkpointing_enable"``,
            ``"gradient_checkpointing_disable"``, ``"print_trainable_parameters"``,
            ``"get_nb_trainable_parameters"``, ``"prepare_model_for_kbit_training"``,
            ``"enable_input_require_grads"``, ``"get_peft_model"``, ``"empty_cache"``,
            ``"model_move"`` (``.cuda()``/``.to(...)`` on a loaded model), ``"autocast"``,
            ``"dataloader"``, ``"resize_token_embeddings"``, ``"add_tokens"``
            (``add_tokens``/``add_special_tokens`` on a tokenizer), ``"trainable_parameter_count"``
            (a hand-written count of the parameters that require grad:
            ``sum(p.numel() for p in model.parameters() if p.requires_grad)``, or a call of the
            project's own helper whose name says it prints or counts them),
            ``"trainer_peft_config"`` (a TRL trainer given ``peft_config=``: it wraps the model with
            ``get_peft_model`` itself; ``qualified_name`` is the trainer class; ``assigned_to`` in ``args``: the name
            the trainer is bound to),
            ``"peft_from_pretrained"`` (``PeftModel``/``AutoPeftModel*.from_pretrained``, with
            ``is_trainable`` and ``autocast_adapter_dtype`` in ``args``; ``get_peft_model``
            carries ``autocast_adapter_dtype`` when written, and ``assigned_to``, the name a plain
            ``name = get_peft_model(...)`` binds, for LL004's fix), ``"add_adapter"``
            (transformers' ``model.add_adapter(config)``), ``"grad_scaler"``
            (``torch.amp``/``torch.cuda.amp.GradScaler``, ``enabled`` in ``args``),
            ``"model_cast"`` (``.half()``/``.float()``/``.bfloat16()``/``.to(dtype)`` on a
            loaded or wrapped model, the target in ``args["dtype"]``),
            ``"cast_trainable_fp32"`` (``.float()``/``.to(torch.float32)`` in a loop over a
            model's parameters or modules, or peft's ``cast_mixed_precision_params``),
            ``"merge_and_unload"`` (peft's ``merge_and_unload()``; ``args["before_train"]``:
            whether a recognised trainer's ``.train()`` comes after it, absent when the file
            calls none); a
            ``register_forward_hook`` on the input embeddings is recorded as
            ``"enable_input_require_grads"``. Issue 16 (:mod:`lintlora.extract.pyidioms16`,
            which documents their ``args``): ``"pad_token_is_eos"`` (``tok.pad_token =
            tok.eos_token`` / ``pad_token_id = eos_token_id`` not overridden later; span the
            statement), ``"compute_loss_override"`` (a trainer subclass's ``compute_loss``:
            ``num_items_in_batch``, ``var_kwargs``, ``reads_num_items``, ``base``,
            ``model_accepts_loss_kwargs``), ``"trainer_inputs"`` (one per trainer call, span the
            call: ``data_collator``, ``collator_mlm``, ``collator_columns``, ``model_class``,
            ``compute_metrics``, ``preprocess_logits_for_metrics``, ``eval_dataset``,
            ``max_seq_length_keyword``, ``intended_length``). Plugins may add their own kinds.
        qualified_name: the resolved name (``torch.cuda.empty_cache``) or, for method calls,
            ``<receiver>.<method>``.
        span: the call expression.
        in_loop: the call sits (at any depth) inside a ``for``/``while`` body.
        in_step_callback: the call sits in a per-step hook (``on_step_end``, ``training_step``,
            ``on_step_begin``, ``on_substep_end``) or a loop body that runs per step.
        args: the keyword (and, by parameter name, positional) arguments, resolved.
        receiver: the variable the method was called on, when it is a plain name.
        order: position in source order within the file (0-based), for "disabled then
            re-enabled" logic.
        synthetic: True for a call added by a fix being evaluated, not present in the source.
        periodic: the call sits under an ``if`` that runs it only on some iterations of a
            step/iteration counter: a modulo test (``if step % 100 == 0:``,
            ``if (step + 1) % args.eval_every == 0:``; a divisor that resolves to 1 runs every
            step and does not count) or an equality (``if step == 0:``,
            ``if state.global_step == args.max_steps:``). Set by the Python extractor for
            every kind; for a call inside a local helper, when every per-step call of the
            helper is so guarded.
        guard: when the call runs only if the launch changes a default (it sits under an
            ``if`` that a launch-time default rules out as written: ``if
            args.gradient_checkpointing:`` with the option's default ``False``), that default,
            so rules can report at info and say how it is set; ``None`` otherwise.
    """

    kind: str
    qualified_name: str
    span: Span | None
    in_loop: bool = False
    in_step_callback: bool = False
    args: Mapping[str, Setting] = field(default_factory=dict)
    receiver: str | None = None
    order: int = 0
    synthetic: bool = False
    periodic: bool = False
    guard: Setting | None = None


@dataclass(frozen=True)
class Evidence:
    """A fact about how the script is launched (data-parallel, sharded, ...).

    ``kind`` is one of ``"accelerator"`` (accelerate ``Accelerator()``), ``"env-rank"``
    (``LOCAL_RANK``/``RANK``/``WORLD_SIZE`` read from the environment and used to place the
    model, start processes or branch on the world size), ``"env-read"`` (such a read that feeds
    none of these, e.g. the rank read to decide who logs: weak evidence), ``"deepspeed"``,
    ``"fsdp"``, ``"ddp-argument"`` (``ddp_*`` training arguments: weak evidence, often copied
    into single-GPU scripts), ``"torchrun"``
    (``torch.distributed`` initialisation or a launcher named in the file), ``"multi-gpu"``
    (a config's device count above one).
    """

    kind: str
    span: Span | None
    detail: str = ""


@dataclass(frozen=True)
class RunLaunch:
    """The launch command of a run as rules and the estimator see it (built from
    :class:`lintlora.extract.launch_model.Launch` by the run assembly).

    Attributes:
        span: the launch file and the 1-based line of the command's first word.
        launcher: ``"python"``, ``"torchrun"``, ``"accelerate"``, ``"deepspeed"``,
            ``"llamafactory"``, ``"axolotl"``, ``"tune"``, ``"litgpt"``.
        command: the command as a short text for messages (at most 200 characters, secrets
            never shown: only the launcher, the entry and option names).
        processes: the number of processes the launcher starts in all (``nodes`` ×
            processes per node, or the world size the launcher states), an ``int`` Setting of
            origin ``LAUNCH`` (span: the option's line); unknown when it cannot be followed.
        nodes: the number of nodes (``int`` Setting), unknown when not stated.
        mixed_precision: the launcher's own precision option (accelerate
            ``--mixed_precision``, litgpt ``--precision``), a ``str`` Setting.
        distributed: the launcher's distributed flags as written (``"--multi_gpu"``,
            ``"--use_deepspeed"``, ``"--use_fsdp"``).
        sweep: 0-based index when the command sits in a ``for`` loop over literal values.
    """

    span: Span
    launcher: str
    command: str = ""
    processes: "Setting" = None  # type: ignore[assignment]
    nodes: "Setting" = None  # type: ignore[assignment]
    mixed_precision: "Setting" = None  # type: ignore[assignment]
    distributed: tuple[str, ...] = ()
    sweep: int | None = None

    def __post_init__(self) -> None:
        for name in ("processes", "nodes", "mixed_precision"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, UNKNOWN)

    @property
    def where(self) -> str:
        """``"run.sh:3"``: the launch file's name and line, for messages."""
        import os

        return f"{os.path.basename(self.span.path)}:{self.span.line}"


@dataclass(frozen=True)
class Distributed(_Section):
    """How the run is spread over processes and GPUs: the union of the launcher's statement,
    the accelerate config, the DeepSpeed JSON, ``fsdp=``/``fsdp_config=`` and a YAML dialect's
    ``deepspeed:``/``fsdp:`` keys. Every value is a Setting whose span is where it was read
    (a config file's line: origin ``CONFIG_FILE``; the launch line: ``LAUNCH``); ``"auto"``
    in a DeepSpeed JSON is kept as the string ``"auto"``.

    Attributes:
        backend: ``"ddp"`` (replicas), ``"deepspeed"``, ``"fsdp"`` or ``"single"`` (one process).
        world_size: processes in all (``int``).
        zero_stage: DeepSpeed ``zero_optimization.stage`` (0-3).
        offload_optimizer, offload_param: the device named (``"cpu"``, ``"nvme"``, ``"none"``).
        fsdp_sharding_strategy: ``"FULL_SHARD"``, ``"SHARD_GRAD_OP"``, ``"HYBRID_SHARD"``,
            ``"NO_SHARD"`` (accelerate's and torch's names).
        fsdp_version: 1 or 2.
        fsdp_offload_params, fsdp_activation_checkpointing, fsdp_cpu_ram_efficient_loading: bools.
        mixed_precision: ``"no"``, ``"fp16"``, ``"bf16"``, ``"fp8"`` (accelerate's names; a
            DeepSpeed JSON's enabled ``fp16``/``bf16`` block maps to the same).
        train_micro_batch_size_per_gpu, train_batch_size, gradient_accumulation_steps,
            gradient_clipping: the DeepSpeed JSON's values (``"auto"`` kept).
        reduce_bucket_size, prefetch_bucket_size, overlap_comm: ZeRO bucket options.
        config_path: the DeepSpeed JSON read (absolute), or ``None``; ``accelerate_config``
            the accelerate YAML read, or ``None``.
    """

    backend: Setting = field(default_factory=_unknown)
    world_size: Setting = field(default_factory=_unknown)
    zero_stage: Setting = field(default_factory=_unknown)
    offload_optimizer: Setting = field(default_factory=_unknown)
    offload_param: Setting = field(default_factory=_unknown)
    fsdp_sharding_strategy: Setting = field(default_factory=_unknown)
    fsdp_version: Setting = field(default_factory=_unknown)
    fsdp_offload_params: Setting = field(default_factory=_unknown)
    fsdp_activation_checkpointing: Setting = field(default_factory=_unknown)
    fsdp_cpu_ram_efficient_loading: Setting = field(default_factory=_unknown)
    mixed_precision: Setting = field(default_factory=_unknown)
    train_micro_batch_size_per_gpu: Setting = field(default_factory=_unknown)
    train_batch_size: Setting = field(default_factory=_unknown)
    gradient_accumulation_steps: Setting = field(default_factory=_unknown)
    gradient_clipping: Setting = field(default_factory=_unknown)
    reduce_bucket_size: Setting = field(default_factory=_unknown)
    prefetch_bucket_size: Setting = field(default_factory=_unknown)
    overlap_comm: Setting = field(default_factory=_unknown)
    config_path: str | None = None
    accelerate_config: str | None = None
    span: Span | None = None
    extra: Mapping[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class PinnedVersion:
    """A library version the project states (issue 16): ``transformers==4.44.2`` in
    ``requirements.txt`` line 3.

    Attributes:
        package: the distribution name, normalised (PEP 503: lower case, ``-``).
        specifier: the specifier as written (``"==4.44.2"``, ``">=4.40,<5"``; ``""`` for none).
        version: the exact version when the specifier pins one or a lock file records it,
            else ``None``.
        span: where it was read (file and line); ``source`` the file's kind
            (``"requirements"``, ``"pyproject"``, ``"uv.lock"``, ``"notebook"``, ...).
    """

    package: str
    specifier: str = ""
    version: str | None = None
    span: Span | None = None
    source: str = ""


@dataclass(frozen=True)
class TrainingSetup:
    """What one training script or config asks for.

    A file may hold several setups (two trainers, a sweep); each is judged alone.

    Attributes:
        path: the file the setup was read from.
        kind: ``"python"``, ``"notebook"``, ``"yaml"`` or ``"json"``.
        framework: the stack that will run it: ``"transformers"`` (HF Trainer + peft),
            ``"trl"``, ``"torch"`` (a hand-written loop), ``"unsloth"``, ``"axolotl"``,
            ``"llama-factory"``, ``"torchtune"``, ``"litgpt"``. The estimator picks its profile
            from this.
        dialect: for YAML/JSON, the detected dialect name; ``None`` for Python.
        anchor: where setup-level findings point (the trainer call, or the top of a config).
        model, quantization, lora, training: the sections; ``None`` when the file has none
            (no ``LoraConfig`` means no adapter was seen, not "full fine-tuning").
        dataloaders: every DataLoader the setup uses.
        calls: code-level calls in source order (see :class:`CallSite`).
        launch: data-parallel / sharding evidence.
        run: the launch command of this run (:class:`RunLaunch`), ``None`` when no launch of
            the file was found (values are then the file's, defaults "set at launch").
        distributed: the run's distribution (:class:`Distributed`), ``None`` when nothing
            states one.
        versions: the library versions the project pins (:class:`PinnedVersion`).
        inputs: the files (absolute paths, present or not) the setup's values were read
            from besides the file itself: configs the script names, the launch file, the
            DeepSpeed JSON; the results cache keys the run by their contents.
        is_training: whether the file trains (a Trainer, a ``.backward()``, a training config);
            rules about training stay silent on inference-only scripts. A trainer the file only
            evaluates or predicts with (``.evaluate()``/``.predict()``, never ``.train()``) does
            not train.
    """

    path: str
    kind: str = "python"
    framework: str = "transformers"
    dialect: str | None = None
    anchor: Span | None = None
    model: ModelLoad | None = None
    quantization: Quantization | None = None
    lora: Lora | None = None
    training: TrainingArgs | None = None
    dataloaders: tuple[DataLoaderSpec, ...] = ()
    calls: tuple[CallSite, ...] = ()
    launch: tuple[Evidence, ...] = ()
    is_training: bool = True
    run: RunLaunch | None = None
    distributed: Distributed | None = None
    versions: tuple[PinnedVersion, ...] = ()
    inputs: tuple[str, ...] = ()

    # ---- queries ---------------------------------------------------------------------------
    def calls_of(self, kind: str) -> tuple[CallSite, ...]:
        """The calls of one ``kind``, in source order."""
        return tuple(c for c in self.calls if c.kind == kind)

    def has_call(self, kind: str) -> bool:
        """Whether any call of ``kind`` is present (synthetic ones included)."""
        return any(c.kind == kind for c in self.calls)

    def get(self, path: str) -> Setting:
        """The Setting at a dotted path such as ``"training.gradient_checkpointing"``.

        Returns :data:`UNKNOWN` when the section is absent. Raises ``AttributeError`` for a
        field name that does not exist (a programming error, not an input error).
        """
        section_name, _, name = path.partition(".")
        section = getattr(self, section_name)
        if section is None:
            return UNKNOWN
        if hasattr(section, name):
            return getattr(section, name)
        extra = getattr(section, "extra", {})
        if name in extra:
            return extra[name]
        if name in {f.name for f in dataclasses.fields(section)}:
            return UNKNOWN
        raise AttributeError(f"{type(section).__name__} has no field {name!r}")

    # ---- changes (for fixes) ---------------------------------------------------------------
    _SECTION_TYPES = {
        "model": ModelLoad,
        "quantization": Quantization,
        "lora": Lora,
        "training": TrainingArgs,
        "distributed": Distributed,
    }

    def set(self, path: str, value: Any, source: str = "suggested fix") -> "TrainingSetup":
        """Return a copy with the Setting at ``path`` replaced by an ``ASSUMED`` value.

        ``path`` is ``"section.field"``; a missing section is created with every other field
        unknown. A name that is not a field of the section goes into its ``extra`` mapping.
        Setting ``"quantization"`` itself to ``None`` (path without a dot) removes the section.
        """
        if "." not in path:
            if value is not None:
                raise ValueError("only None may replace a whole section")
            return dataclasses.replace(self, **{path: None})
        section_name, _, name = path.partition(".")
        section = getattr(self, section_name)
        if section is None:
            section = self._SECTION_TYPES[section_name]()
        new_setting = Setting.assumed(value, source)
        field_names = {f.name for f in dataclasses.fields(section)}
        if name in field_names:
            section = dataclasses.replace(section, **{name: new_setting})
        else:
            extra = dict(section.extra)
            extra[name] = new_setting
            section = dataclasses.replace(section, extra=extra)
        return dataclasses.replace(self, **{section_name: section})

    def with_call(self, call: CallSite) -> "TrainingSetup":
        """Return a copy with ``call`` appended (mark it ``synthetic`` for fixes)."""
        return dataclasses.replace(self, calls=self.calls + (call,))

    def without_calls(self, kind: str) -> "TrainingSetup":
        """Return a copy with every call of ``kind`` removed."""
        return dataclasses.replace(self, calls=tuple(c for c in self.calls if c.kind != kind))

    def replace(self, **changes: Any) -> "TrainingSetup":
        """``dataclasses.replace`` for whole sections or top-level fields."""
        return dataclasses.replace(self, **changes)
