"""LL024 sharded-qlora-quant-storage: 4-bit bitsandbytes under FSDP / ZeRO-3 without the model's
dtype as storage. Setups are extracted from real scripts; the run (``setup.run``,
``setup.distributed``) is added by hand, as the run assembly will."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from rules_support import GiB, ToyContext

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll024_sharded_qlora_quant_storage import ShardedQloraQuantStorage as R
from lintlora.settings import Settings
from lintlora.training_setup import Distributed, Origin, RunLaunch, Setting, Span

RUN_SH = "/proj/run.sh"
ACC = "/proj/fsdp.yaml"
DS = "/proj/ds_z3.json"

SCRIPT = """\
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                         bnb_4bit_compute_dtype=torch.bfloat16{storage})
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb{dtype})
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True{fsdp})
Trainer(model=model, args=args).train()
"""


def extract(tmp_path, storage="", dtype=", torch_dtype=torch.bfloat16", fsdp=""):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(storage=storage, dtype=dtype, fsdp=fsdp), encoding="utf-8")
    [s] = list(extract_python(str(path), path.read_text(encoding="utf-8")))
    return s


def launch(processes=4, launcher="accelerate"):
    return RunLaunch(Span(RUN_SH, 3), launcher, processes=Setting(processes, Origin.LAUNCH, Span(RUN_SH, 3, 20)))


def fsdp(world=4, strategy="FULL_SHARD", version=1):
    return Distributed(backend=Setting("fsdp", Origin.CONFIG_FILE, Span(ACC, 2, 19)),
                       world_size=Setting(world, Origin.CONFIG_FILE, Span(ACC, 9)),
                       fsdp_sharding_strategy=Setting(strategy, Origin.CONFIG_FILE, Span(ACC, 5, 27)),
                       fsdp_version=Setting(version, Origin.CONFIG_FILE, Span(ACC, 6)),
                       accelerate_config=ACC, span=Span(ACC, 1))


def zero(stage=3, world=4):
    return Distributed(backend=Setting("deepspeed", Origin.LAUNCH, Span(RUN_SH, 3)),
                       world_size=Setting(world, Origin.LAUNCH, Span(RUN_SH, 3)),
                       zero_stage=Setting(stage, Origin.CONFIG_FILE, Span(DS, 4, 14)), config_path=DS,
                       span=Span(DS, 1))


def check(s, context=None):
    return list(R().check(s, context or Context(Settings(gpu="A100-80GB"))))


def test_default_uint8_storage_under_fsdp_from_the_accelerate_config(tmp_path):
    s = dataclasses.replace(extract(tmp_path), run=launch(), distributed=fsdp())
    [f] = check(s)
    assert (f.code, f.severity) == ("LL024", Severity.ERROR)
    assert f.span.path.endswith("train.py") and f.span.line == 5  # the BitsAndBytesConfig call
    assert "uint8" in f.message and "Cannot flatten integer dtype tensors" in f.message
    assert "FSDP1 FULL_SHARD" in f.message
    assert "bnb_4bit_quant_storage=torch.bfloat16" in f.fix
    related = {(r.span.path, r.span.line): r.message for r in f.related}
    assert related[(RUN_SH, 3)].startswith("launched by run.sh:3 with 4 processes")
    assert "sharded by FSDP1 FULL_SHARD" in related[(ACC, 5)]


def test_fsdp_named_in_the_file_is_enough(tmp_path):
    [f] = check(extract(tmp_path, fsdp=', fsdp="full_shard auto_wrap"'))
    assert "fsdp='full_shard auto_wrap'" in f.message
    assert any(r.span.line == 9 for r in f.related)  # the fsdp= argument
    assert "priced as one GPU" in f.message  # no number of GPUs known on this branch's estimator


def test_zero3_says_every_rank_holds_the_whole_model(tmp_path):
    s = dataclasses.replace(extract(tmp_path), run=launch(launcher="deepspeed"), distributed=zero())
    [f] = check(s)
    assert "ZeRO-3" in f.message and "every rank holds the whole quantized model" in f.message
    assert "bitsandbytes#1249" in f.message
    assert any(r.span.path == DS and r.span.line == 4 for r in f.related)


def test_float_storage_other_than_the_model_dtype_under_fsdp(tmp_path):
    s = dataclasses.replace(extract(tmp_path, storage=", bnb_4bit_quant_storage=torch.float32"),
                            run=launch(), distributed=fsdp())
    [f] = check(s)
    assert "Must flatten tensors with uniform dtype" in f.message and "float32" in f.message
    assert f.span.line == 6  # the storage argument itself


def test_no_load_dtype_fix_sets_both(tmp_path):
    s = dataclasses.replace(extract(tmp_path, dtype=""), run=launch(), distributed=fsdp())
    [f] = check(s)
    assert "torch_dtype=torch.bfloat16" in f.fix


@pytest.mark.parametrize("dist", [
    Distributed(backend=Setting("ddp", Origin.LAUNCH, Span(RUN_SH, 3)), world_size=Setting(4, Origin.LAUNCH)),
    zero(stage=2),
    fsdp(strategy="NO_SHARD"),
], ids=["ddp", "zero2", "no_shard"])
def test_silent_when_the_run_does_not_shard_parameters(tmp_path, dist):
    assert check(dataclasses.replace(extract(tmp_path), run=launch(), distributed=dist)) == []


def test_silent_for_one_process(tmp_path):
    s = dataclasses.replace(extract(tmp_path, fsdp=', fsdp="full_shard"'), run=launch(processes=1),
                            distributed=fsdp(world=1))
    assert check(s) == []


def test_silent_when_the_storage_matches(tmp_path):
    s = dataclasses.replace(extract(tmp_path, storage=", bnb_4bit_quant_storage=torch.bfloat16"),
                            run=launch(), distributed=fsdp())
    assert check(s) == []


def test_silent_when_the_load_dtype_cannot_be_compared(tmp_path):
    s = dataclasses.replace(extract(tmp_path, storage=", bnb_4bit_quant_storage=torch.bfloat16",
                                    dtype=', torch_dtype="auto"'), run=launch(), distributed=fsdp())
    assert check(s) == []


def test_silent_without_any_sharding(tmp_path):
    assert check(extract(tmp_path)) == []


@pytest.mark.parametrize("framework", ["axolotl", "llama-factory"])
def test_silent_for_frameworks_that_set_the_storage(tmp_path, framework):
    s = dataclasses.replace(extract(tmp_path), framework=framework, run=launch(), distributed=fsdp())
    assert check(s) == []


def test_silent_for_an_unresolved_storage(tmp_path):
    s = extract(tmp_path, storage=", bnb_4bit_quant_storage=args.storage")
    s = dataclasses.replace(s, run=launch(), distributed=fsdp())
    assert check(s) == []


class _RankContext(ToyContext):
    """An estimate per GPU over 4 ranks: 20 GiB with unsharded 4-bit weights, 6 GiB sharded."""

    def estimate(self, s):
        storage = s.get("quantization.bnb_4bit_quant_storage")
        peak = 6 * GiB if storage.is_("bfloat16") else 20 * GiB
        return SimpleNamespace(device_bytes=peak, breakdown={"weights": peak}, rough=False,
                               sharding="FSDP1 full_shard × 4 ranks", inputs=SimpleNamespace(num_gpus=4))

    def shape(self, s):
        return None


def test_the_message_gives_the_per_gpu_estimate_before_and_after(tmp_path):
    s = dataclasses.replace(extract(tmp_path), run=launch(), distributed=fsdp())
    [f] = check(s, _RankContext(Settings(gpu="A100-80GB")))
    assert "per GPU (FSDP1 full_shard × 4 ranks): 20.0 GiB as written, 6.0 GiB with the fix" in f.message
    assert f.estimate.peak_bytes == 20 * GiB and f.estimate.peak_after_fix_bytes == 6 * GiB


def test_the_estimator_reads_the_storage_dtype(tmp_path):
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.from_setup import inputs_from_setup

    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    written, _ = inputs_from_setup(extract(tmp_path, storage=", bnb_4bit_quant_storage=torch.bfloat16"), arch)
    default, _ = inputs_from_setup(extract(tmp_path), arch)
    assert written.quant_storage == "bfloat16" and default.quant_storage == "uint8"
