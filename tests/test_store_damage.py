"""Damaged files: the store opens without crashing, rebuilds Chroma from the catalog, answers as before.

Each HNSW file and ``chroma.sqlite3`` is truncated, zeroed or garbled, and
``link_lists.bin`` is made a 1.9 TB sparse file (as a real crash left it).
Some of these crash the process that opens the folder (SIGSEGV, measured
here), some raise, some answer wrongly without a word; in every case the
store must open, rebuild what needs rebuilding, and answer every search as
it did before the damage. A damaged catalog, the one file that is not
derived, gives a typed error naming it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.errors import CorruptFileError
from langgraph_memory.store import ChromaStore

DIMS = 16
N = 1500  # above Chroma's sync threshold (1,000): every HNSW file holds data
PROBES = list(range(0, N, 50))


def _open(data_dir: Path) -> ChromaStore:
    return ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})


def _top1(store: ChromaStore) -> dict[int, str]:
    """The first hit of a query per probe, through Chroma (the planner is told to use HNSW)."""
    store.planner.exact_max = 0
    return {i: store.search(("research",), query=f"finding number {i}", limit=1)[0].key for i in PROBES}


@pytest.fixture(autouse=True)
def _probe_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests are about the probe: it runs for indexes of more than REBUILD_MAX vectors; smaller ones
    # are rebuilt after an unclean shutdown without being opened (test_a_small_index_is_rebuilt_...).
    from langgraph_memory.index import repair as _index

    monkeypatch.setattr(_index, "REBUILD_MAX", 0)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str]]:
    data_dir = tmp_path_factory.mktemp("pristine") / "memory"
    store = _open(data_dir)
    for start in range(0, N, 500):
        store.batch(
            [
                PutOp(("research",), f"k{i}", {"content": f"finding number {i}", "n": i})
                for i in range(start, start + 500)
            ]
        )
    before = _top1(store)
    assert all(before[i] == f"k{i}" for i in PROBES)
    store.close()
    return data_dir, before


def _segment(data_dir: Path) -> Path:
    (seg,) = [p for p in (data_dir / "chroma" / "index-1").iterdir() if p.is_dir()]
    return seg


def _truncate(frac: float) -> Callable[[Path], None]:
    return lambda f: os.truncate(f, int(f.stat().st_size * frac))


def _zero(f: Path) -> None:
    f.write_bytes(b"\0" * f.stat().st_size)


def _garble(f: Path) -> None:
    size = f.stat().st_size
    with open(f, "r+b") as fh:
        fh.seek(size // 4)
        fh.write(os.urandom(max(1, size // 2)))


def _sparse(f: Path) -> None:
    os.truncate(f, 1_900_000_000_000)


HNSW_FILES = ["header.bin", "data_level0.bin", "length.bin", "link_lists.bin", "index_metadata.pickle"]
DAMAGE = {
    "truncated to nothing": _truncate(0.0),
    "truncated to half": _truncate(0.5),
    "zeroed": _zero,
    "garbled": _garble,
}
CASES = [(f, d) for f in HNSW_FILES for d in DAMAGE] + [
    ("link_lists.bin", "sparse 1.9 TB"),
    ("chroma.sqlite3", "truncated to half"),
    ("chroma.sqlite3", "garbled"),
    ("chroma.sqlite3", "truncated to nothing"),
    ("segment folder", "deleted"),
]


def _unseal(data_dir: Path) -> None:
    """Make the catalog hold no seal, as after a crash."""
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    conn.execute("DELETE FROM meta WHERE key = 'index_seal'")
    conn.commit()
    conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("sealed", [False, True], ids=["after a crash", "after a clean close"])
@pytest.mark.parametrize(("target", "damage"), CASES, ids=[f"{t}-{d}" for t, d in CASES])
def test_damaged_index_is_rebuilt_and_answers_as_before(
    pristine: tuple[Path, dict[int, str]], tmp_path: Path, target: str, damage: str, sealed: bool
) -> None:
    source, before = pristine
    data_dir = tmp_path / "memory"
    shutil.copytree(source, data_dir)
    if not sealed:
        _unseal(data_dir)
    if target == "segment folder":
        shutil.rmtree(_segment(data_dir))
    elif target == "chroma.sqlite3":
        DAMAGE[damage](data_dir / "chroma" / "index-1" / "chroma.sqlite3")
    else:
        f = _segment(data_dir) / target
        (_sparse if damage.startswith("sparse") else DAMAGE[damage])(f)
    store = _open(data_dir)  # must not crash this process, whatever the damage
    try:
        if sealed:  # the content no longer matches the seal: rebuilt without being opened, not probed
            assert store.vector_index.probe_seconds is None and store.vector_index.last_rebuild is not None
        else:  # no seal: the probe opened the folder in a subprocess
            assert store.vector_index.probe_seconds is not None
        assert _top1(store) == before
        assert store.items.count("research") == N
        # The rebuilt (or vetted) index holds exactly the catalog's vectors.
        assert store.vector_index.count("research_findings") == N
    finally:
        store.close()
    again = _open(data_dir)  # sealed by the clean close: no probe this time
    try:
        assert again.vector_index.probe_seconds is None
        assert _top1(again) == before
    finally:
        again.close()


def test_index_folder_deleted_while_closed_is_rebuilt(pristine: tuple[Path, dict[int, str]], tmp_path: Path) -> None:
    source, before = pristine
    data_dir = tmp_path / "memory"
    shutil.copytree(source, data_dir)
    shutil.rmtree(data_dir / "chroma")
    store = _open(data_dir)
    try:
        assert store.vector_index.last_rebuild is not None and store.vector_index.last_rebuild.total == N
        assert _top1(store) == before
    finally:
        store.close()


def test_rebuild_index_on_request(pristine: tuple[Path, dict[int, str]], tmp_path: Path) -> None:
    source, before = pristine
    data_dir = tmp_path / "memory"
    shutil.copytree(source, data_dir)
    store = _open(data_dir)
    try:
        seen: list[tuple[str, int]] = []
        report = store.rebuild_index(progress=lambda name, done, _total: seen.append((name, done)))
        assert report.total == N and report.vectors == {"research_findings": N}
        assert sum(done for _, done in seen) == N
        assert sorted(p.name for p in (data_dir / "chroma").glob("index-*")) == ["index-2"]
        assert _top1(store) == before
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["garbled", "truncated to half", "zeroed"])
def test_damaged_catalog_is_a_typed_error_naming_it(
    pristine: tuple[Path, dict[int, str]], tmp_path: Path, damage: str
) -> None:
    source, _ = pristine
    data_dir = tmp_path / "memory"
    shutil.copytree(source, data_dir)
    catalog = data_dir / "catalog.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(str(catalog) + suffix).unlink(missing_ok=True)
    if damage == "garbled":
        with open(catalog, "r+b") as fh:
            fh.write(os.urandom(4096))
    else:
        DAMAGE[damage](catalog)
    with pytest.raises(CorruptFileError) as info:
        store = _open(data_dir)
        # A file cut in half may still open; the first read of a lost page must still say so.
        for i in range(N):
            store.get(("research",), f"k{i}")
        store.close()
    assert "catalog.sqlite" in str(info.value) and info.value.path == catalog


def test_a_sqlite_error_is_never_raw(tmp_path: Path) -> None:
    bad = tmp_path / "memory"
    bad.mkdir()
    (bad / "catalog.sqlite").write_bytes(b"SQLite format 3\0" + os.urandom(5000))
    with pytest.raises(CorruptFileError):
        _open(bad)
    assert not isinstance(CorruptFileError("x"), sqlite3.Error)


def test_a_record_counts_as_unreachable_only_if_a_wide_search_misses_it_too(tmp_path: Path) -> None:
    import chromadb
    import numpy as np
    from chromadb.config import Settings

    from langgraph_memory.index._probe import unreachable

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("probe-test", embedding_function=None, metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    col.add(ids=[f"r{i}" for i in range(300)], embeddings=vectors)
    records = [[f"r{i}", vectors[i].tolist()] for i in range(300)]
    assert unreachable(col, records, 300) == []
    # What the catalog holds for r7 is not what Chroma holds (a lost update): no search finds r7 with it.
    stale = [["r7", (-vectors[7]).tolist()], ["r8", vectors[8].tolist()]]
    assert unreachable(col, stale, 300) == ["r7"]


def test_changes_applied_after_an_unclean_shutdown_are_checked(
    pristine: tuple[Path, dict[int, str]], tmp_path: Path
) -> None:
    import sqlite3

    data_dir = tmp_path / "memory"
    shutil.copytree(pristine[0], data_dir)
    # As after a crash between Chroma's write and the queue's mark: the last batch is queued again, no seal.
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    (seq,) = conn.execute("SELECT max(seq) FROM index_queue WHERE collection = 'research_findings'").fetchone()
    conn.execute("UPDATE index_state SET applied_seq = ? WHERE collection = 'research_findings'", (seq - 200,))
    conn.execute("DELETE FROM meta WHERE key = 'index_seal'")
    conn.commit()
    conn.close()
    store = _open(data_dir)
    try:
        assert store.vector_index.probe_seconds is not None and store.vector_index.last_rebuild is None
        assert store.vector_index.caught_up_checked == 200  # re-applied, then each found itself
        assert _top1(store) == pristine[1]
    finally:
        store.close()


def test_a_small_index_is_rebuilt_after_an_unclean_shutdown_without_being_opened(
    pristine: tuple[Path, dict[int, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memory.index import repair as _index

    monkeypatch.setattr(_index, "REBUILD_MAX", N)
    data_dir = tmp_path / "memory"
    shutil.copytree(pristine[0], data_dir)
    seg = _segment(data_dir)
    (seg / "link_lists.bin").write_bytes(b"\xff" * 4096)  # damage that would crash or mislead a reader
    store = _open(data_dir)
    try:
        index = store.vector_index
        assert index.probe_seconds is None and index.last_rebuild is not None and index.last_rebuild.total == N
        assert _top1(store) == pristine[1]
        assert not seg.exists()  # the old folder is gone
    finally:
        store.close()
    monkeypatch.setattr(_index, "REBUILD_MAX", N - 1)  # one vector more than the limit: probed, not rebuilt
    data_dir2 = tmp_path / "memory2"
    shutil.copytree(pristine[0], data_dir2)
    import sqlite3

    conn = sqlite3.connect(data_dir2 / "catalog.sqlite")
    conn.execute("DELETE FROM meta WHERE key = 'index_seal'")
    conn.commit()
    conn.close()
    store = _open(data_dir2)
    try:
        assert store.vector_index.probe_seconds is not None and store.vector_index.last_rebuild is None
    finally:
        store.close()
