"""A GPU whose catalog memory is its marketed size (no cited CUDA-visible total) is labelled
"nominal" wherever a finding shows that size (lintlora.findings.MemoryFigures.gpu_memory_nominal)."""

import io
import json
import os
import shutil

from lintlora.cache import decode_result, encode_result
from lintlora.context import Context
from lintlora.engine import FileResult, lint_paths
from lintlora.report import memory_line, render
from lintlora.settings import Settings

CONFIG = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cases",
                      "C11_axolotl_fp16_no_gc.yml")


def _render(result, fmt):
    out = io.StringIO()
    render(result, fmt, out)
    return out.getvalue()


def test_a_nominal_gpu_size_is_labelled_wherever_it_is_shown(tmp_path):
    """Cards with no cited CUDA-visible total (RTX A6000) are checked against their marketed
    size, an upper bound: the memory line, the rule's own sentence, Markdown, JSON and the
    cache all say so; a catalog total (RTX 3090) or --gpu-memory is not labelled."""
    assert Context(Settings(gpu="a6000")).gpu_memory_nominal is True
    assert Context(Settings(gpu="rtx3090")).gpu_memory_nominal is False
    assert Context(Settings(gpu="a6000", gpu_memory_bytes=46 * 2**30)).gpu_memory_nominal is False
    config = tmp_path / "axolotl.yml"
    shutil.copy(CONFIG, config)
    for gpu, nominal in (("a6000", True), ("rtx3090", False)):
        result = lint_paths([str(config)], settings_for=lambda _p, g=gpu: Settings(
            gpu=g, select=("LL001",)))
        (finding,) = result.findings
        assert finding.estimate.gpu_memory_nominal is nominal
        said = memory_line(finding.estimate)
        assert ("GiB nominal" in said) is nominal and ("GiB nominal)" in finding.message) is nominal
        assert ("GiB nominal)" in _render(result, "markdown")) is nominal
        doc = json.loads(_render(result, "json"))
        assert doc["findings"][0]["estimate"]["gpu_memory_nominal"] is nominal
        cached = decode_result(json.loads(json.dumps(encode_result(
            FileResult(str(config), "yaml", findings=[finding])))))
        assert cached.findings == [finding]
