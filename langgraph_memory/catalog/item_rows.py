"""An item's row in the catalog: its columns, its identity (namespace and key), and the reads that return it.

`langgraph_memory.catalog.items` writes these rows; everything here only reads. Every function takes an open
connection, so a caller composes several of them in one snapshot.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.read() as conn:
    ...     count_items(conn), item_uid(("notes",), "k1") == item_uid(["notes"], "k1")
    (0, True)
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_memory.catalog.connection import both

__all__ = [
    "NS_SEP",
    "VECTOR_RUN_BITS",
    "ITEM_COLUMNS",
    "ITEM_COLUMNS_BY_ID",
    "join_ns",
    "split_ns",
    "item_uid",
    "chunked",
    "rows_in",
    "StoredItem",
    "vector_run",
    "item_from_row",
    "get_items",
    "get_by_ids",
    "get_by_uids",
    "iter_collection",
    "load_vectors",
    "expired",
    "count_items",
    "namespace_counts",
    "items_by_key",
    "namespaces_with_items",
    "namespace_names",
]

NS_SEP = "\x1f"
_KEY_SEP = "\x1e"
# SQLite's default limit on host parameters is 32766; stay well under it.
_CHUNK = 900
#: On SQLite a namespace's vectors take row ids ``ns_id << VECTOR_RUN_BITS | k`` (see `vector_run()`).
VECTOR_RUN_BITS = 32
_LOWEST_RUN = 1 << VECTOR_RUN_BITS  # namespace ids start at 1

ITEM_COLUMNS = (
    "i.id, n.ns, i.key, i.value, i.created_at, i.updated_at, i.last_accessed_at, i.access_count, "
    "i.expires_at, i.ttl_minutes, i.n_vectors, i.valid_from"
)
_FROM = "FROM items i JOIN namespaces n ON n.id = i.ns_id"
#: `ITEM_COLUMNS` over ``FROM items i`` alone, each namespace looked up by its key: for a list of item ids.
#: Joined instead, PostgreSQL hashed every namespace to read ten items (1.3 against 0.7 ms at 1,100 namespaces).
ITEM_COLUMNS_BY_ID = ITEM_COLUMNS.replace("n.ns", "(SELECT ns FROM namespaces n WHERE n.id = i.ns_id)")


def join_ns(namespace: Sequence[str]) -> str:
    """A namespace as one string (labels joined by ``\\x1f``; labels never contain it)."""
    return NS_SEP.join(namespace)


def split_ns(joined: str) -> tuple[str, ...]:
    return tuple(joined.split(NS_SEP)) if joined else ()


def item_uid(namespace: Sequence[str], key: str) -> str:
    """A stable id of ``(namespace, key)``: the archive's name for an item across deletes and restores."""
    raw = join_ns(namespace) + _KEY_SEP + key
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=16).hexdigest()


def chunked(seq: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def rows_in(conn: sqlite3.Connection, sql: str, ids: Iterable[Any]) -> Iterator[Any]:
    """The rows of ``sql``, whose ``{marks}`` is an ``IN`` list, over ``ids`` (each once, in chunks under SQLite's limit).

    ``sql`` reads alike on both backends (`connection.both`).
    """
    for chunk in chunked(list(dict.fromkeys(ids))):
        yield from conn.execute(both(conn, sql.format(marks=",".join("?" * len(chunk)))), tuple(chunk))


@dataclass
class StoredItem:
    """Everything the catalog knows about one item (the store, the archive and lineage read these)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    last_accessed_at: float
    access_count: int = 0
    expires_at: float | None = None
    ttl_minutes: float | None = None
    indexed: bool = True
    n_vectors: int = 1
    #: the catalog's row id (None for an item not read from the catalog, e.g. from an archive).
    id: int | None = None
    # Filled in when vectors are read (archive) or known (put).
    vectors: list[list[float]] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    #: since when this version is current (None: written before the catalog kept history; see `valid_since`).
    valid_from: float | None = None

    @property
    def valid_since(self) -> float:
        """When this version became current: ``valid_from``, else (an item not changed since history began) ``updated_at``."""
        return self.updated_at if self.valid_from is None else self.valid_from

    @property
    def uid(self) -> str:
        return item_uid(self.namespace, self.key)

    @property
    def last_activity(self) -> float:
        return max(self.updated_at, self.last_accessed_at)


def vector_run(ns_id: int) -> tuple[int, int]:
    """The first and last vector row id of namespace ``ns_id``'s run.

    A SQLite table's rows sit in its B-tree in row-id order, so ids allotted
    per namespace keep a namespace's vectors on neighbouring pages: a search
    of one namespace reads them as one range instead of a page per vector
    spread over the whole file (at 1,000,000 items: 0.12-0.18 ms against
    0.84-0.88 ms for 100 vectors). Rows written on PostgreSQL (and copied
    from there) have ids below every run, so a row in a run always belongs
    to the run's namespace; a reader that counts fewer rows in the runs than
    the namespaces hold reads them the other way
    (`langgraph_memory.catalog.scope.scope_vectors`).
    """
    first = int(ns_id) << VECTOR_RUN_BITS
    return first, first + (1 << VECTOR_RUN_BITS) - 1


def item_from_row(row: Sequence[Any]) -> StoredItem:
    """A [`StoredItem`][langgraph_memory.store.StoredItem] from a row of `ITEM_COLUMNS`."""
    n_vectors = int(row[10])
    return StoredItem(
        namespace=split_ns(row[1]),
        key=row[2],
        value=json.loads(row[3]),
        created_at=row[4],
        updated_at=row[5],
        last_accessed_at=row[6],
        access_count=row[7],
        expires_at=row[8],
        ttl_minutes=row[9],
        indexed=n_vectors > 0,
        n_vectors=n_vectors,
        id=row[0],
        valid_from=row[11] if len(row) > 11 else None,
    )


# ----------------------------------------------------------------------- reads


def get_items(
    conn: sqlite3.Connection, keys: Sequence[tuple[tuple[str, ...], str]]
) -> dict[tuple[tuple[str, ...], str], StoredItem]:
    """Items by ``(namespace, key)``; missing ones are left out."""
    by_ns: dict[str, list[str]] = {}
    for ns, key in keys:
        by_ns.setdefault(join_ns(ns), []).append(key)
    out: dict[tuple[tuple[str, ...], str], StoredItem] = {}
    for joined, ks in by_ns.items():
        for chunk in chunked(list(dict.fromkeys(ks))):
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                both(conn, f"SELECT {ITEM_COLUMNS} {_FROM} WHERE n.ns = ? AND i.key IN ({marks})"), (joined, *chunk)
            ):
                it = item_from_row(row)
                out[(it.namespace, it.key)] = it
    return out


def get_by_ids(conn: sqlite3.Connection, item_ids: Sequence[int]) -> dict[int, StoredItem]:
    """Items by catalog row id; missing ones are left out."""
    out: dict[int, StoredItem] = {}
    for chunk in chunked(list(dict.fromkeys(item_ids))):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            both(conn, f"SELECT {ITEM_COLUMNS_BY_ID} FROM items i WHERE i.id IN ({marks})"), tuple(chunk)
        ):
            out[int(row[0])] = item_from_row(row)
    return out


def get_by_uids(conn: sqlite3.Connection, collection: str, uids: Sequence[str]) -> list[StoredItem]:
    """Items of ``collection`` by `item_uid()`; missing ones are left out."""
    out: list[StoredItem] = []
    for chunk in chunked(list(dict.fromkeys(uids))):
        marks = ",".join("?" * len(chunk))
        out.extend(
            item_from_row(row)
            for row in conn.execute(
                both(conn, f"SELECT {ITEM_COLUMNS} {_FROM} WHERE i.uid IN ({marks}) AND n.collection = ?"),
                (*chunk, collection),
            )
        )
    return out


def iter_collection(
    conn: sqlite3.Connection, collection: str, *, after_id: int = 0, limit: int = 1000
) -> list[StoredItem]:
    """Up to ``limit`` items of ``collection`` with row id above ``after_id``, in id order (a page)."""
    return [
        item_from_row(row)
        for row in conn.execute(
            both(conn, f"SELECT {ITEM_COLUMNS} {_FROM} WHERE n.collection = ? AND i.id > ? ORDER BY i.id LIMIT ?"),
            (collection, after_id, limit),
        )
    ]


def load_vectors(conn: sqlite3.Connection, item_ids: Sequence[int]) -> dict[int, list[tuple[int, str, bytes]]]:
    """Each item's vectors as ``(idx, record path, float32 bytes)``, in idx order."""
    out: dict[int, list[tuple[int, str, bytes]]] = {}
    for chunk in chunked(list(item_ids)):
        marks = ",".join("?" * len(chunk))
        for item_id, idx, path, vec in conn.execute(
            both(conn, f"SELECT item_id, idx, path, vec FROM vectors WHERE item_id IN ({marks}) ORDER BY item_id, idx"),
            tuple(chunk),
        ):
            out.setdefault(int(item_id), []).append((int(idx), path, vec))
    return out


# Reads only move the times forward (two processes may flush out of order).


def expired(conn: sqlite3.Connection, now: float, *, collection: str | None = None) -> list[StoredItem]:
    """Items whose TTL ran out before ``now``."""
    sql = f"SELECT {ITEM_COLUMNS} {_FROM} WHERE i.expires_at IS NOT NULL AND i.expires_at < ?"
    params: tuple[Any, ...] = (now,)
    if collection is not None:
        sql += " AND n.collection = ?"
        params = (now, collection)
    return [item_from_row(row) for row in conn.execute(both(conn, sql), params)]


def count_items(conn: sqlite3.Connection, collection: str | None = None) -> int:
    """How many items a collection (or the whole catalog) holds."""
    if collection is None:
        row = conn.execute(both(conn, "SELECT coalesce(sum(n_items), 0) FROM collection_counts")).fetchone()
    else:
        row = conn.execute(
            both(conn, "SELECT coalesce(sum(n_items), 0) FROM collection_counts WHERE collection = ?"), (collection,)
        ).fetchone()
    return int(row[0])


def namespace_counts(conn: sqlite3.Connection, prefix: Sequence[str] = ()) -> list[tuple[tuple[str, ...], str, int]]:
    """Namespaces holding items, at or under ``prefix``: ``(namespace, collection, items)``, sorted."""
    if prefix:
        joined = join_ns(prefix)
        rows = conn.execute(
            both(
                conn,
                "SELECT ns, collection, n_items FROM namespaces WHERE n_items > 0 AND (ns = ? OR (ns >= ? AND ns < ?))"
                " ORDER BY ns",
            ),
            (joined, joined + NS_SEP, joined + chr(ord(NS_SEP) + 1)),
        )
    else:
        rows = conn.execute(both(conn, "SELECT ns, collection, n_items FROM namespaces WHERE n_items > 0 ORDER BY ns"))
    return [(split_ns(ns), coll, int(n)) for ns, coll, n in rows]


def items_by_key(conn: sqlite3.Connection, key: str) -> list[StoredItem]:
    """Every item with this key, whatever its namespace (a scan: for tools, not for hot paths)."""
    rows = conn.execute(both(conn, f"SELECT {ITEM_COLUMNS} {_FROM} WHERE i.key = ? ORDER BY n.ns"), (key,))
    return [item_from_row(row) for row in rows]


def namespaces_with_items(conn: sqlite3.Connection, prefix: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Namespaces holding items, at or under ``prefix`` (unsorted)."""
    if prefix:
        joined = join_ns(prefix)
        rows = conn.execute(
            both(conn, "SELECT ns FROM namespaces WHERE n_items > 0 AND (ns = ? OR (ns >= ? AND ns < ?))"),
            (joined, joined + NS_SEP, joined + chr(ord(NS_SEP) + 1)),
        )
    else:
        rows = conn.execute(both(conn, "SELECT ns FROM namespaces WHERE n_items > 0"))
    return [split_ns(r[0]) for r in rows]


def namespace_names(conn: sqlite3.Connection, ns_ids: Sequence[int]) -> dict[int, str]:
    """``{namespace id: namespace joined as stored}`` for these ids."""
    out: dict[int, str] = {}
    for chunk in chunked(ns_ids):
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(both(conn, f"SELECT id, ns FROM namespaces WHERE id IN ({marks})"), tuple(chunk)))
    return out
