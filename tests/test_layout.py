"""The package's layers show in its folders: imports only point down, even those made by name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import langgraph_memory

PACKAGE = Path(langgraph_memory.__file__).parent

#: Lower numbers sit lower; a module may import its own layer and the ones below.
LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "registry": 0,
    "_version": 0,
    "_infra": 0,
    "checkpoint": 1,
    "catalog": 2,
    "index": 3,
    "embeddings": 3,
    "search": 4,
    "store": 5,
    "research": 6,
    "lifecycle": 6,
    "ingest": 6,
    "sessions": 6,
    "archive": 6,
    "bundle": 6,
    "graph": 7,
    "memory": 8,
    "platform": 8,
    "mcp": 9,
    "cli": 9,
    "ui": 9,
    "__init__": 10,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top not in LAYERS:
        raise AssertionError(f"{module} is in no layer: add its folder to LAYERS")
    return LAYERS[top]


#: A module named in a string: ``"langgraph_memory.x.y"`` or ``"langgraph_memory.x.y:attribute"``.
_NAMED = re.compile(r"^(langgraph_memory(?:\.\w+)+)(?::\w+)?$")


def _imports(path: Path, *, by_name: bool = True) -> list[tuple[int, str]]:
    """Every ``langgraph_memory`` module that ``path`` imports, at any depth of the code.

    Imports by name count too: a string that names one of our modules (``importlib.import_module(...)``, a
    table of lazy imports, a ``module:attribute`` setting) is an import that merely happens later. Those
    count for layering, not for cycles (``by_name=False``): they run after every module has loaded.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("langgraph_memory")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("langgraph_memory"):
            # ``from langgraph_memory.x import y`` may import the module ``x.y``.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append((node.lineno, sub if _is_module(sub) else node.module))
        elif by_name and isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named = _NAMED.match(node.value)
            if named and _is_module(named.group(1)):
                out.append((node.lineno, named.group(1)))
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree``'s module, classes and functions."""
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _is_module(dotted: str) -> bool:
    base = PACKAGE.parent / dotted.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_import_points_up() -> None:
    upward = []
    for name, path in _modules().items():
        if name == "langgraph_memory":
            continue
        for line, target in _imports(path):
            if _layer(target) > _layer(name):
                upward.append(f"{name}:{line} imports {target}")
    assert upward == []


def test_no_import_cycle() -> None:
    graph = {
        name: {t for _, t in _imports(path, by_name=False)}
        for name, path in _modules().items()
        if name != "langgraph_memory"
    }
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
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
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == []


def test_the_root_holds_only_the_facade() -> None:
    root_modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert root_modules == ["__init__", "_version", "config", "errors", "memory", "registry"]


def test_a_module_named_in_a_string_counts_as_an_import(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        '"""langgraph_memory.research names a module in a docstring: not an import."""\n'
        "import importlib\n"
        "importlib.import_module('langgraph_memory.research.collections')\n"
        "DEFAULT = 'langgraph_memory.graph.nodes:recall_node'\n"
        "NOT_A_MODULE = 'langgraph_memory.no_such_thing'\n"
    )
    assert sorted(t for _, t in _imports(src)) == [
        "langgraph_memory.graph.nodes",
        "langgraph_memory.research.collections",
    ]


#: Modules outside ``catalog/`` that may run SQL, each with the reason. Every other module reaches the
#: catalog's tables through the catalog's named queries, the seam a second catalog backend plugs into.
SQL_ELSEWHERE: dict[str, str] = {
    "checkpoint/": "the checkpointer's own tables and files (the package ships alone, without the catalog)",
    "_infra/": "connection set-up (PRAGMAs), no table of any domain",
    "embeddings/cache.py": "the embedding cache's own SQLite file",
    "archive/manifest.py": "the archive manifest's own file (its tables items and meta are not the catalog's)",
    "archive/_steps.py": "the archive manifest's tables, in the manifest's transactions",
    "archive/_thread_files.py": "the archive manifest's tables, in the manifest's transactions",
    "archive/archiver.py": "queries on the archive manifest (Manifest.query)",
}


def _catalog_tables() -> list[str]:
    """Every table the catalog's migrations create."""
    from langgraph_memory.catalog import _schema

    ddl = " ".join(_schema._MIGRATIONS.values())
    return sorted(set(re.findall(r"CREATE (?:VIRTUAL )?TABLE IF NOT EXISTS (\w+)", ddl)))


def _sql_on_catalog_tables(path: Path, tables: list[str], *, name: str | None = None) -> list[str]:
    """Where ``path`` runs a statement, or holds SQL text that names a catalog table (docstrings aside)."""
    on_table = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(" + "|".join(tables) + r")\b", re.IGNORECASE)
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    rel = name or path.relative_to(PACKAGE).as_posix()
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("execute", "executemany", "executescript")
        ):
            found.append(f"{rel}:{node.lineno} calls .{node.func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if m := on_table.search(node.value):
                found.append(f"{rel}:{node.lineno} holds SQL on {m.group(1)}: {node.value.strip()[:60]!r}")
    return sorted(found)


def test_no_sql_on_catalog_tables_outside_the_catalog() -> None:
    tables = _catalog_tables()
    assert {"items", "namespaces", "vectors", "fields", "index_queue", "collection_counts"} <= set(tables)
    for allowed in SQL_ELSEWHERE:
        assert (PACKAGE / allowed).exists(), f"{allowed} is allowed SQL but no longer exists: drop it from the list"
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("catalog/") or any(
            rel == a or (a.endswith("/") and rel.startswith(a)) for a in SQL_ELSEWHERE
        ):
            continue
        found += _sql_on_catalog_tables(path, tables)
    assert found == [], "move these statements into langgraph_memory/catalog/ as named queries:\n" + "\n".join(found)


def test_the_sql_check_sees_statements_and_fragments(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(conn, ids):\n"
        '    """Reads FROM items, in prose: a docstring is not SQL."""\n'
        '    conn.execute("SELECT 1")\n'
        '    where = f"v.item_id IN ({ids}) AND i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?)"\n'
        '    return "update vectors SET vec = ?", where, "read from the cache"\n'
    )
    found = _sql_on_catalog_tables(probe, _catalog_tables(), name="probe.py")
    assert [f.split(" ", 1)[0] for f in found] == ["probe.py:3", "probe.py:4", "probe.py:5"], found
    assert "namespaces" in found[1] and "vectors" in found[2]
