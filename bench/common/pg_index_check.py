"""Looking at a shared memory from the test's own process: a third "machine" with its own local directory.

``checker(url, server, local_dir)`` opens a ``ChromaStore`` on the PostgreSQL
catalog and the Chroma server; `index_integrity()` checks that the server's
index holds exactly the catalog's vectors and that every vector finds its own
record first (PITFALLS: counts alone do not show a damaged index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.catalog import vectors as catalog_vectors
from langgraph_memory.config import Settings
from langgraph_memory.index.chroma import parse_record_id, record_id
from langgraph_memory.store import ChromaStore

__all__ = ["checker", "index_integrity", "check_server_index", "DIMS"]

DIMS = 16


def checker(url: str, server: Any, local_dir: Path, dims: int = DIMS) -> ChromaStore:
    """A store on the shared memory, as another machine would open it."""
    return ChromaStore(
        server.client(),
        settings=Settings.resolve(url, local_dir=local_dir),
        index={"dims": dims, "embed": DeterministicFakeEmbedding(size=dims)},
    )


def index_integrity(store: ChromaStore) -> dict[str, Any]:
    """Per collection: the catalog's record count, the server's, ids missing or extra, and records not found first.

    Equal vectors (two items with one text) may find each other; a record
    counts as found when the nearest record is itself or at distance ~0.
    """
    out: dict[str, Any] = {}
    for name in store.vector_index.collections:
        with store.catalog.read() as conn:
            want = {record_id(i, k) for i, k in catalog_vectors.record_keys(conn, name)}
        col = store.vector_index.chroma_collection(name)
        have: dict[str, np.ndarray] = {}
        if col is not None:
            offset = 0
            while True:
                got = col.get(include=["embeddings"], limit=5000, offset=offset)
                for rid, vec in zip(got["ids"], got["embeddings"], strict=True):
                    have[rid] = np.asarray(vec, dtype=np.float32)
                if len(got["ids"]) < 5000:
                    break
                offset += 5000
        lost: list[str] = []
        ids = sorted(have)
        for start in range(0, len(ids), 100):
            part = ids[start : start + 100]
            res = col.query(query_embeddings=np.stack([have[r] for r in part]), n_results=1, include=["distances"])
            for rid, top, dist in zip(part, res["ids"], res["distances"], strict=True):
                if not top or (top[0] != rid and dist[0] > 1e-6):
                    lost.append(rid)
        if want or have:
            out[name] = {
                "catalog": len(want),
                "server": len(have),
                "missing": sorted(want - set(have)),
                "extra": sorted(set(have) - want),
                "not_first": lost,
            }
    return out


def check_server_index(url: str, server: Any, local_dir: Path, *, expect: int | None = None) -> ChromaStore | None:
    """Assert the server's index is whole (after the store caught up); ``expect``: total records."""
    store = checker(url, server, local_dir)
    try:
        store.vector_index.sync()
        report = index_integrity(store)
        problems = {n: r for n, r in report.items() if r["missing"] or r["extra"] or r["not_first"]}
        assert not problems, {
            n: {k: (v[:5] if isinstance(v, list) else v) for k, v in r.items()} for n, r in problems.items()
        }
        if expect is not None:
            assert sum(r["catalog"] for r in report.values()) == expect, report
    finally:
        store.close()
    return None


def item_ids(records: list[str]) -> set[int]:
    return {parse_record_id(r)[0] for r in records}
