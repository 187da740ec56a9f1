"""The stores the store benches compare, behind one small interface, and the timing of a case.

`StoreBackend` drives any LangGraph ``BaseStore`` through ``batch`` and
``search``; `BareChroma` holds the same vectors in plain Chroma collections
(the floor); ``open_*`` build ChromaStore, InMemoryStore and SqliteStore on a
`bench.common.items.Data`.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common.items import DIMS, Data, ItemSet, K, LookupEmbeddings, Query
from bench.common.report import percentile

# --------------------------------------------------------------- backends


class StoreBackend:
    """Any LangGraph ``BaseStore``, through ``batch`` and ``search`` only."""

    def __init__(self, store: Any, on_close: Callable[[], None]) -> None:
        self.store = store
        self._on_close = on_close
        self.one_by_one = False  # InMemoryStore refuses two equal texts in one batch (see PITFALLS)

    def put(self, items: ItemSet, idx: range) -> None:
        from langgraph.store.base import PutOp

        ops = [PutOp(items.namespaces[i], items.keys[i], items.values[i], index=items.index) for i in idx]
        if self.one_by_one:
            for op in ops:
                self.store.batch([op])
            return
        try:
            self.store.batch(ops)
        except ValueError as exc:
            if "Number of embeddings" not in str(exc):
                raise
            self.one_by_one = True
            self.put(items, idx)

    def search(self, q: Query) -> list[str]:
        return [h.key for h in self.store.search(q.prefix, query=q.text, filter=q.filter, limit=K)]

    def close(self) -> None:
        self._on_close()


class BareChroma:
    """The same vectors in plain Chroma collections (cosine HNSW, Chroma's defaults, as ChromaStore's)."""

    def __init__(self, data: Data, tmp: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(path=str(tmp / "bare"), settings=Settings(anonymized_telemetry=False))
        self.data = data
        self._cols: dict[str, Any] = {}
        self._fields = {s.collection: 1 for s in data.sets}
        for s in data.sets:
            self._fields[s.collection] = max(self._fields[s.collection], len(s.fields))

    def col(self, name: str) -> Any:
        if name not in self._cols:
            self._cols[name] = self.client.get_or_create_collection(
                name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
        return self._cols[name]

    def put(self, items: ItemSet, idx: range) -> None:
        ids, metas = [], []
        nf = len(items.fields)
        for i in idx:
            meta = dict(items.values[i])
            if items.tag is not None:
                meta["set"] = items.tag
            ns = items.namespaces[i]
            if items.tag == "mem":
                meta["g"], meta["u"] = ns[1], ns[2]
            for f in range(nf):
                ids.append(items.keys[i] if nf == 1 else f"{items.keys[i]}#{f}")
                metas.append(meta)
        rows = items.rows[idx.start : idx.stop].ravel()
        self.col(items.collection).add(ids=ids, embeddings=self.data.vectors[rows], metadatas=metas)

    def floor(self, q: Query, collection: str) -> list[str]:
        res = self.col(collection).query(
            query_embeddings=self.data.vectors[q.row : q.row + 1], n_results=K, include=["metadatas", "distances"]
        )
        return res["ids"][0]

    def where(self, q: Query, collection: str) -> list[str]:
        """The case's search in Chroma's own terms: ``where`` on the labels, best record per item."""
        nf = self._fields[collection] if q.where and q.where.get("set") == "docs" else 1
        res = self.col(collection).query(
            query_embeddings=self.data.vectors[q.row : q.row + 1],
            n_results=K * nf,
            where=q.where,
            include=["metadatas", "distances"],
        )
        keys = list(dict.fromkeys(rid.split("#", 1)[0] for rid in res["ids"][0]))
        return keys[:K]

    def close(self) -> None:
        pass


def release_chroma() -> None:
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    gc.collect()
    # The freed heap stays the process's until it is trimmed: at 1,000,000 items that was gigabytes that
    # InMemoryStore's load then needed on top (the run was OOM-killed).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def extension_sqlite() -> tuple[Any | None, str]:
    """A DB-API ``sqlite3`` module that can load extensions, and how it was found."""
    import sqlite3

    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        return sqlite3, f"stdlib sqlite3 {sqlite3.sqlite_version}"
    for mod, dist in (("pysqlite3.dbapi2", "pysqlite3-binary"), ("sqlean", "sqlean.py")):
        try:
            m = __import__(mod, fromlist=["connect"])
        except ImportError:
            continue
        return m, f"{dist} (SQLite {m.sqlite_version})"
    return None, (
        "not run: this Python's sqlite3 cannot load extensions (built without "
        "SQLITE_ENABLE_LOAD_EXTENSION), so sqlite-vec cannot load; pip install pysqlite3-binary"
    )


def open_chromastore(data: Data, tmp: Path, **settings: Any) -> StoreBackend:
    from langgraph_memory.store import ChromaStore

    store = ChromaStore(
        data_dir=tmp / "chromastore",
        index={"dims": DIMS, "embed": LookupEmbeddings(data), "fields": ["content"]},
        **settings,
    )
    return StoreBackend(store, store.close)


def open_inmemory(data: Data, tmp: Path) -> StoreBackend:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(index={"dims": DIMS, "embed": LookupEmbeddings(data), "fields": ["content"]})
    return StoreBackend(store, lambda: None)


def open_sqlite(data: Data, tmp: Path) -> StoreBackend | str:
    mod, how = extension_sqlite()
    if mod is None:
        return how
    from langgraph.store.sqlite import SqliteStore

    conn = mod.connect(str(tmp / "store.sqlite"), check_same_thread=False, isolation_level=None)
    # SqliteStore names the embedded paths "text_fields" (InMemoryStore: "fields").
    store = SqliteStore(conn, index={"dims": DIMS, "embed": LookupEmbeddings(data), "text_fields": ["content"]})  # type: ignore[arg-type]
    store.setup()
    return StoreBackend(store, conn.close)


# ----------------------------------------------------------------- results


@dataclass
class Timing:
    """Latencies and recall of one store on one case."""

    lat: list[float] = field(default_factory=list)
    found: int = 0
    wanted: int = 0
    note: str = ""

    @property
    def p50(self) -> float | None:
        return percentile(self.lat, 50) if self.lat else None

    @property
    def p95(self) -> float | None:
        return percentile(self.lat, 95) if self.lat else None

    @property
    def recall(self) -> float | None:
        return self.found / self.wanted if self.wanted else None

    def add(self, ms: float, got: Sequence[str], want: Sequence[str]) -> None:
        self.lat.append(ms)
        self.found += len(set(want).intersection(got))
        self.wanted += len(want)
