"""Share bundles between real data directories: round trip, conflicts, a model change, damaged bundles."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.bundle import BUNDLE_VERSION, export_bundle, import_bundle, read_bundle
from langgraph_memory.catalog import StoredItem
from langgraph_memory.errors import BundleError, InvalidArgumentError
from langgraph_memory.memory import Memory
from langgraph_memory.store import ChromaStore

ALL = ("research_findings", "strategy_library", "lessons_learned", "market_regimes", "tool_definitions", "memories")


class OtherModel(DeterministicFakeEmbedding):
    """Another embedding model (another name, another size): importing into it re-embeds."""


def _all_items(store: ChromaStore) -> dict[tuple[tuple[str, ...], str], StoredItem]:
    store.flush_access()
    return {(it.namespace, it.key): it for name in ALL for it in store.items.iter_items(name, with_vectors=True)}


def _fields(it: StoredItem) -> tuple[Any, ...]:
    vectors = [np.asarray(v, dtype=np.float32).tobytes() for v in it.vectors]
    return (
        it.value,
        it.created_at,
        it.updated_at,
        it.last_accessed_at,
        it.access_count,
        it.expires_at,
        it.ttl_minutes,
        vectors,
        it.paths,
    )


@pytest.fixture
def source(tmp_path: Path, fake_embeddings) -> dict[str, Any]:
    """Typed records, lineage, two versions, TTL, reads, multi-vector and unindexed items, a superseded and a retired one."""
    d = tmp_path / "source"
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.1 + 0.2)
        s1 = mem.store_strategy("mom", "Buy 20-day winners", parent_id=f.id, metrics={"sharpe_ratio": 1 / 3})
        s2 = mem.store_strategy("mom", "Buy 60-day winners", metrics={"sharpe_ratio": 2 / 3})
        lesson = mem.store_lesson("A 20-day lookback whipsaws", strategy_id=s1.id, feedback={"trades": 140})
        mem.resolve_lesson(lesson.id, s2.id)
        store = mem.store
        store.put(("memories", "u1"), "prefs", {"content": "short reports", "n": 1e-300, "ü": "ß"}, ttl=60)
        store.put(("memories", "u1"), "notes", {"notes": ["buy the dip", "sell the rip"]}, index=["notes[*]"])
        store.put(("memories", "u1"), "raw", {"blob": [1, 2, 3]}, index=False)
        for _ in range(3):
            store.get(("memories", "u1"), "prefs")
        store.search(("research",), query="Momentum decays after earnings")
        mem.supersede(s1.id, s2.id, "the longer lookback whipsaws less")
        mem.retire("notes", "a duplicate of the desk wiki", namespace=("memories", "u1"))
    return {"dir": d, "finding": f.id, "s1": s1.id, "s2": s2.id, "lesson": lesson.id}


def test_round_trip_between_two_data_directories_is_bit_exact(source, tmp_path: Path, fake_embeddings) -> None:
    bundle, target = tmp_path / "share", tmp_path / "target"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        manifest = export_bundle(mem.store, bundle)
        before = _all_items(mem.store)
        lineage_before = mem.lineage(source["lesson"]).as_dict()
        statuses_before = {k: st.as_dict() for k, st in mem.store.items.statuses(list(before)).items()}
    assert manifest.counts["items"] == len(before) == 7
    assert (manifest.counts["retired"], manifest.counts["superseded"]) == (1, 1) and len(statuses_before) == 2
    assert manifest.model == {"name": "langchain_core.embeddings.fake.DeterministicFakeEmbedding", "dims": 16}
    assert manifest.schema_version == BUNDLE_VERSION and manifest.source["data_dir"] == str(source["dir"].resolve())
    assert "import" in (bundle / "README.md").read_text()
    with Memory.open(target, embeddings=fake_embeddings) as mem:
        report = import_bundle(mem.store, bundle)
        assert (report.added, report.replaced, report.kept, report.vectors_reused) == (7, 0, 0, True)
        after = _all_items(mem.store)
        assert after.keys() == before.keys()
        for ident, it in before.items():
            assert _fields(after[ident]) == _fields(it), ident
        assert mem.lineage(source["lesson"]).as_dict() == lineage_before
        # Statuses travel: the superseded strategy and the retired note arrive hidden, with their reasons.
        assert report.statuses == 2
        assert {k: st.as_dict() for k, st in mem.store.items.statuses(list(after)).items()} == statuses_before
        old = mem.status(source["s1"])
        assert (old.status, old.reason, old.superseded_by) == (
            "superseded",
            "the longer lookback whipsaws less",
            source["s2"],
        )
        notes = mem.status("notes", namespace=("memories", "u1"))
        assert (notes.status, notes.reason) == ("retired", "a duplicate of the desk wiki")
        hits = mem.store.search(("strategies",), query="Buy 20-day winners", limit=5, refresh_ttl=False)
        assert [h.key for h in hits] == [source["s2"]]
        assert {h.key for h in mem.store.search(("memories",), limit=10, refresh_ttl=False)} == {"prefs", "raw"}
        # hidden from searches, still readable by key
        assert mem.store.get(("memories", "u1"), "notes", refresh_ttl=False) is not None
        assert [(v.version, v.id) for v in mem.versions("mom")] == [(1, source["s1"]), (2, source["s2"])]
        # The Chroma index caught up: every vector finds its own item first.
        for (ns, key), it in after.items():
            if it.paths and it.paths[0] != "$":
                hit = mem.store.search(ns, query=it.texts[0], limit=1, refresh_ttl=False, include_retired=True)[0]
                assert hit.key == key
        # The same bundle again changes nothing (the tie keeps the target's copy).
        again = import_bundle(mem.store, bundle)
        assert (again.added, again.replaced, again.kept, again.lineage_edges, again.statuses) == (0, 0, 7, 0, 0)
        export_bundle(mem.store, tmp_path / "share2")
    assert (tmp_path / "share2" / "memories.jsonl").read_bytes() == (bundle / "memories.jsonl").read_bytes()


def test_conflicts_follow_the_documented_rule(source, tmp_path: Path, fake_embeddings) -> None:
    bundle = tmp_path / "share"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle, namespaces=[("memories",)])
    target = tmp_path / "target"
    with Memory.open(target, embeddings=fake_embeddings) as mem:
        import_bundle(mem.store, bundle)
        mem.store.put(("memories", "u1"), "prefs", {"content": "long reports"})  # changed here, later
        plan = import_bundle(mem.store, bundle, dry_run=True)
        assert (plan.added, plan.replaced, plan.kept, plan.dry_run) == (0, 0, 3, True)
        report = import_bundle(mem.store, bundle)  # "newer": the copy updated last wins
        assert (report.replaced, report.kept) == (0, 3)
        assert mem.store.get(("memories", "u1"), "prefs").value == {"content": "long reports"}
        report = import_bundle(mem.store, bundle, on_conflict="replace")
        assert report.replaced == 3 and mem.store.get(("memories", "u1"), "prefs").value["content"] == "short reports"
        mem.store.put(("memories", "u1"), "prefs", {"content": "medium reports"})
        assert import_bundle(mem.store, bundle, on_conflict="keep").kept == 3
        assert mem.store.get(("memories", "u1"), "prefs").value["content"] == "medium reports"
        with pytest.raises(InvalidArgumentError):
            import_bundle(mem.store, bundle, on_conflict="merge")  # type: ignore[arg-type]


def test_a_strategy_version_taken_here_is_renumbered(source, tmp_path: Path, fake_embeddings) -> None:
    bundle, target = tmp_path / "share", tmp_path / "target"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle, namespaces=[("strategies",)])
    with Memory.open(target, embeddings=fake_embeddings) as mem:
        mine = mem.store_strategy("mom", "My own momentum")  # "mom" v1 here already
        report = import_bundle(mem.store, bundle)
        assert report.renumbered == {source["s1"]: (1, 2), source["s2"]: (2, 3)}
        assert [(v.version, v.id) for v in mem.versions("mom")] == [(1, mine.id), (2, source["s1"]), (3, source["s2"])]
        assert mem.get(source["s2"]).version == 3


def test_a_subset_keeps_its_lineage_whole(source, tmp_path: Path, fake_embeddings) -> None:
    bundle, target = tmp_path / "share", tmp_path / "target"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        manifest = export_bundle(mem.store, bundle, collections=["lessons"])
    assert manifest.counts["items"] == 1 and manifest.counts["lineage_nodes"] == 2  # s1 and the finding: nodes only
    with Memory.open(target, embeddings=fake_embeddings) as mem:
        import_bundle(mem.store, bundle)
        lin = mem.lineage(source["lesson"])
        assert lin.ancestor_ids == [source["finding"], source["s1"]]
        assert {a.storage for a in lin.ancestors} == {"unknown"}  # known by id; their items were not shared
        assert lin.descendants.children == []  # what came of the lesson (s2) was not shared


def test_across_a_model_change_the_texts_are_re_embedded(source, tmp_path: Path, fake_embeddings) -> None:
    bundle, target = tmp_path / "share", tmp_path / "target"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle)
        before = _all_items(mem.store)
    other = OtherModel(size=8)
    calls: list[tuple[str, int, int | None]] = []
    with Memory.open(target, embeddings=other) as mem:
        report = import_bundle(mem.store, bundle, progress=lambda *a: calls.append(a))
        assert not report.vectors_reused and report.reembedded == sum(len(it.paths) for it in before.values()) == 7
        assert ("re-embed", 7, 7) in calls and calls[0][0] == "check"
        after = _all_items(mem.store)
        for ident, it in before.items():
            got = after[ident]
            assert _fields(got)[:7] == _fields(it)[:7] and got.paths == it.paths  # values, times, access: exact
            for vec, text in zip(got.vectors, got.texts, strict=False):
                assert np.allclose(vec, other.embed_query(text), atol=1e-6)
        hit = mem.store.search(("research",), query="Momentum decays after earnings", limit=1)[0]
        assert hit.key == source["finding"] and hit.score == pytest.approx(1.0, abs=1e-5)


def test_statuses_follow_the_item_they_were_set_on(source, tmp_path: Path, fake_embeddings) -> None:
    bundle = tmp_path / "share"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle, namespaces=[("memories",), ("strategies",)])
    with Memory.open(tmp_path / "target", embeddings=fake_embeddings) as mem:
        # "notes" here is another item under the same key, written after the source's: "newer" keeps it.
        mem.store.put(("memories", "u1"), "notes", {"notes": ["our own notes"]}, index=["notes[*]"])
        plan = import_bundle(mem.store, bundle, dry_run=True)
        assert plan.statuses == 1  # the strategy's; the retired note is not the note kept here
        report = import_bundle(mem.store, bundle)
        assert (report.statuses, report.kept) == (1, 1)
        assert mem.status("notes", namespace=("memories", "u1")) is None
        assert "notes" in {h.key for h in mem.store.search(("memories",), limit=10)}
        # The target's own word on an item stands: a status set here is never changed by an import.
        mem.reinstate(source["s1"])
        mem.retire(source["s1"], "wrong universe")
        again = import_bundle(mem.store, bundle)
        assert again.statuses == 0 and mem.status(source["s1"]).reason == "wrong universe"
        # Taking the bundle's copy of the note brings the status set on that copy.
        taken = import_bundle(mem.store, bundle, on_conflict="replace")
        assert taken.statuses == 1 and mem.status("notes", namespace=("memories", "u1")).status == "retired"
        assert "notes" not in {h.key for h in mem.store.search(("memories",), limit=10)}


def test_a_version_1_bundle_still_imports(source, tmp_path: Path, fake_embeddings) -> None:
    """A bundle written before statuses travelled (format 1: no "status" in its lines) imports as before."""
    bundle = tmp_path / "share"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle)

    def drop_statuses(lines: list[bytes]) -> list[bytes]:
        out = []
        for line in lines:
            rec = json.loads(line)
            rec.pop("status", None)
            out.append(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
        return out

    _rewrite(bundle, drop_statuses)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name in ("retired", "superseded"):
        del manifest["counts"][name]
    (bundle / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 1}))
    assert b'"status":{' not in (bundle / "memories.jsonl").read_bytes()
    with Memory.open(tmp_path / "target", embeddings=fake_embeddings) as mem:
        report = import_bundle(mem.store, bundle)
        assert (report.added, report.statuses) == (7, 0)
        assert mem.status(source["s1"]) is None and mem.get(source["s1"]).version == 1


def _rewrite(bundle: Path, edit: Any) -> None:
    """Edit memories.jsonl and fix the manifest's checksum, so only the line checks can catch the edit."""
    lines = (bundle / "memories.jsonl").read_bytes().splitlines(keepends=True)
    data = b"".join(edit(lines))
    (bundle / "memories.jsonl").write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"]["memories.jsonl"] = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "lines": len(data.splitlines()),
    }
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _edit_first_item(lines: list[bytes], change: Any) -> list[bytes]:
    rec = json.loads(lines[0])
    change(rec)
    return [json.dumps(rec).encode() + b"\n", *lines[1:]]


def _flip(bundle: Path) -> None:
    data = bytearray((bundle / "memories.jsonl").read_bytes())
    data[len(data) // 3] ^= 0x20
    (bundle / "memories.jsonl").write_bytes(bytes(data))


DAMAGE = {
    "a flipped byte": _flip,
    "a cut-off file": lambda b: (b / "memories.jsonl").write_bytes((b / "memories.jsonl").read_bytes()[:-40]),
    "no manifest": lambda b: (b / "manifest.json").unlink(),
    "no memories": lambda b: (b / "memories.jsonl").unlink(),
    "a manifest that is not JSON": lambda b: (b / "manifest.json").write_text("{"),
    "a newer format": lambda b: (b / "manifest.json").write_text(
        json.dumps({**json.loads((b / "manifest.json").read_text()), "schema_version": BUNDLE_VERSION + 1})
    ),
    "a value its collection refuses": lambda b: _rewrite(
        b, lambda ls: _edit_first_item(ls, lambda r: r["value"].__setitem__("confidence", "high"))
    ),
    "vectors of another size": lambda b: _rewrite(
        b, lambda ls: _edit_first_item(ls, lambda r: r["vectors"].__setitem__("b64", [r["vectors"]["b64"][0][:20]]))
    ),
    "a line dropped": lambda b: _rewrite(b, lambda ls: ls[1:]),
    "an item twice": lambda b: _rewrite(b, lambda ls: [ls[0], *ls]),
    "garbage": lambda b: _rewrite(b, lambda ls: [b"not json\n", *ls[1:]]),
    "an unknown status": lambda b: _rewrite(
        b, lambda ls: _edit_first_item(ls, lambda r: r.__setitem__("status", {"status": "forgotten", "reason": "?"}))
    ),
    "a status set on another item": lambda b: _rewrite(
        b,
        lambda ls: _edit_first_item(
            ls,
            lambda r: r.__setitem__(
                "status",
                {"status": "retired", "reason": "old", "changed_at": 1.0, "item_created_at": r["created_at"] - 1},
            ),
        ),
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_damaged_bundle_is_refused_with_nothing_written(damage, source, tmp_path: Path, fake_embeddings) -> None:
    bundle, target = tmp_path / "share", tmp_path / "target"
    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        export_bundle(mem.store, bundle)
    DAMAGE[damage](bundle)
    with Memory.open(target, embeddings=fake_embeddings) as mem:
        mem.store.put(("memories", "mine"), "k", {"content": "already here"})
        with pytest.raises(BundleError) as exc:
            import_bundle(mem.store, bundle)
        assert str(bundle) in str(exc.value)
        with mem.store.catalog.read() as conn:
            assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
            assert conn.execute("SELECT count(*) FROM lineage_nodes").fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM item_status").fetchone()[0] == 0
        with pytest.raises(BundleError):
            read_bundle(bundle)


def test_export_is_all_or_nothing_and_never_overwrites_by_accident(source, tmp_path: Path, fake_embeddings) -> None:
    bundle = tmp_path / "share"

    def fail(phase: str, done: int, total: int | None) -> None:
        if phase == "export strategy_library":
            raise RuntimeError("interrupted")

    with Memory.open(source["dir"], embeddings=fake_embeddings) as mem:
        with pytest.raises(RuntimeError):
            export_bundle(mem.store, bundle, progress=fail)
        assert list(tmp_path.glob("*share*")) == []  # neither the bundle nor its temporary folder
        export_bundle(mem.store, bundle)
        with pytest.raises(InvalidArgumentError):
            export_bundle(mem.store, bundle)
        manifest = export_bundle(mem.store, bundle, overwrite=True, namespaces=[("memories", "u1")])
    assert manifest.counts["items"] == 3 and len(read_bundle(bundle).items) == 3
    assert oct(bundle.stat().st_mode & 0o777) == "0o755"
