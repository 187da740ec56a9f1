"""``from_conn_string`` for our store and checkpointer: a path, or ``":memory:"`` for throwaway state.

LangGraph's ``SqliteStore``, ``SqliteSaver`` and their Postgres cousins are
opened with ``from_conn_string(...)``; code written for them passes a file
path or ``":memory:"``. Ours keep real files, so ``":memory:"`` becomes a
temporary folder removed when the store or checkpointer closes.

    >>> path, tmp = conn_string_path(":memory:")
    >>> path.exists(), tmp is not None
    (True, True)
    >>> tmp.cleanup()
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from langgraph_memory._infra.pg import is_postgres_url, redact
from langgraph_memory.errors import ConfigError

__all__ = ["conn_string_path", "open_conn_string", "MEMORY"]

MEMORY = ":memory:"

T = TypeVar("T")


def conn_string_path(
    conn_string: str | os.PathLike[str],
) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    """The path a connection string names, and the temporary folder to remove on close (``":memory:"``).

    ``sqlite:///path`` and ``file:path`` are read as ``path``; anything else
    with a scheme is a [`ConfigError`][langgraph_memory.errors.ConfigError]
    (a ``postgresql://`` address is not a path: `open_conn_string()` hands it on as it is).
    """
    raw = os.fspath(conn_string)
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"from_conn_string needs a path or ':memory:', got {conn_string!r}")
    if raw == MEMORY:
        tmp = tempfile.TemporaryDirectory(prefix="lgm-memory-")
        return Path(tmp.name), tmp
    for prefix in ("sqlite:///", "file:"):
        if raw.startswith(prefix):
            raw = raw[len(prefix) :].split("?", 1)[0]
            break
    else:
        if "://" in raw:
            raise ConfigError(
                f"{redact(raw)!r} is not a path: give a data directory, ':memory:' for a temporary folder, "
                "or a postgresql:// address"
            )
    return Path(raw).expanduser(), None


def open_conn_string(
    conn_string: str | os.PathLike[str], opener: Callable[[Any, bool], T], *, address: bool = False
) -> tuple[T, Any]:
    """``opener(path, temporary)`` on the path ``conn_string`` names; returns it and the temporary folder to remove.

    With ``address``, a ``postgresql://`` address is passed to ``opener``
    unchanged (a str), so the same call opens a memory on a server; without,
    it is a `ConfigError`. The temporary folder (``":memory:"``) is removed at
    once if opening fails.
    """
    if is_postgres_url(conn_string):
        if not address:
            raise ConfigError(
                f"{redact(str(conn_string))!r} is a PostgreSQL address: this opens a file. "
                "Use PostgresCheckpointer.from_conn_string(...) for threads on a server."
            )
        return opener(str(conn_string).strip(), False), None
    path, tmp = conn_string_path(conn_string)
    try:
        return opener(path, tmp is not None), tmp
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
