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
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

NAMESPACE = ("notes",)
CHECKED_MAX = 300  # items read back and searched per child (a random sample of the ledger)


def text_of(key: str) -> str:
    return f"a note about {key} and nothing else"


def build(data_dir: Path, n: int, dims: int, *, batch: int = 500) -> list[str]:
    """Store ``n`` notes (keys ``k0``...) with fake ``dims``-d vectors, ``batch`` at a time, and close: a sealed folder."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    keys = [f"k{i}" for i in range(n)]
    store = ChromaStore(
        data_dir=data_dir, index={"dims": dims, "embed": DeterministicFakeEmbedding(size=dims), "fields": ["text"]}
    )
    try:
        for start in range(0, n, batch):
            store.batch([PutOp(NAMESPACE, k, {"text": text_of(k), "key": k}) for k in keys[start : start + batch]])
    finally:
        store.close()
    return keys


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


def segment_of(data_dir: Path) -> Path:
    """The one HNSW segment folder of the data directory's current index."""
    from langgraph_memory.index._hnsw_check import segments

    (index,) = [p for p in (data_dir / "chroma").iterdir() if p.is_dir() and p.name.startswith("index-")]
    (seg,) = segments(index)
    return seg


def flip_neighbour_ids(seg: Path, rng: random.Random, flips: int, *, upper: bool = False) -> list[tuple[int, int]]:
    """Flip one high bit of ``flips`` stored neighbour ids (level 0, or ``upper`` levels); size and mtime kept.

    The bit is one the element count does not reach, so the id leaves the
    range: what hnswlib would follow out of its arrays. Returns ``(element,
    old id)`` of each.
    """
    import numpy as np

    from langgraph_memory.index._hnsw_check import _upper_levels, read_header

    h = read_header(seg / "header.bin")
    high = range(max(h.count.bit_length(), 1), 32)
    done: list[tuple[int, int]] = []
    if upper:
        levels, why = _upper_levels(seg, h)
        assert levels is not None, why
        path = seg / "link_lists.bin"
        words = np.fromfile(path, dtype=np.uint32)
        owners = np.flatnonzero(levels[:, 0] > 0)
        while len(done) < flips:
            e = int(rng.choice(owners))
            start = int(levels[e, 1]) + rng.randrange(int(levels[e, 0])) * (1 + h.max_m)
            if words[start] == 0:
                continue
            at = start + 1 + rng.randrange(int(words[start]))
            done.append((e, int(words[at])))
            words[at] ^= np.uint32(1 << rng.choice(high))
    else:
        path = seg / "data_level0.bin"
        data = np.fromfile(path, dtype=np.uint8).reshape(h.count, h.size_per_element)
        while len(done) < flips:
            e = rng.randrange(h.count)
            n = int(data[e, 0]) | int(data[e, 1]) << 8
            if n == 0:
                continue
            ids = data[e, 4 : h.offset_data].view(np.uint32)
            j = rng.randrange(n)
            done.append((e, int(ids[j])))
            ids[j] ^= np.uint32(1 << rng.choice(high))
        words = data
    st = path.stat()
    with open(path, "r+b") as f:  # in place, as a disk would: same size, same inode
        f.write(words.tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return done


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
    #: asked to die by SIGKILL once it reported (leaving the index unsealed, as a crash does)
    unclean: bool = False
    reported: bool = False
    #: why the open rebuilt the index (empty: it did not)
    rebuild_reason: str = ""

    @property
    def crashed(self) -> bool:
        return self.returncode < 0 and not self._killed_as_asked

    @property
    def _killed_as_asked(self) -> bool:
        return self.unclean and self.reported and self.returncode == -signal.SIGKILL

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.wrong_value) + len(self.wrong_by_vector) + len(self.wrong_by_text)

    @property
    def ok(self) -> bool:
        return (self.returncode == 0 or self._killed_as_asked) and not self.problems

    def summary(self) -> str:
        if self.returncode != 0 and not self._killed_as_asked:
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
    rebuild_max: int | None = None,
    unclean: bool = False,
) -> ChildResult:
    """Open ``data_dir`` in a fresh process, check ``ledger`` and put ``new``; the parent adds ``acked``.

    ``rebuild_max`` overrides the store's ``REBUILD_MAX`` in the child (0: an
    index left by a crash is always probed, as one of more than 25,000
    vectors is); ``unclean`` makes the child die by SIGKILL after its report,
    so the next child finds the index unsealed.
    """
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1")
    payload = json.dumps(
        {
            "data_dir": str(data_dir),
            "ledger": ledger,
            "dims": dims,
            "new": new,
            "seed": seed,
            "checked": checked,
            "rebuild_max": rebuild_max,
            "unclean": unclean,
        }
    )
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve())],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    result = ChildResult(proc.returncode, stderr=proc.stderr, unclean=unclean)
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
            result.rebuild_reason = report.get("rebuild_reason", "")
            result.reported = True
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

    from langgraph_memory.index import repair as _index
    from langgraph_memory.store import ChromaStore

    if spec.get("rebuild_max") is not None:
        _index.REBUILD_MAX = spec["rebuild_max"]
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
        last = store.vector_index.last_rebuild
    except BaseException:
        store.close()
        raise
    reason = last.reason if last is not None else ""
    print("report " + json.dumps({**report, "rebuilt": last is not None, "rebuild_reason": reason}), flush=True)
    if spec.get("unclean"):
        os.kill(os.getpid(), signal.SIGKILL)
    store.close()


if __name__ == "__main__":
    _main()
