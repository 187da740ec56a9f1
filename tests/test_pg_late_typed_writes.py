"""Typed writes read their item before the catalog's write lock: what another machine does meanwhile is caught.

A write opened with ``late=True`` reads first and takes the lock with its
first change; a namespace it found missing may be created by another
machine in between. The write then fails with a conflict at the lock and
the store runs it again holding the lock from the start: the user sees one
success, never a duplicate-key error (measured in the load bench before this
check: the first findings of 8 processes raced to create their namespace).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog.postgres.catalog import PgCatalog
from langgraph_memory.errors import WriteConflictError

pytestmark = pytest.mark.timeout(300)


def test_a_late_write_into_a_namespace_created_meanwhile_conflicts(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat, other = PgCatalog(pg_database, timeout=10), PgCatalog(pg_database, timeout=10)
    ns = ("docs", "new")
    original = _items.NamespaceIds.get
    raced: list[bool] = []

    def stale(self: Any, conn: Any, namespace: tuple[str, ...]) -> int | None:
        found = original(self, conn, namespace)
        if found is None and not raced and self is cat.names:
            raced.append(True)
            with other.write() as oc:  # another machine creates the namespace after our read
                other.names.ensure(oc, namespace, "memories")
        return found

    monkeypatch.setattr(_items.NamespaceIds, "get", stale)
    value = {"text": "mine"}
    try:
        with pytest.raises(WriteConflictError):
            with cat.write(late=True) as conn:
                _items.write_items(
                    conn, [_items.ItemWrite(ns, "k", "memories", json.dumps(value), value=value)], cat.names, now=1.0
                )
        assert raced
    finally:
        cat.close()
        other.close()


@pytest.fixture
def two(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> Iterator[tuple[Memory, Memory]]:
    with Memory.open(pg_database, local_dir=tmp_path / "a", embeddings=fake_embeddings) as a:
        with Memory.open(pg_database, local_dir=tmp_path / "b", embeddings=fake_embeddings) as b:
            yield a, b


def test_a_finding_stored_while_another_machine_creates_its_namespace_succeeds_once(
    two: tuple[Memory, Memory], pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two
    a.store_lesson("a first write records the model", failure_type="overfit")  # later writes go late
    original = _items.NamespaceIds.get
    raced: list[bool] = []

    def stale(self: Any, conn: Any, namespace: tuple[str, ...]) -> int | None:
        found = original(self, conn, namespace)
        if found is None and not raced and self is a.store.catalog.names and namespace == a.namespace("research"):
            raced.append(True)
            b.store_research_finding("theirs", topic="race")
        return found

    monkeypatch.setattr(_items.NamespaceIds, "get", stale)
    mine = a.store_research_finding("mine", topic="race")
    assert raced
    with psycopg.connect(pg_database, autocommit=True) as conn:
        n_ns = conn.execute(
            "SELECT count(*) FROM namespaces WHERE ns = %s", (_item_rows.join_ns(a.namespace("research")),)
        )
        assert n_ns.fetchone()[0] == 1  # type: ignore[index]
    got = b.store.get(a.namespace("research"), mine.id)
    assert got is not None and got.value["content"] == "mine"
