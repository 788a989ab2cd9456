"""The safe YAML/JSON loader: positions, scalar conversion, and hostile input.

Every hostile input must end in ``ExtractError`` (never another exception) within a time bound,
and must never construct a tagged object.
"""

from __future__ import annotations

import time

import pytest

from lintlora.extract import ExtractError
from lintlora.extract.yaml_loader import (
    LIMIT_CODE,
    MAX_CONFIG_CHARS,
    MAX_DEPTH,
    MAX_NODES,
    YMap,
    YScalar,
    YSeq,
    load_config_documents,
    load_config_text,
    to_python,
)

TIME_BOUND_S = 5.0  # generous: the bombs take ~0.1 s alone, ~2 s on a loaded 2-core machine


def _load(text: str, kind: str = "yaml"):
    return load_config_text(text, "cfg.yaml", kind=kind)


def _refused(text: str, kind: str = "yaml") -> tuple[ExtractError, float]:
    start = time.perf_counter()
    with pytest.raises(ExtractError) as info:
        _load(text, kind)
    return info.value, time.perf_counter() - start


# ---- positions and values -------------------------------------------------------------------
def test_key_and_value_positions_are_one_based():
    root = _load("# comment\nlora_r: 16\nmodel:\n  lora_rank: 8\n")
    assert isinstance(root, YMap)
    e = root.get("lora_r")
    assert (e.key_span.line, e.key_span.column) == (2, 1)
    assert (e.value.span.line, e.value.span.column) == (2, 9)
    inner = root.get("model").value.get("lora_rank")
    assert (inner.key_span.line, inner.key_span.column) == (4, 3)
    assert inner.value.value == 8


def test_value_on_the_line_after_its_key_keeps_both_lines():
    # TRL's CLI example writes each scalar on the line after its key.
    root = _load("model_name_or_path:\n  Qwen/Qwen2.5-0.5B\n")
    e = root.get("model_name_or_path")
    assert e.key_span.line == 1
    assert e.value.span.line == 2 and e.value.value == "Qwen/Qwen2.5-0.5B"


def test_empty_value_points_at_its_key_not_the_next_token():
    root = _load("quantize:\n\n# a comment\n\ndevices: 1\n")
    e = root.get("quantize")
    assert e.value.value is None
    assert e.value.span.line == 1


def test_yaml_core_scalars_read_like_safe_load():
    root = _load("a: yes\nb: 0x10\nc: 1.5e+3\nd: ~\ne: '8'\nf: 3e-4\ng: 1_000\n")
    values = to_python(root)
    # YAML 1.1: 'yes' is true, hex ints, '3e-4' without a dot stays a string
    assert values == {"a": True, "b": 16, "c": 1500.0, "d": None, "e": "8", "f": "3e-4",
                      "g": 1000}


def test_json_numbers_read_like_json_and_tabs_are_accepted():
    root = _load('{\n\t"lr": 2e-4,\n\t"fp16": true,\n\t"x": null,\n\t"s": "a\\/b"\n}', "json")
    assert to_python(root) == {"lr": 0.0002, "fp16": True, "x": None, "s": "a/b"}
    assert root.get("fp16").key_span.line == 3
    assert root.get("fp16").key_span.column == 2  # the tab counts as one column


def test_merge_keys_apply_with_own_keys_winning():
    root = _load("base: &b {lora_r: 8, lora_alpha: 16}\nrun:\n  <<: *b\n  lora_r: 32\n")
    run = to_python(root.get("run").value)
    assert run == {"lora_r": 32, "lora_alpha": 16}


def test_aliases_within_budget_expand():
    root = _load("targets: &t [q_proj, v_proj]\nagain: *t\n")
    assert to_python(root.get("again").value) == ["q_proj", "v_proj"]
    assert isinstance(root.get("again").value, YSeq)


def test_duplicate_keys_last_one_wins_like_safe_load():
    root = _load("lora_r: 8\nlora_r: 64\n")
    assert root.get("lora_r").value.value == 64
    assert root.get("lora_r").key_span.line == 2


def test_multi_document_stream_reads_the_first_document():
    root = _load("lora_r: 8\n---\nlora_r: 64\n")
    assert root.get("lora_r").value.value == 8


def test_empty_text_gives_no_document():
    assert _load("") is None
    assert _load("# only a comment\n") is None


# ---- syntax errors ----------------------------------------------------------------------------
def test_yaml_syntax_error_has_line_and_column():
    err, _ = _refused("lora_r: 8\ntargets: [q_proj, v_proj\nbf16: true\n")
    assert err.code == "LL000"
    assert err.line == 3 and err.column is not None
    assert "YAML syntax error" in err.message


def test_json_syntax_error_has_line_and_column():
    err, _ = _refused('{\n  "a": 1,\n  "b": ,\n}', "json")
    assert err.code == "LL000"
    assert (err.line, err.column) == (3, 8)
    assert err.message.startswith("JSON syntax error")


def test_undefined_alias_is_a_syntax_error():
    err, _ = _refused("a: *nowhere\n")
    assert "undefined alias" in err.message and err.line == 1


# ---- hostile input ----------------------------------------------------------------------------
def _billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_quickly():
    err, elapsed = _refused(_billion_laughs())
    assert elapsed < TIME_BOUND_S
    assert "alias" in err.message and "expand" in err.message
    assert err.line is not None


def test_recursive_alias_is_refused():
    err, elapsed = _refused("a: &a [*a]\n")
    assert elapsed < TIME_BOUND_S
    assert "recursive" in err.message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000, 200_000])
def test_deep_flow_nesting_is_refused_without_recursion_error(depth):
    err, elapsed = _refused("x: " + "[" * depth + "]" * depth)
    assert elapsed < TIME_BOUND_S
    assert "nested deeper" in err.message


def test_deep_block_nesting_is_refused():
    text = "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 10))
    err, elapsed = _refused(text)
    assert elapsed < TIME_BOUND_S
    assert "nested deeper" in err.message


def test_nesting_at_the_limit_still_loads():
    depth = MAX_DEPTH - 2
    root = _load("x: " + "[" * depth + "1" + "]" * depth)
    assert isinstance(root, YMap)


def test_deep_json_is_refused():
    err, elapsed = _refused("[" * 100_000 + "]" * 100_000, "json")
    assert elapsed < TIME_BOUND_S
    assert "too deeply" in err.message


@pytest.mark.parametrize("text,tag", [
    ("x: !!python/object/apply:os.system ['touch /tmp/lintlora-pwned']\n",
     "!!python/object/apply:os.system"),
    ("x: !!python/object:collections.OrderedDict {}\n", "!!python/object:collections.OrderedDict"),
    ("x: !!python/name:os.system\n", "!!python/name:os.system"),
    ("x: !Ref MyBucket\n", "!Ref"),
    ("x: !include other.yaml\n", "!include"),
])
def test_non_core_tags_are_reported_and_never_constructed(text, tag, tmp_path):
    err, elapsed = _refused(text)
    assert elapsed < TIME_BOUND_S
    assert "unsupported YAML tag" in err.message and tag in err.message
    assert (err.line, err.column) == (1, 4)


def test_python_tag_has_no_effect(tmp_path):
    target = tmp_path / "pwned"
    with pytest.raises(ExtractError):
        _load(f"x: !!python/object/apply:os.system ['touch {target}']\n")
    assert not target.exists()


def test_binary_junk_is_refused_with_position():
    junk = "lora_r: 8\n" + "".join(chr(c) for c in (0, 1, 2, 255, 0xFE, 7)) * 50
    err, elapsed = _refused(junk)
    assert elapsed < TIME_BOUND_S
    assert "binary data" in err.message
    assert err.line == 2


@pytest.mark.parametrize("text,column", [
    ("a: b\x07c\n", 5),          # a control character
    ("a: \udcff\udcfe\n", 4),    # undecodable bytes kept by errors='surrogateescape'
    ("a: \x1b[31mred\n", 4),      # an escape sequence
])
def test_bad_characters_are_refused_with_position(text, column):
    err, elapsed = _refused(text)
    assert elapsed < TIME_BOUND_S
    assert "not allowed" in err.message
    assert (err.line, err.column) == (1, column)


def test_fifty_megabyte_file_is_refused_before_parsing():
    text = "lora_r: 8\n" + ("# padding " + "x" * 100 + "\n") * (50 * 2**20 // 112)
    assert len(text) > 49 * 2**20
    err, elapsed = _refused(text)
    assert elapsed < 0.5
    assert "MiB" in err.message and "not parsed" in err.message
    assert len(text) > MAX_CONFIG_CHARS


def test_many_nodes_are_refused_within_bound():
    text = "".join(f"k{i}: {i}\n" for i in range(40_000))
    assert len(text) < MAX_CONFIG_CHARS
    err, elapsed = _refused(text)
    assert elapsed < TIME_BOUND_S
    assert "nodes" in err.message


def test_long_scalar_below_the_size_limit_loads_within_bound():
    start = time.perf_counter()
    root = _load("note: " + "x" * (MAX_CONFIG_CHARS - 100) + "\n")
    assert time.perf_counter() - start < TIME_BOUND_S
    assert isinstance(root.get("note").value, YScalar)


def test_complex_keys_are_skipped_not_crashed():
    root = _load("? [a, b]\n: 1\nlora_r: 8\n")
    assert list(root.keys()) == ["lora_r"]


def test_bom_and_crlf_keep_positions():
    root = _load("\ufefflora_r: 8\r\n\r\nlora_alpha: 16\r\n")
    assert (root.get("lora_r").key_span.line, root.get("lora_r").key_span.column) == (1, 1)
    assert root.get("lora_alpha").value.span.line == 3


def test_tab_indentation_is_a_syntax_error_with_its_position():
    err, _ = _refused("model:\n\tlora_r: 8\n")
    assert err.code == "LL000" and err.line == 2 and "'\\t'" in err.message


# ---- which refusals are input problems (LL998) and which are syntax (LL000) ------------------

@pytest.mark.parametrize("text", [
    "".join(f"k{i}: {i}\n" for i in range(MAX_NODES + 10)),  # node count
    "x: " + "[" * 1000 + "]" * 1000 + "\n",                  # nesting depth
    "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 10)),
    None,                                                    # alias expansion (billion laughs)
    "a: &a [*a]\n",                                          # recursive alias
])
def test_limits_are_input_problems_not_syntax_errors(text):
    """Valid YAML beyond one of lintlora's limits is LIMIT_CODE (LL998): the file is not
    broken, and the message names the limit."""
    err, elapsed = _refused(_billion_laughs() if text is None else text)
    assert elapsed < TIME_BOUND_S
    assert err.code == LIMIT_CODE == "LL998"
    assert "limit" in err.message and "not parsed" in err.message


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "x: !Ref other\n", "a: b\x07c\n"])
def test_broken_or_non_data_yaml_stays_ll000(text):
    assert _refused(text)[0].code == "LL000"


def test_size_limit_is_the_callers():
    big = "note: " + "x" * (MAX_CONFIG_CHARS + 10) + "\n"
    err, _ = _refused(big)
    assert err.code == "LL998" and "1 MiB" in err.message
    assert isinstance(load_config_text(big, "cfg.yaml", max_chars=None), YMap)


def test_every_document_of_a_stream():
    text = "# head\na: 1\n---\n---\nb: 2\n...\n---\n- c\n"
    docs = load_config_documents(text, "cfg.yaml")
    assert [type(d).__name__ for d in docs] == ["YMap", "YMap", "YSeq"]
    assert docs[1].get("b").key_span.line == 5
    assert load_config_text(text, "cfg.yaml").get("a").value.value == 1
    assert load_config_documents("", "cfg.yaml") == [] and load_config_text("", "x.yaml") is None
    # the node limit counts over the whole stream
    many = "---\n".join("".join(f"k{i}: {i}\n" for i in range(MAX_NODES // 4)) for _ in range(3))
    assert isinstance(load_config_text(many, "cfg.yaml"), YMap)  # the first document alone
    with pytest.raises(ExtractError) as info:
        load_config_documents(many, "cfg.yaml")
    assert info.value.code == "LL998" and "nodes" in info.value.message
