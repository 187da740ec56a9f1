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
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_memory._infra.chroma import ChromaHandle
from langgraph_memory._infra.closing import warn_briefly
from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import applier as _applier
from langgraph_memory.catalog import integrity as _integrity
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.errors import (
    CorruptFileError,
    DiskFullError,
    LangGraphMemoryError,
    LockTimeoutError,
    StoreBackendError,
)
from langgraph_memory.index._probe import probe, unreachable
from langgraph_memory.index._server_health import ServerHealth, missing
from langgraph_memory.index._server_health import unreachable as server_unreachable
from langgraph_memory.index._session import SessionLock, fingerprint, is_content_seal
from langgraph_memory.registry import default_collections

__all__ = [
    "ChromaIndex",
    "IndexBusy",
    "IndexUnavailable",
    "IndexServerUnavailable",
    "RebuildReport",
    "record_id",
    "parse_record_id",
]

logger = logging.getLogger(__name__)

_GEN_KEY = "index_generation"
# Queued changes applied to Chroma per hold of the index lock.
_APPLY_CHUNK = 500
#: Seconds the index lock stays free between two chunks of one pass, for other processes polling for it (every
#: 2 ms at most, see `langgraph_memory._infra.lock`); a chunk's upsert takes 0.3-0.6 s at 100,000 items.
_HANDOVER = 0.005
_SEAL_KEY = "index_seal"
_BROKEN_KEY = "index_broken"
_BATCH = 1000
_SAMPLES = 32
#: After an unclean shutdown, at most this many records changed since the index was last verified are
#: checked per collection (the newest), besides `_SAMPLES` random ones.
_RECENT_MAX = 2000
_VERIFIED_KEY = "index_verified:"
#: After an unclean shutdown an index of at most this many vectors is rebuilt from the catalog rather than
#: probed: measured here, a rebuild applies ~6,600 vectors/s (10,603 in 1.6 s), so 25,000 take about as
#: long as the probe takes at 100,000 (3.7 s), and no record a torn write damaged can survive it. The
#: probe checks the records written since the index was last verified and a sample of the others.
REBUILD_MAX = 25_000

ProgressFn = Callable[[str, int, int], None]


class IndexUnavailable(StoreBackendError):
    """Chroma failed on a collection; searches of it run exactly from the catalog until it is rebuilt."""


class IndexBusy(IndexUnavailable):
    """This process is applying changes to the index right now: a search scores its candidates exactly instead.

    A Chroma call cannot be cut short and an ``upsert`` of a chunk takes up to
    a second on a large collection (0.3-0.6 s for 500 vectors at 100,000), so
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


class ChromaIndex:
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

    def catch_up(self) -> bool:
        """After a Chroma server outage: once it answers, compare it with the catalog and repair it.

        Cheap when nothing is wrong (one attribute read). Call outside any
        catalog transaction. Returns whether the index serves now; while the
        server stays away, tries at most once per backoff interval.
        """
        if self.embedded or not self.health.trouble or self._recovering:
            return True
        if not self.health.may_try():
            return False
        self._recovering = True
        try:
            self._forget_names()
            repaired = self.reconcile()
        except (LangGraphMemoryError, RuntimeError) as exc:
            # Still away (recorded by _failed), the catalog is, or the caller holds a read snapshot (a
            # repair writes): searches stay exact, and the next call outside a snapshot catches up.
            logger.debug("the Chroma index could not catch up yet: %s", exc)
            return False
        finally:
            self._recovering = False
        away = self.health.down_for()
        self.health.recovered()
        logger.warning(
            "the Chroma server answers again%s; the index caught up from the catalog (repaired: %s)",
            f" after {away:.1f} s" if away else "",
            repaired or "nothing",
        )
        return True

    def _away(self, what: str) -> IndexServerUnavailable:
        return IndexServerUnavailable(
            f"the Chroma index is unavailable while {what}: the server "
            f"{'does not answer' if self.health.down_since is not None else 'is catching up'}"
            f" ({self.health.reason}); it catches up by itself when the server answers"
        )

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
            # Read from the catalog, then hold the index lock for this chunk's upsert only: a search holds
            # the catalog and then asks for the index, so holding the index while asking for the catalog
            # could wait on each other (with the catalog on a server, this runs in a thread of its own).
            with log.read() as conn:
                rows = _queue.pending(conn, name, limit=_APPLY_CHUNK)
                if not rows:
                    break
                n_old: dict[int, int] = {}
                for _seq, item_id, n in rows:
                    n_old[item_id] = max(n_old.get(item_id, 0), n)
                vectors = _items.load_vectors(conn, list(n_old))
            self._chroma_name(name, record=True)  # before the index lock (see ``_names``)
            with self._use(write=True) as client:
                self._applying = True
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

    def open(self, *, progress: bool | ProgressFn = True) -> None:
        """Check the index against the catalog and repair or rebuild it (see the module docstring)."""
        if self.session is None:
            self._reconcile_or_rebuild(progress)
            return
        first = self.session.enter()
        try:
            if first:
                self._first_open(progress)
        except BaseException:
            self.session.leave()
            raise
        self.session.share(self.lock_timeout)

    def _first_open(self, progress: bool | ProgressFn) -> None:
        assert self.root is not None
        folder = self.folder()
        assert folder is not None
        self._remove_stale_folders(folder)
        with self.catalog.read() as conn:
            seal = self.catalog.get_meta(conn, _SEAL_KEY)
            broken = self.catalog.get_meta(conn, _BROKEN_KEY)
        now = fingerprint(folder) if seal is not None and folder.exists() else None
        rotted = is_content_seal(seal) and now != seal
        if (seal is None and not self.catalog.created) or rotted:
            # The last session did not close, or the files changed on disk since: check the catalog's pages too.
            # (A catalog this open made has no last session: a new memory starts quietly.)
            self._check_catalog()
        counts = self._catalog_counts()
        total = sum(counts.values())
        if broken:
            self._rebuild_or_degrade("the index failed in an earlier session", progress)
        elif not folder.exists():
            if total:
                self._rebuild_or_degrade(f"the index folder {folder} is missing", progress)
        elif seal is not None and now == seal:
            pass
        elif rotted:
            # Closed cleanly, then changed on disk: a damaged HNSW file can crash the process that loads it,
            # and a probe samples only some records, so the files are never opened; the catalog has it all.
            # Marked broken first, so that an open after a failed rebuild (a full disk) rebuilds as well.
            with self.catalog.write() as conn:
                self.catalog.set_meta(conn, _BROKEN_KEY, "1")
            self._rebuild_or_degrade(
                f"the index files in {folder} changed after the last clean close (damaged on disk, or written "
                f"by another program; content hash {(now or '')[:19]} against the seal's {(seal or '')[:19]})",
                progress,
            )
        else:
            if total <= REBUILD_MAX:
                self._rebuild_or_degrade(
                    f"the index was not closed cleanly; {total:,} vectors are rebuilt faster than checked", progress
                )
            else:
                self._probe_and_catch_up(folder, counts, progress)
        with self.catalog.write() as conn:
            self.catalog.set_meta(conn, _SEAL_KEY, None)

    def _check_catalog(self) -> None:
        """SQLite's quick_check of the catalog's pages.

        Raises:
            CorruptFileError: the catalog is damaged; it is the truth, so nothing repairs it here.
        """
        started = time.perf_counter()
        try:
            with self.catalog.read() as conn:
                problems = _integrity.quick_check(conn)
        except CorruptFileError as exc:  # a page too damaged to be checked at all
            problems = [str(exc.__cause__ or exc)]
        self.catalog_check_seconds = time.perf_counter() - started
        if problems:
            raise CorruptFileError(
                f"the catalog {self.catalog.path} is damaged (SQLite's quick_check: {'; '.join(problems[:3])}); it "
                "holds every item and is not rebuilt from anything. Restore it from a backup (or a bundle), or "
                "move the data directory aside to start afresh (see the README, 'Damaged files, full disks').",
                self.catalog.path,
            )
        logger.info("checked the catalog's pages in %.2f s after an unclean shutdown", self.catalog_check_seconds)

    def _probe_and_catch_up(self, folder: Path, counts: dict[str, int], progress: bool | ProgressFn) -> None:
        """After an unclean shutdown: probe ``folder`` in a subprocess, apply what was queued, check that too."""
        started = time.perf_counter()
        result = probe(folder, self._probe_specs(counts))
        self.probe_seconds = time.perf_counter() - started
        if not result.ok:
            why = result.detail or "; ".join(f"{k}: {v}" for k, v in result.problems.items())
            self._rebuild_or_degrade(f"the index did not pass its check ({why})", progress)
            return
        logger.info("checked the Chroma index in %s after an unclean shutdown (%.2f s)", folder, self.probe_seconds)
        before = self._applied_marks()
        self._mark_verified()
        self._reconcile_or_rebuild(progress, counts)
        self._check_caught_up(before, progress)

    def _remove_stale_folders(self, current: Path) -> None:
        assert self.root is not None
        for old in self.root.glob("index-*"):
            if old != current and old.is_dir():
                logger.info("removing the old index folder %s", old)
                shutil.rmtree(old, ignore_errors=True)

    def _probe_specs(self, counts: dict[str, int]) -> list[dict[str, Any]]:
        specs = []
        with self.catalog.read() as conn:
            for name in self.collections:
                expected = counts.get(name, 0)
                chroma = _queue.chroma_name(conn, name)
                if chroma is None and not expected:
                    continue
                specs.append(
                    {
                        "name": chroma or self._default_name(name),
                        "samples": self._recent(conn, name) + self._samples(conn, name, expected),
                    }
                )
        return specs

    @staticmethod
    def _records(conn: Any, item_ids: list[int]) -> list[list[Any]]:
        """``[record id, vector]`` of every vector of these items."""
        return [
            [record_id(item_id, idx), np.frombuffer(vec, dtype=np.float32).tolist()]
            for item_id, idx, vec in _vectors.records_of(conn, item_ids)
        ]

    def _recent(self, conn: Any, collection: str) -> list[list[Any]]:
        """The records Chroma applied since it was last verified (the newest `_RECENT_MAX`).

        A process killed while Chroma wrote its HNSW files can leave a record
        that its own vector no longer finds while the folder otherwise opens
        and answers; the records written since the last verified point are
        the ones such a write could have touched.
        """
        verified = int(self.catalog.get_meta(conn, _VERIFIED_KEY + collection) or 0)
        return self._changed(conn, collection, verified, _queue.applied(conn, collection))

    def _changed(self, conn: Any, collection: str, after: int, upto: int) -> list[list[Any]]:
        """``[record id, vector]`` of the items queued for ``collection`` in ``(after, upto]``, newest first."""
        items = _queue.recently_changed(conn, collection, after, upto, _RECENT_MAX)
        return self._records(conn, items)[:_RECENT_MAX]

    def _applied_marks(self) -> dict[str, int]:
        with self.catalog.read() as conn:
            return {name: _queue.applied(conn, name) for name in self.collections}

    def _check_caught_up(self, before: dict[str, int], progress: bool | ProgressFn) -> None:
        """After an unclean shutdown: each record applied while catching up must find itself, else rebuild.

        The probe checks what Chroma held before the store caught up. A change
        Chroma had half-applied when the process died, but the queue had not
        marked, is applied again here, into a segment the crash may have torn:
        measured, 1 record in 200 crash-bench kills then stayed unreachable.
        The check runs in this process (the probe showed the folder opens).
        """
        checked = 0
        for name in self.collections:
            if name in self.broken:
                continue
            with self.catalog.read() as conn:
                records = self._changed(conn, name, before.get(name, 0), _queue.applied(conn, name))
            if not records:
                continue
            self._chroma_name(name)
            with self._use() as client:
                try:
                    col = self._collection(client, name, create=False)
                    missed = unreachable(col, records, col.count()) if col is not None else []
                except Exception as exc:  # noqa: BLE001 - any failure here means the index cannot be trusted
                    missed, why = ["?"], f"{type(exc).__name__}: {exc}"
                else:
                    why = f"e.g. {missed[0]}" if missed else ""
            checked += len(records)
            if missed:
                self._rebuild_or_degrade(
                    f"{len(missed)} of {len(records)} records of {name!r} applied after the crash did not find "
                    f"themselves ({why})",
                    progress,
                )
                return
        self.caught_up_checked = checked
        if checked:
            self._mark_verified()

    def _mark_verified(self) -> None:
        """Every record Chroma holds now was checked (a clean close, or an open whose check passed)."""
        with self.catalog.write() as conn:
            for name in self.collections:
                self.catalog.set_meta(conn, _VERIFIED_KEY + name, str(_queue.applied(conn, name)))

    @staticmethod
    def _samples(conn: Any, collection: str, n_vectors: int) -> list[list[Any]]:
        """Up to `_SAMPLES` vectors of ``collection`` Chroma must hold (none still queued)."""
        if not n_vectors:
            return []
        span = _scope.item_id_range(conn)
        if span is None:
            return []
        lo, hi = span
        queued = {item_id for _seq, item_id, _n in _queue.pending(conn, collection)}
        out: list[list[Any]] = []
        rng = random.Random(n_vectors)
        for _ in range(_SAMPLES * 4):
            if len(out) >= _SAMPLES:
                break
            row = _vectors.vector_at_or_after(conn, rng.randint(lo, hi), collection)
            if row is None or row[0] in queued:
                continue
            vec = np.frombuffer(row[2], dtype=np.float32).tolist()
            out.append([record_id(row[0], row[1]), vec])
        return out

    def _reconcile_or_rebuild(self, progress: bool | ProgressFn, counts: dict[str, int] | None = None) -> None:
        try:
            self.reconcile(counts)
        except IndexServerUnavailable:
            # Said already, once per outage, by _failed; a second line at open adds nothing.
            logger.debug("the Chroma server does not answer at open; the index catches up when it does")
        except IndexUnavailable as exc:
            self._rebuild_or_degrade(str(exc), progress)
        except DiskFullError as exc:
            warn_briefly(logger, "the Chroma index could not catch up on open; it will on a later write", exc)

    def _rebuild_or_degrade(self, reason: str, progress: bool | ProgressFn) -> None:
        """Rebuild at open; if even that fails (a full disk), search exactly from the catalog meanwhile."""
        try:
            self.rebuild(reason=reason, progress=progress)
        except LangGraphMemoryError as exc:
            self.broken.update(self.collections)
            logger.error(
                "could not rebuild the Chroma index (%s); searches run exactly from the catalog until a rebuild "
                "succeeds (store.rebuild_index(), or reopen)",
                exc,
            )

    def reconcile(self, counts: dict[str, int] | None = None) -> dict[str, int]:
        """Apply queued changes, then make each collection hold exactly the catalog's vector ids.

        Compares counts first and ids only where counts differ. Returns how
        many records were added or removed per collection.
        """
        self.sync()
        counts = self._catalog_counts() if counts is None else counts
        repaired: dict[str, int] = {}
        for name in self.collections:
            expected = counts.get(name, 0)
            try:
                have = self.count(name)
            except Exception as exc:  # noqa: BLE001
                raise self._failed(name, exc, "counting") from exc
            if have != expected:
                repaired[name] = self._repair_ids(name)
        if repaired:
            logger.warning("repaired the Chroma index from the catalog: %s", repaired)
        return repaired

    def _repair_ids(self, collection: str) -> int:
        """Make ``collection`` on the server hold exactly the catalog's record ids, under the log's claim.

        On a shared server, a repair and another process's pass over the log
        (or two repairs) could upsert the same records at once; Chroma's HNSW
        rewires an upserted record in place, and an in-place update is where
        it can leave a record its graph no longer reaches
        (chroma-core/chroma#7758). Under the log's claim they take turns, and
        the second reads the ids the first added.
        """
        with _applier.claimed(self._log(), collection):
            return self._repair_claimed(collection)

    def _repair_claimed(self, collection: str) -> int:
        self._chroma_name(collection, record=True)
        with self._use(write=True) as client:
            try:
                col = self._collection(client, collection, create=True)
                assert col is not None  # create=True always gives a collection
                have: set[str] = set()
                offset = 0
                while True:
                    got = col.get(include=[], limit=10_000, offset=offset)
                    have.update(got["ids"])
                    if len(got["ids"]) < 10_000:
                        break
                    offset += 10_000
            except LangGraphMemoryError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise self._failed(collection, exc, "repairing") from exc
        # Read after the server's ids, and outside the index lock (see ``_names``): a record another machine
        # applied meanwhile was committed before, so it is wanted (read in the other order, it would be deleted
        # as extra).
        with self.catalog.read() as conn:
            want: dict[str, tuple[int, int]] = {}
            for item_id, idx in _vectors.record_keys(conn, collection):
                want[record_id(item_id, idx)] = (item_id, idx)
            extra = [rid for rid in have if rid not in want]
            missing = sorted({want[rid][0] for rid in want if rid not in have})
            vectors = _items.load_vectors(conn, missing)
        with self._use(write=True) as client:
            try:
                col = self._collection(client, collection, create=True)
                assert col is not None
                for start in range(0, len(extra), 5000):
                    col.delete(ids=extra[start : start + 5000])
                self._apply(col, {i: 0 for i in missing}, vectors)
            except LangGraphMemoryError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise self._failed(collection, exc, "repairing") from exc
        return len(extra) + len(missing)

    # ------------------------------------------------------------- rebuild

    def rebuild(self, *, reason: str = "asked for", progress: bool | ProgressFn = True) -> RebuildReport:
        """Rebuild every collection from the catalog's vectors into a new folder (or new collections).

        The old index keeps serving until the new one is complete; a crash
        midway leaves the old one in place (and the next open removes the
        half-built folder). Shows a progress bar on a terminal (``progress``
        may also be a callback ``(collection, done, total)``), and logs what
        it did.
        """
        started = time.perf_counter()
        report = RebuildReport(reason=reason)
        logger.warning("rebuilding the Chroma index from the catalog: %s", reason)
        counts = self._catalog_counts()
        total = sum(counts.values())
        with self.catalog.read() as conn:
            generation = int(self.catalog.get_meta(conn, _GEN_KEY) or 1)
            snapshot = _queue.last_seq(conn)
        new_gen = generation + 1
        with _progress(progress, total) as tick:
            try:
                if self.embedded:
                    self._rebuild_embedded(new_gen, counts, report, tick)
                else:
                    self._rebuild_server(new_gen, counts, report, tick)
            except LangGraphMemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - Chroma's errors are untyped
                err = self._failed("*", exc, "rebuilding")
                self.broken.discard("*")
                raise err from exc
            with self.catalog.write() as conn:
                self.catalog.set_meta(conn, _GEN_KEY, str(new_gen))
                self.catalog.set_meta(conn, _BROKEN_KEY, None)
                for name in self.collections:
                    _queue.set_chroma_name(conn, name, self._default_name(name, new_gen), snapshot)
                    self.catalog.set_meta(conn, _VERIFIED_KEY + name, str(snapshot))  # all of it is new
        old_names = {name: self._default_name(name, generation) for name in self.collections}
        self.handle.switched()
        self._forget_names()
        self.broken.clear()
        if self.embedded:
            self._remove_stale_folders(self._folder_of(str(new_gen)))
        else:
            self._drop_server_collections(old_names)
        self.sync()
        report.seconds = time.perf_counter() - started
        self.last_rebuild = report
        logger.warning(
            "rebuilt the Chroma index: %d vectors in %d collections in %.1f s",
            report.total,
            len([c for c in report.vectors.values() if c]),
            report.seconds,
        )
        return report

    def _fill(self, upsert: Callable[..., Any], collection: str, report: RebuildReport, tick: ProgressFn) -> None:
        """Copy a collection's vectors from the catalog, batch by batch, through ``upsert``."""
        after = 0
        done = 0
        while True:
            with self.catalog.read() as conn:
                rows = _vectors.vectors_after(conn, collection, after, _BATCH)
            if not rows:
                break
            after = rows[-1][0]
            dims = len(rows[0][3]) // 4
            matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), dims)
            upsert(ids=[record_id(r[1], r[2]) for r in rows], embeddings=matrix)
            done += len(rows)
            tick(collection, len(rows), 0)
        report.vectors[collection] = done

    def _rebuild_embedded(self, new_gen: int, counts: dict[str, int], report: RebuildReport, tick: ProgressFn) -> None:
        folder = self._folder_of(str(new_gen))
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        client = None
        try:
            # With an index process the new folder is filled there too: a rebuild's upserts hold the GIL.
            process = self.handle.process
            client = process.open(folder) if process is not None else ChromaHandle.open_persistent(folder)
            for name in self.collections:
                if not counts.get(name):
                    continue
                col = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
                self._fill(col.upsert, name, report, tick)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # a half-built folder is of no use
            raise
        finally:
            if client is not None:
                ChromaHandle.stop_client(client)

    def _rebuild_server(self, new_gen: int, counts: dict[str, int], report: RebuildReport, tick: ProgressFn) -> None:
        for name in self.collections:
            chroma = self._default_name(name, new_gen)
            with self._use(write=True) as client:
                try:
                    client.delete_collection(chroma)
                except Exception:  # noqa: BLE001 - not there: the usual case
                    pass
                col = None
                if counts.get(name):
                    col = client.get_or_create_collection(
                        chroma, metadata={"hnsw:space": "cosine"}, embedding_function=None
                    )
            if col is None:
                continue

            # The catalog is read between holds of the index lock, never under it: a search may hold the
            # catalog while it waits for this lock, so the other order could deadlock.
            def upsert(col: Any = col, **batch: Any) -> None:
                with self._use(write=True):
                    col.upsert(**batch)

            self._fill(upsert, name, report, tick)

    def _drop_server_collections(self, names: dict[str, str]) -> None:
        with self._use(write=True) as client:
            for old in names.values():
                try:
                    client.delete_collection(old)
                except Exception:  # noqa: BLE001 - already gone
                    pass

    # ------------------------------------------------------------- closing

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


@contextmanager
def _progress(progress: bool | ProgressFn, total: int) -> Iterator[ProgressFn]:
    """A ``tick(collection, done, total)`` that drives a rich bar on a terminal, a callback, or nothing."""
    if callable(progress):
        yield progress
        return
    if not progress or not sys.stderr.isatty() or total == 0:
        yield lambda _name, _done, _total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("rebuilding the index: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("vectors", total=total)
        yield lambda name, done, _total: bar.update(task, advance=done, description=name)
