"""Ingested files in the catalog: what is stored, by the hash of its bytes, and who is storing it.

Functions over a connection, so the ingest pipeline marks a file complete
in the same transaction as its last chunks. A file goes through two states
per namespace:

``ingesting``
    a process claimed it (``owner``: host, pid and a token) and is storing
    its chunks; ``heartbeat_at`` moves with every batch it commits.
``complete``
    the transaction holding its last chunks committed. The same bytes
    ingested again into that namespace, under any name and by any process,
    are skipped without reading further or calling the model.

A claim whose owner is gone (a dead process on this host, or no heartbeat
for ``stale_after`` seconds) is abandoned: the next claimant takes it over
and rolls its chunks back first. ``ingested_paths`` remembers the hash each
path had when it was last ingested, so a changed file is recognised.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> ns, me = ("documents",), new_owner()
    >>> with cat.write() as conn:
    ...     claim(conn, ns, "ab12", owner=me, now=1.0, stale_after=600, file_type="text", size=5,
    ...           source_uri="file:///tmp/a.txt")[0]
    'claimed'
    >>> with cat.write() as conn:
    ...     complete(conn, ns, "ab12", me, n_chunks=1, n_parents=1, now=2.0)
    ...     claim(conn, ns, "ab12", owner=new_owner(), now=3.0, stale_after=600, file_type="text",
    ...           size=5, source_uri="file:///tmp/b.txt")[0]
    'complete'
"""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.item_rows import join_ns, split_ns
from langgraph_memory.errors import IngestError

__all__ = [
    "IngestedFile",
    "new_owner",
    "owner_gone",
    "get_file",
    "claim",
    "heartbeat",
    "complete",
    "release",
    "path_hash",
    "record_path",
    "paths_of",
    "list_files",
]

_COLS = (
    "namespace, sha256, state, file_type, size, source_uri, episode_id, chunker, n_chunks, n_parents, "
    "owner, started_at, heartbeat_at, completed_at"
)
# One row per file and namespace: a claim replaces the row of a claim that was abandoned.
_CLAIM = Sql(
    f"INSERT OR REPLACE INTO ingested_files ({_COLS}) VALUES (?, ?, 'ingesting', ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, NULL)",
    f"INSERT INTO ingested_files ({_COLS}) "
    "VALUES (%s, %s, 'ingesting', %s, %s, %s, %s, %s, 0, 0, %s, %s, %s, NULL) "
    "ON CONFLICT (namespace, sha256) DO UPDATE SET state = excluded.state, file_type = excluded.file_type, "
    "size = excluded.size, source_uri = excluded.source_uri, episode_id = excluded.episode_id, "
    "chunker = excluded.chunker, n_chunks = excluded.n_chunks, n_parents = excluded.n_parents, "
    "owner = excluded.owner, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, "
    "completed_at = excluded.completed_at",
)


@dataclass(frozen=True)
class IngestedFile:
    """One file ingested (or being ingested) into one namespace."""

    namespace: tuple[str, ...]
    sha256: str
    state: str
    file_type: str
    size: int
    source_uri: str
    episode_id: str | None
    chunker: str | None
    n_chunks: int
    n_parents: int
    owner: str | None
    started_at: float
    heartbeat_at: float
    completed_at: float | None

    @property
    def complete(self) -> bool:
        return self.state == "complete"


def _row(row: Sequence[object]) -> IngestedFile:
    ns, *rest = row
    return IngestedFile(split_ns(str(ns)), *rest)  # type: ignore[arg-type]


def new_owner() -> str:
    """An owner id for this process: ``host:pid:token``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_gone(owner: str | None, heartbeat_at: float, *, now: float, stale_after: float) -> bool:
    """Whether a claim's owner is gone: a dead process on this host, or silent for ``stale_after`` seconds."""
    if owner is None or now - heartbeat_at > stale_after:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def get_file(conn: sqlite3.Connection, namespace: Sequence[str], sha256: str) -> IngestedFile | None:
    row = conn.execute(
        both(conn, f"SELECT {_COLS} FROM ingested_files WHERE namespace = ? AND sha256 = ?"),
        (join_ns(namespace), sha256),
    ).fetchone()
    return None if row is None else _row(row)


def claim(
    conn: sqlite3.Connection,
    namespace: Sequence[str],
    sha256: str,
    *,
    owner: str,
    now: float,
    stale_after: float,
    file_type: str,
    size: int,
    source_uri: str,
    episode_id: str | None = None,
    chunker: str | None = None,
) -> tuple[str, IngestedFile | None]:
    """Claim a file for ingestion; call inside a write transaction.

    Returns ``("claimed", None)``; ``("claimed", abandoned)`` when an
    abandoned claim was taken over (its chunks must be rolled back);
    ``("complete", row)`` when the file is already stored; ``("busy", row)``
    when a live process is storing it now.
    """
    found = get_file(conn, namespace, sha256)
    if found is not None:
        if found.complete:
            return "complete", found
        if not owner_gone(found.owner, found.heartbeat_at, now=now, stale_after=stale_after):
            return "busy", found
    conn.execute(
        _CLAIM.of(conn),
        (join_ns(namespace), sha256, file_type, size, source_uri, episode_id, chunker, owner, now, now),
    )
    return "claimed", found


def _ours(conn: sqlite3.Connection, namespace: Sequence[str], sha256: str, owner: str, sql: str, params: tuple) -> None:
    cur = conn.execute(
        both(conn, sql + " WHERE namespace = ? AND sha256 = ? AND owner = ? AND state = 'ingesting'"),
        (*params, join_ns(namespace), sha256, owner),
    )
    if cur.rowcount != 1:
        raise IngestError(
            f"the claim on file {sha256[:12]} in namespace {'/'.join(namespace)} was taken over by another "
            "process (this one was silent for too long); its work here is rolled back. Retry the ingest."
        )


def heartbeat(conn: sqlite3.Connection, namespace: Sequence[str], sha256: str, owner: str, *, now: float) -> None:
    """Note progress on a claimed file; raises ``IngestError`` when the claim is no longer ours."""
    _ours(conn, namespace, sha256, owner, "UPDATE ingested_files SET heartbeat_at = ?", (now,))


def complete(
    conn: sqlite3.Connection,
    namespace: Sequence[str],
    sha256: str,
    owner: str,
    *,
    n_chunks: int,
    n_parents: int,
    now: float,
) -> None:
    """Mark a claimed file complete (in the transaction of its last chunks)."""
    _ours(
        conn,
        namespace,
        sha256,
        owner,
        "UPDATE ingested_files SET state = 'complete', owner = NULL, n_chunks = ?, n_parents = ?, "
        "heartbeat_at = ?, completed_at = ?",
        (n_chunks, n_parents, now, now),
    )


def release(conn: sqlite3.Connection, namespace: Sequence[str], sha256: str, owner: str) -> bool:
    """Drop our unfinished claim (after its chunks were rolled back); True if it was ours."""
    cur = conn.execute(
        both(
            conn, "DELETE FROM ingested_files WHERE namespace = ? AND sha256 = ? AND owner = ? AND state = 'ingesting'"
        ),
        (join_ns(namespace), sha256, owner),
    )
    return cur.rowcount == 1


def path_hash(conn: sqlite3.Connection, namespace: Sequence[str], source_uri: str) -> str | None:
    """The hash ``source_uri`` had when it was last ingested into ``namespace``."""
    row = conn.execute(
        both(conn, "SELECT sha256 FROM ingested_paths WHERE namespace = ? AND source_uri = ?"),
        (join_ns(namespace), source_uri),
    ).fetchone()
    return None if row is None else str(row[0])


def record_path(
    conn: sqlite3.Connection, namespace: Sequence[str], source_uri: str, sha256: str, *, now: float
) -> None:
    conn.execute(
        both(
            conn,
            "INSERT INTO ingested_paths (namespace, source_uri, sha256, seen_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(namespace, source_uri) DO UPDATE SET sha256 = excluded.sha256, seen_at = excluded.seen_at",
        ),
        (join_ns(namespace), source_uri, sha256, now),
    )


def paths_of(conn: sqlite3.Connection, namespace: Sequence[str], sha256: str) -> list[str]:
    """The paths whose latest ingest into ``namespace`` had these bytes."""
    rows = conn.execute(
        both(conn, "SELECT source_uri FROM ingested_paths WHERE namespace = ? AND sha256 = ? ORDER BY source_uri"),
        (join_ns(namespace), sha256),
    )
    return [str(r[0]) for r in rows]


def list_files(conn: sqlite3.Connection, namespace: Sequence[str] | None = None) -> list[IngestedFile]:
    """Every ingested file (of one namespace), oldest first."""
    if namespace is None:
        rows = conn.execute(both(conn, f"SELECT {_COLS} FROM ingested_files ORDER BY started_at, sha256"))
    else:
        rows = conn.execute(
            both(conn, f"SELECT {_COLS} FROM ingested_files WHERE namespace = ? ORDER BY started_at, sha256"),
            (join_ns(namespace),),
        )
    return [_row(r) for r in rows]
