"""Running under the LangGraph server (``langgraph dev``, LangGraph Platform): the ``langgraph.json`` factories.

The server builds the graph's store and checkpointer from ``langgraph.json``, entering each ``path`` once per
event loop and passing no arguments; the rest of the ``store`` section (``index``, ``ttl``) reaches the process
as JSON in ``LANGGRAPH_STORE``. Where the data lives comes from the environment, as everywhere in this package.
Every loop of one process shares one store and one checkpointer; the last to leave closes them.

    "store": {"path": "langgraph_memory.platform_store", "index": {"dims": 384, "embed": "./embeddings.py:embeddings"}},
    "checkpointer": {"path": "langgraph_memory.platform_checkpointer"}

``docs/langgraph_app.md`` has the whole project, every variable, and why the index runs in a child process.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast
from urllib.parse import urlsplit

from langgraph_memory._infra.chroma_process import INDEX_PROCESS_ENV
from langgraph_memory.config import DATA_DIR_ENV, URL_ENV
from langgraph_memory.errors import ConfigError

if TYPE_CHECKING:  # imported where a factory opens one: `import langgraph_memory` stays cheap
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
    from langgraph_memory.store import ChromaStore

__all__ = [
    "CHROMA_TOKEN_ENV",
    "CHROMA_URL_ENV",
    "INDEX_PROCESS_ENV",
    "chroma_client_from_env",
    "STORE_CONFIG_ENV",
    "open_checkpointer",
    "open_store",
    "platform_checkpointer",
    "platform_store",
    "resolve_embed",
    "store_config_from_env",
]

logger = logging.getLogger(__name__)

STORE_CONFIG_ENV = "LANGGRAPH_STORE"
"""Where the LangGraph server puts ``langgraph.json``'s ``store`` section, as JSON."""

CHROMA_URL_ENV = "LANGGRAPH_MEMORY_CHROMA_URL"
"""An optional Chroma server (``http://host:port``) to hold the index instead of ``<data_dir>/chroma``."""
CHROMA_TOKEN_ENV = "LANGGRAPH_MEMORY_CHROMA_TOKEN"
"""A bearer token sent to that Chroma server (for a proxy in front of it that checks one)."""

T = TypeVar("T")


def store_config_from_env() -> dict[str, Any]:
    """``langgraph.json``'s ``store`` section as the server passed it (``{}`` when there is none).

    Raises:
        ConfigError: ``LANGGRAPH_STORE`` is not a JSON object.
    """
    raw = os.environ.get(STORE_CONFIG_ENV)
    if not raw:
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{STORE_CONFIG_ENV} must hold langgraph.json's store section as JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{STORE_CONFIG_ENV} must be a JSON object, got {type(config).__name__}")
    return config


def _load_file_attr(spec: str, base: Path) -> Any:
    file_part, _, attr = spec.rpartition(":")
    path = (base / file_part).resolve()
    if not path.is_file():
        raise ConfigError(f"embed {spec!r}: no file {path} (paths are relative to {base})")
    name = f"_lgm_embed_{abs(hash(str(path)))}"
    module = sys.modules.get(name)
    if module is None:
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ConfigError(f"embed {spec!r}: {path} cannot be imported")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"embed {spec!r}: {path} defines no {attr!r}") from None


def resolve_embed(embed: Any, *, base: str | os.PathLike[str] | None = None) -> Any:
    """``index.embed`` from ``langgraph.json``, in the forms the LangGraph server accepts.

    * ``"./file.py:name"``: ``name`` from that file (an ``Embeddings`` or a
      function of texts), relative to ``base`` (default: the working
      directory, the folder ``langgraph dev`` runs in);
    * ``"package.module:name"``: ``name`` from an importable module;
    * any other string (``"openai:text-embedding-3-small"``, or a
      sentence-transformers name such as ``"all-MiniLM-L6-v2"``, loaded
      offline), an ``Embeddings`` or a function: as [`ChromaStore`][langgraph_memory.ChromaStore] takes them.

    The server's own fallback store resolves ``embed`` too, so in
    ``langgraph.json`` use a ``.py:`` path or a ``provider:model`` it knows.

    Examples:
        >>> resolve_embed("all-MiniLM-L6-v2")
        'all-MiniLM-L6-v2'
    """
    if not isinstance(embed, str):
        return embed
    where = Path(base) if base is not None else Path.cwd()
    if ".py:" in embed:
        return _load_file_attr(embed, where)
    module_name, sep, attr = embed.partition(":")
    # "provider:model" strings name models such as "text-embedding-3-small", not attributes.
    if sep and attr.isidentifier() and all(part.isidentifier() for part in module_name.split(".")):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return embed
        if hasattr(module, attr):
            return getattr(module, attr)
    return embed


def _check_data_dir(data_dir: str | os.PathLike[str] | None) -> None:
    """Refuse a Chroma address where the memory's location goes (a ``postgresql://`` address is a memory)."""
    value = str(data_dir) if data_dir is not None else os.environ.get(DATA_DIR_ENV, "")
    if urlsplit(value).scheme in {"http", "https"}:
        raise ConfigError(
            f"{DATA_DIR_ENV}={value!r} is a Chroma address, not a memory: set {DATA_DIR_ENV} to a folder "
            f"(or {URL_ENV} to a postgresql:// address), and put a Chroma server in {CHROMA_URL_ENV}."
        )


def chroma_client_from_env() -> Any | None:
    """A Chroma client of the server at ``LANGGRAPH_MEMORY_CHROMA_URL`` (None when it is unset).

    The ``HttpClient`` behind it is made on first use (`DeferredHttpClient`), so a
    process starts while the server is down: searches are scored exactly meanwhile,
    and the index catches up once the server answers.

    ``LANGGRAPH_MEMORY_CHROMA_TOKEN``, if set, is sent as ``Authorization:
    Bearer <token>`` on every request (for a server behind a proxy that
    checks it: ``chroma run`` itself has no authentication).
    """
    url = os.environ.get(CHROMA_URL_ENV)
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(f"{CHROMA_URL_ENV} must be an address such as http://127.0.0.1:8000, got {url!r}")
    from langgraph_memory._infra.chroma import DeferredHttpClient

    token = os.environ.get(CHROMA_TOKEN_ENV)
    return DeferredHttpClient(
        parts.hostname,
        parts.port or (443 if parts.scheme == "https" else 8000),
        ssl=parts.scheme == "https",
        headers={"Authorization": f"Bearer {token}"} if token else None,
    )


def open_store(
    config: Mapping[str, Any] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    base: str | os.PathLike[str] | None = None,
    index_process: bool | None = None,
) -> ChromaStore:
    """A [`ChromaStore`][langgraph_memory.ChromaStore] for ``langgraph.json``'s ``store`` section (default: the server's, from the environment).

    ``index`` (``dims``, ``embed``, ``fields``) and ``ttl`` (``default_ttl`` in
    minutes, ``refresh_on_read``, ``sweep_interval_minutes``) mean what they
    mean for LangGraph's stores; with ``sweep_interval_minutes`` the store
    sweeps expired items on a thread of its own. Opening reads files: call it
    off the event loop ([`platform_store()`][langgraph_memory.platform_store] does).
    ``index_process`` (default: ``LANGGRAPH_MEMORY_INDEX_PROCESS``, else on)
    runs the embedded index in a child process, so that Chroma's writes never
    stop the event loop (see [`ChromaStore`][langgraph_memory.ChromaStore]).

    Examples:
        >>> import tempfile
        >>> s = open_store({"ttl": {"default_ttl": 60}}, data_dir=tempfile.mkdtemp())
        >>> s.ttl_config
        {'default_ttl': 60}
        >>> s.close()
    """
    cfg = store_config_from_env() if config is None else dict(config)
    _check_data_dir(data_dir)
    index = cfg.get("index") or None
    if index is not None:
        if not isinstance(index, Mapping):
            raise ConfigError(f"store.index must be an object with dims and embed, got {index!r}")
        index = dict(index)
        if "embed" in index:
            index["embed"] = resolve_embed(index["embed"], base=base)
    ttl = cfg.get("ttl") or None
    if ttl is not None and not isinstance(ttl, Mapping):
        raise ConfigError(f"store.ttl must be an object (default_ttl, refresh_on_read, ...), got {ttl!r}")
    from langgraph_memory.store import ChromaStore

    opened = ChromaStore(
        chroma_client_from_env(),
        index=index,  # type: ignore[arg-type]
        ttl=dict(ttl) if ttl else None,  # type: ignore[arg-type]
        data_dir=data_dir,
        index_process=index_process,
    )
    if ttl and ttl.get("sweep_interval_minutes"):
        opened.start_ttl_sweeper()
    logger.info("opened the store in %s for the LangGraph server", opened.settings.where)
    return opened


def open_checkpointer(*, data_dir: str | os.PathLike[str] | None = None) -> SqliteCheckpointer | PostgresCheckpointer:
    """The checkpointer of the memory: ``<data_dir>/checkpoints.sqlite``, or on the PostgreSQL server of an address.

    Examples:
        >>> import tempfile
        >>> with open_checkpointer(data_dir=tempfile.mkdtemp()) as saver:
        ...     saver.list_threads()
        []
    """
    _check_data_dir(data_dir)
    from langgraph_memory.checkpoint.factory import open_checkpointer as open_for
    from langgraph_memory.config import Settings

    # Threads go where Memory.open puts them: beside the catalog, on its server when it has one.
    return cast("SqliteCheckpointer | PostgresCheckpointer", open_for(Settings.resolve(data_dir)))


class _Shared(Generic[T]):
    """One instance per process, opened by the first user and closed by the last.

    The server enters a factory once per event loop (threads with isolated
    loops each enter it): they share the instance rather than open the data
    directory twice. Only ever called on worker threads, never on a loop.
    """

    def __init__(self, open_fn: Callable[[], T], close_fn: Callable[[T], None]) -> None:
        self._open, self._close = open_fn, close_fn
        self._lock = threading.Lock()
        self._value: T | None = None
        self._users = 0

    def acquire(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._open()
            self._users += 1
            return self._value

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._value is not None:
                value, self._value = self._value, None
                self._close(value)


_stores: _Shared[ChromaStore] = _Shared(lambda: open_store(), lambda s: s.close())
_checkpointers: _Shared[SqliteCheckpointer | PostgresCheckpointer] = _Shared(
    lambda: open_checkpointer(), lambda c: c.close()
)


@asynccontextmanager
async def platform_store() -> AsyncIterator[ChromaStore]:
    """The store for ``langgraph.json``: ``"store": {"path": "langgraph_memory.platform_store", ...}``.

    Opened (and closed) on a worker thread, never on the event loop; its
    ``index`` and ``ttl`` come from the same ``store`` section (see [`open_store()`][langgraph_memory.platform.open_store]).
    """
    opened = await asyncio.to_thread(_stores.acquire)
    try:
        yield opened
    finally:
        await asyncio.to_thread(_stores.release)


@asynccontextmanager
async def platform_checkpointer() -> AsyncIterator[SqliteCheckpointer | PostgresCheckpointer]:
    """The checkpointer for ``langgraph.json``: ``"checkpointer": {"path": "langgraph_memory.platform_checkpointer"}``.

    Opened (and closed) on a worker thread; threads and runs are kept in
    ``<data_dir>/checkpoints.sqlite``, beside the store (on the PostgreSQL
    server when the memory is given as an address).
    """
    opened = await asyncio.to_thread(_checkpointers.acquire)
    try:
        yield opened
    finally:
        await asyncio.to_thread(_checkpointers.release)
