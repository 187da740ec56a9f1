"""Turn a catalog back into what version 1 of the schema wrote, to test the migrations on real data.

Every table and column a later version added is dropped, so opening the file
again runs each migration (and its backfill) in turn.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# What versions 2 and later added, newest first.
_ADDED_AFTER_1 = """
DROP TABLE IF EXISTS prefix_counts;
DROP TABLE IF EXISTS keywords;
DROP TABLE IF EXISTS keyword_lengths;
DROP TABLE IF EXISTS keyword_stats;
DROP TABLE IF EXISTS ingested_paths;
DROP TABLE IF EXISTS ingested_files;
DROP TABLE IF EXISTS item_status;
DROP TABLE IF EXISTS collection_counts;
ALTER TABLE namespaces DROP COLUMN n_vectors;
PRAGMA user_version = 1;
"""


def make_version_1(catalog: Path) -> None:
    """Rewrite the closed catalog file ``catalog`` as schema version 1 (its items, vectors and lineage kept)."""
    conn = sqlite3.connect(catalog)
    try:
        conn.executescript(_ADDED_AFTER_1)
    finally:
        conn.close()
