"""--show-setup rendering: every value, its origin and line, and what stayed unknown."""

import io
import json
from pathlib import Path

from rich.console import Console

from lintlora.extract.notebook import extract_notebook
from lintlora.extract.python import extract_python
from lintlora.report.setup_table import render_setups, setups_to_json, unknown_settings

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "python"


def setups(name):
    path = FIX / name
    if name.endswith(".ipynb"):
        return extract_notebook(str(path), path.read_text())
    return extract_python(str(path), path.read_text())


def rendered(items, width=140):
    buf = io.StringIO()
    render_setups(items, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_text_shows_values_origins_lines_and_unknowns():
    text = rendered(setups("argparse_driven.py"))
    row = next(line for line in text.splitlines() if "lora.r " in line)
    assert "64" in row and "argparse default" in row and "line 12" in row and "--lora_r" in row
    assert "library default [" in text
    assert "peft src/peft/tuners/lora/config.py" in text  # the citation footnote
    out_row = next(line for line in text.splitlines() if "training.output_dir" in line)
    assert "unknown: `--output_dir` must be given" in out_row
    assert "setting(s) unknown:" in text and "training.extra" not in text
    assert "prepare_model_for_kbit_training" in text  # the calls table


def test_narrow_console_still_shows_every_column():
    text = rendered(setups("hf_trainer_qlora.py"), width=80)
    assert "meta-llama/Llama-2-7b" in text
    assert "variable" in text and "library default" in text


def test_notebook_lines_are_cells():
    text = rendered(setups("qlora_notebook.ipynb"))
    row = next(line for line in text.splitlines() if "training.fp16" in line)
    assert "cell 7:7" in row


def test_json_is_plain_data_with_spans_and_unknowns():
    items = setups("sweep_and_two_trainers.py")
    data = setups_to_json(items)
    json.dumps(data)  # serialisable
    assert len(data) == 4
    first = data[0]
    r = first["sections"]["lora"]["settings"]["r"]
    assert r["value"] == 8 and r["origin"] == "variable" and r["source"] == "rank"
    assert r["span"]["line"] == 8
    tm = first["sections"]["lora"]["settings"]["target_modules"]
    assert tm["value"] == "all-linear"
    assert first["sections"]["quantization"] is None
    assert first["framework"] == "trl" and first["is_training"] is True
    assert first["unknown"] == unknown_settings(items[0])
    assert "model.torch_dtype" not in first["unknown"]  # torch_dtype="bfloat16" was passed


def test_json_unknown_reason_is_kept():
    (data,) = setups_to_json(setups("traps/undefined_names.py"))
    r = data["sections"]["lora"]["settings"]["r"]
    assert r["origin"] == "unknown" and "never defined" in r["source"] and r["expr"] == "lora_r"
    assert "lora.r" in data["unknown"]


# ---- the command: layout, formats, errors, exit status ------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MACHINE_DEPENDENT = '''\
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4,
                         fp16=not torch.cuda.is_bf16_supported(),
                         bf16=torch.cuda.is_bf16_supported())
Trainer(model=model, args=args).train()
'''


def lintlora(cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_piped_table_keeps_each_reason_whole_on_its_row(tmp_path):
    """Written to a pipe, a row is one line: the reason a value is unknown is never split over
    lines (so `| grep fp16` shows the whole sentence, as the JSON does)."""
    (tmp_path / "train.py").write_text(MACHINE_DEPENDENT)
    done = lintlora(tmp_path, "train.py", "--show-setup")
    assert done.returncode == 0, done.stderr
    doc = json.loads(lintlora(tmp_path, "train.py", "--show-setup", "--format", "json").stdout)
    reason = doc["setups"][0]["sections"]["training"]["settings"]["fp16"]["source"]
    assert "machine" in reason
    (row,) = [line for line in done.stdout.splitlines() if "│ training.fp16 " in line]
    assert f"unknown: {reason} (`not torch.cuda.is_bf16_supported()`)" in row


def test_a_long_expression_is_cut_visibly():
    from lintlora.report.setup_table import _MAX_EXPR, _short_expr

    long = "dict(" + ", ".join(f"k{i}={i}" for i in range(100)) + ")"
    short = _short_expr(long)
    assert len(short) == _MAX_EXPR and short.endswith("…") and long.startswith(short[:-1])
    assert _short_expr("a  +\n b") == "a + b"


@pytest.mark.parametrize("fmt", ["sarif", "github", "markdown"])
def test_formats_for_findings_are_refused(tmp_path, fmt):
    (tmp_path / "train.py").write_text(MACHINE_DEPENDENT)
    done = lintlora(tmp_path, "train.py", "--show-setup", "--format", fmt)
    assert done.returncode == 2 and done.stdout == ""
    assert "--show-setup prints text or json" in done.stderr and fmt in done.stderr


def test_a_file_that_does_not_parse_is_an_error_and_exit_1(tmp_path):
    (tmp_path / "train.py").write_text(MACHINE_DEPENDENT)
    (tmp_path / "broken.py").write_text("from transformers import Trainer\nx = f(\n")
    done = lintlora(tmp_path, ".", "--show-setup", "--format", "json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert len(doc["setups"]) == 1
    assert [(e["code"], e["path"], e["line"]) for e in doc["errors"]] == [("LL000", "broken.py", 2)]
    text = lintlora(tmp_path, "broken.py", "--show-setup")
    assert text.returncode == 1 and "broken.py:2:" in text.stdout and "LL000" in text.stdout
    assert lintlora(tmp_path, "train.py", "--show-setup").returncode == 0
