"""Session memory: boundaries on a fake clock, context, promotion with chunks and lineage, cleanup, durability."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.archive import Archiver
from langgraph_memory.catalog._schema import SCHEMA_VERSION
from langgraph_memory.errors import ConfigError, InvalidArgumentError, NotFoundError
from langgraph_memory.sessions import SessionConfig, SessionMemory, thread_node_id
from langgraph_memory.sessions.importance import information, question_share
from tests.helpers.session_data import Clock, TopicEmbeddings

FACT = "rates: the Fed held rates at 5.25% and signalled two cuts before December, bond yields fell"
FACT2 = "crypto: bitcoin ETF inflows reached 1.2 billion dollars this week, led by BlackRock's fund"
CHATTER = "rates ok thanks"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(data_dir: Path):
    m = Memory.open(data_dir, embeddings=TopicEmbeddings())
    yield m
    m.close()


def sessions_for(mem: Memory, clock: Clock, **config: object) -> SessionMemory:
    return SessionMemory(mem.store, SessionConfig(**config), clock=clock)  # type: ignore[arg-type]


# ---------------------------------------------------------------- boundaries


def test_inactivity_ends_a_session_after_30_minutes(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    first = sm.add_turn("rates: what did the Fed do?", "It held.", thread_id="t1")
    last_turn = clock.advance(minutes=29)
    assert sm.add_turn("rates: and the dots?", "Two cuts.", thread_id="t1") == first
    clock.advance(minutes=30)
    second = sm.add_turn("rates: yields today?", "Down 5 bp.", thread_id="t1")
    assert second != first
    ended = sm.session(first)
    assert ended.end_reason == "inactivity" and ended.ended_at == pytest.approx(last_turn + 1800)
    assert ended.n_turns == 2 and sm.session(second).state == "active"


def test_just_under_the_inactivity_threshold_stays(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock, inactivity_threshold_minutes=10)
    first = sm.add_turn("rates one", "a")
    clock.advance(minutes=9.99)
    assert sm.add_turn("rates two", "b") == first
    clock.advance(minutes=10)
    assert sm.add_turn("rates three", "c") != first


def test_topic_change_under_0_3_similarity_starts_a_new_session(data_dir: Path, clock: Clock) -> None:
    emb = TopicEmbeddings(cosines={"rates31": 0.31, "rates29": 0.29})
    with Memory.open(data_dir, embeddings=emb) as mem:
        sm = sessions_for(mem, clock)
        a = sm.add_turn("rates: the Fed held", "yes")
        clock.advance(minutes=1)
        assert sm.add_turn("rates31 slightly related", "ok") == a  # cosine 0.31 with the previous turn
        clock.advance(minutes=1)
        b = sm.add_turn("rates: back to the Fed", "sure")  # cosine 0.31 with the previous turn again
        assert b == a
        clock.advance(minutes=1)
        c = sm.add_turn("rates29 drifting away", "hm")  # cosine 0.29: a new topic
        assert c != a and sm.session(a).end_reason == "topic_change"
        clock.advance(minutes=1)
        d = sm.add_turn("football: who won?", "Arsenal")  # orthogonal to the previous turn
        assert d != c and sm.session(c).end_reason == "topic_change"


def test_at_most_50_turns_per_session(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock, promote_on_end=False)
    ids = set()
    for i in range(51):
        clock.advance(seconds=30)
        ids.add(sm.add_turn(f"rates turn {i}", "ok"))
    assert len(ids) == 2
    first = min(ids, key=lambda s: sm.session(s).started_at)
    assert sm.session(first).n_turns == 50 and sm.session(first).end_reason == "max_turns"


def test_at_most_two_hours_per_session(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    first = sm.add_turn("rates start", "ok")
    started = clock.t
    for _ in range(5):  # every 25 minutes: never inactive, 125 minutes in all
        clock.advance(minutes=25)
        sid = sm.add_turn("rates again", "ok")
    assert sid != first
    s = sm.session(first)
    assert s.end_reason == "max_duration" and s.ended_at == pytest.approx(started + 7200) and s.n_turns == 5


def test_forced_new_session_and_threads_are_separate(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    a = sm.add_turn("rates one", "x", thread_id="t1")
    b = sm.add_turn("rates one", "x", thread_id="t2")
    assert a != b
    clock.advance(minutes=1)
    assert sm.add_turn("rates two", "y", thread_id="t1") == a
    c = sm.add_turn("rates three", "z", True, thread_id="t1")
    assert c != a and sm.session(a).end_reason == "forced"
    assert sm.current_session("t2").id == b  # type: ignore[union-attr]
    assert [s.thread_id for s in sm.list_sessions(state="active")] == ["t1", "t2"]


# ------------------------------------------------------------------ reading


def test_session_context_and_recent_context(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    for i in range(25):
        clock.advance(minutes=1)
        sm.add_turn(f"rates question {i}", f"answer {i}", thread_id="t1")
    clock.advance(minutes=1)
    sm.add_turn("crypto in another thread", "fine", thread_id="t2")
    ctx = sm.get_session_context(thread_id="t1")
    assert [t.user for t in ctx] == [f"rates question {i}" for i in range(5, 25)]  # the last 20, oldest first
    assert [t.index for t in sm.get_session_context(thread_id="t1", max_turns=3)] == [22, 23, 24]
    assert sm.get_session_context() == []  # the thread-less channel has no session
    recent = sm.get_all_recent_context(hours_back=0.25, max_turns=50)
    assert [t.user for t in recent][-2:] == ["rates question 24", "crypto in another thread"]
    assert len(recent) == 16  # turns at minutes 11..26 of the run (now: minute 26)
    assert {t.thread_id for t in recent} == {"t1", "t2"}
    # Time up before cleanup ran: the session is expired for readers, unless asked.
    clock.advance(minutes=31)
    assert sm.get_session_context(thread_id="t1") == []
    assert sm.current_session("t1") is None
    assert len(sm.get_session_context(thread_id="t1", include_expired=True)) == 20
    sid = ctx[0].session_id
    assert (
        sm.get_session_context(sid) == [] and len(sm.get_session_context(sid, max_turns=50, include_expired=True)) == 25
    )
    with pytest.raises(NotFoundError):
        sm.get_session_context("no-such-session")


def test_bad_input_is_refused_with_typed_errors(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    with pytest.raises(InvalidArgumentError):
        sm.add_turn("", "  ")
    with pytest.raises(InvalidArgumentError):
        sm.add_turn(3, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        sm.add_turn("x", "y", thread_id="")
    with pytest.raises(InvalidArgumentError):
        sm.add_turn("x", "y", importance=1.5)
    with pytest.raises(InvalidArgumentError):
        sm.get_session_context(max_turns=0)
    with pytest.raises(InvalidArgumentError):
        sm.get_all_recent_context(hours_back=-1)
    with pytest.raises(ConfigError):
        SessionConfig(topic_change_threshold=1.5)
    with pytest.raises(ConfigError):
        SessionConfig(max_turns_per_session=0)
    with pytest.raises(ConfigError):
        SessionMemory(mem.store, namespace=("lessons",))  # a typed collection
    assert mem.stats().session_turns == 0  # nothing half-written


# ---------------------------------------------------------------- promotion


def test_important_turns_become_episodic_memories_with_lineage(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    sid = sm.add_turn(FACT, "Noted.", thread_id="t1", source="m1")
    clock.advance(minutes=1)
    sm.add_turn(CHATTER, "", thread_id="t1")
    clock.advance(minutes=1)
    sm.add_turn("rates: what will you remember?", "", thread_id="t1")
    promoted = sm.promote_to_longterm(sid)
    assert [t.index for t in promoted] == [0]
    session = sm.session(sid)
    assert (session.state, session.end_reason, session.n_promoted) == ("promoted", "closed", 1)
    item = mem.store.get(("episodes",), promoted[0].memory_key)  # type: ignore[arg-type]
    assert item is not None
    v = item.value
    assert v["content"] == f"{FACT}\nNoted." and v["session_id"] == sid and v["thread_id"] == "t1"
    assert v["source"] == "m1" and v["turn_index"] == 0 and v["importance"] >= 0.7
    assert v["chunks"] == [v["content"]] and v["signals"]["novelty"] == 1.0
    # every turn has its decision recorded; the chatter and the question were not kept
    turns = sm.get_session_context(sid, include_expired=True)
    assert [t.memory_key is not None for t in turns] == [True, False, False]
    assert all(t.importance is not None and t.signals for t in turns)
    assert turns[1].importance < 0.7 and turns[2].signals["questions"] == 1.0  # type: ignore[index,operator]
    # found by a search of long-term memory, traced back to the session and the thread
    assert mem.store.search(("episodes",), query="what did the Fed do with rates")[0].key == item.key
    lin = mem.lineage(item.key)
    assert lin.ancestor_ids == [thread_node_id("t1"), sid]
    assert [a.relation for a in lin.ancestors] == [None, "promoted_from"]
    assert lin.ancestors[1].summary.startswith(f"session {sid[:8]} (3 turns, 1 promoted; thread t1, promoted: closed)")
    assert lin.ancestors[0].summary == "thread t1" and lin.ancestors[0].storage == "unknown"  # no checkpoint yet
    assert mem.lineage(sid).descendant_ids == [item.key]
    # promoting again does nothing
    assert sm.promote_to_longterm(sid) == [] and sm.promote_to_longterm() == []
    assert mem.store.items.count("memories") == 1


def test_novelty_against_memory_and_explicit_importance(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    sm.add_turn(FACT, "", thread_id="a")
    assert len(sm.promote_to_longterm(end_active=True)) == 1
    clock.advance(hours=1)
    # The same fact again (same topic vector: similarity 1 with the memory): not new, not promoted.
    again = sm.add_turn("rates: as I said, the Fed held rates at 5.25% and signalled two cuts", "", thread_id="a")
    # A short turn the caller marks as important is promoted whatever the rule says.
    clock.advance(minutes=1)
    sm.add_turn("rates: remember this", "", thread_id="a", importance=1.0)
    clock.advance(minutes=1)
    sm.add_turn(
        "rates: the Fed's new building has 14 floors and a library", "", thread_id="a", importance=0.0
    )  # and one marked unimportant is not
    done = sm.promote_to_longterm(again)
    turns = {t.index: t for t in sm.get_session_context(again, include_expired=True)}
    assert turns[0].signals["similarity_memory"] == pytest.approx(1.0, abs=1e-5)  # type: ignore[index]
    assert turns[0].memory_key is None and turns[0].importance < 0.7  # type: ignore[operator]
    assert [t.index for t in done] == [1] and turns[1].importance == 1.0 and turns[2].memory_key is None


def test_a_long_turn_is_cut_into_at_most_ten_embedded_chunks(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    sentences = [f"Sentence {i} talks about rates and the yield curve number {i}." for i in range(150)]
    sentences[-1] = "The final sentence names the crypto exchange Kraken."
    sid = sm.add_turn(" ".join(sentences), "", importance=1.0)
    (turn,) = sm.promote_to_longterm(sid)
    stored = mem.store.items.get(("episodes",), turn.memory_key)  # type: ignore[arg-type]
    assert stored is not None
    chunks = stored.value["chunks"]
    assert 2 <= len(chunks) <= 10 and stored.n_vectors == len(chunks)
    assert "Kraken" in chunks[-1] and "Kraken" not in chunks[0]
    start, end = stored.value["chunk_spans"][-1]
    assert stored.value["content"][start:end] == chunks[-1]
    hit = mem.store.search(("episodes",), query="Kraken crypto exchange")[0]
    assert hit.key == turn.memory_key and hit.value["content"].startswith("Sentence 0")


def test_importance_signals() -> None:
    info, words = information("Ok, thanks!", 20)
    assert words == 2 and info == pytest.approx(math.log(3) / math.log(21))
    full, words = information(" ".join(f"word{i}" for i in range(30)), 20)
    assert full == 1.0 and words == 30
    assert question_share("Where? Why? Fine.") == pytest.approx(2 / 3)
    assert question_share("") == 0.0


# ------------------------------------------------------ cleanup, stats, reopen


def test_cleanup_ends_promotes_and_forgets(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock, retention_hours=1)
    old = sm.add_turn(FACT, "", thread_id="t1", source="src-1")
    sm.add_turn(CHATTER, "", thread_id="t1", source="src-2")
    clock.advance(minutes=20)
    busy = sm.add_turn(FACT2, "", thread_id="t2")
    clock.advance(minutes=15)  # t1 idle 35 minutes, t2 15
    report = sm.cleanup()
    assert report.ended == [old] and report.promoted_sessions == [old] and report.promoted_turns == 1
    assert report.purged_turns == 0 and not report.errors and report.seconds > 0
    assert sm.session(busy).state == "active"
    stats = mem.stats()
    assert (stats.sessions, stats.active_sessions, stats.session_turns, stats.promoted_turns) == (2, 1, 3, 1)
    clock.advance(minutes=65)  # t1's session ended 70 minutes ago: its turns are forgotten; t2's ended 50 ago
    report = sm.cleanup()
    assert report.ended == [busy] and report.purged_turns == 2
    assert sm.get_session_context(old, include_expired=True) == []
    assert [t.session_id for t in sm.get_all_recent_context(hours_back=10)] == [busy]
    # a forgotten turn's source is still known: recording it again records nothing
    assert sm.known_sources(["src-1", "src-2", "src-3"]) == {"src-1", "src-2"}
    assert sm.add_turn(FACT, "", thread_id="t1", source="src-1") == old
    stats = mem.stats()
    assert (stats.sessions, stats.active_sessions, stats.session_turns, stats.promoted_turns) == (2, 0, 3, 2)
    assert mem.store.items.count("memories") == 2  # memories outlive the turns


def test_sessions_survive_reopening(data_dir: Path, clock: Clock) -> None:
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        sm = sessions_for(mem, clock)
        sid = sm.add_turn(FACT, "", thread_id="t1", source="s1")
        clock.advance(minutes=5)
        sm.add_turn(CHATTER, "", thread_id="t1")
    clock.advance(minutes=5)
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        sm = sessions_for(mem, clock)
        assert sm.current_session("t1").id == sid  # type: ignore[union-attr]
        assert sm.add_turn("rates: still here", "", thread_id="t1") == sid
        assert [t.user for t in sm.get_session_context(thread_id="t1")] == [FACT, CHATTER, "rates: still here"]
        assert sm.add_turn(FACT, "", thread_id="t1", source="s1") == sid  # the source is remembered
        assert len(sm.promote_to_longterm(sid)) == 1
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        assert mem.sessions.session(sid).state == "promoted" and mem.stats().promoted_turns == 1


def test_memory_sessions_use_the_scope(data_dir: Path) -> None:
    with Memory.open(
        data_dir, embeddings=TopicEmbeddings(), scope="desk-1", session_config=SessionConfig(promotion_threshold=0.0)
    ) as mem:
        sid = mem.sessions.add_turn("rates: anything", "")
        (turn,) = mem.sessions.promote_to_longterm(sid)
        assert mem.sessions.namespace == ("episodes", "desk-1")
        assert mem.store.get(("episodes", "desk-1"), turn.memory_key) is not None  # type: ignore[arg-type]
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as other:
        with pytest.raises(NotFoundError):
            other.sessions.session(sid)  # another namespace's session


def test_promoted_memories_outlive_their_pruned_thread(mem: Memory) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict):
        n: int

    builder = StateGraph(S)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    mem.compile(builder).invoke({"n": 0}, {"configurable": {"thread_id": "t1"}})
    sid = mem.sessions.add_turn(FACT, "", thread_id="t1")
    (turn,) = mem.sessions.promote_to_longterm(sid)
    assert mem.lineage(turn.memory_key).ancestors[0].storage == "live"  # type: ignore[arg-type]
    archiver = Archiver(mem.store, checkpointer=mem.checkpointer, thread_strategy="delete", thread_after_days=1)
    report = archiver.run(now=time.time() + 3 * 86400)
    archiver.close()
    assert report.threads == ["t1"] and mem.checkpointer.list_threads() == []
    assert mem.store.get(("episodes",), turn.memory_key) is not None  # type: ignore[arg-type]
    lin = mem.lineage(turn.memory_key)  # type: ignore[arg-type]
    assert lin.ancestor_ids == [thread_node_id("t1"), sid] and lin.ancestors[0].storage == "unknown"


@pytest.mark.sqlite_only("migrates a version-5 SQLite catalog file")
def test_a_version_5_catalog_gets_the_session_tables(data_dir: Path) -> None:
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        mem.store.put(("memories",), "k", {"text": "kept"})
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.executescript("DROP TABLE session_turns; DROP TABLE sessions; PRAGMA user_version = 5;")
    conn.close()
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        assert mem.sessions.add_turn("rates", "ok")
        assert mem.store.get(("memories",), "k") is not None
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


# -------------------------------------------------------------------- async


async def test_async_twins(mem: Memory, clock: Clock) -> None:
    sm = sessions_for(mem, clock)
    sid = await sm.aadd_turn(FACT, "Noted.", thread_id="t1")
    clock.advance(minutes=1)
    assert await sm.aadd_turn(CHATTER, "", thread_id="t1") == sid
    assert [t.index for t in await sm.aget_session_context(thread_id="t1")] == [0, 1]
    assert len(await sm.aget_all_recent_context()) == 2
    assert (await sm.acurrent_session("t1")).id == sid  # type: ignore[union-attr]
    clock.advance(hours=1)
    report = await sm.acleanup()
    assert report.promoted_sessions == [sid] and report.promoted_turns == 1
    assert (await sm.asession(sid)).state == "promoted"
    assert await sm.apromote_to_longterm() == []
    got = await asyncio.gather(*(sm.aadd_turn(f"crypto {i}", "", thread_id=f"x{i}") for i in range(4)))
    assert len(set(got)) == 4


# ---------------------------------------------------------------- scheduler


def test_the_scheduled_cleanup_job_fires_and_shares_the_archive_scheduler(mem: Memory, clock: Clock) -> None:
    from apscheduler.schedulers.background import BackgroundScheduler

    from langgraph_memory.archive import schedule_session_cleanup

    sm = sessions_for(mem, clock)
    sid = sm.add_turn(FACT, "Noted.", thread_id="t1")
    clock.advance(minutes=31)  # its time is up: the next cleanup ends and promotes it
    scheduler = BackgroundScheduler()
    job = schedule_session_cleanup(sm, interval=0.2, scheduler=scheduler, start=True)
    try:
        assert job.trigger.interval.total_seconds() == pytest.approx(0.2)
        deadline = time.monotonic() + 30
        while sm.session(sid).state != "promoted" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sm.session(sid).state == "promoted" and sm.session(sid).end_reason == "inactivity"
    finally:
        scheduler.shutdown(wait=True)
    # Memory runs the cleanup every 15 minutes by default, on the archive job's scheduler.
    archive_job = mem.schedule_archival(cron="0 3 * * *")
    cleanup_job = mem.schedule_session_cleanup()
    assert cleanup_job._scheduler is archive_job._scheduler and cleanup_job._scheduler.running
    assert cleanup_job.trigger.interval.total_seconds() == 15 * 60
