"""The MCP HTTP server announces its address only once a client can connect.

``on_listening`` (what ``langgraph-memory mcp`` prints as "listening on ...")
used to fire after ``bind`` but before ``listen``: a client that connected at
once, as tests and supervisors do, was refused on a loaded machine. The
callback here connects while the server has not started serving at all, so
the test does not depend on timing.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from langgraph_memory import Memory
from langgraph_memory.mcp.server import serve


class _Stop(Exception):
    pass


def test_announced_address_accepts_connections(data_dir: Path, fake_embeddings) -> None:
    connected: list[bool] = []

    def on_listening(url: str) -> None:
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=30):
            connected.append(True)
        raise _Stop  # stop before serving; serve must release its socket

    with Memory.open(data_dir, embeddings=fake_embeddings) as mem, pytest.raises(_Stop):
        serve(mem, transport="http", port=0, token="t" * 32, on_listening=on_listening)
    assert connected == [True]
