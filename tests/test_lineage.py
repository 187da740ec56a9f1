"""LineageStore: edges, ancestors, trees, versions, cycles, and several processes at once."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest

from langgraph_memory.errors import LineageCycleError, LineageError, NotFoundError
from langgraph_memory.research.lineage import LineageStore, NodeSummary, build_lineage

pytestmark = pytest.mark.sqlite_only("a LineageStore on a SQLite file of its own, the same in both passes")


@pytest.fixture
def lin(tmp_path: Path):
    s = LineageStore(tmp_path / "lineage.sqlite")
    yield s
    s.close()


def _chain(lin: LineageStore, ids: list[str]) -> None:
    lin.register(ids[0], "research_findings", ("research",))
    for parent, child in zip(ids, ids[1:], strict=False):
        lin.register(child, "strategy_library", ("strategies",), parents=[(parent, "derived_from")])


def test_parents_children_and_ancestors_root_first(lin: LineageStore) -> None:
    _chain(lin, ["a", "b", "c", "d"])
    assert [e.parent_id for e in lin.parents("d")] == ["c"]
    assert [e.child_id for e in lin.children("a")] == ["b"]
    assert [r.id for r in lin.ancestors("d")] == ["a", "b", "c"]
    assert lin.ancestor_depths("d") == {"c": 1, "b": 2, "a": 3}
    edge = lin.parents("b")[0]
    assert (edge.relation, edge.child_collection, edge.parent_collection) == (
        "derived_from",
        "strategy_library",
        "research_findings",
    )


def test_diamond_ancestors_ordered_by_longest_path(lin: LineageStore) -> None:
    lin.register("root", "memories", ("n",))
    lin.register("x", "memories", ("n",), parents=[("root", "r")])
    lin.register("y", "memories", ("n",), parents=[("x", "r")])
    lin.register("z", "memories", ("n",), parents=[("y", "r"), ("root", "r")])
    # root is both a parent and a great-grandparent of z: it comes first.
    assert [r.id for r in lin.ancestors("z")] == ["root", "x", "y"]


def test_cycles_are_refused(lin: LineageStore) -> None:
    _chain(lin, ["a", "b", "c"])
    with pytest.raises(LineageCycleError):
        lin.link("a", "c")
    with pytest.raises(LineageCycleError):
        lin.link("b", "b")
    with pytest.raises(LineageCycleError):
        lin.link("a", "b", "another relation")
    # a refused link leaves nothing behind
    assert lin.parents("a") == []
    assert lin.edge_count() == 2


def test_unknown_ids_and_bad_ids(lin: LineageStore) -> None:
    lin.register("a", "memories", ("n",))
    with pytest.raises(LineageError, match="unknown parent"):
        lin.register("b", "memories", ("n",), parents=[("nope", "derived_from")])
    assert lin.item("b") is None  # the whole registration was rolled back
    with pytest.raises(LineageError, match="unknown item"):
        lin.link("ghost", "a")
    with pytest.raises(LineageError):
        lin.register("", "memories", ("n",))
    with pytest.raises(NotFoundError):
        lin.require("ghost")


def test_link_is_idempotent_and_relations_distinct(lin: LineageStore) -> None:
    _chain(lin, ["a", "b"])
    lin.link("b", "a", "derived_from")
    lin.link("b", "a", "resolves")
    assert sorted(e.relation for e in lin.parents("b")) == ["derived_from", "resolves"]


def test_versions_count_per_name_and_link_previous(lin: LineageStore) -> None:
    assert lin.register("s1", "strategy_library", ("strategies",), version_name="mom") == 1
    assert lin.register("s2", "strategy_library", ("strategies",), version_name="mom") == 2
    assert lin.register("t1", "strategy_library", ("strategies",), version_name="other") == 1
    assert lin.register("s3", "strategy_library", ("strategies",), version_name="mom") == 3
    assert [(v.version, v.id) for v in lin.versions("mom")] == [(1, "s1"), (2, "s2"), (3, "s3")]
    assert [(e.parent_id, e.relation) for e in lin.parents("s3")] == [("s2", "previous_version")]
    assert lin.versions("unknown") == []
    # registering the same id again keeps its number
    assert lin.register("s2", "strategy_library", ("strategies",), version_name="mom") == 2


def test_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    with LineageStore(path) as a:
        _chain(a, ["a", "b", "c"])
        a.register("v1", "strategy_library", ("strategies",), version_name="n")
    with LineageStore(path) as b:
        assert [r.id for r in b.ancestors("c")] == ["a", "b"]
        assert b.register("v2", "strategy_library", ("strategies",), version_name="n") == 2
        with pytest.raises(LineageCycleError):
            b.link("a", "c")
    with pytest.raises(LineageError, match="closed"):
        b.parents("a")


def test_build_lineage_tree_merges_relations_and_marks_unknown(lin: LineageStore) -> None:
    _chain(lin, ["f", "s1"])
    lin.register("l1", "lessons_learned", ("lessons",), parents=[("s1", "produced")])
    lin.register("s2", "strategy_library", ("strategies",), parents=[("l1", "derived_from")])
    lin.link("s2", "l1", "resolves")
    known = {"f": "finding", "s1": "strategy one", "s2": "strategy two"}  # l1 is "archived"
    result = build_lineage(
        lin, "s1", lambda refs: {r.id: NodeSummary(known[r.id], "live") for r in refs if r.id in known}
    )
    assert [a.id for a in result.ancestors] == ["f"]
    assert result.ancestors[0].summary == "finding"
    lesson = result.descendants.children[0]
    assert (lesson.node.id, lesson.node.relation, lesson.node.storage) == ("l1", "produced", "unknown")
    assert lesson.node.summary == "l1"
    assert [(c.node.id, c.node.relation) for c in lesson.children] == [("s2", "derived_from, resolves")]
    assert result.descendant_ids == ["l1", "s2"]


# ----------------------------------------------------- several processes at once


def _allocate(path: str, worker: int, n: int, barrier) -> None:
    lin = LineageStore(path, lock_timeout=60)
    barrier.wait()
    for i in range(n):
        lin.register(f"w{worker}-{i}", "strategy_library", ("strategies",), version_name="shared")
    lin.close()


def _link_both_ways(path: str, worker: int, pairs: int, barrier, out) -> None:
    lin = LineageStore(path, lock_timeout=60)
    barrier.wait()
    made = 0
    for i in range(pairs):
        a, b = f"p{i}a", f"p{i}b"
        child, parent = (a, b) if worker == 0 else (b, a)
        try:
            lin.link(child, parent)
            made += 1
        except LineageCycleError:
            pass
    out.put(made)
    lin.close()


@pytest.mark.slow
def test_versions_unique_across_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "lineage.sqlite")
    LineageStore(path).close()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_allocate, args=(path, w, 15, barrier)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with LineageStore(path) as lin:
        rows = lin.versions("shared")
    assert [r.version for r in rows] == list(range(1, 46))
    assert len({r.id for r in rows}) == 45


@pytest.mark.slow
def test_two_processes_cannot_jointly_create_a_cycle(tmp_path: Path) -> None:
    path = str(tmp_path / "lineage.sqlite")
    pairs = 60
    with LineageStore(path) as lin:
        for i in range(pairs):
            lin.register(f"p{i}a", "memories", ("n",))
            lin.register(f"p{i}b", "memories", ("n",))
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [ctx.Process(target=_link_both_ways, args=(path, w, pairs, barrier, out)) for w in range(2)]
    for p in procs:
        p.start()
    made = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    # Each pair got exactly one direction: one process won, the other was refused.
    assert sum(made) == pairs
    conn = sqlite3.connect(path)
    for i in range(pairs):
        n = conn.execute(
            "SELECT COUNT(*) FROM lineage_edges WHERE child_id IN (?, ?) AND parent_id IN (?, ?)",
            (f"p{i}a", f"p{i}b", f"p{i}a", f"p{i}b"),
        ).fetchone()[0]
        assert n == 1
    conn.close()
