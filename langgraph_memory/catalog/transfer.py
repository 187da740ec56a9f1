"""Copying a catalog into another: a data directory's SQLite file into PostgreSQL, or back.

`copy_catalog()` reads the source inside one snapshot (every table as of one
commit) and writes the target in batches, each its own write transaction.
Rows keep their ids, so items, vectors, filter rows and keyword entries still
point at each other; a row the target already holds (same key) is left as it
is, so running the copy again after an interruption finishes it, and running
it over a finished copy changes nothing. The counts of every table are then
compared, and a difference is a [`MigrationError`][langgraph_memory.errors.MigrationError].
A verified copy records the target's counts; once programs write to the
target, copying into it again is refused (it would bring back rows deleted
there).

What is derived is rebuilt rather than copied: the keyword index (FTS5 on
SQLite, a postings table on PostgreSQL) from the copied items, PostgreSQL's
statistics of the tables by one ``ANALYZE`` at the end, and the Chroma
index by the first store that opens the target (its queue and state start
empty, so the index is rebuilt from the catalog's vectors). A target that
already holds a different memory (another catalog id, and rows) is refused.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog.catalog import Catalog
    >>> src = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> dst = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> copy_catalog(src, dst).verified, dst.catalog_id == src.catalog_id
    (True, True)
    >>> src.close(); dst.close()
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_memory.catalog import fields as _fields
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog.connection import POSTGRESQL, Sql, both, dialect_of
from langgraph_memory.errors import MigrationError

__all__ = ["CopyReport", "copy_catalog", "TABLES", "BATCH", "MIGRATED_KEY"]

logger = logging.getLogger(__name__)

#: Rows written per target transaction.
BATCH = 1000
# Parameters in one statement: under SQLite's limit (32,766) and PostgreSQL's (65,535).
_MAX_PARAMS = 30_000

Progress = Callable[[str, int, "int | None"], None]


@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[str, ...]
    #: The key rows are read in order of (an integer id pages by keyset; others by offset in the snapshot).
    order: tuple[str, ...]
    #: Columns updated when the row exists already (counts that follow the items); else the row is kept.
    refresh: tuple[str, ...] = ()

    @property
    def keyset(self) -> bool:
        return self.order == ("id",) and self.name in _INTEGER_IDS


_INTEGER_IDS = {"namespaces", "models", "items", "vectors", "item_history"}

#: The catalog's own tables, in the order they are copied (rows before the rows that name them).
TABLES: tuple[_Table, ...] = (
    _Table(
        "namespaces", ("id", "ns", "collection", "depth", "n_items", "n_vectors"), ("id",), ("n_items", "n_vectors")
    ),
    _Table("collection_counts", ("collection", "n_items", "n_vectors"), ("collection",), ("n_items", "n_vectors")),
    _Table(
        "prefix_counts",
        ("collection", "prefix", "n_items", "n_vectors"),
        ("collection", "prefix"),
        ("n_items", "n_vectors"),
    ),
    _Table("models", ("id", "name", "dims"), ("id",)),
    _Table(
        "items",
        (
            "id",
            "ns_id",
            "key",
            "uid",
            "value",
            "created_at",
            "updated_at",
            "last_accessed_at",
            "access_count",
            "expires_at",
            "ttl_minutes",
            "n_vectors",
            "valid_from",
            "history_id",
        ),
        ("id",),
    ),
    _Table("vectors", ("id", "item_id", "idx", "path", "model_id", "vec"), ("id",)),
    _Table("fields", ("path", "kind", "val", "item_id"), ("item_id", "path", "kind", "val")),
    _Table("lineage_nodes", ("id", "collection", "namespace", "name", "version", "created_at"), ("id",)),
    _Table(
        "lineage_edges",
        ("child_id", "parent_id", "relation", "child_collection", "parent_collection", "created_at"),
        ("child_id", "parent_id", "relation"),
    ),
    _Table("versions", ("name", "version", "id", "created_at"), ("name", "version")),
    _Table("evidence_ends", ("uid", "item_id", "evidence_end", "seq"), ("uid",)),
    _Table(
        "item_status",
        (
            "uid",
            "collection",
            "ns",
            "key",
            "item_created_at",
            "status",
            "reason",
            "superseded_by",
            "superseded_by_ns",
            "changed_at",
        ),
        ("uid",),
    ),
    _Table(
        "ingested_files",
        (
            "namespace",
            "sha256",
            "state",
            "file_type",
            "size",
            "source_uri",
            "episode_id",
            "chunker",
            "n_chunks",
            "n_parents",
            "owner",
            "started_at",
            "heartbeat_at",
            "completed_at",
        ),
        ("namespace", "sha256"),
    ),
    _Table("ingested_paths", ("namespace", "source_uri", "sha256", "seen_at"), ("namespace", "source_uri")),
    _Table(
        "item_history",
        (
            "id",
            "item_id",
            "uid",
            "ns",
            "key",
            "collection",
            "value",
            "created_at",
            "updated_at",
            "expires_at",
            "status",
            "valid_from",
            "valid_to",
            "change",
            "thread_id",
            "run_id",
            "n_vectors",
            "vec",
            "prev_id",
        ),
        ("id",),
    ),
    _Table("history_vectors", ("history_id", "idx", "path", "vec"), ("history_id", "idx")),
    _Table("history_heads", ("uid", "history_id"), ("uid",)),
    _Table(
        "sessions",
        (
            "id",
            "channel",
            "namespace",
            "thread_id",
            "state",
            "started_at",
            "last_turn_at",
            "n_turns",
            "end_reason",
            "ended_at",
            "promoted_at",
            "n_promoted",
            "purged_at",
        ),
        ("id",),
    ),
    _Table(
        "session_turns",
        (
            "session_id",
            "idx",
            "user_text",
            "assistant",
            "at",
            "vec",
            "source",
            "pinned",
            "importance",
            "signals",
            "memory_key",
        ),
        ("session_id", "idx"),
    ),
)

# Settings that describe one copy of the memory, not the memory: the schema version (each dialect keeps
# its own), and the state of the Chroma index and its queue (rebuilt on the target).
_LOCAL_META_PREFIXES = (
    "schema_version",
    "index_",
    "queue_pruned:",
    "vectors_epoch",
    "migrated",
    "keyword_version",
)
#: Set on the target when a copy is verified: the row counts it had then (JSON).
MIGRATED_KEY = "migrated_rows"
_STATUS_VERSION = "status_version"
# Tables whose rows mean the catalog holds a memory (a fresh catalog has none).
_CONTENT = ("items", "namespaces", "lineage_nodes", "sessions", "ingested_files")


@dataclass
class CopyReport:
    """What `copy_catalog()` did: rows per table in the source, rows it wrote, keyword entries it made."""

    source: str
    target: str
    catalog_id: str
    rows: dict[str, int] = field(default_factory=dict)
    copied: dict[str, int] = field(default_factory=dict)
    meta: int = 0
    keywords: int = 0
    verified: bool = False

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "catalog_id": self.catalog_id,
            "rows": dict(self.rows),
            "copied": dict(self.copied),
            "meta": self.meta,
            "keywords": self.keywords,
            "verified": self.verified,
        }


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(both(conn, f"SELECT count(*) FROM {table}")).fetchone()[0])


def _source_count(src: Any, table: _Table, target: Any) -> int:
    """The rows of ``table`` a copy into ``target`` brings over.

    Filter index rows holding a NUL character, which older versions wrote on SQLite, stay behind on
    PostgreSQL: it cannot hold them, and no filter reads them any more (see `langgraph_memory.catalog.fields`).
    """
    if table.name == "fields" and target.dialect == POSTGRESQL and dialect_of(src) != POSTGRESQL:
        row = src.execute(
            "SELECT count(*) FROM fields WHERE instr(path, char(0)) = 0 "
            "AND NOT (kind = ? AND instr(CAST(val AS BLOB), x'00') > 0)",
            (_fields.KIND_STR,),
        ).fetchone()
        return int(row[0])
    return _count(src, table.name)


def _holds_memory(conn: Any) -> bool:
    return any(conn.execute(both(conn, f"SELECT 1 FROM {t} LIMIT 1")).fetchone() is not None for t in _CONTENT)


def _insert_sql(table: _Table, n_rows: int = 1) -> str:
    """One INSERT of ``n_rows`` rows (a multi-row VALUES: one round trip for a batch), which both backends read alike."""
    cols = ", ".join(table.columns)
    row = "(" + ", ".join("?" * len(table.columns)) + ")"
    values = ", ".join([row] * n_rows)
    key = ", ".join(table.order)
    if table.refresh:
        sets = ", ".join(f"{c} = excluded.{c}" for c in table.refresh)
        return f"INSERT INTO {table.name}({cols}) VALUES {values} ON CONFLICT({key}) DO UPDATE SET {sets}"
    # No conflict target: a row clashing on any unique key (an item's uid too) is kept as the target has it,
    # and the count check afterwards reports it.
    return f"INSERT INTO {table.name}({cols}) VALUES {values} ON CONFLICT DO NOTHING"


def _pages(conn: Any, table: _Table, batch: int) -> Any:
    """The rows of ``table`` in pages of ``batch``, in key order (read inside the caller's snapshot)."""
    cols = ", ".join(table.columns)
    order = ", ".join(table.order)
    if table.keyset:
        after = -1
        while True:
            rows = conn.execute(
                both(conn, f"SELECT {cols} FROM {table.name} WHERE id > ? ORDER BY id LIMIT ?"), (after, batch)
            ).fetchall()
            if not rows:
                return
            yield rows
            after = rows[-1][0]
    else:
        offset = 0
        while True:
            rows = conn.execute(
                both(conn, f"SELECT {cols} FROM {table.name} ORDER BY {order} LIMIT ? OFFSET ?"), (batch, offset)
            ).fetchall()
            if not rows:
                return
            yield rows
            offset += len(rows)


def _write_rows(conn: Any, table: _Table, rows: Sequence[Sequence[Any]]) -> int:
    """Write ``rows`` into ``table``; return how many were new."""
    before = _count(conn, table.name)
    if table.name == "fields":
        # The filter index keeps its values typed per dialect (JSONB on PostgreSQL): its own insert knows how.
        _fields.insert_rows(conn, [(r[0], r[1], r[2], r[3]) for r in rows])
    else:
        per = max(1, _MAX_PARAMS // len(table.columns))
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            conn.execute(both(conn, _insert_sql(table, len(chunk))), [_plain(v) for r in chunk for v in r])
    return _count(conn, table.name) - before


def _plain(value: Any) -> Any:
    """A value as both drivers bind it (PostgreSQL's ``bytea`` comes back as ``memoryview``)."""
    return bytes(value) if isinstance(value, memoryview) else value


def _check_target(source_id: str, target: Any) -> None:
    with target.read() as conn:
        held = _holds_memory(conn)
        done = target.get_meta(conn, MIGRATED_KEY)
        now = {t.name: _count(conn, t.name) for t in TABLES} if done else {}
    if held and target.catalog_id != source_id:
        raise MigrationError(
            f"{target.path} already holds a different memory (catalog {target.catalog_id[:12]}, not the source's "
            f"{source_id[:12]}); nothing was copied. Migrate into an empty database or data directory.",
            target.path,
        )
    if done and json.loads(done) != now:
        # Programs wrote to the target since the copy: copying again would bring back rows deleted there.
        changed = ", ".join(sorted(name for name, n in now.items() if json.loads(done).get(name) != n))
        raise MigrationError(
            f"{target.path} was written to since this memory was copied into it ({changed} changed); nothing was "
            "copied. The target is now the memory's home: migrate into an empty database to copy it again.",
            target.path,
        )


def _copy_meta(src: Any, target: Any) -> int:
    """Copy the memory's settings (model, dimensions, catalog id...); return how many."""
    rows = [
        (k, v)
        for k, v in src.execute(both(src, "SELECT key, value FROM meta ORDER BY key")).fetchall()
        if not str(k).startswith(_LOCAL_META_PREFIXES) and k != _STATUS_VERSION
    ]
    status = src.execute(both(src, "SELECT value FROM meta WHERE key = ?"), (_STATUS_VERSION,)).fetchone()
    with target.write() as conn:
        for key, value in rows:
            target.set_meta(conn, key, value)
        # Processes caching the hidden items of the target must read them again.
        have = target.get_meta(conn, _STATUS_VERSION)
        target.set_meta(conn, _STATUS_VERSION, str(max(int(have or 0), int(status[0] if status else 0)) + 1))
        _queue.bump_vectors_epoch(conn)
    return len(rows)


# Items with vectors and no keyword entry, each with its vectors' record paths joined by U+001F.
_NOT_INDEXED = Sql(
    "SELECT i.id, i.value, (SELECT group_concat(path, char(31)) FROM"
    " (SELECT path FROM vectors v WHERE v.item_id = i.id ORDER BY idx) AS paths)"
    " FROM items i WHERE i.id > ? AND i.n_vectors > 0"
    " AND NOT EXISTS (SELECT 1 FROM keyword_lengths k WHERE k.item_id = i.id)"
    " ORDER BY i.id LIMIT ?",
    "SELECT i.id, i.value, (SELECT string_agg(path, chr(31)) FROM"
    " (SELECT path FROM vectors v WHERE v.item_id = i.id ORDER BY idx) AS paths)"
    " FROM items i WHERE i.id > %s AND i.n_vectors > 0"
    " AND NOT EXISTS (SELECT 1 FROM keyword_lengths k WHERE k.item_id = i.id)"
    " ORDER BY i.id LIMIT %s",
)


def _index_keywords(target: Any, batch: int) -> int:
    """Index the target's items that have vectors and no keyword entry yet (the copied ones); return how many."""
    total, after = 0, 0
    while True:
        with target.write() as conn:
            rows = conn.execute(_NOT_INDEXED.of(conn), (after, batch)).fetchall()
            if not rows:
                return total
            _keywords.index_items(
                conn, [(r[0], _keywords.indexed_text(json.loads(r[1]), (r[2] or "").split("\x1f"))) for r in rows]
            )
        total += len(rows)
        after = rows[-1][0]


def _advance_ids(conn: Any) -> None:
    """Move PostgreSQL's id sequences past the copied ids (SQLite's AUTOINCREMENT follows by itself).

    Vectors copied from SQLite keep the ids of their namespaces' runs
    (`items.vector_run()`); the sequence goes on below the runs, so that a
    vector written on the server never takes an id in another namespace's run.
    """
    if dialect_of(conn) != POSTGRESQL:
        return
    for table in sorted(_INTEGER_IDS):
        below = f" WHERE id < {1 << _item_rows.VECTOR_RUN_BITS}" if table == "vectors" else ""
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
            f"(SELECT coalesce(max(id), 0) + 1 FROM {table}{below}), false)"
        )


def copy_catalog(source: Any, target: Any, *, progress: Progress | None = None, batch: int = BATCH) -> CopyReport:
    """Copy every row of ``source`` into ``target`` (open catalogs, either dialect), then verify the counts.

    ``progress(table, done, total)`` is called as rows are written. Returns
    a `CopyReport`; the target's ``catalog_id`` becomes the source's (the
    same memory, wherever it lives).

    Raises:
        MigrationError: the target holds a different memory, or its counts differ from the source's afterwards.
    """
    batch = max(1, int(batch))
    source_id = str(source.catalog_id)
    _check_target(source_id, target)
    report = CopyReport(source=str(source.path), target=str(target.path), catalog_id=source_id)
    with source.snapshot() as src:
        report.meta = _copy_meta(src, target)
        target.catalog_id = source_id
        for table in TABLES:
            total = _source_count(src, table, target)
            report.rows[table.name] = total
            done = copied = 0
            if progress is not None:
                progress(table.name, 0, total)
            for rows in _pages(src, table, batch):
                with target.write() as conn:
                    copied += _write_rows(conn, table, rows)
                done += len(rows)
                if progress is not None:
                    progress(table.name, done, total)
            report.copied[table.name] = copied
        with target.write() as conn:
            _advance_ids(conn)
        keyword_total = _count(src, "keyword_lengths")
        if progress is not None:
            progress("keywords", 0, keyword_total)
        report.keywords = _index_keywords(target, batch)
        if progress is not None:
            progress("keywords", keyword_total, keyword_total)
        if target.dialect == POSTGRESQL:
            # Copied rows are not puts, which keep PostgreSQL's statistics: until autovacuum came by, a catalog of
            # 100,000 items read three items' vectors by a hash join over every item (25-40 ms against 0.03).
            target.analyze()
        _verify(src, target, report, keyword_total)
    logger.info(
        "copied the catalog %s into %s: %d rows (%d new), counts verified",
        report.source,
        report.target,
        report.total,
        sum(report.copied.values()),
    )
    return report


def _verify(src: Any, target: Any, report: CopyReport, keyword_total: int) -> None:
    with target.read() as conn:
        have = {t.name: _count(conn, t.name) for t in TABLES}
        have["keyword_lengths"] = _count(conn, "keyword_lengths")
    want = {**report.rows, "keyword_lengths": keyword_total}
    wrong = {name: (want[name], have[name]) for name in want if want[name] != have[name]}
    if wrong:
        detail = ", ".join(f"{name}: {w} in the source, {h} in the target" for name, (w, h) in wrong.items())
        raise MigrationError(
            f"the copy of {report.source} into {report.target} does not match ({detail}). The target held rows "
            "the source does not (a memory changed since an earlier copy?); the source is unchanged.",
            report.target,
        )
    report.verified = True
    with target.write() as conn:
        target.set_meta(conn, MIGRATED_KEY, json.dumps({t.name: have[t.name] for t in TABLES}, sort_keys=True))
