"""The store's search entry points: ``search``, ``asearch``, ``explain``, ``search_explained``, ``search_by_vector``.

`SearchingStore` is the half of `langgraph_memory.store.ChromaStore` that reads through the planner and
the hybrid ranking; the store's constructor sets the collaborators declared on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Container, Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Any, Unpack

import numpy as np
from langgraph.store.base import (
    BaseStore,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.catalog.evidence import CutoffArgs
from langgraph_memory.embeddings import CachedEmbeddings
from langgraph_memory.errors import (
    InvalidArgumentError,
    StoreBackendError,
)
from langgraph_memory.registry import CollectionRegistry
from langgraph_memory.search import filters as _filters
from langgraph_memory.search.hybrid import HybridSearch
from langgraph_memory.search.plan import Plan, keep_all
from langgraph_memory.search.planner import Planner
from langgraph_memory.search.ranking import HybridRanking, ScoreParts
from langgraph_memory.search.scored import ExplainedHit, ExplainedSearch
from langgraph_memory.store._embedding_calls import aembedded, embedded
from langgraph_memory.store._writer import check_vectors
from langgraph_memory.store.access import AccessLog
from langgraph_memory.store.namespaces import validate_namespace
from langgraph_memory.store.ttl import Sweeper

__all__ = ["SearchAllOp", "SearchingStore"]

logger = logging.getLogger(__name__)


class SearchAllOp(SearchOp):
    """A ``SearchOp`` that also returns retired and superseded items (hidden from a plain ``SearchOp``).

    ``store.search(..., include_retired=True)`` sends one; pass it to
    ``batch``/``abatch`` directly to mix it with other ops.
    """

    __slots__ = ()


def checked_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be a whole number, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise InvalidArgumentError(f"{name} cannot be negative, got {value}")
    return value


def _after_cutoff(
    omit: Callable[[StoredItem], bool],
    ends: dict[str, int],
    cutoff: date,
    include_undated: bool,
    keeps: float,
    after: Container[int],
) -> Callable[[StoredItem], bool]:
    """``omit``, also leaving out items whose evidence ends after ``cutoff`` (and undated ones, unless included).

    ``keeps``, the share of items expected to pass, goes with it as its attribute ``keeps``: the planner
    plans for that many candidates (see `Planner._narrow`). ``after`` (the ids known to end after the
    cut-off) joins ``omit``'s own ``skip_ids``: the planner leaves those out unread, so a cut-off costs
    ranking deeper, not reading and parsing what it drops.
    """
    last = cutoff.toordinal()
    undated = 0 if include_undated else last + 1  # an unknown end counts as before the cut-off, or after it

    def omitted(it: StoredItem) -> bool:
        return ends.get(it.uid, undated) > last or omit(it)

    # An as-of view's omit keeps its own share (the items unchanged since): both must pass.
    omitted.keeps = keeps * getattr(omit, "keeps", 1.0)  # type: ignore[attr-defined]
    omitted.skip_ids = _Either(getattr(omit, "skip_ids", ()), after)  # type: ignore[attr-defined]
    omitted.current_at = getattr(omit, "current_at", None)  # type: ignore[attr-defined]
    return omitted


class _Either:
    """The ids in either container (``skip_ids`` of an as-of view and of a cut-off)."""

    __slots__ = ("a", "b")

    def __init__(self, a: Container[int], b: Container[int]) -> None:
        self.a, self.b = a, b

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.a or item_id in self.b

    def __bool__(self) -> bool:
        return bool(self.a) or bool(self.b)


def _search_items(hits: Iterable[tuple[float | None, StoredItem]]) -> list[SearchItem]:
    """Scored catalog items as LangGraph's ``SearchItem``s."""
    return [
        SearchItem(
            namespace=it.namespace,
            key=it.key,
            value=it.value,
            created_at=utc_datetime(it.created_at),
            updated_at=utc_datetime(it.updated_at),
            score=score,
        )
        for score, it in hits
    ]


def utc_datetime(ts: float) -> Any:

    return datetime.fromtimestamp(ts, tz=UTC)


class SearchingStore(BaseStore):
    """Searches over the catalog (planned, exact or HNSW, hybrid-ranked); `ChromaStore` is the one subclass."""

    # Set by ChromaStore.__init__: what a search reads through.
    catalog: Catalog
    planner: Planner
    hybrid: HybridSearch
    ranking: HybridRanking | None
    collections: CollectionRegistry
    cached_embeddings: CachedEmbeddings | None
    ttl_config: TTLConfig | None
    read_only: bool
    _dims: int | None
    _closed: bool
    _access: AccessLog
    _flusher: Sweeper
    _hidden: _status.HiddenItems
    _evidence: _evidence.EvidenceEnds
    _near_labels_warned: set[str]

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[SearchItem]:
        """``BaseStore.search``; retired and superseded items are left out unless ``include_retired``.

        ``data_cutoff`` (a ``datetime.date``) keeps only items whose evidence ends on or before it: the
        last market date of the data they were derived from, through lineage (see
        `langgraph_memory.catalog.evidence`). It is applied before the ``limit`` best are taken, on every
        plan. Items with no known evidence end are left out too unless ``include_undated``: a cut-off
        guards against lookahead, so what cannot be shown to predate it does not pass. Every read here
        that returns memories (`asearch`, `search_explained`, `search_by_vector`, and `explain`'s plan)
        takes the same two arguments (`CutoffArgs`).

        Examples:
            >>> len(store.search(("research",), query="momentum", include_retired=True))
            2
            >>> from datetime import date
            >>> [len(store.search(("backtests",), data_cutoff=date(y, 12, 31))) for y in (2023, 2024)]  # b ran to 2024-12-31
            [0, 1]
        """
        # One search goes straight to its plan, not through batch's dispatch over every op type.
        self._check_open()
        day, undated = _evidence.cutoff_of(dict(cutoff))
        op = self._check_search(
            self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl, include_retired)
        )
        qvec = self._embed_query(op.query) if op.query and self.cached_embeddings is not None else None
        found = self._run_search(op, qvec, time.time(), day, undated)
        self._start_flusher()
        return found

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[SearchItem]:
        """Async `search()`."""
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl, include_retired)
        day, undated = _evidence.cutoff_of(dict(cutoff))
        if day is None:
            return (await self.abatch([op]))[0]  # type: ignore[return-value]
        # A cut-off is not part of LangGraph's SearchOp, so this search does not go through abatch.
        self._check_open()
        op = self._check_search(op)
        qvec = None
        if op.query and self.cached_embeddings is not None:
            raw = await aembedded(self.cached_embeddings.aembed_query(op.query), "a query")
            qvec = check_vectors([raw], self._dims, "a query")[0]
        found = await asyncio.to_thread(self._run_search, op, qvec, time.time(), day, undated)
        self._start_flusher()
        return found

    def _search_op(
        self,
        prefix: tuple[str, ...],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
        include_retired: bool,
    ) -> SearchOp:
        if refresh_ttl is None:  # LangGraph's default: refresh on read unless the TTL config says not to
            refresh_ttl = bool(self.ttl_config.get("refresh_on_read", True)) if self.ttl_config else True
        op_type = SearchAllOp if include_retired else SearchOp
        return op_type(prefix, filter, limit, offset, query, refresh_ttl)

    def explain(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        **cutoff: Unpack[CutoffArgs],
    ) -> Plan:
        """The plan a `search()` with these arguments gets (nothing is run or embedded).

        With a data cut-off, the plan is the one for the share of items the cut-off keeps.

        Examples:
            >>> print(store.explain(("research",), query="risk"))
            exact over research_findings; 2 items in scope; ~2 candidates; hybrid: ...
        """
        day, undated = _evidence.cutoff_of(dict(cutoff))
        op = self._check_search(SearchOp(namespace_prefix, filter, limit, offset, query))
        keeps = None
        if day is not None:
            with self.catalog.read() as conn:
                self._evidence.snapshot(conn)
            keeps = self._evidence.share(day.toordinal(), undated)
        plan = self.planner.explain(op, has_query=bool(query) and self.cached_embeddings is not None, keeps=keeps)
        if self.ranking is not None and query and self.cached_embeddings is not None and plan.strategy != "empty":
            plan.notes.append("hybrid: fused with keyword candidates from the catalog's keyword index")
            if self.ranking.neighbours:
                plan.notes.append(
                    f"hybrid: conversation turns (value kind 'turn', key '<thread>:<position>') rank with their"
                    f" neighbouring turns up to {self.ranking.neighbours} positions away"
                )
        return plan

    def search_explained(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> ExplainedSearch:
        """`search()`, each hit with its score parts (cosine, keyword, temporal) and the plan it ran.

        Reads are not noted (no access count, no TTL refresh): looking does not change later rankings.

        Example:
            >>> found = store.search_explained(("research",), query="momentum", limit=3)
            >>> [(h.item.value["content"], h.parts.keyword) for h in found.hits]  # no finding holds "momentum"
            [('Carry unwinds in vol spikes, 2010-2024', 0.0), ('Carry unwinds in vol spikes', 0.0)]
        """
        self._check_open()
        day, undated = _evidence.cutoff_of(dict(cutoff))
        op = self._check_search(self._search_op(namespace_prefix, query, filter, limit, offset, False, include_retired))
        qvec = self._embed_query(op.query) if op.query and self.cached_embeddings is not None else None
        omit_for = self._omit_for(op, time.time(), day, undated)
        ranking = self.ranking
        if ranking is not None and qvec is not None and op.query:
            hits, plan = self.hybrid.run_explained(op, qvec, ranking, omit_for=omit_for)
            kind = "hybrid"
        else:
            plain, plan = self.planner.run(op, qvec, omit_for=omit_for)
            hits = [
                (None if score is None else ScoreParts(score, 0.0, score, None, 0.0, score, setting="cosine"), it)
                for score, it in plain
            ]
            kind = "cosine" if qvec is not None else "none"
        out = ExplainedSearch(plan=plan, ranking=kind)
        for parts, it in hits:
            item = SearchItem(
                namespace=it.namespace,
                key=it.key,
                value=it.value,
                created_at=utc_datetime(it.created_at),
                updated_at=utc_datetime(it.updated_at),
                score=parts.final if parts is not None else None,
            )
            out.hits.append(ExplainedHit(item, parts))
        return out

    def search_by_vector(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        vector: Sequence[float] | np.ndarray,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        exclude: Callable[[tuple[str, ...], str], bool] | None = None,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[SearchItem]:
        """Items nearest ``vector``, an embedding made elsewhere, by cosine similarity (best first).

        Planned like `search()` (no query is embedded, and no keyword
        ranking applies). Retired, superseded and expired items are left out,
        and so is every item for which ``exclude(namespace, key)`` is true.
        Reads here refresh no TTL.

        Examples:
            >>> import tempfile
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langgraph_memory.store import ChromaStore
            >>> emb = DeterministicFakeEmbedding(size=16)
            >>> with ChromaStore(data_dir=tempfile.mkdtemp(), index={"dims": 16, "embed": emb}) as store:
            ...     store.put(("notes",), "n1", {"text": "momentum fades"})
            ...     store.put(("notes",), "n2", {"text": "carry unwinds"})
            ...     [h.key for h in store.search_by_vector(("notes",), emb.embed_query("carry unwinds"), limit=1)]
            ['n2']
        """
        self._check_open()
        day, undated = _evidence.cutoff_of(dict(cutoff))
        op = self._check_search(SearchOp(namespace_prefix, filter, limit, offset, None, False))
        qvec = check_vectors([list(vector)], self._dims, "the vector")[0]
        omit_for = self._omit_for(op, time.time(), day, undated, exclude)
        hits, plan = self.planner.run(op, qvec, omit_for=omit_for)
        logger.debug("search by vector %s: %s", op.namespace_prefix, plan)
        return _search_items(hits)

    def _embed_query(self, query: str) -> np.ndarray:
        assert self.cached_embeddings is not None
        emb = self.cached_embeddings
        vec = embedded(lambda: emb.embed_query(query), "a query")
        row: np.ndarray = check_vectors([vec], self._dims, "a query")[0]
        return row

    def _check_open(self) -> None:
        if self._closed:
            raise StoreBackendError("this ChromaStore is closed; open a new one")

    def _check_search(self, op: SearchOp) -> SearchOp:
        prefix = validate_namespace(op.namespace_prefix, for_write=False)
        self._warn_near_label(prefix)
        _filters.validate_filter(op.filter)
        limit = checked_count(op.limit, "limit")
        offset = checked_count(op.offset, "offset")
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidArgumentError(f"query must be a string, got {type(op.query).__name__}")
        return op._replace(namespace_prefix=prefix, limit=limit, offset=offset)

    def _warn_near_label(self, namespace: tuple[str, ...]) -> None:
        # A typo in a typed collection's label ("lesson" for "lessons") would silently write untyped
        # items, or search where nothing is: warn, once per label and store, rather than refuse.
        if not namespace or namespace[0] in self._near_labels_warned:
            return
        near = self.collections.near_label(namespace[0])
        if near is not None:
            self._near_labels_warned.add(namespace[0])
            logger.warning(
                "namespace label %r is not a typed collection but is close to the typed collection label %r: if you meant "
                "%r, fix the label (items under %r are untyped and searched apart)",
                namespace[0],
                near,
                near,
                namespace[0],
            )

    def _start_flusher(self) -> None:
        """Reads were noted: make sure they reach the catalog within the flush interval."""
        if self._access and not self._flusher.running and not self._closed:
            self._flusher.start()

    @property
    def _omits_expired(self) -> bool:
        """Whether ``ttl={"omit_expired": True}``: reads hide expired items before any sweep."""
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def _omitter(self, now: float, hidden: dict[str, float] | None = None) -> Callable[[StoredItem], bool]:
        """What reads leave out: expired items (with ``omit_expired``) and the ``hidden`` (retired, superseded)."""
        if not self._omits_expired and not hidden:
            return keep_all

        def expired(it: StoredItem) -> bool:
            if it.expires_at is None or it.expires_at >= now:
                return False
            refreshed = self._access.expiry(it.id) if it.id is not None else None
            return refreshed is None or refreshed < now

        if not hidden:
            return expired
        if not self._omits_expired:
            return lambda it: hidden.get(it.uid) == it.created_at
        return lambda it: hidden.get(it.uid) == it.created_at or expired(it)

    def _omit_for(
        self,
        op: SearchOp,
        now: float,
        cutoff: date | None = None,
        include_undated: bool = False,
        exclude: Callable[[tuple[str, ...], str], bool] | None = None,
    ) -> Callable[[Any, int | None], Callable[[StoredItem], bool]]:
        """What a search leaves out, decided inside its snapshot: expired items, the hidden (retired and
        superseded, unless a `SearchAllOp`), those failing a data cut-off, and those ``exclude`` names."""

        # The hidden set is checked inside the search's snapshot, against the status version its first
        # statement read: on a server, no round trip of its own.
        def omit_for(conn: Any, status_version: int | None) -> Callable[[StoredItem], bool]:
            hidden = None if isinstance(op, SearchAllOp) else self._hidden.snapshot(conn, status_version)
            omit = self._omitter(now, hidden)
            if exclude is not None:
                base = omit
                omit = lambda it: base(it) or exclude(it.namespace, it.key)  # noqa: E731
            return self._cut(conn, omit, cutoff, include_undated)

        return omit_for

    def _cut(
        self, conn: Any, omit: Callable[[StoredItem], bool], cutoff: date | None, include_undated: bool
    ) -> Callable[[StoredItem], bool]:
        """``omit``, and with a cut-off also what fails it (inside the search's snapshot ``conn``).

        The cut-off leaves items out like a status does: the planner ranks further down until it has
        ``limit`` that pass, so the best items by the cut-off come back on every plan.
        """
        if cutoff is None:
            return omit
        ends = self._evidence.snapshot(conn)
        keeps = self._evidence.share(cutoff.toordinal(), include_undated)
        return _after_cutoff(omit, ends, cutoff, include_undated, keeps, self._evidence.after(cutoff.toordinal()))

    def _run_search(
        self,
        op: SearchOp,
        qvec: np.ndarray | None,
        now: float,
        cutoff: date | None = None,
        include_undated: bool = False,
    ) -> list[SearchItem]:
        ranking = self.ranking
        if cutoff is None and isinstance(op, SearchAllOp):
            late, omit = None, self._omitter(now)
        else:
            late, omit = self._omit_for(op, now, cutoff, include_undated), None
        if ranking is not None and qvec is not None and op.query:
            hits, plan = self.hybrid.run(op, qvec, ranking, omit=omit, omit_for=late)
        else:
            hits, plan = self.planner.run(op, qvec, omit=omit, omit_for=late)
        logger.debug("search %s: %s", op.namespace_prefix, plan)
        if op.refresh_ttl and not self.read_only:
            self._access.note([(it.id, it.ttl_minutes) for _, it in hits if it.id is not None], now)
        return _search_items(hits)
