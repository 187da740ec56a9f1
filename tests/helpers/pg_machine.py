"""One "machine" of a shared memory, for tests: a process that opens ``Memory.open(url, chroma_client=...)``
with its own local directory and runs commands it reads as JSON lines (not collected).

usage: python pg_machine.py URL CHROMA_HOST:PORT LOCAL_DIR DIMS

Each input line is ``{"cmd": NAME, ...arguments}``; each answer is one line
``{"ok": RESULT}`` or ``{"error": TYPE, "message": TEXT}`` on the original
standard output (the library's logging and anything Chroma prints go to
standard error). ``go`` (a file name), where given, makes the command wait
until that file exists, so two machines start together.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding


def _wait(go: str | None) -> None:
    if go:
        deadline = time.monotonic() + 120
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.002)


class Machine:
    def __init__(self, url: str, chroma: str, local_dir: str, dims: int) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        from langgraph_memory import Memory

        host, port = chroma.rsplit(":", 1)
        os.environ["LANGGRAPH_MEMORY_LOCAL_DIR"] = local_dir
        self.emb = DeterministicFakeEmbedding(size=dims)
        client = chromadb.HttpClient(host=host, port=int(port), settings=ChromaSettings(anonymized_telemetry=False))
        self.mem = Memory.open(url, embeddings=self.emb, chroma_client=client, lock_timeout=20)
        self.store = self.mem.store

    # ------------------------------------------------------------ commands

    def ping(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "local": str(self.mem.settings.data_dir), "where": self.mem.settings.where}

    def put(self, ns: list[str], key: str, value: dict[str, Any]) -> None:
        self.store.put(tuple(ns), key, value, index=["text"])

    def bulk(self, ns: list[str], prefix: str, n: int) -> None:
        from langgraph.store.base import PutOp

        for start in range(0, n, 50):
            ops = [
                PutOp(tuple(ns), f"{prefix}-{i}", {"text": f"{prefix} bulk note number {i}"}, index=["text"])
                for i in range(start, min(n, start + 50))
            ]
            self.store.batch(ops)

    def search(self, ns: list[str], query: str, limit: int = 5) -> dict[str, Any]:
        found = self.store.search_explained(tuple(ns), query=query, limit=limit)
        name = self.store.collections.for_namespace(tuple(ns)).name
        vectors = self.store.vectors
        return {
            "hits": [[h.item.key, h.parts.cosine if h.parts is not None else None] for h in found.hits],
            "plan": str(found.plan),
            "resident": bool(vectors is not None and vectors.cached(name)),
            "cached": vectors.count(name) if vectors is not None else 0,
        }

    def get(self, ns: list[str], key: str) -> dict[str, Any] | None:
        it = self.store.get(tuple(ns), key)
        return None if it is None else it.value

    def lesson(self, text: str) -> str:
        return self.mem.store_lesson(text, failure_type="backtest").id

    def lessons(self, context: str, k: int = 3) -> list[list[Any]]:
        return [[h.id, h.record.lesson] for h in self.mem.get_relevant_lessons(context, k=k, min_relevance=None)]

    def strategies(self, name: str, n: int, go: str | None = None) -> list[int]:
        _wait(go)
        return [self.mem.store_strategy(name, f"{name} variant {os.getpid()}-{i}").version for i in range(n)]

    def versions(self, name: str) -> list[int]:
        return [v.version for v in self.mem.versions(name)]

    def ingest(self, path: str, go: str | None = None) -> list[dict[str, Any]]:
        _wait(go)
        report = self.mem.ingest(path)
        return [{"path": str(r.path), "status": r.status, "chunks": r.chunks} for r in report.files]

    def turns(self, thread: str, texts: list[str], importance: float | None = None) -> list[str]:
        return [self.mem.sessions.add_turn(t, f"noted: {t}", thread_id=thread, importance=importance) for t in texts]

    def promote(self, session_id: str, go: str | None = None) -> list[str]:
        _wait(go)
        return [t.memory_key or "" for t in self.mem.sessions.promote_to_longterm(session_id)]

    def close(self) -> None:
        self.mem.close()


def main() -> None:
    url, chroma, local_dir, dims = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever else writes to standard output goes to standard error
    sys.stdout = sys.stderr
    try:
        machine = Machine(url, chroma, local_dir, dims)
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
        out.write(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        return
    out.write(json.dumps({"ok": "ready"}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        args = json.loads(line)
        cmd = args.pop("cmd")
        try:
            result = getattr(machine, cmd)(**args)
        except Exception as exc:  # noqa: BLE001 - the test decides what an error means
            out.write(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        else:
            out.write(json.dumps({"ok": result}) + "\n")
        if cmd == "close":
            return


if __name__ == "__main__":
    Path(sys.argv[3]).mkdir(parents=True, exist_ok=True)
    main()
