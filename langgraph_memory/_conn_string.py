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
from pathlib import Path

from langgraph_memory.errors import ConfigError

__all__ = ["conn_string_path", "MEMORY"]

MEMORY = ":memory:"


def conn_string_path(
    conn_string: str | os.PathLike[str],
) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    """The path a connection string names, and the temporary folder to remove on close (``":memory:"``).

    ``sqlite:///path`` and ``file:path`` are read as ``path``; anything else
    with a scheme (``postgresql://...``) is a :class:`ConfigError`.
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
