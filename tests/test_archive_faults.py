"""Fault injection: every interruption leaves each item live or archived, and the next run settles it."""

from __future__ import annotations

import gzip
from collections import Counter

import pytest

from langgraph_memory.archive import Archiver
from langgraph_memory.errors import ArchiveIntegrityError
from tests.helpers.archive_data import all_uids, make_lessons

N = 60


class Boom(RuntimeError):
    pass


def _fail_at(step: str, *, times: int = 1):
    seen = Counter()

    def hook(name: str) -> None:
        seen[name] += 1
        if name == step and seen[name] == times:
            raise Boom(step)

    return hook


def _check_conserved(store, archiver, original: set[str]) -> tuple[list[str], list[str]]:
    live, archived = all_uids(store, archiver, "lessons")
    assert len(live) == len(set(live)) and len(archived) == len(set(archived)), "an id appears twice"
    assert not set(live) & set(archived), "an item is both live and archived"
    assert set(live) | set(archived) == original
    assert len(live) + len(archived) == len(original)
    return live, archived


@pytest.mark.parametrize(
    ("step", "times"),
    [("write_chunk", 3), ("after_write", 1), ("after_verify", 1), ("during_delete", 1)],
)
def test_interrupted_run_is_settled_by_the_next(store, fake_embeddings, step, times):
    original = {it.uid for it in make_lessons(store, fake_embeddings, N)}
    archiver = Archiver(store, chunk_size=10)
    archiver._fault = _fail_at(step, times=times)
    with pytest.raises(Boom):
        archiver.run()
    # Right after the crash nothing is lost: each item is live, or in a verified file.
    live = {it.uid for it in store.items.iter_items("lessons")}
    assert len(live) + archiver.count_archived() >= N
    assert live | {a.uid for a in archiver.iter_archived()} == original
    if step == "during_delete":
        assert 0 < len(live) < N  # really interrupted halfway through the deletes
    archiver._fault = None
    report = archiver.run()
    live_after, archived = _check_conserved(store, archiver, original)
    assert archived and not live_after  # every item was stale: all end up archived exactly once
    if step != "write_chunk":  # a failure while writing discards the partial file at once
        assert report.recovered  # the second run says what it settled
    states = Counter(f.state for f in archiver.list_archives(all_states=True))
    assert states["complete"] >= 1 and states["writing"] == 0 and states["verified"] == 0
    # a third run has nothing left to do
    assert archiver.run().total_archived == 0
    _check_conserved(store, archiver, original)
    archiver.close()


def test_crash_during_restore_is_settled(store, fake_embeddings):
    original = {it.uid for it in make_lessons(store, fake_embeddings, 30)}
    archiver = Archiver(store, chunk_size=10)
    archiver.run()
    archiver._fault = _fail_at("restore_chunk", times=2)
    with pytest.raises(Boom):
        archiver.restore(collection="lessons", all_items=True)
    archiver._fault = None
    archiver.recover()
    live, archived = _check_conserved(store, archiver, original)
    assert len(live) == 20 and len(archived) == 10
    assert archiver.restore(collection="lessons", all_items=True).restored == 10
    live, archived = _check_conserved(store, archiver, original)
    assert len(live) == 30 and archived == []
    archiver.close()


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip])
def test_file_damaged_before_verification_deletes_nothing(store, fake_embeddings, damage):
    original = {it.uid for it in make_lessons(store, fake_embeddings, 25)}
    archiver = Archiver(store)

    def hook(step: str) -> None:
        if step == "after_write":
            (f,) = archiver.list_archives(all_states=True)
            damage(archiver.archive_dir / f.name)

    archiver._fault = hook
    report = archiver.run()
    assert not report.ok and "lessons_learned" in report.errors[0]
    assert report.collections["lessons_learned"].deleted == 0
    assert {it.uid for it in store.items.iter_items("lessons")} == original
    (f,) = archiver.list_archives(all_states=True)
    assert f.state == "corrupt" and archiver.count_archived() == 0
    # the next run archives everything into a fresh, good file
    archiver._fault = None
    assert archiver.run().ok
    _check_conserved(store, archiver, original)
    assert archiver.count_archived() == 25
    archiver.close()


def test_file_damaged_before_pending_deletes_keeps_items_live(store, fake_embeddings):
    original = {it.uid for it in make_lessons(store, fake_embeddings, 25)}
    archiver = Archiver(store)
    archiver._fault = _fail_at("after_verify")
    with pytest.raises(Boom):
        archiver.run()
    (f,) = archiver.list_archives()
    _truncate(archiver.archive_dir / f.name)
    archiver._fault = None
    report = archiver.run()
    assert any("damaged" in msg for msg in report.recovered)
    # nothing was deleted on account of the damaged file; the items are archived anew
    states = {x.name: x.state for x in archiver.list_archives(all_states=True)}
    assert states[f.name] == "corrupt"
    _check_conserved(store, archiver, original)


def test_damaged_complete_file_is_reported_by_verify_search_and_restore(store, fake_embeddings):
    make_lessons(store, fake_embeddings, 12)
    archiver = Archiver(store)
    archiver.run()
    (f,) = archiver.list_archives()
    assert archiver.verify() == {f.name: None}
    _flip(archiver.archive_dir / f.name)
    problems = archiver.verify()
    assert problems[f.name] is not None
    with pytest.raises(ArchiveIntegrityError):
        archiver.search_archive("lessons", "risk")
    assert archiver.search_archive("lessons", "risk", strict=False) == []
    with pytest.raises(ArchiveIntegrityError):
        archiver.restore(collection="lessons", all_items=True)
    assert store.items.count("lessons") == 0  # nothing restored from a damaged file


def test_each_file_is_valid_gzip_jsonl_after_a_crash_in_the_middle_of_writing(store, fake_embeddings):
    make_lessons(store, fake_embeddings, 40)
    archiver = Archiver(store, chunk_size=10)
    archiver._fault = _fail_at("write_chunk", times=2)
    with pytest.raises(Boom):
        archiver.run()
    # the partial file was discarded at once; nothing half-written is left around
    assert list(archiver.archive_dir.glob("*.jsonl.gz")) == []
    archiver._fault = None
    archiver.run()
    (path,) = archiver.archive_dir.glob("*.jsonl.gz")
    assert len(gzip.decompress(path.read_bytes()).splitlines()) == 40


@pytest.mark.parametrize("offset", [0.3, 0.45, 0.5, 0.55, 0.7, 0.9])
def test_a_flipped_byte_anywhere_is_an_integrity_error_never_a_crash(store, fake_embeddings, offset):
    make_lessons(store, fake_embeddings, 30)
    archiver = Archiver(store)
    archiver.run()
    (f,) = archiver.list_archives()
    path = archiver.archive_dir / f.name
    data = bytearray(path.read_bytes())
    data[int(len(data) * offset)] ^= 0x55
    path.write_bytes(bytes(data))
    assert archiver.verify()[f.name] is not None
    with pytest.raises(ArchiveIntegrityError):
        archiver.search_archive("lessons", "risk")
    assert archiver.search_archive("lessons", "risk", strict=False) == []
