"""Suppression comments and LL900, through the engine with stand-in extractors and rules."""

from __future__ import annotations

import json
import textwrap

import pytest

import engine_stubs
from lintlora.engine import lint_paths
from lintlora.settings import Settings
from lintlora.suppression import python_comments, read_directives, yaml_comments


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    engine_stubs.install(monkeypatch)


def _lint(tmp_path, name, text, **settings):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    result = lint_paths([str(path)], Settings(**settings))
    assert not result.errors, result.errors
    return [(f.code, f.span.line) for f in result.findings], result


# ---- reading comments -------------------------------------------------------------------------

def test_comments_come_from_tokenize_not_strings():
    source = 's = "# noqa: TS001"\nx = 1  # noqa: TS001\n"""\n# lintlora: ignore[TS001]\n"""\n'
    directives = read_directives(source, "python")
    assert [(d.line, d.codes) for d in directives] == [(2, ("TS001",))]


def test_directive_forms():
    source = textwrap.dedent("""\
        a()  # noqa
        b()  # noqa: TS001,E501 TS002
        c()  # lintlora: ignore[ts001, TS003]
        d()  # lintlora: ignore
        # lintlora: file-ignore[TS002]
        e()  # type: ignore  # noqa:TS001
    """)
    got = [(d.line, d.scope, d.codes, d.bare_noqa) for d in read_directives(source, "python")]
    assert got == [
        (1, "line", None, True),
        (2, "line", ("TS001", "E501", "TS002"), False),
        (3, "line", ("TS001", "TS003"), False),
        (4, "line", None, False),
        (5, "file", ("TS002",), False),
        (6, "line", ("TS001",), False),
    ]


def test_unparsable_python_still_yields_directives():
    source = "def f(:\n    pass  # noqa: TS001\nx = 'unterminated\n"
    assert [(c[0], c[2]) for c in python_comments(source)] == [(2, "# noqa: TS001")]


def test_yaml_comments_skip_hashes_in_values():
    text = 'a: "x # not"\nb: y # real\nc: \'#no\'\n# own line\nurl: http://h/#frag\n'
    assert [(line, standalone) for line, _c, _t, standalone in yaml_comments(text)] == [
        (2, False), (4, True)]


# ---- applying them ----------------------------------------------------------------------------

def test_noqa_on_the_line(tmp_path):
    found, _ = _lint(tmp_path, "a.py", """\
        bad()  # noqa: TS001
        bad()
        bad()  # noqa
        bad()  # lintlora: ignore[TS001]
        bad()  # noqa: E501
    """)
    assert found == [("TS001", 2), ("TS001", 5)]


def test_suppression_inside_multiline_training_arguments(tmp_path):
    text = """\
        args = TrainingArguments(
            output_dir="out",  # lintlora: ignore[TS002]
            per_device_train_batch_size=4,
            gradient_checkpointing=False,
        )
    """
    found, _ = _lint(tmp_path, "a.py", text, select=("TS002", "LL900"))
    assert found == []
    # the same file without the comment reports at the value's line
    found, _ = _lint(tmp_path, "b.py", text.replace("  # lintlora: ignore[TS002]", ""),
                     select=("TS002",))
    assert found == [("TS002", 4)]
    # a comment on the closing line counts too
    found, _ = _lint(tmp_path, "c.py", text.replace("  # lintlora: ignore[TS002]", "").replace(
        "\n        )", "\n        )  # noqa: TS002"), select=("TS002", "LL900"))
    assert found == []


def test_comment_outside_the_call_does_not_suppress(tmp_path):
    found, _ = _lint(tmp_path, "a.py", """\
        # noqa: TS002
        args = TrainingArguments(
            gradient_checkpointing=False,
        )
        x = 1  # noqa: TS002
    """, select=("TS002", "LL900"))
    assert ("TS002", 3) in found
    assert ("LL900", 5) in found and ("LL900", 1) in found


def test_file_level_ignore(tmp_path):
    found, _ = _lint(tmp_path, "a.py", """\
        # lintlora: file-ignore[TS001]
        bad()
        bad()
        args = TrainingArguments(gradient_checkpointing=False)
    """, select=("TS001", "TS002", "LL900"))
    assert found == [("TS002", 4)]


def test_unused_suppression_reported(tmp_path):
    found, result = _lint(tmp_path, "a.py", """\
        x = 1  # noqa: TS001
        bad()  # noqa: TS001, TS002
        y = 2  # noqa: XX999
        z = 3  # noqa
        w = 4  # lintlora: ignore
        # lintlora: file-ignore[TS002]
    """, select=("TS001", "TS002", "LL900"))
    assert found == [("LL900", 1), ("LL900", 2), ("LL900", 5), ("LL900", 6)]
    messages = [f.message for f in result.findings]
    assert "no TS001 finding" in messages[0]
    assert "no TS002 finding" in messages[1]  # TS001 on line 2 was used, TS002 was not
    assert all(f.severity.value == "info" for f in result.findings)


def test_unused_check_silent_for_rules_that_did_not_run(tmp_path):
    found, _ = _lint(tmp_path, "a.py", "x = 1  # noqa: TS001\n", select=("TS002", "LL900"))
    assert found == []
    found, _ = _lint(tmp_path, "b.py", "x = 1  # noqa: TS001\n", ignore=("LL900",))
    assert found == []


def test_yaml_key_line_and_line_above(tmp_path):
    found, _ = _lint(tmp_path, "a.yaml", """\
        base_model: x
        # lintlora: ignore[TS002]

        gradient_checkpointing: false
    """, select=("TS002", "LL900"))
    assert found == []
    found, _ = _lint(tmp_path, "b.yaml", """\
        base_model: x
        gradient_checkpointing: false  # noqa: TS002
    """, select=("TS002", "LL900"))
    assert found == []
    found, _ = _lint(tmp_path, "c.yaml", """\
        # lintlora: ignore[TS002]
        base_model: x
        gradient_checkpointing: false
    """, select=("TS002", "LL900"))
    assert found == [("LL900", 1), ("TS002", 3)]


def test_notebook_cells_are_separate(tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# bad()  # noqa: TS001\n"]},
        {"cell_type": "code", "source": ["%pip install peft\n", "bad()  # noqa: TS001\n"]},
        {"cell_type": "code", "source": ["x = 1\n", "bad()\n"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    result = lint_paths([str(path)], Settings(select=("TS001", "LL900")))
    assert [(f.code, f.span.cell, f.span.line) for f in result.findings] == [("TS001", 2, 2)]


def test_unused_suppression_can_itself_be_silenced(tmp_path):
    found, _ = _lint(tmp_path, "a.py", """\
        x = 1  # noqa: TS001  # lintlora: ignore[LL900]
        y = 2  # noqa: TS001
        z = 3  # lintlora: ignore  # noqa: LL900
    """, select=("TS001", "LL900"))
    assert found == [("LL900", 2)]
    found, _ = _lint(tmp_path, "b.py", """\
        # lintlora: file-ignore[LL900]
        x = 1  # noqa: TS001
    """, select=("TS001", "LL900"))
    assert found == []


def test_codes_are_exact_and_an_ll_code_of_no_rule_is_reported(tmp_path):
    """`# noqa: LL90` is no prefix match (as in ruff) and says so; an LL code no rule has and
    the LL998/LL999 diagnostics are reported; other tools' codes are left alone."""
    found, result = _lint(tmp_path, "a.py", """\
        bad()  # noqa: TS00
        x = 1  # noqa: LL90
        y = 2  # noqa: E501, LL0123
        z = 3  # lintlora: ignore[LL999]
        w = 4  # noqa: E501, BLE001
    """, select=("TS001", "LL900"))
    assert found == [("TS001", 1), ("LL900", 2), ("LL900", 3), ("LL900", 4)]
    messages = {f.span.line: f.message for f in result.findings if f.code == "LL900"}
    assert "matched exactly, not as prefixes" in messages[2] and "LL900" in messages[2]
    assert "no lintlora rule has the code LL0123" in messages[3]
    assert "E501" not in messages[3].split(":", 2)[-1]  # only quoted in the comment text
    assert "LL999 is not a rule" in messages[4]
    # the exact code suppresses; an unknown code is reported even where its rule is not
    # selected (there is no such rule to select)
    found, _ = _lint(tmp_path, "b.py", "bad()  # noqa: TS001\nx = 1  # noqa: LL01\n",
                     select=("TS002", "LL900"))
    assert found == [("LL900", 2)]
