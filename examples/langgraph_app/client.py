"""Two runs of the app through a running ``langgraph dev``, with the SDK (``pip install langgraph-sdk``).

    LANGGRAPH_URL=http://127.0.0.1:2024 python client.py

``LANGGRAPH_URL`` is the address on the "API:" line that ``langgraph dev``
prints when it starts (default http://127.0.0.1:2024). When the port it was
given is taken, ``langgraph dev`` serves on another one and says so ("Port
2024 is already in use, using port N instead"); this client checks the
address first and stops within seconds when no server of this app answers
there, instead of retrying for minutes.
"""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
from langgraph_sdk import get_client

URL = os.environ.get("LANGGRAPH_URL", "http://127.0.0.1:2024")
GRAPH = "trading_research"


def check_server(url: str) -> None:
    """Exit with a message unless a LangGraph server serving this app's graph answers at ``url``."""
    hint = (
        "Start it with `langgraph dev` in examples/langgraph_app, and set LANGGRAPH_URL to the address on its"
        " 'API:' line (it serves on another port when the one asked for is taken)."
    )
    try:
        ok = httpx.get(f"{url}/ok", timeout=5)
        found = httpx.post(f"{url}/assistants/search", json={"graph_id": GRAPH, "limit": 1}, timeout=5)
    except httpx.HTTPError as exc:
        sys.exit(f"No LangGraph server answers at {url} ({type(exc).__name__}: {exc}). {hint}")
    if ok.status_code != 200 or found.status_code != 200 or not found.json():
        sys.exit(f"The server at {url} is not this app's langgraph dev (no '{GRAPH}' graph). {hint}")


async def main() -> None:
    client = get_client(url=URL)
    thread = (await client.threads.create())["thread_id"]
    task = {"objective": "Trend-following momentum strategy for a volatile equity index", "seed": 7}
    first = await client.runs.wait(thread, GRAPH, input=task)  # fails, learns, stops at review
    await client.runs.wait(thread, GRAPH, command={"resume": "approve"})
    second = await client.runs.wait(thread, GRAPH, input=task)  # recalls the lessons
    print(first["iteration"], "->", second["iteration"])  # 3 -> 1 on a new memory
    hits = await client.store.search_items(["lessons"], query="lookback too short", limit=5)
    print([h["value"]["lesson"] for h in hits["items"]])


if __name__ == "__main__":
    check_server(URL)
    asyncio.run(main())
