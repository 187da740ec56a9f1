"""The schema-v1 checkpoint file the migration test opens, and how it was made.

``v1_checkpoints.sqlite`` beside this module was written by the schema-v1
release of ``SqliteCheckpointer`` (whole checkpoint, channel values included,
in one row). It holds real graph runs: a chat thread (``add_messages``), a
DeltaChannel thread, a pruned DeltaChannel thread (hidden ancestors), a
subgraph-style namespace, pending writes, and a checkpoint whose channel
value has no channel version. Beside the checkpoint tables, ``_expected``
holds what the v1 code returned for every checkpoint (serialized with
LangGraph's ``JsonPlusSerializer``), so the test compares v2 reads of the
migrated file with v1 reads of the same file.

Regenerate only against a schema-v1 tree (the script refuses otherwise)::

    git archive <v1 commit> langgraph_memory | tar -x -C /tmp/v1
    PYTHONPATH=/tmp/v1 .venv/bin/python tests/_checkpoint_helpers/v1_fixture.py
"""

from __future__ import annotations

import operator
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

FIXTURE = Path(__file__).with_name("v1_checkpoints.sqlite")
DELTA_THREADS = ("delta", "pruned")


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def _concat(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class DeltaState(TypedDict):
    log: Annotated[list[str], DeltaChannel(_concat, snapshot_frequency=4)]
    total: Annotated[int, operator.add]


def chat_graph(saver: BaseCheckpointSaver) -> Any:
    def reply(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"re: {state['messages'][-1].content}")], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(ChatState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def delta_graph(saver: BaseCheckpointSaver) -> Any:
    def step(state: DeltaState) -> dict[str, Any]:
        return {"log": [f"s{state['total']}"], "total": 1}

    builder = StateGraph(DeltaState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["total"] >= 10 else "step")
    return builder.compile(checkpointer=saver)


def graph_for(thread_id: str, saver: BaseCheckpointSaver) -> Any:
    return delta_graph(saver) if thread_id in DELTA_THREADS else chat_graph(saver)


def snapshot(saver: Any, thread_id: str) -> dict[str, Any]:
    """Everything a reader sees of a thread: tuples, states, delta histories."""
    graph = graph_for(thread_id, saver)
    tuples = list(saver.list({"configurable": {"thread_id": thread_id}}))
    out: dict[str, Any] = {"tuples": [], "states": [], "histories": []}
    for t in tuples:
        cp = dict(t.checkpoint)
        cp.pop("ts")
        # A DeltaChannel's value may or may not be stored with a checkpoint
        # (v2 returns a snapshot while its version is unchanged); compare it
        # through the reconstructed state below, not here.
        cp["channel_values"] = {k: v for k, v in cp["channel_values"].items() if k != "log"}
        out["tuples"].append((t.config, t.parent_config, t.metadata, cp, t.pending_writes))
        if t.config["configurable"]["checkpoint_ns"] == "":
            out["states"].append(graph.get_state(t.config).values)
        if thread_id in DELTA_THREADS:
            out["histories"].append(saver.get_delta_channel_history(config=t.config, channels=["log"]))
    return out


def _make(path: Path) -> None:
    from langgraph.checkpoint.conformance.test_utils import (
        generate_checkpoint,
        generate_config,
    )

    from langgraph_memory.checkpoint import SCHEMA_VERSION, SqliteCheckpointer

    if SCHEMA_VERSION != 1:
        sys.exit(f"this writes a schema-v1 fixture; the imported code writes v{SCHEMA_VERSION}")
    path.unlink(missing_ok=True)
    with SqliteCheckpointer(path) as saver:
        chat = chat_graph(saver)
        for turn in range(3):
            chat.invoke({"messages": [HumanMessage(f"hello {turn}")]}, {"configurable": {"thread_id": "chat"}})
        latest = saver.get_tuple({"configurable": {"thread_id": "chat"}})
        assert latest is not None
        saver.put_writes(latest.config, [("messages", [HumanMessage("pending")])], "task-pending")
        delta = delta_graph(saver)
        for thread_id in DELTA_THREADS:
            delta.invoke({"log": ["start"], "total": 0}, {"configurable": {"thread_id": thread_id}})
        saver.prune(["pruned"], strategy="keep_latest")
        # A namespace of its own, and a value stored without a channel version.
        config = generate_config("chat", checkpoint_ns="child:1")
        checkpoint = generate_checkpoint(
            channel_values={"kept": [1, 2, 3], "unversioned": "still here"},
            channel_versions={"kept": 1},
        )
        saver.put(config, checkpoint, {"source": "loop", "step": 0}, {"kept": 1})
        expected = {t: snapshot(saver, t) for t in ("chat", *DELTA_THREADS)}
    conn = sqlite3.connect(path)
    type_, blob = JsonPlusSerializer().dumps_typed(expected)
    conn.execute("CREATE TABLE _expected (type TEXT, value BLOB)")
    conn.execute("INSERT INTO _expected VALUES (?, ?)", (type_, blob))
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
    conn.execute("VACUUM")
    conn.close()


def expected(path: Path) -> dict[str, Any]:
    """What the v1 code read from the fixture, per thread (see :func:`snapshot`)."""
    conn = sqlite3.connect(path)
    try:
        type_, blob = conn.execute("SELECT type, value FROM _expected").fetchone()
    finally:
        conn.close()
    return JsonPlusSerializer().loads_typed((type_, blob))


if __name__ == "__main__":
    _make(FIXTURE)
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes)")


def write_v1_file(path: Path, serde: Any, checkpoints: Sequence[tuple[str, str, dict[str, Any], str | None]]) -> None:
    """A schema-v1 file from scratch: the v1 DDL, then rows as the v1 ``put`` wrote them.

    ``checkpoints`` are ``(thread_id, checkpoint_ns, checkpoint, parent_id)``;
    each row holds the whole serialized checkpoint, channel values included.
    """
    import json
    import time

    from langgraph_memory.checkpoint.schema import MIGRATIONS

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        MIGRATIONS[1](conn, serde)
        conn.execute("PRAGMA user_version = 1")
        for thread_id, checkpoint_ns, checkpoint, parent_id in checkpoints:
            type_, blob = serde.dumps_typed(checkpoint)
            conn.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata, run_id, created_at, "
                "delta_channels, hidden) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, 0)",
                (
                    thread_id,
                    checkpoint_ns,
                    checkpoint["id"],
                    parent_id,
                    type_,
                    blob,
                    json.dumps({"source": "loop", "step": 0}),
                    time.time(),
                ),
            )
    finally:
        conn.close()
