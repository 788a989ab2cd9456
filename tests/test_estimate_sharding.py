"""Per-GPU memory on several GPUs (lintlora/estimate/sharding.py), each strategy against a hand
computation from Llama-2-7B's published shapes.

Llama-2-7B (meta-llama/Llama-2-7b-hf config.json): hidden 4096, intermediate 11008, 32 layers,
vocab 32000, untied; 6,738,415,616 parameters (the checkpoint's count). One decoder layer:
4 × 4096² (q, k, v, o) + 3 × 4096 × 11008 (gate, up, down) + 2 × 4096 (norms) = 202,383,360.
LoRA r=8 on q_proj, v_proj (peft's default for llama): 32 × 2 × 8 × (4096 + 4096) = 4,194,304
trainable parameters (peft print_trainable_parameters: "trainable params: 4,194,304").
DeepSpeed defaults (runtime/zero/config.py): reduce_bucket_size 5e8, stage3_prefetch_bucket_size 5e7.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.memory import EstimateInputs, estimate_memory

from estimate_support import estimate_json

TOTAL = 6_738_415_616
LAYER = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
LORA = 32 * 2 * 8 * (4096 + 4096)
BLOCKS = 32 * LAYER


@pytest.fixture(scope="module")
def arch():
    return resolve_architecture("meta-llama/Llama-2-7b-hf")


def base(**kw) -> EstimateInputs:
    kw = {"method": "lora", "batch_size": 1, "seq_len": 1024, "lora_r": 8, **kw}
    return EstimateInputs(**kw)


def test_hand_numbers_match_the_catalog(arch):
    assert LAYER == 202_383_360 and LORA == 4_194_304
    assert arch.total_params == TOTAL


def test_zero3_four_ranks(arch):
    one = estimate_memory(base(), arch)
    e = estimate_memory(base(num_gpus=4, zero_stage=3), arch)
    b = e.breakdown
    # weights / 4
    assert b["weights"] == TOTAL * 2 // 4
    # fp32 master + AdamW's two fp32 states of the LoRA parameters, / 4
    assert b["optimizer_states"] == LORA * (4 + 8) // 4
    # one gathered layer + the prefetch bucket (bf16) and the ipg bucket of reduce_bucket_size (bf16)
    assert e.peak_phase == one.peak_phase
    gathered = (LAYER + 50_000_000) * 2 + 500_000_000 * 2
    assert b["transient"] - one.breakdown["transient"] == pytest.approx(gathered, abs=8)
    assert b["activations"] == one.breakdown["activations"]  # per rank, each its own micro-batch
    assert e.sharding == "DeepSpeed ZeRO-3 × 4 ranks"
    assert any(a.startswith("DeepSpeed ZeRO-3 × 4 ranks:") for a in e.assumptions)
    assert e.device_bytes < one.device_bytes


def test_zero1_and_2_partition_what_they_say(arch):
    one = estimate_memory(base(), arch)
    z1 = estimate_memory(base(num_gpus=4, zero_stage=1), arch)
    z2 = estimate_memory(base(num_gpus=4, zero_stage=2), arch)
    for z in (z1, z2):
        assert z.breakdown["weights"] == one.breakdown["weights"]  # parameters not partitioned
        assert z.breakdown["optimizer_states"] == LORA * 12 // 4
    # stage 1 keeps all gradients (fp32 LoRA: 4 B), stage 2 a quarter
    assert z1.breakdown["gradients"] == LORA * 4
    assert z2.breakdown["gradients"] == LORA * 4 // 4


def test_ddp_replicas_add_the_bucket_copy(arch):
    one = estimate_memory(base(), arch)
    e = estimate_memory(base(num_gpus=2), arch)
    assert e.breakdown["weights"] == one.breakdown["weights"]
    assert e.breakdown["optimizer_states"] == one.breakdown["optimizer_states"]
    # DDP's buckets: a flat copy of the LoRA gradients (fp32)
    assert e.breakdown["transient"] - one.breakdown["transient"] == pytest.approx(LORA * 4, abs=4)
    assert e.sharding == "DDP × 2 ranks"


def test_fsdp1_litgpt_mixed_units_with_accumulation(arch):
    """litgpt's FSDPStrategy wraps each Block with its LoRA weights (use_orig_params=True): the
    flat parameter's gradient covers the whole Block, and no_sync accumulates it unsharded."""
    i = base(framework="litgpt", gradient_checkpointing=True)
    e = estimate_memory(replace(i, num_gpus=2, fsdp="full_shard"), arch)
    assert e.breakdown["weights"] == pytest.approx(TOTAL * 2 / 2, abs=2)
    # sharded flat gradients of the blocks (bf16) + the LoRA gradients' shard
    assert e.breakdown["gradients"] >= BLOCKS * 2 // 2
    acc = estimate_memory(replace(i, num_gpus=2, fsdp="full_shard", gradient_accumulation_steps=64), arch)
    assert acc.breakdown["gradients"] == BLOCKS * 2  # unsharded until the sync
    # FSDP2 (per-parameter): frozen weights have no gradient
    v2 = estimate_memory(replace(i, num_gpus=2, fsdp="full_shard", fsdp_version=2), arch)
    assert v2.breakdown["gradients"] < 1e8


def test_fsdp_shard_grad_op_keeps_parameters_gathered(arch):
    i = base(num_gpus=4)
    full = estimate_memory(replace(i, fsdp="full_shard"), arch)
    sgo = estimate_memory(replace(i, fsdp="shard_grad_op"), arch)
    # the rest of the weights stays gathered between forward and backward: 3/4 of them more
    # than FULL_SHARD's two gathered units
    assert sgo.allocated_bytes - full.allocated_bytes > TOTAL * 2 * 3 / 4 - 2 * LAYER * 2 * 2


def test_offload_moves_to_host_ram(arch):
    e = estimate_memory(base(num_gpus=4, zero_stage=3, offload_optimizer=True, offload_param=True), arch)
    assert e.breakdown["weights"] == 0 and e.breakdown["optimizer_states"] == 0
    # host RAM: the parameter partition + fp32 masters, states and fp32 gradients of the LoRA partition
    assert e.host_offload_bytes == pytest.approx(TOTAL * 2 / 4 + LORA * (12 + 4) / 4, abs=8)
    assert e.to_json()["host_offload_bytes"] == e.host_offload_bytes
    assert any("host RAM" in a for a in e.assumptions)


def test_qlora_under_fsdp_needs_quant_storage(arch):
    q = base(method="qlora", quant="nf4", double_quant=True, num_gpus=4, fsdp="full_shard")
    unsharded = estimate_memory(q, arch)
    assert any("bnb_4bit_quant_storage" in a and "not sharded" in a for a in unsharded.assumptions)
    sharded = estimate_memory(replace(q, quant_storage="bfloat16"), arch)
    assert not any("not sharded" in a for a in sharded.assumptions)
    assert sharded.breakdown["weights"] == pytest.approx(unsharded.breakdown["weights"] / 4, rel=1e-6)


def test_flag_path_matches_the_inputs_and_the_single_gpu_estimate():
    argv = ("--model", "meta-llama/Llama-2-7b-hf", "--batch-size", "1", "--seq-len", "1024", "--method", "lora",
            "--rank", "8", "--no-gradient-checkpointing")
    one = estimate_json(*argv)
    z3 = estimate_json(*argv, "--num-gpus", "4", "--zero-stage", "3")
    assert z3["sharding"] == "DeepSpeed ZeRO-3 × 4 ranks" and one["sharding"] == ""
    assert z3["breakdown"]["weights"] == TOTAL * 2 // 4
    assert one["breakdown"]["weights"] == TOTAL * 2
    assert z3["breakdown"]["activations"] == one["breakdown"]["activations"]
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    direct = estimate_memory(base(num_gpus=4, zero_stage=3), arch)
    assert z3["allocated_bytes"] == direct.allocated_bytes
    off = estimate_json(*argv, "--num-gpus", "4", "--zero-stage", "3", "--offload", "both")
    assert off["host_offload_bytes"] > TOTAL * 2 / 4 and off["breakdown"]["weights"] == 0


def test_litgpt_devices_default_to_fsdp():
    e = estimate_json("--model", "meta-llama/Llama-2-7b-hf", "--framework", "litgpt", "--batch-size", "1",
                      "--seq-len", "1304", "--method", "lora", "--num-gpus", "2")
    # litgpt since 2025-08: ModelParallelStrategy (fully_shard per Block, FSDP2), checkpointed
    assert e["sharding"] == "FSDP2 full_shard × 2 ranks"
    assert e["inputs"]["gradient_checkpointing"] is True
    assert any("ModelParallelStrategy" in a for a in e["assumptions"])


def test_zero_and_fsdp_together_is_a_usage_error():
    from click.testing import CliRunner

    from lintlora.estimate.command import estimate_cmd

    r = CliRunner().invoke(estimate_cmd, ["--model", "meta-llama/Llama-2-7b-hf", "--num-gpus", "2",
                                          "--zero-stage", "3", "--fsdp", "full_shard"])
    assert r.exit_code == 2 and "two different shardings" in r.output


def test_litgpt_fsdp_rows_within_15_percent():
    """The published litgpt FSDP per-GPU peaks (tests/data/measured_peaks.csv rows 25, 29, 30, 32:
    lit-gpt 8641822 resource tables, 2 × A100 40GB, torch.cuda.max_memory_allocated, GB = 1e9)
    with the setup lit-gpt ran: FULL_SHARD, checkpointing per Block, global batch 128."""
    rows = {  # model, micro-batch, seq len, measured GB
        25: ("microsoft/phi-1_5", 2, 1044, 5.05), 29: ("stabilityai/stablelm-base-alpha-3b", 4, 1034, 13.45),
        30: ("meta-llama/Llama-2-7b-hf", 1, 1304, 22.18), 32: ("meta-llama/Llama-2-7b-hf", 4, 1304, 23.39)}
    errs = []
    for _row, (model, mb, seq, gb) in rows.items():
        arch = resolve_architecture(model)
        i = EstimateInputs(method="lora", framework="litgpt", batch_size=mb, seq_len=seq, lora_r=8, lora_dropout=0.05,
                           target_modules=("q_proj", "v_proj"), loss_impl="chunked", gradient_checkpointing=True,
                           num_gpus=2, fsdp="full_shard", gradient_accumulation_steps=128 // (mb * 2))
        e = estimate_memory(i, arch)
        errs.append(abs(e.allocated_bytes / 1e9 / gb - 1))
    errs.sort()
    assert (errs[1] + errs[2]) / 2 < 0.15


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "sharding"
SCRIPT = '''from transformers import AutoModelForCausalLM, TrainingArguments, Trainer
from peft import LoraConfig, get_peft_model
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="o", per_device_train_batch_size=1, bf16=True, max_steps=10,
                         deepspeed="ds/zero_stage3_offload_config.json")
Trainer(model=model, args=args, train_dataset=ds).train()
'''


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds").mkdir()
    shutil.copy(FIXTURES / "zero_stage3_offload_config.json", tmp_path / "ds")
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    return p


def test_script_path_reads_the_deepspeed_json(tmp_path):
    script = _project(tmp_path)
    one = estimate_json(str(script))
    # the ranks are set at launch: one GPU, said so
    assert one["sharding"] == "" and one["breakdown"]["weights"] == TOTAL * 2
    assert any("set at launch" in a for a in one["assumptions"])
    z3 = estimate_json(str(script), "--num-gpus", "4")
    assert z3["sharding"] == "DeepSpeed ZeRO-3 × 4 ranks"
    assert not any("set at launch" in a for a in z3["assumptions"])
    # offload_param and offload_optimizer cpu: no weights or states on the GPU
    assert z3["breakdown"]["weights"] == 0 and z3["breakdown"]["optimizer_states"] == 0
    assert z3["host_offload_bytes"] >= TOTAL * 2 // 4
    # "auto" buckets as transformers fills them: hidden² reduce bucket, 0.9·hidden² prefetch
    assert any("16,777,216" in a for a in z3["assumptions"])
    assert z3["device_bytes"] < one["device_bytes"]


def test_the_deepspeed_json_is_an_input_of_the_results_cache(tmp_path):
    # a change to the JSON must re-lint the script that names it (lintlora/cache.py keys a
    # result by the files it read)
    # (returned as data: FileResult.inputs, collected by the engine from the context)
    from lintlora.engine import lint_paths

    script = _project(tmp_path)
    result = lint_paths([str(script)])
    assert str(tmp_path / "ds" / "zero_stage3_offload_config.json") in result.inputs[str(script)]

    # a change to the JSON must re-lint the script that names it: distributed_for returns it
    # among the files read (the run's inputs, which the results cache keys a run by)
    from lintlora.engine import read_setups
    from lintlora.extract.distributed import distributed_for

    (setup,) = read_setups(str(script))
    dist, files, problems = distributed_for(setup, None, root=str(tmp_path))
    assert str(tmp_path / "ds" / "zero_stage3_offload_config.json") in files and not problems
    assert dist.zero_stage.value == 3 and dist.config_path == str(tmp_path / "ds" / "zero_stage3_offload_config.json")


def test_the_estimator_reads_setup_distributed_not_files(tmp_path):
    # the same script, its JSON deleted: the section built before still prices ZeRO-3 offload
    from lintlora.engine import read_setups
    from lintlora.estimate.from_setup import inputs_from_setup
    from lintlora.extract.distributed import distributed_for

    script = _project(tmp_path)
    (setup,) = read_setups(str(script))
    dist, _files, _problems = distributed_for(setup, None, root=str(tmp_path))
    (tmp_path / "ds" / "zero_stage3_offload_config.json").unlink()
    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    inputs, notes = inputs_from_setup(setup.replace(distributed=dist), arch, None)
    assert inputs.zero_stage == 3 and inputs.offload_param and inputs.offload_optimizer
    assert inputs.reduce_bucket_size == 4096 * 4096 and inputs.num_gpus == 1
    bare, _ = inputs_from_setup(setup, arch, None)  # no section: no sharding, no file read
    assert bare.zero_stage == 0
    assert not bare.offload_param


def test_a_deepspeed_path_outside_the_project_is_not_read(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    script = _project(proj)
    outside = tmp_path / "z3.json"
    shutil.copy(FIXTURES / "zero_stage3_offload_config.json", outside)
    script.write_text(SCRIPT.replace("ds/zero_stage3_offload_config.json", "../z3.json"))
    e = estimate_json(str(script), "--num-gpus", "4")
    assert e["sharding"] == "DDP × 4 ranks"
    assert any("outside the project" in a for a in e["assumptions"])


def test_full_finetuning_under_zero3_and_fsdp_no_sync(arch):
    full = base(method="full", num_gpus=8, gradient_checkpointing=True)
    z3 = estimate_memory(replace(full, zero_stage=3), arch)
    # weights / 8 and the fp32 master + two AdamW states of every parameter / 8
    assert z3.breakdown["weights"] == TOTAL * 2 // 8
    assert z3.breakdown["optimizer_states"] == TOTAL * 12 // 8
    # FSDP1 with accumulation under no_sync: the whole model's gradients, unsharded (bf16)
    acc = estimate_memory(replace(full, fsdp="full_shard", gradient_accumulation_steps=4), arch)
    assert acc.breakdown["gradients"] >= TOTAL * 2


CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
LLAMA31_8B = 8_030_261_248  # meta-llama/Llama-3.1-8B's parameter count (safetensors index)


def test_litgpt_devices_in_the_config_shard_over_them():
    e = estimate_json(str(CONFIGS / "good" / "litgpt_multi_gpu.yaml"))  # devices: 4
    assert e["sharding"] == "FSDP2 full_shard × 4 ranks"
    assert e["breakdown"]["weights"] == LLAMA31_8B * 2 // 4


def test_torchtune_distributed_header_gives_the_ranks():
    # "# tune run --nproc_per_node 2 lora_finetune_distributed --config llama3_1/8B_lora"
    e = estimate_json(str(CONFIGS / "torchtune" / "llama3_1__8B_lora.yaml"))
    assert e["sharding"] == "FSDP2 full_shard × 2 ranks"
    assert e["breakdown"]["weights"] == LLAMA31_8B * 2 // 2


def test_the_world_size_comes_from_setup_distributed():
    from lintlora.engine import read_setups
    from lintlora.estimate.from_setup import inputs_from_setup
    from lintlora.training_setup import Distributed, Origin, Setting, Span

    (setup,) = read_setups(str(CONFIGS / "good" / "litgpt_multi_gpu.yaml"))
    arch = resolve_architecture("meta-llama/Llama-3.1-8B")
    where = Span("/proj/run.sh", 3)
    d = Distributed(backend=Setting("deepspeed", Origin.LAUNCH, where), world_size=Setting(8, Origin.LAUNCH, where),
                    zero_stage=Setting(2, Origin.CONFIG_FILE, Span("/proj/ds.json", 4)),
                    offload_optimizer=Setting("nvme", Origin.CONFIG_FILE, Span("/proj/ds.json", 5)),
                    reduce_bucket_size=Setting(200_000_000, Origin.CONFIG_FILE, Span("/proj/ds.json", 6)))
    inputs, notes = inputs_from_setup(setup.replace(distributed=d), arch, None)
    # the section, not the config's devices: 4 evidence, decides
    assert (inputs.num_gpus, inputs.zero_stage, inputs.offload_optimizer) == (8, 2, True)
    assert inputs.reduce_bucket_size == 200_000_000 and not inputs.fsdp
    assert any("ZeRO-2" in n and "offload_optimizer nvme" in n for n in notes)
    one = Distributed(backend=Setting("single", Origin.LAUNCH, where), world_size=Setting(1, Origin.LAUNCH, where))
    inputs, _ = inputs_from_setup(setup.replace(distributed=one), arch, None)
    assert inputs.num_gpus == 1


def test_num_gpus_flag_overrides_the_files_world_size():
    e = estimate_json(str(CONFIGS / "good" / "litgpt_multi_gpu.yaml"), "--num-gpus", "2")  # devices: 4
    assert e["sharding"] == "FSDP2 full_shard × 2 ranks"
    assert e["breakdown"]["weights"] == LLAMA31_8B * 2 // 2


RUN_SH = "#!/bin/bash\nset -e\ntorchrun --nproc_per_node 4 train.py --model_name_or_path meta-llama/Llama-2-7b-hf \\\n  --deepspeed ds/zero_stage3_offload_config.json --bf16 True\n"


def test_estimate_finds_the_launch_beside_the_script(tmp_path):
    # the acceptance run: run.sh (torchrun 4 GPUs, a ZeRO-3 JSON) beside the script
    script = _project(tmp_path)
    script.write_text(SCRIPT.replace(',\n                         deepspeed="ds/zero_stage3_offload_config.json"', ""))
    assert "deepspeed" not in script.read_text()
    (tmp_path / "run.sh").write_text(RUN_SH)
    e = estimate_json(str(script))
    assert e["sharding"] == "DeepSpeed ZeRO-3 × 4 ranks"
    assert any(a.startswith("launched by run.sh:3 (torchrun)") for a in e["assumptions"])
    assert e["breakdown"]["weights"] == 0  # offload_param cpu
    # a launch of another file is not this one's
    (tmp_path / "run.sh").write_text(RUN_SH.replace("train.py", "other.py"))
    e = estimate_json(str(script))
    assert e["sharding"] == "" and not any(a.startswith("launched by") for a in e["assumptions"])
