"""Sections of a setup built from recognised calls: TrainingArgs, Lora, Quantization, ModelLoad,
DataLoaderSpec, each value a Setting with its span, origin and source.

A mixin of :class:`lintlora.extract.python._Extractor` (it uses the extractor's resolver,
positions and index). Library defaults fill the parameters a call leaves out, but only when
every argument was resolved: an unresolved ``**kwargs`` may carry any parameter, so those stay
unknown.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from lintlora.training_setup import (
    DataLoaderSpec, Evidence, Lora, ModelLoad, Origin, Quantization, Setting, Span, TrainingArgs,
)

__all__ = ["SectionBuilders"]

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
DEVICE_MAP_LAUNCHED = "device_map_launched"
"""``ModelLoad.extra`` key of the ``device_map`` a data-parallel launcher's process passes,
when it differs from the one the script's defaults give
(:meth:`SectionBuilders.device_map_launched`)."""
GC_RESET = "gradient_checkpointing_reset"
"""``TrainingArgs.extra`` key of a conditional ``args.gradient_checkpointing = False``
(:meth:`SectionBuilders.apply_object_writes`): value ``False``, origin ``VARIABLE``, span the
written value, key span the assigned attribute, ``source`` the condition in words."""
_GC_NAMES = frozenset({"gradient_checkpointing", "activation_checkpointing"})
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


class SectionBuilders:
    """Builds the sections of a setup from resolved values (see the module docstring)."""

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
        section = self.with_target_length(section)
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
        # every TRL config (SFTConfig, GRPOConfig, DPOConfig...) derives an unset bf16 from fp16
        # (trl/trainer/base_config.py _BaseConfig.__post_init__: bf16 = not fp16)
        if DEFAULTS_CLASS[config_canon] in ("SFTConfig", "TRLConfig") and "bf16" not in args and complete:
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

        msl = section.max_seq_length
        if msl.known or msl.expr is not None or (msl.source and "never defined" in msl.source):
            return section
        found = self.truncation_lengths()
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

    def with_target_length(self, section: TrainingArgs) -> TrainingArgs:
        """Record the labels' truncation length (:mod:`lintlora.extract.pytargets`) as
        ``extra["target_seq_len"]``: the longest of the target tokenizer calls, unknown when
        one is unresolved."""
        import dataclasses

        from lintlora.extract.pytargets import TARGET_KEY

        self.truncation_lengths()
        found = self.__dict__.get("_target_lengths") or []
        if not found or TARGET_KEY in section.extra:
            return section
        known = [st for st in found if st.known and isinstance(st.value, int) and not isinstance(st.value, bool)]
        pick = max(known, key=lambda st: st.value) if len(known) == len(found) else next(
            st for st in found if st not in known)
        return dataclasses.replace(section, extra={**section.extra, TARGET_KEY: pick})

    def truncation_lengths(self) -> list[Setting]:
        """The truncation lengths the file's data pipeline names (for
        :meth:`with_tokenizer_length`): each tokenizer call's ``max_length=`` (a tokenizer's
        ``model_max_length=``), else each ``max_seq_length=``/``seq_length=`` given to any
        call. The same for every setup of the file, so found once per file."""
        import dataclasses

        import libcst as cst

        cached = self.__dict__.get("_truncation_lengths")
        if cached is not None:
            return cached
        from lintlora.extract.pytargets import target_kind

        found: list[Setting] = []
        targets: list[Setting] = []  # the labels' tokenizer calls (seq2seq): the decoder length
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
                    kind = target_kind(self, rec, a.value) if keyword == "max_length" else None
                    if kind is not None:
                        how = ("text_target=" if kind == "text_target"
                               else "its length's name (a guess by name)")
                        targets.append(dataclasses.replace(
                            st, source=f"the labels' tokenizer call (read as targets from {how})"))
                    else:
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
        if targets and not found and not any(t.source and "text_target" in t.source for t in targets):
            # only lengths named like targets, none passed as text_target: a decoder-only
            # script's one truncation length may carry such a name, so keep it as the length
            found = [dataclasses.replace(t, source=None) for t in targets]
        self.__dict__["_truncation_lengths"] = found
        self.__dict__["_target_lengths"] = targets
        return found

    def unknown_training(self, reason: str, anchor: Any) -> TrainingArgs:
        unknown = Setting(None, Origin.UNKNOWN, None, None, reason, None)
        fields = {name: unknown for name in _TA_FIELDS + ("max_seq_length",)}
        return TrainingArgs(**fields, span=self.span(anchor))  # type: ignore[arg-type]

    def training_from_instance(self, inst: Any, trainer_canon: str | None
                               ) -> tuple[TrainingArgs, list[Evidence], Any]:
        """TrainingArgs from a dataclass instance (``HfArgumentParser`` / ``TrlParser`` output
        or a local subclass of TrainingArguments instantiated directly)."""
        from lintlora.extract.defaults import sft_bf16_default
        from lintlora.extract.pyresolve import DEFAULTS_CLASS, Const, Obj, canonical

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

        writes = self.apply_object_writes(inst, {})
        extra: dict[str, Setting] = {}
        if GC_RESET in writes:
            extra[GC_RESET] = self.setting(*writes.pop(GC_RESET))
        for name in _TA_FIELDS:
            written = next((writes[n] for n in _TA_ALIASES.get(name, (name,)) if n in writes), None)
            if written is not None:
                fields[name] = self.setting(written[0], written[1], written[2], name)
                continue
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
        if DEFAULTS_CLASS.get(lib) in ("SFTConfig", "TRLConfig"):
            bf = r.getattr(inst, "bf16", None)
            if isinstance(bf, Const) and bf.origin is Origin.LIBRARY_DEFAULT:
                fields["bf16"] = sft_bf16_default(fields.get("fp16", Setting()))
        section = TrainingArgs(**fields, span=self.span(inst.node), extra=extra)  # type: ignore[arg-type]
        return section, self.training_evidence(section), None

    def object_writes(self) -> dict[int, list[tuple[int, int, Any]]]:
        """What the file does to objects once built, by the object (the ``id`` of the node
        that made it), in execution order: attribute assignments ``name.attr = value``
        (:class:`~lintlora.extract.pyindex.Mutation`) and calls of the training-argument
        setters ``name.set_training(...)`` (:class:`~lintlora.extract.pyindex.CallRecord`),
        each as ``(order, tie-break, record)``. Each target is resolved once for the file,
        so :meth:`apply_object_writes` looks its object up instead of scanning the file per
        config object."""
        import libcst as cst
        from lintlora.extract.pyresolve import Obj
        from lintlora.extract.pysetters import SETTERS

        cached = self.__dict__.get("_object_writes")
        if cached is not None:
            return cached
        r = self.r
        table: dict[int, list[tuple[int, int, Any]]] = {}
        mutations = self.index.mutations
        for i, m in enumerate(mutations):
            if m.kind == "setattr" and type(m.root) is cst.Name:
                target = r.ev(m.root, Env_of(r, m), m.order)
                if isinstance(target, Obj) and target.node is not None:
                    table.setdefault(id(target.node), []).append((m.order, i, m))
        for i, rec in enumerate(self.index.calls):
            if rec.method in SETTERS:
                target = r.ev(rec.node.func.value, r.env_for(rec), rec.order)
                if isinstance(target, Obj) and target.node is not None:
                    table.setdefault(id(target.node), []).append(
                        (rec.order, len(mutations) + i, rec))
        for events in table.values():
            events.sort(key=lambda e: (e[0], e[1]))
        self.__dict__["_object_writes"] = table
        return table

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

    def condition_words(self, m: Any, target: str) -> str:
        """``set to False at line 16 under `if model_args.use_peft:```: the ``if`` tests a
        statement runs under, as written (an ``else`` branch as ``not (...)``), for messages. A
        test of the written attribute itself (``if training_args.gradient_checkpointing:``
        before turning it off) is left out: it does not narrow when the value ends up off."""
        tests = []
        for g in m.guards:
            if g.kind != "if" or g.test is None:
                continue
            text = " ".join(self.text(g.test).split())
            if target in text:
                continue
            tests.append(text if g.polarity else f"not ({text})")
        line = (self.span(m.node) or Span("", 0)).line
        if not tests:
            return f"set to False under a condition at line {line}"
        return f"set to False at line {line} under `if {' and '.join(tests)}:`"

    def apply_object_writes(self, obj: Any, args: dict) -> dict:
        """The arguments of a config object after what the script does to it once built:
        ``training_args.gradient_checkpointing = True`` and, for training arguments, the
        ``set_training``/``set_optimizer``/``set_lr_scheduler``/``set_dataloader`` helpers
        (:mod:`lintlora.extract.pysetters`: each resets the fields it covers that the call
        leaves out). Applied in source order, the last write winning; a write under a
        condition the file does not decide makes the value unknown.

        ``obj`` is the object (a recognised call, or an instance from an argument parser);
        ``args`` maps argument names to ``(value, key node, value node)`` and is returned
        updated (a write to one of the ``gradient_checkpointing``/``activation_checkpointing``
        names replaces both). A write of ``False`` to one of those names under a condition the
        file does not decide (or rules out only by a value set at launch) leaves the value as it
        was and is returned under :data:`GC_RESET` instead, its ``source`` naming the condition:
        checkpointing is off on that branch whatever the launch passes. In transformers 5.24 the Trainer reads ``activation_checkpointing``
        and the old name is synced only in ``__post_init__``, so an assignment to
        ``gradient_checkpointing`` after construction no longer reaches it there; earlier
        releases read ``gradient_checkpointing`` itself. lintlora takes the assignment at its
        word (the reading that cannot produce a false "off").
        """
        from lintlora.extract.pyresolve import Const, Obj, Unknown
        from lintlora.extract.pysetters import SETTER_SOURCE, SETTERS, setter_fields

        r = self.r
        out = dict(args)

        def targets(node: Any, env: Any, order: int) -> bool:
            target = r.ev(node, env, order)  # memoised: resolved by object_writes() first
            if not (isinstance(target, Obj) and target.kind == obj.kind and target.node is obj.node):
                return False
            if target.kind == "call":
                return True
            # two dataclasses parsed by one call share its node: compare the classes
            a, b = target.data, obj.data
            return target.kind == "instance" and isinstance(a, Obj) and isinstance(b, Obj) \
                and a.kind == b.kind and (a.data is b.data or a.data == b.data)

        def when(guards: tuple, scope: Any, node: Any) -> str | None:
            """"skip", "unknown", "default-off"/"default-on" (ruled out / in only by a value set
            at launch: an argparse/dataclass/function/environment default) or None (runs) for a
            write under ``guards``."""
            state, decider = r.guard_state(guards, scope, None)
            launch = decider is not None and decider.origin not in (Origin.LITERAL, Origin.VARIABLE)
            if state is False:
                return "default-off" if launch else "skip"
            if state is True and launch:
                return "default-on"
            return "unknown" if state is None else None

        def put(key: str, value: Any, key_node: Any, value_node: Any) -> None:
            for group in _TA_ALIASES.values():
                if key in group:
                    for other in group:
                        out.pop(other, None)
            out[key] = (value, key_node, value_node)

        training = getattr(obj, "kind", None) == "instance" or getattr(obj, "data", None) in _TRAINING_ARGS
        events = [e for e in self.object_writes().get(id(getattr(obj, "node", None)), ())
                  if training or not hasattr(e[2], "method")]
        for _order, _i, ev in events:
            if not hasattr(ev, "method"):  # an attribute assignment
                m = ev
                if not targets(m.root, Env_of(r, m), m.order):
                    continue
                state = when(m.guards, m.scope, m.node)
                if state == "skip":
                    continue
                value = r.ev(m.value, Env_of(r, m), m.order)
                if state in ("unknown", "default-off", "default-on") and m.key in _GC_NAMES \
                        and isinstance(value, Const) and value.value is False:
                    # `if model_args.use_peft: training_args.gradient_checkpointing = False`:
                    # off on that branch whatever the launch passes; kept beside the value the
                    # other branch has (facts.checkpointing reads both)
                    out[GC_RESET] = (Const(False, Origin.VARIABLE, m.value,
                                           self.condition_words(m, f"{self.text(m.root)}.{m.key}")),
                                     m.node, m.value)
                    continue
                if state == "default-off":
                    continue
                if state == "default-on":
                    state = None  # runs unless the launch says otherwise: as before
                if state == "unknown":
                    value = Unknown(m.value, f"set under a condition at line "
                                             f"{(self.span(m.node) or Span('', 0)).line}")
                put(m.key, value, m.node, m.value)
                continue
            rec = ev
            env = r.env_for(rec)
            if not targets(rec.node.func.value, env, rec.order):
                continue
            state = when(rec.guards, rec.scope, rec.node)
            if state in ("skip", "default-off"):
                continue
            if state == "default-on":
                state = None
            method = rec.method
            positional = tuple(p for p, _f, _d in SETTERS[method])
            passed, complete, _u = r.call_kwargs(rec.node, env, rec.order, positional)
            line = (self.span(rec.node) or Span("", 0)).line
            for field_name, (param, value, given) in setter_fields(method, passed).items():
                if given:
                    v, key_node, value_node = value
                elif not complete:
                    v, key_node, value_node = (Unknown(rec.node, f"{method}() may get `{param}` "
                                                                 "through **kwargs"), rec.node, None)
                else:
                    v = Const(value, Origin.LIBRARY_DEFAULT, None,
                              SETTER_SOURCE.format(method=method) + f": the call at line {line} "
                              f"leaves `{param}` out, which resets it to {value!r}")
                    key_node, value_node = rec.node, None
                if state == "unknown":
                    v = Unknown(rec.node, f"{method}() runs under a condition at line {line}")
                put(field_name, v, key_node, value_node)
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
            # `bnb.bnb_4bit_compute_dtype = torch.bfloat16` after the config is built (LL014)
            args = self.apply_object_writes(v, args)
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
        model, quant = self.model_from_args(args, complete, unresolved, load.node, unsloth,
                                            variable=self.variable_of(load.node))
        launched = self.device_map_launched(load, order, positional, model.device_map) \
            if "device_map" in args else None
        if launched is not None:
            import dataclasses

            model = dataclasses.replace(model, extra={**model.extra, DEVICE_MAP_LAUNCHED: launched})
        return model, quant

    def device_map_launched(self, load: Any, order: int, positional: tuple,
                            as_read: Setting) -> Setting | None:
        """The ``device_map`` a process of a data-parallel launch passes (the environment of
        :data:`lintlora.extract.pyresolve.LAUNCHER_ENV`), when the file reads the rank or world
        size and that value differs from the one read with the script's defaults
        (``None if world_size != 1 else "auto"`` is ``"auto"`` by default and ``None`` under a
        launcher); ``None`` otherwise. Evaluated by a second resolver, only for such files."""
        if not any(key in _ENV_KEYS for _node, key, _how in getattr(getattr(self, "found", None),
                                                                       "env_reads", ())):
            return None
        from lintlora.extract.pyresolve import LAUNCHER_ENV, Resolver

        lr = getattr(self, "_launch_resolver", None)
        if lr is None:
            lr = Resolver(self.r.index, self.r.text_of, self.r.base_dir)
            lr.launch_env = dict(LAUNCHER_ENV)
            self._launch_resolver = lr
        args, _complete, _unresolved = lr.call_kwargs(load.node, load.env or lr.module_env, order, positional)
        if "device_map" not in args:
            return None
        v, key_node, value_node = args["device_map"]
        launched = self.setting(v, key_node, value_node, "device_map")
        if not launched.known or (as_read.known and launched.value == as_read.value):
            return None
        return launched

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
        loading_defaults = defaults_for("from_pretrained")  # trust_remote_code: False
        for fname in _MODEL_FIELDS:
            if fname not in fields and complete and fname in loading_defaults:
                fields[fname] = loading_defaults[fname]
            elif fname not in fields:
                fields[fname] = Setting(None, Origin.UNKNOWN, None, None,
                                        "not passed (the default depends on the library version)"
                                        if complete else f"may be passed through "
                                                         f"{', '.join(unresolved)}", None)
        extra = {}
        for k in ("max_seq_length", "low_cpu_mem_usage", "full_finetuning", "revision") + (
                ("fast_inference", "gpu_memory_utilization") if unsloth else ()):
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
            if unsloth:
                flags = _unsloth_flags(flags, self.settings_of(
                    args, complete, (), ("load_in_16bit", "full_finetuning"), None), complete, self.span(node))
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

        hits = [m for m in self.index.mutations_of(key=attr)
                if m.kind == "setattr" and type(m.root) is cst.Attribute
                and m.root.attr.value == "config"]
        if not hits:
            return None
        m = hits[-1]
        v = self.r.ev(m.value, Env_of(self.r, m), m.order)
        return self.setting(v, m.node, m.value, attr)

    def variable_of(self, call: Any) -> str | None:
        """The name the call's result is assigned to (``model = AutoModel...(...)``)."""
        return self.index.assigned_name(call)

    def dataloader_spec(self, rec: Any) -> DataLoaderSpec:
        from lintlora.extract.defaults import defaults_for, positional_parameters

        args, complete, unresolved = self.r.call_kwargs(rec.node, self.r.env_for(rec), rec.order,
                                                        positional_parameters("DataLoader"))
        fields = self.settings_of(args, complete, unresolved, _DL_FIELDS, defaults_for("DataLoader"))
        extra = {k: self.setting(args[k][0], args[k][1], args[k][2], k)
                 for k in ("shuffle", "drop_last", "prefetch_factor") if k in args}
        return DataLoaderSpec(**fields, span=self.span(rec.node), extra=extra)  # type: ignore[arg-type]


def Env_of(r: Any, m: Any) -> Any:
    """The environment of a recorded statement (no call context)."""
    from lintlora.extract.pyresolve import Env

    return r.module_env if m.scope is r.index.root else Env(m.scope)


def _is_dotted(node: Any) -> bool:
    import libcst as cst

    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name


_UNSLOTH_LOADER = "unsloth unsloth/models/loader.py @ 015bdef0d94a (FastLanguageModel/FastModel.from_pretrained)"


def _unsloth_flags(flags: dict, more: dict, complete: bool, span: Any) -> dict:
    """unsloth's ``from_pretrained`` flags with its defaults filled in: ``load_in_4bit=True``,
    ``load_in_8bit=False`` (``unsloth/models/loader.py``), and ``full_finetuning=True`` turning
    4-bit and 8-bit off ("You selected full finetuning support, but 4bit / 8bit is enabled -
    disabling LoRA / QLoRA"); ``load_in_16bit=True`` with the default 4-bit is refused there
    ("Can only load in 4bit or 8bit or 16bit"), so the 4-bit default only holds without it.
    A call lintlora cannot see whole (``**kwargs``) keeps what it has: nothing is defaulted."""
    if not complete:
        return flags
    out = dict(flags)
    full, sixteen = more.get("full_finetuning"), more.get("load_in_16bit")
    if any(x is not None and not x.known for x in (full, sixteen)):
        return out
    if full is not None and full.value:
        off = Setting(False, full.origin, full.span, full.key_span,
                      "full_finetuning=True disables 4-bit/8-bit (" + _UNSLOTH_LOADER + ")", full.expr)
        return {"load_in_4bit": off, "load_in_8bit": off}
    if "load_in_8bit" not in out:
        out["load_in_8bit"] = Setting(False, Origin.LIBRARY_DEFAULT, span, None, _UNSLOTH_LOADER, None)
    if "load_in_4bit" not in out:
        four = not (sixteen is not None and sixteen.value) and not (out["load_in_8bit"].known
                                                                      and out["load_in_8bit"].value)
        out["load_in_4bit"] = Setting(four, Origin.LIBRARY_DEFAULT, span, None, _UNSLOTH_LOADER, None)
    return out


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
