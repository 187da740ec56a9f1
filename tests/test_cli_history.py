"""``langgraph-memory history`` and ``--as-of``, run as a user types them (the installed command, a wide terminal).

Memory is written the way a graph writes it (a ``store_node`` in a thread), reworded in a later thread, and a
lesson is reworded and retired; the command line then shows each version with what changed and which thread
did it, and reads get, list, search and the typed queries as they stood before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph_memory import Memory
from langgraph_memory.graph import store_node

CLI = Path(sys.executable).with_name("langgraph-memory")


class _State(TypedDict, total=False):
    texts: list[dict[str, Any]]


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    return subprocess.run(
        [str(CLI), "--data-dir", str(data_dir), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _json(data_dir: Path, *args: str) -> Any:
    done = _cli(data_dir, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("cli-history") / "memory"
    with Memory.open(data_dir) as mem:  # the default model: the command line searches with it too
        b = StateGraph(_State)
        b.add_node("remember", store_node(("memories", "{user_id}"), values="texts"))
        b.add_edge(START, "remember")
        b.add_edge("remember", END)
        graph = mem.compile(b)
        onboarding = {"configurable": {"thread_id": "onboarding", "user_id": "u1"}}
        graph.invoke({"texts": [{"id": "pref", "text": "prefers TypeScript for tooling"}]}, onboarding)
        lesson = mem.store_lesson("tight stops get hit by noise on momentum entries")
        before = datetime.now(UTC)
        review = {"configurable": {"thread_id": "review", "user_id": "u1"}}
        graph.invoke({"texts": [{"id": "pref", "text": "prefers Rust for tooling"}]}, review)
        reworded = {**lesson.model_dump(mode="json"), "lesson": "wide stops cost more than they save"}
        mem.store.put(("lessons",), lesson.id, reworded)
        mem.retire(lesson.id, "the backtest had a bug")
    return {"dir": data_dir, "before": before.isoformat(), "lesson": lesson.id}


def test_history_lists_versions_newest_first_with_what_changed_and_which_thread(memory: dict[str, Any]) -> None:
    found = _json(memory["dir"], "history", "memories/u1/pref")
    newest, oldest = found["versions"]
    assert (newest["value"]["text"], oldest["value"]["text"]) == (
        "prefers Rust for tooling",
        "prefers TypeScript for tooling",
    )
    assert newest["valid_to"] is None and oldest["change"] == "put" and oldest["thread_id"] == "review"
    assert newest["made_by"] == {"change": "put", "thread_id": "review", "run_id": None}
    assert newest["changes"] == [
        {"field": "text", "old": "prefers TypeScript for tooling", "new": "prefers Rust for tooling"}
    ]
    assert oldest["created"] is True and oldest["made_by"] is None

    table = _cli(memory["dir"], "history", "pref")  # a bare key found in its one namespace
    assert table.returncode == 0, table.stderr
    assert "History of memories/u1/pref (2 versions, newest first)" in table.stdout
    assert "text: prefers TypeScript for tooling -> prefers Rust for tooling" in table.stdout
    assert "review" in table.stdout and "created" in table.stdout

    lesson = _json(memory["dir"], "history", memory["lesson"])  # a typed record, by its id
    assert [v["made_by"] and v["made_by"]["change"] for v in lesson["versions"]] == ["retire", "put", None]
    assert lesson["versions"][0]["changes"] == [{"field": "lifecycle", "old": "active", "new": "retired"}]


def test_read_commands_answer_as_of_a_moment(memory: dict[str, Any]) -> None:
    d, before = memory["dir"], memory["before"]
    assert _json(d, "get", "pref", "--as-of", before)["value"]["text"] == "prefers TypeScript for tooling"
    assert _json(d, "get", "pref")["value"]["text"] == "prefers Rust for tooling"
    listed = _json(d, "list", "memories", "--as-of", before)
    assert [it["value"]["text"] for it in listed["items"]] == ["prefers TypeScript for tooling"]
    spaces = _json(d, "list", "--as-of", before)["namespaces"]
    assert {tuple(s["namespace"]) for s in spaces} == {("memories", "u1"), ("lessons",)}
    hits = _json(d, "search", "which language for tooling", "--namespace", "memories", "--as-of", before)
    assert [h["value"]["text"] for h in hits] == ["prefers TypeScript for tooling"]
    then = _json(d, "research", "get_relevant_lessons", "--context", "stops on momentum entries", "--as-of", before)
    assert [r["record"]["lesson"] for r in then["results"]] == ["tight stops get hit by noise on momentum entries"]
    now = _json(d, "research", "get_relevant_lessons", "--context", "stops on momentum entries")
    assert now["results"] == []  # retired since
    table = _cli(d, "get", "pref", "--as-of", before)
    assert table.returncode == 0
    assert "│ as of      │ " + before in table.stdout and '"text": "prefers TypeScript for tooling"' in table.stdout


def test_before_anything_was_stored_nothing_is_found(memory: dict[str, Any]) -> None:
    assert _cli(memory["dir"], "list", "--as-of", "2000-01-01").returncode == 1
    missing = _cli(memory["dir"], "get", "pref", "--as-of", "2000-01-01")
    assert (
        missing.returncode == 1 and "no memory with key 'pref' as of 2000-01-01T23:59:59.999999+00:00" in missing.stderr
    )


def test_a_bad_moment_or_an_unknown_item_is_a_clear_error(memory: dict[str, Any]) -> None:
    bad = _cli(memory["dir"], "search", "stops", "--as-of", "last tuesday")
    assert bad.returncode == 2 and "--as-of must be an ISO date (2026-03-03)" in bad.stderr
    unknown = _cli(memory["dir"], "history", "no-such-id")
    assert unknown.returncode == 1 and "give namespace/key" in unknown.stderr
    nothing = _cli(memory["dir"], "history", "memories/u1/never")
    assert nothing.returncode == 1 and "nothing was ever stored there" in nothing.stderr
