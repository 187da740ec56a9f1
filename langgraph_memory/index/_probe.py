"""Open a Chroma folder in a throw-away process and say whether it is whole.

A damaged HNSW segment can make Chroma crash the process that opens it
(SIGSEGV in the first ``count()`` or query), raise errors, or answer wrongly
without a word (a truncated ``data_level0.bin`` silently misses half of its
items). `probe()` runs this file as a script in a subprocess: it first
checks the structure of every HNSW file with numpy (`_hnsw_check`: every
neighbour id, link count and level in range), then opens the folder,
compares each segment's build parameters with its collections'
configuration, counts each collection and queries it with vectors from the
catalog (every record changed since the index was last verified, and random
others), each of which must find its own record first. A crash, a hang, an error or
wrong answers mark the folder for a rebuild; the store's own process never
touched it.

This file imports nothing from the package (`_hnsw_check` is loaded by
path), so the subprocess starts in about half a second (mostly ``import
chromadb``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ProbeResult", "probe", "unreachable", "WIDE"]

# Sample queries sent to Chroma at once.
_BATCH = 100
# A record its own vector misses at n_results=1 is asked again with this many results. HNSW searches
# with ef = max(ef_search, n_results), and an intact index does miss a record now and then at Chroma's
# ef_search of 100 (measured: 1 of 20,000 random 384-d vectors, found again at 200); a record the
# index lost or cannot reach stays missing however wide the search.
WIDE = 200


@dataclass
class ProbeResult:
    """What the probe found: ``ok`` for the whole folder, and per collection ``problems``."""

    ok: bool
    crashed: bool = False
    problems: dict[str, str] = field(default_factory=dict)
    detail: str = ""


def probe(folder: Path, collections: list[dict[str, Any]], *, timeout: float = 120.0) -> ProbeResult:
    """Check ``folder`` in a subprocess.

    ``collections`` lists ``{"name": chroma name, "samples": [[record id,
    [floats]], ...]}``: vectors the collection must hold (a collection with
    samples must exist; counts are compared later, in process, once queued
    changes are applied).
    """
    payload = json.dumps({"folder": str(folder), "collections": collections})
    try:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve())],
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(False, crashed=True, detail=f"the probe did not finish within {timeout:g} s")
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or [""]
        return ProbeResult(
            False, crashed=proc.returncode < 0, detail=f"the probe exited with status {proc.returncode} {tail[0]}"
        )
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ProbeResult(False, detail=f"the probe printed no report: {proc.stdout[-200:]!r}")
    problems = {name: why for name, why in report.items() if why}
    return ProbeResult(not problems, problems=problems)


def _check(client: Any, spec: dict[str, Any]) -> str:
    """Empty when the collection is whole, else what is wrong with it."""

    samples = spec["samples"]
    try:
        col = client.get_collection(spec["name"], embedding_function=None)
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return f"cannot open: {type(exc).__name__}: {exc}" if samples else ""
    try:
        n = col.count()
        if not samples:
            return ""
        if n == 0:
            return "holds no vectors"
        # A record's own vector must find it first (or a record with the very same vector): HNSW at
        # Chroma's ef_search of 100 does for a whole index; a damaged one misses some or half.
        missed = unreachable(col, samples, n)
        if missed:
            return f"{len(missed)} of {len(samples)} records checked did not find themselves (e.g. {missed[0]})"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return ""


def unreachable(col: Any, records: list[list[Any]], n_vectors: int) -> list[str]:
    """The ids of ``records`` (``[id, vector]``) their own vector does not find in ``col``, even searched wide.

    A record must come first (or a record with the very same vector). One that
    does not is asked again with ``n_results`` of `WIDE`: HNSW's search
    is approximate, and an intact index misses a record at n_results=1 now
    and then; a lost or unreachable record stays missing.
    """
    import numpy as np

    def misses(batch: list[list[Any]], k: int) -> list[list[Any]]:
        out = []
        res = col.query(
            query_embeddings=np.asarray([vec for _rid, vec in batch], dtype=np.float32),
            n_results=k,
            include=["distances"],
        )
        for (rid, vec), ids, dists in zip(batch, res["ids"], res["distances"], strict=True):
            found = ids[:1] == [rid] if k == 1 else rid in ids
            if not found and not (dists and dists[0] < 1e-6):
                out.append([rid, vec])
        return out

    def batched(recs: list[list[Any]], k: int) -> list[list[Any]]:
        return [m for start in range(0, len(recs), _BATCH) for m in misses(recs[start : start + _BATCH], k)]

    first = batched(records, 1)
    return [rid for rid, _vec in batched(first, max(1, min(WIDE, n_vectors)))] if first else []


def _checker() -> Any:
    """`_hnsw_check`, loaded by path: this script runs outside the package."""
    import importlib.util

    name = "_lgm_hnsw_check"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().with_name("_hnsw_check.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _structure(folder: Path) -> dict[str, str]:
    """What `_hnsw_check` finds wrong in the folder's HNSW files, read without hnswlib."""
    found: dict[str, str] = _checker().check_folder(folder)
    return {f"HNSW segment {name}": why for name, why in found.items()}


def _parameters(client: Any, folder: Path) -> dict[str, str]:
    """Segments built with another ``ef_construction`` or ``M`` than any collection is configured with.

    Listing collections reads Chroma's catalog only; no segment is loaded yet.
    """
    allowed = set()
    for col in client.list_collections():
        hnsw = (getattr(col, "configuration_json", None) or {}).get("hnsw") or {}
        if "ef_construction" in hnsw and "max_neighbors" in hnsw:
            allowed.add((int(hnsw["ef_construction"]), int(hnsw["max_neighbors"])))
    if not allowed:  # a Chroma that does not say: nothing to compare with
        return {}
    found: dict[str, str] = _checker().check_parameters(folder, allowed)
    return {f"HNSW segment {name}": why for name, why in found.items()}


def _main() -> None:
    spec = json.loads(sys.stdin.read())
    # hnswlib trusts every id and count in its files, and a sample query only walks part of the graph: the
    # structure is checked whole first, and a folder that fails it is never handed to Chroma.
    damaged = _structure(Path(spec["folder"]))
    if damaged:
        print(json.dumps(damaged))
        return
    import chromadb
    from chromadb.config import Settings

    try:
        client = chromadb.PersistentClient(path=spec["folder"], settings=Settings(anonymized_telemetry=False))
    except Exception as exc:  # noqa: BLE001
        print(
            json.dumps(
                {c["name"]: f"cannot open the folder: {type(exc).__name__}: {exc}" for c in spec["collections"]}
                or {"*": f"cannot open the folder: {exc}"}
            )
        )
        return
    try:
        damaged = _parameters(client, Path(spec["folder"]))
    except Exception as exc:  # noqa: BLE001
        damaged = {"*": f"cannot read the collections' configuration: {type(exc).__name__}: {exc}"}
    if damaged:
        print(json.dumps(damaged))
        return
    print(json.dumps({c["name"]: _check(client, c) for c in spec["collections"]}))


if __name__ == "__main__":
    _main()
