"""Blocking-call detection on the event loop, configured as ``langgraph dev`` configures it.

The LangGraph server (``langgraph_runtime_inmem.queue``) activates
blockbuster for every run and then switches off the detectors it considers
too noisy (``os.stat``, ``os.listdir``, ``os.remove``, buffered and text file
reads/writes, ``threading.Lock.acquire``, every ``os.path`` function). We do
the same, so a test under :func:`server_blockbuster` fails exactly where a
run under ``langgraph dev`` would: any ``sqlite3`` call, ``time.sleep``,
``os.read``/``os.write``, a socket, ``open`` made on the event loop's thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from blockbuster import BlockBuster, BlockingError

__all__ = ["BlockingError", "server_blockbuster"]

# The detectors the LangGraph server removes before activating the rest.
_SERVER_DISABLED = (
    "os.stat",
    "os.listdir",
    "os.remove",
    "io.BufferedReader.read",
    "io.BufferedWriter.write",
    "io.TextIOWrapper.read",
    "io.TextIOWrapper.write",
    "threading.Lock.acquire",
)


@contextmanager
def server_blockbuster() -> Iterator[BlockBuster]:
    """Raise ``BlockingError`` for a blocking call on a running event loop, as ``langgraph dev`` does."""
    bb = BlockBuster(excluded_modules=[])
    # inspect.getmodule resolves paths; the server allows it too.
    bb.functions["os.path.abspath"].can_block_in("inspect.py", "getmodule")
    disabled = [name for name in bb.functions if name.startswith("os.path.")]
    for name in (*_SERVER_DISABLED, *disabled):
        fn = bb.functions.pop(name, None)
        if fn is not None:
            fn.deactivate()
    bb.activate()
    try:
        yield bb
    finally:
        bb.deactivate()
