"""``--diff`` shows every edit ``--fix`` makes (issue 17): fixes that need a second pass (two
keywords added to one call by two rules: the second waits for the text the first leaves) are
planned in memory through :func:`lintlora.safeio.overlay`, and nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRAIN = textwrap.dedent('''\
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

    bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb,
                                                 torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    model.print_trainable_parameters()
    args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": False},
                             fsdp="full_shard auto_wrap")
    Trainer(model=model, args=args, train_dataset=train_dataset).train()
    ''')
FIXED_LINE = ('bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", '
              'bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_quant_storage=torch.bfloat16)')


@pytest.fixture
def work(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _lintlora(work, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--gpu", "a100-80gb", *args],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_one_pass_defers_the_second_keyword():
    """The case needs two passes: LL014 and LL024 both add a keyword to the one call."""
    from lintlora.autofix import plan_fixes
    from lintlora.engine import lint_paths
    from lintlora.settings import Settings

    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    (folder / ".git").mkdir()
    (folder / "train.py").write_text(TRAIN)
    result = lint_paths([str(folder / "train.py")], Settings(gpu="a100-80gb"))
    run = plan_fixes(result.findings, lambda _p: None, unsafe=False, linted=result.files)
    assert [(f.code, o.status) for f, o in zip(run.chosen, run.plan.outcomes)] == [
        ("LL014", "applied"), ("LL024", "overlaps")]


def test_diff_shows_what_fix_writes_after_every_pass(work):
    diff = _lintlora(work, "--diff", "train.py")
    assert diff.returncode == 1, diff.stderr
    assert (work / "train.py").read_text() == TRAIN  # nothing written
    assert f"+{FIXED_LINE}\n" in diff.stdout and diff.stdout.count("\n+bnb") == 1
    assert "Would fix 2 problems" in diff.stderr
    fixed = _lintlora(work, "--fix", "train.py")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    after = (work / "train.py").read_text()
    assert after == TRAIN.replace('bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")',
                                  FIXED_LINE)
    again = _lintlora(work, "--diff", "train.py")
    assert again.returncode == 0 and again.stdout == ""


def test_the_overlay_is_read_only_while_held_and_checks_the_real_file(tmp_path):
    from lintlora import safeio

    path = tmp_path / "a.py"
    path.write_bytes(b"on disk\n")
    with safeio.overlay({str(path): b"in memory\n"}):
        assert safeio.read_bounded(path, 100) == b"in memory\n"
        with pytest.raises(safeio.UnsafeFileError):
            safeio.read_bounded(path, 5)  # the bound applies to the bytes returned
        link = tmp_path / "link.py"
        link.symlink_to(path)
        with pytest.raises(safeio.UnsafeFileError):
            safeio.read_bounded(link, 100, follow_links=False)  # a link is still refused
    assert safeio.read_bounded(path, 100) == b"on disk\n"
    assert path.read_bytes() == b"on disk\n"
