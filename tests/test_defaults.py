"""The library-defaults table: values, citations and lookups."""

import re

import pytest

from lintlora.extract import defaults
from lintlora.extract.defaults import defaults_for, known_classes, positional_parameters, sft_bf16_default
from lintlora.training_setup import Origin, Setting


@pytest.mark.parametrize("name", ["TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig",
                                  "LoraConfig", "BitsAndBytesConfig", "DataLoader",
                                  "from_pretrained"])
def test_required_classes_present_and_cited(name):
    table = defaults_for(name)
    assert table, name
    for key, setting in table.items():
        assert setting.origin is Origin.LIBRARY_DEFAULT
        assert setting.span is None
        # every citation names a file and a commit
        assert re.search(r"\.py @ [0-9a-f]{12}", setting.source), (name, key, setting.source)


def test_training_arguments_values():
    ta = defaults_for("TrainingArguments")
    assert ta["gradient_checkpointing"].value is False
    assert ta["per_device_train_batch_size"].value == 8
    assert ta["gradient_accumulation_steps"].value == 1
    assert ta["fp16"].value is False and ta["bf16"].value is False
    assert ta["dataloader_num_workers"].value == 0
    assert ta["optim"].value == "adamw_torch"
    assert "torch >= 2.8" in ta["optim"].source
    assert "training_args.py" in ta["fp16"].source


def test_sft_config_overrides_training_arguments():
    sft = defaults_for("SFTConfig")
    assert sft["gradient_checkpointing"].value is True
    assert "trl#3510" in sft["gradient_checkpointing"].source
    assert sft["max_length"].value == sft["max_seq_length"].value == 1024
    assert sft["learning_rate"].value == 2e-5
    assert sft["packing"].value is False
    # inherited ones stay TrainingArguments'
    assert sft["per_device_train_batch_size"].value == 8


def test_seq2seq_inherits():
    ta, s2s = defaults_for("TrainingArguments"), defaults_for("transformers.Seq2SeqTrainingArguments")
    for key in ta:
        assert s2s[key].value == ta[key].value


def test_lora_and_bnb_values_normalised():
    lora = defaults_for("peft.LoraConfig")
    assert (lora["r"].value, lora["lora_alpha"].value, lora["lora_dropout"].value) == (8, 8, 0.0)
    assert lora["target_modules"].value is None
    bnb = defaults_for("BitsAndBytesConfig")
    assert bnb["bnb_4bit_quant_type"].value == "fp4"
    assert bnb["bnb_4bit_compute_dtype"].value == "float32"
    assert bnb["load_in_4bit"].value is False
    assert positional_parameters("BitsAndBytesConfig")[:2] == ("load_in_8bit", "load_in_4bit")


def test_dataloader_defaults_and_positions():
    dl = defaults_for("DataLoader")
    assert dl["num_workers"].value == 0 and dl["batch_size"].value == 1
    assert dl["pin_memory"].value is False
    assert positional_parameters("DataLoader").index("num_workers") == 5


def test_returns_fresh_dicts():
    a = defaults_for("LoraConfig")
    a["r"] = None
    assert defaults_for("LoraConfig")["r"].value == 8


def test_unknown_class_raises_with_names():
    with pytest.raises(KeyError, match="LoraConfig"):
        defaults_for("NotAClass")
    assert "TrainingArguments" in known_classes()


def test_sft_bf16_follows_fp16():
    assert sft_bf16_default(Setting.literal(True)).value is False
    assert sft_bf16_default(Setting.literal(False)).value is True
    assert not sft_bf16_default(Setting.unknown("args.fp16")).known
    assert defaults.SFT_CONFIG.cite("bf16").endswith("inherited TrainingArguments' False")


def test_table_matches_installed_libraries_when_present():
    """Where the libraries are installed, their signatures agree with the table."""
    dataclasses = pytest.importorskip("dataclasses")
    peft = pytest.importorskip("peft")
    fields = {f.name: f.default for f in dataclasses.fields(peft.LoraConfig)}
    for key, setting in defaults_for("LoraConfig").items():
        if key in fields and not isinstance(fields[key], dataclasses._MISSING_TYPE):
            assert fields[key] == setting.value, key
    transformers = pytest.importorskip("transformers")
    import inspect

    sig = inspect.signature(transformers.BitsAndBytesConfig.__init__).parameters
    for key, setting in defaults_for("BitsAndBytesConfig").items():
        default = sig[key].default
        if default is not None:
            assert default == setting.value, key
    ta = {f.name: f.default for f in dataclasses.fields(transformers.TrainingArguments)}
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps", "fp16", "bf16",
                "learning_rate", "dataloader_num_workers", "dataloader_pin_memory", "deepspeed",
                "max_steps", "num_train_epochs", "torch_compile", "use_liger_kernel"):
        if key in ta:
            assert ta[key] == defaults_for("TrainingArguments")[key].value, key


def test_trust_remote_code_defaults_to_false_not_to_a_version_question():
    """Left out of from_pretrained, trust_remote_code is False in every transformers release
    (and in unsloth): a library default with its citation, not 'depends on the version'."""
    from lintlora.extract.python import extract_python

    [setup] = extract_python("t.py", (
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "m = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "Trainer(model=m, args=TrainingArguments('out')).train()\n"))
    trc = setup.get("model.trust_remote_code")
    assert trc.origin is Origin.LIBRARY_DEFAULT and trc.value is False
    assert "auto_factory.py" in trc.source and "defaults to False" in trc.source
    assert not setup.get("model.torch_dtype").known  # float32 in 4.x, "auto" in 5.x
    [setup] = extract_python("t.py", (
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "def load(**kw):\n"
        "    return AutoModelForCausalLM.from_pretrained('gpt2', **kw)\n"
        "m = load(**options)\n"
        "Trainer(model=m, args=TrainingArguments('out')).train()\n"))
    assert not setup.get("model.trust_remote_code").known  # may come through **kw
