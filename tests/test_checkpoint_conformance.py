"""LangGraph's checkpointer conformance suite against SqliteCheckpointer.

The suite detects which of the eight capabilities (five base, three extended)
the saver implements and runs each capability's async spec. We require all
eight to be detected and passed, and read the report to prove it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    ALL_CAPABILITIES,
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph_memory.checkpoint import SqliteCheckpointer


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


def _register(name: str, directory: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    counter = iter(range(1_000))

    @checkpointer_test(name=name)
    async def factory() -> AsyncGenerator[SqliteCheckpointer, None]:
        # A fresh file per capability suite, as the runner expects; opened and
        # closed off the loop, which runs under blockbuster (the tests' no_blocking).
        path = directory / f"conformance-{next(counter)}.sqlite"
        saver = await asyncio.to_thread(SqliteCheckpointer, path, **kwargs)
        try:
            yield saver
        finally:
            await asyncio.to_thread(saver.close)

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


async def test_conformance_all_eight_capabilities(tmp_path: Path, no_blocking: object) -> None:
    await _assert_full_conformance(_register("SqliteCheckpointer", tmp_path))


async def test_conformance_with_encrypted_serializer(tmp_path: Path, no_blocking: object) -> None:
    cipher = _XorCipher(b"k3y")
    serde = EncryptedSerializer(cipher)
    await _assert_full_conformance(_register("SqliteCheckpointer+cipher", tmp_path, serde=serde))
    assert cipher.calls > 0
