"""Every registered rule has a page in ``rules/``, with the required sections, and each page's
examples behave: a block marked ``bad`` triggers the rule, one marked ``good`` does not,
through the real pipeline."""

from __future__ import annotations

import re

import pytest
from rules_support import ROOT, lint, settings_from_args

PAGES = ROOT / "rules"
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SECTIONS = ("## What it flags", "## Why it matters", "## Example", "## How to fix", "## Suppressing it")


def registered():
    from lintlora.engine import available_rules

    return [r for r in available_rules() if r.__module__.startswith("lintlora.")]


def examples(code):
    """``(kind, language, options, text)`` for each marked block of a page."""
    out = []
    for m in FENCE.finditer((PAGES / f"{code}.md").read_text(encoding="utf-8")):
        words = m.group("info").split()
        if len(words) >= 2 and words[0] in ("python", "yaml") and words[1] in ("bad", "good"):
            options = dict(w.split("=", 1) for w in words[2:])
            out.append((words[1], words[0], options, m.group("body")))
    return out


def all_examples():
    for rule in registered():
        for i, (kind, lang, options, text) in enumerate(examples(rule.code)):
            yield pytest.param(rule.code, kind, lang, options, text, id=f"{rule.code}-{i}-{kind}")


def test_every_registered_rule_has_a_complete_page():
    for rule in registered():
        page = PAGES / f"{rule.code}.md"
        assert page.is_file(), f"no page for {rule.code}"
        text = page.read_text(encoding="utf-8")
        assert text.startswith(f"# {rule.code} {rule.name}\n"), rule.code
        for section in SECTIONS:
            assert section in text, f"{rule.code}: missing {section!r}"
        kinds = [k for k, *_ in examples(rule.code)]
        assert "bad" in kinds and "good" in kinds, rule.code
        assert "lintlora: ignore" in text or "exclude" in text, rule.code
        if rule.code not in ("LL000", "LL900"):
            assert re.search(r"[\w.-]+/[\w.-]+(#| PR #)\d+", text), f"{rule.code}: no owner/repo#N source"


def test_the_index_lists_every_page():
    index = (PAGES / "README.md").read_text(encoding="utf-8")
    for rule in registered():
        assert f"[{rule.code}]({rule.code}.md)" in index and f"`{rule.name}`" in index


@pytest.mark.parametrize("code,kind,lang,options,text", list(all_examples()))
def test_page_example(tmp_path, code, kind, lang, options, text):
    path = tmp_path / ("example.py" if lang == "python" else "example.yml")
    path.write_text(text, encoding="utf-8")
    args = " ".join(f"--{k} {v}" for k, v in options.items())
    result = lint(path, settings_from_args(args))
    codes = [f.code for f in result.findings]
    report = "\n".join(f"{f.code}:{f.span.line} {f.message}" for f in result.findings)
    if kind == "bad":
        assert code in codes, f"{code} bad example does not trigger it\n{report}"
    else:
        assert code not in codes, f"{code} good example triggers it\n{report}"
    assert not [e for e in result.errors if e.code == "LL999"], result.errors
