"""The catalog's keyword index (FTS5): stays in step with every write path, scoped searches, migration."""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp, SearchOp

from langgraph_memory.archive import Archiver
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog._schema import SCHEMA_VERSION
from langgraph_memory.catalog.bulk import BULK_MIN
from langgraph_memory.catalog.connection import both
from langgraph_memory.catalog.keyword_cache import PostingCache
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.archive_data import DAY
from tests.helpers.catalog_versions import make_version_1

# Words whose porter stem is no other word's, so a token scan is the true answer.
WORDS = ["spy", "qqq", "gold", "oil", "bond", "yen", "rsi", "macd", "vix", "carry"]
_counter = itertools.count()


def _keyword_rows(store: ChromaStore) -> dict[int, str]:
    """The keyword index's rows by item id (each rowid also carrying the text's length)."""
    with store.catalog.read() as conn:
        rows = conn.execute("SELECT rowid, text FROM keywords").fetchall()
    for rowid, text in rows:
        assert rowid == _keywords.fts_rowid(rowid >> 10, _keywords.count_tokens(text))
    return {int(rowid) >> 10: text for rowid, text in rows}


def _expected_rows(store: ChromaStore) -> dict[int, str]:
    """Brute force: every item's indexed text, from its value and its vectors' record paths."""
    out: dict[int, str] = {}
    with store.catalog.read() as conn:
        paths: dict[int, list[str]] = {}
        for item_id, path in conn.execute("SELECT item_id, path FROM vectors ORDER BY item_id, idx"):
            paths.setdefault(int(item_id), []).append(path)
        for item_id, value in conn.execute("SELECT id, value FROM items"):
            text = _keywords.indexed_text(json.loads(value), paths.get(int(item_id), []))
            if text:
                out[int(item_id)] = text
    return out


def _postings(store: ChromaStore) -> dict[int, set[str]]:
    """PostgreSQL's keyword index: each item's terms, from its postings (each doc also carrying the length)."""
    out: dict[int, set[str]] = {}
    with store.catalog.read() as conn:
        lengths = dict(conn.execute("SELECT item_id, n_tokens FROM keyword_lengths"))
        for term, doc in conn.execute("SELECT term, doc FROM keyword_postings"):
            assert doc == _keywords.fts_rowid(doc >> 10, lengths[doc >> 10])
            out.setdefault(int(doc) >> 10, set()).add(term)
    return out


def _check_in_step(store: ChromaStore, root: tuple[str, ...]) -> None:
    if store.catalog.dialect == "postgresql":
        assert _postings(store) == {i: set(_keywords.index_terms(t)) for i, t in _expected_rows(store).items()}
    else:
        assert _keyword_rows(store) == _expected_rows(store)
    with store.catalog.read() as conn:
        docs, tokens = conn.execute("SELECT docs, tokens FROM keyword_stats").fetchone()
        n, total = conn.execute("SELECT count(*), coalesce(sum(n_tokens), 0) FROM keyword_lengths").fetchone()
        assert (docs, tokens) == (n, total)
        lengths = dict(conn.execute("SELECT item_id, n_tokens FROM keyword_lengths"))
        assert lengths == {i: _keywords.count_tokens(t) for i, t in _expected_rows(store).items()}
        scope = store.planner.explain(SearchOp(root, None, 10, 0, None), has_query=True).scope_sql
        live = {
            it.id: it.value.get("lesson", "")
            for it in store.items.iter_items("lessons")
            if it.namespace[: len(root)] == root and it.n_vectors
        }
        for word in WORDS:
            want = {i for i, text in live.items() if word in re.findall(r"\w+", text.lower())}
            got = (
                set()
                if scope is None
                else {i for i, _ in _keywords.search(conn, word, where=scope[0], params=scope[1], limit=10_000)}
            )
            assert got == want, word


TEXTS = st.lists(st.sampled_from(WORDS + ["the", "trade", "risk"]), min_size=1, max_size=6).map(" ".join)
SUBS = st.sampled_from([("d1",), ("d2",), ("d1", "x")])
KEYS = st.sampled_from(["k1", "k2", "k3", "k4", "k5"])
OPS = st.one_of(
    st.tuples(st.just("put"), SUBS, KEYS, TEXTS),
    st.tuples(st.just("put_unindexed"), SUBS, KEYS, TEXTS),
    st.tuples(st.just("delete"), SUBS, KEYS),
    st.tuples(st.just("expire"), SUBS, KEYS),
    st.tuples(st.just("archive")),
    st.tuples(st.just("restore"), st.sampled_from([(), ("d1",), ("d2",)])),
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory):
    s = ChromaStore(
        data_dir=tmp_path_factory.mktemp("kw") / "memory",
        index={"dims": FAKE_DIMS, "embed": DeterministicFakeEmbedding(size=FAKE_DIMS)},
    )
    a = Archiver(s, chunk_size=5)
    yield s, a
    a.close()
    s.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=14))
def test_keyword_index_stays_in_step_with_every_write_path(shared, ops: list) -> None:
    store, archiver = shared
    root = ("lessons", f"r{next(_counter)}")
    for op in ops:
        kind = op[0]
        if kind in ("put", "put_unindexed"):
            _, sub, key, text = op
            store.put(root + sub, key, {"lesson": text}, index=False if kind == "put_unindexed" else None)
        elif kind == "delete":
            store.delete(root + op[1], op[2])
        elif kind == "expire":  # a TTL that ran out: the sweep deletes it
            _, sub, key = op
            item = store.get(root + sub, key)
            if item is not None:
                store.put(root + sub, key, item.value, ttl=1.0)
                with store.catalog.write() as conn:
                    conn.execute(
                        both(conn, "UPDATE items SET expires_at = ? WHERE key = ? AND expires_at IS NOT NULL"),
                        (time.time() - 60, key),
                    )
                store.sweep_ttl()
        elif kind == "archive":  # everything idle for 90 days as of a date in the future leaves the store
            archiver.run(now=time.time() + 91 * DAY)
        else:
            archiver.restore(namespace_prefix=root + op[1])
        _check_in_step(store, root)


def test_update_replaces_the_text_and_index_false_removes_it(store: ChromaStore) -> None:
    store.put(("lessons",), "k", {"lesson": "gold rallies"})
    store.put(("lessons",), "k", {"lesson": "oil slumps"})
    assert list(_keyword_rows(store).values()) == ["oil slumps"]
    store.put(("lessons",), "k", {"lesson": "oil slumps"}, index=False)
    assert _keyword_rows(store) == {}
    store.put(("notes",), "multi", {"a": "spy", "b": ["vix", "yen"]}, index=["a", "b[*]"])
    assert list(_keyword_rows(store).values()) == ["spy\nvix\nyen"]


@pytest.mark.parametrize("n", [1, BULK_MIN])
def test_a_put_indexes_the_texts_its_value_holds_at_its_record_paths(store: ChromaStore, n: int) -> None:
    # The writer hands the texts it embedded to the keyword index; they must be what reading the value back at
    # each vector's record path gives (as a rebuild does), for every kind of path.
    values = [
        ({"a": "spy", "b": ["vix", "yen"], "c": "", "d": {"e": "gold"}}, ["a", "b[*]", "c", "d.e", "a"]),
        ({"b": ["oil"], "n": 3, "d": {"e": ["x", "y"]}}, ["b[*]", "n", "d.e", "missing"]),
        ({"lesson": "carry unwinds", "more": [{"t": "bond"}, {"t": "rsi"}]}, ["$", "more[*].t"]),
        ({"lesson": "macd crosses"}, None),
    ]
    store.batch(
        [
            PutOp(("notes", f"u{i % 3}"), f"k{i}", values[i % len(values)][0], index=values[i % len(values)][1])
            for i in range(n * len(values))
        ]
    )
    expected = _expected_rows(store)
    assert len(expected) == n * len(values)
    if store.catalog.dialect == "postgresql":
        assert _postings(store) == {i: set(_keywords.index_terms(t)) for i, t in expected.items()}
    else:
        assert _keyword_rows(store) == expected


def test_search_is_scoped_by_prefix_and_filter_like_vector_search(store: ChromaStore) -> None:
    store.put(("lessons", "a"), "1", {"lesson": "gold spikes", "kind": "x"})
    store.put(("lessons", "b"), "2", {"lesson": "gold drifts", "kind": "y"})
    store.put(("notes", "a"), "3", {"text": "gold in notes"})
    with store.catalog.read() as conn:

        def keys(ids: list[int]) -> set[str]:
            return {row[0] for row in conn.execute(f"SELECT key FROM items WHERE id IN ({','.join(map(str, ids))})")}

        def plan(prefix: tuple[str, ...]):
            return store.planner.explain(SearchOp(prefix, None, 10, 0, "gold"), has_query=True)

        def in_scope(prefix: tuple[str, ...]) -> set[str]:  # many candidates: the scope's SQL
            where, params = plan(prefix).scope_sql
            return keys([i for i, _ in _keywords.search(conn, "gold", where=where, params=params)])

        def listed(prefix: tuple[str, ...], flt: dict | None = None) -> set[str]:  # few: the candidates' ids
            allowed = set(store.planner.candidate_ids(conn, plan(prefix), flt))
            return keys([i for i in _keywords.match(conn, "gold").ids.tolist() if i in allowed])

        for scoped in (in_scope, listed):
            assert scoped(("lessons",)) == {"1", "2"}
            assert scoped(("lessons", "a")) == {"1"}
            assert scoped(()) == {"1", "2", "3"}
        assert listed(("lessons",), {"kind": "y"}) == {"2"}
        assert plan(("nothing",)).scope_sql is None
        assert store.planner.candidate_ids(conn, plan(("nothing",)), None) == []


def test_query_terms_drop_stop_words_and_quote_safely(store: ChromaStore) -> None:
    assert _keywords.query_terms('What is "the" AND (NEAR) SPY* -- ?') == ["near", "spy"]
    assert _keywords.query_terms("the of and") == []
    store.put(("notes",), "n", {"text": "spy near highs"})
    with store.catalog.read() as conn:  # FTS5 operators in a query are words, never syntax
        hits = _keywords.search(conn, 'SPY* OR "near" NOT (AND', where="TRUE", params=())
    assert len(hits) == 1 and hits[0][1] > 0


def test_stemming_matches_word_forms(store: ChromaStore) -> None:
    store.put(("notes",), "n", {"text": "Trading breakouts after earnings"})
    with store.catalog.read() as conn:
        assert _keywords.search(conn, "trades breakout", where="TRUE", params=())


def test_a_version_1_data_directory_gets_its_keyword_index_on_open(data_dir: Path, fake_embeddings) -> None:
    index = {"dims": FAKE_DIMS, "embed": fake_embeddings}
    with ChromaStore(data_dir=data_dir, index=index) as s:
        s.put(("lessons",), "a", {"lesson": "gold spikes on fear"})
        s.put(("notes",), "b", {"x": 1, "text": "yen carry unwinds"}, index=["text"])
        s.put(("notes",), "c", {"text": "not indexed"}, index=False)
        want = _keyword_rows(s)
    # Make the file what version 1 wrote: no keyword tables (nor anything else added since).
    make_version_1(data_dir / "catalog.sqlite")
    with ChromaStore(data_dir=data_dir, index=index) as s:
        assert _keyword_rows(s) == want and len(want) == 2
        with s.catalog.read() as c:
            assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            assert c.execute("SELECT docs FROM keyword_stats").fetchone()[0] == 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 400), st.sampled_from([0.5, 1.0, 1.5, 2.25])), max_size=120),
    st.integers(0, 130),
    st.integers(0, 2**32 - 1),
)
def test_best_is_the_head_of_the_full_order_with_ties_broken_by_id(
    pairs: list[tuple[int, float]], k: int, seed: int
) -> None:
    import numpy as np

    by_id = dict(pairs)
    ids = np.array(list(by_id), dtype=np.int64)
    scores = np.array(list(by_id.values()))
    m = _keywords.KeywordMatches(ids, scores)
    expected = [i for i, _s in sorted(by_id.items(), key=lambda kv: (-kv[1], kv[0]))]
    assert m.ids.tolist() == expected
    assert m.best(k).tolist() == expected[:k]
    keep = np.random.default_rng(seed).random(len(ids)) < 0.5
    kept = set(m.ids_by_id()[keep].tolist())
    assert m.best(k, keep).tolist() == [i for i in expected if i in kept][:k]
    seen: list[int] = []
    assert m.walk(lambda chunk: (seen.extend(chunk), set(chunk) & kept)[1], k) == [i for i in expected if i in kept][:k]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=12),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    subset=st.sets(st.integers(0, 15)),
)
def test_matches_within_some_items_score_them_as_the_whole_index_does(
    shared, texts: list[list[str]], query: list[str], subset: set[int]
) -> None:
    # A small scope's keyword scores are looked up in the posting lists, not added up over every match.
    store, _archiver = shared
    root = ("within", str(next(_counter)))
    for i, words in enumerate(texts):
        store.put((*root,), f"k{i}", {"text": " ".join(words)})
    with store.catalog.read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM items ORDER BY id")]
        within = np.asarray(sorted({ids[i % len(ids)] for i in subset}), dtype=np.int64)
        q = " ".join(query)
        whole = _keywords.match(conn, q)
        for cache in (None, PostingCache()):
            for _ in range(2):  # the second time from the cache's lists
                part = _keywords.match(conn, q, within=within, cache=cache)
                assert part.mass == whole.mass
                assert part.scores_of(within.tolist()) == whole.scores_of(within.tolist())  # the same floats
                keep = np.isin(whole.ids_by_id(), within)
                assert part.best(5).tolist() == whole.best(5, keep).tolist()
