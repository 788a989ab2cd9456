"""LL001, LL002, LL005 and LL008 judge the run (issue 15 item 5): the launch (``setup.run``),
the values it passes (``Origin.LAUNCH``) and the distribution (``setup.distributed``); the facts
behind them (:mod:`lintlora.facts`: ``launch_hint``/``set_at_launch``/``unpassed_hint``,
``data_parallel``, ``run_fp16_uses``, ``checkpointing``).

Setups are extracted from real scripts (an HfArgumentParser script whose options the launch
passes), then given the run by hand, as the run assembly (helpers "bind", "dist", "engine")
will."""

from __future__ import annotations

import dataclasses

import pytest
from rules_support import ROOT

from lintlora import facts
from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff as LL001
from lintlora.rules.ll002_fp16_instead_of_bf16 import Fp16InsteadOfBf16 as LL002
from lintlora.rules.ll005_device_map import DeviceMap as LL005
from lintlora.rules.ll008_does_not_fit import DoesNotFit as LL008
from lintlora.settings import Settings
from lintlora.training_setup import Distributed, Origin, RunLaunch, Setting, Span

RUN_SH = "/proj/run.sh"
DS = "/proj/ds_z3.json"

HF_SCRIPT = """\
from dataclasses import dataclass, field
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="meta-llama/Llama-2-7b-hf")


parser = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, device_map={device_map},
                                             torch_dtype="bfloat16")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
Trainer(model=model, args=training_args).train()
"""


def extract(tmp_path, device_map='"auto"'):
    path = tmp_path / "train.py"
    text = HF_SCRIPT.format(device_map=device_map)
    path.write_text(text, encoding="utf-8")
    [s] = list(extract_python(str(path), text))
    return s


def launch(processes=4, launcher="torchrun", mixed_precision=None):
    mp = Setting(mixed_precision, Origin.LAUNCH, Span(RUN_SH, 3, 40)) if mixed_precision else None
    return RunLaunch(Span(RUN_SH, 3), launcher, command=f"{launcher} ... train.py",
                     processes=Setting(processes, Origin.LAUNCH, Span(RUN_SH, 3, 10)), mixed_precision=mp)


def passed(s, name, value, line=5):
    """The setup with training argument ``name`` passed by run.sh line ``line``."""
    flag = f"--{name} {value}"
    setting = Setting(value, Origin.LAUNCH, Span(RUN_SH, line, 3), source=f"{flag} (run.sh:{line})")
    return dataclasses.replace(s, training=dataclasses.replace(s.training, **{name: setting}))


def check(rule, s, gpu=None, **settings):
    return list(rule().check(s, Context(Settings(gpu=gpu, **settings))))


# ---- facts ------------------------------------------------------------------------------------

def test_a_launch_value_is_not_set_at_launch_and_an_unpassed_default_is_the_runs(tmp_path):
    s = extract(tmp_path)
    gc = s.get("training.gradient_checkpointing")
    assert facts.set_at_launch(gc) and facts.launch_hint(gc) == "unless --gradient_checkpointing is passed at launch"
    ran = dataclasses.replace(s, run=launch())
    assert not facts.set_at_launch(gc, ran) and facts.launch_hint(gc, ran) is None
    assert facts.unpassed_hint(gc, ran) == "run.sh:3 does not pass --gradient_checkpointing"
    assert facts.unpassed_hint(gc, s) is None
    launched = Setting(True, Origin.LAUNCH, Span(RUN_SH, 5))
    assert not facts.set_at_launch(launched) and facts.launch_hint(launched) is None


def test_environment_defaults_stay_set_at_launch_under_a_known_run():
    env = Setting(0, Origin.ENV_DEFAULT, source="$LOCAL_RANK")
    ran = dataclasses.replace(__import__("rules_support").setup(), run=launch())
    assert facts.set_at_launch(env, ran) and facts.unpassed_hint(env, ran) is None


def test_launch_related_names_the_launch_line(tmp_path):
    [r] = facts.launch_related(dataclasses.replace(extract(tmp_path), run=launch()))
    assert r.span == Span(RUN_SH, 3) and r.message == "launched by run.sh:3 with 4 processes (torchrun)"
    assert facts.launch_related(extract(tmp_path)) == ()


# ---- LL005 ------------------------------------------------------------------------------------

def test_ll005_device_map_auto_under_a_four_process_launch(tmp_path):
    s = extract(tmp_path)
    assert check(LL005, s) == []  # the file alone shows no data-parallel launch
    [f] = check(LL005, dataclasses.replace(s, run=launch()))
    assert (f.severity, f.span.line) == (Severity.ERROR, 13)
    assert "run.sh:3 launches 4 processes (torchrun)" in f.message
    assert any(r.span == Span(RUN_SH, 3) and "launched by run.sh:3 with 4 processes" in r.message
               for r in f.related)


def test_ll005_is_silent_for_a_one_process_run(tmp_path):
    acc = tmp_path / "acc.py"
    text = HF_SCRIPT.format(device_map='"auto"').replace(
        "parser = HfArgumentParser", "from accelerate import Accelerator\naccelerator = Accelerator()\nparser = HfArgumentParser")
    acc.write_text(text, encoding="utf-8")
    [s] = list(extract_python(str(acc), text))
    assert facts.data_parallel(s)  # the Accelerator() alone is evidence
    assert check(LL005, dataclasses.replace(s, run=launch(processes=1, launcher="python"))) == []


def test_ll005_reads_the_distribution_without_a_launch(tmp_path):
    dist = Distributed(backend=Setting("ddp", Origin.CONFIG_FILE, Span("/proj/acc.yaml", 2)),
                       world_size=Setting(2, Origin.CONFIG_FILE, Span("/proj/acc.yaml", 7)))
    [f] = check(LL005, dataclasses.replace(extract(tmp_path), distributed=dist))
    assert "acc.yaml:7 states 2 processes (ddp)" in f.message


def test_ll005_gpu_zero_under_a_launch_is_a_warning_with_the_launch(tmp_path):
    [f] = check(LL005, dataclasses.replace(extract(tmp_path, device_map='{"": 0}'), run=launch()))
    assert f.severity is Severity.WARNING and "GPU 0" in f.message
    assert f.related and f.related[0].span == Span(RUN_SH, 3)


# ---- LL002 ------------------------------------------------------------------------------------

def test_ll002_fp16_passed_by_the_launch_is_reported_at_the_launch_line(tmp_path):
    s = extract(tmp_path)
    assert check(LL002, s, gpu="A100-80GB") == []  # --fp16 is an option left at False
    s = dataclasses.replace(passed(s, "fp16", True), run=launch())
    [f] = check(LL002, s, gpu="A100-80GB")
    assert (f.severity, f.span.path, f.span.line) == (Severity.WARNING, RUN_SH, 5)
    assert "unless" not in f.message
    msgs = [r.message for r in f.related]
    assert msgs[0].startswith("launched by run.sh:3") and "--fp16 True passed by run.sh:5" in msgs
    assert "(--fp16 True)" in f.message and "--bf16 True in place of --fp16 True in the launch command (run.sh:5)" in f.fix


def test_ll002_the_launchers_mixed_precision(tmp_path):
    s = dataclasses.replace(extract(tmp_path), run=launch(launcher="accelerate", mixed_precision="fp16"))
    [f] = check(LL002, s, gpu="A100-80GB")
    assert f.span == Span(RUN_SH, 3, 40) and "--mixed_precision fp16" in f.message
    assert "--mixed_precision bf16" in f.fix
    after = LL002().check(s, Context(Settings(gpu="A100-80GB")))
    assert next(iter(after)).estimate is not None


def test_ll002_a_deepspeed_fp16_block(tmp_path):
    dist = Distributed(backend=Setting("deepspeed", Origin.CONFIG_FILE, Span(DS, 1)),
                       mixed_precision=Setting("fp16", Origin.CONFIG_FILE, Span(DS, 3, 14)), config_path=DS)
    [f] = check(LL002, dataclasses.replace(extract(tmp_path), run=launch(), distributed=dist), gpu="A100-80GB")
    assert f.span == Span(DS, 3, 14) and '"fp16": {"enabled": true} in ds_z3.json' in f.message
    assert any(r.span == Span(DS, 3, 14) for r in f.related)


@pytest.mark.parametrize("mp", ["auto", "bf16", None])
def test_ll002_deepspeed_auto_follows_the_training_arguments(tmp_path, mp):
    dist = Distributed(backend=Setting("deepspeed", Origin.CONFIG_FILE, Span(DS, 1)),
                       mixed_precision=Setting(mp, Origin.CONFIG_FILE, Span(DS, 3)) if mp else Setting(),
                       config_path=DS)
    assert check(LL002, dataclasses.replace(extract(tmp_path), run=launch(), distributed=dist), gpu="A100-80GB") == []


def test_ll002_bf16_in_the_arguments_wins_over_the_launcher(tmp_path):
    s = dataclasses.replace(passed(extract(tmp_path), "bf16", True),
                            run=launch(launcher="accelerate", mixed_precision="fp16"))
    assert check(LL002, s, gpu="A100-80GB") == []


# ---- LL001 ------------------------------------------------------------------------------------

def test_ll001_without_a_run_says_unless_passed_at_launch(tmp_path):
    [f] = check(LL001, extract(tmp_path))
    assert f.severity is Severity.INFO and "unless --gradient_checkpointing is passed at launch" in f.message
    assert f.related == ()


def test_ll001_a_known_launch_that_does_not_pass_it_is_definite(tmp_path):
    [f] = check(LL001, dataclasses.replace(extract(tmp_path), run=launch()))
    assert f.severity is Severity.WARNING
    assert "run.sh:3 does not pass --gradient_checkpointing" in f.message and "unless" not in f.message
    assert "--gradient_checkpointing True to the command at run.sh:3" in f.fix
    assert f.related[0].span == Span(RUN_SH, 3)


def test_ll001_a_launch_passing_it_silences_it(tmp_path):
    s = dataclasses.replace(passed(extract(tmp_path), "gradient_checkpointing", True), run=launch())
    assert check(LL001, s) == []


def test_ll001_a_launch_passing_false_is_reported_at_the_launch(tmp_path):
    s = dataclasses.replace(passed(extract(tmp_path), "gradient_checkpointing", False), run=launch())
    [f] = check(LL001, s)
    assert (f.span.path, f.span.line, f.severity) == (RUN_SH, 5, Severity.WARNING)
    assert "the launch passes --gradient_checkpointing False (run.sh:5)" in f.message
    assert "run.sh:5" in f.fix
    assert any("passed by run.sh:5" in r.message for r in f.related)


def test_ll001_fsdp_activation_checkpointing_of_the_run_counts(tmp_path):
    acc = "/proj/fsdp.yaml"
    dist = Distributed(backend=Setting("fsdp", Origin.CONFIG_FILE, Span(acc, 2)),
                       world_size=Setting(4, Origin.CONFIG_FILE, Span(acc, 9)),
                       fsdp_activation_checkpointing=Setting(True, Origin.CONFIG_FILE, Span(acc, 5)),
                       accelerate_config=acc)
    s = dataclasses.replace(extract(tmp_path), run=launch(launcher="accelerate"), distributed=dist)
    assert facts.checkpointing(s).value is True
    assert check(LL001, s) == []


def test_ll001_litgpt_fsdp_on_several_devices_checkpoints():
    from lintlora.extract.yaml_config import extract_config

    path = ROOT / "fixtures" / "configs" / "good" / "litgpt_multi_gpu.yaml"
    # the config says one device (no checkpointing); the run's launch says 4 (`--devices 4`)
    text = path.read_text(encoding="utf-8").replace("devices: 4", "devices: 1")
    [s] = list(extract_config(str(path), text, explicit=True, max_chars=1 << 20))
    assert facts.checkpointing(s).value is False
    dist = Distributed(backend=Setting("fsdp", Origin.CONFIG_FILE, Span(str(path), 5)),
                       world_size=Setting(4, Origin.CONFIG_FILE, Span(str(path), 5)))
    fact = facts.checkpointing(dataclasses.replace(s, distributed=dist))
    assert fact.value is True and "litgpt" in fact.reason


# ---- LL008 ------------------------------------------------------------------------------------

def test_ll008_judges_the_per_gpu_peak_of_a_sharded_estimate():
    """With the estimator's existing inputs (litgpt ``devices: 4``: FSDP over 4 ranks)."""
    path = ROOT / "fixtures" / "configs" / "good" / "litgpt_multi_gpu.yaml"
    from rules_support import lint

    result = lint(path, Settings(gpu_memory_bytes=8 * 2**30))
    [f] = [f for f in result.findings if f.code == "LL008"]
    assert "per GPU (FSDP2 full_shard × 4 ranks)" in f.message
    assert "shard the model over several GPUs" not in f.fix


def test_ll008_stays_silent_for_a_sharded_run_of_unknown_size(tmp_path):
    s = extract(tmp_path, device_map="None")
    assert check(LL008, s, gpu_memory_bytes=4 * 2**30)  # one GPU: it does not fit
    dist = Distributed(backend=Setting("fsdp", Origin.CONFIG_FILE, Span("/proj/fsdp.yaml", 2)))
    assert check(LL008, dataclasses.replace(s, distributed=dist), gpu_memory_bytes=4 * 2**30) == []


def test_ll008_says_zero3_times_4_for_the_run(tmp_path):
    dist = Distributed(backend=Setting("deepspeed", Origin.CONFIG_FILE, Span(DS, 1)),
                       world_size=Setting(4, Origin.LAUNCH, Span(RUN_SH, 3)),
                       zero_stage=Setting(3, Origin.CONFIG_FILE, Span(DS, 4)), config_path=DS)
    s = dataclasses.replace(extract(tmp_path, device_map="None"), run=launch(), distributed=dist)
    s = passed(s, "per_device_train_batch_size", 64)
    [f] = check(LL008, s, gpu_memory_bytes=6 * 2**30)
    assert "per GPU" in f.message and "ZeRO-3 × 4" in f.message
    assert f.related and f.related[0].span == Span(RUN_SH, 3)


# ---- end to end (the acceptance case of issue 15), once the run is assembled ---------------------

RUN_SCRIPT = """\
#!/bin/bash
# four GPUs, ZeRO-3
torchrun --nproc_per_node 4 train.py \\
    --model_name_or_path meta-llama/Llama-2-13b-hf \\
    --fp16 True \\
    --per_device_train_batch_size 64 \\
    --deepspeed ds_z3.json --output_dir out
"""

DS_Z3 = """\
{
  "zero_optimization": {"stage": 3},
  "fp16": {"enabled": "auto"},
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto"
}
"""


def test_the_acceptance_run_end_to_end(tmp_path):
    from rules_support import lint

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text(RUN_SCRIPT, encoding="utf-8")
    (tmp_path / "ds_z3.json").write_text(DS_Z3, encoding="utf-8")
    (tmp_path / "train.py").write_text(HF_SCRIPT.format(device_map='"auto"'), encoding="utf-8")
    result = lint(tmp_path, Settings(gpu="A100-40GB"))
    by_code = {}
    for f in result.findings:
        by_code.setdefault(f.code, []).append(f)
    [ll002] = by_code["LL002"]
    assert (ll002.span.path.endswith("run.sh"), ll002.span.line) == (True, 5)
    [ll005] = by_code["LL005"]
    assert ll005.span.path.endswith("train.py") and ll005.span.line == 13
    assert any(r.span.path.endswith("run.sh") and r.span.line == 3 for r in ll005.related)
    assert all(f.code != "LL025" for f in result.findings)  # "auto" under the HF Trainer
    for f in by_code.get("LL008", []):  # LL001 may be the finding that makes it fit
        assert "per GPU (DeepSpeed ZeRO-3 × 4 ranks)" in f.message


def test_a_known_run_keeps_its_default_model_against_model_flag(tmp_path):
    from lintlora.context import model_named_in_file

    s = extract(tmp_path)
    name = s.get("model.name_or_path")
    assert not model_named_in_file(name)  # a default the launch may change: --model replaces it
    ran = dataclasses.replace(s, run=launch())
    assert model_named_in_file(name, ran)
    ctx = Context(Settings(model="mistralai/Mistral-7B-v0.1"))
    assert ctx.apply_overrides(s).get("model.name_or_path").value == "mistralai/Mistral-7B-v0.1"
    assert ctx.apply_overrides(ran).get("model.name_or_path").value == "meta-llama/Llama-2-7b-hf"
