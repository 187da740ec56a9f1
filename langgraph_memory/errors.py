"""One exception hierarchy for everything a user can cause.

Every error raised on purpose by ``langgraph_memory`` derives from
:class:`LangGraphMemoryError`, so a caller can catch them all at once::

    from langgraph_memory.errors import LangGraphMemoryError

    try:
        store.put(("research",), "k", {"content": ""})
    except LangGraphMemoryError as exc:
        print(exc)

Messages say what was wrong and what to do about it.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError

__all__ = [
    "LangGraphMemoryError",
    "ConfigError",
    "EmbeddingModelError",
    "LockTimeoutError",
    "ValidationError",
    "NamespaceError",
    "FilterError",
    "StoreBackendError",
    "CheckpointError",
    "LineageError",
    "LineageCycleError",
    "NotFoundError",
    "ArchiveError",
    "ArchiveIntegrityError",
]


class LangGraphMemoryError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(LangGraphMemoryError, ValueError):
    """A setting (data directory, config file, model name) is invalid."""


class EmbeddingModelError(LangGraphMemoryError, RuntimeError):
    """The embedding model could not be loaded or failed to embed."""


class LockTimeoutError(LangGraphMemoryError, TimeoutError):
    """Another process held the data directory's write lock for too long."""


class ValidationError(LangGraphMemoryError, ValueError):
    """A value does not match the schema of the collection it is written to."""


class NamespaceError(LangGraphMemoryError, InvalidNamespaceError):
    """A namespace is empty, has empty or dotted labels, or is reserved.

    A subclass of LangGraph's ``InvalidNamespaceError``, so code written
    against LangGraph's stores catches it unchanged.
    """


class FilterError(LangGraphMemoryError, ValueError):
    """A search filter uses an unsupported operator or shape."""


class StoreBackendError(LangGraphMemoryError, RuntimeError):
    """Chroma reported an error that is not the caller's fault."""


class CheckpointError(LangGraphMemoryError, RuntimeError):
    """The checkpoint database could not be read or written."""


class LineageError(LangGraphMemoryError, ValueError):
    """A lineage link is invalid (unknown parent, bad id)."""


class LineageCycleError(LineageError):
    """Linking these items would make an item its own ancestor."""


class NotFoundError(LangGraphMemoryError, KeyError):
    """The item, strategy or archive asked for does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not.
        return str(self.args[0]) if self.args else ""


class ArchiveError(LangGraphMemoryError, RuntimeError):
    """An archive run, search or restore failed."""


class ArchiveIntegrityError(ArchiveError):
    """An archive file does not match the checksum or count in its manifest."""
