"""Regressions found by trying the review-tool formats, the editor server and the action on real
public training scripts (issue 18, trial18; ``bench/trials/review_tools_trial.py``). Each
fixture is under ``fixtures/trial18/`` with its source in ``SOURCES.md``."""

from __future__ import annotations

from pathlib import Path

from lintlora.extract import pyargs

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "trial18"


def test_dataclass_fields_are_computed_once_per_class_qlora(monkeypatch):
    """artidoro/qlora reads its four argument dataclasses' fields one by one; each read used to
    evaluate every field's default again (~5,000 evaluations per lint, most of an editor
    keystroke's 190 ms); now each class's fields are evaluated once per lint."""
    from lintlora.server_lint import LintSession

    calls = []
    original = pyargs.ArgumentSources._field_default

    def counting(self, *args):
        calls.append(args[0].name)
        return original(self, *args)

    monkeypatch.setattr(pyargs.ArgumentSources, "_field_default", counting)
    path = FIXTURES / "qlora.py"
    result = LintSession({"gpu": "rtx3090"}).lint(str(path), path.read_text(encoding="utf-8"))
    assert [f.code for f in result.findings] == ["LL009"]
    fields = len(set(calls))
    assert fields > 20  # the dataclasses were read
    assert len(calls) < 3 * fields, len(calls)


def test_dataclass_fields_hands_out_copies():
    """A caller changing the mapping it got must not change what the next caller sees."""
    import libcst as cst

    from lintlora.extract.pyindex import build_index
    from lintlora.extract.pyresolve import Resolver

    source = ("from dataclasses import dataclass\n@dataclass\nclass A:\n    x: int = 1\n"
              "@dataclass\nclass B(A):\n    y: int = 2\n")
    module = cst.parse_module(source)
    index = build_index(module)
    resolver = Resolver(index, lambda node: "", None)
    cls = index.root.bindings["B"][-1].value  # a class binding's value is its Scope
    first = resolver.dataclass_fields(cls)
    assert set(first) == {"x", "y"}
    first.clear()
    assert set(resolver.dataclass_fields(cls)) == {"x", "y"}


def _cli_json(cwd, *args):
    import json

    import format_support

    status, report, err = format_support.lintlora_cli(str(cwd), *args)
    assert status in (0, 1), err
    return json.loads(report)


def test_a_fix_appended_after_the_last_line_is_suggested_on_the_last_line(tmp_path):
    """axolotl's examples/archived/pythia/lora.yml (36 lines, ends with a line break) has no
    ``gradient_checkpointing``: LL001's safe fix appends the keys at the end. Its rdjson
    suggestion was on line 37, which the file does not have (reviewdog and GitHub cannot
    place it); it is now on line 36, that line followed by the keys, and applying it gives
    what ``lintlora --fix`` writes. The GitHub review's suggestion is the same region."""
    import shutil

    from lintlora import github_review as gr

    name = "lora.yml"
    shutil.copy(FIXTURES / "axolotl_pythia_lora.yml", tmp_path / name)
    (tmp_path / ".git").mkdir()
    text = (tmp_path / name).read_text(encoding="utf-8")
    count = len(text.splitlines())
    rd = _cli_json(tmp_path, "--gpu", "rtx3090", "--format", "rdjson", name)
    [diag] = [d for d in rd["diagnostics"] if d["code"]["value"] == "LL001"]
    [sugg] = diag["suggestions"]
    assert sugg["range"] == {"start": {"line": count}, "end": {"line": count}}
    lines = text.splitlines(keepends=True)
    lines[count - 1:count] = [sugg["text"] + "\n"]
    suggested = "".join(lines)

    report = _cli_json(tmp_path, "--gpu", "rtx3090", "--format", "json", name)
    [finding] = [f for f in report["findings"] if f["code"] == "LL001"]
    first, last, new = gr._suggestion({**finding, "path": str(tmp_path / name)} | {
        "autofix": {**finding["autofix"], "edits": [
            {**e, "path": str(tmp_path / name)} for e in finding["autofix"]["edits"]]}})
    assert (first, last) == (count, count) and new == sugg["text"] + "\n"

    _cli_json(tmp_path, "--gpu", "rtx3090", "--fix", "--format", "json", name)
    assert (tmp_path / name).read_text(encoding="utf-8") == suggested


def test_a_whole_file_findings_gitlab_fingerprint_survives_a_line_added_at_the_top(tmp_path):
    """litgpt's config_hub/finetune/gemma-7b/lora.yaml: LL001 is about the recipe's default
    (no line holds it; the finding sits at 1:1). Its fingerprint used to hold line 1's text, so
    adding a comment line at the top changed it and GitLab showed a new and a fixed finding."""
    import shutil

    name = "lora.yaml"
    shutil.copy(FIXTURES / "litgpt_gemma7b_lora.yaml", tmp_path / name)
    (tmp_path / ".git").mkdir()

    def prints():
        doc = _cli_json(tmp_path, "--gpu", "rtx3090", "--format", "gitlab", name)
        return {i["check_name"]: (i["fingerprint"], i["location"]["lines"]["begin"]) for i in doc}

    before = prints()
    assert before["LL001"][1] == 1 and before["LL003"][1] == 44
    (tmp_path / name).write_text("# licence header\n" + (tmp_path / name).read_text(
        encoding="utf-8"), encoding="utf-8")
    after = prints()
    assert after["LL001"] == before["LL001"]  # still about the file, at 1:1
    assert after["LL003"] == (before["LL003"][0], 45)  # the moved line: same fingerprint


def test_a_fix_with_edits_far_apart_is_a_diff_in_the_markdown_report(tmp_path):
    """tloen/alpaca-lora's finetune.py: LL002's safe fix edits line 115 (torch_dtype) and line
    242 (fp16=True); the pull-request comment showed lines 115-242 as a 128-line ``suggestion``
    block. Now it shows the two changed lines as a diff; a fix on a few lines stays a
    suggestion block (axolotl's pythia/lora.yml)."""
    import shutil

    import format_support
    from markdown_it import MarkdownIt

    shutil.copy(FIXTURES / "alpaca_lora_finetune.py", tmp_path / "finetune.py")
    shutil.copy(FIXTURES / "axolotl_pythia_lora.yml", tmp_path / "lora.yml")
    (tmp_path / ".git").mkdir()
    status, report, err = format_support.lintlora_cli(
        str(tmp_path), "--gpu", "rtx3090", "--format", "markdown", "finetune.py", "lora.yml")
    assert status == 1, err
    section = report[report.index("**LL002** at `finetune.py:242:18`: train in bfloat16"):]
    block = section[section.index("```"):]
    block = block[:block.index("```", 3) + 3]
    assert block == ("```diff\n@@ -115,1 +115,1 @@\n-        torch_dtype=torch.float16,\n"
                     "+        torch_dtype=torch.bfloat16,\n@@ -242,1 +242,1 @@\n"
                     "-            fp16=True,\n+            bf16=True,\n```")
    assert "```suggestion\nlogging_steps: 1\ngradient_checkpointing: true\n" in report
    html = MarkdownIt("commonmark").render(report)
    assert '<code class="language-diff">' in html and html.count("<pre>") == 2
