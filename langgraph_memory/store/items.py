"""Raw item access for the archive and the typed API: not part of LangGraph's ``BaseStore``.

``store.items`` reads whole items (timestamps, access data, vectors and the
texts they embed), deletes items only if unchanged since they were read, and
restores archived items exactly as they were. Every write goes through the
catalog's transactions and then the Chroma index, as puts do.

    >>> store.items.count("lessons_learned")
    1
    >>> for item in store.items.iter_items("lessons_learned"):
    ...     print(item.key == lesson.id, item.last_activity > 0)
    True True
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from langgraph.store.base import PutOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.catalog.status import ItemStatus, Status
from langgraph_memory.errors import NotFoundError
from langgraph_memory.registry import CollectionRegistry
from langgraph_memory.store._writer import LocksItself, Writer, check_vectors
from langgraph_memory.store.records import PAGE_SIZE, record_text

__all__ = ["StoreItems", "Before", "ItemKey", "LocksItself"]

#: Runs inside a put's catalog transaction; may return replacement values by put position.
Before = Callable[[Connection], Mapping[int, dict[str, Any]] | None]
#: An item by namespace and key.
ItemKey = tuple[tuple[str, ...], str]


class StoreItems:
    """The item API over one catalog, used by the archive and the typed research API.

    Args:
        catalog: the store's catalog.
        writer: the store's write path (for the Chroma update after a write, and the model id).
        flush_access: applies the store's pending reads (deletes check
            ``last_accessed_at``, so pending reads must land first).
    """

    def __init__(
        self,
        catalog: Catalog,
        writer: Writer,
        flush_access: Callable[[], int],
        put_many: Callable[[list[PutOp], Before | None], list[int | None]],
        collections: CollectionRegistry,
    ) -> None:
        self.catalog = catalog
        self.collections = collections
        self.writer = writer
        self.flush_access = flush_access
        self._put_many = put_many

    def stored_model(self) -> tuple[str | None, int | None]:
        """``(model id, dims)`` that made the stored vectors (None before the first vector)."""
        return self.writer.stored_model()

    def check_vectors(self, vectors: Sequence[Sequence[float]], what: str) -> np.ndarray:
        """``vectors`` as a float32 matrix of this store's dims, or ``EmbeddingModelError`` saying what is wrong."""
        return check_vectors(vectors, self.writer.dims, what)

    def _collection_of(self, namespace: tuple[str, ...]) -> str:
        return self.collections.for_namespace(namespace).name

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], *, before: Before | None = None) -> None:
        """``store.put``, with ``before(conn)`` run inside the same catalog transaction.

        The typed API registers an item's lineage and version this way, so
        the item, its lineage and its version commit together or not at all.
        ``before`` may return ``{0: new_value}`` to replace the value (not its
        embedded text) once it knows, say, the version number.
        """
        self._put_many([PutOp(namespace, key, value)], before)

    def delete(
        self, namespace: tuple[str, ...], key: str, *, before: Callable[[Connection], None] | None = None
    ) -> None:
        """Delete an item for good with its retired/superseded status; ``before(conn)`` runs in the same transaction."""
        uid = _item_rows.item_uid(namespace, key)

        def forget(conn: Connection) -> None:
            _status.clear(conn, [uid], record=False)
            if before is not None:
                before(conn)

        self._put_many([PutOp(namespace, key, None)], forget)

    # ------------------------------------------------------------ status

    def set_status(
        self,
        keys: Sequence[ItemKey],
        status: Status,
        *,
        reason: str | None = None,
        superseded_by: ItemKey | None = None,
        before: Callable[[Connection], None] | None = None,
    ) -> list[ItemStatus]:
        """Retire or supersede live items in one transaction (with ``before(conn)`` run inside it).

        Searches leave them out from the commit on, in every process.

        Raises:
            NotFoundError: a key (or ``superseded_by``) is not a live item; nothing changes.
        """
        with self.catalog.write() as conn:
            wanted = [*keys, *([superseded_by] if superseded_by else [])]
            missing = [k for k in wanted if k not in _status.targets(conn, wanted, self._collection_of)]
            if missing:
                ns, key = missing[0]
                raise NotFoundError(
                    f"no live item {key!r} in namespace {ns!r}; it was never stored, deleted, or archived "
                    "(restore it from the archive first)"
                )
            if before is not None:
                before(conn)
            return self.set_status_in(conn, keys, status, reason=reason, superseded_by=superseded_by)

    def retire_where(
        self, keys: Sequence[ItemKey], still: Callable[[StoredItem], bool], *, reason: str
    ) -> list[ItemStatus]:
        """Retire the live items of ``keys`` for which ``still(item)`` holds, judged on the item as it is
        inside the retiring transaction (so a read or write from any process in between is seen)."""
        self.flush_access()
        with self.catalog.write() as conn:
            current = _item_rows.get_items(conn, keys)
            chosen = [k for k, it in current.items() if still(it)]
            return self.set_status_in(conn, chosen, "retired", reason=reason)

    def set_status_in(
        self,
        conn: Connection,
        keys: Sequence[ItemKey],
        status: Status,
        *,
        reason: str | None = None,
        superseded_by: ItemKey | None = None,
    ) -> list[ItemStatus]:
        """`set_status()` inside the caller's write transaction; keys not live are skipped."""
        found = _status.targets(conn, keys, self._collection_of)
        return _status.mark(conn, found.values(), status, reason=reason, now=time.time(), superseded_by=superseded_by)

    def clear_status(self, keys: Sequence[ItemKey]) -> int:
        """Make items plain again (searches find them); return how many had a status."""
        with self.catalog.write() as conn:
            return _status.clear(conn, [_item_rows.item_uid(ns, key) for ns, key in keys])

    def prune_history(self, *, keep: int | None = None, older_than: float | None = None, dry_run: bool = False) -> int:
        """Drop past versions beyond the ``keep`` newest of each item (the current one counted) and those ended
        before ``older_than`` (epoch seconds); return how many went (``dry_run``: would go)."""
        if keep is None and older_than is None:
            return 0
        if dry_run:
            with self.catalog.read() as conn:
                return _history.prune(conn, keep=keep, older_than=older_than, dry_run=True)
        with self.catalog.write() as conn:
            return _history.prune(conn, keep=keep, older_than=older_than)

    def statuses(self, keys: Sequence[ItemKey]) -> dict[ItemKey, ItemStatus]:
        """The status of each key that has one: of the live item, or of its archived copy when not live."""
        uids = {_item_rows.item_uid(ns, key): (tuple(ns), key) for ns, key in keys}
        with self.catalog.read() as conn:
            rows = _status.get(conn, list(uids))
            live = _item_rows.get_items(conn, [uids[u] for u in rows])
        out: dict[ItemKey, ItemStatus] = {}
        for uid, st in rows.items():
            it = live.get(uids[uid])
            if it is None or it.created_at == st.item_created_at:
                out[uids[uid]] = st
        return out

    def collection_statuses(self, collection: str) -> dict[str, ItemStatus]:
        """Statuses of one collection's live items, by uid (the archive job and the decay cleanup read them)."""
        with self.catalog.read() as conn:
            return _status.of_collection(conn, self.collections.by_name(collection).name)

    def put_many(self, ops: list[PutOp], *, before: Before | None = None) -> list[int | None]:
        """``store.batch`` of puts and deletes, with ``before(conn)`` run inside the same catalog transaction.

        All of ``ops`` commit together or not at all, with whatever
        ``before`` writes (ingest marks a file complete this way, in the
        transaction of its last chunks). Returns each put's item id (None
        for a delete).

        Examples:
            >>> len(store.items.put_many([PutOp(("documents",), "c1", {"content": "..."}, index=["content"])]))
            1
        """
        return self._put_many(list(ops), before)

    def _fill_vectors(self, items: list[StoredItem]) -> None:
        ids = [it.id for it in items if it.id is not None and it.n_vectors]
        if not ids:
            return
        with self.catalog.read() as conn:
            vectors = _item_rows.load_vectors(conn, ids)
        for it in items:
            rows = vectors.get(it.id or -1, [])
            it.vectors = [np.frombuffer(vec, dtype=np.float32).tolist() for _i, _p, vec in rows]
            it.paths = [path for _i, path, _v in rows]
            it.texts = [record_text(it.value, path) for path in it.paths]

    def iter_items(
        self, collection: str, *, with_vectors: bool = False, page_size: int = PAGE_SIZE
    ) -> Iterator[StoredItem]:
        """Every item of a collection, a page at a time (bounded memory; no lock held across a yield)."""
        name = self.collections.by_name(collection).name
        after = 0
        while True:
            with self.catalog.read() as conn:
                page = _item_rows.iter_collection(conn, name, after_id=after, limit=page_size)
            if not page:
                return
            if with_vectors:
                self._fill_vectors(page)
            yield from page
            after = page[-1].id or after
            if len(page) < page_size:
                return

    def get_items(self, collection: str, uids: list[str], *, with_vectors: bool = False) -> list[StoredItem]:
        """Items of a collection by uid (`item_uid()`); missing ones are skipped."""
        with self.catalog.read() as conn:
            found = _item_rows.get_by_uids(conn, self.collections.by_name(collection).name, uids)
        if with_vectors:
            self._fill_vectors(found)
        return found

    def get(self, namespace: tuple[str, ...], key: str) -> StoredItem | None:
        """One item with its access data, or None."""
        with self.catalog.read() as conn:
            return _item_rows.get_items(conn, [(namespace, key)]).get((namespace, key))

    def count(self, collection: str) -> int:
        """How many items a collection holds."""
        with self.catalog.read() as conn:
            return _item_rows.count_items(conn, self.collections.by_name(collection).name)

    def delete_items(self, collection: str, items: list[StoredItem]) -> int:
        """Delete items read from this store (all their vectors); return how many were deleted."""
        name = self.collections.by_name(collection).name
        with self.catalog.write() as conn:
            current = _item_rows.get_by_uids(conn, name, [it.uid for it in items])
            n = _items.delete_items(conn, current, name, change="delete")
        self.writer.sync({name})
        return n

    def delete_unchanged(
        self, collection: str, expected: dict[str, tuple[float, float]]
    ) -> tuple[list[str], list[str]]:
        """Delete items only if still as expected, in one transaction.

        ``expected`` maps an item's uid to the ``(updated_at, last_accessed_at)``
        it had when it was archived. Items changed since (put again, or read
        and flushed) are left live. Checking and deleting in one catalog
        transaction means no write from any process can slip in between and
        be deleted unseen. Returns ``(deleted uids, changed uids)``; uids no
        longer live are in neither.
        """
        if not expected:
            return [], []
        self.flush_access()
        name = self.collections.by_name(collection).name
        with self.catalog.write() as conn:
            live = _item_rows.get_by_uids(conn, name, list(expected))
            doomed = [it for it in live if (it.updated_at, it.last_accessed_at) == tuple(expected[it.uid])]
            changed = [it.uid for it in live if (it.updated_at, it.last_accessed_at) != tuple(expected[it.uid])]
            _items.delete_items(conn, doomed, name, change="archive")
        self.writer.sync({name})
        return [it.uid for it in doomed], changed

    def merge_items(
        self,
        items: list[StoredItem],
        *,
        replace: Callable[[StoredItem, StoredItem], bool],
        before: Callable[[Connection], None] | None = None,
    ) -> tuple[int, int, int]:
        """Write items from elsewhere exactly as they are (timestamps, access data, vectors), in one transaction.

        An item whose ``(namespace, key)`` is already here replaces the one
        here only when ``replace(incoming, current)`` says so. ``before(conn)``
        runs first in the same transaction (a bundle's lineage goes in there).
        Vectors are taken to come from this store's model. Returns ``(added,
        replaced, kept)``: new items, items replaced, and incoming items left
        out because the one here was kept.
        """
        by_spec: dict[str, list[StoredItem]] = defaultdict(list)
        for it in items:
            by_spec[self.collections.for_namespace(it.namespace).name].append(it)
        added = replaced = kept = 0
        with self.catalog.write() as conn:
            if before is not None:
                before(conn)
            model_id = self.writer.model_id(conn) if self.writer.model and any(it.vectors for it in items) else 0
            for name, group in by_spec.items():
                current = _item_rows.get_items(conn, [(it.namespace, it.key) for it in group])
                doomed = [
                    current[(it.namespace, it.key)]
                    for it in group
                    if (it.namespace, it.key) in current and replace(it, current[(it.namespace, it.key)])
                ]
                _items.delete_items(conn, doomed, name, change="put")
                written = _items.restore_items(conn, group, name, self.catalog.names, model_id=model_id)
                replaced += len(doomed)
                added += len(written) - len(doomed)
                kept += len(group) - len(written)
        self.writer.sync(set(by_spec))
        return added, replaced, kept

    def restore_items(self, items: list[StoredItem], statuses: Sequence[ItemStatus] = ()) -> int:
        """Write items back exactly as they were (timestamps, access data, vectors).

        Items that are already live are left alone, so restoring twice is a
        no-op. ``statuses`` (from the archived lines) are written where the
        catalog lost them, so a retired item comes back retired. Returns how
        many items were written.
        """
        by_spec: dict[str, list[StoredItem]] = defaultdict(list)
        for it in items:
            by_spec[self.collections.for_namespace(it.namespace).name].append(it)
        written = 0
        with self.catalog.write() as conn:
            model_id = self.writer.model_id(conn) if self.writer.model and any(it.vectors for it in items) else 0
            for name, group in by_spec.items():
                written += len(_items.restore_items(conn, group, name, self.catalog.names, model_id=model_id))
            _status.ensure(conn, statuses)
        self.writer.sync(set(by_spec))
        return written
