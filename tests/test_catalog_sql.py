"""Each catalog module's statements are written out per backend: nothing translates SQLite's SQL at run time."""

from __future__ import annotations

import importlib
import pkgutil
import re

import langgraph_memory.catalog as catalog_pkg
from langgraph_memory.catalog.connection import Sql

# Forms only one backend reads: a statement written for the other must not use them.
_SQLITE_ONLY = re.compile(
    r"INSERT OR (IGNORE|REPLACE)|\bgroup_concat\(|\bsqlite_sequence\b|\bjson_each\(|CROSS JOIN \w+ \w+ ON\b|\?"
)
_PG_ONLY = re.compile(r"%s|\bGREATEST\(|\bLEAST\(|\bstring_agg\(|::|\bjsonb\b")


def _statements() -> list[tuple[str, Sql]]:
    found = []
    for mod in pkgutil.walk_packages(catalog_pkg.__path__, catalog_pkg.__name__ + "."):
        module = importlib.import_module(mod.name)
        for name, value in vars(module).items():
            if isinstance(value, Sql):
                found.append((f"{mod.name}.{name}", value))
    return found


def test_the_catalog_keeps_its_statements_as_per_backend_constants() -> None:
    names = {name for name, _ in _statements()}
    # The modules that own the tables hold their statements (a sample of each kind of table).
    for expected in (
        "langgraph_memory.catalog.queue._MARK_APPLIED",
        "langgraph_memory.catalog.vectors._AT_OR_AFTER",
        "langgraph_memory.catalog.status._PUT",
        "langgraph_memory.catalog.files._CLAIM",
        "langgraph_memory.catalog.scope._PLANNING_READ",
        "langgraph_memory.catalog.items._ACCESS",
    ):
        assert expected in names


def test_each_backends_text_uses_only_its_own_forms() -> None:
    for name, sql in _statements():
        assert not _PG_ONLY.search(sql.sqlite), f"{name}: SQLite's text uses a PostgreSQL form: {sql.sqlite}"
        bad = _SQLITE_ONLY.search(sql.pg)
        assert bad is None, f"{name}: PostgreSQL's text uses a SQLite form ({bad and bad[0]}): {sql.pg}"


def test_no_module_translates_sql() -> None:
    # The regular-expression translator is gone, and the PostgreSQL connection runs what it is given.
    import langgraph_memory.catalog.postgres as pg_pkg

    assert "dialect" not in {m.name for m in pkgutil.iter_modules(pg_pkg.__path__)}
