

# ---- analysis bombs in ordinary-looking code -----------------------------------------------------
def _run_bounded(tmp_path, source: str, *, max_s: float, max_rss_mb: int):
    """Lint ``source`` in a child process; its wall time and peak memory (ru_maxrss)."""
    import resource
    import time

    path = tmp_path / "train.py"
    path.write_text(source)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30));"
            "from lintlora.cli_app import app; sys.argv[0] = 'lintlora'; app()")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-c", code, "--no-cache", "-j", "1", str(path)],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=max_s * 4)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lintlora ran past {max_s * 4:g} s")
    elapsed = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = run.stdout + run.stderr
    assert run.returncode in (0, 1), out[-2000:]
    assert "LL999" not in out and "MemoryError" not in out, out[-2000:]
    assert elapsed < max_s, f"{elapsed:.1f} s"
    if peak > before:  # ru_maxrss of the largest child so far, in KiB on Linux
        assert peak < max_rss_mb * 1024, f"{peak // 1024} MiB"
    return out


HEADER = "from transformers import TrainingArguments, Trainer\nm = None\n"


def test_doubling_dict_spread_is_bounded(tmp_path):
    """``d1 = {**d0, **d0}`` repeated 60 times (2 KB): the dict's list of unresolved parts
    doubled at every line; lintlora was killed by the kernel at 22 GB (an internal error
    under a 3 GB limit)."""
    source = HEADER + "d0 = {'per_device_train_batch_size': 1}\n" + "".join(
        f"d{i + 1} = {{**d{i}, **d{i}}}\n" for i in range(60)) + (
        "a = TrainingArguments(output_dir='o', **d60)\nTrainer(model=m, args=a).train()\n")
    _run_bounded(tmp_path, source, max_s=10, max_rss_mb=600)


def test_many_conditional_rebinds_are_linear(tmp_path):
    """3,000 ``if c: x = i / else: x = x + 1`` blocks (60 KB, under every limit): each lookup
    of ``x`` weighed every earlier conditional binding, each reading ``x`` again (35 s)."""
    source = HEADER + "x = 1\n" + "".join(
        f"if c{i}:\n    x = {i}\nelse:\n    x = x + 1\n" for i in range(3000)) + (
        "a = TrainingArguments(output_dir='o', per_device_train_batch_size=x)\n"
        "Trainer(model=m, args=a).train()\n")
    _run_bounded(tmp_path, source, max_s=12, max_rss_mb=600)
