"""Bit rot for the tests and the crash bench: flip bits in a closed data directory, then check it in a fresh process.

`flip_bits()` flips random bits of a file and keeps its size and
modification time, as a decaying disk would. `run_child()` starts this file
as a script on the data directory: it opens the store, reads back every item
it was told about (values), searches with each one's own vector through
Chroma (it must come first) and with its text (through the embedding cache),
puts new items, checks those too, and closes cleanly. The parent keeps the
ledger of acknowledged items across rounds: an item whose put returned in
any earlier child must be there, with its value, in every later one.

The catalog (``catalog.sqlite``) is the truth and is not flipped: it holds
no redundancy to repair a flipped value from.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

NAMESPACE = ("notes",)
CHECKED_MAX = 300  # items read back and searched per child (a random sample of the ledger)


def text_of(key: str) -> str:
    return f"a note about {key} and nothing else"


def flip_bits(path: Path, rng: random.Random, flips: int) -> list[int]:
    """Flip one random bit at each of ``flips`` random offsets of ``path``; keep its size and mtime."""
    st = path.stat()
    offsets = sorted(rng.randrange(st.st_size) for _ in range(flips))
    with open(path, "r+b") as f:
        for off in offsets:
            f.seek(off)
            byte = f.read(1)[0]
            f.seek(off)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return offsets


def targets(data_dir: Path) -> list[Path]:
    """Every non-empty file of the directory but the catalog: the index, the embedding cache, the side files."""
    out = []
    for root, _dirs, files in os.walk(data_dir):
        for name in files:
            p = Path(root) / name
            if name.startswith("catalog.sqlite") or p.stat().st_size == 0:
                continue
            out.append(p)
    return sorted(out)


@dataclass
class ChildResult:
    """What one fresh process found: its exit status and what it checked."""

    returncode: int
    acked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    wrong_value: list[str] = field(default_factory=list)
    wrong_by_vector: list[str] = field(default_factory=list)
    wrong_by_text: list[str] = field(default_factory=list)
    rebuilt: bool = False
    stderr: str = ""

    @property
    def crashed(self) -> bool:
        return self.returncode < 0

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.wrong_value) + len(self.wrong_by_vector) + len(self.wrong_by_text)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems

    def summary(self) -> str:
        if self.returncode != 0:
            tail = self.stderr.strip().splitlines()[-3:]
            return f"exit status {self.returncode}: {' | '.join(tail)}"
        return (
            f"missing {self.missing[:3]}, wrong values {self.wrong_value[:3]}, not first by vector "
            f"{self.wrong_by_vector[:3]}, not first by text {self.wrong_by_text[:3]}"
        )


def run_child(
    data_dir: Path,
    ledger: list[str],
    *,
    dims: int,
    new: list[str],
    seed: int,
    checked: int = CHECKED_MAX,
    timeout: float = 600,
) -> ChildResult:
    """Open ``data_dir`` in a fresh process, check ``ledger`` and put ``new``; the parent adds ``acked``."""
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1")
    payload = json.dumps(
        {"data_dir": str(data_dir), "ledger": ledger, "dims": dims, "new": new, "seed": seed, "checked": checked}
    )
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve())],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    result = ChildResult(proc.returncode, stderr=proc.stderr)
    # The acknowledged keys are printed as each put returns, so even a child that died later reports them.
    for line in proc.stdout.splitlines():
        if line.startswith("acked "):
            result.acked.extend(json.loads(line[6:]))
        elif line.startswith("report "):
            report = json.loads(line[7:])
            result.missing = report["missing"]
            result.wrong_value = report["wrong_value"]
            result.wrong_by_vector = report["wrong_by_vector"]
            result.wrong_by_text = report["wrong_by_text"]
            result.rebuilt = report["rebuilt"]
    return result


def _check(store: object, emb: object, keys: list[str], report: dict[str, list[str]]) -> None:
    for key in keys:
        item = store.get(NAMESPACE, key)  # type: ignore[attr-defined]
        if item is None:
            report["missing"].append(key)
            continue
        if item.value != {"text": text_of(key), "key": key}:
            report["wrong_value"].append(key)
        own = emb.embed_query(text_of(key))  # type: ignore[attr-defined]
        hits = store.search_by_vector(NAMESPACE, own, limit=1)  # type: ignore[attr-defined]
        if not hits or hits[0].key != key:
            report["wrong_by_vector"].append(key)
        hits = store.search(NAMESPACE, query=text_of(key), limit=1)  # type: ignore[attr-defined]
        if not hits or hits[0].key != key:
            report["wrong_by_text"].append(key)


def _main() -> None:
    spec = json.loads(sys.stdin.read())
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    emb = DeterministicFakeEmbedding(size=spec["dims"])
    store = ChromaStore(data_dir=spec["data_dir"], index={"dims": spec["dims"], "embed": emb, "fields": ["text"]})
    try:
        store.planner.exact_max = 0  # every search goes through Chroma's HNSW index
        report: dict[str, list[str]] = {"missing": [], "wrong_value": [], "wrong_by_vector": [], "wrong_by_text": []}
        rng = random.Random(spec["seed"])
        ledger = spec["ledger"]
        checked = spec["checked"]
        sample = ledger if len(ledger) <= checked else rng.sample(ledger, checked)
        _check(store, emb, sample, report)
        new = spec["new"]
        for start in range(0, len(new), 50):
            batch = new[start : start + 50]
            store.batch([PutOp(NAMESPACE, k, {"text": text_of(k), "key": k}) for k in batch])
            print("acked " + json.dumps(batch), flush=True)
        _check(store, emb, new[-checked:], report)
        rebuilt = store.vector_index.last_rebuild is not None
    finally:
        store.close()
    print("report " + json.dumps({**report, "rebuilt": rebuilt}), flush=True)


if __name__ == "__main__":
    _main()
