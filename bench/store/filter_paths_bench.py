"""Why a 14% filter at 100,000 items misses 2x the bare query: the cost of each exact-scoring design.

    .venv/bin/python bench/store/filter_paths_bench.py

Times (median of 30, 10 for SQLite) the ways to score exactly the 14,000 of
100,000 384-d vectors a 14% filter keeps, then take the top 10: gathering
the matching rows out of an in-memory matrix (they are scattered across
namespaces) and scoring them; scoring a contiguous block of 14,000 rows (what
a per-value partition would allow); and reading the 14,000 vectors from
SQLite blobs. Compare with a bare Chroma query at 100,000 items, ~2-3 ms
here (``bench/results/RESULTS.md``).
"""

import os
import sqlite3
import tempfile
import time

import numpy as np

rng = np.random.default_rng(0)
M = rng.normal(size=(100_000, 384)).astype(np.float32)
idx = np.sort(rng.choice(100_000, 14_000, replace=False))
q = rng.normal(size=384).astype(np.float32)


def t(f, n=30):
    ts = []
    for _ in range(n):
        s = time.perf_counter()
        f()
        ts.append(time.perf_counter() - s)
    return np.median(ts) * 1000


print(
    "gather 14k rows + einsum score + top10: {:.2f} ms".format(
        t(lambda: np.argpartition(-np.einsum("ij,j->i", M[idx], q), 10)[:10])
    )
)
print(
    "score contiguous 14k block (no gather): {:.2f} ms".format(
        t(lambda: np.argpartition(-np.einsum("ij,j->i", M[:14000], q), 10)[:10])
    )
)
print(f"score contiguous 14k block matmul: {t(lambda: np.argpartition(-(M[:14000] @ q), 10)[:10]):.2f} ms")
d = tempfile.mkdtemp()
c = sqlite3.connect(os.path.join(d, "v.sqlite"))
c.execute("create table v(id integer primary key, vec blob)")
c.executemany("insert into v values (?,?)", ((i, M[i].tobytes()) for i in range(100_000)))
c.commit()
ids = ",".join(map(str, idx.tolist()))


def blobs():
    rows = c.execute(f"select vec from v where id in ({ids})").fetchall()
    X = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), 384)
    return np.argpartition(-(X @ q), 10)[:10]


print(f"read 14k blobs from SQLite + score: {t(blobs, 10):.2f} ms")
