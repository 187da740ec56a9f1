"""Round trips to the PostgreSQL catalog per store operation: one-namespace search, single put, and the rest.

Counts every statement string the catalog's psycopg connection sends (one
``execute``, or one commit script, is one round trip, however many statements it carries) for each
operation of a small fixed workload, on a server of yours:

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 python bench/store/pg_round_trips.py postgresql://postgres@127.0.0.1:5432/postgres
    ... --show     # also print each round trip's SQL (values elided)

The workload (fake 16-dimension embeddings): 2,000 items in 20 namespaces
under ``("memories", ...)``; then, each measured after a warm-up of the same
call: a one-namespace search, a whole-prefix search, a filtered search, a
single put of a new key, a single put replacing a key, a batch of 100 puts.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

_VALUES = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")


def _traced(sent: list[str]) -> None:
    for cls in (psycopg.ClientCursor, psycopg.Cursor):
        for name in ("execute", "executemany"):
            original = getattr(cls, name)

            def wrapper(cur: Any, query: Any, *a: Any, _o: Any = original, **kw: Any) -> Any:
                sent.append(str(query) if not hasattr(query, "as_string") else query.as_string(cur))
                return _o(cur, query, *a, **kw)

            setattr(cls, name, wrapper)
    # A commit goes as one script of bound statements, past the cursors.
    from langgraph_memory.catalog.postgres.connection import PgConnection

    script = PgConnection._send_script

    def send_script(conn: Any, sql: str) -> None:
        sent.append(sql)
        script(conn, sql)

    PgConnection._send_script = send_script  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="a PostgreSQL server (a fresh database is made on it)")
    parser.add_argument("--show", action="store_true", help="print each round trip's SQL")
    parser.add_argument("--width", type=int, default=400, help="characters of each round trip's SQL shown")
    args = parser.parse_args()
    from langgraph_memory.config import Settings
    from langgraph_memory.store import ChromaStore

    db = f"lgm_rt_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    url = args.url.rsplit("/", 1)[0] + f"/{db}"
    sent: list[str] = []
    _traced(sent)
    emb = DeterministicFakeEmbedding(size=16)
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore(
            settings=Settings.resolve(url, local_dir=tmp), index={"dims": 16, "embed": emb, "fields": ["content"]}
        )
        try:
            for b in range(20):
                store.batch(
                    [
                        PutOp(("memories", f"u{i % 20}"), f"k{i}", {"content": f"text {i} alpha", "kind": f"k{i % 7}"})
                        for i in range(b * 100, b * 100 + 100)
                    ]
                )
            store.wait_for_index(60)
            n = [0]

            def new_put() -> None:
                n[0] += 1
                store.batch([PutOp(("bench_puts", "single"), f"p{n[0]}", {"content": f"fresh {n[0]}"})])

            def replace_put() -> None:
                n[0] += 1
                store.batch([PutOp(("memories", "u3"), "k3", {"content": f"replaced {n[0]}", "kind": "k3"})])

            def batch_put() -> None:
                n[0] += 1
                store.batch([PutOp(("bench_puts", "batch"), f"b{n[0]}-{j}", {"content": f"b {j}"}) for j in range(100)])

            cases: list[tuple[str, Callable[[], Any]]] = [
                ("search one namespace", lambda: store.search(("memories", "u3"), query="alpha 3", limit=10)),
                ("search whole prefix", lambda: store.search(("memories",), query="alpha 3", limit=10)),
                ("search filter", lambda: store.search(("memories",), query="alpha", filter={"kind": "k1"}, limit=10)),
                ("single put, new key", new_put),
                ("single put, replacing", replace_put),
                ("batch of 100 puts", batch_put),
            ]
            for name, run in cases:
                for _ in range(3):
                    run()
                store.wait_for_index(60)
                del sent[:]
                run()
                print(f"{name}: {len(sent)} round trips")
                if args.show:
                    for s in sent:
                        print("   ", _VALUES.sub("?", " ".join(s.split()))[: args.width])
        finally:
            store.close()
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
