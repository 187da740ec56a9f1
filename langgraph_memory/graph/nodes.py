"""Graph nodes that recall and store memories, using whatever store the graph was compiled with.

::

    from langgraph.graph import StateGraph
    from langgraph_memory.graph.nodes import recall_node, store_node

    builder = StateGraph(State)
    builder.add_node("recall", recall_node(("lessons",), query="objective", output_key="lessons"))
    builder.add_node("remember", store_node(("lessons",), values="new_lessons", parent="strategy_id"))
    graph = builder.compile(store=store)          # InMemoryStore, ChromaStore, ...

Both nodes work with ``invoke`` and ``ainvoke`` (they carry a sync and an
async implementation). With a ``ChromaStore``, recall leaves out retired and
superseded items unless ``include_retired=True``; a ``ChromaStore`` node
records lineage in the store's one lineage (``store.lineage``), the same
``Memory`` and the archiver use. Namespace labels may be templates filled at
run time from LangGraph's runtime ``context=`` or the run's
``config["configurable"]``: ``("memories", "{user_id}")``. ``{user_id}`` and
LangMem's ``{langgraph_user_id}`` name the same value, so either spelling
works with either key.

This module deliberately does NOT use ``from __future__ import annotations``:
LangGraph injects the store only into a parameter whose annotation is the
real ``BaseStore`` class, and a string annotation would silently get None.
"""

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, Optional, Union

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, SearchItem

from langgraph_memory.catalog.evidence import check_cutoff
from langgraph_memory.config import DEFAULT_K, MIN_RELEVANCE
from langgraph_memory.errors import ConfigError, InvalidArgumentError, ValidationError
from langgraph_memory.graph.time_travel import checkpoint_store
from langgraph_memory.research.collections import collection_for
from langgraph_memory.search.ranking import keep_relevant

__all__ = ["recall_node", "store_node", "format_namespace", "search_options"]

logger = logging.getLogger(__name__)

Namespace = tuple[str, ...]
NamespaceSpec = Union[str, Sequence[str]]
StateGetter = Union[str, Callable[[Any], Any]]
#: A data cut-off: one date, or a function of the state giving each run's (None: no cut-off).
Cutoff = Union[date, Callable[[Any], Optional[date]]]


# Where LangGraph keeps the run's Runtime (and so its ``context=``) inside config["configurable"].
try:
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME as _RUNTIME_KEY
except ImportError:  # pragma: no cover - LangGraph moved it
    _RUNTIME_KEY = "__pregel_runtime"

# Placeholders that name the same value: ours, and LangMem's default namespace's.
_ALIASES = {"user_id": "langgraph_user_id", "langgraph_user_id": "user_id"}
_MISSING = object()


def _from_context(context: Any, name: str) -> Any:
    if context is None:
        return _MISSING
    if isinstance(context, Mapping):
        return context.get(name, _MISSING)
    return getattr(context, name, _MISSING)


class _TemplateValues(Mapping):
    """The values a namespace template may use: the runtime context first, then ``configurable``."""

    def __init__(self, config: Optional[RunnableConfig]) -> None:
        self.configurable = dict((config or {}).get("configurable") or {})
        runtime = self.configurable.get(_RUNTIME_KEY)
        self.context = getattr(runtime, "context", None)

    def _lookup(self, name: str) -> Any:
        value = _from_context(self.context, name)
        if value is _MISSING or value is None:
            value = self.configurable.get(name, _MISSING)
        return value

    def __getitem__(self, name: str) -> Any:
        value = self._lookup(name)
        if (value is _MISSING or value is None) and name in _ALIASES:
            value = self._lookup(_ALIASES[name])
        if value is _MISSING or value is None:
            raise KeyError(name)
        return value

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.configurable)

    def __len__(self) -> int:
        return len(self.configurable)


def format_namespace(template: NamespaceSpec, config: Optional[RunnableConfig] = None) -> Namespace:
    """Fill ``{name}`` placeholders of a namespace from the run's ``context=`` or ``config["configurable"]``.

    A bare string is a one-label namespace. The runtime context (LangGraph's
    ``graph.invoke(..., context=...)``: a dict, dataclass or pydantic model)
    is read first, then ``configurable``; ``{user_id}`` and
    ``{langgraph_user_id}`` (LangMem's placeholder) stand in for each other.

    Examples:
        >>> format_namespace(("memories", "{user_id}"), {"configurable": {"user_id": "u1"}})
        ('memories', 'u1')
        >>> format_namespace(("memories", "{langgraph_user_id}"), {"configurable": {"user_id": "u1"}})
        ('memories', 'u1')
    """
    labels = (template,) if isinstance(template, str) else tuple(template)
    values = _TemplateValues(config)
    out = []
    for label in labels:
        if "{" in label:
            try:
                label = label.format_map(values)
            except KeyError as exc:
                name = exc.args[0]
                raise ConfigError(
                    f"namespace label {label!r} needs a value for {name!r}: pass it in the run's context "
                    f"(graph.invoke(..., context={{{name!r}: ...}})) or config "
                    f"(graph.invoke(..., {{'configurable': {{{name!r}: ...}}}}))"
                ) from None
        if not label:
            raise ConfigError(f"namespace template {labels!r} produced an empty label")
        out.append(label)
    return tuple(out)


def _namespaces(spec: Union[NamespaceSpec, Sequence[NamespaceSpec]]) -> list[NamespaceSpec]:
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, tuple) and spec and all(isinstance(x, str) for x in spec):
        return [spec]  # a tuple of labels is one namespace; a list holds several
    if (
        isinstance(spec, (list, tuple))
        and spec
        and all(
            isinstance(s, str) or (isinstance(s, (tuple, list)) and s and all(isinstance(x, str) for x in s))
            for s in spec
        )
    ):
        return list(spec)
    raise InvalidArgumentError(
        f"a namespace is a label ('lessons'), a tuple of labels (('memories', '{{user_id}}')) or a list of "
        f"them, got {type(spec).__name__} {spec!r}"
    )


def _get(state: Any, getter: StateGetter) -> Any:
    if callable(getter):
        return getter(state)
    if isinstance(state, dict):
        return state.get(getter)
    return getattr(state, getter, None)


def _hit(item: SearchItem) -> dict[str, Any]:
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "score": item.score,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def _merge(results: list[list[SearchItem]], k: int, min_relevance: Optional[float]) -> list[dict[str, Any]]:
    seen: set[tuple[tuple[str, ...], str]] = set()
    hits = []
    for r in (r for rs in results for r in rs):  # overlapping prefixes find an item twice
        ident = (tuple(r.namespace), r.key)
        if ident not in seen:
            seen.add(ident)
            hits.append(r)
    hits = keep_relevant(hits, min_relevance)
    hits.sort(key=lambda h: (h.score is not None, h.score or 0.0), reverse=True)
    return [_hit(h) for h in hits[:k]]


def search_options(store: BaseStore, include_retired: bool) -> dict[str, Any]:
    """Extra ``search`` arguments: a store with item statuses hides retired and superseded items unless asked."""
    return {"include_retired": True} if include_retired and getattr(store, "supports_status", False) else {}


def _require_store(store: Optional[BaseStore], node: str) -> BaseStore:
    if store is None:
        raise ConfigError(f"node {node!r} needs a store: compile the graph with store=mem.store (or any BaseStore)")
    return store


def recall_node(
    namespaces: Union[NamespaceSpec, Sequence[NamespaceSpec]],
    *,
    query: StateGetter = "query",
    output_key: str = "memories",
    filter: Optional[dict[str, Any]] = None,
    k: int = DEFAULT_K,
    min_relevance: Optional[float] = MIN_RELEVANCE,
    include_retired: bool = False,
    data_cutoff: Optional[Cutoff] = None,
    include_undated: bool = False,
    as_of_checkpoint: bool = False,
    name: str = "recall",
) -> Any:
    """A node that searches memories for a query taken from the state.

    Args:
        namespaces: one namespace (a tuple ``("lessons", "desk-1")``, or a
            label ``"lessons"``) or a list of them (``["lessons", "research"]``); each is searched and the results merged by score.
            Labels may be templates such as ``"{user_id}"`` (from the config).
        query: the state key holding the query, or a function of the state.
            An empty query writes an empty list.
        output_key: the state key that receives the results: a list of dicts
            ``{"namespace", "key", "value", "score", "created_at", "updated_at"}``,
            best first, at most ``k``.
        filter: a LangGraph store filter applied to every namespace.
        k: how many results (default 5).
        min_relevance: drop results scoring lower (default ``MIN_RELEVANCE``, 0.3: a relevance of 30 %
            relevance; None keeps them all; see `langgraph_memory.search.ranking`).
        include_retired: also recall retired and superseded items (a
            ``ChromaStore`` leaves them out by default).
        data_cutoff: recall only memories whose evidence ends on or before this
            ``datetime.date`` (see ``ChromaStore.search``): a date, or a function of the
            state giving each run's date (None for no cut-off), so that a research loop
            recalls only what its in-sample period allows. Needs a store that supports it
            (``ChromaStore``); any other raises `ConfigError` rather than look ahead.
        include_undated: with a cut-off, also recall memories whose evidence end is unknown.
        as_of_checkpoint: recall the memory as of the checkpoint the step starts from, so that a replay of
            the thread from an earlier checkpoint recalls what the first run recalled (LangGraph's time
            travel; see `langgraph_memory.graph.time_travel`). Needs a store that keeps history (ChromaStore).
            With ``data_cutoff`` too, it recalls the memory of that moment whose evidence ends by the cut-off.

    Examples:
        >>> builder.add_node("recall", recall_node("lessons", query="objective", output_key="lessons"))  # a line of a graph definition (builder is the caller's StateGraph)  # doctest: +SKIP

        With a cut-off taken from the state (the lesson in ``store`` was learnt from a backtest of 2015-2024):

        >>> from typing import TypedDict
        >>> from langgraph.graph import START, StateGraph
        >>> class State(TypedDict, total=False):
        ...     objective: str
        ...     in_sample_end: date
        ...     memories: list
        >>> builder = StateGraph(State)
        >>> _ = builder.add_node("recall", recall_node("lessons", query="objective",
        ...                                            data_cutoff=lambda state: state["in_sample_end"]))
        >>> graph = builder.add_edge(START, "recall").compile(store=store)
        >>> [len(graph.invoke({"objective": "whipsaw", "in_sample_end": date(y, 12, 31)})["memories"]) for y in (2023, 2024)]
        [0, 1]
    """
    specs = _namespaces(namespaces)
    if k <= 0:
        raise ConfigError(f"k must be positive, got {k}")
    if data_cutoff is not None and not callable(data_cutoff):
        check_cutoff(data_cutoff)  # a fixed cut-off that is not a date fails when the node is made

    def _cutoff(state: Any, store: BaseStore) -> dict[str, Any]:
        """The ``search`` arguments of the run's cut-off, if it has one."""
        day = check_cutoff(data_cutoff(state) if callable(data_cutoff) else data_cutoff)
        if day is None:
            return {}
        if not getattr(store, "supports_data_cutoff", False):
            raise ConfigError(
                f"node {name!r} has a data cut-off, but {type(store).__name__} cannot apply one: compile the graph "
                "with a ChromaStore (mem.store), or drop data_cutoff"
            )
        return {"data_cutoff": day, "include_undated": include_undated}

    def _plan(state: Any, config: Optional[RunnableConfig]) -> tuple[Optional[str], list[Namespace]]:
        text = _get(state, query)
        if text is not None and not isinstance(text, str):
            raise ValidationError(f"recall query must be a string, got {type(text).__name__}")
        return (text or None), [format_namespace(s, config) for s in specs]

    def recall(state: Any, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        store = _require_store(store, name)
        text, nss = _plan(state, config)
        if text is None:
            return {output_key: []}
        opts = search_options(store, include_retired)
        if as_of_checkpoint:
            store = checkpoint_store(store, config)
        opts |= _cutoff(state, store)
        results = [store.search(ns, query=text, filter=filter, limit=k, **opts) for ns in nss]
        return {output_key: _merge(results, k, min_relevance)}

    async def arecall(state: Any, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        store = _require_store(store, name)
        text, nss = _plan(state, config)
        if text is None:
            return {output_key: []}
        opts = search_options(store, include_retired)
        if as_of_checkpoint:
            store = checkpoint_store(store, config)
        opts |= _cutoff(state, store)
        results = await asyncio.gather(*(store.asearch(ns, query=text, filter=filter, limit=k, **opts) for ns in nss))
        return {output_key: _merge(list(results), k, min_relevance)}

    return _runnable(recall, arecall, name)


def _as_values(raw: Any, namespace: Namespace) -> list[dict[str, Any]]:
    """State values to store values: a string fills the collection's embedded field."""
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    field = collection_for(namespace).text_field
    out = []
    for item in items:
        if isinstance(item, str):
            out.append({field: item})
        elif isinstance(item, dict):
            out.append(dict(item))
        elif hasattr(item, "model_dump"):
            out.append(item.model_dump(exclude_none=True))
        else:
            raise ValidationError(f"store_node can store strings, dicts or pydantic models, got {type(item).__name__}")
    return out


def _prepare_puts(
    state: Any,
    config: Optional[RunnableConfig],
    namespace: NamespaceSpec,
    values: StateGetter,
    parent: Optional[StateGetter],
) -> tuple[Namespace, list[tuple[str, dict[str, Any]]], list[str]]:
    ns = format_namespace(namespace, config)
    parents: list[str] = []
    if parent is not None:
        got = _get(state, parent)
        parents = [got] if isinstance(got, str) else [p for p in (got or []) if p]
    puts = []
    for value in _as_values(_get(state, values), ns):
        key = str(value.get("id") or uuid.uuid4())
        value["id"] = key
        if parents and not value.get("parent_id"):
            value["parent_id"] = parents[0]
        collection_for(ns).validate(value)
        puts.append((key, value))
    return ns, puts, parents


def _write(store: BaseStore, ns: Namespace, puts: list[tuple[str, dict[str, Any]]], parents: list[str]) -> None:
    """Put each value; a store with lineage records it in the same transaction as the item."""
    if not getattr(store, "supports_lineage", False):
        for key, value in puts:
            store.put(ns, key, value)
        return
    # A store that says it supports lineage has the store API of ChromaStore (collections, lineage, items).
    chroma: Any = store
    coll = chroma.collections.for_namespace(ns).name
    lineage = chroma.lineage
    for key, value in puts:
        item_parents = [value["parent_id"]] if value.get("parent_id") else []
        item_parents += [p for p in parents if p not in item_parents]
        links = [(p, "derived_from") for p in item_parents]

        def register(conn: Any, key: str = key, links: list[tuple[str, str]] = links) -> None:
            lineage.register_in(conn, key, coll, ns, parents=links)

        chroma.items.put(ns, key, value, before=register)


def store_node(
    namespace: NamespaceSpec,
    *,
    values: StateGetter = "memories_to_store",
    parent: Optional[StateGetter] = None,
    output_key: Optional[str] = "stored_ids",
    name: str = "store",
) -> Any:
    """A node that stores values from the state as memories (typed when the namespace is).

    Args:
        namespace: where to store, e.g. ``("lessons",)`` or ``("memories", "{user_id}")``.
        values: a state key or function giving a string, a dict, a pydantic
            model, or a list of them. A string fills the collection's
            embedded field (``lesson`` for lessons, ``content`` for research).
        parent: a state key or function giving the parent id (or ids): written
            as ``parent_id`` and, with a ChromaStore, recorded in its lineage
            in the same transaction as the item (the parent must be a known item).
        output_key: the state key that receives the new keys (ids), or None.

    Each item gets a fresh UUID key (or its own ``id``). Values are validated
    against the collection's schema before anything is written.

    Examples:
        >>> builder.add_node("remember", store_node(("lessons",), values="lesson_text", parent="strategy_id"))  # a line of a graph definition (builder is the caller's StateGraph)  # doctest: +SKIP
    """
    if not (
        isinstance(namespace, str)
        or (isinstance(namespace, tuple) and namespace and all(isinstance(x, str) for x in namespace))
    ):
        raise InvalidArgumentError(
            f"a namespace is a label ('lessons') or a tuple of labels (('memories', '{{user_id}}')), "
            f"got {type(namespace).__name__} {namespace!r}"
        )

    def _out(keys: list[str]) -> dict[str, Any]:
        return {output_key: keys} if output_key else {}

    def store_values(state: Any, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        store = _require_store(store, name)
        ns, puts, parents = _prepare_puts(state, config, namespace, values, parent)
        if not puts:
            return _out([])
        _write(store, ns, puts, parents)
        return _out([k for k, _ in puts])

    async def astore_values(state: Any, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        store = _require_store(store, name)
        ns, puts, parents = _prepare_puts(state, config, namespace, values, parent)
        if not puts:
            return _out([])
        from langgraph_memory.store import ChromaStore

        if isinstance(store, ChromaStore):
            await asyncio.to_thread(_write, store, ns, puts, parents)
        else:
            for key, value in puts:
                await store.aput(ns, key, value)
        return _out([k for k, _ in puts])

    return _runnable(store_values, astore_values, name)


def _runnable(func: Callable[..., Any], afunc: Callable[..., Any], name: str) -> Any:
    """A node with both a sync and an async body, with LangGraph's store injection.

    ``RunnableCallable`` is what LangGraph itself wraps plain node functions
    in; it inspects the signature for ``store: BaseStore`` and ``config``.
    """
    try:
        from langgraph._internal._runnable import RunnableCallable
    except ImportError:  # pragma: no cover - older/newer LangGraph: sync body only
        logger.debug("RunnableCallable unavailable; node %s runs its sync body in a thread under ainvoke", name)
        func.__name__ = name
        return func
    return RunnableCallable(func, afunc, name=name, trace=False)
