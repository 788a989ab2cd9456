"""Binding a launch's arguments to the options of the script or config it starts (issue 15).

``run.sh`` line 3 ``torchrun --nproc_per_node 4 train.py --fp16 True`` hands ``--fp16 True`` to
``train.py``; this module turns the words after the entry point into a :class:`CommandLine` that
the extractors take (``extract_python(path, text, command_line=...)``,
``extract_config(..., command_line=...)``) and bind exactly as the script's parser would.

This module is in the extraction layer; it imports only the launch data model.
"""

from __future__ import annotations

from dataclasses import dataclass

from lintlora.extract.launch_model import Launch, ShellValue

__all__ = ["CommandLine", "command_line_of"]


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
    """

    words: tuple[ShellValue, ...]
    path: str
    line: int
    launcher: str
    subcommand: str | None = None


def command_line_of(launch: Launch) -> CommandLine:
    """The :class:`CommandLine` of ``launch`` (its ``argv``)."""
    return CommandLine(tuple(launch.argv), launch.path, launch.line, launch.launcher,
                       launch.subcommand)
