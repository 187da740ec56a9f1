"""The package's layers show in its folders: imports only point down, and old import paths keep working."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import langgraph_memory
from langgraph_memory import _compat

PACKAGE = Path(langgraph_memory.__file__).parent

#: Lower numbers sit lower; a module may import its own layer and the ones below.
LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "_infra": 0,
    "checkpoint": 1,
    "catalog": 2,
    "store": 3,
    "research": 4,
    "lifecycle": 4,
    "ingest": 4,
    "sessions": 4,
    "archive": 4,
    "bundle": 4,
    "graph": 5,
    "memory": 6,
    "platform": 6,
    "mcp": 7,
    "cli": 7,
    "ui": 7,
    "__init__": 8,
    "_compat": 8,
    "_version": 0,
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


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``langgraph_memory`` module that ``path`` imports, at any depth of the code."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("langgraph_memory")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("langgraph_memory"):
            # ``from langgraph_memory.x import y`` may import the module ``x.y``.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").exists() or (
                    PACKAGE.parent / sub.replace(".", "/") / "__init__.py"
                ).exists()
                out.append((node.lineno, sub if is_module else node.module))
    return out


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_import_points_up() -> None:
    upward = []
    for name, path in _modules().items():
        if name == "langgraph_memory":
            continue
        for line, target in _imports(path):
            if target in _compat.MOVED:
                upward.append(f"{name}:{line} imports the old path {target}")
            elif _layer(target) > _layer(name):
                upward.append(f"{name}:{line} imports {target}")
    assert upward == []


def test_no_import_cycle() -> None:
    graph = {name: {t for _, t in _imports(path)} for name, path in _modules().items() if name != "langgraph_memory"}
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
    assert root_modules == ["__init__", "_compat", "_version", "config", "errors", "memory"]


@pytest.mark.parametrize("old", sorted(_compat.MOVED))
def test_old_module_paths_still_import(old: str) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(_compat.MOVED[old])
    assert module.__spec__ is not None and module.__spec__.name == _compat.MOVED[old]


def test_old_names_still_import() -> None:
    from langgraph_memory.collections import COLLECTIONS, collection_for
    from langgraph_memory.lineage import Lineage, LineageStore
    from langgraph_memory.ranking import MEMORY_TYPES, HybridRanking, memory_type_for

    assert collection_for(("lessons",)) is COLLECTIONS["lessons"]
    assert memory_type_for("lessons_learned") == MEMORY_TYPES["lessons_learned"] == "episodic"
    assert HybridRanking is langgraph_memory.HybridRanking and Lineage is langgraph_memory.Lineage
    assert LineageStore.__module__ == "langgraph_memory.catalog.lineage_store"


#: Modules outside ``catalog/`` that may run SQL, each with the reason. Every other module reaches the
#: catalog's tables through the catalog's named queries, the seam a second catalog backend plugs into.
SQL_ELSEWHERE: dict[str, str] = {
    "checkpoint/": "the checkpointer's own tables and files (the package ships alone, without the catalog)",
    "_infra/": "connection set-up (PRAGMAs), no table of any domain",
    "store/embeddings.py": "the embedding cache's own SQLite file",
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
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
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
