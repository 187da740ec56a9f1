"""TTL: expiry, refresh on read, omit_expired, sweeping by hand and in the background."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

ONE_SECOND = 1 / 60  # LangGraph TTLs are in minutes


def _store(data_dir: Path, **ttl) -> ChromaStore:
    return ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": DeterministicFakeEmbedding(size=FAKE_DIMS)},
        ttl=ttl or None,
    )


def test_supports_ttl_flag(store: ChromaStore) -> None:
    assert store.supports_ttl is True


def test_expired_items_are_swept(data_dir: Path) -> None:
    s = _store(data_dir)
    # The first put creates the index's collection (a second or more on a busy machine): not under a TTL.
    s.put(("other",), "forever", {"v": 3})
    s.put(("notes",), "short", {"v": 1}, ttl=1.0 * ONE_SECOND)
    s.put(("notes",), "long", {"v": 2}, ttl=60.0)
    assert s.sweep_ttl() == 0
    time.sleep(1.2)
    assert s.sweep_ttl() == 1
    assert s.get(("notes",), "short") is None
    assert s.get(("notes",), "long").value == {"v": 2}
    assert s.get(("other",), "forever").value == {"v": 3}
    assert s.list_namespaces() == [("notes",), ("other",)]
    s.put(("gone",), "x", {"v": 1}, ttl=0.5 * ONE_SECOND)
    time.sleep(0.7)
    s.sweep_ttl()
    assert ("gone",) not in s.list_namespaces()  # an emptied namespace is no longer listed
    s.close()


def test_reads_refresh_ttl_unless_told_not_to(data_dir: Path) -> None:
    s = _store(data_dir, refresh_on_read=True)
    s.put(("notes",), "read", {"v": 1}, ttl=1.0 * ONE_SECOND)
    s.put(("notes",), "unread", {"v": 2}, ttl=1.0 * ONE_SECOND)
    s.put(("notes",), "peeked", {"v": 3}, ttl=1.0 * ONE_SECOND)
    time.sleep(0.6)
    assert s.get(("notes",), "read") is not None
    assert s.get(("notes",), "peeked", refresh_ttl=False) is not None
    time.sleep(0.6)  # 1.2 s after the puts, 0.6 s after the refresh
    s.sweep_ttl()
    assert s.get(("notes",), "read", refresh_ttl=False) is not None
    assert s.get(("notes",), "unread", refresh_ttl=False) is None
    assert s.get(("notes",), "peeked", refresh_ttl=False) is None
    time.sleep(0.8)
    s.sweep_ttl()
    assert s.get(("notes",), "read") is None
    s.close()


def test_search_refreshes_ttl(data_dir: Path) -> None:
    s = _store(data_dir)
    s.put(("notes",), "hit", {"text": "searched for"}, ttl=1.0 * ONE_SECOND)
    time.sleep(0.6)
    assert [r.key for r in s.search(("notes",), query="searched for", limit=1)] == ["hit"]
    time.sleep(0.6)
    s.sweep_ttl()
    assert s.get(("notes",), "hit", refresh_ttl=False) is not None
    s.close()


def test_refresh_on_read_false_in_config(data_dir: Path) -> None:
    s = _store(data_dir, refresh_on_read=False)
    s.put(("notes",), "k", {"v": 1}, ttl=1.0 * ONE_SECOND)
    time.sleep(0.6)
    s.get(("notes",), "k")
    time.sleep(0.6)
    s.sweep_ttl()
    assert s.get(("notes",), "k") is None
    s.close()


def test_default_ttl_and_explicit_none(data_dir: Path) -> None:
    s = _store(data_dir, default_ttl=0.3 * ONE_SECOND)
    s.put(("notes",), "default", {"v": 1})
    s.put(("notes",), "none", {"v": 2}, ttl=None)
    time.sleep(0.5)
    assert s.sweep_ttl() == 1
    assert s.get(("notes",), "default") is None
    assert s.get(("notes",), "none") is not None
    s.close()


@pytest.mark.parametrize("omit", [True, False])
def test_omit_expired(data_dir: Path, omit: bool) -> None:
    s = _store(data_dir, omit_expired=omit)
    s.put(("notes",), "k", {"text": "soon gone"}, ttl=0.2 * ONE_SECOND)
    time.sleep(0.4)
    got = s.get(("notes",), "k", refresh_ttl=False)
    found = s.search(("notes",), query="soon gone", refresh_ttl=False)
    listed = s.search(("notes",), refresh_ttl=False)
    if omit:
        assert got is None and found == [] and listed == []
    else:  # LangGraph's default: expired items are visible until swept
        assert got is not None and [f.key for f in found] == ["k"] and [f.key for f in listed] == ["k"]
    s.close()


def test_background_sweeper_removes_expired_items(data_dir: Path) -> None:
    s = _store(data_dir, sweep_interval_minutes=1)
    s.put(("notes",), "k", {"v": 1}, ttl=0.2 * ONE_SECOND)
    future = s.start_ttl_sweeper(sweep_interval_minutes=0.5 * ONE_SECOND)
    deadline = time.time() + 10
    while s.get(("notes",), "k", refresh_ttl=False) is not None and time.time() < deadline:
        time.sleep(0.1)
    assert s.get(("notes",), "k", refresh_ttl=False) is None
    assert s.stop_ttl_sweeper(timeout=5) is True
    assert future.done()
    s.close()


def test_sweeper_without_ttl_config_is_a_finished_future(store: ChromaStore) -> None:
    future = store.start_ttl_sweeper()
    assert future.done()
    assert store.stop_ttl_sweeper() is True


def test_invalid_ttl_is_refused(store: ChromaStore) -> None:
    from langgraph_memory.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="positive number of minutes"):
        store.put(("notes",), "k", {"v": 1}, ttl=-1)
    assert store.get(("notes",), "k") is None
