"""LL001 does not judge the fit of a run LL008 gives no verdict on (issue 15 trial): axolotl's
examples/distributed-parallel/qwen3-8b-fsdp-tp-cp.yaml (FSDP2 over dp_shard × tensor × context
parallel ranks, no rank count lintlora can read) got "As written the estimate does not fit on the
A100 SXM4 80GB, and checkpointing alone does not bring it under" from a one-GPU, unsharded
estimate (where the fix made that estimate fit, the same comparison made it an *error*). LL008 is silent on both (a sharded run of unknown size); LL001 now reports the saving
without a verdict against the GPU, at its default severity.
"""

import json
from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "axolotl" / "qwen3-8b-fsdp-tp-cp.yaml"


def _findings(capsys, path):
    try:
        main([str(path), "--gpu", "a100-80gb", "--no-cache", "--format", "json"])
    except SystemExit:
        pass
    return json.loads(capsys.readouterr().out)["findings"]


def test_ll001_gives_no_fit_verdict_on_a_sharded_run_of_unknown_size(capsys):
    found = _findings(capsys, FIXTURE)
    ll001 = [f for f in found if f["code"] == "LL001"]
    assert ll001, found
    assert "does not fit" not in ll001[0]["message"]
    assert ll001[0]["severity"] == "warning"
    assert not [f for f in found if f["code"] == "LL008"]


def test_ll001_still_judges_the_fit_of_one_gpu(capsys, tmp_path):
    text = FIXTURE.read_text()
    for key in ("dp_shard_size: 2\n", "context_parallel_size: 2\n", "tensor_parallel_size: 2\n",
                "fsdp_version: 2\n"):
        text = text.replace(key, "")
    text = text.split("fsdp_config:")[0] + "datasets:" + text.split("datasets:")[1]
    p = tmp_path / "one.yaml"
    p.write_text(text)
    ll001 = [f for f in _findings(capsys, p) if f["code"] == "LL001"]
    assert ll001 and "does not fit" in ll001[0]["message"]
