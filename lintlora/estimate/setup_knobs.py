"""Framework knobs a setup states that change the estimate, read into :class:`EstimateInputs`.

Called by :func:`lintlora.estimate.from_setup.inputs_from_setup` once the common inputs are
built. Each change says where it came from in the notes.

* Unsloth: ``FastLanguageModel.from_pretrained(max_seq_length=N)`` is the training length
  when the trainer sets none, and caps a larger one (unslothai/unsloth ``unsloth/models/rl.py``
  @ 015bdef0d94a, the trainer patch: ``if args_max_seq_length is None and
  model_max_seq_length is not None: max_seq_length = model.max_seq_length``; ``elif
  args_max_seq_length > model_max_seq_length: ... We shall reduce it``).
  ``get_peft_model(use_gradient_checkpointing="unsloth")`` (its default, ``unsloth/models/llama.py``
  ``FastLlamaModel.get_peft_model``) offloads each checkpointed layer input to CPU RAM, except
  below 512 tokens, where it falls back to plain checkpointing (``unsloth/models/_utils.py``
  ``apply_unsloth_gradient_checkpointing``: ``if max_seq_length < 512: ... return True``).
* torchtune: ``optimizer_in_bwd``, ``enable_activation_offloading``, ``compile``
  (:mod:`lintlora.estimate.framework_terms`); ``fsdp_cpu_offload`` is stated, not priced (FSDP
  sharding is not modelled).
* LLaMA-Factory v1: Liger without its fused loss in training (``training.extra["liger_fused_loss"]``,
  :mod:`lintlora.extract.dialects.llama_factory`).
"""

from __future__ import annotations

from dataclasses import replace

from lintlora.estimate.memory import EstimateInputs
from lintlora.training_setup import Origin, TrainingSetup

__all__ = ["apply_setup_knobs", "UNSLOTH_OFFLOAD_MIN_TOKENS"]

# unsloth/models/_utils.py apply_unsloth_gradient_checkpointing: "Offloading not worth it below
# ~512; standard gc is faster"
UNSLOTH_OFFLOAD_MIN_TOKENS = 512


def _known(setting) -> object:
    return setting.value if setting is not None and setting.known else None


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _drop_length_notes(notes: list[str], old: int, new: int) -> None:
    """Replace the sentences about the sequence length the trainer's default gave."""
    for i in range(len(notes) - 1, -1, -1):
        n = notes[i]
        if n.startswith(("max_seq_length not set", "sequence length unknown")):
            del notes[i]
        elif n.startswith(f"sequences taken as padded to {old} tokens"):
            notes[i] = n.replace(f"padded to {old} tokens", f"padded to {new} tokens", 1)


def apply_setup_knobs(setup: TrainingSetup, inputs: EstimateInputs, notes: list[str]) -> EstimateInputs:
    """``inputs`` with the framework knobs of ``setup`` applied; sentences appended to ``notes``."""
    changes: dict = {}
    fw = inputs.framework
    training = setup.training
    extra = training.extra if training is not None else {}
    model_extra = setup.model.extra if setup.model is not None else {}
    assumed = list(inputs.assumed)

    if fw == "unsloth":
        if _known(model_extra.get("fast_inference")) is True:
            share = _known(model_extra.get("gpu_memory_utilization"))
            share = share if isinstance(share, (int, float)) and not isinstance(share, bool) and 0 < share <= 1 \
                else 0.5  # from_pretrained's default (unsloth models/loader.py @ 015bdef0d94a)
            notes.append(f"fast_inference=True: unsloth starts a vLLM engine in this process that takes "
                         f"gpu_memory_utilization = {share:g} of the GPU's memory for the whole run (unsloth "
                         "models/loader.py, unsloth_zoo vllm_utils.py load_vllm); not priced: this estimate is "
                         "the training step alone")
        msl = _int(_known(model_extra.get("max_seq_length")))
        sl_set = setup.get("training.max_seq_length")
        trainer_set = sl_set.known and sl_set.origin is not Origin.LIBRARY_DEFAULT and _int(sl_set.value)
        seq = inputs.seq_len
        if msl is not None and (not trainer_set or "seq_len" in assumed):
            _drop_length_notes(notes, inputs.seq_len, msl)
            seq = msl
            changes["seq_len"] = msl
            if "seq_len" in assumed:
                assumed.remove("seq_len")
            notes.append(f"sequence length {msl}: FastLanguageModel.from_pretrained(max_seq_length={msl}), which unsloth's "
                         "trainer patch takes when the trainer sets none (unsloth models/rl.py)")
        elif msl is not None and trainer_set and inputs.seq_len > msl:
            seq = msl
            changes["seq_len"] = msl
            notes.append(f"the trainer's max_seq_length {inputs.seq_len} is above the model's {msl}: unsloth reduces it "
                         f"to {msl} (models/rl.py)")
        call = next((c for c in setup.calls if c.qualified_name == "unsloth.FastLanguageModel.get_peft_model"), None)
        mode = None
        if call is not None:
            mode = _known(call.args.get("use_gradient_checkpointing"))
        elif setup.has_call("get_peft_model") and inputs.gradient_checkpointing:
            mode = "unsloth"  # get_peft_model's default (unsloth/models/llama.py)
        if isinstance(mode, str) and mode.lower() == "unsloth":
            threshold_len = msl or seq
            if threshold_len < UNSLOTH_OFFLOAD_MIN_TOKENS:
                changes.update(gradient_checkpointing=True, checkpoint_offload=False)
                notes.append(f"use_gradient_checkpointing='unsloth' below {UNSLOTH_OFFLOAD_MIN_TOKENS} tokens "
                             f"(max_seq_length {threshold_len}): plain checkpointing, inputs kept on the GPU "
                             "(unsloth models/_utils.py apply_unsloth_gradient_checkpointing)")
            else:
                changes.update(gradient_checkpointing=True, checkpoint_offload=True)
                notes.append("use_gradient_checkpointing='unsloth': each checkpointed layer input is offloaded to CPU RAM "
                             "(not on the GPU); only the layer in its backward is brought back")

    if fw == "torchtune":
        obw = _known(extra.get("optimizer_in_bwd"))
        if obw is True:
            changes["optimizer_in_bwd"] = True
        off = _known(extra.get("enable_activation_offloading"))
        if off is True:
            changes["activation_offload"] = True
            notes.append("enable_activation_offloading: every saved activation of 1 KiB or more goes to CPU RAM "
                         "(torchtune training/_activation_offloading.py OffloadActivations, min_offload_size=1024); "
                         "the output layer's and the loss's stay on the GPU (get_act_offloading_ctx_manager)")
        comp = _known(training.torch_compile) if training is not None else None
        if comp is True:
            from lintlora.estimate.framework_terms import COMPILE_SOURCE

            changes["compile"] = True
            notes.append(f"compile: each decoder layer compiled (torchtune training/_compile.py compile_model); {COMPILE_SOURCE}; "
                         "the compiled loss is counted as in eager mode")
        fco = _known(extra.get("fsdp_cpu_offload"))
        if fco is True:
            notes.append("fsdp_cpu_offload: parameters, gradients and optimizer states live on the CPU under FSDP; "
                         "not priced (FSDP sharding is not modelled): the estimate is higher than the run")
    elif training is not None and _known(training.torch_compile) is True:
        notes.append("torch_compile=True: not priced (measured only for torchtune's per-layer compile; a whole "
                     "transformers model may break into several graphs); --compile prices it")

    lfl = extra.get("liger_fused_loss")
    if lfl is not None and lfl.known and lfl.value is False and inputs.liger and inputs.loss_impl is None:
        changes["loss_impl"] = "hf"
        notes.append(f"Liger kernels without the fused linear cross-entropy in training ({lfl.source}): the loss "
                     "materialises the logits")
    if not changes:
        return inputs
    changes["assumed"] = tuple(assumed)
    return replace(inputs, **changes)
