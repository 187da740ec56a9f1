"""The SQLite catalog's tables, and the migrations that bring an older file up to date.

The PostgreSQL catalog has the same tables with PostgreSQL's types (`langgraph_memory.catalog.postgres.schema`);
the keyword index, an FTS5 table here, is a table of stemmed terms there.

* ``meta``: the catalog's own settings (its id, the embedding model and
  dimensions of its vectors, the current Chroma folder, the index seal).
* ``namespaces``: one row per namespace ever used, with its collection and
  how many items and vectors it holds now. Rows are never deleted, so a
  namespace id cached by any process stays valid; ``list_namespaces`` shows
  those with items.
* ``collection_counts`` (version 2): the same counts per collection (the planner reads
  them for every search).
* ``items``: the truth of every item: value (JSON), timestamps, access data,
  TTL and how many vectors it has.
* ``vectors``: each item's vectors (float32 bytes), the index path whose text
  they embed, and the model that made them.
* ``fields``: one row per scalar leaf of each value (path, kind, value), so a
  filter finds its items through an index instead of reading every value.
* ``index_queue`` and ``index_state``: the changes Chroma has not applied yet,
  and how far each Chroma collection got (see `langgraph_memory.index.chroma`).
* ``lineage_nodes``, ``lineage_edges``, ``versions``: where items came from,
  and the versions of named strategies, written in the same transaction as
  the items themselves.
* ``item_status`` (version 3): items retired or superseded (``deleted_at``
  and ``superseded_by``), keyed by the item's uid and its
  ``created_at``, so the status outlives an archive-and-restore round trip
  but not a delete and re-put of the same key. ``meta.status_version``
  counts changes, so a process can cache the set of hidden items.
* ``ingested_files``, ``ingested_paths`` (version 4): the files ingested into
  each namespace by the SHA-256 of their bytes, whether their chunks are all
  stored, which process is storing them; and the hash each path had when it
  was last ingested (see `langgraph_memory.catalog.files`).
* ``keywords`` (FTS5, ``porter unicode61``), ``keyword_lengths`` and
  ``keyword_stats``: each item's indexed text for keyword search, its length
  in words, and the totals BM25 needs (version 5; see
  `langgraph_memory.catalog.keywords`). A file from an earlier version
  gets its keyword index built from its items when it is migrated.
* ``sessions``, ``session_turns`` (version 6): session memory (short-term):
  each conversation session (its thread, state, why it ended, how many of
  its turns were promoted) and the turns it holds, with their embeddings,
  until cleanup forgets them (see `langgraph_memory.catalog.sessions`).
* ``prefix_counts`` (version 7): the item and vector counts under every
  namespace prefix (each namespace's first label, first two labels, ...,
  itself), so that planning a search under a prefix reads one row however
  many namespaces it holds.
* Version 8 changes no table: a namespace's vectors take the row ids of
  its own run (``ns_id << 32`` on, see `langgraph_memory.catalog.items.vector_run`),
  so they are neighbours in the file; an older file's vectors are moved
  into their runs when it is migrated.
* ``evidence_ends`` (version 9): the last market date each item's evidence
  used (an ISO date; NULL once the item was deleted), keyed by the item's
  uid, with its lineage id and a change sequence (see
  `langgraph_memory.catalog.evidence`). Items stored before version 9 have
  no row: their evidence end is unknown.
* ``item_history``, ``history_vectors`` and ``items.valid_from`` (version 10):
  every version of an item that a change ended, with its vectors (in its row
  when it has one, else in ``history_vectors``), and since
  when the current version is current (see `langgraph_memory.catalog.history`).
  An older file's items count from their ``updated_at``: history starts with
  the first change after the upgrade.
* Version 11 drops ``item_history``'s index by end (``item_history_valid``):
  every change paid an insert into it for reads that need none.
* Version 12 replaces ``item_history``'s index by item (``item_history_uid``)
  with a chain: each version names the one before it (``prev_id``), an item
  its newest (``items.history_id``), and ``history_heads`` keeps a key's
  newest once its item is deleted. An older file's chains are linked when it
  is migrated.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.errors import MigrationError

__all__ = ["SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 12

_V1 = """
CREATE TABLE IF NOT EXISTS meta (
    key    TEXT PRIMARY KEY,
    value  TEXT
);
CREATE TABLE IF NOT EXISTS namespaces (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    ns          TEXT NOT NULL UNIQUE,
    collection  TEXT NOT NULL,
    depth       INTEGER NOT NULL,
    n_items     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS namespaces_collection ON namespaces(collection, ns);
CREATE TABLE IF NOT EXISTS items (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    ns_id             INTEGER NOT NULL,
    key               TEXT NOT NULL,
    uid               TEXT NOT NULL UNIQUE,
    value             TEXT NOT NULL,
    created_at        REAL NOT NULL,
    updated_at        REAL NOT NULL,
    last_accessed_at  REAL NOT NULL,
    access_count      INTEGER NOT NULL DEFAULT 0,
    expires_at        REAL,
    ttl_minutes       REAL,
    n_vectors         INTEGER NOT NULL DEFAULT 0,
    UNIQUE (ns_id, key)
);
CREATE INDEX IF NOT EXISTS items_recent ON items(ns_id, updated_at);
CREATE INDEX IF NOT EXISTS items_expiry ON items(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS models (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL,
    dims  INTEGER NOT NULL,
    UNIQUE (name, dims)
);
CREATE TABLE IF NOT EXISTS vectors (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id   INTEGER NOT NULL,
    idx       INTEGER NOT NULL,
    path      TEXT NOT NULL,
    model_id  INTEGER NOT NULL,
    vec       BLOB NOT NULL,
    UNIQUE (item_id, idx)
);
CREATE TABLE IF NOT EXISTS fields (
    path     TEXT NOT NULL,
    kind     INTEGER NOT NULL,
    val,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (path, kind, val, item_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fields_item ON fields(item_id);
CREATE TABLE IF NOT EXISTS index_queue (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    collection  TEXT NOT NULL,
    item_id     INTEGER NOT NULL,
    n_old       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS index_queue_collection ON index_queue(collection, seq);
CREATE TABLE IF NOT EXISTS index_state (
    collection   TEXT PRIMARY KEY,
    chroma_name  TEXT NOT NULL,
    applied_seq  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS lineage_nodes (
    id          TEXT PRIMARY KEY,
    collection  TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT,
    version     INTEGER,
    created_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS lineage_edges (
    child_id           TEXT NOT NULL,
    parent_id          TEXT NOT NULL,
    relation           TEXT NOT NULL,
    child_collection   TEXT,
    parent_collection  TEXT,
    created_at         REAL NOT NULL,
    PRIMARY KEY (child_id, parent_id, relation)
);
CREATE INDEX IF NOT EXISTS lineage_edges_parent ON lineage_edges(parent_id);
CREATE TABLE IF NOT EXISTS versions (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    created_at  REAL NOT NULL,
    PRIMARY KEY (name, version)
);
"""

# Item and vector counts per namespace and per collection, kept by every write, so
# that planning a search reads a few rows whatever the number of namespaces.
_V2_COUNTS = """
ALTER TABLE namespaces ADD COLUMN n_vectors INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS collection_counts (
    collection  TEXT PRIMARY KEY,
    n_items     INTEGER NOT NULL DEFAULT 0,
    n_vectors   INTEGER NOT NULL DEFAULT 0
);
UPDATE namespaces SET n_vectors = (SELECT coalesce(sum(i.n_vectors), 0) FROM items i WHERE i.ns_id = namespaces.id);
INSERT INTO collection_counts(collection, n_items, n_vectors)
    SELECT collection, sum(n_items), sum(n_vectors) FROM namespaces GROUP BY collection;
"""

# Retired and superseded items. A row applies to the item with this uid *and* this created_at: a
# restored item keeps its created_at (still retired), a key deleted and put again gets a new one.
_V3_STATUS = """
CREATE TABLE IF NOT EXISTS item_status (
    uid               TEXT PRIMARY KEY,
    collection        TEXT NOT NULL,
    ns                TEXT NOT NULL,
    key               TEXT NOT NULL,
    item_created_at   REAL NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('retired', 'superseded')),
    reason            TEXT,
    superseded_by     TEXT,
    superseded_by_ns  TEXT,
    changed_at        REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS item_status_collection ON item_status(collection, status);
"""


# Version 4: files into memory (langgraph_memory.ingest). A file is one row per
# namespace it went to, keyed by the hash of its bytes: "ingesting" while its
# chunks are being stored (``owner`` is the process, ``heartbeat_at`` its last
# progress), "complete" once the transaction holding its last chunks committed;
# ``chunker`` holds the chunking settings (JSON) its chunks were cut with.
_V4_FILES = """
CREATE TABLE IF NOT EXISTS ingested_files (
    namespace     TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    state         TEXT NOT NULL,
    file_type     TEXT NOT NULL,
    size          INTEGER NOT NULL,
    source_uri    TEXT NOT NULL,
    episode_id    TEXT,
    chunker       TEXT,
    n_chunks      INTEGER NOT NULL DEFAULT 0,
    n_parents     INTEGER NOT NULL DEFAULT 0,
    owner         TEXT,
    started_at    REAL NOT NULL,
    heartbeat_at  REAL NOT NULL,
    completed_at  REAL,
    PRIMARY KEY (namespace, sha256)
);
CREATE TABLE IF NOT EXISTS ingested_paths (
    namespace   TEXT NOT NULL,
    source_uri  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    seen_at     REAL NOT NULL,
    PRIMARY KEY (namespace, source_uri)
);
CREATE INDEX IF NOT EXISTS ingested_paths_sha ON ingested_paths(namespace, sha256);
"""

# The keyword index for hybrid search: one FTS5 row per item with indexed text, rowid = items.id << 10 | length.
_V5_KEYWORDS = """
CREATE VIRTUAL TABLE IF NOT EXISTS keywords USING fts5(text, tokenize = 'porter unicode61', detail = none);
CREATE TABLE IF NOT EXISTS keyword_lengths (
    item_id   INTEGER PRIMARY KEY,
    n_tokens  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS keyword_stats (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    docs    INTEGER NOT NULL,
    tokens  INTEGER NOT NULL
);
INSERT OR IGNORE INTO keyword_stats(id, docs, tokens) VALUES (1, 0, 0)
"""

# Version 6: session memory (langgraph_memory.sessions). A session is "active" while turns arrive,
# "ended" once a boundary closed it, "promoted" once the transaction holding its episodic memories
# committed. ``channel`` is the namespace its memories go to and its thread ("" for none), joined:
# the current session of a channel is its one active session. A turn keeps its embedding (float32)
# for the topic-change rule and novelty; ``source`` (unique when set) makes recording a turn
# idempotent (the conversation node passes the message ids); ``memory_key`` is set by promotion.
_V6_SESSIONS = """
CREATE TABLE IF NOT EXISTS sessions (
    id            TEXT PRIMARY KEY,
    channel       TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    thread_id     TEXT,
    state         TEXT NOT NULL CHECK (state IN ('active', 'ended', 'promoted')),
    started_at    REAL NOT NULL,
    last_turn_at  REAL NOT NULL,
    n_turns       INTEGER NOT NULL DEFAULT 0,
    end_reason    TEXT,
    ended_at      REAL,
    promoted_at   REAL,
    n_promoted    INTEGER NOT NULL DEFAULT 0,
    purged_at     REAL
);
CREATE INDEX IF NOT EXISTS sessions_channel ON sessions(channel, state, last_turn_at);
CREATE INDEX IF NOT EXISTS sessions_state ON sessions(namespace, state, last_turn_at);
CREATE TABLE IF NOT EXISTS session_turns (
    session_id  TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    user_text   TEXT NOT NULL,
    assistant   TEXT NOT NULL,
    at          REAL NOT NULL,
    vec         BLOB,
    source      TEXT,
    pinned      REAL,
    importance  REAL,
    signals     TEXT,
    memory_key  TEXT,
    PRIMARY KEY (session_id, idx)
);
CREATE INDEX IF NOT EXISTS session_turns_at ON session_turns(at);
CREATE UNIQUE INDEX IF NOT EXISTS session_turns_source ON session_turns(source) WHERE source IS NOT NULL
"""

# Version 7: the counts of every namespace prefix (kept by the same writes as the counts of version 2).
_V7_PREFIX_COUNTS = """
CREATE TABLE IF NOT EXISTS prefix_counts (
    collection  TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    n_items     INTEGER NOT NULL DEFAULT 0,
    n_vectors   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (collection, prefix)
) WITHOUT ROWID
"""


# Version 9: the evidence end of each item (research items: the last market date of the data behind it).
_V9_EVIDENCE = """
CREATE TABLE IF NOT EXISTS evidence_ends (
    uid           TEXT PRIMARY KEY,
    item_id       TEXT NOT NULL,
    evidence_end  TEXT,
    seq           INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_ends_item ON evidence_ends(item_id);
CREATE INDEX IF NOT EXISTS evidence_ends_seq ON evidence_ends(seq)
"""


# Version 10: past versions. ``valid_from`` of an item is NULL until its first write under version 10. One index:
# an item's versions by its uid (its history, a get as of a moment); a search as of a moment reads the history's
# arrays, loaded once by id (`catalog.past_versions`).
_V10_HISTORY = """
CREATE TABLE IF NOT EXISTS item_history (
    id          INTEGER PRIMARY KEY,
    item_id     INTEGER NOT NULL,
    uid         TEXT NOT NULL,
    ns          TEXT NOT NULL,
    key         TEXT NOT NULL,
    collection  TEXT NOT NULL,
    value       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    expires_at  REAL,
    status      TEXT,
    valid_from  REAL NOT NULL,
    valid_to    REAL NOT NULL,
    change      TEXT NOT NULL,
    thread_id   TEXT,
    run_id      TEXT,
    n_vectors   INTEGER NOT NULL DEFAULT 0,
    vec         BLOB
);
CREATE INDEX IF NOT EXISTS item_history_uid ON item_history(uid, valid_to);
CREATE TABLE IF NOT EXISTS history_vectors (
    history_id  INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    path        TEXT NOT NULL,
    vec         BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS history_vectors_of ON history_vectors(history_id, idx)
"""

# Version 11: item_history loses its index by end (valid_to, ns, valid_from, item_id). Every put replacing a value
# inserted into it: one page of the 3.5 more that a put's commits wrote with history kept (28.25 against 24.75 WAL
# frames per put, 10,000 items), for reads that the history's arrays in memory answer (which namespaces had items
# at a moment), that the uid index serves as well (copying a version's vectors), or that are maintenance (pruning).
_V11_NO_END_INDEX = "DROP INDEX IF EXISTS item_history_valid"

# Version 12: item_history loses its index by item (uid, valid_to), a B-tree insert at a random place for every
# change (1.5 of the 2.7 WAL pages the history added to a put, and about 10 us of its statement at 100,000
# items): an item's versions are a chain from its newest (`langgraph_memory.catalog.history`).
_V12_CHAINS = """
CREATE TABLE IF NOT EXISTS history_heads (
    uid         TEXT PRIMARY KEY,
    history_id  INTEGER NOT NULL
) WITHOUT ROWID;
DROP INDEX IF EXISTS item_history_uid
"""


def _fill_prefix_counts(conn: sqlite3.Connection) -> None:
    """Sum the namespaces' counts into ``prefix_counts`` (a file that had items before version 7)."""
    rows = conn.execute("SELECT ns, collection, n_items, n_vectors FROM namespaces WHERE n_items > 0 OR n_vectors > 0")
    conn.execute("DELETE FROM prefix_counts")
    conn.executemany(
        "INSERT INTO prefix_counts(collection, prefix, n_items, n_vectors) VALUES (?, ?, ?, ?)",
        _items.prefix_count_rows(rows),
    )


_MIGRATIONS: dict[int, str] = {
    1: _V1,
    2: _V2_COUNTS,
    3: _V3_STATUS,
    4: _V4_FILES,
    5: _V5_KEYWORDS,
    6: _V6_SESSIONS,
    7: _V7_PREFIX_COUNTS,
    8: "",
    9: _V9_EVIDENCE,
    10: _V10_HISTORY,
    11: _V11_NO_END_INDEX,
    12: _V12_CHAINS,
}
#: Columns a version adds to existing tables, added only where missing (SQLite has no ADD COLUMN IF NOT EXISTS).
_COLUMNS: dict[int, list[tuple[str, str]]] = {
    10: [("items", "valid_from REAL")],
    12: [("items", "history_id INTEGER"), ("item_history", "prev_id INTEGER")],
}
#: Data steps after a version's DDL, for files that had rows before it (not run on a new file).
_BACKFILLS: dict[int, Callable[[sqlite3.Connection], object]] = {
    5: _keywords.rebuild,
    7: _fill_prefix_counts,
    8: _vectors.move_into_runs,
    12: _history.link_chains,
}


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to `SCHEMA_VERSION`; call inside a write transaction.

    Returns the version the file had before (0 for a new file).

    Raises:
        MigrationError: the file was written by a newer version of the package.
    """
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found > SCHEMA_VERSION:
        raise MigrationError(
            f"the catalog has schema version {found}, newer than this package's {SCHEMA_VERSION}: it was written "
            "by a newer release; upgrade langgraph-chroma-memory (pip install -U langgraph-chroma-memory)"
        )
    for version in range(found + 1, SCHEMA_VERSION + 1):
        for table, column in _COLUMNS.get(version, []):
            if column.split()[0] not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        for stmt in _MIGRATIONS[version].split(";"):
            if stmt.strip():
                conn.execute(stmt)
        if found and version in _BACKFILLS:
            _BACKFILLS[version](conn)
    if found != SCHEMA_VERSION:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return found
