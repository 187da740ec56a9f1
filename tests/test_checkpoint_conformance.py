"""LangGraph's checkpointer conformance suite against SqliteCheckpointer and PostgresCheckpointer.

The suite detects which of the eight capabilities (five base, three extended)
the saver implements and runs each capability's async spec. We require all
eight to be detected and passed, and read the report to prove it.

The suite only calls async methods; the ``sync`` mode runs it against a
subclass whose async methods call the sync ones on a thread, so the same
specs check the sync path too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    ALL_CAPABILITIES,
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph_memory.checkpoint import SqliteCheckpointer
from tests.helpers.postgres import create_database, drop_database

# No catalog here: the checkpointers run in the SQLite-catalog run (PostgreSQL's too, on the session's server).
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


class _XorCipher:
    """A toy cipher (no extra dependency): enough to prove ``serde`` is used."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.calls = 0

    def _xor(self, data: bytes) -> bytes:
        return bytes(b ^ self.key[i % len(self.key)] for i, b in enumerate(data))

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        self.calls += 1
        return "xor", self._xor(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return self._xor(ciphertext)


def _sync_only(cls: type) -> type:
    """``cls`` with every async method of the suite answered by the sync method, on a thread."""

    class SyncPath(cls):  # type: ignore[misc,valid-type]
        async def aput(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.put, *args, **kwargs)

        async def aput_writes(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.put_writes, *args, **kwargs)

        async def aget_tuple(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.get_tuple, *args, **kwargs)

        async def alist(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            for item in await asyncio.to_thread(lambda: list(self.list(*args, **kwargs))):
                yield item

        async def adelete_thread(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.delete_thread, *args, **kwargs)

        async def adelete_for_runs(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.delete_for_runs, *args, **kwargs)

        async def acopy_thread(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.copy_thread, *args, **kwargs)

        async def aprune(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.prune, *args, **kwargs)

    SyncPath.__name__ = f"{cls.__name__}SyncPath"
    return SyncPath


def _register(name: str, directory: Path, mode: str = "async", **kwargs: object):  # type: ignore[no-untyped-def]
    counter = iter(range(1_000))
    cls = SqliteCheckpointer if mode == "async" else _sync_only(SqliteCheckpointer)

    @checkpointer_test(name=name)
    async def factory() -> AsyncGenerator[SqliteCheckpointer, None]:
        # A fresh file per capability suite, as the runner expects; opened and
        # closed off the loop, which runs under blockbuster (the tests' no_blocking).
        path = directory / f"conformance-{next(counter)}.sqlite"
        saver = await asyncio.to_thread(cls, path, **kwargs)
        try:
            yield saver
        finally:
            await asyncio.to_thread(saver.close)

    return factory


def _register_postgres(name: str, server_url: str, mode: str = "async", **kwargs: object):  # type: ignore[no-untyped-def]
    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

    cls = PostgresCheckpointer if mode == "async" else _sync_only(PostgresCheckpointer)

    @checkpointer_test(name=name)
    async def factory() -> AsyncGenerator[Any, None]:
        # A fresh database per capability suite, as the runner expects.
        url = await asyncio.to_thread(create_database, server_url)
        saver = cls(url, **kwargs)
        try:
            await saver.asetup()
            yield saver
        finally:
            await saver.aclose()
            await asyncio.to_thread(drop_database, url)

    return factory


async def _assert_full_conformance(registered) -> None:  # type: ignore[no-untyped-def]
    report = await validate(registered)
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures, failures
    assert len(BASE_CAPABILITIES) == 5 and len(EXTENDED_CAPABILITIES) == 3
    assert set(report.results) == {cap.value for cap in ALL_CAPABILITIES}
    for cap in ALL_CAPABILITIES:
        result = report.results[cap.value]
        assert result.detected, f"{cap.value} not detected"
        assert result.passed is True, f"{cap.value} failed: {result.failures}"
        assert result.tests_passed > 0 and result.tests_failed == 0
    assert report.passed_all_base()
    assert report.passed_all()
    assert report.conformance_level() == "FULL"


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_conformance_all_eight_capabilities(tmp_path: Path, mode: str, request: pytest.FixtureRequest) -> None:
    if mode == "async":  # the async methods run under blockbuster, as the LangGraph server runs them
        request.getfixturevalue("no_blocking")
    await _assert_full_conformance(_register("SqliteCheckpointer", tmp_path, mode))


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_conformance_postgres_all_eight_capabilities(pg_url: str, mode: str) -> None:
    """PostgresCheckpointer on a real server: its async methods, then its sync ones."""
    await _assert_full_conformance(_register_postgres("PostgresCheckpointer", pg_url, mode))


async def test_conformance_with_encrypted_serializer(tmp_path: Path, no_blocking: object) -> None:
    cipher = _XorCipher(b"k3y")
    serde = EncryptedSerializer(cipher)
    await _assert_full_conformance(_register("SqliteCheckpointer+cipher", tmp_path, serde=serde))
    assert cipher.calls > 0


async def test_conformance_postgres_with_encrypted_serializer(pg_url: str) -> None:
    cipher = _XorCipher(b"k3y")
    serde = EncryptedSerializer(cipher)
    await _assert_full_conformance(_register_postgres("PostgresCheckpointer+cipher", pg_url, serde=serde))
    assert cipher.calls > 0
