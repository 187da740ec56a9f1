"""The example app under a real ``langgraph dev`` server, driven through ``langgraph_sdk``.

The server (langgraph-cli with ``[inmem]``) runs on loopback WITHOUT
``--allow-blocking``: it fails any run that blocks its event loop (blockbuster),
as LangGraph Platform does. It loads our store and checkpointer from the
example's ``langgraph.json``, embeds with the packaged MiniLM (offline), and
keeps everything in a temporary data directory that this test reopens after
the server stopped.

Offline: analytics and tracing are off, and any HTTP(S) client honouring the
proxy variables is pointed at a closed local port, so a call to the network
fails fast instead of hanging (none is made on the path this test takes).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from langgraph_memory.platform import open_checkpointer
from langgraph_memory.store import ChromaStore
from tests.helpers import catalog_backend

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "langgraph_app"
OBJECTIVE = "Trend-following momentum strategy for a volatile equity index"
READY_TIMEOUT = 600.0  # a deadline for a loaded machine, not an expected duration


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _closed_port() -> int:
    return _free_port()  # nothing listens there once the socket is closed


def _server_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    dead = f"http://127.0.0.1:{_closed_port()}"
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        LANGGRAPH_MEMORY_DIR=str(data_dir),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        NO_PROXY="127.0.0.1,localhost",
        TOKENIZERS_PARALLELISM="false",
    )
    env.pop("LANGGRAPH_STORE", None)
    env.pop("LANGGRAPH_CHECKPOINTER", None)
    return env


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)  # polling interval while the server starts
    pytest.fail(f"langgraph dev did not answer within {READY_TIMEOUT:.0f} s:\n{log.read_text()[-4000:]}")


def _lost_port(proc: subprocess.Popen[bytes], url: str, log: Path) -> bool:
    """Whether the server exited at once because another process took its port."""
    deadline = time.monotonic() + READY_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/ok", timeout=5)
            return False  # something answers: _wait_ready checks it is ours and ready
        except httpx.HTTPError:
            time.sleep(0.2)
    return proc.poll() is not None and "address already in use" in log.read_text().lower()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C would: the server closes the store and checkpointer
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class Server:
    url: str
    data_dir: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        _stop(self.proc)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """``langgraph dev`` on a copy of the example, ready; stopped afterwards if the test did not."""
    project = tmp_path / "examples"
    shutil.copytree(APP, project / "langgraph_app", ignore=shutil.ignore_patterns(".langgraph_api", "__pycache__"))
    shutil.copy(ROOT / "examples" / "trading_research.py", project)  # the graph reuses its market and backtest
    data_dir = tmp_path / "memory"
    log = tmp_path / "server.log"
    for _attempt in range(3):  # the free port may be taken between asking for it and the server's bind
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        cli = [
            sys.executable,
            "-m",
            "langgraph_cli",
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                cli,
                cwd=project / "langgraph_app",
                env=_server_env(data_dir),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if not _lost_port(proc, url, log):
            break
    try:
        _wait_ready(proc, url, log)
        yield Server(url, data_dir, log, proc)
    finally:
        _stop(proc)


async def _scenario(url: str) -> dict[str, object]:
    client = get_client(url=url, timeout=httpx.Timeout(600.0))
    thread_id = (await client.threads.create())["thread_id"]
    task = {"objective": OBJECTIVE, "seed": 7}

    first = await client.runs.wait(thread_id, "trading_research", input=task)
    assert isinstance(first, dict), first
    assert "__error__" not in first, first
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["review"]  # stopped at the human review: an interrupt
    (question,) = [i["value"] for t in state["tasks"] for i in t.get("interrupts", [])]
    assert question["params"] == first["params"]

    resumed = await client.runs.wait(thread_id, "trading_research", command={"resume": "approve"})
    assert isinstance(resumed, dict) and resumed["status"] == "approved", resumed
    assert (await client.threads.get_state(thread_id))["next"] == []

    second = await client.runs.wait(thread_id, "trading_research", input=task)
    assert isinstance(second, dict) and "__error__" not in second, second

    found = await client.store.search_items(["lessons"], query="momentum lookback too short, whipsawed", limit=10)
    got = await client.store.get_item(["lessons"], first["stored_lesson_ids"][0])
    spaces = await client.store.list_namespaces(prefix=["lessons"])
    return {
        "first": first,
        "second": second,
        "found": found["items"],
        "got": got,
        "spaces": spaces["namespaces"],
        "thread_id": thread_id,
    }


def test_example_app_under_langgraph_dev(server: Server) -> None:
    result = asyncio.run(_scenario(server.url))
    first, second = result["first"], result["second"]
    assert isinstance(first, dict) and isinstance(second, dict)

    # The first run knew nothing, failed its gates, and stored what it learnt.
    assert first["recalled_lessons"] == []
    assert first["iteration"] >= 2
    lesson_ids = first["stored_lesson_ids"]
    assert len(lesson_ids) == first["iteration"] - 1

    # The second run recalled those lessons and passed at its first proposal.
    recalled = {hit["key"] for hit in second["recalled_lessons"]}
    assert set(lesson_ids) <= recalled
    assert second["iteration"] == 1 and second["history"][0]["passed"] is True
    assert second["params"] == first["params"]

    # The store, read and searched over HTTP.
    found = result["found"]
    assert found and {item["key"] for item in found} >= set(lesson_ids)  # type: ignore[union-attr]
    assert "lookback" in found[0]["value"]["lesson"]  # type: ignore[index]
    got = result["got"]
    assert got["key"] == lesson_ids[0] and got["value"]["failure_type"] == "whipsaw"  # type: ignore[index]
    assert ["lessons"] in result["spaces"]  # type: ignore[operator]

    server.stop()
    text = server.log.read_text()
    assert "BlockingError" not in text
    assert "You've set --allow-blocking" not in text  # blockbuster was on for every run
    # Threads go beside the catalog: on its server when the catalog is on PostgreSQL.
    saver = "PostgresCheckpointer" if catalog_backend.active() else "SqliteCheckpointer"
    assert f"Using custom checkpointer: {saver}" in text
    assert "Using custom store" in text and "ChromaStore" in text

    # Everything the server acknowledged is in LANGGRAPH_MEMORY_DIR, readable once it stopped.
    with ChromaStore(data_dir=server.data_dir) as store:
        stored = {item.key for item in store.search(("lessons",), limit=50)}
    assert set(lesson_ids) <= stored
    with open_checkpointer(data_dir=server.data_dir) as threads:  # the server's own factory
        assert result["thread_id"] in {t.thread_id for t in threads.list_threads()}
