"""What is in memory (``get_memory_stats``), per collection and for the data directory.

`collect_stats()` counts, for each of the seven typed collections and the
general one: items, items with vectors, vectors, storage bytes (values and
vectors), oldest and newest item, archived items, and live items that are
retired or superseded (hidden from searches). For the data directory: the
namespaces and lineage links; sessions (those of session memory, and any other
``session_id`` recorded on items), the active ones, the turns recorded and the
turns promoted to episodic memory; the checkpointer's threads and checkpoints
(when it can list them), and the bytes each file or folder takes on disk. ``Memory.stats()`` calls it:

    stats = mem.stats()
    print(stats.items, stats.collections["backtest_results"].with_vectors)
    print(stats.as_dict())
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog import sessions as _sessions
from langgraph_memory.catalog import stats as _stats
from langgraph_memory.catalog import status as _status

__all__ = ["CollectionStats", "MemoryStats", "collect_stats"]


@dataclass(frozen=True)
class CollectionStats:
    """One collection: what it holds live, what it archived, and what is hidden from searches.

    ``storage_bytes`` counts the values (JSON) and vectors (float32) in the
    catalog; the filter index and SQLite's own overhead come on top
    ([`MemoryStats.disk_bytes`][langgraph_memory.MemoryStats] has the files' real sizes).
    """

    name: str
    label: str | None
    memory_type: str
    items: int = 0
    with_vectors: int = 0
    vectors: int = 0
    storage_bytes: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    archived: int = 0
    retired: int = 0
    superseded: int = 0

    @property
    def searchable(self) -> int:
        """Live items a search can return (neither retired nor superseded)."""
        return self.items - self.retired - self.superseded


@dataclass(frozen=True)
class MemoryStats:
    """The whole data directory (see the module docstring); collections by name, typed ones first."""

    data_dir: Path
    collections: dict[str, CollectionStats]
    namespaces: int = 0
    lineage_edges: int = 0
    #: distinct sessions: session memory's, and other ``session_id`` values recorded on items.
    sessions: int = 0
    #: sessions of session memory still taking turns.
    active_sessions: int = 0
    #: turns recorded in session memory (all time), and those promoted to episodic memories.
    session_turns: int = 0
    promoted_turns: int = 0
    threads: int | None = None
    checkpoints: int | None = None
    disk_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def items(self) -> int:
        return sum(c.items for c in self.collections.values())

    @property
    def archived(self) -> int:
        return sum(c.archived for c in self.collections.values())

    @property
    def retired(self) -> int:
        return sum(c.retired for c in self.collections.values())

    @property
    def superseded(self) -> int:
        return sum(c.superseded for c in self.collections.values())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (dates as ISO strings), with the totals."""
        out = asdict(self)
        out["data_dir"] = str(self.data_dir)
        for c in out["collections"].values():
            for k in ("oldest", "newest"):
                c[k] = c[k].isoformat() if c[k] is not None else None
        out.update(items=self.items, archived=self.archived, retired=self.retired, superseded=self.superseded)
        return out


def _dt(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, tz=UTC) if ts is not None else None


def _bytes(path: Path) -> int:
    """Bytes of a file (with its SQLite ``-wal``/``-shm`` files) or of a folder's files, 0 if missing."""
    if path.is_dir():
        total = 0
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:  # a file removed while walking
                    pass
        return total
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def collect_stats(
    store: Any, *, archiver: Any | None = None, checkpointer: Any | None = None, catalog: Any | None = None
) -> MemoryStats:
    """Count what ``store`` holds, what ``archiver`` archived, and ``checkpointer``'s threads.

    ``archiver`` may be None (a data directory without an archive: nothing
    archived); ``checkpointer`` counts threads only if it has
    ``list_threads()`` (our ``SqliteCheckpointer`` does). ``catalog`` reads the
    store's catalog over another connection (default: the store's own).

    Examples:
        >>> collect_stats(store).collections["lessons_learned"].items
        1
    """
    catalog = catalog or store.catalog
    with catalog.read() as conn:
        totals = _stats.collection_totals(conn)
        hidden = _status.live_counts(conn)
        namespaces = _stats.namespace_count(conn)
        sessions = _sessions.counts(conn)
        catalog_bytes = _stats.server_bytes(conn) if catalog.on_server else None
        lineage_edges = _lin.edge_count(conn)
    archived = archiver.archived_counts() if archiver is not None else {}
    collections: dict[str, CollectionStats] = {}
    for spec in store.collections:
        t = totals.get(spec.name)
        h = hidden.get(spec.name, {})
        collections[spec.name] = CollectionStats(
            name=spec.name,
            label=spec.label,
            memory_type=spec.memory_type,
            items=t.items if t else 0,
            with_vectors=t.with_vectors if t else 0,
            vectors=t.vectors if t else 0,
            storage_bytes=(t.value_bytes + t.vector_bytes) if t else 0,
            oldest=_dt(t.oldest) if t else None,
            newest=_dt(t.newest) if t else None,
            archived=archived.get(spec.name, 0),
            retired=h.get("retired", 0),
            superseded=h.get("superseded", 0),
        )
    threads = checkpoints = None
    if callable(getattr(checkpointer, "list_threads", None)):
        listed = checkpointer.list_threads()  # type: ignore[union-attr]
        threads = len(listed)
        checkpoints = sum(int(getattr(t, "checkpoints", 0)) for t in listed)
    settings = store.settings
    disk = {
        # On a server: what the tables take there; the local directory keeps the rest.
        "catalog": catalog_bytes if catalog_bytes is not None else _bytes(settings.catalog_path),
        "index": _bytes(settings.chroma_dir),
        "checkpoints": (
            int(checkpointer.size_bytes())  # type: ignore[union-attr]
            if callable(getattr(checkpointer, "size_bytes", None))
            else _bytes(settings.checkpoints_path)
        ),
        "embedding_cache": _bytes(settings.embedding_cache_path),
        "archive": _bytes(settings.archive_dir),
    }
    return MemoryStats(
        data_dir=Path(settings.data_dir),
        collections=collections,
        namespaces=namespaces,
        lineage_edges=lineage_edges,
        sessions=sessions.known_session_ids,
        active_sessions=sessions.active,
        session_turns=sessions.turns,
        promoted_turns=sessions.promoted_turns,
        threads=threads,
        checkpoints=checkpoints,
        disk_bytes=disk,
    )
