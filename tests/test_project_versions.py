"""lintlora.extract.project_versions: every dependency-file kind, includes, cycles, markers, and
hostile projects (huge, binary, a link out, a deep include chain)."""

from __future__ import annotations

import json
import os

import pytest

from lintlora.extract import project_versions as pv
from lintlora.extract.project_versions import versions_in_notebook, versions_in_project
from lintlora.extract.setup_versions import attach_versions
from lintlora.training_setup import TrainingSetup


def _project(tmp_path, files: dict[str, str]):
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def _pins(tmp_path, script="train.py"):
    pins, files = versions_in_project(str(tmp_path / script), root=str(tmp_path))
    return {p.package: p for p in pins}, files


def test_requirements_exact_bounded_markers_urls_and_hashes(tmp_path):
    _project(tmp_path, {"requirements.txt": "\n".join([
        "# pinned for the paper",
        "transformers[torch]==4.44.2  # exact",
        'peft>=0.10,<0.12 ; python_version >= "3.8"',
        'torch==2.0.0; sys_platform == "darwin"',        # not the training host: dropped
        'torch==2.3.1; sys_platform == "linux"',
        "--index-url https://download.pytorch.org/whl/cu121",
        "-e git+https://github.com/huggingface/trl.git#egg=trl",
        "flash_attn @ https://github.com/x/releases/download/v2.6.3/"
        "flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
        "bitsandbytes==0.41.1 \\",
        "    --hash=sha256:0123",
        "accelerate @ git+https://github.com/huggingface/accelerate",
        "numpy==1.26.4",                                  # not a package lintlora reads
        "this is not a requirement",
    ])})
    pins, files = _pins(tmp_path)
    assert set(pins) == {"transformers", "peft", "torch", "trl", "flash-attn", "bitsandbytes", "accelerate"}
    t = pins["transformers"]
    assert (t.specifier, t.version, t.span.line, t.source) == ("==4.44.2", "4.44.2", 2, "requirements")
    assert t.span.path == os.path.realpath(tmp_path / "requirements.txt")
    assert (pins["peft"].specifier, pins["peft"].version) == ("<0.12,>=0.10", None)
    assert pins["torch"].version == "2.3.1" and pins["torch"].span.line == 5
    assert pins["trl"].version is None and pins["trl"].span.line == 7
    assert pins["flash-attn"].version.startswith("2.6.3")
    assert (pins["bitsandbytes"].version, pins["bitsandbytes"].span.line) == ("0.41.1", 9)
    assert pins["accelerate"].version is None
    assert str(tmp_path / "requirements.txt") in files and str(tmp_path / "uv.lock") in files


def test_includes_are_followed_and_cycles_cut(tmp_path):
    _project(tmp_path, {
        "requirements-dev.txt": "-r requirements/base.txt\npytest\n",
        "requirements/base.txt": "-r ../requirements-dev.txt\n--constraint=pins.txt\naccelerate~=0.30.0\n",
        "requirements/pins.txt": "-c base.txt\ndeepspeed==0.14.4\n",
    })
    pins, files = _pins(tmp_path)
    assert pins["accelerate"].specifier == "~=0.30.0"
    assert pins["deepspeed"].version == "0.14.4"
    assert str(tmp_path / "requirements" / "pins.txt") in files
    all_pins, _ = versions_in_project(str(tmp_path / "train.py"), root=str(tmp_path))
    assert len([p for p in all_pins if p.package == "accelerate"]) == 1  # read once, not per include


def test_deep_include_chain_is_bounded(tmp_path):
    n = pv.MAX_INCLUDE_DEPTH + 5
    files = {f"requirements/r{i}.txt": f"-r r{i + 1}.txt\n" for i in range(n)}
    files[f"requirements/r{n}.txt"] = "trl==0.9.6\n"
    files["requirements.txt"] = "-r requirements/r0.txt\n"
    _project(tmp_path, files)
    # r0 .. r{n} are also read on their own (requirements/*.txt): the last one directly
    pins, _ = _pins(tmp_path)
    assert pins["trl"].version == "0.9.6"
    got = pv.pins_in_file(str(tmp_path / "requirements.txt"), confine=str(tmp_path))
    assert got == []  # beyond MAX_INCLUDE_DEPTH from requirements.txt


def test_include_outside_the_project_is_not_read(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("transformers==4.30.0\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    _project(proj, {"requirements.txt": f"-r {outside}\n-r ../outside.txt\n"})
    pins, _ = _pins(proj)
    assert pins == {}


def test_symlink_out_of_the_project_is_not_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("transformers==4.30.0\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    _project(proj, {})
    os.symlink(secret, proj / "requirements.txt")
    os.symlink(secret, proj / "pyproject.toml")
    pins, files = _pins(proj)
    assert pins == {} and str(proj / "requirements.txt") in files


def test_huge_binary_and_broken_files_are_skipped(tmp_path):
    _project(tmp_path, {
        "pyproject.toml": "[project\ndependencies = [",                   # invalid TOML
        "setup.py": "setup(install_requires=['transformers==4.40.0'\n",     # does not parse
        "environment.yml": "dependencies: [unclosed\n",
        "Pipfile.lock": "{not json",
    })
    (tmp_path / "requirements.txt").write_bytes(b"transformers==4.0.0\n\x00\xff binary")
    big = tmp_path / "requirements-big.txt"
    big.write_text("peft==0.10.0\n" + "#" * (pv.MAX_MANIFEST_BYTES + 10))
    pins, _ = _pins(tmp_path)
    assert pins == {}


def test_pyproject_pep621_optional_groups_poetry_pdm(tmp_path):
    _project(tmp_path, {"pyproject.toml": """
[project]
name = "x"
dependencies = [
  "deepspeed>=0.14",
  "transformers>=4.40,<5",
]
[project.optional-dependencies]
train = ["trl==0.11.4"]
[dependency-groups]
dev = ["torchao>=0.5"]
[tool.poetry.dependencies]
python = "^3.10"
unsloth = "^2024.8"
torchtune = {version = "~0.3.1", optional = true}
litgpt = "0.4.12"
axolotl = {git = "https://github.com/axolotl-ai-cloud/axolotl"}
[tool.poetry.group.gpu.dependencies]
bitsandbytes = "^0.43"
[tool.pdm.dev-dependencies]
kernels = ["flash-attn==2.6.3"]
"""})
    pins, _ = _pins(tmp_path)
    assert pins["transformers"].specifier == "<5,>=4.40" and pins["transformers"].span.line == 6
    assert pins["deepspeed"].span.line == 5
    assert pins["trl"].version == "0.11.4"
    assert pins["torchao"].specifier == ">=0.5"
    assert pins["unsloth"].specifier == "<2025,>=2024.8"
    assert pins["torchtune"].specifier == "<0.4,>=0.3.1"
    assert pins["litgpt"].version == "0.4.12"
    assert pins["axolotl"].specifier == "" and pins["axolotl"].version is None
    assert pins["bitsandbytes"].specifier == "<0.44,>=0.43"
    assert pins["flash-attn"].version == "2.6.3"
    assert "python" not in pins


@pytest.mark.parametrize("poetry, pep440", [
    ("^1.2.3", ">=1.2.3,<2"), ("^0.2.3", ">=0.2.3,<0.3"), ("^0.0.3", ">=0.0.3,<0.0.4"),
    ("~1.2.3", ">=1.2.3,<1.3"), ("~1", ">=1,<2"), ("1.2.3", "==1.2.3"), ("*", ""),
    (">=1.2, <1.5", ">=1.2,<1.5"),
])
def test_poetry_constraints(poetry, pep440):
    assert pv._poetry_spec(poetry) == pep440


def test_poetry_alternatives_are_not_read():
    with pytest.raises(ValueError):
        pv._poetry_spec("^1.0 || ^2.0")


def test_locks_give_exact_versions(tmp_path):
    _project(tmp_path, {
        "uv.lock": 'version = 1\n\n[[package]]\nname = "numpy"\nversion = "1.26.4"\n\n'
                   '[[package]]\nname = "transformers"\nversion = "4.46.3"\nsource = { registry = "x" }\n',
        "sub/poetry.lock": '[[package]]\nname = "bitsandbytes"\nversion = "0.41.1"\n',
        "sub2/Pipfile.lock": json.dumps({"default": {"peft": {"version": "==0.12.0"}},
                                         "develop": {"trl": {"version": "==0.9.6"}}}, indent=1),
    })
    pins, _ = _pins(tmp_path)
    assert (pins["transformers"].version, pins["transformers"].span.line, pins["transformers"].source) == \
        ("4.46.3", 8, "uv.lock")
    sub, _ = _pins(tmp_path, "sub/train.py")
    assert sub["bitsandbytes"].version == "0.41.1" and sub["transformers"].version == "4.46.3"
    sub2, _ = _pins(tmp_path, "sub2/train.py")
    assert sub2["peft"].version == "0.12.0" and sub2["trl"].version == "0.9.6"
    assert sub2["peft"].span.line == 3


def test_setup_cfg_and_setup_py(tmp_path):
    _project(tmp_path, {
        "a/setup.cfg": "[metadata]\nname = x\n[options]\ninstall_requires =\n    peft>=0.10\n"
                       "    transformers==4.41.0\n[options.extras_require]\ngpu = bitsandbytes==0.43.1\n",
        "b/setup.py": "from setuptools import setup\nREQUIRED = [\n    'torch>=2.1',\n    \"trl==0.8.6\",\n]\n"
                      "setup(name='x', install_requires=REQUIRED,\n"
                      "      extras_require={'ds': ['deepspeed==0.14.0']})\n",
        "c/setup.py": "import os\nsetup(install_requires=open('req.txt').read().split())\n",  # not static
    })
    a, _ = _pins(tmp_path, "a/train.py")
    assert a["transformers"].version == "4.41.0" and a["transformers"].span.line == 6
    assert a["bitsandbytes"].version == "0.43.1" and a["peft"].source == "setup.cfg"
    b, _ = _pins(tmp_path, "b/train.py")
    assert b["trl"].version == "0.8.6" and b["trl"].span.line == 4
    assert b["torch"].specifier == ">=2.1" and b["deepspeed"].version == "0.14.0"
    c, _ = _pins(tmp_path, "c/train.py")
    assert c == {}


def test_setup_py_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    _project(tmp_path, {"setup.py": f"open({str(marker)!r}, 'w').write('x')\n"
                                    "setup(install_requires=['peft==0.11.1'])\n"})
    pins, _ = _pins(tmp_path)
    assert pins["peft"].version == "0.11.1" and not marker.exists()


def test_environment_yml_conda_and_pip(tmp_path):
    _project(tmp_path, {"environment.yml": """name: ft
channels: [pytorch, conda-forge]
dependencies:
  - python=3.10
  - pytorch=2.1.0=py3.10_cuda12.1_cudnn8_0
  - conda-forge::accelerate>=0.30
  - transformers=4.44
  - pip:
    - trl==0.9.6
    - git+https://github.com/huggingface/peft.git#egg=peft
"""})
    pins, _ = _pins(tmp_path)
    assert (pins["torch"].version, pins["torch"].span.line) == ("2.1.0", 5)
    assert pins["accelerate"].specifier == ">=0.30"
    assert pins["transformers"].specifier == "==4.44.*" and pins["transformers"].version is None
    assert pins["trl"].version == "0.9.6" and pins["trl"].span.line == 9
    assert pins["peft"].version is None


def test_pipfile(tmp_path):
    _project(tmp_path, {"Pipfile": '[packages]\ntransformers = "==4.44.2"\npeft = "*"\n'
                                   '[dev-packages]\ntrl = {version = ">=0.9"}\n'})
    pins, _ = _pins(tmp_path)
    assert pins["transformers"].version == "4.44.2" and pins["transformers"].span.line == 2
    assert pins["peft"].specifier == "" and pins["trl"].specifier == ">=0.9"


def test_nearest_folder_wins_and_the_walk_stops_at_the_root(tmp_path):
    (tmp_path / "requirements.txt").write_text("peft==0.9.0\n")  # above the root: never read
    proj = tmp_path / "proj"
    proj.mkdir()
    _project(proj, {"requirements.txt": "transformers==4.44.2\ntrl==0.9.6\n",
                    "exp/requirements.txt": "transformers==4.46.3\n"})
    pins, files = _pins(proj, "exp/train.py")
    assert pins["transformers"].version == "4.46.3" and pins["trl"].version == "0.9.6"
    assert "peft" not in pins
    assert all(f.startswith(str(proj)) for f in files)


def test_notebook_install_lines():
    nb = {"cells": [
        {"cell_type": "markdown", "source": "!pip install transformers==1.0"},
        {"cell_type": "code", "source": ["%pip install -q -U \"transformers==4.44.2\" 'peft>=0.10' datasets\n",
                                         "!pip install --no-deps -i https://x/simple bitsandbytes==0.41.1\n"]},
        {"cell_type": "code", "source": "import torch\n!uv pip install trl==0.9.6  # pinned\n"
                                        "!pip install $PKG\n"},
    ]}
    pins = {p.package: p for p in versions_in_notebook(json.dumps(nb), "/p/nb.ipynb")}
    t = pins["transformers"]
    assert (t.version, t.span.cell, t.span.line, t.source) == ("4.44.2", 1, 1, "notebook")
    assert pins["peft"].specifier == ">=0.10"
    assert (pins["bitsandbytes"].version, pins["bitsandbytes"].span.line) == ("0.41.1", 2)
    assert (pins["trl"].span.cell, pins["trl"].span.line) == (2, 2)
    assert versions_in_notebook("not json", "/p/nb.ipynb") == ()


def test_attach_versions_fills_versions_and_inputs(tmp_path):
    _project(tmp_path, {"requirements.txt": "transformers==4.44.2\n"})
    nb = {"cells": [{"cell_type": "code", "source": "!pip install transformers==4.46.0 trl==0.9.6\n"}]}
    setups = [TrainingSetup(path=str(tmp_path / "nb.ipynb"), kind="notebook")]
    out, files = attach_versions(setups, str(tmp_path / "nb.ipynb"), str(tmp_path),
                                 text=json.dumps(nb), kind="notebook")
    assert out is setups
    versions = {p.package: p.version for p in out[0].versions}
    assert versions == {"transformers": "4.46.0", "trl": "0.9.6"}  # the notebook's own line wins
    assert str(tmp_path / "requirements.txt") in out[0].inputs and files
    assert attach_versions([], "x.py", str(tmp_path)) == ([], ())


def test_databricks_source_pip_cells(tmp_path):
    from lintlora.extract.setup_versions import pins_for

    _project(tmp_path, {"requirements.txt": "peft==0.10.0\ntransformers==4.40.0\n"})
    text = ("# Databricks notebook source\n# MAGIC %pip install transformers==4.44.2\n\n"
            "# COMMAND ----------\n\n%pip install trl==0.9.6\n")
    pins, _ = pins_for(str(tmp_path / "nb.py"), root=str(tmp_path), text=text, kind="python")
    got = {p.package: (p.version, p.span.line) for p in pins}
    assert got == {"transformers": ("4.44.2", 2), "trl": ("0.9.6", 6), "peft": ("0.10.0", 1)}


def test_an_include_fan_out_is_bounded(tmp_path):
    import time

    files = {f"requirements/r{i}.txt": "".join(f"-r r{i + 1}.txt\n" for _ in range(200)) for i in range(6)}
    files["requirements/r6.txt"] = "peft==0.10.0\n"
    _project(tmp_path, files)
    start = time.monotonic()
    got = pv.pins_in_file(str(tmp_path / "requirements" / "r0.txt"), confine=str(tmp_path))
    assert [p.version for p in got] == ["0.10.0"]  # each file once: no 200**6 reads
    assert time.monotonic() - start < 5


def test_a_pyproject_of_many_other_dependencies_is_read_in_one_pass(tmp_path):
    import time

    deps = ",\n".join(f'  "pkg{i}>=1.0"' for i in range(20000))
    _project(tmp_path, {"pyproject.toml": f'[project]\nname = "x"\ndependencies = [\n{deps},\n  "peft==0.10.0"\n]\n'})
    start = time.monotonic()
    pins, _ = _pins(tmp_path)
    assert pins["peft"].span.line == 20004
    assert time.monotonic() - start < 10
