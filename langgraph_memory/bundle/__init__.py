"""Share bundles: memories moved between data directories, machines and teammates.

A bundle is a folder of three files:

* ``manifest.json``: the format and its version, where the memories came
  from (the source catalog's id, folder and host, when), how many items,
  lineage rows and versions it holds, the embedding model of its vectors,
  and the SHA-256, size and line count of ``memories.jsonl``;
* ``memories.jsonl``: one JSON object per line. An ``"item"`` line is a
  whole item (namespace, key, value, timestamps, access data, TTL, its
  vectors as base64 float32 with the text path of each, its lineage node,
  parent links and strategy version, and its retired or superseded status
  with the reason); a ``"node"`` line is an ancestor that
  was not exported itself, so the lineage of what was exported stays whole;
* ``README.md``: what the bundle is and how to import it.

::

    from langgraph_memory import Memory
    from langgraph_memory.bundle import export_bundle, import_bundle

    with Memory.open("./memory") as mem:
        export_bundle(mem.store, "./share", namespaces=[("research",), ("strategies",)])
    with Memory.open("./teammate-memory") as mem:
        report = import_bundle(mem.store, "./share")
        print(report.added, report.replaced, report.kept)

Import merges into the target and keeps ids, timestamps and lineage. The
conflict rule, for an item whose namespace and key are already in the target
(``on_conflict``):

* ``"newer"`` (default): the copy updated last wins; on a tie the target's
  copy stays. Importing the same bundle twice therefore changes nothing.
* ``"keep"``: the target's copy always stays.
* ``"replace"``: the bundle's copy always wins.

Lineage only grows: nodes and links the target lacks are added; a link that
would close a cycle with the target's lineage is left out and reported. A
strategy version whose number is taken in the target by another strategy of
the same name gets the next free number (its value's ``version`` follows).

Statuses travel: a retired or superseded item arrives retired or
superseded (hidden from searches), with its reason and replacement. A
status applies to the item it was set on (same key and ``created_at``): it
is written when the item the target holds after the merge is that item,
unless the target already holds a status for it (an import never clears or
changes a status here). Bundles of format version 1, which had no statuses,
still import.

Vectors are reused, bit for bit, when the bundle's model is the target's;
otherwise every text is re-embedded with the target's model first. The whole
bundle is checked (checksum, line count, every line, every typed value)
before anything is written, and written in one catalog transaction: a
damaged bundle raises [`BundleError`][langgraph_memory.errors.BundleError] with
nothing written, and an import either lands whole or not at all. Values and
timestamps round-trip bit-exactly (floats by ``repr``, vectors as float32).
"""

from langgraph_memory.bundle.export import export_bundle
from langgraph_memory.bundle.format import BUNDLE_FORMAT, BUNDLE_VERSION, Bundle, BundleManifest, read_bundle
from langgraph_memory.bundle.importer import CONFLICT_RULES, ConflictRule, ImportReport, import_bundle

__all__ = [
    "export_bundle",
    "import_bundle",
    "read_bundle",
    "Bundle",
    "BundleManifest",
    "ImportReport",
    "ConflictRule",
    "CONFLICT_RULES",
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
]
