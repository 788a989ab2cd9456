"""What linting one file produced (:class:`FileResult`), and the engine's own diagnostic codes.

The data of the engine layer, below :mod:`lintlora.engine`, :mod:`lintlora.parallel` and
:mod:`lintlora.cache` (which all use it, so none of them imports another for it: DESIGN.md,
"Layers"). Imports only the model layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lintlora.findings import FileError, Finding, Severity
from lintlora.training_setup import TrainingSetup

__all__ = ["FileResult", "SYNTAX_ERROR_CODE", "SYNTAX_ERROR_NAME", "INPUT_ERROR_CODE",
           "INTERNAL_ERROR_CODE", "ISSUES_URL"]

SYNTAX_ERROR_CODE = "LL000"
SYNTAX_ERROR_NAME = "syntax-error"
INPUT_ERROR_CODE = "LL998"
INTERNAL_ERROR_CODE = "LL999"
ISSUES_URL = "https://github.com/lintlora/lintlora/issues"


@dataclass
class FileResult:
    """What linting one file produced (picklable, so a process pool can return it).

    Attributes:
        path: the file as discovered.
        kind: ``python``/``notebook``/``yaml``/``json``, or ``None`` when not read.
        linted: the file was read and checked, a syntax error included (it counts in the run's
            ``files``); ``False`` for unreadable files and for skipped ones.
        findings: after suppression and selection, sorted.
        errors: ``LL998``/``LL999`` diagnostics for this file.
        notices: informational diagnostics (a named YAML file that is no training config).
        setups: the extracted setups (for ``--show-setup``), after ``--model`` overrides.
        cell_lines: notebooks only: code-cell index -> the file line of each of its source
            lines (so SARIF and annotations can point into the ``.ipynb`` file).
        fail_on: the ``fail_on`` of the settings that applied to this file.
        inputs: every other file the result depends on (absolute, present or not, sorted):
            the files each run's setups were read from (``TrainingSetup.inputs``: the launch
            file, the configs it names, a DeepSpeed JSON), the files the architecture lookups
            and estimates consulted (:meth:`lintlora.context.Context.take_inputs`). The results
            cache keys and validates the result by their contents; ``--diff-only`` keeps the
            file's findings when one of them changed.
    """

    path: str
    kind: str | None
    linted: bool = False
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notices: list[FileError] = field(default_factory=list)
    setups: list[TrainingSetup] = field(default_factory=list)
    cell_lines: dict[int, tuple[int, ...]] = field(default_factory=dict)
    fail_on: Severity = Severity.INFO
    inputs: tuple[str, ...] = ()
