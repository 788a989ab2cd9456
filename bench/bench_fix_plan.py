"""How long :func:`lintlora.fixing.plan` takes to place many fixes in one large file (issue 17:
a pull request whose file has many fixable findings must not stall a CI job).

Prints seconds for 100 fixes in a 2,000-line Python file (``set_keyword``, ``replace``) and
in a 2,000-key YAML file (``yaml_set``). Run: ``python bench/bench_fix_plan.py``. Measured on
the 2-CPU development machine (shared with other jobs): 4.6-6.7 s, 4.7-7.0 s and 5.2-7.9 s;
before the parsed tree was kept between the fixes of one text (``fixing._py_tree``), the
first took 466 s."""

from __future__ import annotations

import time

from lintlora.findings import EditOp, Fix, FixSafety
from lintlora.fixing import plan
from lintlora.training_setup import Span


def _fix(kind: str, line: int, column: int, text: str, keyword: str | None = None,
         end_column: int | None = None) -> Fix:
    return Fix("t", FixSafety.SAFE, (EditOp(kind, Span("f", line, column, None, end_column),
                                            text, keyword),))


def main() -> None:
    text = "".join(f"T{i}(a=1, b={i})\n" for i in range(2000))
    cases = [
        ("python set_keyword", text, "python",
         [_fix("set_keyword", i + 1, 1, "True", "c") for i in range(0, 2000, 20)]),
        ("python replace", text, "python",
         [_fix("replace", i + 1, len(f"T{i}(a=") + 1, "2", end_column=len(f"T{i}(a=") + 2)
          for i in range(0, 2000, 20)]),
        ("yaml yaml_set", "".join(f"k{i}: {i}\n" for i in range(2000)), "yaml",
         [_fix("yaml_set", 1, 1, "5", f"k{i}") for i in range(0, 2000, 20)]),
    ]
    for name, source, kind, fixes in cases:
        start = time.perf_counter()
        result = plan(fixes, lambda _path: (source, kind))
        applied = sum(o.status == "applied" for o in result.outcomes)
        print(f"{name}: {len(fixes)} fixes, {applied} applied, "
              f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
