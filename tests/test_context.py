"""Context: the architecture lookup is cached per model *and* per linted file's folder."""

import json

from lintlora.context import Context
from lintlora.extract.python import extract_python

SCRIPT = '''\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("./my-model")
trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"))
trainer.train()
'''


def _local_model(folder, hidden_size: int, layers: int) -> str:
    """A script in ``folder`` loading ``./my-model`` whose config.json has these sizes."""
    cfg = {"model_type": "llama", "hidden_size": hidden_size, "num_hidden_layers": layers,
           "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 1376,
           "vocab_size": 1000}
    (folder / "my-model").mkdir(parents=True)
    (folder / "my-model" / "config.json").write_text(json.dumps(cfg))
    script = folder / "train.py"
    script.write_text(SCRIPT)
    return str(script)


def _setup(path: str):
    (setup,) = extract_python(path, open(path).read())
    return setup


def test_relative_model_path_resolved_per_script_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ./my-model is not in the working directory
    a = _local_model(tmp_path / "a", 512, 4)
    b = _local_model(tmp_path / "b", 1024, 6)
    ctx = Context()
    arch_a = ctx.architecture(_setup(a))
    arch_b = ctx.architecture(_setup(b))
    assert (arch_a.hidden_size, arch_a.num_hidden_layers) == (512, 4)
    assert (arch_b.hidden_size, arch_b.num_hidden_layers) == (1024, 6)


def test_relative_model_path_missing_in_second_folder_is_unknown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = _local_model(tmp_path / "a", 512, 4)
    (tmp_path / "c").mkdir()
    c = tmp_path / "c" / "train.py"
    c.write_text(SCRIPT)
    ctx = Context()
    assert ctx.architecture(_setup(a)).hidden_size == 512
    setup_c = _setup(str(c))
    assert ctx.architecture(setup_c) is None
    assert ctx.architecture_problem(setup_c)


def test_same_folder_shares_one_lookup(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = _local_model(tmp_path / "a", 512, 4)
    other = tmp_path / "a" / "other.py"
    other.write_text(SCRIPT)
    ctx = Context()
    ctx.architecture(_setup(a))
    ctx.architecture(_setup(str(other)))
    assert len(ctx._arch_cache) == 1
