"""The click application behind the ``lintlora`` command (see :mod:`lintlora.cli`).

``lintlora [OPTIONS] PATH...`` lints (it is the ``check`` command: a first argument that is not
a command name is taken as the start of a lint), and the commands are ``lintlora rules``,
``lintlora explain CODE`` and ``lintlora estimate ...`` (registered from
:mod:`lintlora.estimate.command` when that module is present). Heavy modules (rich, libcst,
yaml, the rules) are imported inside the commands, when they run.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from lintlora import __version__
from lintlora.argv import PATHS_LAST_FLAG, PathsFirstCommand
from lintlora.cli_numbers import BoundedInt, parse_count
from lintlora.findings import Severity
from lintlora.limits import MAX_CPUS, MAX_JOBS, MAX_PARAMS, MAX_TOKENS

__all__ = ["app", "parse_count"]

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# ---- value parsing ---------------------------------------------------------------------------

def _codes(values: tuple[str, ...]) -> tuple[str, ...] | None:
    if not values:
        return None
    from lintlora.config import parse_codes

    return parse_codes(list(values), "codes")


def _warn_plugin_problems() -> None:
    """Tell the user (on stderr) about rule plugins that could not be loaded; not fatal."""
    try:
        from lintlora.rules import load_problems
    except ImportError:  # pragma: no cover - the registry is part of lintlora
        return
    from lintlora.report.escape import for_terminal

    for problem in load_problems():
        click.echo(f"lintlora: warning: {for_terminal(problem)}", err=True)


def _known_codes() -> list[str]:
    from lintlora.engine import SYNTAX_ERROR_CODE, available_rules

    codes = {getattr(r, "code", "") for r in available_rules()}
    codes.add(SYNTAX_ERROR_CODE)
    return sorted(c for c in codes if c)


# ---- the group -------------------------------------------------------------------------------

_IMPLICIT_CHECK = "lintlora.implicit_check"
"""``Context.meta`` key: the user typed no command, so ``check`` was put in front of the
arguments (usage and "Try ... for help" lines then leave the word ``check`` out)."""


class _CheckContext(click.Context):
    """The ``check`` command's context: when the user typed no command (``lintlora --gpu t4
    train.py``), its command path is the program's own, so usage errors read ``Usage:
    lintlora [OPTIONS] PATH...`` and ``Try 'lintlora -h' for help.``, the way it was typed."""

    @property
    def command_path(self) -> str:
        if self.meta.get(_IMPLICIT_CHECK) and self.parent is not None:
            return self.parent.command_path
        return super().command_path


class _CheckCommand(PathsFirstCommand):
    """The ``check`` command, in a :class:`_CheckContext`; an argument naming an existing file
    is a path, never an option (:mod:`lintlora.argv`), and ``--paths-last`` makes every
    argument from the first path on a path (the pre-commit hook's entry)."""

    context_class = _CheckContext
    paths_last_flag = PATHS_LAST_FLAG


class _LintloraGroup(click.Group):
    """A group whose default command is ``check``: ``lintlora train.py`` = ``lintlora check
    train.py``, while ``lintlora rules`` runs the ``rules`` command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # a file named --help or --version (pre-commit passes file names as they are) is a
        # path to lint, not the group's option (lintlora.argv)
        if not args or (self.get_command(ctx, args[0]) is None
                        and (args[0] not in ("-h", "--help", "--version")
                             or os.path.lexists(args[0]))):
            args = ["check", *args]
            ctx.meta[_IMPLICIT_CHECK] = True  # shared with the check command's context
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name == "estimate":
            return _estimate_command()
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        if _estimate_available():
            names.add("estimate")
        return sorted(names)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        check = super().get_command(ctx, "check")
        formatter.write_usage("lintlora", "[OPTIONS] PATH...")
        formatter.write_usage("lintlora", "COMMAND [ARGS]...", prefix="   or: ")
        if check is not None:
            sub = click.Context(check, info_name="lintlora", parent=None, **_CONTEXT)
            check.format_help_text(sub, formatter)
            check.format_options(sub, formatter)
        self.format_commands(ctx, formatter)


def _estimate_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("lintlora.estimate.command") is not None
    except (ImportError, ValueError):
        return False


def _estimate_command() -> click.Command | None:
    """``lintlora.estimate.command.estimate_cmd`` if that module exists (task A's)."""
    import importlib

    try:
        module = importlib.import_module("lintlora.estimate.command")
    except ModuleNotFoundError as exc:
        if exc.name in ("lintlora.estimate", "lintlora.estimate.command"):
            return None
        raise
    command = getattr(module, "estimate_cmd", None)
    return command if isinstance(command, click.Command) else None


@click.group(cls=_LintloraGroup, context_settings=_CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="lintlora",
                      message="%(prog)s %(version)s")
def app() -> None:
    """Lint LoRA/QLoRA training scripts and configs, with estimated peak GPU memory."""


# ---- check (the default command) ---------------------------------------------------------------

def _validate_gpu(name: str) -> str | None:
    """Check a GPU name; returns the catalog's note for an ambiguous name.

    Raises:
        LookupError: an unknown name (message lists close matches).
    """
    from lintlora.estimate.gpus import find_gpu

    gpu = find_gpu(name)
    return getattr(gpu, "ambiguity_note", None)


def _cli_values(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``Settings`` fields the user set on the command line (validated)."""
    from lintlora.config import ConfigError, parse_file_size, validate_codes
    from lintlora.settings import parse_memory_size

    values: dict[str, Any] = {}
    known = None
    for option, field in (("select", "select"), ("ignore", "ignore"),
                          ("extend_select", "extend_select")):
        codes = _codes(opts[option])
        if codes is None:
            continue
        known = known if known is not None else _known_codes()
        try:
            validate_codes(codes, known, f"--{option.replace('_', '-')}")
        except ConfigError as exc:
            raise click.BadParameter(str(exc).split(": ", 1)[1], param_hint=f"--{option.replace('_', '-')}")
        values[field] = codes
    for option in ("gpu", "gpu_memory", "model", "params", "tokens", "max_file_size"):
        if opts[option] is not None and not opts[option].strip():
            # an empty value (`--gpu ""`, an unset shell variable) must not silently mean
            # "no GPU": it is a mistake to report
            raise click.BadParameter("must not be empty", param_hint=f"--{option.replace('_', '-')}")
    if opts["gpu"]:
        try:
            note = _validate_gpu(opts["gpu"])
        except LookupError as exc:
            raise click.BadParameter(str(exc).strip("'\""), param_hint="--gpu") from None
        if note:
            click.echo(f"lintlora: note: {note}", err=True)
        values["gpu"] = opts["gpu"]
    if opts["gpu_memory"]:
        try:
            values["gpu_memory_bytes"] = parse_memory_size(opts["gpu_memory"])
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--gpu-memory") from None
    if opts["model"]:
        values["model"] = opts["model"]
    if opts["model_config"]:
        values["model_config"] = opts["model_config"]
    if opts["params"]:
        try:
            values["params"] = parse_count(opts["params"], MAX_PARAMS)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--params") from None
    if opts["cpus"] is not None:
        values["cpus"] = opts["cpus"]
    if opts["tokens"]:
        try:
            values["tokens"] = int(parse_count(opts["tokens"], MAX_TOKENS))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--tokens") from None
    if opts["fail_on"]:
        values["fail_on"] = Severity(opts["fail_on"])
    if opts["max_file_size"]:
        try:
            values["max_file_bytes"] = parse_file_size(opts["max_file_size"])
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--max-file-size") from None
    if opts.get("assume_version"):
        from lintlora.estimate.knob_flags import versions_from_flags

        values["assume_versions"] = versions_from_flags(opts["assume_version"])  # BadParameter
    if opts["exclude"]:
        from lintlora.config import anchor_pattern

        values["exclude"] = tuple(anchor_pattern(p, os.getcwd()) for p in opts["exclude"])
    return values


def _check_config_gpu(config: Any) -> None:
    """Validate the ``gpu`` key of a configuration file when it is first used."""
    from lintlora.config import ConfigError

    name = config.values.get("gpu")
    if not name:
        return
    try:
        note = _validate_gpu(name)
    except LookupError as exc:
        raise ConfigError(f"{config.path}: [tool.lintlora] gpu: {str(exc).strip(chr(39) + chr(34))}") from None
    if note:
        from lintlora.report.escape import for_terminal

        click.echo(f"lintlora: note: {for_terminal(config.path)}: {for_terminal(note)}", err=True)


def _say_configs(resolver: Any, paths: list[str], verbose: bool) -> None:
    """Which ``[tool.lintlora]`` configuration applied, on stderr: with ``--verbose`` always
    (each file used, or that none was found); otherwise only for a file found outside any
    repository in a folder above the current one and above every path given
    (``/tmp/pyproject.toml``), which would otherwise apply silently. Files are found up to the repository's top
    (:func:`lintlora.config.search_boundary`)."""
    from lintlora.config import search_boundary
    from lintlora.report.escape import for_terminal

    configs = resolver.configs
    if verbose:
        if not resolver.use_config:
            click.echo("lintlora: configuration: none (--no-config)", err=True)
        elif not configs:
            tops = sorted({search_boundary(p) or "the file-system root" for p in paths})
            click.echo(f"lintlora: configuration: no [tool.lintlora] found (searched up to "
                       f"{for_terminal(', '.join(tops))})", err=True)
        for config in configs:
            click.echo(f"lintlora: configuration: {for_terminal(config.path)}", err=True)
        return
    from lintlora.safeio import is_within

    # the folders the user pointed at: the current one and each path given
    chosen = [os.getcwd()] + [p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
                              for p in paths]
    for config in configs:
        if config is resolver.fixed or search_boundary(config.path) is not None:
            continue
        if not any(is_within(config.root, folder) for folder in chosen):  # above them all
            click.echo(f"lintlora: note: using the configuration in {for_terminal(config.path)}, found "
                       f"above the linted paths outside any repository (--no-config ignores "
                       f"it, --config names another)", err=True)


def _fail(message: str) -> None:
    """Print ``lintlora: error: MESSAGE`` on stderr (escaped: it may name a file of the pull
    request, and stderr is in the CI log too) and exit with status 2."""
    from lintlora.report.escape import for_terminal

    click.echo(f"lintlora: error: {for_terminal(message)}", err=True)
    sys.exit(2)


class _LintPath(click.Path):
    """A path to lint: it must exist (click's check and message), except that a symbolic link
    leading nowhere (dangling, or a loop) is accepted, so the run reports it as a file that
    cannot be read (``LL998``, exit status 1) and still lints the other paths."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if (isinstance(value, (str, os.PathLike)) and os.path.islink(value)
                and not os.path.exists(value)):
            return value
        return super().convert(value, param, ctx)


@app.command("check", cls=_CheckCommand, context_settings=_CONTEXT)
@click.argument("paths", nargs=-1, metavar="PATH...",
                type=_LintPath(exists=True, file_okay=True, dir_okay=True))
@click.option("--gpu", metavar="NAME",
              help="GPU to check against: a catalog name (rtx3090, a100-80gb, t4) or an "
                   "nvidia-smi name.")
@click.option("--gpu-memory", metavar="SIZE", help="Usable GPU memory, e.g. 24GiB, at most 1 PiB (overrides the catalog).")
@click.option("--model", metavar="HUB_ID",
              help="Model to assume where the script does not name one: it reads the model "
                   "from its arguments (an argparse/dataclass/environment default, sys.argv) "
                   "or lintlora cannot resolve it. A model the code or config names is kept, "
                   "unless lintlora has no architecture for it.")
@click.option("--model-config", type=click.Path(exists=True), metavar="PATH",
              help="Local config.json describing the model's architecture, used where "
                   "--model would be (not for a model the script names and lintlora knows).")
@click.option("--params", metavar="COUNT", help="Parameter count of an unknown model (7B, at most 1e15) for a rough estimate.")
@click.option("--cpus", type=BoundedInt(min=1, max=MAX_CPUS), metavar="N",
              help="Host CPU count (LL007 compares DataLoader workers with it).")
@click.option("--tokens", metavar="N", help="Training-set size in tokens, at most 1e15 (for the time estimate).")
@click.option("--assume-version", "assume_version", multiple=True, metavar="PKG=VER",
              help="A library release the run uses (transformers=4.46, bitsandbytes=0.41.1; repeatable): "
                   "overrides [tool.lintlora] versions and the versions read from the project's "
                   "requirements, pyproject.toml and lock files.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github", "markdown",
                                                  "rdjson", "gitlab", "junit", "concise"]),
              default="text", show_default=True,
              help="Output format: text, json, sarif (code scanning), github (annotations), "
                   "markdown (a PR comment), rdjson (reviewdog), gitlab (Code Quality), "
                   "junit (JUnit XML), concise (one line per finding).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write the report to FILE instead of standard output: a regular file (never "
                   "one of the linted files or one git tracks, unless --force), /dev/null, "
                   "/dev/stdout or /dev/stderr.")
@click.option("--force", is_flag=True,
              help="Let -o overwrite a file that is one of the linted files or tracked by git.")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these rules (comma list of codes or prefixes; replaces the config's).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules (comma list).")
@click.option("--extend-select", multiple=True, metavar="CODES",
              help="Add rules to the selection (comma list).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip paths matching GLOB (adds to the config's exclude).")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]),
              help="Lowest severity that makes the exit status 1 [default: info].")
@click.option("--show-setup", is_flag=True,
              help="Print the extracted training setups instead of findings.")
@click.option("--diff-only", "--changed-since", "diff_ref", metavar="REF",
              help="Report only findings on lines changed since git REF (review-bot mode).")
@click.option("--fix", "fix", is_flag=True,
              help="Apply the safe autofixes, lint again and report what remains.")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix/--diff, also apply the unsafe fixes (they change what trains or "
                   "the numerics); alone, show which findings have one.")
@click.option("--diff", "fix_diff", is_flag=True,
              help="Print the unified diff --fix would write and change nothing (exit status "
                   "1 when it would change something).")
@click.option("--fix-only", is_flag=True,
              help="Apply the fixes as --fix does, and report no findings (exit status 0).")
@click.option("--show-fixes", is_flag=True,
              help="List the fixes applied (with --fix) or available, per finding.")
@click.option("--max-file-size", metavar="SIZE", help="Skip files larger than SIZE (e.g. 5MiB, at most 1GiB) [default: 5MiB].")
@click.option("--jobs", "-j", type=BoundedInt(min=1, max=MAX_JOBS), metavar="N",
              help="Worker processes for many files [default: one per CPU].")
@click.option("--cache-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Results cache folder [default: $XDG_CACHE_HOME/lintlora or ~/.cache/lintlora].")
@click.option("--no-cache", is_flag=True, help="Do not read or write the results cache.")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              metavar="PATH", help="Use this pyproject.toml's [tool.lintlora] for every path.")
@click.option("--no-config", is_flag=True, help="Ignore [tool.lintlora] configuration files.")
@click.option("--color/--no-color", default=None, help="Force colour on or off [default: on a terminal].")
@click.option(PATHS_LAST_FLAG, is_flag=True, expose_value=False,
              help="Every argument from the first path on is a path, even one that looks like an "
                   "option (the pre-commit hook passes it: its args, then the file names).")
@click.option("--verbose", is_flag=True,
              help="Also note each named YAML/JSON file skipped as no training config (by "
                   "default noted only when it is the one path given), and say which "
                   "[tool.lintlora] configuration applied.")
@click.version_option(__version__, "--version", "-V", prog_name="lintlora",
                      message="%(prog)s %(version)s")
def check(paths: tuple[str, ...], fmt: str, output: str | None, force: bool,
          config_path: str | None,
          no_config: bool, show_setup: bool, diff_ref: str | None, color: bool | None,
          jobs: int | None, cache_dir: str | None, no_cache: bool, verbose: bool,
          fix: bool = False, unsafe_fixes: bool = False, fix_diff: bool = False,
          fix_only: bool = False, show_fixes: bool = False, **opts: Any) -> None:
    """Lint PATH... (files and folders: *.py, *.ipynb, *.yaml, *.yml; .json when named).

    Exit status: 0 nothing at or above --fail-on, 1 findings, 2 a usage error, a report that
    cannot be written (-o refused, a full disk, standard output closed) or an internal error.
    With --fix: the status of what remains; --diff: 1 when it would change something;
    --fix-only: 0.
    """
    if not paths:
        click.echo("lintlora: no paths given; nothing to lint (try `lintlora --help`)", err=True)
        sys.exit(0)
    _check_output_target(output, force, paths)
    if show_setup and fmt not in _SHOW_SETUP_FORMATS:
        raise click.UsageError(f"--show-setup prints {' or '.join(_SHOW_SETUP_FORMATS)}, not "
                               f"--format {fmt} (that format is for findings)")
    from lintlora.cli_fix import FixOptions

    fixing = FixOptions(fix, fix_only, fix_diff, unsafe_fixes, show_fixes)
    if show_setup and (fixing.active or show_fixes):
        raise click.UsageError("--show-setup prints the setups; it does not fix (leave out "
                               "--fix, --fix-only, --diff, --show-fixes)")
    if fix_diff and fixing.fix:
        raise click.UsageError("--diff shows what --fix would change: give one of them")
    from lintlora.config import ConfigError, SettingsResolver
    from lintlora.engine import lint_paths

    values = _cli_values(opts)
    _warn_plugin_problems()
    try:
        resolver = SettingsResolver(values, config_path=config_path, use_config=not no_config,
                                    known_codes=_known_codes(), on_config=_check_config_gpu)
        for path in paths:  # read the configurations up front, so their errors come first
            resolver.for_path(path)
        if not no_cache and cache_dir is None:
            from lintlora.cache import default_cache_dir

            cache_dir = default_cache_dir()

        def lint() -> Any:
            return lint_paths(list(paths), settings_for=resolver.for_path, jobs=jobs,
                              cache_dir=None if no_cache else cache_dir, keep_setups=show_setup,
                              verbose=verbose)

        result = lint()
    except ConfigError as exc:
        _fail(str(exc))
        return
    from lintlora.report.escape import for_terminal

    _say_configs(resolver, list(paths), verbose)
    problem = getattr(result.stats, "cache_problem", None)
    if problem:
        click.echo(f"lintlora: warning: {for_terminal(problem)}", err=True)

    def narrowed(result: Any) -> Any:
        """``--diff-only``: the findings on the lines changed since REF (and only those are
        fixed by --fix/--diff)."""
        if not diff_ref:
            return result
        from lintlora.gitdiff import GitDiffError, changed_lines, filter_result

        linted = set(result.files) | {f.span.path for f in result.findings} | \
            {e.path for e in result.errors if e.path and os.path.exists(e.path)}
        try:
            inputs = sorted({p for ins in getattr(result, "inputs", {}).values() for p in ins})
            changed = changed_lines(diff_ref, paths=sorted(linted), inputs=inputs) \
                if linted else {}
        except GitDiffError as exc:
            raise click.BadParameter(for_terminal(str(exc)), param_hint="--diff-only") from None
        return filter_result(result, changed)

    result = narrowed(result)
    fixed_status = None
    applied: list = []
    if fixing.active:
        from lintlora.cli_fix import run_fix_modes

        result, fixed_status, applied = run_fix_modes(
            fixing, result, lambda: narrowed(lint()), resolver.for_path)

    status = _show_setup_exit_code(result) if show_setup else result.exit_code()
    if fixed_status is not None:
        status = fixed_status
    if not (fixing.diff or fixing.fix_only):
        def fixable(finding: Any) -> str | None:
            """The text report's ``[*]`` (lintlora.autofix.fix_mode, loaded only for a finding
            that has a fix: a plain lint of a clean file never imports the fixing modules)."""
            if finding.autofix is None:
                return None
            from lintlora.autofix import fix_mode

            return fix_mode(finding, resolver.for_path(finding.span.path))

        _write_report(result, fmt, output, force, show_setup, color, paths, status,
                      fixable=fixable)
    if not show_setup and (fixing.active or fixing.show or fixing.unsafe):
        # a plain lint prints no fix summary (and loads none of the fixing modules)
        from lintlora.cli_fix import summary

        summary(fixing, result, applied, resolver.for_path)
    if output and fmt != "text":
        # a short human line on stderr so CI logs show what happened
        click.echo(f"lintlora: {len(result.findings)} finding(s) in {len(result.files)} file(s); "
                   f"report written to {for_terminal(output)}", err=True)
    sys.exit(status)


def _linted_inputs(paths: tuple[str, ...], result: Any) -> list[str]:
    """The paths the report must never replace: those given, and every file the run read,
    could not read, or noted."""
    inputs = list(paths) + list(result.files)
    inputs += [item.path for item in (*result.errors, *result.notices) if item.path]
    # the files the runs read: a launch file, the configs it names (RunResult.inputs)
    inputs += [p for read in getattr(result, "inputs", {}).values() for p in read]
    return inputs


def _write_report(result: Any, fmt: str, output: str | None, force: bool, show_setup: bool,
                  color: bool | None, paths: tuple[str, ...], status: int,
                  fixable: Any = None) -> None:
    """Write the report to ``-o`` (:func:`lintlora.output.open_report`) or standard output.

    Exits with status 2 and a message naming the target when it is refused or a write fails
    (a full disk, a closed standard output); a closed pipe on standard output (``| head -1``)
    ends the run quietly with the run's own ``status``.
    """
    from lintlora.output import Report, OutputError, describe_write_error, open_report, \
        silence_stdout

    if output:
        try:
            report = open_report(output, inputs=_linted_inputs(paths, result), force=force)
        except OutputError as exc:
            _fail(f"-o: {exc}")
            return
    else:
        report = Report(sys.stdout, owned=False)
    stream = report.stream
    try:
        try:
            if show_setup:
                _show_setups(result, fmt, stream, color)
            else:
                from lintlora.report import render

                render(result, fmt, stream, color=color, fixable=fixable)
            stream.flush()
        finally:
            if report.owned:
                stream.close()
    except BrokenPipeError:
        if stream is sys.stdout:
            silence_stdout()
            sys.exit(status)  # the reader stopped reading (`| head -1`): no message
        _fail(f"cannot write the report to {output or 'standard output'}: the reader went away")
    except OSError as exc:
        _fail(f"cannot write the report to {output or 'standard output'}: "
              f"{describe_write_error(exc)}")


def _check_output_target(output: str | None, force: bool, paths: tuple[str, ...]) -> None:
    """Before linting, refuse a report target that cannot be used: standard output closed
    (``>&-``) without ``-o``, or ``-o`` naming a file given to lint or tracked by git (without
    ``--force``). The full check, with every file the run read, is made again when the report
    is opened (:func:`lintlora.output.open_report`). Exits with status 2 and a message."""
    from lintlora.output import ClosedStream, protected_reason

    if output is None:
        if isinstance(sys.stdout, ClosedStream):
            _fail("standard output is closed: there is nowhere to print the report "
                  "(give -o FILE)")
        return
    if not force:
        reason = protected_reason(output, paths)
        if reason:
            _fail(f"-o: refusing to overwrite {output}: it is {reason} (pass --force to "
                  f"overwrite it anyway)")


_SHOW_SETUP_FORMATS = ("text", "json")


def _show_setup_exit_code(result: Any) -> int:
    """``--show-setup``'s exit status, as linting's for files that could not be read:
    2 after an internal error; 1 when a file could not be parsed (an ``LL000`` finding) or
    read (``LL998``); else 0. Findings of the rules do not count (none are printed)."""
    from lintlora.engine import INPUT_ERROR_CODE, SYNTAX_ERROR_CODE

    if result.internal_error:
        return 2
    if any(f.code == SYNTAX_ERROR_CODE for f in result.findings) or \
            any(e.code == INPUT_ERROR_CODE for e in result.errors):
        return 1
    return 0


def _syntax_error_json(finding: Any) -> dict:
    """An ``LL000`` finding as an ``errors`` entry of ``--show-setup --format json`` (the shape
    of the lint report's ``errors``: code, path, line, column, message; ``cell`` in notebooks)."""
    from lintlora.report.locations import display_path

    item = {"code": finding.code, "path": display_path(finding.span.path),
            "line": finding.span.line, "column": finding.span.column,
            "message": finding.message}
    if finding.span.cell is not None:
        item["cell"] = finding.span.cell
    return item


def _show_setups(result: Any, fmt: str, stream: Any, color: bool | None) -> None:
    """``--show-setup``: the extracted setups (task B's renderer), and any errors: files that
    could not be parsed (``LL000``) and files that could not be read (``LL998``/``LL999``)."""
    try:
        from lintlora.report.setup_table import render_setups, setups_to_json
    except ModuleNotFoundError as exc:
        if exc.name != "lintlora.report.setup_table":
            raise
        raise click.UsageError("--show-setup is not available in this build "
                               "(lintlora.report.setup_table is missing)") from None

    setups = [s for path in sorted(result.setups) for s in result.setups[path]]
    if fmt == "json":
        from lintlora.report.escape import json_dumps
        from lintlora.report.json_out import error_to_json

        syntax = [_syntax_error_json(f) for f in result.findings if f.code == "LL000"]
        errors = sorted(syntax + [error_to_json(e) for e in result.errors],
                        key=lambda e: (e["path"] or "", e["line"] or 0, e["code"]))
        stream.write(json_dumps({"version": __version__, "setups": setups_to_json(setups),
                                 "errors": errors}) + "\n")
        return
    from lintlora.report.text import make_console

    is_terminal = getattr(stream, "isatty", lambda: False)()
    # piped or written to a file: never wrap, so each setting is one whole line that grep and
    # diff see entire (a wrapped "from" cell splits its sentence over lines); at a terminal
    # the tables wrap to its width, whole words kept
    console = make_console(stream, color, width=None if is_terminal else _UNWRAPPED_WIDTH)
    render_setups(setups, console)
    if not setups:
        console.print("No training setup found.")
    from lintlora.report.escape import for_terminal, terminal_line

    for finding in result.findings:
        if finding.code == "LL000":
            from lintlora.report import location

            console.print(terminal_line(f"{for_terminal(location(finding))} LL000 syntax-error "
                                        f"{for_terminal(finding.message)}"))
    for error in result.errors:
        console.print(terminal_line(f"{for_terminal(error.path)} {for_terminal(error.code)} "
                                    f"{for_terminal(error.message)}"))


_UNWRAPPED_WIDTH = 100_000
"""Console width for ``--show-setup`` written to a pipe or file: wide enough that no cell
wraps (tables take only the width their content needs)."""


# ---- rules and explain -------------------------------------------------------------------------

@app.command("rules", context_settings=_CONTEXT)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def rules_cmd(fmt: str) -> None:
    """List the rules: code, name, default severity and summary (plugins included)."""
    from lintlora.engine import available_rules
    from lintlora.report import rule_metadata

    rows = []
    _warn_plugin_problems()
    for rule in available_rules():
        meta = rule_metadata(rule)
        module = getattr(rule, "__module__", "") or ""
        meta["origin"] = "built-in" if module.startswith("lintlora.") else f"plugin ({module.split('.')[0]})"
        meta["fix"], meta["fixes"] = _rule_fix_column(rule)
        rows.append(meta)
    if fmt == "json":
        import json

        click.echo(json.dumps([{k: r[k] for k in ("code", "name", "severity", "fix", "fixes",
                                                   "summary", "help_uri", "origin")}
                               for r in rows], indent=2))
        return
    width_code = max([len(r["code"]) for r in rows] + [4])
    width_name = max([len(r["name"]) for r in rows] + [4])
    click.echo(f"{'CODE':<{width_code}}  {'NAME':<{width_name}}  {'SEVERITY':<8}  {'FIX':<6}  "
               f"SUMMARY")
    for r in rows:
        plugin = f"  [{r['origin']}]" if r["origin"] != "built-in" else ""
        click.echo(f"{r['code']:<{width_code}}  {r['name']:<{width_name}}  {r['severity']:<8}  "
                   f"{r['fix']:<6}  {r['summary']}{plugin}")


def _rule_fix_column(rule: type) -> tuple[str, dict[str, str]]:
    """``lintlora rules``' Fix column from the rule's ``fixes`` (title -> FixSafety):
    ``"safe"`` when ``--fix`` applies one of its fixes, ``"unsafe"`` when every one needs
    ``--unsafe-fixes``, ``"none"`` when it declares none; and the fixes as title -> safety.
    A plugin's malformed ``fixes`` reads as none."""
    from lintlora.findings import FixSafety

    fixes = getattr(rule, "fixes", None)
    if not isinstance(fixes, dict):
        return "none", {}
    declared = {str(t): s.value for t, s in fixes.items() if isinstance(s, FixSafety)}
    if not declared:
        return "none", {}
    return ("safe" if "safe" in declared.values() else "unsafe"), declared


def _rule_page(code: str, rule: type | None) -> str | None:
    """The Markdown page of a rule or diagnostic (see :func:`lintlora.report.rule_page`)."""
    from lintlora.report import rule_page

    return rule_page(code, rule)


_DIAGNOSTIC_CODES = ("LL998", "LL999")
"""Codes that are no rule but have a page: files that could not be linted."""


@app.command("explain", context_settings=_CONTEXT)
@click.argument("code")
def explain_cmd(code: str) -> None:
    """Print the page of rule CODE (what it flags, why, examples, the fix, how to suppress);
    also the LL998 (input problem) and LL999 (internal error) diagnostics."""
    import difflib

    from lintlora.engine import available_rules
    from lintlora.report import rule_metadata

    code = code.strip().upper()
    rules = {getattr(r, "code", ""): r for r in available_rules()}
    by_name = {getattr(r, "name", ""): c for c, r in rules.items()}
    if code.lower() in by_name:
        code = by_name[code.lower()]
    rule = rules.get(code)
    page = _rule_page(code, rule)
    if rule is None and page is None:
        close = difflib.get_close_matches(code, [*rules, *_DIAGNOSTIC_CODES], n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise click.BadParameter(f"no rule {code!r}{hint}; see `lintlora rules`", param_hint="CODE")
    if page is None:
        meta = rule_metadata(rule)
        page = (f"# {meta['code']} {meta['name']}\n\n{meta['summary']}\n\n"
                f"{meta['description'] if meta['description'] != meta['summary'] else ''}\n\n"
                f"Default severity: {meta['severity']}.\n"
                + (f"\nMore: {meta['help_uri']}\n" if meta["help_uri"] else ""))
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(page))
    else:
        click.echo(page.rstrip("\n"))


# ---- server (issue 18: the editor server) -------------------------------------------------------

_SERVER_INSTALL = "pip install 'lintlora[server]'"


@app.command("server", context_settings=_CONTEXT)
@click.option("--stdio", is_flag=True, help="Speak over standard input and output (the default "
                                             "and only transport; accepted for clients that pass it).")
def server_cmd(stdio: bool) -> None:
    """Run the Language Server Protocol server over stdio: diagnostics, hovers with the memory
    breakdown, and quick fixes in the editor (needs pygls: pip install 'lintlora[server]')."""
    try:
        from lintlora.server import main
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        click.echo(f"lintlora: error: `lintlora server` needs pygls, which is not installed "
                   f"({exc.name}): {_SERVER_INSTALL}", err=True)
        sys.exit(2)
    sys.exit(main())
