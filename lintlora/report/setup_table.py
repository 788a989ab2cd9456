"""``lintlora --show-setup``: what lintlora understood of each file, value by value.

For every setup: each setting's value, where it came from (its origin and the line it was read
at; for library defaults the library file and version), and what was left unknown and why.
This is how a user checks the extraction, and what ``bench/coverage.py`` measures.

``render_setups`` prints rich tables; ``setups_to_json`` gives the same content as plain data
(the ``--show-setup --format json`` output). Every name, value and expression printed comes
from the file: each cell and title goes through :func:`lintlora.report.escape.for_terminal`
(a title line also through :func:`~lintlora.report.escape.terminal_line`).
"""

from __future__ import annotations

from typing import Any, Iterable

from lintlora.report.escape import for_terminal, terminal_line
from lintlora.training_setup import CallSite, Evidence, Origin, Setting, Span, TrainingSetup

__all__ = ["render_setups", "setups_to_json", "setting_to_json", "span_to_json",
           "unknown_settings"]

_SECTIONS = ("model", "quantization", "lora", "training")
_MAX_VALUE = 70
_MAX_EXPR = 120


# ---- plain data ---------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def span_to_json(span: Span | None) -> dict | None:
    """A span as ``{"path", "line", "column", "end_line", "end_column"[, "cell"]}``."""
    if span is None:
        return None
    out = {"path": span.path, "line": span.line, "column": span.column,
           "end_line": span.end_line, "end_column": span.end_column}
    if span.cell is not None:
        out["cell"] = span.cell
    return out


def setting_to_json(setting: Setting) -> dict:
    """A setting as ``{"value", "origin", "span", "key_span", "source", "expr"}``; for unknown
    settings ``source`` says why the value could not be resolved."""
    return {"value": _jsonable(setting.value) if setting.known else None,
            "origin": setting.origin.value,
            "span": span_to_json(setting.span),
            "key_span": span_to_json(setting.key_span),
            "source": setting.source,
            "expr": setting.expr}


def unknown_settings(setup: TrainingSetup) -> list[str]:
    """Dotted names of the settings left unknown (``["lora.r", "training.fp16"]``)."""
    out = []
    for section in _SECTIONS:
        obj = getattr(setup, section)
        if obj is None:
            continue
        for name, setting in obj.settings():
            if not setting.known:
                out.append(f"{section}.{name}")
    return out


def _call_to_json(call: CallSite) -> dict:
    return {"kind": call.kind, "qualified_name": call.qualified_name,
            "span": span_to_json(call.span), "in_loop": call.in_loop,
            "in_step_callback": call.in_step_callback, "receiver": call.receiver,
            "order": call.order, "args": {k: setting_to_json(v) for k, v in call.args.items()}}


def _evidence_to_json(ev: Evidence) -> dict:
    return {"kind": ev.kind, "span": span_to_json(ev.span), "detail": ev.detail}


def setups_to_json(setups: Iterable[TrainingSetup]) -> list[dict]:
    """Each setup as plain data (JSON-serialisable), sections keyed by field name."""
    out = []
    for s in setups:
        sections: dict[str, Any] = {}
        for section in _SECTIONS:
            obj = getattr(s, section)
            if obj is None:
                sections[section] = None
                continue
            sections[section] = {
                "span": span_to_json(obj.span),
                "settings": {name: setting_to_json(st) for name, st in obj.settings()},
            }
        out.append({
            "path": s.path, "kind": s.kind, "framework": s.framework, "dialect": s.dialect,
            "anchor": span_to_json(s.anchor), "is_training": s.is_training,
            "sections": sections,
            "dataloaders": [{"span": span_to_json(d.span),
                             "settings": {n: setting_to_json(st) for n, st in d.settings()}}
                            for d in s.dataloaders],
            "calls": [_call_to_json(c) for c in s.calls],
            "launch": [_evidence_to_json(e) for e in s.launch],
            "versions": [{"package": v.package, "specifier": v.specifier, "version": v.version,
                          "span": span_to_json(v.span), "source": v.source} for v in s.versions],
            "unknown": unknown_settings(s),
        })
    return out


# ---- text -----------------------------------------------------------------------------------------
def _where(span: Span | None, path: str) -> str:
    if span is None:
        return ""
    prefix = ""
    if span.path != path:
        from lintlora.report.locations import display_path

        prefix = display_path(span.path) + ":"
    if span.cell is not None:
        return f"{prefix}cell {span.cell}:{span.line}"
    return f"{prefix}{span.line}"


def _value_text(setting: Setting) -> str:
    if not setting.known:
        return "?"
    text = repr(_jsonable(setting.value)) if not isinstance(setting.value, str) else repr(setting.value)
    if isinstance(setting.value, tuple):
        text = "[" + ", ".join(repr(v) for v in setting.value) + "]"
    if len(text) > _MAX_VALUE:
        text = text[: _MAX_VALUE - 3] + "..."
    return text


def _short_expr(expr: str | None) -> str:
    """The source expression on one line; one longer than :data:`_MAX_EXPR` characters (a
    whole dict literal) is cut with a visible ``…``, never silently. The reason next to it (a
    setting's ``source``) is always shown whole."""
    text = " ".join((expr or "").split())
    return text if len(text) <= _MAX_EXPR else text[: _MAX_EXPR - 1] + "…"


def _from(setting: Setting, path: str, citations: dict[str, int]) -> str:
    """Where a value came from, in words: origin, line, and the source or the reason."""
    origin = setting.origin
    if origin is Origin.LIBRARY_DEFAULT:
        n = citations.setdefault(setting.source or "library", len(citations) + 1)
        return f"library default [{n}]"
    if origin is Origin.UNKNOWN:
        why = setting.source or "not resolved"
        expr = _short_expr(setting.expr)
        return f"unknown: {why}" + (f" (`{expr}`)" if expr else "")
    parts = [origin.value.replace("-", " ")]
    where = _where(setting.span or setting.key_span, path)
    if where:
        parts.append(f"line {where}" if setting.span is None or setting.span.cell is None
                     else where)
    details = []
    if setting.source:
        details.append(setting.source)
    if setting.expr and origin is not Origin.LITERAL:
        details.append(f"`{_short_expr(setting.expr)}`")
    text = ", ".join(parts)
    return text + (f" ({'; '.join(details)})" if details else "")


_ORIGIN_STYLE = {
    Origin.LITERAL: "green", Origin.VARIABLE: "green", Origin.CONFIG_FILE: "cyan",
    Origin.ARGPARSE_DEFAULT: "yellow", Origin.DATACLASS_DEFAULT: "yellow",
    Origin.FUNCTION_DEFAULT: "yellow", Origin.ENV_DEFAULT: "yellow",
    Origin.LIBRARY_DEFAULT: "blue", Origin.CLI_OVERRIDE: "magenta", Origin.LAUNCH: "cyan", Origin.ASSUMED: "magenta",
    Origin.UNKNOWN: "red",
}


def render_setups(setups: Iterable[TrainingSetup], console: Any) -> None:
    """Print each setup on a rich ``Console``: one row per setting (value; where it came from:
    origin, line, source, or why it is unknown), the calls judged as code, the launch evidence,
    the library citations, and what is unknown."""
    from rich.table import Table
    from rich.text import Text

    from lintlora.report.locations import display_path

    for s in setups:
        citations: dict[str, int] = {}
        where = _where(s.anchor, s.path)
        title = terminal_line(for_terminal(
            f"{display_path(s.path)}{':' + where if where else ''}  "
            f"[{s.kind}{'/' + s.dialect if s.dialect else ''}, {s.framework}"
            f"{'' if s.is_training else ', not training'}]"))
        table = Table(title=title, title_justify="left", expand=False)
        table.add_column("setting", overflow="fold", min_width=14)
        table.add_column("value", overflow="fold", min_width=8)
        table.add_column("from", overflow="fold", min_width=24)
        for section in _SECTIONS:
            obj = getattr(s, section)
            if obj is None:
                table.add_row(Text(section, style="bold"), Text("(none)", style="dim"), "")
                continue
            for name, st in obj.settings():
                table.add_row(for_terminal(f"{section}.{name}"), for_terminal(_value_text(st)),
                              Text(for_terminal(_from(st, s.path, citations)),
                                   style=_ORIGIN_STYLE.get(st.origin, "")))
        for i, d in enumerate(s.dataloaders, 1):
            for name, st in d.settings():
                table.add_row(for_terminal(f"dataloader {i}.{name}"),
                              for_terminal(_value_text(st)),
                              Text(for_terminal(_from(st, s.path, citations)),
                                   style=_ORIGIN_STYLE.get(st.origin, "")))
        console.print(table)
        if s.calls:
            calls = Table(title="calls judged as code", title_justify="left")
            calls.add_column("#", no_wrap=True)
            calls.add_column("call", overflow="fold", min_width=16)
            calls.add_column("line", no_wrap=True)
            calls.add_column("context and arguments", overflow="fold", min_width=16)
            for c in s.calls:
                bits = [x for x, on in (("in a loop", c.in_loop),
                                        ("per step", c.in_step_callback)) if on]
                bits += [f"{k}={_value_text(v)} ({v.origin.value})" for k, v in c.args.items()]
                calls.add_row(str(c.order), for_terminal(f"{c.kind}: {c.qualified_name}"),
                              for_terminal(_where(c.span, s.path)), for_terminal("; ".join(bits)))
            console.print(calls)
        if s.launch:
            console.print("launch evidence: " + for_terminal("; ".join(
                f"{e.kind} ({_where(e.span, s.path) or 'config'}: {e.detail})" for e in s.launch)))
        if s.versions:  # the library releases the project states (issue 16)
            console.print("library versions: " + for_terminal("; ".join(
                f"{v.package}{v.specifier or ' (no version)'} ({_where(v.span, s.path) or v.source})"
                for v in s.versions)))
        for source, n in citations.items():
            console.print(Text(f"[{n}] {for_terminal(source)}", style="dim"))
        unknown = unknown_settings(s)
        if unknown:
            console.print(Text(f"{len(unknown)} setting(s) unknown: "
                               f"{for_terminal(', '.join(unknown))}", style="red"))
        else:
            console.print(Text("every extracted setting resolved", style="green"))
        console.print()
