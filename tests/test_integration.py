"""The parts together: Memory, lineage, the archive and its schedule on one data directory."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from tests.conftest import FAKE_DIMS


def test_lineage_answers_for_an_archived_ancestor(data_dir: Path) -> None:
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=FAKE_DIMS)) as mem:
        weak = mem.store_research_finding("Volume spikes precede reversals", source="technical", confidence=0.2)
        strong = mem.store_research_finding("Trends persist for months", source="technical", confidence=0.9)
        strategy = mem.store_strategy("reversal", "Fade volume spikes", parent_id=[weak.id, strong.id])
        lesson = mem.store_lesson("Fading spikes failed in trends", strategy_id=strategy.id, iteration=1)

        # 100 days on, the low-confidence finding and the lesson are stale; the strong finding is kept.
        later = datetime.now(UTC) + timedelta(days=100)
        report = mem.archiver.run(now=later)
        moved = {name: c.archived for name, c in report.collections.items()}
        assert moved.get("research_findings") == 1 and moved.get("lessons_learned") == 1

        assert mem.store.get(mem.namespace("research"), weak.id) is None
        assert mem.store.get(mem.namespace("research"), strong.id) is not None
        lin = mem.lineage(strategy.id)
        by_id = {a.id: a for a in lin.ancestors}
        assert by_id[weak.id].storage == "archived"
        assert "Volume spikes" in by_id[weak.id].summary
        assert by_id[strong.id].storage == "live"
        assert [n.id for n in lin.descendants.walk()][1:] == [lesson.id]

        # Restoring brings it back live, with its original timestamps.
        restored = mem.archiver.restore(keys=[weak.id])
        assert restored.restored == 1
        assert mem.lineage(strategy.id) is not None
        assert {a.id: a.storage for a in mem.lineage(strategy.id).ancestors}[weak.id] == "live"


def test_memory_schedules_archival_and_close_stops_it(data_dir: Path) -> None:
    mem = Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=FAKE_DIMS))
    job = mem.schedule_archival(interval=0.3)
    scheduler = job._scheduler
    assert scheduler.running
    deadline = time.time() + 15
    while not list(mem.settings.archive_dir.glob("manifest.sqlite")) and time.time() < deadline:
        time.sleep(0.1)
    assert (mem.settings.archive_dir / "manifest.sqlite").exists()  # the job really ran
    mem.close()
    assert not scheduler.running
