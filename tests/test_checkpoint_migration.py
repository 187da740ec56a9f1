"""Schema v2: per-version channel blobs, and the in-place migration of v1 files."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_memory.checkpoint import SCHEMA_VERSION, SqliteCheckpointer
from langgraph_memory.errors import CheckpointError
from tests._checkpoint_helpers.v1_fixture import (
    DELTA_THREADS,
    FIXTURE,
    chat_graph,
    delta_graph,
    expected,
    snapshot,
    write_v1_file,
)

# No catalog here: the checkpointers run in the SQLite-catalog run (PostgreSQL's too, on the session's server).
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


class _XorCipher:
    """A toy cipher (no extra dependency): enough to show blobs stay encrypted."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def _xor(self, data: bytes) -> bytes:
        return bytes(b ^ self.key[i % len(self.key)] for i, b in enumerate(data))

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", self._xor(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return self._xor(ciphertext)


def _normal(value: Any) -> Any:
    # Tuples and lists, dict order: compare what the serializer keeps.
    serde = JsonPlusSerializer()
    return serde.loads_typed(serde.dumps_typed(value))


def _tables(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(path)
    try:
        return {
            "version": conn.execute("PRAGMA user_version").fetchone()[0],
            "tables": {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")},
            "rows": conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0],
        }
    finally:
        conn.close()


def _blob_keys(path: Path, thread_id: str) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return set(
            conn.execute(
                "SELECT checkpoint_ns, channel, version FROM blobs WHERE thread_id = ?", (thread_id,)
            ).fetchall()
        )
    finally:
        conn.close()


def test_schema_version_is_2() -> None:
    assert SCHEMA_VERSION == 2


def test_v1_file_migrates_in_place_and_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    shutil.copy(FIXTURE, path)  # never migrate the committed fixture itself
    before = _tables(path)
    assert before["version"] == 1 and "blobs" not in before["tables"]
    want = expected(path)  # what the v1 code read from this file

    with SqliteCheckpointer(path) as saver:
        after = _tables(path)
        assert after["version"] == 2 and "blobs" in after["tables"]
        assert "checkpoints_v2" not in after["tables"] and after["rows"] == before["rows"]
        for thread_id, v1_view in want.items():
            assert _normal(snapshot(saver, thread_id)) == _normal(v1_view), thread_id
        # Hidden ancestors of the pruned thread still rebuild its state.
        pruned = {"configurable": {"thread_id": "pruned"}}
        assert len(list(saver.list(pruned))) == 1
        assert delta_graph(saver).get_state(pruned).values["log"][-1] == "s9"
        # The migrated threads go on.
        chat = chat_graph(saver)
        chat.invoke({"messages": [HumanMessage("after the upgrade")]}, {"configurable": {"thread_id": "chat"}})
        messages = chat.get_state({"configurable": {"thread_id": "chat"}}).values["messages"]
        assert [m.content for m in messages[-2:]] == ["after the upgrade", "re: after the upgrade"]
        assert messages[0].content == "hello 0"
        saver.prune(["delta"], strategy="keep_latest")
        assert (
            delta_graph(saver).get_state({"configurable": {"thread_id": "delta"}}).values
            == (want["delta"]["states"][0])
        )

    with SqliteCheckpointer(path) as reopened:  # a v2 file opens as is
        assert _tables(path)["version"] == 2
        assert reopened.get_tuple({"configurable": {"thread_id": "chat", "checkpoint_ns": "child:1"}})


def test_failed_migration_leaves_the_v1_file_untouched(tmp_path: Path) -> None:
    cipher_serde = EncryptedSerializer(_XorCipher(b"k3y"))
    path = tmp_path / "encrypted-v1.sqlite"
    parent = generate_checkpoint(channel_values={"x": [1, 2]}, channel_versions={"x": "1.0"})
    child = generate_checkpoint(channel_values={"x": [1, 2], "y": "new"}, channel_versions={"x": "1.0", "y": "2.0"})
    write_v1_file(path, cipher_serde, [("t", "", parent, None), ("t", "", child, parent["id"])])
    before = _tables(path)

    # Opened without the key, the checkpoints cannot be read: nothing changes.
    with pytest.raises(CheckpointError, match="serde"):
        SqliteCheckpointer(path)
    assert _tables(path) == before

    with SqliteCheckpointer(path, serde=cipher_serde) as saver:
        latest = saver.get_tuple(generate_config("t"))
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {"x": [1, 2], "y": "new"}
        assert latest.parent_config is not None
        assert latest.parent_config["configurable"]["checkpoint_id"] == parent["id"]
    # One blob per (channel, version), shared by both checkpoints; still encrypted.
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT channel, version, type FROM blobs ORDER BY 1").fetchall()
    conn.close()
    assert [(c, v) for c, v, _ in rows] == [("x", "1.0"), ("y", "2.0")]
    assert all(type_.endswith("+xor") for _, _, type_ in rows)


def test_put_stores_only_new_versions(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path) as saver:
        config = generate_config("t")
        first = generate_checkpoint(channel_values={"a": [1], "b": "same"}, channel_versions={"a": "1", "b": "1"})
        config = saver.put(config, first, {"step": 0}, {"a": "1", "b": "1"})
        second = generate_checkpoint(channel_values={"a": [1, 2], "b": "same"}, channel_versions={"a": "2", "b": "1"})
        # "gone" has a new version but no value (like a DeltaChannel between snapshots).
        second["channel_versions"]["gone"] = "2"
        saver.put(config, second, {"step": 1}, {"a": "2", "gone": "2"})
        assert _blob_keys(path, "t") == {("", "a", "1"), ("", "b", "1"), ("", "a", "2")}
        latest = saver.get_tuple(generate_config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"a": [1, 2], "b": "same"}
        oldest = list(saver.list(generate_config("t")))[-1]
        assert oldest.checkpoint["channel_values"] == {"a": [1], "b": "same"}


async def test_aput_stores_only_new_versions(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    async with SqliteCheckpointer(path) as saver:
        config = generate_config("t")
        first = generate_checkpoint(channel_values={"a": 1, "b": 2}, channel_versions={"a": "1", "b": "1"})
        config = await saver.aput(config, first, {"step": 0}, {"a": "1", "b": "1"})
        second = generate_checkpoint(channel_values={"a": 3, "b": 2}, channel_versions={"a": "2", "b": "1"})
        await saver.aput(config, second, {"step": 1}, {"a": "2"})
        assert _blob_keys(path, "t") == {("", "a", "1"), ("", "b", "1"), ("", "a", "2")}
        latest = await saver.aget_tuple(generate_config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"a": 3, "b": 2}


def test_prune_and_delete_collect_unreferenced_blobs(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path) as saver:
        graph = chat_graph(saver)
        for thread_id in ("keep", "gone", "src"):
            for turn in range(3):
                graph.invoke({"messages": [HumanMessage(f"m{turn}")]}, {"configurable": {"thread_id": thread_id}})
        before = graph.get_state({"configurable": {"thread_id": "keep"}}).values
        saver.prune(["keep"], strategy="keep_latest")
        latest = saver.get_tuple({"configurable": {"thread_id": "keep"}})
        assert latest is not None
        wanted = {("", ch, str(v)) for ch, v in latest.checkpoint["channel_versions"].items()}
        assert _blob_keys(path, "keep") <= wanted  # only what the survivor reads
        assert graph.get_state({"configurable": {"thread_id": "keep"}}).values == before

        saver.copy_thread("src", "copy")
        assert _blob_keys(path, "copy") == _blob_keys(path, "src")
        saver.delete_thread("gone")
        assert _blob_keys(path, "gone") == set()
        saver.prune(["src"], strategy="delete")
        assert _blob_keys(path, "src") == set()
        assert len(graph.get_state({"configurable": {"thread_id": "copy"}}).values["messages"]) == 6


def test_delete_for_runs_keeps_only_delta_blobs_of_hidden_rows(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    with SqliteCheckpointer(path) as saver:
        graph = delta_graph(saver)
        graph.invoke({"log": ["a"], "total": 5}, {"configurable": {"thread_id": "d", "run_id": "r1"}})
        graph.invoke({"log": ["b"], "total": -2}, {"configurable": {"thread_id": "d", "run_id": "r2"}})
        config = {"configurable": {"thread_id": "d"}}
        before = graph.get_state(config).values
        saver.delete_for_runs(["r1"])
        assert graph.get_state(config).values == before
        conn = sqlite3.connect(path)
        hidden_total = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE hidden = 1").fetchone()[0]
        conn.close()
        assert hidden_total > 0
        visible_refs = {
            ("", ch, str(v)) for t in saver.list(config) for ch, v in t.checkpoint["channel_versions"].items()
        }
        # Blobs beyond what visible checkpoints read are DeltaChannel seeds only.
        assert {ch for _, ch, _ in _blob_keys(path, "d") - visible_refs} <= {"log"}
        saver.delete_for_runs(["r2"])
        assert _blob_keys(path, "d") == set()


@pytest.mark.parametrize("thread_id", DELTA_THREADS)
def test_fixture_threads_are_delta_threads(thread_id: str) -> None:
    # Guards the fixture: the migration test must cover DeltaChannel rows.
    conn = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    try:
        (needing_walk,) = conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ? AND delta_channels IS NOT NULL",
            (thread_id,),
        ).fetchone()
    finally:
        conn.close()
    assert needing_walk > 0
