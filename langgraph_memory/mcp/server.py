"""The MCP server: one data directory's memory for any MCP client (Claude Desktop, IDEs, other agents).

Built on the official ``mcp`` SDK (``MCPServer``), over stdio or streamable
HTTP. From the command line:

    langgraph-memory --data-dir ./memory mcp                          # stdio
    langgraph-memory --data-dir ./memory mcp --transport http         # http://127.0.0.1:8765/mcp
    LANGGRAPH_MEMORY_MCP_TOKEN=... langgraph-memory mcp --transport http --host 0.0.0.0 --allow-remote
    langgraph-memory --url postgresql://user@db/memory mcp            # a memory on a PostgreSQL server

or from Python:

    from langgraph_memory import Memory
    from langgraph_memory.mcp.server import build_server, serve

    with Memory.open("./memory") as mem:
        serve(mem, transport="http", port=8765)

The tools (`MemoryTools`) follow seed
001: ``store_memory(content, tags)`` (content not empty, at most 10 tags of
at most 50 characters) and ``search_memory(query, limit)`` (limit 1-20; each
result with a ``relevance_score`` in percent, the cosine similarity times
100; results under 30 % are dropped). Beside them the typed research calls
for all seven collections (findings, hypotheses, strategies with
status and versions, backtests, lessons, market regimes, tool and workflow
definitions), ``get_memory``, ``get_memory_history``, ``get_lineage``, ``strategy_versions``,
``get_memory_stats``, and ``retire_memory`` / ``supersede_memory`` /
``reinstate_memory``. Every search tool applies the same relevance rule.

Bad arguments come back as a tool error (``isError``) whose text names the
error type and what to send instead; nothing is written. The server shares
its data directory safely with other processes (graphs, the CLI, other
servers): the catalog serialises writers across processes and the embedded
Chroma index is written under its file lock.

HTTP binds 127.0.0.1 unless told otherwise. Any other address needs
``allow_remote=True`` and a bearer token, which every request must then
carry (``Authorization: Bearer <token>``); a token may be set on loopback too.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langgraph_memory._infra.serving import is_loopback, serve_asgi
from langgraph_memory.config import MCP_PORT, MCP_TOKEN_ENV
from langgraph_memory.errors import ConfigError, LangGraphMemoryError
from langgraph_memory.mcp.tools import MemoryTools
from langgraph_memory.memory import Memory
from langgraph_memory.research.calls import plain_text

__all__ = ["MemoryTools", "build_server", "serve", "check_bind", "DEFAULT_PORT", "TOKEN_ENV"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = MCP_PORT
TOKEN_ENV = MCP_TOKEN_ENV
# A token shorter than this is refused: it would be guessed.
MIN_TOKEN_CHARS = 16


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Our typed errors become MCP tool errors (``isError``) that name the type and keep the message."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LangGraphMemoryError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return call


def build_server(memory: Memory, *, namespace: Sequence[str] = ("memories",), name: str = "langgraph-memory") -> Any:
    """An ``MCPServer`` (the official SDK's) with `MemoryTools` over ``memory``.

    Examples:
        >>> server = build_server(mem)
        >>> server.run()  # serves until the process is stopped  # doctest: +SKIP
    """
    from mcp.server.mcpserver import MCPServer

    from langgraph_memory._version import __version__

    tools = MemoryTools(memory, namespace=namespace)
    server = MCPServer(
        name,
        version=__version__,
        instructions=(
            "Long-term memory of LangGraph agents: store and search memories (store_memory, search_memory), "
            "and trading-research records with lineage (findings, hypotheses, strategies, backtests, lessons, "
            "market regimes, tool and workflow definitions). Search results carry a relevance_score in percent; "
            "under 30% is dropped. retire_memory hides a wrong memory from searches (reinstate_memory undoes it); "
            "get_memory_stats says what memory holds."
            + (" This server is read-only: it offers only the tools that read." if memory.read_only else "")
        ),
        log_level="WARNING",
    )
    for tool_name in MemoryTools.TOOLS:
        if memory.read_only and tool_name in MemoryTools.WRITES:
            continue  # a read-only memory: clients see only the tools that read
        fn = getattr(tools, tool_name)
        server.add_tool(
            _tool_errors(fn),
            name=tool_name,
            description=plain_text(inspect.getdoc(fn) or tool_name),  # an agent reads it: no reST markup
            structured_output=True,
        )
    return server


def check_bind(host: str, token: str | None, allow_remote: bool) -> None:
    """Refuse to serve HTTP beyond this machine without ``allow_remote`` and a token of 16+ characters.

    Raises:
        ConfigError: a non-loopback ``host`` without both, or a short token.
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the token must have at least {MIN_TOKEN_CHARS} characters; make a random one")
    if is_loopback(host):
        return
    if not allow_remote or not token:
        raise ConfigError(
            f"serving memory on {host} exposes it beyond this machine: pass allow_remote=True "
            f"(--allow-remote) and a token (--token, or ${TOKEN_ENV}) that clients send as "
            "'Authorization: Bearer <token>'"
        )


class _BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    def _accepts(self, header: bytes) -> bool:
        # RFC 7235: the scheme is case-insensitive ("bearer" is "Bearer"), then one or more spaces.
        scheme, _, credentials = header.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.expected)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not self._accepts(got):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def _warm_up(memory: Memory) -> None:
    """Load the embedding model in the background, so the first call does not wait for it."""
    inner = getattr(memory.store.cached_embeddings, "inner", None)
    load = getattr(inner, "load", None)
    if callable(load):
        threading.Thread(target=load, name="lgm-model-load", daemon=True).start()


def serve(
    memory: Memory,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_remote: bool = False,
    namespace: Sequence[str] = ("memories",),
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve ``memory`` until stdin closes (stdio) or the process is interrupted (HTTP).

    For HTTP, ``port=0`` picks a free port; ``on_listening(url)`` is called
    once the socket listens (a client may connect from then on). The caller keeps ``memory`` and closes it.

    Raises:
        ConfigError: an unsafe bind (see `check_bind()`) or an unknown transport.
    """
    if transport not in ("stdio", "http"):
        raise ConfigError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http":
        check_bind(host, token, allow_remote)
    server = build_server(memory, namespace=namespace)
    _warm_up(memory)
    if transport == "stdio":
        import anyio

        anyio.run(server.run_stdio_async)
        return
    app = server.streamable_http_app(host=host)
    if token:
        app = _BearerAuth(app, token)
    serve_asgi(
        app,
        host,
        port,
        what="MCP server (streamable HTTP)",
        path="/mcp",
        lifespan="on",
        on_listening=on_listening,
    )
