"""The history stays one line per key when changes come stamped by clocks that disagree.

Several machines write one memory, each stamping its changes with its own clock, and a clock may step back
(NTP). Random puts, deletes, retires, reinstates, archive moves and restores (an item restored "from ahead":
its ``updated_at`` written by a clock ahead of this one) are applied through the catalog with a ``now`` that
goes back and forth. A change takes effect at its stamp, or at the instant of the change before it to the same
key when that is later (a version never ends before it began), or at the restored item's ``updated_at`` when
that is later still (a version never begins before its value was written). Afterwards every version has
``valid_from`` < ``valid_to``, the versions of a key (past ones and the current one) do not overlap, the
current one does not begin before its ``updated_at``, and ``as_of(t)``, at each instant and between them,
gets and lists what the latest change taking effect at or before ``t`` left.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.bulk import BULK_MIN
from langgraph_memory.catalog.item_rows import StoredItem, get_items, item_uid
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

NS = ("skew",)
KEYS = ["k0", "k1"]
BASE = 1_700_000_000.0
#: (change, key, stamp in seconds after BASE): stamps drawn from a small range go back often.
STEP = st.tuples(
    st.sampled_from(["put", "put", "delete", "retire", "reinstate", "archive", "restore"]),
    st.integers(0, len(KEYS) - 1),
    st.integers(0, 8),
)

# A key's state after a change: (value, hidden) or None (gone).
State = tuple[dict[str, Any], bool] | None


def _apply(store: ChromaStore, kind: str, key: str, now: float, n: int, archived: dict[str, StoredItem]) -> bool:
    """Apply one change through the catalog, stamped ``now``; return whether it changed anything."""
    collection = store.collections.for_namespace(NS).name
    names = store.catalog.names
    with store.catalog.write() as conn:
        live = get_items(conn, [(NS, key)]).get((NS, key))
        if kind == "put":
            value = json.dumps({"text": f"note {n}", "n": n})
            _items.write_items(conn, [_items.ItemWrite(NS, key, collection, value)], names, now=now)
            return True
        if kind == "restore":
            it = archived.pop(key, None)
            if it is None or live is not None:
                return False
            return bool(_items.restore_items(conn, [it], collection, names, model_id=0, now=now))
        if live is None:
            return False
        held = _hidden(conn, live)
        if kind == "delete":
            _status.clear(conn, [live.uid], record=False, now=now)
            _items.write_items(conn, [_items.ItemWrite(NS, key, collection, None)], names, now=now)
        elif kind == "retire":
            target = _status.StatusTarget(NS, key, collection, live.created_at)
            _status.mark(conn, [target], "retired", reason="skew", now=now)
        elif kind == "reinstate":
            if not held:
                return False
            _status.clear(conn, [live.uid], now=now)
        elif kind == "archive":
            _items.delete_items(conn, [live], collection, change="archive", now=now)
            archived[key] = live
        return True


def _hidden(conn: Any, it: StoredItem) -> bool:
    """Whether ``it`` is retired (a status row left by an earlier item under its key does not apply)."""
    held = _status.get(conn, [it.uid]).get(it.uid)
    return held is not None and held.item_created_at == it.created_at


def _state(store: ChromaStore, key: str) -> State:
    with store.catalog.read() as conn:
        it = get_items(conn, [(NS, key)]).get((NS, key))
        return None if it is None else (it.value, _hidden(conn, it))


def _check_versions(store: ChromaStore) -> None:
    with store.catalog.read() as conn:
        for key in KEYS:
            uid = item_uid(NS, key)
            spans = [(v.valid_from, v.valid_to) for v in _history.versions(conn, uid)]
            assert all(start < end for start, end in spans), f"{key}: a version ends before it began: {spans}"
            live = get_items(conn, [(NS, key)]).get((NS, key))
            if live is not None:
                assert live.valid_since >= live.updated_at, (
                    f"{key}: current from {live.valid_since}, written at {live.updated_at}"
                )
                spans.append((live.valid_since, math.inf))
            spans.sort()
            for (_s0, end), (start, _e1) in zip(spans, spans[1:], strict=False):
                assert start >= end, f"{key}: versions overlap: {spans}"


def _check_as_of(store: ChromaStore, timeline: dict[str, list[tuple[float, State]]]) -> None:
    instants = sorted({at for changes in timeline.values() for at, _s in changes})
    moments = sorted({*instants, *(t + 0.5 for t in instants), instants[0] - 0.5})
    for at in moments:
        view = store.as_of(at)
        want: dict[str, State] = {}
        for key, changes in timeline.items():
            want[key] = next((s for t, s in reversed(changes) if t <= at), None)
        where = f"as of {at - BASE} with {timeline}"
        for key in KEYS:
            got = view.get(NS, key)
            w = want[key]
            assert (got.value if got else None) == (w[0] if w else None), f"get {key} {where}"
        listed = sorted(i.key for i in view.search(NS, limit=10))
        assert listed == sorted(k for k, w in want.items() if w is not None and not w[1]), f"listing {where}"


@dataclass
class _Key:
    """What the reference knows of a key: since when its current version is current (None: gone), when its last
    visible version ended, and each change with the instant it took effect and the state it left."""

    start: float | None = None
    last_end: float | None = None
    changes: list[tuple[float, State]] = field(default_factory=list)

    def effect(self, kind: str, now: float, written_at: float) -> float:
        """The instant a change stamped ``now`` takes effect (``written_at``: a restored item's ``updated_at``)."""
        if self.start is not None:  # it ends the current version, which cannot end before it began
            return max(now, self.start)
        floor = -math.inf if self.last_end is None else self.last_end
        return max(now, floor, written_at if kind == "restore" else now)

    def took_effect(self, at: float, state: State) -> None:
        if self.start is not None and at > self.start:
            self.last_end = at
        self.start = None if state is None else at
        self.changes.append((at, state))


def _run(store: ChromaStore, steps: list[tuple[str, int, int]], *, puts_behind_deletes: bool = False) -> None:
    archived: dict[str, StoredItem] = {}
    keys = {key: _Key() for key in KEYS}
    for n, (kind, key_i, stamp) in enumerate(steps):
        key, now = KEYS[key_i], BASE + stamp
        ref = keys[key]
        if kind == "put" and ref.start is None and ref.last_end is not None and not puts_behind_deletes:
            # A key put again by a clock behind the end of its last version is not kept in line (see below).
            now = max(now, ref.last_end)
        written_at = archived[key].updated_at if kind == "restore" and key in archived else now
        at = ref.effect(kind, now, written_at)
        if _apply(store, kind, key, now, n, archived):
            ref.took_effect(at, _state(store, key))
    _check_versions(store)
    if any(ref.changes for ref in keys.values()):
        _check_as_of(store, {key: ref.changes for key, ref in keys.items()})


def _store(tmp_path_factory: pytest.TempPathFactory) -> ChromaStore:
    return ChromaStore(
        data_dir=tmp_path_factory.mktemp("skew") / "memory",
        index={"dims": FAKE_DIMS, "embed": DeterministicFakeEmbedding(size=FAKE_DIMS), "fields": ["text"]},
        collections=None,
    )


# Each example makes its data directory at run time (tmp_path_factory), which collection cannot see.
@pytest.mark.catalog
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(STEP, min_size=3, max_size=14))
# Put by a clock ahead, archived, restored and retired by clocks behind it.
@example(steps=[("put", 0, 5), ("archive", 0, 6), ("restore", 0, 2), ("retire", 0, 3), ("reinstate", 0, 4)])
# Puts behind the version they replace.
@example(steps=[("put", 0, 1), ("put", 0, 6), ("put", 0, 3), ("retire", 0, 2), ("put", 1, 0), ("delete", 0, 4)])
def test_versions_stay_in_line_when_clocks_disagree(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]]
) -> None:
    store = _store(tmp_path_factory)
    try:
        _run(store, steps)
    finally:
        store.close()


# A put making a new item does not read the key's history: doing so would cost every put of a new key a lookup
# of its key's versions. Its version then overlaps the deleted item's last one.
@pytest.mark.catalog
@pytest.mark.xfail(strict=True, reason="a key put again by a clock behind its delete overlaps its last version")
def test_a_key_put_again_by_a_clock_behind_its_delete(tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _store(tmp_path_factory)
    try:
        _run(store, [("put", 0, 1), ("delete", 0, 7), ("put", 0, 2)], puts_behind_deletes=True)
    finally:
        store.close()


# On SQLite a batch of BULK_MIN writes or more replaces its items in a few statements of its own (catalog.bulk).
@pytest.mark.catalog
def test_a_large_batch_stamped_behind_the_versions_it_replaces(tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _store(tmp_path_factory)
    keys = [f"b{i}" for i in range(BULK_MIN)]
    collection = store.collections.for_namespace(NS).name
    try:
        for n, stamp in enumerate((1, 6, 3)):
            writes = [_items.ItemWrite(NS, k, collection, json.dumps({"text": f"{k} {n}"})) for k in keys]
            with store.catalog.write() as conn:
                _items.write_items(conn, writes, store.catalog.names, now=BASE + stamp)
        with store.catalog.read() as conn:
            for k in keys:
                spans = [(v.valid_from, v.valid_to) for v in _history.versions(conn, item_uid(NS, k))]
                live = get_items(conn, [(NS, k)])[(NS, k)]
                # The put at 3 replaced the version of 6 at 6, which was never seen.
                assert spans == [(BASE + 1, BASE + 6)] and live.valid_since == BASE + 6, (k, spans, live.valid_since)
    finally:
        store.close()
