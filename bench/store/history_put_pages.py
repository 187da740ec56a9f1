"""What keeping history adds to a put's commits, in pages: WAL frames per put by B-tree, history kept and not.

    .venv/bin/python bench/store/history_put_pages.py [--items 10000] [--puts 20]

Pages written do not depend on the machine's load, where a put's p50 on a
shared machine does (``history_bench.py`` times it). Loads a store as
``history_bench`` does (SQLite catalog), then makes single puts replacing a
value, alternately with the history kept and with `catalog.history.record`
a no-op. Before each put the WAL is truncated; after it (and the index
catch-up's commits) every frame in the WAL is attributed to its table or
index through ``dbstat``.
"""

from __future__ import annotations

import argparse
import collections
import random
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench

from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402

from bench.store import _history_data as hb  # noqa: E402
from langgraph_memory.catalog import history as _history  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402


def _frames(wal: Path, page_size: int) -> list[int]:
    """The page number of every frame in the WAL file ``wal``."""
    data = wal.read_bytes()
    return [struct.unpack(">I", data[off : off + 4])[0] for off in range(32, len(data) - 23, 24 + page_size)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--puts", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore(
            data_dir=tmp, index={"dims": hb.DIMS, "embed": DeterministicFakeEmbedding(size=hb.DIMS)}, collections=None
        )
        keys = [(("memories", f"u{i % 100}"), f"k{i}") for i in range(args.items)]
        rng = random.Random(48)
        hb.load_store(store, keys, rng)
        path = store.catalog.path
        raw = sqlite3.connect(path, isolation_level=None)
        page_size = int(raw.execute("PRAGMA page_size").fetchone()[0])
        store.catalog._connection().execute("PRAGMA wal_autocheckpoint = 0")  # the WAL holds every frame of a put
        record = _history.record
        got: dict[str, collections.Counter[str]] = {"kept": collections.Counter(), "not kept": collections.Counter()}
        for i in range(2 * args.puts):
            arm = "kept" if i % 2 == 0 else "not kept"
            store.wait_for_index(timeout=600)
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if arm == "not kept":
                _history.record = lambda *a, **k: None  # type: ignore[assignment]
            try:
                ns, key = rng.choice(keys)
                store.put(ns, key, hb.value(rng, i))
            finally:
                _history.record = record
            store.wait_for_index(timeout=600)
            owner = {int(p): str(name) for name, p in raw.execute("SELECT name, pageno FROM dbstat")}
            got[arm].update(owner.get(p, "(freed)") for p in _frames(Path(f"{path}-wal"), page_size))
        raw.close()
        store.close()
    names = sorted(set(got["kept"]) | set(got["not kept"]), key=lambda n: -got["kept"][n])
    print(
        f"WAL frames per put replacing a value, {args.items:,} items, {args.puts} puts per arm (index catch-up included)"
    )
    print()
    print("| B-tree | history kept | not kept |")
    print("|---|---:|---:|")
    for name in names:
        print(f"| {name} | {got['kept'][name] / args.puts:.2f} | {got['not kept'][name] / args.puts:.2f} |")
    total = {a: sum(c.values()) / args.puts for a, c in got.items()}
    print(f"| **total** | {total['kept']:.2f} | {total['not kept']:.2f} |")


if __name__ == "__main__":
    main()
