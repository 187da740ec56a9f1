"""The command line, run in-process through ``main(argv)`` against real data directories.

Every command is run; ``--json`` output is parsed back; exit codes are checked:
0 done, 1 nothing matched, 2 bad usage, 3 failed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.graph import END, START, StateGraph

from langgraph_memory.checkpoint.factory import open_checkpointer
from langgraph_memory.cli import main
from langgraph_memory.config import Settings
from langgraph_memory.memory import Memory
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.archive_data import make_lessons

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fake_default_model(monkeypatch, fake_embeddings):
    """The CLI embeds with the configured model; a fake one keeps these tests fast (the MCP tests run the real one)."""
    monkeypatch.setattr(
        ChromaStore,
        "default_index",
        classmethod(lambda cls, model_name=None: {"dims": FAKE_DIMS, "embed": fake_embeddings}),
    )


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _json(capsys, *argv: str) -> tuple[int, Any]:
    code, out = _run(capsys, *argv, "--json")
    return code, json.loads(out)


@pytest.fixture
def seeded(data_dir, fake_embeddings):
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    make_lessons(store, fake_embeddings, 12)
    store.close()
    return data_dir


@pytest.fixture
def live(data_dir, fake_embeddings) -> dict[str, Any]:
    """A data directory with typed records, their lineage, two strategy versions and plain memories."""
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        s1 = mem.store_strategy("mom", "Buy 20-day winners", parent_id=f.id)
        s2 = mem.store_strategy("mom", "Buy 60-day winners")
        lesson = mem.store_lesson("A 20-day lookback whipsaws", strategy_id=s1.id)
        for i in range(5):
            mem.store.put(("memories", "u1"), f"m{i}", {"content": f"note {i} about coffee"}, index=["content"])
        mem.store.put(("memories", "u2"), "m0", {"content": "another user's note"}, index=["content"])
    return {"dir": str(data_dir), "finding": f.id, "s1": s1.id, "s2": s2.id, "lesson": lesson.id}


# ------------------------------------------------------------- the basics


def test_version(capsys):
    from langgraph_memory import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"langgraph-memory {__version__}"


def test_data_dir_and_json_go_before_or_after_the_command(live, capsys):
    d = live["dir"]
    first = _json(capsys, "--data-dir", d, "list")
    after = _json(capsys, "list", "--data-dir", d)
    code, out = _run(capsys, "--json", "--data-dir", d, "list")
    assert first == after == (0, json.loads(out)) and code == 0
    # A subcommand's own option wins over the top-level one.
    code, out = _run(capsys, "--data-dir", "/nonexistent", "list", "--data-dir", d, "--json")
    assert code == 0 and json.loads(out) == first[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["search", "x"],
        ["get", "k"],
        ["lineage", "x"],
        ["versions", "x"],
        ["delete", "k"],
        ["stats"],
        ["retire", "k", "--reason", "r"],
        ["supersede", "a", "b"],
        ["reinstate", "k"],
        ["threads", "list"],
        ["export", "bundle"],
        ["archive", "list"],
        ["archive", "run"],
        ["index", "check"],
    ],
)
@pytest.mark.sqlite_only(
    "a missing data directory; a memory on a server is named by its address (tests/test_pg_address.py)"
)
def test_a_missing_data_directory_is_named_and_not_created(argv, tmp_path, capsys):
    missing = tmp_path / "no-such-memory"
    code = main(["--data-dir", str(missing), *argv])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and str(missing) in err.replace("\n", "")
    assert not missing.exists()


def test_bad_usage_exits_2(live, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["archive"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", live["dir"], "search", "x", "--filter", "{not json"])
    assert exc.value.code == 2
    assert main(["--data-dir", live["dir"], "list", "--offset", "-1"]) == 2
    assert main(["--data-dir", live["dir"], "delete"]) == 2
    assert "needs keys" in capsys.readouterr().err


# ------------------------------------------------------------ live memory


def test_search(live, capsys):
    d = live["dir"]
    code, hits = _json(capsys, "--data-dir", d, "search", "note 3 about coffee", "-k", "2")
    assert code == 0 and len(hits) == 2 and hits[0]["key"] == "m3" and hits[0]["score"] > 0.99
    code, hits = _json(capsys, "--data-dir", d, "search", "whipsaws", "--collection", "lessons")
    assert code == 0 and [h["key"] for h in hits] == [live["lesson"]]
    code, hits = _json(capsys, "--data-dir", d, "search", "coffee", "--collection", "memories", "-k", "20")
    assert code == 0 and {tuple(h["namespace"]) for h in hits} == {("memories", "u1"), ("memories", "u2")}
    code, hits = _json(capsys, "--data-dir", d, "search", "coffee", "--namespace", "memories/u2")
    assert code == 0 and [h["key"] for h in hits] == ["m0"]
    code, out = _run(capsys, "--data-dir", d, "search", "anything", "--namespace", "nobody/here")
    assert code == 1 and "No matches" in out
    code, out = _run(capsys, "--data-dir", d, "search", "Buy 20-day winners", "--collection", "strategies")
    assert code == 0 and live["s1"] in out  # the whole id, not an ellipsis


def test_get(live, capsys):
    d = live["dir"]
    code, item = _json(capsys, "--data-dir", d, "get", live["finding"])
    assert code == 0 and item["namespace"] == ["research"] and item["value"]["confidence"] == 0.8
    assert item["created_at"].endswith("+00:00") and item["access_count"] == 0
    code, out = _run(capsys, "--data-dir", d, "get", live["s1"])
    assert code == 0 and live["s1"] in out and "Buy 20-day winners" in out
    assert main(["--data-dir", d, "get", "m0"]) == 2  # in memories/u1 and memories/u2
    assert "2 namespaces" in capsys.readouterr().err
    code, item = _json(capsys, "--data-dir", d, "get", "m0", "--namespace", "memories/u2")
    assert code == 0 and item["value"]["content"] == "another user's note"
    assert main(["--data-dir", d, "get", "no-such-key"]) == 1


def test_list_namespaces_and_pages_of_items(live, capsys, monkeypatch):
    d = live["dir"]
    code, listing = _json(capsys, "--data-dir", d, "list")
    spaces = {"/".join(n["namespace"]): n["items"] for n in listing["namespaces"]}
    assert code == 0 and spaces == {"research": 1, "strategies": 2, "lessons": 1, "memories/u1": 5, "memories/u2": 1}
    code, page1 = _json(capsys, "--data-dir", d, "list", "memories/u1", "--limit", "2")
    code2, page3 = _json(capsys, "--data-dir", d, "list", "memories/u1", "--limit", "2", "--offset", "4")
    assert code == code2 == 0 and page1["total"] == 5 and len(page1["items"]) == 2 and len(page3["items"]) == 1
    seen = {it["key"] for it in page1["items"]} | {it["key"] for it in page3["items"]}
    code, page2 = _json(capsys, "--data-dir", d, "list", "memories/u1", "--limit", "2", "--offset", "2")
    assert seen | {it["key"] for it in page2["items"]} == {f"m{i}" for i in range(5)}
    code, out = _run(capsys, "--data-dir", d, "list", "memories/u1", "--limit", "2")
    assert code == 0 and "Rows 1-2 of 5; next page: --offset 2" in out
    assert main(["--data-dir", d, "list", "nobody"]) == 1
    # A narrow terminal squeezes the text column, never the ids users copy.
    monkeypatch.setenv("COLUMNS", "60")
    code, out = _run(capsys, "--data-dir", d, "list", "strategies")
    assert code == 0 and live["s1"] in out and live["s2"] in out


def test_lineage(live, capsys):
    d = live["dir"]
    code, lin = _json(capsys, "--data-dir", d, "lineage", live["lesson"])
    assert code == 0 and [a["id"] for a in lin["ancestors"]] == [live["finding"], live["s1"]]
    assert lin["item"]["collection"] == "lessons_learned" and lin["parents"][0]["relation"] == "produced"
    code, lin = _json(capsys, "--data-dir", d, "lineage", live["finding"])
    rows = lin["descendants"]  # flat: each row names its parent
    (child,) = [r for r in rows if r["parent"] == live["finding"]]
    assert child["id"] == live["s1"] and {r["id"] for r in rows if r["parent"] == live["s1"]} == {
        live["lesson"],
        live["s2"],
    }
    code, out = _run(capsys, "--data-dir", d, "lineage", live["s2"])
    assert code == 0 and "Ancestors" in out and live["finding"] in out
    assert main(["--data-dir", d, "lineage", "unknown-id"]) == 1


def test_text_in_brackets_is_shown_not_taken_for_markup(data_dir, fake_embeddings, capsys):
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        mem.store.put(("notes",), "n1", {"text": "[resolved] stops were [bold]too tight[/bold]"})
    code, out = _run(capsys, "--data-dir", str(data_dir), "list", "notes")
    assert code == 0 and "[resolved] stops were [bold]too tight[/bold]" in out
    code, out = _run(capsys, "--data-dir", str(data_dir), "versions", "[draft]")
    assert code == 1 and "No strategy named '[draft]'." in out


def test_versions(live, capsys):
    d = live["dir"]
    code, rows = _json(capsys, "--data-dir", d, "versions", "mom")
    assert code == 0 and [(r["version"], r["id"], r["live"]) for r in rows] == [
        (1, live["s1"], True),
        (2, live["s2"], True),
    ]
    code, out = _run(capsys, "--data-dir", d, "versions", "mom")
    assert live["s2"] in out
    assert main(["--data-dir", d, "versions", "no-such-strategy"]) == 1


def test_delete_is_a_dry_run_until_yes(live, capsys, fake_embeddings):
    d = live["dir"]
    code, plan = _json(
        capsys,
        "--data-dir",
        d,
        "delete",
        "--namespace",
        "memories/u1",
        "--filter",
        '{"content": "note 2 about coffee"}',
    )
    assert code == 0 and plan["dry_run"] and plan["matched"] == 1 and plan["deleted"] == 0
    code, out = _run(capsys, "--data-dir", d, "delete", "--namespace", "memories/u1")
    assert code == 0 and "Dry run: nothing deleted" in out and "m4" in out
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        assert len(mem.store.search(("memories", "u1"), limit=10)) == 5
    code, done = _json(capsys, "--data-dir", d, "delete", "--namespace", "memories/u1", "--yes")
    assert code == 0 and done["deleted"] == 5 and not done["dry_run"]
    code, done = _json(capsys, "--data-dir", d, "delete", live["s1"], "--yes")
    assert code == 0 and done["deleted"] == 1
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        assert mem.store.search(("memories", "u1")) == []
        assert mem.store.get(("memories", "u2"), "m0") is not None
        assert [h.key for h in mem.store.search(("strategies",), query="Buy 20-day winners")] == [live["s2"]]
    assert main(["--data-dir", d, "delete", "--namespace", "memories/u1"]) == 1


def test_delete_says_what_a_hard_delete_removes_archived_copies_included(live, capsys, fake_embeddings):
    d = live["dir"]
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        mem.retire(live["lesson"], "noise")
        mem.archiver.run()  # a retired item is archived at once: the lesson is now in the archive only
        mem.retire("m1", "outdated", namespace=("memories", "u1"))
    code, plan = _json(capsys, "--data-dir", d, "delete", live["lesson"], live["s1"])
    assert code == 0 and plan["dry_run"] and plan["matched"] == 2 and plan["deleted"] == 0
    lesson, s1 = plan["items"]
    assert (lesson["live"], lesson["lineage_node"], lesson["archived_copies"]) == (False, True, 1)
    assert lesson["lifecycle"]["lifecycle"] == "retired" and lesson["lifecycle"]["reason"] == "noise"
    assert [e["parent_id"] for e in lesson["edges"]] == [live["s1"]]
    assert (s1["live"], s1["vectors"], s1["version"]) == (True, 1, {"name": "mom", "version": 1})
    assert {(e["child_id"], e["relation"]) for e in s1["edges"]} == {
        (live["s1"], "derived_from"),
        (live["s2"], "previous_version"),
        (live["lesson"], "produced"),
    }
    assert (plan["live"], plan["vectors"], plan["lineage_edges"], plan["statuses"], plan["archived_copies"]) == (
        1,
        1,
        3,
        1,
        1,
    )  # the lesson's link to s1 is counted once
    code, out = _run(capsys, "--data-dir", d, "delete", live["lesson"])
    assert code == 0 and "1 archived copy" in out and "its retired status" in out and "Dry run" in out
    # --namespace takes retired items too (searches hide them; a delete must not)
    code, plan = _json(capsys, "--data-dir", d, "delete", "--namespace", "memories/u1")
    assert plan["matched"] == 5 and "m1" in {it["id"] for it in plan["items"]}

    code, done = _json(capsys, "--data-dir", d, "delete", live["lesson"], live["s1"], "--yes")
    assert code == 0 and done["deleted"] == 2 and not done["dry_run"] and done["archived_copies"] == 1
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        assert mem.archiver.get_archived(keys=[live["lesson"]]) == []
        assert mem.lineage_store.items([live["lesson"], live["s1"]]) == {}
        assert [v.version for v in mem.versions("mom")] == [2]
        assert mem.lineage(live["s2"]).ancestors == []  # s2 lost its previous version
    assert main(["--data-dir", d, "delete", live["lesson"]]) == 1  # nothing left of it anywhere
    assert "Nothing matched" in capsys.readouterr().out


def test_retire_supersede_reinstate(live, capsys, fake_embeddings):
    d = live["dir"]
    code, st = _json(capsys, "--data-dir", d, "retire", live["finding"], "--reason", "the vendor restated prices")
    assert code == 0 and (st["lifecycle"], st["reason"], st["namespace"]) == (
        "retired",
        "the vendor restated prices",
        ["research"],
    )
    code, hits = _json(capsys, "--data-dir", d, "search", "Momentum decays after earnings", "--collection", "research")
    assert code == 1 and hits == []
    code, hits = _json(
        capsys,
        "--data-dir",
        d,
        "search",
        "Momentum decays after earnings",
        "--collection",
        "research",
        "--include-retired",
    )
    assert code == 0 and [h["key"] for h in hits] == [live["finding"]]
    assert hits[0]["lifecycle"] == "retired" and hits[0]["reason"] == "the vendor restated prices"
    code, out = _run(
        capsys,
        "--data-dir",
        d,
        "search",
        "Momentum decays after earnings",
        "--collection",
        "research",
        "--include-retired",
    )
    assert code == 0 and "retired" in out
    code, item = _json(capsys, "--data-dir", d, "get", live["finding"])
    assert code == 0 and item["lifecycle"] == "retired" and item["storage"] == "live"
    code, out = _run(capsys, "--data-dir", d, "get", live["finding"])
    assert "retired" in out and "the vendor restated prices" in out
    code, listing = _json(capsys, "--data-dir", d, "list", "research")
    assert listing["total"] == 1 and listing["items"][0]["lifecycle"] == "retired"  # listed, marked

    code, st = _json(capsys, "--data-dir", d, "supersede", live["s1"], live["s2"], "--reason", "longer lookback")
    assert code == 0 and (st["lifecycle"], st["superseded_by"]) == ("superseded", live["s2"])
    code, out = _run(capsys, "--data-dir", d, "list", "strategies")
    assert code == 0 and "superseded" in out and "Rows 1-2 of 2" in out
    code, st = _json(capsys, "--data-dir", d, "retire", "m0", "--namespace", "memories/u2", "--reason", "duplicate")
    assert code == 0 and st["namespace"] == ["memories", "u2"]

    code, out = _run(capsys, "--data-dir", d, "reinstate", live["finding"])
    assert code == 0 and "searches find it again" in out
    code, again = _json(capsys, "--data-dir", d, "reinstate", live["finding"])
    assert code == 1 and again == {"id": live["finding"], "reinstated": False}
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        assert mem.status(live["finding"]) is None and mem.status(live["s1"]).reason == "longer lookback"
        assert mem.store.search(("memories", "u2")) == []

    assert main(["--data-dir", d, "retire", "no-such-id", "--reason", "x"]) == 1
    assert main(["--data-dir", d, "retire", live["s2"], "--reason", "  "]) == 2
    assert main(["--data-dir", d, "supersede", live["s2"], live["s2"]]) == 2
    assert main(["--data-dir", d, "supersede", live["s2"], "no-such-id"]) == 1
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", d, "retire", live["s2"]])  # --reason is required
    assert exc.value.code == 2


def _checkpoint_threads(data_dir: Path, n: int) -> None:
    builder = StateGraph(int)
    builder.add_node("inc", lambda x: x + 1)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    with open_checkpointer(Settings.resolve(data_dir)) as saver:  # the memory's own: SQLite or PostgreSQL
        graph = builder.compile(checkpointer=saver)
        for i in range(n):
            graph.invoke(i, {"configurable": {"thread_id": f"t{i}"}})


def test_threads_list_and_prune(live, capsys):
    d = live["dir"]
    _checkpoint_threads(Path(d), 3)
    code, threads = _json(capsys, "--data-dir", d, "threads", "list")
    assert code == 0 and {t["thread_id"] for t in threads} == {"t0", "t1", "t2"}
    assert all(t["checkpoints"] >= 2 for t in threads)
    assert main(["--data-dir", d, "threads", "prune", "--older-than", "30"]) == 1  # nothing that old
    assert "No thread has been idle for 30 days" in capsys.readouterr().out
    time.sleep(0.05)
    code, plan = _json(capsys, "--data-dir", d, "threads", "prune", "--older-than", "0")
    assert code == 0 and plan["dry_run"] and sorted(plan["threads"]) == ["t0", "t1", "t2"]
    code, done = _json(capsys, "--data-dir", d, "threads", "prune", "--older-than", "0", "--yes")
    assert code == 0 and sorted(done["threads"]) == ["t0", "t1", "t2"]
    code, threads = _json(capsys, "--data-dir", d, "threads", "list")
    assert all(t["checkpoints"] == 1 for t in threads)  # keep_latest
    code, done = _json(
        capsys, "--data-dir", d, "threads", "prune", "--older-than", "0", "--strategy", "delete", "--yes"
    )
    assert code == 0 and main(["--data-dir", d, "threads", "list"]) == 1


def test_stats_against_a_known_fixture(live, capsys, fake_embeddings):
    d = live["dir"]
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        mem.supersede(live["s1"], live["s2"], "longer lookback")
        mem.retire(live["lesson"], "noise")
        mem.archiver.run()  # archives the retired lesson at once
        mem.retire("m1", "outdated", namespace=("memories", "u1"))
        mem.store.put(("memories", "u1"), "raw", {"content": "no vector"}, index=False)
        # A session promoted (its one turn to ("episodes",), with lineage to the session and its thread), another active.
        done = mem.sessions.add_turn("I size positions at 2% risk per trade", "Noted.", thread_id="t1", importance=1.0)
        mem.sessions.promote_to_longterm(done)
        mem.sessions.add_turn("what about stops?", "", thread_id="t2")
    _checkpoint_threads(Path(d), 2)
    code, stats = _json(capsys, "--data-dir", d, "stats")
    assert (stats["sessions"], stats["active_sessions"], stats["session_turns"], stats["promoted_turns"]) == (
        2,
        1,
        2,
        1,
    )
    c = stats["collections"]
    assert code == 0 and {name: v["items"] for name, v in c.items() if v["items"]} == {
        "research_findings": 1,
        "strategy_library": 2,
        "memories": 8,
    }
    assert (c["memories"]["with_vectors"], c["memories"]["retired"]) == (7, 1)
    assert (c["strategy_library"]["superseded"], c["lessons_learned"]["archived"]) == (1, 1)
    assert (stats["items"], stats["archived"], stats["retired"], stats["superseded"]) == (11, 1, 1, 1)
    assert (stats["threads"], stats["namespaces"], stats["lineage_edges"]) == (2, 5, 6)
    assert c["research_findings"]["storage_bytes"] > 0 and c["research_findings"]["oldest"].endswith("+00:00")
    assert c["market_regimes"] == {**c["market_regimes"], "items": 0, "oldest": None, "storage_bytes": 0}
    code, out = _run(capsys, "--data-dir", d, "stats")
    assert code == 0 and "strategy_library" in out and "2 threads" in out
    assert "6 lineage links, 2 sessions (1 active; 2 turns recorded, 1 promoted)" in out
    row = next(line for line in out.splitlines() if "memories" in line)
    assert [cell.strip() for cell in row.split("│")[1:4]] == ["memories", "8", "7"]


def test_threads_in_a_directory_never_checkpointed(live, capsys):
    code, out = _run(capsys, "--data-dir", live["dir"], "threads", "list")
    assert code == 1 and "No threads" in out


def test_export_then_import_and_a_damaged_bundle(live, tmp_path, capsys, fake_embeddings):
    bundle, target = tmp_path / "share", tmp_path / "teammate"
    code, manifest = _json(
        capsys, "--data-dir", live["dir"], "export", str(bundle), "--namespace", "research", "--namespace", "strategies"
    )
    assert code == 0 and manifest["counts"]["items"] == 3 and manifest["counts"]["lineage_edges"] == 2
    assert sorted(p.name for p in bundle.iterdir()) == ["README.md", "manifest.json", "memories.jsonl"]
    code, plan = _json(capsys, "--data-dir", str(target), "import", str(bundle), "--dry-run")
    assert code == 0 and plan["added"] == 3 and plan["dry_run"]
    code, report = _json(capsys, "--data-dir", str(target), "import", str(bundle))  # creates the directory
    assert code == 0 and report["added"] == 3 and report["vectors_reused"] and report["lineage_edges"] == 2
    code, out = _run(capsys, "--data-dir", str(target), "import", str(bundle))
    assert code == 0 and "0 added, 0 replaced, 3 kept" in out
    code, rows = _json(capsys, "--data-dir", str(target), "versions", "mom")
    assert [r["id"] for r in rows] == [live["s1"], live["s2"]]
    # One flipped byte: refused whole, nothing written.
    other = tmp_path / "other"
    data = bytearray((bundle / "memories.jsonl").read_bytes())
    data[len(data) // 2] ^= 0x01
    (bundle / "memories.jsonl").write_bytes(bytes(data))
    assert main(["--data-dir", str(other), "import", str(bundle)]) == 3
    assert "damaged" in capsys.readouterr().err
    assert not other.exists()  # refused before the data directory was created
    assert main(["--data-dir", str(other), "import", str(tmp_path / "no-such-bundle")]) == 2
    assert not other.exists()
    code, _ = _run(capsys, "--data-dir", live["dir"], "export", str(bundle))
    assert code == 2  # the folder exists: refused without --overwrite
    assert main(["--data-dir", live["dir"], "export", str(bundle), "--overwrite", "--namespace", "nobody"]) == 1


def test_long_commands_show_progress_on_stderr(live, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich renders live displays as on a terminal
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    code = main(["--data-dir", live["dir"], "export", str(tmp_path / "b"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["counts"]["items"] == 10  # stdout: the JSON alone
    assert main(["--data-dir", str(tmp_path / "t"), "import", str(tmp_path / "b")]) == 0
    err += capsys.readouterr().err
    assert "export research_findings" in err and "write" in err


class _SlowModel(Embeddings):
    """A model that must be loaded first, like the default sentence-transformers one."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.loaded = inner, False

    def load(self) -> None:
        time.sleep(0.3)
        self.loaded = True

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        assert self.loaded, "the CLI loads the model (behind its spinner) before embedding"
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_search_shows_a_spinner_while_the_model_loads(data_dir, capsys, monkeypatch, fake_embeddings):
    writer = _SlowModel(fake_embeddings)
    writer.loaded = True
    with Memory.open(data_dir, embeddings=writer) as mem:
        mem.store.put(("memories", "u1"), "m1", {"content": "coffee"})
    model = _SlowModel(fake_embeddings)  # the same model, not loaded yet, as in a fresh process
    monkeypatch.setattr(
        ChromaStore, "default_index", classmethod(lambda cls, m=None: {"dims": FAKE_DIMS, "embed": model})
    )
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    code = main(["--data-dir", str(data_dir), "search", "coffee"])
    out, err = capsys.readouterr()
    assert code == 0 and model.loaded and "Loading the embedding model" in err and "m1" in out


# ----------------------------------------------------------------- archive


def test_archive_run_dry_run_then_run_list_restore_verify(seeded, capsys, fake_embeddings):
    d = str(seeded)
    code, out = _run(capsys, "--data-dir", d, "archive", "run", "--dry-run")
    assert code == 0 and "dry run" in out and "12" in out
    code, report = _json(capsys, "--data-dir", d, "archive", "run")
    assert code == 0 and report["collections"]["lessons_learned"]["archived"] == 12
    code, (entry,) = _json(capsys, "--data-dir", d, "archive", "list")
    assert entry["items"] == 12 and entry["state"] == "complete" and len(entry["sha256"]) == 64
    code, out = _run(capsys, "--data-dir", d, "archive", "list")
    assert code == 0 and "Archives in" in out and entry["name"] in out
    code, done = _json(capsys, "--data-dir", d, "archive", "restore", "--key", "l3", "--key", "l4")
    assert code == 0 and done["restored"] == 2
    # Restored items leave the archive: asking again, or for a key never archived, matches nothing.
    for key in ("l3", "no-such-key"):
        code, out = _run(capsys, "--data-dir", d, "archive", "restore", "--key", key)
        assert code == 1 and "Nothing in the archive matched" in out
    code, checked = _json(capsys, "--data-dir", d, "archive", "verify")
    assert code == 0 and checked == {"files": 1, "damaged": {}}
    store = ChromaStore(data_dir=seeded, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    assert {it.key for it in store.items.iter_items("lessons")} == {"l3", "l4"}
    store.close()


def test_archive_search_covers_every_collection_unless_one_is_named(seeded, capsys, fake_embeddings):
    d = str(seeded)
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        from tests.helpers.archive_data import old_item

        mem.store.items.restore_items(
            [
                old_item(
                    fake_embeddings,
                    ("research",),
                    "f-old",
                    {"content": "lesson number 7 about risk", "confidence": 0.1},
                    days=120,
                )
            ]
        )
    assert main(["--data-dir", d, "archive", "run"]) == 0
    capsys.readouterr()
    code, hits = _json(capsys, "--data-dir", d, "archive", "search", "lesson number 7 about risk", "-k", "2")
    assert code == 0 and {h["key"] for h in hits} == {"l7", "f-old"}
    assert {h["collection"] for h in hits} == {"lessons_learned", "research_findings"}
    code, hits = _json(
        capsys, "--data-dir", d, "archive", "search", "lesson number 7 about risk", "--collection", "lessons", "-k", "2"
    )
    assert code == 0 and hits[0]["key"] == "l7" and len(hits) == 2
    code, out = _run(capsys, "--data-dir", d, "archive", "search", "x", "--collection", "regimes")
    assert code == 1 and "No archived matches" in out


def test_damaged_archive_makes_verify_fail(seeded, capsys):
    d = str(seeded)
    assert main(["--data-dir", d, "archive", "run"]) == 0
    (path,) = (seeded / "archive").glob("*.jsonl.gz")
    path.write_bytes(path.read_bytes()[:-20])
    capsys.readouterr()
    code, out = _run(capsys, "--data-dir", d, "archive", "verify")
    assert code == 3 and "DAMAGED" in out


def test_archive_list_without_archives_and_restore_without_selection(data_dir, capsys, fake_embeddings):
    Memory.open(data_dir, embeddings=fake_embeddings).close()
    code, out = _run(capsys, "--data-dir", str(data_dir), "archive", "list")
    assert code == 1 and "No archives yet" in out
    assert main(["--data-dir", str(data_dir), "archive", "restore"]) == 2
    assert "restore needs" in capsys.readouterr().err


def test_index_check_and_rebuild(data_dir, fake_embeddings, capsys):
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    store.put(("research",), "f1", {"content": "Carry unwinds"})
    store.put(("notes",), "n1", {"text": "a note"})
    store.close()
    code, report = _json(capsys, "--data-dir", str(data_dir), "index", "check")
    rows = {r["collection"]: r for r in report["collections"]}
    assert code == 0 and rows["research_findings"]["items"] == 1 and rows["research_findings"]["vectors"] == 1
    assert rows["memories"]["vectors"] == 1 and all(r["repaired"] == 0 for r in rows.values())
    code, report = _json(capsys, "--data-dir", str(data_dir), "index", "rebuild")
    assert code == 0 and report["vectors"] == {"research_findings": 1, "memories": 1}
    code, out = _run(capsys, "--data-dir", str(data_dir), "index", "check")
    assert code == 0 and "research_findings" in out
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    assert store.search(("research",), query="Carry unwinds", limit=1)[0].key == "f1"
    store.close()


@pytest.mark.slow
def test_scheduler_runs_until_interrupted(seeded):
    """The real console script, in its own process: it prints that it runs (JSON), then stops on Ctrl-C."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("langgraph-memory")),
            "--data-dir",
            str(seeded),
            "scheduler",
            "--interval",
            "3600",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = ""
        while "}" not in first:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            first += line
        assert json.loads(first)["running"] is True
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_index_reindex_moves_to_another_model(data_dir, fake_embeddings, capsys, monkeypatch):
    """`index reindex --model` re-embeds every stored text with that model; the old one is then refused."""
    from langgraph_memory.errors import ModelMismatchError
    from tests.test_store_model import Shifted

    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    for i in range(5):
        store.put(("research",), f"f{i}", {"content": f"finding number {i}"})
    store.close()
    models = {None: fake_embeddings, "shifted": Shifted()}
    monkeypatch.setattr(
        ChromaStore,
        "default_index",
        classmethod(lambda cls, model_name=None: {"dims": FAKE_DIMS, "embed": models[model_name]}),
    )
    code, report = _json(capsys, "--data-dir", str(data_dir), "index", "reindex", "--model", "shifted")
    assert code == 0 and report["vectors"] == 5 and "shifted" in report["model"]
    with ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": Shifted()}) as moved:
        hit = moved.search(("research",), query="finding number 3", limit=1)[0]
        assert hit.key == "f3" and hit.score == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ModelMismatchError):
        ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    code, out = _run(capsys, "--data-dir", str(data_dir), "index", "reindex", "--model", "shifted")
    assert code == 0 and "Re-embedded 5 vectors" in out
