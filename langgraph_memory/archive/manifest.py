"""The archive manifest: which files exist, what state each is in, and where every item is.

The manifest is a SQLite file, ``<archive_dir>/manifest.sqlite``, not a JSON
file rewritten on each change, because it must hold more than a list of
files: the status of every archived item (still archived, being restored,
restored, superseded by a newer copy) and an index by key for lineage
lookups. Every state change is one SQLite transaction (WAL, ``synchronous
=FULL``), so a crash leaves the manifest either before or after a step,
never in between; that is the atomic update a temp-file-and-rename JSON
manifest would give, with per-item updates that do not rewrite everything.

A file moves through these states (see `langgraph_memory.archive.archiver`):

    writing --(written, fsynced, re-read, checksum and count match)--> verified
    verified --(its items deleted from the live store)--> complete
    writing --(next run: unverified, items still live)--> discarded
    verified --(file damaged before its deletes finished)--> corrupt

and an item line moves ``archived -> restoring -> restored`` (restore),
``archived -> superseded`` (a newer copy is live or archived), or
``archived -> deleted`` (the item was deleted for good: the line stays in the
immutable file but no search, lookup or restore returns it).

The manifest is not a cache: it is the only index of the archive files and of
the state of every archived item, so it is never rebuilt behind the user's
back. Every operation runs inside `Manifest._guard()`, so a SQLite error
never escapes raw: a damaged file raises
[`CorruptFileError`][langgraph_memory.errors.CorruptFileError] (restore it from a backup,
or move it aside: the archive files stay on disk, but a new manifest lists
none of them), a full disk [`DiskFullError`][langgraph_memory.errors.DiskFullError],
a read-only one [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].

    from langgraph_memory.archive.manifest import Manifest

    m = Manifest(archive_dir / "manifest.sqlite")
    for f in m.files():
        print(f.name, f.state, f.items, f.sha256)
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory._infra.sqlite_ro import ReadOnlyConnection, connect_read_only
from langgraph_memory.archive.format import FORMAT_VERSION
from langgraph_memory.errors import (
    ArchiveError,
    CorruptFileError,
    LangGraphMemoryError,
    LockTimeoutError,
    ReadOnlyError,
)

__all__ = ["Manifest", "ArchiveFile", "FileStats", "FILE_STATES", "ITEM_STATES"]

FILE_STATES = ("writing", "verified", "complete", "discarded", "corrupt")
ITEM_STATES = ("archived", "restoring", "restored", "superseded", "corrupt", "deleted")
# Files whose lines count as archived (readable by search, restore, find).
READABLE = ("verified", "complete")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'items',
    collection TEXT NOT NULL,
    run_id TEXT NOT NULL,
    state TEXT NOT NULL,
    format_version INTEGER NOT NULL,
    created_at REAL NOT NULL,
    changed_at REAL NOT NULL,
    items INTEGER,
    bytes INTEGER,
    sha256 TEXT,
    min_activity REAL,
    max_activity REAL,
    min_created REAL,
    max_created REAL,
    note TEXT
);
CREATE TABLE IF NOT EXISTS items (
    file TEXT NOT NULL REFERENCES files(name),
    line INTEGER NOT NULL,
    uid TEXT NOT NULL,
    key TEXT NOT NULL,
    namespace TEXT NOT NULL,
    status TEXT NOT NULL,
    changed_at REAL NOT NULL,
    PRIMARY KEY (file, line)
);
CREATE INDEX IF NOT EXISTS items_uid ON items(uid, status);
CREATE INDEX IF NOT EXISTS items_key ON items(key, status);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,
    report TEXT
);
"""


@dataclass(frozen=True)
class ArchiveFile:
    """One manifest entry: an archive file and what it holds."""

    name: str
    kind: str
    collection: str
    run_id: str
    state: str
    format_version: int
    created_at: float
    changed_at: float
    items: int | None
    bytes: int | None
    sha256: str | None
    min_activity: float | None
    max_activity: float | None
    min_created: float | None
    max_created: float | None
    note: str | None
    live_items: int = 0  # lines still archived (not restored or superseded)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class FileStats:
    """How many items one file holds and the range of their activity and creation times (manifest columns)."""

    def __init__(self) -> None:
        self.count = 0
        self.min_act = self.max_act = self.min_created = self.max_created = None  # type: float | None

    def add(self, act: float, created: float | None = None) -> None:
        self.count += 1
        self.min_act = act if self.min_act is None else min(self.min_act, act)
        self.max_act = act if self.max_act is None else max(self.max_act, act)
        if created is not None:
            self.min_created = created if self.min_created is None else min(self.min_created, created)
            self.max_created = created if self.max_created is None else max(self.max_created, created)


_FILE_COLS = (
    "name, kind, collection, run_id, state, format_version, created_at, changed_at, items, bytes, "
    "sha256, min_activity, max_activity, min_created, max_created, note"
)


class Manifest:
    """The SQLite manifest of one archive directory (thread-safe).

    Raises [`CorruptFileError`][langgraph_memory.errors.CorruptFileError] (damaged file),
    [`DiskFullError`][langgraph_memory.errors.DiskFullError],
    [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError] or
    [`StorageError`][langgraph_memory.errors.StorageError] naming the file, never a
    raw ``sqlite3`` error.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        #: Opened with ``read_only=True``: reads only, writes nothing beside the file; every change raises
        #: [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].
        self.read_only = read_only
        self._lock = threading.RLock()
        self._ro: ReadOnlyConnection | None = None
        if read_only:
            self._open_read_only()
            return
        with self._guard("open"):
            self._conn = _sqlite.connect(self.path, synchronous="FULL")
        try:
            with self._lock, self._guard("open"):
                self._conn.executescript(_SCHEMA)
            with self.transaction("open") as c:
                row = c.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
                if row is None:
                    c.execute("INSERT INTO meta VALUES ('format_version', ?)", (str(FORMAT_VERSION),))
                else:
                    self._check_version(row[0])
        except BaseException:
            self._conn.close()
            raise

    def _open_read_only(self) -> None:
        """Read an existing manifest without writing beside it; a missing one reads as an empty archive."""
        if not self.path.exists():
            # No archive yet: an empty manifest in memory, so that every read answers "nothing archived".
            self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self._conn.executescript(_SCHEMA)
            self._conn.execute("PRAGMA query_only = ON")
            return
        with self._guard("open"):
            self._ro = connect_read_only(self.path)
        self._conn = self._ro.conn
        try:
            with self._lock, self._guard("open"):
                row = self._conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
            if row is not None:
                self._check_version(row[0])
        except BaseException:
            self._ro.close()
            raise

    def _check_version(self, value: str) -> None:
        if int(value) > FORMAT_VERSION:
            raise ArchiveError(
                f"archive manifest {self.path} has format version {value}, newer than this "
                f"langgraph-memory understands ({FORMAT_VERSION}); upgrade the package."
            )

    def close(self) -> None:
        with self._lock:
            try:
                if self._ro is not None:
                    self._ro.close()
                else:
                    self._conn.close()
            except sqlite3.Error:  # a last WAL checkpoint failing (disk full) leaves the WAL to the next open
                pass

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Raise SQLite errors met inside the block as typed errors naming the manifest."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc, what) from exc
        except CorruptFileError as exc:  # from _sqlite.connect: give the manifest's own advice
            if exc.path is not None and Path(str(exc.path)) != self.path:
                raise
            raise self._error(exc, what) from (exc.__cause__ or exc)

    def _error(self, exc: BaseException, what: str) -> LangGraphMemoryError:
        cause = exc.__cause__ if isinstance(exc, LangGraphMemoryError) and exc.__cause__ else exc
        if isinstance(exc, sqlite3.OperationalError) and _sqlite.is_lock_error(exc):
            return LockTimeoutError(
                f"could not {what} the archive manifest {self.path}: another process kept it locked "
                f"({exc}). Another archive run or restore is probably in progress; retry later."
            )
        err = _sqlite.translate(exc, self.path, what)
        if isinstance(err, CorruptFileError):
            return CorruptFileError(
                f"the archive manifest {self.path} is damaged ({cause}); could not {what} it. The archive "
                f"files in {self.path.parent} are not affected. Restore {self.path.name} from a backup; or "
                "move it aside (with its -wal and -shm files) to start a new, empty manifest: the archive "
                "files then stay on disk but are no longer listed, searched or restored (`archive list` "
                "and `archive verify` report no archives).",
                self.path,
            )
        return err

    @contextmanager
    def transaction(self, what: str = "update") -> Iterator[sqlite3.Connection]:
        """One atomic, durable step; run only manifest statements inside it.

        On any error the step is rolled back (the first error is the one
        raised, even when the rollback fails too, as it can on a full disk).
        """
        if self.read_only:
            raise ReadOnlyError(
                f"the archive manifest {self.path} was opened read-only; could not {what} it. Open the memory "
                "without read_only=True (--read-only) to archive, restore or forget.",
                self.path,
            )
        with self._lock, self._guard(what):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # SQLite rolls back by itself when it cannot (disk full, I/O error)
                raise

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, self._guard("read"):
            return self._conn.execute(sql, params).fetchall()

    def check(self) -> None:
        """Read the whole manifest (SQLite's ``quick_check``); `CorruptFileError` if damaged."""
        rows = self.query("PRAGMA quick_check")
        problems = [str(r[0]) for r in rows if str(r[0]).lower() != "ok"]
        if problems:
            exc = sqlite3.DatabaseError(f"integrity check failed: {'; '.join(problems[:3])}")
            exc.sqlite_errorcode = sqlite3.SQLITE_CORRUPT
            raise self._error(exc, "check")

    # ------------------------------------------------------------------ files

    def reserve(self, name: str, *, kind: str, collection: str, run_id: str) -> None:
        """Record a file about to be written (state ``writing``), before it exists."""
        now = time.time()
        with self.transaction() as c:
            c.execute(
                "INSERT INTO files (name, kind, collection, run_id, state, format_version, created_at, changed_at) "
                "VALUES (?, ?, ?, ?, 'writing', ?, ?, ?)",
                (name, kind, collection, run_id, FORMAT_VERSION, now, now),
            )

    def set_state(
        self, name: str, state: str, *, note: str | None = None, conn: sqlite3.Connection | None = None
    ) -> None:
        assert state in FILE_STATES
        sql = "UPDATE files SET state=?, changed_at=?, note=COALESCE(?, note) WHERE name=?"
        if conn is not None:
            conn.execute(sql, (state, time.time(), note, name))
            return
        with self.transaction() as c:
            c.execute(sql, (state, time.time(), note, name))

    def mark_verified(
        self, conn: sqlite3.Connection, name: str, items: int, size: int, sha256: str | None, stats: FileStats
    ) -> None:
        """Record a written file as ``verified`` with what it holds, inside the caller's transaction ``conn``."""
        conn.execute(
            "UPDATE files SET state='verified', changed_at=?, items=?, bytes=?, sha256=?, min_activity=?, "
            "max_activity=?, min_created=?, max_created=? WHERE name=?",
            (
                time.time(),
                items,
                size,
                sha256,
                stats.min_act,
                stats.max_act,
                stats.min_created,
                stats.max_created,
                name,
            ),
        )

    def file(self, name: str) -> ArchiveFile | None:
        rows = self._files_where("f.name = ?", (name,))
        return rows[0] if rows else None

    def file_lines(self, file: str, *, limit: int, offset: int = 0) -> tuple[int, list[tuple[Any, ...]]]:
        """How many lines ``file`` holds, and a page of them: ``(line, uid, key, namespace, status, changed_at)``."""
        total = self.query("SELECT count(*) FROM items WHERE file = ?", (file,))[0][0]
        rows = self.query(
            "SELECT line, uid, key, namespace, status, changed_at FROM items WHERE file = ? ORDER BY line LIMIT ? OFFSET ?",
            (file, limit, offset),
        )
        return int(total), rows

    def files(
        self, *, collection: str | None = None, states: Iterable[str] | None = None, kind: str | None = None
    ) -> list[ArchiveFile]:
        """Manifest entries, oldest first."""
        clauses, params = ["1=1"], []
        if collection is not None:
            clauses.append("f.collection = ?")
            params.append(collection)
        if states is not None:
            states = list(states)
            clauses.append(f"f.state IN ({','.join('?' * len(states))})")
            params.extend(states)
        if kind is not None:
            clauses.append("f.kind = ?")
            params.append(kind)
        return self._files_where(" AND ".join(clauses), params)

    def _files_where(self, where: str, params: Sequence[Any]) -> list[ArchiveFile]:
        rows = self.query(
            f"SELECT {', '.join('f.' + c.strip() for c in _FILE_COLS.split(','))}, "
            "(SELECT COUNT(*) FROM items i WHERE i.file = f.name AND i.status = 'archived') "
            f"FROM files f WHERE {where} ORDER BY f.created_at, f.name",
            params,
        )
        names = [c.strip() for c in _FILE_COLS.split(",")]
        return [ArchiveFile(**dict(zip(names, row[:-1], strict=True)), live_items=row[-1]) for row in rows]

    # ------------------------------------------------------------------ items

    def excluded_lines(self, name: str) -> set[int]:
        """Lines of a file that no longer count as archived."""
        return {line for (line,) in self.query("SELECT line FROM items WHERE file=? AND status != 'archived'", (name,))}

    def archived_lines(
        self, *, uids: Sequence[str] | None = None, keys: Sequence[str] | None = None
    ) -> dict[str, set[int]]:
        """``{file: lines}`` of the archived lines (in readable files) matching ``uids`` or ``keys``, files by name."""
        found: set[tuple[str, int]] = set()
        for column, wanted in (("uid", uids), ("key", keys)):
            if not wanted:
                continue
            wanted = list(dict.fromkeys(wanted))
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                found.update(
                    self.query(
                        "SELECT i.file, i.line FROM items i JOIN files f ON f.name=i.file "
                        f"WHERE i.{column} IN ({','.join('?' * len(chunk))}) AND i.status='archived' "
                        f"AND f.state IN ({','.join('?' * len(READABLE))})",
                        (*chunk, *READABLE),
                    )
                )
        out: dict[str, set[int]] = {}
        for file, line in sorted(found):
            out.setdefault(file, set()).add(line)
        return out

    def set_item_status(self, name: str, lines: Iterable[int], status: str) -> None:
        assert status in ITEM_STATES
        rows = [(status, time.time(), name, line) for line in lines]
        if rows:
            with self.transaction() as c:
                c.executemany("UPDATE items SET status=?, changed_at=? WHERE file=? AND line=?", rows)

    def mark_deleted(self, uids: Sequence[str]) -> int:
        """Mark the archived lines of ``uids`` deleted (a hard delete); return how many lines changed."""
        changed = 0
        with self.transaction() as c:
            for i in range(0, len(uids), 500):
                chunk = list(uids[i : i + 500])
                changed += c.execute(
                    f"UPDATE items SET status='deleted', changed_at=? WHERE status='archived' "
                    f"AND uid IN ({','.join('?' * len(chunk))})",
                    (time.time(), *chunk),
                ).rowcount
        return changed

    def recently_restored(self, uids: Sequence[str], since: float) -> set[str]:
        """Which of ``uids`` were restored after ``since`` (they get a grace period)."""
        if not uids:
            return set()
        return {
            uid
            for (uid,) in self.query(
                f"SELECT uid FROM items WHERE status='restored' AND changed_at > ? "
                f"AND uid IN ({','.join('?' * len(uids))})",
                (since, *uids),
            )
        }

    def record_run(self, run_id: str, started_at: float, finished_at: float, report: str) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)", (run_id, started_at, finished_at, report))
