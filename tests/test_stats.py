"""Memory.stats() against a known fixture, and the decay cleanup's dry run and real run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_memory.lifecycle.decay import cleanup_decayed
from langgraph_memory.memory import Memory
from langgraph_memory.search.ranking import TemporalConfig
from langgraph_memory.store._writer import dumps_value

HOUR = 3600.0
VEC_BYTES = 16 * 4  # the fake model's 16 float32s


@pytest.fixture
def mem(data_dir: Path, fake_embeddings):
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


class _S(TypedDict):
    n: int


def _fixture(mem: Memory) -> dict[str, str]:
    """Items in six collections, one superseded, one archived, one retired live, two threads."""
    f1 = mem.store_research_finding("Vol clusters", session_id="s1")
    f2 = mem.store_research_finding("Trends persist", session_id="s1")
    h = mem.store_hypothesis("Momentum works", parent_id=f1.id, session_id="s2")
    s1 = mem.store_strategy("mom", "10-day", hypothesis_id=h.id)
    s2 = mem.store_strategy("mom", "60-day", hypothesis_id=h.id)
    mem.supersede(s1.id, s2.id, "longer lookback")
    b = mem.store_backtest(s2.id, sharpe=1.1)
    archived = mem.store_lesson("archived lesson", backtest_id=b.id)
    mem.retire(archived.id, "old")
    mem.archiver.run()  # archives the retired lesson at once
    live_retired = mem.store_lesson("retired, still live", backtest_id=b.id)
    mem.retire(live_retired.id, "noise")
    mem.store.put(("memories", "u1"), "note", {"text": "with a vector"})
    mem.store.put(("memories", "u1"), "raw", {"text": "no vector"}, index=False)

    builder = StateGraph(_S)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    graph = mem.compile(builder)
    for thread in ("t1", "t2"):
        graph.invoke({"n": 0}, {"configurable": {"thread_id": thread}})
    return {"f1": f1.id, "f2": f2.id, "h": h.id, "s1": s1.id, "s2": s2.id, "b": b.id}


def test_stats_against_a_known_fixture(mem: Memory) -> None:
    ids = _fixture(mem)
    stats = mem.stats()
    c = stats.collections
    assert (
        list(c)[:7]
        == [
            "research_findings",
            "hypotheses",
            "strategy_library",
            "backtest_results",
            "lessons_learned",
            "market_regimes",
            "tool_definitions",
        ]
        and list(c)[7] == "memories"
    )
    assert {name: s.items for name, s in c.items()} == {
        "research_findings": 2,
        "hypotheses": 1,
        "strategy_library": 2,
        "backtest_results": 1,
        "lessons_learned": 1,
        "market_regimes": 0,
        "tool_definitions": 0,
        "memories": 2,
    }
    assert (c["memories"].with_vectors, c["memories"].vectors) == (1, 1)
    assert c["research_findings"].with_vectors == 2
    assert (c["strategy_library"].superseded, c["strategy_library"].searchable) == (1, 1)
    assert (c["lessons_learned"].retired, c["lessons_learned"].archived, c["lessons_learned"].searchable) == (1, 1, 0)
    assert (stats.items, stats.archived, stats.retired, stats.superseded) == (9, 1, 1, 1)
    assert c["backtest_results"].memory_type == "semantic" and c["lessons_learned"].memory_type == "episodic"
    assert c["market_regimes"].oldest is None and c["market_regimes"].storage_bytes == 0

    # bytes and dates match the items, read back one by one
    for name in ("research_findings", "memories", "strategy_library"):
        items = list(mem.store.items.iter_items(name))
        assert c[name].storage_bytes == sum(
            len(dumps_value(it.value).encode()) + VEC_BYTES * it.n_vectors for it in items
        )
        assert c[name].oldest.timestamp() == pytest.approx(min(it.created_at for it in items))  # type: ignore[union-attr]
        assert c[name].newest.timestamp() == pytest.approx(max(it.created_at for it in items))  # type: ignore[union-attr]

    assert stats.sessions == 2  # s1, s2
    assert stats.namespaces == 6
    # h<-f1, s1<-h, s2<-h, s2<-s1 (previous_version and supersedes), b<-s2, and a lesson<-b twice
    assert stats.lineage_edges == 8
    assert {e.relation for e in mem.lineage_store.parents(ids["s2"])} == {"tests", "previous_version", "supersedes"}
    assert stats.threads == 2
    assert stats.checkpoints == sum(
        len(list(mem.checkpointer.list({"configurable": {"thread_id": t}}))) for t in ("t1", "t2")
    )
    assert stats.disk_bytes["catalog"] > 0 and stats.disk_bytes["archive"] > 0 and stats.disk_bytes["checkpoints"] > 0
    as_json = json.loads(json.dumps(stats.as_dict()))
    assert as_json["items"] == 9 and as_json["collections"]["lessons_learned"]["archived"] == 1


def test_stats_of_a_fresh_directory_creates_no_archive(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        stats = mem.stats()
        assert stats.items == 0 and stats.archived == 0 and stats.threads == 0 and stats.sessions == 0
        assert not mem.settings.manifest_path.exists()


# ------------------------------------------------------------- decay


def test_decay_cleanup_dry_run_then_real_run(mem: Memory) -> None:
    finding = mem.store_research_finding("semantic: decays slowly")
    idle = mem.store_lesson("episodic and never read again")
    used = mem.store_lesson("episodic, but read five times")
    for _ in range(5):
        assert mem.store.get(("lessons",), used.id) is not None
    mem.store.put(("memories",), "m", {"text": "a general memory"})
    t0 = time.time()
    # Episodic decays at 0.01/h: under 0.01 after 460.5 idle hours; five reads (x1.5) hold it until 501 h.
    later = t0 + 480 * HOUR

    dry = mem.cleanup_decayed(now=later)
    assert dry.dry_run and dry.scanned == 4 and dry.retired == 0
    assert {d.key for d in dry.decayed} == {idle.id, "m"}
    d = next(x for x in dry.decayed if x.key == idle.id)
    assert d.memory_type == "episodic" and d.weight < 0.01 and d.idle_hours == pytest.approx(480, abs=0.1)
    assert dry.by_collection == {"lessons_learned": 1, "memories": 1}
    assert mem.status(idle.id) is None  # a dry run changes nothing

    real = mem.cleanup_decayed(now=later, dry_run=False, collections=["lessons"])
    assert real.retired == 1 and {x.key for x in real.decayed} == {idle.id}
    st = mem.status(idle.id)
    assert st is not None and st.status == "retired" and "forgetting threshold" in (st.reason or "")
    assert {h.id for h in mem.get_relevant_lessons("episodic", k=10)} == {used.id}
    assert mem.status("m", namespace=("memories",)) is None  # not in the collections asked for

    # retired items are not weighed again; a later time decays the read one too, and the finding much later
    again = mem.cleanup_decayed(now=t0 + 520 * HOUR, collections=["lessons"])
    assert again.scanned == 1 and [x.key for x in again.decayed] == [used.id]
    assert finding.id not in {x.key for x in mem.cleanup_decayed(now=t0 + 4000 * HOUR).decayed}
    assert finding.id in {x.key for x in mem.cleanup_decayed(now=t0 + 5000 * HOUR).decayed}
    # a custom threshold
    assert mem.cleanup_decayed(now=t0 + 10 * HOUR, config=TemporalConfig(forgetting_threshold=0.95)).decayed


def test_real_run_rechecks_each_item_when_retiring(mem: Memory) -> None:
    a = mem.store_lesson("a")
    b = mem.store_lesson("b")
    keys = [(("lessons",), a.id), (("lessons",), b.id)]
    # b was used since it was weighed: the predicate, run on the item inside the transaction, spares it
    retired = mem.store.items.retire_where(keys, lambda it: it.key == a.id, reason="decayed")
    assert [s.key for s in retired] == [a.id]
    assert mem.status(b.id) is None
    report = cleanup_decayed(mem.store.items, now=time.time(), dry_run=False)
    assert report.retired == 0 and report.decayed == []
