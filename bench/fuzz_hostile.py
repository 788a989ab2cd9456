"""Hostile-input generators for ``bench/fuzz.py`` (issue 12: the trust boundary).

Each generator returns a :class:`Case`: a few files to write into a fresh folder (a small
"project" with its own ``.git`` marker, so it is its own project root), plus the checks the run
must pass beyond the fuzzer's usual ones (no escaped exception, no ``LL999``, valid JSON/SARIF).
The classes, one generator each (:data:`GENERATORS`):

- ``hostile name``: a file whose name holds a newline and a workflow command, ESC sequences,
  bidi overrides, backtick runs, raw HTML, ``@mentions``, ``|``, or bytes that are not UTF-8;
  every output format must escape it (:func:`output_problems`).
- ``outside read``: a script that names a file outside the project (absolute, ``../``, a
  symbolic link leading out, ``/proc/self/environ``) holding a secret; the secret must never
  reach any output.
- ``special file``: a script whose config is ``/dev/zero``, ``/dev/stdin``, a named pipe or a
  symbolic link to one: the run must not block or grow.
- ``arithmetic bomb``: folded values that would never finish or allocate gigabytes
  (``10**64`` raised again, ``'a' * 4e9``, shifts, nested powers) reaching the settings.
- ``yaml bomb``: an alias ("billion laughs") YAML, named by a script and linted itself.
- ``deep python``: valid code deep for LibCST (hundreds of concatenated strings, ``elif``
  branches, a long sum): never ``LL000`` (a syntax error) when the code is valid.
- ``huge value``: batch sizes, ranks and lengths beyond float range, in a script, a YAML config
  and a local model ``config.json`` (``1e400``, ``"abc"``, lists).

A secret is planted beside every case's folder (outside its project); every check looks for it.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Case", "GENERATORS", "make_case", "write_case", "output_problems", "SECRET"]

SECRET = "lintlora-fuzz-SECRET-4d1f9a"
"""Planted outside every case's project; it must never reach an output."""


@dataclass
class Case:
    """Files of one hostile input.

    Attributes:
        kind: the generator's name.
        files: relative path (``str``, or ``bytes`` for a name that is not UTF-8) -> content;
            content ``None`` makes a named pipe, a ``("link", target)`` tuple a symbolic link.
        valid_python: paths of files that are valid Python (``ast.parse`` accepts them), which
            must never be reported as ``LL000``.
    """

    kind: str
    files: dict = field(default_factory=dict)
    valid_python: list = field(default_factory=list)


_SCRIPT = """\
import json, os, yaml
from transformers import AutoModelForCausalLM, TrainingArguments, Trainer
from peft import LoraConfig, get_peft_model

{prelude}
model = AutoModelForCausalLM.from_pretrained({model})
model = get_peft_model(model, LoraConfig(r={rank}, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="out", per_device_train_batch_size={batch},
                         gradient_checkpointing={gc}, fp16=True)
Trainer(model=model, args=args).train()
"""


def _script(rng: random.Random, **parts: str) -> str:
    values = {"prelude": "", "model": "'meta-llama/Llama-2-7b-hf'", "rank": "8", "batch": "4",
              "gc": rng.choice(("False", "True"))}
    values.update(parts)
    return _SCRIPT.format(**values)


_NAME_PIECES = ("\n::error file=x.py,line=1::pwned\n", "\x1b[2J\x1b[31m", "\u202egnp.py",
                "\u2066x\u2069", "``", "```", "`", "<img src=x onerror=alert(1)>", "@org/team",
                "@octocat", "a|b|c", "# heading", "\r", "\u2028", "\x07", "%0A", "[l](http://x)",
                "*bold*", "\t", "..")


def hostile_name(rng: random.Random) -> Case:
    case = Case("hostile name")
    piece = "".join(rng.choice(_NAME_PIECES) for _ in range(rng.randint(1, 3)))
    piece = piece.replace("/", "_").replace("\0", "")
    if rng.random() < 0.25:
        name: str | bytes = b"train_\xff\xfe" + piece.encode("utf-8") + b".py"
    else:
        name = f"train_{piece}.py"
    case.files[name] = _script(rng, gc="False")
    if rng.random() < 0.3:  # a YAML config too, same kind of name
        yaml_name = (name[:-3] + b".yaml") if isinstance(name, bytes) else name[:-3] + ".yaml"
        case.files[yaml_name] = "base_model: meta-llama/Llama-2-7b-hf\nadapter: lora\n" \
                                "micro_batch_size: 8\nsequence_len: 4096\n" \
                                "gradient_checkpointing: false\nfp16: true\n"
    if rng.random() < 0.3:  # a hostile environment-variable name as the model
        env = piece.replace('"', "'").replace("\\", "/")
        case.files["env_model.py"] = _script(rng, model=f'os.environ.get({json.dumps(env)}, '
                                                       f'"meta-llama/Llama-2-7b-hf")')
    return case


def outside_read(rng: random.Random) -> Case:
    case = Case("outside read")
    target = rng.choice(("ABS", "../secret.json", "../../secret.json", "link.json",
                         "/proc/self/environ", "/etc/passwd", "~/secret.json"))
    loader = rng.choice(("json.load(open({p}))", "yaml.safe_load(open({p}))",
                         "json.loads(open({p}).read())"))
    path_expr = "SECRET_PATH" if target == "ABS" else repr(target)
    prelude = f"cfg = {loader.format(p=path_expr)}"
    if target == "ABS":
        prelude = "SECRET_PATH = '@@SECRET@@'\n" + prelude  # filled with the real path
    if target == "link.json":
        case.files["link.json"] = ("link", "../secret.json")
    key = rng.choice(("model_name_or_path", "token", "hf_token", "output_dir"))
    model = rng.choice((f"cfg[{key!r}]", f"cfg.get({key!r})", "cfg['model_name_or_path']"))
    case.files["train.py"] = _script(rng, prelude=prelude, model=model,
                                     batch=rng.choice(("cfg['per_device_train_batch_size']",
                                                       "4")))
    case.valid_python.append("train.py")
    return case


def special_file(rng: random.Random) -> Case:
    case = Case("special file")
    target = rng.choice(("/dev/zero", "/dev/stdin", "/dev/urandom", "fifo.json", "fifo.yaml",
                         "link_zero.json", "."))
    if target.startswith("fifo"):
        case.files[target] = None
    if target == "link_zero.json":
        case.files[target] = ("link", "/dev/zero")
    loader = rng.choice(("json.load(open({p!r}))", "yaml.safe_load(open({p!r}))"))
    case.files["train.py"] = _script(rng, prelude="cfg = " + loader.format(p=target),
                                     batch="cfg['per_device_train_batch_size']")
    if rng.random() < 0.3:  # a local model folder whose config.json is special
        case.files["model"] = ("dir", None)
        case.files["model/config.json"] = rng.choice((None, ("link", "/dev/zero")))
        case.files["train_model.py"] = _script(rng, model="'./model'")
    case.valid_python.append("train.py")
    return case


_BOMBS = (
    "a = 10**64\nb = a**64\nc = b**64\nn = c",
    "n = 2**(2**(2**(2**5)))",
    "n = 9**9**9",
    "s = 'a' * (4 * 10**9)\nn = len(s)",
    "s = ['x'] * (10**10)\nn = 4",
    "n = 1 << (10**9)",
    "n = (1 << 4000) * (1 << 4000) * (1 << 4000)",
    "s = 'ab' * 10**6\nt = s * 10**6\nn = 8",
    "x = 'a'\n" + "".join(f"x{i} = x{'' if i == 0 else i - 1} * 2\n" for i in range(64))
    + "n = len(x63)",
    "s = f\"{'a' * 10**9}\"\nn = 4",
    "s = ''.join(['a'] * 10**9)\nn = 4",
    "n = int('9' * 5000)",
    "n = 10**400 // 7",
    "n = float(10**400)",
    "n = -(-10)**10**8",
)


def arithmetic_bomb(rng: random.Random) -> Case:
    case = Case("arithmetic bomb")
    bomb = rng.choice(_BOMBS)
    slot = rng.choice(("batch", "rank"))
    case.files["train.py"] = _script(rng, prelude=bomb, **{slot: "n"})
    case.valid_python.append("train.py")
    return case


def _alias_bomb(levels: int, width: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + f"\nbase_model: meta-llama/Llama-2-7b-hf\nlora_target_modules: *a{levels - 1}\n"


def yaml_bomb(rng: random.Random) -> Case:
    case = Case("yaml bomb")
    bomb = _alias_bomb(rng.choice((6, 9, 12)), rng.choice((9, 10)))
    case.files["bomb.yaml"] = bomb
    case.files["train.py"] = _script(rng, prelude="cfg = yaml.safe_load(open('bomb.yaml'))",
                                     model="cfg['base_model']",
                                     batch="cfg['micro_batch_size']")
    case.valid_python.append("train.py")
    return case


def deep_python(rng: random.Random) -> Case:
    case = Case("deep python")
    n = rng.choice((100, 300, 520, 800, 2000))
    form = rng.choice(("concat", "elif", "sum", "calls", "lists"))
    if form == "concat":
        body = "PROMPT = (\n" + "".join(f"    'line {i} of the prompt\\n'\n" for i in range(n)) + ")\n"
    elif form == "elif":
        body = "def pick(x):\n    if x == 0:\n        return 0\n" + "".join(
            f"    elif x == {i}:\n        return {i}\n" for i in range(1, n)) + "\n"
    elif form == "sum":
        body = "TOTAL = " + " + ".join(str(i) for i in range(n)) + "\n"
    elif form == "calls":
        depth = min(n, 150)
        body = "x = " + "f(" * depth + "1" + ")" * depth + "\n"
    else:
        depth = min(n, 150)
        body = "x = " + "[" * depth + "]" * depth + "\n"
    text = _script(rng, prelude=body)
    case.files["train.py"] = text
    try:
        ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError):
        pass
    else:
        case.valid_python.append("train.py")
    return case


_HUGE = ("10**400", "2**2000", "1e400", "-1", "0", "float('inf')", "float('nan')",
         "int('9' * 400)", "99999999999999999999999999999")
_HUGE_JSON = ('"abc"', "[1]", "1e400", "-5", "0", "{}", "null", "true", "1" + "0" * 400,
              '"' + "x" * 5000 + '"')


def huge_value(rng: random.Random) -> Case:
    case = Case("huge value")
    form = rng.choice(("script", "yaml", "config.json", "litgpt"))
    if form == "script":
        case.files["train.py"] = _script(rng, batch=rng.choice(_HUGE), rank=rng.choice(_HUGE))
        case.valid_python.append("train.py")
    elif form == "yaml":
        case.files["axolotl.yaml"] = (
            "base_model: meta-llama/Llama-2-7b-hf\nadapter: lora\n"
            f"lora_r: {rng.choice(('1e400', '1' + '0' * 400, '-3', '.inf', '.nan'))}\n"
            f"micro_batch_size: {rng.choice(('1e400', '1' + '0' * 400, '0', '.inf'))}\n"
            f"sequence_len: {rng.choice(('1e400', '4096', '1' + '0' * 30))}\n")
    elif form == "config.json":
        fields = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "num_key_value_heads": 32,
                  "intermediate_size": 11008, "vocab_size": 32000}
        text = json.dumps(fields)
        key = rng.choice(sorted(fields))
        text = text.replace(json.dumps(key) + ": " + json.dumps(fields[key]),
                            json.dumps(key) + ": " + rng.choice(_HUGE_JSON))
        case.files["model"] = ("dir", None)
        case.files["model/config.json"] = text
        case.files["train.py"] = _script(rng, model="'./model'")
        case.valid_python.append("train.py")
    else:
        case.files["lit/model_config.yaml"] = rng.choice(("- 1\n- 2\n", "n_embd: abc\n",
                                                          "n_layer: 1e400\n", "7\n"))
        case.files["lit.yaml"] = ("checkpoint_dir: lit\nprecision: bf16-true\n"
                                  "quantize: bnb.nf4\ntrain:\n  micro_batch_size: 4\n")
    return case


GENERATORS: dict[str, Callable[[random.Random], Case]] = {
    "hostile name": hostile_name,
    "outside read": outside_read,
    "special file": special_file,
    "arithmetic bomb": arithmetic_bomb,
    "yaml bomb": yaml_bomb,
    "deep python": deep_python,
    "huge value": huge_value,
}
"""Hostile-input generators by class name."""


def make_case(rng: random.Random) -> Case:
    """One hostile case of a random class."""
    return GENERATORS[rng.choice(sorted(GENERATORS))](rng)


def write_case(case: Case, folder: str) -> list[str]:
    """Write ``case`` into ``folder`` (made its own project with a ``.git`` marker folder)
    and a secret beside it; returns the paths to lint (the folder, and each file by name so
    explicit naming is exercised)."""
    os.makedirs(os.path.join(folder, ".git"), exist_ok=True)
    secret_path = os.path.join(os.path.dirname(folder), "secret.json")
    if not os.path.exists(secret_path):
        with open(secret_path, "w", encoding="utf-8") as handle:
            json.dump({"model_name_or_path": SECRET, "token": SECRET, "hf_token": SECRET,
                       "output_dir": SECRET, "per_device_train_batch_size": 8}, handle)
    paths = [folder]
    for name, content in case.files.items():
        raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
        full = os.path.join(os.fsencode(folder), raw)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if content is None:
            os.mkfifo(full)
            continue
        if isinstance(content, tuple):
            if content[0] == "link":
                os.symlink(content[1], full)
            elif content[0] == "dir":
                os.makedirs(full, exist_ok=True)
            continue
        content = content.replace("@@SECRET@@", secret_path)
        with open(full, "wb") as handle:
            handle.write(content.encode("utf-8", "surrogateescape"))
        if raw.endswith((b".py", b".yaml")) and b"/" not in raw:
            paths.append(os.fsdecode(full))
    return paths


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def output_problems(case: Case, outputs: dict[str, str], result) -> list[str]:
    """Problems in the rendered ``outputs`` (format -> text) of a hostile case's run."""
    problems = []
    for name, text in outputs.items():
        if SECRET in text:
            problems.append(f"secret leaked into the {name} output")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{name} output is not UTF-8: {exc}")
        if name in ("text", "github", "markdown"):
            bad = _CONTROL.search(text.replace("\r\n", "\n"))
            if bad:
                problems.append(f"raw control character U+{ord(bad.group(0)):04X} in the {name} "
                                f"output")
        if name in ("text", "markdown") and any(line.startswith("::")
                                                for line in text.splitlines()):
            problems.append(f"a line starting with '::' (a workflow command) in the {name} output")
    github = outputs.get("github")
    if github is not None:
        commands = sum(1 for line in github.splitlines() if line.startswith("::"))
        expected = len(result.findings) + len(result.errors) + len(getattr(result, "notices", ()))
        if commands > expected:
            problems.append(f"{commands} workflow commands in the github output for "
                            f"{expected} findings, errors and notices")
    markdown = outputs.get("markdown")
    if markdown is not None:
        try:
            from markdown_it import MarkdownIt
        except ImportError:  # pragma: no cover - a test dependency
            MarkdownIt = None
        if MarkdownIt is not None:
            tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
            for token in _walk(tokens):
                if token.type not in ("html_inline", "html_block"):
                    continue
                foreign = [tag for tag in re.findall(r"<[^>]*>?", token.content)
                           if tag.lower().replace(" ", "") not in _OWN_TAGS]
                if foreign:
                    problems.append(f"raw HTML in the markdown output: {foreign[0][:60]!r}")
                    break
    for finding in result.findings:
        if finding.code == "LL000" and os.path.basename(finding.span.path) in case.valid_python:
            problems.append(f"LL000 on valid Python: {finding.message[:120]}")
    return problems


_OWN_TAGS = {"<details>", "</details>", "<summary>", "</summary>", "<sub>", "</sub>", "<br>",
             "<br/>"}
"""The HTML the Markdown reporter writes itself (a collapsible section, small print, breaks)."""


def _walk(tokens):
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)
