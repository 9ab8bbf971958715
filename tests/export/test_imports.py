"""server/export's imports, read from the source (ast): no cycle, and the shared code imports no
format (each format is a folder that registers itself; the run looks formats up)."""

from __future__ import annotations

import ast
from pathlib import Path

EXPORT = Path(__file__).resolve().parents[2] / "server" / "export"
PACKAGE = "server.export"
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(EXPORT.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(EXPORT.rglob("*.py"))}


def _imports(path: Path, known: set[str]) -> set[str]:
    """The server.export modules a file imports (at its top or inside functions alike; not in
    ``if TYPE_CHECKING:`` blocks, which only name types); ``from server.export.formats.rlds
    import oxe`` is an import of the module server.export.formats.rlds.oxe."""
    out: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text())]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            if subs & known:
                out |= subs & known
            elif node.module in known:
                out.add(node.module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_reader_sees_the_imports() -> None:
    graph = _graph()
    assert len(graph) > 20  # the premise: it found the modules
    assert "server.export.registry" in graph["server.export.formats.minari"]
    assert "server.export.formats.rlds.writer" in graph["server.export.formats.rlds"]  # lazy
    minari_writer = graph["server.export.formats.minari.writer"]
    assert "server.export.formats.minari.dataset" in minari_writer  # from pkg import mod
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_server_export() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_shared_code_imports_no_format() -> None:
    graph = _graph()
    formats = {m for m in graph if m.startswith(f"{PACKAGE}.formats")}
    shared = set(graph) - formats
    assert {f"{PACKAGE}.base", f"{PACKAGE}.registry", f"{PACKAGE}.run"} <= shared
    for module in sorted(shared):
        assert not _closure(graph, module) & formats, module
    # the run finds the formats through the registry only
    assert f"{PACKAGE}.registry" in graph[f"{PACKAGE}.run"]


def test_no_module_over_400_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
