"""The server's imports point one way: no cycles, no import from a lower layer to a higher one;
and each export format's name is written only in its folder.

Layers, highest first (docs/architecture.md): the app and CLI → HTTP routes → the player
(play sessions) → services → the HTTP bodies (schemas, which take the export formats' choices
from the registry) → export and runtime → the job queue (rows of job tables) → definitions
(models, the study format, the principal) → infrastructure (core, errors) → recording. A
module may import its own layer or a lower one. Every import counts, those inside functions
too (a lazy import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out.
``from package import module`` is an import of that module (a package's ``__init__`` is not
a dependency of its modules).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"
LAYERS = {  # the package (or module) under server/ → its layer
    "main": 10,
    "cli": 10,
    "api": 9,
    "player": 8,
    "services": 7,
    "schemas": 6,  # the API's bodies: their format choices come from the export registry
    "export": 5,
    "runtime": 5,
    "envs": 5,
    "queue": 4,
    "models": 3,
    "study_spec": 3,
    "principal": 3,
    "core": 2,
    "errors": 2,
    "recording": 1,
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in SERVER.rglob("*.py"):
        parts = path.relative_to(SERVER.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, modules: dict[str, Path]) -> set[str]:
    out: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    out.add(sub)
                elif node.module in modules:
                    out.add(node.module)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: _imports(ast.parse(path.read_text()), modules) - {name}
        for name, path in modules.items()
    }


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return 0  # the ``server`` package itself: its version, nothing else
    return LAYERS[parts[1]]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_server_package_has_a_layer():
    tops = {name.split(".")[1] for name in _modules() if "." in name}
    assert tops <= set(LAYERS), tops - set(LAYERS)


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_no_import_points_up():
    upward = [
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_core_sits_below_the_models():
    """Every table imports ``core.db``'s ``Base``: what in core needs a table lives above the
    models (``server/queue/``, ``server/services/login_limit.py``)."""
    assert _layer("server.core.db") < _layer("server.models.jobs") < _layer("server.queue")


def test_the_checker_finds_a_cycle_and_an_upward_import():
    graph = {"server.core.a": {"server.core.b"}, "server.core.b": {"server.core.a"}}
    assert _cycles(graph) == [["server.core.a", "server.core.b"]]
    assert _layer("server.api.routes.x") > _layer("server.services.y") > _layer("server.recording")


# --- format names live in their format's folder -------------------------------------------
FORMAT_NAMES = ("rlds", "tfds", "envlogger", "minari", "lerobot")
FORMAT_FOLDERS = {  # a name → the folder of server/export/formats/ it may be written in
    "rlds": "rlds",
    "tfds": "rlds",
    "envlogger": "envlogger",
    "minari": "minari",
    "lerobot": "lerobot",
}
# A name as a word, not inside another one (rlds_studio, rlds-studio: the product's names).
_FORMAT_WORD = re.compile(r"(?<![\w-])(" + "|".join(FORMAT_NAMES) + r")(?![\w-])")
FORMAT_NAME_ALLOWED = {  # module → the names it may write, and why
    "server/core/passwords.py": ({"rlds"}, "the product's name, a word a password must avoid"),
    "server/models/jobs.py": ({"tfds"}, "a row's default format; models import no export code"),
    "server/recording/envlogger_log.py": ({"envlogger"}, "the recording library's name"),
    "server/recording/journal.py": ({"envlogger"}, "the recording library's module name"),
    "server/recording/writer.py": ({"envlogger"}, "the recording library, in an error"),
}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _format_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of each format name in a string of ``source`` (docstrings aside)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        (node.lineno, match)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        for match in _FORMAT_WORD.findall(node.value)
    ]


def test_format_names_are_written_only_in_their_folder():
    """Every format's name comes from the registry (server/export/registry.py): outside its
    folder of server/export/formats/, code never writes it."""
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        rel = path.relative_to(SERVER.parent).as_posix()
        parts = path.relative_to(SERVER).parts
        folder = parts[2] if parts[:2] == ("export", "formats") and len(parts) > 3 else None
        allowed = FORMAT_NAME_ALLOWED.get(rel, (set(), ""))[0]
        found += [
            f"{rel}:{line}: {name}"
            for line, name in _format_names(path.read_text())
            if FORMAT_FOLDERS[name] != folder and name not in allowed
        ]
    assert found == []


def test_the_format_name_reader_sees_names_in_strings_not_docstrings():
    source = '"""The rlds format."""\nA = "tfds"\nB = f"the {x} minari export"\nC = "rlds_studio"\n'
    assert _format_names(source) == [(2, "tfds"), (3, "minari")]


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


@functools.cache
def _python_files() -> list[Path]:
    return sorted(
        p
        for top in ("server", "tests", "benchmarks", "alembic")
        for p in (ROOT / top).rglob("*.py")
    )


def _package(path: Path) -> str:
    """The dotted package of a file (``tests/runtime/test_worker.py`` → ``tests.runtime``)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def _private_owner(target: str) -> str | None:
    """The package owning ``target``'s first private module (``a._b.c`` → ``a``), or None."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and part != "__init__":
            return ".".join(parts[:i])
    return None


def _targets(node: ast.AST) -> list[str]:
    """The project modules an import statement names (``from p import m`` names ``p.m`` too)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
        names += [
            f"{node.module}.{alias.name}"
            for alias in node.names
            if (ROOT / node.module.replace(".", "/") / f"{alias.name}.py").exists()
        ]
    else:
        return []
    return [n for n in names if n.split(".")[0] in {"server", "tests", "benchmarks"}]


def _private_imports() -> list[str]:
    found = []
    for path in _python_files():
        mine = _package(path)
        for node in ast.walk(_tree(path)):
            for target in _targets(node):
                owner = _private_owner(target)
                if owner is not None and mine != owner and not mine.startswith(owner + "."):
                    found.append(f"{path.relative_to(ROOT)} -> {target}")
    return found


def test_no_module_imports_another_packages_private_module():
    """A module named ``_x`` is its package's own: what others need is public in the package.

    tests/ and benchmarks/ are other packages too.
    """
    assert _private_imports() == []


def _reexports() -> dict[str, set[str]]:
    """Names each package's ``__init__`` imports from the project (not its own submodules)
    and does not use itself (an ``__init__`` with code of its own, such as an export format's,
    imports what that code needs)."""
    out: dict[str, set[str]] = {}
    for init in SERVER.rglob("__init__.py"):
        package = _package(init)
        names: set[str] = set()
        tree = _tree(init)
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("server"):
                folder = ROOT / str(node.module).replace(".", "/")
                names.update(
                    f"{node.module}:{a.asname or a.name}"
                    for a in node.names
                    if not (folder / f"{a.name}.py").exists()  # a module imported to register it
                    and (a.asname or a.name) not in used
                )
        if names:
            out[package] = names
    return out


@functools.cache
def _from_imports() -> list[tuple[str, str, str]]:
    """(importing package, module, name) of every ``from module import name`` in the project."""
    return [
        (_package(path), node.module, alias.name)
        for path in _python_files()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        for alias in node.names
    ]


def _imported_through(package: str) -> set[str]:
    """Names that modules outside ``package`` import from the package itself."""
    return {
        name
        for importer, module, name in _from_imports()
        if module == package and importer != package and not importer.startswith(package + ".")
    }


def test_a_package_reexports_only_its_own_names_that_others_import_from_it():
    """The rule for a package's ``__init__`` (docs/architecture.md, "Packages"): it may name
    what its own modules define, as the package's public face, only where another package
    imports that name from the package; everything else is imported from where it lives."""
    wrong = []
    for package, names in sorted(_reexports().items()):
        used = _imported_through(package)
        for entry in sorted(names):
            module, name = entry.split(":")
            if not (module == package or module.startswith(package + ".")):
                wrong.append(f"{package}.{name} (defined in {module})")
            elif name not in used:
                wrong.append(f"{package}.{name} (nobody imports it from {package})")
    assert wrong == []


def test_the_private_import_checker_knows_whose_module_is_whose():
    assert _private_owner("server.runtime._child") == "server.runtime"
    assert _private_owner("server.runtime.worker") is None
    assert _private_owner("server.api.routes._jobs.x") == "server.api.routes"
