"""Fixtures of real ``chroma run`` servers on loopback.

* ``chroma_server``: a fresh server per test, which it may kill and restart.
* ``shared_chroma_server``: one server for a test module whose tests never stop it. A server names the
  collections of each memory by its catalog (``lgm-<catalog id>-...``), so tests with databases of their own
  never see each other's records there; sharing it saves a server start per test (2-4 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.common.chroma_server import ChromaServer, free_port

__all__ = ["ChromaServer", "chroma_server", "free_port", "shared_chroma_server"]


def _serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server"))
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        pytest.fail(f"could not start a Chroma server: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A fresh ``chroma run`` server on loopback, for this test only (it may be killed and restarted)."""
    yield from _serve(tmp_path_factory)


@pytest.fixture(scope="module")
def shared_chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One ``chroma run`` server for the whole module: its tests must not stop, kill or empty it."""
    yield from _serve(tmp_path_factory)
