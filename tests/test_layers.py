"""The layers point one way: `workers/` imports only `scv/core/`, which imports nothing but the
standard library, msgspec, idna and itself; `scv/` imports `workers/` only at the fork point's
entry; and no two folders import each other, however far round. Read from the source (every
import statement, late ones included)."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The shared ground: scv/core/ (its __init__ states the rule this file checks).
CORE = "scv.core"
THIRD_PARTY_CORE = {"msgspec", "idna"}
FORK_POINT_ENTRY = ("scv/supervision/supervisor.py", "workers.forkpoint")


def _modules() -> dict[str, Path]:
    found = {}
    for top in ("scv", "workers"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """Every module an import statement in the file names (absolute imports only)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & MODULES.keys()
            names.update(submodules or {node.module})
    return names


def _ours(name: str) -> str | None:
    parts = name.split(".")
    while parts:
        if ".".join(parts) in MODULES:
            return ".".join(parts)
        parts.pop()
    return None


def test_scv_imports_workers_only_at_the_fork_point_entry():
    seen = []
    for name, path in MODULES.items():
        if not name.startswith("scv"):
            continue
        for imported in _imported(path):
            if imported == "workers" or imported.startswith("workers."):
                seen.append((str(path.relative_to(ROOT)), imported))
    assert seen == [FORK_POINT_ENTRY]


def _in_core(name: str) -> bool:
    return name == CORE or name.startswith(CORE + ".")


def _folder(name: str) -> str:
    """The folder a module's file is in: `scv/tools/agent/tool.py` and `scv/tools/agent/__init__.py`
    are both in `scv/tools/agent`."""
    return str(MODULES[name].parent.relative_to(ROOT))


def test_workers_import_nothing_of_scv_but_its_core():
    """The root package `scv` holds only the version (the User-Agent and ACP's clientInfo name it)."""
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("workers"):
            continue
        for imported in _imported(path):
            ours = _ours(imported)
            if ours is not None and ours.startswith("scv") and not _in_core(ours) and ours != "scv":
                wrong.append((name, ours))
    assert wrong == []


def test_core_imports_only_the_standard_library_msgspec_idna_and_itself():
    wrong = []
    for name, path in MODULES.items():
        if not _in_core(name):
            continue
        for imported in _imported(path):
            top = imported.split(".")[0]
            ours = _ours(imported)
            if ours is not None:
                if not _in_core(ours):
                    wrong.append((name, ours))
            elif top not in sys.stdlib_module_names and top not in THIRD_PARTY_CORE:
                wrong.append((name, imported))
    assert wrong == []


def _folder_graph() -> dict[str, set[str]]:
    """Which folders import which. The root package `scv` holds only the version, and importing any
    module of SCV runs it first anyway, so an import of it is no edge."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        here = _folder(name)
        graph.setdefault(here, set())
        for imported in _imported(path):
            ours = _ours(imported)
            if ours is not None and ours != "scv" and _folder(ours) != here:
                graph[here].add(_folder(ours))
    return graph


def test_no_two_folders_import_each_other():
    graph = _folder_graph()
    assert sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ())) == []


def test_the_folders_form_layers_with_no_tangle():
    """No folder reaches itself through others: the folders can be drawn in layers, each importing
    only those below it (docs/architecture.md draws them)."""
    graph = _folder_graph()
    order, state = [], {}

    def visit(folder: str, trail: tuple[str, ...]) -> None:
        if state.get(folder) == "done":
            return
        assert state.get(folder) != "open", f"folders import each other round a loop: {' -> '.join(trail + (folder,))}"
        state[folder] = "open"
        for nxt in sorted(graph[folder]):
            visit(nxt, trail + (folder,))
        state[folder] = "done"
        order.append(folder)

    for folder in sorted(graph):
        visit(folder, ())
    assert order.index("scv/core") < order.index("workers") < order.index("scv/supervision")


def test_no_import_cycle_among_scv_and_workers():
    """Every import counts, late ones inside functions too: a cycle hidden in a function is one."""
    graph = {name: {ours for imported in _imported(path) if (ours := _ours(imported)) and ours != name}
             for name, path in MODULES.items()}
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:     # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for node in graph:
        if node not in index:
            visit(node)
    assert cycles == []
