"""The bundle format: ``manifest.json``, ``memories.jsonl``, ``README.md``; writing lines and checking a bundle.

An ``"item"`` line of ``memories.jsonl``:

    {"kind": "item", "namespace": ["strategies"], "key": "6f1c...", "value": {...},
     "created_at": 1.7e9, "updated_at": 1.7e9, "last_accessed_at": 1.7e9, "access_count": 3,
     "expires_at": null, "ttl_minutes": null, "indexed": true,
     "vectors": {"dtype": "<f4", "dims": 384, "b64": ["..."]}, "paths": ["description"],
     "lineage": {"node": {"id": "6f1c...", "collection": "strategy_library", ...},
                 "parents": [{"id": "a2e0...", "relation": "derived_from", "created_at": 1.7e9, ...}],
                 "version": {"name": "trend", "version": 2, "created_at": 1.7e9}},
     "evidence_end": "2018-12-31",
     "status": {"status": "superseded", "reason": "longer sample", "superseded_by": "9b0d...",
                "superseded_by_namespace": ["strategies"], "changed_at": 1.7e9, "item_created_at": 1.7e9}}

``"status"`` is there only for a retired or superseded item
([`as_dict()`][langgraph_memory.ItemStatus.as_dict]); it names the
item's ``created_at``, so it applies to this item only.

A ``"node"`` line is a lineage node without its item (an ancestor of an
exported item that was not exported itself), with its own parent links, so
the importer sees every ancestor by id: ``{"kind": "node", "id": ...,
"collection": ..., "namespace": [...], "name": ..., "version": ...,
"created_at": ..., "parents": [...], "evidence_end": ...}``.

``"evidence_end"`` (an ISO date, or absent when unknown) is the lineage node's evidence end, the last
market date of the data behind it through lineage (`langgraph_memory.catalog.evidence`), which a data
cut-off compares with. It travels as it is, not worked out again: a date may come from an ancestor that
stays behind, or from lineage that grew after the item was stored.

Vectors are base64 float32 as in the archive format
(`langgraph_memory.archive.format`); values and timestamps go through
``json`` unchanged, so they come back bit-exactly.

Format versions: 1, the first; 2 adds the items' ``"status"``; 3 the evidence
ends. An older bundle reads as a newer one without them; a package that knows
only an older version refuses a newer bundle rather than drop what it carries.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from langgraph_memory.archive.format import decode_vectors, encode_vectors, item_record
from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog.history import CHANGES
from langgraph_memory.catalog.lineage import Edge, ItemRef, VersionRow
from langgraph_memory.catalog.status import STATUSES, ItemStatus
from langgraph_memory.errors import ArchiveIntegrityError, BundleError, LangGraphMemoryError, ValidationError
from langgraph_memory.research.collections import collection_for
from langgraph_memory.store.namespaces import validate_namespace

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "MANIFEST",
    "MEMORIES",
    "README",
    "Progress",
    "BundleManifest",
    "Bundle",
    "LineWriter",
    "item_line",
    "node_line",
    "readme_text",
    "read_bundle",
]

BUNDLE_FORMAT = "langgraph-memory-bundle"
#: 2: items carry their retired/superseded status; 3: lineage nodes their evidence ends (older bundles still import).
BUNDLE_VERSION = 3
MANIFEST = "manifest.json"
MEMORIES = "memories.jsonl"
README = "README.md"

#: ``progress(phase, done, total)``, as the archive's runs report it.
Progress = Callable[[str, int, int | None], None]

_ITEM_FIELDS = ("namespace", "key", "value", "created_at", "updated_at", "last_accessed_at")


@dataclass
class BundleManifest:
    """What ``manifest.json`` says: format, source, counts, model, and the checksum of the memories."""

    format: str
    schema_version: int
    source: dict[str, Any]
    counts: dict[str, Any]
    model: dict[str, Any] | None
    files: dict[str, dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Bundle:
    """A checked bundle, parsed (`read_bundle()`): its items, the lineage rows and statuses it carries, its manifest."""

    manifest: BundleManifest
    items: list[StoredItem]
    nodes: list[ItemRef]
    edges: list[Edge]
    versions: list[VersionRow]
    #: the retired and superseded items' statuses (each names its item by namespace, key and created_at).
    statuses: list[ItemStatus] = field(default_factory=list)
    #: past versions of items, by ``(namespace, key)``, when the bundle was exported with its history
    #: (each as `langgraph_memory.catalog.history.records()` gives it, vectors as float32 bytes).
    history: dict[tuple[tuple[str, ...], str], list[dict[str, Any]]] = field(default_factory=dict)
    #: the lineage nodes' evidence ends, ``(namespace, id, end)``, where known.
    evidence_ends: list[tuple[tuple[str, ...], str, date]] = field(default_factory=list)


# ----------------------------------------------------------------- writing


class LineWriter:
    """Writes ``memories.jsonl`` line by line, hashing and counting what it writes."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.sha = hashlib.sha256()
        self.bytes = 0
        self.lines = 0

    def write(self, record: dict[str, Any]) -> None:
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
        self.fh.write(data)
        self.sha.update(data)
        self.bytes += len(data)
        self.lines += 1

    def summary(self) -> dict[str, Any]:
        return {"sha256": self.sha.hexdigest(), "bytes": self.bytes, "lines": self.lines}


def _edge_dicts(parents: list[Edge]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.parent_id,
            "relation": e.relation,
            "child_collection": e.child_collection,
            "parent_collection": e.parent_collection,
            "created_at": e.created_at,
        }
        for e in parents
    ]


def _node_dict(ref: ItemRef) -> dict[str, Any]:
    return {
        "id": ref.id,
        "collection": ref.collection,
        "namespace": list(ref.namespace),
        "name": ref.name,
        "version": ref.version,
        "created_at": ref.created_at,
    }


def _dated(line: dict[str, Any], end: date | None) -> dict[str, Any]:
    if end is not None:
        line["evidence_end"] = end.isoformat()
    return line


def node_line(ref: ItemRef, parents: list[Edge], evidence_end: date | None = None) -> dict[str, Any]:
    """A lineage node without its item (an ancestor that stayed behind), with its own parent links."""
    return _dated({"kind": "node", **_node_dict(ref), "parents": _edge_dicts(parents)}, evidence_end)


def item_line(
    item: StoredItem,
    node: ItemRef | None,
    parents: list[Edge],
    version: VersionRow | None,
    status: ItemStatus | None = None,
    evidence_end: date | None = None,
) -> dict[str, Any]:
    """An item (with its vectors, lineage node, parent links, version, retired/superseded status and evidence
    end) as a line."""
    line = {
        "kind": "item",
        **item_record(item),
        "lineage": {
            "node": _node_dict(node) if node is not None else None,
            "parents": _edge_dicts(parents),
            "version": {"name": version.name, "version": version.version, "created_at": version.created_at}
            if version is not None
            else None,
        },
    }
    if status is not None:
        line["status"] = status.as_dict()
    return _dated(line, evidence_end if node is not None else None)


def readme_text(manifest: BundleManifest) -> str:
    """The bundle's ``README.md``: where it came from, what it holds, how to import it."""
    counts = manifest.counts
    by_coll = ", ".join(f"{n} {c}" for c, n in sorted(counts.get("by_collection", {}).items())) or "none"
    model = manifest.model["name"] if manifest.model else "none (no vectors)"
    src = manifest.source
    return f"""# langgraph-memory share bundle

Exported {src.get("exported_at")} from `{src.get("data_dir")}` on `{src.get("host")}`
(catalog `{src.get("catalog_id")}`, langgraph-memory {src.get("package_version")}).

- {counts.get("items", 0)} memories: {by_coll}
- {counts.get("lineage_edges", 0)} lineage links, {counts.get("versions", 0)} strategy versions
- {counts.get("retired", 0)} retired and {counts.get("superseded", 0)} superseded (hidden from searches, here and once imported)
- vectors made by `{model}`

## Import it

```bash
langgraph-memory --data-dir ./memory import path/to/this/folder
```

or from Python:

```python
from langgraph_memory import Memory
from langgraph_memory.bundle import import_bundle

with Memory.open("./memory") as mem:
    print(import_bundle(mem.store, "path/to/this/folder"))
```

Ids, timestamps and lineage are kept. An item already in the target (same namespace and key) is
replaced only if this bundle's copy was updated later (`--on-conflict newer`, the default; `keep`
and `replace` are the alternatives). Vectors are reused when the target embeds with the same
model, and re-embedded otherwise. Retired and superseded items arrive retired and superseded, with their
reasons, unless the target already holds a status for that item. The bundle is checked against `manifest.json` (SHA-256, line
count, every line) before anything is written: a damaged bundle is refused whole.

Files: `manifest.json` (format, source, counts, model, checksums), `memories.jsonl` (one memory
or lineage node per line), this `README.md`.
"""


# ----------------------------------------------------------------- reading


def _damaged(path: Path, why: str) -> BundleError:
    return BundleError(
        f"the bundle {path} is damaged or incomplete: {why}. Nothing was imported; export it again.", path
    )


def _manifest(folder: Path) -> BundleManifest:
    if not folder.is_dir():
        raise BundleError(f"{folder} is not a bundle folder (it does not exist, or is a file)", folder)
    try:
        raw = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _damaged(folder, f"{MANIFEST} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _damaged(folder, f"{MANIFEST} is unreadable ({exc})") from None
    try:
        manifest = BundleManifest(
            format=raw["format"],
            schema_version=int(raw["schema_version"]),
            source=dict(raw["source"]),
            counts=dict(raw["counts"]),
            model=dict(raw["model"]) if raw.get("model") else None,
            files={k: dict(v) for k, v in raw["files"].items()},
        )
        memories = manifest.files[MEMORIES]
        int(memories["lines"]), int(memories["bytes"]), str(memories["sha256"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _damaged(folder, f"{MANIFEST} lacks a field or has a wrong one ({exc!r})") from None
    if manifest.format != BUNDLE_FORMAT:
        raise BundleError(f"{folder} is not a langgraph-memory bundle (format {manifest.format!r})", folder)
    if manifest.schema_version > BUNDLE_VERSION:
        raise BundleError(
            f"the bundle {folder} has format version {manifest.schema_version}, newer than this package's "
            f"{BUNDLE_VERSION}; upgrade langgraph-chroma-memory to import it",
            folder,
        )
    return manifest


def _node(raw: dict[str, Any], parents: list[dict[str, Any]], out: Bundle, end: Any = None) -> ItemRef:
    """Add a lineage node, its parent links and its evidence end (``end``, an ISO date) to ``out``."""
    node = ItemRef(
        id=_lin.check_id(raw["id"], "lineage id"),
        collection=str(raw["collection"]),
        namespace=tuple(raw["namespace"]),
        name=raw.get("name"),
        version=raw.get("version"),
        created_at=float(raw["created_at"]),
    )
    out.nodes.append(node)
    if end is not None:
        out.evidence_ends.append((node.namespace, node.id, date.fromisoformat(str(end))))
    for p in parents:
        out.edges.append(
            Edge(
                node.id,
                _lin.check_id(p["id"], "parent id"),
                str(p["relation"]),
                p.get("child_collection"),
                p.get("parent_collection"),
                float(p["created_at"]),
            )
        )
    return node


def _parse_item(rec: dict[str, Any], dims: int | None, out: Bundle) -> None:
    """Check one item line and add the item, its lineage node, links and version to ``out``."""
    if not all(k in rec for k in _ITEM_FIELDS):
        raise ValueError("an item line lacks item fields")
    ns = validate_namespace(tuple(rec["namespace"]), for_write=True)
    if not isinstance(rec["key"], str) or not rec["key"] or not isinstance(rec["value"], dict):
        raise ValueError("an item line has a bad key or value")
    for name in ("created_at", "updated_at", "last_accessed_at"):
        if isinstance(rec[name], bool) or not isinstance(rec[name], (int, float)):
            raise ValueError(f"{name} is not a number")
    collection_for(ns).validate(rec["value"])
    paths = [str(p) for p in rec.get("paths") or []]
    vectors: list[Any] = []
    # "indexed" is the catalog's own flag: the item has vectors.
    if rec.get("indexed", True) and rec.get("vectors"):
        arr = decode_vectors(rec["vectors"])
        assert arr is not None
        if dims is not None and arr.shape[1] != dims:
            raise ValueError(f"vectors have {arr.shape[1]} dimensions, the manifest says {dims}")
        if len(arr) != len(paths):
            raise ValueError(f"{len(arr)} vectors for {len(paths)} text paths")
        vectors = list(arr)
    out.items.append(
        StoredItem(
            namespace=ns,
            key=rec["key"],
            value=rec["value"],
            created_at=rec["created_at"],
            updated_at=rec["updated_at"],
            last_accessed_at=rec["last_accessed_at"],
            access_count=int(rec.get("access_count") or 0),
            expires_at=rec.get("expires_at"),
            ttl_minutes=rec.get("ttl_minutes"),
            indexed=bool(vectors),
            n_vectors=len(vectors),
            vectors=vectors,
            paths=paths if vectors else [],
        )
    )
    if rec.get("status") is not None:
        out.statuses.append(_status(rec["status"], out.items[-1]))
    if rec.get("history"):
        out.history[(ns, rec["key"])] = [_past_version(h, dims) for h in rec["history"]]
    lineage = rec.get("lineage") or {}
    if not lineage.get("node"):
        return
    node = _node(lineage["node"], lineage.get("parents") or [], out, rec.get("evidence_end"))
    if lineage.get("version"):
        v = lineage["version"]
        out.versions.append(VersionRow(str(v["name"]), int(v["version"]), node.id, float(v["created_at"])))


def history_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A past version (`langgraph_memory.catalog.history.records()`) as bundle data: its vectors encoded as items' are."""
    return {**rec, "vectors": encode_vectors([np.frombuffer(v, dtype="<f4") for v in rec["vectors"]])}


def _past_version(raw: Any, dims: int | None) -> dict[str, Any]:
    """Check one past version of an item line (the inverse of `history_record()`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("value"), dict):
        raise ValueError("a past version lacks its value")
    for name in ("created_at", "updated_at", "valid_from", "valid_to"):
        if isinstance(raw.get(name), bool) or not isinstance(raw.get(name), (int, float)):
            raise ValueError(f"a past version's {name} is not a number")
    if raw.get("change") not in CHANGES:
        raise ValueError(f"a past version's change {raw.get('change')!r} is none of {', '.join(CHANGES)}")
    arr = decode_vectors(raw.get("vectors"))
    if arr is not None and dims is not None and arr.shape[1] != dims:
        raise ValueError(f"a past version's vectors have {arr.shape[1]} dimensions, the manifest says {dims}")
    return {**raw, "vectors": [] if arr is None else [row.astype("<f4").tobytes() for row in arr]}


def _status(raw: Any, item: StoredItem) -> ItemStatus:
    """An item line's ``"status"``, checked: a known status, for this very item (its ``created_at``)."""
    if not isinstance(raw, dict) or raw.get("status") not in STATUSES:
        raise ValueError(f"the item's status must be one of {', '.join(STATUSES)}")
    for name in ("reason", "superseded_by"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            raise ValueError(f"the status's {name} is not text")
    by_ns = raw.get("superseded_by_namespace")
    if by_ns is not None and (not isinstance(by_ns, list) or not all(isinstance(x, str) and x for x in by_ns)):
        raise ValueError("the status's superseded_by_namespace is not a list of labels")
    st = ItemStatus.from_dict(raw, item.namespace, item.key, collection_for(item.namespace).name)
    if st.item_created_at != item.created_at:
        raise ValueError("the item's status names another item (its created_at differs)")
    return st


def read_bundle(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Bundle:
    """Check a bundle whole (manifest, checksum, size, line count, every line, typed values) and parse it.

    Raises:
        BundleError: anything is missing, damaged, duplicated, or of a newer format version.

    Examples:
        >>> bundle = read_bundle("./share")  # needs a data directory with items to share  # doctest: +SKIP
        >>> len(bundle.items), bundle.manifest.model  # needs a data directory with items to share  # doctest: +SKIP
        (42, {'name': '...all-MiniLM-L6-v2', 'dims': 384})
    """
    folder = Path(path).expanduser()
    manifest = _manifest(folder)
    spec = manifest.files[MEMORIES]
    dims = int(manifest.model["dims"]) if manifest.model else None
    total = int(spec["lines"])
    out = Bundle(manifest, [], [], [], [])
    sha = hashlib.sha256()
    size = lines = 0
    seen: set[tuple[tuple[str, ...], str]] = set()
    try:
        fh = open(folder / MEMORIES, "rb")
    except OSError as exc:
        raise _damaged(folder, f"{MEMORIES} cannot be read ({exc})") from None
    with fh:
        for lines, line in enumerate(fh, 1):
            sha.update(line)
            size += len(line)
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
                if rec.get("kind") == "node":
                    _node(rec, rec.get("parents") or [], out, rec.get("evidence_end"))
                elif rec.get("kind") == "item":
                    _parse_item(rec, dims, out)
                    ident = (out.items[-1].namespace, out.items[-1].key)
                    if ident in seen:
                        raise ValueError(f"item {ident[1]!r} in {ident[0]} appears twice")
                    seen.add(ident)
                else:
                    raise ValueError(f"unknown line kind {rec.get('kind')!r}")
            except ValidationError as exc:
                raise _damaged(folder, f"line {lines} holds a value its collection refuses ({exc})") from None
            except (ValueError, KeyError, TypeError, ArchiveIntegrityError, LangGraphMemoryError) as exc:
                raise _damaged(folder, f"line {lines} is unreadable ({type(exc).__name__}: {exc})") from None
            if progress is not None and (lines % 500 == 0 or lines == total):
                progress("check", lines, total)
    if size != int(spec["bytes"]) or sha.hexdigest() != spec["sha256"]:
        raise _damaged(folder, f"{MEMORIES} does not match the SHA-256 and size in {MANIFEST}")
    if lines != total:
        raise _damaged(folder, f"{MEMORIES} has {lines} lines, {MANIFEST} says {total}")
    if len(out.items) != int(manifest.counts.get("items", len(out.items))):
        said = manifest.counts["items"]
        raise _damaged(folder, f"{MEMORIES} holds {len(out.items)} memories, {MANIFEST} says {said}")
    return out
