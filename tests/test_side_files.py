"""Damaged, read-only and full side files: each gives its documented behaviour, never a raw sqlite3 error.

* ``embeddings.sqlite`` is a cache: a damaged one is moved aside (kept as
  ``embeddings.sqlite.damaged-<UTC time>``), a WARNING names it, and a fresh
  cache takes its place; an unwritable one is skipped with a warning.
* ``archive/manifest.sqlite`` indexes the archive: damaged, it raises
  ``CorruptFileError`` naming the file and what to do.
* ``checkpoints.sqlite`` holds the graphs' state: damaged, read-only or on a
  full disk, it raises ``CorruptFileError``, ``ReadOnlyError`` or
  ``DiskFullError``, naming the file, from the sync and the async API.

Each file is damaged three ways: garbage over the whole file, truncated to
half, and its first (header) page zeroed. Real files and real SQLite; the
read-only and full disks are real tmpfs mounts (skipped where this process
cannot mount).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import StateGraph

from langgraph_memory.archive import Archiver
from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.embeddings import CachedEmbeddings
from langgraph_memory.errors import (
    CorruptFileError,
    DiskFullError,
    ReadOnlyError,
    StorageError,
)
from langgraph_memory.store import ChromaStore
from tests.helpers.tmpfs import fill, remount_read_only, tmpfs

MODES = ("garbage", "half", "header")
FUTURE = time.time() + 400 * 86400.0  # every item is stale, measured from here
DIMS = 16


def damage(path: Path, mode: str) -> bytes:
    """Damage the (closed) SQLite file ``path`` one of three ways; return its new bytes."""
    data = path.read_bytes()
    assert data[:16] == b"SQLite format 3\0"
    if mode == "garbage":
        data = os.urandom(len(data))
    elif mode == "half":
        data = data[: len(data) // 2]
    elif mode == "header":
        page_size = int.from_bytes(data[16:18], "big") or 65536
        data = b"\0" * page_size + data[page_size:]
    else:  # pragma: no cover
        raise ValueError(mode)
    path.write_bytes(data)
    return data


def garble_after_first_page(path: Path) -> None:
    """Overwrite every page but the first with random bytes (the file stays open elsewhere)."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(4096)
        f.write(os.urandom(size - 4096))


# A cache or checkpointer on a file of its own, no data directory: the same in both passes, so the SQLite one only.
_FILE_OF_ITS_OWN = pytest.mark.sqlite_only("a side file opened on its own path: no data directory, no catalog")


def side_files_gone(path: Path) -> bool:
    return not any(path.with_name(path.name + s).exists() for s in ("-wal", "-shm"))


@pytest.fixture
def warnings_of(caplog: pytest.LogCaptureFixture) -> Callable[[str], list[str]]:
    caplog.set_level(logging.WARNING)

    def of(logger: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno >= logging.WARNING]

    return of


# ---------------------------------------------------------------- embedding cache

TEXTS = [f"text number {i}, about position sizing" for i in range(1500)]


def _fill_cache(path: Path) -> list[list[float]]:
    cache = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
    vectors = cache.embed_documents(TEXTS)
    cache.close()
    assert side_files_gone(path)
    return vectors


def _check_rebuilt(path: Path, expected: list[list[float]], damaged: bytes | None, warnings: list[str]) -> None:
    aside = sorted(path.parent.glob(path.name + ".damaged-*"))
    assert [p for p in aside if not p.name.endswith(("-wal", "-shm"))], "the damaged file was not kept"
    if damaged is not None:
        assert aside[0].read_bytes() == damaged
    assert any(str(path) in w and aside[0].name in w for w in warnings), warnings
    # The fresh file took the vectors: a new process finds them all.
    again = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
    assert np.allclose(again.embed_documents(TEXTS), expected, atol=1e-6)
    assert (again.hits, again.misses) == (len(TEXTS), 0)
    again.close()


@_FILE_OF_ITS_OWN
@pytest.mark.parametrize("mode", MODES)
def test_damaged_embedding_cache_is_moved_aside_and_rebuilt(tmp_path: Path, mode: str, warnings_of) -> None:
    path = tmp_path / "embeddings.sqlite"
    expected = _fill_cache(path)
    damaged = damage(path, mode)
    cache = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
    assert np.allclose(cache.embed_documents(TEXTS), expected, atol=1e-6)
    assert cache.file_in_use
    cache.close()
    _check_rebuilt(path, expected, damaged, warnings_of("langgraph_memory.embeddings.cache"))


@_FILE_OF_ITS_OWN
def test_embedding_cache_damaged_while_open_is_replaced(tmp_path: Path, warnings_of) -> None:
    path = tmp_path / "embeddings.sqlite"
    expected = _fill_cache(path)
    cache = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
    garble_after_first_page(path)
    assert np.allclose(cache.embed_documents(TEXTS), expected, atol=1e-6)  # read fails: embedded anew
    cache.embed_documents(["one more text"])
    cache.close()
    _check_rebuilt(path, expected, None, warnings_of("langgraph_memory.embeddings.cache"))


def test_store_puts_and_searches_over_a_damaged_cache(data_dir: Path, warnings_of) -> None:
    emb = DeterministicFakeEmbedding(size=DIMS)
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": emb})
    store.put(("research",), "a", {"content": "rates rose again"})
    store.close()
    cache_path = data_dir / "embeddings.sqlite"
    damage(cache_path, "garbage")
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": emb})
    try:
        store.put(("research",), "b", {"content": "bread needs time"})
        assert store.get(("research",), "b").value == {"content": "bread needs time"}
        assert store.search(("research",), query="bread needs time", limit=1)[0].key == "b"
    finally:
        store.close()
    assert list(data_dir.glob("embeddings.sqlite.damaged-*"))
    assert any(str(cache_path) in w for w in warnings_of("langgraph_memory.embeddings.cache"))


# ------------------------------------------------------------------ archive manifest


def _archive(data_dir: Path, n: int = 40) -> tuple[ChromaStore, Path, dict[str, bytes]]:
    """A store whose ``n`` lessons were archived; returns it, the manifest path and the archive files' bytes."""
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    for i in range(n):
        store.put(("lessons", "desk"), f"l{i}", {"lesson": f"lesson {i} about stops"})
    archiver = Archiver(store, chunk_size=10)
    assert archiver.run(now=FUTURE).total_archived == n
    manifest = archiver.manifest.path
    archiver.close()
    assert side_files_gone(manifest)
    files = {p.name: p.read_bytes() for p in manifest.parent.glob("*.jsonl.gz")}
    assert files
    return store, manifest, files


def _assert_names_manifest(exc: CorruptFileError, manifest: Path) -> None:
    text = str(exc)
    assert exc.path == manifest and str(manifest) in text
    assert "backup" in text and "move it aside" in text and "archive files" in text


@pytest.mark.parametrize("mode", MODES)
def test_damaged_manifest_raises_corrupt_file_error(data_dir: Path, mode: str) -> None:
    store, manifest, files = _archive(data_dir)
    try:
        damage(manifest, mode)
        with pytest.raises(CorruptFileError) as caught:
            archiver = Archiver(store)
            try:
                archiver.verify()  # reads the whole manifest
            finally:
                archiver.close()
        _assert_names_manifest(caught.value, manifest)
        # The advice holds: moved aside (with its -wal and -shm), the archive is empty and the files stay.
        for suffix in ("", "-wal", "-shm"):
            side = manifest.with_name(manifest.name + suffix)
            if side.exists():
                side.rename(side.with_name(f"manifest.sqlite.damaged{suffix}"))
        archiver = Archiver(store)
        assert archiver.list_archives(all_states=True) == [] and archiver.verify() == {}
        assert archiver.run(now=FUTURE).ok
        archiver.close()
        assert {p.name: p.read_bytes() for p in manifest.parent.glob("*.jsonl.gz")} == files
    finally:
        store.close()


MANIFEST_CALLS: dict[str, Callable[[Archiver], Any]] = {
    "list_archives": lambda a: a.list_archives(),
    "count_archived": lambda a: a.count_archived(),
    "iter_archived": lambda a: list(a.iter_archived("lessons")),
    "search_archive": lambda a: a.search_archive("lessons", "stops", k=3),
    "get_archived": lambda a: a.get_archived(["l1"]),
    "find": lambda a: a.find("l1"),
    "restore": lambda a: a.restore(keys=["l1"]),
    "verify": lambda a: a.verify(),
    "recover": lambda a: a.recover(),
    "run": lambda a: a.run(now=FUTURE),
}


@pytest.mark.parametrize("call", list(MANIFEST_CALLS))
def test_manifest_damaged_while_open_raises_typed_errors(data_dir: Path, call: str) -> None:
    store, manifest, _ = _archive(data_dir)
    archiver = Archiver(store)
    try:
        garble_after_first_page(manifest)
        with pytest.raises(CorruptFileError) as caught:
            MANIFEST_CALLS[call](archiver)
        _assert_names_manifest(caught.value, manifest)
    finally:
        archiver.close()
        store.close()


# ---------------------------------------------------------------------- checkpointer


def _graph(saver: SqliteCheckpointer) -> Any:
    builder = StateGraph(int)
    builder.add_node("add_one", lambda x: x + 1)
    builder.set_entry_point("add_one")
    builder.set_finish_point("add_one")
    return builder.compile(checkpointer=saver)


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _fill_checkpoints(path: Path) -> None:
    with SqliteCheckpointer(path) as saver:
        graph = _graph(saver)
        for i in range(300):
            graph.invoke(i, _cfg(f"t{i % 20}"))
    assert side_files_gone(path)


def _assert_names_checkpoints(exc: StorageError, path: Path) -> None:
    assert exc.path == path and str(path) in str(exc)


@_FILE_OF_ITS_OWN
@pytest.mark.parametrize("mode", MODES)
def test_damaged_checkpoint_file_raises_corrupt_file_error(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "checkpoints.sqlite"
    _fill_checkpoints(path)
    damage(path, mode)
    with pytest.raises(CorruptFileError) as caught, SqliteCheckpointer(path) as saver:
        _graph(saver).invoke(1, _cfg("t3"))
    _assert_names_checkpoints(caught.value, path)
    assert "backup" in str(caught.value) and "move it aside" in str(caught.value)

    async def use_async() -> None:
        async with SqliteCheckpointer(path) as saver:
            await _graph(saver).ainvoke(1, _cfg("t3"))

    with pytest.raises(CorruptFileError):
        asyncio.run(use_async())


SYNC_CALLS: dict[str, Callable[[SqliteCheckpointer], Any]] = {
    "get_tuple": lambda s: s.get_tuple(_cfg("t3")),
    "list": lambda s: list(s.list(None)),
    "invoke": lambda s: _graph(s).invoke(1, _cfg("t5")),
    "list_threads": lambda s: s.list_threads(),
    "prune": lambda s: s.prune([f"t{i}" for i in range(20)]),
}


async def _alist(saver: SqliteCheckpointer) -> list[Any]:
    return [t async for t in saver.alist(None)]


ASYNC_CALLS: dict[str, Callable[[SqliteCheckpointer], Any]] = {
    "aget_tuple": lambda s: s.aget_tuple(_cfg("t3")),
    "alist": _alist,
    "ainvoke": lambda s: _graph(s).ainvoke(1, _cfg("t5")),
    "alist_threads": lambda s: s.alist_threads(),
    "aprune": lambda s: s.aprune([f"t{i}" for i in range(20)]),
}


@_FILE_OF_ITS_OWN
@pytest.mark.parametrize("call", list(SYNC_CALLS) + list(ASYNC_CALLS))
def test_checkpoint_file_damaged_while_open_raises_typed_errors(tmp_path: Path, call: str) -> None:
    path = tmp_path / "checkpoints.sqlite"
    _fill_checkpoints(path)

    async def run_async() -> None:
        async with SqliteCheckpointer(path) as saver:
            garble_after_first_page(path)
            await ASYNC_CALLS[call](saver)

    with pytest.raises(CorruptFileError) as caught:
        if call in SYNC_CALLS:
            with SqliteCheckpointer(path) as saver:
                garble_after_first_page(path)
                SYNC_CALLS[call](saver)
        else:
            asyncio.run(run_async())
    _assert_names_checkpoints(caught.value, path)


# ------------------------------------------------------------ read-only data directory


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Callable[[], None]]:
    """Yields a function that makes ``tmp_path / "ro"`` read-only, with what was written there first.

    chmod (0o555 folders, 0o444 files) does the job for a normal user; root
    ignores it, so as root the folder is a tmpfs remounted read-only.
    """
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()

        def chmod() -> None:
            for p in folder.rglob("*"):
                p.chmod(0o555 if p.is_dir() else 0o444)
            folder.chmod(0o555)

        yield chmod
        for p in [folder, *folder.rglob("*")]:
            p.chmod(0o755)
        return
    with tmpfs(tmp_path, "16m") as mnt:
        link = tmp_path / "ro"
        link.symlink_to(mnt)

        def remount() -> None:
            for p in mnt.rglob("*"):
                p.chmod(0o555 if p.is_dir() else 0o444)
            remount_read_only(mnt)

        yield remount


@_FILE_OF_ITS_OWN
def test_read_only_cache_warns_and_embeds_in_memory(tmp_path: Path, read_only_dir, warnings_of) -> None:
    folder = tmp_path / "ro"
    expected = _fill_cache(folder / "embeddings.sqlite")
    read_only_dir()
    for path in (folder / "embeddings.sqlite", folder / "new" / "embeddings.sqlite"):
        cache = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
        assert np.allclose(cache.embed_documents(TEXTS[:50] + ["a new text"])[:50], expected[:50], atol=1e-6)
        assert cache.embed_documents(["a new text"]) and cache.hits >= 1  # the in-memory LRU
        cache.close()
        if not cache.file_in_use:
            assert any(str(path) in w for w in warnings_of("langgraph_memory.embeddings.cache"))
    assert not (folder / "new").exists()


@_FILE_OF_ITS_OWN
def test_read_only_checkpoint_file_raises_read_only_error(tmp_path: Path, read_only_dir) -> None:
    folder = tmp_path / "ro"
    _fill_checkpoints(folder / "checkpoints.sqlite")
    read_only_dir()
    for path in (folder / "checkpoints.sqlite", folder / "other.sqlite", folder / "sub" / "checkpoints.sqlite"):
        with pytest.raises(ReadOnlyError) as caught, SqliteCheckpointer(path) as saver:
            _graph(saver).invoke(1, _cfg("t1"))
        assert str(path) in str(caught.value) or str(path.parent) in str(caught.value)


def test_read_only_archive_folder_raises_read_only_error(data_dir: Path, tmp_path: Path, read_only_dir) -> None:
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    try:
        store.put(("lessons", "desk"), "l1", {"lesson": "cut losers early"})
        Archiver(store, archive_dir=tmp_path / "ro" / "archive").close()  # a manifest exists
        read_only_dir()
        for folder in ("archive", "new-archive"):
            with pytest.raises(ReadOnlyError) as caught:
                archiver = Archiver(store, archive_dir=tmp_path / "ro" / folder)
                try:
                    archiver.run(now=FUTURE)
                finally:
                    archiver.close()
            assert str(tmp_path / "ro" / folder) in str(caught.value)
        assert store.get(("lessons", "desk"), "l1") is not None
    finally:
        store.close()


# ------------------------------------------------------------------------ full disk


@_FILE_OF_ITS_OWN
def test_full_disk_cache_keeps_vectors_in_memory(tmp_path: Path, warnings_of) -> None:
    with tmpfs(tmp_path, "2m") as mnt:
        path = mnt / "embeddings.sqlite"
        cache = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
        cache.embed_documents(["warm up"])
        cache.flush()
        filler = fill(mnt, leave=16 * 1024)
        first = cache.embed_documents(TEXTS)
        cache.flush()  # the background writes failed
        assert any(str(path) in w for w in warnings_of("langgraph_memory.embeddings.cache"))
        assert np.allclose(cache.embed_documents(TEXTS), first) and cache.hits >= len(TEXTS)  # the LRU
        filler.unlink()
        cache.embed_documents(["after the disk has room"])
        cache.close()
        again = CachedEmbeddings(DeterministicFakeEmbedding(size=64), path=path, model_id="fake-64", file_min_seconds=0)
        again.embed_documents(["after the disk has room", "warm up"])
        assert again.hits == 2  # writing resumed once there was room
        again.close()


@_FILE_OF_ITS_OWN
def test_full_disk_checkpointer_raises_disk_full_error_and_recovers(tmp_path: Path) -> None:
    with tmpfs(tmp_path, "2m") as mnt:
        path = mnt / "checkpoints.sqlite"
        builder = StateGraph(str)
        builder.add_node("grow", lambda s: s + "x")
        builder.set_entry_point("grow")
        builder.set_finish_point("grow")
        with SqliteCheckpointer(path) as saver:
            graph = builder.compile(checkpointer=saver)
            graph.invoke("a", _cfg("t0"))
            filler = fill(mnt, leave=64 * 1024)
            with pytest.raises(DiskFullError) as caught:
                for i in range(100):
                    graph.invoke("y" * 20_000, _cfg(f"s{i}"))
            _assert_names_checkpoints(caught.value, path)

            async def grow_async() -> None:
                for i in range(100):
                    await graph.ainvoke("y" * 20_000, _cfg(f"a{i}"))

            with pytest.raises(DiskFullError):
                asyncio.run(grow_async())
            filler.unlink()
            assert graph.invoke("z", _cfg("t0")) == "zx"
            assert asyncio.run(graph.ainvoke("w", _cfg("t0"))) == "wx"
            assert saver.get_tuple(_cfg("t0")) is not None
