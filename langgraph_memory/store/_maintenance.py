"""Upkeep and raw access: applying noted reads, TTL sweeps, and the item API for archive and lineage."""

from __future__ import annotations

import concurrent.futures
import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from langgraph_memory.collections import COLLECTIONS, GENERAL, collection_by_name, collection_for
from langgraph_memory.store.records import (
    K_EXPIRES,
    K_ITEM,
    K_EXTRA,
    PAGE_SIZE as _PAGE,
    StoredItem,
    decode_metadata,
    dumps_value,
    encode_metadata,
    extra_id,
    now as _now,
    record_path,
    record_text,
    text_index,
    with_access,
)
from langgraph_memory.store.ttl import Sweeper

__all__ = ["MaintenanceMixin"]

logger = logging.getLogger(__name__)


class MaintenanceMixin:
    """Access flushing, TTL sweeping and the raw item API of :class:`~langgraph_memory.store.ChromaStore`."""

    ttl_config: Any
    _access: Any
    _access_table: Any
    _ttl_sweeper: Sweeper | None

    # ------------------------------------------------------------- reads' log

    def flush_access(self) -> int:
        """Apply pending reads (access counts, last access, TTL refresh); return items touched."""
        pending = self._access.take()
        if not pending:
            return 0
        if self._access_table is not None:
            try:
                return self._access_table.apply(pending)
            except BaseException:
                self._access.give_back(pending)
                raise
        return self._flush_to_chroma(pending)

    def _flush_to_chroma(self, pending: Any) -> int:
        """A server's items carry their access data in Chroma, shared by every machine."""
        touched = 0
        try:
            with self._using(write=True):
                for name, bucket in pending.items():
                    col = self._collection(collection_by_name(name), create=False)
                    if col is None:
                        continue
                    got = col.get(ids=list(bucket), include=["metadatas"])
                    ids: list[str] = []
                    metas: list[dict[str, Any]] = []
                    for rid, meta in zip(got["ids"], got["metadatas"] or []):
                        item = decode_metadata(meta)
                        if item is None:
                            continue
                        acc = bucket[rid]
                        item.last_accessed_at = max(item.last_accessed_at, acc.at)
                        item.access_count += acc.count
                        if item.ttl_minutes and acc.expires_at is not None:
                            item.expires_at = max(item.expires_at or 0.0, acc.expires_at)
                        # Access data lives on the primary record only: sweeps and
                        # query hits on extra vectors always read the primary.
                        update = {K_ITEM: with_access(meta, item.last_accessed_at, item.access_count)}
                        if item.expires_at is not None:
                            update[K_EXPIRES] = item.expires_at
                        ids.append(rid)
                        metas.append(update)
                        touched += 1
                    if ids:
                        col.update(ids=ids, metadatas=metas)
        except BaseException:
            self._access.give_back(pending)
            raise
        return touched

    # --------------------------------------------------------------------- TTL

    def sweep_ttl(self) -> int:
        """Delete expired items now; return how many were deleted."""
        self.flush_access()
        now = _now()
        deleted = 0
        with self._using(write=True):
            for spec in [*COLLECTIONS.values(), GENERAL]:
                col = self._collection(spec, create=False)
                if col is None:
                    continue
                expired = self._expired_locked(col, spec.name, now)
                self._delete_locked(col, expired)
                deleted += len(expired)
        if deleted:
            logger.info("swept %d expired items", deleted)
        return deleted

    def count_expired(self) -> int:
        """How many items :meth:`sweep_ttl` would delete now; flushes and deletes nothing (a dry run)."""
        now = _now()
        n = 0
        with self._using():
            for spec in [*COLLECTIONS.values(), GENERAL]:
                col = self._collection(spec, create=False)
                if col is not None:
                    n += len(self._expired_locked(col, spec.name, now))
        return n

    def _expired_locked(self, col: Any, name: str, now: float) -> list[StoredItem]:
        """The items of ``col`` (collection ``name``) past their TTL at ``now``; call with the lock held."""
        got = col.get(where={"$and": [{K_EXPIRES: {"$lt": now}}, {K_EXTRA: 0}]}, include=["metadatas"])
        candidates = [it for it in map(decode_metadata, got["metadatas"] or []) if it is not None]
        if self._access_table is not None:  # a read may have refreshed the TTL since the last write
            self._access_table.merge_into(name, candidates)
        return [it for it in candidates if it.expires_at is not None and it.expires_at < now]

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> Any:
        """Sweep expired items every ``sweep_interval_minutes`` (default from ``ttl``, else 5).

        Returns a ``concurrent.futures.Future``; cancelling it stops the sweeper.
        """
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
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

    # ----------------------------------------------------------------- raw API
    # Used by the archive and lineage modules; not part of BaseStore.

    def iter_items(
        self, collection: str, *, with_vectors: bool = False, page_size: int = _PAGE
    ) -> Iterator[StoredItem]:
        """Every item of a collection, a page at a time (bounded memory)."""
        spec = collection_by_name(collection)
        offset = 0
        include = ["metadatas", "embeddings"] if with_vectors else ["metadatas"]
        while True:
            # The lock is held per page, never across a yield.
            with self._using():
                col = self._collection(spec, create=False)
                if col is None:
                    return
                got = col.get(where={K_EXTRA: 0}, limit=page_size, offset=offset, include=include)
                metas = got["metadatas"] or []
                batch: list[StoredItem] = []
                for idx, meta in enumerate(metas):
                    item = decode_metadata(meta)
                    if item is None:
                        continue
                    if with_vectors:
                        self._fill_vectors(col, item, got, idx)
                    batch.append(item)
                if self._access_table is not None:
                    self._access_table.merge_into(spec.name, batch)
            yield from batch
            if len(metas) < page_size:
                return
            offset += page_size

    def _fill_vectors(self, col: Any, item: StoredItem, got: dict[str, Any], idx: int) -> None:
        embs = got.get("embeddings")
        metas = got["metadatas"]
        if not item.indexed:
            return
        item.vectors = [[float(x) for x in embs[idx]]]
        item.texts = [record_text(metas[idx])]  # item.paths: set by decode_metadata from the same record
        if item.n_vectors > 1:
            ex = col.get(
                ids=[extra_id(item.uid, i) for i in range(1, item.n_vectors)],
                include=["metadatas", "embeddings"],
            )
            order = {rid: k for k, rid in enumerate(ex["ids"])}
            for i in range(1, item.n_vectors):
                k = order.get(extra_id(item.uid, i))
                if k is None:
                    continue
                item.vectors.append([float(x) for x in ex["embeddings"][k]])
                item.texts.append(record_text(ex["metadatas"][k]))
                item.paths.append(record_path(ex["metadatas"][k]))

    def get_items(self, collection: str, uids: list[str], *, with_vectors: bool = False) -> list[StoredItem]:
        """Items of a collection by primary id (missing ids are skipped)."""
        with self._using():
            col = self._collection(collection_by_name(collection), create=False)
            if col is None or not uids:
                return []
            include = ["metadatas", "embeddings"] if with_vectors else ["metadatas"]
            got = col.get(ids=list(uids), include=include)
            out = []
            for idx, meta in enumerate(got["metadatas"] or []):
                item = decode_metadata(meta)
                if item is None or meta.get(K_EXTRA):
                    continue
                if with_vectors:
                    self._fill_vectors(col, item, got, idx)
                out.append(item)
            if self._access_table is not None:
                self._access_table.merge_into(collection_by_name(collection).name, out)
            return out

    def delete_items(self, collection: str, items: list[StoredItem]) -> int:
        """Delete items (all their records) and unregister emptied namespaces."""
        if not items:
            return 0
        with self._using(write=True):
            col = self._collection(collection_by_name(collection), create=False)
            if col is None:
                return 0
            self._delete_locked(col, items)
        return len(items)

    def delete_unchanged(
        self, collection: str, expected: dict[str, tuple[float, float]]
    ) -> tuple[list[str], list[str]]:
        """Delete items only if still as expected, in one locked step.

        ``expected`` maps an item's uid to the ``(updated_at, last_accessed_at)``
        it had when it was archived. Items changed since (put again, or read
        and flushed) are left live. Checking and deleting under one hold of
        the lock means no write from any process can slip in between and be
        deleted unseen. Returns ``(deleted uids, changed uids)``; uids no
        longer live are in neither.
        """
        if not expected:
            return [], []
        self.flush_access()
        with self._using(write=True):
            col = self._collection(collection_by_name(collection), create=False)
            if col is None:
                return [], []
            got = col.get(ids=list(expected), include=["metadatas"])
            live = [it for it in map(decode_metadata, got["metadatas"] or []) if it is not None]
            if self._access_table is not None:
                self._access_table.merge_into(col.name, live)
            doomed: list[StoredItem] = []
            changed: list[str] = []
            for it in live:
                if (it.updated_at, it.last_accessed_at) == tuple(expected[it.uid]):
                    doomed.append(it)
                else:
                    changed.append(it.uid)
            self._delete_locked(col, doomed)
        return [it.uid for it in doomed], changed

    def _delete_locked(self, col: Any, items: list[StoredItem]) -> None:
        if not items:
            return
        uids = [it.uid for it in items]
        ids: list[str] = []
        for uid, it in zip(uids, items):
            ids.append(uid)
            ids.extend(extra_id(uid, i) for i in range(1, it.n_vectors))
        col.delete(ids=ids)
        if self._access_table is not None:
            self._access_table.forget(col.name, uids)
        namespaces = {it.namespace for it in items}
        self._registry_().remove([ns for ns in namespaces if not self._namespace_has_items(col, ns)])

    def restore_items(self, items: list[StoredItem]) -> int:
        """Write items back exactly as they were (timestamps, access data, vectors).

        Items that are already live are left alone, so restoring twice is a no-op.
        Returns how many were written.
        """
        by_spec: dict[str, list[StoredItem]] = defaultdict(list)
        for it in items:
            by_spec[collection_for(it.namespace).name].append(it)
        written = 0
        with self._using(write=True):
            added: dict[tuple[str, ...], str] = {}
            for name, group in by_spec.items():
                spec = collection_by_name(name)
                col = self._collection(spec)
                live = set(col.get(ids=[it.uid for it in group], include=[])["ids"])
                ids, embs, metas = [], [], []
                for it in group:
                    uid = it.uid
                    if uid in live:
                        continue
                    vecs = it.vectors if it.indexed and it.vectors else [self._placeholder(spec)]
                    it.n_vectors = max(1, len(vecs))
                    value_json = dumps_value(it.value)  # once per item, not once per vector record
                    for i, vec in enumerate(vecs):
                        ids.append(uid if i == 0 else extra_id(uid, i))
                        embs.append(vec)
                        path = it.paths[i] if i < len(it.paths) else ""
                        text = it.texts[i] if i < len(it.texts) else None
                        index = text_index(it.value, path, text)
                        metas.append(
                            encode_metadata(it, value_json=value_json, extra=i, path=path, text_index=index)
                        )
                    added[it.namespace] = name
                    written += 1
                if ids:
                    col.add(ids=ids, embeddings=embs, metadatas=metas)
            self._registry_().add(added)
        return written

    def count(self, collection: str) -> int:
        """How many items (not vector records) a collection holds."""
        with self._using():
            col = self._collection(collection_by_name(collection), create=False)
            if col is None:
                return 0
            return len(col.get(where={K_EXTRA: 0}, include=[])["ids"])
