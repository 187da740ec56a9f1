"""``store.as_of(t)`` answers as a reference rebuilt from the changes up to ``t`` would.

Random interleavings of put, delete, retire, supersede, reinstate, TTL
expiry (a put with a TTL of milliseconds, then a sweep once it has run out)
and archive (the archive job's catalog step, `StoreItems.delete_unchanged`)
are applied to a store, noting each step's state as it stands after the step.
Then, at every moment between steps and at every instant the catalog's
history records (the instants of the changes themselves), ``as_of(t)`` must
answer like an ``InMemoryStore`` holding that state: every ``get``,
``list_namespaces``, filtered listings (as sets: listing order is not part of
the contract), and searches with a query must return the reference's exact
top 10, scores to 1e-5, under both of the planner's plans (``exact``, and
``hnsw`` forced with ``planner.exact_max = 0``). Retired and superseded items
are hidden from searches and readable by ``get``, as in the store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.memory import InMemoryStore

from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore
from langgraph_memory.store import as_of as _as_of
from tests.conftest import FAKE_DIMS

EMBED = DeterministicFakeEmbedding(size=FAKE_DIMS)
NAMESPACES = [("a",), ("a", "b"), ("c",)]
KEYS = ["k0", "k1"]
WORDS = ["momentum", "carry", "volatility", "breakout"]
TOL = 1e-5
# A TTL short enough to run out within the example (minutes).
TTL_MINUTES = 0.0003

STEP = st.tuples(
    st.sampled_from(["put", "put", "put", "delete", "retire", "supersede", "reinstate", "ttl", "archive"]),
    st.integers(0, len(NAMESPACES) - 1),
    st.integers(0, len(KEYS) - 1),
    st.integers(0, len(KEYS) - 1),
    st.sampled_from(WORDS),
)

State = dict[tuple[tuple[str, ...], str], tuple[dict[str, Any], bool]]


@pytest.fixture(autouse=True)
def _cosines_on_their_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past versions scored on the scoring thread however few (only a large scope is, outside this file), so the
    answers checked here are those of the thread's path; the other as-of tests' small stores check the inline one."""
    monkeypatch.setattr(_as_of, "_SOON_MIN", 0)


def _after(t: float) -> None:
    """Wait until the clock has moved past ``t``, so the next change gets a later instant."""
    while time.time() <= t:
        time.sleep(0.0005)


def _apply(store: ChromaStore, state: State, step: tuple[str, int, int, int, str], n: int) -> Iterator[State]:
    """Apply one step to the store and the reference state; yield each state it goes through, as it is reached."""
    kind, ns_i, key_i, other_i, word = step
    ns, key = NAMESPACES[ns_i], KEYS[key_i]
    k = (ns, key)
    value = {"text": f"{word} note {n}", "n": n % 3}
    live = k in state
    if kind == "put":
        store.put(ns, key, value)
        state[k] = (value, state[k][1] if live else False)  # an update keeps the item's status
        yield dict(state)
        return
    if not live:
        return
    if kind == "delete":
        store.delete(ns, key)
        del state[k]
    elif kind == "retire":
        store.items.set_status([k], "retired", reason="test")
        state[k] = (state[k][0], True)
    elif kind == "supersede":
        by = (ns, KEYS[other_i])
        if by == k or by not in state:
            return
        store.items.set_status([k], "superseded", superseded_by=by)
        state[k] = (state[k][0], True)
    elif kind == "reinstate":
        if not state[k][1]:
            return
        store.items.clear_status([k])
        state[k] = (state[k][0], False)
    elif kind == "archive":
        it = store.items.get(ns, key)
        assert it is not None
        name = store.collections.for_namespace(ns).name
        deleted, _changed = store.items.delete_unchanged(name, {it.uid: (it.updated_at, it.last_accessed_at)})
        assert deleted == [it.uid]
        del state[k]
    elif kind == "ttl":
        store.put(ns, key, value, ttl=TTL_MINUTES)
        state[k] = (value, state[k][1])
        yield dict(state)
        it = store.items.get(ns, key)
        assert it is not None and it.expires_at is not None
        _after(it.expires_at)
        _after(time.time())  # sweep_ttl deletes what expired strictly before its clock
        assert store.sweep_ttl() == 1
        del state[k]
    yield dict(state)


def _reference(state: State, *, searchable: bool) -> InMemoryStore:
    ref = InMemoryStore(index={"dims": FAKE_DIMS, "embed": EMBED, "fields": ["text"]})
    for (ns, key), (value, hidden) in state.items():
        if not (searchable and hidden):
            ref.put(ns, key, value)
    return ref


def _check_at(store: ChromaStore, at: float, state: State, queries: list[tuple[int, str, int | None]]) -> None:
    view = store.as_of(at)
    where = f"as of {at} with {sorted((k, v[0]['text'], v[1]) for k, v in state.items())}"
    for ns in NAMESPACES:
        for key in KEYS:
            got = view.get(ns, key)
            want = state.get((ns, key))
            assert (got.value if got else None) == (want[0] if want else None), f"get {ns}/{key} {where}"
    assert view.list_namespaces() == sorted({ns for ns, _k in state}), where
    ref = _reference(state, searchable=True)
    for prefix_i, word, n in queries:
        prefix = NAMESPACES[prefix_i][:1]
        flt = None if n is None else {"n": n}
        listed = view.search(prefix, filter=flt, limit=100)
        want_listed = ref.search(prefix, filter=flt, limit=100)
        assert {(tuple(i.namespace), i.key) for i in listed} == {(tuple(i.namespace), i.key) for i in want_listed}, (
            f"listing {prefix} {flt} {where}"
        )
        want = ref.search(prefix, query=word, filter=flt, limit=10)
        default = store.planner.exact_max
        for plan, exact_max in (("exact", default), ("hnsw", 0)):
            store.planner.exact_max = exact_max
            try:
                got_hits = view.search(prefix, query=word, filter=flt, limit=10)
            finally:
                store.planner.exact_max = default
            msg = (
                f"{plan} search {prefix} {word!r} {flt} {where}:\n got  "
                f"{[(i.key, i.score) for i in got_hits]}\n want {[(i.key, i.score) for i in want]}"
            )
            assert len(got_hits) == len(want), msg
            scores = {(tuple(i.namespace), i.key): i.score for i in want}
            for g, w in zip(got_hits, want, strict=True):
                k = (tuple(g.namespace), g.key)
                assert k in scores and g.score is not None and w.score is not None, msg
                assert abs(g.score - (scores[k] or 0.0)) <= TOL, msg  # its own score ...
                assert abs(g.score - w.score) <= TOL, msg  # ... at its rank


#: One or two searches to check at each moment: (namespace whose first label is the prefix, word, value of "n" to filter on, or none).
QUERIES = st.lists(
    st.tuples(st.integers(0, len(NAMESPACES) - 1), st.sampled_from(WORDS), st.one_of(st.none(), st.integers(0, 2))),
    min_size=1,
    max_size=2,
)


# Each example makes its data directory at run time (tmp_path_factory), which collection cannot see.
@pytest.mark.catalog
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(STEP, min_size=4, max_size=16),
    queries=QUERIES,
)
# A retired version, then superseded one, each ended later: searches as of their time must still hide them.
@example(
    steps=[
        ("put", 0, 0, 0, "carry"),
        ("put", 0, 1, 0, "carry"),
        ("retire", 0, 0, 0, "carry"),
        ("put", 0, 0, 0, "momentum"),
        ("reinstate", 0, 0, 0, "carry"),
        ("supersede", 0, 1, 0, "carry"),
        ("delete", 0, 1, 0, "carry"),
    ],
    queries=[(0, "carry", None)],
)
def test_as_of_answers_like_a_reference_replayed_to_that_moment(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int, int, str]], queries: list[Any]
) -> None:
    store = ChromaStore(
        data_dir=tmp_path_factory.mktemp("asof") / "memory",
        index={"dims": FAKE_DIMS, "embed": EMBED, "fields": ["text"]},
        collections=None,
    )
    try:
        start = time.time()
        _after(start)
        state: State = {}
        # (moment just after the step, the state from its change on)
        timeline: list[tuple[float, State]] = [(start, {})]
        for n, step in enumerate(steps):
            for after in _apply(store, state, step, n):
                t = time.time()
                timeline.append((t, after))
                _after(t)
        with store.catalog.read() as conn:
            instants = {float(r[0]) for r in conn.execute("SELECT valid_to FROM item_history")}
            instants |= {float(r[0]) for r in conn.execute("SELECT valid_from FROM items WHERE valid_from IS NOT NULL")}
        moments = sorted({t for t, _s in timeline} | instants)
        for at in moments:
            # The state of the last step whose moment-after is at or past ``at``'s change: the first one at or after it.
            state_at = next(s for t, s in timeline if t >= at)
            _check_at(store, at, state_at, queries)
    finally:
        store.close()


# Each example makes its data directory at run time (tmp_path_factory), which collection cannot see.
@pytest.mark.catalog
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(STEP, min_size=4, max_size=12),
    queries=QUERIES,
)
# An item reworded away from the query's word, then a new item holding it: then, the reworded item held the word
# and the word was rarer; both must be as they were.
@example(
    steps=[
        ("put", 0, 0, 0, "carry"),
        ("put", 0, 1, 0, "momentum"),
        ("put", 0, 0, 0, "momentum"),
        ("put", 2, 0, 0, "carry"),
        ("delete", 0, 1, 0, "carry"),
    ],
    queries=[(0, "carry", None)],
)
def test_as_of_ranks_under_hybrid_ranking_exactly_as_the_store_ranked_then(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int, int, str]], queries: list[Any]
) -> None:
    # The live searches are ranked with the clock at the moment they are checked at, where as_of measures ages.
    clock = [time.time()]
    store = ChromaStore(
        data_dir=tmp_path_factory.mktemp("asof-hybrid") / "memory",
        index={"dims": FAKE_DIMS, "embed": EMBED, "fields": ["text"]},
        collections=None,
        ranking=HybridRanking(clock=lambda: clock[0]),
    )

    # Without refreshing TTLs: a read would put off the expiry that the steps wait for.
    def searches(view: Any) -> list[list[tuple[tuple[str, ...], str, float | None]]]:
        return [
            [
                (tuple(i.namespace), i.key, i.score)
                for i in view.search(
                    NAMESPACES[p][:1], query=w, filter=None if n is None else {"n": n}, limit=10, refresh_ttl=False
                )
            ]
            for p, w, n in queries
        ]

    try:
        state: State = {}
        seen: list[tuple[float, list[Any]]] = []
        for n, step in enumerate(steps):
            for _state in _apply(store, state, step, n):
                clock[0] = t = time.time()
                seen.append((t, searches(store)))
                _after(t)
        for t, want in seen:
            got = searches(store.as_of(t))
            for g, w in zip(got, want, strict=True):
                assert [(ns, k) for ns, k, _s in g] == [(ns, k) for ns, k, _s in w], f"as of {t}: {g} != {w}"
                assert [sc for _n, _k, sc in g] == pytest.approx([sc for _n, _k, sc in w], abs=TOL), f"as of {t}"
    finally:
        store.close()
