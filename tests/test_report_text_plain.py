"""The text reporter writes exactly what rich would, without rich, when nothing is styled.

:mod:`lintlora.report.text` writes an unstyled report (``--no-color``, or a stream that is no
terminal) directly, and lets rich print everything else. These tests put both paths on the
same results and compare the bytes: every fixture, linted as the command lints it (with and
without a GPU), in both unstyled cases; and made-up findings whose text holds what rich does
change (tabs, control characters, trailing blanks, line breaks, wide characters).
"""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lintlora.engine import RunResult, lint_paths
from lintlora.findings import FileError, Finding, MemoryFigures, Severity
from lintlora.report import text as text_report
from lintlora.settings import Settings
from lintlora.training_setup import Span

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch):
    # rich reads these to treat any stream as a terminal; the plain path then stands aside
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)


class _Stream(io.StringIO):
    """A stream that counts how often rich or the plain writer flushed it."""

    flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def _both(result: RunResult, color: bool | None) -> tuple[str, str, bool]:
    """(what :func:`render` writes, what rich writes, whether render took the plain path)."""
    plain, rich = _Stream(), _Stream()
    took_plain = text_report._unstyled(plain, color) and \
        text_report._written_as_is(text_report.report_lines(result))
    text_report.render(result, plain, color=color)
    text_report._render_rich(text_report.report_lines(result), rich, color)
    if took_plain:
        assert plain.flushes == rich.flushes  # one flush per line, as rich's one per print
    return plain.getvalue(), rich.getvalue(), took_plain


def _fixture_paths() -> list[str]:
    found = []
    for folder, _dirs, files in os.walk(FIXTURES):
        for name in files:
            if name.endswith((".py", ".ipynb", ".yml", ".yaml", ".json")):
                found.append(os.path.join(folder, name))
    return sorted(found)


@pytest.fixture(scope="module")
def fixture_results() -> list[RunResult]:
    """Each fixture linted alone, the whole fixtures folder at once, and again with a GPU."""
    here = os.getcwd()
    os.chdir(os.path.dirname(FIXTURES))  # paths shown relative, as from the repository root
    try:
        results = [lint_paths([path], keep_setups=False) for path in _fixture_paths()]
        results.append(lint_paths([FIXTURES], keep_setups=False))
        results.append(lint_paths([FIXTURES], Settings(gpu="rtx3090"), keep_setups=False))
    finally:
        os.chdir(here)
    return results


def test_the_fixtures_are_many_and_have_findings(fixture_results):
    assert len(fixture_results) > 50
    assert sum(len(r.findings) for r in fixture_results) > 50
    assert any(r.errors for r in fixture_results) or any(r.notices for r in fixture_results)


@pytest.mark.parametrize("color", [None, False])
def test_every_fixture_is_written_as_rich_writes_it(fixture_results, color):
    plain_runs = 0
    for result in fixture_results:
        written, by_rich, took_plain = _both(result, color)
        assert written == by_rich
        plain_runs += took_plain
    assert plain_runs == len(fixture_results)  # the fixtures need no rich at all


def test_styled_output_still_goes_through_rich(fixture_results):
    result = fixture_results[-1]
    written, by_rich, took_plain = _both(result, True)
    assert not took_plain and "\x1b[" in written
    assert _strip_ansi(written) == _both(result, False)[0]


def test_a_terminal_or_forced_colour_is_left_to_rich(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert not text_report._unstyled(Terminal(), None)
    assert text_report._unstyled(io.StringIO(), None)
    assert text_report._unstyled(Terminal(), False)
    monkeypatch.setenv("FORCE_COLOR", "")
    assert not text_report._unstyled(io.StringIO(), None)


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\", "", text)


# ---- text rich changes ---------------------------------------------------------------------

_ODD = st.text(alphabet=st.sampled_from(list("ab \t\r\n\x07\x08\x0b\x0c\x1b\x00é≈漢字 ")) |
               st.characters(), max_size=30)


@settings(max_examples=150, deadline=None)
@given(message=_ODD, fix=_ODD, path=_ODD, note=_ODD, color=st.sampled_from([None, False]))
def test_any_text_is_written_as_rich_writes_it(message, fix, path, note, color):
    finding = Finding("LL001", "gradient-checkpointing-off", Severity.WARNING,
                      Span(f"dir/{path}.py", 3, 4), message, fix=fix or None,
                      estimate=MemoryFigures(peak_bytes=2**30, note=note or None),
                      rests_on=(note,) if note else ())
    result = RunResult(files=[f"dir/{path}.py"], findings=[finding],
                       errors=[FileError(f"x{path}.py", message or "m", "LL998")],
                       notices=[FileError("n.yaml", note or "n", "LL000")])
    written, by_rich, _ = _both(result, color)
    assert written == by_rich


def test_text_rich_would_change_is_shown_escaped_and_written_plain():
    """A tab or carriage return in a message (which rich would expand or drop) is shown as
    ``\\t``/``\\r`` (lintlora.report.escape.for_terminal): nothing rich would change is left,
    so the plain writer takes it and writes what rich writes."""
    finding = Finding("LL001", "gradient-checkpointing-off", Severity.WARNING,
                      Span("a.py", 1, 1), "a\tb\rc")
    result = RunResult(files=["a.py"], findings=[finding])
    written, by_rich, took_plain = _both(result, None)
    assert took_plain and written == by_rich
    assert "\t" not in written and "\r" not in written and "off a\\tb\\rc\n" in written
