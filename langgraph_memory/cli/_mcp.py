"""The ``mcp`` command: serve this data directory's memory over MCP (stdio, or streamable HTTP)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from langgraph_memory.cli._common import EXIT_OK, Ctx, namespace_arg

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from langgraph_memory.config import MCP_PORT as DEFAULT_PORT
    from langgraph_memory.config import MCP_TOKEN_ENV as TOKEN_ENV

    p = sub.add_parser("mcp", parents=[common], help="serve memory to MCP clients (stdio, or HTTP on 127.0.0.1)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT}; 0 picks one)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help=f"file holding the bearer token clients must send (default ${TOKEN_ENV})",
    )
    p.add_argument(
        "--token", default=None, help="the bearer token itself (visible to every user in `ps`: prefer --token-file)"
    )
    p.add_argument("--allow-remote", action="store_true", help="allow an address beyond this machine (needs a token)")
    p.add_argument(
        "--namespace",
        type=namespace_arg,
        default=("memories",),
        help="where store_memory writes and search_memory looks (default memories)",
    )
    p.set_defaults(func=_serve)


def _serve(ctx: Ctx) -> int:
    from langgraph_memory.mcp.server import TOKEN_ENV, check_bind, serve

    a = ctx.args
    if a.token:
        ctx.err.print(
            f"warning: --token is visible to every user of this machine in `ps`; "
            f"use --token-file or ${TOKEN_ENV} instead",
            markup=False,
            soft_wrap=True,
        )
    token = a.token or (_read_token_file(a.token_file) if a.token_file else None) or os.environ.get(TOKEN_ENV) or None
    if a.transport == "http":
        check_bind(a.host, token, a.allow_remote)  # before opening anything
    # A server pointed at a new folder creates it (an MCP client's first run has no data yet).
    # Nothing goes to stdout: on stdio it is the protocol.
    with ctx.open_memory(embed=True, create=True) as mem:
        ctx.err.print(f"langgraph-memory MCP server on {mem.settings.where} ({a.transport})", markup=False)
        serve(
            mem,
            transport=a.transport,
            host=a.host,
            port=a.port,
            token=token,
            allow_remote=a.allow_remote,
            namespace=a.namespace,
            on_listening=lambda url: ctx.err.print(f"listening on {url}", soft_wrap=True, markup=False),
        )
    return EXIT_OK


def _read_token_file(path: Path) -> str:
    """The token in ``path`` (surrounding whitespace dropped), or `ConfigError` saying what is wrong."""
    from langgraph_memory.errors import ConfigError

    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not token:
        raise ConfigError(f"the token file {path} is empty: write the bearer token into it")
    return token
