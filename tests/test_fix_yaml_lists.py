"""``yaml_set`` of a list (issue 17: LL003/LL012 in axolotl configs): the list's items replaced
in the list's own layout by :func:`lintlora.fixing._yaml_sequence`, every other byte kept."""

from __future__ import annotations

import pytest
import yaml

from lintlora.findings import EditOp, Fix, FixSafety
from lintlora.fixing import FixError, apply_edits, resolve
from lintlora.training_setup import Span


def _set(text: str, key: str, value: str, kind: str = "yaml") -> str:
    fix = Fix("t", FixSafety.UNSAFE, (EditOp("yaml_set", Span("c.yml", 1, 1), value, key),))
    return apply_edits(text, resolve(fix, text, kind))


@pytest.mark.parametrize("text, expected", [
    ("a: 1\nlora_target_modules:\n  - q_proj\n  - v_proj\n  - lm_head\nb: 2\n",
     "a: 1\nlora_target_modules:\n  - q_proj\n  - v_proj\nb: 2\n"),
    ("lora_target_modules:\n- q_proj\n- lm_head\nb: 2\n", "lora_target_modules:\n- q_proj\n- v_proj\nb: 2\n"),
    ('lora_target_modules: ["q_proj", "lm_head"]  # keep\n', 'lora_target_modules: ["q_proj", "v_proj"]  # keep\n'),
    ("lora_target_modules: ['q_proj', 'lm_head']\n", "lora_target_modules: ['q_proj', 'v_proj']\n"),
    ("lora_target_modules: [q_proj, lm_head]\r\nb: 2\r\n", "lora_target_modules: [q_proj, v_proj]\r\nb: 2\r\n"),
    ("m:\n  lora_target_modules:\n    - q_proj\n    - lm_head\n  r: 8\n",
     "m:\n  lora_target_modules:\n    - q_proj\n    - v_proj\n  r: 8\n"),
])
def test_a_list_keeps_its_layout_and_quotes(text, expected):
    key = "m.lora_target_modules" if text.startswith("m:") else "lora_target_modules"
    got = _set(text, key, '["q_proj", "v_proj"]')
    assert got == expected
    assert yaml.safe_load(got) == yaml.safe_load(expected)


def test_json_lists_stay_json():
    text = '{"lora_target_modules": ["q_proj", "lm_head"], "r": 8}\n'
    assert _set(text, "lora_target_modules", '["q_proj"]', "json") == '{"lora_target_modules": ["q_proj"], "r": 8}\n'


def test_a_name_that_needs_quotes_is_quoted():
    got = _set("t:\n  - q_proj\n  - lm_head\n", "t", '["q_proj", "a: b"]')
    assert yaml.safe_load(got) == {"t": ["q_proj", "a: b"]}


@pytest.mark.parametrize("text, value", [
    ("t:\n  - q_proj  # the query\n  - lm_head\n", '["q_proj"]'),  # a comment would be lost
    ("t:\n  - q_proj\n", "[]"),  # nothing left
    ("t:\n  - q_proj\n", "[1, 2]"),  # not names
    ("t: []\n", '["q_proj"]'),  # an empty list: no layout to keep
])
def test_refused(text, value):
    with pytest.raises(FixError):
        _set(text, "t", value)
