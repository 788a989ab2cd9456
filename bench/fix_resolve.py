"""What resolving autofixes costs a report (issue 17): the JSON/SARIF/Markdown reporters place
each finding's fix (:func:`lintlora.report.fixes.fix_edits`: the files read, Python parsed with
LibCST), also on a run served from the results cache, where the text report does not.

    python bench/fix_resolve.py [--copies 4] [--repeat 3]

The fix fixtures (``fixtures/fix/*/*``, not the ``.fixed`` ones) are copied ``--copies`` times
into a temporary project and linted with a results cache twice (the second run is served from
it); then each format is rendered from the cached result, best of ``--repeat``. Printed: the
files, the findings with an autofix, the cached lint's time, and per format the render time
and its excess over ``text``; and the number of LibCST parses the JSON report made
(:class:`lintlora.fixing._PyTree` built).

Measured on the team's 2-core VM with other jobs running (load 5-6, so +-50%), 336 files, 524
findings with an autofix, the cached lint itself 0.9-1.8 s: before (each finding's fix parsed
its file again and resolved LibCST's position and parent metadata in two walks) JSON 9.7 s,
SARIF 8.1 s, Markdown 5.5 s over text's 0.12 s, 248 parses; after (a parsed file is reused
for its other findings, :func:`lintlora.fixing._py_tree`; positions only, the parents walked
only for a statement edit) JSON 3.1-3.3 s, SARIF 4.9 s, Markdown 3.1 s, 188 parses. The rest
is LibCST's metadata walk (about 17 ms a file); keeping resolved edits in the cache entry would
cost every uncached run, text ones included, that walk per file with a fix, so it is not done.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from lintlora import fixing
    from lintlora.engine import lint_paths
    from lintlora.report import render
    from lintlora.settings import Settings

    work = tempfile.mkdtemp()
    os.mkdir(os.path.join(work, ".git"))
    source = os.path.join(ROOT, "fixtures", "fix")
    count = 0
    for i in range(args.copies):
        for code in sorted(os.listdir(source)):
            for name in sorted(os.listdir(os.path.join(source, code))):
                if ".fixed." in name:
                    continue
                dest = os.path.join(work, f"c{i}", code)
                os.makedirs(dest, exist_ok=True)
                shutil.copy(os.path.join(source, code, name), dest)
                count += 1
    cache = os.path.join(work, ".cache")
    settings = Settings(gpu="t4")
    lint_paths([work], settings, cache_dir=cache, keep_setups=False)
    start = time.perf_counter()
    result = lint_paths([work], settings, cache_dir=cache, keep_setups=False)
    cached = time.perf_counter() - start
    fixable = sum(1 for f in result.findings if f.autofix is not None)
    print(f"{count} files, {len(result.findings)} findings, {fixable} with an autofix; "
          f"cached lint {cached:.3f} s")

    parses = [0]
    original = fixing._PyTree.__init__

    def counting(self, text):
        parses[0] += 1
        original(self, text)

    times = {}
    for fmt in ("text", "json", "sarif", "markdown"):
        best = None
        for _ in range(args.repeat):
            again = lint_paths([work], settings, cache_dir=cache, keep_setups=False)
            fixing._PyTree.__init__ = counting
            parses[0] = 0
            start = time.perf_counter()
            render(again, fmt, io.StringIO(), color=False)
            took = time.perf_counter() - start
            fixing._PyTree.__init__ = original
            best = took if best is None else min(best, took)
        times[fmt] = (best, parses[0])
    for fmt, (took, n) in times.items():
        extra = f"  (+{took - times['text'][0]:.3f} s over text)" if fmt != "text" else ""
        print(f"  {fmt:<8} {took:.3f} s, {n} LibCST parses{extra}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
