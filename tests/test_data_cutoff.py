"""Recall that cannot look ahead: a data cut-off returns exactly the memories whose evidence ends by then.

A memory's evidence end is the last market date of the data behind it: a backtest's ``period_end``, a
finding's ``data_end``, and for what derives from them (hypotheses, strategies, lessons) the latest of their
lineage, at any depth, kept current when lineage grows later.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import START, StateGraph
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langgraph_memory import Memory
from langgraph_memory.catalog import evidence
from langgraph_memory.errors import ConfigError, InvalidArgumentError
from langgraph_memory.graph.nodes import recall_node
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


@pytest.fixture
def mem(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator[Memory]:
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


def _research(mem: Memory) -> dict[str, Any]:
    """Two findings, hypotheses, strategies, backtests over three periods and lessons, linked up to five deep.

    f_old -> h1 -> s1 -> b1 (to 2018) -> l1 -> h2 -> s2 -> b3 (to 2022) -> l3, and s1 -> b2 (to 2020) -> l2;
    s1v2 is the next version of s1 and also derives from f_new; h0 derives from nothing dated.
    """
    r: dict[str, Any] = {}
    r["f_old"] = mem.store_research_finding("Momentum after earnings", data_start="2010-01-04", data_end="2017-06-30")
    r["f_new"] = mem.store_research_finding("Momentum decays lately", data_end="2021-06-30")
    r["h1"] = mem.store_hypothesis("Momentum persists", parent_id=r["f_old"].id)
    r["s1"] = mem.store_strategy("mom", "60-day momentum", hypothesis_id=r["h1"].id)
    r["b1"] = mem.store_backtest(r["s1"].id, period_start="2015-01-02", period_end="2018-12-31", sharpe=1.1)
    r["b2"] = mem.store_backtest(r["s1"].id, period_start="2019-01-02", period_end="2020-12-31", sharpe=0.4)
    r["l1"] = mem.store_lesson("Whipsaw in 2018", backtest_id=r["b1"].id)
    r["l2"] = mem.store_lesson("Momentum crash in 2020", backtest_id=r["b2"].id)
    r["h2"] = mem.store_hypothesis("Longer lookbacks avoid whipsaw", parent_id=r["l1"].id)
    r["s2"] = mem.store_strategy("slow-mom", "120-day momentum", hypothesis_id=r["h2"].id)
    r["b3"] = mem.store_backtest(r["s2"].id, period_start="2019-01-02", period_end="2022-12-31", sharpe=0.9)
    r["l3"] = mem.store_lesson("Slow momentum lags reversals", backtest_id=r["b3"].id)
    r["s1v2"] = mem.store_strategy("mom", "60-day momentum, vol scaled", parent_id=r["f_new"].id)
    r["h0"] = mem.store_hypothesis("Markets trend")
    return r


# Each memory's evidence end, worked out by hand from the lineage above.
ENDS = {
    "f_old": date(2017, 6, 30),
    "h1": date(2017, 6, 30),
    "s1": date(2017, 6, 30),
    "b1": date(2018, 12, 31),
    "l1": date(2018, 12, 31),
    "h2": date(2018, 12, 31),  # two levels below the backtest: b1 -> l1 -> h2
    "s2": date(2018, 12, 31),  # three: b1 -> l1 -> h2 -> s2
    "b2": date(2020, 12, 31),
    "l2": date(2020, 12, 31),
    "f_new": date(2021, 6, 30),
    "s1v2": date(2021, 6, 30),  # its previous version (2017) and f_new (2021)
    "b3": date(2022, 12, 31),
    "l3": date(2022, 12, 31),
    "h0": None,
}


def _recalled(mem: Memory, cutoff: date | None, **kw: Any) -> set[str]:
    """The ids every typed query returns under ``cutoff`` (everything asked for, no relevance floor)."""
    opts = {"k": 100, "min_relevance": None, "data_cutoff": cutoff, **kw}
    hits = [
        *mem.query_research_findings("momentum", **opts),
        *mem.query_hypotheses("momentum", **opts),
        *mem.get_similar_strategies("momentum", **opts),
        *mem.query_backtests("momentum", **opts),
        *mem.query_backtests(**opts),  # a listing, no query: the scan plan
        *mem.get_relevant_lessons("momentum", include_resolved=True, **opts),
    ]
    return {h.id for h in hits}


CUTOFFS = [
    date(2017, 6, 29),
    date(2017, 6, 30),
    date(2018, 12, 30),
    date(2018, 12, 31),
    date(2020, 12, 31),
    date(2021, 6, 30),
    date(2022, 12, 30),
    date(2022, 12, 31),
    date(2030, 1, 1),
]


@pytest.mark.parametrize("cutoff", CUTOFFS, ids=str)
def test_a_cutoff_returns_exactly_the_memories_whose_evidence_ends_by_then(mem: Memory, cutoff: date) -> None:
    r = _research(mem)
    expected = {r[name].id for name, end in ENDS.items() if end is not None and end <= cutoff}
    assert _recalled(mem, cutoff) == expected
    undated = {r[name].id for name, end in ENDS.items() if end is None}
    assert _recalled(mem, cutoff, include_undated=True) == expected | undated


def test_without_a_cutoff_every_memory_is_recalled(mem: Memory) -> None:
    r = _research(mem)
    assert _recalled(mem, None) == {v.id for v in r.values()}


def test_the_evidence_ends_are_those_worked_out_through_lineage(mem: Memory) -> None:
    r = _research(mem)
    with mem.store.catalog.read() as conn:
        known = evidence.ends(conn, [(mem.typed.ref(v.id).namespace, v.id) for v in r.values()])
    assert {name: known.get(v.id) for name, v in r.items()} == ENDS


def test_lineage_growth_after_the_fact_moves_the_evidence_end_down_the_tree(mem: Memory) -> None:
    r = _research(mem)
    cutoff = date(2019, 6, 30)
    before = _recalled(mem, cutoff)
    assert {r[n].id for n in ("l1", "h2", "s2")} <= before
    # The 2018 lesson turns out to rest on the 2020 backtest too: it and all that derives from it move to 2020.
    mem.link(r["l1"].id, r["b2"].id, "learned_from")
    after = _recalled(mem, cutoff)
    assert before - after == {r[n].id for n in ("l1", "h2", "s2")}
    assert {r[n].id for n in ("l1", "h2", "s2")} <= _recalled(mem, date(2020, 12, 31))
    assert r["b3"].id not in _recalled(mem, date(2020, 12, 31))  # already later: unchanged
    # A link that brings an earlier date moves nothing.
    mem.link(r["l3"].id, r["f_old"].id)
    assert r["l3"].id in _recalled(mem, date(2022, 12, 31))


def test_resolving_a_lesson_passes_its_date_to_what_resolved_it(mem: Memory) -> None:
    r = _research(mem)
    fix = mem.store_strategy("mom-fixed", "momentum with a trend filter", parent_id=r["f_old"].id)
    assert fix.id in _recalled(mem, date(2017, 12, 31))
    mem.resolve_lesson(r["l2"].id, resolution_id=fix.id)  # the fix answers a 2020 lesson: it knew 2020
    assert fix.id not in _recalled(mem, date(2019, 12, 31))
    assert fix.id in _recalled(mem, date(2020, 12, 31))


def test_a_dated_memory_stored_under_an_undated_one_keeps_its_own_date(mem: Memory) -> None:
    h = mem.store_hypothesis("Undated idea")
    s = mem.store_strategy("idea", "an idea", hypothesis_id=h.id)
    b = mem.store_backtest(s.id, period_end="2016-12-30")
    lesson = mem.store_lesson("Idea failed", backtest_id=b.id)
    got = _recalled(mem, date(2016, 12, 30))
    assert got == {b.id, lesson.id}  # the hypothesis and strategy stay undated: left out


@pytest.mark.parametrize("bad", ["2019-12-31", 20191231, 2019.0, object()])
def test_a_cutoff_that_is_not_a_date_is_a_typed_error(mem: Memory, bad: object) -> None:
    mem.store_lesson("Whipsaw")
    with pytest.raises(InvalidArgumentError, match="data_cutoff must be a datetime.date"):
        mem.get_relevant_lessons("whipsaw", data_cutoff=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="data_cutoff must be a datetime.date"):
        mem.store.search(("lessons",), query="whipsaw", data_cutoff=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="data_cutoff must be a datetime.date"):
        recall_node("lessons", data_cutoff=bad)  # type: ignore[arg-type]


def test_a_datetime_cutoff_counts_by_its_date(mem: Memory) -> None:
    r = _research(mem)
    assert _recalled(mem, datetime(2018, 12, 31, 23, 59)) == _recalled(mem, date(2018, 12, 31))  # type: ignore[arg-type]
    assert r["b1"].id in _recalled(mem, datetime(2018, 12, 31, 0, 0))  # type: ignore[arg-type]


class _State(TypedDict, total=False):
    objective: str
    in_sample_end: date
    memories: list[dict[str, Any]]


def _graph(store: Any) -> Any:
    builder = StateGraph(_State)
    builder.add_node(
        "recall",
        recall_node(
            ["lessons", "backtests"],
            query="objective",
            k=50,
            min_relevance=None,
            data_cutoff=lambda state: state.get("in_sample_end"),
        ),
    )
    builder.add_edge(START, "recall")
    return builder.compile(store=store)


def test_recall_node_takes_each_runs_cutoff_from_the_state(mem: Memory) -> None:
    r = _research(mem)
    graph = _graph(mem.store)
    for cutoff in (date(2018, 12, 31), date(2020, 12, 31)):
        want = {r[n].id for n in ("b1", "b2", "b3", "l1", "l2", "l3") if ENDS[n] <= cutoff}  # type: ignore[operator]
        state = {"objective": "momentum", "in_sample_end": cutoff}
        assert {m["key"] for m in graph.invoke(state)["memories"]} == want
        assert {m["key"] for m in asyncio.run(graph.ainvoke(state))["memories"]} == want
    assert len(graph.invoke({"objective": "momentum"})["memories"]) == 6  # None: no cut-off this run


def test_recall_node_with_a_cutoff_refuses_a_store_that_cannot_apply_it(fake_embeddings: Any, tmp_path: Path) -> None:
    store = InMemoryStore(index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    store.put(("lessons",), "l", {"lesson": "whipsaw"})
    with pytest.raises(ConfigError, match="cannot apply one"):
        _graph(store).invoke({"objective": "whipsaw", "in_sample_end": date(2020, 1, 1)})
    with pytest.raises(InvalidArgumentError):  # a cut-off from the state is checked each run
        _graph(store).invoke({"objective": "whipsaw", "in_sample_end": "2020-01-01"})  # type: ignore[typeddict-item]


# ---------------------------------------------------------------- the store's planner, every path

DIMS = 16
EXACT_MAX = 40
N = 600
FIRST = date(2000, 1, 1)


def _end(i: int) -> date | None:
    """Note i's evidence end: one day per note, every tenth undated."""
    return None if i % 10 == 7 else date.fromordinal(FIRST.toordinal() + i)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaStore]:
    """600 notes in 30 namespaces, each with an evidence end (one day apart, every tenth unknown)."""
    store = ChromaStore(
        data_dir=tmp_path_factory.mktemp("cutoff") / "memory",
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["text"]},
    )
    store.planner.exact_max = EXACT_MAX
    ns = [("notes", f"g{i % 2}", f"u{i % 30}") for i in range(N)]
    store.batch(
        [PutOp(ns[i], f"n{i}", {"text": f"note {i}", "kind": "odd" if i % 2 else "even", "i": i}) for i in range(N)]
    )
    with store.catalog.write() as conn:
        for i in range(N):
            evidence.note(conn, ns[i], f"n{i}", _end(i))
    yield store
    store.close()


def _reference(query: str, keep: Any, k: int) -> list[str]:
    """The true top k by cosine among the notes ``keep`` passes, computed here."""
    emb = DeterministicFakeEmbedding(size=DIMS)
    q = np.asarray(emb.embed_query(query))
    scored = []
    for i in range(N):
        if keep(i):
            v = np.asarray(emb.embed_query(f"note {i}"))
            scored.append((-(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q)), f"n{i}"))
    return [key for _, key in sorted(scored)[:k]]


@pytest.mark.parametrize(
    ("prefix", "flt", "strategy"),
    [
        (("notes", "g0", "u4"), None, "exact"),  # one namespace of 20
        (("notes",), None, "hnsw"),  # every note
        (("notes", "g1"), None, "hnsw"),  # half of them
        (("notes",), {"i": {"$lt": 30}}, "exact"),  # few, through the filter index
        (("notes",), {"kind": "odd"}, "hnsw"),  # many, checked on the way
    ],
)
@pytest.mark.parametrize("cutoff_day", [30, 120, 590])
def test_store_search_with_a_cutoff_takes_the_best_k_after_the_cutoff_on_every_plan(
    big: ChromaStore, prefix: tuple[str, ...], flt: dict | None, strategy: str, cutoff_day: int
) -> None:
    cutoff = date.fromordinal(FIRST.toordinal() + cutoff_day)
    assert big.explain(prefix, query="note 123", filter=flt).strategy == strategy
    k = 10
    got = [h.key for h in big.search(prefix, query="note 123", filter=flt, limit=k, data_cutoff=cutoff)]

    def keep(i: int, undated: bool = False) -> bool:
        ns = ("notes", f"g{i % 2}", f"u{i % 30}")
        if ns[: len(prefix)] != prefix or (
            flt is not None and not _matches({"i": i, "kind": "odd" if i % 2 else "even"}, flt)
        ):
            return False
        end = _end(i)
        return undated if end is None else end <= cutoff

    assert got == _reference("note 123", keep, k)
    with_undated = big.search(prefix, query="note 123", filter=flt, limit=k, data_cutoff=cutoff, include_undated=True)
    assert [h.key for h in with_undated] == _reference("note 123", lambda i: keep(i, undated=True), k)
    # Async, and a page further down, agree with the same answer.
    later = asyncio.run(big.asearch(prefix, query="note 123", filter=flt, limit=k, data_cutoff=cutoff))
    assert [h.key for h in later] == got
    page = big.search(prefix, query="note 123", filter=flt, limit=5, offset=5, data_cutoff=cutoff)
    assert [h.key for h in page] == got[5:10]


def test_a_listing_with_a_cutoff_is_the_newest_that_pass(big: ChromaStore) -> None:
    cutoff = date.fromordinal(FIRST.toordinal() + 100)
    got = [h.key for h in big.search(("notes",), limit=1000, data_cutoff=cutoff)]
    assert sorted(got, key=lambda key: int(key[1:])) == [
        f"n{i}"
        for i in range(N)
        if _end(i) is not None and _end(i) <= cutoff  # type: ignore[operator]
    ]


def _matches(value: dict, flt: dict) -> bool:
    from langgraph_memory.search.filters import matches

    return matches(value, flt)


def test_a_cutoff_few_items_pass_is_planned_like_a_selective_filter(
    big: ChromaStore, caplog: pytest.LogCaptureFixture
) -> None:
    assert big.explain(("notes",), query="note 123").strategy == "hnsw"
    with caplog.at_level(logging.DEBUG, logger="langgraph_memory.store.searching"):
        big.search(("notes",), query="note 123", limit=10, data_cutoff=date.fromordinal(FIRST.toordinal() + 30))
    plans = [r.getMessage() for r in caplog.records if r.getMessage().startswith("search ")]
    assert (
        plans and "exact over memories" in plans[-1] and "omit keeps ~5% of items" in plans[-1]
    )  # 28 of 540 dated notes


def test_a_cutoff_before_every_known_date_returns_nothing(big: ChromaStore) -> None:
    early = date.fromordinal(FIRST.toordinal() - 1)
    assert big.search(("notes",), query="note 1", data_cutoff=early) == []
    assert big.search(("notes",), data_cutoff=early) == []
    undated = [h.key for h in big.search(("notes",), limit=100, data_cutoff=early, include_undated=True)]
    assert sorted(undated) == sorted(f"n{i}" for i in range(N) if _end(i) is None)


@pytest.mark.sqlite_only("turns a SQLite catalog file back to the version before evidence ends")
def test_a_catalog_from_before_evidence_ends_gains_them_and_its_old_memories_are_undated(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as m:
        h = m.store_hypothesis("Trends persist")
        old = m.store_backtest(m.store_strategy("t", "trend", hypothesis_id=h.id).id, period_end="2018-12-31")
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.executescript("DROP TABLE evidence_ends; PRAGMA user_version = 8;")
    conn.close()
    with Memory.open(data_dir, embeddings=fake_embeddings) as m:
        cutoff = date(2020, 1, 1)
        assert _recalled(m, cutoff) == set()  # stored before: no known evidence end, left out
        assert old.id in _recalled(m, cutoff, include_undated=True)
        new = m.store_backtest(old.strategy_id, period_end="2019-06-28")
        assert _recalled(m, cutoff) == {new.id}


def test_a_postgresql_catalog_from_before_evidence_ends_gains_them(
    pg_database: str, tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    import psycopg

    with Memory.open(pg_database, local_dir=tmp_path / "local", embeddings=fake_embeddings) as m:
        h = m.store_hypothesis("Trends persist")
        s = m.store_strategy("t", "trend", hypothesis_id=h.id)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("DROP TABLE evidence_ends")
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    with Memory.open(pg_database, local_dir=tmp_path / "local", embeddings=fake_embeddings) as m:
        b = m.store_backtest(s.id, period_end="2019-06-28")
        lesson = m.store_lesson("Trend lagged", backtest_id=b.id)
        assert _recalled(m, date(2019, 12, 31)) == {b.id, lesson.id}


def test_a_memory_stored_by_store_node_under_a_dated_parent_takes_its_date(mem: Memory) -> None:
    from langgraph_memory.graph.nodes import store_node

    r = _research(mem)

    class S(TypedDict, total=False):
        note: str
        parent: str

    builder = StateGraph(S)
    builder.add_node("remember", store_node("lessons", values="note", parent="parent"))
    builder.add_edge(START, "remember")
    builder.compile(store=mem.store).invoke({"note": "Whipsaw again", "parent": r["b2"].id})
    found = mem.store.search(("lessons",), query="Whipsaw again", filter={"lesson": "Whipsaw again"})
    assert len(found) == 1
    assert mem.store.search(("lessons",), filter={"lesson": "Whipsaw again"}, data_cutoff=date(2020, 12, 30)) == []
    assert len(mem.store.search(("lessons",), filter={"lesson": "Whipsaw again"}, data_cutoff=date(2020, 12, 31))) == 1


@pytest.mark.parametrize(
    ("prefix", "query", "flt"),
    [
        (("notes", "g0", "u4"), "note 123", None),  # exact over one namespace
        (("notes",), "note 123", None),  # exact once the cut-off narrows it (5% pass)
        (("notes",), "note 123", {"kind": "odd"}),
        (("notes",), None, None),  # a listing
    ],
)
def test_a_cutoff_search_never_parses_the_values_of_items_known_to_end_after_it(
    big: ChromaStore, monkeypatch: pytest.MonkeyPatch, prefix: tuple[str, ...], query: str | None, flt: dict | None
) -> None:
    from langgraph_memory.catalog import item_rows

    cutoff = date.fromordinal(FIRST.toordinal() + 30)
    big.search(prefix, query=query, filter=flt, data_cutoff=cutoff)  # vectors and evidence ends read once
    parsed: list[str] = []
    real = item_rows.item_from_row

    def spy(row: Any) -> Any:  # the real parse, noting whose value it parsed
        it = real(row)
        parsed.append(it.key)
        return it

    monkeypatch.setattr(item_rows, "item_from_row", spy)
    got = big.search(prefix, query=query, filter=flt, limit=10, data_cutoff=cutoff)
    assert got and all(_end(int(h.key[1:])) <= cutoff for h in got)  # type: ignore[operator]
    late = [key for key in parsed if (_end(int(key[1:])) or date.min) > cutoff]
    assert late == []  # ranked past unread: the cut-off costs ranking deeper, not reading what it drops


def test_a_hybrid_cutoff_search_never_parses_the_values_of_memories_known_to_end_after_it(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memory.catalog import item_rows

    r = _research(mem)
    late = {r[name].id for name, end in ENDS.items() if end is not None and end > date(2018, 12, 31)}
    mem.get_relevant_lessons("momentum crash", data_cutoff=date(2018, 12, 31))  # evidence ends read once
    parsed: list[str] = []
    real = item_rows.item_from_row

    def spy(row: Any) -> Any:  # the real parse, noting whose value it parsed
        it = real(row)
        parsed.append(it.key)
        return it

    monkeypatch.setattr(item_rows, "item_from_row", spy)
    for label in ("lessons", "backtests", "strategies"):
        mem.store.search((label,), query="momentum crash in 2020", data_cutoff=date(2018, 12, 31))
    assert parsed and not late & set(parsed)
