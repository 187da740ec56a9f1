"""The fixture ``chroma_server``: a fresh ``chroma run`` server per test, which it may kill and restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.common.chroma_server import ChromaServer, free_port

__all__ = ["ChromaServer", "chroma_server", "free_port"]


@pytest.fixture
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A fresh ``chroma run`` server on loopback, for this test only (it may be killed and restarted)."""
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server"))
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        pytest.fail(f"could not start a Chroma server: {exc}")
    try:
        yield server
    finally:
        server.stop()
