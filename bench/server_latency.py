"""Keystroke latency of ``lintlora server`` (issue 18, item 3: "a keystroke re-lints in well
under 100 ms for a 500-line script").

Starts the server over stdio (``python -m lintlora server``) with the minimal client of
``tests/lsp_client.py``, opens a 500-line training script built from the fixtures (the QLoRA
Trainer script ``fixtures/python/hf_trainer_qlora.py`` at the end of realistic helpers:
argument parsing, prompt formatting, tokenization, metrics, callbacks), then sends 30
``textDocument/didChange`` edits one after the other (each a full-text change, as a client
with full sync sends: a value edited, a comment typed) and times each from the send to the
``textDocument/publishDiagnostics`` of that version. Prints the median, p90 and max, the open's
time, and the server's peak resident memory (``VmHWM`` of ``/proc/PID/status``, Linux).

Run: ``python bench/server_latency.py [--edits 30] [--lines 500] [--profile | --compare]``;
``--profile`` runs the same lints in this process under cProfile instead (the hot path, no
server); ``--compare`` times them with and without the incremental parse
(:mod:`lintlora.extract.cst_chunks`), interleaved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

HELPER = '''

def format_prompt_{i}(example, tokenizer=None, max_chars={chars}):
    """Format one record of the instruction data set into a prompt ({i})."""
    instruction = example.get("instruction", "").strip()
    context = example.get("input", "").strip()
    answer = example.get("output", "").strip()
    if context:
        text = f"### Instruction:\\n{{instruction}}\\n\\n### Input:\\n{{context}}\\n\\n### Response:\\n{{answer}}"
    else:
        text = f"### Instruction:\\n{{instruction}}\\n\\n### Response:\\n{{answer}}"
    if tokenizer is not None and tokenizer.eos_token:
        text += tokenizer.eos_token
    return {{"text": text[:max_chars]}}


def tokenize_batch_{i}(batch, tokenizer, cutoff_len={cutoff}):
    result = tokenizer(batch["text"], truncation=True, max_length=cutoff_len, padding=False)
    result["labels"] = [list(ids) for ids in result["input_ids"]]
    return result


def compute_metrics_{i}(eval_pred):
    logits, labels = eval_pred
    predictions = logits.argmax(-1)
    mask = labels != -100
    correct = ((predictions == labels) & mask).sum()
    return {{"accuracy": float(correct) / max(int(mask.sum()), 1)}}


class LoggingCallback{i}(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and state.is_world_process_zero:
            print({{k: round(v, 4) if isinstance(v, float) else v for k, v in logs.items()}})
'''

HEADER = '''"""Instruction tuning of a 7B model with QLoRA (benchmark script built from fixtures)."""
import math
import os

import torch
from datasets import load_dataset
from transformers import TrainerCallback
'''


def build_script(lines: int = 500) -> str:
    """A realistic training script of about ``lines`` lines."""
    core = (ROOT / "fixtures" / "python" / "hf_trainer_qlora.py").read_text(encoding="utf-8")
    parts = [HEADER]
    i = 0
    while (sum(p.count("\n") for p in parts) + core.count("\n")) < lines:
        parts.append(HELPER.format(i=i, chars=2000 + 10 * i, cutoff=256 + i))
        i += 1
    parts.append("\n\n" + core)
    text = "".join(parts)
    return text


def edits(text: str, count: int) -> list[str]:
    """``count`` successive versions: a comment typed character by character on a helper's
    line, then a value edited (the learning rate), alternating."""
    versions = []
    current = text
    for n in range(count):
        if n % 2 == 0:
            current = current.replace("    predictions = logits.argmax(-1)\n",
                                      f"    predictions = logits.argmax(-1)  # v{n}\n", 1)
        else:
            current = current.replace(f"  # v{n - 1}\n", "\n", 1)
            current = current.replace("learning_rate=2e-4", "learning_rate=2.5e-4", 1) \
                if "learning_rate=2e-4" in current else current.replace(
                    "learning_rate=2.5e-4", "learning_rate=2e-4", 1)
        versions.append(current)
    return versions


def peak_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_server(count: int, lines: int) -> None:
    from lsp_client import LspClient

    folder = Path(tempfile.mkdtemp(prefix="lintlora-bench-"))
    (folder / ".git").mkdir()
    script = folder / "train.py"
    text = build_script(lines)
    script.write_text(text, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    started = time.perf_counter()
    client = LspClient(cwd=str(folder), env=env)
    client.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(),
                                  "capabilities": {},
                                  "initializationOptions": {"gpu": "rtx4090"}})
    client.notify("initialized", {})
    ready = time.perf_counter()
    uri = script.as_uri()
    mark = client.mark()
    t0 = time.perf_counter()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    first = client.diagnostics(uri, since=mark, version=1)
    opened = time.perf_counter() - t0
    times = []
    for version, new_text in enumerate(edits(text, count), start=2):
        mark = client.mark()
        t0 = time.perf_counter()
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [{"text": new_text}]})
        client.diagnostics(uri, since=mark, version=version)
        times.append(time.perf_counter() - t0)
    rss = peak_rss_kib(client.proc.pid)
    client.request("shutdown")
    client.notify("exit")
    client.proc.wait(20)
    times.sort()
    p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
    print(f"script: {text.count(chr(10))} lines, {len(first)} diagnostics "
          f"({', '.join(sorted({d['code'] for d in first}))})")
    print(f"server start + initialize: {1000 * (ready - started):.0f} ms; didOpen -> "
          f"diagnostics: {1000 * opened:.0f} ms")
    print(f"didChange -> publishDiagnostics over {len(times)} edits: median "
          f"{1000 * statistics.median(times):.1f} ms, p90 {1000 * p90:.1f} ms, max "
          f"{1000 * times[-1]:.1f} ms")
    print(f"server peak RSS: {rss / 1024:.0f} MiB" if rss else "server peak RSS: n/a")


def run_profile(count: int, lines: int) -> None:
    import cProfile
    import pstats

    from lintlora.server_lint import LintSession, diagnostics

    folder = Path(tempfile.mkdtemp(prefix="lintlora-bench-"))
    (folder / ".git").mkdir()
    script = folder / "train.py"
    text = build_script(lines)
    script.write_text(text, encoding="utf-8")
    session = LintSession({"gpu": "rtx4090"})
    session.lint(str(script), text)
    profile = cProfile.Profile()
    profile.enable()
    for new_text in edits(text, count):
        result = session.lint(str(script), new_text)
        diagnostics(result, new_text, "utf-16", session.rule_of)
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


def run_compare(count: int, lines: int) -> None:
    """The lint of each edit in this process, with the incremental parse and without it
    (LibCST's whole-file parse), interleaved so both see the same machine load; the results
    are checked equal."""
    from lintlora.server_lint import LintSession

    folder = Path(tempfile.mkdtemp(prefix="lintlora-bench-"))
    (folder / ".git").mkdir()
    script = folder / "train.py"
    text = build_script(lines)
    script.write_text(text, encoding="utf-8")
    session = LintSession({"gpu": "rtx4090"})
    session.lint(str(script), text)
    chunked = session.parser
    incremental, whole = [], []
    for new_text in edits(text, count):
        session.parser = chunked
        t0 = time.perf_counter()
        a = session.lint(str(script), new_text)
        incremental.append(time.perf_counter() - t0)
        session.parser = None
        t0 = time.perf_counter()
        b = session.lint(str(script), new_text)
        whole.append(time.perf_counter() - t0)
        assert a.findings == b.findings and a.setups == b.setups
    print(f"lint of one edit ({text.count(chr(10))} lines), median over {count}: incremental parse "
          f"{1000 * statistics.median(incremental):.1f} ms, whole-file parse "
          f"{1000 * statistics.median(whole):.1f} ms (results equal)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--compare", action="store_true",
                        help="in this process: the lint with and without the incremental parse")
    args = parser.parse_args()
    run = run_profile if args.profile else run_compare if args.compare else run_server
    run(args.edits, args.lines)


if __name__ == "__main__":
    main()
