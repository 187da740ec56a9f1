"""A process that writes to a data directory until it is killed, logging what was acknowledged.

usage: python crash_worker.py DATA_DIR LOG SEED [mix|rebuild|bulk [BATCH]]

It opens ``Memory`` (fake 16-d embeddings) and loops over random operations:
put batches of 50 items, updates, delete batches, typed-API calls (finding,
strategy with a version, lesson) and ``rebuild_index``; in ``bulk`` mode,
batches large enough for the catalog's bulk path instead (BATCH new items,
default 1,000, or updates of up to 300 acknowledged ones). Before each
operation it appends an ``intent`` line to LOG, and after the call returned
an ``ack`` line (plain ``os.write``: the kernel keeps it when the process is
killed). :mod:`bench.common.crash_check` replays the log against the
reopened directory.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from bench.common.crash_check import replay
from langgraph_memory import Memory
from langgraph_memory.catalog.bulk import BULK_MIN

DIMS = 16
NAMESPACES = [("crash", f"ns{i}") for i in range(4)]
STRATEGY_NAMES = ["trend", "carry", "value"]


def main() -> None:
    data_dir, log_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "mix"
    bulk_size = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(kind: str, **fields: object) -> None:
        os.write(fd, (json.dumps({"kind": kind, **fields}) + "\n").encode())

    mem = Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=DIMS))
    store = mem.store
    counter = rng.randrange(10**9)
    print("ready", flush=True)
    while True:
        if mode == "bulk":
            counter = _bulk_batch(store, rng, log, log_path, seed, counter, bulk_size)
            continue
        roll = 1.0 if mode == "rebuild" else rng.random()
        if roll < 0.45:
            ns = rng.choice(NAMESPACES)
            items = []
            for _ in range(50):
                counter += 1
                items.append(
                    [
                        list(ns),
                        f"k{counter}",
                        {
                            "text": f"memory {counter} of {seed}",
                            "n": counter,
                            "kind": "even" if counter % 2 == 0 else "odd",
                        },
                    ]
                )
            log("intent", op="put", items=items)
            store.batch([PutOp(tuple(ns), key, value) for ns, key, value in items])
            log("ack", op="put")
        elif roll < 0.55:
            known = _known(log_path)
            if not known:
                continue
            picks = rng.sample(known, min(20, len(known)))
            items = []
            for ns, key in picks:
                counter += 1
                items.append([ns, key, {"text": f"updated {counter} of {seed}", "n": counter, "kind": "updated"}])
            log("intent", op="put", items=items)
            store.batch([PutOp(tuple(ns), key, value) for ns, key, value in items])
            log("ack", op="put")
        elif roll < 0.72:
            known = _known(log_path)
            if not known:
                continue
            picks = rng.sample(known, min(20, len(known)))
            log("intent", op="delete", items=[[ns, key] for ns, key in picks])
            store.batch([PutOp(tuple(ns), key, None) for ns, key in picks])
            log("ack", op="delete")
        elif roll < 0.95:
            counter += 1
            log("intent", op="typed")
            f = mem.store_research_finding(f"finding {counter} of {seed}", source="technical", confidence=0.7)
            log("ack", op="typed", label="research", id=f.id, parents=[])
            log("intent", op="typed")
            s = mem.store_strategy(rng.choice(STRATEGY_NAMES), f"strategy {counter} of {seed}", parent_id=f.id)
            log("ack", op="typed", label="strategies", id=s.id, parents=[f.id], version=s.version, name=s.name)
            log("intent", op="typed")
            lesson = mem.store_lesson(f"lesson {counter} of {seed}", strategy_id=s.id, iteration=1)
            log("ack", op="typed", label="lessons", id=lesson.id, parents=[s.id])
        else:
            log("intent", op="rebuild")
            store.rebuild_index(progress=False)
            log("ack", op="rebuild")


def _bulk_batch(
    store: object, rng: random.Random, log: object, log_path: str, seed: int, counter: int, size: int
) -> int:
    """One batch for the bulk path: ``size`` new items, or updates of up to 300 acknowledged ones."""
    known = _known(log_path) if rng.random() < 0.3 else []
    items = []
    if len(known) >= 2 * BULK_MIN:
        for ns, key in rng.sample(known, rng.randint(BULK_MIN, min(300, len(known)))):
            counter += 1
            items.append([ns, key, {"text": f"bulk update {counter} of {seed}", "n": counter, "kind": "updated"}])
    else:
        ns = list(rng.choice(NAMESPACES))
        for _ in range(size):
            counter += 1
            items.append(
                [ns, f"b{counter}", {"text": f"bulk memory {counter} of {seed}", "n": counter, "kind": "bulk"}]
            )
    log("intent", op="put", items=items)  # type: ignore[operator]
    store.batch([PutOp(tuple(ns), key, value) for ns, key, value in items])  # type: ignore[attr-defined]
    log("ack", op="put")  # type: ignore[operator]
    return counter


def _known(log_path: str) -> list[tuple[list[str], str]]:
    """Keys the log says are live (acknowledged or settled puts, minus deletes)."""
    state, _pending, _typed = replay(Path(log_path))
    return [(list(ns), key) for (ns, key), value in state.items() if value is not None]


if __name__ == "__main__":
    main()
