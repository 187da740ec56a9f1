"""Retrieval quality on LoCoMo: recall@k of ChromaStore against exact search, same model, same vectors.

    .venv/bin/python bench/locomo_bench.py [--data ../shared/data/locomo] [--write]

Every turn of each conversation is stored as a memory (text "speaker: text",
with its session time) in the namespace ("locomo", <conversation>); every
question of categories 1-4 is asked of that namespace, and we count how many
of its evidence turns are among the top k (recall@k) and whether any is
(hit@k). ChromaStore answers from Chroma's HNSW index; InMemoryStore answers
by exact cosine similarity over the same vectors, so the gap between the two
is what approximate search costs. Both stores embed with the default
all-MiniLM-L6-v2 model, through one shared cache so each text is embedded once.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from rich.console import Console
from rich.table import Table

from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings
from langgraph_memory.store import ChromaStore

KS = (1, 5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _turns(conv: dict) -> list[dict]:
    out = []
    c = conv.get("conversation", conv)
    n = 1
    while f"session_{n}" in c:
        when = c.get(f"session_{n}_date_time", "")
        for turn in c[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append({"dia_id": turn["dia_id"], "text": f"{turn['speaker']}: {text}", "session_time": when})
        n += 1
    return out


def _evaluate(store, conversations: dict[str, dict]) -> dict[str, dict[int, list[float]]]:
    scores: dict[str, dict[int, list[float]]] = {}
    for name, conv in conversations.items():
        for qa in conv["qa"]:
            cat = qa.get("category")
            if cat not in CATEGORIES or not qa.get("evidence"):
                continue
            evidence = {e.strip() for e in qa["evidence"]}
            hits = store.search(("locomo", name), query=qa["question"], limit=max(KS))
            ranked = [h.key for h in hits]
            for label in (CATEGORIES[cat], "all"):
                bucket = scores.setdefault(label, {k: [] for k in KS} | {-k: [] for k in KS})
                for k in KS:
                    top = set(ranked[:k])
                    bucket[k].append(len(top & evidence) / len(evidence))
                    bucket[-k].append(1.0 if top & evidence else 0.0)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description="LoCoMo recall@k: ChromaStore vs exact search")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"))
    parser.add_argument("--write", action="store_true", help="write bench/RESULTS_locomo.md")
    args = parser.parse_args()

    files = sorted(Path(args.data).glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo files in {args.data}")
    conversations = {f.stem: json.loads(f.read_text()) for f in files}
    tmp = Path(tempfile.mkdtemp(prefix="lgm-locomo-"))
    emb: Embeddings = CachedEmbeddings(SentenceTransformerEmbeddings(), path=tmp / "shared-cache.sqlite")

    chroma = ChromaStore(data_dir=tmp / "memory", index={"dims": 384, "embed": emb, "fields": ["text"]})
    exact = InMemoryStore(index={"dims": 384, "embed": emb, "fields": ["text"]})
    n_turns = 0
    started = time.perf_counter()
    for name, conv in conversations.items():
        ops = [PutOp(("locomo", name), t["dia_id"], t) for t in _turns(conv)]
        n_turns += len(ops)
        for i in range(0, len(ops), 256):
            chroma.batch(ops[i : i + 256])
            exact.batch(ops[i : i + 256])
    load_s = time.perf_counter() - started

    results = {"ChromaStore (HNSW)": _evaluate(chroma, conversations), "InMemoryStore (exact)": _evaluate(exact, conversations)}
    chroma.close()

    table = Table(title=f"LoCoMo retrieval, {len(files)} conversations, {n_turns} turns (all-MiniLM-L6-v2)")
    table.add_column("store")
    table.add_column("category")
    table.add_column("questions", justify="right")
    for k in KS:
        table.add_column(f"recall@{k}", justify="right")
    for k in KS:
        table.add_column(f"hit@{k}", justify="right")
    rows = []
    for store_name, scores in results.items():
        for label in [*CATEGORIES.values(), "all"]:
            b = scores[label]
            row = [store_name, label, str(len(b[1]))]
            row += [f"{sum(b[k]) / len(b[k]):.3f}" for k in KS]
            row += [f"{sum(b[-k]) / len(b[-k]):.3f}" for k in KS]
            rows.append(row)
            table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(f"loaded and embedded {n_turns} turns in {load_s:.1f} s")
    if args.write:
        import chromadb

        header = ["store", "category", "questions", *[f"recall@{k}" for k in KS], *[f"hit@{k}" for k in KS]]
        md = [
            "## LoCoMo retrieval quality (`bench/locomo_bench.py`)",
            "",
            f"{len(files)} conversations ({', '.join(f.stem for f in files)}), {n_turns} turns, questions of categories 1-4;"
            " default model all-MiniLM-L6-v2; recall@k = share of evidence turns in the top k, hit@k = any evidence turn in the top k.",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *["| " + " | ".join(r) + " |" for r in rows],
            "",
            f"Machine: {platform.machine()}, Python {platform.python_version()}, chromadb {chromadb.__version__},"
            f" {time.strftime('%Y-%m-%d')}.",
        ]
        (Path(__file__).parent / "RESULTS_locomo.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
