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

Modules: :mod:`.pyindex` (the walk), :mod:`.pyresolve` with :mod:`.pyvalues`, :mod:`.pyargs`
and :mod:`.qualnames` (static evaluation), :mod:`.pysections` (sections from resolved values),
:mod:`.pysyntax` (parse-time diagnostics), :mod:`._cstpos` (positions), this module (recognition,
call sites, grouping into setups).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.extract.launch_bind import CommandLine

import dataclasses
import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from lintlora.extract import ExtractError
from lintlora.extract.pysections import (
    _DL_FIELDS, _ENV_KEYS, _QUANT_CONFIGS, _REF_MODEL_POSITIONAL, _SWEEP_LIMIT,
    _TRAINER_POSITIONAL, _TRAINERS, _TRAINING_ARGS, SectionBuilders, _is_dotted, _normalise,
)
from lintlora.extract.pysyntax import LIMIT_CODE, preflight, recursion_room, syntax_error
from lintlora.extract.qualnames import EMPTY_CACHE_CALLS
from lintlora.training_setup import (
    CallSite, Evidence, Lora, ModelLoad, Origin, Quantization, Setting, Span, TrainingSetup,
)

__all__ = ["extract_python", "extract_python_source"]

PARSE_MODULE: Callable[[str], Any] | None = None
"""What parses a source instead of ``libcst.parse_module`` (same result, same errors), or
``None``: the editor server's incremental parse sets it for its lints
(:func:`lintlora.extract.cst_chunks.parsing_with`)."""

_TOO_DEEP = ("too deeply nested to {}: past the recursion depth lintlora allows LibCST; this "
             "is a limit of lintlora, not a syntax error, and nothing in the file was checked")
_INTERESTING_ROOTS = frozenset({"transformers", "peft", "trl", "torch", "unsloth", "accelerate",
                                "bitsandbytes", "deepspeed"})
_INTERESTING_METHODS = frozenset({
    "gradient_checkpointing_enable", "gradient_checkpointing_disable",
    "activation_checkpointing_enable", "activation_checkpointing_disable",
    "print_trainable_parameters", "get_nb_trainable_parameters", "enable_input_require_grads",
    "from_pretrained", "empty_cache", "backward",
})
_CAST_METHODS = {"half": "float16", "float": "float32", "bfloat16": "bfloat16"}
"""``nn.Module`` methods that cast every parameter, and the dtype each casts to."""

_GET_PEFT_MODEL_POSITIONAL = ("model", "peft_config", "adapter_name", "mixed",
                              "autocast_adapter_dtype")
"""``peft.get_peft_model``'s parameters in positional order (peft src/peft/mapping_func.py,
0.20.1.dev0, lines 105-111)."""

_PEFT_FROM_PRETRAINED_POSITIONAL = ("model", "model_id", "adapter_name", "is_trainable", "config",
                                    "autocast_adapter_dtype")
"""``PeftModel.from_pretrained``'s parameters in positional order (peft src/peft/peft_model.py,
0.20.1.dev0, lines 416-422)."""

_AUTO_PEFT_POSITIONAL = ("pretrained_model_name_or_path", "adapter_name", "is_trainable")
"""``AutoPeftModel*.from_pretrained``'s parameters in positional order (peft src/peft/auto.py,
0.20.1.dev0, lines 89-94; ``autocast_adapter_dtype`` goes through ``**kwargs``)."""

_PEFT_LOAD_SOURCE = ("peft src/peft/peft_model.py (0.20.1.dev0), PeftModel.from_pretrained: "
                     "is_trainable=False, autocast_adapter_dtype=True")

_PARAMETER_WALK = re.compile(r"\.(named_)?(parameters|modules)\(")
"""A loop over a module's parameters or submodules."""

_RECEIVER_TAIL = 200
"""Characters of a receiver's (or loop iterable's) source text the patterns below look at: its
end, where the method chain is; a bound on the work for a hostile, very long expression."""

_EMBEDDING_RECEIVER = re.compile(r"get_input_embeddings\(\s*\)$|\b(embed_tokens|wte|word_embeddings)$")
"""The receiver of a ``register_forward_hook`` that makes the embedding output require grad:
``model.get_input_embeddings()`` or the embedding module itself (``model.model.embed_tokens``)."""

_REPORTS_COUNT = re.compile(
    r"(?i)^(?!(?:set|make|mark|freeze|unfreeze|enable|disable)_)\w*(?:trainable\w*param|param\w*trainable)")
"""Names of functions that, by their name, print or count the trainable parameters
(``print_trainable_parameters``, ``print_trainable_params``,
``print_number_of_trainable_model_parameters``, ``count_trainable_parameters``); not the
helpers that change which parameters train (``mark_..._trainable``, ``set_trainable_params``)."""


def _same_guards(a: tuple, b: tuple) -> bool:
    """Whether two statements sit under the same ``if`` branches (same tests, same sides)."""
    return len(a) == len(b) and all(x.kind == y.kind and x.test is y.test and x.polarity == y.polarity
                                    for x, y in zip(a, b))


def _numbered(calls: tuple, more: list) -> tuple:
    """``calls`` with ``more`` merged in by source position (each before the first call that
    starts on a later line; ``calls`` keep their relative order), renumbered
    (``CallSite.order``)."""
    import dataclasses

    if not more:
        return tuple(calls)
    merged = list(calls)
    for extra in sorted(more, key=lambda c: (c.span.line, c.span.column) if c.span else (1 << 30, 0)):
        line = extra.span.line if extra.span is not None else 1 << 30
        at = next((i for i, c in enumerate(merged) if c.span is not None and c.span.line > line),
                  len(merged))
        merged.insert(at, extra)
    return tuple(dataclasses.replace(c, order=i) for i, c in enumerate(merged))


def _is_trl_trainer(canon: str) -> bool:
    """A TRL trainer class by its canonical name (``trl.SFTTrainer``, ``trl.PPOTrainer``,
    ``trl.experimental.orpo.ORPOTrainer``...): every one takes ``peft_config=`` and wraps the
    model with ``get_peft_model`` itself (trl/trainer/*_trainer.py, v1.9.0)."""
    return canon.startswith("trl.") and canon.endswith("Trainer")


# ---- entry points ----------------------------------------------------------------------------
def extract_python(path: str, source: str, *, command_line: CommandLine | None = None) -> list[TrainingSetup]:
    """Extract the training setups of one Python script.

    ``command_line``: the arguments a launch hands to the script
    (:class:`lintlora.extract.launch_bind.CommandLine`), bound to its options as its parser
    would; ``None``: no launch (values are the file's, defaults "set at launch").

    ``path`` is used for spans (and to find JSON/YAML files the script names by literal path,
    relative to its folder); ``source`` is the decoded text. Returns ``[]`` for a file with
    nothing recognisable; the list is a :class:`lintlora.extract.Setups` whose ``notes`` say
    what was left out of the analysis under a limit of :mod:`lintlora.extract.limits` (the
    engine reports each as an ``LL998`` notice).

    Raises:
        ExtractError: LibCST cannot parse the file (with line and column, and what the line is
            when it is IPython syntax: :func:`lintlora.extract.notebook.ipython_hint`), or it is
            nested too deeply to parse or analyse (code ``LL000``; ``LL998`` when the code is
            valid and only deep for LibCST); or it is too large to analyse
            (:func:`lintlora.extract.limits.python_too_large`, code ``LL998``). Input never
            causes another exception; one would be a lintlora bug, which the engine reports as
            ``LL999``.
    """
    try:
        return extract_python_source(path, source, command_line=command_line)
    except ExtractError as exc:
        # `!pip install x` or `%load_ext` in a .py file: say it is notebook syntax
        if exc.line is None or exc.code != "LL000":
            raise
        from lintlora.extract.notebook import ipython_hint

        lines = source.splitlines()
        hint = ipython_hint(lines[exc.line - 1], notebook=False) if 1 <= exc.line <= len(lines) else None
        if hint is None:
            raise
        raise ExtractError(f"{exc.message} ({hint})", exc.line, exc.column, exc.code, exc.cell) from None


def extract_python_source(path: str, source: str, *,
                          line_map: Callable[[int], tuple[int | None, int]] | None = None,
                          kind: str = "python",
                          command_line: CommandLine | None = None) -> list[TrainingSetup]:
    """:func:`extract_python` with a line mapping (used for notebooks).

    ``line_map(line)`` returns ``(cell, line_in_cell)`` for a 1-based line of ``source``;
    ``command_line`` as for :func:`extract_python`.
    """
    from lintlora.extract.limits import python_too_large
    from lintlora.prefilter import may_hold_setup, skips_unparsed

    too_large = python_too_large(source, "notebook's code" if kind == "notebook" else "file")
    if too_large is not None:
        if not may_hold_setup(source):
            return []  # it cannot hold a setup (see lintlora.prefilter): nothing to refuse
        raise ExtractError(too_large, None, None, code="LL998")
    if skips_unparsed(source):
        # names none of _INTERESTING_ROOTS / _INTERESTING_METHODS (the test in run() below
        # would return [] after a LibCST parse) and CPython parses it: nothing to report
        return []
    from lintlora.extract._cst import import_libcst

    cst = import_libcst()  # the first import of LibCST in a lint: see lintlora.extract._cst
    if source.startswith("\ufeff"):
        source = source[1:]
    preflight(source, line_map)  # CPython parses it: from here on, failures are lintlora's
    try:
        module = (PARSE_MODULE or cst.parse_module)(source)
    except cst.ParserSyntaxError as exc:
        raise syntax_error(exc, source, line_map) from None
    except RecursionError:
        raise ExtractError(_TOO_DEEP.format("parse"), None, None, code=LIMIT_CODE) from None
    except Exception as exc:  # LibCST raises a few other types on odd input
        raise ExtractError(f"cannot parse the file: {exc.__class__.__name__}: {exc}"[:300],
                           None, None) from None
    try:
        with recursion_room():
            return _Extractor(path, source, module, line_map, kind, command_line).run()
    except RecursionError:
        raise ExtractError(_TOO_DEEP.format("analyse"), None, None, code=LIMIT_CODE) from None
    # Any other exception would be a bug in lintlora, not a property of the input: it is left
    # to propagate so the engine reports it as an LL999 internal error asking for a report,
    # rather than disguised as a syntax error. The fuzz tests (tests/test_extract_robustness.py)
    # keep that path empty.


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
    env_reads: list = field(default_factory=list)   # (node, key, how): rank/world-size reads
    training_signals: int = 0
    train_orders: list = field(default_factory=list)  # statement order of each trainer.train()
    unsloth: bool = False
    canon: dict = field(default_factory=dict)       # id(record) -> canonical name


class _Extractor(SectionBuilders):
    def __init__(self, path: str, source: str, module: Any, line_map: Callable | None,
                 kind: str, command_line: CommandLine | None = None) -> None:
        self.command_line = command_line
        self.path = path
        self.source = source
        self.module = module
        self.line_map = line_map
        self.kind = kind
        self.notes: list[str] = []  # what a limit left out (lintlora.extract.limits)
        self.positions: Any = None

    # -- spans ----------------------------------------------------------------------------------
    def span(self, node: Any) -> Span | None:
        if node is None:
            return None
        if type(node) is Span:  # a value bound from a launch or a file it names
            return node
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
        if self.command_line is not None:
            from lintlora.extract.pybind import LaunchBinder

            self.r.binder = LaunchBinder(self.r, self.command_line)
        found = self.classify()
        setups = self.assemble(found)
        binder = self.r.binder
        read = tuple(dict.fromkeys((*self.r.files_read, *(binder.inputs if binder is not None else ()))))
        if read:  # the JSON/YAML files the script (or its launch) names and the resolver looked at
            setups[:] = [dataclasses.replace(s, inputs=tuple(dict.fromkeys(s.inputs + read)))
                         for s in setups]
        return setups

    # -- recognition ------------------------------------------------------------------------------
    def classify(self) -> _Found:
        from lintlora.extract.pyresolve import Obj, canonical

        import libcst as cst

        r = self.r
        f = _Found()
        unseen_trainers: list = []
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
                if method is None and _is_trl_trainer(canon) and self.takes_peft_config(rec, env):
                    # a TRL trainer given peft_config= wraps the model itself (get_peft_model
                    # inside its __init__) and never prints the trainable-parameter count
                    f.calls.append((rec, "trainer_peft_config", canon))
                if self.add_construct(f, rec, canon):
                    continue
                if method is None and self.takes_training_arguments(rec, env):
                    unseen_trainers.append(rec)
            if method is not None:
                self.add_method_call(f, rec, method, canon)
            elif type(func) is cst.Name and func.value == "sum" and rec.node.args:
                # sum(p.numel() for p in model.parameters() if p.requires_grad): a hand-written
                # trainable-parameter count
                v = r.ev(func, env, rec.order)
                arg = self.text(rec.node.args[0].value)
                if isinstance(v, Obj) and v.kind == "builtin" and "numel" in arg \
                        and "requires_grad" in arg:
                    f.calls.append((rec, "trainable_parameter_count",
                                    "sum(p.numel() ... if p.requires_grad)"))
            elif type(func) is cst.Name and _REPORTS_COUNT.search(func.value):
                # the helper peft's notebooks define and scripts copy (a local ``def``, or one
                # imported from the project's own module: ``from utils import
                # print_trainable_parameters``): it prints the same count
                v = r.ev(func, env, rec.order)
                if not (isinstance(v, Obj) and v.kind == "builtin"):
                    where = "local helper" if isinstance(v, Obj) and v.kind == "scope" else "project helper"
                    kind = (func.value if func.value in ("print_trainable_parameters",
                                                         "get_nb_trainable_parameters")
                            else "trainable_parameter_count")
                    f.calls.append((rec, kind, f"{func.value} ({where})"))
        if not f.trainers and unseen_trainers:
            # a trainer class lintlora cannot see (``from component.trainer import
            # LoRATrainer``: the author's own module): taken as a transformers Trainer
            # subclass, so its model and TrainingArguments form the setup as for any trainer
            for rec in unseen_trainers:
                f.canon[id(rec)] = "transformers.Trainer"
                f.trainers.append(rec)
                f.training_signals += 1
        from lintlora.extract.pyrank import rank_evidence

        for node, key, scope, order in self.index.env_reads:
            f.env_reads.append((node, key, f"os.environ[{key!r}]"))
        f.env_reads.sort(key=lambda read: self.positions.get(read[0]) or (0, 0, 0, 0))
        f.evidence.extend(rank_evidence(self, f.env_reads, f.canon, self.index.calls))
        return f

    def takes_peft_config(self, rec: Any, env: Any) -> bool:
        """Whether a trainer call is given ``peft_config=`` with a value that may be an adapter
        config (anything but a literal ``None``; ``peft_config=get_peft_config(model_args)``,
        which returns ``None`` unless ``--use_peft`` is passed, counts)."""
        from lintlora.extract.pyresolve import Const

        for a in rec.node.args:
            if a.keyword is not None and a.keyword.value == "peft_config":
                v = self.r.ev(a.value, env, rec.order)
                return not (isinstance(v, Const) and v.value is None)
        return False

    def takes_training_arguments(self, rec: Any, env: Any) -> bool:
        """Whether a call of a class lintlora does not know is a trainer by what it is given:
        a ``model`` (keyword or first positional) and, as ``args=``, an instance of a
        training-arguments class (``TrainingArguments``, ``SFTConfig``...: constructed, or made
        by ``HfArgumentParser``). Used only when the file has no recognised trainer."""
        from lintlora.extract.pyresolve import Obj, canonical

        node = rec.node
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        has_model = "model" in keywords or bool(node.args and node.args[0].keyword is None
                                                and node.args[0].star == "")
        if not has_model or "args" not in keywords:
            return False
        v = self.r.ev(keywords["args"], env, rec.order)
        if not isinstance(v, Obj) or v.kind not in ("instance", "call"):
            return False
        cls = v.data
        name = cls.data if isinstance(cls, Obj) and cls.kind == "qual" else None
        return name is not None and canonical(name) in _TRAINING_ARGS

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
            if canon == "model_load" and self._peft_load(rec):
                # AutoPeftModelForCausalLM.from_pretrained: the base and its adapter in one call
                f.calls.append((rec, "peft_from_pretrained", "peft.AutoPeftModel.from_pretrained"))
            return True
        if canon == "peft.PeftModel.from_pretrained":
            f.calls.append((rec, "peft_from_pretrained", canon))
            return True
        if canon == "peft.cast_mixed_precision_params":
            # casts the trainable parameters to float32 and the rest to the given dtype
            f.calls.append((rec, "cast_trainable_fp32", canon))
            return True
        if canon == "torch.amp.GradScaler":
            f.calls.append((rec, "grad_scaler", canon))
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
        if canon in EMPTY_CACHE_CALLS:  # torch.cuda / xpu / mps / npu, as the script names it
            f.calls.append((rec, "empty_cache", canon))
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
                    f.env_reads.append((rec.node, key.value,  # type: ignore[union-attr]
                                        f"{canon}({key.value!r})"))  # type: ignore[union-attr]
            return True
        return False

    def _casts_parameters_up(self, rec: Any) -> bool:
        """Whether a ``.float()`` / ``.to(torch.float32)`` call casts the parameters a loop walks
        (``for p in model.parameters()``, ``named_parameters()``, ``modules()``)."""
        import libcst as cst

        from lintlora.extract.pyresolve import DType

        frame = rec.loop
        if frame is None or type(frame.node) is not cst.For:
            return False
        if not _PARAMETER_WALK.search(self.text(frame.node.iter)[-_RECEIVER_TAIL:]):
            return False
        if rec.method == "float":
            return not rec.node.args
        for a in rec.node.args:
            if a.keyword is None or a.keyword.value == "dtype":
                v = self.r.ev(a.value, self.r.env_for(rec), rec.order)
                return isinstance(getattr(v, "value", None), DType) and v.value == "float32"
        return False

    def _peft_load(self, rec: Any) -> bool:
        """Whether a ``model_load`` call is peft's ``AutoPeftModel*.from_pretrained``."""
        from lintlora.extract.pyresolve import Obj

        v = self.r.ev(rec.node.func, self.r.env_for(rec), rec.order)
        return isinstance(v, Obj) and v.kind == "qual" and isinstance(v.data, str) \
            and v.data.startswith("peft.")

    def add_method_call(self, f: _Found, rec: Any, method: str, canon: str | None) -> None:
        from lintlora.extract.pyresolve import Obj, DType, _MODEL_FLOW

        if method in ("gradient_checkpointing_enable", "gradient_checkpointing_disable",
                      "print_trainable_parameters", "get_nb_trainable_parameters",
                      "enable_input_require_grads"):
            f.calls.append((rec, method, None))
            return
        if _REPORTS_COUNT.search(method):
            # a method of the project's own that prints the count (``utils.print_trainable_params
            # (model)``, ``self.log_trainable_parameters()``)
            f.calls.append((rec, "trainable_parameter_count", None))
            return
        if method == "resize_token_embeddings":
            f.calls.append((rec, "resize_token_embeddings", None))
            return
        if method == "merge_and_unload":
            # peft's PeftModel/LoraModel.merge_and_unload(): the adapters are folded into the
            # base and removed (LL016: before train() on a quantized base nothing trains)
            f.calls.append((rec, "merge_and_unload", None))
            return
        if method == "add_adapter" and rec.node.args:
            # transformers' PeftAdapterMixin.add_adapter(adapter_config): adapters on the model
            f.calls.append((rec, "add_adapter", None))
            return
        if method == "register_forward_hook" and _EMBEDDING_RECEIVER.search(
                self.text(rec.node.func.value)[-_RECEIVER_TAIL:]):
            # model.get_input_embeddings().register_forward_hook(make_inputs_require_grad): the
            # hook enable_input_require_grads() installs, written out (peft's docs and scripts)
            f.calls.append((rec, "enable_input_require_grads", None))
            return
        if method in ("add_tokens", "add_special_tokens"):
            f.calls.append((rec, "add_tokens", None))
            return
        if method == "numel" and any(
                g.kind == "if" and g.polarity and "requires_grad" in self.text(g.test)
                for g in rec.guards):
            # `if p.requires_grad: trainable += p.numel()`: a hand-written trainable count
            f.calls.append((rec, "trainable_parameter_count", None))
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
        if method in ("float", "to") and self._casts_parameters_up(rec):
            # `for p in model.parameters(): if p.requires_grad: p.data = p.data.float()`: the
            # trainable parameters cast to float32 (peft's troubleshooting page)
            f.calls.append((rec, "cast_trainable_fp32", None))
            return
        if method in ("cuda", "to", "train") or method in _CAST_METHODS:
            recv = self.r.ev(rec.node.func.value, self.r.env_for(rec), rec.order)
            if not isinstance(recv, Obj) or recv.kind != "call":
                return
            if method == "train":
                if recv.data in _TRAINERS or recv.data in _MODEL_FLOW:
                    f.training_signals += 1
                if recv.data in _TRAINERS:
                    # trainer.train(): where training starts, in statement order (a
                    # merge_and_unload() call records whether it comes before: LL016)
                    f.train_orders.append(rec.order)
                return
            if recv.data not in _MODEL_FLOW and recv.data != "peft.PeftModel.from_pretrained":
                return
            if method in _CAST_METHODS:
                if not rec.node.args:
                    f.calls.append((rec, "model_cast", None))
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
                    if any(a.keyword is not None and a.keyword.value == "dtype"
                           for a in rec.node.args):
                        f.calls.append((rec, "model_cast", None))
                    return  # .to(dtype=...) only: a cast, not a move
                v = self.r.ev(target, self.r.env_for(rec), rec.order)
                if isinstance(getattr(v, "value", None), DType):
                    f.calls.append((rec, "model_cast", None))  # .to(torch.float16)
                    return
            f.calls.append((rec, "model_move", None))

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
            guard = None
            if state is False and decider is not None:
                # runs only if the launch passes another value (CallSite.guard)
                guard = Setting(decider.value, decider.origin, self.span(decider.node), None,
                                decider.source, self.text(decider.node) if decider.node is not None
                                else None)
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
                args.update(self.prepared_base(rec, raw.get("model")))
            elif kind == "gradient_checkpointing_enable":
                raw, complete, unresolved = r.call_kwargs(rec.node, env, rec.order,
                                                          ("gradient_checkpointing_kwargs",))
                if "gradient_checkpointing_kwargs" in raw:
                    a = raw["gradient_checkpointing_kwargs"]
                    args["gradient_checkpointing_kwargs"] = self.setting(a[0], a[1], a[2])
            elif kind == "empty_cache":
                pass
            elif kind == "merge_and_unload":
                # whether a trainer's .train() runs after it (statement order); unknown
                # without a train() the file calls on a trainer it recognises
                if found.train_orders:
                    args["before_train"] = Setting.literal(
                        any(o > rec.order for o in found.train_orders), self.span(rec.node))
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
            elif kind == "get_peft_model" and qual == "peft.get_peft_model":
                raw, _c, _u = r.call_kwargs(rec.node, env, rec.order, _GET_PEFT_MODEL_POSITIONAL)
                if "autocast_adapter_dtype" in raw:
                    a = raw["autocast_adapter_dtype"]
                    args["autocast_adapter_dtype"] = self.setting(a[0], a[1], a[2])
                bound = self.index.assigned_name(rec.node)
                if bound is not None:  # `model = get_peft_model(...)`: LL004's fix prints through it
                    args["assigned_to"] = Setting.literal(bound)
            elif kind == "peft_from_pretrained":
                positional = (_AUTO_PEFT_POSITIONAL if qual.startswith("peft.AutoPeftModel")
                              else _PEFT_FROM_PRETRAINED_POSITIONAL)
                raw, complete, _u = r.call_kwargs(rec.node, env, rec.order, positional)
                for name in ("is_trainable", "autocast_adapter_dtype"):
                    if name in raw:
                        a = raw[name]
                        args[name] = self.setting(a[0], a[1], a[2])
                    elif complete:
                        args[name] = Setting.library_default(name == "autocast_adapter_dtype",
                                                             _PEFT_LOAD_SOURCE)
            elif kind == "grad_scaler":
                raw, _c, _u = r.call_kwargs(rec.node, env, rec.order,
                                            ("device", "init_scale", "growth_factor",
                                             "backoff_factor", "growth_interval", "enabled"))
                if "enabled" in raw:
                    a = raw["enabled"]
                    args["enabled"] = self.setting(a[0], a[1], a[2])
            elif kind == "model_cast":
                method = func.attr.value if type(func) is cst.Attribute else ""
                if method in _CAST_METHODS:
                    args["dtype"] = Setting.literal(_CAST_METHODS[method], self.span(rec.node))
                else:
                    raw, _c, _u = r.call_kwargs(rec.node, env, rec.order, ("dtype",))
                    if "dtype" in raw:
                        a = raw["dtype"]
                        args["dtype"] = self.setting(a[0], a[1], a[2], "dtype")
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
            if kind == "trainer_peft_config":
                bound = self.index.assigned_name(rec.node)
                if bound is not None:  # `trainer = SFTTrainer(..., peft_config=...)`: LL004's fix
                    args = {**args, "assigned_to": Setting.literal(bound)}
            in_loop, per_step = self.loop_context(rec)
            out.append((rec, CallSite(kind, qual or "", self.span(rec.node), in_loop, per_step,
                                      args, receiver, 0, periodic=self.periodic(rec), guard=guard)))
        # execution order: statement order, then inner calls (which end first) before outer ones
        def key(item: tuple) -> tuple:
            rec, call = item
            r_ = self.positions.get(rec.node) or (0, 0, 0, 0)
            return (rec.order, r_[2], r_[3])

        out.sort(key=key)
        import dataclasses

        return tuple(dataclasses.replace(c, order=i) for i, (_rec, c) in enumerate(out))

    def prepared_base(self, rec: Any, model_arg: Any) -> dict[str, Setting]:
        """What ``prepare_model_for_kbit_training`` is given, for :func:`lintlora.facts.
        kbit_prep_checkpoints`: the model it prepares followed back to its ``from_pretrained``,
        as ``base_name`` (the hub id), ``base_bits`` (4/8, 0 for a load without quantization)
        and ``base_method``. When the argument cannot be followed (a branch the resolver rules
        out by a default: ``if quantize: model = ...(quantization_config=...); model =
        prepare_model_for_kbit_training(model)``), the last load before the call on the same
        branch of the same function; failing that, an unknown ``base_bits`` for a call under a
        condition (its base may be quantized) and ``{}`` otherwise."""
        from lintlora.extract.pyresolve import Obj

        load = None
        if model_arg is not None:
            load, _loras = self.follow_model(model_arg[0])
        if load is None:
            same = [ld for ld in self.found.loads if ld.scope is rec.scope and ld.order < rec.order
                    and _same_guards(ld.guards, rec.guards)]
            if same:
                last = max(same, key=lambda ld: ld.order)
                v = self.r.ev(last.node, self.r.env_for(last), last.order)
                v = v.items[0] if hasattr(v, "items") and isinstance(v.items, list) and v.items else v
                load = v if isinstance(v, Obj) and v.kind == "call" else None
        if load is None:
            if any(g.kind != "loop" for g in rec.guards):
                return {"base_bits": Setting(None, Origin.UNKNOWN, self.span(rec.node), None,
                                             "the prepared model is loaded on a branch lintlora does not follow")}
            return {}
        model, quant = self.model_section(load)
        out = {"base_name": model.name_or_path}
        if quant is None:
            out["base_bits"] = Setting(0, Origin.LITERAL, model.span)
        else:
            out["base_bits"] = quant.bits
            out["base_method"] = quant.method
        return out

    def periodic(self, rec: Any, depth: int = 0) -> bool:
        """Whether an ``if`` inside the call's innermost loop (or per-step hook) runs it only on
        some steps (:mod:`lintlora.extract.pyguards`); for a call in a local helper that is
        not itself so guarded, whether every call of the helper in a loop or hook is."""
        import libcst as cst

        from lintlora.extract.pyguards import periodic_test
        from lintlora.extract.pyresolve import Const

        r = self.r
        env = r.env_for(rec)
        targets: set[str] = set()
        frame = rec.loop
        while frame is not None:
            node = frame.node
            if type(node) is cst.For:
                stack = [node.target]
                while stack:
                    t = stack.pop()
                    if type(t) is cst.Name:
                        targets.add(t.value)
                    elif type(t) in (cst.Tuple, cst.List):
                        stack.extend(el.value for el in t.elements)
            frame = frame.parent

        def divisor(node: Any) -> object:
            v = r.ev(node, env, rec.order)
            return v.value if isinstance(v, Const) else None

        for g in reversed(rec.guards):
            if g.kind == "loop":
                break
            if g.kind == "if" and periodic_test(g.test, g.polarity, divisor, frozenset(targets)):
                return True
        if depth < 2 and rec.scope.kind == "function" and rec.loop is None and rec.hook is None:
            sites = [site for site in self.r.call_sites(rec.scope)[:16]
                     if site.loop is not None or site.hook is not None]
            return bool(sites) and all(self.periodic(site, depth + 1) for site in sites)
        return False

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
        from lintlora.extract.pyidioms16 import file_calls

        calls = _numbered(calls, file_calls(self))  # issue 16: pad token, compute_loss overrides
        from lintlora.extract.pylaunch import docstring_launch, module_docstring

        evidence = tuple(found.evidence) + tuple(
            docstring_launch(module_docstring(self.module), self.source, self.path))
        dataloaders = tuple(self.dataloader_spec(rec) for rec in found.dataloaders)
        is_training = found.training_signals > 0
        from lintlora.extract.limits import MAX_SETUPS, limit, setups_left_out

        most = limit(MAX_SETUPS)
        setups: list[TrainingSetup] = []
        for rec in found.trainers:
            if len(setups) >= most:
                self.notes.append(setups_left_out(len(found.trainers)))
                break
            # the setups of one trainer call differ from another's by their anchor (the
            # call's span), so duplicates are looked for among one call's sweep only
            # (comparing every pair of a file's setups was quadratic: issue 12)
            own: list[TrainingSetup] = []
            for frame in self.sweep_frames(rec)[:most - len(setups)]:
                s = self.trainer_setup(rec, frame, found, calls, evidence, dataloaders)
                if s not in own:
                    own.append(s)
            setups.extend(own)
        if not setups:
            s = self.file_setup(found, calls, evidence, dataloaders, is_training)
            if s is not None:
                setups.append(s)
        from lintlora.extract import Setups

        return Setups(setups, self.notes)

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
        if training is not None and trainer_canon:
            # the trainer class, for the estimator (DPO/ORPO/CPO run chosen and rejected together)
            from dataclasses import replace as _replace

            more = {"trainer_class": Setting(trainer_canon, Origin.LITERAL, self.span(rec.node.func))}
            rv = args.get("ref_model")
            if rv is not None and not (isinstance(rv[0], Const) and rv[0].value is None):
                # a reference model passed to the trainer (DPOTrainer(model, ref_model, ...)):
                # trl keeps it as the reference, a second model on the GPU
                more["ref_model"] = Setting(True, Origin.LITERAL, self.span(rv[2] or rv[1]), self.span(rv[1]) if rv[1] is not None else None,
                                            "ref_model passed to the trainer", None)
            training = _replace(training, extra={**training.extra, **more})
        anchor = self.span(rec.node)
        # a trainer's own peft_config= wrap belongs to its setup only (two trainers, one file)
        calls = tuple(c for c in calls if c.kind != "trainer_peft_config" or c.span == anchor)
        from lintlora.extract.pyidioms16 import trainer_calls

        calls = _numbered(calls, trainer_calls(self, rec, trainer_canon, args, tv))  # issue 16
        return TrainingSetup(
            path=self.path, kind=self.kind,
            framework=self.framework(found, trainer_canon, training_canon),
            anchor=anchor, model=model, quantization=quant, lora=lora,
            training=training, dataloaders=dataloaders, calls=calls,
            launch=evidence + tuple(tevidence), is_training=self.trainer_trains(rec))

    def trainer_trains(self, rec: Any) -> bool:
        """False only for a trainer the file evaluates or predicts with and never trains:
        ``Trainer(...).evaluate()`` with no ``.train()`` on it (nor on a receiver lintlora
        cannot follow, which may be this trainer handed to a helper). A trainer the file never
        calls a method on stays a training setup (it may be run elsewhere)."""
        uses, unfollowed_train = self.trainer_uses()
        methods = uses.get(id(rec.node), ())
        if "train" in methods or unfollowed_train:
            return True
        return not methods

    def trainer_uses(self) -> tuple[dict[int, set[str]], bool]:
        """For :meth:`trainer_trains`, once per file: which of ``train``/``evaluate``/
        ``predict`` are called on each trainer (by the ``id`` of its call), and whether some
        ``.train()`` has a receiver lintlora cannot follow."""
        from lintlora.extract.pyresolve import Obj

        cached = self.__dict__.get("_trainer_uses")
        if cached is not None:
            return cached
        r = self.r
        uses: dict[int, set[str]] = {}
        unfollowed = False
        for call in self.index.calls_with_method("train", "evaluate", "predict"):
            recv = r.ev(call.node.func.value, r.env_for(call), call.order)
            if isinstance(recv, Obj) and recv.kind == "call":
                uses.setdefault(id(recv.node), set()).add(call.method or "")
            elif call.method == "train" and not isinstance(recv, Obj):
                unfollowed = True
        self.__dict__["_trainer_uses"] = (uses, unfollowed)
        return uses, unfollowed

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
            elif v.data == "peft.PeftModel.from_pretrained":
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
