"""The keyword index: SQLite FTS5 over each item's indexed text, kept in step with every write.

One FTS5 row per item that has indexed text: the texts its vectors embed
(read back from the value at each vector's record path, `texts`),
joined by newlines. Its FTS5 rowid carries the item's id and its length in
words, ``item_id << 10 | min(words, 1023)`` (`fts_rowid()`), so a search
reads both from the term's posting list alone; ``keyword_lengths`` keeps the
exact length for the writes (and the totals in ``keyword_stats``). The index
keeps which items hold a word, not where (``detail=none``: a search never
needs positions, and the index is 40% smaller and faster to write). The tokenizer is ``porter unicode61``: case
and diacritics folded, words split at anything that is not a letter or a
digit (``RSI(14)`` is ``rsi`` and ``14``), English words stemmed (``trades``
finds ``trading``).

`index_items()` and `unindex_items()` run inside the same catalog
transaction as the write that changes an item (put, delete, TTL sweep,
archive, restore: all go through `items`), so the index can never
disagree with the items. `rebuild()` fills it from the items and their
vectors (a data directory from before the index existed gets it on open).

**Scoring.** `match()` scores every item holding a query term (English
stop words dropped, terms OR-ed) by BM25 (``k1 = 1.2``, Lucene's
``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``) with a term counted once per
item: one posting-list read per term, then arithmetic (about 1 ms for a
query at 100,000 items), instead of FTS5's ``bm25()``, which costs a few
microseconds per matching row (about 5 ms) and fixes the length
normalisation at ``b = 0.75``. Memories of a few sentences rarely repeat a
word, and less length normalisation ranks them better (``b = 0.3``, measured on LoCoMo:
``bench/results/RESULTS_locomo.md``). A term found in more than `MAX_TERM_ITEMS`
items is left out, as a stop word would be: it says little and costs much.
`KeywordMatches.top()` then keeps the best items in a scope (the
planner's SQL for a namespace prefix and a filter).

    >>> import sqlite3
    >>> from langgraph_memory.catalog._schema import migrate
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = migrate(conn)
    >>> conn.execute("INSERT INTO items(id, ns_id, key, uid, value, created_at, updated_at, last_accessed_at)"
    ...              " VALUES (1, 1, 'k', 'u', '{}', 0, 0, 0)") and None
    >>> index_items(conn, [(1, "SPY breaks out when RSI(14) crosses 60")])
    >>> [item_id for item_id, _score in search(conn, "rsi 14 on spy", where="TRUE", params=())]
    [1]
    >>> query_terms("What did the RSI(14) of SPY do?")
    ['rsi', '14', 'spy']
"""

from __future__ import annotations

import functools
import json
import math
import re
import sqlite3
import unicodedata
import uuid
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from langgraph_memory.catalog.connection import POSTGRESQL, Rows, Sql, both, dialect_of, of, pg_placeholders
from langgraph_memory.catalog.keyword_cache import STAMP_SQL, VERSION_KEY, PostingCache, Postings
from langgraph_memory.catalog.texts import record_text

__all__ = [
    "STOP_WORDS",
    "LENGTH_NORM",
    "MAX_QUERY_TERMS",
    "MAX_TERM_ITEMS",
    "fts_rowid",
    "query_terms",
    "count_tokens",
    "indexed_text",
    "index_items",
    "unindex_items",
    "rebuild",
    "KeywordMatches",
    "Corpus",
    "OutsideTexts",
    "score_texts",
    "in_scope",
    "match",
    "search",
]

#: BM25's length normalisation ``b`` (0: none, 1: full; FTS5's ``bm25()`` uses 0.75).
LENGTH_NORM = 0.3
#: BM25's term-frequency saturation, FTS5's value.
_K1 = 1.2
#: A query keeps at most this many distinct terms (the cost of a keyword search grows with them).
MAX_QUERY_TERMS = 32
#: A query term found in more items than this is left out of a search (its weight is small, its cost large).
MAX_TERM_ITEMS = 20_000
_CHUNK = 900
# On PostgreSQL the terms are kept with the lengths (the postings are made from them on the server).
_INSERT_LENGTHS = Rows.both("INSERT INTO keyword_lengths(item_id, n_tokens, terms)", "(?, ?, ?)")
# An FTS5 rowid is the item id shifted left by this many bits, plus the item's length (capped to fit).
_LEN_BITS = 10
_LEN_MAX = (1 << _LEN_BITS) - 1
# `fts_rowid` of a keyword_lengths row ``l``, computed by PostgreSQL.
_PG_DOC = f"(l.item_id << {_LEN_BITS}) | LEAST(l.n_tokens, {_LEN_MAX})"


def fts_rowid(item_id: int, n_tokens: int) -> int:
    """The keyword index's rowid of an item: its id and its length in words (up to 1,023), in one integer.

    Examples:
        >>> fts_rowid(5, 12), fts_rowid(5, 5000) >> 10, fts_rowid(5, 5000) & 1023
        (5132, 5, 1023)
    """
    return (item_id << _LEN_BITS) | min(n_tokens, _LEN_MAX)


#: English stop words dropped from queries (not from the index): they match most memories and say little.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just let me more most mustn my myself no nor not now of off on once only or other ought our
    ours ourselves out over own same shan she should shouldn so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was wasn we were weren what
    when where which while who whom why will with won would wouldn you your yours yourself yourselves
    """.split()
)

_TOKEN = re.compile(r"[^\W_]+")


def query_terms(query: str, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """The distinct search terms of ``query``: lower-cased words, stop words and single letters dropped.

    Examples:
        >>> query_terms("Did SPY's lookback of 60 days work?")
        ['spy', 'lookback', '60', 'days', 'work']
    """
    out: dict[str, None] = {}
    for tok in _TOKEN.findall(query.lower()):
        if tok in stop_words or (len(tok) == 1 and not tok.isdigit()):
            continue
        out[tok] = None
        if len(out) >= MAX_QUERY_TERMS:
            break
    return list(out)


def count_tokens(text: str) -> int:
    """How many words ``text`` holds, split as the ``unicode61`` tokenizer splits (letters and digits)."""
    return len(_TOKEN.findall(text))


def _fold(token: str) -> str:
    """``token`` without diacritics, as FTS5's ``unicode61`` tokenizer folds it (``é`` is ``e``)."""
    if token.isascii():
        return token
    return "".join(c for c in unicodedata.normalize("NFKD", token) if not unicodedata.combining(c))


def _stem(token: str) -> str:
    """The Porter stem of a folded, lower-case token, as FTS5's ``porter`` tokenizer stems it."""
    # Porter's rules rewrite letters only: a number is its own stem, and numbers (prices, dates, ids)
    # are most of the distinct tokens of many texts, enough to wash every word out of the cache.
    if token.isdigit():
        return token
    return _stem_word(token)


@functools.lru_cache(maxsize=65536)
def _stem_word(token: str) -> str:
    return str(_porter().stemWord(token))


@functools.lru_cache(maxsize=1)
def _porter() -> Any:
    from langgraph_memory._infra.extras import require_extra

    require_extra("postgres", "the keyword index on PostgreSQL")
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


def index_terms(text: str) -> list[str]:
    """The distinct index terms of ``text`` on PostgreSQL: its words, folded and stemmed as FTS5 does.

    Example:
        >>> index_terms("Trades whipsawed; trading RSI(14)")
        ['trade', 'whipsaw', 'rsi', '14']
    """
    # Each distinct word is folded and stemmed once (the same terms in the same order as word by word).
    return list(dict.fromkeys([_stem(_fold(t)) for t in dict.fromkeys(_TOKEN.findall(text.lower()))]))


def _terms_and_count(text: str) -> tuple[list[str], int]:
    """`index_terms` and `count_tokens` of ``text``, splitting it once when lower-casing keeps its words."""
    if not text.isascii():  # lower() may change a non-ASCII word's letters, and so where it splits
        return index_terms(text), count_tokens(text)
    tokens = _TOKEN.findall(text)
    words = dict.fromkeys(t.lower() for t in dict.fromkeys(tokens))
    return list(dict.fromkeys([_stem(w) for w in words])), len(tokens)


def indexed_text(value: dict[str, Any], paths: Iterable[str], texts: Sequence[str] | None = None) -> str | None:
    """The text an item is found by: the texts at its vectors' record paths, joined (None when there are none).

    ``texts``, when given, are the texts at ``paths`` in the same order (the
    writer has them: it just embedded them), so ``value`` is not read again.
    """
    if texts is None:
        found = [record_text(value, p) for p in dict.fromkeys(paths)]
    else:
        by_path: dict[str, str] = {}
        for p, t in zip(paths, texts, strict=True):
            by_path.setdefault(p, t)
        found = list(by_path.values())
    kept = [t for t in found if t]
    return "\n".join(kept) if kept else None


def index_items(conn: sqlite3.Connection, rows: Iterable[tuple[int, str | None]]) -> None:
    """Index ``(item id, text)`` rows inside the caller's transaction (the items must not be indexed yet)."""
    pg = dialect_of(conn) == POSTGRESQL
    batch: list[tuple[int, str, int]] = []
    for item_id, text in rows:
        if text and pg:  # on PostgreSQL the text is not stored: its terms are
            terms, n = _terms_and_count(text)
            batch.append((item_id, " ".join(terms), n))
        elif text:
            batch.append((item_id, text, count_tokens(text)))
    if not batch:
        return
    if pg:
        _INSERT_LENGTHS.insert(conn, [(i, n, t) for i, t, n in batch])
        # The postings are the terms just recorded, one row each: the server splits them, so a long text
        # sends its terms once as one string instead of one bound row per term (a 32,000-character chunk
        # has thousands).
        for start in range(0, len(batch), _CHUNK):
            chunk = [r[0] for r in batch[start : start + _CHUNK]]
            conn.execute(
                f"INSERT INTO keyword_postings(term, doc) SELECT t.term, {_PG_DOC} FROM keyword_lengths l "
                f"CROSS JOIN LATERAL unnest(string_to_array(l.terms, ' ')) AS t(term) "
                f"WHERE l.item_id IN ({','.join(['%s'] * len(chunk))})",
                chunk,
            )
    else:
        conn.executemany("INSERT INTO keywords(rowid, text) VALUES (?, ?)", [(fts_rowid(i, n), t) for i, t, n in batch])
        conn.executemany("INSERT INTO keyword_lengths(item_id, n_tokens) VALUES (?, ?)", [(i, n) for i, _t, n in batch])
    conn.execute(
        both(conn, "UPDATE keyword_stats SET docs = docs + ?, tokens = tokens + ? WHERE id = 1"),
        (len(batch), sum(r[2] for r in batch)),
    )
    _bump(conn)


def _bump(conn: sqlite3.Connection) -> None:
    """Give the index a new version in ``meta`` (same transaction): caches of its posting lists must read again."""
    # A random value, not a counter: a cache filled inside a transaction that then rolls back must never
    # match the version the next writer commits.
    conn.execute(
        both(conn, "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
        (VERSION_KEY, uuid.uuid4().hex),
    )


def unindex_items(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """Remove items from the index inside the caller's transaction (ids not indexed are ignored)."""
    if dialect_of(conn) == POSTGRESQL:
        _unindex_items_unread(conn, item_ids)
        return
    docs = tokens = 0
    for start in range(0, len(item_ids), _CHUNK):
        chunk = tuple(item_ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        lengths = f"FROM keyword_lengths WHERE item_id IN ({marks})"
        rows = conn.execute(f"SELECT item_id, n_tokens {lengths}", chunk).fetchall()
        if rows:
            conn.executemany("DELETE FROM keywords WHERE rowid = ?", [(fts_rowid(i, n),) for i, n in rows])
            conn.execute(f"DELETE {lengths}", chunk)
            docs, tokens = docs + len(rows), tokens + sum(n for _i, n in rows)
    if docs:
        conn.execute(
            both(conn, "UPDATE keyword_stats SET docs = docs - ?, tokens = tokens - ? WHERE id = 1"), (docs, tokens)
        )
        _bump(conn)


def _unindex_items_unread(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """`unindex_items()` on PostgreSQL, in statements that return nothing: they go with the transaction's next.

    The counts come off ``keyword_stats``, and the version is bumped, from
    the rows being deleted, read by the server (never a round trip here to
    read them first: a replacing put waited for one, under the write lock).
    Each statement sees the rows the ones before it left.
    """
    for start in range(0, len(item_ids), _CHUNK):
        chunk = tuple(item_ids[start : start + _CHUNK])
        marks = ",".join(["%s"] * len(chunk))
        rows = f"FROM keyword_lengths WHERE item_id IN ({marks})"
        conn.execute(
            f"INSERT INTO meta(key, value) SELECT %s, %s WHERE EXISTS (SELECT 1 {rows}) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (VERSION_KEY, uuid.uuid4().hex, *chunk),
        )
        conn.execute(
            f"UPDATE keyword_stats SET docs = docs - (SELECT count(*) {rows}), "
            f"tokens = tokens - (SELECT coalesce(sum(n_tokens), 0) {rows}) WHERE id = 1",
            (*chunk, *chunk),
        )
        conn.execute(
            "DELETE FROM keyword_postings p USING keyword_lengths l "
            "CROSS JOIN LATERAL unnest(string_to_array(l.terms, ' ')) AS t(term) "
            f"WHERE l.item_id IN ({marks}) AND p.term = t.term AND p.doc = {_PG_DOC}",
            chunk,
        )
        conn.execute(f"DELETE {rows}", chunk)


# Each item with its vectors' record paths, joined by U+001F.
_TO_INDEX = Sql(
    "SELECT i.id, i.value, (SELECT group_concat(path, char(31)) FROM"
    " (SELECT path FROM vectors v WHERE v.item_id = i.id ORDER BY idx) AS paths)"
    " FROM items i WHERE i.id > ? AND i.n_vectors > 0 ORDER BY i.id LIMIT ?",
    "SELECT i.id, i.value, (SELECT string_agg(path, chr(31)) FROM"
    " (SELECT path FROM vectors v WHERE v.item_id = i.id ORDER BY idx) AS paths)"
    " FROM items i WHERE i.id > %s AND i.n_vectors > 0 ORDER BY i.id LIMIT %s",
)


def rebuild(conn: sqlite3.Connection, *, page: int = 5000) -> int:
    """Index every item from its value and its vectors' record paths, from scratch; return how many.

    Runs inside the caller's write transaction (the schema migration, or a repair).
    """
    conn.execute(of(conn, "DELETE FROM keywords", "DELETE FROM keyword_postings"))
    conn.execute(both(conn, "DELETE FROM keyword_lengths"))
    conn.execute(both(conn, "UPDATE keyword_stats SET docs = 0, tokens = 0 WHERE id = 1"))
    _bump(conn)
    after, total = 0, 0
    while True:
        rows = conn.execute(_TO_INDEX.of(conn), (after, page)).fetchall()
        if not rows:
            return total
        index_items(conn, ((r[0], indexed_text(json.loads(r[1]), (r[2] or "").split("\x1f"))) for r in rows))
        total += len(rows)
        after = rows[-1][0]


def _idf(docs: int, n: int) -> float:
    """Lucene's BM25 idf: positive however common the term (FTS5's goes to 0, then negative, past half the items)."""
    return math.log(1 + (docs - n + 0.5) / (n + 0.5))


class KeywordMatches:
    """Every item holding a query term, with its BM25 score: ``ids`` and ``scores``, best first.

    ``mass`` is the query's idf mass: the sum of its terms' idf, the BM25 score
    of a memory of average length holding every term (a term no memory holds
    counts with the idf of a term held by none). `evidence()` puts a score
    on that absolute scale.

    The matches are kept by id; the best-first order is made only as far as a
    search reads it (`best()`): a common word matches tens of thousands of
    items, of which a search keeps a few dozen.
    """

    def __init__(self, ids: np.ndarray, scores: np.ndarray, mass: float = 0.0, *, by_id: bool = False) -> None:
        if by_id:  # already sorted by id, ids distinct
            self._by_id: tuple[np.ndarray, np.ndarray] | None = (ids, scores)
        else:
            order = np.argsort(ids, kind="stable")
            self._by_id = (ids[order], scores[order])
        self.mass = mass
        #: Each scored query term with its idf, in the query's order, and the mean length scored against
        #: (set by `match()`; what `score_texts()` scores a text outside the index with).
        self.weights: list[tuple[str, float]] = []
        self.avg = 1.0
        self._ranked: np.ndarray | None = None
        self._dense: np.ndarray | None = None
        self._count: int | None = None

    @classmethod
    def from_dense(cls, dense: np.ndarray, mass: float = 0.0) -> KeywordMatches:
        """Matches from scores indexed by item id (0.0: no match).

        Listing the matches by id costs a pass over every id, and half the items
        may hold a common word: a search that keeps a few dozen picks them from
        the array itself (`best()`, `scores_of()`).

        Example:
            >>> KeywordMatches.from_dense(np.array([0.0, 2.0, 0.5, 0.5])).best(2).tolist()
            [1, 2]
        """
        out = cls(np.zeros(0, dtype=np.int64), np.zeros(0), mass, by_id=True)
        out._by_id, out._dense = None, dense
        return out

    @property
    def _sorted_ids(self) -> np.ndarray:
        return self._listed()[0]

    @property
    def _sorted_scores(self) -> np.ndarray:
        return self._listed()[1]

    def _listed(self) -> tuple[np.ndarray, np.ndarray]:
        if self._by_id is None:
            assert self._dense is not None
            ids = np.flatnonzero(self._dense)
            self._by_id = (ids, self._dense[ids])
        return self._by_id

    @property
    def ids(self) -> np.ndarray:
        """Every matching item's id, best first (ties: lower id first)."""
        return self._sorted_ids[self._order()]

    @property
    def scores(self) -> np.ndarray:
        """The scores of `ids`, in the same order."""
        return self._sorted_scores[self._order()]

    def _order(self) -> np.ndarray:
        if self._ranked is None:
            self._ranked = np.lexsort((self._sorted_ids, -self._sorted_scores))
        return self._ranked

    def __len__(self) -> int:
        if self._by_id is None and self._dense is not None:
            if self._count is None:
                self._count = int(np.count_nonzero(self._dense))
            return self._count
        return len(self._sorted_ids)

    def best(self, k: int, keep: np.ndarray | None = None) -> np.ndarray:
        """The ids of the best ``k`` matches, best first (among those where the mask ``keep`` is True).

        ``keep`` is a boolean mask over the matches in id order (`ids_by_id()`).

        Example:
            >>> KeywordMatches(np.array([3, 1, 2]), np.array([0.5, 2.0, 0.5])).best(2).tolist()
            [1, 2]
        """
        if keep is None and self._by_id is None and k > 0:
            got = self._best_of_dense(k)
            if got is not None:
                return got
        pos = np.arange(len(self._sorted_ids)) if keep is None else np.flatnonzero(keep)
        if k <= 0 or not len(pos):
            return np.zeros(0, dtype=np.int64)
        return _k_best(self._sorted_ids[pos], self._sorted_scores[pos], k)

    def _best_of_dense(self, k: int) -> np.ndarray | None:
        """`best()` (``k`` > 0) from the scores by id, through the items above a threshold; None: not worth it."""
        dense = self._dense
        assert dense is not None
        step = len(dense) // 4096
        if step < 2:
            return None
        # A threshold from every step-th item: about j * step items score at least the sample's j-th best.
        sample = dense[::step]
        j = 4 * k // step + 2
        if j >= len(sample) // 2:
            return None
        theta = -np.partition(-sample, j - 1)[j - 1]
        if theta <= 0.0:
            return None
        pos = np.flatnonzero(dense >= theta)
        if len(pos) < k:
            return None  # the sample was unlucky: the k best are not all above it
        # The same selection as over every match: the k best all score at least theta.
        return _k_best(pos, dense[pos], k)

    def ids_by_id(self) -> np.ndarray:
        """Every matching item's id, in increasing order (what `best()`'s mask is over)."""
        return self._sorted_ids

    def evidence(self, score: float) -> float:
        """``score`` as a share of the query's idf mass (0.0 for a query without terms); not capped.

        A memory sharing only a common word with a query of several terms gets
        a small share, however it ranks among the matches; a short memory holding
        every term gets more than 1 (the ranking squashes it: `keyword_evidence`).

        Example:
            >>> KeywordMatches(np.array([1]), np.array([1.5]), mass=6.0).evidence(1.5)
            0.25
        """
        return score / self.mass if self.mass > 0 else 0.0

    def score(self, item_id: int) -> float:
        """The score of one item (0.0 when it holds no query term)."""
        return self.scores_of([item_id])[0]

    def scores_of(self, item_ids: Sequence[int]) -> list[float]:
        """The scores of several items (0.0 for those holding no query term)."""
        if self._by_id is None and self._dense is not None:
            want = np.asarray(item_ids, dtype=np.int64)
            ok = (want >= 0) & (want < len(self._dense))
            return np.where(ok, self._dense[np.where(ok, want, 0)], 0.0).tolist()
        if not len(self._sorted_ids) or not item_ids:
            return [0.0] * len(item_ids)
        want = np.asarray(item_ids, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._sorted_ids, want), len(self._sorted_ids) - 1)
        return np.where(self._sorted_ids[pos] == want, self._sorted_scores[pos], 0.0).tolist()

    def top(
        self, conn: sqlite3.Connection, *, where: str, params: Sequence[Any], limit: int
    ) -> list[tuple[int, float]]:
        """The best ``limit`` matches among the items ``where`` selects (an SQL condition on items ``i``)."""
        return [(i, self.score(i)) for i in self.walk(lambda chunk: in_scope(conn, chunk, where, params), limit)]

    def walk(
        self, fetch: Callable[[list[int]], Container[int]], limit: int, *, known: Container[int] = ()
    ) -> list[int]:
        """The best ``limit`` matches that are in ``known`` or that ``fetch`` returns, in order.

        ``fetch`` takes a batch of ids (best first) and returns those it keeps
        (e.g. the items in a scope); ids in ``known`` are kept without asking.
        Batches grow until ``limit`` ids are kept or the matches run out.
        """
        out: list[int] = []
        n = len(self)
        pos, batch = 0, max(limit, 16)
        while pos < n and len(out) < limit:
            # Rank only as far as this batch reaches (the whole order costs a sort of every match).
            reach = min(n, pos + batch)
            chunk = (self.ids[pos:reach] if self._ranked is not None else self.best(reach)[pos:]).tolist()
            kept = fetch([i for i in chunk if i not in known])
            out.extend(i for i in chunk if i in known or i in kept)
            pos = reach
            batch *= 4
        return out[:limit]


def _k_best(ids: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best of ``ids`` (ascending) by ``scores``, best first, ties by lower id."""
    if k < len(ids):
        # Everything scoring at least the k-th best score (ties at the boundary included), then sorted.
        kth = -np.partition(-scores, k - 1)[k - 1]
        sel = np.flatnonzero(scores >= kth)
        ids, scores = ids[sel], scores[sel]
    return ids[np.lexsort((ids, -scores))][:k]


def in_scope(conn: sqlite3.Connection, item_ids: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
    """Which of ``item_ids`` satisfy ``where``, an SQL condition on items ``i``."""
    # The ids drive the join (CROSS JOIN keeps that order): with "i.id IN (...) AND <scope>" SQLite may
    # prefer an index on ns_id and walk every item in scope (measured: 55 ms instead of 1 ms at 100,000).
    return {
        r[0]
        for r in conn.execute(
            of(
                conn,
                f"SELECT i.id FROM json_each(?) c CROSS JOIN items i ON i.id = c.value WHERE ({where})",
                "SELECT i.id FROM (SELECT CAST(j AS BIGINT) AS value FROM jsonb_array_elements_text(CAST(%s AS jsonb)) j) c "
                f"JOIN items i ON i.id = c.value WHERE ({pg_placeholders(where)})",
            ),
            (json.dumps(list(item_ids)), *params),
        )
    }


@dataclass(frozen=True)
class Corpus:
    """The keyword index as it stood at another moment: what `match()` takes its BM25 statistics from.

    A search as of a past moment scores against the items indexed then, so
    that a memory scores what it scored then: ``docs`` texts of ``tokens``
    words; ``gone``, a mask by item id of the items indexed now that were not
    then (their postings are not counted); ``held``, for each query term, how
    many of the texts indexed then and not now hold it (`OutsideTexts`).
    """

    docs: int
    tokens: int
    gone: np.ndarray
    held: Mapping[str, int] = field(default_factory=dict)

    def count(self, term: str, rowids: np.ndarray | None) -> int:
        """How many texts held ``term`` then, from its posting list now (``rowids``)."""
        now = 0 if rowids is None else len(rowids)
        if now and len(self.gone):
            assert rowids is not None
            ids = rowids >> _LEN_BITS
            now -= int(np.count_nonzero(self.gone[ids[ids < len(self.gone)]]))
        return now + int(self.held.get(term, 0))


class OutsideTexts:
    """Texts outside the index, by position, matched against query terms as the index on a backend matches.

    On SQLite the texts go through an FTS5 table of the same tokenizer in
    memory; on PostgreSQL through `index_terms()`, as the index's own terms
    are made. Not thread-safe: its owner serialises `add()` and `holding()`.
    """

    def __init__(self, postgres: bool) -> None:
        self._pg = postgres
        self._mem: sqlite3.Connection | None = None
        self._stems: dict[str, list[int]] = {}
        self._holding: dict[str, np.ndarray] = {}

    def add(self, texts: Mapping[int, str]) -> None:
        """Take in ``texts`` (position: text; a position once)."""
        if not texts:
            return
        self._holding.clear()
        if self._pg:
            for k, text in texts.items():
                for stem in index_terms(text):
                    self._stems.setdefault(stem, []).append(k)
            return
        if self._mem is None:
            self._mem = sqlite3.connect(":memory:", check_same_thread=False)
            self._mem.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'porter unicode61', detail = none)")
        self._mem.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", list(texts.items()))

    def holding(self, term: str) -> np.ndarray:
        """The positions of the texts holding the query term ``term`` (kept until the next `add()`)."""
        got = self._holding.get(term)
        if got is None:
            if self._pg:
                got = np.asarray(self._stems.get(_stem(_fold(term)), []), dtype=np.int64)
            elif self._mem is None:
                got = np.zeros(0, dtype=np.int64)
            else:
                # Quoted, a term (letters and digits only) is one FTS5 token whatever it spells.
                (joined,) = self._mem.execute(
                    "SELECT group_concat(rowid) FROM t WHERE t MATCH ?", (f'"{term}"',)
                ).fetchone()
                got = np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.zeros(0, dtype=np.int64)
            self._holding[term] = got
        return got


def score_texts(
    found: KeywordMatches, holding: Mapping[str, np.ndarray], n_tokens: np.ndarray, length_norm: float = LENGTH_NORM
) -> np.ndarray:
    """The BM25 scores `match()` would give texts of ``n_tokens`` words, ``holding[term]`` saying which hold ``term``.

    The same operations in the same order as for an indexed item, so a text
    scores the same float it scored when it was in the index (against the same statistics).

    Example:
        >>> found = KeywordMatches(np.zeros(0, dtype=np.int64), np.zeros(0), 2.0)
        >>> found.weights, found.avg = [("carry", 1.0), ("spy", 1.0)], 4.0
        >>> score_texts(found, {"carry": np.array([True, False])}, np.array([4, 4]), 0.3).round(6).tolist()
        [1.0, 0.0]
    """
    norm = 1 + _K1 * (1 - length_norm + length_norm * (np.maximum(np.minimum(n_tokens, _LEN_MAX), 1) / found.avg))
    total = np.zeros(len(n_tokens))
    for term, idf in found.weights:
        held = holding.get(term)
        if held is not None and held.any():
            total[held] += idf * (_K1 + 1) / norm[held]
    return total


def match(
    conn: sqlite3.Connection,
    query: str,
    *,
    length_norm: float = LENGTH_NORM,
    stop_words: frozenset[str] = STOP_WORDS,
    max_term_items: int = MAX_TERM_ITEMS,
    cache: PostingCache | None = None,
    within: np.ndarray | None = None,
    corpus: Corpus | None = None,
) -> KeywordMatches:
    """Score every item holding one of ``query``'s terms (see the module's docstring for how).

    With a ``cache`` (`langgraph_memory.catalog.keyword_cache`), posting lists read
    since the index last changed are taken from memory: same scores, no re-read.
    With ``within`` (item ids, increasing, distinct), only those items are
    scored, each looked up in the posting lists (a search over a few hundred
    items need not add up the scores of the whole catalog's matches); their
    scores and the idf mass are the same as without it.
    With ``corpus``, terms are weighed and lengths normalised as in the index of another moment (`Corpus`).
    """
    empty = KeywordMatches(np.zeros(0, dtype=np.int64), np.zeros(0), by_id=True)
    terms = query_terms(query, stop_words)
    if cache is not None:
        # The stamp first: a list read after it may be newer, never older, and a newer one is
        # dropped by the next search, which finds the stamp moved.
        stamp = tuple(conn.execute(STAMP_SQL.of(conn)).fetchone())
        docs, tokens = stamp[1], stamp[2]
    else:
        docs, tokens = conn.execute(both(conn, "SELECT docs, tokens FROM keyword_stats WHERE id = 1")).fetchone()
    if corpus is not None:
        docs, tokens = corpus.docs, corpus.tokens
    if not terms or not docs:
        return empty
    avg = tokens / docs if tokens else 1.0
    cap = max_term_items
    mass = 0.0
    weights: list[tuple[str, float]] = []
    all_ids: list[np.ndarray] = []
    # Each term's score is ``factor / norm`` per posting; it is divided out only for the postings a search
    # sums (with ``within``, the few items looked up instead of every posting of every term).
    all_scores: list[tuple[float, np.ndarray]] = []
    pg = dialect_of(conn) == POSTGRESQL
    for term in terms:
        got = cache.get(stamp, term, cap=cap) if cache is not None else None
        if got is None:
            got = _read_postings(conn, term, cap, pg)
            if cache is not None:
                got = cache.put(stamp, term, got.n, got.rowids)
        if got.n > cap or got.rowids is None:
            continue
        idf = _idf(docs, got.n if corpus is None else corpus.count(term, got.rowids))
        mass += idf
        weights.append((term, idf))
        if got.n:
            _add_term(all_ids, all_scores, got, idf, avg, length_norm)
    out = _matches(all_ids, all_scores, within, mass)
    out.weights, out.avg = weights, avg
    return out


def _read_postings(conn: sqlite3.Connection, term: str, cap: int, pg: bool) -> Postings:
    """A term's posting list from the index (its rowids None when it holds more than ``cap``)."""
    # The posting list as one string of rowids, parsed by numpy: a row per posting cost more in Python
    # than the index's own read.
    if pg:
        n, joined = conn.execute(
            "SELECT count(*), string_agg(doc::text, ',') FROM"
            " (SELECT doc FROM keyword_postings WHERE term = %s LIMIT %s) AS p",
            (_stem(_fold(term)), cap + 1),
        ).fetchone()
    else:
        # Quoted, a term (letters and digits only) is one FTS5 token whatever it spells (AND, NEAR, ...).
        n, joined = conn.execute(
            "SELECT count(*), group_concat(rowid) FROM (SELECT rowid FROM keywords WHERE keywords MATCH ? LIMIT ?)",
            (f'"{term}"', cap + 1),
        ).fetchone()
    if n > cap:
        return Postings(n, None)
    return Postings(n, np.fromstring(joined, dtype=np.int64, sep=",") if n else np.zeros(0, dtype=np.int64))


def _matches(
    all_ids: list[np.ndarray], all_scores: list[tuple[float, np.ndarray]], within: np.ndarray | None, mass: float
) -> KeywordMatches:
    """The matches of `match()` from each term's postings and scores."""
    if not all_ids:
        return KeywordMatches(np.zeros(0, dtype=np.int64), np.zeros(0), mass, by_id=True)
    if within is not None:
        return _match_within(all_ids, all_scores, np.asarray(within, dtype=np.int64), mass)
    every, weights = np.concatenate(all_ids), np.concatenate([factor / norm for factor, norm in all_scores])
    top = int(every.max())
    if top <= 8 * len(every) + 65536:
        # Item ids are dense: sum each item's term scores in an array indexed by id (no sort).
        return KeywordMatches.from_dense(np.bincount(every, weights=weights, minlength=top + 1), mass)
    ids, inverse = np.unique(every, return_inverse=True)
    return KeywordMatches(ids, np.bincount(inverse, weights=weights), mass, by_id=True)


def _match_within(
    all_ids: list[np.ndarray], all_scores: list[tuple[float, np.ndarray]], within: np.ndarray, mass: float
) -> KeywordMatches:
    """`match()`'s scores of the items ``within`` (ids increasing): each term's list searched for them."""
    total = np.zeros(len(within))
    for ids, (factor, norm) in zip(all_ids, all_scores, strict=True):
        if len(ids) > 1 and not bool(np.all(ids[1:] >= ids[:-1])):  # a server may hand a list over unordered
            order = np.argsort(ids, kind="stable")
            ids, norm = ids[order], norm[order]
        pos = np.minimum(np.searchsorted(ids, within), len(ids) - 1)
        hit = ids[pos] == within
        # Term by term, in the query's order: each item's sum is the same float as bincount's in `match()`
        # (and each term's score the same division, made for these postings only).
        total[hit] += factor / norm[pos[hit]]
    held = np.flatnonzero(total)
    return KeywordMatches(within[held], total[held], mass, by_id=True)


def _add_term(
    all_ids: list[np.ndarray],
    all_scores: list[tuple[float, np.ndarray]],
    postings: Postings,
    idf: float,
    avg: float,
    b: float,
) -> None:
    """Append one term's postings: the item ids and each one's BM25 term score (length from the rowid)."""
    # The ids and each posting's length normalisation depend only on the list, the average length and b:
    # a cached list keeps them, and the score is then one division (the same operations as without it).
    derived = postings.derived.get((avg, b))
    if derived is None:
        rowids = postings.rowids
        assert rowids is not None
        rel = np.maximum(rowids & _LEN_MAX, 1) / avg
        derived = postings.derived[(avg, b)] = (rowids >> _LEN_BITS, 1 + _K1 * (1 - b + b * rel))
    ids, norm = derived
    all_ids.append(ids)
    all_scores.append((idf * (_K1 + 1), norm))


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    where: str,
    params: Sequence[Any],
    limit: int = 50,
    length_norm: float = LENGTH_NORM,
    stop_words: frozenset[str] = STOP_WORDS,
) -> list[tuple[int, float]]:
    """The best ``limit`` items for ``query`` among those ``where`` selects: ``[(item id, BM25 score > 0)]``.

    ``where`` is an SQL condition on the items table aliased ``i`` (the
    planner's namespace scope and filter index, or ``"TRUE"`` for everything).
    """
    found = match(conn, query, length_norm=length_norm, stop_words=stop_words)
    return found.top(conn, where=where, params=params, limit=limit) if limit > 0 else []
