"""Child process for the read-only archive tests: read the archive of a memory opened with ``read_only=True``.

usage: python readonly_archive_child.py DATA_DIR ARCHIVED_ID STRATEGY_ID

Prints one JSON document: what each read of the archive returned, the type of
error each archive write raised, and whether this process could create a
file in DATA_DIR (it must not, for the test to mean anything).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.archive import schedule_archival


def _error_of(fn) -> str | None:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is reported
        return type(exc).__name__
    return None


def main() -> None:
    data_dir, archived_id, strategy_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    out: dict = {}
    try:
        (data_dir / "archive" / "probe").write_text("x")
        out["can_write"] = True
    except OSError:
        out["can_write"] = False
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
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
    print(json.dumps(out))


if __name__ == "__main__":
    main()
