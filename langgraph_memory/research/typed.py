"""The plumbing under the typed research API: typed items written with their lineage, searched, read back.

`TypedItems` is given its collaborators - the store, the lineage, the
scope labels and a check that the owner is still open - and offers what
every typed call needs: validate a record and write it with its lineage (and
version) in one catalog transaction, load and update records by id, search
one typed collection. [`ResearchAPI`][langgraph_memory.ResearchAPI]
builds the seven collections' calls on it; ``Memory`` builds both.

    from langgraph_memory.research.typed import TypedItems

    typed = TypedItems(store, store.lineage, scope=("desk-1",))
    finding = typed.put("research", {"content": "Vol clusters"}, parents=[])
    hits = typed.search("research", "volatility", k=3)

`athread()` makes the async twin of a sync call: the same signature
(``inspect.signature`` and type checkers see it), run in a worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import uuid
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Generic, ParamSpec, TypeVar, Unpack

from pydantic import BaseModel

from langgraph_memory.catalog import StoredItem, item_uid
from langgraph_memory.catalog.evidence import CutoffArgs
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import ArchivedError, NotFoundError, ValidationError
from langgraph_memory.research.collections import COLLECTIONS, collection_by_name
from langgraph_memory.research.lineage import ItemRef, LineageStore
from langgraph_memory.research.validation import check_tags
from langgraph_memory.search.ranking import keep_relevant
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.items import LocksItself, StoreItems

__all__ = ["Hit", "TypedItems", "ParentIds", "athread", "now_iso", "parent_list", "MODELS"]

R = TypeVar("R", bound=BaseModel)
P = ParamSpec("P")
T = TypeVar("T")

#: The record model of each typed collection, by namespace label.
MODELS: dict[str, type[BaseModel]] = {label: spec.schema for label, spec in COLLECTIONS.items() if spec.schema}

ParentIds = str | Sequence[str] | None

#: The field holding the last market date of a record's own evidence, by namespace label: a backtest's
#: period, a finding's data range, a regime's span. Other records (hypotheses, strategies, lessons) have
#: none of their own: their evidence ends where that of what they derive from through lineage does.
EVIDENCE_FIELDS: dict[str, str] = {"backtests": "period_end", "research": "data_end", "regimes": "end_date"}


def own_evidence_end(label: str, value: dict[str, Any]) -> date | None:
    """The last market date of a record's own evidence (validated already), or None.

    Examples:
        >>> own_evidence_end("backtests", {"period_end": "2020-12-31"}), own_evidence_end("lessons", {})
        (datetime.date(2020, 12, 31), None)
    """
    field = EVIDENCE_FIELDS.get(label)
    raw = value.get(field) if field else None
    return date.fromisoformat(raw[:10]) if isinstance(raw, str) and raw else None


@dataclass(frozen=True)
class Hit(Generic[R]):
    """One search result: the typed ``record``, its cosine ``score`` and namespace.

    It reads like the store's own search results (``SearchItem``) too: ``hit.value`` is the record as a
    dict, ``hit.key`` its id, beside ``hit.namespace`` and ``hit.score``. The record's
    fields are on ``hit.record`` (``hit.record.lesson``); asking the hit for one says so.

    ``status`` is the lifecycle record of a retired or superseded record
    (returned only when the search was asked to include them); `lifecycle`
    names its state, as every other view does. The record's own status (a
    strategy's ``approved``) is ``record.status``.

    Examples:
        >>> from langgraph_memory.research.collections import Lesson
        >>> hit = Hit(Lesson(lesson="Stops too tight", id="l1"), 0.8, ("lessons",))
        >>> hit.record.lesson, hit.value["lesson"], hit.key, hit.score
        ('Stops too tight', 'Stops too tight', 'l1', 0.8)
        >>> hit.lesson
        Traceback (most recent call last):
        ...
        AttributeError: 'Hit' object has no attribute 'lesson': the record's fields are on hit.record (hit.record.lesson), or hit.value["lesson"] as a dict
    """

    record: R
    score: float | None
    namespace: tuple[str, ...]
    status: ItemStatus | None = None

    @property
    def id(self) -> str:
        return str(getattr(self.record, "id", ""))

    @property
    def key(self) -> str:
        """The record's id, the key the store holds it under (as ``SearchItem.key``)."""
        return self.id

    @property
    def value(self) -> dict[str, Any]:
        """The record as a JSON-ready dict of the fields that are set (as ``SearchItem.value``)."""
        return self.record.model_dump(mode="json", exclude_none=True)

    @property
    def lifecycle(self) -> str:
        """``"active"``, ``"retired"`` or ``"superseded"``."""
        return self.status.status if self.status is not None else "active"

    def __getattr__(self, name: str) -> Any:
        # Only for names a Hit lacks: say where a guessed record field is, instead of a bare AttributeError.
        if name.startswith("_") or name == "record":
            raise AttributeError(name)
        message = f"{type(self).__name__!r} object has no attribute {name!r}"
        if name in type(self.record).model_fields or name in (self.record.model_extra or {}):
            message += f': the record\'s fields are on hit.record (hit.record.{name}), or hit.value["{name}"] as a dict'
        raise AttributeError(message)


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def parent_list(parent_id: ParentIds) -> list[str]:
    """``parent_id`` as a list of ids (one id, several, or none)."""
    if parent_id is None:
        return []
    if isinstance(parent_id, str):
        return [parent_id]
    return [p for p in parent_id if p is not None]


def athread(fn: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """The async twin of ``fn``: same parameters, run with ``asyncio.to_thread``.

    Examples:
        >>> class A:
        ...     def double(self, x: int, *, times: int = 2) -> int:
        ...         return x * times
        ...     adouble = athread(double)
        >>> import asyncio, inspect
        >>> asyncio.run(A().adouble(3, times=3)), list(inspect.signature(A.adouble).parameters)
        (9, ['self', 'x', 'times'])
    """

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    twin.__doc__ = f"Async twin of ``{fn.__name__}`` (same arguments, run in a worker thread)."
    twin.__name__ = twin.__qualname__ = f"a{fn.__name__}"
    return twin


class TypedItems:
    """Typed records in one store: written with lineage in one transaction, loaded, updated, searched.

    Args:
        store: the data directory's store.
        lineage: its lineage (``store.lineage``).
        scope: extra namespace labels (e.g. a desk id): records of label
            ``research`` live in ``("research", *scope)``.
        guard: called before every operation; raises when the owner is closed.
        archived: looks an id up in the archive (``Memory.archived``), so that a
            record that left the store is reported as archived, with how to restore it.

    Examples:
        >>> typed = TypedItems(store, store.lineage)
        >>> typed.put("research", {"content": "Vol clusters"}, parents=[]).content
        'Vol clusters'
    """

    def __init__(
        self,
        store: ChromaStore,
        lineage: LineageStore,
        *,
        scope: tuple[str, ...] = (),
        guard: Callable[[], None] | None = None,
        archived: Callable[[str], Any] | None = None,
    ) -> None:
        self.store = store
        self.lineage = lineage
        self.scope = tuple(scope)
        self._guard = guard
        self._archived = archived

    def namespace(self, label: str) -> tuple[str, ...]:
        """The namespace of ``label``'s records (e.g. ``("lessons", *scope)``)."""
        return (label, *self.scope)

    def check_open(self) -> None:
        if self._guard is not None:
            self._guard()

    # -------------------------------------------------------------- writes

    def put(
        self,
        label: str,
        value: dict[str, Any],
        parents: list[tuple[str, str]],
        *,
        version_name: str | None = None,
        supersede_previous: bool = False,
    ) -> BaseModel:
        """Validate ``value``, then write it with its lineage (and version) in one transaction.

        ``None`` fields are dropped (``parent_id`` is kept); ``id`` (a new
        UUID) and ``created_at`` are filled in. With ``version_name`` the
        record gets the next version number of that name (and the previous
        version as a parent); with ``supersede_previous`` that previous
        version is also marked superseded, in the same transaction.
        """
        self.check_open()
        spec = COLLECTIONS[label]
        item_id = str(uuid.uuid4())
        value = {k: v for k, v in value.items() if v is not None or k == "parent_id"}
        value["id"] = item_id
        value.setdefault("created_at", now_iso())
        if version_name is not None:
            value["version"] = 1  # validated now; the real number is allocated below
        spec.validate(value)
        if "tags" in value:  # the same tag limits as the agent-facing tools (config.MAX_TAGS, MAX_TAG_CHARS)
            value["tags"] = check_tags(value["tags"])
        namespace = self.namespace(label)
        lineage = self.lineage
        own_end = own_evidence_end(label, value)

        def register(conn: sqlite3.Connection) -> dict[int, dict[str, Any]]:
            # Inside the item's own transaction: the item, its lineage, its evidence end and its version
            # commit together.
            version = lineage.register_in(
                conn,
                item_id,
                spec.name,
                namespace,
                parents=parents,
                name=version_name,
                version_name=version_name,
                evidence_end=own_end,
            )
            if version is None:
                return {}
            if supersede_previous and version > 1:
                _supersede_version(self.store.items, conn, version_name, version - 1, (namespace, item_id))  # type: ignore[arg-type]
            value["version"] = version
            return {0: value}

        self.store.items.put(namespace, item_id, value, before=LocksItself(register))
        return MODELS[label].model_validate(value)

    def update(
        self, item_id: str, label: str, changes: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
    ) -> BaseModel:
        """Apply ``changes`` (or ``changes(current value)``) to the record ``item_id`` of ``label``.

        The result is validated before it is written; returns the new record.
        """
        ref, value = self.load(item_id, label)
        value.update(changes(value) if callable(changes) else changes)
        COLLECTIONS[label].validate(value)
        self.store.put(ref.namespace, item_id, value)
        return MODELS[label].model_validate(value)

    # --------------------------------------------------------------- reads

    def ref(self, item_id: str, label: str | None = None) -> ItemRef:
        """Where ``item_id`` lives (it must be in ``label``'s collection, if given)."""
        self.check_open()
        ref = self.lineage.require(item_id)
        if label is not None and ref.collection != COLLECTIONS[label].name:
            raise ValidationError(
                f"item {item_id!r} is in collection {ref.collection!r}, not {COLLECTIONS[label].name!r}"
            )
        return ref

    def load(self, item_id: str, label: str | None = None) -> tuple[ItemRef, dict[str, Any]]:
        """The record's location and a copy of its value."""
        ref = self.ref(item_id, label)
        item = self.store.get(ref.namespace, item_id)
        if item is None:
            archived = self._archived(item_id) if self._archived is not None else None
            if archived is not None:
                raise ArchivedError(archived.explain())
            raise NotFoundError(f"item {item_id!r} is no longer in the store: it was deleted (the archive has no copy)")
        return ref, dict(item.value)

    def get(self, item_id: str) -> BaseModel:
        """The typed record stored under ``item_id`` (any typed collection).

        Raises:
            ArchivedError: the item left the store for the archive (the message says how to restore it).
            NotFoundError: the id is unknown, or the item was deleted.
        """
        ref, value = self.load(item_id)
        model = MODELS.get(collection_by_name(ref.collection).label or "")
        if model is None:
            raise ValidationError(f"item {item_id!r} is not in a typed collection ({ref.collection!r})")
        return model.model_validate(value)

    def live_items(self, refs: Iterable[ItemRef]) -> dict[str, StoredItem]:
        """The items of ``refs`` still in the store, by id (one read per collection)."""
        uids: dict[str, dict[str, None]] = {}
        for ref in refs:
            uids.setdefault(ref.collection, {})[item_uid(ref.namespace, ref.id)] = None
        return {it.key: it for coll, group in uids.items() for it in self.store.items.get_items(coll, list(group))}

    def search(
        self,
        label: str,
        query: str | None,
        *,
        k: int,
        filter: dict[str, Any] | None = None,
        min_relevance: float | None = None,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[Any]]:
        """``label``'s records most similar to ``query`` (newest first without one), as `Hit`.

        With ``data_cutoff``, only records whose evidence ends on or before it (see `ChromaStore.search`).
        """
        self.check_open()
        if k <= 0:
            return []
        model = MODELS[label]
        results = self.store.search(
            self.namespace(label),
            query=query,
            filter=filter or None,
            limit=k,
            include_retired=include_retired,
            **cutoff,
        )
        if query:  # a listing without a query has no scores to hold to a threshold
            results = keep_relevant(results, min_relevance)
        statuses = self.store.items.statuses([(tuple(r.namespace), r.key) for r in results]) if include_retired else {}
        return [
            Hit(
                record=model.model_validate(r.value),
                score=r.score,
                namespace=tuple(r.namespace),
                status=statuses.get((tuple(r.namespace), r.key)),
            )
            for r in results
        ]


def _supersede_version(
    items: StoreItems, conn: sqlite3.Connection, name: str, version: int, by: tuple[tuple[str, ...], str]
) -> None:
    """Mark version ``version`` of ``name`` superseded by ``by`` (when it is still live), inside the write."""
    old = LineageStore.version_in(conn, name, version)
    if old is not None:
        items.set_status_in(
            conn, [(old.namespace, old.id)], "superseded", reason=f"replaced by version {version + 1}", superseded_by=by
        )
