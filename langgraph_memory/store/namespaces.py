"""Namespaces: validation, and ``list_namespaces`` from the catalog.

The catalog keeps one row per namespace with the number of items it holds
(`langgraph_memory.catalog.items`), so listing namespaces reads that
small table, never the items.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition

from langgraph_memory.catalog.connection import Connection
from langgraph_memory.catalog.item_rows import NS_SEP, namespaces_with_items
from langgraph_memory.config import MAX_LABEL_CHARS, MAX_NAMESPACE_LABELS
from langgraph_memory.errors import NamespaceError

__all__ = ["validate_namespace", "select_namespaces", "list_namespaces"]


def validate_namespace(namespace: Any, *, for_write: bool) -> tuple[str, ...]:
    """The namespace as a tuple, or `NamespaceError` for labels LangGraph's stores refuse.

    A list is accepted and turned into a tuple, as LangGraph's stores accept one.
    """
    if isinstance(namespace, list):
        namespace = tuple(namespace)
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
            raise NamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain periods ('.')."
            )
        if "\x00" in label or NS_SEP in label or "\x1e" in label:
            raise NamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain control separators."
            )
    # Limits apply to writes only: a namespace stored before they existed stays readable.
    if for_write and len(namespace) > MAX_NAMESPACE_LABELS:
        raise NamespaceError(f"a namespace may have at most {MAX_NAMESPACE_LABELS} labels, got {len(namespace)}")
    if for_write:
        for i, label in enumerate(namespace):
            if len(label) > MAX_LABEL_CHARS:
                raise NamespaceError(
                    f"namespace label {i} has {len(label):,} characters; at most {MAX_LABEL_CHARS} are allowed"
                )
    if for_write and namespace[0] == "langgraph":
        raise NamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
    return namespace


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type not in ("prefix", "suffix"):
        raise NamespaceError(f"unsupported namespace match type {condition.match_type!r}; use prefix or suffix")
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or k == p for k, p in pairs)


def select_namespaces(namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """Apply prefix/suffix/wildcard conditions, ``max_depth``, sorting and paging."""
    selected = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        selected = sorted({ns[: op.max_depth] for ns in selected})
    else:
        selected = sorted(set(selected))
    return selected[op.offset : op.offset + op.limit]


def _literal_prefix(conditions: Sequence[MatchCondition] | None) -> tuple[str, ...]:
    """The longest wildcard-free prefix the conditions require (narrows the catalog read)."""
    for cond in conditions or ():
        if cond.match_type == "prefix":
            labels: list[str] = []
            for label in cond.path:
                if label == "*":
                    break
                labels.append(label)
            return tuple(labels)
    return ()


def list_namespaces(conn: Connection, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """``list_namespaces`` over the catalog: namespaces holding items, selected by ``op``."""
    return select_namespaces(namespaces_with_items(conn, _literal_prefix(op.match_conditions)), op)
