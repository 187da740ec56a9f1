"""Time travel: a thread replayed from an earlier checkpoint recalls the memory as of that checkpoint."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from langgraph_memory import Memory
from langgraph_memory.errors import ConfigError
from langgraph_memory.graph import checkpoint_time, recall_node


class Review(TypedDict, total=False):
    strategy: str
    lessons: list[dict[str, Any]]
    approved: bool


def _builder(as_of_checkpoint: bool) -> StateGraph:
    """propose -> approve (recalls the lessons that bear on the strategy) -> decide."""
    b = StateGraph(Review)
    b.add_node("propose", lambda s: {"strategy": s["strategy"].strip()})
    b.add_node(
        "approve",
        recall_node(
            ("lessons",),
            query="strategy",
            output_key="lessons",
            k=10,
            min_relevance=None,
            as_of_checkpoint=as_of_checkpoint,
        ),
    )
    b.add_node("decide", lambda s: {"approved": not any("never" in h["value"]["lesson"] for h in s["lessons"])})
    b.add_edge(START, "propose")
    b.add_edge("propose", "approve")
    b.add_edge("approve", "decide")
    b.add_edge("decide", END)
    return b


def _approval_checkpoint(graph: Any, config: dict[str, Any]) -> Any:
    """The checkpoint the approval step started from, in the thread's first run."""
    first_run = [s for s in graph.get_state_history(config) if s.next == ("approve",)]
    return first_run[-1]


def _keys_and_texts(hits: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((h["key"], h["value"]["lesson"]) for h in hits)


def _change_memory(mem: Memory, lessons: dict[str, Any]) -> None:
    """What the desk learnt after the approval: a lesson reworded, one deleted, one new."""
    reworded = lessons["stops"]
    mem.store.put(("lessons",), reworded.id, {**reworded.model_dump(mode="json"), "lesson": "never use tight stops"})
    mem.store.delete(("lessons",), lessons["costs"].id)
    mem.store_lesson("momentum fails after rate shocks")


def _seed(mem: Memory) -> dict[str, Any]:
    return {
        "stops": mem.store_lesson("tight stops get hit by noise in momentum trades"),
        "costs": mem.store_lesson("momentum turnover eats the edge after costs"),
    }


def _without_scores(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in h.items() if k != "score"} for h in hits]


@pytest.mark.parametrize("ranking", ["cosine", "hybrid"])
def test_a_replay_from_the_approval_checkpoint_recalls_what_the_first_run_recalled(
    data_dir: Path, fake_embeddings: Any, ranking: str
) -> None:
    kwargs: dict[str, Any] = {"ranking": None} if ranking == "cosine" else {}
    with Memory.open(data_dir, embeddings=fake_embeddings, **kwargs) as mem:
        lessons = _seed(mem)
        graph = mem.compile(_builder(as_of_checkpoint=True))
        config = {"configurable": {"thread_id": "review-1"}}
        first = graph.invoke({"strategy": " 60-day momentum "}, config)
        assert first["approved"] is True
        assert _keys_and_texts(first["lessons"]) == sorted(
            (lessons[k].id, lessons[k].lesson) for k in ("stops", "costs")
        )

        _change_memory(mem, lessons)
        at_approval = _approval_checkpoint(graph, config)
        replay = graph.invoke(None, at_approval.config)

        # The step replayed read the memory of its checkpoint: the same lessons, the same values, the same order,
        # the same scores: a version changed since is scored from its kept float32 vectors and, under hybrid
        # ranking, from its kept text against the keyword index as it stood then (the new lesson shares a word
        # with the query, so today's statistics would weigh "momentum" differently).
        assert _without_scores(replay["lessons"]) == _without_scores(first["lessons"])
        assert [h["score"] for h in replay["lessons"]] == pytest.approx(
            [h["score"] for h in first["lessons"]], abs=1e-6
        )
        assert replay["approved"] is True
        # The moment read is the replayed checkpoint's own time (its id carries it; created_at is stamped apart).
        moment = checkpoint_time({"metadata": at_approval.config["configurable"]})
        assert moment is not None
        assert abs((moment - datetime.fromisoformat(at_approval.created_at)).total_seconds()) < 0.01

        # Without the option, the same replay recalls today's memory: the reworded lesson, the new one, not the deleted one.
        today = mem.compile(_builder(as_of_checkpoint=False)).invoke(None, at_approval.config)
        texts = [t for _, t in _keys_and_texts(today["lessons"])]
        assert "never use tight stops" in texts
        assert "momentum fails after rate shocks" in texts
        assert lessons["costs"].lesson not in texts
        assert today["approved"] is False


def test_an_async_replay_recalls_what_the_first_run_recalled(data_dir: Path, fake_embeddings: Any) -> None:
    async def run() -> None:
        async with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
            lessons = _seed(mem)
            graph = mem.compile(_builder(as_of_checkpoint=True))
            config = {"configurable": {"thread_id": "review-async"}}
            first = await graph.ainvoke({"strategy": "60-day momentum"}, config)
            await asyncio.to_thread(_change_memory, mem, lessons)
            states = [s async for s in graph.aget_state_history(config) if s.next == ("approve",)]
            replay = await graph.ainvoke(None, states[-1].config)
            assert _without_scores(replay["lessons"]) == _without_scores(first["lessons"])

    asyncio.run(run())


def test_the_option_on_a_store_without_history_says_so(fake_embeddings: Any) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    graph = _builder(as_of_checkpoint=True).compile(
        checkpointer=InMemorySaver(), store=InMemoryStore(index={"dims": 16, "embed": fake_embeddings})
    )
    with pytest.raises(ConfigError, match="keeps no history"):
        graph.invoke({"strategy": "momentum"}, {"configurable": {"thread_id": "t"}})


def test_without_a_checkpointer_the_option_reads_the_store_itself(data_dir: Path, fake_embeddings: Any) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        mem.store_lesson("tight stops get hit by noise")
        out = _builder(as_of_checkpoint=True).compile(store=mem.store).invoke({"strategy": "stops"})
        assert [h["value"]["lesson"] for h in out["lessons"]] == ["tight stops get hit by noise"]


def test_include_retired_still_recalls_retired_lessons_as_of_the_checkpoint(
    data_dir: Path, fake_embeddings: Any
) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        retired = mem.store_lesson("tight stops get hit by noise")
        mem.retire(retired.id, "a bad sample")
        b = StateGraph(Review)
        b.add_node(
            "approve",
            recall_node(
                "lessons",
                query="strategy",
                output_key="lessons",
                min_relevance=None,
                include_retired=True,
                as_of_checkpoint=True,
            ),
        )
        b.add_edge(START, "approve")
        b.add_edge("approve", END)
        out = mem.compile(b).invoke({"strategy": "stops"}, {"configurable": {"thread_id": "t"}})
        assert [h["key"] for h in out["lessons"]] == [retired.id]
