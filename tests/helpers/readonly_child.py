"""Child process for the read-only tests: read a memory with ``read_only=True``, try every kind of write.

usage: python readonly_child.py memory DATA_DIR FINDING_ID STRATEGY_ID
       python readonly_child.py archive DATA_DIR ARCHIVED_ID STRATEGY_ID

Prints one JSON document: what the reads returned (of the memory, or of its
archive), the type of error each write raised, and whether this process could
create a file in DATA_DIR (it must not, for the test to mean anything).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory import Memory
from langgraph_memory.archive import schedule_archival


def _error_of(fn) -> str | None:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is reported
        return type(exc).__name__
    return None


def _memory(mem: Memory, out: dict[str, Any], finding_id: str, strategy_id: str) -> None:
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


def _archive(mem: Memory, out: dict[str, Any], archived_id: str, strategy_id: str) -> None:
    arch = mem.archiver
    out["read_only"] = arch.read_only
    out["files"] = [f.name for f in arch.list_archives()]
    out["counts"] = arch.archived_counts()
    out["count"] = arch.count_archived()
    out["get"] = [a.key for a in arch.get_archived([archived_id])]
    found = arch.find(archived_id)
    out["find"] = found.value["content"] if found is not None else None
    out["iter"] = sorted(a.key for a in arch.iter_archived())
    out["search"] = [h.key for h in arch.search_archive("research_findings", "momentum fades", k=3)]
    out["verify"] = arch.verify()
    out["pending"] = arch.pending_recovery()
    out["dry_run"] = arch.run(dry_run=True).dry_run
    out["restore_dry_run"] = arch.restore(keys=[archived_id], dry_run=True).restored
    lin = mem.lineage(strategy_id)
    out["lineage"] = [[a.id, a.label] for a in lin.ancestors]
    out["stats_archived"] = mem.stats().archived
    writes = {
        "run": lambda: arch.run(),
        "restore": lambda: arch.restore(keys=[archived_id]),
        "restore_all": lambda: arch.restore(all_items=True),
        "recover": lambda: arch.recover(),
        "forget": lambda: arch.forget(["x"]),
        "schedule": lambda: schedule_archival(arch, interval=3600, start=False),
    }
    out["writes"] = {name: _error_of(fn) for name, fn in writes.items()}


def main() -> None:
    mode, data_dir, item_id, strategy_id = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    out: dict[str, Any] = {}
    try:
        (data_dir / ("archive" if mode == "archive" else "") / "probe").write_text("x")
        out["can_write"] = True
    except OSError:
        out["can_write"] = False
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        (_archive if mode == "archive" else _memory)(mem, out, item_id, strategy_id)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
