"""Posting lists kept in memory between keyword searches, valid until the keyword index changes.

A query word held by most memories has a posting list of tens of thousands
of items at 100,000. Neither keyword index can hand it over quickly: FTS5
costs about a microsecond per posting through SQL (and tens of microseconds
per probe or per ``AND`` of two lists), PostgreSQL a row per posting. So
hybrid search would spend tens of milliseconds per query re-reading the same
lists, when the index has not changed since the last query.

`PostingCache` keeps the lists `keywords.match()` read, tagged with the
index's *stamp*: ``meta.keyword_version``, which every write to the keyword
index sets to a new random value in its own transaction
(`keywords.index_items()`, `keywords.unindex_items()`, `keywords.rebuild()`),
with the document and token totals beside it. A search reads the stamp first (one statement); when
it moved, every cached list is dropped. The scores are then computed from
the cached lists exactly as from freshly read ones, so results are identical
with or without the cache. Lists are kept least recently used first out, up
to ``max_postings`` postings in all (24 bytes each with the ids and length norms a search derives
from them: at most 96 MB at the default).

    >>> import numpy as np
    >>> cache = PostingCache()
    >>> cache.get((1, 10, 80), "rsi", cap=100) is None   # a search reads the stamp first: the cache takes it
    True
    >>> _ = cache.put((1, 10, 80), "rsi", 2, np.array([1030, 2055]))
    >>> cache.get((1, 10, 80), "rsi", cap=100).n
    2
    >>> cache.get((2, 11, 88), "rsi", cap=100) is None   # the index changed: dropped
    True
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from langgraph_memory.catalog.connection import Sql

__all__ = ["PostingCache", "Postings", "STAMP_SQL", "VERSION_KEY", "MAX_CACHED_POSTINGS"]

logger = logging.getLogger(__name__)

#: The ``meta`` key holding the keyword index's version (a new random value at every change).
VERSION_KEY = "keyword_version"
#: What a cached list is valid for: the change counter and the totals, read in one statement.
STAMP_SQL = Sql.both(
    "SELECT (SELECT value FROM meta WHERE key = 'keyword_version'), s.docs, s.tokens"
    " FROM keyword_stats s WHERE s.id = 1"
)
#: How many postings a cache keeps at most, over all its terms (24 bytes each with what is derived from them).
MAX_CACHED_POSTINGS = 4_000_000

Stamp = tuple[Any, ...]


@dataclass
class Postings:
    """One term's cached posting list."""

    #: How many items hold the term (above the cap it was read with: that cap + 1).
    n: int
    #: The keyword index's rowids (item id and length) of those items; None when ``n`` is above the cap.
    rowids: np.ndarray | None
    #: What the reader derived from ``rowids`` and wants to keep with them (valid as long as they are).
    derived: dict[Any, Any] = field(default_factory=dict)


class PostingCache:
    """Posting lists (FTS5 rowids: item id and length) by query term, for one catalog, thread-safe.

    Args:
        max_postings: the most postings kept over all terms (least recently used lists go first).
    """

    def __init__(self, *, max_postings: int = MAX_CACHED_POSTINGS) -> None:
        self.max_postings = max_postings
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._lists: OrderedDict[str, Postings] = OrderedDict()
        self._size = 0

    def get(self, stamp: Stamp, term: str, *, cap: int) -> Postings | None:
        """``term``'s postings if cached at ``stamp`` and valid for ``cap``; else None.

        A stamp other than the cache's drops every list.
        """
        with self._lock:
            if stamp != self._stamp:
                self._reset(stamp)
                return None
            got = self._lists.get(term)
            if got is None or (got.rowids is None and got.n <= cap):
                return None  # (cached as too long for a smaller cap: its true length is unknown)
            self._lists.move_to_end(term)
            return got

    def put(self, stamp: Stamp, term: str, n: int, rowids: np.ndarray | None) -> Postings:
        """Keep ``term``'s list as read at ``stamp`` (``rowids`` None: only its count, ``n``, above the cap)."""
        entry = Postings(n, rowids)
        size = 0 if rowids is None else len(rowids)
        with self._lock:
            if stamp != self._stamp or size > self.max_postings:
                return entry  # read before a change another search has already seen: not valid now
            old = self._lists.pop(term, None)
            if old is not None and old.rowids is not None:
                self._size -= len(old.rowids)
            self._lists[term] = entry
            self._size += size
            while self._size > self.max_postings:
                _term, dropped = self._lists.popitem(last=False)
                self._size -= 0 if dropped.rowids is None else len(dropped.rowids)
        return entry

    def clear(self) -> None:
        """Drop every list."""
        with self._lock:
            self._reset(None)

    def _reset(self, stamp: Stamp | None) -> None:
        self._stamp = stamp
        self._lists.clear()
        self._size = 0

    def __len__(self) -> int:
        return len(self._lists)
