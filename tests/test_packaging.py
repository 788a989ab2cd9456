"""The wheel's package list (pyproject [tool.setuptools] packages) must name every package.

It is an explicit list because the rule pages (rules/*.md at the repository root) are mapped
into the package lintlora.rule_pages; a new subpackage left off the list would be missing from
``pip install .`` while still working in an editable checkout.
"""

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_directory_is_listed():
    listed = set(_config()["packages"])
    on_disk = set()
    for path in (ROOT / "lintlora").rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        rel = path.parent.relative_to(ROOT)
        on_disk.add(".".join(rel.parts))
    missing = on_disk - listed
    assert not missing, f"packages missing from pyproject [tool.setuptools] packages: {sorted(missing)}"


def test_data_and_rule_pages_ship():
    cfg = _config()
    assert cfg["package-dir"]["lintlora.rule_pages"] == "rules"
    pages = sorted(p.name for p in (ROOT / "rules").glob("LL*.md"))
    assert "LL001.md" in pages
    assert cfg["package-data"]["lintlora.rule_pages"] == ["*.md"]
    assert list((ROOT / "lintlora" / "data").glob("*.json")), "catalog data files missing"
    assert cfg["package-data"]["lintlora.data"] == ["*.json"]
