"""Random op sequences give the same results on ChromaStore as on LangGraph's InMemoryStore.

Both stores embed with the same fake model and index several fields (``title``,
``body``, ``tags[*]``); values sometimes miss one of them, puts sometimes override
the fields (``index=[...]``) or turn indexing off (``index=False``). Searches run
with and without a query, filter, limit and offset; query searches run through
both of ChromaStore's plans, ``exact`` (scored from the catalog, the default at
these sizes) and ``hnsw`` (Chroma's index, forced with ``planner.exact_max = 0``).
A query search must give every item InMemoryStore's score (cosine similarity,
max-pooled over the item's vectors, to 1e-5) at InMemoryStore's rank, up to the
order among equal scores; items without vectors follow the scored ones, unscored.

Differences that are deliberate (and documented in the README) are kept out of
the generated data or compared accordingly:

* search without a query returns items in an unspecified order (InMemoryStore
  groups by namespace, SqliteStore sorts by update time, Chroma uses storage
  order), so results are compared as sets, and pages by size, filter and overlap;
  the same goes for the unscored items that fill up a query search's page;
* InMemoryStore lists namespaces whose items were all deleted (and ones merely
  read), a quirk of its ``defaultdict``; we list namespaces that hold items;
* InMemoryStore raises on ``$gt`` over a missing or non-numeric field and says
  ``True == 1``; range filters here target a field every value has as an int,
  and booleans live in their own field;
* typed collections embed their schema's text field (``content`` for
  ``research``) unless a put names fields, so there the reference indexes
  ``content``.

And quirks of InMemoryStore that the reference works around:

* it keeps an item's old vectors when the item is put again without those
  fields or with ``index=False`` (vectors are overwritten path by path and only
  dropped on delete), so a stale text still finds the item; the reference
  deletes an item before putting it again, so its vectors describe its value;
* a query search's page past the scored items restarts the unscored items at
  the first one whatever the offset (``scoreless[:limit - len(kept)]``), so
  paging never ends; the reference page is cut from one search of everything
  (scored items, then unscored), which InMemoryStore itself returns whenever
  the page starts at 0 or stays among scored items (checked);
* it cannot take two equal texts in one batch (see PITFALLS), so the texts of
  one value are always distinct.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import ListNamespacesOp, MatchCondition, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore, _does_match

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

_counter = itertools.count()

EMBED = DeterministicFakeEmbedding(size=FAKE_DIMS)
FIELDS = ["title", "body", "tags[*]"]
#: Items, and tags (vectors) per item, in each collection's crowd (see ``shared_store``).
CROWD, CROWD_TAGS = 100, 8
#: Scores closer than this are equal: the stores compute in float32 and float64.
TOL = 1e-5

# A small pool, so that items share texts (equal vectors, equal scores: ties).
TEXTS = [
    "momentum",
    "mean reversion",
    "volatility clustering",
    "carry trade",
    "earnings drift",
    "liquidity",
    "value premium",
]
QUERIES = st.sampled_from([*TEXTS[:4], "macro regime"])

KEYS = st.sampled_from(["k1", "k2", "k3", "k4"])
SUBS = st.sampled_from([(), ("u1",), ("u2",), ("u1", "x"), ("u2", "y")])
PLAIN = st.fixed_dictionaries(
    {"a": st.integers(-3, 3)},
    optional={
        "s": st.sampled_from(["red", "green", "blue"]),
        "f": st.booleans(),
        "n": st.fixed_dictionaries({"x": st.integers(0, 5)}, optional={"t": st.sampled_from(["p", "q"])}),
        "l": st.lists(st.integers(0, 2), max_size=2),
    },
)


@st.composite
def _values(draw: st.DrawFn) -> dict[str, Any]:
    """A plain value plus ``content`` and, maybe, ``title``, ``body`` and ``tags``: all its texts distinct."""
    value = dict(draw(PLAIN))
    texts = draw(st.permutations(TEXTS))
    value["content"] = texts[0]
    if draw(st.booleans()):
        value["title"] = texts[1]
    if draw(st.booleans()):
        value["body"] = texts[2]
    n_tags = draw(st.one_of(st.none(), st.integers(0, 3)))
    if n_tags is not None:
        value["tags"] = list(texts[3 : 3 + n_tags])
    return value


VALUES = _values()
# Mostly the store's fields; sometimes others, or none.
PUT_INDEX = st.sampled_from(
    [None, None, None, None, False, ["title"], ["body", "tags[*]"], ["tags[*]"], ["content", "title"]]
)
FILTERS = st.one_of(
    st.none(),
    st.builds(lambda v: {"a": v}, st.integers(-3, 3)),
    st.builds(
        lambda op, v: {"a": {op: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]), st.integers(-3, 3)
    ),
    st.builds(lambda v: {"s": v}, st.sampled_from(["red", "green", "blue"])),
    st.builds(lambda v: {"s": {"$ne": v}}, st.sampled_from(["red", "green"])),
    st.builds(lambda v: {"f": v}, st.booleans()),
    st.builds(lambda v: {"n": {"x": {"$gte": v}}}, st.integers(0, 5)),
    st.builds(lambda v: {"n": {"t": v}}, st.sampled_from(["p", "q"])),
    st.builds(lambda v: {"l": v}, st.lists(st.integers(0, 2), max_size=2)),
    st.builds(lambda a, s: {"a": {"$gte": a}, "s": s}, st.integers(-3, 3), st.sampled_from(["red", "blue"])),
    st.builds(lambda t: {"title": t}, st.sampled_from(TEXTS[:3])),
    st.builds(lambda t: {"tags": [t]}, st.sampled_from(TEXTS[3:6])),
)

PUTS = st.tuples(st.just("put"), SUBS, KEYS, VALUES, PUT_INDEX)
BY_KIND = {
    "put": PUTS,
    "delete": st.tuples(st.just("delete"), SUBS, KEYS),
    "get": st.tuples(st.just("get"), SUBS, KEYS),
    "search": st.tuples(st.just("search"), SUBS, FILTERS, st.integers(1, 12), st.integers(0, 4)),
    # Mostly over the whole root and unfiltered, so that pages cut through results.
    "query": st.tuples(
        st.just("query"),
        st.one_of(st.just(()), SUBS),
        QUERIES,
        st.one_of(st.none(), FILTERS),
        st.integers(1, 5),
        st.integers(0, 5),
    ),
    "list": st.tuples(
        st.just("list"),
        st.sampled_from([None, ("u1",), ("*",), ("u2", "*")]),
        st.sampled_from([None, ("x",), ("*",)]),
        st.sampled_from([None, 1, 2, 3]),
        st.integers(1, 10),
        st.integers(0, 3),
    ),
}
# Puts and query searches weigh more: searches over a handful of items, not over nothing.
OPS = st.sampled_from(["put", "put", "put", "query", "query", "search", "get", "delete", "list"]).flatmap(
    BY_KIND.__getitem__
)


def _reference_namespaces(mem: InMemoryStore, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    namespaces = [ns for ns, items in mem._data.items() if items]
    namespaces = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions)]
    if op.max_depth is not None:
        namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
    else:
        namespaces = sorted(namespaces)
    return namespaces[op.offset : op.offset + op.limit]


def _key(item: SearchItem) -> tuple[tuple[str, ...], str]:
    return tuple(item.namespace), item.key


def _show(items: list[SearchItem]) -> list[tuple[str, str, float | None]]:
    """Items as (namespace without its first label, key, score) for messages."""
    return [("/".join(i.namespace[1:]), i.key, None if i.score is None else round(i.score, 6)) for i in items]


def _assert_ranked(got: list[SearchItem], full: list[SearchItem], offset: int, limit: int, what: str) -> None:
    """``got`` is ``full[offset : offset + limit]`` up to the order among equal scores and among unscored items."""
    want = full[offset : offset + limit]
    score = {_key(i): i.score for i in full}
    value = {_key(i): i.value for i in full}
    msg = f"{what}:\n got  {_show(got)}\n want {_show(want)}\n of   {_show(full)}"
    assert len(got) == len(want), msg
    assert len({_key(i) for i in got}) == len(got), msg
    for g, w in zip(got, want, strict=False):
        k = _key(g)
        assert k in score, msg
        assert g.value == value[k], msg
        if w.score is None:
            assert g.score is None and score[k] is None, msg
        else:
            ref = score[k]
            assert g.score is not None and ref is not None, msg
            assert abs(g.score - ref) <= TOL, msg  # its own score ...
            assert abs(ref - w.score) <= TOL, msg  # ... at its rank


class _PlanLog:
    """Records the plan every search of one store ran (``Planner.run`` wrapped on the instance)."""

    def __init__(self, store: ChromaStore) -> None:
        self.plans: list[Any] = []
        run = store.planner.run

        def recording(op: Any, qvec: Any, **omit: Any) -> Any:
            hits, plan = run(op, qvec, **omit)
            self.plans.append(plan)
            return hits, plan

        store.planner.run = recording  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaStore]:
    s = ChromaStore(
        data_dir=tmp_path_factory.mktemp("prop") / "memory",
        index={"dims": FAKE_DIMS, "embed": EMBED, "fields": FIELDS},
    )
    # A crowd outside every example's root, with many vectors per item: the
    # HNSW plan then looks for a handful of items in a bigger index, whose
    # vector records outnumber its items, as with long values or many tags.
    for label in ((), ("research",)):
        s.batch(
            [
                PutOp(
                    label + ("crowd",),
                    f"c{i}",
                    {"content": f"crowd {i}", "tags": [f"crowd {i} {j}" for j in range(CROWD_TAGS)]},
                    index=["tags[*]"],
                )
                for i in range(CROWD)
            ]
        )
    yield s
    s.close()


@pytest.fixture(scope="module")
def plan_log(shared_store: ChromaStore) -> _PlanLog:
    return _PlanLog(shared_store)


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaStore]:
    """``collections=None``: a plain LangGraph store, where ``("research", ...)`` is just a namespace."""
    s = ChromaStore(
        data_dir=tmp_path_factory.mktemp("plain") / "memory",
        index={"dims": FAKE_DIMS, "embed": EMBED, "fields": FIELDS},
        collections=None,
    )
    yield s
    s.close()


@pytest.fixture(scope="module")
def plain_plan_log(plain_store: ChromaStore) -> _PlanLog:
    return _PlanLog(plain_store)


def _query_both_plans(
    ours: ChromaStore, log: _PlanLog, prefix: tuple[str, ...], query: str, flt: dict | None, limit: int, offset: int
) -> dict[str, list[SearchItem]]:
    """The search under the exact plan and under the HNSW plan; checks that each plan is the one that ran."""
    out = {}
    default = ours.planner.exact_max
    for name, exact_max in (("exact", default), ("hnsw", 0)):
        ours.planner.exact_max = exact_max
        try:
            out[name] = ours.search(prefix, query=query, filter=flt, limit=limit, offset=offset)
        finally:
            ours.planner.exact_max = default
        assert log.plans[-1].strategy in (name, "empty"), str(log.plans[-1])
    return out


# Its stores come from fixtures chosen at run time (getfixturevalue), which collection cannot see.
@pytest.mark.catalog
@pytest.mark.parametrize("root_kind", ["general", "typed", "plain"])
# No shrinking: examples share one store, so a shrunk example does not replay
# the state it failed in, and shrinking ran for minutes; a failure's message
# shows both rankings in full.
@settings(
    max_examples=35,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ops=st.tuples(st.lists(PUTS, min_size=2, max_size=10), st.lists(OPS, min_size=1, max_size=25)).map(
        lambda t: t[0] + t[1]
    ),
    paging=st.lists(st.tuples(QUERIES, st.integers(1, 4)), min_size=1, max_size=2),
)
def test_random_op_sequences_match_in_memory_store(
    request: pytest.FixtureRequest, root_kind: str, ops: list, paging: list
) -> None:
    # A fresh root per example keeps examples apart in the one shared Chroma folder.
    run = f"r{next(_counter)}"
    root = (run,) if root_kind == "general" else ("research", run)
    # The research collection embeds its schema's text field, ``content``; a plain store knows no schema.
    fields = ["content"] if root_kind == "typed" else FIELDS
    mem = InMemoryStore(index={"dims": FAKE_DIMS, "embed": EMBED, "fields": fields})
    plain = root_kind == "plain"
    ours: ChromaStore = request.getfixturevalue("plain_store" if plain else "shared_store")
    plan_log: _PlanLog = request.getfixturevalue("plain_plan_log" if plain else "plan_log")

    for op in ops:
        kind = op[0]
        if kind == "put":
            _, sub, key, value, index = op
            ns = root + sub
            if plain:  # no research schema applies: a confidence that is no number is just data
                value = {**value, "confidence": "high"}
            mem.delete(ns, key)  # else InMemoryStore keeps the old value's vectors
            mem.put(ns, key, value, index=index)
            ours.put(ns, key, value, index=index)
        elif kind == "delete":
            _, sub, key = op
            mem.delete(root + sub, key)
            ours.delete(root + sub, key)
        elif kind == "get":
            _, sub, key = op
            want, got = mem.get(root + sub, key), ours.get(root + sub, key)
            assert (want is None) == (got is None)
            if want is not None:
                assert got.value == want.value and got.namespace == want.namespace and got.key == want.key
        elif kind == "search":
            _, sub, flt, limit, offset = op
            prefix = root + sub
            full_want = mem.search(prefix, filter=flt, limit=1000)
            full_got = ours.search(prefix, filter=flt, limit=1000)

            def as_set(items: list[SearchItem]) -> list[tuple]:
                return sorted((tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items)

            assert as_set(full_got) == as_set(full_want)
            page_want = mem.search(prefix, filter=flt, limit=limit, offset=offset)
            page_got = ours.search(prefix, filter=flt, limit=limit, offset=offset)
            assert len(page_got) == len(page_want)
            assert set(as_set(page_got)) <= set(as_set(full_want))
            if offset == 0 and limit >= len(full_want):
                assert as_set(page_got) == as_set(full_want)
        elif kind == "query":
            _, sub, query, flt, limit, offset = op
            prefix = root + sub
            full = mem.search(prefix, query=query, filter=flt, limit=1000)
            page_mem = mem.search(prefix, query=query, filter=flt, limit=limit, offset=offset)
            n_scored = sum(i.score is not None for i in full)
            if offset == 0 or offset + limit <= n_scored:
                assert _show(page_mem) == _show(full[offset : offset + limit])
            full_got = _query_both_plans(ours, plan_log, prefix, query, flt, 1000, 0)
            page_got = _query_both_plans(ours, plan_log, prefix, query, flt, limit, offset)
            for plan in ("exact", "hnsw"):
                what = f"{plan} plan, query {query!r} under {prefix} filter {flt}"
                _assert_ranked(full_got[plan], full, 0, 1000, what)
                _assert_ranked(page_got[plan], full, offset, limit, f"{what} limit {limit} offset {offset}")
        else:
            _, prefix, suffix, max_depth, limit, offset = op
            conds = []
            if prefix is not None:
                conds.append(MatchCondition("prefix", root + prefix))
            else:
                conds.append(MatchCondition("prefix", root))
            if suffix is not None:
                conds.append(MatchCondition("suffix", suffix))
            depth = None if max_depth is None else len(root) + max_depth
            lop = ListNamespacesOp(match_conditions=tuple(conds), max_depth=depth, limit=limit, offset=offset)
            assert ours.batch([lop])[0] == _reference_namespaces(mem, lop)

    # Paging through everything under the root yields each item exactly once.
    everything = mem.search(root, limit=1000)
    pages = [ours.search(root, limit=3, offset=o) for o in range(0, len(everything) + 3, 3)]
    keys = [(tuple(i.namespace), i.key) for page in pages for i in page]
    assert len(keys) == len(set(keys)) == len(everything)
    # So does paging through a query search, under either plan, in InMemoryStore's ranks.
    for query, size in paging:
        full = mem.search(root, query=query, limit=1000)
        pages = [
            _query_both_plans(ours, plan_log, root, query, None, size, o) for o in range(0, len(full) + size, size)
        ]
        for plan in ("exact", "hnsw"):
            paged = [i for page in pages for i in page[plan]]
            what = f"{plan} plan, query {query!r} paged by {size} under {root}"
            _assert_ranked(paged, full, 0, len(full) + size, what)


def test_pool_texts_score_apart() -> None:
    """The tolerance can tell ranks apart: no two texts of the pool score within it of each other for a query."""
    for query in [*TEXTS[:4], "macro regime"]:
        q = EMBED.embed_query(query)
        scores = sorted(
            sum(a * b for a, b in zip(q, v, strict=False)) / (sum(a * a for a in q) * sum(b * b for b in v)) ** 0.5
            for v in EMBED.embed_documents(TEXTS)
        )
        assert min(b - a for a, b in itertools.pairwise(scores)) > 100 * TOL


def test_hnsw_plan_finds_items_whose_vectors_rank_past_twice_the_item_count(tmp_path) -> None:
    """The HNSW plan asks Chroma for every record it needs, however many vectors an item has.

    Two items in scope, a hundred elsewhere with six vectors each: an item in
    scope may rank 300th among the collection's 602 vector records, past a
    round capped at twice the collection's items (204 records).
    """
    idx = {"dims": FAKE_DIMS, "embed": EMBED, "fields": ["tags[*]"]}
    mem = InMemoryStore(index=idx)
    with ChromaStore(data_dir=tmp_path / "memory", index=idx) as ours:
        for ns, n, n_tags in ((("other",), 100, 6), (("mine",), 2, 1)):
            for i in range(n):
                value = {"tags": [f"{ns[0]} {i} {j}" for j in range(n_tags)]}
                mem.put(ns, f"k{i}", value)
                ours.put(ns, f"k{i}", value)
        ours.planner.exact_max = 0
        for query in ["alpha", "beta", "gamma", "delta", "epsilon"]:
            assert ours.explain(("mine",), query=query).strategy == "hnsw"
            _assert_ranked(
                ours.search(("mine",), query=query),
                mem.search(("mine",), query=query),
                0,
                10,
                f"hnsw plan, query {query!r}",
            )
