"""Trainer plumbing facts for the issue-16 API rules (LL019-LL023), as :class:`CallSite` s.

Read from the module index the Python extractor already built (its calls, scopes, bindings and
mutations) and from the trainer call's resolved arguments; rules read the CallSites, never the
syntax tree. Three kinds are file-level (:func:`file_calls`), one is per trainer call
(:func:`trainer_calls`):

``"pad_token_is_eos"``
    ``tok.pad_token = tok.eos_token`` or ``tok.pad_token_id = tok.eos_token_id`` (any receiver
    whose name mentions ``tok``/``processor``), kept only when no later statement gives the
    pad token another value (``tok.pad_token = "<pad>"``, ``tok.pad_token = tok.unk_token``,
    ``add_special_tokens({"pad_token": ...})``). ``qualified_name`` is the statement's text
    (at most 120 characters), ``receiver`` the tokenizer's name, ``span`` the statement.

``"compute_loss_override"``
    A ``compute_loss`` method of a local class whose library base is a transformers / TRL
    trainer. ``qualified_name`` ``"<Class>.compute_loss"``, ``receiver`` the class name, span
    the ``def``. ``args``: ``num_items_in_batch`` (bool: a parameter of that name),
    ``var_kwargs`` (bool: a ``**kwargs`` parameter), ``reads_num_items`` (bool: the body names
    ``num_items_in_batch`` or the ``**kwargs`` parameter, i.e. uses or forwards the count),
    ``base`` (the library trainer class), ``instantiated`` (bool: the file calls the class or a
    local subclass of it), and ``model_accepts_loss_kwargs`` when the file sets it (a class
    attribute or ``self.model_accepts_loss_kwargs = ...``).

``"trainer_inputs"``
    What one trainer call is given besides the model and the arguments; ``qualified_name``
    the trainer class, span the trainer call. ``args`` (each key only when known to apply):

    - ``data_collator``: a Setting whose value is the collator's canonical class
      (``"transformers.DataCollatorForLanguageModeling"``, ``"trl.DataCollatorForCompletionOnlyLM"``),
      ``"local:<name>"`` for a function or class of the file, unknown when not followed;
      ``collator_mlm`` (bool, the LM collator's ``mlm``; transformers' default ``True``,
      ``data/data_collator.py``) and ``collator_columns`` (a tuple of the example keys a
      local collator reads: ``f["text"]`` / ``f.get("text")`` for ``f`` in its features
      argument, ``features[0]["text"]``), span the collator's ``def``;
    - ``model_class``: the class whose ``from_pretrained`` loads the model
      (``"AutoModelForCausalLM"``, ``"LlamaForSequenceClassification"``, ``"FastLanguageModel"``);
    - ``compute_metrics``, ``preprocess_logits_for_metrics``, ``eval_dataset``: ``True``
      when passed with a value other than a literal ``None`` (span: the keyword);
      ``eval_samples``: the eval set's size when written ``ds.select(range(N))`` /
      ``ds.take(N)`` (directly or through one assignment);
    - ``max_seq_length_keyword``: the value of a ``max_seq_length=`` written in the trainer
      call or in the ``SFTConfig(...)`` it is given, with ``source`` ``"SFTTrainer"`` or
      ``"SFTConfig"`` (TRL renamed it ``max_length``);
    - ``intended_length``: the longest sequence length above 1,024 tokens the file names
      elsewhere (a tokenizer's ``max_length=``/``model_max_length=``, a ``max_seq_length=``
      given to another call, a variable named like ``max_seq_len``/``cutoff_len``), with
      ``source`` saying which; absent when there is none.

Every walk is bounded (:data:`_MAX_NODES` nodes per function body, :data:`_MAX_ITEMS` records).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from lintlora.training_setup import CallSite, Origin, Setting

__all__ = ["file_calls", "trainer_calls", "LONG_LENGTH"]

_MAX_NODES = 20_000
_MAX_ITEMS = 256
LONG_LENGTH = 1024
"""TRL's ``SFTConfig.max_length`` default (trl ``trl/trainer/sft_config.py`` v1.9.0 line 205;
``max_seq_length`` default 1024 in v0.15.0): a length the file names above it is "longer"."""

_LENGTH_NAME = re.compile(r"(?i)^(max_?seq(uence)?_?len(gth)?|seq(uence)?_?len(gth)?|cutoff_?len(gth)?|"
                          r"context_?len(gth)?|max_?ctx(_?len)?|block_?size)$")
_LENGTH_KEYWORDS = ("max_seq_length", "seq_length", "model_max_length", "max_length", "cutoff_len")
_NOT_TRAINING_LENGTH = frozenset({"generate", "pipeline", "TextGenerationPipeline", "SamplingParams",
                                  "GenerationConfig"})
_SFT_NAMES = ("trl.SFTTrainer", "trl.SFTConfig")
_TOKENIZER_HINT = re.compile(r"(?i)tok|processor")


def _walk(node: Any, limit: int = _MAX_NODES) -> Iterator[Any]:
    """Every node under ``node`` (itself included), breadth first, at most ``limit``."""
    stack = [node]
    seen = 0
    while stack and seen < limit:
        n = stack.pop()
        seen += 1
        yield n
        stack.extend(reversed(n.children))


def _string(node: Any) -> str | None:
    if type(node) in (cst.SimpleString, cst.ConcatenatedString):
        try:
            v = node.evaluated_value
        except (ValueError, SyntaxError, UnicodeError):  # a prefix literal_eval refuses
            return None
        return v if isinstance(v, str) else None
    return None


def _short(text: str, most: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 3] + "..."


# ---- file level ---------------------------------------------------------------------------------
def file_calls(ex: Any) -> list[CallSite]:
    """The file-level kinds (module docstring) for extractor ``ex``
    (:class:`lintlora.extract.python._Extractor`), in source order."""
    out: list[CallSite] = []
    out.extend(_pad_token_calls(ex))
    out.extend(_compute_loss_calls(ex))
    return out


def _pad_token_calls(ex: Any) -> list[CallSite]:
    index = ex.index
    writes = []
    for key in ("pad_token", "pad_token_id"):
        for m in index.mutations_of(key=key)[:_MAX_ITEMS]:
            if m.kind != "setattr":
                continue
            root = ex.text(m.root)
            if not _TOKENIZER_HINT.search(root.rsplit(".", 1)[-1]):
                continue
            value = ex.text(m.value) if m.value is not None else ""
            eos = re.search(r"(^|\.)eos_token(_id)?$", value.strip()) is not None
            writes.append((m.order, eos, m, root))
    for rec in index.calls_with_method("add_special_tokens")[:_MAX_ITEMS]:
        if "pad_token" in ex.text(rec.node):
            writes.append((rec.order, "eos_token" in ex.text(rec.node).split("pad_token", 1)[1][:60],
                           None, ""))
    if not writes:
        return []
    writes.sort(key=lambda w: w[0])
    order, eos, m, root = writes[-1]
    if not eos or m is None:
        return []
    text = f"{ex.text(m.root)}.{m.key} = {ex.text(m.value)}"
    return [CallSite("pad_token_is_eos", _short(text), ex.span(m.node), receiver=root.split(".")[0])]


def _compute_loss_calls(ex: Any) -> list[CallSite]:
    from lintlora.extract.pyresolve import Env
    from lintlora.extract.pysections import _TRAINERS
    from lintlora.extract.qualnames import canonical

    out = []
    flags = [m for m in ex.index.mutations_of(key="model_accepts_loss_kwargs")[:_MAX_ITEMS]]
    for scope in ex.index.scopes[: _MAX_ITEMS * 4]:
        if scope.kind != "class":
            continue
        base = ex.r.library_base(scope)
        if base is None or canonical(base) not in _TRAINERS:
            continue
        defs = [b for b in scope.bindings.get("compute_loss", ()) if b.kind == "def"]
        if not defs:
            continue
        fscope = defs[-1].value
        names = {name: kind for name, _p, kind in fscope.params}
        star = next((name for name, kind in names.items() if kind == "starstar"), None)
        wanted = {"num_items_in_batch"} | ({star} if star else set())
        reads = False
        for n in _walk(fscope.node.body):
            if type(n) is cst.Name and n.value in wanted:
                reads = True
                break
        args = {
            "num_items_in_batch": Setting.literal("num_items_in_batch" in names, ex.span(fscope.node)),
            "var_kwargs": Setting.literal(star is not None, ex.span(fscope.node)),
            "reads_num_items": Setting.literal(reads, ex.span(fscope.node)),
            "base": Setting.literal(canonical(base), ex.span(scope.node)),
        }
        flag = None
        for b in scope.bindings.get("model_accepts_loss_kwargs", ())[:8]:
            if b.kind in ("assign", "annassign") and b.value is not None:
                flag = ex.setting(ex.r.ev(b.value, Env(scope), b.order + 1), None, b.value)
        for m in flags:
            if m.scope is not None and m.scope.parent is scope and m.value is not None:
                flag = ex.setting(ex.r.ev(m.value, ex.r.module_env, m.order), None, m.value)
        if flag is not None:
            args["model_accepts_loss_kwargs"] = flag
        args["instantiated"] = Setting.literal(_instantiated(ex, scope), ex.span(scope.node))
        out.append(CallSite("compute_loss_override", f"{scope.name}.compute_loss", ex.span(fscope.node),
                            args=args, receiver=scope.name))
    return out


def _instantiated(ex: Any, scope: Any) -> bool:
    """Whether the file calls the class ``scope`` (``Name(...)``) or a local class that
    subclasses it by name (one level)."""
    names = {scope.name}
    for other in ex.index.scopes[: _MAX_ITEMS * 4]:
        if other.kind == "class" and any(type(b) is cst.Name and b.value == scope.name for b in other.bases):
            names.add(other.name)
    return any(ex.index.calls_named(name) for name in names)


# ---- per trainer ----------------------------------------------------------------------------------
def trainer_calls(ex: Any, rec: Any, trainer_canon: str, args: dict, tv: Any) -> list[CallSite]:
    """The ``"trainer_inputs"`` CallSite of one trainer call (module docstring).

    Args:
        ex: the extractor; ``rec`` the trainer's CallRecord; ``trainer_canon`` its canonical
            class; ``args`` its resolved arguments (``name -> (value, key node, value node)``,
            :meth:`lintlora.extract.pyargs.Resolver.call_kwargs`); ``tv`` the value given as
            ``args=`` (an ``Obj`` for a ``SFTConfig(...)`` call, or anything else).
    """
    from lintlora.extract.pyresolve import Const, Obj

    found: dict[str, Setting] = {}
    for name in ("compute_metrics", "preprocess_logits_for_metrics", "eval_dataset"):
        if name in args:
            v, key_node, value_node = args[name]
            passed = not (isinstance(v, Const) and v.value is None)
            found[name] = Setting(passed, Origin.LITERAL, ex.span(value_node or key_node), ex.span(key_node))
            if name == "eval_dataset" and passed:
                samples = _selected_samples(ex, value_node, rec)
                if samples is not None:
                    found["eval_samples"] = samples
    if "data_collator" in args:
        found.update(_collator(ex, *args["data_collator"]))
    if "model" in args:
        model_class = _model_class(ex, *args["model"])
        if model_class is not None:
            found["model_class"] = model_class
    # max_seq_length= written to the trainer or its SFTConfig (TRL renamed it max_length)
    if trainer_canon == "trl.SFTTrainer" and "max_seq_length" in args:
        v, key_node, value_node = args["max_seq_length"]
        s = ex.setting(v, key_node, value_node)
        found["max_seq_length_keyword"] = Setting(s.value, s.origin if s.known else Origin.LITERAL,
                                                  s.span, s.key_span, "SFTTrainer", s.expr)
    if isinstance(tv, Obj) and tv.kind == "call" and tv.data == "trl.SFTConfig" and type(tv.node) is cst.Call:
        # written as a keyword or in a dict unpacked into the call (SFTConfig(**cfg))
        config_args, _c, _u = ex.r.call_kwargs(tv.node, tv.env or ex.r.module_env, _order(ex, tv.node), ())
        if "max_seq_length" in config_args:
            s = ex.setting(*config_args["max_seq_length"])
            found["max_seq_length_keyword"] = Setting(s.value, s.origin if s.known else Origin.LITERAL,
                                                      s.span, s.key_span, "SFTConfig", s.expr)
    if trainer_canon == "trl.SFTTrainer":
        intended = _intended_length(ex)
        if intended is not None:
            found["intended_length"] = intended
    if not found:
        return []
    return [CallSite("trainer_inputs", trainer_canon, ex.span(rec.node), args=found)]


def _selected_samples(ex: Any, node: Any, rec: Any) -> Setting | None:
    """The size of an eval set written as ``<dataset>.select(range(N))`` (or ``range(0, N)``)
    or ``<dataset>.take(N)``, with ``N`` resolved to an int; ``None`` otherwise (a name is
    followed to its assignment once)."""
    from lintlora.extract.pyresolve import Const

    env = ex.r.env_for(rec)
    for _ in range(2):
        if type(node) is cst.Name:
            bindings = ex.index.root.bindings.get(node.value, ()) if rec.scope.kind == "module" else \
                rec.scope.bindings.get(node.value, ())
            assigns = [b for b in bindings if b.kind == "assign" and b.order < rec.order]
            if len(assigns) != 1 or not isinstance(assigns[0].value, cst.CSTNode):
                return None
            node = assigns[0].value
            continue
        break
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute or not node.args:
        return None
    method = node.func.attr.value
    arg = node.args[0].value
    if method == "select" and type(arg) is cst.Call and type(arg.func) is cst.Name \
            and arg.func.value == "range" and 1 <= len(arg.args) <= 2:
        bound = arg.args[-1].value
        start = ex.r.ev(arg.args[0].value, env, rec.order) if len(arg.args) == 2 else Const(0)
    elif method == "take":
        bound, start = arg, Const(0)
    else:
        return None
    end = ex.r.ev(bound, env, rec.order)
    if not (isinstance(end, Const) and isinstance(start, Const) and type(end.value) is int
            and type(start.value) is int and 0 <= start.value < end.value <= 100_000_000):
        return None
    return Setting(end.value - start.value, Origin.LITERAL, ex.span(node), None, _short(ex.text(node), 80))


def _model_class(ex: Any, v: Any, key_node: Any, value_node: Any) -> Setting | None:
    """The class that loads the trainer's model: ``"AutoModelForCausalLM"`` for
    ``AutoModelForCausalLM.from_pretrained(...)`` (followed through ``get_peft_model`` and
    ``prepare_model_for_kbit_training``), ``"FastLanguageModel"`` for Unsloth's loader,
    ``"AutoModelForCausalLM"`` for a hub id string (TRL loads it so); ``None`` when unknown."""
    from lintlora.extract.pyresolve import Const

    if isinstance(v, Const) and isinstance(v.value, str):
        return Setting("AutoModelForCausalLM", Origin.LITERAL, ex.span(value_node), None,
                       "a hub id the TRL trainer loads with AutoModelForCausalLM")
    load, _loras = ex.follow_model(v)
    node = getattr(load, "node", None)
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return None
    owner = node.func.value
    name = owner.attr.value if type(owner) is cst.Attribute else owner.value if type(owner) is cst.Name else None
    if name is None:
        return None
    return Setting(name, Origin.LITERAL, ex.span(node), None, _short(ex.text(node.func), 80))


def _order(ex: Any, node: Any) -> int:
    rec = ex.r.record_of(node)
    return rec.order if rec is not None else 0


def _collator(ex: Any, v: Any, key_node: Any, value_node: Any) -> dict[str, Setting]:
    from lintlora.extract.pyresolve import Const, Obj, Unknown
    from lintlora.extract.qualnames import canonical

    span, key_span = ex.span(value_node or key_node), ex.span(key_node)
    if isinstance(v, Const) and v.value is None:
        return {}
    if isinstance(v, Obj) and v.kind == "scope":
        return _local_collator(ex, v.data, v.data, span, key_span)
    if isinstance(v, Obj) and v.kind == "instance" and isinstance(v.data, Obj) and v.data.kind == "scope":
        return _local_collator(ex, v.data.data, v.data.data, span, key_span)
    call = v.node if isinstance(v, (Unknown, Obj)) and type(getattr(v, "node", None)) is cst.Call else None
    if call is None and type(value_node) is cst.Call:
        call = value_node
    if call is None:
        return {"data_collator": Setting(None, Origin.UNKNOWN, span, key_span, "the collator is not followed",
                                         ex.text(value_node) if value_node is not None else None)}
    rec = ex.r.record_of(call)
    env = ex.r.env_for(rec) if rec is not None else ex.r.module_env
    order = rec.order if rec is not None else 0
    fv = ex.r.ev(call.func, env, order)
    if isinstance(fv, Obj) and fv.kind == "scope":
        return _local_collator(ex, fv.data, fv.data, span, key_span)
    if not (isinstance(fv, Obj) and fv.kind == "qual"):
        return {"data_collator": Setting(None, Origin.UNKNOWN, span, key_span, "the collator is not followed",
                                         ex.text(call))}
    name = canonical(fv.data)
    leaf = name.rsplit(".", 1)[-1]
    root = name.split(".", 1)[0]
    if root in ("transformers", "trl"):
        name = f"{root}.{leaf}"
    out = {"data_collator": Setting(name, Origin.LITERAL, ex.span(call), key_span)}
    if leaf == "DataCollatorForLanguageModeling" and root == "transformers":
        kwargs, complete, _u = ex.r.call_kwargs(call, env, order, ("tokenizer", "mlm"))
        if "mlm" in kwargs:
            out["collator_mlm"] = ex.setting(*kwargs["mlm"])
        elif complete:
            out["collator_mlm"] = Setting.library_default(
                True, "transformers data/data_collator.py DataCollatorForLanguageModeling: mlm=True")
    return out


def _local_collator(ex: Any, scope: Any, named: Any, span: Any, key_span: Any) -> dict[str, Setting]:
    """A collator the file defines: a function, or a class whose ``__call__`` is read."""
    fn = scope
    if scope.kind == "class":
        defs = [b for b in scope.bindings.get("__call__", ()) if b.kind == "def"]
        fn = defs[-1].value if defs else None
    out = {"data_collator": Setting(f"local:{named.name}", Origin.LITERAL, span, key_span)}
    if fn is None or fn.kind != "function":
        return out
    params = [name for name, _p, kind in fn.params if kind in ("posonly", "normal")]
    if fn.is_method and params:
        params = params[1:]
    if not params:
        return out
    feats = params[0]
    elements: set[str] = set()
    body = list(_walk(fn.node.body))
    for n in body:
        # for f in features: / [... for f in features]
        if type(n) in (cst.For, cst.CompFor) and type(n.iter) is cst.Name and n.iter.value == feats \
                and type(n.target) is cst.Name:
            elements.add(n.target.value)
    columns: list[str] = []
    for n in body:
        key = None
        if type(n) is cst.Subscript and len(n.slice) == 1 and type(n.slice[0].slice) is cst.Index:
            key = _string(n.slice[0].slice.value)
            base = n.value
            ok = (type(base) is cst.Name and base.value in elements) or (
                type(base) is cst.Subscript and type(base.value) is cst.Name and base.value.value == feats)
            if not ok:
                key = None
        elif type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "get" \
                and type(n.func.value) is cst.Name and n.func.value.value in elements and n.args:
            key = _string(n.args[0].value)
        if key is not None and key not in columns:
            columns.append(key)
        if len(columns) >= 64:
            break
    out["collator_columns"] = Setting(tuple(columns), Origin.LITERAL, ex.span(fn.node), None,
                                      f"read by {named.name}")
    return out


def _intended_length(ex: Any) -> Setting | None:
    """The longest training length above :data:`LONG_LENGTH` the file names outside the SFT
    trainer and its config (module docstring), or ``None``."""
    from lintlora.extract.pyresolve import Const, Obj
    from lintlora.extract.qualnames import canonical

    cached = ex.__dict__.get("_intended_length", 0)
    if cached != 0:
        return cached
    best: Setting | None = None

    def consider(s: Setting, how: str) -> None:
        nonlocal best
        if s.known and isinstance(s.value, int) and not isinstance(s.value, bool) \
                and LONG_LENGTH < s.value <= 10_000_000 and (best is None or s.value > best.value):
            best = Setting(s.value, s.origin, s.span, s.key_span, how, s.expr)

    for rec in ex.index.calls[: _MAX_ITEMS * 16]:
        func = rec.node.func
        leaf = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
        if leaf in _NOT_TRAINING_LENGTH:
            continue
        env = ex.r.env_for(rec)
        if type(func) in (cst.Name, cst.Attribute):
            fv = ex.r.ev(func, env, rec.order) if type(func) is cst.Name or _dotted(func) else None
            if isinstance(fv, Obj) and fv.kind == "qual":
                q = canonical(fv.data)
                if q in _SFT_NAMES or q.startswith("unsloth"):
                    continue
        for a in rec.node.args:
            if a.keyword is not None and a.keyword.value in _LENGTH_KEYWORDS:
                if a.keyword.value == "max_length" and not _TOKENIZER_HINT.search(ex.text(func)):
                    continue  # max_length= of anything but a tokenizer may be a generation length
                s = ex.setting(ex.r.ev(a.value, env, rec.order), a.keyword, a.value)
                consider(s, f"{a.keyword.value}={s.value} given to {_short(ex.text(func), 60)}()")
    scope = ex.index.root
    for name, bindings in list(scope.bindings.items())[: _MAX_ITEMS * 4]:
        if not _LENGTH_NAME.match(name):
            continue
        for b in bindings[:8]:
            if b.kind in ("assign", "annassign") and isinstance(b.value, cst.CSTNode):
                v = ex.r.ev(b.value, ex.r.module_env, b.order + 1)
                if isinstance(v, Const):
                    s = ex.setting(v, None, b.value)
                    consider(s, f"the file's {name} = {s.value}")
    ex.__dict__["_intended_length"] = best
    return best


def _dotted(node: Any) -> bool:
    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name
