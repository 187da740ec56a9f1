"""What an ingest did, file by file: the result ``Memory.ingest`` returns and the CLI tabulates.

>>> report = mem.ingest("papers/")  # needs files to ingest  # doctest: +SKIP
>>> report.counts()  # needs files to ingest  # doctest: +SKIP
{'ingested': 12, 'duplicate': 3, 'busy': 0, 'skipped': 1, 'failed': 0}
>>> [(r.path.name, r.reason) for r in report.failed]  # needs files to ingest  # doctest: +SKIP
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from langgraph_memory.errors import IngestError

__all__ = ["FileStatus", "FileResult", "IngestReport", "IngestProgress", "STATUSES"]

FileStatus = Literal["ingested", "duplicate", "busy", "skipped", "failed"]
#: Every status, in the order reports list them.
STATUSES: tuple[FileStatus, ...] = ("ingested", "duplicate", "busy", "skipped", "failed")


@dataclass
class FileResult:
    """What happened to one file.

    Attributes:
        path: the file (absolute, links kept).
        status: ``ingested``; ``duplicate`` (the same bytes are stored in this
            namespace already: nothing read past the hash, no model call);
            ``busy`` (another process is ingesting the same bytes right now);
            ``skipped`` (unsupported type, empty, hidden, a link loop);
            ``failed`` (bad encoding, damaged PDF, unreadable: ``error`` says why).
        sha256: the hash of its bytes, once read.
        file_type: the reader it went to.
        chunks, parents: how many were stored.
        reason: a short why, for everything but ``ingested``.
        replaces: the hash this path had when last ingested, when it changed since.
        replaced_keys: the keys of that older version's chunks and parents
            (superseded by this version, unless another path holds those bytes).
        seconds: time spent on the file.
    """

    path: Path
    status: FileStatus
    sha256: str | None = None
    file_type: str | None = None
    size: int = 0
    chunks: int = 0
    parents: int = 0
    reason: str | None = None
    error: IngestError | None = None
    replaces: str | None = None
    replaced_keys: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class IngestReport:
    """The results of one ``ingest`` call, file by file, in the order the files were met."""

    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def by_status(self, status: FileStatus) -> list[FileResult]:
        return [r for r in self.files if r.status == status]

    @property
    def ingested(self) -> list[FileResult]:
        return self.by_status("ingested")

    @property
    def duplicates(self) -> list[FileResult]:
        return self.by_status("duplicate")

    @property
    def skipped(self) -> list[FileResult]:
        return self.by_status("skipped")

    @property
    def failed(self) -> list[FileResult]:
        return self.by_status("failed")

    @property
    def chunks(self) -> int:
        """Chunks stored by this call."""
        return sum(r.chunks for r in self.files)

    @property
    def ok(self) -> bool:
        """No file failed."""
        return not self.failed

    def counts(self) -> dict[str, int]:
        """Files per status."""
        return {s: len(self.by_status(s)) for s in STATUSES}


@dataclass(frozen=True)
class IngestProgress:
    """One step of an ingest, for a progress display.

    ``kind`` is ``"found"`` (``files`` files to look at), ``"file"`` (``path``
    is being read), ``"stored"`` (``chunks`` more chunks of ``path`` are
    stored) or ``"done"`` (``result`` is the file's outcome).
    """

    kind: Literal["found", "file", "stored", "done"]
    path: Path | None = None
    files: int = 0
    chunks: int = 0
    result: FileResult | None = None
