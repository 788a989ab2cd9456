"""No import cycle among lintlora's modules, and no import up the layers (DESIGN.md, "Layers").

The graph is built from the source with :mod:`ast` (nothing is imported): every ``import`` and
``from ... import`` at module level and inside functions, except those under ``if
TYPE_CHECKING:`` (annotations only, never run). A cycle is found with Tarjan's strongly
connected components.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lintlora"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The lintlora modules imported by ``tree`` (module ``name``), TYPE_CHECKING blocks out."""
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        # the module itself, or its nearest enclosing module that exists
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("lintlora"):
                    target = resolve(alias.name)
                    if target:
                        found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("lintlora"):
                for alias in node.names:  # `from lintlora import safeio` imports a module
                    sub = f"{module}.{alias.name}"
                    target = resolve(sub if sub in modules else module)
                    if target:
                        found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {(_module_name(p)): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = _imports(tree, name, path.name == "__init__.py", modules)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


KNOWN_CYCLES: list[list[str]] = [
    # inside the estimator, through function-level imports (architecture <-> params/memory
    # and their helpers): one layer, one package; not untied yet
    ["lintlora.estimate.architecture", "lintlora.estimate.framework_terms",
     "lintlora.estimate.memory", "lintlora.estimate.moe_shapes", "lintlora.estimate.params",
     "lintlora.estimate.seq2seq", "lintlora.estimate.stored_quant"],
    # the notebook extractor runs the Python one, which asks it for IPython hints
    ["lintlora.extract.notebook", "lintlora.extract.python"],
]
"""Cycles that remain, each inside one package of one layer (the 17-module cycle through the
cache, the engine, extraction, the estimator, the context and the pool is gone: issue 15 item
6). A new cycle, or one that grows, fails."""


def _layer(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_import_cycle():
    cycles = _cycles(import_graph())
    assert cycles == KNOWN_CYCLES, "\n".join(" <-> ".join(c) for c in cycles)


def test_no_cycle_crosses_packages():
    for cycle in _cycles(import_graph()):
        assert len({_layer(m) for m in cycle}) == 1, cycle


def _importers(graph, prefix_from, targets):
    out = []
    for name, imported in graph.items():
        if name == prefix_from or name.startswith(prefix_from + "."):
            for t in imported:
                if any(t == x or t.startswith(x + ".") for x in targets):
                    out.append((name, t))
    return sorted(out)


ENGINE_AND_ABOVE = ["lintlora.cache", "lintlora.context", "lintlora.engine", "lintlora.rules",
                    "lintlora.report", "lintlora.cli", "lintlora.cli_app", "lintlora.parallel",
                    "lintlora.runs", "lintlora.file_result", "lintlora.suppression",
                    "lintlora.facts"]


def test_the_cache_does_not_import_the_engine():
    graph = import_graph()
    for module in ("lintlora.cache", "lintlora.cache_entry", "lintlora.cache_folder",
                   "lintlora.parallel", "lintlora.file_result"):
        assert "lintlora.engine" not in graph[module], module


def test_extraction_imports_nothing_above_it():
    bad = _importers(import_graph(), "lintlora.extract", ENGINE_AND_ABOVE + ["lintlora.estimate"])
    assert bad == [], bad


KNOWN_ESTIMATE_UPWARD = {
    # estimate/command is a command (argument parsing, files read through the engine), not
    # arithmetic: it belongs with the command line (DESIGN.md "Layers"); moving it is its own
    # change (it is imported as `lintlora.estimate.command` by the CLI and the tests)
    ("lintlora.estimate.command", "lintlora.engine"),
    ("lintlora.estimate.command", "lintlora.context"),
    ("lintlora.estimate.command", "lintlora.report"),
    ("lintlora.estimate.command", "lintlora.cli_app"),
    ("lintlora.estimate.command", "lintlora.facts"),
    ("lintlora.estimate.command", "lintlora.extract"),
    ("lintlora.estimate.command", "lintlora.runs"),  # the launch of the estimated file, as lint finds it
    # estimate/fit borrows the wording of extraction's dialects and of facts
    ("lintlora.estimate.fit", "lintlora.facts"),
    ("lintlora.estimate.fit", "lintlora.extract"),
    # from_setup reads facts' wording of values (facts is above the estimator)
    ("lintlora.estimate.from_setup", "lintlora.facts"),
    # the architecture lookup reads a model folder's YAML/JSON with extraction's bounded
    # loader (and its ExtractError): the loader belongs in the model layer
    ("lintlora.estimate.architecture", "lintlora.extract"),
    ("lintlora.estimate.model_names", "lintlora.extract"),
}
"""Upward imports of the estimator that remain (DESIGN.md names them); each pair may stay or
go, no other may appear."""


def _is_known(pair, known):
    name, target = pair
    return any(name == k and (target == t or target.startswith(t + ".")) for k, t in known)


def test_the_estimator_imports_nothing_above_it_but_the_known_pairs():
    bad = [p for p in _importers(import_graph(), "lintlora.estimate",
                                 ENGINE_AND_ABOVE + ["lintlora.extract"])
           if not _is_known(p, KNOWN_ESTIMATE_UPWARD)]
    assert bad == [], bad


def test_nothing_calls_a_global_input_recorder():
    # the stages return what they read as data (issue 15 item 6)
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "note_input" not in text and "recording()" not in text, path


KNOWN_RULES_UPWARD = {
    # the size wording shared by rules and reports lives in the reporters today; it belongs in
    # the model layer (DESIGN.md "Layers")
    ("lintlora.rules._text", "lintlora.report"),
}


def test_rules_and_context_import_nothing_above_them_but_the_known_pair():
    above = ["lintlora.engine", "lintlora.report", "lintlora.cli", "lintlora.cli_app",
             "lintlora.cache", "lintlora.parallel", "lintlora.runs", "lintlora.file_result"]
    graph = import_graph()
    bad = [p for p in _importers(graph, "lintlora.rules", above) + _importers(
        graph, "lintlora.context", above + ["lintlora.rules"]) if not _is_known(p, KNOWN_RULES_UPWARD)]
    assert bad == [], bad


def test_the_model_layer_imports_only_itself():
    graph = import_graph()
    model = {"lintlora.training_setup", "lintlora.findings", "lintlora.settings",
             "lintlora.config", "lintlora.safeio", "lintlora.limits", "lintlora"}
    for module in ("lintlora.training_setup", "lintlora.findings", "lintlora.settings",
                   "lintlora.safeio"):
        assert graph[module] <= model, (module, graph[module] - model)
