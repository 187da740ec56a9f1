"""Wrong argument types and natural habits (a connection for a path, a singular label) give typed errors or
warnings that say what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.errors import ConfigError, InvalidArgumentError, LangGraphMemoryError
from langgraph_memory.graph.nodes import recall_node, store_node


def test_memory_open_of_a_number_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="path"):
        Memory.open(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [123, 4.5, None, [("a",), 7], (1, 2)])
def test_nodes_refuse_a_namespace_that_is_not_one(bad) -> None:
    with pytest.raises(InvalidArgumentError, match="namespace"):
        recall_node(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="namespace"):
        store_node(bad)  # type: ignore[arg-type]


def test_checkpointer_given_a_connection_says_to_give_the_path(tmp_path: Path) -> None:
    path = tmp_path / "cp.sqlite"
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(ConfigError) as info:
            SqliteCheckpointer(conn)  # type: ignore[arg-type]
        assert "sqlite3.Connection" in str(info.value) and str(path) in str(info.value)
    finally:
        conn.close()


def test_checkpointer_from_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(LangGraphMemoryError) as info:
        SqliteCheckpointer.from_conn_string(tmp_path)
    message = str(info.value)
    assert "folder" in message or "directory" in message
    assert "permission" not in message.lower()


def test_a_label_one_letter_from_a_typed_collection_warns(store, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.WARNING, logger="langgraph_memory.store.searching"):
        store.put(("lesson",), "k", {"text": "x"})  # typed label: "lessons"
        store.search(("strategy",), query="momentum")  # typed label: "strategies"
        store.search(("lessonz",), query="momentum")
        store.put(("notes",), "k", {"text": "x"})  # far from every label: no warning
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("'lesson'" in m and "'lessons'" in m for m in warned), warned
    assert any("'lessonz'" in m for m in warned), warned
    assert any("'strategy'" in m and "'strategies'" in m for m in warned), warned
    assert not any("'notes'" in m for m in warned), warned
    # Once per label: a second put says nothing new.
    caplog.clear()
    store.put(("lesson",), "k2", {"text": "y"})
    assert not caplog.records


def test_a_directory_that_cannot_be_written_is_a_typed_error(tmp_path: Path, capsys) -> None:
    import subprocess
    import sys

    from langgraph_memory.cli import main
    from langgraph_memory.errors import ReadOnlyError
    from tests.helpers.tmpfs import remount_read_only, tmpfs

    with tmpfs(tmp_path, "32m") as mnt:
        data_dir = mnt / "memory"
        # Made by another process, so that this one holds no file open when the mount turns read-only.
        code = (
            f"from langgraph_memory import Memory; m = Memory.open({str(data_dir)!r}, embeddings=False); "
            "m.store.put(('notes',), 'a', {'text': 'x'}, index=False); m.close()"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
        remount_read_only(mnt)
        with pytest.raises(ReadOnlyError):
            Memory.open(data_dir, embeddings=False)
        assert main(["--data-dir", str(data_dir), "stats"]) == 2
        out = capsys.readouterr()
        assert "Traceback" not in out.err and str(data_dir) in out.err


def test_memory_open_of_a_deep_missing_path_creates_it_only_when_asked(tmp_path: Path) -> None:
    deep = tmp_path / "no" / "such" / "deep" / "dir"
    with pytest.raises(ConfigError, match="does not exist") as info:
        Memory.open(deep, embeddings=False)
    assert str(tmp_path / "no") in str(info.value)
    assert not (tmp_path / "no").exists()  # nothing was created
    Memory.open(tmp_path / "one-level", embeddings=False).close()  # one missing level: a new memory
    Memory.open(deep, embeddings=False, create_parents=True).close()
    assert deep.is_dir()
