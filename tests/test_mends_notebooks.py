"""Notebooks mended (issue 13, section 3): IPython lines are part of valid notebooks and are
masked (line numbers and the other lines' columns kept) instead of failing the file with
LL000; Databricks notebook sources are read as notebooks; a syntax error that comes from a
magic-like line says so."""

from __future__ import annotations

import json
import textwrap

import libcst
import pytest
from rules_support import lint

from lintlora.extract import ExtractError
from lintlora.extract.databricks import databricks_cell_lines
from lintlora.extract.notebook import (
    databricks_program, extract_databricks, extract_notebook, mask_ipython, notebook_program,
)
from lintlora.extract.python import extract_python
from lintlora.settings import Settings


def make(*sources):
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
             for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


IPYTHON_LINES = [
    "!pip install -q peft", "!!ls", "%pip install -q trl", "%load_ext autoreload", "%autoreload 2",
    "%matplotlib inline", "files = !ls data", "out = %timeit -o f()", "model?", "model??", "??model",
    "?Trainer", "trainer.train?", "get_ipython().system('ls')", "/print hello", ";print hello",
    "pip install -q transformers==4.44.0", "pip -q install peft", "cd ..", "cd ~/data",
    "conda install -y pytorch", "load_ext autoreload", "run train.py --epochs 1",
    "mkdir -p out", "ls -la data", "env CUDA_VISIBLE_DEVICES=0",
]


@pytest.mark.parametrize("line", IPYTHON_LINES)
def test_each_ipython_line_is_masked_at_its_indentation(line):
    out = mask_ipython(["x = 1", line, "if True:", "    " + line, "y = 2"])
    assert out == ["x = 1", "pass", "if True:", "    pass", "y = 2"]
    libcst.parse_module("\n".join(out) + "\n")


PYTHON_TRAPS = [
    ["x = (a", "     % b)"],                      # a modulo continuing a bracket
    ["s = '''", "!important: keep", "pip install x", "'''"],  # lines inside a string
    ["ls = [1,", "  2]"], ["run (a,", "     b)"], ["time = 5"], ["cd = 1", "cd"],
    ["total = a + \\", "    !b if False else 0"],  # after a backslash (not Python, not masked)
    ["print('really?')  # why?"], ["pip = 3", "pip"], ["time -= 1"],
]


def test_automagic_lines_that_parse_as_python_are_left_alone():
    # `cd /content` parses (cd / content): left as it is, it cannot fail the file either
    assert mask_ipython(["cd /content"]) == ["cd /content"]


@pytest.mark.parametrize("lines", PYTHON_TRAPS)
def test_python_lines_are_never_masked(lines):
    assert mask_ipython(list(lines)) == list(lines)


@pytest.mark.parametrize("magic", ["bash", "sh", "writefile train.py", "html", "javascript", "script bash",
                                   "latex", "markdown"])
def test_non_python_cell_magics_drop_the_cell(magic):
    assert mask_ipython([f"%%{magic}", "echo $HOME", "exit 1"]) == ["", "", ""]


@pytest.mark.parametrize("magic", ["time", "timeit -n1", "capture output", "prun", "memit"])
def test_python_cell_magics_keep_their_body(magic):
    assert mask_ipython([f"%%{magic}", "y = x + 1", "!ls"]) == ["", "y = x + 1", "pass"]


COLAB = [
    "pip install -q peft bitsandbytes\ncd /content\n%env WANDB_DISABLED=true\n",
    "import torch\nfrom peft import LoraConfig, get_peft_model\n"
    "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
    "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype=torch.bfloat16)\n"
    "model?\n",
    "%%time\nmodel = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))\n"
    "args = TrainingArguments('out', per_device_train_batch_size=2, dataloader_num_workers=64)\n"
    "Trainer(model=model, args=args, train_dataset=ds).train()\n",
]


def test_a_colab_notebook_with_automagic_lines_is_linted_not_failed(tmp_path):
    path = tmp_path / "colab.ipynb"
    path.write_text(make(*COLAB), encoding="utf-8")
    result = lint(path, Settings(gpu="a100-80gb"))
    assert result.errors == [] and all(f.code != "LL000" for f in result.findings)
    where = {f.code: (f.span.cell, f.span.line) for f in result.findings}
    assert where["LL007"] == (3, 3) and where["LL004"] == (3, 2)


def test_a_shell_command_without_its_bang_says_so():
    with pytest.raises(ExtractError) as info:
        extract_notebook("nb.ipynb", make("import torch", "accelerate launch train.py --config x.yaml"))
    assert (info.value.cell, info.value.line) == (2, 1)
    assert "shell command (`accelerate ...`)" in info.value.message and "leading `!`" in info.value.message


def test_ipython_syntax_in_a_py_file_says_so():
    with pytest.raises(ExtractError) as info:
        extract_python("train.py", "import torch\n!pip install -q peft\nx = 1\n")
    assert info.value.line == 2 and "shell escape" in info.value.message and ".py file" in info.value.message
    with pytest.raises(ExtractError) as info:
        extract_python("train.py", "import torch\ndef f(:\n    pass\n")
    assert "IPython" not in info.value.message  # an ordinary syntax error stays as it was


DATABRICKS = """\
# Databricks notebook source
# MAGIC %md
# MAGIC # QLoRA on Databricks

# COMMAND ----------

%pip install -q peft bitsandbytes

# COMMAND ----------

%sql
SELECT * FROM training.samples LIMIT 10

# COMMAND ----------

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)

# COMMAND ----------

model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="/dbfs/out", per_device_train_batch_size=2, dataloader_num_workers=64)
Trainer(model=model, args=args, train_dataset=train_dataset).train()
"""


def test_databricks_sources_are_read_by_cell():
    program, line_map = databricks_program(DATABRICKS)
    assert len(program.split("\n")) == len(DATABRICKS.split("\n"))  # line for line
    assert program.split("\n")[6] == "pass" and program.split("\n")[11] == ""  # %pip masked, %sql cell dropped
    assert line_map(24) == (5, 1) and line_map(16) == (4, 1)
    assert databricks_cell_lines(DATABRICKS)[5] == (24, 25, 26)
    (setup,) = extract_databricks("nb.py", DATABRICKS)
    assert setup.kind == "notebook"
    assert (setup.model.span.cell, setup.model.span.line) == (4, 5)


def test_databricks_findings_name_the_cell_and_honour_cell_comments(tmp_path):
    path = tmp_path / "train_nb.py"
    path.write_text(DATABRICKS, encoding="utf-8")
    result = lint(path, Settings(gpu="a100-80gb"))
    assert result.errors == []
    where = {f.code: (f.span.cell, f.span.line) for f in result.findings}
    assert where["LL007"] == (5, 2) and where["LL004"] == (5, 1)
    assert result.cell_lines[str(path)][5] == (24, 25, 26)
    path.write_text(DATABRICKS.replace("dataloader_num_workers=64)", "dataloader_num_workers=64)  # noqa: LL007"),
                    encoding="utf-8")
    result = lint(path, Settings(gpu="a100-80gb"))
    assert "LL007" not in {f.code for f in result.findings} and "LL004" in {f.code for f in result.findings}


def test_a_py_file_without_the_header_is_plain_python(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("# a script\n" + DATABRICKS, encoding="utf-8")
    result = lint(path, Settings(gpu="a100-80gb"))
    [f] = result.findings
    assert f.code == "LL000" and "magic" in f.message


def test_the_colab_fixture_is_read_whole():
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "fixtures" / "python" / "colab_magics.ipynb"
    (setup,) = extract_notebook(str(path), path.read_text(encoding="utf-8"))
    assert setup.model.name_or_path.value == "meta-llama/Llama-2-7b-hf"
    assert setup.training.dataloader_num_workers.value == 2
    assert (setup.training.span.cell, setup.training.span.line) == (6, 2)  # the %%time cell
    program, _map = notebook_program(path.read_text(encoding="utf-8"))
    assert program.count("\n") == sum(len(c) for c in _code_sources(path))
    libcst.parse_module(program)


def _code_sources(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]).splitlines() or [""] for c in nb["cells"] if c["cell_type"] == "code"]
