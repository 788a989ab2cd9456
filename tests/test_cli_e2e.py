"""End to end through the real extractors, rules and estimator: the ``lintlora`` command on the
shipped fixtures, in every output format, with configuration and suppression.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from lintlora.estimate.gpus import find_gpu

# the catalog's usable total for the card the tests name (23.7 GiB: lintlora/data/gpus.json)
RTX3090 = find_gpu("rtx3090")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO, "tests", "sarif-schema-2.1.0.json")
FIXTURES = os.path.join(REPO, "fixtures")
C11 = os.path.join(FIXTURES, "cases", "C11_axolotl_fp16_no_gc.yml")


def _have_python_extractor() -> bool:
    import importlib.util

    return importlib.util.find_spec("lintlora.extract.python") is not None


needs_python = pytest.mark.skipif(not _have_python_extractor(),
                                  reason="the Python extractor is not in the tree yet")


def lintlora(*args, cwd=REPO, env=None):
    full_env = dict(os.environ, PYTHONPATH=REPO, **(env or {}))
    full_env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True)


def _json(done):
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return json.loads(done.stdout)


def _fixture_paths():
    """Every fixture folder that holds lintable files (extractor-specific ones as they exist)."""
    if not _have_python_extractor():
        return ["fixtures/configs", "fixtures/cases/C11_axolotl_fp16_no_gc.yml"]
    paths = ["fixtures/configs", "fixtures/cases"]
    if _have_python_extractor():
        paths += [p for p in ("fixtures/examples", "fixtures/rules", "fixtures/python")
                  if os.path.isdir(os.path.join(REPO, p))]
    return paths


# ---- YAML (real extractor) ---------------------------------------------------------------------

def test_yaml_case_findings_and_exit_status():
    doc = _json(lintlora(C11, "--gpu", "rtx3090", "--format", "json"))
    got = [(f["code"], f["line"]) for f in doc["findings"]]
    assert ("LL001", 21) in got and ("LL002", 20) in got
    ll001 = next(f for f in doc["findings"] if f["code"] == "LL001")
    assert ll001["path"] == "fixtures/cases/C11_axolotl_fp16_no_gc.yml"
    assert ll001["estimate"]["peak_bytes"] > ll001["estimate"]["peak_after_fix_bytes"] > 0
    assert ll001["estimate"]["gpu_memory_bytes"] == RTX3090.memory_bytes
    assert lintlora(C11, "--select", "LL001", "--fail-on", "error", "--gpu", "h100").returncode == 0


def test_yaml_suppression_on_the_key_and_the_line_above(tmp_path):
    with open(C11, encoding="utf-8") as handle:
        text = handle.read()
    above = text.replace("gradient_checkpointing: false",
                         "# lintlora: ignore[LL001]\ngradient_checkpointing: false")
    (tmp_path / "above.yml").write_text(above)
    trailing = text.replace("gradient_checkpointing: false",
                            "gradient_checkpointing: false  # noqa: LL001")
    (tmp_path / "trailing.yml").write_text(trailing)
    wrong = text.replace("fp16: true", "fp16: true  # lintlora: ignore[LL001]")
    (tmp_path / "wrong.yml").write_text(wrong)
    doc = _json(lintlora("above.yml", "trailing.yml", "wrong.yml", "--format", "json",
                         cwd=tmp_path))
    got = sorted((f["path"], f["code"]) for f in doc["findings"] if f["code"] in ("LL001", "LL900"))
    # the comment on the wrong line does not suppress LL001; it is not reported unused (LL900)
    # either, since whether LL001 fires depends on the run's model (Rule.depends_on_settings)
    assert got == [("wrong.yml", "LL001")]


def test_config_file_drives_a_yaml_run(tmp_path):
    shutil.copy(C11, tmp_path / "axolotl.yml")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.lintlora]
        ignore = ["LL002"]
        gpu = "rtx3090"
        fail-on = "error"
    """))
    done = lintlora("axolotl.yml", "--format", "json", cwd=tmp_path)
    doc = _json(done)
    assert [f["code"] for f in doc["findings"]] == ["LL001"]
    assert doc["findings"][0]["estimate"]["gpu"] is not None  # gpu from the file
    assert done.returncode == 1  # LL001 does not fit on the card: an error
    (tmp_path / "pyproject.toml").write_text('[tool.lintlora]\nignroe = ["LL002"]\n')
    done = lintlora("axolotl.yml", cwd=tmp_path)
    assert done.returncode == 2
    assert "pyproject.toml" in done.stderr and "'ignroe'" in done.stderr


# ---- every format over the fixtures ----------------------------------------------------------

def test_sarif_over_the_fixtures_validates():
    import jsonschema

    done = lintlora(*_fixture_paths(), "--gpu", "rtx3090", "--format", "sarif")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    with open(SCHEMA, encoding="utf-8") as handle:
        jsonschema.Draft4Validator(json.load(handle)).validate(doc)
    run = doc["runs"][0]
    assert run["results"], "the fixtures should produce findings"
    ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {"LL000", "LL001", "LL007", "LL900"} <= ids
    for rule in run["tool"]["driver"]["rules"]:
        if rule["id"].startswith("LL"):
            assert rule["helpUri"].endswith(f"/rules/{rule['id']}.md")
            assert os.path.exists(os.path.join(REPO, "rules", f"{rule['id']}.md"))
    assert all("estimate" in r["properties"] for r in run["results"] if r["ruleId"] != "LL000")
    assert run["invocations"][0]["executionSuccessful"] is True


def test_markdown_over_the_fixtures_renders_a_table():
    from markdown_it import MarkdownIt

    done = lintlora(*_fixture_paths(), "--gpu", "rtx3090", "--format", "markdown")
    html = MarkdownIt("commonmark").enable("table").render(done.stdout)
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    rows = body.count("<tr>")
    assert rows == len(_json(lintlora(*_fixture_paths(), "--gpu", "rtx3090",
                                      "--format", "json"))["findings"])
    assert body.count("<td>") == rows * 7  # every row kept its seven cells
    assert " GiB</td>" in body and f"GeForce RTX 3090 ({RTX3090.memory_gib:.1f} GiB)" in body


def test_github_annotations_over_the_fixtures():
    done = lintlora(*_fixture_paths(), "--gpu", "rtx3090", "--format", "github")
    lines = done.stdout.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    assert commands and all(line.split(" ", 1)[0] in ("::error", "::warning", "::notice")
                            for line in commands)
    assert all("title=LL" in line and ",line=" in line for line in commands)
    assert lines[-1].startswith("lintlora: ")


def test_output_is_byte_identical_across_runs_and_argument_order():
    paths = _fixture_paths()
    first = lintlora(*paths, "--format", "json", "--gpu", "a10g").stdout
    second = lintlora(*reversed(paths), "--format", "json", "--gpu", "a10g").stdout
    assert first == second and json.loads(first)["findings"]


def test_text_output_groups_and_summarises():
    done = lintlora(C11, "--gpu", "rtx3090")
    lines = done.stdout.splitlines()
    assert lines[0] == "fixtures/cases/C11_axolotl_fp16_no_gc.yml"
    assert lines[1].startswith("fixtures/cases/C11_axolotl_fp16_no_gc.yml:20:")
    assert any(line.startswith("    peak ≈ ") and f"GeForce RTX 3090: {RTX3090.memory_gib:.1f} GiB" in line
               for line in lines)
    assert lines[-2].startswith("Found 2 problems")
    assert lines[-1] == "Each rule's page: `lintlora explain CODE`."


# ---- Python (real extractor, once it is in the tree) ------------------------------------------

@needs_python
def test_python_suppression_inside_multiline_training_arguments(tmp_path):
    script = textwrap.dedent("""\
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
        model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
        model.print_trainable_parameters()
        args = TrainingArguments(
            output_dir="out",
            per_device_train_batch_size=4,{comment}
            gradient_checkpointing=False,
        )
        Trainer(model=model, args=args, train_dataset=train_dataset).train()
    """)
    (tmp_path / "plain.py").write_text(script.format(comment=""))
    (tmp_path / "quiet.py").write_text(script.format(comment="  # lintlora: ignore[LL001]"))
    doc = _json(lintlora("plain.py", "quiet.py", "--select", "LL001,LL900", "--format", "json",
                         cwd=tmp_path))
    assert [(f["path"], f["code"], f["line"]) for f in doc["findings"]] == [
        ("plain.py", "LL001", 10)]


@needs_python
def test_syntax_error_file_does_not_stop_the_run(tmp_path):
    (tmp_path / "broken.py").write_text("from transformers import Trainer\ndef f(:\n")
    shutil.copy(C11, tmp_path / "cfg.yml")
    doc = _json(lintlora(".", "--format", "json", cwd=tmp_path))
    codes = [(f["path"], f["code"]) for f in doc["findings"]]
    assert ("broken.py", "LL000") in codes and ("cfg.yml", "LL001") in codes


@needs_python
def test_show_setup_prints_the_extracted_values():
    pytest.importorskip("lintlora.report.setup_table")
    example = os.path.join(FIXTURES, "examples", "qlora_trainer.py")
    done = lintlora(example, "--show-setup")
    assert done.returncode == 0, done.stderr
    assert "per_device_train_batch_size" in done.stdout
    doc = json.loads(lintlora(example, "--show-setup", "--format", "json").stdout)
    assert doc["setups"] and doc["errors"] == []


def test_broken_yaml_that_is_no_training_config_is_only_noted(tmp_path):
    (tmp_path / "chart.yaml").write_text("metadata:\n  name: {{ .Release.Name }}\n\tbad: [\n")
    (tmp_path / "train.yml").write_text("base_model: x\nlora_r: [\n")
    done = lintlora("chart.yaml", "train.yml", "--format", "json", cwd=tmp_path)
    doc = _json(done)
    assert [(f["path"], f["code"]) for f in doc["findings"]] == [("train.yml", "LL000")]
    text = lintlora("chart.yaml", cwd=tmp_path)
    assert text.returncode == 0 and "note: chart.yaml: not a training config" in text.stdout
    # with other paths (a pre-commit run) it is skipped quietly, unless --verbose
    both = lintlora("chart.yaml", "train.yml", cwd=tmp_path)
    assert "not a training config" not in both.stdout
    verbose = lintlora("chart.yaml", "train.yml", "--verbose", cwd=tmp_path)
    assert "note: chart.yaml: not a training config" in verbose.stdout


@needs_python
def test_notebook_findings_in_sarif_and_annotations_point_at_the_code():
    notebook = "fixtures/python/qlora_notebook.ipynb"
    with open(os.path.join(REPO, notebook), encoding="utf-8") as handle:
        raw = handle.read().splitlines()
    findings = _json(lintlora(notebook, "--format", "json"))["findings"]
    assert findings and all("cell" in f for f in findings)
    sarif = json.loads(lintlora(notebook, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == len(findings)
    for finding, result in zip(findings, results):
        region = result["locations"][0]["physicalLocation"]["region"]
        assert result["properties"]["cell"] == finding["cell"]
        assert result["properties"]["cellLine"] == finding["line"]
        # the .ipynb line holds the cell's source line the finding is about
        line_text = json.loads("[" + raw[region["startLine"] - 1].strip().rstrip(",") + "]")[0]
        cells = [c for c in json.load(open(os.path.join(REPO, notebook), encoding="utf-8"))["cells"]
                 if c["cell_type"] == "code"]
        source = "".join(cells[finding["cell"] - 1]["source"]).split("\n")
        assert line_text.rstrip("\n") == source[finding["line"] - 1]


@needs_python
@pytest.mark.parametrize("expression", [
    "(" * 2000 + "1" + ")" * 2000,
    "[" * 1500 + "]" * 1500,
    "f(" * 1500 + ")" * 1500,
    "1+" * 20000 + "1",
    "a" + "[0]" * 20000,
], ids=["parens", "lists", "calls", "sum", "subscripts"])
def test_deep_nesting_is_one_diagnostic_not_a_crash(tmp_path, expression):
    # each of these makes LibCST 1.9's native parser overflow its stack (a segfault); the
    # import keeps the file past the prefilter (a file naming no training library is skipped
    # unparsed, lintlora/prefilter.py). LL000 when CPython refuses the file too, LL998 (a
    # limit of lintlora, in "errors") when CPython parses it (issue 12, item 11)
    (tmp_path / "deep.py").write_text("import torch\nx = " + expression + "\n")
    shutil.copy(C11, tmp_path / "cfg.yml")
    done = lintlora(".", "--format", "json", cwd=tmp_path)
    doc = _json(done)
    deep = ([(f["code"], f["message"]) for f in doc["findings"] if f["path"] == "deep.py"]
            + [(e["code"], e["message"]) for e in doc["errors"] if e["path"] == "deep.py"])
    assert len(deep) == 1 and deep[0][0] in ("LL000", "LL998")
    code, message = deep[0]
    assert "nest" in message or (code == "LL998" and "too large" in message)  # 60,000 tokens
    assert any(f["path"] == "cfg.yml" for f in doc["findings"])  # the other file still linted
