"""Subprocess side of the PostgresCheckpointer process tests and crash bench (not collected).

Usage:
    python pg_checkpoint_worker.py setup <url> <go_file>
    python pg_checkpoint_worker.py race <url> <thread_id> <invokes> <go_file>
    python pg_checkpoint_worker.py run <url> <prefix> <threads> <go_file> [timeout]

``race``: invoke a 3-step counter graph on one shared thread, re-reading and
retrying on CheckpointConflictError; prints "ok" per committed invoke,
"conflict" per refused one.
``run``: invoke a counter graph round-robin over ``threads`` threads forever;
after each acknowledged invoke prints "ack <thread> <checkpoint_id> <count>";
while the server is down prints "down <ErrorType> <seconds since the call began>"
(any other error is printed as "error ..." and ends the process).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
from langgraph_memory.errors import CheckpointConflictError, CheckpointUnavailableError


class CountState(TypedDict):
    count: int
    steps: int


def counter_graph(saver: PostgresCheckpointer, steps: int = 3) -> Any:
    def inc(state: CountState) -> dict[str, Any]:
        return {"count": state["count"] + 1, "steps": state["steps"] + 1}

    builder = StateGraph(CountState)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", lambda s: END if s["steps"] % steps == 0 else "inc")
    return builder.compile(checkpointer=saver)


def _wait(go_file: str) -> None:
    while not os.path.exists(go_file):
        time.sleep(0.005)


def _setup(url: str, go_file: str) -> None:
    saver = PostgresCheckpointer(url, timeout=60)
    _wait(go_file)
    saver.setup()
    print("ready", saver.schema_version(), flush=True)
    saver.close()


def _race(url: str, thread_id: str, invokes: str, go_file: str) -> None:
    saver = PostgresCheckpointer(url, timeout=60)
    graph = counter_graph(saver)
    config = {"configurable": {"thread_id": thread_id}}
    saver.setup()
    _wait(go_file)
    done = 0
    while done < int(invokes):
        try:
            graph.invoke({"count": done, "steps": 0}, config)
        except CheckpointConflictError:
            print("conflict", flush=True)
            continue
        done += 1
        print("ok", flush=True)
    saver.close()


def _run(url: str, prefix: str, threads: str, go_file: str, timeout: str = "5") -> None:
    saver = PostgresCheckpointer(url, timeout=float(timeout))
    graph = counter_graph(saver)
    _wait(go_file)
    n = 0
    while True:
        thread_id = f"{prefix}-{n % int(threads)}"
        config = {"configurable": {"thread_id": thread_id}}
        began = time.monotonic()
        try:
            state = graph.get_state(config).values
            result = graph.invoke({"count": state.get("count", 0), "steps": 0}, config)
            head = saver.get_tuple(config)
        except CheckpointUnavailableError as exc:
            print(f"down {type(exc).__name__} {time.monotonic() - began:.3f}", flush=True)
            continue
        except Exception as exc:  # anything untyped is a failure of the test
            print(f"error {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
            raise
        assert head is not None
        print(f"ack {thread_id} {head.checkpoint['id']} {result['count']}", flush=True)
        n += 1


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"setup": _setup, "race": _race, "run": _run}[mode](*args)
