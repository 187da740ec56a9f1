"""Every SQL statement the store runs on its catalog for a fixed workload, counted, to compare two trees.

A refactoring of the catalog's named queries should leave the statements
(and so SQLite's plans) exactly as they were. Run this once in each tree and
diff the files; timestamps and the index seal are masked, so a diff shows
only statements that changed.

    PYTHONPATH=/path/to/old HF_HUB_OFFLINE=1 python bench/store/catalog_sql_trace.py /tmp/old.txt
    PYTHONPATH=/path/to/new HF_HUB_OFFLINE=1 python bench/store/catalog_sql_trace.py /tmp/new.txt
    diff /tmp/old.txt /tmp/new.txt && echo identical

The workload (fake 16-dimension embeddings, 3,000 items in 30 namespaces):
searches over one namespace, the whole prefix and filters keeping 1%, 14%
and 50%, listings, ``list_namespaces``; a put followed by the same searches
(the vector cache catches up from the change log); the same searches again
with every plan through Chroma (``exact_max = 0``); then ``rebuild_index``.
"""

from __future__ import annotations

import argparse
import collections
import re
import tempfile
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

import langgraph_memory._infra.sqlite as _sqlite

_TIME = re.compile(r"\b1[0-9]{9}\.[0-9]+\b")
_SEAL = re.compile(r"'[0-9a-f]{64}'")
_ID_LIST = re.compile(r"IN \((?:[0-9]+,?\s*)+\)")
_MARKS = re.compile(r"IN \((?:\?,?)+\)")


def _traced(seen: list[str]) -> None:
    """Record every statement run on a connection to a catalog file opened from now on."""
    connect = _sqlite.connect

    def tracing(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        conn = connect(path, *args, **kwargs)
        if str(path).endswith("catalog.sqlite"):
            conn.set_trace_callback(seen.append)
        return conn

    _sqlite.connect = tracing  # type: ignore[assignment]


def _kind(i: int) -> str:
    return "rare" if i % 100 == 0 else ("mid" if i % 7 == 0 else ("half" if i % 2 else "other"))


def _searches(store) -> None:  # type: ignore[no-untyped-def]
    store.search(("memories", "u3"), query="alpha 3", limit=5)
    store.search(("memories",), query="alpha 3", limit=5)
    for kind in ("rare", "mid", "half"):
        store.search(("memories",), query="alpha", filter={"kind": kind}, limit=5)
        store.search(("memories", "u3"), query="alpha", filter={"kind": kind}, limit=5)
    store.search(("memories",), limit=5)
    store.search(("memories",), filter={"kind": "mid"}, limit=5)
    store.list_namespaces(prefix=("memories",))
    store.list_namespaces()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="where to write the counted statements")
    args = parser.parse_args()
    seen: list[str] = []
    _traced(seen)
    from langgraph_memory.store import ChromaStore

    with tempfile.TemporaryDirectory() as tmp:
        emb = DeterministicFakeEmbedding(size=16)
        store = ChromaStore(data_dir=Path(tmp) / "memory", index={"dims": 16, "embed": emb, "fields": ["content"]})
        try:
            for i in range(3000):
                store.put(("memories", f"u{i % 30}"), f"k{i}", {"content": f"text {i} alpha", "kind": _kind(i)})
            start = len(seen)
            _searches(store)
            store.put(("memories", "u1"), "new", {"content": "fresh alpha", "kind": "rare"})
            _searches(store)
            store.planner.exact_max = 0
            _searches(store)
            store.rebuild_index(progress=False)
        finally:
            store.close()
    statements = [s for s in seen[start:] if re.search(r"\b(FROM|JOIN|INTO|UPDATE)\b", s)]
    counts = collections.Counter(
        _MARKS.sub("IN (<marks>)", _ID_LIST.sub("IN (<ids>)", _SEAL.sub("<seal>", _TIME.sub("<time>", s))))
        for s in statements
    )
    args.out.write_text("".join(f"{n}\t{s}\n" for s, n in sorted(counts.items())))
    print(f"{len(statements)} statements on the catalog, {len(counts)} distinct, written to {args.out}")


if __name__ == "__main__":
    main()
