"""Store and recall typed memories through ChromaStore, offline, on the embedded default.

    python examples/store_quickstart.py [--data-dir DIR]

Puts a few research findings, lessons and a strategy into their typed
collections, then recalls them by meaning (the queries share few words with
the memories) and with filters.
"""

from __future__ import annotations

import argparse
import tempfile

from rich.console import Console
from rich.table import Table

from langgraph_memory.store import ChromaStore

FINDINGS = [
    ("f1", "Momentum in large-cap equities fades within days of an earnings surprise.", "technical", 0.82),
    ("f2", "Rising real yields compress valuations of long-duration growth stocks.", "macro", 0.74),
    ("f3", "Carry trades unwind abruptly when currency volatility spikes.", "fx", 0.41),
    ("f4", "Small caps lag in the month after a central bank tightening surprise.", "macro", 0.66),
]
LESSONS = [
    ("l1", "A 10-day lookback whipsawed in the volatile regime; lengthen it.", 1, False),
    ("l2", "Stops tighter than one ATR were hit by noise on every trade.", 2, True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: a fresh temporary one)")
    args = parser.parse_args()
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="lgm-quickstart-")
    console = Console()

    with ChromaStore(data_dir=data_dir, index=ChromaStore.default_index()) as store:
        for key, content, source, confidence in FINDINGS:
            store.put(("research",), key, {"content": content, "source": source, "confidence": confidence})
        for key, lesson, iteration, resolved in LESSONS:
            store.put(("lessons",), key, {"lesson": lesson, "iteration": iteration, "resolved": resolved})
        store.put(
            ("strategies",),
            "s1",
            {"description": "Trend following on 50/200-day moving averages", "name": "trend", "status": "tested"},
        )

        table = Table(title=f"Recall from {data_dir}")
        for col in ("query", "collection", "key", "score", "memory"):
            table.add_column(col)
        queries = [
            (("research",), "what happens to tech shares when interest rates go up?", None),
            (("research",), "macro findings we trust", {"source": "macro", "confidence": {"$gte": 0.7}}),
            (("lessons",), "signals flip back and forth in choppy markets", {"resolved": False}),
            (("strategies",), "moving-average crossover", None),
        ]
        for namespace, query, flt in queries:
            for hit in store.search(namespace, query=query, filter=flt, limit=2):
                text = hit.value.get("content") or hit.value.get("lesson") or hit.value.get("description")
                table.add_row(query, namespace[0], hit.key, f"{hit.score:.2f}", text)
        console.print(table)
        console.print(f"namespaces: {store.list_namespaces()}")


if __name__ == "__main__":
    main()
