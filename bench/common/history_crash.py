"""SIGKILL during writes, and the item history: a worker that writes until killed, and the check of what it left.

usage: python -m bench.common.history_crash DATA_DIR LOG SEED

The worker opens a plain ``ChromaStore`` (fake 16-d embeddings) and loops
over random changes to a small set of keys (so most puts replace a value):
put batches of 1-5 items, deletes of 1-3 keys, retires and reinstates. Before
each call it appends an ``intent`` line to LOG with the values it writes, and
an ``ack`` line once the call returned (plain ``os.write``: the kernel keeps
it when the process is killed).

`check()` reopens the directory and checks, from the catalog and the log:

* every acknowledged value of a key is one of its versions (current or past),
  and every acknowledged retire left a retired version;
* no change without its history row: each current version that replaced
  another (``valid_from`` later than the item's creation) starts where a past
  version of the same incarnation ends, and each past version ended by a put,
  retire, supersede or reinstate is followed by a version starting at its end;
* no history row without its change: a past version's value was written (it is
  in the log), versions of a key never overlap, and each past version has
  exactly the vectors it counts;
* every past version of a key is reached by walking the key's chain of
  versions from its newest (what ``history()`` and as-of reads do).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIMS = 16
NAMESPACES = [("hist", "a"), ("hist", "b")]
KEYS = [f"k{i}" for i in range(12)]


def open_store(data_dir: str | Path) -> Any:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.store import ChromaStore

    return ChromaStore(
        data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}, collections=None
    )


def main() -> None:
    from langgraph.store.base import PutOp

    from langgraph_memory.errors import NotFoundError

    data_dir, log_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(kind: str, **fields: object) -> None:
        os.write(fd, (json.dumps({"kind": kind, **fields}) + "\n").encode())

    store = open_store(data_dir)
    counter = rng.randrange(10**9)
    print("ready", flush=True)
    while True:
        roll = rng.random()
        if roll < 0.6:
            items = []
            for ns in rng.sample(NAMESPACES, 1):
                for key in rng.sample(KEYS, rng.randint(1, 5)):
                    counter += 1
                    items.append([list(ns), key, {"text": f"value {counter} of {seed}", "n": counter}])
            log("intent", op="put", items=items)
            store.batch([PutOp(tuple(ns), key, value) for ns, key, value in items])
            log("ack", op="put")
        elif roll < 0.75:
            ns = rng.choice(NAMESPACES)
            keys = rng.sample(KEYS, rng.randint(1, 3))
            log("intent", op="delete", items=[[list(ns), k] for k in keys])
            store.batch([PutOp(ns, k, None) for k in keys])
            log("ack", op="delete")
        else:
            ns, key = rng.choice(NAMESPACES), rng.choice(KEYS)
            op = "retire" if roll < 0.9 else "reinstate"
            log("intent", op=op, items=[[list(ns), key]])
            try:
                if op == "retire":
                    store.items.set_status([(ns, key)], "retired", reason="crash test")
                else:
                    store.items.clear_status([(ns, key)])
            except NotFoundError:
                log("skip", op=op)
                continue
            log("ack", op=op)


def _acks(log: Path) -> int:
    return log.read_bytes().count(b'"kind": "ack"') if log.exists() else 0


def kill_after(data_dir: Path, log: Path, seed: int, acks: int, delay: float) -> None:
    """Start the worker, let it acknowledge ``acks`` more changes, wait ``delay`` seconds, SIGKILL it.

    Waiting for acknowledgements, not for a time, keeps every kill meaningful on a loaded machine.
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    target = _acks(log) + acks
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.common.history_crash", str(data_dir), str(log), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]  # type: ignore[union-attr]
        deadline = time.monotonic() + 300
        while _acks(log) < target:
            assert proc.poll() is None, f"the worker died before the kill: {proc.stderr.read()[-3000:]}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the worker acknowledged nothing for 5 minutes"
            time.sleep(0.005)
        time.sleep(delay)
        assert proc.poll() is None, f"the worker died before the kill: {proc.stderr.read()[-3000:]}"  # type: ignore[union-attr]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@dataclass
class HistoryCheck:
    kills: int = 0
    acknowledged: int = 0
    versions: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        head = f"{self.acknowledged} acknowledged changes, {self.versions} past versions"
        return head + ("" if self.ok else f"; {len(self.problems)} problems: " + "; ".join(self.problems[:10]))


def _log(log_path: Path) -> tuple[dict[tuple[tuple[str, ...], str], list[dict[str, Any]]], set[Any], int, set[str]]:
    """``(acknowledged values by key, keys with an acknowledged retire, acknowledged changes, values ever written)``."""
    acked: dict[tuple[tuple[str, ...], str], list[dict[str, Any]]] = {}
    retired: set[Any] = set()
    written: set[str] = set()
    n = 0
    intent: dict[str, Any] | None = None
    for line in log_path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut by the kill
            continue
        if rec["kind"] == "intent":
            intent = rec
            if rec["op"] == "put":
                written.update(json.dumps(v, sort_keys=True) for _ns, _k, v in rec["items"])
        elif rec["kind"] == "ack" and intent is not None:
            n += 1
            for item in intent["items"]:
                k = (tuple(item[0]), item[1])
                if intent["op"] == "put":
                    acked.setdefault(k, []).append(item[2])
                elif intent["op"] == "retire":
                    retired.add(k)
            intent = None
        elif rec["kind"] == "skip":
            intent = None
    return acked, retired, n, written


def check(data_dir: Path, log_path: Path) -> HistoryCheck:
    """Reopen ``data_dir`` and check its history against ``log_path`` (see the module)."""
    from langgraph_memory.catalog import history as _history

    acked, retired, n, written = _log(log_path)
    out = HistoryCheck(acknowledged=n)
    store = open_store(data_dir)
    try:
        with store.catalog.read() as conn:
            rows = conn.execute(
                "SELECT h.id, h.uid, h.ns, h.key, h.value, h.created_at, h.status, h.valid_from, h.valid_to, h.change,"
                " h.n_vectors, CASE WHEN h.n_vectors = 1 THEN (CASE WHEN h.vec IS NULL THEN 0 ELSE 1 END)"
                " ELSE (SELECT count(*) FROM history_vectors v WHERE v.history_id = h.id) END"
                " FROM item_history h ORDER BY h.uid, h.valid_to, h.id"
            ).fetchall()
            orphans = conn.execute(
                "SELECT count(*) FROM history_vectors v WHERE NOT EXISTS"
                " (SELECT 1 FROM item_history h WHERE h.id = v.history_id)"
            ).fetchone()[0]
            live = conn.execute(
                "SELECT i.uid, n.ns, i.key, i.value, i.created_at, i.valid_from FROM items i"
                " JOIN namespaces n ON n.id = i.ns_id"
            ).fetchall()
            # An item's versions are read by walking their chain from the newest: it must reach every one kept.
            walked = {uid: sorted(v.id for v in _history.versions(conn, uid)) for uid in {r[1] for r in rows}}
        out.versions = len(rows)
        if orphans:
            out.problems.append(f"{orphans} history vectors without their version")
        by_uid: dict[str, list[Any]] = {}
        for r in rows:
            by_uid.setdefault(r[1], []).append(r)
            if int(r[10]) != int(r[11]):
                out.problems.append(f"version {r[0]} counts {r[10]} vectors and has {r[11]}")
            if json.dumps(json.loads(r[4]), sort_keys=True) not in written:
                out.problems.append(f"version {r[0]} holds a value never written: {r[4]}")
            if float(r[7]) >= float(r[8]):
                out.problems.append(f"version {r[0]} ends ({r[8]}) before it starts ({r[7]})")
        current = {r[0]: r for r in live}
        for uid, versions in by_uid.items():
            if walked[uid] != sorted(int(v[0]) for v in versions):
                out.problems.append(f"{versions[0][3]}: its chain reaches versions {walked[uid]}, not all of its own")
            for a, b in zip(versions, versions[1:], strict=False):
                if float(b[7]) < float(a[8]):
                    out.problems.append(f"{a[3]}: versions {a[0]} and {b[0]} overlap")
                if a[9] in ("put", "retire", "supersede", "restore") and float(b[7]) != float(a[8]):
                    out.problems.append(f"{a[3]}: version {a[0]} ended by {a[9]} at {a[8]} but the next starts {b[7]}")
            last = versions[-1]
            cur = current.get(uid)
            if last[9] in ("put", "retire", "supersede", "restore"):
                if cur is None or cur[5] is None or float(cur[5]) != float(last[8]):
                    out.problems.append(f"{last[3]}: version {last[0]} ended by {last[9]} and nothing took its place")
        for uid, _ns, key, _value, created, valid_from in live:
            if valid_from is None or float(valid_from) <= float(created):
                continue  # the first version of this incarnation: nothing was replaced
            ended = [v for v in by_uid.get(uid, []) if float(v[8]) == float(valid_from)]
            if not ended:
                out.problems.append(f"{key}: its current version replaced another at {valid_from}, which is not kept")
        # Every acknowledged value and retire is among the key's versions.
        values: dict[Any, list[str]] = {}
        statuses: dict[Any, set[Any]] = {}
        for r in rows:
            k = (tuple(r[2].split("\x1f")), r[3])
            values.setdefault(k, []).append(json.dumps(json.loads(r[4]), sort_keys=True))
            statuses.setdefault(k, set()).add(r[6])
        for _uid, ns, key, value, _c, _v in live:
            k = (tuple(ns.split("\x1f")), key)
            values.setdefault(k, []).append(json.dumps(json.loads(value), sort_keys=True))
        hidden = store.items.statuses(list(retired))
        for k, vals in acked.items():
            have = set(values.get(k, []))
            for v in vals:
                if json.dumps(v, sort_keys=True) not in have:
                    out.problems.append(f"{k[1]}: acknowledged value {v} is in no version")
        for k in retired:
            if "retired" not in statuses.get(k, set()) and k not in hidden:
                out.problems.append(f"{k[1]}: acknowledged retire left no retired version")
    finally:
        store.close()
    return out


if __name__ == "__main__":
    main()
