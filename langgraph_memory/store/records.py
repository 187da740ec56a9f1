"""How one store item is laid out as Chroma records.

An item ``(namespace, key, value)`` becomes one *primary* record whose id is a
hash of namespace and key, plus one extra record per additional embedded text
(LangGraph lets an item carry several vectors; search max-pools them).

Chroma's cost per returned record grows with the number of metadata keys, so
only what ``where`` clauses need is a key of its own:

* ``lgm:ns`` (labels joined by ``\x1f``) and ``lgm:n0``, ``lgm:n1`` ... (one per
  label, so a namespace prefix is an equality ``where``);
  (a typed collection skips ``lgm:n0``: it holds one first label only);
* ``lgm:x`` (0 for the primary record, ``i`` for the i-th extra vector),
  ``lgm:vec`` (present, and false, only when the vector is a placeholder: the
  item is not indexed), ``lgm:exp`` (expiry, epoch seconds, when the item has a TTL);
* the value's scalar leaves flattened to dotted paths (``metrics.sharpe``),
  strings only up to :data:`FLAT_STR_MAX` characters, so filters run inside
  Chroma and LangChain retrievers can filter on them too.

Everything else is one JSON document under ``lgm:item``: key, value (the
source of truth), created/updated/last-accessed times, access count, TTL,
number of vectors and the index path of this record.

Records carry no Chroma ``documents``: the text a record embeds is read back
from the value at the record's index path (:func:`record_text`). Chroma
indexes every document for full-text search, which here cost more than the
vector itself (about 0.3 ms per item), and the text is in the value anyway.
For the same reason the field a typed collection embeds (``content``,
``lesson``...) is not flattened: it is prose, found by meaning; a filter on it
runs in Python.

Keys that cannot be flattened without ambiguity (containing ``.``, starting
with ``lgm:``, ``$`` or ``#``) are left out of the flat fields; filters on them
are applied in Python instead.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base.embed import get_text_at_path

from langgraph_memory.collections import collection_for
from langgraph_memory.errors import ValidationError

__all__ = [
    "StoredItem",
    "item_uid",
    "extra_id",
    "flatten_value",
    "flat_key_ok",
    "flattenable",
    "encode_metadata",
    "decode_metadata",
    "record_text",
    "text_index",
    "text_path",
    "split_text_path",
    "NS_SEP",
    "INTERNAL_PREFIX",
]

NS_SEP = "\x1f"
INTERNAL_PREFIX = "lgm:"

K_NS = "lgm:ns"
K_ITEM = "lgm:item"
K_EXPIRES = "lgm:exp"
K_HAS_VECTOR = "lgm:vec"
K_EXTRA = "lgm:x"

# Longer strings are not flattened: nobody filters on a paragraph by equality,
# and every flattened key costs on every read (filters still apply, in Python).
FLAT_STR_MAX = 256


# Items read from Chroma per page when scanning.
PAGE_SIZE = 1000


def now() -> float:
    """Wall-clock time as stored in records (epoch seconds)."""
    import time

    return time.time()


def to_datetime(ts: float) -> datetime:
    """A record timestamp as an aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def level_key(i: int) -> str:
    return f"lgm:n{i}"


def item_uid(namespace: tuple[str, ...], key: str) -> str:
    """The Chroma id of an item's primary record."""
    raw = NS_SEP.join(namespace) + "\x1e" + key
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=16).hexdigest()


def extra_id(uid: str, i: int) -> str:
    """The Chroma id of the item's ``i``-th extra vector record (i >= 1)."""
    return f"{uid}:{i}"


def flat_key_ok(key: Any) -> bool:
    """Whether a value's key can name a flattened metadata key (filters rely on the same rule)."""
    return isinstance(key, str) and bool(key) and "." not in key and not key.startswith((INTERNAL_PREFIX, "$", "#"))


def flattenable(v: Any) -> bool:
    """Whether a leaf is copied into Chroma metadata, so a filter on it can run inside Chroma.

    Booleans, strings up to :data:`FLAT_STR_MAX` characters, 64-bit ints and
    finite floats; lists, None and longer strings stay in the value only.
    """
    if isinstance(v, bool):
        return True
    if isinstance(v, str):
        return len(v) <= FLAT_STR_MAX
    if isinstance(v, int):  # Chroma stores 64-bit ints; larger ones stay Python-filtered only
        return -(2**63) <= v < 2**63
    if isinstance(v, float):
        return math.isfinite(v)
    return False


def flatten_value(value: dict[str, Any], prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Scalar leaves of ``value`` as ``{"a.b": leaf}``; lists and None are skipped."""
    out = {} if out is None else out
    for k, v in value.items():
        if not flat_key_ok(k):
            continue
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            flatten_value(v, path + ".", out)
        elif flattenable(v):
            out[path] = v
    return out


def dumps_value(value: dict[str, Any]) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"store values must be JSON-serialisable dicts (str keys; str, number, bool, None, list, dict): {exc}"
        ) from None


@dataclass
class StoredItem:
    """Everything the store knows about one item (used by the store, archive and lineage)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    last_accessed_at: float
    access_count: int = 0
    expires_at: float | None = None
    ttl_minutes: float | None = None
    indexed: bool = True
    n_vectors: int = 1
    # Filled in when vectors are read (archive) or known (put).
    vectors: list[list[float]] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    @property
    def uid(self) -> str:
        return item_uid(self.namespace, self.key)

    @property
    def last_activity(self) -> float:
        return max(self.updated_at, self.last_accessed_at)


def encode_metadata(
    item: StoredItem,
    *,
    value_json: str | None = None,
    extra: int = 0,
    path: str = "",
    text_index: int | None = None,
) -> dict[str, Any]:
    """Metadata of one record of ``item`` (``extra`` > 0 for an extra vector record).

    ``path`` is the index path whose text the record embeds; when that path
    yields several texts, the record's path is ``text_path(path, text_index)``.
    """
    meta: dict[str, Any] = flatten_value(item.value)
    spec = collection_for(item.namespace)
    if spec.embed_field is not None:  # a typed collection's prose field: kept in the JSON only
        meta.pop(spec.embed_field, None)
    packed = {
        "k": item.key,
        "ca": item.created_at,
        "ua": item.updated_at,
        "la": item.last_accessed_at,
        "ac": item.access_count,
        "nv": item.n_vectors,
        "p": path,
    }
    if text_index is not None:
        packed["t"] = text_index
    if item.ttl_minutes is not None:
        packed["ttl"] = item.ttl_minutes
    head = json.dumps(packed, ensure_ascii=False, separators=(",", ":"))
    # The value is spliced in as already-serialised JSON, not encoded twice.
    meta[K_ITEM] = head[:-1] + ',"v":' + (value_json if value_json is not None else dumps_value(item.value)) + "}"
    meta[K_NS] = NS_SEP.join(item.namespace)
    if not item.indexed:  # absent means indexed: one key fewer on nearly every record
        meta[K_HAS_VECTOR] = False
    meta[K_EXTRA] = extra
    # A typed collection holds one first label only: it needs no key for it.
    first = 1 if spec.typed else 0
    for i in range(first, len(item.namespace)):
        meta[level_key(i)] = item.namespace[i]
    if item.expires_at is not None:
        meta[K_EXPIRES] = item.expires_at
    return meta


def decode_metadata(meta: dict[str, Any] | None) -> StoredItem | None:
    """The item a record describes, or None for a record we did not write."""
    if not meta or K_ITEM not in meta:
        return None
    packed = json.loads(meta[K_ITEM])
    ns_raw = meta.get(K_NS, "")
    return StoredItem(
        namespace=tuple(ns_raw.split(NS_SEP)) if ns_raw else (),
        key=packed["k"],
        value=packed["v"],
        created_at=packed["ca"],
        updated_at=packed["ua"],
        last_accessed_at=packed["la"],
        access_count=packed["ac"],
        expires_at=meta.get(K_EXPIRES),
        ttl_minutes=packed.get("ttl"),
        indexed=bool(meta.get(K_HAS_VECTOR, True)),
        n_vectors=packed["nv"],
        paths=[packed.get("p", "")],
    )


def text_path(path: str, index: int) -> str:
    """The record path of the ``index``-th text at an index path that yields several.

    Example:
        >>> text_path("notes[*]", 2)
        'notes[*].2'
    """
    return f"{path}.{index}"


def split_text_path(record_path: str) -> tuple[str, int | None]:
    """The index path and text number a record path names (the inverse of :func:`text_path`).

    A path that does not end in ``.<digits>`` is a plain index path.

    Example:
        >>> split_text_path("notes[*].2"), split_text_path("content")
        (('notes[*]', 2), ('content', None))
    """
    base, dot, tail = record_path.rpartition(".")
    if not dot or not tail.isdigit():
        return record_path, None
    return base, int(tail)


def record_text(meta: dict[str, Any] | None) -> str | None:
    """The text a record's vector embeds, read from the value (None for an unindexed item).

    Example:
        >>> item = StoredItem(("research",), "k", {"content": "Carry unwinds"}, 0.0, 0.0, 0.0)
        >>> record_text(encode_metadata(item, path="content"))
        'Carry unwinds'
    """
    if not meta or K_ITEM not in meta or meta.get(K_HAS_VECTOR, True) is False:
        return None
    packed = json.loads(meta[K_ITEM])
    path: str = packed.get("p", "")
    if not path:
        return None
    index = packed.get("t")
    if index is not None:
        path, _ = split_text_path(path)
    texts = get_text_at_path(packed["v"], path)
    i = index or 0
    return texts[i] if i < len(texts) else None


def text_index(value: dict[str, Any], path: str, text: str | None) -> int | None:
    """Which of the texts at a path ``path`` names, for a record known by path and text.

    A path that yields several texts gives each record the path
    ``text_path(path, i)``; this recovers ``i`` (None for a plain path), e.g. when
    restoring archived records.
    """
    base, i = split_text_path(path)
    if i is None or text is None:
        return None
    texts = get_text_at_path(value, base)
    return i if len(texts) > 1 and i < len(texts) and texts[i] == text else None


def with_access(meta: dict[str, Any], last_accessed_at: float, access_count: int) -> str:
    """The record's ``lgm:item`` JSON with new access data (everything else kept as written)."""
    packed = json.loads(meta[K_ITEM])
    packed["la"] = last_accessed_at
    packed["ac"] = access_count
    return json.dumps(packed, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def record_path(meta: dict[str, Any]) -> str:
    """The index path (e.g. ``"content"``) whose text a record's vector embeds."""
    return str(json.loads(meta[K_ITEM]).get("p", "")) if K_ITEM in meta else ""


def removed_keys(old_meta: dict[str, Any], new_meta: dict[str, Any]) -> dict[str, None]:
    """Chroma merges metadata on upsert; a key set to None is removed."""
    return {k: None for k in old_meta if k not in new_meta}
