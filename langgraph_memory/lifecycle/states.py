"""The three states of an item, each under its own name in every JSON view (``docs/lifecycle.md``).

``status`` is the value's own (None when it has none), ``storage`` where the item is (``live``, ``archived``,
``unknown``), ``lifecycle`` whether searches show it (``active``, ``retired``, ``superseded``, with its reason,
replacement and time).

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
