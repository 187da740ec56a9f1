"""Reads that count: access tracking and TTL refresh without a write per read.

Every ``get``/``search`` with refresh on notes the items it returned in an
`AccessLog` (in memory, no I/O). The store applies the log to the
catalog's item rows (last access, access count, refreshed expiry) in one
transaction every couple of seconds, before each TTL sweep and archive run,
on ``close()`` and at interpreter exit. A crash can lose the last interval
of access counts and TTL refreshes, never a write.

    >>> log = AccessLog()
    >>> log.note([(7, None)], at=100.0)
    >>> log.note([(7, 5.0)], at=160.0)
    >>> log.take()
    {7: Access(at=160.0, count=2, expires_at=460.0)}
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Access", "AccessLog"]


@dataclass
class Access:
    """Reads of one item not yet applied: latest time, how many, refreshed expiry."""

    at: float
    count: int
    expires_at: float | None = None

    def merge(self, other: Access) -> None:
        self.at = max(self.at, other.at)
        self.count += other.count
        if other.expires_at is not None:
            self.expires_at = max(self.expires_at or 0.0, other.expires_at)


class AccessLog:
    """Pending reads by catalog item id: ``{item_id: Access}``."""

    def __init__(self) -> None:
        self._pending: dict[int, Access] = {}
        self._lock = threading.Lock()

    def note(self, items: Iterable[tuple[int, float | None]], at: float) -> None:
        """Record one read at ``at`` of each ``(item id, ttl minutes)`` (refreshing the TTL, if any)."""
        with self._lock:
            for item_id, ttl_minutes in items:
                acc = Access(at, 1, at + ttl_minutes * 60.0 if ttl_minutes else None)
                seen = self._pending.get(item_id)
                if seen is None:
                    self._pending[item_id] = acc
                else:
                    seen.merge(acc)

    def expiry(self, item_id: int) -> float | None:
        """The refreshed expiry of an item not applied yet, if a read refreshed it."""
        with self._lock:
            acc = self._pending.get(item_id)
            return acc.expires_at if acc is not None else None

    def take(self) -> dict[int, Access]:
        """Remove and return everything pending."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def give_back(self, pending: dict[int, Access]) -> None:
        """Re-queue reads whose application failed, merged with newer ones."""
        with self._lock:
            for item_id, acc in pending.items():
                if item_id in self._pending:
                    self._pending[item_id].merge(acc)
                else:
                    self._pending[item_id] = acc

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pending)
