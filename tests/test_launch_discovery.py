"""Launch discovery (issue 15, item 1): lintlora.extract.launch finds the commands that start
training in run scripts, Makefiles, Procfiles, sbatch scripts and workflow ``run:`` steps, and
never runs any of them.

Real files are under fixtures/launch/ (sources in its README). Expected values are read from the
fixture text independently (``shlex`` on the joined command, line numbers found by searching),
or written out by hand from the shell's rules in the test.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import shlex
import shutil
import subprocess
import time

import pytest

from lintlora.extract.launch import discover_launches, launch_file_kind, launches_in_text
from lintlora.extract.launch_model import MAX_LOOP_VALUES, Launch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures", "launch")


def _fixture(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _line_of(path: str, needle: str, start: int = 1) -> int:
    for number, line in enumerate(_text(path).split("\n"), start=1):
        if number >= start and needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def _one(text: str, path: str = "/proj/run.sh", kind: str | None = None) -> Launch:
    found = launches_in_text(text, path, kind)
    assert not found.problems, found.problems
    assert len(found.launches) == 1, found.launches
    return found.launches[0]


def _texts(values) -> list:
    return [v.text for v in values]


def _repo(tmp_path, files: dict[str, str]) -> str:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(root)


# --- real launch files ------------------------------------------------------------------------

def test_qlora_script_every_argument_as_shlex_reads_it():
    path = _fixture("qlora", "finetune_guanaco_7b.sh")
    launch = _one(_text(path), path)
    expected = shlex.split(_text(path).replace("\\\n", " "))
    assert expected[:2] == ["python", "qlora.py"]
    assert launch.launcher == "python" and launch.entry.text == "qlora.py"
    assert _texts(launch.argv) == expected[2:]
    assert all(v.origin == "literal" for v in launch.argv)
    assert launch.line == 1
    # each argument keeps its own line: --seed 0 is on the last line of the command
    assert launch.argv[-1].line == _line_of(path, "--seed 0")


def test_llamafactory_fsdp_qlora_accelerate_with_visible_devices(tmp_path):
    root = _repo(tmp_path, {
        "examples/extras/fsdp_qlora/train.sh":
            _text(_fixture("llamafactory", "examples", "extras", "fsdp_qlora", "train.sh")),
        "src/train.py": "print()\n",
        "examples/accelerate/fsdp_config.yaml": "distributed_type: FSDP\n",
        "examples/extras/fsdp_qlora/llama3_lora_sft.yaml": "model_name_or_path: x\n",
    })
    script = os.path.join(root, "examples/extras/fsdp_qlora/train.sh")
    found = discover_launches([script])
    assert not found.problems
    (launch,) = found.launches
    line = _line_of(script, "CUDA_VISIBLE_DEVICES=0,1 accelerate launch")
    assert (launch.launcher, launch.line) == ("accelerate", line)
    assert launch.visible_gpus.value == 2 and launch.visible_gpus.source == "CUDA_VISIBLE_DEVICES"
    assert launch.visible_gpus.line == line
    assert [(e.name, e.value.text, e.prefix) for e in launch.env] == [
        ("CUDA_VISIBLE_DEVICES", "0,1", True)]
    # the script runs from its caller's folder; the files it names exist at the repository
    # root, so that is where they are found (the script's own folder holds none of them)
    assert launch.workdir is None
    assert launch.entry_path == os.path.join(os.path.realpath(root), "src", "train.py")
    roles = {(c.role, c.option): c.path for c in launch.configs}
    assert roles[("accelerate", "--config_file")] == os.path.join(
        os.path.realpath(root), "examples", "accelerate", "fsdp_config.yaml")
    assert roles[("argument", None)] == os.path.join(
        os.path.realpath(root), "examples", "extras", "fsdp_qlora", "llama3_lora_sft.yaml")
    assert found.files_read == (os.path.abspath(script),)


def test_llamafactory_cli_variable_from_the_script():
    path = _fixture("llamafactory", "examples", "train_lora", "qwen3_lora_sft.sh")
    launch = _one(_text(path), path)
    assert (launch.launcher, launch.subcommand) == ("llamafactory", "train")
    argv = _texts(launch.argv)
    model = argv[argv.index("--model_name_or_path") + 1]
    assert model == "Qwen/Qwen3-4B-Instruct-2507"
    value = launch.argv[argv.index("--model_name_or_path") + 1]
    assert value.origin == "variable" and value.raw == "${MODEL_PATH}"
    assert value.assigned_line == _line_of(path, "MODEL_PATH=")
    # the rest is literal: what shlex reads once ${MODEL_PATH} is written out
    joined = _text(path).replace("\\\n", " ").replace("${MODEL_PATH}", model)
    tail = shlex.split(joined[joined.index("llamafactory-cli"):])
    assert argv == tail[2:]


def test_torchtune_sbatch_tune_run_and_the_slurm_request():
    path = _fixture("torchtune", "gsm8k_sft.sbatch")
    assert launch_file_kind(path, _text(path)) == "sbatch"
    launch = _one(_text(path), path)
    assert launch.source_kind == "sbatch" and launch.launcher == "tune"
    assert launch.line == _line_of(path, "srun tune run")
    assert launch.module == "full_finetune_distributed"
    assert launch.processes_per_node.value == 8
    assert launch.processes_per_node.line == _line_of(path, "--nproc_per_node 8")
    assert launch.nodes.value == 1
    assert [(c.role, c.value.text) for c in launch.configs] == [("torchtune", "dev/3B_sft_for_grpo")]
    # "$@": the arguments given to the batch script, unknown
    assert launch.argv[-1].text is None and launch.argv[-1].raw == '"$@"'
    slurm = launch.slurm
    assert (slurm.nodes.value, slurm.ntasks_per_node.value, slurm.gpus_per_node.value) == (1, 1, 8)
    assert slurm.gpus_per_node.line == _line_of(path, "#SBATCH --gpus-per-node=8")


def test_accelerate_slurm_example_variables_after_source_are_unknown():
    path = _fixture("accelerate", "submit_multigpu.sh")
    launch = _one(_text(path), path)
    assert launch.launcher == "accelerate"
    # GPUS_PER_NODE is exported after `source activateEnvironment.sh`: known
    assert launch.processes.value == 4 and launch.processes.source == "--num_processes"
    # ACCELERATE_DIR is only ${ACCELERATE_DIR:-/accelerate}, after the source: the sourced
    # file may set it, so the script path is unknown, not "/accelerate/..."
    assert launch.entry.text is None and "source activateEnvironment.sh" in launch.entry.note
    assert launch.slurm.gpus_per_node.value == 4
    assert launch.slurm.gpus_per_node.source == "#SBATCH --gres"


def test_commands_built_from_unknown_parts_are_not_guessed():
    # `srun $CMD` where CMD holds $((SLURM_NNODES * GPUS_PER_NODE)); `bash -c "$LAUNCHER ..."`
    for path in (_fixture("accelerate", "submit_multinode_fsdp.sh"),
                 _fixture("philschmid", "launch.slurm")):
        found = launches_in_text(_text(path), path)
        assert found.launches == () and found.problems == (), path


def test_peft_makefile_recipes():
    path = _fixture("peft", "Makefile")
    found = launches_in_text(_text(path), path)
    assert not found.problems
    expected = [(n, line.strip()) for n, line in enumerate(_text(path).split("\n"), start=1)
                if line.startswith("\taccelerate launch")]
    assert len(expected) == 10
    assert [(l.line, l.launcher) for l in found.launches] == [(n, "accelerate") for n, _ in expected]
    for launch, (_, line) in zip(found.launches, expected):
        words = shlex.split(line)
        assert launch.configs[0].role == "accelerate"
        assert launch.configs[0].value.text == words[3]
        assert launch.entry.text == words[4] and _texts(launch.argv) == words[5:]
        # make runs a recipe in the Makefile's folder
        assert launch.entry_path == os.path.join(os.path.dirname(path), words[4])
    # `python -m pytest ...` is not a training launch
    assert all(l.module != "pytest" for l in found.launches)


def test_workflow_run_steps_with_job_env_and_working_directory():
    path = _fixture("workflow", ".github", "workflows", "run_merge_tests.yml")
    assert launch_file_kind(path) == "workflow"
    found = launches_in_text(_text(path), path)
    assert not found.problems
    lines = [n for n, line in enumerate(_text(path).split("\n"), start=1)
             if "python utils/log_reports.py" in line]
    assert [l.line for l in found.launches] == lines
    repo = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    for launch in found.launches:
        assert launch.entry.text == "utils/log_reports.py"
        assert launch.workdir == os.path.join(repo, "accelerate")  # working-directory: accelerate
    first = found.launches[0]
    assert first.visible_gpus.value == 1  # the job's env: CUDA_VISIBLE_DEVICES: "0"
    assert first.visible_gpus.line == _line_of(path, 'CUDA_VISIBLE_DEVICES: "0"')
    assert {"TESTING_MOCKED_DATALOADERS", "IS_GITHUB_CI"} <= {e.name for e in first.env}


# --- launchers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "torchrun --nproc_per_node 4 --nnodes 2 train.py --lr 1e-4",
    "torchrun --nproc-per-node=4 --nnodes=2 train.py --lr 1e-4",
    "python -m torch.distributed.run --nproc_per_node=4 --nnodes 2 train.py --lr 1e-4",
    "python3 -m torch.distributed.launch --use_env --nproc_per_node 4 --nnodes 2 train.py --lr 1e-4",
])
def test_torchrun_forms(command):
    launch = _one(command + "\n")
    assert launch.launcher == "torchrun" and launch.entry.text == "train.py"
    assert (launch.processes_per_node.value, launch.nodes.value) == (4, 2)
    assert _texts(launch.argv) == ["--lr", "1e-4"]


def test_torchrun_standalone_and_non_numeric_counts():
    launch = _one("torchrun --standalone --nproc_per_node gpu --nnodes 1:4 t.py\n")
    assert launch.distributed == ("--standalone",) and launch.entry.text == "t.py"
    assert (launch.processes_per_node.value, launch.processes_per_node.text) == (None, "gpu")
    assert (launch.nodes.value, launch.nodes.text) == (None, "1:4")


def test_accelerate_options():
    launch = _one("accelerate launch --multi_gpu --num-processes 8 --num_machines 2 "
                  "--gpu_ids 0,1,2,3 --mixed_precision bf16 --use_deepspeed "
                  "--deepspeed_config_file ds_z3.json --config_file acc.yaml "
                  "train.py --deepspeed ds_z3.json --bf16 True\n")
    assert launch.launcher == "accelerate" and launch.entry.text == "train.py"
    assert launch.processes.value == 8 and launch.nodes.value == 2
    assert launch.visible_gpus.value == 4 and launch.visible_gpus.source == "--gpu_ids"
    assert launch.mixed_precision.text == "bf16"
    assert set(launch.distributed) == {"--multi_gpu", "--use_deepspeed"}
    assert [(c.role, c.option, c.value.text) for c in launch.configs] == [
        ("accelerate", "--config_file", "acc.yaml"),
        ("deepspeed", "--deepspeed_config_file", "ds_z3.json"),
        ("deepspeed", "--deepspeed", "ds_z3.json")]
    assert _texts(launch.argv) == ["--deepspeed", "ds_z3.json", "--bf16", "True"]


def test_accelerate_fsdp_module_axolotl():
    launch = _one("accelerate launch --use_fsdp -m axolotl.cli.train examples/qlora.yml --debug\n")
    assert launch.launcher == "accelerate" and launch.module == "axolotl.cli.train"
    assert launch.distributed == ("--use_fsdp",)
    assert [(c.role, c.value.text) for c in launch.configs] == [("axolotl", "examples/qlora.yml")]
    assert _texts(launch.argv) == ["examples/qlora.yml", "--debug"]


def test_deepspeed_runner():
    launch = _one("deepspeed --num_gpus 2 --num_nodes 1 --master_port 29501 train.py "
                  "--deepspeed ds.json\n")
    assert launch.launcher == "deepspeed" and launch.entry.text == "train.py"
    assert (launch.processes_per_node.value, launch.nodes.value) == (2, 1)
    assert launch.configs[0].role == "deepspeed"
    one_host = _one("deepspeed --include localhost:0,2,3 train.py\n")
    assert one_host.visible_gpus.value == 3 and one_host.visible_gpus.source == "--include"
    two_hosts = _one("deepspeed --include a:0,1@b:0 train.py\n")
    assert two_hosts.visible_gpus.value is None and two_hosts.visible_gpus.text == "a:0,1@b:0"


@pytest.mark.parametrize("command,launcher,sub,config", [
    ("llamafactory-cli train examples/llama3_lora_sft.yaml", "llamafactory", "train",
     "examples/llama3_lora_sft.yaml"),
    ("python -m llamafactory.cli train examples/llama3_lora_sft.yaml", "llamafactory", "train",
     "examples/llama3_lora_sft.yaml"),
    ("axolotl train examples/llama-3/qlora.yml", "axolotl", "train", "examples/llama-3/qlora.yml"),
    ("python -m axolotl.cli.train examples/llama-3/qlora.yml", "python", "train",
     "examples/llama-3/qlora.yml"),
])
def test_dialect_clis(command, launcher, sub, config):
    launch = _one(command + "\n")
    assert (launch.launcher, launch.subcommand) == (launcher, sub)
    assert launch.configs[0].value.text == config and launch.configs[0].option is None


def test_llamafactory_reads_its_torchrun_variables():
    # LLaMA-Factory's launcher.py: torchrun --nproc_per_node $NPROC_PER_NODE --nnodes $NNODES
    text = ("export NNODES=2\n"
            "FORCE_TORCHRUN=1 NPROC_PER_NODE=4 llamafactory-cli train examples/x.yaml\n")
    launch = _one(text)
    assert (launch.processes_per_node.value, launch.processes_per_node.source) == (4, "NPROC_PER_NODE")
    assert (launch.nodes.value, launch.nodes.line) == (2, 1)
    assert launch.distributed == ("FORCE_TORCHRUN",)
    plain = _one("llamafactory-cli train examples/x.yaml\n")
    assert plain.processes_per_node is None and plain.distributed == ()


def test_tune_run_with_torchrun_options_and_overrides():
    launch = _one("tune run --nproc_per_node 2 lora_finetune_distributed --config "
                  "llama3_1/8B_lora batch_size=4 enable_activation_checkpointing=True\n")
    assert launch.launcher == "tune" and launch.module == "lora_finetune_distributed"
    assert launch.processes_per_node.value == 2
    assert [(c.role, c.value.text) for c in launch.configs] == [("torchtune", "llama3_1/8B_lora")]
    assert _texts(launch.argv) == ["--config", "llama3_1/8B_lora", "batch_size=4",
                                   "enable_activation_checkpointing=True"]


def test_litgpt_devices_nodes_precision():
    launch = _one("litgpt finetune_lora checkpoints/meta-llama/Llama-2-7b-hf --devices 4 "
                  "--num_nodes=2 --precision bf16-true --config config_hub/lora.yaml\n")
    assert (launch.launcher, launch.subcommand) == ("litgpt", "finetune_lora")
    assert (launch.processes_per_node.value, launch.nodes.value) == (4, 2)
    assert launch.mixed_precision.text == "bf16-true"
    assert launch.configs[0].role == "litgpt"
    assert _one("litgpt finetune lora x --devices 2\n").subcommand == "finetune_lora"


def test_python_forms_and_commands_that_are_not_launches():
    assert _one("python -u -W ignore train.py --x 1\n").entry.text == "train.py"
    assert _one("python3 -m src.train --x 1\n").module == "src.train"
    assert _one("nohup python train.py > log 2>&1 &\n").entry.text == "train.py"
    assert _one("uv run python train.py\n").entry.text == "train.py"
    assert _one("srun --nodes 2 -n 8 python train.py\n").entry.text == "train.py"
    text = ("python -c 'import torch'\npython -m pip install x\naccelerate config\n"
            "echo torchrun train.py\npip install -e .\n")
    assert launches_in_text(text, "/proj/run.sh").launches == ()


def test_option_names_survive_unknown_values():
    launch = _one("torchrun --nproc_per_node=8 --node_rank=$RANK --master_addr $ADDR "
                  "train.py --lr=$LR --x 1\n")
    assert launch.entry.text == "train.py" and launch.processes_per_node.value == 8
    from lintlora.extract.launch_argv import split_option
    name, value = split_option(launch.argv[0])
    assert (name, value.text, value.raw) == ("--lr", None, "--lr=$LR")
    assert _texts(launch.argv[1:]) == ["--x", "1"]
    unknown_script = _one('python "$SCRIPT" --x 1\n')
    assert unknown_script.entry.text is None and _texts(unknown_script.argv) == ["--x", "1"]


# --- the shell ---------------------------------------------------------------------------------

def test_arithmetic_commands_and_c_style_loops():
    text = ("for ((i=1; i<=3; i++)); do python a.py --i $i; done\n"
            "if (( N > 2 )); then python b.py; fi\n")
    a, b = launches_in_text(text, "/p/r.sh").launches
    assert a.argv[1].text is None and a.sweep is None  # not expanded: the values are computed
    assert b.entry.text == "b.py"


def test_continuations_keep_the_first_line_and_each_word_line():
    launch = _one("\n# setup\ntorchrun \\\n  --nproc_per_node 2 \\\n  train.py \\\n  --lr 3e-4\n")
    assert launch.line == 3 and launch.processes_per_node.line == 4
    assert [(v.text, v.line) for v in launch.argv] == [("--lr", 6), ("3e-4", 6)]


def test_variables_defaults_and_unknowns():
    text = ('MODEL=meta-llama/Llama-2-7b-hf\n'
            'OUT="${OUT_DIR:-./out}/run1"\n'
            'python train.py --model $MODEL --out $OUT --seed ${SEED} --name "${1:-base}" '
            '--tag $2 --lr ${LR:-2e-4}\n')
    launch = _one(text)
    values = {launch.argv[i].text: launch.argv[i + 1] for i in range(0, len(launch.argv), 2)}
    assert (values["--model"].text, values["--model"].origin) == ("meta-llama/Llama-2-7b-hf",
                                                                   "variable")
    assert values["--model"].assigned_line == 1
    assert values["--out"].text == "./out/run1"
    assert values["--seed"].text is None and "environment" in values["--seed"].note
    assert (values["--name"].text, values["--name"].origin) == ("base", "default")
    assert values["--tag"].text is None
    assert (values["--lr"].text, values["--lr"].origin) == ("2e-4", "default")


def test_defaults_keep_their_origin_through_a_variable_and_double_brackets_parse():
    text = ('OUT=${OUT_DIR:-./out}\n'
            'if [[ $MODEL =~ ^(llama|mistral)$ && $N < 3 ]]; then python a.py $OUT; fi\n')
    launch = _one(text)
    assert (launch.argv[0].text, launch.argv[0].origin) == ("./out", "default")
    assert launch.argv[0].assigned_line == 1


def test_word_splitting_quotes_and_arrays():
    text = ('ARGS="--bf16 True --max_steps 10"\n'
            "EMPTY=\n"
            "EXTRA=(--lora_r 16 --note 'a b')\n"
            'python t.py $ARGS "$ARGS" $EMPTY "" \'$ARGS\' "${EXTRA[@]}"\n')
    launch = _one(text)
    assert _texts(launch.argv) == ["--bf16", "True", "--max_steps", "10",
                                   "--bf16 True --max_steps 10", "", "$ARGS",
                                   "--lora_r", "16", "--note", "a b"]


def test_export_and_prefixes_and_unexported_assignments():
    text = ("export HF_HOME=/data/hf\n"
            "CUDA_VISIBLE_DEVICES=0,1,2,3\n"
            "python a.py\n"
            "CUDA_VISIBLE_DEVICES=5 WANDB_MODE=offline python b.py\n"
            "export CUDA_VISIBLE_DEVICES\n"
            "python c.py\n")
    a, b, c = launches_in_text(text, "/proj/run.sh").launches
    # a plain assignment is not passed to the child process until it is exported
    assert [e.name for e in a.env] == ["HF_HOME"] and a.visible_gpus is None
    assert b.visible_gpus.value == 1 and b.visible_gpus.line == 4
    assert {(e.name, e.prefix) for e in b.env} == {("HF_HOME", False),
                                                  ("CUDA_VISIBLE_DEVICES", True),
                                                  ("WANDB_MODE", True)}
    assert c.visible_gpus.value == 4 and c.visible_gpus.line == 2


def test_for_loops_one_launch_per_value():
    text = "for lr in 1e-4 2e-4 5e-4; do\n  python train.py --lr $lr\ndone\n"
    found = launches_in_text(text, "/proj/sweep.sh").launches
    assert [(l.sweep, l.argv[1].text, l.loop_values, l.line) for l in found] == [
        (0, "1e-4", (("lr", "1e-4"),), 2), (1, "2e-4", (("lr", "2e-4"),), 2),
        (2, "5e-4", (("lr", "5e-4"),), 2)]
    nested = ("for m in a b; do for r in 8 16 32; do\n"
              "torchrun --nproc_per_node 2 t.py --m $m --r $r; done; done\n")
    runs = launches_in_text(nested, "/proj/sweep.sh").launches
    assert [(l.sweep, l.argv[1].text, l.argv[3].text) for l in runs] == [
        (0, "a", "8"), (1, "a", "16"), (2, "a", "32"), (3, "b", "8"), (4, "b", "16"),
        (5, "b", "32")]


def test_loops_bounded_and_loops_over_unknown_values():
    many = " ".join(str(i) for i in range(40))
    found = launches_in_text(f"for s in {many}; do python t.py --seed $s; done\n", "/p/r.sh")
    assert len(found.launches) == MAX_LOOP_VALUES
    assert found.problems and found.problems[0].line == 1 and found.problems[0].code == "LL998"
    unknown = launches_in_text("for s in $(seq 1 5); do python t.py --seed $s; done\n",
                               "/p/r.sh").launches
    assert len(unknown) == 1 and unknown[0].argv[1].text is None and unknown[0].sweep is None


def test_conditional_assignments():
    text = ('if [[ $GPU == a100 ]]; then PREC=bf16; else PREC=fp16; fi\n'
            'if [ -n "$X" ]; then SAME=1; else SAME=1; fi\n'
            '[ -z "$M" ] && M=llama\n'
            'case $1 in\n  big) N=8;;\n  *) N=8;;\nesac\n'
            'python t.py $PREC $SAME $M $N\n')
    launch = _one(text)
    prec, same, m, n = launch.argv
    assert prec.text is None and "only some branches" in prec.note
    assert same.text == "1" and n.text == "8"
    assert m.text is None


def test_cd_and_the_script_folder(tmp_path):
    text = ('cd "$(dirname "$0")"\npython a.py\ncd ../src\npython b.py\n'
            'cd $(mktemp -d)\npython c.py\n'
            'SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\n'
            'python "$SCRIPT_DIR/d.py"\n')
    a, b, c, d = launches_in_text(text, "/proj/scripts/run.sh").launches
    assert (a.workdir, a.entry_path) == ("/proj/scripts", "/proj/scripts/a.py")
    assert b.entry_path == "/proj/src/b.py"
    assert c.workdir is None and c.entry_path is None
    assert d.entry_path == "/proj/scripts/d.py"


def test_functions_are_followed_with_their_arguments():
    text = ("train() {\n  torchrun --nproc_per_node $1 train.py --model $2\n}\n"
            "train 2 llama\ntrain 4 mistral\n"
            "unused() { python never.py; }\n")
    found = launches_in_text(text, "/p/run.sh").launches
    assert [(l.processes_per_node.value, l.argv[1].text, l.function, l.line) for l in found] == [
        (2, "llama", "train", 2), (4, "mistral", "train", 2)]


def test_source_and_eval_make_values_unknown():
    text = ("MODEL=llama\nsource ./env.sh\npython a.py --m $MODEL --n ${N:-1}\n"
            "MODEL=mistral\npython b.py --m $MODEL\n"
            "eval \"$EXTRA\"\npython c.py --m $MODEL\n"
            "source .venv/bin/activate\npython d.py --m $MODEL\n")
    a, b, c, d = launches_in_text(text, "/p/run.sh").launches
    assert a.argv[1].text is None and "source ./env.sh" in a.argv[1].note
    assert a.argv[3].text is None  # the default does not hold: env.sh may set N
    assert b.argv[1].text == "mistral"  # assigned after the source
    assert c.argv[1].text is None and "eval" in c.argv[1].note
    assert d.argv[1].text is None  # still unknown from the eval; activate changes nothing


# --- Makefile, Procfile -------------------------------------------------------------------------

def test_makefile_variables_and_unknowns():
    text = ("MODEL ?= meta-llama/Llama-2-7b-hf\nNGPU := 4\nPY = python3\n"
            "ARGS = --model $(MODEL) --bf16\n\n"
            ".PHONY: train\ntrain: data\n\t@echo training\n"
            "\ttorchrun --nproc_per_node $(NGPU) train.py \\\n\t  $(ARGS) --out $(OUT) "
            "--seed $$SEED --hash $(shell git rev-parse HEAD)\n\n"
            "cpu:\n\t-$(PY) -m src.train --lr 1e-4\n")
    found = launches_in_text(text, "/proj/Makefile")
    assert not found.problems
    train, cpu = found.launches
    assert (train.line, train.processes_per_node.value) == (9, 4)
    assert _texts(train.argv)[:4] == ["--model", "meta-llama/Llama-2-7b-hf", "--bf16", "--out"]
    out, seed, commit = train.argv[4], train.argv[6], train.argv[8]
    assert out.text is None and "$(OUT)" in out.note
    assert seed.text is None  # $$SEED is the shell's $SEED, from the environment
    assert commit.text is None
    assert (cpu.line, cpu.module, cpu.workdir) == (13, "src.train", "/proj")


def test_makefile_define_blocks_and_conditionals():
    text = ("define HELP\nnot: a rule\n\tpython never.py\nendef\n"
            "ifeq ($(X),1)\nall:\n\tpython a.py\nelse\nall:\n\tpython b.py\nendif\n")
    found = launches_in_text(text, "/proj/Makefile")
    # both branches of a make conditional are read (which one make takes is not known)
    assert [(l.line, l.entry.text) for l in found.launches] == [(7, "a.py"), (10, "b.py")]


def test_procfile():
    found = launches_in_text("web: gunicorn app:app\nworker: accelerate launch train.py --x 1\n",
                             "/app/Procfile")
    (launch,) = found.launches
    assert (launch.line, launch.launcher, launch.entry_path) == (2, "accelerate", "/app/train.py")
    assert launch.source_kind == "procfile"


def test_file_kinds():
    assert launch_file_kind("/p/run.sh") == "shell"
    assert launch_file_kind("/p/train", "#!/usr/bin/env bash\npython t.py\n") == "shell"
    assert launch_file_kind("/p/train", "#!/bin/zsh\n") == "shell"
    assert launch_file_kind("/p/job", "#!/bin/bash\n#SBATCH -N 2\n") == "sbatch"
    assert launch_file_kind("/p/train.py", "#!/usr/bin/env python\n") is None
    assert launch_file_kind("/p/GNUmakefile") == "makefile"
    assert launch_file_kind("/p/.github/workflows/ci.yaml") == "workflow"
    assert launch_file_kind("/p/configs/ci.yaml") is None


def test_folder_walk_finds_extensionless_shebang_scripts(tmp_path):
    root = _repo(tmp_path, {"scripts/train": "#!/bin/bash\ntorchrun --nproc_per_node 2 t.py\n",
                            "scripts/notes": "torchrun t.py\n",
                            "node_modules/x.sh": "python t.py\n",
                            "t.py": ""})
    found = discover_launches([root])
    assert [os.path.relpath(l.path, root) for l in found.launches] == ["scripts/train"]
    assert found.launches[0].entry_path == os.path.join(os.path.realpath(root), "t.py")


# --- never runs anything ------------------------------------------------------------------------

def test_discovery_runs_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    evil = (f"touch {marker}\n"
            f"X=$(touch {marker}1)\n"
            f"Y=`touch {marker}2`\n"
            f"eval \"touch {marker}3\"\n"
            f"source ./evil.sh\n"
            f"bash -c 'touch {marker}4'\n"
            f"python -c 'open(\"{marker}5\", \"w\")'\n"
            f"python train.py --a $(touch {marker}6) --b \"`touch {marker}7`\" "
            f"--c ${{Z:-$(touch {marker}8)}}\n"
            f"f() {{ touch {marker}9; }}\nf\n"
            f"cat <<EOF > {marker}10\n$(touch {marker}11)\nEOF\n")
    root = _repo(tmp_path, {"run.sh": evil, "evil.sh": f"touch {marker}12\n",
                            "Makefile": f"all:\n\ttouch {marker}13; python train.py $(shell touch {marker}14)\n",
                            ".github/workflows/ci.yml": (
                                "jobs:\n  a:\n    steps:\n      - run: |\n"
                                f"          touch {marker}15\n          python train.py\n")})

    def refuse(*args, **kwargs):
        raise AssertionError(f"tried to run {args!r}")

    for name in ("Popen",):
        monkeypatch.setattr(subprocess, name, refuse)
    for name in ("system", "popen", "execv", "execve", "execvp", "fork", "posix_spawn",
                 "posix_spawnp", "spawnv"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    found = discover_launches([root])
    monkeypatch.undo()
    assert not list(tmp_path.glob("marker*"))
    assert {os.path.basename(l.path) for l in found.launches} == {"run.sh", "Makefile", "ci.yml"}
    train = next(l for l in found.launches if l.path.endswith("run.sh"))
    assert [v.text for v in train.argv] == ["--a", None, "--b", None, "--c", None]
    assert "not run" in train.argv[1].note


# --- hostile input -------------------------------------------------------------------------------

def _quick(call):
    start = time.perf_counter()
    result = call()
    assert time.perf_counter() - start < 5.0
    return result


def test_huge_file_is_refused_before_reading(tmp_path):
    root = _repo(tmp_path, {})
    path = os.path.join(root, "big.sh")
    with open(path, "w") as handle:
        handle.write("python t.py --x 1\n" * (10 * 2**20 // 18 + 1))
    found = _quick(lambda: discover_launches([path]))
    assert found.launches == ()
    (problem,) = found.problems
    assert problem.code == "LL998" and "limit" in problem.message and problem.path == path


@pytest.mark.parametrize("text,line", [
    ("python ok.py\n" + "$(" * 10_000 + ")" * 10_000 + "\n", 2),
    ("python ok.py\n" + "{ " * 5_000 + "python t.py" + " ;}" * 5_000 + "\n", 2),
    ("python ok.py\n" + '"${' * 3_000 + "}\"" * 3_000 + "\n", 2),
    ("python ok.py\n" + "if true; then " * 2_000 + "python t.py" + "; fi" * 2_000 + "\n", 2),
])
def test_deep_nesting_gives_a_diagnostic(text, line):
    found = _quick(lambda: launches_in_text(text, "/p/deep.sh"))
    assert found.problems and found.problems[0].line == line
    assert found.problems[0].code == "LL998" and "nest" in found.problems[0].message
    # the complete command before the problem is still read
    assert [l.entry.text for l in found.launches] == ["ok.py"]


def test_binary_and_undecodable_files(tmp_path):
    root = _repo(tmp_path, {})
    binary = os.path.join(root, "blob.sh")
    with open(binary, "wb") as handle:
        handle.write(b"python t.py\n" + bytes(range(256)) * 64)
    latin = os.path.join(root, "latin.sh")
    with open(latin, "wb") as handle:
        handle.write(b"python t.py\n# caf\xe9\n")
    found = _quick(lambda: discover_launches([binary, latin]))
    assert found.launches == ()
    assert [(os.path.basename(p.path), p.line) for p in found.problems] == [("blob.sh", 2),
                                                                           ("latin.sh", 2)]
    assert "NUL" in found.problems[0].message and "UTF-8" in found.problems[1].message


def test_unterminated_quote_keeps_the_commands_before_it():
    found = launches_in_text('python a.py\npython b.py --name "oops\npython c.py\n', "/p/r.sh")
    assert [l.entry.text for l in found.launches] == ["a.py"]
    (problem,) = found.problems
    column = 'python b.py --name "oops'.index('"') + 1
    assert (problem.line, problem.column, problem.code) == (2, column, "LL000")
    assert "unterminated double quote" in problem.message


def test_value_growth_and_token_count_are_bounded():
    doubling = "A=x\n" + "A=\"$A$A\"\n" * 60 + "python t.py $A\n"
    launch = _quick(lambda: _one(doubling))
    assert launch.argv[0].text is None and "longer than" in launch.argv[0].note
    many = "python first.py\n" + "python t.py " + "x " * 300_000 + "\n"
    found = _quick(lambda: launches_in_text(many, "/p/r.sh"))
    assert found.problems and found.problems[0].code == "LL998"
    assert [l.entry.text for l in found.launches] == ["first.py"]  # the lines before it
    launches = "python t.py --x 1\n" * 15_000
    found = _quick(lambda: launches_in_text(launches, "/p/r.sh"))
    assert len(found.launches) == 256 and found.problems[-1].code == "LL998"


def test_makefile_expansion_is_bounded():
    text = ("A = $(A)x\nB = " + "$(C)" * 100 + "\nC = " + "$(D)" * 100 + "\nD = " +
            "$(E)" * 100 + "\nE = " + "y" * 1000 + "\n"
            "all:\n\tpython t.py $(A) $(B)\n")
    launch = _quick(lambda: _one(text, "/p/Makefile"))
    assert launch.entry.text == "t.py"
    assert all(v.text is None or len(v.text) <= 65_536 for v in launch.argv)


def test_recursive_functions_and_special_files(tmp_path):
    found = _quick(lambda: launches_in_text("f() { f; python t.py; }\nf\n", "/p/r.sh"))
    assert len(found.launches) == 1 and found.problems[0].code == "LL998"
    root = _repo(tmp_path, {})
    fifo = os.path.join(root, "pipe.sh")
    os.mkfifo(fifo)
    link = os.path.join(root, "link.sh")
    os.symlink("/etc/hostname", link)
    found = _quick(lambda: discover_launches([fifo, link]))
    assert found.launches == () and len(found.problems) == 2


def test_module_files_in_the_project(tmp_path):
    root = _repo(tmp_path, {"scripts/run.sh": "python -m src.train --x 1\npython -m pkg\n"
                                              "python -m torchtune_not_here.x\n",
                            "src/train.py": "", "pkg/__main__.py": "",
                            "Makefile": "all:\n\tpython -m src.train\n"})
    found = discover_launches([root])
    real = os.path.realpath(root)
    paths = {(os.path.basename(l.path), l.module): l.module_path for l in found.launches}
    assert paths == {("run.sh", "src.train"): os.path.join(real, "src", "train.py"),
                     ("run.sh", "pkg"): os.path.join(real, "pkg", "__main__.py"),
                     ("run.sh", "torchtune_not_here.x"): None,
                     ("Makefile", "src.train"): os.path.join(root, "src", "train.py")}


def test_named_files_of_no_launch_kind_are_skipped(tmp_path):
    root = _repo(tmp_path, {"train.py": "import os\nos.system('torchrun x.py')\n",
                            "cfg.yaml": "run: torchrun t.py\n"})
    found = discover_launches([os.path.join(root, "train.py"), os.path.join(root, "cfg.yaml")])
    assert found.launches == () and found.problems == () and found.files_read == ()


def test_outside_the_project_is_not_read(tmp_path):
    root = _repo(tmp_path, {})
    outside = tmp_path / "outside.sh"
    outside.write_text("python t.py\n")
    found = discover_launches([str(outside)], root=root)
    assert found.launches == () and found.files_read == ()
    assert "outside the project" in found.problems[0].message


# --- the data and the layering ---------------------------------------------------------------

def test_launches_are_frozen():
    launch = _one("python t.py\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        launch.line = 3  # type: ignore[misc]
    assert hash(launch.argv) is not None


def test_launch_modules_import_only_extraction_and_the_model_layer():
    allowed = ("lintlora.extract", "lintlora.safeio", "lintlora.training_setup")
    for name in ("launch", "launch_model", "launch_shell", "launch_shell_syntax", "launch_argv"):
        path = os.path.join(REPO, "lintlora", "extract", f"{name}.py")
        tree = ast.parse(_text(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("lintlora"):
                modules = [node.module] if node.module != "lintlora" else \
                    [f"lintlora.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names if a.name.startswith("lintlora")]
            else:
                continue
            for module in modules:
                assert module.startswith(allowed), (name, module)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & {"subprocess", "bashlex", "shutil", "multiprocessing"}, name


def test_shutil_which_is_not_consulted(monkeypatch):
    # launcher names are matched as words: nothing looks them up on PATH
    monkeypatch.setattr(shutil, "which", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert _one("torchrun --nproc_per_node 2 t.py\n").launcher == "torchrun"
