"""Binding a launch's arguments to the options of the script or config it starts (issue 15).

``run.sh`` line 3 ``torchrun --nproc_per_node 4 train.py --fp16 True`` hands ``--fp16 True`` to
``train.py``; this module turns the words after the entry point into a :class:`CommandLine` that
the extractors take (``extract_python(path, text, command_line=...)``,
``extract_config(..., command_line=...)``) and bind exactly as the script's parser would
(:mod:`lintlora.extract.pybind` for Python scripts, :mod:`lintlora.extract.dialects.overrides`
for the YAML dialects' command-line overrides).

It also holds what both binders share: how a word reads in a message (:func:`word_source`),
where a bound value points (:func:`word_span`), and the limits on what is read of a command
line.

This module is in the extraction layer; it imports only the launch data model and the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lintlora.extract.launch_model import Launch, ShellValue
from lintlora.training_setup import Span

__all__ = ["CommandLine", "command_line_of", "word_span", "word_source", "MAX_BOUND_WORDS",
           "MAX_SHOWN_CHARS", "MAX_OPTION_VALUES"]

MAX_BOUND_WORDS = 4_096
"""Words of one command line bound at most. Real launches hand a script a few dozen words
(the longest LLaMA-Factory/transformers example launches have about 80); the words after this
many are not read, and every option they could set is unknown (said so)."""
MAX_SHOWN_CHARS = 120
"""Characters of a word quoted in a value's ``source`` (``"--model_name_or_path meta-llama/...
(run.sh:5)"``); longer words are cut with an ellipsis (the value itself is kept whole)."""
MAX_OPTION_VALUES = 256
"""Values one option takes at most (``nargs="+"``, ``action="append"``, a dotlist list); more
make the value unknown (a real ``--target_modules`` lists under 20 names)."""


@dataclass(frozen=True)
class CommandLine:
    """The words a launch hands to its entry point, with where the launch is.

    Attributes:
        words: the entry point's arguments after the shell's expansions (``ShellValue`` each:
            unknown words stay unknown).
        path: the launch file (absolute when discovery resolved it); ``line`` the 1-based line
            of the command's first word.
        launcher: the launcher (:attr:`lintlora.extract.launch_model.Launch.launcher`).
        subcommand: the CLI subcommand (``train``, ``finetune_lora``), when there is one.
        workdir: the folder the command runs in (absolute; ``None`` when unknown): files the
            command line names by a relative path are read from there (else from the launch
            file's folder).
    """

    words: tuple[ShellValue, ...]
    path: str
    line: int
    launcher: str
    subcommand: str | None = None
    workdir: str | None = None

    @property
    def where(self) -> str:
        """``"run.sh:5"``: the launch file's base name and the command's line."""
        return f"{os.path.basename(self.path)}:{self.line}"

    def folder(self) -> str:
        """Where relative paths on the command line are read from (``workdir``, else the
        launch file's folder)."""
        if self.workdir:
            return self.workdir
        return os.path.dirname(os.path.abspath(self.path)) if self.path else "."


def command_line_of(launch: Launch) -> CommandLine:
    """The :class:`CommandLine` of ``launch`` (its ``argv``, working folder: ``workdir``, else
    the first folder of ``path_search``)."""
    workdir = launch.workdir or (launch.path_search[0] if launch.path_search else None)
    return CommandLine(tuple(launch.argv), launch.path, launch.line, launch.launcher,
                       launch.subcommand, workdir)


def word_span(command_line: CommandLine, word: ShellValue | None) -> Span:
    """Where a bound value points: the launch file, the word's line (the command's line when
    the word has none), the word as written when its column is known (a one-line word),
    else column 1."""
    line = word.line if word is not None and word.line else command_line.line
    if word is not None and word.line and word.column and word.raw and "\n" not in word.raw:
        return Span(command_line.path, word.line, word.column, word.line,
                    word.column + len(word.raw))
    return Span(command_line.path, max(1, line), 1)


def _shown(text: str) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text[:MAX_SHOWN_CHARS + 1])
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 3] + "..."


def word_source(command_line: CommandLine, words: tuple[ShellValue, ...]) -> str:
    """``"--fp16 True (run.sh:5)"``: the words as read (unknown ones as written), with the
    launch file's base name and the line of the last word."""
    shown = " ".join(_shown(w.text if w.text is not None else (w.raw or "?")) for w in words)
    line = next((w.line for w in reversed(words) if w.line), command_line.line)
    return f"{shown} ({os.path.basename(command_line.path)}:{line})"
