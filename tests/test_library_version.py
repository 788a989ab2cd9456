"""Context.library_version: settings > exact pins > bounded specifiers > the assumed current
release, and the "where" each says; the estimator's notes follow the run's releases."""

from __future__ import annotations

import pytest
from packaging.version import Version

from lintlora.context import Context
from lintlora.estimate.versions import DEFAULT_VERSIONS
from lintlora.settings import Settings
from lintlora.training_setup import PinnedVersion, Span, TrainingSetup


def _setup(*pins, path="/p/train.py"):
    return TrainingSetup(path=path, kind="python", versions=tuple(pins))


def _pin(package, specifier, version=None, line=3, path="/p/requirements.txt", source="requirements"):
    return PinnedVersion(package, specifier, version, Span(path, line), source)


EXACT = _pin("transformers", "==4.44.2", "4.44.2")
BOUND = _pin("transformers", "<5", None, 12, "/p/pyproject.toml", "pyproject")


def test_exact_pin():
    used = Context().library_version(_setup(EXACT), "transformers")
    assert used.version == Version("4.44.2") and not used.assumed and used.pin is EXACT
    assert used.where == "transformers==4.44.2 from requirements.txt:3"


def test_assume_version_flag_beats_pins():
    s = Settings(assume_versions=(("transformers", "4.46"),), version_flags=("transformers",))
    used = Context(s).library_version(_setup(EXACT), "transformers")
    assert used.version == Version("4.46") and used.where == "--assume-version transformers=4.46"
    assert not used.assumed and used.pin is None


def test_config_versions_beat_pins():
    s = Settings(assume_versions=(("transformers", "4.46"),))
    used = Context(s).library_version(_setup(EXACT), "transformers")
    assert used.where == "[tool.lintlora] versions transformers=4.46"


def test_exact_pin_beats_a_bound_wherever_it_is_listed():
    used = Context().library_version(_setup(BOUND, EXACT), "transformers")
    assert used.version == Version("4.44.2")


def test_upper_bound_takes_the_newest_known_release_below_it():
    used = Context().library_version(_setup(BOUND), "transformers")
    assert used.version < Version("5") and used.version == Version("4.57.6")
    assert used.where.startswith("transformers<5 from pyproject.toml:12")
    assert not used.assumed


def test_lower_bound_takes_the_current_release():
    pin = _pin("transformers", ">=4.40", None)
    used = Context().library_version(_setup(pin), "transformers")
    assert used.version == Version(DEFAULT_VERSIONS["transformers"])
    assert "transformers>=4.40 from requirements.txt:3, taken as" in used.where


@pytest.mark.parametrize("spec, expected", [("~=0.30.0", "0.30.0"), ("==4.44.*", "4.44"),
                                            (">=4.40,<4.46", "4.40")])
def test_bounded_specifiers_take_their_own_releases(spec, expected):
    package = "accelerate" if spec.startswith("~=") else "transformers"
    used = Context().library_version(_setup(_pin(package, spec)), package)
    assert used.version == Version(expected)


def test_a_bound_no_known_release_meets_gives_no_version():
    used = Context().library_version(_setup(_pin("transformers", "<4.0")), "transformers")
    assert used.version is None and "allowing no release known to lintlora" in used.where


def test_no_pin_is_the_assumed_current_release():
    used = Context().library_version(_setup(), "bitsandbytes")
    assert used.assumed and used.version == Version(DEFAULT_VERSIONS["bitsandbytes"])
    assert used.where.endswith("assumed: the current release, not read from the project")


def test_a_pin_without_a_version_says_so():
    used = Context().library_version(_setup(_pin("peft", "")), "peft")
    assert used.assumed and "requirements.txt:3 names peft without a version" in used.where


def test_unknown_default_and_names_canonicalised():
    used = Context().library_version(_setup(), "DeepSpeed")
    assert used.package == "deepspeed" and used.version is None and "unknown" in used.where


def test_pins_are_named_relative_to_the_linted_file_and_notebook_cells():
    up = _pin("transformers", "==4.44.2", "4.44.2", path="/p/requirements.txt")
    used = Context().library_version(_setup(up, path="/p/exp/train.py"), "transformers")
    assert used.where.endswith("from ../requirements.txt:3")
    cell = PinnedVersion("trl", "==0.9.6", "0.9.6", Span("/p/nb.ipynb", 2, cell=3), "notebook")
    used = Context().library_version(_setup(cell, path="/p/nb.ipynb"), "trl")
    assert used.where == "trl==0.9.6 from nb.ipynb cell 3 line 2"


def test_estimator_versions_carry_where():
    bnb = _pin("bitsandbytes", "==0.41.1", "0.41.1", line=1)
    got = Context().estimator_versions(_setup(bnb, EXACT))
    assert ("bitsandbytes", "0.41.1", "bitsandbytes==0.41.1 from requirements.txt:1") in got
    assert all(p != "peft" for p, *_ in got)  # assumed ones are left to the estimator's default


def test_the_flag_and_the_file_merge_package_by_package(tmp_path):
    from lintlora.config import SettingsResolver

    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.lintlora]\nversions = { transformers = "4.46", "bitsandbytes" = "0.41.1", llama_factory = "0.9.1" }\n')
    resolver = SettingsResolver({"assume_versions": (("transformers", "5.0"),)})
    s = resolver.for_path(str(tmp_path / "train.py"))
    assert dict(s.assume_versions) == {"transformers": "5.0", "bitsandbytes": "0.41.1", "llamafactory": "0.9.1"}
    assert s.version_flags == ("transformers",)
    c = Context(s)
    assert c.library_version(_setup(), "transformers").where == "--assume-version transformers=5.0"
    assert c.library_version(_setup(), "bitsandbytes").where == "[tool.lintlora] versions bitsandbytes=0.41.1"
    assert c.library_version(_setup(), "llama-factory").version == Version("0.9.1")
