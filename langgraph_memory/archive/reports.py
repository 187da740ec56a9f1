"""What an archive run, restore or search returns: plain dataclasses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph_memory.archive.format import ArchivedItem
from langgraph_memory.catalog.status import ItemStatus

__all__ = ["CollectionReport", "ArchiveReport", "RestoreReport", "ArchiveHit"]


@dataclass
class CollectionReport:
    """One collection in one run.

    ``selected`` items matched the policy (in a dry run: would move);
    ``archived`` were written to ``file``; ``deleted`` left the live store;
    ``kept_live`` changed while the run was archiving them and stay live.
    Of those archived (in a dry run: selected), ``retired`` and
    ``superseded`` went because of their status rather than the policy.
    """

    collection: str
    policy: str
    selected: int = 0
    archived: int = 0
    deleted: int = 0
    kept_live: int = 0
    retired: int = 0
    superseded: int = 0
    file: str | None = None
    error: str | None = None

    def count_reasons(self, reasons: Iterable[str | None]) -> None:
        """Add items that go because they are retired or superseded (other reasons are the policy's)."""
        for why in reasons:
            if why == "retired":
                self.retired += 1
            elif why == "superseded":
                self.superseded += 1


@dataclass
class ArchiveReport:
    """The outcome of [`Archiver.run()`][langgraph_memory.Archiver.run] (or, with ``dry_run``, what it would do)."""

    run_id: str
    dry_run: bool
    now: float
    started_at: float
    finished_at: float | None = None
    collections: dict[str, CollectionReport] = field(default_factory=dict)
    ttl_swept: int = 0
    #: past versions of items dropped by the history retention (``dry_run``: that would be).
    history_pruned: int = 0
    thread_strategy: str | None = None
    threads: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def total_selected(self) -> int:
        return sum(c.selected for c in self.collections.values())

    @property
    def total_archived(self) -> int:
        return sum(c.archived for c in self.collections.values())

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RestoreReport:
    """The outcome of [`Archiver.restore()`][langgraph_memory.Archiver.restore].

    ``restored`` items were written back; ``already_live`` were live already
    (restoring twice is a no-op); ``keys`` lists the keys of both.
    ``hidden`` are those that come back retired or superseded, as they were
    when archived: searches leave them out until they are reinstated.
    """

    dry_run: bool = False
    restored: int = 0
    already_live: int = 0
    keys: list[str] = field(default_factory=list)
    hidden: list[ItemStatus] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def matched(self) -> int:
        return self.restored + self.already_live


@dataclass
class ArchiveHit:
    """One result of `Archiver.search_archive()`: the archived item and its cosine similarity."""

    archived: ArchivedItem
    score: float | None

    @property
    def key(self) -> str:
        return self.archived.key

    @property
    def namespace(self) -> tuple[str, ...]:
        return self.archived.namespace

    @property
    def value(self) -> dict[str, Any]:
        return self.archived.value
