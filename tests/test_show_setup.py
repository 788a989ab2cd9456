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
