"""PostgreSQL crashing under a memory: typed errors while it is down, reconnection after, nothing acknowledged lost.

The cluster is a private one (``pg_cluster``) stopped as a crash would stop it
(``pg_ctl stop -m immediate``). Every call of the store and of ``Memory``
raises ``ServerUnavailableError`` (a ``StorageError``) while the server is
down, and the same objects work again once it is back, without reopening.
How fast the errors come and how soon the library is back is measured in
``bench/faults/pg_fault_bench.py``; here a call that does not return is caught by a
generous deadline (a hang, not a slow call).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from bench.common.pg_index_check import DIMS
from langgraph_memory import Memory
from langgraph_memory.errors import ServerUnavailableError, StorageError
from tests.helpers.postgres import PgCluster, create_database

TIMEOUT = 5.0  # the memory's configured timeout (lock_timeout)
HANG = TIMEOUT + 60.0  # a call still running after this is hanging
ROOT = Path(__file__).resolve().parents[1]


def _outcome(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` in a thread; its exception (None if it returned); fail the test if it hangs."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            box.append(exc)
        else:
            box.append(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG)
    if t.is_alive():
        pytest.fail(f"{fn} did not return within {HANG:g} s while PostgreSQL was down")
    return box[0]


def test_every_call_raises_a_typed_error_while_postgres_is_down_and_works_after_restart(
    pg_cluster: PgCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = create_database(pg_cluster.url)
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "local"))
    doc = tmp_path / "memo.md"
    doc.write_text("# Memo\n\nThe desk hedges duration with futures when the curve steepens.\n")
    mem = Memory.open(url, embeddings=DeterministicFakeEmbedding(size=DIMS), lock_timeout=TIMEOUT)
    try:
        store = mem.store
        acked: dict[str, dict[str, Any]] = {}
        for i in range(20):
            store.put(("notes", "desk"), f"k{i}", {"text": f"note {i}"}, index=["text"])
            acked[f"k{i}"] = {"text": f"note {i}"}
        versions = [mem.store_strategy("carry", f"carry variant {i}").version for i in range(3)]
        lesson = mem.store_lesson("Stops too tight in volatile regimes")
        assert versions == [1, 2, 3]

        pg_cluster.crash()
        calls: dict[str, Callable[[], Any]] = {
            "put": lambda: store.put(("notes", "desk"), "down", {"text": "written while down"}),
            "get": lambda: store.get(("notes", "desk"), "k1"),
            "search": lambda: store.search(("notes",), query="note 3", limit=2),
            "search (listing)": lambda: store.search(("notes",), limit=2),
            "delete": lambda: store.delete(("notes", "desk"), "k2"),
            "list_namespaces": lambda: store.list_namespaces(prefix=("notes",)),
            "batch": lambda: store.batch([]) or store.get(("notes", "desk"), "k3"),
            "async get": lambda: __import__("asyncio").run(store.aget(("notes", "desk"), "k1")),
            "store_lesson": lambda: mem.store_lesson("written while down"),
            "get_relevant_lessons": lambda: mem.get_relevant_lessons("stops", min_relevance=None),
            "store_strategy": lambda: mem.store_strategy("carry", "a fourth variant"),
            "versions": lambda: mem.versions("carry"),
            "lineage": lambda: mem.lineage(lesson.id),
            "stats": lambda: mem.stats(),
            "add_turn": lambda: mem.sessions.add_turn("hello", "hi", thread_id="t1"),
            "ingest": lambda: mem.ingest(doc),
        }
        for round_ in range(2):  # the first call finds the connection dead, the next ones cannot connect
            for name, fn in calls.items():
                exc = _outcome(fn)
                assert isinstance(exc, ServerUnavailableError), (round_, name, repr(exc))
                assert isinstance(exc, StorageError) and "unreachable" in str(exc), (name, str(exc))

        pg_cluster.start()  # the same port: the library reconnects by itself
        store.put(("notes", "desk"), "after", {"text": "written after the restart"}, index=["text"])
        acked["after"] = {"text": "written after the restart"}
        for key, value in acked.items():
            got = store.get(("notes", "desk"), key)
            assert got is not None and got.value == value, key
        assert store.search(("notes", "desk"), query="note 7", limit=1)[0].key == "k7"
        assert [v.version for v in mem.versions("carry")] == [1, 2, 3]
        assert mem.store_strategy("carry", "after the restart").version == 4
        assert [h.id for h in mem.get_relevant_lessons("Stops too tight in volatile regimes", k=1)] == [lesson.id]
        assert mem.ingest(doc).files[0].status == "ingested"
    finally:
        mem.close()


@pytest.mark.slow
@pytest.mark.sqlite_only("the bench starts PostgreSQL clusters of its own: it runs the same in both passes")
def test_the_short_fault_bench_loses_nothing(tmp_path: Path) -> None:
    """bench/faults/pg_fault_bench.py in its short form: crashes under writers, kills under the index."""
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "faults" / "pg_fault_bench.py"), "--short", "--json", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode == 3:
        pytest.skip(done.stderr.strip()[-500:])
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    import json

    report = json.loads(out.read_text())
    pg, chroma = report["postgres"], report["chroma"]
    assert pg["crashes"] >= 2 and pg["acked"] > 0
    assert pg["lost"] == 0 and pg["duplicate_versions"] == 0 and pg["version_gaps"] == 0
    assert pg["untyped_errors"] == 0, pg["untyped_samples"]
    assert pg["all_back"] is True
    assert chroma["kills"] >= 2 and chroma["empty_restarts"] == 1
    assert chroma["lost"] == 0 and chroma["untyped_errors"] == 0
    assert all(r["not_found"] == 0 for r in chroma["after_restart"]), chroma["after_restart"]
