"""Where the data lives, which model embeds, and the tunable defaults.

Every setting resolves in the same order: explicit argument, then environment
variable, then the config file, then the built-in default:

    from langgraph_memory.config import Settings

    settings = Settings.resolve(data_dir="/tmp/lgm-demo")
    print(settings.data_dir, settings.embedding_model)
    print(settings.chroma_dir)          # /tmp/lgm-demo/chroma

The config file is TOML, found at ``$LANGGRAPH_MEMORY_CONFIG``, else
``./langgraph-memory.toml``, else ``~/.config/langgraph-memory/config.toml``:

    data_dir = "/var/lib/agent-memory"
    embedding_model = "sentence-transformers/all-MiniLM-L6-v2"
    lock_timeout = 30

``lock_timeout`` is the one name, everywhere (store, checkpointer, lineage,
archive), for how long to wait for another process's write before raising
[`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError].
"""

from __future__ import annotations

import errno
import hashlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_memory._infra.pg import is_postgres_url, redact
from langgraph_memory.errors import ConfigError, DiskFullError, ReadOnlyError, StorageError

__all__ = [
    "Settings",
    "resolve_embedding_model",
    "resolve_lock_timeout",
    "DATA_DIR_ENV",
    "EMBEDDING_MODEL_ENV",
    "LOCK_TIMEOUT_ENV",
    "CONFIG_FILE_ENV",
    "DEFAULT_DATA_DIR",
    "DEFAULT_EMBEDDING_MODEL",
    "LOCK_TIMEOUT_SECONDS",
    "DEFAULT_K",
    "CATALOG_FILE",
    "MANIFEST_FILE",
    "MIN_RELEVANCE",
    "ARCHIVE_AFTER_DAYS",
    "LOW_CONFIDENCE_THRESHOLD",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_SEARCH_LIMIT",
    "MCP_PORT",
    "MCP_TOKEN_ENV",
    "RETIRED_ARCHIVE_AFTER_DAYS",
    "SUPERSEDED_ARCHIVE_AFTER_DAYS",
    "EQUITY_CURVE_POINTS",
]

DATA_DIR_ENV = "LANGGRAPH_MEMORY_DIR"
#: A ``postgresql://`` address: the catalog on a PostgreSQL server, shared by every machine given it.
URL_ENV = "LANGGRAPH_MEMORY_URL"
#: Where a memory kept on a server holds what stays local (the embedding cache, archive files, an embedded index).
LOCAL_DIR_ENV = "LANGGRAPH_MEMORY_LOCAL_DIR"
EMBEDDING_MODEL_ENV = "EMBEDDING_MODEL"
LOCK_TIMEOUT_ENV = "LANGGRAPH_MEMORY_LOCK_TIMEOUT"
CONFIG_FILE_ENV = "LANGGRAPH_MEMORY_CONFIG"

DEFAULT_DATA_DIR = "./memory"
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# File names inside the data directory (the catalog) and its archive folder (the manifest).
CATALOG_FILE = "catalog.sqlite"
MANIFEST_FILE = "manifest.sqlite"

# A write lock that cannot be had within 30 s is an error, not a hang: a stuck writer must not stall every caller.
LOCK_TIMEOUT_SECONDS = 30.0
# Recall returns five results unless told otherwise: enough context for a model, little to read.
DEFAULT_K = 5
# Results under 30 % relevance are noise to an agent; recall nodes, tools and the typed research API drop them
# by default.
MIN_RELEVANCE = 0.3
# Lessons and low-confidence findings idle for 90 days are archived: rarely recalled, still restorable.
ARCHIVE_AFTER_DAYS = 90
LOW_CONFIDENCE_THRESHOLD = 0.5
# What agent-facing tools (the MCP server, create_store_tool) accept, so an LLM's arguments stay bounded: at most
# 10 tags of at most 50 characters each, and between 1 and 20 search results.
MAX_TAGS = 10
MAX_TAG_CHARS = 50
MAX_SEARCH_LIMIT = 20
# Limits on what is stored, the same through the store, the typed API, the CLI and MCP (past one:
# ValidationError, or NamespaceError for a namespace). Measured in bench/store/limits_bench.py: a put grows
# linearly with the value's size (its text is chunked and embedded), so the value cap bounds a put's
# time and memory; labels and keys are rows in indexed catalog columns, kept short.
MAX_NAMESPACE_LABELS = 16  # labels in one namespace
MAX_LABEL_CHARS = 128  # characters in one namespace label
MAX_KEY_CHARS = 512  # characters in one key
MAX_VALUE_BYTES = 1_000_000  # a value as compact UTF-8 JSON
MAX_VALUE_DEPTH = 64  # nesting of dicts and lists inside a value
# The MCP server's HTTP port, and the environment variable holding its bearer token.
MCP_PORT = 8765
MCP_TOKEN_ENV = "LANGGRAPH_MEMORY_MCP_TOKEN"
# A retired item (soft-deleted) is archivable at once, since nothing should recall it; a superseded one after the
# usual 90 idle days, in every collection (also those kept forever otherwise: strategies, regimes, tools).
RETIRED_ARCHIVE_AFTER_DAYS = 0.0
SUPERSEDED_ARCHIVE_AFTER_DAYS = 90.0
# A backtest's equity curve is kept as this many evenly spaced points (plus its statistics).
EQUITY_CURVE_POINTS = 20

_CONFIG_FILE_CANDIDATES = (
    Path("langgraph-memory.toml"),
    Path("~/.config/langgraph-memory/config.toml"),
)


def _config_file() -> Path | None:
    explicit = os.environ.get(CONFIG_FILE_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"{CONFIG_FILE_ENV}={explicit!r} does not name a file; unset it or point it at a TOML config file."
            )
        return path
    for candidate in _CONFIG_FILE_CANDIDATES:
        path = candidate.expanduser()
        if path.is_file():
            return path
    return None


def _read_config_file() -> dict[str, Any]:
    path = _config_file()
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    # Allow either a flat file or a [langgraph_memory] table.
    return dict(data.get("langgraph_memory", data))


def resolve_lock_timeout(lock_timeout: float | None = None) -> float:
    """The lock timeout in seconds: argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT`` > config file > 30.

    Examples:
        >>> resolve_lock_timeout(5)
        5.0
    """
    return _resolve_lock_timeout(lock_timeout, None)


def _resolve_lock_timeout(lock_timeout: Any, file_cfg: dict[str, Any] | None) -> float:
    value = lock_timeout if lock_timeout is not None else os.environ.get(LOCK_TIMEOUT_ENV)
    if value is None or value == "":
        value = (_read_config_file() if file_cfg is None else file_cfg).get("lock_timeout", LOCK_TIMEOUT_SECONDS)
    try:
        timeout = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"lock_timeout must be a number of seconds, got {value!r}") from exc
    if not timeout > 0:
        raise ConfigError(f"lock_timeout must be positive, got {timeout}")
    return timeout


def resolve_embedding_model(model: str | None = None) -> str:
    """The embedding model name: argument > ``EMBEDDING_MODEL`` > config file > default."""
    return _resolve_embedding_model(model, None)


def _resolve_embedding_model(model: str | None, file_cfg: dict[str, Any] | None) -> str:
    """`resolve_embedding_model()` given the config file's contents, or None to read it if needed."""
    chosen = model or os.environ.get(EMBEDDING_MODEL_ENV)
    if not chosen:
        chosen = (_read_config_file() if file_cfg is None else file_cfg).get("embedding_model")
    return str(chosen or DEFAULT_EMBEDDING_MODEL)


def _default_local_dir(url: str) -> Path:
    """A local folder named after the server and database of ``url`` (never its password)."""
    digest = hashlib.sha256(redact(url).encode()).hexdigest()[:12]
    return Path("~/.cache/langgraph-memory").expanduser() / f"server-{digest}"


@dataclass(frozen=True)
class Settings:
    """Resolved settings for one data directory.

    Use `resolve()` rather than the constructor so that environment and
    config file are consulted. [`Memory`][langgraph_memory.Memory]
    resolves them once and hands the same object to the store, the
    checkpointer and the archiver (``mem.settings is mem.store.settings``).
    """

    data_dir: Path
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    lock_timeout: float = LOCK_TIMEOUT_SECONDS
    #: The ``postgresql://`` address of the catalog, or None for the SQLite catalog in `data_dir`.
    #: With an address, `data_dir` is the local directory (embedding cache, archive files).
    catalog_url: str | None = None

    @classmethod
    def resolve(
        cls,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        embedding_model: str | None = None,
        lock_timeout: float | None = None,
        local_dir: str | os.PathLike[str] | None = None,
    ) -> Settings:
        """Resolve settings: argument > environment > config file > default.

        ``data_dir`` may be a ``postgresql://`` address (also from
        ``LANGGRAPH_MEMORY_URL`` or the config file's ``url``): the catalog then
        lives on that server, and ``local_dir`` (argument >
        ``LANGGRAPH_MEMORY_LOCAL_DIR`` > config file > a folder under
        ``~/.cache/langgraph-memory`` named after the server) holds what stays local.

        Examples:
            >>> Settings.resolve("postgresql://bob:pw@db:5432/mem", local_dir="/tmp/lgm-local").catalog_url
            'postgresql://bob:pw@db:5432/mem'
            >>> str(Settings.resolve("postgresql://bob:pw@db:5432/mem", local_dir="/tmp/lgm-local").data_dir)
            '/tmp/lgm-local'
        """
        if isinstance(data_dir, str) and not data_dir.strip():
            # Path("") is the current directory: a memory would be spread over whatever folder the caller is in.
            raise ConfigError(
                "data_dir is empty; name a folder (such as './memory'), or leave it out for the default "
                f"({DATA_DIR_ENV}, the config file, or {DEFAULT_DATA_DIR})"
            )
        file_cfg = _read_config_file()
        raw_dir = (
            data_dir
            if data_dir is not None
            else os.environ.get(URL_ENV)
            or os.environ.get(DATA_DIR_ENV)
            or file_cfg.get("url")
            or file_cfg.get("data_dir")
            or DEFAULT_DATA_DIR
        )
        model = _resolve_embedding_model(embedding_model, file_cfg)
        timeout = _resolve_lock_timeout(lock_timeout, file_cfg)
        if is_postgres_url(raw_dir):
            url = str(raw_dir).strip()
            local = local_dir or os.environ.get(LOCAL_DIR_ENV) or file_cfg.get("local_dir") or _default_local_dir(url)
            return cls(
                data_dir=Path(local).expanduser().resolve(),
                embedding_model=str(model),
                lock_timeout=timeout,
                catalog_url=url,
            )
        path = Path(raw_dir).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(f"data directory {path} exists and is not a directory; choose another path.")
        return cls(data_dir=path.resolve(), embedding_model=str(model), lock_timeout=timeout)

    def __repr__(self) -> str:
        # The address may carry a password: a repr ends up in logs and tracebacks.
        url = None if self.catalog_url is None else redact(self.catalog_url)
        return (
            f"Settings(data_dir={self.data_dir!r}, embedding_model={self.embedding_model!r}, "
            f"lock_timeout={self.lock_timeout!r}, catalog_url={url!r})"
        )

    @property
    def where(self) -> str:
        """What this memory is, for messages: the data directory, or the server's address without its password."""
        return redact(self.catalog_url) if self.catalog_url else str(self.data_dir)

    @property
    def chroma_dir(self) -> Path:
        """Folder of the embedded Chroma ``PersistentClient``."""
        return self.data_dir / "chroma"

    @property
    def catalog_path(self) -> Path:
        """SQLite file of the catalog: the truth of every item, vector, lineage link and version."""
        return self.data_dir / CATALOG_FILE

    @property
    def checkpoints_path(self) -> Path:
        """SQLite file of the checkpointer."""
        return self.data_dir / "checkpoints.sqlite"

    @property
    def embedding_cache_path(self) -> Path:
        """SQLite file caching embeddings by model and content hash."""
        return self.data_dir / "embeddings.sqlite"

    @property
    def raw_dir(self) -> Path:
        """Folder for original ingested files, stored by content hash."""
        return self.data_dir / "raw"

    @property
    def archive_dir(self) -> Path:
        """Folder of compressed archives and their manifest."""
        return self.data_dir / "archive"

    @property
    def manifest_path(self) -> Path:
        """SQLite manifest of the archive files, in `archive_dir`."""
        return self.archive_dir / MANIFEST_FILE

    @property
    def lock_path(self) -> Path:
        """The cross-process write lock of the embedded Chroma folder."""
        return self.chroma_dir / "LOCK"

    def ensure_dirs(self) -> None:
        """Create the data directory and its sub-folders if missing.

        Raises:
            ReadOnlyError: the folder cannot be written (permissions, a read-only mount).
            DiskFullError: no room to create it.
            ConfigError: the path cannot hold a folder (``/proc/...``, a file in the way).
        """
        for path in (self.data_dir, self.chroma_dir, self.raw_dir, self.archive_dir):
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._folder_error(path, exc) from exc

    def has_memory(self) -> bool:
        """Whether the data directory holds a memory (its catalog).

        Always True for a memory on a server: its tables are made on first open.
        """
        if self.catalog_url is not None:
            return True
        return self.catalog_path.is_file()

    def _folder_error(self, path: Path, exc: OSError) -> StorageError | ConfigError:
        """A typed error for a folder of the memory that could not be made, naming it and the fix."""
        why = exc.strerror or str(exc)
        where = f"the data directory {self.data_dir}" if path == self.data_dir else f"{path} (in {self.data_dir})"
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return ReadOnlyError(
                f"cannot create {where}: {why}. This process cannot write there: choose a folder it can write "
                "(data_dir=, --data-dir or $LANGGRAPH_MEMORY_DIR) or fix the folder's permissions; a memory "
                "already there can be read with read_only=True (--read-only).",
                path,
            )
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return DiskFullError(f"cannot create {where}: {why}; free some space and retry.", path)
        return ConfigError(
            f"cannot create {where}: {why}. Choose a data directory on a file system that holds ordinary "
            "folders (data_dir=, --data-dir or $LANGGRAPH_MEMORY_DIR)."
        )
