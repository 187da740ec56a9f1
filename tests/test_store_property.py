"""Random op sequences give the same results on ChromaStore as on LangGraph's InMemoryStore.

Differences that are deliberate (and documented in the README) are kept out of
the generated data or compared accordingly:

* search without a query returns items in an unspecified order (InMemoryStore
  groups by namespace, SqliteStore sorts by update time, Chroma uses storage
  order), so results are compared as sets, and pages by size, filter and overlap;
* InMemoryStore lists namespaces whose items were all deleted (and ones merely
  read), a quirk of its ``defaultdict``; we list namespaces that hold items;
* InMemoryStore raises on ``$gt`` over a missing or non-numeric field and says
  ``True == 1``; range filters here target a field every value has as an int,
  and booleans live in their own field.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import ListNamespacesOp, MatchCondition
from langgraph.store.memory import InMemoryStore, _does_match

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

_counter = itertools.count()

KEYS = st.sampled_from(["k1", "k2", "k3", "k4"])
SUBS = st.sampled_from([(), ("u1",), ("u2",), ("u1", "x"), ("u2", "y")])
VALUES = st.fixed_dictionaries(
    {"a": st.integers(-3, 3)},
    optional={
        "s": st.sampled_from(["red", "green", "blue"]),
        "f": st.booleans(),
        "n": st.fixed_dictionaries({"x": st.integers(0, 5)}, optional={"t": st.sampled_from(["p", "q"])}),
        "l": st.lists(st.integers(0, 2), max_size=2),
    },
)
FILTERS = st.one_of(
    st.none(),
    st.builds(lambda v: {"a": v}, st.integers(-3, 3)),
    st.builds(lambda op, v: {"a": {op: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]), st.integers(-3, 3)),
    st.builds(lambda v: {"s": v}, st.sampled_from(["red", "green", "blue"])),
    st.builds(lambda v: {"s": {"$ne": v}}, st.sampled_from(["red", "green"])),
    st.builds(lambda v: {"f": v}, st.booleans()),
    st.builds(lambda v: {"n": {"x": {"$gte": v}}}, st.integers(0, 5)),
    st.builds(lambda v: {"n": {"t": v}}, st.sampled_from(["p", "q"])),
    st.builds(lambda v: {"l": v}, st.lists(st.integers(0, 2), max_size=2)),
    st.builds(lambda a, s: {"a": {"$gte": a}, "s": s}, st.integers(-3, 3), st.sampled_from(["red", "blue"])),
)

OPS = st.one_of(
    st.tuples(st.just("put"), SUBS, KEYS, VALUES),
    st.tuples(st.just("delete"), SUBS, KEYS),
    st.tuples(st.just("get"), SUBS, KEYS),
    st.tuples(st.just("search"), SUBS, FILTERS, st.integers(1, 12), st.integers(0, 4)),
    st.tuples(
        st.just("list"),
        st.sampled_from([None, ("u1",), ("*",), ("u2", "*")]),
        st.sampled_from([None, ("x",), ("*",)]),
        st.sampled_from([None, 1, 2, 3]),
        st.integers(1, 10),
        st.integers(0, 3),
    ),
)


def _reference_namespaces(mem: InMemoryStore, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    namespaces = [ns for ns, items in mem._data.items() if items]
    namespaces = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions)]
    if op.max_depth is not None:
        namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
    else:
        namespaces = sorted(namespaces)
    return namespaces[op.offset : op.offset + op.limit]


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory):
    s = ChromaStore(
        data_dir=tmp_path_factory.mktemp("prop") / "memory",
        index={"dims": FAKE_DIMS, "embed": DeterministicFakeEmbedding(size=FAKE_DIMS)},
    )
    yield s
    s.close()


@pytest.mark.parametrize("root_kind", ["general", "typed"])
@settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_random_op_sequences_match_in_memory_store(shared_store: ChromaStore, root_kind: str, ops: list) -> None:
    # A fresh root per example keeps examples apart in the one shared Chroma folder.
    run = f"r{next(_counter)}"
    root = (run,) if root_kind == "general" else ("research", run)
    mem = InMemoryStore()
    ours = shared_store

    def value_of(v: dict) -> dict:
        return {**v, "content": "typed finding"} if root_kind == "typed" else v

    for op in ops:
        kind = op[0]
        if kind == "put":
            _, sub, key, value = op
            ns = root + sub
            mem.put(ns, key, value_of(value))
            ours.put(ns, key, value_of(value))
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
            as_set = lambda items: sorted((tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items)  # noqa: E731
            assert as_set(full_got) == as_set(full_want)
            page_want = mem.search(prefix, filter=flt, limit=limit, offset=offset)
            page_got = ours.search(prefix, filter=flt, limit=limit, offset=offset)
            assert len(page_got) == len(page_want)
            assert set(as_set(page_got)) <= set(as_set(full_want))
            if offset == 0 and limit >= len(full_want):
                assert as_set(page_got) == as_set(full_want)
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
