"""The file system misbehaving under the linter (issue 7): symbolic link loops, unreadable
files, files deleted between discovery and reading, named pipes and devices.

Every run here must end (each is run in a thread with a deadline, so a hang fails the test
instead of stalling the suite), report the bad path with a clear ``LL998`` where the user
named or would expect it, and still lint the good files next to it.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

from lintlora.engine import lint_paths
from lintlora.settings import Settings

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
SERIAL = Settings(jobs=1)  # one process, so the patches below apply wherever files are read

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file-system features")


def _lint(paths, deadline: float = 60.0):
    """lint_paths in a thread; fails if it does not return within ``deadline`` seconds."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = lint_paths([str(p) for p in paths], SERIAL)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        pytest.fail(f"lint_paths did not return within {deadline:.0f} s (a hang)")
    if "error" in box:
        raise box["error"]
    result = box["result"]
    assert not result.internal_error, result.errors
    return result


def _good_finding_present(result, folder) -> None:
    good = os.path.join(str(folder), "good.py")
    assert [(f.code, f.span.line) for f in result.findings if f.span.path == good] \
        == [("LL001", 2)]


def _errors(result) -> dict[str, tuple[str, str]]:
    return {os.path.basename(e.path): (e.code, e.message) for e in result.errors}


# ---- symbolic links ------------------------------------------------------------------------

@posix_only
def test_symlink_loops_in_a_scanned_folder_end_and_hide_nothing(tmp_path):
    (tmp_path / "good.py").write_text(TRAIN)
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "inner.py").write_text(TRAIN)
    os.symlink("..", sub / "up")                 # a folder link back to its parent
    os.symlink(str(tmp_path), tmp_path / "pkg" / "root")  # and to the scanned root
    os.symlink("self.py", tmp_path / "self.py")   # a file link to itself
    os.symlink("b.py", tmp_path / "a.py")         # two file links to each other
    os.symlink("a.py", tmp_path / "b.py")
    os.symlink("/nonexistent/x.py", tmp_path / "dangling.py")
    result = _lint([tmp_path], deadline=30)
    _good_finding_present(result, tmp_path)
    assert sorted(os.path.relpath(p, tmp_path) for p in result.files) \
        == ["good.py", os.path.join("pkg", "sub", "inner.py")]  # each file once
    assert result.errors == []  # link loops and dangling links in a scan are skipped quietly


@posix_only
def test_symlink_loop_named_explicitly_is_reported(tmp_path):
    (tmp_path / "good.py").write_text(TRAIN)
    os.symlink("self.py", tmp_path / "self.py")
    result = _lint([tmp_path / "self.py", tmp_path / "good.py"])
    _good_finding_present(result, tmp_path)
    code, message = _errors(result)["self.py"]
    assert code == "LL998" and message


@posix_only
def test_link_to_a_file_is_linted_like_the_file(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "train.py").write_text(TRAIN)
    (tmp_path / "good.py").symlink_to(real / "train.py")
    result = _lint([tmp_path / "good.py"])
    _good_finding_present(result, tmp_path)


# ---- unreadable files -----------------------------------------------------------------------

def _write_protected_proc_file() -> str | None:
    """A file that refuses reading even to root: Linux sysctl files of mode 0200 are checked
    by their own permission function, which grants root no override."""
    for candidate in ("/proc/sys/vm/drop_caches", "/proc/sys/vm/compact_memory"):
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NONBLOCK)
        except PermissionError:
            return candidate
        except OSError:
            continue
        os.close(fd)
    return None


def test_unreadable_file_is_ll998_and_others_still_linted(tmp_path):
    (tmp_path / "good.py").write_text(TRAIN)
    locked = tmp_path / "locked.py"
    if os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() != 0:
        locked.write_text(TRAIN)
        locked.chmod(0)
    else:
        target = _write_protected_proc_file()
        if target is None:
            pytest.skip("running as root and no file refuses root here: permissions cannot "
                        "make a file unreadable (test_simulated_permission_error covers it)")
        locked.symlink_to(target)
    try:
        result = _lint([tmp_path])
    finally:
        if locked.exists() and not locked.is_symlink():
            locked.chmod(0o644)
    _good_finding_present(result, tmp_path)
    code, message = _errors(result)["locked.py"]
    if locked.is_symlink():  # as root: a link into /proc is not followed at all (never read)
        assert code == "LL998" and "not followed" in message and "/proc" in message
    else:
        assert code == "LL998" and "cannot read" in message and "ermission" in message
    assert result.exit_code() == 1


def test_simulated_permission_error_even_for_root(tmp_path, monkeypatch):
    """The same, with the operating system's answer simulated, so it holds as root too."""
    (tmp_path / "good.py").write_text(TRAIN)
    (tmp_path / "locked.py").write_text(TRAIN)
    real_open = os.open

    def refusing_open(path, flags, *args, **kwargs):
        if os.fspath(path).endswith("locked.py"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr("builtins.open", _refusing_builtin_open(open))
    result = _lint([tmp_path])
    _good_finding_present(result, tmp_path)
    assert _errors(result)["locked.py"] == ("LL998", "cannot read: Permission denied")


def _refusing_builtin_open(real_open):
    def refusing(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and os.fspath(file).endswith(
                "locked.py" if isinstance(os.fspath(file), str) else b"locked.py"):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)
    return refusing


# ---- files that vanish --------------------------------------------------------------------

def _before_open(monkeypatch, target, action):
    """Run ``action()`` each time the engine is about to ``os.open`` ``target`` (the last moment
    a file can change under the linter)."""
    real_open = os.open

    def acting_open(path, flags, *args, **kwargs):
        if os.fspath(path) == str(target):
            action()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", acting_open)


def test_file_deleted_between_discovery_and_reading(tmp_path, monkeypatch):
    """Deleted at the last moment: just before the engine opens it."""
    (tmp_path / "good.py").write_text(TRAIN)
    gone = tmp_path / "gone.py"
    gone.write_text(TRAIN)
    _before_open(monkeypatch, gone, lambda: gone.exists() and gone.unlink())
    result = _lint([tmp_path])
    _good_finding_present(result, tmp_path)
    code, message = _errors(result)["gone.py"]
    assert code == "LL998" and "not found" in message and "deleted" in message
    assert str(gone) not in result.files


def test_file_deleted_right_after_discovery(tmp_path, monkeypatch):
    """Deleted as soon as discovery listed it (before any other stage looks at it)."""
    import lintlora.discovery as discovery
    import lintlora.engine as engine

    (tmp_path / "good.py").write_text(TRAIN)
    gone = tmp_path / "gone.py"
    gone.write_text(TRAIN)
    real_discover = discovery.discover

    def discover_then_delete(*args, **kwargs):
        found = real_discover(*args, **kwargs)
        gone.unlink()
        return found

    patched = False
    for module in (engine, discovery):
        if getattr(module, "discover", None) is real_discover:
            monkeypatch.setattr(module, "discover", discover_then_delete)
            patched = True
    assert patched
    result = _lint([tmp_path])
    _good_finding_present(result, tmp_path)
    assert _errors(result)["gone.py"][0] == "LL998"


def test_file_replaced_by_a_folder(tmp_path, monkeypatch):
    (tmp_path / "good.py").write_text(TRAIN)
    swapped = tmp_path / "swapped.py"
    swapped.write_text(TRAIN)

    def swap():
        if swapped.is_file():
            swapped.unlink()
            swapped.mkdir()

    _before_open(monkeypatch, swapped, swap)
    result = _lint([tmp_path])
    _good_finding_present(result, tmp_path)
    code, message = _errors(result)["swapped.py"]
    assert code == "LL998" and "folder" in message


# ---- special files --------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_named_pipe_named_py_does_not_block(tmp_path):
    """Opening a FIFO for reading waits for a writer; the run must not."""
    (tmp_path / "good.py").write_text(TRAIN)
    os.mkfifo(tmp_path / "pipe.py")
    result = _lint([tmp_path], deadline=30)
    _good_finding_present(result, tmp_path)
    # a folder scan takes regular files only: the pipe is passed over, never opened
    assert "pipe.py" not in _errors(result)
    assert not any(p.endswith("pipe.py") for p in result.files)
    result = _lint([tmp_path / "pipe.py"], deadline=30)  # named explicitly: LL998
    code, message = _errors(result)["pipe.py"]
    assert code == "LL998" and "not a regular file" in message and "named pipe" in message


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_device_named_py_is_not_read(tmp_path):
    """A link to /dev/zero would stream forever (size 0 by stat, endless by read)."""
    (tmp_path / "good.py").write_text(TRAIN)
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    result = _lint([tmp_path / "zero.py", tmp_path / "good.py"], deadline=30)
    _good_finding_present(result, tmp_path)
    code, message = _errors(result)["zero.py"]
    assert code == "LL998" and "device" in message


def test_folder_named_like_a_script_is_walked_not_read(tmp_path):
    (tmp_path / "good.py").write_text(TRAIN)
    folder = tmp_path / "looks_like.py"
    folder.mkdir()
    (folder / "inner.py").write_text(TRAIN)
    result = _lint([tmp_path])
    _good_finding_present(result, tmp_path)
    assert str(folder / "inner.py") in result.files and result.errors == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names")
def test_odd_file_names(tmp_path):
    """Names with spaces, newlines, non-ASCII and a leading dash are linted by path."""
    (tmp_path / "good.py").write_text(TRAIN)
    for name in ("with space.py", "new\nline.py", "modèle_é.py", "-dash.py"):
        (tmp_path / name).write_text(TRAIN)
    result = _lint([tmp_path])
    assert len(result.files) == 5 and result.errors == []
    assert {f.code for f in result.findings} == {"LL001"} and len(result.findings) == 5
