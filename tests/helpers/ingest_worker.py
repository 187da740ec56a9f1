"""Subprocess for tests: ingest a folder into a data directory and print the report as JSON.

usage: python ingest_worker.py DATA_DIR FOLDER DIMS START_FLAG
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.ingest import IngestConfig


def main() -> None:
    data_dir, folder, dims, flag = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=dims)) as mem:
        deadline = time.time() + 60
        while not flag.exists() and time.time() < deadline:  # start both workers together
            time.sleep(0.01)
        report = mem.ingest(folder, config=IngestConfig(batch_max_chunks=24))
    print(json.dumps([{"path": str(r.path), "status": r.status, "chunks": r.chunks} for r in report.files]))


if __name__ == "__main__":
    main()
