"""One test per rough edge a new user hit trying the README, each against the real thing.

1. ``create_store_tool`` put ``"id"`` in the stored value, so its own memory scored under the 30 % threshold.
2. Namespace templates read only ``config["configurable"]``: LangGraph's runtime ``context=`` and LangMem's
   ``{langgraph_user_id}`` did not work.
3. ``store.as_vectorstore()`` was writable and handed out internal metadata.
4. Code written for LangGraph's stores and savers calls ``setup()``/``asetup()`` and ``from_conn_string(...)``.
5. README snippets used names they never defined (``tests/test_doc_examples.py`` now runs every snippet).
6. The install line named an unpublished distribution; no extras; no ``py.typed``.
7. The first query paused seconds to load the model without a word.
"""

from __future__ import annotations

import json
import logging
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph

from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.errors import ReadOnlyError, StoreBackendError
from langgraph_memory.graph.nodes import format_namespace, recall_node, store_node
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.graphs import react_graph

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- 1


@pytest.mark.slow
def test_1_store_tool_stores_the_text_alone_and_it_scores_like_langmems_copy(data_dir: Path, real_embeddings) -> None:
    langmem = pytest.importorskip("langmem")
    store = ChromaStore(data_dir=data_dir, index={"dims": 384, "embed": real_embeddings})
    try:
        text = "The user prefers short morning briefings with charts"
        cfg = {"configurable": {"user_id": "ours"}}
        key = create_store_tool(store=store).invoke({"content": text}, cfg)
        assert store.get(("memories", "ours"), key).value == {"content": text}  # no "id" beside the text
        g = react_graph(
            store,
            [langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"))],
            [{"name": "manage_memory", "args": {"content": text, "action": "create"}}],
        )
        g.invoke({"messages": [HumanMessage("remember")]}, {"configurable": {"user_id": "langmem"}})
        query = "what format does the user like for briefings?"
        ours = store.search(("memories", "ours"), query=query)[0].score
        theirs = store.search(("memories", "langmem"), query=query)[0].score
        assert ours >= MIN_RELEVANCE and ours == pytest.approx(theirs, abs=1e-6)
        recalled = json.loads(
            create_recall_tool(store=store, min_relevance=MIN_RELEVANCE).invoke({"query": query}, cfg)
        )
        assert [h["key"] for h in recalled] == [key]
    finally:
        store.close()


# ---------------------------------------------------------------------- 2


@dataclass
class UserContext:
    user_id: str


class NodeState(TypedDict, total=False):
    query: str
    texts: Any
    hits: list[dict[str, Any]]


def test_2_namespace_templates_read_the_runtime_context_and_langmems_placeholder(store: ChromaStore) -> None:
    b = StateGraph(NodeState, context_schema=UserContext)
    b.add_node("remember", store_node(("memories", "{user_id}"), values="texts"))
    # Fake vectors: no relevance threshold (the 30 % rule is tested with real scores in test_hybrid.py).
    b.add_node(
        "recall", recall_node(("memories", "{langgraph_user_id}"), query="query", output_key="hits", min_relevance=None)
    )
    b.add_edge(START, "remember")
    b.add_edge("remember", "recall")
    b.add_edge("recall", END)
    graph = b.compile(store=store)
    out = graph.invoke({"texts": ["likes espresso"], "query": "coffee"}, context=UserContext(user_id="alice"))
    assert [h["namespace"] for h in out["hits"]] == [["memories", "alice"]]
    assert store.search(("memories", "alice"))[0].value["content"] == "likes espresso"

    # Tools in a ToolNode read it too, and a dict context works as well as a dataclass.
    tools = [
        create_store_tool(("memories", "{langgraph_user_id}")),
        create_recall_tool(("memories", "{user_id}"), min_relevance=None),
    ]
    g = react_graph(
        store,
        tools,
        [
            {"name": "store_memory", "args": {"content": "trades the Nikkei"}},
            {"name": "recall_memory", "args": {"query": "Nikkei"}},
        ],
        context_schema=dict,
    )
    msgs = g.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "bob"})["messages"]
    key, recalled = [m.content for m in msgs if isinstance(m, ToolMessage)]
    assert store.get(("memories", "bob"), key) is not None
    assert [h["key"] for h in json.loads(recalled)] == [key]

    # Outside a graph: either placeholder from either key; the context wins over configurable.
    assert format_namespace(("memories", "{user_id}"), {"configurable": {"langgraph_user_id": "u1"}}) == (
        "memories",
        "u1",
    )
    assert format_namespace("{langgraph_user_id}", {"configurable": {"user_id": "u2"}}) == ("u2",)


# ---------------------------------------------------------------------- 3


def test_3_as_vectorstore_is_read_only_with_clean_metadata(store: ChromaStore) -> None:
    store.put(("research", "desk1"), "f1", {"content": "Carry unwinds in volatility spikes", "confidence": 0.7})
    vs = store.as_vectorstore("research")
    for write in (
        lambda: vs.add_texts(["bypassing the catalog"]),
        lambda: vs.delete(ids=["f1"]),
        lambda: vs.delete_collection(),
    ):
        with pytest.raises(ReadOnlyError, match="read-only"):
            write()
    (doc,) = vs.similarity_search("Carry unwinds in volatility spikes", k=1)
    assert doc.page_content == "Carry unwinds in volatility spikes"
    assert doc.metadata == {
        "content": "Carry unwinds in volatility spikes",
        "confidence": 0.7,
        "namespace": ["research", "desk1"],
        "key": "f1",
    }
    assert [r.key for r in store.search(("research",))] == ["f1"]  # nothing changed behind the store's back


# ---------------------------------------------------------------------- 4


def test_4_code_written_for_langgraphs_stores_and_savers_runs_unchanged(tmp_path: Path, fake_embeddings) -> None:
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


async def test_4_async_code_calls_asetup(tmp_path: Path, fake_embeddings) -> None:
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


# ---------------------------------------------------------------------- 5


def test_5_every_readme_snippet_is_run() -> None:
    from tests.test_doc_examples import BLOCKS, MARKER

    readme = [block for name, block in BLOCKS if name.startswith("README.md")]
    assert readme and not any(MARKER.search(block) for block in readme)  # none left out as "a shape, not a program"


# ---------------------------------------------------------------------- 6


def test_6_install_from_a_clone_extras_and_type_hints() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "git clone" in readme and "pip install -e ." in readme
    assert "`langmem`" in readme and "`langchain`" in readme  # the extras are named
    assert "--index-url" in readme  # where the CPU build of torch comes from, for machines outside this one
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert any(d.startswith("langmem") for d in extras["langmem"])
    assert any(d.startswith("langchain") for d in extras["langchain"])
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["langgraph_memory"]
    import langgraph_memory

    assert (Path(langgraph_memory.__file__).parent / "py.typed").is_file()
    assert any(d.startswith("mcp") for d in project["project"]["dependencies"])


# ---------------------------------------------------------------------- 7


@pytest.mark.slow
def test_7_loading_the_model_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings

    emb = SentenceTransformerEmbeddings()
    assert not emb.loaded
    with caplog.at_level(logging.INFO, logger="langgraph_memory.embeddings.model"):
        emb.load()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(m.startswith("loading embedding model") for m in messages)
    assert any(m.startswith("loaded embedding model") and " in " in m for m in messages)
    assert emb.loaded and len(emb.embed_query("x")) == 384
    # (The CLI's spinner around the same load: tests/test_cli.py::test_search_shows_a_spinner_while_the_model_loads.)
