"""The counts under every namespace prefix, which a search under a prefix plans with.

Every write keeps them (puts, updates, deletes, large batches, restores), a
catalog from before they existed gets them when it is opened, and a search
under a prefix finds exactly the items under it, whether the prefix holds its
whole collection or part of it.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from bench.common.crash_check import index_problems
from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.store import ChromaStore

_NAMESPACES = [("a",), ("a", "x"), ("a", "x", "1"), ("a", "xy"), ("a", "y", "2"), ("b",), ("b", "x")]
_PREFIXES = [("a",), ("a", "x"), ("a", "x", "1"), ("a", "xy"), ("a", "y"), ("b",), ("b", "x"), ("c",)]


def _actual(store: ChromaStore) -> Counter[tuple[str, ...]]:
    """Items per namespace, counted from the items themselves."""
    with store.catalog.read() as conn:
        rows = conn.execute("SELECT n.ns, count(*) FROM items i JOIN namespaces n ON n.id = i.ns_id GROUP BY n.ns")
        return Counter({_item_rows.split_ns(ns): int(n) for ns, n in rows})


def _check(store: ChromaStore) -> None:
    """Counts, index and searches under every prefix agree with the items."""
    assert index_problems(store) == []
    per_ns = _actual(store)
    for prefix in _PREFIXES:
        want = {ns for ns in per_ns if ns[: len(prefix)] == prefix}
        n_want = sum(per_ns[ns] for ns in want)
        name = store.planner.collections.for_namespace(prefix).name
        with store.catalog.snapshot() as conn:
            counts, (n, _v, ns_ids, _sql), _heads = _scope.planning_read(conn, name, _scope.prefix_bounds(prefix))
            names = set(_item_rows.namespace_names(conn, ns_ids.tolist()).values())
        assert n == n_want, prefix
        whole = n_want == counts.get(name, (0, 0))[0]
        # The ids are read only when the prefix holds part of its collection.
        assert names == (set() if whole else {_item_rows.join_ns(ns) for ns in want if per_ns[ns]}), prefix
        hits = store.search(prefix, query="memory", limit=1000)
        assert Counter(h.namespace for h in hits) == Counter({ns: per_ns[ns] for ns in want if per_ns[ns]}), prefix


def test_every_write_keeps_the_counts_under_each_prefix(store: ChromaStore) -> None:
    rng = random.Random(7)
    for i in range(40):
        store.put(rng.choice(_NAMESPACES), f"k{i % 25}", {"text": f"memory {i}"}, index=None if i % 5 else False)
    _check(store)
    for i in range(0, 25, 3):
        for ns in _NAMESPACES[:3]:
            store.delete(ns, f"k{i}")
    _check(store)
    # A large batch (the bulk path), with updates and deletes in it.
    store.batch([PutOp(rng.choice(_NAMESPACES), f"b{i}", {"text": f"memory batch {i}"}) for i in range(200)])
    store.batch([PutOp(ns, f"b{i}", None) for i in range(0, 200, 4) for ns in _NAMESPACES])
    _check(store)
    # Deleted and restored as the archive does.
    taken = [it for ns in _NAMESPACES for it in [store.items.get(ns, "b1"), store.items.get(ns, "k1")] if it]
    assert taken
    by_collection: dict[str, list[Any]] = {}
    for it in taken:
        by_collection.setdefault(store.planner.collections.for_namespace(it.namespace).name, []).append(it)
    for name, group in by_collection.items():
        assert store.items.delete_items(name, group) == len(group)
    _check(store)
    assert store.items.restore_items(taken) == len(taken)
    _check(store)


def _filled(store: ChromaStore) -> None:
    for i, ns in enumerate(_NAMESPACES * 3):
        store.put(ns, f"k{i}", {"text": f"memory {i}"})


@pytest.mark.sqlite_only("turns a SQLite catalog file back to the version before the prefix counts")
def test_a_sqlite_catalog_from_before_the_prefix_counts_gets_them(data_dir: Path, fake_embeddings: Any) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        _filled(mem.store)
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.executescript("DROP TABLE prefix_counts; PRAGMA user_version = 6;")
    conn.close()
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        _check(mem.store)


@pytest.fixture
def pg_memory(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> Iterator[tuple[str, Path, Any]]:
    yield pg_database, tmp_path / "local", fake_embeddings


def test_a_postgresql_catalog_from_before_the_prefix_counts_gets_them(pg_memory: tuple[str, Path, Any]) -> None:
    url, local, embeddings = pg_memory
    with Memory.open(url, local_dir=local, embeddings=embeddings) as mem:
        _filled(mem.store)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE prefix_counts")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    with Memory.open(url, local_dir=local, embeddings=embeddings) as mem:
        _check(mem.store)
