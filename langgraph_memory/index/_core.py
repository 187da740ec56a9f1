"""The Chroma handle under `langgraph_memory.index.chroma.ChromaIndex`: its names and locks, and the queue applied.

Every change reaches Chroma after the catalog committed it, through the catalog's queue (`IndexCore.sync()`):
applying a queued change upserts what the catalog holds now and deletes what it no longer holds, so applying
twice, or after a crash, is harmless.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_memory._infra.chroma import ChromaHandle
from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import applier as _applier
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.errors import (
    DiskFullError,
    LangGraphMemoryError,
    StoreBackendError,
)
from langgraph_memory.index._server_health import ServerHealth, missing
from langgraph_memory.index._server_health import unreachable as server_unreachable
from langgraph_memory.index._session import SessionLock
from langgraph_memory.registry import default_collections

__all__ = [
    "IndexCore",
    "IndexBusy",
    "IndexUnavailable",
    "IndexServerUnavailable",
    "RebuildReport",
    "all_collections",
    "record_id",
    "parse_record_id",
]

logger = logging.getLogger(__name__)

_GEN_KEY = "index_generation"
#: Queued changes applied to Chroma per hold of the index lock. Chroma writes its index files on every call: an
#: upsert into 100,000 items cost about 0.34 s plus 1.0 ms a vector (load 10: 500 vectors 836 ms, 2,000 vectors
#: 2,318 ms), so after a bulk load chunks of 2,000 applied a change for 1.16 ms where chunks of 500 took 1.67 ms.
#: A search meanwhile finds the index busy and ranks in memory instead of waiting.
_APPLY_CHUNK = 2_000
#: Seconds the index lock stays free between two chunks of one pass, for other processes polling for it (every
#: 2 ms at most, see `langgraph_memory._infra.lock`); a chunk's upsert takes 1-2.5 s at 100,000 items.
_HANDOVER = 0.005
_SEAL_KEY = "index_seal"
_BROKEN_KEY = "index_broken"
_VERIFIED_KEY = "index_verified:"


class IndexUnavailable(StoreBackendError):
    """Chroma failed on a collection; searches of it run exactly from the catalog until it is rebuilt."""


class IndexBusy(IndexUnavailable):
    """This process is applying changes to the index right now: a search scores its candidates exactly instead.

    A Chroma call cannot be cut short and an ``upsert`` of a chunk takes seconds
    on a large collection (0.3-0.6 s for 500 vectors at 100,000, 1-2.5 s for 2,000), so
    a search that queued behind it would wait that long, and, since it holds
    the catalog while it searches, so would every put behind it.
    """


class IndexServerUnavailable(IndexUnavailable):
    """The Chroma server does not answer (or lost its data); the index catches up by itself once it does.

    Writes are unaffected (the catalog acknowledges them); searches score
    their candidates exactly from the catalog meanwhile.
    """


def _no_room(exc: BaseException) -> bool:
    """Whether a Chroma (or OS) error means the disk is full."""
    text = str(exc).lower()
    return "disk is full" in text or "no space" in text or "(code: 13)" in text or getattr(exc, "errno", None) == 28


def record_id(item_id: int, idx: int) -> str:
    """The Chroma id of an item's ``idx``-th vector."""
    return str(item_id) if idx == 0 else f"{item_id}:{idx}"


def _answer_records(res: Any) -> list[tuple[int, int, float]]:
    """A Chroma query's answer for one vector as ``(item id, vector number, cosine distance)``, nearest first."""
    return [(*parse_record_id(rid), float(dist)) for rid, dist in zip(res["ids"][0], res["distances"][0], strict=True)]


def parse_record_id(rid: str) -> tuple[int, int]:
    """``(item id, vector number)`` of a Chroma id made by `record_id()`."""
    head, _, tail = rid.partition(":")
    return int(head), int(tail) if tail else 0


def all_collections() -> list[str]:
    """The collection names of the default registry."""
    return default_collections().names()


@dataclass
class RebuildReport:
    """What a rebuild did: vectors per collection, the reason, and how long it took."""

    reason: str
    vectors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.vectors.values())


class IndexCore(ABC):
    """The Chroma collections of one catalog, and the queued changes applied to them; see `ChromaIndex`."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        root: Path | None,
        client: Any | None = None,
        lock_timeout: float = 30.0,
        collections: Sequence[str] | None = None,
        process: bool = False,
    ) -> None:
        self.catalog = catalog
        #: The collections this index keeps, by name.
        self.collections: list[str] = list(collections) if collections is not None else all_collections()
        self.lock_timeout = lock_timeout
        self.embedded = client is None
        self.root = root
        if client is None:
            assert root is not None
            self.handle = ChromaHandle.embedded(
                root,
                lock_timeout,
                locate=lambda: self._folder_of(catalog.peek_meta(_GEN_KEY)),
                process=process,
            )
            self.session: SessionLock | None = SessionLock(root)
        else:
            self.handle = ChromaHandle.for_client(client, lock_timeout)
            self.session = None
        self._collections: dict[str, Any] = {}
        # Chroma names read from the catalog before the index lock is taken: holding the index while waiting
        # for the catalog could wait forever on a search that holds the catalog and waits for the index.
        self._names: dict[str, str] = {}
        self._broken_to_record = False
        self._held = threading.local()  # how deep this thread is inside ``_use``
        self._epoch = -1
        #: collections Chroma failed on since the last rebuild (searched exactly meanwhile).
        self.broken: set[str] = set()
        #: how long the open-time quick_check of the catalog took (None: the last session closed cleanly).
        self.catalog_check_seconds: float | None = None
        #: how long the open-time probe took (None: the folder was sealed, no probe ran).
        self.probe_seconds: float | None = None
        #: the last rebuild this object did (at open or on request).
        self.last_rebuild: RebuildReport | None = None
        #: records applied while catching up after an unclean shutdown, then checked (see _check_caught_up).
        self.caught_up_checked = 0
        #: A Chroma server's outages (never set for the embedded index): see `_server_health`.
        self.health = ServerHealth()
        self._recovering = False
        # With the catalog on a server, applying the log runs on a connection of its own (see `_log`).
        self._log_catalog: Catalog | None = None
        self._log_lock = threading.Lock()
        # True while this process's applier holds the index for an upsert: searches then do not queue behind it.
        self._applying = False

    # ------------------------------------------------------------- naming

    def _folder_of(self, generation: str | None) -> Path:
        assert self.root is not None
        return self.root / f"index-{int(generation or 1)}"

    def folder(self) -> Path | None:
        """The folder the embedded index lives in now (None on a server)."""
        if not self.embedded:
            return None
        return self._folder_of(self.catalog.meta(_GEN_KEY))

    def _default_name(self, collection: str, generation: int = 1) -> str:
        if self.embedded:
            return collection
        return f"lgm-{self.catalog.catalog_id[:12]}-{collection}-g{generation}"

    def _chroma_name(self, collection: str, *, record: bool = False) -> str:
        """The Chroma name of ``collection``; with ``record``, written to the catalog if it has none yet.

        Call it before taking the index lock (see ``_names``).
        """
        name = self._names.get(collection)
        if name is not None:
            return name
        with self.catalog.read() as conn:
            name = _queue.chroma_name(conn, collection)
        if name is None:
            name = self._default_name(collection)
            if record:
                with self.catalog.write() as conn:
                    recorded = _queue.chroma_name(conn, collection)  # another machine may have named it meanwhile
                    if recorded is None:
                        _queue.set_chroma_name(conn, collection, name, 0)
                    else:
                        name = recorded
            else:
                return name  # not recorded yet: read it again next time
        self._names[collection] = name
        return name

    def _forget_names(self) -> None:
        self._collections.clear()
        self._names.clear()

    # ------------------------------------------------------------- access

    @contextmanager
    def _use(self, *, write: bool = False, wait: float | None = None) -> Iterator[Any]:
        self._held.depth = self._holding() + 1
        try:
            with self.handle.use(write=write, wait=wait) as client:
                if self._epoch != self.handle.epoch:
                    self._collections.clear()
                    self._epoch = self.handle.epoch
                yield client
        finally:
            self._held.depth -= 1
            if self._broken_to_record and not self._holding():
                self._record_broken()

    def _holding(self) -> int:
        return int(getattr(self._held, "depth", 0))

    def _record_broken(self) -> None:
        # After the index lock is released (see ``_names``): the next open rebuilds.
        self._broken_to_record = False
        try:
            with self.catalog.write() as conn:
                self.catalog.set_meta(conn, _BROKEN_KEY, "1")
        except LangGraphMemoryError:  # the catalog's own trouble is reported where it happens
            logger.debug("could not record the broken index", exc_info=True)

    def _collection(self, client: Any, collection: str, *, create: bool) -> Any | None:
        col = self._collections.get(collection)
        if col is not None:
            return col
        # Resolved by the caller before the lock; one that did not reads the catalog here, under it.
        name = self._chroma_name(collection, record=create)
        if create:
            try:
                col = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
            except Exception as exc:  # noqa: BLE001 - another machine created it at the same moment
                if self.embedded or server_unreachable(exc):
                    raise
                col = client.get_collection(name, embedding_function=None)
        else:
            try:
                col = client.get_collection(name, embedding_function=None)
            except Exception as exc:  # noqa: BLE001 - Chroma raises several types for "missing"
                if not self.embedded and server_unreachable(exc):
                    raise
                return None
        self._collections[collection] = col
        return col

    def _failed(self, collection: str, exc: BaseException, what: str) -> LangGraphMemoryError:
        if not self.embedded and (server_unreachable(exc) or missing(exc)):
            # Not damage: the server is away, or lost collections (another machine may have rebuilt them under
            # new names); the catalog has every vector.
            self._forget_names()
            if server_unreachable(exc):
                if self.health.down_since is None:
                    logger.warning(
                        "the Chroma server does not answer (%s: %s); writes go on in the catalog, searches are "
                        "scored exactly, and the index catches up when it is back",
                        type(exc).__name__,
                        exc,
                    )
                self.health.failed(f"{type(exc).__name__}: {exc}")
                return IndexServerUnavailable(f"the Chroma server does not answer while {what} ({exc})")
            logger.warning(
                "a Chroma collection of %r is missing on the server (%s); catching up from the catalog", collection, exc
            )
            self.health.mark_lost(str(exc))
            return IndexServerUnavailable(
                f"the Chroma collection of {collection!r} is missing on the server while {what}"
            )
        if _no_room(exc):
            # A full disk is not damage: the changes stay queued and apply once there is room.
            where = self.handle.folder or self.root or "the Chroma server"
            return DiskFullError(
                f"the disk holding the Chroma index ({where}) is full while {what}; the catalog holds every "
                "acknowledged write, and the index catches up once space is freed",
                where,
            )
        self.broken.add(collection)
        self._broken_to_record = True
        if not self._holding():
            self._record_broken()
        logger.error(
            "the Chroma index of %r failed while %s (%s: %s); its searches now run exactly from the catalog. "
            "Call store.rebuild_index() (or `langgraph-memory index rebuild`) or reopen the store to rebuild it.",
            collection,
            what,
            type(exc).__name__,
            exc,
        )
        return IndexUnavailable(f"the Chroma index of {collection!r} failed while {what}: {exc}")

    # ------------------------------------------------------ server outages

    def serving(self) -> bool:
        """Whether the index may be searched now (False while a Chroma server is away or not caught up)."""
        return self.embedded or not self.health.trouble

    def _away(self, what: str) -> IndexServerUnavailable:
        return IndexServerUnavailable(
            f"the Chroma index is unavailable while {what}: the server "
            f"{'does not answer' if self.health.down_since is not None else 'is catching up'}"
            f" ({self.health.reason}); it catches up by itself when the server answers"
        )

    @abstractmethod
    def catch_up(self) -> bool:
        """Whether the index serves, after catching up from a server outage (`IndexRepair.catch_up`)."""

    # -------------------------------------------------------------- writes

    def sync(self, collections: list[str] | None = None) -> int:
        """Apply the catalog's queued changes to Chroma; return how many items were applied.

        Raises:
            IndexUnavailable: Chroma failed (the changes stay queued).
        """
        if not self.catch_up():
            raise self._away("applying changes")
        names = collections or self.collections
        log = self._log()
        with log.read() as conn:
            names = [n for n in names if n not in self.broken and _queue.pending(conn, n, limit=1)]
        if not names:
            return 0
        applied = 0
        for name in names:
            applied += self._sync_claimed(name)
        return applied

    def behind(self) -> set[str]:
        """The collections with committed changes not yet applied to Chroma (those marked broken aside)."""
        with self._log().read() as conn:
            return {n for n in self.collections if n not in self.broken and _queue.pending(conn, n, limit=1)}

    def _log(self) -> Catalog:
        """The catalog as the log's applier uses it.

        On a server, a second connection: the catalog's own is shared by
        this process's puts and searches, and a pass of the applier (a dozen
        statements, each a round trip) would hold them up.
        """
        if not self.catalog.on_server:
            return self.catalog
        with self.catalog.read():
            pass  # a write of this process still open (in another thread) commits first: then its rows are seen
        with self._log_lock:
            if self._log_catalog is None or self._log_catalog.closed:
                self._log_catalog = self.catalog.another()
            return self._log_catalog

    def _sync_claimed(self, name: str) -> int:
        """Apply ``name``'s log up to its head now, or wait until the process that claimed it has.

        Processes sharing a catalog on a server share one Chroma server: one
        of them applies a collection's log at a time (see
        `langgraph_memory.catalog.applier`), so no change is upserted twice.
        """
        applied = 0
        head: int | None = None
        log = self._log()
        while True:
            with log.read() as conn:
                if head is None:
                    head = _queue.last_seq(conn)
                first = _queue.pending(conn, name, limit=1)
                if not first or first[0][0] > head:
                    return applied
            # Waits while another process applies this log (most often, then, nothing is left to apply).
            with _applier.claimed(log, name):
                applied += self._apply_pending(name)

    def _apply_pending(self, name: str) -> int:
        """Apply every change of ``name`` pending now (the caller holds the claim on its log)."""
        applied = 0
        log = self._log()
        while True:
            self._chroma_name(name, record=True)  # before the index lock (see ``_names``)
            # Read the chunk holding the index lock: another applier (the catch-up thread, an inline sync,
            # another process) that applied a later delete or update between this read and this upsert was
            # undone by it (a deleted item came back as a Chroma record without its item). The read waits on
            # nothing that waits for the index: a SQLite reader never waits for a writer, and on a server the
            # log has a connection of its own (a search holds the catalog's and then asks for the index).
            with self._use() as client:
                self._applying = True
                try:
                    with log.read() as conn:
                        rows = _queue.pending(conn, name, limit=_APPLY_CHUNK)
                        if not rows:
                            break
                        n_old: dict[int, int] = {}
                        for _seq, item_id, n in rows:
                            n_old[item_id] = max(n_old.get(item_id, 0), n)
                        vectors = _item_rows.load_vectors(conn, list(n_old))
                    with self._use(write=True):  # nested: a pass that finds nothing left records no write
                        try:
                            col = self._collection(client, name, create=True)
                            self._apply(col, n_old, vectors)
                        except LangGraphMemoryError:
                            raise
                        except Exception as exc:  # noqa: BLE001 - Chroma's errors are many and untyped
                            raise self._failed(name, exc, "applying changes") from exc
                finally:
                    self._applying = False
            with log.write(ordered=False) as conn:  # needs no place in the change log
                _queue.mark_applied(conn, name, rows[-1][0])
            applied += len(n_old)
            if len(rows) < _APPLY_CHUNK:
                break  # everything pending was in this read; a later write requests its own pass
            time.sleep(_HANDOVER)  # another process waiting for the index gets its turn
        return applied

    @staticmethod
    def _apply(col: Any, n_old: dict[int, int], vectors: dict[int, list[tuple[int, str, bytes]]]) -> None:
        ids: list[str] = []
        blobs: list[bytes] = []
        doomed: list[str] = []
        for item_id, n in n_old.items():
            have = vectors.get(item_id, [])
            for idx, _path, vec in have:
                ids.append(record_id(item_id, idx))
                blobs.append(vec)
            doomed.extend(record_id(item_id, i) for i in range(len(have), max(n, len(have))))
        if ids:
            dims = len(blobs[0]) // 4
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dims)
            for start in range(0, len(ids), 5000):
                col.upsert(ids=ids[start : start + 5000], embeddings=matrix[start : start + 5000])
        if doomed:
            for start in range(0, len(doomed), 5000):
                col.delete(ids=doomed[start : start + 5000])

    # --------------------------------------------------------------- reads

    def count(self, collection: str) -> int:
        """How many vectors Chroma holds for ``collection``."""
        self._chroma_name(collection)
        with self._use() as client:
            col = self._collection(client, collection, create=False)
            return 0 if col is None else int(col.count())

    def _catalog_counts(self) -> dict[str, int]:
        with self.catalog.read() as conn:
            return _vectors.vector_counts(conn)

    def _catalog_has_vectors(self, collection: str) -> bool:
        with self.catalog.read() as conn:
            return _vectors.count_vectors(conn, collection) > 0

    # -------------------------------------------------------- check, repair
