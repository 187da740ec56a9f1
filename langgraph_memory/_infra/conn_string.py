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

from langgraph_memory.errors import ConfigError

__all__ = ["conn_string_path", "open_conn_string", "MEMORY"]

MEMORY = ":memory:"

T = TypeVar("T")


def conn_string_path(
    conn_string: str | os.PathLike[str],
) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    """The path a connection string names, and the temporary folder to remove on close (``":memory:"``).

    ``sqlite:///path`` and ``file:path`` are read as ``path``; anything else
    with a scheme (``postgresql://...``) is a [`ConfigError`][langgraph_memory.errors.ConfigError].
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
                f"{conn_string!r} is not a path: langgraph-memory keeps its data in local files "
                "(give a path, or ':memory:' for a temporary folder)"
            )
    return Path(raw).expanduser(), None


def open_conn_string(conn_string: str | os.PathLike[str], opener: Callable[[Path, bool], T]) -> tuple[T, Any]:
    """``opener(path, temporary)`` on the path ``conn_string`` names; returns it and the temporary folder to remove.

    The temporary folder (``":memory:"``) is removed at once if opening fails.
    """
    path, tmp = conn_string_path(conn_string)
    try:
        return opener(path, tmp is not None), tmp
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
