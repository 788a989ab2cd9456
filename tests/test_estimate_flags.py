"""``lintlora estimate`` flags for the framework knobs, ``--assume-version`` and the documented
``--format json`` schema.

The flag path must price what the script path prices for the same setup: each test states a
setup once as a file (a real public config, edited as the README of its project runs it) and
once as flags, and compares the two.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from lintlora.estimate.command import estimate_cmd
from lintlora.estimate.report_schema import REPORT_SCHEMA, SCHEMA_VERSION

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "estimate" / "frame"


def run(*args: str) -> tuple[int, dict | None, str]:
    res = CliRunner().invoke(estimate_cmd, list(args))
    try:
        data = json.loads(res.stdout)
    except (ValueError, TypeError):
        data = None
    return res.exit_code, data, res.output


def _torchtune_readme_config(tmp_path: Path) -> Path:
    """torchtune's 3B_full_single_device.yaml with the overrides of its README's "Optimization
    flags" table (batch 2, tokenizer.max_seq_len 4096, compile, chunked CE, checkpointing,
    optimizer in backward, activation offloading, torch AdamW)."""
    text = (FIX / "torchtune_3B_full_single_device.yaml").read_text()
    for old, new in (("  max_seq_len: null", "  max_seq_len: 4096"), ("batch_size: 4", "batch_size: 2"),
                     ("  _component_: bitsandbytes.optim.PagedAdamW8bit", "  _component_: torch.optim.AdamW"),
                     ("  _component_: torchtune.modules.loss.LinearCrossEntropyLoss",
                      "  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss"),
                     ("compile: False", "compile: True"),
                     ("enable_activation_offloading: False", "enable_activation_offloading: True")):
        assert old in text, old
        text = text.replace(old, new)
    p = tmp_path / "3B_full_single_device.yaml"
    p.write_text(text)
    return p


def test_flags_price_what_the_torchtune_config_prices(tmp_path):
    code, file_report, out = run(str(_torchtune_readme_config(tmp_path)), "--format", "json")
    assert code == 0, out
    fe = file_report["estimate"]
    assert fe["inputs"]["compile"] and fe["inputs"]["optimizer_in_bwd"] and fe["inputs"]["activation_offload"]
    code, flag_report, out = run("--model", "meta-llama/Llama-3.2-3B", "--framework", "torchtune", "--method", "full",
                                 "--batch-size", "2", "--seq-len", "4096", "--gradient-checkpointing",
                                 "--compile", "--optimizer-in-bwd", "--activation-offloading", "--loss", "chunked",
                                 "--optim", "adamw_torch", "--format", "json")
    assert code == 0, out
    ge = flag_report["estimate"]
    assert ge["device_bytes"] == fe["device_bytes"]
    assert ge["breakdown"] == fe["breakdown"]


@pytest.mark.parametrize("flag, field", [("--optimizer-in-bwd", "optimizer_in_bwd"),
                                         ("--activation-offloading", "activation_offload"),
                                         ("--compile", "compile"), ("--checkpoint-offload", "checkpoint_offload"),
                                         ("--liger", "liger")])
def test_each_knob_flag_lowers_the_estimate(flag, field):
    # each knob on a setup whose peak is the moment it changes: the optimizer step (full
    # fine-tuning with checkpointing) for --optimizer-in-bwd, the checkpointed inputs (LoRA with
    # checkpointing) for the offloading flags, the saved activations (full, no checkpointing)
    # for --compile and --liger
    method = "lora" if flag in ("--activation-offloading", "--checkpoint-offload") else "full"
    base = ["--model", "meta-llama/Llama-3.2-3B", "--framework", "torchtune", "--method", method, "--batch-size", "2",
            "--seq-len", "4096", "--format", "json"]
    if flag in ("--activation-offloading", "--checkpoint-offload", "--optimizer-in-bwd"):
        base.append("--gradient-checkpointing")
    _, without, _ = run(*base)
    code, with_, out = run(*base, flag)
    assert code == 0, out
    assert with_["estimate"]["inputs"][field] is True
    assert with_["estimate"]["device_bytes"] < without["estimate"]["device_bytes"]
    assert any(flag in a for a in with_["estimate"]["assumptions"])


def test_loss_flag_prices_the_loss_buffers():
    args = ["--model", "meta-llama/Llama-3.2-3B", "--method", "lora", "--batch-size", "1", "--seq-len", "1024",
            "--format", "json"]
    _, hf, _ = run(*args, "--loss", "hf")
    _, chunked, _ = run(*args, "--loss", "chunked")
    # LOSS_K: hf 12, chunked 4 bytes per token·vocab: 8 × 128,256 × 1,024 tokens between them
    diff = hf["estimate"]["breakdown"]["logits"] - chunked["estimate"]["breakdown"]["logits"]
    assert diff == pytest.approx(8 * 128256 * 1024, rel=1e-6)


def test_unsloth_flags_match_the_unsloth_readme(tmp_path):
    text = (FIX / "unsloth_readme_sft.py").read_text().replace(
        'model_name = "unsloth/gpt-oss-20b"', 'model_name = "unsloth/mistral-7b-bnb-4bit"')
    p = tmp_path / "train.py"
    p.write_text(text)
    code, file_report, out = run(str(p), "--format", "json")
    assert code == 0, out
    fe = file_report["estimate"]
    code, flag_report, out = run("--model", "unsloth/mistral-7b-bnb-4bit", "--framework", "unsloth", "--method", "qlora",
                                 "--batch-size", "2", "--seq-len", "2048", "--rank", "16",
                                 "--targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                                 "--optim", "adamw_8bit", "--format", "json")
    assert code == 0, out
    ge = flag_report["estimate"]
    assert ge["inputs"]["checkpoint_offload"] and fe["inputs"]["checkpoint_offload"]
    assert ge["device_bytes"] == pytest.approx(fe["device_bytes"], rel=0.02)


def test_assume_version_changes_the_qlora_estimate():
    args = ["--model", "meta-llama/Llama-2-7b-hf", "--method", "qlora", "--no-gradient-checkpointing",
            "--batch-size", "1", "--seq-len", "512", "--format", "json"]
    _, new, _ = run(*args)
    code, old, out = run(*args, "--assume-version", "bitsandbytes=0.41.1")
    assert code == 0, out
    # before 0.43.2 each 4-bit matmul keeps the bf16 input it made: on the fp32 residual stream
    # prepare_model_for_kbit_training leaves (assumed by --method qlora), every Linear4bit casts
    # its own copy: q, k, v, gate, up (h each), o_proj's bf16 attention output (h, shared) and
    # down's input (I): 2·(6h + I) B per token per layer, h = 4096, I = 11008, 32 layers, 512 tokens
    extra = 2 * (6 * 4096 + 11008) * 32 * 512
    diff = old["estimate"]["allocated_bytes"] - new["estimate"]["allocated_bytes"]
    assert diff == pytest.approx(extra, rel=0.01)
    assert old["estimate"]["assumed_versions"]["bitsandbytes"] == {"version": "0.41.1", "origin": "--assume-version"}
    assert new["estimate"]["assumed_versions"]["bitsandbytes"]["origin"] == "assumed, not read from the project"


@pytest.mark.parametrize("value", ["bitsandbytes", "numpy=1.0", "torch=banana"])
def test_assume_version_bad_value_is_a_usage_error(value):
    code, _, out = run("--model", "meta-llama/Llama-2-7b-hf", "--assume-version", value)
    assert code == 2
    assert "--assume-version" in out and "Traceback" not in out


def _validate(report: dict) -> None:
    jsonschema.validate(report, REPORT_SCHEMA, cls=jsonschema.Draft202012Validator)


def test_json_report_validates_against_the_schema(tmp_path):
    for args in (["--model", "meta-llama/Llama-3.2-3B", "--gpu", "rtx4090"],
                 [str(FIX / "lf_v1_train_lora_sft.yaml")],
                 [str(_torchtune_readme_config(tmp_path))]):
        code, report, out = run(*args, "--format", "json")
        assert report is not None, out
        _validate(report)
        assert report["schema_version"] == SCHEMA_VERSION
        e = report["estimate"]
        assert e["counters"]["device"] == {"bytes": e["device_bytes"], "unit": "bytes",
                                           "predicts": e["counters"]["device"]["predicts"]}
        # the breakdown adds up to the device counter
        assert sum(e["breakdown"].values()) == e["device_bytes"]


def test_json_schema_rejects_a_report_without_its_version():
    code, report, _ = run("--model", "meta-llama/Llama-3.2-3B", "--format", "json")
    del report["schema_version"]
    with pytest.raises(jsonschema.ValidationError):
        _validate(report)


def test_json_schema_flag_prints_the_schema():
    res = CliRunner().invoke(estimate_cmd, ["--json-schema"])
    assert res.exit_code == 0
    assert json.loads(res.output) == REPORT_SCHEMA
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)
