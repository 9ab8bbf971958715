"""server/export's imports, read from the source (ast): no cycle, and the shared types and
the registry import no format (formats register themselves; the runner looks them up)."""

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
    """The server.export modules a file imports (at its top or inside functions alike);
    ``from server.export import oxe`` is an import of the module server.export.oxe."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
    assert "server.export.formats.minari" in graph["server.export.formats"]
    assert "server.export.oxe" in graph["server.export.formats.rlds"]  # from pkg import mod
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_server_export() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_shared_types_and_registry_import_no_format() -> None:
    graph = _graph()
    formats = {m for m in graph if m.startswith(f"{PACKAGE}.formats")}
    writers = formats | {f"{PACKAGE}.beam_export"}  # (episode videos: an add-on to any format)
    for module in (f"{PACKAGE}.base", f"{PACKAGE}.registry", f"{PACKAGE}.export_job"):
        assert not _closure(graph, module) & writers, module
    # the runner finds the formats through the registry only
    assert f"{PACKAGE}.registry" in graph[f"{PACKAGE}.export_job"]


def test_no_module_over_400_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
