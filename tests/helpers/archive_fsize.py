"""Run one archive in a child process whose files may not grow past a size limit.

Usage: python archive_fsize.py DATA_DIR DIMS LIMIT_BYTES WHEN NOW

``RLIMIT_FSIZE`` makes every write past ``LIMIT_BYTES`` fail with ``EFBIG``
(with ``SIGXFSZ`` ignored, instead of killing the process), which is what a
full disk looks like to the writer. ``WHEN`` says when the limit starts:

* ``start``: just before ``archiver.run()``: the archive file cannot grow
  past the limit, the small manifest still can;
* ``mid``: after the first chunk of the archive file was written (from the
  public ``progress`` callback), at 1 byte: from then on no file may grow,
  so the manifest cannot record the cleanup either.

``NOW`` is the time the run measures retention from. Prints one JSON line:
the error's type, its classes, message and ``path``, or ``{"error": null}``.
"""

from __future__ import annotations

import json
import resource
import signal
import sys

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.archive import Archiver
from langgraph_memory.store import ChromaStore


def main() -> None:
    data_dir, dims, limit, when, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    store = ChromaStore(data_dir=data_dir, index={"dims": dims, "embed": DeterministicFakeEmbedding(size=dims)})
    archiver = Archiver(store, chunk_size=20)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

    def progress(phase: str, collection: str, done: int, total: int | None) -> None:
        if when == "mid" and phase == "write":
            resource.setrlimit(resource.RLIMIT_FSIZE, (1, hard))

    if when == "start":
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        archiver.run(now=now, progress=progress)
        out: dict[str, object] = {"error": None}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out = {
            "error": type(exc).__name__,
            "classes": [c.__name__ for c in type(exc).__mro__],
            "message": str(exc),
            "path": str(getattr(exc, "path", None)),
        }
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    print(json.dumps(out), flush=True)
    archiver.close()
    store.close()


if __name__ == "__main__":
    main()
