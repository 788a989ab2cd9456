"""A third-party rule registered through the ``lintlora.rules`` entry point, end to end.

``fixtures/plugin`` is a tiny installable package. The test pip-installs a copy of it (offline:
no index, no build isolation, no dependencies) into a temporary ``--target`` folder, puts that
folder on ``PYTHONPATH`` so ``importlib.metadata`` sees its entry point, and runs the real
``lintlora`` command in a subprocess: the rule is listed, runs by default like a built-in, is
selectable and ignorable, suppressible by comment, and described in SARIF.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(REPO, "fixtures", "plugin")


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("plugin")
    source = base / "src"
    shutil.copytree(PLUGIN, source)  # the build writes build/ and *.egg-info next to sources
    target = base / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
         str(source)],
        capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"pip could not install the example plugin:\n{done.stdout}\n{done.stderr}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(target), REPO, env.get("PYTHONPATH", "")])
    env.pop("NO_COLOR", None)
    return env


def lintlora(env, cwd, *args):
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


CONFIG = textwrap.dedent("""\
    base_model: mistralai/Mistral-7B-v0.1
    adapter: lora
    lora_r: 128
    lora_alpha: 16
    lora_target_modules:
      - q_proj
      - v_proj
    sequence_len: 512
    micro_batch_size: 1
    bf16: true
    gradient_checkpointing: true
""")


def test_plugin_rule_is_listed(plugin_env, tmp_path):
    done = lintlora(plugin_env, tmp_path, "rules")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("EX001"))
    assert "high-lora-rank" in line and "warning" in line
    assert "[plugin (lintlora_example_plugin)]" in line
    explained = lintlora(plugin_env, tmp_path, "explain", "EX001")
    assert explained.returncode == 0 and "adapter weights" in explained.stdout


def test_plugin_rule_runs_selects_ignores_and_suppresses(plugin_env, tmp_path):
    (tmp_path / "axolotl.yml").write_text(CONFIG)
    done = lintlora(plugin_env, tmp_path, "axolotl.yml", "--format", "json", "--gpu", "rtx3090")
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    ex = [f for f in findings if f["code"] == "EX001"]
    assert [(f["line"], f["column"]) for f in ex] == [(3, 9)]
    estimate = ex[0]["estimate"]
    assert estimate["peak_bytes"] > estimate["peak_after_fix_bytes"] > 0  # re-estimated at r=64

    only = json.loads(lintlora(plugin_env, tmp_path, "axolotl.yml", "--select", "EX001",
                               "--format", "json").stdout)["findings"]
    assert [f["code"] for f in only] == ["EX001"]
    ignored = json.loads(lintlora(plugin_env, tmp_path, "axolotl.yml", "--ignore", "EX001",
                                  "--format", "json").stdout)["findings"]
    assert "EX001" not in [f["code"] for f in ignored]

    (tmp_path / "suppressed.yml").write_text(CONFIG.replace("lora_r: 128",
                                                            "lora_r: 128  # noqa: EX001"))
    suppressed = json.loads(lintlora(plugin_env, tmp_path, "suppressed.yml", "--select",
                                     "EX001,LL900", "--format", "json").stdout)["findings"]
    assert suppressed == []

    (tmp_path / "pyproject.toml").write_text('[tool.lintlora]\nignore = ["EX001"]\n')
    configured = json.loads(lintlora(plugin_env, tmp_path, "axolotl.yml", "--format",
                                     "json").stdout)["findings"]
    assert "EX001" not in [f["code"] for f in configured]


def test_plugin_rule_in_sarif(plugin_env, tmp_path):
    (tmp_path / "axolotl.yml").write_text(CONFIG)
    done = lintlora(plugin_env, tmp_path, "axolotl.yml", "--select", "EX001", "--format", "sarif")
    doc = json.loads(done.stdout)
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["EX001"]["name"] == "high-lora-rank"
    assert rules["EX001"]["shortDescription"]["text"] == "LoRA rank above 64"
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["EX001"]


def test_without_the_plugin_its_code_is_unknown(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = lintlora(env, tmp_path, "rules")
    assert "EX001" not in done.stdout
    (tmp_path / "a.yml").write_text(CONFIG)
    done = lintlora(env, tmp_path, "a.yml", "--select", "EX001")
    assert done.returncode == 2 and "unknown rule code 'EX001'" in done.stderr


def test_a_broken_plugin_is_reported_not_fatal(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[lintlora.rules]\nEX999 = no_such_module:Rule\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), REPO]))
    done = lintlora(env, tmp_path, "rules")
    assert done.returncode == 0
    assert "LL001" in done.stdout and "EX999" not in done.stdout
    assert "warning: rule plugin EX999 (no_such_module:Rule): failed to import" in done.stderr
    (tmp_path / "a.yml").write_text(CONFIG)
    done = lintlora(env, tmp_path, "a.yml", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["errors"] == []
    assert "EX999" in done.stderr
