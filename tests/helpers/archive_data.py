"""Test data for the archive tests: items that look old, written honestly through ``restore_items``."""

from __future__ import annotations

import time
from typing import Any

from langgraph_memory.archive import Archiver
from langgraph_memory.catalog import StoredItem
from langgraph_memory.research.collections import collection_for

DAY = 86400.0


def old_item(
    emb: Any,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    *,
    days: float,
    accessed_days: float | None = None,
    access_count: int = 0,
    expires_at: float | None = None,
    now: float | None = None,
) -> StoredItem:
    """An item last updated ``days`` ago (last read ``accessed_days`` ago), with its real vector."""
    now = time.time() if now is None else now
    spec = collection_for(namespace)
    field = spec.embed_field or "$"
    text = value[spec.embed_field] if spec.embed_field else str(value)
    t = now - days * DAY
    acc = now - (accessed_days if accessed_days is not None else days) * DAY
    return StoredItem(
        namespace=namespace,
        key=key,
        value=value,
        created_at=t - 3600.0,
        updated_at=t,
        last_accessed_at=acc,
        access_count=access_count,
        expires_at=expires_at,
        ttl_minutes=60.0 if expires_at is not None else None,
        vectors=[emb.embed_query(text)],
        texts=[text],
        paths=[field],
    )


def make_lessons(store: Any, emb: Any, n: int, *, days: float = 120.0, prefix: str = "l") -> list[StoredItem]:
    items = [
        old_item(
            emb,
            ("lessons", f"desk{i % 3}"),
            f"{prefix}{i}",
            {"lesson": f"lesson number {i} about risk", "strategy_id": f"s{i % 5}", "iteration": i},
            days=days,
        )
        for i in range(n)
    ]
    for start in range(0, n, 1000):
        store.items.restore_items(items[start : start + 1000])
    return items


def all_uids(store: Any, archiver: Archiver, collection: str) -> tuple[list[str], list[str]]:
    """(live uids, archived uids) of a collection; archived read from the files themselves."""
    live = [it.uid for it in store.items.iter_items(collection)]
    archived = [a.uid for a in archiver.iter_archived(collection)]
    return live, archived
