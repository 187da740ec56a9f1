"""Lineage: which memory led to which, and the versions of each strategy.

Edges, nodes and versions live in the catalog (``<data_dir>/catalog.sqlite``,
see `langgraph_memory.catalog.lineage`), beside the items: the typed
API writes an item, its lineage and its version number in one transaction,
so a crash leaves all of it or none. Every write is one ``BEGIN IMMEDIATE``
transaction in which the cycle check and the next version number are
decided, so two processes can neither jointly create a cycle nor hand out
the same version twice:

    from langgraph_memory.research.lineage import LineageStore

    with LineageStore("/tmp/lgm-demo/catalog.sqlite") as lin:
        lin.register("f1", "research_findings", ("research",))
        lin.register("s1", "strategy_library", ("strategies",),
                     parents=[("f1", "derived_from")], version_name="momentum")
        print([e.parent_id for e in lin.parents("s1")])    # ['f1']
        print(lin.versions("momentum"))                       # [VersionRow(name='momentum', version=1, ...)]

Ids are the item keys (UUIDs). Nodes are not removed when their items are
archived, so the lineage of an archived ancestor stays whole. Traversals are
iterative: a chain of any length works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph_memory.catalog.lineage import Edge, ItemRef, VersionRow
from langgraph_memory.catalog.lineage_store import LineageStore
from langgraph_memory.catalog.status import ItemStatus

__all__ = [
    "LineageStore",
    "Edge",
    "ItemRef",
    "VersionRow",
    "LineageNode",
    "NodeSummary",
    "LineageTree",
    "Lineage",
    "build_lineage",
]


#: Where an item is: in the store, in the archive, or neither (deleted, or no archive at hand).
Storage = Literal["live", "archived", "unknown"]
#: Whether searches show it: active, or hidden as retired or superseded.
Lifecycle = Literal["active", "retired", "superseded"]


@dataclass
class LineageNode:
    """An item seen from the lineage: where it lives and what it says.

    Three states, each under its own name in every view (API, CLI, JSON):

    * ``status``: the value's own, as stored in it (a strategy's ``"draft"``,
      ``"tested"`` or ``"approved"``, a hypothesis' ``"proposed"``...; None
      for records without one, or whose value is not at hand);
    * ``storage``: ``"live"`` (in the store), ``"archived"`` (found in the
      archive) or ``"unknown"`` (neither: deleted, or archived with no archive
      lookup available);
    * ``lifecycle``: ``"active"``, ``"retired"`` or ``"superseded"`` (then
      ``superseded_by`` names the replacement), with the ``reason`` given;
      retired and superseded items stay in lineage.

    ``relation`` is how this node relates to the one it was reached from
    (for ancestors: set on direct parents only); ``depth`` counts hops from
    the item asked about (negative for ancestors).
    """

    id: str
    collection: str | None
    namespace: tuple[str, ...] | None
    summary: str
    storage: Storage = "unknown"
    relation: str | None = None
    depth: int = 0
    name: str | None = None
    version: int | None = None
    lifecycle: Lifecycle = "active"
    reason: str | None = None
    superseded_by: str | None = None
    status: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (the CLI's ``--json``, the MCP server)."""
        return {
            "id": self.id,
            "collection": self.collection,
            "namespace": list(self.namespace) if self.namespace is not None else None,
            "summary": self.summary,
            "status": self.status,
            "storage": self.storage,
            "relation": self.relation,
            "depth": self.depth,
            "name": self.name,
            "version": self.version,
            "lifecycle": self.lifecycle,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
        }

    @property
    def label(self) -> str:
        """The summary with its state: ``"... [retired: reason]"``, ``"... [superseded by <id>]"``."""
        if self.lifecycle == "retired":
            return f"{self.summary} [retired{': ' + self.reason if self.reason else ''}]"
        if self.lifecycle == "superseded":
            return f"{self.summary} [superseded by {self.superseded_by}]"
        return self.summary


@dataclass(frozen=True)
class NodeSummary:
    """What a summariser says about one item: its summary, where it is (``storage``), its retired/superseded
    state (``standing``) and its value's own ``status``."""

    summary: str
    storage: Storage
    standing: ItemStatus | None = None
    status: str | None = None


@dataclass
class LineageTree:
    """A node and the items derived from it (``children``), recursively."""

    node: LineageNode
    children: list[LineageTree] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The tree as flat plain data: ``{**node.as_dict(), "descendants": self.rows()}``.

        Flat, not nested, so that ``json.dumps`` (and any JSON encoder with a
        recursion limit) takes a chain of any depth.
        """
        return {**self.node.as_dict(), "descendants": self.rows()}

    def rows(self) -> list[dict[str, Any]]:
        """Every node below the root, depth first, each with ``parent`` (the id it hangs from).

        Example:
            >>> lin = mem.lineage(f.id)  # f -> h -> s -> b -> lesson
            >>> [(r["collection"], r["parent"] == p, r["depth"]) for r, p in zip(lin.descendants.rows(), [f.id, h.id])]
            [('hypotheses', True, 1), ('strategy_library', True, 2)]
        """
        out: list[dict[str, Any]] = []
        stack: list[tuple[LineageTree, str]] = [(c, self.node.id) for c in reversed(self.children)]
        while stack:
            tree, parent = stack.pop()
            out.append({**tree.node.as_dict(), "parent": parent})
            stack.extend((c, tree.node.id) for c in reversed(tree.children))
        return out

    def walk(self) -> Iterator[LineageNode]:
        """Every node of the tree, depth first (the root first); iterative, any depth."""
        stack: list[LineageTree] = [self]
        while stack:
            t = stack.pop()
            yield t.node
            stack.extend(reversed(t.children))


@dataclass
class Lineage:
    """The lineage of one item: ``ancestors`` (root first) and ``descendants`` (a tree).

    ``parents`` are the direct parents with their relation. The item itself
    is ``item`` and the root of ``descendants``.
    """

    item: LineageNode
    ancestors: list[LineageNode]
    parents: list[Edge]
    descendants: LineageTree

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the item, its ancestors (root first), direct parents and descendants.

        Flat at any depth: ``descendants`` lists the tree depth first, each
        row naming its ``parent`` (see `LineageTree.rows()`).
        """
        return {
            "item": self.item.as_dict(),
            "ancestors": [a.as_dict() for a in self.ancestors],
            "parents": [
                {"id": e.parent_id, "relation": e.relation, "collection": e.parent_collection} for e in self.parents
            ],
            "descendants": self.descendants.rows(),
        }

    @property
    def ancestor_ids(self) -> list[str]:
        return [a.id for a in self.ancestors]

    @property
    def descendant_ids(self) -> list[str]:
        return [n.id for n in self.descendants.walk()][1:]


# A summariser gets the refs of items and returns, per id it knows, its summary and states.
Summarizer = Callable[[list[ItemRef]], dict[str, NodeSummary]]


def build_lineage(lineage: LineageStore, item_id: str, summarize: Summarizer, *, max_nodes: int = 2000) -> Lineage:
    """Assemble a [`Lineage`][langgraph_memory.Lineage] for ``item_id`` with summaries from ``summarize``.

    An item reached twice in the descendant tree (several parents) is shown
    each time but expanded only once; the tree holds at most ``max_nodes``.
    """
    me = lineage.require(item_id)
    depths = lineage.ancestor_depths(item_id)
    anc_refs = lineage.ordered_ancestors(depths)
    # Breadth-first over children, one read per level, collecting edges before summarising in one go.
    child_edges: dict[str, list[Edge]] = {}
    frontier = [item_id]
    seen = {item_id}
    total = 1
    while frontier and total < max_nodes:
        nxt: list[str] = []
        level = lineage.children_of(frontier)
        for node_id in frontier:
            edges = level.get(node_id, [])
            child_edges[node_id] = edges
            for e in edges:
                total += 1
                if e.child_id not in seen:
                    seen.add(e.child_id)
                    nxt.append(e.child_id)
        frontier = nxt
    refs = {me.id: me, **{r.id: r for r in anc_refs if r.collection}}
    refs.update(lineage.items(seen - refs.keys()))
    summaries = summarize(list(refs.values()))

    def node(ref_id: str, relation: str | None, depth: int) -> LineageNode:
        ref = refs.get(ref_id)
        info = summaries.get(ref_id) or NodeSummary(ref_id, "unknown")
        st = info.standing
        return LineageNode(
            id=ref_id,
            collection=ref.collection if ref else None,
            namespace=ref.namespace if ref else None,
            summary=info.summary,
            storage=info.storage,
            status=info.status,
            relation=relation,
            depth=depth,
            name=ref.name if ref else None,
            version=ref.version if ref else None,
            lifecycle=st.status if st is not None else "active",
            reason=st.reason if st is not None else None,
            superseded_by=st.superseded_by if st is not None else None,
        )

    parents = lineage.parents(item_id)
    direct: dict[str, str] = {}
    for e in parents:
        direct[e.parent_id] = f"{direct[e.parent_id]}, {e.relation}" if e.parent_id in direct else e.relation
    ancestors = [node(r.id, direct.get(r.id), -depths.get(r.id, 0)) for r in anc_refs]

    # The descendant tree, built with an explicit stack (a chain of any length, no recursion).
    expanded: set[str] = set()
    root = LineageTree(node(item_id, None, 0))
    stack: list[tuple[LineageTree, str, int]] = [(root, item_id, 0)]
    while stack:
        t, node_id, depth = stack.pop()
        if node_id in expanded:
            continue
        expanded.add(node_id)
        # One child linked by several relations (derived_from and resolves) shows once.
        merged: dict[str, list[str]] = {}
        for e in child_edges.get(node_id, []):
            merged.setdefault(e.child_id, []).append(e.relation)
        for cid, rels in merged.items():
            child = LineageTree(node(cid, ", ".join(rels), depth + 1))
            t.children.append(child)
            stack.append((child, cid, depth + 1))
    return Lineage(item=node(item_id, None, 0), ancestors=ancestors, parents=parents, descendants=root)
