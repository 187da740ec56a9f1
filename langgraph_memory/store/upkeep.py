"""The store's upkeep: the index (wait, rebuild, re-embed), access counts and the TTL sweeper.

`UpkeepStore` is the half of `langgraph_memory.store.ChromaStore` that keeps a memory in shape between
reads and writes; the store's constructor sets the collaborators declared on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import items as _items
from langgraph_memory.config import Settings
from langgraph_memory.errors import (
    ConfigError,
    ReadOnlyError,
    StorageError,
)
from langgraph_memory.index.chroma import ChromaIndex, RebuildReport
from langgraph_memory.store._embedding_calls import embedded
from langgraph_memory.store._reindex import reembed
from langgraph_memory.store._writer import Writer
from langgraph_memory.store.searching import SearchingStore
from langgraph_memory.store.ttl import Sweeper, SweeperFuture

__all__ = ["UpkeepStore"]

logger = logging.getLogger(__name__)

# How often wait_for_index asks again for changes a pass could not apply (the index's first backoff).
_INDEX_RETRY_SECONDS = 0.25


class UpkeepStore(SearchingStore):
    """Index, access-count and TTL upkeep; `ChromaStore` is the one subclass."""

    settings: Settings
    vector_index: ChromaIndex
    _writer: Writer
    _ttl_sweeper: Sweeper | None

    def rebuild_index(self, *, progress: bool | Callable[[str, int, int], None] = True) -> RebuildReport:
        """Rebuild the Chroma index from the catalog's vectors (no re-embedding), and switch to it.

        Shows a progress bar on a terminal (or calls ``progress(collection,
        done, total)``); the old index serves searches until the new one is
        complete.

        Examples:
            >>> store.rebuild_index().total
            6
        """
        self._check_open()
        self._check_writable("rebuild the index")
        return self.vector_index.rebuild(progress=progress)

    def reindex(self, *, progress: bool | Callable[[int, int], None] = True) -> int:
        """Re-embed every stored vector with this store's model, then rebuild the index; return how many.

        For a model that changed under the same name, or to finish a
        re-embedding cut short. To move to another model, open the store
        with it and ``reindex=True``.

        Examples:
            >>> store.reindex(progress=False)
            6
        """
        self._check_open()
        self._check_writable("re-embed")
        return self._reembed(everything=True, progress=progress)

    def _reembed(self, *, everything: bool, progress: bool | Callable[[int, int], None]) -> int:
        if self.cached_embeddings is None or self._dims is None:
            raise ConfigError("re-embedding needs a store built with index= (an embedding model)")
        emb = self.cached_embeddings
        n = reembed(
            self.catalog,
            lambda texts: embedded(lambda: emb.inner.embed_documents(texts), f"{len(texts)} texts"),
            model=emb.model_id,
            dims=self._dims,
            everything=everything,
            progress=progress,
        )
        self._writer._model_id = None
        self.vector_index.rebuild(reason=f"re-embedded {n} vectors with {emb.model_id}", progress=bool(progress))
        return n

    def _check_writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"cannot {what}: this store was opened read-only ({self.settings.data_dir}). "
                "Open it without read_only=True (--read-only) to write.",
                self.settings.data_dir,
            )

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait until the Chroma index holds every write this store committed; False if ``timeout`` passed first.

        The index catches up in a background thread once writes pause
        (searches meanwhile score what it lacks exactly, so none is missed).
        While the Chroma server is away the changes stay queued: this keeps
        trying until they are applied or the timeout passes. A collection whose
        index failed (searched exactly until `rebuild_index()`) is not waited
        for; a read-only store has no index to wait for and returns True at once.

            store.put(("docs",), "a", {"text": "hello"})
            store.wait_for_index(timeout=10)
        """
        catch_up = self._writer.catch_up
        if catch_up is None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not catch_up.wait(left):
                return False
            behind = self.vector_index.behind()
            if not behind:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            # The pass could not apply them (the server is away): ask again; the index itself spaces out its
            # attempts on a server that does not answer, so this only sets how soon a return is noticed.
            time.sleep(_INDEX_RETRY_SECONDS if left is None else min(_INDEX_RETRY_SECONDS, left))
            catch_up.request(behind)

    def flush_access(self) -> int:
        """Apply pending reads (access counts, last access, TTL refresh) to the catalog; return items touched."""
        pending = self._access.take()
        if not pending:
            return 0
        rows = [(acc.at, acc.count, acc.expires_at, item_id) for item_id, acc in pending.items()]
        try:
            # Bookkeeping with no place in the change log: on a server it need not wait for the write lock.
            with self.catalog.write(ordered=False) as conn:
                return _items.apply_access(conn, rows)
        except BaseException:
            self._access.give_back(pending)
            raise

    def _flush_access_best_effort(self) -> None:
        # Access counts are bookkeeping the user never asked to be durable: a full disk or a read-only
        # directory at close drops them with a warning instead of failing a session that only read.
        try:
            self.flush_access()
        except StorageError as exc:
            self._access.take()
            logger.warning("access counts of this session were not saved (%s); the stored items are unaffected", exc)

    def sweep_ttl(self) -> int:
        """Delete expired items now; return how many were deleted."""
        self._check_open()
        self._check_writable("sweep expired items")
        self.flush_access()
        now = time.time()
        with self.catalog.write() as conn:
            doomed = _item_rows.expired(conn, now)
            by_coll: dict[str, list[StoredItem]] = {}
            for it in doomed:
                by_coll.setdefault(self.collections.for_namespace(it.namespace).name, []).append(it)
            for name, group in by_coll.items():
                _items.delete_items(conn, group, name, change="ttl", now=now)
        if doomed:
            self._writer.sync(set(by_coll))
            logger.info("swept %d expired items", len(doomed))
        return len(doomed)

    def count_expired(self) -> int:
        """How many items `sweep_ttl()` would delete now (a dry run; nothing is flushed or deleted)."""
        now = time.time()
        with self.catalog.read() as conn:
            return sum(
                1
                for it in _item_rows.expired(conn, now)
                if (refreshed := self._access.expiry(it.id or -1)) is None or refreshed < now
            )

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> SweeperFuture:
        """Sweep expired items every ``sweep_interval_minutes`` (default from ``ttl``, else 5).

        Returns a ``concurrent.futures.Future``; cancelling it stops the sweeper.
        In async code ``await store.start_ttl_sweeper()`` returns the same
        handle at once, the sweeper running (as LangGraph's async stores do).
        """
        if not self.ttl_config or self.read_only:  # a read-only store deletes nothing
            done = SweeperFuture()
            done.set_result(None)
            return done
        minutes = float(sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5)
        if self._ttl_sweeper is None or not self._ttl_sweeper.running:
            self._ttl_sweeper = Sweeper("lgm-ttl-sweeper", self.sweep_ttl, minutes * 60.0)
        return self._ttl_sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True if it stopped (or was not running)."""
        if self._ttl_sweeper is None:
            return True
        return self._ttl_sweeper.stop(timeout)
