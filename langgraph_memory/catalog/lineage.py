"""Lineage rows in the catalog: nodes, edges and strategy versions.

Functions over a connection, so the typed API registers an item's lineage
and version in the same transaction as the item itself: either all of it
commits or none of it does. The cycle check (an iterative walk over the
parent's ancestors) and the next version number are decided inside that
transaction, so two processes can neither jointly create a cycle nor hand
out one version twice. Nodes outlive their items: the lineage of an archived
ancestor stays whole.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.write() as conn:
    ...     _ = register(conn, "f1", "research_findings", ("research",))
    ...     register(conn, "s1", "strategy_library", ("strategies",), parents=[("f1", "derived_from")],
    ...              version_name="momentum")
    1
    >>> with cat.read() as conn:
    ...     [e.parent_id for e in parents(conn, "s1")], ancestor_depths(conn, "s1")
    (['f1'], {'f1': 1})
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog.connection import POSTGRESQL, Sql, both, dialect_of
from langgraph_memory.catalog.item_rows import chunked, rows_in
from langgraph_memory.errors import LineageCycleError, LineageError

__all__ = [
    "Edge",
    "ItemRef",
    "VersionRow",
    "register",
    "link",
    "forget",
    "node",
    "nodes",
    "parents",
    "children",
    "ancestor_depths",
    "versions",
    "version_id",
    "edge_count",
    "check_id",
    "parents_of",
    "versions_of",
    "LineageImport",
    "import_rows",
]

_EDGE_COLS = "child_id, parent_id, relation, child_collection, parent_collection, created_at"
_NODE_COLS = "id, collection, namespace, name, version, created_at"
# Lineage only grows: a row already here is kept.
_ADD_EDGE = Sql(
    f"INSERT OR IGNORE INTO lineage_edges({_EDGE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
    f"INSERT INTO lineage_edges({_EDGE_COLS}) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
)
_ADD_NODE = Sql(
    f"INSERT OR IGNORE INTO lineage_nodes({_NODE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
    f"INSERT INTO lineage_nodes({_NODE_COLS}) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
)


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
    """One version of a named strategy."""

    name: str
    version: int
    id: str
    created_at: float


def check_id(value: Any, what: str) -> str:
    """``value`` if it is a non-empty string id, else [`LineageError`][langgraph_memory.errors.LineageError]."""
    if not isinstance(value, str) or not value.strip():
        raise LineageError(f"{what} must be a non-empty string id, got {value!r}")
    return value


def _ref(row: Sequence[Any]) -> ItemRef:
    return ItemRef(
        id=row[0],
        collection=row[1],
        namespace=tuple(json.loads(row[2])),
        name=row[3],
        version=row[4],
        created_at=float(row[5]),
    )


# ---------------------------------------------------------------------- writes


# Before a version is allocated: the item's own version (if it has one), the newest version of the name with
# its lineage collection, and whether the item already has children (only then can a new link close a cycle).
_VERSION_STATE = Sql.both(
    "SELECT (SELECT version FROM versions WHERE id = ?), v.version, v.id, n.collection,"
    " (SELECT 1 FROM lineage_edges WHERE parent_id = ? LIMIT 1)"
    " FROM (SELECT 1 AS one) o"
    " LEFT JOIN (SELECT version, id FROM versions WHERE name = ? ORDER BY version DESC LIMIT 1) v ON 1 = 1"
    " LEFT JOIN lineage_nodes n ON n.id = v.id"
)


def register(
    conn: sqlite3.Connection,
    item_id: str,
    collection: str,
    namespace: Sequence[str],
    *,
    parents: Iterable[tuple[str, str]] = (),
    name: str | None = None,
    version_name: str | None = None,
    link_previous_version: bool = True,
    evidence_end: date | None = None,
) -> int | None:
    """Record a node, its parents and (``version_name``) its version; inside a write transaction.

    The item's evidence end (`langgraph_memory.catalog.evidence`) becomes the latest of ``evidence_end``
    (the last market date of its own data, if it has any) and its parents'. Returns the version number,
    or None without ``version_name``.

    Raises:
        LineageError: a parent is unknown or an id is empty.
        LineageCycleError: a link would make an item its own ancestor.
    """
    item_id = check_id(item_id, "item id")
    parent_list = [(check_id(p, "parent id"), str(rel)) for p, rel in parents]
    now = time.time()
    if (version_name is not None or parent_list) and dialect_of(conn) == POSTGRESQL:
        # What follows reads what other writers change (versions, parents): under the write lock, which a
        # write opened with ``late=True`` has not taken yet.
        conn.order_now()  # type: ignore[attr-defined]
    version: int | None = None
    known: dict[str, str] = {}  # parents' collections, read with the version
    has_children: bool | None = None
    if version_name is not None:
        # One statement: on a server every read here is a round trip made while the write lock is held.
        existing, latest, latest_id, latest_collection, child_edge = conn.execute(
            _VERSION_STATE.of(conn), (item_id, item_id, version_name)
        ).fetchone()
        has_children = child_edge is not None
        if existing is not None:
            version = int(existing)
        else:
            version = (int(latest) + 1) if latest is not None else 1
            conn.execute(
                both(conn, "INSERT INTO versions(name, version, id, created_at) VALUES (?, ?, ?, ?)"),
                (version_name, version, item_id, now),
            )
            if latest is not None and link_previous_version and latest_id != item_id:
                parent_list.append((latest_id, "previous_version"))
                if latest_collection is not None:
                    known[latest_id] = latest_collection
    conn.execute(
        both(
            conn,
            "INSERT INTO lineage_nodes(id, collection, namespace, name, version, created_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET collection = excluded.collection, namespace = excluded.namespace, "
            "name = COALESCE(excluded.name, lineage_nodes.name), version = COALESCE(excluded.version, lineage_nodes.version)",
        ),
        (item_id, collection, json.dumps(list(namespace)), name or version_name, version, now),
    )
    for parent_id, relation in parent_list:
        _link(conn, item_id, parent_id, relation, collection, now, known.get(parent_id), has_children)
    if parent_list or evidence_end is not None:
        _evidence.note(conn, namespace, item_id, evidence_end)
    return version


def link(conn: sqlite3.Connection, child_id: str, parent_id: str, relation: str = "derived_from") -> Edge:
    """Record that ``child_id`` came from ``parent_id`` (both registered); inside a write transaction."""
    child_id = check_id(child_id, "child id")
    parent_id = check_id(parent_id, "parent id")
    row = conn.execute(both(conn, "SELECT collection FROM lineage_nodes WHERE id = ?"), (child_id,)).fetchone()
    if row is None:
        raise LineageError(f"unknown item {child_id!r}: only items stored through Memory (or registered) can be linked")
    edge = _link(conn, child_id, parent_id, relation, row[0], time.time())
    # Lineage grew after the fact: the child (and what derives from it) now rests on the parent's data too.
    _evidence.follow(conn, child_id, parent_id)
    return edge


def _is_ancestor(conn: sqlite3.Connection, start: str, target: str) -> bool:
    """Whether ``target`` is ``start`` or one of its ancestors (an iterative walk, any depth)."""
    seen = {start}
    frontier = [start]
    while frontier:
        if target in seen:
            return True
        nxt: list[str] = []
        for chunk in chunked(frontier):
            marks = ",".join("?" * len(chunk))
            for (pid,) in conn.execute(
                both(conn, f"SELECT DISTINCT parent_id FROM lineage_edges WHERE child_id IN ({marks})"), tuple(chunk)
            ):
                if pid not in seen:
                    seen.add(pid)
                    nxt.append(pid)
        frontier = nxt
    return target in seen


def _link(
    conn: sqlite3.Connection,
    child_id: str,
    parent_id: str,
    relation: str,
    child_collection: str,
    now: float,
    parent_collection: str | None = None,
    child_has_children: bool | None = None,
) -> Edge:
    """Insert one edge; ``parent_collection`` and ``child_has_children``, when the caller read them, save reads."""
    prow = (
        (parent_collection,)
        if parent_collection is not None
        else conn.execute(both(conn, "SELECT collection FROM lineage_nodes WHERE id = ?"), (parent_id,)).fetchone()
    )
    if prow is None:
        raise LineageError(f"unknown parent {parent_id!r}: store the parent through Memory first, or check the id")
    if child_id == parent_id:
        raise LineageCycleError(f"item {child_id!r} cannot be its own parent")
    # A child with no children of its own (every newly stored item) cannot close a cycle: this skips
    # a walk over all of the parent's ancestors, which made building a long chain quadratic.
    has_children = (
        child_has_children
        if child_has_children is not None
        else conn.execute(both(conn, "SELECT 1 FROM lineage_edges WHERE parent_id = ? LIMIT 1"), (child_id,)).fetchone()
        is not None
    )
    if has_children and _is_ancestor(conn, parent_id, child_id):
        raise LineageCycleError(
            f"linking {child_id!r} under {parent_id!r} would make a cycle: {child_id!r} is already an "
            f"ancestor of {parent_id!r}"
        )
    conn.execute(
        _ADD_EDGE.of(conn),
        (child_id, parent_id, relation, child_collection, prow[0], now),
    )
    return Edge(child_id, parent_id, relation, child_collection, prow[0], now)


def forget(conn: sqlite3.Connection, item_ids: Iterable[str]) -> None:
    """Remove nodes, their edges and their version rows, and forget their evidence ends (a hard delete)."""
    item_ids = list(item_ids)
    for chunk in chunked(item_ids):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            both(conn, f"DELETE FROM lineage_edges WHERE child_id IN ({marks}) OR parent_id IN ({marks})"),
            (*chunk, *chunk),
        )
        conn.execute(both(conn, f"DELETE FROM versions WHERE id IN ({marks})"), tuple(chunk))
        conn.execute(both(conn, f"DELETE FROM lineage_nodes WHERE id IN ({marks})"), tuple(chunk))
    _evidence.forget(conn, item_ids)


# ----------------------------------------------------------------------- reads


def node(conn: sqlite3.Connection, item_id: str) -> ItemRef | None:
    row = conn.execute(both(conn, f"SELECT {_NODE_COLS} FROM lineage_nodes WHERE id = ?"), (item_id,)).fetchone()
    return _ref(row) if row else None


def nodes(conn: sqlite3.Connection, item_ids: Iterable[str]) -> dict[str, ItemRef]:
    return {
        row[0]: _ref(row)
        for row in rows_in(conn, f"SELECT {_NODE_COLS} FROM lineage_nodes WHERE id IN ({{marks}})", item_ids)
    }


def parents(conn: sqlite3.Connection, item_id: str) -> list[Edge]:
    return [
        Edge(*row)
        for row in conn.execute(
            both(conn, f"SELECT {_EDGE_COLS} FROM lineage_edges WHERE child_id = ? ORDER BY created_at, parent_id"),
            (item_id,),
        )
    ]


def children(conn: sqlite3.Connection, item_ids: Sequence[str]) -> dict[str, list[Edge]]:
    """Direct children of each id (oldest link first)."""
    out: dict[str, list[Edge]] = {i: [] for i in item_ids}
    for chunk in chunked(list(item_ids)):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            both(
                conn,
                f"SELECT {_EDGE_COLS} FROM lineage_edges WHERE parent_id IN ({marks}) ORDER BY created_at, child_id",
            ),
            tuple(chunk),
        ):
            e = Edge(*row)
            out[e.parent_id].append(e)
    return out


def ancestor_depths(conn: sqlite3.Connection, item_id: str, *, max_depth: int = 100_000) -> dict[str, int]:
    """Every ancestor of ``item_id`` and its longest distance (1 = parent); iterative, any depth.

    Longest distance orders a diamond's root before both branches. Computed
    by relaxing depths breadth first; each edge is followed at most once per
    improvement, and ``max_depth`` stops a damaged file with a cycle.
    """
    depths: dict[str, int] = {}
    frontier = {item_id: 0}
    while frontier:
        nxt: dict[str, int] = {}
        ids = list(frontier)
        for chunk in chunked(ids):
            marks = ",".join("?" * len(chunk))
            for child, parent in conn.execute(
                both(conn, f"SELECT child_id, parent_id FROM lineage_edges WHERE child_id IN ({marks})"), tuple(chunk)
            ):
                d = frontier[child] + 1
                if d > max_depth or parent == item_id:
                    continue
                if d > depths.get(parent, 0):
                    depths[parent] = d
                    nxt[parent] = max(nxt.get(parent, 0), d)
        frontier = nxt
    return depths


def versions(conn: sqlite3.Connection, name: str) -> list[VersionRow]:
    """Versions of ``name``, oldest first (empty for an unknown name)."""
    return [
        VersionRow(*row)
        for row in conn.execute(
            both(conn, "SELECT name, version, id, created_at FROM versions WHERE name = ? ORDER BY version"), (name,)
        )
    ]


def version_id(conn: sqlite3.Connection, name: str, version: int) -> str | None:
    """The id of version ``version`` of ``name``, or None."""
    row = conn.execute(both(conn, "SELECT id FROM versions WHERE name = ? AND version = ?"), (name, version)).fetchone()
    return None if row is None else str(row[0])


def edge_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute(both(conn, "SELECT COUNT(*) FROM lineage_edges")).fetchone()[0])


# ---------------------------------------------------------------- bundles


def parents_of(conn: sqlite3.Connection, item_ids: Sequence[str]) -> list[Edge]:
    """The parent edges of several items (oldest link first), for a share bundle."""
    out: list[Edge] = []
    for chunk in chunked(list(dict.fromkeys(item_ids))):
        marks = ",".join("?" * len(chunk))
        out.extend(
            Edge(*row)
            for row in conn.execute(
                both(
                    conn,
                    f"SELECT {_EDGE_COLS} FROM lineage_edges WHERE child_id IN ({marks}) ORDER BY created_at, parent_id",
                ),
                tuple(chunk),
            )
        )
    return out


def versions_of(conn: sqlite3.Connection, item_ids: Sequence[str]) -> dict[str, VersionRow]:
    """The version rows of several items, by item id (items without a version are left out)."""
    out: dict[str, VersionRow] = {}
    for chunk in chunked(list(dict.fromkeys(item_ids))):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            both(conn, f"SELECT name, version, id, created_at FROM versions WHERE id IN ({marks})"), tuple(chunk)
        ):
            out[row[2]] = VersionRow(*row)
    return out


@dataclass
class LineageImport:
    """What `import_rows()` added, and what it could not add as it was."""

    nodes: int = 0
    edges: int = 0
    versions: int = 0
    #: edges left out because they would have closed a cycle with the lineage already here.
    cycles: list[Edge] = field(default_factory=list)
    #: item id -> (version in the bundle, version given here): the bundle's number was taken.
    renumbered: dict[str, tuple[int, int]] = field(default_factory=dict)


def import_rows(
    conn: sqlite3.Connection, nodes: Iterable[ItemRef], edges: Iterable[Edge], versions: Iterable[VersionRow]
) -> LineageImport:
    """Merge another catalog's lineage rows, times kept; inside a write transaction.

    Nodes and edges already here are kept as they are (lineage only grows).
    A version row whose item already has one is skipped; one whose
    ``(name, version)`` is taken by another item here is given the next free
    number (reported in ``renumbered``). An edge whose ends are unknown, or
    that would make an item its own ancestor, is left out (``cycles``).
    """
    out = LineageImport()
    for n in nodes:
        cur = conn.execute(
            _ADD_NODE.of(conn),
            (n.id, n.collection, json.dumps(list(n.namespace)), n.name, n.version, n.created_at),
        )
        out.nodes += cur.rowcount
    for v in versions:
        if conn.execute(both(conn, "SELECT 1 FROM versions WHERE id = ?"), (v.id,)).fetchone():
            continue
        number = v.version
        if conn.execute(
            both(conn, "SELECT 1 FROM versions WHERE name = ? AND version = ?"), (v.name, number)
        ).fetchone():
            (top,) = conn.execute(both(conn, "SELECT max(version) FROM versions WHERE name = ?"), (v.name,)).fetchone()
            number = int(top) + 1
            out.renumbered[v.id] = (v.version, number)
            conn.execute(both(conn, "UPDATE lineage_nodes SET version = ? WHERE id = ?"), (number, v.id))
        conn.execute(
            both(conn, "INSERT INTO versions(name, version, id, created_at) VALUES (?, ?, ?, ?)"),
            (v.name, number, v.id, v.created_at),
        )
        out.versions += 1
    for e in edges:
        ends = (e.child_id, e.parent_id)
        known = {r[0] for r in conn.execute(both(conn, "SELECT id FROM lineage_nodes WHERE id IN (?, ?)"), ends)}
        if known != {e.child_id, e.parent_id}:
            continue
        if conn.execute(
            both(conn, "SELECT 1 FROM lineage_edges WHERE child_id = ? AND parent_id = ? AND relation = ?"),
            (e.child_id, e.parent_id, e.relation),
        ).fetchone():
            continue
        if e.child_id == e.parent_id or _is_ancestor(conn, e.parent_id, e.child_id):
            out.cycles.append(e)
            continue
        conn.execute(
            both(conn, f"INSERT INTO lineage_edges({_EDGE_COLS}) VALUES (?, ?, ?, ?, ?, ?)"),
            (e.child_id, e.parent_id, e.relation, e.child_collection, e.parent_collection, e.created_at),
        )
        out.edges += 1
    return out
