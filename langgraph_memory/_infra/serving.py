"""Serving an ASGI app over HTTP on a socket that listens before its address is announced.

The MCP server and the memory browser both bind their port themselves
(``port=0`` picks a free one), tell the caller the address, then hand the
socket to uvicorn. Binding here turns a port in use into a `ConfigError`.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
from collections.abc import Callable
from typing import Any, Literal

from langgraph_memory.errors import ConfigError

__all__ = ["is_loopback", "serve_asgi"]

logger = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (``localhost`` or a loopback address).

    Examples:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_asgi(
    app: Any,
    host: str,
    port: int,
    *,
    what: str,
    path: str = "/",
    lifespan: Literal["on", "off"] = "off",
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until interrupted; ``on_listening(url)`` once the socket listens.

    Raises:
        ConfigError: the address cannot be bound (a port in use).
    """
    import anyio
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port") from exc
    try:
        # Listen before announcing the address: a client that connects at once then waits in the
        # backlog until uvicorn accepts, instead of being refused (uvicorn listening again is harmless).
        sock.listen(2048)
        url = f"http://{'[' + host + ']' if family == socket.AF_INET6 else host}:{sock.getsockname()[1]}{path}"
        logger.info("%s at %s", what, url)
        if on_listening is not None:
            on_listening(url)
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan)
        anyio.run(functools.partial(uvicorn.Server(config).serve, sockets=[sock]))
    finally:
        sock.close()
