"""LL006 empty-cache-misuse on hand-built setups."""

from __future__ import annotations

from rules_support import call, ctx, lora, model, run, setup, training

from lintlora.findings import Severity
from lintlora.rules.ll006_empty_cache_misuse import EmptyCacheMisuse as R


def flush(line, **kw):
    return call("empty_cache", line, "torch.cuda.empty_cache", **kw)


def test_in_a_training_loop():
    s = setup(model=model(), lora=lora(), framework="torch",
              calls=(flush(30, in_loop=True, in_step_callback=True),))
    [f] = run(R, s, ctx("a100-80gb"))
    assert (f.code, f.severity, f.span.line) == ("LL006", Severity.WARNING, 30)
    assert "training loop, on every step" in f.message and "transformers#31372" in f.message and "peft PR #2894" in f.message
    assert "does not lower the peak" in f.message
    # the fix does not change the peak: "after" equals "before"
    assert f.estimate.peak_bytes is not None and f.estimate.peak_after_fix_bytes == f.estimate.peak_bytes


def test_in_a_step_callback():
    s = setup(model=model(), lora=lora(), training=training(), calls=(flush(14, in_step_callback=True),))
    [f] = run(R, s)
    assert "per-step callback" in f.message and "every N steps" in f.fix


def test_once_after_training_or_in_inference_is_silent():
    once = setup(model=model(), lora=lora(), training=training(), calls=(flush(40),))
    inference = setup(model=model(), calls=(flush(30, in_loop=True, in_step_callback=True),), is_training=False)
    assert run(R, once) == [] and run(R, inference) == []


def test_a_loop_between_phases_is_silent():
    # a sweep over learning rates, an epoch loop around the step loop, an evaluation loop:
    # in a loop, but not once per training step
    s = setup(model=model(), lora=lora(), framework="torch", calls=(flush(30, in_loop=True),))
    assert run(R, s) == []


def test_each_call_is_its_own_finding():
    s = setup(model=model(), framework="torch", calls=(flush(30, in_loop=True, in_step_callback=True),
                                                       flush(44, in_loop=True, in_step_callback=True)))
    assert [f.span.line for f in run(R, s)] == [30, 44]


def test_names_the_device_api_the_script_calls():
    """torch.xpu.empty_cache() in the loop is reported as torch.xpu's, not torch.cuda's
    (CallSite.qualified_name); a call site without a qualified name falls back to torch.cuda."""
    for api in ("torch.xpu", "torch.npu", "torch.mps", "torch.cuda"):
        s = setup(model=model(), lora=lora(), framework="torch",
                  calls=(call("empty_cache", 30, f"{api}.empty_cache", in_loop=True, in_step_callback=True),))
        [f] = run(R, s)
        assert f.message.startswith(f"{api}.empty_cache() runs in the training loop")
        assert api == "torch.cuda" or "torch.cuda" not in f.message
    bare = setup(model=model(), lora=lora(), framework="torch",
                 calls=(call("empty_cache", 30, None, in_loop=True, in_step_callback=True),))
    [f] = run(R, bare)
    assert f.message.startswith("torch.cuda.empty_cache() runs")
