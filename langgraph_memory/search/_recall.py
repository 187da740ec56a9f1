"""How well HNSW answers on each collection, measured on the searches themselves.

HNSW's recall depends on the data, not only on its settings: on clustered
embeddings it finds 94-100% of the true top 10, on unstructured vectors
(points spread evenly in 384 dimensions) about a third. A planner that
trusted HNSW everywhere would return a third of the right answers there,
while scoring a few tens of thousands of vectors exactly costs about as much
as the HNSW query.

`RecallWatch` keeps, per collection, the recall of the last few HNSW searches
that were checked against an exact answer. A search is checked when it is
`due`: the first few of a collection in this process, then one in `EVERY`.
A checked search costs one exact scoring of its scope on top of its HNSW
query; the rest cost nothing.

Examples:
    >>> watch = RecallWatch()
    >>> watch.due("lessons")
    True
    >>> for _ in range(3):
    ...     watch.record("lessons", found=3, of=10)
    >>> watch.weak("lessons")
    True
"""

from __future__ import annotations

import threading
from collections import deque

__all__ = ["RecallWatch", "RECALL_FLOOR"]

#: Below this mean recall@k HNSW is not trusted where exact scoring is affordable.
RECALL_FLOOR = 0.9
#: The first searches of a collection that are checked; after them, one in `EVERY`.
FIRST = 4
EVERY = 32
#: Checks kept per collection (older ones are forgotten: the data can change).
WINDOW = 16
#: Fewest checks before a collection is judged.
MIN_CHECKS = 3


class RecallWatch:
    """Recall of HNSW per collection, from searches checked against exact scoring (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._checks: dict[str, deque[float]] = {}

    def due(self, collection: str) -> bool:
        """Whether this search of ``collection`` should also be scored exactly (counts the search)."""
        with self._lock:
            n = self._seen.get(collection, 0)
            self._seen[collection] = n + 1
        return n < FIRST or n % EVERY == 0

    def record(self, collection: str, *, found: int, of: int) -> None:
        """An HNSW answer held ``found`` of the ``of`` true best results."""
        if of <= 0:
            return
        with self._lock:
            self._checks.setdefault(collection, deque(maxlen=WINDOW)).append(found / of)

    def recall(self, collection: str) -> float | None:
        """The mean recall of the kept checks, or None before `MIN_CHECKS` of them."""
        with self._lock:
            checks = self._checks.get(collection)
            if not checks or len(checks) < MIN_CHECKS:
                return None
            return sum(checks) / len(checks)

    def weak(self, collection: str) -> bool:
        """Whether HNSW measured below `RECALL_FLOOR` on ``collection``."""
        r = self.recall(collection)
        return r is not None and r < RECALL_FLOOR
