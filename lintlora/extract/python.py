"""Python training scripts -> :class:`~lintlora.training_setup.TrainingSetup` (LibCST).

The script is parsed once (LibCST's native parser), walked once (:mod:`.pyindex`), and read by
static evaluation (:mod:`.pyresolve`); it is never imported or run. Positions are computed only
when the file holds something to extract (:mod:`._cstpos`).

Recognition is by qualified name through imports and aliases (``from transformers import
TrainingArguments as TA``; ``import torch as T; T.cuda.empty_cache()``) and through local
subclasses (``class MyTrainer(Trainer)``, a dataclass subclassing ``TrainingArguments``); a
local class or function that merely shares a library name is not the library's.

Setups: one per trainer call (``Trainer``, ``SFTTrainer``, other TRL trainers, local subclasses),
holding the configs that flow into it (its ``args=``, the model it trains and how that model
was loaded, quantized and wrapped); a trainer inside a ``for`` loop over a literal list (a
sweep) gives one setup per value. A file without a trainer gives one setup of what it has. A
file with nothing recognisable gives none.
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from lintlora.extract import ExtractError
from lintlora.training_setup import (
    CallSite, DataLoaderSpec, Evidence, Lora, ModelLoad, Origin, Quantization, Setting, Span,
    TrainingArgs, TrainingSetup,
)

__all__ = ["extract_python", "extract_python_source"]

_INTERESTING_ROOTS = frozenset({"transformers", "peft", "trl", "torch", "unsloth", "accelerate",
                                "bitsandbytes", "deepspeed"})
_INTERESTING_METHODS = frozenset({
    "gradient_checkpointing_enable", "gradient_checkpointing_disable",
    "activation_checkpointing_enable", "activation_checkpointing_disable",
    "print_trainable_parameters", "get_nb_trainable_parameters", "enable_input_require_grads",
    "from_pretrained", "empty_cache", "backward",
})
_TRAINERS = {
    "transformers.Trainer": "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainer": "transformers.Seq2SeqTrainingArguments",
    "trl.SFTTrainer": "trl.SFTConfig",
    "trl.DPOTrainer": "trl.DPOConfig",
    "trl.ORPOTrainer": "trl.ORPOConfig",
    "trl.KTOTrainer": "trl.KTOConfig",
    "trl.CPOTrainer": "trl.CPOConfig",
    "trl.GRPOTrainer": "trl.GRPOConfig",
    "trl.RewardTrainer": "trl.RewardConfig",
    "trl.IterativeSFTTrainer": "transformers.TrainingArguments",
}
_TRAINING_ARGS = frozenset({
    "transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig",
    "trl.DPOConfig", "trl.ORPOConfig", "trl.KTOConfig", "trl.CPOConfig", "trl.GRPOConfig",
    "trl.RewardConfig",
})
_QUANT_CONFIGS = {
    "transformers.BitsAndBytesConfig": "bitsandbytes",
    "transformers.GPTQConfig": "gptq",
    "transformers.AwqConfig": "awq",
    "transformers.TorchAoConfig": "torchao",
    "transformers.HqqConfig": "hqq",
    "transformers.EetqConfig": "eetq",
    "transformers.Mxfp4Config": "mxfp4",
    "transformers.QuantoConfig": "quanto",
    "transformers.AqlmConfig": "aqlm",
    "transformers.FbgemmFp8Config": "fp8",
    "transformers.FineGrainedFP8Config": "fp8",
    "transformers.CompressedTensorsConfig": "compressed-tensors",
}
_TRAINER_POSITIONAL = ("model", "args", "data_collator", "train_dataset", "eval_dataset")
# trl DPOTrainer / KTOTrainer take the reference model second: (model, ref_model, args, ...)
_REF_MODEL_POSITIONAL = ("model", "ref_model", "args", "data_collator", "train_dataset")
_MODEL_LOAD_POSITIONAL = ("pretrained_model_name_or_path",)
_ENV_KEYS = frozenset({"LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"})
_SWEEP_LIMIT = 16
_SFT_TRAINER_LENGTH = (
    "trl trl/trainer/sft_trainer.py (0.x releases): max_seq_length=None becomes "
    "min(tokenizer.model_max_length, 1024); trl 1.x: SFTConfig.max_length=1024")

_TA_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps", "gradient_checkpointing",
              "gradient_checkpointing_kwargs", "fp16", "bf16", "optim", "learning_rate",
              "packing", "dataloader_num_workers", "dataloader_pin_memory", "deepspeed", "fsdp",
              "torch_compile", "use_liger_kernel", "num_train_epochs", "max_steps")
_TA_ALIASES = {
    # transformers 5.24 renamed gradient_checkpointing* to activation_checkpointing*, keeping the
    # old names as deprecated aliases (the new name wins when both are given)
    "gradient_checkpointing": ("activation_checkpointing", "gradient_checkpointing"),
    "gradient_checkpointing_kwargs": ("activation_checkpointing_kwargs",
                                      "gradient_checkpointing_kwargs"),
}
_TA_ALIAS_NAMES = frozenset(n for names in _TA_ALIASES.values() for n in names)
_TA_EXTRA_DEFAULTS = ("dataloader_persistent_workers", "torch_empty_cache_steps",
                      "auto_find_batch_size")
_LORA_FIELDS = ("r", "lora_alpha", "lora_dropout", "target_modules", "modules_to_save",
                "use_dora", "use_rslora", "bias")
_BNB_FIELDS = ("bnb_4bit_quant_type", "bnb_4bit_compute_dtype", "bnb_4bit_use_double_quant",
               "bnb_4bit_quant_storage", "llm_int8_enable_fp32_cpu_offload")
_DL_FIELDS = ("num_workers", "batch_size", "pin_memory", "persistent_workers")
_MODEL_FIELDS = ("torch_dtype", "device_map", "attn_implementation", "use_cache", "max_memory",
                 "trust_remote_code")
_DTYPE_FIELDS = frozenset({"torch_dtype", "dtype", "bnb_4bit_compute_dtype",
                           "bnb_4bit_quant_storage"})
_MODULE_FIELDS = frozenset({"target_modules", "modules_to_save"})
_DTYPE_ALIASES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
    "half": "float16", "fp32": "float32", "float32": "float32", "float": "float32",
    "auto": "auto", "float64": "float64", "double": "float64",
}


# ---- entry points ----------------------------------------------------------------------------
def extract_python(path: str, source: str) -> list[TrainingSetup]:
    """Extract the training setups of one Python script.

    ``path`` is used for spans (and to find JSON/YAML files the script names by literal path,
    relative to its folder); ``source`` is the decoded text. Returns ``[]`` for a file with
    nothing recognisable.

    Raises:
        ExtractError: LibCST cannot parse the file (with line and column), or it is nested too
            deeply to parse or analyse (code ``LL000``). Input never causes another exception;
            one would be a lintlora bug, which the engine reports as ``LL999``.
    """
    return extract_python_source(path, source)


def extract_python_source(path: str, source: str, *,
                          line_map: Callable[[int], tuple[int | None, int]] | None = None,
                          kind: str = "python") -> list[TrainingSetup]:
    """:func:`extract_python` with a line mapping (used for notebooks).

    ``line_map(line)`` returns ``(cell, line_in_cell)`` for a 1-based line of ``source``.
    """
    import libcst as cst

    if source.startswith("\ufeff"):
        source = source[1:]
    _preflight(source, line_map)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise _syntax_error(exc, source, line_map) from None
    except RecursionError:
        raise ExtractError("the file is nested too deeply to parse", None, None) from None
    except Exception as exc:  # LibCST raises a few other types on odd input
        raise ExtractError(f"cannot parse the file: {exc.__class__.__name__}: {exc}"[:300],
                           None, None) from None
    try:
        return _Extractor(path, source, module, line_map, kind).run()
    except RecursionError:
        raise ExtractError("the file is nested too deeply to analyse", None, None) from None
    # Any other exception would be a bug in lintlora, not a property of the input: it is left
    # to propagate so the engine reports it as an LL999 internal error asking for a report,
    # rather than disguised as a syntax error. The fuzz tests (tests/test_extract_robustness.py)
    # keep that path empty.


_MAX_PAREN_DEPTH = 200     # CPython's tokenizer limit ("too many nested parentheses")
_MAX_EXPR_DEPTH = 500      # LibCST's native parser overflows its stack near 5,000-10,000
                           # and slows down badly from about 1,000
_SUSPICIOUS_OPERATORS = 1000   # occurrences of one operator character that call for a check
_SUSPICIOUS_COMMON = 3000      # the same for characters every script is full of
_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")


def _bracket_depth(brackets: str) -> int:
    """The deepest nesting of a string of bracket characters."""
    depth = deepest = 0
    for ch in brackets:
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def _preflight(source: str, line_map: Callable | None) -> None:
    """Refuse, with a diagnostic, input that would crash LibCST's native parser.

    The parser is a recursive-descent parser running on the C stack: thousands of nested
    brackets, or an expression chaining thousands of operators, overflow it and kill the
    process, which no ``except`` can catch (measured with LibCST 1.9: 1,500 nested brackets or
    a 10,000-term sum). Such files are never real training scripts; CPython itself refuses more
    than 200 nested brackets. Cheap counts select the rare file worth checking (brackets inside
    strings are counted too, which only costs a check), and CPython's parser, which has
    recursion guards, measures it.
    """
    import ast

    suspicious = False
    if source.count("(") + source.count("[") + source.count("{") > _MAX_PAREN_DEPTH:
        suspicious = _bracket_depth(_NOT_BRACKETS.sub("", source)) > _MAX_PAREN_DEPTH
    if not suspicious:
        suspicious = (any(source.count(c) > _SUSPICIOUS_OPERATORS for c in "+-*/%|&^@<>~")
                      or any(source.count(c) > _SUSPICIOUS_COMMON for c in ".,\"'(=")
                      or source.count("not ") > _SUSPICIOUS_OPERATORS)
    if not suspicious:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError as err:
        line, col = err.lineno, err.offset
        cell = None
        if line is not None and line_map is not None:
            cell, line = line_map(line)
        raise ExtractError(f"syntax error: {err.msg}", line, col, cell=cell) from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise ExtractError("the file is nested too deeply to parse", None, None) from None
    # deepest expression nesting, iteratively
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > _MAX_EXPR_DEPTH:
                line = getattr(node, "lineno", None)
                cell = None
                if line is not None and line_map is not None:
                    cell, line = line_map(line)
                raise ExtractError(f"an expression is nested more than {_MAX_EXPR_DEPTH} levels "
                                   "deep; lintlora does not analyse files like this", line,
                                   None, cell=cell)
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))


def _syntax_error(exc: Any, source: str, line_map: Callable | None) -> ExtractError:
    """An LL000 error for a file LibCST cannot parse.

    LibCST's native parser often places the error at the token after the fault (or at line 1
    for tokenizer errors), so the location and wording come from CPython's own parser when it
    agrees the file is invalid (``ast.parse`` only parses; nothing is run).
    """
    import ast

    message = getattr(exc, "message", str(exc))
    line: int | None = getattr(exc, "raw_line", None)
    col: int | None = None
    m = re.search(r"error at (\d+):(\d+): (.*)", message, re.S)
    if m:
        line, col = int(m.group(1)), int(m.group(2)) + 1
        message = m.group(3)
    else:
        message = re.sub(r"^(tokenizer|parser) error: ", "", message)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code
            ast.parse(source)
    except SyntaxError as err:
        if err.lineno is not None:
            line, col = err.lineno, err.offset
            message = err.msg or message
    except (ValueError, RecursionError, MemoryError, OverflowError):
        pass
    message = message.strip().splitlines()[0] if message.strip() else "invalid syntax"
    if len(message) > 160:
        message = message[:157] + "..."
    cell = None
    if line is not None and line_map is not None:
        cell, line = line_map(line)
    return ExtractError(f"syntax error: {message}", line, col, cell=cell)


# ---- the extractor ----------------------------------------------------------------------------
@dataclass
class _Found:
    """Recognised calls of one file, by kind (each a list of CallRecords)."""

    trainers: list = field(default_factory=list)
    training_args: list = field(default_factory=list)
    loras: list = field(default_factory=list)
    quants: list = field(default_factory=list)
    loads: list = field(default_factory=list)
    peft_wraps: list = field(default_factory=list)
    dataloaders: list = field(default_factory=list)
    calls: list = field(default_factory=list)       # (record, kind, qualified name)
    evidence: list = field(default_factory=list)    # Evidence
    training_signals: int = 0
    unsloth: bool = False
    canon: dict = field(default_factory=dict)       # id(record) -> canonical name


class _Extractor:
    def __init__(self, path: str, source: str, module: Any, line_map: Callable | None,
                 kind: str) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.line_map = line_map
        self.kind = kind
        self.positions: Any = None

    # -- spans ----------------------------------------------------------------------------------
    def span(self, node: Any) -> Span | None:
        if node is None:
            return None
        r = self.positions.get(node)
        if r is None:
            return None
        line, col, end_line, end_col = r
        cell = None
        if self.line_map is not None:
            cell, line = self.line_map(line)
            _c2, end_line = self.line_map(end_line)
            if _c2 != cell:
                end_line, end_col = line, col
        return Span(self.path, line, col + 1, end_line, end_col + 1, cell)

    def text(self, node: Any) -> str:
        r = self.positions.get(node)
        if r is None:
            return "?"
        line, col, end_line, end_col = r
        lines = self._lines
        if line == end_line:
            return lines[line - 1][col:end_col]
        parts = [lines[line - 1][col:]] + lines[line:end_line - 1] + [lines[end_line - 1][:end_col]]
        return "\n".join(parts)

    # -- main -------------------------------------------------------------------------------------
    def run(self) -> list[TrainingSetup]:
        from lintlora.extract._cstpos import index_positions
        from lintlora.extract.pyindex import build_index
        from lintlora.extract.pyresolve import Resolver

        index = build_index(self.module)
        if not (index.imported_roots & _INTERESTING_ROOTS
                or index.methods & _INTERESTING_METHODS):
            return []
        self.positions = index_positions(self.module, self.source)
        self._lines = self.source.splitlines()
        base_dir = os.path.dirname(os.path.abspath(self.path)) if self.path else None
        self.index = index
        self.r = Resolver(index, self.text, base_dir)
        found = self.classify()
        return self.assemble(found)

    # -- recognition ------------------------------------------------------------------------------
    def classify(self) -> _Found:
        from lintlora.extract.pyresolve import Obj, canonical

        import libcst as cst

        r = self.r
        f = _Found()
        for rec in self.index.calls:
            func = rec.node.func
            env = r.env_for(rec)
            method = rec.method
            canon = None
            if type(func) is cst.Name or (type(func) is cst.Attribute and _is_dotted(func)):
                v = r.ev(func, env, rec.order)
                if isinstance(v, Obj):
                    if v.kind == "qual":
                        canon = canonical(v.data)
                    elif v.kind == "scope" and v.data.kind == "class":
                        canon = self.local_class_kind(v.data)
                    elif v.kind == "builtin":
                        canon = None
            if canon is not None:
                f.canon[id(rec)] = canon
                if self.add_construct(f, rec, canon):
                    continue
            if method is not None:
                self.add_method_call(f, rec, method, canon)
            elif type(func) is cst.Name and func.value in ("print_trainable_parameters",
                                                           "get_nb_trainable_parameters"):
                # the helper peft's notebooks define and scripts copy: it prints the same count
                v = r.ev(func, env, rec.order)
                if isinstance(v, Obj) and v.kind == "scope":
                    f.calls.append((rec, func.value, f"{func.value} (local helper)"))
        for node, key, scope, order in self.index.env_reads:
            f.evidence.append(Evidence("env-rank", self.span(node), f"os.environ[{key!r}]"))
        return f

    def local_class_kind(self, cls: Any) -> str | None:
        """A local class is a trainer / training-arguments class when it subclasses one."""
        from lintlora.extract.pyresolve import canonical

        lib = self.r.library_base(cls)
        if lib is None:
            return None
        canon = canonical(lib)
        if canon in _TRAINERS or canon in _TRAINING_ARGS:
            return canon
        return None

    def add_construct(self, f: _Found, rec: Any, canon: str) -> bool:
        if canon in _TRAINERS:
            f.trainers.append(rec)
            f.training_signals += 1
            return True
        if canon in _TRAINING_ARGS:
            f.training_args.append(rec)
            f.training_signals += 1
            return True
        if canon == "peft.LoraConfig":
            f.loras.append(rec)
            return True
        if canon in _QUANT_CONFIGS:
            f.quants.append(rec)
            return True
        if canon in ("model_load", "unsloth.from_pretrained"):
            f.loads.append(rec)
            f.unsloth = f.unsloth or canon.startswith("unsloth")
            return True
        if canon in ("peft.get_peft_model", "unsloth.get_peft_model"):
            f.peft_wraps.append(rec)
            f.training_signals += 1
            f.calls.append((rec, "get_peft_model", canon))
            if canon == "unsloth.get_peft_model":
                f.unsloth = True
            return True
        if canon in ("peft.prepare_model_for_kbit_training", "peft.prepare_model_for_int8_training"):
            f.training_signals += 1
            f.calls.append((rec, "prepare_model_for_kbit_training",
                            "peft.prepare_model_for_kbit_training"))
            return True
        if canon == "torch.utils.data.DataLoader":
            f.dataloaders.append(rec)
            f.calls.append((rec, "dataloader", canon))
            return True
        if canon == "torch.cuda.empty_cache":
            f.calls.append((rec, "empty_cache", "torch.cuda.empty_cache"))
            return True
        if canon == "torch.autocast":
            f.calls.append((rec, "autocast", canon))
            return True
        if canon in ("accelerate.Accelerator", "accelerate.PartialState"):
            f.evidence.append(Evidence("accelerator", self.span(rec.node), canon))
            if canon == "accelerate.Accelerator":
                f.calls.append((rec, "accelerator_autocast", canon))
            return True
        if canon == "torch.distributed.init_process_group":
            f.evidence.append(Evidence("torchrun", self.span(rec.node), canon))
            return True
        if canon == "deepspeed.initialize":
            f.evidence.append(Evidence("deepspeed", self.span(rec.node), canon))
            f.training_signals += 1
            return True
        if canon in ("os.environ.get", "os.getenv"):
            args = rec.node.args
            if args:
                key = self.r.ev(args[0].value, self.r.env_for(rec), rec.order)
                if getattr(key, "value", None) in _ENV_KEYS:
                    f.evidence.append(Evidence("env-rank", self.span(rec.node),
                                               f"{canon}({key.value!r})"))  # type: ignore[union-attr]
            return True
        return False

    def add_method_call(self, f: _Found, rec: Any, method: str, canon: str | None) -> None:
        from lintlora.extract.pyresolve import Obj, DType, _MODEL_FLOW

        if method in ("gradient_checkpointing_enable", "gradient_checkpointing_disable",
                      "print_trainable_parameters", "get_nb_trainable_parameters",
                      "enable_input_require_grads"):
            f.calls.append((rec, method, None))
            return
        if method in ("activation_checkpointing_enable", "activation_checkpointing_disable"):
            # transformers 5.24's new names for gradient_checkpointing_enable/disable
            f.calls.append((rec, method.replace("activation", "gradient"), None))
            return
        if method == "backward":
            f.training_signals += 1
            return
        if method == "step" and not rec.node.args:
            recv = self.text(rec.node.func.value).lower()
            if "optim" in recv or recv in ("opt", "self.opt"):
                f.training_signals += 1
            return
        if method in ("cuda", "to", "train"):
            recv = self.r.ev(rec.node.func.value, self.r.env_for(rec), rec.order)
            if not isinstance(recv, Obj) or recv.kind != "call":
                return
            if method == "train":
                if recv.data in _TRAINERS or recv.data in _MODEL_FLOW:
                    f.training_signals += 1
                return
            if recv.data not in _MODEL_FLOW:
                return
            if method == "to":
                target = None
                for a in rec.node.args:
                    if a.keyword is None or a.keyword.value == "device":
                        target = a.value
                        break
                if target is None:
                    return  # .to(dtype=...) only: a cast, not a move
                v = self.r.ev(target, self.r.env_for(rec), rec.order)
                if isinstance(getattr(v, "value", None), DType):
                    return
            f.calls.append((rec, "model_move", None))

    # -- settings ---------------------------------------------------------------------------------
    def setting(self, v: Any, key_node: Any = None, value_node: Any = None,
                field_name: str = "") -> Setting:
        from lintlora.extract.pyresolve import Const, DictV, SeqV, Unknown

        if isinstance(v, (DictV, SeqV)):
            v = self.plain(v)
        if isinstance(v, Const):
            value = _normalise(field_name, v.value)
            expr = None
            if v.origin is not Origin.LITERAL and value_node is not None:
                expr = self.text(value_node)
            span = self.span(v.node) if v.node is not None else (
                None if v.origin is Origin.LIBRARY_DEFAULT else self.span(value_node))
            return Setting(value, v.origin, span, self.span(key_node), v.source, expr)
        reason = v.reason if isinstance(v, Unknown) else "an object, not a value"
        expr = self.text(value_node) if value_node is not None else None
        return Setting(None, Origin.UNKNOWN, self.span(value_node), self.span(key_node),
                       reason or None, expr)

    def plain(self, v: Any) -> Any:
        """A container of constants as one constant (origin: the weakest of its items)."""
        from lintlora.extract.pyresolve import Const, DictV, SeqV, Unknown, weakest

        if isinstance(v, DictV):
            if not v.complete:
                return Unknown(v.node, "dict with unresolved entries")
            out = {}
            origins = []
            source = None
            for k, (item, _kn) in v.items.items():
                item = self.plain(item)
                if not isinstance(item, Const):
                    return Unknown(v.node, f"entry {k!r} is unresolved")
                out[k] = item.value
                origins.append(item.origin)
                source = source or item.source
            origin = weakest(*origins) if origins else Origin.LITERAL
            return Const(out, origin, v.node, source if origin is not Origin.LITERAL else None)
        if isinstance(v, SeqV):
            items = [self.plain(i) for i in v.items]
            if all(isinstance(i, Const) for i in items):
                origin = weakest(*(i.origin for i in items))
                return Const(tuple(i.value for i in items), origin, v.node)
            return Unknown(v.node, "sequence with unresolved items")
        return v

    def settings_of(self, args: dict, complete: bool, unresolved: tuple, fields: Iterable[str],
                    defaults: dict[str, Setting] | None,
                    aliases: dict[str, tuple[str, ...]] | None = None) -> dict[str, Setting]:
        """Settings for ``fields`` from resolved call arguments, filling defaults only when
        every argument was resolved (an unresolved ``**`` may carry any of them).

        ``aliases`` maps a field to the argument names that set it, highest priority first
        (``{"torch_dtype": ("dtype", "torch_dtype")}``).
        """
        out: dict[str, Setting] = {}
        aliases = aliases or {}
        for name in fields:
            src = next((n for n in aliases.get(name, (name,)) if n in args), None)
            if src is not None:
                v, key_node, value_node = args[src]
                out[name] = self.setting(v, key_node, value_node, name)
            elif not complete:
                out[name] = Setting(None, Origin.UNKNOWN, None, None,
                                    f"may be passed through {', '.join(unresolved)}",
                                    None)
            elif defaults is not None and name in defaults:
                out[name] = defaults[name]
        return out

    # -- sections -----------------------------------------------------------------------------------
    def training_section(self, v: Any, trainer_canon: str | None, trainer_args: dict | None,
                         anchor: Any) -> tuple[TrainingArgs, list[Evidence], Any]:
        """TrainingArgs from the value passed as ``args=`` (or the trainer's default config),
        with what older TRL releases took as trainer keywords (``max_seq_length``,
        ``packing``, ``dataset_text_field``) applied on top.

        Returns the section, the launch evidence it carries, and the SFTConfig
        ``model_init_kwargs`` value (or ``None``).
        """
        import dataclasses

        section, evidence, mik = self._training_section(v, trainer_canon, anchor)
        if trainer_args:
            changes: dict[str, Any] = {}
            for name in ("max_seq_length", "packing"):
                if name in trainer_args:
                    val, key_node, value_node = trainer_args[name]
                    changes[name] = self.setting(val, key_node, value_node, name)
            if "dataset_text_field" in trainer_args:
                val, key_node, value_node = trainer_args["dataset_text_field"]
                changes["extra"] = {**section.extra, "dataset_text_field":
                                    self.setting(val, key_node, value_node)}
            if changes:
                section = dataclasses.replace(section, **changes)
        if trainer_canon not in ("trl.SFTTrainer",) and not (section.max_seq_length.known):
            section = self.with_tokenizer_length(section)
        if trainer_canon == "trl.SFTTrainer":
            msl = section.max_seq_length
            if (msl.known and msl.value is None) or (
                    not msl.known and msl.expr is None and msl.source is None):
                # trl 0.x SFTTrainer: `if max_seq_length is None: max_seq_length =
                # min(tokenizer.model_max_length, 1024)`; current trl: SFTConfig.max_length=1024
                section = dataclasses.replace(section, max_seq_length=Setting(
                    1024, Origin.LIBRARY_DEFAULT, msl.span, msl.key_span,
                    _SFT_TRAINER_LENGTH, msl.expr))
        return section, evidence, mik

    def _training_section(self, v: Any, trainer_canon: str | None, anchor: Any
                          ) -> tuple[TrainingArgs, list[Evidence], Any]:
        from lintlora.extract.defaults import defaults_for, positional_parameters, sft_bf16_default
        from lintlora.extract.pyresolve import DEFAULTS_CLASS, Obj, Unknown

        r = self.r
        config_canon = _TRAINERS.get(trainer_canon or "", "transformers.TrainingArguments")
        evidence: list[Evidence] = []
        span = None
        args: dict = {}
        complete = True
        unresolved: tuple = ()
        defaults: dict[str, Setting] | None = None
        extra_names: list[str] = []
        if v is None:
            defaults = defaults_for(DEFAULTS_CLASS[config_canon])
            span = anchor
        elif isinstance(v, Obj) and v.kind == "call" and v.data in _TRAINING_ARGS:
            config_canon = v.data
            rec = r.record_of(v.node)
            order = rec.order if rec is not None else 0
            args, complete, unresolved = r.call_kwargs(
                v.node, v.env or r.module_env, order,
                positional_parameters(DEFAULTS_CLASS[config_canon]))
            args = self.apply_object_writes(v, args)
            defaults = defaults_for(DEFAULTS_CLASS[config_canon])
            span = v.node
            extra_names = [k for k in args if k not in _TA_FIELDS]
        elif isinstance(v, Obj) and v.kind == "instance":
            return self.training_from_instance(v, trainer_canon)
        else:
            reason = v.reason if isinstance(v, Unknown) else "training arguments not followed"
            return self.unknown_training(reason, anchor), evidence, None
        fields = self.settings_of(args, complete, unresolved, _TA_FIELDS, defaults, _TA_ALIASES)
        msl = self.settings_of(args, complete, unresolved, ("max_seq_length",), defaults,
                               {"max_seq_length": ("max_seq_length", "max_length")})
        fields.update(msl)
        if config_canon == "trl.SFTConfig" and "bf16" not in args and complete:
            fields["bf16"] = sft_bf16_default(fields.get("fp16", Setting()))
        extra = {}
        for name in extra_names:
            if name in ("max_length", "max_seq_length", "model_init_kwargs") or name in _TA_ALIAS_NAMES:
                continue
            val, key_node, value_node = args[name]
            extra[name] = self.setting(val, key_node, value_node, name)
        if complete and defaults is not None:
            for name in _TA_EXTRA_DEFAULTS:
                if name not in extra and name in defaults:
                    extra[name] = defaults[name]
        section = TrainingArgs(**fields, span=self.span(span), extra=extra)  # type: ignore[arg-type]
        evidence.extend(self.training_evidence(section))
        mik = args.get("model_init_kwargs")
        return section, evidence, (mik[0] if mik else None)

    def with_tokenizer_length(self, section: TrainingArgs) -> TrainingArgs:
        """Fill an unset ``max_seq_length`` from the tokenizer calls' ``max_length=`` (the
        truncation length of a script that tokenizes its data itself, e.g. alpaca-lora's
        ``cutoff_len``); the longest one wins, and any unresolved one makes it unknown."""
        import dataclasses

        import libcst as cst

        msl = section.max_seq_length
        if msl.known or msl.expr is not None or (msl.source and "never defined" in msl.source):
            return section
        found: list[Setting] = []
        for rec in self.index.calls:
            func = rec.node.func
            name = (func.value if type(func) is cst.Name else
                    func.attr.value if type(func) is cst.Attribute else "")
            owner = self.text(func.value) if type(func) is cst.Attribute else ""
            is_tokenizer = "tokenizer" in name.lower() or (
                "tokeniz" in owner.lower() and name in ("__call__", "encode", "encode_plus",
                                                        "batch_encode_plus", "apply_chat_template"))
            # AutoTokenizer.from_pretrained(..., model_max_length=N): the truncation cap
            keyword = "max_length"
            if name == "from_pretrained" and "tokenizer" in owner.lower():
                is_tokenizer, keyword = True, "model_max_length"
            if not is_tokenizer:
                continue
            for a in rec.node.args:
                if a.keyword is not None and a.keyword.value == keyword:
                    v = self.r.ev(a.value, self.r.env_for(rec), rec.order)
                    st = self.setting(v, a.keyword, a.value, "max_seq_length")
                    found.append(st)
        if not found:
            # a dataset builder told the length: build_dataset(..., max_seq_length=N),
            # ConstantLengthDataset(..., seq_length=N)
            for rec in self.index.calls:
                for a in rec.node.args:
                    if a.keyword is not None and a.keyword.value in ("max_seq_length",
                                                                     "seq_length"):
                        v = self.r.ev(a.value, self.r.env_for(rec), rec.order)
                        found.append(self.setting(v, a.keyword, a.value, "max_seq_length"))
        if not found:
            return section
        known = [st for st in found if st.known and isinstance(st.value, int)]
        if len(known) != len(found):
            bad = next(st for st in found if not (st.known and isinstance(st.value, int)))
            return dataclasses.replace(section, max_seq_length=bad)
        values = sorted({st.value for st in known})
        if len(values) > 1:
            # e.g. a prompt and a response truncated separately, then concatenated
            return dataclasses.replace(section, max_seq_length=Setting(
                None, Origin.UNKNOWN, known[0].span, known[0].key_span,
                f"tokenizer calls truncate to different lengths ({', '.join(map(str, values))}); "
                "the sequence length depends on how the pieces are combined", None))
        best = known[0]
        source = best.source or "the data pipeline's truncation length"
        return dataclasses.replace(section, max_seq_length=Setting(
            best.value, best.origin, best.span, best.key_span, source, best.expr))

    def unknown_training(self, reason: str, anchor: Any) -> TrainingArgs:
        unknown = Setting(None, Origin.UNKNOWN, None, None, reason, None)
        fields = {name: unknown for name in _TA_FIELDS + ("max_seq_length",)}
        return TrainingArgs(**fields, span=self.span(anchor))  # type: ignore[arg-type]

    def training_from_instance(self, inst: Any, trainer_canon: str | None
                               ) -> tuple[TrainingArgs, list[Evidence], Any]:
        """TrainingArgs from a dataclass instance (``HfArgumentParser`` / ``TrlParser`` output
        or a local subclass of TrainingArguments instantiated directly)."""
        from lintlora.extract.defaults import sft_bf16_default
        from lintlora.extract.pyresolve import Const, Obj, canonical

        r = self.r
        cls = inst.data
        lib = None
        if not isinstance(cls, Obj):
            return self.unknown_training(getattr(cls, "reason", "") or
                                         "the training arguments class is not resolved",
                                         inst.node), [], None
        if cls.kind == "qual":
            lib = canonical(cls.data)
        elif cls.kind == "scope":
            base = r.library_base(cls.data)
            lib = canonical(base) if base else None
        if lib not in _TRAINING_ARGS:
            return self.unknown_training("the training arguments class is not a TrainingArguments",
                                         inst.node), [], None
        fields: dict[str, Setting] = {}
        from lintlora.extract.pyresolve import Unknown

        for name in _TA_FIELDS:
            v = r.getattr(inst, name, None)
            if isinstance(v, Unknown) and v.reason.endswith("not tabulated"):
                continue  # not a parameter of this class (packing on TrainingArguments)
            fields[name] = self.setting(v, None, None, name)
        msl = r.getattr(inst, "max_seq_length", None)
        ml = r.getattr(inst, "max_length", None)
        pick = msl if (isinstance(msl, Const) and msl.origin is not Origin.LIBRARY_DEFAULT) or \
            isinstance(ml, Unknown) else ml
        if lib in ("trl.SFTConfig",) or isinstance(pick, Const):
            fields["max_seq_length"] = self.setting(pick, None, None, "max_seq_length")
        if lib == "trl.SFTConfig":
            bf = r.getattr(inst, "bf16", None)
            if isinstance(bf, Const) and bf.origin is Origin.LIBRARY_DEFAULT:
                fields["bf16"] = sft_bf16_default(fields.get("fp16", Setting()))
        section = TrainingArgs(**fields, span=self.span(inst.node))  # type: ignore[arg-type]
        return section, self.training_evidence(section), None

    def training_evidence(self, section: TrainingArgs) -> list[Evidence]:
        ev: list[Evidence] = []
        ds = section.deepspeed
        if ds.known and ds.value not in (None, "", False):
            ev.append(Evidence("deepspeed", ds.span or section.span, f"deepspeed={ds.value!r}"))
        fs = section.fsdp
        if fs.known and fs.value not in (None, "", False, ()):
            ev.append(Evidence("fsdp", fs.span or section.span, f"fsdp={fs.value!r}"))
        for name, s in section.extra.items():
            if name.startswith("ddp_") and s.origin is not Origin.LIBRARY_DEFAULT:
                ev.append(Evidence("ddp-argument", s.key_span or s.span or section.span, name))
        return ev

    def apply_object_writes(self, obj: Any, args: dict) -> dict:
        """``training_args.gradient_checkpointing = True`` after the object is built."""
        import libcst as cst
        from lintlora.extract.pyresolve import Obj

        r = self.r
        out = dict(args)
        for m in self.index.mutations:
            if m.kind != "setattr" or type(m.root) is not cst.Name:
                continue
            target = r.ev(m.root, Env_of(r, m), m.order)
            if isinstance(target, Obj) and target.kind == "call" and target.node is obj.node:
                state, _d = r.guard_state(m.guards, m.scope, None)
                if state is False:
                    continue
                value = r.ev(m.value, Env_of(r, m), m.order)
                if state is None:
                    from lintlora.extract.pyresolve import Unknown

                    value = Unknown(m.value, f"set under a condition at line "
                                             f"{(self.span(m.node) or Span('', 0)).line}")
                out[m.key] = (value, m.node, m.value)
        return out

    def lora_section(self, v: Any) -> Lora | None:
        from lintlora.extract.defaults import defaults_for
        from lintlora.extract.pyresolve import Const, Obj, Unknown

        r = self.r
        if isinstance(v, Const) and v.value is None:
            return None
        if isinstance(v, Obj) and v.kind == "call" and v.data == "peft.LoraConfig":
            rec = r.record_of(v.node)
            args, complete, unresolved = r.call_kwargs(v.node, v.env or r.module_env,
                                                       rec.order if rec else 0)
            args = self.apply_object_writes(v, args)
            fields = self.settings_of(args, complete, unresolved, _LORA_FIELDS,
                                      defaults_for("LoraConfig"))
            extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k)
                     for k in args if k not in _LORA_FIELDS}
            return Lora(**fields, span=self.span(v.node), extra=extra)  # type: ignore[arg-type]
        if isinstance(v, Obj) and v.kind == "call" and v.data == "unsloth.get_peft_model":
            rec = r.record_of(v.node)
            args, complete, unresolved = r.call_kwargs(v.node, v.env or r.module_env,
                                                       rec.order if rec else 0, ("model",))
            fields = self.settings_of(args, complete, unresolved, _LORA_FIELDS, None)
            for name in _LORA_FIELDS:
                fields.setdefault(name, Setting(None, Origin.UNKNOWN, None, None,
                                                "unsloth's default (not tabulated)", None))
            extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k)
                     for k in args if k not in _LORA_FIELDS and k != "model"}
            return Lora(**fields, span=self.span(v.node), extra=extra)  # type: ignore[arg-type]
        reason = v.reason if isinstance(v, Unknown) else "adapter config not followed"
        unknown = Setting(None, Origin.UNKNOWN, None, None, reason, None)
        return Lora(**{n: unknown for n in _LORA_FIELDS}, span=self.span(getattr(v, "node", None)))

    def quant_section(self, v: Any, node: Any) -> Quantization | None:
        from lintlora.extract.defaults import defaults_for, positional_parameters
        from lintlora.extract.pyresolve import Const, Obj, Unknown

        r = self.r
        if v is None or (isinstance(v, Const) and v.value is None):
            return None
        if isinstance(v, Obj) and v.kind == "call" and v.data in _QUANT_CONFIGS:
            method = _QUANT_CONFIGS[v.data]
            rec = r.record_of(v.node)
            positional = positional_parameters("BitsAndBytesConfig") if method == "bitsandbytes" else ()
            args, complete, unresolved = r.call_kwargs(v.node, v.env or r.module_env,
                                                       rec.order if rec else 0, positional)
            method_s = Setting.literal(method, self.span(v.node))
            if method == "bitsandbytes":
                defaults = defaults_for("BitsAndBytesConfig")
                flags = self.settings_of(args, complete, unresolved,
                                         ("load_in_4bit", "load_in_8bit"), defaults)
                bits = _bits(flags.get("load_in_4bit"), flags.get("load_in_8bit"))
                fields = self.settings_of(args, complete, unresolved, _BNB_FIELDS, defaults)
                extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k)
                         for k in args if k not in _BNB_FIELDS}
                return Quantization(method=method_s, bits=bits, **fields,  # type: ignore[arg-type]
                                    span=self.span(v.node), extra=extra)
            bits = self.other_bits(method, args)
            extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k) for k in args
                     if k not in ("bits", "nbits", "w_bit")}
            return Quantization(method=method_s, bits=bits, span=self.span(v.node), extra=extra)
        reason = v.reason if isinstance(v, Unknown) else "quantization config not followed"
        unknown = Setting(None, Origin.UNKNOWN, self.span(node), None, reason,
                          self.text(node) if node is not None else None)
        return Quantization(method=unknown, bits=unknown, span=self.span(node))

    def other_bits(self, method: str, args: dict) -> Setting:
        fixed = {"mxfp4": 4, "eetq": 8, "fp8": 8}
        if method in fixed:
            return Setting.assumed(fixed[method], f"{method} stores weights in {fixed[method]} bits")
        for name in ("bits", "nbits", "w_bit"):
            if name in args:
                return self.setting(args[name][0], args[name][1], args[name][2], "bits")
        for name in ("weights", "quant_type"):
            if name in args:
                s = self.setting(args[name][0], args[name][1], args[name][2])
                if s.known and isinstance(s.value, str):
                    m = re.search(r"(?:int|nf|fp|uint)(\d)", s.value)
                    if m:
                        return Setting(int(m.group(1)), s.origin, s.span, s.key_span, s.source,
                                       s.expr)
        if method == "awq":
            return Setting.assumed(4, "AwqConfig's default bits (4)")
        return Setting(None, Origin.UNKNOWN, None, None, f"{method} bit width not written", None)

    def model_section(self, load: Any) -> tuple[ModelLoad, Quantization | None]:
        """ModelLoad (+ quantization) from a ``from_pretrained`` call object."""
        r = self.r
        rec = r.record_of(load.node)
        order = rec.order if rec else 0
        unsloth = load.data == "unsloth.from_pretrained"
        positional = ("model_name",) if unsloth else _MODEL_LOAD_POSITIONAL
        args, complete, unresolved = r.call_kwargs(load.node, load.env or r.module_env, order,
                                                   positional)
        return self.model_from_args(args, complete, unresolved, load.node, unsloth,
                                    variable=self.variable_of(load.node))

    def model_from_args(self, args: dict, complete: bool, unresolved: tuple, node: Any,
                        unsloth: bool, variable: str | None = None,
                        name: Setting | None = None) -> tuple[ModelLoad, Quantization | None]:
        from lintlora.extract.defaults import defaults_for

        aliases = {"torch_dtype": ("dtype", "torch_dtype"),
                   "attn_implementation": ("attn_implementation", "use_flash_attention_2")}
        if name is None:
            key = "model_name" if unsloth else "pretrained_model_name_or_path"
            if key in args:
                name = self.setting(args[key][0], args[key][1], args[key][2])
            elif "model_name_or_path" in args:
                a = args["model_name_or_path"]
                name = self.setting(a[0], a[1], a[2])
            else:
                name = Setting(None, Origin.UNKNOWN, self.span(node), None,
                               "model name not passed", None)
        if name.known and name.origin.is_default and (
                name.value in ("", None) or (isinstance(name.value, str) and (
                    name.value.startswith(("path/to", "/path/to", "<")) or name.value.endswith(">")))):
            # `base_model: str = ""` (with an assert) or "path/to/model": a placeholder that must
            # be given at launch
            name = Setting(None, Origin.UNKNOWN, name.span, name.key_span,
                           f"the default is empty ({name.source or 'a default'}): "
                           "the model is given at launch", name.expr)
        fields = self.settings_of(args, complete, unresolved, _MODEL_FIELDS, None, aliases)
        fa = fields.get("attn_implementation")
        if fa is not None and "use_flash_attention_2" in args and "attn_implementation" not in args:
            fields["attn_implementation"] = (
                Setting("flash_attention_2", fa.origin, fa.span, fa.key_span, fa.source, fa.expr)
                if fa.known and fa.value else Setting(None, fa.origin, fa.span, fa.key_span,
                                                      fa.source, fa.expr) if fa.known else fa)
        for fname in _MODEL_FIELDS:
            if fname not in fields:
                fields[fname] = Setting(None, Origin.UNKNOWN, None, None,
                                        "not passed (the default depends on the library version)"
                                        if complete else f"may be passed through "
                                                         f"{', '.join(unresolved)}", None)
        extra = {}
        for k in ("max_seq_length", "low_cpu_mem_usage", "full_finetuning", "revision"):
            if k in args:
                extra[k] = self.setting(args[k][0], args[k][1], args[k][2], k)
        use_cache_writes = self.config_writes("use_cache")
        if use_cache_writes is not None and not fields["use_cache"].known:
            fields["use_cache"] = use_cache_writes
        model = ModelLoad(name_or_path=name, **fields, span=self.span(node),  # type: ignore[arg-type]
                          variable=variable, extra=extra)
        # quantization
        quant = None
        if "quantization_config" in args:
            qv, _k, qnode = args["quantization_config"]
            quant = self.quant_section(qv, qnode)
        else:
            flags = self.settings_of(args, complete, (), ("load_in_4bit", "load_in_8bit"), None)
            if flags:
                bits = _bits(flags.get("load_in_4bit"), flags.get("load_in_8bit"))
                if not (bits.known and not bits.value):
                    method = Setting.literal("bitsandbytes", self.span(node))
                    if unsloth:
                        quant = Quantization(method=method, bits=bits, span=self.span(node))
                    else:
                        defaults = defaults_for("BitsAndBytesConfig")
                        bnb = self.settings_of(args, complete, unresolved, _BNB_FIELDS, defaults)
                        quant = Quantization(method=method, bits=bits, **bnb,  # type: ignore[arg-type]
                                             span=self.span(node))
            elif not complete:
                unknown = Setting(None, Origin.UNKNOWN, None, None,
                                  f"may be passed through {', '.join(unresolved)}", None)
                quant = Quantization(method=unknown, bits=unknown, span=self.span(node))
        return model, quant

    def config_writes(self, attr: str) -> Setting | None:
        """``model.config.<attr> = value`` anywhere in the file (the last one that runs)."""
        import libcst as cst

        hits = [m for m in self.index.mutations
                if m.kind == "setattr" and m.key == attr and type(m.root) is cst.Attribute
                and m.root.attr.value == "config"]
        if not hits:
            return None
        m = hits[-1]
        v = self.r.ev(m.value, Env_of(self.r, m), m.order)
        return self.setting(v, m.node, m.value, attr)

    def variable_of(self, call: Any) -> str | None:
        for scope in self.index.scopes:
            for name, bindings in scope.bindings.items():
                for b in bindings:
                    if b.kind == "assign" and b.value is call:
                        return name
        return None

    def dataloader_spec(self, rec: Any) -> DataLoaderSpec:
        from lintlora.extract.defaults import defaults_for, positional_parameters

        args, complete, unresolved = self.r.call_kwargs(rec.node, self.r.env_for(rec), rec.order,
                                                        positional_parameters("DataLoader"))
        fields = self.settings_of(args, complete, unresolved, _DL_FIELDS, defaults_for("DataLoader"))
        extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k)
                 for k in ("shuffle", "drop_last", "prefetch_factor") if k in args}
        return DataLoaderSpec(**fields, span=self.span(rec.node), extra=extra)  # type: ignore[arg-type]

    # -- call sites -----------------------------------------------------------------------------------
    def call_sites(self, found: _Found) -> tuple[CallSite, ...]:
        from lintlora.extract.defaults import defaults_for, positional_parameters

        import libcst as cst

        r = self.r
        out = []
        for rec, kind, qual in found.calls:
            env = r.env_for(rec)
            state, decider = r.guard_state(rec.guards, rec.scope, None)
            if state is False and decider is not None and decider.origin in (
                    Origin.LITERAL, Origin.VARIABLE):
                # dead code as written (`USE_GC = False` ... `if USE_GC: enable()`); a branch
                # ruled out only by a default (a flag not passed) is kept, as it may run
                continue
            args: dict[str, Setting] = {}
            receiver = None
            func = rec.node.func
            if type(func) is cst.Attribute and qual is None:
                recv = func.value
                recv_text = (f"{self.text(recv.func)}(...)" if type(recv) is cst.Call
                             else self.text(recv))
                qual = f"{recv_text}.{func.attr.value}"
                if type(recv) is cst.Name:
                    receiver = recv.value
            if kind == "prepare_model_for_kbit_training":
                raw, complete, unresolved = r.call_kwargs(
                    rec.node, env, rec.order, positional_parameters("prepare_model_for_kbit_training"))
                args = self.settings_of(raw, complete, unresolved,
                                        ("use_gradient_checkpointing",
                                         "gradient_checkpointing_kwargs"),
                                        defaults_for("prepare_model_for_kbit_training"))
            elif kind == "gradient_checkpointing_enable":
                raw, complete, unresolved = r.call_kwargs(rec.node, env, rec.order,
                                                          ("gradient_checkpointing_kwargs",))
                if "gradient_checkpointing_kwargs" in raw:
                    a = raw["gradient_checkpointing_kwargs"]
                    args["gradient_checkpointing_kwargs"] = self.setting(a[0], a[1], a[2])
            elif kind == "empty_cache":
                pass
            elif kind == "model_move":
                raw, _c, _u = r.call_kwargs(rec.node, env, rec.order, ("device",))
                if "device" in raw:
                    a = raw["device"]
                    args["device"] = self.setting(a[0], a[1], a[2])
            elif kind == "autocast":
                raw, complete, unresolved = r.call_kwargs(rec.node, env, rec.order,
                                                          ("device_type", "dtype", "enabled"))
                cuda_amp = "cuda" in self.text(func)
                if cuda_amp:
                    raw.pop("device_type", None)
                    raw2, complete, unresolved = r.call_kwargs(rec.node, env, rec.order,
                                                               ("dtype", "enabled"))
                    raw = raw2
                for name in ("device_type", "dtype", "enabled"):
                    if name in raw:
                        a = raw[name]
                        args[name] = self.setting(a[0], a[1], a[2], name)
                device = args.get("device_type")
                if "dtype" not in args and complete and (cuda_amp or (
                        device is not None and device.is_("cuda"))):
                    args["dtype"] = defaults_for("autocast")["dtype"]
            elif kind == "accelerator_autocast":
                raw, _c, _u = r.call_kwargs(rec.node, env, rec.order, ())
                mp = raw.get("mixed_precision")
                if mp is None:
                    continue
                s = self.setting(mp[0], mp[1], mp[2])
                if not s.known or s.value not in ("fp16", "bf16"):
                    continue
                kind = "autocast"
                args["dtype"] = Setting(_normalise("dtype", s.value), s.origin, s.span,
                                        s.key_span, s.source, s.expr)
                args["mixed_precision"] = s
            elif kind == "dataloader":
                spec_args, complete, unresolved = r.call_kwargs(
                    rec.node, env, rec.order, positional_parameters("DataLoader"))
                args = self.settings_of(spec_args, complete, unresolved, _DL_FIELDS,
                                        defaults_for("DataLoader"))
            elif kind == "get_peft_model" and qual == "unsloth.get_peft_model":
                raw, complete, unresolved = r.call_kwargs(rec.node, env, rec.order, ("model",))
                if "use_gradient_checkpointing" in raw:
                    a = raw["use_gradient_checkpointing"]
                    s = self.setting(a[0], a[1], a[2])
                    gc_kind = ("gradient_checkpointing_disable" if s.known and s.value is False
                               else "gradient_checkpointing_enable")
                    out.append((rec, CallSite(gc_kind, "unsloth.FastLanguageModel.get_peft_model",
                                              self.span(rec.node), rec.loop is not None,
                                              False, {"use_gradient_checkpointing": s},
                                              receiver, 0)))
            in_loop, per_step = self.loop_context(rec)
            out.append((rec, CallSite(kind, qual or "", self.span(rec.node), in_loop, per_step,
                                      args, receiver, 0)))
        # execution order: statement order, then inner calls (which end first) before outer ones
        def key(item: tuple) -> tuple:
            rec, call = item
            r_ = self.positions.get(rec.node) or (0, 0, 0, 0)
            return (rec.order, r_[2], r_[3])

        out.sort(key=key)
        import dataclasses

        return tuple(dataclasses.replace(c, order=i) for i, (_rec, c) in enumerate(out))

    def loop_context(self, rec: Any) -> tuple[bool, bool]:
        in_loop = rec.loop is not None
        per_step = rec.hook is not None or (rec.loop is not None and rec.loop.has_step)
        if not per_step and rec.scope.kind == "function":
            for site in self.r.call_sites(rec.scope)[:16]:
                if site.hook is not None or (site.loop is not None and site.loop.has_step):
                    return True, True
                if site.loop is not None:
                    in_loop = True
        return in_loop, per_step

    # -- setups ---------------------------------------------------------------------------------------
    def assemble(self, found: _Found) -> list[TrainingSetup]:
        self.found = found
        calls = self.call_sites(found)
        evidence = tuple(found.evidence)
        dataloaders = tuple(self.dataloader_spec(rec) for rec in found.dataloaders)
        is_training = found.training_signals > 0
        setups: list[TrainingSetup] = []
        for rec in found.trainers:
            for frame in self.sweep_frames(rec):
                setups.append(self.trainer_setup(rec, frame, found, calls, evidence, dataloaders))
        if not setups:
            s = self.file_setup(found, calls, evidence, dataloaders, is_training)
            if s is not None:
                setups.append(s)
        unique: list[TrainingSetup] = []
        for s in setups:
            if s not in unique:
                unique.append(s)
        return unique

    def framework(self, found: _Found, trainer_canon: str | None, training_canon: str | None) -> str:
        if found.unsloth:
            return "unsloth"
        if (trainer_canon or "").startswith("trl.") or (training_canon or "").startswith("trl."):
            return "trl"
        if trainer_canon or training_canon:
            return "transformers"
        return "torch"

    def sweep_frames(self, rec: Any) -> list[Any]:
        """One frame per combination of literal loop values around a trainer (a sweep)."""
        import libcst as cst
        from lintlora.extract.pyresolve import Const, Frame

        loops = []
        frame = rec.loop
        while frame is not None and frame.scope is rec.scope:
            node = frame.node
            if type(node) is cst.For and type(node.target) is cst.Name:
                env = self.r.env_for(rec)
                it = self.r.ev(node.iter, env, frame.order)
                if isinstance(it, Const) and isinstance(it.value, tuple) and 1 < len(it.value):
                    elements = (node.iter.elements if type(node.iter) in (cst.List, cst.Tuple)
                                and len(node.iter.elements) == len(it.value) else None)
                    values = []
                    for i, val in enumerate(it.value):
                        el = elements[i].value if elements is not None else it.node
                        origin = it.origin if it.origin is not Origin.LITERAL else Origin.VARIABLE
                        values.append(Const(val, origin, el, node.target.value))
                    loops.append((node.target.value, values))
            frame = frame.parent
        if not loops:
            return [None]
        combos = list(itertools.islice(itertools.product(*(v for _n, v in loops)), _SWEEP_LIMIT))
        names = [n for n, _v in loops]
        return [Frame(loop=dict(zip(names, combo))) for combo in combos]

    def trainer_setup(self, rec: Any, frame: Any, found: _Found, calls: tuple,
                      evidence: tuple, dataloaders: tuple) -> TrainingSetup:
        from lintlora.extract.pyresolve import Const, Env, Obj

        r = self.r
        trainer_canon = found.canon[id(rec)]
        env = Env(rec.scope, frame) if frame is not None else r.env_for(rec)
        positional = (_REF_MODEL_POSITIONAL if trainer_canon in ("trl.DPOTrainer", "trl.KTOTrainer")
                      else _TRAINER_POSITIONAL)
        args, complete, unresolved = r.call_kwargs(rec.node, env, rec.order, positional)
        targ = args.get("args")
        tv = targ[0] if targ else None
        if targ is None and not complete:
            from lintlora.extract.pyresolve import Unknown

            tv = Unknown(rec.node, f"args may be passed through {', '.join(unresolved)}")
        if not (isinstance(tv, Obj) and tv.kind in ("call", "instance")) and tv is not None \
                and len(found.training_args) == 1:
            only = found.training_args[0]
            tv = r.ev(only.node, r.env_for(only), only.order)
        training, tevidence, model_init_kwargs = self.training_section(tv, trainer_canon, args,
                                                                       rec.node)
        model = quant = lora = None
        mv = args.get("model")
        load, loras = self.follow_model(mv[0] if mv else None)
        if "model_init_kwargs" in args:  # older trl took it as a trainer keyword
            model_init_kwargs = args["model_init_kwargs"][0]
        if isinstance(mv[0] if mv else None, Const) and isinstance(mv[0].value, str):  # type: ignore[index]
            model, quant = self.model_from_string(mv, model_init_kwargs, args, found)
        elif load is not None:
            model, quant = self.model_section(load)
        elif len(found.loads) == 1:
            only = found.loads[0]
            lv = r.ev(only.node, r.env_for(only), only.order)
            lv = lv.items[0] if hasattr(lv, "items") and isinstance(lv.items, list) else lv
            if isinstance(lv, Obj):
                model, quant = self.model_section(lv)
        if model is None and mv is not None and not isinstance(mv[0], Obj) \
                and model_init_kwargs is not None:
            # SFTTrainer(model=<an unresolved hub id>, model_init_kwargs=...): trl loads it
            model, quant = self.model_from_string(mv, model_init_kwargs, args, found)
        if model is None and mv is not None:
            # the model comes from somewhere lintlora cannot follow (another file, a helper
            # returning one of several models): say so, and leave its quantization unknown too
            reason = getattr(mv[0], "reason", "") or (
                "one of several models, chosen when the script runs"
                if getattr(mv[0], "kind", None) == "either"
                else "the model passed to the trainer is not followed")
            unknown = Setting(None, Origin.UNKNOWN, self.span(mv[2] or mv[1]), self.span(mv[1]),
                              reason, self.text(mv[2]) if mv[2] is not None else None)
            model = ModelLoad(name_or_path=unknown, torch_dtype=unknown, device_map=unknown,
                              attn_implementation=unknown, use_cache=unknown,
                              max_memory=unknown, trust_remote_code=unknown,
                              span=self.span(mv[2] or mv[1]))
            quant = Quantization(method=unknown, bits=unknown, span=self.span(mv[2] or mv[1]))
        pc = args.get("peft_config")
        if pc is not None:
            lora = self.lora_section(pc[0])
        if lora is None and loras:
            lora = self.lora_section(loras[-1])
        if lora is None and pc is None:
            lora = self.only_lora(found)
        training_canon = None
        if isinstance(tv, Obj) and tv.kind == "call":
            training_canon = tv.data
        return TrainingSetup(
            path=self.path, kind=self.kind,
            framework=self.framework(found, trainer_canon, training_canon),
            anchor=self.span(rec.node), model=model, quantization=quant, lora=lora,
            training=training, dataloaders=dataloaders, calls=calls,
            launch=evidence + tuple(tevidence), is_training=True)

    def model_from_string(self, mv: tuple, model_init_kwargs: Any, trainer_args: dict,
                          found: _Found) -> tuple[ModelLoad, Quantization | None]:
        """``SFTTrainer(model="org/name")``: trl loads it with ``args.model_init_kwargs``."""
        name = self.setting(mv[0], mv[1], mv[2])
        mapping = self.r.as_mapping(model_init_kwargs) if model_init_kwargs is not None else None
        if mapping is not None:
            args = {k: (v, kn, None) for k, (v, kn) in mapping.items.items()}
            complete, unresolved = mapping.complete, mapping.unresolved
        elif model_init_kwargs is None or getattr(model_init_kwargs, "value", 1) is None:
            args, complete, unresolved = {}, True, ()
        else:
            args, complete, unresolved = {}, False, ("model_init_kwargs",)
        if "quantization_config" in trainer_args and "quantization_config" not in args:
            args["quantization_config"] = trainer_args["quantization_config"]
        return self.model_from_args(args, complete, unresolved, mv[2] or mv[1], False, None, name)

    def follow_model(self, v: Any) -> tuple[Any, list]:
        """Walk back from the model a trainer gets to the call that loaded it, collecting the
        adapter configs it was wrapped with on the way."""
        from lintlora.extract.pyresolve import Obj, SeqV

        r = self.r
        loras: list = []
        if isinstance(v, Obj) and v.kind == "either":
            # a branch decides: the same base model either way is still that model
            results = [self.follow_model(alt) for alt in v.data]
            loads = {id(ld.node): ld for ld, _l in results if ld is not None}
            adapters = {id(getattr(x, "node", x)): x for _ld, ls in results for x in ls}
            load = next(iter(loads.values())) if len(loads) == 1 else None
            return load, (list(adapters.values()) if len(adapters) == 1 else [])
        for _ in range(16):
            if isinstance(v, SeqV) and v.items:
                v = v.items[0]
            if not (isinstance(v, Obj) and v.kind == "call"):
                return None, loras
            if v.data in ("model_load", "unsloth.from_pretrained"):
                return v, loras
            rec = r.record_of(v.node)
            order = rec.order if rec else 0
            env = v.env or r.module_env
            if v.data == "peft.get_peft_model":
                args, _c, _u = r.call_kwargs(v.node, env, order, ("model", "peft_config"))
                if "peft_config" in args:
                    loras.insert(0, args["peft_config"][0])
                v = args["model"][0] if "model" in args else None
            elif v.data == "unsloth.get_peft_model":
                loras.insert(0, v)
                args, _c, _u = r.call_kwargs(v.node, env, order, ("model",))
                v = args["model"][0] if "model" in args else None
            elif v.data in ("peft.prepare_model_for_kbit_training",
                            "peft.prepare_model_for_int8_training"):
                args, _c, _u = r.call_kwargs(v.node, env, order, ("model",))
                v = args["model"][0] if "model" in args else None
            else:
                return None, loras
        return None, loras

    def only_lora(self, found: _Found) -> Lora | None:
        from lintlora.extract.pyresolve import Obj

        candidates = found.loras + [w for w in found.peft_wraps
                                    if found.canon.get(id(w)) == "unsloth.get_peft_model"]
        if len(candidates) != 1:
            return None
        rec = candidates[0]
        v = self.r.ev(rec.node, self.r.env_for(rec), rec.order)
        return self.lora_section(v) if isinstance(v, Obj) else None

    def file_setup(self, found: _Found, calls: tuple, evidence: tuple, dataloaders: tuple,
                   is_training: bool) -> TrainingSetup | None:
        """The one setup of a file without a trainer: what it has."""
        from lintlora.extract.pyresolve import Obj, SeqV

        r = self.r
        model = quant = lora = training = None
        load = None
        loras: list = []
        for rec in found.peft_wraps:
            v = r.ev(rec.node, r.env_for(rec), rec.order)
            load, loras = self.follow_model(v)
            if load is not None or loras:
                break
        if load is None:
            for rec in found.calls:
                if rec[1] == "prepare_model_for_kbit_training":
                    v = r.ev(rec[0].node, r.env_for(rec[0]), rec[0].order)
                    load, _l = self.follow_model(v)
                    if load is not None:
                        break
        if load is None and found.loads:
            rec = found.loads[0]
            v = r.ev(rec.node, r.env_for(rec), rec.order)
            if isinstance(v, SeqV) and v.items:
                v = v.items[0]
            load = v if isinstance(v, Obj) else None
        if load is not None:
            model, quant = self.model_section(load)
        if loras:
            lora = self.lora_section(loras[-1])
        elif found.loras:
            rec = found.loras[0]
            lora = self.lora_section(r.ev(rec.node, r.env_for(rec), rec.order))
        else:
            lora = self.only_lora(found)
        training_canon = None
        tevidence: list[Evidence] = []
        if found.training_args:
            rec = found.training_args[0]
            v = r.ev(rec.node, r.env_for(rec), rec.order)
            training_canon = found.canon.get(id(rec))
            training, tevidence, _mik = self.training_section(v, None, None, rec.node)
        if not (model or quant or lora or training or dataloaders or calls or found.quants):
            return None
        if quant is None and model is None and found.quants:
            rec = found.quants[0]
            quant = self.quant_section(r.ev(rec.node, r.env_for(rec), rec.order), rec.node)
        anchor = None
        for candidate in (training, model, lora):
            if candidate is not None and candidate.span is not None:
                anchor = candidate.span
                break
        if anchor is None:
            peft = [c for c in calls if c.kind in ("get_peft_model", "prepare_model_for_kbit_training")]
            anchor = peft[0].span if peft else (calls[0].span if calls else Span(self.path, 1))
        return TrainingSetup(
            path=self.path, kind=self.kind, framework=self.framework(found, None, training_canon),
            anchor=anchor, model=model, quantization=quant, lora=lora, training=training,
            dataloaders=dataloaders, calls=calls, launch=evidence + tuple(tevidence),
            is_training=is_training)


def Env_of(r: Any, m: Any) -> Any:
    """The environment of a recorded statement (no call context)."""
    from lintlora.extract.pyresolve import Env

    return r.module_env if m.scope is r.index.root else Env(m.scope)


def _is_dotted(node: Any) -> bool:
    import libcst as cst

    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name


def _bits(four: Setting | None, eight: Setting | None) -> Setting:
    """``bits`` from ``load_in_4bit``/``load_in_8bit`` settings."""
    four = four or Setting()
    eight = eight or Setting()
    if four.known and four.value:
        return Setting(4, four.origin, four.span, four.key_span, four.source, four.expr)
    if eight.known and eight.value:
        return Setting(8, eight.origin, eight.span, eight.key_span, eight.source, eight.expr)
    if four.known and eight.known:
        origin = four.origin if four.origin is not Origin.LIBRARY_DEFAULT else eight.origin
        return Setting(0, origin, four.span or eight.span, four.key_span or eight.key_span,
                       four.source or eight.source)
    missing = four if not four.known else eight
    return Setting(None, Origin.UNKNOWN, missing.span, missing.key_span,
                   missing.source or "load_in_4bit/load_in_8bit unresolved", missing.expr)


def _normalise(field_name: str, value: Any) -> Any:
    value = _plain(value)
    if field_name in _DTYPE_FIELDS:
        return _dtype(value)
    if field_name in _MODULE_FIELDS and isinstance(value, (tuple, list)):
        return tuple(str(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {(str(k) if isinstance(k, str) else k): _plain(v) for k, v in value.items()}
    return value


def _dtype(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    key = value.strip().lower()
    if key.startswith("torch."):
        key = key[6:]
    return _DTYPE_ALIASES.get(key, key)
