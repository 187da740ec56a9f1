"""A cache in front of any embedding model: each distinct text is embedded once per model.

Vectors are kept in a small in-process LRU and, when a path is given, in a SQLite file that survives
restarts and is shared by the processes of one data directory.

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.embeddings import CachedEmbeddings

    emb = CachedEmbeddings(DeterministicFakeEmbedding(size=8), path="/tmp/lgm-demo/embeddings.sqlite")
    emb.embed_documents(["same text"]); emb.embed_documents(["same text"])
    assert (emb.misses, emb.hits) == (1, 1)

The file is one table keyed by a 64-bit hash of (model, text), so a row is its vector and nothing else:
1.9 KB per 384-d vector, measured, where a ``WITHOUT ROWID`` table keyed by the full hashes took 4.7 KB.
Rows are written by the call that embedded them, in one transaction, and read before the model is asked
(a lookup reads one page). The file is used only for a model that costs more than it does: a text that
took the model under `FILE_MIN_SECONDS` (a fake or precomputed model takes microseconds) is kept in memory
only, since writing it (25-80 us a row here, in WAL mode) would cost more than embedding it again. The
default model takes 2-10 ms a text.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import xxhash
from langchain_core.embeddings import Embeddings

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings
from langgraph_memory.errors import CorruptFileError, EmbeddingModelError, LockTimeoutError, ReadOnlyError, StorageError

__all__ = ["CachedEmbeddings", "embeddings_model_id"]

logger = logging.getLogger(__name__)

# Model ids are recorded in catalogs and embedding caches, so a class keeps the module name its ids were first
# written with when the module moves (else every stored vector would belong to "another model").
_STABLE_MODULE_NAMES = {"langgraph_memory.embeddings.model": "langgraph_memory.embeddings"}


def embeddings_model_id(embeddings: Embeddings) -> str:
    """A stable name for the model behind ``embeddings``, used as the cache key and recorded in the catalog.

    A [`CachedEmbeddings`][langgraph_memory.CachedEmbeddings] is seen through; any other wrapper is a model
    of its own (it may change the vectors), so it is named by its own class.
    """
    if isinstance(embeddings, CachedEmbeddings):
        return embeddings.model_id
    name = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    cls = type(embeddings)
    module = _STABLE_MODULE_NAMES.get(cls.__module__, cls.__module__)
    base = f"{module}.{cls.__qualname__}"
    func = getattr(embeddings, "func", None) or getattr(embeddings, "afunc", None)
    if func is not None and name is None:
        name = f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', repr(func))}"
    return f"{base}:{name}" if name else base


#: A model that took less than this per text (its last call) is asked again rather than the file read or written.
FILE_MIN_SECONDS = 0.0005

# 8 KB pages hold four 1.5 KB vectors where 4 KB pages hold two (1.9 against 2.3 KB a row, measured).
_PAGE_SIZE = 8192
_TABLE = "CREATE TABLE IF NOT EXISTS cached_vectors (key INTEGER PRIMARY KEY, vector BLOB NOT NULL)"
_SELECT = "SELECT key, vector FROM cached_vectors WHERE key IN ({marks})"
_UPSERT = "INSERT OR REPLACE INTO cached_vectors (key, vector) VALUES (?, ?)"
# SQLite's default limit on the parameters of one statement is far above this.
_SELECT_CHUNK = 500

# Each vector carries a checksum of its text's whole hash and its bytes: a flipped bit (bit rot), or two texts
# whose 64-bit keys collide, costs a re-embedding, never a wrong vector.
_CHECKSUM = 8


def _text_hash(model_id: str, text: str) -> bytes:
    return hashlib.sha256(model_id.encode("utf-8") + b"\0" + text.encode("utf-8")).digest()


def _key(text_hash: bytes) -> int:
    return int.from_bytes(text_hash[:8], "little", signed=True)


def _sealed(text_hash: bytes, vector: bytes) -> bytes:
    return vector + xxhash.xxh64_digest(text_hash + vector)


def _opened(text_hash: bytes, blob: bytes) -> bytes | None:
    """The vector bytes of a row, or None if the row is damaged or belongs to another text."""
    vector, check = blob[:-_CHECKSUM], blob[-_CHECKSUM:]
    if len(blob) <= _CHECKSUM or len(vector) % 4 or xxhash.xxh64_digest(text_hash + vector) != check:
        return None
    return vector


def _inode(path: Path) -> int | None:
    """The inode of ``path``, to tell a file from the one that replaced it; None if missing."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _reason(exc: BaseException) -> str:
    """What SQLite or the OS said, without our advice around it (the log line gives its own)."""
    cause = exc.__cause__ if isinstance(exc, StorageError) and exc.__cause__ is not None else exc
    return str(cause)


class CachedEmbeddings(Embeddings):
    """Wrap an ``Embeddings`` so each distinct text is embedded once per model.

    Vectors are kept in a small in-process LRU and, when ``path`` is given, in
    a SQLite file keyed by the model and the text, so the cache survives
    restarts and is shared by processes using one data directory.

    The file is only a cache, so its problems never fail an embedding call:

    * **damaged** (not a database, truncated, malformed), found when opening
      it or while using it: it is moved aside, with its ``-wal`` and ``-shm``
      files, to ``<name>.damaged-<UTC time>`` (kept for inspection; delete it
      when you like), a WARNING names both files, and a fresh cache file
      takes its place. Nothing but re-embedding is lost.
    * **read-only** (permissions, a read-only mount): no ``ReadOnlyError``,
      since nothing depends on the cache. If the file cannot be opened, a
      WARNING names it and the cache runs without it (in memory only); if it
      opens but cannot be written, a WARNING, then reads go on and writes stop.
    * **disk full** or another I/O error while writing: a WARNING (once until
      writing works again); the vectors stay in the in-memory LRU. The same
      at open, or a lock held past the timeout: the cache runs without the file.

    The file is read and written only while the model's last call cost at least ``file_min_seconds`` a text
    (`FILE_MIN_SECONDS`); ``file_min_seconds=0`` uses it for every model. `file_in_use` says whether the file
    is open.

    Examples:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = CachedEmbeddings(DeterministicFakeEmbedding(size=8))
        >>> a = emb.embed_documents(["same text"]); b = emb.embed_documents(["same text"])
        >>> emb.misses, emb.hits
        (1, 1)
    """

    def __init__(
        self,
        inner: Embeddings,
        *,
        path: str | os.PathLike[str] | None = None,
        model_id: str | None = None,
        memory_items: int = 4096,
        file_min_seconds: float = FILE_MIN_SECONDS,
    ) -> None:
        self.inner = inner
        self.model_id = model_id or embeddings_model_id(inner)
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._lru: OrderedDict[bytes, list[float]] = OrderedDict()
        self._lru_size = memory_items
        # One lock for the LRU and the file's connection: a lookup and a write each take microseconds.
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._inode: int | None = None  # of the file self._conn has open
        self._read_only = False  # writing failed for good: reads go on
        self._failing = False  # the last write failed: warn once per streak
        self._model_seconds: float | None = None  # per text, in the model's last call
        self._file_min_seconds = file_min_seconds
        if self.path is not None:
            with self._lock:
                self._open_file()

    @property
    def model_name(self) -> str:
        return self.model_id

    @property
    def file_in_use(self) -> bool:
        """Whether vectors are read from (and written to) the cache file, not only kept in memory."""
        return self._conn is not None

    def close(self) -> None:
        """Close the cache file (the wrapped model is left alone); every vector is already written."""
        with self._lock:
            self._close_conn()

    def flush(self) -> None:
        """Nothing to do: a vector is in the file when the call that embedded it returns."""

    # ------------------------------------------------------------ the file

    def _open_file(self) -> None:
        """Open the cache file (under ``_lock``); a damaged one is replaced, an unusable one skipped."""
        assert self.path is not None
        for attempt in range(3):
            inode = _inode(self.path)
            try:
                conn = _sqlite.connect(self.path, page_size=_PAGE_SIZE)
                try:
                    with _sqlite.guarded(self.path, "open"):
                        _create(conn)
                except BaseException:
                    conn.close()
                    raise
            except CorruptFileError as exc:
                if attempt < 2 and self._move_aside(exc, inode):
                    continue
                logger.warning(
                    "embedding cache %s is damaged and could not be replaced (%s); embedding without "
                    "the cache file (vectors are kept in memory only)",
                    self.path,
                    _reason(exc),
                )
                return
            except (StorageError, LockTimeoutError) as exc:  # read-only, disk full, I/O error, locked
                logger.warning(
                    "embedding cache %s cannot be used (%s); embedding without the cache file "
                    "(vectors are kept in memory only)",
                    self.path,
                    _reason(exc),
                )
                return
            self._conn, self._inode = conn, _inode(self.path)
            return

    def _close_conn(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.close()
        except sqlite3.Error:  # e.g. a final WAL checkpoint on a full disk: the WAL stays
            logger.debug("closing the embedding cache %s failed", self.path, exc_info=True)
        self._conn = None

    def _move_aside(self, exc: BaseException, inode: int | None) -> bool:
        """Rename the damaged cache file (and its -wal, -shm) out of the way; True if it is gone."""
        assert self.path is not None
        if inode is None or _inode(self.path) != inode:
            # Already replaced (another process moved it aside first) or gone: just reopen.
            return True
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.damaged-{stamp}-{n}")
            n += 1
        try:
            # Side files first: an opener that comes between finds the damaged
            # file alone, fails and retries, never a fresh file with an old WAL.
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    os.replace(side, target.with_name(target.name + suffix))
            os.replace(self.path, target)
        except FileNotFoundError:
            pass  # another process got there first
        except OSError as err:
            logger.warning("could not move the damaged embedding cache %s aside: %s", self.path, err)
            return False
        logger.warning(
            "embedding cache %s is damaged (%s); moved it aside to %s and started a fresh cache "
            "(texts will be embedded again as needed; delete the old file when you like)",
            self.path,
            _reason(exc),
            target,
        )
        return True

    def _file_failed(self, exc: BaseException, what: str) -> bool:
        """Handle an error of the cache file (under ``_lock``); True if a fresh file was opened to retry on."""
        err = _sqlite.translate(exc, self.path or "", what)
        if isinstance(err, CorruptFileError):
            self._close_conn()
            if self._move_aside(exc, self._inode):
                self._open_file()
            return self._conn is not None
        if isinstance(err, ReadOnlyError):
            self._read_only = True
            logger.warning(
                "embedding cache %s cannot be written (%s); new vectors are kept in memory only",
                self.path,
                _reason(exc),
            )
        elif not self._failing:
            self._failing = True
            logger.warning(
                "could not %s the embedding cache %s (%s); vectors are kept in memory only until it works again",
                what,
                self.path,
                _reason(exc),
            )
        return False

    # ---------------------------------------------------------- read, write

    def _lookup(self, hashes: Sequence[bytes]) -> dict[bytes, list[float]]:
        """The vectors of ``hashes`` found in the LRU, then in the file (under ``_lock``)."""
        found: dict[bytes, list[float]] = {}
        missing: list[bytes] = []
        for h in hashes:
            vec = self._lru.get(h)
            if vec is not None:
                self._lru.move_to_end(h)
                found[h] = vec
            else:
                missing.append(h)
        if not missing or not self._file_pays():
            return found
        assert self._conn is not None  # _file_pays() says the file is open
        by_key = {_key(h): h for h in missing}
        try:
            rows = _select(self._conn, list(by_key))
        except sqlite3.Error as exc:  # the texts are embedded anew instead
            self._file_failed(exc, "read")
            return found
        damaged = 0
        for key, blob in rows:
            h = by_key[key]
            raw = _opened(h, bytes(blob))
            if raw is None:  # embedded anew, and the row replaced
                damaged += 1
                continue
            found[h] = np.frombuffer(raw, dtype=np.float32).tolist()
            self._remember(h, found[h])
        if damaged:
            logger.info("%d rows of the embedding cache %s failed their checksum; re-embedding", damaged, self.path)
        return found

    def _remember(self, h: bytes, vec: list[float]) -> None:
        """Keep ``vec`` in the LRU (under ``_lock``)."""
        self._lru[h] = vec
        self._lru.move_to_end(h)
        while len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)

    def _store(self, pairs: list[tuple[bytes, list[float]]]) -> None:
        """Keep new vectors in the LRU and write them to the file (under ``_lock``)."""
        for h, vec in pairs:
            self._remember(h, vec)
        if not pairs or self._read_only or not self._file_pays():
            return
        # One float32 matrix for the whole batch, then a row view per vector.
        matrix = np.asarray([vec for _, vec in pairs], dtype=np.float32)
        rows = [(_key(h), _sealed(h, matrix[i].tobytes())) for i, (h, _) in enumerate(pairs)]
        for _ in range(2):  # once more into a fresh file if this one turns out damaged
            if self._conn is None or self._read_only:
                return
            try:
                _insert(self._conn, rows)
            except sqlite3.Error as exc:
                if self._file_failed(exc, "write"):
                    continue
                return
            if self._failing:
                self._failing = False
                logger.info("writing to the embedding cache %s works again", self.path)
            return

    def _file_pays(self) -> bool:
        """Whether the file is worth a read or a write: it is open and the model costs more (under ``_lock``)."""
        return self._conn is not None and (self._model_seconds is None or self._model_seconds >= self._file_min_seconds)

    def _timed(self, seconds: float, texts: int) -> None:
        self._model_seconds = seconds / max(texts, 1)

    def _split(self, texts: list[str]) -> tuple[list[bytes], dict[bytes, list[float]], list[str], list[bytes]]:
        hashes = [_text_hash(self.model_id, t) for t in texts]
        with self._lock:
            found = self._lookup(hashes)
        todo_texts: list[str] = []
        todo_hashes: list[bytes] = []
        seen: set[bytes] = set()
        for text, h in zip(texts, hashes, strict=True):
            if h not in found and h not in seen:
                seen.add(h)
                todo_texts.append(text)
                todo_hashes.append(h)
        self.hits += len(texts) - len(todo_texts)
        self.misses += len(todo_texts)
        return hashes, found, todo_texts, todo_hashes

    def _finish(
        self, hashes: list[bytes], found: dict[bytes, list[float]], todo_hashes: list[bytes], vectors: list[list[float]]
    ) -> list[list[float]]:
        if len(vectors) != len(todo_hashes):
            raise EmbeddingModelError(
                f"embedding model {self.model_id} returned {len(vectors)} vectors for {len(todo_hashes)} texts"
            )
        # Models return lists of floats (LangChain's contract) or arrays: convert only arrays (and other
        # sequences); a list is kept as it is, not copied (a bulk load's thousand vectors a batch).
        fresh = [
            (h, v if type(v) is list else v.tolist() if hasattr(v, "tolist") else list(v))
            for h, v in zip(todo_hashes, vectors, strict=True)
        ]
        with self._lock:
            self._store(fresh)
        found.update(fresh)
        return [found[h] for h in hashes]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        hashes, found, todo, todo_hashes = self._split(list(texts))
        vectors: list[list[float]] = []
        if todo:
            started = time.perf_counter()
            vectors = self.inner.embed_documents(todo)
            self._timed(time.perf_counter() - started, len(todo))
        return self._finish(hashes, found, todo_hashes, vectors)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        # The file's reads and writes go to a worker thread: nothing of SQLite runs on the event loop.
        hashes, found, todo, todo_hashes = await asyncio.to_thread(self._split, list(texts))
        vectors: list[list[float]] = []
        if todo:
            started = time.perf_counter()
            vectors = await self.inner.aembed_documents(todo)
            self._timed(time.perf_counter() - started, len(todo))
        return await asyncio.to_thread(self._finish, hashes, found, todo_hashes, vectors)

    def embed_query(self, text: str) -> list[float]:
        # Queries go through the same cache: agents repeat their questions.
        return self.embed_documents([text])[0] if self._is_symmetric else self.inner.embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        if self._is_symmetric:
            return (await self.aembed_documents([text]))[0]
        return await asyncio.to_thread(self.inner.embed_query, text)

    @property
    def _is_symmetric(self) -> bool:
        # sentence-transformers models embed queries and documents alike; other
        # models (e.g. with instruction prefixes) may not, so only cache those.
        return isinstance(self.inner, SentenceTransformerEmbeddings)


def _create(conn: sqlite3.Connection) -> None:
    """Make the table; read the first page now, so that damage shows at open."""
    conn.execute(_TABLE)
    conn.execute("SELECT 1 FROM cached_vectors LIMIT 1").fetchall()


def _select(conn: sqlite3.Connection, keys: list[int]) -> list[tuple[int, bytes]]:
    rows: list[tuple[int, bytes]] = []
    for start in range(0, len(keys), _SELECT_CHUNK):
        chunk = keys[start : start + _SELECT_CHUNK]
        rows += conn.execute(_SELECT.format(marks=",".join("?" * len(chunk))), chunk).fetchall()
    return rows


def _insert(conn: sqlite3.Connection, rows: list[tuple[int, bytes]]) -> None:
    conn.execute("BEGIN")
    try:
        conn.executemany(_UPSERT, rows)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite may have rolled back itself (disk full); keep the first error
                pass
        raise
