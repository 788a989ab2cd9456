"""Start-up: nothing heavy is imported before it is needed (issue 8).

Measured in fresh interpreters, since this test process has long imported everything. The
timings themselves (``lintlora --version`` against ``python -c pass``, one 500-line file) are
in ``bench/compare.py``'s output: a loaded CI machine makes them too noisy to assert here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("libcst", "rich", "yaml", "click", "lintlora.rules", "lintlora.extract.python",
         "lintlora.extract.yaml_config", "lintlora.estimate", "importlib.metadata",
         "multiprocessing", "concurrent")
"""Modules (and their submodules) that cost start-up time; ``lintlora.extract`` itself only
defines the extractors' exceptions."""

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")


def _imported_after(code: str, cwd: str = REPO) -> list[str]:
    """The heavy modules imported once ``code`` has run in a fresh interpreter."""
    probe = ("import json, sys\ntry:\n" + textwrap.indent(textwrap.dedent(code).strip(), "    ")
             + "\nexcept SystemExit:\n    pass\n"
             f"heavy = {HEAVY!r}\n"
             "print('\\n' + json.dumps(sorted(m for m in sys.modules\n"
             "      if any(m == h or m.startswith(h + '.') for h in heavy))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_version_imports_nothing_heavy():
    assert _imported_after("from lintlora.cli import main\nmain(['--version'])") == []


def test_importing_the_engine_and_its_helpers_imports_nothing_heavy():
    imported = _imported_after("import lintlora, lintlora.engine, lintlora.cache, "
                               "lintlora.parallel, lintlora.prefilter, lintlora.settings")
    assert imported == []


def test_a_run_over_ordinary_python_never_imports_libcst(tmp_path):
    (tmp_path / "util.py").write_text("import json\n\n\ndef load(p):\n    return json.load(p)\n")
    (tmp_path / "cli.py").write_text("import argparse\nparser = argparse.ArgumentParser()\n")
    imported = _imported_after(f"""
        from lintlora.engine import lint_paths
        result = lint_paths([{str(tmp_path)!r}])
        assert len(result.files) == 2 and not result.findings
    """)
    assert "libcst" not in imported and "yaml" not in imported


def test_a_run_served_by_the_cache_never_imports_libcst(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    cache = str(tmp_path / "cache")
    run = f"""
        from lintlora.cli import main
        main([{str(tmp_path / 'train.py')!r}, '--cache-dir', {cache!r}, '--format', 'text'])
    """
    # text: JSON and SARIF carry an autofix's resolved edits (issue 17), which re-reads the
    # file with LibCST even on a cached run (lintlora/report/fixes.py)
    assert "libcst" in _imported_after(run)  # the first run parses
    warm = _imported_after(run)
    assert "libcst" not in warm and "lintlora.extract.python" not in warm


def test_rules_load_without_importlib_metadata_when_only_builtins_are_registered():
    import pytest

    import lintlora.rules as registry

    if registry._builtin_entry_points_only() is None:
        pytest.skip("a rule plugin (or a zip on sys.path) is installed here: importlib.metadata reads it")
    imported = _imported_after("import lintlora.rules as r\nassert len(r.load_rules()) >= 8")
    assert "importlib.metadata" not in imported


NOT_FOR_ONE_FILE = ("rich", "yaml", "multiprocessing", "concurrent", "importlib.metadata",
                    "difflib", "hashlib", "lintlora.estimate.command",
                    "lintlora.estimate.fit", "lintlora.estimate.gpus", "lintlora.extract.yaml_config",
                    "lintlora.extract.notebook", "lintlora.extract.dialects", "lintlora.gitdiff",
                    "lintlora.report.json_out", "lintlora.report.sarif", "lintlora.report.github",
                    "lintlora.report.markdown", "lintlora.report.setup_table")
"""What a plain lint of one training script, text report to a pipe, never needs: the rich
console (the plain-text writer prints the same bytes), YAML, the pool machinery (one file
runs in this process), the entry-point reader, the other reports and extractors."""


def test_a_plain_one_file_lint_to_a_pipe_imports_only_what_it_needs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
        "args = TrainingArguments(output_dir='o', fp16=True, gradient_checkpointing=False)\n")
    probe = textwrap.dedent(f"""
        import io, json, sys
        out = io.StringIO()  # not a terminal, as a pipe is not
        sys.stdout = out
        from lintlora.cli import main
        try:
            main([{str(script)!r}, "--no-cache"])
        except SystemExit as exc:
            status = exc.code
        sys.stdout = sys.__stdout__
        print(json.dumps([status, out.getvalue(), sorted(sys.modules)]))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    status, report, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 1 and "LL002" in report and "peak" in report  # it did lint and estimate
    assert "libcst" in modules and "lintlora.rules.ll002_fp16_instead_of_bf16" in modules
    loaded = sorted(m for m in modules
                    if any(m == h or m.startswith(h + ".") for h in NOT_FOR_ONE_FILE))
    assert loaded == []
