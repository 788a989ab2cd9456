"""A run for the review-tool formats' tests (issue 18 item 2: rdjson, gitlab, junit, concise).

:func:`hostile_run` writes real files under a folder (so autofixes resolve against real text
and columns can be converted with the real lines) and builds a :class:`RunResult` by hand with:
a finding on a line holding non-ASCII characters before it (``é``, ``漢``, ``𐐀``: 2, 3 and 4
UTF-8 bytes) with a safe autofix; one with an unsafe autofix; a notebook finding; a finding
whose message, fix and related location hold hostile strings (Markdown fences, ``<``, ``]]>``,
NUL, ESC, CR LF, bidi overrides, a forged ``path:1:1:`` line, a very long text); an ``LL998``
error, an ``LL999`` internal error, an ``LL000`` notice (a file not parsed) and another notice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from lintlora.engine import RunResult
from lintlora.findings import (EditOp, FileError, Finding, Fix, FixSafety, MemoryFigures,
                               RelatedLocation, Severity)
from lintlora.report.locations import notebook_cell_lines
from lintlora.training_setup import Span

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(REPO, "fixtures", "schemas")

HOSTILE = ("fence ``` <img src=x onerror=alert(1)> ``` ]]> &amp; <![CDATA[x]]> "
           "nul\x00 esc\x1b[31m red\x1b[0m crlf\r\nnext\nother.py:1:1: LL001 forged line "
           "bidi\u202eyp\u2066 @org/team #12 [link](https://evil.example) \udcff "
           "\ufffe\uffff ##[error]x ::error::y " + "long " * 400)
"""Everything a pull request can put in a message (a name a rule quotes)."""

PREFIX = 'x = "é漢𐐀"; '
"""Text before the flagged call on its line: 3 characters, 2 + 3 + 4 = 9 UTF-8 bytes."""

TRAIN = (
    "import os\n"
    f"{PREFIX}args = TrainingArguments(fp16=True)\n"
    "lora = LoraConfig(r=64)\n"
    "bad()\n"
)


def _notebook() -> str:
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
                    {"cell_type": "code", "metadata": {}, "execution_count": None,
                     "outputs": [], "source": ["x = 1\n", "bad()\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1)


def hostile_run(root: str, *, with_problems: bool = True) -> RunResult:
    """Write the files under ``root`` (the working directory of the test) and return the run.

    Findings (sorted as the engine sorts them): ``train.py`` line 2 ``TX001`` (safe fix on the
    ``fp16`` keyword, character column 28), line 3 ``TX002`` (unsafe fix), line 4 ``TS001``
    (hostile message); ``nb.ipynb`` cell 1 line 2 ``TS001``."""
    train = os.path.join(root, "train.py")
    with open(train, "w", encoding="utf-8", newline="") as handle:
        handle.write(TRAIN)
    notebook = os.path.join(root, "nb.ipynb")
    with open(notebook, "w", encoding="utf-8") as handle:
        handle.write(_notebook())
    clean = os.path.join(root, "clean.py")
    with open(clean, "w", encoding="utf-8") as handle:
        handle.write("print('nothing to see')\n")
    line2 = TRAIN.splitlines()[1]
    col = line2.index("fp16") + 1
    fp16 = Span(train, 2, col, 2, col + len("fp16=True"))
    key = Span(train, 2, col, 2, col + 4)
    r_col = TRAIN.splitlines()[2].index("64") + 1
    rank = Span(train, 3, r_col, 3, r_col + 2)
    estimate = MemoryFigures(peak_bytes=30 * 2**30, peak_after_fix_bytes=20 * 2**30,
                             gpu="RTX 3090", gpu_memory_bytes=24 * 2**30, model="Llama-2-7B",
                             note="batch 4 × 512 tokens")
    findings = [
        Finding("TX001", "test-fp16", Severity.WARNING, fp16, "fp16 on a bf16 GPU",
                fix="use bf16=True", estimate=estimate,
                autofix=Fix("use bf16", FixSafety.SAFE, (EditOp("replace", key, "bf16"),))),
        Finding("TX002", "test-rank", Severity.INFO, rank, "rank 64 is large", fix="r=8",
                autofix=Fix("set r=8", FixSafety.UNSAFE, (EditOp("replace", rank, "8"),))),
        Finding("TS001", "bad-call", Severity.ERROR, Span(train, 4, 1, 4, 6),
                f"bad() was called: {HOSTILE}", fix=f"do not: {HOSTILE}", estimate=estimate,
                related=(RelatedLocation(Span(os.path.join(root, "run.sh"), 3, 1),
                                         f"launched by run.sh:3 {HOSTILE[:80]}"),)),
        Finding("TS001", "bad-call", Severity.WARNING, Span(notebook, 2, 1, 2, 6, cell=1),
                "bad() was called", estimate=MemoryFigures(note="model unknown")),
    ]
    errors, notices = [], []
    files = [clean, notebook, train]
    if with_problems:
        broken = os.path.join(root, "broken.py")
        with open(broken, "w", encoding="utf-8") as handle:
            handle.write("def f(:\n")
        files.insert(0, broken)
        errors = [FileError(os.path.join(root, "huge.py"), f"too large: {HOSTILE[:60]}",
                            "LL998", 3, 1),
                  FileError(os.path.join(root, "odd.py"), "internal error in rule X: boom",
                            "LL999")]
        notices = [FileError(broken, "invalid syntax", "LL000", 1, 7),
                   FileError(os.path.join(root, "cfg.yaml"),
                             f"not a training config: {HOSTILE[:40]}", "LL998")]
    with open(notebook, encoding="utf-8") as handle:
        cell_lines = {notebook: notebook_cell_lines(handle.read())}
    return RunResult(files=files, findings=findings, errors=errors, notices=notices,
                     cell_lines=cell_lines, rules=[])


def lintlora_cli(cwd: str, *args: str, output: str | None = None) -> tuple[int, str, str]:
    """Run ``python -m lintlora --no-cache ARGS`` in ``cwd`` with a strict UTF-8 standard
    output; returns (status, report text, stderr)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "NO_COLOR": "1",
           "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"}
    command = [sys.executable, "-m", "lintlora", "--no-cache", *args]
    if output:
        command += ["-o", output]
    done = subprocess.run(command, cwd=cwd, capture_output=True, env=env, timeout=300)
    report = done.stdout
    if output:
        with open(os.path.join(cwd, output), "rb") as handle:
            report = handle.read()
    return done.returncode, report.decode("utf-8"), done.stderr.decode("utf-8", "replace")


def fixtures_with_findings() -> list[str]:
    """Fixture files with findings and safe fixes (the real rules): the example scripts."""
    return [os.path.join(REPO, "fixtures", "examples")]
