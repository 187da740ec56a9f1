"""Namespaces: validation, prefix ``where`` clauses, and the registry behind ``list_namespaces``.

Chroma cannot list distinct metadata values, so the store keeps one small
registry collection (``lgm_namespaces``) with a record per namespace that
holds items. Puts add to it; deletes and TTL sweeps remove a namespace once
its last item is gone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition

from langgraph_memory.collections import CollectionSpec
from langgraph_memory.errors import NamespaceError
from langgraph_memory.store.records import K_NS, NS_SEP, level_key

__all__ = ["validate_namespace", "prefix_clauses", "NamespaceRegistry", "select_namespaces"]

REGISTRY_NAME = "lgm_namespaces"
_K_COLLECTION = "lgm:col"


def validate_namespace(namespace: tuple[str, ...], *, for_write: bool) -> None:
    """Raise :class:`NamespaceError` for labels LangGraph's stores refuse."""
    if not isinstance(namespace, tuple):
        raise NamespaceError(f"a namespace must be a tuple of strings, got {type(namespace).__name__}")
    if for_write and not namespace:
        raise NamespaceError("Namespace cannot be empty: give at least one label, e.g. ('research',).")
    for label in namespace:
        if not isinstance(label, str):
            raise NamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be strings, not {type(label).__name__}."
            )
        if not label:
            raise NamespaceError(f"Namespace labels cannot be empty strings. Got {namespace}.")
        if "." in label:
            raise NamespaceError(f"Invalid namespace label {label!r} in {namespace}: labels cannot contain periods ('.').")
        if "\x00" in label or NS_SEP in label or "\x1e" in label:
            raise NamespaceError(f"Invalid namespace label {label!r} in {namespace}: labels cannot contain control separators.")
    if for_write and namespace[0] == "langgraph":
        raise NamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')


def prefix_clauses(spec: CollectionSpec, prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """``where`` clauses selecting items under ``prefix`` inside ``spec``'s collection.

    A typed collection holds only its own first label, so ``("research",)``
    needs no clause at all: the common search runs unfiltered (see PITFALLS).
    """
    start = 1 if spec.typed else 0
    return [{level_key(i): {"$eq": prefix[i]}} for i in range(start, len(prefix))]


def _ns_id(namespace: tuple[str, ...]) -> str:
    return hashlib.blake2b(NS_SEP.join(namespace).encode("utf-8"), digest_size=16).hexdigest()


class NamespaceRegistry:
    """The set of namespaces holding items, kept in a Chroma collection.

    ``known`` (optional) remembers what this process has seen registered, so
    a put into a known namespace costs no registry write. It must be dropped
    whenever another process may have changed the registry: the embedded
    store's handle clears it when it reopens the folder after a foreign
    write; a server store passes none.
    """

    def __init__(self, client: Any, known: dict[tuple[str, ...], str] | None = None) -> None:
        self._col = client.get_or_create_collection(
            REGISTRY_NAME, metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        self._known = known

    def add(self, namespaces: dict[tuple[str, ...], str]) -> None:
        """Record namespaces (mapping namespace -> collection name)."""
        known = self._known
        items = [(ns, col) for ns, col in namespaces.items() if known is None or known.get(ns) != col]
        if not items:
            return
        self._col.upsert(
            ids=[_ns_id(ns) for ns, _ in items],
            embeddings=[[1.0] for _ in items],
            metadatas=[{K_NS: NS_SEP.join(ns), _K_COLLECTION: col} for ns, col in items],
        )
        if known is not None:
            known.update(items)

    def remove(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        """Forget namespaces that hold no items any more."""
        namespaces = list(namespaces)
        if self._known is not None:
            for ns in namespaces:
                self._known.pop(ns, None)
        ids = [_ns_id(ns) for ns in namespaces]
        if ids:
            self._col.delete(ids=ids)

    def all(self) -> list[tuple[tuple[str, ...], str]]:
        """Every registered namespace with its collection name."""
        got = self._col.get(include=["metadatas"])
        return [(tuple(m[K_NS].split(NS_SEP)), m[_K_COLLECTION]) for m in got["metadatas"] or [] if m]


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    if condition.match_type not in ("prefix", "suffix"):
        raise NamespaceError(f"unsupported namespace match type {condition.match_type!r}; use prefix or suffix")
    return all(p == "*" or k == p for k, p in pairs)


def select_namespaces(namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """Apply prefix/suffix/wildcard conditions, ``max_depth``, sorting and paging."""
    selected = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        selected = sorted({ns[: op.max_depth] for ns in selected})
    else:
        selected = sorted(set(selected))
    return selected[op.offset : op.offset + op.limit]
