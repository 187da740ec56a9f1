"""Promote a data directory's ended sessions one by one in a child process, reporting progress, until killed.

Usage: python session_kill.py DATA_DIR PROGRESS

Opens the data directory with the tests' topic embeddings, then promotes the
ended sessions of ``("episodes",)`` in the order of their ids, writing the
number promoted so far to PROGRESS after each one (and ``done`` at the end).
The parent SIGKILLs the process at a random moment after a chosen count.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langgraph_memory import Memory  # noqa: E402
from tests.helpers.session_data import TopicEmbeddings  # noqa: E402


def promote_in_order(mem: Memory, progress: Path | None = None) -> None:
    """Promote every ended session, in the order of its id (the order the test's reference run uses)."""
    todo = sorted(s.id for s in mem.sessions.list_sessions("ended", limit=10_000))
    for n, sid in enumerate(todo, 1):
        mem.sessions.promote_to_longterm(sid)
        if progress is not None:
            progress.write_text(str(n))


def main() -> None:
    data_dir, progress = sys.argv[1], Path(sys.argv[2])
    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        promote_in_order(mem, progress)
    progress.write_text("done")


if __name__ == "__main__":
    main()
