"""The ``ui`` command: the memory browser on this data directory, in a web browser."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from langgraph_memory.cli._common import EXIT_OK, Ctx

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from langgraph_memory.ui import DEFAULT_PORT
    from langgraph_memory.ui.security import TOKEN_ENV

    p = sub.add_parser("ui", parents=[common], help="browse memory in a web browser (http://127.0.0.1:8766)")
    p.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1; others need a token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)")
    p.add_argument(
        "--token-file",
        default=None,
        help=f"file holding the token browsers must present (default ${TOKEN_ENV}); needed beyond loopback",
    )
    p.add_argument(
        "--allow-writes",
        action="store_true",
        help="allow retire, supersede, reinstate and archive restore from the pages",
    )
    p.set_defaults(func=_serve)


def _serve(ctx: Ctx) -> int:
    from langgraph_memory.ui import serve
    from langgraph_memory.ui.security import check_ui_bind, read_token

    a = ctx.args
    token = read_token(a.token_file)
    check_ui_bind(a.host, token)  # before opening anything
    with ctx.open_memory(embed=True) as mem:
        ctx.err.print(
            f"langgraph-memory browser on {mem.settings.where}"
            + (" (writes allowed)" if a.allow_writes else " (read-only)"),
            markup=False,
        )

        def listening(url: str) -> None:
            shown = url + ("?token=<your token>" if token else "")
            ctx.err.print(f"listening on {shown}", soft_wrap=True, markup=False)
            # Load the embedding model in the background, so the first search does not wait for it.
            load = getattr(getattr(mem.store.cached_embeddings, "inner", None), "load", None)
            if callable(load):
                threading.Thread(target=load, name="lgm-ui-model-load", daemon=True).start()

        serve(mem, host=a.host, port=a.port, token=token, allow_writes=a.allow_writes, on_listening=listening)
    return EXIT_OK
