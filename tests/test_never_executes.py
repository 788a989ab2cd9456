"""lintlora never runs, imports or evaluates what it lints (issue 7, "never executes").

The linted scripts here would, if anything of them ran, leave traces that a test can see
without trusting lintlora: create marker files, connect to a TCP server the test listens on,
import a module that does not exist (seen by an import hook), print, exit, or loop forever.
They are linted in-process (``lint_paths``) and through the ``lintlora`` command in a child
process, as Python files, a notebook (magics and shell escapes included) and YAML with Python
tags; a local module shadowing ``transformers`` sits next to them. After each run: no marker,
no connection, no import attempt, nothing printed, and the findings are still there (the files
were read, not skipped).
"""

from __future__ import annotations

import importlib.abc
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from lintlora.engine import lint_paths
from lintlora.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISSING = "lintlora_never_imported_module_7f3a"


class _Listener:
    """A TCP server on 127.0.0.1 that counts the connections it receives."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, OSError):
                return count
            conn.close()
            count += 1

    def close(self) -> None:
        self.sock.close()


class _ImportRecorder(importlib.abc.MetaPathFinder):
    """Records every attempt to import a module whose name contains ``MISSING``."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def find_spec(self, fullname, path=None, target=None):  # noqa: D401 - importlib hook
        if MISSING in fullname or fullname.startswith("evil_"):
            self.seen.append(fullname)
        return None


def _effects(marker_dir, port: int) -> str:
    """Top-level code with a visible effect per statement (``M`` = the marker folder); each
    in its own ``try`` so that, were the file run, every one of them would happen."""
    statements = [
        'open(os.path.join(M, "written_by_open"), "w").write("ran")',
        'os.makedirs(os.path.join(M, "made_by_makedirs"))',
        'os.system("touch " + os.path.join(M, "made_by_os_system"))',
        'subprocess.run(["touch", os.path.join(M, "made_by_subprocess")])',
        f'socket.create_connection(("127.0.0.1", {port}), timeout=2).close()',
        f"import {MISSING}",
        f"from {MISSING}.sub import thing",
        f'__import__("{MISSING}_dunder")',
        "exec(\"open(os.path.join(M, 'written_by_exec'), 'w')\")",
        "eval(\"open(os.path.join(M, 'written_by_eval'), 'w')\")",
        'print("EXECUTED-MARKER-7f3a")',
        'os.environ["LINTLORA_EXECUTED_7F3A"] = "1"',
        'def default(path=open(os.path.join(M, "written_by_default_argument"), "w")):\n'
        '        pass',
        '@(lambda f: open(os.path.join(M, "written_by_decorator"), "w"))\n'
        '    def decorated():\n        pass',
        'class Body:\n        handle = open(os.path.join(M, "written_by_class_body"), "w")',
        'if __name__ == "__main__":\n        open(os.path.join(M, "written_by_main_block"), "w")',
    ]
    body = "".join(f"try:\n    {s}\nexcept Exception:\n    pass\n" for s in statements)
    return (f"import os, socket, subprocess, sys\nM = {str(marker_dir)!r}\n" + body
            + "sys.exit(3)\nwhile True:\n    pass\n")


TRAINING = textwrap.dedent("""\
    from transformers import TrainingArguments
    args = TrainingArguments(output_dir="o", gradient_checkpointing=False)
    """)


@pytest.fixture
def hostile_tree(tmp_path):
    """A folder of scripts, a notebook and configs full of side effects, and a marker folder
    (outside the scanned folder) that must stay empty."""
    markers = tmp_path / "markers"
    markers.mkdir()
    scanned = tmp_path / "scanned"
    scanned.mkdir()
    listener = _Listener()
    effects = _effects(markers, listener.port)
    (scanned / "train.py").write_text(effects + TRAINING)
    # modules a careless linter might import while resolving names, each with effects
    (scanned / "transformers.py").write_text(effects)
    (scanned / "evil_helpers.py").write_text(effects)
    (scanned / "uses_helpers.py").write_text("from evil_helpers import *\nimport evil_other\n"
                                             + TRAINING)
    for special in ("conftest.py", "setup.py", "sitecustomize.py", "__init__.py",
                    "__main__.py"):
        (scanned / special).write_text(effects)
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": [f"!touch {markers}/made_by_shell_escape\n",
                    f"%run {scanned}/train.py\n",
                    f"files = !touch {markers}/made_by_shell_assignment\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": [f"%%bash\ntouch {markers}/made_by_cell_magic\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": (effects + TRAINING).splitlines(keepends=True)},
    ]
    (scanned / "notebook.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (scanned / "axolotl.yml").write_text(textwrap.dedent(f"""\
        base_model: meta-llama/Llama-2-7b-hf
        adapter: lora
        lora_r: 8
        gradient_checkpointing: false
        hook: !!python/object/apply:os.system ["touch {markers}/made_by_yaml_tag"]
        """))
    (scanned / "args.yaml").write_text(textwrap.dedent(f"""\
        per_device_train_batch_size: 4
        gradient_checkpointing: false
        evil: !!python/object/new:subprocess.Popen [["touch", "{markers}/made_by_yaml_popen"]]
        """))
    yield scanned, markers, listener
    listener.close()


def _assert_nothing_ran(markers, listener, recorder=None) -> None:
    assert sorted(os.listdir(markers)) == [], "a linted file's code ran"
    assert listener.connections() == 0, "a linted file opened a socket"
    assert "LINTLORA_EXECUTED_7F3A" not in os.environ
    assert not any(MISSING in name for name in sys.modules)
    if recorder is not None:
        assert recorder.seen == [], f"lintlora tried to import {recorder.seen}"


def test_the_detectors_see_a_script_that_runs(hostile_tree):
    """Control: running one of the scripts for real does leave every kind of trace, so the
    checks below could fail."""
    scanned, markers, listener = hostile_tree
    done = subprocess.run([sys.executable, str(scanned / "train.py")], cwd=markers,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "EXECUTED-MARKER" in done.stdout
    made = set(os.listdir(markers))
    assert {"written_by_open", "made_by_os_system", "written_by_exec", "written_by_decorator",
            "written_by_class_body", "written_by_main_block"} <= made
    assert listener.connections() == 1
    for name in made:
        path = markers / name
        os.rmdir(path) if path.is_dir() else path.unlink()


def test_linting_in_process_runs_nothing(hostile_tree, capsys):
    scanned, markers, listener = hostile_tree
    recorder = _ImportRecorder()
    sys.meta_path.insert(0, recorder)
    try:
        result = lint_paths([str(scanned)], Settings(jobs=1))
    finally:
        sys.meta_path.remove(recorder)
    _assert_nothing_ran(markers, listener, recorder)
    captured = capsys.readouterr()
    assert "EXECUTED-MARKER" not in captured.out + captured.err
    # the files were read and checked, not skipped
    found = {(os.path.basename(f.span.path), f.code) for f in result.findings}
    assert ("train.py", "LL001") in found and ("uses_helpers.py", "LL001") in found
    assert ("notebook.ipynb", "LL001") in found
    assert not result.internal_error, result.errors
    by_file = {os.path.basename(f.span.path): f for f in result.findings if f.code == "LL000"}
    assert "unsupported YAML tag" in by_file["axolotl.yml"].message
    assert "unsupported YAML tag" in by_file["args.yaml"].message


def test_the_command_runs_nothing(hostile_tree):
    scanned, markers, listener = hostile_tree
    env = dict(os.environ, PYTHONPATH=REPO)
    # run from inside the scanned folder: a local transformers.py would shadow the library
    # if lintlora imported it from the working directory
    done = subprocess.run([sys.executable, "-m", "lintlora", ".", "--format", "json"],
                          cwd=scanned, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "EXECUTED-MARKER" not in done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert ("train.py", "LL001") in {(f["path"], f["code"]) for f in doc["findings"]}
    _assert_nothing_ran(markers, listener)


def test_show_setup_and_every_format_run_nothing(hostile_tree):
    """Reporters and --show-setup read the same setups; they execute nothing either."""
    scanned, markers, listener = hostile_tree
    env = dict(os.environ, PYTHONPATH=REPO)
    for args in (["--show-setup"], ["--format", "sarif"], ["--format", "markdown"],
                 ["--format", "github"]):
        done = subprocess.run([sys.executable, "-m", "lintlora", "train.py", *args],
                              cwd=scanned, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "EXECUTED-MARKER" not in done.stdout + done.stderr
    _assert_nothing_ran(markers, listener)
