"""The three states of an item, each under its own name in every JSON view (CLI ``--json``, MCP tools).

* ``status``: the value's own (a strategy's ``draft``/``tested``/``approved``,
  a hypothesis' ``proposed``...), read from the value; None when it has none;
* ``storage``: where the item is, ``"live"`` (in the store), ``"archived"``
  or ``"unknown"``;
* ``lifecycle``: ``"active"``, ``"retired"`` or ``"superseded"``, with its
  ``reason``, ``superseded_by`` and ``changed_at`` when not active.

Lineage nodes (`langgraph_memory.research.lineage.LineageNode`) and strategy
versions (`langgraph_memory.research.api.StrategyVersion`) carry the same
three names as attributes.

Example:
    >>> item_states({"status": "approved"}, None)
    {'status': 'approved', 'storage': 'live', 'lifecycle': 'active', 'reason': None, 'superseded_by': None, 'superseded_by_namespace': None, 'changed_at': None}
"""

from __future__ import annotations

from typing import Any

from langgraph_memory.catalog.status import ItemStatus

__all__ = ["item_states", "lifecycle_json", "value_status"]


def value_status(value: Any) -> str | None:
    """The value's own status (``value["status"]`` when it is a string), else None."""
    status = value.get("status") if isinstance(value, dict) else None
    return status if isinstance(status, str) else None


def lifecycle_json(st: ItemStatus | None) -> dict[str, Any]:
    """``lifecycle`` (``"active"`` when ``st`` is None) with its reason, replacement and time, as plain JSON."""
    if st is None:
        return {
            "lifecycle": "active",
            "reason": None,
            "superseded_by": None,
            "superseded_by_namespace": None,
            "changed_at": None,
        }
    return {
        "lifecycle": st.status,
        "reason": st.reason,
        "superseded_by": st.superseded_by,
        "superseded_by_namespace": list(st.superseded_by_namespace) if st.superseded_by_namespace else None,
        "changed_at": st.changed_at.isoformat(),
    }


def item_states(value: Any, st: ItemStatus | None, storage: str = "live") -> dict[str, Any]:
    """The three states of an item whose value is ``value`` and whose lifecycle record is ``st``."""
    return {"status": value_status(value), "storage": storage, **lifecycle_json(st)}
