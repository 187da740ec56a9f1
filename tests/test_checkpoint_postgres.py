"""PostgresCheckpointer on a real PostgreSQL server: the checkpointer suite, run on the second backend.

The backend-neutral tests of ``test_checkpoint.py`` and
``test_checkpoint_graphs.py`` are imported below, so pytest runs them here
against a ``saver`` fixture that is a ``PostgresCheckpointer`` (their SQLite
runs stay in their own modules). Not imported, and why:

* tests that open the SQLite file with ``sqlite3`` to look at rows, WAL,
  pragmas or file locks (``test_file_is_wal_with_schema_version``,
  ``test_lock_held_elsewhere_raises_lock_timeout``, the write-group and
  loop-write tests): they test SQLite mechanics. Where the behaviour has a
  PostgreSQL meaning it has its own test in this module (rows after
  delete/prune, JSON metadata, inactivity, the loop never blocked while the
  server makes a write wait, the schema version).
* ``test_sync_methods_meet_conformance_spec``: subclasses SqliteCheckpointer;
  ``test_checkpoint_conformance.py`` runs the same sync specs on PostgreSQL.
* data-directory and path tests (``test_default_path_...``,
  ``test_rejects_in_memory_paths``...): PostgreSQL has no file.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from langgraph_memory.checkpoint.postgres import SCHEMA_VERSION, PostgresCheckpointer
from langgraph_memory.errors import CheckpointError, ConfigError
from tests.test_checkpoint import _put
from tests.test_checkpoint_graphs import _chat_graph

# The tests both checkpointers share run on each (any_saver) in tests/test_checkpoint*.py; these are
# PostgreSQL's own. No catalog here, so the PostgreSQL-catalog run skips them.
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


@pytest.fixture
def saver(pg_database: str) -> Iterator[PostgresCheckpointer]:
    with PostgresCheckpointer(pg_database, timeout=30) as s:
        s.setup()
        yield s


def _count(url: str, sql: str, *params: Any) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0


# -- rows, retention, schema --------------------------------------------------------

_S = '"langgraph_memory"'


def test_delete_thread_removes_its_rows(saver: PostgresCheckpointer, pg_database: str) -> None:
    a = _put(saver, "a", values={"v": 1})
    saver.put_writes(a, [("x", 1)], "task")
    _put(saver, "a", ns="child:1")
    _put(saver, "b")
    saver.delete_thread("a")
    assert list(saver.list(generate_config("a"))) == []
    assert len(list(saver.list(generate_config("b")))) == 1
    for table in ("checkpoints", "writes", "blobs"):
        assert _count(pg_database, f"SELECT count(*) FROM {_S}.{table} WHERE thread_id = 'a'") == 0


def test_prune_keep_latest_drops_old_writes_and_orphans(saver: PostgresCheckpointer, pg_database: str) -> None:
    first = _put(saver, "t")
    saver.put_writes(first, [("x", 1)], "task")
    orphan = generate_config("t", checkpoint_id="never-stored")
    saver.put_writes(orphan, [("x", 2)], "task")
    last = _put(saver, "t", parent=first)
    saver.prune(["t"])
    ids = [c.config["configurable"]["checkpoint_id"] for c in saver.list(generate_config("t"))]
    assert ids == [last["configurable"]["checkpoint_id"]]
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.writes") == 0
    with pytest.raises(ConfigError):
        saver.prune(["t"], strategy="keep_some")


def test_list_threads_and_prune_inactive(saver: PostgresCheckpointer, pg_database: str) -> None:
    for thread_id in ("old", "new"):
        parent = None
        for step in range(3):
            parent = _put(saver, thread_id, parent=parent, step=step)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"UPDATE {_S}.checkpoints SET created_at = created_at - 86400 * 10 WHERE thread_id = 'old'")
    infos = {info.thread_id: info for info in saver.list_threads()}
    assert set(infos) == {"old", "new"} and infos["old"].checkpoints == 3
    assert [i.thread_id for i in saver.list_threads()] == ["new", "old"]
    assert saver.prune_inactive(timedelta(days=5)) == ["old"]
    assert len(list(saver.list(generate_config("old")))) == 1
    assert len(list(saver.list(generate_config("new")))) == 3
    assert saver.prune_inactive(timedelta(days=5), strategy="delete") == ["old"]
    assert list(saver.list(generate_config("old"))) == []


async def test_async_retention_runs_on_the_async_driver(saver: PostgresCheckpointer) -> None:
    parent = None
    for step in range(4):
        parent = await saver.aput(
            generate_config("t", checkpoint_id=parent["configurable"]["checkpoint_id"] if parent else None),
            generate_checkpoint(),
            generate_metadata(step=step),
            {},
        )
    assert [i.thread_id for i in await saver.alist_threads()] == ["t"]
    await saver.aprune(["t"])
    assert len([c async for c in saver.alist(generate_config("t"))]) == 1
    assert await saver.aprune_inactive(timedelta(0), strategy="delete") == ["t"]
    assert await saver.aget_tuple(generate_config("t")) is None


def test_prune_keep_latest_keeps_delta_state(saver: PostgresCheckpointer, pg_database: str) -> None:
    from tests.test_checkpoint import _delta_graph

    graph = _delta_graph(saver)
    config: Any = {"configurable": {"thread_id": "d"}}
    graph.invoke({"log": ["start"], "total": 0}, config)
    before = graph.get_state(config).values
    latest = saver.get_tuple(config)
    assert latest is not None and "log" not in latest.checkpoint["channel_values"]
    count_before = len(list(saver.list(config)))
    saver.prune(["d"], strategy="keep_latest")
    assert len(list(saver.list(config))) == 1
    assert graph.get_state(config).values == before
    hidden = _count(pg_database, f"SELECT count(*) FROM {_S}.checkpoints WHERE hidden = 1")
    assert 0 < hidden < count_before - 1, "only the ancestors back to the snapshot are kept"
    graph.invoke({"log": ["again"], "total": -5}, config)
    assert graph.get_state(config).values["log"][: len(before["log"]) + 1] == [*before["log"], "again"]


async def test_delta_history_async_matches_sync(saver: PostgresCheckpointer) -> None:
    from tests.test_checkpoint import _delta_graph

    graph = _delta_graph(saver)
    config: Any = {"configurable": {"thread_id": "d"}}
    await graph.ainvoke({"log": ["start"], "total": 0}, config)
    sync = saver.get_delta_channel_history(config=config, channels=["log"])
    assert await saver.aget_delta_channel_history(config=config, channels=["log"]) == sync
    assert len(sync["log"]["writes"]) > 0


def test_delete_for_runs_keeps_what_later_runs_need(saver: PostgresCheckpointer, pg_database: str) -> None:
    import uuid

    from tests.test_checkpoint import _delta_graph

    graph = _delta_graph(saver)
    config: Any = {"configurable": {"thread_id": "d"}}
    first_run, second_run = str(uuid.uuid4()), str(uuid.uuid4())
    graph.invoke({"log": ["start"], "total": 5}, {"configurable": {"thread_id": "d", "run_id": first_run}})
    graph.invoke({"log": ["more"], "total": -2}, {"configurable": {"thread_id": "d", "run_id": second_run}})
    before = graph.get_state(config).values
    saver.delete_for_runs([first_run])
    assert {t.metadata.get("run_id") for t in saver.list(config)} == {second_run}
    assert graph.get_state(config).values == before
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.checkpoints WHERE hidden = 1") > 0
    saver.delete_for_runs([second_run])
    assert list(saver.list(config)) == []
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.checkpoints") == 0


def test_metadata_is_jsonb_and_filterable(saver: PostgresCheckpointer, pg_database: str) -> None:
    _put(saver, "t", tags={"a": [1, 2]}, flag=True)
    _put(saver, "u", tags={"a": [3]}, flag=False)
    with psycopg.connect(pg_database) as conn:
        (raw,) = conn.execute(f"SELECT metadata FROM {_S}.checkpoints WHERE thread_id = 't'").fetchone()
    assert raw["tags"] == {"a": [1, 2]}
    assert len(list(saver.list(None, filter={"tags": {"a": [1, 2]}, "flag": True}))) == 1
    assert len(list(saver.list(None, filter={"flag": False}))) == 1


def test_put_stores_only_new_versions(saver: PostgresCheckpointer, pg_database: str) -> None:
    """Unchanged channels are not written again: blobs grow by the changed channels only.

    Small scalars (``n``) stay in the checkpoint row and never become blobs.
    """
    config = generate_config("t")
    big = {"a": "x" * 1000, "b": ["y"] * 100}
    checkpoint = generate_checkpoint(channel_values={**big, "n": 1}, channel_versions={"a": 1, "b": 1, "n": 1})
    first = saver.put(config, checkpoint, generate_metadata(), {"a": 1, "b": 1, "n": 1})
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.blobs") == 2
    values = {"a": "x" * 1000, "b": ["z"] * 100, "n": 2}
    second = generate_checkpoint(channel_values=values, channel_versions={"a": 1, "b": 2, "n": 2})
    saver.put(first, second, generate_metadata(), {"b": 2, "n": 2})
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.blobs") == 3
    latest = saver.get_tuple(config)
    assert latest is not None and latest.checkpoint["channel_values"] == values
    previous = saver.get_tuple(first)
    assert previous is not None and previous.checkpoint["channel_values"] == {**big, "n": 1}


def test_schema_is_versioned_and_refuses_a_newer_one(saver: PostgresCheckpointer, pg_database: str) -> None:
    assert saver.schema_version() == SCHEMA_VERSION
    saver.setup()  # idempotent
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.schema_version") == SCHEMA_VERSION
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {_S}.schema_version VALUES (%s)", (SCHEMA_VERSION + 1,))
    with PostgresCheckpointer(pg_database) as newer, pytest.raises(CheckpointError, match="newer"):
        newer.setup()


def test_own_schema_beside_other_tables(pg_database: str) -> None:
    """Two schemas in one database are two independent checkpoint stores."""
    with (
        PostgresCheckpointer(pg_database, schema="tenant_a") as a,
        PostgresCheckpointer(pg_database, schema="tenant_b") as b,
    ):
        _put(a, "t")
        assert b.get_tuple(generate_config("t")) is None
        assert a.get_tuple(generate_config("t")) is not None
    with pytest.raises(ConfigError):
        PostgresCheckpointer(pg_database, schema="Robert'); DROP TABLE x;--")


# -- connections of the caller --------------------------------------------------------


def test_caller_connection_and_pool(pg_database: str) -> None:
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    # A connection made for LangGraph's PostgresSaver (dict rows) works unchanged.
    with psycopg.connect(pg_database, autocommit=True, row_factory=dict_row) as conn:
        saver = PostgresCheckpointer(conn)
        saver.setup()
        graph = _chat_graph(saver)
        config: Any = {"configurable": {"thread_id": "c"}}
        assert graph.invoke({"messages": [HumanMessage("hi")]}, config)["turns"] == 1
        saver.close()
        assert not conn.closed, "a caller's connection stays open"
    with psycopg.connect(pg_database) as conn:  # not autocommit: each call is its own transaction
        saver = PostgresCheckpointer(conn)
        assert _chat_graph(saver).invoke({"messages": [HumanMessage("again")]}, config)["turns"] == 2
    with ConnectionPool(pg_database, kwargs={"autocommit": True}, open=True) as pool:
        saver = PostgresCheckpointer(pool)
        assert _chat_graph(saver).invoke({"messages": [HumanMessage("pool")]}, config)["turns"] == 3
        saver.close()
        assert not pool.closed


async def test_caller_async_connection_and_pool(pg_database: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    config: Any = {"configurable": {"thread_id": "c"}}
    async with await psycopg.AsyncConnection.connect(pg_database, autocommit=True) as conn:
        saver = PostgresCheckpointer(conn)
        await saver.asetup()
        graph = _chat_graph(saver)
        assert (await graph.ainvoke({"messages": [HumanMessage("hi")]}, config))["turns"] == 1
        await saver.aprune(["c"])  # retention through the caller's async connection
    async with AsyncConnectionPool(pg_database, kwargs={"autocommit": True}, open=False) as pool:
        saver = PostgresCheckpointer(pool)
        assert (await _chat_graph(saver).ainvoke({"messages": [HumanMessage("x")]}, config))["turns"] == 2
        with pytest.raises(ConfigError):
            saver.get_tuple(config)  # an async pool serves the async methods only


# -- the event loop ---------------------------------------------------------------


async def test_async_calls_do_not_block_the_event_loop(saver: PostgresCheckpointer, pg_database: str) -> None:
    """While the server makes a write wait (a table lock elsewhere), the loop keeps running."""
    graph = _chat_graph(saver)
    await graph.ainvoke({"messages": [HumanMessage("warm")]}, {"configurable": {"thread_id": "w"}})
    blocker = await psycopg.AsyncConnection.connect(pg_database)
    await blocker.execute(f"LOCK TABLE {_S}.checkpoints IN ACCESS EXCLUSIVE MODE")
    run = asyncio.create_task(graph.ainvoke({"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "b"}}))
    ticks = 0
    while ticks < 20:  # the loop keeps running while the call waits for the lock
        await asyncio.sleep(0.01)
        ticks += 1
    assert not run.done()
    await blocker.rollback()
    await blocker.close()
    assert (await run)["turns"] == 1


# -- several processes on one database ------------------------------------------------

_REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
_WORKER = _REPO / "bench" / "common" / "pg_checkpoint_worker.py"


def _spawn(*args: str) -> Any:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, str(_WORKER), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_setup_from_four_processes_at_once(pg_database: str, tmp_path: Any) -> None:
    """Concurrent first setups: one migrates, the others wait for its lock and find nothing to do."""
    go = tmp_path / "go"
    procs = [_spawn("setup", pg_database, str(go)) for _ in range(4)]
    go.touch()
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err[-2000:] for _out, err in outputs]
    assert all(out.strip() == f"ready {SCHEMA_VERSION}" for out, _err in outputs)
    assert _count(pg_database, f"SELECT count(*) FROM {_S}.schema_version") == SCHEMA_VERSION


def _assert_linear(url: str, thread_id: str) -> int:
    """Every checkpoint of the thread has a distinct parent and one chain links them all; return its length."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT checkpoint_id, parent_checkpoint_id FROM {_S}.checkpoints "
            "WHERE thread_id = %s AND checkpoint_ns = ''",
            (thread_id,),
        ).fetchall()
    parents = [parent for _cid, parent in rows]
    assert len(parents) == len(set(parents)), "two checkpoints share a parent: a forked history"
    by_id = dict(rows)
    head = max(by_id)
    chain = 0
    cursor: str | None = head
    while cursor is not None:
        chain += 1
        cursor = by_id[cursor]
    assert chain == len(rows), "a checkpoint is not on the head's chain"
    return chain


def test_two_processes_resuming_one_thread_never_fork_it(pg_database: str, tmp_path: Any) -> None:
    """Two real processes invoke the same thread at once: each write is a child of the head, or refused."""
    with PostgresCheckpointer(pg_database) as s:
        s.setup()
    go = tmp_path / "go"
    invokes = 15
    procs = [_spawn("race", pg_database, "shared", str(invokes), str(go)) for _ in range(2)]
    go.touch()
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-3000:] for _out, err in outputs]
    oks = sum(out.split().count("ok") for out, _err in outputs)
    assert oks == 2 * invokes
    length = _assert_linear(pg_database, "shared")
    # Each committed invoke wrote its input checkpoint and three steps.
    assert length >= 4 * oks


def test_stale_writer_in_one_process_gets_a_conflict(saver: PostgresCheckpointer) -> None:
    """Two readers of the same head: the first put wins, the second is refused, the thread stays linear."""
    from langgraph_memory.errors import CheckpointConflictError

    root = _put(saver, "t")
    seen_a = saver.get_tuple(generate_config("t"))
    seen_b = saver.get_tuple(generate_config("t"))
    assert seen_a is not None and seen_b is not None
    assert seen_a.config["configurable"]["checkpoint_id"] == root["configurable"]["checkpoint_id"]
    saver.put(seen_a.config, generate_checkpoint(), generate_metadata(), {})
    with pytest.raises(CheckpointConflictError, match="newer"):
        saver.put(seen_b.config, generate_checkpoint(), generate_metadata(), {})
    # A fork named by its checkpoint id (time travel) is the caller's intent and is stored.
    saver.put(root, generate_checkpoint(), generate_metadata(), {})
    assert len(list(saver.list(generate_config("t")))) == 3
    # Two first writes to a new thread: the second, stale one is refused too.
    assert saver.get_tuple(generate_config("new")) is None
    saver.put(generate_config("new"), generate_checkpoint(), generate_metadata(), {})
    other = PostgresCheckpointer(saver.database.conninfo or "")
    try:
        assert other.get_tuple(generate_config("fresh")) is None
        saver.put(generate_config("fresh"), generate_checkpoint(), generate_metadata(), {})
        with pytest.raises(CheckpointConflictError):
            other.put(generate_config("fresh"), generate_checkpoint(), generate_metadata(), {})
    finally:
        other.close()


# -- faults: the server crashes and comes back ------------------------------------------


def test_a_call_queued_on_a_replaced_pool_retries_on_the_new_one(pg_database: str) -> None:
    """Once the server is back the checkpointer swaps a pool stuck in psycopg_pool's backoff for a fresh one
    and closes the old: a call still queued on the old pool gets ``PoolClosed`` and must go to the new pool,
    not fail (the crash bench saw "could not save pending writes: the connection pool is closed")."""
    import threading
    import time

    saver = PostgresCheckpointer(pg_database, pool_size=1)
    try:
        saver.setup()
        old = saver.database._sync_pool()
        results: list[Any] = []

        def call() -> None:
            try:
                results.append(saver.get_tuple(generate_config("t")))
            except Exception as exc:
                results.append(exc)

        with old.connection():  # the pool's only connection is busy, so the call queues
            caller = threading.Thread(target=call)
            caller.start()
            deadline = time.monotonic() + 10
            while old.get_stats().get("requests_waiting", 0) < 1:
                assert time.monotonic() < deadline, "the call never queued"
                time.sleep(0.005)
            # What Database._server_is_back does once a direct connection succeeds.
            with saver.database._lock:
                saver.database._pool = None
            closing = threading.Thread(target=old.close)
            closing.start()
            caller.join(10)
        closing.join(10)
        assert results == [None]
    finally:
        saver.close()


def test_server_crash_gives_typed_errors_then_reconnects(pg_cluster: Any) -> None:
    """``pg_ctl stop -m immediate``: typed errors while down, no hang, acknowledged checkpoints kept."""
    from langgraph_memory.errors import CheckpointUnavailableError
    from tests.helpers.postgres import create_database

    url = create_database(pg_cluster.url)
    saver = PostgresCheckpointer(url, timeout=3)
    try:
        parent = None
        acked = []
        for step in range(5):
            parent = _put(saver, "t", parent=parent, step=step)
            acked.append(parent["configurable"]["checkpoint_id"])
        pg_cluster.crash()
        with pytest.raises(CheckpointUnavailableError, match="unreachable|no connection"):
            saver.get_tuple(generate_config("t"))
        with pytest.raises(CheckpointUnavailableError):
            _put(saver, "t", parent=parent)
        pg_cluster.start()  # returns once the server accepts connections
        latest = saver.get_tuple(generate_config("t"))  # the saver reconnects by itself
        assert latest is not None and latest.config["configurable"]["checkpoint_id"] == acked[-1]
        assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(generate_config("t"))] == acked[::-1]
        _put(saver, "t", parent=parent)
    finally:
        saver.close()


async def test_server_crash_async_path(pg_cluster: Any) -> None:
    """The same on the async driver, with a graph: the loop is never blocked by the outage."""
    from langgraph_memory.errors import CheckpointUnavailableError
    from tests.helpers.postgres import create_database

    url = await asyncio.to_thread(create_database, pg_cluster.url)
    saver = PostgresCheckpointer(url, timeout=3)
    try:
        graph = _chat_graph(saver)
        config: Any = {"configurable": {"thread_id": "a"}}
        assert (await graph.ainvoke({"messages": [HumanMessage("one")]}, config))["turns"] == 1
        await asyncio.to_thread(pg_cluster.crash)
        run = asyncio.create_task(graph.ainvoke({"messages": [HumanMessage("two")]}, config))
        ticks = 0
        while not run.done():  # the loop keeps running while the call retries
            await asyncio.sleep(0.01)
            ticks += 1
        with pytest.raises(CheckpointUnavailableError):
            await run
        assert ticks > 10
        await asyncio.to_thread(pg_cluster.start)
        state = await graph.aget_state(config)
        assert state.values["turns"] == 1
        assert (await graph.ainvoke({"messages": [HumanMessage("three")]}, config))["turns"] == 2
    finally:
        await saver.aclose()


_SILENT_SERVER_RUN = """
import asyncio, sys
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
from langgraph_memory.errors import CheckpointUnavailableError

async def main() -> None:
    saver = PostgresCheckpointer(sys.argv[1], timeout=1.5)
    try:
        await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    except CheckpointUnavailableError:
        print("typed error")

asyncio.run(main())  # never closes the saver: asyncio.run must still end
print("loop closed")
"""


def test_asyncio_run_ends_while_the_pool_is_still_connecting() -> None:
    """A server that accepts TCP but never answers keeps a pool connect in flight when ``asyncio.run`` ends.

    psycopg_pool's worker catches the shutdown's one cancellation and waits on
    its queue again; without the saver's guard the process never exits.
    """
    import socket
    import subprocess
    import sys

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # never accepts: the handshake gets no answer
        url = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/postgres"
        proc = subprocess.Popen(
            [sys.executable, "-c", _SILENT_SERVER_RUN, url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Generous: the child needs about 3 s; a hang never ends.
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("asyncio.run never returned: the pool's worker swallowed the loop's cancellation")
    assert proc.returncode == 0, err
    assert out.split() == ["typed", "error", "loop", "closed"]


# -- list() at scale stays an index scan ---------------------------------------------


def test_list_with_filter_and_before_is_an_index_scan(saver: PostgresCheckpointer, pg_database: str) -> None:
    """5,000 checkpoints in one thread among 500 threads: every plan reads an index, never the whole table.

    Without a filter the plan is an index scan in list order that stops at
    the limit. With a selective metadata filter PostgreSQL may prefer a
    bitmap scan of the same index bounded by the thread and ``before``.

    Rows are inserted with SQL (generate_series) to build the scale quickly;
    ``bench/checkpoint/checkpoint_bench.py`` measures list at 10,000 checkpoints per thread.
    """
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {_S}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, channel_versions, metadata, created_at) "
            "SELECT 'thread-' || (g % 500), '', lpad(g::text, 12, '0'), NULL, 'msgpack', '\\x80', '{}', "
            "jsonb_build_object('source', 'loop', 'step', g), extract(epoch from now()) "
            "FROM generate_series(1, 20000) g"
        )
        conn.execute(
            f"INSERT INTO {_S}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, channel_versions, metadata, created_at) "
            "SELECT 'big', '', lpad(g::text, 12, '0'), NULL, 'msgpack', '\\x80', '{}', "
            "jsonb_build_object('source', CASE WHEN g % 10 = 0 THEN 'input' ELSE 'loop' END, 'step', g), "
            "extract(epoch from now()) FROM generate_series(1, 5000) g"
        )
        conn.execute(f"ANALYZE {_S}.checkpoints")
    before = {"configurable": {"thread_id": "big", "checkpoint_id": f"{4000:012d}"}}
    cases = [
        ({"configurable": {"thread_id": "big", "checkpoint_ns": ""}}, None, before, 10),
        ({"configurable": {"thread_id": "big", "checkpoint_ns": ""}}, {"source": "input"}, before, 10),
        ({"configurable": {"thread_id": "big"}}, {"source": "input"}, before, 10),
        ({"configurable": {"thread_id": "big"}}, None, None, None),
    ]
    for config, filter, bef, limit in cases:
        plan = saver.explain_list(config, filter=filter, before=bef, limit=limit)
        first = plan.splitlines()
        scans = [line for line in first if " on checkpoints c" in line]
        assert scans and all("Index" in line or "Bitmap Heap" in line for line in scans), plan
        assert "Seq Scan" not in plan, plan
        if filter is None and limit is not None:
            assert "Index Scan Backward" in plan and "Sort" not in plan, plan
    listed = list(saver.list(cases[1][0], filter={"source": "input"}, before=before, limit=3))
    assert [t.config["configurable"]["checkpoint_id"] for t in listed] == [f"{n:012d}" for n in (3990, 3980, 3970)]


# -- moving threads in: from SQLite, from LangGraph's PostgresSaver ------------------------


def _approval_graph(saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    class ApprovalState(TypedDict):
        request: str
        approved: bool

    def ask(state: ApprovalState) -> dict[str, Any]:
        return {"approved": interrupt({"question": f"approve {state['request']}?"}) == "yes"}

    builder = StateGraph(ApprovalState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def test_copy_from_sqlite_keeps_every_thread_resumable(tmp_path: Any, pg_database: str) -> None:
    from langgraph.types import Command

    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.checkpoint.postgres import copy_from_sqlite
    from tests.test_checkpoint import _delta_graph

    path = tmp_path / "checkpoints.sqlite"
    chat_config: Any = {"configurable": {"thread_id": "chat"}}
    with SqliteCheckpointer(path) as sqlite_saver:
        _chat_graph(sqlite_saver).invoke({"messages": [HumanMessage("one")]}, chat_config)
        _delta_graph(sqlite_saver).invoke({"log": ["start"], "total": 0}, {"configurable": {"thread_id": "d"}})
        sqlite_saver.prune(["d"])  # leaves hidden rows that the delta state needs
        _approval_graph(sqlite_saver).invoke(
            {"request": "deploy", "approved": False}, {"configurable": {"thread_id": "ask"}}
        )
        expected = {t: _delta_graph(sqlite_saver).get_state({"configurable": {"thread_id": t}}).values for t in ("d",)}
        counts = {t.thread_id: t.checkpoints for t in sqlite_saver.list_threads()}

    report = copy_from_sqlite(tmp_path, pg_database)
    assert report.threads == 3 and report.checkpoints > 0 and report.writes > 0
    assert copy_from_sqlite(path, pg_database) == report  # again: harmless, still verified

    with PostgresCheckpointer(pg_database) as saver:
        assert {t.thread_id: t.checkpoints for t in saver.list_threads()} == counts
        assert _delta_graph(saver).get_state({"configurable": {"thread_id": "d"}}).values == expected["d"]
        assert _chat_graph(saver).invoke({"messages": [HumanMessage("two")]}, chat_config)["turns"] == 2
        final = _approval_graph(saver).invoke(Command(resume="yes"), {"configurable": {"thread_id": "ask"}})
        assert final == {"request": "deploy", "approved": True}


def test_import_from_postgres_saver_then_resume(pg_database: str) -> None:
    """Threads written by LangGraph's PostgresSaver are imported and resume on PostgresCheckpointer."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.types import Command

    from langgraph_memory.checkpoint.postgres import import_from_postgres_saver

    chat_config: Any = {"configurable": {"thread_id": "chat"}}
    ask_config: Any = {"configurable": {"thread_id": "ask"}}
    with PostgresSaver.from_conn_string(pg_database) as theirs:
        theirs.setup()
        chat = _chat_graph(theirs)
        chat.invoke({"messages": [HumanMessage("one")]}, chat_config)
        chat.invoke({"messages": [HumanMessage("two")]}, chat_config)
        _approval_graph(theirs).invoke({"request": "deploy", "approved": False}, ask_config)
        before = chat.get_state(chat_config)
        history = [h.config["configurable"]["checkpoint_id"] for h in chat.get_state_history(chat_config)]

    report = import_from_postgres_saver(pg_database, pg_database)
    assert report.threads == 2 and report.checkpoints == len(history) + 2

    with PostgresCheckpointer(pg_database) as saver:
        graph = _chat_graph(saver)
        assert graph.get_state(chat_config).values == before.values
        assert [h.config["configurable"]["checkpoint_id"] for h in graph.get_state_history(chat_config)] == history
        assert graph.invoke({"messages": [HumanMessage("three")]}, chat_config)["turns"] == 3
        approval = _approval_graph(saver)
        assert approval.get_state(ask_config).next == ("ask",)
        assert approval.invoke(Command(resume="yes"), ask_config) == {"request": "deploy", "approved": True}


def test_cli_checkpoints_migrate(tmp_path: Any, pg_database: str, capsys: Any) -> None:
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.cli import main

    with SqliteCheckpointer(tmp_path / "checkpoints.sqlite") as sqlite_saver:
        for thread in ("a", "b"):
            _chat_graph(sqlite_saver).invoke(
                {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": thread}}
            )
    assert main(["checkpoints", "migrate", str(tmp_path), pg_database, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["threads"] == 2 and report["verified"] is True and report["source"] == "SQLite"
    assert main(["checkpoints", "migrate", str(tmp_path / "nothing-here"), pg_database]) == 2
    assert main(["checkpoints", "migrate", str(tmp_path), str(tmp_path)]) == 2


# -- crash drills (short versions of bench/faults/checkpoint_pg_crash_bench.py) --------------------


def test_sigkilled_workers_lose_no_acknowledged_checkpoint(pg_database: str, tmp_path: Any) -> None:
    """A worker SIGKILLed mid-invoke 3 times: every acknowledged checkpoint is stored, every thread resumes."""
    from bench.common.pg_crash import kill_drill

    with PostgresCheckpointer(pg_database) as s:
        s.setup()
    result = kill_drill(pg_database, tmp_path, kills=3, threads=3)
    assert result.acknowledged > 0 and result.lost == 0
    assert result.untyped_errors == []
    assert result.resumed == 3


def test_server_stopped_under_four_writers(pg_cluster: Any, tmp_path: Any) -> None:
    """``pg_ctl stop -m immediate`` under 4 writing processes: typed errors only, nothing lost, all recover."""
    from bench.common.pg_crash import server_drill
    from tests.helpers.postgres import create_database

    url = create_database(pg_cluster.url)
    with PostgresCheckpointer(url) as s:
        s.setup()
    # The outage outlasts the workers' timeout, so they must see the typed error.
    result = server_drill(url, pg_cluster, tmp_path, stops=1, workers=4, down_s=4.0, timeout=2.0)
    assert result.untyped_errors == []
    assert result.down_errors > 0
    assert result.lost == 0 and result.acknowledged > 0
    assert len(result.recovery_s) == 4  # every worker acknowledged again after the restart
    assert result.resumed == 8


async def test_async_path_passes_blockbuster(pg_database: str) -> None:
    """Under blockbuster (as ``langgraph dev`` runs graphs) no call of the async path blocks the loop.

    Covers opening the pool, setup, graph runs, reads, retention (on a worker
    thread, its SQL on the loop) and closing.
    """
    from blockbuster import blockbuster_ctx

    config: Any = {"configurable": {"thread_id": "bb"}}
    with blockbuster_ctx():
        saver = PostgresCheckpointer(pg_database)
        graph = _chat_graph(saver)
        assert (await graph.ainvoke({"messages": [HumanMessage("one")]}, config))["turns"] == 1
        assert (await graph.ainvoke({"messages": [HumanMessage("two")]}, config))["turns"] == 2
        assert len([h async for h in graph.aget_state_history(config)]) > 2
        await saver.aprune(["bb"])
        assert [t.thread_id for t in await saver.alist_threads()] == ["bb"]
        await saver.aclose()
