"""Each namespace's vectors in a run of row ids of its own, which a search of a few namespaces reads as a range.

On SQLite every write puts a vector in its namespace's run (single puts,
large batches, restores), a search reads the runs and falls back to reading
item by item when they hold fewer rows than the namespaces count, an older
file has its vectors moved into their runs when it is opened, and a
re-embedding misses no vector written behind its position (on both
backends). A catalog copied to PostgreSQL and back is in `test_migrate`.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langgraph.store.base import PutOp

from bench.common.crash_check import index_problems
from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.catalog._schema import SCHEMA_VERSION
from langgraph_memory.store import ChromaStore
from langgraph_memory.store._reindex import reembed

_NAMESPACES = [("u", "a"), ("u", "b"), ("u", "c"), ("v",)]
_BITS = _item_rows.VECTOR_RUN_BITS


def _rows(store: ChromaStore) -> list[tuple[int, int, int]]:
    """``(vector row id, namespace id of its item, item id)`` of every vector, in row-id order."""
    with store.catalog.read() as conn:
        return [
            (int(v), int(n), int(i))
            for v, n, i in conn.execute(
                "SELECT v.id, i.ns_id, v.item_id FROM vectors v JOIN items i ON i.id = v.item_id ORDER BY v.id"
            )
        ]


def _in_runs(store: ChromaStore) -> bool:
    return all(vid >> _BITS == nid for vid, nid, _item in _rows(store))


def _check_searches(store: ChromaStore) -> None:
    """A search of each namespace finds every item in it (those with no vectors last), and the index agrees."""
    assert index_problems(store) == []
    with store.catalog.read() as conn:
        per_ns = Counter(
            {
                _item_rows.split_ns(ns): int(n)
                for ns, n in conn.execute(
                    "SELECT n.ns, count(*) FROM items i JOIN namespaces n ON n.id = i.ns_id GROUP BY n.ns"
                )
            }
        )
    for ns, n in per_ns.items():
        hits = store.search(ns, query="memory", limit=1000)
        assert len([h for h in hits if h.namespace == ns]) == n, ns


def _fill(store: ChromaStore, rng: random.Random, n: int, tag: str) -> None:
    for i in range(n):
        store.put(rng.choice(_NAMESPACES), f"{tag}{i}", {"text": f"memory {tag} {i}"})


@pytest.mark.sqlite_only("PostgreSQL keeps its sequence's vector ids (its heap has no row order to keep)")
def test_every_write_puts_vectors_in_their_namespace_run(store: ChromaStore) -> None:
    rng = random.Random(3)
    _fill(store, rng, 40, "k")
    store.batch([PutOp(rng.choice(_NAMESPACES), f"b{i}", {"text": f"memory batch {i}"}) for i in range(300)])
    # Updates write the vectors again; deletes leave gaps the next writes do not fill.
    _fill(store, rng, 40, "k")
    store.batch([PutOp(ns, f"b{i}", None) for i in range(0, 300, 3) for ns in _NAMESPACES])
    taken = [it for ns in _NAMESPACES for it in [store.items.get(ns, "b1"), store.items.get(ns, "b2")] if it]
    assert taken
    with store.catalog.read() as conn:  # with their vectors, as the archive reads them
        vectors = _item_rows.load_vectors(conn, [it.id for it in taken if it.id is not None])
    for it in taken:
        it.vectors = [np.frombuffer(v, dtype=np.float32).tolist() for _x, _p, v in vectors[it.id]]
        it.paths = [path for _x, path, _v in vectors[it.id]]
    for it in taken:
        assert store.items.delete_items(store.planner.collections.for_namespace(it.namespace).name, [it]) == 1
    assert store.items.restore_items(taken) == len(taken)
    rows = _rows(store)
    assert len({n for _v, n, _i in rows}) == len(_NAMESPACES)
    assert all(vid >> _BITS == nid for vid, nid, _item in rows)
    _check_searches(store)


@pytest.mark.sqlite_only("reads a SQLite catalog's statements with its trace callback")
def test_a_search_of_a_namespace_reads_its_run_and_falls_back_when_rows_sit_outside(store: ChromaStore) -> None:
    rng = random.Random(5)
    _fill(store, rng, 60, "k")
    ns = _NAMESPACES[1]
    name = store.planner.collections.for_namespace(ns).name
    with store.catalog.read() as conn:
        n_items, n_vectors, _ids, sql = _scope.namespace_scope(conn, name, _scope.prefix_bounds(ns))
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        got = _scope.scope_vectors(conn, sql, [], n_vectors)
        conn.set_trace_callback(None)
        item_ids = {int(i) for (i,) in conn.execute(f"SELECT i.id FROM items i WHERE {sql[0]}", sql[1])}
    assert n_vectors == n_items > 0
    assert {int(i) for i, _v in got} == item_ids and len(got) == n_vectors
    assert len(seen) == 1 and "CROSS JOIN vectors v" in seen[0]  # one range read, no second statement
    # A vector moved out of its run (as ids copied from an older catalog sit): found item by item.
    moved = min(item_ids)
    with store.catalog.write() as conn:
        conn.execute("UPDATE vectors SET id = 7 WHERE item_id = ?", (moved,))
    with store.catalog.read() as conn:
        got = _scope.scope_vectors(conn, sql, [], n_vectors)
    assert {int(i) for i, _v in got} == item_ids
    hits = store.search(ns, query="memory", limit=1000)
    assert len(hits) == n_items


@pytest.mark.sqlite_only("PostgreSQL keeps its sequence's vector ids (its heap has no row order to keep)")
def test_a_full_run_goes_on_below_the_runs(store: ChromaStore) -> None:
    ns = _NAMESPACES[0]
    store.put(ns, "first", {"text": "memory first"})
    with store.catalog.read() as conn:
        (nid,) = conn.execute("SELECT i.ns_id FROM items i WHERE i.key = 'first'").fetchone()
    first, last = _item_rows.vector_run(int(nid))
    with store.catalog.write() as conn:  # as if 2**32 vectors had been written to the namespace
        conn.execute("UPDATE vectors SET id = ? WHERE id = ?", (last, first))
    store.batch([PutOp(ns, f"k{i}", {"text": f"memory {i}"}) for i in range(3)])
    store.put(_NAMESPACES[1], "other", {"text": "memory other"})
    rows = _rows(store)
    below = sorted(v for v, n, _i in rows if v < 1 << _BITS)
    assert len(below) == 3 and below == list(range(below[0], below[0] + 3))
    assert all(v >> _BITS == n for v, n, _i in rows if v >= 1 << _BITS)
    assert len(store.search(ns, query="memory", limit=100)) == 4
    _check_searches(store)


@pytest.mark.sqlite_only("turns a SQLite catalog file back to the version before the runs")
def test_a_sqlite_catalog_from_before_the_runs_has_its_vectors_moved_into_them(
    data_dir: Path, fake_embeddings: Any
) -> None:
    rng = random.Random(11)
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        _fill(mem.store, rng, 80, "k")
        before = {(i, x): bytes(v) for i, x, v in _vector_rows(mem.store)}
    # Version 7 gave vectors the ids of one sequence, in the order they were written.
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.executescript(
        "CREATE TEMP TABLE old AS SELECT row_number() OVER (ORDER BY item_id, idx) AS id, item_id, idx, path,"
        " model_id, vec FROM vectors; DELETE FROM vectors; INSERT INTO vectors SELECT * FROM temp.old;"
        " PRAGMA user_version = 7;"
    )
    assert conn.execute("SELECT max(id) FROM vectors").fetchone()[0] == len(before)
    conn.close()
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        assert _in_runs(mem.store)
        assert {(i, x): bytes(v) for i, x, v in _vector_rows(mem.store)} == before
        _check_searches(mem.store)
        with mem.store.catalog.read() as c:
            assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def _vector_rows(store: ChromaStore) -> list[tuple[int, int, bytes]]:
    with store.catalog.read() as conn:
        return [(int(i), int(x), bytes(v)) for i, x, v in conn.execute("SELECT item_id, idx, vec FROM vectors")]


def test_a_reembedding_misses_no_vector_written_behind_its_position(store: ChromaStore, fake_embeddings: Any) -> None:
    # One namespace before the other in row-id order: the second's 300 vectors take the pass past the first's run.
    for i in range(5):
        store.put(("u", "a"), f"a{i}", {"text": f"memory a {i}"})
    store.batch([PutOp(("u", "b"), f"b{i}", {"text": f"memory b {i}"}) for i in range(300)])
    calls = 0

    def embed(texts: list[str]) -> list[list[float]]:
        nonlocal calls
        calls += 1
        if calls == 2:  # the pass is in the second namespace's run: a write to the first lands behind it
            store.put(("u", "a"), "late", {"text": "memory late"})
        return [list(np.asarray(v) * -1.0) for v in fake_embeddings.embed_documents(texts)]

    dims = len(fake_embeddings.embed_query("x"))
    done = reembed(store.catalog, embed, model="other-model", dims=dims, progress=False)
    assert done == 306
    with store.catalog.read() as conn:
        (model_id,) = conn.execute("SELECT id FROM models WHERE name = 'other-model'").fetchone()
        assert _vectors.count_not_made_by(conn, int(model_id)) == 0
