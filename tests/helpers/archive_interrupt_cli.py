"""The command line, held inside an archive run's file write until the test sends SIGINT.

Usage: python archive_interrupt_cli.py MARKER CLI-ARGUMENTS...

Runs ``langgraph_memory.cli.main`` (what the ``langgraph-memory`` script
runs) with one change: after the first chunk of the first archive file is
written, it creates MARKER and waits there. The test interrupts it at that
point whatever the machine's load; reading the CLI's own output to pick the
moment raced the child on a loaded machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from langgraph_memory.archive import Archiver
from langgraph_memory.cli import main


def _hold_after_first_chunk(marker: Path) -> None:
    init = Archiver.__init__

    def held_init(self: Archiver, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)

        def hook(step: str) -> None:
            if step == "write_chunk" and not marker.exists():
                marker.write_text(step, encoding="utf-8")
                while True:  # SIGINT raises KeyboardInterrupt here, mid-file
                    time.sleep(0.05)

        self._fault = hook

    Archiver.__init__ = held_init  # type: ignore[method-assign]


if __name__ == "__main__":
    _hold_after_first_chunk(Path(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
