"""The ``lintlora`` command (console script ``lintlora = lintlora.cli:main``).

This module stays tiny so that ``lintlora --version`` answers without importing click, rich,
libcst, yaml or the rules; everything else goes to the click application in
:mod:`lintlora.cli_app` (``lintlora.cli.app`` is that click group, for ``CliRunner`` tests).

Exit status: 0 nothing at or above ``--fail-on``; 1 findings (or a file that could not be
read); 2 a usage or configuration error, an output that cannot be written (``-o`` refused, a
full disk, standard output closed: a message on standard error says which), or an internal
error. When the reader of standard output goes away (``lintlora ... | head -1``) the run ends
quietly: a lint with the status it had (0, 1 or 2), the other commands with 1 (click's
convention for a closed pipe).
"""

from __future__ import annotations

import sys
from typing import Sequence

__all__ = ["main", "app"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns (or exits with) the exit status.

    ``argv`` defaults to ``sys.argv[1:]``: that is the console script (and ``python -m
    lintlora``), which then ends the process itself once the output is flushed, without the
    interpreter's teardown (freeing every object of a run, LibCST's trees and classes included,
    costs about 40 ms, a tenth of a one-file run). Called with ``argv`` (tests, other
    programs), it returns or raises ``SystemExit`` as usual.
    """
    if argv is None and "coverage" not in sys.modules:  # coverage.py saves its data at exit
        _collect_only_between_files()
        try:
            status = _main(sys.argv[1:])
        except SystemExit as exc:
            status = exc.code
        _exit_now(status)
    return _main(list(sys.argv[1:] if argv is None else argv))


def _collect_only_between_files() -> None:
    """Turn the garbage collector's automatic collections off for this process.

    Start-up makes no garbage (importing click, LibCST and lintlora creates classes and
    functions that live as long as the process), yet with the default thresholds the collector
    runs about twenty times during it, traversing them. A lint collects between files on its
    own (:func:`lintlora.parallel.tuned_gc`), and after the report the process ends without
    a teardown, so nothing else needs a collection. About 5 ms of a one-file run.
    """
    import gc

    gc.disable()


def _exit_now(status: object) -> None:
    """``sys.exit(status)`` without the interpreter's teardown: flush, then ``os._exit``.

    A failed flush of standard output is reported like any failed write (status 2), except a
    closed pipe, which keeps the status (see the module docstring)."""
    import os

    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:  # sys.exit("message") prints the message and exits with 1
        _write_stderr(f"{status}\n")
        code = 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        pass
    except (OSError, ValueError) as exc:
        _write_stderr(f"lintlora: error: cannot write to standard output: {_why(exc)}\n")
        code = 2
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code & 0xFF)


def _why(exc: BaseException) -> str:
    """A failed write's reason in words (see :func:`lintlora.output.describe_write_error`)."""
    import errno

    if isinstance(exc, OSError):
        return "it is closed" if exc.errno == errno.EBADF else (exc.strerror or str(exc))
    return "it is closed" if isinstance(exc, ValueError) else str(exc)


def _stdout_closed() -> bool:
    """Whether standard output was closed when the process started (``>&-``)."""
    from lintlora.output import ClosedStream

    return isinstance(sys.stdout, ClosedStream)


def _write_stderr(text: str) -> None:
    """Write ``text`` to standard error if it can take it (it may be closed or full)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _main(args: list[str]) -> int:
    import os

    from lintlora.output import reserve_standard_fds

    reserve_standard_fds()  # `lintlora x.py >&-`: no file opened later becomes the output
    if args in (["--version"], ["-V"]) and not os.path.lexists(args[0]):
        from lintlora import __version__

        sys.stdout.write(f"lintlora {__version__}\n")
        return 0
    from lintlora.cli_app import app

    try:
        return app.main(args=args, prog_name="lintlora")
    except BrokenPipeError:
        # the reader went away (click itself turns this into status 1 for the commands; the
        # lint keeps its own status, in cli_app._write_report): stop quietly
        from lintlora.output import silence_stdout

        silence_stdout()
        return 1
    except OSError as exc:
        # the system refused a write or a read (a full disk, standard output closed): a
        # condition of the machine, not a bug of lintlora; the message says which
        import errno

        if _stdout_closed():
            _write_stderr(f"lintlora: error: cannot write to standard output: {_why(exc)}\n")
        elif exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # only writes fail so
            _write_stderr(f"lintlora: error: cannot write the output: {_why(exc)}\n")
        else:
            name = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            _write_stderr(f"lintlora: error: {exc.strerror or exc}{name}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - the last boundary: never a bare traceback
        import traceback

        if os.environ.get("LINTLORA_DEBUG"):
            traceback.print_exc()
        try:
            from lintlora.report.escape import for_terminal
        except Exception:  # noqa: BLE001 - the boundary itself must not fail
            for_terminal = ascii
        where = traceback.extract_tb(exc.__traceback__)[-1]
        _write_stderr(  # the exception's text may quote a file name of the pull request
            f"lintlora: internal error: {type(exc).__name__}: {for_terminal(str(exc))} (at "
            f"{os.path.basename(where.filename)}:{where.lineno}); please report it at "
            f"https://github.com/lintlora/lintlora/issues (set LINTLORA_DEBUG=1 for the "
            f"traceback)\n")
        return 2


def __getattr__(name: str):
    if name == "app":
        from lintlora.cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
