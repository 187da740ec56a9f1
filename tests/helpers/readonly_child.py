"""Child process for the read-only tests: read a memory with ``read_only=True``, try every kind of write.

usage: python readonly_child.py DATA_DIR FINDING_ID STRATEGY_ID

Prints one JSON document: what the reads returned, the type of error each write
raised, and whether this process could create a file in DATA_DIR (it must not,
for the test to mean anything).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory import Memory


def _error_of(fn) -> str | None:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is reported
        return type(exc).__name__
    return None


def main() -> None:
    data_dir, finding_id, strategy_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    out: dict = {}
    try:
        (data_dir / "probe").write_text("x")
        out["can_write"] = True
    except OSError:
        out["can_write"] = False
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        out["read_only"] = mem.read_only
        out["get"] = mem.store.get(("notes",), "k3").value
        out["search"] = [r.key for r in mem.store.search(("notes",), query="note 7 about momentum", limit=3)]
        out["explain"] = mem.store.explain(("notes",), query="momentum").strategy
        out["list"] = [list(ns) for ns in mem.store.list_namespaces()]
        out["findings"] = [h.record.id for h in mem.query_research_findings("momentum")]
        out["lineage"] = mem.lineage(strategy_id).ancestor_ids
        out["stats_items"] = mem.stats().items
        out["threads"] = len(list(mem.checkpointer.list(None)))
        writes = {
            "put": lambda: mem.store.put(("notes",), "new", {"text": "x"}),
            "batch": lambda: mem.store.batch([PutOp(("notes",), "new", {"text": "x"})]),
            "delete": lambda: mem.store.delete(("notes",), "k3"),
            "typed": lambda: mem.store_research_finding("new", source="technical", confidence=0.5),
            "retire": lambda: mem.retire(finding_id, reason="test"),
            "sweep": lambda: mem.store.sweep_ttl(),
            "rebuild": lambda: mem.store.rebuild_index(progress=False),
            "archive": lambda: mem.archiver.run(),
            "restore": lambda: mem.archiver.restore(all_items=True),
            "checkpoint": lambda: mem.checkpointer.put(
                {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                {"v": 1, "id": "1", "ts": "", "channel_values": {}, "channel_versions": {}, "versions_seen": {}},
                {},
                {},
            ),
        }
        out["writes"] = {name: _error_of(fn) for name, fn in writes.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
