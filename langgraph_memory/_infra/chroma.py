"""One safe view of a Chroma folder per process, shared by every store that opens it.

Serialising writes is not enough to share an embedded Chroma folder between
processes: each process keeps the vector index in memory, and a process that
writes on top of an index another process has since changed corrupts it
(measured here: ``InternalError: Error getting embedding`` after two writers
of 2,000 items each, though every write held the lock). So, for an embedded
folder, every Chroma call runs under the folder's file lock, every write bumps
a generation counter in the folder, and a process that finds the counter moved
reopens its client before touching anything. One process alone never reopens.

A Chroma server (``HttpClient``) serialises writers itself: its handle only
serialises threads and never reopens.

With ``process=True`` the embedded client lives in a child process
(`langgraph_memory._infra.chroma_process`), so that Chroma's calls never hold
this process's GIL; the lock and the counter work as above.

The folder ``path`` holds the lock and the counter; the Chroma files live in
the sub-folder that ``locate()`` names (the index can be rebuilt into a new
sub-folder and switched over, see `langgraph_memory.index.chroma`).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph_memory._infra.lock import WriteLock

if TYPE_CHECKING:
    from langgraph_memory._infra.chroma_process import ChromaProcess

__all__ = ["ChromaHandle", "DeferredHttpClient"]

logger = logging.getLogger(__name__)

_GENERATION_FILE = "lgm-generation"
_COUNTER = struct.Struct("<Q")


class ChromaHandle:
    """Access to one Chroma client: ``with handle.use(write=True) as client: ...``."""

    _embedded: dict[str, ChromaHandle] = {}
    _registry_lock = threading.Lock()

    def __init__(
        self,
        client: Any | None,
        path: Path | None,
        lock_timeout: float,
        locate: Callable[[], Path] | None = None,
    ) -> None:
        self.path = path
        self.lock = WriteLock(path / "LOCK" if path is not None else None, lock_timeout)
        self._client = client
        #: the folder the embedded client opens (default: ``path`` itself).
        self.locate: Callable[[], Path] = locate or (lambda: path)  # type: ignore[assignment,return-value]
        #: the folder the current client has open.
        self.folder: Path | None = None
        self._gen_path = path / _GENERATION_FILE if path is not None else None
        self._seen: int | None = None
        self._map: mmap.mmap | None = None
        self._map_pid = 0
        self._dirty = False
        #: bumped whenever the client is replaced; holders of collections re-fetch them.
        self.epoch = 0
        #: the child process running the embedded client, when the handle was asked for one.
        self.process: ChromaProcess | None = None

    # ------------------------------------------------------------ factories

    @classmethod
    def embedded(
        cls, path: Path, lock_timeout: float, locate: Callable[[], Path] | None = None, *, process: bool = False
    ) -> ChromaHandle:
        """The process-wide handle of the embedded folder ``path``.

        ``locate`` names the sub-folder the client opens (read again at every
        reopen); the first store of a process to open ``path`` sets it. With
        ``process`` the client runs in a child process from the next (re)open
        on, for every store of the folder in this process.
        """
        key = str(path.resolve())
        with cls._registry_lock:
            handle = cls._embedded.get(key)
            if handle is None:
                path.mkdir(parents=True, exist_ok=True)
                handle = cls(None, path.resolve(), lock_timeout, locate)
                cls._embedded[key] = handle
            else:
                handle.lock.timeout = min(handle.lock.timeout, lock_timeout)
                if locate is not None:
                    handle.locate = locate
            if process and handle.process is None:
                from langgraph_memory._infra.chroma_process import ChromaProcess

                with handle.lock.hold():
                    handle.drop_client()  # an in-process client of the folder gives way to the child's
                    handle.process = ChromaProcess(handle.lock.fileno)
            return handle

    @classmethod
    def for_client(cls, client: Any, lock_timeout: float) -> ChromaHandle:
        """A handle for a client the caller built (embedded folders still get the safe handle)."""
        settings = client.get_settings() if hasattr(client, "get_settings") else None
        if settings is not None and getattr(settings, "is_persistent", False) and settings.persist_directory:
            handle = cls.embedded(Path(settings.persist_directory), lock_timeout)
            with handle.lock.hold():
                if handle._client is None:
                    handle._client = client
            return handle
        return cls(client, None, lock_timeout)

    # ---------------------------------------------------------------- access

    @property
    def client(self) -> Any:
        """The current client (for read-only helpers outside ``use``, e.g. LangChain views)."""
        with self.use() as client:
            return client

    @contextmanager
    def use(self, *, write: bool = False, wait: float | None = None) -> Iterator[Any]:
        """Hold the lock, make sure the client is current, yield it; record writes.

        Only the outermost ``use`` of a thread checks the generation and, if
        anything in it wrote, bumps it: nested uses cost a re-entrant lock.
        ``wait``: seconds to wait for the lock (default: the lock's timeout);
        past it `LockTimeoutError`.
        """
        with self.lock.hold(wait):
            outermost = self.lock.depth == 1
            if outermost and self.path is not None:
                generation = self._generation()
                if self._client is None or generation != self._seen or self._child_ended():
                    self._reopen(generation)
            try:
                yield self._client
            finally:
                if write:
                    self._dirty = True
                if outermost and self._dirty and self.path is not None:
                    self._dirty = False
                    self._seen = self._bump_generation()

    def _child_ended(self) -> bool:
        # The child process holding the client died (or this is a fork): its client is gone.
        return self.process is not None and not self.process.serves(self._client)

    def _counter(self) -> mmap.mmap:
        """The folder's write counter: 8 bytes mapped shared, so reading it costs no system call."""
        if self._map is None or self._map_pid != os.getpid():
            assert self._gen_path is not None
            fd = os.open(str(self._gen_path), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if os.fstat(fd).st_size < _COUNTER.size:
                    os.ftruncate(fd, _COUNTER.size)
                self._map = mmap.mmap(fd, _COUNTER.size)
            finally:
                os.close(fd)
            self._map_pid = os.getpid()
        return self._map

    def _generation(self) -> int:
        # Readers and writers hold the lock, so the 8 bytes are never torn.
        return _COUNTER.unpack_from(self._counter(), 0)[0]

    def _bump_generation(self) -> int:
        value = self._generation() + 1
        _COUNTER.pack_into(self._counter(), 0, value)
        return value

    @staticmethod
    def open_persistent(folder: Path) -> Any:
        """An embedded client of ``folder``; a failed start leaves no broken client cached.

        Chroma caches one system per folder before starting it, so after a
        failed start (a full disk, a damaged file) every later client of the
        folder in this process would get the broken one and fail with a
        misleading ``AttributeError``.
        """
        import chromadb
        from chromadb.api.shared_system_client import SharedSystemClient
        from chromadb.config import Settings as ChromaSettings

        try:
            return chromadb.PersistentClient(path=str(folder), settings=ChromaSettings(anonymized_telemetry=False))
        except BaseException:
            SharedSystemClient._identifier_to_system.pop(str(folder), None)
            SharedSystemClient._identifier_to_refcount.pop(str(folder), None)
            raise

    @staticmethod
    def stop_client(client: Any) -> None:
        """Stop an embedded client's cached system, so a new client of its folder reads it afresh."""
        if hasattr(client, "process") and hasattr(client, "client_id"):  # a RemoteClient: stopped in its child
            client.close()
            return
        from chromadb.api.shared_system_client import SharedSystemClient

        identifier = getattr(client, "_identifier", None)
        system = SharedSystemClient._identifier_to_system.pop(identifier, None) if identifier else None
        if identifier:
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if system is not None:
            try:
                system.stop()
            except Exception:  # pragma: no cover - best effort
                logger.debug("stopping a Chroma system failed", exc_info=True)

    def drop_client(self) -> None:
        """Stop and forget the embedded client (call holding the lock); the next ``use`` reopens."""
        if self._client is None or self.path is None:
            return
        self.stop_client(self._client)
        self._client = None
        self.folder = None
        self.epoch += 1
        if self.process is not None:
            self.process.stop()  # started again by the next use

    def switched(self) -> None:
        """The folder ``locate()`` names changed: every process (this one too) reopens before its next call."""
        with self.lock.hold():
            self.drop_client()
            if self.path is not None:
                self._seen = self._bump_generation()

    def _reopen(self, generation: int) -> None:
        if self._client is not None:
            logger.debug("Chroma folder %s changed in another process: reopening", self.path)
            self.stop_client(self._client)  # a child process, if any, stays up for the new client
            self._client = None
        folder = Path(self.locate())
        folder.mkdir(parents=True, exist_ok=True)
        self._client = self.process.open(folder) if self.process is not None else self.open_persistent(folder)
        self.folder = folder
        self._seen = generation
        self.epoch += 1


class DeferredHttpClient:
    """A ``chromadb.HttpClient`` made on its first call instead of at once.

    chromadb's constructor asks the server who the caller is, so with the
    server down a process could not even start. Made on first use, a call
    while the server is away fails as any call in an outage does (the index
    then scores searches exactly and catches up once the server answers),
    and the next call tries to connect again.

        client = DeferredHttpClient("127.0.0.1", 8000)   # no request yet
        client.heartbeat()                               # connects now
    """

    def __init__(self, host: str, port: int, *, ssl: bool = False, headers: dict[str, str] | None = None) -> None:
        from chromadb.config import Settings as ChromaSettings

        self.host, self.port, self.ssl, self.headers = host, port, ssl, headers
        self._settings = ChromaSettings(anonymized_telemetry=False)
        self._client: Any = None
        self._lock = threading.Lock()

    def get_settings(self) -> Any:
        """The client's settings (not persistent: a server's), without a request."""
        return self._settings if self._client is None else self._client.get_settings()

    def connect(self) -> Any:
        """The ``HttpClient``, made now if it was not yet (raises what chromadb raises while the server is away)."""
        with self._lock:
            if self._client is None:
                import chromadb

                self._client = chromadb.HttpClient(
                    host=self.host, port=self.port, ssl=self.ssl, headers=self.headers, settings=self._settings
                )
            return self._client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never connect for private lookups (copy, pickle, and this class's own fields)
            raise AttributeError(name)
        return getattr(self.connect(), name)

    def __repr__(self) -> str:
        return f"DeferredHttpClient({'https' if self.ssl else 'http'}://{self.host}:{self.port})"
