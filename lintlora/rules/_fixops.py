"""Building rules' fixes as source changes (issue 17): :class:`lintlora.findings.EditOp` s
located where a value lives, from the spans the extraction recorded.

Every helper returns ``None`` when the value cannot be edited as stated: a value lintlora
could not resolve (``Origin.UNKNOWN``), a value computed by an expression (its span is not the
literal the setting holds), a library default of a call lintlora did not see whole (those stay
unknown, so they are refused too), a value read from another file. A rule then offers no
:class:`~lintlora.findings.Fix` (its prose ``fix`` stays). The applier
(:mod:`lintlora.fixing`) resolves the ops against the file's text.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from lintlora.findings import EditOp, Fix, FixSafety
from lintlora.training_setup import Origin, Setting, Span, TrainingSetup

__all__ = ["literal_span", "replace_value", "set_keyword", "remove_keyword", "rename_keyword",
           "yaml_set", "launch_set", "run_value", "make_fix", "written_in_call", "torch_named",
           "module_list_text", "replace_module_list", "checkpointing_kwargs_supported"]

_EDITABLE = (Origin.LITERAL, Origin.VARIABLE, Origin.ARGPARSE_DEFAULT, Origin.DATACLASS_DEFAULT,
             Origin.FUNCTION_DEFAULT)
"""Origins whose span is the literal the value was read from, in the file itself: the
keyword's value, the assignment a variable resolves to, the parameter or option default."""


CHECKPOINTING_KWARGS_SINCE = (4, 35)
"""The transformers release that added ``gradient_checkpointing_kwargs``: to
``TrainingArguments`` (huggingface/transformers#27068) and to ``PreTrainedModel.
gradient_checkpointing_enable`` (huggingface/transformers#27020), both merged in October 2023
and first released in v4.35.0. An older release raises ``TypeError: ... unexpected keyword
argument 'gradient_checkpointing_kwargs'``."""


def checkpointing_kwargs_supported(context: object, setup: TrainingSetup) -> bool:
    """Whether the transformers release the run uses (``context.library_version``: a pin,
    ``--assume-version``, else the current release) accepts ``gradient_checkpointing_kwargs``
    (:data:`CHECKPOINTING_KWARGS_SINCE`); True when the release is unknown."""
    used = context.library_version(setup, "transformers")  # type: ignore[attr-defined]
    version = getattr(used, "version", None)
    if version is None:
        return True
    return tuple(version.release[:2]) >= CHECKPOINTING_KWARGS_SINCE


def _width(span: Span) -> int | None:
    if span.end_line is None or span.end_column is None or span.end_line != span.line:
        return None
    return span.end_column - span.column


def _literal_widths(value: object) -> set[int]:
    """The widths the literal of ``value`` may be written in (a dtype: ``torch.float16``,
    ``torch.half``, ``"float16"``; a bool or number: its ``repr``; a string: quoted)."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return {len(repr(value))}
    if isinstance(value, str):
        widths = {len(value) + 2, len(value) + 3}  # "x" / f"x" r"x"
        if value in ("float16", "bfloat16", "float32"):
            widths |= {len("torch." + value)}
            if value == "float16":
                widths.add(len("torch.half"))
            if value == "float32":
                widths.add(len("torch.float"))
        return widths
    return set()


def literal_span(setting: Setting | None, path: str) -> Span | None:
    """The span of the literal ``setting`` was read from, when it can be replaced in ``path``:
    a resolved value of an editable origin whose span is on one line and as wide as the
    value's literal (an expression computing it is never edited)."""
    if setting is None or not setting.known or setting.origin not in _EDITABLE:
        return None
    span = setting.span
    if span is None or span.path != path:
        return None
    width = _width(span)
    if width is None or width not in _literal_widths(setting.value):
        return None
    return span


def replace_value(setting: Setting | None, path: str, text: str) -> EditOp | None:
    """``replace`` of the literal the value was read from (see :func:`literal_span`)."""
    span = literal_span(setting, path)
    return EditOp("replace", span, text) if span is not None else None


def written_in_call(setting: Setting | None, call: Span | None) -> bool:
    """Whether the keyword naming ``setting`` is written in the call at ``call`` (its
    ``key_span`` lies inside the call's span)."""
    if setting is None or call is None or setting.key_span is None:
        return False
    k = setting.key_span
    if k.path != call.path or k.cell != call.cell or call.end_line is None:
        return False
    return (call.line, call.column) <= (k.line, k.column) <= (call.end_line, call.end_column or 10**9)


def _call_span(call: Span | None, path: str) -> Span | None:
    if call is None or call.path != path or call.end_line is None or call.end_column is None:
        return None
    return call


def set_keyword(call: Span | None, path: str, keyword: str, text: str,
                current: Setting | None = None) -> EditOp | None:
    """``set_keyword`` on the call at ``call``. ``current`` is the keyword's setting: refused
    when it is unresolved (an expression or a ``**kwargs`` the call may carry it in) or when
    it was written somewhere the op would not reach; a library default (the call was seen
    whole) or a value written in the call itself is set."""
    span = _call_span(call, path)
    if span is None:
        return None
    if current is not None:
        if not current.known:
            return None
        if current.origin is not Origin.LIBRARY_DEFAULT and not written_in_call(current, span):
            return None
    return EditOp("set_keyword", span, text, keyword)


def quantization_keyword(setup: TrainingSetup, keyword: str, current: Setting, text: str) -> EditOp | None:
    """``keyword=text`` on the setup's ``BitsAndBytesConfig`` call (LL014's compute dtype,
    LL024's storage dtype): set on the call when the keyword is left to its default, else
    the value written replaced. ``None`` when the quantization is stated in
    ``from_pretrained(load_in_4bit=True)`` itself (no config call to edit) or cannot be
    edited (:func:`set_keyword`, :func:`replace_value`)."""
    q = setup.quantization
    if q is None:
        return None
    if current.origin is Origin.LIBRARY_DEFAULT:
        if setup.model is not None and q.span == setup.model.span:
            return None
        return set_keyword(q.span, setup.path, keyword, text, current)
    return replace_value(current, setup.path, text)


def remove_keyword(call: Span | None, path: str, keyword: str, current: Setting) -> EditOp | None:
    """``remove_keyword`` on the call, only when ``current`` is written in it."""
    span = _call_span(call, path)
    if span is None or not current.known or not written_in_call(current, span):
        return None
    return EditOp("remove_keyword", span, "", keyword)


def rename_keyword(call: Span | None, path: str, keyword: str, new: str, current: Setting) -> EditOp | None:
    """``rename_keyword`` on the call, only when ``current`` is written in it."""
    span = _call_span(call, path)
    if span is None or not current.known or not written_in_call(current, span):
        return None
    return EditOp("rename_keyword", span, new, keyword)


def yaml_set(setup: TrainingSetup, key: str, text: str, current: Setting | None = None) -> EditOp | None:
    """``yaml_set`` of ``key`` in the setup's own config; refused when the current value is
    unresolved or was read from another file."""
    if setup.kind not in ("yaml", "json"):
        return None
    if current is not None:
        if not current.known and current.span is not None:
            return None
        if current.span is not None and current.span.path != setup.path:
            return None
        if current.known and current.origin not in (Origin.LITERAL, Origin.LIBRARY_DEFAULT):
            return None
    span = (current.key_span or current.span) if current is not None else None
    return EditOp("yaml_set", span or Span(setup.path, 1, 1), text, key)


def launch_set(setting: Setting | None, option: str, word: str, setup: TrainingSetup | None = None) -> EditOp | None:
    """``launch_set`` of ``option`` in the launch command the value came from: the span is the
    run's command (:attr:`TrainingSetup.run`, its first line) when it is in the file the value
    was read from, else the value's own line."""
    if setting is None or setting.origin is not Origin.LAUNCH or setting.span is None:
        return None
    span = setting.span
    run = setup.run if setup is not None else None
    if run is not None and run.span.path == span.path and run.span.line <= span.line:
        span = run.span
    return EditOp("launch_set", span, word, option)


def run_value(setting: Setting | None, option: str, key: str, word: str,
              setup: TrainingSetup | None = None) -> EditOp | None:
    """An edit of a value the run sets outside the script: ``launch_set`` of ``option`` when
    the launch line passes it (:func:`launch_set`), ``yaml_set`` of ``key`` in the YAML file it
    was read from when it is a config file's literal (an accelerate config's
    ``mixed_precision: fp16``; its span names that file, which the run read), else ``None``."""
    if setting is None or not setting.known or setting.span is None:
        return None
    if setting.origin is Origin.LAUNCH:
        return launch_set(setting, option, word, setup)
    if setting.origin is Origin.CONFIG_FILE and setting.span.path.endswith((".yaml", ".yml")):
        # a word YAML 1.1 reads as a bool (accelerate writes `mixed_precision: 'no'`) is quoted
        text = f"'{word}'" if word.lower() in _YAML_BOOL_WORDS else word
        return EditOp("yaml_set", setting.key_span or setting.span, text, key)
    return None


_YAML_BOOL_WORDS = ("y", "n", "yes", "no", "on", "off", "true", "false")
"""Plain scalars YAML 1.1 (PyYAML's ``safe_load``, which accelerate's config reader uses) reads
as booleans (https://yaml.org/type/bool.html)."""


def make_fix(title: str, safety: FixSafety, ops: Iterable[EditOp | None]) -> Fix | None:
    """A :class:`Fix` of ``ops``, or ``None`` when any op could not be built (a fix is
    applied whole or not offered) or there is none."""
    listed: Sequence[EditOp | None] = list(ops)
    if not listed or any(op is None for op in listed):
        return None
    unique: list[EditOp] = []
    for op in listed:
        assert op is not None
        if op not in unique:
            unique.append(op)
    return Fix(title, safety, tuple(unique))


def torch_named(setup: TrainingSetup) -> bool:
    """Whether the file spells a dtype through the name ``torch`` (``torch.bfloat16`` written
    as a value of the model load or the quantization config: a literal as wide as
    ``torch.<dtype>``), so that a fix may write ``torch.<dtype>``. Rules see no imports; a file
    that spells no dtype that way gets no such fix."""
    for section in (setup.model, setup.quantization, setup.training):
        if section is None:
            continue
        for _name, s in section.settings():
            if s.known and isinstance(s.value, str) and s.value in ("bfloat16", "float16", "float32") \
                    and s.span is not None and s.span.path == setup.path and s.origin in _EDITABLE:
                w = _width(s.span)
                if w == len("torch." + s.value) or (s.value == "float16" and w == len("torch.half")):
                    return True
    return False


def module_list_text(value: object) -> str | None:
    """The source of a ``target_modules``/``modules_to_save`` value: a list of double-quoted
    names, ``"all-linear"``-like strings quoted, ``None``."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(module_list_text(v) or "" for v in value) + "]"
    return None


def replace_module_list(setting: Setting | None, call: Span | None, path: str, value: object) -> EditOp | None:
    """``replace`` of a module list written as the keyword's value in the adapter config's
    call (``LoraConfig(target_modules=[...])``: origin literal, keyword inside the call), by
    ``value``; a list built elsewhere or by an expression is not edited."""
    text = module_list_text(value)
    if setting is None or text is None or not setting.known or setting.origin is not Origin.LITERAL:
        return None
    span = setting.span
    if span is None or span.path != path or span.end_line is None or span.end_column is None \
            or not written_in_call(setting, call):
        return None
    return EditOp("replace", span, text)
