"""Attacks on ``--fix``/``--diff`` as a hostile pull-request author would make them (issue 17):
in CI the linted files come from whoever opened the pull request, and the ``lintlora-fix``
hook writes files. Each test is one attack; it fails if the attack works.

Groups: writes (links, folders swapped, hard links, FIFOs, changed files, permissions, temp
files), encodings (BOMs, coding cookies, newlines, form feeds, U+2028), yaml (aliases, merge
keys, block scalars, values that are not one scalar, documents, duplicate keys), python
(``**kwargs``, f-strings, values that are not one expression, deep nesting, long calls),
notebook (JSON kept valid and byte-identical outside the change), injection (diff names,
terminal escapes, workflow commands, Markdown fences, JSON/SARIF), bounds (fix-point passes,
many files)."""

from __future__ import annotations

import codecs
import json
import os
import stat
import textwrap

import pytest
from click.testing import CliRunner

import fix_support
from lintlora import autofix
from lintlora.autofix import plan_fixes, read_source_text, unified_diff, write_back
from lintlora.cli_app import app
from lintlora.cli_fix import MAX_PASSES, diff_for_output
from lintlora.findings import EditOp, Finding, Fix, FixSafety, Severity
from lintlora.fixing import FixError, apply_edits, plan, resolve, split_lines
from lintlora.rules.base import Rule
from lintlora.settings import Settings
from lintlora.training_setup import Span

SAFE = FixSafety.SAFE

TRAIN = textwrap.dedent('''\
    from transformers import TrainingArguments

    args = TrainingArguments(
        output_dir="out",
        fp16=True,
    )
    ''')
FIXED = TRAIN.replace("fp16=True", "bf16=True")


def op(kind, line, column=1, text="", keyword=None, end_line=None, end_column=None, path="f",
       cell=None):
    return EditOp(kind, Span(path, line, column, end_line, end_column, cell), text, keyword)


def fix(*ops):
    return Fix("t", SAFE, tuple(ops))


def finding(path, *ops, code="TX001"):
    return Finding(code, "t", Severity.WARNING, Span(path, 1), "m", autofix=fix(*ops))


def fixed(text, kind, *ops):
    return apply_edits(text, resolve(fix(*ops), text, kind))


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def rules(monkeypatch):
    fix_support.install(monkeypatch)


def invoke(*args, env=None):
    return CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False, env=env)


def keyword_fix(path, line=1, keyword="x", value="2"):
    return finding(str(path), EditOp("set_keyword", Span(str(path), line, 1), value, keyword))


# ---- writes --------------------------------------------------------------------------------

def test_writes_a_linted_symlink_to_a_dotfile_is_never_written(project, rules, tmp_path):
    bashrc = tmp_path / "bashrc"
    bashrc.write_text(TRAIN)
    (project / "train.py").symlink_to(bashrc)
    invoke("train.py", "--fix")
    assert bashrc.read_text() == TRAIN and (project / "train.py").is_symlink()


def test_writes_a_symlinked_parent_folder_outside_is_never_written(project, rules, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.py").write_text(TRAIN)
    (project / "sub").symlink_to(outside)
    invoke("sub/train.py", "--fix")
    invoke(".", "--fix")
    assert (outside / "train.py").read_text() == TRAIN


def test_writes_a_hard_link_is_replaced_not_written_through(project, rules, tmp_path):
    outside = tmp_path / "victim.py"
    outside.write_text(TRAIN)
    os.link(outside, project / "train.py")
    invoke("train.py", "--fix")
    assert outside.read_text() == TRAIN  # the other name keeps the old bytes
    assert (project / "train.py").read_text() == FIXED


def test_writes_a_fifo_is_refused_without_blocking(project, rules):
    os.mkfifo(project / "train.py")
    result = invoke("train.py", "--fix")
    assert "not a regular file" in result.output
    assert stat.S_ISFIFO(os.lstat(project / "train.py").st_mode)


def test_writes_a_file_replaced_by_a_symlink_between_read_and_write(project, tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_text("f(x=1)\n")
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    path.unlink()
    path.symlink_to(victim)  # same bytes behind the link
    written, problems = write_back(run)
    assert written == [] and "not overwritten" in problems[str(path)]
    assert victim.read_text() == "f(x=1)\n" and path.is_symlink()


@pytest.mark.parametrize("deep", ["", "deep/"])
def test_writes_a_folder_swapped_for_a_symlink_between_read_and_write(project, tmp_path, deep):
    outside = tmp_path / "outside"
    (outside / deep).mkdir(parents=True)
    (outside / deep / "t.py").write_text("f(x=1)\n")  # the very bytes that were read
    sub = project / "sub"
    (sub / deep).mkdir(parents=True)
    path = sub / deep / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    assert run.plan.changed() == [str(path)]
    sub.rename(project / "moved")
    sub.symlink_to(outside)  # the file's folder, or the one above it, is now a link
    written, problems = write_back(run)
    assert written == [] and "folder was replaced" in problems[str(path)]
    assert (outside / deep / "t.py").read_text() == "f(x=1)\n"
    assert os.listdir(outside / deep) == ["t.py"]  # no temporary file left there either


def test_writes_a_file_replaced_by_a_fifo_between_read_and_write(project):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    path.unlink()
    os.mkfifo(path)  # a write-through or a blocking read would hang here
    written, problems = write_back(run)
    assert written == [] and "not overwritten" in problems[str(path)]
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a file to another owner needs root")
def test_writes_owner_and_group_are_kept_when_run_as_root(project):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    os.chown(path, 1234, 5678)
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    assert write_back(run)[0] == [str(path)]
    info = os.stat(path)
    assert (info.st_uid, info.st_gid) == (1234, 5678) and path.read_text() == "f(x=2)\n"


def test_writes_a_folder_linked_inside_the_project_is_written(project):
    (project / "shared").mkdir()
    (project / "shared" / "t.py").write_text("f(x=1)\n")
    (project / "configs").symlink_to(project / "shared")
    path = project / "configs" / "t.py"
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    assert write_back(run) == ([str(path)], {})
    assert (project / "shared" / "t.py").read_text() == "f(x=2)\n"


def test_writes_a_file_edited_between_read_and_write_is_kept(project):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    path.write_text("f(x=1)\n# more\n")
    written, problems = write_back(run)
    assert written == [] and "changed on disk" in problems[str(path)]
    assert path.read_text() == "f(x=1)\n# more\n"


def test_writes_mode_bits_are_kept_and_no_temp_file_is_left(project):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    os.chmod(path, 0o751)
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    assert write_back(run)[0] == [str(path)]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751 and path.read_text() == "f(x=2)\n"
    assert sorted(os.listdir(project)) == [".git", "t.py"]


def test_writes_a_read_only_file_is_not_replaced(project, monkeypatch):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    os.chmod(path, 0o444)
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    if os.geteuid() == 0:  # root may write any file: the process's answer is what counts
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode == os.W_OK
                            else real(p, mode, **kw))
    written, problems = write_back(run)
    assert written == [] and "read-only" in problems[str(path)]
    assert path.read_text() == "f(x=1)\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_writes_a_failed_write_leaves_the_file_and_no_temp_file(project, monkeypatch):
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(autofix.os, "fsync", no_space)
    written, problems = write_back(run)
    assert written == [] and "No space left" in problems[str(path)]
    assert path.read_text() == "f(x=1)\n" and sorted(os.listdir(project)) == [".git", "t.py"]


def test_writes_a_planted_link_at_the_temporary_name_is_not_written_through(project, tmp_path,
                                                                          monkeypatch):
    import secrets

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    path = project / "t.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    monkeypatch.setattr(secrets, "token_hex", lambda n: "0" * 2 * n)
    (project / (".lintlora-fix-" + "0" * 16 + ".tmp")).symlink_to(victim)
    written, problems = write_back(run)
    assert written == [] and "cannot be written" in problems[str(path)]
    assert victim.read_text() == "keep\n" and path.read_text() == "f(x=1)\n"


def test_writes_a_fix_over_two_files_is_not_half_applied(project):
    a, b, c = (project / "a.py", project / "b.py", project / "c.py")
    for p in (a, b, c):
        p.write_text("f(x=1)\n")
    both = Finding("TX001", "t", Severity.WARNING, Span(str(a), 1), "m", autofix=fix(
        EditOp("set_keyword", Span(str(a), 1, 1), "2", "x"),
        EditOp("set_keyword", Span(str(b), 1, 1), "2", "x")))
    alone = keyword_fix(c)
    run = plan_fixes([both, alone], lambda p: Settings(), unsafe=False,
                     linted=[str(a), str(b), str(c)])
    assert run.plan.changed() == [str(a), str(b), str(c)]
    b.write_text("f(x=1)  # edited\n")  # one of the fix's files changes before the write
    written, problems = write_back(run)
    assert written == [str(c)] and a.read_text() == "f(x=1)\n"
    assert "changed on disk" in problems[str(b)] and "also changes" in problems[str(a)]


def test_writes_a_config_read_through_a_symlinked_folder_outside_is_refused(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cfg.yaml").write_text("a: 1\n")
    (project / "configs").symlink_to(outside)
    own = project / "t.py"
    own.write_text("f(x=1)\n")
    target = project / "configs" / "cfg.yaml"  # a file the run read, through the link
    fs = [finding(str(own), EditOp("yaml_set", Span(str(target), 1, 1), "2", "a"))]
    run = plan_fixes(fs, lambda p: Settings(), unsafe=False, linted=[str(own)],
                     read_inputs=[str(target)])
    write_back(run)
    assert run.refused[str(target)] == "outside the project"
    assert (outside / "cfg.yaml").read_text() == "a: 1\n"


def test_writes_a_span_naming_a_file_outside_or_in_git_metadata_is_refused(project, tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_text("f(x=1)\n")
    own = project / "t.py"
    own.write_text("f(x=1)\n")
    hook = project / ".git" / "hooks.py"
    hook.write_text("f(x=1)\n")  # inside the project, but git's metadata (hooks run code)
    for target in (victim, hook):
        fs = [finding(str(own), EditOp("set_keyword", Span(str(target), 1, 1), "2", "x"))]
        run = plan_fixes(fs, lambda p: Settings(), unsafe=False, linted=[str(own)])
        write_back(run)
        assert run.plan.outcomes[0].status == "error" and target.read_text() == "f(x=1)\n"
    assert "git" in run.refused[str(hook)]


# ---- encodings -----------------------------------------------------------------------------

@pytest.mark.parametrize("data, expected", [
    (codecs.BOM_UTF8 + TRAIN.replace("\n", "\r\n").encode(),
     codecs.BOM_UTF8 + FIXED.replace("\n", "\r\n").encode()),
    (TRAIN.replace("\n", "\r").encode(), FIXED.replace("\n", "\r").encode()),
    (("# -*- coding: latin-1 -*-\n# caf\xe9\n" + TRAIN).encode("latin-1"),
     ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED).encode("latin-1")),
    (TRAIN.replace("    fp16", "\tfp16").replace("    output", "\toutput").encode(),
     FIXED.replace("    bf16", "\tbf16").replace("    output", "\toutput").encode()),
    (TRAIN.rstrip("\n").encode(), FIXED.rstrip("\n").encode()),
    (("x = 'a\u2028b\x0cc\x85'\n" + TRAIN).encode(), ("x = 'a\u2028b\x0cc\x85'\n" + FIXED).encode()),
], ids=["bom-crlf", "cr", "latin1", "tabs", "no-final-newline", "u2028-ff-nel-in-string"])
def test_encodings_fix_keeps_every_other_byte(project, rules, data, expected):
    (project / "train.py").write_bytes(data)
    invoke("train.py", "--fix")
    assert (project / "train.py").read_bytes() == expected
    invoke("train.py", "--fix")  # idempotent
    assert (project / "train.py").read_bytes() == expected


def test_encodings_invalid_utf8_and_nul_are_never_written(project, rules):
    for data in (TRAIN.encode() + b"# \xff\xfe\n", TRAIN.encode() + b"# \x00\n"):
        (project / "train.py").write_bytes(data)
        invoke("train.py", "--fix")
        assert (project / "train.py").read_bytes() == data


def test_encodings_a_value_the_coding_cannot_hold_is_not_written(project):
    path = project / "t.py"
    data = "# -*- coding: latin-1 -*-\nf(x=1)\n".encode("latin-1")
    path.write_bytes(data)
    run = plan_fixes([keyword_fix(path, 2, value='"\u2603"')], lambda p: Settings(),
                     unsafe=False, linted=[str(path)])
    written, problems = write_back(run)
    assert written == [] and "cannot be written" in problems[str(path)]
    assert path.read_bytes() == data


def test_encodings_a_form_feed_indented_line_gets_no_misplaced_edit():
    text = "x = 1\n\x0cT(a=1)\n"
    with pytest.raises(FixError):
        fixed(text, "python", op("set_keyword", 2, 2, "True", "b"))
    with pytest.raises(FixError):
        fixed(text, "python", op("replace", 2, 1, "U", end_column=2))


def test_encodings_split_lines_counts_the_fixers_lines_only():
    assert split_lines("a\u2028b\x0cc\x85\r\nd\re") == ["a\u2028b\x0cc\x85\r\n", "d\r", "e"]


def test_encodings_diff_hunks_name_the_files_own_lines(project):
    path = project / "t.py"
    path.write_text("s = '\u2028\x0c'\nf(x=1)\n")
    run = plan_fixes([keyword_fix(path, 2)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    diff = unified_diff(run)
    assert "@@ -1,2 +1,2 @@" in diff and "\\ No newline" not in diff


def test_encodings_yaml_replace_after_a_yaml_only_line_break_is_refused():
    text = "# a\u2028b\nfp16: true\n"
    with pytest.raises(FixError):
        fixed(text, "yaml", op("replace", 2, 1, "bf16", end_column=5))


# ---- yaml ----------------------------------------------------------------------------------

ANCHORED = "base: &b\n  lr: 1\n  fp16: true\nother: *b\n"


@pytest.mark.parametrize("key", ["other.fp16", "base.fp16", "other.new", "base.new"])
def test_yaml_a_value_shared_through_an_alias_is_never_edited(key):
    with pytest.raises(FixError, match="alias"):
        fixed(ANCHORED, "yaml", op("yaml_set", 1, 1, "false", key))


def test_yaml_a_replace_inside_an_anchored_node_is_refused():
    with pytest.raises(FixError, match="alias"):
        fixed(ANCHORED, "yaml", op("replace", 3, 3, "bf16", end_column=7))


def test_yaml_a_merged_key_is_overridden_in_its_own_mapping():
    text = "base: &b\n  lr: 1\nt:\n  <<: *b\n  x: 2\n"
    assert fixed(text, "yaml", op("yaml_set", 1, 1, "5", "t.lr")) == text + "  lr: 5\n"


@pytest.mark.parametrize("text", ["a: |\n  hello\nb: 2\n", "a: >-\n  hello\nb: 2\n"])
def test_yaml_a_block_scalar_is_not_edited_into_the_next_key(text):
    with pytest.raises(FixError, match="block scalar"):
        fixed(text, "yaml", op("yaml_set", 1, 1, "sdpa", "a"))


@pytest.mark.parametrize("value", ["x\nc: 3", "x: y", "a # c", "[1]", "{a: 1}", "1\u2028c: 3"])
def test_yaml_a_value_that_is_not_one_scalar_is_refused(value):
    with pytest.raises(FixError):
        fixed("a: 1\nb: 2\n", "yaml", op("yaml_set", 1, 1, value, "a"))
    with pytest.raises(FixError):
        fixed("a: 1\nb: 2\n", "yaml", op("yaml_set", 1, 1, value, "c"))


def test_yaml_a_replace_may_set_a_flow_list_of_scalars_but_nothing_more():
    text = "target_modules: [q_proj]\nr: 8\n"
    new = "[q_proj, v_proj]"
    assert fixed(text, "yaml", op("replace", 1, 17, new, end_column=25)) == \
        "target_modules: [q_proj, v_proj]\nr: 8\n"
    for bad in ("[q_proj, {a: 1}]", "[*x]", "[q_proj]\nr: 1", "[a, b] # c: d"):
        with pytest.raises(FixError):
            fixed(text, "yaml", op("replace", 1, 17, bad, end_column=25))


@pytest.mark.parametrize("value", ['1, "z": 2', '{"z": 1}', "[1]"])
def test_yaml_a_json_value_that_is_not_one_scalar_is_refused(value):
    with pytest.raises(FixError):
        fixed('{"a": 1}', "json", op("yaml_set", 1, 1, value, "a"))
    # a word is a string: quoted, whatever it holds
    assert fixed('{"a": 1}', "json", op("yaml_set", 1, 1, '1 2", "z', "a")) == \
        '{"a": "1 2\\", \\"z"}'


def test_yaml_multi_document_duplicate_keys_and_flow_style():
    with pytest.raises(FixError):
        fixed("a: 1\n---\na: 2\n", "yaml", op("yaml_set", 1, 1, "3", "a"))
    # duplicate keys: the last one is the value (PyYAML's and the extractor's reading)
    assert fixed("a: 1\na: 2\n", "yaml", op("yaml_set", 1, 1, "3", "a")) == "a: 1\na: 3\n"
    assert fixed("t: {a: 1}\n", "yaml", op("yaml_set", 1, 1, "3", "t.c")) == "t: {a: 1, c: 3}\n"


def test_yaml_an_added_key_stays_in_its_mapping_before_comments_and_keeps_crlf():
    text = "t:\r\n  a: 1  # c\r\n# trailing\r\nz: 1\r\n"
    out = fixed(text, "yaml", op("yaml_set", 1, 1, "3", "t.c"))
    assert out == "t:\r\n  a: 1  # c\r\n  c: 3\r\n# trailing\r\nz: 1\r\n"


@pytest.mark.parametrize("text", ["base: &b\n  x: 1\nt:\n  a: 1\n  c: *b\n",
                                  "v: &s 5\nt:\n  a: 1\n  c: *s\n"])
def test_yaml_a_key_added_after_an_alias_does_not_land_in_the_anchor(text):
    # the alias's node is the anchor's: its end is the anchor's end, not after `c: *b`
    with pytest.raises(FixError):
        fixed(text, "yaml", op("yaml_set", 1, 1, "v", "t.new"))


@pytest.mark.parametrize("value", ["&a", "*a", "!!python/object:os.system x", "!t x"])
def test_yaml_a_new_value_carries_no_tag_anchor_or_alias(value):
    with pytest.raises(FixError):
        fixed("a: x\n", "yaml", op("yaml_set", 1, 1, value, "a"))


@pytest.mark.parametrize("kind, text", [("json", '\ufeff{"a": 1}'), ("yaml", "\ufeffa: 1\n")])
def test_yaml_a_second_byte_order_mark_is_refused_not_misplaced(kind, text):
    # the read removes one BOM; libyaml does not count another in its offsets
    with pytest.raises(FixError, match="byte-order mark"):
        fixed(text, kind, op("yaml_set", 1, 1, "3", "a"))


def test_yaml_offsets_hold_with_astral_characters_and_lone_cr():
    text = "# \U0001F600\u00e9\na: 1 # \U0001F600\nb: 2\n"
    assert fixed(text, "yaml", op("yaml_set", 1, 1, "3", "b")) == text.replace("b: 2", "b: 3")
    text = "t:\r  a: 1\rb: 2\r"
    assert fixed(text, "yaml", op("yaml_set", 1, 1, "3", "t.c")) == "t:\r  a: 1\r  c: 3\rb: 2\r"


def test_yaml_anchor_config_end_to_end_is_left_alone(project, rules):
    text = ("# axolotl\nbase_model: meta-llama/Llama-2-7b-hf\nadapter: lora\n"
            "defaults: &d\n  fp16: true\n<<: *d\n")
    (project / "config.yaml").write_text(text)
    found = json.loads(invoke("config.yaml", "--format", "json").stdout)["findings"]
    assert [f["code"] for f in found] == ["TX001"]  # fp16 read through the merge key
    assert found[0]["autofix"]["edits"] == []  # no edit offered in the shared anchor
    invoke("config.yaml", "--fix")
    assert (project / "config.yaml").read_text() == text


# ---- python --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["T(**cfg)\n", "T(a=1, **cfg)\n"])
def test_python_no_keyword_is_added_to_a_call_taking_kwargs(text):
    with pytest.raises(FixError, match="kwargs"):
        fixed(text, "python", op("set_keyword", 1, 1, "True", "bf16"))


def test_python_an_existing_keyword_beside_kwargs_may_change():
    assert fixed("T(a=1, **cfg)\n", "python", op("set_keyword", 1, 1, "2", "a")) == \
        "T(a=2, **cfg)\n"


def test_python_no_keyword_is_added_inside_an_f_string():
    with pytest.raises(FixError, match="f-string"):
        fixed('x = f"{T(a=1)}"\n', "python", op("set_keyword", 1, 8, '"s"', "b"))


@pytest.mark.parametrize("kind, text", [
    ("set_keyword", "1)\nimport os\n("), ("set_keyword", "1; import os"),
    ("replace", "True\nimport os"), ("insert_after", "y = ("),
    ("insert_after", "import os; os.system('x')"), ("insert_after", "a = 1\nb = 2")])
def test_python_a_fix_text_that_is_not_one_value_is_refused(kind, text):
    with pytest.raises(FixError):
        fixed("T(a=1)\n", "python", op(kind, 1, 1, text, "b", end_column=2))


def test_python_a_keyword_name_that_is_code_is_refused():
    with pytest.raises(FixError):
        fixed("T(a=1)\n", "python", op("set_keyword", 1, 1, "1", "b=1); import os; (c"))
    with pytest.raises(FixError):
        fixed("T(a=1)\n", "python", op("rename_keyword", 1, 1, "b=os.system('x')", "a"))


def test_python_a_fix_that_would_break_the_file_is_not_applied():
    text = "T(a=1)\nU(b=2)\n"
    # `1` is one expression, but `T(1=1)` is no Python
    with pytest.raises(FixError, match="unparsable"):
        fixed(text, "python", op("replace", 1, 3, "1", end_column=4))
    result = plan([fix(op("replace", 1, 3, "1", end_column=4)),
                   fix(op("replace", 2, 5, "3", end_column=6))], lambda p: (text, "python"))
    assert [o.status for o in result.outcomes] == ["error", "applied"]
    assert "unparsable" in result.outcomes[0].reason
    assert result.new["f"] == "T(a=1)\nU(b=3)\n"


def test_python_line_continuations_tabs_and_repeated_keywords():
    assert fixed("T(a=1, \\\n  b=2)\n", "python", op("set_keyword", 1, 1, "3", "c")) == \
        "T(a=1, \\\n  b=2,\n  c=3)\n"
    assert fixed("if x:\n\tT(a=1,\n\t  b=2)\n", "python", op("set_keyword", 2, 2, "3", "c")) \
        == "if x:\n\tT(a=1,\n\t  b=2,\n\t  c=3)\n"
    assert fixed("T(a=1, a=2)\n", "python", op("set_keyword", 1, 1, "1", "a")) == "T(a=1, a=2)\n"


def test_python_a_variable_read_twice_is_not_edited_for_one_use():
    text = "dt = torch.float16\nM(torch_dtype=dt)\nx = ones(3, dtype=dt)\n"
    with pytest.raises(FixError, match="used elsewhere"):
        fixed(text, "python", op("replace", 1, 6, "torch.bfloat16", end_column=19))
    # read once (assigned twice: the last assignment is the value): edited
    text = "dt = torch.float32\ndt = torch.float16\nM(torch_dtype=dt, x=o.dt)\n"
    assert fixed(text, "python", op("replace", 2, 6, "torch.bfloat16", end_column=19)) == \
        text.replace("dt = torch.float16", "dt = torch.bfloat16")


def test_python_the_single_use_check_holds_in_a_cell_with_ipython_lines():
    text = _notebook(["%%capture\n", "dt = torch.float16\n", "M(torch_dtype=dt)\n",
                      "for _ in r:\n", "    !echo x\n", "    y = ones(dtype=dt)\n"])
    with pytest.raises(FixError, match="used elsewhere"):
        resolve(fix(op("replace", 2, 6, "torch.bfloat16", end_column=19, path="n.ipynb",
                       cell=1)), text, "notebook")


def test_python_a_notebook_variable_read_in_another_cell_is_not_edited():
    text = _notebook(["dt = torch.float16\n", "M(torch_dtype=dt)\n"])
    nb = json.loads(text)
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                        "execution_count": None, "source": ["x = ones(3, dtype=dt)\n"]})
    text = json.dumps(nb, indent=1)
    with pytest.raises(FixError, match="used elsewhere"):
        resolve(fix(op("replace", 1, 6, "torch.bfloat16", end_column=19, path="n.ipynb",
                       cell=1)), text, "notebook")


SHARED_DTYPE = textwrap.dedent('''\
    import torch
    from transformers import AutoModelForCausalLM, TrainingArguments

    dt = torch.float16
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=dt)
    mask = torch.ones(3, dtype=dt)
    args = TrainingArguments(output_dir="out", fp16=True)
    ''')


def test_python_a_shared_variable_end_to_end_with_a_real_rule(project):
    (project / "train.py").write_text(SHARED_DTYPE)
    result = invoke("train.py", "--gpu", "a100-80gb", "--fix", "--unsafe-fixes")
    assert "dt = torch.float16" in (project / "train.py").read_text()
    assert "used elsewhere" in result.stderr


def test_python_a_keyword_goes_to_the_call_the_span_names_in_a_chain():
    text = "Trainer(model=m).train()\n"
    # the span of `.train()`'s call starts where `Trainer(...)`'s does
    out = fixed(text, "python", op("set_keyword", 1, 1, "True", "resume", end_line=1, end_column=25))
    assert out == "Trainer(model=m).train(resume=True)\n"
    out = fixed(text, "python", op("set_keyword", 1, 1, "a", "args", end_line=1, end_column=17))
    assert out == "Trainer(model=m, args=a).train()\n"


def test_python_one_parse_per_text_for_many_fixes(monkeypatch):
    from lintlora import fixing

    built = []
    real = fixing._PyTree

    class Counting(real):
        def __init__(self, text):
            built.append(len(text))
            super().__init__(text)

    monkeypatch.setattr(fixing, "_PyTree", Counting)
    fixing._py_tree.cache_clear()
    text = "".join(f"T{i}(a=1)\n" for i in range(50))
    fixes = [fix(op("set_keyword", i + 1, 1, "2", "b")) for i in range(50)]
    result = plan(fixes, lambda p: (text, "python"))
    assert [o.status for o in result.outcomes] == ["applied"] * 50
    assert len(built) == 1  # not one parse per fix (466 s for 100 fixes in 2,000 lines)


def test_python_deep_nesting_is_a_fix_error_not_a_crash():
    text = "x = " + "(" * 3000 + "1" + ")" * 3000 + "\nT(a=1)\n"
    with pytest.raises(FixError):
        fixed(text, "python", op("set_keyword", 2, 1, "2", "b"))


def test_python_a_call_spanning_thousands_of_lines():
    body = "".join(f"    a{i}={i},\n" for i in range(3000))
    text = f"T(\n{body})\n"
    out = fixed(text, "python", op("set_keyword", 1, 1, "True", "bf16"))
    assert out == f"T(\n{body}    bf16=True,\n)\n"


# ---- shell (launch lines) -----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("python t.py --max_steps -1 --lr 2\n", "python t.py --max_steps 100 --lr 2\n"),
    ("python t.py --max_steps 1 --max_steps 5\n", "python t.py --max_steps 1 --max_steps 100\n"),
    ("python t.py --max_steps=1 --max_steps=5\n", "python t.py --max_steps=1 --max_steps=100\n"),
    ("python t.py --bs 2; echo done\n", "python t.py --bs 2 --max_steps 100; echo done\n"),
    ("python t.py --bs 2 && echo done\n", "python t.py --bs 2 --max_steps 100 && echo done\n"),
    ("python t.py | tee log\n", "python t.py --max_steps 100 | tee log\n"),
    ("python t.py &\n", "python t.py --max_steps 100 &\n"),
    ("cd x && python t.py\n", "cd x && python t.py --max_steps 100\n"),
    ("python t.py > log 2>&1\n", "python t.py > log 2>&1 --max_steps 100\n"),
], ids=["negative-value", "last-wins", "last-wins-eq", "semicolon", "and", "pipe", "background",
        "cd-first", "redirect"])
def test_shell_launch_set_edits_the_run_and_the_value_it_reads(text, expected):
    assert fixed(text, "shell", op("launch_set", 1, 1, "100", "--max_steps")) == expected


def test_shell_launch_set_reads_words_as_the_extractor_does():
    """A ``$(...)`` word holding blanks and parentheses is one word (the extractor's shell
    reader, launch_shell_syntax.tokenize): the option after it is still the run's."""
    text = 'python t.py --out "$(date +%s)" --tag $(echo a b) --max_steps 5\n'
    assert fixed(text, "shell", op("launch_set", 1, 1, "100", "--max_steps")) == \
        'python t.py --out "$(date +%s)" --tag $(echo a b) --max_steps 100\n'


def test_shell_launch_set_refuses_a_line_it_cannot_read():
    with pytest.raises(FixError):
        fixed("python t.py --max_steps 5 'unterminated\n", "shell",
              op("launch_set", 1, 1, "100", "--max_steps"))


def test_shell_a_line_of_commands_none_the_run_is_refused():
    with pytest.raises(FixError):
        fixed("cd x; ls\n", "shell", op("launch_set", 1, 1, "1", "--o"))


@pytest.mark.parametrize("value", ["2\nrm -rf ~", "2\x1b[2J"])
def test_shell_a_value_with_control_characters_is_refused(value):
    with pytest.raises(FixError):
        fixed("python t.py --bs 2\n", "shell", op("launch_set", 1, 1, value, "--bs"))


def test_shell_a_value_is_one_word_the_program_receives_as_given():
    import shlex

    out = fixed("python t.py --bs 2\n", "shell",
                op("launch_set", 1, 1, '{"use_reentrant": false}', "--kw"),
                op("launch_set", 1, 1, "2; rm -rf ~", "--bs"))
    assert shlex.split(out) == ["python", "t.py", "--bs", "2; rm -rf ~", "--kw",
                                '{"use_reentrant": false}']


@pytest.mark.parametrize("value", ["a #b", "x:", "it's"])
def test_shell_a_workflow_run_step_keeps_its_yaml(value):
    text = "steps:\n  - run: python t.py --bs 2\n"
    with pytest.raises(FixError):
        fixed(text, "yaml", op("launch_set", 2, 4, value, "--bs"))


def test_shell_ll001_launch_fix_gives_hf_argparser_a_json_word(tmp_path, monkeypatch):
    import shlex

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
        "(training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)\n'
        'model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))\n'
        "model.print_trainable_parameters()\n"
        "Trainer(model=model, args=training_args, train_dataset=ds).train()\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py --output_dir out "
                                     "--gradient_checkpointing False --bf16 True\n")
    invoke(".", "--gpu", "a100-40gb", "--fix", "--unsafe-fixes")
    words = shlex.split((tmp_path / "run.sh").read_text().splitlines()[1])
    assert words[words.index("--gradient_checkpointing") + 1] == "True"
    kwargs = words[words.index("--gradient_checkpointing_kwargs") + 1]
    assert json.loads(kwargs) == {"use_reentrant": False}


# ---- notebook ------------------------------------------------------------------------------

def _notebook(source, indent=1, ensure_ascii=False):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# é\n"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {"k": "\u2028"},
                     "outputs": [], "source": source}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n"


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_notebook_stays_valid_and_identical_outside_the_changed_string(ensure_ascii):
    source = ["s = 'a\u2028b\x0cc'\n", "args = T(a=1)\n", "x = '\"`\\\\'\n"]
    text = _notebook(source, ensure_ascii=ensure_ascii)
    edits = resolve(fix(op("set_keyword", 2, 8, "True", "bf16", path="n.ipynb", cell=1)),
                    text, "notebook")
    out = apply_edits(text, edits)
    doc = json.loads(out)
    assert doc["cells"][1]["source"] == [source[0], "args = T(a=1, bf16=True)\n", source[2]]
    new_line = json.dumps("args = T(a=1, bf16=True)\n", ensure_ascii=ensure_ascii)
    assert out == text.replace(json.dumps(source[1], ensure_ascii=ensure_ascii), new_line)


def test_notebook_a_cell_edit_that_would_break_the_cell_is_refused():
    text = _notebook(["args = T(a=1)\n"])
    with pytest.raises(FixError):
        resolve(fix(op("replace", 1, 12, "1)(", end_column=13, path="n.ipynb", cell=1)),
                text, "notebook")


def test_notebook_duplicate_keys_follow_the_json_reading():
    text = ('{"cells": [{"cell_type": "code", "source": ["T(a=1)\\n"], "source": ["U(a=1)\\n"],'
            ' "metadata": {}, "outputs": []}], "nbformat": 4}')
    out = apply_edits(text, resolve(fix(op("set_keyword", 1, 1, "2", "a", path="n.ipynb",
                                           cell=1)), text, "notebook"))
    assert json.loads(out)["cells"][0]["source"] == ["U(a=2)\n"]
    assert '["T(a=1)\\n"]' in out


# ---- injection -----------------------------------------------------------------------------

def test_injection_a_file_name_cannot_start_a_line_of_the_diff(project):
    path = project / "a\n::error::pwned.py"
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    diff = unified_diff(run, lambda p: os.path.basename(p))
    assert not any(line.lstrip().startswith("::") for line in diff.split("\n"))
    assert '--- "a/a\\n::error::pwned.py"' in diff


def test_injection_a_name_that_is_not_utf8_is_quoted_in_octal(project):
    name = os.fsdecode(b"caf\xe9.py")  # a byte that is not UTF-8: a lone surrogate
    path = project / name
    path.write_text("f(x=1)\n")
    run = plan_fixes([keyword_fix(path)], lambda p: Settings(), unsafe=False,
                     linted=[str(path)])
    diff = unified_diff(run, lambda p: os.path.basename(p))
    assert diff.startswith('--- "a/caf\\351.py"\n+++ "b/caf\\351.py"\n')
    diff.encode("utf-8")  # printable: no lone surrogate left


@pytest.mark.parametrize("args", [["--show-fixes"], ["--fix", "--show-fixes"],
                                  ["--unsafe-fixes"], ["--diff"]])
def test_injection_a_file_named_like_a_workflow_command_starts_no_line(project, rules, args):
    (project / "::error::pwn.py").write_text(TRAIN)
    result = invoke(*args, "--paths-last", "::error::pwn.py")
    assert "pwn.py" in result.stdout + result.stderr
    assert not [line for line in (result.stdout + result.stderr).splitlines()
                if line.lstrip().startswith("::")]


def test_injection_terminal_escapes_are_shown_on_a_terminal():
    class Tty:
        def isatty(self):
            return True

    diff = " x = '\x1b]0;owned\x07\x1b[2J'\n+\tok\r\n"
    shown = diff_for_output(diff, Tty(), {})
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b" in shown
    assert "+\tok\n" in shown


def test_injection_workflow_commands_are_stopped_in_github_actions():
    diff = " ::error file=x::fake\n-##[error]legacy\n"

    class Pipe:
        def isatty(self):
            return False

    out = diff_for_output(diff, Pipe(), {"GITHUB_ACTIONS": "true"})
    first, *_rest, last = out.rstrip("\n").split("\n")
    token = first.removeprefix("::stop-commands::")
    assert len(token) == 32 and last == f"::{token}::" and diff in out
    assert diff_for_output(diff, Pipe(), {}) == diff  # a pipe elsewhere: exact (git apply)


def test_injection_diff_exit_codes(project, rules):
    (project / "train.py").write_text(TRAIN)
    assert invoke("train.py", "--diff").exit_code == 1
    assert (project / "train.py").read_text() == TRAIN
    (project / "train.py").write_text(FIXED)
    assert invoke("train.py", "--diff").exit_code == 0


class HostileText(Rule):
    """A rule whose fix text carries Markdown fences, escapes and a workflow command."""

    code = "TX009"
    name = "test-hostile"
    severity = Severity.WARNING
    summary = "test rule: hostile fix text"
    fixes = {"hostile": FixSafety.SAFE}
    TEXT = '"```\\n</details>\\x1b[2J::error::x ##[error]"'

    def check(self, setup, context):
        s = setup.get("training.output_dir")
        if s.span is None or s.value != "out":
            return
        fix = Fix("```` ::error:: \x1b[2J", FixSafety.SAFE, (EditOp("replace", s.span, self.TEXT),))
        yield Finding(self.code, self.name, self.severity, s.span, "m", autofix=fix)


@pytest.fixture
def hostile(monkeypatch):
    import lintlora.engine
    from lintlora.rules.ll000_syntax_error import SyntaxErrorRule

    monkeypatch.setattr(lintlora.engine, "available_rules", lambda: [SyntaxErrorRule, HostileText])


def test_injection_markdown_suggestion_fence_holds(project, hostile):
    (project / "train.py").write_text(TRAIN.replace('"out",', '"out",  # ```'))
    out = invoke("train.py", "--format", "markdown").stdout
    fence_line = next(line for line in out.splitlines() if line.endswith("suggestion"))
    fence = fence_line[:-len("suggestion")]
    assert set(fence) == {"`"} and len(fence) > 3
    body = out.split(fence_line + "\n", 1)[1].split("\n" + fence + "\n", 1)[0]
    assert HostileText.TEXT in body and "\x1b" not in out.replace(body, "")


@pytest.mark.parametrize("edit_op, expected", [
    (lambda p: EditOp("insert_after", Span(p, 2, 1), "z = 3"), (2, 2, "y = 2\nz = 3\n")),
    (lambda p: EditOp("delete_statement", Span(p, 2, 1)), (2, 2, "")),
    (lambda p: EditOp("set_keyword", Span(p, 3, 1), "1", "b"), (3, 3, "f(a=1, b=1)\n")),
], ids=["insert-at-end", "delete-last-line", "after-u2028"])
def test_injection_suggestions_name_lines_the_file_has(project, edit_op, expected):
    from lintlora.report.fixes import suggestion

    path = project / "t.py"
    # a U+2028 in line 1: str.splitlines would count one line more
    path.write_text("x = '\u2028'\ny = 2\n" + ("f(a=1)\n" if expected[0] == 3 else ""))
    found = suggestion(None, finding(str(path), edit_op(str(path))))
    assert found == (str(path), *expected)


def test_injection_json_and_sarif_carry_the_exact_text(project, hostile):
    (project / "train.py").write_text(TRAIN)
    doc = json.loads(invoke("train.py", "--format", "json").stdout)
    edits = [e for f in doc["findings"] if f.get("autofix") for e in f["autofix"]["edits"]]
    assert [e["new_text"] for e in edits] == [HostileText.TEXT]
    sarif = json.loads(invoke("train.py", "--format", "sarif").stdout)
    texts = [r["insertedContent"]["text"] for run in sarif["runs"] for res in run["results"]
             for f in res.get("fixes", ()) for c in f["artifactChanges"]
             for r in c["replacements"]]
    assert texts == [HostileText.TEXT]


def test_injection_fix_title_is_escaped_on_stderr(project, hostile):
    (project / "train.py").write_text(TRAIN)
    result = invoke("train.py", "--show-fixes")
    assert "\x1b" not in result.stderr


# ---- bounds --------------------------------------------------------------------------------

class Grows(Rule):
    """A rule whose fix is never done: each pass it raises the LoRA rank by one, and the
    finding stays."""

    code = "TX008"
    name = "test-grows"
    severity = Severity.WARNING
    summary = "test rule: a fix that never settles"
    fixes = {"grow": FixSafety.SAFE}

    def check(self, setup, context):
        s = setup.get("lora.r")
        if s.span is None or not isinstance(s.value, int):
            return
        fix = Fix("grow", FixSafety.SAFE, (EditOp("replace", s.span, str(s.value + 1)),))
        yield Finding(self.code, self.name, self.severity, s.span, "m", autofix=fix)


def test_bounds_a_fix_that_never_settles_stops_after_max_passes(project, monkeypatch):
    import lintlora.engine
    from lintlora.rules.ll000_syntax_error import SyntaxErrorRule

    monkeypatch.setattr(lintlora.engine, "available_rules", lambda: [SyntaxErrorRule, Grows])
    (project / "train.py").write_text("from peft import LoraConfig\ncfg = LoraConfig(r=1)\n")
    invoke("train.py", "--fix")
    assert (project / "train.py").read_text() == \
        f"from peft import LoraConfig\ncfg = LoraConfig(r={1 + MAX_PASSES})\n"


def test_bounds_many_files_each_fixed_once(project, rules):
    for i in range(60):
        (project / f"t{i}.py").write_text(TRAIN)
    result = invoke(".", "--fix")
    assert "Fixed 60 problems" in result.stderr
    assert all((project / f"t{i}.py").read_text() == FIXED for i in range(60))


def test_bounds_a_file_above_the_fix_limit_is_not_read(project, monkeypatch):
    path = project / "t.py"
    path.write_text("f(x=1)\n" + "#" * 2000 + "\n")
    monkeypatch.setattr(autofix, "MAX_FIX_FILE_BYTES", 1000)
    with pytest.raises(OSError):
        read_source_text(str(path), 1000)



YAML_CFG = "# axolotl\nbase_model: meta-llama/Llama-2-7b-hf\nadapter: lora\nfp16: true   # old\n"


@pytest.mark.parametrize("bom, encoding, newline", [
    (b"", "utf-8", "\n"), (codecs.BOM_UTF8, "utf-8", "\r\n"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "\n"), (b"", "utf-8", "\r")])
def test_encodings_yaml_config_keeps_bom_encoding_and_newlines(project, rules, bom, encoding,
                                                              newline):
    data = bom + YAML_CFG.replace("\n", newline).encode(encoding)
    (project / "config.yaml").write_bytes(data)
    invoke("config.yaml", "--fix")
    expected = bom + YAML_CFG.replace("fp16", "bf16").replace("\n", newline).encode(encoding)
    assert (project / "config.yaml").read_bytes() == expected
