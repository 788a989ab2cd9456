"""A long fuzz run of the whole lint: mutated fixtures and random YAML through ``lint_paths``.

    python bench/fuzz.py [--inputs 20000] [--seed 1] [--jobs 2] [--batch 50] [--hostile 0.25]
                         [--out DIR]

Inputs are made from the fixtures (``fixtures/**``: Python scripts, notebooks, YAML and JSON
configs) by one to four mutations each (:func:`mutate`): deleting, duplicating, swapping or
inserting tokens; deleting, duplicating, swapping or re-indenting lines; truncating; and
byte-level damage (a stray byte, a BOM, a lone CR, a NUL, a non-UTF-8 byte). Notebooks are also
mutated inside their cells (the JSON stays valid, the code does not). One input in eight is a
random YAML document (:func:`random_yaml`): training keys with odd values, anchors and aliases,
tags, deep or wide collections, then mutated as text. With ``--hostile FRACTION`` (default 0.25)
that share of the inputs are hostile cases instead (``bench/fuzz_hostile.py``: file names that
carry workflow commands or escapes, scripts reading files outside their project or special
files, arithmetic and YAML bombs, code deep for LibCST, values beyond float range); each is
linted as its own small project and rendered in every format, and its outputs checked
(:func:`fuzz_hostile.output_problems`: no planted secret, no raw control or bidi character,
no extra workflow command, no raw HTML in Markdown, no ``LL000`` on valid Python). One hostile
case in ten is linted again with a results cache whose entries are then tampered with
(:func:`check_cache_tamper`): the third run must report exactly what a run without the cache
reports.

Inputs are written in batches to a temporary folder and linted by
:func:`lintlora.engine.lint_paths` as one run per batch (so isolation between files is
exercised too), with the real extractors, rules and estimator. Each batch's result is rendered
as JSON and SARIF and parsed back. Counted as failures:

- an exception escaping ``lint_paths`` or a reporter (the batch is re-run file by file to name
  the input);
- an ``LL999`` internal error (a bug caught at the isolation boundary);
- output that is not valid JSON;
- a batch slower than ``--slow`` seconds per input on average (a hang or a blow-up), or one
  hostile case slower than ten times that;
- for hostile cases, any problem :func:`fuzz_hostile.output_problems` finds, and a cached
  result that differs from the uncached one.

Failing inputs are saved under ``--out`` (default ``bench/out/fuzz-failures``) with the error,
to reproduce with ``lintlora FILE``. Printed at the end: inputs tried, by kind, failures by
class, and the slowest batch. The exit status is 1 when anything failed.

The mutation functions are shared with ``tests/test_fuzz.py`` (the short property-based run).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import fuzz_hostile  # noqa: E402 - bench/ is put on the path just above

FIXTURE_DIRS = ("fixtures/python", "fixtures/rules", "fixtures/cases", "fixtures/examples",
                "fixtures/configs")
SUFFIXES = (".py", ".ipynb", ".yaml", ".yml", ".json")

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|\s+|.", re.S)
_INSERTS = ("(", ")", "[", "]", "{", "}", ":", ",", ".", "=", "==", "'", '"', '"""', "\\",
            "\n", "\t", "    ", "#", "@", "*", "**", "-", "lambda", "if", "else", "not",
            "None", "True", "False", "0", "1e9", "-1", "'bf16'", "import", "from", "def",
            "class", "return", "yield", "await", "async", "with", "for", "in", "del",
            "global", "nonlocal", "&", "!", "%", "|", ">", "<<", "*a", "**kw", "é", "\u2028",
            "\ufeff", "model", "args", "TrainingArguments", "LoraConfig", "from_pretrained",
            "gradient_checkpointing", "per_device_train_batch_size", "target_modules",
            "load_in_4bit", "- ", ": ", "&a ", "*a", "!!python/object ", "<<: ", "---\n",
            "...\n", "? ", "|\n", ">-\n", "~", "null", ".inf", "0x1F", "0o17", "2001-12-14")
_BYTES = (b"\x00", b"\xff", b"\xfe", b"\xe9", b"\r", b"\r\n", b"\xef\xbb\xbf", b"\x1a",
          b"\x0c", b"\xc3", b"\xed\xa0\x80")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


# ---- mutations: each takes the text, a Random, returns the new text ---------------------------

def _delete_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if toks:
        del toks[rng.randrange(len(toks))]
    return "".join(toks)


def _duplicate_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if toks:
        i = rng.randrange(len(toks))
        toks.insert(i, toks[i] * rng.choice((1, 1, 2, 50)))
    return "".join(toks)


def _swap_tokens(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if len(toks) > 1:
        i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


def _insert_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    token = rng.choice(_INSERTS) if rng.random() < 0.7 or not toks else rng.choice(toks)
    toks.insert(rng.randrange(len(toks) + 1), token)
    return "".join(toks)


def _delete_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if lines:
        del lines[rng.randrange(len(lines))]
    return "".join(lines)


def _duplicate_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if lines:
        i = rng.randrange(len(lines))
        lines[i:i] = [lines[i]] * rng.choice((1, 1, 3, 200))
    return "".join(lines)


def _swap_lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def _reindent_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if lines:
        i = rng.randrange(len(lines))
        body = lines[i].lstrip(" \t")
        lines[i] = rng.choice(("", " ", "  ", "    ", "\t", " \t", " " * 9)) + body
    return "".join(lines)


def _truncate(text: str, rng: random.Random) -> str:
    return text[:rng.randrange(len(text) + 1)]


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")
_STRING = re.compile(r"'[^'\n\\]*'|\"[^\"\n\\]*\"")
_NUMBERS = ("0", "-1", "1", "3", "1e30", "10**100", "2**63", "0.5", "-0.0", "1_000_000",
            "float('nan')", "True", "None", "4096", "1e-5", "0x10", "65536", "99999999999999999999")
_STRINGS = ("''", "'all-linear'", "'auto'", "'bf16'", "'float16'", "'nf4'", "'paged_adamw_8bit'",
            "'cuda:0'", "'meta-llama/Llama-2-7b-hf'", "'unknown/model'", "'q_proj'",
            "'.*proj'", "'é'", "'\\x00'", "f'{x}'", "b'bytes'", "'sequential'", "'balanced'")


def _replace_match(pattern: re.Pattern, pool: Callable[[list[str]], Sequence[str]]):
    def mutation(text: str, rng: random.Random) -> str:
        found = list(pattern.finditer(text))
        if not found:
            return text
        m = rng.choice(found)
        choices = pool([f.group(0) for f in found])
        return text[:m.start()] + rng.choice(choices) + text[m.end():]
    return mutation


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    # keep the syntax, change the meaning: reach the resolver, the rules and the estimator
    "replace name": _replace_match(_NAME, lambda names: names),
    "replace number": _replace_match(_NUMBER, lambda numbers: _NUMBERS + tuple(numbers)),
    "replace string": _replace_match(_STRING, lambda strings: _STRINGS + tuple(strings)),
    # break the syntax or the structure
    "delete token": _delete_token, "duplicate token": _duplicate_token,
    "swap tokens": _swap_tokens, "insert token": _insert_token,
    "delete line": _delete_line, "duplicate line": _duplicate_line,
    "swap lines": _swap_lines, "reindent line": _reindent_line, "truncate": _truncate,
}
"""Text mutations by name (shared with tests/test_fuzz.py)."""


def damage_bytes(data: bytes, rng: random.Random) -> bytes:
    """Insert or overwrite one byte sequence that decoding must cope with."""
    junk = rng.choice(_BYTES)
    at = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        return data[:at] + junk + data[at:]
    return data[:at] + junk + data[at + len(junk):]


def mutate(text: str, rng: random.Random, rounds: int | None = None) -> str:
    """Apply one to four random text mutations (``rounds`` fixes the number; by default one
    half of the time, so many inputs still parse and reach the rules)."""
    if rounds is None:
        rounds = rng.choice((1, 1, 1, 1, 2, 2, 3, 4))
    for _ in range(rounds):
        text = MUTATIONS[rng.choice(sorted(MUTATIONS))](text, rng)
    return text


def mutate_notebook_cells(text: str, rng: random.Random) -> str:
    """Mutate the code inside a notebook's cells, keeping the JSON valid (the notebook
    reader's and the cell mapping's paths, which raw-text mutation mostly never reaches)."""
    try:
        nb = json.loads(text)
        cells = nb["cells"]
    except (ValueError, KeyError, TypeError):
        return mutate(text, rng)
    code = [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    if not code:
        return mutate(text, rng)
    cell = rng.choice(code)
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    action = rng.random()
    if action < 0.7:
        cell["source"] = mutate(source, rng).splitlines(keepends=True)
    elif action < 0.8:
        cell["source"] = rng.choice((None, 7, {"x": 1}, [1, "a"], ""))
    elif action < 0.9:
        cells.insert(rng.randrange(len(cells) + 1), rng.choice(
            ({"cell_type": "code"}, {"cell_type": "markdown", "source": "# x"}, 3, None,
             {"cell_type": "code", "source": ["%%bash\n", "ls\n"]},
             {"cell_type": "code", "source": ["!pip install x\n", "%time y = 1\n"]})))
    else:
        cells.remove(cell)
    return json.dumps(nb, indent=rng.choice((None, 1)))


# ---- random YAML -------------------------------------------------------------------------------

_YAML_KEYS = ("base_model", "model_name_or_path", "adapter", "load_in_4bit", "load_in_8bit",
              "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules",
              "lora_target_linear", "sequence_len", "micro_batch_size",
              "gradient_accumulation_steps", "gradient_checkpointing", "bf16", "fp16", "tf32",
              "optimizer", "learning_rate", "num_epochs", "datasets", "finetuning_type",
              "lora_target", "quantization_bit", "per_device_train_batch_size", "cutoff_len",
              "model", "_component_", "checkpoint_dir", "enable_activation_checkpointing",
              "batch_size", "dtype", "max_seq_length", "packing", "deepspeed", "fsdp",
              "dataloader_num_workers", "torch_dtype", "device_map", "unknown_key", "x")


def _yaml_scalar(rng: random.Random) -> str:
    return rng.choice((
        "true", "false", "yes", "no", "on", "off", "null", "~", "", "0", "-1", "8", "16",
        "4096", "2e-4", "1e400", "-.inf", ".nan", "0x1F", "0o17", "1_000", "3.", "'8'",
        '"bf16"', "bf16", "fp16", "float16", "bfloat16", "auto", "all-linear", "[q_proj, v_proj]",
        "meta-llama/Llama-2-7b-hf", "unsloth/llama-3-8b-bnb-4bit", "2001-12-14t21:59:43.10-05:00",
        "!!binary aGVsbG8=", "!!str 5", "!!int '7'", "!!float 1", "!!python/object:os.system x",
        "!Ref thing", "&anchor 3", "*anchor", "*missing", "'" + "x" * rng.randint(0, 3000) + "'",
        "|\n  block\n  text", ">-\n  folded", "{a: 1, b: [2, 3]}", "[]", "{}", "- - - x",
        "'unterminated", "\"esc \\x41 \\u00e9 \\q\"", "ünïcödé", "\t", "@reserved", "`bad",
        "%TAG", "? complex", "key: value: again"))


def _yaml_value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    pad = "  " * (depth + 1)
    if depth > 6 or roll < 0.6:
        return " " + _yaml_scalar(rng)
    if roll < 0.8:
        return "".join(f"\n{pad}- {_yaml_value(rng, depth + 1).strip() or 'x'}"
                       for _ in range(rng.randint(0, 4)))
    return "".join(f"\n{pad}{rng.choice(_YAML_KEYS)}:{_yaml_value(rng, depth + 1)}"
                   for _ in range(rng.randint(0, 4)))


def random_yaml(rng: random.Random) -> str:
    """A random YAML document shaped like a training config (often invalid, sometimes hostile)."""
    lines = []
    if rng.random() < 0.1:
        lines.append(rng.choice(("%YAML 1.1", "---", "--- !!map", "%TAG ! tag:x,2000:")))
    for _ in range(rng.randint(0, 14)):
        lines.append(f"{rng.choice(_YAML_KEYS)}:{_yaml_value(rng, 0)}")
    if rng.random() < 0.15:
        lines.append("base: &base {lora_r: 8, bf16: true}\nchild:\n  <<: *base\n  lora_r: 16")
    if rng.random() < 0.05:
        n = rng.choice((3, 9))
        lines.append("l0: &l0 [a, a, a, a, a, a, a, a, a]")
        lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, n)]
    if rng.random() < 0.05:
        depth = rng.choice((10, 70, 3000))
        lines.append("deep: " + "[" * depth + "]" * depth)
    if rng.random() < 0.1:
        lines.append("---\nsecond: document")
    text = "\n".join(lines) + rng.choice(("\n", "", "\r\n", "\n\n\n"))
    return mutate(text, rng, rounds=rng.choice((0, 0, 1, 2)))


# ---- corpus ------------------------------------------------------------------------------------

def as_notebook(source: str) -> str:
    """A Python script as an nbformat-4 notebook: one code cell per block of lines between
    blank lines at the top level, with a markdown cell and a magic now and then."""
    cells, block = [], []
    for line in source.splitlines(keepends=True):
        block.append(line)
        if not line.strip() and len(block) > 1:
            cells.append(block)
            block = []
    if block:
        cells.append(block)
    out = [{"cell_type": "markdown", "metadata": {}, "source": ["# notebook\n"]}]
    for i, lines in enumerate(cells):
        if i % 4 == 1:
            lines = ["%%time\n"] + lines
        elif i % 4 == 2:
            lines = ["!nvidia-smi\n"] + lines
        out.append({"cell_type": "code", "metadata": {}, "outputs": [],
                    "execution_count": None, "source": lines})
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1)


def load_corpus(root: Path = ROOT) -> list[tuple[str, str]]:
    """(suffix, text) of every fixture lintlora reads, sorted by path, and each Python
    fixture again as a notebook (:func:`as_notebook`)."""
    out = []
    for folder in FIXTURE_DIRS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                try:
                    text = path.read_text("utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                out.append((path.suffix, text))
                if path.suffix == ".py":
                    out.append((".ipynb", as_notebook(text)))
    return out


def make_input(corpus: Sequence[tuple[str, str]], rng: random.Random) -> tuple[str, str, bytes]:
    """One fuzz input: (kind label, file suffix, bytes)."""
    if rng.random() < 0.125:
        return "random yaml", rng.choice((".yaml", ".yml")), random_yaml(rng).encode("utf-8")
    suffix, text = rng.choice(corpus)
    if suffix == ".ipynb" and rng.random() < 0.6:
        return "notebook cells", suffix, mutate_notebook_cells(text, rng).encode("utf-8")
    data = mutate(text, rng).encode("utf-8", "surrogatepass")
    label = {".py": "python", ".ipynb": "notebook", ".json": "json"}.get(suffix, "yaml")
    if rng.random() < 0.15:
        data = damage_bytes(data, rng)
        label += " bytes"
    return label, suffix, data


# ---- running ----------------------------------------------------------------------------------

def check_run(paths: Sequence[str], case: "fuzz_hostile.Case | None" = None,
              cache_dir: str | None = None) -> list[str]:
    """Lint ``paths`` in one run and render JSON and SARIF (every format for a hostile
    ``case``, whose outputs are then checked); returns the problems found (empty when all is
    well). Exceptions escaping lintlora are returned, not raised. ``cache_dir``: lint with the
    results cache there (default: no cache)."""
    problems, _ = _lint_and_render(paths, case, cache_dir)
    return problems


def _lint_and_render(paths: Sequence[str], case: "fuzz_hostile.Case | None" = None,
                     cache_dir: str | None = None) -> tuple[list[str], str | None]:
    """:func:`check_run`'s work; also returns the JSON output (``None`` if none was made)."""
    from lintlora.engine import lint_paths
    from lintlora.report import render
    from lintlora.settings import Settings

    problems = []
    try:
        # the cache is read only when setups are not kept (lint_paths' keep_setups)
        result = lint_paths(list(paths), Settings(jobs=1), cache_dir=cache_dir,
                            keep_setups=cache_dir is None)
    except BaseException as exc:  # noqa: BLE001 - that is what is being looked for
        if isinstance(exc, KeyboardInterrupt):
            raise
        return [f"escaped lint_paths: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"], None
    for error in result.errors:
        if error.code == "LL999":
            problems.append(f"LL999 {os.path.basename(error.path)}: {error.message}")
    formats = ("json", "sarif") if case is None else ("json", "sarif", "text", "github",
                                                     "markdown")
    outputs = {}
    for name in formats:
        buffer = io.StringIO()
        try:
            render(result, name, buffer)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append(f"escaped the {name} reporter: {type(exc).__name__}: {exc}")
            continue
        outputs[name] = buffer.getvalue()
        if name in ("json", "sarif"):
            try:
                json.loads(outputs[name])
            except ValueError as exc:
                problems.append(f"invalid {name} output: {exc}")
    if case is not None:
        problems += fuzz_hostile.output_problems(case, outputs, result)
    return problems, outputs.get("json")


def _comparable(json_text: str | None) -> object:
    """A JSON report without what may differ between two runs of the same input."""
    if json_text is None:
        return None
    try:
        report = json.loads(json_text)
    except ValueError:
        return json_text
    report.pop("timing", None)
    return report


def check_cache_tamper(paths: Sequence[str], cache_dir: str, rng: random.Random) -> list[str]:
    """Lint with a results cache, tamper with every entry it wrote (flip bytes, truncate,
    swap two entries, replace one by a symbolic link or a named pipe), lint again: the report
    must equal the uncached one."""
    _, plain = _lint_and_render(paths)
    _, first = _lint_and_render(paths, cache_dir=cache_dir)
    entries = [os.path.join(folder, name) for folder, _dirs, names in os.walk(cache_dir)
               for name in names]
    for entry in entries:
        if os.path.islink(entry) or not os.path.isfile(entry):
            continue
        roll = rng.random()
        try:
            if roll < 0.5:
                with open(entry, "rb") as handle:
                    data = bytearray(handle.read())
                if data:
                    for _ in range(rng.randint(1, 4)):
                        data[rng.randrange(len(data))] = rng.randrange(256)
                with open(entry, "wb") as handle:
                    handle.write(bytes(data))
            elif roll < 0.65:
                with open(entry, "r+b") as handle:
                    handle.truncate(rng.randrange(max(os.path.getsize(entry), 1)))
            elif roll < 0.8 and len(entries) > 1:
                other = rng.choice(entries)
                if other != entry and os.path.isfile(other) and not os.path.islink(other):
                    with open(other, "rb") as handle:
                        data = handle.read()
                    with open(entry, "wb") as handle:
                        handle.write(data)
            elif roll < 0.9:
                os.remove(entry)
                os.symlink("/dev/zero", entry)
            else:
                os.remove(entry)
                os.mkfifo(entry)
        except OSError:
            continue
    problems, third = _lint_and_render(paths, cache_dir=cache_dir)
    stored = [e for e in entries if e.endswith(".json")]
    if not stored and plain is not None and json.loads(plain).get("findings"):
        problems.append("cache: nothing was written to the cache (the check would be vacuous)")
    if _comparable(first) != _comparable(plain):
        problems.append("cache: the first cached run differs from the uncached run")
    if _comparable(third) != _comparable(plain):
        problems.append("cache: a tampered cache changed the result")
    return problems


HOSTILE_MEMORY_BYTES = 3 * 2**30
"""Address-space limit of the child process that lints one hostile case (a bomb that gets
through is then a failure, ``MemoryError`` or a killed child, instead of the machine's OOM)."""


def _hostile_checks(paths: list[str], case: "fuzz_hostile.Case", tamper: bool, folder: str,
                    seed: int) -> list[str]:
    began = time.perf_counter()
    problems = check_run(paths, case)
    took = time.perf_counter() - began
    if tamper:
        problems += check_cache_tamper(paths, os.path.join(folder, "cache"), random.Random(seed))
    return problems + ([f"slow: {took:.1f} s"] if took > 20 else [])


def _in_child(function: Callable, args: tuple, limit_s: float) -> list[str]:
    """``function(*args)`` (a list of problems) in a forked child with an address-space limit
    and a time limit; a child that dies, runs out of memory or overruns is a problem itself."""
    import multiprocessing
    import resource

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (HOSTILE_MEMORY_BYTES, HOSTILE_MEMORY_BYTES))
        try:
            send.send(function(*args))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            send.send([f"escaped: {type(exc).__name__}: {exc}"])

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    problems: list[str]
    if receive.poll(limit_s):
        try:
            problems = receive.recv()
        except EOFError:
            problems = [f"escaped: the child died (exit {process.exitcode})"]
    else:
        problems = [f"slow: no result within {limit_s:.0f} s (a hang or a bomb)"]
    process.join(1)
    if process.is_alive():
        process.kill()
        process.join()
    if process.exitcode not in (0, None) and not problems:
        problems = [f"escaped: the child died (exit {process.exitcode})"]
    return problems


def _copy_case(source: str, target: str) -> None:
    """Copy a hostile case's folder without opening its special files: links are copied as
    links, named pipes made anew, the results cache left out."""
    import stat

    for folder, dirs, names in os.walk(source):
        dirs[:] = [d for d in dirs if d != "cache"]
        into = os.path.join(target, os.path.relpath(folder, source))
        os.makedirs(into, exist_ok=True)
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            src, dst = os.path.join(folder, name), os.path.join(into, name)
            if os.path.lexists(dst):
                continue
            mode = os.lstat(src).st_mode
            if stat.S_ISLNK(mode):
                os.symlink(os.readlink(src), dst)
            elif stat.S_ISFIFO(mode):
                os.mkfifo(dst)
            elif stat.S_ISREG(mode):
                shutil.copyfile(src, dst)


def _run_hostile(rng: random.Random, index: int, run_dir: str, out_dir: str,
                 slow: float) -> tuple[str, list[dict]]:
    """Make, write and lint one hostile case; returns its class and its failures."""
    case = fuzz_hostile.make_case(rng)
    folder = os.path.join(run_dir, f"hostile_{index:06d}", "project")
    os.makedirs(folder, exist_ok=True)
    try:
        paths = fuzz_hostile.write_case(case, folder)
    except OSError as exc:  # the file system refused a name: not lintlora's problem
        shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
        return case.kind + " (not written)", [] if exc else []
    tamper = rng.random() < 0.1
    problems = _in_child(_hostile_checks, (paths, case, tamper, os.path.dirname(folder),
                                           rng.randrange(2**32)), limit_s=slow * 10 + 5)
    failures = []
    if problems:
        kept = os.path.join(out_dir, f"hostile_{index:06d}")
        os.makedirs(out_dir, exist_ok=True)
        _copy_case(os.path.dirname(folder), kept)
        with open(os.path.join(kept, "problems.txt"), "w", encoding="utf-8",
                  errors="backslashreplace") as handle:
            handle.write(case.kind + "\n\n" + "\n\n".join(problems))
        failures.append({"input": kept, "problems": problems})
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    return "hostile: " + case.kind, failures


def _run_batch(args: tuple) -> dict:
    """Make and lint one batch (in a worker process); returns counts and failures. The
    inputs are kept in ``run_dir/batch_<start>`` until the batch is done, so a batch whose
    worker died (a crash no ``except`` can catch) leaves them behind for the parent."""
    seed, start, count, run_dir, out_dir, slow, hostile = args
    rng = random.Random(seed * 1_000_003 + start)
    corpus = load_corpus()
    kinds: dict[str, int] = {}
    failures = []
    folder = os.path.join(run_dir, f"batch_{start:06d}")
    os.makedirs(folder, exist_ok=True)
    inputs = []
    for i in range(count):
        if rng.random() < hostile:
            kind, own = _run_hostile(rng, start + i, run_dir, out_dir, slow)
            kinds[kind] = kinds.get(kind, 0) + 1
            failures += own
            continue
        kind, suffix, data = make_input(corpus, rng)
        kinds[kind] = kinds.get(kind, 0) + 1
        path = os.path.join(folder, f"input_{start + i:06d}{suffix}")
        with open(path, "wb") as handle:
            handle.write(data)
        inputs.append(path)
    began = time.perf_counter()
    problems = check_run([folder])
    seconds = time.perf_counter() - began
    if problems or seconds / max(count, 1) > slow:
        # find the inputs responsible, one run each
        for path in inputs:
            began_one = time.perf_counter()
            own = check_run([path])
            took = time.perf_counter() - began_one
            if took > slow * 10:
                own.append(f"slow: {took:.1f} s")
            if own:
                failures.append(_save(path, own, out_dir))
        if problems and not failures:
            failures.append({"input": folder, "problems": problems})
    shutil.rmtree(folder, ignore_errors=True)
    return {"count": count, "kinds": kinds, "failures": failures, "seconds": seconds,
            "first": start}


def _crashed(job: tuple, out_dir: str) -> dict:
    """The result for a batch whose worker process died: its inputs are saved whole."""
    _seed, start, count, run_dir, _out, _slow, _hostile = job
    folder = os.path.join(run_dir, f"batch_{start:06d}")
    kept = os.path.join(out_dir, f"crashed_batch_{start:06d}")
    if os.path.isdir(folder):
        os.makedirs(out_dir, exist_ok=True)
        shutil.copytree(folder, kept, dirs_exist_ok=True)
    return {"count": count, "kinds": {"(crashed batch)": count}, "seconds": 0.0, "first": start,
            "failures": [{"input": kept, "problems": [
                "escaped: the interpreter died while linting this batch (re-run its files "
                "one by one to find the input)"]}]}


def _save(path: str, problems: list[str], out_dir: str) -> dict:
    os.makedirs(out_dir, exist_ok=True)
    kept = os.path.join(out_dir, os.path.basename(path))
    shutil.copyfile(path, kept)
    with open(kept + ".problems.txt", "w", encoding="utf-8") as handle:
        handle.write("\n\n".join(problems))
    return {"input": kept, "problems": problems}


def _classify(problem: str) -> str:
    if problem.startswith("escaped"):
        return "escaped exception"
    if problem.startswith("LL999"):
        return "LL999 internal error"
    if problem.startswith("invalid"):
        return "invalid output"
    return problem.split(":")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=20_000, help="mutated inputs to try")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=50, help="inputs linted per run")
    parser.add_argument("--slow", type=float, default=2.0,
                        help="seconds per input (batch average) counted as too slow")
    parser.add_argument("--hostile", type=float, default=0.25,
                        help="share of the inputs that are hostile cases (bench/fuzz_hostile.py)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "fuzz-failures"))
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if not load_corpus():
        parser.error("no fixtures found under " + ", ".join(FIXTURE_DIRS))
    run_dir = tempfile.mkdtemp(prefix="lintlora-fuzz-")
    jobs = [(args.seed, start, min(args.batch, args.inputs - start), run_dir, args.out,
             args.slow, args.hostile) for start in range(0, args.inputs, args.batch)]
    began = time.perf_counter()
    results: list[dict] = []
    try:
        if args.jobs > 1:
            _run_pool(jobs, args.jobs, args.out, results, lambda: _progress(
                results, args.inputs, began))
        else:
            for job in jobs:
                results.append(_run_batch(job))
                _progress(results, args.inputs, began)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    summary = _summary(results, time.perf_counter() - began, args)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print(summary)
    return 1 if summary["failures"] else 0


def _run_pool(jobs: list[tuple], workers: int, out_dir: str, results: list[dict],
              progress: Callable[[], None]) -> None:
    """Run the batches on a process pool; a dead worker breaks the pool, whose unfinished
    batches are then recorded as crashed (inputs saved) and the rest go to a new pool."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    pending = list(jobs)
    while pending:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_run_batch, job): job for job in pending}
            pending = []
            broken = []
            for future in as_completed(futures):
                try:
                    results.append(future.result())
                except BrokenProcessPool:
                    broken.append(futures[future])
                    continue
                progress()
        if broken:
            # the batches running when the pool broke crashed, or were only its bystanders:
            # each is run again alone; one that breaks a pool alone is recorded as crashed
            for job in broken:
                with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) \
                        as single:
                    try:
                        results.append(single.submit(_run_batch, job).result())
                    except BrokenProcessPool:
                        results.append(_crashed(job, out_dir))
                progress()


def _progress(results: list[dict], total: int, began: float) -> None:
    tried = sum(r["count"] for r in results)
    failed = sum(len(r["failures"]) for r in results)
    print(f"\r{tried:,}/{total:,} inputs, {failed} failures, "
          f"{time.perf_counter() - began:.0f} s", end="", file=sys.stderr, flush=True)


def _summary(results: list[dict], seconds: float, args: argparse.Namespace) -> dict:
    kinds: dict[str, int] = {}
    classes: dict[str, int] = {}
    failures = []
    for r in results:
        for kind, n in r["kinds"].items():
            kinds[kind] = kinds.get(kind, 0) + n
        for failure in r["failures"]:
            failures.append(failure)
            for problem in failure["problems"]:
                label = _classify(problem)
                classes[label] = classes.get(label, 0) + 1
    slowest = max(results, key=lambda r: r["seconds"] / max(r["count"], 1))
    return {
        "python": sys.version.split()[0], "seed": args.seed, "batch": args.batch,
        "inputs_tried": sum(r["count"] for r in results), "by_kind": dict(sorted(kinds.items())),
        "failures": failures, "failure_classes": classes, "seconds": round(seconds, 1),
        "slowest_batch_seconds_per_input": round(slowest["seconds"] / max(slowest["count"], 1),
                                                 4),
    }


def _print(summary: dict) -> None:
    print(file=sys.stderr)
    print(f"inputs tried: {summary['inputs_tried']:,} (seed {summary['seed']}, "
          f"{summary['seconds']:.0f} s, Python {summary['python']})")
    for kind, n in summary["by_kind"].items():
        print(f"  {kind:<16} {n:>7,}")
    print(f"failures: {len(summary['failures'])}")
    for label, n in sorted(summary["failure_classes"].items()):
        print(f"  {label:<22} {n:>5}")
    for failure in summary["failures"][:20]:
        print(f"  {failure['input']}: {failure['problems'][0].splitlines()[0][:200]}")
    print(f"slowest batch: {summary['slowest_batch_seconds_per_input'] * 1000:.0f} ms per input")


if __name__ == "__main__":
    sys.exit(main())
