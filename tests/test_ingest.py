"""Memory.ingest and recall: every file type, dedup across restarts, bad inputs, parents, batches, rollback."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langgraph_memory import Memory
from langgraph_memory.catalog import files as catalog_files
from langgraph_memory.catalog.connection import both
from langgraph_memory.errors import (
    DamagedDocumentError,
    EmbeddingModelError,
    EmptyFileError,
    FileEncodingError,
    InvalidArgumentError,
    MissingPathError,
    SymlinkLoopError,
    UnreadableFileError,
    UnsupportedFileTypeError,
)
from langgraph_memory.ingest import IngestConfig, chunk_key, parent_key
from langgraph_memory.ingest.readers import read_blocks
from tests.conftest import FAKE_DIMS
from tests.helpers.ingest_docs import CSV_HEADER, write_corpus

NS = ("documents",)


class CountingEmbeddings(Embeddings):
    """The fake model, counting the texts it is asked to embed (and failing on request)."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.inner = DeterministicFakeEmbedding(size=FAKE_DIMS)
        self.texts = 0
        self.fail_after = fail_after

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail_after is not None and self.texts + len(texts) > self.fail_after:
            raise RuntimeError("model crashed")
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.fixture
def mem(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding):
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


def _items(mem: Memory, ns: tuple[str, ...] = NS, **filter: object) -> list:
    out, offset = [], 0
    while True:
        page = mem.store.search(ns, filter=filter or None, limit=1000, offset=offset)
        out.extend(page)
        if len(page) < 1000:
            return out
        offset += 1000


def _file_text(path: Path, kind: str) -> str:
    """The text chunk offsets count in: the file's, or a PDF's pages joined."""
    if kind == "pdf":
        return "".join(b.text for b in read_blocks(path, kind))
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _file_rows(mem: Memory) -> list[catalog_files.IngestedFile]:
    with mem.store.catalog.read() as conn:
        return catalog_files.list_files(conn)


def test_every_supported_type_is_stored_with_its_metadata(mem: Memory, tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    report = mem.ingest(tmp_path / "docs", episode_id="DS-25-002")
    assert report.counts() == {"ingested": 7, "duplicate": 0, "busy": 0, "skipped": 1, "failed": 0}
    assert report.skipped[0].path.name == "image.png" and "unsupported" in report.skipped[0].reason
    by_name = {r.path.name: r for r in report.ingested}
    for kind, path in files.items():
        result = by_name[path.name]
        ftype = "yaml" if kind == "yml" else kind
        assert result.file_type == ftype and result.chunks >= 1 and result.parents >= 1
        chunks = sorted(_items(mem, content_hash=result.sha256, kind="chunk"), key=lambda it: it.value["chunk_index"])
        assert [c.key for c in chunks] == [chunk_key(result.sha256, i) for i in range(result.chunks)]
        text = _file_text(Path(mem.settings.raw_dir) / f"{result.sha256}{path.suffix}", ftype)
        for c in chunks:
            v = c.value
            assert v["source_uri"] == path.as_uri() and v["episode_id"] == "DS-25-002"
            assert v["content_hash"] == result.sha256 and v["file_type"] == ftype
            prefix = CSV_HEADER + "\n" if ftype == "csv" else ""
            assert v["content"] == prefix + text[v["start_char"] : v["end_char"]]
            assert v["parent_key"].startswith(result.sha256 + ":p")
            assert isinstance(v["semantic_boundary"], bool)
        parents = _items(mem, content_hash=result.sha256, kind="parent")
        assert len(parents) == result.parents
    pdf_chunks = _items(mem, file_type="pdf", kind="chunk")
    assert {c.value["page"] for c in pdf_chunks} >= {1, 2}
    # The raw copies are the files' bytes, by hash.
    for r in report.ingested:
        assert (Path(mem.settings.raw_dir) / f"{r.sha256}{r.path.suffix}").read_bytes() == r.path.read_bytes()
    assert not [p for p in Path(mem.settings.raw_dir).iterdir() if p.name.endswith(".tmp")]


def test_same_bytes_are_skipped_across_a_restart_without_a_model_call(data_dir: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    first = CountingEmbeddings()
    with Memory.open(data_dir, embeddings=first) as m:
        report = m.ingest(docs)
        stored = len(_items(m))
    assert first.texts == report.chunks > 0
    (docs / "copy-of-notes.txt").write_bytes((docs / "notes.txt").read_bytes())  # same bytes, another name
    again = CountingEmbeddings()
    with Memory.open(data_dir, embeddings=again) as m:
        report = m.ingest(docs)
        assert report.counts()["duplicate"] == 8 and report.counts()["ingested"] == 0
        copy = next(r for r in report.files if r.path.name == "copy-of-notes.txt")
        assert copy.reason == "same bytes as " + (docs / "notes.txt").as_uri()
        assert len(_items(m)) == stored
    assert again.texts == 0
    assert len(list(Path(data_dir, "raw").iterdir())) == 7


def test_a_single_unsupported_file_raises_but_a_folder_skips_it(mem: Memory, tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    with pytest.raises(UnsupportedFileTypeError, match="image.png"):
        mem.ingest(tmp_path / "docs" / "image.png")
    # Named paths are all checked before anything is stored.
    with pytest.raises(UnsupportedFileTypeError):
        mem.ingest([tmp_path / "docs" / "notes.txt", tmp_path / "docs" / "image.png"])
    assert _items(mem) == []


def test_a_bad_encoding_names_the_file_and_offset_and_stores_nothing(mem: Memory, tmp_path: Path) -> None:
    good = "Plain text, line after line.\n" * 20_000  # 580 KB: a large file, several batches
    bad = tmp_path / "bad.txt"
    bad.write_bytes(good.encode() + b"caf\xe9\n" + good.encode())
    offset = len(good.encode()) + 3
    with pytest.raises(FileEncodingError) as info:
        mem.ingest(bad)
    assert info.value.offset == offset and info.value.path == bad
    assert f"byte offset {offset}" in str(info.value) and "bad.txt" in str(info.value)
    assert _items(mem) == [] and _file_rows(mem) == []
    assert list(Path(mem.settings.raw_dir).iterdir()) == []
    folder = tmp_path / "folder"
    folder.mkdir()
    bad.rename(folder / "bad.txt")
    (folder / "ok.md").write_text("# Fine\n\nThis one reads.\n")
    report = mem.ingest(folder)
    assert [r.status for r in report.files] == ["failed", "ingested"]
    assert isinstance(report.failed[0].error, FileEncodingError)
    assert report.failed[0].error.offset == offset
    assert {it.value["source_uri"] for it in _items(mem)} == {(folder / "ok.md").as_uri()}


def test_empty_and_blank_files(mem: Memory, tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("")
    with pytest.raises(EmptyFileError, match="empty"):
        mem.ingest(empty)
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n\n\t\n")
    with pytest.raises(EmptyFileError, match="no text"):
        mem.ingest(blank)
    assert _file_rows(mem) == [] and _items(mem) == []
    report = mem.ingest(tmp_path)  # the data directory is in there too: never walked
    assert sorted((r.path.name, r.status, r.reason) for r in report.files) == [
        ("blank.txt", "skipped", f"{blank} holds no text to ingest (only blank space)"),
        ("empty.md", "skipped", "empty file"),
    ]


def test_symlink_loops_missing_paths_and_unreadable_files(mem: Memory, tmp_path: Path) -> None:
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    with pytest.raises(SymlinkLoopError, match="loop"):
        mem.ingest(loop)
    with pytest.raises(MissingPathError, match="does not exist"):
        mem.ingest(tmp_path / "nowhere.md")
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "gone.md")
    with pytest.raises(MissingPathError, match="symbolic link"):
        mem.ingest(dangling)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFileError, match="neither a regular file"):
        mem.ingest(fifo)
    # Inside a folder: a directory link back up is skipped, and so are the bad entries.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text to keep.\n")
    (docs / "up").symlink_to(tmp_path)
    loop.unlink()
    (docs / "loop.txt").symlink_to(docs / "loop.txt")
    for p in (dangling, fifo):
        p.rename(docs / p.name)
    report = mem.ingest(docs)
    reasons = {str(r.path.relative_to(docs)): (r.status, r.reason) for r in report.files}
    assert reasons == {
        "a.md": ("ingested", None),
        "dangling.md": ("skipped", "unreadable"),
        "loop.txt": ("skipped", "symlink loop"),
        "pipe.txt": ("skipped", "not a regular file"),
        "up/docs": ("skipped", "symlink loop"),  # up -> tmp_path, whose docs/ is where we came from
    }
    assert "which does not exist" in str(next(r for r in report.files if r.path.name == "dangling.md").error)


def _without_root_file_access() -> list[str]:
    """A command prefix that runs a process without root's right to read any file (Linux ``setpriv``)."""
    import shutil

    if os.geteuid() != 0:
        return []  # an ordinary user cannot read a 0o000 file anyway
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to drop root's file access")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_an_unreadable_file_gives_a_typed_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    secret = tmp_path / "secret.md"
    secret.write_text("# Private\n")
    secret.chmod(0o000)
    code = (
        "from langchain_core.embeddings import DeterministicFakeEmbedding as F\n"
        "from langgraph_memory import Memory\n"
        "from langgraph_memory.errors import UnreadableFileError\n"
        "import sys\n"
        "with Memory.open(sys.argv[1], embeddings=F(size=8)) as m:\n"
        "    try:\n"
        "        m.ingest(sys.argv[2])\n"
        "    except UnreadableFileError as exc:\n"
        "        print('typed:', exc)\n"
        "    print('folder:', m.ingest(sys.argv[3]).counts())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [*_without_root_file_access(), sys.executable, "-c", code, str(tmp_path / "mem"), str(secret), str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert f"typed: cannot read {secret}: Permission denied" in out.stdout, out.stderr[-2000:]
    assert "folder: {'ingested': 0, 'duplicate': 0, 'busy': 0, 'skipped': 0, 'failed': 1}" in out.stdout


def test_a_damaged_pdf_fails_alone(mem: Memory, tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    good = files["pdf"].read_bytes()
    files["pdf"].write_bytes(good[: len(good) // 3])
    with pytest.raises(DamagedDocumentError):
        mem.ingest(files["pdf"])
    report = mem.ingest(tmp_path / "docs")
    assert [r.path.name for r in report.failed] == ["paper.pdf"]
    assert len(report.ingested) == 6


def test_recall_returns_scored_chunks_with_sources_and_parents(data_dir: Path, tmp_path: Path, real_embeddings) -> None:
    files = write_corpus(tmp_path / "docs")
    with Memory.open(data_dir, embeddings=real_embeddings) as m:
        m.ingest(tmp_path / "docs", episode_id="ep-1")
        hits = m.recall("How many shares to buy so a stop loses one percent of equity", k=3)
        assert hits[0].source_uri == files["python"].as_uri() and "stop_distance" in hits[0].content
        assert hits[0].score is not None and hits[0].score >= hits[-1].score
        assert all(h.parent is None and h.full_context is None for h in hits)
        with_parents = m.recall("yields fell when inflation expectations dropped", k=2, include_parents=True)
        top = with_parents[0]
        assert top.file_type == "pdf" and top.page == 2 and top.episode_id == "ep-1"
        assert top.parent is not None and top.parent.key == top.parent_key
        assert top.content in top.full_context
        assert top.parent.start_char <= top.start_char and top.end_char <= top.parent.end_char
        only_csv = m.recall("SPY close", k=5, filter={"file_type": "csv"})
        assert only_csv and {h.file_type for h in only_csv} == {"csv"}
        assert all(h.content.startswith(CSV_HEADER) for h in only_csv)


async def test_aingest_and_arecall(mem: Memory, tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    report = await mem.aingest(tmp_path / "docs" / "momentum.md", namespace=("documents", "papers"))
    assert report.counts()["ingested"] == 1
    hits = await mem.arecall("momentum crashes", namespace=("documents", "papers"), include_parents=True)
    assert hits and all(h.namespace == ("documents", "papers") and h.full_context for h in hits)
    assert await mem.arecall("momentum crashes", namespace=("documents", "other")) == []


def test_a_large_file_goes_in_several_batches_and_is_complete_only_at_the_end(data_dir: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(
        "".join(
            f"## Part {i}\n\n" + "".join(f"Sentence {j} of part {i} is about carry. " for j in range(30)) + "\n"
            for i in range(60)
        )
    )
    emb = CountingEmbeddings()
    with Memory.open(data_dir, embeddings=emb) as m:
        calls: list[int] = []
        report = m.ingest(
            big,
            config=IngestConfig(batch_max_chunks=20),
            progress=lambda e: calls.append(e.chunks) if e.kind == "stored" else None,
        )
        result = report.ingested[0]
        assert len(calls) > 5 and sum(calls) == result.chunks == emb.texts
        assert len(_items(m, kind="chunk")) == result.chunks
        (row,) = _file_rows(m)
        assert row.complete and (row.n_chunks, row.n_parents) == (result.chunks, result.parents)
        assert '"chunker": "contextual"' in row.chunker and '"size": 400' in row.chunker


def test_a_failure_part_way_through_a_file_rolls_back_what_was_stored(data_dir: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("".join(f"Rates rose again in quarter {i}. " for i in range(4000)))
    with Memory.open(data_dir, embeddings=CountingEmbeddings(fail_after=100)) as m:
        with pytest.raises(EmbeddingModelError):
            m.ingest(big, config=IngestConfig(batch_max_chunks=30))
        assert _items(m) == [] and _file_rows(m) == []
    with Memory.open(data_dir, embeddings=CountingEmbeddings()) as m:  # and it ingests cleanly afterwards
        assert m.ingest(big).ingested[0].chunks == len(_items(m, kind="chunk"))


def test_an_abandoned_claim_is_taken_over_and_its_chunks_rolled_back(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\n" + "Liquidity dries up in a crisis. " * 50)
    with Memory.open(data_dir, embeddings=CountingEmbeddings()) as m:
        sha = m.ingest(notes).ingested[0].sha256
        # Make it look as if a process died half-way: its claim is open and a stray chunk is left.
        with m.store.catalog.write() as conn:
            conn.execute(
                both(conn, "UPDATE ingested_files SET state = 'ingesting', owner = 'gone-host:1:x', heartbeat_at = ?"),
                (time.time() - 3600,),
            )
        m.store.put(
            NS, chunk_key(sha, 999), {"kind": "chunk", "content": "stray", "content_hash": sha}, index=["content"]
        )
        report = m.ingest(notes)
        assert report.counts()["ingested"] == 1
        keys = {it.key for it in _items(m, content_hash=sha)}
        assert chunk_key(sha, 999) not in keys and parent_key(sha, 0) in keys
        assert _file_rows(m)[0].complete


def test_a_live_claim_makes_the_file_busy(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nA short note.\n")
    from langgraph_memory.ingest.files import sha256_file

    sha = sha256_file(notes)
    with Memory.open(data_dir, embeddings=CountingEmbeddings()) as m:
        with m.store.catalog.write() as conn:  # another live process (this one's pid) holds it
            catalog_files.claim(
                conn,
                NS,
                sha,
                owner=catalog_files.new_owner(),
                now=time.time(),
                stale_after=600,
                file_type="markdown",
                size=1,
                source_uri="file:///elsewhere.md",
            )
        report = m.ingest(notes)
        assert report.files[0].status == "busy" and "another process" in report.files[0].reason
        assert _items(m) == []


def test_a_changed_file_at_the_same_path_is_recognised_with_the_old_keys(mem: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nVersion one of the note.\n")
    old = mem.ingest(notes).ingested[0]
    notes.write_text("# Notes\n\nVersion two of the note, rewritten.\n")
    new = mem.ingest(notes).ingested[0]
    assert new.sha256 != old.sha256 and new.replaces == old.sha256
    assert sorted(new.replaced_keys) == sorted(
        [chunk_key(old.sha256, i) for i in range(old.chunks)] + [parent_key(old.sha256, i) for i in range(old.parents)]
    )
    # The old version is superseded: no longer recalled or listed, kept and listable on request.
    assert {it.value["content_hash"] for it in _items(mem, kind="chunk")} == {new.sha256}
    assert {h.key for h in mem.recall("Version one of the note", k=10)} <= {chunk_key(new.sha256, 0)}
    every = mem.store.search(NS, filter={"kind": "chunk"}, limit=100, include_retired=True)
    assert {it.value["content_hash"] for it in every} == {old.sha256, new.sha256}
    status = mem.status(chunk_key(old.sha256, 0), namespace=NS)
    assert status is not None and status.status == "superseded" and status.superseded_by == parent_key(new.sha256, 0)
    assert "changed" in (status.reason or "")
    # Back to the first bytes: nothing to store, the first version is current again, the second superseded.
    notes.write_text("# Notes\n\nVersion one of the note.\n")
    back = mem.ingest(notes).files[0]
    assert back.status == "duplicate" and back.sha256 == old.sha256 and back.replaces == new.sha256
    assert {it.value["content_hash"] for it in _items(mem, kind="chunk")} == {old.sha256}
    assert mem.recall("Version one of the note", k=1)[0].key == chunk_key(old.sha256, 0)
    assert mem.ingest(notes).files[0].replaces is None  # unchanged since


def test_a_changed_file_leaves_the_old_bytes_current_while_another_path_holds_them(mem: Memory, tmp_path: Path) -> None:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("# Shared\n\nThe same words in two files.\n")
    b.write_text("# Shared\n\nThe same words in two files.\n")
    first = mem.ingest([a, b])
    shared = first.files[0].sha256
    a.write_text("# Shared\n\nOnly a.md says this now.\n")
    changed = mem.ingest(a).ingested[0]
    assert changed.replaces == shared
    # b.md still holds the first bytes: they stay current beside a.md's new ones.
    assert {it.value["content_hash"] for it in _items(mem, kind="chunk")} == {shared, changed.sha256}


def test_namespaces_must_be_in_the_general_collection(mem: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nText.\n")
    with pytest.raises(InvalidArgumentError, match="typed label"):
        mem.ingest(notes, namespace=("research",))
    with pytest.raises(InvalidArgumentError):
        mem.ingest(notes, namespace="documents")  # type: ignore[arg-type]
    # The same bytes go to each namespace asked for.
    assert mem.ingest(notes, namespace=("documents", "a")).counts()["ingested"] == 1
    assert mem.ingest(notes, namespace=("documents", "b")).counts()["ingested"] == 1


def test_the_catalog_migration_adds_the_files_tables_to_a_version_1_file(tmp_path: Path) -> None:
    from langgraph_memory.catalog import Catalog
    from langgraph_memory.catalog._schema import _V1, SCHEMA_VERSION

    path = tmp_path / "catalog.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_V1)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Catalog(path) as cat, cat.read() as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert c.execute("SELECT count(*) FROM ingested_files").fetchone()[0] == 0
