"""Where ChromaStore differed from LangGraph's own stores in their test files: the async TTL sweeper,
dotted filter keys with hyphens, and `store.embeddings`."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

ONE_SECOND = 1 / 60  # LangGraph TTLs are in minutes


async def test_awaited_ttl_sweeper_sweeps(data_dir: Path) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": DeterministicFakeEmbedding(size=FAKE_DIMS)},
        ttl={"default_ttl": 1 * ONE_SECOND, "sweep_interval_minutes": 0.2 * ONE_SECOND},
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # "coroutine ... was never awaited"
            task = await store.start_ttl_sweeper()
        await store.aput(("notes",), "short", {"text": "expires"})
        # Wait for the sweeper itself (no sweep_ttl call here): the row leaves the catalog.
        while store.items.count("memories") > 0:
            assert not task.done(), task
            await asyncio.sleep(0.1)
        assert await store.aget(("notes",), "short") is None
        task.cancel()
        assert store.stop_ttl_sweeper(timeout=30)
    finally:
        store.close()


def test_dotted_filter_keys_reach_nested_values(store: ChromaStore) -> None:
    store.put(("t",), "a", {"user": {"access-level": "nested", "level": 2}, "access-level": "top", "x.y": 1})
    store.put(("t",), "b", {"user": {"access-level": "public", "level": 3}})
    for filter, keys in [
        ({"user.access-level": "nested"}, ["a"]),
        ({"user.level": {"$gte": 3}}, ["b"]),
        ({"access-level": "top"}, ["a"]),
        ({"x.y": 1}, ["a"]),  # a key holding a dot is still matched as written
        ({"user.missing": "nested"}, []),
    ]:
        assert sorted(i.key for i in store.search(("t",), filter=filter)) == keys, filter
        assert sorted(i.key for i in store.search(("t",), query="q", filter=filter)) == keys, filter


def test_store_embeddings_is_the_users_object(data_dir: Path) -> None:
    emb = DeterministicFakeEmbedding(size=FAKE_DIMS)
    with ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": emb}) as store:
        assert store.embeddings is emb
        store.put(("notes",), "a", {"text": "hello"})
        store.put(("notes",), "b", {"text": "hello"})
        assert store.cached_embeddings is not None and store.cached_embeddings.inner is emb
        assert store.cached_embeddings.hits >= 1  # the second equal text came from the cache
    with ChromaStore(data_dir=data_dir / "plain") as plain:
        assert plain.embeddings is None and plain.cached_embeddings is None
