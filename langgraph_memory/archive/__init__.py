"""The archive: stale memories move to compressed, verified files that stay searchable and restorable.

    from langgraph_memory.archive import Archiver, schedule_archival

    archiver = Archiver(store)                         # <data_dir>/archive
    report = archiver.run()                            # or run(dry_run=True)
    hits = archiver.search_archive("lessons", "overfitting", k=5)
    archiver.restore(keys=[hits[0].key])
    job = schedule_archival(archiver, cron="0 3 * * *")

Modules: `format` (the file format), `manifest` (file states and
item index), `archiver` (run, recovery, search, restore),
`schedule` (APScheduler), `reports` (returned records). Behind
the archiver, private modules hold its steps (`_steps`), the read side
(`_reading`) and the thread file format (`_thread_files`).
"""

from __future__ import annotations

from langgraph_memory.archive.archiver import Archiver, ProgressCallback, ThreadPruner, default_policies
from langgraph_memory.archive.format import FORMAT_VERSION, ArchivedItem
from langgraph_memory.archive.manifest import ArchiveFile
from langgraph_memory.archive.reports import ArchiveHit, ArchiveReport, CollectionReport, RestoreReport
from langgraph_memory.archive.schedule import DEFAULT_CRON, schedule_archival, schedule_session_cleanup
from langgraph_memory.research.collections import RetentionPolicy
from langgraph_memory.store.history import HistoryRetention

__all__ = [
    "Archiver",
    "ArchivedItem",
    "ArchiveFile",
    "ArchiveHit",
    "ArchiveReport",
    "CollectionReport",
    "RestoreReport",
    "RetentionPolicy",
    "HistoryRetention",
    "ThreadPruner",
    "ProgressCallback",
    "default_policies",
    "schedule_archival",
    "schedule_session_cleanup",
    "DEFAULT_CRON",
    "FORMAT_VERSION",
]
