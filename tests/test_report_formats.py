"""Reporters: JSON shape, SARIF validity, GitHub annotations, Markdown rendering, text layout.

Runs the engine with stand-in extractors and rules (``engine_stubs``) so each reporter is
pinned on known findings; end-to-end output on real fixtures is in ``test_cli_e2e.py``.
"""

from __future__ import annotations

import io
import json
import os
import textwrap

import pytest

import engine_stubs
from lintlora import __version__
from lintlora.engine import lint_paths
from lintlora.findings import FileError, Finding, MemoryFigures, Severity
from lintlora.report import memory_line, render
from lintlora.settings import Settings
from lintlora.training_setup import Span

SCHEMA = os.path.join(os.path.dirname(__file__), "sarif-schema-2.1.0.json")


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    engine_stubs.install(monkeypatch)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A run over a script, a YAML config and a notebook, from inside ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(textwrap.dedent("""\
        import x
        bad()
        args = TrainingArguments(
            gradient_checkpointing=False,
        )
    """))
    (tmp_path / "cfg.yaml").write_text("base_model: x\ngradient_checkpointing: false\n")
    nb = {"cells": [{"cell_type": "markdown", "source": ["text\n"]},
                    {"cell_type": "code", "source": ["x = 1\n", "y = 2\n", "bad()\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb, indent=1))
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = lint_paths(["."], Settings(select=("TS001", "TS002")))
    result.errors.append(FileError(os.path.join(str(tmp_path), "odd.py"),
                                   "internal error in rule X: boom; please report", "LL999"))
    return result


def _render(result, fmt, **kw):
    out = io.StringIO()
    render(result, fmt, out, **kw)
    return out.getvalue()


# ---- JSON ---------------------------------------------------------------------------------------

def test_json_shape(run):
    doc = json.loads(_render(run, "json"))
    assert list(doc) == ["version", "files", "findings", "errors", "notices"]
    assert doc["version"] == __version__
    assert doc["files"] == ["broken.py", "cfg.yaml", "nb.ipynb", "src/train.py"]  # relative, sorted
    keys = ["code", "name", "severity", "path", "line", "column", "end_line", "end_column",
            "message", "fix", "estimate"]
    by_code = {(f["path"], f["code"]): f for f in doc["findings"]}
    bad = by_code[("src/train.py", "TS001")]
    assert list(bad) == keys
    assert (bad["line"], bad["column"], bad["end_line"], bad["end_column"]) == (2, 1, 2, 6)
    assert bad["severity"] == "warning"
    assert bad["estimate"] == {"peak_bytes": 30 * 2**30, "peak_after_fix_bytes": 20 * 2**30,
                               "gpu": "RTX 3090", "gpu_memory_bytes": 24 * 2**30,
                               "gpu_memory_nominal": False,
                               "breakdown": {"weights": 13 * 2**30}, "model": None, "note": None}
    nb = by_code[("nb.ipynb", "TS001")]
    assert list(nb) == keys + ["cell"] and (nb["cell"], nb["line"]) == (1, 3)
    assert by_code[("broken.py", "LL000")]["estimate"] is None
    assert doc["errors"] == [{"code": "LL999", "path": "odd.py", "line": None, "column": None,
                              "message": "internal error in rule X: boom; please report"}]


def test_json_is_byte_identical_across_runs(run, tmp_path):
    again = lint_paths(["."], Settings(select=("TS001", "TS002")))
    again.errors.append(run.errors[-1])
    assert _render(run, "json") == _render(again, "json")


# ---- SARIF --------------------------------------------------------------------------------------

def _validate_sarif(doc):
    import jsonschema

    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_sarif_valid_with_rule_metadata_and_estimates(run):
    doc = json.loads(_render(run, "sarif"))
    _validate_sarif(doc)
    (sarif_run,) = doc["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(ids) and {"LL000", "TS001", "TS002", "LL900"} <= set(ids)
    ts001 = rules[ids.index("TS001")]
    assert ts001["name"] == "bad-call"
    assert ts001["shortDescription"]["text"] == "A call to bad()"
    assert ts001["fullDescription"]["text"].startswith("Reports every")
    assert ts001["defaultConfiguration"]["level"] == "warning"
    assert ts001["helpUri"] == "https://example.org/rules/TS001.html"  # the plugin's own page
    assert "helpUri" not in rules[ids.index("TS002")]  # no page: no link to a lintlora URL
    assert rules[ids.index("LL000")]["helpUri"].endswith("/rules/LL000.md")
    results = sarif_run["results"]
    py = next(r for r in results if r["ruleId"] == "TS001"
              and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py")
    assert rules[py["ruleIndex"]]["id"] == "TS001"
    assert py["level"] == "warning"
    assert py["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 6}
    assert py["properties"]["estimate"]["peak_bytes"] == 30 * 2**30
    assert "peak ≈ 30.0 GiB as written → 20.0 GiB with the fix" in py["message"]["text"]
    gc = next(r for r in results if r["ruleId"] == "TS002" and "train.py" in json.dumps(r))
    assert gc["level"] == "error"
    assert gc["properties"]["estimate"]["note"] == "model unknown: pass --model"
    invocation = sarif_run["invocations"][0]
    assert invocation["executionSuccessful"] is False  # the LL999 above
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith("LL999")


def test_sarif_notebook_points_into_the_ipynb_file(run, tmp_path):
    doc = json.loads(_render(run, "sarif"))
    nb = next(r for r in doc["runs"][0]["results"]
              if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "nb.ipynb")
    region = nb["locations"][0]["physicalLocation"]["region"]
    lines = (tmp_path / "nb.ipynb").read_text().splitlines()
    assert "bad()" in lines[region["startLine"] - 1]  # the raw line that holds the source
    assert nb["properties"]["cell"] == 1 and nb["properties"]["cellLine"] == 3
    assert nb["message"]["text"].startswith("cell 1, line 3:")


def test_sarif_with_no_findings_is_valid(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("x = 1\n")
    doc = json.loads(_render(lint_paths(["."]), "sarif"))
    _validate_sarif(doc)
    assert doc["runs"][0]["results"] == []
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is True


# ---- GitHub annotations ---------------------------------------------------------------------

def test_github_annotations(run, tmp_path):
    lines = _render(run, "github").splitlines()
    py = next(line for line in lines if "src/train.py" in line and "TS001" in line)
    assert py.startswith("::warning file=src/train.py,line=2,col=1,endLine=2,endColumn=6,"
                         "title=TS001 bad-call::bad() was called%0Apeak ≈ 30.0 GiB")
    assert "%0AFix: Do not call bad().%0ARule: https%3A//example.org" not in py  # data, not property
    assert py.endswith("%0AFix: Do not call bad().%0ARule: https://example.org/rules/TS001.html")
    gc = next(line for line in lines if "TS002" in line and "train.py" in line)
    assert gc.startswith("::error file=src/train.py,line=4,")
    nb = next(line for line in lines if "nb.ipynb" in line)
    file_line = int(nb.split("line=")[1].split(",")[0])
    assert "bad()" in (tmp_path / "nb.ipynb").read_text().splitlines()[file_line - 1]
    assert "::cell 1, line 3: bad() was called" in nb
    assert any(line.startswith("::error file=odd.py,title=LL999 internal-error::") for line in lines)
    assert lines[-1].startswith("lintlora: ")


def test_github_columns_only_on_one_line_spans():
    """The Actions runner rejects col/endColumn on an annotation whose line and endLine differ
    (actions/runner#2082)."""
    from lintlora.report.github import annotation

    multi = Finding("TS001", "bad-call", Severity.WARNING, Span("t.py", 140, 10, 150, 6), "m")
    line = annotation(multi)
    assert line.startswith("::warning file=t.py,line=140,endLine=150,title=TS001 bad-call::")
    assert "col=" not in line and "endColumn=" not in line
    one = Finding("TS001", "bad-call", Severity.WARNING, Span("t.py", 3, 5, 3, 9), "m")
    assert annotation(one).startswith("::warning file=t.py,line=3,col=5,endLine=3,endColumn=9,")


def test_github_escaping():
    from lintlora.report.github import annotation, escape_data, escape_property

    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    finding = Finding("LL001", "x", Severity.INFO, Span("we,ird:name.py", 3, 2),
                      "100% sure: a, b\nc")
    line = annotation(finding)
    assert line.startswith("::notice file=we%2Cird%3Aname.py,line=3,col=2,endLine=3,title=LL001 x::")
    assert line.endswith("::100%25 sure: a, b%0Ac")


# ---- Markdown -----------------------------------------------------------------------------------

def _html(markdown_text):
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(markdown_text)


def test_markdown_renders_a_table_with_estimates(run):
    text = _render(run, "markdown")
    html = _html(text)
    assert html.count("<table>") == 1
    rows = html.split("<tbody>")[1].split("</tbody>")[0].count("<tr>")
    assert rows == len(run.findings)
    headers = html.split("<thead>")[1].split("</thead>")[0]
    for header in ("Rule", "Location", "Peak as written", "After the fix", "GPU"):
        assert f"<th>{header}</th>" in headers
    flat = html.replace("\n", "")
    assert "<td>30.0 GiB ⚠️ does not fit</td><td>20.0 GiB</td><td>RTX 3090 (24.0 GiB)</td>" in flat
    assert "<td>not estimated</td>" in html
    assert '<a href="https://example.org/rules/TS001.html">TS001</a>' in html
    assert "<code>src/train.py:2:1</code>" in html
    assert "<code>nb.ipynb:cell 1:line 3</code>" in html
    assert "<details>" in text and "Do not call bad()." in html
    assert "odd.py" in html and "LL999" in html


def test_markdown_cell_escaping_keeps_the_table_intact():
    from lintlora.engine import RunResult

    finding = Finding("TS001", "bad-call", Severity.WARNING, Span("a.py", 1, 1),
                      "a | b <script>x</script> *not bold* `code | kept`\nsecond line",
                      fix="use `x|y`")
    result = RunResult(files=["a.py"], findings=[finding], rules=engine_stubs.STUB_RULES)
    html = _html(_render(result, "markdown"))
    body = html.split("<tbody>")[1]
    assert body.count("<td>") == 7  # one row, seven cells: nothing split the row
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<em>" not in body.split("</tr>")[0]
    assert "<code>code | kept</code>" in html
    assert "<br>second line" in html


def _mixed_result(notices=()):
    from lintlora.engine import RunResult

    findings = [Finding("TS001", "bad-call", severity, Span("a.py", n, 1), "m")
                for n, severity in enumerate([Severity.ERROR] + [Severity.WARNING] * 5
                                             + [Severity.INFO] * 4, start=1)]
    return RunResult(files=["a.py", "b.py"], findings=findings, rules=engine_stubs.STUB_RULES,
                     notices=list(notices))


def test_summaries_use_plurals_and_name_file_errors_as_such():
    markdown = _render(_mixed_result(), "markdown")
    assert markdown.startswith("### lintlora: 10 findings (1 error, 5 warnings, 4 info) in "
                               "2 checked files")
    result = _mixed_result()
    result.errors.append(FileError("c.py", "file is 6.0 MiB, above the 5.0 MiB limit", "LL998"))
    last = _render(result, "github").splitlines()[-1]
    assert last == ("lintlora: 10 findings (1 error, 5 warnings, 4 info) in 2 checked files; "
                    "1 file could not be fully linted")
    assert _render(_mixed_result(), "github").splitlines()[-1].endswith("in 2 checked files")


def test_a_file_whose_ll000_is_ignored_is_said_not_checked():
    from lintlora.engine import RunResult

    note = FileError("broken.py", "could not be parsed (syntax error); LL000 syntax-error is "
                     "ignored here, so nothing in this file was checked", "LL000", 2, 5)
    result = RunResult(files=["broken.py", "ok.py"], notices=[note])
    text = _render(result, "text").splitlines()
    assert text[-1] == ("No problems found; 1 file checked; 1 file could not be parsed and was "
                        "not checked (LL000 syntax-error is ignored there).")
    assert any(line.startswith("note: broken.py: could not be parsed") for line in text)
    markdown = _render(result, "markdown")
    assert "✅" not in markdown and "could not be parsed and was not checked" in markdown
    github = _render(result, "github").splitlines()
    assert github[0].startswith("::notice file=broken.py,title=LL000 syntax-error (ignored)::")
    assert github[-1] == "lintlora: 0 findings in 1 checked file; 1 file not parsed (LL000 ignored)"


def test_notices_reach_every_format(tmp_path):
    """A notice the terminal prints as a ``note:`` line (here: a named YAML file that is no
    training config) also reaches the review bot's formats, never as an error."""
    from lintlora.engine import NOT_A_CONFIG

    config = tmp_path / "deploy.yaml"
    config.write_text("replicas: 3\nimage: nginx\n", encoding="utf-8")
    result = lint_paths([str(config)], settings_for=lambda _p: Settings())
    assert [n.message for n in result.notices] and not result.errors
    message = result.notices[0].message
    assert message.startswith(NOT_A_CONFIG)
    assert any(line.startswith("note: ") and line.endswith(f": {message}")
               for line in _render(result, "text").splitlines())
    doc = json.loads(_render(result, "sarif"))
    _validate_sarif(doc)
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["level"], n["message"]["text"]) for n in notes] == [("note", f"LL998: {message}")]
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is True
    github = _render(result, "github").splitlines()
    assert github[0].startswith("::notice file=") and ",title=lintlora note::" in github[0]
    assert github[0].endswith("::" + message)  # workflow-command data: only %, CR, LF escaped
    assert not any(line.startswith("::error") for line in github)
    markdown = _render(result, "markdown")
    assert "**Notes:**" in markdown and message.split(" (")[0] in markdown
    # LL000-ignored notices keep their own wording and are not repeated as notes
    note = FileError("broken.py", "could not be parsed (x); LL000 syntax-error is ignored here, "
                     "so nothing in this file was checked", "LL000", 2, 5)
    from lintlora.engine import RunResult

    only_ll000 = RunResult(files=["broken.py"], notices=[note])
    assert "**Notes:**" not in _render(only_ll000, "markdown")
    assert "lintlora note" not in _render(only_ll000, "github")


def test_sarif_descriptions_are_the_rule_pages_not_docstrings():
    from lintlora.engine import RunResult
    from lintlora.report.sarif import to_sarif
    from lintlora.rules import load_rules
    from lintlora.suppression import UnusedSuppression

    rules = [*load_rules(), UnusedSuppression]
    doc = to_sarif(RunResult(rules=rules))
    descriptors = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert {"LL000", "LL001", "LL900"} <= set(descriptors)
    for code, descriptor in descriptors.items():
        text = descriptor["fullDescription"]["text"]
        assert "docstring" not in text and "``" not in text and "yields nothing" not in text, code
    assert descriptors["LL000"]["fullDescription"]["text"].startswith(
        "A file lintlora cannot parse")
    ll001 = descriptors["LL001"]["fullDescription"]["text"]
    assert ll001.startswith("A training setup whose activation (gradient) checkpointing is off:")
    assert "\n- `gradient_checkpointing=False`" in ll001  # list items kept, one per line


def test_markdown_no_findings():
    from lintlora.engine import RunResult

    text = _render(RunResult(files=["a.py", "b.py"]), "markdown")
    assert "no problems found in 2 checked files" in text and "<table>" not in _html(text)


# ---- text ------------------------------------------------------------------------------------

def test_text_layout_without_colour(run, monkeypatch):
    text = _render(run, "text")
    assert "\x1b[" not in text  # not a terminal: no escape codes
    lines = text.splitlines()
    assert "src/train.py:2:1 TS001 bad-call bad() was called" in lines
    i = lines.index("src/train.py:2:1 TS001 bad-call bad() was called")
    assert lines[i + 1] == ("    peak ≈ 30.0 GiB as written → 20.0 GiB with the fix; RTX 3090: "
                            "24.0 GiB (does not fit)")
    assert lines[i + 2] == "    fix: Do not call bad()."
    assert "src/train.py:4:28 TS002 gc-off gradient checkpointing is off" in lines
    assert "    peak not estimated: model unknown: pass --model" in lines
    assert "nb.ipynb:cell 1:line 3 TS001 bad-call bad() was called" in lines
    assert "cfg.yaml:2:25 TS002 gc-off gradient checkpointing is off" in lines
    assert any(line.startswith("broken.py:1:") and " LL000 syntax-error " in line for line in lines)
    assert any(line.startswith("odd.py LL999 ") for line in lines)
    # grouped by file: each path's header appears once, before its findings
    headers = [line for line in lines if line in ("broken.py", "cfg.yaml", "nb.ipynb",
                                                 "odd.py", "src/train.py")]
    assert headers == ["broken.py", "cfg.yaml", "nb.ipynb", "odd.py", "src/train.py"]
    assert lines[-3].startswith("Found 5 problems (3 errors, 2 warnings) in 4 files; 4 files checked.")
    assert lines[-2] == "Each rule's page: `lintlora explain CODE`."
    assert "internal error" in lines[-1]


def test_text_colour_forced_and_no_color(run, monkeypatch):
    assert "\x1b[" in _render(run, "text", color=True)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "")
    assert "\x1b[" not in _render(run, "text")


def test_text_long_lines_are_not_wrapped(tmp_path, monkeypatch):
    from lintlora.engine import RunResult

    long = "word " * 60
    finding = Finding("TS001", "bad-call", Severity.WARNING, Span("a.py", 1, 1), long.strip())
    text = _render(RunResult(files=["a.py"], findings=[finding]), "text")
    assert f"a.py:1:1 TS001 bad-call {long.strip()}" in text.splitlines()


def test_memory_line_variants():
    assert memory_line(None) is None
    same = MemoryFigures(peak_bytes=10 * 2**30, peak_after_fix_bytes=10 * 2**30)
    assert memory_line(same) == "peak ≈ 10.0 GiB as written (unchanged by the fix)"
    fits = MemoryFigures(peak_bytes=9 * 2**30, peak_after_fix_bytes=None, gpu="T4",
                         gpu_memory_bytes=15 * 2**30, model="Llama-2-7b")
    assert memory_line(fits) == "peak ≈ 9.0 GiB as written; T4: 15.0 GiB [Llama-2-7b]"
    # --gpu-memory alone: no name to repeat the size as ("24.0 GiB GPU: 24.0 GiB")
    unnamed = MemoryFigures(peak_bytes=9 * 2**30, gpu_memory_bytes=24 * 2**30)
    assert memory_line(unnamed) == "peak ≈ 9.0 GiB as written; GPU with 24.0 GiB"
    # the note is a sentence of its own and stays whole at the end (no ".; GPU")
    unknown = MemoryFigures(note="Supply it with --params 7B for a rough estimate.",
                            gpu="GeForce RTX 3090", gpu_memory_bytes=24 * 2**30)
    assert memory_line(unknown) == ("peak not estimated (GeForce RTX 3090: 24.0 GiB): Supply it "
                                    "with --params 7B for a rough estimate.")
    unknown = MemoryFigures(note="model unknown", gpu_memory_bytes=24 * 2**30)
    assert memory_line(unknown) == "peak not estimated (GPU with 24.0 GiB): model unknown"
    assert memory_line(MemoryFigures(note="model unknown")) == "peak not estimated: model unknown"


def test_gpu_memory_alone_is_no_gpu_name():
    """The context names a GPU only when one was named; --gpu-memory alone leaves the name
    empty (JSON `gpu: null`, as the README says) and the size in gpu_memory_bytes."""
    from lintlora.context import Context

    context = Context(Settings(gpu_memory_bytes=24 * 2**30))
    assert context.gpu_label is None and context.gpu_memory_bytes == 24 * 2**30
    assert Context(Settings(gpu="rtx3090", gpu_memory_bytes=20 * 2**30)).gpu_label == \
        "GeForce RTX 3090"


def test_readme_documents_the_json_keys():
    from lintlora.engine import RunResult
    from lintlora.report.json_out import finding_to_json, to_json

    with open(os.path.join(os.path.dirname(SCHEMA), "..", "README.md"), encoding="utf-8") as h:
        readme = h.read()
    section = readme.split("## JSON output", 1)[1].split("\n## ", 1)[0]
    example = section.split("```json", 1)[1].split("```", 1)[0]
    doc = json.loads(example)
    finding = Finding("LL001", "x", Severity.WARNING, Span("a.py", 1, 1), "m",
                      estimate=MemoryFigures())
    real = finding_to_json(finding)
    assert list(doc) == list(to_json(RunResult()))  # the document's keys, in their order
    assert list(doc["findings"][0]) == list(real)
    assert list(doc["findings"][0]["estimate"]) == list(real["estimate"])
    for key in list(doc) + list(real) + list(real["estimate"]) + ["cell"]:
        assert f"`{key}`" in section or f'"{key}"' in section
