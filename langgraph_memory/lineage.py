"""Lineage: which memory led to which, and the versions of each strategy.

Edges live in a small SQLite file beside the store (``<data_dir>/lineage.sqlite``),
so lineage survives restarts and several processes may write at once. Every
write runs in one ``BEGIN IMMEDIATE`` transaction: the cycle check (a
recursive query over the ancestors of the parent) and the version number of
a strategy are decided inside it, so two processes can neither jointly create
a cycle nor hand out the same version twice::

    from langgraph_memory.lineage import LineageStore

    with LineageStore("/tmp/lgm-demo/lineage.sqlite") as lin:
        lin.register("f1", "research_findings", ("research",))
        lin.register("s1", "strategy_library", ("strategies",),
                     parents=[("f1", "derived_from")], version_name="momentum")
        print([e.parent_id for e in lin.parents("s1")])    # ['f1']
        print(lin.versions("momentum"))                       # [VersionRow(name='momentum', version=1, ...)]

Ids are the item keys (UUIDs). Items are never removed from the lineage file
when they are archived, so the lineage of an archived ancestor stays intact.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langgraph_memory import _sqlite
from langgraph_memory.config import LINEAGE_FILE, LOCK_TIMEOUT_SECONDS
from langgraph_memory.errors import LineageCycleError, LineageError, LockTimeoutError, NotFoundError

__all__ = [
    "LineageStore",
    "Edge",
    "ItemRef",
    "VersionRow",
    "LineageNode",
    "LineageTree",
    "Lineage",
    "LINEAGE_FILE",
    "build_lineage",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id          TEXT PRIMARY KEY,
    collection  TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT,
    version     INTEGER,
    created_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    child_id           TEXT NOT NULL,
    parent_id          TEXT NOT NULL,
    relation           TEXT NOT NULL,
    child_collection   TEXT,
    parent_collection  TEXT,
    created_at         REAL NOT NULL,
    PRIMARY KEY (child_id, parent_id, relation)
);
CREATE INDEX IF NOT EXISTS edges_parent ON edges(parent_id);
CREATE TABLE IF NOT EXISTS versions (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    created_at  REAL NOT NULL,
    PRIMARY KEY (name, version)
);
"""

# Every ancestor of :start (UNION, not UNION ALL: terminates even on a corrupt file).
_ANCESTORS_SQL = """
WITH RECURSIVE anc(id, depth) AS (
    SELECT parent_id, 1 FROM edges WHERE child_id = :start
    UNION
    SELECT e.parent_id, anc.depth + 1 FROM edges e JOIN anc ON e.child_id = anc.id
    WHERE anc.depth < :max_depth
)
SELECT id, MAX(depth) AS depth FROM anc GROUP BY id
"""

_IS_ANCESTOR_SQL = """
WITH RECURSIVE anc(id) AS (
    SELECT parent_id FROM edges WHERE child_id = :start
    UNION
    SELECT e.parent_id FROM edges e JOIN anc ON e.child_id = anc.id
)
SELECT 1 FROM anc WHERE id = :target LIMIT 1
"""

_MAX_DEPTH = 10_000


@dataclass(frozen=True)
class Edge:
    """One link: ``child_id`` came from ``parent_id`` (``relation`` says how)."""

    child_id: str
    parent_id: str
    relation: str
    child_collection: str | None
    parent_collection: str | None
    created_at: float


@dataclass(frozen=True)
class ItemRef:
    """Where a registered item lives: its collection and namespace."""

    id: str
    collection: str
    namespace: tuple[str, ...]
    name: str | None = None
    version: int | None = None
    created_at: float = 0.0


@dataclass(frozen=True)
class VersionRow:
    """One version of a named strategy, as recorded in the lineage file."""

    name: str
    version: int
    id: str
    created_at: float


@dataclass
class LineageNode:
    """An item seen from the lineage: where it lives and what it says.

    ``status`` is ``"live"`` (in the store), ``"archived"`` (found in the
    archive) or ``"unknown"`` (neither: deleted, or archived with no archive
    lookup available). ``relation`` is how this node relates to the one it
    was reached from (for ancestors: set on direct parents only); ``depth``
    counts hops from the item asked about (negative for ancestors).
    """

    id: str
    collection: str | None
    namespace: tuple[str, ...] | None
    summary: str
    status: Literal["live", "archived", "unknown"] = "unknown"
    relation: str | None = None
    depth: int = 0
    name: str | None = None
    version: int | None = None


@dataclass
class LineageTree:
    """A node and the items derived from it (``children``), recursively."""

    node: LineageNode
    children: list[LineageTree] = field(default_factory=list)

    def walk(self) -> Iterator[LineageNode]:
        """Every node of the tree, depth first (the root first)."""
        yield self.node
        for child in self.children:
            yield from child.walk()


@dataclass
class Lineage:
    """The lineage of one item: ``ancestors`` (root first) and ``descendants`` (a tree).

    ``parents`` are the direct parents with their relation. The item itself
    is ``item`` and the root of ``descendants``.
    """

    item: LineageNode
    ancestors: list[LineageNode]
    parents: list[Edge]
    descendants: LineageTree

    @property
    def ancestor_ids(self) -> list[str]:
        return [a.id for a in self.ancestors]

    @property
    def descendant_ids(self) -> list[str]:
        return [n.id for n in self.descendants.walk()][1:]


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LineageError(f"{what} must be a non-empty string id, got {value!r}")
    return value


class LineageStore:
    """Parents, children and strategy versions in one SQLite file.

    Safe to share between threads (one connection behind a lock) and between
    processes (WAL mode; writes wait up to ``busy_timeout`` seconds for
    another process, then raise :class:`~langgraph_memory.errors.LockTimeoutError`).

    Args:
        path: the SQLite file (created with its folder if missing).
        busy_timeout: seconds to wait for another writer.

    Example:
        >>> import tempfile, os
        >>> lin = LineageStore(os.path.join(tempfile.mkdtemp(), "lineage.sqlite"))
        >>> lin.register("a", "memories", ("notes",))
        >>> lin.register("b", "memories", ("notes",), parents=[("a", "derived_from")])
        >>> [n.id for n in lin.ancestors("b")]
        ['a']
        >>> lin.close()
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout = float(busy_timeout)
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = _sqlite.connect(self.path, timeout=self.busy_timeout)
        with self._write() as conn:
            # executescript would COMMIT on its own; run the statements inside our transaction.
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)

    @classmethod
    def for_data_dir(cls, data_dir: str | os.PathLike[str], **kwargs: Any) -> LineageStore:
        """Open ``<data_dir>/lineage.sqlite``."""
        return cls(Path(data_dir) / LINEAGE_FILE, **kwargs)

    # ------------------------------------------------------------ plumbing

    @property
    def closed(self) -> bool:
        return self._conn is None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LineageError(f"the lineage file {self.path} is closed; open a new Memory or LineageStore")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: other processes wait, then see it whole."""
        with self._mutex:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                # Another connection's lock. Besides is_lock_error's messages, SQLITE_LOCKED also reads
                # "database schema is locked: main" when the process turned on shared-cache mode
                # (sqlite3.enable_shared_cache) and another connection holds an uncommitted schema change.
                code = exc.sqlite_errorcode or 0
                if _sqlite.is_lock_error(exc) or code & 0xFF == sqlite3.SQLITE_LOCKED:
                    raise LockTimeoutError(
                        f"the lineage file {self.path} stayed locked by another process for "
                        f"{self.busy_timeout:.0f} s; retry, or raise busy_timeout"
                    ) from exc
                raise
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def _read(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with self._mutex:
            return list(self._connection().execute(sql, params))

    def close(self) -> None:
        """Close the file. Further calls raise :class:`LineageError`."""
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- writes

    def register(
        self,
        item_id: str,
        collection: str,
        namespace: Sequence[str],
        *,
        parents: Iterable[tuple[str, str]] = (),
        name: str | None = None,
        version_name: str | None = None,
        link_previous_version: bool = True,
    ) -> int | None:
        """Record a new item, its parents, and (``version_name``) its version number.

        Everything happens in one transaction: parents must be known items,
        no link may close a cycle, and the version is the next free number
        for ``version_name`` (1 for a new name). With ``link_previous_version``
        the previous version becomes a parent (relation ``"previous_version"``).
        Returns the version number, or None without ``version_name``.

        Raises:
            LineageError: a parent is unknown or an id is empty.
            LineageCycleError: a link would make an item its own ancestor.
        """
        item_id = _check_id(item_id, "item id")
        parent_list = [(_check_id(p, "parent id"), str(rel)) for p, rel in parents]
        now = time.time()
        with self._write() as conn:
            version: int | None = None
            if version_name is not None:
                row = conn.execute(
                    "SELECT version, id FROM versions WHERE name = ? ORDER BY version DESC LIMIT 1", (version_name,)
                ).fetchone()
                existing = conn.execute("SELECT version FROM versions WHERE id = ?", (item_id,)).fetchone()
                if existing is not None:
                    version = int(existing[0])
                else:
                    version = (int(row[0]) + 1) if row else 1
                    conn.execute(
                        "INSERT INTO versions(name, version, id, created_at) VALUES (?, ?, ?, ?)",
                        (version_name, version, item_id, now),
                    )
                    if row is not None and link_previous_version and row[1] != item_id:
                        parent_list.append((row[1], "previous_version"))
            conn.execute(
                "INSERT INTO items(id, collection, namespace, name, version, created_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET collection = excluded.collection, namespace = excluded.namespace, "
                "name = COALESCE(excluded.name, items.name), version = COALESCE(excluded.version, items.version)",
                (item_id, collection, json.dumps(list(namespace)), name or version_name, version, now),
            )
            for parent_id, relation in parent_list:
                self._link_in(conn, item_id, parent_id, relation, collection, now)
        return version

    def link(self, child_id: str, parent_id: str, relation: str = "derived_from") -> Edge:
        """Record that ``child_id`` came from ``parent_id``; both must be registered.

        Idempotent for the same (child, parent, relation).

        Raises:
            LineageError: either id is unknown.
            LineageCycleError: ``child_id`` is ``parent_id`` or one of its ancestors.
        """
        child_id = _check_id(child_id, "child id")
        parent_id = _check_id(parent_id, "parent id")
        now = time.time()
        with self._write() as conn:
            row = conn.execute("SELECT collection FROM items WHERE id = ?", (child_id,)).fetchone()
            if row is None:
                raise LineageError(
                    f"unknown item {child_id!r}: only items stored through Memory (or registered) can be linked"
                )
            return self._link_in(conn, child_id, parent_id, relation, row[0], now)

    def _link_in(
        self, conn: sqlite3.Connection, child_id: str, parent_id: str, relation: str, child_collection: str, now: float
    ) -> Edge:
        prow = conn.execute("SELECT collection FROM items WHERE id = ?", (parent_id,)).fetchone()
        if prow is None:
            raise LineageError(
                f"unknown parent {parent_id!r}: store the parent through Memory first, or check the id"
            )
        if child_id == parent_id:
            raise LineageCycleError(f"item {child_id!r} cannot be its own parent")
        hit = conn.execute(_IS_ANCESTOR_SQL, {"start": parent_id, "target": child_id}).fetchone()
        if hit is not None:
            raise LineageCycleError(
                f"linking {child_id!r} under {parent_id!r} would make a cycle: {child_id!r} is already an "
                f"ancestor of {parent_id!r}"
            )
        conn.execute(
            "INSERT OR IGNORE INTO edges(child_id, parent_id, relation, child_collection, parent_collection, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (child_id, parent_id, relation, child_collection, prow[0], now),
        )
        return Edge(child_id, parent_id, relation, child_collection, prow[0], now)

    def forget(self, item_id: str) -> None:
        """Remove an item, its edges and its version row (used to undo a failed write)."""
        with self._write() as conn:
            conn.execute("DELETE FROM edges WHERE child_id = ? OR parent_id = ?", (item_id, item_id))
            conn.execute("DELETE FROM versions WHERE id = ?", (item_id,))
            conn.execute("DELETE FROM items WHERE id = ?", (item_id,))

    # --------------------------------------------------------------- reads

    def item(self, item_id: str) -> ItemRef | None:
        """Where ``item_id`` lives, or None if it was never registered."""
        rows = self._read(
            "SELECT id, collection, namespace, name, version, created_at FROM items WHERE id = ?", (item_id,)
        )
        return _ref(rows[0]) if rows else None

    def items(self, item_ids: Iterable[str]) -> dict[str, ItemRef]:
        """``item()`` for many ids at once (unknown ids are left out)."""
        ids = list(dict.fromkeys(item_ids))
        out: dict[str, ItemRef] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._read(
                f"SELECT id, collection, namespace, name, version, created_at FROM items WHERE id IN ({marks})", chunk
            ):
                out[row[0]] = _ref(row)
        return out

    def require(self, item_id: str) -> ItemRef:
        """``item()``, raising :class:`NotFoundError` for an unknown id."""
        ref = self.item(item_id)
        if ref is None:
            raise NotFoundError(f"no item with id {item_id!r} was stored through this Memory's data directory")
        return ref

    def parents(self, item_id: str) -> list[Edge]:
        """Direct parents of ``item_id`` (oldest link first)."""
        return [
            Edge(*row)
            for row in self._read(
                "SELECT child_id, parent_id, relation, child_collection, parent_collection, created_at "
                "FROM edges WHERE child_id = ? ORDER BY created_at, parent_id",
                (item_id,),
            )
        ]

    def children(self, item_id: str) -> list[Edge]:
        """Direct children of ``item_id`` (oldest link first)."""
        return [
            Edge(*row)
            for row in self._read(
                "SELECT child_id, parent_id, relation, child_collection, parent_collection, created_at "
                "FROM edges WHERE parent_id = ? ORDER BY created_at, child_id",
                (item_id,),
            )
        ]

    def ancestor_depths(self, item_id: str) -> dict[str, int]:
        """Every ancestor of ``item_id`` and its longest distance (1 = parent)."""
        return {
            row[0]: int(row[1])
            for row in self._read(_ANCESTORS_SQL, {"start": item_id, "max_depth": _MAX_DEPTH})
        }

    def ancestors(self, item_id: str) -> list[ItemRef]:
        """Ancestors root first: the farthest first, then by creation time."""
        return self._ordered_ancestors(self.ancestor_depths(item_id))

    def _ordered_ancestors(self, depths: dict[str, int]) -> list[ItemRef]:
        """The refs of ``ancestor_depths`` root first: the farthest first, then by creation time."""
        refs = self.items(depths)
        order = sorted(depths, key=lambda i: (-depths[i], refs[i].created_at if i in refs else 0.0, i))
        return [refs.get(i) or ItemRef(i, "", ()) for i in order]

    def versions(self, name: str) -> list[VersionRow]:
        """Versions of ``name``, oldest first (empty for an unknown name)."""
        return [
            VersionRow(*row)
            for row in self._read(
                "SELECT name, version, id, created_at FROM versions WHERE name = ? ORDER BY version", (name,)
            )
        ]

    def edge_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM edges")[0][0])


# A summariser gets the refs of items and returns, per id it knows, (summary, status).
Summarizer = Callable[[list[ItemRef]], dict[str, tuple[str, str]]]


def build_lineage(lineage: LineageStore, item_id: str, summarize: Summarizer, *, max_nodes: int = 2000) -> Lineage:
    """Assemble a :class:`Lineage` for ``item_id`` with summaries from ``summarize``.

    An item reached twice in the descendant tree (several parents) is shown
    each time but expanded only once; the tree holds at most ``max_nodes``.
    """
    me = lineage.require(item_id)
    depths = lineage.ancestor_depths(item_id)
    anc_refs = lineage._ordered_ancestors(depths)
    # Breadth-first over children, collecting edges, before summarising in one go.
    child_edges: dict[str, list[Edge]] = {}
    frontier = [item_id]
    seen = {item_id}
    total = 1
    while frontier and total < max_nodes:
        nxt: list[str] = []
        for node_id in frontier:
            edges = lineage.children(node_id)
            child_edges[node_id] = edges
            for e in edges:
                total += 1
                if e.child_id not in seen:
                    seen.add(e.child_id)
                    nxt.append(e.child_id)
        frontier = nxt
    refs = {me.id: me, **{r.id: r for r in anc_refs if r.collection}}
    refs.update(lineage.items(seen - refs.keys()))
    summaries = summarize(list(refs.values()))

    def node(ref_id: str, relation: str | None, depth: int) -> LineageNode:
        ref = refs.get(ref_id)
        summary, status = summaries.get(ref_id, (ref_id, "unknown"))
        return LineageNode(
            id=ref_id,
            collection=ref.collection if ref else None,
            namespace=ref.namespace if ref else None,
            summary=summary,
            status=status,  # type: ignore[arg-type]
            relation=relation,
            depth=depth,
            name=ref.name if ref else None,
            version=ref.version if ref else None,
        )

    parents = lineage.parents(item_id)
    direct: dict[str, str] = {}
    for e in parents:
        direct[e.parent_id] = f"{direct[e.parent_id]}, {e.relation}" if e.parent_id in direct else e.relation
    ancestors = [node(r.id, direct.get(r.id), -depths.get(r.id, 0)) for r in anc_refs]

    expanded: set[str] = set()

    def tree(node_id: str, relation: str | None, depth: int) -> LineageTree:
        t = LineageTree(node(node_id, relation, depth))
        if node_id in expanded:
            return t
        expanded.add(node_id)
        # One child linked by several relations (derived_from and resolves) shows once.
        merged: dict[str, list[str]] = {}
        for e in child_edges.get(node_id, []):
            merged.setdefault(e.child_id, []).append(e.relation)
        t.children = [tree(cid, ", ".join(rels), depth + 1) for cid, rels in merged.items()]
        return t

    return Lineage(item=node(item_id, None, 0), ancestors=ancestors, parents=parents, descendants=tree(item_id, None, 0))


def _ref(row: tuple[Any, ...]) -> ItemRef:
    return ItemRef(
        id=row[0],
        collection=row[1],
        namespace=tuple(json.loads(row[2])),
        name=row[3],
        version=row[4],
        created_at=float(row[5]),
    )
