"""Extraction: source files -> :class:`lintlora.training_setup.TrainingSetup`.

Each extractor is a pure function ``(path, text) -> list[TrainingSetup]``:

- ``lintlora.extract.python.extract_python`` (LibCST, one parse, one visitor pass);
- ``lintlora.extract.notebook.extract_notebook`` (``.ipynb`` cells as one program);
- ``lintlora.extract.yaml_config.extract_config`` (YAML / JSON training configs, by dialect).

They never import or execute the code they read. Input problems raise :class:`ExtractError`
(a file that cannot be parsed) or :class:`NotATrainingConfig` (a YAML/JSON file of no known
dialect); the engine turns both into diagnostics and goes on with the other files.
"""

from __future__ import annotations

__all__ = ["ExtractError", "NotATrainingConfig", "Setups"]


class Setups(list):
    """The list of setups an extractor returns, with ``notes``: what it left out of the
    analysis under one of its limits (:mod:`lintlora.extract.limits`: "only the first 64
    training setups were analysed"), each reported by the engine as an ``LL998`` notice. A
    plain ``list`` is as good a return value (no notes)."""

    def __init__(self, setups: "list | tuple" = (), notes: "list[str] | tuple" = ()) -> None:
        super().__init__(setups)
        self.notes: list[str] = list(notes)


class ExtractError(Exception):
    """A file could not be parsed. ``line``/``column`` are 1-based, ``None`` when unknown.

    ``code`` is the diagnostic code the engine reports: ``LL000`` (syntax error) by default.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 code: str = "LL000", cell: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.code = code
        self.cell = cell


class NotATrainingConfig(Exception):
    """A YAML/JSON file matched no training-config dialect (reported only when named)."""
