"""The example app's client stops at once with a message when its address holds no server of the app.

``langgraph dev --port 2024`` serves on another port when 2024 is taken, so a
client told 2024 may reach another program there (which may answer nothing
at all) or nothing. The client must say so within seconds and name the
setting to change, instead of retrying for minutes. Its successful path, two
runs through the HTTP API, is what ``tests/test_langgraph_server.py`` drives
and ``scripts/fresh_clone.sh`` runs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.sqlite_only("runs the example client against a port; no catalog involved")

CLIENT = Path(__file__).resolve().parents[1] / "examples" / "langgraph_app" / "client.py"


@pytest.fixture
def empty_reply_port() -> Iterator[int]:
    """A loopback port where a program accepts connections and closes them without a reply."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        server.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_client(url: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "LANGGRAPH_URL": url}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(CLIENT)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    return done, time.monotonic() - started


def test_the_client_names_the_address_and_the_setting_when_a_port_gives_an_empty_reply(empty_reply_port: int) -> None:
    url = f"http://127.0.0.1:{empty_reply_port}"
    done, took = _run_client(url)
    assert done.returncode == 1
    assert url in done.stderr and "LANGGRAPH_URL" in done.stderr
    assert "Traceback" not in done.stderr
    assert took < 60  # imports included; the SDK's own retries took 90 s


def test_the_client_names_the_address_and_the_setting_when_nothing_listens() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    done, _took = _run_client(url)
    assert done.returncode == 1
    assert url in done.stderr and "LANGGRAPH_URL" in done.stderr
    assert "Traceback" not in done.stderr
