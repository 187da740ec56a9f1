"""One exception hierarchy for everything a user can cause.

Every error raised on purpose by ``langgraph_memory`` derives from
[`LangGraphMemoryError`][langgraph_memory.LangGraphMemoryError], so a caller can catch them all at once:

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
    "ModelFileError",
    "LockTimeoutError",
    "ValidationError",
    "NamespaceError",
    "FilterError",
    "StoreBackendError",
    "IndexProcessError",
    "CheckpointError",
    "CheckpointUnavailableError",
    "CheckpointConflictError",
    "LineageError",
    "LineageCycleError",
    "NotFoundError",
    "ArchivedError",
    "MemoryNotFoundError",
    "MissingExtraError",
    "ArchiveError",
    "ArchiveIntegrityError",
    "InvalidArgumentError",
    "StorageError",
    "DiskFullError",
    "ReadOnlyError",
    "CorruptFileError",
    "ServerUnavailableError",
    "WriteConflictError",
    "MigrationError",
    "ModelMismatchError",
    "BundleError",
    "IngestError",
    "MissingPathError",
    "UnsupportedFileTypeError",
    "EmptyFileError",
    "FileEncodingError",
    "SymlinkLoopError",
    "UnreadableFileError",
    "DamagedDocumentError",
    "TranscriptFormatError",
    "FileChangedError",
]


class LangGraphMemoryError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(LangGraphMemoryError, ValueError):
    """A setting (data directory, config file, model name) is invalid."""


class EmbeddingModelError(LangGraphMemoryError, RuntimeError):
    """The embedding model could not be loaded or failed to embed."""


class ModelFileError(EmbeddingModelError):
    """The model file in the cache is missing or damaged and could not be made again (e.g. no torch here)."""


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


class IndexProcessError(StoreBackendError):
    """The child process that runs the Chroma index (``index_process=True``) failed to start or died."""


class CheckpointError(LangGraphMemoryError, RuntimeError):
    """The checkpoint database could not be read or written."""


class CheckpointUnavailableError(CheckpointError, ConnectionError):
    """The checkpoint server did not answer within the timeout.

    Nothing the failed call was writing is acknowledged; the call may be
    retried once the server is back (the checkpointer reconnects by itself).
    """


class CheckpointConflictError(CheckpointError):
    """Another writer moved the thread on since this one read it.

    Raised instead of storing a second child of the same checkpoint (a forked
    history). Read the thread again (``graph.invoke`` does) and retry.
    """


class LineageError(LangGraphMemoryError, ValueError):
    """A lineage link is invalid (unknown parent, bad id)."""


class LineageCycleError(LineageError):
    """Linking these items would make an item its own ancestor."""


class NotFoundError(LangGraphMemoryError, KeyError):
    """The item, strategy or archive asked for does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not.
        return str(self.args[0]) if self.args else ""


class ArchivedError(NotFoundError):
    """The item asked for left live memory for the archive; the message says when and how to restore it."""


class MemoryNotFoundError(NotFoundError, ConfigError):
    """The folder holds no memory, and the open never creates one (``read_only=True``, ``create=False``, the
    CLI's reading commands); ``path`` names the folder, which was left untouched."""

    def __init__(self, message: str, path: object = None) -> None:
        super().__init__(message)
        self.path = path


class MissingExtraError(ConfigError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the extra to install,
    as in ``pip install 'langgraph-chroma-memory[postgres]'``."""


class ArchiveError(LangGraphMemoryError, RuntimeError):
    """An archive run, search or restore failed."""


class ArchiveIntegrityError(ArchiveError):
    """An archive file does not match the checksum or count in its manifest."""


class InvalidArgumentError(LangGraphMemoryError, ValueError, TypeError):
    """An argument has the wrong type or an impossible value (``limit="5"``, ``offset=-1``).

    A ``ValueError`` and a ``TypeError`` at once, so code that catches either
    of Python's usual errors for bad arguments catches it too.
    """


class StorageError(LangGraphMemoryError, OSError):
    """A file of the data directory could not be read or written.

    ``path`` names the file. The message says what happened and what to do;
    whatever the failed call was writing was not stored.
    """

    def __init__(self, message: str, path: object = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DiskFullError(StorageError):
    """The disk (or a file size limit) left no room to write; free space and retry."""


class ReadOnlyError(StorageError):
    """Nothing can be written: the memory was opened read-only (``read_only=True``, ``--read-only``), or the data
    directory or one of its files cannot be written (permissions, a read-only mount)."""


class CorruptFileError(StorageError):
    """A file of the data directory is damaged: not the format it should be, or truncated."""


class ServerUnavailableError(StorageError, ConnectionError):
    """The PostgreSQL server holding the catalog (or the Chroma server holding the index) cannot be reached.

    Raised within the configured timeout, never after a hang; nothing of the
    failed call was stored. The library reconnects by itself once the server
    is back, so the same call can simply be retried.
    """


class WriteConflictError(StorageError):
    """A write that read before it took the catalog's write lock found what it read changed by another machine.

    The library retries such a write itself (holding the lock from its
    start); it reaches a caller only if that retry conflicts too.
    """


class MigrationError(StorageError):
    """A catalog's schema or a move between a data directory and a PostgreSQL server could not be done.

    The catalog was written by a newer release (upgrade the package), or a move's target holds a different
    memory, or after copying its row counts differ from the source's (the message names the tables). The source
    is never changed; running the migration again is safe.
    """


class ModelMismatchError(ConfigError):
    """The stored vectors were made by another embedding model than the one configured."""


class BundleError(CorruptFileError):
    """A share bundle is damaged, incomplete, or of an unknown format; nothing of it was imported."""


class IngestError(LangGraphMemoryError):
    """A file or folder given to ``Memory.ingest`` could not be ingested; ``path`` names it.

    Nothing of that file was stored: a file's chunks are written only after
    it was read, checked and chunked without error.
    """

    def __init__(self, message: str, path: object = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingPathError(IngestError, FileNotFoundError):
    """A path given to ingest does not exist (or is a symlink to nothing)."""


class UnsupportedFileTypeError(IngestError, ValueError):
    """A file given by name has a type ingest does not read (see ``langgraph_memory.ingest.SUPPORTED_TYPES``)."""


class EmptyFileError(IngestError, ValueError):
    """A file given by name is empty, or holds no text (a PDF of scanned images, say)."""


class FileEncodingError(IngestError, ValueError):
    """A text file is not valid in its encoding (UTF-8, or a Python file's declared coding).

    ``offset`` is the byte offset of the first bad byte, ``encoding`` the
    encoding it was read with.
    """

    def __init__(self, message: str, path: object = None, *, offset: int, encoding: str) -> None:
        super().__init__(message, path)
        self.offset = offset
        self.encoding = encoding


class SymlinkLoopError(IngestError, OSError):
    """A symbolic link leads back to itself (or to a folder above it)."""


class UnreadableFileError(IngestError, OSError):
    """A file or folder could not be read: permissions, an I/O error, or not a regular file."""


class DamagedDocumentError(IngestError, ValueError):
    """A document's format is damaged or locked (a truncated or encrypted PDF)."""


class TranscriptFormatError(IngestError, ValueError):
    """A file ingested as a conversation is not a transcript ingest reads (see ``langgraph_memory.ingest.transcripts``)."""


class FileChangedError(IngestError, RuntimeError):
    """A file changed while it was being ingested; retry once it is no longer being written."""
