"""The data cut-off on every read that returns memories: as of a checkpoint, the store's other searches, the
typed calls as of a moment, the MCP tools and the ``research`` CLI command, and a bundle's round trip.

Two backtests (2015-2018 and 2019-2022), a lesson learnt from each; a cut-off at the end of 2019 keeps the
first backtest and its lesson only.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import END, START, StateGraph

from langgraph_memory import Memory
from langgraph_memory.bundle import export_bundle, import_bundle
from langgraph_memory.catalog import evidence
from langgraph_memory.errors import InvalidArgumentError
from langgraph_memory.graph import recall_node
from langgraph_memory.mcp.tools import MemoryTools
from langgraph_memory.research.calls import research_calls

CUT = date(2019, 12, 31)


@pytest.fixture
def mem(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator[Memory]:
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


def _seed(mem: Memory) -> dict[str, Any]:
    r: dict[str, Any] = {}
    r["h"] = mem.store_hypothesis("Momentum persists in trending regimes")
    r["s"] = mem.store_strategy("mom", "60-day momentum", hypothesis_id=r["h"].id)
    r["old"] = mem.store_backtest(r["s"].id, period_start="2015-01-02", period_end="2018-12-31", sharpe=1.1)
    r["new"] = mem.store_backtest(r["s"].id, period_start="2019-01-02", period_end="2022-12-31", sharpe=0.3)
    r["l_old"] = mem.store_lesson("momentum whipsaw in choppy markets", backtest_id=r["old"].id)
    r["l_new"] = mem.store_lesson("momentum crashed in the 2022 reversal", backtest_id=r["new"].id)
    return r


# ------------------------------------------------------------ as of a checkpoint


class _Review(TypedDict, total=False):
    strategy: str
    lessons: list[dict[str, Any]]


def _review_graph(mem: Memory) -> Any:
    builder = StateGraph(_Review)
    builder.add_node("propose", lambda state: {"strategy": state["strategy"].strip()})
    builder.add_node(
        "approve",
        recall_node(
            "lessons",
            query="strategy",
            output_key="lessons",
            min_relevance=None,
            as_of_checkpoint=True,
            data_cutoff=CUT,
        ),
    )
    builder.add_edge(START, "propose").add_edge("propose", "approve").add_edge("approve", END)
    return mem.compile(builder)


def test_recall_as_of_the_checkpoint_with_a_cutoff_recalls_what_both_allow(mem: Memory) -> None:
    r = _seed(mem)
    graph = _review_graph(mem)
    config = {"configurable": {"thread_id": "review-1"}}
    first = graph.invoke({"strategy": " momentum "}, config)
    assert [h["key"] for h in first["lessons"]] == [r["l_old"].id]  # the 2022 lesson is after the cut-off

    # Later: the old lesson is reworded, and a new lesson from the old backtest is learnt.
    reworded = {**r["l_old"].model_dump(mode="json"), "lesson": "never trade momentum"}
    mem.store.put(("lessons",), r["l_old"].id, reworded)
    mem.store_lesson("momentum needs a trend filter", backtest_id=r["old"].id)

    approval = next(s for s in graph.get_state_history(config) if s.next == ("approve",))
    replay = graph.invoke(None, approval.config)
    assert [h["key"] for h in replay["lessons"]] == [r["l_old"].id]
    assert [h["value"]["lesson"] for h in replay["lessons"]] == ["momentum whipsaw in choppy markets"]
    again = asyncio.run(graph.ainvoke(None, approval.config))
    assert [h["value"]["lesson"] for h in again["lessons"]] == ["momentum whipsaw in choppy markets"]


def test_the_typed_calls_as_of_a_moment_take_the_cutoff(mem: Memory) -> None:
    r = _seed(mem)
    then = datetime.now(UTC)
    mem.store_lesson("momentum needs a trend filter", backtest_id=r["old"].id)  # after the moment
    past = mem.as_of(then)
    hits = past.get_relevant_lessons("momentum", data_cutoff=CUT, min_relevance=None)
    assert [h.id for h in hits] == [r["l_old"].id]
    both = past.get_relevant_lessons("momentum", min_relevance=None)
    assert {h.id for h in both} == {r["l_old"].id, r["l_new"].id}
    assert [h.id for h in past.query_backtests(data_cutoff=CUT)] == [r["old"].id]  # a listing
    # The hypothesis derives from nothing dated: a cut-off keeps it only with include_undated.
    assert past.query_hypotheses("momentum", data_cutoff=CUT, min_relevance=None) == []
    undated = past.query_hypotheses("momentum", data_cutoff=CUT, include_undated=True, min_relevance=None)
    assert [h.id for h in undated] == [r["h"].id]


# ------------------------------------------------------------ the store's other reads


def test_every_search_of_the_store_takes_the_cutoff(mem: Memory) -> None:
    r = _seed(mem)
    store = mem.store
    ns = ("lessons",)
    want = [r["l_old"].id]
    assert [h.item.key for h in store.search_explained(ns, query="momentum", data_cutoff=CUT).hits] == want
    assert [h.item.key for h in store.search_explained(ns, data_cutoff=CUT).hits] == want  # a listing
    vector = mem.store.cached_embeddings.embed_query("momentum")  # type: ignore[union-attr]
    assert [h.key for h in store.search_by_vector(ns, vector, data_cutoff=CUT)] == want
    assert len(store.search_by_vector(ns, vector)) == 2
    assert [h.key for h in asyncio.run(store.asearch(ns, query="momentum", data_cutoff=CUT))] == want
    # The plan of a cut-off that passes nothing is said before anything runs.
    assert "omit keeps ~0%" in str(store.explain(ns, query="momentum", data_cutoff=date(2000, 1, 1)))
    with mem.store.catalog.read() as conn:
        assert evidence.ends(conn, [(ns, r["l_old"].id)]) == {r["l_old"].id: date(2018, 12, 31)}


@pytest.mark.parametrize("read", ["search", "search_explained", "asearch", "as_of"])
def test_a_misspelt_cutoff_argument_is_refused_rather_than_ignored(mem: Memory, read: str) -> None:
    _seed(mem)
    with pytest.raises((InvalidArgumentError, TypeError), match="data_cutof"):
        if read == "asearch":
            asyncio.run(mem.store.asearch(("lessons",), query="x", data_cutof=CUT))  # type: ignore[call-arg]
        elif read == "as_of":
            mem.store.as_of(datetime.now(UTC)).search(("lessons",), query="x", data_cutof=CUT)  # type: ignore[call-arg]
        else:
            getattr(mem.store, read)(("lessons",), query="x", data_cutof=CUT)
    with pytest.raises(InvalidArgumentError, match="data_cutof"):
        mem.get_relevant_lessons("x", data_cutof=CUT)  # type: ignore[call-arg]


# ------------------------------------------------------------ MCP tools and the CLI


def test_every_query_call_offers_the_cutoff_outside_python() -> None:
    calls = {c.name: c for c in research_calls()}
    queries = [n for n in calls if n.startswith("query_") or n in ("get_relevant_lessons", "get_similar_strategies")]
    assert len(queries) == 7
    for name in queries:
        params = calls[name].signature.parameters
        assert params["data_cutoff"].default is None, name
        assert params["include_undated"].default is False, name
    assert "data_cutoff" not in calls["store_lesson"].signature.parameters


def test_the_mcp_tools_take_the_cutoff_as_an_iso_date(mem: Memory) -> None:
    r = _seed(mem)
    tools = MemoryTools(mem, min_relevance=0.0)
    found = tools.get_relevant_lessons(context="momentum", data_cutoff="2019-12-31")  # type: ignore[attr-defined]
    assert [h["id"] for h in found["results"]] == [r["l_old"].id]
    found = tools.query_backtests(data_cutoff="2019-12-31", as_of=datetime.now(UTC).isoformat())  # type: ignore[attr-defined]
    assert [h["id"] for h in found["results"]] == [r["old"].id]
    found = tools.query_hypotheses(query="momentum", data_cutoff="2014-01-01")  # type: ignore[attr-defined]
    assert found["total_results"] == 0  # undated
    found = tools.query_hypotheses(query="momentum", data_cutoff="2014-01-01", include_undated=True)  # type: ignore[attr-defined]
    assert [h["id"] for h in found["results"]] == [r["h"].id]
    with pytest.raises(InvalidArgumentError, match="data_cutoff"):
        tools.get_relevant_lessons(context="momentum", data_cutoff="end of 2019")  # type: ignore[attr-defined]
    mem.store.put(("memories",), "m1", {"content": "momentum note", "tags": []})
    assert tools.search_memory("momentum note", data_cutoff="2019-12-31")["total_results"] == 0  # undated
    assert tools.search_memory("momentum note", data_cutoff="2019-12-31", include_undated=True)["total_results"] == 1


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [str(Path(sys.executable).with_name("langgraph-memory")), "--data-dir", str(data_dir), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_the_research_and_search_commands_take_data_cutoff(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    with Memory.open(data_dir) as mem:  # the default model: the command line searches with it too
        r = _seed(mem)
    out = _cli(data_dir, "research", "query_backtests", "--data-cutoff", "2019-12-31")
    assert out.returncode == 0, out.stderr
    assert [h["id"] for h in json.loads(out.stdout)["results"]] == [r["old"].id]
    out = _cli(data_dir, "research", "get_relevant_lessons", "--context", "momentum", "--data-cutoff", "2019-12-31")
    assert out.returncode == 0, out.stderr
    assert {h["id"] for h in json.loads(out.stdout)["results"]} <= {r["l_old"].id}
    bad = _cli(data_dir, "research", "query_backtests", "--data-cutoff", "2019-31-12")
    assert bad.returncode != 0 and "data_cutoff" in bad.stderr and "Traceback" not in bad.stderr
    out = _cli(data_dir, "search", "momentum", "--collection", "backtests", "--data-cutoff", "2019-12-31", "--json")
    assert out.returncode == 0, out.stderr
    assert [h["key"] for h in json.loads(out.stdout)] == [r["old"].id]
    bad = _cli(data_dir, "search", "momentum", "--data-cutoff", "end of 2019")
    assert bad.returncode != 0 and "--data-cutoff" in bad.stderr and "Traceback" not in bad.stderr


# ------------------------------------------------------------ bundles


def _cut_answers(mem: Memory) -> dict[str, list[str]]:
    opts: dict[str, Any] = {"k": 50, "min_relevance": None}
    return {
        str(cut): sorted(
            h.id
            for h in [
                *mem.get_relevant_lessons("momentum", data_cutoff=cut, **opts),
                *mem.query_backtests(data_cutoff=cut, **opts),
                *mem.query_hypotheses("momentum", data_cutoff=cut, **opts),
                *mem.get_similar_strategies("momentum", data_cutoff=cut, **opts),
            ]
        )
        for cut in (date(2018, 12, 31), CUT, date(2023, 1, 1))
    }


def test_a_bundle_round_trip_keeps_the_cutoff_answers(mem: Memory, tmp_path: Path, fake_embeddings: Any) -> None:
    r = _seed(mem)
    # Lineage grown after the fact moves dates forward: the bundle must carry the dates, not re-derive them.
    mem.link(r["l_old"].id, r["new"].id, "learned_from")
    before = _cut_answers(mem)
    assert r["l_old"].id not in before[str(CUT)]
    export_bundle(mem.store, tmp_path / "share", collections=["lessons_learned", "backtest_results"])
    with Memory.open(tmp_path / "target", embeddings=fake_embeddings) as target:
        import_bundle(target.store, tmp_path / "share")
        after = _cut_answers(target)
    # The strategy and hypothesis stayed behind; everything exported answers as it did.
    exported = {r[n].id for n in ("old", "new", "l_old", "l_new")}
    assert after == {cut: [i for i in ids if i in exported] for cut, ids in before.items()}
    assert after[str(date(2018, 12, 31))] == [r["old"].id]
