"""Bit rot in a closed data directory: no crash, nothing lost, no wrong answer.

Bits flipped inside the index's files (``data_level0.bin`` above all) with
their sizes and modification times kept once made the next process die with
SIGSEGV on its first put or search: the seal trusted names, sizes and
mtimes. Here, round after round, bits are flipped in one file of the closed
directory (every file but the catalog, in turn), and a fresh process opens
it, reads every item back, finds each by its own vector and by its text,
and puts more (`bench/common/bitrot.py`). The short version of
``python bench/faults/crash_bench.py --bitrot 200``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from bench.common.bitrot import NAMESPACE, build, flip_bits, run_child, targets, text_of
from tests.helpers import catalog_backend

DIMS = 16
N = 3000  # what it took to crash a put on main
ROUNDS = 8
FLIPS = 8  # bits flipped per round, in one file
CHECKED = 100  # acknowledged items each fresh process reads back and searches for (besides its own new ones)


def _build(data_dir: Path) -> list[str]:
    return build(data_dir, N, DIMS)


# One file per round: every file once (the HNSW vectors-and-links file first, as it crashed a put);
# bench/crash_bench.py --bitrot flips bits for 200 rounds.
PLAN = [
    "data_level0.bin",
    "embeddings.sqlite",
    "chroma.sqlite3",
    "link_lists.bin",
    "header.bin",
    "length.bin",
    "index_metadata.pickle",
    "lgm-generation",
]


def _target(data_dir: Path, name: str) -> Path:
    (path,) = [f for f in targets(data_dir) if f.name == name]
    return path


@pytest.mark.slow
def test_bit_rot_never_crashes_loses_or_misleads(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    ledger = _build(data_dir)
    rng = random.Random(26)
    assert len(PLAN) == ROUNDS
    for r, name in enumerate(PLAN):
        target = _target(data_dir, name)
        flip_bits(target, rng, FLIPS)
        new = [f"r{r}-{i}" for i in range(100)]
        result = run_child(data_dir, ledger, dims=DIMS, new=new, seed=r, checked=CHECKED)
        assert not result.crashed, f"round {r + 1} ({target.name}): the process died: {result.summary()}"
        assert result.ok, f"round {r + 1} ({target.name}): {result.summary()}"
        assert result.acked == new
        ledger += result.acked


def test_a_flipped_bit_in_the_embedding_cache_costs_a_re_embedding_not_a_wrong_vector(tmp_path: Path) -> None:
    import numpy as np
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.embeddings import CachedEmbeddings

    inner = DeterministicFakeEmbedding(size=DIMS)
    path = tmp_path / "embeddings.sqlite"
    texts = [text_of(f"c{i}") for i in range(50)]
    cache = CachedEmbeddings(inner, path=path, file_min_seconds=0)
    cache.embed_documents(texts)
    cache.close()
    # Flip one bit in the middle of each of the first ten cached vectors, size and mtime kept.
    data = path.read_bytes()
    st = path.stat()
    with open(path, "r+b") as f:
        for text in texts[:10]:
            at = data.find(np.asarray(inner.embed_query(text), dtype=np.float32).tobytes())
            assert at >= 0
            f.seek(at + DIMS * 2)
            f.write(bytes([data[at + DIMS * 2] ^ 0x10]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    cache = CachedEmbeddings(inner, path=path, file_min_seconds=0)
    try:

        def f32(vectors: list[list[float]]) -> np.ndarray:
            return np.asarray(vectors, dtype=np.float32)

        assert np.array_equal(f32(cache.embed_documents(texts)), f32([inner.embed_query(t) for t in texts]))
        assert cache.misses == 10  # the damaged rows were embedded anew
        assert np.array_equal(f32([cache.embed_query(texts[0])]), f32([inner.embed_query(texts[0])]))
    finally:
        cache.close()


def _kill_while_open(data_dir: Path) -> None:
    """A process opens the store and dies by SIGKILL: an unclean shutdown."""
    import signal
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
        "from langgraph_memory.store import ChromaStore\n"
        f"s = ChromaStore(data_dir=sys.argv[1], index={{'dims': {DIMS}, 'embed': DeterministicFakeEmbedding(size={DIMS})}})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _damage_leaf_of(path: Path, table: str) -> None:
    """Flip one bit of the page type of a b-tree leaf of ``table`` (size and mtime kept)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
    finally:
        conn.close()
    assert pages
    start = (pages[len(pages) // 2] - 1) * page_size
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(start)
        kind = f.read(1)[0]
        assert kind in (0x0A, 0x0D)  # an index or table b-tree leaf
        f.seek(start)
        f.write(bytes([kind ^ 0x01]))  # no valid page type
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.sqlite_only("damages a page of the catalog's SQLite file")
def test_a_damaged_catalog_page_is_found_on_the_open_after_an_unclean_shutdown(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.errors import CorruptFileError
    from langgraph_memory.store import ChromaStore

    data_dir = tmp_path / "memory"
    _build(data_dir)
    _kill_while_open(data_dir)
    # A page of the filter index, which nothing reads until a filter needs it.
    _damage_leaf_of(data_dir / "catalog.sqlite", "fields")
    with pytest.raises(CorruptFileError) as err:
        ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    assert "catalog.sqlite" in str(err.value) and "quick_check" in str(err.value)


def _small(data_dir: Path, n: int = 300) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    try:
        store.batch([PutOp(NAMESPACE, f"k{i}", {"text": text_of(f"k{i}")}) for i in range(n)])
    finally:
        store.close()


def _reopen(data_dir: Path, catalog: str | None = None):  # -> ChromaStore
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.store import ChromaStore

    index = {"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}
    if catalog is not None:  # the local files of ``data_dir`` with a catalog on a server
        return ChromaStore(data_dir=catalog, local_dir=data_dir, index=index)
    return ChromaStore(data_dir=data_dir, index=index)


def test_a_copy_with_new_modification_times_keeps_its_seal(tmp_path: Path) -> None:
    import shutil

    _small(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copyfile)  # cp -r: new mtimes
    # With the catalog on a server the copy is of the local files only, opened with the same catalog.
    store = _reopen(tmp_path / "b", catalog=catalog_backend.catalog_of(tmp_path / "a"))
    try:  # the same content: trusted as sealed, neither probed nor rebuilt
        assert store.vector_index.last_rebuild is None and store.vector_index.probe_seconds is None
        assert store.vector_index.catalog_check_seconds is None
    finally:
        store.close()


@pytest.mark.sqlite_only("writes the seal into the catalog's SQLite file")
def test_a_seal_of_an_older_version_counts_as_an_unclean_shutdown(tmp_path: Path) -> None:
    import sqlite3

    data_dir = tmp_path / "memory"
    _small(data_dir)
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'index_seal'", ("0" * 64,))  # names, sizes and mtimes
    assert conn.total_changes == 1
    conn.commit()
    conn.close()
    store = _reopen(data_dir)
    try:  # not taken for bit rot: the path after a crash (a small index is rebuilt unopened)
        assert store.vector_index.last_rebuild is not None
        assert "not closed cleanly" in store.vector_index.last_rebuild.reason
    finally:
        store.close()
    again = _reopen(data_dir)  # the clean close wrote a content seal
    try:
        assert again.vector_index.last_rebuild is None and again.vector_index.probe_seconds is None
    finally:
        again.close()
