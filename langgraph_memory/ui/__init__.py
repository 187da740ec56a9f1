"""The memory browser: look at a memory in a web browser (``langgraph-memory ui``; ``docs/ui.md``).

from langgraph_memory import Memory
from langgraph_memory.ui import serve

with Memory.open("./memory") as mem:
    serve(mem, port=8766)  # http://127.0.0.1:8766, read-only unless allow_writes=True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["build_app", "serve", "DEFAULT_PORT"]


#: The default port (the MCP server's default plus one).
DEFAULT_PORT = 8766


def build_app(memory: Any, *, allow_writes: bool = False, token: str | None = None, host: str = "127.0.0.1") -> Any:
    """The ASGI application (see `langgraph_memory.ui.app.build_app`)."""
    from langgraph_memory.ui.app import build_app as _build

    return _build(memory, allow_writes=allow_writes, token=token, host=host)


def serve(
    memory: Any,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_writes: bool = False,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve the memory browser until interrupted. ``port=0`` picks a free port; ``on_listening(url)`` once bound.

    Raises:
        ConfigError: a non-loopback ``host`` without a token, a short token, or a port in use.
    """
    from langgraph_memory._infra.serving import serve_asgi
    from langgraph_memory.ui.security import check_ui_bind

    check_ui_bind(host, token)
    app = build_app(memory, allow_writes=allow_writes, token=token, host=host)
    serve_asgi(app, host, port, what="memory browser", on_listening=on_listening)
