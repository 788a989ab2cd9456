"""Discovery: which files a run lints, in which order."""

from __future__ import annotations

import os
import random

import pytest

from lintlora.discovery import SourceFile, discover, file_kind, matches_any


def _touch(path, text="x = 1\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _rel(files, root):
    return [os.path.relpath(f.path, root).replace(os.sep, "/") for f in files]


def test_folder_scan_kinds_and_skips(tmp_path):
    for name in ["train.py", "nb.ipynb", "cfg.yaml", "cfg2.yml", "data.json", "notes.txt",
                 ".hidden.py", ".git/hook.py", ".venv/lib/x.py", "venv/x.py", "build/x.py",
                 "dist/x.py", "node_modules/x.py", "__pycache__/x.py",
                 "lib/site-packages/x.py", "myenv/lib/y.py", "sub/deep/ok.py"]:
        _touch(tmp_path / name)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    files, missing = discover([str(tmp_path)])
    assert missing == []
    assert _rel(files, tmp_path) == ["cfg.yaml", "cfg2.yml", "nb.ipynb", "sub/deep/ok.py",
                                     "train.py"]
    kinds = {os.path.basename(f.path): f.kind for f in files}
    assert kinds == {"cfg.yaml": "yaml", "cfg2.yml": "yaml", "nb.ipynb": "notebook",
                     "ok.py": "python", "train.py": "python"}
    assert not any(f.explicit for f in files)


def test_explicit_files_any_location_and_json(tmp_path):
    hidden = _touch(tmp_path / ".venv" / "x.py")
    data = _touch(tmp_path / "args.json", "{}")
    files, _ = discover([str(hidden), str(data)])
    assert [(os.path.basename(f.path), f.kind, f.explicit) for f in files] == [
        ("x.py", "python", True), ("args.json", "json", True)]  # sorted by path: ".venv" < "args"


def test_explicit_unknown_type_and_shebang(tmp_path):
    script = _touch(tmp_path / "train", "#!/usr/bin/env python3\nimport peft\n")
    other = _touch(tmp_path / "README", "hello\n")
    files, _ = discover([str(script), str(other)])
    assert {os.path.basename(f.path): f.kind for f in files} == {"train": "python", "README": None}
    assert file_kind(str(script), explicit=False) is None


def test_missing_paths_reported(tmp_path):
    files, missing = discover([str(tmp_path / "nope.py")])
    assert files == [] and missing == [str(tmp_path / "nope.py")]


def test_named_file_inside_named_folder_counts_once_as_explicit(tmp_path):
    f = _touch(tmp_path / "a.py")
    files, _ = discover([str(tmp_path), str(f)])
    assert len(files) == 1 and files[0].explicit


def test_order_is_independent_of_listing_order(tmp_path, monkeypatch):
    names = [f"m{i:02d}/f{j}.py" for i in range(8) for j in range(3)]
    for n in names:
        _touch(tmp_path / n)
    baseline, _ = discover([str(tmp_path)])
    real_walk = os.walk

    def shuffled_walk(top, **kw):
        for dirpath, dirnames, filenames in real_walk(top, **kw):
            random.shuffle(dirnames)
            random.shuffle(filenames)
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(os, "walk", shuffled_walk)
    for _ in range(3):
        again, _ = discover([str(tmp_path)])
        assert again == baseline
    # and the order in which paths are given does not matter
    subdirs = [str(tmp_path / f"m{i:02d}") for i in range(8)]
    random.shuffle(subdirs)
    assert [f.path for f in discover(subdirs)[0]] == sorted(f.path for f in baseline)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_loop_does_not_hang(tmp_path):
    _touch(tmp_path / "a" / "train.py")
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    os.symlink(tmp_path / "a", tmp_path / "a" / "self")
    os.symlink(tmp_path / "nowhere.py", tmp_path / "dangling.py")
    os.symlink(tmp_path / "a" / "train.py", tmp_path / "linked.py")
    files, _ = discover([str(tmp_path)])
    assert _rel(files, tmp_path) == ["a/train.py", "linked.py"]


def test_exclude_predicate_prunes_folders_and_named_files(tmp_path):
    _touch(tmp_path / "keep.py")
    _touch(tmp_path / "legacy" / "old.py")
    named = _touch(tmp_path / "skip_me.py")
    seen = []

    def excluded(path):
        seen.append(path)
        return os.path.basename(path) in ("legacy", "skip_me.py")

    files, _ = discover([str(tmp_path), str(named)], excluded)
    assert _rel(files, tmp_path) == ["keep.py"]
    assert not any(p.endswith("old.py") for p in seen)  # the folder was pruned, not walked


@pytest.mark.parametrize("path,patterns,expected", [
    ("legacy/old.py", ["legacy"], True),
    ("src/legacy/old.py", ["legacy"], True),
    ("src/legacy_x/old.py", ["legacy"], False),
    ("src/legacy_x/old.py", ["legacy_*"], True),
    ("nb/a.ipynb", ["*.ipynb"], True),
    ("fixtures/a/b.py", ["fixtures/*"], True),
    ("fixtures/a/b.py", ["fixtures/**"], True),
    ("fixtures/a/b.py", ["fixtures/"], True),
    ("other/fixtures/b.py", ["fixtures/*"], False),
    ("a.py", [], False),
])
def test_matches_any(tmp_path, monkeypatch, path, patterns, expected):
    monkeypatch.chdir(tmp_path)
    assert matches_any(path, patterns) is expected


def test_matches_any_absolute_pattern(tmp_path):
    target = tmp_path / "x" / "y.py"
    pattern = str(tmp_path).replace(os.sep, "/") + "/x/*"
    assert matches_any(str(target), [pattern])
    assert not matches_any(str(tmp_path / "z.py"), [pattern])


def test_sourcefile_is_plain_data():
    a = SourceFile("a.py", "python", True)
    assert a == SourceFile("a.py", "python", True)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_walk_takes_regular_files_only(tmp_path):
    """A FIFO, a socket and a link to a device named like sources are passed over in a walk
    (a walk never opens them); named explicitly they are still listed, for the engine to
    report as LL998."""
    import socket

    _touch(tmp_path / "train.py")
    os.mkfifo(tmp_path / "pipe.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        sock_path = tmp_path / "sock.yaml"
        if len(str(sock_path)) < 100:  # AF_UNIX path length limit
            server.bind(str(sock_path))
        if os.path.exists("/dev/null"):
            os.symlink("/dev/null", tmp_path / "null.py")
        files, _ = discover([str(tmp_path)])
        assert _rel(files, tmp_path) == ["train.py"]
        files, _ = discover([str(tmp_path / "pipe.py")])
        assert [(os.path.basename(f.path), f.kind, f.explicit) for f in files] == [
            ("pipe.py", "python", True)]
    finally:
        server.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_extensionless_pipe_named_explicitly_is_not_opened(tmp_path):
    """The shebang probe of an extensionless file must not open a FIFO (it would block)."""
    import threading

    os.mkfifo(tmp_path / "train")
    found = []
    worker = threading.Thread(target=lambda: found.append(discover([str(tmp_path / "train")])),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(tmp_path / "train", "wb"):
            pass
        pytest.fail("discover() blocked on a named pipe")
    (files, _), = found
    assert [(os.path.basename(f.path), f.kind) for f in files] == [("train", None)]
