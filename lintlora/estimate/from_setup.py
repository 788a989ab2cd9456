"""Turn a :class:`~lintlora.training_setup.TrainingSetup` into estimator inputs.

Every value the setup does not settle is assumed, and the assumption is stated as a sentence in
``MemoryEstimate.assumptions``; nothing is guessed silently. Library defaults the extractor
filled in (``Origin.LIBRARY_DEFAULT``) are used and named with their source.
"""

from __future__ import annotations

from typing import Any

from lintlora.estimate.architecture import Architecture
from lintlora.estimate.bounds import MAX_BATCH, MAX_LORA_R, MAX_SEQ_LEN, beyond_bound, out_of_range
from lintlora.estimate.memory import EstimateInputs, MemoryEstimate, estimate_memory
from lintlora.estimate.params import NoDefaultTargetsError, resolve_targets
from lintlora.estimate.profiles import get_profile
from lintlora.estimate.trainer_setup import apply_plan, default_length, plan_for_setup, trainer_key
from lintlora.training_setup import Origin, Setting, TrainingSetup

__all__ = ["estimate_setup", "inputs_from_setup"]

# Values assumed when a setup leaves them unknown, with the reason quoted in the assumption.
DEFAULT_SEQ_LEN = 512
DEFAULT_BATCH = 1

_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
           "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


def _val(s: Setting) -> Any:
    return s.value if s.known else None


_SETS_QUANT_STORAGE = ("axolotl", "llama-factory")
"""Frameworks that pass ``bnb_4bit_quant_storage`` themselves: axolotl
``src/axolotl/loaders/model.py`` ``ModelLoader._set_quantization_config`` (``torch.bfloat16``
for ``adapter: qlora`` + ``load_in_4bit``; at 002a637c8) and LLaMA-Factory
``src/llamafactory/model/model_utils/quantization.py`` (``bnb_4bit_quant_storage=
model_args.compute_dtype``, "crucial for fsdp+qlora"; at 8c0a721c4)."""


def _quant_storage(quant: Any, fw: str, q: str | None, weight: str) -> str | None:
    """``EstimateInputs.quant_storage`` of a bitsandbytes 4-bit base: the
    ``bnb_4bit_quant_storage`` the setup names (a float dtype name; ``"uint8"``, the
    library default, too), the model's 16-bit dtype for :data:`_SETS_QUANT_STORAGE`, else
    ``None`` (unknown: the estimator then treats the 4-bit weights as unsharded)."""
    if q not in ("nf4", "fp4"):
        return None
    if fw in _SETS_QUANT_STORAGE:
        return weight
    value = _val(quant.bnb_4bit_quant_storage) if quant is not None else None
    if value is None:
        return None
    return _DTYPES.get(str(value), str(value) if str(value) in ("uint8", "int8") else None)


def _target_parameters(setup: TrainingSetup) -> tuple[str, ...]:
    """peft's ``LoraConfig(target_parameters=[...])`` (peft >= 0.17), read from the adapter
    section's extra keys: a list of parameter names, else ``()`` (an unknown or non-list value
    is not guessed at; peft does not take a regular expression there yet)."""
    lora = setup.lora
    extra = getattr(lora, "extra", None) or {}
    s = extra.get("target_parameters")
    value = _val(s) if isinstance(s, Setting) else None
    if isinstance(value, (list, tuple)) and len(value) <= 4096 and all(
            isinstance(v, str) and len(v) <= 512 for v in value):
        return tuple(value)
    return ()


def _mxfp4_dequantized(quant: Any) -> bool:
    """``Mxfp4Config(dequantize=True)`` written in the file."""
    if str(_val(quant.method) or "").lower() != "mxfp4":
        return False
    s = (getattr(quant, "extra", None) or {}).get("dequantize")
    return isinstance(s, Setting) and _val(s) is True


def _where(s: Setting) -> str:
    """``line 12`` (``cell 3, line 2``) of a setting, or ``""``."""
    span = s.span or s.key_span
    if span is None:
        return ""
    return (f"cell {span.cell}, " if span.cell else "") + f"line {span.line}"


def _bounded(s: Setting, name: str, bound: int, notes: list[str]) -> Any:
    """The value of ``s``, or ``None`` (treated as unknown) with a note when it is beyond
    ``bound`` (:mod:`lintlora.estimate.bounds`)."""
    value = _val(s)
    if beyond_bound(value, bound):
        notes.append(out_of_range(name, value, bound, _where(s)) + ": treated as unknown")
        return None
    return value


def _why(s: Setting) -> str:
    if s.origin is Origin.LIBRARY_DEFAULT:
        return f" (library default{': ' + s.source if s.source else ''})"
    if s.origin.is_default and s.source:
        return f" ({s.origin.value} via {s.source})"
    return ""


def inputs_from_setup(setup: TrainingSetup, arch: Architecture, gpu: Any = None, *,
                      assumed_versions: tuple[tuple[str, ...], ...] = ()) -> tuple[EstimateInputs, list[str]]:
    """The estimator inputs for ``setup`` and the sentences stating what was assumed.

    Batch: ``per_device_train_batch_size``, else the first DataLoader's ``batch_size``.
    Sequence length: ``max_seq_length`` (SFTConfig / dialect cutoff); sequences are taken as
    padded to it (the worst case; packing makes it exact). Checkpointing:
    :func:`lintlora.facts.checkpointing`. Quantization, adapter, optimizer, precision,
    attention implementation, ``prepare_model_for_kbit_training`` and ``use_liger_kernel``
    from their sections. A checkpoint stored quantized (``arch.stored_quant``) is loaded as
    stored whatever quantization config the file passes
    (:func:`lintlora.estimate.stored_quant.reconcile`); ``gpu`` decides whether MXFP4/FP8 are
    dequantized (compute capability).
    The framework knobs come from :mod:`lintlora.estimate.setup_knobs`.
    ``assumed_versions``: the run's releases (``--assume-version`` pairs, or ``(package,
    version, origin)`` triples from the project; :mod:`lintlora.estimate.versions`),
    which the version-dependent terms read (bitsandbytes' saved input, transformers 4.x's
    float32 load).
    """
    from lintlora.estimate import versions as _versions

    from lintlora.facts import checkpointing

    notes: list[str] = []
    assumed: list[str] = []  # EstimateInputs fields whose value is assumed, not read
    fw = setup.framework or "transformers"
    g = setup.get
    sharded = next((e for e in setup.launch if e.kind in ("deepspeed", "fsdp")), None)

    # ---- method and adapter ----
    lora = setup.lora
    quant = setup.quantization
    has_peft_call = setup.has_call("get_peft_model")
    if lora is None and not has_peft_call:
        method = "full"
        notes.append("no LoRA configuration found: estimated as full fine-tuning of every parameter")
    else:
        method = "lora"
        if lora is None:
            notes.append("get_peft_model() is called but its LoraConfig could not be read: "
                         "peft's defaults assumed (r=8, lora_dropout=0, default target_modules)")
    r = _bounded(g("lora.r"), "LoRA rank r", MAX_LORA_R, notes)
    if method != "full" and (isinstance(r, bool) or not isinstance(r, int)):
        r = 8
        assumed.append("lora_r")
        notes.append("LoRA rank unknown: assumed r=8 (peft LoraConfig default)")
    dropout = _val(g("lora.lora_dropout"))
    if isinstance(dropout, (int, float)) and not 0 <= dropout <= 1:
        dropout = None  # not a probability (inf, NaN, 1e300): peft would refuse it
    if method != "full" and not isinstance(dropout, (int, float)):
        dropout = 0.0
        assumed.append("lora_dropout")
        notes.append("lora_dropout unknown: assumed 0.0 (peft LoraConfig default)")
    targets = g("lora.target_modules")
    target_value: Any = None
    if method != "full":
        if targets.known:
            target_value = targets.value
            if isinstance(target_value, list):
                target_value = tuple(target_value)
        else:
            assumed.append("target_modules")
            notes.append("target_modules unknown: assumed peft's default for the model type")
        if isinstance(target_value, str) and target_value.lower() not in ("all-linear",
                                                                          "all_linear"):
            import re

            from lintlora.target_regex import UnsafePatternError, compile_target_pattern

            try:
                compile_target_pattern(target_value)  # peft matches a string with re.fullmatch
            except UnsafePatternError as exc:
                assumed.append("target_modules")
                notes.append(f"target_modules {target_value!r} is a {exc}: assumed peft's default "
                             f"for the model type")
                target_value = None
            except re.error as exc:
                assumed.append("target_modules")
                notes.append(f"target_modules {target_value!r} is not a valid regular expression "
                             f"({exc}; peft would raise): assumed peft's default for the model type")
                target_value = None
        try:
            resolve_targets(arch, target_value)
        except NoDefaultTargetsError:
            first = arch.attention_modules[:1] if arch.attention_modules[0] in (
                "qkv_proj", "query_key_value", "c_attn", "W_pack", "wqkv") else ("q_proj", "v_proj")
            notes.append(f"peft has no default target_modules for {arch.model_type} (it would raise); "
                         f"assumed {', '.join(first)}")
            target_value = tuple(first)
    mts = _val(g("lora.modules_to_save")) or ()
    if isinstance(mts, str):
        mts = (mts,)
    dora = bool(_val(g("lora.use_dora")))
    tparams = _target_parameters(setup) if method != "full" else ()
    if fw == "unsloth" and method != "full":
        from lintlora.estimate.unsloth_moe import unsloth_moe_targets

        target_value, tparams, moe_note = unsloth_moe_targets(arch, target_value, tparams)
        if moe_note:
            notes.append(moe_note)

    # ---- quantization ----
    weight_notes_from = len(notes)
    q = None
    double = False
    qcompute = None
    from lintlora.estimate.stored_quant import mlx_note, reconcile

    mlx = mlx_note(_val(g("model.name_or_path")))
    if mlx:
        notes.append(mlx)
    sq, sq_notes = reconcile(getattr(arch, "stored_quant", None), quant, fw, gpu)
    notes.extend(sq_notes)
    if sq is not None:
        q, double = sq.estimate_quant, sq.double_quant
        qcompute = _DTYPES.get(str(sq.compute_dtype)) if sq.compute_dtype else None
    elif quant is not None and not quant.method.known and not quant.bits.known:
        # nothing says the model is quantized (it comes from a call lintlora cannot follow):
        # 16-bit weights, the larger figure, stated rather than a guessed 4-bit
        assumed.append("quant")
        notes.append(f"quantization unknown ({quant.bits.source or 'not resolved'}): assumed none (16-bit weights); "
                     "a model loaded in 4-bit or 8-bit peaks lower")
    elif quant is not None and _mxfp4_dequantized(quant):
        # Mxfp4Config(dequantize=True) (the OpenAI gpt-oss fine-tuning cookbook): transformers
        # dequantizes the MXFP4 experts to the load dtype while loading (quantizers/
        # quantizer_mxfp4.py, integrations/mxfp4.py: dequantize), so the model is its
        # architecture at 16 bits
        notes.append("Mxfp4Config(dequantize=True): the MXFP4 experts are dequantized at load; "
                     "priced as 16-bit weights")
    elif quant is not None:
        qm = str(_val(quant.method) or "bitsandbytes").lower()
        bits = _val(quant.bits)
        if isinstance(bits, bool) or not isinstance(bits, (int, float)) or bits != bits or bits in (float("inf"), float("-inf")):
            try:
                bits = int(str(bits)) if bits is not None and not isinstance(bits, bool) else None
            except ValueError:
                bits = None
        if bits is None:
            bits = 4
            notes.append("quantization bits unknown: assumed 4-bit")
        if "gptq" in qm or "awq" in qm:
            q = "gptq4" if bits == 4 else "int8"
        elif "torchao" in qm:
            q = "torchao-nf4"
        elif qm in ("hqq", "eetq", "mxfp4"):
            q = "gptq4" if bits == 4 else "int8"
            notes.append(f"{qm} quantization: storage approximated as 4-bit with group scales")
        elif bits == 8:
            q = "int8"
        elif bits == 4 and fw == "unsloth" and not quant.bnb_4bit_quant_type.known:
            # FastLanguageModel.from_pretrained(load_in_4bit=True) builds its own
            # BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_use_double_quant=True,
            # bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype) (unslothai/unsloth
            # unsloth/models/llama.py FastLlamaModel.from_pretrained @ 00060afeb383)
            q, double = "nf4", True
            notes.append("unsloth load_in_4bit: NF4 with double quantization and the training dtype as compute "
                         "dtype (FastLanguageModel.from_pretrained's own BitsAndBytesConfig, unsloth "
                         "models/llama.py)")
        elif bits == 4:
            qt = _val(quant.bnb_4bit_quant_type)
            q = "nf4" if qt == "nf4" else "fp4"
            double = bool(_val(quant.bnb_4bit_use_double_quant))
            cd = _val(quant.bnb_4bit_compute_dtype)
            qcompute = _DTYPES.get(str(cd), None) if cd else None
            if cd is None:
                notes.append("bnb_4bit_compute_dtype unknown: assumed equal to the training precision")
        if bits in (0, None) or bits > 8:
            q = None
    if q and method == "lora" and not (sq is not None and sq.dequantize):
        # LoRA on a quantized base; a checkpoint dequantized while loading (Mxfp4Config /
        # FP8 dequantize=True) is a 16-bit base, so plain LoRA
        method = "qlora"
    if sq is not None and method == "full" and not sq.dequantize:
        notes.append(f"warning: full fine-tuning of a base loaded as {sq.label}: transformers' Trainer refuses it "
                     "(trainer.py: \"You cannot perform fine-tuning on purely quantized models. Please attach "
                     "trainable adapters\"); estimated as if it ran")

    # ---- precision ----
    bf16 = _val(g("training.bf16"))
    fp16 = _val(g("training.fp16"))
    td = _val(g("model.torch_dtype"))
    td_norm = _DTYPES.get(str(td).lower().replace("torch.", "")) if td else None
    td_setting = g("model.torch_dtype")
    # "not given" when the load call was read without a dtype (an unknown with no location); an
    # expression lintlora cannot resolve, or a model from a helper it cannot follow, has a
    # location, and the notes must not call that "not given"
    td_words = (f"torch_dtype unknown ({td_setting.source or 'not resolved'})"
                if td_setting.origin is Origin.UNKNOWN and td_setting.span is not None
                else "torch_dtype not given")
    if bf16:
        compute = "bfloat16"
    elif fp16:
        compute = "float16"
    elif td_norm in ("bfloat16", "float16"):
        compute = td_norm
    elif fw in ("torchtune", "litgpt", "unsloth"):
        compute = "bfloat16"
    elif td_norm == "float32":
        compute = "float32"
    else:
        compute = "bfloat16"
        notes.append(f"training precision unknown (no bf16/fp16 flag, {td_words}): "
                     "assumed bf16 activations")
    if td_norm:
        weight = td_norm
    elif fw in ("torchtune", "litgpt", "unsloth") or q:
        weight = "bfloat16" if fw != "transformers" or compute == "bfloat16" else "float16"
    else:
        weight = compute if compute != "float32" else "float32"
        tf_v, tf_origin = _versions.version_of(assumed_versions, "transformers")
        if td == "auto":
            notes.append("torch_dtype='auto': assumed the checkpoint's 16-bit dtype")
        elif fw in ("transformers", "trl", "torch") and _versions.transformers_loads_fp32(assumed_versions):
            weight = "float32"
            notes.append(f"{td_words}: transformers {tf_v} ({tf_origin}) loads float32 weights when torch_dtype "
                         "is omitted (5.0 made dtype='auto' the default): 4 bytes per weight")
        else:
            notes.append(f"{td_words}: transformers {tf_v} ({tf_origin}) "
                         f"loads the checkpoint's own dtype (from_pretrained dtype='auto'), assumed "
                         f"16-bit ({weight}); transformers 4.x loaded float32 when torch_dtype was omitted, "
                         f"which doubles the weights")
    if q and not td_norm and fw in ("transformers", "trl", "torch"):
        q_tf, q_origin = _versions.version_of(assumed_versions, "transformers")
        notes.append(f"{td_words} with a quantized base: the non-quantized weights load in the "
                     "checkpoint's dtype under transformers 5 (float16 under 4.x: the bitsandbytes quantizer's "
                     f"update_torch_dtype), 16-bit either way (transformers {q_tf}, {q_origin})")
    if not q and weight in ("bfloat16", "float16") and setup.has_call("prepare_model_for_kbit_training"):
        from lintlora.facts import kbit_prep_checkpoints

        if kbit_prep_checkpoints(setup) is False:
            # peft src/peft/utils/other.py (0.20.1.dev0) prepare_model_for_kbit_training: on a base
            # that is not GPTQ/AQLM/EETQ/HQQ/torchao it casts every float16/bfloat16 parameter that
            # is not a Params4bit to float32: on an unquantized base, every weight (BN35)
            weight = "float32"
            notes.append("prepare_model_for_kbit_training() on an unquantized base casts every 16-bit "
                         "weight to float32 (peft src/peft/utils/other.py), which doubles the weights")
    master = False
    if method == "full" and weight == "float32" and compute in ("bfloat16", "float16"):
        master = True
    if q and qcompute is None:
        qcompute = compute

    weight_notes = notes[weight_notes_from:]
    if not setup.is_training:
        # nothing trains (an adapter merge, an inference or evaluation script): only the
        # loaded weights are estimated, and the sentences about them kept
        return EstimateInputs(method="load", quant=q, double_quant=double, quant_compute_dtype=qcompute,
                              weight_dtype=weight, compute_dtype=compute, framework=fw, stored_quant=sq), [
            "no training in this file (no Trainer, training loop or training config): the estimate is the "
            "memory to load the model, not a training step", *weight_notes]

    # ---- batch and sequence ----
    src = g("training.per_device_train_batch_size")
    bs = _bounded(src, "per_device_train_batch_size", MAX_BATCH, notes)
    if isinstance(bs, bool) or not isinstance(bs, int):
        dl = next((d for d in setup.dataloaders if d.batch_size.known and isinstance(d.batch_size.value, int)
                   and not isinstance(d.batch_size.value, bool)), None)
        if dl is not None and beyond_bound(dl.batch_size.value, MAX_BATCH):
            notes.append(out_of_range("the DataLoader's batch_size", dl.batch_size.value, MAX_BATCH,
                                      _where(dl.batch_size)) + ": treated as unknown")
            dl = None
        if dl is not None:
            bs = dl.batch_size.value
        else:
            bs = DEFAULT_BATCH
            assumed.append("batch_size")
            notes.append(f"batch size unknown: assumed {DEFAULT_BATCH}")
    elif src.origin is Origin.LIBRARY_DEFAULT:
        notes.append(f"per_device_train_batch_size not set: the library default {bs}{_why(src)}")
    sl_set = g("training.max_seq_length")
    sl = _bounded(sl_set, "max_seq_length", MAX_SEQ_LEN, notes)
    if isinstance(sl, bool) or not isinstance(sl, int) or sl <= 0:
        sl = min(DEFAULT_SEQ_LEN, arch.max_position_embeddings or DEFAULT_SEQ_LEN)
        assumed.append("seq_len")
        notes.append(f"sequence length unknown: assumed {sl} tokens per sequence")
    else:
        packing = _val(g("training.packing"))
        if sl_set.origin is Origin.LIBRARY_DEFAULT:
            notes.append(f"max_seq_length not set: the default {sl}{_why(sl_set)}")
        if _from_tokenizer(setup, sl_set):
            line = sl_set.span.line if sl_set.span else None
            notes.append(f"sequence length {sl} is the tokenizer's truncation length (max_length"
                         + (f" at line {line}" if line else "") + "): batches padded to their longest sample "
                         f"(padding=True, DataCollatorForSeq2Seq/ForLanguageModeling) are at most {sl} tokens; "
                         f"the peak is for a batch of full-length samples, shorter data peaks lower")
        elif not packing:
            notes.append(f"sequences taken as padded to {sl} tokens (the worst case; shorter batches use less)")

    # ---- checkpointing ----
    fact = checkpointing(setup)
    gc = fact.value
    offload = False
    gcv = _val(g("training.gradient_checkpointing"))
    extra = setup.training.extra if setup.training is not None else {}
    mode = extra.get("gradient_checkpointing_mode")
    mode_v = _val(mode) if mode is not None else None
    if isinstance(gcv, str) and gcv.lower() == "unsloth":
        gc, offload = True, True
    elif isinstance(mode_v, str) and mode_v.lower() in ("offload", "offload_disk", "unsloth"):
        # axolotl gradient_checkpointing: offload / offload_disk (and unsloth's mode): each
        # checkpointed layer input is moved off the GPU (axolotl's offloaded checkpoint wrapper,
        # modelled on Unsloth's Offloaded_Gradient_Checkpointer)
        gc, offload = True, True
        notes.append(f"gradient_checkpointing: {mode_v}: checkpointed layer inputs offloaded to "
                     f"{'disk' if mode_v.lower() == 'offload_disk' else 'CPU RAM'} (not on the GPU)")
    if gc is None:
        gc = False
        assumed.append("gradient_checkpointing")
        notes.append(f"gradient checkpointing undecided ({fact.reason}): assumed off")
    elif fact.from_default and not gc:
        notes.append(f"gradient checkpointing off: {fact.reason}")

    # ---- optimizer, attention, kernels ----
    optim = _val(g("training.optim"))
    if not isinstance(optim, str):
        optim = "adamw_torch"
        assumed.append("optim")
        notes.append("optimizer unknown: assumed AdamW with states in the parameter dtype")
    attn = _val(g("model.attn_implementation"))
    if not isinstance(attn, str):
        attn = "flash_attention_2" if fw in ("unsloth",) else "sdpa"
        assumed.append("attn_implementation")
        if fw in ("transformers", "trl", "torch", "axolotl", "llama-factory"):
            notes.append("attn_implementation not given: assumed sdpa (transformers' default since 4.36)")
    attn = {"flash_attention": "flash_attention_2", "flash-attn": "flash_attention_2",
            "fa2": "flash_attention_2", "flash_attn": "flash_attention_2"}.get(attn, attn)
    # prepare_model_for_kbit_training's fp32 up-cast: only on bitsandbytes bases (peft skips
    # GPTQ/AQLM/EETQ/HQQ models). axolotl calls it for 4/8-bit adapters but then casts norms and
    # embedding/lm_head back to torch_dtype for LoRA/QLoRA (src/axolotl/loaders/model.py
    # _configure_embedding_dtypes -> _convert_embedding_modules_dtype); LLaMA-Factory does not call it
    # (its own model_utils/checkpointing.py prepare_model_for_training, upcast_layernorm off by
    # default): YAML dialects therefore record no such call and get no up-cast.
    kbit = setup.has_call("prepare_model_for_kbit_training") and q in ("nf4", "fp4", "int8")
    liger = bool(_val(g("training.use_liger_kernel")))
    loss_impl = _loss_impl(extra, fw, notes)
    # preference/RL trainers (lintlora.estimate.trainers): a paired trainer's default length
    trainer = trainer_key(extra)
    sl = default_length(trainer, setup, assumed, notes) or sl
    from lintlora.estimate.seq2seq import target_length_from_setup  # encoder-decoder models

    target = target_length_from_setup(setup, arch, notes, MAX_SEQ_LEN)
    inputs = EstimateInputs(
        method=method, batch_size=int(bs), seq_len=int(sl), gradient_checkpointing=bool(gc),
        quant=q, double_quant=double, quant_compute_dtype=qcompute, weight_dtype=weight,
        compute_dtype=compute, lora_r=int(r or 8), lora_dropout=float(dropout or 0.0),
        target_modules=target_value, modules_to_save=tuple(mts), use_dora=dora, optim=optim,
        target_parameters=tparams,
        attn_implementation=attn, kbit_upcast=kbit, liger=liger, master_fp32=master,
        framework=fw, checkpoint_offload=offload, assumed=tuple(assumed), loss_impl=loss_impl,
        stored_quant=sq,
        quant_storage=_quant_storage(quant, fw, q, weight),
        assumed_versions=tuple(assumed_versions),
        bnb_saves_input=q in ("nf4", "fp4") and _versions.bnb_saves_input(assumed_versions),
        torchao_unchunked=q == "torchao-nf4" and _versions.torchao_unchunked(assumed_versions),
        target_seq_len=target,
    )
    plan = plan_for_setup(setup, extra, method, int(bs), int(sl), fw)
    notes.extend(plan.notes)
    inputs = apply_plan(inputs, plan, extra, notes)
    if kbit:
        notes.append("prepare_model_for_kbit_training() up-casts the non-quantized weights "
                     "(embeddings, norms, lm_head) to float32, and with them the residual stream, the MLP "
                     "intermediates and the checkpointed layer inputs")
    if q in ("nf4", "fp4"):
        notes.append(_versions.bnb_note(assumed_versions, fw))
    from lintlora.estimate.setup_knobs import apply_setup_knobs

    inputs = apply_setup_knobs(setup, inputs, notes)
    from lintlora.estimate.sharding_setup import sharding_from_setup  # deepspeed=/fsdp=/devices

    inputs = sharding_from_setup(setup, inputs, notes, arch.hidden_size)
    if sharded is not None and inputs.num_gpus <= 1:
        # the number of ranks is not known (no launch found): LL008 stays silent for such a
        # run (rules/ll008_does_not_fit.py); say why here
        notes.append(f"sharded launch ({sharded.detail or sharded.kind}) on an unknown number of GPUs: priced as one "
                     "GPU holding the whole model, higher than each GPU of the run (give --num-gpus N)")
    return inputs, notes


# torchtune ``loss._component_`` -> key of profiles.LOSS_K. Both torchtune losses split the
# tokens into chunks (num_output_chunks=8) and compute each chunk's logits and fp32
# cross-entropy in eager PyTorch; every chunk's fp32 log-softmax output stays alive for backward
# (torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss,
# torchtune/modules/loss/cross_entropy_loss.py LinearCrossEntropyLoss.compute_cross_entropy),
# about 4 B per token·vocab instead of the full-logits bf16 loss of older recipes.
# LinearCrossEntropyLoss also drops tokens whose label is ignored before the projection
# (mask_ignored_tokens=True), which lowers it by the prompt's share of the tokens (not counted).
_PREFERENCE_TRAINERS = ("dpo", "ipo", "simpo")  # torchtune's DPOLoss/RSOLoss/IPOLoss/SimPOLoss (dialects/torchtune.py)

_TORCHTUNE_LOSSES = {
    "torchtune.modules.loss.CEWithChunkedOutputLoss": "chunked",
    "torchtune.modules.loss.LinearCrossEntropyLoss": "chunked",
    "torch.nn.CrossEntropyLoss": "bf16-own",
}


def _loss_impl(extra: Any, fw: str, notes: list[str]) -> str | None:
    """The loss implementation a config names (``profiles.LOSS_K`` key), ``None`` for the
    profile's default: torchtune's ``loss._component_``; axolotl's ``cut_cross_entropy: true``
    (Apple's Cut Cross-Entropy kernel computes the loss without materialising the logits,
    apple/ml-cross-entropy; axolotl integrations/cut_cross_entropy)."""
    loss = extra.get("loss")
    lv = _val(loss) if loss is not None else None
    if fw == "torchtune" and isinstance(lv, str):
        impl = _TORCHTUNE_LOSSES.get(lv)
        if impl == "chunked":
            notes.append(f"loss {lv.rsplit('.', 1)[-1]}: logits and the fp32 cross-entropy computed per chunk; "
                         "each chunk's log-softmax output kept for backward (~4 B per token·vocab)")
        elif impl is None and ((t := extra.get("trainer")) is None
                               or _val(t) not in _PREFERENCE_TRAINERS):
            notes.append(f"loss {lv}: not a loss lintlora knows; the recipe default's loss buffers assumed")
        return impl
    cce = extra.get("cut_cross_entropy")
    if cce is not None and _val(cce) is True:
        notes.append("cut_cross_entropy: the loss is computed without materialising the logits")
        return "fused"
    return None


def _from_tokenizer(setup: TrainingSetup, sl_set: Setting) -> bool:
    """Whether a script's ``max_seq_length`` came from a tokenizer call's ``max_length`` (the
    Python extractor fills it from there when no trainer argument sets it): its span lies
    outside the TrainingArguments/SFTConfig call."""
    if not setup.path.endswith((".py", ".ipynb")) or sl_set.span is None:
        return False
    tr = setup.training
    tspan = getattr(tr, "span", None) if tr is not None else None
    if tspan is None:
        return False
    # where the value is passed (the keyword), else the value itself: inside the
    # TrainingArguments/SFTConfig call or the trainer call (SFTTrainer(max_seq_length=...), whose
    # value may be a variable defined elsewhere) it is the trainer's length, not a tokenizer's
    where = sl_set.key_span or sl_set.span
    for container in (tspan, setup.anchor):
        if container is not None and where.cell == container.cell and where.line in container.lines():
            return False
    return True


def estimate_setup(setup: TrainingSetup, arch: Architecture, gpu: Any = None, *,
                   gpu_memory_bytes: int | None = None,
                   assumed_versions: tuple[tuple[str, ...], ...] = ()) -> MemoryEstimate:
    """Estimate the peak memory of ``setup`` on ``arch`` (and compare with ``gpu`` if given).

    Args:
        gpu: a :class:`lintlora.estimate.gpus.Gpu` or ``None``.
        gpu_memory_bytes: overrides the GPU's memory (``--gpu-memory``).
        assumed_versions: the run's releases, ``(package, version, origin)``
            (:mod:`lintlora.estimate.versions`; the linter's context builds them from the
            project's pins and settings).
    """
    inputs, notes = inputs_from_setup(setup, arch, gpu, assumed_versions=assumed_versions)
    mem = gpu_memory_bytes or (gpu.memory_bytes if gpu is not None else None)
    return estimate_memory(inputs, arch, get_profile(inputs.framework), assumptions=notes,
                           gpu=getattr(gpu, "name", None), gpu_memory_bytes=mem)
