"""Replay a crash worker's log against the reopened data directory and count what went wrong.

Used by the SIGKILL suite (``tests/test_crash.py``) and ``bench/faults/crash_bench.py``.
For every acknowledged write it checks the value (``get``), the vector (the
catalog's vector is the model's vector of the embedded text, and Chroma
finds that record first with it), the listing (``list_namespaces``) and a
filter search. An operation that was under way when the process died must
have happened entirely or not at all. Then the reverse: no catalog item, no
Chroma record, no lineage node and no version without its counterpart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import GetOp, get_text_at_path

from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog.connection import both
from langgraph_memory.index._probe import WIDE, unreachable
from langgraph_memory.index.chroma import all_collections, parse_record_id, record_id

DIMS = 16


@dataclass
class CheckResult:
    """Counts over one reopen: acknowledged items checked, and each kind of failure with examples."""

    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)  # acknowledged, then missing or wrong
    orphaned: list[str] = field(default_factory=list)  # present without an acknowledgement or counterpart
    torn: list[str] = field(default_factory=list)  # an interrupted batch applied in part
    probed: bool = False
    rebuilt: bool = False
    open_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.orphaned or self.torn)

    def summary(self) -> str:
        return (
            f"acknowledged {self.acknowledged}, lost {len(self.lost)} {self.lost[:3]}, orphaned "
            f"{len(self.orphaned)} {self.orphaned[:3]}, torn {len(self.torn)} {self.torn[:3]}"
        )


def replay(
    log_path: Path,
) -> tuple[dict[tuple[tuple[str, ...], str], dict[str, Any] | None], dict[str, Any] | None, list[dict[str, Any]]]:
    """The acknowledged state of plain items, the unacknowledged last intent, and acknowledged typed items.

    An intent cut short by a kill is settled by the check after that kill,
    which appends a ``resolved`` line saying whether it happened (and, for a
    typed call, which item it made): from then on it counts as acknowledged,
    or as never done.
    """
    state: dict[tuple[tuple[str, ...], str], dict[str, Any] | None] = {}
    pending: dict[str, Any] | None = None
    typed: list[dict[str, Any]] = []
    for line in log_path.read_text().splitlines() if log_path.exists() else []:
        try:
            rec = json.loads(line)
        except ValueError:  # a line cut by the kill
            continue
        if rec["kind"] == "intent":
            pending = rec
        elif rec["kind"] in ("ack", "resolved"):
            done = rec["kind"] == "ack" or rec.get("applied")
            if pending is not None and done and pending["op"] == "put":
                for ns, key, value in pending["items"]:
                    state[(tuple(ns), key)] = value
            elif pending is not None and done and pending["op"] == "delete":
                for ns, key in pending["items"]:
                    state[(tuple(ns), key)] = None
            if rec["kind"] == "ack" and rec["op"] == "typed":
                typed.append(rec)
            typed.extend(rec.get("typed", []))
            pending = None
    return state, pending, typed


def check(data_dir: Path, log_path: Path, *, probe: bool = False, filter_sample: int | None = None) -> CheckResult:
    """Reopen ``data_dir`` and compare it with what ``log_path`` says was acknowledged.

    With ``probe`` the open after a crash probes the index whatever its size
    (``REBUILD_MAX`` set to 0), as it does for an index of more than
    ``REBUILD_MAX`` vectors; without, a small index is rebuilt (the default).
    ``filter_sample`` checks the filter search of that many acknowledged items
    (evenly spread) instead of each one's: bulk runs hold tens of thousands.
    Values, listings, vectors and the index are still checked for every item.
    """
    import time

    from langgraph_memory.index import repair as _index

    result = CheckResult()
    emb = DeterministicFakeEmbedding(size=DIMS)
    started = time.perf_counter()
    saved = _index.REBUILD_MAX
    if probe:
        _index.REBUILD_MAX = 0
    try:
        mem = Memory.open(data_dir, embeddings=emb)
    finally:
        _index.REBUILD_MAX = saved
    result.open_seconds = time.perf_counter() - started
    store = mem.store
    result.probed = store.vector_index.probe_seconds is not None
    result.rebuilt = store.vector_index.last_rebuild is not None
    try:
        state, pending, typed = replay(log_path)
        applied = _check_plain(store, emb, state, pending, result, filter_sample)
        made = _check_typed(mem, typed, pending, result)
        _check_index(store, result)
        _check_counts(store, result)
    finally:
        mem.close()
    if pending is not None:
        with log_path.open("a") as fh:
            fh.write(json.dumps({"kind": "resolved", "applied": applied, "typed": made}) + "\n")
    return result


def _check_plain(
    store: Any, emb: Any, state: dict, pending: dict | None, result: CheckResult, filter_sample: int | None = None
) -> bool:
    """Check plain items; return whether the interrupted batch (if any) happened."""
    listed = set(store.list_namespaces(prefix=("crash",), limit=1000))
    in_flight: dict[tuple[tuple[str, ...], str], Any] = {}
    if pending is not None and pending["op"] in ("put", "delete"):
        for item in pending["items"]:
            in_flight[(tuple(item[0]), item[1])] = item[2] if pending["op"] == "put" else None
    applied = {True: 0, False: 0}  # whether each in-flight item shows the new state
    keys = list(state) + [k for k in in_flight if k not in state]
    # One batch: the same reads as a get per item, in a few statements.
    found = dict(zip(keys, store.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in keys]), strict=True))
    live = sum(1 for v in state.values() if v is not None)
    every = max(1, live // filter_sample) if filter_sample else 1
    for (ns, key), value in state.items():
        got = found[(ns, key)]
        if (ns, key) in in_flight:
            new = in_flight[(ns, key)]
            now = None if got is None else got.value
            if now == new:
                applied[True] += 1
                continue
            if now == value:
                applied[False] += 1
                continue
            result.lost.append(f"{ns}/{key}: neither the acknowledged nor the in-flight value")
            continue
        if value is None:
            if got is not None:
                result.orphaned.append(f"{ns}/{key}: deleted and acknowledged, still there")
            continue
        result.acknowledged += 1
        if got is None or got.value != value:
            result.lost.append(f"{ns}/{key}: {'missing' if got is None else 'wrong value'}")
            continue
        if ns not in listed:
            result.lost.append(f"{ns}: not listed")
        if result.acknowledged % every:
            continue
        hits = store.search(ns, filter={"n": value["n"]}, refresh_ttl=False)
        if [h.key for h in hits] != [key]:
            result.lost.append(f"{ns}/{key}: filter n={value['n']} found {[h.key for h in hits]}")
    for (ns, key), new in in_flight.items():
        if (ns, key) in state:
            continue
        got = found[(ns, key)]
        applied[got is not None and got.value == new] += 1
    if applied[True] and applied[False]:
        result.torn.append(f"an interrupted batch applied to {applied[True]} of {sum(applied.values())} items")
    # Vectors: the catalog holds the model's vector of each live item's text.
    with store.catalog.read() as conn:
        rows = conn.execute(
            "SELECT n.ns, i.key, i.value, v.vec FROM vectors v JOIN items i ON i.id = v.item_id "
            "JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = 'memories'"
        ).fetchall()
    for ns, key, value_json, vec in rows:
        text = get_text_at_path(json.loads(value_json), "$")[0]
        want = np.asarray(emb.embed_query(text), dtype=np.float32)
        if not np.allclose(np.frombuffer(vec, dtype=np.float32), want, atol=1e-6):
            result.lost.append(f"{_item_rows.split_ns(ns)}/{key}: the catalog's vector is not its text's")
    known = {k for k, v in state.items() if v is not None} | set(in_flight)
    with store.catalog.read() as conn:
        present = conn.execute(
            "SELECT n.ns, i.key FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = 'memories'"
        ).fetchall()
    for ns, key in present:
        if (_item_rows.split_ns(ns), key) not in known:
            result.orphaned.append(f"{ns}/{key}: in the catalog, never acknowledged")
    return applied[True] > 0


def _check_typed(
    mem: Any, typed: list[dict[str, Any]], pending: dict | None, result: CheckResult
) -> list[dict[str, Any]]:
    """Check typed items and their lineage; return the item an interrupted typed call made, if any."""
    store = mem.store
    acked = {t["id"]: t for t in typed}
    for t in typed:
        result.acknowledged += 1
        ns = mem.namespace(t["label"])
        item = store.get(ns, t["id"], refresh_ttl=False)
        if item is None:
            result.lost.append(f"typed {t['label']} {t['id']}: missing")
            continue
        ref = mem.lineage_store.item(t["id"])
        if ref is None:
            result.lost.append(f"typed {t['id']}: no lineage node")
        parents = {e.parent_id for e in mem.lineage_store.parents(t["id"])}
        if not set(t["parents"]) <= parents:
            result.lost.append(f"typed {t['id']}: parents {parents} lack {t['parents']}")
        if t["label"] == "strategies":
            versions = {v.id: v.version for v in mem.lineage_store.versions(t["name"])}
            if versions.get(t["id"]) != t["version"] or item.value.get("version") != t["version"]:
                result.lost.append(f"strategy {t['id']}: version {versions.get(t['id'])} / {item.value.get('version')}")
    extra_allowed = 1 if pending is not None and pending["op"] == "typed" else 0
    with store.catalog.read() as conn:
        nodes = {r[0] for r in conn.execute("SELECT id FROM lineage_nodes")}
        typed_items = {
            r[0]
            for r in conn.execute(
                "SELECT i.key FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE n.collection != 'memories'"
            )
        }
        version_ids = {r[0] for r in conn.execute("SELECT id FROM versions")}
    unacked = (typed_items - set(acked)) | (nodes - set(acked))
    if len(unacked) > extra_allowed:
        result.orphaned.append(f"{len(unacked)} typed items or nodes never acknowledged: {sorted(unacked)[:3]}")
    made: list[dict[str, Any]] = []
    for item_id in sorted(unacked & typed_items & nodes)[:extra_allowed]:
        ref = mem.lineage_store.item(item_id)
        label = next(lab for lab in ("research", "strategies", "lessons") if mem.namespace(lab) == ref.namespace)
        value = store.get(ref.namespace, item_id, refresh_ttl=False).value
        made.append(
            {
                "kind": "ack",
                "op": "typed",
                "label": label,
                "id": item_id,
                "parents": [],
                "version": value.get("version"),
                "name": value.get("name"),
            }
        )
    for node in nodes - typed_items:
        result.orphaned.append(f"lineage node {node} without its item")
    for item_id in typed_items - nodes:
        result.orphaned.append(f"typed item {item_id} without its lineage node")
    for vid in version_ids - typed_items:
        result.orphaned.append(f"version row {vid} without its item")
    return made


def _check_counts(store: Any, result: CheckResult) -> None:
    """The item and vector counts the planner reads agree with the items themselves."""
    with store.catalog.read() as conn:
        wrong = conn.execute(
            "SELECT n.ns, n.n_items, n.n_vectors, count(i.id), coalesce(sum(i.n_vectors), 0) "
            "FROM namespaces n LEFT JOIN items i ON i.ns_id = n.id GROUP BY n.id "
            "HAVING n.n_items != count(i.id) OR n.n_vectors != coalesce(sum(i.n_vectors), 0)"
        ).fetchall()
        wrong += conn.execute(
            "SELECT c.collection, c.n_items, c.n_vectors, t.items, t.vectors FROM collection_counts c "
            "JOIN (SELECT collection, sum(n_items) AS items, sum(n_vectors) AS vectors FROM namespaces "
            "GROUP BY collection) t ON t.collection = c.collection "
            "WHERE c.n_items != t.items OR c.n_vectors != t.vectors"
        ).fetchall()
        recorded = {
            (c, p): (int(i), int(v))
            for c, p, i, v in conn.execute("SELECT collection, prefix, n_items, n_vectors FROM prefix_counts")
        }
        summed = _items.prefix_count_rows(conn.execute("SELECT ns, collection, n_items, n_vectors FROM namespaces"))
        # A vector in a run of row ids belongs to the run's namespace (a search of one namespace reads its run).
        strays = conn.execute(
            f"SELECT v.id, i.ns_id FROM vectors v JOIN items i ON i.id = v.item_id WHERE v.id >= {1 << _item_rows.VECTOR_RUN_BITS}"
            f" AND v.id >> {_item_rows.VECTOR_RUN_BITS} != i.ns_id"
        ).fetchall()
    for vid, nid in strays:
        result.orphaned.append(
            f"vector row {vid} in the run of namespace {vid >> _item_rows.VECTOR_RUN_BITS}, not {nid}"
        )
    for row in wrong:
        result.orphaned.append(f"counts of {row[0]!r}: recorded {row[1]}/{row[2]}, actual {row[3]}/{row[4]}")
    for collection, prefix, n_items, n_vectors in summed:
        got = recorded.pop((collection, prefix), (0, 0))
        if got != (n_items, n_vectors):
            result.orphaned.append(f"counts under {prefix!r}: recorded {got[0]}/{got[1]}, actual {n_items}/{n_vectors}")
    for (_, prefix), got in recorded.items():
        if got != (0, 0):
            result.orphaned.append(f"counts under {prefix!r} with no namespace: {got[0]}/{got[1]}")


def index_problems(store: Any) -> list[str]:
    """What is wrong with the Chroma index of ``store``: counts, records missing or extra, records not found."""
    result = CheckResult()
    _check_counts(store, result)
    _check_index(store, result)
    return result.lost + result.orphaned


def _check_index(store: Any, result: CheckResult) -> None:
    """Chroma holds exactly the catalog's vector records, and each finds itself."""
    # Chroma follows the commits in a thread of the store: compare once it holds every committed write.
    if not store.wait_for_index(timeout=300):
        result.lost.append("the index did not catch up within 300 s")
        return
    for name in all_collections():
        with store.catalog.read() as conn:
            rows = conn.execute(
                both(
                    conn,
                    "SELECT v.item_id, v.idx, v.vec FROM vectors v JOIN items i ON i.id = v.item_id "
                    "JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = ?",
                ),
                (name,),
            ).fetchall()
        col = store.vector_index.chroma_collection(name)
        have = set(col.get(include=[])["ids"]) if col is not None else set()
        want = {record_id(r[0], r[1]) for r in rows}
        for rid in want - have:
            result.lost.append(f"{name}: catalog vector {rid} not in Chroma")
        for rid in have - want:
            result.orphaned.append(f"{name}: Chroma record {rid} ({parse_record_id(rid)}) without its item")
        if not rows or col is None:
            continue
        records = [[record_id(r[0], r[1]), np.frombuffer(r[2], dtype=np.float32).tolist()] for r in rows]
        # First place, or (HNSW being approximate) within a wide search: see _probe.unreachable.
        for rid in unreachable(col, records, len(have)):
            result.lost.append(f"{name}: vector of {rid} does not find it, even among {WIDE} results")
