"""The bulk path of a large batch leaves the catalog exactly as the same puts one by one.

Two stores get the same items, updates and deletes: one through single
puts, one through batches large enough for the bulk path
(`langgraph_memory.catalog.bulk`). Their catalogs must hold the same rows
(items, filter index, vectors, keyword index, counts, the index queue),
keyed by ``(namespace, key)`` since ids may differ on PostgreSQL, and
their searches must answer alike. Runs on both catalogs
(``LGM_TEST_CATALOG=postgres``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.catalog.bulk import BULK_MIN
from langgraph_memory.errors import ValidationError
from langgraph_memory.store import ChromaStore

DIMS = 16
WORDS = "momentum breakout trades trading whipsawed RSI(14) crosses café résumé volume carry value".split()


def _ops(round_: int) -> list[PutOp]:
    """A round of puts over several namespaces: TTLs, index fields, index=False, updates and deletes."""
    ops: list[PutOp] = []
    for i in range(150):
        ns = ("notes", f"u{i % 3}") if i % 5 else ("docs",)
        text = " ".join(WORDS[(i + j + round_) % len(WORDS)] for j in range(1 + i % 6)) + f" item {i}"
        value: dict[str, Any] = {"content": text, "n": i, "tag": ["a", "b"][i % 2], "nested": {"x": i % 7}}
        if i % 11 == 0:
            value["title"] = f"title {i} {WORDS[i % len(WORDS)]}"
        index: Any = None
        if i % 13 == 0:
            index = False
        elif i % 11 == 0:
            index = ["content", "title"]
        ttl = 60.0 if i % 4 == 0 else None
        if round_ == 1 and i % 3 == 0:
            continue  # the second round updates two thirds and deletes some
        if round_ == 1 and i % 17 == 0:
            ops.append(PutOp(ns, f"k{i}", None))
            continue
        ops.append(PutOp(ns, f"k{i}", value, index=index, ttl=ttl))
    if round_ == 1:
        ops.append(PutOp(("notes", "u0"), "never-there", None))  # a delete of nothing
    return ops


def _open(path: Path) -> ChromaStore:
    return ChromaStore(
        data_dir=path,
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["content"]},
    )


def _rows(store: ChromaStore) -> dict[str, Any]:
    """The catalog's rows for every item, keyed by (namespace, key) instead of row ids."""
    cat = store.catalog
    with cat.read() as conn:
        names = {
            int(i): (ns, key)
            for i, ns, key in conn.execute("SELECT i.id, n.ns, i.key FROM items i JOIN namespaces n ON n.id = i.ns_id")
        }
        out: dict[str, Any] = {
            "items": sorted(
                (names[int(r[0])], r[1], r[2], r[3], r[4])
                for r in conn.execute("SELECT id, value, ttl_minutes, n_vectors, access_count FROM items")
            ),
            # expires_at is now + ttl: the same offset from updated_at in both stores
            "expiry": sorted(
                (names[int(r[0])], round(r[1] - r[2], 3))
                for r in conn.execute("SELECT id, expires_at, updated_at FROM items WHERE expires_at IS NOT NULL")
            ),
            "fields": sorted(
                (names[int(r[0])], r[1], r[2], json.dumps(r[3]))
                for r in conn.execute("SELECT item_id, path, kind, val FROM fields")
            ),
            "vectors": sorted(
                (names[int(r[0])], r[1], r[2], bytes(r[3]))
                for r in conn.execute("SELECT item_id, idx, path, vec FROM vectors")
            ),
            "keyword_lengths": sorted(
                (names[int(r[0])], r[1]) for r in conn.execute("SELECT item_id, n_tokens FROM keyword_lengths")
            ),
            "keyword_stats": list(conn.execute("SELECT docs, tokens FROM keyword_stats")),
            "namespaces": sorted(conn.execute("SELECT ns, collection, depth, n_items FROM namespaces")),
            "collection_counts": sorted(conn.execute("SELECT collection, n_items, n_vectors FROM collection_counts")),
            # Each live indexed item is queued for the index; what each entry says about it must agree.
            "queued": sorted(
                {names[int(r[0])] for r in conn.execute("SELECT item_id FROM index_queue") if int(r[0]) in names}
            ),
        }
        if cat.dialect == "sqlite":
            out["keywords"] = sorted(
                (names[int(r[0]) >> 10], int(r[0]) & 1023, r[1])
                for r in conn.execute("SELECT rowid, text FROM keywords")
            )
        else:
            out["keywords"] = sorted(
                (names[int(r[1]) >> 10], int(r[1]) & 1023, r[0])
                for r in conn.execute("SELECT term, doc FROM keyword_postings")
            )
    return out


def _searches(store: ChromaStore) -> list[Any]:
    out = []
    for prefix, query, flt in [
        (("notes",), "trading momentum", None),
        (("notes", "u1"), "café volume", {"tag": "a"}),
        (("docs",), "whipsawed RSI", None),
        ((), "carry value", {"nested": {"x": 3}}),
        (("notes",), None, {"tag": "b"}),
    ]:
        hits = store.search(prefix, query=query, filter=flt, limit=20)
        out.append([(h.namespace, h.key, None if h.score is None else round(h.score, 5)) for h in hits])
    return out


def test_bulk_batches_leave_the_same_rows_as_single_puts(tmp_path: Path) -> None:
    single, bulk = _open(tmp_path / "single"), _open(tmp_path / "bulk")
    try:
        for round_ in range(2):
            ops = _ops(round_)
            assert len(ops) >= BULK_MIN
            for op in ops:
                single.batch([op])
            bulk.batch(ops)
        want, got = _rows(single), _rows(bulk)
        assert want["items"], "nothing was written"
        assert any(r[2] for r in want["items"]) and any(r[3] == 0 for r in want["items"])  # TTLs, index=False
        assert any(r[3] == 2 for r in want["items"])  # two index fields
        for table in want:
            assert got[table] == want[table], table
        # Searches agree while the index catches up (queued items are scored exactly) and after it did.
        assert _searches(bulk) == _searches(single)
        assert single.wait_for_index(120) and bulk.wait_for_index(120)
        assert _searches(bulk) == _searches(single)
    finally:
        single.close()
        bulk.close()


def test_a_bulk_batch_that_fails_writes_nothing(tmp_path: Path) -> None:
    store = _open(tmp_path / "m")
    try:
        ops = [PutOp(("notes",), f"k{i}", {"content": f"item {i}"}) for i in range(BULK_MIN * 2)]
        store.batch(ops[:10])
        before = _rows(store)
        bad = [*ops, PutOp(("notes",), "bad", {"content": float("nan")})]
        with pytest.raises(ValidationError):
            store.batch(bad)
        assert _rows(store) == before
    finally:
        store.close()
