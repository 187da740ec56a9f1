"""Chroma as a derived index: fed from the catalog, checked on open, rebuilt when damaged.

The catalog (`langgraph_memory.catalog`) holds every item and vector;
Chroma holds only vectors, one collection per store collection, with ids
``"<item id>"`` and ``"<item id>:<n>"`` for an item's further vectors. Every
change reaches Chroma after the catalog committed it, through the catalog's
queue (`ChromaIndex.sync()`): applying a queued change upserts what the
catalog holds now and deletes what it no longer holds, so applying twice, or
after a crash, is harmless.

Opening checks that Chroma agrees with the catalog, as cheaply as the
situation allows (`ChromaIndex.open()`):

* after a clean close, when the folder's files (names, sizes, content) are
  exactly as sealed, nothing more than applying what is queued;
* after a clean close, when the files changed since (bit rot), the folder is
  never opened: a rebuild replaces it;
* after a crash, a probe subprocess opens the folder first (a damaged
  segment can crash the process that opens it), then counts and an id-set
  comparison repair what differs;
* a folder that crashes, fails or answers wrongly is rebuilt from the
  catalog's vectors into a new folder (or, on a Chroma server, new
  collections), and the store switches over; nothing is re-embedded.

`ChromaIndex.rebuild()` does the same on request, with a progress bar.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from langgraph_memory._infra.closing import warn_briefly
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.errors import (
    LangGraphMemoryError,
    LockTimeoutError,
)
from langgraph_memory.index._core import (
    _SEAL_KEY,
    _VERIFIED_KEY,
    IndexBusy,
    IndexServerUnavailable,
    IndexUnavailable,
    RebuildReport,
    _answer_records,
    all_collections,
    parse_record_id,
    record_id,
)
from langgraph_memory.index._session import fingerprint
from langgraph_memory.index.repair import IndexRepair

__all__ = [
    "ChromaIndex",
    "IndexBusy",
    "IndexUnavailable",
    "IndexServerUnavailable",
    "RebuildReport",
    "all_collections",
    "record_id",
    "parse_record_id",
]

logger = logging.getLogger(__name__)


class ChromaIndex(IndexRepair):
    """The Chroma collections that index a catalog's vectors.

    Args:
        catalog: the data directory's catalog (the truth).
        root: for the embedded default, the folder holding the lock and the
            index sub-folders (``<data_dir>/chroma``); None with ``client``.
        client: a Chroma client of the caller's (a server's ``HttpClient``);
            its collections get names unique to this catalog.
        lock_timeout: seconds to wait for another process.
        process: run the embedded client in a child process, so Chroma never
            holds this process's GIL (see `langgraph_memory._infra.chroma_process`).

    Examples:
        >>> index = store.vector_index
        >>> index.rebuild().total
        6
    """

    def query(self, collection: str, vector: np.ndarray, n: int) -> list[tuple[int, int, float]]:
        """The ``n`` nearest records: ``(item id, vector number, cosine distance)``, nearest first.

        Raises:
            IndexUnavailable: Chroma failed on this collection.
        """
        if collection in self.broken:
            raise IndexUnavailable(f"the Chroma index of {collection!r} is waiting for a rebuild")
        if not self.serving():  # caught up by catch_up(), outside the caller's catalog snapshot
            raise self._away("searching")
        self._chroma_name(collection)
        applying = self._applying
        try:
            with self._use(wait=0.0 if applying else None) as client:
                try:
                    col = self._collection(client, collection, create=False)
                    res = (
                        None
                        if col is None
                        else col.query(query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"])
                    )
                except LangGraphMemoryError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    raise self._failed(collection, exc, "searching") from exc
        except LockTimeoutError:
            if not applying:
                raise
            raise IndexBusy(f"the Chroma index of {collection!r} is applying changes; scored exactly") from None
        if res is None:
            if not self.embedded and self._catalog_has_vectors(collection):
                self.health.mark_lost(f"the collection of {collection!r} is missing")
                raise self._away("searching")
            return []
        return _answer_records(res)

    def query_quietly(self, collection: str, vector: np.ndarray, n: int) -> list[tuple[int, int, float]] | None:
        """`query()` from another thread while the caller holds the catalog: None where `query()` would not answer.

        It never reads or writes the catalog (the caller may be inside a
        catalog transaction, waiting for this answer) and reports nothing: a
        collection not looked up yet, a broken or unreachable index, or any
        failure gives None, and the caller's own `query()` then sees and
        reports it.
        """
        col = self._collections.get(collection)
        if col is None or collection in self.broken or not self.serving():
            return None
        try:
            with self.handle.use(wait=0.0 if self._applying else None) as _client:
                if self._epoch != self.handle.epoch:  # reopened: the collection handle is stale
                    return None
                res = col.query(query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"])
            return _answer_records(res)
        except Exception:  # noqa: BLE001 - reported by the caller's own query
            return None

    def chroma_collection(self, collection: str) -> Any | None:
        """The raw Chroma collection indexing ``collection`` (None before its first vector), to look at."""
        self._chroma_name(collection)
        with self._use() as client:
            return self._collection(client, collection, create=False)

    def close(self) -> None:
        """Apply what is queued; the last session of the folder seals it."""
        try:
            if not self.broken:
                self.sync()
        except LangGraphMemoryError as exc:
            warn_briefly(logger, "could not apply queued changes to Chroma on close; the next open will", exc)
        with self._log_lock:
            if self._log_catalog is not None:
                self._log_catalog.close()
                self._log_catalog = None
        if self.session is None or not self.session.held:
            return
        try:
            if not self.broken and self.session.try_last():
                with self.handle.lock.hold():
                    self.handle.drop_client()
                    folder = self.folder()
                    assert folder is not None
                    seal = fingerprint(folder)
                with self.catalog.write() as conn:
                    if not any(_queue.pending(conn, name, limit=1) for name in self.collections):
                        self.catalog.set_meta(conn, _SEAL_KEY, seal)
                        for name in self.collections:
                            self.catalog.set_meta(conn, _VERIFIED_KEY + name, str(_queue.applied(conn, name)))
        except LangGraphMemoryError as exc:
            warn_briefly(logger, "could not seal the Chroma index on close; the next open checks it", exc)
        finally:
            self.session.leave()
