"""The typed research calls as of a past moment: what `Memory.as_of()` returns.

Every read of the typed API (``get``, ``get_relevant_lessons``, ``query_*``, ``get_similar_strategies``,
``get_tool_definition``) answers from the store as it stood at the moment
(`langgraph_memory.store.as_of`); the calls that write raise
[`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].

    then = mem.as_of(datetime(2026, 3, 3, tzinfo=UTC))
    lessons = then.get_relevant_lessons("momentum in rate shocks")   # what the desk knew on 3 March

Lineage is read as it is now: an id is found where its lineage says, then read as of the moment (an item
created later is not found then). Strategy ``versions()`` and searches with ``include_retired`` need the
statuses of today's store and are refused; ``history()`` lists an item's versions instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from langgraph_memory.errors import InvalidArgumentError, NotFoundError, ReadOnlyError
from langgraph_memory.research.api import ResearchAPI, StrategyVersion
from langgraph_memory.research.lineage import ItemRef, LineageStore
from langgraph_memory.research.procedures import ProceduralAPI
from langgraph_memory.research.typed import Hit, TypedItems
from langgraph_memory.store.as_of import AsOfStore

__all__ = ["ResearchAsOf"]


class _TypedAsOf(TypedItems):
    """Typed items read from an ``AsOfStore``: reads as of its moment, no writes."""

    def __init__(self, store: AsOfStore, lineage: LineageStore, *, scope: tuple[str, ...], guard: Any) -> None:
        # Only reads reach the store, and an AsOfStore answers every read TypedItems makes of a ChromaStore.
        super().__init__(store, lineage, scope=scope, guard=guard)  # type: ignore[arg-type]
        self.moment = store.moment

    def _refuse(self) -> ReadOnlyError:
        return ReadOnlyError(
            f"this view reads the memory as of {self.moment.isoformat()} and cannot be written; "
            "write through the Memory itself"
        )

    def put(self, label: str, value: dict[str, Any], parents: list[tuple[str, str]], **kwargs: Any) -> BaseModel:
        raise self._refuse()

    def update(self, item_id: str, label: str, changes: Any) -> BaseModel:
        raise self._refuse()

    def load(self, item_id: str, label: str | None = None) -> tuple[ItemRef, dict[str, Any]]:
        ref = self.ref(item_id, label)
        item = self.store.get(ref.namespace, item_id)
        if item is None:
            raise NotFoundError(
                f"item {item_id!r} was not in memory as of {self.moment.isoformat()}: "
                "it was stored later, or deleted or archived before"
            )
        return ref, dict(item.value)

    def search(self, label: str, query: str | None, *, k: int, **kwargs: Any) -> list[Hit[Any]]:
        if kwargs.get("include_retired"):
            raise InvalidArgumentError(
                "include_retired is not read as of a moment (the statuses are today's); leave it out"
            )
        return super().search(label, query, k=k, **kwargs)


class ResearchAsOf(ResearchAPI, ProceduralAPI):
    """The typed research calls over ``store`` (an ``AsOfStore``): reads as of its moment; writes refused.

    Made by `Memory.as_of()`; see the module.
    """

    def __init__(self, store: Any, lineage: LineageStore, *, scope: tuple[str, ...] = (), guard: Any = None) -> None:
        #: The read-only store as of the moment (a LangGraph ``BaseStore``).
        self.store = store
        ResearchAPI.__init__(self, _TypedAsOf(store, lineage, scope=scope, guard=guard))

    @property
    def moment(self) -> datetime:
        """The moment read, as a UTC datetime."""
        return self.store.moment

    def __repr__(self) -> str:
        return f"ResearchAsOf({self.moment.isoformat()})"

    def versions(self, name: str) -> list[StrategyVersion]:
        """Refused: a strategy's versions carry today's statuses. ``Memory.history(id)`` lists an item's past."""
        raise InvalidArgumentError(
            "strategy versions are not read as of a moment; read one version with get(id), "
            "or its past with Memory.history(id)"
        )
