"""Awkward and hostile file contents (issue 7), each through the real pipeline
(:func:`lintlora.engine.lint_paths`: reading, decoding, extractors, rules, estimator).

Each case shows the diagnostic a user sees: a finding at the right line and column when the
file is fine but unusual (BOM, CRLF, tabs, latin-1 with a coding line), an ``LL000`` with a
location and a reason when it cannot be read as what its name says (binary, undecodable,
Python 2, broken notebook JSON, hostile YAML), an ``LL998`` when it is refused (size limit),
and in every case no ``LL999`` and the other files still linted.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from bench_support import load_bench

from lintlora.engine import lint_paths
from lintlora.settings import Settings

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
"""A two-line script with one finding: LL001 on ``False`` (line 2, column 66)."""
FALSE_COLUMN = TRAIN.splitlines()[1].index("False") + 1


def _bench(name: str):
    """A module of ``bench/`` (the generators live there, beside the benchmarks using them)."""
    return load_bench(name)


def _lint(*paths, settings=None):
    result = lint_paths([str(p) for p in paths], settings or Settings())
    assert not result.internal_error, result.errors
    return result


def _one(result, code=None):
    """The single finding (of ``code``, when given) of a run."""
    found = [f for f in result.findings if code is None or f.code == code]
    assert len(found) == 1, [(f.code, f.span.line, f.message) for f in result.findings]
    return found[0]


def _with_neighbour(tmp_path, name: str, data: bytes):
    """Write ``data`` as ``name`` next to an ordinary script; lint the folder; check the
    ordinary script's finding is still there (one bad file never hides the others)."""
    (tmp_path / name).write_bytes(data)
    (tmp_path / "zz_neighbour.py").write_text(TRAIN)
    result = _lint(tmp_path)
    neighbour = [f for f in result.findings if f.span.path.endswith("zz_neighbour.py")]
    assert [(f.code, f.span.line) for f in neighbour] == [("LL001", 2)]
    return [f for f in result.findings if f.span.path.endswith(name)], result


# ---- Python sources ------------------------------------------------------------------------

def test_empty_file_is_checked_and_clean(tmp_path):
    found, result = _with_neighbour(tmp_path, "empty.py", b"")
    assert found == []
    assert str(tmp_path / "empty.py") in result.files  # read and checked, not skipped
    assert result.errors == []


def test_whitespace_and_comment_only_files_are_clean(tmp_path):
    found, result = _with_neighbour(tmp_path, "blank.py", b"\n\n   \n# only a comment\n\x0c\n")
    assert found == [] and result.errors == []


@pytest.mark.parametrize("data,line", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", 3),     # a PNG renamed .py
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00", 1),                   # an executable
    (bytes(range(256)) * 4, 1),                                         # every byte value
])
def test_binary_file_named_py_is_ll000_naming_binary(tmp_path, data, line):
    (finding,), _ = _with_neighbour(tmp_path, "model.py", data)
    assert finding.code == "LL000"
    assert "binary" in finding.message and "NUL" in finding.message
    assert finding.span.line == line


def test_binary_without_nul_bytes_is_ll000_at_the_first_bad_byte(tmp_path):
    data = b"import torch\nx = 1\n\xff\xfe\xfa\xfb junk"
    (finding,), _ = _with_neighbour(tmp_path, "junk.py", data)
    assert finding.code == "LL000" and "0xff" in finding.message
    assert (finding.span.line, finding.span.column) == (3, 1)


def test_latin1_with_a_pep263_coding_line_is_decoded(tmp_path):
    text = "# -*- coding: latin-1 -*-\n# Modèle entraîné\n" + TRAIN.replace("'o'", "'sortie_é'")
    (finding,), result = _with_neighbour(tmp_path, "latin.py", text.encode("latin-1"))
    assert finding.code == "LL001" and finding.span.line == 4
    # columns count characters: 'é' is one column although latin-1 and UTF-8 differ in bytes
    assert finding.span.column == text.splitlines()[3].index("False") + 1
    assert result.errors == []


def test_latin1_without_a_coding_line_names_the_byte_and_the_fix(tmp_path):
    data = ("# Modèle\n" + TRAIN).encode("latin-1")
    (finding,), _ = _with_neighbour(tmp_path, "latin.py", data)
    assert finding.code == "LL000"
    assert "0xe8" in finding.message and "coding" in finding.message
    assert finding.span.line == 1


@pytest.mark.parametrize("coding", [b"# coding: cp1252\n", b"# vim: set fileencoding=cp1252 :\n"])
def test_other_declared_encodings_are_decoded(tmp_path, coding):
    data = coding + "s = '\u20ac'\n".encode("cp1252") + TRAIN.encode()
    (finding,), _ = _with_neighbour(tmp_path, "euro.py", data)
    assert finding.code == "LL001" and finding.span.line == 4


def test_an_unknown_coding_line_is_ll000_on_that_line(tmp_path):
    (finding,), _ = _with_neighbour(tmp_path, "odd.py", b"# -*- coding: klingon -*-\nx = 1\n")
    assert finding.code == "LL000" and "klingon" in finding.message
    assert finding.span.line == 1


def test_utf8_bom_is_not_part_of_the_text(tmp_path):
    (finding,), result = _with_neighbour(tmp_path, "bom.py", b"\xef\xbb\xbf" + TRAIN.encode())
    assert (finding.code, finding.span.line, finding.span.column) == ("LL001", 2, FALSE_COLUMN)
    assert result.errors == []
    # a finding on line 1 (a YAML key) does not count the BOM as a column
    config = ("gradient_checkpointing: false\nbase_model: meta-llama/Llama-2-7b-hf\n"
              "adapter: lora\nlora_r: 8\nmicro_batch_size: 2\nsequence_len: 2048\n")
    (finding,), _ = _with_neighbour(tmp_path, "bom.yml", b"\xef\xbb\xbf" + config.encode())
    assert (finding.code, finding.span.line, finding.span.column) == ("LL001", 1, 25)


def test_utf8_bom_with_a_conflicting_coding_line_is_ll000(tmp_path):
    data = b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nx = 1\n"
    (finding,), _ = _with_neighbour(tmp_path, "conflict.py", data)
    assert finding.code == "LL000" and "coding" in finding.message


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_old_mac_line_endings_keep_lines(tmp_path, newline):
    text = "\n\n" + TRAIN  # the finding on line 4
    (finding,), _ = _with_neighbour(tmp_path, "eol.py", text.replace("\n", newline).encode())
    assert (finding.code, finding.span.line, finding.span.column) == ("LL001", 4, FALSE_COLUMN)


def test_mixed_line_endings_keep_lines(tmp_path):
    # \n, \r\n and a lone \r each end one line (as Python's tokenizer and editors count them)
    text = ("from transformers import TrainingArguments\r\n"   # 1
            "x = 1\n"                                           # 2
            "\r"                                                # 3
            "y = 2\r\n"                                         # 4
            "args = TrainingArguments(\r"                       # 5
            "    output_dir='o',\n"                             # 6
            "    gradient_checkpointing=False)\r\n")            # 7
    (finding,), _ = _with_neighbour(tmp_path, "mixed.py", text.encode())
    assert (finding.span.line, finding.span.column) == (7, 28)


def test_tabs_count_as_one_column(tmp_path):
    text = ("from transformers import TrainingArguments\n"
            "if True:\n"
            "\targs = TrainingArguments(output_dir='o',\n"
            "\t\t\tgradient_checkpointing=False)\n")
    (finding,), _ = _with_neighbour(tmp_path, "tabs.py", text.encode())
    assert (finding.span.line, finding.span.column) == (4, 4 + len("gradient_checkpointing="))


def test_inconsistent_tabs_and_spaces_is_ll000_with_its_line(tmp_path):
    text = "if True:\n        x = 1\n\ty = 2\n"
    (finding,), _ = _with_neighbour(tmp_path, "taberr.py", text.encode())
    assert finding.code == "LL000" and finding.span.line == 3
    assert "indent" in finding.message


@pytest.mark.parametrize("source,line,words", [
    ("import os\nprint 'training'\n", 2, ["print"]),
    ("x = 1\nexec 'y = 2'\n", 2, []),
    # (``except Exception, e:`` is not here: Python 3.14 reads it as ``except (A, B):``, and
    # LibCST accepts it, so lintlora rightly does not call it an error)
    ("x = 0777\n", 1, []),
    ("x = ur'text'\n", 1, []),
    ("if x <> 1:\n    pass\n", 1, []),
])
def test_python2_file_is_ll000_at_the_python2_line(tmp_path, source, line, words):
    (finding,), _ = _with_neighbour(tmp_path, "py2.py", source.encode())
    assert finding.code == "LL000" and finding.message.startswith("syntax error")
    assert finding.span.line == line
    for word in words:
        assert word in finding.message


def test_hundred_thousand_line_file_finishes_with_the_right_line(tmp_path):
    scaling = _bench("scaling")
    path = tmp_path / "generated.py"
    path.write_text(scaling.script(100_000))
    assert os.path.getsize(path) < Settings().max_file_bytes
    # under the default size limit: past the analysis limits, refused up front (issue 12,
    # item 6: a few seconds or LL998, lintlora/extract/limits.py)
    start = time.perf_counter()
    result = _lint(path)
    assert time.perf_counter() - start < 30
    (error,) = result.errors
    assert error.code == "LL998" and "too large to analyse" in error.message
    # a raised size limit raises the analysis limits with it: linted as before
    start = time.perf_counter()
    result = _lint(path, settings=Settings(max_file_bytes=2**30))
    elapsed = time.perf_counter() - start
    finding = _one(result, "LL001")
    assert finding.span.line == 99_999  # the footer's gradient_checkpointing=False
    assert result.errors == []
    # about 30 s on the team's 2-core VM (bench/scaling.py: linear, ~0.3 ms per line);
    # the bound catches a hang or quadratic growth (which would take hours), not noise
    assert elapsed < 300, f"{elapsed:.0f} s for 100,000 lines"


# ---- size limit ------------------------------------------------------------------------------

def test_size_limit_is_configurable_and_clear(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(TRAIN + "# padding\n" * 2000)  # about 20 KiB
    result = _lint(big, settings=Settings(max_file_bytes=10 * 2**10))
    (error,) = result.errors
    assert error.code == "LL998" and error.path == str(big)
    assert "above the 10.0 KiB limit" in error.message and "--max-file-size" in error.message
    assert result.findings == [] and result.exit_code() == 1
    result = _lint(big, settings=Settings(max_file_bytes=30 * 2**10))
    assert _one(result).code == "LL001" and result.errors == []


AXOLOTL = ("base_model: acme-unknown/model-7b\nadapter: lora\nlora_r: 8\n"
           "lora_target_modules:\n  - q_proj\n  - v_proj\nsequence_len: 2048\n"
           "micro_batch_size: 2\nbf16: true\ngradient_checkpointing: false\n")
"""An axolotl config with one finding: LL001 on ``false`` (line 10); the model is unknown, so
the finding has no figures and does not depend on the estimator."""


def test_yaml_size_limit_is_max_file_size(tmp_path):
    """A YAML file above --max-file-size is LL998 naming its path, the other files are still
    linted; and --max-file-size, not the YAML loader's own default (MAX_CONFIG_CHARS), is the
    one limit for linted YAML files."""
    from lintlora.extract.yaml_loader import MAX_CONFIG_CHARS

    big = tmp_path / "big.yaml"
    big.write_text(AXOLOTL + "# padding\n" * 2000)  # about 20 KiB
    (tmp_path / "small.yaml").write_text(AXOLOTL)
    (tmp_path / "zz_neighbour.py").write_text(TRAIN)
    result = _lint(tmp_path, settings=Settings(max_file_bytes=10 * 2**10))
    (error,) = result.errors
    assert error.code == "LL998" and error.path == str(big)
    assert "above the 10.0 KiB limit" in error.message and "--max-file-size" in error.message
    found = sorted((os.path.basename(f.span.path), f.code, f.span.line) for f in result.findings)
    assert found == [("small.yaml", "LL001", 10), ("zz_neighbour.py", "LL001", 2)]
    assert str(big) not in [f.span.path for f in result.findings]
    # above the loader's default size but under --max-file-size: linted like any other file
    huge = tmp_path / "huge.yaml"
    huge.write_text(AXOLOTL + ("# " + "x" * 98 + "\n") * (MAX_CONFIG_CHARS // 100 + 100))
    assert huge.stat().st_size > MAX_CONFIG_CHARS
    result = _lint(huge, settings=Settings(max_file_bytes=2 * MAX_CONFIG_CHARS))
    assert result.errors == [] and _one(result, "LL001").span.line == 10


def test_size_limit_from_the_command_line_and_pyproject(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from lintlora.cli_app import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.py").write_text(TRAIN + "# padding\n" * 2000)
    run = CliRunner().invoke(app, ["big.py", "--max-file-size", "10KiB", "--format", "json"])
    doc = json.loads(run.output)
    assert run.exit_code == 1 and doc["findings"] == []
    assert doc["errors"][0]["code"] == "LL998" and "10.0 KiB" in doc["errors"][0]["message"]
    (tmp_path / "pyproject.toml").write_text('[tool.lintlora]\nmax-file-size = "8KiB"\n')
    run = CliRunner().invoke(app, ["big.py", "--format", "json"])
    assert "8.0 KiB" in json.loads(run.output)["errors"][0]["message"]
    run = CliRunner().invoke(app, ["big.py", "--max-file-size", "1MiB", "--format", "json"])
    assert [f["code"] for f in json.loads(run.output)["findings"]] == ["LL001"]


def test_default_size_limit_refuses_a_huge_file_without_reading_it(tmp_path):
    huge = tmp_path / "huge.py"
    with open(huge, "wb") as handle:  # sparse: 6 GiB of nothing, costs no disk
        handle.truncate(6 * 2**30)
    start = time.perf_counter()
    result = _lint(huge)
    assert time.perf_counter() - start < 5
    (error,) = result.errors
    assert error.code == "LL998" and "6144.0 MiB" in error.message


# ---- notebooks -------------------------------------------------------------------------------

def _cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": source.splitlines(keepends=True)}


@pytest.mark.parametrize("text,line,words", [
    ('{"cells": [\n  {"cell_type": "code",,}\n]}', 2, ["not a valid notebook"]),
    ('{"cells": [', 1, ["not a valid notebook"]),
    ("", 1, ["not a valid notebook"]),
    ('{"metadata": {}, "nbformat": 4}', 1, ["no list of cells"]),
    ('{"cells": {"a": 1}}', 1, ["no list of cells"]),
    ("[1, 2, 3]", 1, ["no list of cells"]),
    ('"just a string"', 1, ["no list of cells"]),
])
def test_broken_notebook_is_ll000_with_a_location(tmp_path, text, line, words):
    (finding,), _ = _with_neighbour(tmp_path, "nb.ipynb", text.encode())
    assert finding.code == "LL000" and finding.span.line == line
    for word in words:
        assert word in finding.message


def test_notebook_cells_of_the_wrong_shape_are_skipped_or_reported(tmp_path):
    cells = [42, None, {"cell_type": "markdown"}, {"cell_type": "code"},
             {"cell_type": "code", "source": ["x = 1\n", 7, None]}, _cell(TRAIN)]
    nb = json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5})
    (finding,), result = _with_neighbour(tmp_path, "odd.ipynb", nb.encode())
    assert finding.code == "LL001" and (finding.span.cell, finding.span.line) == (3, 2)
    bad = json.dumps({"cells": [{"cell_type": "code", "source": {"no": "text"}}]})
    (finding,), _ = _with_neighbour(tmp_path, "odd.ipynb", bad.encode())
    assert finding.code == "LL000" and "no source text" in finding.message


def test_notebook_with_a_syntax_error_points_at_the_cell(tmp_path):
    nb = json.dumps({"cells": [_cell("import torch\n"), _cell("x = 1\ndef f(:\n    pass\n")],
                     "nbformat": 4, "nbformat_minor": 5})
    (finding,), _ = _with_neighbour(tmp_path, "syntax.ipynb", nb.encode())
    assert finding.code == "LL000" and (finding.span.cell, finding.span.line) == (2, 2)


# ---- hostile YAML ---------------------------------------------------------------------------

def _billion_laughs() -> str:
    lines = ["lora_r: 8", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return "\n".join(lines) + "\n"


HOSTILE_YAML = {
    "alias bomb": (_billion_laughs(), ["alias", "expand"]),
    "recursive alias": ("lora_r: 8\na: &a [*a]\n", ["alias"]),
    "deep flow nesting": ("lora_r: 8\nx: " + "[" * 5000 + "]" * 5000 + "\n", ["nested"]),
    "deep block nesting": ("lora_r: 8\n" + "".join("  " * i + f"k{i}:\n" for i in range(200))
                           + "  " * 200 + "v: 1\n", ["nested"]),
    "python object": ("lora_r: 8\nx: !!python/object/apply:os.system ['echo pwned']\n",
                      ["unsupported YAML tag", "never constructs"]),
    "python name": ("lora_r: 8\nx: !!python/name:os.system\n", ["unsupported YAML tag"]),
    "custom tag": ("lora_r: 8\nx: !Ref other\n", ["unsupported YAML tag"]),
    "junk": ("lora_r: 8\n" + "\x01\x02\x7f junk ]]]: {{{\n", ["not YAML text"]),
    "unbalanced": ("lora_r: 8\nx: [1, 2\ny: 3\n", ["YAML syntax error"]),
    "tab indentation": ("lora_r: 8\nx:\n\t- 1\n", ["YAML syntax error"]),
    # explicit tags on text of another type made PyYAML's constructors raise ValueError,
    # KeyError or IndexError (found by bench/fuzz.py)
    "wrong float tag": ("lora_r: 8\ngradient_checkpointing: !!float 2**else63\n", ["!!float"]),
    "wrong bool tag": ("lora_r: 8\nbf16: !!bool maybe\n", ["!!bool"]),
    "empty int tag": ("lora_r: !!int\n", ["!!int"]),
    "many nodes": ("lora_r: 8\nx: [" + ", ".join(["1"] * 30_000) + "]\n", ["nodes"]),
}


def _diagnostic(result, name: str) -> tuple[str, int, str]:
    """The one diagnostic for file ``name``: a finding (``LL000``) or an input error
    (``LL998``: refused by a limit), as ``(code, line, message)``."""
    found = [(f.code, f.span.line, f.message) for f in result.findings
             if f.span.path.endswith(name)]
    found += [(e.code, e.line or 1, e.message) for e in result.errors if e.path.endswith(name)]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name", sorted(HOSTILE_YAML))
def test_hostile_yaml_is_one_clear_diagnostic_quickly(tmp_path, name):
    text, words = HOSTILE_YAML[name]
    start = time.perf_counter()
    _, result = _with_neighbour(tmp_path, "config.yaml", text.encode())
    assert time.perf_counter() - start < 10
    code, line, message = _diagnostic(result, "config.yaml")
    assert code in ("LL000", "LL998"), message  # unparsable, or refused by a limit
    assert line >= 1
    for word in words:
        assert word in message, message


def test_fifty_megabyte_yaml_is_refused(tmp_path):
    comments = tmp_path / "comments.yaml"
    comments.write_text("lora_r: 8\n" + ("# padding " + "x" * 100 + "\n") * (50 * 2**20 // 111))
    assert comments.stat().st_size > 50 * 10**6
    start = time.perf_counter()
    result = _lint(comments)  # the 5 MiB file-size limit: refused before reading
    assert time.perf_counter() - start < 5
    (error,) = result.errors
    assert error.code == "LL998" and "limit" in error.message and "MiB" in error.message
    # with the file-size limit raised, 50 MB of settings stop at the YAML node limit
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("lora_r: 8\n" + "".join(f"key_{i}: {i}\n" for i in range(2_600_000)))
    assert nodes.stat().st_size > 50 * 10**6
    start = time.perf_counter()
    result = _lint(nodes, settings=Settings(max_file_bytes=2**30))
    assert time.perf_counter() - start < 30
    code, _line, message = _diagnostic(result, "nodes.yaml")
    # (the node limit, or the YAML loader's own size bound where the engine still sets one)
    assert code in ("LL000", "LL998") and ("nodes" in message or "not parsed" in message)


def test_hostile_json_config(tmp_path):
    path = tmp_path / "args.json"
    path.write_text('{"per_device_train_batch_size": ' + "[" * 100_000 + "]" * 100_000 + "}")
    finding = _one(_lint(path))
    assert finding.code == "LL000" and "nested" in finding.message
    path.write_text('{"per_device_train_batch_size": 1' + "0" * 100_000 + "}")
    result = _lint(path)  # an integer too long for int(): a diagnostic, not a crash
    assert all(f.code == "LL000" for f in result.findings) and result.errors == []


# ---- internal errors -----------------------------------------------------------------------

def test_internal_error_is_ll999_exit_2_and_other_files_still_linted(tmp_path, monkeypatch):
    """A bug (here: the YAML extractor raising) is LL999 naming the file and the stage, with a
    hint to report it; the exit status is 2 even though findings exist; the output is valid
    JSON; the Python file next to it is linted as usual."""
    from click.testing import CliRunner

    import lintlora.extract.yaml_config as yaml_config
    from lintlora.cli_app import app

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(yaml_config, "extract_config", broken)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "axolotl.yml").write_text("base_model: x\nlora_r: 8\n")
    run = CliRunner().invoke(app, [".", "--format", "json"])
    assert run.exit_code == 2
    doc = json.loads(run.output)
    assert [(f["path"], f["code"]) for f in doc["findings"]] == [("train.py", "LL001")]
    (error,) = doc["errors"]
    assert error["code"] == "LL999" and error["path"] == "axolotl.yml"
    assert "ZeroDivisionError: a bug" in error["message"] and "report" in error["message"]
    run = CliRunner().invoke(app, ["."])
    assert run.exit_code == 2 and "LL999" in run.output and "Traceback" not in run.output


def test_an_exception_whose_message_fails_is_still_reported(tmp_path):
    """The isolation boundary formats the exception; that must not raise in turn."""
    from lintlora.rules.base import Rule

    class Unprintable(Exception):
        def __str__(self):
            raise RecursionError("maximum recursion depth exceeded")

    class Broken(Rule):
        code, name, summary = "TX001", "broken", "always fails"

        def check(self, setup, context):
            raise Unprintable()

    (tmp_path / "train.py").write_text(TRAIN)
    result = lint_paths([str(tmp_path)], rules=[Broken])
    (error,) = result.errors
    assert error.code == "LL999" and "Unprintable" in error.message
    assert result.exit_code() == 2


def test_invalid_target_modules_pattern_is_not_an_internal_error(tmp_path):
    """peft reads a string target_modules as a regular expression; an invalid one (here from
    the fuzz run: ``all-linear**``) made the estimator raise re.error inside every rule that
    asked for memory figures (LL999). The estimate now falls back to peft's default, noted."""
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n"
        "from peft import LoraConfig, get_peft_model\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
        "model = get_peft_model(model, LoraConfig(r=16, target_modules='all-linear**'))\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n"
        "Trainer(model=model, args=args).train()\n")
    result = _lint(tmp_path, settings=Settings(gpu="rtx3090"))
    assert result.errors == []
    finding = _one(result, "LL001")
    assert finding.estimate is not None and finding.estimate.peak_bytes
