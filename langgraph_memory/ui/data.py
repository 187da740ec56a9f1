"""What the browser UI shows, read from one `Memory`.

`Browser` is the UI's only way into memory: every page asks it for
plain records, and it reads them through ``Memory`` and its parts (the
store, the lineage, the typed research API, the archiver, the checkpointer)
and the catalog's page queries (`langgraph_memory.catalog.browse`).
A second backend changes how the ``Memory`` is opened, not this module's
callers.

    >>> from langgraph_memory.memory import Memory
    >>> with Memory.open("./memory") as mem:  # needs a memory made by a run (./memory)  # doctest: +SKIP
    ...     b = Browser(mem)
    ...     b.overview().items, [h.item.key for h in b.search("whipsaw").hits]
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph_memory.catalog import browse as _browse
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.item_rows import StoredItem
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import InvalidArgumentError, NotFoundError
from langgraph_memory.lifecycle.stats import MemoryStats, collect_stats
from langgraph_memory.memory import Memory
from langgraph_memory.research.calls import history_json
from langgraph_memory.research.collections import (
    COLLECTIONS,
    GENERAL,
    collection_for,
    memory_type_for,
)
from langgraph_memory.search.scored import ExplainedSearch

__all__ = [
    "Browser",
    "Page",
    "ItemView",
    "GraphNode",
    "LineageGraph",
    "StrategyView",
    "VersionRow",
    "Overview",
    "Aggregates",
    "CollectionRow",
]

logger = logging.getLogger(__name__)

#: Rows per page on every listing.
PAGE_SIZE = 50
#: Hits per search page (each page ranks offset + limit candidates, so deep pages cost more).
SEARCH_PAGE_SIZE = 20
#: The lineage graph of an item shows at most this many nodes (the nearest first).
MAX_GRAPH_NODES = 400
#: Whole-catalog aggregates (sizes, items per day) are reused this long, unless the catalog changed.
STATS_TTL_SECONDS = 30.0


@dataclass
class Page:
    """One page of a listing: its rows, where it starts, and how many rows there are in all (None: unknown)."""

    rows: list[Any]
    page: int
    size: int
    total: int | None

    @property
    def pages(self) -> int | None:
        return None if self.total is None else max(1, -(-self.total // self.size))

    @property
    def has_next(self) -> bool:
        return len(self.rows) == self.size if self.total is None else (self.page + 1) * self.size < self.total


@dataclass
class CollectionRow:
    """One collection on the overview: counts read now; sizes and dates from the last aggregate (may be None)."""

    name: str
    memory_type: str
    items: int
    vectors: int
    retired: int
    superseded: int
    storage_bytes: int | None
    archived: int | None
    newest: datetime | None
    #: changes the Chroma index has not applied yet (it catches up on the next search or write)
    pending: int

    @property
    def searchable(self) -> int:
        return self.items - self.retired - self.superseded


@dataclass
class Aggregates:
    """What costs a read of every item (sizes, items per day): computed in the background."""

    stats: MemoryStats
    per_day: list[tuple[int, int]]
    at: datetime
    seconds: float


@dataclass
class Overview:
    collections: list[CollectionRow]
    aggregates: Aggregates | None
    #: the aggregates are older than the catalog's last change (being recomputed)
    stale: bool
    runs: list[dict[str, Any]]
    index_notes: list[str]

    @property
    def items(self) -> int:
        return sum(c.items for c in self.collections)


@dataclass
class GraphNode:
    id: str
    collection: str | None
    namespace: tuple[str, ...] | None
    label: str
    storage: str
    lifecycle: str
    depth: int
    #: the strategy version's number (v1, v2, ...); None for items that are not versions
    version: int | None = None


@dataclass
class LineageGraph:
    """The item, its ancestors and descendants as nodes, and the lineage edges among them."""

    root: str
    nodes: dict[str, GraphNode]
    edges: list[tuple[str, str, str]]  # parent, child, relation
    truncated: bool = False


@dataclass
class ItemView:
    item: StoredItem
    collection: str
    status: ItemStatus | None
    graph: LineageGraph | None
    version: _lin.VersionRow | None = None
    history: list[tuple[datetime, str]] = field(default_factory=list)
    #: Its versions, newest first, each with what made it and what changed (`history_json`'s rows).
    versions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class VersionRow:
    version: int
    id: str
    created_at: datetime
    status: str | None
    #: "active", "retired" or "superseded" (hidden from searches)
    lifecycle: str
    strategy: dict[str, Any] | None
    backtests: list[StoredItem]
    hypotheses: list[StoredItem]


@dataclass
class StrategyView:
    name: str
    versions: list[VersionRow]


def _dt(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, tz=UTC) if ts is not None else None


def page_number(text: str | None) -> int:
    """A page number from a query string (0 when missing); a bad one is `InvalidArgumentError`."""
    if not text:
        return 0
    try:
        page = int(text)
    except ValueError:
        raise InvalidArgumentError(f"page must be a whole number, got {text!r}") from None
    if page < 0:
        raise InvalidArgumentError(f"page must be 0 or more, got {page}")
    return page


class Browser:
    """Read (and, for the actions, change) one memory for the UI; safe to call from several threads."""

    def __init__(self, memory: Memory, *, page_size: int = PAGE_SIZE) -> None:
        self.memory = memory
        self.store = memory.store
        self.page_size = page_size
        self._lock = threading.Lock()
        self._cached: tuple[tuple[Any, ...], float, Aggregates] | None = None
        self._refreshing: threading.Thread | None = None

    # ------------------------------------------------------------ overview

    def _token(self) -> tuple[Any, ...]:
        """Changes whenever items are added, removed or change status (cheap: kept counts and sequences)."""
        with self.store.catalog.read() as conn:
            return _browse.change_token(conn)

    def _compute(self, token: tuple[Any, ...]) -> None:
        """Compute the aggregates (seconds at 100,000 items) and keep them with the token they match."""
        try:
            started = time.perf_counter()
            archiver = self.memory._existing_archiver()
            # A connection of its own: the scans take seconds at 100,000 items, and the store's one
            # connection (behind a lock) must keep serving pages meanwhile.
            catalog = self.store.catalog.another()
            try:
                stats = collect_stats(
                    self.store, archiver=archiver, checkpointer=self.memory.checkpointer, catalog=catalog
                )
                with catalog.read() as conn:
                    per_day = _browse.items_per_day(conn)
            finally:
                catalog.close()
            agg = Aggregates(stats, per_day, datetime.now(UTC), time.perf_counter() - started)
            with self._lock:
                self._cached = (token, time.monotonic(), agg)
        except Exception:  # noqa: BLE001 - the overview then shows counts only, and says so
            logger.warning("could not compute the overview's aggregates", exc_info=True)
        finally:
            with self._lock:
                self._refreshing = None

    def refresh(self, *, wait: bool = False) -> None:
        """Recompute the aggregates in the background (one at a time); ``wait`` for them."""
        token = self._token()
        with self._lock:
            worker = self._refreshing
            if worker is None:
                worker = self._refreshing = threading.Thread(
                    target=self._compute, args=(token,), name="lgm-ui-aggregates", daemon=True
                )
                worker.start()
        if wait:
            worker.join()

    def _aggregates(self) -> tuple[Aggregates | None, bool]:
        """The last aggregates and whether they are stale; a stale or missing one starts a refresh."""
        token = self._token()
        with self._lock:
            cached = self._cached
        fresh = cached is not None and cached[0] == token and time.monotonic() - cached[1] < STATS_TTL_SECONDS
        if not fresh:
            self.refresh()
        return (cached[2] if cached is not None else None), not fresh

    def overview(self) -> Overview:
        """Counts read now (kept counts: cheap at any size); sizes, dates and the plot from the last aggregate."""
        agg, stale = self._aggregates()
        with self.store.catalog.read() as conn:
            items = {
                name: _item_rows.count_items(conn, name) for name in (s.name for s in (*COLLECTIONS.values(), GENERAL))
            }
            vectors = _browse.vector_counts(conn)
            backlog = _browse.index_backlog(conn)
            hidden = _status.live_counts(conn)
        rows = []
        for spec in (*COLLECTIONS.values(), GENERAL):
            c = agg.stats.collections.get(spec.name) if agg is not None else None
            rows.append(
                CollectionRow(
                    spec.name,
                    memory_type_for(spec.name),
                    items[spec.name],
                    vectors.get(spec.name, 0),
                    hidden.get(spec.name, {}).get("retired", 0),
                    hidden.get(spec.name, {}).get("superseded", 0),
                    c.storage_bytes if c else None,
                    c.archived if c else None,
                    c.newest if c else None,
                    backlog.get(spec.name, 0),
                )
            )
        index = self.store.vector_index
        notes = []
        if index.probe_seconds is not None:
            notes.append(f"the index was checked on open after an unclean shutdown ({index.probe_seconds:.2f} s)")
        if index.last_rebuild is not None:
            notes.append(f"rebuilt on open: {index.last_rebuild.reason}")
        return Overview(rows, agg, stale, self.archive_runs(limit=5), notes)

    # ------------------------------------------------------------- search

    def namespaces(self) -> list[tuple[tuple[str, ...], str, int]]:
        with self.store.catalog.read() as conn:
            return _item_rows.namespace_counts(conn)

    def near_namespace(self, namespace: tuple[str, ...]) -> tuple[str, ...] | None:
        """The namespace probably meant when ``namespace`` starts with a near miss of a typed label, or None.

        ``("lesson",)`` gives ``("lessons",)``: the search page says so, rather than only the server's log.
        """
        near = self.store.collections.near_label(namespace[0]) if namespace else None
        return (near, *namespace[1:]) if near is not None else None

    def search(
        self,
        query: str | None,
        *,
        namespace: tuple[str, ...] = (),
        filter: dict[str, Any] | None = None,
        include_retired: bool = False,
        page: int = 0,
    ) -> ExplainedSearch:
        """One page of a search, each hit with its score parts and the plan (no access is recorded)."""
        return self.store.search_explained(
            namespace,
            query=query or None,
            filter=filter,
            limit=SEARCH_PAGE_SIZE,
            offset=page * SEARCH_PAGE_SIZE,
            include_retired=include_retired,
        )

    def explain(
        self, query: str | None, *, namespace: tuple[str, ...] = (), filter: dict[str, Any] | None = None
    ) -> str:
        return str(self.store.explain(namespace, query=query or None, filter=filter, limit=SEARCH_PAGE_SIZE))

    # --------------------------------------------------------------- items

    def find(self, key: str, namespace: tuple[str, ...] | None = None) -> StoredItem:
        """The live item ``key`` (in ``namespace``, or where its lineage or a scan finds it)."""
        with self.store.catalog.read() as conn:
            if namespace is None:
                ref = _lin.node(conn, key)
                if ref is not None:
                    namespace = ref.namespace
            if namespace is not None:
                got = _item_rows.get_items(conn, [(namespace, key)])
                if got:
                    return next(iter(got.values()))
            else:
                found = _item_rows.items_by_key(conn, key)
                if found:
                    return found[0]
        archived = self.memory._archived_values([key])
        if key in archived:
            raise NotFoundError(f"item {key!r} is archived, not live: restore it from the Archive page")
        raise NotFoundError(f"no live item with key {key!r}" + (f" in {'/'.join(namespace)}" if namespace else ""))

    def item(self, key: str, namespace: tuple[str, ...] | None = None) -> ItemView:
        it = self.find(key, namespace)
        status = self.store.items.statuses([(it.namespace, it.key)]).get((it.namespace, it.key))
        with self.store.catalog.read() as conn:
            version = _lin.versions_of(conn, [it.key]).get(it.key)
            known = _lin.node(conn, it.key) is not None
        history: list[tuple[datetime, str]] = [(_dt(it.created_at), "created")]  # type: ignore[list-item]
        if it.updated_at != it.created_at:
            history.append((_dt(it.updated_at), "last updated"))  # type: ignore[arg-type]
        if it.access_count:
            history.append((_dt(it.last_accessed_at), f"last read ({it.access_count} reads)"))  # type: ignore[arg-type]
        if status is not None:
            what = status.status + (f" by {status.superseded_by}" if status.superseded_by else "")
            history.append((status.changed_at, what + (f": {status.reason}" if status.reason else "")))
        history.sort(key=lambda h: h[0])
        graph = self.lineage_graph(it.key) if known else None
        versions = self.versions(it.namespace, it.key)
        return ItemView(it, collection_for(it.namespace).name, status, graph, version, history, versions)

    def versions(self, namespace: tuple[str, ...], key: str) -> list[dict[str, Any]]:
        """The versions of ``(namespace, key)``, newest first (`history_json`'s rows), live or not."""
        return list(history_json(self.store.history(namespace, key))["versions"])

    def value_as_of(self, namespace: tuple[str, ...], key: str, at: datetime) -> Any | None:
        """The item ``(namespace, key)`` as it stood at ``at`` (an ``Item``), or None when it was not in memory."""
        return self.store.as_of(at).get(namespace, key)

    def search_as_of(
        self,
        at: datetime,
        query: str | None,
        *,
        namespace: tuple[str, ...] = (),
        filter: dict[str, Any] | None = None,
        include_retired: bool = False,
        page: int = 0,
    ) -> Any:
        """One page of a search of the memory as it stood at ``at``, shaped as `search` returns it.

        The score of each hit is the as-of search's (its parts are not kept apart there).
        """
        from types import SimpleNamespace

        found = self.store.as_of(at).search(
            namespace,
            query=query or None,
            filter=filter,
            limit=SEARCH_PAGE_SIZE,
            offset=page * SEARCH_PAGE_SIZE,
            include_retired=include_retired,
        )
        hits = [
            SimpleNamespace(
                item=it,
                parts=SimpleNamespace(final=it.score, cosine=None, keyword=None, retention=None, temporal_share=None)
                if it.score is not None
                else None,
            )
            for it in found
        ]
        plan = f"as of {at.isoformat()}: the store's plan over the items unchanged since, older versions scored apart"
        return SimpleNamespace(hits=hits, plan=plan, ranking="as-of")

    def lineage_graph(self, item_id: str, *, max_nodes: int = MAX_GRAPH_NODES) -> LineageGraph:
        """The lineage of ``item_id`` as a graph: nodes with summaries and states, and the edges among them."""
        lin = self.memory.lineage(item_id)

        def node(n: Any, depth: int) -> GraphNode:
            return GraphNode(n.id, n.collection, n.namespace, n.summary, n.storage, n.lifecycle, depth)

        nodes: dict[str, GraphNode] = {}
        for n in [*lin.ancestors, *lin.descendants.walk()]:
            nodes.setdefault(n.id, node(n, n.depth))
        truncated = len(nodes) > max_nodes
        if truncated:  # keep the nearest
            keep = sorted(nodes.values(), key=lambda n: (abs(n.depth), n.id))[:max_nodes]
            nodes = {n.id: n for n in keep}
            nodes.setdefault(item_id, node(lin.item, 0))
        with self.store.catalog.read() as conn:
            edges = [
                (e.parent_id, e.child_id, e.relation)
                for e in _lin.parents_of(conn, list(nodes))
                if e.parent_id in nodes
            ]
            for node_id, v in _lin.versions_of(conn, list(nodes)).items():
                nodes[node_id].version = v.version
        return LineageGraph(item_id, nodes, edges, truncated)

    # ----------------------------------------------------------- strategies

    def _listing(self, page: int, count: Any, rows: Any) -> Page:
        """Page ``page`` of a catalog listing: ``rows(conn, limit=, offset=)`` of ``count(conn)`` in all."""
        with self.store.catalog.read() as conn:
            found = rows(conn, limit=self.page_size, offset=page * self.page_size)
            return Page(found, page, self.page_size, count(conn))

    def strategies(self, page: int = 0) -> Page:
        return self._listing(page, _browse.strategy_count, _browse.strategy_names)

    def strategy(self, name: str) -> StrategyView:
        """Every version of strategy ``name`` with its backtests and the hypotheses it tested."""
        versions = self.memory.versions(name)
        if not versions:
            raise NotFoundError(f"no strategy named {name!r}")
        ids = [v.id for v in versions]
        with self.store.catalog.read() as conn:
            backtests = [
                it
                for it in _browse.items_with_field(conn, "strategy_id", ids)
                if collection_for(it.namespace).name == "backtest_results"
            ]
            hyp_ids: dict[str, list[str]] = {v.id: [] for v in versions}
            for e in _lin.parents_of(conn, ids):
                if e.parent_collection == "hypotheses":
                    hyp_ids[e.child_id].append(e.parent_id)
            for v in versions:  # the hypothesis a version names, linked or not
                h = v.record.hypothesis_id if v.record is not None else None
                if h and h not in hyp_ids[v.id]:
                    hyp_ids[v.id].append(h)
            wanted = sorted({h for hs in hyp_ids.values() for h in hs})
            refs = _lin.nodes(conn, wanted)
            hyps = _item_rows.get_items(conn, [(r.namespace, r.id) for r in refs.values()])
        hyp_by_key = {it.key: it for it in hyps.values()}
        by_strategy: dict[str, list[StoredItem]] = {}
        for bt in backtests:
            by_strategy.setdefault(str(bt.value.get("strategy_id")), []).append(bt)
        rows = [
            VersionRow(
                v.version,
                v.id,
                v.created_at,
                v.status,
                v.lifecycle,
                v.record.model_dump() if v.record else None,
                by_strategy.get(v.id, []),
                [hyp_by_key[h] for h in hyp_ids.get(v.id, []) if h in hyp_by_key],
            )
            for v in versions
        ]
        return StrategyView(name, rows)

    # ------------------------------------------------------------- lessons

    def lessons(self, page: int = 0) -> tuple[Page, int]:
        """A page of lessons (unresolved first) and how many are open."""
        with self.store.catalog.read() as conn:
            n_open, n_resolved = counts = _browse.open_lessons(conn)
            rows = _browse.lessons_page(conn, limit=self.page_size, offset=page * self.page_size, counts=counts)
        return Page(rows, page, self.page_size, n_open + n_resolved), n_open

    def lessons_as_of(self, at: datetime, page: int = 0) -> Page:
        """A page of the lessons as they stood at ``at``, newest first (the history keeps no counts: no total)."""
        rows = self.store.as_of(at).search(("lessons",), limit=self.page_size, offset=page * self.page_size)
        return Page(rows, page, self.page_size, None)

    # ------------------------------------------------------------ sessions

    def sessions(self, page: int = 0) -> Page:
        return self._listing(page, _browse.session_count, _browse.sessions_page)

    # ------------------------------------------------------------- threads

    def threads(self, page: int = 0) -> Page:
        """Checkpointer threads, most recently active first, with their checkpoints and bytes."""
        # Any LangGraph checkpointer may be passed to Memory; ours can list its threads and measure them.
        cp: Any = self.memory.checkpointer
        listed = list(cp.list_threads()) if callable(getattr(cp, "list_threads", None)) else []
        start = page * self.page_size
        rows = listed[start : start + self.page_size]
        sizes = cp.thread_sizes([t.thread_id for t in rows]) if callable(getattr(cp, "thread_sizes", None)) else {}
        out = [
            {
                "thread_id": t.thread_id,
                "last_activity": t.last_activity,
                "checkpoints": t.checkpoints,
                "bytes": sizes.get(t.thread_id),
            }
            for t in rows
        ]
        return Page(out, page, self.page_size, len(listed))

    # ------------------------------------------------------------- archive

    def archive_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        archiver = self.memory._existing_archiver()
        if archiver is None:
            return []
        out = []
        for run_id, started, finished, report in archiver.manifest.query(
            "SELECT run_id, started_at, finished_at, report FROM runs ORDER BY started_at DESC LIMIT ?", (limit,)
        ):
            try:
                data = json.loads(report) if report else {}
            except ValueError:
                data = {}
            colls = data.get("collections") or {}
            out.append(
                {
                    "run_id": run_id,
                    "started_at": _dt(started),
                    "finished_at": _dt(finished),
                    "archived": sum(int(c.get("archived") or 0) for c in colls.values()),
                    "dry_run": bool(data.get("dry_run")),
                    "errors": data.get("errors") or [],
                }
            )
        return out

    def archive_files(self) -> list[Any]:
        archiver = self.memory._existing_archiver()
        return archiver.list_archives(all_states=True) if archiver is not None else []

    def archive_contents(self, file: str, page: int = 0) -> Page:
        archiver = self.memory._existing_archiver()
        if archiver is None or archiver.manifest.file(file) is None:
            raise NotFoundError(f"no archive file named {file!r}")
        total, rows = archiver.manifest.file_lines(file, limit=self.page_size, offset=page * self.page_size)
        out = [
            {
                "line": r[0],
                "uid": r[1],
                "key": r[2],
                "namespace": tuple(str(r[3]).split(_item_rows.NS_SEP)),
                "status": r[4],
                "changed_at": _dt(r[5]),
            }
            for r in rows
        ]
        return Page(out, page, self.page_size, int(total))

    # ------------------------------------------------------------- actions

    def retire(self, key: str, namespace: tuple[str, ...] | None, reason: str) -> None:
        self.memory.lifecycle.retire(key, reason or "retired in the browser", namespace=namespace)

    def reinstate(self, key: str, namespace: tuple[str, ...] | None) -> bool:
        return self.memory.lifecycle.reinstate(key, namespace=namespace)

    def supersede(self, key: str, by: str, namespace: tuple[str, ...] | None, reason: str) -> None:
        self.memory.lifecycle.supersede(key, by, reason=reason or None, namespace=namespace)

    def restore(self, keys: list[str]) -> int:
        archiver = self.memory._existing_archiver()
        if archiver is None:
            raise NotFoundError("this memory has no archive")
        return int(archiver.restore(keys=keys).restored)
