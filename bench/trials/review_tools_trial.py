"""Trial of the review-tool formats and the editor server on a folder of real files (issue 18,
trial18): what a new user sees running them on public training scripts and configs.

For FOLDER (copied to a temporary folder first; the original is never written):

(a) formats: ``lintlora . --format json|rdjson|gitlab|junit|concise`` (run in the copy, the
    CLI as a user runs it); the documents validated against ``fixtures/schemas`` (reviewdog's
    JSON schemas, GitLab's ``codeclimate.json`` and the stricter report schema, Jenkins'
    ``junit-10.xsd`` with xmlschema, and junitparser reading it back); per file: rdjson,
    gitlab and concise positions equal to the JSON findings' (rdjson columns as UTF-8 bytes of
    the file's own line); the rdjson suggestions applied to the file equal to ``lintlora
    --fix``'s result; gitlab fingerprints unique, and the same after a comment line is
    inserted at the top of every file (a JSON notebook: left as is).
(b) server: ``python -m lintlora server`` over stdio (``tests/lsp_client.py``), one document
    at a time: open, then edits as a user makes them (a keyword typed letter by letter on a
    new line, a line deleted, a block pasted), each an incremental range change as an editor
    sends it (UTF-16 positions; ``--full-sync``: the whole text); after the open and
    after each of the three steps, the diagnostics' (code, line) equal ``lintlora FILE
    --format json``'s findings, errors and notices for the same text (a notebook: codes only);
    a hover on each diagnostic answers; the "fix all safe" code action's edit applied to the
    opened text equals ``lintlora --fix``'s, and each diagnostic's quick fix equals its JSON
    finding's autofix edits; the time from each ``didChange`` to its
    ``publishDiagnostics``. cst_chunks: for every Python file, the chunked parse's code, tree
    and node positions equal ``libcst.parse_module``'s, and the lint results are equal with
    and without it.

Run: ``python bench/trials/review_tools_trial.py FOLDER [--gpu rtx3090] [--no-server]
[--max-files N]``. Prints one line per file and totals.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
SCHEMAS = ROOT / "fixtures" / "schemas"
SUFFIXES = (".py", ".ipynb", ".yaml", ".yml")
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "PYTHONUTF8": "1",
       "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def cli(cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", *args],
                          cwd=cwd, capture_output=True, env=ENV, timeout=900)
    if done.returncode not in (0, 1):
        raise SystemExit(f"lintlora {' '.join(args)}: status {done.returncode}: "
                         f"{done.stderr.decode()[-2000:]}")
    return done.stdout.decode("utf-8")


def files_of(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES)


# -- (a) formats --
def validators():
    import jsonschema
    import xmlschema
    from referencing import Registry, Resource

    with open(SCHEMAS / "reviewdog" / "DiagnosticResult.json", encoding="utf-8") as handle:
        rd = json.load(handle)
    rd_v = jsonschema.validators.validator_for(rd)(
        rd, registry=Registry().with_resource("", Resource.from_contents(rd)))
    gl = [json.loads((SCHEMAS / "gitlab" / n).read_text(encoding="utf-8"))
          for n in ("code-quality-report.json", "codeclimate.json")]
    xsd = xmlschema.XMLSchema(str(SCHEMAS / "junit" / "junit-10.xsd"))
    return rd_v, gl, xsd


def by_path(items, key="path"):
    out = defaultdict(list)
    for item in items:
        out[item.get(key)].append(item)
    return out


def utf8_col(line: str, column: int) -> int:
    return len(line[:column - 1].encode("utf-8")) + 1


def apply_suggestions(text: str, suggestions: list[dict]) -> str | None:
    """Whole-line replacements (reviewdog's line-wise suggestion), bottom first; None when
    two overlap."""
    lines = text.splitlines(keepends=True)
    spans = sorted(((s["range"]["start"]["line"], s["range"]["end"]["line"], s["text"])
                    for s in suggestions), reverse=True)
    last_start = None
    for first, last, new in spans:
        if last_start is not None and last >= last_start:
            return None
        if not 1 <= first <= last <= len(lines):
            return None  # a line the file does not have
        newline = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
        lines[first - 1:last] = [new + newline]
        last_start = first
    return "".join(lines)


def formats_check(work: Path, files: list[str], gpu: str) -> dict[str, dict]:
    import jsonschema
    import junitparser

    rd_v, gl_schemas, xsd = validators()
    common = ["--gpu", gpu, "."]
    js = json.loads(cli(work, *common, "--format", "json"))
    rd = json.loads(cli(work, *common, "--format", "rdjson"))
    gl = json.loads(cli(work, *common, "--format", "gitlab"))
    cli(work, *common, "--format", "junit", "-o", "junit.xml")
    concise = cli(work, *common, "--format", "concise")
    problems = []
    for err in rd_v.iter_errors(rd):
        problems.append(f"rdjson: {err.message[:200]}")
    for schema in gl_schemas[:1]:
        for err in jsonschema.validators.validator_for(schema)(schema).iter_errors(gl):
            problems.append(f"gitlab: {err.message[:200]}")
    for item in gl:
        for err in jsonschema.validators.validator_for(gl_schemas[1])(gl_schemas[1]
                                                                     ).iter_errors(item):
            problems.append(f"gitlab entry: {err.message[:200]}")
    for err in xsd.iter_errors(str(work / "junit.xml")):
        problems.append(f"junit: {str(err)[:200]}")
    suites = junitparser.JUnitXml.fromfile(str(work / "junit.xml"))
    junit_failures = Counter()
    for suite in suites:
        for case in suite:
            if case.result:
                junit_failures[suite.name] += 1
    fingerprints = Counter(item["fingerprint"] for item in gl)
    problems += [f"gitlab: fingerprint {f[:12]} x{n}" for f, n in fingerprints.items() if n > 1]

    # fingerprints after a comment line is inserted at the top of every file
    moved = Path(tempfile.mkdtemp(prefix="trial18-moved-"))
    shutil.copytree(work, moved, dirs_exist_ok=True)
    for rel in files:
        if not rel.endswith(".ipynb"):
            p = moved / rel
            p.write_bytes(b"# an inserted line\n" + p.read_bytes())
    gl2 = json.loads(cli(moved, *common, "--format", "gitlab"))
    old = {(i["location"]["path"], i["fingerprint"]): i["location"]["lines"]["begin"] for i in gl}
    new = {(i["location"]["path"], i["fingerprint"]): i["location"]["lines"]["begin"] for i in gl2}

    # --fix on a copy
    fixed = Path(tempfile.mkdtemp(prefix="trial18-fixed-"))
    shutil.copytree(work, fixed, dirs_exist_ok=True)
    cli(fixed, *common, "--fix")

    findings = by_path(js["findings"])
    rd_by = defaultdict(list)
    for d in rd["diagnostics"]:
        rd_by[d.get("location", {}).get("path")].append(d)
    gl_by = defaultdict(list)
    for i in gl:
        gl_by[i["location"]["path"]].append(i)
    concise_by = defaultdict(list)
    for line in concise.splitlines():
        head = line.split(": ", 1)[0]
        parts = head.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit():
            concise_by[parts[0]].append((int(parts[1]), int(parts[2]), line.split(": ", 1)[1][:5]))
    out = {}
    for rel in files:
        text = (work / rel).read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        mine = findings.get(rel, [])
        bad = []
        # rdjson positions
        rd_f = [d for d in rd_by.get(rel, []) if d["code"]["value"].startswith("LL0")
                and d["code"]["value"] not in ("LL000",)]
        want = sorted((f["code"], f["line"]) for f in mine)
        got = sorted((d["code"]["value"], d["location"]["range"]["start"]["line"])
                     for d in rd_by.get(rel, []) if any(d["code"]["value"] == f["code"]
                                                        for f in mine))
        if not rel.endswith(".ipynb"):
            if want != got:
                bad.append(f"rdjson lines {got} != json {want}")
            for f in mine:
                match = [d for d in rd_f if d["code"]["value"] == f["code"]
                         and d["location"]["range"]["start"]["line"] == f["line"]]
                col = match[0]["location"]["range"]["start"].get("column") if match else None
                if match and col is not None and f["line"] <= len(lines) and \
                        col != utf8_col(lines[f["line"] - 1], f["column"]):
                    bad.append(f"rdjson column {col} != utf8 of json column {f['column']}")
            gl_lines = sorted((i["check_name"], i["location"]["lines"]["begin"])
                              for i in gl_by.get(rel, []) if i["check_name"].startswith("LL0")
                              and i["check_name"] != "LL000")
            if gl_lines != want:
                bad.append(f"gitlab lines {gl_lines} != json {want}")
            conc = sorted((c, ln) for ln, _col, c in concise_by.get(rel, []))
            if conc != want:
                bad.append(f"concise {conc} != json {want}")
        if junit_failures.get(rel, 0) < len(mine):
            bad.append(f"junit failures {junit_failures.get(rel, 0)} < {len(mine)}")
        # gitlab fingerprints stable
        for (path, fp), line in old.items():
            if path == rel and not rel.endswith(".ipynb"):
                if (path, fp) not in new:
                    bad.append(f"gitlab fingerprint of line {line} changed after an insert")
                elif new[(path, fp)] != line + 1 and (line, new[(path, fp)]) != (1, 1):
                    # (1 -> 1: a finding about the whole file stays at 1:1)
                    bad.append(f"gitlab line {line} -> {new[(path, fp)]} after an insert")
        # suggestions applied == --fix
        sugg = [s for d in rd_by.get(rel, []) for s in d.get("suggestions", [])]
        applied = None
        if sugg:
            applied = apply_suggestions(text, sugg)
            after_fix = (fixed / rel).read_text(encoding="utf-8", errors="replace")
            if applied is None:
                bad.append(f"rdjson: {len(sugg)} suggestions overlap or lie outside the file")
            elif applied != after_fix:
                bad.append("rdjson suggestions applied != lintlora --fix")
        out[rel] = {"findings": len(mine), "suggestions": len(sugg),
                    "applied": bool(sugg) and applied is not None and not any(
                        "suggestions" in b for b in bad), "problems": bad, "json": mine}
    out["(documents)"] = {"problems": problems, "findings": len(js["findings"]), "fixed": fixed}
    return out


# -- (b) server --
def edits_for(rel: str, text: str) -> list[tuple[str, list[str]]]:
    """[(step name, [full texts, one per change])]: typing, deleting a line, pasting."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    if rel.endswith(".py"):
        at = next((i + 1 for i in range(len(lines) - 1, -1, -1)
                   if lines[i].startswith(("import ", "from "))), 0)
        word = "import math  # α𝛼é"  # a non-BMP character: two UTF-16 units
    elif rel.endswith((".yaml", ".yml")):
        at = len(lines)
        word = "lora_dropout: 0.05  # 𝛼é"
    else:
        return []
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    typing = ["".join(lines[:at] + [word[:n] + "\n"] + lines[at:])
              for n in range(1, len(word) + 1)]
    typed = typing[-1].splitlines(keepends=True)
    mid = len(typed) // 2
    deleted = "".join(typed[:mid] + typed[mid + 1:])
    block = "".join(typed[:min(12, len(typed))])
    pasted = deleted + ("\n" if not deleted.endswith("\n") else "") + block
    return [("typed", typing), ("deleted", [deleted]), ("pasted", [pasted])]


def _position(text: str, offset: int) -> dict:
    """The LSP position (0-based line, UTF-16 code units) of character ``offset``."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": len(text[start:offset].encode("utf-16-le")) // 2}


def range_change(old: str, new: str) -> dict:
    """One incremental ``contentChanges`` item turning ``old`` into ``new`` (the common prefix
    and suffix kept), as an editor sends for a keystroke, a deleted line or a paste."""
    a = 0
    limit = min(len(old), len(new))
    while a < limit and old[a] == new[a]:
        a += 1
    b = 0
    while b < limit - a and old[len(old) - 1 - b] == new[len(new) - 1 - b]:
        b += 1
    return {"range": {"start": _position(old, a), "end": _position(old, len(old) - b)},
            "text": new[a:len(new) - b]}


def server_check(work: Path, files: list[str], gpu: str, incremental: bool = True
                 ) -> dict[str, dict]:
    from lsp_client import LspClient

    client = LspClient(cwd=str(work), env=ENV)
    client.request("initialize", {
        "processId": os.getpid(), "rootUri": work.as_uri(),
        "capabilities": {"textDocument": {"codeAction": {"codeActionLiteralSupport": {
            "codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}}}}},
        "initializationOptions": {"gpu": gpu}})
    client.notify("initialized", {})
    out = {}
    import time

    for rel in files:
        path = work / rel
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8", errors="replace")
        lang = {".py": "python", ".ipynb": "json"}.get(path.suffix, "yaml")
        mark = client.mark()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": lang, "version": 1, "text": text}})
        diags = client.diagnostics(uri, since=mark, version=1, timeout=120)
        checkpoints = [("open", text, diags)]
        hovers_missing = 0
        for d in diags:
            h = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                      "position": d["range"]["start"]})
            if not h:
                hovers_missing += 1
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0},
                      "end": {"line": max(text.count("\n"), 1), "character": 0}},
            "context": {"diagnostics": diags, "only": ["source.fixAll"]}}) or []
        fix_all = None
        for a in actions:
            if a.get("kind", "").startswith("source.fixAll") and a.get("edit"):
                fix_all = apply_workspace_edit(text, a["edit"], uri)
        quick = []  # (code, line, the text after the diagnostic's first quick fix)
        for d in diags:
            acts = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": d["range"],
                "context": {"diagnostics": [d], "only": ["quickfix"]}}) or []
            for a in acts:  # the range may overlap other findings: their actions come too
                mine = [x.get("code") for x in a.get("diagnostics") or ()] == [d.get("code")] \
                    or a.get("title", "").endswith(f"({d.get('code')})")
                if a.get("kind") == "quickfix" and a.get("edit") and mine:
                    quick.append((d.get("code"), d["range"]["start"]["line"] + 1,
                                  "(unsafe)" in a.get("title", ""),
                                  apply_workspace_edit(text, a["edit"], uri)))
                    break
        version = 1
        times = []
        current = text
        for step, texts in edits_for(rel, text):
            for new_text in texts:
                version += 1
                mark = client.mark()
                change = range_change(current, new_text) if incremental else {"text": new_text}
                current = new_text
                t0 = time.perf_counter()
                client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [change]})
                got = client.diagnostics(uri, since=mark, version=version, timeout=120)
                times.append(time.perf_counter() - t0)
            checkpoints.append((step, texts[-1], got))
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        out[rel] = {"checkpoints": checkpoints, "hovers_missing": hovers_missing,
                    "fix_all": fix_all, "quick": quick, "times": times, "alive": client.proc.poll() is None}
        if client.proc.poll() is not None:
            break
    client.request("shutdown")
    client.notify("exit")
    client.close()
    return out


def apply_workspace_edit(text: str, edit: dict, uri: str) -> str:
    """UTF-16 positions (the LSP default) applied bottom first."""
    changes = (edit.get("changes") or {}).get(uri)
    if changes is None:
        changes = [e for dc in edit.get("documentChanges", [])
                   if dc.get("textDocument", {}).get("uri") == uri for e in dc["edits"]]
    lines = text.splitlines(keepends=True) + [""]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos):
        line = lines[pos["line"]] if pos["line"] < len(lines) else ""
        units = line.encode("utf-16-le")[:2 * pos["character"]].decode("utf-16-le")
        return starts[pos["line"]] + len(units)

    for e in sorted(changes, key=lambda e: (e["range"]["start"]["line"],
                                            e["range"]["start"]["character"]), reverse=True):
        text = text[:offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]):]
    return text


def apply_json_edits(text: str, edits: list[dict]) -> str:
    """The JSON report's autofix edits (1-based lines, character columns, exclusive end)
    applied bottom first."""
    lines = text.splitlines(keepends=True) + [""]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[min(line, len(lines)) - 1] + column - 1

    for e in sorted(edits, key=lambda e: (e["line"], e["column"]), reverse=True):
        text = (text[:offset(e["line"], e["column"])] + e["new_text"]
                + text[offset(e["end_line"], e["end_column"]):])
    return text


def cli_sets(work: Path, gpu: str, versions: dict[str, list[tuple[str, str]]]) -> dict:
    """(rel, step) -> Counter of (code, line) from ``lintlora FILE --format json`` on the
    step's text (one copy of the folder per step, every file at that step)."""
    out = {}
    steps = sorted({step for v in versions.values() for step, _ in v})
    for step in steps:
        copy = Path(tempfile.mkdtemp(prefix=f"trial18-{step}-"))
        shutil.copytree(work, copy, dirs_exist_ok=True)
        names = []
        for rel, vs in versions.items():
            for s, text in vs:
                if s == step:
                    (copy / rel).write_text(text, encoding="utf-8")
                    names.append(rel)
        if not names:
            continue
        js = json.loads(cli(copy, "--gpu", gpu, "--format", "json", *names))
        for rel in names:
            out[(rel, step)] = Counter()
        for group in ("findings", "errors", "notices"):
            for item in js.get(group, []):
                if item.get("path") in names:
                    line = item.get("line") or 1
                    out[(item["path"], step)][(item["code"], line)] += 1
    return out


def chunk_check(work: Path, rel: str, gpu: str, session) -> list[str]:
    import libcst as cst

    from lintlora.extract._cstpos import _fast_index
    from lintlora.extract.cst_chunks import ChunkParser

    source = (work / rel).read_text(encoding="utf-8", errors="replace")
    try:
        full = cst.parse_module(source)
    except Exception:  # noqa: BLE001
        return []
    bad = []
    parser = ChunkParser()
    module = parser.parse(source)
    if module.code != source:
        bad.append("chunked code != text")
    if not module.deep_equals(full):
        bad.append("chunked tree != whole-file tree")
    index = parser.index(module, source)
    if index is not None:
        ref = _fast_index(module, source)
        stack = [module]
        while stack:
            node = stack.pop()
            if index.get(node) != ref.get(node):
                bad.append(f"position of a {type(node).__name__} differs")
                break
            stack.extend(node.children)
    path = str(work / rel)
    session.parser = ChunkParser()
    a = session.lint(path, source)
    session.parser = None
    b = session.lint(path, source)
    if a.findings != b.findings or a.setups != b.setups:
        bad.append("lint results differ with the chunked parse")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--gpu", default="rtx3090")
    ap.add_argument("--no-server", action="store_true")
    ap.add_argument("--max-files", type=int, default=0)
    ap.add_argument("--full-sync", action="store_true",
                    help="send each edit as the whole text (default: a range change)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trial18-work-"))
    shutil.copytree(Path(args.folder), work, dirs_exist_ok=True)
    (work / ".git").mkdir(exist_ok=True)
    files = files_of(work)
    if args.max_files:
        files = files[:args.max_files]
    fmt = formats_check(work, files, args.gpu)
    doc = fmt.pop("(documents)")
    srv = {} if args.no_server else server_check(work, files, args.gpu, not args.full_sync)
    versions = {rel: [(step, text) for step, text, _ in r["checkpoints"]]
                for rel, r in srv.items()}
    expected = cli_sets(work, args.gpu, versions) if srv else {}
    from lintlora.server_lint import LintSession

    session = LintSession({"gpu": args.gpu})
    totals = Counter()
    all_times = []
    for rel in files:
        f = fmt[rel]
        mism = []
        lat = ""
        if rel in srv:
            s = srv[rel]
            for step, _text, diags in s["checkpoints"]:
                got = Counter((d.get("code"), d["range"]["start"]["line"] + 1) for d in diags)
                want = expected.get((rel, step), Counter())
                if rel.endswith(".ipynb"):
                    got = Counter(c for c, _ in got.elements())
                    want = Counter(c for c, _ in want.elements())
                if got != want:
                    mism.append(f"{step}: server-only {sorted((got - want).elements())[:4]} "
                                f"cli-only {sorted((want - got).elements())[:4]}")
            after_fix = (doc["fixed"] / rel).read_text(encoding="utf-8", errors="replace")
            text = (work / rel).read_text(encoding="utf-8", errors="replace")
            if (s["fix_all"] or text) != after_fix:
                mism.append("server fix-all != lintlora --fix" if s["fix_all"] is not None
                            else "no server fix-all but lintlora --fix changes the file")
            for code, line, _unsafe, after in s["quick"]:
                wanted = [apply_json_edits(text, g["autofix"]["edits"]) for g in f["json"]
                          if g["code"] == code and g["line"] == line and g.get("autofix")
                          and g["autofix"]["edits"]]
                if not rel.endswith(".ipynb") and after not in wanted:
                    mism.append(f"quick fix of {code} line {line} != its JSON autofix edits")
            if s["hovers_missing"]:
                mism.append(f"{s['hovers_missing']} hovers missing")
            if not s["alive"]:
                mism.append("SERVER DIED")
            if s["times"]:
                t = sorted(s["times"])
                all_times += t
                lat = (f"{len(s['quick'])} quick fixes checked; edit ms median {1000 * statistics.median(t):.0f} "
                       f"p90 {1000 * t[int(round(0.9 * (len(t) - 1)))]:.0f}")
        chunks = chunk_check(work, rel, args.gpu, session) if rel.endswith(".py") else []
        totals["files"] += 1
        totals["format problems"] += bool(f["problems"])
        totals["suggestions"] += f["suggestions"]
        totals["files with suggestions applied"] += f["applied"]
        totals["server mismatches"] += bool(mism)
        totals["quick fixes checked"] += len(srv.get(rel, {}).get("quick", ()))
        totals["chunk mismatches"] += bool(chunks)
        flag = "ok" if not (f["problems"] or mism or chunks) else "!!"
        print(f"{flag} {rel}: {f['findings']} findings, {f['suggestions']} suggestions"
              f"{' (applied = --fix)' if f['applied'] else ''}; {lat}")
        for p in f["problems"] + mism + chunks:
            print(f"     {p}")
    print(f"documents: {doc['findings']} findings; schema problems: {doc['problems'] or 'none'}")
    print(", ".join(f"{k}: {v}" for k, v in totals.items()))
    if all_times:
        all_times.sort()
        print(f"server edits: {len(all_times)}, median {1000 * statistics.median(all_times):.1f} "
              f"ms, p90 {1000 * all_times[int(round(0.9 * (len(all_times) - 1)))]:.1f} ms, "
              f"max {1000 * all_times[-1]:.1f} ms")


if __name__ == "__main__":
    main()
