"""The run's distribution (lintlora/extract/distributed.py, issue 15 item 3): each source (the
launcher's flags, the accelerate config YAML, the DeepSpeed JSON, ``fsdp=``/``fsdp_config=``,
axolotl / LLaMA-Factory / torchtune / litgpt keys), their precedence, the line of every value,
``"auto"`` kept, and hostile files (huge, binary, deeply nested, outside the project, a link
out of it) as problems with a place, never an exception.

Expected values are read from the files the tests write (line numbers searched in the text),
and the precedence from accelerate ``commands/launch.py`` ``_validate_launch_command``
(huggingface/accelerate@16cb6eb8): flags over the config file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lintlora.engine import read_setups
from lintlora.extract.distributed import distributed_for, parse_fsdp_option
from lintlora.extract.launch import discover_launches
from lintlora.training_setup import Origin, TrainingSetup

SCRIPT = '''from transformers import AutoModelForCausalLM, TrainingArguments, Trainer
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments(output_dir="o", per_device_train_batch_size=1, bf16=True{extra})
Trainer(model=model, args=args, train_dataset=ds).train()
'''

DS_Z3 = """{
  "bf16": {"enabled": "auto"},
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": 4,
  "gradient_clipping": 1.0,
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "cpu"},
    "offload_param": {"device": "none"},
    "overlap_comm": true,
    "reduce_bucket_size": "auto",
    "stage3_prefetch_bucket_size": 50000000
  }
}
"""


def _line(text: str, needle: str) -> int:
    for n, line in enumerate(text.split("\n"), start=1):
        if needle in line:
            return n
    raise AssertionError(needle)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _run(root: Path, script: str = "train.py", launch_file: str | None = "run.sh", index: int = 0):
    (setup,) = read_setups(str(root / script))
    launch = None
    if launch_file is not None:
        found = discover_launches([str(root / launch_file)], root=str(root))
        assert not found.problems, found.problems
        launch = found.launches[index]
    return distributed_for(setup, launch, root=str(root))


# ---- the launcher ----------------------------------------------------------------------------------

def test_torchrun_processes_times_nodes_is_the_world_size(tmp_path):
    run = "#!/bin/bash\necho start\ntorchrun --nproc_per_node 4 --nnodes 2 train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    d, files, problems = _run(root)
    assert d.world_size.value == 8 and d.world_size.origin is Origin.LAUNCH
    assert d.world_size.span.path.endswith("run.sh") and d.world_size.span.line == 3
    assert d.backend.value == "ddp" and not problems and files == ()
    assert "run.sh:3" in d.world_size.source


def test_nproc_gpu_counts_the_visible_devices(tmp_path):
    run = "CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node gpu train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    d, _, _ = _run(root)
    assert d.world_size.value == 3 and d.backend.value == "ddp"


def test_llamafactory_cli_runs_one_process_per_visible_gpu(tmp_path):
    lf = "model_name_or_path: x/y\nstage: sft\nfinetuning_type: lora\n"
    run = "CUDA_VISIBLE_DEVICES=0,1 llamafactory-cli train lf.yaml\nNPROC_PER_NODE=4 llamafactory-cli train lf.yaml\n"
    root = _project(tmp_path, {"lf.yaml": lf, "run.sh": run})
    assert _run(root, script="lf.yaml")[0].world_size.value == 2
    assert _run(root, script="lf.yaml", index=1)[0].world_size.value == 4


def test_plain_python_is_one_process(tmp_path):
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": "python train.py\n"})
    d, _, _ = _run(root)
    assert d.backend.value == "single" and d.world_size.value == 1


def test_no_launch_and_no_config_is_none(tmp_path):
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra="")})
    assert _run(root, launch_file=None) == (None, (), ())


def test_deepspeed_launcher_num_gpus_nodes_and_include(tmp_path):
    run = ("deepspeed --num_gpus 2 --num_nodes 2 train.py\n"
           "deepspeed --include localhost:0,1,2 train.py\n")
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    d, _, _ = _run(root)
    assert d.backend.value == "deepspeed" and d.world_size.value == 4
    d2, _, _ = _run(root, index=1)
    assert d2.world_size.value == 3 and d2.world_size.span.line == 2
    (root / "run.sh").write_text("deepspeed --hostfile hosts.txt --num_gpus 8 train.py\n")
    d3, _, _ = _run(root)
    assert not d3.world_size.known and any("hostfile" in n for n in d3.extra["notes"].value)


@pytest.mark.parametrize("spelling", ["--num_processes 4 --use_deepspeed --zero_stage 2 "
                                      "--offload_optimizer_device cpu --mixed_precision bf16",
                                      "--num-processes 4 --use_deepspeed --zero-stage 2 "
                                      "--offload-optimizer-device cpu --mixed-precision=bf16"])
def test_accelerate_flags_in_both_spellings(tmp_path, spelling):
    # accelerate/commands/utils.py _StoreAction: every --a_b option is also --a-b
    run = f"accelerate launch {spelling} train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    d, _, _ = _run(root)
    assert d.backend.value == "deepspeed" and d.world_size.value == 4
    assert d.zero_stage.value == 2 and d.zero_stage.origin is Origin.LAUNCH
    assert d.offload_optimizer.value == "cpu" and d.mixed_precision.value == "bf16"
    # no --config_file: accelerate would read ~/.cache/...; never read, said so
    assert any("default config" in n for n in d.extra["notes"].value)


def test_accelerate_fsdp_flags(tmp_path):
    run = ("accelerate launch --use_fsdp --num_processes 2 --fsdp_sharding_strategy SHARD_GRAD_OP "
           "--fsdp_version 1 --fsdp_offload_params true --fsdp_activation_checkpointing true train.py\n")
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    d, _, _ = _run(root)
    assert (d.backend.value, d.fsdp_sharding_strategy.value, d.fsdp_version.value) == ("fsdp", "SHARD_GRAD_OP", 1)
    assert d.fsdp_offload_params.value is True and d.fsdp_activation_checkpointing.value is True


# ---- the accelerate config, and precedence ------------------------------------------------------------

ACC_FSDP = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_processes: 8
num_machines: 1
mixed_precision: fp16
fsdp_config:
  fsdp_sharding_strategy: 2
  fsdp_version: 1
  fsdp_offload_params: false
  fsdp_activation_checkpointing: true
  fsdp_cpu_ram_efficient_loading: true
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
"""


def test_accelerate_config_values_and_their_lines(tmp_path):
    run = "accelerate launch --config_file configs/fsdp.yaml train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "configs/fsdp.yaml": ACC_FSDP})
    d, files, problems = _run(root)
    cfg = str(root / "configs" / "fsdp.yaml")
    assert files == (cfg,) and not problems and d.accelerate_config == cfg
    assert d.backend.value == "fsdp" and d.backend.span.line == _line(ACC_FSDP, "distributed_type")
    assert d.world_size.value == 8 and d.world_size.origin is Origin.CONFIG_FILE
    # older accelerate wrote the strategy as its 1-based index in FSDP_SHARDING_STRATEGY
    assert d.fsdp_sharding_strategy.value == "SHARD_GRAD_OP"
    assert d.fsdp_sharding_strategy.span.line == _line(ACC_FSDP, "fsdp_sharding_strategy")
    assert d.fsdp_cpu_ram_efficient_loading.value is True and d.mixed_precision.value == "fp16"
    assert d.extra["fsdp_transformer_layer_cls_to_wrap"].value == "LlamaDecoderLayer"
    assert d.extra["fsdp_transformer_layer_cls_to_wrap"].span.line == _line(ACC_FSDP, "cls_to_wrap")


def test_accelerate_flags_override_the_config_file(tmp_path):
    run = ("accelerate launch --config_file fsdp.yaml --num_processes 2 --mixed_precision bf16 "
           "--fsdp_sharding_strategy FULL_SHARD train.py\n")
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "fsdp.yaml": ACC_FSDP})
    d, _, _ = _run(root)
    assert d.world_size.value == 2 and d.world_size.origin is Origin.LAUNCH
    assert d.mixed_precision.value == "bf16" and d.fsdp_sharding_strategy.value == "FULL_SHARD"
    assert d.fsdp_version.value == 1  # not on the command line: the config's
    # a distributed flag on the command line replaces the config's distributed_type
    run2 = "accelerate launch --config_file fsdp.yaml --multi_gpu train.py\n"
    (root / "run.sh").write_text(run2)
    d2, _, _ = _run(root)
    assert d2.backend.value == "ddp" and d2.world_size.value == 8


def test_accelerate_deepspeed_config_names_a_json(tmp_path):
    acc = ("distributed_type: DEEPSPEED\nnum_processes: 4\ndeepspeed_config:\n"
           "  deepspeed_config_file: ds/z3.json\n  zero3_init_flag: true\n")
    run = "accelerate launch --config_file acc.yaml train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "acc.yaml": acc,
                               "ds/z3.json": DS_Z3})
    d, files, _ = _run(root)
    assert str(root / "ds" / "z3.json") in files and d.config_path == str(root / "ds" / "z3.json")
    assert d.zero_stage.value == 3 and d.zero_stage.span.line == _line(DS_Z3, '"stage"')
    assert d.world_size.value == 4 and d.extra["zero3_init_flag"].value is True


def test_accelerate_config_zero_stage_and_the_json_explicit_value_wins(tmp_path):
    acc = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  offload_optimizer_device: none\n"
    run = "accelerate launch --config_file acc.yaml --num_processes 4 train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "acc.yaml": acc})
    d, _, _ = _run(root)
    assert d.zero_stage.value == 2 and d.offload_optimizer.value == "none"
    # the Trainer's deepspeed= JSON: its explicit stage is what DeepSpeed uses
    root2 = _project(tmp_path / "b", {"train.py": SCRIPT.format(extra=', deepspeed="ds/z3.json"'),
                                      "run.sh": run, "acc.yaml": acc, "ds/z3.json": DS_Z3})
    d2, _, _ = _run(root2)
    assert d2.zero_stage.value == 3 and d2.zero_stage.origin is Origin.CONFIG_FILE
    assert d2.offload_optimizer.value == "cpu" and d2.config_path.endswith("z3.json")


def test_the_trainers_deepspeed_json_wins_over_the_launchers(tmp_path):
    z2 = DS_Z3.replace('"stage": 3', '"stage": 2')
    run = "accelerate launch --use_deepspeed --deepspeed_config_file z2.json --num_processes 2 train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="z3.json"'), "run.sh": run,
                               "z3.json": DS_Z3, "z2.json": z2})
    d, files, _ = _run(root)
    assert d.zero_stage.value == 3 and files == (str(root / "z3.json"),)
    root2 = _project(tmp_path / "b", {"train.py": SCRIPT.format(extra=""), "run.sh": run, "z2.json": z2})
    d2, _, _ = _run(root2)
    assert d2.zero_stage.value == 2


# ---- the DeepSpeed JSON ---------------------------------------------------------------------------------

def test_deepspeed_json_values_lines_and_auto(tmp_path):
    run = "torchrun --nproc_per_node 4 train.py --deepspeed ds_z3.json\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "ds_z3.json": DS_Z3})
    d, files, problems = _run(root)
    assert not problems and files == (str(root / "ds_z3.json"),)
    assert d.backend.value == "deepspeed" and d.world_size.value == 4
    for name, value, needle in (("zero_stage", 3, '"stage"'), ("offload_optimizer", "cpu", '"offload_optimizer"'),
                                ("offload_param", "none", '"offload_param"'), ("overlap_comm", True, "overlap_comm"),
                                ("reduce_bucket_size", "auto", "reduce_bucket_size"),
                                ("prefetch_bucket_size", 50_000_000, "prefetch_bucket_size"),
                                ("gradient_accumulation_steps", 4, "gradient_accumulation_steps"),
                                ("gradient_clipping", 1.0, "gradient_clipping"),
                                ("train_micro_batch_size_per_gpu", "auto", "micro_batch"),
                                ("mixed_precision", "auto", '"bf16"')):
        s = getattr(d, name)
        assert s.value == value, name
        assert s.origin is Origin.CONFIG_FILE and s.span.path == str(root / "ds_z3.json")
        assert s.span.line == _line(DS_Z3 if not name.startswith("offload_o") else DS_Z3, needle), name


def test_an_explicit_value_of_another_source_beats_a_json_auto(tmp_path):
    run = "accelerate launch --use_deepspeed --mixed_precision fp16 --num_processes 2 train.py --deepspeed ds.json\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "ds.json": DS_Z3})
    d, _, _ = _run(root)
    assert d.mixed_precision.value == "fp16" and d.mixed_precision.origin is Origin.LAUNCH
    on = DS_Z3.replace('"bf16": {"enabled": "auto"}', '"bf16": {"enabled": true}')
    (root / "ds.json").write_text(on)
    d2, _, _ = _run(root)
    assert d2.mixed_precision.value == "bf16" and d2.mixed_precision.origin is Origin.CONFIG_FILE


def test_deepspeed_dict_in_the_script(tmp_path):
    extra = ', deepspeed={"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": "auto"}'
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=extra)})
    d, files, _ = _run(root, launch_file=None)
    assert d.zero_stage.value == 2 and d.zero_stage.origin is Origin.LITERAL
    assert d.zero_stage.span.line == 3 and d.config_path is None and files == ()
    assert d.gradient_accumulation_steps.value == "auto" and d.world_size.known is False


@pytest.mark.parametrize("stage", ["5", "-1", '"three"', "true"])
def test_a_stage_out_of_range_is_a_problem_with_its_line(tmp_path, stage):
    bad = DS_Z3.replace('"stage": 3', f'"stage": {stage}')
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="ds.json"'), "ds.json": bad})
    d, _, problems = _run(root, launch_file=None)
    assert not d.zero_stage.known
    (p,) = [p for p in problems if "stage" in p.message]
    assert p.path == str(root / "ds.json") and p.line == _line(bad, '"stage"')


# ---- TrainingArguments fsdp= / fsdp_config= --------------------------------------------------------------

def test_fsdp_option_string_and_config_dict_with_or_without_prefix(tmp_path):
    extra = (', fsdp="full_shard auto_wrap offload", fsdp_config={"fsdp_activation_checkpointing": True, '
             '"version": 2, "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}')
    run = "torchrun --nproc_per_node 2 train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=extra), "run.sh": run})
    d, _, _ = _run(root)
    assert (d.backend.value, d.fsdp_sharding_strategy.value, d.world_size.value) == ("fsdp", "FULL_SHARD", 2)
    assert d.fsdp_offload_params.value is True and d.fsdp_version.value == 2
    assert d.fsdp_activation_checkpointing.value is True and d.fsdp_activation_checkpointing.span.line == 3
    assert parse_fsdp_option(True)[0] == "FULL_SHARD"
    assert parse_fsdp_option(["shard_grad_op", "auto_wrap"])[:2] == ("SHARD_GRAD_OP", False)
    assert parse_fsdp_option("hybrid_shard_zero2")[0] == "HYBRID_SHARD_ZERO2"


def test_fsdp_config_json_path(tmp_path):
    fc = '{\n  "fsdp_version": 2,\n  "reshard_after_forward": false\n}\n'
    extra = ', fsdp="full_shard", fsdp_config="fsdp.json"'
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=extra), "fsdp.json": fc})
    d, files, _ = _run(root, launch_file=None)
    assert files == (str(root / "fsdp.json"),)
    assert d.fsdp_version.value == 2 and d.fsdp_version.span.line == 2
    # FSDP2 reshard_after_forward False: parameters stay gathered to backward (SHARD_GRAD_OP)
    assert d.fsdp_sharding_strategy.value == "SHARD_GRAD_OP" and d.fsdp_sharding_strategy.span.line == 3


# ---- dialects --------------------------------------------------------------------------------------------

AXOLOTL = """base_model: meta-llama/Llama-3.1-8B
adapter: lora
lora_r: 16
micro_batch_size: 2
sequence_len: 2048
fsdp:
  - full_shard
  - auto_wrap
fsdp_version: 2
fsdp_config:
  offload_params: true
  activation_checkpointing: true
"""


def test_axolotl_fsdp_list_config_and_version(tmp_path):
    run = "accelerate launch --num_processes 4 -m axolotl.cli.train cfg.yml\n"
    root = _project(tmp_path, {"cfg.yml": AXOLOTL, "run.sh": run})
    d, files, _ = _run(root, script="cfg.yml")
    assert d.backend.value == "fsdp" and d.fsdp_sharding_strategy.value == "FULL_SHARD"
    assert d.fsdp_version.value == 2 and d.fsdp_version.span.line == _line(AXOLOTL, "fsdp_version")
    assert d.fsdp_offload_params.value is True and d.fsdp_offload_params.span.line == _line(AXOLOTL, "offload_params")
    assert d.world_size.value == 4 and str(root / "cfg.yml") in files


def test_axolotl_and_llama_factory_deepspeed_keys(tmp_path):
    ax = "base_model: x/y\nadapter: lora\ndeepspeed: deepspeed_configs/zero3.json\n"
    lf = ("model_name_or_path: x/y\nstage: sft\nfinetuning_type: lora\n"
          "deepspeed: examples/deepspeed/ds_z3_config.json\n")
    root = _project(tmp_path, {"ax.yml": ax, "lf.yaml": lf, "deepspeed_configs/zero3.json": DS_Z3,
                               "examples/deepspeed/ds_z3_config.json": DS_Z3})
    for name in ("ax.yml", "lf.yaml"):
        d, files, problems = _run(root, script=name, launch_file=None)
        assert d.zero_stage.value == 3 and d.backend.value == "deepspeed" and not problems, name
        assert not d.world_size.known  # set at launch


TUNE = "output_dir: /tmp/o\nmodel:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n" \
       "fsdp_cpu_offload: false\nenable_activation_checkpointing: true\n"


def test_torchtune_distributed_recipe_from_the_launch(tmp_path):
    run = "tune run --nproc_per_node 2 lora_finetune_distributed --config cfg.yaml\n"
    root = _project(tmp_path, {"cfg.yaml": TUNE, "run.sh": run})
    d, _, _ = _run(root, script="cfg.yaml")
    assert (d.backend.value, d.fsdp_version.value, d.world_size.value) == ("fsdp", 2, 2)
    assert d.fsdp_offload_params.value is False and d.fsdp_activation_checkpointing.value is True
    single = "tune run lora_finetune_single_device --config cfg.yaml\n"
    (root / "run.sh").write_text(single)
    d2, _, _ = _run(root, script="cfg.yaml")
    assert (d2.backend.value, d2.world_size.value) == ("single", 1)


def test_torchtune_header_and_litgpt_devices_without_a_launch():
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
    (tt,) = read_setups(str(fixtures / "torchtune" / "llama3_1__8B_lora.yaml"))
    d, _, _ = distributed_for(tt, None, root=str(fixtures))
    assert (d.backend.value, d.world_size.value, d.fsdp_version.value) == ("fsdp", 2, 2)
    (lg,) = read_setups(str(fixtures / "good" / "litgpt_multi_gpu.yaml"))
    d, _, _ = distributed_for(lg, None, root=str(fixtures))
    assert (d.backend.value, d.world_size.value) == ("fsdp", 4)
    assert d.world_size.span.line == 5 and d.fsdp_activation_checkpointing.value is True


def test_litgpt_devices_on_the_command_line(tmp_path):
    cfg = "checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf\nlora_r: 8\n"
    run = "litgpt finetune_lora --config cfg.yaml --devices 2\n"
    root = _project(tmp_path, {"cfg.yaml": cfg, "run.sh": run})
    d, _, _ = _run(root, script="cfg.yaml")
    assert d.world_size.value == 2 and d.world_size.origin is Origin.LAUNCH and d.backend.value == "fsdp"


# ---- hostile files -----------------------------------------------------------------------------------

@pytest.mark.parametrize("content, needle", [
    ('{"a": ' * 200 + "1" + "}" * 200, "deeper"),
    ("[" * 100_000 + "]" * 100_000, ""),
    ('{"zero_optimization": {"stage": 3,}', ""),
    ("\x00\x01binary\xff", ""),
])
def test_bad_json_is_a_problem_with_a_place(tmp_path, content, needle):
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="ds.json"')})
    (root / "ds.json").write_bytes(content.encode("utf-8", "surrogateescape") if "\xff" not in content
                                   else b"\x00\x01binary\xff")
    d, files, problems = _run(root, launch_file=None)
    assert files == (str(root / "ds.json"),) and len(problems) == 1
    assert problems[0].path == str(root / "ds.json") and needle in problems[0].message
    assert d is None or not d.zero_stage.known


def test_a_huge_json_is_refused_before_reading(tmp_path):
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="ds.json"')})
    (root / "ds.json").write_text('{"a": "' + "x" * (2 << 20) + '"}')
    _, _, (p,) = _run(root, launch_file=None)
    assert p.code == "LL998" and "limit" in p.message


def test_outside_the_project_and_a_link_out_of_it_are_not_read(tmp_path):
    (tmp_path / "z3.json").write_text(DS_Z3)
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="../z3.json"')})
    d, _, (p,) = _run(root, launch_file=None)
    assert "outside the project" in p.message and p.path == str(root / "train.py") and p.line == 3
    assert d is None or not d.zero_stage.known
    os.symlink(tmp_path / "z3.json", root / "link.json")
    (root / "train.py").write_text(SCRIPT.format(extra=', deepspeed="link.json"'))
    d, _, (p,) = _run(root, launch_file=None)
    assert "outside the project" in p.message and (d is None or not d.zero_stage.known)
    # a link inside the project to a file inside it is read
    (root / "real.json").write_text(DS_Z3)
    os.symlink(root / "real.json", root / "in.json")
    (root / "train.py").write_text(SCRIPT.format(extra=', deepspeed="in.json"'))
    d, _, problems = _run(root, launch_file=None)
    assert d.zero_stage.value == 3 and not problems


def test_an_accelerate_config_outside_the_project_and_a_missing_one(tmp_path):
    (tmp_path / "acc.yaml").write_text(ACC_FSDP)
    run = "accelerate launch --config_file ../acc.yaml train.py\naccelerate launch --config_file gone.yaml train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run})
    _, _, (p,) = _run(root)
    assert "outside the project" in p.message and p.path == str(root / "run.sh") and p.line == 1
    # a missing one is no problem of the input: its settings are unknown, said in the notes
    dist, files, problems = _run(root, index=1)
    assert files == (str(root / "gone.yaml"),) and problems == ()
    notes = dist.extra["notes"].value if dist is not None and "notes" in dist.extra else ()
    assert any("gone.yaml not found" in n for n in notes), notes


def test_a_yaml_bomb_in_the_accelerate_config_is_a_problem(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi")) + "distributed_type: FSDP\n"
    run = "accelerate launch --config_file acc.yaml train.py\n"
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=""), "run.sh": run, "acc.yaml": bomb})
    d, _, (p,) = _run(root)
    assert p.code == "LL998" and "alias" in p.message and p.path == str(root / "acc.yaml")
    assert not d.backend.known and not d.world_size.known  # an accelerate launch: unknown, not guessed


def test_a_named_pipe_or_a_folder_is_not_read(tmp_path):
    root = _project(tmp_path, {"train.py": SCRIPT.format(extra=', deepspeed="ds.json"')})
    os.mkfifo(root / "ds.json")  # a read would block: refused from fstat, never read
    _, _, (p,) = _run(root, launch_file=None)
    assert "not a regular file" in p.message and p.path == str(root / "ds.json")
    os.remove(root / "ds.json")
    (root / "ds.json").mkdir()
    _, _, (p,) = _run(root, launch_file=None)
    assert p.path == str(root / "ds.json") and "cannot be read" in p.message


def test_a_setup_built_by_hand_with_no_path_and_a_root_is_safe(tmp_path):
    setup = TrainingSetup(path=str(tmp_path / "missing.py"))
    assert distributed_for(setup, None, root=str(tmp_path)) == (None, (), ())


def test_the_json_is_valid_json_for_the_test_itself():
    assert json.loads(DS_Z3)["zero_optimization"]["stage"] == 3
