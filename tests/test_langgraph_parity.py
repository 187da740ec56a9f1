"""Where ChromaStore differed from LangGraph's own stores in their test files: the async TTL sweeper,
dotted filter keys with hyphens, and `store.embeddings`."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import END, START, StateGraph

from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.errors import StoreBackendError
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


def test_setup_and_from_conn_string_work_as_on_langgraphs_stores_and_savers(tmp_path: Path, fake_embeddings) -> None:
    # As SqliteStore / PostgresStore code does it.
    with ChromaStore.from_conn_string(":memory:", index={"dims": FAKE_DIMS, "embed": fake_embeddings}) as store:
        store.setup()
        store.put(("docs",), "d1", {"text": "hello"})
        assert store.get(("docs",), "d1").value == {"text": "hello"}
        folder = store.settings.data_dir
    assert not folder.exists()  # the throwaway directory went with the store
    with pytest.raises(StoreBackendError):
        store.setup()
    with ChromaStore.from_conn_string(str(tmp_path / "kept")) as store:
        store.setup()
        store.put(("docs",), "d1", {"text": "kept"})
    assert (tmp_path / "kept" / "catalog.sqlite").exists()

    # As SqliteSaver code does it.
    builder = StateGraph(int)
    builder.add_node("inc", lambda x: x + 1)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    with SqliteCheckpointer.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        saver.setup()
        graph = builder.compile(checkpointer=saver)
        assert graph.invoke(1, {"configurable": {"thread_id": "t"}}) == 2
    with SqliteCheckpointer.from_conn_string(":memory:") as saver:
        saver.setup()
        assert builder.compile(checkpointer=saver).invoke(5, {"configurable": {"thread_id": "t"}}) == 6
        folder = saver.path.parent
    assert not folder.exists()


async def test_asetup_and_async_from_conn_string_work_as_on_langgraphs_stores_and_savers(
    tmp_path: Path, fake_embeddings
) -> None:
    builder = StateGraph(int)
    builder.add_node("inc", lambda x: x + 1)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    async with SqliteCheckpointer.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        await saver.asetup()
        graph = builder.compile(checkpointer=saver)
        assert await graph.ainvoke(1, {"configurable": {"thread_id": "t"}}) == 2
    async with ChromaStore.from_conn_string(
        str(tmp_path / "m"), index={"dims": FAKE_DIMS, "embed": fake_embeddings}
    ) as store:
        await store.asetup()
        await store.aput(("docs",), "d1", {"text": "async"})
        assert (await store.aget(("docs",), "d1")).value == {"text": "async"}
