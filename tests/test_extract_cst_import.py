"""lintlora.extract._cst: LibCST imported with ``libcst.metadata``'s ``__init__`` deferred.

Each check runs in a fresh interpreter, since the deferral only applies to the first import of
LibCST in a process (this test process has long imported it).
"""

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_PUBLIC = "sorted(n for n in dir(sys.modules['libcst.metadata']) if not n.startswith('_'))"


def test_the_providers_are_not_imported_until_a_name_is_read_then_all_of_them_are():
    got = _run(f"""
import json, sys
from lintlora.extract._cst import import_libcst
cst = import_libcst()
before = sorted(m for m in sys.modules if m.startswith("libcst.metadata."))
module = cst.parse_module("x = 1\\n")
from libcst.metadata import MetadataWrapper, PositionProvider
wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
start = wrapper.resolve(PositionProvider)[module.body[0]].start
print(json.dumps({{"before": before, "after": sorted(m for m in sys.modules
                                               if m.startswith("libcst.metadata.")),
                  "start": [start.line, start.column], "public": {_PUBLIC},
                  "same": cst.metadata is sys.modules["libcst.metadata"],
                  "scope": cst.metadata.ScopeProvider.__module__}}))
""")
    assert "libcst.metadata.base_provider" in got["before"]
    assert "libcst.metadata.scope_provider" not in got["before"]
    assert "libcst.metadata.type_inference_provider" not in got["before"]
    assert "libcst.metadata.scope_provider" in got["after"]
    assert got["start"] == [1, 0] and got["same"]
    assert got["scope"] == "libcst.metadata.scope_provider"
    # the package reads exactly as after an ordinary import
    eager = _run(f"import json, sys, libcst.metadata; print(json.dumps({{'public': {_PUBLIC}}}))")
    assert got["public"] == eager["public"] and "PositionProvider" in got["public"]


def test_star_import_and_a_missing_name_behave_as_usual():
    got = _run("""
import json
from lintlora.extract._cst import import_libcst
cst = import_libcst()
try:
    cst.metadata.NoSuchProvider
    missing = "found"
except AttributeError as exc:
    missing = str(exc)
namespace = {}
exec("from libcst.metadata import *", namespace)
print(json.dumps({"missing": missing, "star": "ScopeProvider" in namespace}))
""")
    assert "NoSuchProvider" in got["missing"] and got["star"]


def test_an_already_imported_libcst_is_returned_as_it_is():
    got = _run("""
import json, sys
import libcst
from lintlora.extract._cst import import_libcst
print(json.dumps({"same": import_libcst() is libcst,
                  "providers": "libcst.metadata.scope_provider" in sys.modules}))
""")
    assert got == {"same": True, "providers": True}


def test_a_lint_never_runs_the_metadata_providers():
    got = _run(f"""
import io, json, sys, contextlib
from lintlora.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        status = main([{str(FIXTURES / "examples" / "qlora_trainer.py")!r}, "--no-cache", "--jobs", "1"])
    except SystemExit as exc:
        status = exc.code
print(json.dumps({{"status": status, "libcst": "libcst" in sys.modules,
                  "providers": "libcst.metadata.scope_provider" in sys.modules}}))
""")
    assert got == {"status": 1, "libcst": True, "providers": False}
