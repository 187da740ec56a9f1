"""Put batches into a store until the disk says no; print what was acknowledged and what failed.

usage: python store_fsize.py DATA_DIR LIMIT_BYTES|none

With a byte limit, ``RLIMIT_FSIZE`` makes every write past it fail with
``EFBIG`` (``SIGXFSZ`` ignored), which is what a full disk looks like to the
writer; with ``none`` the caller provides a small file system. Prints one
JSON line: the acknowledged keys, the keys of the batch that failed, and the
error's type and classes.
"""

from __future__ import annotations

import json
import resource
import signal
import sys

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.store import ChromaStore


def main() -> None:
    data_dir, limit = sys.argv[1], sys.argv[2]
    store = ChromaStore(data_dir=data_dir, index={"dims": 64, "embed": DeterministicFakeEmbedding(size=64)})
    store.put(("notes",), "first", {"text": "written before the disk filled up"})
    if limit != "none":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), resource.RLIM_INFINITY))
    acked: list[str] = ["first"]
    failed: list[str] = []
    error: dict[str, object] = {}
    for batch in range(10_000):
        keys = [f"b{batch}-{i}" for i in range(50)]
        try:
            store.batch([PutOp(("notes",), k, {"text": f"note {k} " + "x" * 400, "n": batch}) for k in keys])
        except Exception as exc:  # noqa: BLE001 - the point is to see which error comes out
            failed = keys
            error = {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
            break
        acked.extend(keys)
    print(json.dumps({"acked": acked, "failed": failed, "error": error}), flush=True)
    try:
        store.close()
    except Exception:  # noqa: BLE001 - closing on a full disk may fail; the next open settles it
        pass


if __name__ == "__main__":
    main()
