"""Notebooks: code cells as one program, spans as (cell, line in cell), IPython lines skipped."""

import json
from pathlib import Path

import pytest

from lintlora.extract import ExtractError
from lintlora.extract.notebook import extract_notebook, notebook_program

NB = Path(__file__).resolve().parent.parent / "fixtures" / "python" / "qlora_notebook.ipynb"


def make(*sources, kinds=None):
    kinds = kinds or ["code"] * len(sources)
    cells = [{"cell_type": k, "metadata": {}, "source": s, "outputs": []}
             for k, s in zip(kinds, sources)]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_qlora_notebook_values_and_cells():
    (s,) = extract_notebook(str(NB), NB.read_text())
    assert s.kind == "notebook"
    assert s.anchor.cell == 7 and s.anchor.line == 10  # trainer = Trainer(...) in the 7th code cell
    q = s.quantization
    assert q.bnb_4bit_compute_dtype.value == "float16"
    assert (q.bnb_4bit_compute_dtype.span.cell, q.bnb_4bit_compute_dtype.span.line) == (3, 5)
    assert s.model.name_or_path.value == "meta-llama/Llama-2-7b-hf"
    assert (s.model.name_or_path.span.cell, s.model.name_or_path.span.line) == (3, 1)
    fp16 = s.training.fp16
    assert fp16.value is True and (fp16.span.cell, fp16.span.line) == (7, 7)
    # the %%capture cell is Python and read; its first line is the magic
    prep = s.calls_of("prepare_model_for_kbit_training")[0]
    assert prep.args["use_gradient_checkpointing"].value is False
    assert (prep.span.cell, prep.span.line) == (4, 2)
    assert s.lora.r.value == 8


def test_magics_and_shell_lines_are_neutralised_without_moving_lines():
    text = make("%pip install peft\n!nvidia-smi\nx = 1", "files = !ls\nif True:\n    !echo hi\n",
                "%%bash\necho $HOME\nexit 1\n", "%%time\ny = x + 1\nget_ipython().run_line_magic('x', '')")
    program, line_map = notebook_program(text)
    lines = program.splitlines()
    assert lines[:3] == ["pass", "pass", "x = 1"]
    assert lines[3:6] == ["pass", "if True:", "    pass"]
    assert lines[6:9] == ["", "", ""]  # a shell cell is dropped
    assert lines[9:] == ["", "y = x + 1", "pass"]
    assert line_map(5) == (2, 2) and line_map(11) == (4, 2)
    import libcst

    libcst.parse_module(program)  # still valid Python


def test_markdown_and_raw_cells_do_not_count():
    text = make("# title", "import torch\ntorch.cuda.empty_cache()", "raw text",
                kinds=["markdown", "code", "raw"])
    (s,) = extract_notebook("n.ipynb", text)
    (call,) = s.calls
    assert (call.span.cell, call.span.line) == (1, 2)


def test_invalid_json_has_a_location():
    with pytest.raises(ExtractError) as info:
        extract_notebook("bad.ipynb", '{"cells": [\n  {"cell_type": "code",,}\n]}')
    assert info.value.line == 2 and "not a valid notebook" in info.value.message


def test_missing_cells():
    with pytest.raises(ExtractError, match="no list of cells"):
        extract_notebook("bad.ipynb", '{"metadata": {}}')
    with pytest.raises(ExtractError):
        extract_notebook("bad.ipynb", "[1, 2, 3]")


def test_syntax_error_reports_cell_and_line():
    text = make("import torch", "x = 1\ndef f(:\n    pass")
    with pytest.raises(ExtractError) as info:
        extract_notebook("bad.ipynb", text)
    assert info.value.cell == 2 and info.value.line == 2


def test_empty_and_nbformat3():
    assert extract_notebook("e.ipynb", make()) == []
    v3 = json.dumps({"worksheets": [{"cells": [
        {"cell_type": "code", "input": ["import torch\n", "torch.cuda.empty_cache()\n"]}]}]})
    (s,) = extract_notebook("v3.ipynb", v3)
    assert s.calls[0].kind == "empty_cache"
    assert s.calls[0].span.cell == 1


def test_ipython_help_lines_are_neutralised():
    """`model?`, `model??`, `?model`, `trainer.train?` are IPython help, not syntax errors: the
    rest of the notebook is read, lines unmoved; a `?` inside a string or comment stays."""
    text = make("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel?\n",
                "AutoModelForCausalLM.from_pretrained??\n?Trainer\nif True:\n    np.*load*?\n"
                "note = 'why?'  # really?\n",
                "args = TrainingArguments('out', per_device_train_batch_size=2)\n"
                "Trainer(model=model, args=args).train()\n")
    program, line_map = notebook_program(text)
    lines = program.splitlines()
    assert lines[2] == "pass" and lines[3] == "pass" and lines[4] == "pass"
    assert lines[6] == "    pass" and lines[7] == "note = 'why?'  # really?"
    (setup,) = extract_notebook("nb.ipynb", text)
    batch = setup.get("training.per_device_train_batch_size")
    assert batch.value == 2 and (batch.span.cell, batch.span.line) == (3, 1)


def test_help_lines_do_not_hide_suppression_comments():
    from lintlora.suppression import notebook_cells, read_directives

    text = make("model?\nx = f()  # noqa: LL004\n")
    assert notebook_cells(text) == ["\nx = f()  # noqa: LL004\n"]
    assert [(d.cell, d.line, d.codes) for d in read_directives(text, "notebook")] == [
        (1, 2, ("LL004",))]
