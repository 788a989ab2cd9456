"""``[tool.lintlora]``: discovery of the file, validation, conversion, merge with flags."""

from __future__ import annotations

import os
import textwrap

import pytest

from lintlora.config import (
    ConfigError,
    SettingsResolver,
    find_config_file,
    load_config_file,
    parse_codes,
    parse_file_size,
)
from lintlora.findings import Severity
from lintlora.settings import DEFAULT_MAX_FILE_BYTES

KNOWN = ["LL000", "LL001", "LL002", "LL003", "LL006", "LL900"]


def _pyproject(folder, body, name="pyproject.toml"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def test_every_key_converted(tmp_path):
    path = _pyproject(tmp_path, """
        [tool.lintlora]
        select = ["LL0"]
        ignore = "LL003, LL006"
        extend-select = ["LL900"]
        per-file-ignores = { "tests/*" = ["LL001"], "*_nb.py" = "LL002" }
        exclude = ["legacy/", "*.ipynb", "./gen/*"]
        fail-on = "Warning"
        gpu = "rtx3090"
        gpu-memory = "24GiB"
        model = "meta-llama/Llama-2-7b-hf"
        model-config = "cfg/config.json"
        cpus = 16
        max-file-size = "1MiB"
    """)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text("{}")
    config = load_config_file(str(path), KNOWN)
    root = str(tmp_path).replace(os.sep, "/")
    assert config.values == {
        "select": ("LL0",),
        "ignore": ("LL003", "LL006"),
        "extend_select": ("LL900",),
        "per_file_ignores": ((f"{root}/tests/*", ("LL001",)), ("*_nb.py", ("LL002",))),
        "exclude": ("legacy/", "*.ipynb", f"{root}/gen/*"),
        "fail_on": Severity.WARNING,
        "gpu": "rtx3090",
        "gpu_memory_bytes": 24 * 2**30,
        "default_model": "meta-llama/Llama-2-7b-hf",
        "default_model_config": os.path.join(str(tmp_path), "cfg", "config.json"),
        "cpus": 16,
        "max_file_bytes": 2**20,
    }


@pytest.mark.parametrize("body,words", [
    ("fail_on = 'error'", ["unknown key 'fail_on'", "did you mean 'fail-on'"]),
    ("colour = true", ["unknown key 'colour'"]),
    ("select = ['LL123']", ["select", "unknown rule code 'LL123'"]),
    ("ignore = ['XX']", ["ignore", "unknown rule code 'XX'"]),
    ("per-file-ignores = { 'a/*' = ['LL77'] }", ["per-file-ignores", "'LL77'"]),
    ("select = 3", ["select", "expected a list of rule codes"]),
    ("fail-on = 'fatal'", ["fail-on", "info, warning, error"]),
    ("cpus = 0", ["cpus", "positive integer"]),
    ("cpus = true", ["cpus", "positive integer"]),
    ("gpu-memory = 'lots'", ["gpu-memory", "not a memory size"]),
    ("gpu-memory = '0'", ["gpu-memory", "must be positive"]),
    ("max-file-size = -5", ["max-file-size"]),
    ("exclude = [1]", ["exclude", "glob patterns"]),
    ("gpu = ''", ["gpu", "non-empty string"]),
    ("model-config = 'nope.json'", ["[tool.lintlora] model-config", "no such file", "nope.json"]),
])
def test_errors_name_key_and_file(tmp_path, body, words):
    path = _pyproject(tmp_path, "[tool.lintlora]\n" + body + "\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(str(path), KNOWN)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message


def test_invalid_toml_is_a_clear_error(tmp_path):
    path = _pyproject(tmp_path, "[tool.lintlora]\nselect = [\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        find_config_file(str(tmp_path))
    with pytest.raises(ConfigError, match=str(path).replace("\\", "\\\\")):
        load_config_file(str(path))


def test_prefix_and_all_codes_are_valid(tmp_path):
    path = _pyproject(tmp_path, "[tool.lintlora]\nselect = ['ALL']\nignore = ['LL00']\n")
    assert load_config_file(str(path), KNOWN).values["ignore"] == ("LL00",)


def test_nearest_config_with_table_wins(tmp_path):
    _pyproject(tmp_path, "[tool.lintlora]\nfail-on = 'error'\n")
    _pyproject(tmp_path / "pkg", "[project]\nname = 'pkg'\n")  # no table: passed over
    _pyproject(tmp_path / "proj", "[tool.lintlora]\nfail-on = 'warning'\n")
    (tmp_path / "proj" / "sub").mkdir()
    assert find_config_file(str(tmp_path / "pkg" / "x.py")) == str(tmp_path / "pyproject.toml")
    assert find_config_file(str(tmp_path / "proj" / "sub")) == str(tmp_path / "proj" / "pyproject.toml")

    resolver = SettingsResolver({}, known_codes=KNOWN)
    assert resolver.for_path(str(tmp_path / "pkg" / "x.py")).fail_on is Severity.ERROR
    assert resolver.for_path(str(tmp_path / "proj" / "sub" / "y.py")).fail_on is Severity.WARNING


def test_cli_values_override_and_extend(tmp_path):
    _pyproject(tmp_path, """
        [tool.lintlora]
        select = ["LL001"]
        extend-select = ["LL002"]
        fail-on = "error"
        gpu = "t4"
        cpus = 4
        exclude = ["old"]
    """)
    resolver = SettingsResolver({"select": ("LL003",), "extend_select": ("LL006",),
                                 "gpu": "rtx3090", "exclude": ("new",)}, known_codes=KNOWN)
    settings = resolver.for_path(str(tmp_path / "a.py"))
    assert settings.select == ("LL003",)
    assert settings.extend_select == ("LL002", "LL006")
    assert settings.fail_on is Severity.ERROR
    assert settings.gpu == "rtx3090"
    assert settings.cpus == 4
    assert settings.exclude == ("old", "new")
    assert settings.max_file_bytes == DEFAULT_MAX_FILE_BYTES


def test_no_config_and_explicit_config(tmp_path):
    _pyproject(tmp_path, "[tool.lintlora]\nfail-on = 'error'\n")
    other = _pyproject(tmp_path / "elsewhere", "[tool.lintlora]\nfail-on = 'warning'\n",
                       name="custom.toml")
    assert SettingsResolver({}, use_config=False).for_path(str(tmp_path / "a.py")).fail_on \
        is Severity.INFO
    fixed = SettingsResolver({}, config_path=str(other))
    assert fixed.for_path(str(tmp_path / "a.py")).fail_on is Severity.WARNING
    with pytest.raises(ConfigError, match="no \\[tool.lintlora\\] table"):
        SettingsResolver({}, config_path=str(_pyproject(tmp_path / "x", "[tool.other]\n")))


def test_on_config_sees_each_file_once(tmp_path):
    _pyproject(tmp_path, "[tool.lintlora]\ngpu = 'rtx3090'\n")
    seen = []
    resolver = SettingsResolver({}, on_config=seen.append)
    for name in ("a.py", "b.py", "c/d.py"):
        resolver.for_path(str(tmp_path / name))
    assert [c.values["gpu"] for c in seen] == ["rtx3090"]


def test_parse_helpers():
    assert parse_codes("ll001, LL002 LL3", "x") == ("LL001", "LL002", "LL3")
    assert parse_codes(["LL001,LL002"], "x") == ("LL001", "LL002")
    assert parse_file_size(1000) == 1000
    assert parse_file_size("1000") == 1000  # bytes, not GiB
    assert parse_file_size("2MiB") == 2 * 2**20
    with pytest.raises(ValueError):
        parse_file_size(True)
    with pytest.raises(ValueError):
        parse_file_size("\u00b2")  # isdigit() but not a number int() reads


QWEN_05B = ('{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896, '
            '"intermediate_size": 4864, "num_attention_heads": 14, "num_hidden_layers": 24, '
            '"num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true, '
            '"torch_dtype": "bfloat16"}')


def _setup_naming(model):
    """A setup whose script names ``model`` (``None``: the script's model is unresolved)."""
    from lintlora.training_setup import ModelLoad, Origin, Setting, TrainingSetup

    name = Setting.literal(model) if model else Setting(None, Origin.UNKNOWN, None, None,
                                                        "read from argv", "args.model")
    return TrainingSetup(path="train.py", kind="python", framework="transformers",
                         model=ModelLoad(name_or_path=name))


def test_configured_model_config_is_a_default_like_model(tmp_path):
    """``[tool.lintlora] model-config`` describes the model only where the script's is
    unresolved (as ``model`` does); ``--model-config`` also where it is chosen at launch."""
    from lintlora.context import Context

    (tmp_path / "qwen").mkdir()
    (tmp_path / "qwen" / "config.json").write_text(QWEN_05B)
    path = _pyproject(tmp_path, '[tool.lintlora]\nmodel-config = "qwen/config.json"\n')
    configured = SettingsResolver().merge(load_config_file(str(path), KNOWN))
    context = Context(configured)
    literal = context.apply_overrides(_setup_naming("meta-llama/Llama-2-7b-hf"))
    assert context.architecture(literal).num_hidden_layers == 32  # the script's Llama-2-7B
    unresolved = context.apply_overrides(_setup_naming(None))
    assert context.architecture(unresolved).hidden_size == 896  # the configured Qwen
    # with both defaults configured, model-config describes the configured model
    both = _pyproject(tmp_path / "both", '[tool.lintlora]\nmodel = "org/private-model"\n'
                                         f'model-config = "{tmp_path / "qwen"}"\n')
    context = Context(SettingsResolver().merge(load_config_file(str(both), KNOWN)))
    assert context.architecture(context.apply_overrides(_setup_naming(None))).hidden_size == 896
    # --model-config on the command line, like --model, describes a model the script leaves
    # unresolved (or chosen at launch), not one it names (tests/test_model_override.py)
    cli = Context(SettingsResolver({"model_config": str(tmp_path / "qwen" / "config.json")})
                  .merge(load_config_file(str(path), KNOWN)))
    assert cli.architecture(cli.apply_overrides(_setup_naming("meta-llama/Llama-2-7b-hf"))
                            ).num_hidden_layers == 32
    assert cli.architecture(cli.apply_overrides(_setup_naming(None))).hidden_size == 896
