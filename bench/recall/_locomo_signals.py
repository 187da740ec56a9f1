"""Every ranking signal of every LoCoMo turn for every question, computed once, for offline fusion experiments.

The library's hybrid search scores the union of two candidate lists (the
vector search's and the keyword search's top ``candidates``) by cosine and
BM25. Here both scores are computed for every turn of the asked
conversation, with the library's own code where it matters (the FTS5 keyword
index and :func:`langgraph_memory.catalog.keywords.match`, the default
model through :class:`~langgraph_memory.embeddings.CachedEmbeddings`), so a
fusion, a second dense signal or a different stored text can be scored in
milliseconds per question and chosen by leave-one-conversation-out.

Embeddings are cached in a file beside this script (``.cache/``, not
committed): the first run embeds every text variant, later runs read them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common.locomo import turns
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog._schema import migrate

CACHE_DIR = Path(__file__).resolve().parents[1] / ".cache"


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str  # "speaker: text [shares a photo: ...]", what the bench stores by default
    at: float  # session time, seconds since the epoch
    session: int


@dataclass
class Question:
    conv: str
    category: str
    evidence: set[str]
    text: str


@dataclass
class Signals:
    """One question's scores over its conversation's turns (arrays aligned with the conversation's turns)."""

    question: Question
    cosine: np.ndarray  # best cosine of the question and the turn's vectors (default model)
    bm25: np.ndarray  # the library's BM25 (0: no query word)
    #: The BM25 score a memory holding every query term once at zero length would get (the query's idf mass).
    mass: float
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # other dense signals, by name


def load_turns(conv: dict) -> list[Turn]:
    return [Turn(t["dia_id"], t["speaker"], t["text"], t["at"], t["session"]) for t in turns(conv)]


# ------------------------------------------------------------ what is stored

#: A document variant: the texts (one or more views) stored for each turn, given the conversation's turns.
Views = Callable[[list[Turn]], list[list[str]]]


def _date(t: Turn) -> str:
    return datetime.fromtimestamp(t.at, UTC).strftime("%-d %B %Y")


def plain(turns: list[Turn]) -> list[list[str]]:
    return [[t.text] for t in turns]


def dated(turns: list[Turn]) -> list[list[str]]:
    return [[f"[{_date(t)}] {t.text}"] for t in turns]


def window(before: int, after: int, *, keep_plain: bool = False, date: bool = False) -> Views:
    """The turn with up to ``before`` earlier and ``after`` later turns of its session.

    With ``keep_plain`` a turn has two views (its own text and the window), as an item with two
    indexed fields has two vectors; the keyword index holds both joined, as the library does.
    """

    def views(turns: list[Turn]) -> list[list[str]]:
        out = []
        for i, t in enumerate(turns):
            lo = i
            while lo > 0 and i - lo < before and turns[lo - 1].session == t.session:
                lo -= 1
            hi = i
            while hi + 1 < len(turns) and hi - i < after and turns[hi + 1].session == t.session:
                hi += 1
            ctx = "\n".join(x.text for x in turns[lo : hi + 1])
            if date:
                ctx = f"[{_date(t)}]\n{ctx}"
            out.append([t.text, ctx] if keep_plain else [ctx])
        return out

    return views


# ------------------------------------------------------------------ signals


class KeywordIndex:
    """The library's keyword index and BM25 over one set of texts (an in-memory catalog)."""

    def __init__(self, docs: Sequence[str]) -> None:
        self.conn = sqlite3.connect(":memory:")
        migrate(self.conn)
        self.conn.executemany(
            "INSERT INTO items(id, ns_id, key, uid, value, created_at, updated_at, last_accessed_at)"
            " VALUES (?, 1, ?, ?, '{}', 0, 0, 0)",
            [(i + 1, str(i), str(i)) for i in range(len(docs))],
        )
        _keywords.index_items(self.conn, [(i + 1, d) for i, d in enumerate(docs)])
        self.conn.commit()
        self.n = len(docs)

    def scores(self, query: str, length_norm: float) -> tuple[np.ndarray, float]:
        """BM25 of every document (by position) and the query's idf mass."""
        got = _keywords.match(self.conn, query, length_norm=length_norm)
        out = np.zeros(self.n)
        if len(got):
            out[got.ids - 1] = got.scores
        return out, got.mass


def _cosines(qvec: np.ndarray, mat: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    sims = mat @ qvec
    out = np.full(n, -1.0)
    np.maximum.at(out, owner, sims)
    return out


def unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def compute(
    convs: dict[str, list[Turn]],
    asked: list[Question],
    views: Views | tuple[Views, Views],
    embed_docs: Callable[[list[str]], np.ndarray],
    qvecs: np.ndarray,
    *,
    length_norm: float,
    extra: dict[str, tuple[Callable[[list[str]], np.ndarray], np.ndarray]] | None = None,
) -> list[Signals]:
    """Signals of every question in ``asked`` (``qvecs``: their unit query vectors, in order).

    ``views`` may be a pair: what is embedded, and what is keyword-indexed.
    One keyword index holds every conversation (idf over all of them, as in one
    store); each conversation's views are embedded by ``embed_docs`` (unit vectors).
    ``extra`` names other dense signals: (document embedder, query vectors).
    """
    names = list(convs)
    views, keyword_views = views if isinstance(views, tuple) else (views, views)
    per_conv_views = {c: views(convs[c]) for c in names}
    docs, offset = [], {}
    for c in names:
        offset[c] = len(docs)
        docs.extend("\n".join(dict.fromkeys(v)) for v in keyword_views(convs[c]))
    kw = KeywordIndex(docs)
    dense: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {"cosine": {}}
    embedders = {"cosine": (embed_docs, qvecs), **(extra or {})}
    for sig, (emb, _q) in embedders.items():
        dense[sig] = {}
        for c in names:
            flat = [(i, text) for i, vs in enumerate(per_conv_views[c]) for text in vs]
            mat = unit(emb([t for _i, t in flat]))
            dense[sig][c] = (mat, np.array([i for i, _t in flat]))
    out = []
    for qi, q in enumerate(asked):
        n = len(convs[q.conv])
        bm, mass = kw.scores(q.text, length_norm)
        sl = bm[offset[q.conv] : offset[q.conv] + n]
        sims = {
            sig: _cosines(np.asarray(qv[qi], dtype=np.float32), *dense[sig][q.conv], n)
            for sig, (_e, qv) in embedders.items()
        }
        out.append(Signals(q, sims.pop("cosine"), sl, mass, sims))
    return out
