"""The MCP server: one data directory's memory for any MCP client (Claude Desktop, IDEs, other agents).

Built on the official ``mcp`` SDK (``MCPServer``), over stdio or streamable
HTTP. From the command line::

    langgraph-memory --data-dir ./memory mcp                          # stdio
    langgraph-memory --data-dir ./memory mcp --transport http         # http://127.0.0.1:8765/mcp
    LANGGRAPH_MEMORY_MCP_TOKEN=... langgraph-memory mcp --transport http --host 0.0.0.0 --allow-remote

or from Python::

    from langgraph_memory import Memory
    from langgraph_memory.mcp_server import build_server, serve

    with Memory.open("./memory") as mem:
        serve(mem, transport="http", port=8765)

The tools follow seed 001: ``store_memory(content, tags)`` (content not
empty, at most 10 tags of at most 50 characters) and ``search_memory(query,
limit)`` (limit 1-20; each result with a ``relevance_score`` in percent, the
cosine similarity times 100; results under 30 % are dropped). Beside them
the typed research calls of seed 004 (findings, strategies with status and
versions, lessons, market regimes), ``get_memory``, ``get_lineage`` and
``strategy_versions``. Every search tool applies the same relevance rule.

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
import ipaddress
import logging
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from langgraph_memory.config import (
    MAX_SEARCH_LIMIT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MCP_PORT,
    MCP_TOKEN_ENV,
    MIN_RELEVANCE,
)
from langgraph_memory.errors import ConfigError, LangGraphMemoryError, NotFoundError
from langgraph_memory.memory import Hit, Memory
from langgraph_memory.ranking import keep_relevant
from langgraph_memory.validation import check_content, check_limit, check_tags

__all__ = ["MemoryTools", "build_server", "serve", "check_bind", "DEFAULT_PORT", "TOKEN_ENV"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = MCP_PORT
TOKEN_ENV = MCP_TOKEN_ENV
# A token shorter than this is refused: it would be guessed.
MIN_TOKEN_CHARS = 16

# Argument types: the limits are advertised in each tool's JSON schema for the agent to read, and
# enforced by langgraph_memory.validation (one check, one message, for these tools and tools.py).
Limit = Annotated[
    int, Field(description=f"how many results, 1-{MAX_SEARCH_LIMIT}",
               json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_LIMIT}),
]
Tags = Annotated[
    list[str] | None,
    Field(description=f"at most {MAX_TAGS} tags of at most {MAX_TAG_CHARS} characters",
          json_schema_extra={"maxItems": MAX_TAGS}),
]
Text = Annotated[str, Field(description="the text; not empty", json_schema_extra={"minLength": 1})]


def _relevance(score: float | None) -> float | None:
    """Seed 001's relevance percentage: cosine similarity (1 - cosine distance) times 100."""
    return None if score is None else round(float(score) * 100.0, 1)


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else value


def _hits(hits: Sequence[Hit[Any]]) -> dict[str, Any]:
    results = [
        {"id": h.id, "relevance_score": _relevance(h.score), "namespace": list(h.namespace),
         "record": h.record.model_dump(mode="json")}
        for h in hits
    ]
    return {"results": results, "total_results": len(results)}


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


class MemoryTools:
    """The tools the server offers, over one :class:`~langgraph_memory.memory.Memory`.

    Each public method is one MCP tool (registered by :func:`build_server`
    from :attr:`TOOLS`); they can be called directly too. Plain memories
    (``store_memory``, ``search_memory``) live under ``namespace``
    (default ``("memories",)``): searches cover it and every namespace below
    it, such as the ``("memories", "<user>")`` of the LangGraph tools.

    Example:
        >>> tools = MemoryTools(mem)                                        # doctest: +SKIP
        >>> tools.store_memory("User prefers TypeScript", ["preference"])["success"]   # doctest: +SKIP
        True
    """

    #: The tools, in the order clients list them. Adding one is a method and a name here.
    TOOLS: tuple[str, ...] = (
        "store_memory", "search_memory", "get_memory",
        "store_research_finding", "query_research_findings",
        "store_strategy", "get_similar_strategies", "set_strategy_status", "strategy_versions",
        "store_lesson", "get_relevant_lessons", "resolve_lesson",
        "store_market_regime", "query_market_regimes",
        "get_lineage",
    )

    def __init__(self, memory: Memory, *, namespace: Sequence[str] = ("memories",),
                 min_relevance: float = MIN_RELEVANCE) -> None:
        self.memory = memory
        self.namespace = tuple(namespace)
        self.min_relevance = min_relevance

    # ------------------------------------------------------------ memories

    def store_memory(self, content: Text, tags: Tags = None) -> dict[str, Any]:
        """Store a memory (a fact, preference or note) with optional tags; returns its id."""
        content = check_content(content)
        tags = check_tags(tags)
        store = self.memory.store
        key = str(uuid.uuid4())
        # Only the text is embedded: tags in the vector would pull its relevance down.
        store.put(self.namespace, key, {"content": content, "tags": tags}, index=["content"])
        item = store.get(self.namespace, key, refresh_ttl=False)
        return {
            "memory_id": key,
            "success": True,
            "timestamp": _iso(item.created_at) if item else None,
            "embedding_dimensions": store.items.writer.dims,
        }

    def search_memory(self, query: Text, limit: Limit = 5) -> dict[str, Any]:
        """Search memories by meaning; results under 30% relevance are dropped, best first."""
        query = check_content(query, field="query")
        limit = check_limit(limit)
        found = keep_relevant(self.memory.store.search(self.namespace, query=query, limit=limit), self.min_relevance)
        results = [
            {
                "memory_id": it.key,
                "content": it.value.get("content", it.value.get("text")),
                "timestamp": _iso(it.created_at),
                "relevance_score": _relevance(it.score),
                "tags": list(it.value.get("tags") or []),
                "namespace": list(it.namespace),
            }
            for it in found
        ]
        return {"results": results, "total_results": len(results), "query_embedding_generated": True}

    def get_memory(self, memory_id: Text) -> dict[str, Any]:
        """A memory by id: a typed record (finding, strategy, lesson, regime) or a plain memory."""
        memory_id = check_content(memory_id, field="memory_id")
        try:
            record = self.memory.get(memory_id)
        except NotFoundError:
            item = self.memory.store.get(self.namespace, memory_id, refresh_ttl=False)
            if item is None:
                raise
            return {"memory_id": item.key, "namespace": list(item.namespace), "value": item.value,
                    "created_at": _iso(item.created_at), "updated_at": _iso(item.updated_at)}
        return {"memory_id": memory_id, "record": record.model_dump(mode="json")}

    # ---------------------------------------------------- typed research

    def store_research_finding(
        self, content: Text, source: str | None = None, topic: str | None = None,
        confidence: float | None = None, parent_id: str | None = None, tags: Tags = None,
    ) -> dict[str, Any]:
        """Store a research finding (confidence 0-1); parent_id links it to what it came from."""
        f = self.memory.store_research_finding(
            check_content(content), source=source, topic=topic, confidence=confidence, parent_id=parent_id,
            tags=check_tags(tags),
        )
        return f.model_dump(mode="json")

    def query_research_findings(
        self, query: Text, limit: Limit = 5, source: str | None = None, min_confidence: float = 0.0
    ) -> dict[str, Any]:
        """Findings most similar to the query, optionally of one source and above a confidence."""
        return _hits(self.memory.query_research_findings(
            check_content(query, field="query"), k=check_limit(limit), source=source,
            min_confidence=min_confidence, min_relevance=self.min_relevance,
        ))

    def store_strategy(
        self, name: Text, description: Text, code: str | None = None, parameters: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None, parent_id: str | None = None,
        status: Literal["draft", "tested", "approved", "deprecated"] = "draft",
    ) -> dict[str, Any]:
        """Store a strategy; storing the same name again makes its next version."""
        s = self.memory.store_strategy(
            check_content(name, field="name"), check_content(description, field="description"), code=code,
            parameters=parameters, metrics=metrics, parent_id=parent_id, status=status,
        )
        return s.model_dump(mode="json")

    def get_similar_strategies(
        self, description: Text, limit: Limit = 5,
        status: Literal["draft", "tested", "approved", "deprecated"] | None = None,
    ) -> dict[str, Any]:
        """Strategies whose description is most similar, optionally of one status."""
        return _hits(self.memory.get_similar_strategies(
            check_content(description, field="description"), k=check_limit(limit), status=status,
            min_relevance=self.min_relevance,
        ))

    def set_strategy_status(
        self, strategy_id: Text, status: Literal["draft", "tested", "approved", "deprecated"]
    ) -> dict[str, Any]:
        """Move a strategy to a status; approved stamps approved_at."""
        return self.memory.set_strategy_status(check_content(strategy_id, field="strategy_id"), status).model_dump(
            mode="json"
        )

    def strategy_versions(self, name: Text) -> dict[str, Any]:
        """Every version of the named strategy, oldest first."""
        versions = self.memory.versions(check_content(name, field="name"))
        return {
            "name": name,
            "versions": [
                {"version": v.version, "id": v.id, "status": v.status, "created_at": v.created_at.isoformat(),
                 "live": v.record is not None}
                for v in versions
            ],
        }

    def store_lesson(
        self, lesson: Text, strategy_id: str | None = None, iteration: int | None = None,
        failure_type: str | None = None, severity: Literal["minor", "major", "critical"] = "major",
        feedback: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a lesson learned, linked to the strategy that produced it."""
        return self.memory.store_lesson(
            check_content(lesson, field="lesson"), strategy_id=strategy_id, iteration=iteration,
            failure_type=failure_type, severity=severity, feedback=feedback,
        ).model_dump(mode="json")

    def get_relevant_lessons(self, context: Text, limit: Limit = 5, include_resolved: bool = False) -> dict[str, Any]:
        """Lessons most relevant to the context: unresolved ones unless include_resolved."""
        return _hits(self.memory.get_relevant_lessons(
            check_content(context, field="context"), k=check_limit(limit), include_resolved=include_resolved,
            min_relevance=self.min_relevance,
        ))

    def resolve_lesson(self, lesson_id: Text, resolution_id: str | None = None) -> dict[str, Any]:
        """Mark a lesson resolved; resolution_id (what resolved it) becomes its child in the lineage."""
        return self.memory.resolve_lesson(check_content(lesson_id, field="lesson_id"), resolution_id).model_dump(
            mode="json"
        )

    def store_market_regime(
        self, description: Text,
        regime_type: Literal["bull", "bear", "sideways", "volatile"] | None = None,
        start_date: str | None = None, end_date: str | None = None, volatility: float | None = None,
        trend_strength: float | None = None, parent_id: str | None = None,
    ) -> dict[str, Any]:
        """Store a market regime (dates as ISO 8601)."""
        return self.memory.store_market_regime(
            check_content(description, field="description"), regime_type=regime_type, start_date=start_date,
            end_date=end_date, volatility=volatility, trend_strength=trend_strength, parent_id=parent_id,
        ).model_dump(mode="json")

    def query_market_regimes(
        self, query: Text, limit: Limit = 5,
        regime_type: Literal["bull", "bear", "sideways", "volatile"] | None = None,
    ) -> dict[str, Any]:
        """Regimes most similar to the query, optionally of one type."""
        return _hits(self.memory.query_market_regimes(
            check_content(query, field="query"), k=check_limit(limit), regime_type=regime_type,
            min_relevance=self.min_relevance,
        ))

    # -------------------------------------------------------------- lineage

    def get_lineage(self, item_id: Text) -> dict[str, Any]:
        """Where an item came from (ancestors, root first) and what came from it (a tree)."""
        return self.memory.lineage(check_content(item_id, field="item_id")).as_dict()


def build_server(memory: Memory, *, namespace: Sequence[str] = ("memories",), name: str = "langgraph-memory") -> Any:
    """An ``MCPServer`` (the official SDK's) with :class:`MemoryTools` over ``memory``.

    Example:
        >>> server = build_server(mem)                            # doctest: +SKIP
        >>> server.run()                                          # doctest: +SKIP
    """
    from mcp.server.mcpserver import MCPServer

    from langgraph_memory import __version__

    tools = MemoryTools(memory, namespace=namespace)
    server = MCPServer(
        name,
        version=__version__,
        instructions=(
            "Long-term memory of LangGraph agents: store and search memories (store_memory, search_memory), "
            "and trading-research records with lineage (findings, strategies, lessons, market regimes). "
            "Search results carry a relevance_score in percent; under 30% is dropped."
        ),
        log_level="WARNING",
    )
    for tool_name in MemoryTools.TOOLS:
        server.add_tool(_tool_errors(getattr(tools, tool_name)), name=tool_name, structured_output=True)
    return server


def check_bind(host: str, token: str | None, allow_remote: bool) -> None:
    """Refuse to serve HTTP beyond this machine without ``allow_remote`` and a token of 16+ characters.

    Raises:
        ConfigError: a non-loopback ``host`` without both, or a short token.
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the token must have at least {MIN_TOKEN_CHARS} characters; make a random one")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
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
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def _warm_up(memory: Memory) -> None:
    """Load the embedding model in the background, so the first call does not wait for it."""
    inner = getattr(memory.store.embeddings, "inner", None)
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
    once the socket is bound. The caller keeps ``memory`` and closes it.

    Raises:
        ConfigError: an unsafe bind (see :func:`check_bind`) or an unknown transport.
    """
    if transport not in ("stdio", "http"):
        raise ConfigError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http":
        check_bind(host, token, allow_remote)
    server = build_server(memory, namespace=namespace)
    _warm_up(memory)
    import anyio

    if transport == "stdio":
        anyio.run(server.run_stdio_async)
        return
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port") from exc
    bound = sock.getsockname()[1]
    app = server.streamable_http_app(host=host)
    if token:
        app = _BearerAuth(app, token)
    url = f"http://{'[' + host + ']' if family == socket.AF_INET6 else host}:{bound}/mcp"
    logger.info("serving memory at %s over MCP (streamable HTTP)", url)
    if on_listening is not None:
        on_listening(url)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(functools.partial(uvicorn.Server(config).serve, sockets=[sock]))
