"""``scripts/chroma_server.sh`` brings a folder's server back on the port it had.

Clients are configured once with the server's URL (``LANGGRAPH_MEMORY_CHROMA_URL``,
``chromadb.HttpClient(host, port)``); a server that came back elsewhere after a
crash would leave them failing for good. These tests run the script as a user
types it, kill the real ``chroma run`` with SIGKILL, and check that the address
keeps working, and that a port another program took is refused with a message
instead of silently replaced.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "chroma_server.sh"

# The script and a bare Chroma server: no data directory, so no catalog, and the same in both passes.
pytestmark = pytest.mark.sqlite_only("a Chroma server folder and its script only: no catalog involved")


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHROMA_BIN": str(Path(sys.executable).parent / "chroma")}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A server folder; its server is stopped afterwards whatever the test did."""
    try:
        yield tmp_path / "chroma-server"
    finally:
        _script("stop", str(tmp_path / "chroma-server"))


def test_a_server_killed_with_sigkill_comes_back_on_its_port_and_old_clients_recover(folder: Path) -> None:
    first = _script("start", str(folder))
    assert first.returncode == 0, first.stderr
    url = first.stdout.strip()
    host, port = url.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
    notes = client.get_or_create_collection("notes")
    notes.add(ids=["a", "b"], embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], documents=["alpha", "beta"])

    os.kill(int((folder / "pid").read_text()), signal.SIGKILL)  # a crash: nothing is flushed or cleaned up
    down = _script("status", str(folder))
    assert down.returncode != 0

    again = _script("start", str(folder))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == url
    # The client built before the crash, with the old address, works again without being rebuilt.
    got = client.get_collection("notes").query(query_embeddings=[[0.0, 1.0, 0.0]], n_results=1)
    assert got["ids"] == [["b"]]


def test_a_kept_port_another_program_holds_is_refused_with_a_message(folder: Path) -> None:
    first = _script("start", str(folder))
    assert first.returncode == 0, first.stderr
    port = int((folder / "port").read_text())
    assert _script("stop", str(folder)).returncode == 0

    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        refused = _script("start", str(folder))

    assert refused.returncode == 4
    assert str(port) in refused.stderr and str(folder / "port") in refused.stderr
    assert refused.stdout == ""  # no URL printed for a server that is not there
    assert _script("status", str(folder)).returncode != 0
    # Once the port is free again, the folder's server takes it back.
    back = _script("start", str(folder))
    assert back.returncode == 0, back.stderr
    assert back.stdout.strip() == f"http://127.0.0.1:{port}"
