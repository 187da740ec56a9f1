"""Archive runs, policies, search, restore and lineage lookups, on real Chroma and real files."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import numpy as np
import pytest

from langgraph_memory.archive import Archiver, RetentionPolicy
from langgraph_memory.catalog import StoredItem
from langgraph_memory.errors import ArchiveError
from tests.helpers.archive_data import DAY, all_uids, make_lessons, old_item


@pytest.fixture
def archiver(store):
    a = Archiver(store, chunk_size=7)
    yield a
    a.close()


def _live_keys(store, collection: str) -> set[str]:
    return {it.key for it in store.items.iter_items(collection)}


def test_default_policies_select_by_idle_time_and_confidence(store, archiver, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items(
        [
            old_item(e, ("lessons",), "old-lesson", {"lesson": "cut losses early"}, days=120),
            old_item(e, ("lessons",), "new-lesson", {"lesson": "size positions small"}, days=10),
            old_item(e, ("research",), "old-weak", {"content": "weak signal", "confidence": 0.3}, days=120),
            old_item(e, ("research",), "old-strong", {"content": "strong signal", "confidence": 0.8}, days=120),
            old_item(e, ("research",), "old-unrated", {"content": "no confidence given"}, days=120),
            old_item(e, ("research",), "new-weak", {"content": "fresh weak signal", "confidence": 0.1}, days=5),
            old_item(e, ("strategies",), "ancient", {"description": "buy and hold"}, days=1000),
            old_item(e, ("notes",), "ancient-note", {"text": "general memory"}, days=1000),
        ]
    )
    report = archiver.run()
    assert report.ok
    assert _live_keys(store, "lessons_learned") == {"new-lesson"}
    assert _live_keys(store, "research_findings") == {"old-strong", "new-weak"}
    assert _live_keys(store, "strategy_library") == {"ancient"}
    assert _live_keys(store, "memories") == {"ancient-note"}
    assert {a.key for a in archiver.iter_archived()} == {"old-lesson", "old-weak", "old-unrated"}
    assert report.collections["lessons_learned"].archived == 1
    assert report.collections["research_findings"].archived == 2
    assert set(report.collections) == {"lessons_learned", "research_findings"}


def test_configured_policies_override_defaults(store, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items(
        [
            old_item(e, ("strategies",), "s-old", {"description": "momentum"}, days=40),
            old_item(e, ("strategies",), "s-new", {"description": "carry"}, days=20),
            old_item(e, ("lessons",), "l-old", {"lesson": "never archive me"}, days=400),
        ]
    )
    a = Archiver(store, policies={"strategies": 30, "lessons": None})
    a.run()
    assert _live_keys(store, "strategy_library") == {"s-new"}
    assert _live_keys(store, "lessons_learned") == {"l-old"}
    b = Archiver(store, policies={"research": RetentionPolicy(1, field="confidence", below=0.9)})
    assert b.policies["research_findings"].below == 0.9
    a.close()
    b.close()


def test_recall_keeps_an_old_memory_live(store, archiver, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items(
        [
            old_item(e, ("lessons",), "recalled", {"lesson": "hedge tail risk"}, days=200),
            old_item(e, ("lessons",), "forgotten", {"lesson": "hedge nothing"}, days=200),
            # read 10 days ago though written 200 days ago: activity is the later of the two
            old_item(e, ("lessons",), "read-lately", {"lesson": "read lately"}, days=200, accessed_days=10),
        ]
    )
    assert store.get(("lessons",), "recalled") is not None  # a read, applied by the run's flush
    archiver.run()
    assert _live_keys(store, "lessons_learned") == {"recalled", "read-lately"}
    assert [a.key for a in archiver.iter_archived()] == ["forgotten"]


def test_expired_ttl_items_are_swept_in_the_same_pass(store, archiver, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items(
        [
            old_item(e, ("notes",), "expired", {"text": "gone"}, days=1, expires_at=time.time() - 60),
            old_item(e, ("notes",), "alive", {"text": "stays"}, days=1, expires_at=time.time() + 3600),
        ]
    )
    dry = archiver.run(dry_run=True)
    assert dry.ttl_swept == 1 and _live_keys(store, "memories") == {"expired", "alive"}
    report = archiver.run()
    assert report.ttl_swept == 1
    assert _live_keys(store, "memories") == {"alive"}


def test_dry_run_reports_and_changes_nothing(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 20)
    report = archiver.run(dry_run=True)
    assert report.dry_run and report.collections["lessons_learned"].selected == 20
    assert store.items.count("lessons") == 20
    assert archiver.list_archives(all_states=True) == []
    assert list(archiver.archive_dir.glob("*.jsonl.gz")) == []


def test_now_parameter_measures_policy_from_a_given_time(store, archiver):
    store.put(("lessons",), "today", {"lesson": "written now"})
    assert archiver.run(dry_run=True).collections["lessons_learned"].selected == 0
    assert archiver.run(now=time.time() + 91 * DAY).collections["lessons_learned"].archived == 1


def test_archive_file_format_and_manifest(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 30)
    report = archiver.run()
    (f,) = archiver.list_archives()
    assert f.name == report.collections["lessons_learned"].file
    assert f.state == "complete" and f.items == 30 and f.collection == "lessons_learned"
    path = archiver.archive_dir / f.name
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest() == f.sha256
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 30
    rec = json.loads(lines[0])
    for field in (
        "uid",
        "namespace",
        "key",
        "value",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "vectors",
        "lineage",
        "archived_at",
        "run_id",
    ):
        assert field in rec
    assert rec["lineage"]["strategy_id"] == rec["value"]["strategy_id"]
    assert f.min_activity <= f.max_activity < time.time() - 100 * DAY


def test_two_runs_on_one_day_keep_both_files(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 5, prefix="a")
    r1 = archiver.run()
    make_lessons(store, fake_embeddings, 4, prefix="b")
    r2 = archiver.run()
    f1, f2 = r1.collections["lessons_learned"].file, r2.collections["lessons_learned"].file
    assert f1 and f2 and f1 != f2
    assert (archiver.archive_dir / f1).exists() and (archiver.archive_dir / f2).exists()
    assert [f.items for f in archiver.list_archives()] == [5, 4]
    assert archiver.count_archived() == 9
    assert len(archiver.search_archive("lessons", None, k=100)) == 9


def test_round_trip_is_bit_exact(store, archiver, fake_embeddings):
    value = {
        "lesson": "Ünïcode — λ 日本 and floats",
        "strategy_id": "s-1",
        "parent_id": "p-0",
        "iteration": 7,
        "feedback": {
            "sharpe": 0.1 + 0.2,
            "tiny": 5e-324,
            "big": 1.7976931348623157e308,
            "neg": -0.0,
            "list": [1, 2.5, None, True, "x"],
            "nested": {"a": {"b": [{"c": 1}]}},
        },
        "resolved": False,
    }
    item = old_item(fake_embeddings, ("lessons", "desk"), "exact", value, days=150, access_count=4)
    store.items.restore_items([item])
    (before,) = store.items.get_items("lessons", [item.uid], with_vectors=True)
    archiver.run()
    assert store.items.get_items("lessons", [item.uid]) == []
    assert archiver.find("exact").item.vectors == before.vectors  # bit for bit
    (hit,) = archiver.search_archive("lessons", value["lesson"], k=1)
    assert json.dumps(hit.value, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert hit.score == pytest.approx(1.0, abs=1e-6)
    rep = archiver.restore(keys=["exact"])
    assert rep.restored == 1
    (after,) = store.items.get_items("lessons", [item.uid], with_vectors=True)
    assert json.dumps(after.value, sort_keys=True) == json.dumps(before.value, sort_keys=True)
    assert after.value["feedback"]["sharpe"] == 0.1 + 0.2
    assert str(after.value["feedback"]["neg"]) == "-0.0"
    for attr in (
        "namespace",
        "key",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "expires_at",
        "indexed",
        "n_vectors",
        "texts",
        "paths",
    ):
        assert getattr(after, attr) == getattr(before, attr), attr
    # The archive holds exactly the float32 vectors Chroma returned; Chroma itself
    # may move a re-written vector by an ulp, so the live copy is compared loosely.
    assert archiver.find("exact") is None  # restored: no longer in the archive view
    np.testing.assert_allclose(after.vectors, before.vectors, rtol=1e-6)
    # restoring twice does not duplicate, and the item is gone from the archive view
    assert archiver.restore(keys=["exact"]).matched == 0
    assert store.items.count("lessons") == 1 and archiver.count_archived() == 0
    assert archiver.search_archive("lessons", value["lesson"], k=5) == []
    # a restored item keeps its old timestamps but is not re-archived at once
    assert archiver.run().collections["lessons_learned"].archived == 0
    assert store.items.count("lessons") == 1
    # ... only after a policy period without use
    archiver.run(now=time.time() + 91 * DAY)
    assert store.items.count("lessons") == 0 and archiver.count_archived() == 1
    live, archived = all_uids(store, archiver, "lessons")
    assert archived == [item.uid]


def test_search_archive_ranks_filters_and_bounds_k(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 40)
    archiver.run()
    hits = archiver.search_archive("lessons", "lesson number 17 about risk", k=3)
    assert [h.key for h in hits][0] == "l17"
    assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score
    filtered = archiver.search_archive("lessons", "lesson number 17 about risk", filter={"strategy_id": "s3"}, k=50)
    assert filtered and all(h.value["strategy_id"] == "s3" for h in filtered)
    assert len(filtered) == 8
    ranged = archiver.search_archive("lessons", None, filter={"iteration": {"$gte": 35}}, k=50)
    assert sorted(h.key for h in ranged) == [f"l{i}" for i in range(35, 40)]
    by_ns = archiver.search_archive("lessons", "risk", namespace_prefix=("lessons", "desk1"), k=50)
    assert {h.namespace for h in by_ns} == {("lessons", "desk1")}
    assert archiver.search_archive("research", "risk") == []


def test_restore_by_filter_and_namespace(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 30)
    archiver.run()
    rep = archiver.restore(collection="lessons", filter={"strategy_id": "s0"})
    assert rep.restored == 6 and sorted(rep.keys) == sorted(f"l{i}" for i in range(0, 30, 5))
    rep = archiver.restore(namespace_prefix=("lessons", "desk2"))
    assert rep.restored == 10 - 2  # desk2 holds i % 3 == 2; two of them (l5, l20) came back already
    assert store.items.count("lessons") == 14 and archiver.count_archived() == 16
    live, archived = all_uids(store, archiver, "lessons")
    assert not set(live) & set(archived) and len(set(live) | set(archived)) == 30
    with pytest.raises(ArchiveError):
        archiver.restore()


def test_find_and_get_archived_answer_for_archived_ancestors(store, archiver, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items(
        [
            old_item(e, ("research",), "finding-1", {"content": "root finding", "confidence": 0.2}, days=100),
            old_item(
                e,
                ("lessons",),
                "lesson-1",
                {"lesson": "child", "parent_id": "finding-1", "strategy_id": "s9", "resolution_id": "r1"},
                days=100,
            ),
        ]
    )
    archiver.run()
    got = archiver.find("lesson-1")
    assert got is not None and got.lineage == {"parent_id": "finding-1", "strategy_id": "s9", "resolution_id": "r1"}
    parent = archiver.find(got.lineage["parent_id"])
    assert parent is not None and parent.value["content"] == "root finding" and parent.collection == "research_findings"
    assert archiver.find("nope") is None
    assert archiver.find("lesson-1", namespace=("other",)) is None
    assert {a.key for a in archiver.get_archived(["finding-1", "lesson-1"])} == {"finding-1", "lesson-1"}
    assert [a.key for a in archiver.get_archived(uids=[got.uid])] == ["lesson-1"]


def test_rearchiving_a_reput_item_supersedes_the_older_copy(store, archiver, fake_embeddings):
    e = fake_embeddings
    store.items.restore_items([old_item(e, ("lessons",), "k", {"lesson": "version one"}, days=100)])
    archiver.run()
    store.items.restore_items([old_item(e, ("lessons",), "k", {"lesson": "version two"}, days=95)])
    archiver.run()
    assert archiver.count_archived() == 1
    (only,) = list(archiver.iter_archived())
    assert only.value["lesson"] == "version two"
    assert [h.value["lesson"] for h in archiver.search_archive("lessons", "version", k=10)] == ["version two"]


def test_item_changed_during_the_run_stays_live(store, archiver, fake_embeddings):
    make_lessons(store, fake_embeddings, 10)

    def touch(step: str) -> None:
        if step == "after_verify":
            store.put(("lessons", "desk0"), "l0", {"lesson": "edited while archiving"})

    archiver._fault = touch
    report = archiver.run()
    cr = report.collections["lessons_learned"]
    assert cr.archived == 10 and cr.deleted == 9 and cr.kept_live == 1
    assert _live_keys(store, "lessons_learned") == {"l0"}
    assert store.get(("lessons", "desk0"), "l0").value["lesson"] == "edited while archiving"
    live, archived = all_uids(store, archiver, "lessons")
    assert len(archived) == 9 and not set(live) & set(archived)


def test_unindexed_and_multi_vector_items_round_trip(data_dir, fake_embeddings):
    from langgraph_memory.store import ChromaStore

    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings, "fields": ["a", "b"]})
    try:
        store.put(("notes",), "two", {"a": "first text", "b": "second text"})
        store.put(("notes",), "none", {"c": "nothing to embed"}, index=False)
        (before_two,) = store.items.get_items(
            "memories", [StoredItem(("notes",), "two", {}, 0, 0, 0).uid], with_vectors=True
        )
        assert before_two.n_vectors == 2
        a = Archiver(store, policies={"memories": 1})
        a.run(now=time.time() + 2 * DAY)
        assert a.find("two").item.vectors == before_two.vectors
        assert store.items.count("memories") == 0
        hits = a.search_archive("memories", "second text", k=5)
        assert [h.key for h in hits] == ["two"] and hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert a.restore(collection="memories", all_items=True).restored == 2
        (after_two,) = store.items.get_items("memories", [before_two.uid], with_vectors=True)
        np.testing.assert_allclose(after_two.vectors, before_two.vectors, rtol=1e-6)
        assert after_two.paths == before_two.paths and after_two.texts == before_two.texts
        assert store.get(("notes",), "none").value == {"c": "nothing to embed"}
        a.close()
    finally:
        store.close()


def test_archive_dir_defaults_to_the_data_dir(store):
    a = Archiver(store)
    assert a.archive_dir == Path(store.settings.archive_dir)
    a.close()


def test_lineage_store_edges_are_carried_into_the_archive(store, fake_embeddings):
    from langgraph_memory.research.lineage import LineageStore

    lin = LineageStore.for_data_dir(store.settings.data_dir)
    lin.register("f-root", "research_findings", ("research",))
    lin.register("l-child", "lessons_learned", ("lessons",), parents=[("f-root", "derived_from")])
    lin.close()
    store.items.restore_items(
        [old_item(fake_embeddings, ("lessons",), "l-child", {"lesson": "from a finding"}, days=100)]
    )
    archiver = Archiver(store)  # picks up <data_dir>/lineage.sqlite
    archiver.run()
    got = archiver.find("l-child")
    assert got.lineage["parents"] == [{"id": "f-root", "relation": "derived_from", "collection": "research_findings"}]
    archiver.close()
