"""Try ``lintlora --fix`` on a folder of real training scripts, notebooks and configs, and check
every file it changes (issue 17's property, on real files).

    python bench/trials/fix_trial.py FOLDER [--gpu NAME] [--model HUB_ID] [--unsafe]
                                            [--keep DIR] [--show-diff] [--quiet]

The folder is copied to a scratch folder (made a git repository, so it is its own project) and
``lintlora`` is run there as a user would run it (``python -m lintlora``, ``--format json``):

1. a plain lint: the findings and, for each, the fix offered (``autofix``: safety, edits);
2. ``--fix`` (with ``--unsafe-fixes`` when ``--unsafe``) ``--show-fixes``: the fixes applied
   (read from the ``--show-fixes`` list on standard error) and the findings remaining;
3. ``--fix`` again: it must change nothing (idempotence).

Per changed file it checks:

- **parses**: Python with LibCST; YAML with ``yaml.safe_load_all``; JSON with ``json``; a
  notebook as JSON and each code cell's source with LibCST (IPython ``!``/``%`` lines blanked);
- **outside**: characters changed outside the edits step 1 reported (``difflib`` opcodes
  between the original and the fixed text, each compared with the union of the reported edit
  ranges; a fix applied in a later pass, after an overlap, shows up here too and is named);
- **idem**: the second ``--fix`` changed the file again;
- **still**: a fixed finding (same code and message) reported again after the fix.

Prints one row per file with a finding or a fix (``files``, ``safe``/``unsafe`` fixes offered,
``applied``, ``parse`` failures, ``outside`` characters, ``idem``, ``still``, ``remaining``
findings) and the totals; ``--show-diff`` prints each file's diff for reading. Exit status 1
when a check failed. Nothing here imports or runs the linted code.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SUFFIXES = (".py", ".ipynb", ".yaml", ".yml", ".json")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FileRow:
    path: str
    safe: int = 0
    unsafe: int = 0
    applied: int = 0
    parse: str = ""
    outside: int = 0
    idem: bool = False
    still: list = field(default_factory=list)
    remaining: int = 0
    changed: bool = False


def _lintlora(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "lintlora", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1800)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _offset(starts: list[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def parse_problem(path: str, text: str) -> str:
    """Why ``text`` (the content of ``path``) does not parse, or ``""``."""
    import libcst as cst
    import yaml

    try:
        if path.endswith(".py"):
            cst.parse_module(text)
        elif path.endswith((".yaml", ".yml")):
            list(yaml.safe_load_all(text))
        elif path.endswith(".json"):
            json.loads(text)
        elif path.endswith(".ipynb"):
            notebook = json.loads(text)
            for index, cell in enumerate(c for c in notebook.get("cells", [])
                                         if c.get("cell_type") == "code"):
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else source
                lines = ["" if ln.lstrip().startswith(("!", "%")) else ln
                         for ln in source.splitlines(keepends=True)]
                try:
                    cst.parse_module("".join(lines))
                except cst.ParserSyntaxError as exc:
                    if _parses_original_cell(path, index):
                        return f"cell {index + 1}: {str(exc).splitlines()[0]}"
    except Exception as exc:  # noqa: BLE001 - any parse failure is the finding here
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return ""


_ORIGINAL_CELLS: dict[str, list[bool]] = {}


def _parses_original_cell(path: str, index: int) -> bool:
    """Whether code cell ``index`` of the original notebook parsed (a cell that never parsed
    is not the fix's fault)."""
    flags = _ORIGINAL_CELLS.get(path)
    return True if flags is None or index >= len(flags) else flags[index]


def _cell_parses(path: str, text: str) -> None:
    import libcst as cst

    try:
        notebook = json.loads(text)
    except ValueError:
        return
    flags = []
    for cell in (c for c in notebook.get("cells", []) if c.get("cell_type") == "code"):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines = ["" if ln.lstrip().startswith(("!", "%")) else ln
                 for ln in source.splitlines(keepends=True)]
        try:
            cst.parse_module("".join(lines))
            flags.append(True)
        except cst.ParserSyntaxError:
            flags.append(False)
    _ORIGINAL_CELLS[path] = flags


def outside_edits(old: str, new: str, edits: list[dict]) -> int:
    """Characters of ``old`` changed (or insertions made) outside every edit's range.

    The texts are compared line by line first (``difflib`` on whole files of a megabyte is
    quadratic), then character by character inside each changed block of lines.
    """
    starts = _line_starts(old)
    ranges, placed = [], []
    for e in edits:
        try:
            ranges.append((_offset(starts, e["line"], e["column"]),
                           _offset(starts, e["end_line"], e["end_column"])))
        except IndexError:
            continue
        placed.append(e)
    if _applied(old, ranges, placed) == new:
        return 0
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    new_starts = [0]
    for line in new_lines:
        new_starts.append(new_starts[-1] + len(line))
    old_starts = [0]
    for line in old_lines:
        old_starts.append(old_starts[-1] + len(line))
    bad = 0
    blocks = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, a1, a2, b1, b2 in blocks.get_opcodes():
        if tag == "equal":
            continue
        base = old_starts[a1]
        old_part = old[base:old_starts[a2]]
        new_part = new[new_starts[b1]:new_starts[b2]]
        matcher = difflib.SequenceMatcher(None, old_part, new_part, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                continue
            if not any(s <= base + i1 and base + i2 <= e for s, e in ranges):
                bad += max(i2 - i1, j2 - j1)
    return bad


def _applied(old: str, ranges: list[tuple[int, int]], edits: list[dict]) -> str | None:
    """``old`` with the reported edits applied (in order of position; insertions at one point
    in the order reported), or ``None`` when they overlap. An inserted line is placed the
    same way wherever ``difflib`` would align it, so this is the exact check; the opcode
    count is only the fallback that says how much differs."""
    order = sorted(range(len(ranges)), key=lambda i: (ranges[i][0], ranges[i][1], i))
    out, at = [], 0
    for i in order:
        start, end = ranges[i]
        if start < at:
            return None
        out += [old[at:start], edits[i]["new_text"]]
        at = end
    return "".join(out) + old[at:]


def _fixes_applied(stderr: str) -> dict[str, int]:
    """File -> fixes applied, from ``--show-fixes``' list after ``Fixed N problems:``."""
    counts: dict[str, int] = {}
    in_list = False
    for line in stderr.splitlines():
        if line.startswith("Fixed "):
            in_list = line.endswith(":")
            continue
        if not line.startswith("  "):
            in_list = False
            continue
        if in_list:
            m = re.match(r"  (.*?):(?:cell \d+:line \d+|\d+:\d+) LL\d{3} ", line)
            if m:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def _rel(path: str, work: str) -> str:
    return os.path.relpath(os.path.join(work, path), work)


def trial(folder: str, options: list[str], unsafe: bool, work: str) -> tuple[list[FileRow], str]:
    """Run the three steps on a copy of ``folder`` in ``work``; rows and the joined diffs."""
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    files = sorted(str(p.relative_to(work)) for p in Path(work).rglob("*")
                   if p.is_file() and p.suffix in SUFFIXES and ".git" not in p.parts)
    before = {f: (Path(work) / f).read_text(encoding="utf-8", errors="surrogateescape")
              for f in files}
    for f in files:
        if f.endswith(".ipynb"):
            _cell_parses(f, before[f])
    base = ["--no-cache", "--format", "json", *options]
    lint = json.loads(_lintlora([*base, "."], work).stdout or "{}")
    rows = {f: FileRow(f) for f in files}
    edits: dict[str, list] = {}
    fixed_keys: dict[str, set] = {}
    for finding in lint.get("findings", []):
        path = _rel(finding["path"], work)
        row = rows.setdefault(path, FileRow(path))
        fix = finding.get("autofix")
        if not fix:
            continue
        if fix["safety"] == "safe":
            row.safe += 1
        else:
            row.unsafe += 1
        if fix["safety"] == "safe" or unsafe:
            for e in fix["edits"]:
                edits.setdefault(_rel(e["path"], work), []).append(e)
            fixed_keys.setdefault(path, set()).add((finding["code"], finding["message"]))
    fix_args = ["--fix", "--show-fixes", *(["--unsafe-fixes"] if unsafe else [])]
    fixed = _lintlora([*base, *fix_args, "."], work)
    for path, n in _fixes_applied(fixed.stderr).items():
        rows.setdefault(path, FileRow(path)).applied += n
    after_lint = json.loads(fixed.stdout or "{}")
    for finding in after_lint.get("findings", []):
        path = _rel(finding["path"], work)
        row = rows.setdefault(path, FileRow(path))
        row.remaining += 1
        if (finding["code"], finding["message"]) in fixed_keys.get(path, set()):
            row.still.append(finding["code"])
    after = {f: (Path(work) / f).read_text(encoding="utf-8", errors="surrogateescape")
             for f in files}
    _lintlora([*base, *fix_args, "."], work)
    diffs = []
    for f in files:
        row = rows[f]
        now = (Path(work) / f).read_text(encoding="utf-8", errors="surrogateescape")
        row.idem = now != after[f]
        if after[f] == before[f]:
            continue
        row.changed = True
        row.parse = parse_problem(f, after[f])
        row.outside = outside_edits(before[f], after[f], edits.get(f, []))
        diffs.append("".join(difflib.unified_diff(
            before[f].splitlines(keepends=True), after[f].splitlines(keepends=True),
            f"a/{f}", f"b/{f}")))
    return [r for r in rows.values() if r.safe or r.unsafe or r.applied or r.changed
            or r.remaining], "\n".join(diffs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--gpu")
    parser.add_argument("--model")
    parser.add_argument("--unsafe", action="store_true")
    parser.add_argument("--keep", help="the scratch folder to use (kept afterwards)")
    parser.add_argument("--show-diff", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="totals only")
    args = parser.parse_args(argv)
    options = []
    if args.gpu:
        options += ["--gpu", args.gpu]
    if args.model:
        options += ["--model", args.model]
    work = args.keep or tempfile.mkdtemp(prefix="fix-trial-")
    try:
        rows, diffs = trial(args.folder, options, args.unsafe, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    header = f"{'file':60} safe unsafe applied parse outside idem still remaining"
    total = FileRow("TOTAL")
    if not args.quiet:
        print(header)
    for r in sorted(rows, key=lambda r: r.path):
        if not args.quiet:
            print(f"{r.path[-60:]:60} {r.safe:4} {r.unsafe:6} {r.applied:7} "
                  f"{'FAIL' if r.parse else 'ok':5} {r.outside:7} {'NO' if r.idem else 'ok':4} "
                  f"{','.join(r.still) or '-':5} {r.remaining:9}")
            if r.parse:
                print(f"    parse: {r.parse}")
        total.safe += r.safe
        total.unsafe += r.unsafe
        total.applied += r.applied
        total.outside += r.outside
        total.remaining += r.remaining
        total.still += r.still
    failures = sum(bool(r.parse) for r in rows)
    idem = sum(r.idem for r in rows)
    changed = sum(r.changed for r in rows)
    print(f"{args.folder} {' '.join(options)}{' --unsafe-fixes' if args.unsafe else ''}: "
          f"files with findings {len(rows)}, changed {changed}; fixes offered safe "
          f"{total.safe} unsafe {total.unsafe}; applied {total.applied}; parse failures "
          f"{failures}; chars outside edits {total.outside}; non-idempotent {idem}; fixed "
          f"findings still reported {len(total.still)}; findings remaining {total.remaining}")
    if args.show_diff and diffs:
        print(diffs)
    return 1 if failures or idem or total.outside or total.still else 0


if __name__ == "__main__":
    sys.exit(main())
