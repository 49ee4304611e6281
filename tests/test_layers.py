"""The layers point one way: `workers/` imports only the shared modules of `scv/`, those import
nothing but the standard library, msgspec and each other, and `scv/` imports `workers/` only at
the fork point's entry. Read from the source (every import statement, late ones included)."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What both sides use: messages and frames, the OS seam and the stop policy, path and URL
# validators, the agent catalog, the SCV_PARENT format, delegation records, the chat log's format,
# chat_attach's refusals, and the sandbox's policy and rules.
SHARED = {
    "scv", "scv.errors", "scv.frames", "scv.messages", "scv.oscalls", "scv.stopping", "scv.lineage",
    "scv.safe_open", "scv.web", "scv.web.urls", "scv.web.addresses", "scv.agents", "scv.agents.descriptors",
    "scv.agents.environment", "scv.delegations", "scv.delegations.records", "scv.delegations.processes",
    "scv.paths", "scv.chat", "scv.chat.layout", "scv.chat.archive", "scv.chat.history", "scv.chat.refusals",
    "scv.sandbox", "scv.sandbox.policy", "scv.sandbox.rules", "scv.sandbox.fsview",
}
THIRD_PARTY_SHARED = {"msgspec", "idna"}
FORK_POINT_ENTRY = ("scv/supervisor.py", "workers.forkpoint")


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


def test_workers_import_only_the_shared_modules_of_scv():
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("workers"):
            continue
        for imported in _imported(path):
            ours = _ours(imported)
            if ours is not None and ours.startswith("scv") and ours not in SHARED:
                wrong.append((name, ours))
    assert wrong == []


def test_shared_modules_import_only_the_standard_library_msgspec_and_each_other():
    wrong = []
    for name in SHARED:
        for imported in _imported(MODULES[name]):
            top = imported.split(".")[0]
            ours = _ours(imported)
            if ours is not None:
                if ours not in SHARED:
                    wrong.append((name, ours))
            elif top not in sys.stdlib_module_names and top not in THIRD_PARTY_SHARED:
                wrong.append((name, imported))
    assert wrong == []


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
