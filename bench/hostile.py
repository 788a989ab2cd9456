"""Resource bombs: how long lintlora takes, and how much memory, on hostile inputs (issue 12).

    python bench/hostile.py [--cases arith_power,notebook_70k] [--timeout 120] [--mem-mib 4096]
    python bench/hostile.py --list

Each case is a file generated into a temporary folder by a function of this module (the tests
reuse them at smaller sizes: ``tests/test_security_bombs.py``), linted by ``python -m lintlora``
in a subprocess of its own, without the results cache. For each case the table gives the wall
time in seconds, the child's peak resident memory in MiB (``resource.getrusage(RUSAGE_CHILDREN)``
``ru_maxrss``, measured per case by running each child from a fresh helper process), the exit
status and the first diagnostic of the file (``LL998 ...``, ``LL000 ...``) or the number of
findings.

The children run under a wall-clock limit (``--timeout``, killed beyond it: ``timeout`` in the
table) and an address-space limit (``--mem-mib``, via ``RLIMIT_AS``: beyond it the child fails
with ``MemoryError``), so a bomb that still goes off cannot take the machine down with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent

# ---- generators: each returns (file name, text) ---------------------------------------------

_HEADER = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from peft import LoraConfig, get_peft_model
"""


def _uses(name: str, run_name: str = "'run'") -> str:
    """A setup whose batch size is ``name`` and run name ``run_name`` (so the resolver
    evaluates them)."""
    return (f"args = TrainingArguments(output_dir='o', per_device_train_batch_size={name}, "
            f"run_name={run_name})\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
            "Trainer(model=model, args=args).train()\n")


def arith_power(steps: int = 8) -> tuple[str, str]:
    """``a0 = 10**64; a1 = a0**64; ...``: each power multiplies the bit length by 64."""
    lines = ["a0 = 10**64"] + [f"a{i} = a{i - 1}**64" for i in range(1, steps)]
    return "arith_power.py", _HEADER + "\n".join(lines) + "\n" + _uses(f"a{steps - 1}")


def arith_multiply(steps: int = 28) -> tuple[str, str]:
    """``a1 = a0 * a0`` repeated: the bit length doubles at each step."""
    lines = ["a0 = 2**60"] + [f"a{i} = a{i - 1} * a{i - 1}" for i in range(1, steps)]
    return "arith_multiply.py", _HEADER + "\n".join(lines) + "\n" + _uses(f"a{steps - 1}")


def arith_shift(bits: int = 10**10) -> tuple[str, str]:
    """``1 << 10**10``: a 1.2 GB integer from one operator."""
    return "arith_shift.py", _HEADER + f"a = 1 << {bits}\n" + _uses("a")


def string_repeat(count: str = "4 * 10**9") -> tuple[str, str]:
    """``'a' * (4 * 10**9)``: a 4 GB string from one operator."""
    return "string_repeat.py", _HEADER + f"s = 'a' * ({count})\n" + _uses("4", "s")


def tuple_repeat(count: str = "10**9") -> tuple[str, str]:
    """``(0,) * 10**9``: a tuple of a billion items (8 GB of references)."""
    return "tuple_repeat.py", _HEADER + f"t = (0,) * ({count})\n" + _uses("t[0]")


def string_doubling(steps: int = 28, how: str = "fstring") -> tuple[str, str]:
    """A string that doubles at each step: ``s1 = f"{s0}{s0}"`` (or ``s0 + s0``,
    ``"".join([s0, s0])``, ``"{}{}".format(s0, s0)``)."""
    forms = {"fstring": "f'{{{p}}}{{{p}}}'", "plus": "{p} + {p}",
             "join": "''.join([{p}, {p}])", "format": "'{{}}{{}}'.format({p}, {p})",
             "percent": "'%s%s' % ({p}, {p})"}
    form = forms[how]
    lines = ["s0 = 'abcdefgh'"] + [f"s{i} = " + form.format(p=f"s{i - 1}") for i in range(1, steps)]
    return f"string_doubling_{how}.py", (_HEADER + "\n".join(lines) + "\n"
                                         + _uses("4", f"s{steps - 1}"))


def string_replace(steps: int = 6) -> tuple[str, str]:
    """``s.replace('a', s)`` repeated: the length squares at each step."""
    lines = ["s0 = 'a' * 100"] + [f"s{i} = s{i - 1}.replace('a', s{i - 1})" for i in range(1, steps)]
    return "string_replace.py", _HEADER + "\n".join(lines) + "\n" + _uses("4", f"s{steps - 1}")


def format_width(width: str = "999999999") -> tuple[str, str]:
    """``'%0999999999d' % 1`` and ``'{:999999999}'.format(1)``: a 1 GB string from a width."""
    return "format_width.py", (_HEADER + f"a = '%0{width}d' % 1\nb = '{{:{width}}}'.format(1)\n"
                               + _uses("4", "a + b"))


def list_extend(steps: int = 40) -> tuple[str, str]:
    """``x.extend(x)`` repeated: a list that doubles at each mutation."""
    lines = ["x = [1, 2]"] + ["x.extend(x)"] * steps
    return "list_extend.py", _HEADER + "\n".join(lines) + "\n" + _uses("x[0]")


def tuple_sharing(steps: int = 28) -> tuple[str, str]:
    """``t1 = (t0, t0)``: a tuple tree of 2**steps leaves held in ``steps`` small objects, which
    any walk (plain-data checks, comparison, ``str``) expands."""
    lines = ["t0 = (1, 2)"] + [f"t{i} = (t{i - 1}, t{i - 1})" for i in range(1, steps)]
    return "tuple_sharing.py", (_HEADER + "\n".join(lines) + "\n"
                                + f"u = t{steps - 1} == t{steps - 1}\ns = f'{{t{steps - 1}}}'\n"
                                + _uses("u"))


def star_doubling(steps: int = 28) -> tuple[str, str]:
    """``t1 = (*t0, *t0)``: unpacking that doubles a flat tuple at each step."""
    lines = ["t0 = (1, 2)"] + [f"t{i} = (*t{i - 1}, *t{i - 1})" for i in range(1, steps)]
    return "star_doubling.py", _HEADER + "\n".join(lines) + "\n" + _uses(f"t{steps - 1}[0]")


def big_literals() -> tuple[str, str]:
    """Values beyond float range where the estimator reads them (issue 12, item 10)."""
    return "big_literals.py", (
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "from peft import LoraConfig, get_peft_model\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
        f"model = get_peft_model(model, LoraConfig(r={10**400}, lora_alpha=2**2000))\n"
        f"args = TrainingArguments(output_dir='o', per_device_train_batch_size={10**400},\n"
        "                         gradient_accumulation_steps=1e400, bf16=True)\n"
        f"Trainer(model=model, args=args, max_seq_length={2**120}).train()\n")


def big_yaml_values() -> tuple[str, str]:
    """An axolotl config whose sizes are beyond float range."""
    return "big_values.yml", (
        "base_model: meta-llama/Llama-2-7b-hf\nadapter: qlora\nload_in_4bit: true\n"
        f"lora_r: {10**400}\nmicro_batch_size: {10**400}\nsequence_len: 1e400\n"
        "gradient_accumulation_steps: 1\n")


_BLOCK = """\

parser_{i} = argparse.ArgumentParser()
parser_{i}.add_argument("--model_name", default="meta-llama/Llama-2-7b-hf")
parser_{i}.add_argument("--batch_size", type=int, default={bs})
parser_{i}.add_argument("--max_len", type=int, default=2048)
args_{i} = parser_{i}.parse_args()

bnb_config_{i} = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True,
    bnb_4bit_compute_dtype=torch.bfloat16,
)
model_{i} = AutoModelForCausalLM.from_pretrained(
    args_{i}.model_name,
    quantization_config=bnb_config_{i},
    device_map={{"": 0}},
)
model_{i} = prepare_model_for_kbit_training(model_{i}, use_gradient_checkpointing=True)
lora_config_{i} = LoraConfig(
    r={r},
    lora_alpha=32,
    lora_dropout=0.05,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
    task_type="CAUSAL_LM",
)
model_{i} = get_peft_model(model_{i}, lora_config_{i})
model_{i}.print_trainable_parameters()
tokenizer_{i} = AutoTokenizer.from_pretrained(args_{i}.model_name)
tokenizer_{i}.pad_token = tokenizer_{i}.eos_token
dataset_{i} = load_dataset("timdettmers/openassistant-guanaco", split="train")
dataset_{i} = dataset_{i}.map(
    lambda row: tokenizer_{i}(row["text"], truncation=True, max_length=args_{i}.max_len),
    remove_columns=dataset_{i}.column_names,
)
training_args_{i} = TrainingArguments(
    output_dir="llama2-7b-qlora-{i}",
    per_device_train_batch_size=args_{i}.batch_size,
    gradient_accumulation_steps=4,
    learning_rate=2e-4,
    num_train_epochs=1,
    bf16=True,
    optim="paged_adamw_8bit",
    logging_steps=10,
)
trainer_{i} = Trainer(
    model=model_{i},
    args=training_args_{i},
    train_dataset=dataset_{i},
    data_collator=DataCollatorForLanguageModeling(tokenizer_{i}, mlm=False),
)
trainer_{i}.train()
"""
_SCRIPT_HEADER = """\
import argparse

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    BitsAndBytesConfig,
    DataCollatorForLanguageModeling,
    Trainer,
    TrainingArguments,
)
"""


def big_script(size: int = 5 * 10**6) -> tuple[str, str]:
    """An ordinary QLoRA training script (one ~2 KB setup) repeated with renamed variables to
    about ``size`` bytes (5 MB: 2,500 setups, under the default 5 MiB limit)."""
    parts = [_SCRIPT_HEADER]
    total = len(_SCRIPT_HEADER)
    i = 0
    while True:
        block = _BLOCK.format(i=i, bs=1 + i % 8, r=8 * (1 + i % 4))
        if total + len(block) > size:
            break
        parts.append(block)
        total += len(block)
        i += 1
    return "big_script.py", "".join(parts)


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      separators=(",", ":"))


def big_notebook(cells: int = 70_000) -> tuple[str, str]:
    """A notebook of ``cells`` small code cells (70,000: about 5 MiB), a training setup in the
    first ones and ordinary statements after."""
    setup = [_SCRIPT_HEADER, _BLOCK.format(i=0, bs=4, r=16)]
    body = [f"x{i} = {i} + 1\nprint(x{i})" for i in range(cells - len(setup))]
    return "big_notebook.ipynb", _notebook(setup + body)


def concatenated_strings(count: int = 520) -> tuple[str, str]:
    """A prompt of ``count`` implicitly concatenated string literals (deep for LibCST)."""
    parts = "\n".join(f'    "line {i} of the system prompt, explaining the task.\\n"'
                      for i in range(count))
    return "concatenated.py", (_HEADER + f"PROMPT = (\n{parts}\n)\n" + _uses("4", "PROMPT"))


def elif_chain(count: int = 520) -> tuple[str, str]:
    """An ``if``/``elif`` chain of ``count`` branches (each ``elif`` nests in LibCST)."""
    lines = ["name = 'm0'", "if name == 'm0':", "    bs = 1"]
    for i in range(1, count):
        lines += [f"elif name == 'm{i}':", f"    bs = {i % 8 + 1}"]
    lines += ["else:", "    bs = 1"]
    return "elif_chain.py", _HEADER + "\n".join(lines) + "\n" + _uses("bs")


def long_sum(count: int = 490) -> tuple[str, str]:
    """A sum of ``count`` terms (a left-nested chain of binary operations)."""
    return "long_sum.py", (_HEADER + "total = " + " + ".join(str(i % 7) for i in range(count))
                           + "\n" + _uses("total % 8 + 1"))


def deep_parens(depth: int = 190) -> tuple[str, str]:
    """Brackets nested ``depth`` deep (under CPython's 200)."""
    return "deep_parens.py", _HEADER + "a = " + "(" * depth + "1" + ")" * depth + "\n" + _uses("a")


def many_calls(count: int = 60_000) -> tuple[str, str]:
    """A flat file of ``count`` trainer calls (the setup count limit)."""
    lines = ["args = TrainingArguments(output_dir='o', per_device_train_batch_size=4)",
             "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')"]
    lines += ["Trainer(model=model, args=args).train()"] * count
    return "many_calls.py", _HEADER + "\n".join(lines) + "\n"


def short_lines(count: int = 16_000) -> tuple[str, str]:
    """``count`` statements ``xN = N`` (3 tokens each: under the token limit at 16,000)."""
    return "short_lines.py", _HEADER + "".join(f"x{i} = {i}\n" for i in range(count)) + _uses("x1")


def comment_lines(count: int = 49_000) -> tuple[str, str]:
    """``count`` comment lines (one token each: under the line limit at 49,000)."""
    return "comment_lines.py", (_HEADER + "".join(f"# comment {i}\n" for i in range(count))
                                + _uses("4"))


def big_list(count: int = 24_000) -> tuple[str, str]:
    """One list literal of ``count`` numbers on one line (two tokens each)."""
    return "big_list.py", (_HEADER + "xs = [" + ", ".join(str(i) for i in range(count)) + "]\n"
                           + _uses("xs[3]"))


def big_docstring(size: int = 5 * 10**6) -> tuple[str, str]:
    """A triple-quoted prompt of ``size`` characters (one token, one LibCST node)."""
    words = "Answer the question using the context below. " * (size // 46)
    return "big_docstring.py", _HEADER + f'PROMPT = """{words}"""\n' + _uses("4")


def notebook_cells(cells: int = 6_000) -> tuple[str, str]:
    """A notebook of ``cells`` small code cells (about 36,000 tokens: under the limits)."""
    setup = [_SCRIPT_HEADER, _BLOCK.format(i=0, bs=4, r=16)]
    body = [f"x{i} = {i} + 1" for i in range(cells - len(setup))]
    return "notebook_cells.ipynb", _notebook(setup + body)


def env_reads(count: int = 2_200) -> tuple[str, str]:
    """``count`` reads of ``LOCAL_RANK`` each feeding a ``device_map`` dict (the rank-evidence
    pass once tested every read against every expression)."""
    body = "".join(f"r{i} = int(os.environ['LOCAL_RANK'])\nd{i} = {{'': r{i}}}\n"
                   for i in range(count))
    return "env_reads.py", ("import os\n" + _HEADER + body
                            + "model = AutoModelForCausalLM.from_pretrained('m', device_map=d5)\n"
                            + "Trainer(model=model, args=TrainingArguments(output_dir='o')).train()\n")


def rebinds(count: int = 3_000) -> tuple[str, str]:
    """One name rebound ``count`` times, each value used by a ``DataLoader`` (each use scanned
    the name's bindings from the end)."""
    body = "".join("x = x + 1\nDataLoader(ds, batch_size=x)\n" for _ in range(count))
    return "rebinds.py", ("from torch.utils.data import DataLoader\n" + _HEADER + "x = 1\n" + body
                          + _uses("4"))


def escaped_quotes(count: int = 2_000_000) -> tuple[str, str]:
    """A valid 4 MB string of ``count`` escaped quotes (``"\\"\\"..."``): one token, but a
    backtracking string pattern scans it once per quote, and ``re`` keeps a record per
    repetition."""
    return "escaped_quotes.py", _HEADER + 'x = "' + '\\"' * count + '"\n' + _uses("4")


CASES: dict[str, Callable[[], tuple[str, str]]] = {
    "arith_power": arith_power,
    "arith_multiply": arith_multiply,
    "arith_shift": arith_shift,
    "string_repeat": string_repeat,
    "tuple_repeat": tuple_repeat,
    "string_doubling_fstring": lambda: string_doubling(how="fstring"),
    "string_doubling_plus": lambda: string_doubling(how="plus"),
    "string_doubling_join": lambda: string_doubling(how="join"),
    "string_doubling_format": lambda: string_doubling(how="format"),
    "string_doubling_percent": lambda: string_doubling(how="percent"),
    "string_replace": string_replace,
    "format_width": format_width,
    "list_extend": list_extend,
    "tuple_sharing": tuple_sharing,
    "star_doubling": star_doubling,
    "big_literals": big_literals,
    "big_yaml_values": big_yaml_values,
    "concatenated_520": concatenated_strings,
    "elif_520": elif_chain,
    "sum_490": long_sum,
    "deep_parens_190": deep_parens,
    "many_calls_60k": many_calls,
    "script_5mb": big_script,
    "notebook_70k": big_notebook,
    # at the analysis limits (lintlora/extract/limits.py): the slowest files still analysed
    "script_300kb": lambda: big_script(300_000),
    "setups_3000": lambda: many_calls(3_000),
    "short_lines_16k": short_lines,
    "comment_lines_49k": comment_lines,
    "list_24k": big_list,
    "docstring_5mb": big_docstring,
    "env_reads_2200": env_reads,
    "rebinds_3000": rebinds,
    "escaped_quotes_4mb": escaped_quotes,
    "notebook_6000_cells": notebook_cells,
}
"""Every case, by name: a function returning ``(file name, text)`` at the size of the issue."""


# ---- measuring ----------------------------------------------------------------------------------
_CHILD = r"""
import json, resource, subprocess, sys, time
cmd, timeout, mem = json.loads(sys.argv[1])
def limit():
    if mem:
        resource.setrlimit(resource.RLIMIT_AS, (mem * 2**20, mem * 2**20))
start = time.perf_counter()
try:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired as e:
    rc, out, err = "timeout", "", ""
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"rc": rc, "seconds": seconds, "rss_mib": rss, "stdout": out[-20000:],
                  "stderr": err[-2000:]}))
"""


def measure(path: Path, timeout: float, mem_mib: int) -> dict:
    """Lint ``path`` (``--format json --no-cache``) in a child process; its time, peak RSS,
    exit status and what it reported. A fresh helper process runs each child, so
    ``RUSAGE_CHILDREN`` is that one child's peak."""
    cmd = [sys.executable, "-m", "lintlora", "--no-cache", "--format", "json", "--", str(path)]
    helper = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([cmd, timeout, mem_mib])],
                            capture_output=True, text=True, cwd=str(path.parent),
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(helper.stdout)
    result["summary"] = _summary(result)
    return result


def _summary(result: dict) -> str:
    if result["rc"] == "timeout":
        return "killed at the time limit"
    try:
        data = json.loads(result["stdout"])
    except ValueError:
        tail = (result["stderr"].strip().splitlines() or ["no output"])[-1]
        return tail[:90]
    errors = data.get("errors") or []
    if errors:
        return f"{errors[0]['code']} {errors[0]['message']}"[:90]
    findings = data.get("findings") or []
    syntax = [f for f in findings if f.get("code") == "LL000"]
    if syntax:
        return f"LL000 {syntax[0].get('message', '')}"[:90]
    return f"{len(findings)} findings"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--mem-mib", type=int, default=4096, help="address-space limit per case")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    options = parser.parse_args(argv)
    if options.list:
        for name, make in CASES.items():
            print(f"{name:<26} {(make.__doc__ or '').strip().splitlines()[0] if make.__doc__ else ''}")
        return 0
    names = options.cases.split(",") if options.cases else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="lintlora-hostile-") as tmp:
        folder = options.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{'case':<26}{'bytes':>10}{'seconds':>9}{'MiB':>7}{'exit':>8}  reported")
        for name in names:
            file_name, text = CASES[name]()
            path = folder / file_name
            path.write_text(text, encoding="utf-8")
            r = measure(path, options.timeout, options.mem_mib)
            print(f"{name:<26}{path.stat().st_size:>10}{r['seconds']:9.2f}{r['rss_mib']:7.0f}"
                  f"{str(r['rc']):>8}  {r['summary']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
