"""bench/multi_gpu.py reads each multi-GPU row as a run (script, run.sh, accelerate config) through
lintlora's own extraction: the distribution it finds is the one the row's source states
(litgpt ``devices``, the PEFT docs' accelerate configs), and for the truth-table rows the run's
estimate equals the estimate of the inputs read from the row (no loss in extraction)."""

from __future__ import annotations

import pytest

from bench_support import load_bench
from lintlora.training_setup import Origin

multi = load_bench("multi_gpu")
accuracy = load_bench("accuracy")


@pytest.fixture(scope="module")
def truth():
    return {r.row_id: r for r in multi.truth_rows({"25", "30", "226"})}


@pytest.mark.parametrize("row_id", ["25", "30", "226"])
def test_the_run_path_reproduces_the_inputs_path(tmp_path, truth, row_id):
    est, dist, problems = multi.estimate_run(truth[row_id], tmp_path)
    assert not problems
    rows = {r["row_id"]: r for r in accuracy.load()}
    n = int(rows[row_id]["num_gpus"])
    assert dist.world_size.value == n and dist.backend.value == "fsdp"
    expect = accuracy.inputs_estimate(accuracy.row_setup(rows[row_id]))
    assert est.allocated_bytes == pytest.approx(expect.allocated, rel=1e-9)
    assert f"× {n} ranks" in est.sharding


def test_the_peft_docs_runs_are_read_from_their_accelerate_configs(tmp_path):
    rows = {r.row_id: r for r in multi.peft_rows()}
    est, dist, problems = multi.estimate_run(rows["peft-ds-z3-qlora"], tmp_path)
    assert not problems and est.sharding == "DeepSpeed ZeRO-3 × 2 ranks"
    assert dist.world_size.origin is Origin.CONFIG_FILE and dist.world_size.span.path.endswith("acc.yaml")
    est, dist, _ = multi.estimate_run(rows["peft-fsdp-qlora-offload"], tmp_path)
    assert dist.fsdp_offload_params.value is True and est.breakdown["weights"] == 0
    assert est.host_offload_bytes > 0
