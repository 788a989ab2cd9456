"""Findings: what a rule reports, and the memory figures attached to each.

Every finding carries :class:`MemoryFigures`: the estimated peak of the setup as written, the
peak after the rule's fix (the estimator run on the changed setup, never asserted), and the
GPU's capacity when known. ``peak_bytes`` is the *device* counter: what must fit on the card,
i.e. what ``nvidia-smi`` would show (PyTorch's reserved pool plus the CUDA context); see
``lintlora.estimate.memory`` for the three counters.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from lintlora.training_setup import Span

__all__ = ["Severity", "MemoryFigures", "RelatedLocation", "FixSafety", "EditOp", "Fix", "TextEdit",
           "Finding", "FileError"]


class Severity(str, enum.Enum):
    """Finding severity, ordered ``info < warning < error`` (``--fail-on`` compares ranks)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """0 for info, 1 for warning, 2 for error."""
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class MemoryFigures:
    """The estimate attached to a finding. All sizes in bytes.

    Attributes:
        peak_bytes: estimated device peak of the setup as written (nvidia-smi counter), or
            ``None`` when it cannot be estimated (unknown model); ``note`` then says why.
        peak_after_fix_bytes: the same for the setup with the rule's fix applied; equal to
            ``peak_bytes`` for fixes that do not change GPU memory; ``None`` when not estimable
            or when the rule proposes no setup change.
        gpu: the GPU's display name, when one was named (``--gpu``) or configured.
        gpu_memory_bytes: the memory PyTorch can use on that GPU (or ``--gpu-memory``).
        gpu_memory_nominal: ``gpu_memory_bytes`` is the card's marketed size (the GPU catalog
            cites no CUDA-visible total for it: :mod:`lintlora.estimate.gpus`), an upper bound
            on what PyTorch can use; reporters label it "nominal".
        breakdown: component name -> bytes for the setup as written (see the estimator).
        model: the architecture the estimate used (display name), if any.
        note: a human sentence on what the estimate rests on: why there is none ("model
            unknown: pass --model or --model-config"); else the shape it was computed for and
            what of it was not read from the file ("batch 4 × 512 tokens; assumes 512 tokens
            per sequence: the script sets no sequence length"; see
            :mod:`lintlora.estimate.shape`), after "rough estimate from a parameter count"
            when the architecture is a stand-in.
    """

    peak_bytes: int | None = None
    peak_after_fix_bytes: int | None = None
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    breakdown: Mapping[str, int] = field(default_factory=dict)
    model: str | None = None
    note: str | None = None
    gpu_memory_nominal: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON object documented in the README (``estimate`` of a finding)."""
        return {
            "peak_bytes": self.peak_bytes,
            "peak_after_fix_bytes": self.peak_after_fix_bytes,
            "gpu": self.gpu,
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "gpu_memory_nominal": self.gpu_memory_nominal,
            "breakdown": dict(self.breakdown),
            "model": self.model,
            "note": self.note,
        }


@dataclass(frozen=True)
class RelatedLocation:
    """Another place a finding rests on: the launch line that passed a value or started the
    run (``"launched by run.sh:3"``), the config file a value was read from. Reporters show it
    (text: after the message; SARIF 2.1.0: ``relatedLocations``; JSON: ``related``)."""

    span: Span
    message: str


class FixSafety(str, enum.Enum):
    """How far a fix can be trusted (issue 17; ruff's terms).

    ``SAFE``: the run still trains the same thing and can only get further (checkpointing on,
    bf16 for fp16 on a bf16 GPU, a trainable-parameter print); ``--fix`` applies it.
    ``UNSAFE``: it changes what trains or the numerics (target lists, batch sizes, a precision
    on a family that overflows); only ``--unsafe-fixes`` applies it.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class EditOp:
    """One intended change of a source file, located by spans the extraction recorded; the fix
    applier (:mod:`lintlora.fixing`) turns it into :class:`TextEdit` s against the file's text,
    keeping the author's formatting. Spans are 1-based, ``end_column`` exclusive.

    ``kind``:
        ``"replace"``: the text of ``span`` becomes ``text`` (a value: ``True``, ``"sdpa"``);
        ``"set_keyword"``: in the call at ``span``, keyword ``keyword`` gets the value source
            ``text`` (replaced when present, else appended after the last argument);
        ``"remove_keyword"``: in the call at ``span``, keyword ``keyword`` is removed;
        ``"rename_keyword"``: in the call at ``span``, keyword ``keyword`` is renamed to ``text``;
        ``"insert_after"``: the statement at ``span`` is followed by a new line ``text`` at the
            same indentation;
        ``"delete_statement"``: the statement at ``span`` is removed (a block left empty gets
            ``pass``);
        ``"yaml_set"``: in the YAML/JSON file of ``span``, the key path ``keyword``
            (``"a.b"``) gets the scalar ``text`` (replaced in place when present, else added
            to its mapping);
        ``"launch_set"``: in the launch command at ``span`` (a shell file), option ``keyword``
            gets the value ``text`` (replaced, or appended to the command), as the program
            receives it: the applier shell-quotes it where the shell would split or expand it.
    """

    kind: str
    span: Span
    text: str = ""
    keyword: str | None = None


@dataclass(frozen=True)
class Fix:
    """A rule's fix as source changes: a title for the summary (``"set
    gradient_checkpointing=True"``), its :class:`FixSafety` and the :class:`EditOp` s, applied
    together or not at all."""

    title: str
    safety: FixSafety
    ops: tuple[EditOp, ...]


@dataclass(frozen=True)
class TextEdit:
    """A resolved edit: the text from (``line``, ``column``) up to (``end_line``,
    ``end_column``) (1-based, end exclusive; equal positions insert) of ``path`` becomes
    ``new_text``. What JSON ``fix.edits`` and SARIF ``artifactChanges`` carry."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


@dataclass(frozen=True)
class Finding:
    """One problem found in one setup.

    Attributes:
        code: the stable rule code (``LL001``).
        name: the rule's kebab-case name (``gradient-checkpointing-off``).
        severity: see :class:`Severity`.
        span: where the problem is; suppression comments are matched against its lines.
        message: one or two sentences: what is wrong and what it costs.
        fix: the complete remedy in words (code to add or change), or ``None``.
        estimate: memory figures; ``None`` only for findings not about a setup (LL000).
        rests_on: what the finding depends on that the user did not write (library defaults,
            assumptions), so they can judge it.
        related: other places the finding rests on (:class:`RelatedLocation`): the launch
            command of the run, a launch line or config line a value came from.
        autofix: the fix as source changes (:class:`Fix`), or ``None`` when the rule offers
            none that is right in general; ``fix`` keeps the remedy in words.
    """

    code: str
    name: str
    severity: Severity
    span: Span
    message: str
    fix: str | None = None
    estimate: MemoryFigures | None = None
    rests_on: tuple[str, ...] = ()
    related: tuple[RelatedLocation, ...] = ()
    autofix: Fix | None = None

    def sort_key(self) -> tuple:
        """Deterministic order: path, cell, line, column, code, message."""
        s = self.span
        return (s.path, s.cell or 0, s.line, s.column, self.code, self.message)


@dataclass(frozen=True)
class FileError:
    """A file that could not be (fully) linted: unreadable, too large, internal error.

    ``code`` is ``LL998`` for input problems lintlora reports as a diagnostic (unreadable,
    too large, not a training config) and ``LL999`` for an internal error (a bug in lintlora;
    the exit status is then 2).
    """

    path: str
    message: str
    code: str = "LL998"
    line: int | None = None
    column: int | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form used in the ``errors`` list of ``--format json``."""
        return {"code": self.code, "path": self.path, "line": self.line, "column": self.column,
                "message": self.message}
