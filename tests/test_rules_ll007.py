"""LL007 dataloader-workers on hand-built setups."""

from __future__ import annotations

from rules_support import DataLoaderSpec, at, ctx, lit, model, run, setup, training

from lintlora.findings import Severity
from lintlora.rules.ll007_dataloader_workers import DataloaderWorkers as R
from lintlora.training_setup import Setting


def loader(n, line=25):
    value = lit(n, line, 60) if not isinstance(n, Setting) else n
    return DataLoaderSpec(num_workers=value, span=at(line))


def test_above_eight_without_a_cpu_count_is_info():
    s = setup(model=model(), framework="torch", dataloaders=(loader(24),))
    [f] = run(R, s, ctx("h100"))
    assert (f.code, f.severity, f.span.line, f.span.column) == ("LL007", Severity.INFO, 25, 60)
    assert "24 worker processes" in f.message and "host RAM" in f.message
    assert "GPU memory is unchanged" in f.message
    assert f.estimate.peak_after_fix_bytes == f.estimate.peak_bytes is not None


def test_threshold_follows_the_cpu_count():
    s = setup(model=model(), framework="torch", dataloaders=(loader(24),))
    assert run(R, s, ctx(cpus=32)) == []
    [f] = run(R, s, ctx(cpus=16))
    assert f.severity is Severity.WARNING and "16 CPUs" in f.message
    eight = setup(model=model(), framework="torch", dataloaders=(loader(8),))
    assert run(R, eight) == []
    assert len(run(R, eight, ctx(cpus=4))) == 1


def test_trainer_setting_and_each_loader_are_reported():
    s = setup(model=model(), training=training(dataloader_num_workers=lit(12, 14, 9)),
              dataloaders=(loader(16, 30), loader(2, 31)))
    found = run(R, s)
    assert [(f.span.line, f.span.column) for f in found] == [(14, 9), (30, 60)]
    assert "dataloader_num_workers=12" in found[0].message


def test_unknown_counts_and_inference_are_silent():
    unknown = setup(model=model(), dataloaders=(loader(Setting.unknown("os.cpu_count()")),))
    inference = setup(model=model(), dataloaders=(loader(32),), is_training=False)
    assert run(R, unknown) == [] and run(R, inference) == []
