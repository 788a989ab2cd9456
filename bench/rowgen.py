"""Turn a truth row's setup into what a user would hand ``lintlora estimate``.

Two forms per row, for ``bench/accuracy.py``:

* :func:`script_for`: the training script or config the row describes, written in its
  framework's own form (an HF ``Trainer`` or TRL ``SFTTrainer`` Python script, an unsloth script,
  an axolotl / LLaMA-Factory / torchtune / litgpt YAML), for ``lintlora estimate FILE``.
* :func:`argv_for`: the ``lintlora estimate`` argv for the same setup (flag path). A flag the
  command does not know yet (other branches add them) is left out, the nearest known flags are
  used, and the row is marked ``flag missing: --x``: once the flag exists the same code uses it.

Both start from the :class:`~lintlora.estimate.memory.EstimateInputs` that
``bench/accuracy.py:row_inputs`` reads from the row (the "inputs" path), so the three paths
describe the same run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lintlora.estimate.memory import EstimateInputs

__all__ = ["RowSetup", "script_for", "argv_for", "context_flags", "generator_for", "estimate_options"]

_TORCH_DTYPE = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32"}


@dataclass(frozen=True)
class RowSetup:
    """One truth row as a setup: its id, hub id, the generator family and the inputs.

    ``generator``: ``"hf-trainer"``, ``"trl-sft"``, ``"unsloth"``, ``"litgpt"``,
    ``"torchtune"``, ``"axolotl"``, ``"llama-factory"``. ``extra``: framework knobs the inputs
    do not carry (torchtune ``enable_activation_offloading``, ``optimizer_in_bwd``,
    ``compile``; ``trainer``: trl trainer kind; ``bnb_version``: a bitsandbytes release the run
    used; ``seq2seq``: an encoder-decoder model).
    """

    row_id: str
    model: str
    generator: str
    inputs: EstimateInputs
    extra: dict = field(default_factory=dict)


def generator_for(row: dict, framework: str) -> str:
    """The generator family of a truth row (its ``framework`` column)."""
    fw = row["framework"].lower()
    if framework == "litgpt":
        return "litgpt"
    if framework == "torchtune":
        return "torchtune"
    if framework == "unsloth":
        return "unsloth"
    if "axolotl" in fw:
        return "axolotl"
    if "llama-factory" in fw:
        return "llama-factory"
    if "trl" in fw or "sfttrainer" in fw:
        return "trl-sft"
    return "hf-trainer"


def _py_list(names) -> str:
    return "[" + ", ".join(repr(n) for n in names) + "]"


def _targets_py(t) -> str:
    if t is None:
        return ""
    if isinstance(t, str):
        return f"    target_modules={t!r},\n"
    return f"    target_modules={_py_list(t)},\n"


def _quant_py(i: EstimateInputs, compute: str) -> tuple[str, str, str]:
    """(imports, config statement, from_pretrained kwarg) for the row's quantization."""
    if i.quant in ("nf4", "fp4"):
        cd = _TORCH_DTYPE.get(i.quant_compute_dtype or compute, "torch.bfloat16")
        return ("BitsAndBytesConfig", "bnb_config = BitsAndBytesConfig(\n    load_in_4bit=True,\n"
                f"    bnb_4bit_quant_type={i.quant!r},\n    bnb_4bit_use_double_quant={i.double_quant},\n"
                f"    bnb_4bit_compute_dtype={cd},\n)\n", "    quantization_config=bnb_config,\n")
    if i.quant == "int8":
        return ("BitsAndBytesConfig", "bnb_config = BitsAndBytesConfig(load_in_8bit=True)\n",
                "    quantization_config=bnb_config,\n")
    if i.quant == "gptq4":
        # QwenLM/Qwen finetune.py: GPTQConfig(bits=4, disable_exllama=True) for --q_lora
        return ("GPTQConfig", "gptq_config = GPTQConfig(bits=4, disable_exllama=True)\n",
                "    quantization_config=gptq_config,\n")
    return ("", "", "")


def _hf_script(s: RowSetup, trl: bool) -> str:
    i = s.inputs
    full = i.method == "full"
    qimp, qcfg, qarg = _quant_py(i, i.compute_dtype)
    imports = ["AutoModelForCausalLM", "AutoTokenizer"] + ([qimp] if qimp else [])
    if not trl:
        imports += ["DataCollatorForLanguageModeling", "Trainer", "TrainingArguments"]
    peft_imp = ["LoraConfig"] + ([] if trl else ["get_peft_model"])
    if i.kbit_upcast:
        peft_imp.append("prepare_model_for_kbit_training")
    lines = [f'"""Row {s.row_id} of tests/data/measured_peaks.csv as a '
             f'{"TRL SFTTrainer" if trl else "Trainer"} script (bench/rowgen.py)."""',
             "import torch", "from datasets import load_dataset"]
    if not full:
        lines.append(f"from peft import {', '.join(peft_imp)}")
    lines.append(f"from transformers import {', '.join(imports)}")
    if trl:
        lines.append("from trl import SFTConfig, SFTTrainer")
    lines += ["", f"MODEL_ID = {s.model!r}", ""]
    if qcfg:
        lines.append(qcfg)
    lines.append("tokenizer = AutoTokenizer.from_pretrained(MODEL_ID, trust_remote_code=True)")
    lines.append("model = AutoModelForCausalLM.from_pretrained(\n    MODEL_ID,\n"
                 f"    torch_dtype={_TORCH_DTYPE[i.weight_dtype]},\n{qarg}"
                 f"    attn_implementation={i.attn_implementation!r},\n    trust_remote_code=True,\n)")
    if i.kbit_upcast:
        lines.append(f"model = prepare_model_for_kbit_training(model, use_gradient_checkpointing="
                     f"{i.gradient_checkpointing})")
    if not full:
        mts = f"    modules_to_save={_py_list(i.modules_to_save)},\n" if i.modules_to_save else ""
        lines.append(f"lora_config = LoraConfig(\n    r={i.lora_r},\n    lora_alpha={2 * i.lora_r},\n"
                     f"    lora_dropout={i.lora_dropout},\n{_targets_py(i.target_modules)}{mts}"
                     f"    task_type=\"CAUSAL_LM\",\n)")
        if not trl:
            lines.append("model = get_peft_model(model, lora_config)")
    prec = ("    bf16=True,\n" if i.compute_dtype == "bfloat16" and i.weight_dtype != "float32" or
            (i.compute_dtype == "bfloat16" and i.master_fp32) else
            "    fp16=True,\n" if i.compute_dtype == "float16" else "")
    args = (f"    output_dir=\"out\",\n    per_device_train_batch_size={i.batch_size},\n"
            f"    gradient_accumulation_steps=1,\n    gradient_checkpointing={i.gradient_checkpointing},\n"
            f"{prec}    optim={i.optim!r},\n    learning_rate=2e-4,\n    max_steps=100,\n")
    if i.liger:
        args += "    use_liger_kernel=True,\n"
    if trl:
        lines.append('data = load_dataset("tatsu-lab/alpaca", split="train")')
        lines.append(f"args = SFTConfig(\n{args}    max_seq_length={i.seq_len},\n    packing=True,\n)")
        peft = "" if full else "    peft_config=lora_config,\n"
        lines.append(f"trainer = SFTTrainer(\n    model=model,\n    args=args,\n    train_dataset=data,\n"
                     f"    processing_class=tokenizer,\n{peft})")
    else:
        lines.append('data = load_dataset("tatsu-lab/alpaca", split="train")')
        lines.append("data = data.map(lambda rows: tokenizer(rows[\"text\"], truncation=True, "
                     f"padding=\"max_length\", max_length={i.seq_len}), batched=True)")
        lines.append(f"args = TrainingArguments(\n{args})")
        lines.append("trainer = Trainer(\n    model=model,\n    args=args,\n    train_dataset=data,\n"
                     "    data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),\n)")
    lines.append("trainer.train()")
    return "\n".join(lines) + "\n"


def _unsloth_script(s: RowSetup) -> str:
    i = s.inputs
    targets = i.target_modules if not isinstance(i.target_modules, str) else (
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    dtype = "torch.bfloat16" if i.compute_dtype == "bfloat16" else "torch.float16"
    gc = '"unsloth"' if i.checkpoint_offload else str(i.gradient_checkpointing)
    prec = "bf16=True" if i.compute_dtype == "bfloat16" else "fp16=True"
    return f'''"""Row {s.row_id} of tests/data/measured_peaks.csv as an unsloth script (bench/rowgen.py)."""
import torch
from unsloth import FastLanguageModel
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

max_seq_length = {i.seq_len}
model, tokenizer = FastLanguageModel.from_pretrained(
    model_name={s.model!r},
    max_seq_length=max_seq_length,
    dtype={dtype},
    load_in_4bit={i.quant in ("nf4", "fp4")},
)
model = FastLanguageModel.get_peft_model(
    model,
    r={i.lora_r},
    target_modules={_py_list(targets)},
    lora_alpha={i.lora_r},
    lora_dropout={i.lora_dropout},
    bias="none",
    use_gradient_checkpointing={gc},
)
data = load_dataset("yahma/alpaca-cleaned", split="train")
trainer = SFTTrainer(
    model=model,
    tokenizer=tokenizer,
    train_dataset=data,
    args=SFTConfig(
        per_device_train_batch_size={i.batch_size},
        gradient_accumulation_steps=1,
        max_seq_length=max_seq_length,
        packing=True,
        {prec},
        optim={i.optim!r},
        max_steps=60,
        output_dir="outputs",
    ),
)
trainer.train()
'''


# litgpt: LoRA flags per projection (litgpt/lora.py Config: lora_query, lora_key, lora_value,
# lora_projection, lora_mlp, lora_head); HF names as lintlora's litgpt dialect maps them
_LITGPT_FLAGS = {"lora_query": ("q_proj", "q", "query"), "lora_key": ("k_proj", "k", "key"),
                 "lora_value": ("v_proj", "v", "value"), "lora_projection": ("o_proj", "dense", "proj", "c_proj"),
                 "lora_mlp": ("gate_proj", "up_proj", "down_proj", "mlp", "fc1", "fc2", "dense_h_to_4h",
                              "dense_4h_to_h", "w1", "w2", "c_fc"),
                 "lora_head": ("lm_head",)}


def _litgpt_flags(s: RowSetup, arch) -> dict[str, bool]:
    t = s.inputs.target_modules
    if t == "all-linear" or s.extra.get("lora_head"):
        flags = {k: True for k in _LITGPT_FLAGS}
        flags["lora_head"] = bool(s.extra.get("lora_head"))
        return flags
    names = set(t or ())
    fused = arch is not None and arch.attention_modules[0] in ("qkv_proj", "query_key_value", "c_attn", "Wqkv",
                                                              "W_pack", "wqkv")
    flags = {k: any(n in names for n in v) for k, v in _LITGPT_FLAGS.items()}
    if fused and arch.attention_modules[0] in names:
        flags["lora_query"] = flags["lora_value"] = True  # the rows' "q,v (fused qkv)"
    return flags


def _litgpt_yaml(s: RowSetup, arch=None) -> str:
    i = s.inputs
    prec = {"bfloat16": "bf16-true", "float16": "16-true", "float32": "32-true"}[i.weight_dtype]
    if i.master_fp32:
        prec = "bf16-mixed"
    quant = ""
    if i.quant in ("nf4", "fp4"):
        quant = f"quantize: bnb.{i.quant}{'-dq' if i.double_quant else ''}\n"
    elif i.quant == "int8":
        quant = "quantize: bnb.int8-training\n"
    flags = "".join(f"{k}: {str(v).lower()}\n" for k, v in _litgpt_flags(s, arch).items())
    opt = ("optimizer:\n  class_path: bitsandbytes.optim.PagedAdamW\n  init_args:\n    lr: 0.0002\n"
           if i.optim.startswith("paged") else
           "optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    lr: 0.0002\n")
    return (f"# Row {s.row_id} of tests/data/measured_peaks.csv as a litgpt config (bench/rowgen.py)\n"
            f"# litgpt finetune lora --config this.yaml\n"
            f"checkpoint_dir: checkpoints/{s.model}\nout_dir: out/finetune/lora\nprecision: {prec}\n{quant}"
            f"devices: 1\nnum_nodes: 1\nlora_r: {i.lora_r}\nlora_alpha: {2 * i.lora_r}\n"
            f"lora_dropout: {i.lora_dropout}\n{flags}"
            "data:\n  class_path: litgpt.data.Alpaca\ntrain:\n  save_interval: 1000\n  log_interval: 1\n"
            f"  global_batch_size: {max(i.batch_size, 16)}\n  micro_batch_size: {i.batch_size}\n"
            f"  lr_warmup_steps: 100\n  epochs: 1\n  max_seq_length: {i.seq_len}\n"
            f"{opt}")


# torchtune builder names per hub id (torchtune torchtune/models/<family>/_model_builders.py)
_TORCHTUNE_BUILDERS = {
    "meta-llama/Llama-2-7b-hf": ("llama2", "llama2_7b"),
    "meta-llama/Meta-Llama-3-8B-Instruct": ("llama3", "llama3_8b"),
    "meta-llama/Meta-Llama-3-8B": ("llama3", "llama3_8b"),
    "meta-llama/Llama-3.1-8B": ("llama3_1", "llama3_1_8b"),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama3_1", "llama3_1_8b"),
    "meta-llama/Llama-3.1-70B": ("llama3_1", "llama3_1_70b"),
    "meta-llama/Llama-3.2-3B": ("llama3_2", "llama3_2_3b"),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama3_2", "llama3_2_3b"),
    "meta-llama/Llama-3.2-1B-Instruct": ("llama3_2", "llama3_2_1b"),
    "meta-llama/Llama-3.2-1B": ("llama3_2", "llama3_2_1b"),
    "Qwen/Qwen2.5-7B-Instruct": ("qwen2_5", "qwen2_5_7b_instruct"),
    "Qwen/Qwen2.5-3B-Instruct": ("qwen2_5", "qwen2_5_3b"),
    "Qwen/Qwen2.5-1.5B-Instruct": ("qwen2_5", "qwen2_5_1_5b_instruct"),
    "Qwen/Qwen2.5-0.5B-Instruct": ("qwen2_5", "qwen2_5_0_5b"),
    "mistralai/Mistral-7B-v0.1": ("mistral", "mistral_7b"),
    "google/gemma-2b": ("gemma", "gemma_2b"),
}
_TT_ATTN = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "output_proj"}


def _torchtune_yaml(s: RowSetup) -> str:
    i = s.inputs
    family, builder = _TORCHTUNE_BUILDERS[s.model]
    full = i.method == "full"
    prefix = "" if full else ("qlora_" if i.quant == "torchao-nf4" else "lora_")
    recipe = "full_finetune_single_device" if full else "lora_finetune_single_device"
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[i.weight_dtype]
    model = f"model:\n  _component_: torchtune.models.{family}.{prefix}{builder}\n"
    if not full:
        t = i.target_modules
        if t == "all-linear":
            attn, mlp = ["q_proj", "k_proj", "v_proj", "output_proj"], True
        else:
            names = tuple(t or ("q_proj", "v_proj"))
            attn = [_TT_ATTN[n] for n in names if n in _TT_ATTN]
            mlp = any(n in ("gate_proj", "up_proj", "down_proj") for n in names)
        model += (f"  lora_attn_modules: {attn}\n  apply_lora_to_mlp: {mlp}\n"
                  f"  apply_lora_to_output: {bool(s.extra.get('lora_head'))}\n"
                  f"  lora_rank: {i.lora_r}\n  lora_alpha: {2 * i.lora_r}\n  lora_dropout: {i.lora_dropout}\n")
    if i.optim.startswith("paged"):
        opt = "optimizer:\n  _component_: bitsandbytes.optim.PagedAdamW\n  lr: 2e-5\n"
    elif "8bit" in i.optim:
        opt = "optimizer:\n  _component_: bitsandbytes.optim.PagedAdamW8bit\n  lr: 2e-5\n"
    else:
        opt = "optimizer:\n  _component_: torch.optim.AdamW\n  fused: True\n  lr: 3e-4\n"
    loss = ("torchtune.modules.loss.CEWithChunkedOutputLoss" if i.loss_impl == "chunked" else
            "torchtune.modules.loss.LinearCrossEntropyLoss" if i.loss_impl == "fused" else
            "torch.nn.CrossEntropyLoss")
    knobs = ""
    for key in ("enable_activation_offloading", "optimizer_in_bwd", "compile"):
        if key in s.extra:
            knobs += f"{key}: {s.extra[key]}\n"
    return (f"# Row {s.row_id} of tests/data/measured_peaks.csv as a torchtune config (bench/rowgen.py)\n"
            f"#   tune run {recipe} --config this.yaml\n\n"
            f"output_dir: /tmp/torchtune/out\n"
            f"tokenizer:\n  _component_: torchtune.models.{family.split('_')[0]}.{family.split('_')[0]}_tokenizer\n"
            f"  path: /tmp/model/original/tokenizer.model\n  max_seq_len: {i.seq_len}\n"
            f"{model}"
            "dataset:\n  _component_: torchtune.datasets.alpaca_cleaned_dataset\n  packed: True\n"
            f"batch_size: {i.batch_size}\nepochs: 1\n{opt}"
            f"loss:\n  _component_: {loss}\n"
            f"gradient_accumulation_steps: 1\ndevice: cuda\ndtype: {dtype}\n"
            f"enable_activation_checkpointing: {i.gradient_checkpointing}\n{knobs}")


def _axolotl_yaml(s: RowSetup) -> str:
    i = s.inputs
    lines = [f"# Row {s.row_id} of tests/data/measured_peaks.csv as an axolotl config (bench/rowgen.py)",
             f"base_model: {s.model}"]
    if i.quant in ("nf4", "fp4"):
        lines.append("load_in_4bit: true")
    elif i.quant == "int8":
        lines.append("load_in_8bit: true")
    if i.method != "full":
        lines.append(f"adapter: {'qlora' if i.quant in ('nf4', 'fp4') else 'lora'}")
        lines += [f"lora_r: {i.lora_r}", f"lora_alpha: {2 * i.lora_r}", f"lora_dropout: {i.lora_dropout}"]
        if i.target_modules == "all-linear":
            lines.append("lora_target_linear: true")
        elif i.target_modules:
            lines.append("lora_target_modules:")
            lines += [f"  - {n}" for n in i.target_modules]
        if i.modules_to_save:
            lines.append("lora_modules_to_save:")
            lines += [f"  - {n}" for n in i.modules_to_save]
    if s.extra.get("trainer") in ("dpo", "orpo", "kto", "ipo", "simpo"):
        lines.append(f"rl: {s.extra['trainer']}")
    lines += ["datasets:", "  - path: tatsu-lab/alpaca", "    type: alpaca",
              f"sequence_len: {i.seq_len}", "sample_packing: true", "pad_to_sequence_len: true",
              f"micro_batch_size: {i.batch_size}", "gradient_accumulation_steps: 1", "num_epochs: 1",
              f"optimizer: {i.optim}", "learning_rate: 0.0002",
              f"bf16: {'true' if i.compute_dtype == 'bfloat16' else 'false'}",
              f"fp16: {'true' if i.compute_dtype == 'float16' else 'false'}",
              f"gradient_checkpointing: {'offload' if i.checkpoint_offload else str(i.gradient_checkpointing).lower()}"]
    if i.attn_implementation == "flash_attention_2":
        lines.append("flash_attention: true")
    elif i.attn_implementation == "sdpa":
        lines.append("sdp_attention: true")
    return "\n".join(lines) + "\n"


def _llama_factory_yaml(s: RowSetup) -> str:
    i = s.inputs
    lines = [f"# Row {s.row_id} of tests/data/measured_peaks.csv as a LLaMA-Factory config (bench/rowgen.py)",
             "### model", f"model_name_or_path: {s.model}"]
    if i.quant in ("nf4", "fp4", "int8"):
        lines.append(f"quantization_bit: {8 if i.quant == 'int8' else 4}")
        lines.append("quantization_method: bitsandbytes")
    stage = s.extra.get("trainer", "sft")
    lines += ["", "### method", f"stage: {stage}", "do_train: true",
              f"finetuning_type: {'full' if i.method == 'full' else 'lora'}"]
    if i.method != "full":
        lines += [f"lora_rank: {i.lora_r}", f"lora_alpha: {2 * i.lora_r}", f"lora_dropout: {i.lora_dropout}",
                  "lora_target: " + ("all" if i.target_modules in (None, "all-linear") else ",".join(i.target_modules))]
        if i.modules_to_save:
            lines.append("additional_target: " + ",".join(i.modules_to_save))
    if not i.gradient_checkpointing:
        lines.append("disable_gradient_checkpointing: true")
    if i.attn_implementation == "flash_attention_2":
        lines.append("flash_attn: fa2")
    lines += ["", "### dataset", "dataset: alpaca_en_demo", "template: default", f"cutoff_len: {i.seq_len}",
              "packing: true", "", "### train", f"per_device_train_batch_size: {i.batch_size}",
              "gradient_accumulation_steps: 1", "learning_rate: 1.0e-4", "num_train_epochs: 1.0",
              f"optim: {i.optim}", f"bf16: {'true' if i.compute_dtype == 'bfloat16' else 'false'}",
              f"fp16: {'true' if i.compute_dtype == 'float16' else 'false'}", "output_dir: saves/out"]
    return "\n".join(lines) + "\n"


def script_for(s: RowSetup, arch=None) -> tuple[str, str]:
    """``(file name, text)`` of the row's script or config in its framework's own form."""
    g = s.generator
    if g == "hf-trainer":
        return f"row{s.row_id}_train.py", _hf_script(s, trl=False)
    if g == "trl-sft":
        return f"row{s.row_id}_sft.py", _hf_script(s, trl=True)
    if g == "unsloth":
        return f"row{s.row_id}_unsloth.py", _unsloth_script(s)
    if g == "litgpt":
        return f"row{s.row_id}_litgpt.yaml", _litgpt_yaml(s, arch)
    if g == "torchtune":
        return f"row{s.row_id}_torchtune.yaml", _torchtune_yaml(s)
    if g == "axolotl":
        return f"row{s.row_id}_axolotl.yml", _axolotl_yaml(s)
    if g == "llama-factory":
        return f"row{s.row_id}_llama_factory.yaml", _llama_factory_yaml(s)
    raise ValueError(f"no generator {g!r}")


def estimate_options() -> set[str]:
    """The option strings ``lintlora estimate`` knows on this checkout (``--quant``, ...)."""
    from lintlora.estimate.command import estimate_cmd

    names: set[str] = set()
    for p in estimate_cmd.params:
        names.update(getattr(p, "opts", ()))
        names.update(getattr(p, "secondary_opts", ()))
    return names


_FW_FLAG = {"hf-trainer": "transformers", "trl-sft": "trl", "unsloth": "unsloth", "litgpt": "litgpt",
            "torchtune": "torchtune", "axolotl": "axolotl", "llama-factory": "llama-factory"}
_QUANT_FLAG = {"nf4": "nf4", "fp4": "fp4", "int8": "int8", "gptq4": "gptq", "torchao-nf4": "nf4"}


def context_flags(s: RowSetup, known: set[str] | None = None) -> tuple[list[str], list[str]]:
    """``(flags, missing)``: what the run's environment adds that no script or config states
    (the library releases the row's run used: bitsandbytes < 0.43.2, torchao < 0.2), as
    ``--assume-version PKG=VER`` flags; both paths pass them."""
    known = estimate_options() if known is None else known
    versions = []
    if s.inputs.bnb_saves_input:
        versions.append("bitsandbytes=0.41.1")  # the release the rows name (resource-tables: bnb 0.41.1)
    if s.inputs.torchao_unchunked:
        versions.append("torchao=0.1.0")  # before pytorch/ao PR #196 (2024-05-01)
    if s.inputs.loss_impl == "hf-legacy":
        versions.append("transformers=4.45.2")  # before 4.46's ForCausalLMLoss (profiles.LOSS_K)
    if not versions:
        return [], []
    if "--assume-version" not in known:
        return [], ["--assume-version"]
    flags: list[str] = []
    for v in versions:
        flags += ["--assume-version", v]
    return flags, []


def argv_for(s: RowSetup, known: set[str] | None = None) -> tuple[list[str], list[str]]:
    """``(argv, missing)``: the ``lintlora estimate`` flags for the row (``--format json``) and
    the flags the row needs that this checkout's command does not know (left out, the nearest
    known flags used instead). A flag whose value is what the command assumes without it
    (``--method qlora`` is NF4 with double quantization) is passed when known and not marked
    missing otherwise."""
    from lintlora.estimate.profiles import get_profile

    known = estimate_options() if known is None else known
    i = s.inputs
    fw = _FW_FLAG[s.generator]
    argv = ["--model", s.model, "--batch-size", str(i.batch_size), "--seq-len", str(i.seq_len),
            "--framework", fw, "--format", "json"]
    missing: list[str] = []

    def want(flag: str, *values: str, needed: bool = True) -> None:
        if flag in known:
            argv.extend((flag, *values))
        elif needed:
            missing.append(flag)

    method = i.method
    if i.quant and method != "full":
        method = "qlora"  # without --quant the nearest known: a 4-bit (NF4) base
    argv += ["--method", method]
    if method != "full":
        argv += ["--rank", str(i.lora_r), "--dropout", str(i.lora_dropout)]
        if i.target_modules is not None:
            argv += ["--targets", i.target_modules if isinstance(i.target_modules, str)
                     else ",".join(i.target_modules)]
        if i.modules_to_save:
            want("--modules-to-save", ",".join(i.modules_to_save))
    if i.quant == "torchao-nf4" and fw == "torchtune":
        pass  # --method qlora --framework torchtune is torchao's NF4 (double-quantized scales)
    elif i.quant:
        want("--quant", _QUANT_FLAG[i.quant], needed=i.quant != "nf4")
        if i.quant in ("nf4", "fp4", "torchao-nf4"):
            if i.double_quant:
                want("--double-quant", needed=False)
            else:
                want("--no-double-quant")
    argv += ["--optim", i.optim, "--attn", i.attn_implementation]
    argv.append("--gradient-checkpointing" if i.gradient_checkpointing else "--no-gradient-checkpointing")
    if i.weight_dtype == "float32" or i.master_fp32:
        prec = ("fp32" if i.compute_dtype == "float32" else
                "bf16-mixed" if i.compute_dtype == "bfloat16" else "fp16-mixed")
        want("--precision", prec)
    if i.loss_impl in ("chunked", "fused") and i.loss_impl != get_profile(fw).loss:
        # a loss the file chooses (torchtune loss._component_, axolotl cut_cross_entropy);
        # a model's own loss (Qwen-1 remote code) is no user's choice and no flag's
        want("--loss", i.loss_impl)
    if i.checkpoint_offload:
        want("--checkpoint-offload")
    if i.liger:
        want("--liger")
    for key, flag in (("enable_activation_offloading", "--activation-offloading"),
                      ("optimizer_in_bwd", "--optimizer-in-bwd"), ("compile", "--compile")):
        if s.extra.get(key):
            want(flag)
    trainer = s.extra.get("trainer")
    if trainer and trainer != "sft":
        want("--trainer", trainer)
    if s.extra.get("target_seq_len"):
        want("--target-seq-len", str(s.extra["target_seq_len"]))
    flags, miss = context_flags(s, known)
    return argv + flags, missing + miss
