"""Two machines sharing one memory: two processes with their own local directories, one PostgreSQL
database and one real `chroma run` server.

Each "machine" is ``tests/helpers/pg_machine.py``: a process that opened
``Memory.open(url, chroma_client=HttpClient(...))`` and runs the commands it
is sent. What one stores, the other finds as soon as the call returned, also
from its in-memory vector copy; versions, ingestion and promotion are decided
once across both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.common.pg_index_check import check_server_index, checker
from langgraph_memory.catalog import files as catalog_files
from langgraph_memory.ingest import chunk_key, parent_key
from tests.helpers.chroma_server import ChromaServer, shared_chroma_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow  # subprocesses and real servers

HELPER = Path(__file__).parent / "helpers" / "pg_machine.py"
ROOT = Path(__file__).resolve().parents[1]
DIMS = 16


class MachineError(Exception):
    pass


class Machine:
    """The test's side of one machine process: ``call("put", ns=..., ...)``."""

    def __init__(self, url: str, server: ChromaServer, local_dir: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("LANGGRAPH_MEMORY_DIR", None)
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPER), url, f"{server.host}:{server.port}", str(local_dir), str(DIMS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(local_dir.parent / f"{local_dir.name}.log", "w"),  # noqa: SIM115 - the child keeps it
            text=True,
            env=env,
        )
        self.log = local_dir.parent / f"{local_dir.name}.log"

    def ready(self) -> None:
        """Wait for the process's "ready" (started separately, so both machines start at once)."""
        self._answer()

    def _answer(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise MachineError(f"the machine process ended: {self.log.read_text()[-3000:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise MachineError(f"{reply['error']}: {reply['message']}")
        return reply["ok"]

    def send(self, cmd: str, **args: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self.proc.stdin.flush()

    def call(self, cmd: str, **args: Any) -> Any:
        self.send(cmd, **args)
        return self._answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("close")
                self.proc.wait(timeout=60)
            except (MachineError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def both(a: Machine, b: Machine, cmd: str, go: Path, **args: Any) -> tuple[Any, Any]:
    """Send ``cmd`` to both machines, release them together, return both answers."""
    a.send(cmd, go=str(go), **args)
    b.send(cmd, go=str(go), **args)
    go.touch()
    return a._answer(), b._answer()


@pytest.fixture
def machines(
    pg_database: str,
    shared_chroma_server: ChromaServer,  # noqa: F811
    tmp_path: Path,
) -> Iterator[tuple[Machine, Machine]]:
    """Two machine processes on a new database; the module's tests share one Chroma server (none stops it)."""
    opened: list[Machine] = []
    try:
        for name in ("machine-a", "machine-b"):
            opened.append(Machine(pg_database, shared_chroma_server, tmp_path / name))
        for m in opened:
            m.ready()
        yield opened[0], opened[1]
    finally:
        for m in opened:
            m.close()


def test_each_finds_at_once_what_the_other_stored(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    assert a.call("ping")["local"] != b.call("ping")["local"]
    a.call("put", ns=["notes", "desk"], key="a1", value={"text": "carry trades unwind when volatility spikes"})
    found = b.call("search", ns=["notes", "desk"], query="carry trades unwind when volatility spikes", limit=1)
    assert found["hits"][0][0] == "a1" and found["hits"][0][1] == pytest.approx(1.0, abs=1e-5)
    b.call("put", ns=["notes", "desk"], key="b1", value={"text": "momentum fades after earnings"})
    found = a.call("search", ns=["notes", "desk"], query="momentum fades after earnings", limit=1)
    assert found["hits"][0][0] == "b1"
    assert a.call("get", ns=["notes", "desk"], key="b1") == {"text": "momentum fades after earnings"}


def test_the_in_memory_vector_copy_follows_the_other_machines_writes(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    # Enough items that B's search of the whole collection loads it into memory.
    a.call("bulk", ns=["notes", "bulk"], prefix="n", n=450)
    warm = b.call("search", ns=["notes"], query="n bulk note number 7", limit=3)
    assert warm["resident"] and warm["cached"] == 450
    assert warm["hits"][0][0] == "n-7"
    for i in range(3):
        text = f"small namespace fact {i}: the fed pivots in march"
        a.call("put", ns=["notes", "user-7"], key=f"s{i}", value={"text": text})
        # A small namespace: B scores it exactly, from its in-memory copy, which must hold A's new item.
        got = b.call("search", ns=["notes", "user-7"], query=text, limit=1)
        assert got["plan"].startswith("exact"), got["plan"]
        assert got["resident"] and got["cached"] == 451 + i
        assert got["hits"][0][0] == f"s{i}" and got["hits"][0][1] == pytest.approx(1.0, abs=1e-5)
    # A change and a delete reach it too.
    a.call("put", ns=["notes", "user-7"], key="s0", value={"text": "rewritten: the ecb holds rates"})
    got = b.call("search", ns=["notes", "user-7"], query="rewritten: the ecb holds rates", limit=1)
    assert got["hits"][0][0] == "s0" and got["hits"][0][1] == pytest.approx(1.0, abs=1e-5)
    assert got["cached"] == 453


def test_the_typed_api_on_one_machine_is_recalled_on_the_other(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    lesson_id = a.call("lesson", text="A 5-day lookback whipsaws in sideways markets")
    got = b.call("lessons", context="A 5-day lookback whipsaws in sideways markets", k=1)
    assert got == [[lesson_id, "A 5-day lookback whipsaws in sideways markets"]]


def test_one_hundred_versions_from_two_machines_are_exactly_1_to_100(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = machines
    got_a, got_b = both(a, b, "strategies", tmp_path / "go-versions", name="mean-revert", n=50)
    assert len(got_a) == len(got_b) == 50
    assert sorted(got_a + got_b) == list(range(1, 101))
    assert got_a == sorted(got_a) and got_b == sorted(got_b)  # each machine's own versions rise
    assert a.call("versions", name="mean-revert") == list(range(1, 101))
    assert b.call("versions", name="mean-revert") == list(range(1, 101))


def test_the_same_file_ingested_on_both_is_stored_once(
    machines: tuple[Machine, Machine],
    pg_database: str,
    shared_chroma_server: ChromaServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = machines
    doc = tmp_path / "shared" / "memo.md"
    doc.parent.mkdir()
    body = "".join(f"Paragraph {i}: the desk cut gross exposure after the {i}th drawdown. " for i in range(400))
    doc.write_text(f"# Risk memo\n\n{body}\n")
    got_a, got_b = both(a, b, "ingest", tmp_path / "go-ingest", path=str(doc))
    statuses = sorted([got_a[0]["status"], got_b[0]["status"]])
    assert statuses[1] == "ingested" and statuses[0] in ("busy", "duplicate"), statuses
    chunks = max(got_a[0]["chunks"], got_b[0]["chunks"])
    assert chunks > 1 and min(got_a[0]["chunks"], got_b[0]["chunks"]) == 0
    # One copy: one ingestion record, each chunk and parent once.
    store = checker(pg_database, shared_chroma_server, tmp_path / "checker")
    try:
        with store.catalog.read() as conn:
            rows = catalog_files.list_files(conn)
        assert len(rows) == 1 and rows[0].complete and rows[0].n_chunks == chunks
        expected = {chunk_key(rows[0].sha256, i) for i in range(rows[0].n_chunks)}
        expected |= {parent_key(rows[0].sha256, i) for i in range(rows[0].n_parents)}
        stored = [it.key for it in store.search(("documents",), limit=10_000)]
        assert len(stored) == len(set(stored)) and set(stored) == expected
    finally:
        store.close()
    # Ingesting again anywhere finds it stored.
    assert b.call("ingest", path=str(doc))[0]["status"] == "duplicate"


def test_a_session_is_promoted_once_when_both_try(machines: tuple[Machine, Machine], tmp_path: Path) -> None:
    a, b = machines
    # One topic (the fake model gives different texts unrelated vectors: a topic change ends a session).
    texts = ["remember: our desk never holds overnight risk above 2 percent"] * 3
    sessions = a.call("turns", thread="t-1", texts=texts, importance=0.9)
    assert len(set(sessions)) == 1
    sid = sessions[0]
    got_a, got_b = both(a, b, "promote", tmp_path / "go-promote", session_id=sid)
    # One of them promoted the session; the other found it promoted.
    assert not (got_a and got_b), (got_a, got_b)
    promoted = got_a or got_b
    assert len(promoted) == 3 and len(set(promoted)) == 3
    again = b.call("promote", session_id=sid)
    assert again == []
    for key in promoted:
        assert a.call("get", ns=["episodes"], key=key) is not None


def test_concurrent_writers_keep_the_server_index_whole(
    machines: tuple[Machine, Machine],
    pg_database: str,
    shared_chroma_server: ChromaServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Both machines write at once; every item then finds itself by its own vector, in Chroma and through search."""
    a, b = machines
    errors: list[BaseException] = []

    def run(m: Machine, prefix: str) -> None:
        try:
            m.call("bulk", ns=["notes", prefix], prefix=prefix, n=300)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m, p)) for m, p in ((a, "ma"), (b, "mb"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    check_server_index(pg_database, shared_chroma_server, tmp_path / "checker", expect=600)
