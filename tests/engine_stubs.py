"""Stand-ins for the extractors and rules, so the engine, suppression, reporters and CLI can be
tested alone (the real pieces have their own tests, and end-to-end tests use them).

``stub_extract_python`` reads a file with Python's ``ast`` (parsing, never executing) and builds
a :class:`TrainingSetup`: a ``TrainingArguments(...)`` call becomes the ``training`` section
(its span the whole call, each keyword a Setting with value and key spans), and every call of a
function named ``bad`` becomes a ``CallSite(kind="bad")``. ``BadCallRule`` (``TS001``) reports
each ``bad(...)`` call, ``GcOffRule`` (``TS002``) reports ``gradient_checkpointing=False``.
"""

from __future__ import annotations

import ast
import sys
import types

from lintlora.extract import ExtractError, NotATrainingConfig
from lintlora.findings import Finding, MemoryFigures, Severity
from lintlora.rules.base import Rule
from lintlora.training_setup import CallSite, Setting, Span, TrainingArgs, TrainingSetup


def _span(path: str, node: ast.AST, cell: int | None = None) -> Span:
    return Span(path, node.lineno, node.col_offset + 1, node.end_lineno, node.end_col_offset + 1,
                cell)


def stub_extract_python(path: str, text: str, cell: int | None = None) -> list[TrainingSetup]:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ExtractError(f"invalid syntax: {exc.msg}", exc.lineno, exc.offset) from None
    training = None
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id == "TrainingArguments":
            values = {}
            for kw in node.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant):
                    key = Span(path, kw.lineno, kw.col_offset + 1, kw.lineno,
                               kw.col_offset + 1 + len(kw.arg), cell)
                    values[kw.arg] = Setting.literal(kw.value.value, _span(path, kw.value, cell), key)
            fields = {k: v for k, v in values.items() if k in TrainingArgs.__dataclass_fields__}
            training = TrainingArgs(span=_span(path, node, cell), **fields)
        elif node.func.id == "bad":
            calls.append(CallSite("bad", "bad", _span(path, node, cell), order=len(calls)))
        elif node.func.id == "crash":
            calls.append(CallSite("crash", "crash", _span(path, node, cell), order=len(calls)))
    if training is None and not calls:
        return []
    return [TrainingSetup(path=path, training=training, calls=tuple(calls))]


def stub_extract_notebook(path: str, text: str) -> list[TrainingSetup]:
    from lintlora.suppression import notebook_cells

    setups = []
    cells = notebook_cells(text)
    if not cells and '"cells"' not in text:
        raise ExtractError("not a notebook", 1, 1)
    for index, source in enumerate(cells, start=1):
        for setup in stub_extract_python(path, source, cell=index):
            setups.append(setup)
    return setups


def stub_extract_config(path: str, text: str, *, explicit: bool = True,
                        max_chars: int | None = None) -> list[TrainingSetup]:
    """YAML stand-in: ``gradient_checkpointing: false`` lines make a training section."""
    if "training" not in text and "gradient_checkpointing" not in text:
        raise NotATrainingConfig("no known dialect")
    if "\t" in text.split("\n", 1)[0]:
        raise ExtractError("tab in indentation", 1, 1)
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("gradient_checkpointing:"):
            col = line.index(":") + 3
            value = line.split(":", 1)[1].strip() == "true"
            setting = Setting.literal(value, Span(path, number, col, number, len(line) + 1),
                                      Span(path, number, 1, number, 23))
            return [TrainingSetup(path=path, kind="yaml", framework="axolotl",
                                  anchor=Span(path, 1, 1),
                                  training=TrainingArgs(gradient_checkpointing=setting))]
    return [TrainingSetup(path=path, kind="yaml", framework="axolotl", anchor=Span(path, 1, 1))]


class BadCallRule(Rule):
    """Reports every ``bad(...)`` call (a stand-in rule)."""

    code = "TS001"
    name = "bad-call"
    severity = Severity.WARNING
    summary = "A call to bad()"
    depends_on_settings = False  # the file alone decides (LL900 reports unused suppressions)

    @classmethod
    def help_uri(cls) -> str:
        """A plugin rule with its own page (``GcOffRule`` has none)."""
        return "https://example.org/rules/TS001.html"

    def check(self, setup, context):
        for call in setup.calls_of("bad"):
            yield Finding(self.code, self.name, self.severity, call.span, "bad() was called",
                          fix="Do not call bad().",
                          estimate=MemoryFigures(peak_bytes=30 * 2**30,
                                                 peak_after_fix_bytes=20 * 2**30,
                                                 gpu="RTX 3090", gpu_memory_bytes=24 * 2**30,
                                                 breakdown={"weights": 13 * 2**30}))


class GcOffRule(Rule):
    """Reports ``gradient_checkpointing=False`` at its value (a stand-in rule)."""

    code = "TS002"
    name = "gc-off"
    severity = Severity.ERROR
    summary = "Checkpointing off"
    depends_on_settings = False  # the file alone decides (LL900 reports unused suppressions)

    def check(self, setup, context):
        setting = setup.get("training.gradient_checkpointing")
        if setting.is_(False):
            yield Finding(self.code, self.name, self.severity, setting.span,
                          "gradient checkpointing is off", fix="Set it to True.",
                          estimate=MemoryFigures(note="model unknown: pass --model"))


class InfoRule(Rule):
    """An info-severity finding on every training section (a stand-in rule)."""

    code = "TS003"
    name = "info-note"
    severity = Severity.INFO
    summary = "An informational note"
    depends_on_settings = False  # the file alone decides (LL900 reports unused suppressions)

    def check(self, setup, context):
        if setup.training is not None and setup.training.span is not None:
            yield Finding(self.code, self.name, self.severity, setup.training.span, "note")


class CrashRule(Rule):
    """Raises on ``crash(...)`` calls (tests the isolation boundary)."""

    code = "TS009"
    name = "crashy"
    severity = Severity.WARNING
    summary = "Crashes"
    depends_on_settings = False  # the file alone decides (LL900 reports unused suppressions)

    def check(self, setup, context):
        if setup.has_call("crash"):
            raise ValueError("boom")
        return ()


STUB_RULES = [BadCallRule, GcOffRule, InfoRule, CrashRule]


def install(monkeypatch, rules=True) -> None:
    """Route the engine to the stub extractors (and, by default, the stub rules)."""
    for name, attr, func in (
        ("lintlora.extract.python", "extract_python", stub_extract_python),
        ("lintlora.extract.notebook", "extract_notebook", stub_extract_notebook),
        ("lintlora.extract.yaml_config", "extract_config", stub_extract_config),
    ):
        module = types.ModuleType(name)
        setattr(module, attr, func)
        monkeypatch.setitem(sys.modules, name, module)
    if rules:
        import lintlora.engine

        from lintlora.suppression import UnusedSuppression
        from lintlora.rules.ll000_syntax_error import SyntaxErrorRule

        monkeypatch.setattr(lintlora.engine, "available_rules",
                            lambda: [SyntaxErrorRule, *STUB_RULES, UnusedSuppression])
