"""A notebook's ``%pip install --upgrade \\`` continued over several lines pins what it lists
(issue 15 trial): philschmid/deep-learning-pytorch-huggingface
training/fine-tune-llms-in-2024-with-trl.ipynb pins ``"trl==0.9.6"`` on a continuation line, which
was not read, so LL020 reported an *error* ("SFTTrainer(max_seq_length=...) ... raises TypeError
(trl 1.0.0 assumed)") on a notebook whose trl takes ``max_seq_length``. IPython joins a line
ending in a backslash with the next before it runs a ``!``/``%`` command
(IPython/core/inputtransformer2.py: ``find_end_of_continued_line``, ``assemble_continued_line``).
"""

import json
from pathlib import Path

from lintlora.cli import main
from lintlora.extract.project_versions import pins_in_pip_lines

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "notebooks" / "pip_continued_lines.ipynb"


def test_continued_pip_line_pins_each_requirement():
    lines = ['%pip install  --upgrade \\', '  "transformers==4.44.2" \\', '  --index-url \\',
             '  https://example.org/simple \\', '  "trl==0.9.6"', '"peft==0.12.0"']
    pins = {p.package: (p.specifier, p.span.line) for p in pins_in_pip_lines(lines, "nb.ipynb")}
    assert pins["transformers"][1] == 2 and "4.44.2" in pins["transformers"][0]
    assert pins["trl"][1] == 5 and "0.9.6" in pins["trl"][0]
    assert "peft" not in pins  # the line after the last continuation is Python, not pip's


def test_ll020_reads_trl_from_the_continued_pip_line(capsys):
    try:
        main([str(FIXTURE), "--no-cache", "--format", "json", "--select", "LL020"])
    except SystemExit:
        pass
    out = json.loads(capsys.readouterr().out)
    assert not out["findings"], [f["message"] for f in out["findings"]]
