"""Thread retention against the real checkpointer, and the job on real APScheduler schedulers."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, timedelta

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.background import BackgroundScheduler
from langgraph.graph import StateGraph

from langgraph_memory.archive import Archiver, ThreadPruner, schedule_archival
from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.errors import ConfigError
from tests.helpers.archive_data import DAY, make_lessons


def _graph(saver):
    builder = StateGraph(int)
    builder.add_node("add_one", lambda x: x + 1)
    builder.set_entry_point("add_one")
    builder.set_finish_point("add_one")
    return builder.compile(checkpointer=saver)


@pytest.fixture
def saver(data_dir):
    s = SqliteCheckpointer(data_dir=data_dir)
    graph = _graph(s)
    for _ in range(3):
        graph.invoke(1, {"configurable": {"thread_id": "busy"}})
    graph.invoke(5, {"configurable": {"thread_id": "short"}})
    yield s
    s.close()


def _checkpoints(saver) -> dict[str, int]:
    return {t.thread_id: t.checkpoints for t in saver.list_threads()}


def test_real_checkpointer_satisfies_the_protocol(saver):
    assert isinstance(saver, ThreadPruner)


def test_idle_threads_are_pruned_to_their_latest_checkpoint(store, saver):
    before = _checkpoints(saver)
    assert before["busy"] > 1
    archiver = Archiver(store, checkpointer=saver)
    # active threads are left alone
    assert archiver.run().threads == []
    assert _checkpoints(saver) == before
    later = time.time() + 100 * DAY
    dry = archiver.run(now=later, dry_run=True)
    assert sorted(dry.threads) == ["busy", "short"] and _checkpoints(saver) == before
    report = archiver.run(now=later)
    assert sorted(report.threads) == ["busy", "short"] and report.thread_strategy == "keep_latest"
    assert _checkpoints(saver) == {"busy": 1, "short": 1}
    graph = _graph(saver)
    assert graph.get_state({"configurable": {"thread_id": "busy"}}).values == 2
    assert graph.get_state({"configurable": {"thread_id": "short"}}).values == 6
    archiver.close()


def test_idle_threads_can_be_archived_then_deleted(store, saver):
    archiver = Archiver(store, checkpointer=saver, thread_strategy="archive", thread_after_days=1)
    n_checkpoints = sum(_checkpoints(saver).values())
    report = archiver.run(now=time.time() + 2 * DAY)
    assert sorted(report.threads) == ["busy", "short"]
    assert saver.list_threads() == []
    (f,) = archiver.list_archives()
    assert f.kind == "threads" and f.state == "complete" and f.items == n_checkpoints
    assert archiver.verify() == {f.name: None}
    archiver.close()


def test_thread_retention_against_the_protocol_only(store):
    class FakeSaver:
        def __init__(self) -> None:
            self.calls: list[tuple[timedelta, str]] = []

        def list_threads(self):
            from datetime import datetime
            from types import SimpleNamespace

            old = datetime.fromtimestamp(time.time() - 10 * DAY, tz=UTC)
            return [
                SimpleNamespace(thread_id="t-old", last_activity=old),
                SimpleNamespace(thread_id="t-new", last_activity=time.time()),
            ]

        def prune_inactive(self, older_than, *, strategy="keep_latest"):
            self.calls.append((older_than, strategy))
            return ["t-old"]

    fake = FakeSaver()
    archiver = Archiver(store, checkpointer=fake, thread_after_days=5, thread_strategy="delete")
    assert archiver.run(dry_run=True).threads == ["t-old"] and fake.calls == []
    assert archiver.run().threads == ["t-old"]
    (older_than, strategy) = fake.calls[0]
    assert strategy == "delete" and abs(older_than.total_seconds() - 5 * DAY) < 60
    archiver.close()


def test_background_scheduler_really_fires_the_job(store, fake_embeddings):
    make_lessons(store, fake_embeddings, 15)
    archiver = Archiver(store)
    scheduler = BackgroundScheduler()
    job = schedule_archival(archiver, interval=0.3, scheduler=scheduler, start=True)
    try:
        assert job.max_instances == 1 and job.coalesce is True and job.misfire_grace_time == 3600
        deadline = time.monotonic() + 30
        while store.items.count("lessons") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.items.count("lessons") == 0
        # several firings, but the items were archived once
        deadline = time.monotonic() + 30
        while len(archiver.manifest.query("SELECT run_id FROM runs")) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        scheduler.shutdown(wait=True)
    assert len(archiver.manifest.query("SELECT run_id FROM runs")) >= 3
    assert archiver.count_archived() == 15 and len(archiver.list_archives()) == 1
    archiver.close()


def test_own_scheduler_is_made_and_started_and_cron_is_accepted(store):
    archiver = Archiver(store)
    job = schedule_archival(archiver, cron="30 2 * * *")
    try:
        assert isinstance(job._scheduler, BackgroundScheduler) and job._scheduler.running
        assert job.next_run_time.hour == 2 and job.next_run_time.minute == 30
        again = schedule_archival(archiver, interval=timedelta(hours=1), scheduler=job._scheduler)
        assert len(job._scheduler.get_jobs()) == 1 and again.id == job.id  # replaced, not doubled
    finally:
        job._scheduler.shutdown(wait=False)
    with pytest.raises(ConfigError):
        schedule_archival(archiver, cron="not a cron", scheduler=BackgroundScheduler())
    with pytest.raises(ConfigError):
        schedule_archival(archiver, cron="* * * * *", interval=5, scheduler=BackgroundScheduler())
    archiver.close()


async def test_asyncio_scheduler_in_an_event_loop(store, fake_embeddings):
    make_lessons(store, fake_embeddings, 5)
    archiver = Archiver(store)
    job = schedule_archival(archiver, interval=0.3)
    scheduler = job._scheduler
    try:
        assert isinstance(scheduler, AsyncIOScheduler) and scheduler.running
        deadline = time.monotonic() + 30
        while store.items.count("lessons") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        scheduler.shutdown(wait=False)
    assert store.items.count("lessons") == 0 and archiver.count_archived() == 5
    archiver.close()
