"""``--model`` / ``--model-config`` replace a model chosen at launch or left unresolved, never
one the file names itself; a file whose model was kept says so once (a notice)."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from lintlora.cli_app import app
from lintlora.context import Context
from lintlora.engine import lint_paths, read_setups
from lintlora.settings import Settings
from lintlora.training_setup import Origin

SEVENTY = "meta-llama/Llama-2-70b-hf"

TAIL = """\
model = AutoModelForCausalLM.from_pretrained({expr})
trainer = Trainer(model=model, args=TrainingArguments(output_dir="o", per_device_train_batch_size=4,
                                                      fp16=True))
trainer.train()
"""

SCRIPTS = {
    # the file names the model: kept
    "literal.py": ("", '"mistralai/Mistral-7B-v0.1"'),
    "variable.py": ('MODEL = "mistralai/Mistral-7B-v0.1"\n', "MODEL"),
    # chosen at launch or unresolved: replaced
    "argparse_default.py": ('import argparse\np = argparse.ArgumentParser()\n'
                            'p.add_argument("--model_name", default="Qwen/Qwen2.5-0.5B")\n'
                            'args = p.parse_args()\n', "args.model_name"),
    "argparse_empty.py": ('import argparse\np = argparse.ArgumentParser()\n'
                          'p.add_argument("--model_name", default=None)\n'
                          'args = p.parse_args()\n', "args.model_name"),
    "env_default.py": ("import os\n", 'os.environ.get("MODEL", "Qwen/Qwen2.5-0.5B")'),
    "argv.py": ("import sys\n", "sys.argv[1]"),
    "dataclass_default.py": (
        "from dataclasses import dataclass, field\nfrom transformers import HfArgumentParser\n"
        "@dataclass\nclass ModelArguments:\n"
        '    model_name_or_path: str = field(default="Qwen/Qwen2.5-0.5B")\n'
        "(margs,) = HfArgumentParser(ModelArguments).parse_args_into_dataclasses()\n",
        "margs.model_name_or_path"),
}
NAMED = {"literal.py", "variable.py"}


def _write_scripts(folder):
    for name, (head, expr) in SCRIPTS.items():
        (folder / name).write_text("from transformers import AutoModelForCausalLM, Trainer, "
                                   "TrainingArguments\n" + head + TAIL.format(expr=expr))


@pytest.fixture
def scripts(tmp_path):
    _write_scripts(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_model_replaced_only_where_the_file_does_not_name_it(scripts, name):
    (setup,) = read_setups(str(scripts / name))
    before = setup.get("model.name_or_path")
    after = Context(Settings(model=SEVENTY)).apply_overrides(setup).get("model.name_or_path")
    if name in NAMED:
        assert after == before and after.value == "mistralai/Mistral-7B-v0.1"
    else:
        assert (after.value, after.origin, after.source) == (SEVENTY, Origin.CLI_OVERRIDE, "--model")


def test_one_notice_per_file_that_names_its_model(scripts):
    result = lint_paths([str(scripts)], Settings(model=SEVENTY, gpu="rtx4090"))
    noted = {n.path.rsplit("/", 1)[-1]: n for n in result.notices if "--model" in n.message}
    assert set(noted) == NAMED
    literal = noted["literal.py"]
    assert f"--model {SEVENTY} not used" in literal.message
    assert "mistralai/Mistral-7B-v0.1, line 2" in literal.message and literal.line == 2
    # the estimates use each file's own model: Mistral where named, the 70B elsewhere
    models = {f.span.path.rsplit("/", 1)[-1]: f.estimate.model for f in result.findings
              if f.estimate is not None and f.estimate.model}
    assert models["literal.py"] == models["variable.py"] == "Mistral-7B-v0.1"
    assert models["argparse_default.py"] == models["argv.py"] == "Llama-2-70B"
    # without --model: no such notice
    plain = lint_paths([str(scripts)], Settings(gpu="rtx4090"))
    assert not [n for n in plain.notices if "--model" in n.message]


def test_notice_in_the_text_report(scripts):
    runner = CliRunner()
    done = runner.invoke(app, ["--no-cache", "--gpu", "rtx4090", "--model", SEVENTY,
                               str(scripts / "literal.py"), str(scripts / "argv.py")],
                         prog_name="lintlora")
    notes = [line for line in done.output.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "literal.py" in notes[0] and "not used" in notes[0]
    assert "[Mistral-7B-v0.1]" in done.output and "[Llama-2-70B]" in done.output


QWEN_05B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
            "intermediate_size": 4864, "num_attention_heads": 14, "num_hidden_layers": 24,
            "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True}


def test_model_config_follows_the_same_rule(scripts, tmp_path):
    config = tmp_path / "cfg" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(QWEN_05B))
    context = Context(Settings(model_config=str(config)))
    for name in SCRIPTS:
        (setup,) = read_setups(str(scripts / name))
        arch = context.architecture(context.apply_overrides(setup))
        if name in NAMED:  # the script's Mistral-7B (32 layers), not the config
            assert arch.num_hidden_layers == 32, name
        else:  # a launch-time default or unresolved: the config describes the model
            assert arch.hidden_size == 896, name
    result = lint_paths([str(scripts / "literal.py")], Settings(model_config=str(config)))
    assert [n.message.split(" not used")[0] for n in result.notices] == [f"--model-config {config}"]


def test_yaml_config_naming_its_model_is_kept(tmp_path):
    named = tmp_path / "named.yml"
    named.write_text(textwrap.dedent("""\
        base_model: mistralai/Mistral-7B-v0.1
        adapter: lora
        lora_r: 8
        micro_batch_size: 2
        sequence_len: 1024
        gradient_checkpointing: false
    """))
    unnamed = tmp_path / "unnamed.yml"
    unnamed.write_text(named.read_text().replace("base_model: mistralai/Mistral-7B-v0.1\n", ""))
    context = Context(Settings(model=SEVENTY))
    (kept,) = read_setups(str(named))
    assert context.apply_overrides(kept).get("model.name_or_path").value == "mistralai/Mistral-7B-v0.1"
    for setup in read_setups(str(unnamed)):
        assert context.apply_overrides(setup).get("model.name_or_path").value == SEVENTY


def test_configured_default_model_still_fills_only_an_unresolved_one(scripts):
    """... or a named one lintlora does not know (below); a known named model is kept."""
    context = Context(Settings(default_model=SEVENTY))
    for name, expected in (("argv.py", SEVENTY), ("argparse_default.py", "Qwen/Qwen2.5-0.5B"),
                           ("literal.py", "mistralai/Mistral-7B-v0.1")):
        (setup,) = read_setups(str(scripts / name))
        assert context.apply_overrides(setup).get("model.name_or_path").value == expected


def test_a_named_model_lintlora_does_not_know_takes_the_options(scripts, tmp_path):
    """The "unknown model" note asks for --model or --model-config: they apply to a named
    model lintlora has no architecture for (a private fine-tune), without a notice."""
    private = scripts / "private.py"
    private.write_text((scripts / "literal.py").read_text().replace(
        "mistralai/Mistral-7B-v0.1", "my-org/private-llama"))
    (setup,) = read_setups(str(private))
    assert Context().architecture(setup) is None  # unknown as written
    with_model = Context(Settings(model="Qwen/Qwen2.5-0.5B"))
    assert with_model.architecture(with_model.apply_overrides(setup)).name == "Qwen2.5-0.5B"
    config = tmp_path / "cfg" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(QWEN_05B))
    with_config = Context(Settings(model_config=str(config)))
    replaced = with_config.apply_overrides(setup).get("model.name_or_path")
    assert (replaced.value, replaced.source) == ("my-org/private-llama", "--model-config")
    assert with_config.architecture(with_config.apply_overrides(setup)).hidden_size == 896
    # a rough --params architecture does not count as known: --model still applies
    rough = Context(Settings(model="Qwen/Qwen2.5-0.5B", params=7e9))
    assert rough.architecture(rough.apply_overrides(setup)).name == "Qwen2.5-0.5B"
    result = lint_paths([str(private)], Settings(model="Qwen/Qwen2.5-0.5B"))
    assert not [n for n in result.notices if "--model" in n.message]


def test_a_replaced_named_model_is_said_in_every_estimate(scripts):
    """--model (or the configured default) used in place of a model the file names but
    lintlora does not know: the figures are another model's, and the estimate's note says
    which and instead of what (text, JSON, SARIF and Markdown all print that note)."""
    private = scripts / "private.py"
    private.write_text((scripts / "literal.py").read_text().replace(
        "mistralai/Mistral-7B-v0.1", "my-org/private-llama"))
    for settings, source in ((Settings(model="Qwen/Qwen2.5-0.5B"), "--model"),
                             (Settings(default_model="Qwen/Qwen2.5-0.5B"),
                              "[tool.lintlora] model")):
        (setup,) = read_setups(str(private))
        name = Context(settings).apply_overrides(setup).get("model.name_or_path")
        assert (name.value, name.source) == ("Qwen/Qwen2.5-0.5B",
                                             f"{source}, in place of my-org/private-llama")
        result = lint_paths([str(private)], settings)
        notes = {f.estimate.note for f in result.findings if f.estimate is not None}
        assert notes and all(n.startswith(f"model Qwen/Qwen2.5-0.5B from {source}, in place of "
                                          "my-org/private-llama") for n in notes)
    # filling an unresolved model is what --model is for: no such note
    result = lint_paths([str(scripts / "argv.py")], Settings(model="Qwen/Qwen2.5-0.5B"))
    assert all("in place of" not in (f.estimate.note or "") for f in result.findings
               if f.estimate is not None)


def test_the_notice_reaches_the_json_report(scripts):
    """A CI bot reads JSON: the "--model not used" notice is in its ``notices``."""
    import io
    import json

    from lintlora.report import render

    result = lint_paths([str(scripts)], Settings(model=SEVENTY, gpu="rtx4090"))
    out = io.StringIO()
    render(result, "json", out)
    notices = json.loads(out.getvalue())["notices"]
    assert any(f"--model {SEVENTY} not used" in n["message"] for n in notices)
    assert all(set(n) >= {"code", "path", "message"} for n in notices)
