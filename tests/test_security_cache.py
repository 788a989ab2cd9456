"""The results cache against a hostile cache folder (issue 12, item 9).

Whatever is found in the cache folder (an entry rewritten by hand or by a restored CI cache, a
symbolic link or a named pipe where an entry should be, links planted where the cache writes)
never changes a result, never stalls or crashes the run, and never makes lintlora write outside
the folder; an input edited to the same size with its time restored is read again.

Each hostile entry is made from a real entry written by a first run, in a real cache folder
under ``tmp_path``. Where the cache authenticates entries, "forged" entries are re-signed with
the folder's own key (an attacker who holds the whole folder, as a restored CI cache does), so
the checks behind the signature are tested too; "tampered" entries are not re-signed.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import lintlora.cache as cache_module
from lintlora.engine import lint_paths
from lintlora.report import render

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures")
FORMATS = ("json", "sarif", "text", "github", "markdown", "rdjson", "gitlab", "junit",
           "concise")

# one finding (LL001) with an estimate and its breakdown: one entry per run
with open(os.path.join(FIXTURES, "rules", "ll001_bad_qlora_trainer.py"), encoding="utf-8") as _f:
    TRAIN = _f.read()


# ---- helpers -----------------------------------------------------------------------------------

def _reports(result) -> dict[str, str]:
    out = {}
    for fmt in FORMATS:
        buffer = io.StringIO()
        render(result, fmt, buffer)
        out[fmt] = buffer.getvalue()
    return out


def _lint(paths, cache_dir=None):
    return lint_paths([str(p) for p in paths], keep_setups=False, jobs=1,
                      cache_dir=None if cache_dir is None else str(cache_dir))


def _root(cache_dir) -> str:
    return os.path.join(str(cache_dir), f"v{cache_module.FORMAT}")


def _entries(cache_dir) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, files in os.walk(_root(cache_dir))
                  for f in files if f.endswith(".json"))


def _only_entry(cache_dir) -> str:
    (entry,) = _entries(cache_dir)
    return entry


def _secret(cache_dir) -> bytes | None:
    name = getattr(cache_module, "SECRET_NAME", None)
    if name is None:
        return None
    with open(os.path.join(_root(cache_dir), name), "rb") as handle:
        return handle.read()


def _split(raw: bytes) -> tuple[bytes | None, dict]:
    """(signature line or ``None``, the entry's JSON document)."""
    head, sep, body = raw.partition(b"\n")
    if sep and len(head) == 64 and all(c in b"0123456789abcdef" for c in head):
        return head, json.loads(body)
    return None, json.loads(raw)


def _write_entry(path: str, document: dict, cache_dir, *, sign: bool, old_signature=None,
                 text: str | None = None) -> None:
    body = (text if text is not None else
            json.dumps(document, ensure_ascii=True, separators=(",", ":"))).encode("ascii")
    secret = _secret(cache_dir)
    if secret is not None:
        if sign:
            signature = hmac.new(secret, body, hashlib.sha256).hexdigest().encode()
        else:
            signature = old_signature or b"0" * 64
        body = signature + b"\n" + body
    with open(path, "wb") as handle:
        handle.write(body)


def _rewrite(cache_dir, mutate, *, sign: bool) -> None:
    """Apply ``mutate`` to the one entry's result (a dict) and write it back."""
    entry = _only_entry(cache_dir)
    with open(entry, "rb") as handle:
        signature, document = _split(handle.read())
    text = mutate(document["result"])
    _write_entry(entry, document, cache_dir, sign=sign, old_signature=signature,
                 text=None if text is None else text(document))


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.py").write_text(TRAIN)
    return folder


# ---- rewritten entries -------------------------------------------------------------------------

def _drop_findings(result):
    result["findings"] = []


def _move_to_passwd(result):
    result["path"] = "/etc/passwd"
    for finding in result["findings"]:
        finding["span"][0] = "/etc/passwd"


def _move_spans_only(result):
    for finding in result["findings"]:
        finding["span"][0] = "/etc/passwd"


def _huge_integer(result):
    result["findings"][0]["estimate"]["peak_bytes"] = 10**400


def _huge_float(result):
    # json.dumps cannot write 1e400; put the literal in the text (JSON allows it, Python reads inf)
    result["findings"][0]["estimate"]["breakdown"][0][1] = 987654321123
    return lambda document: json.dumps(document, separators=(",", ":")).replace(
        "987654321123", "1e400")


def _nan(result):
    result["findings"][0]["estimate"]["breakdown"][0][1] = float("nan")
    return lambda document: json.dumps(document, separators=(",", ":"))  # writes NaN


def _huge_string(result):
    result["findings"][0]["message"] = "x" * (2 * 2**20)


def _unknown_severity(result):
    result["findings"][0]["severity"] = "fatal"


def _unknown_code(result):
    result["findings"][0]["code"] = "LL999"


def _zero_line(result):
    result["findings"][0]["span"][1] = 0


def _cell_in_a_script(result):
    result["findings"][0]["span"][5] = 3


def _lone_surrogate(result):
    result["findings"][0]["message"] += "\udc80"


def _extra_field(result):
    result["findings"][0]["exec"] = "os.system('id')"


FORGERIES = [_move_to_passwd, _move_spans_only, _huge_integer, _huge_float, _nan, _huge_string,
             _unknown_severity, _unknown_code, _zero_line, _cell_in_a_script, _lone_surrogate,
             _extra_field]


def _no_constant(name):
    raise AssertionError(f"{name} in a JSON report")


@pytest.mark.parametrize("mutate", FORGERIES, ids=lambda f: f.__name__.strip("_"))
def test_a_forged_entry_that_fails_validation_is_a_miss(project, tmp_path, mutate):
    """Re-signed with the folder's own key: only the entry's validation stands in the way."""
    cache = tmp_path / "cache"
    plain = _reports(_lint([project / "train.py"]))
    _lint([project / "train.py"], cache)
    _rewrite(cache, mutate, sign=True)
    again = _lint([project / "train.py"], cache)
    assert _reports(again) == plain
    assert again.stats.cache_hits == 0 and again.stats.cache_stored == 1  # recomputed, replaced
    for text in _reports(again).values():
        assert "passwd" not in text
    # no NaN or Infinity number reaches JSON or SARIF (a message may say "NaN loss": LL017)
    for fmt in ("json", "sarif"):
        json.loads(_reports(again)[fmt], parse_constant=_no_constant)
    assert _lint([project / "train.py"], cache).stats.cache_hits == 1


@pytest.mark.parametrize("mutate", [_drop_findings, _move_to_passwd, _huge_integer],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_tampered_entry_that_is_not_signed_is_a_miss(project, tmp_path, mutate):
    """Rewritten without the key (findings dropped: a valid-looking entry, exit status 0 on
    today's cache): the signature no longer matches."""
    cache = tmp_path / "cache"
    plain_run = _lint([project / "train.py"])
    plain = _reports(plain_run)
    _lint([project / "train.py"], cache)
    _rewrite(cache, mutate, sign=False)
    again = _lint([project / "train.py"], cache)
    assert _reports(again) == plain and again.exit_code() == plain_run.exit_code() == 1
    assert again.stats.cache_hits == 0


# ---- entries that are not regular files --------------------------------------------------------

def _cli(args, cwd, timeout):
    def limit():  # a read of /dev/zero without bound must not take the machine's memory
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes and /dev/zero")
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder", "dangling"])
def test_an_entry_that_is_no_regular_file_is_a_miss_at_once(project, tmp_path, kind):
    cache = tmp_path / "cache"
    args = ["train.py", "--format", "json", "--cache-dir", str(cache), "--jobs", "1"]
    plain = _cli(["train.py", "--format", "json", "--no-cache"], project, 120)
    first = _cli(args, project, 120)
    assert first.stdout == plain.stdout and first.returncode == plain.returncode == 1
    entry = _only_entry(cache)
    os.unlink(entry)
    if kind == "dev-zero":
        os.symlink("/dev/zero", entry)
    elif kind == "fifo":
        os.mkfifo(entry)
    elif kind == "folder":
        os.mkdir(entry)
    else:
        os.symlink(str(tmp_path / "nowhere.json"), entry)
    try:
        again = _cli(args, project, 60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a {kind} entry stalled the run")
    assert again.returncode == plain.returncode, again.stderr[-2000:]
    assert again.stdout == plain.stdout and "Traceback" not in again.stderr


# ---- planted links: nothing is written outside the cache folder --------------------------------

def _outside_files(outside) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, files in os.walk(outside) for f in files)


@pytest.fixture(params=["dir_fd", "paths"])
def folder_mode(request, monkeypatch):
    """Both ways the cache folder is written: relative to folder descriptors (POSIX), and the
    path-based fallback of platforms without ``dir_fd`` (Windows), forced here."""
    folder_module = pytest.importorskip("lintlora.cache_folder")
    if request.param == "paths":
        monkeypatch.setattr(folder_module, "_DIR_FD", False)
        monkeypatch.setattr(folder_module, "_LINK", False)
    return request.param


def test_a_dangling_cachedir_tag_is_not_written_through(project, tmp_path, folder_mode):
    cache = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    cache.mkdir()
    os.symlink(str(outside / "written-by-lintlora"), str(cache / "CACHEDIR.TAG"))
    result = _lint([project / "train.py"], cache)
    assert result.stats.cache_stored == 1
    assert _outside_files(outside) == []


def test_a_planted_temporary_name_is_not_written_through(project, tmp_path, folder_mode):
    cache = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    _lint([project / "train.py"], cache)
    entry = _only_entry(cache)
    os.unlink(entry)
    # the name today's cache writes to before renaming; and a few a random name could take
    for name in (f"{entry}.{os.getpid()}.tmp", f"{entry}.tmp", os.path.join(
            os.path.dirname(entry), "tmp")):
        os.symlink(str(outside / os.path.basename(name)), name)
    again = _lint([project / "train.py"], cache)
    assert again.stats.cache_stored == 1 and os.path.isfile(entry)
    assert _outside_files(outside) == []


@pytest.mark.parametrize("where", ["shard", "format folder"])
def test_a_symlinked_cache_folder_is_not_written_through(project, tmp_path, folder_mode, where):
    cache = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    first = _reports(_lint([project / "train.py"], cache))
    entry = _only_entry(cache)
    folder = os.path.dirname(entry) if where == "shard" else _root(cache)
    shutil.rmtree(folder)
    os.symlink(str(outside), folder)
    again = _lint([project / "train.py"], cache)
    assert _reports(again) == first
    assert _outside_files(outside) == []
    assert again.stats.cache_problem is None and again.stats.cache_stored == 1
    assert not os.path.islink(folder) and _lint([project / "train.py"], cache).stats.cache_hits == 1


# ---- inputs are keyed by their content ---------------------------------------------------------

def _same_size_edit(path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (same length) and put the modification time back."""
    assert len(old) == len(new)
    info = os.stat(path)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert old in text
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert os.stat(path).st_size == info.st_size and os.stat(path).st_mtime_ns == info.st_mtime_ns


def _json_config_project(folder, checkpointing: str):
    shutil.copy(os.path.join(FIXTURES, "python", "json_config_file.py"), folder / "train.py")
    (folder / "configs").mkdir(exist_ok=True)
    config = folder / "configs" / "train_args.json"
    with open(os.path.join(FIXTURES, "python", "configs", "train_args.json")) as handle:
        data = json.load(handle)
    data["gradient_checkpointing"] = "@@"
    config.write_text(json.dumps(data).replace('"@@"', checkpointing))
    return config


def test_a_json_config_edited_to_the_same_size_and_time_is_read_again(tmp_path):
    cache = tmp_path / "cache"
    folder = tmp_path / "project"
    folder.mkdir()
    config = _json_config_project(folder, "false")
    first = _lint([folder / "train.py"], cache)
    assert "LL001" in [f.code for f in first.findings]
    _same_size_edit(config, "false", "true ")
    again = _lint([folder / "train.py"], cache)
    assert _reports(again) == _reports(_lint([folder / "train.py"]))
    assert "LL001" not in [f.code for f in again.findings]


def test_a_model_config_edited_to_the_same_size_and_time_is_read_again(tmp_path):
    cache = tmp_path / "cache"
    folder = tmp_path / "project"
    (folder / "my-model").mkdir(parents=True)
    (folder / "my-model" / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
        "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
        "vocab_size": 32000}))
    (folder / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('./my-model')\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        first = _lint(["train.py"], cache)
        _same_size_edit(folder / "my-model" / "config.json", '"num_hidden_layers": 16',
                        '"num_hidden_layers": 32')
        again = _lint(["train.py"], cache)
        plain = _lint(["train.py"])
    finally:
        os.chdir(cwd)
    assert again.findings[0].estimate.peak_bytes > first.findings[0].estimate.peak_bytes
    assert _reports(again) == _reports(plain)


@pytest.mark.parametrize("restored", ["whole folder", "entries only"])
def test_a_cache_from_another_branch_never_changes_a_result(tmp_path, restored):
    """Branch A and branch B differ in a config the script reads (same size, same time, as a
    checkout can leave them); B's run starts from A's cache (actions/cache restore-keys), or
    from A's entries copied into B's own cache folder."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    config = _json_config_project(folder, "false")
    a_cache = tmp_path / "cache-a"
    a_result = _lint([folder / "train.py"], a_cache)
    assert "LL001" in [f.code for f in a_result.findings]
    _same_size_edit(config, "false", "true ")  # branch B checked out in the same workspace
    b_cache = tmp_path / "cache-b"
    if restored == "whole folder":
        shutil.copytree(str(a_cache), str(b_cache), symlinks=True)
    else:
        other = tmp_path / "other"
        other.mkdir()
        (other / "x.py").write_text(TRAIN)
        _lint([other / "x.py"], b_cache)  # B's own folder (and key, where there is one)
        for entry in _entries(a_cache):
            target = os.path.join(_root(b_cache), os.path.relpath(entry, _root(a_cache)))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(entry, target)
    b_result = _lint([folder / "train.py"], b_cache)
    assert _reports(b_result) == _reports(_lint([folder / "train.py"]))
    assert "LL001" not in [f.code for f in b_result.findings]


# ---- the key file ------------------------------------------------------------------------------

needs_key = pytest.mark.skipif(not hasattr(cache_module, "SECRET_NAME"),
                               reason="the cache authenticates its entries")


@needs_key
def test_the_key_is_private_and_a_bad_key_is_replaced_never_followed(project, tmp_path):
    cache = tmp_path / "cache"
    _lint([project / "train.py"], cache)
    key_path = os.path.join(_root(cache), cache_module.SECRET_NAME)
    info = os.lstat(key_path)
    assert info.st_mode & 0o777 == 0o600 and info.st_uid == os.geteuid()
    assert _lint([project / "train.py"], cache).stats.cache_hits == 1
    # a key anyone could read (as a checkout or a copy can leave it): replaced, entries re-made
    os.chmod(key_path, 0o644)
    run = _lint([project / "train.py"], cache)
    assert run.stats.cache_hits == 0 and run.stats.cache_stored == 1
    assert os.lstat(key_path).st_mode & 0o777 == 0o600
    # a key that is a link to a file outside: the link is replaced, its target never touched
    outside = tmp_path / "outside-key"
    outside.write_bytes(b"k" * 32)
    os.chmod(outside, 0o600)
    os.unlink(key_path)
    os.symlink(str(outside), key_path)
    run = _lint([project / "train.py"], cache)
    assert run.stats.cache_hits == 0 and run.stats.cache_problem is None
    assert not os.path.islink(key_path) and outside.read_bytes() == b"k" * 32
    assert _lint([project / "train.py"], cache).stats.cache_hits == 1


@needs_key
def test_an_unreplaceable_key_turns_the_cache_off_and_linting_goes_on(project, tmp_path):
    cache = tmp_path / "cache"
    _lint([project / "train.py"], cache)
    key_path = os.path.join(_root(cache), cache_module.SECRET_NAME)
    os.unlink(key_path)
    os.mkdir(key_path)  # a folder cannot be renamed over
    (tmp_path / "cache" / f"v{cache_module.FORMAT}" / cache_module.SECRET_NAME / "x").write_text("")
    run = _lint([project / "train.py"], cache)
    assert run.stats.cache_problem and "running without the cache" in run.stats.cache_problem
    plain = _lint([project / "train.py"])
    assert [f.code for f in run.findings] == [f.code for f in plain.findings]


# ---- the bytes linted are the bytes hashed -----------------------------------------------------

def test_a_file_read_again_for_linting_is_stored_only_if_it_still_has_its_key(project, tmp_path,
                                                                             monkeypatch):
    """Beyond ``KEEP_BYTES`` a missed file is read again to be linted; if it changed since it
    was hashed, its result is not stored under the old key."""
    import lintlora.parallel as parallel

    cache = tmp_path / "cache"
    monkeypatch.setattr(parallel, "KEEP_BYTES", 0)
    first = _lint([project / "train.py"], cache)
    assert first.stats.cache_stored == 1
    assert _lint([project / "train.py"], cache).stats.cache_hits == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "train.py").write_text(TRAIN)
    original = parallel._read_for_key
    calls = []

    def edited_in_between(task):
        calls.append(task)
        data = original(task)
        if len(calls) == 2:  # the read for linting: the file was edited meanwhile
            return data.replace(b"gradient_checkpointing", b"gradient_checkpointinG")
        return data

    monkeypatch.setattr(parallel, "_read_for_key", edited_in_between)
    run = _lint([other / "train.py"], cache)
    assert len(calls) == 2 and run.stats.cache_stored == 0


def test_concurrent_runs_on_a_fresh_folder_share_one_key(project, tmp_path):
    """Runs starting together all create the key: one wins (``link`` refuses the others), all
    read it, and every entry any of them wrote is then a hit."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("fork")
    cache = tmp_path / "cache"
    for i in range(6):
        (project / f"s{i}.py").write_text(TRAIN)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_lint, args=([project / f"s{i}.py"], cache))
               for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    run = _lint([project / f"s{i}.py" for i in range(6)], cache)
    assert run.stats.cache_hits == 6 and run.stats.cache_ignored == 0


def test_a_file_whose_name_is_not_utf8_is_cached_and_read_back(tmp_path):
    """Its path holds a lone surrogate (``os.fsdecode``); the entry is ASCII JSON, and the
    surrogate is allowed back in the entry because the file's own path has it."""
    folder = os.path.join(os.fsencode(str(tmp_path)), b"project")
    os.mkdir(folder)
    name = os.path.join(folder, b"caf\xe9.py")
    try:
        with open(name, "wb") as handle:
            handle.write(TRAIN.encode())
    except OSError:  # pragma: no cover - a file system that refuses such names
        pytest.skip("file names that are not UTF-8")
    cache = tmp_path / "cache"
    plain = _lint([os.fsdecode(folder)])
    first = _lint([os.fsdecode(folder)], cache)
    second = _lint([os.fsdecode(folder)], cache)
    assert first.stats.cache_stored == 1 and second.stats.cache_hits == 1
    assert second.findings == first.findings == plain.findings
