"""A benchmark corpus shaped like a fine-tuning repository (issue 8).

    python bench/corpus.py OUT_DIR [--files 600] [--seed 8]

What goes in (deterministic for a seed; nothing is downloaded):

- every fixture lintlora ships (``fixtures/``: scripts, notebooks, YAML and JSON configs),
  copied with their folder layout so the JSON files scripts name by path are found;
- *training scripts*: variations of the fixture scripts that parse (hyper-parameters, model
  ids and LoRA ranks changed), each padded with ordinary code (prompt templates, data
  preparation, metrics classes, evaluation loops, file handling, logging) to a size drawn
  between 100 and 1,500 lines (median about 300), the way real scripts carry their helpers;
- *model and data code* that imports ``torch`` but trains nothing (``nn.Module`` blocks,
  datasets, evaluation), as a repository's ``src/`` holds;
- *ordinary Python* with no machine-learning import at all (command-line tools, text and file
  utilities, configuration classes), the share of a repository any linter walks through;
- a few notebooks built from training variations, and YAML that is no training config
  (CI workflows, compose files).

Sizes and shares are printed by :func:`describe`. The generator writes only under ``OUT_DIR``
and removes what a previous build left there.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import random
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

__all__ = ["Corpus", "build_corpus", "single_script", "describe"]

MIN_LINES, MAX_LINES, MEDIAN_LINES = 100, 1500, 300

_MODELS = ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf", "meta-llama/Meta-Llama-3-8B",
           "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2-7B", "google/gemma-7b",
           "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "microsoft/phi-2", "EleutherAI/pythia-1.4b")


@dataclass
class Corpus:
    """What :func:`build_corpus` wrote.

    Attributes:
        root: the corpus folder.
        files: every file written, relative to ``root`` (sorted).
        kinds: file -> ``fixture`` | ``training`` | ``model-code`` | ``plain`` | ``notebook`` |
            ``other-yaml``.
        lines: file -> its number of lines.
    """

    root: Path
    files: list[str] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def python_files(self) -> list[str]:
        """The ``.py`` files (what TorchFix and Fixit read)."""
        return [f for f in self.files if f.endswith(".py")]


# ---- code blocks -----------------------------------------------------------------------------
# Each block is ordinary code of the kind training repositories hold; ``i`` makes names unique
# and ``rng`` varies the details so no two files are the same.

def _prompt_block(i: int, rng: random.Random) -> list[str]:
    task = rng.choice(("summarise the article", "answer the question", "translate to French",
                       "classify the sentiment", "write a SQL query", "fix the bug"))
    return [
        f"PROMPT_{i} = \"\"\"Below is an instruction that describes a task. Write a response",
        "that appropriately completes the request.",
        "",
        f"### Instruction ({task}):",
        "{instruction}",
        "",
        "### Input:",
        "{context}",
        "",
        "### Response:",
        "\"\"\"",
        "",
        "",
        f"def format_example_{i}(example, eos_token=\"</s>\"):",
        f"    \"\"\"Render one record with PROMPT_{i}; missing fields become empty strings.\"\"\"",
        "    instruction = (example.get(\"instruction\") or \"\").strip()",
        "    context = (example.get(\"input\") or example.get(\"context\") or \"\").strip()",
        f"    text = PROMPT_{i}.format(instruction=instruction, context=context)",
        "    response = example.get(\"output\") or example.get(\"response\") or \"\"",
        "    return {\"text\": text + response + eos_token}",
        "",
        "",
    ]


def _clean_block(i: int, rng: random.Random) -> list[str]:
    limit = rng.choice((64, 128, 256, 2048))
    return [
        f"_WS_{i} = re.compile(r\"\\s+\")",
        f"_URL_{i} = re.compile(r\"https?://\\S+\")",
        "",
        "",
        f"def clean_records_{i}(records, min_chars={limit}, drop_urls=True):",
        "    \"\"\"Normalise whitespace, drop near-empty and duplicate records.\"\"\"",
        "    seen = set()",
        "    kept = []",
        "    for record in records:",
        "        text = record.get(\"text\", \"\")",
        "        if drop_urls:",
        f"            text = _URL_{i}.sub(\"\", text)",
        f"        text = _WS_{i}.sub(\" \", text).strip()",
        "        if len(text) < min_chars:",
        "            continue",
        "        key = hash(text.lower())",
        "        if key in seen:",
        "            continue",
        "        seen.add(key)",
        "        kept.append({**record, \"text\": text})",
        f"    logger.info(\"kept %d of %d records\", len(kept), len(records))",
        "    return kept",
        "",
        "",
        f"def split_records_{i}(records, eval_fraction={rng.choice((0.01, 0.05, 0.1))}, seed={i}):",
        "    \"\"\"Deterministic train/eval split.\"\"\"",
        "    order = sorted(range(len(records)), key=lambda k: (k * 2654435761 + seed) % 2**32)",
        "    cut = max(1, int(len(records) * eval_fraction))",
        "    evaluation = [records[k] for k in order[:cut]]",
        "    train = [records[k] for k in order[cut:]]",
        "    return train, evaluation",
        "",
        "",
    ]


def _metrics_block(i: int, rng: random.Random) -> list[str]:
    name = rng.choice(("Accuracy", "ExactMatch", "TokenF1", "Perplexity", "Rouge"))
    return [
        f"class {name}Tracker{i}:",
        "    \"\"\"Running totals of a metric over batches.\"\"\"",
        "",
        "    def __init__(self, name=None, window=100):",
        f"        self.name = name or \"{name.lower()}\"",
        "        self.window = window",
        "        self.reset()",
        "",
        "    def reset(self):",
        "        self.total = 0.0",
        "        self.count = 0",
        "        self.history = []",
        "",
        "    def update(self, value, weight=1):",
        "        if value is None:",
        "            return",
        "        self.total += float(value) * weight",
        "        self.count += weight",
        "        self.history.append(float(value))",
        "        if len(self.history) > self.window:",
        "            self.history = self.history[-self.window:]",
        "",
        "    @property",
        "    def mean(self):",
        "        return self.total / self.count if self.count else float(\"nan\")",
        "",
        "    @property",
        "    def recent(self):",
        "        if not self.history:",
        "            return float(\"nan\")",
        "        return sum(self.history) / len(self.history)",
        "",
        "    def as_dict(self):",
        "        return {f\"{self.name}/mean\": self.mean, f\"{self.name}/recent\": self.recent,",
        "                f\"{self.name}/count\": self.count}",
        "",
        "    def __repr__(self):",
        "        return f\"<{type(self).__name__} {self.name} mean={self.mean:.4f} n={self.count}>\"",
        "",
        "",
    ]


def _io_block(i: int, rng: random.Random) -> list[str]:
    ext = rng.choice(("jsonl", "json"))
    return [
        f"def read_{ext}_{i}(path, limit=None):",
        f"    \"\"\"Read records from a .{ext} file; a missing file gives an empty list.\"\"\"",
        "    if not os.path.exists(path):",
        "        logger.warning(\"no such file: %s\", path)",
        "        return []",
        "    records = []",
        "    with open(path, encoding=\"utf-8\") as handle:",
        *(["        for number, line in enumerate(handle, 1):",
           "            line = line.strip()",
           "            if not line:",
           "                continue",
           "            try:",
           "                records.append(json.loads(line))",
           "            except json.JSONDecodeError as exc:",
           "                logger.error(\"%s:%d: %s\", path, number, exc)",
           "            if limit is not None and len(records) >= limit:",
           "                break"] if ext == "jsonl" else
          ["        data = json.load(handle)",
           "    records = data if isinstance(data, list) else data.get(\"data\", [])",
           "    if limit is not None:",
           "        records = records[:limit]"]),
        "    return records",
        "",
        "",
        f"def write_{ext}_{i}(records, path):",
        "    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)",
        "    tmp = path + \".tmp\"",
        "    with open(tmp, \"w\", encoding=\"utf-8\") as handle:",
        "        for record in records:",
        "            handle.write(json.dumps(record, ensure_ascii=False) + \"\\n\")",
        "    os.replace(tmp, path)",
        "    return len(records)",
        "",
        "",
    ]


def _config_block(i: int, rng: random.Random) -> list[str]:
    fields = rng.sample([("name", "str", "\"run\""), ("seed", "int", str(rng.randint(0, 99))),
                         ("data_path", "str", "\"data/train.jsonl\""), ("max_items", "int", "10000"),
                         ("shuffle", "bool", "True"), ("temperature", "float", "0.7"),
                         ("top_p", "float", "0.9"), ("report_to", "str", "\"none\""),
                         ("tags", "list", "None")], 6)
    out = ["@dataclass", f"class RunOptions{i}:", "    \"\"\"Options of a run, kept apart from the trainer's.\"\"\""]
    for name, typ, default in fields:
        if typ == "list":
            out.append(f"    {name}: list = field(default_factory=list)")
        else:
            out.append(f"    {name}: {typ} = {default}")
    out += ["", "    def to_dict(self):", "        return dict(self.__dict__)", "",
            "    @classmethod", "    def from_dict(cls, data):",
            "        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}",
            "        return cls(**known)", "", ""]
    return out


def _cli_block(i: int, rng: random.Random) -> list[str]:
    return [
        f"def build_parser_{i}():",
        "    parser = argparse.ArgumentParser(description=__doc__)",
        "    parser.add_argument(\"inputs\", nargs=\"+\", help=\"files to process\")",
        "    parser.add_argument(\"--output\", \"-o\", default=\"-\")",
        f"    parser.add_argument(\"--limit\", type=int, default={rng.choice((0, 100, 1000))})",
        "    parser.add_argument(\"--verbose\", \"-v\", action=\"count\", default=0)",
        "    parser.add_argument(\"--format\", choices=(\"text\", \"json\", \"csv\"), default=\"text\")",
        "    return parser",
        "",
        "",
        f"def run_cli_{i}(argv=None):",
        f"    options = build_parser_{i}().parse_args(argv)",
        "    logging.basicConfig(level=logging.WARNING - 10 * min(options.verbose, 2))",
        "    total = 0",
        "    for name in options.inputs:",
        "        with open(name, encoding=\"utf-8\", errors=\"replace\") as handle:",
        "            lines = handle.read().splitlines()",
        "        if options.limit:",
        "            lines = lines[: options.limit]",
        "        total += len(lines)",
        "        if options.format == \"json\":",
        "            print(json.dumps({\"file\": name, \"lines\": len(lines)}))",
        "        elif options.format == \"csv\":",
        "            print(f\"{name},{len(lines)}\")",
        "        else:",
        "            print(f\"{name}: {len(lines)} lines\")",
        "    return 0 if total else 1",
        "",
        "",
    ]


def _text_block(i: int, rng: random.Random) -> list[str]:
    sep = rng.choice(("\", \"", "\"; \"", "\" | \""))
    return [
        f"def chunk_text_{i}(text, size={rng.choice((256, 512, 1000))}, overlap={rng.choice((0, 32, 64))}):",
        "    \"\"\"Split ``text`` into overlapping windows of ``size`` characters.\"\"\"",
        "    if size <= overlap:",
        "        raise ValueError(\"size must exceed overlap\")",
        "    step = size - overlap",
        "    return [text[start:start + size] for start in range(0, max(len(text), 1), step)]",
        "",
        "",
        f"def summarise_counts_{i}(counts, top=10):",
        "    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))",
        f"    return {sep}.join(f\"{{word}}={{n}}\" for word, n in ordered[:top])",
        "",
        "",
        f"def word_counts_{i}(lines):",
        "    counts = {}",
        "    for line in lines:",
        "        for word in line.lower().split():",
        "            word = word.strip(\".,;:!?\\\"'()[]\")",
        "            if word:",
        "                counts[word] = counts.get(word, 0) + 1",
        "    return counts",
        "",
        "",
    ]


def _eval_block(i: int, rng: random.Random) -> list[str]:
    return [
        "@torch.no_grad()",
        f"def evaluate_{i}(model, loader, device=\"cuda\", max_batches={rng.choice((None, 50, 200))}):",
        "    \"\"\"Mean loss and token accuracy over ``loader``.\"\"\"",
        "    model.eval()",
        "    total_loss, total_tokens, correct = 0.0, 0, 0",
        "    for step, batch in enumerate(loader):",
        "        if max_batches is not None and step >= max_batches:",
        "            break",
        "        batch = {k: v.to(device) for k, v in batch.items()}",
        "        outputs = model(**batch)",
        "        labels = batch[\"labels\"]",
        "        mask = labels.ne(-100)",
        "        predictions = outputs.logits.argmax(dim=-1)",
        "        correct += (predictions[:, :-1] == labels[:, 1:])[mask[:, 1:]].sum().item()",
        "        tokens = mask.sum().item()",
        "        total_tokens += tokens",
        "        total_loss += outputs.loss.item() * tokens",
        "    model.train()",
        "    if not total_tokens:",
        "        return {\"eval_loss\": float(\"nan\"), \"eval_accuracy\": float(\"nan\")}",
        "    return {\"eval_loss\": total_loss / total_tokens, \"eval_accuracy\": correct / total_tokens}",
        "",
        "",
    ]


def _module_block(i: int, rng: random.Random) -> list[str]:
    act = rng.choice(("nn.GELU()", "nn.SiLU()", "nn.ReLU()"))
    return [
        f"class Block{i}(nn.Module):",
        "    \"\"\"A pre-norm residual MLP block.\"\"\"",
        "",
        f"    def __init__(self, dim={rng.choice((256, 512, 1024))}, hidden=None, dropout=0.1):",
        "        super().__init__()",
        "        hidden = hidden or 4 * dim",
        "        self.norm = nn.LayerNorm(dim)",
        "        self.up = nn.Linear(dim, hidden)",
        f"        self.act = {act}",
        "        self.down = nn.Linear(hidden, dim)",
        "        self.dropout = nn.Dropout(dropout)",
        "",
        "    def forward(self, x, mask=None):",
        "        residual = x",
        "        x = self.down(self.act(self.up(self.norm(x))))",
        "        if mask is not None:",
        "            x = x.masked_fill(~mask.unsqueeze(-1), 0.0)",
        "        return residual + self.dropout(x)",
        "",
        "",
        f"class TextDataset{i}(torch.utils.data.Dataset):",
        "    def __init__(self, records, tokenizer, max_length=512):",
        "        self.records = records",
        "        self.tokenizer = tokenizer",
        "        self.max_length = max_length",
        "",
        "    def __len__(self):",
        "        return len(self.records)",
        "",
        "    def __getitem__(self, index):",
        "        encoded = self.tokenizer(self.records[index][\"text\"], truncation=True,",
        "                                 max_length=self.max_length, return_tensors=\"pt\")",
        "        item = {k: v.squeeze(0) for k, v in encoded.items()}",
        "        item[\"labels\"] = item[\"input_ids\"].clone()",
        "        return item",
        "",
        "",
    ]


_PLAIN_BLOCKS = (_prompt_block, _clean_block, _metrics_block, _io_block, _config_block,
                 _cli_block, _text_block)
_TORCH_BLOCKS = _PLAIN_BLOCKS + (_eval_block, _module_block, _eval_block, _module_block)
_PADDING_IMPORTS = ["import argparse", "import json", "import logging", "import os", "import re",
                    "from dataclasses import dataclass, field", "",
                    "logger = logging.getLogger(__name__)", "", ""]


def _target_lines(rng: random.Random) -> int:
    """A file size in lines: log-normal around the median, clipped to [100, 1500]."""
    n = int(math.exp(rng.gauss(math.log(MEDIAN_LINES), 0.75)))
    return max(MIN_LINES, min(MAX_LINES, n))


def _padding(rng: random.Random, lines: int, blocks: tuple, start: int) -> list[str]:
    out: list[str] = []
    i = start
    while len(out) < lines:
        out += rng.choice(blocks)(i, rng)
        i += 1
    return out


def _insert_after_imports(source: str, padding: list[str]) -> str:
    """``source`` with ``padding`` after its leading docstring and imports."""
    tree = ast.parse(source)
    cut = 0
    for k, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            cut = node.end_lineno or cut
        elif k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            cut = node.end_lineno or cut
        else:
            break
    lines = source.splitlines()
    return "\n".join(lines[:cut] + [""] + padding + lines[cut:]) + "\n"


def _vary(source: str, rng: random.Random) -> str:
    """Change hyper-parameters and model ids so variations differ in what they ask for."""
    def number(choices: tuple) -> "callable":
        return lambda m: f"{m.group(1)}{rng.choice(choices)}"

    source = re.sub(r"(\br\s*=\s*)\d+", number((4, 8, 16, 32, 64)), source)
    source = re.sub(r"(\blora_alpha\s*=\s*)\d+", number((8, 16, 32, 64)), source)
    source = re.sub(r"(\bper_device_train_batch_size\s*=\s*)\d+", number((1, 2, 4, 8, 16)), source)
    source = re.sub(r"(\bgradient_accumulation_steps\s*=\s*)\d+", number((1, 2, 4, 8)), source)
    source = re.sub(r"(\bmax_seq_length\s*=\s*)\d+", number((512, 1024, 2048, 4096)), source)
    for model in _MODELS:
        if model in source and rng.random() < 0.5:
            source = source.replace(model, rng.choice(_MODELS))
    return source


def _training_bases() -> list[Path]:
    """Fixture scripts that parse and construct something the extractor reads."""
    bases = []
    for path in sorted(FIXTURES.rglob("*.py")):
        if "plugin" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        if re.search(r"\b(Trainer|TrainingArguments|LoraConfig|SFTConfig|get_peft_model)\b", text):
            bases.append(path)
    return bases


def _plain_module(i: int, rng: random.Random, lines: int) -> str:
    doc = rng.choice(("Command-line helpers for the data pipeline.", "Text utilities.",
                      "Small file and configuration helpers.", "Reporting helpers."))
    body = _padding(rng, lines - 12, _PLAIN_BLOCKS, i * 100)
    return "\n".join([f"\"\"\"{doc}\"\"\"", "", *_PADDING_IMPORTS, *body,
                      "if __name__ == \"__main__\":", "    raise SystemExit(0)"]) + "\n"


def _model_module(i: int, rng: random.Random, lines: int) -> str:
    body = _padding(rng, lines - 14, _TORCH_BLOCKS, i * 100)
    return "\n".join(["\"\"\"Model blocks, datasets and evaluation (no training here).\"\"\"", "",
                      *_PADDING_IMPORTS[:-3], "import torch", "from torch import nn", "",
                      "logger = logging.getLogger(__name__)", "", "", *body]) + "\n"


def _training_script(base: Path, i: int, rng: random.Random, lines: int) -> str:
    source = _vary(base.read_text(encoding="utf-8"), rng)
    have = source.count("\n")
    blocks = _TORCH_BLOCKS if "import torch" in source else _PLAIN_BLOCKS
    padding = _PADDING_IMPORTS + _padding(rng, max(0, lines - have - len(_PADDING_IMPORTS)),
                                          blocks, i * 100)
    if blocks is _TORCH_BLOCKS:
        padding = ["import torch", "from torch import nn", *padding]
    return _insert_after_imports(source, padding)


def _notebook(source: str) -> str:
    cells, current = [], []
    for line in source.splitlines(keepends=True):
        current.append(line)
        if line.strip() == "" and len(current) > 25:
            cells.append(current)
            current = []
    if current:
        cells.append(current)
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
          "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Fine-tuning\n"]}]
          + [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": c} for c in cells]}
    return json.dumps(nb, indent=1) + "\n"


_OTHER_YAML = (
    "name: tests\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
    "    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
    "        with:\n          python-version: '3.{n}'\n      - run: pip install -e .[test]\n"
    "      - run: pytest -q\n",
    "services:\n  app:\n    image: python:3.{n}-slim\n    command: python serve.py --port 80{n}\n"
    "    ports: ['80{n}:80{n}']\n    environment:\n      LOG_LEVEL: info\n  redis:\n"
    "    image: redis:7\n",
    "site_name: docs {n}\nnav:\n  - Home: index.md\n  - Usage: usage.md\ntheme:\n  name: material\n"
    "markdown_extensions:\n  - admonition\n  - toc:\n      permalink: true\n",
)


def build_corpus(out: Path, *, files: int = 600, seed: int = 8) -> Corpus:
    """Write the corpus to ``out`` (emptied first) and describe it.

    Shares of the generated part (after the fixtures): 50% training scripts, 12% model/data
    code importing torch, 30% plain Python, 2% notebooks, the rest non-training YAML.
    """
    rng = random.Random(seed)
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = Corpus(out)

    def put(rel: str, text: str, kind: str) -> None:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        corpus.files.append(rel)
        corpus.kinds[rel] = kind
        corpus.lines[rel] = text.count("\n")

    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or "plugin" in path.parts:
            continue
        if path.suffix not in (".py", ".ipynb", ".yaml", ".yml", ".json"):
            continue
        rel = "fixtures/" + path.relative_to(FIXTURES).as_posix()
        put(rel, path.read_text(encoding="utf-8", errors="surrogateescape"), "fixture")

    bases = _training_bases()
    remaining = max(0, files - len(corpus.files))
    shares = (("training", 0.50), ("model-code", 0.12), ("plain", 0.30), ("notebook", 0.02))
    counts = {kind: int(remaining * share) for kind, share in shares}
    counts["other-yaml"] = remaining - sum(counts.values())
    for i in range(counts["training"]):
        repo = f"generated/repo_{i % 12:02d}"
        base = bases[i % len(bases)]
        put(f"{repo}/scripts/train_{base.stem}_{i:03d}.py",
            _training_script(base, i, rng, _target_lines(rng)), "training")
    for i in range(counts["model-code"]):
        put(f"generated/repo_{i % 12:02d}/src/model_{i:03d}.py",
            _model_module(i, rng, _target_lines(rng)), "model-code")
    for i in range(counts["plain"]):
        put(f"generated/repo_{i % 12:02d}/src/utils/util_{i:03d}.py",
            _plain_module(i, rng, _target_lines(rng)), "plain")
    for i in range(counts["notebook"]):
        base = bases[(7 * i) % len(bases)]
        put(f"generated/repo_{i % 12:02d}/notebooks/finetune_{i:02d}.ipynb",
            _notebook(_training_script(base, 900 + i, rng, _target_lines(rng))), "notebook")
    for i in range(counts["other-yaml"]):
        put(f"generated/repo_{i % 12:02d}/.ci/other_{i:02d}.yaml".replace("/.ci/", "/ci/"),
            _OTHER_YAML[i % len(_OTHER_YAML)].format(n=8 + i % 5), "other-yaml")
    corpus.files.sort()
    return corpus


def single_script(lines: int = 500, seed: int = 500) -> str:
    """One training script of about ``lines`` lines (the pre-commit case: one staged file)."""
    rng = random.Random(seed)
    base = FIXTURES / "python" / "hf_trainer_qlora.py"
    return _training_script(base, 0, rng, lines)


def describe(corpus: Corpus) -> str:
    """Counts, shares and sizes, one line per kind."""
    rows = []
    total_lines = sum(corpus.lines.values())
    for kind in ("fixture", "training", "model-code", "plain", "notebook", "other-yaml"):
        sizes = sorted(corpus.lines[f] for f in corpus.files if corpus.kinds[f] == kind)
        if not sizes:
            continue
        rows.append(f"  {kind:<11} {len(sizes):4d} files  {sum(sizes):7d} lines  "
                    f"(min {sizes[0]}, median {sizes[len(sizes) // 2]}, max {sizes[-1]})")
    py = corpus.python_files()
    return (f"corpus {corpus.root}: {len(corpus.files)} files, {total_lines} lines; "
            f"{len(py)} .py files, {sum(corpus.lines[f] for f in py)} lines\n" + "\n".join(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--seed", type=int, default=8)
    options = parser.parse_args(argv)
    print(describe(build_corpus(options.out, files=options.files, seed=options.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
