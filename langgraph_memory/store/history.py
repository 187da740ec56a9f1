"""An item's versions, newest first: what `ChromaStore.history()` returns.

Every change to an item keeps the version it ended in the catalog, in the
change's own transaction (`langgraph_memory.catalog.history`). A
`Version` is one of them, or the current one (``valid_to`` None):

    >>> store.put(("notes",), "n1", {"text": "v1"})
    >>> store.put(("notes",), "n1", {"text": "v2"})
    >>> [(v.value["text"], v.change) for v in store.history(("notes",), "n1")]
    [('v2', None), ('v1', 'put')]

``change`` is what ended the version (``put``, ``delete``, ``retire``,
``supersede``, ``restore``, ``ttl``, ``archive``); ``thread_id`` and
``run_id`` name the LangGraph run that made that change, when it ran inside
one. A key deleted and put again lists every incarnation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import status as _status
from langgraph_memory.errors import InvalidArgumentError

__all__ = ["Version", "HistoryRetention", "read_history", "as_timestamp"]


@dataclass(frozen=True)
class Version:
    """One version of an item: its value from ``valid_from`` until ``valid_to`` (None: the current one).

    ``change`` is what ended it (None for the current version); ``status``
    is ``"retired"`` or ``"superseded"`` when searches hid it, else None.
    ``thread_id``/``run_id``: the LangGraph run that made the change (None
    outside a graph). Times are UTC datetimes.
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    valid_from: datetime
    valid_to: datetime | None
    change: str | None
    status: str | None
    created_at: datetime
    updated_at: datetime
    thread_id: str | None = None
    run_id: str | None = None

    @property
    def current(self) -> bool:
        """Whether this is the item's current version."""
        return self.valid_to is None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (ISO times), for the CLI, MCP tools and the browser."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "valid_from": self.valid_from.isoformat(),
            "valid_to": None if self.valid_to is None else self.valid_to.isoformat(),
            "change": self.change,
            "status": self.status,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "thread_id": self.thread_id,
            "run_id": self.run_id,
        }


@dataclass(frozen=True)
class HistoryRetention:
    """How much of each item's history the archive job keeps (the default keeps everything).

    ``versions``: keep at most this many versions of an item, the current
    one included (1: none of its past). ``days``: drop past versions that
    ended more than this many days before the run. Both may be set; a
    version goes when either rule says so.

        >>> HistoryRetention(versions=5, days=365)
        HistoryRetention(versions=5, days=365)
    """

    versions: int | None = None
    days: float | None = None

    def __post_init__(self) -> None:
        if self.versions is not None and (
            isinstance(self.versions, bool) or not isinstance(self.versions, int) or self.versions < 1
        ):
            raise InvalidArgumentError(f"versions must be a whole number >= 1 (or None: all), got {self.versions!r}")
        if self.days is not None and (
            isinstance(self.days, bool) or not isinstance(self.days, (int, float)) or not self.days >= 0
        ):
            raise InvalidArgumentError(f"days must be a number of days >= 0 (or None: forever), got {self.days!r}")

    @property
    def keeps_all(self) -> bool:
        return self.versions is None and self.days is None


# datetime.fromtimestamp rounds to the nearest microsecond: a datetime shows the instants within half of one.
_HALF_MICROSECOND = 0.5e-6


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def as_timestamp(at: datetime | float) -> float:
    """``at`` as epoch seconds. A naive datetime is taken as UTC (the store keeps every time in UTC).

    A datetime holds microseconds and the store's times are finer: a datetime stands for every instant shown as
    it (rounded to its microsecond), so ``store.as_of(version.valid_from)`` sees that version.

    Raises:
        InvalidArgumentError: ``at`` is neither a datetime nor a number of seconds.
    """
    if isinstance(at, datetime):
        return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp() + _HALF_MICROSECOND
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        return float(at)
    raise InvalidArgumentError(f"a moment must be a datetime (naive means UTC) or epoch seconds, got {at!r}")


def read_history(catalog: Catalog, namespace: tuple[str, ...], key: str) -> list[Version]:
    """The versions of ``(namespace, key)``, newest first (the current one first, if the item is live)."""
    uid = _item_rows.item_uid(namespace, key)
    with catalog.read() as conn:
        live = _item_rows.get_items(conn, [(namespace, key)]).get((namespace, key))
        st = _status.get(conn, [uid]).get(uid) if live is not None else None
        past = _history.versions(conn, uid)
    out: list[Version] = []
    if live is not None:
        out.append(
            Version(
                namespace=live.namespace,
                key=live.key,
                value=live.value,
                valid_from=_dt(live.valid_since),
                valid_to=None,
                change=None,
                status=st.status if st is not None and st.item_created_at == live.created_at else None,
                created_at=_dt(live.created_at),
                updated_at=_dt(live.updated_at),
            )
        )
    out.extend(
        Version(
            namespace=v.namespace,
            key=v.key,
            value=v.value,
            valid_from=_dt(v.valid_from),
            valid_to=_dt(v.valid_to),
            change=v.change,
            status=v.status,
            created_at=_dt(v.created_at),
            updated_at=_dt(v.updated_at),
            thread_id=v.thread_id,
            run_id=v.run_id,
        )
        for v in past
    )
    return out
