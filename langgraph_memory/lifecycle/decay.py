"""Forgetting by decay: retire the memories whose weight fell under the forgetting threshold.

An item's weight is ``temporal_weight(hours idle, memory type) * importance_multiplier(access count)``
(`langgraph_memory.search.ranking`), idle hours counted from ``max(updated_at, last_accessed_at)`` so that
a memory still recalled keeps its weight. A dry run (the default) only reports; a real run retires the
decayed items, rechecking each in the retiring transaction. Nothing is deleted (``docs/lifecycle.md``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.registry import MemoryType
from langgraph_memory.search.ranking import TemporalConfig, importance_multiplier, temporal_weight
from langgraph_memory.store.items import StoreItems

__all__ = ["DecayedItem", "DecayReport", "decay_weight", "cleanup_decayed"]

logger = logging.getLogger(__name__)

_HOUR = 3600.0
_CHUNK = 500


@dataclass(frozen=True)
class DecayedItem:
    """An item whose weight fell under the forgetting threshold."""

    namespace: tuple[str, ...]
    key: str
    collection: str
    memory_type: MemoryType
    idle_hours: float
    access_count: int
    weight: float


@dataclass
class DecayReport:
    """What a decay cleanup found (and, unless ``dry_run``, retired).

    ``scanned`` items were weighed (retired and superseded ones are not);
    ``decayed`` fell under ``threshold``; ``retired`` of them were retired
    (items used again meanwhile are left alone).
    """

    dry_run: bool
    threshold: float
    now: float
    scanned: int = 0
    decayed: list[DecayedItem] = field(default_factory=list)
    retired: int = 0
    by_collection: dict[str, int] = field(default_factory=dict)


def decay_weight(item: StoredItem, memory_type: MemoryType, config: TemporalConfig, now: float) -> tuple[float, float]:
    """``(weight, idle hours)`` of ``item`` at ``now``: temporal decay times access reinforcement."""
    idle = max(0.0, now - item.last_activity) / _HOUR
    return temporal_weight(idle, memory_type, config) * importance_multiplier(item.access_count, config), idle


def cleanup_decayed(
    items: StoreItems,
    *,
    config: TemporalConfig | None = None,
    now: float | None = None,
    collections: Iterable[str] | None = None,
    dry_run: bool = True,
) -> DecayReport:
    """Find (and unless ``dry_run``, retire) the items of ``items``' store that decayed below the threshold.

    Args:
        items: the store's item API (``store.items``).
        config: decay rates, reinforcement and ``forgetting_threshold``
            (default 0.01).
        now: the time to weigh at, epoch seconds (default: the clock).
        collections: names or labels to clean (default: all of them).
        dry_run: report only (the default); False retires the decayed items.

    Examples:
        >>> five_years_on = time.time() + 5 * 365 * 86400
        >>> report = cleanup_decayed(store.items, now=five_years_on)
        >>> [(d.collection, round(d.weight, 4)) for d in report.decayed][:2]
        [('research_findings', 0.0), ('research_findings', 0.0)]
    """
    cfg = config or TemporalConfig()
    at = time.time() if now is None else float(now)
    report = DecayReport(dry_run=dry_run, threshold=cfg.forgetting_threshold, now=at)
    items.flush_access()  # access counts and last reads must be current before weighing
    registry = items.collections
    wanted = list(registry) if collections is None else [registry.by_name(c) for c in collections]
    for spec in dict.fromkeys(wanted):
        name, mtype = spec.name, spec.memory_type
        hidden = items.collection_statuses(name)
        found: list[DecayedItem] = []
        for it in items.iter_items(name):
            st = hidden.get(it.uid)
            if st is not None and st.item_created_at == it.created_at:
                continue
            report.scanned += 1
            weight, idle = decay_weight(it, mtype, cfg, at)
            if weight < cfg.forgetting_threshold:
                found.append(DecayedItem(it.namespace, it.key, name, mtype, idle, it.access_count, weight))
        if not found:
            continue
        report.decayed.extend(found)
        report.by_collection[name] = len(found)
        if not dry_run:
            for start in range(0, len(found), _CHUNK):
                report.retired += len(_retire_still_decayed(items, found[start : start + _CHUNK], mtype, cfg, at))
    logger.info(
        "decay cleanup%s: %d of %d items under %.4g%s",
        " (dry run)" if dry_run else "",
        len(report.decayed),
        report.scanned,
        cfg.forgetting_threshold,
        "" if dry_run else f", {report.retired} retired",
    )
    return report


def _retire_still_decayed(
    items: StoreItems, chunk: list[DecayedItem], mtype: MemoryType, cfg: TemporalConfig, at: float
) -> list[ItemStatus]:
    """Retire the items of ``chunk`` that are still under the threshold, checked in the retiring transaction."""

    def still_decayed(it: StoredItem) -> bool:
        return decay_weight(it, mtype, cfg, at)[0] < cfg.forgetting_threshold

    return items.retire_where(
        [(d.namespace, d.key) for d in chunk],
        still_decayed,
        reason=f"decayed below the forgetting threshold ({cfg.forgetting_threshold:g})",
    )
