"""Command-line arguments that name existing files are paths, never options (issue 12, item 3).

pre-commit runs a hook as ``entry + args + file names`` with no ``--`` before the file names,
and ``xargs`` does the same, so a committed file named ``--exclude=*.py`` or
``--output=.github/workflows/ci.yml`` would otherwise reach click as an option (0 files
checked, or a file overwritten with the report). Before click parses a command's arguments,
:func:`separate_paths` moves every argument that is a path behind one ``--``:

- an argument that does not start with ``-``, or is ``-`` alone, is a path (as for click);
- an argument that starts with ``-`` and names an existing file or folder (``os.path.lexists``:
  a dangling symbolic link counts, as :class:`lintlora.cli_app._LintPath` accepts it) is a
  path, not an option;
- an option's values are never looked at: ``-o out.txt``, ``--gpu t4``, ``--exclude=-x``,
  ``-j4``, and the value of the last option of a short-flag cluster (``-ho x``) stay values,
  even when they name a file or start with ``-``;
- ``--`` ends the options, as for click; what follows is all paths;
- in *paths-last* mode (``lintlora check --paths-last``, the pre-commit hook's entry) the first
  path and everything after it are paths, whatever they look like: the hook's ``args`` come
  first and pre-commit's file names after them, so from the first file name on nothing is an
  option, not even a ``--`` that names a file (it is linted).

Options keep their order and their values, paths keep theirs; click reads options and paths
given in any order the same way (interspersed arguments), so moving the paths after ``--``
changes nothing else. The result lists the option-shaped arguments that were taken as paths,
for a note on standard error.

:func:`option_arity` derives the table of options from a click command, and
:class:`PathsFirstCommand` applies the rule to a click command.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, NamedTuple, Sequence

import click

__all__ = ["SeparatedArgs", "separate_paths", "option_arity", "PathsFirstCommand",
           "PATHS_LAST_FLAG"]

PATHS_LAST_FLAG = "--paths-last"
"""The flag that turns paths-last mode on (the pre-commit hook's entry passes it)."""


class SeparatedArgs(NamedTuple):
    """What :func:`separate_paths` returns."""

    args: list[str]
    """The arguments for click: the options, then ``--`` and the paths when there are any."""
    shadowing: list[str]
    """The option-shaped arguments taken as paths because they name an existing file or
    folder, in the order given."""


def separate_paths(args: Sequence[str], arity: Mapping[str, int], *,
                   exists: Callable[[str], bool] = os.path.lexists,
                   paths_last_flag: str | None = None) -> SeparatedArgs:
    """Split ``args`` into options and paths; see the module docstring for the rules.

    Args:
        args: a command's arguments, as click would get them (no program or command name).
        arity: every option string of the command (``"-o"``, ``"--output"``, ``"--no-cache"``)
            -> how many values it takes (0 for a flag). An option missing from it is taken as a
            flag, and click reports it as unknown.
        exists: whether a string names an existing path (relative to the working directory).
        paths_last_flag: the option that turns paths-last mode on, when the command has one.

    Returns:
        :class:`SeparatedArgs`. The paths are after one ``--`` at the end; when there are none,
        the arguments are the options alone, unchanged.

    The work is one pass over ``args`` (a value is never tested for existence), so it is linear
    in their number.
    """
    options: list[str] = []
    paths: list[str] = []
    shadowing: list[str] = []
    paths_last = False
    position = 0
    count = len(args)
    while position < count:
        arg = args[position]
        position += 1
        if paths_last and paths:
            paths.append(arg)
            continue
        if arg == "--":
            if paths_last and exists(arg):
                paths.append(arg)
            paths.extend(args[position:])
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            continue
        if exists(arg):
            paths.append(arg)
            shadowing.append(arg)
            continue
        options.append(arg)
        if paths_last_flag is not None and arg == paths_last_flag:
            paths_last = True
        wanted = _values_wanted(arg, arity)
        taken = args[position:position + wanted]
        options.extend(taken)
        position += len(taken)
    if not paths:
        return SeparatedArgs(options, shadowing)
    return SeparatedArgs([*options, "--", *paths], shadowing)


def _values_wanted(arg: str, arity: Mapping[str, int]) -> int:
    """How many of the following arguments are values of the option argument ``arg``."""
    if arg.startswith("--"):
        if "=" in arg:  # --name=value: the value is attached
            return 0
        return arity.get(arg, 0)
    # a cluster of short options: -hV, -j4, -o file, -ho file; the first one that takes a
    # value takes the rest of the cluster, or the next argument when the cluster ends there
    for index in range(1, len(arg)):
        wanted = arity.get("-" + arg[index])
        if wanted is None:
            return 0  # an unknown option: click reports it
        if wanted:
            return wanted if index == len(arg) - 1 else wanted - 1
    return 0


def option_arity(command: click.Command, ctx: click.Context | None = None) -> dict[str, int]:
    """Every option string of ``command`` -> the values it takes (0 for a flag); the help
    option included, under the names ``ctx`` gives it (``-h``/``--help`` for lintlora's
    commands; a context of the command's own settings when ``ctx`` is None)."""
    table: dict[str, int] = {}
    context = ctx if ctx is not None else command.make_context(
        command.name, [], resilient_parsing=True)
    for param in command.get_params(context):
        if not isinstance(param, click.Option):
            continue
        wanted = 0 if (param.is_flag or param.count) else max(1, param.nargs)
        for name in (*param.opts, *param.secondary_opts):
            table[name] = wanted
    return table


class PathsFirstCommand(click.Command):
    """A click command whose arguments go through :func:`separate_paths` before parsing.

    An option-shaped argument taken as a path gets a note on standard error, so that a user
    whose own option was shadowed by a file of that name sees why it had no effect.
    """

    paths_last_flag: str | None = None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        separated = separate_paths(args, option_arity(self, ctx),
                                   paths_last_flag=self.paths_last_flag)
        if not ctx.resilient_parsing:
            for arg in separated.shadowing:
                click.echo(f"lintlora: note: {_quoted(arg)} names an existing file or folder, "
                           f"so it is linted as a path, not read as an option", err=True)
        return super().parse_args(ctx, separated.args)


def _quoted(arg: str) -> str:
    """``arg`` for a message: ``repr`` (control characters escaped, never raw)."""
    return repr(arg)
