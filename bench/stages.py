"""Where lintlora's time goes, on the benchmark corpus (issue 8: "one parse, one pass").

    python bench/stages.py [--files 600] [--corpus DIR] [--cprofile] [--top 25]
    python bench/stages.py --paths fixtures       # the shipped fixtures instead of a corpus
    python bench/stages.py --gpu rtx4090          # with a GPU named: the rules that judge the
                                                  # fit (LL001, LL008, LL010...) estimate more

Lints the corpus (:mod:`bench.corpus`) in this process, one file after another, without the
results cache, and prints the time spent in each stage, measured by wrapping the functions that
implement it (``time.perf_counter``, so the figures are wall time of this process; a stage
nested in another is counted in both, which the indentation shows):

- reading and decoding, the prefilter (:mod:`lintlora.prefilter`), the extractor's preflight
  (CPython's AST parse and depth check), LibCST's parse, the one walk (``build_index``),
  positions (``index_positions``), recognition and assembly, the YAML extractor, rules (with
  the estimator they call), suppression comments;
- with ``--cprofile``, also the functions with the most time of their own (cProfile adds its
  overhead to Python-heavy code, so the stage table is the one to trust for proportions).
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import collections  # noqa: E402
import cProfile  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import resource  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_corpus", BENCH / "corpus.py")
corpus_module = importlib.util.module_from_spec(_spec)
sys.modules["bench_corpus"] = corpus_module
_spec.loader.exec_module(corpus_module)

# (label, module, attribute, depth): depth is the indentation in the table
STAGES = (
    ("lint_file (everything per file)", "lintlora.engine", "lint_file", 0),
    ("read and decode", "lintlora.engine", "read_source", 1),
    ("extract: Python", "lintlora.extract.python", "extract_python_source", 1),
    ("prefilter", "lintlora.prefilter", "skips_unparsed", 2),
    ("preflight (CPython AST, depth)", "lintlora.extract.python", "preflight", 2),
    ("LibCST parse", "libcst", "parse_module", 2),
    ("walk (build_index)", "lintlora.extract.pyindex", "build_index", 2),
    ("positions (index_positions)", "lintlora.extract._cstpos", "index_positions", 2),
    ("recognise (classify)", "lintlora.extract.python", "_Extractor.classify", 2),
    ("assemble setups", "lintlora.extract.python", "_Extractor.assemble", 2),
    ("extract: YAML/JSON", "lintlora.extract.yaml_config", "extract_config", 1),
    ("rules (with estimates)", "lintlora.rules.base", "Rule.check", 1),
    ("estimate (Context.estimate)", "lintlora.context", "Context.estimate", 2),
    ("suppression and sorting", "lintlora.engine", "_finish", 1),
)


def _wrap(totals: collections.Counter, calls: collections.Counter) -> None:
    import importlib

    for label, module_name, attr, _depth in STAGES:
        module = importlib.import_module(module_name)
        owner, name = module, attr
        if "." in attr:
            cls_name, name = attr.split(".")
            owner = getattr(module, cls_name)
        original = getattr(owner, name)

        def timed(*args, __original=original, __label=label, **kwargs):
            start = time.perf_counter()
            try:
                return __original(*args, **kwargs)
            finally:
                totals[__label] += time.perf_counter() - start
                calls[__label] += 1

        if label.startswith("rules"):
            # every rule class overrides check: wrap each subclass's own method instead
            from lintlora.engine import available_rules

            for rule in available_rules():
                own = rule.__dict__.get("check")
                if own is not None:
                    def rule_timed(self, *args, __original=own, __label=label, **kwargs):
                        start = time.perf_counter()
                        try:
                            return list(__original(self, *args, **kwargs))
                        finally:
                            totals[__label] += time.perf_counter() - start
                            calls[__label] += 1
                    setattr(rule, "check", rule_timed)
            continue
        setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--corpus", type=Path,
                        default=Path(tempfile.gettempdir()) / "lintlora-profile-corpus")
    parser.add_argument("--paths", nargs="+", type=Path,
                        help="lint these files/folders as they are (e.g. fixtures) instead of a corpus")
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--gpu", help="lint against this GPU (default: none named)")
    options = parser.parse_args(argv)

    if options.paths:
        targets = [str(p) for p in options.paths]
    else:
        corpus = corpus_module.build_corpus(options.corpus, files=options.files, seed=options.seed)
        print(corpus_module.describe(corpus))
        targets = [str(options.corpus)]
    # import what a run imports, so the table shows linting, not first imports
    from lintlora.engine import available_rules, lint_paths
    import lintlora.extract.python  # noqa: F401
    import lintlora.extract.yaml_config  # noqa: F401
    import lintlora.context  # noqa: F401
    import libcst  # noqa: F401

    available_rules()
    totals: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    _wrap(totals, calls)
    profiler = cProfile.Profile() if options.cprofile else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    from lintlora.settings import Settings

    result = lint_paths(targets, Settings(gpu=options.gpu), jobs=1, keep_setups=False)
    if profiler:
        profiler.disable()
    total = time.perf_counter() - start
    print(f"\n{len(result.files)} files, {len(result.findings)} findings, {total:.2f} s "
          f"({total * 1000 / max(len(result.files), 1):.1f} ms a file), one process, no cache"
          + (" (under cProfile)" if profiler else "")
          + (f", --gpu {options.gpu}" if options.gpu else ", no GPU named"))
    # ru_maxrss: KiB on Linux, bytes on macOS (getrusage(2))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    print(f"peak RSS of this process: {rss:.0f} MiB")
    print(f"\n{'stage':<44}{'seconds':>9}{'share':>8}{'calls':>8}")
    for label, _module, _attr, depth in STAGES:
        if label in totals:
            print(f"{'  ' * depth + label:<44}{totals[label]:9.2f}{totals[label] / total:8.1%}"
                  f"{calls[label]:8d}")
    if profiler:
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(options.top)
            text = out.getvalue()
            print(f"\n-- top {options.top} by {order} --")
            print(text[text.index("ncalls"):].rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
