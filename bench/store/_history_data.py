"""The history benches' store: ``N`` items over 100 namespaces, each changed 0 to 5 times (`history_bench`, `as_of_bench`)."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langgraph.store.base import PutOp

from langgraph_memory.store import ChromaStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.common
from bench.common.items import MixtureEmbeddings  # noqa: E402

DIMS = 64
#: The vectors a history bench embeds with (``--vectors``): by default 384-d ones shaped like a sentence model's
#: (`MixtureEmbeddings`: the default model's width, the store bench's mixture), or 64-d fake ones (a hash's
#: random draw: no neighbourhoods, the hard case for any index; the history benches' vectors until 2026-12-06).
VECTORS = ("mixture384", "random64")
BATCH = 1000
WORDS = ["momentum", "carry", "value", "breakout", "volatility", "regime", "drawdown", "liquidity"]
#: Each key's last value, for a peer store.
LAST: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}


def index_config(vectors: str) -> dict[str, Any]:
    """The store's ``index`` for ``--vectors``: its dims and embeddings (no text fields: the whole value)."""
    embed: Embeddings = DeterministicFakeEmbedding(size=DIMS) if vectors == "random64" else MixtureEmbeddings()
    return {"dims": DIMS if vectors == "random64" else MixtureEmbeddings.dims, "embed": embed}


def value(rng: random.Random, n: int) -> dict[str, Any]:
    return {"text": " ".join(rng.choice(WORDS) for _ in range(6)) + f" {n}", "kind": rng.choice(["a", "b", "c"])}


def load_store(
    store: ChromaStore, keys: list[tuple[tuple[str, ...], str]], rng: random.Random
) -> tuple[float, float, str]:
    """Put every key, then change each 0-5 times, through ``store.batch()``; then build the index once.

    Returns the moments half way through the changes and after the last, and how long the load took. Each key's
    last value is kept in ``LAST`` (for the peer store).
    """
    catch_up = store._writer.catch_up
    assert catch_up is not None
    held = (catch_up.bulk_delay, catch_up.bulk_max_wait, catch_up.bulk_pending)
    # No index pass during the load: the rebuild below writes what it would have, once.
    catch_up.bulk_delay, catch_up.bulk_max_wait, catch_up.bulk_pending = 1e9, 1e9, 10**12
    t0 = time.perf_counter()
    try:
        for start in range(0, len(keys), BATCH):
            ops = [PutOp(ns, k, value(rng, i)) for i, (ns, k) in enumerate(keys[start : start + BATCH], start)]
            store.batch(ops)
            LAST.update(((op.namespace, op.key), op.value) for op in ops)
        changes = [k for k in keys for _ in range(rng.randint(0, 5))]
        rng.shuffle(changes)
        half = len(changes) // 2
        middle = 0.0
        done = 0
        while done < len(changes):
            batch = list(dict.fromkeys(changes[done : done + BATCH]))  # a key once per batch
            ops = [PutOp(ns, k, value(rng, done + j)) for j, (ns, k) in enumerate(batch)]
            store.batch(ops)
            LAST.update(((op.namespace, op.key), op.value) for op in ops)
            done += BATCH
            if not middle and done >= half:
                middle = time.time()
        last = time.time()
        written = time.perf_counter() - t0
    finally:
        catch_up.bulk_delay, catch_up.bulk_max_wait, catch_up.bulk_pending = held
    store.rebuild_index(progress=False)
    store.wait_for_index(timeout=1800)
    total = time.perf_counter() - t0
    return middle, last, f"load {total:.0f} s ({written:.0f} s written, {total - written:.0f} s index build)"
