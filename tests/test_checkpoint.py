"""SqliteCheckpointer: sync methods, maintenance, DeltaChannel safety, schema, locking."""

from __future__ import annotations

import json
import operator
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.conformance.spec import (
    run_copy_thread_tests,
    run_delete_for_runs_tests,
    run_delete_thread_tests,
    run_get_tuple_tests,
    run_list_tests,
    run_prune_tests,
    run_put_tests,
    run_put_writes_tests,
)
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_memory.checkpoint import SCHEMA_VERSION, SqliteCheckpointer
from langgraph_memory.config import DATA_DIR_ENV
from langgraph_memory.errors import (
    CheckpointError,
    ConfigError,
    FilterError,
    LockTimeoutError,
)

# No catalog here: the checkpointers run in the SQLite-catalog run (PostgreSQL's too, on the session's server).
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteCheckpointer]:
    with SqliteCheckpointer(tmp_path / "cp.sqlite") as s:
        yield s


def _put(
    saver: SqliteCheckpointer,
    thread_id: str,
    *,
    parent: RunnableConfig | None = None,
    ns: str = "",
    values: dict[str, Any] | None = None,
    **metadata: Any,
) -> RunnableConfig:
    config = generate_config(thread_id, checkpoint_ns=ns)
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    values = values or {}
    checkpoint = generate_checkpoint(channel_values=values, channel_versions={k: 1 for k in values})
    return saver.put(config, checkpoint, generate_metadata(**metadata), {k: 1 for k in values})


def _ids(tuples: Sequence[CheckpointTuple]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


# -- the conformance expectations, through the sync methods --------------------


class _SyncDriven(SqliteCheckpointer):
    """Async methods that call the sync ones inline: the spec then tests sync code."""

    async def aget_tuple(self, config):  # type: ignore[no-untyped-def]
        return self.get_tuple(config)

    async def alist(self, config, *, filter=None, before=None, limit=None):  # type: ignore[no-untyped-def]
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id, task_path=""):  # type: ignore[no-untyped-def]
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id):  # type: ignore[no-untyped-def]
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids):  # type: ignore[no-untyped-def]
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id, target_thread_id):  # type: ignore[no-untyped-def]
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids, *, strategy="keep_latest"):  # type: ignore[no-untyped-def]
        self.prune(thread_ids, strategy=strategy)


@pytest.mark.parametrize(
    "runner",
    [
        run_put_tests,
        run_put_writes_tests,
        run_get_tuple_tests,
        run_list_tests,
        run_delete_thread_tests,
        run_delete_for_runs_tests,
        run_copy_thread_tests,
        run_prune_tests,
    ],
    ids=lambda r: r.__name__.removeprefix("run_").removesuffix("_tests"),
)
async def test_sync_methods_meet_conformance_spec(tmp_path: Path, runner: Any) -> None:
    with _SyncDriven(tmp_path / "sync.sqlite") as saver:
        passed, failed, failures = await runner(saver)
    assert failed == 0, failures
    assert passed > 0


# -- construction, files, schema ----------------------------------------------


def test_default_path_is_checkpoints_sqlite_in_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    with SqliteCheckpointer(data_dir=data_dir) as saver:
        assert saver.path == data_dir.resolve() / "checkpoints.sqlite"
        _put(saver, "t")
    assert (data_dir / "checkpoints.sqlite").is_file()


def test_data_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env-dir"))
    with SqliteCheckpointer.from_data_dir() as saver:
        assert saver.path == (tmp_path / "env-dir" / "checkpoints.sqlite").resolve()


def test_file_is_wal_with_schema_version(saver: SqliteCheckpointer) -> None:
    conn = sqlite3.connect(saver.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


def test_refuses_file_from_newer_release(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(CheckpointError, match="newer"):
        SqliteCheckpointer(path)


def test_reopen_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path) as saver:
        stored = _put(saver, "t", values={"a": [1, 2]})
    with SqliteCheckpointer(path) as saver:
        tup = saver.get_tuple(generate_config("t"))
        assert tup is not None
        assert tup.config == stored
        assert tup.checkpoint["channel_values"] == {"a": [1, 2]}


@pytest.mark.parametrize("bad", [":memory:", "file::memory:?cache=shared"])
def test_rejects_in_memory_paths(bad: str) -> None:
    with pytest.raises(ConfigError):
        SqliteCheckpointer(bad)


def test_rejects_bad_settings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SqliteCheckpointer(tmp_path / "a.sqlite", lock_timeout=0)
    with pytest.raises(ConfigError):
        SqliteCheckpointer(tmp_path / "b.sqlite", durability="sometimes")  # type: ignore[arg-type]


def test_closed_saver_raises_checkpoint_error(tmp_path: Path) -> None:
    saver = SqliteCheckpointer(tmp_path / "cp.sqlite")
    saver.close()
    with pytest.raises(CheckpointError, match="closed"):
        saver.get_tuple(generate_config("t"))


# -- reads and writes ------------------------------------------------------------


def test_list_filter_before_limit_newest_first(any_saver: Any) -> None:
    saver = any_saver
    parent = None
    stored = []
    for step in range(6):
        parent = _put(saver, "t", parent=parent, step=step, source="loop" if step else "input")
        stored.append(parent)
    all_ids = _ids(list(saver.list(generate_config("t"))))
    assert all_ids == _ids([]) + [c["configurable"]["checkpoint_id"] for c in reversed(stored)]
    assert _ids(list(saver.list(generate_config("t"), limit=2))) == all_ids[:2]
    assert _ids(list(saver.list(generate_config("t"), before=stored[3]))) == all_ids[3:]
    assert _ids(list(saver.list(generate_config("t"), before=stored[3], limit=1))) == all_ids[3:4]
    only_input = list(saver.list(generate_config("t"), filter={"source": "input"}))
    assert [t.metadata["step"] for t in only_input] == [0]
    assert list(saver.list(generate_config("t"), filter={"step": 99})) == []
    with pytest.raises(FilterError):
        list(saver.list(None, filter={"bad key')--": 1}))


def test_list_pages_through_long_threads(any_saver: Any) -> None:
    saver = any_saver
    parent = None
    for step in range(250):  # more than two internal pages
        parent = _put(saver, "t", parent=parent, step=step)
    steps = [t.metadata["step"] for t in saver.list(generate_config("t"))]
    assert steps == list(range(249, -1, -1))
    assert len(list(saver.list(None))) == 250
    assert [t.metadata["step"] for t in saver.list(None, limit=101)] == list(range(249, 148, -1))


def test_list_across_threads_with_shared_ids(any_saver: Any) -> None:
    saver = any_saver
    _put(saver, "a")
    saver.copy_thread("a", "b")  # same checkpoint id on two threads
    threads = sorted(t.config["configurable"]["thread_id"] for t in saver.list(None))
    assert threads == ["a", "b"]


def test_put_writes_idempotent_and_special_writes_replace(any_saver: Any) -> None:
    saver = any_saver
    stored = _put(saver, "t")
    saver.put_writes(stored, [("a", 1), ("b", 2)], "task-1", "path")
    saver.put_writes(stored, [("a", 100), ("b", 200)], "task-1", "path")  # a retry
    saver.put_writes(stored, [(ERROR, "first")], "task-2")
    saver.put_writes(stored, [(ERROR, "second")], "task-2")
    saver.put_writes(stored, [(INTERRUPT, "stop")], "task-3")
    tup = saver.get_tuple(stored)
    assert tup is not None and tup.pending_writes is not None
    writes = {(task, channel): value for task, channel, value in tup.pending_writes}
    assert writes == {
        ("task-1", "a"): 1,
        ("task-1", "b"): 2,
        ("task-2", ERROR): "second",
        ("task-3", INTERRUPT): "stop",
    }


def test_pending_writes_in_writes_sort_key_order(any_saver: Any) -> None:
    saver = any_saver
    stored = _put(saver, "t")
    saver.put_writes(stored, [("c", "z1")], "task-z", "~b")
    saver.put_writes(stored, [("c", "a1"), ("c", "a2")], "task-a", "~c")
    saver.put_writes(stored, [("c", "input")], "task-m", "")
    tup = saver.get_tuple(stored)
    assert tup is not None
    assert [w[2] for w in tup.pending_writes or []] == ["input", "z1", "a1", "a2"]


def test_metadata_from_config_is_stored(any_saver: Any) -> None:
    saver = any_saver
    config = generate_config("t")
    config["configurable"]["user"] = "ada"
    config["configurable"]["__secret"] = "no"
    saver.put(config, generate_checkpoint(), generate_metadata(), {})
    tup = saver.get_tuple(generate_config("t"))
    assert tup is not None
    assert tup.metadata["user"] == "ada"
    assert "__secret" not in tup.metadata
    assert [t.metadata["user"] for t in saver.list(None, filter={"user": "ada"})] == ["ada"]


def test_get_next_version_increases(any_saver: Any) -> None:
    saver = any_saver
    v1 = saver.get_next_version(None, None)
    v2 = saver.get_next_version(v1, None)
    assert v1 < v2 and v2.startswith("0" * 31 + "2.")
    assert saver.get_next_version(5, None).startswith("0" * 31 + "6.")  # type: ignore[arg-type]


def test_encrypting_serde_keeps_values_off_disk(tmp_path: Path) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    class Rot:
        def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
            return "rot", bytes((b + 1) % 256 for b in plaintext)

        def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
            return bytes((b - 1) % 256 for b in ciphertext)

    path = tmp_path / "enc.sqlite"
    with SqliteCheckpointer(path, serde=EncryptedSerializer(Rot())) as saver:
        stored = _put(saver, "t", values={"secret": "plaintext-marker"})
        saver.put_writes(stored, [("secret", "write-marker")], "task")
        tup = saver.get_tuple(stored)
        assert tup is not None and tup.checkpoint["channel_values"]["secret"] == "plaintext-marker"
    # After close the WAL is checkpointed into the main file.
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("enc.sqlite"))
    assert b"never-stored" not in raw  # sanity: the search does find plain text below
    assert b"plaintext" not in raw.replace(b"plaintext-marker", b"")
    assert b"plaintext-marker" not in raw and b"write-marker" not in raw


# -- maintenance ----------------------------------------------------------------


def test_delete_thread_only_that_thread(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    a = _put(saver, "a")
    saver.put_writes(a, [("x", 1)], "task")
    _put(saver, "a", ns="child:1")
    _put(saver, "b")
    saver.delete_thread("a")
    assert list(saver.list(generate_config("a"))) == []
    assert len(list(saver.list(generate_config("b")))) == 1
    conn = sqlite3.connect(saver.path)
    assert conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0] == 0
    conn.close()


def test_prune_keep_latest_drops_old_writes_and_orphans(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    first = _put(saver, "t")
    saver.put_writes(first, [("x", 1)], "task")
    orphan = generate_config("t", checkpoint_id="never-stored")
    saver.put_writes(orphan, [("x", 2)], "task")
    last = _put(saver, "t", parent=first)
    saver.prune(["t"])
    assert _ids(list(saver.list(generate_config("t")))) == [last["configurable"]["checkpoint_id"]]
    conn = sqlite3.connect(saver.path)
    assert conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0] == 0
    conn.close()
    with pytest.raises(ConfigError):
        saver.prune(["t"], strategy="keep_some")


def test_copy_thread_is_independent(any_saver: Any) -> None:
    saver = any_saver
    src = _put(saver, "src", values={"v": 1})
    saver.put_writes(src, [("v", 2)], "task")
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    tup = saver.get_tuple(generate_config("dst"))
    assert tup is not None
    assert tup.checkpoint["channel_values"] == {"v": 1}
    assert tup.pending_writes == [("task", "v", 2)]
    saver.copy_thread("dst", "dst")  # no-op, no error
    assert len(list(saver.list(generate_config("dst")))) == 1


def test_list_threads_and_prune_inactive(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    for thread_id in ("old", "new"):
        parent = None
        for step in range(3):
            parent = _put(saver, thread_id, parent=parent, step=step)
    conn = sqlite3.connect(saver.path)
    with conn:
        conn.execute("UPDATE checkpoints SET created_at = created_at - 86400 * 10 WHERE thread_id = 'old'")
    conn.close()
    infos = {info.thread_id: info for info in saver.list_threads()}
    assert set(infos) == {"old", "new"}
    assert infos["old"].checkpoints == 3
    assert infos["old"].last_activity < infos["new"].last_activity
    assert infos["new"].last_activity.tzinfo is not None
    assert [i.thread_id for i in saver.list_threads()] == ["new", "old"]

    assert saver.prune_inactive(timedelta(days=5)) == ["old"]
    assert len(list(saver.list(generate_config("old")))) == 1
    assert len(list(saver.list(generate_config("new")))) == 3
    assert saver.prune_inactive(timedelta(days=5), strategy="delete") == ["old"]
    assert list(saver.list(generate_config("old"))) == []
    assert saver.prune_inactive(timedelta(days=5)) == []
    with pytest.raises(ConfigError):
        saver.prune_inactive(timedelta(days=-1))


async def test_async_thread_activity(any_saver: Any) -> None:
    saver = any_saver
    await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    assert [i.thread_id for i in await saver.alist_threads()] == ["t"]
    assert await saver.aprune_inactive(timedelta(days=1)) == []


# -- DeltaChannel ----------------------------------------------------------------


def _concat(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class _DeltaState(TypedDict):
    log: Annotated[list[str], DeltaChannel(_concat, snapshot_frequency=4)]
    total: Annotated[int, operator.add]


def _delta_graph(saver: BaseCheckpointSaver) -> Any:
    def step(state: _DeltaState) -> dict[str, Any]:
        return {"log": [f"s{state['total']}"], "total": 1}

    builder = StateGraph(_DeltaState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["total"] >= 10 else "step")
    return builder.compile(checkpointer=saver)


def _fallback_history(saver: SqliteCheckpointer, config: RunnableConfig, channels: list[str]) -> Any:
    # The base class's walk through get_tuple: the reference answer.
    return BaseCheckpointSaver.get_delta_channel_history(saver, config=config, channels=channels)


def test_delta_history_matches_reference_walk(any_saver: Any) -> None:
    saver = any_saver
    graph = _delta_graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "d"}}
    graph.invoke({"log": ["start"], "total": 0}, config)
    assert graph.get_state(config).values["log"] == ["start", *(f"s{i}" for i in range(10))]
    history = list(saver.list(config))
    needing_walk = [t for t in history if "log" not in t.checkpoint["channel_values"]]
    assert needing_walk, "the graph should leave checkpoints without a log snapshot"
    for tup in history:
        ours = saver.get_delta_channel_history(config=tup.config, channels=["log", "total"])
        assert ours == _fallback_history(saver, tup.config, ["log", "total"])
    assert saver.get_delta_channel_history(config=config, channels=[]) == {}


def test_prune_keep_latest_keeps_delta_state(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    graph = _delta_graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "d"}}
    graph.invoke({"log": ["start"], "total": 0}, config)
    before = graph.get_state(config).values
    latest = saver.get_tuple(config)
    assert latest is not None and "log" not in latest.checkpoint["channel_values"]
    count_before = len(list(saver.list(config)))

    saver.prune(["d"], strategy="keep_latest")
    assert len(list(saver.list(config))) == 1  # only the latest is visible
    assert graph.get_state(config).values == before
    conn = sqlite3.connect(saver.path)
    hidden = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE hidden = 1").fetchone()[0]
    conn.close()
    assert 0 < hidden < count_before - 1, "only the ancestors back to the snapshot are kept"
    # The thread continues from the pruned state.
    graph.invoke({"log": ["again"], "total": -5}, config)
    assert graph.get_state(config).values["log"][: len(before["log"]) + 1] == [*before["log"], "again"]


def test_delete_for_runs_keeps_what_later_runs_need(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    graph = _delta_graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "d"}}
    first_run, second_run = str(uuid.uuid4()), str(uuid.uuid4())
    # LangGraph copies string values of `configurable` into checkpoint metadata.
    graph.invoke({"log": ["start"], "total": 5}, {"configurable": {"thread_id": "d", "run_id": first_run}})
    graph.invoke({"log": ["more"], "total": -2}, {"configurable": {"thread_id": "d", "run_id": second_run}})
    before = graph.get_state(config).values
    runs = {t.metadata.get("run_id") for t in saver.list(config)}
    assert runs == {first_run, second_run}

    saver.delete_for_runs([first_run])
    assert {t.metadata.get("run_id") for t in saver.list(config)} == {second_run}
    assert graph.get_state(config).values == before
    conn = sqlite3.connect(saver.path)
    hidden = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE hidden = 1").fetchone()[0]
    conn.close()
    assert hidden > 0, "the second run's log history runs through the first run"

    saver.delete_for_runs([second_run])
    assert list(saver.list(config)) == []
    conn = sqlite3.connect(saver.path)
    assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
    conn.close()


def test_copy_thread_carries_delta_history(any_saver: Any) -> None:
    saver = any_saver
    graph = _delta_graph(saver)
    graph.invoke({"log": ["start"], "total": 0}, {"configurable": {"thread_id": "src"}})
    saver.prune(["src"])
    saver.copy_thread("src", "dst")
    src = graph.get_state({"configurable": {"thread_id": "src"}}).values
    dst = graph.get_state({"configurable": {"thread_id": "dst"}}).values
    assert dst == src and len(dst["log"]) == 11


# -- concurrency and locking ---------------------------------------------------------


def test_many_threads_share_one_saver(any_saver: Any) -> None:
    saver = any_saver
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            parent = None
            for step in range(20):
                parent = _put(saver, f"t{n}", parent=parent, step=step)
                saver.put_writes(parent, [("x", step)], f"task-{step}")
                assert saver.get_tuple(parent) is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in range(8):
        assert len(list(saver.list(generate_config(f"t{n}")))) == 20


def test_lock_held_elsewhere_raises_lock_timeout(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path, lock_timeout=0.3) as saver:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            with pytest.raises(LockTimeoutError, match="locked"):
                _put(saver, "t")
            # Readers are not blocked by a writer in WAL mode.
            assert saver.get_tuple(generate_config("t")) is None
        finally:
            other.execute("ROLLBACK")
            other.close()
        _put(saver, "t")  # and the saver recovers once the lock is free
        assert saver.get_tuple(generate_config("t")) is not None


def test_metadata_is_queryable_json(saver: SqliteCheckpointer) -> None:
    # Counts rows in the SQLite file; tests/test_checkpoint_postgres.py has the PostgreSQL twin.
    _put(saver, "t", tags={"a": [1, 2]}, flag=True)
    conn = sqlite3.connect(saver.path)
    (raw,) = conn.execute("SELECT metadata FROM checkpoints").fetchone()
    conn.close()
    assert json.loads(raw)["tags"] == {"a": [1, 2]}
    assert len(list(saver.list(None, filter={"tags": {"a": [1, 2]}, "flag": True}))) == 1


# -- async path: committed off the loop, acknowledged only once committed ------------


async def test_concurrent_async_writes_are_committed_when_acknowledged(tmp_path: Path) -> None:
    """Each await returns only after the COMMIT that holds its write."""
    import asyncio

    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path) as saver:
        configs = [
            await saver.aput(generate_config(f"t{i}"), generate_checkpoint(), generate_metadata(), {}) for i in range(3)
        ]
        outside = sqlite3.connect(path)  # another connection sees only committed data
        try:

            async def put_writes(i: int) -> int:
                await saver.aput_writes(configs[i % 3], [("ch", i)], f"task-{i}")
                # Acknowledged: already visible to another connection.
                (n,) = outside.execute("SELECT count(*) FROM writes WHERE task_id = ?", (f"task-{i}",)).fetchone()
                return n

            assert await asyncio.gather(*(put_writes(i) for i in range(40))) == [1] * 40
        finally:
            outside.close()
        for i, config in enumerate(configs):
            saved = await saver.aget_tuple(config)
            assert saved is not None
            assert sorted(w[2] for w in saved.pending_writes) == list(range(i, 40, 3))


async def test_async_writes_report_lock_timeout_to_every_caller(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path, lock_timeout=0.3) as saver:
        config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            results = await asyncio.gather(
                *(saver.aput_writes(config, [("ch", i)], f"task-{i}") for i in range(5)),
                return_exceptions=True,
            )
            assert all(isinstance(r, LockTimeoutError) for r in results)
            # Reads still answer while another process holds the write lock.
            assert await saver.aget_tuple(config) is not None
        finally:
            other.execute("ROLLBACK")
            other.close()
        await saver.aput_writes(config, [("ch", 0)], "task-0")  # and it recovers
        saved = await saver.aget_tuple(config)
        assert saved is not None and [w[2] for w in saved.pending_writes] == [0]
