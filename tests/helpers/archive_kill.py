"""Run one archive in a child process and park at a chosen step so the test can SIGKILL it.

Usage: python archive_kill.py DATA_DIR MARKER STEP[:N]

When the hook reaches STEP for the N-th time (default 1) it creates MARKER
and sleeps; the parent kills the process with SIGKILL while it sleeps. For
``during_delete`` the kill lands after part of the items were deleted.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from langgraph_memory.archive import Archiver
from langgraph_memory.store import ChromaStore


def main() -> None:
    data_dir, marker, target = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    step, _, nth = target.partition(":")
    times = int(nth or 1)
    store = ChromaStore(data_dir=data_dir)
    archiver = Archiver(store, chunk_size=200)
    seen: Counter[str] = Counter()

    def hook(name: str) -> None:
        seen[name] += 1
        if name == step and seen[name] == times:
            # Written whole, then renamed: the test reads the marker as soon as it exists (an empty file once failed).
            marker.with_suffix(".tmp").write_text(name)
            marker.with_suffix(".tmp").replace(marker)
            time.sleep(120)  # killed here

    archiver._fault = hook
    archiver.run()
    marker.with_suffix(".tmp").write_text("finished")
    marker.with_suffix(".tmp").replace(marker)


if __name__ == "__main__":
    main()
