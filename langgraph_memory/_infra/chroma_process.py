"""An embedded Chroma folder driven from a child process, so Chroma never holds this process's GIL.

Chroma's embedded (Rust) client keeps the GIL for the whole of a write: an
``upsert`` of one vector stops every other thread of the process for 6-10 ms
on a quiet machine and 40-180 ms on a loaded one, the event loop of an async
server included. Here the calls run in a child process instead, one per data
directory, and the calling thread only waits on a pipe (which frees the GIL).

Nothing else changes: the parent's ``ChromaHandle`` still takes the folder's
file lock around every call and reopens after another process wrote, and the
child is only ever told what to do while the parent holds that lock. The
child inherits the lock's open file description, so if the parent dies in the
middle of a call the lock stays held until the child has finished it and
exited (a Chroma write cut short can ruin the folder: its HNSW files are rewritten in place, and
SIGKILLs during writes left 3 of 4 folders unusable here). The child
ends when its pipe closes: when the parent closes it, exits, or is killed.
It ignores SIGINT and SIGTERM for that reason: a Ctrl-C or a stop sent to the
whole process group must not cut a write short.

A call that crashes the child (a damaged segment can SIGSEGV) raises
`IndexProcessError` in the parent, which keeps running; the next call
starts a new child.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import pickle
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from langgraph_memory.errors import ConfigError, IndexProcessError

__all__ = ["INDEX_PROCESS_ENV", "ChromaProcess", "RemoteClient", "RemoteCollection", "index_process_wanted"]

logger = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

#: ``0`` keeps an embedded index in the process that opens it (``1``, the default: in a child process).
INDEX_PROCESS_ENV = "LANGGRAPH_MEMORY_INDEX_PROCESS"


def index_process_wanted(explicit: bool | None = None) -> bool:
    """Whether an embedded index runs in a child process: ``explicit``, else ``$LANGGRAPH_MEMORY_INDEX_PROCESS``, else yes.

    Raises:
        ConfigError: the variable holds something other than 1/0 (true/false, yes/no, on/off).

    Examples:
        >>> index_process_wanted(False)
        False
    """
    if explicit is not None:
        return bool(explicit)
    raw = os.environ.get(INDEX_PROCESS_ENV, "1").strip().lower()
    if raw in {"1", "true", "yes", "on", ""}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{INDEX_PROCESS_ENV} must be 1 or 0, got {raw!r}")


class _RemoteFailure(Exception):
    """An error raised in the child that could not be sent back as itself."""


class ChromaProcess:
    """A child process holding embedded Chroma clients, started on first use.

    Examples:
        >>> import tempfile, pathlib
        >>> proc = ChromaProcess()
        >>> client = proc.open(pathlib.Path(tempfile.mkdtemp()))
        >>> col = client.get_or_create_collection("notes", embedding_function=None)
        >>> col.upsert(ids=["a"], embeddings=[[1.0, 0.0]])
        >>> col.count()
        1
        >>> proc.stop()
    """

    def __init__(self, lock_fd: Callable[[], int | None] | None = None) -> None:
        #: gives the file lock's descriptor, which the child keeps open (see the module's docstring).
        self.lock_fd = lock_fd
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._pid = 0
        #: how many children were started: clients of an earlier one are gone with it.
        self.starts = 0
        self._ready = False
        self._mutex = threading.Lock()  # one request on the pipe at a time
        _live.add(self)

    @property
    def running(self) -> bool:
        """Whether the child is up (in this process: a forked copy of the parent starts its own)."""
        return self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The child's process id (None before it starts or after it ended)."""
        return self._proc.pid if self.running and self._proc is not None else None

    def start(self) -> None:
        """Start the child now, without waiting for it (it imports chromadb meanwhile; the first call waits)."""
        with self._mutex:
            if not self.running:
                self._spawn()

    def _spawn(self) -> None:
        if self._proc is not None and self._pid == os.getpid():
            self._reap()
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        keep = [child_read, child_write]
        lock_fd = self.lock_fd() if self.lock_fd is not None else None
        if lock_fd is not None:
            keep.append(lock_fd)
        code = (
            f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
            "from langgraph_memory._infra.chroma import ChromaHandle as H; "
            "from langgraph_memory._infra.chroma_process import _serve; "
            f"_serve({child_read}, {child_write}, H.open_persistent, H.stop_client)"
        )
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", code], pass_fds=keep, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
        finally:
            os.close(child_read)
            os.close(child_write)
        self._proc, self._conn, self._pid = proc, _Pipe(parent_read, parent_write), os.getpid()
        self._ready = False
        self.starts += 1

    def _await_ready(self) -> None:
        proc, conn = self._proc, self._conn
        assert proc is not None and conn is not None
        try:
            ready = conn.recv()  # the child answers once chromadb is imported
        except (EOFError, OSError):
            self._reap()
            raise IndexProcessError(
                f"the Chroma index process did not start (exit status {proc.wait()}); see its error output above"
            ) from None
        if ready != "ready":  # pragma: no cover - only a broken install answers otherwise
            self._reap()
            raise IndexProcessError(f"the Chroma index process answered {ready!r} instead of starting")
        self._ready = True
        logger.debug("started the Chroma index process %d", proc.pid)

    def _reap(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None and self._pid == os.getpid():
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:  # pragma: no cover - a child stuck in Chroma
                logger.warning("the Chroma index process %d did not exit; killing it", self._proc.pid)
                self._proc.kill()
                self._proc.wait()
        self._proc, self._conn = None, None

    def serves(self, client: object) -> bool:
        """Whether ``client`` is a client living in the running child (not in one that has ended)."""
        return (
            isinstance(client, RemoteClient) and client.process is self and self.running and client.start == self.starts
        )

    def call(self, *request: Any, start: int | None = None) -> Any:
        """Send one request and return its answer (or raise what the child raised).

        ``start``: the child the request's client lives in; if that one has
        ended, `IndexProcessError` rather than a request a new child cannot know.
        """
        with self._mutex:
            if start is not None and (start != self.starts or not self.running):
                raise IndexProcessError("the Chroma index process this client lived in has ended; reopen the client")
            if not self.running or self._conn is None:
                self._spawn()
            if not self._ready:
                self._await_ready()
            assert self._conn is not None
            try:
                self._conn.send(request)
                ok, value = self._conn.recv()
            except (EOFError, OSError) as exc:
                status = self._proc.wait() if self._proc is not None else None
                self._proc, self._conn = None, None
                what = request[2] if len(request) == 5 else request[0]
                raise IndexProcessError(
                    f"the Chroma index process ended during {what!r} (exit status {status}); "
                    "the next call starts a new one"
                ) from exc
        if ok:
            return value
        raise value

    def open(self, folder: Path) -> RemoteClient:
        """An embedded client of ``folder``, living in the child."""
        client_id = self.call("open", str(folder))
        return RemoteClient(self, client_id, folder, self.starts)

    def stop(self) -> None:
        """End the child (it stops its clients first). A later call starts a new one."""
        with self._mutex:
            if self._conn is not None and self.running:
                try:
                    self._conn.send(("exit",))
                except OSError:
                    pass
            self._reap()


class _Pipe(Connection):
    """A ``multiprocessing`` connection over two pipe ends (it reads one and writes the other)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        super().__init__(read_fd, readable=True, writable=False)
        self._writer = Connection(write_fd, readable=False, writable=True)

    def send(self, obj: Any) -> None:
        self._writer.send(obj)

    def close(self) -> None:
        self._writer.close()
        super().close()


class RemoteClient:
    """The part of ``chromadb``'s client API the index uses, answered by the child process."""

    def __init__(self, process: ChromaProcess, client_id: int, folder: Path, start: int) -> None:
        self.process = process
        self.client_id = client_id
        self.folder = folder
        #: which child of ``process`` holds it (see `ChromaProcess.serves`).
        self.start = start

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 3 and value[0] == "__collection__":
            return RemoteCollection(self, value[1], value[2])
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(self.process.call("client", self.client_id, name, args, kwargs, start=self.start))

        return method

    def get_settings(self) -> Any:
        """Not an embedded client of this process: a handle must not treat it as one."""
        return None

    def close(self) -> None:
        """Stop the client in the child (the child keeps running)."""
        if self.process.serves(self):
            self.process.call("close", self.client_id)


class RemoteCollection:
    """A Chroma collection in the child: ``upsert``, ``query``, ``get``, ``delete``, ``count``..."""

    def __init__(self, client: RemoteClient, collection_id: int, attrs: dict[str, Any]) -> None:
        self.client = client
        self.collection_id = collection_id
        self.name: str = attrs["name"]
        self.metadata: dict[str, Any] | None = attrs["metadata"]
        self.id: Any = attrs["id"]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            client = self.client
            return client.process.call("collection", self.collection_id, name, args, kwargs, start=client.start)

        return method

    def __repr__(self) -> str:
        return f"RemoteCollection(name={self.name!r})"


_live: weakref.WeakSet[ChromaProcess] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    # Closing the pipes would end the children too; stopping them lets each finish and exit before we do.
    for proc in list(_live):
        try:
            proc.stop()
        except Exception:  # pragma: no cover - best effort at exit
            logger.debug("stopping a Chroma index process failed", exc_info=True)


# ------------------------------------------------------------------ the child


def _picklable_error(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception type may refuse to pickle
        return _RemoteFailure(f"{type(exc).__name__}: {exc}")


def _serve(
    read_fd: int, write_fd: int, open_persistent: Callable[[Path], Any], stop_client: Callable[[Any], None]
) -> None:
    """The child's loop: answer requests until the pipe closes (the opener and stopper are ``ChromaHandle``'s)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    conn = _Pipe(read_fd, write_fd)
    ids = itertools.count(1)
    clients: dict[int, Any] = {}
    collections: dict[int, tuple[int, Any]] = {}

    def as_answer(client_id: int, value: Any) -> Any:
        if type(value).__name__ == "Collection" and hasattr(value, "upsert"):
            col_id = next(ids)
            collections[col_id] = (client_id, value)
            return ("__collection__", col_id, {"name": value.name, "metadata": value.metadata, "id": value.id})
        if isinstance(value, list):
            return [as_answer(client_id, v) for v in value]
        return value

    try:
        conn.send("ready")
    except OSError:  # the parent exited while the child started (a command that failed at once): nothing to serve
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            break
        kind = request[0]
        if kind == "exit":
            break
        try:
            if kind == "open":
                client_id = next(ids)
                clients[client_id] = open_persistent(Path(request[1]))
                answer: Any = client_id
            elif kind == "close":
                client = clients.pop(request[1], None)
                for col_id in [k for k, (owner, _) in collections.items() if owner == request[1]]:
                    del collections[col_id]
                if client is not None:
                    stop_client(client)
                answer = None
            elif kind == "client":
                _, client_id, name, args, kwargs = request
                answer = as_answer(client_id, getattr(clients[client_id], name)(*args, **kwargs))
            else:  # "collection"
                _, col_id, name, args, kwargs = request
                owner, col = collections[col_id]
                answer = as_answer(owner, getattr(col, name)(*args, **kwargs))
            reply: tuple[bool, Any] = (True, answer)
        except Exception as exc:  # noqa: BLE001 - every error goes back to the caller
            reply = (False, _picklable_error(exc))
        try:
            conn.send(reply)
        except OSError:  # the parent is gone: the call is done, nothing more will come
            break
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle
            conn.send((False, _RemoteFailure(f"the answer to {kind} could not be sent back: {exc}")))
    for client in clients.values():
        stop_client(client)
