"""The keyword index: SQLite FTS5 over each item's indexed text, kept in step with every write.

One FTS5 row per item that has indexed text, under the item's row id: the
texts its vectors embed (read back from the value at each vector's record
path, :mod:`.texts`), joined by newlines, and its length in tokens. The
tokenizer is ``porter unicode61`` (seed 003): case and diacritics folded,
words split at anything that is not a letter or a digit (``RSI(14)`` is
``rsi`` and ``14``), English words stemmed (``trades`` finds ``trading``).

:func:`index_items` and :func:`unindex_items` run inside the same catalog
transaction as the write that changes an item (put, delete, TTL sweep,
archive, restore: all go through :mod:`.items`), so the index can never
disagree with the items. :func:`rebuild` fills it from the items and their
vectors (a data directory from before the index existed gets it on open).

:func:`search` ranks an item by BM25 over the query's terms (English stop
words dropped; terms OR-ed), scoped by a condition on the items, as the
planner scopes vector candidates. FTS5's ``bm25()`` fixes the length
normalisation at ``b = 0.75``; short memories of uneven length rank better
with less of it (measured on LoCoMo, ``bench/RESULTS_locomo.md``), so each
hit's score is re-weighted to ``b = length_norm`` by its length. The
re-weighting is exact for query terms that occur once in a memory, the usual
case for memories of a few sentences.

    >>> import sqlite3
    >>> from langgraph_memory.catalog._schema import migrate
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = migrate(conn)
    >>> conn.execute("INSERT INTO items(id, ns_id, key, uid, value, created_at, updated_at, last_accessed_at)"
    ...              " VALUES (1, 1, 'k', 'u', '{}', 0, 0, 0)") and None
    >>> index_items(conn, [(1, "SPY breaks out when RSI(14) crosses 60")])
    >>> [item_id for item_id, _score in search(conn, "rsi 14 on spy", where="1", params=())]
    [1]
    >>> query_terms("What did the RSI(14) of SPY do?")
    ['rsi', '14', 'spy']
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph_memory.catalog.texts import record_text

__all__ = [
    "STOP_WORDS",
    "LENGTH_NORM",
    "MAX_QUERY_TERMS",
    "query_terms",
    "count_tokens",
    "indexed_text",
    "index_items",
    "unindex_items",
    "rebuild",
    "search",
]

#: BM25's length normalisation ``b`` that keyword scores are re-weighted to (FTS5's own is 0.75).
LENGTH_NORM = 0.3
#: BM25's term-frequency saturation, as FTS5's ``bm25()`` fixes it.
_K1 = 1.2
_FTS_B = 0.75
#: A query keeps at most this many distinct terms (the cost of a keyword search grows with them).
MAX_QUERY_TERMS = 32
_CHUNK = 900

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

    Example:
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


def indexed_text(value: dict[str, Any], paths: Iterable[str]) -> str | None:
    """The text an item is found by: the texts at its vectors' record paths, joined (None when there are none)."""
    texts = [t for t in (record_text(value, p) for p in dict.fromkeys(paths)) if t]
    return "\n".join(texts) if texts else None


def _match(terms: Sequence[str]) -> str:
    # Terms are letters and digits only, so quoting each makes any query a valid FTS5 expression.
    return " OR ".join(f'"{t}"' for t in terms)


def index_items(conn: sqlite3.Connection, rows: Iterable[tuple[int, str | None]]) -> None:
    """Index ``(item id, text)`` rows inside the caller's transaction (the items must not be indexed yet)."""
    batch = [(item_id, text, count_tokens(text)) for item_id, text in rows if text]
    if not batch:
        return
    conn.executemany("INSERT INTO keywords(rowid, text, n_tokens) VALUES (?, ?, ?)", batch)
    conn.execute(
        "UPDATE keyword_stats SET docs = docs + ?, tokens = tokens + ? WHERE id = 1",
        (len(batch), sum(r[2] for r in batch)),
    )


def unindex_items(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """Remove items from the index inside the caller's transaction (ids not indexed are ignored)."""
    docs = tokens = 0
    for start in range(0, len(item_ids), _CHUNK):
        chunk = tuple(item_ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        n, t = conn.execute(
            f"SELECT count(*), coalesce(sum(n_tokens), 0) FROM keywords WHERE rowid IN ({marks})", chunk
        ).fetchone()
        if n:
            conn.execute(f"DELETE FROM keywords WHERE rowid IN ({marks})", chunk)
            docs, tokens = docs + n, tokens + t
    if docs:
        conn.execute("UPDATE keyword_stats SET docs = docs - ?, tokens = tokens - ? WHERE id = 1", (docs, tokens))


def rebuild(conn: sqlite3.Connection, *, page: int = 5000) -> int:
    """Index every item from its value and its vectors' record paths, from scratch; return how many.

    Runs inside the caller's write transaction (the schema migration, or a repair).
    """
    conn.execute("DELETE FROM keywords")
    conn.execute("UPDATE keyword_stats SET docs = 0, tokens = 0 WHERE id = 1")
    after, total = 0, 0
    while True:
        rows = conn.execute(
            "SELECT i.id, i.value, (SELECT group_concat(path, char(31)) FROM"
            " (SELECT path FROM vectors v WHERE v.item_id = i.id ORDER BY idx))"
            " FROM items i WHERE i.id > ? AND i.n_vectors > 0 ORDER BY i.id LIMIT ?",
            (after, page),
        ).fetchall()
        if not rows:
            return total
        index_items(conn, ((r[0], indexed_text(json.loads(r[1]), (r[2] or "").split("\x1f"))) for r in rows))
        total += len(rows)
        after = rows[-1][0]


def _length_weights(n_tokens: Sequence[int], avg: float, length_norm: float) -> list[float]:
    """Per hit, BM25's length factor at ``b = length_norm`` over FTS5's at ``b = 0.75`` (tf = 1)."""
    out = []
    for n in n_tokens:
        rel = (n or 1) / avg
        out.append((1 + _K1 * (1 - _FTS_B + _FTS_B * rel)) / (1 + _K1 * (1 - length_norm + length_norm * rel)))
    return out


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    where: str,
    params: Sequence[Any],
    limit: int = 50,
    only: Sequence[int] | None = None,
    length_norm: float = LENGTH_NORM,
    stop_words: frozenset[str] = STOP_WORDS,
) -> list[tuple[int, float]]:
    """Items matching ``query``'s terms, best first: ``[(item id, BM25 score > 0)]``, at most ``limit``.

    ``where`` is an SQL condition on the items table aliased ``i`` (the
    planner's namespace scope and filter index); ``only`` restricts the
    search to those item ids (to score another ranker's candidates).
    The ``limit`` best by FTS5's BM25 are re-weighted by length and re-sorted.
    """
    terms = query_terms(query, stop_words)
    if not terms or limit <= 0 or (only is not None and not only):
        return []
    sql = (
        "SELECT keywords.rowid, -bm25(keywords), keywords.n_tokens FROM keywords"
        f" CROSS JOIN items i ON i.id = keywords.rowid WHERE keywords MATCH ? AND ({where})"
    )
    args: list[Any] = [_match(terms), *params]
    if only is not None:
        sql += f" AND keywords.rowid IN ({','.join(str(int(i)) for i in only)})"
    sql += " ORDER BY bm25(keywords) LIMIT ?"
    rows = conn.execute(sql, (*args, limit)).fetchall()
    if not rows:
        return []
    docs, tokens = conn.execute("SELECT docs, tokens FROM keyword_stats WHERE id = 1").fetchone()
    avg = tokens / docs if docs and tokens else 1.0
    weights = _length_weights([r[2] for r in rows], avg, length_norm)
    scored = [(int(r[0]), float(r[1]) * w) for r, w in zip(rows, weights)]
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored
